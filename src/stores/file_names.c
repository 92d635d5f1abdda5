/*
 * file_names.c - state key <-> file name stem (see file_names.h).
 *
 * Two decisions shape this file.  Capitals are escaped so that two keys that
 * differ only in case never share a file on a case-insensitive filesystem
 * (APFS, NTFS); and over-long stems are hashed so that every name the store
 * writes, temp names included, fits the 255-byte name limit.  Decoding
 * accepts the older, unescaped names too, so the store can find and rename
 * files an earlier release wrote.
 */
#include <string.h>

#include "file_names.h"
#include "internal.h"
#include "crypto/libcrypto_load.h"
#include <openssl/sha.h>
#include <faucet/keys.h>

static const char upper_hex[] = "0123456789ABCDEF";
static const char lower_hex[] = "0123456789abcdef";

/* Bytes a key may hold, one bit each: '-', '.', '/', '0'-'9', ':' in the
 * first word, 'A'-'Z', '_', 'a'-'z' in the second.  A listing checks every
 * byte of every name, so this is one load, not a chain of comparisons. */
static const uint64_t key_bytes[2] = {0x07ffe00000000000u, 0x07fffffe87fffffeu};

static int key_byte_ok(unsigned char c)
{
	return c < 128 && (key_bytes[c >> 6] >> (c & 63) & 1) != 0;
}

/* The rules beyond the bytes, for a key whose every byte is allowed. */
static int key_shape_ok(const char *key, size_t len, int has_slash)
{
	size_t seg_start = 0;

	if (len == 0 || len > FAUCET_KEY_MAX || key[0] == '.')
		return 0;
	if (!has_slash)
		return 1;
	/* '/' only between non-empty segments that do not start with a dot. */
	for (size_t i = 0; i <= len; i++) {
		if (i == len || key[i] == '/') {
			if (i == seg_start || key[seg_start] == '.')
				return 0;
			seg_start = i + 1;
		}
	}
	return 1;
}

/* The same rules as faucet_validate_key() (src/keys/validate.c); the tests
 * check that both agree. */
int faucet_file__key_is_valid(const char *key, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (!key_byte_ok((unsigned char)key[i]))
			return 0;
	}
	return key_shape_ok(key, len, memchr(key, '/', len) != NULL);
}

/* Escape into `out`, which has room for 3 bytes per key byte. */
static size_t escape_key(const char *key, char *out)
{
	size_t n = 0;

	for (const unsigned char *p = (const unsigned char *)key; *p != '\0'; p++) {
		if (*p == ':' || *p == '/' || (*p >= 'A' && *p <= 'Z')) {
			out[n++] = '%';
			out[n++] = upper_hex[*p >> 4];
			out[n++] = upper_hex[*p & 15];
		} else {
			out[n++] = (char)*p;
		}
	}
	out[n] = '\0';
	return n;
}

size_t faucet_file__stem(const char *key, char *out)
{
	char escaped[3 * FAUCET_KEY_MAX + 1];
	unsigned char digest[SHA256_DIGEST_LENGTH];
	size_t len = escape_key(key, escaped);
	size_t cut = FILE_STEM_MAX - 2 * SHA256_DIGEST_LENGTH - 1;

	if (len <= FILE_STEM_MAX) {
		memcpy(out, escaped, len + 1);
		return len;
	}
	/* Back off while either of the two bytes before the cut is a '%', so the
	 * readable prefix never ends in half an escape. */
	while (cut > 0 && (escaped[cut - 1] == '%' || (cut >= 2 && escaped[cut - 2] == '%')))
		cut--;
	/* libcrypto is loaded here, not at exec: most keys are never hashed. */
	if (faucet__libcrypto_load() != 0)
		return 0;
	if (SHA256((const unsigned char *)key, strlen(key), digest) == NULL) {
		(void)faucet_error_set(FAUCET_ECRYPTO, "cannot compute the SHA-256 of key '%s'", key);
		return 0;
	}
	memcpy(out, escaped, cut);
	out[cut] = '~';
	for (size_t i = 0; i < SHA256_DIGEST_LENGTH; i++) {
		out[cut + 1 + 2 * i] = lower_hex[digest[i] >> 4];
		out[cut + 2 + 2 * i] = lower_hex[digest[i] & 15];
	}
	len = cut + 1 + 2 * SHA256_DIGEST_LENGTH;
	out[len] = '\0';
	return len;
}

int faucet_file__stem_is_hashed(const char *stem, size_t len)
{
	return memchr(stem, '~', len) != NULL;
}


size_t faucet_file__decode_stem(const char *stem, size_t len, char *key)
{
	size_t n = 0;
	int has_slash = 0;

	/* Each decoded byte is checked as it is made: a listing decodes every
	 * name, and one pass over it is what that costs. */
	for (size_t i = 0; i < len; n++) {
		if (n == FILE_KEY_CAP - 1)
			return 0; /* longer than any valid key */
		if (stem[i] == '~') {
			return 0; /* hashed: only the sidecar knows the key */
		} else if (stem[i] == '%') {
			int hi, lo;
			if (len - i < 3)
				return 0;
			hi = faucet__hex_digit(stem[i + 1]);
			lo = faucet__hex_digit(stem[i + 2]);
			if (hi < 0 || lo < 0)
				return 0;
			key[n] = (char)(hi << 4 | lo);
			i += 3;
		} else {
			key[n] = stem[i];
			i++;
		}
		if (!key_byte_ok((unsigned char)key[n]))
			return 0;
		has_slash |= key[n] == '/';
	}
	key[n] = '\0';
	return key_shape_ok(key, n, has_slash) ? n : 0;
}
