/*
 * state_reindex.c - `faucet state reindex`: make a Redis store's namespace
 * index agree with its keys again.
 *
 * A Redis store opened with index=true lists its namespace from a sorted
 * set that its own writes keep in the same MULTI/EXEC as the entry.  Keys
 * written by anything else (the original faucet, redis-cli, a store opened
 * without index=true) are missing from it; doctor says so.  This command
 * compares the index with a SCAN and settles each difference with a small
 * Lua script that looks at the key and changes the index in one step, so
 * it is safe to run while pipelines write.  It changes no bookmark, so it
 * is not recorded as a run.
 */
#include <stdio.h>

#include "cli.h"
#include "jsonw.h"

int cli_state_reindex(cli_context *ctx, int argc, char **argv)
{
	size_t added = 0, removed = 0;
	const char *arg;
	faucet_store *s;
	cli_args it;
	int id, rc;

	cli_args_init(&it, ctx, "state reindex", argc, argv);
	while ((id = cli_args_next(&it, NULL, &arg)) != CLI_ARG_END) {
		if (id == CLI_ARG_ERROR)
			return CLI_EXIT_USAGE;
		if (id == CLI_ARG_HELP)
			return cli_print_command_help("state reindex");
		return cli_usage_error("state reindex", "unexpected argument '%s'", arg);
	}
	rc = cli_open_store_existing(ctx, &s);
	if (rc != 0)
		return rc;
	rc = faucet_store_reindex(s, &added, &removed);
	faucet_store_free(s);
	if (rc == FAUCET_EUNSUPPORTED)
		return cli_fail(CLI_EXIT_USAGE, "state reindex of %s", ctx->store_label);
	if (rc != 0)
		return cli_fail(CLI_EXIT_FAILED, "state reindex of %s stopped", ctx->store_label);
	if (ctx->json) {
		faucet_buf b = FAUCET_BUF_INIT;

		(void)faucet__buf_putc(&b, '{');
		cli_jw_member(&b, "added", 1);
		(void)faucet__buf_printf(&b, "%zu", added);
		cli_jw_member(&b, "removed", 0);
		(void)faucet__buf_printf(&b, "%zu", removed);
		(void)faucet__buf_putc(&b, '}');
		return cli_jw_print(&b) != 0 ? CLI_EXIT_FAILED : 0;
	}
	printf("index of %s rebuilt: %zu key(s) added, %zu stale member(s) removed\n",
	       ctx->store_label, added, removed);
	return 0;
}
