/*
 * test_alloc_fail.c - every out-of-memory path of the public calls.
 *
 * SQLite's way: run a call with its 1st allocation failing, then its 2nd,
 * its 3rd, ... until it gets through without reaching the failure.  Each
 * failing run must return FAUCET_ENOMEM, leave the stored state exactly as
 * it was (read back with the countdown off) and free everything it took -
 * the sanitizer build's leak checker fails the test otherwise.
 *
 * The store calls are walked on the memory, file and SQLite stores.
 *
 * The countdown (faucet__alloc_fail_at, src/util/alloc.c) covers
 * libfaucet's own allocations.  json-c, OpenSSL and libc allocate with
 * plain malloc and json-c has no allocator hook, so the failures of their
 * internal allocations are not walked here.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "internal.h"
#include "run/run_internal.h"

/* ---- the driver ----------------------------------------------------------- */

typedef struct {
	faucet_store *store; /* the store the call works on (NULL for pure calls) */
	const char *dir;     /* the file store's root, or NULL */
} target;

typedef int (*call_fn)(target *t);

static size_t total_points;

/* Everything observable about the stored state: each key and its value, and
 * for a file store every directory entry (a failed write leaves no temp
 * file).  Caller frees. */
static char *snapshot(const target *t)
{
	faucet_strarray keys = {0};
	size_t size = 0;
	char *text = NULL;
	FILE *out = open_memstream(&text, &size);

	assert_non_null(out);
	if (t->store != NULL) {
		assert_int_equal(faucet_store_list(t->store, "", &keys), 0);
		for (size_t i = 0; i < keys.count; i++) {
			faucet_value *v = NULL;
			assert_int_equal(faucet_store_get(t->store, keys.strings[i], &v), 0);
			fprintf(out, "%s=%s\n", keys.strings[i], v ? faucet_value_json(v) : "(none)");
			faucet_value_free(v);
		}
		faucet_strarray_dispose(&keys);
	}
	if (t->dir != NULL) {
		faucet_strarray names = {0};
		DIR *d = opendir(t->dir);
		struct dirent *e;

		if (d != NULL) {
			/* Lock files stay by design (the lock is the OS's, on an
			 * open file); anything else is state. */
			while ((e = readdir(d)) != NULL) {
				size_t n = strlen(e->d_name);
				if (n > 5 && strcmp(e->d_name + n - 5, ".lock") == 0)
					continue;
				assert_int_equal(faucet__strarray_push(&names, e->d_name), 0);
			}
			closedir(d);
		}
		faucet__strarray_sort_unique(&names);
		for (size_t i = 0; i < names.count; i++)
			fprintf(out, "entry %s\n", names.strings[i]);
		faucet_strarray_dispose(&names);
	}
	assert_int_equal(fclose(out), 0);
	return text;
}

/* Run `call` with its n-th allocation failing for n = 1, 2, ... until it
 * succeeds without reaching the failure.  `undo` (may be NULL) puts the
 * store back after that final, successful run. */
static void walk(const char *name, target *t, call_fn call)
{
	size_t points = 0;

	for (long n = 1;; n++) {
		char *before = snapshot(t), *after;
		int rc, hit;

		faucet__alloc_fail_at(n);
		rc = call(t);
		hit = faucet__alloc_failed();
		faucet__alloc_fail_at(0);
		if (!hit) {
			if (rc != 0)
				fail_msg("%s: failed without an allocation failure: %s", name,
					 faucet_error_last()->message);
			free(before);
			break;
		}
		if (rc != FAUCET_ENOMEM)
			fail_msg("%s: allocation %ld failed but the call returned %d (%s)", name, n,
				 rc, rc ? faucet_error_last()->message : "success");
		after = snapshot(t);
		if (strcmp(before, after) != 0)
			fail_msg("%s: allocation %ld failed and the state changed:\n--- before\n%s"
				 "--- after\n%s",
				 name, n, before, after);
		free(before);
		free(after);
		points++;
	}
	printf("  %-34s %3zu allocation failures\n", name, points);
	total_points += points;
}

/* ---- fixtures -------------------------------------------------------------- */

static const char *const seed_keys[] = {"p::a", "p::b/c", "p::row::__status__", "q::x"};
static const char *const seed_values[] = {"{\"cursor\":18446744073709551615,\"ts\":0.1}",
					  "[1,2,{\"n\":null}]", "{\"version\":1,\"runs\":[]}",
					  "\"other\""};

static void seed(faucet_store *s)
{
	for (size_t i = 0; i < FAUCET_ARRAY_LEN(seed_keys); i++)
		tu_put(s, seed_keys[i], seed_values[i]);
}

/* The store kinds every store call is walked on. */
typedef struct {
	const char *kind;
	target t;
	char *tmp;
} fixture;

static void fixture_open(fixture *f, const char *kind)
{
	memset(f, 0, sizeof(*f));
	f->kind = kind;
	if (strcmp(kind, "memory") == 0) {
		assert_int_equal(faucet_store_open_memory(&f->t.store), 0);
	} else if (strcmp(kind, "sqlite") == 0) {
		char *url = NULL;

		/* The database's own files (-wal, -shm) come and go: only the
		 * values are compared. */
		f->tmp = tu_tempdir();
		assert_true(asprintf(&url, "sqlite:%s/state.db", f->tmp) > 0);
		assert_int_equal(faucet_store_open_url(&f->t.store, url), 0);
		free(url);
	} else {
		f->tmp = tu_tempdir();
		f->t.dir = f->tmp;
		assert_int_equal(faucet_store_open_file(&f->t.store, f->tmp, NULL), 0);
	}
	seed(f->t.store);
}

static void fixture_close(fixture *f)
{
	faucet_store_free(f->t.store);
	if (f->tmp != NULL) {
		tu_rmrf(f->tmp);
		free(f->tmp);
	}
}

/* ---- the calls ------------------------------------------------------------- */

/* The calls' inputs, made before any countdown is armed. */
static struct {
	faucet_value *put, *fresh, *expected, *batch[3];
} in;

static int make_inputs(void **state)
{
	(void)state;
	in.put = tu_v("{\"cursor\":42,\"more\":[1,2,3]}");
	in.fresh = tu_v("{\"fresh\":true}");
	in.expected = tu_v("{\"ts\":0.1,\"cursor\":18446744073709551615}");
	in.batch[0] = tu_v("{\"n\":1}");
	in.batch[1] = tu_v("[true,false]");
	in.batch[2] = tu_v("\"text\"");
	return 0;
}

static int free_inputs(void **state)
{
	(void)state;
	faucet_value_free(in.put);
	faucet_value_free(in.fresh);
	faucet_value_free(in.expected);
	for (size_t i = 0; i < 3; i++)
		faucet_value_free(in.batch[i]);
	printf("allocation-failure test: %zu failure points covered\n", total_points);
	return 0;
}

static int call_open_memory(target *t)
{
	faucet_store *s = NULL;
	int rc = faucet_store_open_memory(&s);

	(void)t;
	faucet_store_free(s);
	return rc;
}

static int call_open_file(target *t)
{
	faucet_store *s = NULL;
	int rc = faucet_store_open_file(&s, t->dir, NULL);

	faucet_store_free(s);
	return rc;
}

static int call_open_file_url(target *t)
{
	faucet_store *s = NULL;
	char *url = NULL;
	int rc;

	assert_true(asprintf(&url, "file:%s", t->dir) > 0);
	rc = faucet_store_open_url(&s, url);
	faucet_store_free(s);
	free(url);
	return rc;
}

/* A second handle on the fixture's SQLite database: opening it and its
 * first use (which connects). */
static int call_open_sqlite_first_use(target *t)
{
	faucet_value *v = NULL;
	faucet_store *s = NULL;
	char *url = NULL;
	int rc;

	assert_true(asprintf(&url, "sqlite:%s/state.db", t->dir) > 0);
	rc = faucet_store_open_url(&s, url);
	if (rc == 0)
		rc = faucet_store_get(s, "p::a", &v);
	if (rc == 0 && v == NULL)
		fail_msg("the second handle found nothing");
	faucet_value_free(v);
	faucet_store_free(s);
	free(url);
	return rc;
}

/* The calls that write put the store back after their successful run, so
 * the next walk starts from the seed again. */
static int call_put(target *t)
{
	return faucet_store_put(t->store, "p::a", in.put);
}

static int call_put_new(target *t)
{
	return faucet_store_put(t->store, "p::new/key", in.fresh);
}

static int call_get(target *t)
{
	faucet_value *v = NULL;
	int rc = faucet_store_get(t->store, "p::a", &v);

	if (rc == 0 && v == NULL)
		fail_msg("get found nothing");
	faucet_value_free(v);
	return rc;
}

static int call_delete(target *t)
{
	return faucet_store_delete(t->store, "p::b/c");
}

static int call_compare_and_put(target *t)
{
	int written = 0;
	int rc = faucet_store_compare_and_put(t->store, "p::a", in.expected, in.put, &written);

	if (rc == 0 && !written)
		fail_msg("compare-and-put did not write");
	return rc;
}

static int call_list(target *t)
{
	faucet_strarray keys = {0};
	int rc = faucet_store_list(t->store, "p::", &keys);

	if (rc == 0 && keys.count != 3)
		fail_msg("list found %zu keys", keys.count);
	faucet_strarray_dispose(&keys);
	return rc;
}

static int call_put_batch(target *t)
{
	const faucet_entry e[] = {
		{"p::a", in.batch[0]}, {"p::batch/one", in.batch[1]}, {"p::batch/two", in.batch[2]}};

	return faucet_store_put_batch(t->store, e, FAUCET_ARRAY_LEN(e));
}

static int call_export(target *t)
{
	faucet_export *e = NULL;
	char *json = NULL;
	int rc = faucet_export_namespace(t->store, "p", &e);

	if (rc == 0)
		rc = faucet_export_to_json(e, 1, &json);
	faucet_export_free(e);
	free(json);
	return rc;
}

static const char import_doc[] =
	"{\"version\":1,\"pipeline\":\"p\",\"exported_at\":\"2026-11-30T00:00:00+00:00\","
	"\"entries\":{\"p::a\":{\"cursor\":7},\"p::imported\":[1,2]}}";

/* An import that could not complete says so in its report; for these
 * stores (an all-or-nothing batch) nothing may have landed then. */
static int call_import(target *t)
{
	faucet_export *e = NULL;
	faucet_import_report report = FAUCET_IMPORT_REPORT_INIT;
	int rc;

	report = (faucet_import_report)FAUCET_IMPORT_REPORT_INIT;
	rc = faucet_export_parse(&e, import_doc, sizeof(import_doc) - 1);
	if (rc == 0)
		rc = faucet_import_namespace(t->store, e, 1, &report);
	if (rc == 0 && report.error != NULL) {
		if (strstr(report.error, "out of memory") == NULL)
			fail_msg("import failed: %s", report.error);
		rc = FAUCET_ENOMEM;
	}
	faucet_import_report_dispose(&report);
	faucet_export_free(e);
	return rc;
}

static int call_key_render_parse(target *t)
{
	faucet_key *k = NULL, *parsed = NULL;
	char *rendered = NULL, *again = NULL;
	faucet_strarray legacy = {0};
	int rc;

	(void)t;
	rc = faucet_key_new_invocation(&k, "pipe", "row/7");
	if (rc == 0)
		rc = faucet_key_set_tenant(k, "acme");
	if (rc == 0)
		rc = faucet_key_set_parent_key(k, "a parent key: with spaces, encoded");
	if (rc == 0)
		rc = faucet_key_set_shard(k, "shard-7");
	if (rc == 0)
		rc = faucet_key_set_suffix(k, FAUCET_SUFFIX_ROLLBACK_RUN, "20261130T000000.000Z-abcdef");
	if (rc == 0 && (rendered = faucet_key_render(k)) == NULL)
		rc = faucet_error_last()->code;
	if (rc == 0)
		rc = faucet_key_legacy_renderings(k, &legacy);
	if (rc == 0)
		rc = faucet_validate_key(rendered);
	if (rc == 0)
		rc = faucet_key_parse(&parsed, "acme", "pipe", rendered);
	if (rc == 0 && (again = faucet_key_render(parsed)) == NULL)
		rc = faucet_error_last()->code;
	if (rc == 0 && strcmp(again, rendered) != 0)
		fail_msg("%s re-rendered as %s", rendered, again);
	faucet_strarray_dispose(&legacy);
	faucet_key_free(k);
	faucet_key_free(parsed);
	free(rendered);
	free(again);
	return rc;
}

static int call_value_parse_equal(target *t)
{
	static const char a[] = "{\"b\":[1,2.50,{\"c\":18446744073709551615}],\"a\":-9223372036854775808,"
				"\"s\":\"caf\\u00e9\",\"z\":12.5e2}";
	static const char b[] = "{\"a\":-9223372036854775808,\"z\":1250.0,\"s\":\"café\","
				"\"b\":[1,2.5,{\"c\":18446744073709551615}]}";
	faucet_value *va = NULL, *vb = NULL;
	int rc = faucet_value_parse(&va, a, sizeof(a) - 1);

	(void)t;
	if (rc == 0)
		rc = faucet_value_parse(&vb, b, sizeof(b) - 1);
	/* Documented: values whose trees cannot be built compare unequal (the
	 * answer that never overwrites anything); equality has no error. */
	if (rc == 0 && !faucet_value_equal(va, vb)) {
		if (!faucet__alloc_failed())
			fail_msg("equal values compare unequal");
		rc = FAUCET_ENOMEM;
	}
	faucet_value_free(va);
	faucet_value_free(vb);
	return rc;
}

/* The public readers the command uses: parse naming the input, a member as
 * a value, a lease document. */
static int call_value_member_lease(target *t)
{
	static const char line[] = "{\"type\":\"STATE\",\"value\":{\"c\":18446744073709551615}}";
	static const char lease[] = "{\"holder\":\"h:1:ab\",\"expires_at\":5,\"run\":\"r\"}";
	faucet_value *v = NULL, *m = NULL, *lv = NULL;
	faucet_lease l = {NULL, NULL, 0};
	int rc = faucet_value_parse_at(&v, line, sizeof(line) - 1, "a line");

	(void)t;
	if (rc == 0)
		rc = faucet_value_member(v, "value", &m);
	if (rc == 0 && (m == NULL || strcmp(faucet_value_json(m), "{\"c\":18446744073709551615}")))
		fail_msg("the member was not read back exactly");
	if (rc == 0)
		rc = faucet_value_parse(&lv, lease, sizeof(lease) - 1);
	if (rc == 0)
		rc = faucet_lease_parse(lv, "p::r::__lease__", &l);
	if (rc == 0 && (l.holder == NULL || l.run == NULL || l.expires_at != 5))
		fail_msg("the lease was not read back");
	faucet_lease_dispose(&l);
	faucet_value_free(lv);
	faucet_value_free(m);
	faucet_value_free(v);
	return rc;
}

/* A run's rollback marker read and written back. */
static int call_run_marker(target *t)
{
	static const char doc[] = "{\"version\":1,\"run\":\"20261201T010203.004Z-abcdef\","
				  "\"before\":{\"p::a\":{\"c\":1},\"p::b\":null},"
				  "\"after\":{\"p::a\":{\"c\":2},\"p::b\":[1]}}";
	faucet_value *v = NULL, *back = NULL;
	run_marker m;
	int rc = faucet_value_parse(&v, doc, sizeof(doc) - 1);

	(void)t;
	memset(&m, 0, sizeof(m));
	if (rc == 0)
		rc = faucet_run__marker_parse(v, "p::__rollback__::r", NULL, &m);
	if (rc == 0 && (m.count != 2 || !m.has_after || strcmp(m.run, "20261201T010203.004Z-abcdef")))
		fail_msg("the marker was not read back");
	if (rc == 0)
		rc = faucet_run__marker_value(&m, &back);
	faucet_run__marker_dispose(&m);
	faucet_value_free(back);
	faucet_value_free(v);
	return rc;
}

static int call_backfill_plan(target *t)
{
	faucet_backfill_range range = {.from = "2026-03-01", .to = "2026-03-15", .window = "1d",
				       .timezone = "America/New_York", .row = "r1"};
	faucet_backfill_plan *p = NULL;
	int rc = faucet_backfill_plan_new(&p, &range);

	(void)t;
	if (rc == 0 && faucet_backfill_plan_count(p) != 14)
		fail_msg("plan has %zu units", faucet_backfill_plan_count(p));
	faucet_backfill_plan_free(p);
	return rc;
}

#define MARKER_KEY "p::__backfill__::0123456789abcdef"

static int call_marker_load(target *t)
{
	faucet_backfill_marker *m = NULL;
	int rc = faucet_backfill_marker_load(t->store, MARKER_KEY, &m);

	if (rc == 0 && (m == NULL || faucet_backfill_marker_done_count(m) != 1))
		fail_msg("the marker was not loaded");
	faucet_backfill_marker_free(m);
	return rc;
}

static int call_marker_record(target *t)
{
	faucet_backfill_marker *m = NULL;
	int rc = faucet_backfill_marker_record(t->store, MARKER_KEY, "time|a|b|86400|default",
					       "20260302T000000Z", "exit status 3", &m);

	if (rc == 0 && faucet_backfill_marker_failed_count(m) != 1)
		fail_msg("the failure was not merged");
	faucet_backfill_marker_free(m);
	return rc;
}

/* ---- the tests ------------------------------------------------------------- */

static void pure_calls(void **state)
{
	target none = {NULL, NULL};

	(void)state;
	walk("open memory store", &none, call_open_memory);
	walk("key build/render/parse/validate", &none, call_key_render_parse);
	walk("value parse/equality", &none, call_value_parse_equal);
	walk("value parse_at/member, lease", &none, call_value_member_lease);
	walk("run rollback marker", &none, call_run_marker);
	walk("backfill plan", &none, call_backfill_plan);
}

/* One walk per call on a freshly seeded store, so each call meets the
 * state it expects. */
static void store_calls_on(const char *kind)
{
	static const struct {
		const char *name;
		call_fn fn;
	} calls[] = {
		{"put (replace)", call_put},
		{"put (new key)", call_put_new},
		{"get", call_get},
		{"delete", call_delete},
		{"compare_and_put", call_compare_and_put},
		{"list", call_list},
		{"put_batch", call_put_batch},
		{"export_namespace + export_to_json", call_export},
		{"import_namespace --replace", call_import},
		{"backfill marker record (merge)", call_marker_record},
		{"backfill marker load", call_marker_load},
	};
	fixture f;

	for (size_t i = 0; i < FAUCET_ARRAY_LEN(calls); i++) {
		char name[96];

		fixture_open(&f, kind);
		if (calls[i].fn == call_marker_load || calls[i].fn == call_marker_record)
			tu_put(f.t.store, MARKER_KEY,
			       "{\"descriptor\":\"time|a|b|86400|default\",\"units\":"
			       "{\"20260301T000000Z\":{\"status\":\"done\"}}}");
		(void)snprintf(name, sizeof(name), "%s: %s", kind, calls[i].name);
		walk(name, &f.t, calls[i].fn);
		fixture_close(&f);
	}
	if (strcmp(kind, "sqlite") == 0) {
		fixture_open(&f, kind);
		/* The call needs the directory.  Its entries (the database, -wal,
		 * -shm) stay put while the fixture's handle is open, so the
		 * snapshot may list them too. */
		f.t.dir = f.tmp;
		walk("sqlite: open store + first use", &f.t, call_open_sqlite_first_use);
		fixture_close(&f);
	}
	if (strcmp(kind, "file") == 0) {
		fixture_open(&f, kind);
		walk("file: open store", &f.t, call_open_file);
		walk("file: open store by URL", &f.t, call_open_file_url);
		fixture_close(&f);
	}
}

static void memory_store_calls(void **state)
{
	(void)state;
	store_calls_on("memory");
}

static void file_store_calls(void **state)
{
	(void)state;
	store_calls_on("file");
}

/* SQLite allocates for itself (not covered); the store's own allocations
 * around it are. */
static void sqlite_store_calls(void **state)
{
	(void)state;
	store_calls_on("sqlite");
}

/* A test that failed inside a call left the countdown armed. */
static int disarm(void **state)
{
	(void)state;
	faucet__alloc_fail_at(0);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(pure_calls, disarm),
		cmocka_unit_test_setup(memory_store_calls, disarm),
		cmocka_unit_test_setup(file_store_calls, disarm),
		cmocka_unit_test_setup(sqlite_store_calls, disarm),
	};

	return cmocka_run_group_tests(tests, make_inputs, free_inputs);
}
