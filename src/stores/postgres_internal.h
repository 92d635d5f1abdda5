/*
 * postgres_internal.h - what postgres.c (connections, point operations,
 * doctor) and postgres_batch.c (the bulk paths: COPY in and out, batches)
 * share.  Not installed.
 */
#ifndef FAUCET_POSTGRES_INTERNAL_H
#define FAUCET_POSTGRES_INTERNAL_H

#include <libpq-fe.h>
#include <pthread.h>
#include <stddef.h>

#include "internal.h"
#include "store/open_internal.h"
#include "stores/pool.h"

#define PG_UNIQUE_VIOLATION "23505" /* SQLSTATE unique_violation */

typedef struct {
	faucet_store_backend base;
	char *url;      /* handed to libpq */
	char *redacted; /* for messages */
	char *password; /* only to scrub it from libpq's messages; NULL if none */
	char *table;
	char quoted[68]; /* "table" */
	int ensure_table;
	faucet_pool *pool;
	pthread_mutex_t table_lock;
	int table_ready;
	int key_bytewise; /* the key column compares bytes: batches may COPY (op_batch) */
	int default_now;  /* updated_at DEFAULT now(): a COPY need not send it */
} pg_store;

/* The arguments of one pooled operation. */
typedef struct {
	const char *key;
	const faucet_value *value;
	const faucet_value *expected;
	faucet_value **out;
	const char *prefix;
	PGresult *rows; /* scan: the listed keys, visited after the connection is back */
	const faucet_entry *entries; /* put_batch, `count` of them */
	const faucet_store_guard *guards; /* compare_and_put_batch, `count` of them */
	int *written;
	const char *const *keys; /* get_many */
	size_t count;
	faucet_value **values;
	const char *then_key; /* put_guarded: the key put after the guard (key) */
	const faucet_value *then_value;
	faucet_entry_fn fn; /* scan_entries, scan_data */
	void *ctx;
	int data_only; /* scan_data */
} pg_args;

/* Set the last error: what failed, on which server and table, and why. */
int faucet__pg_fail(const pg_store *s, int code, const char *what, const char *why);
/* Check a result; on failure set the last error and free it. */
int faucet__pg_result_ok(const pg_store *s, PGconn *c, PGresult *res, ExecStatusType want,
			 const char *what);
/* The same for a write: a lost reply is FAUCET_EUNKNOWN, a request that
 * could not be sent FAUCET_EUNAVAILABLE. */
int faucet__pg_write_result_ok(const pg_store *s, PGconn *c, PGresult *res, ExecStatusType want,
			       const char *what);
/* SQL with every "{table}" replaced by the quoted table name. */
char *faucet__pg_statement_sql(const char *sql, const char *quoted);
PGresult *faucet__pg_run_prepared(PGconn *c, const char *name, int n, const char *const *params);
int faucet__pg_command_on(pg_store *s, PGconn *c, const char *name, int n,
			  const char *const *params, const char *what, int *affected);
/* A stored value that does not parse back: FAUCET_ERROR naming the key. */
int faucet__pg_bad_stored_value(const pg_store *s, const char *key);
/* JSONB's text without the spaces it puts after ':' and ','; in place. */
size_t faucet__pg_jsonb_squeeze(char *p, size_t len);
/* Parse a stored value (JSONB's text, len bytes) that libpq holds. */
int faucet__pg_parse_stored(const pg_store *s, const char *key, const char *text, size_t len,
			    faucet_value **out);

/* postgres_batch.c: every entry under a prefix by COPY ... TO STDOUT
 * (data_only leaves the run bookkeeping out), and a batch of writes. */
int faucet__pg_scan_entries_on(pg_store *s, PGconn *c, const char *prefix, int data_only,
			       faucet_entry_fn fn, void *ctx);
int faucet__pg_batch_on(pg_store *s, PGconn *c, pg_args *a);
/* postgres_batch.c: compare_and_put_batch (a->guards, a->count, a->written). */
int faucet__pg_cas_batch_on(pg_store *s, PGconn *c, pg_args *a);

#endif
