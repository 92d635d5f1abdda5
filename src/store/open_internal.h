/*
 * open_internal.h - what the store front-end (src/store/) shares with the
 * modules above it: the batch and guarded writes the front-end falls back
 * to, and, for a built-in backend, the backend interface and the doctor
 * helpers (the sentinel probe, probe reports) it implements its check slot
 * with.  The table of backends and the openers of src/stores/ are in
 * stores/registry.h.
 */
#ifndef FAUCET_OPEN_INTERNAL_H
#define FAUCET_OPEN_INTERNAL_H

#include <faucet/store.h>
#include <faucet/sys/store_backend.h>
#include "check/check_internal.h"
#include "store/sentinel.h"

/* faucet_store_compare_and_put of a lease document the backend may drop by
 * itself once `expires_at` (unix seconds) has passed, through its
 * compare_and_put_expiring slot (etcd's native leases); without the slot a
 * plain compare-and-put.  The lease module's one way to write a lease. */
int faucet__store_compare_and_put_expiring(faucet_store *s, const char *key,
					   const faucet_value *expected, const faucet_value *value,
					   int64_t expires_at, int *written);

/* Write entries in order, by the backend's put_many or one put each; on
 * error *written leading entries are in place, and with FAUCET_EUNKNOWN
 * those from *unknown_from on may not be durable (either may be NULL). */
int faucet__store_put_prefix(faucet_store *s, const faucet_entry *entries, size_t count,
			     size_t *written, size_t *unknown_from);

/* Compare-and-put `guard` and, only when it was written, put `key`: the
 * guard's new value durable before the key changes (see put_guarded in
 * faucet/sys/store_backend.h, which this falls back from). */
int faucet__store_put_guarded(faucet_store *s, const char *guard, const faucet_value *expected,
			      const faucet_value *guard_value, const char *key,
			      const faucet_value *value, int *written);

/* faucet__store_put_guarded with 1 to FAUCET_STORE_GUARDS_MAX guards (see
 * put_guarded_many in faucet/sys/store_backend.h).  Without the backend's
 * slot the guards are written one by one: a guard that does not hold then
 * leaves those before it written (*written 0), so the caller's retry must
 * find its own earlier writes in place; the keys to drop are deleted once
 * the guards are written. */
int faucet__store_put_guarded_many(faucet_store *s, const faucet_store_guard *guards, size_t n,
				   const char *const *drop, size_t ndrop, const char *key,
				   const faucet_value *value, int *written);

/* faucet__store_put_guarded_many and, where the backend can (put_guarded_then
 * in faucet/sys/store_backend.h), `then` - one guard's key rewritten from
 * that guard's new value - in the same commit, after the key's put and
 * never in place without it.  *then_written 0: the caller writes `then`
 * itself (the put's outcome is *written and the return value, as ever). */
int faucet__store_put_guarded_then(faucet_store *s, const faucet_store_guard *guards, size_t n,
				   const char *const *drop, size_t ndrop, const char *key,
				   const faucet_value *value, const faucet_store_guard *then,
				   int *written, int *then_written);

/* faucet__store_put_guarded_then (then may be NULL) with the key's own put
 * conditional: put->key is written only while it holds put->expected (NULL =
 * no entry).  When it holds something else the key is not written and
 * *moved is set; *written says whether the guards were (a backend with
 * put_guarded_if writes none of it, the one-by-one fallback the guards). */
int faucet__store_put_guarded_if(faucet_store *s, const faucet_store_guard *guards, size_t n,
				 const char *const *drop, size_t ndrop, const faucet_store_guard *put,
				 const faucet_store_guard *then, int *written, int *then_written,
				 int *moved);

/* The backend's compare_and_put_batch (faucet/sys/store_backend.h): the
 * entries' keys checked (valid, distinct, 1 to faucet__store_cas_batch_max
 * of them), then all written or none (*written).  FAUCET_EUNSUPPORTED, with
 * no message, when the backend has no such slot. */
int faucet__store_compare_and_put_batch(faucet_store *s, const faucet_store_guard *entries,
					size_t n, int *written);

/* Whether the store's backend has compare_and_put_batch (version 13). */
int faucet__store_has_cas_batch(const faucet_store *s);

/* Most entries the backend's compare_and_put_batch takes (its
 * cas_batch_max, version 14, else FAUCET_STORE_CAS_BATCH_MAX); 0 without
 * the slot. */
size_t faucet__store_cas_batch_max(const faucet_store *s);

/* The cas_batch_max of a backend whose compare-and-put batch is one
 * transaction or script of any size (SQLite, PostgreSQL, Redis, memory):
 * an import's chunk and its marker part fit in one. */
#define FAUCET__CAS_BATCH_ONE_TXN 16384
_Static_assert(FAUCET__CAS_BATCH_ONE_TXN > FAUCET_IMPORT_CHUNK,
	       "an import's chunk and its part fit in one compare-and-put batch");

/* Whether the store's backend reads its listing a page at a time
 * (list_page, version 7): what the key iterator pages with. */
int faucet__store_has_list_page(const faucet_store *s);

/* Whether the store's backend streams faucet_store_scan_entries itself. */
int faucet__store_has_scan_entries(const faucet_store *s);

#endif
