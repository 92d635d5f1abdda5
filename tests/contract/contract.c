/*
 * contract.c - the store contract suite (see contract.h).
 *
 * Each test gets a fresh, empty store opened from the backend's URL
 * template; teardown deletes what the test wrote (server-backed stores share
 * one server) and removes the {tmp} directory.  The suite only uses the
 * public API, so what passes here is what a pipeline sees.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "contract.h"
#include "store/open_internal.h"

typedef contract_fixture fixture;

static const contract_backend *current;

char *contract_expand_url(const char *tmpl, char **tmp)
{
	static unsigned counter;
	char out[2048];
	size_t n = 0;

	*tmp = NULL;
	for (const char *p = tmpl; *p && n < sizeof(out) - 200;) {
		if (strncmp(p, "{tmp}", 5) == 0) {
			if (*tmp == NULL)
				*tmp = tu_tempdir();
			n += (size_t)snprintf(out + n, sizeof(out) - n, "%s", *tmp);
			p += 5;
		} else if (strncmp(p, "{uniq}", 6) == 0) {
			n += (size_t)snprintf(out + n, sizeof(out) - n, "%ld_%u", (long)getpid(),
					      ++counter);
			p += 6;
		} else if (strncmp(p, "${", 2) == 0) {
			const char *end = strchr(p, '}');
			char name[128];
			const char *val;

			assert_non_null(end);
			snprintf(name, sizeof(name), "%.*s", (int)(end - p - 2), p + 2);
			val = getenv(name);
			if (val == NULL || *val == '\0') {
				fprintf(stderr,
					"contract: %s is not set - start the test servers with "
					"scripts/test-servers.sh (scripts/test.sh does)\n",
					name);
				free(*tmp);
				*tmp = NULL;
				return NULL;
			}
			n += (size_t)snprintf(out + n, sizeof(out) - n, "%s", val);
			p = end + 1;
		} else {
			out[n++] = *p++;
		}
	}
	out[n] = '\0';
	return strdup(out);
}

static faucet_store *open_url(const char *url)
{
	faucet_store *s = NULL;

	if (faucet_store_open_url(&s, url) != 0)
		fail_msg("%s: cannot open: %s", current->name, faucet_error_last()->message);
	return s;
}

int contract_store_open(const contract_backend *b, const char *suite, char **url, char **tmp,
			faucet_store **store)
{
	*tmp = NULL;
	*store = NULL;
	*url = contract_expand_url(b->url_template, tmp);
	if (*url != NULL && faucet_store_open_url(store, *url) == 0)
		return 0;
	fprintf(stderr, "%s %s: cannot open the store: %s\n", suite, b->name,
		faucet_error_last()->message);
	if (*tmp != NULL)
		tu_rmrf(*tmp);
	free(*tmp);
	free(*url);
	*tmp = *url = NULL;
	return -1;
}

void contract_store_close(char *url, char *tmp, faucet_store *store)
{
	faucet_strarray keys = {0};

	if (store != NULL && faucet_store_list(store, "", &keys) == 0) {
		for (size_t i = 0; i < keys.count; i++)
			(void)faucet_store_delete(store, keys.strings[i]);
		faucet_strarray_dispose(&keys);
	}
	faucet_store_free(store);
	if (tmp != NULL)
		tu_rmrf(tmp);
	free(tmp);
	free(url);
}

int contract_fixture_setup(void **state, const contract_backend *b, const char *suite)
{
	fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	if (contract_store_open(b, suite, &f->url, &f->tmp, &f->store) != 0) {
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

int contract_fixture_teardown(void **state, const contract_backend *b)
{
	fixture *f = *state;

	/* A test that failed while holding a lock leaves it (and the shortened
	 * wait) to us, so the next test starts clean. */
	if (f->lock_token != NULL)
		b->locker->release(f->lock_token);
	contract_store_close(f->url, f->tmp, f->store);
	free(f);
	return 0;
}

faucet_store *contract_fixture_store(void **state)
{
	return ((fixture *)*state)->store;
}

static int setup(void **state)
{
	return contract_fixture_setup(state, current, "contract");
}

static int teardown(void **state)
{
	return contract_fixture_teardown(state, current);
}

static faucet_store *S(void **state)
{
	return contract_fixture_store(state);
}

/* ---- keys ------------------------------------------------------------- */

static void invalid_keys_are_rejected_everywhere(void **state)
{
	static const char *const bad[] = {"", "../x", ".hidden", "a b", "a/../b", "a//b",
					  "/a", "a/", "k\xc3\xa9", "a*b", "a%b"};
	faucet_store *s = S(state);
	faucet_value *v = tu_v("1"), *out = NULL;
	char longkey[258];
	int written = 1;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		faucet_entry e[2] = {{"ok::key", v}, {bad[i], v}};
		assert_int_equal(faucet_store_get(s, bad[i], &out), FAUCET_EINVALID);
		assert_null(out);
		assert_int_equal(faucet_store_put(s, bad[i], v), FAUCET_EINVALID);
		assert_int_equal(faucet_store_delete(s, bad[i]), FAUCET_EINVALID);
		assert_int_equal(faucet_store_compare_and_put(s, bad[i], NULL, v, &written),
				 FAUCET_EINVALID);
		assert_false(written);
		assert_int_equal(faucet_store_put_batch(s, e, 2), FAUCET_EINVALID);
	}
	memset(longkey, 'k', 257);
	longkey[257] = '\0';
	assert_int_equal(faucet_store_put(s, longkey, v), FAUCET_EINVALID);
	tu_assert_error_contains("256");
	longkey[256] = '\0'; /* exactly 256 bytes is allowed */
	assert_int_equal(faucet_store_put(s, longkey, v), 0);
	tu_assert_value(s, longkey, "1");
	/* Nothing of the refused calls landed, not even the batch's valid key. */
	tu_assert_value(s, "ok::key", NULL);
	faucet_value_free(v);
}

static void typical_keys_round_trip(void **state)
{
	static const char *const keys[] = {"orders", "acme/orders::cursor", "p::a::__sla__",
					   "with.dot", "with-dash_and_underscore", "lower-Case_99",
					   "p::backfill::0123456789abcdef::20260101T000000Z"};
	faucet_store *s = S(state);

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		char json[320];
		snprintf(json, sizeof(json), "\"%s\"", keys[i]);
		tu_put(s, keys[i], json);
		tu_assert_value(s, keys[i], json);
	}
}

/* ---- values ------------------------------------------------------------ */

static void missing_key_reads_as_null(void **state)
{
	faucet_value *out = (faucet_value *)0x1;

	assert_int_equal(faucet_store_get(S(state), "never::written", &out), 0);
	assert_null(out);
}

/* doc/design.md §2.4: a value read back is the value written.  A backend that
 * keeps text (exact_text) returns the same bytes; one that keeps values
 * (PostgreSQL's JSONB) returns an equal value and, for the listed numbers,
 * the same digits.  A backend may refuse a value it cannot hold - but then
 * it must store nothing; it may never store an altered one. */
static void values_keep_their_fidelity(void **state)
{
	static const struct {
		const char *json;
		int digits_matter; /* the number's text must survive on every backend */
	} cases[] = {
		{"18446744073709551615", 1},
		{"-9223372036854775808", 1},
		{"9223372036854775807", 1},
		{"0.1", 1},
		{"1.0", 1},
		{"0.30000000000000004", 1},
		{"-12.5", 1},
		{"2.25e-7", 0},
		{"1e300", 0},
		{"1E5", 0},
		{"-0.0", 0},
		{"{\"b\":1,\"a\":[true,false,null],\"c\":{\"d\":\"e\"}}", 0},
		{"{\"cursor\":18446744073709551615,\"ts\":0.1}", 0},
		{"\"caf\xc3\xa9 \xf0\x9f\x98\x80 \\\"q\\\" \\\\ \\n\"", 0},
		{"\"a\\u0001b\"", 0},
		{"[]", 0},
		{"{}", 0},
		{"null", 0},
		{"\"\"", 0},
		{"[1,[2,[3,[4]]]]", 0},
	};
	faucet_store *s = S(state);

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char key[32];
		faucet_value *v = tu_v(cases[i].json), *got = NULL;
		int rc;

		snprintf(key, sizeof(key), "fidelity::%zu", i);
		rc = faucet_store_put(s, key, v);
		if (rc != 0) {
			if (current->exact_text || cases[i].digits_matter)
				fail_msg("%s: put %s refused: %s", current->name, cases[i].json,
					 faucet_error_last()->message);
			assert_int_equal(faucet_store_get(s, key, &got), 0);
			assert_null(got); /* refused means nothing stored */
			faucet_value_free(v);
			continue;
		}
		if (faucet_store_get(s, key, &got) != 0)
			fail_msg("%s: get %s: %s", current->name, cases[i].json,
				 faucet_error_last()->message);
		assert_non_null(got);
		if (current->exact_text || cases[i].digits_matter)
			assert_string_equal(faucet_value_json(got), faucet_value_json(v));
		if (!faucet_value_equal(got, v))
			fail_msg("%s: wrote %s, read back %s", current->name, faucet_value_json(v),
				 faucet_value_json(got));
		faucet_value_free(got);
		faucet_value_free(v);
	}
}

/* A \u0000 is refused where the text is checked, with its byte offset,
 * before any backend sees it: json-c would store {"a\u0000b":1} as {"a":1}
 * (and then --if-equals '{"a":1}' would match), PostgreSQL refuses it.  The
 * stored value stays as it was. */
static void nul_characters_are_refused_with_their_offset(void **state)
{
	static const struct {
		const char *json;
		const char *where;
	} cases[] = {
		{"{\"a\\u0000b\":1}", "byte 3"},
		{"\"x\\u0000\"", "byte 2"},
		{"[1,{\"k\":\"\\u0000\"}]", "byte 9"},
	};
	faucet_store *s = S(state);

	tu_put(s, "nul", "{\"a\":1}");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		faucet_value *v = (faucet_value *)0x1;

		assert_int_equal(faucet_value_parse(&v, cases[i].json, strlen(cases[i].json)),
				 FAUCET_EINVALID);
		assert_null(v);
		tu_assert_error_contains("\\u0000");
		tu_assert_error_contains(cases[i].where);
	}
	tu_assert_value(s, "nul", "{\"a\":1}");
	/* The value a refused write would have been mistaken for still
	 * compares as itself, and nothing else took its place. */
	assert_true(tu_cas(s, "nul", "{\"a\":1}", "{\"a\":2}"));
	tu_assert_value(s, "nul", "{\"a\":2}");
}

static void put_overwrites(void **state)
{
	faucet_store *s = S(state);

	tu_put(s, "k", "{\"v\":1}");
	tu_put(s, "k", "{\"v\":2,\"more\":[1]}");
	tu_assert_value(s, "k", "{\"v\":2,\"more\":[1]}");
}

static void delete_removes_and_missing_is_ok(void **state)
{
	faucet_store *s = S(state);

	tu_put(s, "gone", "1");
	tu_put(s, "stays", "2");
	assert_int_equal(faucet_store_delete(s, "gone"), 0);
	tu_assert_value(s, "gone", NULL);
	tu_assert_value(s, "stays", "2");
	assert_int_equal(faucet_store_delete(s, "gone"), 0);
	assert_int_equal(faucet_store_delete(s, "never::there"), 0);
	/* A deleted key can be written again. */
	tu_put(s, "gone", "3");
	tu_assert_value(s, "gone", "3");
}

/* ---- list -------------------------------------------------------------- */

static int by_strcmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Collects what a scan hands over (copies: the keys are borrowed). */
static int collect_key(const char *key, void *arg)
{
	faucet_strarray *arr = arg;
	char **grown = realloc(arr->strings, (arr->count + 1) * sizeof(*grown));
	char *copy = strdup(key);

	if (grown == NULL || copy == NULL) {
		free(copy);
		if (grown != NULL)
			arr->strings = grown;
		return FAUCET_ENOMEM;
	}
	arr->strings = grown;
	arr->strings[arr->count++] = copy;
	return 0;
}

static void assert_list(faucet_store *s, const char *prefix, const char **want, size_t n)
{
	faucet_strarray got = {0}, scanned = {0};

	if (faucet_store_list(s, prefix, &got) != 0)
		fail_msg("%s: list '%s': %s", current->name, prefix, faucet_error_last()->message);
	if (n > 0)
		qsort(want, n, sizeof(*want), by_strcmp);
	if (got.count != n)
		fail_msg("%s: list '%s' gave %zu keys, want %zu", current->name, prefix, got.count,
			 n);
	for (size_t i = 0; i < n; i++) {
		if (strcmp(got.strings[i], want[i]) != 0)
			fail_msg("%s: list '%s' [%zu] = '%s', want '%s'", current->name, prefix, i,
				 got.strings[i], want[i]);
	}
	/* So does the iterator, whatever its page size. */
	contract_assert_iter_matches(s, prefix, &got, current->name);
	/* A scan visits the same keys in the same order. */
	if (faucet_store_scan(s, prefix, collect_key, &scanned) != 0)
		fail_msg("%s: scan '%s': %s", current->name, prefix, faucet_error_last()->message);
	if (scanned.count != n)
		fail_msg("%s: scan '%s' gave %zu keys, want %zu", current->name, prefix,
			 scanned.count, n);
	for (size_t i = 0; i < n; i++) {
		if (strcmp(scanned.strings[i], want[i]) != 0)
			fail_msg("%s: scan '%s' [%zu] = '%s', want '%s'", current->name, prefix, i,
				 scanned.strings[i], want[i]);
	}
	faucet_strarray_dispose(&scanned);
	faucet_strarray_dispose(&got);
}

/* Byte order whatever the backend's collation: uppercase before lowercase,
 * '-' '.' '/' before digits before ':' before letters before '_'.  The
 * expected order is computed with strcmp, not written by hand. */
static void list_is_in_byte_order(void **state)
{
	const char *keys[] = {"a_b", "a:b", "a::b", "a", "B", "Z", "a-b", "a.b", "a/b",
			      "0", "9z", "Ab", "aB", "a::B", "a::a", "b"};
	const size_t n = sizeof(keys) / sizeof(keys[0]);
	faucet_store *s = S(state);

	assert_true(faucet_store_supports_list(s));
	for (size_t i = 0; i < n; i++)
		tu_put(s, keys[i], "true");
	assert_list(s, "", keys, n);
}

static void list_prefix_is_literal(void **state)
{
	const char *all[] = {"p_::a", "pa::b", "p::c", "p::c::d", "p/q::e", "p", "q::a",
			     "px", "P::z"};
	faucet_store *s = S(state);

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		tu_put(s, all[i], "0");
	{
		const char *want[] = {"p_::a"}; /* '_' is not "any character" */
		assert_list(s, "p_", want, 1);
	}
	assert_list(s, "p%", NULL, 0); /* '%' is not "anything" */
	assert_list(s, "p*", NULL, 0); /* nor is a glob star */
	assert_list(s, "p?", NULL, 0);
	assert_list(s, "p[", NULL, 0);
	{
		const char *want[] = {"p::c", "p::c::d"};
		assert_list(s, "p::", want, 2);
	}
	{
		const char *want[] = {"p::c::d"};
		assert_list(s, "p::c::", want, 1);
	}
	{
		const char *want[] = {"p/q::e"};
		assert_list(s, "p/", want, 1);
	}
	{
		const char *want[] = {"p_::a", "pa::b", "p::c", "p::c::d", "p/q::e", "p", "px"};
		assert_list(s, "p", want, 7);
	}
	{
		const char *want[] = {"P::z"}; /* case matters */
		assert_list(s, "P", want, 1);
	}
	assert_list(s, "nothing", NULL, 0);
	assert_list(s, "p::c::d::", NULL, 0);
}

/* A scan stops where its callback says, returning the callback's value; the
 * callback may read the store (and write to it) while the scan runs. */
typedef struct {
	faucet_store *s;
	int seen, stop_at;
	char last[64];
} scan_probe;

static int probe_key(const char *key, void *arg)
{
	scan_probe *p = arg;
	faucet_value *v = NULL;

	if (faucet_store_get(p->s, key, &v) != 0 || v == NULL)
		return FAUCET_ERROR;
	/* Outside the scanned prefix, so the scan's outcome is fixed. */
	if (faucet_store_put(p->s, "scanned::last", v) != 0) {
		faucet_value_free(v);
		return FAUCET_ERROR;
	}
	faucet_value_free(v);
	snprintf(p->last, sizeof(p->last), "%s", key);
	return ++p->seen == p->stop_at ? 42 : 0;
}

static void scan_stops_when_told_and_lets_the_callback_use_the_store(void **state)
{
	faucet_store *s = S(state);
	scan_probe p = {s, 0, 3, ""};
	faucet_value *v = tu_v("{\"k\":1}");

	for (int i = 0; i < 6; i++) {
		char key[32];
		snprintf(key, sizeof(key), "scan::%d", i);
		assert_int_equal(faucet_store_put(s, key, v), 0);
	}
	assert_int_equal(faucet_store_scan(s, "scan::", probe_key, &p), 42);
	tu_assert_value(s, "scanned::last", "{\"k\":1}");
	assert_int_equal(p.seen, 3);
	assert_string_equal(p.last, "scan::2");
	p = (scan_probe){s, 0, 0, ""};
	assert_int_equal(faucet_store_scan(s, "scan::", probe_key, &p), 0);
	assert_int_equal(p.seen, 6);
	assert_string_equal(p.last, "scan::5");
	assert_int_equal(faucet_store_scan(s, "scan::", NULL, NULL), FAUCET_EINVALID);
	faucet_value_free(v);
}

static void list_of_an_empty_store_is_empty(void **state)
{
	assert_list(S(state), "", NULL, 0);
	assert_list(S(state), "p::", NULL, 0);
}

/* ---- compare-and-put --------------------------------------------------- */

static void compare_and_put_writes_only_over_the_expected_value(void **state)
{
	faucet_store *s = S(state);

	assert_true(faucet_store_supports_compare_and_put(s));
	assert_true(tu_cas(s, "k", NULL, "{\"v\":1}"));
	assert_false(tu_cas(s, "k", NULL, "{\"v\":2}"));
	assert_false(tu_cas(s, "k", "{\"v\":2}", "{\"v\":2}"));
	tu_assert_value(s, "k", "{\"v\":1}");
	assert_true(tu_cas(s, "k", "{\"v\":1}", "{\"v\":2}"));
	tu_assert_value(s, "k", "{\"v\":2}");
	/* An expected value for a missing key does not hold. */
	assert_false(tu_cas(s, "missing", "{\"v\":1}", "1"));
	tu_assert_value(s, "missing", NULL);
	/* After a delete the key is absent again. */
	assert_int_equal(faucet_store_delete(s, "k"), 0);
	assert_false(tu_cas(s, "k", "{\"v\":2}", "3"));
	assert_true(tu_cas(s, "k", NULL, "3"));
	tu_assert_value(s, "k", "3");
}

/* A value of megabytes (a big import's rollback marker): Redis sends it
 * straight from the value, without hiredis's copies. */
static void compare_and_put_of_a_big_value(void **state)
{
	faucet_store *s = S(state);
	char *a = tu_big_string_json(3u << 20, 'a');
	char *b = tu_big_string_json((3u << 20) + 7, 'b');
	faucet_strarray keys = {NULL, 0};

	assert_true(tu_cas(s, "o::big", NULL, a));
	tu_assert_value(s, "o::big", a);
	assert_false(tu_cas(s, "o::big", b, b));
	assert_true(tu_cas(s, "o::big", a, b));
	tu_assert_value(s, "o::big", b);
	/* The connection is still in step: small operations go on. */
	assert_true(tu_cas(s, "o::small", NULL, "1"));
	tu_assert_value(s, "o::small", "1");
	assert_int_equal(faucet_store_list(s, "o::", &keys), 0);
	assert_int_equal(keys.count, 2);
	faucet_strarray_dispose(&keys);
	free(a);
	free(b);
}

static void compare_and_put_compares_json_values(void **state)
{
	faucet_store *s = S(state);

	tu_put(s, "obj", "{\"a\":1,\"b\":{\"x\":[1,2],\"y\":null}}");
	/* Member order does not matter, at any depth... */
	assert_true(tu_cas(s, "obj", "{\"b\":{\"y\":null,\"x\":[1,2]},\"a\":1}", "{\"a\":2}"));
	tu_assert_value(s, "obj", "{\"a\":2}");
	/* ...array order and member values do. */
	tu_put(s, "arr", "[1,2]");
	assert_false(tu_cas(s, "arr", "[2,1]", "[]"));
	assert_false(tu_cas(s, "obj", "{\"a\":\"2\"}", "[]"));
	assert_false(tu_cas(s, "obj", "{\"a\":2,\"b\":null}", "[]"));
	assert_false(tu_cas(s, "obj", "{}", "[]"));
	tu_assert_value(s, "arr", "[1,2]");
	/* Big integers compare by every digit. */
	tu_put(s, "big", "18446744073709551615");
	assert_false(tu_cas(s, "big", "18446744073709551614", "0"));
	assert_true(tu_cas(s, "big", "18446744073709551615", "1"));
	tu_assert_value(s, "big", "1");
}

typedef struct {
	faucet_store *store;
	const char *url; /* processes open their own store */
	int rounds;
	int failures;
	pthread_barrier_t *start;
} incr_job;

static int read_counter(const faucet_value *v)
{
	int n = -1;

	if (v == NULL)
		return 0;
	if (sscanf(faucet_value_json(v), "{\"n\":%d}", &n) != 1)
		return -1;
	return n;
}

/* `rounds` successful increments of {"n": N} under "counter", each a
 * read and a compare-and-put that retries on a lost race. */
static int increment(faucet_store *s, int rounds)
{
	for (int i = 0; i < rounds; i++) {
		for (;;) {
			faucet_value *cur = NULL, *next = NULL;
			char text[32];
			int n, written = 0, rc;

			if (faucet_store_get(s, "counter", &cur) != 0)
				return -1;
			n = read_counter(cur);
			if (n < 0) {
				faucet_value_free(cur);
				return -1;
			}
			snprintf(text, sizeof(text), "{\"n\":%d}", n + 1);
			rc = faucet_value_parse(&next, text, strlen(text));
			if (rc == 0)
				rc = faucet_store_compare_and_put(s, "counter", cur, next, &written);
			faucet_value_free(cur);
			faucet_value_free(next);
			if (rc != 0)
				return -1;
			if (written)
				break;
		}
	}
	return 0;
}

static void *increment_thread(void *arg)
{
	incr_job *j = arg;

	pthread_barrier_wait(j->start);
	if (increment(j->store, j->rounds) != 0) {
		fprintf(stderr, "thread: %s\n", faucet_error_last()->message);
		j->failures++;
	}
	return NULL;
}

static void assert_counter(faucet_store *s, int want)
{
	faucet_value *v = NULL;

	assert_int_equal(faucet_store_get(s, "counter", &v), 0);
	assert_int_equal(read_counter(v), want);
	faucet_value_free(v);
}

/* 8 threads x 250 increments through one handle end at exactly 2000. */
static void compare_and_put_is_atomic_across_threads(void **state)
{
	pthread_t tid[8];
	incr_job jobs[8];
	pthread_barrier_t start;

	assert_int_equal(pthread_barrier_init(&start, NULL, 8), 0);
	for (int i = 0; i < 8; i++) {
		jobs[i] = (incr_job){S(state), NULL, 250, 0, &start};
		assert_int_equal(pthread_create(&tid[i], NULL, increment_thread, &jobs[i]), 0);
	}
	for (int i = 0; i < 8; i++) {
		assert_int_equal(pthread_join(tid[i], NULL), 0);
		assert_int_equal(jobs[i].failures, 0);
	}
	pthread_barrier_destroy(&start);
	assert_counter(S(state), 2000);
}

/* Run child() in 8 processes started together, each with its own handle
 * on the store, and return the sum of their results (each 0..254).  The
 * parent's handle is closed across the fork (SQLite and libpq connections
 * must not be shared with a child) and reopened afterwards. */
static int in_8_processes(fixture *f, int (*child)(faucet_store *s))
{
	int gate[2], total = 0;
	pid_t pids[8];

	faucet_store_free(f->store);
	f->store = NULL;
	assert_int_equal(pipe(gate), 0);
	fflush(NULL);
	for (int i = 0; i < 8; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			faucet_store *s = NULL;
			int result = -1;
			char c;

			close(gate[1]);
			(void)read(gate[0], &c, 1); /* returns at EOF: the parent let go */
			if (faucet_store_open_url(&s, f->url) == 0)
				result = child(s);
			if (result < 0)
				fprintf(stderr, "child %d: %s\n", i, faucet_error_last()->message);
			faucet_store_free(s);
			_exit(result < 0 || result > 254 ? 255 : result);
		}
	}
	close(gate[0]);
	close(gate[1]);
	for (int i = 0; i < 8; i++) {
		int status = 0;
		assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
		assert_true(WIFEXITED(status));
		assert_int_not_equal(WEXITSTATUS(status), 255);
		total += WEXITSTATUS(status);
	}
	f->store = open_url(f->url);
	return total;
}

static int increment_250(faucet_store *s)
{
	return increment(s, 250) == 0 ? 0 : -1;
}

/* 8 processes x 250 increments, each process with its own store handle,
 * end at exactly 2000. */
static void compare_and_put_is_atomic_across_processes(void **state)
{
	fixture *f = *state;

	assert_int_equal(in_8_processes(f, increment_250), 0);
	assert_counter(f->store, 2000);
}

/* ---- compare-and-delete ----------------------------------------------- */

static int cad(faucet_store *s, const char *key, const char *expected)
{
	faucet_value *e = tu_v(expected);
	int deleted = -1;

	if (faucet_store_compare_and_delete(s, key, e, &deleted) != 0)
		fail_msg("%s: compare-and-delete '%s': %s", current->name, key,
			 faucet_error_last()->message);
	faucet_value_free(e);
	assert_true(deleted == 0 || deleted == 1);
	return deleted;
}

static void compare_and_delete_removes_only_the_expected_value(void **state)
{
	faucet_store *s = S(state);
	faucet_value *v = tu_v("1");
	int deleted = -1;

	assert_true(faucet_store_supports_compare_and_delete(s));
	tu_put(s, "k", "{\"a\":1,\"b\":[2,3]}");
	assert_false(cad(s, "k", "{\"a\":1,\"b\":[3,2]}"));
	assert_false(cad(s, "k", "{\"a\":1}"));
	tu_assert_value(s, "k", "{\"a\":1,\"b\":[2,3]}");
	/* Equal as JSON values, written another way. */
	assert_true(cad(s, "k", "{ \"b\" : [2,3], \"a\" : 1 }"));
	tu_assert_value(s, "k", NULL);
	assert_false(cad(s, "k", "{\"a\":1,\"b\":[2,3]}"));
	assert_false(cad(s, "missing", "null"));
	/* Nothing expected is not "no entry" here: plain delete is for that. */
	assert_int_equal(faucet_store_compare_and_delete(s, "k", NULL, &deleted),
			 FAUCET_EINVALID);
	assert_int_equal(deleted, 0);
	assert_int_equal(faucet_store_compare_and_delete(s, "../bad", v, &deleted),
			 FAUCET_EINVALID);
	/* The key can be written again afterwards. */
	tu_put(s, "k", "2");
	tu_assert_value(s, "k", "2");
	faucet_value_free(v);
}

/* Spellings PostgreSQL's numeric refuses for values it holds (more than
 * 16383 digits after the point, trailing zeros included; a huge exponent
 * on 0) and values beyond its range compare like any other number. */
static void numbers_beyond_a_spelling_or_range(faucet_store *s)
{
	size_t zeros = 20000;
	char *one = malloc(zeros + 3);

	assert_non_null(one);
	memcpy(one, "1.", 2);
	memset(one + 2, '0', zeros);
	one[zeros + 2] = '\0';
	tu_put(s, "tiny", "1e-16383");
	assert_false(tu_cas(s, "tiny", "1e-16384", "\"k\""));
	assert_false(tu_cas(s, "tiny", "1e-100000000000000000000", "\"k\""));
	assert_true(tu_cas(s, "tiny", "10e-16384", "\"k\""));
	tu_assert_value(s, "tiny", "\"k\"");
	tu_put(s, "zero", "0");
	assert_false(tu_cas(s, "zero", "1e-16384", "\"l\""));
	assert_true(tu_cas(s, "zero", "0e-2000000000", "\"l\""));
	tu_put(s, "one", "1");
	assert_true(tu_cas(s, "one", one, "\"m\""));
	tu_assert_value(s, "one", "\"m\"");
	free(one);
}

/* doc/design.md §2.5: numbers compare by exact decimal value, whatever the
 * spelling, and never through a double - here where the backend compares
 * (PostgreSQL in SQL with JSONB, the others in C).  Each write that should
 * happen puts a new string, so the read-back proves which one did. */
static void compare_and_put_compares_numbers_by_value(void **state)
{
	faucet_store *s = S(state);

	tu_put(s, "n", "1200");
	assert_true(tu_cas(s, "n", "1200.0", "\"a\""));
	tu_put(s, "n", "1200");
	assert_true(tu_cas(s, "n", "1.2e3", "\"b\""));
	tu_assert_value(s, "n", "\"b\"");
	tu_put(s, "n", "1200.0");
	assert_false(tu_cas(s, "n", "1201", "\"c\""));
	assert_false(tu_cas(s, "n", "\"1200\"", "\"c\""));
	assert_true(tu_cas(s, "n", "1200", "\"c\""));
	tu_assert_value(s, "n", "\"c\"");
	/* Inside structures, members in any order. */
	tu_put(s, "obj", "{\"b\":[2],\"a\":1}");
	assert_false(tu_cas(s, "obj", "{\"a\":1.5,\"b\":[2e0]}", "\"d\""));
	assert_true(tu_cas(s, "obj", "{\"a\":1.0,\"b\":[2e0]}", "\"d\""));
	tu_assert_value(s, "obj", "\"d\"");
	/* Beyond 2^53 every digit counts. */
	tu_put(s, "big", "9007199254740992");
	assert_false(tu_cas(s, "big", "9007199254740993", "\"e\""));
	assert_false(tu_cas(s, "big", "9007199254740993.0", "\"e\""));
	assert_true(tu_cas(s, "big", "9007199254740992.0", "\"e\""));
	tu_assert_value(s, "big", "\"e\"");
	tu_put(s, "max", "18446744073709551615");
	assert_false(tu_cas(s, "max", "18446744073709551614", "\"f\""));
	assert_false(tu_cas(s, "max", "1.8446744073709551614e19", "\"f\""));
	assert_true(tu_cas(s, "max", "18446744073709551615", "\"f\""));
	tu_put(s, "max", "18446744073709551615");
	assert_true(tu_cas(s, "max", "1.8446744073709551615e19", "\"g\""));
	tu_assert_value(s, "max", "\"g\"");
	/* Exact decimals, not the nearest double. */
	tu_put(s, "dec", "0.1");
	assert_false(tu_cas(s, "dec", "0.10000000000000001", "\"h\""));
	assert_true(tu_cas(s, "dec", "0.100", "\"h\""));
	tu_assert_value(s, "dec", "\"h\"");
	/* Zero has no sign as a value. */
	tu_put(s, "zero", "0");
	assert_true(tu_cas(s, "zero", "-0", "\"i\""));
	tu_put(s, "zero", "0");
	assert_true(tu_cas(s, "zero", "-0.0", "\"j\""));
	tu_assert_value(s, "zero", "\"j\"");
	numbers_beyond_a_spelling_or_range(s);
}

static void compare_and_delete_compares_numbers_by_value(void **state)
{
	faucet_store *s = S(state);

	tu_put(s, "n", "1200");
	assert_false(cad(s, "n", "1201.0"));
	assert_false(cad(s, "n", "\"1200\""));
	tu_assert_value(s, "n", "1200");
	assert_true(cad(s, "n", "1.2e3"));
	tu_assert_value(s, "n", NULL);
	tu_put(s, "n", "1200.0");
	assert_true(cad(s, "n", "1200"));
	tu_assert_value(s, "n", NULL);
	tu_put(s, "obj", "{\"b\":[2],\"a\":1}");
	assert_true(cad(s, "obj", "{\"a\":1.0,\"b\":[2e0]}"));
	tu_assert_value(s, "obj", NULL);
	tu_put(s, "big", "9007199254740992");
	assert_false(cad(s, "big", "9007199254740993"));
	tu_assert_value(s, "big", "9007199254740992");
	assert_true(cad(s, "big", "9007199254740992.0"));
	tu_put(s, "max", "18446744073709551615");
	assert_false(cad(s, "max", "18446744073709551614"));
	assert_true(cad(s, "max", "1.8446744073709551615e19"));
	tu_put(s, "zero", "0");
	assert_false(cad(s, "zero", "1e-16384"));
	assert_true(cad(s, "zero", "-0"));
	tu_put(s, "tiny", "1e-16383");
	assert_false(cad(s, "tiny", "1e-100000000000000000000"));
	assert_true(cad(s, "tiny", "10e-16384"));
	tu_put(s, "zero", "0");
	assert_true(cad(s, "zero", "0e-2000000000"));
	tu_assert_value(s, "tiny", NULL);
	tu_assert_value(s, "big", NULL);
	tu_assert_value(s, "max", NULL);
	tu_assert_value(s, "zero", NULL);
}

/* A token {"n": N} under "token" passes from hand to hand: whoever deletes
 * it with compare-and-delete owns it and puts {"n": N+1} back.  Were the
 * delete not atomic, two takers could own one N, and the wins would add up
 * to more than the final N.  Returns this taker's wins, or -1. */
#define TOKEN_LIMIT 160

static int take_tokens(faucet_store *s)
{
	int wins = 0;

	for (;;) {
		faucet_value *t = NULL, *next;
		int n, deleted = 0;
		char text[32];

		if (faucet_store_get(s, "token", &t) != 0)
			return -1;
		if (t == NULL)
			continue; /* its owner is about to put it back */
		n = read_counter(t);
		if (n < 0 || n >= TOKEN_LIMIT) {
			faucet_value_free(t);
			return n < 0 ? -1 : wins;
		}
		if (faucet_store_compare_and_delete(s, "token", t, &deleted) != 0) {
			faucet_value_free(t);
			return -1;
		}
		faucet_value_free(t);
		if (!deleted)
			continue;
		wins++;
		snprintf(text, sizeof(text), "{\"n\":%d}", n + 1);
		next = tu_v(text);
		if (faucet_store_put(s, "token", next) != 0) {
			faucet_value_free(next);
			return -1;
		}
		faucet_value_free(next);
	}
}

typedef struct {
	faucet_store *store;
	pthread_barrier_t *start;
	int wins;
} token_job;

static void *token_thread(void *arg)
{
	token_job *j = arg;

	pthread_barrier_wait(j->start);
	j->wins = take_tokens(j->store);
	if (j->wins < 0)
		fprintf(stderr, "thread: %s\n", faucet_error_last()->message);
	return NULL;
}

static void compare_and_delete_is_atomic_across_threads(void **state)
{
	pthread_t tid[8];
	token_job jobs[8];
	pthread_barrier_t start;
	int total = 0;

	tu_put(S(state), "token", "{\"n\":0}");
	assert_int_equal(pthread_barrier_init(&start, NULL, 8), 0);
	for (int i = 0; i < 8; i++) {
		jobs[i] = (token_job){S(state), &start, 0};
		assert_int_equal(pthread_create(&tid[i], NULL, token_thread, &jobs[i]), 0);
	}
	for (int i = 0; i < 8; i++) {
		assert_int_equal(pthread_join(tid[i], NULL), 0);
		assert_true(jobs[i].wins >= 0);
		total += jobs[i].wins;
	}
	pthread_barrier_destroy(&start);
	assert_int_equal(total, TOKEN_LIMIT);
	tu_assert_value(S(state), "token", "{\"n\":160}");
}

/* The same with 8 processes, each with its own handle. */
static void compare_and_delete_is_atomic_across_processes(void **state)
{
	fixture *f = *state;

	tu_put(f->store, "token", "{\"n\":0}");
	assert_int_equal(in_8_processes(f, take_tokens), TOKEN_LIMIT);
	tu_assert_value(f->store, "token", "{\"n\":160}");
}

/* ---- batches ----------------------------------------------------------- */

static void put_batch_lands_every_entry_and_checks_keys_first(void **state)
{
	faucet_store *s = S(state);
	faucet_value *a = tu_v("{\"a\":1}"), *b = tu_v("[2]"), *c = tu_v("\"three\"");
	faucet_entry good[3] = {{"o::a", a}, {"o::b", b}, {"o::c", c}};
	faucet_entry bad[2] = {{"o::x", a}, {"../bad", b}};
	faucet_entry dup[2] = {{"o::d", a}, {"o::d", c}};

	assert_int_equal(faucet_store_supports_atomic_batch(s), current->atomic_batch);
	assert_int_equal(faucet_store_put_batch(s, good, 3), 0);
	tu_assert_value(s, "o::a", "{\"a\":1}");
	tu_assert_value(s, "o::b", "[2]");
	tu_assert_value(s, "o::c", "\"three\"");
	assert_int_equal(faucet_store_put_batch(s, bad, 2), FAUCET_EINVALID);
	tu_assert_value(s, "o::x", NULL);
	assert_int_equal(faucet_store_put_batch(s, NULL, 0), 0);
	/* A key given twice ends with its last value, as one-by-one puts would. */
	assert_int_equal(faucet_store_put_batch(s, dup, 2), 0);
	tu_assert_value(s, "o::d", "\"three\"");
	/* A batch overwrites. */
	good[0].value = c;
	assert_int_equal(faucet_store_put_batch(s, good, 1), 0);
	tu_assert_value(s, "o::a", "\"three\"");
	faucet_value_free(a);
	faucet_value_free(b);
	faucet_value_free(c);
}

static void a_large_batch_lands_whole(void **state)
{
	faucet_store *s = S(state);
	faucet_entry e[500];
	char keys[500][24];
	faucet_value *v = tu_v("{\"k\":1}");
	faucet_strarray got = {0};

	for (int i = 0; i < 500; i++) {
		snprintf(keys[i], sizeof(keys[i]), "big::%04d", i);
		e[i].key = keys[i];
		e[i].value = v;
	}
	assert_int_equal(faucet_store_put_batch(s, e, 500), 0);
	assert_int_equal(faucet_store_list(s, "big::", &got), 0);
	assert_int_equal(got.count, 500);
	assert_string_equal(got.strings[0], "big::0000");
	assert_string_equal(got.strings[499], "big::0499");
	faucet_strarray_dispose(&got);
	faucet_value_free(v);
}

/* ---- export / import --------------------------------------------------- */

/* Export a namespace, import it into a second, fresh store of the same
 * backend, and with `replace` drop the keys the document lacks. */
/* Run bookkeeping (doc/design.md §8.9) is never exported, by either export - the
 * streamed one (PostgreSQL) and the chunked one alike. */
static void exports_leave_run_bookkeeping_out(void **state)
{
	faucet_store *s = S(state);
	faucet_export *e = NULL;
	char *text = NULL;
	size_t len = 0, count = 0;
	FILE *out;

	tu_put(s, "o::a", "1");
	tu_put(s, "o::__status__", "{\"version\":1,\"runs\":[]}");
	tu_put(s, "o::__rollback__", "{\"version\":1,\"runs\":[]}");
	tu_put(s, "o::r::__lease__", "{\"holder\":\"h\",\"expires_at\":1}");
	tu_put(s, "o::r::__rollback__::20260101T000000.000Z-abcdef", "{}");
	tu_put(s, "o::z", "2");
	assert_int_equal(faucet_export_namespace(s, "o", &e), 0);
	assert_int_equal(faucet_export_count(e), 2);
	faucet_export_free(e);
	out = open_memstream(&text, &len);
	assert_non_null(out);
	assert_int_equal(faucet_export_write(s, "o", NULL, 0, out, &count), 0);
	assert_int_equal(fclose(out), 0);
	assert_int_equal(count, 2);
	assert_null(strstr(text, "__"));
	assert_non_null(strstr(text, "\"o::a\":1"));
	assert_non_null(strstr(text, "\"o::z\":2"));
	free(text);
}

static int collect_entry_key(const char *key, const faucet_value *value, void *ctx)
{
	(void)value;
	return collect_key(key, ctx);
}

/* scan_data leaves out exactly the bookkeeping keys: look-alikes stay (on
 * PostgreSQL the filter is SQL with '_' as a LIKE wildcard). */
static void scan_data_leaves_out_exactly_the_bookkeeping(void **state)
{
	static const char *const data[] = {
		"o::__rollback__x", "o::__status__::x", "o::a", "o::a::xx__lease__",
		"o::a::zz_status__", "o::x__rollback__::y", "o::z"};
	static const char *const bookkeeping[] = {
		"o::__rollback__", "o::__status__", "o::r::__lease__",
		"o::r::__rollback__::20260101T000000.000Z-abcdef", "o::r::__status__"};
	faucet_store *s = S(state);
	faucet_strarray seen = {NULL, 0}, all = {NULL, 0};

	for (size_t i = 0; i < sizeof(data) / sizeof(data[0]); i++)
		tu_put(s, data[i], "1");
	for (size_t i = 0; i < sizeof(bookkeeping) / sizeof(bookkeeping[0]); i++)
		tu_put(s, bookkeeping[i], "{\"version\":1,\"runs\":[]}");
	assert_int_equal(faucet_store_scan_data(s, "o::", collect_entry_key, &seen), 0);
	assert_int_equal(seen.count, sizeof(data) / sizeof(data[0]));
	for (size_t i = 0; i < seen.count; i++)
		assert_string_equal(seen.strings[i], data[i]);
	assert_int_equal(faucet_store_scan_entries(s, "o::", collect_entry_key, &all), 0);
	assert_int_equal(all.count, seen.count + sizeof(bookkeeping) / sizeof(bookkeeping[0]));
	faucet_strarray_dispose(&seen);
	faucet_strarray_dispose(&all);
}

static void export_then_import_round_trips(void **state)
{
	faucet_store *from = S(state), *to;
	faucet_export *e = NULL;
	faucet_import_report r = FAUCET_IMPORT_REPORT_INIT;
	char *url, *tmp = NULL;

	tu_put(from, "o::a", "{\"c\":1,\"big\":18446744073709551615}");
	tu_put(from, "o::a::__sla__", "{}");
	tu_put(from, "o::b", "2");
	tu_put(from, "other::a", "9");
	tu_put(from, "o_x::a", "9"); /* '_' is not a wildcard in the namespace */
	assert_int_equal(faucet_export_namespace(from, "o", &e), 0);
	assert_int_equal(faucet_export_count(e), 3);
	assert_string_equal(faucet_export_key_at(e, 0), "o::a");
	assert_string_equal(faucet_export_key_at(e, 1), "o::a::__sla__");
	assert_string_equal(faucet_export_key_at(e, 2), "o::b");

	url = contract_expand_url(current->url_template, &tmp);
	assert_non_null(url);
	to = open_url(url);
	tu_put(to, "o::stale", "0");
	r = (faucet_import_report)FAUCET_IMPORT_REPORT_INIT;
	assert_int_equal(faucet_import_namespace(to, e, 0, &r), 0);
	assert_null(r.error);
	assert_int_equal(r.atomic, current->atomic_batch);
	tu_assert_strings(&r.written, "o::a", "o::a::__sla__", "o::b", NULL);
	faucet_import_report_dispose(&r);
	tu_assert_value(to, "o::stale", "0"); /* kept without replace */
	tu_assert_value(to, "o::a", "{\"c\":1,\"big\":18446744073709551615}");

	r = (faucet_import_report)FAUCET_IMPORT_REPORT_INIT;
	assert_int_equal(faucet_import_namespace(to, e, 1, &r), 0);
	assert_null(r.error);
	tu_assert_strings(&r.deleted, "o::stale", NULL);
	faucet_import_report_dispose(&r);
	tu_assert_value(to, "o::stale", NULL);
	tu_assert_value(to, "o::b", "2");
	tu_assert_value(to, "other::a", NULL);

	{
		faucet_strarray keys = {0};
		assert_int_equal(faucet_store_list(to, "", &keys), 0);
		for (size_t i = 0; i < keys.count; i++)
			(void)faucet_store_delete(to, keys.strings[i]);
		faucet_strarray_dispose(&keys);
	}
	faucet_store_free(to);
	if (tmp != NULL) {
		tu_rmrf(tmp);
		free(tmp);
	}
	free(url);
	faucet_export_free(e);
}

/* ---- persistence and doctor ------------------------------------------- */

static void a_second_handle_sees_the_first_ones_writes(void **state)
{
	fixture *f = *state;
	faucet_store *other;

	tu_put(f->store, "shared::k", "{\"x\":[1,2,3]}");
	other = open_url(f->url);
	tu_assert_value(other, "shared::k", "{\"x\":[1,2,3]}");
	tu_put(other, "shared::k", "false");
	faucet_store_free(other);
	tu_assert_value(f->store, "shared::k", "false");
}

static void doctor_probe_passes_and_leaves_no_residue(void **state)
{
	faucet_store *s = S(state);
	faucet_check_context ctx = {.version = FAUCET_CHECK_CONTEXT_VERSION, .timeout_ms = 5000};
	faucet_check_report *r = NULL;
	faucet_strarray keys = {0};

	assert_int_equal(faucet_store_check(s, &ctx, &r), 0);
	assert_non_null(r);
	assert_true(faucet_check_report_count(r) >= 1);
	for (size_t i = 0; i < faucet_check_report_count(r); i++) {
		const faucet_probe *p = faucet_check_report_probe(r, i);
		/* A warning (a test server configured without fsync) is not a
		 * failure of the store. */
		if (p->status != FAUCET_PROBE_PASS && p->status != FAUCET_PROBE_WARN)
			fail_msg("%s: probe %s: %s", current->name, p->name,
				 p->reason ? p->reason : "(no reason)");
	}
	assert_int_equal(faucet_check_report_failed_count(r), 0);
	faucet_check_report_free(r);
	assert_int_equal(faucet_store_list(s, "", &keys), 0);
	assert_int_equal(keys.count, 0);
	faucet_strarray_dispose(&keys);
}

/* ---- errors that say whether to retry ---------------------------------- */

static void a_writer_kept_out_by_a_lock_is_busy_and_changes_nothing(void **state)
{
	fixture *f = *state;
	faucet_value *two, *one;
	faucet_store *s;
	int written = 1, deleted = 1;

	if (current->locker == NULL)
		skip();
	one = tu_v("1");
	two = tu_v("2");
	tu_put(f->store, "p::busy", "1");
	current->locker->hold(f->url, "p::busy", &f->lock_token);
	/* A fresh handle, so its connections use the shortened wait. */
	s = open_url(f->url);
	assert_int_equal(faucet_store_compare_and_put(s, "p::busy", one, two, &written),
			 FAUCET_EBUSY);
	assert_int_equal(written, 0);
	assert_true(faucet_error_retryable(faucet_error_last()->code));
	assert_int_equal(faucet_store_compare_and_delete(s, "p::busy", one, &deleted),
			 FAUCET_EBUSY);
	assert_int_equal(deleted, 0);
	current->locker->release(f->lock_token);
	f->lock_token = NULL;
	tu_assert_value(s, "p::busy", "1");
	/* Once the holder is gone the same call goes through. */
	assert_int_equal(faucet_store_compare_and_put(s, "p::busy", one, two, &written), 0);
	assert_int_equal(written, 1);
	tu_assert_value(f->store, "p::busy", "2");
	faucet_store_free(s);
	faucet_value_free(one);
	faucet_value_free(two);
}

/* get_many: each slot its own key's value or NULL, in the order asked,
 * a key asked twice filled twice, and the same values as get. */
static void get_many_reads_each_key_in_its_slot(void **state)
{
	faucet_store *s = S(state);
	faucet_value *a = tu_v("{\"n\":1}"), *b = tu_v("[1,\"two\",0.1]");
	const char *keys[] = {"p::b", "p::missing", "p::a", "p::b", "NULL"};
	faucet_value *out[5];

	assert_int_equal(faucet_store_put(s, "p::a", a), 0);
	assert_int_equal(faucet_store_put(s, "p::b", b), 0);
	assert_int_equal(faucet_store_get_many(s, keys, 5, out), 0);
	assert_true(faucet_value_equal(out[0], b));
	assert_null(out[1]);
	assert_true(faucet_value_equal(out[2], a));
	assert_true(faucet_value_equal(out[3], b));
	assert_null(out[4]);
	if (current->exact_text)
		assert_string_equal(faucet_value_json(out[0]), "[1,\"two\",0.1]");
	for (size_t i = 0; i < 5; i++)
		faucet_value_free(out[i]);
	/* An invalid key anywhere refuses the whole call. */
	keys[1] = "bad key";
	assert_int_equal(faucet_store_get_many(s, keys, 5, out), FAUCET_EINVALID);
	for (size_t i = 0; i < 5; i++)
		assert_null(out[i]);
	assert_int_equal(faucet_store_get_many(s, keys, 0, out), 0);
	faucet_value_free(a);
	faucet_value_free(b);
}

/* A large chunk (more than one export chunk, deleted keys among them)
 * comes back whole. */
static void get_many_of_a_large_chunk(void **state)
{
	faucet_store *s = S(state);
	faucet_entry entries[600];
	char names[600][32];
	const char *keys[600];
	faucet_value *out[600];

	for (int i = 0; i < 600; i++) {
		snprintf(names[i], sizeof(names[i]), "big::k%04d", i);
		entries[i].key = names[i];
		entries[i].value = tu_v(i % 2 ? "{\"odd\":true}" : "12345678901234567890");
		keys[599 - i] = names[i];
	}
	assert_int_equal(faucet_store_put_batch(s, entries, 600), 0);
	assert_int_equal(faucet_store_delete(s, "big::k0007"), 0);
	assert_int_equal(faucet_store_get_many(s, keys, 600, out), 0);
	for (int i = 0; i < 600; i++) {
		int k = 599 - i;
		if (k == 7)
			assert_null(out[i]);
		else
			assert_true(faucet_value_equal(out[i], entries[k].value));
		faucet_value_free(out[i]);
	}
	for (int i = 0; i < 600; i++)
		faucet_value_free((faucet_value *)entries[i].value);
}

typedef struct {
	char keys[16][64];
	char texts[16][128];
	size_t count;
	size_t stop_after; /* 0 = never */
} entry_log;

static int log_entry(const char *key, const faucet_value *value, void *arg)
{
	entry_log *l = arg;

	assert_true(l->count < 16);
	snprintf(l->keys[l->count], sizeof(l->keys[0]), "%s", key);
	snprintf(l->texts[l->count], sizeof(l->texts[0]), "%s", faucet_value_json(value));
	l->count++;
	return l->stop_after != 0 && l->count == l->stop_after ? 42 : 0;
}

/* scan_entries: the keys under a prefix (taken literally) in byte order,
 * each with its value, and fn's non-zero value stops it. */
static void scan_entries_walks_the_prefix_in_byte_order(void **state)
{
	faucet_store *s = S(state);
	static const char *const keys[] = {"p::b", "p::a", "p::B", "p::a::x", "p_::c", "q::a",
					   "p:"};
	static const char *const want[] = {"p::B", "p::a", "p::a::x", "p::b"};
	entry_log l;

	memset(&l, 0, sizeof(l));
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		char json[64];
		faucet_value *v;

		snprintf(json, sizeof(json), "{\"i\":%zu,\"k\":\"%s\"}", i, keys[i]);
		v = tu_v(json);
		assert_int_equal(faucet_store_put(s, keys[i], v), 0);
		faucet_value_free(v);
	}
	assert_int_equal(faucet_store_scan_entries(s, "p::", log_entry, &l), 0);
	assert_int_equal(l.count, 4);
	for (size_t i = 0; i < 4; i++)
		assert_string_equal(l.keys[i], want[i]);
	/* Compact text, whatever the backend stores (JSONB prints spaces). */
	assert_non_null(strstr(l.texts[0], "\"k\":\"p::B\""));
	assert_null(strchr(l.texts[0], ' '));
	memset(&l, 0, sizeof(l));
	l.stop_after = 2;
	assert_int_equal(faucet_store_scan_entries(s, "", log_entry, &l), 42);
	assert_int_equal(l.count, 2);
	memset(&l, 0, sizeof(l));
	assert_int_equal(faucet_store_scan_entries(s, "p_", log_entry, &l), 0);
	assert_int_equal(l.count, 1);
	assert_string_equal(l.keys[0], "p_::c");

	/* Escapes and multi-byte text come back as get returns them (the
	 * PostgreSQL store reads a COPY stream, which escapes backslashes). */
	{
		faucet_value *v = tu_v("{\"s\":\"tab\\t nl\\n bs\\\\ q\\\" \u00e9 \\u00e9\"}"), *got = NULL;

		assert_int_equal(faucet_store_put(s, "z::esc", v), 0);
		assert_int_equal(faucet_store_get(s, "z::esc", &got), 0);
		memset(&l, 0, sizeof(l));
		assert_int_equal(faucet_store_scan_entries(s, "z::", log_entry, &l), 0);
		assert_int_equal(l.count, 1);
		assert_string_equal(l.texts[0], faucet_value_json(got));
		assert_true(faucet_value_equal(got, v));
		faucet_value_free(got);
		faucet_value_free(v);
	}
}

/* Entries cas_batch adds to each batch (new keys of their own), so that a
 * backend with a path for big batches takes it (Redis: a script). */
static size_t cas_pad;
static unsigned cas_pad_round;

/* faucet__store_compare_and_put_batch on the faucet_store_guard list
 * given as text: "key=expected>value" triples, "-" meaning no entry; then
 * cas_pad new keys, written exactly when the batch is. */
static int cas_batch(faucet_store *s, const char *const *spec, size_t n, int *written)
{
	size_t total = n + cas_pad;
	faucet_store_guard *g = calloc(total, sizeof(*g));
	faucet_value **held = calloc(2 * n, sizeof(*held));
	char (*keys)[64] = calloc(total, sizeof(*keys));
	faucet_value *padv = tu_v("{\"pad\":true}");
	int rc;

	assert_non_null(g);
	assert_non_null(held);
	assert_non_null(keys);
	for (size_t i = 0; i < n; i++) {
		char exp[256], val[256];

		assert_int_equal(sscanf(spec[i], "%63[^=]=%255[^>]>%255s", keys[i], exp, val), 3);
		held[2 * i] = strcmp(exp, "-") == 0 ? NULL : tu_v(exp);
		held[2 * i + 1] = strcmp(val, "-") == 0 ? NULL : tu_v(val);
		g[i] = (faucet_store_guard){keys[i], held[2 * i], held[2 * i + 1]};
	}
	cas_pad_round++;
	for (size_t i = n; i < total; i++) {
		snprintf(keys[i], sizeof(keys[i]), "pad::r%u::k%05zu", cas_pad_round, i);
		g[i] = (faucet_store_guard){keys[i], NULL, padv};
	}
	*written = -1;
	rc = faucet__store_compare_and_put_batch(s, g, total, written);
	if (rc == 0 && cas_pad > 0) {
		tu_assert_value(s, keys[n], *written ? "{\"pad\":true}" : NULL);
		tu_assert_value(s, keys[total - 1], *written ? "{\"pad\":true}" : NULL);
	}
	for (size_t i = 0; i < 2 * n; i++)
		faucet_value_free(held[i]);
	faucet_value_free(padv);
	free(held);
	free(keys);
	free(g);
	return rc;
}

/* A batch of compare-and-puts (an undo's restores) is written whole when
 * every key holds what it expects, by value as compare-and-put compares,
 * and not at all when one key does not - a put, a delete, an insert of an
 * absent key alike - on every store, the file store's batch included. */
static void all_or_nothing(faucet_store *s)
{
	const char *first[] = {"b::a=1>2", "b::b=\"x\">-", "b::c=->3",
			       "b::o={\"b\":[2e0],\"a\":1.0}>4", "b::gone=->-"};
	const char *stale[] = {"b::a=2>5", "b::d=->6", "b::c=3.5>7"};
	const char *taken[] = {"b::a=2>5", "b::c=->7"};
	const char *missing[] = {"b::b=\"x\">8", "b::a=2>5"};
	const char *twice[] = {"b::a=2>5", "b::a=2>6"};
	int written;

	tu_put(s, "b::a", "1");
	tu_put(s, "b::b", "\"x\"");
	/* (Stored without an exponent: PostgreSQL refuses 2e0 in a put.) */
	tu_put(s, "b::o", "{\"a\":1,\"b\":[2]}");
	assert_int_equal(cas_batch(s, first, 5, &written), 0);
	assert_int_equal(written, 1);
	tu_assert_value(s, "b::a", "2");
	tu_assert_value(s, "b::b", NULL);
	tu_assert_value(s, "b::c", "3");
	tu_assert_value(s, "b::o", "4");
	tu_assert_value(s, "b::gone", NULL);
	/* One key off (b::c holds 3, not 3.5): nothing of it is written. */
	assert_int_equal(cas_batch(s, stale, 3, &written), 0);
	assert_int_equal(written, 0);
	tu_assert_value(s, "b::a", "2");
	tu_assert_value(s, "b::d", NULL);
	tu_assert_value(s, "b::c", "3");
	/* A key expected absent that exists, one expected present that is gone. */
	assert_int_equal(cas_batch(s, taken, 2, &written), 0);
	assert_int_equal(written, 0);
	assert_int_equal(cas_batch(s, missing, 2, &written), 0);
	assert_int_equal(written, 0);
	tu_assert_value(s, "b::a", "2");
	tu_assert_value(s, "b::b", NULL);
	/* A key given twice is refused before the backend sees it. */
	assert_int_equal(cas_batch(s, twice, 2, &written), FAUCET_EINVALID);
	assert_int_equal(written, 0);
	tu_assert_value(s, "b::a", "2");
}

/* ... in a small batch, and in one of more than FAUCET_STORE_CAS_BATCH_MAX
 * entries where the backend takes one (Redis runs those as a script, not
 * under WATCH). */
static void compare_and_put_batch_writes_all_or_nothing(void **state)
{
	faucet_store *s = S(state);
	const char *keys[] = {"b::a", "b::b", "b::c", "b::d", "b::o", "b::gone"};

	cas_pad = 0;
	all_or_nothing(s);
	if (faucet__store_cas_batch_max(s) < FAUCET_STORE_CAS_BATCH_MAX + 16)
		return;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		assert_int_equal(faucet_store_delete(s, keys[i]), 0);
	cas_pad = FAUCET_STORE_CAS_BATCH_MAX;
	all_or_nothing(s);
	cas_pad = 0;
}

/* The largest batch, every key new, lands whole; one more is refused.
 * SQLite, PostgreSQL, Redis (a script), memory and the file store take an
 * import's chunk and its marker part; etcd takes 128. */
static void compare_and_put_batch_takes_its_largest_size(void **state)
{
	faucet_store *s = S(state);
	size_t max = faucet__store_cas_batch_max(s), n;
	faucet_store_guard *g;
	char (*keys)[32];
	faucet_value *v = tu_v("{\"cursor\":\"2026-12-07T00:00:00Z\"}");
	int written = 0;

	if (strcmp(current->name, "etcd") == 0)
		assert_int_equal(max, FAUCET_STORE_CAS_BATCH_MAX);
	else
		assert_true(max > FAUCET_IMPORT_CHUNK);
	n = max ? max + 1 : FAUCET_STORE_CAS_BATCH_MAX + 1;
	g = calloc(n, sizeof(*g));
	keys = calloc(n, sizeof(*keys));
	assert_non_null(g);
	assert_non_null(keys);
	for (size_t i = 0; i < n; i++) {
		snprintf(keys[i], sizeof(keys[i]), "big::k%06zu", i);
		g[i] = (faucet_store_guard){keys[i], NULL, v};
	}
	assert_int_equal(faucet__store_compare_and_put_batch(s, g, n, &written),
			 max ? FAUCET_EINVALID : FAUCET_EUNSUPPORTED);
	if (max) {
		if (faucet__store_compare_and_put_batch(s, g, n - 1, &written) != 0)
			fail_msg("%s", faucet_error_last()->message);
		assert_int_equal(written, 1);
		tu_assert_value(s, "big::k000000", "{\"cursor\":\"2026-12-07T00:00:00Z\"}");
		tu_assert_value(s, keys[n - 2], "{\"cursor\":\"2026-12-07T00:00:00Z\"}");
		tu_assert_value(s, keys[n - 1], NULL);
	}
	faucet_value_free(v);
	free(keys);
	free(g);
}

/* A big batch whose every key is expected absent (an import's chunk of new
 * keys and its marker part: PostgreSQL writes it by one COPY, the table's
 * key the compare) writes nothing when one of its keys exists - wherever it
 * lies in the batch - and all of it once that key is gone. */
static void a_big_batch_of_new_keys_writes_nothing_when_one_exists(void **state)
{
	faucet_store *s = S(state);
	enum { N = FAUCET_STORE_CAS_BATCH_MAX + 72 };
	faucet_store_guard g[N];
	char keys[N][32];
	faucet_value *v;
	const size_t there[] = {0, N / 2, N - 1};
	int written = 1;

	if (faucet__store_cas_batch_max(s) < N)
		return; /* etcd: 128 keys a batch */
	v = tu_v("{\"n\":1}");
	for (size_t i = 0; i < N; i++) {
		snprintf(keys[i], sizeof(keys[i]), "fresh::k%04zu", i);
		g[i] = (faucet_store_guard){keys[i], NULL, v};
	}
	for (size_t t = 0; t < sizeof(there) / sizeof(there[0]); t++) {
		tu_put(s, keys[there[t]], "\"already\"");
		assert_int_equal(faucet__store_compare_and_put_batch(s, g, N, &written), 0);
		assert_int_equal(written, 0);
		tu_assert_value(s, keys[there[t]], "\"already\"");
		for (size_t i = 0; i < N; i++)
			if (i != there[t])
				tu_assert_value(s, keys[i], NULL);
		assert_int_equal(faucet_store_delete(s, keys[there[t]]), 0);
	}
	assert_int_equal(faucet__store_compare_and_put_batch(s, g, N, &written), 0);
	assert_int_equal(written, 1);
	for (size_t i = 0; i < N; i++)
		tu_assert_value(s, keys[i], "{\"n\":1}");
	faucet_value_free(v);
}

static void backend_name_is_reported(void **state)
{
	assert_string_equal(faucet_store_backend_name(S(state)), current->name);
}

int contract_run(const contract_backend *b)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(backend_name_is_reported, setup, teardown),
		cmocka_unit_test_setup_teardown(compare_and_put_batch_writes_all_or_nothing, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_big_batch_of_new_keys_writes_nothing_when_one_exists,
						setup, teardown),
		cmocka_unit_test_setup_teardown(compare_and_put_batch_takes_its_largest_size, setup,
						teardown),
		cmocka_unit_test_setup_teardown(get_many_reads_each_key_in_its_slot, setup, teardown),
		cmocka_unit_test_setup_teardown(get_many_of_a_large_chunk, setup, teardown),
		cmocka_unit_test_setup_teardown(scan_entries_walks_the_prefix_in_byte_order, setup,
						teardown),
		cmocka_unit_test_setup_teardown(invalid_keys_are_rejected_everywhere, setup, teardown),
		cmocka_unit_test_setup_teardown(typical_keys_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(missing_key_reads_as_null, setup, teardown),
		cmocka_unit_test_setup_teardown(values_keep_their_fidelity, setup, teardown),
		cmocka_unit_test_setup_teardown(nul_characters_are_refused_with_their_offset, setup,
						teardown),
		cmocka_unit_test_setup_teardown(put_overwrites, setup, teardown),
		cmocka_unit_test_setup_teardown(delete_removes_and_missing_is_ok, setup, teardown),
		cmocka_unit_test_setup_teardown(list_of_an_empty_store_is_empty, setup, teardown),
		cmocka_unit_test_setup_teardown(list_is_in_byte_order, setup, teardown),
		cmocka_unit_test_setup_teardown(list_prefix_is_literal, setup, teardown),
		cmocka_unit_test_setup_teardown(scan_stops_when_told_and_lets_the_callback_use_the_store,
						setup, teardown),
		cmocka_unit_test_setup_teardown(compare_and_put_writes_only_over_the_expected_value,
						setup, teardown),
		cmocka_unit_test_setup_teardown(compare_and_put_compares_json_values, setup, teardown),
		cmocka_unit_test_setup_teardown(compare_and_put_compares_numbers_by_value, setup,
						teardown),
		cmocka_unit_test_setup_teardown(compare_and_delete_compares_numbers_by_value, setup,
						teardown),
		cmocka_unit_test_setup_teardown(put_batch_lands_every_entry_and_checks_keys_first, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_large_batch_lands_whole, setup, teardown),
		cmocka_unit_test_setup_teardown(exports_leave_run_bookkeeping_out, setup, teardown),
		cmocka_unit_test_setup_teardown(compare_and_put_of_a_big_value, setup, teardown),
		cmocka_unit_test_setup_teardown(scan_data_leaves_out_exactly_the_bookkeeping, setup,
						teardown),
		cmocka_unit_test_setup_teardown(export_then_import_round_trips, setup, teardown),
		cmocka_unit_test_setup_teardown(doctor_probe_passes_and_leaves_no_residue, setup,
						teardown),
		cmocka_unit_test_setup_teardown(compare_and_delete_removes_only_the_expected_value,
						setup, teardown),
		cmocka_unit_test_setup_teardown(compare_and_put_is_atomic_across_threads, setup,
						teardown),
		cmocka_unit_test_setup_teardown(compare_and_delete_is_atomic_across_threads, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			a_writer_kept_out_by_a_lock_is_busy_and_changes_nothing, setup, teardown),
		/* Only for stores several processes can share (not memory:). */
		cmocka_unit_test_setup_teardown(a_second_handle_sees_the_first_ones_writes, setup,
						teardown),
		cmocka_unit_test_setup_teardown(compare_and_put_is_atomic_across_processes, setup,
						teardown),
		cmocka_unit_test_setup_teardown(compare_and_delete_is_atomic_across_processes, setup,
						teardown),
	};
	const size_t shared_only = 3;
	size_t n = sizeof(tests) / sizeof(tests[0]);
	char group[64];

	current = b;
	if (!b->cross_process)
		n -= shared_only;
	snprintf(group, sizeof(group), "contract/%s", b->name);
	return _cmocka_run_group_tests(group, tests, n, NULL, NULL);
}
