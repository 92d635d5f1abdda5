/*
 * redis_cas_script.c - a big compare-and-put batch as one Redis script.
 *
 * A batch of up to FAUCET_STORE_CAS_BATCH_MAX entries WATCHes its keys
 * (op_cas_batch in redis.c).  A bigger one - an import's chunk of 10,000
 * keys and its marker part (doc/design.md §8.2) - cannot: Redis checks
 * each key a client WATCHes against every other key that client watches,
 * so a WATCH of n keys is n^2 work (0.7 s of server time for 10,000 keys,
 * measured).  A script runs alone on the server instead: it compares every
 * key's stored bytes with the bytes expected, and only when all match
 * writes every entry (and the namespace index), else writes nothing.
 *
 * Bytes are not values: a key can hold its expected value spelled another
 * way (written by redis-cli, or expected as the caller spelled it).  The
 * script then answers with that key's position and stored bytes; they are
 * compared here as values, as every compare-and-put compares, and when
 * they are equal the script is sent again expecting those bytes.  A key
 * that really differs ends the batch unwritten (*written 0).
 *
 * A batch that only creates keys, with no namespace index kept (an
 * import's chunk of new keys and its marker part), is one MSETNX first:
 * the server's own all-or-nothing check that every key is absent.  Only
 * when a key exists does the script run, to say which.
 *
 * A server that refuses scripts (an ACL without @scripting, a server
 * built without Lua) makes the batch FAUCET_EUNSUPPORTED, before anything
 * is written: a run then writes the batch plainly, as on a backend
 * without a batch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stores/redis_internal.h"

#define SCRIPT_WHAT "cannot compare-and-put a batch"

/* KEYS: the entries' full keys, then the index when kept.  ARGV[1]: "1"
 * when the index is kept, else "0"; ARGV[2]: two flag bytes per entry ('e'
 * or '-': an expected value; 'v' or '-': a value to write, else a delete);
 * then per entry the expected bytes, the value's bytes and, only when the
 * index is kept, the state key (the index's member).  Every argument costs
 * the server a Lua string: the flags are one, and the state keys are sent
 * only where they are used.  Answers 0 when it wrote, else {i} or {i,
 * bytes}: entry i holds no entry, or those bytes, not what was expected;
 * {-i}: entry i's key holds no string (a list, a hash).  Keys are read and
 * written a thousand at a time (MGET, MSET, ...: a call per key cost twice
 * the whole import more); MGET says nil of a key that is not a string, so
 * a nil is checked with EXISTS before it counts as absent. */
static const char CAS_SCRIPT[] =
	"local kept = tonumber(ARGV[1])\n"
	"local flags = ARGV[2]\n"
	"local st = 2 + kept\n"
	"local n = #KEYS - kept\n"
	"local S = 1000\n"
	"local byte = string.byte\n"
	"for a = 1, n, S do\n"
	"  local b = math.min(a + S - 1, n)\n"
	"  local cur = redis.call('MGET', unpack(KEYS, a, b))\n"
	"  local nils, at = {}, {}\n"
	"  for i = a, b do\n"
	"    local c = cur[i - a + 1]\n"
	"    local want = false\n"
	"    if byte(flags, 2 * i - 1) == 101 then want = ARGV[3 + (i - 1) * st] end\n"
	"    if c then\n"
	"      if c ~= want then return {i, c} end\n"
	"    else\n"
	"      nils[#nils + 1] = KEYS[i]\n"
	"      at[#at + 1] = i\n"
	"    end\n"
	"  end\n"
	"  if #nils > 0 and redis.call('EXISTS', unpack(nils)) > 0 then\n"
	"    for j = 1, #nils do\n"
	"      if redis.call('EXISTS', nils[j]) == 1 then return {-at[j]} end\n"
	"    end\n"
	"  end\n"
	"  for j = 1, #at do\n"
	"    if byte(flags, 2 * at[j] - 1) == 101 then return {at[j]} end\n"
	"  end\n"
	"end\n"
	"local set, del, zadd, zrem = {}, {}, {}, {}\n"
	"for i = 1, n do\n"
	"  local e = 3 + (i - 1) * st\n"
	"  if byte(flags, 2 * i) == 118 then\n"
	"    set[#set + 1] = KEYS[i]\n"
	"    set[#set + 1] = ARGV[e + 1]\n"
	"    if kept == 1 then\n"
	"      zadd[#zadd + 1] = '0'\n"
	"      zadd[#zadd + 1] = ARGV[e + 2]\n"
	"    end\n"
	"  else\n"
	"    del[#del + 1] = KEYS[i]\n"
	"    if kept == 1 then zrem[#zrem + 1] = ARGV[e + 2] end\n"
	"  end\n"
	"end\n"
	"local function each(cmd, t, step, first)\n"
	"  for a = 1, #t, step do\n"
	"    local b = math.min(a + step - 1, #t)\n"
	"    if first then redis.call(cmd, first, unpack(t, a, b))\n"
	"    else redis.call(cmd, unpack(t, a, b)) end\n"
	"  end\n"
	"end\n"
	"each('MSET', set, 2 * S)\n"
	"each('DEL', del, S)\n"
	"if kept == 1 then\n"
	"  each('ZADD', zadd, 2 * S, KEYS[n + 1])\n"
	"  each('ZREM', zrem, S, KEYS[n + 1])\n"
	"end\n"
	"return 0\n";

/* The EVAL command, built once for every attempt; owned[i] is entry i's
 * expected bytes when a reply replaced them. */
typedef struct {
	const char **argv;
	size_t *lens;
	size_t argc;
	char **rkeys;
	char **owned;
	char *flags; /* ARGV[2]: two bytes per entry */
	char numkeys[24];
} script_call;

static void call_free(script_call *k, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (k->rkeys != NULL)
			free(k->rkeys[i]);
		if (k->owned != NULL)
			free(k->owned[i]);
	}
	free(k->rkeys);
	free(k->owned);
	free(k->flags);
	free(k->argv);
	free(k->lens);
}

/* Where entry i's arguments start: its expected bytes, its value's, and
 * with the index its state key. */
static size_t entry_at(const redis_store *s, size_t n, size_t i)
{
	size_t kept = s->index != NULL;

	return 3 + n + kept + 2 + (2 + kept) * i;
}

/* Argument `at` is p, len bytes (a value's text holds no NUL, but its
 * length is known: no strlen over 10,000 values). */
static void set_arg(script_call *k, size_t at, const char *p, size_t len)
{
	k->argv[at] = p;
	k->lens[at] = len;
}

static void set_str(script_call *k, size_t at, const char *p)
{
	set_arg(k, at, p, strlen(p));
}

static void set_value(script_call *k, size_t at, const faucet_value *v)
{
	set_arg(k, at, v ? faucet_value_json(v) : "", v ? faucet_value_len(v) : 0);
}

static int call_build(const redis_store *s, const faucet_store_guard *g, size_t n,
		      script_call *k)
{
	size_t nkeys = n + (s->index != NULL);

	memset(k, 0, sizeof(*k));
	k->argc = entry_at(s, n, n);
	k->argv = faucet__calloc(k->argc, sizeof(*k->argv));
	k->lens = faucet__calloc(k->argc, sizeof(*k->lens));
	k->rkeys = faucet__calloc(n, sizeof(*k->rkeys));
	k->owned = faucet__calloc(n, sizeof(*k->owned));
	k->flags = faucet__malloc(2 * n + 1);
	if (k->argv == NULL || k->lens == NULL || k->rkeys == NULL || k->owned == NULL ||
	    k->flags == NULL)
		return FAUCET_ENOMEM;
	snprintf(k->numkeys, sizeof(k->numkeys), "%zu", nkeys);
	set_str(k, 0, "EVAL");
	set_str(k, 1, CAS_SCRIPT);
	set_str(k, 2, k->numkeys);
	if (s->index != NULL)
		set_str(k, 3 + n, s->index);
	set_str(k, 3 + nkeys, s->index != NULL ? "1" : "0");
	set_arg(k, 3 + nkeys + 1, k->flags, 2 * n);
	for (size_t i = 0; i < n; i++) {
		size_t at = entry_at(s, n, i);

		if ((k->rkeys[i] = faucet_redis__full_key(s, g[i].key)) == NULL)
			return FAUCET_ENOMEM;
		set_str(k, 3 + i, k->rkeys[i]);
		k->flags[2 * i] = g[i].expected != NULL ? 'e' : '-';
		k->flags[2 * i + 1] = g[i].value != NULL ? 'v' : '-';
		set_value(k, at, g[i].expected);
		set_value(k, at + 1, g[i].value);
		if (s->index != NULL)
			set_str(k, at + 2, g[i].key);
	}
	k->flags[2 * n] = '\0';
	return 0;
}

/* Whether an error reply says the server runs no such command for us (no
 * scripts, or no MSETNX: an ACL). */
static int command_refused(const char *msg)
{
	return strncmp(msg, "NOPERM", 6) == 0 || strncmp(msg, "ERR unknown command", 19) == 0;
}

/* The script's answer that entry i (1-based) holds something else: when
 * those bytes are the expected value spelled otherwise, expect them next
 * time (*again); else the batch stands unwritten. */
static int mismatch(const redis_store *s, const faucet_store_guard *g, size_t n,
		    script_call *k, const redisReply *r, int *again)
{
	long long i = r->element[0]->type == REDIS_REPLY_INTEGER ? r->element[0]->integer : 0;
	faucet_value *cur = NULL;
	size_t at;
	int rc;

	*again = 0;
	if (i < 0 && (size_t)-i <= n)
		return faucet_error_set(FAUCET_ERROR,
					"redis state store namespace '%s': Redis key '%s:%s' for key "
					"'%s' is not a string",
					s->ns, s->ns, g[-i - 1].key, g[-i - 1].key);
	if (i < 1 || (size_t)i > n ||
	    (r->elements == 2 && r->element[1]->type != REDIS_REPLY_STRING))
		return faucet_redis__fail(s, SCRIPT_WHAT, "unexpected reply");
	if (r->elements < 2 || g[i - 1].expected == NULL)
		return 0; /* absent, or present where none was expected */
	if (faucet_value_parse(&cur, r->element[1]->str, r->element[1]->len) != 0)
		return faucet_error_set(FAUCET_ERROR,
					"redis state store namespace '%s': the value of key '%s' is "
					"not valid JSON",
					s->ns, g[i - 1].key);
	if (!faucet_value_equal(cur, g[i - 1].expected)) {
		faucet_value_free(cur);
		return 0;
	}
	faucet_value_free(cur);
	at = entry_at(s, n, (size_t)i - 1);
	free(k->owned[i - 1]);
	k->owned[i - 1] = faucet__malloc(r->element[1]->len + 1);
	if ((rc = k->owned[i - 1] == NULL ? FAUCET_ENOMEM : 0) != 0)
		return rc;
	memcpy(k->owned[i - 1], r->element[1]->str, r->element[1]->len);
	k->owned[i - 1][r->element[1]->len] = '\0';
	set_arg(k, at, k->owned[i - 1], r->element[1]->len);
	*again = 1;
	return 0;
}

/* Send k's command (and a WAIT behind it with min_replicas) and read its
 * reply into *out. */
static int send_write(redis_store *s, redisContext *c, const script_call *k, redisReply **out)
{
	void *reply = NULL;
	int rc;

	*out = NULL;
	if (redisAppendCommandArgv(c, (int)k->argc, k->argv, k->lens) != REDIS_OK)
		return faucet_redis__fail(s, SCRIPT_WHAT, c->errstr);
	if (s->min_replicas > 0 && (rc = faucet_redis__append_wait(s, c)) != 0)
		return rc;
	if (redisGetReply(c, &reply) != REDIS_OK)
		return faucet_redis__lost_write(s, c, SCRIPT_WHAT);
	*out = reply;
	return 0;
}

/* rc after the WAIT's verdict on a write sent by send_write whose reply
 * was read (written: it took effect). */
static int after_wait(redis_store *s, redisContext *c, int rc, int written)
{
	if (s->min_replicas > 0) {
		int wrc = faucet_redis__wait_verdict(s, c, SCRIPT_WHAT, written);

		if (rc == 0)
			rc = wrc;
	}
	return rc;
}

/* One EVAL (and its WAIT): *written when the script wrote, *again when it
 * is to be sent once more. */
static int attempt(redis_store *s, redisContext *c, const faucet_store_guard *g, size_t n,
		   script_call *k, int *written, int *again)
{
	redisReply *r;
	int rc;

	*again = 0;
	if ((rc = send_write(s, c, k, &r)) != 0)
		return rc;
	if (r->type == REDIS_REPLY_INTEGER && r->integer == 0)
		*written = 1;
	else if (r->type == REDIS_REPLY_ARRAY && r->elements >= 1 && r->elements <= 2)
		rc = mismatch(s, g, n, k, r, again);
	else if (r->type == REDIS_REPLY_ERROR && command_refused(r->str))
		rc = FAUCET_EUNSUPPORTED; /* nothing ran */
	else
		rc = faucet_redis__fail(s, SCRIPT_WHAT,
					r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
	freeReplyObject(r);
	return after_wait(s, c, rc, *written);
}

/* Whether the batch only creates keys: every entry expects its key absent
 * and writes a value, and no index is kept (an import's chunk of new keys
 * and its marker part). */
static int only_creates(const redis_store *s, const faucet_store_guard *g, size_t n)
{
	if (s->index != NULL)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (g[i].expected != NULL || g[i].value == NULL)
			return 0;
	return 1;
}

/* A batch that only creates keys as one MSETNX, which sets every key or,
 * when any of them exists (of any type), none: the server's own compare,
 * without a script's arguments turned into Lua strings and back (the
 * script cost the server 3.7 s of a million-key import; MSETNX
 * 0.6 s).  *written 0 when a key existed, or when the
 * server refuses MSETNX (an ACL; nothing ran): the script then runs and
 * says which key. */
static int try_msetnx(redis_store *s, redisContext *c, const faucet_store_guard *g, size_t n,
		      int *written)
{
	script_call k;
	redisReply *r = NULL;
	int rc = 0;

	*written = 0;
	memset(&k, 0, sizeof(k));
	k.argc = 1 + 2 * n;
	k.argv = faucet__calloc(k.argc, sizeof(*k.argv));
	k.lens = faucet__calloc(k.argc, sizeof(*k.lens));
	k.rkeys = faucet__calloc(n, sizeof(*k.rkeys));
	if (k.argv == NULL || k.lens == NULL || k.rkeys == NULL)
		rc = FAUCET_ENOMEM;
	else
		set_str(&k, 0, "MSETNX");
	for (size_t i = 0; i < n && rc == 0; i++) {
		if ((k.rkeys[i] = faucet_redis__full_key(s, g[i].key)) == NULL)
			rc = FAUCET_ENOMEM;
		else {
			set_str(&k, 1 + 2 * i, k.rkeys[i]);
			set_value(&k, 2 + 2 * i, g[i].value);
		}
	}
	if (rc == 0)
		rc = send_write(s, c, &k, &r);
	call_free(&k, n);
	if (rc != 0)
		return rc;
	if (r->type == REDIS_REPLY_INTEGER && (r->integer == 0 || r->integer == 1))
		*written = r->integer == 1;
	else if (r->type != REDIS_REPLY_ERROR || !command_refused(r->str))
		rc = faucet_redis__fail(s, SCRIPT_WHAT,
					r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
	freeReplyObject(r);
	return after_wait(s, c, rc, *written);
}

int faucet_redis__op_cas_script(redis_store *s, redisContext *c, redis_args *a)
{
	script_call k;
	int rc, again = 1;

	*a->written = 0;
	if (only_creates(s, a->guards, a->count) &&
	    ((rc = try_msetnx(s, c, a->guards, a->count, a->written)) != 0 ||
	     *a->written))
		return rc;
	rc = call_build(s, a->guards, a->count, &k);
	for (int n = 0; rc == 0 && again && n < REDIS_CAS_ATTEMPTS; n++)
		rc = attempt(s, c, a->guards, a->count, &k, a->written, &again);
	if (rc == 0 && again)
		rc = faucet_redis__fail(s, SCRIPT_WHAT, "the keys kept changing under us; "
							"gave up after 1000 attempts");
	call_free(&k, a->count);
	return rc;
}
