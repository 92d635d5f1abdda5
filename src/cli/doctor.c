/*
 * doctor.c - `faucet doctor`: run the selected store's probes and show them.
 *
 * The probes come from the backend (faucet_store_check); a store without
 * its own check reports one skipped probe.  Reasons and hints are printed
 * as the library wrote them - they are written to be safe to show (no
 * passwords, no key material).  Any failed probe makes the exit code 1;
 * a warning (expired leases) does not.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"
#include "cli.h"
#include "jsonw.h"

static const char *status_name(faucet_probe_status st)
{
	switch (st) {
	case FAUCET_PROBE_PASS: return "pass";
	case FAUCET_PROBE_FAIL: return "fail";
	case FAUCET_PROBE_WARN: return "warn";
	default: return "skip";
	}
}

static const char *status_color(faucet_probe_status st)
{
	switch (st) {
	case FAUCET_PROBE_PASS: return "\033[32m";
	case FAUCET_PROBE_FAIL: return "\033[31m";
	case FAUCET_PROBE_WARN: return "\033[35m";
	default: return "\033[33m";
	}
}

/* Text that may echo input (a path, a URL), as shown: with any value that
 * came from the config's ${env:...} put back as its reference, like every
 * error line. */
static char *shown(const cli_context *ctx, const char *text)
{
	return faucet_config_scrub(ctx->config, text);
}

/* ... and on a terminal, its control characters escaped. */
static void print_escaped(const cli_context *ctx, const char *text)
{
	faucet_buf b = FAUCET_BUF_INIT;
	char *safe = shown(ctx, text);

	if (safe != NULL)
		cli_escape(&b, safe);
	fputs(safe == NULL || b.failed || b.ptr == NULL ? "?" : b.ptr, stdout);
	faucet__buf_dispose(&b);
	free(safe);
}

static void json_shown(faucet_buf *b, const cli_context *ctx, const char *text)
{
	char *safe;

	if (text == NULL) {
		(void)faucet__buf_puts(b, "null");
		return;
	}
	safe = shown(ctx, text);
	if (safe == NULL)
		b->failed = 1;
	else
		faucet__json_string(b, safe);
	free(safe);
}

static int print_json(cli_context *ctx, faucet_store *s, const faucet_check_report *r)
{
	faucet_buf b = FAUCET_BUF_INIT;
	size_t n = faucet_check_report_count(r);

	(void)faucet__buf_putc(&b, '{');
	cli_jw_member(&b, "store", 1);
	json_shown(&b, ctx, ctx->store_label);
	cli_jw_member(&b, "backend", 0);
	faucet__json_string(&b, faucet_store_backend_name(s));
	cli_jw_member(&b, "ok", 0);
	(void)faucet__buf_puts(&b, faucet_check_report_failed_count(r) == 0 ? "true" : "false");
	cli_jw_member(&b, "probes", 0);
	(void)faucet__buf_putc(&b, '[');
	for (size_t i = 0; i < n; i++) {
		const faucet_probe *p = faucet_check_report_probe(r, i);

		(void)faucet__buf_puts(&b, i ? ",{" : "{");
		cli_jw_member(&b, "name", 1);
		faucet__json_string(&b, p->name);
		cli_jw_member(&b, "status", 0);
		faucet__json_string(&b, status_name(p->status));
		cli_jw_member(&b, "reason", 0);
		json_shown(&b, ctx, p->reason);
		cli_jw_member(&b, "elapsed_ms", 0);
		(void)faucet__buf_printf(&b, "%llu", (unsigned long long)p->elapsed_ms);
		cli_jw_member(&b, "hint", 0);
		json_shown(&b, ctx, p->hint);
		(void)faucet__buf_putc(&b, '}');
	}
	(void)faucet__buf_puts(&b, "]}");
	return cli_jw_print(&b) == 0 ? 0 : CLI_EXIT_FAILED;
}

static void print_text(cli_context *ctx, faucet_store *s, const faucet_check_report *r)
{
	size_t n = faucet_check_report_count(r), width = 4;

	fputs("store: ", stdout);
	print_escaped(ctx, ctx->store_label);
	printf(" (%s)\n", faucet_store_backend_name(s));
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(faucet_check_report_probe(r, i)->name);
		if (len > width)
			width = len;
	}
	for (size_t i = 0; i < n; i++) {
		const faucet_probe *p = faucet_check_report_probe(r, i);
		char label[5];

		/* "PASS", "FAIL", "SKIP", "WARN": the JSON name in capitals. */
		for (size_t c = 0; c < 4; c++)
			label[c] = (char)(status_name(p->status)[c] - 'a' + 'A');
		label[4] = '\0';
		printf("%s%s%s  %-*s  %6llu ms", ctx->color ? status_color(p->status) : "", label,
		       ctx->color ? "\033[0m" : "", (int)width, p->name,
		       (unsigned long long)p->elapsed_ms);
		if (p->reason != NULL) {
			fputs("  ", stdout);
			print_escaped(ctx, p->reason);
		}
		putchar('\n');
		if (p->hint != NULL) {
			fputs("      hint: ", stdout);
			print_escaped(ctx, p->hint);
			putchar('\n');
		}
	}
}

/* What the backend's probes left of --timeout for the lease probe (at
 * least 1 ms: 0 would mean no limit). */
static uint64_t remaining_ms(uint64_t timeout_ms, uint64_t start_ms)
{
	uint64_t used = faucet__now_ms() - start_ms;
	return used < timeout_ms ? timeout_ms - used : 1;
}

int cli_doctor_main(cli_context *ctx, int argc, char **argv)
{
	enum { OPT_TIMEOUT = 1, OPT_REPAIR };
	static const cli_option opts[] = {{"timeout", 0, 1, OPT_TIMEOUT},
					  {"repair", 0, 0, OPT_REPAIR},
					  {NULL, 0, 0, 0}};
	faucet_check_context cctx = {.version = FAUCET_CHECK_CONTEXT_VERSION, .timeout_ms = 10000};
	faucet_check_report *report = NULL;
	unsigned long long ms;
	uint64_t start_ms;
	faucet_store *s;
	const char *arg;
	cli_args it;
	int id, rc;

	cli_args_init(&it, ctx, "doctor", argc, argv);
	while ((id = cli_args_next(&it, opts, &arg)) != CLI_ARG_END) {
		if (id == CLI_ARG_ERROR)
			return CLI_EXIT_USAGE;
		if (id == CLI_ARG_HELP)
			return cli_print_command_help("doctor");
		if (id == OPT_REPAIR) {
			cctx.flags |= FAUCET_CHECK_REPAIR;
			continue;
		}
		if (id != OPT_TIMEOUT)
			return cli_usage_error("doctor", "unexpected argument '%s'", arg);
		rc = cli_duration_option("doctor", "--timeout", arg, 1, CLI_DAY_MS, &ms);
		if (rc != 0)
			return rc;
		cctx.timeout_ms = ms;
	}
	rc = cli_open_store_existing(ctx, &s);
	if (rc != 0)
		return rc;
	/* Leases and run documents look alike in every backend, so their
	 * probes are added here (a warning naming the expired leases,
	 * doc/design.md §5.3; a failure naming each run document that does
	 * not parse, which --repair sets aside). */
	start_ms = faucet__now_ms();
	if (faucet_store_check(s, &cctx, &report) != 0 ||
	    faucet_lease_probe(s, (int64_t)time(NULL), remaining_ms(cctx.timeout_ms, start_ms),
			       report) != 0 ||
	    faucet_run_documents_probe(s, (int64_t)time(NULL), cctx.flags,
				       remaining_ms(cctx.timeout_ms, start_ms), report) != 0) {
		rc = cli_fail(CLI_EXIT_FAILED, "cannot check %s", ctx->store_label);
		faucet_check_report_free(report);
		faucet_store_free(s);
		return rc;
	}
	if (ctx->json)
		rc = print_json(ctx, s, report);
	else
		print_text(ctx, s, report);
	if (rc == 0 && faucet_check_report_failed_count(report) > 0)
		rc = CLI_EXIT_FAILED;
	faucet_check_report_free(report);
	faucet_store_free(s);
	return rc;
}
