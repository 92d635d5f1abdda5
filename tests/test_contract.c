/*
 * test_contract.c - the store contract suite (tests/contract/) against every
 * backend.  A new backend gets the whole suite by adding one row below.
 *
 * The server-backed rows need scripts/test-servers.sh running (scripts/test.sh
 * starts it); an unset server URL fails the suite, it never skips it.
 * Arguments, if any, name the backends to run (e.g. `test_contract sqlite`).
 */
#include <stdio.h>
#include <string.h>

#include "testutil.h"
#include "contract/contract.h"

static const contract_backend backends[] = {
	/* name      URL template                                   processes exact-text atomic-batch
	 * locker */
	{"memory", "memory:", 0, 1, 1, NULL},
	{"file", "file:{tmp}/state", 1, 1, 0, &contract_file_locker},
	{"sqlite", "sqlite:{tmp}/state.db", 1, 1, 1, &contract_sqlite_locker},
	{"postgres", "${FAUCET_TEST_PG_URL}?table=contract_{uniq}", 1, 0, 1, NULL},
	{"redis", "${FAUCET_TEST_REDIS_URL}?namespace=contract_{uniq}", 1, 1, 1, NULL},
	/* Again with the namespace index kept and listed from. */
	{"redis", "${FAUCET_TEST_REDIS_URL}?namespace=contract_{uniq}&index=true", 1, 1, 1, NULL},
	/* Through a sentinel to its primary, every write WAITing for the
	 * replica (scripts/test-servers.sh's sentinel trio). */
	{"redis-sentinel",
	 "${FAUCET_TEST_REDIS_SENTINEL_URL}?namespace=contract_{uniq}&min_replicas=1", 1, 1, 1,
	 NULL},
	/* A 3-member cluster; batches are txns of at most 128 puts each. */
	{"etcd", "${FAUCET_TEST_ETCD_URL}_contract_{uniq}", 1, 1, 0, NULL},
};

static int wanted(const char *name, int argc, char **argv)
{
	if (argc < 2)
		return 1;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], name) == 0)
			return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int failures = 0;

	/* A name that is no row is a typo (tests/CMakeLists.txt groups the
	 * rows by name): it fails rather than running nothing. */
	for (int a = 1; a < argc; a++) {
		int known = 0;

		for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
			known |= strcmp(backends[i].name, argv[a]) == 0;
		if (!known) {
			fprintf(stderr, "test_contract: no backend row named '%s'\n", argv[a]);
			return 2;
		}
	}

	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++) {
		if (wanted(backends[i].name, argc, argv)) {
			failures += contract_run(&backends[i]);
			failures += contract_runs_run(&backends[i]);
			failures += contract_iter_run(&backends[i]);
		}
	}
	return failures != 0;
}
