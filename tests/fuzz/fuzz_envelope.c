/*
 * fuzz_envelope.c - opening sealed state files (doc/design.md §4) on
 * arbitrary bytes, as the file store does for anything that starts "FCT1".
 *
 * The keyring is fixed: a write key plus one previous key, the one the
 * independent test vectors of tests/test_crypto.c were sealed with, so the
 * seeds open through key rotation.  The state key is fixed too.
 *
 * Properties:
 *   - opening never crashes or leaks, and every refusal is FAUCET_ECRYPTO
 *     (or ENOMEM) with a message naming the file, never "absent";
 *   - only genuine envelopes open: when an input opens, sealing its
 *     plaintext again with the input's own format byte and nonce, under one
 *     of the keyring's keys, reproduces the input byte for byte.  Random or
 *     mutated bytes therefore never pass as a bookmark.
 */
#include <string.h>

#include <faucet/common.h>

#include "crypto/envelope.h"
#include "fuzz.h"

#define WRITE_KEY "fuzz-write-key"
#define PREVIOUS_KEY "faucet-test-key"
#define STATE_KEY "orders::default"
#define PATH "/state/orders%3A%3Adefault.json"

/* Built once; reachable from these statics for the program's life. */
static faucet_keyring *ring;   /* write key + previous key: what opens */
static faucet_keyring *single[2]; /* each key alone: what re-seals */

static faucet_keyring *make_ring(const char *key, const char *previous)
{
	faucet_keyring *kr = NULL;
	const char *prev[1] = {previous};

	FUZZ_CHECK(faucet__keyring_new(&kr, key, previous ? prev : NULL, previous ? 1 : 0) == 0,
		   "keyring: %s", faucet_error_last()->message);
	return kr;
}

static void setup(void)
{
	if (ring != NULL)
		return;
	ring = make_ring(WRITE_KEY, PREVIOUS_KEY);
	single[0] = make_ring(WRITE_KEY, NULL);
	single[1] = make_ring(PREVIOUS_KEY, NULL);
}

/* Whether some key of the ring seals plain into exactly data. */
static int genuine(const uint8_t *data, size_t size, const unsigned char *plain, size_t plain_len)
{
	unsigned char format = data[FAUCET_SEAL_MAGIC_LEN];
	const unsigned char *nonce = data + FAUCET_SEAL_MAGIC_LEN + 1;
	int found = 0;

	for (size_t i = 0; i < 2 && !found; i++) {
		unsigned char *sealed = NULL;
		size_t sealed_len = 0;

		if (faucet__seal_with_nonce(single[i], STATE_KEY, format, nonce, plain, plain_len,
					    &sealed, &sealed_len) != 0)
			continue;
		found = sealed_len == size && memcmp(sealed, data, size) == 0;
		free(sealed);
	}
	return found;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char *plain = NULL;
	size_t plain_len = 0;
	int rc;

	setup();
	rc = faucet__unseal(ring, STATE_KEY, PATH, data, size, &plain, &plain_len);
	if (rc != 0) {
		FUZZ_CHECK(plain == NULL, "failed open left a plaintext behind");
		FUZZ_CHECK(rc == FAUCET_ECRYPTO || rc == FAUCET_ENOMEM, "unexpected code %d", rc);
		FUZZ_CHECK(rc == FAUCET_ENOMEM || strstr(faucet_error_last()->message, PATH) != NULL,
			   "message does not name the file: %s", faucet_error_last()->message);
		return 0;
	}
	FUZZ_CHECK(faucet__is_sealed(data, size) && size >= FAUCET_SEAL_MIN_LEN,
		   "something that is not an envelope opened");
	FUZZ_CHECK(plain != NULL && plain_len == size - FAUCET_SEAL_MIN_LEN && plain[plain_len] == 0,
		   "plaintext of the wrong size or unterminated");
	FUZZ_CHECK(genuine(data, size, plain, plain_len),
		   "a %zu-byte input opened but is not what any key seals", size);
	free(plain);
	return 0;
}
