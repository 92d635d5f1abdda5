/*
 * state_rekey.c - `faucet state rekey`: re-seal every file of an encrypted
 * file store with the current key, so previous keys can be retired.
 *
 * The work is faucet_store_rewrite_all(): read each value (current key,
 * then each previous key), write it back sealed with the current key by
 * compare-and-put.  Every rewrite is one atomic rename, so an interrupted
 * rekey leaves each file readable with either key and a second run
 * finishes; only after a run that reports no failure is it safe to drop a
 * key from previous_keys.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "jsonw.h"

int cli_state_rekey(cli_context *ctx, int argc, char **argv)
{
	const char *prefix = NULL, *arg;
	size_t rewritten = 0, skipped = 0;
	faucet_store *s;
	cli_args it;
	int id, rc;

	cli_args_init(&it, ctx, "state rekey", argc, argv);
	while ((id = cli_args_next(&it, NULL, &arg)) != CLI_ARG_END) {
		if (id == CLI_ARG_ERROR)
			return CLI_EXIT_USAGE;
		if (id == CLI_ARG_HELP)
			return cli_print_command_help("state rekey");
		if (prefix != NULL)
			return cli_usage_error("state rekey", "unexpected argument '%s'", arg);
		prefix = arg;
	}
	rc = cli_open_store(ctx, &s);
	if (rc != 0)
		return rc;
	if (strcmp(faucet_store_backend_name(s), "file") != 0 || !cli_store_is_encrypted(ctx)) {
		faucet_store_free(s);
		return cli_fail(CLI_EXIT_USAGE,
				"state rekey needs an encrypted file store (state.config.encryption "
				"or --encryption-key-env); %s has no encryption key",
				ctx->store_label);
	}
	if (faucet_store_rewrite_all(s, prefix, &rewritten, &skipped) != 0)
		rc = cli_fail(CLI_EXIT_FAILED, "rekey of %s stopped after %zu file(s)",
			      ctx->store_label, rewritten);
	faucet_store_free(s);
	if (rc != 0)
		return rc;
	if (ctx->json) {
		faucet_buf b = FAUCET_BUF_INIT;

		(void)faucet__buf_putc(&b, '{');
		cli_jw_member(&b, "rewritten", 1);
		(void)faucet__buf_printf(&b, "%zu", rewritten);
		cli_jw_member(&b, "skipped", 0);
		(void)faucet__buf_printf(&b, "%zu", skipped);
		(void)faucet__buf_putc(&b, '}');
		return cli_jw_print(&b) != 0 ? CLI_EXIT_FAILED : 0;
	}
	printf("re-sealed %zu file%s with the current key (%zu changed meanwhile and were left "
	       "as written)\n",
	       rewritten, rewritten == 1 ? "" : "s", skipped);
	return 0;
}
