/*
 * lease.c - the lease document and what runs and backfill units share
 * about it: building and reading it, whether it is in force, giving it up,
 * and doctor's look for leases left behind (faucet/lease.h, lease.h;
 * doc/design.md §6, §8.1).
 *
 * A holder id is unique to one runner or run ("{host}:{pid}:{random}"),
 * so a lease that carries ours is ours, whatever its expiry.  That settles
 * writes whose outcome we do not know (a server that applied the write but
 * lost the reply, FAUCET_EUNKNOWN): after a failed write we read the entry
 * back and look for our holder id.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "values/value_internal.h"
#include "lease/lease.h"
#include "store/open_internal.h"

/* ---- the document ------------------------------------------------------------------------- */

static int foreign_lease(const char *key)
{
	return faucet_error_set(FAUCET_ERROR,
				"%s holds something that is not a faucet lease (foreign JSON); "
				"refusing to use or overwrite it",
				key);
}

int faucet_lease_parse(const faucet_value *v, const char *key, faucet_lease *out)
{
	json_object *root, *e;
	int rc;

	if (out == NULL || v == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_lease_parse: NULL %s",
					out == NULL ? "out" : "value");
	memset(out, 0, sizeof(*out));
	if (key == NULL)
		key = "the lease";
	if ((rc = faucet_value__tree(v, &root)) != 0)
		return rc;
	if (!json_object_is_type(root, json_type_object) ||
	    !json_object_object_get_ex(root, "expires_at", &e) || !json_object_is_type(e, json_type_int))
		rc = -1;
	else if ((rc = faucet_value__member_string(root, "holder", 0, &out->holder)) == 0)
		rc = faucet_value__member_string(root, "run", 1, &out->run);
	if (rc != 0) {
		faucet_lease_dispose(out);
		/* Out of memory says nothing about the document. */
		return rc == FAUCET_ENOMEM ? rc : foreign_lease(key);
	}
	out->expires_at = json_object_get_int64(e);
	return 0;
}

void faucet_lease_dispose(faucet_lease *l)
{
	if (l == NULL)
		return;
	free(l->holder);
	free(l->run);
	memset(l, 0, sizeof(*l));
}

int faucet_lease_holder_dead(const faucet_lease *l)
{
	return l != NULL && faucet__holder_dead(l->holder);
}

int faucet__lease_write(faucet_store *s, const char *key, const faucet_value *expected,
			const faucet_value *doc, int64_t expires_at, int *written)
{
	return faucet__store_compare_and_put_expiring(s, key, expected, doc, expires_at, written);
}

int faucet__lease_doc(const char *holder, int64_t expires_at, const char *run, faucet_value **out)
{
	faucet_buf b = FAUCET_BUF_INIT;
	int rc;

	(void)faucet__buf_puts(&b, "{\"holder\":");
	faucet__json_string(&b, holder);
	(void)faucet__buf_printf(&b, ",\"expires_at\":%lld", (long long)expires_at);
	if (run != NULL) {
		(void)faucet__buf_puts(&b, ",\"run\":");
		faucet__json_string(&b, run);
	}
	(void)faucet__buf_putc(&b, '}');
	if (b.failed) {
		faucet__buf_dispose(&b);
		return FAUCET_ENOMEM;
	}
	rc = faucet_value_parse(out, b.ptr, b.len);
	faucet__buf_dispose(&b);
	return rc;
}

int64_t faucet__lease_until(int64_t now, int64_t ttl_s)
{
	return now + ttl_s + 1;
}

int faucet__lease_live(const faucet_lease *l, int64_t now)
{
	return l->expires_at > now && !faucet__holder_dead(l->holder);
}

/* ---- giving a lease up ---------------------------------------------------------------------- */

int faucet__lease_reread(faucet_store *s, const char *key, int err, faucet_value **now, char **why)
{
	int rc;

	*why = faucet__strdup(faucet_error_last()->message);
	*now = NULL;
	rc = faucet_store_get(s, key, now);
	if (rc != 0)
		rc = faucet_error_set(err, "%s", *why != NULL ? *why : "lease write failed");
	return rc;
}

/* Whether `v` is a lease naming `holder`. */
static int names(const faucet_value *v, const char *holder)
{
	faucet_lease l;
	int yes;

	if (v == NULL || faucet_lease_parse(v, NULL, &l) != 0) {
		faucet_error_clear();
		return 0;
	}
	yes = strcmp(l.holder, holder) == 0;
	faucet_lease_dispose(&l);
	return yes;
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
int faucet__lease_release(faucet_store *s, const char *key, const faucet_value *held,
			  const char *holder)
{
	faucet_value *released = NULL, *now = NULL;
	char *why = NULL;
	int rc, err, written = 0;

	if (faucet_store_supports_compare_and_delete(s)) {
		err = faucet_store_compare_and_delete(s, key, held, &written);
		if (err == 0)
			return 0;
		/* The delete may have landed though it reported an error: the
		 * lease is released unless our holder id is still there. */
		rc = faucet__lease_reread(s, key, err, &now, &why);
		if (rc == 0 && names(now, holder))
			rc = faucet_error_set(err, "%s", why != NULL ? why : "lease write failed");
		faucet_value_free(now);
		free(why);
		return rc;
	}
	rc = faucet__lease_doc(holder, 0, NULL, &released);
	if (rc != 0)
		return rc;
	err = faucet_store_compare_and_put(s, key, held, released, &written);
	if (err != 0) {
		/* Handed over after all, or still ours (the error stands)? */
		rc = faucet__lease_reread(s, key, err, &now, &why);
		if (rc == 0 && faucet_value_equal(now, held))
			rc = faucet_error_set(err, "%s", why != NULL ? why : "lease write failed");
		written = rc == 0 && faucet_value_equal(now, released);
		faucet_value_free(now);
		now = NULL;
	}
	/* Tidying up after the hand-over is best-effort: a released form left
	 * behind blocks no one (doctor lists it among the expired leases). */
	if (rc == 0 && written && faucet_store_get(s, key, &now) == 0 &&
	    faucet_value_equal(now, released))
		(void)faucet_store_delete(s, key);
	faucet_value_free(now);
	faucet_value_free(released);
	free(why);
	return rc;
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

#define LEASE_SUFFIX FAUCET__LEASE_SUFFIX
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
	return faucet__strarray_push(&scan->keys, key) == 0 ? 0 : FAUCET_ENOMEM;
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
		faucet_lease l;
		int64_t expires_at = 0;

		rc = faucet_store_get(s, keys->strings[i], &v);
		/* Gone since the scan: released meanwhile.  A value that is not a
		 * lease has no readable expiry: it counts as expired. */
		if (rc == 0 && v != NULL) {
			rc = faucet_lease_parse(v, keys->strings[i], &l);
			if (rc == 0)
				expires_at = l.expires_at;
			else if (rc != FAUCET_ENOMEM)
				rc = 0;
			faucet_lease_dispose(&l);
		}
		if (rc == 0 && v != NULL && expires_at <= now &&
		    faucet__strarray_push(out, keys->strings[i]) != 0)
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
	rc = faucet__buf_printf(&reason, "%zu expired lease(s): ", expired.count);
	for (size_t i = 0; rc == 0 && i < expired.count && i < PROBE_NAMES_MAX; i++)
		rc = faucet__buf_printf(&reason, "%s%s", i ? ", " : "", expired.strings[i]);
	if (rc == 0 && expired.count > PROBE_NAMES_MAX)
		rc = faucet__buf_printf(&reason, " and %zu more", expired.count - PROBE_NAMES_MAX);
	if (rc == 0)
		rc = faucet_check_report_add(
			report, name, FAUCET_PROBE_WARN, reason.ptr, faucet__now_ms() - start,
			"a runner stopped without releasing these (killed, crashed, or its release "
			"failed); they block no one, the next claim takes them over - check those "
			"units or runs, and `faucet lock break KEY` removes a lease");
	faucet__buf_dispose(&reason);
	faucet_strarray_dispose(&expired);
	return rc;
}
