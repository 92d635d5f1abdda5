/*
 * libcrypto_load.h - OpenSSL's libcrypto, loaded on first use
 * (libcrypto_load.c; see src/common/dynload.h).  Not installed.
 */
#ifndef FAUCET_CRYPTO_LIBCRYPTO_LOAD_H
#define FAUCET_CRYPTO_LIBCRYPTO_LOAD_H

/* 0 once libcrypto is loaded, or FAUCET_EUNSUPPORTED naming the package to
 * install (error set).  Call it before the first libcrypto call of an
 * operation; thread-safe, loads once. */
int faucet__libcrypto_load(void);

#endif
