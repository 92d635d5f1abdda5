/*
 * test_abi.c - the library side of the ABI promises of include/faucet/:
 * the version the library reports at run time is the headers' version, and
 * every options struct that may grow is read by its `version` field - an
 * uninitialised (0) or newer-than-the-library struct is refused before
 * anything happens, an older, smaller one is read with defaults for the
 * fields it lacks.  (Which symbols the shared library exports is checked by
 * tests/abi/test_exports.sh; the ABI itself by scripts/abi-check.sh.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "internal.h"

static void version_at_run_time_is_the_headers(void **state)
{
	char text[32];

	(void)state;
	assert_string_equal(faucet_version(), FAUCET_VERSION_STRING);
	assert_int_equal(faucet_version_number(), FAUCET_VERSION_NUMBER);
	(void)snprintf(text, sizeof(text), "%d.%d.%d", FAUCET_VERSION_MAJOR, FAUCET_VERSION_MINOR,
		       FAUCET_VERSION_PATCH);
	assert_string_equal(text, FAUCET_VERSION_STRING);
	assert_true(FAUCET_VERSION_MAJOR >= 1);
}

/* A stand-in for an options struct that grew from version 1 (a, b) to
 * version 2 (a, b, c). */
typedef struct {
	unsigned version;
	int a;
	const char *b;
} opts_v1;

typedef struct {
	unsigned version;
	int a;
	const char *b;
	long c;
} opts_v2;

static const size_t grown_sizes[] = {sizeof(opts_v1), sizeof(opts_v2)};

static void an_older_smaller_struct_is_read_with_defaults(void **state)
{
	opts_v1 old = {1, 7, "seven"};
	opts_v2 now;

	(void)state;
	memset(&now, 0x5a, sizeof(now));
	assert_int_equal(faucet__options_load(&now, sizeof(now), &old, grown_sizes, 2, "opts"), 0);
	assert_int_equal(now.version, 2);
	assert_int_equal(now.a, 7);
	assert_string_equal(now.b, "seven");
	assert_int_equal(now.c, 0); /* the field version 1 lacks: its default */
}

static void unknown_versions_are_refused(void **state)
{
	opts_v2 given = {3, 1, "x", 2}, now;

	(void)state;
	assert_int_equal(faucet__options_load(&now, sizeof(now), &given, grown_sizes, 2, "opts"),
			 FAUCET_EINVALID);
	tu_assert_error_contains("opts version 3 is not one this libfaucet");
	given.version = 0;
	assert_int_equal(faucet__options_load(&now, sizeof(now), &given, grown_sizes, 2, "opts"),
			 FAUCET_EINVALID);
	tu_assert_error_contains("_INIT macro");
}

/* Each public options struct: version 0 (zero-initialised without the
 * _INIT macro) and version current + 1 are FAUCET_EINVALID naming the
 * struct, and nothing is created. */
static void open_config_checks_the_version(void **state)
{
	faucet_store_config cfg = FAUCET_STORE_CONFIG_INIT;
	faucet_store *s = NULL;

	(void)state;
	cfg.type = "memory";
	assert_int_equal(faucet_store_open_config(&s, &cfg), 0);
	faucet_store_free(s);
	s = NULL;
	for (unsigned v = 0; v <= FAUCET_STORE_CONFIG_VERSION + 1; v += FAUCET_STORE_CONFIG_VERSION + 1) {
		cfg.version = v;
		assert_int_equal(faucet_store_open_config(&s, &cfg), FAUCET_EINVALID);
		assert_null(s);
		tu_assert_error_contains("faucet_store_config version");
	}
}

static void file_options_check_the_version(void **state)
{
	tu_dir_fixture *f = *state;
	faucet_file_options opts = FAUCET_FILE_OPTIONS_INIT;
	char *root = tu_join(f->dir, "store");
	faucet_store *s = NULL;

	opts.version = FAUCET_FILE_OPTIONS_VERSION + 1;
	assert_int_equal(faucet_store_open_file(&s, root, &opts), FAUCET_EINVALID);
	assert_null(s);
	tu_assert_error_contains("faucet_file_options version");
	opts.version = 0;
	assert_int_equal(faucet_store_open_file(&s, root, &opts), FAUCET_EINVALID);
	opts.version = FAUCET_FILE_OPTIONS_VERSION;
	assert_int_equal(faucet_store_open_file(&s, root, &opts), 0);
	tu_put(s, "p::r", "1");
	faucet_store_free(s);
	free(root);
}

static void check_context_checks_the_version(void **state)
{
	faucet_check_context ctx = FAUCET_CHECK_CONTEXT_INIT;
	faucet_check_report *report = NULL;
	faucet_store *s;

	(void)state;
	assert_int_equal(faucet_store_open_memory(&s), 0);
	ctx.version = FAUCET_CHECK_CONTEXT_VERSION + 1;
	assert_int_equal(faucet_store_check(s, &ctx, &report), FAUCET_EINVALID);
	assert_null(report);
	tu_assert_error_contains("faucet_check_context version");
	ctx.version = FAUCET_CHECK_CONTEXT_VERSION;
	assert_int_equal(faucet_store_check(s, &ctx, &report), 0);
	assert_non_null(report);
	faucet_check_report_free(report);
	faucet_store_free(s);
}

/* A memory store in *s and a document of one key for it, p::r = 5. */
static faucet_export *one_key_export(faucet_store **s)
{
	faucet_export *e;
	faucet_value *v = tu_v("5");

	assert_int_equal(faucet_store_open_memory(s), 0);
	assert_int_equal(faucet_export_new(&e, "p"), 0);
	assert_int_equal(faucet_export_set(e, "p::r", v), 0);
	faucet_value_free(v);
	return e;
}

static void import_options_check_the_version(void **state)
{
	faucet_import_options opts = FAUCET_IMPORT_OPTIONS_INIT;
	faucet_import_report report = FAUCET_IMPORT_REPORT_INIT;
	faucet_store *s;
	faucet_export *e = one_key_export(&s);

	(void)state;
	opts.version = 0;
	assert_int_equal(faucet_import_namespace_ex(s, e, &opts, &report), FAUCET_EINVALID);
	tu_assert_error_contains("faucet_import_options version 0");
	faucet_import_report_dispose(&report);
	tu_assert_value(s, "p::r", NULL); /* refused before anything was written */
	opts.version = FAUCET_IMPORT_OPTIONS_VERSION;
	assert_int_equal(faucet_import_namespace_ex(s, e, &opts, &report), 0);
	assert_null(report.error);
	faucet_import_report_dispose(&report);
	tu_assert_value(s, "p::r", "5");
	faucet_export_free(e);
	faucet_store_free(s);
}

/* The import report is a result struct: its caller says which version it
 * allocated, and an import refuses a report it cannot know the size of. */
static void the_import_report_carries_its_version(void **state)
{
	faucet_import_report report;
	faucet_store *s;
	faucet_export *e = one_key_export(&s);

	(void)state;
	memset(&report, 0, sizeof(report));
	assert_int_equal(faucet_import_namespace_ex(s, e, NULL, &report), FAUCET_EINVALID);
	tu_assert_error_contains("faucet_import_report version 0");
	report.version = FAUCET_IMPORT_REPORT_VERSION + 1;
	assert_int_equal(faucet_import_namespace_ex(s, e, NULL, &report), FAUCET_EINVALID);
	tu_assert_value(s, "p::r", NULL); /* refused before anything was written */
	assert_int_equal(faucet_import_report_init(&report, FAUCET_IMPORT_REPORT_VERSION + 1),
			 FAUCET_EINVALID);
	assert_int_equal(faucet_import_report_init(&report, FAUCET_IMPORT_REPORT_VERSION), 0);
	assert_int_equal(report.version, FAUCET_IMPORT_REPORT_VERSION);
	assert_int_equal(faucet_import_namespace_ex(s, e, NULL, &report), 0);
	assert_int_equal(report.version, FAUCET_IMPORT_REPORT_VERSION);
	assert_int_equal(report.written.count, 1);
	faucet_import_report_dispose(&report);
	/* Dispose keeps the version, so the report can be used again. */
	assert_int_equal(report.version, FAUCET_IMPORT_REPORT_VERSION);
	assert_int_equal(report.written.count, 0);
	tu_assert_value(s, "p::r", "5");
	faucet_export_free(e);
	faucet_store_free(s);
}

static void backfill_run_options_check_the_version(void **state)
{
	static const char *const argv[] = {"true", NULL};
	faucet_backfill_range range = {"2026-01-01", "2026-01-02", "1d", "UTC", NULL};
	faucet_backfill_run_options opts = FAUCET_BACKFILL_RUN_OPTIONS_INIT;
	faucet_backfill_result result;
	faucet_backfill_plan *plan;
	faucet_strarray keys = {NULL, 0};
	faucet_store *s;

	(void)state;
	assert_int_equal(faucet_store_open_memory(&s), 0);
	assert_int_equal(faucet_backfill_plan_new(&plan, &range), 0);
	opts.pipeline = "p";
	opts.argv = argv;
	opts.version = FAUCET_BACKFILL_RUN_OPTIONS_VERSION + 1;
	assert_int_equal(faucet_backfill_run(s, plan, &opts, &result), FAUCET_EINVALID);
	tu_assert_error_contains("faucet_backfill_run_options version");
	assert_int_equal(faucet_store_list(s, "", &keys), 0);
	assert_int_equal(keys.count, 0); /* nothing ran, nothing was written */
	faucet_strarray_dispose(&keys);
	faucet_backfill_plan_free(plan);
	faucet_store_free(s);
}

/* An init of an older version writes that version's struct and no more:
 * the bytes of a smaller, older caller's struct are all it touches. */
static void an_older_init_writes_only_its_version(void **state)
{
	static const opts_v2 defaults = {2, 3, "three", 4};
	opts_v2 got;
	unsigned char tail[sizeof(got) - sizeof(opts_v1)];

	(void)state;
	memset(&got, 0x5a, sizeof(got));
	memset(tail, 0x5a, sizeof(tail));
	assert_int_equal(faucet__options_init(&got, &defaults, grown_sizes, 1, 2, "opts"), 0);
	assert_int_equal(got.version, 1);
	assert_int_equal(got.a, 3);
	assert_string_equal(got.b, "three");
	assert_memory_equal((unsigned char *)&got + sizeof(opts_v1), tail, sizeof(tail));
	assert_int_equal(faucet__options_init(NULL, &defaults, grown_sizes, 1, 2, "opts"),
			 FAUCET_EINVALID);
}

/* `got` (filled with junk, then initialised) equals `want` (zeroed, then
 * given its non-zero defaults) byte for byte: every other field is 0/NULL. */
#define ASSERT_INIT_DEFAULTS(type, init, ver, ...)                           \
	do {                                                                 \
		type got_, want_;                                            \
		memset(&got_, 0x5a, sizeof(got_));                           \
		memset(&want_, 0, sizeof(want_));                            \
		want_.version = (ver);                                       \
		__VA_ARGS__;                                                 \
		assert_int_equal(init(&got_, (ver)), 0);                     \
		assert_memory_equal(&got_, &want_, sizeof(got_));            \
	} while (0)

/* Version 0 and one above the current are FAUCET_EINVALID naming the struct,
 * and the caller's struct is left alone. */
#define ASSERT_INIT_REFUSES(type, init, current, name)                        \
	do {                                                                  \
		type got_;                                                    \
		memset(&got_, 0x5a, sizeof(got_));                            \
		assert_int_equal(init(&got_, 0), FAUCET_EINVALID);            \
		tu_assert_error_contains(name " version 0 is not one");       \
		assert_int_equal(init(&got_, (current) + 1), FAUCET_EINVALID); \
		tu_assert_error_contains(name " version");                    \
		assert_int_equal(got_.version, 0x5a5a5a5au);                  \
		assert_int_equal(init(NULL, (current)), FAUCET_EINVALID);     \
	} while (0)

/* Each faucet_*_options_init gives what its _INIT macro documents: the
 * version asked for, every field zero/NULL (their documented defaults) but
 * the process options' descriptors (-1, inherited). */
static void each_options_init_sets_the_defaults(void **state)
{
	(void)state;
	ASSERT_INIT_DEFAULTS(faucet_file_options, faucet_file_options_init,
			     FAUCET_FILE_OPTIONS_VERSION, (void)0);
	ASSERT_INIT_DEFAULTS(faucet_import_options, faucet_import_options_init,
			     FAUCET_IMPORT_OPTIONS_VERSION, (void)0);
	ASSERT_INIT_DEFAULTS(faucet_backfill_run_options, faucet_backfill_run_options_init,
			     FAUCET_BACKFILL_RUN_OPTIONS_VERSION, (void)0);
	ASSERT_INIT_DEFAULTS(faucet_run_options, faucet_run_options_init,
			     FAUCET_RUN_OPTIONS_VERSION, (void)0);
	ASSERT_INIT_DEFAULTS(faucet_undo_options, faucet_undo_options_init,
			     FAUCET_UNDO_OPTIONS_VERSION, (void)0);
	ASSERT_INIT_DEFAULTS(faucet_check_context, faucet_check_context_init,
			     FAUCET_CHECK_CONTEXT_VERSION, (void)0);
	ASSERT_INIT_DEFAULTS(faucet_proc_options, faucet_proc_options_init,
			     FAUCET_PROC_OPTIONS_VERSION,
			     want_.fd[0] = want_.fd[1] = want_.fd[2] = -1);

	ASSERT_INIT_REFUSES(faucet_file_options, faucet_file_options_init,
			    FAUCET_FILE_OPTIONS_VERSION, "faucet_file_options");
	ASSERT_INIT_REFUSES(faucet_import_options, faucet_import_options_init,
			    FAUCET_IMPORT_OPTIONS_VERSION, "faucet_import_options");
	ASSERT_INIT_REFUSES(faucet_backfill_run_options, faucet_backfill_run_options_init,
			    FAUCET_BACKFILL_RUN_OPTIONS_VERSION, "faucet_backfill_run_options");
	ASSERT_INIT_REFUSES(faucet_run_options, faucet_run_options_init,
			    FAUCET_RUN_OPTIONS_VERSION, "faucet_run_options");
	ASSERT_INIT_REFUSES(faucet_undo_options, faucet_undo_options_init,
			    FAUCET_UNDO_OPTIONS_VERSION, "faucet_undo_options");
	ASSERT_INIT_REFUSES(faucet_check_context, faucet_check_context_init,
			    FAUCET_CHECK_CONTEXT_VERSION, "faucet_check_context");
	ASSERT_INIT_REFUSES(faucet_proc_options, faucet_proc_options_init,
			    FAUCET_PROC_OPTIONS_VERSION, "faucet_proc_options");
}

/* An older version's init leaves the fields it lacks untouched, and the
 * struct it gives is one the library then reads (the same loader). */
static void an_older_run_or_undo_init_is_read_back(void **state)
{
	faucet_undo_options undo;
	faucet_run_options ro;
	faucet_run *r = NULL;
	faucet_store *s;

	(void)state;
	memset(&undo, 0x5a, sizeof(undo));
	assert_int_equal(faucet_undo_options_init(&undo, 2), 0);
	assert_int_equal(undo.version, 2);
	assert_int_equal(undo.wait_ms, 0);
	assert_int_equal(undo.max_conflicts, (size_t)0x5a5a5a5a5a5a5a5aULL); /* version 3's */
	memset(&ro, 0x5a, sizeof(ro));
	assert_int_equal(faucet_run_options_init(&ro, 1), 0);
	assert_int_equal(ro.version, 1);
	assert_null(ro.row);
	assert_int_equal(ro.exclusive, 0x5a5a5a5a); /* version 2's */
	assert_int_equal(faucet_store_open_memory(&s), 0);
	assert_int_equal(faucet_run_begin(&r, s, "p", &ro), 0);
	assert_int_equal(faucet_run_end(r, FAUCET_RUN_OK, 0, NULL), 0);
	faucet_run_free(r);
	faucet_store_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(version_at_run_time_is_the_headers),
		cmocka_unit_test(an_older_smaller_struct_is_read_with_defaults),
		cmocka_unit_test(unknown_versions_are_refused),
		cmocka_unit_test(open_config_checks_the_version),
		TU_DIR_TEST(file_options_check_the_version),
		cmocka_unit_test(check_context_checks_the_version),
		cmocka_unit_test(import_options_check_the_version),
		cmocka_unit_test(the_import_report_carries_its_version),
		cmocka_unit_test(backfill_run_options_check_the_version),
		cmocka_unit_test(an_older_init_writes_only_its_version),
		cmocka_unit_test(each_options_init_sets_the_defaults),
		cmocka_unit_test(an_older_run_or_undo_init_is_read_back),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
