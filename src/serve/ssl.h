/*
 * ssl.h - the libcrypto functions `faucet serve` calls, loaded when serve
 * starts (see src/cli/dl.h).
 *
 * `faucet` is not linked against libcrypto: relocating it at exec costs
 * every command - a `faucet state get` most of its time - some 120 page
 * faults.  The library loads its own share when an encrypted store or a
 * long key needs it (src/crypto/libcrypto_load.c); serve loads this table
 * before it reads a token or a TLS key (serve_ssl_load()), and the names
 * below call through it.  Include this instead of OpenSSL's headers.
 */
#ifndef FAUCET_SERVE_SSL_H
#define FAUCET_SERVE_SSL_H

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

typedef struct {
	int (*crypto_memcmp)(const void *a, const void *b, size_t len);
	void (*err_clear_error)(void);
	const EVP_MD *(*sha256)(void);
	EVP_MD_CTX *(*md_ctx_new)(void);
	void (*md_ctx_free)(EVP_MD_CTX *ctx);
	int (*digest_init_ex)(EVP_MD_CTX *ctx, const EVP_MD *type, ENGINE *impl);
	int (*digest_update)(EVP_MD_CTX *ctx, const void *d, size_t cnt);
	int (*digest_final_ex)(EVP_MD_CTX *ctx, unsigned char *md, unsigned int *s);
	BIO *(*bio_new_mem_buf)(const void *buf, int len);
	int (*bio_free)(BIO *a);
	X509 *(*pem_read_bio_x509)(BIO *bp, X509 **x, pem_password_cb *cb, void *u);
	EVP_PKEY *(*pem_read_bio_privatekey)(BIO *bp, EVP_PKEY **x, pem_password_cb *cb, void *u);
	int (*x509_check_private_key)(const X509 *cert, const EVP_PKEY *pkey);
	void (*x509_free)(X509 *a);
	void (*pkey_free)(EVP_PKEY *pkey);
} serve_ssl_table;

extern serve_ssl_table serve_ssl;

/* Open libcrypto and fill serve_ssl, once: 0, or the error printed (naming
 * the library and its Debian package) and CLI_EXIT_FAILED. */
int serve_ssl_load(void);

#define CRYPTO_memcmp (*serve_ssl.crypto_memcmp)
#define ERR_clear_error (*serve_ssl.err_clear_error)
#define EVP_sha256 (*serve_ssl.sha256)
#define EVP_MD_CTX_new (*serve_ssl.md_ctx_new)
#define EVP_MD_CTX_free (*serve_ssl.md_ctx_free)
#define EVP_DigestInit_ex (*serve_ssl.digest_init_ex)
#define EVP_DigestUpdate (*serve_ssl.digest_update)
#define EVP_DigestFinal_ex (*serve_ssl.digest_final_ex)
#define BIO_new_mem_buf (*serve_ssl.bio_new_mem_buf)
#define BIO_free (*serve_ssl.bio_free)
#define PEM_read_bio_X509 (*serve_ssl.pem_read_bio_x509)
#define PEM_read_bio_PrivateKey (*serve_ssl.pem_read_bio_privatekey)
#define X509_check_private_key (*serve_ssl.x509_check_private_key)
#define X509_free (*serve_ssl.x509_free)
#define EVP_PKEY_free (*serve_ssl.pkey_free)

#endif
