/*
 * test_export.c - export / import documents: parsing and validation, the
 * JSON text (compact and pretty) with full-fidelity values, exporting a
 * namespace, and importing with and without replace - including the
 * failure reports of non-atomic stores, failing batches and stuck deletes.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* asprintf */
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "internal.h" /* faucet__strarray_push */
#include "store/export_internal.h"
#include <faucet/sys/store_backend.h>

#define N_ITEMS(a) (sizeof(a) / sizeof((a)[0]))

/* ---- test backends ---------------------------------------------------- */

/* Bare: get/put/del forwarded to a memory store, with put failing for keys
 * ending "::boom" and delete failing for keys ending "::stuck".  Listing
 * adds list.  Failing answers get/put/del trivially and fails every batch.
 * Phantom lists one key more than it holds, as if it was deleted between
 * the listing and the read.  A put of a key ending "::limbo" lands and then
 * returns FAUCET_EUNKNOWN, as the file store does when the directory fsync
 * after its rename fails.  Batching has an all-or-nothing batch that fails
 * when it holds a "::boom" key, and lands but answers FAUCET_EUNKNOWN when
 * it holds a "::limbo" key (a commit whose reply was lost). */
typedef enum { BARE, LISTING, FAILING, PHANTOM, BATCHING } backend_kind;

typedef struct {
	faucet_store_backend base;
	faucet_store *inner;
	backend_kind kind;
} test_backend;

static int ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);
	return n >= t && strcmp(s + n - t, tail) == 0;
}

static int tb_get(faucet_store_backend *b, const char *key, faucet_value **out)
{
	test_backend *t = (test_backend *)b;

	if (t->kind == FAILING) {
		*out = NULL;
		return 0;
	}
	return faucet_store_get(t->inner, key, out);
}

static int tb_put(faucet_store_backend *b, const char *key, const faucet_value *v)
{
	test_backend *t = (test_backend *)b;

	if (t->kind == FAILING)
		return 0;
	if (ends_with(key, "::boom"))
		return faucet_error_set(FAUCET_EIO, "disk full");
	if (ends_with(key, "::limbo")) {
		assert_int_equal(faucet_store_put(t->inner, key, v), 0);
		return faucet_error_set(FAUCET_EUNKNOWN, "renamed, but the directory fsync failed");
	}
	return faucet_store_put(t->inner, key, v);
}

static int tb_del(faucet_store_backend *b, const char *key)
{
	test_backend *t = (test_backend *)b;

	if (t->kind == FAILING)
		return 0;
	if (ends_with(key, "::stuck"))
		return faucet_error_set(FAUCET_ERROR, "locked");
	return faucet_store_delete(t->inner, key);
}

static int tb_list(faucet_store_backend *b, const char *prefix, faucet_strarray *out)
{
	test_backend *t = (test_backend *)b;
	int rc = faucet_store_list(t->inner, prefix, out);

	if (rc == 0 && t->kind == PHANTOM)
		rc = faucet__strarray_push(out, "o::ghost");
	return rc;
}

static int tb_batch(faucet_store_backend *b, const faucet_entry *entries, size_t count)
{
	(void)b;
	(void)entries;
	(void)count;
	return faucet_error_set(FAUCET_ERROR, "tx aborted");
}

static int tb_good_batch(faucet_store_backend *b, const faucet_entry *entries, size_t count)
{
	test_backend *t = (test_backend *)b;
	int limbo = 0;

	for (size_t i = 0; i < count; i++) {
		if (ends_with(entries[i].key, "::boom"))
			return faucet_error_set(FAUCET_ERROR, "tx aborted");
		limbo |= ends_with(entries[i].key, "::limbo");
	}
	assert_int_equal(faucet_store_put_batch(t->inner, entries, count), 0);
	return limbo ? faucet_error_set(FAUCET_EUNKNOWN, "commit reply lost") : 0;
}

static void tb_free(faucet_store_backend *b)
{
	faucet_store_free(((test_backend *)b)->inner);
	free(b);
}

static faucet_store *open_test_backend(backend_kind kind)
{
	test_backend *t = calloc(1, sizeof(*t));
	faucet_store *s = NULL;

	assert_non_null(t);
	assert_int_equal(faucet_store_open_memory(&t->inner), 0);
	t->kind = kind;
	t->base.version = FAUCET_STORE_BACKEND_VERSION;
	t->base.name = "test";
	t->base.get = tb_get;
	t->base.put = tb_put;
	t->base.del = tb_del;
	t->base.list = kind == LISTING || kind == PHANTOM || kind == BATCHING ? tb_list : NULL;
	t->base.put_batch = kind == FAILING ? tb_batch : kind == BATCHING ? tb_good_batch : NULL;
	t->base.free = tb_free;
	assert_int_equal(faucet_store_new(&s, &t->base), 0);
	return s;
}

/* ---- helpers ---------------------------------------------------------- */

static void set(faucet_export *e, const char *key, const char *json)
{
	faucet_value *v = tu_v(json);

	assert_int_equal(faucet_export_set(e, key, v), 0);
	faucet_value_free(v);
}

static faucet_export *new_export(const char *pipeline)
{
	faucet_export *e = NULL;

	assert_int_equal(faucet_export_new(&e, pipeline), 0);
	return e;
}

static faucet_export *parse_ok(const char *text)
{
	faucet_export *e = NULL;

	if (faucet_export_parse(&e, text, strlen(text)) != 0)
		fail_msg("parse %s: %s", text, faucet_error_last()->message);
	return e;
}

static void assert_parse_fails(const char *text, const char *needle)
{
	faucet_export *e = (faucet_export *)0x1;

	if (faucet_export_parse(&e, text, strlen(text)) != FAUCET_EINVALID)
		fail_msg("expected %s to be refused", text);
	assert_null(e);
	tu_assert_error_contains(needle);
}

/* ---- documents -------------------------------------------------------- */

static void export_document_parses_and_validates(void **state)
{
	static const struct {
		const char *doc;
		const char *needle;
	} cases[] = {
		{"{\"pipeline\":\"o\",\"keys\":{}}", "state export has no `version` field"},
		{"{\"version\":\"1\",\"pipeline\":\"o\"}",
		 "state export `version` must be an integer, got \"1\""},
		{"{\"version\":2,\"pipeline\":\"o\"}",
		 "state export version 2 is not supported by this build (supported: 1)"},
		{"{\"version\":0,\"pipeline\":\"o\"}", "not supported"},
		{"{\"version\":1}", "malformed state export"},
		{"{\"version\":1,\"pipeline\":\"../o\"}", "state export pipeline name: "},
		{"{\"version\":1,\"pipeline\":\"o\",\"keys\":{\"other::a\":1}}",
		 "state export key 'other::a' is outside the namespace 'o::' of pipeline 'o'"},
		{"{\"version\":1,\"pipeline\":\"o\",\"keys\":{\"o::a b\":1}}", "illegal character"},
	};
	faucet_export *e = parse_ok("{\"version\":1,\"pipeline\":\"orders\","
				    "\"exported_at\":\"2026-09-26T00:00:00Z\","
				    "\"keys\":{\"orders::a\":{\"id\":3},\"orders::a::__sla__\":{}}}");
	(void)state;

	assert_int_equal(faucet_export_count(e), 2);
	assert_string_equal(faucet_export_pipeline(e), "orders");
	assert_string_equal(faucet_export_exported_at(e), "2026-09-26T00:00:00Z");
	assert_string_equal(faucet_export_key_at(e, 0), "orders::a");
	assert_string_equal(faucet_value_json(faucet_export_value_at(e, 0)), "{\"id\":3}");
	assert_string_equal(faucet_export_key_at(e, 1), "orders::a::__sla__");
	assert_null(faucet_export_key_at(e, 2));
	assert_null(faucet_export_value_at(e, 2));
	assert_int_equal(faucet_export_validate(e), 0);
	faucet_export_free(e);

	for (size_t i = 0; i < N_ITEMS(cases); i++)
		assert_parse_fails(cases[i].doc, cases[i].needle);
}

static void documents_of_the_wrong_shape_are_refused(void **state)
{
	faucet_export *e;
	(void)state;

	assert_parse_fails("[1]", "no `version`");
	assert_parse_fails("{\"version\":1.0,\"pipeline\":\"o\"}", "must be an integer, got 1.0");
	assert_parse_fails("{\"version\":-1,\"pipeline\":\"o\"}", "must be an integer, got -1");
	assert_parse_fails("{\"version\":18446744073709551615,\"pipeline\":\"o\"}",
			   "version 18446744073709551615 is not supported");
	assert_parse_fails("{\"version\":1,\"pipeline\":3}",
			   "malformed state export: `pipeline` must be a string");
	assert_parse_fails("{\"version\":1,\"pipeline\":\"o\",\"keys\":null}",
			   "malformed state export: `keys` must be an object");
	assert_parse_fails("{\"version\":1,\"pipeline\":\"o\",\"exported_at\":5}",
			   "malformed state export: `exported_at`");
	assert_parse_fails("{\"version\":1,\"pipeline\":\"o\",\"keys\":{\"o::\":1,\"p::x\":2}}",
			   "outside the namespace");
	/* "o::" is a valid key but "ox::a" is not inside "o::". */
	assert_parse_fails("{\"version\":1,\"pipeline\":\"o\",\"keys\":{\"ox::a\":1}}",
			   "outside the namespace");

	/* Optional members may be missing or null; unknown members are ignored. */
	e = parse_ok("{\"version\":1,\"pipeline\":\"o\",\"exported_at\":null,\"extra\":[1]}");
	assert_int_equal(faucet_export_count(e), 0);
	assert_null(faucet_export_exported_at(e));
	faucet_export_free(e);
}

static void malformed_document_text_is_refused_with_the_offset(void **state)
{
	(void)state;
	assert_parse_fails("{\"version\":1,\"pipeline\":\"o\",}", "state export: malformed JSON at byte 28");
	assert_parse_fails("", "state export: malformed JSON: empty input");
	assert_parse_fails("{\"version\":1,\"pipeline\":\"o\"} x", "at byte 29");
	/* The fidelity rules hold for every value inside the document. */
	assert_parse_fails("{\"version\":1,\"pipeline\":\"o\",\"keys\":{\"o::a\":18446744073709551616}}",
			   "cannot be held exactly");
	assert_parse_fails("{\"version\":1,\"pipeline\":\"o\",\"keys\":{\"o::a\":1,\"o::a\":2}}",
			   "duplicate member name");
	assert_parse_fails("{\"version\":1,\"pipeline\":\"o\",\"keys\":{\"o::a\":{\"x\":1,\"x\":2}}}",
			   "duplicate member name");
}

static void set_keeps_keys_sorted_and_replaces(void **state)
{
	faucet_export *e = new_export("o");
	(void)state;

	set(e, "o::b", "2");
	set(e, "o::a", "1");
	set(e, "o::c", "3");
	set(e, "o::b", "\"two\"");
	assert_int_equal(faucet_export_count(e), 3);
	assert_string_equal(faucet_export_key_at(e, 0), "o::a");
	assert_string_equal(faucet_export_key_at(e, 1), "o::b");
	assert_string_equal(faucet_value_json(faucet_export_value_at(e, 1)), "\"two\"");
	assert_string_equal(faucet_export_key_at(e, 2), "o::c");
	assert_int_equal(faucet_export_set(e, "o::d", NULL), FAUCET_EINVALID);
	assert_int_equal(faucet_export_set_exported_at(e, "now"), 0);
	assert_int_equal(faucet_export_set_exported_at(e, NULL), 0);
	assert_null(faucet_export_exported_at(e));
	faucet_export_free(e);
	faucet_export_free(NULL);
}

static void to_json_round_trips_with_full_fidelity(void **state)
{
	static const char compact[] =
		"{\"version\":1,\"pipeline\":\"o\",\"exported_at\":\"2026-01-01T00:00:00+00:00\","
		"\"keys\":{\"o::a\":{\"n\":18446744073709551615,\"f\":0.1},"
		"\"o::b\":[{\"deep\":{\"x\":[]}}],\"o::c\":\"caf\xc3\xa9 \\\"q\\\"\",\"o::d\":null}}";
	static const char pretty[] =
		"{\n"
		"  \"version\": 1,\n"
		"  \"pipeline\": \"o\",\n"
		"  \"exported_at\": \"2026-01-01T00:00:00+00:00\",\n"
		"  \"keys\": {\n"
		"    \"o::a\": {\"n\":18446744073709551615,\"f\":0.1},\n"
		"    \"o::b\": [{\"deep\":{\"x\":[]}}],\n"
		"    \"o::c\": \"caf\xc3\xa9 \\\"q\\\"\",\n"
		"    \"o::d\": null\n"
		"  }\n"
		"}";
	faucet_export *e = parse_ok(compact), *again;
	char *text = NULL;
	(void)state;

	assert_int_equal(faucet_export_to_json(e, 0, &text), 0);
	assert_string_equal(text, compact);
	free(text);
	assert_int_equal(faucet_export_to_json(e, 1, &text), 0);
	assert_string_equal(text, pretty);
	again = parse_ok(text);
	free(text);
	assert_int_equal(faucet_export_count(again), 4);
	for (size_t i = 0; i < 4; i++) {
		assert_string_equal(faucet_export_key_at(again, i), faucet_export_key_at(e, i));
		assert_string_equal(faucet_value_json(faucet_export_value_at(again, i)),
				    faucet_value_json(faucet_export_value_at(e, i)));
	}
	faucet_export_free(again);
	faucet_export_free(e);
}

static void to_json_of_an_empty_document(void **state)
{
	faucet_export *e = new_export("o");
	char *text = NULL;
	(void)state;

	assert_int_equal(faucet_export_to_json(e, 0, &text), 0);
	assert_string_equal(text, "{\"version\":1,\"pipeline\":\"o\",\"keys\":{}}");
	free(text);
	assert_int_equal(faucet_export_to_json(e, 1, &text), 0);
	assert_string_equal(text, "{\n  \"version\": 1,\n  \"pipeline\": \"o\",\n  \"keys\": {}\n}");
	free(text);
	/* Text that is not key characters is escaped, so the document stays JSON. */
	assert_int_equal(faucet_export_set_exported_at(e, "a\"b\\c\n"), 0);
	assert_int_equal(faucet_export_to_json(e, 0, &text), 0);
	assert_non_null(strstr(text, "\"exported_at\":\"a\\\"b\\\\c\\n\""));
	faucet_export_free(e);
	e = parse_ok(text);
	assert_string_equal(faucet_export_exported_at(e), "a\"b\\c\n");
	free(text);
	faucet_export_free(e);
}

static void parsed_values_outlive_the_document(void **state)
{
	faucet_export *e = parse_ok("{\"version\":1,\"pipeline\":\"o\",\"keys\":"
				    "{\"o::a\":{\"c\":[1,2,{\"d\":0.1}]}}}");
	faucet_value *kept = faucet_value_ref((faucet_value *)faucet_export_value_at(e, 0));
	faucet_value *want = tu_v("{\"c\":[1,2,{\"d\":0.1}]}");
	(void)state;

	faucet_export_free(e);
	assert_true(faucet_value_equal(kept, want));
	assert_string_equal(faucet_value_json(kept), "{\"c\":[1,2,{\"d\":0.1}]}");
	faucet_value_free(kept);
	faucet_value_free(want);
}

/* ---- export and import against stores ---------------------------------- */

static void export_then_import_round_trips_and_replace_drops_stale_keys(void **state)
{
	faucet_store *from = NULL, *to = NULL;
	faucet_export *e = NULL;
	faucet_import_report r = FAUCET_IMPORT_REPORT_INIT;
	(void)state;

	assert_int_equal(faucet_store_open_memory(&from), 0);
	tu_put(from, "o::a", "{\"c\":1}");
	tu_put(from, "o::b", "2");
	tu_put(from, "other::a", "9");
	tu_put(from, "ox::a", "9");
	assert_int_equal(faucet_export_namespace(from, "o", &e), 0);
	assert_int_equal(faucet_export_count(e), 2);
	assert_string_equal(faucet_export_pipeline(e), "o");
	assert_null(faucet_export_exported_at(e));

	assert_int_equal(faucet_store_open_memory(&to), 0);
	tu_put(to, "o::stale", "0");
	assert_int_equal(faucet_import_namespace(to, e, 0, &r), 0);
	assert_true(r.atomic);
	assert_null(r.error);
	tu_assert_strings(&r.written, "o::a", "o::b", NULL);
	assert_int_equal(r.deleted.count, 0);
	tu_assert_value(to, "o::stale", "0"); /* kept without replace */
	faucet_import_report_dispose(&r);

	assert_int_equal(faucet_import_namespace(to, e, 1, &r), 0);
	tu_assert_strings(&r.deleted, "o::stale", NULL);
	assert_null(r.error);
	tu_assert_value(to, "o::stale", NULL);
	tu_assert_value(to, "o::a", "{\"c\":1}");
	tu_assert_value(to, "o::b", "2");
	faucet_import_report_dispose(&r);
	faucet_import_report_dispose(&r); /* disposing twice is harmless */

	faucet_export_free(e);
	faucet_store_free(from);
	faucet_store_free(to);
}

static void export_skips_keys_deleted_after_the_listing(void **state)
{
	faucet_store *phantom = open_test_backend(PHANTOM), *bare = open_test_backend(BARE);
	faucet_export *e = NULL;
	(void)state;

	tu_put(phantom, "o::a", "1");
	assert_int_equal(faucet_export_namespace(phantom, "o", &e), 0);
	assert_int_equal(faucet_export_count(e), 1);
	assert_string_equal(faucet_export_key_at(e, 0), "o::a");
	faucet_export_free(e);

	e = (faucet_export *)0x1;
	assert_int_equal(faucet_export_namespace(bare, "o", &e), FAUCET_EUNSUPPORTED);
	assert_null(e);
	tu_assert_error_contains("cannot enumerate");
	faucet_store_free(phantom);
	faucet_store_free(bare);
}

static void import_reports_partial_progress_on_a_non_atomic_store(void **state)
{
	faucet_store *s = open_test_backend(BARE);
	faucet_export *e = new_export("o"), *bad = new_export("o");
	faucet_import_report r = FAUCET_IMPORT_REPORT_INIT;
	(void)state;

	set(e, "o::a", "1");
	set(e, "o::boom", "2");
	set(e, "o::c", "3");
	assert_int_equal(faucet_import_namespace(s, e, 0, &r), 0);
	assert_false(r.atomic);
	tu_assert_strings(&r.written, "o::a", NULL);
	assert_non_null(r.error);
	assert_string_equal(r.error, "writing 'o::boom': disk full");
	tu_assert_value(s, "o::a", "1");
	tu_assert_value(s, "o::c", NULL); /* nothing after the failure */
	faucet_import_report_dispose(&r);

	/* An invalid document is an error return and writes nothing. */
	set(bad, "x::a", "1");
	assert_int_equal(faucet_import_namespace(s, bad, 0, &r), FAUCET_EINVALID);
	tu_assert_error_contains("outside the namespace");
	assert_int_equal(r.written.count, 0);
	assert_null(r.error);
	tu_assert_value(s, "x::a", NULL);
	faucet_import_report_dispose(&r);

	faucet_export_free(e);
	faucet_export_free(bad);
	faucet_store_free(s);
}

static void import_reports_batch_and_delete_failures(void **state)
{
	faucet_store *failing = open_test_backend(FAILING), *listing = open_test_backend(LISTING);
	faucet_export *e = new_export("o");
	faucet_import_report r = FAUCET_IMPORT_REPORT_INIT;
	faucet_value *v = NULL;
	(void)state;

	/* The failing store's plain calls work. */
	assert_int_equal(faucet_store_get(failing, "o::a", &v), 0);
	assert_null(v);
	tu_put(failing, "o::a", "1");
	assert_int_equal(faucet_store_delete(failing, "o::a"), 0);

	set(e, "o::a", "1");
	assert_int_equal(faucet_import_namespace(failing, e, 0, &r), 0);
	assert_true(r.atomic);
	assert_int_equal(r.written.count, 0);
	assert_non_null(r.error);
	assert_non_null(strstr(r.error, "tx aborted"));
	faucet_import_report_dispose(&r);

	/* A replace needs to list the namespace first: an error, nothing written. */
	assert_int_equal(faucet_import_namespace(failing, e, 1, &r), FAUCET_EUNSUPPORTED);
	assert_int_equal(r.written.count, 0);
	assert_null(r.error);
	faucet_import_report_dispose(&r);

	tu_put(listing, "o::stuck", "1");
	tu_put(listing, "o::gone", "1");
	tu_assert_value(listing, "o::stuck", "1");
	assert_int_equal(faucet_import_namespace(listing, e, 1, &r), 0);
	assert_false(r.atomic);
	tu_assert_strings(&r.written, "o::a", NULL);
	tu_assert_strings(&r.deleted, "o::gone", NULL);
	assert_non_null(r.error);
	assert_string_equal(r.error, "deleting stale 'o::stuck': locked");
	faucet_import_report_dispose(&r);

	faucet_export_free(e);
	faucet_store_free(failing);
	faucet_store_free(listing);
}

static void import_of_an_empty_document_with_replace_empties_the_namespace(void **state)
{
	faucet_store *s = NULL;
	faucet_export *e = new_export("o");
	faucet_import_report r = FAUCET_IMPORT_REPORT_INIT;
	faucet_strarray left = {NULL, 0};
	(void)state;

	assert_int_equal(faucet_store_open_memory(&s), 0);
	tu_put(s, "o::a", "1");
	tu_put(s, "o::b::__sla__", "{}");
	tu_put(s, "other::a", "1");
	assert_int_equal(faucet_import_namespace(s, e, 1, &r), 0);
	assert_int_equal(r.written.count, 0);
	tu_assert_strings(&r.deleted, "o::a", "o::b::__sla__", NULL);
	faucet_import_report_dispose(&r);
	assert_int_equal(faucet_store_list(s, "", &left), 0);
	tu_assert_strings(&left, "other::a", NULL);
	faucet_strarray_dispose(&left);
	faucet_export_free(e);
	faucet_store_free(s);
}

/* ---- reports that tell the truth ------------------------------------------ */

static void import_lists_an_outcome_unknown_put_as_written(void **state)
{
	faucet_store *s = open_test_backend(BARE);
	faucet_export *e = new_export("o");
	faucet_import_report r = FAUCET_IMPORT_REPORT_INIT;
	(void)state;

	set(e, "o::a", "1");
	set(e, "o::b::limbo", "2");
	set(e, "o::c", "3");
	assert_int_equal(faucet_import_namespace(s, e, 0, &r), 0);
	assert_false(r.atomic);
	/* The value is in place: the report must not say it was not written. */
	tu_assert_strings(&r.written, "o::a", "o::b::limbo", NULL);
	tu_assert_strings(&r.durability_unknown, "o::b::limbo", NULL);
	assert_int_equal(r.error_code, FAUCET_EUNKNOWN);
	assert_non_null(strstr(r.error, "writing 'o::b::limbo': renamed"));
	tu_assert_value(s, "o::b::limbo", "2");
	tu_assert_value(s, "o::c", NULL);
	faucet_import_report_dispose(&r);
	faucet_export_free(e);
	faucet_store_free(s);
}

static void import_lists_an_outcome_unknown_batch_as_written(void **state)
{
	faucet_store *s = open_test_backend(BATCHING);
	faucet_export *e = new_export("o");
	faucet_import_report r = FAUCET_IMPORT_REPORT_INIT;
	(void)state;

	set(e, "o::a", "1");
	set(e, "o::b::limbo", "2");
	assert_int_equal(faucet_import_namespace(s, e, 0, &r), 0);
	assert_true(r.atomic);
	tu_assert_strings(&r.written, "o::a", "o::b::limbo", NULL);
	tu_assert_strings(&r.durability_unknown, "o::a", "o::b::limbo", NULL);
	assert_int_equal(r.error_code, FAUCET_EUNKNOWN);
	assert_string_equal(r.error, "commit reply lost");
	faucet_import_report_dispose(&r);
	faucet_export_free(e);
	faucet_store_free(s);
}

/* More keys than one chunk: each chunk is one batch, so the import as a
 * whole is not atomic, and a failing chunk leaves the chunks before it. */
static void a_large_import_is_written_in_chunks_and_says_it_is_not_atomic(void **state)
{
	faucet_store *s = open_test_backend(BATCHING);
	faucet_export *e = new_export("o");
	faucet_value *one = tu_v("1");
	faucet_import_report r = FAUCET_IMPORT_REPORT_INIT;
	char key[32];
	(void)state;

	for (int i = 0; i < FAUCET_IMPORT_CHUNK + 5; i++) {
		snprintf(key, sizeof(key), "o::k%05d", i);
		assert_int_equal(faucet_export_set(e, key, one), 0);
	}
	assert_int_equal(faucet_export_set(e, "o::z::boom", one), 0);
	assert_int_equal(faucet_import_namespace(s, e, 0, &r), 0);
	assert_false(r.atomic);
	assert_int_equal(r.written.count, FAUCET_IMPORT_CHUNK);
	assert_string_equal(r.written.strings[FAUCET_IMPORT_CHUNK - 1], "o::k09999");
	assert_int_equal(r.durability_unknown.count, 0);
	assert_string_equal(r.error, "tx aborted");
	tu_assert_value(s, "o::k09999", "1");
	tu_assert_value(s, "o::k10000", NULL);
	faucet_import_report_dispose(&r);
	faucet_value_free(one);
	faucet_export_free(e);
	faucet_store_free(s);
}

/* ---- --replace with an empty source, --dry-run -------------------------- */

static void replace_with_an_empty_source_is_refused_unless_allowed(void **state)
{
	faucet_import_options replace = {.version = FAUCET_IMPORT_OPTIONS_VERSION, .replace = 1};
	faucet_import_options allowed = {.version = FAUCET_IMPORT_OPTIONS_VERSION, .replace = 1,
					 .allow_empty = 1};
	faucet_export *e = new_export("o");
	faucet_import_report r = FAUCET_IMPORT_REPORT_INIT;
	faucet_store *s = NULL;
	(void)state;

	assert_int_equal(faucet_store_open_memory(&s), 0);
	tu_put(s, "o::a", "1");
	assert_int_equal(faucet_import_namespace_ex(s, e, &replace, &r), FAUCET_EINVALID);
	tu_assert_error_contains("holds no key of it");
	assert_int_equal(r.deleted.count, 0);
	faucet_import_report_dispose(&r);
	tu_assert_value(s, "o::a", "1");

	assert_int_equal(faucet_import_namespace_ex(s, e, &allowed, &r), 0);
	tu_assert_strings(&r.deleted, "o::a", NULL);
	faucet_import_report_dispose(&r);
	tu_assert_value(s, "o::a", NULL);
	faucet_export_free(e);
	faucet_store_free(s);
}

static void dry_run_reports_and_writes_nothing(void **state)
{
	faucet_import_options dry = {.version = FAUCET_IMPORT_OPTIONS_VERSION, .replace = 1,
				     .dry_run = 1};
	faucet_export *e = new_export("o");
	faucet_import_report r = FAUCET_IMPORT_REPORT_INIT;
	faucet_store *s = NULL;
	(void)state;

	assert_int_equal(faucet_store_open_memory(&s), 0);
	tu_put(s, "o::a", "1");
	tu_put(s, "o::stale", "1");
	set(e, "o::a", "5");
	set(e, "o::c", "3");
	assert_int_equal(faucet_import_namespace_ex(s, e, &dry, &r), 0);
	assert_true(r.dry_run);
	tu_assert_strings(&r.written, "o::a", "o::c", NULL);
	tu_assert_strings(&r.deleted, "o::stale", NULL);
	assert_null(r.error);
	faucet_import_report_dispose(&r);
	tu_assert_value(s, "o::a", "1");
	tu_assert_value(s, "o::c", NULL);
	tu_assert_value(s, "o::stale", "1");
	faucet_export_free(e);
	faucet_store_free(s);
}

/* ---- importing from a file ------------------------------------------------ */

static FILE *temp_with(const char *text)
{
	FILE *f = tmpfile();

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	rewind(f);
	return f;
}

static void import_file_validates_all_before_writing(void **state)
{
	static const char *bad[] = {
		/* truncated after a complete first entry */
		"{\"version\":1,\"pipeline\":\"o\",\"keys\":{\"o::a\":1,\"o::b\":",
		/* the same key spelt twice */
		"{\"version\":1,\"pipeline\":\"o\",\"keys\":{\"o::a\":1,\"o::\\u0061\":2}}",
		/* a bad value last */
		"{\"version\":1,\"pipeline\":\"o\",\"keys\":{\"o::a\":1,\"o::b\":[1,}}",
		/* the version last, unsupported */
		"{\"pipeline\":\"o\",\"keys\":{\"o::a\":1},\"version\":2}",
		/* a key outside the namespace */
		"{\"version\":1,\"pipeline\":\"o\",\"keys\":{\"o::a\":1,\"x::b\":2}}",
	};
	faucet_import_options replace = {.version = FAUCET_IMPORT_OPTIONS_VERSION, .replace = 1};
	faucet_import_report r = FAUCET_IMPORT_REPORT_INIT;
	faucet_store *s = NULL;
	FILE *f;
	(void)state;

	assert_int_equal(faucet_store_open_memory(&s), 0);
	tu_put(s, "o::old", "0");
	for (size_t i = 0; i < N_ITEMS(bad); i++) {
		f = temp_with(bad[i]);
		if (faucet_import_file(s, f, &replace, &r) != FAUCET_EINVALID)
			fail_msg("expected %s to be refused", bad[i]);
		assert_null(r.pipeline);
		faucet_import_report_dispose(&r);
		fclose(f);
		tu_assert_value(s, "o::a", NULL);
		tu_assert_value(s, "o::old", "0");
	}

	/* Members in any order, white space anywhere, written in document order. */
	f = temp_with(" { \"keys\" : { \"o::b\" : { \"x\" : [ 1 , \"}\" ] } ,\n\"o::a\":18446744073709551615 } ,"
		      "\"pipeline\" : \"o\" , \"version\" : 1 } \n");
	assert_int_equal(faucet_import_file(s, f, &replace, &r), 0);
	fclose(f);
	assert_string_equal(r.pipeline, "o");
	tu_assert_strings(&r.written, "o::b", "o::a", NULL);
	tu_assert_strings(&r.deleted, "o::old", NULL);
	assert_null(r.error);
	faucet_import_report_dispose(&r);
	tu_assert_value(s, "o::a", "18446744073709551615");
	tu_assert_value(s, "o::b", "{\"x\":[1,\"}\"]}");
	faucet_store_free(s);
}

/* ---- the nesting limit survives a backup ------------------------------ */

static char *nested(int depth)
{
	char *text = malloc((size_t)depth * 2 + 2);

	assert_non_null(text);
	memset(text, '[', (size_t)depth);
	text[depth] = '1';
	memset(text + depth + 1, ']', (size_t)depth);
	text[2 * depth + 1] = '\0';
	return text;
}

/* The deepest value a put accepts. */
static int deepest_accepted(void)
{
	for (int depth = 300; depth > 0; depth--) {
		char *text = nested(depth);
		faucet_value *v = NULL;
		int rc = faucet_value_parse(&v, text, strlen(text));

		faucet_value_free(v);
		free(text);
		if (rc == 0)
			return depth;
	}
	fail_msg("no nesting accepted");
	return 0;
}

static void deepest_value_round_trips(faucet_store *src)
{
	int depth = deepest_accepted();
	char *deep = nested(depth), *doc = NULL;
	faucet_export *e = NULL, *back = NULL;
	faucet_import_report r = FAUCET_IMPORT_REPORT_INIT;
	faucet_store *dst = NULL;
	FILE *f = tmpfile();

	assert_true(depth >= 255);
	tu_put(src, "o::deep", deep);
	tu_put(src, "o::flat", "1");

	/* In memory: to_json, then parse. */
	assert_int_equal(faucet_export_namespace(src, "o", &e), 0);
	for (int pretty = 0; pretty <= 1; pretty++) {
		assert_int_equal(faucet_export_to_json(e, pretty, &doc), 0);
		if (faucet_export_parse(&back, doc, strlen(doc)) != 0)
			fail_msg("the export of a value put accepts is refused: %s",
				 faucet_error_last()->message);
		assert_int_equal(faucet_export_count(back), 2);
		faucet_export_free(back);
		faucet_free(doc);
	}
	faucet_export_free(e);

	/* Streamed: export_write, then import_file into another store. */
	assert_non_null(f);
	assert_int_equal(faucet_export_write(src, "o", NULL, 1, f, NULL), 0);
	rewind(f);
	assert_int_equal(faucet_store_open_memory(&dst), 0);
	if (faucet_import_file(dst, f, NULL, &r) != 0)
		fail_msg("import of the export refused: %s", faucet_error_last()->message);
	assert_null(r.error);
	assert_int_equal(r.written.count, 2);
	faucet_import_report_dispose(&r);
	tu_assert_value(dst, "o::deep", deep);
	fclose(f);
	faucet_store_free(dst);
	free(deep);
}

static void the_deepest_value_put_accepts_survives_export_and_import(void **state)
{
	faucet_store *mem = NULL, *file = NULL;
	char *dir = tu_tempdir();
	(void)state;

	assert_int_equal(faucet_store_open_memory(&mem), 0);
	deepest_value_round_trips(mem);
	faucet_store_free(mem);
	assert_int_equal(faucet_store_open_file(&file, dir, NULL), 0);
	deepest_value_round_trips(file);
	faucet_store_free(file);
	tu_rmrf(dir);
	free(dir);
}

/* export_write gives the text to_json gives. */
static void export_write_matches_to_json(void **state)
{
	faucet_store *s = NULL;
	faucet_export *e = NULL;
	char *doc = NULL, got[512];
	size_t n;
	FILE *f;
	(void)state;

	assert_int_equal(faucet_store_open_memory(&s), 0);
	tu_put(s, "o::a", "{\"n\":18446744073709551615}");
	tu_put(s, "o::b", "0.1");
	tu_put(s, "p::x", "1");
	for (int pretty = 0; pretty <= 1; pretty++) {
		assert_int_equal(faucet_export_namespace(s, "o", &e), 0);
		assert_int_equal(faucet_export_set_exported_at(e, "T"), 0);
		assert_int_equal(faucet_export_to_json(e, pretty, &doc), 0);
		f = tmpfile();
		assert_non_null(f);
		assert_int_equal(faucet_export_write(s, "o", "T", pretty, f, &n), 0);
		assert_int_equal(n, 2);
		rewind(f);
		n = fread(got, 1, sizeof(got) - 1, f);
		got[n] = '\0';
		assert_string_equal(got, doc);
		fclose(f);
		faucet_free(doc);
		faucet_export_free(e);
	}
	faucet_store_free(s);
}

/* The caller's functions of faucet_export_write_to / faucet_import_read:
 * a growing buffer to write to, a buffer read in small pieces, and a
 * failure after `fail_after` calls. */
typedef struct {
	faucet_buf out;
	const char *in;
	size_t in_len, in_pos, piece;
	int calls, fail_after, rewinds;
} io_ctx;

static int io_write(const char *data, size_t len, void *ctx)
{
	io_ctx *io = ctx;

	if (io->fail_after > 0 && ++io->calls >= io->fail_after)
		return faucet_error_set(FAUCET_EUNAVAILABLE, "the upload went away");
	return faucet__buf_put(&io->out, data, len);
}

static ptrdiff_t io_read(char *buf, size_t cap, void *ctx)
{
	io_ctx *io = ctx;
	size_t n = io->in_len - io->in_pos;

	if (io->fail_after > 0 && ++io->calls >= io->fail_after)
		return FAUCET_EIO;
	if (n > cap)
		n = cap;
	if (n > io->piece)
		n = io->piece;
	memcpy(buf, io->in + io->in_pos, n);
	io->in_pos += n;
	return (ptrdiff_t)n;
}

static int io_rewind(void *ctx)
{
	io_ctx *io = ctx;

	io->rewinds++;
	io->in_pos = 0;
	return 0;
}

static void export_and_import_through_the_callers_functions(void **state)
{
	faucet_import_report r = FAUCET_IMPORT_REPORT_INIT;
	faucet_store *s = NULL, *dst = NULL;
	io_ctx io;
	char *doc = NULL;
	faucet_export *e = NULL;
	size_t n = 9;
	(void)state;

	assert_int_equal(faucet_store_open_memory(&s), 0);
	assert_int_equal(faucet_store_open_memory(&dst), 0);
	tu_put(s, "o::a", "{\"n\":18446744073709551615}");
	tu_put(s, "o::b", "0.1");
	/* The text written is faucet_export_to_json's, byte for byte. */
	memset(&io, 0, sizeof(io));
	io.out = (faucet_buf)FAUCET_BUF_INIT;
	assert_int_equal(faucet_export_write_to(s, "o", "T", 1, io_write, &io, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(faucet_export_namespace(s, "o", &e), 0);
	assert_int_equal(faucet_export_set_exported_at(e, "T"), 0);
	assert_int_equal(faucet_export_to_json(e, 1, &doc), 0);
	assert_int_equal(io.out.len, strlen(doc));
	assert_memory_equal(io.out.ptr, doc, io.out.len);
	faucet_export_free(e);
	/* Read back in 7-byte pieces, validated whole, then written. */
	io.in = io.out.ptr;
	io.in_len = io.out.len;
	io.piece = 7;
	assert_int_equal(faucet_import_read(dst, io_read, io_rewind, &io, NULL, &r), 0);
	assert_null(r.error);
	assert_int_equal(r.written.count, 2);
	assert_int_equal(io.rewinds, 1);
	tu_assert_value(dst, "o::a", "{\"n\":18446744073709551615}");
	faucet_import_report_dispose(&r);
	/* A failing read: its code comes back, and nothing is written. */
	faucet_store_free(dst);
	assert_int_equal(faucet_store_open_memory(&dst), 0);
	io.in_pos = 0;
	io.calls = 0;
	io.fail_after = 2;
	assert_int_equal(faucet_import_read(dst, io_read, io_rewind, &io, NULL, &r), FAUCET_EIO);
	tu_assert_value(dst, "o::a", NULL);
	faucet_import_report_dispose(&r);
	faucet__buf_dispose(&io.out);
	/* A failing write: the export returns the function's code and message. */
	memset(&io, 0, sizeof(io));
	io.out = (faucet_buf)FAUCET_BUF_INIT;
	io.fail_after = 1;
	assert_int_equal(faucet_export_write_to(s, "o", "T", 0, io_write, &io, &n),
			 FAUCET_EUNAVAILABLE);
	tu_assert_error_contains("the upload went away");
	assert_int_equal(n, 0);
	faucet__buf_dispose(&io.out);
	assert_int_equal(faucet_export_write_to(s, "o", "T", 0, NULL, &io, &n), FAUCET_EINVALID);
	assert_int_equal(faucet_import_read(dst, io_read, NULL, &io, NULL, &r), FAUCET_EINVALID);
	faucet_free(doc);
	faucet_store_free(dst);
	faucet_store_free(s);
}

/* get_many: the values in key order, NULL for an absent key, through the
 * backend's own slot (SQLite: one transaction) or one get each. */
static void check_get_many(faucet_store *s)
{
	const char *keys[] = {"o::a", "o::missing", "o::b"};
	const char *bad[] = {"o::a", "bad key"};
	faucet_value *out[3];

	tu_put(s, "o::a", "{\"n\":1}");
	tu_put(s, "o::b", "18446744073709551615");
	assert_int_equal(faucet_store_get_many(s, keys, 3, out), 0);
	assert_string_equal(faucet_value_json(out[0]), "{\"n\":1}");
	assert_null(out[1]);
	assert_string_equal(faucet_value_json(out[2]), "18446744073709551615");
	faucet_value_free(out[0]);
	faucet_value_free(out[2]);
	assert_int_equal(faucet_store_get_many(s, bad, 2, out), FAUCET_EINVALID);
	assert_null(out[0]);
	assert_null(out[1]);
	assert_int_equal(faucet_store_get_many(s, keys, 0, out), 0);
}

static void get_many_reads_values_in_key_order(void **state)
{
	faucet_store *mem = NULL, *sq = NULL;
	char *dir = tu_tempdir(), *db = tu_join(dir, "s.db"), *url = NULL;
	(void)state;

	assert_int_equal(faucet_store_open_memory(&mem), 0);
	check_get_many(mem);
	faucet_store_free(mem);
	/* A backend without a get_many slot is read by get. */
	mem = open_test_backend(BARE);
	check_get_many(mem);
	faucet_store_free(mem);
	assert_true(asprintf(&url, "sqlite:%s", db) > 0);
	assert_int_equal(faucet_store_open_url(&sq, url), 0);
	check_get_many(sq);
	faucet_store_free(sq);
	tu_rmrf(dir);
	free(url);
	free(db);
	free(dir);
}

/* FAUCET_TEST_IMPORT_CHUNK makes an import's chunk smaller for tests; any
 * value that is not a whole number from 1 to FAUCET_IMPORT_CHUNK leaves the
 * chunk as it is. */
static void the_import_chunk_is_only_made_smaller_by_a_valid_number(void **state)
{
	static const char *const ignored[] = {"", "0", "-1", "05", "x", "12x", " 3",
					      "10001", "99999999999999999999999"};
	(void)state;

	assert_int_equal(unsetenv("FAUCET_TEST_IMPORT_CHUNK"), 0);
	assert_int_equal(faucet__import_chunk(), FAUCET_IMPORT_CHUNK);
	assert_int_equal(setenv("FAUCET_TEST_IMPORT_CHUNK", "1", 1), 0);
	assert_int_equal(faucet__import_chunk(), 1);
	assert_int_equal(setenv("FAUCET_TEST_IMPORT_CHUNK", "10000", 1), 0);
	assert_int_equal(faucet__import_chunk(), FAUCET_IMPORT_CHUNK);
	for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++) {
		assert_int_equal(setenv("FAUCET_TEST_IMPORT_CHUNK", ignored[i], 1), 0);
		assert_int_equal(faucet__import_chunk(), FAUCET_IMPORT_CHUNK);
	}
	assert_int_equal(unsetenv("FAUCET_TEST_IMPORT_CHUNK"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(export_document_parses_and_validates),
		cmocka_unit_test(the_import_chunk_is_only_made_smaller_by_a_valid_number),
		cmocka_unit_test(documents_of_the_wrong_shape_are_refused),
		cmocka_unit_test(malformed_document_text_is_refused_with_the_offset),
		cmocka_unit_test(set_keeps_keys_sorted_and_replaces),
		cmocka_unit_test(to_json_round_trips_with_full_fidelity),
		cmocka_unit_test(to_json_of_an_empty_document),
		cmocka_unit_test(parsed_values_outlive_the_document),
		cmocka_unit_test(export_then_import_round_trips_and_replace_drops_stale_keys),
		cmocka_unit_test(export_skips_keys_deleted_after_the_listing),
		cmocka_unit_test(import_reports_partial_progress_on_a_non_atomic_store),
		cmocka_unit_test(import_reports_batch_and_delete_failures),
		cmocka_unit_test(import_of_an_empty_document_with_replace_empties_the_namespace),
		cmocka_unit_test(import_lists_an_outcome_unknown_put_as_written),
		cmocka_unit_test(import_lists_an_outcome_unknown_batch_as_written),
		cmocka_unit_test(a_large_import_is_written_in_chunks_and_says_it_is_not_atomic),
		cmocka_unit_test(replace_with_an_empty_source_is_refused_unless_allowed),
		cmocka_unit_test(dry_run_reports_and_writes_nothing),
		cmocka_unit_test(import_file_validates_all_before_writing),
		cmocka_unit_test(the_deepest_value_put_accepts_survives_export_and_import),
		cmocka_unit_test(export_write_matches_to_json),
		cmocka_unit_test(export_and_import_through_the_callers_functions),
		cmocka_unit_test(get_many_reads_values_in_key_order),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
