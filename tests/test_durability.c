/*
 * test_durability.c - the file store's durability promise, proven by crash
 * images and injected faults rather than by a disk that never fails.
 *
 * Every scenario is one operation (a put, a delete, a batch, ...) on a store
 * prepared beforehand, with the value each key must hold before and after.
 *
 * Power loss (powerloss.h): the operation runs once, recorded; then for the
 * crash point after every system call it made, every post-crash image the
 * simulator can build is reopened as a store and checked:
 *   - before the operation returned, each key holds its old or its new
 *     value - never a torn, empty or unparsable one;
 *   - once it returned, each key holds its new value (an acknowledged write
 *     or delete is never undone);
 *   - list, export and doctor work on the image (doctor may warn about a
 *     crashed writer's temp file, never fail).
 *
 * Faults (faults.h): the operation runs again from the prepared store for
 * every N up to the number of calls it makes, the Nth call failing with EIO,
 * with ENOSPC, and (writes) short.  Then: a failure names the store's path;
 * each key holds its old value (or, on "outcome unknown", old or new); no
 * temp file is left behind; and the same operation run again succeeds.
 *
 * A scenario passes with the real fsyncs in place; remove one (or move the
 * temp file's sync after the rename, or drop the directory sync) and some
 * image loses an acknowledged write or shows a torn value:
 * scripts/mutate.sh checks exactly that.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "powerloss.h"
#include "faults.h"
#include "internal.h"
#include "common/durable.h"
#include "store/open_internal.h"
#include "backfill/backfill_internal.h"
#include <faucet/run.h>

#define MAX_EXPECT 24

/* An expected value not known in advance (it holds a time or a random
 * holder id): taken from the store itself, before the operation for
 * `before`, after it for `after`. */
#define FROM_STORE ((const char *)1)

typedef struct {
	const char *key;
	const char *before; /* JSON, NULL = absent, or FROM_STORE */
	const char *after;
} expect;

typedef struct {
	const char *name;
	const char *seal_key;              /* encryption key of the operation, or NULL */
	const char *previous_key;          /* also accepted on reads, or NULL */
	const char *setup_key;             /* key the setup writes with (NULL: seal_key) */
	int root_exists;                   /* 0: the operation creates the store */
	int prefix_on_failure;             /* a failure may leave a prefix of the keys
					      written (the file store's batch is not
					      atomic); else it leaves every old value */
	void (*setup)(faucet_store *s);    /* before the operation (may be NULL) */
	int (*act)(faucet_store *s);       /* the operation; its return code */
	expect expects[MAX_EXPECT];
	/* More to check on every image (and after every fault) of an
	 * operation made of several writes; may be NULL. */
	void (*image_check)(faucet_store *s, int acknowledged, const char *what);
} scenario;

/* The expectations of one run, with FROM_STORE resolved: owned strings. */
typedef struct {
	const char *key;
	char *before, *after; /* JSON or NULL (absent) */
	int after_known;      /* 0: FROM_STORE not yet read (a faulted run) */
} run_expect;

typedef struct {
	run_expect items[MAX_EXPECT];
	size_t count;
} run_expects;

static int same_value(const faucet_value *got, const char *want);

/* Totals printed at the end: what the proof covered. */
static size_t total_images, total_crash_points, total_faults;

/* The store root of the scenario being prepared (for setups that plant
 * files by hand). */
static const char *current_root;

/* ---- scenarios -------------------------------------------------------- */

#define LONG_KEY                                                                        \
	"p::long_row_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" \
	"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" \
	"aaaaaaaaaaaaaaaaaaaaaaaaaa"
#define MARKER_KEY "p::__backfill__::0123456789abcdef"
#define UNIT_KEY "p::backfill::0123456789abcdef::20260101T000000Z"
#define LEASE_KEY UNIT_KEY "::__lease__"

static void setup_two(faucet_store *s)
{
	tu_put(s, "p::a", "{\"cursor\":1}");
	tu_put(s, "p::keep", "[1,2,3]");
}

static void setup_long(faucet_store *s)
{
	setup_two(s);
	tu_put(s, LONG_KEY, "{\"old\":true}");
}

/* A value under its legacy (unescaped) file name, as an old faucet left it. */
static void setup_legacy(faucet_store *s)
{
	char *path = tu_join(current_root, "Users%3Ax.json");

	setup_two(s);
	tu_write_file(path, "{\"c\":7}", 7);
	free(path);
}

/* The lease the release scenario gives up, claimed by its setup. */
static faucet_bf_lease held_lease;
static char *lease_holder;

static int claim_lease(faucet_store *s, faucet_bf_lease *out)
{
	int claimed = 0, rc;

	if (lease_holder == NULL)
		lease_holder = faucet_bf__lease_holder();
	rc = faucet_bf__lease_claim(s, UNIT_KEY, lease_holder, 1700000000, 60, out, &claimed, NULL);
	return rc == 0 && !claimed ? -100 : rc;
}

static void setup_lease(faucet_store *s)
{
	setup_two(s);
	faucet_bf__lease_dispose(&held_lease);
	memset(&held_lease, 0, sizeof(held_lease));
	assert_int_equal(claim_lease(s, &held_lease), 0);
}

static int put_json(faucet_store *s, const char *key, const char *json)
{
	faucet_value *v = tu_v(json);
	int rc = faucet_store_put(s, key, v);

	faucet_value_free(v);
	return rc;
}

static int act_first_put(faucet_store *s)
{
	return put_json(s, "p::a", "{\"cursor\":1}");
}

static int act_put_new(faucet_store *s)
{
	return put_json(s, "p::b", "{\"cursor\":\"2026-01-01\"}");
}

static int act_overwrite(faucet_store *s)
{
	return put_json(s, "p::a", "{\"cursor\":2,\"note\":\"the new value is longer\"}");
}

static int act_long(faucet_store *s)
{
	return put_json(s, LONG_KEY, "{\"old\":false,\"n\":12345678901234567890}");
}

static int act_legacy(faucet_store *s)
{
	return put_json(s, "Users:x", "{\"c\":8}");
}

static int act_cas(faucet_store *s)
{
	faucet_value *exp = tu_v("{\"cursor\":1}"), *v = tu_v("{\"cursor\":3}");
	int written = 0, rc = faucet_store_compare_and_put(s, "p::a", exp, v, &written);

	faucet_value_free(exp);
	faucet_value_free(v);
	return rc == 0 && !written ? -100 : rc;
}

/* A compare-and-put batch as a run writes a chunk: the part first (absent
 * before), then the keys - one deleted, one replaced, one new - each
 * expected to hold what it holds now (read first, as a run reads before
 * it writes; so the retry after a failure that left some in place is a
 * batch of its own that holds). */
static int act_cas_batch(faucet_store *s)
{
	static const char *const keys[4] = {"p::__part", "p::keep", "p::a", "p::b"};
	faucet_value *now[4] = {NULL, NULL, NULL, NULL}, *part = tu_v("{\"part\":1}"),
		     *ten = tu_v("{\"cursor\":10}"), *twenty = tu_v("{\"cursor\":20}");
	faucet_store_guard g[4];
	int written = 0, rc = faucet_store_get_many(s, keys, 4, now);

	g[0] = (faucet_store_guard){keys[0], now[0], part};
	g[1] = (faucet_store_guard){keys[1], now[1], NULL};
	g[2] = (faucet_store_guard){keys[2], now[2], ten};
	g[3] = (faucet_store_guard){keys[3], now[3], twenty};
	if (rc == 0)
		rc = faucet__store_compare_and_put_batch(s, g, 4, &written);
	for (int i = 0; i < 4; i++)
		faucet_value_free(now[i]);
	faucet_value_free(part);
	faucet_value_free(ten);
	faucet_value_free(twenty);
	return rc == 0 && !written ? -100 : rc;
}

/* The same with deletes only after the part (an undo restoring keys that
 * were absent): their unlinks need a directory sync of their own. */
static int act_cas_batch_deletes(faucet_store *s)
{
	static const char *const keys[3] = {"p::__part", "p::keep", "p::a"};
	faucet_value *now[3] = {NULL, NULL, NULL}, *part = tu_v("{\"part\":1}");
	faucet_store_guard g[3];
	int written = 0, rc = faucet_store_get_many(s, keys, 3, now);

	g[0] = (faucet_store_guard){keys[0], now[0], part};
	g[1] = (faucet_store_guard){keys[1], now[1], NULL};
	g[2] = (faucet_store_guard){keys[2], now[2], NULL};
	if (rc == 0)
		rc = faucet__store_compare_and_put_batch(s, g, 3, &written);
	for (int i = 0; i < 3; i++)
		faucet_value_free(now[i]);
	faucet_value_free(part);
	return rc == 0 && !written ? -100 : rc;
}

/* No key of the batch is changed in an image without its first entry (a
 * run's marker part) in place: the part is never behind its keys. */
static void cas_batch_image_check(faucet_store *s, int acknowledged, const char *what)
{
	faucet_value *part = NULL, *a = NULL, *b = NULL, *keep = NULL;

	(void)acknowledged;
	if (faucet_store_get(s, "p::__part", &part) != 0 || faucet_store_get(s, "p::a", &a) != 0 ||
	    faucet_store_get(s, "p::b", &b) != 0 || faucet_store_get(s, "p::keep", &keep) != 0)
		fail_msg("batch, %s: get: %s", what, faucet_error_last()->message);
	if (part == NULL && (!same_value(a, "{\"cursor\":1}") || b != NULL || keep == NULL))
		fail_msg("batch, %s: a key changed before the batch's first entry was in place",
			 what);
	faucet_value_free(part);
	faucet_value_free(a);
	faucet_value_free(b);
	faucet_value_free(keep);
}

static int act_delete(faucet_store *s)
{
	return faucet_store_delete(s, "p::a");
}

static int act_cad(faucet_store *s)
{
	faucet_value *exp = tu_v("{\"cursor\":1}");
	int deleted = 0, rc = faucet_store_compare_and_delete(s, "p::a", exp, &deleted);

	faucet_value_free(exp);
	return rc == 0 && !deleted ? -100 : rc;
}

static int act_batch(faucet_store *s)
{
	const char *keys[] = {"p::a", "p::b", "p::c", "p::d"};
	const char *vals[] = {"{\"cursor\":10}", "{\"cursor\":20}", "\"thirty\"", "40"};
	faucet_entry e[4];
	faucet_value *v[4];
	int rc;

	for (size_t i = 0; i < 4; i++) {
		v[i] = tu_v(vals[i]);
		e[i].key = keys[i];
		e[i].value = v[i];
	}
	rc = faucet_store_put_batch(s, e, 4);
	for (size_t i = 0; i < 4; i++)
		faucet_value_free(v[i]);
	return rc;
}

/* act on a filesystem without unnamed files: named temp files. */
static int without_tmpfile(faucet_store *s, int (*act)(faucet_store *s))
{
	int rc;

	pl_refuse_tmpfile(1);
	fault_refuse_tmpfile(1);
	rc = act(s);
	pl_refuse_tmpfile(0);
	fault_refuse_tmpfile(0);
	return rc;
}

static int act_batch_named(faucet_store *s)
{
	return without_tmpfile(s, act_batch);
}

/* A batch of several groups, written as a stream (each group written while
 * the one before it commits on another thread): groups of 3 make these 8
 * keys three groups. */
#define STREAMED_KEYS 8
static int act_batch_streamed(faucet_store *s)
{
	faucet_entry e[STREAMED_KEYS];
	faucet_value *v[STREAMED_KEYS];
	char keys[STREAMED_KEYS][16], json[32];
	int rc;

	for (int i = 0; i < STREAMED_KEYS; i++) {
		(void)snprintf(keys[i], sizeof(keys[i]), "p::s%d", i);
		(void)snprintf(json, sizeof(json), "{\"n\":%d}", i);
		v[i] = tu_v(json);
		e[i].key = keys[i];
		e[i].value = v[i];
	}
	faucet__durable_test_batch_size(3);
	assert_int_equal(faucet__durable_batch_size(), 3);
	rc = faucet_store_put_batch(s, e, STREAMED_KEYS);
	faucet__durable_test_batch_size(0);
	for (int i = 0; i < STREAMED_KEYS; i++)
		faucet_value_free(v[i]);
	return rc;
}

static int act_batch_streamed_named(faucet_store *s)
{
	return without_tmpfile(s, act_batch_streamed);
}

static int act_import(faucet_store *s)
{
	static const char doc[] =
		"{\"version\":1,\"pipeline\":\"p\",\"keys\":{\"p::a\":{\"cursor\":5},"
		"\"p::e\":[\"new\"],\"p::f\":{\"deep\":{\"er\":1}}}}";
	faucet_import_report report = FAUCET_IMPORT_REPORT_INIT;
	faucet_export *e = NULL;
	int rc;

	report = (faucet_import_report)FAUCET_IMPORT_REPORT_INIT;
	assert_int_equal(faucet_export_parse(&e, doc, strlen(doc)), 0);
	rc = faucet_import_namespace(s, e, 0, &report);
	if (rc == 0 && report.error != NULL)
		rc = report.error_code != 0 ? report.error_code : FAUCET_ERROR;
	if (rc != 0 && report.error != NULL)
		(void)faucet_error_set(rc, "%s", report.error);
	faucet_import_report_dispose(&report);
	faucet_export_free(e);
	return rc;
}

static int act_rekey(faucet_store *s)
{
	return faucet_store_rewrite_all(s, "", NULL, NULL);
}

static int act_marker(faucet_store *s)
{
	return faucet_backfill_marker_record(
		s, MARKER_KEY, "time|2026-01-01T00:00:00+00:00|2026-01-03T00:00:00+00:00|86400|default",
		"20260101T000000Z", NULL, NULL);
}

static int act_lease_claim(faucet_store *s)
{
	faucet_bf_lease l;
	int rc;

	memset(&l, 0, sizeof(l));
	rc = claim_lease(s, &l);
	if (rc == 0)
		faucet_bf__lease_dispose(&l);
	return rc;
}

static int act_lease_release(faucet_store *s)
{
	return faucet_bf__lease_release(s, &held_lease);
}

/* Whether the last run_put_end ended with a warning (a pushed-out marker
 * it could not delete: cleanup, left for doctor to report). */
static int cli_run_warned;

/* A run of p::r that puts p::r = {"cursor":9} and ends, as a caller does
 * (with put_end, in one call: faucet_run_put_end): a failed write ends the
 * run as failed (recorded, lease released), keeping the write's error. */
static int run_put_end(faucet_store *s, int no_lease, int put_end)
{
	faucet_run_options o = FAUCET_RUN_OPTIONS_INIT;
	faucet_run *r = NULL;
	faucet_value *v = tu_v("{\"cursor\":9}");
	int rc, put_done = 0;

	o.row = "r";
	o.no_lease = no_lease;
	faucet_warning_clear();
	cli_run_warned = 0;
	rc = faucet_run_begin(&r, s, "p", &o);
	if (rc == 0) {
		rc = put_end ? faucet_run_put_end(r, "p::r", v, &put_done)
			     : faucet_run_put(r, "p::r", v);
		put_done = put_end ? put_done : rc == 0;
		cli_run_warned = faucet_warning_last() != NULL;
		if (rc == 0 && !put_end) {
			rc = faucet_run_end(r, FAUCET_RUN_OK, 0, NULL);
		} else if (rc != 0 && !put_done) {
			char *msg = strdup(faucet_error_last()->message);

			(void)faucet_run_end(r, FAUCET_RUN_FAILED, 1, msg);
			(void)faucet_error_set(rc, "%s", msg ? msg : "");
			free(msg);
		}
	}
	faucet_run_free(r);
	faucet_value_free(v);
	return rc;
}

/* One invocation run: begin (lease, status), a put recorded with its
 * before-image, end (after-image, status, rollback index, lease release). */
static int act_run(faucet_store *s)
{
	return run_put_end(s, 0, 0);
}

/* A run without a lease (recorded with its first change) ended apart
 * from its put, as an embedder may: the status entry, the index and the
 * marker go with the key's put in one guarded write, the end after it. */
static int act_cli_run(faucet_store *s)
{
	return run_put_end(s, 1, 0);
}

/* A CLI put's run (faucet_run_put_end, as `faucet state put` does): the
 * end's "ok" follows the key's put in the same commit. */
static int act_cli_put_end(faucet_store *s)
{
	return run_put_end(s, 1, 1);
}

static void setup_run(faucet_store *s)
{
	setup_two(s);
	tu_put(s, "p::r", "{\"cursor\":1}");
}

typedef struct {
	faucet_store *s;
	int found;
} marker_search;

/* The store the recorded import's hook begins its run in. */
static faucet_store *durability_store;

static int marker_holds_before_image(const char *key, void *ctx)
{
	marker_search *m = ctx;
	faucet_value *v = NULL;

	if (faucet_store_get(m->s, key, &v) != 0)
		fail_msg("run marker %s cannot be read: %s", key, faucet_error_last()->message);
	if (v != NULL && strstr(faucet_value_json(v), "\"before\":{\"p::r\":{\"cursor\":1}}"))
		m->found = 1;
	faucet_value_free(v);
	return 0;
}

/* A run's promise on every image: the bookmark never holds its new value
 * without a rollback marker that can undo it (the before-image is durable
 * before the change); once the run returned, it is recorded as ok and its
 * lease is gone. */
static void run_image_check(faucet_store *s, int acknowledged, const char *what)
{
	faucet_value *v = NULL, *st = NULL, *lease = NULL;
	marker_search m = {s, 0};

	if (faucet_store_get(s, "p::r", &v) != 0)
		fail_msg("run, %s: get p::r: %s", what, faucet_error_last()->message);
	if (v != NULL && same_value(v, "{\"cursor\":9}")) {
		if (faucet_store_scan(s, "p::r::__rollback__::", marker_holds_before_image, &m) != 0)
			fail_msg("run, %s: scan: %s", what, faucet_error_last()->message);
		if (!m.found)
			fail_msg("run, %s: p::r holds the run's value but no marker can undo it", what);
	}
	if (acknowledged) {
		if (faucet_store_get(s, "p::r::__status__", &st) != 0 || st == NULL ||
		    strstr(faucet_value_json(st), "\"outcome\":\"ok\"") == NULL)
			fail_msg("run, %s: the ended run is not recorded as ok", what);
		if (faucet_store_get(s, "p::r::__lease__", &lease) != 0 || lease != NULL)
			fail_msg("run, %s: the ended run's lease is still there", what);
	}
	faucet_value_free(v);
	faucet_value_free(st);
	faucet_value_free(lease);
}

/* setup_run, then a full rollback index of p::r: the CLI put's run then
 * also retires the oldest run's marker. */
static void setup_full_index(faucet_store *s)
{
	setup_run(s);
	for (int i = 0; i < FAUCET_RUN_ROLLBACK_MAX; i++) {
		faucet_run_options o = FAUCET_RUN_OPTIONS_INIT;
		faucet_run *r = NULL;
		char json[32];
		faucet_value *v;

		(void)snprintf(json, sizeof(json), "{\"n\":%d}", i);
		v = tu_v(json);
		o.row = "r";
		o.no_lease = 1;
		if (faucet_run_begin(&r, s, "p", &o) != 0 || faucet_run_put(r, "p::r::x", v) != 0 ||
		    faucet_run_end(r, FAUCET_RUN_OK, 0, NULL) != 0)
			fail_msg("setup run %d: %s", i, faucet_error_last()->message);
		faucet_run_free(r);
		faucet_value_free(v);
	}
}

/* Whether the newest run of the status document `st` ended ok having
 * changed p::r (the setup's runs changed p::r::x only). */
static int newest_run_ok(const faucet_value *st)
{
	const char *json = faucet_value_json(st), *first = strstr(json, "{\"run\":");
	const char *second = first ? strstr(first + 1, "{\"run\":") : NULL;
	const char *ok = first ? strstr(first, "\"outcome\":\"ok\"") : NULL;
	const char *keys = first ? strstr(first, "\"keys\":[\"p::r\"]") : NULL;

	return ok != NULL && keys != NULL && (second == NULL || (ok < second && keys < second));
}

/* run_image_check, and: the bookmark never holds the run's value without
 * the run in the status document and in the rollback index (a CLI run
 * records itself with its first change, not at its begin). */
static void cli_run_image_check(faucet_store *s, int acknowledged, const char *what)
{
	faucet_value *v = NULL, *st = NULL, *idx = NULL;

	run_image_check(s, acknowledged, what);
	if (faucet_store_get(s, "p::r", &v) != 0 || faucet_store_get(s, "p::r::__status__", &st) != 0 ||
	    faucet_store_get(s, "p::r::__rollback__", &idx) != 0)
		fail_msg("cli run, %s: %s", what, faucet_error_last()->message);
	if (v != NULL && same_value(v, "{\"cursor\":9}")) {
		if (st == NULL || strstr(faucet_value_json(st), "\"run\":") == NULL)
			fail_msg("cli run, %s: p::r holds the run's value but no status records "
				 "the run", what);
		if (idx == NULL || strstr(faucet_value_json(idx), "\"runs\":[\"") == NULL)
			fail_msg("cli run, %s: p::r holds the run's value but the index names no "
				 "run", what);
	}
	/* The newest run "ok" means its put landed: an end written with the
	 * put is never in place without it. */
	if (st != NULL && newest_run_ok(st) && (v == NULL || !same_value(v, "{\"cursor\":9}")))
		fail_msg("cli run, %s: the run is recorded as ok but p::r does not hold its value",
			 what);
	if (acknowledged && !cli_run_warned) {
		faucet_strarray markers = {0};

		if (faucet_store_list(s, "p::r::__rollback__::", &markers) != 0)
			fail_msg("cli run, %s: list: %s", what, faucet_error_last()->message);
		if (markers.count > FAUCET_RUN_ROLLBACK_MAX)
			fail_msg("cli run, %s: %zu markers after the run: the one the index pushed "
				 "out is still there", what, markers.count);
		faucet_strarray_dispose(&markers);
	}
	faucet_value_free(v);
	faucet_value_free(st);
	faucet_value_free(idx);
}

/* An import recorded as a run of p::r (faucet_import_file_recorded, as
 * `faucet state import` does): the before-images are recorded ahead of
 * the writes, the writes go in one batch, the end fills the after-images
 * from what the run wrote. */
static int begin_import_run(void *ctx, const char *pipeline, const char *row, faucet_run **run)
{
	faucet_run_options o = FAUCET_RUN_OPTIONS_INIT;

	o.no_lease = 1;
	o.row = row;
	o.pipeline_level = row == NULL;
	*(faucet_run **)ctx = NULL;
	if (faucet_run_begin(run, durability_store, pipeline, &o) != 0)
		return faucet_error_last()->code;
	*(faucet_run **)ctx = *run;
	return 0;
}

static int act_recorded_import(faucet_store *s)
{
	static const char doc[] = "{\"version\":1,\"pipeline\":\"p\",\"keys\":"
				  "{\"p::r\":{\"cursor\":9},\"p::r::x\":[1]}}";
	faucet_import_run_hook hook = FAUCET_IMPORT_RUN_HOOK_INIT;
	faucet_import_report report = FAUCET_IMPORT_REPORT_INIT;
	faucet_run *r = NULL;
	FILE *f = tmpfile();
	int rc;

	assert_non_null(f);
	assert_true(fputs(doc, f) >= 0);
	rewind(f);
	durability_store = s;
	hook.begin_run = begin_import_run;
	hook.ctx = &r;
	report = (faucet_import_report)FAUCET_IMPORT_REPORT_INIT;
	rc = faucet_import_file_recorded(s, f, NULL, &hook, &report);
	if (rc == 0 && report.error != NULL)
		rc = report.error_code != 0 ? report.error_code : FAUCET_ERROR;
	if (rc != 0 && report.error != NULL)
		(void)faucet_error_set(rc, "%s", report.error);
	if (r != NULL) {
		char *msg = strdup(faucet_error_last()->message);
		int end_rc = faucet_run_end(r, rc == 0 ? FAUCET_RUN_OK : FAUCET_RUN_FAILED,
					    rc == 0 ? 0 : 1, rc == 0 ? NULL : msg);

		if (rc == 0)
			rc = end_rc;
		else
			(void)faucet_error_set(rc, "%s", msg ? msg : "");
		free(msg);
		faucet_run_free(r);
	}
	faucet_import_report_dispose(&report);
	fclose(f);
	return rc;
}

static int marker_holds_import_images(const char *key, void *ctx)
{
	marker_search *m = ctx;
	faucet_value *v = NULL;

	if (faucet_store_get(m->s, key, &v) != 0)
		fail_msg("run marker %s cannot be read: %s", key, faucet_error_last()->message);
	if (v != NULL &&
	    strstr(faucet_value_json(v), "\"before\":{\"p::r\":{\"cursor\":1},\"p::r::x\":null}"))
		m->found = 1;
	faucet_value_free(v);
	return 0;
}

/* Neither imported key ever holds its new value without a marker that
 * can undo both; once acknowledged, the run is recorded as ok. */
static void import_run_image_check(faucet_store *s, int acknowledged, const char *what)
{
	faucet_value *v = NULL, *x = NULL, *st = NULL;
	marker_search m = {s, 0};

	if (faucet_store_get(s, "p::r", &v) != 0 || faucet_store_get(s, "p::r::x", &x) != 0)
		fail_msg("recorded import, %s: get: %s", what, faucet_error_last()->message);
	if ((v != NULL && same_value(v, "{\"cursor\":9}")) || x != NULL) {
		if (faucet_store_scan(s, "p::r::__rollback__::", marker_holds_import_images, &m) != 0)
			fail_msg("recorded import, %s: scan: %s", what, faucet_error_last()->message);
		if (!m.found)
			fail_msg("recorded import, %s: a key holds the import's value but no marker "
				 "can undo it", what);
	}
	if (acknowledged && (faucet_store_get(s, "p::r::__status__", &st) != 0 || st == NULL ||
			     strstr(faucet_value_json(st), "\"outcome\":\"ok\"") == NULL))
		fail_msg("recorded import, %s: the ended run is not recorded as ok", what);
	faucet_value_free(v);
	faucet_value_free(x);
	faucet_value_free(st);
}

#define SEAL "durability-test-key"


/* What act_batch leaves: an overwrite, three new keys, one untouched. */
#define BATCH_EXPECTED                                                                   \
	{{"p::a", "{\"cursor\":1}", "{\"cursor\":10}"},                                     \
	 {"p::b", NULL, "{\"cursor\":20}"},                                                   \
	 {"p::c", NULL, "\"thirty\""},                                                        \
	 {"p::d", NULL, "40"},                                                                \
	 {"p::keep", "[1,2,3]", "[1,2,3]"}}

/* What act_batch_streamed leaves: 8 new keys in batch order (a failure
 * may leave only a prefix of them), one untouched. */
#define S(i) {"p::s" #i, NULL, "{\"n\":" #i "}"}
#define STREAMED_EXPECTED \
	{S(0), S(1), S(2), S(3), S(4), S(5), S(6), S(7), {"p::keep", "[1,2,3]", "[1,2,3]"}}

static const scenario scenarios[] = {
	{"store creation + first put", NULL, NULL, NULL, 0, 0, NULL, act_first_put,
	 {{"p::a", NULL, "{\"cursor\":1}"}},
	 NULL},
	{"first sealed put (marker)", SEAL, NULL, NULL, 0, 0, NULL, act_first_put,
	 {{"p::a", NULL, "{\"cursor\":1}"}},
	 NULL},
	{"put of a new key", NULL, NULL, NULL, 1, 0, setup_two, act_put_new,
	 {{"p::a", "{\"cursor\":1}", "{\"cursor\":1}"},
	  {"p::keep", "[1,2,3]", "[1,2,3]"},
	  {"p::b", NULL, "{\"cursor\":\"2026-01-01\"}"}},
	 NULL},
	{"overwrite", NULL, NULL, NULL, 1, 0, setup_two, act_overwrite,
	 {{"p::a", "{\"cursor\":1}", "{\"cursor\":2,\"note\":\"the new value is longer\"}"},
	  {"p::keep", "[1,2,3]", "[1,2,3]"}},
	 NULL},
	{"new long key + sidecar", NULL, NULL, NULL, 1, 0, setup_two, act_long,
	 {{LONG_KEY, NULL, "{\"old\":false,\"n\":12345678901234567890}"},
	  {"p::a", "{\"cursor\":1}", "{\"cursor\":1}"}},
	 NULL},
	{"long key overwrite", NULL, NULL, NULL, 1, 0, setup_long, act_long,
	 {{LONG_KEY, "{\"old\":true}", "{\"old\":false,\"n\":12345678901234567890}"},
	  {"p::a", "{\"cursor\":1}", "{\"cursor\":1}"}},
	 NULL},
	{"sealed put of a new key", SEAL, NULL, NULL, 1, 0, setup_two, act_put_new,
	 {{"p::a", "{\"cursor\":1}", "{\"cursor\":1}"},
	  {"p::b", NULL, "{\"cursor\":\"2026-01-01\"}"}},
	 NULL},
	{"sealed overwrite", SEAL, NULL, NULL, 1, 0, setup_two, act_overwrite,
	 {{"p::a", "{\"cursor\":1}", "{\"cursor\":2,\"note\":\"the new value is longer\"}"}},
	 NULL},
	{"compare-and-put", NULL, NULL, NULL, 1, 0, setup_two, act_cas,
	 {{"p::a", "{\"cursor\":1}", "{\"cursor\":3}"}, {"p::keep", "[1,2,3]", "[1,2,3]"}},
	 NULL},
	{"compare-and-put batch (part first)", NULL, NULL, NULL, 1, 1, setup_two, act_cas_batch,
	 {{"p::__part", NULL, "{\"part\":1}"},
	  {"p::keep", "[1,2,3]", NULL},
	  {"p::a", "{\"cursor\":1}", "{\"cursor\":10}"},
	  {"p::b", NULL, "{\"cursor\":20}"}},
	 cas_batch_image_check},
	{"compare-and-put batch of deletes (part first)", NULL, NULL, NULL, 1, 1, setup_two,
	 act_cas_batch_deletes,
	 {{"p::__part", NULL, "{\"part\":1}"},
	  {"p::keep", "[1,2,3]", NULL},
	  {"p::a", "{\"cursor\":1}", NULL}},
	 NULL},
	{"delete", NULL, NULL, NULL, 1, 0, setup_two, act_delete,
	 {{"p::a", "{\"cursor\":1}", NULL}, {"p::keep", "[1,2,3]", "[1,2,3]"}},
	 NULL},
	{"compare-and-delete", NULL, NULL, NULL, 1, 0, setup_two, act_cad,
	 {{"p::a", "{\"cursor\":1}", NULL}, {"p::keep", "[1,2,3]", "[1,2,3]"}},
	 NULL},
	{"put_batch", NULL, NULL, NULL, 1, 1, setup_two, act_batch,
	 BATCH_EXPECTED,
	 NULL},
	{"put_batch, named temp files", NULL, NULL, NULL, 1, 1, setup_two, act_batch_named,
	 BATCH_EXPECTED,
	 NULL},
	{"put_batch of three groups, streamed", NULL, NULL, NULL, 1, 1, setup_two,
	 act_batch_streamed, STREAMED_EXPECTED, NULL},
	{"put_batch of three groups, streamed, named temp files", NULL, NULL, NULL, 1, 1,
	 setup_two, act_batch_streamed_named, STREAMED_EXPECTED, NULL},
	{"import", NULL, NULL, NULL, 1, 1, setup_two, act_import,
	 {{"p::a", "{\"cursor\":1}", "{\"cursor\":5}"},
	  {"p::e", NULL, "[\"new\"]"},
	  {"p::f", NULL, "{\"deep\":{\"er\":1}}"},
	  {"p::keep", "[1,2,3]", "[1,2,3]"}},
	 NULL},
	{"legacy-name migration", NULL, NULL, NULL, 1, 0, setup_legacy, act_legacy,
	 {{"Users:x", "{\"c\":7}", "{\"c\":8}"}, {"p::a", "{\"cursor\":1}", "{\"cursor\":1}"}},
	 NULL},
	{"rekey", "new-durability-key", "old-durability-key", "old-durability-key", 1, 1, setup_two,
	 act_rekey,
	 {{"p::a", "{\"cursor\":1}", "{\"cursor\":1}"}, {"p::keep", "[1,2,3]", "[1,2,3]"}},
	 NULL},
	{"backfill marker record", NULL, NULL, NULL, 1, 0, setup_two, act_marker,
	 {{MARKER_KEY, NULL, FROM_STORE}, {"p::a", "{\"cursor\":1}", "{\"cursor\":1}"}},
	 NULL},
	{"lease claim", NULL, NULL, NULL, 1, 0, setup_two, act_lease_claim,
	 {{LEASE_KEY, NULL, FROM_STORE}, {"p::a", "{\"cursor\":1}", "{\"cursor\":1}"}},
	 NULL},
	{"lease release", NULL, NULL, NULL, 1, 0, setup_lease, act_lease_release,
	 {{LEASE_KEY, FROM_STORE, NULL}, {"p::a", "{\"cursor\":1}", "{\"cursor\":1}"}},
	 NULL},
	{"invocation run", NULL, NULL, NULL, 1, 1, setup_run, act_run,
	 {{"p::r", "{\"cursor\":1}", "{\"cursor\":9}"}, {"p::a", "{\"cursor\":1}", "{\"cursor\":1}"}},
	 run_image_check},
	{"run without a lease, ended apart", NULL, NULL, NULL, 1, 1, setup_run, act_cli_run,
	 {{"p::r", "{\"cursor\":1}", "{\"cursor\":9}"}, {"p::a", "{\"cursor\":1}", "{\"cursor\":1}"}},
	 cli_run_image_check},
	{"CLI put, full rollback index", NULL, NULL, NULL, 1, 1, setup_full_index, act_cli_run,
	 {{"p::r", "{\"cursor\":1}", "{\"cursor\":9}"}, {"p::r::x", "{\"n\":19}", "{\"n\":19}"}},
	 cli_run_image_check},
	{"CLI put ended with its put", NULL, NULL, NULL, 1, 1, setup_run, act_cli_put_end,
	 {{"p::r", "{\"cursor\":1}", "{\"cursor\":9}"}, {"p::a", "{\"cursor\":1}", "{\"cursor\":1}"}},
	 cli_run_image_check},
	{"CLI put ended with its put, full rollback index", NULL, NULL, NULL, 1, 1,
	 setup_full_index, act_cli_put_end,
	 {{"p::r", "{\"cursor\":1}", "{\"cursor\":9}"}, {"p::r::x", "{\"n\":19}", "{\"n\":19}"}},
	 cli_run_image_check},
	{"recorded import (a run of p::r)", NULL, NULL, NULL, 1, 1, setup_run, act_recorded_import,
	 {{"p::r", "{\"cursor\":1}", "{\"cursor\":9}"},
	  {"p::r::x", NULL, "[1]"},
	  {"p::a", "{\"cursor\":1}", "{\"cursor\":1}"}},
	 import_run_image_check},
};

/* ---- helpers ---------------------------------------------------------- */

static faucet_store *open_store_with(const char *root, const char *key, const char *previous)
{
	const char *prev[1] = {previous};
	faucet_encryption_options enc = {key, previous ? prev : NULL, previous ? 1 : 0};
	faucet_file_options opts;
	faucet_store *s = NULL;

	memset(&opts, 0, sizeof(opts));
	opts.version = FAUCET_FILE_OPTIONS_VERSION;
	opts.encryption = key ? &enc : NULL;
	if (faucet_store_open_file(&s, root, &opts) != 0)
		fail_msg("open %s: %s", root, faucet_error_last()->message);
	return s;
}

static faucet_store *open_store(const scenario *sc, const char *root)
{
	return open_store_with(root, sc->seal_key, sc->previous_key);
}

/* The JSON under key (NULL = absent), owned; fails the test on an error. */
static char *read_json(faucet_store *s, const char *key, const char *context)
{
	faucet_value *v = NULL;
	char *json;

	if (faucet_store_get(s, key, &v) != 0)
		fail_msg("%s: get %s: %s", context, key, faucet_error_last()->message);
	json = v ? strdup(faucet_value_json(v)) : NULL;
	faucet_value_free(v);
	return json;
}

/* The run's expectations; FROM_STORE befores are read from `s` now. */
static void expects_begin(const scenario *sc, faucet_store *s, run_expects *rx)
{
	memset(rx, 0, sizeof(*rx));
	while (rx->count < MAX_EXPECT && sc->expects[rx->count].key != NULL) {
		const expect *e = &sc->expects[rx->count];
		run_expect *r = &rx->items[rx->count++];

		r->key = e->key;
		r->before = e->before == FROM_STORE ? read_json(s, e->key, sc->name)
			    : e->before ? strdup(e->before) : NULL;
		r->after_known = e->after != FROM_STORE;
		r->after = e->after != FROM_STORE && e->after ? strdup(e->after) : NULL;
	}
}

/* FROM_STORE afters are read from `s` after the operation. */
static void expects_end(const scenario *sc, faucet_store *s, run_expects *rx)
{
	for (size_t i = 0; i < rx->count; i++) {
		if (!rx->items[i].after_known) {
			rx->items[i].after = read_json(s, rx->items[i].key, sc->name);
			rx->items[i].after_known = 1;
		}
	}
}

static void expects_dispose(run_expects *rx)
{
	for (size_t i = 0; i < rx->count; i++) {
		free(rx->items[i].before);
		free(rx->items[i].after);
	}
	rx->count = 0;
}

/* Whether `got` (NULL = absent) is the JSON `want` (NULL = absent). */
static int same_value(const faucet_value *got, const char *want)
{
	faucet_value *w;
	int eq;

	if (got == NULL || want == NULL)
		return got == NULL && want == NULL;
	w = tu_v(want);
	eq = faucet_value_equal(got, w);
	faucet_value_free(w);
	return eq;
}

/* A fresh sandbox holding the prepared store at {sandbox}/store, and the
 * run's expectations read from it. */
static char *prepare(const scenario *sc, char **root_out, run_expects *rx)
{
	char *sandbox = tu_tempdir(), *root = tu_join(sandbox, "store");
	faucet_store *s;

	current_root = root;
	if (sc->root_exists) {
		s = open_store_with(root, sc->setup_key ? sc->setup_key : sc->seal_key, NULL);
		if (sc->setup)
			sc->setup(s);
		else
			tu_put(s, "p::setup", "0");
		faucet_store_free(s);
	}
	if (sc->root_exists) {
		s = open_store(sc, root);
		expects_begin(sc, s, rx);
		faucet_store_free(s);
	} else {
		expects_begin(sc, NULL, rx);
	}
	*root_out = root;
	return sandbox;
}

static int count_temp_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name);

		if (len > 4 && strcmp(e->d_name + len - 4, ".tmp") == 0)
			n++;
	}
	closedir(d);
	return n;
}

/* ---- power loss ------------------------------------------------------- */

/* Check one image: the values allowed at this crash point, and that list,
 * export and doctor work.  Fails the test naming the image. */
static void check_image(const scenario *sc, const run_expects *rx, const char *root,
			int acknowledged, const char *what)
{
	faucet_store *s = open_store(sc, root);
	faucet_strarray keys = {NULL, 0};
	faucet_check_report *report = NULL;
	faucet_export *ex = NULL;

	for (size_t i = 0; i < rx->count; i++) {
		const run_expect *e = &rx->items[i];
		faucet_value *got = NULL;

		if (faucet_store_get(s, e->key, &got) != 0)
			fail_msg("%s: %s: %s: get %s failed: %s", sc->name, what, root, e->key,
				 faucet_error_last()->message);
		if (!(same_value(got, e->after) || (!acknowledged && same_value(got, e->before))))
			fail_msg("%s: %s: %s holds %s; allowed: %s%s%s", sc->name, what, e->key,
				 got ? faucet_value_json(got) : "(absent)",
				 e->after ? e->after : "(absent)", acknowledged ? "" : " or ",
				 acknowledged ? "" : (e->before ? e->before : "(absent)"));
		faucet_value_free(got);
	}
	if (sc->image_check != NULL)
		sc->image_check(s, acknowledged, what);
	if (faucet_store_list(s, "", &keys) != 0)
		fail_msg("%s: %s: list failed: %s", sc->name, what, faucet_error_last()->message);
	faucet_strarray_dispose(&keys);
	if (faucet_export_namespace(s, "p", &ex) != 0)
		fail_msg("%s: %s: export failed: %s", sc->name, what, faucet_error_last()->message);
	faucet_export_free(ex);
	if (faucet_store_check(s, NULL, &report) != 0)
		fail_msg("%s: %s: doctor failed: %s", sc->name, what, faucet_error_last()->message);
	for (size_t i = 0; i < faucet_check_report_count(report); i++) {
		const faucet_probe *p = faucet_check_report_probe(report, i);

		if (p->status == FAUCET_PROBE_FAIL)
			fail_msg("%s: %s: doctor probe %s failed: %s", sc->name, what, p->name,
				 p->reason ? p->reason : "");
	}
	faucet_check_report_free(report);
	faucet_store_free(s);
}

static void crash_scenario(const scenario *sc)
{
	char *root, *sandbox, *scratch = tu_tempdir();
	size_t calls, images = 0;
	run_expects rx;
	faucet_store *s;
	int rc;

	sandbox = prepare(sc, &root, &rx);
	assert_int_equal(pl_start(sandbox), 0);
	s = open_store(sc, root);
	rc = sc->act(s);
	calls = pl_calls();
	pl_pause(1);
	if (rc != 0)
		fail_msg("%s: the operation failed: %s", sc->name, faucet_error_last()->message);
	expects_end(sc, s, &rx);
	faucet_store_free(s);

	for (size_t c = 0; c <= calls; c++) {
		size_t count = pl_image_count(c);

		for (size_t w = 0; w < count; w++) {
			char img[64], what[256], *dir, *img_root;

			(void)snprintf(img, sizeof(img), "img-%zu-%zu", c, w);
			dir = tu_join(scratch, img);
			img_root = tu_join(dir, "store");
			pl_image_describe(c, w, what, sizeof(what));
			if (pl_image_write(c, w, dir) != 0)
				fail_msg("%s: cannot materialise %s", sc->name, what);
			check_image(sc, &rx, img_root, c == calls, what);
			tu_rmrf(dir);
			free(img_root);
			free(dir);
			images++;
		}
	}
	pl_stop();
	printf("  power loss: %-28s %3zu crash points, %4zu images\n", sc->name, calls + 1, images);
	total_images += images;
	total_crash_points += calls + 1;
	expects_dispose(&rx);
	tu_rmrf(scratch);
	tu_rmrf(sandbox);
	free(scratch);
	free(root);
	free(sandbox);
}

static void test_power_loss(void **state)
{
	(void)state;
	for (size_t i = 0; i < FAUCET_ARRAY_LEN(scenarios); i++)
		crash_scenario(&scenarios[i]);
	printf("power loss: %zu crash points, %zu post-crash images checked\n", total_crash_points,
	       total_images);
	assert_true(total_images > total_crash_points);
}

/* A run's first write of a key renames the marker (with the key's
 * before-image) into place, then the key's file.  The simulator persists
 * unsynced metadata in order, as a journalling file system does, so it
 * cannot show the key's rename surviving without the marker's; on a file
 * system without a journal it can.  The promise is therefore checked on
 * the calls themselves: between the two renames, the directory is synced.
 * Fails when faucet__durable_replace_pair drops that sync. */
static void test_first_write_syncs_the_marker_before_the_key(void **state)
{
	char *sandbox = tu_tempdir(), *root = tu_join(sandbox, "store");
	faucet_run_options o = FAUCET_RUN_OPTIONS_INIT;
	faucet_value *v = tu_v("{\"cursor\":1}");
	faucet_run *r = NULL;
	faucet_store *s;
	size_t renames = 0, last_rename = 0;

	(void)state;
	s = open_store_with(root, NULL, NULL);
	tu_put(s, "p::r::other", "1");
	o.row = "r";
	assert_int_equal(faucet_run_begin(&r, s, "p", &o), 0);
	/* The marker exists once the run has recorded a first key. */
	assert_int_equal(faucet_run_put(r, "p::r::other", v), 0);
	assert_int_equal(pl_start(sandbox), 0);
	assert_int_equal(faucet_run_put(r, "p::r", v), 0);
	for (size_t i = 0; i < pl_calls(); i++) {
		const char *call = pl_call_name(i);
		int synced = 0;

		if (strcmp(call, "renameat") != 0 && strcmp(call, "linkat") != 0)
			continue;
		for (size_t j = last_rename + 1; renames > 0 && j < i; j++)
			synced |= strcmp(pl_call_name(j), "fsync") == 0;
		if (renames > 0 && !synced)
			fail_msg("call %zu (%s) renames a file before the rename at call %zu is "
				 "synced", i, call, last_rename);
		renames++;
		last_rename = i;
	}
	pl_stop();
	assert_int_equal(renames, 2); /* the marker, then the key */
	assert_int_equal(faucet_run_end(r, FAUCET_RUN_OK, 0, NULL), 0);
	faucet_run_free(r);
	faucet_store_free(s);
	faucet_value_free(v);
	tu_rmrf(sandbox);
	free(root);
	free(sandbox);
}

/* A CLI write's run records itself with its first change: the status, the
 * index and the marker are renamed into place, the directory synced, and
 * only then the key's file renamed.  Fails when the guarded write renames
 * the key before that sync, or records the run in a write of its own. */
static void test_cli_run_records_itself_before_the_key(void **state)
{
	char *sandbox = tu_tempdir(), *root = tu_join(sandbox, "store");
	faucet_run_options o = FAUCET_RUN_OPTIONS_INIT;
	faucet_value *v = tu_v("{\"cursor\":1}");
	faucet_run *r = NULL;
	faucet_store *s;
	size_t renames = 0, syncfs_calls = 0, last = 0, before_last = 0;
	int synced = 0;

	(void)state;
	s = open_store_with(root, NULL, NULL);
	tu_put(s, "p::r", "{\"cursor\":0}");
	o.row = "r";
	o.no_lease = 1;
	assert_int_equal(faucet_run_begin(&r, s, "p", &o), 0);
	assert_int_equal(pl_start(sandbox), 0);
	assert_int_equal(faucet_run_put(r, "p::r", v), 0);
	for (size_t i = 0; i < pl_calls(); i++) {
		const char *call = pl_call_name(i);

		syncfs_calls += strcmp(call, "syncfs") == 0;
		if (strcmp(call, "renameat") != 0 && strcmp(call, "linkat") != 0)
			continue;
		renames++;
		before_last = last;
		last = i;
	}
	for (size_t j = before_last + 1; j < last; j++)
		synced |= strcmp(pl_call_name(j), "fsync") == 0;
	pl_stop();
	/* status, index, marker, then the key: one write, one data barrier */
	assert_int_equal(renames, 4);
	assert_int_equal(syncfs_calls, 1);
	if (!synced)
		fail_msg("the key is renamed (call %zu) before the run's records (call %zu) are "
			 "synced", last, before_last);
	assert_int_equal(faucet_run_end(r, FAUCET_RUN_OK, 0, NULL), 0);
	faucet_run_free(r);
	faucet_store_free(s);
	faucet_value_free(v);
	tu_rmrf(sandbox);
	free(root);
	free(sandbox);
}

/* faucet_run_put_end on the file store: one commit for the run's records,
 * its put and its end - one syncfs, the records renamed and the directory
 * synced, then the key and the end's status renamed with no sync between
 * them, and the directory synced once more: no other sync, no other
 * rename.  Fails when the end is written apart (two more syncs), or
 * renamed before the key. */
static void test_cli_put_end_is_one_commit(void **state)
{
	char *sandbox = tu_tempdir(), *root = tu_join(sandbox, "store");
	faucet_run_options o = FAUCET_RUN_OPTIONS_INIT;
	faucet_value *v = tu_v("{\"cursor\":1}"), *st = NULL;
	faucet_run *r = NULL;
	faucet_store *s;
	size_t renames = 0, syncfs_calls = 0, fsyncs = 0, key_at = 0, status_at = 0;
	int put_done = 0;

	(void)state;
	s = open_store_with(root, NULL, NULL);
	tu_put(s, "p::r", "{\"cursor\":0}");
	o.row = "r";
	o.no_lease = 1;
	assert_int_equal(faucet_run_begin(&r, s, "p", &o), 0);
	assert_int_equal(pl_start(sandbox), 0);
	assert_int_equal(faucet_run_put_end(r, "p::r", v, &put_done), 0);
	assert_int_equal(put_done, 1);
	for (size_t i = 0; i < pl_calls(); i++) {
		const char *call = pl_call_name(i);

		syncfs_calls += strcmp(call, "syncfs") == 0;
		fsyncs += strcmp(call, "fsync") == 0;
		if (strcmp(call, "renameat") != 0 && strcmp(call, "linkat") != 0)
			continue;
		renames++;
		if (renames == 4)
			key_at = i;
		if (renames == 5)
			status_at = i;
	}
	pl_stop();
	/* status, index, marker; the key; the end's status */
	assert_int_equal(renames, 5);
	assert_int_equal(syncfs_calls, 1);
	assert_int_equal(fsyncs, 2);
	for (size_t j = key_at + 1; j < status_at; j++)
		if (strcmp(pl_call_name(j), "fsync") == 0)
			fail_msg("a sync (call %zu) between the key's rename and the end's", j);
	assert_int_equal(faucet_store_get(s, "p::r::__status__", &st), 0);
	assert_non_null(st);
	assert_non_null(strstr(faucet_value_json(st), "\"outcome\":\"ok\""));
	assert_non_null(strstr(faucet_value_json(st), "\"keys\":[\"p::r\"]"));
	assert_int_equal(faucet_run_changed(r), 1);
	faucet_value_free(st);
	faucet_run_free(r);
	faucet_store_free(s);
	faucet_value_free(v);
	tu_rmrf(sandbox);
	free(root);
	free(sandbox);
}

/* ---- files written outside a store (export -o, --metrics-file) -------- */

/* The file at `path` holds exactly `want` (NULL = absent). */
static int file_is(const char *path, const char *want)
{
	size_t len = 0;
	char *got = tu_read_file(path, &len);
	int same;

	/* (No comparison of `got` after its free: GCC -O3 warns of one.) */
	if (got == NULL)
		return want == NULL;
	same = want != NULL && len == strlen(want) && memcmp(got, want, len) == 0;
	free(got);
	return same;
}

/* Power loss while faucet_write_file replaces (or creates) a file: every
 * image holds the old content or the new one, whole; once the call has
 * returned, the new one. */
static void output_file_crash(const char *old_content)
{
	static const char new_content[] = "{\"version\":1,\"keys\":{\"p::a\":{\"cursor\":42}}}\n";
	char *sandbox = tu_tempdir(), *scratch = tu_tempdir(), *path = tu_join(sandbox, "out.json");
	size_t calls, images = 0;

	if (old_content != NULL)
		tu_write_file(path, old_content, strlen(old_content));
	assert_int_equal(pl_start(sandbox), 0);
	if (faucet_write_file(path, "export", new_content, strlen(new_content)) != 0)
		fail_msg("write %s: %s", path, faucet_error_last()->message);
	calls = pl_calls();
	pl_pause(1);
	for (size_t c = 0; c <= calls; c++) {
		for (size_t w = 0; w < pl_image_count(c); w++) {
			char img[64], what[256], *dir, *out;

			(void)snprintf(img, sizeof(img), "img-%zu-%zu", c, w);
			dir = tu_join(scratch, img);
			out = tu_join(dir, "out.json");
			pl_image_describe(c, w, what, sizeof(what));
			assert_int_equal(pl_image_write(c, w, dir), 0);
			if (!(file_is(out, new_content) || (c < calls && file_is(out, old_content))))
				fail_msg("output file, %s: neither the old nor the new content", what);
			tu_rmrf(dir);
			free(out);
			free(dir);
			images++;
		}
	}
	pl_stop();
	printf("  power loss: output file %-16s %3zu crash points, %4zu images\n",
	       old_content ? "(replaced)" : "(new)", calls + 1, images);
	total_images += images;
	total_crash_points += calls + 1;
	tu_rmrf(scratch);
	tu_rmrf(sandbox);
	free(path);
	free(scratch);
	free(sandbox);
}

/* An output file that is a symlink to a regular file is written through
 * (truncated and rewritten in place, not atomic): once the call returned,
 * the file it leads to must hold the new content after any crash. */
static void output_symlink_crash(void)
{
	static const char new_content[] = "{\"version\":1,\"keys\":{}}\n";
	char *sandbox = tu_tempdir(), *scratch = tu_tempdir();
	char *real = tu_join(sandbox, "real.json"), *link = tu_join(sandbox, "link.json");
	size_t calls, images = 0;

	tu_write_file(real, "the old content of the file the link leads to\n", 47);
	assert_int_equal(symlink("real.json", link), 0);
	assert_int_equal(pl_start(sandbox), 0);
	if (faucet_write_file(link, "export", new_content, strlen(new_content)) != 0)
		fail_msg("write %s: %s", link, faucet_error_last()->message);
	calls = pl_calls();
	pl_pause(1);
	assert_true(calls > 0);
	for (size_t w = 0; w < pl_image_count(calls); w++) {
		char img[64], what[256], *dir, *out;

		(void)snprintf(img, sizeof(img), "img-%zu", w);
		dir = tu_join(scratch, img);
		out = tu_join(dir, "real.json");
		pl_image_describe(calls, w, what, sizeof(what));
		assert_int_equal(pl_image_write(calls, w, dir), 0);
		if (!file_is(out, new_content))
			fail_msg("output through a symlink, %s: the acknowledged content is lost", what);
		tu_rmrf(dir);
		free(out);
		free(dir);
		images++;
	}
	pl_stop();
	printf("  power loss: output file (through a symlink) %zu images after it returned\n",
	       images);
	total_images += images;
	tu_rmrf(scratch);
	tu_rmrf(sandbox);
	free(real);
	free(link);
	free(scratch);
	free(sandbox);
}

static void test_power_loss_output_file(void **state)
{
	(void)state;
	output_file_crash("the previous export, which must not be lost\n");
	output_file_crash(NULL);
	output_symlink_crash();
}

/* faucet_write_file, the public face of the output-file routine: a new file
 * gets the content and mode 0600 (state may hold secrets), a regular one is
 * replaced, and what it cannot write is refused naming the file. */
static void test_write_file_contract(void **state)
{
	char *dir = tu_tempdir(), *path = tu_join(dir, "out.json"), *slash = tu_join(dir, "sub/");
	struct stat st;
	(void)state;

	assert_int_equal(faucet_write_file(path, "export file", "{}\n", 3), 0);
	assert_true(file_is(path, "{}\n"));
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(faucet_write_file(path, NULL, "[1]\n", 4), 0);
	assert_true(file_is(path, "[1]\n"));
	assert_int_equal(faucet_write_file(slash, NULL, "x", 1), FAUCET_EINVALID);
	tu_assert_error_contains("file ");
	tu_assert_error_contains("names a directory");
	assert_int_equal(faucet_write_file(NULL, "export file", "x", 1), FAUCET_EINVALID);
	tu_assert_error_contains("export file: no path");
	assert_int_equal(faucet_write_file(path, NULL, NULL, 1), FAUCET_EINVALID);
	assert_true(file_is(path, "[1]\n"));
	tu_rmrf(dir);
	free(slash);
	free(path);
	free(dir);
}

/* ---- fault injection -------------------------------------------------- */

/* After a faulted run: every key holds its old value; with `maybe_new` its
 * new one is allowed, and with `prefix` a prefix of the keys may hold their
 * new ones (once one holds its old value, every later one does too).  A
 * new value that is FROM_STORE and so unknown here must at least read. */
static void check_after_fault(const scenario *sc, const run_expects *rx, const char *root,
			      int maybe_new, int prefix, const char *what)
{
	faucet_store *s = open_store(sc, root);
	int old_seen = 0;

	for (size_t i = 0; i < rx->count; i++) {
		const run_expect *e = &rx->items[i];
		faucet_value *got = NULL;
		int ok;

		if (faucet_store_get(s, e->key, &got) != 0)
			fail_msg("%s: %s: get %s: %s", sc->name, what, e->key,
				 faucet_error_last()->message);
		if (same_value(got, e->before)) {
			ok = 1;
			old_seen |= !e->after_known || !same_value(got, e->after);
		} else {
			ok = (maybe_new || (prefix && !old_seen)) &&
			     (!e->after_known || same_value(got, e->after));
		}
		if (!ok)
			fail_msg("%s: %s: %s holds %s (before %s, after %s)", sc->name, what, e->key,
				 got ? faucet_value_json(got) : "(absent)",
				 e->before ? e->before : "(absent)",
				 !e->after_known ? "(from the store)" : e->after ? e->after : "(absent)");
		faucet_value_free(got);
	}
	faucet_store_free(s);
}

/* After a successful run: every key holds its new value (a FROM_STORE one:
 * whatever it is, it reads). */
static int holds_after(const scenario *sc, const run_expects *rx, const char *root)
{
	faucet_store *s = open_store(sc, root);
	int all = 1;

	for (size_t i = 0; i < rx->count && all; i++) {
		faucet_value *got = NULL;

		all = faucet_store_get(s, rx->items[i].key, &got) == 0 &&
		      (!rx->items[i].after_known || same_value(got, rx->items[i].after)) &&
		      (got != NULL || rx->items[i].after == NULL);
		faucet_value_free(got);
	}
	faucet_store_free(s);
	return all;
}

static size_t fault_scenario(const scenario *sc, fault_kind kind)
{
	char *root, *sandbox;
	size_t calls, points = 0;
	run_expects rx;
	faucet_store *s;

	/* How many calls the operation makes, unarmed. */
	sandbox = prepare(sc, &root, &rx);
	fault_start();
	s = open_store(sc, root);
	assert_int_equal(sc->act(s), 0);
	calls = fault_calls();
	faucet_store_free(s);
	fault_stop();
	expects_dispose(&rx);
	tu_rmrf(sandbox);
	free(root);
	free(sandbox);

	for (size_t n = 1; n <= calls; n++) {
		char what[128];
		int rc, fired;

		sandbox = prepare(sc, &root, &rx);
		fault_start();
		s = open_store(sc, root);
		fault_arm(n, kind);
		rc = sc->act(s);
		fired = fault_fired();
		(void)snprintf(what, sizeof(what), "%s on call %zu (%s)", fault_kind_name(kind), n,
			       fired ? fault_fired_call() : "not reached");
		fault_stop();
		if (rc != 0 && rc != -100) {
			const char *msg = faucet_error_last()->message;

			/* The store's path, or its parent's when creating it failed. */
			if (strstr(msg, sandbox) == NULL)
				fail_msg("%s: %s: the error names no path of the store (%s): %s",
					 sc->name, what, root, msg);
		}
		points += fired != 0;
		if (rc == 0) {
			if (!holds_after(sc, &rx, root))
				fail_msg("%s: %s: the operation succeeded but a new value is missing",
					 sc->name, what);
		} else {
			/* A failure keeps every old value (outcome unknown may have
			 * the new ones; a non-atomic batch a prefix of them). */
			check_after_fault(sc, &rx, root, rc == FAUCET_EUNKNOWN, sc->prefix_on_failure,
					  what);
		}
		if (sc->image_check != NULL) {
			faucet_store *c = open_store(sc, root);

			sc->image_check(c, rc == 0, what);
			faucet_store_free(c);
		}
		if (count_temp_files(root) != 0)
			fail_msg("%s: %s: a temp file was left behind in %s", sc->name, what, root);
		/* The next operation succeeds: the same one again, unless the
		 * failed run's values landed all the same (outcome unknown). */
		if (rc != 0 && !holds_after(sc, &rx, root) && (rc = sc->act(s)) != 0)
			fail_msg("%s: %s: the retry failed: %s", sc->name, what,
				 faucet_error_last()->message);
		faucet_store_free(s);
		if (!holds_after(sc, &rx, root))
			fail_msg("%s: %s: after the retry a new value is missing", sc->name, what);
		expects_dispose(&rx);
		tu_rmrf(sandbox);
		free(root);
		free(sandbox);
	}
	return points;
}

static void test_faults(void **state)
{
	static const fault_kind kinds[] = {FAULT_EIO, FAULT_ENOSPC, FAULT_SHORT_WRITE};

	(void)state;
	for (size_t i = 0; i < FAUCET_ARRAY_LEN(scenarios); i++) {
		size_t points = 0;

		for (size_t k = 0; k < FAUCET_ARRAY_LEN(kinds); k++)
			points += fault_scenario(&scenarios[i], kinds[k]);
		printf("  faults: %-32s %3zu injected\n", scenarios[i].name, points);
		total_faults += points;
	}
	printf("faults: %zu injected failures checked\n", total_faults);
	assert_true(total_faults > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_power_loss),
		cmocka_unit_test(test_power_loss_output_file),
		cmocka_unit_test(test_first_write_syncs_the_marker_before_the_key),
		cmocka_unit_test(test_cli_run_records_itself_before_the_key),
		cmocka_unit_test(test_cli_put_end_is_one_commit),
		cmocka_unit_test(test_write_file_contract),
		cmocka_unit_test(test_faults),
	};

	int failed = cmocka_run_group_tests(tests, NULL, NULL);

	faucet_bf__lease_dispose(&held_lease);
	free(lease_holder);
	return failed;
}
