/*
 * testutil.c - helpers for the test programs (see testutil.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

char *tu_tempdir(void)
{
	const char *base = getenv("TMPDIR");
	char *path;

	if (base == NULL || *base == '\0')
		base = "/tmp";
	if (asprintf(&path, "%s/faucet-test-XXXXXX", base) < 0)
		fail_msg("asprintf");
	if (mkdtemp(path) == NULL)
		fail_msg("mkdtemp %s: %s", path, strerror(errno));
	return path;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	(void)remove(path);
	return 0;
}

void tu_rmrf(const char *path)
{
	(void)nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

char *tu_join(const char *dir, const char *name)
{
	char *p;

	if (asprintf(&p, "%s/%s", dir, name) < 0)
		fail_msg("asprintf");
	return p;
}

void tu_write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	if (f == NULL)
		fail_msg("open %s: %s", path, strerror(errno));
	if (len > 0 && fwrite(data, 1, len, f) != len)
		fail_msg("write %s", path);
	if (fclose(f) != 0)
		fail_msg("close %s", path);
}

char *tu_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, n = 0, got;

	if (f == NULL)
		return NULL;
	do {
		if (n + 4096 + 1 > cap) {
			cap = (cap + 4096) * 2;
			buf = realloc(buf, cap);
			if (buf == NULL)
				fail_msg("realloc");
		}
		got = fread(buf + n, 1, 4096, f);
		n += got;
	} while (got > 0);
	fclose(f);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

int tu_exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

int tu_is_writers_lock(const char *name)
{
	return strcmp(name, ".faucet-writers.lock") == 0 ||
	       strcmp(name, ".faucet-writers.gate") == 0;
}

int tu_count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
		    !tu_is_writers_lock(e->d_name))
			n++;
	}
	closedir(d);
	return n;
}

int tu_has_suffix_entry(const char *dir, const char *suffix)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t sl = strlen(suffix);
	int found = 0;

	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		size_t nl = strlen(e->d_name);
		if (nl >= sl && strcmp(e->d_name + nl - sl, suffix) == 0)
			found = 1;
	}
	closedir(d);
	return found;
}

int tu_dir_setup(void **state)
{
	tu_dir_fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->dir = tu_tempdir();
	*state = f;
	return 0;
}

int tu_dir_teardown(void **state)
{
	tu_dir_fixture *f = *state;

	tu_rmrf(f->dir);
	free(f->dir);
	free(f);
	return 0;
}

faucet_value *tu_v(const char *json)
{
	faucet_value *v = NULL;

	if (faucet_value_parse(&v, json, strlen(json)) != 0)
		fail_msg("bad JSON literal %s: %s", json, faucet_error_last()->message);
	return v;
}

char *tu_big_string_json(size_t n, char fill)
{
	char *t = malloc(n + 3);

	assert_non_null(t);
	t[0] = '"';
	memset(t + 1, fill, n);
	t[n + 1] = '"';
	t[n + 2] = '\0';
	return t;
}

void tu_put(faucet_store *s, const char *key, const char *json)
{
	faucet_value *v = tu_v(json);

	if (faucet_store_put(s, key, v) != 0)
		fail_msg("put '%s' = %s: %s", key, json, faucet_error_last()->message);
	faucet_value_free(v);
}

int tu_cas(faucet_store *s, const char *key, const char *expected, const char *json)
{
	faucet_value *e = expected ? tu_v(expected) : NULL, *v = tu_v(json);
	int written = -1;

	if (faucet_store_compare_and_put(s, key, e, v, &written) != 0)
		fail_msg("compare-and-put '%s': %s", key, faucet_error_last()->message);
	faucet_value_free(e);
	faucet_value_free(v);
	assert_true(written == 0 || written == 1);
	return written;
}

void tu_assert_value(faucet_store *s, const char *key, const char *json)
{
	faucet_value *got = NULL, *want;
	int rc = faucet_store_get(s, key, &got);

	if (rc != 0)
		fail_msg("get %s failed: %s", key, faucet_error_last()->message);
	if (json == NULL) {
		if (got != NULL)
			fail_msg("expected no entry under %s, found %s", key, faucet_value_json(got));
		return;
	}
	if (got == NULL)
		fail_msg("expected %s under %s, found no entry", json, key);
	want = tu_v(json);
	if (!faucet_value_equal(got, want))
		fail_msg("under %s: expected %s, found %s", key, json, faucet_value_json(got));
	faucet_value_free(want);
	faucet_value_free(got);
}

void tu_assert_error_contains(const char *needle)
{
	const char *msg = faucet_error_last()->message;

	if (strstr(msg, needle) == NULL)
		fail_msg("expected the error to contain \"%s\", got \"%s\"", needle, msg);
}

void tu_assert_strings(const faucet_strarray *arr, ...)
{
	va_list ap;
	size_t i = 0;
	const char *want;

	va_start(ap, arr);
	while ((want = va_arg(ap, const char *)) != NULL) {
		if (i >= arr->count)
			fail_msg("expected \"%s\" at index %zu, array has %zu entries", want, i, arr->count);
		if (strcmp(arr->strings[i], want) != 0)
			fail_msg("index %zu: expected \"%s\", got \"%s\"", i, want, arr->strings[i]);
		i++;
	}
	va_end(ap);
	if (i != arr->count)
		fail_msg("expected %zu entries, array has %zu (extra: \"%s\")", i, arr->count,
			 arr->strings[i]);
}
