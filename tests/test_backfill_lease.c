/*
 * test_backfill_lease.c - unit leases: one winner, expiry and take-over,
 * renewal, and a release that never removes someone else's lease - both
 * with compare-and-delete and, on a store without it, the two-step release.
 * Doctor's probe lists the leases whose expiry has passed.
 * Writes whose reply is lost (FAUCET_EUNKNOWN after the write landed) are
 * settled by reading the lease back and finding our holder id there.
 * Time is passed in, so expiry is tested without waiting.
 */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "backfill/backfill_internal.h"
#include <faucet/sys/store_backend.h>
#include <faucet/run.h>

#define UNIT "p::backfill::h::20260601T000000Z"
#define LEASE UNIT "::__lease__"

/* A memory store seen through a backend with compare-and-put but no
 * compare-and-delete. */
typedef struct {
	faucet_store_backend base;
	faucet_store *inner;
} no_cad_backend;

static faucet_store *inner_of(faucet_store_backend *b)
{
	return ((no_cad_backend *)b)->inner;
}

static int nc_get(faucet_store_backend *b, const char *key, faucet_value **out)
{
	return faucet_store_get(inner_of(b), key, out);
}

static int nc_put(faucet_store_backend *b, const char *key, const faucet_value *v)
{
	return faucet_store_put(inner_of(b), key, v);
}

static int nc_del(faucet_store_backend *b, const char *key)
{
	return faucet_store_delete(inner_of(b), key);
}

static int nc_cas(faucet_store_backend *b, const char *key, const faucet_value *expected,
		  const faucet_value *v, int *written)
{
	return faucet_store_compare_and_put(inner_of(b), key, expected, v, written);
}

static void nc_free(faucet_store_backend *b)
{
	faucet_store_free(inner_of(b));
	free(b);
}

static faucet_store *open_store(int with_cad)
{
	no_cad_backend *b;
	faucet_store *s = NULL;

	if (with_cad) {
		assert_int_equal(faucet_store_open_memory(&s), 0);
		assert_true(faucet_store_supports_compare_and_delete(s));
		return s;
	}
	b = calloc(1, sizeof(*b));
	assert_non_null(b);
	assert_int_equal(faucet_store_open_memory(&b->inner), 0);
	b->base.version = FAUCET_STORE_BACKEND_VERSION;
	b->base.name = "no-cad";
	b->base.get = nc_get;
	b->base.put = nc_put;
	b->base.del = nc_del;
	b->base.compare_and_put = nc_cas;
	b->base.free = nc_free;
	assert_int_equal(faucet_store_new(&s, &b->base), 0);
	assert_false(faucet_store_supports_compare_and_delete(s));
	return s;
}

static void one_claim_wins_until_it_expires_on(int with_cad)
{
	faucet_store *s = open_store(with_cad);
	faucet_bf_lease a, b;
	int claimed = 0, kept = 0;
	int64_t until = 0;

	/* Written anywhere in second 1000, a 60 s lease lasts at least 60 s. */
	assert_int_equal(faucet_bf__lease_claim(s, UNIT, "h:1:a", 1000, 60, &a, &claimed, NULL), 0);
	assert_true(claimed);
	tu_assert_value(s, LEASE, "{\"holder\":\"h:1:a\",\"expires_at\":1061}");

	/* A live lease is left alone, and says when it ends. */
	assert_int_equal(faucet_bf__lease_claim(s, UNIT, "h:2:b", 1060, 60, &b, &claimed, &until), 0);
	assert_false(claimed);
	assert_int_equal(until, 1061);
	assert_null(b.key);

	/* Renewal moves the expiry. */
	assert_int_equal(faucet_bf__lease_renew(s, &a, 1020, 60, &kept), 0);
	assert_true(kept);
	tu_assert_value(s, LEASE, "{\"holder\":\"h:1:a\",\"expires_at\":1081}");

	/* Once expired, another runner takes it over... */
	assert_int_equal(faucet_bf__lease_claim(s, UNIT, "h:2:b", 1081, 60, &b, &claimed, NULL), 0);
	assert_true(claimed);
	tu_assert_value(s, LEASE, "{\"holder\":\"h:2:b\",\"expires_at\":1142}");
	/* ...and the old holder can neither renew nor release it: seen from
	 * a clock behind (it thinks its lease live) its renewal finds the
	 * lease changed; from the same clock its lease is past and lost. */
	assert_int_equal(faucet_bf__lease_renew(s, &a, 1070, 60, &kept), 0);
	assert_false(kept);
	assert_int_equal(faucet_bf__lease_renew(s, &a, 1082, 60, &kept), FAUCET_ELEASELOST);
	assert_false(kept);
	assert_int_equal(faucet_bf__lease_release(s, &a), 0);
	tu_assert_value(s, LEASE, "{\"holder\":\"h:2:b\",\"expires_at\":1142}");

	/* The holder's release removes it. */
	assert_int_equal(faucet_bf__lease_release(s, &b), 0);
	tu_assert_value(s, LEASE, NULL);
	faucet_bf__lease_dispose(&a);
	faucet_bf__lease_dispose(&b);
	faucet_store_free(s);
}

/* A lease of ours past its expiry is not brought back by a renewal, even
 * with nobody's claim in its place: others may have judged it gone. */
static void a_lease_past_its_expiry_is_lost_not_renewed(void **state)
{
	faucet_store *s = NULL;
	faucet_bf_lease l;
	int claimed = 0, kept = 1;
	(void)state;

	assert_int_equal(faucet_store_open_memory(&s), 0);
	assert_int_equal(faucet_bf__lease_claim(s, UNIT, "h:1:a", 1000, 10, &l, &claimed, NULL), 0);
	assert_true(claimed);
	assert_int_equal(faucet_bf__lease_renew(s, &l, 1011, 10, &kept), FAUCET_ELEASELOST);
	assert_false(kept);
	assert_non_null(strstr(faucet_error_last()->message, "expired"));
	tu_assert_value(s, LEASE, "{\"holder\":\"h:1:a\",\"expires_at\":1011}");
	/* One second earlier it was still in force and is renewed. */
	assert_int_equal(faucet_bf__lease_renew(s, &l, 1010, 10, &kept), 0);
	assert_true(kept);
	tu_assert_value(s, LEASE, "{\"holder\":\"h:1:a\",\"expires_at\":1021}");
	assert_int_equal(faucet_bf__lease_release(s, &l), 0);
	faucet_bf__lease_dispose(&l);
	faucet_store_free(s);
}

static void one_claim_wins_until_it_expires(void **state)
{
	(void)state;
	one_claim_wins_until_it_expires_on(1);
}

static void one_claim_wins_until_it_expires_without_compare_and_delete(void **state)
{
	(void)state;
	one_claim_wins_until_it_expires_on(0);
}

static void unreadable_or_released_leases_can_be_claimed(void **state)
{
	faucet_store *s = NULL;
	faucet_bf_lease l;
	faucet_value *junk = tu_v("{\"holder\":\"x\"}");
	faucet_value *released = tu_v("{\"holder\":\"x\",\"expires_at\":0}");
	int claimed = 0;
	(void)state;

	assert_int_equal(faucet_store_open_memory(&s), 0);
	assert_int_equal(faucet_store_put(s, LEASE, junk), 0);
	assert_int_equal(faucet_bf__lease_claim(s, UNIT, "me", 5, 60, &l, &claimed, NULL), 0);
	assert_true(claimed);
	faucet_bf__lease_dispose(&l);
	assert_int_equal(faucet_store_put(s, LEASE, released), 0);
	assert_int_equal(faucet_bf__lease_claim(s, UNIT, "me", 5, 60, &l, &claimed, NULL), 0);
	assert_true(claimed);
	faucet_bf__lease_dispose(&l);
	faucet_value_free(junk);
	faucet_value_free(released);
	faucet_store_free(s);
}

/* A memory store whose lease writes misbehave on request: the next
 * `landed` compare-and-put/-delete calls on a lease key are applied and then
 * report FAUCET_EUNKNOWN (the reply was lost); the next `refused` ones are
 * not applied and report FAUCET_EUNAVAILABLE. */
typedef struct {
	faucet_store_backend base;
	faucet_store *inner;
	int landed, refused;
} flaky_backend;

static int is_lease(const char *key)
{
	size_t n = strlen(key), m = strlen("::__lease__");
	return n >= m && strcmp(key + n - m, "::__lease__") == 0;
}

/* The injected outcome of a lease write whose real outcome is `rc`. */
static int flaky_outcome(flaky_backend *f, const char *key, int rc)
{
	if (rc != 0 || !is_lease(key) || f->landed == 0)
		return rc;
	f->landed--;
	return faucet_error_set(FAUCET_EUNKNOWN, "reply lost writing %s", key);
}

static int flaky_refuses(flaky_backend *f, const char *key)
{
	if (!is_lease(key) || f->refused == 0)
		return 0;
	f->refused--;
	return faucet_error_set(FAUCET_EUNAVAILABLE, "connection dropped writing %s", key);
}

static int fl_cas(faucet_store_backend *b, const char *key, const faucet_value *expected,
		  const faucet_value *v, int *written)
{
	flaky_backend *f = (flaky_backend *)b;
	int rc = flaky_refuses(f, key);

	if (rc != 0)
		return rc;
	rc = faucet_store_compare_and_put(f->inner, key, expected, v, written);
	return flaky_outcome(f, key, rc);
}

static int fl_cad(faucet_store_backend *b, const char *key, const faucet_value *expected,
		  int *deleted)
{
	flaky_backend *f = (flaky_backend *)b;
	int rc = flaky_refuses(f, key);

	if (rc != 0)
		return rc;
	rc = faucet_store_compare_and_delete(f->inner, key, expected, deleted);
	return flaky_outcome(f, key, rc);
}

static faucet_store *open_flaky_with(flaky_backend **out, int with_cad)
{
	flaky_backend *b = calloc(1, sizeof(*b));
	faucet_store *s = NULL;

	assert_non_null(b);
	assert_int_equal(faucet_store_open_memory(&b->inner), 0);
	b->base.version = FAUCET_STORE_BACKEND_VERSION;
	b->base.name = "flaky";
	b->base.get = nc_get;
	b->base.put = nc_put;
	b->base.del = nc_del;
	b->base.compare_and_put = fl_cas;
	b->base.compare_and_delete = with_cad ? fl_cad : NULL;
	b->base.free = nc_free;
	assert_int_equal(faucet_store_new(&s, &b->base), 0);
	*out = b;
	return s;
}

static faucet_store *open_flaky(flaky_backend **out)
{
	return open_flaky_with(out, 1);
}

/* A claim applied by the server whose reply was lost is ours: the claimer
 * finds its holder id on re-reading, instead of failing or waiting a TTL. */
static void a_claim_whose_reply_was_lost_is_ours(void **state)
{
	flaky_backend *f;
	faucet_store *s = open_flaky(&f);
	faucet_bf_lease l;
	int claimed = 0, kept = 0;
	(void)state;

	f->landed = 1;
	assert_int_equal(faucet_bf__lease_claim(s, UNIT, "h:1:a", 1000, 60, &l, &claimed, NULL), 0);
	assert_true(claimed);
	assert_int_equal(l.expires_at, 1061);
	tu_assert_value(s, LEASE, "{\"holder\":\"h:1:a\",\"expires_at\":1061}");

	/* The same for a renewal... */
	f->landed = 1;
	assert_int_equal(faucet_bf__lease_renew(s, &l, 1020, 60, &kept), 0);
	assert_true(kept);
	assert_int_equal(l.expires_at, 1081);
	/* ...which goes on from the renewed value. */
	assert_int_equal(faucet_bf__lease_renew(s, &l, 1040, 60, &kept), 0);
	assert_true(kept);
	tu_assert_value(s, LEASE, "{\"holder\":\"h:1:a\",\"expires_at\":1101}");

	/* ...and for a release: the lease is gone, so it was released. */
	f->landed = 1;
	assert_int_equal(faucet_bf__lease_release(s, &l), 0);
	tu_assert_value(s, LEASE, NULL);
	faucet_bf__lease_dispose(&l);
	faucet_store_free(s);
}

/* A live lease that names our holder is an earlier claim of ours (say one
 * whose error made us put the unit aside): we take it again at once. */
static void our_own_live_lease_is_recognised(void **state)
{
	faucet_store *s = NULL;
	faucet_bf_lease l;
	int claimed = 0;
	int64_t until = 0;
	(void)state;

	assert_int_equal(faucet_store_open_memory(&s), 0);
	tu_put(s, LEASE, "{\"holder\":\"h:1:a\",\"expires_at\":1060}");
	assert_int_equal(faucet_bf__lease_claim(s, UNIT, "h:2:b", 1000, 60, &l, &claimed, &until), 0);
	assert_false(claimed);
	assert_int_equal(faucet_bf__lease_claim(s, UNIT, "h:1:a", 1000, 60, &l, &claimed, &until), 0);
	assert_true(claimed);
	tu_assert_value(s, LEASE, "{\"holder\":\"h:1:a\",\"expires_at\":1061}");
	faucet_bf__lease_dispose(&l);
	assert_int_equal(faucet_bf__lease_claim(s, UNIT, "h:1:a", 1010, 60, &l, &claimed, &until), 0);
	assert_true(claimed);
	tu_assert_value(s, LEASE, "{\"holder\":\"h:1:a\",\"expires_at\":1071}");
	assert_int_equal(faucet_bf__lease_release(s, &l), 0);
	tu_assert_value(s, LEASE, NULL);
	faucet_bf__lease_dispose(&l);
	faucet_store_free(s);
}

/* Writes that did not land keep their error, and the store as it was. */
static void lease_writes_that_did_not_land_are_errors(void **state)
{
	flaky_backend *f;
	faucet_store *s = open_flaky(&f);
	faucet_bf_lease l;
	int claimed = 1, kept = 1;
	(void)state;

	f->refused = 1;
	assert_int_equal(faucet_bf__lease_claim(s, UNIT, "h:1:a", 1000, 60, &l, &claimed, NULL),
			 FAUCET_EUNAVAILABLE);
	tu_assert_error_contains("connection dropped");
	assert_false(claimed);
	tu_assert_value(s, LEASE, NULL);

	assert_int_equal(faucet_bf__lease_claim(s, UNIT, "h:1:a", 1000, 60, &l, &claimed, NULL), 0);
	assert_true(claimed);
	f->refused = 1;
	assert_int_equal(faucet_bf__lease_renew(s, &l, 1020, 60, &kept), FAUCET_EUNAVAILABLE);
	tu_assert_error_contains("connection dropped");
	tu_assert_value(s, LEASE, "{\"holder\":\"h:1:a\",\"expires_at\":1061}");
	f->refused = 1;
	assert_int_equal(faucet_bf__lease_release(s, &l), FAUCET_EUNAVAILABLE);
	tu_assert_error_contains("connection dropped");
	tu_assert_value(s, LEASE, "{\"holder\":\"h:1:a\",\"expires_at\":1061}");
	assert_int_equal(faucet_bf__lease_release(s, &l), 0);
	tu_assert_value(s, LEASE, NULL);
	faucet_bf__lease_dispose(&l);
	faucet_store_free(s);
}

/* Doctor's view: every key ending in ::__lease__ (units' and runs') whose
 * expiry has passed or cannot be read, and nothing else. */
static void expired_leases_are_listed_and_warned_about(void **state)
{
	faucet_store *s = NULL;
	faucet_strarray keys = {0};
	faucet_check_report *r = NULL;
	const faucet_probe *p;
	char key[64];
	(void)state;

	assert_int_equal(faucet_store_open_memory(&s), 0);
	/* Nothing to see yet. */
	assert_int_equal(faucet_check_report_new(&r), 0);
	assert_int_equal(faucet_lease_probe(s, 1000, 0, r), 0);
	p = faucet_check_report_probe(r, 0);
	assert_string_equal(p->name, "expired leases");
	assert_int_equal(p->status, FAUCET_PROBE_PASS);
	faucet_check_report_free(r);

	tu_put(s, LEASE, "{\"holder\":\"h:1:a\",\"expires_at\":999}");
	tu_put(s, "p::r::__lease__", "{\"holder\":\"h:2:b\",\"expires_at\":1000,\"run\":\"x\"}");
	tu_put(s, "p::live::__lease__", "{\"holder\":\"h:3:c\",\"expires_at\":1001}");
	tu_put(s, "p::junk::__lease__", "[]");
	tu_put(s, "p::__lease__x", "{\"expires_at\":1}");
	tu_put(s, "p::other", "{\"expires_at\":1}");
	assert_int_equal(faucet_lease_list_expired(s, 1000, &keys), 0);
	tu_assert_strings(&keys, "p::backfill::h::20260601T000000Z::__lease__",
			  "p::junk::__lease__", "p::r::__lease__", NULL);
	faucet_strarray_dispose(&keys);

	assert_int_equal(faucet_check_report_new(&r), 0);
	assert_int_equal(faucet_lease_probe(s, 1000, 0, r), 0);
	p = faucet_check_report_probe(r, 0);
	assert_int_equal(p->status, FAUCET_PROBE_WARN);
	assert_int_equal(faucet_check_report_failed_count(r), 0);
	assert_string_equal(p->reason, "3 expired lease(s): "
			    "p::backfill::h::20260601T000000Z::__lease__, p::junk::__lease__, "
			    "p::r::__lease__");
	assert_non_null(p->hint);
	faucet_check_report_free(r);

	/* Many: the first ten are named, the rest counted. */
	for (int i = 0; i < 12; i++) {
		(void)snprintf(key, sizeof(key), "q::%02d::__lease__", i);
		tu_put(s, key, "{\"holder\":\"h\",\"expires_at\":1}");
	}
	assert_int_equal(faucet_check_report_new(&r), 0);
	assert_int_equal(faucet_lease_probe(s, 1000, 0, r), 0);
	p = faucet_check_report_probe(r, 0);
	assert_int_equal(p->status, FAUCET_PROBE_WARN);
	assert_non_null(strstr(p->reason, "15 expired lease(s): "));
	assert_non_null(strstr(p->reason, "q::06::__lease__ and 5 more"));
	faucet_check_report_free(r);
	faucet_store_free(s);
}

/* A store that cannot enumerate its keys cannot be searched: a skip. */
static void expired_leases_are_skipped_without_a_listing(void **state)
{
	faucet_store *s = open_store(0); /* the no-cad backend has no list */
	faucet_check_report *r = NULL;
	(void)state;

	assert_int_equal(faucet_check_report_new(&r), 0);
	assert_int_equal(faucet_lease_probe(s, 1000, 0, r), 0);
	assert_int_equal(faucet_check_report_probe(r, 0)->status, FAUCET_PROBE_SKIP);
	faucet_check_report_free(r);
	faucet_store_free(s);
}

/* A memory store whose reads each take a few milliseconds (a slow server):
 * the lease probe gives up at its deadline instead of holding doctor up. */
static int slow_get(faucet_store_backend *b, const char *key, faucet_value **out)
{
	struct timespec t0, t;

	/* Let time pass without sleeping: a read that simply takes long. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 3000000L);
	return nc_get(b, key, out);
}

static int slow_list(faucet_store_backend *b, const char *prefix, faucet_strarray *out)
{
	return faucet_store_list(inner_of(b), prefix, out);
}

static void the_lease_probe_keeps_to_its_time(void **state)
{
	no_cad_backend *b = calloc(1, sizeof(*b));
	faucet_store *s = NULL;
	faucet_check_report *r = NULL;
	const faucet_probe *p;
	(void)state;

	assert_non_null(b);
	assert_int_equal(faucet_store_open_memory(&b->inner), 0);
	b->base.version = FAUCET_STORE_BACKEND_VERSION;
	b->base.name = "slow";
	b->base.get = slow_get;
	b->base.put = nc_put;
	b->base.del = nc_del;
	b->base.list = slow_list;
	b->base.free = nc_free;
	assert_int_equal(faucet_store_new(&s, &b->base), 0);
	tu_put(s, "a::__lease__", "{\"holder\":\"h\",\"expires_at\":1}");
	tu_put(s, "b::__lease__", "{\"holder\":\"h\",\"expires_at\":1}");
	assert_int_equal(faucet_check_report_new(&r), 0);
	assert_int_equal(faucet_lease_probe(s, 1000, 1, r), 0);
	p = faucet_check_report_probe(r, 0);
	assert_int_equal(p->status, FAUCET_PROBE_SKIP);
	assert_non_null(strstr(p->reason, "ran out of time"));
	faucet_check_report_free(r);
	/* Without a limit it finds both. */
	assert_int_equal(faucet_check_report_new(&r), 0);
	assert_int_equal(faucet_lease_probe(s, 1000, 0, r), 0);
	assert_string_equal(faucet_check_report_probe(r, 0)->reason,
			    "2 expired lease(s): a::__lease__, b::__lease__");
	faucet_check_report_free(r);
	faucet_store_free(s);
}

/* The two-step release (no compare-and-delete) settles its hand-over the
 * same way: a lost reply still releases, a refused write keeps the lease
 * and says so. */
static void the_two_step_release_settles_lost_replies(void **state)
{
	flaky_backend *f;
	faucet_store *s = open_flaky_with(&f, 0);
	faucet_bf_lease l;
	int claimed = 0;
	(void)state;

	assert_int_equal(faucet_bf__lease_claim(s, UNIT, "h:1:a", 1000, 60, &l, &claimed, NULL), 0);
	assert_true(claimed);
	f->refused = 1;
	assert_int_equal(faucet_bf__lease_release(s, &l), FAUCET_EUNAVAILABLE);
	tu_assert_error_contains("connection dropped");
	tu_assert_value(s, LEASE, "{\"holder\":\"h:1:a\",\"expires_at\":1061}");
	f->landed = 1;
	assert_int_equal(faucet_bf__lease_release(s, &l), 0);
	tu_assert_value(s, LEASE, NULL);
	faucet_bf__lease_dispose(&l);
	faucet_store_free(s);
}

/* A run's lease (the same module, lease/lease.c): a release whose reply was
 * lost but which landed is a release, not an error - the lease is gone,
 * and the run's end succeeds.  A refused one is an error and the lease
 * stays. */
static void a_runs_release_settles_a_lost_reply(void **state)
{
	flaky_backend *f;
	faucet_store *s = open_flaky(&f);
	faucet_run *r = NULL;
	faucet_value *v = NULL;
	(void)state;

	assert_int_equal(faucet_run_begin(&r, s, "p", NULL), 0);
	tu_put(s, "p::default", "{\"v\":1}");
	f->landed = 1; /* the lease's compare-and-delete lands, its reply is lost */
	assert_int_equal(faucet_run_end(r, FAUCET_RUN_OK, 0, NULL), 0);
	assert_int_equal(faucet_store_get(s, "p::default::__lease__", &v), 0);
	assert_null(v);
	faucet_run_free(r);
	r = NULL;
	assert_int_equal(faucet_run_begin(&r, s, "p", NULL), 0);
	f->refused = 1;
	assert_int_not_equal(faucet_run_end(r, FAUCET_RUN_OK, 0, NULL), 0);
	tu_assert_error_contains("connection dropped");
	assert_int_equal(faucet_store_get(s, "p::default::__lease__", &v), 0);
	assert_non_null(v);
	faucet_value_free(v);
	faucet_run_free(r);
	faucet_store_free(s);
}

static void holder_names_host_pid_and_a_random_part(void **state)
{
	char *a = faucet_bf__lease_holder(), *b = faucet_bf__lease_holder();
	char pid[32];
	(void)state;

	assert_non_null(a);
	assert_non_null(b);
	snprintf(pid, sizeof(pid), ":%ld:", (long)getpid());
	assert_non_null(strstr(a, pid));
	assert_string_not_equal(a, b);
	assert_int_equal(strlen(strrchr(a, ':') + 1), 16);
	free(a);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(one_claim_wins_until_it_expires),
		cmocka_unit_test(one_claim_wins_until_it_expires_without_compare_and_delete),
		cmocka_unit_test(a_lease_past_its_expiry_is_lost_not_renewed),
		cmocka_unit_test(unreadable_or_released_leases_can_be_claimed),
		cmocka_unit_test(a_runs_release_settles_a_lost_reply),
		cmocka_unit_test(a_claim_whose_reply_was_lost_is_ours),
		cmocka_unit_test(our_own_live_lease_is_recognised),
		cmocka_unit_test(lease_writes_that_did_not_land_are_errors),
		cmocka_unit_test(expired_leases_are_listed_and_warned_about),
		cmocka_unit_test(expired_leases_are_skipped_without_a_listing),
		cmocka_unit_test(the_lease_probe_keeps_to_its_time),
		cmocka_unit_test(the_two_step_release_settles_lost_replies),
		cmocka_unit_test(holder_names_host_pid_and_a_random_part),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
