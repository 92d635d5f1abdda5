/*
 * test_file_encryption.c - the file store with encryption at rest
 * (doc/design.md §4): sealed files on disk, plaintext files sealed on their next
 * write, key rotation, and every way a sealed file can fail to open - each a
 * typed error naming the file, never "no bookmark", which would make a
 * pipeline silently re-sync everything.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "store/open_internal.h"
#include "sys.h"

typedef tu_dir_fixture fixture;

/* A store over dir with write key `key` and up to two previous keys. */
static faucet_store *open_sealed(const char *dir, const char *key, const char *prev0,
				 const char *prev1)
{
	const char *prev[2] = {prev0, prev1};
	faucet_encryption_options enc = {key, prev, (size_t)(prev0 != NULL) + (prev1 != NULL)};
	faucet_file_options opts = {.version = FAUCET_FILE_OPTIONS_VERSION, .encryption = &enc};
	faucet_store *s = NULL;

	if (faucet_store_open_file(&s, dir, key || prev0 ? &opts : NULL) != 0)
		fail_msg("open: %s", faucet_error_last()->message);
	return s;
}

static char *file_of(fixture *f, const char *name, size_t *len)
{
	char *path = tu_join(f->dir, name);
	char *bytes = tu_read_file(path, len);
	free(path);
	assert_non_null(bytes);
	return bytes;
}

static int exists_in(fixture *f, const char *name)
{
	char *path = tu_join(f->dir, name);
	int yes = tu_exists(path);

	free(path);
	return yes;
}

/* get must fail with FAUCET_ECRYPTO and a message naming the file. */
static void assert_crypto_error(faucet_store *s, const char *key, const char *file,
				const char *needle)
{
	faucet_value *v = NULL;

	assert_int_equal(faucet_store_get(s, key, &v), FAUCET_ECRYPTO);
	assert_null(v);
	tu_assert_error_contains(file);
	tu_assert_error_contains(needle);
}

static void round_trip_with_ciphertext_on_disk(void **state)
{
	fixture *f = *state;
	faucet_store *s = open_sealed(f->dir, "k1", NULL, NULL);
	faucet_value *junk = NULL;
	size_t len;
	char *raw;

	tu_put(s, "bk", "{\"lsn\":42}");
	tu_assert_value(s, "bk", "{\"lsn\":42}");
	raw = file_of(f, "bk.json", &len);
	assert_memory_equal(raw, "FCT1\x02", 5);
	assert_int_equal(len, 5 + 12 + strlen("{\"lsn\":42}") + 16);
	assert_null(strstr(raw + 5, "lsn"));
	assert_int_not_equal(faucet_value_parse(&junk, raw, len), 0);
	free(raw);
	faucet_strarray keys = {0};
	assert_int_equal(faucet_store_list(s, "", &keys), 0);
	tu_assert_strings(&keys, "bk", NULL);
	faucet_strarray_dispose(&keys);
	assert_int_equal(faucet_store_delete(s, "bk"), 0);
	tu_assert_value(s, "bk", NULL);
	faucet_store_free(s);
}

static void plaintext_stays_readable_and_is_sealed_on_next_write(void **state)
{
	fixture *f = *state;
	faucet_store *plain = open_sealed(f->dir, NULL, NULL, NULL);
	faucet_store *sealed = open_sealed(f->dir, "k1", NULL, NULL);
	char *raw;

	tu_put(plain, "bk", "\"legacy\"");
	raw = file_of(f, "bk.json", NULL);
	assert_string_equal(raw, "\"legacy\"");
	free(raw);
	tu_assert_value(sealed, "bk", "\"legacy\"");
	tu_put(sealed, "bk", "\"updated\"");
	raw = file_of(f, "bk.json", NULL);
	assert_memory_equal(raw, "FCT1", 4);
	free(raw);
	tu_assert_value(sealed, "bk", "\"updated\"");
	/* The plaintext store now meets a sealed file: a typed error. */
	assert_crypto_error(plain, "bk", "bk.json", "no encryption key is configured");
	faucet_store_free(plain);
	faucet_store_free(sealed);
}

static void wrong_key_is_a_typed_error_not_a_missing_bookmark(void **state)
{
	fixture *f = *state;
	faucet_store *right = open_sealed(f->dir, "s3cr3t-A-9f2e", NULL, NULL);
	faucet_store *wrong = open_sealed(f->dir, "s3cr3t-B-7c1d", NULL, NULL);

	tu_put(right, "bk", "1");
	assert_crypto_error(wrong, "bk", "bk.json", "could not be decrypted");
	/* The key itself never appears in the message. */
	assert_null(strstr(faucet_error_last()->message, "s3cr3t"));
	faucet_store_free(right);
	faucet_store_free(wrong);
}

static void a_file_moved_to_another_keys_name_fails(void **state)
{
	fixture *f = *state;
	faucet_store *s = open_sealed(f->dir, "k1", NULL, NULL);
	char *from = tu_join(f->dir, "orders%3A%3Aa.json"), *to = tu_join(f->dir, "orders%3A%3Ab.json");

	tu_put(s, "orders::a", "{\"offset\":1}");
	assert_int_equal(rename(from, to), 0);
	assert_crypto_error(s, "orders::b", "orders%3A%3Ab.json", "could not be decrypted");
	free(from);
	free(to);
	faucet_store_free(s);
}

/* Flip one bit at `offset` of the sealed file and expect a typed error. */
static void assert_tamper_detected(fixture *f, faucet_store *s, size_t offset)
{
	char *path = tu_join(f->dir, "bk.json");
	size_t len;
	char *raw = tu_read_file(path, &len);

	assert_true(offset < len);
	raw[offset] = (char)(raw[offset] ^ 0x10);
	tu_write_file(path, raw, len);
	assert_crypto_error(s, "bk", "bk.json", "");
	raw[offset] = (char)(raw[offset] ^ 0x10);
	tu_write_file(path, raw, len);
	tu_assert_value(s, "bk", "{\"lsn\":42}");
	free(raw);
	free(path);
}

static void flipped_bits_in_nonce_ciphertext_and_tag_fail(void **state)
{
	fixture *f = *state;
	faucet_store *s = open_sealed(f->dir, "k1", NULL, NULL);
	size_t len;
	char *raw;

	tu_put(s, "bk", "{\"lsn\":42}");
	raw = file_of(f, "bk.json", &len);
	free(raw);
	assert_tamper_detected(f, s, 5);       /* nonce */
	assert_tamper_detected(f, s, 5 + 12);  /* ciphertext */
	assert_tamper_detected(f, s, len - 1); /* tag */
	faucet_store_free(s);
}

static void truncated_files_and_unknown_formats_fail(void **state)
{
	fixture *f = *state;
	faucet_store *s = open_sealed(f->dir, "k1", NULL, NULL);
	char *path = tu_join(f->dir, "bk.json");
	size_t len;
	char *raw;

	tu_put(s, "bk", "{\"lsn\":42}");
	raw = tu_read_file(path, &len);
	tu_write_file(path, raw, 20);
	assert_crypto_error(s, "bk", "bk.json", "truncated");
	tu_write_file(path, raw, len - 1);
	assert_crypto_error(s, "bk", "bk.json", "");
	raw[4] = 0x03;
	tu_write_file(path, raw, len);
	assert_crypto_error(s, "bk", "bk.json", "0x03");
	free(raw);
	free(path);
	faucet_store_free(s);
}

static void rotation_reads_old_files_and_reseals_with_the_new_key(void **state)
{
	fixture *f = *state;
	faucet_store *old = open_sealed(f->dir, "old", NULL, NULL);
	faucet_store *rotated = open_sealed(f->dir, "new", "older", "old");
	faucet_store *new_only = open_sealed(f->dir, "new", NULL, NULL);

	tu_put(old, "bk", "\"v1\"");
	assert_crypto_error(new_only, "bk", "bk.json", "could not be decrypted");
	tu_assert_value(rotated, "bk", "\"v1\"");
	tu_put(rotated, "bk", "\"v2\"");
	tu_assert_value(new_only, "bk", "\"v2\"");
	assert_crypto_error(old, "bk", "bk.json", "could not be decrypted");
	faucet_store_free(old);
	faucet_store_free(rotated);
	faucet_store_free(new_only);
}

static void no_temp_files_and_owner_only_files(void **state)
{
	fixture *f = *state;
	faucet_store *s = open_sealed(f->dir, "k1", NULL, NULL);
	int written = 0;
	faucet_value *a = tu_v("1"), *b = tu_v("2");

	tu_put(s, "bk", "1");
	assert_int_equal(faucet_store_compare_and_put(s, "bk", a, b, &written), 0);
	assert_true(written);
	assert_int_equal(faucet_store_compare_and_put(s, "bk", a, b, &written), 0);
	assert_false(written);
	tu_assert_value(s, "bk", "2");
	assert_false(tu_has_suffix_entry(f->dir, ".tmp"));
	faucet_value_free(a);
	faucet_value_free(b);
	faucet_store_free(s);
}

static void doctor_and_export_work_on_a_sealed_store(void **state)
{
	fixture *f = *state;
	faucet_store *s = open_sealed(f->dir, "k1", NULL, NULL);
	faucet_check_report *r = NULL;
	faucet_export *e = NULL;
	char *doc = NULL;

	tu_put(s, "o::a", "{\"c\":18446744073709551615}");
	assert_int_equal(faucet_store_check(s, NULL, &r), 0);
	assert_int_equal(faucet_check_report_failed_count(r), 0);
	faucet_check_report_free(r);
	/* The value and the encrypted-store marker; the sentinel is gone. */
	assert_int_equal(tu_count_entries(f->dir), 2);
	assert_true(exists_in(f, ".faucet-encrypted"));
	/* Export writes plaintext values: that is what an export is for. */
	assert_int_equal(faucet_export_namespace(s, "o", &e), 0);
	assert_int_equal(faucet_export_to_json(e, 0, &doc), 0);
	assert_non_null(strstr(doc, "\"o::a\":{\"c\":18446744073709551615}"));
	faucet_free(doc);
	faucet_export_free(e);
	faucet_store_free(s);
}

static void rewrite_all_reseals_every_file_with_the_current_key(void **state)
{
	fixture *f = *state;
	faucet_store *old = open_sealed(f->dir, "old", NULL, NULL);
	faucet_store *rotated = open_sealed(f->dir, "new", "old", NULL);
	faucet_store *new_only = open_sealed(f->dir, "new", NULL, NULL);
	faucet_store *plain = open_sealed(f->dir, NULL, NULL, NULL);
	size_t rewritten = 99, skipped = 99;
	char *raw;

	/* A plaintext file gets sealed too (written before the store held
	 * sealed files: afterwards a keyless write is refused). */
	tu_put(plain, "p::c", "\"plain\"");
	tu_put(old, "p::a", "{\"n\":1}");
	tu_put(old, "p::b", "[1,2]");
	assert_crypto_error(new_only, "p::a", "p%3A%3Aa.json", "could not be decrypted");
	assert_int_equal(faucet_store_rewrite_all(rotated, "", &rewritten, &skipped), 0);
	assert_int_equal(rewritten, 3);
	assert_int_equal(skipped, 0);
	tu_assert_value(new_only, "p::a", "{\"n\":1}");
	tu_assert_value(new_only, "p::b", "[1,2]");
	tu_assert_value(new_only, "p::c", "\"plain\"");
	raw = file_of(f, "p%3A%3Ac.json", NULL);
	assert_memory_equal(raw, "FCT1\x02", 5);
	free(raw);
	assert_false(tu_has_suffix_entry(f->dir, ".tmp"));
	/* A store that cannot open a file stops with an error naming the key. */
	tu_put(old, "p::d", "4");
	assert_int_equal(faucet_store_rewrite_all(new_only, "", &rewritten, NULL), FAUCET_ECRYPTO);
	tu_assert_error_contains("rewriting 'p::d'");
	tu_assert_value(rotated, "p::d", "4"); /* untouched: still the old key's file */
	faucet_store_free(old);
	faucet_store_free(rotated);
	faucet_store_free(new_only);
	faucet_store_free(plain);
}

/* A writer without the key (a child started without the key's variable)
 * must not put plaintext into an encrypted store: refused, nothing written,
 * whether the store has our marker or was sealed by the original faucet
 * (no marker, but the file being replaced is sealed). */
static void a_keyless_write_into_an_encrypted_store_is_refused(void **state)
{
	fixture *f = *state;
	faucet_store *sealed = open_sealed(f->dir, "k1", NULL, NULL);
	faucet_store *plain = open_sealed(f->dir, NULL, NULL, NULL);
	char *marker = tu_join(f->dir, ".faucet-encrypted");
	faucet_value *two = tu_v("2"), *three = tu_v("3");

	tu_put(sealed, "p::a", "1");
	assert_true(tu_exists(marker));
	assert_int_equal(faucet_store_put(plain, "p::b", two), FAUCET_EINVALID);
	tu_assert_error_contains("is encrypted; give --encryption-key-env");
	assert_false(exists_in(f, "p%3A%3Ab.json"));
	/* Without the marker, the header of the file being replaced tells. */
	assert_int_equal(unlink(marker), 0);
	assert_int_equal(faucet_store_put(plain, "p::a", three), FAUCET_EINVALID);
	tu_assert_error_contains("is encrypted");
	tu_assert_value(sealed, "p::a", "1");
	assert_false(tu_has_suffix_entry(f->dir, ".tmp"));
	/* The key's holder still writes. */
	tu_put(sealed, "p::b", "2");
	tu_assert_value(sealed, "p::b", "2");
	free(marker);
	faucet_value_free(two);
	faucet_value_free(three);
	faucet_store_free(sealed);
	faucet_store_free(plain);
}

/* The same refusals for a batch (import, copy), which looks for the marker
 * once per group and at each file it replaces, and for a compare-and-put
 * batch (an import's chunk in a run), which looks for the marker before
 * its compares and cannot compare a sealed file without the key: nothing
 * of the batch lands. */
static void a_keyless_batch_into_an_encrypted_store_is_refused(void **state)
{
	fixture *f = *state;
	faucet_store *sealed = open_sealed(f->dir, "k1", NULL, NULL);
	faucet_store *plain = open_sealed(f->dir, NULL, NULL, NULL);
	char *marker = tu_join(f->dir, ".faucet-encrypted");
	faucet_value *one = tu_v("1"), *two = tu_v("2"), *three = tu_v("3");
	faucet_entry fresh[2] = {{"p::b", two}, {"p::c", three}};
	faucet_entry over[2] = {{"p::c", three}, {"p::a", two}};
	faucet_store_guard cas[2] = {{"p::c", NULL, three}, {"p::a", one, two}};
	int written = 1;

	tu_put(sealed, "p::a", "1");
	assert_int_equal(faucet_store_put_batch(plain, fresh, 2), FAUCET_EINVALID);
	tu_assert_error_contains("is encrypted; give --encryption-key-env");
	assert_false(exists_in(f, "p%3A%3Ab.json"));
	assert_false(exists_in(f, "p%3A%3Ac.json"));
	assert_int_equal(faucet__store_compare_and_put_batch(plain, cas, 2, &written),
			 FAUCET_EINVALID);
	tu_assert_error_contains("is encrypted; give --encryption-key-env");
	assert_int_equal(written, 0);
	assert_false(exists_in(f, "p%3A%3Ac.json"));
	/* Without the marker, the header of a file being replaced tells; the
	 * batch stops there, before writing anything of its group. */
	assert_int_equal(unlink(marker), 0);
	assert_int_equal(faucet_store_put_batch(plain, over, 2), FAUCET_EINVALID);
	tu_assert_error_contains("is encrypted");
	assert_false(exists_in(f, "p%3A%3Ac.json"));
	assert_int_not_equal(faucet__store_compare_and_put_batch(plain, cas, 2, &written), 0);
	assert_int_equal(written, 0);
	assert_false(exists_in(f, "p%3A%3Ac.json"));
	tu_assert_value(sealed, "p::a", "1");
	assert_false(tu_has_suffix_entry(f->dir, ".tmp"));
	free(marker);
	faucet_value_free(one);
	faucet_value_free(two);
	faucet_value_free(three);
	faucet_store_free(sealed);
	faucet_store_free(plain);
}

/* The renames of a sealed store's first write, in order. */
static char renamed[4][64];
static int nrenamed;

static int recording_renameat(int od, const char *from, int nd, const char *to)
{
	if (nrenamed < 4)
		(void)snprintf(renamed[nrenamed++], sizeof(renamed[0]), "%s", to);
	return renameat(od, from, nd, to);
}

static void the_marker_is_durable_before_the_first_sealed_file(void **state)
{
	fixture *f = *state;
	faucet_sys table = *faucet__sys_default();
	faucet_store *sealed = open_sealed(f->dir, "k1", NULL, NULL);

	table.renameat = recording_renameat;
	nrenamed = 0;
	faucet__sys_set(&table);
	tu_put(sealed, "p::a", "1");
	tu_put(sealed, "p::b", "2");
	faucet__sys_set(NULL);
	assert_int_equal(nrenamed, 3);
	assert_string_equal(renamed[0], ".faucet-encrypted");
	assert_string_equal(renamed[1], "p%3A%3Aa.json");
	assert_string_equal(renamed[2], "p%3A%3Ab.json");
	faucet_store_free(sealed);
}

/* doctor with the wrong key opens the sealed files and fails naming one;
 * with the right key (or a previous key that opens them) it passes. */
static void doctor_fails_with_a_wrong_key(void **state)
{
	fixture *f = *state;
	faucet_store *right = open_sealed(f->dir, "k1", NULL, NULL);
	faucet_store *wrong = open_sealed(f->dir, "k2", NULL, NULL);
	faucet_store *rotated = open_sealed(f->dir, "k2", "k1", NULL);
	faucet_check_report *r = NULL;
	int failed_names_file = 0;

	tu_put(right, "p::a", "1");
	assert_int_equal(faucet_store_check(wrong, NULL, &r), 0);
	assert_true(faucet_check_report_failed_count(r) > 0);
	for (size_t i = 0; i < faucet_check_report_count(r); i++) {
		const faucet_probe *p = faucet_check_report_probe(r, i);
		if (p->status == FAUCET_PROBE_FAIL && p->reason != NULL &&
		    strstr(p->reason, "p%3A%3Aa.json") != NULL)
			failed_names_file = 1;
	}
	assert_true(failed_names_file);
	faucet_check_report_free(r);
	assert_int_equal(faucet_store_check(rotated, NULL, &r), 0);
	assert_int_equal(faucet_check_report_failed_count(r), 0);
	faucet_check_report_free(r);
	assert_int_equal(faucet_store_check(right, NULL, &r), 0);
	assert_int_equal(faucet_check_report_failed_count(r), 0);
	faucet_check_report_free(r);
	faucet_store_free(right);
	faucet_store_free(wrong);
	faucet_store_free(rotated);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		TU_DIR_TEST(round_trip_with_ciphertext_on_disk),
		TU_DIR_TEST(plaintext_stays_readable_and_is_sealed_on_next_write),
		TU_DIR_TEST(wrong_key_is_a_typed_error_not_a_missing_bookmark),
		TU_DIR_TEST(a_file_moved_to_another_keys_name_fails),
		TU_DIR_TEST(flipped_bits_in_nonce_ciphertext_and_tag_fail),
		TU_DIR_TEST(truncated_files_and_unknown_formats_fail),
		TU_DIR_TEST(rotation_reads_old_files_and_reseals_with_the_new_key),
		TU_DIR_TEST(no_temp_files_and_owner_only_files),
		TU_DIR_TEST(doctor_and_export_work_on_a_sealed_store),
		TU_DIR_TEST(rewrite_all_reseals_every_file_with_the_current_key),
		TU_DIR_TEST(a_keyless_write_into_an_encrypted_store_is_refused),
		TU_DIR_TEST(a_keyless_batch_into_an_encrypted_store_is_refused),
		TU_DIR_TEST(the_marker_is_durable_before_the_first_sealed_file),
		TU_DIR_TEST(doctor_fails_with_a_wrong_key),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
