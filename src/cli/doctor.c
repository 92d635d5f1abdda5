/*
 * doctor.c - `faucet doctor`: run the selected store's probes and show them.
 *
 * The probes come from the backend (faucet_store_check); a store without
 * its own check reports one skipped probe.  Reasons and hints are printed
 * as the library wrote them - they are written to be safe to show (no
 * passwords, no key material).  Any failed probe makes the exit code 1.
 */
#include <string.h>

#include "cli.h"
#include "jsonw.h"

static const char doctor_help[] =
	"usage: faucet doctor [--timeout DURATION] [--repair] [OPTIONS]\n"
	"\n"
	"Run the state store's health probes (reachability, a sentinel write, read\n"
	"and delete that leaves nothing behind; for a file store also every value\n"
	"file opened with the key, symlinks and orphaned temp files) and print each\n"
	"with its status, time and hint.  --timeout bounds the whole check: 500ms,\n"
	"10s (default), 2m, 1h.  --repair removes the temp files that no live\n"
	"writer holds.  Exit 1 when any probe fails (a warning does not).\n";

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

static int print_json(cli_context *ctx, faucet_store *s, const faucet_check_report *r)
{
	faucet_buf b = FAUCET_BUF_INIT;
	size_t n = faucet_check_report_count(r);

	(void)faucet_buf_putc(&b, '{');
	jw_member(&b, "store", 1);
	jw_string(&b, ctx->store_label);
	jw_member(&b, "backend", 0);
	jw_string(&b, faucet_store_backend_name(s));
	jw_member(&b, "ok", 0);
	(void)faucet_buf_puts(&b, faucet_check_report_failed_count(r) == 0 ? "true" : "false");
	jw_member(&b, "probes", 0);
	(void)faucet_buf_putc(&b, '[');
	for (size_t i = 0; i < n; i++) {
		const faucet_probe *p = faucet_check_report_probe(r, i);

		(void)faucet_buf_puts(&b, i ? ",{" : "{");
		jw_member(&b, "name", 1);
		jw_string(&b, p->name);
		jw_member(&b, "status", 0);
		jw_string(&b, status_name(p->status));
		jw_member(&b, "reason", 0);
		jw_string_or_null(&b, p->reason);
		jw_member(&b, "elapsed_ms", 0);
		(void)faucet_buf_printf(&b, "%llu", (unsigned long long)p->elapsed_ms);
		jw_member(&b, "hint", 0);
		jw_string_or_null(&b, p->hint);
		(void)faucet_buf_putc(&b, '}');
	}
	(void)faucet_buf_puts(&b, "]}");
	return jw_print(&b) == 0 ? 0 : CLI_EXIT_FAILED;
}

static void print_text(cli_context *ctx, faucet_store *s, const faucet_check_report *r)
{
	size_t n = faucet_check_report_count(r), width = 4;

	printf("store: %s (%s)\n", ctx->store_label, faucet_store_backend_name(s));
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
		if (p->reason != NULL)
			printf("  %s", p->reason);
		putchar('\n');
		if (p->hint != NULL)
			printf("      hint: %s\n", p->hint);
	}
}

int cli_doctor_main(cli_context *ctx, int argc, char **argv)
{
	enum { OPT_TIMEOUT = 1, OPT_REPAIR };
	static const cli_option opts[] = {{"timeout", 0, 1, OPT_TIMEOUT},
					  {"repair", 0, 0, OPT_REPAIR},
					  {NULL, 0, 0, 0}};
	faucet_check_context cctx = {.timeout_ms = 10000};
	faucet_check_report *report = NULL;
	unsigned long long ms;
	faucet_store *s;
	const char *arg;
	cli_args it;
	int id, rc;

	cli_args_init(&it, ctx, "doctor", argc, argv);
	while ((id = cli_args_next(&it, opts, &arg)) != CLI_ARG_END) {
		if (id == CLI_ARG_ERROR)
			return CLI_EXIT_USAGE;
		if (id == CLI_ARG_HELP)
			return cli_print_help(doctor_help);
		if (id == OPT_REPAIR) {
			cctx.flags |= FAUCET_CHECK_REPAIR;
			continue;
		}
		if (id != OPT_TIMEOUT)
			return cli_usage_error("doctor", "unexpected argument '%s'", arg);
		if (cli_parse_duration_ms(arg, &ms) != 0)
			return cli_usage_error("doctor",
					       "--timeout '%s' is not a duration (e.g. 500ms, 10s, 2m)",
					       arg);
		cctx.timeout_ms = ms;
	}
	rc = cli_open_store(ctx, &s);
	if (rc != 0)
		return rc;
	if (faucet_store_check(s, &cctx, &report) != 0) {
		rc = cli_fail(CLI_EXIT_FAILED, "cannot check %s", ctx->store_label);
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
