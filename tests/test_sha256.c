/*
 * test_sha256.c - the SHA-256 that names long keys' files
 * (src/common/sha256.c), against the FIPS 180-4 example vectors and
 * OpenSSL's answer at every length around the block and padding edges.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "sha256.h"

static void hex(const unsigned char *d, char *out)
{
	for (int i = 0; i < FAUCET_SHA256_LEN; i++)
		sprintf(out + 2 * i, "%02x", d[i]);
}

static void assert_digest(const char *msg, size_t len, const char *want)
{
	unsigned char d[FAUCET_SHA256_LEN];
	char got[2 * FAUCET_SHA256_LEN + 1];

	faucet__sha256(msg, len, d);
	hex(d, got);
	assert_string_equal(got, want);
}

static void fips_vectors(void **state)
{
	char *million = malloc(1000000);

	(void)state;
	assert_digest("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	assert_digest("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	assert_digest("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56,
		      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	assert_non_null(million);
	memset(million, 'a', 1000000);
	assert_digest(million, 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	free(million);
}

/* Every length from 0 to 300 (keys are at most 256 bytes) against the
 * system's libcrypto, opened here for the comparison only. */
static void agrees_with_openssl_at_every_length(void **state)
{
	void *h = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL);
	unsigned char *(*ossl_sha256)(const unsigned char *, size_t, unsigned char *);
	unsigned char buf[300], mine[FAUCET_SHA256_LEN], theirs[FAUCET_SHA256_LEN];
	void *sym;

	(void)state;
	if (h == NULL)
		skip();
	sym = dlsym(h, "SHA256");
	assert_non_null(sym);
	memcpy(&ossl_sha256, &sym, sizeof(sym));
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)(i * 7 + 3);
	for (size_t len = 0; len <= sizeof(buf); len++) {
		faucet__sha256(buf, len, mine);
		ossl_sha256(buf, len, theirs);
		assert_memory_equal(mine, theirs, FAUCET_SHA256_LEN);
	}
	dlclose(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fips_vectors),
		cmocka_unit_test(agrees_with_openssl_at_every_length),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
