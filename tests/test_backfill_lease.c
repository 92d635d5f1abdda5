/*
 * test_backfill_lease.c - unit leases: one winner, expiry and take-over,
 * renewal, and a release that never removes someone else's lease - both
 * with compare-and-delete and, on a store without it, the two-step release.
 * Time is passed in, so expiry is tested without waiting.
 */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "backfill/backfill_internal.h"
#include <faucet/sys/store_backend.h>

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

	assert_int_equal(faucet_bf__lease_claim(s, UNIT, "h:1:a", 1000, 60, &a, &claimed, NULL), 0);
	assert_true(claimed);
	tu_assert_value(s, LEASE, "{\"holder\":\"h:1:a\",\"expires_at\":1060}");

	/* A live lease is left alone, and says when it ends. */
	assert_int_equal(faucet_bf__lease_claim(s, UNIT, "h:2:b", 1059, 60, &b, &claimed, &until), 0);
	assert_false(claimed);
	assert_int_equal(until, 1060);
	assert_null(b.key);

	/* Renewal moves the expiry. */
	assert_int_equal(faucet_bf__lease_renew(s, &a, 1020, 60, &kept), 0);
	assert_true(kept);
	tu_assert_value(s, LEASE, "{\"holder\":\"h:1:a\",\"expires_at\":1080}");

	/* Once expired, another runner takes it over... */
	assert_int_equal(faucet_bf__lease_claim(s, UNIT, "h:2:b", 1080, 60, &b, &claimed, NULL), 0);
	assert_true(claimed);
	tu_assert_value(s, LEASE, "{\"holder\":\"h:2:b\",\"expires_at\":1140}");
	/* ...and the old holder can neither renew nor release it. */
	assert_int_equal(faucet_bf__lease_renew(s, &a, 1081, 60, &kept), 0);
	assert_false(kept);
	assert_int_equal(faucet_bf__lease_release(s, &a), 0);
	tu_assert_value(s, LEASE, "{\"holder\":\"h:2:b\",\"expires_at\":1140}");

	/* The holder's release removes it. */
	assert_int_equal(faucet_bf__lease_release(s, &b), 0);
	tu_assert_value(s, LEASE, NULL);
	faucet_bf__lease_dispose(&a);
	faucet_bf__lease_dispose(&b);
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
		cmocka_unit_test(unreadable_or_released_leases_can_be_claimed),
		cmocka_unit_test(holder_names_host_pid_and_a_random_part),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
