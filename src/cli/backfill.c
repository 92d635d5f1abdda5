/*
 * backfill.c - `faucet backfill`: re-run a pipeline over a past range,
 * unit by unit, with durable progress (doc/design.md §6).
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
#include <sys/ioctl.h>
#include <unistd.h>

#include "util.h"
#include "cli.h"
#include "jsonw.h"
#include "backfill_status.h"

typedef struct {
	const char *pipeline, *from, *to, *window, *timezone, *row, *metrics_file;
	const char *lease_ttl, *concurrency, *hash, *tenant;
	int dry_run, resume, restart;
	int status;              /* `backfill status` */
	int command_from_argv;   /* the command came after --, not from the YAML */
	faucet_strarray command; /* the command after --, copied */
} bf_args;

/*
 * What the operator sees while units run.  On a terminal (stderr) one
 * status line is drawn and redrawn in place; every other line - a unit's
 * end, a notice, a unit's own output - first erases it and then draws it
 * again below, so no stale copy is ever left in the scrollback.  Anywhere
 * else there is no status line, only plain lines.
 */
typedef struct {
	cli_context *ctx;
	const faucet_backfill_plan *plan;
	int tty;          /* stderr is a terminal: draw the status line */
	int color;        /* ... and NO_COLOR is unset, TERM is not dumb */
	int line_drawn;   /* the status line is on the screen */
	size_t total, done, failed, running, elsewhere;
	size_t ended_here;       /* units that ended in this run, for the ETA */
	uint64_t start_ms;
	unsigned char *started;  /* per plan unit: started by this run */
	faucet_buf units;        /* --json dry run: the units array's members */
	size_t nunits;
	faucet_buf failed_json;  /* --json: the failed windows' objects */
	faucet_buf failed_text;  /* the first FAILED_SHOWN failed windows, one a line */
	size_t nfailed;
} bf_view;

#define FAILED_SHOWN 10 /* failed windows listed in the final summary */

/* ---- arguments ----------------------------------------------------------- */

static int parse_args(cli_context *ctx, int argc, char **argv, bf_args *a)
{
	enum { O_PIPELINE = 1, O_FROM, O_TO, O_WINDOW, O_TZ, O_CONC, O_ROW, O_DRY, O_RESUME,
	       O_RESTART, O_TTL, O_METRICS, O_HASH, O_TENANT };
	static const cli_option opts[] = {
		{"pipeline", 0, 1, O_PIPELINE}, {"from", 0, 1, O_FROM},
		{"to", 0, 1, O_TO},             {"window", 0, 1, O_WINDOW},
		{"timezone", 0, 1, O_TZ},       {"concurrency", 0, 1, O_CONC},
		{"row", 0, 1, O_ROW},           {"dry-run", 0, 0, O_DRY},
		{"resume", 0, 0, O_RESUME},     {"restart", 0, 0, O_RESTART},
		{"lease-ttl", 0, 1, O_TTL},     {"metrics-file", 0, 1, O_METRICS},
		{"hash", 0, 1, O_HASH},         CLI_TENANT_OPTION(O_TENANT),
		{NULL, 0, 0, 0}};
	const char **slot[] = {NULL, &a->pipeline, &a->from, &a->to, &a->window, &a->timezone,
			       &a->concurrency, &a->row};
	cli_args it;
	const char *v;
	int id, seen_option = 0;

	cli_args_init(&it, ctx, "backfill", argc, argv);
	while ((id = cli_args_next(&it, opts, &v)) != CLI_ARG_END) {
		if (id == CLI_ARG_ERROR)
			return CLI_EXIT_USAGE;
		if (id == CLI_ARG_HELP)
			return cli_print_command_help(a->status ? "backfill status" : "backfill") == 0
				       ? -1 : CLI_EXIT_FAILED;
		if (id == CLI_ARG_POSITIONAL) {
			if (!it.positional_only && !a->status && !seen_option &&
			    strcmp(v, "status") == 0) {
				a->status = 1;
				it.command = "backfill status";
				continue;
			}
			if (!it.positional_only) {
				static const char *const subs[] = {"status"};
				if (!a->status && faucet__suggest(v, subs, 1) != NULL)
					return cli_usage_error(it.command, "unexpected argument '%s' "
							       "(did you mean 'status'?)", v);
				return cli_usage_error(it.command,
						       "unexpected argument '%s' (put the command after --)", v);
			}
			if (faucet__strarray_append(&a->command, v) != 0)
				return cli_fail(CLI_EXIT_FAILED, "backfill");
			a->command_from_argv = 1;
			continue;
		}
		seen_option = 1;
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
		else if (id == O_HASH)
			a->hash = v;
		else if (id == O_TENANT) {
			int rc = cli_tenant_check(it.command, v, &a->tenant);

			if (rc != 0)
				return rc;
			/* A runner's pipeline name has no "::", so it never writes a
			 * tenant's marker ({tenant}::{pipeline}::__backfill__::{hash}). */
			if (!a->status)
				return cli_error(CLI_EXIT_USAGE, "backfill: --tenant %s: a backfill runs "
						 "for a pipeline, not a tenant's pipeline (--tenant "
						 "belongs to 'faucet backfill status')", a->tenant);
		}
	}
	if (a->hash != NULL && !a->status)
		return cli_usage_error("backfill", "--hash belongs to 'faucet backfill status'");
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

static size_t unit_index(const bf_view *v, const faucet_backfill_unit *u)
{
	return (size_t)(u - faucet_backfill_plan_unit(v->plan, 0));
}

static size_t pending_count(const bf_view *v)
{
	size_t settled = v->done + v->failed + v->running + v->elsewhere;
	return v->total > settled ? v->total - settled : 0;
}

static void put_duration(faucet_buf *b, uint64_t seconds)
{
	if (seconds >= 3600)
		(void)faucet__buf_printf(b, "%lluh%02llum", (unsigned long long)(seconds / 3600),
				     (unsigned long long)(seconds / 60 % 60));
	else if (seconds >= 60)
		(void)faucet__buf_printf(b, "%llum%02llus", (unsigned long long)(seconds / 60),
				     (unsigned long long)(seconds % 60));
	else
		(void)faucet__buf_printf(b, "%llus", (unsigned long long)seconds);
}

/* Erase the status line (cursor to column 0, clear to the end of line). */
static void erase_status(bf_view *v)
{
	if (v->line_drawn) {
		fputs("\r\033[K", stderr);
		v->line_drawn = 0;
	}
}

/* The terminal's width in columns (stderr), 80 when it does not say. */
static size_t stderr_columns(void)
{
	struct winsize ws;

	if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	return 80;
}

/* The status line's text, with colours or without. */
static void status_text(bf_view *v, faucet_buf *b, int color)
{
	const int width = 10;
	size_t settled = v->done + v->failed + v->elsewhere;
	int filled = v->total ? (int)((double)settled / (double)v->total * width) : width;
	uint64_t elapsed_ms = faucet__now_ms() - v->start_ms;
	size_t left = v->total > settled ? v->total - settled : 0;

	(void)faucet__buf_putc(b, '[');
	for (int i = 0; i < width; i++)
		(void)faucet__buf_putc(b, i < filled ? '#' : ' ');
	(void)faucet__buf_printf(b, "] %sdone %zu%s  %sfailed %zu%s  running %zu  pending %zu",
			     color ? "\033[32m" : "", v->done,
			     color ? "\033[0m" : "", color && v->failed ? "\033[31m" : "",
			     v->failed, color && v->failed ? "\033[0m" : "", v->running,
			     pending_count(v));
	if (v->elsewhere)
		(void)faucet__buf_printf(b, "  by others %zu", v->elsewhere);
	(void)faucet__buf_puts(b, "  elapsed ");
	put_duration(b, elapsed_ms / 1000);
	(void)faucet__buf_puts(b, "  ETA ");
	if (v->ended_here > 0 && left > 0)
		put_duration(b, (uint64_t)((double)elapsed_ms / (double)v->ended_here *
					   (double)left / 1000.0 + 0.5));
	else
		(void)faucet__buf_puts(b, left ? "--" : "0s");
}

/* Draw the status line: a bar, the counts, elapsed time and an ETA from the
 * units that ended in this run.  No newline: the next draw replaces it.  It
 * must never wrap - erasing would then clear only its last row - so on a
 * narrow terminal it is cut (and drawn without colours, whose escape
 * sequences take no columns). */
static void draw_status(bf_view *v)
{
	faucet_buf plain = FAUCET_BUF_INIT, colored = FAUCET_BUF_INIT;
	size_t cols = stderr_columns();

	if (!v->tty)
		return;
	status_text(v, &plain, 0);
	if (v->color)
		status_text(v, &colored, 1);
	if (!plain.failed && plain.ptr != NULL && !colored.failed) {
		fputs("\r\033[K", stderr);
		if (plain.len < cols && colored.ptr != NULL)
			fputs(colored.ptr, stderr);
		else
			fprintf(stderr, "%.*s", (int)(plain.len < cols ? plain.len : cols - 1), plain.ptr);
		fflush(stderr);
		v->line_drawn = 1;
	}
	faucet__buf_dispose(&plain);
	faucet__buf_dispose(&colored);
}

/* Print one line on stderr (or stdout) with the status line out of the
 * way, then draw it again. */
static void say_line(bf_view *v, FILE *to, const char *text)
{
	erase_status(v);
	if (to == stdout) {
		fputs(text, stdout);
		putc('\n', stdout);
		if (v->tty)
			fflush(stdout);
	} else {
		fflush(stdout);
		fputs(text, stderr);
		putc('\n', stderr);
	}
	draw_status(v);
}

/* A unit's window in the backfill's zone, as an RFC 3339 interval. */
static void put_window(faucet_buf *b, const faucet_backfill_unit *u)
{
	(void)faucet__buf_printf(b, "%s/%s", u->start, u->end);
}

static void on_plan(void *ctx, size_t total, size_t skipped, size_t to_run)
{
	bf_view *v = ctx;
	char line[160];

	v->total = total;
	v->done = skipped;
	v->start_ms = faucet__now_ms();
	(void)snprintf(line, sizeof(line), "backfill: %zu unit(s), %zu already done, %zu to run",
		       total, skipped, to_run);
	say_line(v, stderr, line);
}

static void on_unit_start(void *ctx, const faucet_backfill_unit *u)
{
	bf_view *v = ctx;

	v->started[unit_index(v, u)] = 1;
	v->running++;
	draw_status(v);
}

/* Remember a failed window for the summary (text: the first few; JSON: all). */
static void note_failure(bf_view *v, const faucet_backfill_unit *u, const char *error)
{
	if (v->nfailed < FAILED_SHOWN) {
		(void)faucet__buf_puts(&v->failed_text, "  ");
		put_window(&v->failed_text, u);
		(void)faucet__buf_puts(&v->failed_text, "  ");
		cli_escape(&v->failed_text, error ? error : "");
		(void)faucet__buf_putc(&v->failed_text, '\n');
	}
	if (v->ctx->json) {
		(void)faucet__buf_puts(&v->failed_json, v->nfailed ? ",{" : "{");
		cli_jw_member(&v->failed_json, "unit", 1);
		faucet__json_string(&v->failed_json, u->id);
		cli_jw_member(&v->failed_json, "start", 0);
		faucet__json_string(&v->failed_json, u->start);
		cli_jw_member(&v->failed_json, "end", 0);
		faucet__json_string(&v->failed_json, u->end);
		cli_jw_member(&v->failed_json, "error", 0);
		faucet__json_string(&v->failed_json, error);
		(void)faucet__buf_putc(&v->failed_json, '}');
	}
	v->nfailed++;
}

static void on_unit_end(void *ctx, const faucet_backfill_unit *u, faucet_backfill_status st,
			const char *error, size_t finished, size_t total)
{
	bf_view *v = ctx;
	size_t i = unit_index(v, u);
	faucet_buf line = FAUCET_BUF_INIT;
	int ours = v->started[i];

	if (ours) {
		v->started[i] = 0;
		v->running--;
		v->ended_here++;
	} else {
		v->elsewhere++; /* settled by another runner */
	}
	if (st == FAUCET_BACKFILL_DONE)
		v->done++;
	else if (st == FAUCET_BACKFILL_FAILED)
		v->failed++;
	if (st == FAUCET_BACKFILL_FAILED)
		note_failure(v, u, error);
	/* On a terminal the status line tells of units done; failures and
	 * units left pending get a line of their own everywhere.  A unit
	 * another runner finished has had its line from the runner. */
	if ((v->tty && st == FAUCET_BACKFILL_DONE) || !ours) {
		draw_status(v);
		return;
	}
	(void)faucet__buf_puts(&line, "window ");
	put_window(&line, u);
	if (st == FAUCET_BACKFILL_DONE) {
		(void)faucet__buf_puts(&line, " done");
	} else if (st == FAUCET_BACKFILL_FAILED) {
		(void)faucet__buf_puts(&line, " failed: ");
		cli_escape(&line, error ? error : "");
	} else {
		(void)faucet__buf_puts(&line, " left pending (interrupted)");
	}
	(void)faucet__buf_printf(&line, " (unit %s, %zu/%zu)", u->id, finished, total);
	say_line(v, stderr, line.failed || !line.ptr ? "backfill: out of memory" : line.ptr);
	faucet__buf_dispose(&line);
}

static void on_message(void *ctx, const char *text)
{
	bf_view *v = ctx;
	faucet_buf line = FAUCET_BUF_INIT;

	(void)faucet__buf_puts(&line, "backfill: ");
	cli_escape(&line, text);
	say_line(v, stderr, line.failed || !line.ptr ? "backfill: out of memory" : line.ptr);
	faucet__buf_dispose(&line);
}

/* The clock moves on while units run: redraw the elapsed time and ETA. */
static void on_tick(void *ctx)
{
	draw_status(ctx);
}

/* A line of a unit's own output, prefixed with its window.  Its stdout goes
 * to ours, unless ours carries the --json document. */
static void on_output(void *ctx, const faucet_backfill_unit *u, int is_stderr, const char *text)
{
	bf_view *v = ctx;
	faucet_buf line = FAUCET_BUF_INIT;

	(void)faucet__buf_putc(&line, '[');
	put_window(&line, u);
	(void)faucet__buf_puts(&line, "] ");
	(void)faucet__buf_puts(&line, text);
	if (!line.failed && line.ptr != NULL)
		say_line(v, is_stderr || v->ctx->json ? stderr : stdout, line.ptr);
	faucet__buf_dispose(&line);
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
	(void)faucet__buf_puts(&v->units, v->nunits++ ? ",{" : "{");
	cli_jw_member(&v->units, "unit", 1);
	faucet__json_string(&v->units, u->id);
	cli_jw_member(&v->units, "start", 0);
	faucet__json_string(&v->units, u->start);
	cli_jw_member(&v->units, "end", 0);
	faucet__json_string(&v->units, u->end);
	cli_jw_member(&v->units, "status", 0);
	faucet__json_string(&v->units, status_name(st));
	(void)faucet__buf_putc(&v->units, '}');
}

/* ---- the resume command ---------------------------------------------------- */

/* Append `arg` quoted for a POSIX shell when it needs it. */
static void put_shell_word(faucet_buf *b, const char *arg)
{
	const char *p;
	int plain = *arg != '\0';

	for (p = arg; *p && plain; p++)
		plain = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
			       "_./:=@%+,-", *p) != NULL;
	(void)faucet__buf_putc(b, ' ');
	if (plain) {
		(void)faucet__buf_puts(b, arg);
		return;
	}
	(void)faucet__buf_putc(b, '\'');
	for (p = arg; *p; p++) {
		if (*p == '\'')
			(void)faucet__buf_puts(b, "'\\''");
		else
			(void)faucet__buf_putc(b, *p);
	}
	(void)faucet__buf_putc(b, '\'');
}

static void put_option(faucet_buf *b, const char *name, const char *value)
{
	if (value == NULL)
		return;
	put_shell_word(b, name);
	put_shell_word(b, value);
}

/*
 * The command that resumes this backfill: the same store, pipeline, range
 * and command, with --resume.  The range is given as the plan renders it
 * (exact instants in the zone), so it names the same marker whatever the
 * original arguments looked like.  A store chosen through FAUCET_CONFIG or
 * FAUCET_STATE is left to the environment, and a --state URL is shown
 * redacted: a password is never printed, even here (the command then needs
 * the password put back, or the URL in FAUCET_STATE).
 */
static char *resume_command(const cli_context *ctx, const bf_args *a, const faucet_backfill_plan *p)
{
	faucet_buf b = FAUCET_BUF_INIT;

	(void)faucet__buf_puts(&b, "faucet backfill");
	/* Both when both were given: --state picks the store, and the YAML
	 * may still hold the command and the defaults. */
	if (ctx->state_url != NULL) {
		char *shown = faucet_url_redact(ctx->state_url);
		put_option(&b, "--state", shown ? shown : "URL");
		free(shown);
	}
	put_option(&b, "-c", ctx->config_arg);
	put_option(&b, "--encryption-key-env", ctx->key_env);
	put_option(&b, "--pipeline", a->pipeline);
	put_option(&b, "--from", faucet_backfill_plan_from(p));
	put_option(&b, "--to", faucet_backfill_plan_to(p));
	put_option(&b, "--window", a->window);
	put_option(&b, "--timezone", faucet_backfill_plan_timezone(p));
	put_option(&b, "--row", a->row);
	put_option(&b, "--concurrency", a->concurrency);
	put_option(&b, "--lease-ttl", a->lease_ttl);
	put_option(&b, "--metrics-file", a->metrics_file);
	(void)faucet__buf_puts(&b, " --resume");
	if (a->command_from_argv) {
		(void)faucet__buf_puts(&b, " --");
		for (size_t i = 0; i < a->command.count && a->command.strings[i] != NULL; i++)
			put_shell_word(&b, a->command.strings[i]);
	}
	return faucet__buf_detach(&b);
}

/* ---- the report ---------------------------------------------------------- */

static const char *outcome_name(const faucet_backfill_result *r)
{
	if (r->signal)
		return "interrupted";
	return r->failed ? "units_failed" : "ok";
}

static int report(bf_view *v, const bf_args *a, const faucet_backfill_plan *p,
		  const faucet_backfill_result *r)
{
	faucet_buf b = FAUCET_BUF_INIT;
	char *resume = NULL;
	int unfinished = r->failed > 0 || r->pending > 0;

	erase_status(v);
	if (!a->dry_run && unfinished && (resume = resume_command(v->ctx, a, p)) == NULL)
		return cli_error(CLI_EXIT_FAILED, "out of memory");
	if (!v->ctx->json) {
		if (!a->dry_run) {
			printf("backfill %s %s: %zu unit(s): %zu done, %zu failed, %zu skipped, "
			       "%zu by another runner, %zu pending%s\n",
			       a->pipeline, faucet_backfill_plan_hash(p), r->total, r->done,
			       r->failed, r->skipped, r->by_others, r->pending,
			       r->signal ? " (interrupted)" : "");
			if (v->nfailed > 0) {
				printf("failed windows (%s zone):\n%s", faucet_backfill_plan_timezone(p),
				       v->failed_text.ptr ? v->failed_text.ptr : "");
				if (v->nfailed > FAILED_SHOWN)
					printf("  ... and %zu more (faucet backfill status shows them all)\n",
					       v->nfailed - FAILED_SHOWN);
			}
			if (resume != NULL)
				printf("to %s: %s\n", r->failed ? "retry the failed windows" : "continue",
				       resume);
		}
		free(resume);
		return 0;
	}
	(void)faucet__buf_putc(&b, '{');
	cli_jw_member(&b, "outcome", 1);
	faucet__json_string(&b, a->dry_run ? "ok" : outcome_name(r));
	cli_jw_member(&b, "exit", 0);
	(void)faucet__buf_printf(&b, "%d", r->exit_code);
	cli_jw_member(&b, "pipeline", 0);
	faucet__json_string(&b, a->pipeline);
	cli_jw_member(&b, "descriptor", 0);
	faucet__json_string(&b, faucet_backfill_plan_descriptor(p));
	cli_jw_member(&b, "range_hash", 0);
	faucet__json_string(&b, faucet_backfill_plan_hash(p));
	cli_jw_member(&b, "timezone", 0);
	faucet__json_string(&b, faucet_backfill_plan_timezone(p));
	cli_jw_member(&b, "dry_run", 0);
	(void)faucet__buf_puts(&b, a->dry_run ? "true" : "false");
	cli_jw_member(&b, "total", 0);
	(void)faucet__buf_printf(&b, "%zu", r->total);
	cli_jw_member(&b, "skipped", 0);
	(void)faucet__buf_printf(&b, "%zu", r->skipped);
	cli_jw_member(&b, "done", 0);
	(void)faucet__buf_printf(&b, "%zu", r->done);
	cli_jw_member(&b, "failed", 0);
	(void)faucet__buf_printf(&b, "%zu", r->failed);
	cli_jw_member(&b, "by_others", 0);
	(void)faucet__buf_printf(&b, "%zu", r->by_others);
	cli_jw_member(&b, "pending", 0);
	(void)faucet__buf_printf(&b, "%zu", r->pending);
	cli_jw_member(&b, "signal", 0);
	(void)faucet__buf_printf(&b, "%d", r->signal);
	cli_jw_member(&b, "failed_windows", 0);
	(void)faucet__buf_putc(&b, '[');
	(void)faucet__buf_put(&b, v->failed_json.ptr ? v->failed_json.ptr : "", v->failed_json.len);
	(void)faucet__buf_putc(&b, ']');
	cli_jw_member(&b, "resume_command", 0);
	faucet__json_string(&b, resume);
	if (a->dry_run) {
		cli_jw_member(&b, "units", 0);
		(void)faucet__buf_putc(&b, '[');
		(void)faucet__buf_put(&b, v->units.ptr ? v->units.ptr : "", v->units.len);
		(void)faucet__buf_putc(&b, ']');
	}
	(void)faucet__buf_putc(&b, '}');
	free(resume);
	return cli_jw_print(&b) == 0 ? 0 : CLI_EXIT_FAILED;
}

/* ---- the command ---------------------------------------------------------- */

/* Merge flags over the YAML's defaults and check every one of them. */
static int resolve(cli_context *ctx, bf_args *a, const faucet_config *cfg,
		   faucet_backfill_run_options *o, faucet_backfill_range *range)
{
	unsigned long long ttl_ms;

	if (a->pipeline == NULL && cfg != NULL)
		a->pipeline = faucet_config_name(cfg);
	if (a->pipeline == NULL)
		return cli_usage_error("backfill", "which pipeline? give -c FILE or --pipeline NAME");
	if (a->from == NULL || a->to == NULL)
		return cli_usage_error("backfill", "--from and --to are required");
	if (a->resume && a->restart)
		return cli_usage_error("backfill", "--resume and --restart cannot be used together");
	if (cfg != NULL) {
		const faucet_config_backfill *d = faucet_config_backfill_defaults(cfg);

		if (a->window == NULL)
			a->window = d->window;
		if (a->timezone == NULL)
			a->timezone = d->timezone;
		if (a->concurrency == NULL && d->concurrency > 0)
			o->concurrency = d->concurrency;
		/* The config's command, copied so that it ends in NULL below. */
		for (size_t i = 0, n = a->command.count == 0 ? d->command_count : 0; i < n; i++) {
			if (faucet__strarray_append(&a->command, d->command[i]) != 0)
				return cli_fail(CLI_EXIT_FAILED, "backfill");
		}
	}
	if (a->command.count > 0) {
		/* argv must end in NULL: push one past the end. */
		if (faucet__strarray_append(&a->command, "") != 0)
			return cli_fail(CLI_EXIT_FAILED, "backfill");
		free(a->command.strings[--a->command.count]);
		a->command.strings[a->command.count] = NULL;
		o->argv = (const char *const *)a->command.strings;
	}
	if (a->concurrency != NULL && parse_count(a->concurrency, &o->concurrency) != 0)
		return cli_usage_error("backfill", "--concurrency must be a whole number from 1 to "
				       "1000, not '%s'", a->concurrency);
	if (a->lease_ttl != NULL) {
		int rc = cli_duration_option("backfill", "--lease-ttl", a->lease_ttl, 3000,
					     CLI_LEASE_MAX_MS, &ttl_ms);
		if (rc != 0)
			return rc;
		o->lease_ttl_ms = ttl_ms;
	}
	if (!a->dry_run && o->argv == NULL)
		return cli_usage_error("backfill", "no command: give one after -- or set "
				       "backfill.command in the config");
	o->pipeline = a->pipeline;
	o->mode = a->resume ? FAUCET_BACKFILL_RESUME
			    : a->restart ? FAUCET_BACKFILL_RESTART : FAUCET_BACKFILL_FRESH;
	o->dry_run = a->dry_run;
	range->from = a->from;
	range->to = a->to;
	range->window = a->window;
	range->timezone = a->timezone;
	range->row = a->row;
	(void)ctx;
	return 0;
}

/* `backfill status`: the options a run takes and status does not. */
static int status_main(cli_context *ctx, bf_args *a)
{
	const faucet_config *cfg = NULL;
	cli_backfill_status_args sa;
	int rc;

	if (a->dry_run || a->resume || a->restart || a->concurrency || a->lease_ttl ||
	    a->metrics_file || a->command.count > 0)
		return cli_usage_error("backfill status", "status takes no run options "
				       "(--dry-run, --resume, --restart, --concurrency, --lease-ttl, "
				       "--metrics-file, a command)");
	rc = cli_context_config(ctx, &cfg);
	if (rc != 0)
		return rc;
	memset(&sa, 0, sizeof(sa));
	sa.pipeline = a->pipeline ? a->pipeline : cfg ? faucet_config_name(cfg) : NULL;
	sa.hash = a->hash;
	sa.tenant = a->tenant;
	sa.range.from = a->from;
	sa.range.to = a->to;
	sa.range.window = a->window		? a->window
			  : cfg			? faucet_config_backfill_defaults(cfg)->window
						: NULL;
	sa.range.timezone = a->timezone		? a->timezone
			    : cfg		? faucet_config_backfill_defaults(cfg)->timezone
						: NULL;
	sa.range.row = a->row;
	return cli_backfill_status(ctx, &sa);
}

static void view_init(bf_view *view, cli_context *ctx)
{
	const char *no_color = getenv("NO_COLOR"), *term = getenv("TERM");

	memset(view, 0, sizeof(*view));
	view->ctx = ctx;
	view->tty = isatty(STDERR_FILENO);
	view->color = view->tty && (no_color == NULL || *no_color == '\0') &&
		      (term == NULL || strcmp(term, "dumb") != 0);
	view->units = (faucet_buf)FAUCET_BUF_INIT;
	view->failed_json = (faucet_buf)FAUCET_BUF_INIT;
	view->failed_text = (faucet_buf)FAUCET_BUF_INIT;
}

static void view_dispose(bf_view *view)
{
	faucet__buf_dispose(&view->units);
	faucet__buf_dispose(&view->failed_json);
	faucet__buf_dispose(&view->failed_text);
	free(view->started);
}

/* The range's units (a warning when there are many), and the view's
 * record of which of them this run started. */
static int make_plan(const faucet_backfill_range *range, bf_view *view,
		     faucet_backfill_plan **plan)
{
	if (faucet_backfill_plan_new(plan, range) != 0)
		return cli_plan_failed("backfill", range->timezone);
	if (faucet_backfill_plan_is_large(*plan))
		fprintf(stderr, "faucet: warning: backfill has %zu units (more than %d)\n",
			faucet_backfill_plan_count(*plan), FAUCET_BACKFILL_WARN_UNITS);
	if ((view->started = calloc(faucet_backfill_plan_count(*plan) + 1, 1)) == NULL)
		return cli_error(CLI_EXIT_FAILED, "out of memory");
	return 0;
}

/* A dry run only reads, and creates nothing: a store that does not
 * exist yet has nothing done, so the whole plan is what would run. */
static int open_backfill_store(cli_context *ctx, int dry_run, faucet_store **s)
{
	int absent = 0, rc;

	if (!dry_run)
		return cli_open_store(ctx, s);
	rc = cli_open_store_or_absent(ctx, s, &absent);
	if (rc == 0 && absent)
		fprintf(stderr, "faucet: note: there is no state store at %s yet (the "
			"backfill would create it): nothing is done, every unit would run\n",
			ctx->store_label);
	return rc;
}

/* Run the plan with the view as its progress display, and report: the
 * exit code is the report's failure, else the run's. */
static int run_backfill(cli_context *ctx, bf_view *view, const bf_args *a,
			const faucet_backfill_plan *plan, faucet_store *s,
			const faucet_backfill_run_options *opts, const faucet_backfill_host *host)
{
	faucet_backfill_progress cb = {view,        on_plan,    on_planned, on_unit_start,
				       on_unit_end, on_message, on_output,  on_tick};
	faucet_backfill_run_options o = *opts;
	faucet_backfill_result res;
	int rc;

	view->plan = plan;
	o.host = host;
	o.progress = &cb;
	o.config_path = ctx->selected_config_path;
	o.state_url = ctx->selected_config_path ? NULL : ctx->selected_url;
	/* Units inherit the encryption by the variables' names only. */
	o.key_env = ctx->key_env;
	o.previous_key_env = ctx->key_env ? cli_previous_key_env_list(ctx) : NULL;
	if (faucet_backfill_run(s, plan, &o, &res) != 0) {
		int code = faucet_error_last()->code;
		erase_status(view);
		/* A bad input or an unsuitable store: nothing ran. */
		return cli_fail(code == FAUCET_ECONFIG || code == FAUCET_EUNSUPPORTED
					? CLI_EXIT_USAGE : CLI_EXIT_FAILED,
				"backfill");
	}
	rc = report(view, a, plan, &res);
	return rc == 0 ? res.exit_code : rc;
}

int cli_backfill_main(cli_context *ctx, int argc, char **argv)
{
	bf_args a;
	bf_view view;
	faucet_backfill_run_options o;
	faucet_backfill_host host;
	faucet_backfill_range range;
	faucet_backfill_plan *plan = NULL;
	const faucet_config *cfg = NULL;
	faucet_store *s = NULL;
	int rc;

	memset(&a, 0, sizeof(a));
	memset(&o, 0, sizeof(o));
	o.version = FAUCET_BACKFILL_RUN_OPTIONS_VERSION;
	memset(&range, 0, sizeof(range));
	memset(&host, 0, sizeof(host));
	view_init(&view, ctx);
	/* With --json, a failure is reported as the run's summary object, so
	 * an error exit of 1 or 2 cannot be read as a count of failed units. */
	ctx->json_error_outcome = 1;

	rc = parse_args(ctx, argc, argv, &a);
	if (rc == 0 && a.status) {
		rc = status_main(ctx, &a);
		goto out;
	}
	if (rc == 0)
		rc = cli_context_config(ctx, &cfg);
	if (rc == 0)
		rc = resolve(ctx, &a, cfg, &o, &range);
	if (rc == 0)
		rc = make_plan(&range, &view, &plan);
	if (rc == 0)
		rc = open_backfill_store(ctx, a.dry_run, &s);
	/* The library's default host: Ctrl-C and SIGTERM stop the run, and
	 * --metrics-file is written.  The runner does neither on its own. */
	if (rc == 0 && faucet_backfill_default_host(&host, 1, a.metrics_file) != 0)
		rc = cli_fail(CLI_EXIT_FAILED, "backfill");
	if (rc == 0)
		rc = run_backfill(ctx, &view, &a, plan, s, &o, &host);
out:
	if (rc == -1) /* --help */
		rc = 0;
	view_dispose(&view);
	faucet_strarray_dispose(&a.command);
	faucet_backfill_default_host_dispose(&host);
	faucet_backfill_plan_free(plan);
	faucet_store_free(s);
	return rc;
}
