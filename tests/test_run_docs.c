/*
 * test_run_docs.c - the run bookkeeping documents (src/run/docs.c): run ids,
 * marker round trips (values kept digit for digit, images too deep to embed
 * kept as text), documents of another shape refused as foreign; which
 * invocation keys belong to, and the import run hook that is given it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "internal.h"
#include "run/run_internal.h"
#include "values/json_check.h"

/* A marker's images and a run's recorded keys are looked up next to the
 * last hit first: from any hint, the answer is the plain binary search's. */
static void lookups_near_the_last_hit_agree_with_a_binary_search(void **state)
{
	const char *names[] = {"b", "d", "f", "h"};
	const char *queries[] = {"a", "b", "c", "d", "e", "f", "g", "h", "i"};

	(void)state;
	for (size_t count = 0; count <= 4; count++) {
		for (size_t q = 0; q < FAUCET_ARRAY_LEN(queries); q++) {
			int want_found = 0;
			size_t want = faucet__find_sorted(names, count, sizeof(char *), queries[q],
							  &want_found);

			for (size_t hint = 0; hint <= count + 2; hint++) {
				size_t near = hint;
				int found = -1;
				size_t got = faucet__find_sorted_near(names, count, sizeof(char *),
								      queries[q], &near, &found);

				if (got != want || found != want_found || near != got)
					fail_msg("%zu names, '%s' from hint %zu: %zu/%d, want %zu/%d",
						 count, queries[q], hint, got, found, want, want_found);
			}
		}
	}
	assert_true(faucet__names_sorted(names, 4, sizeof(char *)));
	assert_true(faucet__names_sorted(queries, 0, sizeof(char *)));
	assert_false(faucet__names_sorted((const char *[]){"b", "a"}, 2, sizeof(char *)));
	assert_true(faucet__names_sorted((const char *[]){"a", "a"}, 2, sizeof(char *)));
}

static void run_ids_sort_by_time_and_have_the_spec_shape(void **state)
{
	char a[FAUCET_RUN_ID_LEN + 1], b[FAUCET_RUN_ID_LEN + 1];

	(void)state;
	assert_int_equal(faucet_run__new_id(a, sizeof(a)), 0);
	assert_int_equal(faucet_run__new_id(b, sizeof(b)), 0);
	assert_int_equal(strlen(a), 27);
	assert_true(faucet_run__valid_id(a));
	assert_true(strcmp(a, b) < 0);
	assert_int_equal(faucet_validate_key(a), 0);
	assert_true(faucet_run__valid_id("20261130T230424.005Z-551180"));
	assert_false(faucet_run__valid_id("20261130T230424.005Z-55118"));
	assert_false(faucet_run__valid_id("20261130T230424.005Z-55118G"));
	assert_false(faucet_run__valid_id("2026-11-30T23:04:24Z-551180"));
	assert_false(faucet_run__valid_id(NULL));
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
	assert_int_equal(faucet_run__marker_parse(NULL, "k", "20261130T230424.005Z-551180", &m), 0);
	assert_int_equal(faucet_run__marker_add(&m, "p::b", big, &added), 0);
	assert_true(added);
	assert_int_equal(faucet_run__marker_add(&m, "p::a", NULL, &added), 0);
	assert_int_equal(faucet_run__marker_add(&m, "p::d", deep, &added), 0);
	assert_int_equal(faucet_run__marker_add(&m, "p::b", NULL, &added), 0);
	assert_false(added); /* the first before-image stays */
	faucet_run__marker_find(&m, "p::a")->after = faucet_value_ref(deep);
	faucet_run__marker_find(&m, "p::a")->after_known = 1;
	faucet_run__marker_find(&m, "p::b")->after_known = 1; /* absent */
	assert_int_equal(faucet_run__marker_value(&m, &doc), 0);
	assert_non_null(strstr(faucet_value_json(doc), "\"before_text\""));
	assert_non_null(strstr(faucet_value_json(doc), "\"after_text\""));
	{
		/* Built without a second check: what it built must pass one. */
		faucet_value *checked = NULL;

		assert_int_equal(faucet_value_parse(&checked, faucet_value_json(doc),
						    faucet_value_len(doc)), 0);
		assert_string_equal(faucet_value_json(checked), faucet_value_json(doc));
		faucet_value_free(checked);
	}
	assert_int_equal(faucet_run__marker_parse(doc, "k", NULL, &back), 0);
	assert_int_equal(back.count, 3);
	assert_true(back.has_after);
	assert_null(faucet_run__marker_find(&back, "p::a")->before);
	assert_string_equal(faucet_value_json(faucet_run__marker_find(&back, "p::a")->after), deep_text);
	assert_string_equal(faucet_value_json(faucet_run__marker_find(&back, "p::b")->before),
			    "{\"n\":18446744073709551615,\"x\":0.1}");
	assert_string_equal(faucet_value_json(faucet_run__marker_find(&back, "p::d")->before), deep_text);
	/* An after-image is per key: known and absent, known, or unknown. */
	assert_true(faucet_run__marker_find(&back, "p::a")->after_known);
	assert_true(faucet_run__marker_find(&back, "p::b")->after_known);
	assert_null(faucet_run__marker_find(&back, "p::b")->after);
	assert_false(faucet_run__marker_find(&back, "p::d")->after_known);
	faucet_run__marker_dispose(&back);
	faucet_run__marker_dispose(&m);
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
		assert_int_equal(faucet_run__marker_parse(v, "p::r::__rollback__::x", NULL, &m), FAUCET_ERROR);
		tu_assert_error_contains("foreign");
		faucet_value_free(v);
	}
	for (size_t i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++) {
		faucet_value *v = tu_v(statuses[i]);
		run_status st;
		assert_int_equal(faucet_run__status_parse(v, "p::r::__status__", &st), FAUCET_ERROR);
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


static void keys_of_one_invocation_name_its_row(void **state)
{
	const char *one[] = {"p::orders", "p::orders::shard1", "p::orders::__status__"};
	const char *two[] = {"p::orders", "p::users"};
	const char *none[] = {"p::orders", "p::__backfill__::0123456789abcdef"};
	const char *pipes[] = {"p::orders", "q::orders"};
	const char *bk[] = {"p::orders::__lease__"};
	char *pipeline = NULL, *row = NULL;

	(void)state;
	assert_int_equal(faucet_run_keys_invocation(one, 3, &pipeline, &row), 0);
	assert_string_equal(pipeline, "p");
	assert_string_equal(row, "orders");
	free(pipeline);
	free(row);
	assert_int_equal(faucet_run_keys_invocation(two, 2, &pipeline, &row), 0);
	assert_string_equal(pipeline, "p");
	assert_null(row);
	free(pipeline);
	assert_int_equal(faucet_run_keys_invocation(none, 2, &pipeline, &row), 0);
	assert_null(row);
	free(pipeline);
	assert_int_equal(faucet_run_keys_invocation(pipes, 2, &pipeline, &row), 0);
	assert_string_equal(pipeline, "p");
	assert_null(row);
	free(pipeline);
	assert_int_equal(faucet_run_keys_invocation(bk, 1, &pipeline, &row), 0);
	assert_null(pipeline);
	assert_null(row);
}

typedef struct {
	faucet_store *s;
	char *row;     /* what begin_run was given */
	int called;
	faucet_run *run;
} hook_seen;

static int begin_v2(void *ctx, const char *pipeline, const char *row, faucet_run **run)
{
	hook_seen *h = ctx;
	faucet_run_options o = FAUCET_RUN_OPTIONS_INIT;

	h->called++;
	h->row = row ? strdup(row) : NULL;
	o.no_lease = 1;
	o.row = row;
	o.pipeline_level = row == NULL;
	assert_int_equal(faucet_run_begin(&h->run, h->s, pipeline, &o), 0);
	*run = h->run;
	return 0;
}

/* The hook's first version took no row: still called as it was built. */
static void import_doc(hook_seen *h, const faucet_import_run_hook *hook, const char *doc)
{
	faucet_import_report rep = FAUCET_IMPORT_REPORT_INIT;
	FILE *f = tmpfile();

	assert_non_null(f);
	assert_true(fputs(doc, f) >= 0);
	rewind(f);
	rep = (faucet_import_report)FAUCET_IMPORT_REPORT_INIT;
	assert_int_equal(faucet_import_file_recorded(h->s, f, NULL, hook, &rep), 0);
	assert_null(rep.error);
	faucet_import_report_dispose(&rep);
	fclose(f);
	assert_int_equal(faucet_run_end(h->run, FAUCET_RUN_OK, 0, NULL), 0);
	faucet_run_free(h->run);
	h->run = NULL;
}

static void the_import_hook_is_given_the_row_of_its_keys(void **state)
{
	faucet_import_run_hook hook = FAUCET_IMPORT_RUN_HOOK_INIT;
	hook_seen h;
	faucet_value *v = NULL;

	(void)state;
	memset(&h, 0, sizeof(h));
	assert_int_equal(faucet_store_open_url(&h.s, "memory:"), 0);
	hook.begin_run = begin_v2;
	hook.ctx = &h;
	import_doc(&h, &hook,
		   "{\"version\":1,\"pipeline\":\"p\",\"keys\":{\"p::orders\":1,\"p::orders::a\":2}}");
	assert_int_equal(h.called, 1);
	assert_non_null(h.row);
	assert_string_equal(h.row, "orders");
	free(h.row);
	assert_int_equal(faucet_store_get(h.s, "p::orders::__status__", &v), 0);
	assert_non_null(v);
	faucet_value_free(v);
	import_doc(&h, &hook,
		   "{\"version\":1,\"pipeline\":\"p\",\"keys\":{\"p::orders\":3,\"p::users\":4}}");
	assert_int_equal(h.called, 2);
	assert_null(h.row);

	/* Version 1, never released, is refused before anything is written. */
	hook.version = 1;
	{
		faucet_import_report r = FAUCET_IMPORT_REPORT_INIT;
		FILE *in = fmemopen((void *)"{\"version\":1,\"pipeline\":\"p\",\"keys\":{\"p::orders\":5}}",
				    strlen("{\"version\":1,\"pipeline\":\"p\",\"keys\":{\"p::orders\":5}}"), "r");

		assert_non_null(in);
		assert_int_equal(faucet_import_file_recorded(h.s, in, NULL, &hook, &r), FAUCET_EINVALID);
		tu_assert_error_contains("import run hook version 1 is not supported (expected 2)");
		fclose(in);
		faucet_import_report_dispose(&r);
	}
	assert_int_equal(h.called, 2);
	assert_int_equal(faucet_store_get(h.s, "p::orders", &v), 0);
	assert_string_equal(faucet_value_json(v), "3");
	faucet_value_free(v);
	faucet_store_free(h.s);
}

/* Many keys at once, out of order, some twice, some already there: the
 * items stay sorted, an existing before-image is kept. */
static void marker_add_many_merges_unsorted_keys(void **state)
{
	const char *keys[] = {"p::d", "p::b", "p::e", "p::b", "p::a"};
	faucet_value *one = NULL, *two = NULL;
	faucet_value *befores[5];
	run_marker m;
	int added = 0;

	(void)state;
	assert_int_equal(faucet_value_parse(&one, "1", 1), 0);
	assert_int_equal(faucet_value_parse(&two, "2", 1), 0);
	befores[0] = two;
	befores[1] = two;
	befores[2] = NULL;
	befores[3] = two;
	befores[4] = two;
	assert_int_equal(faucet_run__marker_parse(NULL, "p::__rollback__::x", "x", &m), 0);
	assert_int_equal(faucet_run__marker_add(&m, "p::c", one, &added), 0);
	assert_int_equal(faucet_run__marker_add(&m, "p::d", one, &added), 0);
	assert_int_equal(faucet_run__marker_add_many(&m, keys, befores, 5, &added), 0);
	assert_true(added);
	assert_int_equal(m.count, 5);
	for (size_t i = 0; i < m.count; i++) {
		const char *want[] = {"p::a", "p::b", "p::c", "p::d", "p::e"};
		assert_string_equal(m.items[i].key, want[i]);
	}
	assert_string_equal(faucet_value_json(faucet_run__marker_find(&m, "p::d")->before), "1");
	assert_string_equal(faucet_value_json(faucet_run__marker_find(&m, "p::b")->before), "2");
	assert_null(faucet_run__marker_find(&m, "p::e")->before);
	assert_int_equal(faucet_run__marker_add_many(&m, keys, befores, 5, &added), 0);
	assert_false(added);
	faucet_run__marker_dispose(&m);
	faucet_value_free(one);
	faucet_value_free(two);
}

/* Times as the run documents hold them: one formatter for every writer. */
static void times_are_rfc3339_utc(void **state)
{
	char out[FAUCET_UTC_TEXT_SIZE], small[10];

	(void)state;
	assert_int_equal(faucet_utc_text(0, out, sizeof(out)), 0);
	assert_string_equal(out, "1970-01-01T00:00:00+00:00");
	assert_int_equal(faucet_utc_text(1780000000, out, sizeof(out)), 0);
	assert_string_equal(out, "2026-05-28T20:26:40+00:00");
	assert_int_equal(faucet_utc_text(-1, out, sizeof(out)), 0);
	assert_string_equal(out, "1969-12-31T23:59:59+00:00");
	assert_int_equal(faucet_utc_text(0, small, sizeof(small)), FAUCET_EINVALID);
	assert_string_equal(small, "");
	assert_int_equal(faucet_utc_text(INT64_MAX, out, sizeof(out)), FAUCET_EINVALID);
	assert_string_equal(out, "");
	assert_int_equal(faucet_utc_text(0, NULL, 4), FAUCET_EINVALID);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(run_ids_sort_by_time_and_have_the_spec_shape),
		cmocka_unit_test(lookups_near_the_last_hit_agree_with_a_binary_search),
		cmocka_unit_test(a_marker_round_trips_exact_and_deep_images),
		cmocka_unit_test(foreign_documents_are_refused),
		cmocka_unit_test(a_backfill_lease_reads_as_a_lease_without_a_run),
		cmocka_unit_test(leases_read_through_the_public_api),
		cmocka_unit_test(keys_of_one_invocation_name_its_row),
		cmocka_unit_test(marker_add_many_merges_unsorted_keys),
		cmocka_unit_test(the_import_hook_is_given_the_row_of_its_keys),
		cmocka_unit_test(times_are_rfc3339_utc),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
