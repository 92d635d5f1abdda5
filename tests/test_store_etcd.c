/*
 * test_store_etcd.c - what is particular to the etcd store, against fake
 * members (a small HTTP server in this program) that misbehave on purpose:
 * a write whose request arrived but whose reply never came is
 * FAUCET_EUNKNOWN and is not sent again, to that member or any other; a
 * write answered Unavailable (503) likewise; a read answered 503 moves on to
 * the next endpoint; a member that refuses the connection is skipped for a
 * write too (nothing was sent); a compare-and-put batch is one write txn,
 * unknown when its reply is lost and unsupported when the member refuses
 * it for its --max-txn-ops; a member that does not speak gRPC (these
 * fakes speak HTTP/1.1 only unless told, as a gateway-only port would) has its ranges
 * read through the JSON gateway, and the store remembers it; a member
 * that does (a minimal HTTP/2 server here) has its grpc-status mapped to
 * the gateway path's errors; a watch
 * stream is read the same however it is cut, and a member ending it is an
 * error, not a silent end.  The real cluster's behaviour is covered by
 * the contract suite and tests/cluster/.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "testutil.h"
#include "store/open_internal.h"

/* TOO_MANY: refused as a txn over the member's --max-txn-ops is. */
typedef enum { ANSWER, DROP, UNAVAILABLE, TOO_MANY } fake_mode;

typedef struct {
	int fd;
	int port;
	fake_mode puts, ranges;
	fake_mode txns; /* txns with compares (writes); a read-only txn is answered */
	const char *range_body; /* the range reply (NULL: "p/o::k" = "1") */
	const char *watch_body; /* the watch stream, sent in pieces, then closed */
	atomic_int put_count, range_count, h2_count, txn_count;
	/* Speak gRPC (a minimal HTTP/2 server) with this grpc-status; -1: refuse
	 * HTTP/2 as an HTTP/1.1-only server does. */
	atomic_int grpc_status;
	const char *grpc_message; /* percent-encoded, as on the wire */
	atomic_int grpc_count;    /* gRPC requests answered */
	atomic_int conns; /* connections being served */
	pthread_t thread;
} fake_member;

/* The request's path, and its body's first body_cap - 1 bytes. */
static int read_request(int c, char *path, size_t path_len, char *body, size_t body_cap)
{
	char buf[65536];
	size_t have = 0, kept;
	char *end = NULL;
	long clen = 0;

	buf[0] = '\0';
	while ((end = strstr(buf, "\r\n\r\n")) == NULL) {
		ssize_t n;

		if (have + 1 >= sizeof(buf))
			return -1;
		n = read(c, buf + have, sizeof(buf) - 1 - have);
		if (n <= 0)
			return -1;
		have += (size_t)n;
		buf[have] = '\0';
	}
	{
		char *cl = strstr(buf, "Content-Length:");
		if (cl != NULL && cl < end)
			clen = strtol(cl + 15, NULL, 10);
	}
	if (sscanf(buf, "%*s %255s", path) != 1)
		return -1;
	(void)path_len;
	/* The body: what came with the head, then whatever is left of it. */
	kept = have - (size_t)(end + 4 - buf);
	kept = kept < body_cap - 1 ? kept : body_cap - 1;
	memcpy(body, end + 4, kept);
	{
		long got = (long)(have - (size_t)(end + 4 - buf));
		while (got < clen) {
			char tmp[4096];
			ssize_t n = read(c, tmp, sizeof(tmp));
			if (n <= 0)
				return -1;
			if (kept + (size_t)n < body_cap) {
				memcpy(body + kept, tmp, (size_t)n);
				kept += (size_t)n;
			}
			got += n;
		}
	}
	body[kept] = '\0';
	return 0;
}

static void reply(int c, int status, const char *body)
{
	char head[256];
	int n = snprintf(head, sizeof(head),
			 "HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: "
			 "%zu\r\n\r\n",
			 status, strlen(body));

	if (write(c, head, (size_t)n) < 0 || write(c, body, strlen(body)) < 0)
		return;
}

/* A reply without a length, its body in pieces of 1 to 7 bytes (so that a
 * message is cut anywhere, often mid-token), ended by closing. */
static void send_stream(int c, const char *body)
{
	static const char head[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
				   "Connection: close\r\n\r\n";
	size_t len = strlen(body), off = 0;
	unsigned seed = 7;

	if (write(c, head, sizeof(head) - 1) < 0)
		return;
	while (off < len) {
		size_t n;

		seed = seed * 1103515245u + 12345u;
		n = 1 + (seed >> 16) % 7;
		n = n < len - off ? n : len - off;
		if (write(c, body + off, n) < 0)
			return;
		off += n;
	}
}

typedef struct {
	fake_member *m;
	int c;
} fake_conn;

/* A txn answered: a write's succeeded, a read's one empty range per
 * request_range (every key absent). */
static void reply_txn(int c, const char *body)
{
	char out[8192] = "{\"header\":{\"revision\":\"6\"},\"succeeded\":true,\"responses\":[";
	const char *p = strstr(body, "\"compare\"") != NULL ? NULL : body, *sep = "";

	while (p != NULL && (p = strstr(p, "request_range")) != NULL &&
	       strlen(out) + 64 < sizeof(out)) {
		strcat(out, sep);
		strcat(out, "{\"response_range\":{}}");
		sep = ",";
		p++;
	}
	strcat(out, "]}");
	reply(c, 200, out);
}

/* ---- a minimal HTTP/2 server for gRPC ----------------------------------
 * Just enough for curl: the client's preface is read, our SETTINGS sent and
 * the client's acknowledged, and each request (its stream's END_STREAM)
 * answered with HEADERS (":status: 200", HPACK's static entry 8, and
 * literal fields), then a RangeResponse in one DATA frame and the trailers,
 * or - for a non-zero grpc-status - trailers only. */
static int read_full(int c, void *p, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(c, (char *)p + got, n - got);

		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

static void h2_frame(int c, unsigned type, unsigned flags, uint32_t stream, const void *p,
		     size_t n)
{
	unsigned char h[9] = {(unsigned char)(n >> 16), (unsigned char)(n >> 8), (unsigned char)n,
			      (unsigned char)type, (unsigned char)flags,
			      (unsigned char)(stream >> 24), (unsigned char)(stream >> 16),
			      (unsigned char)(stream >> 8), (unsigned char)stream};

	if (write(c, h, sizeof(h)) < 0 || (n > 0 && write(c, p, n) < 0))
		return;
}

/* An HPACK literal field without indexing, both strings short. */
static size_t hpack(unsigned char *out, const char *name, const char *value)
{
	size_t nl = strlen(name), vl = strlen(value);

	assert_true(nl < 128 && vl < 128); /* one-byte lengths */
	out[0] = 0;
	out[1] = (unsigned char)nl;
	memcpy(out + 2, name, nl);
	out[2 + nl] = (unsigned char)vl;
	memcpy(out + 3 + nl, value, vl);
	return 3 + nl + vl;
}

static void h2_answer(fake_member *m, int c, uint32_t stream)
{
	/* RangeResponse{header{revision 5}, kvs [{key "p/o::k", mod_revision
	 * 5, value "1"}]} in a gRPC frame. */
	static const unsigned char reply[] = {0,   0,   0,   0,   19,  0x0a, 2,   0x18, 5,   0x12,
					      13,  0x0a, 6,  'p', '/', 'o',  ':', ':',  'k', 0x18,
					      5,   0x2a, 1,  '1'};
	unsigned char head[512], trail[256];
	size_t hn = 1, tn = 0;
	int status = atomic_load(&m->grpc_status);
	char code[16];

	atomic_fetch_add(&m->grpc_count, 1);
	head[0] = 0x88; /* :status: 200 */
	hn += hpack(head + hn, "content-type", "application/grpc");
	snprintf(code, sizeof(code), "%d", status);
	tn += hpack(trail + tn, "grpc-status", code);
	if (m->grpc_message != NULL)
		tn += hpack(trail + tn, "grpc-message", m->grpc_message);
	if (status != 0) { /* trailers only */
		memcpy(head + hn, trail, tn);
		h2_frame(c, 1, 0x5, stream, head, hn + tn);
		return;
	}
	h2_frame(c, 1, 0x4, stream, head, hn);
	h2_frame(c, 0, 0, stream, reply, sizeof(reply));
	h2_frame(c, 1, 0x5, stream, trail, tn);
}

static void serve_h2(fake_member *m, int c)
{
	unsigned char pre[24], h[9], payload[16384];

	if (read_full(c, pre, sizeof(pre)) != 0)
		return;
	h2_frame(c, 4, 0, 0, NULL, 0); /* SETTINGS */
	while (read_full(c, h, sizeof(h)) == 0) {
		size_t n = (size_t)h[0] << 16 | (size_t)h[1] << 8 | h[2];
		uint32_t stream = ((uint32_t)h[5] << 24 | (uint32_t)h[6] << 16 |
				   (uint32_t)h[7] << 8 | h[8]) & 0x7fffffffu;

		if (n > sizeof(payload) || read_full(c, payload, n) != 0)
			return;
		if (h[3] == 4 && !(h[4] & 1))
			h2_frame(c, 4, 1, 0, NULL, 0); /* SETTINGS ACK */
		else if ((h[3] == 0 || h[3] == 1) && (h[4] & 1) && stream != 0)
			h2_answer(m, c, stream); /* the request's END_STREAM */
	}
}

/* One connection's requests, in a thread of its own: a client holds a
 * keep-alive connection for the gateway and another for gRPC. */
static void *serve_conn(void *arg)
{
	fake_conn *fc = arg;
	fake_member *m = fc->m;
	int c = fc->c;
	char path[256], body[65536];

	free(fc);
	if (atomic_load(&m->grpc_status) >= 0 && recv(c, path, 4, MSG_PEEK | MSG_WAITALL) == 4 &&
	    memcmp(path, "PRI ", 4) == 0) {
		serve_h2(m, c);
		close(c);
		atomic_fetch_sub(&m->conns, 1);
		return NULL;
	}
	while (read_request(c, path, sizeof(path), body, sizeof(body)) == 0) {
		fake_mode mode = ANSWER;

		/* HTTP/2's preface ("PRI * HTTP/2.0"): refused as an
		 * HTTP/1.1-only Go server does. */
		if (strcmp(path, "*") == 0) {
			atomic_fetch_add(&m->h2_count, 1);
			reply(c, 400, "unsupported protocol version");
			break;
		}
		if (strcmp(path, "/version") == 0) {
			reply(c, 200, "{\"etcdserver\":\"3.4.23\",\"etcdcluster\":\"3.4.0\"}");
			continue;
		}
		if (strcmp(path, "/v3/watch") == 0 && m->watch_body != NULL) {
			send_stream(c, m->watch_body);
			break;
		}
		if (strcmp(path, "/v3/kv/put") == 0) {
			atomic_fetch_add(&m->put_count, 1);
			mode = m->puts;
		} else if (strcmp(path, "/v3/kv/range") == 0) {
			atomic_fetch_add(&m->range_count, 1);
			mode = m->ranges;
		} else if (strcmp(path, "/v3/kv/txn") == 0 && strstr(body, "\"compare\"")) {
			atomic_fetch_add(&m->txn_count, 1);
			mode = m->txns;
		}
		if (mode == DROP)
			break;
		if (mode == UNAVAILABLE) {
			reply(c, 503, "{\"error\":\"etcdserver: no leader\",\"code\":14,"
				      "\"message\":\"etcdserver: no leader\"}");
			continue;
		}
		if (mode == TOO_MANY) {
			reply(c, 400, "{\"error\":\"etcdserver: too many operations in txn "
				      "request\",\"message\":\"etcdserver: too many operations in "
				      "txn request\",\"code\":3}");
			continue;
		}
		if (strcmp(path, "/v3/kv/txn") == 0) {
			reply_txn(c, body);
			continue;
		}
		/* "p/o::k" = "1" at revision 5 (base64). */
		if (strcmp(path, "/v3/kv/range") == 0 && m->range_body != NULL) {
			reply(c, 200, m->range_body);
			continue;
		}
		reply(c, 200, strcmp(path, "/v3/kv/range") == 0
				      ? "{\"header\":{\"revision\":\"5\"},\"kvs\":[{\"key\":"
					"\"cC9vOjpr\",\"value\":\"MQ==\",\"mod_revision\":\"5\"}],"
					"\"count\":\"1\"}"
				      : "{\"header\":{\"revision\":\"6\"}}");
	}
	close(c);
	atomic_fetch_sub(&m->conns, 1);
	return NULL;
}

static void *serve(void *arg)
{
	fake_member *m = arg;

	for (;;) {
		int c = accept(m->fd, NULL, NULL);
		fake_conn *fc;
		pthread_t t;

		if (c < 0)
			return NULL;
		fc = malloc(sizeof(*fc));
		assert_non_null(fc);
		fc->m = m;
		fc->c = c;
		atomic_fetch_add(&m->conns, 1);
		assert_int_equal(pthread_create(&t, NULL, serve_conn, fc), 0);
		assert_int_equal(pthread_detach(t), 0);
	}
}

static void fake_start(fake_member *m, fake_mode puts, fake_mode ranges)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int one = 1;

	memset(m, 0, sizeof(*m));
	atomic_store(&m->grpc_status, -1);
	m->puts = puts;
	m->ranges = ranges;
	m->fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(m->fd >= 0);
	(void)setsockopt(m->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(m->fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(m->fd, 8), 0);
	assert_int_equal(getsockname(m->fd, (struct sockaddr *)&a, &len), 0);
	m->port = ntohs(a.sin_port);
	assert_int_equal(pthread_create(&m->thread, NULL, serve, m), 0);
}

/* After the store was freed: its connections close, and their threads
 * end. */
static void fake_stop(fake_member *m)
{
	shutdown(m->fd, SHUT_RDWR);
	close(m->fd);
	pthread_join(m->thread, NULL);
	for (int i = 0; i < 500 && atomic_load(&m->conns) > 0; i++)
		usleep(10000);
	assert_int_equal(atomic_load(&m->conns), 0);
}

static faucet_store *open_on(const char *hosts)
{
	char url[256];
	faucet_store *s = NULL;

	snprintf(url, sizeof(url), "etcd://%s/p?request_timeout=3s&dial_timeout=500ms", hosts);
	assert_int_equal(faucet_store_open_url(&s, url), 0);
	return s;
}

static void a_lost_write_reply_is_unknown_and_not_sent_again(void **state)
{
	fake_member a, b;
	char hosts[64];
	faucet_store *s;
	faucet_value *v = tu_v("1");

	(void)state;
	fake_start(&a, DROP, ANSWER);
	fake_start(&b, DROP, ANSWER);
	snprintf(hosts, sizeof(hosts), "127.0.0.1:%d,127.0.0.1:%d", a.port, b.port);
	s = open_on(hosts);
	assert_int_equal(faucet_store_put(s, "o::k", v), FAUCET_EUNKNOWN);
	assert_non_null(strstr(faucet_error_last()->message, "outcome unknown"));
	/* Sent once, to one member: never again to the other. */
	assert_int_equal(atomic_load(&a.put_count) + atomic_load(&b.put_count), 1);
	faucet_store_free(s);
	faucet_value_free(v);
	fake_stop(&a);
	fake_stop(&b);
}

static void a_write_answered_unavailable_is_unknown(void **state)
{
	fake_member a, b;
	char hosts[64];
	faucet_store *s;
	faucet_value *v = tu_v("1");

	(void)state;
	fake_start(&a, UNAVAILABLE, ANSWER);
	fake_start(&b, UNAVAILABLE, ANSWER);
	snprintf(hosts, sizeof(hosts), "127.0.0.1:%d,127.0.0.1:%d", a.port, b.port);
	s = open_on(hosts);
	assert_int_equal(faucet_store_put(s, "o::k", v), FAUCET_EUNKNOWN);
	assert_int_equal(atomic_load(&a.put_count) + atomic_load(&b.put_count), 1);
	faucet_store_free(s);
	faucet_value_free(v);
	fake_stop(&a);
	fake_stop(&b);
}

/* A compare-and-put batch of two new keys on members answering its write
 * txn with `txns`: what the batch returns, and how many write txns were
 * sent in all. */
static int cas_batch_on(fake_mode txns, int *written, int *sent)
{
	fake_member a, b;
	char hosts[64];
	faucet_store *s;
	faucet_value *v = tu_v("1");
	faucet_store_guard g[2] = {{"o::a", NULL, v}, {"o::b", NULL, NULL}};
	int rc;

	fake_start(&a, ANSWER, ANSWER);
	fake_start(&b, ANSWER, ANSWER);
	a.txns = b.txns = txns;
	snprintf(hosts, sizeof(hosts), "127.0.0.1:%d,127.0.0.1:%d", a.port, b.port);
	s = open_on(hosts);
	rc = faucet__store_compare_and_put_batch(s, g, 2, written);
	*sent = atomic_load(&a.txn_count) + atomic_load(&b.txn_count);
	faucet_store_free(s);
	faucet_value_free(v);
	fake_stop(&a);
	fake_stop(&b);
	return rc;
}

/* Its write txn is sent once; a lost or Unavailable reply is outcome
 * unknown, as for a single write. */
static void a_compare_and_put_batch_is_one_write_and_a_lost_reply_is_unknown(void **state)
{
	int written = -1, sent = 0;

	(void)state;
	assert_int_equal(cas_batch_on(ANSWER, &written, &sent), 0);
	assert_int_equal(written, 1);
	assert_int_equal(sent, 1);
	assert_int_equal(cas_batch_on(DROP, &written, &sent), FAUCET_EUNKNOWN);
	assert_non_null(strstr(faucet_error_last()->message, "outcome unknown"));
	assert_int_equal(written, 0);
	assert_int_equal(sent, 1);
	assert_int_equal(cas_batch_on(UNAVAILABLE, &written, &sent), FAUCET_EUNKNOWN);
	assert_int_equal(sent, 1);
}

/* A cluster whose --max-txn-ops is below the batch refuses it before
 * anything is written: unsupported, so that undo goes key by key. */
static void a_compare_and_put_batch_over_max_txn_ops_is_unsupported(void **state)
{
	int written = -1, sent = 0;

	(void)state;
	assert_int_equal(cas_batch_on(TOO_MANY, &written, &sent), FAUCET_EUNSUPPORTED);
	assert_non_null(strstr(faucet_error_last()->message, "too many operations"));
	assert_int_equal(written, 0);
	assert_int_equal(sent, 1);
}

static void a_read_answered_unavailable_moves_to_the_next_endpoint(void **state)
{
	fake_member a, b;
	char hosts[64];
	faucet_store *s;
	faucet_value *got = NULL;

	(void)state;
	fake_start(&a, ANSWER, UNAVAILABLE);
	fake_start(&b, ANSWER, ANSWER);
	snprintf(hosts, sizeof(hosts), "127.0.0.1:%d,127.0.0.1:%d", a.port, b.port);
	s = open_on(hosts);
	assert_int_equal(faucet_store_get(s, "o::k", &got), 0);
	assert_non_null(got);
	assert_string_equal(faucet_value_json(got), "1");
	assert_int_equal(atomic_load(&a.range_count), 1);
	assert_int_equal(atomic_load(&b.range_count), 1);
	faucet_value_free(got);
	faucet_store_free(s);
	fake_stop(&a);
	fake_stop(&b);
}

static int one_entry(const char *key, const faucet_value *value, void *ctx)
{
	int *seen = ctx;

	assert_string_equal(key, "o::k");
	assert_string_equal(faucet_value_json(value), "1");
	(*seen)++;
	return 0;
}

/* A listing and an export (scan of entries) of one fake member answering
 * `body` to every range: 0 with the key "o::k" = 1 (no value member: the
 * listing only), or the first error code. */
static int list_and_export(const char *body)
{
	fake_member m;
	char hosts[64];
	faucet_store *s;
	faucet_strarray keys = {0};
	int rc;

	fake_start(&m, ANSWER, ANSWER);
	m.range_body = body;
	snprintf(hosts, sizeof(hosts), "127.0.0.1:%d", m.port);
	s = open_on(hosts);
	rc = faucet_store_list(s, "o::", &keys);
	if (rc == 0) {
		assert_int_equal(keys.count, 1);
		assert_string_equal(keys.strings[0], "o::k");
		faucet_strarray_dispose(&keys);
	}
	if (rc == 0 && strstr(body, "MQ==") != NULL) {
		int seen = 0;

		rc = faucet_store_scan_entries(s, "o::", one_entry, &seen);
		if (rc == 0)
			assert_int_equal(seen, 1);
	}
	faucet_store_free(s);
	fake_stop(&m);
	return rc;
}

/* The range reply is read by etcd.c's own scanner; members in any order,
 * ones it does not know (nested too), an escaped string it does not
 * decode (json-c reads that reply instead) all give the same listing, and
 * a reply cut short is an error, never a short list. */
static void a_range_reply_is_read_whatever_its_member_order(void **state)
{
	(void)state;
	assert_int_equal(list_and_export("{\"header\":{\"revision\":\"5\"},\"kvs\":[{\"key\":"
					 "\"cC9vOjpr\",\"value\":\"MQ==\",\"mod_revision\":\"5\"}],"
					 "\"count\":\"1\"}"),
			 0);
	assert_int_equal(
		list_and_export(" { \"kvs\" : [ { \"create_revision\":\"2\", \"key\":\"cC9vOjpr\","
				"\"version\":\"1\",\"value\":\"MQ==\",\"lease\":\"0\",\"x\":{\"y\":[1,"
				"-2.5e3,true,null,{}]},\"mod_revision\":\"5\" } ],\"header\":{\"cluster_id\":"
				"\"1\",\"member_id\":\"2\",\"revision\":\"5\",\"raft_term\":\"2\"},"
				"\"more\":false,\"count\":\"1\"}\n"),
		0);
	/* "\u0072" is "r": only json-c decodes it. */
	assert_int_equal(list_and_export("{\"header\":{\"revision\":\"5\"},\"kvs\":[{\"key\":"
					 "\"cC9vOjp\\u0072\",\"value\":\"MQ==\",\"mod_revision\":\"5\"}]}"),
			 0);
	assert_int_not_equal(list_and_export("{\"header\":{\"revision\":\"5\"},\"kvs\":[{\"key\":"
					     "\"cC9vOjpr\""),
			     0);
	/* A key outside the prefix is refused, not listed. */
	assert_int_not_equal(list_and_export("{\"header\":{\"revision\":\"5\"},\"kvs\":[{\"key\":"
					     "\"cS9vOjpr\",\"mod_revision\":\"5\"}]}"),
			     0);
}

/* `lists` listings of "o::" give the one key "o::k", and a scan gives it
 * with the value 1. */
static void lists_and_scans_o_k(faucet_store *s, int lists)
{
	faucet_strarray keys = {0};
	int seen = 0;

	for (int i = 0; i < lists; i++) {
		assert_int_equal(faucet_store_list(s, "o::", &keys), 0);
		assert_int_equal(keys.count, 1);
		assert_string_equal(keys.strings[0], "o::k");
		faucet_strarray_dispose(&keys);
	}
	assert_int_equal(faucet_store_scan_entries(s, "o::", one_entry, &seen), 0);
	assert_int_equal(seen, 1);
}

/* The ranges of a store whose member does not speak gRPC go through the
 * gateway: the first one tries gRPC once, and the store remembers. */
static void a_member_without_grpc_is_read_through_the_gateway(void **state)
{
	fake_member m;
	char hosts[64];
	faucet_store *s;

	(void)state;
	fake_start(&m, ANSWER, ANSWER);
	snprintf(hosts, sizeof(hosts), "127.0.0.1:%d", m.port);
	s = open_on(hosts);
	lists_and_scans_o_k(s, 2);
	assert_int_equal(atomic_load(&m.h2_count), 1);
	assert_int_equal(atomic_load(&m.range_count), 3);
	faucet_store_free(s);
	fake_stop(&m);
}

/* Through gRPC: a member answering Unavailable (trailers only) is left for
 * the next, whose RangeResponse is read - the gateway is not asked; a
 * permission denied is FAUCET_EAUTH, and any other status the error the
 * gateway path gives, with its grpc-message decoded.  None of them sends
 * the store back to the gateway. */
static void grpc_statuses_map_to_the_gateways_errors(void **state)
{
	fake_member a, b;
	char hosts[64];
	faucet_store *s;
	faucet_strarray keys = {0};

	(void)state;
	fake_start(&a, ANSWER, ANSWER);
	fake_start(&b, ANSWER, ANSWER);
	atomic_store(&a.grpc_status, 14);
	a.grpc_message = "etcdserver:%20no%20leader";
	atomic_store(&b.grpc_status, 0);
	snprintf(hosts, sizeof(hosts), "127.0.0.1:%d,127.0.0.1:%d", a.port, b.port);
	s = open_on(hosts);
	lists_and_scans_o_k(s, 1);
	/* a answered once; b then the listing and the scan (the store stays
	 * on the endpoint that answered). */
	assert_int_equal(atomic_load(&a.grpc_count), 1);
	assert_int_equal(atomic_load(&b.grpc_count), 2);
	assert_int_equal(atomic_load(&a.range_count) + atomic_load(&b.range_count), 0);
	faucet_store_free(s);

	/* b alone: PermissionDenied, then OutOfRange (a compacted revision). */
	snprintf(hosts, sizeof(hosts), "127.0.0.1:%d", b.port);
	atomic_store(&b.grpc_status, 7);
	b.grpc_message = "etcdserver:%20permission%20denied";
	s = open_on(hosts);
	assert_int_equal(faucet_store_list(s, "o::", &keys), FAUCET_EAUTH);
	assert_non_null(strstr(faucet_error_last()->message, "etcdserver: permission denied"));
	atomic_store(&b.grpc_status, 11);
	b.grpc_message = "etcdserver:%20mvcc:%20required%20revision%20has%20been%20compacted";
	assert_int_equal(faucet_store_list(s, "o::", &keys), FAUCET_ERROR);
	assert_non_null(strstr(faucet_error_last()->message, "required revision has been compacted"));
	assert_int_equal(atomic_load(&b.range_count), 0);
	faucet_store_free(s);
	fake_stop(&a);
	fake_stop(&b);
}

static void a_write_to_a_refusing_member_moves_on(void **state)
{
	fake_member b;
	char hosts[64];
	faucet_store *s;
	faucet_value *v = tu_v("1");

	(void)state;
	fake_start(&b, ANSWER, ANSWER);
	/* Port 1 refuses: nothing was sent there, so the put may go on. */
	snprintf(hosts, sizeof(hosts), "127.0.0.1:1,127.0.0.1:%d", b.port);
	s = open_on(hosts);
	assert_int_equal(faucet_store_put(s, "o::k", v), 0);
	assert_int_equal(atomic_load(&b.put_count), 1);
	faucet_store_free(s);
	faucet_value_free(v);
	fake_stop(&b);
}

static void no_endpoint_answering_fails_within_the_request_timeout(void **state)
{
	faucet_store *s = open_on("127.0.0.1:1,127.0.0.1:2");
	faucet_value *got = NULL;

	(void)state;
	assert_int_equal(faucet_store_get(s, "o::k", &got), FAUCET_EUNAVAILABLE);
	assert_non_null(strstr(faucet_error_last()->message, "no endpoint answered"));
	assert_null(got);
	faucet_store_free(s);
}

/* ---- watch --------------------------------------------------------------- */

/* "p/" is the prefix: o::a created, o::b written again, o::a deleted. */
static const char watch_stream[] =
	"{\"result\":{\"header\":{\"revision\":\"9\"},\"created\":true}}\n"
	"{\"result\":{\"header\":{\"revision\":\"10\"},\"events\":[{\"kv\":{\"key\":"
	"\"cC9vOjph\",\"create_revision\":\"10\",\"mod_revision\":\"10\",\"version\":\"1\","
	"\"value\":\"MQ==\"}},{\"kv\":{\"key\":\"cC9vOjpi\",\"create_revision\":\"3\","
	"\"mod_revision\":\"10\",\"version\":\"4\",\"value\":\"Mg==\"}}]}}\n"
	"{\"result\":{\"header\":{\"revision\":\"11\"},\"events\":[{\"type\":\"DELETE\","
	"\"kv\":{\"key\":\"cC9vOjph\",\"mod_revision\":\"11\"}}]}}\n";

typedef struct {
	char seen[512];
	int stop_at; /* return 7 at this callback (0: never) */
	int calls;
} watch_log;

static int log_watch(faucet_watch_event what, const char *key, void *ctx)
{
	static const char *const names[] = {"tick", "ready", "added", "changed", "removed"};
	watch_log *w = ctx;
	size_t n = strlen(w->seen);

	if (what == FAUCET_WATCH_TICK)
		return 0;
	(void)snprintf(w->seen + n, sizeof(w->seen) - n, "%s%s%s;", names[what], key ? " " : "",
		       key ? key : "");
	return ++w->calls == w->stop_at ? 7 : 0;
}

/* faucet_store_watch(prefix) on one fake member sending `body`. */
static int watch_fake(const char *body, const char *prefix, watch_log *w)
{
	fake_member a;
	char hosts[64];
	faucet_store *s;
	int rc;

	fake_start(&a, ANSWER, ANSWER);
	a.watch_body = body;
	snprintf(hosts, sizeof(hosts), "127.0.0.1:%d", a.port);
	s = open_on(hosts);
	rc = faucet_store_watch(s, prefix, log_watch, w);
	faucet_store_free(s);
	fake_stop(&a);
	return rc;
}

static void a_watch_stream_cut_anywhere_reports_each_change(void **state)
{
	watch_log w = {.stop_at = 0};

	(void)state;
	/* The member closing the stream is an error: changes may be missed. */
	assert_int_equal(watch_fake(watch_stream, "", &w), FAUCET_EUNAVAILABLE);
	assert_non_null(strstr(faucet_error_last()->message, "ended the stream"));
	assert_string_equal(w.seen, "ready;added o::a;changed o::b;removed o::a;");
}

static void a_callback_stops_the_watch_with_its_value(void **state)
{
	watch_log w = {.stop_at = 3};

	(void)state;
	assert_int_equal(watch_fake(watch_stream, "o::", &w), 7);
	assert_string_equal(w.seen, "ready;added o::a;changed o::b;");
}

static void a_stream_that_is_not_json_is_an_error(void **state)
{
	watch_log w = {.stop_at = 0};

	(void)state;
	assert_int_equal(watch_fake("{\"result\":{\"created\":true}}\n<html>not etcd</html>", "", &w),
			 FAUCET_ERROR);
	assert_non_null(strstr(faucet_error_last()->message, "not JSON"));
	assert_string_equal(w.seen, "ready;");
}

static void a_store_without_a_watch_says_so(void **state)
{
	faucet_store *s = NULL;
	watch_log w = {.stop_at = 0};

	(void)state;
	assert_int_equal(faucet_store_open_memory(&s), 0);
	assert_int_equal(faucet_store_watch(s, "", log_watch, &w), FAUCET_EUNSUPPORTED);
	assert_non_null(strstr(faucet_error_last()->message, "cannot be watched"));
	assert_int_equal(w.calls, 0);
	faucet_store_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_lost_write_reply_is_unknown_and_not_sent_again),
		cmocka_unit_test(a_write_answered_unavailable_is_unknown),
		cmocka_unit_test(a_compare_and_put_batch_is_one_write_and_a_lost_reply_is_unknown),
		cmocka_unit_test(a_compare_and_put_batch_over_max_txn_ops_is_unsupported),
		cmocka_unit_test(a_read_answered_unavailable_moves_to_the_next_endpoint),
		cmocka_unit_test(a_write_to_a_refusing_member_moves_on),
		cmocka_unit_test(a_range_reply_is_read_whatever_its_member_order),
		cmocka_unit_test(a_member_without_grpc_is_read_through_the_gateway),
		cmocka_unit_test(grpc_statuses_map_to_the_gateways_errors),
		cmocka_unit_test(no_endpoint_answering_fails_within_the_request_timeout),
		cmocka_unit_test(a_watch_stream_cut_anywhere_reports_each_change),
		cmocka_unit_test(a_callback_stops_the_watch_with_its_value),
		cmocka_unit_test(a_stream_that_is_not_json_is_an_error),
		cmocka_unit_test(a_store_without_a_watch_says_so),
	};

	/* A fake member writing to a connection the client has closed (a
	 * watch it stopped, a reply it gave up on) must not kill the test. */
	if (signal(SIGPIPE, SIG_IGN) == SIG_ERR)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
