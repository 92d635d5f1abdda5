/*
 * faucet/store.h - the state store: open a backend, read and write bookmarks.
 *
 * A faucet_store is a handle on one backend (memory, file, ...).  The calls
 * below validate every key in one place, then use the backend's own
 * implementation or, where the backend has none, the default behaviour:
 *
 *   compare-and-put  read, compare, write - not atomic across processes
 *   compare-and-delete  read, compare, delete - likewise
 *   put_batch        in order, by the backend's put_many (one durability barrier
 *                    for the file store) or one put after another - an error
 *                    leaves a prefix written
 *   list, scan       each from the other (or from list_page); with none,
 *                    FAUCET_EUNSUPPORTED "this state store cannot enumerate
 *                    its keys"
 *   iterator         faucet_store_list once, handed out key by key
 *   check            one skipped probe "no check implemented"
 *
 * The faucet_store_supports_* queries say which of these a backend does
 * better.  Every store is safe to use from several threads at once.
 *
 * Threads and processes: a handle may also be used on both sides of a
 * fork() (Python's multiprocessing forks by default).  The child never
 * talks over its parent's connections: PostgreSQL and Redis stores
 * reconnect in the child on its first call, dropping the inherited
 * connections without a word to the server (no Terminate, no QUIT, no
 * shutdown of the shared socket), so the parent's sessions carry on; a
 * SQLite store closes its inherited database connections in the child and
 * opens its own, as SQLite requires; the file store opens its files per
 * call and draws a fresh temp-name token in the child; a memory store is
 * the child's own copy.  Freeing the handle in the child releases only the
 * child's side.  A fork handler (pthread_atfork) does the bookkeeping, so a
 * call costs no getpid(); a child made without fork handlers (_Fork, a raw
 * clone) must not use a handle opened before it.  Fork while no other
 * thread is inside a call on the handle: a connection another thread was
 * using is forgotten by the child, and a file-store key lock it held stays
 * held until the child exits or execs.
 */
#ifndef FAUCET_STORE_H
#define FAUCET_STORE_H

#include <stddef.h>
#include <stdio.h>
#include "common.h"
#include "value.h"
#include "check.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct faucet_store faucet_store;

/* One key/value pair of a batch.  The value is borrowed. */
typedef struct {
	const char *key;
	const faucet_value *value;
} faucet_entry;

/* At-rest encryption of the file store (doc/design.md §4).  Strings are
 * borrowed for the duration of the open call and copied; the store wipes
 * its copies when it is freed. */
typedef struct {
	const char *key;                  /* the write key; NULL = no encryption */
	const char *const *previous_keys; /* tried in order after `key` on reads */
	size_t previous_count;
} faucet_encryption_options;

/*
 * Options structs that may grow (this one, faucet_store_config,
 * faucet_import_options, faucet_check_context, faucet_backfill_run_options,
 * faucet_run_options, faucet_undo_options, faucet_proc_options) start with
 * `version`: initialise one with its _INIT macro (or, from a binding that
 * cannot expand a macro, its faucet_*_init function: every one but
 * faucet_store_config has one), then set what you need.  A struct only ever grows at its end; the library reads an older
 * version's struct with defaults for the fields it lacks, and refuses
 * version 0 (not initialised) or a version newer than itself
 * (FAUCET_EINVALID).  faucet_undo_result, which the library fills, carries
 * a version the caller sets in the same way.
 */

/* Options of the file store. */
#define FAUCET_FILE_OPTIONS_VERSION 1
#define FAUCET_FILE_OPTIONS_INIT {.version = FAUCET_FILE_OPTIONS_VERSION}
typedef struct {
	unsigned version;                            /* FAUCET_FILE_OPTIONS_VERSION */
	const faucet_encryption_options *encryption; /* NULL = plaintext */
} faucet_file_options;

/* Fill `o` as its _INIT macro does, for options version `version` (writing no
 * more than that version's struct); FAUCET_EINVALID for a version unknown here. */
FAUCET_EXTERN int faucet_file_options_init(faucet_file_options *o, unsigned int version);

/* An empty in-process store. */
FAUCET_EXTERN int faucet_store_open_memory(faucet_store **out);

/* A store of one JSON file per key under `root` (created on first write,
 * 0700).  `opts` may be NULL.  Errors: FAUCET_ECONFIG for an empty path or an
 * empty encryption key. */
FAUCET_EXTERN int faucet_store_open_file(faucet_store **out, const char *root,
					 const faucet_file_options *opts);

/* Where a store lives and how to open it: what a pipeline YAML's
 * `state: {type, config}` block or a store URL says.  Initialise with
 * FAUCET_STORE_CONFIG_INIT, then set `type` and the fields that type uses;
 * strings are borrowed for the duration of the open call. */
#define FAUCET_STORE_CONFIG_VERSION 2
#define FAUCET_STORE_CONFIG_INIT {.version = FAUCET_STORE_CONFIG_VERSION}
typedef struct {
	unsigned version;           /* FAUCET_STORE_CONFIG_VERSION */
	const char *type;           /* "memory", "file", "sqlite", "postgres", "redis", "redis-sentinel", "etcd": faucet_store_backend_info() lists them */
	const char *path;           /* file, sqlite: the directory / database file */
	const char *url;            /* postgres, redis, redis-sentinel: the server URL, without faucet's options */
	const char *table;          /* postgres: NULL = "faucet_state"; [A-Za-z0-9_]{1,63} */
	int ensure_table;           /* postgres: 0 = default (create if missing), 1 = create, -1 = never */
	int max_connections;        /* postgres, redis: pool size, 0 = default (5) */
	const char *namespace_name; /* redis: NULL = "faucet"; non-empty, no ':' */
	const faucet_encryption_options *encryption; /* file: NULL = plaintext */
	int redis_index; /* redis: 1 = keep and use the namespace index ("{ns}.index"); 0 = SCAN */
	/* version 2 */
	int redis_min_replicas;    /* redis-sentinel: 0 = no WAIT; N = a write counts once N replicas have it */
	int redis_wait_timeout_ms; /* redis-sentinel: WAIT's timeout, 0 = default (1000); never unbounded */
} faucet_store_config;

/* Open the store a config describes.  An unknown type is FAUCET_ECONFIG
 * listing the types this build knows. */
FAUCET_EXTERN int faucet_store_open_config(faucet_store **out, const faucet_store_config *cfg);

/* Open a store by URL: "memory:", "file:PATH", "sqlite:PATH",
 * "postgres://...?table=t&ensure_table=true&max_connections=5",
 * "redis://host:port/0?namespace=ns&index=true",
 * "redis-sentinel://h1:p1,h2:p2/MASTER/0?namespace=ns&min_replicas=1&wait_timeout=1s".
 * faucet's own options are taken off
 * the query before the URL reaches the driver.  An unknown scheme is
 * FAUCET_ECONFIG listing the known ones. */
FAUCET_EXTERN int faucet_store_open_url(faucet_store **out, const char *url);

/* One field of a backend's `state: config` block, as the store reference
 * and a config reader need it.  The library owns it; it only grows at its end. */
typedef struct {
	const char *name;          /* the YAML field, e.g. "table" */
	const char *kind;          /* "string", "bool", "number", "duration", "list" or "mapping" */
	const char *placeholder;   /* its value in a URL synopsis ("T"), or NULL: not a URL option */
	const char *default_value; /* as shown to people, or NULL (none, or required) */
	const char *doc;           /* a short note for the reference, or NULL */
	int secret;                /* it may hold a password or key: never shown */
} faucet_backend_field;

/* A backend this build can open: its config `type`, URL schemes, config
 * fields and a line of documentation.  Owned by the library; only grows at its end. */
typedef struct {
	const char *type;                   /* config `type` */
	const char *const *schemes;         /* URL prefixes ("postgres://"), NULL-terminated */
	const faucet_backend_field *fields; /* ends with a NULL name */
	const char *url_form;               /* the URL without options: "sqlite:PATH" */
	const char *doc;                    /* one sentence, or NULL */
	int local_path; /* 1: a file or directory at `path` (opening it creates it) */
} faucet_backend_info;

/* The i-th backend this build knows (i = 0, 1, ...); NULL past the last. */
FAUCET_EXTERN const faucet_backend_info *faucet_store_backend_info(size_t i);

/* The URL with any password replaced by "***", for messages.  Caller frees. */
FAUCET_EXTERN char *faucet_url_redact(const char *url);

/* Close the store and free everything it holds.  NULL is ignored. */
FAUCET_EXTERN void faucet_store_free(faucet_store *s);

/* The backend's name ("memory", "file", ...). */
FAUCET_EXTERN const char *faucet_store_backend_name(const faucet_store *s);

/* The value under `key`: *out is a new reference, or NULL when there is no
 * entry (that is not an error). */
FAUCET_EXTERN int faucet_store_get(faucet_store *s, const char *key, faucet_value **out);

/* The values of `count` keys: out[i] is a new reference, or NULL when
 * keys[i] has no entry.  Where the backend can, they are read as one
 * snapshot, far faster than one get each (SQLite: one transaction).  On
 * error every out[i] is NULL. */
FAUCET_EXTERN int faucet_store_get_many(faucet_store *s, const char *const *keys, size_t count,
					faucet_value **out);

/* Store `value` under `key`, replacing any entry; durable when it returns. */
FAUCET_EXTERN int faucet_store_put(faucet_store *s, const char *key, const faucet_value *value);

/* Remove the entry under `key`; an absent key is not an error. */
FAUCET_EXTERN int faucet_store_delete(faucet_store *s, const char *key);

/* Every key starting with `prefix` ("" = all), in byte order (strcmp). */
FAUCET_EXTERN int faucet_store_list(faucet_store *s, const char *prefix, faucet_strarray *out);

/* Called by faucet_store_scan for each key; `key` is borrowed until it
 * returns.  Return 0 to go on, anything else to stop the scan.  A callback
 * passed beside a `ctx` argument takes it last (doc/design.md §1). */
typedef int (*faucet_key_fn)(const char *key, void *ctx);

/* The keys of faucet_store_list, in the same order, handed to fn one at a
 * time without building a list (SQLite and PostgreSQL copy nothing).
 * Returns 0 after the last key, fn's value when fn stopped the scan (use a
 * positive one to tell it from the errors), or a FAUCET_E* error.  fn may
 * use the store; on SQLite the scan holds one pooled connection meanwhile. */
FAUCET_EXTERN int faucet_store_scan(faucet_store *s, const char *prefix, faucet_key_fn fn,
				    void *ctx);

/* A pull iterator over the keys of faucet_store_list: the same keys in the
 * same byte order, handed out one at a time, for a caller that cannot take
 * a callback (a binding's for loop).  Where the backend pages (list_page in
 * faucet/sys/store_backend.h: SQLite, PostgreSQL, etcd, Redis with
 * index=true) it reads FAUCET_STORE_ITER_PAGE keys at a time, each page
 * one query that starts after the last key handed out, so memory stays at
 * one page and no connection or lock is held between calls; elsewhere (the
 * file and memory stores, Redis without the index) the first call takes
 * faucet_store_list once and hands it out.  Either way every key comes
 * once, in strictly increasing order: a key written or deleted meanwhile
 * is seen when the listing has not passed it yet (paged) or not at all
 * (listed once), and never twice.  One thread uses an iterator at a time;
 * the store must outlive it. */
typedef struct faucet_store_iter faucet_store_iter;

/* Keys per page an iterator reads by default. */
#define FAUCET_STORE_ITER_PAGE 1000

/* A new iterator over the keys starting with `prefix` (NULL or "" = all);
 * nothing is read until the first faucet_store_iter_next.  `prefix` is
 * copied.  Caller frees *out with faucet_store_iter_free. */
FAUCET_EXTERN int faucet_store_iter_new(faucet_store *s, const char *prefix,
					faucet_store_iter **out);

/* Read `n` keys per page from the next page on (1 to 100000, else
 * FAUCET_EINVALID); a store that lists once ignores it. */
FAUCET_EXTERN int faucet_store_iter_set_page_size(faucet_store_iter *it, size_t n);

/* The next key: returns 1 with *key set (borrowed: valid until the next
 * call on `it` or its free), 0 after the last key (and on every call after
 * that), or a FAUCET_E* error with the last error set and *key NULL.  An
 * error leaves the iterator where it was, so calling again retries the
 * read (worth it when faucet_error_retryable says so). */
FAUCET_EXTERN int faucet_store_iter_next(faucet_store_iter *it, const char **key);

/* Free the iterator and its page; NULL is ignored.  Any time, also before
 * the end. */
FAUCET_EXTERN void faucet_store_iter_free(faucet_store_iter *it);

/* Called by faucet_store_scan_entries for each entry; key and value are
 * borrowed until it returns (take a reference to keep the value).  Return
 * 0 to go on, anything else to stop. */
typedef int (*faucet_entry_fn)(const char *key, const faucet_value *value, void *ctx);

/* Every entry whose key starts with `prefix`, keys in byte order, handed to
 * fn one at a time: what an export reads.  Where the backend streams (the
 * PostgreSQL store reads one ordered query through a cursor) nothing is
 * listed first and memory stays flat; elsewhere the keys are listed and
 * read a chunk at a time with faucet_store_get_many, and a key deleted
 * meanwhile is skipped.  Returns 0 after the last entry, fn's value when it
 * stopped the scan, or a FAUCET_E* error.  fn may read the store but should
 * not write under the prefix while the scan runs. */
FAUCET_EXTERN int faucet_store_scan_entries(faucet_store *s, const char *prefix, faucet_entry_fn fn,
					    void *ctx);

/* faucet_store_scan_entries without the run bookkeeping keys (doc/design.md
 * §8.9: __lease__, __status__, __rollback__ and its markers, see
 * faucet_run_is_bookkeeping_key): what an export reads.  A rollback marker
 * of a big import (a hundred megabytes) is never read. */
FAUCET_EXTERN int faucet_store_scan_data(faucet_store *s, const char *prefix, faucet_entry_fn fn,
					 void *ctx);

/* Store `value` only when the entry equals `expected` as a JSON value
 * (NULL = no entry).  *written says whether it was stored. */
FAUCET_EXTERN int faucet_store_compare_and_put(faucet_store *s, const char *key,
					       const faucet_value *expected,
					       const faucet_value *value, int *written);

/* Delete the entry only when it equals `expected` as a JSON value (which
 * must not be NULL).  *deleted says whether it was removed. */
FAUCET_EXTERN int faucet_store_compare_and_delete(faucet_store *s, const char *key,
						  const faucet_value *expected, int *deleted);

/* Store every entry.  All keys are validated before anything is written. */
FAUCET_EXTERN int faucet_store_put_batch(faucet_store *s, const faucet_entry *entries,
					 size_t count);

/* Run the backend's doctor probes; `ctx` may be NULL.  Caller frees *out. */
FAUCET_EXTERN int faucet_store_check(faucet_store *s, const faucet_check_context *ctx,
				     faucet_check_report **out);

FAUCET_EXTERN int faucet_store_supports_list(const faucet_store *s);
FAUCET_EXTERN int faucet_store_supports_compare_and_put(const faucet_store *s); /* atomic */
FAUCET_EXTERN int faucet_store_supports_compare_and_delete(const faucet_store *s); /* atomic */
FAUCET_EXTERN int faucet_store_supports_atomic_batch(const faucet_store *s);

/* Rewrite every value whose key starts with `prefix` ("" = all) with the
 * store's current settings - for a file store, re-seal it with the current
 * encryption key so previous keys can be retired.  Each value is rewritten
 * by compare-and-put against the value just read, so a concurrent writer is
 * never overwritten (its newer value is already written with the current
 * settings and is skipped); a crash part-way leaves every value readable and
 * a second run finishes the job.  *rewritten / *skipped (may be NULL) count
 * the outcomes.  Needs a store that can list its keys. */
FAUCET_EXTERN int faucet_store_rewrite_all(faucet_store *s, const char *prefix, size_t *rewritten,
					   size_t *skipped);

/* Rebuild a store's key index from its entries: a Redis store opened with
 * index=true (see README) keeps a sorted set of its namespace's keys that
 * only its own writes maintain; after writes by anyone else (the original
 * faucet, redis-cli) this makes it agree with a SCAN again, key by key and
 * atomically, so it is safe while others write.  *added / *removed (may be
 * NULL) count the members changed.  A store without an index is
 * FAUCET_EUNSUPPORTED. */
FAUCET_EXTERN int faucet_store_reindex(faucet_store *s, size_t *added, size_t *removed);

/* ---- watching for changes -------------------------------------------- */

/* What a watch reports to its callback. */
typedef enum {
	FAUCET_WATCH_TICK = 0,    /* nothing changed (key NULL): at least once a second */
	FAUCET_WATCH_READY = 1,   /* the watch is in place (key NULL): changes from here on */
	FAUCET_WATCH_ADDED = 2,   /* key was created */
	FAUCET_WATCH_CHANGED = 3, /* key was written again (maybe with the same value) */
	FAUCET_WATCH_REMOVED = 4  /* key was deleted (or its lease expired) */
} faucet_watch_event;

/* The callback of faucet_store_watch; key is borrowed for the call.  A
 * non-zero return stops the watch, which returns it. */
typedef int (*faucet_watch_fn)(faucet_watch_event what, const char *key, void *ctx);

/* Follow the changes of keys starting with `prefix` ("" = all) as the store
 * makes them (etcd: its watch), calling fn in the calling thread until fn
 * returns non-zero (that value is returned).  The stream ending otherwise
 * is an error (FAUCET_EUNAVAILABLE): what changed meanwhile was missed, so
 * a caller re-reads before watching again.  A store without a watch is
 * FAUCET_EUNSUPPORTED (poll it instead). */
FAUCET_EXTERN int faucet_store_watch(faucet_store *s, const char *prefix, faucet_watch_fn fn,
				     void *ctx);

/* ---- key migration ---------------------------------------------------- */

typedef enum {
	FAUCET_MIGRATION_CURRENT = 0, /* the current key already holds a value */
	FAUCET_MIGRATION_FRESH = 1,   /* no candidate holds a value: a first run */
	FAUCET_MIGRATION_MOVED = 2    /* a candidate's value now lives under `key` */
} faucet_migration_kind;

/* Move a value from the first of `candidates` that holds one to `key`, when
 * `key` holds nothing.  The value is claimed with compare-and-put against an
 * absent entry, so a concurrent writer of `key` is never overwritten; the old
 * key is then deleted best-effort.  Counted in
 * faucet_state_key_migrations_total{outcome="moved"|"raced"}.
 * *from_out (may be NULL) receives the moved-from key when MOVED; caller frees. */
FAUCET_EXTERN int faucet_migrate_state_key(faucet_store *s, const char *key,
					   const char *const *candidates, size_t count,
					   faucet_migration_kind *kind_out, char **from_out);

/* ---- export / import documents -------------------------------------- */

#define FAUCET_STATE_EXPORT_VERSION 1

/* A snapshot of one pipeline's namespace: version, pipeline, exported_at and
 * keys (sorted by key).  Opaque. */
typedef struct faucet_export faucet_export;

/* A new, empty version-1 document for `pipeline` (not yet validated). */
FAUCET_EXTERN int faucet_export_new(faucet_export **out, const char *pipeline);

/* Add or replace one key (takes a new reference on value). */
FAUCET_EXTERN int faucet_export_set(faucet_export *e, const char *key, faucet_value *value);

/* Set the informational exported_at text (RFC 3339); NULL clears it. */
FAUCET_EXTERN int faucet_export_set_exported_at(faucet_export *e, const char *when);

FAUCET_EXTERN const char *faucet_export_pipeline(const faucet_export *e);
FAUCET_EXTERN const char *faucet_export_exported_at(const faucet_export *e); /* may be NULL */
FAUCET_EXTERN size_t faucet_export_count(const faucet_export *e);
FAUCET_EXTERN const char *faucet_export_key_at(const faucet_export *e, size_t i);
FAUCET_EXTERN const faucet_value *faucet_export_value_at(const faucet_export *e, size_t i);

/* Every key valid and inside the pipeline's namespace, none of them run
 * bookkeeping (faucet_run_is_bookkeeping_key: only runs write those, and an
 * export never holds one); pipeline name valid.  FAUCET_EINVALID naming the
 * key otherwise, so an import of such a document writes nothing. */
FAUCET_EXTERN int faucet_export_validate(const faucet_export *e);

/* Parse and validate a document.  A version this build does not know is
 * refused rather than half-read.  Errors name the problem (FAUCET_EINVALID). */
FAUCET_EXTERN int faucet_export_parse(faucet_export **out, const char *text, size_t len);

/* The document as JSON text (compact, or indented when `pretty`).  Caller frees. */
FAUCET_EXTERN int faucet_export_to_json(const faucet_export *e, int pretty, char **out);

FAUCET_EXTERN void faucet_export_free(faucet_export *e);

/* Read every key of `pipeline`'s namespace ("{pipeline}::") into a document. */
FAUCET_EXTERN int faucet_export_namespace(faucet_store *s, const char *pipeline,
					  faucet_export **out);

/* What an import did - or, with dry_run, would do.  The report tells the
 * truth about the store after a failure too:
 *   written             every key whose value this import changed, in write
 *                       order: what landed before the failure, plus a key
 *                       whose write may have landed (durability_unknown)
 *   durability_unknown  the subset of written whose write returned
 *                       FAUCET_EUNKNOWN: the value may be (file store: is)
 *                       in place but is not known to be durable or applied
 *   deleted             stale keys removed (replace only)
 * An import of more than FAUCET_IMPORT_CHUNK keys is written in chunks of
 * that many, each one batch; `atomic` is set only when the whole import was
 * one all-or-nothing batch.
 * The caller sets `version` (FAUCET_IMPORT_REPORT_INIT or
 * faucet_import_report_init); the import fills the rest as far as that
 * version's struct goes, and faucet_import_report_dispose frees it.  Version
 * 0 or one newer than the library is FAUCET_EINVALID.  It grows at its end. */
#define FAUCET_IMPORT_REPORT_VERSION 1
typedef struct {
	unsigned version;                   /* FAUCET_IMPORT_REPORT_VERSION; kept by import and dispose */
	faucet_strarray written;            /* keys written, in write order */
	faucet_strarray durability_unknown; /* subset of written: outcome / durability unknown */
	faucet_strarray deleted;            /* stale keys removed (replace only) */
	int atomic;              /* the writes went through one all-or-nothing batch */
	int dry_run;             /* nothing was written: written/deleted say what would be */
	int error_code;          /* the first failure's FAUCET_E* code, 0 when none */
	char *error;             /* the first failure, or NULL; see written for what landed */
	char *pipeline;          /* the document's pipeline (faucet_import_file), else NULL */
} faucet_import_report;

#define FAUCET_IMPORT_REPORT_INIT {.version = FAUCET_IMPORT_REPORT_VERSION}

/* Make `r` an empty report of version `version`, as FAUCET_IMPORT_REPORT_INIT
 * does (writing no more than that version's struct); FAUCET_EINVALID for a
 * version unknown here. */
FAUCET_EXTERN int faucet_import_report_init(faucet_import_report *r, unsigned int version);

/* Keys per write of a chunked import (one put_batch call each). */
#define FAUCET_IMPORT_CHUNK 10000

/* How to import.  Initialise with FAUCET_IMPORT_OPTIONS_INIT (or
 * faucet_import_options_init), then set what you need. */
#define FAUCET_IMPORT_OPTIONS_VERSION 1
#define FAUCET_IMPORT_OPTIONS_INIT {.version = FAUCET_IMPORT_OPTIONS_VERSION}
typedef struct {
	unsigned version; /* FAUCET_IMPORT_OPTIONS_VERSION */
	int replace;     /* also delete the namespace's keys the document lacks */
	int allow_empty; /* with replace: accept a document without keys (else refused) */
	int dry_run;     /* report what would be written and deleted; write nothing */
} faucet_import_options;

/* Fill `o` as its _INIT macro does, for options version `version` (writing no
 * more than that version's struct); FAUCET_EINVALID for a version unknown here. */
FAUCET_EXTERN int faucet_import_options_init(faucet_import_options *o, unsigned int version);

/* Write the document into `s`.  With `replace`, keys of the namespace that
 * the document lacks are deleted afterwards.  A document that fails
 * validation, or a listing failure before anything is written, is an error
 * return; a failure while writing is reported in report->error (return 0).
 * Dispose the report with faucet_import_report_dispose(). */
FAUCET_EXTERN int faucet_import_namespace(faucet_store *s, const faucet_export *e, int replace,
					  faucet_import_report *report);

/* faucet_import_namespace with options (NULL = the defaults).  A replace with a
 * document without keys is refused (FAUCET_EINVALID, nothing written)
 * unless allow_empty: it would empty the namespace. */
FAUCET_EXTERN int faucet_import_namespace_ex(faucet_store *s, const faucet_export *e,
					     const faucet_import_options *opts,
					     faucet_import_report *report);

/* Import the document read from `in`, which must be seekable: it is read
 * twice, once to validate all of it (nothing is written from an invalid or
 * truncated document) and once to write it, FAUCET_IMPORT_CHUNK keys at a
 * time.  Memory stays bounded by the keys' names plus one chunk, whatever
 * the document's size.  Each value is checked on its own exactly as a put
 * checks it.  Errors and the report as faucet_import_namespace_ex; the
 * report also names the document's pipeline. */
FAUCET_EXTERN int faucet_import_file(faucet_store *s, FILE *in, const faucet_import_options *opts,
				     faucet_import_report *report);

/* Write the export document of `pipeline`'s namespace to `out` as the keys
 * are read (a chunk at a time), the same text faucet_export_to_json gives
 * for faucet_export_namespace's document.  `exported_at` may be NULL.
 * *count (may be NULL) receives the number of keys written.  A write error
 * on `out` is FAUCET_EIO; `out` is not flushed or closed. */
FAUCET_EXTERN int faucet_export_write(faucet_store *s, const char *pipeline,
				      const char *exported_at, int pretty, FILE *out,
				      size_t *count);

/* Export and import through the caller's functions instead of a FILE
 * (a socket, an upload, a binding's file object).  Each function takes the
 * ctx given beside it last, and returns a negative FAUCET_E* code to stop:
 * the call then returns that code (the message the function set, if any).
 *   write   send `len` bytes; 0 when all were taken
 *   read    put up to `cap` bytes into `buf`; the number put, 0 at the end
 *   rewind  start again at the document's first byte; 0 */
typedef int (*faucet_write_fn)(const char *data, size_t len, void *ctx);
typedef ptrdiff_t (*faucet_read_fn)(char *buf, size_t cap, void *ctx);
typedef int (*faucet_rewind_fn)(void *ctx);

/* faucet_export_write with the text handed to `write`, in pieces, in order.
 * *count (may be NULL) as faucet_export_write's, 0 when `write` failed. */
FAUCET_EXTERN int faucet_export_write_to(faucet_store *s, const char *pipeline,
					 const char *exported_at, int pretty, faucet_write_fn write,
					 void *ctx, size_t *count);

/* faucet_import_file with the document read through `read`; it is read
 * twice (validated whole, then written), `rewind` called between.  The
 * report as faucet_import_file's; a read failure while writing is its
 * error, with the function's code in error_code. */
FAUCET_EXTERN int faucet_import_read(faucet_store *s, faucet_read_fn read,
				     faucet_rewind_fn rewind, void *ctx,
				     const faucet_import_options *opts,
				     faucet_import_report *report);

FAUCET_EXTERN void faucet_import_report_dispose(faucet_import_report *r);

#ifdef __cplusplus
}
#endif

#endif
