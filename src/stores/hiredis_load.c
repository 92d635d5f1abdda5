/*
 * hiredis_load.c - hiredis, loaded when the first Redis store is opened
 * (see dynload.h for why and how; libpq_load.c is the same pattern).
 *
 * HIREDIS_FUNCTIONS lists the hiredis functions libfaucet calls; the two
 * variadic ones (redisAppendCommand, redisCommand) cannot be forwarded as
 * they are and are written out below, through their va_list forms.
 * hiredis changes its soname with every minor version, so the name to load
 * comes from the header we compiled against (HIREDIS_SONAME): the library
 * whose structs redis.c was built for.
 */
#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <stddef.h>

#include "internal.h"
#include "dynload.h"
#include "stores/loaders.h"

#define HIREDIS_STR_(x) #x
#define HIREDIS_STR(x) HIREDIS_STR_(x)

#define HIREDIS_FUNCTIONS(FN, VOID_FN)                                                       \
	FN(redisContext *, redisConnect, (const char *ip, int port), (ip, port), NULL)       \
	FN(redisContext *, redisConnectWithTimeout,                                          \
	   (const char *ip, int port, const struct timeval tv), (ip, port, tv), NULL)        \
	FN(int, redisSetTimeout, (redisContext *c, const struct timeval tv), (c, tv),        \
	   REDIS_ERR)                                                                        \
	VOID_FN(redisFree, (redisContext *c), (c))                                           \
	FN(int, redisvAppendCommand, (redisContext *c, const char *format, va_list ap),      \
	   (c, format, ap), REDIS_ERR)                                                       \
	FN(int, redisAppendCommandArgv,                                                      \
	   (redisContext *c, int argc, const char **argv, const size_t *argvlen),            \
	   (c, argc, argv, argvlen), REDIS_ERR)                                              \
	FN(int, redisGetReply, (redisContext *c, void **reply), (c, reply), REDIS_ERR)       \
	FN(void *, redisvCommand, (redisContext *c, const char *format, va_list ap),         \
	   (c, format, ap), NULL)                                                            \
	FN(void *, redisCommandArgv,                                                         \
	   (redisContext *c, int argc, const char **argv, const size_t *argvlen),            \
	   (c, argc, argv, argvlen), NULL)                                                   \
	VOID_FN(freeReplyObject, (void *reply), (reply))

#define DYN_TABLE hr
#define DYN_LIB hiredis
static struct {
	HIREDIS_FUNCTIONS(FAUCET_DYN_SLOT, FAUCET_DYN_VOID_SLOT)
} hr;

static const faucet_dynsym hr_syms[] = {HIREDIS_FUNCTIONS(FAUCET_DYN_SYM, FAUCET_DYN_VOID_SYM)};

static faucet_dynlib hiredis =
	FAUCET_DYNLIB_INIT("the Redis store", "libhiredis.so." HIREDIS_STR(HIREDIS_SONAME),
			   "libhiredis" HIREDIS_STR(HIREDIS_SONAME), hr_syms);

int faucet__hiredis_load(void)
{
	return faucet__dynlib_ensure(&hiredis);
}

HIREDIS_FUNCTIONS(FAUCET_DYN_STUB, FAUCET_DYN_VOID_STUB)

int redisAppendCommand(redisContext *c, const char *format, ...)
{
	va_list ap;
	int rc;

	va_start(ap, format);
	rc = redisvAppendCommand(c, format, ap);
	va_end(ap);
	return rc;
}

void *redisCommand(redisContext *c, const char *format, ...)
{
	va_list ap;
	void *reply;

	va_start(ap, format);
	reply = redisvCommand(c, format, ap);
	va_end(ap);
	return reply;
}
