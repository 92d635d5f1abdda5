/*
 * test_file_store.c - the file state store: names on disk, atomic durable
 * writes, legacy-name migration, the compare-and-put lock, listing, the
 * doctor probe, and the failure paths (corrupt, sealed and unreadable files,
 * failed writes, busy and orphaned locks).
 *
 * Each test works in a fresh directory under $TMPDIR.  Tests that need to
 * order events between threads use pipes and barriers, never sleeps.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/sha.h>

#include "testutil.h"
#include "common/durable.h"
#include "internal.h"
#include "stores/file_internal.h"
#include "store/open_internal.h"
#include <faucet/keys.h>

typedef struct {
	char *dir;
	faucet_store *s;
} fixture;

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));

	f->dir = tu_tempdir();
	if (faucet_store_open_file(&f->s, f->dir, NULL) != 0)
		fail_msg("open: %s", faucet_error_last()->message);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;

	faucet_store_free(f->s);
	tu_rmrf(f->dir);
	free(f->dir);
	free(f);
	return 0;
}

static faucet_store *open_at(const char *root)
{
	faucet_store *s = NULL;

	if (faucet_store_open_file(&s, root, NULL) != 0)
		fail_msg("open %s: %s", root, faucet_error_last()->message);
	return s;
}

static void list_into(faucet_store *s, const char *prefix, faucet_strarray *out)
{
	if (faucet_store_list(s, prefix, out) != 0)
		fail_msg("list '%s': %s", prefix, faucet_error_last()->message);
}

/* The directory's entry names, sorted, as one "a|b|c" string (the
 * writers' lock files left out, as by tu_count_entries). */
static char *dir_names(const char *dir)
{
	faucet_strarray names = {NULL, 0};
	char *joined = calloc(1, 1);
	size_t len = 0;
	DIR *d = opendir(dir);
	struct dirent *e;

	assert_non_null(d);
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
		    !tu_is_writers_lock(e->d_name))
			assert_int_equal(faucet__strarray_push(&names, e->d_name), 0);
	}
	closedir(d);
	faucet__strarray_sort_unique(&names);
	for (size_t i = 0; i < names.count; i++) {
		size_t n = strlen(names.strings[i]);
		joined = realloc(joined, len + n + 2);
		if (i > 0)
			joined[len++] = '|';
		memcpy(joined + len, names.strings[i], n + 1);
		len += n;
	}
	faucet_strarray_dispose(&names);
	return joined;
}

static void assert_dir_names(const char *dir, const char *want)
{
	char *got = dir_names(dir);

	if (strcmp(got, want) != 0)
		fail_msg("directory %s holds \"%s\", expected \"%s\"", dir, got, want);
	free(got);
}

static char *stem_of(const char *key)
{
	char stem[FILE_STEM_MAX + 1];

	(void)faucet_file__stem(key, stem);
	return strdup(stem);
}

static char *decoded(const char *stem)
{
	char key[FILE_KEY_CAP];

	return faucet_file__decode_stem(stem, strlen(stem), key) ? strdup(key) : NULL;
}

static void assert_stem(const char *key, const char *want)
{
	char *got = stem_of(key);

	assert_string_equal(got, want);
	free(got);
}

static void assert_decodes(const char *stem, const char *want)
{
	char *got = decoded(stem);

	if (want == NULL) {
		if (got != NULL)
			fail_msg("stem \"%s\" decoded to \"%s\", expected no key", stem, got);
		return;
	}
	if (got == NULL)
		fail_msg("stem \"%s\" did not decode, expected \"%s\"", stem, want);
	assert_string_equal(got, want);
	free(got);
}

/* ---- names ------------------------------------------------------------- */

static void safe_filename_escapes_colon_and_slash(void **state)
{
	(void)state;
	assert_stem("pipeline:rest:issues", "pipeline%3Arest%3Aissues");
	assert_stem("plain_key-1.v2", "plain_key-1.v2");
	/* Owner-scoped ids must not become nested directories. */
	assert_stem("acme/erp::invoices", "acme%2Ferp%3A%3Ainvoices");
	assert_int_equal(faucet_validate_key("acme/erp::invoices"), 0);
	assert_int_equal(faucet_validate_key("a b"), FAUCET_EINVALID);
}

static void colon_keys_round_trip_without_colons_on_disk(void **state)
{
	fixture *f = *state;
	char *path = tu_join(f->dir, "pipeline%3Arest%3Aissues.json");
	char *names;

	tu_put(f->s, "pipeline:rest:issues", "{\"cursor\":\"z\"}");
	tu_assert_value(f->s, "pipeline:rest:issues", "{\"cursor\":\"z\"}");
	assert_true(tu_exists(path));
	names = dir_names(f->dir);
	assert_null(strchr(names, ':'));
	free(names);
	free(path);
}

static void safe_filename_escapes_uppercase_and_round_trips(void **state)
{
	static const char *const keys[] = {"Users::x", "a/B:c", "plain", "Z", "x.Y-z_0"};
	char *upper, *lower;

	(void)state;
	assert_stem("Users::x", "%55sers%3A%3Ax");
	/* On a case-insensitive filesystem the two names must still differ. */
	upper = stem_of("Users::x");
	lower = stem_of("users::x");
	for (char *p = upper; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	assert_string_not_equal(upper, lower);
	free(upper);
	free(lower);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		char *stem = stem_of(keys[i]);
		assert_decodes(stem, keys[i]);
		free(stem);
	}
}

static void legacy_stems_decode_and_bad_escapes_are_rejected(void **state)
{
	(void)state;
	/* Names written before capitals were escaped still decode. */
	assert_decodes("Users%3Ax", "Users:x");
	assert_decodes("users%3ax", "users:x"); /* lower-case hex digits too */
	assert_decodes("bad%Z", NULL);
	assert_decodes("bad%4", NULL);
	assert_decodes("bad%zz", NULL);
	assert_decodes("a~b", NULL);        /* hashed: only the sidecar knows */
	assert_decodes("a%25b", NULL);      /* '%' is no key character */
	assert_decodes("a%7Eb", NULL);      /* nor is '~' */
	assert_decodes("a%00b", NULL);
	assert_decodes(".hidden", NULL);    /* a key never starts with a dot */
	assert_decodes("a%2F%2Fb", NULL);   /* "a//b" reads as a path */
	assert_decodes("a%2Fb", "a/b");
	assert_decodes("%2Fa", NULL);       /* nor may '/' start or end a key */
	assert_decodes("a%2F", NULL);
	assert_decodes("a%2F.b", NULL);     /* nor a segment start with a dot */
	assert_decodes("%2Ea", NULL);       /* an escaped dot is still a dot */
	assert_decodes("a%C3%A9", NULL);    /* only ASCII */
	assert_decodes("a%7F", NULL);
	assert_decodes("a b", NULL);
	assert_decodes("", NULL);
}

static void long_keys_hash_into_a_bounded_stem(void **state)
{
	char key[300], other[300], stem[FILE_STEM_MAX + 1], other_stem[FILE_STEM_MAX + 1];
	size_t n;
	char *tilde;

	(void)state;
	strcpy(key, "p::");
	for (int i = 0; i < 120; i++)
		strcat(key, "A:");
	strcpy(other, "p::");
	for (int i = 0; i < 119; i++)
		strcat(other, "A:");
	strcat(other, "B");
	n = faucet_file__stem(key, stem);
	assert_true(n <= FILE_STEM_MAX);
	assert_int_equal(n, strlen(stem));
	assert_true(faucet_file__stem_is_hashed(stem, n));
	/* The original faucet names this key exactly so (byte compatibility). */
	assert_string_equal(stem, "p%3A%3A%41%3A%41%3A%41%3A%41%3A%41%3A%41%3A%41%3A%41%3A%41%3A"
				  "%41%3A%41%3A%41%3A%41%3A%41%3A%41"
				  "~b6a37d936e7bc50370555cda8d6e9830687ea23796204fb334b11a8eaf1db8a5");
	/* The readable prefix never ends inside an escape. */
	tilde = strchr(stem, '~');
	assert_true(tilde[-1] != '%' && tilde[-2] != '%');
	(void)faucet_file__stem(other, other_stem);
	assert_string_not_equal(stem, other_stem);
	assert_stem("pipe::row::parent:parent:parent:parent:parent:parent:parent:parent:parent:"
		    "parent:parent:parent:parent:parent:parent:parent:parent:parent:parent:"
		    "parent:parent:parent:parent:parent:parent:parent:parent:parent:parent:"
		    "parent:parent:parent:parent:parent:",
		    "pipe%3A%3Arow%3A%3Aparent%3Aparent%3Aparent%3Aparent%3Aparent%3Aparent"
		    "%3Aparent%3Aparent%3Apare"
		    "~aa708a6d9c24ab46fb4f192be2c74e4b9af6e39fd10e2346634dc80df8096e10");
}

static void quiet_validation_agrees_with_validate_key(void **state)
{
	static const char *const cases[] = {
		"a", "A", "p::row", "acme/erp::x", "a/b/c", ".x", "x.", "a//b", "/a", "a/",
		"a/.b", "a/b.", "a b", "a%b", "a~b", "", "..", "a:b:c", "a\tb", "-_.:/",
		"x/-", "a/./b", "UPPER::lower", "k\x7f", "\xc3\xa9",
	};
	char big[300];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int quiet = faucet_file__key_is_valid(cases[i], strlen(cases[i]));
		int loud = faucet_validate_key(cases[i]) == 0;
		if (quiet != loud)
			fail_msg("\"%s\": quiet %d, validate_key %d", cases[i], quiet, loud);
	}
	/* Every byte value, inside a key. */
	for (int c = 1; c < 256; c++) {
		char key[4] = {'a', (char)c, 'b', '\0'};
		int quiet = faucet_file__key_is_valid(key, 3);
		if (quiet != (faucet_validate_key(key) == 0))
			fail_msg("byte 0x%02x: quiet %d, validate_key disagrees", c, quiet);
	}
	memset(big, 'k', sizeof(big));
	for (size_t len = 250; len < 260; len++) {
		big[len] = '\0';
		assert_int_equal(faucet_file__key_is_valid(big, len), faucet_validate_key(big) == 0);
		big[len] = 'k';
	}
}

static void temp_path_is_unique_and_not_pid_derived(void **state)
{
	char a[FILE_NAME_CAP], b[FILE_NAME_CAP], pid[32], *copy, *seg, *save = NULL;
	char child_token[33] = {0};
	int fds[2];
	pid_t child;

	(void)state;
	assert_int_equal(faucet_file__temp_name("k", "json", a, sizeof(a)), 0);
	assert_int_equal(faucet_file__temp_name("k", "json", b, sizeof(b)), 0);
	assert_string_not_equal(a, b);
	assert_int_equal(strncmp(a, "k.", 2), 0);
	assert_int_equal(strcmp(a + strlen(a) - strlen(".json.tmp"), ".json.tmp"), 0);
	/* No dotted segment is the process id: containers sharing a volume all
	 * run as pid 1. */
	snprintf(pid, sizeof(pid), "%ld", (long)getpid());
	copy = strdup(a);
	for (seg = strtok_r(copy, ".", &save); seg; seg = strtok_r(NULL, ".", &save))
		assert_string_not_equal(seg, pid);
	free(copy);
	/* The token is 32 hex digits, the same for every write of the process. */
	assert_int_equal(strspn(a + 2, "0123456789abcdef"), 32);
	assert_memory_equal(a + 2, b + 2, 32);

	/* A forked child draws a token of its own. */
	assert_int_equal(pipe(fds), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		char c[FILE_NAME_CAP];
		int ok = faucet_file__temp_name("k", "json", c, sizeof(c)) == 0;
		ssize_t w = ok ? write(fds[1], c + 2, 32) : -1;
		_exit(w == 32 ? 0 : 1);
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], child_token, 32), 32);
	close(fds[0]);
	{
		int status;
		assert_int_equal(waitpid(child, &status, 0), child);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	assert_int_equal(strspn(child_token, "0123456789abcdef"), 32);
	assert_false(memcmp(child_token, a + 2, 32) == 0);
}

/* ---- get / put / delete -------------------------------------------------- */

static void missing_key_is_no_entry(void **state)
{
	fixture *f = *state;
	faucet_value *v = (faucet_value *)0x1;

	assert_int_equal(faucet_store_get(f->s, "nope", &v), 0);
	assert_null(v);
	assert_string_equal(faucet_store_backend_name(f->s), "file");
}

static void root_is_created_lazily_with_owner_only_modes(void **state)
{
	fixture *f = *state;
	char *nested = tu_join(f->dir, "nested");
	char *root = tu_join(nested, "state");
	char *file, *sidecar;
	faucet_store *s = open_at(root);
	faucet_value *v = NULL;
	struct stat st;
	char key[200];

	/* Reading, listing and deleting create nothing. */
	assert_int_equal(faucet_store_get(s, "k", &v), 0);
	assert_null(v);
	assert_int_equal(faucet_store_delete(s, "k"), 0);
	assert_false(tu_exists(nested));

	tu_put(s, "k", "\"v\"");
	assert_int_equal(stat(root, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0700);
	assert_int_equal(stat(nested, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	file = tu_join(root, "k.json");
	assert_int_equal(stat(file, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	free(file);

	/* Lock files and sidecars are owner-only too. */
	assert_int_equal(tu_cas(s, "k", "\"v\"", "\"w\""), 1);
	file = tu_join(root, "k.json.lock");
	assert_int_equal(stat(file, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	free(file);
	memset(key, 'q', sizeof(key));
	memcpy(key, "p::", 3);
	key[180] = '\0';
	tu_put(s, key, "1");
	{
		char *stem = stem_of(key), *name;
		assert_int_equal(asprintf(&name, "%s.key", stem), (int)strlen(stem) + 4);
		sidecar = tu_join(root, name);
		assert_int_equal(stat(sidecar, &st), 0);
		assert_int_equal(st.st_mode & 0777, 0600);
		free(sidecar);
		free(name);
		free(stem);
	}
	faucet_store_free(s);
	free(root);
	free(nested);
}

static void put_then_get_round_trips(void **state)
{
	fixture *f = *state;

	tu_put(f->s, "github_issues", "{\"cursor\":\"abc\",\"n\":42,\"nested\":{\"flag\":true}}");
	tu_assert_value(f->s, "github_issues", "{\"cursor\":\"abc\",\"n\":42,\"nested\":{\"flag\":true}}");
}

static void values_keep_every_digit_and_the_file_bytes(void **state)
{
	fixture *f = *state;
	static const char text[] =
		"{\"max\":18446744073709551615,\"min\":-9223372036854775808,\"tenth\":0.1,"
		"\"small\":2.25e-7,\"huge\":1e300,\"nested\":{\"a\":{\"b\":[1,{\"c\":null}],\"d\":[]}},"
		"\"text\":\"caf\xc3\xa9 \xf0\x9f\x98\x80 \\\"q\\\"\"}";
	char *path = tu_join(f->dir, "fidelity.json");
	faucet_value *got = NULL;
	char *first, *second;
	size_t len1, len2;

	tu_put(f->s, "fidelity", text);
	first = tu_read_file(path, &len1);
	/* Stored compact, exactly the value's text. */
	assert_int_equal(len1, strlen(text));
	assert_memory_equal(first, text, len1);
	/* Read back and written again: the file does not change by one byte. */
	assert_int_equal(faucet_store_get(f->s, "fidelity", &got), 0);
	assert_non_null(got);
	assert_string_equal(faucet_value_json(got), text);
	assert_int_equal(faucet_store_put(f->s, "fidelity", got), 0);
	second = tu_read_file(path, &len2);
	assert_int_equal(len1, len2);
	assert_memory_equal(first, second, len1);
	faucet_value_free(got);
	free(first);
	free(second);
	free(path);
}

static void invalid_keys_are_refused_before_anything_is_written(void **state)
{
	fixture *f = *state;
	char *root = tu_join(f->dir, "never");
	faucet_store *s = open_at(root);
	faucet_value *v = tu_v("1"), *out = NULL;
	int written = 1;

	assert_int_equal(faucet_store_put(s, "bad key!", v), FAUCET_EINVALID);
	tu_assert_error_contains("state key 'bad key!' contains illegal character ' ' at byte 3");
	assert_int_equal(faucet_store_compare_and_put(s, "p::../x%", NULL, v, &written),
			 FAUCET_EINVALID);
	assert_int_equal(written, 0);
	tu_assert_error_contains("'%' at byte 7");
	assert_int_equal(faucet_store_get(s, "a/../b", &out), FAUCET_EINVALID);
	assert_int_equal(faucet_store_delete(s, ".hidden"), FAUCET_EINVALID);
	assert_false(tu_exists(root));
	faucet_value_free(v);
	faucet_store_free(s);
	free(root);
}

static void keys_differing_only_in_case_keep_separate_files(void **state)
{
	fixture *f = *state;
	faucet_strarray keys = {NULL, 0};

	tu_put(f->s, "Users::x", "1");
	tu_put(f->s, "users::x", "2");
	tu_assert_value(f->s, "Users::x", "1");
	tu_assert_value(f->s, "users::x", "2");
	list_into(f->s, "", &keys);
	tu_assert_strings(&keys, "Users::x", "users::x", NULL);
	faucet_strarray_dispose(&keys);
	assert_dir_names(f->dir, "%55sers%3A%3Ax.json|users%3A%3Ax.json");
}

static void a_long_key_round_trips_lists_and_deletes(void **state)
{
	fixture *f = *state;
	faucet_strarray keys = {NULL, 0};
	char key[300] = "pipe::row::";

	for (int i = 0; i < 34; i++)
		strcat(key, "parent:");
	assert_true(strlen(key) <= FAUCET_KEY_MAX);
	tu_put(f->s, key, "{\"c\":1}");
	tu_assert_value(f->s, key, "{\"c\":1}");
	/* The value and its sidecar holding the full key. */
	assert_int_equal(tu_count_entries(f->dir), 2);
	list_into(f->s, "pipe", &keys);
	tu_assert_strings(&keys, key, NULL);
	faucet_strarray_dispose(&keys);
	/* Writing again keeps the sidecar as it is. */
	tu_put(f->s, key, "{\"c\":2}");
	assert_int_equal(tu_count_entries(f->dir), 2);
	assert_int_equal(faucet_store_delete(f->s, key), 0);
	tu_assert_value(f->s, key, NULL);
	assert_int_equal(tu_count_entries(f->dir), 0);
}

static void a_wrong_or_missing_sidecar_is_rewritten(void **state)
{
	fixture *f = *state;
	faucet_strarray keys = {NULL, 0};
	char key[300] = "p::", *stem, *name, *path, *text;

	for (int i = 0; i < 200; i++)
		strcat(key, "q");
	stem = stem_of(key);
	assert_int_equal(asprintf(&name, "%s.key", stem), (int)strlen(stem) + 4);
	path = tu_join(f->dir, name);
	tu_put(f->s, key, "1");
	/* A sidecar that names another key does not make that key listable. */
	tu_write_file(path, "p::other", 8);
	list_into(f->s, "", &keys);
	assert_int_equal(keys.count, 0);
	faucet_strarray_dispose(&keys);
	/* The next write puts the right key back. */
	tu_put(f->s, key, "2");
	text = tu_read_file(path, NULL);
	assert_string_equal(text, key);
	free(text);
	assert_int_equal(unlink(path), 0);
	tu_put(f->s, key, "3");
	text = tu_read_file(path, NULL);
	assert_string_equal(text, key);
	free(text);
	list_into(f->s, "", &keys);
	tu_assert_strings(&keys, key, NULL);
	faucet_strarray_dispose(&keys);
	assert_false(tu_has_suffix_entry(f->dir, ".tmp"));
	free(path);
	free(name);
	free(stem);
}

static void put_overwrites_atomically_without_residue(void **state)
{
	fixture *f = *state;

	tu_put(f->s, "k", "{\"v\":1}");
	tu_put(f->s, "k", "{\"v\":2}");
	tu_assert_value(f->s, "k", "{\"v\":2}");
	assert_false(tu_has_suffix_entry(f->dir, ".json.tmp"));
	assert_dir_names(f->dir, "k.json");
}

static void put_writes_a_complete_file_for_a_large_value(void **state)
{
	fixture *f = *state;
	faucet_buf b = FAUCET_BUF_INIT;
	char *path = tu_join(f->dir, "github_issues.json"), *raw;
	faucet_value *parsed = NULL, *want;
	size_t len;

	faucet__buf_puts(&b, "{\"cursor\":\"abc\",\"rows\":[");
	for (int i = 0; i < 1000; i++)
		faucet__buf_printf(&b, "%s{\"i\":%d,\"s\":\"xxxxxxxxxxxxxxxxxxxx\"}", i ? "," : "", i);
	faucet__buf_puts(&b, "]}");
	assert_false(b.failed);
	want = tu_v(b.ptr);
	assert_int_equal(faucet_store_put(f->s, "github_issues", want), 0);
	/* Read the raw file, bypassing get. */
	raw = tu_read_file(path, &len);
	assert_non_null(raw);
	assert_int_equal(len, b.len);
	assert_int_equal(faucet_value_parse(&parsed, raw, len), 0);
	assert_true(faucet_value_equal(parsed, want));
	assert_false(tu_has_suffix_entry(f->dir, ".json.tmp"));
	faucet_value_free(parsed);
	faucet_value_free(want);
	faucet__buf_dispose(&b);
	free(raw);
	free(path);
}

static void a_failed_put_leaves_no_temp_file(void **state)
{
	fixture *f = *state;
	char *blocker = tu_join(f->dir, "k.json"), *inside = tu_join(blocker, "x");
	faucet_value *v = tu_v("1");

	/* A non-empty directory where the value file goes: the rename fails. */
	assert_int_equal(mkdir(blocker, 0700), 0);
	tu_write_file(inside, "x", 1);
	assert_true(faucet_store_put(f->s, "k", v) < 0);
	tu_assert_error_contains("failed to commit state file");
	tu_assert_error_contains(blocker);
	assert_false(tu_has_suffix_entry(f->dir, ".tmp"));
	faucet_value_free(v);
	free(inside);
	free(blocker);
}

/* A write that fails half way (here the file size limit, as a full disk
 * would) reports the temp file, removes it, and leaves the old value. */
static void a_failed_write_keeps_the_old_value(void **state)
{
	fixture *f = *state;
	struct rlimit old_limit, small;
	char big[8192];
	faucet_value *v;
	int rc;

	tu_put(f->s, "k", "{\"v\":1}");
	memset(big, 'x', sizeof(big));
	big[0] = '"';
	big[sizeof(big) - 2] = '"';
	big[sizeof(big) - 1] = '\0';
	v = tu_v(big);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old_limit), 0);
	small = old_limit;
	small.rlim_cur = 1024;
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0);
	rc = faucet_store_put(f->s, "k", v);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old_limit), 0);
	signal(SIGXFSZ, SIG_DFL);
	assert_int_equal(rc, FAUCET_EIO);
	tu_assert_error_contains("failed to write temp state file");
	tu_assert_error_contains(".json.tmp");
	assert_false(tu_has_suffix_entry(f->dir, ".tmp"));
	tu_assert_value(f->s, "k", "{\"v\":1}");
	faucet_value_free(v);
}

static void delete_removes_the_file_and_a_missing_key_is_fine(void **state)
{
	fixture *f = *state;
	char *path = tu_join(f->dir, "k.json");

	tu_put(f->s, "k", "\"v\"");
	assert_int_equal(faucet_store_delete(f->s, "k"), 0);
	tu_assert_value(f->s, "k", NULL);
	assert_false(tu_exists(path));
	assert_int_equal(faucet_store_delete(f->s, "absent"), 0);
	assert_int_equal(tu_count_entries(f->dir), 0);
	free(path);
}

static void corrupt_json_is_an_error_naming_the_file(void **state)
{
	fixture *f = *state;
	char *path = tu_join(f->dir, "bad.json");
	faucet_value *v = (faucet_value *)0x1;

	tu_write_file(path, "not json", 8);
	assert_int_equal(faucet_store_get(f->s, "bad", &v), FAUCET_ERROR);
	assert_null(v);
	tu_assert_error_contains("failed to parse state file ");
	tu_assert_error_contains(path);
	/* An empty file is corrupt too, never "no entry". */
	tu_write_file(path, "", 0);
	assert_int_equal(faucet_store_get(f->s, "bad", &v), FAUCET_ERROR);
	tu_assert_error_contains(path);
	free(path);
}

static void a_sealed_file_without_a_key_is_a_crypto_error(void **state)
{
	fixture *f = *state;
	static const char sealed[] = "FCT1\x02" "0123456789ab" "ciphertext" "0123456789abcdef";
	char *path = tu_join(f->dir, "bk.json");
	faucet_value *v = (faucet_value *)0x1;

	tu_write_file(path, sealed, sizeof(sealed) - 1);
	assert_int_equal(faucet_store_get(f->s, "bk", &v), FAUCET_ECRYPTO);
	assert_null(v);
	tu_assert_error_contains(path);
	tu_assert_error_contains("is encrypted but no encryption key is configured");
	free(path);
}

static void opening_refuses_bad_configuration(void **state)
{
	faucet_store *s = (faucet_store *)0x1;
	const char *prev[] = {""};
	faucet_encryption_options empty = {"", NULL, 0}, empty_prev = {"k", prev, 1};
	faucet_file_options opts = {.version = FAUCET_FILE_OPTIONS_VERSION, .encryption = &empty};
	faucet_file_options opts_prev = {.version = FAUCET_FILE_OPTIONS_VERSION,
					 .encryption = &empty_prev};

	(void)state;
	assert_int_equal(faucet_store_open_file(&s, "", NULL), FAUCET_ECONFIG);
	assert_null(s);
	assert_int_equal(faucet_store_open_file(&s, NULL, NULL), FAUCET_ECONFIG);
	/* Empty keys are configuration errors when the store is opened, not
	 * surprises at the first write. */
	assert_int_equal(faucet_store_open_file(&s, "/tmp/x", &opts), FAUCET_ECONFIG);
	tu_assert_error_contains("must not be empty");
	assert_null(s);
	assert_int_equal(faucet_store_open_file(&s, "/tmp/x", &opts_prev), FAUCET_ECONFIG);
	tu_assert_error_contains("previous_keys[0]");
	assert_null(s);
}

typedef struct {
	faucet_store *s;
	const char *key;
	int i;
	int rc;
} put_job;

static void *put_thread(void *arg)
{
	put_job *j = arg;
	char json[64];
	faucet_value *v = NULL;

	snprintf(json, sizeof(json), "{\"i\":%d}", j->i);
	j->rc = faucet_value_parse(&v, json, strlen(json));
	if (j->rc == 0)
		j->rc = faucet_store_put(j->s, j->key, v);
	faucet_value_free(v);
	return NULL;
}

static void concurrent_puts_to_one_key_leave_one_value(void **state)
{
	fixture *f = *state;
	pthread_t t[50];
	put_job jobs[50];
	faucet_value *got = NULL;
	const char *text;
	int i;

	for (i = 0; i < 50; i++) {
		jobs[i] = (put_job){f->s, "k", i, -1};
		assert_int_equal(pthread_create(&t[i], NULL, put_thread, &jobs[i]), 0);
	}
	for (i = 0; i < 50; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(jobs[i].rc, 0);
	}
	assert_int_equal(faucet_store_get(f->s, "k", &got), 0);
	assert_non_null(got);
	text = faucet_value_json(got);
	assert_int_equal(sscanf(text, "{\"i\":%d}", &i), 1);
	assert_true(i >= 0 && i < 50);
	assert_false(tu_has_suffix_entry(f->dir, ".json.tmp"));
	assert_dir_names(f->dir, "k.json");
	faucet_value_free(got);
}

static void puts_to_many_keys_from_threads(void **state)
{
	fixture *f = *state;
	static const char *const keys[] = {"t::a", "t::B", "t::c", "t::d", "t::E", "t::f",
					   "t::g", "t::h"};
	pthread_t t[8];
	put_job jobs[8];
	faucet_strarray listed = {NULL, 0};

	for (int i = 0; i < 8; i++) {
		jobs[i] = (put_job){f->s, keys[i], i, -1};
		assert_int_equal(pthread_create(&t[i], NULL, put_thread, &jobs[i]), 0);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(jobs[i].rc, 0);
	}
	list_into(f->s, "t::", &listed);
	tu_assert_strings(&listed, "t::B", "t::E", "t::a", "t::c", "t::d", "t::f", "t::g",
			  "t::h", NULL);
	faucet_strarray_dispose(&listed);
}

static void a_removed_root_is_recreated_and_a_replaced_one_followed(void **state)
{
	fixture *f = *state;
	char *root = tu_join(f->dir, "state"), *path;
	faucet_store *s = open_at(root);

	tu_put(s, "k", "1");
	tu_rmrf(root);
	tu_assert_value(s, "k", NULL);
	tu_put(s, "k", "2");
	tu_assert_value(s, "k", "2");
	/* Someone replaces the directory with one holding another value. */
	tu_rmrf(root);
	assert_int_equal(mkdir(root, 0700), 0);
	path = tu_join(root, "k.json");
	tu_write_file(path, "3", 1);
	tu_assert_value(s, "k", "3");
	/* get_many asks about the root once per call, on its first miss. */
	{
		const char *keys[2] = {"missing", "k"};
		faucet_value *out[2], *five;

		tu_rmrf(root);
		assert_int_equal(mkdir(root, 0700), 0);
		tu_write_file(path, "5", 1);
		assert_int_equal(faucet_store_get_many(s, keys, 2, out), 0);
		assert_null(out[0]);
		assert_non_null(out[1]);
		five = tu_v("5");
		assert_true(faucet_value_equal(out[1], five));
		faucet_value_free(five);
		faucet_value_free(out[1]);
	}
	tu_rmrf(root);
	assert_int_equal(tu_cas(s, "k", NULL, "4"), 1);
	tu_assert_value(s, "k", "4");
	tu_rmrf(root);
	assert_int_equal(faucet_store_delete(s, "k"), 0);
	assert_false(tu_exists(root));
	faucet_store_free(s);
	free(path);
	free(root);
}

/* A batch needs a descriptor per file of a group until the group lands.
 * With a low limit its groups are small; with descriptors running out in
 * the middle of a group, what was made lands and the rest follows. */
static void a_batch_lands_whole_when_descriptors_run_short(void **state)
{
	fixture *f = *state;
	struct rlimit old, low;
	faucet_entry e[40];
	faucet_value *v[40];
	char keys[40][16];
	int held[64], nheld = 0;

	tu_put(f->s, "p::warm", "0"); /* the store's root is open */
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = 64;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	assert_int_equal(faucet__durable_batch_size(), 16);
	/* Take every descriptor but three. */
	while (nheld < 64) {
		int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			break;
		held[nheld++] = fd;
	}
	assert_true(nheld >= 3);
	for (int i = 0; i < 3; i++)
		(void)close(held[--nheld]);
	for (int i = 0; i < 40; i++) {
		(void)snprintf(keys[i], sizeof(keys[i]), "p::k%02d", i);
		v[i] = tu_v("{\"n\":1}");
		e[i].key = keys[i];
		e[i].value = v[i];
	}
	assert_int_equal(faucet_store_put_batch(f->s, e, 40), 0);
	while (nheld > 0)
		(void)close(held[--nheld]);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	for (int i = 0; i < 40; i++) {
		tu_assert_value(f->s, keys[i], "{\"n\":1}");
		faucet_value_free(v[i]);
	}
	assert_false(tu_has_suffix_entry(f->dir, ".tmp"));
}

/* ---- legacy names ------------------------------------------------------------ */

static void legacy_named_files_are_read_and_migrated(void **state)
{
	fixture *f = *state;
	char *legacy = tu_join(f->dir, "Users%3Ax.json");
	char name[300] = "p%3A%3A", key[300] = "p::";
	faucet_strarray keys = {NULL, 0};
	char *dir2 = tu_join(f->dir, "long"), *path;
	faucet_store *s;

	tu_write_file(legacy, "{\"c\":7}", 7);
	/* The lower-case key must not read the upper-case key's legacy file. */
	tu_assert_value(f->s, "users:x", NULL);
	tu_assert_value(f->s, "Users:x", "{\"c\":7}");
	tu_put(f->s, "Users:x", "{\"c\":8}");
	assert_dir_names(f->dir, "%55sers%3Ax.json");
	tu_assert_value(f->s, "Users:x", "{\"c\":8}");
	assert_int_equal(faucet_store_delete(f->s, "Users:x"), 0);
	assert_int_equal(tu_count_entries(f->dir), 0);

	/* A long legacy name moves to its hashed name and gains a sidecar;
	 * the listing that finds it migrates it. */
	assert_int_equal(mkdir(dir2, 0700), 0);
	for (int i = 0; i < 170; i++) {
		strcat(name, "q");
		strcat(key, "q");
	}
	strcat(name, ".json");
	path = tu_join(dir2, name);
	tu_write_file(path, "3", 1);
	s = open_at(dir2);
	list_into(s, "p", &keys);
	tu_assert_strings(&keys, key, NULL);
	faucet_strarray_dispose(&keys);
	assert_false(tu_exists(path));
	assert_int_equal(tu_count_entries(dir2), 2);
	tu_assert_value(s, key, "3");
	faucet_store_free(s);
	free(path);
	free(dir2);
	free(legacy);
}

static void a_legacy_file_loses_to_the_current_one(void **state)
{
	fixture *f = *state;
	char *legacy = tu_join(f->dir, "Users%3Ax.json");
	char *current = tu_join(f->dir, "%55sers%3Ax.json");

	tu_write_file(legacy, "1", 1);
	tu_write_file(current, "2", 1);
	tu_assert_value(f->s, "Users:x", "2");
	assert_dir_names(f->dir, "%55sers%3Ax.json");
	free(current);
	free(legacy);
}

/* A point operation looks only for its own key's legacy file: the first
 * get or put of a store no longer reads the whole directory (330 ms at a
 * million keys), so another key's legacy file stays where it is until that
 * key is used or the store is listed. */
static void point_operations_migrate_only_their_own_key(void **state)
{
	fixture *f = *state;
	char *a = tu_join(f->dir, "Alpha%3Ax.json"), *b = tu_join(f->dir, "Beta%3Ax.json");
	faucet_strarray keys = {NULL, 0};

	tu_write_file(a, "1", 1);
	tu_write_file(b, "2", 1);
	tu_put(f->s, "p::other", "3");
	tu_assert_value(f->s, "p::other", "3");
	assert_true(tu_exists(a));
	assert_true(tu_exists(b));
	/* Alpha's get moves only Alpha's file. */
	tu_assert_value(f->s, "Alpha:x", "1");
	assert_false(tu_exists(a));
	assert_true(tu_exists(b));
	/* A delete of a key that lives only under its legacy name removes it
	 * for good: the next get must not find the legacy file again. */
	assert_int_equal(faucet_store_delete(f->s, "Beta:x"), 0);
	assert_false(tu_exists(b));
	tu_assert_value(f->s, "Beta:x", NULL);
	/* The listing migrates what it walks. */
	tu_write_file(b, "4", 1);
	list_into(f->s, "", &keys);
	tu_assert_strings(&keys, "Alpha:x", "Beta:x", "p::other", NULL);
	faucet_strarray_dispose(&keys);
	free(a);
	free(b);
}

static void a_failed_migration_is_reported_and_retried(void **state)
{
	fixture *f = *state;
	char name[300] = "p%3A%3A", key[300] = "p::";
	char *path, *stem, *side_name, *side;
	faucet_value *v = NULL;

	for (int i = 0; i < 170; i++) {
		strcat(name, "q");
		strcat(key, "q");
	}
	strcat(name, ".json");
	path = tu_join(f->dir, name);
	tu_write_file(path, "5", 1);
	/* A directory where the sidecar must go makes the migration fail. */
	stem = stem_of(key);
	assert_int_equal(asprintf(&side_name, "%s.key", stem), (int)strlen(stem) + 4);
	side = tu_join(f->dir, side_name);
	assert_int_equal(mkdir(side, 0700), 0);
	assert_true(faucet_store_get(f->s, key, &v) < 0);
	assert_null(v);
	tu_assert_error_contains(f->dir);
	assert_true(tu_exists(path));
	assert_false(tu_has_suffix_entry(f->dir, ".tmp"));
	/* Once the obstacle is gone the next call migrates. */
	assert_int_equal(rmdir(side), 0);
	tu_assert_value(f->s, key, "5");
	assert_false(tu_exists(path));
	free(side);
	free(side_name);
	free(stem);
	free(path);
}

/* ---- listing ------------------------------------------------------------------ */

static void list_ignores_temp_foreign_and_hidden_files(void **state)
{
	fixture *f = *state;
	static const char *const keys[] = {"p::a", "p::a::__sla__", "acme/p::x", "q::a"};
	static const char *const junk[] = {"p%3A%3Az.json.tmp", "notes.txt", ".hidden.json",
					   "p%3A%3Ay.json.lock", "p%3A%3Aw.key", "a%ZZ.json",
					   "x~y.json", "a%2F.b.json"};
	faucet_strarray out = {NULL, 0};
	char *root = tu_join(f->dir, "missing");
	faucet_store *missing = open_at(root);

	list_into(missing, "p::", &out);
	assert_int_equal(out.count, 0);
	faucet_store_free(missing);
	free(root);

	for (size_t i = 0; i < 4; i++)
		tu_put(f->s, keys[i], "1");
	for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++) {
		char *p = tu_join(f->dir, junk[i]);
		tu_write_file(p, "{}", 2);
		free(p);
	}
	{
		char *d = tu_join(f->dir, "p%3A%3Adir.json");
		assert_int_equal(mkdir(d, 0700), 0);
		free(d);
	}
	assert_true(faucet_store_supports_list(f->s));
	assert_false(faucet_store_supports_atomic_batch(f->s));
	list_into(f->s, "p::", &out);
	tu_assert_strings(&out, "p::a", "p::a::__sla__", NULL);
	faucet_strarray_dispose(&out);
	list_into(f->s, "acme/", &out);
	tu_assert_strings(&out, "acme/p::x", NULL);
	faucet_strarray_dispose(&out);
	list_into(f->s, "", &out);
	tu_assert_strings(&out, "acme/p::x", "p::a", "p::a::__sla__", "q::a", NULL);
	faucet_strarray_dispose(&out);
	list_into(f->s, "zzz", &out);
	assert_int_equal(out.count, 0);
}

static int by_strcmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Thousands of keys with shared prefixes of every length, keys that are
 * prefixes of others, every key character class, and duplicates (a legacy
 * and a current file of one key): the listing's own sort must give exactly
 * strcmp's order. */
static void list_sorts_many_keys_in_byte_order(void **state)
{
	fixture *f = *state;
	static const char alphabet[] = "-./0123456789:AZ_az";
	faucet_strarray want = {NULL, 0}, got = {NULL, 0};
	unsigned seed = 12345;
	char key[FAUCET_KEY_MAX + 1], stem[FILE_STEM_MAX + 1], name[4096];

	for (int i = 0; i < 3000; i++) {
		size_t len;
		/* A shared stem of varying length, then a random tail. */
		len = (size_t)snprintf(key, sizeof(key), "%s", i % 3 ? "pipeline::row::" : "p");
		len += (size_t)(rand_r(&seed) % 40) * (i % 5 == 0 ? 3 : 0);
		memset(key + strlen(key), 'x', len - strlen(key));
		for (int t = rand_r(&seed) % 12; t >= 0; t--)
			key[len++] = alphabet[rand_r(&seed) % (sizeof(alphabet) - 1)];
		key[len] = '\0';
		if (len > 150 || !faucet_file__key_is_valid(key, len))
			continue;
		assert_int_equal(faucet__strarray_push(&want, key), 0);
		(void)faucet_file__stem(key, stem);
		snprintf(name, sizeof(name), "%s/%s.json", f->dir, stem);
		tu_write_file(name, "1", 1);
		if (i % 97 == 0 && strpbrk(key, "AZ") != NULL) {
			/* The same key under its legacy name as well. */
			snprintf(name, sizeof(name), "%s/%s", f->dir, key);
			for (char *p = name + strlen(f->dir) + 1; *p; p++) {
				if (*p == ':' || *p == '/') {
					memmove(p + 3, p + 1, strlen(p + 1) + 1);
					p[2] = *p == ':' ? 'A' : 'F';
					p[1] = *p == ':' ? '3' : '2';
					p[0] = '%';
					p += 2;
				}
			}
			strcat(name, ".json");
			tu_write_file(name, "1", 1);
		}
	}
	qsort(want.strings, want.count, sizeof(char *), by_strcmp);
	faucet__strarray_sort_unique(&want);
	assert_true(want.count > 1000);
	list_into(f->s, "", &got);
	assert_int_equal(got.count, want.count);
	for (size_t i = 0; i < want.count; i++)
		assert_string_equal(got.strings[i], want.strings[i]);
	/* The result may be appended to like any strarray. */
	assert_int_equal(faucet__strarray_push(&got, "zz"), 0);
	assert_string_equal(got.strings[got.count - 1], "zz");
	faucet_strarray_dispose(&got);
	faucet_strarray_dispose(&want);
}

/* Write a value file of `key` under its legacy name (':' as %3A; the
 * current name differs from it for a key with capitals). */
static void write_legacy_name(const char *dir, const char *key)
{
	char name[4096];
	size_t n = (size_t)snprintf(name, sizeof(name), "%s/", dir);

	for (const char *k = key; *k != '\0'; k++)
		n += (size_t)snprintf(name + n, sizeof(name) - n, *k == ':' ? "%%3A" : "%c", *k);
	snprintf(name + n, sizeof(name) - n, ".json");
	tu_write_file(name, "1", 1);
}

/* A key found under its legacy and its current name (before migration) is
 * listed once wherever the sort puts the two together: a list of a few
 * keys, a run of keys that end on an 8-byte boundary, and a small group
 * inside a big list. */
static void list_gives_a_key_under_two_names_once(void **state)
{
	fixture *f = *state;
	static const struct {
		int count;     /* keys in the store */
		const char *prefix; /* key i is prefix + i; every 50th also has
				     * its legacy name */
	} cases[] = {
		{5, "p::K"},     /* a few keys: one insertion sort */
		{200, "p::AB::"}, /* runs sorted again 8 bytes deeper */
		{100, "p::A"},    /* keys under 8 bytes: equal in the first pass */
	};

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		char *dir, sub[32], key[64];
		faucet_store *s;
		faucet_strarray got = {NULL, 0};

		snprintf(sub, sizeof(sub), "case%zu", c);
		dir = tu_join(f->dir, sub);
		assert_int_equal(mkdir(dir, 0700), 0);
		s = open_at(dir);
		for (int i = 0; i < cases[c].count; i++) {
			faucet_value *v = tu_v("1");

			snprintf(key, sizeof(key), "%s%d", cases[c].prefix, i);
			assert_int_equal(faucet_store_put(s, key, v), 0);
			faucet_value_free(v);
			if (i % 50 == 0)
				write_legacy_name(dir, key);
		}
		faucet_store_free(s);
		/* A new handle has not migrated yet: its listing sees both names. */
		s = open_at(dir);
		list_into(s, "", &got);
		assert_int_equal(got.count, (size_t)cases[c].count);
		for (size_t i = 1; i < got.count; i++)
			assert_true(strcmp(got.strings[i - 1], got.strings[i]) < 0);
		faucet_strarray_dispose(&got);
		faucet_store_free(s);
		free(dir);
	}
}

static void list_reports_an_unreadable_root(void **state)
{
	fixture *f = *state;
	char *file = tu_join(f->dir, "not-a-dir");
	faucet_store *s;
	faucet_strarray out = {NULL, 0};
	char *want;

	tu_write_file(file, "x", 1);
	s = open_at(file);
	assert_true(faucet_store_list(s, "p::", &out) < 0);
	assert_int_equal(out.count, 0);
	assert_true(asprintf(&want, "failed to list state dir %s: %s", file, strerror(ENOTDIR)) > 0);
	tu_assert_error_contains(want);
	free(want);
	faucet_store_free(s);
	free(file);
}

/* ---- compare-and-put and its lock --------------------------------------------- */

static void a_lock_that_cannot_be_created_is_an_error(void **state)
{
	fixture *f = *state;
	char *path = tu_join(f->dir, "missing-dir/k.lock");
	int fd = 7;

	assert_true(faucet_file__lock(AT_FDCWD, path, path, &fd) < 0);
	assert_int_equal(fd, -1);
	tu_assert_error_contains("failed to create state lock ");
	tu_assert_error_contains(path);
	free(path);
}

static void compare_and_put_writes_only_over_the_expected_value(void **state)
{
	fixture *f = *state;
	faucet_value *a = tu_v("{\"v\":1}");
	int written = -1;

	assert_true(faucet_store_supports_compare_and_put(f->s));
	assert_int_equal(tu_cas(f->s, "k", NULL, "{\"v\":1}"), 1);
	assert_int_equal(tu_cas(f->s, "k", NULL, "{\"v\":2}"), 0);
	assert_int_equal(tu_cas(f->s, "k", "{\"v\":2}", "{\"v\":2}"), 0);
	assert_int_equal(tu_cas(f->s, "k", "{\"v\":1}", "{\"v\":2}"), 1);
	tu_assert_value(f->s, "k", "{\"v\":2}");
	/* Values compare as JSON: member order does not matter. */
	tu_put(f->s, "o", "{\"a\":1,\"b\":2}");
	assert_int_equal(tu_cas(f->s, "o", "{\"b\":2,\"a\":1}", "3"), 1);
	tu_assert_value(f->s, "o", "3");
	assert_int_equal(faucet_store_compare_and_put(f->s, "bad key!", NULL, a, &written),
			 FAUCET_EINVALID);
	assert_int_equal(written, 0);
	faucet_value_free(a);
}

typedef struct {
	faucet_store *s;
	pthread_barrier_t *start;
	const char *key;
	int who;
	int written;
	int rc;
} cas_job;

static void *cas_thread(void *arg)
{
	cas_job *j = arg;
	char json[32];
	faucet_value *v = NULL;

	snprintf(json, sizeof(json), "{\"by\":%d}", j->who);
	j->rc = faucet_value_parse(&v, json, strlen(json));
	(void)pthread_barrier_wait(j->start);
	if (j->rc == 0)
		j->rc = faucet_store_compare_and_put(j->s, j->key, NULL, v, &j->written);
	faucet_value_free(v);
	return NULL;
}

static void compare_and_put_is_exclusive_across_handles(void **state)
{
	fixture *f = *state;
	faucet_store *stores[8];
	pthread_barrier_t start;

	for (int i = 0; i < 8; i++)
		stores[i] = open_at(f->dir);
	for (int round = 0; round < 20; round++) {
		char key[32];
		pthread_t t[8];
		cas_job jobs[8];
		int wins = 0;

		snprintf(key, sizeof(key), "lease%d", round);
		assert_int_equal(pthread_barrier_init(&start, NULL, 8), 0);
		for (int i = 0; i < 8; i++) {
			jobs[i] = (cas_job){stores[i], &start, key, i, 0, -1};
			assert_int_equal(pthread_create(&t[i], NULL, cas_thread, &jobs[i]), 0);
		}
		for (int i = 0; i < 8; i++) {
			pthread_join(t[i], NULL);
			assert_int_equal(jobs[i].rc, 0);
			wins += jobs[i].written;
		}
		pthread_barrier_destroy(&start);
		assert_int_equal(wins, 1);
	}
	for (int i = 0; i < 8; i++)
		faucet_store_free(stores[i]);
}

static void count_busy(void *arg)
{
	(*(int *)arg)++;
}

static void a_dead_writers_lock_is_taken_at_once(void **state)
{
	fixture *f = *state;
	char *lock = tu_join(f->dir, "lease.json.lock");
	faucet_strarray keys = {NULL, 0};
	int busy = 0;

	/* A lock file left by a crashed writer holds no OS lock.  With a 1 ms
	 * budget and a counting hook, any wait at all would show. */
	tu_write_file(lock, "", 0);
	faucet_file__set_lock_wait_ms(1);
	faucet_file__set_lock_busy_hook(count_busy, &busy);
	assert_int_equal(tu_cas(f->s, "lease", NULL, "1"), 1);
	/* The lock is released after each compare-and-put. */
	assert_int_equal(tu_cas(f->s, "lease", "1", "2"), 1);
	faucet_file__set_lock_busy_hook(NULL, NULL);
	faucet_file__set_lock_wait_ms(0);
	assert_int_equal(busy, 0);
	list_into(f->s, "", &keys);
	tu_assert_strings(&keys, "lease", NULL);
	faucet_strarray_dispose(&keys);
	free(lock);
}

static void delete_removes_the_lock_file_and_the_key_stays_usable(void **state)
{
	fixture *f = *state;
	char *lock = tu_join(f->dir, "k.json.lock");
	char *never = tu_join(f->dir, "never-created");
	faucet_store *s;

	assert_int_equal(tu_cas(f->s, "k", NULL, "1"), 1);
	assert_true(tu_exists(lock));
	assert_int_equal(faucet_store_delete(f->s, "k"), 0);
	assert_false(tu_exists(lock));
	tu_assert_value(f->s, "k", NULL);
	assert_int_equal(tu_cas(f->s, "k", NULL, "2"), 1);
	tu_assert_value(f->s, "k", "2");

	s = open_at(never);
	assert_int_equal(faucet_store_delete(s, "k"), 0);
	assert_false(tu_exists(never));
	faucet_store_free(s);
	free(never);
	free(lock);
}

typedef struct {
	const char *path;
	int fd;
	int rc;
} lock_job;

static void *lock_thread(void *arg)
{
	lock_job *j = arg;

	j->rc = faucet_file__lock(AT_FDCWD, j->path, j->path, &j->fd);
	return NULL;
}

static void signal_pipe(void *arg)
{
	int fd = *(int *)arg;
	char c = 'w';

	if (write(fd, &c, 1) != 1)
		abort();
}

static void a_lock_won_on_an_unlinked_file_is_retaken_on_the_path(void **state)
{
	fixture *f = *state;
	char *path = tu_join(f->dir, "k.json.lock");
	lock_job job = {path, -1, -1};
	struct stat held, named;
	pthread_t t;
	int holder, fds[2];
	char c;

	holder = open(path, O_RDWR | O_CREAT, 0600);
	assert_true(holder >= 0);
	assert_int_equal(flock(holder, LOCK_EX), 0);
	assert_int_equal(pipe(fds), 0);
	faucet_file__set_lock_busy_hook(signal_pipe, &fds[1]);
	assert_int_equal(pthread_create(&t, NULL, lock_thread, &job), 0);
	/* The waiter has the old file open and found it locked. */
	assert_int_equal(read(fds[0], &c, 1), 1);
	/* delete's move: unlink while holding, then release. */
	assert_int_equal(unlink(path), 0);
	assert_int_equal(close(holder), 0);
	pthread_join(t, NULL);
	faucet_file__set_lock_busy_hook(NULL, NULL);
	assert_int_equal(job.rc, 0);
	assert_int_equal(fstat(job.fd, &held), 0);
	assert_int_equal(stat(path, &named), 0);
	assert_true(held.st_dev == named.st_dev && held.st_ino == named.st_ino);
	close(job.fd);
	close(fds[0]);
	close(fds[1]);
	free(path);
}

static void compare_and_put_gives_up_on_a_live_lock(void **state)
{
	fixture *f = *state;
	char *path = tu_join(f->dir, "k.json.lock");
	faucet_value *v = tu_v("1");
	int fd, written = 1;

	fd = open(path, O_RDWR | O_CREAT, 0600);
	assert_true(fd >= 0);
	assert_int_equal(flock(fd, LOCK_EX), 0);
	faucet_file__set_lock_wait_ms(30);
	/* Busy: a live holder, so the same call may succeed later. */
	assert_int_equal(faucet_store_compare_and_put(f->s, "k", NULL, v, &written), FAUCET_EBUSY);
	assert_true(faucet_error_retryable(faucet_error_last()->code));
	assert_int_equal(written, 0);
	tu_assert_error_contains("held by another writer");
	tu_assert_error_contains(path);
	/* delete waits for the same lock. */
	assert_int_equal(faucet_store_delete(f->s, "k"), FAUCET_EBUSY);
	tu_assert_error_contains("held by another writer");
	faucet_file__set_lock_wait_ms(0);
	assert_int_equal(close(fd), 0);
	assert_int_equal(faucet_store_compare_and_put(f->s, "k", NULL, v, &written), 0);
	assert_int_equal(written, 1);
	faucet_value_free(v);
	free(path);
}

/* ---- the writers' gate and the compare-and-put batch ------------------------- */

#define GATE_KEYS 5

/* One round of the gate test: what the writer thread does while the batch
 * holds the writers' lock, and how it went. */
typedef struct {
	faucet_store *other; /* a second handle: another writer */
	int kind;            /* 0 put, 1 compare-and-put, 2 delete, 3 batch put,
			      * 4 compare-and-delete, 5 guarded put (no condition),
			      * 6 guarded put on the condition `before` */
	const char *key;
	char *before;        /* what key held before the batch (NULL: absent) */
	const char *value;   /* what the writer writes */
	int rc, written;
	int pipe[2];         /* 'b' the writer found a lock held, 'd' it is done */
	atomic_int told_busy;
	char first;          /* which came first, as the batch saw it */
	pthread_t t;
} gate_round;

static void gate_busy(void *arg)
{
	gate_round *g = arg;
	char c = 'b';

	if (atomic_exchange(&g->told_busy, 1) == 0 && write(g->pipe[1], &c, 1) != 1)
		abort();
}

static void *gate_writer(void *arg)
{
	gate_round *g = arg;
	faucet_value *v = tu_v(g->value), *before = g->before ? tu_v(g->before) : NULL;
	faucet_entry e[2] = {{g->key, v}, {"p::x", v}};
	char c = 'd';

	g->written = 1;
	switch (g->kind) {
	case 0:
		g->rc = faucet_store_put(g->other, g->key, v);
		break;
	case 1:
		g->rc = faucet_store_compare_and_put(g->other, g->key, before, v, &g->written);
		break;
	case 2:
		g->rc = faucet_store_delete(g->other, g->key);
		break;
	case 3:
		g->rc = faucet_store_put_batch(g->other, e, 2);
		break;
	case 4:
		g->rc = faucet_store_compare_and_delete(g->other, g->key, before, &g->written);
		break;
	case 6: { /* a run's first write of the key: conditional */
		faucet_value *gv = tu_v(g->value), *gcur = NULL;
		faucet_store_guard guard = {"p::guard", NULL, gv}, put = {g->key, before, v};
		int then_written = 0, moved = 0;

		/* The guard kept from round to round: after the first, its lock
		 * file exists, and only the writers' lock orders the write. */
		assert_int_equal(faucet_store_get(g->other, "p::guard", &gcur), 0);
		guard.expected = gcur;
		g->rc = faucet__store_put_guarded_if(g->other, &guard, 1, NULL, 0, &put, NULL,
						     &g->written, &then_written, &moved);
		g->written = g->written && !moved;
		faucet_value_free(gcur);
		faucet_value_free(gv);
		break;
	}
	default: { /* a guarded put without a condition: a run's later write */
		faucet_value *gv = tu_v(g->value), *gcur = NULL;

		assert_int_equal(faucet_store_get(g->other, "p::guard", &gcur), 0);
		g->rc = faucet__store_put_guarded(g->other, "p::guard", gcur, gv, g->key, v,
						  &g->written);
		if (g->rc == 0 && !g->written)
			g->rc = faucet_error_set(FAUCET_ERROR, "the guard did not hold");
		faucet_value_free(gcur);
		faucet_value_free(gv);
		break;
	}
	}
	faucet_value_free(v);
	faucet_value_free(before);
	if (write(g->pipe[1], &c, 1) != 1)
		abort();
	return NULL;
}

/* The batch's hook: start the writer, and see whether it had to wait. */
static void gate_batch_hook(void *arg)
{
	gate_round *g = arg;

	assert_int_equal(pthread_create(&g->t, NULL, gate_writer, g), 0);
	assert_int_equal(read(g->pipe[0], &g->first, 1), 1);
}

static unsigned gate_seed(void)
{
	const char *env = getenv("FAUCET_TEST_SEED");

	return env != NULL ? (unsigned)strtoul(env, NULL, 10)
			   : (unsigned)time(NULL) ^ (unsigned)getpid();
}

/* Seeded random rounds: a compare-and-put batch over random keys (puts and
 * deletes, of keys present and absent) and, once it has compared every key,
 * a write of another handle - a put, a compare-and-put against what the key
 * held before, a delete, a batch put, a compare-and-delete, a guarded put
 * (a run's write with its marker) - of a random
 * key.  The write must wait for the batch (it finds a lock held before it
 * is done), and the store must end as the model says: the batch, then the
 * write.  Fails before every write took the writers' gate: the write landed
 * between the batch's compare and its write, and the batch overwrote it
 * unseen (an acknowledged write lost, design §8.2). */
static void a_write_waits_for_a_compare_and_put_batch_and_lands_after_it(void **state)
{
	fixture *f = *state;
	char keys[GATE_KEYS + 1][16];
	char *model[GATE_KEYS + 1] = {NULL};
	const unsigned seed0 = gate_seed();
	unsigned seed = seed0;
	faucet_store *other = open_at(f->dir);

	fprintf(stderr, "gate test seed %u (FAUCET_TEST_SEED)\n", seed0);
	for (int i = 0; i <= GATE_KEYS; i++)
		snprintf(keys[i], sizeof(keys[i]), i < GATE_KEYS ? "p::k%d" : "p::x", i);
	for (int round = 0; round < 60; round++) {
		faucet_store_guard g[GATE_KEYS];
		faucet_value *vals[GATE_KEYS] = {NULL}, *exp[GATE_KEYS] = {NULL};
		char bval[GATE_KEYS][32], wval[32];
		int n = 0, written = 0, rc;
		gate_round gr;

		/* The keys as the round starts: random, the model the same. */
		for (int i = 0; i <= GATE_KEYS; i++) {
			free(model[i]);
			model[i] = NULL;
			if (rand_r(&seed) % 3 != 0) {
				char v[32];

				snprintf(v, sizeof(v), "{\"r\":%d,\"k\":%d}", round, i);
				model[i] = strdup(v);
				tu_put(f->s, keys[i], v);
			} else {
				assert_int_equal(faucet_store_delete(f->s, keys[i]), 0);
			}
		}
		/* The batch: each key in it with a probability of 1/2 (at
		 * least one), expected as it is, put or (1 in 4) deleted. */
		for (int i = 0; i < GATE_KEYS; i++) {
			if (rand_r(&seed) % 2 != 0 && !(i == GATE_KEYS - 1 && n == 0))
				continue;
			snprintf(bval[n], sizeof(bval[n]), "\"batch %d.%d\"", round, i);
			vals[n] = rand_r(&seed) % 4 == 0 ? NULL : tu_v(bval[n]);
			exp[n] = model[i] ? tu_v(model[i]) : NULL;
			g[n] = (faucet_store_guard){keys[i], exp[n], vals[n]};
			n++;
		}
		memset(&gr, 0, sizeof(gr));
		gr.other = other;
		gr.kind = (int)(rand_r(&seed) % 6);
		gr.key = keys[rand_r(&seed) % GATE_KEYS];
		snprintf(wval, sizeof(wval), "\"writer %d\"", round);
		gr.value = wval;
		{
			int ki = gr.key[4] - '0';

			gr.before = model[ki] ? strdup(model[ki]) : NULL;
			if (gr.kind == 4 && gr.before == NULL)
				gr.kind = 2; /* compare-and-delete wants a value */
		}
		assert_int_equal(pipe(gr.pipe), 0);
		atomic_init(&gr.told_busy, 0);
		faucet_file__set_lock_busy_hook(gate_busy, &gr);
		faucet_file__set_batch_hook(gate_batch_hook, &gr);
		rc = faucet__store_compare_and_put_batch(f->s, g, (size_t)n, &written);
		faucet_file__set_batch_hook(NULL, NULL);
		if (rc != 0)
			fail_msg("seed %u round %d: batch: %s", seed0, round, faucet_error_last()->message);
		assert_int_equal(pthread_join(gr.t, NULL), 0);
		faucet_file__set_lock_busy_hook(NULL, NULL);
		assert_true(written);
		if (gr.first != 'b')
			fail_msg("seed %u round %d: writer kind %d of %s did not wait for the batch",
				 seed0, round, gr.kind, gr.key);
		if (gr.rc != 0)
			fail_msg("seed %u round %d: writer: %s", seed0, round,
				 faucet_error_last()->message);
		/* The model: the batch, then the write. */
		for (int j = 0; j < n; j++) {
			int ki = g[j].key[4] - '0';

			free(model[ki]);
			model[ki] = vals[j] ? strdup(faucet_value_json(vals[j])) : NULL;
		}
		{
			int ki = gr.key[4] - '0', holds;

			holds = (model[ki] == NULL && gr.before == NULL) ||
				(model[ki] != NULL && gr.before != NULL &&
				 strcmp(model[ki], gr.before) == 0);
			if (gr.kind == 1 || gr.kind == 4)
				assert_int_equal(gr.written, holds);
			if (gr.kind == 0 || gr.kind == 3 || gr.kind == 5 || (gr.kind == 1 && holds)) {
				free(model[ki]);
				model[ki] = strdup(wval);
			}
			if (gr.kind == 3) {
				free(model[GATE_KEYS]);
				model[GATE_KEYS] = strdup(wval);
			}
			if (gr.kind == 2 || (gr.kind == 4 && holds)) {
				free(model[ki]);
				model[ki] = NULL;
			}
		}
		for (int i = 0; i <= GATE_KEYS; i++) {
			faucet_value *now = NULL, *want = model[i] ? tu_v(model[i]) : NULL;

			assert_int_equal(faucet_store_get(f->s, keys[i], &now), 0);
			if (!faucet_value_equal(now, want))
				fail_msg("seed %u round %d (writer kind %d of %s): %s holds %s, the "
					 "model %s",
					 seed0, round, gr.kind, gr.key, keys[i],
					 now ? faucet_value_json(now) : "nothing",
					 model[i] ? model[i] : "nothing");
			faucet_value_free(now);
			faucet_value_free(want);
		}
		for (int j = 0; j < n; j++) {
			faucet_value_free(vals[j]);
			faucet_value_free(exp[j]);
		}
		free(gr.before);
		close(gr.pipe[0]);
		close(gr.pipe[1]);
	}
	for (int i = 0; i <= GATE_KEYS; i++)
		free(model[i]);
	faucet_store_free(other);
}

/* While the writer waits: write `value` into `file` as the holder of the
 * lock fd, release it, and see the writer through without an error. */
static void land_and_release(gate_round *gr, const char *file, const char *value, int fd,
			     unsigned seed0, int round)
{
	tu_write_file(file, value, strlen(value));
	assert_int_equal(close(fd), 0);
	assert_int_equal(pthread_join(gr->t, NULL), 0);
	faucet_file__set_lock_busy_hook(NULL, NULL);
	if (gr->rc != 0)
		fail_msg("seed %u round %d: writer: %s", seed0, round, faucet_error_last()->message);
}

/* Seeded rounds: a key managed with compare-and-put (its lock file made by
 * one), its lock held as a compare-and-put holds it between its compare
 * and its rename, and meanwhile a write of another handle: a plain put, or
 * a guarded put without a condition (a run's later write of the key).  It
 * must wait for the lock, and land after what the lock's holder wrote.
 * Fails before such writes took the key's lock: they landed in between and
 * the compare-and-put's rename overwrote them unseen - the history
 * checker's R1 found it on the file store (a `faucet run` command's later
 * write of a key against an operator's `state put --if-equals`); and, for
 * a plain batch, before a batch wrote such a key under its lock. */
static void a_write_of_a_managed_key_waits_for_its_compare_and_put(void **state)
{
	fixture *f = *state;
	const unsigned seed0 = gate_seed();
	unsigned seed = seed0;
	faucet_store *other = open_at(f->dir);

	fprintf(stderr, "key lock test seed %u (FAUCET_TEST_SEED)\n", seed0);
	for (int round = 0; round < 20; round++) {
		char key[16], wval[32], *lock, *file, lname[64], fname[64];
		faucet_value *now = NULL, *want;
		gate_round gr;
		char c;
		int fd;

		snprintf(key, sizeof(key), "p::m%d", (int)(rand_r(&seed) % 4));
		snprintf(lname, sizeof(lname), "p%%3A%%3A%s.json.lock", key + 3);
		snprintf(fname, sizeof(fname), "p%%3A%%3A%s.json", key + 3);
		lock = tu_join(f->dir, lname);
		file = tu_join(f->dir, fname);
		assert_int_equal(faucet_store_get(f->s, key, &now), 0);
		assert_int_equal(tu_cas(f->s, key, now ? faucet_value_json(now) : NULL, "\"cas\""), 1);
		faucet_value_free(now);
		assert_true(tu_exists(lock));
		memset(&gr, 0, sizeof(gr));
		gr.other = other;
		/* a plain put, a plain batch, or a guarded put */
		gr.kind = (int[]){0, 3, 5}[rand_r(&seed) % 3];
		gr.key = key;
		snprintf(wval, sizeof(wval), "\"writer %d\"", round);
		gr.value = wval;
		assert_int_equal(pipe(gr.pipe), 0);
		atomic_init(&gr.told_busy, 0);
		assert_int_equal(faucet_file__lock(AT_FDCWD, lock, lock, &fd), 0);
		faucet_file__set_lock_busy_hook(gate_busy, &gr);
		assert_int_equal(pthread_create(&gr.t, NULL, gate_writer, &gr), 0);
		assert_int_equal(read(gr.pipe[0], &c, 1), 1);
		if (c != 'b')
			fail_msg("seed %u round %d: writer kind %d of %s did not wait for the key's lock",
				 seed0, round, gr.kind, key);
		/* the lock holder's write */
		land_and_release(&gr, file, "\"holder\"", fd, seed0, round);
		want = tu_v(wval);
		assert_int_equal(faucet_store_get(f->s, key, &now), 0);
		if (!faucet_value_equal(now, want))
			fail_msg("seed %u round %d: %s holds %s, not the writer's %s", seed0, round,
				 key, now ? faucet_value_json(now) : "nothing", wval);
		faucet_value_free(now);
		faucet_value_free(want);
		close(gr.pipe[0]);
		close(gr.pipe[1]);
		free(lock);
		free(file);
	}
	faucet_store_free(other);
}

/* Seeded rounds: a key no compare-and-put has written yet (no lock file),
 * a plain write of it in progress - unlocked, as a put of such a key is,
 * inside the writers' lock shared - and meanwhile the key's first compared
 * write by another handle: a compare-and-put, a compare-and-delete, or a
 * run's conditional first write (a guarded put).  It must wait for the
 * plain write to finish before it compares (it makes the key's lock file in
 * the writers' lock exclusive), and so find what that write landed: its
 * condition, made against the value before, does not hold, and the landed
 * value stays.  Fails before lock files were made in the writers' lock
 * exclusive: the compare took the new lock at once, compared against the
 * old value, and its rename overwrote the plain write unseen. */
static void a_first_compare_of_a_key_waits_for_an_unlocked_write_of_it(void **state)
{
	fixture *f = *state;
	const unsigned seed0 = gate_seed();
	unsigned seed = seed0;
	faucet_store *other = open_at(f->dir);
	char *writers = tu_join(f->dir, ".faucet-writers.lock");

	fprintf(stderr, "first compare test seed %u (FAUCET_TEST_SEED)\n", seed0);
	tu_put(f->s, "p::seed", "0"); /* the root and the writers' lock exist */
	for (int round = 0; round < 20; round++) {
		char key[16], wval[32], before[32], *lock, *file, lname[64], fname[64];
		int fd, present = rand_r(&seed) % 2;
		gate_round gr;
		char c;

		snprintf(key, sizeof(key), "p::u%d", round);
		snprintf(lname, sizeof(lname), "p%%3A%%3Au%d.json.lock", round);
		snprintf(fname, sizeof(fname), "p%%3A%%3Au%d.json", round);
		lock = tu_join(f->dir, lname);
		file = tu_join(f->dir, fname);
		snprintf(before, sizeof(before), "\"before %d\"", round);
		if (present)
			tu_put(f->s, key, before);
		assert_false(tu_exists(lock));
		memset(&gr, 0, sizeof(gr));
		gr.other = other;
		gr.kind = (int[]){1, 4, 6}[rand_r(&seed) % 3];
		if (gr.kind == 4 && !present)
			gr.kind = 1; /* compare-and-delete wants a value */
		gr.key = key;
		gr.before = present ? strdup(before) : NULL;
		snprintf(wval, sizeof(wval), "\"writer %d\"", round);
		gr.value = wval;
		assert_int_equal(pipe(gr.pipe), 0);
		atomic_init(&gr.told_busy, 0);
		fd = open(writers, O_RDONLY | O_CLOEXEC);
		assert_true(fd >= 0);
		assert_int_equal(flock(fd, LOCK_SH), 0); /* the plain write is in */
		faucet_file__set_lock_busy_hook(gate_busy, &gr);
		assert_int_equal(pthread_create(&gr.t, NULL, gate_writer, &gr), 0);
		assert_int_equal(read(gr.pipe[0], &c, 1), 1);
		if (c != 'b')
			fail_msg("seed %u round %d: writer kind %d of %s compared while an unlocked "
				 "write of it was in progress",
				 seed0, round, gr.kind, key);
		/* the plain write lands */
		land_and_release(&gr, file, "\"landed\"", fd, seed0, round);
		if (gr.written)
			fail_msg("seed %u round %d: writer kind %d of %s wrote over the plain write",
				 seed0, round, gr.kind, key);
		tu_assert_value(f->s, key, "\"landed\"");
		assert_true(tu_exists(lock));
		free(gr.before);
		close(gr.pipe[0]);
		close(gr.pipe[1]);
		free(lock);
		free(file);
	}
	free(writers);
	faucet_store_free(other);
}

/* A batch waits for a write in progress (the writers' lock held shared)
 * and gives up busy, writing nothing; a write waits for a batch in
 * progress (held exclusive) the same way.  Both lock files are hidden from
 * the listing. */
static void the_writers_lock_is_waited_for_and_given_up_busy(void **state)
{
	fixture *f = *state;
	char *path = tu_join(f->dir, ".faucet-writers.lock");
	faucet_value *v = tu_v("1"), *w = tu_v("2");
	faucet_store_guard g[2] = {{"p::a", NULL, v}, {"p::b", NULL, v}};
	faucet_strarray out = {NULL, 0};
	int fd, written = 1;

	tu_put(f->s, "p::c", "0"); /* the root and both lock files exist */
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	faucet_file__set_lock_wait_ms(30);
	assert_int_equal(flock(fd, LOCK_SH), 0);
	assert_int_equal(faucet__store_compare_and_put_batch(f->s, g, 2, &written), FAUCET_EBUSY);
	assert_int_equal(written, 0);
	tu_assert_error_contains(".faucet-writers.lock");
	tu_assert_error_contains("held by another writer");
	tu_assert_value(f->s, "p::a", NULL);
	tu_put(f->s, "p::c", "1"); /* writers share it */
	assert_int_equal(flock(fd, LOCK_EX), 0);
	assert_int_equal(faucet_store_put(f->s, "p::c", w), FAUCET_EBUSY);
	assert_int_equal(faucet_store_delete(f->s, "p::c"), FAUCET_EBUSY);
	tu_assert_value(f->s, "p::c", "1");
	assert_int_equal(close(fd), 0);
	faucet_file__set_lock_wait_ms(0);
	assert_int_equal(faucet__store_compare_and_put_batch(f->s, g, 2, &written), 0);
	assert_int_equal(written, 1);
	tu_assert_value(f->s, "p::b", "1");
	list_into(f->s, "", &out);
	tu_assert_strings(&out, "p::a", "p::b", "p::c", NULL);
	faucet_strarray_dispose(&out);
	faucet_value_free(v);
	faucet_value_free(w);
	free(path);
}

/* ---- check ------------------------------------------------------------------------ */

static void check_passes_and_leaves_no_residue(void **state)
{
	fixture *f = *state;
	faucet_check_report *r = NULL;
	const faucet_probe *p;

	assert_int_equal(faucet_store_check(f->s, NULL, &r), 0);
	/* The sentinel round trip, then the walk of the root. */
	assert_int_equal(faucet_check_report_count(r), 4);
	assert_int_equal(faucet_check_report_failed_count(r), 0);
	for (size_t i = 0; i < 4; i++) {
		static const char *const names[] = {"sentinel", "values", "symlinks", "temp files"};
		p = faucet_check_report_probe(r, i);
		assert_string_equal(p->name, names[i]);
		assert_int_equal(p->status, FAUCET_PROBE_PASS);
		assert_null(p->reason);
	}
	assert_int_equal(tu_count_entries(f->dir), 0);
	faucet_check_report_free(r);
}

static void check_fails_for_an_unusable_root(void **state)
{
	fixture *f = *state;
	char *file = tu_join(f->dir, "not_a_dir"), *root = tu_join(file, "state"), *hint;
	faucet_store *s;
	faucet_check_report *r = NULL;
	const faucet_probe *p;

	tu_write_file(file, "x", 1);
	s = open_at(root);
	assert_int_equal(faucet_store_check(s, NULL, &r), 0);
	assert_int_equal(faucet_check_report_failed_count(r), 1);
	p = faucet_check_report_probe(r, 0);
	assert_int_equal(p->status, FAUCET_PROBE_FAIL);
	assert_non_null(p->reason);
	assert_non_null(strstr(p->reason, "failed to create state dir"));
	assert_true(asprintf(&hint, "ensure %s exists and is writable", root) > 0);
	assert_string_equal(p->hint, hint);
	free(hint);
	faucet_check_report_free(r);
	faucet_store_free(s);
	free(root);
	free(file);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(safe_filename_escapes_colon_and_slash),
		cmocka_unit_test_setup_teardown(colon_keys_round_trip_without_colons_on_disk, setup, teardown),
		cmocka_unit_test(safe_filename_escapes_uppercase_and_round_trips),
		cmocka_unit_test(legacy_stems_decode_and_bad_escapes_are_rejected),
		cmocka_unit_test(long_keys_hash_into_a_bounded_stem),
		cmocka_unit_test(quiet_validation_agrees_with_validate_key),
		cmocka_unit_test(temp_path_is_unique_and_not_pid_derived),
		cmocka_unit_test_setup_teardown(missing_key_is_no_entry, setup, teardown),
		cmocka_unit_test_setup_teardown(root_is_created_lazily_with_owner_only_modes, setup, teardown),
		cmocka_unit_test_setup_teardown(put_then_get_round_trips, setup, teardown),
		cmocka_unit_test_setup_teardown(values_keep_every_digit_and_the_file_bytes, setup, teardown),
		cmocka_unit_test_setup_teardown(invalid_keys_are_refused_before_anything_is_written, setup, teardown),
		cmocka_unit_test_setup_teardown(keys_differing_only_in_case_keep_separate_files, setup, teardown),
		cmocka_unit_test_setup_teardown(a_long_key_round_trips_lists_and_deletes, setup, teardown),
		cmocka_unit_test_setup_teardown(a_wrong_or_missing_sidecar_is_rewritten, setup, teardown),
		cmocka_unit_test_setup_teardown(put_overwrites_atomically_without_residue, setup, teardown),
		cmocka_unit_test_setup_teardown(put_writes_a_complete_file_for_a_large_value, setup, teardown),
		cmocka_unit_test_setup_teardown(a_failed_put_leaves_no_temp_file, setup, teardown),
		cmocka_unit_test_setup_teardown(a_failed_write_keeps_the_old_value, setup, teardown),
		cmocka_unit_test_setup_teardown(delete_removes_the_file_and_a_missing_key_is_fine, setup, teardown),
		cmocka_unit_test_setup_teardown(corrupt_json_is_an_error_naming_the_file, setup, teardown),
		cmocka_unit_test_setup_teardown(a_sealed_file_without_a_key_is_a_crypto_error, setup, teardown),
		cmocka_unit_test(opening_refuses_bad_configuration),
		cmocka_unit_test_setup_teardown(concurrent_puts_to_one_key_leave_one_value, setup, teardown),
		cmocka_unit_test_setup_teardown(puts_to_many_keys_from_threads, setup, teardown),
		cmocka_unit_test_setup_teardown(a_removed_root_is_recreated_and_a_replaced_one_followed, setup, teardown),
		cmocka_unit_test_setup_teardown(a_batch_lands_whole_when_descriptors_run_short, setup, teardown),
		cmocka_unit_test_setup_teardown(legacy_named_files_are_read_and_migrated, setup, teardown),
		cmocka_unit_test_setup_teardown(a_legacy_file_loses_to_the_current_one, setup, teardown),
		cmocka_unit_test_setup_teardown(point_operations_migrate_only_their_own_key, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_failed_migration_is_reported_and_retried, setup, teardown),
		cmocka_unit_test_setup_teardown(list_ignores_temp_foreign_and_hidden_files, setup, teardown),
		cmocka_unit_test_setup_teardown(list_sorts_many_keys_in_byte_order, setup, teardown),
		cmocka_unit_test_setup_teardown(list_gives_a_key_under_two_names_once, setup, teardown),
		cmocka_unit_test_setup_teardown(list_reports_an_unreadable_root, setup, teardown),
		cmocka_unit_test_setup_teardown(a_lock_that_cannot_be_created_is_an_error, setup, teardown),
		cmocka_unit_test_setup_teardown(compare_and_put_writes_only_over_the_expected_value, setup, teardown),
		cmocka_unit_test_setup_teardown(compare_and_put_is_exclusive_across_handles, setup, teardown),
		cmocka_unit_test_setup_teardown(a_dead_writers_lock_is_taken_at_once, setup, teardown),
		cmocka_unit_test_setup_teardown(delete_removes_the_lock_file_and_the_key_stays_usable, setup, teardown),
		cmocka_unit_test_setup_teardown(a_lock_won_on_an_unlinked_file_is_retaken_on_the_path, setup, teardown),
		cmocka_unit_test_setup_teardown(compare_and_put_gives_up_on_a_live_lock, setup, teardown),
		cmocka_unit_test_setup_teardown(a_write_waits_for_a_compare_and_put_batch_and_lands_after_it, setup, teardown),
		cmocka_unit_test_setup_teardown(a_write_of_a_managed_key_waits_for_its_compare_and_put, setup, teardown),
		cmocka_unit_test_setup_teardown(a_first_compare_of_a_key_waits_for_an_unlocked_write_of_it, setup, teardown),
		cmocka_unit_test_setup_teardown(the_writers_lock_is_waited_for_and_given_up_busy, setup, teardown),
		cmocka_unit_test_setup_teardown(check_passes_and_leaves_no_residue, setup, teardown),
		cmocka_unit_test_setup_teardown(check_fails_for_an_unusable_root, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
