/*
 * test_backfill_marker.c - the progress marker: its JSON form, its keys,
 * splitting a plan against it, corrupt documents, and compare-and-put merges
 * from many threads that must not lose a single outcome.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include <faucet/sys/store_backend.h>

static faucet_backfill_plan *days(int n)
{
	char to[32];
	faucet_backfill_range r = {"2026-06-01", to, "1d", "UTC", NULL};
	faucet_backfill_plan *p = NULL;

	(void)snprintf(to, sizeof(to), "2026-06-%02d", n + 1);
	assert_int_equal(faucet_backfill_plan_new(&p, &r), 0);
	assert_int_equal(faucet_backfill_plan_count(p), (size_t)n);
	return p;
}

static void marker_round_trips(void **state)
{
	faucet_backfill_marker *m = NULL, *back = NULL;
	faucet_value *v = NULL;
	const char *err = NULL;
	(void)state;

	assert_int_equal(faucet_backfill_marker_new(&m, "2026-06-01|2026-07-01|1d"), 0);
	assert_int_equal(faucet_backfill_marker_mark_done(m, "20260601T000000Z"), 0);
	assert_int_equal(faucet_backfill_marker_mark_failed(m, "20260602T000000Z",
							    "connection refused"), 0);
	assert_int_equal(faucet_backfill_marker_to_value(m, &v), 0);
	assert_string_equal(faucet_value_json(v),
			    "{\"descriptor\":\"2026-06-01|2026-07-01|1d\",\"units\":{"
			    "\"20260601T000000Z\":{\"status\":\"done\"},"
			    "\"20260602T000000Z\":{\"status\":\"failed\",\"error\":\"connection refused\"}}}");
	assert_int_equal(faucet_backfill_marker_from_value(&back, v), 0);
	assert_true(faucet_backfill_marker_equal(back, m));
	assert_int_equal(faucet_backfill_marker_done_count(back), 1);
	assert_int_equal(faucet_backfill_marker_failed_count(back), 1);
	assert_int_equal(faucet_backfill_marker_status(back, "20260602T000000Z", &err),
			 FAUCET_BACKFILL_FAILED);
	assert_string_equal(err, "connection refused");
	assert_int_equal(faucet_backfill_marker_status(back, "20260603T000000Z", &err),
			 FAUCET_BACKFILL_PENDING);
	assert_null(err);
	faucet_backfill_marker_free(back);
	faucet_value_free(v);
	faucet_backfill_marker_free(m);

	/* What the original writes is read: no "units", a failure without an
	 * error, members it may add later. */
	v = tu_v("{\"descriptor\":\"d\",\"units\":{\"u\":{\"status\":\"failed\"}},\"extra\":1}");
	assert_int_equal(faucet_backfill_marker_from_value(&back, v), 0);
	assert_int_equal(faucet_backfill_marker_status(back, "u", &err), FAUCET_BACKFILL_FAILED);
	assert_string_equal(err, "");
	faucet_backfill_marker_free(back);
	faucet_value_free(v);
	v = tu_v("{\"descriptor\":\"d\"}");
	assert_int_equal(faucet_backfill_marker_from_value(&back, v), 0);
	assert_int_equal(faucet_backfill_marker_done_count(back), 0);
	faucet_backfill_marker_free(back);
	faucet_value_free(v);
}

/* Every field the marker writes, and text that needs escaping, as exact
 * text: the marker is rewritten after every unit, and a reader (the
 * original among them) must find the same document whatever builds it. */
static void marker_text_is_exact(void **state)
{
	faucet_backfill_marker *m = NULL, *back = NULL;
	faucet_value *v = NULL;
	(void)state;

	assert_int_equal(faucet_backfill_marker_new(&m, "a/b|\"q\"|1h"), 0);
	assert_int_equal(faucet_backfill_marker_set_timezone(m, "America/New_York"), 0);
	assert_int_equal(faucet_backfill_marker_mark_failed(m, "u2", "bad \"x\"\n\ttab\\ \x01 \xc3\xa9 /"), 0);
	assert_int_equal(faucet_backfill_marker_set_attempt(m, "u2", 3, "2026-06-01T00:00:00Z",
							    "2026-06-01T00:00:01Z"), 0);
	assert_int_equal(faucet_backfill_marker_mark_done(m, "u1"), 0);
	assert_int_equal(faucet_backfill_marker_set_attempt(m, "u1", 10, NULL, "2026-06-01T00:00:02Z"), 0);
	assert_int_equal(faucet_backfill_marker_mark_done(m, "u3"), 0);
	assert_int_equal(faucet_backfill_marker_set_attempt(m, "u3", 1000000000u, NULL, NULL), 0);
	/* One more could not be read back: refused, the unit as it was. */
	assert_int_equal(faucet_backfill_marker_set_attempt(m, "u3", 1000000001u, "x", "y"),
			 FAUCET_EINVALID);
	assert_int_equal(faucet_backfill_marker_to_value(m, &v), 0);
	assert_string_equal(faucet_value_json(v),
			    "{\"descriptor\":\"a/b|\\\"q\\\"|1h\",\"timezone\":\"America/New_York\","
			    "\"units\":{"
			    "\"u1\":{\"status\":\"done\",\"attempts\":10,\"ended_at\":\"2026-06-01T00:00:02Z\"},"
			    "\"u2\":{\"status\":\"failed\",\"error\":\"bad \\\"x\\\"\\n\\ttab\\\\ \\u0001 \xc3\xa9 /\","
			    "\"attempts\":3,\"started_at\":\"2026-06-01T00:00:00Z\","
			    "\"ended_at\":\"2026-06-01T00:00:01Z\"},"
			    "\"u3\":{\"status\":\"done\",\"attempts\":1000000000}}}");
	assert_int_equal(faucet_backfill_marker_from_value(&back, v), 0);
	assert_true(faucet_backfill_marker_equal(back, m));
	faucet_backfill_marker_free(back);
	faucet_value_free(v);
	faucet_backfill_marker_free(m);
}

static void keys_are_valid_and_namespaced(void **state)
{
	char *marker = faucet_backfill_marker_key("orders", "0123456789abcdef");
	char *unit = faucet_backfill_unit_key("orders", "0123456789abcdef", "20260601T000000Z");
	char *legacy = faucet_backfill_legacy_unit_key("orders", "20260601T000000Z");
	(void)state;

	assert_string_equal(marker, "orders::__backfill__::0123456789abcdef");
	assert_int_equal(faucet_validate_key(marker), 0);
	assert_string_equal(unit, "orders::backfill::0123456789abcdef::20260601T000000Z");
	assert_int_equal(faucet_validate_key(unit), 0);
	assert_string_equal(legacy, "orders::backfill::20260601T000000Z");
	assert_int_equal(faucet_validate_key(legacy), 0);
	/* No unit key can be the live bookmark {pipeline}::{row}. */
	assert_string_not_equal(unit, "orders::default");
	assert_string_not_equal(legacy, "orders::default");
	free(marker);
	free(unit);
	free(legacy);
}

static void split_remaining_skips_done_retries_failed(void **state)
{
	faucet_backfill_plan *p = days(3);
	faucet_backfill_marker *m = NULL;
	size_t *todo = NULL, n = 0, skipped = 0;
	(void)state;

	assert_int_equal(faucet_backfill_marker_new(&m, "d"), 0);
	assert_int_equal(faucet_backfill_marker_mark_done(m, faucet_backfill_plan_unit(p, 0)->id), 0);
	assert_int_equal(faucet_backfill_marker_mark_failed(m, faucet_backfill_plan_unit(p, 1)->id,
							    "boom"), 0);
	assert_int_equal(faucet_backfill_split(p, m, &todo, &n, &skipped), 0);
	assert_int_equal(skipped, 1);
	assert_int_equal(n, 2);
	assert_int_equal(todo[0], 1);
	assert_int_equal(todo[1], 2);
	free(todo);
	/* failed -> done leaves the failed set */
	assert_int_equal(faucet_backfill_marker_mark_done(m, faucet_backfill_plan_unit(p, 1)->id), 0);
	assert_int_equal(faucet_backfill_marker_failed_count(m), 0);
	assert_int_equal(faucet_backfill_marker_done_count(m), 2);
	faucet_backfill_marker_free(m);
	faucet_backfill_plan_free(p);
}

static void fresh_marker_runs_everything(void **state)
{
	faucet_backfill_plan *p = days(2);
	faucet_backfill_marker *m = NULL;
	size_t *todo = NULL, n = 0, skipped = 7;
	(void)state;

	assert_int_equal(faucet_backfill_marker_new(&m, "d"), 0);
	assert_int_equal(faucet_backfill_split(p, m, &todo, &n, &skipped), 0);
	assert_int_equal(n, 2);
	assert_int_equal(skipped, 0);
	assert_int_equal(todo[0], 0);
	assert_int_equal(todo[1], 1);
	free(todo);
	assert_int_equal(faucet_backfill_split(p, NULL, &todo, &n, &skipped), 0);
	assert_int_equal(n, 2);
	free(todo);
	faucet_backfill_marker_free(m);
	faucet_backfill_plan_free(p);
}

static void corrupt_markers_are_config_errors(void **state)
{
	static const char *bad[] = {
		"[]", "{}", "{\"descriptor\":1}", "{\"descriptor\":\"d\",\"units\":[]}",
		"{\"descriptor\":\"d\",\"units\":{\"u\":\"done\"}}",
		"{\"descriptor\":\"d\",\"units\":{\"u\":{}}}",
		"{\"descriptor\":\"d\",\"units\":{\"u\":{\"status\":\"running\"}}}",
		"{\"descriptor\":\"d\",\"units\":{\"u\":{\"status\":\"failed\",\"error\":5}}}",
	};
	faucet_store *s = NULL;
	faucet_backfill_marker *m = (faucet_backfill_marker *)0x1;
	(void)state;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		faucet_value *v = tu_v(bad[i]);
		assert_int_equal(faucet_backfill_marker_from_value(&m, v), FAUCET_ECONFIG);
		assert_null(m);
		tu_assert_error_contains("backfill marker");
		faucet_value_free(v);
	}
	/* Through the store: the error names the key, and a record leaves the
	 * corrupt document alone. */
	assert_int_equal(faucet_store_open_memory(&s), 0);
	{
		faucet_value *v = tu_v("{\"descriptor\":\"d\",\"units\":{\"u\":{}}}");
		assert_int_equal(faucet_store_put(s, "p::__backfill__::h", v), 0);
		faucet_value_free(v);
	}
	assert_int_equal(faucet_backfill_marker_load(s, "p::__backfill__::h", &m), FAUCET_ECONFIG);
	tu_assert_error_contains("p::__backfill__::h");
	assert_int_equal(faucet_backfill_marker_record(s, "p::__backfill__::h", "d", "x", NULL, NULL),
			 FAUCET_ECONFIG);
	tu_assert_value(s, "p::__backfill__::h", "{\"descriptor\":\"d\",\"units\":{\"u\":{}}}");
	/* A marker of another range is not merged into. */
	{
		faucet_value *v = tu_v("{\"descriptor\":\"other\",\"units\":{}}");
		assert_int_equal(faucet_store_put(s, "p::__backfill__::h2", v), 0);
		faucet_value_free(v);
	}
	assert_int_equal(faucet_backfill_marker_record(s, "p::__backfill__::h2", "d", "x", NULL, NULL),
			 FAUCET_ECONFIG);
	tu_assert_error_contains("another range");
	faucet_store_free(s);
}

static void record_creates_merges_and_keeps_done(void **state)
{
	faucet_store *s = NULL;
	faucet_backfill_marker *m = NULL;
	(void)state;

	assert_int_equal(faucet_store_open_memory(&s), 0);
	assert_int_equal(faucet_backfill_marker_load(s, "p::__backfill__::h", &m), 0);
	assert_null(m);
	assert_int_equal(faucet_backfill_marker_record(s, "p::__backfill__::h", "d", "a", NULL, NULL), 0);
	assert_int_equal(faucet_backfill_marker_record(s, "p::__backfill__::h", "d", "b", "exit status 1: x",
						       &m), 0);
	assert_int_equal(faucet_backfill_marker_done_count(m), 1);
	assert_int_equal(faucet_backfill_marker_failed_count(m), 1);
	faucet_backfill_marker_free(m);
	/* A failure never hides a finished unit; a success replaces a failure. */
	assert_int_equal(faucet_backfill_marker_record(s, "p::__backfill__::h", "d", "a", "late", NULL), 0);
	assert_int_equal(faucet_backfill_marker_record(s, "p::__backfill__::h", "d", "b", NULL, NULL), 0);
	tu_assert_value(s, "p::__backfill__::h",
			"{\"descriptor\":\"d\",\"units\":{\"a\":{\"status\":\"done\"},"
			"\"b\":{\"status\":\"done\"}}}");
	faucet_store_free(s);
}

/* Our added fields: attempts counted per outcome, the last attempt's times,
 * the zone recorded once; a late failure of a done unit changes nothing; a
 * marker of the original (no added fields) reads as 0 attempts; a wrongly
 * typed added field is a shape error. */
static void record_outcome_counts_attempts(void **state)
{
	faucet_store *s = NULL;
	faucet_backfill_marker *m = NULL, *back = NULL;
	faucet_backfill_outcome o;
	faucet_backfill_unit_info info;
	faucet_value *v = NULL;
	(void)state;

	assert_int_equal(faucet_store_open_memory(&s), 0);
	memset(&o, 0, sizeof(o));
	o.descriptor = "d";
	o.timezone = "Europe/Berlin";
	o.unit = "u";
	o.error = "exit status 3: disk full";
	o.started_at = "2026-06-06T00:00:00+00:00";
	o.ended_at = "2026-06-06T00:00:05+00:00";
	assert_int_equal(faucet_backfill_marker_record_outcome(s, "p::__backfill__::h", &o, NULL), 0);
	o.timezone = "UTC"; /* the first zone recorded stays */
	o.started_at = "2026-06-07T00:00:00+00:00";
	o.ended_at = "2026-06-07T00:00:09+00:00";
	assert_int_equal(faucet_backfill_marker_record_outcome(s, "p::__backfill__::h", &o, &m), 0);
	assert_int_equal(faucet_backfill_marker_unit_info(m, "u", &info), 1);
	assert_int_equal(info.status, FAUCET_BACKFILL_FAILED);
	assert_int_equal(info.attempts, 2);
	assert_string_equal(info.started_at, "2026-06-07T00:00:00+00:00");
	assert_string_equal(info.ended_at, "2026-06-07T00:00:09+00:00");
	assert_string_equal(faucet_backfill_marker_timezone(m), "Europe/Berlin");
	faucet_backfill_marker_free(m);
	o.error = NULL;
	assert_int_equal(faucet_backfill_marker_record_outcome(s, "p::__backfill__::h", &o, NULL), 0);
	o.error = "late";
	assert_int_equal(faucet_backfill_marker_record_outcome(s, "p::__backfill__::h", &o, NULL), 0);
	tu_assert_value(s, "p::__backfill__::h",
			"{\"descriptor\":\"d\",\"timezone\":\"Europe/Berlin\",\"units\":{\"u\":"
			"{\"status\":\"done\",\"attempts\":3,\"started_at\":\"2026-06-07T00:00:00+00:00\","
			"\"ended_at\":\"2026-06-07T00:00:09+00:00\"}}}");
	/* Round trip through a value. */
	assert_int_equal(faucet_backfill_marker_load(s, "p::__backfill__::h", &m), 0);
	assert_int_equal(faucet_backfill_marker_to_value(m, &v), 0);
	assert_int_equal(faucet_backfill_marker_from_value(&back, v), 0);
	assert_true(faucet_backfill_marker_equal(m, back));
	faucet_value_free(v);
	faucet_backfill_marker_free(back);
	faucet_backfill_marker_free(m);
	/* The original's marker. */
	v = tu_v("{\"descriptor\":\"d\",\"units\":{\"u\":{\"status\":\"failed\",\"error\":\"x\"}}}");
	assert_int_equal(faucet_backfill_marker_from_value(&m, v), 0);
	assert_int_equal(faucet_backfill_marker_unit_info(m, "u", &info), 1);
	assert_int_equal(info.attempts, 0);
	assert_null(info.started_at);
	assert_null(faucet_backfill_marker_timezone(m));
	assert_int_equal(faucet_backfill_marker_unit_info(m, "absent", &info), 0);
	assert_int_equal(info.status, FAUCET_BACKFILL_PENDING);
	faucet_backfill_marker_free(m);
	faucet_value_free(v);
	v = tu_v("{\"descriptor\":\"d\",\"units\":{\"u\":{\"status\":\"done\",\"attempts\":\"2\"}}}");
	assert_int_equal(faucet_backfill_marker_from_value(&m, v), FAUCET_ECONFIG);
	faucet_value_free(v);
	v = tu_v("{\"descriptor\":\"d\",\"units\":{\"u\":{\"status\":\"done\",\"ended_at\":5}}}");
	assert_int_equal(faucet_backfill_marker_from_value(&m, v), FAUCET_ECONFIG);
	faucet_value_free(v);
	/* A count at the reader's limit stays there: the outcome is still
	 * recorded, and the marker still reads. */
	tu_put(s, "p::__backfill__::h",
	       "{\"descriptor\":\"d\",\"units\":{\"u\":{\"status\":\"failed\",\"error\":\"x\","
	       "\"attempts\":1000000000}}}");
	o.error = "again";
	assert_int_equal(faucet_backfill_marker_record_outcome(s, "p::__backfill__::h", &o, NULL), 0);
	assert_int_equal(faucet_backfill_marker_load(s, "p::__backfill__::h", &m), 0);
	assert_int_equal(faucet_backfill_marker_unit_info(m, "u", &info), 1);
	assert_int_equal(info.attempts, 1000000000u);
	assert_string_equal(info.error, "again");
	faucet_backfill_marker_free(m);
	faucet_store_free(s);
}

/* ---- concurrent merges ---------------------------------------------------- */

#define THREADS 8
#define UNITS_PER_THREAD 40

typedef struct {
	faucet_store *store;
	int index;
	pthread_barrier_t *go;
} merge_job;

static void *merge_thread(void *arg)
{
	merge_job *job = arg;
	char unit[32];

	pthread_barrier_wait(job->go);
	for (int i = 0; i < UNITS_PER_THREAD; i++) {
		(void)snprintf(unit, sizeof(unit), "t%d-u%03d", job->index, i);
		if (faucet_backfill_marker_record(job->store, "p::__backfill__::h", "d", unit,
						  i % 3 == 0 ? "boom" : NULL, NULL) != 0)
			return (void *)1;
	}
	return NULL;
}

static void concurrent_merges_lose_nothing(void **state)
{
	faucet_store *s = NULL;
	faucet_backfill_marker *m = NULL;
	pthread_barrier_t go;
	pthread_t th[THREADS];
	merge_job jobs[THREADS];
	void *res;
	size_t failed_per_thread = (UNITS_PER_THREAD + 2) / 3;
	(void)state;

	assert_int_equal(faucet_store_open_memory(&s), 0);
	assert_true(faucet_store_supports_compare_and_put(s));
	assert_int_equal(pthread_barrier_init(&go, NULL, THREADS), 0);
	for (int i = 0; i < THREADS; i++) {
		jobs[i] = (merge_job){s, i, &go};
		assert_int_equal(pthread_create(&th[i], NULL, merge_thread, &jobs[i]), 0);
	}
	for (int i = 0; i < THREADS; i++) {
		assert_int_equal(pthread_join(th[i], &res), 0);
		assert_null(res);
	}
	pthread_barrier_destroy(&go);
	assert_int_equal(faucet_backfill_marker_load(s, "p::__backfill__::h", &m), 0);
	assert_non_null(m);
	assert_int_equal(faucet_backfill_marker_failed_count(m), THREADS * failed_per_thread);
	assert_int_equal(faucet_backfill_marker_done_count(m),
			 THREADS * (UNITS_PER_THREAD - failed_per_thread));
	for (int t = 0; t < THREADS; t++) {
		for (int i = 0; i < UNITS_PER_THREAD; i++) {
			char unit[32];
			(void)snprintf(unit, sizeof(unit), "t%d-u%03d", t, i);
			assert_int_equal(faucet_backfill_marker_status(m, unit, NULL),
					 i % 3 == 0 ? FAUCET_BACKFILL_FAILED : FAUCET_BACKFILL_DONE);
		}
	}
	faucet_backfill_marker_free(m);
	faucet_store_free(s);
}

/* A store whose compare-and-put always loses, as if other writers changed
 * the marker between every read and write: reads and plain writes go to a
 * memory store. */
typedef struct {
	faucet_store_backend base;
	faucet_store *inner;
	int attempts;
} losing_backend;

static int losing_get(faucet_store_backend *b, const char *key, faucet_value **out)
{
	return faucet_store_get(((losing_backend *)b)->inner, key, out);
}

static int losing_put(faucet_store_backend *b, const char *key, const faucet_value *v)
{
	return faucet_store_put(((losing_backend *)b)->inner, key, v);
}

static int losing_del(faucet_store_backend *b, const char *key)
{
	return faucet_store_delete(((losing_backend *)b)->inner, key);
}

static int losing_cas(faucet_store_backend *b, const char *key, const faucet_value *expected,
		      const faucet_value *value, int *written)
{
	(void)key;
	(void)expected;
	(void)value;
	((losing_backend *)b)->attempts++;
	*written = 0;
	return 0;
}

static void losing_free(faucet_store_backend *b)
{
	faucet_store_free(((losing_backend *)b)->inner);
	free(b);
}

static void record_that_keeps_losing_is_contention(void **state)
{
	faucet_store_backend init = FAUCET_STORE_BACKEND_INIT;
	losing_backend *lb = calloc(1, sizeof(*lb));
	faucet_store *s;

	(void)state;
	assert_non_null(lb);
	lb->base = init;
	lb->base.name = "losing";
	lb->base.get = losing_get;
	lb->base.put = losing_put;
	lb->base.del = losing_del;
	lb->base.compare_and_put = losing_cas;
	lb->base.free = losing_free;
	assert_int_equal(faucet_store_open_memory(&lb->inner), 0);
	assert_int_equal(faucet_store_new(&s, &lb->base), 0);
	assert_int_equal(faucet_backfill_marker_record(s, "p::__backfill__::h", "d", "x", NULL, NULL),
			 FAUCET_ECONTENTION);
	assert_true(faucet_error_retryable(faucet_error_last()->code));
	tu_assert_error_contains("gave up after");
	assert_true(lb->attempts > 1); /* it did retry before giving up */
	tu_assert_value(s, "p::__backfill__::h", NULL);
	faucet_store_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(marker_round_trips),
		cmocka_unit_test(marker_text_is_exact),
		cmocka_unit_test(keys_are_valid_and_namespaced),
		cmocka_unit_test(split_remaining_skips_done_retries_failed),
		cmocka_unit_test(fresh_marker_runs_everything),
		cmocka_unit_test(corrupt_markers_are_config_errors),
		cmocka_unit_test(record_creates_merges_and_keeps_done),
		cmocka_unit_test(record_outcome_counts_attempts),
		cmocka_unit_test(concurrent_merges_lose_nothing),
		cmocka_unit_test(record_that_keeps_losing_is_contention),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
