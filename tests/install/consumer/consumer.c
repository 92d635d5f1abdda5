/*
 * consumer.c - a program that uses an installed libfaucet the way an
 * embedder does: only <faucet/faucet.h>, found through pkg-config or the
 * CMake package.  It checks that the headers and the library it was linked
 * with agree on the version, then writes and reads a bookmark.
 */
#include <stdio.h>
#include <string.h>

#include <faucet/faucet.h>

static int fail(const char *what)
{
	fprintf(stderr, "consumer: %s: %s\n", what, faucet_error_last()->message);
	return 1;
}

int main(void)
{
	faucet_store_config cfg = FAUCET_STORE_CONFIG_INIT;
	faucet_value *in = NULL, *out = NULL;
	faucet_store *s = NULL;
	int rc = 1;

	if (strcmp(faucet_version(), FAUCET_VERSION_STRING) != 0 ||
	    faucet_version_number() != FAUCET_VERSION_NUMBER) {
		fprintf(stderr, "consumer: headers %s, library %s\n", FAUCET_VERSION_STRING,
			faucet_version());
		return 1;
	}
	cfg.type = "memory";
	if (faucet_store_open_config(&s, &cfg) != 0)
		return fail("open");
	if (faucet_value_parse(&in, "{\"cursor\":18446744073709551615}", 31) != 0)
		rc = fail("parse");
	else if (faucet_store_put(s, "orders::eu", in) != 0)
		rc = fail("put");
	else if (faucet_store_get(s, "orders::eu", &out) != 0 || out == NULL)
		rc = fail("get");
	else if (!faucet_value_equal(in, out))
		fprintf(stderr, "consumer: read back %s\n", faucet_value_json(out));
	else
		rc = 0;
	if (rc == 0)
		printf("consumer ok: libfaucet %s %s\n", faucet_version(), faucet_value_json(out));
	faucet_value_free(in);
	faucet_value_free(out);
	faucet_store_free(s);
	return rc;
}
