/*
 * redis.c - the Redis state store ("redis://[:password@]host:port/DB?namespace=ns").
 *
 * Layout (shared with the original faucet): each entry is a plain string
 * key "{namespace}:{key}" holding the value's compact JSON text, so what was
 * written is read back byte for byte.  The namespace (default "faucet") is
 * non-empty and holds no ':', so a namespace can never read another's keys.
 *
 * Atomic compare-and-put compares JSON *values*, which a byte comparison in
 * a Lua script cannot do, and Lua's cjson turns integers into doubles (2^64-1
 * and 2^64-2 would compare equal).  So it is optimistic, in C: WATCH the key,
 * GET it, compare with faucet_value_equal, then MULTI/SET/EXEC.  EXEC fails
 * when anyone wrote the key after the WATCH; we then read it again - usually
 * it no longer equals `expected` and the answer is "not written".  A batch
 * is one MSET, which Redis applies atomically.  A compare-and-put batch is
 * the same over all its keys: WATCH them all and GET each in one round
 * trip, then the MSET of the puts and the DEL of the deletes in one
 * MULTI/EXEC.
 *
 * Connections: a pool (pool.c) of hiredis connections, each authenticated
 * (AUTH) and on the URL's database (SELECT) before use, with timeouts on
 * connect and on every command.  An idle connection the server has closed
 * (a restart) is replaced before use; an idempotent operation that breaks a
 * reused connection is tried once more on a fresh one.  The password never
 * appears in messages.
 *
 * Sentinel ("redis-sentinel://H:P[,H:P...]/MASTER[/DB]", doc/design.md
 * §3.9): hiredis knows no Sentinel, so every new connection asks the
 * sentinels in turn for the master's address (SENTINEL
 * get-master-addr-by-name), connects there and checks that ROLE says
 * master.  A connection that meets EOF, a timeout, READONLY, NOREPLICAS or
 * MASTERDOWN is dropped with every idle one (pool.c), so the next
 * operation asks the sentinels again and reaches the new master.  With
 * min_replicas = N every write is followed, in the same round trip, by
 * WAIT N wait_timeout; fewer than N confirmations is FAUCET_EUNKNOWN: the
 * master has the write, a failover may lose it.  WAIT is never sent with
 * timeout 0, which blocks for ever when no replica answers.
 */
#include <errno.h>
#include <hiredis/hiredis.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <hiredis/sds.h>

#include "internal.h"
#include "store/open_internal.h"
#include "stores/registry.h"
#include "stores/pool.h"
#include "stores/redis_internal.h"


/* ---- messages ---------------------------------------------------------- */

static int redis_fail_code(const redis_store *s, int code, const char *what, const char *why)
{
	return faucet_error_set(code, "redis state store %s namespace '%s': %s: %s", s->redacted,
				s->ns, what, why ? why : "unknown error");
}

int faucet_redis__fail(const redis_store *s, const char *what, const char *why)
{
	return redis_fail_code(s, FAUCET_ERROR, what, why);
}

/* The code of a broken connection, from hiredis's message (0.14 keeps no
 * errno of its own; the text is strerror's): out of time is
 * FAUCET_ETIMEOUT - a blocking socket that hit its SO_RCVTIMEO says
 * EAGAIN - and anything else on the wire (refused, reset, closed) is
 * FAUCET_EUNAVAILABLE, which a caller may retry. */
static int connection_code(const redisContext *c)
{
	if (c->err == REDIS_ERR_IO || c->err == REDIS_ERR_EOF) {
		if (strcmp(c->errstr, strerror(EAGAIN)) == 0 ||
		    strcmp(c->errstr, strerror(ETIMEDOUT)) == 0 ||
		    strcmp(c->errstr, strerror(EINPROGRESS)) == 0 ||
		    strstr(c->errstr, "timed out") != NULL)
			return FAUCET_ETIMEOUT;
		return FAUCET_EUNAVAILABLE;
	}
	return FAUCET_ERROR;
}

/* Redis's replies to a refused AUTH, or to a command that needed one. */
static int is_auth_error(const char *msg)
{
	return strncmp(msg, "WRONGPASS", 9) == 0 || strncmp(msg, "NOAUTH", 6) == 0 ||
	       strstr(msg, "invalid password") != NULL ||
	       strstr(msg, "invalid username-password") != NULL;
}

/* An error reply that says this server is (no longer) a master we may
 * write to: a replica (READONLY), a master without its replicas
 * (NOREPLICAS: min-replicas-to-write) or one cut off from its master
 * (MASTERDOWN).  Nothing was applied.  The connection is marked broken so
 * the pool drops it and the next connection asks the sentinels again. */
static int is_moved_error(const char *msg)
{
	return strncmp(msg, "READONLY", 8) == 0 || strncmp(msg, "NOREPLICAS", 10) == 0 ||
	       strncmp(msg, "MASTERDOWN", 10) == 0;
}

static void mark_moved(redisContext *c)
{
	c->err = REDIS_ERR_OTHER;
	(void)snprintf(c->errstr, sizeof(c->errstr), "%s",
		       "the server is no longer a writable master");
}

/* Check a reply's type; on failure set the last error (a connection error,
 * a Redis error reply or an unexpected type) and free the reply. */
int faucet_redis__reply_ok(const redis_store *s, redisContext *c, redisReply *r, int type,
			   const char *what)
{
	if (r != NULL && (int)r->type == type)
		return 0;
	int code = FAUCET_ERROR;

	if (r == NULL) {
		code = c->err ? connection_code(c) : FAUCET_ERROR;
		(void)redis_fail_code(s, code, what, c->err ? c->errstr : "no reply");
	} else if (r->type == REDIS_REPLY_ERROR) {
		code = is_auth_error(r->str)	? FAUCET_EAUTH
		       : is_moved_error(r->str) ? FAUCET_EUNAVAILABLE
						: FAUCET_ERROR;
		(void)redis_fail_code(s, code, what, r->str);
		if (code == FAUCET_EUNAVAILABLE)
			mark_moved(c);
	} else {
		(void)faucet_redis__fail(s, what, "unexpected reply type");
	}
	if (r != NULL)
		freeReplyObject(r);
	return code;
}

/* A write whose reply did not come: hiredis sends the whole request before
 * it reads, so an empty output buffer means the request reached the
 * socket and may have been applied - the outcome is unknown
 * (FAUCET_EUNKNOWN).  Bytes still unsent mean the server never had the
 * whole command (FAUCET_EUNAVAILABLE). */
int faucet_redis__lost_write(const redis_store *s, redisContext *c, const char *what)
{
	int sent = c->obuf != NULL && c->obuf[0] == '\0';
	int code = sent ? FAUCET_EUNKNOWN : connection_code(c);

	(void)faucet_redis__fail(s, what, c->err ? c->errstr : "no reply");
	return faucet_error_set(code, "%s%s", faucet_error_last()->message,
				sent ? " - outcome unknown (the connection was lost after the "
				       "request was sent; it may have been applied)"
				     : "");
}

redisReply *faucet_redis__command(redisContext *c, int argc, const char **argv, const size_t *lens)
{
	return redisCommandArgv(c, argc, argv, lens);
}

/* Run a command whose reply only has to be of `type`: 0, or faucet_redis__reply_ok's
 * error. */
int faucet_redis__command_ok(const redis_store *s, redisContext *c, int argc, const char **argv,
			     const size_t *lens, int type, const char *what)
{
	redisReply *r = faucet_redis__command(c, argc, argv, lens);
	int rc = faucet_redis__reply_ok(s, c, r, type, what);

	if (rc == 0)
		freeReplyObject(r);
	return rc;
}

/* Queue WAIT min_replicas wait_timeout behind a write (never timeout 0). */
int faucet_redis__append_wait(const redis_store *s, redisContext *c)
{
	char n[16], t[16];
	const char *argv[3] = {"WAIT", n, t};

	snprintf(n, sizeof(n), "%d", s->min_replicas);
	snprintf(t, sizeof(t), "%d", s->wait_timeout_ms > 0 ? s->wait_timeout_ms : REDIS_DEFAULT_WAIT_MS);
	if (redisAppendCommandArgv(c, 3, argv, NULL) != REDIS_OK) {
		/* The write is queued without its WAIT: never send it so. */
		c->err = REDIS_ERR_OOM;
		return faucet_error_set(FAUCET_ENOMEM, "redis state store: out of memory");
	}
	return 0;
}

/* Read the reply of the WAIT queued behind a write.  `applied`: the write
 * took effect, so fewer confirmations than min_replicas leave it on the
 * master alone - acknowledged by nobody, lost if the master fails now:
 * FAUCET_EUNKNOWN.  A WAIT reply that never came is faucet_redis__lost_write's unknown
 * outcome too. */
int faucet_redis__wait_verdict(const redis_store *s, redisContext *c, const char *what,
			       int applied)
{
	void *reply = NULL;
	redisReply *r;
	long long got = -1;

	if (redisGetReply(c, &reply) != REDIS_OK)
		return applied ? faucet_redis__lost_write(s, c, what) : 0;
	r = reply;
	if (r->type == REDIS_REPLY_INTEGER)
		got = r->integer;
	freeReplyObject(r);
	if (!applied || got >= s->min_replicas)
		return 0;
	if (got < 0)
		return faucet_error_set(FAUCET_EUNKNOWN,
					"redis state store %s namespace '%s': %s: WAIT gave no "
					"count of replicas - outcome unknown (the master has the "
					"write; a failover may lose it)",
					s->redacted, s->ns, what);
	return faucet_error_set(FAUCET_EUNKNOWN,
				"redis state store %s namespace '%s': %s: only %lld of %d "
				"replica(s) confirmed the write within %d ms - outcome unknown (the "
				"master has it; a failover now may lose it)",
				s->redacted, s->ns, what, got, s->min_replicas,
				s->wait_timeout_ms > 0 ? s->wait_timeout_ms : REDIS_DEFAULT_WAIT_MS);
}

/* write_ok with min_replicas: the write and its WAIT in one round trip. */
static int write_wait_ok(const redis_store *s, redisContext *c, int argc, const char **argv,
			 const size_t *lens, int type, const char *what)
{
	void *reply = NULL;
	int rc;

	if (redisAppendCommandArgv(c, argc, argv, lens) != REDIS_OK)
		return faucet_redis__fail(s, what, c->errstr);
	if (faucet_redis__append_wait(s, c) != 0)
		return FAUCET_ENOMEM;
	if (redisGetReply(c, &reply) != REDIS_OK)
		return faucet_redis__lost_write(s, c, what);
	rc = faucet_redis__reply_ok(s, c, reply, type, what);
	if (rc == 0)
		freeReplyObject(reply);
	if (c->err != 0)
		return rc; /* dropped by the pool; WAIT's reply goes with it */
	if (rc != 0) {
		(void)faucet_redis__wait_verdict(s, c, what, 0);
		return rc;
	}
	return faucet_redis__wait_verdict(s, c, what, 1);
}

/* faucet_redis__command_ok for a write: a lost reply is an unknown outcome
 * (faucet_redis__lost_write). */
static int write_ok(const redis_store *s, redisContext *c, int argc, const char **argv,
		    const size_t *lens, int type, const char *what)
{
	redisReply *r;
	int rc;

	if (s->min_replicas > 0)
		return write_wait_ok(s, c, argc, argv, lens, type, what);
	r = faucet_redis__command(c, argc, argv, lens);

	if (r == NULL)
		return faucet_redis__lost_write(s, c, what);
	rc = faucet_redis__reply_ok(s, c, r, type, what);
	if (rc == 0)
		freeReplyObject(r);
	return rc;
}

/* ---- connections ------------------------------------------------------- */

struct timeval faucet_redis__ms_to_tv(uint64_t ms)
{
	struct timeval tv;

	tv.tv_sec = (time_t)(ms / 1000);
	tv.tv_usec = (suseconds_t)((ms % 1000) * 1000);
	return tv;
}

/* A connection to host:port with the timeouts given, authenticated with
 * the URL's credentials.  A sentinel may run without a password while the
 * data servers have one: its "no password is set" refusal is no error. */
int faucet_redis__connect_node(redis_store *s, const char *host, int port, uint64_t connect_ms,
			       uint64_t command_ms, int sentinel, redisContext **out)
{
	redisContext *c = redisConnectWithTimeout(host, port, faucet_redis__ms_to_tv(connect_ms));
	int rc = 0;

	*out = NULL;
	if (c == NULL)
		return faucet_error_set(FAUCET_ENOMEM, "redis state store: out of memory");
	if (c->err) {
		char *what = faucet__sprintf("cannot connect to %s %s:%d",
					     sentinel ? "sentinel" : "server", host, port);
		rc = redis_fail_code(s, connection_code(c), what ? what : "cannot connect", c->errstr);
		free(what);
		redisFree(c);
		return rc;
	}
	if (redisSetTimeout(c, faucet_redis__ms_to_tv(command_ms)) != REDIS_OK)
		rc = faucet_redis__fail(s, "cannot set the command timeout", c->errstr);
	if (rc == 0 && s->password != NULL) {
		const char *argv[3] = {"AUTH", s->user ? s->user : s->password, s->password};
		redisReply *r = faucet_redis__command(c, s->user ? 3 : 2, argv, NULL);

		/* Redis's own reply names no secret ("invalid username-password
		 * pair" / "WRONGPASS ..."). */
		if (sentinel && r != NULL && r->type == REDIS_REPLY_ERROR &&
		    strstr(r->str, "without any password configured") != NULL)
			freeReplyObject(r);
		else if ((rc = faucet_redis__reply_ok(s, c, r, REDIS_REPLY_STATUS, "authentication failed")) == 0)
			freeReplyObject(r);
	}
	if (rc != 0) {
		redisFree(c);
		return rc;
	}
	*out = c;
	return 0;
}

/* Ask one sentinel where the master is: *host (caller frees) and *port. */
static int ask_sentinel(redis_store *s, const redis_addr *at, char **host, int *port)
{
	const char *argv[3] = {"SENTINEL", "get-master-addr-by-name", s->master};
	redisContext *c;
	redisReply *r;
	int rc = faucet_redis__connect_node(s, at->host, at->port, REDIS_SENTINEL_TIMEOUT_MS,
			      REDIS_SENTINEL_TIMEOUT_MS, 1, &c);

	if (rc != 0)
		return rc;
	r = faucet_redis__command(c, 3, argv, NULL);
	if (r != NULL && r->type == REDIS_REPLY_NIL) {
		rc = faucet_error_set(FAUCET_EUNAVAILABLE,
				      "redis state store %s: sentinel %s:%d knows no master named "
				      "'%s'",
				      s->redacted, at->host, at->port, s->master);
		freeReplyObject(r);
	} else if ((rc = faucet_redis__reply_ok(s, c, r, REDIS_REPLY_ARRAY,
						  "cannot ask a sentinel")) == 0) {
		char *end = NULL;
		long p = 0;

		if (r->elements == 2 && r->element[0]->type == REDIS_REPLY_STRING &&
		    r->element[1]->type == REDIS_REPLY_STRING)
			p = strtol(r->element[1]->str, &end, 10);
		if (end == NULL || *end != '\0' || p < 1 || p > 65535)
			rc = redis_fail_code(s, FAUCET_EUNAVAILABLE, "cannot ask a sentinel",
					     "malformed get-master-addr-by-name reply");
		else if ((*host = faucet__strdup(r->element[0]->str)) == NULL)
			rc = FAUCET_ENOMEM;
		*port = (int)p;
		freeReplyObject(r);
	}
	redisFree(c);
	return rc;
}

/* The master's address from the first sentinel that knows it; when none
 * does, FAUCET_EUNAVAILABLE with every sentinel's answer. */
static int resolve_master(redis_store *s, char **host, int *port)
{
	faucet_buf why = FAUCET_BUF_INIT;
	int rc = FAUCET_EUNAVAILABLE;

	*host = NULL;
	for (size_t i = 0; i < s->nsentinels; i++) {
		rc = ask_sentinel(s, &s->sentinels[i], host, port);
		if (rc == 0 || rc == FAUCET_ENOMEM || rc == FAUCET_EAUTH) {
			faucet__buf_dispose(&why);
			return rc;
		}
		(void)faucet__buf_printf(&why, "%s%s", i ? "; " : "", faucet_error_last()->message);
	}
	(void)faucet_error_set(FAUCET_EUNAVAILABLE,
			       "redis state store %s: no sentinel gave the address of master "
			       "'%s' (%s)",
			       s->redacted, s->master, why.ptr ? why.ptr : "no sentinels");
	faucet__buf_dispose(&why);
	return FAUCET_EUNAVAILABLE;
}

/* ROLE's first element: "master" on the server we may write to.  A
 * sentinel's answer may be a moment old - the master it names can have
 * been demoted since - so this is checked on every new connection. */
static int check_role(redis_store *s, redisContext *c, const char *host, int port)
{
	const char *argv[1] = {"ROLE"};
	redisReply *r = faucet_redis__command(c, 1, argv, NULL);
	int rc = faucet_redis__reply_ok(s, c, r, REDIS_REPLY_ARRAY, "cannot ask the server's role");

	if (rc != 0)
		return rc;
	if (r->elements < 1 || r->element[0]->type != REDIS_REPLY_STRING ||
	    strcmp(r->element[0]->str, "master") != 0)
		rc = faucet_error_set(FAUCET_EUNAVAILABLE,
				      "redis state store %s: the sentinels name %s:%d as master "
				      "'%s', but it is a %s (a failover is under way; try again)",
				      s->redacted, host, port, s->master,
				      r->elements >= 1 && r->element[0]->type == REDIS_REPLY_STRING
					      ? r->element[0]->str
					      : "server of unknown role");
	freeReplyObject(r);
	return rc;
}

static int redis_connect(void *owner, void **out)
{
	redis_store *s = owner;
	redisContext *c = NULL;
	char *host = NULL;
	int port = s->port, rc;

	if (s->master != NULL) {
		rc = resolve_master(s, &host, &port);
		if (rc != 0)
			return rc;
	}
	rc = faucet_redis__connect_node(s, host ? host : s->host, port, REDIS_CONNECT_TIMEOUT_MS,
			  REDIS_COMMAND_TIMEOUT_MS, 0, &c);
	if (rc == 0 && s->master != NULL)
		rc = check_role(s, c, host, port);
	if (rc == 0 && s->db != 0) {
		char db[16];
		const char *argv[2] = {"SELECT", db};

		snprintf(db, sizeof(db), "%d", s->db);
		rc = faucet_redis__command_ok(s, c, 2, argv, NULL, REDIS_REPLY_STATUS,
					      "cannot select the database");
	}
	free(host);
	if (rc != 0) {
		if (c != NULL)
			redisFree(c);
		return rc;
	}
	*out = c;
	return 0;
}

static void redis_disconnect(void *conn)
{
	redisFree(conn);
}

/* An idle connection has nothing to read; a readable socket means the
 * server closed it (EOF) or sent something we never asked for. */
static int redis_alive(void *conn)
{
	redisContext *c = conn;

	return c->err == 0 && faucet__pool_socket_quiet(c->fd);
}

/* hiredis sets err on a context once its connection failed. */
static int redis_broken(void *conn)
{
	return ((redisContext *)conn)->err != 0;
}

/* A connection inherited across fork() is the parent's too.  redisFree
 * sends nothing (no QUIT) and only closes this process's descriptor, but
 * the descriptor is pointed at /dev/null first all the same, so nothing
 * hiredis might write on the way out can reach the parent's session.
 * Without /dev/null the context is left alone (it stays with the child). */
static void redis_abandon(void *conn)
{
	redisContext *c = conn;

	if (faucet__pool_detach_socket(c->fd) == 0)
		redisFree(c);
}

static const faucet_pool_ops redis_pool_ops = {redis_connect, redis_disconnect, redis_alive,
					       redis_broken, redis_abandon};

/* ---- keys and values --------------------------------------------------- */

/* "{ns}:{key}" (built by hand: a million-key batch formats a million). */
char *faucet_redis__full_key(const redis_store *s, const char *key)
{
	size_t ns_len = strlen(s->ns), key_len = strlen(key);
	char *out = faucet__malloc(ns_len + 1 + key_len + 1);

	if (out == NULL)
		return NULL;
	memcpy(out, s->ns, ns_len);
	out[ns_len] = ':';
	memcpy(out + ns_len + 1, key, key_len + 1);
	return out;
}

/* Append text to a SCAN MATCH pattern with its glob characters escaped, so
 * a prefix matches literally. */
static void put_glob_literal(faucet_buf *b, const char *text)
{
	for (; *text; text++) {
		if (strchr("*?[]\\", *text) != NULL)
			(void)faucet__buf_putc(b, '\\');
		(void)faucet__buf_putc(b, *text);
	}
}

/* ---- transactions ------------------------------------------------------ */

/* One command of a MULTI/EXEC block. */
typedef struct {
	int argc;
	const char **argv;
	const size_t *lens; /* NULL: strlen of each */
} tx_cmd;

/* An argument this big is written from where it lies (send_by_writev)
 * instead of being formatted: hiredis would hold it twice more (the
 * formatted command, then a copy in its output buffer) - 280 MB for a
 * million-key import's rollback marker. */
#define REDIS_BIG_VALUE (1u << 20)
#define SEND_SEGMENTS 16

/* A piece of what send_by_writev writes: bytes of its buffer (ext NULL)
 * or an argument in place. */
typedef struct {
	size_t off, len;
	const char *ext;
} send_segment;

/* MULTI, the commands and EXEC written straight to the socket, big
 * arguments from where they lie; the replies are then read with
 * redisGetReply as for appended commands.  A failed write leaves the
 * context in error (the pool drops it); the server runs nothing of a MULTI
 * it did not receive up to its EXEC. */
static int send_by_writev(redis_store *s, redisContext *c, const tx_cmd *cmds, size_t n,
			  const char *what)
{
	faucet_buf b = FAUCET_BUF_INIT;
	send_segment seg[SEND_SEGMENTS];
	struct iovec iov[SEND_SEGMENTS];
	size_t nseg = 0, start = 0;
	int rc = 0, at = 0, count;

	(void)faucet__buf_puts(&b, "*1\r\n$5\r\nMULTI\r\n");
	for (size_t i = 0; i < n; i++) {
		(void)faucet__buf_printf(&b, "*%d\r\n", cmds[i].argc);
		for (int k = 0; k < cmds[i].argc; k++) {
			const char *arg = cmds[i].argv[k];
			size_t len = cmds[i].lens ? cmds[i].lens[k] : strlen(arg);

			(void)faucet__buf_printf(&b, "$%zu\r\n", len);
			if (len >= REDIS_BIG_VALUE && nseg + 3 <= SEND_SEGMENTS) {
				seg[nseg++] = (send_segment){start, b.len - start, NULL};
				seg[nseg++] = (send_segment){0, len, arg};
				start = b.len;
			} else {
				(void)faucet__buf_put(&b, arg, len);
			}
			(void)faucet__buf_puts(&b, "\r\n");
		}
	}
	(void)faucet__buf_puts(&b, "*1\r\n$4\r\nEXEC\r\n");
	seg[nseg++] = (send_segment){start, b.len - start, NULL};
	if (b.failed) {
		faucet__buf_dispose(&b);
		return FAUCET_ENOMEM;
	}
	for (size_t i = 0; i < nseg; i++)
		iov[i] = (struct iovec){(void *)(seg[i].ext ? seg[i].ext : b.ptr + seg[i].off),
					seg[i].len};
	count = (int)nseg;
	while (at < count) {
		ssize_t w = writev(c->fd, iov + at, count - at);
		size_t done;

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			c->err = REDIS_ERR_IO;
			(void)snprintf(c->errstr, sizeof(c->errstr), "%s",
				       w < 0 ? strerror(errno) : "connection closed");
			rc = redis_fail_code(s, connection_code(c), what, c->errstr);
			break;
		}
		for (done = (size_t)w; at < count && done >= iov[at].iov_len;)
			done -= iov[at++].iov_len;
		if (at < count) {
			iov[at].iov_base = (char *)iov[at].iov_base + done;
			iov[at].iov_len -= done;
		}
	}
	faucet__buf_dispose(&b);
	return rc;
}

/* Send MULTI, the commands and EXEC: appended to hiredis's buffer, or by
 * send_by_writev when an argument is big (and the buffer is empty). */
static int send_tx(redis_store *s, redisContext *c, const tx_cmd *cmds, size_t n,
		   const char *what)
{
	int big = 0;

	for (size_t i = 0; i < n && !big; i++) {
		for (int k = 0; k < cmds[i].argc && !big; k++)
			big = cmds[i].lens != NULL && cmds[i].lens[k] >= REDIS_BIG_VALUE;
	}
	if (big && c->obuf != NULL && sdslen(c->obuf) == 0)
		return send_by_writev(s, c, cmds, n, what);
	if (redisAppendCommand(c, "MULTI") != REDIS_OK)
		return faucet_redis__fail(s, what, c->errstr);
	for (size_t i = 0; i < n; i++) {
		if (redisAppendCommandArgv(c, cmds[i].argc, cmds[i].argv, cmds[i].lens) != REDIS_OK)
			return faucet_redis__fail(s, what, c->errstr);
	}
	if (redisAppendCommand(c, "EXEC") != REDIS_OK)
		return faucet_redis__fail(s, what, c->errstr);
	return 0;
}

/* Queue MULTI, the commands and EXEC and send them in one round trip; read
 * every reply, even after a bad one, so the connection stays in step.
 * *aborted = 1 when EXEC answered nil (a WATCHed key changed: nothing was
 * applied); *executed (when given) = 1 when it answered the commands'
 * results (they ran, even if one of them failed).  A reply that never came
 * is faucet_redis__lost_write's unknown outcome. */
static int run_tx(redis_store *s, redisContext *c, const tx_cmd *cmds, size_t n,
		  const char *what, int *aborted, int *executed)
{
	int rc = 0, moved = 0;

	*aborted = 0;
	if ((rc = send_tx(s, c, cmds, n, what)) != 0)
		return rc;
	if (s->min_replicas > 0 && (rc = faucet_redis__append_wait(s, c)) != 0)
		return rc;
	for (size_t i = 0; i < n + 2; i++) {
		void *reply = NULL;
		redisReply *r;

		/* The first redisGetReply sends the whole block. */
		if (redisGetReply(c, &reply) != REDIS_OK)
			return faucet_redis__lost_write(s, c, what);
		r = reply;
		if (rc != 0) {
			/* an earlier reply already failed */
		} else if (i < n + 1 && r->type != REDIS_REPLY_STATUS) {
			rc = faucet_redis__fail(s, what,
					r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
			if (r->type == REDIS_REPLY_ERROR && is_moved_error(r->str)) {
				moved = 1;
				rc = faucet_error_set(FAUCET_EUNAVAILABLE, "%s",
						      faucet_error_last()->message);
			}
		} else if (i == n + 1 && r->type == REDIS_REPLY_NIL) {
			*aborted = 1;
		} else if (i == n + 1 && r->type != REDIS_REPLY_ARRAY) {
			rc = faucet_redis__fail(s, what,
					r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
		} else if (i == n + 1) {
			if (executed != NULL)
				*executed = 1;
			/* A command can fail inside EXEC (WRONGTYPE) while the
			 * others are applied: say which. */
			for (size_t k = 0; k < r->elements && rc == 0; k++) {
				if (r->element[k]->type == REDIS_REPLY_ERROR)
					rc = faucet_redis__fail(s, what, r->element[k]->str);
			}
		}
		freeReplyObject(r);
	}
	if (s->min_replicas > 0) {
		/* Applied when EXEC ran the block (executed, not aborted). */
		int applied = rc == 0 && !*aborted;
		int wrc = faucet_redis__wait_verdict(s, c, what, applied);

		if (rc == 0)
			rc = wrc;
	}
	if (moved)
		mark_moved(c);
	return rc;
}

/* ---- the namespace index ------------------------------------------------ */

/*
 * With index=true the store keeps a sorted set "{ns}.index" of its keys,
 * every member at score 0, so Redis orders them by bytes - the order list()
 * promises - and ZRANGEBYLEX reads a prefix's keys without visiting the
 * rest of the database.  Without it, a listing SCANs every key of the
 * database, its neighbours' included.  The index is outside the namespace's
 * "{ns}:*" pattern (it has no ':' after the namespace), so a SCAN never
 * returns it and no entry key can collide with it.  Every write and delete
 * of ours changes the entry and the index in one MULTI/EXEC, so they never
 * disagree - unless someone else writes the namespace (the original faucet,
 * redis-cli): doctor compares the index with a SCAN and `faucet state
 * reindex` repairs it.
 */

/* ZRANGEBYLEX bounds of the keys starting with prefix: "[prefix" up to
 * "[prefix\xff" (state keys are ASCII, so every continuation sorts below
 * 0xff); the whole set is "-" .. "+". */
static char *lex_min(const char *prefix)
{
	return *prefix ? faucet__sprintf("[%s", prefix) : faucet__strdup("-");
}

static char *lex_max(const char *prefix)
{
	return *prefix ? faucet__sprintf("[%s\xff", prefix) : faucet__strdup("+");
}

#define INDEX_PAGE 10000

/* The index's members starting with prefix, in byte order, appended to
 * out: one ZRANGEBYLEX per page, each page starting after the last member
 * of the one before. */
int faucet_redis__index_range(redis_store *s, redisContext *c, const char *prefix,
			      faucet_strarray *out)
{
	char *min = lex_min(prefix), *max = lex_max(prefix);
	int rc = min && max ? 0 : FAUCET_ENOMEM;

	while (rc == 0) {
		const char *argv[7] = {"ZRANGEBYLEX", s->index, min, max, "LIMIT", "0", "10000"};
		redisReply *r = faucet_redis__command(c, 7, argv, NULL);
		size_t got;

		rc = faucet_redis__reply_ok(s, c, r, REDIS_REPLY_ARRAY, "cannot read the namespace index");
		if (rc != 0)
			break;
		got = r->elements;
		for (size_t i = 0; i < got && rc == 0; i++) {
			if (r->element[i]->type == REDIS_REPLY_STRING)
				rc = faucet__strarray_push(out, r->element[i]->str);
		}
		if (rc == 0 && got == INDEX_PAGE) {
			free(min);
			min = faucet__sprintf("(%s", out->strings[out->count - 1]);
			if (min == NULL)
				rc = FAUCET_ENOMEM;
		}
		freeReplyObject(r);
		if (got < INDEX_PAGE)
			break;
	}
	free(min);
	free(max);
	return rc;
}

/* One page of the index: ZRANGEBYLEX from just after a->key (when it lies
 * in the prefix's range; else from the prefix), a->count members at most. */
static int op_list_page(redis_store *s, redisContext *c, redis_args *a)
{
	int from_after = a->key != NULL && strcmp(a->key, a->prefix) >= 0;
	char *min = from_after ? faucet__sprintf("(%s", a->key) : lex_min(a->prefix);
	char *max = lex_max(a->prefix);
	char limit[32];
	const char *argv[7] = {"ZRANGEBYLEX", s->index, min, max, "LIMIT", "0", limit};
	redisReply *r;
	int rc = min && max ? 0 : FAUCET_ENOMEM;

	snprintf(limit, sizeof(limit), "%zu", a->count);
	if (rc == 0) {
		r = faucet_redis__command(c, 7, argv, NULL);
		/* reply_ok frees a reply it refuses. */
		rc = faucet_redis__reply_ok(s, c, r, REDIS_REPLY_ARRAY,
					    "cannot read the namespace index");
		if (rc == 0) {
			for (size_t i = 0; rc == 0 && i < r->elements; i++) {
				if (r->element[i]->type == REDIS_REPLY_STRING)
					rc = faucet__strarray_push(a->list, r->element[i]->str);
			}
			freeReplyObject(r);
		}
	}
	free(min);
	free(max);
	if (rc != 0)
		faucet_strarray_dispose(a->list);
	return rc;
}

static int bad_stored_value(const redis_store *s, const char *key, const char *why)
{
	return faucet_error_set(FAUCET_ERROR,
				"redis state store namespace '%s': the value of key '%s' (Redis key "
				"'%s:%s') is not valid JSON (%s)",
				s->ns, key, s->ns, key, why);
}

/* Interpret a GET reply: nil = absent, a string = JSON text. */
static int value_from_reply(const redis_store *s, redisContext *c, redisReply *r,
			    const char *key, faucet_value **out)
{
	int rc = 0;

	*out = NULL;
	if (r != NULL && r->type == REDIS_REPLY_NIL) {
		freeReplyObject(r);
		return 0;
	}
	if (r != NULL && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "WRONGTYPE", 9) == 0) {
		rc = faucet_error_set(FAUCET_ERROR,
				      "redis state store namespace '%s': Redis key '%s:%s' for key "
				      "'%s' is not a string",
				      s->ns, s->ns, key, key);
		freeReplyObject(r);
		return rc;
	}
	rc = faucet_redis__reply_ok(s, c, r, REDIS_REPLY_STRING, "cannot read a key");
	if (rc != 0)
		return rc;
	if (faucet_value_parse(out, r->str, r->len) != 0) {
		char *why = faucet__strdup(faucet_error_last()->message);
		rc = bad_stored_value(s, key, why ? why : "unparsable");
		free(why);
	}
	freeReplyObject(r);
	return rc;
}

/* ---- operations on one connection ------------------------------------ */


int faucet_redis__op_get(redis_store *s, redisContext *c, redis_args *a)
{
	const char *argv[2] = {"GET", a->rkey};

	return value_from_reply(s, c, faucet_redis__command(c, 2, argv, NULL), a->key, a->out);
}

int faucet_redis__op_put(redis_store *s, redisContext *c, redis_args *a)
{
	const char *argv[3] = {"SET", a->rkey, faucet_value_json(a->value)};
	size_t lens[3] = {3, strlen(a->rkey), faucet_value_len(a->value)};
	const char *zadd[4] = {"ZADD", s->index, "0", a->key};
	tx_cmd tx[2] = {{3, argv, lens}, {4, zadd, NULL}};
	int aborted;

	if (s->index == NULL)
		return write_ok(s, c, 3, argv, lens, REDIS_REPLY_STATUS, "cannot write a key");
	return run_tx(s, c, tx, 2, "cannot write a key", &aborted, NULL);
}

int faucet_redis__op_del(redis_store *s, redisContext *c, redis_args *a)
{
	const char *argv[2] = {"DEL", a->rkey};
	const char *zrem[3] = {"ZREM", s->index, a->key};
	tx_cmd tx[2] = {{2, argv, NULL}, {3, zrem, NULL}};
	int aborted;

	if (s->index == NULL)
		return write_ok(s, c, 2, argv, NULL, REDIS_REPLY_INTEGER, "cannot delete a key");
	return run_tx(s, c, tx, 2, "cannot delete a key", &aborted, NULL);
}

/* Whether any of the keys whose value MGET said nil exists: one EXISTS of
 * them all (*any), not one per key (a million-key import's read asked a
 * million EXISTS). */
static int any_nil_exists(redis_store *s, redisContext *c, const char *const *rkeys,
			  const faucet_value *const *got, size_t count, int *any)
{
	const char **argv = faucet__calloc(count + 1, sizeof(*argv));
	redisReply *r;
	int n = 1, rc;

	*any = 0;
	if (argv == NULL)
		return FAUCET_ENOMEM;
	argv[0] = "EXISTS";
	for (size_t i = 0; i < count; i++)
		if (got[i] == NULL)
			argv[n++] = rkeys[i];
	if (n == 1) {
		free(argv);
		return 0;
	}
	r = faucet_redis__command(c, n, argv, NULL);
	free(argv);
	if ((rc = faucet_redis__reply_ok(s, c, r, REDIS_REPLY_INTEGER, "cannot read keys")) != 0)
		return rc;
	*any = r->integer != 0;
	freeReplyObject(r);
	return 0;
}

/* Test hook: called by get_many between its MGET and its look at the keys
 * MGET said nil of. */
static _Atomic(faucet_redis_nils_hook) nils_hook;
static _Atomic(void *) nils_hook_arg;

void faucet_redis__set_nils_hook(faucet_redis_nils_hook hook, void *arg)
{
	atomic_store(&nils_hook_arg, arg);
	atomic_store(&nils_hook, hook);
}

/* MGET answers nil for an absent key and for one that is not a string; a
 * second round trip, only when there were nils, tells them apart, so a
 * list or hash under a state key is an error, as get says, not a missing
 * bookmark.  Only when one of them exists is each asked again, by GET,
 * whose reply is read as a get's (value_from_reply): a string written
 * since the MGET is read (it was not there when MGET looked: the newer
 * value is as true a read), nil is absent, and only WRONGTYPE says the key
 * holds no string.  (An EXISTS of each took
 * a key written in between for a list.) */
static int check_nils(redis_store *s, redisContext *c, const char *const *keys,
		      const char *const *rkeys, faucet_value **got, size_t count)
{
	size_t *nil = NULL, asked = 0;
	faucet_redis_nils_hook hook = atomic_load(&nils_hook);
	int rc, any;

	if (hook != NULL)
		hook(atomic_load(&nils_hook_arg));
	if ((rc = any_nil_exists(s, c, rkeys, (const faucet_value *const *)got, count, &any)) !=
		    0 ||
	    !any)
		return rc;
	if ((nil = faucet__calloc(count, sizeof(*nil))) == NULL)
		return FAUCET_ENOMEM;
	for (size_t i = 0; i < count; i++) {
		const char *argv[2] = {"GET", rkeys[i]};

		if (got[i] != NULL)
			continue;
		if (redisAppendCommandArgv(c, 2, argv, NULL) != REDIS_OK) {
			free(nil);
			return faucet_redis__fail(s, "cannot read keys", c->errstr);
		}
		nil[asked++] = i;
	}
	for (size_t j = 0; j < asked; j++) {
		size_t i = nil[j];
		void *reply = NULL;

		if (redisGetReply(c, &reply) != REDIS_OK) {
			free(nil);
			return value_from_reply(s, c, NULL, keys[i], &got[i]);
		}
		if (rc != 0) /* read on, to keep the connection in step */
			freeReplyObject(reply);
		else
			rc = value_from_reply(s, c, reply, keys[i], &got[i]);
	}
	free(nil);
	return rc;
}

/* The values of a chunk of keys with one MGET. */
static int op_get_many(redis_store *s, redisContext *c, redis_args *a)
{
	const char **argv = faucet__calloc(a->count + 1, sizeof(*argv));
	char **rkeys = faucet__calloc(a->count, sizeof(*rkeys));
	redisReply *r = NULL;
	int rc = argv && rkeys ? 0 : FAUCET_ENOMEM;

	for (size_t i = 0; i < a->count && rc == 0; i++) {
		if ((rkeys[i] = faucet_redis__full_key(s, a->keys[i])) == NULL)
			rc = FAUCET_ENOMEM;
		argv[i + 1] = rkeys[i];
	}
	if (rc == 0) {
		argv[0] = "MGET";
		r = faucet_redis__command(c, (int)a->count + 1, argv, NULL);
		rc = faucet_redis__reply_ok(s, c, r, REDIS_REPLY_ARRAY, "cannot read keys");
	}
	if (rc == 0 && r->elements != a->count) {
		freeReplyObject(r);
		rc = faucet_redis__fail(s, "cannot read keys", "MGET answered the wrong number of values");
	} else if (rc == 0) {
		for (size_t i = 0; i < a->count && rc == 0; i++) {
			redisReply *v = r->element[i];

			if (v->type == REDIS_REPLY_STRING &&
			    faucet_value_parse(&a->values[i], v->str, v->len) != 0) {
				char *why = faucet__strdup(faucet_error_last()->message);
				rc = bad_stored_value(s, a->keys[i], why ? why : "unparsable");
				free(why);
			}
		}
		freeReplyObject(r);
		if (rc == 0)
			rc = check_nils(s, c, a->keys, (const char *const *)rkeys, a->values,
					a->count);
	}
	for (size_t i = 0; i < a->count && rc != 0; i++) {
		faucet_value_free(a->values[i]);
		a->values[i] = NULL;
	}
	for (size_t i = 0; rkeys != NULL && i < a->count; i++)
		free(rkeys[i]);
	free(rkeys);
	free(argv);
	return rc;
}

/* SCAN, never KEYS: it does not block the server on a large data set.  SCAN
 * may return a key twice, so the result is sorted and deduplicated
 * (faucet_redis__scan_namespace, below). */
static int op_list(redis_store *s, redisContext *c, redis_args *a)
{
	int rc;

	if (s->index == NULL)
		return faucet_redis__scan_namespace(s, c, a->prefix, a->list);
	rc = faucet_redis__index_range(s, c, a->prefix, a->list);
	if (rc != 0)
		faucet_strarray_dispose(a->list);
	return rc;
}

/* The namespace's keys starting with prefix, by SCAN: sorted, unique. */
int faucet_redis__scan_namespace(redis_store *s, redisContext *c, const char *prefix,
				 faucet_strarray *out)
{
	faucet_buf pattern = FAUCET_BUF_INIT;
	size_t nslen = strlen(s->ns) + 1;
	char cursor[32] = "0";
	int rc = 0;

	put_glob_literal(&pattern, s->ns);
	(void)faucet__buf_putc(&pattern, ':');
	put_glob_literal(&pattern, prefix);
	(void)faucet__buf_putc(&pattern, '*');
	if (pattern.failed) {
		faucet__buf_dispose(&pattern);
		return FAUCET_ENOMEM;
	}
	do {
		const char *argv[6] = {"SCAN", cursor, "MATCH", pattern.ptr, "COUNT", "10000"};
		redisReply *r = faucet_redis__command(c, 6, argv, NULL);

		if (faucet_redis__reply_ok(s, c, r, REDIS_REPLY_ARRAY, "cannot list keys") != 0) {
			rc = FAUCET_ERROR;
			break;
		}
		if (r->elements != 2 || r->element[0]->type != REDIS_REPLY_STRING ||
		    r->element[1]->type != REDIS_REPLY_ARRAY ||
		    r->element[0]->len >= sizeof(cursor)) {
			freeReplyObject(r);
			rc = faucet_redis__fail(s, "cannot list keys", "malformed SCAN reply");
			break;
		}
		memcpy(cursor, r->element[0]->str, r->element[0]->len + 1);
		for (size_t i = 0; i < r->element[1]->elements && rc == 0; i++) {
			redisReply *k = r->element[1]->element[i];
			if (k->type == REDIS_REPLY_STRING && k->len >= nslen)
				rc = faucet__strarray_push(out, k->str + nslen);
		}
		freeReplyObject(r);
	} while (rc == 0 && strcmp(cursor, "0") != 0);
	faucet__buf_dispose(&pattern);
	if (rc != 0) {
		faucet_strarray_dispose(out);
		return rc;
	}
	faucet__strarray_sort_unique(out);
	return 0;
}

/* Whether the GET reply r (consumed) holds a->expected.  The bytes we
 * stored are the value's compact JSON, so when they are exactly the
 * expected value's the answer needs no parse: a run's marker, compared at
 * each of its rewrites, runs to tens of megabytes. */
static int current_matches(redis_store *s, redisContext *c, const redis_args *a, redisReply *r,
			   int *holds)
{
	faucet_value *current = NULL;
	int rc;

	*holds = 0;
	if (r != NULL && r->type == REDIS_REPLY_STRING && a->expected != NULL &&
	    r->len == faucet_value_len(a->expected) &&
	    memcmp(r->str, faucet_value_json(a->expected), r->len) == 0) {
		freeReplyObject(r);
		*holds = 1;
		return 0;
	}
	rc = value_from_reply(s, c, r, a->key, &current);
	*holds = rc == 0 && faucet_value_equal(current, a->expected);
	faucet_value_free(current);
	return rc;
}

/* Drop the WATCH of a compare that did not hold (or failed), so that no
 * later MULTI on the connection is aborted by it. */
static void unwatch(redisContext *c)
{
	const char *argv[1] = {"UNWATCH"};
	redisReply *r = faucet_redis__command(c, 1, argv, NULL);

	/* No reply: the connection is broken and the pool drops it. */
	if (r != NULL)
		freeReplyObject(r);
}

/* One optimistic attempt at compare-and-put (a->value given) or
 * compare-and-delete (a->value NULL): *done = 0 when EXEC found the key
 * changed. */
static int cas_attempt(redis_store *s, redisContext *c, redis_args *a, int *done)
{
	const char *watch[2] = {"WATCH", a->rkey};
	const char *get[2] = {"GET", a->rkey};
	const char *set[3] = {"SET", a->rkey, a->value ? faucet_value_json(a->value) : NULL};
	size_t setlens[3] = {3, strlen(a->rkey), a->value ? faucet_value_len(a->value) : 0};
	const char *del[2] = {"DEL", a->rkey};
	const char *zadd[4] = {"ZADD", s->index, "0", a->key};
	const char *zrem[3] = {"ZREM", s->index, a->key};
	const char *then_set[3] = {"SET", a->then_rkey,
				   a->then_value ? faucet_value_json(a->then_value) : NULL};
	size_t then_lens[3] = {3, a->then_rkey ? strlen(a->then_rkey) : 0,
			       a->then_value ? faucet_value_len(a->then_value) : 0};
	const char *then_zadd[4] = {"ZADD", s->index, "0", a->then_key};
	const char *what = a->value ? "cannot compare-and-put a key" : "cannot compare-and-delete a key";
	tx_cmd tx[4];
	size_t n = 0;
	int aborted, executed = 0, holds = 0, rc;

	*done = 1;
	rc = faucet_redis__command_ok(s, c, 2, watch, NULL, REDIS_REPLY_STATUS, "cannot watch a key");
	if (rc != 0)
		return rc;
	rc = current_matches(s, c, a, faucet_redis__command(c, 2, get, NULL), &holds);
	if (rc != 0 || !holds) {
		unwatch(c);
		return rc;
	}
	/* In one MULTI/EXEC: SET or DEL, the guarded key's SET (put_guarded),
	 * and the index's change of each. */
	tx[n++] = a->value ? (tx_cmd){3, set, setlens} : (tx_cmd){2, del, NULL};
	if (a->then_rkey != NULL)
		tx[n++] = (tx_cmd){3, then_set, then_lens};
	if (s->index != NULL)
		tx[n++] = a->value ? (tx_cmd){4, zadd, NULL} : (tx_cmd){3, zrem, NULL};
	if (s->index != NULL && a->then_rkey != NULL)
		tx[n++] = (tx_cmd){4, then_zadd, NULL};
	rc = run_tx(s, c, tx, n, what, &aborted, &executed);
	*done = !aborted;
	/* EXEC ran the block: the SET or DEL, first in it, took effect. */
	*a->written = executed;
	return rc;
}

static int op_cas(redis_store *s, redisContext *c, redis_args *a)
{
	for (int attempt = 0; attempt < REDIS_CAS_ATTEMPTS; attempt++) {
		int done, rc = cas_attempt(s, c, a, &done);
		if (rc != 0 || done)
			return rc;
	}
	return faucet_redis__fail(s,
			  a->value ? "cannot compare-and-put a key" : "cannot compare-and-delete a key",
			  "the key kept changing under us; gave up after 1000 attempts");
}

/* The MSET and the index's ZADD of every key in one MULTI/EXEC. */
static int batch_with_index(redis_store *s, redisContext *c, const redis_args *a,
			    const char **mset, const size_t *mset_lens)
{
	size_t argc = 2 + 2 * a->count;
	const char **zadd = faucet__calloc(argc, sizeof(*zadd));
	tx_cmd tx[2];
	int aborted, rc;

	if (zadd == NULL)
		return FAUCET_ENOMEM;
	zadd[0] = "ZADD";
	zadd[1] = s->index;
	for (size_t i = 0; i < a->count; i++) {
		zadd[2 + 2 * i] = "0";
		zadd[3 + 2 * i] = a->entries[i].key;
	}
	tx[0] = (tx_cmd){(int)(1 + 2 * a->count), mset, mset_lens};
	tx[1] = (tx_cmd){(int)argc, zadd, NULL};
	rc = run_tx(s, c, tx, 2, "cannot write a batch", &aborted, NULL);
	free(zadd);
	return rc;
}

/* An MSET's pair at argv[at]: the full key and the value's JSON. */
static void put_pair(const char **argv, size_t *lens, size_t at, const char *rkey,
		     const faucet_value *value)
{
	argv[at] = rkey;
	lens[at] = strlen(rkey);
	argv[at + 1] = faucet_value_json(value);
	lens[at + 1] = faucet_value_len(value);
}

/* MSET sets every key at once, atomically. */
static int op_batch(redis_store *s, redisContext *c, redis_args *a)
{
	size_t argc = 1 + 2 * a->count;
	const char **argv = faucet__calloc(argc, sizeof(*argv));
	size_t *lens = faucet__calloc(argc, sizeof(*lens));
	char **keys = faucet__calloc(a->count, sizeof(*keys));
	int rc = 0;

	if (argv == NULL || lens == NULL || keys == NULL)
		rc = FAUCET_ENOMEM;
	for (size_t i = 0; i < a->count && rc == 0; i++) {
		keys[i] = faucet_redis__full_key(s, a->entries[i].key);
		if (keys[i] == NULL) {
			rc = FAUCET_ENOMEM;
			break;
		}
		put_pair(argv, lens, 1 + 2 * i, keys[i], a->entries[i].value);
	}
	if (rc == 0) {
		argv[0] = "MSET";
		lens[0] = 4;
		if (s->index == NULL)
			rc = write_ok(s, c, (int)argc, argv, lens, REDIS_REPLY_STATUS,
				      "cannot write a batch");
		else
			rc = batch_with_index(s, c, a, argv, lens);
	}
	for (size_t i = 0; keys != NULL && i < a->count; i++)
		free(keys[i]);
	free(keys);
	free(argv);
	free(lens);
	return rc;
}

/* ---- compare-and-put batches ------------------------------------------- */

#define CAS_BATCH_WHAT "cannot compare-and-put a batch"

/* A compare-and-put batch's commands, built once for all its attempts:
 * WATCH of every key, then for the MULTI/EXEC the MSET of the puts, the
 * DEL of the deletes and, with the index, their ZADD and ZREM. */
typedef struct {
	char **rkeys;       /* the entries' full keys */
	const char **args;  /* every command's arguments, carved up below */
	size_t *lens;       /* the MSET's */
	const char **watch; /* WATCH and every full key */
	tx_cmd tx[4];
	size_t ntx;
} cas_batch;

static void cas_batch_free(cas_batch *b, size_t n)
{
	for (size_t i = 0; b->rkeys != NULL && i < n; i++)
		free(b->rkeys[i]);
	free(b->rkeys);
	free(b->args);
	free(b->lens);
}

/* Room for every command's arguments, and each entry's full key. */
static int cas_batch_alloc(const redis_store *s, const faucet_store_guard *g, size_t n,
			   size_t nput, cas_batch *b)
{
	size_t ndel = n - nput;
	size_t nargs = (1 + n) + (1 + 2 * nput) + (1 + ndel) + (2 + 2 * nput) + (2 + ndel);

	memset(b, 0, sizeof(*b));
	b->rkeys = faucet__calloc(n, sizeof(*b->rkeys));
	b->args = faucet__calloc(nargs, sizeof(*b->args));
	b->lens = faucet__calloc(1 + 2 * nput, sizeof(*b->lens));
	if (b->rkeys == NULL || b->args == NULL || b->lens == NULL)
		return FAUCET_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if ((b->rkeys[i] = faucet_redis__full_key(s, g[i].key)) == NULL)
			return FAUCET_ENOMEM;
	}
	return 0;
}

/* A command of the MULTI/EXEC, left out when it has no keys: Redis
 * refuses an MSET, DEL, ZADD or ZREM of none. */
static void cas_batch_add(cas_batch *b, size_t keys, int argc, const char **argv,
			  const size_t *lens)
{
	if (keys > 0)
		b->tx[b->ntx++] = (tx_cmd){argc, argv, lens};
}

/* Fill the commands in, the puts' and the deletes' each in entry order. */
static void cas_batch_fill(const redis_store *s, const faucet_store_guard *g, size_t n,
			   size_t nput, cas_batch *b)
{
	const char **mset = b->args + 1 + n, **del = mset + 1 + 2 * nput;
	const char **zadd = del + 1 + (n - nput), **zrem = zadd + 2 + 2 * nput;
	size_t p = 0, d = 0;

	b->watch = b->args;
	b->watch[0] = "WATCH";
	mset[0] = "MSET";
	b->lens[0] = 4;
	del[0] = "DEL";
	zadd[0] = "ZADD";
	zrem[0] = "ZREM";
	zadd[1] = zrem[1] = s->index;
	for (size_t i = 0; i < n; i++) {
		b->watch[1 + i] = b->rkeys[i];
		if (g[i].value != NULL) {
			put_pair(mset, b->lens, 1 + 2 * p, b->rkeys[i], g[i].value);
			zadd[2 + 2 * p] = "0";
			zadd[3 + 2 * p++] = g[i].key;
		} else {
			del[1 + d] = b->rkeys[i];
			zrem[2 + d++] = g[i].key;
		}
	}
	cas_batch_add(b, p, (int)(1 + 2 * p), mset, b->lens);
	cas_batch_add(b, d, (int)(1 + d), del, NULL);
	cas_batch_add(b, s->index ? p : 0, (int)(2 + 2 * p), zadd, NULL);
	cas_batch_add(b, s->index ? d : 0, (int)(2 + d), zrem, NULL);
}

static int cas_batch_build(const redis_store *s, const faucet_store_guard *g, size_t n,
			   cas_batch *b)
{
	size_t nput = 0;
	int rc;

	for (size_t i = 0; i < n; i++)
		nput += g[i].value != NULL;
	if ((rc = cas_batch_alloc(s, g, n, nput, b)) == 0)
		cas_batch_fill(s, g, n, nput, b);
	return rc;
}

/* Queue the WATCH of every key and a GET of each, sent in one round trip
 * by the first read.  A GET, unlike MGET, says WRONGTYPE of a key that is
 * not a string instead of nil, so a hash is never taken for "absent" and
 * overwritten, just as compare-and-put refuses it. */
static int append_reads(redis_store *s, redisContext *c, const cas_batch *b, size_t n)
{
	/* A failed append marks the connection broken: the pool drops it. */
	if (redisAppendCommandArgv(c, (int)(1 + n), b->watch, NULL) != REDIS_OK)
		return faucet_redis__fail(s, "cannot watch keys", c->errstr);
	for (size_t i = 0; i < n; i++) {
		const char *get[2] = {"GET", b->rkeys[i]};

		if (redisAppendCommandArgv(c, 2, get, NULL) != REDIS_OK)
			return faucet_redis__fail(s, "cannot read keys", c->errstr);
	}
	return 0;
}

/* Read the WATCH's reply, then each GET's, compared with its entry's
 * expected as compare-and-put compares (current_matches).  Every reply is
 * read, even after an error reply or a key that does not hold, so the
 * connection stays in step. */
static int read_verdicts(redis_store *s, redisContext *c, const redis_args *a, int *holds)
{
	int rc = 0;

	*holds = 1;
	for (size_t i = 0; i <= a->count; i++) {
		void *reply = NULL;

		if (redisGetReply(c, &reply) != REDIS_OK)
			return faucet_redis__reply_ok(s, c, NULL, REDIS_REPLY_STATUS,
						      "cannot read keys");
		if (rc != 0 || !*holds) {
			freeReplyObject(reply);
		} else if (i == 0) {
			rc = faucet_redis__reply_ok(s, c, reply, REDIS_REPLY_STATUS,
						    "cannot watch keys");
			if (rc == 0)
				freeReplyObject(reply);
		} else {
			redis_args one = {.key = a->guards[i - 1].key,
					  .expected = a->guards[i - 1].expected};

			rc = current_matches(s, c, &one, reply, holds);
		}
	}
	return rc;
}

/* One optimistic attempt: *done = 0 when EXEC found a key changed since
 * the WATCH (nothing was written; the caller reads them all again). */
static int cas_batch_attempt(redis_store *s, redisContext *c, const redis_args *a,
			     const cas_batch *b, int *done)
{
	int aborted, executed = 0, holds = 0, rc;

	*done = 1;
	rc = append_reads(s, c, b, a->count);
	if (rc == 0)
		rc = read_verdicts(s, c, a, &holds);
	if (rc != 0 || !holds) {
		unwatch(c);
		return rc;
	}
	rc = run_tx(s, c, b->tx, b->ntx, CAS_BATCH_WHAT, &aborted, &executed);
	*done = !aborted;
	/* EXEC ran the block: the MSET and DEL, first in it, took effect. */
	*a->written = executed;
	return rc;
}

static int op_cas_batch(redis_store *s, redisContext *c, redis_args *a)
{
	cas_batch b;
	int done = 0, rc = cas_batch_build(s, a->guards, a->count, &b);

	for (int attempt = 0; rc == 0 && !done && attempt < REDIS_CAS_ATTEMPTS; attempt++)
		rc = cas_batch_attempt(s, c, a, &b, &done);
	if (rc == 0 && !done)
		rc = faucet_redis__fail(s, CAS_BATCH_WHAT, "the keys kept changing under us; "
							   "gave up after 1000 attempts");
	cas_batch_free(&b, a->count);
	return rc;
}

/* ---- pooled operations ------------------------------------------------- */

/* One operation bound to its store and arguments, for faucet__pool_run. */
typedef struct {
	redis_store *s;
	redis_op op;
	redis_args *a;
} redis_call;

static int redis_call_on(void *conn, void *ctx)
{
	redis_call *k = ctx;

	return k->op(k->s, conn, k->a);
}

/* Run op on a pooled connection; the pool retries an idempotent op once
 * after a broken connection (faucet__pool_run). */
int faucet_redis__run(redis_store *s, redis_op op, redis_args *a, int idempotent)
{
	redis_call k = {s, op, a};

	return faucet__pool_run(s->pool, redis_call_on, &k, idempotent);
}

static int run_on_key(redis_store *s, redis_op op, redis_args *a, int idempotent)
{
	char *rkey = faucet_redis__full_key(s, a->key);
	int rc;

	if (rkey == NULL)
		return FAUCET_ENOMEM;
	a->rkey = rkey;
	rc = faucet_redis__run(s, op, a, idempotent);
	free(rkey);
	return rc;
}

static int redis_get(faucet_store_backend *b, const char *key, faucet_value **out)
{
	redis_args a = {.key = key, .out = out};

	return run_on_key((redis_store *)b, faucet_redis__op_get, &a, 1);
}

static int redis_get_many(faucet_store_backend *b, const char *const *keys, size_t count,
			  faucet_value **out)
{
	redis_args a = {.keys = keys, .count = count, .values = out};

	if (count == 0)
		return 0;
	return faucet_redis__run((redis_store *)b, op_get_many, &a, 1);
}

static int redis_put(faucet_store_backend *b, const char *key, const faucet_value *value)
{
	redis_args a = {.key = key, .value = value};

	return run_on_key((redis_store *)b, faucet_redis__op_put, &a, 1);
}

static int redis_del(faucet_store_backend *b, const char *key)
{
	redis_args a = {.key = key};

	return run_on_key((redis_store *)b, faucet_redis__op_del, &a, 1);
}

static int redis_list(faucet_store_backend *b, const char *prefix, faucet_strarray *out)
{
	redis_args a = {.prefix = prefix, .list = out};

	return faucet_redis__run((redis_store *)b, op_list, &a, 1);
}

/* Only with the index: a SCAN has no order to page by. */
static int redis_list_page(faucet_store_backend *b, const char *prefix, const char *after,
			   size_t limit, faucet_strarray *out)
{
	redis_args a = {.prefix = prefix, .key = after, .count = limit, .list = out};

	return faucet_redis__run((redis_store *)b, op_list_page, &a, 1);
}

static int redis_compare_and_put(faucet_store_backend *b, const char *key,
				 const faucet_value *expected, const faucet_value *value,
				 int *written)
{
	redis_args a = {.key = key, .expected = expected, .value = value, .written = written};

	*written = 0;
	/* Never retried after a broken connection: EXEC may have run. */
	return run_on_key((redis_store *)b, op_cas, &a, 0);
}

/* The guard's compare-and-put with the key's SET (and index changes) in
 * its MULTI/EXEC: both written, or neither. */
static int redis_put_guarded(faucet_store_backend *b, const char *guard,
			     const faucet_value *expected, const faucet_value *guard_value,
			     const char *key, const faucet_value *value, int *written)
{
	redis_store *s = (redis_store *)b;
	redis_args a = {.key = guard, .expected = expected, .value = guard_value,
			.written = written, .then_key = key, .then_value = value};
	int rc;

	*written = 0;
	if ((a.then_rkey = faucet_redis__full_key(s, key)) == NULL)
		return FAUCET_ENOMEM;
	rc = run_on_key(s, op_cas, &a, 0);
	free((char *)a.then_rkey);
	return rc;
}

static int redis_compare_and_delete(faucet_store_backend *b, const char *key,
				    const faucet_value *expected, int *deleted)
{
	redis_args a = {.key = key, .expected = expected, .value = NULL, .written = deleted};

	*deleted = 0;
	/* Never retried after a broken connection: EXEC may have run. */
	return run_on_key((redis_store *)b, op_cas, &a, 0);
}

static int redis_put_batch(faucet_store_backend *b, const faucet_entry *entries, size_t count)
{
	redis_args a = {.entries = entries, .count = count};

	if (count == 0)
		return 0;
	return faucet_redis__run((redis_store *)b, op_batch, &a, 1);
}

static int redis_compare_and_put_batch(faucet_store_backend *b, const faucet_store_guard *entries,
				       size_t n, int *written)
{
	redis_args a = {.guards = entries, .count = n, .written = written};
	int rc;

	*written = 0;
	/* Never retried after a broken connection: EXEC may have run.  More
	 * keys than FAUCET_STORE_CAS_BATCH_MAX go by a script: a WATCH of n
	 * keys costs the server n^2 (redis_cas_script.c).  A server that
	 * refuses scripts (nothing ran) gets the WATCH all the same: slow
	 * there, but the batch still holds against what was read. */
	if (n <= FAUCET_STORE_CAS_BATCH_MAX ||
	    (rc = faucet_redis__run((redis_store *)b, faucet_redis__op_cas_script, &a, 0)) ==
		    FAUCET_EUNSUPPORTED) {
		faucet_error_clear();
		rc = faucet_redis__run((redis_store *)b, op_cas_batch, &a, 0);
	}
	return rc;
}


/* ---- open / free ------------------------------------------------------- */

static void redis_free_store(faucet_store_backend *b)
{
	redis_store *s = (redis_store *)b;

	faucet__pool_free(s->pool);
	free(s->redacted);
	free(s->host);
	free(s->user);
	if (s->password != NULL) {
		memset(s->password, 0, strlen(s->password));
		free(s->password);
	}
	free(s->ns);
	free(s->index);
	for (size_t i = 0; i < s->nsentinels; i++)
		free(s->sentinels[i].host);
	free(s->sentinels);
	free(s->master);
	free(s);
}


/* A percent-decoded copy of n bytes (user names and passwords may hold
 * escaped ':' '@' '/'); NULL with the last error set on a bad escape. */
static char *decode_part(const char *p, size_t n, const char *what)
{
	char *out = faucet__malloc(n + 1), *w = out;

	if (out == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '%') {
			int hi = i + 2 < n ? faucet__hex_digit(p[i + 1]) : -1;
			int lo = i + 2 < n ? faucet__hex_digit(p[i + 2]) : -1;
			if (hi < 0 || lo < 0) {
				free(out);
				(void)faucet_error_set(FAUCET_ECONFIG,
						       "redis store URL: bad %%-escape in the %s", what);
				return NULL;
			}
			*w++ = (char)(hi * 16 + lo);
			i += 2;
		} else {
			*w++ = p[i];
		}
	}
	*w = '\0';
	return out;
}

/* The query was already taken off by the URL dispatcher, so one left here
 * is an option we do not know.  Name the option, never its value: it may
 * be a password. */
static int unknown_option(const redis_store *s, const char *q)
{
	return faucet_error_set(FAUCET_ECONFIG,
				"redis store URL %s: unknown option '%.*s' (faucet knows "
				"namespace, max_connections%s)",
				s->redacted, (int)strcspn(q + 1, "=&"), q + 1,
				s->master ? ", index, min_replicas and wait_timeout" : " and index");
}

/* [[user]:password@] before `end`; *after = where the hosts start. */
static int parse_credentials(redis_store *s, const char *p, const char *end, const char **after)
{
	const char *at = NULL;

	for (const char *q = p; q < end; q++) {
		if (*q == '@')
			at = q;
	}
	*after = p;
	if (at != NULL) {
		const char *sep = memchr(p, ':', (size_t)(at - p));
		if (sep == NULL)
			return faucet_error_set(FAUCET_ECONFIG,
						"redis store URL %s: credentials must be "
						"[user]:password@",
						s->redacted);
		if (sep > p && (s->user = decode_part(p, (size_t)(sep - p), "user")) == NULL)
			return faucet_error_last()->code;
		s->password = decode_part(sep + 1, (size_t)(at - sep - 1), "password");
		if (s->password == NULL)
			return faucet_error_last()->code;
		*after = at + 1;
	}
	return 0;
}

/* redis-sentinel://[[user]:password@]H[:P][,H[:P]...]/MASTER[/DB]: every
 * host non-empty, every port 1..65535 (26379 when left out), a master
 * name. */
static int parse_sentinel_url(redis_store *s, const char *url)
{
	const char *p = url + strlen("redis-sentinel://");
	const char *end = p + strcspn(p, "/?"), *hosts, *name, *name_end;
	size_t n = 1;
	int rc = parse_credentials(s, p, end, &hosts);

	if (rc != 0)
		return rc;
	for (const char *q = hosts; q < end; q++)
		n += *q == ',';
	s->sentinels = faucet__calloc(n, sizeof(*s->sentinels));
	if (s->sentinels == NULL)
		return FAUCET_ENOMEM;
	for (const char *h = hosts; rc == 0;) {
		size_t len = strcspn(h, ",/?");
		const char *colon = memchr(h, ':', len);
		redis_addr *a = &s->sentinels[s->nsentinels];

		if (h + len > end)
			len = (size_t)(end - h);
		if ((colon ? colon : h + len) == h)
			return faucet_error_set(FAUCET_ECONFIG,
						"redis-sentinel store URL %s: sentinel %zu of the list "
						"has no host (redis-sentinel://HOST:PORT[,HOST:PORT...]/"
						"MASTER[/DB])",
						s->redacted, s->nsentinels + 1);
		a->port = REDIS_SENTINEL_PORT;
		if (colon != NULL) {
			char *num_end;
			long v = strtol(colon + 1, &num_end, 10);

			if (num_end != h + len || colon + 1 == num_end || v < 1 || v > 65535 ||
			    colon[1] == '-' || colon[1] == '+' || colon[1] == ' ')
				return faucet_error_set(FAUCET_ECONFIG,
							"redis-sentinel store URL %s: sentinel %zu has "
							"a bad port '%.*s' (a number from 1 to 65535)",
							s->redacted, s->nsentinels + 1,
							(int)(h + len - colon - 1), colon + 1);
			a->port = (int)v;
		}
		a->host = faucet__strndup(h, (size_t)((colon ? colon : h + len) - h));
		if (a->host == NULL)
			return FAUCET_ENOMEM;
		s->nsentinels++;
		if (h + len >= end)
			break;
		h += len + 1;
	}
	name = *end == '/' ? end + 1 : end;
	name_end = name + strcspn(name, "/?");
	if (name_end == name)
		return faucet_error_set(FAUCET_ECONFIG,
					"redis-sentinel store URL %s: no master name "
					"(redis-sentinel://HOST:PORT[,HOST:PORT...]/MASTER[/DB])",
					s->redacted);
	s->master = faucet__strndup(name, (size_t)(name_end - name));
	if (s->master == NULL)
		return FAUCET_ENOMEM;
	if (*name_end == '/' && name_end[1] != '\0' && name_end[1] != '?') {
		char *num_end;
		long v = strtol(name_end + 1, &num_end, 10);

		if ((*num_end != '\0' && *num_end != '?') || v < 0 || v > 1000000 ||
		    !(name_end[1] >= '0' && name_end[1] <= '9'))
			return faucet_error_set(FAUCET_ECONFIG,
						"redis-sentinel store URL %s: after the master name "
						"the path must be a database number",
						s->redacted);
		s->db = (int)v;
		name_end = num_end;
	} else if (*name_end == '/') {
		name_end++;
	}
	if (*name_end == '?')
		return unknown_option(s, name_end);
	return 0;
}

/* redis://[[user]:password@]host[:port][/db]. */
static int parse_url(redis_store *s, const char *url)
{
	const char *p = url + strlen("redis://");
	const char *end = p + strcspn(p, "/?");
	const char *hostp, *colon;
	char *num_end;
	long v;
	int rc = parse_credentials(s, p, end, &hostp);

	if (rc != 0)
		return rc;
	colon = memchr(hostp, ':', (size_t)(end - hostp));
	s->host = faucet__strndup(hostp, (size_t)((colon ? colon : end) - hostp));
	if (s->host == NULL)
		return FAUCET_ENOMEM;
	if (*s->host == '\0') {
		free(s->host);
		s->host = faucet__strdup("127.0.0.1");
		if (s->host == NULL)
			return FAUCET_ENOMEM;
	}
	s->port = 6379;
	if (colon != NULL) {
		v = strtol(colon + 1, &num_end, 10);
		if (num_end != end || v < 1 || v > 65535)
			return faucet_error_set(FAUCET_ECONFIG, "redis store URL %s: bad port",
						s->redacted);
		s->port = (int)v;
	}
	if (*end == '/' && end[1] != '\0' && end[1] != '?') {
		v = strtol(end + 1, &num_end, 10);
		if ((*num_end != '\0' && *num_end != '?') || v < 0 || v > 1000000)
			return faucet_error_set(FAUCET_ECONFIG,
						"redis store URL %s: the path must be a database "
						"number",
						s->redacted);
		s->db = (int)v;
		end = num_end;
	} else if (*end == '/') {
		end++;
	}
	if (*end == '?')
		return unknown_option(s, end);
	return 0;
}

int faucet__store_open_redis(faucet_store **out, const faucet_store_config *cfg)
{
	const char *ns = cfg->namespace_name ? cfg->namespace_name : REDIS_DEFAULT_NAMESPACE;
	int pool = cfg->max_connections ? cfg->max_connections : REDIS_DEFAULT_POOL;
	redis_store *s;
	int rc;

	int sentinel = cfg->type != NULL && strcmp(cfg->type, "redis-sentinel") == 0;

	*out = NULL;
	if (!sentinel && (cfg->url == NULL || strncmp(cfg->url, "redis://", 8) != 0))
		return faucet_error_set(FAUCET_ECONFIG,
					"redis state store needs a `url` starting with redis://");
	if (sentinel && (cfg->url == NULL || strncmp(cfg->url, "redis-sentinel://", 17) != 0))
		return faucet_error_set(FAUCET_ECONFIG,
					"redis-sentinel state store needs a `url` starting with "
					"redis-sentinel:// (redis-sentinel://HOST:PORT[,HOST:PORT...]/"
					"MASTER[/DB])");
	if (!sentinel && (cfg->redis_min_replicas != 0 || cfg->redis_wait_timeout_ms != 0))
		return faucet_error_set(FAUCET_ECONFIG,
					"redis state store: min_replicas and wait_timeout apply to "
					"redis-sentinel only");
	if (cfg->redis_min_replicas < 0 || cfg->redis_wait_timeout_ms < 0)
		return faucet_error_set(FAUCET_ECONFIG,
					"redis-sentinel state store: min_replicas and wait_timeout "
					"must not be negative");
	if (*ns == '\0' || strchr(ns, ':') != NULL)
		return faucet_error_set(FAUCET_ECONFIG,
					"redis state store: namespace '%s' must be non-empty and "
					"hold no ':'",
					ns);
	if (pool < 1)
		return faucet_error_set(FAUCET_ECONFIG,
					"redis state store: max_connections must be at least 1, got %d",
					pool);
	s = faucet__calloc(1, sizeof(*s));
	if (s == NULL)
		return FAUCET_ENOMEM;
	s->redacted = faucet_url_redact(cfg->url);
	s->ns = faucet__strdup(ns);
	if (cfg->redis_index)
		s->index = faucet__sprintf("%s.index", ns);
	if (s->redacted == NULL || s->ns == NULL || (cfg->redis_index && s->index == NULL)) {
		redis_free_store(&s->base);
		return FAUCET_ENOMEM;
	}
	s->min_replicas = cfg->redis_min_replicas;
	s->wait_timeout_ms = cfg->redis_wait_timeout_ms ? cfg->redis_wait_timeout_ms
							: REDIS_DEFAULT_WAIT_MS;
	rc = sentinel ? parse_sentinel_url(s, cfg->url) : parse_url(s, cfg->url);
	if (rc == 0)
		rc = faucet__pool_new(&s->pool, &redis_pool_ops, s, (size_t)pool);
	if (rc != 0) {
		redis_free_store(&s->base);
		return rc;
	}
	s->base.version = FAUCET_STORE_BACKEND_VERSION;
	s->base.name = sentinel ? "redis-sentinel" : "redis";
	s->base.get = redis_get;
	s->base.get_many = redis_get_many;
	s->base.put = redis_put;
	s->base.del = redis_del;
	s->base.list = redis_list;
	if (s->index != NULL)
		s->base.list_page = redis_list_page;
	s->base.compare_and_put = redis_compare_and_put;
	s->base.put_guarded = redis_put_guarded;
	s->base.compare_and_delete = redis_compare_and_delete;
	s->base.put_batch = redis_put_batch;
	s->base.check = faucet_redis__check;
	s->base.free = redis_free_store;
	s->base.reindex = faucet_redis__reindex;
	s->base.compare_and_put_batch = redis_compare_and_put_batch;
	s->base.cas_batch_max = FAUCET__CAS_BATCH_ONE_TXN;
	return faucet_store_new(out, &s->base);
}
