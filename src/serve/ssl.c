/*
 * ssl.c - opening libcrypto for `faucet serve` (see ssl.h).
 */
#include <stddef.h>

#include <openssl/opensslv.h>

#include "../cli/dl.h"
#include "serve.h"
#include "ssl.h"

#define SSL_STR_(x) #x
#define SSL_STR(x) SSL_STR_(x)

serve_ssl_table serve_ssl;

/* The major version compiled against (libcrypto.so.3, Debian's libssl3). */
static const char *const sonames[] = {"libcrypto.so." SSL_STR(OPENSSL_VERSION_MAJOR)};

int serve_ssl_load(void)
{
	static const cli_dl_sym syms[] = {
#define SYM(name, slot) {#name, offsetof(serve_ssl_table, slot)}
		SYM(CRYPTO_memcmp, crypto_memcmp),
		SYM(ERR_clear_error, err_clear_error),
		SYM(EVP_sha256, sha256),
		SYM(EVP_MD_CTX_new, md_ctx_new),
		SYM(EVP_MD_CTX_free, md_ctx_free),
		SYM(EVP_DigestInit_ex, digest_init_ex),
		SYM(EVP_DigestUpdate, digest_update),
		SYM(EVP_DigestFinal_ex, digest_final_ex),
		SYM(BIO_new_mem_buf, bio_new_mem_buf),
		SYM(BIO_free, bio_free),
		SYM(PEM_read_bio_X509, pem_read_bio_x509),
		SYM(PEM_read_bio_PrivateKey, pem_read_bio_privatekey),
		SYM(X509_check_private_key, x509_check_private_key),
		SYM(X509_free, x509_free),
		SYM(EVP_PKEY_free, pkey_free),
#undef SYM
	};
	static int done;

	if (cli_dl_load("libcrypto", "libssl" SSL_STR(OPENSSL_VERSION_MAJOR), sonames,
			     sizeof(sonames) / sizeof(sonames[0]), syms, sizeof(syms) / sizeof(syms[0]),
			     &serve_ssl, sizeof(serve_ssl), &done) != 0)
		return cli_fail(CLI_EXIT_FAILED, "serve");
	return 0;
}
