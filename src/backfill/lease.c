/*
 * lease.c - claiming a backfill unit so that two runners of one range never
 * run it twice.
 *
 * A lease is an ordinary state entry next to the unit's key.  Every change
 * is a compare-and-put against the exact value last seen, so of two runners
 * racing for a unit exactly one wins, and an expired lease is taken over
 * only by the runner that saw it expired.  Expiry uses wall-clock seconds
 * because the holders may be on different hosts.
 *
 * Safety does not rest on the lease alone: the runner records a unit's
 * outcome in the marker *before* releasing the lease, and re-reads the
 * marker right after claiming one.  So even a runner that takes over a
 * lease a moment after the unit finished sees the outcome and does not run
 * the unit again.
 *
 * A holder id is unique to one runner, so a lease that carries ours is ours,
 * whatever its expiry.  That settles writes whose outcome we do not know (a
 * server that applied a compare-and-put but lost the reply, FAUCET_EUNKNOWN):
 * after a failed write we read the entry back and look for our holder id,
 * rather than treating our own claim as someone else's and waiting a whole
 * TTL for it to run out.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "values/value_internal.h"
#include "backfill/backfill_internal.h"
#include "lease/lease.h"

char *faucet_bf__lease_holder(void)
{
	return faucet__holder_id();
}

/* When the lease stored in `v` runs out, in *expires_at, and whether it
 * names `holder`, in *mine.  A lease whose shape we cannot read says nothing
 * about when it ends, so it counts as expired (0): honouring it would block
 * the unit for ever.  Fails only when the value cannot be parsed at all (out
 * of memory). */
static int lease_read(const faucet_value *v, const char *holder, int64_t *expires_at, int *mine)
{
	faucet_lease l;
	int rc = faucet_lease_parse(v, NULL, &l);

	*expires_at = 0;
	*mine = 0;
	if (rc == FAUCET_ENOMEM)
		return rc;
	if (rc != 0) {
		faucet_error_clear(); /* unreadable: expired, as said above */
		return 0;
	}
	*expires_at = l.expires_at;
	*mine = strcmp(l.holder, holder) == 0;
	faucet_lease_dispose(&l);
	return 0;
}

/* Raise the error of a lease write that did not land. */
static int write_failed(int err, const char *why)
{
	return faucet_error_set(err, "%s", why != NULL ? why : "lease write failed");
}

/* Make `l` hold `v` (a lease naming us), taking a new reference. */
static void lease_adopt(faucet_bf_lease *l, faucet_value *v, int64_t expires_at)
{
	faucet_value_free(l->value);
	l->value = faucet_value_ref(v);
	l->expires_at = expires_at;
}

int faucet_bf__lease_claim(faucet_store *s, const char *unit_key, const char *holder,
			   int64_t now, int64_t ttl, faucet_bf_lease *out, int *claimed,
			   int64_t *held_until)
{
	faucet_value *current = NULL, *mine = NULL, *after = NULL;
	char *why = NULL;
	int64_t expires_at = 0;
	int rc, written = 0, ours = 0;

	memset(out, 0, sizeof(*out));
	*claimed = 0;
	out->key = faucet__sprintf("%s::__lease__", unit_key);
	if (out->key == NULL)
		return FAUCET_ENOMEM;
	rc = faucet_store_get(s, out->key, &current);
	if (rc == 0 && current != NULL)
		rc = lease_read(current, holder, &expires_at, &ours);
	/* A live lease of another runner is left alone; one that names us is
	 * ours (an earlier claim of ours whose reply we never got) and is
	 * simply renewed below. */
	if (rc == 0 && current != NULL && expires_at > now && !ours) {
		if (held_until != NULL)
			*held_until = expires_at;
		faucet_value_free(current);
		faucet_bf__lease_dispose(out);
		return 0;
	}
	if (rc == 0)
		rc = faucet__lease_doc(holder, faucet__lease_until(now, ttl), NULL, &mine);
	if (rc == 0) {
		rc = faucet__lease_write(s, out->key, current, mine, faucet__lease_until(now, ttl),
					 &written);
		if (rc != 0) {
			/* Our holder id there means our write landed after all; the
			 * entry unchanged means it did not, and the error stands;
			 * anything else is another runner's claim. */
			int err = rc;
			ours = 0;
			rc = faucet__lease_reread(s, out->key, err, &after, &why);
			if (rc == 0 && after != NULL)
				rc = lease_read(after, holder, &expires_at, &ours);
			if (rc == 0 && !ours && faucet_value_equal(after, current))
				rc = write_failed(err, why);
			written = rc == 0 && ours;
			if (written)
				lease_adopt(out, after, expires_at);
		} else if (written) {
			lease_adopt(out, mine, faucet__lease_until(now, ttl));
		}
	}
	faucet_value_free(current);
	faucet_value_free(after);
	faucet_value_free(mine);
	free(why);
	if (rc != 0 || !written) {
		/* Someone else changed it between our read and our write. */
		if (held_until != NULL)
			*held_until = now;
		faucet_bf__lease_dispose(out);
		return rc;
	}
	out->holder = holder;
	*claimed = 1;
	return 0;
}

int faucet_bf__lease_renew(faucet_store *s, faucet_bf_lease *l, int64_t now, int64_t ttl,
			   int *kept)
{
	faucet_value *next = NULL, *after = NULL;
	char *why = NULL;
	int64_t expires_at = 0;
	int rc, written = 0, ours = 0;

	*kept = 0;
	/* Past its expiry another runner may already have judged the unit's
	 * lease gone; bringing it back would hide that the unit may be running
	 * twice, so it is lost (as a run's own lease is: run/run.c). */
	if (l->expires_at <= now)
		return faucet_error_set(FAUCET_ELEASELOST,
					"its lease expired (at %lld, now %lld) before it was renewed",
					(long long)l->expires_at, (long long)now);
	rc = faucet__lease_doc(l->holder, faucet__lease_until(now, ttl), NULL, &next);
	if (rc != 0)
		return rc;
	rc = faucet__lease_write(s, l->key, l->value, next, faucet__lease_until(now, ttl), &written);
	if (rc != 0) {
		/* Did it land?  Our holder id there says the lease is still ours
		 * (renewed or not); anything else means it was taken over. */
		int err = rc;
		rc = faucet__lease_reread(s, l->key, err, &after, &why);
		if (rc == 0 && after != NULL)
			rc = lease_read(after, l->holder, &expires_at, &ours);
		if (rc == 0 && ours && faucet_value_equal(after, l->value))
			rc = write_failed(err, why); /* not renewed, still ours: try again later */
		else if (rc == 0 && ours)
			lease_adopt(l, after, expires_at);
		*kept = rc == 0 && ours;
	} else if (written) {
		lease_adopt(l, next, faucet__lease_until(now, ttl));
		*kept = 1;
	}
	faucet_value_free(after);
	faucet_value_free(next);
	free(why);
	return rc;
}

/* Release: lease/lease.c, shared with runs. */
int faucet_bf__lease_release(faucet_store *s, faucet_bf_lease *l)
{
	return faucet__lease_release(s, l->key, l->value, l->holder);
}

void faucet_bf__lease_dispose(faucet_bf_lease *l)
{
	free(l->key);
	faucet_value_free(l->value);
	memset(l, 0, sizeof(*l));
}
