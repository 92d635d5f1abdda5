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

typedef struct {
	const char *name;
	const char *url_template;
	int cross_process; /* several processes may share one store (fork tests) */
	int exact_text;    /* values come back byte for byte, not only as equal values */
	int atomic_batch;  /* put_batch is all-or-nothing (the file store's is not: one
			    * file per key, so a crash can leave a prefix; seed 001) */
} contract_backend;

/* Run the whole suite against one backend; returns the number of failures. */
int contract_run(const contract_backend *b);

/* Run the invocation-run contract (runs.c) against one backend. */
int contract_runs_run(const contract_backend *b);

/* Expand a URL template (see above); NULL with a message on stderr when an
 * environment variable is missing.  *tmp receives the {tmp} directory or
 * NULL.  Caller frees both. */
char *contract_expand_url(const char *tmpl, char **tmp);

#endif
