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
#include "reference.h"

/* The usage text is generated from the table of reference.c. */
static int print_usage(FILE *to)
{
	faucet_buf b = FAUCET_BUF_INIT;
	int rc;

	cli_reference_usage(&b);
	if (b.failed) {
		faucet__buf_dispose(&b);
		return cli_error(CLI_EXIT_FAILED, "out of memory");
	}
	if (to == stdout) {
		rc = cli_print_command_help("");
	} else {
		(void)fputs(b.ptr, to);
		rc = CLI_EXIT_USAGE;
	}
	faucet__buf_dispose(&b);
	return rc;
}

/* `faucet help`: the usage; the hidden `help --man` prints the man page
 * (doc/faucet.1 is its output) and `help --reference` the table, for the
 * tests. */
static int help_main(int argc, char **argv)
{
	faucet_buf b = FAUCET_BUF_INIT;

	if (argc < 2)
		return print_usage(stdout);
	if (argc > 2 || (strcmp(argv[1], "--man") != 0 && strcmp(argv[1], "--reference") != 0))
		return cli_usage_error("help", "unexpected argument '%s'", argv[argc > 2 ? 2 : 1]);
	if (strcmp(argv[1], "--man") == 0)
		cli_reference_man(&b);
	else
		cli_reference_dump(&b);
	if (b.failed) {
		faucet__buf_dispose(&b);
		return cli_error(CLI_EXIT_FAILED, "out of memory");
	}
	(void)fputs(b.ptr, stdout);
	faucet__buf_dispose(&b);
	return CLI_EXIT_OK;
}

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
	{"serve", serve_main},
	/* A new command: its row here, its reference row in reference.c. */
};

static int print_version(cli_context *ctx)
{
	if (ctx->json) {
		faucet_buf b = FAUCET_BUF_INIT;

		(void)faucet__buf_putc(&b, '{');
		cli_jw_member(&b, "version", 1);
		faucet__json_string(&b, faucet_version());
		(void)faucet__buf_putc(&b, '}');
		if (cli_jw_print(&b) != 0)
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
			return cli_print_command_help("version");
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
			return print_usage(stdout);
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
		return print_usage(stderr);
	}
	if (strcmp(arg, "help") == 0)
		return help_main(argc - (it.next - 1), argv + (it.next - 1));
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
		best = faucet__suggest(arg, names, n);
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
