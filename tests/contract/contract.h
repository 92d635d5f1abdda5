/*
 * contract.h - the store contract suite: every behaviour of the store
 * interface, written once and run against every backend.
 *
 * A backend joins with one row: a name and a URL template.  The template
 * may hold {tmp} (a fresh private directory, removed afterwards), {uniq} (a
 * fresh identifier, so each test gets its own table / namespace on a shared
 * server) and ${VAR} (an environment variable; unset is a test failure,
 * never a skip).
 */
#ifndef FAUCET_CONTRACT_H
#define FAUCET_CONTRACT_H

#include <faucet/faucet.h>

/* Holds the write lock of one key of a store as another writer would (the
 * file store: the key's lock file; SQLite: an exclusive transaction), with
 * the library's wait for it shortened, so the suite can check that a writer
 * who cannot get the lock in time fails with FAUCET_EBUSY, a retryable
 * error, and changes nothing. */
typedef struct {
	/* Start holding the lock of `key` in the store at `url`; *token is
	 * what release needs.  Fails the test when it cannot. */
	void (*hold)(const char *url, const char *key, void **token);
	/* Stop holding it, and restore the library's wait. */
	void (*release)(void *token);
} contract_locker;

/* The lockers of the stores that have one (tests/contract/lockers.c). */
extern const contract_locker contract_file_locker;
extern const contract_locker contract_sqlite_locker;

typedef struct {
	const char *name;
	const char *url_template;
	int cross_process; /* several processes may share one store (fork tests) */
	int exact_text;    /* values come back byte for byte, not only as equal values */
	int atomic_batch;  /* put_batch is all-or-nothing (the file store's is not: one
			    * file per key, so a crash can leave a prefix; seed 001) */
	const contract_locker *locker; /* NULL: the suite cannot hold a lock of this store */
} contract_backend;

/* Run the whole suite against one backend; returns the number of failures. */
int contract_run(const contract_backend *b);

/* Run the invocation-run contract (runs.c) against one backend. */
int contract_runs_run(const contract_backend *b);

/* Run the key iterator's contract (iter.c) against one backend. */
int contract_iter_run(const contract_backend *b);

/* Fail the test unless iterators over `prefix` (default and small pages)
 * give exactly `want`, faucet_store_list's answer, in its order. */
void contract_assert_iter_matches(faucet_store *s, const char *prefix, const faucet_strarray *want,
				  const char *backend);

/* Expand a URL template (see above); NULL with a message on stderr when an
 * environment variable is missing.  *tmp receives the {tmp} directory or
 * NULL.  Caller frees both. */
char *contract_expand_url(const char *tmpl, char **tmp);

/* A fresh store of backend `b` for one test: its URL, its temp directory
 * (NULL for server stores) and the open store.  Returns 0, or -1 after
 * saying why on stderr (`suite` names the suite) with nothing left over. */
int contract_store_open(const contract_backend *b, const char *suite, char **url, char **tmp,
			faucet_store **store);

/* Undo contract_store_open: delete every key the test left (so a shared
 * server stays clean), free the store, remove the temp directory. */
void contract_store_close(char *url, char *tmp, faucet_store *store);

/* One test's store, as its cmocka state. */
typedef struct {
	char *url;
	char *tmp;
	faucet_store *store;
	void *lock_token; /* a lock the test holds (contract_locker), released by teardown */
} contract_fixture;

/* cmocka setup: *state = a new fixture holding a fresh store of `b`
 * (contract_store_open); -1 when it cannot be had. */
int contract_fixture_setup(void **state, const contract_backend *b, const char *suite);
/* cmocka teardown: the lock a failed test left released, the store closed
 * (contract_store_close), the fixture freed. */
int contract_fixture_teardown(void **state, const contract_backend *b);
/* The store of the fixture in *state (borrowed). */
faucet_store *contract_fixture_store(void **state);

#endif
