/*
 * lock.c - `faucet lock list` and `faucet lock break`: the leases of runs
 * ({p}::{r}::__lease__) and of backfill units ({unit key}::__lease__).
 *
 * Breaking a lease is a compare-and-delete against the lease just read, so
 * a lease renewed or taken over between the read and the delete is left
 * alone (exit 3) - the operator never removes a claim they did not see.
 * The run whose lease is broken finds out at its next write (fencing).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"
#include "cli.h"
#include "jsonw.h"

static const char *lease_tail = "::__lease__";

static int is_lease_key(const char *key)
{
	size_t n = strlen(key), t = strlen(lease_tail);

	return n > t && strcmp(key + n - t, lease_tail) == 0;
}

/* What `lock list` shows, gathered lease by lease. */
typedef struct {
	cli_context *ctx;
	int64_t now;
	faucet_buf json;  /* --json: the array */
	cli_table table;  /* stdout a terminal: the table */
	int n;            /* leases shown */
} lease_list;

/* lock list's argument, [PIPELINE]: -1 to go on, else the exit code. */
static int parse_list_args(cli_context *ctx, int argc, char **argv, const char **pipeline)
{
	const char *arg;
	cli_args it;
	int id, rc;

	*pipeline = NULL;
	cli_args_init(&it, ctx, "lock list", argc, argv);
	while ((id = cli_args_next(&it, NULL, &arg)) != CLI_ARG_END) {
		if (id == CLI_ARG_ERROR)
			return CLI_EXIT_USAGE;
		if (id == CLI_ARG_HELP)
			return cli_print_command_help("lock list");
		if (*pipeline != NULL)
			return cli_usage_error("lock list", "unexpected argument '%s'", arg);
		*pipeline = arg;
	}
	if (*pipeline != NULL &&
	    (rc = cli_pipeline_arg(ctx, "lock list", pipeline, NULL, 0, NULL)) != 0)
		return rc;
	return -1;
}

static void lease_json(faucet_buf *b, const char *key, const faucet_lease *l, const char *until,
		       const char *state)
{
	(void)faucet__buf_putc(b, '{');
	cli_jw_member(b, "key", 1);
	faucet__json_string(b, key);
	cli_jw_member(b, "holder", 0);
	faucet__json_string(b, l->holder);
	cli_jw_member(b, "run", 0);
	faucet__json_string(b, l->run);
	cli_jw_member(b, "expires_at", 0);
	(void)faucet__buf_printf(b, "%lld", (long long)l->expires_at);
	cli_jw_member(b, "expires", 0);
	faucet__json_string(b, until);
	cli_jw_member(b, "state", 0);
	faucet__json_string(b, state);
	(void)faucet__buf_putc(b, '}');
}

/* One lease: a member of the --json array, a table row on a terminal, else
 * a tab-separated line. */
static void show_lease(lease_list *ll, const char *key, const faucet_lease *l)
{
	char until[64];
	const char *state;

	(void)faucet_utc_text(l->expires_at, until, sizeof(until));
	/* A holder process gone from this host holds nothing. */
	state = faucet_lease_holder_dead(l) ? "dead"
		: l->expires_at > ll->now   ? "live"
					    : "expired";
	if (ll->ctx->json) {
		if (ll->n > 0)
			(void)faucet__buf_putc(&ll->json, ',');
		lease_json(&ll->json, key, l, until, state);
	} else if (ll->ctx->stdout_tty) {
		char local[64];
		const char *cells[5] = {key, l->holder,
					cli_time_shown(ll->ctx, (long long)l->expires_at, NULL,
						       local, sizeof(local)),
					state, l->run};
		(void)cli_table_add(&ll->table, cells);
	} else {
		printf("%s\t%s\t%s\t%s\t%s\n", key, l->holder, until, state, l->run ? l->run : "-");
	}
	ll->n++;
}

/* The lease at `key`, shown; one released meanwhile is not, nor one that
 * does not parse (a warning says why). */
static int list_lease(lease_list *ll, faucet_store *s, const char *key)
{
	faucet_value *v = NULL;
	faucet_lease l;

	if (faucet_store_get(s, key, &v) != 0)
		return cli_fail(CLI_EXIT_FAILED, "reading %s", key);
	if (v == NULL)
		return 0; /* released meanwhile */
	if (faucet_lease_parse(v, key, &l) != 0) {
		fprintf(stderr, "faucet: warning: %s\n", faucet_error_last()->message);
		faucet_value_free(v);
		return 0;
	}
	faucet_value_free(v);
	show_lease(ll, key, &l);
	faucet_lease_dispose(&l);
	return 0;
}

static int lock_list(cli_context *ctx, int argc, char **argv)
{
	static const char *const heads[] = {"KEY", "HOLDER", "EXPIRES", "STATE", "RUN"};
	lease_list ll = {.ctx = ctx, .now = (int64_t)time(NULL), .json = FAUCET_BUF_INIT};
	faucet_strarray keys = {0};
	faucet_store *s = NULL;
	const char *pipeline;
	char *prefix;
	int rc;

	cli_table_init(&ll.table, 5);
	if ((rc = parse_list_args(ctx, argc, argv, &pipeline)) >= 0)
		return rc;
	prefix = pipeline ? faucet__sprintf("%s::", pipeline) : faucet__strdup("");
	if (prefix == NULL)
		return cli_fail(CLI_EXIT_FAILED, "lock list");
	if ((rc = cli_open_store_existing(ctx, &s)) != 0) {
		free(prefix);
		return rc;
	}
	if (faucet_store_list(s, prefix, &keys) != 0) {
		rc = cli_fail(CLI_EXIT_FAILED, "cannot list the keys of %s", ctx->store_label);
		goto done;
	}
	(void)faucet__buf_putc(&ll.json, '[');
	for (size_t i = 0; rc == 0 && i < keys.count; i++) {
		if (is_lease_key(keys.strings[i]))
			rc = list_lease(&ll, s, keys.strings[i]);
	}
	if (rc != 0)
		goto done;
	(void)faucet__buf_putc(&ll.json, ']');
	if (ctx->json)
		rc = cli_jw_print(&ll.json) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILED;
	else if (ctx->stdout_tty)
		rc = cli_table_print(&ll.table, ctx, heads);
	else
		rc = CLI_EXIT_OK;
done:
	cli_table_dispose(&ll.table);
	faucet__buf_dispose(&ll.json);
	faucet_strarray_dispose(&keys);
	faucet_store_free(s);
	free(prefix);
	return rc;
}

/* The lease key a user probably meant by a key that is not one: the
 * invocation's lease for another bookkeeping key of it, else KEY::__lease__. */
static char *suggest_lease_key(const char *key)
{
	static const char *const tails[] = {"::__status__", "::__rollback__"};

	for (size_t i = 0; i < sizeof(tails) / sizeof(tails[0]); i++) {
		const char *at = strstr(key, tails[i]);

		if (at != NULL && at > key)
			return faucet__sprintf("%.*s%s", (int)(at - key), key, lease_tail);
	}
	return faucet__sprintf("%s%s", key, lease_tail);
}

/* Break the lease at `key` (read, then compare-and-delete). */
static int break_one(cli_context *ctx, faucet_store *s, const char *key, const char *if_holder)
{
	faucet_value *v = NULL;
	faucet_lease l;
	int rc, deleted = 0;

	memset(&l, 0, sizeof(l));
	if (faucet_store_get(s, key, &v) != 0) {
		rc = cli_fail(CLI_EXIT_FAILED, "reading %s", key);
		goto done;
	}
	if (v == NULL) {
		if (if_holder != NULL)
			rc = cli_error(CLI_EXIT_CONDITION, "no lease at %s", key);
		else if (!ctx->quiet && !ctx->json)
			fprintf(stderr, "faucet: no lease at %s\n", key);
		rc = if_holder ? CLI_EXIT_CONDITION : CLI_EXIT_OK;
		if (rc == CLI_EXIT_OK && ctx->json) {
			faucet_buf b = FAUCET_BUF_INIT;

			(void)faucet__buf_putc(&b, '{');
			cli_jw_member(&b, "key", 1);
			faucet__json_string(&b, key);
			cli_jw_member(&b, "broken", 0);
			(void)faucet__buf_puts(&b, "false}");
			if (cli_jw_print(&b) != 0)
				rc = CLI_EXIT_FAILED;
		}
		goto done;
	}
	if (faucet_lease_parse(v, key, &l) != 0) {
		rc = cli_fail(CLI_EXIT_FAILED, "lock break");
		goto done;
	}
	if (if_holder != NULL && strcmp(l.holder, if_holder) != 0) {
		rc = cli_error(CLI_EXIT_CONDITION, "%s is held by %s, not %s; left alone", key,
			       l.holder, if_holder);
		goto done;
	}
	if (faucet_store_compare_and_delete(s, key, v, &deleted) != 0) {
		rc = cli_fail(CLI_EXIT_FAILED, "breaking %s", key);
		goto done;
	}
	if (!deleted) {
		rc = cli_error(CLI_EXIT_CONDITION, "%s changed while it was being broken; left alone",
			       key);
		goto done;
	}
	if (!ctx->quiet && !ctx->json)
		fprintf(stderr, "faucet: broke %s (held by %s%s%s)\n", key, l.holder,
			l.run ? ", run " : "", l.run ? l.run : "");
	rc = CLI_EXIT_OK;
	if (ctx->json) {
		faucet_buf b = FAUCET_BUF_INIT;

		(void)faucet__buf_putc(&b, '{');
		cli_jw_member(&b, "key", 1);
		faucet__json_string(&b, key);
		cli_jw_member(&b, "broken", 0);
		(void)faucet__buf_puts(&b, "true");
		cli_jw_member(&b, "holder", 0);
		faucet__json_string(&b, l.holder);
		cli_jw_member(&b, "run", 0);
		faucet__json_string(&b, l.run);
		(void)faucet__buf_putc(&b, '}');
		if (cli_jw_print(&b) != 0)
			rc = CLI_EXIT_FAILED;
	}
done:
	faucet_lease_dispose(&l);
	faucet_value_free(v);
	return rc;
}

/*
 * --pipeline P [--row R]: with --row, the invocation's lease P::R::__lease__;
 * without, the pipeline lease P::__lease__ (bulk writes, undo) or the lease
 * of P's default invocation P::default::__lease__ (`faucet run --pipeline P`)
 * - whichever is held; both held is exit 2, naming both keys.
 */
static int pipeline_lease_key(cli_context *ctx, faucet_store *s, const char *pipeline,
			      const char *row, char **out)
{
	char *level, *dflt;
	faucet_value *a = NULL, *b = NULL;
	int rc = 0;

	*out = NULL;
	if (row != NULL) {
		*out = faucet__sprintf("%s::%s%s", pipeline, row, lease_tail);
		return *out ? 0 : cli_error(CLI_EXIT_FAILED, "out of memory");
	}
	level = faucet__sprintf("%s%s", pipeline, lease_tail);
	dflt = faucet__sprintf("%s::default%s", pipeline, lease_tail);
	if (level == NULL || dflt == NULL) {
		rc = cli_error(CLI_EXIT_FAILED, "out of memory");
	} else if (faucet_store_get(s, level, &a) != 0 || faucet_store_get(s, dflt, &b) != 0) {
		rc = cli_fail(CLI_EXIT_FAILED, "reading the leases of %s in %s", pipeline,
			      ctx->store_label);
	} else if (a != NULL && b != NULL) {
		rc = cli_error(CLI_EXIT_USAGE,
			       "lock break: pipeline %s holds two leases, %s (a bulk write or an "
			       "undo) and %s (a run of the default row); give the key, or --row "
			       "default; nothing broken",
			       pipeline, level, dflt);
	} else if (b != NULL) {
		*out = dflt;
		dflt = NULL;
	} else {
		*out = level; /* held, or neither: "no lease at" names the pipeline lease */
		level = NULL;
	}
	faucet_value_free(a);
	faucet_value_free(b);
	free(level);
	free(dflt);
	return rc;
}

static int lock_break(cli_context *ctx, int argc, char **argv)
{
	enum { O_IF_HOLDER = 1, O_PIPELINE, O_ROW };
	static const cli_option opts[] = {{"if-holder", 0, 1, O_IF_HOLDER},
					  {"pipeline", 'p', 1, O_PIPELINE},
					  {"row", 0, 1, O_ROW},
					  {NULL, 0, 0, 0}};
	const char *key = NULL, *if_holder = NULL, *pipeline = NULL, *row = NULL, *arg;
	faucet_store *s = NULL;
	char *found = NULL;
	cli_args it;
	int id, rc;

	cli_args_init(&it, ctx, "lock break", argc, argv);
	while ((id = cli_args_next(&it, opts, &arg)) != CLI_ARG_END) {
		if (id == CLI_ARG_ERROR)
			return CLI_EXIT_USAGE;
		if (id == CLI_ARG_HELP)
			return cli_print_command_help("lock break");
		if (id == O_IF_HOLDER) {
			if_holder = arg;
			continue;
		}
		if (id == O_PIPELINE) {
			pipeline = arg;
			continue;
		}
		if (id == O_ROW) {
			row = arg;
			continue;
		}
		if (key != NULL)
			return cli_usage_error("lock break", "unexpected argument '%s'", arg);
		key = arg;
	}
	if (key != NULL && pipeline != NULL)
		return cli_usage_error("lock break", "give the lease KEY or --pipeline P, not both");
	if (row != NULL && pipeline == NULL)
		return cli_usage_error("lock break", "--row needs --pipeline P");
	if (key == NULL && pipeline == NULL)
		return cli_usage_error("lock break", "which lease? give its key (...::__lease__) "
				       "or --pipeline P [--row R]");
	if (pipeline != NULL) {
		if ((rc = cli_pipeline_arg(ctx, "lock break", &pipeline, NULL, 0, NULL)) != 0)
			return rc;
		if (row != NULL && (faucet_validate_key(row) != 0 ||
				    faucet_run_is_bookkeeping_key(row) || strstr(row, "__lease__")))
			return cli_usage_error("lock break", "invalid --row '%s'", row);
	} else {
		if (faucet_validate_key(key) != 0)
			return cli_fail(CLI_EXIT_USAGE, "lock break");
		if (!is_lease_key(key)) {
			char *hint = suggest_lease_key(key);

			rc = cli_usage_error("lock break", "'%s' is not a lease key (it must end in "
					     "::__lease__); did you mean '%s'?",
					     key, hint ? hint : "...::__lease__");
			free(hint);
			return rc;
		}
	}
	if ((rc = cli_open_store_existing(ctx, &s)) != 0)
		return rc;
	if (pipeline != NULL && (rc = pipeline_lease_key(ctx, s, pipeline, row, &found)) != 0) {
		faucet_store_free(s);
		return rc;
	}
	rc = break_one(ctx, s, found ? found : key, if_holder);
	free(found);
	faucet_store_free(s);
	return rc;
}

int cli_lock_main(cli_context *ctx, int argc, char **argv)
{
	const char *arg;
	cli_args it;
	int id;

	cli_args_init(&it, ctx, "lock", argc, argv);
	id = cli_args_next(&it, NULL, &arg);
	if (id == CLI_ARG_ERROR)
		return CLI_EXIT_USAGE;
	if (id == CLI_ARG_HELP)
		return cli_print_command_help("lock");
	if (id == CLI_ARG_END)
		return cli_usage_error("lock", "missing subcommand (list, break)");
	if (strcmp(arg, "list") == 0)
		return lock_list(ctx, argc - (it.next - 1), argv + (it.next - 1));
	if (strcmp(arg, "break") == 0)
		return lock_break(ctx, argc - (it.next - 1), argv + (it.next - 1));
	return cli_usage_error("lock", "unknown subcommand '%s'", arg);
}
