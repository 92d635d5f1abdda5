/*
 * etcd.c - the etcd v3 state store
 * ("etcd://HOST:PORT[,HOST:PORT...]/PREFIX?dial_timeout=2s&request_timeout=10s").
 *
 * Layout (doc/design.md §3): state key K lives at etcd key "PREFIX/K" (K's
 * bytes as they are), its value the compact JSON text, so what was written is
 * read back byte for byte.  The store talks to etcd 3.4's JSON gateway
 * (/v3/kv/range, put, deleterange, txn) over HTTP/1.1 with libcurl and
 * json-c; keys and values are base64 there, int64 fields JSON strings, and
 * false/zero fields are left out (a failed txn has no "succeeded" at all).
 * Ranges (listings and scans) go to etcd's gRPC API instead, KV/Range over
 * cleartext HTTP/2 on the same port ("gRPC" below; etcd_grpc.c is its
 * protobuf), back to the gateway for a member that does not speak it.
 *
 * Durability and atomicity: etcd answers a write once a quorum of members
 * has it in its log on disk, so an acknowledged bookmark survives the loss
 * of any minority.  Reads are linearizable (etcd's default).  compare-and-put
 * compares JSON values (SPEC §2), which etcd cannot: we read the key, compare
 * with faucet_value_equal, then write in one txn guarded by the key's
 * mod_revision; when only the revision moved, we look again (the txn's
 * failure branch returns the new value, so that costs no extra round trip).
 * compare-and-delete, put_guarded and compare_and_put_batch (up to 128 keys,
 * one txn reading them, one writing them) are the same txn shape.  A batch
 * is NOT all-or-nothing: etcd refuses a txn of more than --max-txn-ops (128
 * by default) operations, so put_many writes txns of at most 128 puts, each
 * atomic, and reports the prefix of chunks that landed.
 *
 * Failover: every connection holds one keep-alive curl handle per endpoint
 * and talks to one endpoint at a time; on a connection error, an HTTP 503
 * or gRPC Unavailable it moves to the next, until the request timeout.  A
 * write whose request body was handed to the connection but whose reply
 * never came (or came as Unavailable/DeadlineExceeded: the leader may have
 * committed it) is FAUCET_EUNKNOWN and never sent again; a write that never
 * reached any member (connection refused) moves on safely.  Before its first
 * request each handle asks its endpoint for /version, so a port that is not
 * etcd is a clear FAUCET_ECONFIG before anything is sent there.
 *
 * Threads and fork: connections come from a pool (pool.c), one thread per
 * connection at a time; a forked child drops the inherited ones without
 * touching their sockets (faucet__pool_detach_socket) and opens its own.
 */
#include <curl/curl.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "internal.h"
#include "keys/bookkeeping.h"
#include "values/value_internal.h"
#include "store/open_internal.h"
#include "stores/registry.h"
#include "stores/loaders.h"
#include "stores/pool.h"
#include "stores/etcd_grpc.h"

#define ETCD_DEFAULT_POOL FAUCET__POOL_DEFAULT
#define ETCD_DEFAULT_DIAL_MS (FAUCET__ETCD_DIAL_S_DEFAULT * 1000)
#define ETCD_DEFAULT_REQUEST_MS (FAUCET__ETCD_REQUEST_S_DEFAULT * 1000)
#define ETCD_MAX_TXN_OPS 128
/* Pages are big because etcd 3.4 walks every key left in the range for each
 * page (it counts them), so small pages make a listing quadratic. */
#define ETCD_LIST_PAGE 10000
#define ETCD_SCAN_PAGE 5000
#define ETCD_CAS_ATTEMPTS 1000
#define ETCD_MAX_REPLY (256u << 20)

/* gRPC status codes: the gateway returns them in "code", gRPC in the
 * grpc-status trailer. */
#define GRPC_CANCELLED 1
#define GRPC_UNKNOWN 2
#define GRPC_DEADLINE 4
#define GRPC_PERMISSION_DENIED 7
#define GRPC_RESOURCE_EXHAUSTED 8
#define GRPC_UNAVAILABLE 14
#define GRPC_UNAUTHENTICATED 16

/* grpc_request's answer for a member that does not speak gRPC on its
 * client port: the store goes back to the gateway for good. */
#define ETCD_NOT_GRPC 2
#define ETCD_GRPC_RANGE "/etcdserverpb.KV/Range"

typedef struct {
	faucet_store_backend base;
	char *redacted;    /* the URL for messages */
	char **endpoints;  /* "http://HOST:PORT" */
	size_t n;
	char *prefix;      /* "PREFIX/" */
	size_t prefix_len;
	long dial_ms, request_ms;
	atomic_size_t preferred; /* the endpoint that last answered */
	atomic_int grpc_off;     /* a member did not speak gRPC: ranges use the gateway */
	faucet_pool *pool;
} etcd_store;

typedef struct {
	etcd_store *s;
	CURL **h;                 /* one per endpoint: the JSON gateway, HTTP/1.1 */
	CURL **g;                 /* one per endpoint: gRPC, HTTP/2 (made on first use) */
	unsigned char *grpc_seen; /* it has answered in gRPC on this connection */
	unsigned char *verified;  /* its /version said etcd */
	size_t cur;
	struct curl_slist *headers, *gheaders;
	int grpc_status;          /* the reply's grpc-status (-1: none came) */
	int grpc_type;            /* its content-type is application/grpc */
	char grpc_message[256];   /* its grpc-message, percent-decoded */
	faucet_buf reply;
	int reply_too_big;
	const char *body;
	size_t body_len, body_off;
	int body_taken;           /* curl read the body: it may have been sent */
} etcd_conn;

/* ---- base64 ------------------------------------------------------------ */

static const char b64chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int b64_put(faucet_buf *b, const void *data, size_t len)
{
	const unsigned char *p = data;
	char q[4];

	for (size_t i = 0; i < len; i += 3) {
		unsigned v = (unsigned)p[i] << 16;
		if (i + 1 < len)
			v |= (unsigned)p[i + 1] << 8;
		if (i + 2 < len)
			v |= p[i + 2];
		q[0] = b64chars[(v >> 18) & 63];
		q[1] = b64chars[(v >> 12) & 63];
		q[2] = i + 1 < len ? b64chars[(v >> 6) & 63] : '=';
		q[3] = i + 2 < len ? b64chars[v & 63] : '=';
		if (faucet__buf_put(b, q, 4) != 0)
			return FAUCET_ENOMEM;
	}
	return b->failed ? FAUCET_ENOMEM : 0;
}

static int b64_value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/* A NUL-terminated decoded copy in *out (*len bytes), or -1 on bad input. */
static int b64_decode(const char *in, size_t inlen, char **out, size_t *len)
{
	char *o = faucet__malloc(inlen / 4 * 3 + 3);
	size_t w = 0;
	unsigned acc = 0;
	int bits = 0;

	if (o == NULL)
		return FAUCET_ENOMEM;
	for (size_t i = 0; i < inlen; i++) {
		int v;
		if (in[i] == '=')
			break;
		v = b64_value(in[i]);
		if (v < 0) {
			free(o);
			return -1;
		}
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			o[w++] = (char)((acc >> bits) & 0xff);
		}
	}
	o[w] = '\0';
	*out = o;
	*len = w;
	return 0;
}

/* ---- messages ---------------------------------------------------------- */

static int etcd_fail(const etcd_store *s, int code, const char *what, const char *why)
{
	return faucet_error_set(code, "etcd state store %s: %s: %s", s->redacted, what,
				why ? why : "unknown error");
}

static const char *host_of(const char *endpoint)
{
	return endpoint + strlen("http://");
}

/* ---- connections ------------------------------------------------------- */

static size_t on_body(char *data, size_t size, size_t nmemb, void *ctx)
{
	etcd_conn *c = ctx;
	size_t n = size * nmemb;

	if (c->reply.len + n > ETCD_MAX_REPLY) {
		c->reply_too_big = 1;
		return 0;
	}
	if (faucet__buf_put(&c->reply, data, n) != 0)
		return 0;
	return n;
}

static size_t on_send(char *buf, size_t size, size_t nmemb, void *ctx)
{
	etcd_conn *c = ctx;
	size_t room = size * nmemb, left = c->body_len - c->body_off;
	size_t n = left < room ? left : room;

	c->body_taken = 1;
	memcpy(buf, c->body + c->body_off, n);
	c->body_off += n;
	return n;
}

static void etcd_disconnect(void *conn)
{
	etcd_conn *c = conn;

	if (c == NULL)
		return;
	for (size_t i = 0; i < c->s->n; i++) {
		if (c->h != NULL && c->h[i] != NULL)
			curl_easy_cleanup(c->h[i]);
		if (c->g != NULL && c->g[i] != NULL)
			curl_easy_cleanup(c->g[i]);
	}
	free(c->h);
	free(c->g);
	free(c->grpc_seen);
	free(c->verified);
	if (c->headers != NULL)
		curl_slist_free_all(c->headers);
	if (c->gheaders != NULL)
		curl_slist_free_all(c->gheaders);
	faucet__buf_dispose(&c->reply);
	free(c);
}

/* In a forked child: point a handle's live socket at /dev/null first, so
 * that closing it sends the parent's server nothing; a handle whose socket
 * cannot be detached is leaked rather than closed. */
static void abandon_handle(CURL **h)
{
	curl_socket_t fd = CURL_SOCKET_BAD;

	if (*h != NULL && curl_easy_getinfo(*h, CURLINFO_ACTIVESOCKET, &fd) == CURLE_OK &&
	    fd != CURL_SOCKET_BAD && faucet__pool_detach_socket(fd) != 0)
		*h = NULL; /* leaked: the parent's connection stays untouched */
}

static void etcd_abandon(void *conn)
{
	etcd_conn *c = conn;

	for (size_t i = 0; i < c->s->n; i++) {
		abandon_handle(&c->h[i]);
		abandon_handle(&c->g[i]);
	}
	etcd_disconnect(c);
}

/* A keep-alive handle that sends c's requests and fills c->reply. */
static int handle_new(etcd_conn *c, struct curl_slist *headers, CURL **out)
{
	CURL *h = curl_easy_init();

	*out = h;
	if (h == NULL)
		return faucet_error_set(FAUCET_ENOMEM, "etcd state store: curl_easy_init failed");
	if (curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_NOPROXY, "*") != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_WRITEDATA, c) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_READFUNCTION, on_send) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_READDATA, c) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers) != CURLE_OK)
		return faucet_error_set(FAUCET_ERROR, "etcd state store: libcurl refused an option");
	return 0;
}

static int etcd_connect(void *owner, void **out)
{
	etcd_store *s = owner;
	etcd_conn *c = faucet__calloc(1, sizeof(*c));
	struct curl_slist *h2;

	if (c == NULL)
		return FAUCET_ENOMEM;
	c->s = s;
	c->h = faucet__calloc(s->n, sizeof(*c->h));
	c->g = faucet__calloc(s->n, sizeof(*c->g));
	c->grpc_seen = faucet__calloc(s->n, 1);
	c->verified = faucet__calloc(s->n, 1);
	c->headers = curl_slist_append(NULL, "Content-Type: application/json");
	h2 = c->headers ? curl_slist_append(c->headers, "Expect:") : NULL;
	if (c->h == NULL || c->g == NULL || c->grpc_seen == NULL || c->verified == NULL ||
	    h2 == NULL) {
		etcd_disconnect(c);
		return FAUCET_ENOMEM;
	}
	for (size_t i = 0; i < s->n; i++) {
		int rc = handle_new(c, c->headers, &c->h[i]);

		if (rc != 0) {
			etcd_disconnect(c);
			return rc;
		}
	}
	c->cur = atomic_load(&s->preferred) % s->n;
	*out = c;
	return 0;
}

static const faucet_pool_ops etcd_pool_ops = {etcd_connect, etcd_disconnect, NULL, NULL,
					      etcd_abandon};

/* One HTTP exchange with endpoint idx, on its gRPC handle when `grpc`: a
 * POST of the body, or a GET when body is NULL.  Returns curl's code;
 * *status the HTTP status. */
static CURLcode perform(etcd_conn *c, size_t idx, int grpc, const char *path, const char *body,
			size_t len, uint64_t deadline, long *status)
{
	etcd_store *s = c->s;
	CURL *h = grpc ? c->g[idx] : c->h[idx];
	uint64_t now = faucet__now_ms();
	long left = deadline > now ? (long)(deadline - now) : 1;
	char url[320];
	CURLcode rc;

	(void)snprintf(url, sizeof(url), "%s%s", s->endpoints[idx], path);
	c->reply.len = 0;
	if (c->reply.ptr != NULL)
		c->reply.ptr[0] = '\0';
	c->reply_too_big = 0;
	c->body = body;
	c->body_len = len;
	c->body_off = 0;
	c->body_taken = 0;
	c->grpc_status = -1;
	c->grpc_type = 0;
	c->grpc_message[0] = '\0';
	*status = 0;
	rc = curl_easy_setopt(h, CURLOPT_URL, url);
	if (rc == CURLE_OK && body != NULL) {
		rc = curl_easy_setopt(h, CURLOPT_POST, 1L);
		if (rc == CURLE_OK)
			rc = curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	} else if (rc == CURLE_OK) {
		rc = curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	}
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
				      left < s->dial_ms ? left : s->dial_ms);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, left);
	if (rc == CURLE_OK)
		rc = curl_easy_perform(h);
	if (rc == CURLE_OK && c->reply.failed)
		rc = CURLE_OUT_OF_MEMORY;
	if (rc == CURLE_OK)
		(void)curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
	return rc;
}

/* The reply as JSON, or NULL. */
static json_object *reply_json(etcd_conn *c)
{
	enum json_tokener_error err;

	if (c->reply.ptr == NULL || c->reply.len == 0)
		return NULL;
	return json_tokener_parse_verbose(c->reply.ptr, &err);
}

/* Is endpoint idx an etcd server?  0, FAUCET_ECONFIG when it answered as
 * something else, or FAUCET_EUNAVAILABLE (the last error set) when it did
 * not answer. */
static int verify(etcd_conn *c, size_t idx, uint64_t deadline)
{
	etcd_store *s = c->s;
	long status;
	CURLcode rc = perform(c, idx, 0, "/version", NULL, 0, deadline, &status);
	json_object *j, *v;
	int ok;

	/* Not HTTP at all, or a server that hung up without a word (Redis
	 * closes a connection that sends it HTTP headers). */
	if (rc == CURLE_WEIRD_SERVER_REPLY || rc == CURLE_UNSUPPORTED_PROTOCOL ||
	    rc == CURLE_GOT_NOTHING)
		return faucet_error_set(FAUCET_ECONFIG,
					"etcd state store %s: %s is not an etcd server (its answer "
					"to GET /version is not HTTP: %s)",
					s->redacted, host_of(s->endpoints[idx]),
					curl_easy_strerror(rc));
	if (rc != CURLE_OK)
		return faucet_error_set(rc == CURLE_OPERATION_TIMEDOUT ? FAUCET_ETIMEOUT
								       : FAUCET_EUNAVAILABLE,
					"etcd state store %s: %s: %s", s->redacted,
					host_of(s->endpoints[idx]), curl_easy_strerror(rc));
	j = reply_json(c);
	ok = status == 200 && j != NULL && json_object_is_type(j, json_type_object) &&
	     json_object_object_get_ex(j, "etcdserver", &v) && json_object_is_type(v, json_type_string);
	json_object_put(j);
	if (!ok)
		return faucet_error_set(FAUCET_ECONFIG,
					"etcd state store %s: %s is not an etcd server (GET /version "
					"answered HTTP %ld: %.80s)",
					s->redacted, host_of(s->endpoints[idx]), status,
					c->reply.ptr ? c->reply.ptr : "");
	c->verified[idx] = 1;
	return 0;
}

/* The gateway's error reply: its gRPC code (0 if none) and message. */
static int error_reply(json_object *j, const char **msg)
{
	json_object *v;
	int code = 0;

	*msg = NULL;
	if (j == NULL || !json_object_is_type(j, json_type_object))
		return 0;
	if (json_object_object_get_ex(j, "code", &v))
		code = json_object_get_int(v);
	if (json_object_object_get_ex(j, "message", &v) || json_object_object_get_ex(j, "error", &v))
		*msg = json_object_get_string(v);
	return code;
}

static void backoff(uint64_t deadline, unsigned round)
{
	uint64_t now = faucet__now_ms(), ms = 50u * (round < 10 ? round : 10);
	struct timespec ts;

	if (now >= deadline)
		return;
	if (ms > deadline - now)
		ms = deadline - now;
	ts.tv_sec = (time_t)(ms / 1000);
	ts.tv_nsec = (long)(ms % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Before the first request to endpoint idx: is it etcd?  0 to go on, 1 to
 * move to the next endpoint (`last` says why), or the error to return. */
static int ensure_verified(etcd_conn *c, size_t idx, uint64_t deadline, char *last, size_t cap)
{
	int rc;

	if (c->verified[idx])
		return 0;
	rc = verify(c, idx, deadline);
	if (rc == FAUCET_ECONFIG)
		return rc;
	if (rc != 0) {
		(void)snprintf(last, cap, "%s", faucet_error_last()->message);
		return 1;
	}
	return 0;
}

/* After a failure at endpoint idx: on to the next one, backing off after
 * each round of them.  0 to try again, or FAUCET_EUNAVAILABLE once the
 * request timeout has passed. */
static int move_on(etcd_conn *c, size_t idx, unsigned *failures, uint64_t deadline,
		   const char *what, const char *last)
{
	etcd_store *s = c->s;

	(*failures)++;
	c->cur = (idx + 1) % s->n;
	if (faucet__now_ms() >= deadline)
		return faucet_error_set(FAUCET_EUNAVAILABLE,
					"etcd state store %s: %s: no endpoint answered within "
					"the request timeout (%ld ms; last: %s)",
					s->redacted, what, s->request_ms, last);
	if (*failures % s->n == 0)
		backoff(deadline, *failures / (unsigned)s->n);
	return 0;
}

/* gRPC codes after which a read moves to the next endpoint (and a write's
 * outcome is unknown): the member is unreachable, lost its leader or gave
 * up; another may answer. */
static int grpc_retryable(int code)
{
	return code == GRPC_UNAVAILABLE || code == GRPC_DEADLINE || code == GRPC_CANCELLED ||
	       code == GRPC_UNKNOWN;
}

/*
 * POST body to path on the current endpoint, moving through the others on
 * failure until the request timeout.  `write`: the request changes state, so
 * once it may have reached a member it is never sent again - a lost reply or
 * Unavailable is FAUCET_EUNKNOWN.  *out = the parsed reply (caller puts it);
 * out NULL (reads only): an HTTP 200 reply is left unparsed in c->reply for
 * the caller's own reader (range_reply_scan).
 */
static int etcd_request(etcd_conn *c, const char *path, const faucet_buf *body, int write,
			const char *what, json_object **out)
{
	etcd_store *s = c->s;
	uint64_t deadline = faucet__now_ms() + (uint64_t)s->request_ms;
	char last[512] = "no endpoint tried";
	unsigned failures = 0;

	if (out != NULL)
		*out = NULL;
	for (;;) {
		size_t idx = c->cur;
		long status = 0;
		CURLcode crc;
		json_object *j;
		const char *msg;
		int code, rc;

		rc = ensure_verified(c, idx, deadline, last, sizeof(last));
		if (rc < 0)
			return rc;
		if (rc > 0)
			goto next;
		crc = perform(c, idx, 0, path, body->ptr, body->len, deadline, &status);
		if (crc != CURLE_OK) {
			if (crc == CURLE_OUT_OF_MEMORY || c->reply_too_big)
				return etcd_fail(s, c->reply_too_big ? FAUCET_ERROR : FAUCET_ENOMEM,
						 what, c->reply_too_big ? "the reply is too big"
									: "out of memory");
			if (write && c->body_taken)
				return faucet_error_set(
					FAUCET_EUNKNOWN,
					"etcd state store %s: %s: %s: %s - outcome unknown (the "
					"request was sent but no reply came; it may have been applied)",
					s->redacted, what, host_of(s->endpoints[idx]),
					curl_easy_strerror(crc));
			(void)snprintf(last, sizeof(last), "%s: %s", host_of(s->endpoints[idx]),
				       curl_easy_strerror(crc));
			goto next;
		}
		if (status == 200 && out == NULL && !write && c->reply.len > 0) {
			atomic_store(&s->preferred, idx);
			return 0;
		}
		j = reply_json(c);
		if (status == 200 && out != NULL && j != NULL &&
		    json_object_is_type(j, json_type_object)) {
			atomic_store(&s->preferred, idx);
			*out = j;
			return 0;
		}
		if (status == 200) {
			/* Answered, but not with a JSON object (cut short?): a
			 * write may have been applied all the same. */
			json_object_put(j);
			(void)snprintf(last, sizeof(last), "%s: an HTTP 200 reply that is not a "
				       "JSON object", host_of(s->endpoints[idx]));
			if (write)
				return faucet_error_set(FAUCET_EUNKNOWN,
							"etcd state store %s: %s: %s - outcome "
							"unknown (it may have been applied)",
							s->redacted, what, last);
			goto next;
		}
		code = error_reply(j, &msg);
		(void)snprintf(last, sizeof(last), "%s: HTTP %ld: %s", host_of(s->endpoints[idx]),
			       status, msg ? msg : (c->reply.ptr ? c->reply.ptr : ""));
		json_object_put(j);
		if (status == 503 || status >= 500 || grpc_retryable(code)) {
			if (write)
				return faucet_error_set(FAUCET_EUNKNOWN,
							"etcd state store %s: %s: %s - outcome "
							"unknown (the cluster may have applied it)",
							s->redacted, what, last);
			goto next;
		}
		if (status == 429 || code == GRPC_RESOURCE_EXHAUSTED)
			return faucet_error_set(FAUCET_ERROR,
						"etcd state store %s: %s: the request (%zu bytes, "
						"values in base64) is larger than the cluster accepts "
						"(etcd --max-request-bytes, 1.5 MiB by default): %s",
						s->redacted, what, body->len, last);
		return etcd_fail(s, status == 401 || status == 403 ? FAUCET_EAUTH : FAUCET_ERROR,
				 what, last);
	next:
		rc = move_on(c, idx, &failures, deadline, what, last);
		if (rc != 0)
			return rc;
	}
}

/* ---- gRPC ----------------------------------------------------------------
 *
 * Ranges (listings and scans) go to etcd's gRPC API, etcdserverpb.KV/Range,
 * over cleartext HTTP/2 on the same client port: the gateway turns each
 * reply into JSON, which alone takes seconds for 100,000 keys (bench/
 * README.md), while the protobuf reply is the bytes themselves.  Each
 * connection holds one HTTP/2 handle per endpoint beside its HTTP/1.1 one,
 * made on first use and kept alive (with libcurl 8 and later; see
 * h2_reuse_works); everything else stays on the gateway.
 * grpc-status and grpc-message come as trailers, or as headers in a
 * trailers-only reply; curl hands both to the header callback.  A member
 * that answers HTTP/2 with something other than gRPC, or does not speak
 * HTTP/2 at all (or a libcurl without HTTP/2), sends the store back to the
 * gateway for good: ETCD_NOT_GRPC.
 */

/* grpc-message is percent-encoded. */
static void percent_decode(char *out, size_t cap, const char *in, size_t n)
{
	size_t w = 0;

	for (size_t i = 0; i < n && w + 1 < cap; i++) {
		int hi = in[i] == '%' && i + 2 < n ? faucet__hex_digit(in[i + 1]) : -1;
		int lo = hi >= 0 ? faucet__hex_digit(in[i + 2]) : -1;

		if (lo >= 0) {
			out[w++] = (char)(hi << 4 | lo);
			i += 2;
		} else {
			out[w++] = in[i];
		}
	}
	out[w] = '\0';
}

/* Is the header line `line` (n bytes, "Name: value\r\n") the one called
 * `name`?  Then *value and *vlen are its value, trimmed. */
static int header_is(const char *line, size_t n, const char *name, const char **value,
		     size_t *vlen)
{
	size_t k = strlen(name);

	if (n <= k || strncasecmp(line, name, k) != 0 || line[k] != ':')
		return 0;
	line += k + 1;
	n -= k + 1;
	while (n > 0 && (*line == ' ' || *line == '\t')) {
		line++;
		n--;
	}
	while (n > 0 && (line[n - 1] == '\r' || line[n - 1] == '\n' || line[n - 1] == ' '))
		n--;
	*value = line;
	*vlen = n;
	return 1;
}

static size_t on_grpc_header(char *data, size_t size, size_t nmemb, void *ctx)
{
	etcd_conn *c = ctx;
	size_t n = size * nmemb, vlen, i;
	const char *v;
	int code = 0;

	if (header_is(data, n, "content-type", &v, &vlen)) {
		c->grpc_type = vlen >= 16 && strncasecmp(v, "application/grpc", 16) == 0 &&
			       (vlen == 16 || v[16] == '+' || v[16] == ';');
	} else if (header_is(data, n, "grpc-status", &v, &vlen)) {
		for (i = 0; i < vlen && i < 4 && v[i] >= '0' && v[i] <= '9'; i++)
			code = code * 10 + (v[i] - '0');
		c->grpc_status = i > 0 && i == vlen ? code : GRPC_UNKNOWN;
	} else if (header_is(data, n, "grpc-message", &v, &vlen)) {
		percent_decode(c->grpc_message, sizeof(c->grpc_message), v, vlen);
	}
	return n;
}

/* Can this libcurl send a second request on an HTTP/2 connection it opened
 * with prior knowledge?  Not before 8.0.0: the second request fails with
 * "Error in the HTTP2 framing layer" (curl issue 10634, fixed by curl pull
 * request 10643; Debian 12 ships 7.88.1).  There each request opens a
 * connection of its own - on loopback a fraction of a millisecond beside a
 * page of 10,000 keys. */
static int h2_reuse_works(void)
{
	const curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);

	return v != NULL && v->version_num >= 0x080000;
}

/* Endpoint idx's gRPC handle, made on first use: 0, ETCD_NOT_GRPC when
 * this libcurl has no HTTP/2, or an error.  Its receive buffer is 512 KiB,
 * not libcurl's 16 KiB: with 7.88.1 an HTTP/2 reply of megabytes read 16
 * KiB at a time often stalled at its end until a timer fired (strace: polls
 * of 170 ms and 1 s after the last bytes had come), 4-6 times an export of
 * 100,000 keys, which took 1.6-3.4 s instead of 0.5-0.6 s. */
static int grpc_handle(etcd_conn *c, size_t idx)
{
	CURL *h;
	int rc;

	if (c->g[idx] != NULL)
		return 0;
	if (c->gheaders == NULL) {
		struct curl_slist *l = curl_slist_append(NULL, "Content-Type: application/grpc");
		struct curl_slist *l2 = l ? curl_slist_append(l, "TE: trailers") : NULL;

		if (l2 == NULL) {
			if (l != NULL)
				curl_slist_free_all(l);
			return FAUCET_ENOMEM;
		}
		c->gheaders = l2;
	}
	rc = handle_new(c, c->gheaders, &h);
	if (rc == 0 && curl_easy_setopt(h, CURLOPT_HTTP_VERSION,
					(long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE) != CURLE_OK)
		rc = ETCD_NOT_GRPC;
	if (rc == 0 && (curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_grpc_header) != CURLE_OK ||
			curl_easy_setopt(h, CURLOPT_HEADERDATA, c) != CURLE_OK ||
			curl_easy_setopt(h, CURLOPT_FORBID_REUSE, h2_reuse_works() ? 0L : 1L) !=
				CURLE_OK ||
			curl_easy_setopt(h, CURLOPT_BUFFERSIZE, 512L * 1024) != CURLE_OK))
		rc = faucet_error_set(FAUCET_ERROR, "etcd state store: libcurl refused an option");
	if (rc != 0) {
		if (h != NULL)
			curl_easy_cleanup(h);
		return rc;
	}
	c->g[idx] = h;
	return 0;
}

/* What one gRPC exchange with endpoint idx came to: 0 (a reply with
 * grpc-status 0 is in c->reply), 1 to move to the next endpoint (`last`
 * says why), ETCD_NOT_GRPC, or the error to return - the one the gateway
 * path gives for the same status. */
static int grpc_outcome(etcd_conn *c, size_t idx, CURLcode crc, long status, const char *what,
			char *last, size_t cap)
{
	etcd_store *s = c->s;
	const char *host = host_of(s->endpoints[idx]);
	int code = c->grpc_status;

	if (crc == CURLE_OUT_OF_MEMORY || c->reply_too_big)
		return etcd_fail(s, c->reply_too_big ? FAUCET_ERROR : FAUCET_ENOMEM, what,
				 c->reply_too_big ? "the reply is too big" : "out of memory");
	/* A member whose /version said etcd but that has not answered gRPC
	 * here yet: an answer that is not HTTP/2 (an HTTP/1.1-only server
	 * replies 400 to HTTP/2's preface and hangs up) or not gRPC means its
	 * port does not serve gRPC.  Once it has answered in gRPC, the same
	 * errors are a member going away, and the next endpoint is tried. */
	if (!c->grpc_seen[idx] &&
	    ((crc == CURLE_OK && !c->grpc_type) || crc == CURLE_HTTP2 ||
	     crc == CURLE_WEIRD_SERVER_REPLY || crc == CURLE_UNSUPPORTED_PROTOCOL ||
	     crc == CURLE_GOT_NOTHING || crc == CURLE_SEND_ERROR ||
	     crc == CURLE_RECV_ERROR))
		return ETCD_NOT_GRPC;
	if (crc != CURLE_OK) {
		(void)snprintf(last, cap, "%s: %s", host, curl_easy_strerror(crc));
		return 1;
	}
	if (!c->grpc_type) {
		(void)snprintf(last, cap, "%s: an HTTP %ld reply that is not gRPC", host, status);
		return 1;
	}
	c->grpc_seen[idx] = 1;
	if (code < 0) {
		(void)snprintf(last, cap, "%s: a gRPC reply (HTTP %ld) without grpc-status", host,
			       status);
		return 1;
	}
	if (code == 0 && status == 200)
		return 0;
	(void)snprintf(last, cap, "%s: gRPC status %d (HTTP %ld): %s", host, code, status,
		       c->grpc_message);
	if (code == 0 || grpc_retryable(code))
		return 1;
	return etcd_fail(s,
			 code == GRPC_UNAUTHENTICATED || code == GRPC_PERMISSION_DENIED ? FAUCET_EAUTH
											: FAUCET_ERROR,
			 what, last);
}

/* POST one gRPC frame (body) to path on the current endpoint, moving
 * through the others like etcd_request does for a read: 0 with the reply's
 * frame in c->reply, ETCD_NOT_GRPC, or an error. */
static int grpc_request(etcd_conn *c, const char *path, const faucet_buf *body,
			const char *what)
{
	etcd_store *s = c->s;
	uint64_t deadline = faucet__now_ms() + (uint64_t)s->request_ms;
	char last[512] = "no endpoint tried";
	unsigned failures = 0;

	for (;;) {
		size_t idx = c->cur;
		long status = 0;
		int rc = ensure_verified(c, idx, deadline, last, sizeof(last));

		if (rc == 0)
			rc = grpc_handle(c, idx);
		if (rc == 0) {
			CURLcode crc = perform(c, idx, 1, path, body->ptr, body->len, deadline,
					       &status);

			rc = grpc_outcome(c, idx, crc, status, what, last, sizeof(last));
		}
		if (rc == 0)
			atomic_store(&s->preferred, idx);
		if (rc != 1)
			return rc;
		rc = move_on(c, idx, &failures, deadline, what, last);
		if (rc != 0)
			return rc;
	}
}

/* ---- JSON bits --------------------------------------------------------- */

static int64_t int64_member(json_object *o, const char *name)
{
	json_object *v;

	if (o == NULL || !json_object_object_get_ex(o, name, &v))
		return 0;
	if (json_object_is_type(v, json_type_string))
		return strtoll(json_object_get_string(v), NULL, 10);
	return json_object_get_int64(v);
}

static int bool_member(json_object *o, const char *name)
{
	json_object *v;

	return o != NULL && json_object_object_get_ex(o, name, &v) && json_object_get_boolean(v);
}

static json_object *member(json_object *o, const char *name)
{
	json_object *v;

	return o != NULL && json_object_object_get_ex(o, name, &v) ? v : NULL;
}

typedef struct {
	char *key;   /* the state key (PREFIX/ stripped) */
	char *text;  /* the value's bytes */
	size_t len;
	int64_t mod; /* mod_revision */
} etcd_kv;

static void kv_clear(etcd_kv *kv)
{
	free(kv->key);
	free(kv->text);
	memset(kv, 0, sizeof(*kv));
}

static int under_prefix(const etcd_store *s, const char *full, size_t flen)
{
	return flen >= s->prefix_len && memcmp(full, s->prefix, s->prefix_len) == 0;
}

static int outside_prefix(const etcd_store *s)
{
	return etcd_fail(s, FAUCET_ERROR, "reading a reply", "an entry's key is not under the prefix");
}

/* n bytes and a NUL, or NULL when out of memory. */
static char *bytes_dup(const char *p, size_t n)
{
	char *o = faucet__malloc(n + 1);

	if (o != NULL) {
		if (n > 0)
			memcpy(o, p, n);
		o[n] = '\0';
	}
	return o;
}

/* One entry from its etcd key and value as they are (a gRPC reply; v NULL:
 * the empty value) into *kv (value only when want_value). */
static int kv_raw(const etcd_store *s, const char *k, size_t klen, const char *v, size_t vlen,
		  int64_t mod, int want_value, etcd_kv *kv)
{
	memset(kv, 0, sizeof(*kv));
	if (!under_prefix(s, k, klen))
		return outside_prefix(s);
	kv->key = bytes_dup(k + s->prefix_len, klen - s->prefix_len);
	kv->mod = mod;
	if (kv->key != NULL && want_value) {
		kv->text = bytes_dup(v != NULL ? v : "", v != NULL ? vlen : 0);
		kv->len = v != NULL ? vlen : 0;
	}
	if (kv->key == NULL || (want_value && kv->text == NULL)) {
		kv_clear(kv);
		return FAUCET_ENOMEM;
	}
	return 0;
}

/* One entry from its base64 key and value (v NULL: no "value" member, the
 * empty value) into *kv (value only when want_value). */
static int kv_fill(const etcd_store *s, const char *k, size_t klen, const char *v, size_t vlen,
		   int64_t mod, int want_value, etcd_kv *kv)
{
	char *full = NULL;
	size_t flen;
	int rc;

	memset(kv, 0, sizeof(*kv));
	rc = b64_decode(k, klen, &full, &flen);
	if (rc != 0 || !under_prefix(s, full, flen)) {
		free(full);
		return rc == FAUCET_ENOMEM ? rc : outside_prefix(s);
	}
	/* The state key is the decoded key after the prefix: moved down in
	 * place, with its NUL, rather than copied. */
	memmove(full, full + s->prefix_len, flen - s->prefix_len + 1);
	kv->key = full;
	kv->mod = mod;
	if (want_value) {
		if (v == NULL) {
			kv->text = faucet__strdup("");
			kv->len = 0;
			rc = kv->text ? 0 : FAUCET_ENOMEM;
		} else {
			rc = b64_decode(v, vlen, &kv->text, &kv->len);
		}
		if (rc != 0) {
			kv_clear(kv);
			return rc == FAUCET_ENOMEM ? rc
						   : etcd_fail(s, FAUCET_ERROR, "reading a reply",
							       "a value is not base64");
		}
	}
	return 0;
}

/* One element of "kvs" into *kv (value only when want_value). */
static int kv_read(const etcd_store *s, json_object *o, int want_value, etcd_kv *kv)
{
	json_object *k = member(o, "key"), *v = member(o, "value");

	memset(kv, 0, sizeof(*kv));
	if (k == NULL)
		return etcd_fail(s, FAUCET_ERROR, "reading a reply", "an entry has no key");
	return kv_fill(s, json_object_get_string(k), (size_t)json_object_get_string_len(k),
		       v ? json_object_get_string(v) : NULL,
		       v ? (size_t)json_object_get_string_len(v) : 0, int64_member(o, "mod_revision"),
		       want_value, kv);
}

static int parse_value(const etcd_store *s, const etcd_kv *kv, faucet_value **out)
{
	int rc = faucet_value_parse(out, kv->text, kv->len);

	if (rc != 0)
		return faucet_error_set(FAUCET_ERROR,
					"etcd state store %s: the value of '%s' is not JSON: %s",
					s->redacted, kv->key, faucet_error_last()->message);
	return 0;
}

/* ---- request bodies ---------------------------------------------------- */

static int put_full_key(faucet_buf *b, const etcd_store *s, const char *key)
{
	faucet_buf k = FAUCET_BUF_INIT;
	int rc;

	(void)faucet__buf_puts(&k, s->prefix);
	(void)faucet__buf_puts(&k, key);
	rc = k.failed ? FAUCET_ENOMEM : b64_put(b, k.ptr, k.len);
	faucet__buf_dispose(&k);
	return rc;
}

/* The range_end of "PREFIX/p"'s keys into e. */
static int range_end(faucet_buf *e, const etcd_store *s, const char *prefix)
{
	(void)faucet__buf_puts(e, s->prefix);
	(void)faucet__buf_puts(e, prefix);
	if (e->failed)
		return FAUCET_ENOMEM;
	/* Every key byte is ASCII below 0x7f, so bumping the last byte ends
	 * the range right after the prefix's keys. */
	e->ptr[e->len - 1]++;
	return 0;
}

/* "PREFIX/p" as the range start and its successor as range_end. */
static int put_range(faucet_buf *b, const etcd_store *s, const char *start, size_t start_len,
		     const char *prefix)
{
	faucet_buf e = FAUCET_BUF_INIT;
	int rc;

	if (range_end(&e, s, prefix) != 0) {
		faucet__buf_dispose(&e);
		return FAUCET_ENOMEM;
	}
	(void)faucet__buf_puts(b, "\"key\":\"");
	rc = b64_put(b, start, start_len);
	(void)faucet__buf_puts(b, "\",\"range_end\":\"");
	if (rc == 0)
		rc = b64_put(b, e.ptr, e.len);
	(void)faucet__buf_puts(b, "\"");
	faucet__buf_dispose(&e);
	return rc == 0 && b->failed ? FAUCET_ENOMEM : rc;
}

static int put_request_put(faucet_buf *b, const etcd_store *s, const char *key,
			   const faucet_value *v, int64_t lease)
{
	int rc;

	(void)faucet__buf_puts(b, "{\"request_put\":{\"key\":\"");
	rc = put_full_key(b, s, key);
	(void)faucet__buf_puts(b, "\",\"value\":\"");
	if (rc == 0)
		rc = b64_put(b, faucet_value_json(v), faucet_value_len(v));
	if (lease != 0)
		(void)faucet__buf_printf(b, "\",\"lease\":\"%lld", (long long)lease);
	(void)faucet__buf_puts(b, "\"}}");
	return rc == 0 && b->failed ? FAUCET_ENOMEM : rc;
}

static int put_request_delete(faucet_buf *b, const etcd_store *s, const char *key)
{
	int rc;

	(void)faucet__buf_puts(b, "{\"request_delete_range\":{\"key\":\"");
	rc = put_full_key(b, s, key);
	(void)faucet__buf_puts(b, "\"}}");
	return rc == 0 && b->failed ? FAUCET_ENOMEM : rc;
}

/* A txn's compare: key is still at mod_revision `mod` (0: still absent,
 * which is how etcd sees a key that is not there). */
static int put_compare_mod(faucet_buf *b, const etcd_store *s, const char *key, int64_t mod)
{
	int rc;

	(void)faucet__buf_puts(b, "{\"key\":\"");
	rc = put_full_key(b, s, key);
	(void)faucet__buf_printf(b, "\",\"target\":\"MOD\",\"mod_revision\":\"%lld\"}",
				(long long)mod);
	return rc == 0 && b->failed ? FAUCET_ENOMEM : rc;
}

/*
 * Native leases (doc/design.md §3.8).  The lease module writes every claim
 * and renewal of a faucet lease through compare_and_put_expiring with the
 * document's expires_at; here that write is attached to an etcd lease that
 * runs out one second after it, so etcd itself deletes the lease of a
 * holder that stopped renewing (killed, frozen, cut off): nothing is left
 * behind for doctor to warn about.  Each such write (a compare-and-put on
 * the key's mod_revision, which is also what fences it) grants a fresh etcd
 * lease; the one it replaces holds no key any more and simply runs out.  A
 * document already expired is written without one.
 */

/* The etcd lease to attach to a write that may go at `expires_at` (unix
 * seconds; 0 = never), in *lease (0: none).  A grant is safe to send again
 * (an extra lease holds nothing), so it is not a write for failover's sake. */
static int lease_for(etcd_store *s, etcd_conn *c, int64_t expires_at, int64_t *lease)
{
	faucet_buf b = FAUCET_BUF_INIT;
	json_object *r = NULL, *id;
	int64_t ttl = expires_at > 0 ? expires_at - (int64_t)time(NULL) + 1 : 0;
	int rc;

	*lease = 0;
	if (ttl <= 0)
		return 0;
	if (faucet__buf_printf(&b, "{\"TTL\":%lld}", (long long)ttl) != 0)
		return FAUCET_ENOMEM;
	rc = etcd_request(c, "/v3/lease/grant", &b, 0, "lease grant", &r);
	faucet__buf_dispose(&b);
	if (rc != 0)
		return rc;
	id = member(r, "ID");
	if (id != NULL)
		*lease = json_object_is_type(id, json_type_string)
				 ? strtoll(json_object_get_string(id), NULL, 10)
				 : json_object_get_int64(id);
	json_object_put(r);
	if (*lease == 0)
		return etcd_fail(s, FAUCET_ERROR, "lease grant", "the reply has no lease ID");
	return 0;
}

/* ---- operations -------------------------------------------------------- */

typedef struct {
	const char *key;
	const faucet_value *value;
	const faucet_value *expected;
	const char *guard;
	const faucet_value *guard_value;
	int64_t expires_at; /* compare_and_put_expiring: when the key may go (0: never) */
	faucet_value **out;
	int *done;
	/* lists and scans */
	const char *prefix;
	faucet_strarray *keys;
	char *start;
	size_t start_len;
	int64_t revision;
	int more;
	etcd_kv *page;
	size_t page_n;
	size_t limit;
	int keys_only;
	/* batches */
	const faucet_store_guard *guards;
	const faucet_entry *entries;
	size_t count;
	const char *const *many;
	faucet_value **many_out;
} etcd_args;

typedef int (*etcd_op)(etcd_store *s, etcd_conn *c, etcd_args *a);

static int etcd_run(etcd_store *s, etcd_op op, etcd_args *a)
{
	etcd_conn *c = NULL;
	int rc = faucet__pool_acquire(s->pool, (void **)&c, NULL);

	if (rc != 0)
		return rc;
	rc = op(s, c, a);
	faucet__pool_release(s->pool, c, 0);
	return rc;
}

/* The key's entry: *kv filled (key NULL when absent). */
static int read_key(etcd_store *s, etcd_conn *c, const char *key, etcd_kv *kv)
{
	faucet_buf b = FAUCET_BUF_INIT;
	json_object *r = NULL, *kvs;
	int rc;

	memset(kv, 0, sizeof(*kv));
	(void)faucet__buf_puts(&b, "{\"key\":\"");
	rc = put_full_key(&b, s, key);
	(void)faucet__buf_puts(&b, "\"}");
	if (rc == 0 && b.failed)
		rc = FAUCET_ENOMEM;
	if (rc == 0)
		rc = etcd_request(c, "/v3/kv/range", &b, 0, "get", &r);
	faucet__buf_dispose(&b);
	if (rc != 0)
		return rc;
	kvs = member(r, "kvs");
	if (kvs != NULL && json_object_array_length(kvs) > 0)
		rc = kv_read(s, json_object_array_get_idx(kvs, 0), 1, kv);
	json_object_put(r);
	return rc;
}

static int op_get(etcd_store *s, etcd_conn *c, etcd_args *a)
{
	etcd_kv kv;
	int rc = read_key(s, c, a->key, &kv);

	*a->out = NULL;
	if (rc == 0 && kv.key != NULL)
		rc = parse_value(s, &kv, a->out);
	kv_clear(&kv);
	return rc;
}

static int op_put(etcd_store *s, etcd_conn *c, etcd_args *a)
{
	faucet_buf b = FAUCET_BUF_INIT;
	json_object *r = NULL;
	int64_t lease = 0;
	int rc;

	if ((rc = lease_for(s, c, a->expires_at, &lease)) != 0)
		return rc;
	(void)faucet__buf_puts(&b, "{\"key\":\"");
	rc = put_full_key(&b, s, a->key);
	(void)faucet__buf_puts(&b, "\",\"value\":\"");
	if (rc == 0)
		rc = b64_put(&b, faucet_value_json(a->value), faucet_value_len(a->value));
	if (lease != 0)
		(void)faucet__buf_printf(&b, "\",\"lease\":\"%lld", (long long)lease);
	(void)faucet__buf_puts(&b, "\"}");
	if (rc == 0 && b.failed)
		rc = FAUCET_ENOMEM;
	if (rc == 0)
		rc = etcd_request(c, "/v3/kv/put", &b, 1, "put", &r);
	faucet__buf_dispose(&b);
	json_object_put(r);
	return rc;
}

static int op_del(etcd_store *s, etcd_conn *c, etcd_args *a)
{
	faucet_buf b = FAUCET_BUF_INIT;
	json_object *r = NULL;
	int rc;

	(void)faucet__buf_puts(&b, "{\"key\":\"");
	rc = put_full_key(&b, s, a->key);
	(void)faucet__buf_puts(&b, "\"}");
	if (rc == 0 && b.failed)
		rc = FAUCET_ENOMEM;
	if (rc == 0)
		rc = etcd_request(c, "/v3/kv/deleterange", &b, 1, "delete", &r);
	faucet__buf_dispose(&b);
	json_object_put(r);
	return rc;
}

static void page_free(etcd_args *a);

/* ---- a range reply read without json-c ----------------------------------
 *
 * json-c turns a page of 10,000 entries into 10,000 hash tables and 40,000
 * strings: perf showed 40% of an export's time in malloc under
 * json_tokener_parse.  A range reply is plain - an object with "header"
 * ({"revision":"R",...}), "kvs" (objects of base64 and decimal strings),
 * "more" and "count" - so this reader takes those members straight from
 * the text.  Anything it does not expect (an escape in a string, a member
 * of another type) makes it give up, and the reply goes to json-c as
 * before: the fast path never decides what a reply means on its own.
 */
typedef struct {
	const char *p, *end;
} jscan;

static void js_ws(jscan *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\n' || *j->p == '\r' || *j->p == '\t'))
		j->p++;
}

static int js_char(jscan *j, char ch)
{
	js_ws(j);
	if (j->p < j->end && *j->p == ch) {
		j->p++;
		return 1;
	}
	return 0;
}

/* A string without escapes: its bytes [*str, *str + *n).  0 = not one. */
static int js_string(jscan *j, const char **str, size_t *n)
{
	const char *q;

	js_ws(j);
	if (j->p >= j->end || *j->p != '"')
		return 0;
	for (q = j->p + 1; q < j->end && *q != '"'; q++) {
		if (*q == '\\' || (unsigned char)*q < 0x20)
			return 0;
	}
	if (q >= j->end)
		return 0;
	*str = j->p + 1;
	*n = (size_t)(q - j->p - 1);
	j->p = q + 1;
	return 1;
}

static int js_is(const char *str, size_t n, const char *name)
{
	return strlen(name) == n && memcmp(str, name, n) == 0;
}

/* An int64 as the gateway writes it (a decimal string) or as a number. */
static int js_int64(jscan *j, int64_t *out)
{
	const char *str, *q;
	size_t n;
	int64_t v = 0;

	js_ws(j);
	if (j->p < j->end && *j->p == '"') {
		if (!js_string(j, &str, &n) || n == 0 || n > 18)
			return 0;
	} else {
		for (q = j->p; q < j->end && *q >= '0' && *q <= '9'; q++)
			;
		str = j->p;
		n = (size_t)(q - j->p);
		if (n == 0 || n > 18)
			return 0;
		j->p = q;
	}
	for (size_t i = 0; i < n; i++) {
		if (str[i] < '0' || str[i] > '9')
			return 0;
		v = v * 10 + (str[i] - '0');
	}
	*out = v;
	return 1;
}

static int js_literal(jscan *j, const char *word)
{
	size_t n = strlen(word);

	js_ws(j);
	if ((size_t)(j->end - j->p) < n || memcmp(j->p, word, n) != 0)
		return 0;
	j->p += n;
	return 1;
}

/* Skip any value (strings without escapes only). */
static int js_skip(jscan *j, int depth)
{
	const char *str;
	size_t n;

	js_ws(j);
	if (j->p >= j->end || depth > 32)
		return 0;
	if (*j->p == '"')
		return js_string(j, &str, &n);
	if (*j->p == '{' || *j->p == '[') {
		int obj = *j->p == '{';
		char close = obj ? '}' : ']';

		j->p++;
		if (js_char(j, close))
			return 1;
		do {
			if (obj && (!js_string(j, &str, &n) || !js_char(j, ':')))
				return 0;
			if (!js_skip(j, depth + 1))
				return 0;
		} while (js_char(j, ','));
		return js_char(j, close);
	}
	if (js_literal(j, "true") || js_literal(j, "false") || js_literal(j, "null"))
		return 1;
	{
		const char *q = j->p;

		while (q < j->end && ((*q >= '0' && *q <= '9') || *q == '-' || *q == '+' ||
				      *q == '.' || *q == 'e' || *q == 'E'))
			q++;
		if (q == j->p)
			return 0;
		j->p = q;
		return 1;
	}
}

/* One element of "kvs": *kv filled.  1 = not the expected shape. */
static int js_kv(const etcd_store *s, jscan *j, int want_value, etcd_kv *kv)
{
	const char *name, *k = NULL, *v = NULL;
	size_t nlen, klen = 0, vlen = 0;
	int64_t mod = 0;

	if (!js_char(j, '{'))
		return 1;
	if (!js_char(j, '}')) {
		do {
			if (!js_string(j, &name, &nlen) || !js_char(j, ':'))
				return 1;
			if (js_is(name, nlen, "key")) {
				if (!js_string(j, &k, &klen))
					return 1;
			} else if (js_is(name, nlen, "value")) {
				if (!js_string(j, &v, &vlen))
					return 1;
			} else if (js_is(name, nlen, "mod_revision")) {
				if (!js_int64(j, &mod))
					return 1;
			} else if (!js_skip(j, 1)) {
				return 1;
			}
		} while (js_char(j, ','));
		if (!js_char(j, '}'))
			return 1;
	}
	if (k == NULL)
		return etcd_fail(s, FAUCET_ERROR, "reading a reply", "an entry has no key");
	return kv_fill(s, k, klen, v, vlen, mod, want_value, kv);
}

/* Room for one more entry at the end of a->page, whose capacity is *cap:
 * the slot, or NULL when out of memory. */
static etcd_kv *page_slot(etcd_args *a, size_t *cap)
{
	etcd_kv *p = faucet__reserve(a->page, cap, a->page_n + 1, sizeof(*p),
				     a->limit ? a->limit : 64);

	if (p == NULL)
		return NULL;
	a->page = p;
	return &p[a->page_n];
}

/* Read a range reply into a->page, a->more and (when still 0) a->revision:
 * 0, an error, or 1 when the reply is not of the expected shape (a->page
 * is then empty again; parse it with json-c). */
static int range_reply_scan(etcd_store *s, etcd_args *a, const char *text, size_t len)
{
	jscan j = {text, text + len};
	const char *name;
	size_t nlen, cap = 0;
	int64_t rev = 0;
	int more = 0, rc = 0;

	if (!js_char(&j, '{'))
		return 1;
	if (!js_char(&j, '}')) {
		do {
			if (!js_string(&j, &name, &nlen) || !js_char(&j, ':'))
				goto other;
			if (js_is(name, nlen, "header")) {
				if (!js_char(&j, '{'))
					goto other;
				if (js_char(&j, '}'))
					continue;
				do {
					if (!js_string(&j, &name, &nlen) || !js_char(&j, ':'))
						goto other;
					if (js_is(name, nlen, "revision")) {
						if (!js_int64(&j, &rev))
							goto other;
					} else if (!js_skip(&j, 1)) {
						goto other;
					}
				} while (js_char(&j, ','));
				if (!js_char(&j, '}'))
					goto other;
			} else if (js_is(name, nlen, "kvs")) {
				if (!js_char(&j, '['))
					goto other;
				if (js_char(&j, ']'))
					continue;
				do {
					etcd_kv *slot = page_slot(a, &cap);

					if (slot == NULL) {
						rc = FAUCET_ENOMEM;
						goto fail;
					}
					rc = js_kv(s, &j, !a->keys_only, slot);
					if (rc == 1)
						goto other;
					if (rc != 0)
						goto fail;
					a->page_n++;
				} while (js_char(&j, ','));
				if (!js_char(&j, ']'))
					goto other;
			} else if (js_is(name, nlen, "more")) {
				if (js_literal(&j, "true"))
					more = 1;
				else if (!js_literal(&j, "false"))
					goto other;
			} else if (!js_skip(&j, 0)) {
				goto other;
			}
		} while (js_char(&j, ','));
		if (!js_char(&j, '}'))
			goto other;
	}
	js_ws(&j);
	if (j.p != j.end)
		goto other;
	if (a->revision == 0)
		a->revision = rev;
	a->more = more;
	return 0;
other:
	rc = 1;
fail:
	page_free(a);
	return rc;
}

/* The same reply through json-c (range_reply_scan gave up on it). */
static int range_reply_json(etcd_store *s, etcd_conn *c, etcd_args *a)
{
	json_object *r = reply_json(c), *kvs;
	size_t n;
	int rc = 0;

	if (r == NULL || !json_object_is_type(r, json_type_object)) {
		json_object_put(r);
		return etcd_fail(s, FAUCET_ERROR, "list",
				 "an HTTP 200 reply that is not a JSON object");
	}
	if (a->revision == 0)
		a->revision = int64_member(member(r, "header"), "revision");
	a->more = bool_member(r, "more");
	kvs = member(r, "kvs");
	n = kvs ? json_object_array_length(kvs) : 0;
	a->page = n ? faucet__calloc(n, sizeof(*a->page)) : NULL;
	if (n && a->page == NULL)
		rc = FAUCET_ENOMEM;
	a->page_n = 0;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		rc = kv_read(s, json_object_array_get_idx(kvs, i), !a->keys_only, &a->page[i]);
		if (rc == 0)
			a->page_n++;
	}
	json_object_put(r);
	return rc;
}

/* A gRPC reply's page (range_kv sees each entry). */
typedef struct {
	etcd_store *s;
	etcd_args *a;
	size_t cap;
} grpc_page;

static int range_kv(const etcd_grpc_kv *kv, void *ctx)
{
	grpc_page *p = ctx;
	etcd_kv *slot = page_slot(p->a, &p->cap);
	int rc;

	if (slot == NULL)
		return FAUCET_ENOMEM;
	rc = kv_raw(p->s, kv->key, kv->key_len, kv->value, kv->value_len, kv->mod_revision,
		    !p->a->keys_only, slot);
	if (rc == 0)
		p->a->page_n++;
	return rc;
}

/* Read a gRPC RangeResponse into a->page, a->more and (when still 0)
 * a->revision. */
static int range_reply_grpc(etcd_store *s, etcd_conn *c, etcd_args *a)
{
	grpc_page p = {s, a, 0};
	etcd_grpc_range_meta meta;
	const char *why = NULL;
	int rc = faucet__etcd_grpc_range_decode(c->reply.ptr ? c->reply.ptr : "", c->reply.len,
						range_kv, &p, &meta, &why);

	if (rc == ETCD_GRPC_MALFORMED)
		rc = faucet_error_set(FAUCET_ERROR,
				      "etcd state store %s: list: %s: the gRPC reply is not a "
				      "RangeResponse: %s",
				      s->redacted, host_of(s->endpoints[c->cur]), why);
	if (rc != 0) {
		page_free(a);
		return rc;
	}
	if (a->revision == 0)
		a->revision = meta.revision;
	a->more = meta.more;
	return 0;
}

/* The request for one page: a RangeRequest's gRPC frame, or the gateway's
 * JSON. */
static int page_request(etcd_store *s, etcd_args *a, int grpc, int serial, faucet_buf *b)
{
	faucet_buf e = FAUCET_BUF_INIT;
	int rc;

	if (grpc) {
		rc = range_end(&e, s, a->prefix);
		if (rc == 0) {
			etcd_grpc_range_req r = {a->start, a->start_len, e.ptr, e.len,
						 (int64_t)a->limit, a->revision, serial,
						 a->keys_only};

			rc = faucet__etcd_grpc_range_encode(b, &r);
		}
		faucet__buf_dispose(&e);
		return rc;
	}
	(void)faucet__buf_puts(b, "{");
	rc = put_range(b, s, a->start, a->start_len, a->prefix);
	(void)faucet__buf_printf(b, ",\"limit\":\"%zu\"%s", a->limit,
				a->keys_only ? ",\"keys_only\":true" : "");
	if (a->revision > 0)
		(void)faucet__buf_printf(b, ",\"revision\":\"%lld\"%s", (long long)a->revision,
					serial ? ",\"serializable\":true" : "");
	(void)faucet__buf_puts(b, "}");
	return rc == 0 && b->failed ? FAUCET_ENOMEM : rc;
}

/* One page of a range under a->prefix from a->start, at a->revision once
 * the first page has fixed it (so a listing is one snapshot).  The first
 * page is a linearizable read; the later ones read that fixed revision
 * from the member that answered (serializable: no Raft round per page).
 * A member that has not applied the revision yet (after a switch of
 * endpoint) answers "future revision": that page is asked again,
 * linearizably.  Through gRPC unless a member has shown that it does not
 * speak it; then through the gateway, this page and every later range of
 * the store. */
static int op_page(etcd_store *s, etcd_conn *c, etcd_args *a)
{
	int serial = a->revision > 0;
	int grpc = !atomic_load(&s->grpc_off);
	int rc;

	for (;;) {
		faucet_buf b = FAUCET_BUF_INIT;

		rc = page_request(s, a, grpc, serial, &b);
		if (rc == 0 && grpc)
			rc = grpc_request(c, ETCD_GRPC_RANGE, &b, "list");
		else if (rc == 0)
			rc = etcd_request(c, "/v3/kv/range", &b, 0, "list", NULL);
		faucet__buf_dispose(&b);
		if (rc == ETCD_NOT_GRPC) {
			atomic_store(&s->grpc_off, 1);
			grpc = 0;
			continue;
		}
		if (rc == 0 || !serial || strstr(faucet_error_last()->message, "future revision") == NULL)
			break;
		serial = 0;
	}
	if (rc != 0)
		return rc;
	a->page_n = 0;
	if (grpc) {
		rc = range_reply_grpc(s, c, a);
	} else {
		rc = range_reply_scan(s, a, c->reply.ptr, c->reply.len);
		if (rc == 1)
			rc = range_reply_json(s, c, a);
	}
	if (rc == 0 && a->more && a->page_n > 0) {
		/* The next page starts just after this one's last key. */
		etcd_kv *last = &a->page[a->page_n - 1];
		size_t klen = strlen(last->key);
		char *next = faucet__malloc(s->prefix_len + klen + 1);

		if (next == NULL) {
			rc = FAUCET_ENOMEM;
		} else {
			memcpy(next, s->prefix, s->prefix_len);
			memcpy(next + s->prefix_len, last->key, klen);
			next[s->prefix_len + klen] = '\0';
			free(a->start);
			a->start = next;
			a->start_len = s->prefix_len + klen + 1; /* with the NUL */
		}
	} else if (rc == 0) {
		a->more = 0;
	}
	return rc;
}

static void page_free(etcd_args *a)
{
	for (size_t i = 0; i < a->page_n; i++)
		kv_clear(&a->page[i]);
	free(a->page);
	a->page = NULL;
	a->page_n = 0;
}

static int range_begin(etcd_store *s, etcd_args *a, const char *prefix)
{
	a->prefix = prefix;
	a->start = faucet__sprintf("%s%s", s->prefix, prefix);
	if (a->start == NULL)
		return FAUCET_ENOMEM;
	a->start_len = strlen(a->start);
	a->more = 1;
	return 0;
}

/* Every page in turn: fn sees each page after its connection went back to
 * the pool, so it may use the store. */
typedef int (*page_fn)(etcd_store *s, etcd_args *a, void *ctx);

static int range_walk(etcd_store *s, const char *prefix, int keys_only, size_t limit,
		      page_fn fn, void *ctx)
{
	etcd_args a = {0};
	int rc = range_begin(s, &a, prefix);

	a.keys_only = keys_only;
	a.limit = limit;
	while (rc == 0 && a.more) {
		rc = etcd_run(s, op_page, &a);
		if (rc == 0)
			rc = fn(s, &a, ctx);
		page_free(&a);
	}
	free(a.start);
	return rc;
}

static int collect_keys(etcd_store *s, etcd_args *a, void *ctx)
{
	faucet_strarray *out = ctx;

	(void)s;
	for (size_t i = 0; i < a->page_n; i++) {
		if (faucet__strarray_push(out, a->page[i].key) != 0)
			return FAUCET_ENOMEM;
	}
	return 0;
}

typedef struct {
	faucet_entry_fn fn;
	void *ctx;
	int data_only;
} entries_ctx;

static int feed_entries(etcd_store *s, etcd_args *a, void *ctx)
{
	entries_ctx *e = ctx;

	for (size_t i = 0; i < a->page_n; i++) {
		faucet_value *v = NULL;
		int rc;

		if (e->data_only && faucet__is_bookkeeping_key(a->page[i].key))
			continue;
		rc = parse_value(s, &a->page[i], &v);
		if (rc != 0)
			return rc;
		rc = e->fn(a->page[i].key, v, e->ctx);
		faucet_value_free(v);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* Does the stored entry (kv, key NULL = absent) equal `expected` (NULL =
 * no entry)? */
static int matches(etcd_store *s, const etcd_kv *kv, const faucet_value *expected, int *eq)
{
	faucet_value *cur = NULL;
	int rc;

	if (kv->key == NULL || expected == NULL) {
		*eq = (kv->key == NULL) == (expected == NULL);
		return 0;
	}
	rc = parse_value(s, kv, &cur);
	if (rc != 0)
		return rc;
	*eq = faucet_value_equal(cur, expected);
	faucet_value_free(cur);
	return 0;
}

/* The new state of `key` from a failed txn's request_range answer. */
static int kv_from_failure(etcd_store *s, json_object *r, etcd_kv *kv)
{
	json_object *resp = member(r, "responses"), *kvs;

	memset(kv, 0, sizeof(*kv));
	if (resp == NULL || json_object_array_length(resp) < 1)
		return etcd_fail(s, FAUCET_ERROR, "txn", "a failed txn's reply has no range");
	kvs = member(member(json_object_array_get_idx(resp, 0), "response_range"), "kvs");
	if (kvs != NULL && json_object_array_length(kvs) > 0)
		return kv_read(s, json_object_array_get_idx(kvs, 0), 1, kv);
	return 0;
}

/*
 * compare-and-put / compare-and-delete / put_guarded: the guard key
 * (a->guard, else a->key) must hold a->expected; then, in one txn on the
 * guard's mod_revision: put a->guard_value on the guard (put_guarded) and
 * put a->value on a->key (a->value NULL: delete a->key).
 */
static int op_cas(etcd_store *s, etcd_conn *c, etcd_args *a)
{
	const char *guard = a->guard ? a->guard : a->key;
	etcd_kv kv;
	int rc = read_key(s, c, guard, &kv);

	*a->done = 0;
	for (int attempt = 0; rc == 0 && attempt < ETCD_CAS_ATTEMPTS; attempt++) {
		faucet_buf b = FAUCET_BUF_INIT;
		json_object *r = NULL;
		int eq = 0;

		rc = matches(s, &kv, a->expected, &eq);
		if (rc != 0 || !eq)
			break;
		int64_t lease = 0;

		if (a->value != NULL && (rc = lease_for(s, c, a->expires_at, &lease)) != 0)
			break;
		(void)faucet__buf_puts(&b, "{\"compare\":[");
		rc = put_compare_mod(&b, s, guard, kv.mod);
		(void)faucet__buf_puts(&b, "],\"success\":[");
		if (rc == 0 && a->guard != NULL) {
			rc = put_request_put(&b, s, a->guard, a->guard_value, 0);
			(void)faucet__buf_puts(&b, ",");
		}
		if (rc == 0 && a->value != NULL) {
			rc = put_request_put(&b, s, a->key, a->value, lease);
		} else if (rc == 0) {
			rc = put_request_delete(&b, s, a->key);
		}
		(void)faucet__buf_puts(&b, "],\"failure\":[{\"request_range\":{\"key\":\"");
		if (rc == 0)
			rc = put_full_key(&b, s, guard);
		(void)faucet__buf_puts(&b, "\"}}]}");
		if (rc == 0 && b.failed)
			rc = FAUCET_ENOMEM;
		if (rc == 0)
			rc = etcd_request(c, "/v3/kv/txn", &b, 1,
					  a->value ? "compare-and-put" : "compare-and-delete", &r);
		faucet__buf_dispose(&b);
		if (rc != 0)
			break;
		if (bool_member(r, "succeeded")) {
			*a->done = 1;
			json_object_put(r);
			kv_clear(&kv);
			return 0;
		}
		/* Someone wrote the key after our read: look at its new value. */
		kv_clear(&kv);
		rc = kv_from_failure(s, r, &kv);
		json_object_put(r);
		if (rc == 0 && attempt + 1 == ETCD_CAS_ATTEMPTS)
			rc = etcd_fail(s, FAUCET_ECONTENTION, guard,
				       "compare-and-put kept losing to other writers");
	}
	kv_clear(&kv);
	return rc;
}

/* Txns of up to ETCD_MAX_TXN_OPS puts, in order; a chunk also ends before
 * a key it already holds (etcd refuses a txn that puts one key twice), so
 * a key given twice ends with its last value. */
static int op_put_chunk(etcd_store *s, etcd_conn *c, etcd_args *a)
{
	faucet_buf b = FAUCET_BUF_INIT;
	json_object *r = NULL;
	int rc = 0;

	(void)faucet__buf_puts(&b, "{\"success\":[");
	for (size_t i = 0; rc == 0 && i < a->count; i++) {
		if (i > 0)
			(void)faucet__buf_puts(&b, ",");
		rc = put_request_put(&b, s, a->entries[i].key, a->entries[i].value, 0);
	}
	(void)faucet__buf_puts(&b, "]}");
	if (rc == 0 && b.failed)
		rc = FAUCET_ENOMEM;
	if (rc == 0)
		rc = etcd_request(c, "/v3/kv/txn", &b, 1, "batch put", &r);
	faucet__buf_dispose(&b);
	json_object_put(r);
	return rc;
}

static size_t chunk_len(const faucet_entry *e, size_t count)
{
	size_t n = 0;

	for (; n < count && n < ETCD_MAX_TXN_OPS; n++) {
		for (size_t j = 0; j < n; j++) {
			if (strcmp(e[j].key, e[n].key) == 0)
				return n;
		}
	}
	return n;
}

static void kvs_free(etcd_kv *kvs, size_t n)
{
	for (size_t i = 0; kvs != NULL && i < n; i++)
		kv_clear(&kvs[i]);
	free(kvs);
}

/* A read-only txn of one range per key, at `revision` when it is set. */
static int ranges_body(faucet_buf *b, const etcd_store *s, const char *const *keys, size_t n,
		       int64_t revision)
{
	int rc = 0;

	(void)faucet__buf_puts(b, "{\"success\":[");
	for (size_t i = 0; rc == 0 && i < n; i++) {
		(void)faucet__buf_puts(b, i > 0 ? ",{\"request_range\":{\"key\":\""
						: "{\"request_range\":{\"key\":\"");
		rc = put_full_key(b, s, keys[i]);
		if (revision > 0)
			(void)faucet__buf_printf(b, "\",\"revision\":\"%lld", (long long)revision);
		(void)faucet__buf_puts(b, "\"}}");
	}
	(void)faucet__buf_puts(b, "]}");
	return rc == 0 && b->failed ? FAUCET_ENOMEM : rc;
}

/* keys[0..n) (at most ETCD_MAX_TXN_OPS) read in one txn, at *revision when
 * it is set, else at the latest, which *revision is then set to: *kvs =
 * n entries, each with its value and mod_revision (key NULL: absent).
 * Caller frees them (kvs_free). */
static int read_keys(etcd_store *s, etcd_conn *c, const char *const *keys, size_t n,
		     int64_t *revision, const char *what, etcd_kv **kvs)
{
	faucet_buf b = FAUCET_BUF_INIT;
	json_object *r = NULL, *resp;
	int rc;

	if ((*kvs = faucet__calloc(n, sizeof(**kvs))) == NULL)
		return FAUCET_ENOMEM;
	rc = ranges_body(&b, s, keys, n, *revision);
	if (rc == 0)
		rc = etcd_request(c, "/v3/kv/txn", &b, 0, what, &r);
	faucet__buf_dispose(&b);
	if (rc == 0 && *revision == 0)
		*revision = int64_member(member(r, "header"), "revision");
	resp = member(r, "responses");
	if (rc == 0 && (resp == NULL || json_object_array_length(resp) != n))
		rc = etcd_fail(s, FAUCET_ERROR, what,
			       "the txn's reply has the wrong number of answers");
	for (size_t i = 0; rc == 0 && i < n; i++) {
		json_object *kv = member(member(json_object_array_get_idx(resp, i), "response_range"),
					 "kvs");

		if (kv != NULL && json_object_array_length(kv) > 0)
			rc = kv_read(s, json_object_array_get_idx(kv, 0), 1, &(*kvs)[i]);
	}
	json_object_put(r);
	if (rc != 0) {
		kvs_free(*kvs, n);
		*kvs = NULL;
	}
	return rc;
}

/* get_many: txns of up to ETCD_MAX_TXN_OPS ranges, the later ones at the
 * first one's revision, so the whole answer is one snapshot. */
static int op_get_chunk(etcd_store *s, etcd_conn *c, etcd_args *a)
{
	etcd_kv *kvs = NULL;
	int rc = read_keys(s, c, a->many, a->count, &a->revision, "get", &kvs);

	for (size_t i = 0; rc == 0 && i < a->count; i++) {
		if (kvs[i].key != NULL)
			rc = parse_value(s, &kvs[i], &a->many_out[i]);
	}
	kvs_free(kvs, a->count);
	return rc;
}

/*
 * compare_and_put_batch: the single-key compare-and-put's shape for up to
 * ETCD_MAX_TXN_OPS keys.  Read every key in one txn, compare each with its
 * expected in C (faucet_value_equal, as op_cas does), then write them all in
 * one txn guarded by every mod_revision read; when one moved since the
 * read, read them all again and decide again (it may still hold).
 */

/* Does every key hold its expected value? */
static int batch_holds(etcd_store *s, const etcd_args *a, const etcd_kv *kvs, int *holds)
{
	int rc = 0;

	*holds = 1;
	for (size_t i = 0; rc == 0 && *holds && i < a->count; i++)
		rc = matches(s, &kvs[i], a->guards[i].expected, holds);
	return rc;
}

/* Each key still at the revision read, then every put and delete; the
 * failure branch is empty (what moved is read again). */
static int batch_body(faucet_buf *b, const etcd_store *s, const etcd_args *a, const etcd_kv *kvs)
{
	const faucet_store_guard *g = a->guards;
	int rc = 0;

	(void)faucet__buf_puts(b, "{\"compare\":[");
	for (size_t i = 0; rc == 0 && i < a->count; i++) {
		(void)faucet__buf_puts(b, i > 0 ? "," : "");
		rc = put_compare_mod(b, s, g[i].key, kvs[i].mod);
	}
	(void)faucet__buf_puts(b, "],\"success\":[");
	for (size_t i = 0; rc == 0 && i < a->count; i++) {
		(void)faucet__buf_puts(b, i > 0 ? "," : "");
		rc = g[i].value != NULL ? put_request_put(b, s, g[i].key, g[i].value, 0)
					: put_request_delete(b, s, g[i].key);
	}
	(void)faucet__buf_puts(b, "]}");
	return rc == 0 && b->failed ? FAUCET_ENOMEM : rc;
}

/* The batch's one write, through the write path of every other write (a
 * lost reply is FAUCET_EUNKNOWN, never sent again): *a->done = 1 when it
 * landed, *moved when a key changed since the read (nothing written). */
static int batch_commit(etcd_store *s, etcd_conn *c, etcd_args *a, const etcd_kv *kvs,
			int *moved)
{
	faucet_buf b = FAUCET_BUF_INIT;
	json_object *r = NULL;
	int rc = batch_body(&b, s, a, kvs);

	if (rc == 0)
		rc = etcd_request(c, "/v3/kv/txn", &b, 1, "compare-and-put batch", &r);
	faucet__buf_dispose(&b);
	if (rc == 0) {
		*a->done = bool_member(r, "succeeded");
		*moved = !*a->done;
	}
	json_object_put(r);
	return rc;
}

static int op_cas_batch(etcd_store *s, etcd_conn *c, etcd_args *a)
{
	int rc = 0, moved = 1;

	*a->done = 0;
	for (int attempt = 0; rc == 0 && moved; attempt++) {
		etcd_kv *kvs = NULL;
		int64_t revision = 0;
		int holds = 0;

		if (attempt == ETCD_CAS_ATTEMPTS)
			return etcd_fail(s, FAUCET_ECONTENTION, "compare-and-put batch",
					 "it kept losing to other writers");
		moved = 0;
		rc = read_keys(s, c, a->many, a->count, &revision, "compare-and-put batch", &kvs);
		if (rc == 0)
			rc = batch_holds(s, a, kvs, &holds);
		if (rc == 0 && holds)
			rc = batch_commit(s, c, a, kvs, &moved);
		kvs_free(kvs, a->count);
	}
	return rc;
}

/* etcd refuses a txn beyond its limits before proposing it, so nothing of
 * it was written: more operations than --max-txn-ops (a user's cluster may
 * set it below the 128 of a full batch; the reads count too) or more bytes
 * than --max-request-bytes (a batch of large values; "request is too
 * large" up to 512 KiB over it, gRPC's "larger than max" beyond).  That is
 * FAUCET_EUNSUPPORTED, so that the caller (undo) goes key by key. */
static int batch_refused(const etcd_store *s, int rc)
{
	static const char *const limits[] = {"too many operations in txn request",
					     "request is too large",
					     "received message larger than max"};
	const char *msg = faucet_error_last()->message;

	for (size_t i = 0; rc == FAUCET_ERROR && i < sizeof(limits) / sizeof(*limits); i++) {
		if (strstr(msg, limits[i]) != NULL)
			return faucet_error_set(FAUCET_EUNSUPPORTED,
						"etcd state store %s: compare-and-put batch: the "
						"cluster refuses a txn this big (%s); nothing was "
						"written",
						s->redacted, limits[i]);
	}
	return rc;
}

/* ---- slots ------------------------------------------------------------- */

static int etcd_get(faucet_store_backend *b, const char *key, faucet_value **out)
{
	etcd_args a = {.key = key, .out = out};

	return etcd_run((etcd_store *)b, op_get, &a);
}

static int etcd_get_many(faucet_store_backend *b, const char *const *keys, size_t count,
			 faucet_value **out)
{
	etcd_store *s = (etcd_store *)b;
	etcd_args a = {0};
	int rc = 0;

	for (size_t i = 0; i < count; i++)
		out[i] = NULL;
	for (size_t done = 0; rc == 0 && done < count;) {
		size_t n = count - done < ETCD_MAX_TXN_OPS ? count - done : ETCD_MAX_TXN_OPS;

		a.many = keys + done;
		a.many_out = out + done;
		a.count = n;
		rc = etcd_run(s, op_get_chunk, &a);
		done += n;
	}
	if (rc != 0) {
		for (size_t i = 0; i < count; i++) {
			faucet_value_free(out[i]);
			out[i] = NULL;
		}
	}
	return rc;
}

static int etcd_put(faucet_store_backend *b, const char *key, const faucet_value *value)
{
	etcd_args a = {.key = key, .value = value};

	return etcd_run((etcd_store *)b, op_put, &a);
}

static int etcd_del(faucet_store_backend *b, const char *key)
{
	etcd_args a = {.key = key};

	return etcd_run((etcd_store *)b, op_del, &a);
}

static int etcd_list(faucet_store_backend *b, const char *prefix, faucet_strarray *out)
{
	int rc = range_walk((etcd_store *)b, prefix, 1, ETCD_LIST_PAGE, collect_keys, out);

	if (rc != 0)
		faucet_strarray_dispose(out);
	return rc;
}

/* One range request: from just after `after` (its etcd key and a NUL, the
 * smallest key above it) when that lies in the prefix's range, `limit`
 * keys, read linearizably on its own (each page is its own snapshot). */
static int etcd_list_page(faucet_store_backend *b, const char *prefix, const char *after,
			  size_t limit, faucet_strarray *out)
{
	etcd_store *s = (etcd_store *)b;
	etcd_args a = {0};
	int rc = range_begin(s, &a, prefix);

	if (rc == 0 && after != NULL && strcmp(after, prefix) >= 0) {
		free(a.start);
		a.start = faucet__sprintf("%s%s", s->prefix, after);
		rc = a.start != NULL ? 0 : FAUCET_ENOMEM;
		a.start_len = rc == 0 ? strlen(a.start) + 1 : 0; /* with the NUL */
	}
	a.keys_only = 1;
	a.limit = limit;
	if (rc == 0)
		rc = etcd_run(s, op_page, &a);
	if (rc == 0)
		rc = collect_keys(s, &a, out);
	page_free(&a);
	free(a.start);
	if (rc != 0)
		faucet_strarray_dispose(out);
	return rc;
}

static int etcd_scan_entries(faucet_store_backend *b, const char *prefix, faucet_entry_fn fn,
			     void *ctx)
{
	entries_ctx e = {fn, ctx, 0};

	return range_walk((etcd_store *)b, prefix, 0, ETCD_SCAN_PAGE, feed_entries, &e);
}

/* etcd cannot leave keys out on the server side; the bookkeeping keys are
 * dropped here, before their values are parsed. */
static int etcd_scan_data(faucet_store_backend *b, const char *prefix, faucet_entry_fn fn,
			  void *ctx)
{
	entries_ctx e = {fn, ctx, 1};

	return range_walk((etcd_store *)b, prefix, 0, ETCD_SCAN_PAGE, feed_entries, &e);
}

static int etcd_compare_and_put(faucet_store_backend *b, const char *key,
				const faucet_value *expected, const faucet_value *value,
				int *written)
{
	etcd_args a = {.key = key, .expected = expected, .value = value, .done = written};

	return etcd_run((etcd_store *)b, op_cas, &a);
}

static int etcd_compare_and_put_expiring(faucet_store_backend *b, const char *key,
					 const faucet_value *expected, const faucet_value *value,
					 int64_t expires_at, int *written)
{
	etcd_args a = {.key = key, .expected = expected, .value = value, .expires_at = expires_at,
		       .done = written};

	return etcd_run((etcd_store *)b, op_cas, &a);
}

static int etcd_compare_and_delete(faucet_store_backend *b, const char *key,
				   const faucet_value *expected, int *deleted)
{
	etcd_args a = {.key = key, .expected = expected, .done = deleted};

	return etcd_run((etcd_store *)b, op_cas, &a);
}

/* The guard and the key change in one txn: the guard's new value is never
 * later than the key's. */
static int etcd_put_guarded(faucet_store_backend *b, const char *guard,
			    const faucet_value *expected, const faucet_value *guard_value,
			    const char *key, const faucet_value *value, int *written)
{
	etcd_args a = {.key = key, .value = value, .expected = expected, .guard = guard,
		       .guard_value = guard_value, .done = written};

	if (strcmp(guard, key) == 0)
		return faucet_error_set(FAUCET_EINVALID, "put_guarded: the guard is the key '%s'",
					key);
	return etcd_run((etcd_store *)b, op_cas, &a);
}

static int etcd_put_many(faucet_store_backend *b, const faucet_entry *entries, size_t count,
			 size_t *written, size_t *unknown_from)
{
	etcd_store *s = (etcd_store *)b;
	etcd_args a = {0};
	size_t done = 0;
	int rc = 0;

	while (rc == 0 && done < count) {
		a.entries = entries + done;
		a.count = chunk_len(entries + done, count - done);
		rc = etcd_run(s, op_put_chunk, &a);
		if (rc == 0)
			done += a.count;
	}
	*written = done;
	*unknown_from = done;
	if (rc == FAUCET_EUNKNOWN)
		*written = done + a.count; /* that chunk may have landed, whole */
	return rc;
}

/* All or nothing, in one txn of a compare and a put or delete per key (so
 * FAUCET_STORE_CAS_BATCH_MAX is etcd's default --max-txn-ops); a cluster
 * whose limits refuse it says FAUCET_EUNSUPPORTED (batch_refused). */
static int etcd_compare_and_put_batch(faucet_store_backend *b, const faucet_store_guard *entries,
				      size_t n, int *written)
{
	etcd_store *s = (etcd_store *)b;
	const char *keys[FAUCET_STORE_CAS_BATCH_MAX];
	etcd_args a = {.guards = entries, .count = n, .many = keys, .done = written};

	_Static_assert(FAUCET_STORE_CAS_BATCH_MAX <= ETCD_MAX_TXN_OPS,
		       "a compare-and-put batch is one txn");
	*written = 0;
	/* The front-end checked n; keys[] relies on it. */
	if (n == 0 || n > FAUCET_STORE_CAS_BATCH_MAX)
		return faucet_error_set(FAUCET_EINVALID, "compare-and-put batch: %zu entries", n);
	for (size_t i = 0; i < n; i++)
		keys[i] = entries[i].key;
	return batch_refused(s, etcd_run(s, op_cas_batch, &a));
}

/* ---- doctor ------------------------------------------------------------ */

/* POST body to endpoint idx alone (no failover): the doctor asks each,
 * within its own timeout. */
static int request_at(etcd_conn *c, size_t idx, const char *path, uint64_t timeout_ms,
		      json_object **out)
{
	uint64_t deadline = faucet__now_ms() + timeout_ms;
	long status = 0;
	CURLcode crc;
	int rc = 0;

	*out = NULL;
	if (!c->verified[idx])
		rc = verify(c, idx, deadline);
	if (rc != 0)
		return rc;
	crc = perform(c, idx, 0, path, "{}", 2, deadline, &status);
	if (crc != CURLE_OK)
		return faucet_error_set(FAUCET_EUNAVAILABLE, "%s: %s", host_of(c->s->endpoints[idx]),
					curl_easy_strerror(crc));
	*out = reply_json(c);
	if (status != 200 || *out == NULL) {
		json_object_put(*out);
		*out = NULL;
		return faucet_error_set(FAUCET_ERROR, "%s: %s answered HTTP %ld",
					host_of(c->s->endpoints[idx]), path, status);
	}
	return 0;
}

/* A member's name from the member list, by id (a JSON string). */
static const char *member_name(json_object *members, const char *id)
{
	for (size_t i = 0; members && i < json_object_array_length(members); i++) {
		json_object *m = json_object_array_get_idx(members, i);
		json_object *mid = member(m, "ID"), *name = member(m, "name");

		if (mid != NULL && strcmp(json_object_get_string(mid), id) == 0)
			return name ? json_object_get_string(name) : id;
	}
	return id;
}

static int add_probe(faucet_check_report *r, const char *name, faucet_probe_status st,
		     const char *reason, uint64_t start, const char *hint)
{
	return faucet_check_report_add(r, name, st, reason, faucet__now_ms() - start, hint);
}

/*
 * Probes: "members" (the member list), "quorum" (how many members answer
 * /v3/maintenance/status, of how many), "leader" (one leader, the same for
 * every member that answered), "version" (the servers' versions) and
 * "sentinel" (put, get, delete of a unique key through the store).
 */
static int etcd_check(faucet_store_backend *b, const faucet_check_context *ctx,
		      faucet_check_report **out)
{
	etcd_store *s = (etcd_store *)b;
	etcd_conn *c = NULL;
	json_object *ml = NULL, *members = NULL;
	faucet_buf reason = FAUCET_BUF_INIT, versions = FAUCET_BUF_INIT, down = FAUCET_BUF_INIT;
	char leader[32] = "";
	int rc, leaders_agree = 1;
	size_t up = 0, total;
	uint64_t start = faucet__now_ms();
	uint64_t timeout = ctx->timeout_ms ? ctx->timeout_ms : (uint64_t)s->request_ms;
	char *hint = faucet__sprintf("check that the etcd members in %s are running and reachable",
				     s->redacted);

	if (hint == NULL)
		return FAUCET_ENOMEM;
	rc = faucet_check_report_new(out);
	if (rc == 0)
		rc = faucet__pool_acquire(s->pool, (void **)&c, NULL);
	if (rc != 0) {
		faucet_check_report_free(*out);
		*out = NULL;
		free(hint);
		return rc;
	}
	/* members: from the first endpoint that gives the list. */
	for (size_t i = 0; i < s->n && members == NULL; i++) {
		if (request_at(c, i, "/v3/cluster/member/list", timeout, &ml) == 0)
			members = member(ml, "members");
		else if (faucet_error_last()->code == FAUCET_ECONFIG)
			break;
	}
	total = members ? json_object_array_length(members) : s->n;
	if (members == NULL) {
		rc = faucet__check_report_probe(*out, "members", 1, start, hint);
	} else {
		for (size_t i = 0; i < total; i++) {
			json_object *m = json_object_array_get_idx(members, i), *urls = member(m, "clientURLs");
			(void)faucet__buf_printf(&reason, "%s%s (%s)", i ? ", " : "",
						json_object_get_string(member(m, "name")),
						urls && json_object_array_length(urls)
							? json_object_get_string(json_object_array_get_idx(urls, 0))
							: "no client URL");
		}
		rc = add_probe(*out, "members", FAUCET_PROBE_PASS, reason.ptr, start, NULL);
	}
	faucet__buf_dispose(&reason);
	/* quorum, leader, version: ask every endpoint for its status. */
	start = faucet__now_ms();
	for (size_t i = 0; rc == 0 && i < s->n; i++) {
		json_object *st = NULL;

		if (request_at(c, i, "/v3/maintenance/status", timeout, &st) != 0) {
			(void)faucet__buf_printf(&down, "%s%s", down.len ? "; " : "",
						faucet_error_last()->message);
			continue;
		}
		up++;
		{
			const char *l = json_object_get_string(member(st, "leader"));
			const char *v = json_object_get_string(member(st, "version"));

			if (l != NULL && leader[0] == '\0')
				(void)snprintf(leader, sizeof(leader), "%s", l);
			else if (l != NULL && strcmp(l, leader) != 0)
				leaders_agree = 0;
			(void)faucet__buf_printf(&versions, "%s%s %s", versions.len ? ", " : "",
						host_of(s->endpoints[i]), v ? v : "?");
		}
		json_object_put(st);
	}
	if (rc == 0) {
		int ok = members != NULL ? up * 2 > total : up * 2 > s->n;

		(void)faucet__buf_printf(&reason, "%zu of %zu members answer%s%s", up, total,
					down.len ? ": " : "", down.len ? down.ptr : "");
		rc = add_probe(*out, "quorum", ok ? FAUCET_PROBE_PASS : FAUCET_PROBE_FAIL, reason.ptr,
			       start, ok ? NULL : hint);
		faucet__buf_dispose(&reason);
	}
	if (rc == 0) {
		if (leader[0] == '\0' || strcmp(leader, "0") == 0)
			rc = add_probe(*out, "leader", FAUCET_PROBE_FAIL, "no member knows a leader",
				       start, hint);
		else if (!leaders_agree)
			rc = add_probe(*out, "leader", FAUCET_PROBE_WARN,
				       "the members name different leaders (an election is under way)",
				       start, NULL);
		else {
			(void)faucet__buf_printf(&reason, "%s", member_name(members, leader));
			rc = add_probe(*out, "leader", FAUCET_PROBE_PASS, reason.ptr, start, NULL);
			faucet__buf_dispose(&reason);
		}
	}
	if (rc == 0)
		rc = add_probe(*out, "version", up ? FAUCET_PROBE_PASS : FAUCET_PROBE_SKIP,
			       up ? versions.ptr : "no member answered", start, NULL);
	json_object_put(ml);
	faucet__buf_dispose(&versions);
	faucet__buf_dispose(&down);
	faucet__pool_release(s->pool, c, 0);
	if (rc == 0) {
		start = faucet__now_ms();
		rc = faucet__check_report_probe(*out, "sentinel",
						faucet__sentinel_round_trip(&s->base) != 0, start, hint);
	}
	free(hint);
	if (rc != 0) {
		faucet_check_report_free(*out);
		*out = NULL;
	}
	return rc;
}

/* ---- open / free ------------------------------------------------------- */

/* ---- watch ------------------------------------------------------------- */

/*
 * faucet_store_watch on etcd: one POST /v3/watch whose reply never ends.
 * The gateway sends each WatchResponse as one JSON object ({"result":
 * {...}}), read with json-c's incremental tokener as the bytes arrive, so
 * the way they are cut into chunks does not matter.  A PUT event has no
 * "type" (the default is omitted); a key whose version is 1 was created.
 * The stream is the watch's own handle, outside the pool: it holds its
 * connection for as long as it lasts.
 */
#define WATCH_TICK_MS 250

typedef struct {
	etcd_store *s;
	faucet_watch_fn fn;
	void *ctx;
	json_tokener *tok;
	uint64_t last_tick;
	int stop;  /* fn's non-zero return */
	int ready; /* the watch was created */
	int rc;    /* an error met in a callback (set in the error slot) */
} etcd_watch;

static int watch_call(etcd_watch *w, faucet_watch_event what, const char *key)
{
	int rc = w->fn(what, key, w->ctx);

	if (rc != 0)
		w->stop = rc;
	return rc;
}

static int watch_event(etcd_watch *w, json_object *ev)
{
	json_object *kv = member(ev, "kv"), *type = member(ev, "type");
	faucet_watch_event what = FAUCET_WATCH_CHANGED;
	etcd_kv k;
	int rc;

	if (kv == NULL)
		return etcd_fail(w->s, FAUCET_ERROR, "watching", "an event has no kv");
	if ((rc = kv_read(w->s, kv, 0, &k)) != 0)
		return rc;
	if (type != NULL && strcmp(json_object_get_string(type), "DELETE") == 0)
		what = FAUCET_WATCH_REMOVED;
	else if (int64_member(kv, "version") == 1)
		what = FAUCET_WATCH_ADDED;
	rc = watch_call(w, what, k.key);
	kv_clear(&k);
	return rc;
}

/* One WatchResponse, or the gateway's error object. */
static int watch_message(etcd_watch *w, json_object *msg)
{
	json_object *r = member(msg, "result"), *evs;
	const char *why = NULL;
	int rc = 0;

	if (r == NULL) {
		(void)error_reply(msg, &why);
		return etcd_fail(w->s, FAUCET_EUNAVAILABLE, "watching", why ? why : "no result");
	}
	if (bool_member(r, "canceled")) {
		json_object *reason = member(r, "cancel_reason");

		return etcd_fail(w->s, FAUCET_EUNAVAILABLE, "watching",
				 reason ? json_object_get_string(reason) : "the watch was canceled");
	}
	if (bool_member(r, "created") && !w->ready) {
		w->ready = 1;
		if ((rc = watch_call(w, FAUCET_WATCH_READY, NULL)) != 0)
			return rc;
	}
	evs = member(r, "events");
	for (size_t i = 0; rc == 0 && evs != NULL && i < json_object_array_length(evs); i++)
		rc = watch_event(w, json_object_array_get_idx(evs, i));
	return rc;
}

static size_t on_watch_body(char *data, size_t size, size_t nmemb, void *ctx)
{
	etcd_watch *w = ctx;
	size_t n = size * nmemb, off = 0;

	while (off < n) {
		size_t chunk = n - off < (size_t)INT32_MAX ? n - off : (size_t)INT32_MAX;
		json_object *o = json_tokener_parse_ex(w->tok, data + off, (int)chunk);
		int rc;

		if (json_tokener_get_error(w->tok) == json_tokener_continue)
			return n; /* all taken: the object goes on in the next chunk */
		if (o == NULL) {
			w->rc = etcd_fail(w->s, FAUCET_ERROR, "watching",
					  "a message of the watch stream is not JSON");
			return 0;
		}
		off += json_tokener_get_parse_end(w->tok);
		json_tokener_reset(w->tok);
		rc = watch_message(w, o);
		json_object_put(o);
		if (rc != 0) {
			if (w->stop == 0)
				w->rc = rc;
			return 0;
		}
	}
	return n;
}

/* libcurl's progress callback: a tick for fn, a few times a second. */
static int on_watch_progress(void *ctx, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
			     curl_off_t ulnow)
{
	etcd_watch *w = ctx;
	uint64_t now = faucet__now_ms();

	(void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
	if (now - w->last_tick < WATCH_TICK_MS)
		return 0;
	w->last_tick = now;
	return watch_call(w, FAUCET_WATCH_TICK, NULL) != 0;
}

static int watch_options(CURL *h, etcd_watch *w, const char *url, const faucet_buf *body,
			 struct curl_slist *headers)
{
	return curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
	       curl_easy_setopt(h, CURLOPT_NOPROXY, "*") != CURLE_OK ||
	       curl_easy_setopt(h, CURLOPT_URL, url) != CURLE_OK ||
	       curl_easy_setopt(h, CURLOPT_POST, 1L) != CURLE_OK ||
	       curl_easy_setopt(h, CURLOPT_POSTFIELDS, body->ptr) != CURLE_OK ||
	       curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body->len) != CURLE_OK ||
	       curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers) != CURLE_OK ||
	       curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, w->s->dial_ms) != CURLE_OK ||
	       curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L) != CURLE_OK ||
	       curl_easy_setopt(h, CURLOPT_TCP_KEEPIDLE, 5L) != CURLE_OK ||
	       curl_easy_setopt(h, CURLOPT_TCP_KEEPINTVL, 5L) != CURLE_OK ||
	       curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_watch_body) != CURLE_OK ||
	       curl_easy_setopt(h, CURLOPT_WRITEDATA, w) != CURLE_OK ||
	       curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L) != CURLE_OK ||
	       curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_watch_progress) != CURLE_OK ||
	       curl_easy_setopt(h, CURLOPT_XFERINFODATA, w) != CURLE_OK;
}

/* The watch on endpoint idx, until fn stops it or the stream ends. */
static int watch_at(etcd_watch *w, size_t idx, const faucet_buf *body)
{
	etcd_store *s = w->s;
	struct curl_slist *headers = curl_slist_append(NULL, "Content-Type: application/json");
	CURL *h = curl_easy_init();
	char url[320];
	CURLcode cc;
	long status = 0;

	(void)snprintf(url, sizeof(url), "%s/v3/watch", s->endpoints[idx]);
	if (headers == NULL || h == NULL || (w->tok = json_tokener_new()) == NULL) {
		if (h != NULL)
			curl_easy_cleanup(h);
		if (headers != NULL)
			curl_slist_free_all(headers);
		return faucet_error_set(FAUCET_ENOMEM, "etcd state store: out of memory for a watch");
	}
	if (watch_options(h, w, url, body, headers) != 0) {
		w->rc = faucet_error_set(FAUCET_ERROR, "etcd state store: libcurl refused an option");
		cc = CURLE_OK;
	} else {
		cc = curl_easy_perform(h);
		(void)curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	}
	curl_easy_cleanup(h);
	curl_slist_free_all(headers);
	json_tokener_free(w->tok);
	w->tok = NULL;
	if (w->stop != 0 || w->rc != 0)
		return w->stop != 0 ? w->stop : w->rc;
	if (cc != CURLE_OK)
		return etcd_fail(s, FAUCET_EUNAVAILABLE, "watching", curl_easy_strerror(cc));
	return etcd_fail(s, FAUCET_EUNAVAILABLE, "watching",
			 status == 200 ? "the member ended the stream" : "the member refused the watch");
}

static int etcd_watch_keys(faucet_store_backend *b, const char *prefix, faucet_watch_fn fn,
			   void *ctx)
{
	etcd_store *s = (etcd_store *)b;
	faucet_buf body = FAUCET_BUF_INIT, start = FAUCET_BUF_INIT;
	size_t first = atomic_load(&s->preferred) % s->n;
	etcd_watch w;
	int rc;

	(void)faucet__buf_puts(&start, s->prefix);
	(void)faucet__buf_puts(&start, prefix);
	(void)faucet__buf_puts(&body, "{\"create_request\":{");
	rc = start.failed ? FAUCET_ENOMEM : put_range(&body, s, start.ptr, start.len, prefix);
	(void)faucet__buf_puts(&body, "}}");
	faucet__buf_dispose(&start);
	if (rc == 0 && body.failed)
		rc = FAUCET_ENOMEM;
	/* Each member in turn until one takes the watch; once one has, its
	 * stream ending is the caller's to handle (changes may be missed). */
	for (size_t i = 0; rc == 0 && i < s->n; i++) {
		memset(&w, 0, sizeof(w));
		w.s = s;
		w.fn = fn;
		w.ctx = ctx;
		w.last_tick = faucet__now_ms();
		rc = watch_at(&w, (first + i) % s->n, &body);
		if (w.ready || w.stop != 0 || rc == FAUCET_ENOMEM)
			break;
		if (i + 1 < s->n)
			rc = 0;
	}
	faucet__buf_dispose(&body);
	return rc;
}

static void etcd_free(faucet_store_backend *b)
{
	etcd_store *s = (etcd_store *)b;

	faucet__pool_free(s->pool);
	for (size_t i = 0; s->endpoints != NULL && i < s->n; i++)
		free(s->endpoints[i]);
	free(s->endpoints);
	free(s->prefix);
	free(s->redacted);
	free(s);
}

/* "2s", "500ms", "1.5s", or a bare number of seconds, up to ten minutes. */
static int parse_duration_ms(const char *text, const char *name, long *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(text, &end);
	if (errno == 0 && end != text && v > 0) {
		if (strcmp(end, "ms") == 0)
			;
		else if (strcmp(end, "s") == 0 || *end == '\0')
			v *= 1000;
		else
			v = -1;
		if (v >= 1 && v <= 600000) {
			*out = (long)v;
			return 0;
		}
	}
	return faucet_error_set(FAUCET_ECONFIG,
				"etcd store option '%s' must be a duration such as 2s or 500ms "
				"(at most 600s), got '%s'",
				name, text);
}

static int is_prefix_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '_' || ch == '-' || ch == '.' || ch == ':' || ch == '/';
}

/* etcd://H:P[,H:P...]/PREFIX[?options]; the options faucet knows were
 * taken off by the URL dispatcher, so one left here is unknown. */
static int parse_url(etcd_store *s, const char *url)
{
	const char *p = url + strlen("etcd://");
	const char *hosts_end = p + strcspn(p, "/?");
	const char *path, *path_end;

	if (hosts_end == p)
		return faucet_error_set(FAUCET_ECONFIG,
					"etcd store URL %s has no endpoint (etcd://HOST:PORT[,HOST:PORT...]/PREFIX)",
					s->redacted);
	while (p < hosts_end) {
		const char *comma = memchr(p, ',', (size_t)(hosts_end - p));
		const char *item_end = comma ? comma : hosts_end;
		const char *colon = memchr(p, ':', (size_t)(item_end - p));
		char **grown;
		char *num_end;
		long port;

		if (item_end == p)
			return faucet_error_set(FAUCET_ECONFIG, "etcd store URL %s: an empty endpoint",
						s->redacted);
		if (colon == NULL || colon == p)
			return faucet_error_set(FAUCET_ECONFIG,
						"etcd store URL %s: endpoint '%.*s' must be HOST:PORT",
						s->redacted, (int)(item_end - p), p);
		errno = 0;
		port = strtol(colon + 1, &num_end, 10);
		if (colon + 1 == item_end || num_end != item_end || errno != 0 || port < 1 ||
		    port > 65535)
			return faucet_error_set(FAUCET_ECONFIG,
						"etcd store URL %s: endpoint '%.*s' has a bad port "
						"(1 to 65535)",
						s->redacted, (int)(item_end - p), p);
		if (colon - p > 253)
			return faucet_error_set(FAUCET_ECONFIG,
						"etcd store URL %s: a host name is longer than 253 bytes",
						s->redacted);
		for (const char *q = p; q < colon; q++) {
			if (!(is_prefix_char(*q) && *q != '/' && *q != ':'))
				return faucet_error_set(FAUCET_ECONFIG,
							"etcd store URL %s: endpoint '%.*s' has a bad host",
							s->redacted, (int)(item_end - p), p);
		}
		grown = faucet__realloc(s->endpoints, (s->n + 1) * sizeof(*grown));
		if (grown == NULL)
			return FAUCET_ENOMEM;
		s->endpoints = grown;
		s->endpoints[s->n] =
			faucet__sprintf("http://%.*s:%ld", (int)(colon - p), p, port);
		if (s->endpoints[s->n] == NULL)
			return FAUCET_ENOMEM;
		s->n++;
		p = comma ? comma + 1 : hosts_end;
		if (comma != NULL && p == hosts_end)
			return faucet_error_set(FAUCET_ECONFIG, "etcd store URL %s: an empty endpoint",
						s->redacted);
	}
	path = *hosts_end == '/' ? hosts_end + 1 : hosts_end;
	path_end = path + strcspn(path, "?");
	while (path_end > path && path_end[-1] == '/')
		path_end--;
	if (path_end == path)
		return faucet_error_set(FAUCET_ECONFIG,
					"etcd store URL %s has no key prefix (etcd://HOST:PORT/PREFIX; "
					"the prefix keeps faucet's keys apart from the rest of the "
					"cluster)",
					s->redacted);
	for (const char *q = path; q < path_end; q++) {
		if (!is_prefix_char(*q))
			return faucet_error_set(FAUCET_ECONFIG,
						"etcd store URL %s: the prefix may hold only "
						"[A-Za-z0-9_.:/-], not '%c'",
						s->redacted, *q);
	}
	s->prefix = faucet__sprintf("%.*s/", (int)(path_end - path), path);
	if (s->prefix == NULL)
		return FAUCET_ENOMEM;
	s->prefix_len = strlen(s->prefix);
	if (path[strcspn(path, "?")] == '?')
		return faucet_error_set(FAUCET_ECONFIG,
					"etcd store URL %s: unknown option '%.*s' (faucet knows "
					"dial_timeout, request_timeout and max_connections)",
					s->redacted, (int)strcspn(path + strcspn(path, "?") + 1, "=&"),
					path + strcspn(path, "?") + 1);
	return 0;
}

/* The URL carries its own options (dial_timeout, request_timeout,
 * max_connections), so a config of type etcd is just its `url`. */
int faucet__store_open_etcd(faucet_store **out, const faucet_store_config *cfg)
{
	static const char *const names[] = {"dial_timeout", "request_timeout", "max_connections"};
	char *values[3] = {NULL, NULL, NULL};
	int pool = cfg->max_connections;
	char *url;
	etcd_store *s;
	int rc;

	*out = NULL;
	if (cfg->url == NULL || strncmp(cfg->url, "etcd://", 7) != 0)
		return faucet_error_set(FAUCET_ECONFIG,
					"etcd state store needs a `url` starting with etcd://");
	s = faucet__calloc(1, sizeof(*s));
	url = faucet__strdup(cfg->url);
	if (s == NULL || url == NULL) {
		free(s);
		free(url);
		return FAUCET_ENOMEM;
	}
	s->redacted = faucet_url_redact(cfg->url);
	s->dial_ms = ETCD_DEFAULT_DIAL_MS;
	s->request_ms = ETCD_DEFAULT_REQUEST_MS;
	rc = s->redacted ? faucet__url_take_params(url, names, values, 3) : FAUCET_ENOMEM;
	if (rc == 0)
		rc = parse_url(s, url);
	if (rc == 0 && values[0] != NULL)
		rc = parse_duration_ms(values[0], "dial_timeout", &s->dial_ms);
	if (rc == 0 && values[1] != NULL)
		rc = parse_duration_ms(values[1], "request_timeout", &s->request_ms);
	if (rc == 0 && values[2] != NULL) {
		if (pool != 0)
			rc = faucet_error_set(FAUCET_ECONFIG,
					      "state store option 'max_connections' is given both in "
					      "the URL (?max_connections=) and in the config "
					      "(max_connections:); give it in one place");
		else
			rc = faucet__parse_positive(values[2], "option 'max_connections'", 1000, &pool);
	}
	if (rc == 0 && pool == 0)
		pool = ETCD_DEFAULT_POOL;
	if (rc == 0 && pool < 1)
		rc = faucet_error_set(FAUCET_ECONFIG,
				      "etcd state store: max_connections must be at least 1, got %d",
				      pool);
	free(url);
	if (rc == 0)
		rc = faucet__curl_load();
	if (rc == 0)
		rc = faucet__pool_new(&s->pool, &etcd_pool_ops, s, (size_t)pool);
	if (rc != 0) {
		etcd_free(&s->base);
		return rc;
	}
	s->base.version = FAUCET_STORE_BACKEND_VERSION;
	s->base.name = "etcd";
	s->base.get = etcd_get;
	s->base.get_many = etcd_get_many;
	s->base.put = etcd_put;
	s->base.del = etcd_del;
	s->base.list = etcd_list;
	s->base.list_page = etcd_list_page;
	s->base.scan_entries = etcd_scan_entries;
	s->base.scan_data = etcd_scan_data;
	s->base.compare_and_put = etcd_compare_and_put;
	s->base.compare_and_put_expiring = etcd_compare_and_put_expiring;
	s->base.compare_and_delete = etcd_compare_and_delete;
	s->base.put_guarded = etcd_put_guarded;
	s->base.put_many = etcd_put_many;
	s->base.compare_and_put_batch = etcd_compare_and_put_batch;
	s->base.check = etcd_check;
	s->base.watch = etcd_watch_keys;
	s->base.free = etcd_free;
	return faucet_store_new(out, &s->base);
}
