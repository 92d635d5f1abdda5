/*
 * test_run_docs.c - the run bookkeeping documents (src/run/docs.c): run ids,
 * marker round trips (values kept digit for digit, images too deep to embed
 * kept as text), and documents of another shape refused as foreign.
 */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "run/run_internal.h"
#include "values/json_check.h"

static void run_ids_sort_by_time_and_have_the_spec_shape(void **state)
{
	char a[FAUCET_RUN_ID_LEN + 1], b[FAUCET_RUN_ID_LEN + 1];

	(void)state;
	assert_int_equal(run__new_id(a, sizeof(a)), 0);
	assert_int_equal(run__new_id(b, sizeof(b)), 0);
	assert_int_equal(strlen(a), 27);
	assert_true(run__valid_id(a));
	assert_true(strcmp(a, b) < 0);
	assert_int_equal(faucet_validate_key(a), 0);
	assert_true(run__valid_id("20261130T230424.005Z-551180"));
	assert_false(run__valid_id("20261130T230424.005Z-55118"));
	assert_false(run__valid_id("20261130T230424.005Z-55118G"));
	assert_false(run__valid_id("2026-11-30T23:04:24Z-551180"));
	assert_false(run__valid_id(NULL));
}

static char *nested(size_t depth)
{
	char *s = malloc(2 * depth + 2);

	assert_non_null(s);
	memset(s, '[', depth);
	s[depth] = '1';
	memset(s + depth + 1, ']', depth);
	s[2 * depth + 1] = '\0';
	return s;
}

static void a_marker_round_trips_exact_and_deep_images(void **state)
{
	run_marker m, back;
	faucet_value *big = tu_v("{\"n\":18446744073709551615,\"x\":0.1}");
	char *deep_text = nested(FAUCET_JSON_MAX_DEPTH);
	faucet_value *deep = tu_v(deep_text), *doc = NULL;
	int added;

	(void)state;
	assert_int_equal(run__marker_parse(NULL, "k", "20261130T230424.005Z-551180", &m), 0);
	assert_int_equal(run__marker_add(&m, "p::b", big, &added), 0);
	assert_true(added);
	assert_int_equal(run__marker_add(&m, "p::a", NULL, &added), 0);
	assert_int_equal(run__marker_add(&m, "p::d", deep, &added), 0);
	assert_int_equal(run__marker_add(&m, "p::b", NULL, &added), 0);
	assert_false(added); /* the first before-image stays */
	m.has_after = 1;
	run__marker_find(&m, "p::a")->after = faucet_value_ref(deep);
	assert_int_equal(run__marker_value(&m, &doc), 0);
	assert_non_null(strstr(faucet_value_json(doc), "\"before_text\""));
	assert_non_null(strstr(faucet_value_json(doc), "\"after_text\""));
	assert_int_equal(run__marker_parse(doc, "k", NULL, &back), 0);
	assert_int_equal(back.count, 3);
	assert_true(back.has_after);
	assert_null(run__marker_find(&back, "p::a")->before);
	assert_string_equal(faucet_value_json(run__marker_find(&back, "p::a")->after), deep_text);
	assert_string_equal(faucet_value_json(run__marker_find(&back, "p::b")->before),
			    "{\"n\":18446744073709551615,\"x\":0.1}");
	assert_string_equal(faucet_value_json(run__marker_find(&back, "p::d")->before), deep_text);
	run__marker_dispose(&back);
	run__marker_dispose(&m);
	faucet_value_free(doc);
	faucet_value_free(deep);
	faucet_value_free(big);
	free(deep_text);
}

static void foreign_documents_are_refused(void **state)
{
	static const char *markers[] = {
		"{\"version\":2,\"run\":\"r\",\"before\":{}}",
		"{\"version\":1,\"before\":{}}",
		"{\"version\":1,\"run\":\"r\",\"before\":[]}",
		"{\"version\":1,\"run\":\"r\",\"before\":{},\"after\":{\"x\":1}}",
		"[1]",
		"null",
	};
	static const char *statuses[] = {
		"{\"version\":1}",
		"{\"version\":1,\"runs\":[{\"run\":1,\"outcome\":\"ok\"}]}",
		"{\"version\":1,\"runs\":[{\"run\":\"x\"}]}",
		"{\"version\":1,\"runs\":[{\"run\":\"x\",\"outcome\":\"ok\",\"keys\":{}}]}",
		"\"text\"",
	};
	static const char *leases[] = {
		"{\"holder\":\"h\"}",
		"{\"holder\":1,\"expires_at\":5}",
		"{\"holder\":\"h\",\"expires_at\":\"soon\"}",
		"{\"holder\":\"h\",\"expires_at\":5,\"run\":7}",
		"5",
		"null",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(markers) / sizeof(markers[0]); i++) {
		faucet_value *v = tu_v(markers[i]);
		run_marker m;
		assert_int_equal(run__marker_parse(v, "p::r::__rollback__::x", NULL, &m), FAUCET_ERROR);
		tu_assert_error_contains("foreign");
		faucet_value_free(v);
	}
	for (size_t i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++) {
		faucet_value *v = tu_v(statuses[i]);
		run_status st;
		assert_int_equal(run__status_parse(v, "p::r::__status__", &st), FAUCET_ERROR);
		tu_assert_error_contains("p::r::__status__");
		faucet_value_free(v);
	}
	for (size_t i = 0; i < sizeof(leases) / sizeof(leases[0]); i++) {
		faucet_value *v = tu_v(leases[i]);
		faucet_lease l;
		assert_int_equal(faucet_lease_parse(v, "p::r::__lease__", &l), FAUCET_ERROR);
		faucet_value_free(v);
	}
}

static void a_backfill_lease_reads_as_a_lease_without_a_run(void **state)
{
	faucet_value *v = tu_v("{\"holder\":\"h:1:ab\",\"expires_at\":1700000000}");
	faucet_lease l;

	(void)state;
	assert_int_equal(faucet_lease_parse(v, "k", &l), 0);
	assert_string_equal(l.holder, "h:1:ab");
	assert_null(l.run);
	assert_int_equal(l.expires_at, 1700000000);
	faucet_lease_dispose(&l);
	faucet_value_free(v);
}

/* The public lease reader (faucet/run.h), as `faucet lock` uses it: a run's
 * lease names its run; a foreign value is refused naming the key and leaves
 * the lease empty; NULL arguments are refused, a NULL lease is ignored. */
static void leases_read_through_the_public_api(void **state)
{
	faucet_value *v = tu_v("{\"holder\":\"h:2:cd\",\"expires_at\":1700000060,"
			       "\"run\":\"20260101T000000.000Z-abcdef\"}");
	faucet_value *foreign_v = tu_v("[1]");
	faucet_lease l;

	(void)state;
	assert_int_equal(faucet_lease_parse(v, "p::r::__lease__", &l), 0);
	assert_string_equal(l.holder, "h:2:cd");
	assert_string_equal(l.run, "20260101T000000.000Z-abcdef");
	assert_int_equal(l.expires_at, 1700000060);
	faucet_lease_dispose(&l);
	assert_null(l.holder);
	assert_null(l.run);
	assert_int_equal(faucet_lease_parse(foreign_v, "p::r::__lease__", &l), FAUCET_ERROR);
	tu_assert_error_contains("p::r::__lease__ holds something that is not a faucet lease");
	assert_null(l.holder);
	assert_null(l.run);
	assert_int_equal(faucet_lease_parse(NULL, "k", &l), FAUCET_EINVALID);
	assert_int_equal(faucet_lease_parse(v, "k", NULL), FAUCET_EINVALID);
	faucet_lease_dispose(NULL);
	faucet_value_free(foreign_v);
	faucet_value_free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(run_ids_sort_by_time_and_have_the_spec_shape),
		cmocka_unit_test(a_marker_round_trips_exact_and_deep_images),
		cmocka_unit_test(foreign_documents_are_refused),
		cmocka_unit_test(a_backfill_lease_reads_as_a_lease_without_a_run),
		cmocka_unit_test(leases_read_through_the_public_api),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
