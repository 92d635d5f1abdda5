/*
 * faucet/sys/store_backend.h - for authors of state store backends.
 *
 * A backend is a struct of function pointers that starts with a version
 * field, like libgit2's git_odb_backend.  A NULL slot means "this backend
 * cannot do that"; the front-end in faucet/store.h then supplies the default
 * (see there).  The front-end validates every key before calling a slot, so
 * a backend never sees an invalid key.  Slots return 0 or a FAUCET_E* code
 * after setting the last error with faucet_error_set() (faucet/common.h).
 *
 * A backend embeds this struct as its first member and casts back to its
 * own type inside the slots.  Slots may be called from several threads at
 * once; the backend does its own locking.
 */
#ifndef FAUCET_SYS_STORE_BACKEND_H
#define FAUCET_SYS_STORE_BACKEND_H

#include "../store.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Version 12 is the first layout released (versions 1 to 11 existed only
 * while faucet was developed, and are refused).  From it on, a new slot is
 * only ever added at the end of the struct, with the version raised, so an
 * older backend's struct is a prefix of the current one and the front-end
 * reads no slot past the end of the version the backend says it has. */
#define FAUCET_STORE_BACKEND_VERSION 14
/* The oldest version faucet_store_new() accepts. */
#define FAUCET_STORE_BACKEND_MIN_VERSION 12

/* Start a backend struct with this (every slot NULL, the name unset), then
 * fill in the slots the backend implements. */
#define FAUCET_STORE_BACKEND_INIT {.version = FAUCET_STORE_BACKEND_VERSION}

typedef struct faucet_store_backend faucet_store_backend;

/* One compare-and-put of a guarded write: `key` from `expected` (NULL = no
 * entry) to `value`. */
typedef struct {
	const char *key;
	const faucet_value *expected;
	const faucet_value *value;
} faucet_store_guard;

/* Most guards put_guarded_many is given. */
#define FAUCET_STORE_GUARDS_MAX 4

/* Most entries compare_and_put_batch is given unless the backend says it
 * takes more (cas_batch_max): etcd's default limit of operations in one
 * transaction (--max-txn-ops). */
#define FAUCET_STORE_CAS_BATCH_MAX 128

struct faucet_store_backend {
	unsigned int version; /* FAUCET_STORE_BACKEND_VERSION */
	const char *name;     /* "memory", "file", ... (static string) */

	/* Required. *out = new reference, or NULL when absent. */
	int (*get)(faucet_store_backend *b, const char *key, faucet_value **out);
	/* Required. Durable when it returns. */
	int (*put)(faucet_store_backend *b, const char *key, const faucet_value *value);
	/* Required. An absent key is not an error. */
	int (*del)(faucet_store_backend *b, const char *key);

	/* Optional: keys starting with prefix, sorted by strcmp. */
	int (*list)(faucet_store_backend *b, const char *prefix, faucet_strarray *out);
	/* Optional: the same keys in the same order, each passed to fn; stop
	 * and return fn's value when it is non-zero.  (Version 2.) */
	int (*scan)(faucet_store_backend *b, const char *prefix, faucet_key_fn fn, void *ctx);
	/* Optional: ATOMIC compare-and-put (expected NULL = no entry). */
	int (*compare_and_put)(faucet_store_backend *b, const char *key,
			       const faucet_value *expected,
			       const faucet_value *value, int *written);
	/* Optional: ATOMIC compare-and-delete (expected is never NULL).
	 * (Version 2.) */
	int (*compare_and_delete)(faucet_store_backend *b, const char *key,
				  const faucet_value *expected, int *deleted);
	/* Optional: ALL-OR-NOTHING batch. */
	int (*put_batch)(faucet_store_backend *b, const faucet_entry *entries, size_t count);
	/* Optional: doctor probes. */
	int (*check)(faucet_store_backend *b, const faucet_check_context *ctx,
		     faucet_check_report **out);

	/* Required: release the backend and everything it holds. */
	void (*free)(faucet_store_backend *b);

	/* Optional: the values of `count` keys, out[i] a new reference or NULL
	 * when absent, read as one snapshot where the backend can: SQLite reads
	 * them in one transaction instead of paying a transaction's locking per
	 * key, which is most of the cost of a bulk export.  On error every
	 * out[i] is NULL.  (Version 3.) */
	int (*get_many)(faucet_store_backend *b, const char *const *keys, size_t count,
			faucet_value **out);

	/* Optional: every entry whose key starts with prefix, in strcmp order
	 * of the keys, passed to fn; stop and return fn's value when it is
	 * non-zero.  One pass over the data where the backend can stream it
	 * (PostgreSQL: one ordered query read through a cursor) instead of a
	 * listing and then a read per chunk of keys.  fn must not wait for
	 * another call on the same store to finish.  (Version 4.) */
	int (*scan_entries)(faucet_store_backend *b, const char *prefix, faucet_entry_fn fn,
			    void *ctx);

	/* Optional: a batch that is NOT all-or-nothing, only cheaper than a
	 * put per entry (the file store makes the whole batch durable with one
	 * barrier).  Entries land in order: on error, *written leading entries
	 * are in place - and durable, unless the code is FAUCET_EUNKNOWN, when
	 * entries [*unknown_from, *written) are in place but may not survive a
	 * crash.  Used where put_batch is absent.  (Version 4.) */
	int (*put_many)(faucet_store_backend *b, const faucet_entry *entries, size_t count,
			size_t *written, size_t *unknown_from);

	/* Optional: rebuild a key index the backend keeps beside its entries
	 * (Redis with index=true) so that it agrees with the entries again;
	 * *added / *removed count the index members changed.  NULL: the
	 * backend keeps no index (faucet_store_reindex is then
	 * FAUCET_EUNSUPPORTED).  (Version 5.) */
	int (*reindex)(faucet_store_backend *b, size_t *added, size_t *removed);

	/* Optional: scan_entries without the run bookkeeping keys (see
	 * faucet_store_scan_data), left out where the entries live so that a
	 * big rollback marker is never read.  NULL: the front-end filters
	 * scan_entries or the listing.  (Version 6.) */
	int (*scan_data)(faucet_store_backend *b, const char *prefix, faucet_entry_fn fn,
			 void *ctx);

	/* Optional: compare-and-put `guard` (expected -> guard_value) and,
	 * only when that was written, put `key`; the guard's new value is
	 * durable before the key changes (a run's rollback marker before the
	 * key's first write).  *written says whether the guard held; an error
	 * with *written set means the key's put failed after it.  NULL: the
	 * front-end calls compare_and_put, then put.  (Version 6.) */
	int (*put_guarded)(faucet_store_backend *b, const char *guard,
			   const faucet_value *expected, const faucet_value *guard_value,
			   const char *key, const faucet_value *value, int *written);

	/* Optional: one page of list's keys: those starting with prefix and
	 * greater than `after` (NULL = from the first; else a key an earlier
	 * page returned), in strcmp order, at most `limit` (>= 1) of them and
	 * fewer only when no more are left.  A page is one query, so the
	 * store's iterator (faucet_store_iter_*) holds nothing between pages.
	 * NULL: the iterator takes the whole list once.  On error *out is
	 * empty.  (Version 7.) */
	int (*list_page)(faucet_store_backend *b, const char *prefix, const char *after,
			 size_t limit, faucet_strarray *out);

	/* Optional: put_guarded with 1 to FAUCET_STORE_GUARDS_MAX guards (keys
	 * distinct, none of them `key`): only when every guard holds are they
	 * all written, and durable before `key` changes; one that does not
	 * hold leaves everything as it was (*written 0).  The keys drop[0..ndrop)
	 * (at most FAUCET_STORE_GUARDS_MAX, none a guard or `key`) are deleted
	 * once the guards are in place - cleanup, not a promise: a failure to
	 * delete one is a warning.  A run's first write of a CLI put records
	 * its status, index and marker this way, retiring the marker the index
	 * pushed out, with the key behind one data barrier.  NULL: the
	 * front-end writes the guards one by one (see
	 * faucet__store_put_guarded_many).  (Version 8.) */
	int (*put_guarded_many)(faucet_store_backend *b, const faucet_store_guard *guards,
				size_t n, const char *const *drop, size_t ndrop, const char *key,
				const faucet_value *value, int *written);

	/* Optional: faucet_store_watch (see faucet/store.h) - report each
	 * change of a key starting with prefix to fn, FAUCET_WATCH_READY
	 * once the watch is in place and FAUCET_WATCH_TICK at least once a
	 * second without one, until fn returns non-zero (returned).  NULL:
	 * the store cannot be watched.  (Version 9.) */
	int (*watch)(faucet_store_backend *b, const char *prefix, faucet_watch_fn fn, void *ctx);

	/* Optional: put_guarded_many, and then - once the key's put is in
	 * place, before it is acknowledged - `then`, one guard's key from
	 * that guard's new value to then->value, never in place without the
	 * key's put (a CLI put's run ends "ok" in the write that records it).
	 * *then_written says whether it was written; when not, the caller
	 * writes it itself.  NULL: the front-end calls put_guarded_many and
	 * leaves `then` to the caller.  (Version 10.) */
	int (*put_guarded_then)(faucet_store_backend *b, const faucet_store_guard *guards,
				size_t n, const char *const *drop, size_t ndrop, const char *key,
				const faucet_value *value, const faucet_store_guard *then,
				int *written, int *then_written);

	/* Optional: put_guarded_then (then may be NULL) whose key's put is a
	 * compare-and-put too: put->key from put->expected (NULL = no entry)
	 * to put->value, compared under the same commit as the guards.  When
	 * the guards hold and the key does not, nothing is written, *written
	 * is 0 and *moved 1 (a run's first write of a key, which must replace
	 * exactly the before-image it recorded).  NULL: the front-end writes
	 * the guards one by one, then the key's compare-and-put.  (Version 11.) */
	int (*put_guarded_if)(faucet_store_backend *b, const faucet_store_guard *guards, size_t n,
			      const char *const *drop, size_t ndrop, const faucet_store_guard *put,
			      const faucet_store_guard *then, int *written, int *then_written,
			      int *moved);

	/* Optional: compare_and_put of a lease document (the lease module's
	 * claims and renewals, faucet/lease.h) that the engine may drop by
	 * itself once `expires_at` (unix seconds) has passed - etcd attaches
	 * the key to one of its own leases, so a dead holder's lease goes
	 * without anyone removing it.  NULL: a plain compare_and_put (the
	 * lease then stays until a reader finds it expired).  (Version 12.) */
	int (*compare_and_put_expiring)(faucet_store_backend *b, const char *key,
					const faucet_value *expected, const faucet_value *value,
					int64_t expires_at, int *written);

	/* Optional: 1 to cas_batch_max (below) compare-and-puts of distinct
	 * keys, all or nothing: each entry's key from `expected` (NULL = no
	 * entry) to `value` (NULL = deleted).  When every key holds its
	 * expected, all are written in one commit and *written is 1; when one
	 * does not, nothing is written and *written is 0.  A reply lost after
	 * the commit was sent is FAUCET_EUNKNOWN.  A backend that cannot
	 * commit many keys at once (the file store) compares all first, makes
	 * the first entry durable before any other is written, and reports a
	 * failure after it as an error other than FAUCET_EUNKNOWN (a run reads
	 * its marker part, the first entry, to learn whether a chunk landed).
	 * NULL: the front-end says
	 * FAUCET_EUNSUPPORTED and the caller goes key by key (an undo's
	 * restores, faucet_run_undo).  (Version 13.) */
	int (*compare_and_put_batch)(faucet_store_backend *b, const faucet_store_guard *entries,
				     size_t n, int *written);

	/* Most entries this backend's compare_and_put_batch takes; 0 means
	 * FAUCET_STORE_CAS_BATCH_MAX.  A run writes a batch of first writes
	 * (an import's chunk and its marker part) as one compare-and-put
	 * batch when it fits.  (Version 14.) */
	size_t cas_batch_max;
};

/* Wrap a backend in a store handle; the store owns the backend from here on
 * (it is freed with the store, or at once when this call fails). */
FAUCET_EXTERN int faucet_store_new(faucet_store **out, faucet_store_backend *backend);

/* The backend a store wraps (borrowed). */
FAUCET_EXTERN faucet_store_backend *faucet_store_backend_of(faucet_store *s);

#ifdef __cplusplus
}
#endif

#endif
