/*
 * faucet_raw.c - a test tool: write a value into a store through the
 * library, past the command's rules.
 *
 *   faucet_raw put URL KEY JSON
 *
 * The command refuses to write run bookkeeping keys (doc/design.md §8.9: only
 * the run machinery writes them), so the CLI tests that need a stale lease
 * or a foreign document under such a key plant it with this tool.  It is
 * built for the tests only and never installed.
 */
#include <stdio.h>
#include <string.h>

#include <faucet/faucet.h>

int main(int argc, char **argv)
{
	faucet_store *s = NULL;
	faucet_value *v = NULL;
	int rc;

	if (argc != 5 || strcmp(argv[1], "put") != 0) {
		fprintf(stderr, "usage: faucet_raw put URL KEY JSON\n");
		return 2;
	}
	rc = faucet_store_open_url(&s, argv[2]);
	if (rc == 0)
		rc = faucet_value_parse(&v, argv[4], strlen(argv[4]));
	if (rc == 0)
		rc = faucet_store_put(s, argv[3], v);
	if (rc != 0)
		fprintf(stderr, "faucet_raw: %s\n", faucet_error_last()->message);
	faucet_value_free(v);
	faucet_store_free(s);
	return rc == 0 ? 0 : 1;
}
