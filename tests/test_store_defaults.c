/*
 * test_store_defaults.c - what the store front-end supplies for a backend
 * that implements only get, put and delete: "cannot enumerate" listing (and
 * a list made from a scan slot), one-by-one batches that leave a prefix
 * written, read-compare-write compare-and-put and read-compare-delete
 * compare-and-delete, a skipped doctor probe, reindex only through the
 * slot, the key iterator over a list_page slot or over a listing taken
 * once - and the checks faucet_store_new makes on a backend struct.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "util.h"
#include <faucet/sys/store_backend.h>
#include "store/open_internal.h"

/* A bare backend over a memory store.  put fails for keys ending "::boom";
 * get fails for keys ending "::unreadable". */
typedef struct {
	faucet_store_backend base;
	faucet_store *inner;
	int *freed; /* set when the backend is released */
} bare_backend;

static int ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);
	return n >= t && strcmp(s + n - t, tail) == 0;
}

static int bare_get(faucet_store_backend *b, const char *key, faucet_value **out)
{
	if (ends_with(key, "::unreadable"))
		return faucet_error_set(FAUCET_EIO, "cannot read '%s'", key);
	return faucet_store_get(((bare_backend *)b)->inner, key, out);
}

static int bare_put(faucet_store_backend *b, const char *key, const faucet_value *v)
{
	if (ends_with(key, "::boom"))
		return faucet_error_set(FAUCET_EIO, "disk full");
	return faucet_store_put(((bare_backend *)b)->inner, key, v);
}

static int bare_del(faucet_store_backend *b, const char *key)
{
	return faucet_store_delete(((bare_backend *)b)->inner, key);
}

static void bare_free(faucet_store_backend *b)
{
	bare_backend *bb = (bare_backend *)b;

	if (bb->freed)
		*bb->freed = 1;
	faucet_store_free(bb->inner);
	free(bb);
}

static bare_backend *new_bare(int *freed)
{
	bare_backend *b = calloc(1, sizeof(*b));

	assert_non_null(b);
	assert_int_equal(faucet_store_open_memory(&b->inner), 0);
	b->base.version = FAUCET_STORE_BACKEND_VERSION;
	b->base.name = "bare";
	b->base.get = bare_get;
	b->base.put = bare_put;
	b->base.del = bare_del;
	b->base.free = bare_free;
	b->freed = freed;
	return b;
}

static faucet_store *open_bare(void)
{
	faucet_store *s = NULL;

	assert_int_equal(faucet_store_new(&s, &new_bare(NULL)->base), 0);
	return s;
}

static int cas(faucet_store *s, const char *key, const char *expected, const char *value,
	       int *rc)
{
	faucet_value *e = expected ? tu_v(expected) : NULL, *v = tu_v(value);
	int written = -1;

	*rc = faucet_store_compare_and_put(s, key, e, v, &written);
	faucet_value_free(e);
	faucet_value_free(v);
	return written;
}

static int count_key(const char *key, void *n)
{
	(void)key;
	++*(int *)n;
	return 0;
}

/* A scan slot that hands over the inner store's keys and fails after the
 * second one. */
static int bare_scan_failing(faucet_store_backend *b, const char *prefix, faucet_key_fn fn,
			     void *ctx)
{
	faucet_strarray keys = {NULL, 0};
	int rc = faucet_store_list(((bare_backend *)b)->inner, prefix, &keys);

	for (size_t i = 0; rc == 0 && i < keys.count; i++) {
		rc = i == 2 ? faucet_error_set(FAUCET_EIO, "connection lost mid-scan")
			    : fn(keys.strings[i], ctx);
	}
	faucet_strarray_dispose(&keys);
	return rc;
}

/* list() is made from a backend's scan: the keys copied, and on an error
 * nothing half-listed is left behind. */
static void list_from_scan_copies_and_cleans_up(void **state)
{
	bare_backend *b = new_bare(NULL);
	faucet_strarray listed = {NULL, 0};
	faucet_store *s = NULL;
	(void)state;

	b->base.scan = bare_scan_failing;
	assert_int_equal(faucet_store_new(&s, &b->base), 0);
	assert_true(faucet_store_supports_list(s));
	tu_put(s, "p::a", "1");
	tu_put(s, "p::b", "2");
	assert_int_equal(faucet_store_list(s, "p::", &listed), 0);
	assert_int_equal(listed.count, 2);
	assert_string_equal(listed.strings[0], "p::a");
	assert_string_equal(listed.strings[1], "p::b");
	faucet_strarray_dispose(&listed);
	tu_put(s, "p::c", "3");
	assert_int_equal(faucet_store_list(s, "p::", &listed), FAUCET_EIO);
	tu_assert_error_contains("connection lost mid-scan");
	assert_null(listed.strings);
	assert_int_equal(listed.count, 0);
	faucet_store_free(s);
}

/* ---- the key iterator over a list_page slot ---------------------------- */

/* How the paging slot below behaves: it counts its calls, fails the
 * fail_at-th with FAUCET_EUNAVAILABLE, and, told to, breaks its promise. */
static struct {
	int calls, fail_at;
	enum { PAGE_GOOD, PAGE_FROM_START, PAGE_OVERFULL, PAGE_OUTSIDE } mode;
} pager;

/* list_page from the inner store's list: the keys after `after`, `limit`
 * of them. */
static int bare_list_page(faucet_store_backend *b, const char *prefix, const char *after,
			  size_t limit, faucet_strarray *out)
{
	faucet_strarray all = {NULL, 0};
	int rc;

	if (++pager.calls == pager.fail_at)
		return faucet_error_set(FAUCET_EUNAVAILABLE, "server went away");
	rc = faucet_store_list(((bare_backend *)b)->inner,
			       pager.mode == PAGE_OUTSIDE ? "" : prefix, &all);
	if (pager.mode == PAGE_OVERFULL)
		limit++;
	for (size_t i = 0; rc == 0 && i < all.count && out->count < limit; i++) {
		if (after == NULL || pager.mode == PAGE_FROM_START || strcmp(all.strings[i], after) > 0)
			rc = faucet__strarray_push(out, all.strings[i]);
	}
	faucet_strarray_dispose(&all);
	return rc;
}

static faucet_store *open_pager(unsigned version)
{
	bare_backend *b = new_bare(NULL);
	faucet_store *s = NULL;

	memset(&pager, 0, sizeof(pager));
	b->base.version = version;
	b->base.list_page = bare_list_page;
	assert_int_equal(faucet_store_new(&s, &b->base), 0);
	return s;
}

/* Keys prefix0 .. prefix{n-1}, the numbers `width` digits wide. */
static void put_keys(faucet_store *s, const char *prefix, int width, int n)
{
	for (int i = 0; i < n; i++) {
		char key[32];

		snprintf(key, sizeof(key), "%s%0*d", prefix, width, i);
		tu_put(s, key, "1");
	}
}

/* The next key, which must be `want` ("" = the end). */
static void next_is(faucet_store_iter *it, const char *want)
{
	const char *key = NULL;
	int rc = faucet_store_iter_next(it, &key);

	if (*want == '\0') {
		assert_int_equal(rc, 0);
		assert_null(key);
	} else {
		if (rc != 1)
			fail_msg("iter_next: %d (%s), want '%s'", rc, faucet_error_last()->message, want);
		assert_string_equal(key, want);
	}
}

/* Pages of 3 over 10 keys: four calls, the short last page ending it
 * without a fifth; a failed page read returns the error and the next call
 * retries it, so no key is lost or repeated. */
static void iterator_pages_by_the_slot_and_retries_a_failed_page(void **state)
{
	faucet_store *s = open_pager(FAUCET_STORE_BACKEND_VERSION);
	faucet_store_iter *it = NULL;
	const char *key = "x";
	(void)state;

	assert_true(faucet_store_supports_list(s));
	put_keys(s, "p::", 2, 10);
	tu_put(s, "q::x", "1");
	assert_int_equal(faucet_store_iter_new(s, "p::", &it), 0);
	assert_int_equal(pager.calls, 0); /* nothing read before the first next */
	assert_int_equal(faucet_store_iter_set_page_size(it, 3), 0);
	pager.fail_at = 2;
	next_is(it, "p::00");
	next_is(it, "p::01");
	next_is(it, "p::02");
	assert_int_equal(faucet_store_iter_next(it, &key), FAUCET_EUNAVAILABLE);
	tu_assert_error_contains("server went away");
	assert_null(key);
	for (int i = 3; i < 10; i++) {
		char want[16];

		snprintf(want, sizeof(want), "p::%02d", i);
		next_is(it, want);
	}
	next_is(it, "");
	next_is(it, "");
	assert_int_equal(pager.calls, 5); /* 4 pages and the failed one */
	faucet_store_iter_free(it);

	/* Exactly three pages' worth: the fourth, empty page says so. */
	tu_put(s, "p::10", "1");
	tu_put(s, "p::11", "1");
	pager.calls = pager.fail_at = 0;
	assert_int_equal(faucet_store_iter_new(s, "p::", &it), 0);
	assert_int_equal(faucet_store_iter_set_page_size(it, 4), 0);
	for (int i = 0; i < 12; i++)
		assert_int_equal(faucet_store_iter_next(it, &key), 1);
	next_is(it, "");
	assert_int_equal(pager.calls, 4);
	faucet_store_iter_free(it);
	faucet_store_free(s);
}

/* Paging by the last key handed out: a key written ahead of the iterator
 * is seen, one behind it is not, one deleted ahead is gone. */
static void iterator_pages_from_the_last_key(void **state)
{
	faucet_store *s = open_pager(FAUCET_STORE_BACKEND_VERSION);
	faucet_store_iter *it = NULL;
	(void)state;

	put_keys(s, "k::", 1, 5);
	assert_int_equal(faucet_store_iter_new(s, "k::", &it), 0);
	assert_int_equal(faucet_store_iter_set_page_size(it, 2), 0);
	next_is(it, "k::0");
	next_is(it, "k::1");
	tu_put(s, "k::00", "1");
	tu_put(s, "k::15", "1");
	assert_int_equal(faucet_store_delete(s, "k::2"), 0);
	next_is(it, "k::15");
	next_is(it, "k::3");
	next_is(it, "k::4");
	next_is(it, "");
	faucet_store_iter_free(it);
	faucet_store_free(s);
}

/* A slot that breaks its promise is an error, not a loop for ever. */
static void iterator_refuses_a_page_out_of_order(void **state)
{
	static const struct {
		int mode;
		const char *message;
	} cases[] = {{PAGE_FROM_START, "returned 'p::0' out of order (after 'p::1'"},
		     {PAGE_OVERFULL, "returned 3 keys, more than the 2 asked for"},
		     {PAGE_OUTSIDE, "returned 'a::x' out of order (after '', prefix 'p::')"}};
	(void)state;

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		faucet_store *s = open_pager(FAUCET_STORE_BACKEND_VERSION);
		faucet_store_iter *it = NULL;
		const char *key;
		int rc = 0;

		put_keys(s, "p::", 1, 5);
		tu_put(s, "a::x", "1");
		pager.mode = cases[c].mode;
		assert_int_equal(faucet_store_iter_new(s, "p::", &it), 0);
		assert_int_equal(faucet_store_iter_set_page_size(it, 2), 0);
		for (int i = 0; i < 10 && (rc = faucet_store_iter_next(it, &key)) == 1; i++)
			;
		assert_int_equal(rc, FAUCET_ERROR);
		tu_assert_error_contains(cases[c].message);
		faucet_store_iter_free(it);
		faucet_store_free(s);
	}
}

/* list and scan are made from the slot when it is the only one. */
static void list_and_scan_from_list_page(void **state)
{
	faucet_store *s = open_pager(FAUCET_STORE_BACKEND_VERSION);
	faucet_strarray listed = {NULL, 0};
	int n = 0;
	(void)state;

	put_keys(s, "p::", 1, 7);
	tu_put(s, "q", "1");
	assert_int_equal(faucet_store_list(s, "p::", &listed), 0);
	assert_int_equal(listed.count, 7);
	assert_string_equal(listed.strings[6], "p::6");
	faucet_strarray_dispose(&listed);
	assert_int_equal(faucet_store_scan(s, "", count_key, &n), 0);
	assert_int_equal(n, 8);
	pager.fail_at = pager.calls + 1;
	assert_int_equal(faucet_store_list(s, "p::", &listed), FAUCET_EUNAVAILABLE);
	assert_null(listed.strings);
	faucet_store_free(s);
}

/* Without the slot (or before version 7) the iterator takes the listing
 * once, and its error is the iterator's; with no listing at all there is
 * no iterator. */
static void iterator_without_the_slot_lists_once(void **state)
{
	faucet_store *s = open_pager(FAUCET_STORE_BACKEND_VERSION);
	faucet_store_iter *it = NULL;
	bare_backend *b = (bare_backend *)faucet_store_backend_of(s);
	const char *key;
	(void)state;

	b->base.list_page = NULL; /* a backend that cannot page */
	b->base.scan = bare_scan_failing;
	put_keys(s, "p::", 1, 2);
	assert_int_equal(faucet_store_iter_new(s, "p::", &it), 0);
	next_is(it, "p::0");
	tu_put(s, "p::05", "1"); /* after the listing: not seen */
	next_is(it, "p::1");
	next_is(it, "");
	faucet_store_iter_free(it);
	/* Three keys: the scan fails at the third, and so does the iterator. */
	assert_int_equal(faucet_store_iter_new(s, "p::", &it), 0);
	assert_int_equal(faucet_store_iter_next(it, &key), FAUCET_EIO);
	tu_assert_error_contains("connection lost mid-scan");
	assert_int_equal(faucet_store_iter_next(it, &key), FAUCET_EIO);
	faucet_store_iter_free(it);
	faucet_store_free(s);

	s = open_bare();
	it = (faucet_store_iter *)0x1;
	assert_int_equal(faucet_store_iter_new(s, "", &it), FAUCET_EUNSUPPORTED);
	tu_assert_error_contains("cannot enumerate its keys");
	assert_null(it);
	faucet_store_free(s);
}

static void defaults_cannot_list_and_batch_sequentially(void **state)
{
	faucet_store *s = open_bare();
	faucet_strarray listed = {NULL, 0};
	int counted = 0;
	faucet_value *one = tu_v("1"), *two = tu_v("2");
	faucet_entry ab[] = {{"p::a", one}, {"p::b", two}};
	faucet_entry boom[] = {{"p::c", one}, {"p::boom", two}, {"p::d", two}};
	faucet_entry invalid[] = {{"p::e", one}, {"../bad", two}};
	(void)state;

	assert_false(faucet_store_supports_list(s));
	assert_false(faucet_store_supports_atomic_batch(s));
	assert_int_equal(faucet_store_list(s, "p::", &listed), FAUCET_EUNSUPPORTED);
	tu_assert_error_contains("this state store cannot enumerate its keys");
	assert_int_equal(listed.count, 0);
	assert_int_equal(faucet_store_scan(s, "p::", count_key, &counted), FAUCET_EUNSUPPORTED);
	tu_assert_error_contains("this state store cannot enumerate its keys");
	assert_int_equal(counted, 0);

	assert_int_equal(faucet_store_put_batch(s, ab, 2), 0);
	tu_assert_value(s, "p::b", "2");
	assert_int_equal(faucet_store_put_batch(s, boom, 3), FAUCET_EIO);
	tu_assert_error_contains("disk full");
	tu_assert_value(s, "p::c", "1"); /* the prefix landed */
	tu_assert_value(s, "p::d", NULL); /* nothing after the failure */

	/* Keys are all validated before the first write, even one by one. */
	assert_int_equal(faucet_store_put_batch(s, invalid, 2), FAUCET_EINVALID);
	tu_assert_value(s, "p::e", NULL);
	faucet_value_free(one);
	faucet_value_free(two);
	faucet_store_free(s);
}

static void default_compare_and_put_reads_compares_and_writes(void **state)
{
	faucet_store *s = open_bare();
	int rc;
	(void)state;

	assert_false(faucet_store_supports_compare_and_put(s));
	assert_true(cas(s, "k", NULL, "{\"a\":1,\"b\":2}", &rc));
	assert_int_equal(rc, 0);
	assert_false(cas(s, "k", NULL, "0", &rc));
	assert_int_equal(rc, 0);
	assert_false(cas(s, "k", "{\"a\":1}", "0", &rc));
	tu_assert_value(s, "k", "{\"a\":1,\"b\":2}");
	/* Compared as JSON values, not as text. */
	assert_true(cas(s, "k", "{\"b\":2,\"a\":1}", "3", &rc));
	assert_int_equal(rc, 0);
	tu_assert_value(s, "k", "3");

	/* A failing read or write is an error, and nothing is reported written. */
	assert_false(cas(s, "p::unreadable", NULL, "1", &rc));
	assert_int_equal(rc, FAUCET_EIO);
	tu_assert_error_contains("cannot read");
	assert_false(cas(s, "p::boom", NULL, "1", &rc));
	assert_int_equal(rc, FAUCET_EIO);
	tu_assert_error_contains("disk full");
	assert_false(cas(s, "bad key", NULL, "1", &rc));
	assert_int_equal(rc, FAUCET_EINVALID);
	faucet_store_free(s);
}

static void default_compare_and_delete_reads_compares_and_deletes(void **state)
{
	faucet_store *s = open_bare();
	faucet_value *want = tu_v("{\"b\":2,\"a\":1}"), *other = tu_v("{\"a\":1}");
	int deleted = -1;
	(void)state;

	assert_false(faucet_store_supports_compare_and_delete(s));
	tu_put(s, "k", "{\"a\":1,\"b\":2}");
	assert_int_equal(faucet_store_compare_and_delete(s, "k", other, &deleted), 0);
	assert_false(deleted);
	tu_assert_value(s, "k", "{\"a\":1,\"b\":2}");
	/* Compared as JSON values, not as text. */
	assert_int_equal(faucet_store_compare_and_delete(s, "k", want, &deleted), 0);
	assert_true(deleted);
	tu_assert_value(s, "k", NULL);
	assert_int_equal(faucet_store_compare_and_delete(s, "k", want, &deleted), 0);
	assert_false(deleted);
	/* A failing read is an error, and nothing is reported deleted. */
	assert_int_equal(faucet_store_compare_and_delete(s, "p::unreadable", want, &deleted),
			 FAUCET_EIO);
	assert_false(deleted);
	assert_int_equal(faucet_store_compare_and_delete(s, "k", NULL, NULL), FAUCET_EINVALID);
	faucet_value_free(want);
	faucet_value_free(other);
	faucet_store_free(s);
}

static void default_check_reports_one_skipped_probe(void **state)
{
	faucet_store *s = open_bare();
	faucet_check_report *report = NULL;
	const faucet_probe *probe;
	(void)state;

	assert_int_equal(faucet_store_check(s, NULL, &report), 0);
	assert_int_equal(faucet_check_report_count(report), 1);
	assert_int_equal(faucet_check_report_failed_count(report), 0);
	probe = faucet_check_report_probe(report, 0);
	assert_int_equal(probe->status, FAUCET_PROBE_SKIP);
	assert_string_equal(probe->reason, "no check implemented");
	assert_null(faucet_check_report_probe(report, 1));
	faucet_check_report_free(report);
	faucet_store_free(s);
}

static void supports_queries_follow_the_backend_slots(void **state)
{
	faucet_store *mem = NULL, *bare = open_bare();
	(void)state;

	assert_int_equal(faucet_store_open_memory(&mem), 0);
	assert_true(faucet_store_supports_list(mem));
	assert_true(faucet_store_supports_compare_and_put(mem));
	assert_true(faucet_store_supports_compare_and_delete(mem));
	assert_true(faucet_store_supports_atomic_batch(mem));
	assert_false(faucet_store_supports_list(bare));
	assert_false(faucet_store_supports_compare_and_put(bare));
	assert_false(faucet_store_supports_compare_and_delete(bare));
	assert_false(faucet_store_supports_atomic_batch(bare));
	assert_string_equal(faucet_store_backend_name(bare), "bare");
	assert_ptr_not_equal(faucet_store_backend_of(bare), NULL);
	faucet_store_free(mem);
	faucet_store_free(bare);
}

/* A reindex slot that reports two members added and one removed. */
static int bare_reindex(faucet_store_backend *b, size_t *added, size_t *removed)
{
	(void)b;
	*added = 2;
	*removed = 1;
	return 0;
}

/* faucet_store_reindex goes to the backend's slot (version 5); a backend
 * without one, or of a version before the slot existed, keeps no index. */
static void reindex_goes_to_the_backend_slot(void **state)
{
	faucet_store *s = NULL;
	bare_backend *b;
	size_t added = 9, removed = 9;
	(void)state;

	b = new_bare(NULL);
	b->base.reindex = bare_reindex;
	assert_int_equal(faucet_store_new(&s, &b->base), 0);
	assert_int_equal(faucet_store_reindex(s, &added, &removed), 0);
	assert_int_equal(added, 2);
	assert_int_equal(removed, 1);
	assert_int_equal(faucet_store_reindex(s, NULL, NULL), 0);
	faucet_store_free(s);

	s = open_bare();
	assert_int_equal(faucet_store_reindex(s, &added, &removed), FAUCET_EUNSUPPORTED);
	tu_assert_error_contains("the bare store keeps no key index");
	faucet_store_free(s);
}

static void faucet_store_new_refuses_a_backend_it_cannot_use(void **state)
{
	faucet_store *s = (faucet_store *)0x1;
	bare_backend *b;
	int freed = 0;
	(void)state;

	/* A backend written against another version of the struct. */
	b = new_bare(&freed);
	b->base.version = FAUCET_STORE_BACKEND_VERSION + 1;
	assert_int_equal(faucet_store_new(&s, &b->base), FAUCET_EINVALID);
	{
		char want[96];
		snprintf(want, sizeof(want), "version %d is not supported (expected %d",
			 FAUCET_STORE_BACKEND_VERSION + 1, FAUCET_STORE_BACKEND_VERSION);
		tu_assert_error_contains(want);
	}
	assert_null(s);
	assert_true(freed); /* the store owned it from the call on */

	/* One of the layouts that were never released. */
	for (unsigned v = 1; v < FAUCET_STORE_BACKEND_MIN_VERSION; v++) {
		freed = 0;
		b = new_bare(&freed);
		b->base.version = v;
		assert_int_equal(faucet_store_new(&s, &b->base), FAUCET_EINVALID);
		tu_assert_error_contains("this library takes");
		assert_null(s);
		assert_true(freed);
	}

	/* A required slot left NULL: named. */
	freed = 0;
	b = new_bare(&freed);
	b->base.put = NULL;
	assert_int_equal(faucet_store_new(&s, &b->base), FAUCET_EINVALID);
	tu_assert_error_contains("has no put (get, put, del and free are required)");
	assert_null(s);
	assert_true(freed);

	/* A backend without a name is reported as "custom". */
	freed = 0;
	b = new_bare(&freed);
	b->base.name = NULL;
	assert_int_equal(faucet_store_new(&s, &b->base), 0);
	assert_string_equal(faucet_store_backend_name(s), "custom");
	tu_put(s, "k", "1");
	tu_assert_value(s, "k", "1");
	faucet_store_free(s);
	assert_true(freed);
	assert_int_equal(faucet_store_new(NULL, NULL), FAUCET_EINVALID);
}

/* The table of backends (src/stores/registry.c, faucet_store_backend_info):
 * each row complete, types unique, each field once with a known kind, a
 * local store with a `path`, and every type in the library's own list. */
static void backend_table_is_well_formed(void **state)
{
	static const char *const kinds[] = {"string", "bool", "number", "duration", "list",
					    "mapping"};
	faucet_store_config cfg = FAUCET_STORE_CONFIG_INIT;
	const faucet_backend_info *be;
	faucet_store *s = NULL;
	const char *msg;
	size_t n = 0;

	(void)state;
	cfg.type = "no-such-backend";
	assert_int_equal(faucet_store_open_config(&s, &cfg), FAUCET_ECONFIG);
	assert_null(s);
	msg = faucet_error_last()->message;
	for (; (be = faucet_store_backend_info(n)) != NULL; n++) {
		int has_path = 0, scheme_matches = 0;

		assert_non_null(be->type);
		assert_true(be->type[0] != '\0');
		assert_non_null(strstr(msg, be->type));
		for (size_t j = 0; j < n; j++)
			assert_string_not_equal(faucet_store_backend_info(j)->type, be->type);
		assert_non_null(be->schemes);
		assert_non_null(be->schemes[0]);
		for (const char *const *sc = be->schemes; *sc != NULL; sc++) {
			assert_non_null(strchr(*sc, ':'));
			if (strncmp(be->url_form, *sc, strlen(*sc)) == 0)
				scheme_matches = 1;
		}
		assert_true(scheme_matches);
		assert_non_null(be->fields);
		for (const faucet_backend_field *f = be->fields; f->name != NULL; f++) {
			size_t k;

			for (const faucet_backend_field *g = be->fields; g < f; g++)
				assert_string_not_equal(g->name, f->name);
			for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
				if (strcmp(kinds[k], f->kind) == 0)
					break;
			}
			assert_true(k < sizeof(kinds) / sizeof(kinds[0]));
			if (strcmp(f->name, "path") == 0)
				has_path = 1;
		}
		assert_int_equal(has_path, be->local_path);
	}
	assert_true(n >= 7);
	assert_null(faucet_store_backend_info(n + 1));
}

/* ---- a backend of version 13, before cas_batch_max ---------------------- */

static int v13_get(faucet_store_backend *b, const char *key, faucet_value **out)
{
	(void)b;
	(void)key;
	*out = NULL;
	return 0;
}

static int v13_put(faucet_store_backend *b, const char *key, const faucet_value *v)
{
	(void)b;
	(void)key;
	(void)v;
	return 0;
}

static int v13_del(faucet_store_backend *b, const char *key)
{
	(void)b;
	(void)key;
	return 0;
}

static int v13_cas_batch(faucet_store_backend *b, const faucet_store_guard *g, size_t n,
			 int *written)
{
	(void)b;
	(void)g;
	(void)n;
	*written = 1;
	return 0;
}

static void v13_free(faucet_store_backend *b)
{
	free(b);
}

/* A version-13 backend's struct ends before cas_batch_max (version 14):
 * its batch takes FAUCET_STORE_CAS_BATCH_MAX entries, and the front-end
 * reads nothing past the struct - allocated here to end exactly there, so
 * that AddressSanitizer sees any such read. */
static void a_version_13_backend_batches_at_most_128(void **state)
{
	faucet_store_backend full = FAUCET_STORE_BACKEND_INIT;
	size_t size = offsetof(faucet_store_backend, cas_batch_max);
	void *b = malloc(size);
	faucet_store_guard g[FAUCET_STORE_CAS_BATCH_MAX + 1];
	char keys[FAUCET_STORE_CAS_BATCH_MAX + 1][16];
	faucet_value *v = tu_v("1");
	faucet_store *s = NULL;
	int written = 0;

	(void)state;
	assert_non_null(b);
	full.version = 13;
	full.name = "v13";
	full.get = v13_get;
	full.put = v13_put;
	full.del = v13_del;
	full.free = v13_free;
	full.compare_and_put_batch = v13_cas_batch;
	memcpy(b, &full, size);
	assert_int_equal(faucet_store_new(&s, b), 0);
	assert_int_equal(faucet__store_cas_batch_max(s), FAUCET_STORE_CAS_BATCH_MAX);
	for (size_t i = 0; i <= FAUCET_STORE_CAS_BATCH_MAX; i++) {
		snprintf(keys[i], sizeof(keys[i]), "p::k%03zu", i);
		g[i] = (faucet_store_guard){keys[i], NULL, v};
	}
	assert_int_equal(faucet__store_compare_and_put_batch(s, g, FAUCET_STORE_CAS_BATCH_MAX + 1,
							     &written),
			 FAUCET_EINVALID);
	assert_int_equal(faucet__store_compare_and_put_batch(s, g, FAUCET_STORE_CAS_BATCH_MAX,
							     &written),
			 0);
	assert_int_equal(written, 1);
	faucet_store_free(s);
	faucet_value_free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(defaults_cannot_list_and_batch_sequentially),
		cmocka_unit_test(list_from_scan_copies_and_cleans_up),
		cmocka_unit_test(iterator_pages_by_the_slot_and_retries_a_failed_page),
		cmocka_unit_test(iterator_pages_from_the_last_key),
		cmocka_unit_test(iterator_refuses_a_page_out_of_order),
		cmocka_unit_test(list_and_scan_from_list_page),
		cmocka_unit_test(iterator_without_the_slot_lists_once),
		cmocka_unit_test(default_compare_and_put_reads_compares_and_writes),
		cmocka_unit_test(default_compare_and_delete_reads_compares_and_deletes),
		cmocka_unit_test(default_check_reports_one_skipped_probe),
		cmocka_unit_test(supports_queries_follow_the_backend_slots),
		cmocka_unit_test(reindex_goes_to_the_backend_slot),
		cmocka_unit_test(faucet_store_new_refuses_a_backend_it_cannot_use),
		cmocka_unit_test(backend_table_is_well_formed),
		cmocka_unit_test(a_version_13_backend_batches_at_most_128),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
