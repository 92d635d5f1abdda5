/*
 * test_run_check.c - doctor's "run documents" probe (src/run/check.c): every
 * bookkeeping document parsed as its kind, the broken ones named with their
 * parse errors, and the repair that sets them aside - never deleting, never
 * over an earlier copy, never over a fix made meanwhile.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "internal.h"
#include "run/run_internal.h"
#include <faucet/sys/store_backend.h>

#define NOW 1767225600 /* 2026-01-01T00:00:00Z */
#define STAMP "20260101T000000Z"
#define STATUS_OK "{\"version\":1,\"runs\":[]}"

static const faucet_probe *run_probe(const faucet_check_report *r)
{
	for (size_t i = 0; i < faucet_check_report_count(r); i++) {
		const faucet_probe *p = faucet_check_report_probe(r, i);
		if (strcmp(p->name, "run documents") == 0)
			return p;
	}
	fail_msg("no run documents probe");
	return NULL;
}

static faucet_check_report *probe(faucet_store *s, unsigned flags)
{
	faucet_check_report *r = NULL;

	assert_int_equal(faucet_check_report_new(&r), 0);
	assert_int_equal(faucet_run_documents_probe(s, NOW, flags, 0, r), 0);
	return r;
}

static void set_aside_names_are_valid_and_never_bookkeeping(void **state)
{
	static const struct {
		const char *key, *want;
	} cases[] = {
		{"p::r::__status__", "p::r::__broken__::status::" STAMP},
		{"p::__status__", "p::__broken__::status::" STAMP},
		{"p::r::__lease__", "p::r::__broken__::lease::" STAMP},
		{"p::r::__rollback__", "p::r::__broken__::rollback::" STAMP},
		{"p::r::__rollback__::20260101T000000.000Z-abcdef",
		 "p::r::__broken__::rollback::20260101T000000.000Z-abcdef::" STAMP},
		{"p::backfill::h::20260601T000000Z::__lease__",
		 "p::backfill::h::20260601T000000Z::__broken__::lease::" STAMP},
		{"p::__rollback__::a::___", "p::__broken__::rollback::a::x::" STAMP},
	};
	char *k;
	char longkey[300];
	(void)state;

	for (size_t i = 0; i < FAUCET_ARRAY_LEN(cases); i++) {
		k = faucet_run__broken_key(cases[i].key, NOW, 1);
		assert_non_null(k);
		assert_string_equal(k, cases[i].want);
		assert_int_equal(faucet_validate_key(k), 0);
		assert_false(faucet_run_is_bookkeeping_key(k));
		free(k);
	}
	k = faucet_run__broken_key("p::r::__status__", NOW, 3);
	assert_string_equal(k, "p::r::__broken__::status::" STAMP ".3");
	free(k);
	assert_null(faucet_run__broken_key("p::r", NOW, 1));
	assert_null(faucet_run__broken_key("p::__lease__x", NOW, 1));

	/* The longest keys: the name is shortened, still valid. */
	memset(longkey, 'a', sizeof(longkey));
	memcpy(longkey + FAUCET_KEY_MAX - strlen("::__status__"), "::__status__",
	       strlen("::__status__") + 1);
	assert_int_equal(faucet_validate_key(longkey), 0);
	k = faucet_run__broken_key(longkey, NOW, 1);
	assert_non_null(k);
	assert_int_equal(faucet_validate_key(k), 0);
	assert_false(faucet_run_is_bookkeeping_key(k));
	free(k);
	memcpy(longkey, "p::", 3);
	k = faucet_run__broken_key(longkey, NOW, 1);
	assert_non_null(k);
	assert_int_equal(faucet_validate_key(k), 0);
	assert_false(faucet_run_is_bookkeeping_key(k));
	free(k);
}

static void every_broken_document_is_named_and_good_ones_pass(void **state)
{
	faucet_store *s = NULL;
	faucet_check_report *r;
	const faucet_probe *p;
	(void)state;

	assert_int_equal(faucet_store_open_memory(&s), 0);
	r = probe(s, 0);
	assert_int_equal(run_probe(r)->status, FAUCET_PROBE_PASS);
	faucet_check_report_free(r);

	tu_put(s, "p::a", "{\"v\":1}");
	tu_put(s, "p::ok::__status__", STATUS_OK);
	tu_put(s, "p::ok::__rollback__", "{\"version\":1,\"runs\":[\"x\"]}");
	tu_put(s, "p::ok::__rollback__::x",
	       "{\"version\":1,\"run\":\"x\",\"before\":{\"p::a\":null},\"after\":{}}");
	tu_put(s, "p::ok::__lease__", "{\"holder\":\"h:1:a\",\"expires_at\":5,\"run\":\"x\"}");
	/* A big import's marker part: "{marker}::{n}", the same document. */
	tu_put(s, "p::ok::__rollback__::x::1",
	       "{\"version\":1,\"run\":\"x\",\"before\":{\"p::b\":null},\"after\":{}}");
	tu_put(s, "p::backfill::h::20260601T000000Z::__lease__",
	       "{\"holder\":\"h:1:a\",\"expires_at\":5}");
	/* Data keys that merely look alike are not looked at. */
	tu_put(s, "p::__status__x", "[]");
	tu_put(s, "p::r::__broken__::status::" STAMP, "[]");
	r = probe(s, 0);
	p = run_probe(r);
	assert_int_equal(p->status, FAUCET_PROBE_PASS);
	assert_null(p->reason);
	faucet_check_report_free(r);

	tu_put(s, "p::r::__status__", "{}");
	tu_put(s, "p::r::__rollback__", "{\"version\":2,\"runs\":[]}");
	tu_put(s, "p::r::__rollback__::y", "[1]");
	tu_put(s, "p::r::__lease__", "{\"holder\":7,\"expires_at\":5}");
	tu_put(s, "p::__rollback__::a::b", STATUS_OK);
	tu_put(s, "p::r::__rollback__::y::2", "[1]");
	tu_put(s, "p::r::__rollback__::y::02", "{}"); /* no part number: no shape */
	r = probe(s, 0);
	p = run_probe(r);
	assert_int_equal(p->status, FAUCET_PROBE_FAIL);
	assert_int_equal(faucet_check_report_failed_count(r), 1);
	assert_non_null(strstr(p->reason, "7 run documents of 13 do not parse"));
	assert_non_null(strstr(p->reason, "p::r::__status__ holds something that is not a faucet "
					  "run status document"));
	assert_non_null(strstr(p->reason, "p::r::__rollback__ holds something that is not a "
					  "faucet rollback index"));
	assert_non_null(strstr(p->reason, "p::r::__rollback__::y holds something that is not a "
					  "faucet rollback marker"));
	assert_non_null(strstr(p->reason, "p::r::__lease__ holds something that is not a faucet "
					  "lease"));
	assert_non_null(strstr(p->reason, "p::__rollback__::a::b is a bookkeeping key of no "
					  "shape"));
	assert_non_null(strstr(p->reason, "p::r::__rollback__::y::2 holds something that is not "
					  "a faucet rollback marker"));
	assert_non_null(strstr(p->reason, "p::r::__rollback__::y::02 is a bookkeeping key of no "
					  "shape"));
	assert_null(strstr(p->reason, "p::ok"));
	assert_non_null(p->hint);
	faucet_check_report_free(r);
	/* Checking wrote nothing. */
	tu_assert_value(s, "p::r::__status__", "{}");
	tu_assert_value(s, "p::r::__broken__::status::" STAMP, "[]");
	faucet_store_free(s);
}

static void repair_moves_each_broken_document_aside(void **state)
{
	faucet_store *s = NULL;
	faucet_check_report *r;
	const faucet_probe *p;
	faucet_strarray keys = {0};
	(void)state;

	assert_int_equal(faucet_store_open_memory(&s), 0);
	tu_put(s, "p::ok::__status__", STATUS_OK);
	tu_put(s, "p::r::__status__", "{\"not\":\"ours\",\"n\":18446744073709551615}");
	tu_put(s, "p::r::__rollback__::y", "[1]");
	/* An earlier repair's copy at the first name is never overwritten. */
	tu_put(s, "p::r::__broken__::status::" STAMP, "\"earlier\"");
	r = probe(s, FAUCET_CHECK_REPAIR);
	p = run_probe(r);
	assert_int_equal(p->status, FAUCET_PROBE_PASS);
	assert_non_null(p->hint);
	assert_non_null(strstr(p->hint, "set aside p::r::__status__ as p::r::__broken__::status::"
					STAMP ".2"));
	assert_non_null(strstr(p->hint, "set aside p::r::__rollback__::y as "
					"p::r::__broken__::rollback::y::" STAMP));
	faucet_check_report_free(r);
	tu_assert_value(s, "p::r::__status__", NULL);
	tu_assert_value(s, "p::r::__rollback__::y", NULL);
	tu_assert_value(s, "p::r::__broken__::status::" STAMP ".2",
			"{\"not\":\"ours\",\"n\":18446744073709551615}");
	tu_assert_value(s, "p::r::__broken__::rollback::y::" STAMP, "[1]");
	tu_assert_value(s, "p::r::__broken__::status::" STAMP, "\"earlier\"");
	tu_assert_value(s, "p::ok::__status__", STATUS_OK);
	/* Nothing else changed, and the store now passes. */
	assert_int_equal(faucet_store_list(s, "", &keys), 0);
	assert_int_equal(keys.count, 4);
	faucet_strarray_dispose(&keys);
	r = probe(s, 0);
	assert_int_equal(run_probe(r)->status, FAUCET_PROBE_PASS);
	faucet_check_report_free(r);
	faucet_store_free(s);
}

/* A memory store whose compare-and-delete of `fix_key` first writes
 * `fix_value` there: someone repairing the document by hand while doctor
 * moves it. */
typedef struct {
	faucet_store_backend base;
	faucet_store *inner;
	const char *fix_key, *fix_value;
} racing_backend;

static faucet_store *inner_of(faucet_store_backend *b)
{
	return ((racing_backend *)b)->inner;
}

static int rb_get(faucet_store_backend *b, const char *key, faucet_value **out)
{
	return faucet_store_get(inner_of(b), key, out);
}

static int rb_put(faucet_store_backend *b, const char *key, const faucet_value *v)
{
	return faucet_store_put(inner_of(b), key, v);
}

static int rb_del(faucet_store_backend *b, const char *key)
{
	return faucet_store_delete(inner_of(b), key);
}

static int rb_list(faucet_store_backend *b, const char *prefix, faucet_strarray *out)
{
	return faucet_store_list(inner_of(b), prefix, out);
}

static int rb_cas(faucet_store_backend *b, const char *key, const faucet_value *expected,
		  const faucet_value *v, int *written)
{
	return faucet_store_compare_and_put(inner_of(b), key, expected, v, written);
}

static int rb_cad(faucet_store_backend *b, const char *key, const faucet_value *expected,
		  int *deleted)
{
	racing_backend *rb = (racing_backend *)b;

	if (rb->fix_key != NULL && strcmp(key, rb->fix_key) == 0) {
		tu_put(rb->inner, key, rb->fix_value);
		rb->fix_key = NULL;
	}
	return faucet_store_compare_and_delete(inner_of(b), key, expected, deleted);
}

static void rb_free(faucet_store_backend *b)
{
	faucet_store_free(inner_of(b));
	free(b);
}

static void a_fix_made_meanwhile_is_kept(void **state)
{
	racing_backend *b = calloc(1, sizeof(*b));
	faucet_store *s = NULL;
	faucet_check_report *r;
	const faucet_probe *p;
	(void)state;

	assert_non_null(b);
	assert_int_equal(faucet_store_open_memory(&b->inner), 0);
	b->base.version = FAUCET_STORE_BACKEND_VERSION;
	b->base.name = "racing";
	b->base.get = rb_get;
	b->base.put = rb_put;
	b->base.del = rb_del;
	b->base.list = rb_list;
	b->base.compare_and_put = rb_cas;
	b->base.compare_and_delete = rb_cad;
	b->base.free = rb_free;
	assert_int_equal(faucet_store_new(&s, &b->base), 0);

	tu_put(s, "p::r::__status__", "{}");
	b->fix_key = "p::r::__status__";
	b->fix_value = STATUS_OK;
	r = probe(s, FAUCET_CHECK_REPAIR);
	p = run_probe(r);
	assert_int_equal(p->status, FAUCET_PROBE_PASS);
	assert_non_null(strstr(p->hint, "p::r::__status__ changed while being set aside"));
	faucet_check_report_free(r);
	/* The fix stays, and the copy of the broken value is taken back. */
	tu_assert_value(s, "p::r::__status__", STATUS_OK);
	tu_assert_value(s, "p::r::__broken__::status::" STAMP, NULL);
	faucet_store_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(set_aside_names_are_valid_and_never_bookkeeping),
		cmocka_unit_test(every_broken_document_is_named_and_good_ones_pass),
		cmocka_unit_test(repair_moves_each_broken_document_aside),
		cmocka_unit_test(a_fix_made_meanwhile_is_kept),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
