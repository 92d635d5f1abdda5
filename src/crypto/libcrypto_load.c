/*
 * libcrypto_load.c - OpenSSL's libcrypto, loaded the first time the library
 * needs it (see src/common/dynload.h for why and how; this is the pattern of
 * src/stores/libpq_load.c).
 *
 * libcrypto is the one large library a file store could have mapped at
 * every exec: relocating it is some 120 page faults and 0.6 ms, which a
 * `faucet state get` of a short key (no SHA-256 file name, no encryption)
 * has no use for.  Its users call faucet__libcrypto_load() first and turn a
 * failure into an error: faucet__keyring_new (an encrypted store) and
 * faucet_file__stem (a key too long to be its own file name), so the
 * stubs' failure values are never relied on.  `faucet serve` loads its own
 * table of the functions it calls (src/serve/ssl.c).
 */
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/opensslv.h>
#include <openssl/sha.h>
#include <stddef.h>

#include "internal.h"
#include "dynload.h"
#include "crypto/libcrypto_load.h"

#define LIBCRYPTO_STR_(x) #x
#define LIBCRYPTO_STR(x) LIBCRYPTO_STR_(x)

#define LIBCRYPTO_FUNCTIONS(FN, VOID_FN)                                                     \
	FN(unsigned char *, SHA256, (const unsigned char *d, size_t n, unsigned char *md),   \
	   (d, n, md), NULL)                                                                 \
	FN(const EVP_MD *, EVP_sha256, (void), (), NULL)                                     \
	FN(int, EVP_Digest,                                                                  \
	   (const void *data, size_t count, unsigned char *md, unsigned int *size,           \
	    const EVP_MD *type, ENGINE *impl),                                               \
	   (data, count, md, size, type, impl), 0)                                           \
	FN(EVP_CIPHER *, EVP_CIPHER_fetch,                                                   \
	   (OSSL_LIB_CTX * ctx, const char *algorithm, const char *properties),              \
	   (ctx, algorithm, properties), NULL)                                               \
	VOID_FN(EVP_CIPHER_free, (EVP_CIPHER * cipher), (cipher))                            \
	FN(EVP_CIPHER_CTX *, EVP_CIPHER_CTX_new, (void), (), NULL)                           \
	VOID_FN(EVP_CIPHER_CTX_free, (EVP_CIPHER_CTX * ctx), (ctx))                          \
	FN(int, EVP_CIPHER_CTX_ctrl, (EVP_CIPHER_CTX * ctx, int type, int arg, void *ptr),   \
	   (ctx, type, arg, ptr), 0)                                                         \
	FN(int, EVP_CipherInit_ex,                                                           \
	   (EVP_CIPHER_CTX * ctx, const EVP_CIPHER *cipher, ENGINE *impl,                    \
	    const unsigned char *key, const unsigned char *iv, int enc),                     \
	   (ctx, cipher, impl, key, iv, enc), 0)                                             \
	FN(int, EVP_CipherUpdate,                                                            \
	   (EVP_CIPHER_CTX * ctx, unsigned char *out, int *outl, const unsigned char *in,    \
	    int inl),                                                                        \
	   (ctx, out, outl, in, inl), 0)                                                     \
	FN(int, EVP_CipherFinal_ex, (EVP_CIPHER_CTX * ctx, unsigned char *outm, int *outl),  \
	   (ctx, outm, outl), 0)                                                             \
	VOID_FN(ERR_clear_error, (void), ())

#define DYN_TABLE lc
#define DYN_LIB libcrypto
static struct {
	LIBCRYPTO_FUNCTIONS(FAUCET_DYN_SLOT, FAUCET_DYN_VOID_SLOT)
} lc;

static const faucet_dynsym lc_syms[] = {LIBCRYPTO_FUNCTIONS(FAUCET_DYN_SYM, FAUCET_DYN_VOID_SYM)};

/* The soname of the major version we compiled against (libcrypto.so.3);
 * Debian's package of it is libssl3 (libssl3t64 since trixie). */
static faucet_dynlib libcrypto =
	FAUCET_DYNLIB_INIT("encryption and long keys' file names",
			   "libcrypto.so." LIBCRYPTO_STR(OPENSSL_VERSION_MAJOR),
			   "libssl" LIBCRYPTO_STR(OPENSSL_VERSION_MAJOR), lc_syms);

int faucet__libcrypto_load(void)
{
	return faucet__dynlib_ensure(&libcrypto);
}

LIBCRYPTO_FUNCTIONS(FAUCET_DYN_STUB, FAUCET_DYN_VOID_STUB)
