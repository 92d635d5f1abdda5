/*
 * sha256.h - SHA-256 (FIPS 180-4) of a byte string.  Not installed.
 *
 * The file store names a long key's file after its SHA-256; that must work
 * without libcrypto, which is loaded only when a store is encrypted
 * (src/crypto/libcrypto_load.c), and a name must never depend on a load
 * that can fail.
 */
#ifndef FAUCET_COMMON_SHA256_H
#define FAUCET_COMMON_SHA256_H

#include <stddef.h>

#define FAUCET_SHA256_LEN 32

void faucet__sha256(const void *data, size_t len, unsigned char digest[FAUCET_SHA256_LEN]);

#endif
