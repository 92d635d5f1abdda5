/*
 * redis_internal.h - what the Redis store's files share (redis.c: the
 * connections, the operations and open; redis_doctor.c: doctor's probes,
 * the index against the namespace and reindex; redis_cas_script.c: a big
 * compare-and-put batch).  Not installed.
 */
#ifndef FAUCET_STORES_REDIS_INTERNAL_H
#define FAUCET_STORES_REDIS_INTERNAL_H

#include <hiredis/hiredis.h>
#include <stdint.h>
#include <sys/time.h>

#include "internal.h"
#include "store/open_internal.h"
#include "stores/pool.h"
#include "stores/registry.h"

#define REDIS_DEFAULT_NAMESPACE FAUCET__REDIS_NAMESPACE_DEFAULT
#define REDIS_DEFAULT_POOL FAUCET__POOL_DEFAULT
#define REDIS_CONNECT_TIMEOUT_MS 5000
#define REDIS_COMMAND_TIMEOUT_MS 10000
#define REDIS_CAS_ATTEMPTS 1000
#define SENTINEL_JSON "{\"faucet_doctor\":true}"
#define REDIS_SENTINEL_TIMEOUT_MS 1000 /* per sentinel: one that hangs must not stall */
#define REDIS_DEFAULT_WAIT_MS (FAUCET__REDIS_WAIT_S_DEFAULT * 1000)
#define REDIS_SENTINEL_PORT 26379

typedef struct {
	char *host;
	int port;
} redis_addr;

typedef struct {
	faucet_store_backend base;
	char *redacted; /* the URL for messages */
	char *host;
	int port;
	int db;
	char *user;     /* NULL = default user */
	char *password; /* NULL = no AUTH */
	char *ns;       /* namespace */
	char *index;    /* "{ns}.index", the namespace's key index, when kept; else NULL */
	faucet_pool *pool;
	/* Sentinel mode: master != NULL, host/port unused. */
	redis_addr *sentinels;
	size_t nsentinels;
	char *master;
	int min_replicas;    /* 0 = no WAIT */
	int wait_timeout_ms; /* WAIT's timeout, >= 1 */
} redis_store;

typedef struct {
	const char *key;
	const char *rkey; /* "{ns}:{key}" */
	const faucet_value *value;
	const faucet_value *expected;
	faucet_value **out;
	const char *prefix;
	faucet_strarray *list;
	const faucet_entry *entries;
	size_t count;
	int *written;
	const char *const *keys; /* get_many */
	faucet_value **values;
	/* put_guarded: the key set in the guard's (key's) MULTI when it holds */
	const char *then_key, *then_rkey;
	const faucet_value *then_value;
	const faucet_store_guard *guards; /* compare_and_put_batch: `count` of them */
} redis_args;

typedef int (*redis_op)(redis_store *s, redisContext *c, redis_args *a);

/* redis_cas_script.c: compare_and_put_batch of a->guards (a->count, more
 * than WATCH is good for) as one script; *a->written. */
int faucet_redis__op_cas_script(redis_store *s, redisContext *c, redis_args *a);

/* Test hook: called by a get of many keys between its MGET and its look
 * at the keys MGET said nil of; NULL removes it. */
typedef void (*faucet_redis_nils_hook)(void *arg);
void faucet_redis__set_nils_hook(faucet_redis_nils_hook hook, void *arg);

/* Queue WAIT min_replicas wait_timeout behind a write (never timeout 0). */
int faucet_redis__append_wait(const redis_store *s, redisContext *c);

/* Run a command whose reply only has to be of `type`: 0, or reply_ok's
 * error. */
int faucet_redis__command_ok(const redis_store *s, redisContext *c, int argc, const char **argv,
			     const size_t *lens, int type, const char *what);

/* Send one command (argv/lens as hiredis takes them) and return its reply,
 * or NULL with the connection's error in c->err. */
redisReply *faucet_redis__command(redisContext *c, int argc, const char **argv, const size_t *lens);

/* A connection to host:port with the timeouts given, authenticated with
 * the URL's credentials.  A sentinel may run without a password while the
 * data servers have one: its "no password is set" refusal is no error. */
int faucet_redis__connect_node(redis_store *s, const char *host, int port, uint64_t connect_ms,
			       uint64_t command_ms, int sentinel, redisContext **out);

/* "{ns}:{key}" (built by hand: a million-key batch formats a million). */
char *faucet_redis__full_key(const redis_store *s, const char *key);

/* The index's members starting with prefix, in byte order, appended to
 * out: one ZRANGEBYLEX per page, each page starting after the last member
 * of the one before. */
int faucet_redis__index_range(redis_store *s, redisContext *c, const char *prefix,
			      faucet_strarray *out);

/* A write whose reply did not come: hiredis sends the whole request before
 * it reads, so an empty output buffer means the request reached the
 * socket and may have been applied - the outcome is unknown
 * (FAUCET_EUNKNOWN).  Bytes still unsent mean the server never had the
 * whole command (FAUCET_EUNAVAILABLE). */
int faucet_redis__lost_write(const redis_store *s, redisContext *c, const char *what);

/* Milliseconds as a struct timeval (hiredis's timeouts). */
struct timeval faucet_redis__ms_to_tv(uint64_t ms);

/* Delete a->key (one operation on c, for redis_run). */
int faucet_redis__op_del(redis_store *s, redisContext *c, redis_args *a);

/* Read a->key into *a->out (NULL when absent). */
int faucet_redis__op_get(redis_store *s, redisContext *c, redis_args *a);

/* Write a->value at a->key. */
int faucet_redis__op_put(redis_store *s, redisContext *c, redis_args *a);

/* Set the last error: "redis state store URL namespace NS: what: why"
 * (the URL without its password); returns the error code. */
int faucet_redis__fail(const redis_store *s, const char *what, const char *why);

/* Run op on a pooled connection; the pool retries an idempotent op once
 * after a broken connection (faucet__pool_run). */
int faucet_redis__run(redis_store *s, redis_op op, redis_args *a, int idempotent);

/* Check a reply's type; on failure set the last error (a connection error,
 * a Redis error reply or an unexpected type) and free the reply. */
int faucet_redis__reply_ok(const redis_store *s, redisContext *c, redisReply *r, int type,
			   const char *what);

/* The namespace's keys starting with prefix, by SCAN: sorted, unique. */
int faucet_redis__scan_namespace(redis_store *s, redisContext *c, const char *prefix,
				 faucet_strarray *out);

/* Read the reply of the WAIT queued behind a write.  `applied`: the write
 * took effect, so fewer confirmations than min_replicas leave it on the
 * master alone - acknowledged by nobody, lost if the master fails now:
 * FAUCET_EUNKNOWN.  A WAIT reply that never came is lost_write's unknown
 * outcome too. */
int faucet_redis__wait_verdict(const redis_store *s, redisContext *c, const char *what,
			       int applied);

/* The store's doctor and reindex slots (redis_doctor.c). */
int faucet_redis__check(faucet_store_backend *b, const faucet_check_context *ctx,
			faucet_check_report **out);
int faucet_redis__reindex(faucet_store_backend *b, size_t *added, size_t *removed);

#endif
