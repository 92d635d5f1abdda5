/*
 * faucet/lease.h - leases: who may write an invocation or run a backfill
 * unit right now (doc/design.md §6, §8.1).
 *
 * A lease is an ordinary state entry at a key ending in "::__lease__":
 * {"holder": "{host}:{pid}:{random}", "expires_at": unix seconds, "run": id}
 * ("run" absent in a backfill unit's claim).  Every change to one is a
 * compare-and-put against the exact value last seen.  A lease holds nothing
 * once it has expired, or once its holder is a process of this host that is
 * gone.
 */
#ifndef FAUCET_LEASE_H
#define FAUCET_LEASE_H

#include <stdint.h>

#include "common.h"
#include "value.h"
#include "check.h"
#include "store.h"

/* The longest lease TTL a run or a backfill unit takes: 30 days.  Every TTL
 * and wait of the API is in milliseconds. */
#define FAUCET_LEASE_MAX_TTL_MS (30ULL * 24 * 3600 * 1000)

#ifdef __cplusplus
extern "C" {
#endif

/* A lease as stored at a "...::__lease__" key: an invocation's run lock or
 * a backfill unit's claim.  Filled by faucet_lease_parse, released with
 * faucet_lease_dispose. */
typedef struct {
	char *holder;       /* who holds it: "{host}:{pid}:{16 random hex}" */
	char *run;          /* the run holding it; NULL in a backfill unit's lease */
	int64_t expires_at; /* unix seconds */
} faucet_lease;

/* Read the lease document `v`, the value at lease key `key` (named in
 * messages), into *out.  FAUCET_ERROR when v is not a lease (*out is then
 * empty). */
FAUCET_EXTERN int faucet_lease_parse(const faucet_value *v, const char *key, faucet_lease *out);

/* Free a lease's strings and leave it empty.  NULL is ignored. */
FAUCET_EXTERN void faucet_lease_dispose(faucet_lease *l);

/* Whether the lease's holder is known to be gone: a process of this host
 * that no longer exists.  Such a lease holds nothing, whatever its expiry
 * says (the next claim takes it over at once).  0 for a live holder or one
 * on another host, where only the expiry tells. */
FAUCET_EXTERN int faucet_lease_holder_dead(const faucet_lease *l);

/* Every lease in the store (a key ending in "::__lease__": backfill units'
 * and runs') whose expires_at is at or before `now` (unix seconds), or whose
 * value has no readable expiry, in key order.  Needs a store that can list
 * its keys.  Caller disposes *out. */
FAUCET_EXTERN int faucet_lease_list_expired(faucet_store *s, int64_t now, faucet_strarray *out);

/* Append doctor's "expired leases" probe to `report`: pass when there are
 * none, warn naming them (the first ten), skip when the store cannot list
 * its keys, the listing fails, or it takes more than timeout_ms (0 = no
 * limit).  Fails only when out of memory. */
FAUCET_EXTERN int faucet_lease_probe(faucet_store *s, int64_t now, uint64_t timeout_ms,
				     faucet_check_report *report);

#ifdef __cplusplus
}
#endif

#endif
