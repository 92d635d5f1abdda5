/*
 * testutil.h - small helpers shared by the cmocka test programs.
 */
#ifndef FAUCET_TESTUTIL_H
#define FAUCET_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <faucet/faucet.h>

/* A fresh private directory under $TMPDIR (or /tmp); caller frees the path
 * and removes it with tu_rmrf(). */
char *tu_tempdir(void);
/* Remove a directory tree (best-effort, for cleanup). */
void tu_rmrf(const char *path);
/* path joined with name; caller frees. */
char *tu_join(const char *dir, const char *name);
/* Write bytes to a file (creating it); fails the test on error. */
void tu_write_file(const char *path, const void *data, size_t len);
/* Read a whole file; NULL when it does not exist.  *len may be NULL. */
char *tu_read_file(const char *path, size_t *len);
int tu_exists(const char *path);
/* Whether `name` is one of the file store's two writers' lock files, made
 * once by the first write and kept (src/stores/file.c, "The writers'
 * gate"). */
int tu_is_writers_lock(const char *name);
/* Number of directory entries (without . and .. and the file store's
 * writers' lock files); -1 if unreadable. */
int tu_count_entries(const char *dir);
/* Whether any entry's name ends with `suffix`. */
int tu_has_suffix_entry(const char *dir, const char *suffix);

/* cmocka fixture of tests that need only a fresh temporary directory:
 * *state is a tu_dir_fixture whose dir is removed again by teardown. */
typedef struct {
	char *dir;
} tu_dir_fixture;
int tu_dir_setup(void **state);
int tu_dir_teardown(void **state);
#define TU_DIR_TEST(t) cmocka_unit_test_setup_teardown(t, tu_dir_setup, tu_dir_teardown)

/* Parse a JSON literal, failing the test when it is invalid. */
faucet_value *tu_v(const char *json);
/* The JSON text of a string of n `fill` characters (malloc'd): a value of
 * megabytes, as a big run's rollback marker is. */
char *tu_big_string_json(size_t n, char fill);
/* Put a JSON literal under key, failing the test (with the reason) when
 * the put fails. */
void tu_put(faucet_store *s, const char *key, const char *json);
/* Compare-and-put JSON literals (expected NULL = no entry), failing the test
 * when the call fails; returns whether it wrote. */
int tu_cas(faucet_store *s, const char *key, const char *expected, const char *json);
/* Assert the store holds exactly `json` (compared as JSON) under key, or
 * nothing when json is NULL. */
void tu_assert_value(faucet_store *s, const char *key, const char *json);
/* Assert the last error's message contains `needle`. */
void tu_assert_error_contains(const char *needle);
/* Assert a strarray equals the NULL-terminated list of strings. */
void tu_assert_strings(const faucet_strarray *arr, ...);

#endif
