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

char *faucet_bf__lease_holder(void)
{
	return faucet__holder_id();
}

static int lease_value(faucet_value **out, const char *holder, int64_t expires_at)
{
	json_object *o = json_object_new_object();
	json_object *h = json_object_new_string(holder);
	json_object *e = json_object_new_int64(expires_at);

	if (o == NULL || h == NULL || e == NULL) {
		json_object_put(o);
		json_object_put(h);
		json_object_put(e);
		return faucet_error_set(FAUCET_ENOMEM, "out of memory building a lease");
	}
	json_object_object_add(o, "holder", h);
	json_object_object_add(o, "expires_at", e);
	return faucet_value__from_tree(out, o);
}

/* When the lease stored in `v` runs out, in *expires_at, and whether it
 * names `holder`, in *mine.  A lease whose shape we cannot read says nothing
 * about when it ends, so it counts as expired (0): honouring it would block
 * the unit for ever.  Fails only when the value cannot be parsed at all (out
 * of memory). */
static int lease_read(const faucet_value *v, const char *holder, int64_t *expires_at, int *mine)
{
	json_object *tree, *e, *h;
	int rc = faucet_value__tree(v, &tree);

	*expires_at = 0;
	*mine = 0;
	if (rc != 0)
		return rc;
	if (!json_object_is_type(tree, json_type_object))
		return 0;
	if (json_object_object_get_ex(tree, "expires_at", &e) && json_object_is_type(e, json_type_int))
		*expires_at = json_object_get_int64(e);
	if (json_object_object_get_ex(tree, "holder", &h) && json_object_is_type(h, json_type_string))
		*mine = strcmp(json_object_get_string(h), holder) == 0;
	return 0;
}

/* A write of the lease at `key` failed with `err`; it may still have
 * landed.  Read the entry back into *now (NULL = absent) so the caller can
 * tell.  *why receives the write's error message (caller frees; NULL when
 * out of memory), for a caller that finds the write did not land.  When
 * even the read fails, the write's own error is returned, message restored. */
static int reread_after_error(faucet_store *s, const char *key, int err, faucet_value **now,
			      char **why)
{
	int rc;

	*why = faucet__strdup(faucet_error_last()->message);
	*now = NULL;
	rc = faucet_store_get(s, key, now);
	if (rc != 0)
		rc = faucet_error_set(err, "%s", *why != NULL ? *why : "lease write failed");
	return rc;
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
		rc = lease_value(&mine, holder, now + ttl);
	if (rc == 0) {
		rc = faucet_store_compare_and_put(s, out->key, current, mine, &written);
		if (rc != 0) {
			/* Our holder id there means our write landed after all; the
			 * entry unchanged means it did not, and the error stands;
			 * anything else is another runner's claim. */
			int err = rc;
			ours = 0;
			rc = reread_after_error(s, out->key, err, &after, &why);
			if (rc == 0 && after != NULL)
				rc = lease_read(after, holder, &expires_at, &ours);
			if (rc == 0 && !ours && faucet_value_equal(after, current))
				rc = write_failed(err, why);
			written = rc == 0 && ours;
			if (written)
				lease_adopt(out, after, expires_at);
		} else if (written) {
			lease_adopt(out, mine, now + ttl);
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
	rc = lease_value(&next, l->holder, now + ttl);
	if (rc != 0)
		return rc;
	rc = faucet_store_compare_and_put(s, l->key, l->value, next, &written);
	if (rc != 0) {
		/* Did it land?  Our holder id there says the lease is still ours
		 * (renewed or not); anything else means it was taken over. */
		int err = rc;
		rc = reread_after_error(s, l->key, err, &after, &why);
		if (rc == 0 && after != NULL)
			rc = lease_read(after, l->holder, &expires_at, &ours);
		if (rc == 0 && ours && faucet_value_equal(after, l->value))
			rc = write_failed(err, why); /* not renewed, still ours: try again later */
		else if (rc == 0 && ours)
			lease_adopt(l, after, expires_at);
		*kept = rc == 0 && ours;
	} else if (written) {
		lease_adopt(l, next, now + ttl);
		*kept = 1;
	}
	faucet_value_free(after);
	faucet_value_free(next);
	free(why);
	return rc;
}

/*
 * Release: delete the lease only while it is still ours - a plain delete
 * could remove a lease another runner took over after ours expired.  With
 * an atomic compare-and-delete (every built-in store) that is one step.
 *
 * Otherwise we first write a released form of our own lease ({holder: us,
 * expires_at: 0}) with compare-and-put against the value we hold: that step
 * is atomic and is the real hand-over - from then on anyone may claim the
 * unit.  Only if the entry still holds that released form do we delete it,
 * to keep the store tidy.  The small window between that re-check and the
 * delete can remove a claim made in between, which is harmless: the unit's
 * outcome is already in the marker, and the claimer checks the marker and
 * skips the unit.  Should the delete fail, the released form blocks no one.
 */
int faucet_bf__lease_release(faucet_store *s, faucet_bf_lease *l)
{
	faucet_value *released = NULL, *now = NULL;
	char *why = NULL;
	int64_t expires_at = 0;
	int rc, err, written = 0, ours = 0;

	if (faucet_store_supports_compare_and_delete(s)) {
		err = faucet_store_compare_and_delete(s, l->key, l->value, &written);
		if (err == 0)
			return 0;
		/* The delete may have landed though it reported an error: the
		 * lease is released unless our holder id is still there. */
		rc = reread_after_error(s, l->key, err, &now, &why);
		if (rc == 0 && now != NULL)
			rc = lease_read(now, l->holder, &expires_at, &ours);
		if (rc == 0 && ours)
			rc = write_failed(err, why);
		faucet_value_free(now);
		free(why);
		return rc;
	}
	rc = lease_value(&released, l->holder, 0);
	if (rc != 0)
		return rc;
	err = faucet_store_compare_and_put(s, l->key, l->value, released, &written);
	if (err != 0) {
		/* Handed over after all, or still ours (the error stands)? */
		rc = reread_after_error(s, l->key, err, &now, &why);
		if (rc == 0 && faucet_value_equal(now, l->value))
			rc = write_failed(err, why);
		written = rc == 0 && faucet_value_equal(now, released);
		faucet_value_free(now);
		now = NULL;
	}
	/* Tidying up after the hand-over is best-effort: a released form left
	 * behind blocks no one (doctor lists it among the expired leases). */
	if (rc == 0 && written && faucet_store_get(s, l->key, &now) == 0 &&
	    faucet_value_equal(now, released))
		(void)faucet_store_delete(s, l->key);
	faucet_value_free(now);
	faucet_value_free(released);
	free(why);
	return rc;
}

void faucet_bf__lease_dispose(faucet_bf_lease *l)
{
	free(l->key);
	faucet_value_free(l->value);
	memset(l, 0, sizeof(*l));
}

/* ---- doctor: leases left behind ------------------------------------------- */

/*
 * Every lease - a backfill unit's and a run's (doc/design.md §6, §8.1) - is a key
 * ending in "::__lease__" with an expires_at, so one scan finds them all,
 * on every backend that can list its keys.  An expired lease blocks no one
 * (the next claim takes it over), but it says a runner stopped without
 * releasing it: killed, crashed, or its release failed.  Doctor shows them
 * as a warning so the operator looks at those units or runs.
 */

#define LEASE_SUFFIX "::__lease__"
#define PROBE_NAMES_MAX 10 /* leases named in the probe's reason */

typedef struct {
	faucet_strarray keys;
	uint64_t deadline_ms; /* 0 = none */
} lease_scan;

/* The scan's deadline has passed: a positive value stops the scan. */
#define SCAN_TIMED_OUT 1

static int past(uint64_t deadline_ms)
{
	return deadline_ms != 0 && faucet__now_ms() > deadline_ms;
}

static int collect_lease_key(const char *key, void *ctx)
{
	lease_scan *scan = ctx;
	size_t n = strlen(key), m = strlen(LEASE_SUFFIX);

	if (past(scan->deadline_ms))
		return SCAN_TIMED_OUT;
	if (n < m || strcmp(key + n - m, LEASE_SUFFIX) != 0)
		return 0;
	return faucet_strarray_push(&scan->keys, key) == 0 ? 0 : FAUCET_ENOMEM;
}

/* faucet_lease_list_expired with a deadline: FAUCET_ETIMEOUT once
 * deadline_ms (faucet__now_ms time, 0 = none) has passed. */
static int list_expired_until(faucet_store *s, int64_t now, uint64_t deadline_ms,
			      faucet_strarray *out)
{
	lease_scan scan = {{0}, deadline_ms};
	faucet_strarray *keys = &scan.keys;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = faucet_store_scan(s, "", collect_lease_key, &scan);
	for (size_t i = 0; rc == 0 && i < keys->count; i++) {
		if (past(deadline_ms)) {
			rc = SCAN_TIMED_OUT;
			break;
		}
		faucet_value *v = NULL;
		int64_t expires_at = 0;
		int mine = 0;

		rc = faucet_store_get(s, keys->strings[i], &v);
		/* Gone since the scan: released meanwhile. */
		if (rc == 0 && v != NULL)
			rc = lease_read(v, "", &expires_at, &mine);
		if (rc == 0 && v != NULL && expires_at <= now &&
		    faucet_strarray_push(out, keys->strings[i]) != 0)
			rc = FAUCET_ENOMEM;
		faucet_value_free(v);
	}
	faucet_strarray_dispose(keys);
	if (rc == SCAN_TIMED_OUT)
		rc = faucet_error_set(FAUCET_ETIMEOUT, "ran out of time looking for leases");
	if (rc != 0)
		faucet_strarray_dispose(out);
	return rc;
}

int faucet_lease_list_expired(faucet_store *s, int64_t now, faucet_strarray *out)
{
	return list_expired_until(s, now, 0, out);
}

int faucet_lease_probe(faucet_store *s, int64_t now, uint64_t timeout_ms,
		       faucet_check_report *report)
{
	static const char name[] = "expired leases";
	faucet_strarray expired = {0};
	faucet_buf reason = FAUCET_BUF_INIT;
	uint64_t start = faucet__now_ms();
	int rc;

	if (!faucet_store_supports_list(s))
		return faucet_check_report_add(report, name, FAUCET_PROBE_SKIP,
					       "this state store cannot enumerate its keys", 0, NULL);
	rc = list_expired_until(s, now, timeout_ms ? start + timeout_ms : 0, &expired);
	if (rc == FAUCET_ENOMEM)
		return rc;
	if (rc != 0) {
		char *why = faucet__sprintf("cannot look for leases: %s", faucet_error_last()->message);
		if (why == NULL)
			return FAUCET_ENOMEM;
		rc = faucet_check_report_add(report, name, FAUCET_PROBE_SKIP, why,
					     faucet__now_ms() - start, NULL);
		free(why);
		return rc;
	}
	if (expired.count == 0)
		return faucet_check_report_add(report, name, FAUCET_PROBE_PASS, NULL,
					       faucet__now_ms() - start, NULL);
	rc = faucet_buf_printf(&reason, "%zu expired lease(s): ", expired.count);
	for (size_t i = 0; rc == 0 && i < expired.count && i < PROBE_NAMES_MAX; i++)
		rc = faucet_buf_printf(&reason, "%s%s", i ? ", " : "", expired.strings[i]);
	if (rc == 0 && expired.count > PROBE_NAMES_MAX)
		rc = faucet_buf_printf(&reason, " and %zu more", expired.count - PROBE_NAMES_MAX);
	if (rc == 0)
		rc = faucet_check_report_add(
			report, name, FAUCET_PROBE_WARN, reason.ptr, faucet__now_ms() - start,
			"a runner stopped without releasing these (killed, crashed, or its release "
			"failed); they block no one, the next claim takes them over - check those "
			"units or runs, and `faucet lock break KEY` removes a lease");
	faucet_buf_dispose(&reason);
	faucet_strarray_dispose(&expired);
	return rc;
}
