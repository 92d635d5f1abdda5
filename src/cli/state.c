/*
 * state.c - `faucet state SUBCOMMAND`: picks the subcommand, and the read
 * side (list, show, get).
 *
 * Output has two forms.  On a terminal, `show` draws an aligned table and
 * cuts values to the window's width; anywhere else every command prints
 * plain, stable lines (tab-separated for `show`, full values) that scripts
 * can rely on.  --json is the machine form everywhere; stored values are
 * embedded verbatim, never re-encoded.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli.h"
#include "jsonw.h"

typedef struct {
	const char *name;
	int (*run)(cli_context *ctx, int argc, char **argv);
} subcommand;

static const subcommand subcommands[] = {
	{"list", cli_state_list},     {"show", cli_state_show},     {"get", cli_state_get},
	{"put", cli_state_put},       {"delete", cli_state_delete}, {"export", cli_state_export},
	{"import", cli_state_import}, {"copy", cli_state_copy},     {"rekey", cli_state_rekey},
	{"runs", cli_state_runs},     {"undo", cli_state_undo},
	{"reindex", cli_state_reindex},
	{"merge", cli_state_merge},
	{"clear", cli_state_clear},
	{"pipelines", cli_state_pipelines},
	{"move", cli_state_move},
};

int cli_state_main(cli_context *ctx, int argc, char **argv)
{
	const char *arg;
	cli_args it;
	int id;

	cli_args_init(&it, ctx, "state", argc, argv);
	id = cli_args_next(&it, NULL, &arg);
	if (id == CLI_ARG_ERROR)
		return CLI_EXIT_USAGE;
	if (id == CLI_ARG_HELP)
		return cli_print_command_help("state");
	if (id == CLI_ARG_END)
		return cli_usage_error("state", "missing subcommand (list, show, get, put, delete, "
						"export, import, copy, rekey, reindex)");
	for (size_t i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++) {
		if (strcmp(subcommands[i].name, arg) == 0)
			return subcommands[i].run(ctx, argc - (it.next - 1), argv + (it.next - 1));
	}
	{
		const char *names[sizeof(subcommands) / sizeof(subcommands[0])];
		const char *best;

		for (size_t i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++)
			names[i] = subcommands[i].name;
		best = faucet__suggest(arg, names, sizeof(subcommands) / sizeof(subcommands[0]));
		if (best != NULL)
			return cli_usage_error("state", "unknown subcommand '%s' (did you mean '%s'?)",
					       arg, best);
	}
	return cli_usage_error("state", "unknown subcommand '%s'", arg);
}

/* ---- list -------------------------------------------------------------- */

/* Drop run bookkeeping from a key list (in place, order kept). */
static void drop_bookkeeping(faucet_strarray *keys)
{
	size_t out = 0;

	for (size_t i = 0; i < keys->count; i++) {
		if (faucet_run_is_bookkeeping_key(keys->strings[i]))
			free(keys->strings[i]);
		else
			keys->strings[out++] = keys->strings[i];
	}
	keys->count = out;
}

/* Scan a subcommand's arguments into up to `max` positionals; options
 * other than the global ones are not accepted.  Returns -1 to go on, or an
 * exit code. */
static int simple_args(cli_context *ctx, const char *command, int argc, char **argv,
		        const char **pos, int max, int *count)
{
	const char *arg;
	cli_args it;
	int id;

	*count = 0;
	cli_args_init(&it, ctx, command, argc, argv);
	while ((id = cli_args_next(&it, NULL, &arg)) != CLI_ARG_END) {
		if (id == CLI_ARG_ERROR)
			return CLI_EXIT_USAGE;
		if (id == CLI_ARG_HELP)
			return cli_print_command_help(command);
		if (*count == max)
			return cli_usage_error(command, "unexpected argument '%s'", arg);
		pos[(*count)++] = arg;
	}
	return -1;
}

int cli_state_list(cli_context *ctx, int argc, char **argv)
{
	enum { OPT_ALL = 1, OPT_PREFIX, OPT_TENANT };
	static const cli_option opts[] = {{"all", 0, 0, OPT_ALL},
					  {"prefix", 0, 1, OPT_PREFIX},
					  CLI_TENANT_OPTION(OPT_TENANT),
					  {NULL, 0, 0, 0}};
	faucet_strarray keys = {NULL, 0};
	faucet_store *s;
	const char *raw = NULL, *pos = NULL, *tenant = NULL, *arg;
	char *prefix = NULL;
	cli_args it;
	int rc, id, all = 0;

	cli_args_init(&it, ctx, "state list", argc, argv);
	while ((id = cli_args_next(&it, opts, &arg)) != CLI_ARG_END) {
		if (id == CLI_ARG_ERROR)
			return CLI_EXIT_USAGE;
		if (id == CLI_ARG_HELP)
			return cli_print_command_help("state list");
		if (id == OPT_ALL)
			all = 1;
		else if (id == OPT_PREFIX)
			raw = arg;
		else if (id == OPT_TENANT && (rc = cli_tenant_check("state list", arg, &tenant)) != 0)
			return rc;
		else if (id == OPT_TENANT)
			continue;
		else if (pos == NULL)
			pos = arg;
		else
			return cli_usage_error("state list", "unexpected argument '%s'", arg);
	}
	if (raw != NULL && pos != NULL)
		return cli_usage_error("state list", "give PIPELINE or --prefix PREFIX, not both");
	/* A pipeline name is one key segment; anything else (orders::eu, a
	 * partial key) keeps its old meaning: a byte prefix. */
	if (pos != NULL && (strstr(pos, "::") != NULL || faucet_validate_key(pos) != 0)) {
		if (tenant != NULL)
			return cli_usage_error("state list", "--tenant goes with a PIPELINE name; '%s' "
					       "is a key prefix", pos);
		raw = pos;
		pos = NULL;
	}
	if (tenant != NULL && pos == NULL)
		return cli_usage_error("state list", "--tenant needs a PIPELINE");
	prefix = pos == NULL ? faucet__strdup(raw ? raw : "")
	       : tenant ? faucet__sprintf("%s::%s::", tenant, pos)
			: faucet__sprintf("%s::", pos);
	if (prefix == NULL)
		return cli_error(CLI_EXIT_FAILED, "out of memory");
	rc = cli_open_store_existing(ctx, &s);
	if (rc != 0) {
		free(prefix);
		return rc;
	}
	if (faucet_store_list(s, prefix, &keys) != 0) {
		rc = cli_fail(CLI_EXIT_FAILED, "cannot list the keys of %s", ctx->store_label);
		faucet_store_free(s);
		free(prefix);
		return rc;
	}
	free(prefix);
	faucet_store_free(s);
	if (!all)
		drop_bookkeeping(&keys);
	if (ctx->json) {
		faucet_buf b = FAUCET_BUF_INIT;

		cli_jw_string_array(&b, &keys);
		rc = cli_jw_print(&b) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILED;
	} else {
		for (size_t i = 0; i < keys.count; i++) {
			fputs_unlocked(keys.strings[i], stdout);
			putc_unlocked('\n', stdout);
		}
		rc = CLI_EXIT_OK;
	}
	faucet_strarray_dispose(&keys);
	return rc;
}

/* ---- get --------------------------------------------------------------- */

int cli_state_get(cli_context *ctx, int argc, char **argv)
{
	faucet_value *v = NULL;
	faucet_store *s;
	const char *key = NULL;
	int rc, n;

	rc = simple_args(ctx, "state get", argc, argv, &key, 1, &n);
	if (rc >= 0)
		return rc;
	if (key == NULL)
		return cli_usage_error("state get", "missing KEY");
	if (faucet_validate_key(key) != 0)
		return cli_fail(CLI_EXIT_USAGE, "state get");
	rc = cli_open_store_existing(ctx, &s);
	if (rc != 0)
		return rc;
	if (faucet_store_get(s, key, &v) != 0) {
		rc = cli_fail(CLI_EXIT_FAILED, "cannot read '%s' from %s", key, ctx->store_label);
		faucet_store_free(s);
		return rc;
	}
	faucet_store_free(s);
	if (ctx->json) {
		faucet_buf b = FAUCET_BUF_INIT;

		(void)faucet__buf_putc(&b, '{');
		cli_jw_member(&b, "key", 1);
		faucet__json_string(&b, key);
		cli_jw_member(&b, "found", 0);
		(void)faucet__buf_puts(&b, v ? "true" : "false");
		cli_jw_member(&b, "value", 0);
		(void)faucet__buf_puts(&b, v ? faucet_value_json(v) : "null");
		(void)faucet__buf_putc(&b, '}');
		rc = cli_jw_print(&b) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILED;
	} else if (v != NULL) {
		fwrite(faucet_value_json(v), 1, faucet_value_len(v), stdout);
		putchar('\n');
	}
	faucet_value_free(v);
	return rc;
}

/* ---- show -------------------------------------------------------------- */

typedef struct {
	const char *key;
	faucet_value *value;
	char *row;    /* owned copies; NULL when absent */
	char *sub;
	char *suffix;
} show_row;

static void show_rows_free(show_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		faucet_value_free(rows[i].value);
		free(rows[i].row);
		free(rows[i].sub);
		free(rows[i].suffix);
	}
	free(rows);
}

/* Decode one key into its parts.  A key the parser cannot place keeps
 * empty parts and is still shown. */
static int decode_row(show_row *r, const char *tenant, const char *pipeline)
{
	faucet_key *k = NULL;
	faucet_suffix_kind kind;

	if (faucet_key_parse(&k, tenant, pipeline, r->key) != 0)
		return 0;
	if (faucet_key_row(k) != NULL && (r->row = strdup(faucet_key_row(k))) == NULL)
		goto oom;
	r->sub = faucet_key_sub(k);
	if (r->sub == NULL && faucet_key_shard(k) != NULL &&
	    (r->sub = strdup(faucet_key_shard(k))) == NULL)
		goto oom;
	kind = faucet_key_suffix(k);
	if (kind != FAUCET_SUFFIX_NONE &&
	    (r->suffix = faucet_suffix_render(kind, faucet_key_suffix_arg(k))) == NULL)
		goto oom;
	faucet_key_free(k);
	return 0;
oom:
	faucet_key_free(k);
	return faucet_error_set(FAUCET_ENOMEM, "out of memory");
}

static size_t terminal_width(void)
{
	struct winsize ws;
	const char *cols = getenv("COLUMNS");

	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	if (cols != NULL && atoi(cols) > 0)
		return (size_t)atoi(cols);
	return 80;
}

static const char *or_dash(const char *s)
{
	return s != NULL ? s : "-";
}

static void print_table(cli_context *ctx, const show_row *rows, size_t n)
{
	static const char *const heads[] = {"KEY", "ROW", "SUB/SHARD", "SUFFIX", "VALUE"};
	size_t w[4], used, avail, width = terminal_width();

	for (size_t c = 0; c < 4; c++)
		w[c] = strlen(heads[c]);
	for (size_t i = 0; i < n; i++) {
		const char *cells[4] = {rows[i].key, or_dash(rows[i].row), or_dash(rows[i].sub),
					or_dash(rows[i].suffix)};
		for (size_t c = 0; c < 4; c++) {
			if (strlen(cells[c]) > w[c])
				w[c] = strlen(cells[c]);
		}
	}
	used = w[0] + w[1] + w[2] + w[3] + 8;
	avail = width > used + 10 ? width - used : 10;
	printf("%s%-*s  %-*s  %-*s  %-*s  %s%s\n", ctx->color ? "\033[1m" : "", (int)w[0], heads[0],
	       (int)w[1], heads[1], (int)w[2], heads[2], (int)w[3], heads[3], heads[4],
	       ctx->color ? "\033[0m" : "");
	for (size_t i = 0; i < n; i++) {
		const char *json = faucet_value_json(rows[i].value);
		size_t len = faucet_value_len(rows[i].value);

		printf("%-*s  %-*s  %-*s  %-*s  ", (int)w[0], rows[i].key, (int)w[1],
		       or_dash(rows[i].row), (int)w[2], or_dash(rows[i].sub), (int)w[3],
		       or_dash(rows[i].suffix));
		if (len <= avail) {
			printf("%s\n", json);
		} else {
			size_t cut = avail - 3;

			/* Do not split a UTF-8 sequence inside a JSON string. */
			while (cut > 0 && ((unsigned char)json[cut] & 0xC0) == 0x80)
				cut--;
			printf("%.*s...\n", (int)cut, json);
		}
	}
}

static void print_plain(const show_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		printf("%s\t%s\t%s\t%s\t%s\n", rows[i].key, rows[i].row ? rows[i].row : "",
		       rows[i].sub ? rows[i].sub : "", rows[i].suffix ? rows[i].suffix : "",
		       faucet_value_json(rows[i].value));
	}
}

static int print_show_json(const char *pipeline, const char *tenant, const char *prefix,
			   const show_row *rows, size_t n)
{
	faucet_buf b = FAUCET_BUF_INIT;

	(void)faucet__buf_putc(&b, '{');
	cli_jw_member(&b, "pipeline", 1);
	faucet__json_string(&b, pipeline);
	cli_jw_member(&b, "tenant", 0);
	faucet__json_string(&b, tenant);
	cli_jw_member(&b, "prefix", 0);
	faucet__json_string(&b, prefix);
	cli_jw_member(&b, "keys", 0);
	(void)faucet__buf_putc(&b, '[');
	for (size_t i = 0; i < n; i++) {
		(void)faucet__buf_puts(&b, i ? ",{" : "{");
		cli_jw_member(&b, "key", 1);
		faucet__json_string(&b, rows[i].key);
		cli_jw_member(&b, "row", 0);
		faucet__json_string(&b, rows[i].row);
		cli_jw_member(&b, "sub", 0);
		faucet__json_string(&b, rows[i].sub);
		cli_jw_member(&b, "suffix", 0);
		faucet__json_string(&b, rows[i].suffix);
		cli_jw_member(&b, "value", 0);
		(void)faucet__buf_puts(&b, faucet_value_json(rows[i].value));
		(void)faucet__buf_putc(&b, '}');
	}
	(void)faucet__buf_puts(&b, "]}");
	return cli_jw_print(&b) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILED;
}

/* List the namespace and read each value (a key deleted in between is
 * skipped). */
static int load_rows(cli_context *ctx, faucet_store *s, const char *prefix, const char *tenant,
		     const char *pipeline, int all, faucet_strarray *keys, show_row **out,
		     size_t *n)
{
	show_row *rows;

	*out = NULL;
	*n = 0;
	if (faucet_store_list(s, prefix, keys) != 0)
		return cli_fail(CLI_EXIT_FAILED, "cannot list '%s' in %s", prefix, ctx->store_label);
	if (!all)
		drop_bookkeeping(keys);
	rows = calloc(keys->count ? keys->count : 1, sizeof(*rows));
	if (rows == NULL)
		return cli_error(CLI_EXIT_FAILED, "out of memory");
	for (size_t i = 0; i < keys->count; i++) {
		show_row *r = &rows[*n];

		r->key = keys->strings[i];
		if (faucet_store_get(s, r->key, &r->value) != 0) {
			int rc = cli_fail(CLI_EXIT_FAILED, "cannot read '%s' from %s", r->key,
					  ctx->store_label);
			show_rows_free(rows, *n);
			*n = 0;
			return rc;
		}
		if (r->value == NULL)
			continue;
		(*n)++;
		if (decode_row(r, tenant, pipeline) != 0) {
			show_rows_free(rows, *n);
			*n = 0;
			return cli_fail(CLI_EXIT_FAILED, "decoding '%s'", keys->strings[i]);
		}
	}
	*out = rows;
	return 0;
}

int cli_state_show(cli_context *ctx, int argc, char **argv)
{
	enum { OPT_TENANT = 1, OPT_ALL };
	static const cli_option opts[] = {CLI_TENANT_OPTION(OPT_TENANT), {"all", 0, 0, OPT_ALL},
					  {NULL, 0, 0, 0}};
	faucet_strarray keys = {NULL, 0};
	const char *pipeline = NULL, *tenant = NULL, *arg;
	show_row *rows = NULL;
	faucet_store *s;
	char *prefix;
	size_t n = 0;
	cli_args it;
	int id, rc, all = 0;

	cli_args_init(&it, ctx, "state show", argc, argv);
	while ((id = cli_args_next(&it, opts, &arg)) != CLI_ARG_END) {
		if (id == CLI_ARG_ERROR)
			return CLI_EXIT_USAGE;
		if (id == CLI_ARG_HELP)
			return cli_print_command_help("state show");
		if (id == OPT_TENANT && (rc = cli_tenant_check("state show", arg, &tenant)) != 0)
			return rc;
		else if (id == OPT_TENANT)
			continue;
		else if (id == OPT_ALL)
			all = 1;
		else if (pipeline == NULL)
			pipeline = arg;
		else
			return cli_usage_error("state show", "unexpected argument '%s'", arg);
	}
	if ((rc = cli_pipeline_arg(ctx, "state show", &pipeline, tenant, 0, NULL)) != 0)
		return rc;
	prefix = tenant ? faucet__sprintf("%s::%s::", tenant, pipeline)
			: faucet__sprintf("%s::", pipeline);
	if (prefix == NULL)
		return cli_error(CLI_EXIT_FAILED, "out of memory");
	rc = cli_open_store_existing(ctx, &s);
	if (rc == 0) {
		rc = load_rows(ctx, s, prefix, tenant, pipeline, all, &keys, &rows, &n);
		faucet_store_free(s);
	}
	if (rc == 0) {
		if (n == 0 && !ctx->json)
			fprintf(stderr, "faucet: pipeline '%s'%s%s has no keys in %s\n", pipeline,
				tenant ? " of tenant " : "", tenant ? tenant : "", ctx->store_label);
		if (ctx->json)
			rc = print_show_json(pipeline, tenant, prefix, rows, n);
		else if (ctx->stdout_tty)
			print_table(ctx, rows, n);
		else
			print_plain(rows, n);
	}
	show_rows_free(rows, n);
	faucet_strarray_dispose(&keys);
	free(prefix);
	return rc;
}
