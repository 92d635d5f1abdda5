/*
 * test_keys.c - state key validation, the typed key builder, rendering
 * under schemes 1 and 2, legacy renderings, parsing and component encoding.
 *
 * The expected hashes in the encoding tests were computed independently of
 * this code (FNV-1a 64 in a few lines of Python), so they pin the exact
 * renderings the original faucet stored.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define N_ITEMS(a) (sizeof(a) / sizeof((a)[0]))

/* Render k, compare with want, free both the rendering and the key. */
static void assert_renders(faucet_key *k, const char *want)
{
	char *got = faucet_key_render(k);

	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
	faucet_key_free(k);
}

static faucet_key *invocation(const char *pipeline, const char *row)
{
	faucet_key *k = NULL;

	assert_int_equal(faucet_key_new_invocation(&k, pipeline, row), 0);
	return k;
}

static faucet_key *pipeline_key(const char *pipeline)
{
	faucet_key *k = NULL;

	assert_int_equal(faucet_key_new_pipeline(&k, pipeline), 0);
	return k;
}

static void assert_owned_string(char *got, const char *want)
{
	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
}

static void renders_every_kind(void **state)
{
	static const struct {
		faucet_suffix_kind kind;
		const char *arg;
		const char *want;
	} invocation_suffixes[] = {
		{FAUCET_SUFFIX_SLA, NULL, "p::r::__sla__"},
		{FAUCET_SUFFIX_PROFILING, NULL, "p::r::__profiling__"},
		{FAUCET_SUFFIX_ROLLBACK_INDEX, NULL, "p::r::__rollback__"},
		{FAUCET_SUFFIX_ROLLBACK_RUN, "x", "p::r::__rollback__::x"},
		{FAUCET_SUFFIX_STATUS, NULL, "p::r::__status__"},
		{FAUCET_SUFFIX_LEASE, NULL, "p::r::__lease__"},
	}, pipeline_suffixes[] = {
		{FAUCET_SUFFIX_REPLICATION, NULL, "p::__replication__"},
		{FAUCET_SUFFIX_BACKFILL, "h", "p::__backfill__::h"},
		{FAUCET_SUFFIX_SERVE_BACKFILL, "h", "p::__serve_backfill__::h"},
	};
	faucet_key *k;
	(void)state;

	assert_renders(invocation("p", "r"), "p::r");
	assert_renders(pipeline_key("p"), "p");
	k = invocation("p", "r");
	assert_int_equal(faucet_key_set_tenant(k, "acme"), 0);
	assert_renders(k, "acme::p::r");
	k = invocation("p", "r");
	assert_int_equal(faucet_key_set_parent_key(k, "42"), 0);
	assert_renders(k, "p::r::42");
	k = invocation("p", "r");
	assert_int_equal(faucet_key_set_sub(k, "a:1/b:2"), 0);
	assert_renders(k, "p::r::a:1/b:2");
	k = invocation("p", "r");
	assert_int_equal(faucet_key_set_shard(k, "s3"), 0);
	assert_renders(k, "p::r::s3");

	for (size_t i = 0; i < N_ITEMS(invocation_suffixes); i++) {
		assert_false(faucet_suffix_is_pipeline_level(invocation_suffixes[i].kind));
		k = invocation("p", "r");
		assert_int_equal(faucet_key_set_suffix(k, invocation_suffixes[i].kind,
						       invocation_suffixes[i].arg), 0);
		assert_renders(k, invocation_suffixes[i].want);
	}
	for (size_t i = 0; i < N_ITEMS(pipeline_suffixes); i++) {
		assert_true(faucet_suffix_is_pipeline_level(pipeline_suffixes[i].kind));
		k = pipeline_key("p");
		assert_int_equal(faucet_key_set_suffix(k, pipeline_suffixes[i].kind,
						       pipeline_suffixes[i].arg), 0);
		assert_renders(k, pipeline_suffixes[i].want);
	}

	assert_int_equal(faucet_key_new_from_rendered(&k, "p::r::7"), 0);
	assert_int_equal(faucet_key_set_suffix(k, FAUCET_SUFFIX_STATUS, NULL), 0);
	assert_renders(k, "p::r::7::__status__");

	assert_owned_string(faucet_suffix_render(FAUCET_SUFFIX_ROLLBACK_RUN, "x"), "__rollback__::x");
	assert_owned_string(faucet_suffix_render(FAUCET_SUFFIX_LEASE, NULL), "__lease__");
	assert_owned_string(faucet_suffix_tail(FAUCET_SUFFIX_LEASE, NULL), "::__lease__");
	assert_owned_string(faucet_suffix_tail(FAUCET_SUFFIX_BACKFILL, "h"), "::__backfill__::h");
	assert_owned_string(faucet_suffix_tail(FAUCET_SUFFIX_NONE, NULL), "");
	k = invocation("p", "r");
	assert_owned_string(faucet_key_children_prefix(k), "p::r::");
	faucet_key_free(k);
	assert_owned_string(faucet_namespace_prefix("orders"), "orders::");
}

static void accessors_report_components(void **state)
{
	faucet_key *k = invocation("p", "r"), *r = NULL;
	char *want_sub = faucet_encode_component("a b", 1);
	(void)state;

	assert_int_equal(faucet_key_set_tenant(k, "t"), 0);
	assert_int_equal(faucet_key_set_parent_key(k, "a b"), 0);
	assert_int_equal(faucet_key_set_shard(k, "s"), 0);
	assert_int_equal(faucet_key_set_suffix(k, FAUCET_SUFFIX_LEASE, NULL), 0);
	assert_string_equal(faucet_key_tenant(k), "t");
	assert_string_equal(faucet_key_pipeline_name(k), "p");
	assert_string_equal(faucet_key_row(k), "r");
	assert_owned_string(faucet_key_sub(k), want_sub);
	assert_string_equal(faucet_key_shard(k), "s");
	assert_int_equal(faucet_key_suffix(k), FAUCET_SUFFIX_LEASE);
	assert_null(faucet_key_suffix_arg(k));
	assert_owned_string(faucet_key_namespace(k), "t::p");
	faucet_key_free(k);
	free(want_sub);

	/* A key built from a rendering ignores the component setters. */
	assert_int_equal(faucet_key_new_from_rendered(&r, "x::y"), 0);
	assert_int_equal(faucet_key_set_tenant(r, "ignored"), 0);
	assert_int_equal(faucet_key_set_row(r, "ignored"), 0);
	assert_int_equal(faucet_key_set_parent_key(r, "ignored"), 0);
	assert_int_equal(faucet_key_set_sub(r, "ignored"), 0);
	assert_owned_string(faucet_key_render(r), "x::y");
	assert_null(faucet_key_tenant(r));
	assert_null(faucet_key_pipeline_name(r));
	assert_null(faucet_key_row(r));
	assert_null(faucet_key_sub(r));
	assert_owned_string(faucet_key_namespace(r), "x::y");
	faucet_key_free(r);

	k = invocation("p", "r");
	assert_null(faucet_key_sub(k));
	assert_null(faucet_key_shard(k));
	assert_int_equal(faucet_key_suffix(k), FAUCET_SUFFIX_NONE);
	/* NULL clears a component again. */
	assert_int_equal(faucet_key_set_sub(k, "x"), 0);
	assert_int_equal(faucet_key_set_sub(k, NULL), 0);
	assert_int_equal(faucet_key_set_suffix(k, FAUCET_SUFFIX_BACKFILL, "h"), 0);
	assert_string_equal(faucet_key_suffix_arg(k), "h");
	assert_int_equal(faucet_key_set_suffix(k, FAUCET_SUFFIX_NONE, NULL), 0);
	assert_renders(k, "p::r");
}

static void setters_refuse_bad_arguments(void **state)
{
	faucet_key *k = invocation("p", "r"), *none = (faucet_key *)0x1;
	(void)state;

	/* A suffix that carries a run id or hash needs one. */
	assert_int_equal(faucet_key_set_suffix(k, FAUCET_SUFFIX_ROLLBACK_RUN, NULL),
			 FAUCET_EINVALID);
	assert_int_equal(faucet_key_set_suffix(k, (faucet_suffix_kind)99, NULL), FAUCET_EINVALID);
	tu_assert_error_contains("unknown key suffix");
	assert_int_equal(faucet_key_suffix(k), FAUCET_SUFFIX_NONE);
	assert_int_equal(faucet_key_set_row(NULL, "r"), FAUCET_EINVALID);
	assert_int_equal(faucet_key_new_pipeline(&none, NULL), FAUCET_EINVALID);
	assert_null(none);
	none = (faucet_key *)0x1;
	assert_int_equal(faucet_key_new_invocation(&none, "p", NULL), FAUCET_EINVALID);
	assert_null(none);
	none = (faucet_key *)0x1;
	assert_int_equal(faucet_key_new_from_rendered(&none, NULL), FAUCET_EINVALID);
	assert_null(none);
	faucet_key_free(k);
	faucet_key_free(NULL);
}

static void parent_keys_are_encoded_and_remember_the_verbatim_scheme(void **state)
{
	faucet_key *k = invocation("p", "r");
	faucet_strarray legacy = {NULL, 0};
	char *now;
	(void)state;

	assert_int_equal(faucet_key_set_parent_key(k, "a b"), 0);
	now = faucet_key_render(k);
	assert_string_not_equal(now, "p::r::a b");
	assert_string_equal(now, "p::r::ab.he63f991904833892");
	free(now);
	assert_owned_string(faucet_key_render_scheme(k, 1), "p::r::a b");
	/* "p::r::a b" is not a valid key, so scheme 1 never stored it. */
	assert_int_equal(faucet_key_legacy_renderings(k, &legacy), 0);
	assert_int_equal(legacy.count, 0);
	faucet_strarray_dispose(&legacy);
	faucet_key_free(k);

	k = invocation("p", "r");
	assert_int_equal(faucet_key_set_parent_key(k, "x::y"), 0);
	assert_int_equal(faucet_key_legacy_renderings(k, &legacy), 0);
	tu_assert_strings(&legacy, "p::r::x::y", NULL);
	faucet_strarray_dispose(&legacy);
	faucet_key_free(k);

	k = invocation("p", "r");
	assert_int_equal(faucet_key_set_parent_key(k, "plain"), 0);
	assert_int_equal(faucet_key_legacy_renderings(k, &legacy), 0);
	assert_int_equal(legacy.count, 0);
	faucet_strarray_dispose(&legacy);
	faucet_key_free(k);
}

/* encode_component(raw, allow) must equal want, and be valid in a key. */
static void assert_encodes(const char *raw, int allow, const char *want)
{
	char *got = faucet_encode_component(raw, allow), *key;

	assert_non_null(got);
	if (strcmp(got, want) != 0)
		fail_msg("encode_component(\"%s\", %d): expected %s, got %s", raw, allow, want, got);
	if (asprintf(&key, "p::r::%s", got) < 0)
		fail_msg("asprintf");
	if (faucet_validate_key(key) != 0)
		fail_msg("%s: %s", key, faucet_error_last()->message);
	free(key);
	free(got);
}

static void encode_component_keeps_legal_values_and_hashes_the_rest(void **state)
{
	char long_z[66], want_long[64];
	char *got;
	(void)state;

	assert_encodes("cust-42_a.b", 0, "cust-42_a.b");
	assert_encodes("a/b:c", 1, "a/b:c");
	got = faucet_encode_component("a/b:c", 0);
	assert_string_not_equal(got, "a/b:c");
	free(got);
	assert_encodes("a/b:c", 0, "abc.h9f1fd9bc435d1ea6");

	/* The seed's cases, each with its independently computed hash. */
	assert_encodes("", 1, ".hcbf29ce484222325");
	assert_encodes("x::y", 1, "xy.h1f99055382621cda");
	assert_encodes(":x", 1, "x.h081e4c07b4da60ef");
	assert_encodes("y:", 1, "y.h08ed8c07b58a69ea");
	assert_encodes("\xc3\xa9moji", 1, "moji.h2f82db6cf87451f8");
	memset(long_z, 'z', 65);
	long_z[65] = '\0';
	memset(want_long, 'z', 32);
	strcpy(want_long + 32, ".h682efacdee97446d");
	assert_encodes(long_z, 1, want_long);
	/* 64 bytes is still kept verbatim. */
	long_z[64] = '\0';
	assert_encodes(long_z, 1, long_z);
	assert_encodes("user@example.com", 0, "userexample.com.hb8169be981f3cadb");
	assert_encodes(NULL, 1, ".hcbf29ce484222325");
	assert_int_equal(faucet_fnv1a64("a b", 3), 0xe63f991904833892ULL);
}

static void parse_round_trips_every_kind(void **state)
{
	static const char *const keys[] = {
		"p::r",
		"p::r::42",
		"p::r::a:1/b:2",
		"p::r::__sla__",
		"p::r::__profiling__",
		"p::r::__rollback__",
		"p::r::__rollback__::run1",
		"p::r::7::__status__",
		"p::r::__lease__",
		"p::__replication__",
		"p::__backfill__::abc",
		"p::__serve_backfill__::abc",
		"p::backfill::h::2026-01-01",
		"p::backfill::h::u1::__status__",
		"p::backfill",
	};
	static const char *const outside[] = {"q::r", "p::", "px::r", "p", ""};
	faucet_key *k = NULL;
	char *sub;
	(void)state;

	for (size_t i = 0; i < N_ITEMS(keys); i++) {
		if (faucet_key_parse(&k, NULL, "p", keys[i]) != 0)
			fail_msg("parse %s: %s", keys[i], faucet_error_last()->message);
		assert_renders(k, keys[i]);
	}
	assert_owned_string(faucet_backfill_unit_row("h", "u"), "backfill::h::u");

	assert_int_equal(faucet_key_parse(&k, NULL, "p", "p::backfill::h::u1::__lease__"), 0);
	assert_string_equal(faucet_key_row(k), "backfill::h::u1");
	assert_int_equal(faucet_key_suffix(k), FAUCET_SUFFIX_LEASE);
	faucet_key_free(k);

	assert_int_equal(faucet_key_parse(&k, "t", "p", "t::p::r::9"), 0);
	assert_string_equal(faucet_key_tenant(k), "t");
	assert_string_equal(faucet_key_row(k), "r");
	assert_owned_string(faucet_key_sub(k), "9");
	faucet_key_free(k);

	/* Suffix arguments and pipeline-level markers come back as such. */
	assert_int_equal(faucet_key_parse(&k, NULL, "p", "p::r::__rollback__::run1"), 0);
	assert_int_equal(faucet_key_suffix(k), FAUCET_SUFFIX_ROLLBACK_RUN);
	assert_string_equal(faucet_key_suffix_arg(k), "run1");
	assert_null(faucet_key_sub(k));
	faucet_key_free(k);
	assert_int_equal(faucet_key_parse(&k, NULL, "p", "p::__backfill__::abc"), 0);
	assert_int_equal(faucet_key_suffix(k), FAUCET_SUFFIX_BACKFILL);
	assert_string_equal(faucet_key_suffix_arg(k), "abc");
	assert_null(faucet_key_row(k));
	faucet_key_free(k);
	/* A shard cannot be told from a sub: it comes back as the sub. */
	assert_int_equal(faucet_key_parse(&k, NULL, "p", "p::r::s3::x::__sla__"), 0);
	sub = faucet_key_sub(k);
	assert_string_equal(sub, "s3::x");
	free(sub);
	assert_null(faucet_key_shard(k));
	faucet_key_free(k);

	for (size_t i = 0; i < N_ITEMS(outside); i++) {
		k = (faucet_key *)0x1;
		assert_int_equal(faucet_key_parse(&k, NULL, "p", outside[i]), FAUCET_ENOTFOUND);
		assert_null(k);
	}
	/* The tenant is part of the namespace. */
	assert_int_equal(faucet_key_parse(&k, "t", "p", "p::r"), FAUCET_ENOTFOUND);
	assert_int_equal(faucet_key_parse(&k, NULL, "p", NULL), FAUCET_EINVALID);
}

/* ---- validation (seed 001) ------------------------------------------ */

static void rejects_empty_key(void **state)
{
	(void)state;
	assert_int_equal(faucet_validate_key(""), FAUCET_EINVALID);
	tu_assert_error_contains("must not be empty");
	assert_int_equal(faucet_validate_key(NULL), FAUCET_EINVALID);
}

static void rejects_path_traversal_segments(void **state)
{
	static const char *const bad[] = {
		"../etc/passwd", "a/../b", "a/./b", "a//b", "/a", "a/", "a/.x", "a\\b", "..", ".",
	};
	(void)state;

	for (size_t i = 0; i < N_ITEMS(bad); i++) {
		if (faucet_validate_key(bad[i]) != FAUCET_EINVALID)
			fail_msg("expected %s to be rejected", bad[i]);
	}
	/* A '/' between an owner and a name is fine. */
	assert_int_equal(faucet_validate_key("acme/erp::invoices"), 0);
}

static void rejects_leading_dot(void **state)
{
	(void)state;
	assert_int_equal(faucet_validate_key(".hidden"), FAUCET_EINVALID);
	tu_assert_error_contains("must not begin with a dot");
}

static void rejects_over_long_key(void **state)
{
	char key[258];
	(void)state;

	memset(key, 'a', 257);
	key[257] = '\0';
	assert_int_equal(faucet_validate_key(key), FAUCET_EINVALID);
	tu_assert_error_contains("exceeds 256");
	key[256] = '\0';
	assert_int_equal(faucet_validate_key(key), 0);
}

static void accepts_typical_keys(void **state)
{
	static const char *const good[] = {
		"github_issues", "pipeline:rest:issues", "with.dot", "with-dash_and_underscore",
		"lower-Case_99",
	};
	(void)state;

	for (size_t i = 0; i < N_ITEMS(good); i++) {
		if (faucet_validate_key(good[i]) != 0)
			fail_msg("expected %s to pass: %s", good[i], faucet_error_last()->message);
	}
}

static void error_names_the_key_the_character_and_the_offset(void **state)
{
	(void)state;
	assert_int_equal(faucet_validate_key("o::a b"), FAUCET_EINVALID);
	tu_assert_error_contains("state key 'o::a b'");
	tu_assert_error_contains("illegal character ' '");
	tu_assert_error_contains("at byte 4");
	assert_int_equal(faucet_validate_key("k\xc3\xa9"), FAUCET_EINVALID);
	tu_assert_error_contains("\\xc3 at byte 1");
	assert_int_equal(faucet_validate_key("a//b"), FAUCET_EINVALID);
	tu_assert_error_contains("at byte 2");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(renders_every_kind),
		cmocka_unit_test(accessors_report_components),
		cmocka_unit_test(setters_refuse_bad_arguments),
		cmocka_unit_test(parent_keys_are_encoded_and_remember_the_verbatim_scheme),
		cmocka_unit_test(encode_component_keeps_legal_values_and_hashes_the_rest),
		cmocka_unit_test(parse_round_trips_every_kind),
		cmocka_unit_test(rejects_empty_key),
		cmocka_unit_test(rejects_path_traversal_segments),
		cmocka_unit_test(rejects_leading_dot),
		cmocka_unit_test(rejects_over_long_key),
		cmocka_unit_test(accepts_typical_keys),
		cmocka_unit_test(error_names_the_key_the_character_and_the_offset),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
