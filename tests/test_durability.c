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

#include "testutil.h"
#include "powerloss.h"
#include "faults.h"
#include "internal.h"
#include "common/durable.h"

#define MAX_EXPECT 24

typedef struct {
	const char *key;
	const char *before; /* JSON, or NULL = absent */
	const char *after;
} expect;

typedef struct {
	const char *name;
	const char *seal_key;              /* encryption key, or NULL */
	int root_exists;                   /* 0: the operation creates the store */
	int prefix_on_failure;             /* a failure may leave a prefix of the keys
					      written (the file store's batch is not
					      atomic); else it leaves every old value */
	void (*setup)(faucet_store *s);    /* before the operation (may be NULL) */
	int (*act)(faucet_store *s);       /* the operation; its return code */
	expect expects[MAX_EXPECT];
} scenario;

/* Totals printed at the end: what the proof covered. */
static size_t total_images, total_crash_points, total_faults;

/* ---- scenarios -------------------------------------------------------- */

#define LONG_KEY                                                                        \
	"p::long_row_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" \
	"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" \
	"aaaaaaaaaaaaaaaaaaaaaaaaaa"

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

static int act_cas(faucet_store *s)
{
	faucet_value *exp = tu_v("{\"cursor\":1}"), *v = tu_v("{\"cursor\":3}");
	int written = 0, rc = faucet_store_compare_and_put(s, "p::a", exp, v, &written);

	faucet_value_free(exp);
	faucet_value_free(v);
	return rc == 0 && !written ? -100 : rc;
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

static const scenario scenarios[] = {
	{"store creation + first put", NULL, 0, 0, NULL, act_first_put,
	 {{"p::a", NULL, "{\"cursor\":1}"}}},
	{"put of a new key", NULL, 1, 0, setup_two, act_put_new,
	 {{"p::a", "{\"cursor\":1}", "{\"cursor\":1}"},
	  {"p::keep", "[1,2,3]", "[1,2,3]"},
	  {"p::b", NULL, "{\"cursor\":\"2026-01-01\"}"}}},
	{"overwrite", NULL, 1, 0, setup_two, act_overwrite,
	 {{"p::a", "{\"cursor\":1}", "{\"cursor\":2,\"note\":\"the new value is longer\"}"},
	  {"p::keep", "[1,2,3]", "[1,2,3]"}}},
	{"long key with its sidecar", NULL, 1, 0, setup_long, act_long,
	 {{LONG_KEY, "{\"old\":true}", "{\"old\":false,\"n\":12345678901234567890}"},
	  {"p::a", "{\"cursor\":1}", "{\"cursor\":1}"}}},
	{"sealed put of a new key", "durability-test-key", 1, 0, setup_two, act_put_new,
	 {{"p::a", "{\"cursor\":1}", "{\"cursor\":1}"},
	  {"p::b", NULL, "{\"cursor\":\"2026-01-01\"}"}}},
	{"sealed overwrite", "durability-test-key", 1, 0, setup_two, act_overwrite,
	 {{"p::a", "{\"cursor\":1}", "{\"cursor\":2,\"note\":\"the new value is longer\"}"}}},
	{"compare-and-put", NULL, 1, 0, setup_two, act_cas,
	 {{"p::a", "{\"cursor\":1}", "{\"cursor\":3}"}, {"p::keep", "[1,2,3]", "[1,2,3]"}}},
	{"delete", NULL, 1, 0, setup_two, act_delete,
	 {{"p::a", "{\"cursor\":1}", NULL}, {"p::keep", "[1,2,3]", "[1,2,3]"}}},
	{"compare-and-delete", NULL, 1, 0, setup_two, act_cad,
	 {{"p::a", "{\"cursor\":1}", NULL}, {"p::keep", "[1,2,3]", "[1,2,3]"}}},
	{"put_batch", NULL, 1, 1, setup_two, act_batch,
	 {{"p::a", "{\"cursor\":1}", "{\"cursor\":10}"},
	  {"p::b", NULL, "{\"cursor\":20}"},
	  {"p::c", NULL, "\"thirty\""},
	  {"p::d", NULL, "40"},
	  {"p::keep", "[1,2,3]", "[1,2,3]"}}},
};

/* ---- helpers ---------------------------------------------------------- */

static faucet_store *open_store(const scenario *sc, const char *root)
{
	faucet_encryption_options enc = {sc->seal_key, NULL, 0};
	faucet_file_options opts = {sc->seal_key ? &enc : NULL};
	faucet_store *s = NULL;

	if (faucet_store_open_file(&s, root, &opts) != 0)
		fail_msg("open %s: %s", root, faucet_error_last()->message);
	return s;
}

static size_t expect_count(const scenario *sc)
{
	size_t n = 0;

	while (n < MAX_EXPECT && sc->expects[n].key != NULL)
		n++;
	return n;
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

/* A fresh sandbox holding the prepared store at {sandbox}/store. */
static char *prepare(const scenario *sc, char **root_out)
{
	char *sandbox = tu_tempdir(), *root = tu_join(sandbox, "store");

	if (sc->root_exists) {
		faucet_store *s = open_store(sc, root);

		if (sc->setup)
			sc->setup(s);
		else
			tu_put(s, "p::setup", "0");
		faucet_store_free(s);
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
 * export and doctor work.  Returns 0 or fails the test with `what`. */
static void check_image(const scenario *sc, const char *root, int acknowledged, const char *what)
{
	size_t n = expect_count(sc);
	faucet_store *s = open_store(sc, root);
	faucet_strarray keys = {NULL, 0};
	faucet_check_report *report = NULL;
	faucet_export *ex = NULL;

	for (size_t i = 0; i < n; i++) {
		const expect *e = &sc->expects[i];
		faucet_value *got = NULL;

		if (faucet_store_get(s, e->key, &got) != 0)
			fail_msg("%s: %s: %s: get %s failed: %s", sc->name, what, root, e->key,
				 faucet_error_last()->message);
		if (!(same_value(got, e->after) || (!acknowledged && same_value(got, e->before))))
			fail_msg("%s: %s: %s holds %s; allowed: %s%s%s", sc->name, what, e->key,
				 got ? faucet_value_json(got) : "(absent)",
				 e->after ? e->after : "(absent)",
				 acknowledged ? "" : " or ", acknowledged ? "" : (e->before ? e->before : "(absent)"));
		faucet_value_free(got);
	}
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
	char *root, *sandbox = prepare(sc, &root), *scratch = tu_tempdir();
	size_t calls, images = 0;
	faucet_store *s;
	int rc;

	assert_int_equal(pl_start(sandbox), 0);
	s = open_store(sc, root);
	rc = sc->act(s);
	calls = pl_calls();
	pl_pause(1);
	if (rc != 0)
		fail_msg("%s: the operation failed: %s", sc->name, faucet_error_last()->message);
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
			check_image(sc, img_root, c == calls, what);
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

/* ---- files written outside a store (export -o, --metrics-file) -------- */

/* The file at `path` holds exactly `want` (NULL = absent). */
static int file_is(const char *path, const char *want)
{
	size_t len = 0;
	char *got = tu_read_file(path, &len);
	int same;

	if (got == NULL || want == NULL) {
		same = got == NULL && want == NULL;
	} else {
		same = len == strlen(want) && memcmp(got, want, len) == 0;
	}
	free(got);
	return same;
}

/* Power loss while faucet__write_file replaces (or creates) a file: every
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
	if (faucet__write_file(path, "export", new_content, strlen(new_content)) != 0)
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

static void test_power_loss_output_file(void **state)
{
	(void)state;
	output_file_crash("the previous export, which must not be lost\n");
	output_file_crash(NULL);
}

/* ---- fault injection -------------------------------------------------- */

/* Every key holds its old value; with `maybe_new` its new one is allowed
 * (with `prefix`, only in a prefix of the keys: once one holds its old
 * value, every later one does too). */
static void check_values(const scenario *sc, const char *root, int maybe_new, int want_new,
			 int prefix, const char *what)
{
	size_t n = expect_count(sc);
	faucet_store *s = open_store(sc, root);
	int old_seen = 0;

	for (size_t i = 0; i < n; i++) {
		const expect *e = &sc->expects[i];
		faucet_value *got = NULL;
		int ok;

		if (faucet_store_get(s, e->key, &got) != 0)
			fail_msg("%s: %s: get %s: %s", sc->name, what, e->key,
				 faucet_error_last()->message);
		if (want_new) {
			ok = same_value(got, e->after);
		} else if (same_value(got, e->before)) {
			ok = 1;
			old_seen |= !same_value(got, e->after);
		} else {
			ok = (maybe_new || (prefix && !old_seen)) && same_value(got, e->after);
		}
		if (!ok)
			fail_msg("%s: %s: %s holds %s (before %s, after %s)", sc->name, what, e->key,
				 got ? faucet_value_json(got) : "(absent)",
				 e->before ? e->before : "(absent)", e->after ? e->after : "(absent)");
		faucet_value_free(got);
	}
	faucet_store_free(s);
}

/* Whether every key already holds its new value. */
static int holds_after(const scenario *sc, const char *root)
{
	size_t n = expect_count(sc);
	faucet_store *s = open_store(sc, root);
	int all = 1;

	for (size_t i = 0; i < n && all; i++) {
		faucet_value *got = NULL;

		all = faucet_store_get(s, sc->expects[i].key, &got) == 0 &&
		      same_value(got, sc->expects[i].after);
		faucet_value_free(got);
	}
	faucet_store_free(s);
	return all;
}

static size_t fault_scenario(const scenario *sc, fault_kind kind)
{
	char *root, *sandbox = prepare(sc, &root);
	size_t calls, points = 0;
	faucet_store *s;

	/* How many calls the operation makes, unarmed. */
	fault_start();
	s = open_store(sc, root);
	assert_int_equal(sc->act(s), 0);
	calls = fault_calls();
	faucet_store_free(s);
	fault_stop();
	tu_rmrf(sandbox);
	free(root);
	free(sandbox);

	for (size_t n = 1; n <= calls; n++) {
		char what[128];
		int rc, fired;

		sandbox = prepare(sc, &root);
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
		/* A failure keeps every old value (outcome unknown may have the
		 * new one); success has every new one. */
		check_values(sc, root, rc == FAUCET_EUNKNOWN, rc == 0, sc->prefix_on_failure, what);
		if (count_temp_files(root) != 0)
			fail_msg("%s: %s: a temp file was left behind in %s", sc->name, what, root);
		/* The next operation succeeds: the same one again, unless the
		 * failed run's values landed all the same (outcome unknown). */
		if (rc != 0 && !holds_after(sc, root) && (rc = sc->act(s)) != 0)
			fail_msg("%s: %s: the retry failed: %s", sc->name, what,
				 faucet_error_last()->message);
		faucet_store_free(s);
		check_values(sc, root, 0, 1, 0, "the retry");
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
		cmocka_unit_test(test_faults),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
