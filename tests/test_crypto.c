/*
 * test_crypto.c - the sealed-file envelope (doc/design.md §4): round trips,
 * fixed vectors computed by an independent implementation, key rotation,
 * the binding of a file to its state key, and every way opening can fail
 * (wrong key, flipped bits, truncation, unknown formats, missing key).
 *
 * The fixed vectors below were computed once with Debian's
 * python3-cryptography, not with this code, so a mistake shared by our
 * sealing and opening cannot hide.  To reproduce them:
 *
 *   import hashlib
 *   from cryptography.hazmat.primitives.ciphers.aead import AESGCM
 *   key = hashlib.sha256(b"faucet-test-key").digest()
 *   nonce = bytes(range(12))
 *   plain = b'{"lsn":42}'
 *   for fmt, aad in ((1, None), (2, b"orders::default")):
 *       sealed = b"FCT1" + bytes([fmt]) + nonce + AESGCM(key).encrypt(nonce, plain, aad)
 *       print(fmt, sealed.hex())
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "crypto/envelope.h"

#define PATH "/state/orders%3A%3Adefault.json"
#define STATE_KEY "orders::default"
#define PLAIN "{\"lsn\":42}"

/* The independent vectors (see the header comment). */
static const char VECTOR_01[] = "4643543101000102030405060708090a0b"
				"7b07ce1f3c4018ba6bf2"
				"3ca841b47858fc342f6601ef9a7d7732";
static const char VECTOR_02[] = "4643543102000102030405060708090a0b"
				"7b07ce1f3c4018ba6bf2"
				"ec3eec963a9429b23a8b0f2adb2f582d";

/* ---- helpers ---------------------------------------------------------- */

static faucet_keyring *ring(const char *key, const char *const *previous, size_t nprev)
{
	faucet_keyring *kr = NULL;

	if (faucet__keyring_new(&kr, key, previous, nprev) != 0)
		fail_msg("keyring: %s", faucet_error_last()->message);
	return kr;
}

static unsigned char *from_hex(const char *hex, size_t *len)
{
	size_t n = strlen(hex) / 2;
	unsigned char *out = malloc(n);

	assert_non_null(out);
	for (size_t i = 0; i < n; i++) {
		unsigned int byte;
		assert_int_equal(sscanf(hex + 2 * i, "%2x", &byte), 1);
		out[i] = (unsigned char)byte;
	}
	*len = n;
	return out;
}

static unsigned char *seal_ok(const faucet_keyring *kr, const char *key, const char *plain,
			      size_t *len)
{
	unsigned char *env = NULL;

	if (faucet__seal(kr, key, plain, strlen(plain), &env, len) != 0)
		fail_msg("seal: %s", faucet_error_last()->message);
	return env;
}

/* Open and compare with the expected plaintext. */
static void assert_opens_to(const faucet_keyring *kr, const char *key, const void *env,
			    size_t len, const char *want)
{
	unsigned char *plain = NULL;
	size_t plain_len = 0;

	if (faucet__unseal(kr, key, PATH, env, len, &plain, &plain_len) != 0)
		fail_msg("unseal: %s", faucet_error_last()->message);
	assert_int_equal(plain_len, strlen(want));
	assert_memory_equal(plain, want, plain_len);
	assert_int_equal(plain[plain_len], '\0');
	free(plain);
}

/* Opening must fail with FAUCET_ECRYPTO, a message naming the file and
 * containing `needle`, no output, and no trace of the key strings. */
static void assert_refused(const faucet_keyring *kr, const char *key, const void *env,
			   size_t len, const char *needle)
{
	unsigned char *plain = (unsigned char *)0x1;
	size_t plain_len = 99;
	const char *msg;

	assert_int_equal(faucet__unseal(kr, key, PATH, env, len, &plain, &plain_len),
			 FAUCET_ECRYPTO);
	assert_null(plain);
	assert_int_equal(plain_len, 0);
	tu_assert_error_contains(needle);
	tu_assert_error_contains(PATH);
	msg = faucet_error_last()->message;
	assert_null(strstr(msg, "s3cret"));
	assert_null(strstr(msg, "faucet-test-key"));
}

/* ---- round trips ------------------------------------------------------ */

static void seal_and_open_round_trip(void **state)
{
	faucet_keyring *kr = ring("s3cret-k1", NULL, 0);
	size_t len = 0;
	unsigned char *env;

	(void)state;
	env = seal_ok(kr, STATE_KEY, PLAIN, &len);
	assert_int_equal(len, strlen(PLAIN) + FAUCET_SEAL_MIN_LEN);
	assert_true(faucet__is_sealed(env, len));
	assert_memory_equal(env, "FCT1", 4);
	assert_int_equal(env[4], 0x02);
	assert_opens_to(kr, STATE_KEY, env, len, PLAIN);
	free(env);

	/* An empty plaintext still gets a full header and tag. */
	assert_int_equal(faucet__seal(kr, STATE_KEY, "", 0, &env, &len), 0);
	assert_int_equal(len, FAUCET_SEAL_MIN_LEN);
	assert_opens_to(kr, STATE_KEY, env, len, "");
	free(env);
	faucet__keyring_free(kr);
}

static void large_values_round_trip(void **state)
{
	faucet_keyring *kr = ring("s3cret-k1", NULL, 0);
	size_t n = 3 * 1024 * 1024 + 7, len = 0, plain_len = 0;
	char *big = malloc(n + 1);
	unsigned char *env = NULL, *plain = NULL;

	(void)state;
	assert_non_null(big);
	for (size_t i = 0; i < n; i++)
		big[i] = (char)('a' + (i * 7919) % 26);
	big[n] = '\0';
	assert_int_equal(faucet__seal(kr, STATE_KEY, big, n, &env, &len), 0);
	assert_int_equal(len, n + FAUCET_SEAL_MIN_LEN);
	assert_int_equal(faucet__unseal(kr, STATE_KEY, PATH, env, len, &plain, &plain_len), 0);
	assert_int_equal(plain_len, n);
	assert_memory_equal(plain, big, n);
	free(plain);
	free(env);
	free(big);
	faucet__keyring_free(kr);
}

static void ciphertext_is_not_the_plaintext(void **state)
{
	faucet_keyring *kr = ring("s3cret-k1", NULL, 0);
	size_t len1 = 0, len2 = 0;
	unsigned char *env1, *env2;
	faucet_value *v = NULL;
	const char *value = "{\"cursor\":\"2026-01-01T00:00:00+00:00\",\"lsn\":42}";

	(void)state;
	env1 = seal_ok(kr, STATE_KEY, value, &len1);
	assert_null(memmem(env1, len1, "cursor", 6));
	assert_null(memmem(env1, len1, "lsn", 3));
	assert_int_not_equal(faucet_value_parse(&v, (const char *)env1, len1), 0);
	assert_null(v);

	/* A fresh nonce per write: the same value never seals the same way. */
	env2 = seal_ok(kr, STATE_KEY, value, &len2);
	assert_int_equal(len1, len2);
	assert_memory_not_equal(env1 + 5, env2 + 5, FAUCET_SEAL_NONCE_LEN);
	assert_memory_not_equal(env1 + FAUCET_SEAL_HEADER_LEN, env2 + FAUCET_SEAL_HEADER_LEN,
				len1 - FAUCET_SEAL_HEADER_LEN);
	free(env1);
	free(env2);
	faucet__keyring_free(kr);
}

/* ---- fixed vectors ---------------------------------------------------- */

static void independent_vectors_match_both_ways(void **state)
{
	static const unsigned char nonce[FAUCET_SEAL_NONCE_LEN] = {0, 1, 2, 3, 4, 5,
								   6, 7, 8, 9, 10, 11};
	faucet_keyring *kr = ring("faucet-test-key", NULL, 0);
	struct { unsigned char format; const char *hex; } cases[] = {
		{FAUCET_SEAL_FORMAT_NO_AAD, VECTOR_01},
		{FAUCET_SEAL_FORMAT_KEY_AAD, VECTOR_02},
	};

	(void)state;
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		size_t want_len = 0, len = 0;
		unsigned char *want = from_hex(cases[c].hex, &want_len);
		unsigned char *env = NULL;

		/* Our sealing produces exactly the independent bytes ... */
		assert_int_equal(faucet__seal_with_nonce(kr, STATE_KEY, cases[c].format, nonce,
							 PLAIN, strlen(PLAIN), &env, &len), 0);
		assert_int_equal(len, want_len);
		assert_memory_equal(env, want, len);
		/* ... and our opening reads the independent bytes. */
		assert_opens_to(kr, STATE_KEY, want, want_len, PLAIN);
		free(env);
		free(want);
	}
	faucet__keyring_free(kr);
}

static void format_01_carries_no_key_binding(void **state)
{
	faucet_keyring *kr = ring("faucet-test-key", NULL, 0);
	size_t len01 = 0, len02 = 0;
	unsigned char *v01 = from_hex(VECTOR_01, &len01);
	unsigned char *v02 = from_hex(VECTOR_02, &len02);

	(void)state;
	/* The original faucet's files open under any name, even with no key. */
	assert_opens_to(kr, "other::name", v01, len01, PLAIN);
	assert_opens_to(kr, NULL, v01, len01, PLAIN);
	/* Ours do not. */
	assert_refused(kr, "other::name", v02, len02, "could not be decrypted");
	/* Relabelling a 0x02 file as 0x01 drops the binding, so it must fail. */
	v02[4] = FAUCET_SEAL_FORMAT_NO_AAD;
	assert_refused(kr, STATE_KEY, v02, len02, "could not be decrypted");
	free(v01);
	free(v02);
	faucet__keyring_free(kr);
}

/* ---- failures to open ------------------------------------------------- */

static void wrong_key_is_a_crypto_error(void **state)
{
	faucet_keyring *right = ring("s3cret-right", NULL, 0);
	faucet_keyring *wrong = ring("s3cret-wrong", NULL, 0);
	size_t len = 0;
	unsigned char *env;

	(void)state;
	env = seal_ok(right, STATE_KEY, "1", &len);
	assert_refused(wrong, STATE_KEY, env, len, "could not be decrypted");
	tu_assert_error_contains("wrong key");
	free(env);
	faucet__keyring_free(right);
	faucet__keyring_free(wrong);
}

static void file_moved_to_another_key_fails(void **state)
{
	faucet_keyring *kr = ring("s3cret-k1", NULL, 0);
	size_t len = 0;
	unsigned char *env;

	(void)state;
	env = seal_ok(kr, "orders::a", "{\"lsn\":1}", &len);
	assert_opens_to(kr, "orders::a", env, len, "{\"lsn\":1}");
	assert_refused(kr, "orders::b", env, len, "moved from another key's name");
	/* A prefix or extension of the name is another name. */
	assert_refused(kr, "orders::", env, len, "could not be decrypted");
	assert_refused(kr, "orders::a::x", env, len, "could not be decrypted");
	free(env);
	faucet__keyring_free(kr);
}

static void every_flipped_bit_is_detected(void **state)
{
	faucet_keyring *kr = ring("s3cret-k1", NULL, 0);
	size_t len = 0;
	unsigned char *env;

	(void)state;
	env = seal_ok(kr, STATE_KEY, PLAIN, &len);
	/* Nonce, ciphertext and tag: each bit of each byte authenticates. */
	for (size_t i = FAUCET_SEAL_MAGIC_LEN + 1; i < len; i++) {
		for (int bit = 0; bit < 8; bit++) {
			env[i] ^= (unsigned char)(1u << bit);
			assert_refused(kr, STATE_KEY, env, len, "could not be decrypted");
			env[i] ^= (unsigned char)(1u << bit);
		}
	}
	/* A flipped bit in the magic makes it not an envelope at all. */
	env[0] ^= 0x01;
	assert_false(faucet__is_sealed(env, len));
	assert_refused(kr, STATE_KEY, env, len, "not a sealed file");
	env[0] ^= 0x01;
	/* The untouched envelope still opens: the loop restored every bit. */
	assert_opens_to(kr, STATE_KEY, env, len, PLAIN);
	free(env);
	faucet__keyring_free(kr);
}

static void truncated_files_are_reported_as_truncated(void **state)
{
	faucet_keyring *kr = ring("s3cret-k1", NULL, 0);
	size_t len = 0;
	unsigned char *env;

	(void)state;
	env = seal_ok(kr, STATE_KEY, PLAIN, &len);
	for (size_t cut = 0; cut <= 20; cut++)
		assert_refused(kr, STATE_KEY, env, cut, "is truncated");
	assert_refused(kr, STATE_KEY, env, FAUCET_SEAL_MIN_LEN - 1, "is truncated");
	tu_assert_error_contains("32 bytes");
	/* Longer cuts have a frame but lose ciphertext or tag bytes. */
	for (size_t cut = FAUCET_SEAL_MIN_LEN; cut < len; cut++)
		assert_refused(kr, STATE_KEY, env, cut, "could not be decrypted");
	/* Trailing garbage shifts the tag and fails too. */
	{
		unsigned char *longer = malloc(len + 1);
		assert_non_null(longer);
		memcpy(longer, env, len);
		longer[len] = '\n';
		assert_refused(kr, STATE_KEY, longer, len + 1, "could not be decrypted");
		free(longer);
	}
	free(env);
	faucet__keyring_free(kr);
}

static void unknown_format_byte_is_named(void **state)
{
	faucet_keyring *kr = ring("s3cret-k1", NULL, 0);
	size_t len = 0;
	unsigned char *env;

	(void)state;
	env = seal_ok(kr, STATE_KEY, PLAIN, &len);
	env[4] = 0x03;
	assert_refused(kr, STATE_KEY, env, len, "unknown encryption format byte 0x03");
	env[4] = 0x00;
	assert_refused(kr, STATE_KEY, env, len, "format byte 0x00");
	env[4] = 0xff;
	assert_refused(kr, STATE_KEY, env, len, "format byte 0xff");
	/* Even a bare header says which format it is. */
	assert_refused(kr, STATE_KEY, "FCT1\x03", 5, "format byte 0x03");
	free(env);
	faucet__keyring_free(kr);
}

static void plaintext_is_not_sealed(void **state)
{
	faucet_keyring *kr = ring("s3cret-k1", NULL, 0);
	const char *json = "{\"lsn\":42,\"padding\":\"0123456789abcdefghijklmnop\"}";

	(void)state;
	assert_false(faucet__is_sealed(json, strlen(json)));
	assert_false(faucet__is_sealed("FCT", 3));
	assert_false(faucet__is_sealed(NULL, 0));
	assert_true(faucet__is_sealed("FCT1", 4));
	assert_refused(kr, STATE_KEY, json, strlen(json), "not a sealed file");
	faucet__keyring_free(kr);
}

static void sealed_file_without_key_is_a_crypto_error(void **state)
{
	(void)state;
	assert_int_equal(faucet__sealed_without_key(PATH), FAUCET_ECRYPTO);
	assert_int_equal(faucet_error_last()->code, FAUCET_ECRYPTO);
	tu_assert_error_contains("state file " PATH " is encrypted but no encryption key");
	tu_assert_error_contains("add state.config.encryption with the original key");
}

/* ---- rotation --------------------------------------------------------- */

static void rotation_reads_files_of_previous_keys(void **state)
{
	const char *old_only[] = {"s3cret-old"};
	const char *two_old[] = {"s3cret-older", "s3cret-old"};
	faucet_keyring *old = ring("s3cret-old", NULL, 0);
	faucet_keyring *rotated = ring("s3cret-new", old_only, 1);
	faucet_keyring *rotated_twice = ring("s3cret-new", two_old, 2);
	faucet_keyring *new_only = ring("s3cret-new", NULL, 0);
	size_t len = 0;
	unsigned char *env;

	(void)state;
	env = seal_ok(old, STATE_KEY, "\"v1\"", &len);
	assert_opens_to(rotated, STATE_KEY, env, len, "\"v1\"");
	assert_opens_to(rotated_twice, STATE_KEY, env, len, "\"v1\"");
	assert_refused(new_only, STATE_KEY, env, len, "could not be decrypted");
	/* Trying every key does not weaken the key binding. */
	assert_refused(rotated_twice, "orders::other", env, len, "any of the 2 previous keys");
	free(env);

	/* The rotated store writes with the new key only. */
	env = seal_ok(rotated, STATE_KEY, "\"v2\"", &len);
	assert_opens_to(new_only, STATE_KEY, env, len, "\"v2\"");
	assert_refused(old, STATE_KEY, env, len, "could not be decrypted");
	free(env);

	faucet__keyring_free(old);
	faucet__keyring_free(rotated);
	faucet__keyring_free(rotated_twice);
	faucet__keyring_free(new_only);
}

/* ---- keyring construction --------------------------------------------- */

static void assert_config_error(const char *key, const char *const *prev, size_t nprev,
				const char *needle)
{
	faucet_keyring *kr = (faucet_keyring *)0x1;

	assert_int_equal(faucet__keyring_new(&kr, key, prev, nprev), FAUCET_ECONFIG);
	assert_null(kr);
	tu_assert_error_contains(needle);
	assert_null(strstr(faucet_error_last()->message, "s3cret"));
}

static void empty_keys_are_config_errors(void **state)
{
	const char *second_empty[] = {"s3cret-a", ""};
	const char *first_missing[] = {NULL};

	(void)state;
	assert_config_error("", NULL, 0, "encryption key must not be empty");
	assert_config_error(NULL, NULL, 0, "encryption key must not be empty");
	assert_config_error("s3cret-k", second_empty, 2, "previous_keys[1] must not be empty");
	assert_config_error("s3cret-k", first_missing, 1, "previous_keys[0] must not be empty");
	/* The write key is checked first. */
	assert_config_error("", second_empty, 2, "encryption key must not be empty");
}

static void keyring_does_not_keep_the_strings(void **state)
{
	char key[] = "s3cret-mutable";
	char prev[] = "s3cret-prev";
	const char *prevs[] = {prev};
	faucet_keyring *kr = ring(key, prevs, 1);
	faucet_keyring *fresh = ring("s3cret-mutable", NULL, 0);
	size_t len = 0;
	unsigned char *env;

	(void)state;
	/* Overwriting the caller's strings changes nothing: the keyring holds
	 * derived keys of its own. */
	memset(key, 'x', sizeof(key) - 1);
	memset(prev, 'y', sizeof(prev) - 1);
	env = seal_ok(kr, STATE_KEY, PLAIN, &len);
	assert_opens_to(fresh, STATE_KEY, env, len, PLAIN);
	free(env);
	faucet__keyring_free(kr);
	faucet__keyring_free(fresh);
	faucet__keyring_free(NULL);
}

static void bad_arguments_are_refused(void **state)
{
	static const unsigned char nonce[FAUCET_SEAL_NONCE_LEN] = {0};
	faucet_keyring *kr = ring("s3cret-k1", NULL, 0);
	unsigned char *env = (unsigned char *)0x1, *plain = (unsigned char *)0x1;
	size_t len = 5;

	(void)state;
	assert_int_equal(faucet__seal_with_nonce(kr, STATE_KEY, 0x03, nonce, "1", 1, &env, &len),
			 FAUCET_EINVALID);
	assert_null(env);
	tu_assert_error_contains("0x03");
	assert_int_equal(faucet__seal(kr, NULL, "1", 1, &env, &len), FAUCET_EINVALID);
	assert_null(env);
	assert_int_equal(faucet__seal(NULL, STATE_KEY, "1", 1, &env, &len), FAUCET_EINVALID);
	assert_int_equal(faucet__unseal(NULL, STATE_KEY, PATH, "FCT1", 4, &plain, &len),
			 FAUCET_EINVALID);
	assert_null(plain);
	assert_int_equal(faucet__keyring_new(NULL, "s3cret", NULL, 0), FAUCET_EINVALID);
	faucet__keyring_free(kr);
}

/* ---- threads ---------------------------------------------------------- */

#define THREADS 4
#define ROUNDS 300

typedef struct {
	const faucet_keyring *kr;
	int index;
	int failures;
} worker_arg;

/* Each thread seals and opens its own values through the shared keyring.
 * cmocka's assertions are not thread-safe, so workers only count. */
static void *worker(void *p)
{
	worker_arg *arg = p;
	char key[64], value[64];

	for (int r = 0; r < ROUNDS; r++) {
		unsigned char *env = NULL, *plain = NULL;
		size_t len = 0, plain_len = 0;

		snprintf(key, sizeof(key), "pipe%d::default", arg->index);
		snprintf(value, sizeof(value), "{\"thread\":%d,\"round\":%d}", arg->index, r);
		if (faucet__seal(arg->kr, key, value, strlen(value), &env, &len) != 0 ||
		    faucet__unseal(arg->kr, key, PATH, env, len, &plain, &plain_len) != 0 ||
		    plain_len != strlen(value) || memcmp(plain, value, plain_len) != 0)
			arg->failures++;
		free(plain);
		free(env);
	}
	return NULL;
}

static void one_keyring_serves_many_threads(void **state)
{
	const char *prev[] = {"s3cret-old"};
	faucet_keyring *kr = ring("s3cret-new", prev, 1);
	pthread_t threads[THREADS];
	worker_arg args[THREADS];

	(void)state;
	for (int i = 0; i < THREADS; i++) {
		args[i] = (worker_arg){kr, i, 0};
		assert_int_equal(pthread_create(&threads[i], NULL, worker, &args[i]), 0);
	}
	for (int i = 0; i < THREADS; i++) {
		assert_int_equal(pthread_join(threads[i], NULL), 0);
		assert_int_equal(args[i].failures, 0);
	}
	faucet__keyring_free(kr);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(seal_and_open_round_trip),
		cmocka_unit_test(large_values_round_trip),
		cmocka_unit_test(ciphertext_is_not_the_plaintext),
		cmocka_unit_test(independent_vectors_match_both_ways),
		cmocka_unit_test(format_01_carries_no_key_binding),
		cmocka_unit_test(wrong_key_is_a_crypto_error),
		cmocka_unit_test(file_moved_to_another_key_fails),
		cmocka_unit_test(every_flipped_bit_is_detected),
		cmocka_unit_test(truncated_files_are_reported_as_truncated),
		cmocka_unit_test(unknown_format_byte_is_named),
		cmocka_unit_test(plaintext_is_not_sealed),
		cmocka_unit_test(sealed_file_without_key_is_a_crypto_error),
		cmocka_unit_test(rotation_reads_files_of_previous_keys),
		cmocka_unit_test(empty_keys_are_config_errors),
		cmocka_unit_test(keyring_does_not_keep_the_strings),
		cmocka_unit_test(bad_arguments_are_refused),
		cmocka_unit_test(one_keyring_serves_many_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
