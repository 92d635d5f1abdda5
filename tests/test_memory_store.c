/*
 * test_memory_store.c - the in-process store: get/put/delete, key
 * validation, listing in byte order, all-or-nothing batches, structural
 * compare-and-put, its doctor check, and compare-and-put under contention
 * from several threads.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static faucet_store *open_memory(void)
{
	faucet_store *s = NULL;

	assert_int_equal(faucet_store_open_memory(&s), 0);
	assert_string_equal(faucet_store_backend_name(s), "memory");
	return s;
}

static void compare_and_put_writes_only_over_the_expected_value(void **state)
{
	faucet_store *s = open_memory();
	faucet_value *a = tu_v("{\"v\":1}");
	int written = -1;
	(void)state;

	assert_true(faucet_store_supports_compare_and_put(s));
	assert_true(tu_cas(s, "k", NULL, "{\"v\":1}"));
	assert_false(tu_cas(s, "k", NULL, "{\"v\":2}"));
	assert_false(tu_cas(s, "k", "{\"v\":2}", "{\"v\":2}"));
	assert_true(tu_cas(s, "k", "{\"v\":1}", "{\"v\":2}"));
	tu_assert_value(s, "k", "{\"v\":2}");
	assert_int_equal(faucet_store_compare_and_put(s, "bad key!", NULL, a, &written),
			 FAUCET_EINVALID);
	assert_int_equal(written, 0);
	tu_assert_error_contains("illegal character");
	faucet_value_free(a);
	faucet_store_free(s);
}

static void compare_and_put_compares_json_values(void **state)
{
	faucet_store *s = open_memory();
	(void)state;

	tu_put(s, "k", "{\"a\":1,\"b\":2}");
	assert_true(tu_cas(s, "k", "{\"b\":2,\"a\":1}", "{\"a\":1,\"b\":3}"));
	tu_assert_value(s, "k", "{\"a\":1,\"b\":3}");
	/* A different value, or expecting "no entry" over one, writes nothing. */
	assert_false(tu_cas(s, "k", "{\"a\":1,\"b\":2}", "0"));
	assert_false(tu_cas(s, "k", NULL, "0"));
	/* Expecting a value where there is none writes nothing either. */
	assert_false(tu_cas(s, "absent", "1", "2"));
	tu_assert_value(s, "absent", NULL);
	faucet_store_free(s);
}

static void memory_get_returns_none_for_missing_key(void **state)
{
	faucet_store *s = open_memory();
	faucet_value *v = (faucet_value *)0x1;
	(void)state;

	assert_int_equal(faucet_store_get(s, "nope", &v), 0);
	assert_null(v);
	faucet_store_free(s);
}

static void memory_put_then_get_round_trips(void **state)
{
	faucet_store *s = open_memory();
	faucet_value *v = NULL;
	(void)state;

	tu_put(s, "k", "{\"cursor\":\"abc\",\"n\":7}");
	assert_int_equal(faucet_store_get(s, "k", &v), 0);
	assert_non_null(v);
	assert_string_equal(faucet_value_json(v), "{\"cursor\":\"abc\",\"n\":7}");
	faucet_value_free(v);
	/* Fidelity survives the store. */
	tu_put(s, "big", "[18446744073709551615,-9223372036854775808,0.1]");
	tu_assert_value(s, "big", "[18446744073709551615,-9223372036854775808,0.1]");
	assert_int_equal(faucet_store_get(s, "big", &v), 0);
	assert_string_equal(faucet_value_json(v), "[18446744073709551615,-9223372036854775808,0.1]");
	faucet_value_free(v);
	faucet_store_free(s);
}

static void memory_put_overwrites_previous_value(void **state)
{
	faucet_store *s = open_memory();
	(void)state;

	tu_put(s, "k", "1");
	tu_put(s, "k", "2");
	tu_assert_value(s, "k", "2");
	faucet_store_free(s);
}

static void memory_delete_makes_get_return_none(void **state)
{
	faucet_store *s = open_memory();
	(void)state;

	tu_put(s, "k", "\"v\"");
	assert_int_equal(faucet_store_delete(s, "k"), 0);
	tu_assert_value(s, "k", NULL);
	faucet_store_free(s);
}

static void memory_delete_missing_key_is_ok(void **state)
{
	faucet_store *s = open_memory();
	(void)state;

	assert_int_equal(faucet_store_delete(s, "absent"), 0);
	faucet_store_free(s);
}

static void memory_rejects_invalid_keys(void **state)
{
	faucet_store *s = open_memory();
	faucet_value *v = tu_v("1"), *got = NULL;
	faucet_strarray all = {NULL, 0};
	(void)state;

	assert_int_equal(faucet_store_get(s, "a b", &got), FAUCET_EINVALID);
	assert_null(got);
	assert_int_equal(faucet_store_put(s, "a b", v), FAUCET_EINVALID);
	tu_assert_error_contains("state key 'a b'");
	assert_int_equal(faucet_store_delete(s, "a b"), FAUCET_EINVALID);
	assert_int_equal(faucet_store_put(s, "", v), FAUCET_EINVALID);
	assert_int_equal(faucet_store_put(s, "k", NULL), FAUCET_EINVALID);
	assert_int_equal(faucet_store_list(s, "", &all), 0);
	assert_int_equal(all.count, 0); /* nothing was stored */
	faucet_strarray_dispose(&all);
	faucet_value_free(v);
	faucet_store_free(s);
}

static void memory_check_passes(void **state)
{
	faucet_store *s = open_memory();
	faucet_check_report *report = NULL;
	(void)state;

	assert_int_equal(faucet_store_check(s, NULL, &report), 0);
	assert_int_equal(faucet_check_report_failed_count(report), 0);
	assert_true(faucet_check_report_count(report) > 0);
	for (size_t i = 0; i < faucet_check_report_count(report); i++)
		assert_int_equal(faucet_check_report_probe(report, i)->status, FAUCET_PROBE_PASS);
	faucet_check_report_free(report);
	faucet_store_free(s);
}

static void memory_lists_by_prefix_sorted_and_batches_atomically(void **state)
{
	static const char *const keys[] = {"p::b", "p::a", "q::a", "p::a::__sla__"};
	faucet_store *s = open_memory();
	faucet_strarray listed = {NULL, 0};
	faucet_value *one = tu_v("1"), *two = tu_v("2");
	faucet_entry bad[] = {{"p::x", one}, {"../bad", two}};
	faucet_entry good[] = {{"p::x", one}};
	char quoted[32];
	(void)state;

	for (size_t i = 0; i < 4; i++) {
		snprintf(quoted, sizeof(quoted), "\"%s\"", keys[i]);
		tu_put(s, keys[i], quoted);
	}
	assert_true(faucet_store_supports_list(s));
	assert_int_equal(faucet_store_list(s, "p::", &listed), 0);
	tu_assert_strings(&listed, "p::a", "p::a::__sla__", "p::b", NULL);
	faucet_strarray_dispose(&listed);
	assert_int_equal(faucet_store_list(s, NULL, &listed), 0);
	tu_assert_strings(&listed, "p::a", "p::a::__sla__", "p::b", "q::a", NULL);
	faucet_strarray_dispose(&listed);
	assert_int_equal(faucet_store_list(s, "zzz", &listed), 0);
	assert_int_equal(listed.count, 0);
	faucet_strarray_dispose(&listed);

	assert_true(faucet_store_supports_atomic_batch(s));
	assert_int_equal(faucet_store_put_batch(s, bad, 2), FAUCET_EINVALID);
	tu_assert_value(s, "p::x", NULL); /* nothing written */
	assert_int_equal(faucet_store_put_batch(s, good, 1), 0);
	tu_assert_value(s, "p::x", "1");
	assert_int_equal(faucet_store_put_batch(s, NULL, 0), 0);
	faucet_value_free(one);
	faucet_value_free(two);
	faucet_store_free(s);
}

static void list_is_in_byte_order(void **state)
{
	static const char *const keys[] = {"p::b", "p::B", "p::a-", "p::a", "p::a_", "p::a.", "p::A"};
	faucet_store *s = open_memory();
	faucet_strarray listed = {NULL, 0};
	(void)state;

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		tu_put(s, keys[i], "0");
	assert_int_equal(faucet_store_list(s, "p::", &listed), 0);
	tu_assert_strings(&listed, "p::A", "p::B", "p::a", "p::a-", "p::a.", "p::a_", "p::b", NULL);
	faucet_strarray_dispose(&listed);
	faucet_store_free(s);
}

/* ---- contention ------------------------------------------------------- */

#define THREADS 8
#define INCREMENTS 250

typedef struct {
	faucet_store *store;
	pthread_barrier_t *start;
	int failures;
} worker_arg;

/* Read the counter, then compare-and-put counter + 1 until it sticks. */
static void *increment_worker(void *p)
{
	worker_arg *arg = p;

	(void)pthread_barrier_wait(arg->start);
	for (int i = 0; i < INCREMENTS; i++) {
		for (;;) {
			faucet_value *cur = NULL, *next = NULL;
			char text[32];
			long long n;
			int written = 0;

			if (faucet_store_get(arg->store, "counter", &cur) != 0 || cur == NULL) {
				arg->failures++;
				return NULL;
			}
			n = strtoll(faucet_value_json(cur), NULL, 10);
			snprintf(text, sizeof(text), "%lld", n + 1);
			if (faucet_value_parse(&next, text, strlen(text)) != 0 ||
			    faucet_store_compare_and_put(arg->store, "counter", cur, next, &written) != 0)
				arg->failures++;
			faucet_value_free(cur);
			faucet_value_free(next);
			if (written || arg->failures > 0)
				break;
		}
	}
	return NULL;
}

static void compare_and_put_is_atomic_across_threads(void **state)
{
	faucet_store *s = open_memory();
	pthread_barrier_t start;
	pthread_t threads[THREADS];
	worker_arg args[THREADS];
	char want[16];
	(void)state;

	tu_put(s, "counter", "0");
	assert_int_equal(pthread_barrier_init(&start, NULL, THREADS), 0);
	for (int i = 0; i < THREADS; i++) {
		args[i] = (worker_arg){s, &start, 0};
		assert_int_equal(pthread_create(&threads[i], NULL, increment_worker, &args[i]), 0);
	}
	for (int i = 0; i < THREADS; i++) {
		assert_int_equal(pthread_join(threads[i], NULL), 0);
		assert_int_equal(args[i].failures, 0);
	}
	pthread_barrier_destroy(&start);
	snprintf(want, sizeof(want), "%d", THREADS * INCREMENTS);
	tu_assert_value(s, "counter", want);
	faucet_store_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(compare_and_put_writes_only_over_the_expected_value),
		cmocka_unit_test(compare_and_put_compares_json_values),
		cmocka_unit_test(memory_get_returns_none_for_missing_key),
		cmocka_unit_test(memory_put_then_get_round_trips),
		cmocka_unit_test(memory_put_overwrites_previous_value),
		cmocka_unit_test(memory_delete_makes_get_return_none),
		cmocka_unit_test(memory_delete_missing_key_is_ok),
		cmocka_unit_test(memory_rejects_invalid_keys),
		cmocka_unit_test(memory_check_passes),
		cmocka_unit_test(memory_lists_by_prefix_sorted_and_batches_atomically),
		cmocka_unit_test(list_is_in_byte_order),
		cmocka_unit_test(compare_and_put_is_atomic_across_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
