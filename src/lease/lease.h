/*
 * lease.h - the lease primitives runs and backfill units share
 * (faucet/lease.h has the document; doc/design.md §6, §8.1).
 */
#ifndef FAUCET_LEASE_INTERNAL_H
#define FAUCET_LEASE_INTERNAL_H

#include <stdint.h>

#include "faucet/lease.h"

#define FAUCET__LEASE_SUFFIX "::__lease__"

/* The lease document {"holder", "expires_at"[, "run"]} (run NULL: a backfill
 * unit's claim, no "run" member).  0 and *out, or FAUCET_ENOMEM. */
int faucet__lease_doc(const char *holder, int64_t expires_at, const char *run, faucet_value **out);

/* Write lease document `doc`, which says `expires_at`, at `key` by
 * compare-and-put over `expected` (NULL = absent): every claim and renewal
 * goes through here, so that a store able to drop the key by itself once
 * expires_at has passed does (etcd's native leases,
 * compare_and_put_expiring in faucet/sys/store_backend.h). */
int faucet__lease_write(faucet_store *s, const char *key, const faucet_value *expected,
			const faucet_value *doc, int64_t expires_at, int *written);

/* The expires_at of a lease written at `now` (whole seconds) with a TTL of
 * `ttl_s`: now + ttl_s + 1, so that it lasts at least its TTL wherever in
 * the second it was written - with now + ttl_s a 1 s lease written late in
 * a second reads as expired to everyone a few milliseconds later. */
int64_t faucet__lease_until(int64_t now, int64_t ttl_s);

/* Whether lease `l` is in force at `now`: not expired, and its holder not
 * known dead (a process of this host that is gone holds nothing). */
int faucet__lease_live(const faucet_lease *l, int64_t now);

/* A write of ours to the lease at `key` failed with `err`; it may still
 * have landed.  Read the entry back into *now (NULL = absent; caller
 * frees).  *why gets the write's message (caller frees; NULL when out of
 * memory).  When the read fails too, the write's error is returned, its
 * message restored. */
int faucet__lease_reread(faucet_store *s, const char *key, int err, faucet_value **now,
			 char **why);

/* Give up the lease at `key` that we hold as `held` (what we last wrote),
 * never removing one another holder took over: compare-and-delete where the
 * store has it, else a released form ({holder, expires_at: 0}) written by
 * compare-and-put, then removed while it is still there.  A write that
 * reports an error is settled by reading the lease back: 0 when it is no
 * longer ours; the error when it still is (or we cannot tell). */
int faucet__lease_release(faucet_store *s, const char *key, const faucet_value *held,
			  const char *holder);

#endif
