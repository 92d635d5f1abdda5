/*
 * state_clear.c - `faucet state clear PIPELINE [--row R] [--tenant T]`:
 * delete a pipeline's (or one invocation's) data keys as one run.
 *
 * The keys are found with one scan of the namespace that skips the run
 * bookkeeping (faucet_store_scan_data), so a clear never touches
 * __lease__, __status__ or __rollback__: the history survives it, and
 * `faucet state undo` of the clear's run puts every key back.  The deletes
 * go through faucet_run_delete_batch, which records every before-image in
 * one marker write before the first delete (doc/design.md §8.2).  Like
 * import, a clear is a bulk write: it holds the pipeline lease while it
 * deletes (exit 75 when a `faucet run` or an undo of the pipeline holds it).
 *
 * A namespace is matched whole: PIPELINE's keys are those under
 * "PIPELINE::", so clearing "orders" never touches "orders_archive".
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "jsonw.h"

typedef struct {
	const char *base;  /* "[T::]P::R" with --row, else NULL */
	size_t base_len;
	faucet_strarray keys;
	int failed;        /* out of memory */
} clear_scan;

static int collect_key(const char *key, const faucet_value *value, void *arg)
{
	clear_scan *c = arg;
	char **grown, *copy;

	(void)value;
	/* With --row the scan's prefix is "P::R": keep "P::R" itself and the
	 * keys under "P::R::", not those of a row "R2". */
	if (c->base != NULL && key[c->base_len] != '\0' &&
	    strncmp(key + c->base_len, "::", 2) != 0)
		return 0;
	copy = faucet__strdup(key);
	grown = copy ? realloc(c->keys.strings, (c->keys.count + 1) * sizeof(*grown)) : NULL;
	if (grown == NULL) {
		free(copy);
		c->failed = 1;
		return 1;
	}
	c->keys.strings = grown;
	c->keys.strings[c->keys.count++] = copy;
	return 0;
}

static int print_clear_json(const char *pipeline, const char *tenant, const char *row,
			    int dry_run, const faucet_strarray *keys, const cli_write_run *w)
{
	faucet_buf b = FAUCET_BUF_INIT;

	(void)faucet__buf_putc(&b, '{');
	cli_jw_member(&b, "pipeline", 1);
	faucet__json_string(&b, pipeline);
	cli_jw_member(&b, "tenant", 0);
	faucet__json_string(&b, tenant);
	cli_jw_member(&b, "row", 0);
	faucet__json_string(&b, row);
	cli_jw_member(&b, "dry_run", 0);
	(void)faucet__buf_puts(&b, dry_run ? "true" : "false");
	cli_jw_member(&b, "count", 0);
	(void)faucet__buf_printf(&b, "%zu", keys->count);
	cli_jw_member(&b, "keys", 0);
	cli_jw_string_array(&b, keys);
	cli_write_run_json(w, &b);
	(void)faucet__buf_putc(&b, '}');
	return cli_jw_print(&b) == 0 ? 0 : CLI_EXIT_FAILED;
}

static void print_keys(const faucet_strarray *keys)
{
	for (size_t i = 0; i < keys->count; i++) {
		fputs(keys->strings[i], stdout);
		putchar('\n');
	}
}

typedef struct {
	const char *pipeline, *row, *tenant;
	int yes, dry_run;
} clear_args;

/* clear's arguments into *a: -1 to go on, else the exit code. */
static int parse_clear_args(cli_context *ctx, int argc, char **argv, clear_args *a)
{
	enum { OPT_ROW = 1, OPT_TENANT, OPT_YES, OPT_DRY_RUN };
	static const cli_option opts[] = {
		{"row", 0, 1, OPT_ROW},         {"tenant", 't', 1, OPT_TENANT},
		{"yes", 'y', 0, OPT_YES},       {"dry-run", 'n', 0, OPT_DRY_RUN},
		{NULL, 0, 0, 0},
	};
	const char *arg;
	cli_args it;
	int id, rc;

	memset(a, 0, sizeof(*a));
	cli_args_init(&it, ctx, "state clear", argc, argv);
	while ((id = cli_args_next(&it, opts, &arg)) != CLI_ARG_END) {
		if (id == CLI_ARG_ERROR)
			return CLI_EXIT_USAGE;
		if (id == CLI_ARG_HELP)
			return cli_print_command_help("state clear");
		if (id == OPT_ROW)
			a->row = arg;
		else if (id == OPT_TENANT)
			a->tenant = arg;
		else if (id == OPT_YES)
			a->yes = 1;
		else if (id == OPT_DRY_RUN)
			a->dry_run = 1;
		else if (a->pipeline == NULL)
			a->pipeline = arg;
		else
			return cli_usage_error("state clear", "unexpected argument '%s'", arg);
	}
	if ((rc = cli_pipeline_arg(ctx, "state clear", &a->pipeline, a->tenant, 0, NULL)) != 0)
		return rc;
	if (a->row != NULL && faucet_validate_key(a->row) != 0)
		return cli_fail(CLI_EXIT_USAGE, "state clear: bad --row");
	return -1;
}

/* The scan's prefix: "[T::]P::R" with --row (collect_key keeps that row's
 * keys only), else the namespace "[T::]P::". */
static int clear_prefix(const clear_args *a, char **out)
{
	char *prefix;

	*out = NULL;
	if (a->row != NULL)
		prefix = a->tenant ? faucet__sprintf("%s::%s::%s", a->tenant, a->pipeline, a->row)
				   : faucet__sprintf("%s::%s", a->pipeline, a->row);
	else
		prefix = a->tenant ? faucet__sprintf("%s::%s::", a->tenant, a->pipeline)
				   : faucet__sprintf("%s::", a->pipeline);
	if (prefix == NULL)
		return cli_error(CLI_EXIT_FAILED, "out of memory");
	if (a->row != NULL && faucet_run_is_bookkeeping_key(prefix)) {
		free(prefix);
		return cli_usage_error("state clear", "--row '%s' is run bookkeeping, not a row",
				       a->row);
	}
	*out = prefix;
	return 0;
}

static int scan_keys(cli_context *ctx, faucet_store *s, const char *prefix, clear_scan *c)
{
	int rc = faucet_store_scan_data(s, prefix, collect_key, c);

	if (c->failed)
		return cli_error(CLI_EXIT_FAILED, "out of memory");
	if (rc != 0)
		return cli_fail(CLI_EXIT_FAILED, "cannot list '%s' in %s", prefix, ctx->store_label);
	return 0;
}

/* No keys, or --dry-run: the list of what a clear would delete. */
static int report_nothing_deleted(cli_context *ctx, const clear_args *a, const char *prefix,
				  const faucet_strarray *keys)
{
	if (keys->count == 0 && !ctx->json && !ctx->quiet)
		fprintf(stderr, "faucet: no data keys under '%s' in %s; nothing to clear\n", prefix,
			ctx->store_label);
	if (ctx->json)
		return print_clear_json(a->pipeline, a->tenant, a->row, a->dry_run, keys, NULL);
	print_keys(keys);
	return 0;
}

/* More than one key from a terminal takes --yes. */
static int check_confirmed(const clear_args *a, const char *prefix, const faucet_strarray *keys)
{
	if (keys->count > 1 && !a->yes && isatty(STDIN_FILENO))
		return cli_error(CLI_EXIT_USAGE,
				 "state clear: would delete %zu keys under '%s'; nothing deleted "
				 "(add --yes to delete them, --dry-run to list them)",
				 keys->count, prefix);
	return 0;
}

/* The deletes as one run: its marker records every before-image first. */
static int delete_keys(cli_context *ctx, faucet_store *s, const char *prefix,
		       const faucet_strarray *keys, cli_write_run *w)
{
	const char *const *k = (const char *const *)keys->strings;
	int rc;

	rc = cli_write_run_begin(ctx, s, "faucet state clear", k, keys->count,
				 CLI_RUN_MAY_JOIN | CLI_RUN_EXCLUSIVE, w);
	if (rc != 0)
		return rc;
	if (faucet_run_delete_batch(w->run, k, keys->count) != 0) {
		rc = cli_fail(CLI_EXIT_FAILED, "state clear '%s': deleting from %s (the keys "
			      "deleted so far are in the run; `faucet state undo` restores them)",
			      prefix, ctx->store_label);
		if (!w->joined) {
			char *msg = faucet__strdup(faucet_error_last()->message);
			(void)faucet_run_end(w->run, FAUCET_RUN_FAILED, -1, msg);
			free(msg);
		}
		return rc;
	}
	return cli_write_run_end(w, 1, NULL);
}

int cli_state_clear(cli_context *ctx, int argc, char **argv)
{
	clear_scan c = {NULL, 0, {NULL, 0}, 0};
	cli_write_run w = {0};
	faucet_store *s = NULL;
	char *prefix = NULL;
	clear_args a;
	int rc;

	if ((rc = parse_clear_args(ctx, argc, argv, &a)) >= 0)
		return rc;
	if ((rc = clear_prefix(&a, &prefix)) != 0)
		return rc;
	if (a.row != NULL) {
		c.base = prefix;
		c.base_len = strlen(prefix);
	}
	rc = a.dry_run ? cli_open_store_existing(ctx, &s) : cli_open_store(ctx, &s);
	if (rc == 0)
		rc = scan_keys(ctx, s, prefix, &c);
	if (rc != 0)
		goto done;
	if (c.keys.count == 0 || a.dry_run) {
		rc = report_nothing_deleted(ctx, &a, prefix, &c.keys);
		goto done;
	}
	if ((rc = check_confirmed(&a, prefix, &c.keys)) != 0 ||
	    (rc = delete_keys(ctx, s, prefix, &c.keys, &w)) != 0)
		goto done;
	if (ctx->json)
		rc = print_clear_json(a.pipeline, a.tenant, a.row, 0, &c.keys, &w);
	else if (!ctx->quiet)
		print_keys(&c.keys);
done:
	cli_write_run_dispose(&w);
	faucet_store_free(s);
	faucet_strarray_dispose(&c.keys);
	free(prefix);
	return rc;
}
