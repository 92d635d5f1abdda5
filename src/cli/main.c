/*
 * main.c - the `faucet` command: global options, then one command.
 *
 * stdout gets one large, fully buffered stream so that listing or exporting
 * 100,000 keys costs one write per megabyte rather than one per line; errors
 * go unbuffered to stderr.  Every path ends in cli_finish(), which turns a
 * failed flush (a full disk behind a redirect) into exit code 1 instead of
 * a silently truncated listing.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "jsonw.h"

static const char usage[] =
	"usage: faucet [OPTIONS] COMMAND [ARGS]\n"
	"\n"
	"Inspect, move and repair the durable state of faucet pipelines.\n"
	"\n"
	"Commands:\n"
	"  state list|show|get|put|delete|export|import|copy|rekey|reindex\n"
	"                     read and write state keys (see 'faucet state --help')\n"
	"  doctor             run the state store's health probes\n"
	"  backfill           re-run a pipeline over a past range (see 'faucet backfill --help')\n"
	"  backfill status    what the backfills of a pipeline have done\n"
	"  completion bash|zsh|fish  print a shell completion script\n"
	"  version            print the version (also -V, --version)\n"
	"  run                run a command as one recorded, undoable run of an invocation\n"
	"  lock list|break    show the leases of runs and backfill units; remove a stuck one\n"
	"  serve              an HTTP API over the store (see 'faucet serve --help')\n"
	"\n"
	"Options (accepted before or after the command):\n"
	"  --state URL        the store (see below)\n"
	"  -c, --config FILE  a faucet pipeline YAML: its state: block and name:\n"
	"  --encryption-key-env VAR, --previous-key-env VAR  keys of an encrypted store\n"
	"  --json             print machine-readable JSON\n"
	"  -q, --quiet        no run ids, undo commands or progress on stderr; errors only\n"
	"  -h, --help         show help (also after any command)\n"
	"  -V, --version      print the version\n"
	"\n"
	"Exit codes: 0 success; 1 the operation failed; 2 bad usage, config, key,\n"
	"JSON or input file (nothing written); 3 a compare-and-put condition did not hold.\n";

typedef struct {
	const char *name;
	int (*main)(cli_context *ctx, int argc, char **argv);
} command;

static int version_main(cli_context *ctx, int argc, char **argv);

static const command commands[] = {
	{"state", cli_state_main},
	{"doctor", cli_doctor_main},
	{"backfill", cli_backfill_main},
	{"completion", cli_completion_main},
	{"version", version_main},
	{"run", cli_run_main},
	{"lock", cli_lock_main},
	{"serve", cli_serve_main},
};

static int print_version(cli_context *ctx)
{
	if (ctx->json) {
		faucet_buf b = FAUCET_BUF_INIT;

		(void)faucet_buf_putc(&b, '{');
		jw_member(&b, "version", 1);
		faucet__json_string(&b, faucet_version());
		(void)faucet_buf_putc(&b, '}');
		if (jw_print(&b) != 0)
			return CLI_EXIT_FAILED;
	} else {
		printf("faucet %s\n", faucet_version());
	}
	return CLI_EXIT_OK;
}

/* `faucet version`: the same as --version. */
static int version_main(cli_context *ctx, int argc, char **argv)
{
	const char *arg;
	cli_args it;
	int id;

	cli_args_init(&it, ctx, "version", argc, argv);
	while ((id = cli_args_next(&it, NULL, &arg)) != CLI_ARG_END) {
		if (id == CLI_ARG_ERROR)
			return CLI_EXIT_USAGE;
		if (id == CLI_ARG_HELP)
			return cli_print_help("usage: faucet version [--json]\n\nPrint the version.\n");
		return cli_usage_error("version", "unexpected argument '%s'", arg);
	}
	return print_version(ctx);
}

static int run(cli_context *ctx, int argc, char **argv)
{
	enum { OPT_VERSION = 1 };
	static const cli_option opts[] = {{"version", 'V', 0, OPT_VERSION}, {NULL, 0, 0, 0}};
	cli_args it;
	const char *arg;
	int id, version = 0;

	cli_args_init(&it, ctx, "", argc, argv);
	for (;;) {
		id = cli_args_next(&it, opts, &arg);
		if (id == CLI_ARG_ERROR)
			return CLI_EXIT_USAGE;
		if (id == CLI_ARG_HELP)
			return cli_print_help(usage);
		if (id == OPT_VERSION) {
			version = 1;
			continue;
		}
		break;
	}
	if (version)
		return print_version(ctx);
	if (id == CLI_ARG_END) {
		/* With --json a script gets its error object like any failure;
		 * a person gets the usage. */
		if (ctx->json)
			return cli_usage_error("", "no command given");
		fputs(usage, stderr);
		return CLI_EXIT_USAGE;
	}
	if (strcmp(arg, "help") == 0)
		return cli_print_help(usage);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (strcmp(commands[i].name, arg) == 0)
			return commands[i].main(ctx, argc - (it.next - 1), argv + (it.next - 1));
	}
	{
		const char *names[sizeof(commands) / sizeof(commands[0]) + 1];
		const char *best;
		size_t n = 0;

		for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
			names[n++] = commands[i].name;
		names[n++] = "help";
		best = cli_suggest(arg, names, n);
		if (best != NULL)
			return cli_usage_error("", "unknown command '%s' (did you mean '%s'?)", arg, best);
	}
	return cli_usage_error("", "unknown command '%s'", arg);
}

int main(int argc, char **argv)
{
	static char out_buffer[1 << 20];
	cli_context ctx;
	int rc;

	(void)setvbuf(stdout, out_buffer, _IOFBF, sizeof(out_buffer));
	cli_context_init(&ctx);
	rc = run(&ctx, argc, argv);
	rc = cli_finish(rc);
	cli_context_dispose(&ctx);
	return rc;
}
