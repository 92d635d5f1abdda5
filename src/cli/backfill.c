/*
 * backfill.c - `faucet backfill`: re-run a pipeline over a past range,
 * unit by unit, with durable progress (SPEC section 6).
 *
 * This file only gathers the inputs and shows progress; planning, leases,
 * the marker and the child processes are the library's (faucet/backfill.h).
 * Defaults come from the pipeline YAML's `backfill:` block and flags win.
 *
 * Everything the operator typed is checked before the store is opened - the
 * window, the boundaries, the zone, the numbers, the placeholders - and the
 * runner checks the marker before it writes anything, so every exit 2
 * means "nothing ran and nothing was written".  Progress goes to stderr
 * (a bar on a terminal, one line per unit otherwise), so stdout carries only
 * the report, plain or --json.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "cli.h"
#include "jsonw.h"

static const char backfill_help[] =
	"usage: faucet backfill (-c FILE | --pipeline NAME) --from A --to B [OPTIONS]\n"
	"                       [-- COMMAND ARGS...]\n"
	"\n"
	"Run COMMAND (no shell) once per window of the range [A, B), at most N at a\n"
	"time, and remember each window's outcome so an interrupted or failed\n"
	"backfill can be resumed.  Without a command after --, the YAML's\n"
	"backfill.command is used.\n"
	"\n"
	"  --from A, --to B     RFC 3339 (2026-03-07T00:00:00-05:00) or a date\n"
	"                       (2026-03-07, local midnight in --timezone)\n"
	"  --window W           Ns, Nm, Nh or N seconds (elapsed), Nd or Nw (calendar\n"
	"                       days in --timezone); default: one unit for the range\n"
	"  --timezone TZ        IANA zone, default UTC\n"
	"  --concurrency N      units in flight (default 1)\n"
	"  --row ROW            the row this backfill is for (default \"default\")\n"
	"  --dry-run            show the units and what is already done; run nothing\n"
	"  --resume             continue a backfill of this range: skip done units\n"
	"  --restart            forget a backfill of this range and start over\n"
	"  --lease-ttl DURATION how long a unit's claim lasts unless renewed (60s)\n"
	"  --metrics-file FILE  write Prometheus metrics here at the end\n"
	"  --pipeline NAME      the pipeline (default: the YAML's name)\n"
	"\n"
	"Each argument may use ${backfill.start}, ${backfill.end}, ${backfill.start_date},\n"
	"${backfill.end_date}, ${backfill.start_unix}, ${backfill.end_unix} and\n"
	"${backfill.unit}; the same values are in FAUCET_BACKFILL_START, _END, ...,\n"
	"_UNIT, with FAUCET_BACKFILL_STATE_KEY and the store (FAUCET_CONFIG or\n"
	"FAUCET_STATE, and FAUCET_ENCRYPTION_KEY_ENV naming the key's variable for\n"
	"an encrypted store).  The store must have an atomic compare-and-put.\n"
	"\n"
	"Exit codes: 0 every unit done; N the number of failed units (at most 100);\n"
	"128 + signal when interrupted; 2 bad input (nothing ran); 1 a store error.\n";

typedef struct {
	const char *pipeline, *from, *to, *window, *timezone, *row, *metrics_file;
	const char *lease_ttl, *concurrency;
	int dry_run, resume, restart;
	faucet_strarray command; /* the command after --, copied */
} bf_args;

typedef struct {
	cli_context *ctx;
	int tty;          /* stderr is a terminal: draw a bar */
	int bar_drawn;
	faucet_buf units; /* --json: the units array's members */
	size_t nunits;
} bf_view;

/* ---- arguments ----------------------------------------------------------- */

static int parse_args(cli_context *ctx, int argc, char **argv, bf_args *a)
{
	enum { O_PIPELINE = 1, O_FROM, O_TO, O_WINDOW, O_TZ, O_CONC, O_ROW, O_DRY, O_RESUME,
	       O_RESTART, O_TTL, O_METRICS };
	static const cli_option opts[] = {
		{"pipeline", 0, 1, O_PIPELINE}, {"from", 0, 1, O_FROM},
		{"to", 0, 1, O_TO},             {"window", 0, 1, O_WINDOW},
		{"timezone", 0, 1, O_TZ},       {"concurrency", 0, 1, O_CONC},
		{"row", 0, 1, O_ROW},           {"dry-run", 0, 0, O_DRY},
		{"resume", 0, 0, O_RESUME},     {"restart", 0, 0, O_RESTART},
		{"lease-ttl", 0, 1, O_TTL},     {"metrics-file", 0, 1, O_METRICS},
		{NULL, 0, 0, 0}};
	const char **slot[] = {NULL, &a->pipeline, &a->from, &a->to, &a->window, &a->timezone,
			       &a->concurrency, &a->row};
	cli_args it;
	const char *v;
	int id;

	cli_args_init(&it, ctx, "backfill", argc, argv);
	while ((id = cli_args_next(&it, opts, &v)) != CLI_ARG_END) {
		if (id == CLI_ARG_ERROR)
			return CLI_EXIT_USAGE;
		if (id == CLI_ARG_HELP)
			return cli_print_help(backfill_help) == 0 ? -1 : CLI_EXIT_FAILED;
		if (id == CLI_ARG_POSITIONAL) {
			if (!it.positional_only)
				return cli_usage_error("backfill",
						       "unexpected argument '%s' (put the command after --)", v);
			if (faucet_strarray_push(&a->command, v) != 0)
				return cli_fail(CLI_EXIT_FAILED, "backfill");
			continue;
		}
		if (id < (int)FAUCET_ARRAY_LEN(slot))
			*slot[id] = v;
		else if (id == O_DRY)
			a->dry_run = 1;
		else if (id == O_RESUME)
			a->resume = 1;
		else if (id == O_RESTART)
			a->restart = 1;
		else if (id == O_TTL)
			a->lease_ttl = v;
		else if (id == O_METRICS)
			a->metrics_file = v;
	}
	return 0;
}

static int parse_count(const char *text, unsigned *out)
{
	char *end;
	unsigned long n;

	errno = 0;
	if (text[0] < '0' || text[0] > '9')
		return -1;
	n = strtoul(text, &end, 10);
	if (errno != 0 || *end != '\0' || n == 0 || n > 1000)
		return -1;
	*out = (unsigned)n;
	return 0;
}

/* ---- progress ------------------------------------------------------------ */

static void draw_bar(bf_view *v, size_t finished, size_t total)
{
	const int width = 30;
	int filled = total ? (int)((double)finished / (double)total * width) : width;

	fprintf(stderr, "\r[%.*s%*s] %zu/%zu", filled, "##############################",
		width - filled, "", finished, total);
	fflush(stderr);
	v->bar_drawn = 1;
}

static void end_bar(bf_view *v)
{
	if (v->bar_drawn) {
		fputc('\n', stderr);
		v->bar_drawn = 0;
	}
}

static void on_plan(void *ctx, size_t total, size_t skipped, size_t to_run)
{
	bf_view *v = ctx;

	fprintf(stderr, "backfill: %zu unit(s), %zu already done, %zu to run\n", total, skipped,
		to_run);
	if (v->tty)
		draw_bar(v, skipped, total);
}

static void on_unit_end(void *ctx, const faucet_backfill_unit *u, faucet_backfill_status st,
			const char *error, size_t finished, size_t total)
{
	bf_view *v = ctx;

	if (v->tty && st != FAUCET_BACKFILL_FAILED) {
		draw_bar(v, finished, total);
		return;
	}
	end_bar(v);
	if (st == FAUCET_BACKFILL_DONE)
		fprintf(stderr, "unit %s done (%zu/%zu)\n", u->id, finished, total);
	else if (st == FAUCET_BACKFILL_FAILED)
		fprintf(stderr, "unit %s failed: %s (%zu/%zu)\n", u->id, error, finished, total);
	else
		fprintf(stderr, "unit %s left pending (%zu/%zu)\n", u->id, finished, total);
	if (v->tty)
		draw_bar(v, finished, total);
}

static void on_message(void *ctx, const char *text)
{
	bf_view *v = ctx;

	end_bar(v);
	fprintf(stderr, "backfill: %s\n", text);
}

static const char *status_name(faucet_backfill_status st)
{
	return st == FAUCET_BACKFILL_DONE ? "done" : st == FAUCET_BACKFILL_FAILED ? "failed" : "pending";
}

/* Dry run: every unit with its recorded status. */
static void on_planned(void *ctx, const faucet_backfill_unit *u, faucet_backfill_status st)
{
	bf_view *v = ctx;

	if (!v->ctx->json) {
		printf("%s  %s  %s  %s\n", u->id, u->start, u->end,
		       st == FAUCET_BACKFILL_DONE ? "skip (done)" : "run");
		return;
	}
	(void)faucet_buf_puts(&v->units, v->nunits++ ? ",{" : "{");
	jw_member(&v->units, "unit", 1);
	jw_string(&v->units, u->id);
	jw_member(&v->units, "start", 0);
	jw_string(&v->units, u->start);
	jw_member(&v->units, "end", 0);
	jw_string(&v->units, u->end);
	jw_member(&v->units, "status", 0);
	jw_string(&v->units, status_name(st));
	(void)faucet_buf_putc(&v->units, '}');
}

/* ---- the report ---------------------------------------------------------- */

static int report(bf_view *v, const char *pipeline, const faucet_backfill_plan *p,
		  const faucet_backfill_result *r, int dry_run)
{
	faucet_buf b = FAUCET_BUF_INIT;

	end_bar(v);
	if (!v->ctx->json) {
		if (!dry_run)
			printf("backfill %s %s: %zu unit(s): %zu done, %zu failed, %zu skipped, "
			       "%zu by another runner, %zu pending%s\n",
			       pipeline, faucet_backfill_plan_hash(p), r->total, r->done, r->failed,
			       r->skipped, r->by_others, r->pending,
			       r->signal ? " (interrupted)" : "");
		return 0;
	}
	(void)faucet_buf_putc(&b, '{');
	jw_member(&b, "pipeline", 1);
	jw_string(&b, pipeline);
	jw_member(&b, "descriptor", 0);
	jw_string(&b, faucet_backfill_plan_descriptor(p));
	jw_member(&b, "range_hash", 0);
	jw_string(&b, faucet_backfill_plan_hash(p));
	jw_member(&b, "dry_run", 0);
	(void)faucet_buf_puts(&b, dry_run ? "true" : "false");
	jw_member(&b, "total", 0);
	(void)faucet_buf_printf(&b, "%zu", r->total);
	jw_member(&b, "skipped", 0);
	(void)faucet_buf_printf(&b, "%zu", r->skipped);
	jw_member(&b, "done", 0);
	(void)faucet_buf_printf(&b, "%zu", r->done);
	jw_member(&b, "failed", 0);
	(void)faucet_buf_printf(&b, "%zu", r->failed);
	jw_member(&b, "by_others", 0);
	(void)faucet_buf_printf(&b, "%zu", r->by_others);
	jw_member(&b, "pending", 0);
	(void)faucet_buf_printf(&b, "%zu", r->pending);
	jw_member(&b, "signal", 0);
	(void)faucet_buf_printf(&b, "%d", r->signal);
	if (dry_run) {
		jw_member(&b, "units", 0);
		(void)faucet_buf_putc(&b, '[');
		(void)faucet_buf_put(&b, v->units.ptr ? v->units.ptr : "", v->units.len);
		(void)faucet_buf_putc(&b, ']');
	}
	(void)faucet_buf_putc(&b, '}');
	return jw_print(&b) == 0 ? 0 : CLI_EXIT_FAILED;
}

/* ---- the command ---------------------------------------------------------- */

static const char *nonempty_getenv(const char *name)
{
	const char *v = getenv(name);
	return v != NULL && *v != '\0' ? v : NULL;
}

/* Merge flags over the YAML's defaults and check every one of them. */
static int resolve(cli_context *ctx, bf_args *a, const cli_config *cfg,
		   faucet_backfill_run_options *o, faucet_backfill_range *range)
{
	unsigned long long ttl_ms;

	if (a->pipeline == NULL && cfg != NULL)
		a->pipeline = cfg->name;
	if (a->pipeline == NULL)
		return cli_usage_error("backfill", "which pipeline? give -c FILE or --pipeline NAME");
	if (a->from == NULL || a->to == NULL)
		return cli_usage_error("backfill", "--from and --to are required");
	if (a->resume && a->restart)
		return cli_usage_error("backfill", "--resume and --restart cannot be used together");
	if (cfg != NULL) {
		if (a->window == NULL)
			a->window = cfg->backfill_window;
		if (a->timezone == NULL)
			a->timezone = cfg->backfill_timezone;
		if (a->concurrency == NULL && cfg->backfill_concurrency > 0)
			o->concurrency = (unsigned)cfg->backfill_concurrency;
		/* The config's command, copied so that it ends in NULL below. */
		if (a->command.count == 0) {
			const faucet_strarray *c = &cfg->backfill_command;
			for (size_t i = 0; i < c->count; i++) {
				if (faucet_strarray_push(&a->command, c->strings[i]) != 0)
					return cli_fail(CLI_EXIT_FAILED, "backfill");
			}
		}
	}
	if (a->command.count > 0) {
		/* argv must end in NULL: push one past the end. */
		if (faucet_strarray_push(&a->command, "") != 0)
			return cli_fail(CLI_EXIT_FAILED, "backfill");
		free(a->command.strings[--a->command.count]);
		a->command.strings[a->command.count] = NULL;
		o->argv = (const char *const *)a->command.strings;
	}
	if (a->concurrency != NULL && parse_count(a->concurrency, &o->concurrency) != 0)
		return cli_usage_error("backfill", "--concurrency must be a whole number from 1 to "
				       "1000, not '%s'", a->concurrency);
	if (a->lease_ttl != NULL) {
		if (cli_parse_duration_ms(a->lease_ttl, &ttl_ms) != 0 || ttl_ms < 3000)
			return cli_usage_error("backfill", "--lease-ttl must be a duration of at "
					       "least 3s, not '%s'", a->lease_ttl);
		o->lease_ttl = (int64_t)(ttl_ms / 1000);
	}
	if (!a->dry_run && o->argv == NULL)
		return cli_usage_error("backfill", "no command: give one after -- or set "
				       "backfill.command in the config");
	o->pipeline = a->pipeline;
	o->mode = a->resume ? FAUCET_BACKFILL_RESUME
			    : a->restart ? FAUCET_BACKFILL_RESTART : FAUCET_BACKFILL_FRESH;
	o->dry_run = a->dry_run;
	o->metrics_file = a->metrics_file;
	o->handle_signals = 1;
	range->from = a->from;
	range->to = a->to;
	range->window = a->window;
	range->timezone = a->timezone;
	range->row = a->row;
	(void)ctx;
	return 0;
}

int cli_backfill_main(cli_context *ctx, int argc, char **argv)
{
	bf_args a;
	bf_view view;
	faucet_backfill_run_options o;
	faucet_backfill_progress cb;
	faucet_backfill_range range;
	faucet_backfill_plan *plan = NULL;
	faucet_backfill_result res;
	const cli_config *cfg = NULL;
	faucet_store *s = NULL;
	int rc;

	memset(&a, 0, sizeof(a));
	memset(&o, 0, sizeof(o));
	memset(&range, 0, sizeof(range));
	memset(&view, 0, sizeof(view));
	view.ctx = ctx;
	view.tty = isatty(STDERR_FILENO);
	view.units = (faucet_buf)FAUCET_BUF_INIT;

	rc = parse_args(ctx, argc, argv, &a);
	if (rc == 0)
		rc = cli_context_config(ctx, &cfg);
	if (rc == 0)
		rc = resolve(ctx, &a, cfg, &o, &range);
	if (rc == 0 && faucet_backfill_plan_new(&plan, &range) != 0)
		rc = cli_fail(CLI_EXIT_USAGE, "backfill");
	if (rc == 0 && faucet_backfill_plan_is_large(plan))
		fprintf(stderr, "faucet: warning: backfill has %zu units (more than %d)\n",
			faucet_backfill_plan_count(plan), FAUCET_BACKFILL_WARN_UNITS);
	if (rc == 0)
		rc = cli_open_store(ctx, &s);
	if (rc == 0) {
		cb = (faucet_backfill_progress){&view, on_plan, on_planned, NULL, on_unit_end,
						on_message};
		o.progress = &cb;
		o.config_path = ctx->selected_config_path;
		o.state_url = ctx->selected_config_path ? NULL : ctx->selected_url;
		/* Units inherit the encryption by the variables' names only. */
		o.key_env = ctx->key_env;
		o.previous_key_env = ctx->key_env ? nonempty_getenv("FAUCET_PREVIOUS_KEY_ENV") : NULL;
		if (faucet_backfill_run(s, plan, &o, &res) != 0) {
			int code = faucet_error_last()->code;
			end_bar(&view);
			/* A bad input or an unsuitable store: nothing ran. */
			rc = cli_fail(code == FAUCET_ECONFIG || code == FAUCET_EUNSUPPORTED
					      ? CLI_EXIT_USAGE : CLI_EXIT_FAILED,
				      "backfill");
		} else {
			rc = report(&view, a.pipeline, plan, &res, a.dry_run);
			if (rc == 0)
				rc = res.exit_code;
		}
	}
	if (rc == -1) /* --help */
		rc = 0;
	faucet_buf_dispose(&view.units);
	faucet_strarray_dispose(&a.command);
	faucet_backfill_plan_free(plan);
	faucet_store_free(s);
	return rc;
}
