/*
 * completion.c - `faucet completion bash|zsh|fish`: shell completion scripts,
 * generated from the command table (src/cli/reference_gen.c).
 *
 * Each script completes the commands, subcommands and flags, file names
 * where a flag takes a file, and - for `state get|put|delete|list` - the
 * keys of the store, which it asks `faucet state list --prefix=PREFIX` for, handing
 * on the --state / -c / key options already typed.  A key contains ':',
 * where bash splits words, so the bash script reads the line itself and
 * gives back only the part after the last ':' that bash will replace.
 */
#include <string.h>

#include "cli.h"
#include "reference.h"

int cli_completion_main(cli_context *ctx, int argc, char **argv)
{
	faucet_buf b = FAUCET_BUF_INIT;
	const char *shell = NULL, *arg;
	cli_args it;
	int id;

	cli_args_init(&it, ctx, "completion", argc, argv);
	while ((id = cli_args_next(&it, NULL, &arg)) != CLI_ARG_END) {
		if (id == CLI_ARG_ERROR)
			return CLI_EXIT_USAGE;
		if (id == CLI_ARG_HELP)
			return cli_print_command_help("completion");
		if (shell != NULL)
			return cli_usage_error("completion", "unexpected argument '%s'", arg);
		shell = arg;
	}
	if (shell == NULL)
		return cli_usage_error("completion", "which shell? bash, zsh or fish");
	if (cli_reference_completion(&b, shell) != 0)
		return cli_usage_error("completion", "unknown shell '%s' (bash, zsh or fish)", shell);
	if (b.failed) {
		faucet__buf_dispose(&b);
		return cli_error(CLI_EXIT_FAILED, "out of memory");
	}
	(void)fputs(b.ptr, stdout);
	faucet__buf_dispose(&b);
	return CLI_EXIT_OK;
}
