/*
 * state_runs.c - `faucet state runs` (the run history of a pipeline) and
 * `faucet state undo` (undo one run), over the library's faucet/run.h.
 *
 * `runs` merges the pipeline-level history and every invocation's into one
 * list, newest first - run ids sort by start time, so a string sort is a
 * time sort.  `undo` plans before it writes: a conflict (a key changed
 * since the run) exits 3 naming the key, its current value and what the run
 * wrote, with nothing written.
 */
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "util.h"
#include "cli.h"
#include "jsonw.h"

typedef struct {
	const char *pipeline, *row, *run;
	int force, dry_run;
	int wait_given;
	const char *wait; /* --wait=D's D; NULL with a bare --wait */
} runs_args;


static int parse(cli_context *ctx, const char *command, int allow_run,
		 int argc, char **argv, runs_args *a)
{
	enum { O_ROW = 1, O_FORCE, O_DRY, O_TENANT };
	static const cli_option opts[] = {{"row", 0, 1, O_ROW},
					  {"force", 0, 0, O_FORCE},
					  {"dry-run", 0, 0, O_DRY},
					  CLI_TENANT_OPTION(O_TENANT),
					  {NULL, 0, 0, 0}};
	static const cli_option runs_opts[] = {{"row", 0, 1, O_ROW}, CLI_TENANT_OPTION(O_TENANT),
					       {NULL, 0, 0, 0}};
	const char *tenant = NULL;
	int rc;
	const char *v;
	cli_args it;
	int id;

	memset(a, 0, sizeof(*a));
	if (allow_run)
		cli_take_wait(&argc, argv, &a->wait_given, &a->wait);
	cli_args_init(&it, ctx, command, argc, argv);
	while ((id = cli_args_next(&it, allow_run ? opts : runs_opts, &v)) != CLI_ARG_END) {
		if (id == CLI_ARG_ERROR)
			return CLI_EXIT_USAGE;
		if (id == CLI_ARG_HELP)
			return cli_print_command_help(command) == 0 ? -1 : CLI_EXIT_FAILED;
		if (id == O_ROW)
			a->row = v;
		else if (id == O_FORCE)
			a->force = 1;
		else if (id == O_DRY)
			a->dry_run = 1;
		else if (id == O_TENANT && (rc = cli_tenant_check(command, v, &tenant)) != 0)
			return rc;
		else if (id == O_TENANT)
			continue;
		else if (a->pipeline == NULL)
			a->pipeline = v;
		else if (allow_run && a->run == NULL)
			a->run = v;
		else
			return cli_usage_error(command, "unexpected argument '%s'", v);
	}
	if (a->pipeline == NULL)
		return cli_usage_error(command, "which pipeline?");
	if (faucet_validate_key(a->pipeline) != 0 || strstr(a->pipeline, "::") != NULL)
		return cli_usage_error(command, "invalid pipeline name '%s'", a->pipeline);
	if (tenant != NULL) {
		/* A run is scoped by its keys' first segment (doc/design.md §8.7):
		 * tenant T's pipeline P is recorded as T's invocation P. */
		if (a->row != NULL)
			return cli_usage_error(command, "--tenant and --row together: the runs of "
					       "tenant %s's pipeline %s are its invocation %s of %s; "
					       "give one of them", tenant, a->pipeline,
					       a->pipeline, tenant);
		a->row = a->pipeline;
		a->pipeline = tenant;
	}
	if (a->row != NULL) {
		char *k = faucet__sprintf("%s::%s", a->pipeline, a->row);
		int bad = k == NULL || faucet_validate_key(k) != 0 || faucet_run_is_bookkeeping_key(k);
		free(k);
		if (bad)
			return cli_usage_error(command, "invalid row '%s'", a->row);
	}
	return 0;
}

/* ---- runs ---------------------------------------------------------------------------- */

typedef struct {
	json_object *entry;
	const char *row; /* NULL = pipeline level */
	const char *run;
} history_row;

static int newest_first(const void *x, const void *y)
{
	return strcmp(((const history_row *)y)->run, ((const history_row *)x)->run);
}

static const char *member(json_object *o, const char *name)
{
	json_object *m;

	if (!json_object_object_get_ex(o, name, &m) || m == NULL)
		return NULL;
	return json_object_get_string(m);
}

/* A message may hold anything the command printed: keep it on one line. */
static void put_escaped(faucet_buf *b, const char *msg)
{
	for (const char *p = msg; *p; p++) {
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			(void)faucet__buf_printf(b, "\\x%02x", (unsigned char)*p);
		else
			(void)faucet__buf_putc(b, *p);
	}
}

/* On a terminal: a header, aligned columns and local times. */
static int print_history_table(cli_context *ctx, const history_row *rows, size_t n)
{
	static const char *const heads[] = {"RUN", "STARTED", "ENDED", "OUTCOME", "KEYS", "ROW",
					    "NOTE"};
	cli_table t;
	int rc;

	cli_table_init(&t, 7);
	for (size_t i = 0; i < n; i++) {
		json_object *e = rows[i].entry, *keys, *total;
		const char *msg = member(e, "message"), *undoes = member(e, "undoes");
		const char *started = member(e, "started_at"), *ended = member(e, "ended_at");
		char sbuf[64], ebuf[64], kbuf[32];
		faucet_buf note = FAUCET_BUF_INIT;
		const char *cells[7];
		size_t nkeys = json_object_object_get_ex(e, "keys", &keys) && keys
				       ? json_object_array_length(keys) : 0;

		if (json_object_object_get_ex(e, "keys_total", &total) &&
		    json_object_is_type(total, json_type_int) && json_object_get_int64(total) > 0)
			nkeys = (size_t)json_object_get_int64(total);
		(void)snprintf(kbuf, sizeof(kbuf), "%zu", nkeys);
		if (undoes != NULL)
			(void)faucet__buf_printf(&note, "undoes %s%s", undoes, msg ? "; " : "");
		if (msg != NULL)
			put_escaped(&note, msg);
		cells[0] = rows[i].run;
		cells[1] = started ? cli_time_shown(ctx, 0, started, sbuf, sizeof(sbuf)) : NULL;
		cells[2] = ended ? cli_time_shown(ctx, 0, ended, ebuf, sizeof(ebuf)) : NULL;
		cells[3] = member(e, "outcome") ? member(e, "outcome") : "?";
		cells[4] = kbuf;
		cells[5] = rows[i].row;
		cells[6] = note.failed ? NULL : note.ptr ? note.ptr : "";
		if (note.failed)
			t.failed = 1;
		(void)cli_table_add(&t, cells);
		faucet__buf_dispose(&note);
	}
	rc = cli_table_print(&t, ctx, heads);
	cli_table_dispose(&t);
	return rc;
}

static int print_history(cli_context *ctx, const char *json)
{
	json_object *root = json_tokener_parse(json);
	history_row *rows = NULL;
	size_t n = 0, cap = 0;
	int rc = CLI_EXIT_OK;

	if (root == NULL)
		return cli_error(CLI_EXIT_FAILED, "state runs: out of memory");
	for (size_t i = 0; i < json_object_array_length(root); i++) {
		json_object *scope = json_object_array_get_idx(root, i), *runs;

		if (!json_object_object_get_ex(scope, "runs", &runs))
			continue;
		for (size_t j = 0; j < json_object_array_length(runs); j++) {
			history_row *grown = faucet__reserve(rows, &cap, n + 1, sizeof(*rows), 64);
			if (grown == NULL) {
				rc = cli_fail(CLI_EXIT_FAILED, "state runs");
				goto done;
			}
			rows = grown;
			rows[n].entry = json_object_array_get_idx(runs, j);
			rows[n].row = member(scope, "row");
			rows[n].run = member(rows[n].entry, "run");
			if (rows[n].run != NULL)
				n++;
		}
	}
	qsort(rows, n, sizeof(*rows), newest_first);
	if (ctx->stdout_tty) {
		rc = print_history_table(ctx, rows, n);
		goto done;
	}
	for (size_t i = 0; i < n; i++) {
		json_object *e = rows[i].entry, *keys, *total;
		const char *msg = member(e, "message"), *undoes = member(e, "undoes");
		size_t nkeys = json_object_object_get_ex(e, "keys", &keys) && keys
				       ? json_object_array_length(keys) : 0;

		/* A big run lists its first keys only, and how many in all. */
		if (json_object_object_get_ex(e, "keys_total", &total) &&
		    json_object_is_type(total, json_type_int) && json_object_get_int64(total) > 0)
			nkeys = (size_t)json_object_get_int64(total);

		printf("%s\t%s\t%s\t%s\t%zu key%s\t%s", rows[i].run,
		       member(e, "started_at") ? member(e, "started_at") : "-",
		       member(e, "ended_at") ? member(e, "ended_at") : "-",
		       member(e, "outcome") ? member(e, "outcome") : "?", nkeys, nkeys == 1 ? "" : "s",
		       rows[i].row ? rows[i].row : "-");
		if (undoes != NULL)
			printf("\tundoes %s", undoes);
		if (msg != NULL) {
			/* A message may hold anything the command printed: keep it
			 * on one line. */
			putchar('\t');
			for (const char *p = msg; *p; p++) {
				if ((unsigned char)*p < 0x20 || *p == 0x7f)
					printf("\\x%02x", (unsigned char)*p);
				else
					putchar(*p);
			}
		}
		putchar('\n');
	}
done:
	free(rows);
	json_object_put(root);
	return rc;
}

int cli_state_runs(cli_context *ctx, int argc, char **argv)
{
	runs_args a;
	faucet_store *s = NULL;
	char *json = NULL;
	int rc = parse(ctx, "state runs", 0, argc, argv, &a);

	if (rc != 0)
		return rc == -1 ? 0 : rc;
	if ((rc = cli_open_store_existing(ctx, &s)) != 0)
		return rc;
	if (faucet_run_history_json(s, a.pipeline, a.row, &json) != 0) {
		rc = cli_fail(CLI_EXIT_FAILED, "state runs %s", a.pipeline);
	} else if (ctx->json) {
		fputs(json, stdout);
		putchar('\n');
		rc = CLI_EXIT_OK;
	} else {
		rc = print_history(ctx, json);
	}
	free(json);
	faucet_store_free(s);
	return rc;
}

/* ---- undo ----------------------------------------------------------------------------------- */

static char *undo_command(const char *pipeline, const char *scope, const char *run)
{
	const char *row = strchr(scope, ':') ? scope + strlen(pipeline) + 2 : NULL;

	return row ? faucet__sprintf("faucet state undo %s --row %s %s", pipeline, row, run)
		   : faucet__sprintf("faucet state undo %s %s", pipeline, run);
}

/* One conflicting key, its line of the text report: who changed it. */
static void conflict_line(const faucet_undo_conflict *c)
{
	const char *cur = c->current ? faucet_value_json(c->current) : "(absent)";
	const char *wrote = !c->wrote_known ? "(unknown)"
			    : c->wrote      ? faucet_value_json(c->wrote)
					    : "(absent)";

	if (c->run != NULL)
		fprintf(stderr, "faucet: conflict: %s changed by later run %s (now %.200s; the run "
			"wrote %.200s)\n", c->key, c->run, cur, wrote);
	else
		fprintf(stderr,
			"faucet: conflict: %s changed by a write outside any run (now %.200s; the run "
			"wrote %.200s)\n", c->key, cur, wrote);
}

static void conflict_json(faucet_buf *b, const faucet_undo_conflict *c)
{
	(void)faucet__buf_putc(b, '{');
	cli_jw_member(b, "key", 1);
	faucet__json_string(b, c->key);
	cli_jw_member(b, "current", 0);
	(void)faucet__buf_puts(b, c->current ? faucet_value_json(c->current) : "null");
	cli_jw_member(b, "wrote", 0);
	(void)faucet__buf_puts(b, c->wrote ? faucet_value_json(c->wrote) : "null");
	cli_jw_member(b, "wrote_known", 0);
	(void)faucet__buf_puts(b, c->wrote_known ? "true" : "false");
	cli_jw_member(b, "later_run", 0);
	faucet__json_string(b, c->run);
	(void)faucet__buf_putc(b, '}');
}

static int report_conflict(cli_context *ctx, const faucet_undo_result *r)
{
	const char *cur = r->conflict_current ? faucet_value_json(r->conflict_current) : "(absent)";
	const char *wrote = !r->conflict_wrote_known ? "(unknown: its last write's outcome was "
						       "not recorded)"
			    : r->conflict_wrote      ? faucet_value_json(r->conflict_wrote)
						     : "(absent)";

	if (ctx->json) {
		faucet_buf b = FAUCET_BUF_INIT;

		(void)faucet__buf_puts(&b, "{\"error\":{");
		cli_jw_member(&b, "code", 1);
		faucet__json_string(&b, "conflict");
		cli_jw_member(&b, "message", 0);
		faucet__json_string(&b, "a key changed since the run");
		cli_jw_member(&b, "exit", 0);
		(void)faucet__buf_puts(&b, "3}");
		cli_jw_member(&b, "run", 0);
		faucet__json_string(&b, r->run);
		cli_jw_member(&b, "key", 0);
		faucet__json_string(&b, r->conflict_key);
		cli_jw_member(&b, "current", 0);
		(void)faucet__buf_puts(&b, r->conflict_current ? faucet_value_json(r->conflict_current)
							    : "null");
		cli_jw_member(&b, "wrote", 0);
		(void)faucet__buf_puts(&b, r->conflict_wrote ? faucet_value_json(r->conflict_wrote)
							 : "null");
		cli_jw_member(&b, "later_run", 0);
		faucet__json_string(&b, r->conflict_run);
		cli_jw_member(&b, "conflicts", 0);
		(void)faucet__buf_putc(&b, '[');
		for (size_t i = 0; i < r->conflict_count; i++) {
			if (i > 0)
				(void)faucet__buf_putc(&b, ',');
			conflict_json(&b, &r->conflicts[i]);
		}
		(void)faucet__buf_putc(&b, ']');
		cli_jw_member(&b, "conflict_total", 0);
		(void)faucet__buf_printf(&b, "%zu", r->conflict_total);
		cli_jw_member(&b, "truncated", 0);
		(void)faucet__buf_puts(&b, r->conflicts_truncated ? "true" : "false");
		(void)faucet__buf_putc(&b, '}');
		(void)cli_jw_print(&b);
	} else if (r->conflict_total > 1) {
		/* Every key, so that one retry after fixing them is enough. */
		for (size_t i = 0; i < r->conflict_count; i++)
			conflict_line(&r->conflicts[i]);
		if (r->conflicts_truncated)
			fprintf(stderr, "faucet: conflict: ... and %zu more keys\n",
				r->conflict_total - r->conflict_count);
	}
	if (r->conflict_total > 1)
		return cli_error(CLI_EXIT_CONDITION,
				 "cannot undo run %s: %zu keys changed since (listed above); "
				 "nothing written - undo the later runs first, or use --force to "
				 "restore anyway", r->run, r->conflict_total);
	if (r->conflict_run != NULL)
		return cli_error(CLI_EXIT_CONDITION,
				 "cannot undo run %s: the later run %s changed %s (now %.200s; the run "
				 "wrote %.200s); nothing written - undo that run first, or use --force "
				 "to restore anyway", r->run, r->conflict_run, r->conflict_key, cur, wrote);
	return cli_error(CLI_EXIT_CONDITION,
			 "cannot undo run %s: %s changed since (now %.200s; the run wrote %.200s); "
			 "nothing written - use --force to restore anyway",
			 r->run, r->conflict_key, cur, wrote);
}

/* "steps": what each restored key held and gets back. */
static void steps_json(faucet_buf *b, const faucet_undo_result *r)
{
	cli_jw_member(b, "steps", 0);
	(void)faucet__buf_putc(b, '[');
	for (size_t i = 0; i < r->restored.count; i++) {
		if (i > 0)
			(void)faucet__buf_putc(b, ',');
		(void)faucet__buf_putc(b, '{');
		cli_jw_member(b, "key", 1);
		faucet__json_string(b, r->restored.strings[i]);
		cli_jw_member(b, "replaced", 0);
		(void)faucet__buf_puts(b, r->replaced[i] ? faucet_value_json(r->replaced[i]) : "null");
		cli_jw_member(b, "restored_to", 0);
		(void)faucet__buf_puts(b, r->restored_to[i] ? faucet_value_json(r->restored_to[i])
							 : "null");
		(void)faucet__buf_putc(b, '}');
	}
	(void)faucet__buf_putc(b, ']');
}

/* The library's options from the arguments, --wait's duration checked. */
static int undo_options(const runs_args *a, faucet_undo_options *o)
{
	unsigned long long ms = 0;
	int rc;

	o->row = a->row;
	o->run = a->run;
	o->force = a->force;
	o->dry_run = a->dry_run;
	o->command = "faucet state undo";
	if (!a->wait_given)
		return 0;
	if (a->wait == NULL) {
		o->wait_ms = FAUCET_RUN_WAIT_FOREVER;
		return 0;
	}
	if (*a->wait == '\0')
		return cli_usage_error("state undo", "--wait= needs a duration, e.g. "
				       "--wait=30s (--wait alone waits without a "
				       "limit)");
	if ((rc = cli_duration_option("state undo", "--wait", a->wait, 1, CLI_LEASE_MAX_MS,
				      &ms)) != 0)
		return rc;
	o->wait_ms = ms;
	return 0;
}

/* The undo itself (planned, then written unless --dry-run); a failure's
 * exit code says whose it was. */
static int perform_undo(faucet_store *s, const runs_args *a, const faucet_undo_options *o,
			faucet_undo_result *r)
{
	int code;

	if (faucet_run_undo(s, a->pipeline, o, r) == 0)
		return 0;
	code = faucet_error_last()->code;
	return cli_fail(code == FAUCET_ENOTFOUND || code == FAUCET_EINVALID ? CLI_EXIT_USAGE
			: code == FAUCET_EBUSY ? CLI_EXIT_BUSY
						: CLI_EXIT_FAILED,
			"state undo");
}

static int print_undo_json(const runs_args *a, const faucet_undo_result *r, const char *again)
{
	faucet_buf b = FAUCET_BUF_INIT;

	(void)faucet__buf_putc(&b, '{');
	cli_jw_member(&b, "undone", 1);
	faucet__json_string(&b, r->run);
	cli_jw_member(&b, "scope", 0);
	faucet__json_string(&b, r->scope);
	cli_jw_member(&b, "dry_run", 0);
	(void)faucet__buf_puts(&b, a->dry_run ? "true" : "false");
	cli_jw_member(&b, "restored", 0);
	cli_jw_string_array(&b, &r->restored);
	steps_json(&b, r);
	cli_jw_member(&b, "run", 0);
	faucet__json_string(&b, r->undo_run);
	cli_jw_member(&b, "undo", 0);
	faucet__json_string(&b, again);
	(void)faucet__buf_putc(&b, '}');
	return cli_jw_print(&b) != 0 ? CLI_EXIT_FAILED : 0;
}

/* The keys restored (stdout) and the command that undoes the undo
 * (stderr), or the conflict that stopped it. */
static int report_undo(cli_context *ctx, const runs_args *a, const faucet_undo_result *r)
{
	char *again = NULL;
	int rc = 0;

	if (r->conflict) {
		if (r->undo_run != NULL)
			fprintf(stderr, "faucet: undo run %s stopped at a conflict after restoring "
				"what came before it\n", r->undo_run);
		return report_conflict(ctx, r);
	}
	for (size_t i = 0; !ctx->json && !ctx->quiet && i < r->restored.count; i++)
		printf("%s %s\n", a->dry_run ? "would restore" : "restored", r->restored.strings[i]);
	if (!a->dry_run) {
		again = undo_command(a->pipeline, r->scope, r->undo_run);
		if (again == NULL)
			return cli_fail(CLI_EXIT_FAILED, "state undo");
		if (!ctx->quiet && !ctx->json)
			fprintf(stderr, "faucet: undid run %s as run %s; undo: %s\n", r->run,
				r->undo_run, again);
	}
	if (ctx->json)
		rc = print_undo_json(a, r, again);
	free(again);
	return rc;
}

int cli_state_undo(cli_context *ctx, int argc, char **argv)
{
	faucet_undo_options o = FAUCET_UNDO_OPTIONS_INIT;
	faucet_undo_result r = FAUCET_UNDO_RESULT_INIT;
	runs_args a;
	faucet_store *s = NULL;
	int rc = parse(ctx, "state undo", 1, argc, argv, &a);

	if (rc != 0)
		return rc == -1 ? 0 : rc;
	if (!a.dry_run)
		cli_note_write();
	/* A bad --wait= is the command line's error, found before the store. */
	if ((rc = undo_options(&a, &o)) != 0 || (rc = cli_open_store_existing(ctx, &s)) != 0)
		return rc;
	if ((rc = perform_undo(s, &a, &o, &r)) == 0)
		rc = report_undo(ctx, &a, &r);
	faucet_undo_result_dispose(&r);
	faucet_store_free(s);
	return rc;
}
