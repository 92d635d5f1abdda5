/*
 * envelope.h - the sealed-file envelope of doc/design.md §4 (internal, not
 * installed).
 *
 * A sealed state file is laid out as
 *
 *     "FCT1" | format (1 byte) | nonce (12 bytes) | ciphertext | tag (16 bytes)
 *
 * sealed with AES-256-GCM under SHA-256(key string).  Format 0x01 (written
 * by the original faucet) authenticates no associated data; format 0x02,
 * the one we write, authenticates the state key's bytes, so a file copied
 * or renamed to another key's name no longer opens.
 *
 * The file store holds one faucet_keyring for its lifetime.  A keyring is
 * immutable once built and every call makes its own cipher context, so one
 * keyring may be shared by any number of threads without locking.
 */
#ifndef FAUCET_CRYPTO_ENVELOPE_H
#define FAUCET_CRYPTO_ENVELOPE_H

#include <stddef.h>

/* Envelope geometry. */
#define FAUCET_SEAL_MAGIC "FCT1"
#define FAUCET_SEAL_MAGIC_LEN 4
#define FAUCET_SEAL_NONCE_LEN 12
#define FAUCET_SEAL_TAG_LEN 16
#define FAUCET_SEAL_HEADER_LEN (FAUCET_SEAL_MAGIC_LEN + 1 + FAUCET_SEAL_NONCE_LEN)
/* The smallest valid envelope: header and tag around an empty plaintext. */
#define FAUCET_SEAL_MIN_LEN (FAUCET_SEAL_HEADER_LEN + FAUCET_SEAL_TAG_LEN)

/* Format bytes. */
#define FAUCET_SEAL_FORMAT_NO_AAD 0x01 /* original faucet: no associated data */
#define FAUCET_SEAL_FORMAT_KEY_AAD 0x02 /* ours: the state key is bound in */

typedef struct faucet_keyring faucet_keyring;

/*
 * Build a keyring from the write key and the previous keys (tried, in
 * order, after the write key when opening a file).  Only the derived AES
 * keys are kept; the caller's strings are neither copied nor referenced
 * afterwards.  An empty or missing key is FAUCET_ECONFIG.  `previous` may
 * be NULL when nprev is 0.  Free the keyring with faucet__keyring_free().
 */
int faucet__keyring_new(faucet_keyring **out, const char *key,
			const char *const *previous, size_t nprev);

/* Wipe the derived keys and release the keyring.  NULL is ignored. */
void faucet__keyring_free(faucet_keyring *kr);

/* Non-zero when `data` starts with the envelope magic "FCT1".  A JSON text
 * can never start that way, so this tells sealed from plaintext files. */
int faucet__is_sealed(const void *data, size_t len);

/*
 * Seal `plain` for `state_key` under the keyring's write key, in format
 * 0x02 with a fresh random nonce.  On success *out is a malloc'd envelope
 * of *out_len bytes (plaintext length + FAUCET_SEAL_MIN_LEN) that the
 * caller frees; on failure *out is NULL.
 */
int faucet__seal(const faucet_keyring *kr, const char *state_key,
		 const void *plain, size_t len, unsigned char **out, size_t *out_len);

/*
 * Like faucet__seal() with the nonce and the format byte chosen by the
 * caller.  Only for test vectors and format-compatibility tests: reusing a
 * nonce under one key destroys GCM's security.  `state_key` is ignored
 * (and may be NULL) for format 0x01.
 */
int faucet__seal_with_nonce(const faucet_keyring *kr, const char *state_key,
			    unsigned char format,
			    const unsigned char nonce[FAUCET_SEAL_NONCE_LEN],
			    const void *plain, size_t len,
			    unsigned char **out, size_t *out_len);

/*
 * Open an envelope of format 0x01 or 0x02 read from the file `path` (used
 * only in messages) that stores `state_key`.  Tries the write key, then each
 * previous key in order.  On success *plain is a malloc'd buffer of
 * *plain_len bytes plus a terminating NUL (not counted), which the caller
 * frees.  Every failure to open is FAUCET_ECRYPTO with a message naming
 * `path`: not an envelope, truncated, unknown format byte, or "could not
 * be decrypted" (wrong key, moved from another key's name, tampered).
 * Running out of memory is FAUCET_ENOMEM.
 */
int faucet__unseal(const faucet_keyring *kr, const char *state_key, const char *path,
		   const void *data, size_t len, unsigned char **plain, size_t *plain_len);

/* The error for a sealed file read by a store that has no key configured:
 * sets the message naming `path` and returns FAUCET_ECRYPTO. */
int faucet__sealed_without_key(const char *path);

#endif
