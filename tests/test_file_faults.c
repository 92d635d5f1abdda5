/*
 * test_file_faults.c - the file store and the durable-write helper when
 * system calls fail or writers die: a directory sync that fails after the
 * rename (outcome unknown, never "not written"), a lock file that cannot be
 * removed after a delete (success with a warning), a write that fails
 * (old value kept, no temp file), a writer SIGKILLed mid-write (its temp
 * file is an orphan doctor reports and --repair removes, while a live
 * writer's is left alone), a repair that wins the race against a writer
 * that has just created its temp file, symlinked key sidecars, and a plain
 * batch that lands while a conditional guarded put syncs its guards.
 *
 * Failures are injected through the table of system calls (src/common/
 * sys.h); processes are ordered with pipes, never sleeps.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "faults.h"
#include "durable.h"
#include "sys.h"
#include "stores/file_internal.h"
#include "store/open_internal.h"

typedef tu_dir_fixture fixture;

/* The real calls again after every test, also one whose assertion failed
 * while its table was in place. */
static int fault_teardown(void **state)
{
	faucet__sys_set(NULL);
	return tu_dir_teardown(state);
}

/* The table a test installs; static, so no test leaves a pointer into its
 * dead stack frame behind. */
static faucet_sys table;

#define FAULT_TEST(t) cmocka_unit_test_setup_teardown(t, tu_dir_setup, fault_teardown)

static faucet_store *open_store(const char *dir)
{
	faucet_store *s = NULL;

	if (faucet_store_open_file(&s, dir, NULL) != 0)
		fail_msg("open: %s", faucet_error_last()->message);
	return s;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* ---- a directory fsync that fails after the rename ------------------------ */

static int failing_dir_fsync(int fd)
{
	struct stat st;

	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		errno = EIO;
		return -1;
	}
	return fsync(fd);
}

static void a_failed_directory_sync_after_the_rename_is_outcome_unknown(void **state)
{
	fixture *f = *state;
	faucet_store *s = open_store(f->dir);
	faucet_value *v = tu_v("{\"n\":2}"), *three = tu_v("3");
	int written = 0;

	tu_put(s, "p::a", "{\"n\":1}");
	table = *faucet__sys_default();
	table.fsync = failing_dir_fsync;
	faucet__sys_set(&table);
	assert_int_equal(faucet_store_put(s, "p::a", v), FAUCET_EUNKNOWN);
	faucet__sys_set(NULL);
	tu_assert_error_contains("may not survive a crash");
	/* The rename happened: the key holds its new value. */
	tu_assert_value(s, "p::a", "{\"n\":2}");
	assert_false(tu_has_suffix_entry(f->dir, ".tmp"));
	/* compare-and-put says it wrote, and the same unknown outcome. */
	faucet__sys_set(&table);
	assert_int_equal(faucet_store_compare_and_put(s, "p::a", v, three, &written),
			 FAUCET_EUNKNOWN);
	faucet__sys_set(NULL);
	assert_true(written);
	tu_assert_value(s, "p::a", "3");
	faucet_value_free(v);
	faucet_value_free(three);
	faucet_store_free(s);
}

static int dir_fsyncs_to_fail;

static int failing_first_dir_fsync(int fd)
{
	struct stat st;

	if (dir_fsyncs_to_fail > 0 && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		dir_fsyncs_to_fail--;
		errno = EIO;
		return -1;
	}
	return fsync(fd);
}

/* A long key's sidecar is written before its value: when the sidecar's
 * directory sync fails the value is never written, so the put failed -
 * not "outcome unknown". */
static void a_failed_sidecar_sync_is_a_failed_put(void **state)
{
	fixture *f = *state;
	faucet_store *s = open_store(f->dir);
	faucet_value *v = tu_v("1");
	char key[240];

	memset(key, 'b', sizeof(key) - 1);
	key[sizeof(key) - 1] = '\0';
	table = *faucet__sys_default();
	table.fsync = failing_first_dir_fsync;
	dir_fsyncs_to_fail = 1;
	faucet__sys_set(&table);
	assert_int_equal(faucet_store_put(s, key, v), FAUCET_EIO);
	faucet__sys_set(NULL);
	tu_assert_value(s, key, NULL);
	faucet_value_free(v);
	faucet_store_free(s);
}

/* ---- a write that fails ----------------------------------------------------- */

static ssize_t failing_write(int fd, const void *buf, size_t len)
{
	(void)fd;
	(void)buf;
	(void)len;
	errno = ENOSPC;
	return -1;
}

static void a_failed_write_keeps_the_old_value_and_leaves_no_temp(void **state)
{
	fixture *f = *state;
	faucet_store *s = open_store(f->dir);
	faucet_value *v = tu_v("2");

	tu_put(s, "p::a", "1");
	table = *faucet__sys_default();
	table.write = failing_write;
	faucet__sys_set(&table);
	assert_int_equal(faucet_store_put(s, "p::a", v), FAUCET_EIO);
	faucet__sys_set(NULL);
	tu_assert_error_contains("failed to write temp state file");
	tu_assert_value(s, "p::a", "1");
	assert_false(tu_has_suffix_entry(f->dir, ".tmp"));
	faucet_value_free(v);
	faucet_store_free(s);
}

/* ---- a streamed import that fails part way ---------------------------------- */

/* An import whose chunk is a stream of groups (groups of 3 here), with
 * the Nth system call failing (ENOSPC: a disk filling up) for every N: the
 * report's `written` is exactly the keys that hold their new value, in
 * order, a prefix of the document; no temp file is left. */
#define STREAM_DOC_KEYS 10
static void a_streamed_import_reports_exactly_what_landed(void **state)
{
	fixture *f = *state;
	char doc[2048] = "{\"version\":1,\"pipeline\":\"p\",\"exported_at\":"
			 "\"2026-12-01T00:00:00+00:00\",\"keys\":{";
	faucet_export *e = NULL;
	size_t calls = 0, failures = 0;

	for (int i = 0; i < STREAM_DOC_KEYS; i++)
		(void)snprintf(doc + strlen(doc), sizeof(doc) - strlen(doc),
			       "%s\"p::k%d\":{\"n\":%d}", i ? "," : "", i, i);
	strcat(doc, "}}");
	assert_int_equal(faucet_export_parse(&e, doc, strlen(doc)), 0);
	faucet__durable_test_batch_size(3);
	for (size_t n = 0; n == 0 || n <= calls; n++) {
		char name[32], *dir;
		faucet_store *s;
		faucet_import_report r = FAUCET_IMPORT_REPORT_INIT;
		size_t landed = 0;
		int rc;

		(void)snprintf(name, sizeof(name), "run%zu", n);
		dir = tu_join(f->dir, name);
		s = open_store(dir);
		r = (faucet_import_report)FAUCET_IMPORT_REPORT_INIT;
		tu_put(s, "p::k9", "\"old\""); /* the root exists, one key is replaced */
		fault_start();
		fault_arm(n, FAULT_ENOSPC);
		rc = faucet_import_namespace(s, e, 0, &r);
		if (n == 0)
			calls = fault_calls();
		failures += fault_fired() != 0;
		fault_stop();
		if (rc != 0 && r.error == NULL)
			fail_msg("call %zu: failed (%s) without a report error", n,
				 faucet_error_last()->message);
		for (int i = 0; i < STREAM_DOC_KEYS; i++) {
			char key[16], want[32];
			faucet_value *v = NULL;
			int is_new;

			(void)snprintf(key, sizeof(key), "p::k%d", i);
			(void)snprintf(want, sizeof(want), "{\"n\":%d}", i);
			assert_int_equal(faucet_store_get(s, key, &v), 0);
			is_new = v != NULL && strcmp(faucet_value_json(v), want) == 0;
			if (!is_new && v != NULL && strcmp(faucet_value_json(v), "\"old\"") != 0)
				fail_msg("call %zu: %s holds %s", n, key, faucet_value_json(v));
			if (!is_new && v == NULL && i == 9)
				fail_msg("call %zu: %s lost its old value", n, key);
			faucet_value_free(v);
			/* Written keys are exactly the leading ones that hold the new value. */
			if (is_new && (size_t)i == landed)
				landed++;
			else if (is_new)
				fail_msg("call %zu: %s landed after a key that did not", n, key);
		}
		if (r.error == NULL && landed != STREAM_DOC_KEYS)
			fail_msg("call %zu: no error, but only %zu keys landed", n, landed);
		if (r.written.count != landed)
			fail_msg("call %zu: the report says %zu written, %zu landed (%s)", n,
				 r.written.count, landed, r.error ? r.error : "no error");
		if (tu_has_suffix_entry(dir, ".tmp"))
			fail_msg("call %zu: a temp file was left", n);
		faucet_import_report_dispose(&r);
		faucet_store_free(s);
		free(dir);
	}
	faucet__durable_test_batch_size(0);
	assert_true(failures > 10);
	faucet_export_free(e);
}

/* ---- a lock file that cannot be removed after a delete ------------------------ */

static int failing_lock_unlink(int dirfd, const char *name, int flags)
{
	if (ends_with(name, ".lock")) {
		errno = EPERM;
		return -1;
	}
	return unlinkat(dirfd, name, flags);
}

static void a_delete_whose_lock_file_stays_succeeds_with_a_warning(void **state)
{
	fixture *f = *state;
	faucet_store *s = open_store(f->dir);
	const char *warning;

	tu_put(s, "p::a", "1");
	faucet_warning_clear();
	table = *faucet__sys_default();
	table.unlinkat = failing_lock_unlink;
	faucet__sys_set(&table);
	assert_int_equal(faucet_store_delete(s, "p::a"), 0);
	faucet__sys_set(NULL);
	tu_assert_value(s, "p::a", NULL);
	warning = faucet_warning_last();
	assert_non_null(warning);
	assert_non_null(strstr(warning, "p%3A%3Aa.json.lock"));
	/* The key stays usable: the lock file left behind is reused. */
	assert_int_equal(tu_cas(s, "p::a", NULL, "2"), 1);
	tu_assert_value(s, "p::a", "2");
	faucet_warning_clear();
	assert_null(faucet_warning_last());
	faucet_store_free(s);
}

/* ---- a writer killed mid-write, and a live one -------------------------------- */

static int stall_signal_fd = -1, stall_wait_fd = -1;

/* The child's write: tell the parent the temp file exists, then wait for a
 * byte that never comes (the parent kills us). */
static ssize_t stalling_write(int fd, const void *buf, size_t len)
{
	char c = 'w';

	(void)fd;
	(void)buf;
	(void)len;
	if (write(stall_signal_fd, &c, 1) != 1)
		_exit(3);
	(void)read(stall_wait_fd, &c, 1);
	_exit(4);
}

static const faucet_probe *probe_named(const faucet_check_report *r, const char *name)
{
	for (size_t i = 0; i < faucet_check_report_count(r); i++) {
		const faucet_probe *p = faucet_check_report_probe(r, i);
		if (strcmp(p->name, name) == 0)
			return p;
	}
	fail_msg("no probe '%s'", name);
	return NULL;
}

static void check_temp_probe(faucet_store *s, unsigned flags, faucet_probe_status want,
			     const char *needle)
{
	faucet_check_context ctx = {.version = FAUCET_CHECK_CONTEXT_VERSION, .timeout_ms = 10000,
				    .flags = flags};
	faucet_check_report *r = NULL;
	const faucet_probe *p;

	assert_int_equal(faucet_store_check(s, &ctx, &r), 0);
	p = probe_named(r, "temp files");
	assert_int_equal(p->status, want);
	if (needle != NULL) {
		const char *text = p->reason != NULL ? p->reason : p->hint;
		assert_non_null(text);
		assert_non_null(strstr(text, needle));
	}
	faucet_check_report_free(r);
}

static void a_killed_writers_temp_file_is_repaired_and_a_live_ones_kept(void **state)
{
	fixture *f = *state;
	faucet_store *s = open_store(f->dir);
	int signal_pipe[2], wait_pipe[2], status;
	pid_t child;
	char c;

	tu_put(s, "p::a", "1");
	assert_int_equal(pipe(signal_pipe), 0);
	assert_int_equal(pipe(wait_pipe), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		faucet_sys ctable = *faucet__sys_default();
		faucet_store *cs = NULL;
		faucet_value *v = NULL;

		stall_signal_fd = signal_pipe[1];
		stall_wait_fd = wait_pipe[0];
		ctable.write = stalling_write;
		if (faucet_store_open_file(&cs, f->dir, NULL) != 0 ||
		    faucet_value_parse(&v, "[1,2,3]", 7) != 0)
			_exit(2);
		faucet__sys_set(&ctable);
		(void)faucet_store_put(cs, "p::a", v);
		_exit(5);
	}
	close(signal_pipe[1]);
	close(wait_pipe[0]);
	assert_int_equal(read(signal_pipe[0], &c, 1), 1);
	/* The child is inside its write, holding its temp file's lock. */
	assert_true(tu_has_suffix_entry(f->dir, ".json.tmp"));
	check_temp_probe(s, 0, FAUCET_PROBE_PASS, NULL);
	check_temp_probe(s, FAUCET_CHECK_REPAIR, FAUCET_PROBE_PASS, NULL);
	assert_true(tu_has_suffix_entry(f->dir, ".json.tmp"));
	/* Killed mid-write: the temp file stays, unlocked. */
	assert_int_equal(kill(child, SIGKILL), 0);
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFSIGNALED(status));
	check_temp_probe(s, 0, FAUCET_PROBE_WARN, "found 1 orphaned temp file");
	assert_true(tu_has_suffix_entry(f->dir, ".json.tmp"));
	check_temp_probe(s, FAUCET_CHECK_REPAIR, FAUCET_PROBE_PASS, "removed 1 orphaned temp file");
	assert_false(tu_has_suffix_entry(f->dir, ".tmp"));
	tu_assert_value(s, "p::a", "1");
	close(signal_pipe[0]);
	close(wait_pipe[1]);
	faucet_store_free(s);
}

/* ---- a repair that wins the race against a writer ------------------------------ */

static int raced;

/* Between the writer's create and its flock, a repair finds the new temp
 * file unlocked and removes it. */
static int racing_openat(int dirfd, const char *name, int flags, mode_t mode)
{
	int fd = openat(dirfd, name, flags, mode);

	if (fd >= 0 && !raced && ends_with(name, ".tmp")) {
		raced = 1;
		assert_int_equal(faucet__temp_is_orphan(dirfd, name, 1, NULL, NULL), 1);
	}
	return fd;
}

static void a_writer_whose_new_temp_file_was_repaired_away_takes_another(void **state)
{
	fixture *f = *state;
	faucet_store *s = open_store(f->dir);
	faucet_value *v = tu_v("{\"n\":7}");

	raced = 0;
	table = *faucet__sys_default();
	table.openat = racing_openat;
	faucet__sys_set(&table);
	assert_int_equal(faucet_store_put(s, "p::a", v), 0);
	faucet__sys_set(NULL);
	assert_true(raced);
	tu_assert_value(s, "p::a", "{\"n\":7}");
	assert_false(tu_has_suffix_entry(f->dir, ".tmp"));
	faucet_value_free(v);
	faucet_store_free(s);
}

/* ---- symlinked sidecars ---------------------------------------------------------- */

static void a_symlinked_key_sidecar_is_not_followed(void **state)
{
	fixture *f = *state;
	faucet_store *s = open_store(f->dir);
	char key[240], stem[FILE_STEM_MAX + 1], name[FILE_NAME_CAP];
	char *sidecar, *elsewhere;
	faucet_strarray keys = {NULL, 0};

	memset(key, 'a', sizeof(key) - 1);
	key[sizeof(key) - 1] = '\0';
	tu_put(s, key, "1");
	(void)faucet_file__stem(key, stem);
	(void)snprintf(name, sizeof(name), "%s.key", stem);
	sidecar = tu_join(f->dir, name);
	elsewhere = tu_join(f->dir, "elsewhere");
	assert_int_equal(rename(sidecar, elsewhere), 0);
	assert_int_equal(symlink(elsewhere, sidecar), 0);
	assert_int_equal(faucet_store_list(s, "", &keys), 0);
	assert_int_equal(keys.count, 0);
	faucet_strarray_dispose(&keys);
	free(sidecar);
	free(elsewhere);
	faucet_store_free(s);
}

/* ---- a plain batch while a conditional guarded put syncs its guards ------ */

static const char *landing_dir;
static int landing_armed;

/* The guarded put's one data barrier: a write of p::k by the original
 * faucet, which takes none of our locks (a put or a batch of ours waits for
 * the key's lock), lands while it runs - a temp file renamed into place. */
static int syncfs_with_a_landing_put(int fd)
{
	if (landing_armed) {
		char *tmp = tu_join(landing_dir, ".p%3A%3Ak.json.original.tmp");
		char *dst = tu_join(landing_dir, "p%3A%3Ak.json");
		FILE *fp;

		landing_armed = 0;
		if ((fp = fopen(tmp, "w")) == NULL || fputs("\"landed\"", fp) < 0 ||
		    fclose(fp) != 0 || rename(tmp, dst) != 0)
			fail_msg("landing write: %s", strerror(errno));
		free(tmp);
		free(dst);
	}
	return syncfs(fd);
}

/* A conditional guarded put compared its key when it locked it; the key is
 * compared again right before its rename, so a write of the original
 * faucet that landed in between is not overwritten: the guard is written,
 * the key left as that write made it, and *moved says so. */
static void a_put_landing_while_the_guards_sync_is_not_overwritten(void **state)
{
	fixture *f = *state;
	faucet_store *s = open_store(f->dir);
	faucet_value *g1 = tu_v("1"), *mine = tu_v("\"mine\"");
	faucet_store_guard guard = {"p::g", NULL, g1}, put = {"p::k", NULL, mine};
	int written = 0, then_written = 0, moved = 0;

	landing_dir = f->dir;
	table = *faucet__sys_default();
	table.syncfs = syncfs_with_a_landing_put;
	landing_armed = 1;
	faucet__sys_set(&table);
	assert_int_equal(faucet__store_put_guarded_if(s, &guard, 1, NULL, 0, &put, NULL, &written,
						      &then_written, &moved),
			 0);
	faucet__sys_set(NULL);
	assert_int_equal(landing_armed, 0); /* the put did land mid-way */
	assert_true(written);
	assert_true(moved);
	assert_false(then_written);
	tu_assert_value(s, "p::g", "1");
	tu_assert_value(s, "p::k", "\"landed\"");
	assert_false(tu_has_suffix_entry(f->dir, ".tmp"));
	/* Without a landing put the same call writes the key. */
	assert_int_equal(faucet_store_delete(s, "p::k"), 0);
	guard.expected = g1;
	guard.value = mine;
	assert_int_equal(faucet__store_put_guarded_if(s, &guard, 1, NULL, 0, &put, NULL, &written,
						      &then_written, &moved),
			 0);
	assert_true(written);
	assert_false(moved);
	tu_assert_value(s, "p::k", "\"mine\"");
	faucet_value_free(g1);
	faucet_value_free(mine);
	faucet_store_free(s);
}

/* ---- a compare-and-put batch that fails part-way ----------------------------- */

#define FB_PUTS 5
#define FB_DELS 2

/* The batch of the test below, every key as it expects: a part (absent,
 * put first), FB_PUTS keys replaced, FB_DELS deleted. */
static void fb_setup(faucet_store *s)
{
	char key[16];

	for (int i = 0; i < FB_PUTS; i++) {
		snprintf(key, sizeof(key), "p::k%d", i);
		tu_put(s, key, "\"old\"");
	}
	for (int i = 0; i < FB_DELS; i++) {
		snprintf(key, sizeof(key), "p::d%d", i);
		tu_put(s, key, "\"old\"");
	}
}

/* Each system call of a file store compare-and-put batch fails in turn.
 * A failure is never FAUCET_EUNKNOWN (a run that then found its part in
 * place would take the whole chunk as landed); no entry after the first
 * is written unless the first is (a run's marker part is never behind the
 * keys it records); a success wrote everything; no temp file is left. */
static void a_batch_failing_part_way_never_writes_ahead_of_its_first_entry(void **state)
{
	fixture *f = *state;
	faucet_value *old = tu_v("\"old\""), *part = tu_v("{\"images\":[]}"),
		     *nv = tu_v("\"new\"");
	faucet_store_guard g[1 + FB_PUTS + FB_DELS];
	char keys[1 + FB_PUTS + FB_DELS][16];
	size_t calls = 0, failures = 0;

	snprintf(keys[0], sizeof(keys[0]), "p::part");
	g[0] = (faucet_store_guard){keys[0], NULL, part};
	for (int i = 0; i < FB_PUTS; i++) {
		snprintf(keys[1 + i], sizeof(keys[1 + i]), "p::k%d", i);
		g[1 + i] = (faucet_store_guard){keys[1 + i], old, nv};
	}
	for (int i = 0; i < FB_DELS; i++) {
		snprintf(keys[1 + FB_PUTS + i], sizeof(keys[0]), "p::d%d", i);
		g[1 + FB_PUTS + i] = (faucet_store_guard){keys[1 + FB_PUTS + i], old, NULL};
	}
	faucet__durable_test_batch_size(2);
	for (size_t n = 0; n == 0 || n <= calls; n++) {
		char name[32], *dir;
		faucet_store *s;
		int written = 0, rc, first = 0, others = 0;

		(void)snprintf(name, sizeof(name), "run%zu", n);
		dir = tu_join(f->dir, name);
		s = open_store(dir);
		fb_setup(s);
		fault_start();
		fault_arm(n, FAULT_EIO);
		rc = faucet__store_compare_and_put_batch(s, g, 1 + FB_PUTS + FB_DELS, &written);
		if (n == 0)
			calls = fault_calls();
		failures += fault_fired() != 0;
		fault_stop();
		if (rc == FAUCET_EUNKNOWN)
			fail_msg("call %zu: a batch failure is FAUCET_EUNKNOWN (%s)", n,
				 faucet_error_last()->message);
		for (size_t i = 0; i < 1 + FB_PUTS + FB_DELS; i++) {
			faucet_value *v = NULL;
			int changed;

			assert_int_equal(faucet_store_get(s, keys[i], &v), 0);
			changed = !faucet_value_equal(v, g[i].expected);
			if (changed && !faucet_value_equal(v, g[i].value))
				fail_msg("call %zu: %s holds %s", n, keys[i],
					 v ? faucet_value_json(v) : "nothing");
			if (i == 0)
				first = changed;
			else
				others += changed;
			faucet_value_free(v);
		}
		if (rc == 0 && (!written || !first || others != FB_PUTS + FB_DELS))
			fail_msg("call %zu: success, but %d of %d entries written", n,
				 first + others, 1 + FB_PUTS + FB_DELS);
		if (rc != 0 && written)
			fail_msg("call %zu: failed, yet said written", n);
		if (others > 0 && !first)
			fail_msg("call %zu: %d entries written ahead of the first", n, others);
		if (tu_has_suffix_entry(dir, ".tmp"))
			fail_msg("call %zu: a temp file was left", n);
		faucet_store_free(s);
		free(dir);
	}
	faucet__durable_test_batch_size(0);
	assert_true(failures > 10);
	faucet_value_free(old);
	faucet_value_free(part);
	faucet_value_free(nv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		FAULT_TEST(a_failed_directory_sync_after_the_rename_is_outcome_unknown),
		FAULT_TEST(a_failed_sidecar_sync_is_a_failed_put),
		FAULT_TEST(a_failed_write_keeps_the_old_value_and_leaves_no_temp),
		FAULT_TEST(a_streamed_import_reports_exactly_what_landed),
		FAULT_TEST(a_delete_whose_lock_file_stays_succeeds_with_a_warning),
		FAULT_TEST(a_killed_writers_temp_file_is_repaired_and_a_live_ones_kept),
		FAULT_TEST(a_writer_whose_new_temp_file_was_repaired_away_takes_another),
		FAULT_TEST(a_symlinked_key_sidecar_is_not_followed),
		FAULT_TEST(a_put_landing_while_the_guards_sync_is_not_overwritten),
		FAULT_TEST(a_batch_failing_part_way_never_writes_ahead_of_its_first_entry),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
