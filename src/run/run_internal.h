/*
 * run_internal.h - the run module's documents in memory, shared between its
 * files and its tests (not installed).
 *
 * The four bookkeeping documents (lease, status, rollback index, rollback
 * marker) are parsed from a private json-c tree and written back as text we
 * assemble ourselves, with every stored value embedded as the exact compact
 * text the library holds - a before-image of 18446744073709551615 or 0.1
 * comes back digit for digit.
 */
#ifndef FAUCET_RUN_INTERNAL_H
#define FAUCET_RUN_INTERNAL_H

#include <stdint.h>
#include <faucet/run.h>

#include "internal.h"
#include "lease/lease.h"
#include <faucet/sys/store_backend.h>

/* ---- text helpers ------------------------------------------------------------ */

/* A new run id YYYYMMDDTHHMMSS.mmmZ-xxxxxx; out >= FAUCET_RUN_ID_LEN + 1. */
int faucet_run__new_id(char *out, size_t size);

/* Whether `id` has the run id shape (and so is a valid key component). */
int faucet_run__valid_id(const char *id);

/* ---- rollback marker ---------------------------------------------------------- */

/*
 * One key of a run's marker.  The before-image is what the key held before
 * the run's first write of it; the after-image what the run last wrote to
 * it, recorded when it wrote it (a leased run and every handle joining it
 * record it ahead of each write; a run that took no lease, which nobody
 * can join, at its end from what its own writes left).  A key without an
 * after-image ("after" has no member for it) is one whose last write's
 * outcome is unknown: a run that died, or a write whose reply was lost.
 */
typedef struct {
	char *key;            /* first: faucet__find_sorted looks it up */
	faucet_value *before; /* NULL = absent */
	faucet_value *after;  /* NULL = absent (meaningful when after_known) */
	int after_known;      /* "after" has a member for the key */
} run_image;

typedef struct {
	char *run;
	run_image *items; /* sorted by key */
	size_t count, cap;
	size_t near;      /* where the last lookup ended (faucet_run__marker_find) */
	int has_after;    /* the document has an "after" object */
} run_marker;

/* Parse (v NULL = an empty marker of `run`).  FAUCET_ERROR naming key when
 * the document is not a marker. */
int faucet_run__marker_parse(const faucet_value *v, const char *key, const char *run, run_marker *m);
int faucet_run__marker_value(const run_marker *m, faucet_value **out);
/* Whether any key has an after-image (or the document had "after"). */
int faucet_run__marker_any_after(const run_marker *m);
run_image *faucet_run__marker_find(run_marker *m, const char *key);
/* Add key's before-image unless it has one; *added says whether. */
int faucet_run__marker_add(run_marker *m, const char *key, const faucet_value *before, int *added);
/* The same for n keys (befores[i] NULL = absent), sorted and merged in one
 * pass: adding them one at a time moves the sorted items once per key,
 * quadratic for keys not in order.  *added: whether any was new. */
int faucet_run__marker_add_many(run_marker *m, const char *const *keys,
			 faucet_value *const *befores, size_t n, int *added);
void faucet_run__marker_dispose(run_marker *m);

/*
 * A marker in parts.  A big import records each chunk after its first in a
 * part of its own, "{marker key}::{n}" (n = 1, 2, ... with no gap), the same
 * document as a marker, written once before the chunk's write and never
 * rewritten: the marker then costs what its images weigh, not a rewrite of
 * everything recorded so far per chunk (doc/design.md §8.6).  A key has
 * images in one document only.
 */
char *faucet_run__marker_part_key(const char *marker_key, size_t n);
/* The marker at `key` with every part's images merged in, sorted.  *exists
 * 0 (and m empty) when there is no marker; *parts (may be NULL) gets how
 * many parts it had. */
int faucet_run__marker_load(faucet_store *s, const char *key, const char *run, run_marker *m,
		     int *exists, size_t *parts);
/* Delete the marker at `key`, then its parts. */
int faucet_run__marker_delete(faucet_store *s, const char *key);
/* Delete the parts of the marker at `key` (its main document gone). */
int faucet_run__marker_delete_parts(faucet_store *s, const char *key);

/* ---- status ------------------------------------------------------------------ */

/* A status entry lists at most this many changed keys (the marker has them
 * all), and then says how many there were in "keys_total": the status
 * document is rewritten by every run of its scope, and 50 entries of a
 * million-key import each would make that a gigabyte. */
#define RUN_STATUS_KEYS 1000

typedef struct {
	char *run;
	char *started_at, *ended_at; /* ended_at NULL while running */
	char *outcome;               /* running, ok, failed, abandoned, undone */
	int has_exit;
	long long exit_status;
	char *message;
	faucet_strarray keys;        /* the first RUN_STATUS_KEYS of them */
	size_t keys_total;           /* how many it changed: > keys.count when cut */
	char *undoes;
	char *by;                    /* the "by" object's JSON text, or NULL */
	char *lease;                 /* the lease key the run holds ("lease"), or NULL:
				      * its holder is gone when that lease is */
} run_entry;

typedef struct {
	run_entry *items; /* newest first */
	size_t count, cap;
} run_status;

int faucet_run__status_parse(const faucet_value *v, const char *key, run_status *st);
int faucet_run__status_value(const run_status *st, faucet_value **out);
run_entry *faucet_run__status_find(const run_status *st, const char *run);
/* Put `e` first (taking its contents), dropping entries beyond 50. */
int faucet_run__status_push(run_status *st, run_entry *e);
void faucet_run__entry_dispose(run_entry *e);
/* Set the entry's changed keys: the first RUN_STATUS_KEYS of keys, and
 * keys_total the larger of `total` and keys->count (a run whose changed
 * keys are not all in memory says how many there were). */
int faucet_run__entry_set_keys(run_entry *e, const faucet_strarray *keys, size_t total);
void faucet_run__status_dispose(run_status *st);
/* One entry as JSON text appended to b. */
void faucet_run__entry_json(faucet_buf *b, const run_entry *e);
/* An unleased run (a CLI write) still "running" this long after it started
 * is gone, whatever host it ran on (doc/design.md §8.3). */
#define RUN_UNLEASED_MAX_S (24 * 3600)

/* Whether a "running" entry's holder is gone - the lease it holds is
 * absent, expired, taken or its holder dead, or (no lease) its process is
 * dead on this host or it started over RUN_UNLEASED_MAX_S ago: every reader
 * then shows it "abandoned".  0 for an entry that is not running. */
int faucet_run__entry_gone(faucet_store *s, const run_entry *e, int *gone);

/* ---- rollback index ------------------------------------------------------------ */

int faucet_run__index_parse(const faucet_value *v, const char *key, faucet_strarray *runs);
int faucet_run__index_value(const faucet_strarray *runs, faucet_value **out);

/* ---- keys ---------------------------------------------------------------------- */

/* "{scope}::__lease__" etc.  Caller frees. */
char *faucet_run__key(const char *scope, const char *suffix);
char *faucet_run__marker_key(const char *scope, const char *run);

/* ---- which invocation keys belong to (faucet_run_keys_invocation) --------------- */

typedef struct {
	char *pipeline; /* the first key's, NULL before any */
	char *row;      /* the first key's row (NULL: it has none) */
	int any;        /* a key was added */
	int spans;      /* the keys span several invocations, or one has none */
} run_scope;

void faucet_run__scope_init(run_scope *sc);
/* Add a key (bookkeeping keys are skipped). */
int faucet_run__scope_add(run_scope *sc, const char *key);
void faucet_run__scope_dispose(run_scope *sc);

/* Record the before-images of keys the run is about to write, in one
 * marker write, ahead of the writes themselves (an import knows all its
 * keys up front; recording them a growing window at a time keeps the
 * marker's rewrites linear in its size).  A key recorded but never written
 * by an unleased run gets its before-image as its after-image, so undo
 * leaves it alone.  No-op for a joined handle. */
int faucet_run__record(faucet_run *r, const char *const *keys, size_t n);

/* Compare-and-puts of 1 to FAUCET_STORE_CAS_BATCH_MAX distinct keys (value
 * NULL: delete) through the run, all or nothing: recorded and fenced as one
 * write, then written in one commit only when every key still holds its
 * expected (*held).  FAUCET_EUNSUPPORTED when the store has no such batch,
 * or the run logs its after-images ahead (leased or joined): then the
 * caller goes key by key. */
int faucet_run__compare_and_put_batch(faucet_run *r, const faucet_store_guard *g, size_t n,
				      int *held);

/* faucet_run_put_batch for a batch that is not all-or-nothing: the
 * entries' before-images are recorded (one marker write), then the entries
 * are written in order as faucet__store_put_prefix does, which says how
 * many landed.  A key whose before-image cannot be recorded fails the batch
 * there: the keys before it are written, it and those after are not. */
int faucet_run__put_prefix(faucet_run *r, const faucet_entry *entries, size_t count,
			   size_t *written, size_t *unknown_from);

/* Whether faucet_run__put_part can record these entries in a marker part:
 * a handle that took no lease and was not joined, whose marker exists,
 * none of the keys recorded yet. */
int faucet_run__can_part(faucet_run *r, const faucet_entry *entries, size_t count);
/* A big import's chunk after its first: its before- and after-images in a
 * new part of the marker (written once, never rewritten) and the chunk,
 * in one compare-and-put batch against those before-images where the
 * backend's batch holds both (read again and retried when a key moved);
 * else the part, then the chunk written - all-or-nothing as
 * faucet_store_put_batch, or with `written` (and unknown_from) as
 * faucet__store_put_prefix.  Falls back to
 * faucet_run_put_batch / faucet_run__put_prefix when it cannot part.  A
 * key recorded in a part cannot be written again by the handle. */
int faucet_run__put_part(faucet_run *r, const faucet_entry *entries, size_t count,
			 size_t *written, size_t *unknown_from);

/* Record a run that took no lease as "running" now rather than with its
 * first change (an undo with nothing left to restore must still mark its
 * target). */
int faucet_run__start(faucet_run *r);

/* The run an undo run undoes, set again before it is recorded (the newest
 * run may have changed between the undo's first look and its look under
 * the lease). */
int faucet_run__set_undoes(faucet_run *r, const char *run);

/* ---- doctor's set-aside names (check.c) ----------------------------------------- */

/* Where doctor --repair moves the broken run document at bookkeeping key
 * `key` (faucet_run_documents_probe): "{scope}::__broken__::{the bookkeeping
 * segments without their leading and trailing underscores}::{now as
 * YYYYMMDDTHHMMSSZ}", the stamp followed by ".{attempt}" from attempt 2 on;
 * when that is longer than a key may be, "{scope}::__broken__::{stamp}",
 * then "__broken__::{stamp}".  Never a bookkeeping key.  NULL when `key` is
 * not bookkeeping or out of memory.  Caller frees. */
char *faucet_run__broken_key(const char *key, int64_t now, unsigned attempt);

#endif
