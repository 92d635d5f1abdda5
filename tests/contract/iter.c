/*
 * iter.c - the key iterator's contract (faucet_store_iter_*) against every
 * backend: the keys of faucet_store_list, the same set in the same order,
 * whatever the page size and wherever the pages break; every key once and
 * in strictly increasing order while others write; freed at any point.
 * Every list the main suite checks (contract.c's assert_list) is also
 * checked through the iterator by contract_assert_iter_matches.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "contract.h"

typedef contract_fixture fixture;

static const contract_backend *current;

static int setup(void **state)
{
	return contract_fixture_setup(state, current, "iter");
}

static int teardown(void **state)
{
	return contract_fixture_teardown(state, current);
}

static faucet_store *S(void **state)
{
	return contract_fixture_store(state);
}

/* Every key of an iterator over `prefix` with pages of `page` keys (0 =
 * the default), copied; fails the test on an error. */
static void iterate(faucet_store *s, const char *prefix, size_t page, faucet_strarray *out)
{
	faucet_store_iter *it = NULL;
	const char *key = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (faucet_store_iter_new(s, prefix, &it) != 0)
		fail_msg("%s: iter_new '%s': %s", current->name, prefix,
			 faucet_error_last()->message);
	if (page > 0)
		assert_int_equal(faucet_store_iter_set_page_size(it, page), 0);
	while ((rc = faucet_store_iter_next(it, &key)) == 1) {
		char **grown = realloc(out->strings, (out->count + 1) * sizeof(*grown));

		assert_non_null(grown);
		out->strings = grown;
		out->strings[out->count] = strdup(key);
		assert_non_null(out->strings[out->count++]);
	}
	if (rc != 0)
		fail_msg("%s: iter_next '%s': %s", current->name, prefix,
			 faucet_error_last()->message);
	assert_null(key);
	/* The end stays the end. */
	assert_int_equal(faucet_store_iter_next(it, &key), 0);
	faucet_store_iter_free(it);
}

void contract_assert_iter_matches(faucet_store *s, const char *prefix, const faucet_strarray *want,
				  const char *backend)
{
	static const size_t pages[] = {0, 1, 2, 3};

	for (size_t p = 0; p < sizeof(pages) / sizeof(pages[0]); p++) {
		faucet_strarray got;

		iterate(s, prefix, pages[p], &got);
		if (got.count != want->count)
			fail_msg("%s: iterator '%s' (page %zu) gave %zu keys, list %zu", backend,
				 prefix, pages[p], got.count, want->count);
		for (size_t i = 0; i < got.count; i++) {
			if (strcmp(got.strings[i], want->strings[i]) != 0)
				fail_msg("%s: iterator '%s' (page %zu) [%zu] = '%s', list '%s'",
					 backend, prefix, pages[p], i, got.strings[i],
					 want->strings[i]);
		}
		faucet_strarray_dispose(&got);
	}
}

/* The iterator against faucet_store_list for one prefix. */
static void assert_same_as_list(faucet_store *s, const char *prefix, size_t want_count)
{
	faucet_strarray listed = {0};

	if (faucet_store_list(s, prefix, &listed) != 0)
		fail_msg("%s: list '%s': %s", current->name, prefix, faucet_error_last()->message);
	assert_int_equal(listed.count, want_count);
	contract_assert_iter_matches(s, prefix, &listed, current->name);
	faucet_strarray_dispose(&listed);
}

/* 1000 keys between neighbours on both sides, through pages that divide
 * the count (an empty last page) and pages that do not. */
static void iterator_pages_through_many_keys(void **state)
{
	static const size_t pages[] = {7, 250, 999, 1000, 1001};
	faucet_store *s = S(state);
	faucet_value *v = tu_v("1");
	faucet_entry entries[100];
	char keys[100][32];

	for (int from = 0; from < 1000; from += 100) {
		for (int i = 0; i < 100; i++) {
			snprintf(keys[i], sizeof(keys[i]), "it::%04d", from + i);
			entries[i] = (faucet_entry){keys[i], v};
		}
		assert_int_equal(faucet_store_put_batch(s, entries, 100), 0);
	}
	tu_put(s, "is::before", "0");
	tu_put(s, "it:", "0");
	tu_put(s, "iu::after", "0");
	for (size_t p = 0; p < sizeof(pages) / sizeof(pages[0]); p++) {
		faucet_strarray got;

		iterate(s, "it::", pages[p], &got);
		assert_int_equal(got.count, 1000);
		for (size_t i = 0; i < got.count; i++) {
			char want[32];

			snprintf(want, sizeof(want), "it::%04zu", i);
			assert_string_equal(got.strings[i], want);
		}
		faucet_strarray_dispose(&got);
	}
	assert_same_as_list(s, "", 1003);
	assert_same_as_list(s, "it:", 1001);
	faucet_value_free(v);
}

/* Keys on both sides of the prefix's edge, and prefixes past every key
 * byte (DEL, a UTF-8 letter) or ending where no key does. */
static void iterator_keeps_the_prefix_edges(void **state)
{
	static const char *const keys[] = {"A", "Z", "`a", "a", "a-", "a.", "a/b", "a0", "a9",
					   "a:", "aA", "aZ", "a_", "aa", "az", "az:", "b", "b-"};
	const size_t n = sizeof(keys) / sizeof(keys[0]);
	faucet_store *s = S(state);

	for (size_t i = 0; i < n; i++)
		if (keys[i][0] != '`') /* '`' is no key character: the neighbour is kept out */
			tu_put(s, keys[i], "true");
	assert_same_as_list(s, "", n - 1);
	assert_same_as_list(s, "a", 13);
	assert_same_as_list(s, "az", 2);
	assert_same_as_list(s, "a:", 1);
	assert_same_as_list(s, "b", 2);
	assert_same_as_list(s, "Z", 1);
	assert_same_as_list(s, "a\x7f", 0);
	assert_same_as_list(s, "\x7f", 0);
	assert_same_as_list(s, "a\xc3\xa9", 0);
	assert_same_as_list(s, "~", 0);
	assert_same_as_list(s, "nothing", 0);
}

/* The run bookkeeping keys are listed, so they are iterated too. */
static void iterator_lists_the_bookkeeping_as_list_does(void **state)
{
	faucet_store *s = S(state);

	tu_put(s, "o::a", "1");
	tu_put(s, "o::__status__", "{\"version\":1,\"runs\":[]}");
	tu_put(s, "o::__rollback__", "{\"version\":1,\"runs\":[]}");
	tu_put(s, "o::r::__lease__", "{\"holder\":\"h\",\"expires_at\":1}");
	tu_put(s, "o::r::__rollback__::20260101T000000.000Z-abcdef", "{}");
	tu_put(s, "o::z", "2");
	assert_same_as_list(s, "o::", 6);
	assert_same_as_list(s, "o::r::", 2);
}

/* Writes between calls: the keys that stay are each seen once, in strictly
 * increasing order; a key deleted before the iterator reaches it may be
 * gone and one written ahead of it may appear (paging), never one behind. */
static void iterator_under_writes_gives_each_key_once_in_order(void **state)
{
	static const char *const keys[] = {"w::1", "w::2", "w::3", "w::4", "w::5", "w::6"};
	faucet_store *s = S(state);
	faucet_store_iter *it = NULL;
	const char *key = NULL;
	char prev[64] = "";
	int seen4 = 0, seen5 = 0, seen6 = 0, n = 0, rc;

	for (size_t i = 0; i < 6; i++)
		tu_put(s, keys[i], "1");
	assert_int_equal(faucet_store_iter_new(s, "w::", &it), 0);
	assert_int_equal(faucet_store_iter_set_page_size(it, 2), 0);
	assert_int_equal(faucet_store_iter_next(it, &key), 1);
	assert_string_equal(key, "w::1");
	assert_int_equal(faucet_store_iter_next(it, &key), 1);
	assert_string_equal(key, "w::2");
	snprintf(prev, sizeof(prev), "%s", key);
	tu_put(s, "w::0", "1");  /* behind the iterator: never seen */
	tu_put(s, "w::1", "2");  /* rewritten behind it: not seen again */
	tu_put(s, "w::25", "1"); /* ahead: may be seen */
	assert_int_equal(faucet_store_delete(s, "w::3"), 0);
	while ((rc = faucet_store_iter_next(it, &key)) == 1) {
		assert_true(strcmp(prev, key) < 0);
		snprintf(prev, sizeof(prev), "%s", key);
		seen4 += strcmp(key, "w::4") == 0;
		seen5 += strcmp(key, "w::5") == 0;
		seen6 += strcmp(key, "w::6") == 0;
		if (++n == 1)
			tu_put(s, "w::55", "1"); /* ahead again, after a page was read */
	}
	assert_int_equal(rc, 0);
	assert_int_equal(seen4, 1);
	assert_int_equal(seen5, 1);
	assert_int_equal(seen6, 1);
	assert_string_equal(prev, "w::6");
	faucet_store_iter_free(it);
}

/* Freed before the end (a loop that breaks), after it, and unused; NULL
 * is ignored.  The sanitizer build checks that nothing leaks. */
static void iterator_can_be_freed_at_any_point(void **state)
{
	faucet_store *s = S(state);
	faucet_store_iter *it = NULL;
	const char *key = NULL;

	for (int i = 0; i < 50; i++) {
		char k[32];

		snprintf(k, sizeof(k), "f::%02d", i);
		tu_put(s, k, "1");
	}
	assert_int_equal(faucet_store_iter_new(s, "f::", &it), 0);
	faucet_store_iter_free(it); /* unused */
	assert_int_equal(faucet_store_iter_new(s, "f::", &it), 0);
	assert_int_equal(faucet_store_iter_set_page_size(it, 4), 0);
	for (int i = 0; i < 6; i++)
		assert_int_equal(faucet_store_iter_next(it, &key), 1);
	assert_string_equal(key, "f::05");
	faucet_store_iter_free(it); /* mid-page, mid-listing */
	faucet_store_iter_free(NULL);
	/* The store is untouched and usable. */
	assert_same_as_list(s, "f::", 50);
}

/* Bad arguments are FAUCET_EINVALID with nothing allocated. */
static void iterator_refuses_bad_arguments(void **state)
{
	faucet_store *s = S(state);
	faucet_store_iter *it = (faucet_store_iter *)0x1;
	const char *key = "x";

	assert_int_equal(faucet_store_iter_new(s, "", NULL), FAUCET_EINVALID);
	assert_int_equal(faucet_store_iter_new(NULL, "", &it), FAUCET_EINVALID);
	assert_null(it);
	assert_int_equal(faucet_store_iter_new(s, NULL, &it), 0); /* NULL = every key */
	assert_int_equal(faucet_store_iter_set_page_size(it, 0), FAUCET_EINVALID);
	tu_assert_error_contains("page size 0 is out of range");
	assert_int_equal(faucet_store_iter_set_page_size(it, 100001), FAUCET_EINVALID);
	assert_int_equal(faucet_store_iter_next(it, NULL), FAUCET_EINVALID);
	assert_int_equal(faucet_store_iter_next(NULL, &key), FAUCET_EINVALID);
	assert_null(key);
	assert_int_equal(faucet_store_iter_next(it, &key), 0); /* an empty store */
	faucet_store_iter_free(it);
}

int contract_iter_run(const contract_backend *b)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(iterator_pages_through_many_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(iterator_keeps_the_prefix_edges, setup, teardown),
		cmocka_unit_test_setup_teardown(iterator_lists_the_bookkeeping_as_list_does, setup,
						teardown),
		cmocka_unit_test_setup_teardown(iterator_under_writes_gives_each_key_once_in_order,
						setup, teardown),
		cmocka_unit_test_setup_teardown(iterator_can_be_freed_at_any_point, setup, teardown),
		cmocka_unit_test_setup_teardown(iterator_refuses_bad_arguments, setup, teardown),
	};
	char group[64];

	current = b;
	snprintf(group, sizeof(group), "iter/%s", b->name);
	return _cmocka_run_group_tests(group, tests, sizeof(tests) / sizeof(tests[0]), NULL, NULL);
}
