/*
 * curl_load.c - libcurl, loaded when the first etcd store is opened (see
 * dynload.h for why and how; libpq_load.c is the same pattern).
 *
 * curl_easy_setopt and curl_easy_getinfo are variadic and cannot be
 * forwarded as they are: their stubs below read the one argument by the
 * option's type, which libcurl encodes in the option's number (CURLOPTTYPE_*
 * and CURLINFO_* ranges), and pass it on.  libcurl is initialised once
 * (curl_global_init) before its first handle, under the loader's once.
 */
#include <curl/curl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>

#include "internal.h"
#include "dynload.h"
#include "stores/loaders.h"

#define CURL_FUNCTIONS(FN, VOID_FN)                                                          \
	FN(CURLcode, curl_global_init, (long flags), (flags), CURLE_FAILED_INIT)            \
	FN(CURL *, curl_easy_init, (void), (), NULL)                                         \
	VOID_FN(curl_easy_cleanup, (CURL * h), (h))                                          \
	FN(CURLcode, curl_easy_perform, (CURL * h), (h), CURLE_FAILED_INIT)                  \
	FN(const char *, curl_easy_strerror, (CURLcode c), (c), "libcurl could not be loaded") \
	FN(struct curl_slist *, curl_slist_append, (struct curl_slist * l, const char *s),   \
	   (l, s), NULL)                                                                     \
	VOID_FN(curl_slist_free_all, (struct curl_slist * l), (l))                           \
	FN(curl_version_info_data *, curl_version_info, (CURLversion v), (v), NULL)

#define DYN_TABLE cu
#define DYN_LIB curl
static struct {
	CURL_FUNCTIONS(FAUCET_DYN_SLOT, FAUCET_DYN_VOID_SLOT)
	CURLcode (*setopt)(CURL *, CURLoption, ...);
	CURLcode (*getinfo)(CURL *, CURLINFO, ...);
} cu;

static const faucet_dynsym cu_syms[] = {
	CURL_FUNCTIONS(FAUCET_DYN_SYM, FAUCET_DYN_VOID_SYM)
	{"curl_easy_setopt", &cu.setopt},
	{"curl_easy_getinfo", &cu.getinfo},
};

static faucet_dynlib curl = FAUCET_DYNLIB_INIT("the etcd store", "libcurl.so.4", "libcurl4", cu_syms);

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc = CURLE_FAILED_INIT;

static void global_init(void)
{
	global_rc = cu.curl_global_init(CURL_GLOBAL_DEFAULT);
}

int faucet__curl_load(void)
{
	int rc = faucet__dynlib_ensure(&curl);

	if (rc != 0)
		return rc;
	if (pthread_once(&global_once, global_init) != 0 || global_rc != CURLE_OK)
		return faucet_error_set(FAUCET_ERROR, "libcurl could not be initialised");
	return 0;
}

CURL_FUNCTIONS(FAUCET_DYN_STUB, FAUCET_DYN_VOID_STUB)

/* The gcc type-checking macros of curl.h wrap these names; the functions
 * themselves are what the macros finally call. */
#undef curl_easy_setopt
#undef curl_easy_getinfo

CURLcode curl_easy_setopt(CURL *h, CURLoption option, ...)
{
	va_list ap;
	CURLcode rc;
	long type = (long)option / 10000 * 10000;

	if (faucet__dynlib_ensure(&curl) != 0)
		return CURLE_FAILED_INIT;
	va_start(ap, option);
	if (type == CURLOPTTYPE_LONG) {
		long v = va_arg(ap, long);
		rc = cu.setopt(h, option, v);
	} else if (type == CURLOPTTYPE_OFF_T) {
		curl_off_t v = va_arg(ap, curl_off_t);
		rc = cu.setopt(h, option, v);
	} else {
		/* Object and function pointers, blobs: one pointer-sized
		 * argument, passed on as it came. */
		void *v = va_arg(ap, void *);
		rc = cu.setopt(h, option, v);
	}
	va_end(ap);
	return rc;
}

CURLcode curl_easy_getinfo(CURL *h, CURLINFO info, ...)
{
	va_list ap;
	void *where;
	CURLcode rc;

	if (faucet__dynlib_ensure(&curl) != 0)
		return CURLE_FAILED_INIT;
	va_start(ap, info);
	where = va_arg(ap, void *); /* every CURLINFO takes a pointer */
	rc = cu.getinfo(h, info, where);
	va_end(ap);
	return rc;
}
