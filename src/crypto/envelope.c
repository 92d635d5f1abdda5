/*
 * envelope.c - sealing and opening state files with AES-256-GCM
 * (doc/design.md §4).
 *
 * Two decisions a reader must know:
 *
 * - The keyring keeps only the 32-byte keys derived from the key strings
 *   (SHA-256, as the original faucet derives them), never the strings, and
 *   wipes them when it is freed.  It also holds one explicitly fetched
 *   AES-256-GCM implementation: OpenSSL 3 would otherwise look the cipher
 *   up again on every call.  Nothing in a keyring changes after it is
 *   built, and each seal/unseal makes its own EVP context, so threads share
 *   a keyring freely.
 *
 * - Opening never reports "absent".  Any envelope that fails to open is a
 *   FAUCET_ECRYPTO naming the file, and the reasons are kept apart (not an
 *   envelope, truncated, unknown format, authentication failed), because an
 *   operator fixes each differently and a silent miss would make the
 *   pipeline re-sync everything.  GCM writes plaintext before it checks the
 *   tag, so a failed attempt's output is wiped before it is freed.
 */
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/evp.h>

#include "internal.h"
#include "crypto/envelope.h"
#include "crypto/libcrypto_load.h"

#define KEY_LEN 32

/* OpenSSL takes int lengths; feed longer inputs in pieces this big. */
#define UPDATE_CHUNK ((size_t)1 << 30)

/* Contexts already keyed for one key and one direction.  Setting a key
 * up (the AES key schedule, GHASH tables) costs more than sealing a small
 * bookmark, so finished contexts are kept for the next call, which only
 * sets a fresh nonce.  A pool is shared by every thread using the keyring,
 * behind the keyring's mutex; each context is used by one call at a time. */
#define POOL_MAX 8

typedef struct {
	EVP_CIPHER_CTX *ctx[POOL_MAX];
	size_t n;
} ctx_pool;

struct faucet_keyring {
	EVP_CIPHER *cipher;
	pthread_mutex_t lock;         /* guards pools (the keys never change) */
	ctx_pool *pools;              /* [2 * key index + enc] */
	size_t count;                 /* keys[0] writes; keys[1..] are previous keys */
	unsigned char keys[][KEY_LEN];
};

/* Outcome of one GCM open attempt. */
enum { GCM_OK = 0, GCM_AUTH_FAILED = 1, GCM_LIBRARY_ERROR = -1 };

static const char *file_name(const char *path)
{
	return path != NULL ? path : "(unnamed)";
}

/* ---- keyring ---------------------------------------------------------- */

static int derive_key(unsigned char out[KEY_LEN], const char *key)
{
	unsigned int n = 0;

	if (EVP_Digest(key, strlen(key), out, &n, EVP_sha256(), NULL) != 1 || n != KEY_LEN) {
		ERR_clear_error();
		return faucet_error_set(FAUCET_ECRYPTO, "failed to derive the encryption key (SHA-256)");
	}
	return 0;
}

/* A missing key counts as empty: either way there is nothing to derive from. */
static int check_key_strings(const char *key, const char *const *previous, size_t nprev)
{
	if (key == NULL || key[0] == '\0')
		return faucet_error_set(FAUCET_ECONFIG, "encryption key must not be empty");
	if (nprev > 0 && previous == NULL)
		return faucet_error_set(FAUCET_EINVALID, "previous_keys is NULL but %zu were announced",
					nprev);
	for (size_t i = 0; i < nprev; i++) {
		if (previous[i] == NULL || previous[i][0] == '\0')
			return faucet_error_set(FAUCET_ECONFIG, "previous_keys[%zu] must not be empty", i);
	}
	return 0;
}

int faucet__keyring_new(faucet_keyring **out, const char *key,
			const char *const *previous, size_t nprev)
{
	faucet_keyring *kr;
	size_t count;
	int rc;

	if (out == NULL)
		return faucet_error_set(FAUCET_EINVALID, "keyring output pointer is NULL");
	*out = NULL;
	if ((rc = check_key_strings(key, previous, nprev)) != 0)
		return rc;
	if ((rc = faucet__libcrypto_load()) != 0)
		return rc;
	if (nprev > (SIZE_MAX - sizeof(*kr)) / KEY_LEN - 1)
		return faucet_error_set(FAUCET_EINVALID, "too many previous keys (%zu)", nprev);
	count = nprev + 1;

	kr = faucet__calloc(1, sizeof(*kr) + count * KEY_LEN);
	if (kr == NULL)
		return FAUCET_ENOMEM;
	kr->count = count;
	kr->pools = faucet__calloc(2 * count, sizeof(*kr->pools));
	if (kr->pools == NULL || pthread_mutex_init(&kr->lock, NULL) != 0) {
		free(kr->pools);
		free(kr);
		return faucet_error_set(FAUCET_ENOMEM, "cannot create the keyring");
	}
	kr->cipher = EVP_CIPHER_fetch(NULL, "AES-256-GCM", NULL);
	if (kr->cipher == NULL) {
		ERR_clear_error();
		faucet__keyring_free(kr);
		return faucet_error_set(FAUCET_ECRYPTO, "OpenSSL has no AES-256-GCM implementation");
	}
	rc = derive_key(kr->keys[0], key);
	for (size_t i = 0; rc == 0 && i < nprev; i++)
		rc = derive_key(kr->keys[i + 1], previous[i]);
	if (rc != 0) {
		faucet__keyring_free(kr);
		return rc;
	}
	*out = kr;
	return 0;
}

void faucet__keyring_free(faucet_keyring *kr)
{
	if (kr == NULL)
		return;
	explicit_bzero(kr->keys, kr->count * KEY_LEN);
	/* EVP_CIPHER_CTX_free wipes each context's key schedule. */
	for (size_t i = 0; i < 2 * kr->count; i++) {
		for (size_t j = 0; j < kr->pools[i].n; j++)
			EVP_CIPHER_CTX_free(kr->pools[i].ctx[j]);
	}
	free(kr->pools);
	(void)pthread_mutex_destroy(&kr->lock);
	EVP_CIPHER_free(kr->cipher);
	free(kr);
}

/* ---- GCM primitives --------------------------------------------------- */

/* A context keyed with key `i` for encryption (enc = 1) or decryption
 * (enc = 0): from the pool, or set up afresh.  NULL on failure.  The pool
 * lives inside a keyring the API hands around as const: taking and giving
 * back contexts does not change what the keyring means. */
static EVP_CIPHER_CTX *ctx_take(const faucet_keyring *kr, size_t i, int enc)
{
	faucet_keyring *m = (faucet_keyring *)kr;
	ctx_pool *pool = &m->pools[2 * i + (size_t)enc];
	EVP_CIPHER_CTX *ctx = NULL;

	pthread_mutex_lock(&m->lock);
	if (pool->n > 0)
		ctx = pool->ctx[--pool->n];
	pthread_mutex_unlock(&m->lock);
	if (ctx != NULL)
		return ctx;
	ctx = EVP_CIPHER_CTX_new();
	if (ctx == NULL)
		return NULL;
	if (EVP_CipherInit_ex(ctx, kr->cipher, NULL, NULL, NULL, enc) != 1 ||
	    EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, FAUCET_SEAL_NONCE_LEN, NULL) != 1 ||
	    EVP_CipherInit_ex(ctx, NULL, NULL, kr->keys[i], NULL, enc) != 1) {
		EVP_CIPHER_CTX_free(ctx);
		return NULL;
	}
	return ctx;
}

/* Return a context after a call that went through (its state is then
 * known); a context from a failed library call is freed instead. */
static void ctx_give(const faucet_keyring *kr, size_t i, int enc, EVP_CIPHER_CTX *ctx, int reuse)
{
	faucet_keyring *m = (faucet_keyring *)kr;
	ctx_pool *pool = &m->pools[2 * i + (size_t)enc];

	if (reuse) {
		pthread_mutex_lock(&m->lock);
		if (pool->n < POOL_MAX) {
			pool->ctx[pool->n++] = ctx;
			ctx = NULL;
		}
		pthread_mutex_unlock(&m->lock);
	}
	EVP_CIPHER_CTX_free(ctx);
}

/* Start a seal or an open on a keyed context with a fresh nonce (which
 * resets GCM's state), and authenticate `aad` when there is any.  Returns 1
 * on success. */
static int gcm_begin(EVP_CIPHER_CTX *ctx, const unsigned char *nonce, const unsigned char *aad,
		     size_t aad_len)
{
	int n = 0;

	if (EVP_CipherInit_ex(ctx, NULL, NULL, NULL, nonce, -1) != 1)
		return 0;
	if (aad_len > 0) {
		if (aad_len > INT_MAX)
			return 0;
		if (EVP_CipherUpdate(ctx, NULL, &n, aad, (int)aad_len) != 1)
			return 0;
	}
	return 1;
}

/* Run `len` bytes through the cipher.  GCM is a stream mode, so exactly
 * `len` bytes come out.  Returns 1 on success. */
static int gcm_update(EVP_CIPHER_CTX *ctx, const unsigned char *in, size_t len, unsigned char *out)
{
	while (len > 0) {
		size_t chunk = len < UPDATE_CHUNK ? len : UPDATE_CHUNK;
		int n = 0;

		if (EVP_CipherUpdate(ctx, out, &n, in, (int)chunk) != 1 || (size_t)n != chunk)
			return 0;
		in += chunk;
		out += chunk;
		len -= chunk;
	}
	return 1;
}

/* Encrypt `plain` into `cipher_out` (same length) with key 0 and write the
 * tag.  Returns 1 on success. */
static int gcm_seal(const faucet_keyring *kr, const unsigned char *nonce,
		    const unsigned char *aad, size_t aad_len, const unsigned char *plain,
		    size_t len, unsigned char *cipher_out, unsigned char tag[FAUCET_SEAL_TAG_LEN])
{
	EVP_CIPHER_CTX *ctx = ctx_take(kr, 0, 1);
	int n = 0, ok;

	if (ctx == NULL)
		return 0;
	ok = gcm_begin(ctx, nonce, aad, aad_len) && gcm_update(ctx, plain, len, cipher_out) &&
	     EVP_CipherFinal_ex(ctx, cipher_out + len, &n) == 1 && n == 0 &&
	     EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, FAUCET_SEAL_TAG_LEN, tag) == 1;
	ctx_give(kr, 0, 1, ctx, ok);
	return ok;
}

/* Decrypt `ct` into `plain_out` (same length) with key `i` and verify `tag`.
 * The tag check happens last, so on GCM_AUTH_FAILED plain_out holds bytes
 * that must not be used (the caller wipes them). */
static int gcm_open(const faucet_keyring *kr, size_t i, const unsigned char *nonce,
		    const unsigned char *aad, size_t aad_len, const unsigned char *ct, size_t len,
		    const unsigned char *tag, unsigned char *plain_out)
{
	EVP_CIPHER_CTX *ctx = ctx_take(kr, i, 0);
	unsigned char tag_copy[FAUCET_SEAL_TAG_LEN];
	int n = 0, result;

	if (ctx == NULL)
		return GCM_LIBRARY_ERROR;
	/* EVP_CIPHER_CTX_ctrl takes a mutable pointer; hand it a copy rather
	 * than casting away the const of the caller's buffer. */
	memcpy(tag_copy, tag, sizeof(tag_copy));
	if (!gcm_begin(ctx, nonce, aad, aad_len) || !gcm_update(ctx, ct, len, plain_out) ||
	    EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, FAUCET_SEAL_TAG_LEN, tag_copy) != 1)
		result = GCM_LIBRARY_ERROR;
	else if (EVP_CipherFinal_ex(ctx, plain_out + len, &n) != 1)
		result = GCM_AUTH_FAILED;
	else
		result = GCM_OK;
	/* A failed tag check is an ordinary outcome; the next nonce resets the
	 * context, so it goes back to the pool as well. */
	ctx_give(kr, i, 0, ctx, result != GCM_LIBRARY_ERROR);
	return result;
}

/* ---- sealing ---------------------------------------------------------- */

/* The associated data for a format: the state key for 0x02, none for 0x01. */
static int associated_data(unsigned char format, const char *state_key,
			   const unsigned char **aad, size_t *aad_len)
{
	*aad = NULL;
	*aad_len = 0;
	if (format == FAUCET_SEAL_FORMAT_NO_AAD)
		return 0;
	if (state_key == NULL)
		return faucet_error_set(FAUCET_EINVALID, "sealing format 0x02 needs the state key");
	*aad = (const unsigned char *)state_key;
	*aad_len = strlen(state_key);
	return 0;
}

int faucet__seal_with_nonce(const faucet_keyring *kr, const char *state_key,
			    unsigned char format,
			    const unsigned char nonce[FAUCET_SEAL_NONCE_LEN],
			    const void *plain, size_t len,
			    unsigned char **out, size_t *out_len)
{
	const unsigned char *aad;
	size_t aad_len, total;
	unsigned char *env;
	int rc;

	if (out == NULL || out_len == NULL)
		return faucet_error_set(FAUCET_EINVALID, "seal output pointer is NULL");
	*out = NULL;
	*out_len = 0;
	if (kr == NULL || nonce == NULL || (plain == NULL && len > 0))
		return faucet_error_set(FAUCET_EINVALID, "seal called without a keyring, nonce or input");
	if (format != FAUCET_SEAL_FORMAT_NO_AAD && format != FAUCET_SEAL_FORMAT_KEY_AAD)
		return faucet_error_set(FAUCET_EINVALID, "cannot seal in unknown format 0x%02x",
					(unsigned)format);
	if ((rc = associated_data(format, state_key, &aad, &aad_len)) != 0)
		return rc;
	if (len > SIZE_MAX - FAUCET_SEAL_MIN_LEN)
		return faucet_error_set(FAUCET_EINVALID, "value of %zu bytes is too large to seal", len);
	total = len + FAUCET_SEAL_MIN_LEN;

	env = faucet__malloc(total);
	if (env == NULL)
		return FAUCET_ENOMEM;
	memcpy(env, FAUCET_SEAL_MAGIC, FAUCET_SEAL_MAGIC_LEN);
	env[FAUCET_SEAL_MAGIC_LEN] = format;
	memcpy(env + FAUCET_SEAL_MAGIC_LEN + 1, nonce, FAUCET_SEAL_NONCE_LEN);
	if (!gcm_seal(kr, nonce, aad, aad_len, plain, len,
		      env + FAUCET_SEAL_HEADER_LEN, env + FAUCET_SEAL_HEADER_LEN + len)) {
		ERR_clear_error();
		free(env);
		if (state_key != NULL)
			return faucet_error_set(FAUCET_ECRYPTO,
						"OpenSSL failed to encrypt the value of key '%s'",
						state_key);
		return faucet_error_set(FAUCET_ECRYPTO, "OpenSSL failed to encrypt a value");
	}
	*out = env;
	*out_len = total;
	return 0;
}

int faucet__seal(const faucet_keyring *kr, const char *state_key,
		 const void *plain, size_t len, unsigned char **out, size_t *out_len)
{
	unsigned char nonce[FAUCET_SEAL_NONCE_LEN];
	int rc;

	if (out != NULL)
		*out = NULL;
	if (out_len != NULL)
		*out_len = 0;
	/* A nonce must never repeat under one key; 96 random bits from the
	 * kernel make a repeat negligible for any number of writes a state
	 * store will see. */
	if ((rc = faucet__random_bytes(nonce, sizeof(nonce))) != 0)
		return rc;
	return faucet__seal_with_nonce(kr, state_key, FAUCET_SEAL_FORMAT_KEY_AAD, nonce,
				       plain, len, out, out_len);
}

/* ---- opening ---------------------------------------------------------- */

int faucet__is_sealed(const void *data, size_t len)
{
	return data != NULL && len >= FAUCET_SEAL_MAGIC_LEN &&
	       memcmp(data, FAUCET_SEAL_MAGIC, FAUCET_SEAL_MAGIC_LEN) == 0;
}

/*
 * Check the envelope's frame before any decryption.  The order matters for
 * the message: bytes that are not our magic are "not sealed"; a format byte
 * we do not know is reported as such even when the file is short, since a
 * later format may be laid out differently; only then is length checked.
 */
static int check_frame(const char *path, const unsigned char *data, size_t len)
{
	size_t magic_seen = len < FAUCET_SEAL_MAGIC_LEN ? len : FAUCET_SEAL_MAGIC_LEN;

	if (magic_seen > 0 && memcmp(data, FAUCET_SEAL_MAGIC, magic_seen) != 0)
		return faucet_error_set(FAUCET_ECRYPTO,
					"state file %s is not a sealed file (it does not start with FCT1)",
					file_name(path));
	if (len > FAUCET_SEAL_MAGIC_LEN) {
		unsigned char format = data[FAUCET_SEAL_MAGIC_LEN];
		if (format != FAUCET_SEAL_FORMAT_NO_AAD && format != FAUCET_SEAL_FORMAT_KEY_AAD)
			return faucet_error_set(FAUCET_ECRYPTO,
						"state file %s has unknown encryption format byte 0x%02x "
						"(this version of faucet reads 0x01 and 0x02)",
						file_name(path), (unsigned)format);
	}
	if (len < FAUCET_SEAL_MIN_LEN)
		return faucet_error_set(FAUCET_ECRYPTO,
					"state file %s is truncated: %zu bytes, a sealed file has at least %d",
					file_name(path), len, FAUCET_SEAL_MIN_LEN);
	return 0;
}

static int auth_failed(const faucet_keyring *kr, const char *path)
{
	if (kr->count == 1)
		return faucet_error_set(FAUCET_ECRYPTO,
					"state file %s could not be decrypted (wrong key, a file moved "
					"from another key's name, or tampered)",
					file_name(path));
	return faucet_error_set(FAUCET_ECRYPTO,
				"state file %s could not be decrypted with the key or any of the %zu "
				"previous keys (wrong key, a file moved from another key's name, or "
				"tampered)",
				file_name(path), kr->count - 1);
}

int faucet__unseal(const faucet_keyring *kr, const char *state_key, const char *path,
		   const void *data, size_t len, unsigned char **plain, size_t *plain_len)
{
	const unsigned char *env = data, *nonce, *ct, *tag, *aad;
	unsigned char format, *buf;
	size_t ct_len, aad_len;
	int rc, result = GCM_AUTH_FAILED;

	if (plain == NULL || plain_len == NULL)
		return faucet_error_set(FAUCET_EINVALID, "unseal output pointer is NULL");
	*plain = NULL;
	*plain_len = 0;
	if (kr == NULL || (data == NULL && len > 0))
		return faucet_error_set(FAUCET_EINVALID, "unseal called without a keyring or input");
	if ((rc = check_frame(path, env, len)) != 0)
		return rc;
	format = env[FAUCET_SEAL_MAGIC_LEN];
	if ((rc = associated_data(format, state_key, &aad, &aad_len)) != 0)
		return rc;
	nonce = env + FAUCET_SEAL_MAGIC_LEN + 1;
	ct = env + FAUCET_SEAL_HEADER_LEN;
	ct_len = len - FAUCET_SEAL_MIN_LEN;
	tag = env + len - FAUCET_SEAL_TAG_LEN;

	/* One spare byte: callers parse the result as text. */
	buf = faucet__malloc(ct_len + 1);
	if (buf == NULL)
		return FAUCET_ENOMEM;
	for (size_t i = 0; i < kr->count && result == GCM_AUTH_FAILED; i++)
		result = gcm_open(kr, i, nonce, aad, aad_len, ct, ct_len, tag, buf);
	if (result != GCM_OK) {
		ERR_clear_error();
		explicit_bzero(buf, ct_len + 1);
		free(buf);
		if (result == GCM_AUTH_FAILED)
			return auth_failed(kr, path);
		return faucet_error_set(FAUCET_ECRYPTO, "OpenSSL failed while decrypting state file %s",
					file_name(path));
	}
	buf[ct_len] = '\0';
	*plain = buf;
	*plain_len = ct_len;
	return 0;
}

int faucet__sealed_without_key(const char *path)
{
	return faucet_error_set(FAUCET_ECRYPTO,
				"state file %s is encrypted but no encryption key is configured on the "
				"file state store - add state.config.encryption with the original key",
				file_name(path));
}
