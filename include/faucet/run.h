/*
 * faucet/run.h - invocation runs: one run of a pipeline invocation under a
 * lease, every write it makes recorded so that the run can be undone.
 *
 * An invocation is {pipeline}::{row}.  Its bookkeeping keys (doc/design.md §8.1):
 *
 *   {p}::{r}::__lease__            {"holder", "expires_at", "run"}: the run lock
 *   {p}::{r}::__status__           {"version":1,"runs":[...]}: the last 50 runs
 *   {p}::{r}::__rollback__         {"version":1,"runs":[ids]}: the last 20 undoable runs
 *   {p}::{r}::__rollback__::{run}  {"version":1,"run","before":{},"after":{}}
 *
 * A pipeline-level run (CLI writes spanning several invocations) uses
 * {p}::__status__, {p}::__rollback__ and {p}::__rollback__::{run} and takes
 * no invocation lease.  An exclusive run (bulk writes, undo) holds the
 * pipeline lease {p}::__lease__, which excludes every leased run of the
 * pipeline (doc/design.md §8).
 *
 * Life of a run: faucet_run_begin() claims the lease (compare-and-put, like
 * a backfill unit lease) and records the run as "running"; each write
 * through faucet_run_put() and friends first checks that the run still holds
 * its lease (fencing: FAUCET_ELEASELOST otherwise, nothing written), then,
 * the first time the run touches a key, stores that key's before-image
 * durably in the run's rollback marker, with the value about to be written
 * as its after-image (a leased run and every handle joining it record the
 * after-image ahead of each write; a run nobody can join keeps it in memory
 * and records it at its end - never read back from the store), then writes.
 * faucet_run_end() records the outcome and releases the lease.  A run
 * freed without faucet_run_end() behaves like a process that died: the next
 * begin after its lease expired records it as "abandoned", and its marker
 * still undoes what it wrote.
 *
 * A run handle is used by one thread at a time (the store under it may be
 * shared).  Every option struct starts with a version field; initialise it
 * with its _INIT macro so that a later, larger struct is recognised.
 */
#ifndef FAUCET_RUN_H
#define FAUCET_RUN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "common.h"
#include "store.h"
#include "value.h"
#include "lease.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FAUCET_RUN_STATUS_MAX 50   /* entries kept in __status__ */
#define FAUCET_RUN_ROLLBACK_MAX 20 /* runs kept in __rollback__ (older markers deleted) */
#define FAUCET_RUN_DEFAULT_ROW "default"
#define FAUCET_RUN_DEFAULT_TTL_MS 60000
#define FAUCET_RUN_ID_LEN 27       /* YYYYMMDDTHHMMSS.mmmZ-xxxxxx */

typedef struct faucet_run faucet_run;

#define FAUCET_RUN_OPTIONS_VERSION 2
#define FAUCET_RUN_MAX_TTL_MS FAUCET_LEASE_MAX_TTL_MS /* longest lease TTL and wait */
#define FAUCET_RUN_WAIT_FOREVER UINT64_MAX                 /* wait_ms: no time limit */

typedef struct {
	unsigned version;        /* FAUCET_RUN_OPTIONS_VERSION */
	const char *row;         /* NULL = "default" */
	int pipeline_level;      /* a pipeline-level run: no row, no invocation lease */
	int no_lease;            /* record the run but take no invocation lease (CLI writes) */
	uint64_t lease_ttl_ms;   /* 0 = 60 s; 1000 to FAUCET_RUN_MAX_TTL_MS */
	uint64_t wait_ms;        /* wait this long for a live lease to go; 0 = fail at once;
				  * at most FAUCET_RUN_MAX_TTL_MS, or FAUCET_RUN_WAIT_FOREVER */
	const char *command;     /* "by.command" in the status entry (secrets redacted); NULL = "" */
	/* Version 2: hold the pipeline lease {p}::__lease__ for the whole run,
	 * excluding every leased run of the pipeline, every other exclusive
	 * run and every undo (bulk writes: import, copy).  FAUCET_EBUSY naming
	 * the holder when one is live (after waiting up to wait_ms). */
	int exclusive;
} faucet_run_options;

#define FAUCET_RUN_OPTIONS_INIT {FAUCET_RUN_OPTIONS_VERSION, NULL, 0, 0, 0, 0, NULL, 0}

/* Fill `o` as its _INIT macro does, for options version `version` (writing no
 * more than that version's struct); FAUCET_EINVALID for a version unknown here. */
FAUCET_EXTERN int faucet_run_options_init(faucet_run_options *o, unsigned int version);

/* Begin a run of `pipeline` (its invocation `opts->row`).  A live lease
 * held by another run is FAUCET_EBUSY, its message naming the holder, the
 * run and the expiry (after waiting up to opts->wait_ms for it to go).  A
 * bookkeeping key holding something that is not a faucet document is
 * FAUCET_ERROR naming it, and nothing is written.  `opts` may be NULL. */
FAUCET_EXTERN int faucet_run_begin(faucet_run **out, faucet_store *s, const char *pipeline,
				   const faucet_run_options *opts);

/* Join a run that another process began (FAUCET_RUN_ID): writes are
 * recorded in its marker and fenced by its lease; the run is neither ended
 * nor released by this handle.  FAUCET_ELEASELOST when the invocation's
 * lease is not (or no longer) held by `run_id`. */
FAUCET_EXTERN int faucet_run_join(faucet_run **out, faucet_store *s, const char *pipeline,
				  const char *row, const char *run_id);

/* Join the run this process was started in by `faucet run`, as every
 * writer inside one must (the command's writes, the Python package's
 * runs): the run FAUCET_RUN_ID names, of FAUCET_RUN_PIPELINE and
 * FAUCET_RUN_ROW (unset: "default").  `pipeline` / `row` NULL join it
 * whatever it is; given, they must be its pipeline / row.  0 with *out
 * joined; FAUCET_ENOTFOUND (nothing set) when FAUCET_RUN_ID is unset or
 * empty or names another pipeline's or row's run - begin a run of your
 * own; FAUCET_EINVALID when FAUCET_RUN_ID is set without
 * FAUCET_RUN_PIPELINE; otherwise as faucet_run_join. */
FAUCET_EXTERN int faucet_run_join_env(faucet_run **out, faucet_store *s, const char *pipeline,
				      const char *row);

/* The run id (YYYYMMDDTHHMMSS.mmmZ-{6 hex}), owned by the run. */
FAUCET_EXTERN const char *faucet_run_id(const faucet_run *r);
/* "{p}::{r}" or "{p}" (pipeline level), owned by the run. */
FAUCET_EXTERN const char *faucet_run_scope(const faucet_run *r);
/* The row, or NULL for a pipeline-level run. */
FAUCET_EXTERN const char *faucet_run_row(const faucet_run *r);

/* Writes inside the run: the same contracts as the faucet_store_ calls,
 * plus fencing and before-images (see the file comment).  Bookkeeping keys
 * cannot be written through a run (FAUCET_EINVALID). */
FAUCET_EXTERN int faucet_run_put(faucet_run *r, const char *key, const faucet_value *value);
FAUCET_EXTERN int faucet_run_delete(faucet_run *r, const char *key);
FAUCET_EXTERN int faucet_run_compare_and_put(faucet_run *r, const char *key,
					     const faucet_value *expected,
					     const faucet_value *value, int *written);
FAUCET_EXTERN int faucet_run_compare_and_delete(faucet_run *r, const char *key,
						const faucet_value *expected, int *deleted);
/* A batch of first writes is written only while each key holds what its
 * before-image was read as (else read again and retried), in slices of the
 * backend's compare-and-put batch (128 keys on etcd, 16,384 on the others),
 * each all or nothing; on an error the slices before it are written. */
FAUCET_EXTERN int faucet_run_put_batch(faucet_run *r, const faucet_entry *entries, size_t count);
/* Delete every key (borrowed), in order, recording all their before-images
 * in one marker write first (a per-key delete writes the marker per key).
 * On an error the keys before the failed one are deleted, the rest kept. */
FAUCET_EXTERN int faucet_run_delete_batch(faucet_run *r, const char *const *keys, size_t count);

/* Extend the lease to now + TTL.  FAUCET_ELEASELOST when it was taken over. */
FAUCET_EXTERN int faucet_run_renew(faucet_run *r);

/* How often faucet_run_renew() should be called: a third of the TTL, in ms. */
FAUCET_EXTERN uint64_t faucet_run_renew_interval_ms(const faucet_run *r);

/* The keys this handle has written so far (sorted); faucet_run_end() records
 * in the status those whose value actually changed.  A write that changed
 * nothing (a delete of an absent key, a put of the identical text) is not
 * recorded, nor written. */
FAUCET_EXTERN const faucet_strarray *faucet_run_keys(const faucet_run *r);

/* After faucet_run_end(): how many keys the run changed.  A run that took
 * no lease and changed nothing left no trace at all (no status entry, no
 * marker: there is nothing to undo). */
FAUCET_EXTERN size_t faucet_run_changed(const faucet_run *r);

typedef enum {
	FAUCET_RUN_OK = 0,
	FAUCET_RUN_FAILED = 1
} faucet_run_outcome;

/* End the run: after-images into the marker, the outcome into __status__
 * (`message` may be NULL; exit_status < 0 = none), the run into the
 * __rollback__ index when it changed anything (older markers beyond 20
 * deleted), then the lease released with compare-and-delete.
 * FAUCET_ELEASELOST when the lease was taken over (nothing recorded).
 * The run must still be freed. */
FAUCET_EXTERN int faucet_run_end(faucet_run *r, faucet_run_outcome outcome, int exit_status,
				 const char *message);

/* The run's last write: faucet_run_put(), then faucet_run_end() as ok (exit
 * status 0, no message).  For a run that took no lease and wrote nothing
 * yet, a store that can (the file store) writes the end in the put's own
 * commit: one durable write instead of two.  *put_done says whether the
 * put happened; when it did not, the run is not ended (end it failed). */
FAUCET_EXTERN int faucet_run_put_end(faucet_run *r, const char *key, const faucet_value *value,
				     int *put_done);

/* Free the handle.  A run not ended is left as a crashed process leaves it. */
FAUCET_EXTERN void faucet_run_free(faucet_run *r);

/* Whether `key` is run bookkeeping (a __lease__, __status__ or __rollback__
 * key or marker): hidden from listings, never exported, copied or replaced. */
FAUCET_EXTERN int faucet_run_is_bookkeeping_key(const char *key);

/* ---- undo ----------------------------------------------------------------- */

#define FAUCET_UNDO_OPTIONS_VERSION 3

/* How many conflicting keys an undo lists at most (faucet_undo_result.conflicts). */
#define FAUCET_UNDO_CONFLICTS_MAX 1000

typedef struct {
	unsigned version;    /* FAUCET_UNDO_OPTIONS_VERSION */
	const char *row;     /* NULL = look in the pipeline-level runs and every row's */
	int pipeline_level;  /* only the pipeline-level runs (row ignored) */
	const char *run;     /* NULL = the newest run not yet undone */
	int force;           /* restore even keys changed since the run */
	int dry_run;         /* plan and report, write nothing */
	const char *command; /* "by.command" of the undo run */
	/* Version 2: wait this long for the pipeline lease (a run, a bulk
	 * write or another undo of the pipeline in flight); 0 = FAUCET_EBUSY
	 * at once.  At most FAUCET_RUN_MAX_TTL_MS, or FAUCET_RUN_WAIT_FOREVER. */
	uint64_t wait_ms;
	/* Version 3: list at most this many conflicting keys in the result
	 * (0 = FAUCET_UNDO_CONFLICTS_MAX, larger values are capped to it). */
	size_t max_conflicts;
} faucet_undo_options;

#define FAUCET_UNDO_OPTIONS_INIT {FAUCET_UNDO_OPTIONS_VERSION, NULL, 0, NULL, 0, 0, NULL, 0, 0}

/* Fill `o` as its _INIT macro does, for options version `version` (writing no
 * more than that version's struct); FAUCET_EINVALID for a version unknown here. */
FAUCET_EXTERN int faucet_undo_options_init(faucet_undo_options *o, unsigned int version);

/* One key an undo refused over: changed since the run.  Every member is
 * owned by the faucet_undo_result that lists it. */
typedef struct {
	char *key;
	faucet_value *current; /* what it holds now; NULL = absent */
	faucet_value *wrote;   /* what the run left there; NULL = absent or unknown */
	int wrote_known;       /* 0 when the run's last write of it has no after-image */
	char *run;             /* the later run that changed it, or NULL (a plain write) */
} faucet_undo_conflict;

#define FAUCET_UNDO_RESULT_VERSION 1

/* What an undo did or would do.  The caller sets `version` (initialise with
 * FAUCET_UNDO_RESULT_INIT or faucet_undo_result_init); the library fills the
 * rest as far as that version's struct goes, the caller frees it with
 * faucet_undo_result_dispose.  The struct may grow at its end. */
typedef struct {
	unsigned int version;      /* FAUCET_UNDO_RESULT_VERSION; kept by undo and dispose */
	char *run;                 /* the run undone (or to be) */
	char *scope;               /* its "{p}::{r}" or "{p}" */
	char *undo_run;            /* the undo's own run id (NULL on a dry run, a conflict, or
				    * when nothing was left to restore) */
	faucet_strarray restored;  /* keys restored (or, dry run, to restore) */
	int conflict;              /* 1: a key changed since: nothing was written (or what
				    * was, was put back); 0: no conflict */
	/* The first conflicting key (the list below has all of them). */
	char *conflict_key;
	faucet_value *conflict_current; /* NULL = absent */
	faucet_value *conflict_wrote;   /* what the run left there; NULL = absent or unknown */
	int conflict_wrote_known;       /* 0 when the run's last write of it has no after-image */
	char *conflict_run;             /* the later run that changed the key, or NULL */
	/* Parallel to `restored`: the value each key held when the undo
	 * replaced it, and the value put back (NULL = absent). */
	faucet_value **replaced;
	faucet_value **restored_to;
	/* Every conflicting key; freed by faucet_undo_result_dispose. */
	faucet_undo_conflict *conflicts; /* owned array, in marker key order; [0] = conflict_key's */
	size_t conflict_count;           /* entries in `conflicts` (at most max_conflicts) */
	size_t conflict_total;           /* conflicting keys in all, listed or not */
	int conflicts_truncated;         /* conflict_total > conflict_count */
} faucet_undo_result;

#define FAUCET_UNDO_RESULT_INIT {.version = FAUCET_UNDO_RESULT_VERSION}

/* Make `r` an empty result of version `version`, as FAUCET_UNDO_RESULT_INIT does
 * (writing no more than that version's struct); FAUCET_EINVALID for one unknown here. */
FAUCET_EXTERN int faucet_undo_result_init(faucet_undo_result *r, unsigned int version);

/* Undo a run.  Under the pipeline lease, each
 * key of the run's marker is put back to its before-image with
 * compare-and-put, but only when it still holds what the run last wrote
 * (its after-image) and no later run of any scope of the pipeline changed
 * it; otherwise that key is a conflict (result->conflict, return 0, nothing
 * written) unless forced.  Every key is checked before refusing:
 * result->conflicts lists each conflicting key (up to max_conflicts;
 * conflict_total counts them all).  `result` must carry its version
 * (FAUCET_UNDO_RESULT_INIT; version 0 or an unknown one is FAUCET_EINVALID,
 * the struct untouched); everything after it is overwritten, so dispose a
 * result before reusing it.  A failed or interrupted undo is finished by the
 * same call again; an undo run is never picked as "the newest run".  An
 * unknown run is FAUCET_ENOTFOUND, a run already undone FAUCET_EINVALID, a
 * pipeline held by a run, bulk write or undo FAUCET_EBUSY.  The undo is
 * itself a run. */
FAUCET_EXTERN int faucet_run_undo(faucet_store *s, const char *pipeline,
				  const faucet_undo_options *opts, faucet_undo_result *result);

/* Free what `r` holds and empty it, keeping its version for reuse.  NULL
 * and a result of a version this library does not know (which no undo
 * filled) are left alone. */
FAUCET_EXTERN void faucet_undo_result_dispose(faucet_undo_result *r);

/* ---- imports recorded as runs ------------------------------------------------- */

/* The invocation `count` keys belong to (doc/design.md §8.7): *pipeline gets
 * the first key's pipeline (its first segment), *row the row that every
 * key shares, or NULL when they span several invocations or one belongs to
 * none (p::__backfill__::h).  Bookkeeping keys are skipped; with none left
 * both are NULL.  The caller frees both. */
FAUCET_EXTERN int faucet_run_keys_invocation(const char *const *keys, size_t count,
					     char **pipeline, char **row);

#define FAUCET_IMPORT_RUN_HOOK_VERSION 2

/* How faucet_import_file_recorded() gets its run.  begin_run is called once
 * the document is validated and something will be written, with the
 * document's pipeline and the row every key the import changes (written,
 * or deleted by a replace) belongs to, or NULL when they span several
 * invocations (faucet_run_keys_invocation); *run receives the run to write
 * through (recorded, fenced; the caller ends and frees it) or NULL for
 * plain writes.  An error from it stops the import before anything is
 * written.  Version 2 is the first released; version 1 (whose begin_run
 * took no row) never was, and is refused. */
typedef struct {
	unsigned version; /* FAUCET_IMPORT_RUN_HOOK_VERSION */
	int (*begin_run)(void *ctx, const char *pipeline, const char *row, faucet_run **run);
	void *ctx;
} faucet_import_run_hook;

#define FAUCET_IMPORT_RUN_HOOK_INIT {FAUCET_IMPORT_RUN_HOOK_VERSION, NULL, NULL}

/* faucet_import_file(), its writes and stale deletes made through the run
 * `hook` supplies (hook NULL = faucet_import_file). */
FAUCET_EXTERN int faucet_import_file_recorded(faucet_store *s, FILE *in,
					      const faucet_import_options *opts,
					      const faucet_import_run_hook *hook,
					      faucet_import_report *report);

/* ---- reading the history ------------------------------------------------------ */

/* Every __status__ document of `pipeline` (row NULL = the pipeline level and
 * every row, else that row's only), as {"scope": "...", "row": r|null,
 * "runs": [...]} JSON objects in a JSON array, rows in key order.  The
 * caller frees *json_out.  Foreign JSON in a status key is FAUCET_ERROR. */
FAUCET_EXTERN int faucet_run_history_json(faucet_store *s, const char *pipeline, const char *row,
					  char **json_out);

/* ---- doctor: the run documents ------------------------------------------------ */

/* Append doctor's "run documents" probe to `report`: every run bookkeeping
 * key of the store (faucet_run_is_bookkeeping_key: __lease__, __status__,
 * __rollback__, __rollback__::{run}) read and parsed as its kind - a pass
 * when all parse, a fail naming each that does not with its parse error,
 * a skip when the store cannot list its keys or timeout_ms (0 = no limit)
 * runs out first.  With FAUCET_CHECK_REPAIR in `flags` each broken one is
 * set aside, never deleted: its value is put (compare-and-put against
 * absent) at "{scope}::__broken__::{its bookkeeping segments without their
 * underscores}::{now as YYYYMMDDTHHMMSSZ}" (".2", ".3", ... when that is
 * taken), e.g. p::r::__status__ -> p::r::__broken__::status::20260101T000000Z,
 * a key that is neither bookkeeping nor a run document; then the broken key
 * is removed with compare-and-delete against the exact value moved, so a
 * document fixed meanwhile is kept (and the copy taken back).  The probe
 * then passes, its hint saying what moved where.  `now` is unix seconds.
 * Fails only when out of memory or given NULL. */
FAUCET_EXTERN int faucet_run_documents_probe(faucet_store *s, int64_t now, unsigned flags,
					     uint64_t timeout_ms, faucet_check_report *report);

#ifdef __cplusplus
}
#endif

#endif
