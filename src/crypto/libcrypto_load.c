/*
 * libcrypto_load.c - OpenSSL's libcrypto, loaded when the first keyring is
 * built (an encrypted file store is opened), not at exec: relocating
 * libcrypto is most of what starting a program costs once libpq is gone
 * (see dynload.h for why and how; libpq_load.c is the same pattern).
 *
 * faucet__keyring_new calls faucet__libcrypto_load first, so a missing
 * library is a clear error at open.  The stubs' failure values (NULL, 0)
 * are then never seen: every other call needs a keyring.
 * OPENSSL_cleanse is not forwarded: explicit_bzero is the same promise and
 * needs nothing loaded, so wiping a buffer can never silently do nothing.
 */
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/opensslv.h>
#include <string.h>

#include "internal.h"
#include "dynload.h"
#include "crypto/envelope.h"

#define CRYPTO_STR_(x) #x
#define CRYPTO_STR(x) CRYPTO_STR_(x)

#define LIBCRYPTO_FUNCTIONS(FN, VOID_FN)                                                         \
	VOID_FN(ERR_clear_error, (void), ())                                                     \
	FN(EVP_CIPHER *, EVP_CIPHER_fetch,                                                       \
	   (OSSL_LIB_CTX *ctx, const char *algorithm, const char *properties),                   \
	   (ctx, algorithm, properties), NULL)                                                   \
	VOID_FN(EVP_CIPHER_free, (EVP_CIPHER *cipher), (cipher))                                 \
	FN(EVP_CIPHER_CTX *, EVP_CIPHER_CTX_new, (void), (), NULL)                               \
	VOID_FN(EVP_CIPHER_CTX_free, (EVP_CIPHER_CTX *c), (c))                                   \
	FN(int, EVP_CIPHER_CTX_ctrl, (EVP_CIPHER_CTX *ctx, int type, int arg, void *ptr),        \
	   (ctx, type, arg, ptr), 0)                                                             \
	FN(int, EVP_CipherInit_ex,                                                               \
	   (EVP_CIPHER_CTX *ctx, const EVP_CIPHER *cipher, ENGINE *impl,                         \
	    const unsigned char *key, const unsigned char *iv, int enc),                         \
	   (ctx, cipher, impl, key, iv, enc), 0)                                                 \
	FN(int, EVP_CipherUpdate,                                                                \
	   (EVP_CIPHER_CTX *ctx, unsigned char *out, int *outl, const unsigned char *in,         \
	    int inl),                                                                            \
	   (ctx, out, outl, in, inl), 0)                                                         \
	FN(int, EVP_CipherFinal_ex, (EVP_CIPHER_CTX *ctx, unsigned char *outm, int *outl),       \
	   (ctx, outm, outl), 0)                                                                 \
	FN(int, EVP_Digest,                                                                      \
	   (const void *data, size_t count, unsigned char *md, unsigned int *size,               \
	    const EVP_MD *type, ENGINE *impl),                                                   \
	   (data, count, md, size, type, impl), 0)                                               \
	FN(const EVP_MD *, EVP_sha256, (void), (), NULL)

#define SLOT(ret, name, params, args, fail) ret(*name) params;
#define VOID_SLOT(name, params, args) void(*name) params;
static struct {
	LIBCRYPTO_FUNCTIONS(SLOT, VOID_SLOT)
} ossl;

#define SYM(ret, name, params, args, fail) {#name, &ossl.name},
#define VOID_SYM(name, params, args) {#name, &ossl.name},
static const faucet_dynsym ossl_syms[] = {LIBCRYPTO_FUNCTIONS(SYM, VOID_SYM)};

static faucet_dynlib libcrypto =
	FAUCET_DYNLIB_INIT("an encrypted file store",
			   "libcrypto.so." CRYPTO_STR(OPENSSL_SHLIB_VERSION),
			   "libssl" CRYPTO_STR(OPENSSL_SHLIB_VERSION), ossl_syms);

int faucet__libcrypto_load(void)
{
	return faucet__dynlib_ensure(&libcrypto);
}

#define STUB(ret, name, params, args, fail) \
	ret name params { return faucet__dynlib_ensure(&libcrypto) == 0 ? ossl.name args : (fail); }
#define VOID_STUB(name, params, args) \
	void name params { if (faucet__dynlib_ensure(&libcrypto) == 0) ossl.name args; }
LIBCRYPTO_FUNCTIONS(STUB, VOID_STUB)

void OPENSSL_cleanse(void *ptr, size_t len)
{
	explicit_bzero(ptr, len);
}
