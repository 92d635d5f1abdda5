/*
 * test_lost_reply.c - a write whose request reached PostgreSQL or Redis but
 * whose reply was lost is reported as outcome unknown (FAUCET_EUNKNOWN),
 * and an import that hits it lists the keys as written with their
 * durability unknown - never "nothing was written".
 *
 * A loopback TCP proxy sits between the store and the test server.  Once
 * armed, it forwards the next request - or, when the write takes several
 * round trips, the next that holds a given mark - waits until the server's
 * reply to it has come back (so the server has applied it), then closes
 * both sides without passing the reply on, and stops accepting connections
 * (so the pool's retry on a new connection cannot make the outcome known).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "testutil.h"
#include "contract/servers.h"
#include "store/open_internal.h"

typedef struct {
	int listen_fd;
	int port;
	atomic_int target_port;
	const char *reply_end; /* bytes that end the server's reply */
	size_t reply_end_len;
	const char *mark; /* bytes of the request to drop the reply of; NULL: any */
	size_t mark_len;
	char seen[32];    /* the last bytes the client sent, for a mark split across reads */
	size_t seen_len;
	atomic_int armed;
	atomic_int dropped;
	pthread_t thread;
} proxy;

static int connect_to(int port)
{
	struct sockaddr_in a;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

static int send_all(int fd, const char *buf, size_t n)
{
	while (n > 0) {
		ssize_t w = send(fd, buf, n, MSG_NOSIGNAL);
		if (w <= 0)
			return -1;
		buf += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Read the server's reply until it ends with reply_end (it has then been
 * applied), without passing it on. */
static void swallow_reply(proxy *p, int server)
{
	char buf[4096], tail[16] = {0};
	size_t have = 0;

	for (;;) {
		ssize_t n = recv(server, buf, sizeof(buf), 0);
		if (n <= 0)
			return;
		for (ssize_t i = 0; i < n; i++) {
			memmove(tail, tail + 1, sizeof(tail) - 1);
			tail[sizeof(tail) - 1] = buf[i];
			if (have < sizeof(tail))
				have++;
		}
		if (have >= p->reply_end_len &&
		    memcmp(tail + sizeof(tail) - p->reply_end_len, p->reply_end, p->reply_end_len) == 0)
			return;
	}
}

/* Whether the client's bytes, read so far, hold the mark. */
static int saw_mark(proxy *p, const char *buf, size_t n)
{
	int found = p->mark == NULL;

	for (size_t i = 0; i < n; i++) {
		if (p->seen_len == sizeof(p->seen)) {
			memmove(p->seen, p->seen + 1, sizeof(p->seen) - 1);
			p->seen_len--;
		}
		p->seen[p->seen_len++] = buf[i];
		if (!found && p->seen_len >= p->mark_len &&
		    memcmp(p->seen + p->seen_len - p->mark_len, p->mark, p->mark_len) == 0)
			found = 1;
	}
	return found;
}

/* Relay one connection until either side closes, or until the armed drop. */
static void relay(proxy *p, int client, int server)
{
	char buf[65536];

	for (;;) {
		struct pollfd fds[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
		ssize_t n;

		if (poll(fds, 2, -1) < 0)
			return;
		if (fds[0].revents) {
			n = recv(client, buf, sizeof(buf), 0);
			if (n <= 0 || send_all(server, buf, (size_t)n) != 0)
				return;
			if (atomic_load(&p->armed) && saw_mark(p, buf, (size_t)n)) {
				swallow_reply(p, server);
				atomic_store(&p->dropped, 1);
				return;
			}
		}
		if (fds[1].revents) {
			n = recv(server, buf, sizeof(buf), 0);
			if (n <= 0 || send_all(client, buf, (size_t)n) != 0)
				return;
		}
	}
}

/* The store's pool opens its connections one after another from the test
 * thread, so one relay at a time is enough: each accepted connection is
 * relayed until it ends; after the drop nothing more is accepted. */
static void *proxy_main(void *arg)
{
	proxy *p = arg;

	while (!atomic_load(&p->dropped)) {
		int client = accept(p->listen_fd, NULL, NULL), server;
		if (client < 0)
			break;
		server = connect_to(atomic_load(&p->target_port));
		relay(p, client, server);
		close(client);
		close(server);
	}
	close(p->listen_fd);
	return NULL;
}

static void proxy_start(proxy *p, int target_port, const char *reply_end, size_t reply_end_len,
			const char *mark, size_t mark_len)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);

	memset(p, 0, sizeof(*p));
	atomic_init(&p->target_port, target_port);
	p->reply_end = reply_end;
	p->reply_end_len = reply_end_len;
	p->mark = mark;
	p->mark_len = mark_len;
	p->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(p->listen_fd >= 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(p->listen_fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(p->listen_fd, 8), 0);
	assert_int_equal(getsockname(p->listen_fd, (struct sockaddr *)&a, &len), 0);
	p->port = ntohs(a.sin_port);
	atomic_init(&p->armed, 0);
	atomic_init(&p->dropped, 0);
	assert_int_equal(pthread_create(&p->thread, NULL, proxy_main, p), 0);
}

static void proxy_join(proxy *p)
{
	assert_int_equal(pthread_join(p->thread, NULL), 0);
}

/* The URL in env with its host:port replaced by 127.0.0.1:port (the part
 * between '@' - or "://" - and the next '/' or '?'); *target gets the old
 * port. */
static char *url_through(const char *env, int port, int *target, const char *query)
{
	const char *url = ts_env(env), *host = strchr(url, '@'), *end, *colon;
	char *out = NULL;

	host = host ? host + 1 : strstr(url, "://") + 3;
	end = host + strcspn(host, "/?");
	colon = memchr(host, ':', (size_t)(end - host));
	assert_non_null(colon);
	*target = atoi(colon + 1);
	assert_true(asprintf(&out, "%.*s127.0.0.1:%d%s%s%s", (int)(host - url), url, port, end,
			     strchr(end, '?') ? "&" : "?", query) > 0);
	return out;
}

static faucet_store *open_url(const char *url)
{
	faucet_store *s = NULL;

	if (faucet_store_open_url(&s, url) != 0)
		fail_msg("open: %s", faucet_error_last()->message);
	return s;
}

static faucet_export *doc(const char *a, const char *b)
{
	faucet_export *e = NULL;
	faucet_value *v = tu_v("{\"n\":1}");

	assert_int_equal(faucet_export_new(&e, "o"), 0);
	assert_int_equal(faucet_export_set(e, a, v), 0);
	assert_int_equal(faucet_export_set(e, b, v), 0);
	faucet_value_free(v);
	return e;
}

/* Warm the connection with the same kind of write, then lose the reply of
 * the import's batch - of its request that holds `mark`, or of its only
 * request when mark is NULL - and check the report and the server.  With
 * `existing`, the batch's keys exist beforehand, so that it updates them. */
static void lost_batch_reply_is_outcome_unknown(const char *env, const char *query,
						const char *reply_end, size_t reply_end_len,
						const char *mark, size_t mark_len, int existing)
{
	faucet_export *warm = doc("o::w1", "o::w2"), *e = doc("o::a", "o::b");
	faucet_store *through, *direct;
	faucet_import_report r = FAUCET_IMPORT_REPORT_INIT;
	char *url, *direct_url = NULL;
	faucet_value *one;
	int target, rc;
	proxy p;

	proxy_start(&p, 0, reply_end, reply_end_len, mark, mark_len);
	url = url_through(env, p.port, &target, query);
	atomic_store(&p.target_port, target);
	through = open_url(url);
	assert_true(asprintf(&direct_url, "%s%s%s", ts_env(env),
			     strchr(ts_env(env), '?') ? "&" : "?", query) > 0);
	direct = open_url(direct_url);
	assert_int_equal(faucet_store_delete(direct, "o::a"), 0);
	assert_int_equal(faucet_store_delete(direct, "o::b"), 0);
	if (existing) {
		one = tu_v("{\"n\":0}");
		assert_int_equal(faucet_store_put(direct, "o::a", one), 0);
		assert_int_equal(faucet_store_put(direct, "o::b", one), 0);
		faucet_value_free(one);
	}

	assert_int_equal(faucet_import_namespace(through, warm, 0, &r), 0);
	assert_null(r.error);
	faucet_import_report_dispose(&r);

	atomic_store(&p.armed, 1);
	assert_int_equal(faucet_import_namespace(through, e, 0, &r), 0);
	assert_true(atomic_load(&p.dropped));
	if (r.error_code != FAUCET_EUNKNOWN)
		fail_msg("expected an unknown outcome, got %d: %s", r.error_code,
			 r.error ? r.error : "no error");
	assert_non_null(strstr(r.error, "outcome unknown"));
	tu_assert_strings(&r.written, "o::a", "o::b", NULL);
	tu_assert_strings(&r.durability_unknown, "o::a", "o::b", NULL);
	faucet_import_report_dispose(&r);
	/* The server did apply it: "nothing was written" would have been a lie. */
	tu_assert_value(direct, "o::a", "{\"n\":1}");
	tu_assert_value(direct, "o::b", "{\"n\":1}");

	/* A put through the dead proxy cannot even connect: that is no
	 * unknown outcome, nothing reached the server. */
	one = tu_v("1");
	rc = faucet_store_put(through, "o::c", one);
	faucet_value_free(one);
	assert_int_not_equal(rc, 0);
	assert_int_not_equal(rc, FAUCET_EUNKNOWN);

	proxy_join(&p);
	faucet_store_free(through);
	faucet_store_free(direct);
	faucet_export_free(warm);
	faucet_export_free(e);
	free(url);
	free(direct_url);
}

/* A batch of new keys goes by a range probe, then a COPY: the reply lost is
 * the COPY's, whose end-of-data message (CopyDone: 'c', length 4) the
 * server has read and committed. */
static void postgres_lost_reply(void **state)
{
	char query[64];
	(void)state;

	snprintf(query, sizeof(query), "table=lost_reply_%d", (int)getpid());
	/* ReadyForQuery: 'Z', length 5, then the status byte (idle). */
	lost_batch_reply_is_outcome_unknown("FAUCET_TEST_PG_URL", query, "Z\0\0\0\5I", 6,
					    "c\0\0\0\4", 5, 0);
}

/* A batch over existing keys goes by a range probe, then a COPY into the
 * staging table, then "INSERT ...; COMMIT" in one request: the reply lost
 * is that request's, after which the server committed. */
static void postgres_lost_reply_of_an_update(void **state)
{
	char query[64];
	(void)state;

	snprintf(query, sizeof(query), "table=lost_update_%d", (int)getpid());
	lost_batch_reply_is_outcome_unknown("FAUCET_TEST_PG_URL", query, "Z\0\0\0\5I", 6,
					    "; COMMIT", strlen("; COMMIT"), 1);
}

/* A compare-and-put batch is two requests, "BEGIN; SELECT ... FOR UPDATE"
 * and then its writes and "; COMMIT" in one: the reply lost is the
 * second's, after which the server committed - FAUCET_EUNKNOWN, never
 * "not written", and the batch did land. */
static void postgres_lost_reply_of_a_compare_and_put_batch(void **state)
{
	char query[64], *url, *direct_url = NULL;
	faucet_value *one = tu_v("1"), *two = tu_v("2");
	faucet_store_guard warm[1] = {{"o::warm", NULL, one}};
	faucet_store_guard g[2] = {{"o::a", one, two}, {"o::b", NULL, two}};
	faucet_store *through, *direct;
	int target, written = 0;
	proxy p;

	(void)state;
	snprintf(query, sizeof(query), "table=lost_cas_batch_%d", (int)getpid());
	proxy_start(&p, 0, "Z\0\0\0\5I", 6, "; COMMIT", strlen("; COMMIT"));
	url = url_through("FAUCET_TEST_PG_URL", p.port, &target, query);
	atomic_store(&p.target_port, target);
	through = open_url(url);
	assert_true(asprintf(&direct_url, "%s%s%s", ts_env("FAUCET_TEST_PG_URL"),
			     strchr(ts_env("FAUCET_TEST_PG_URL"), '?') ? "&" : "?", query) > 0);
	direct = open_url(direct_url);
	assert_int_equal(faucet_store_put(direct, "o::a", one), 0);
	assert_int_equal(faucet_store_delete(direct, "o::b"), 0);
	assert_int_equal(faucet_store_delete(direct, "o::warm"), 0);
	assert_int_equal(faucet__store_compare_and_put_batch(through, warm, 1, &written), 0);
	assert_int_equal(written, 1);

	atomic_store(&p.armed, 1);
	written = -1;
	assert_int_equal(faucet__store_compare_and_put_batch(through, g, 2, &written),
			 FAUCET_EUNKNOWN);
	tu_assert_error_contains("outcome unknown");
	assert_int_equal(written, 0);
	assert_true(atomic_load(&p.dropped));
	tu_assert_value(direct, "o::a", "2");
	tu_assert_value(direct, "o::b", "2");

	proxy_join(&p);
	assert_int_equal(faucet_store_delete(direct, "o::a"), 0);
	assert_int_equal(faucet_store_delete(direct, "o::b"), 0);
	assert_int_equal(faucet_store_delete(direct, "o::warm"), 0);
	faucet_store_free(through);
	faucet_store_free(direct);
	faucet_value_free(one);
	faucet_value_free(two);
	free(url);
	free(direct_url);
}

static void redis_lost_reply(void **state)
{
	char query[64];
	(void)state;

	snprintf(query, sizeof(query), "namespace=lost_reply_%d", (int)getpid());
	lost_batch_reply_is_outcome_unknown("FAUCET_TEST_REDIS_URL", query, "\r\n", 2, NULL, 0, 0);
}

/* A compare-and-put of megabytes goes out by writev, not through hiredis's
 * buffer: a lost EXEC reply is still an unknown outcome, and the value
 * did land. */
static void redis_lost_reply_of_a_big_write(void **state)
{
	static const char exec_reply[] = "*1\r\n+OK\r\n";
	char query[64], *url, *direct_url = NULL, *text = tu_big_string_json(2u << 20, 'x');
	faucet_value *big = tu_v(text), *small = tu_v("1");
	faucet_store *through, *direct;
	int target, written = 0;
	proxy p;

	(void)state;
	snprintf(query, sizeof(query), "namespace=lost_big_%d", (int)getpid());
	proxy_start(&p, 0, exec_reply, strlen(exec_reply), "EXEC\r\n", 6);
	url = url_through("FAUCET_TEST_REDIS_URL", p.port, &target, query);
	atomic_store(&p.target_port, target);
	through = open_url(url);
	assert_true(asprintf(&direct_url, "%s?%s", ts_env("FAUCET_TEST_REDIS_URL"), query) > 0);
	direct = open_url(direct_url);
	assert_int_equal(faucet_store_delete(direct, "o::big"), 0);
	assert_int_equal(faucet_store_compare_and_put(through, "o::warm", NULL, small, &written), 0);

	atomic_store(&p.armed, 1);
	written = 0;
	assert_int_equal(faucet_store_compare_and_put(through, "o::big", NULL, big, &written),
			 FAUCET_EUNKNOWN);
	tu_assert_error_contains("outcome unknown");
	assert_true(atomic_load(&p.dropped));
	tu_assert_value(direct, "o::big", text);

	proxy_join(&p);
	assert_int_equal(faucet_store_delete(direct, "o::big"), 0);
	assert_int_equal(faucet_store_delete(direct, "o::warm"), 0);
	faucet_store_free(through);
	faucet_store_free(direct);
	faucet_value_free(big);
	faucet_value_free(small);
	free(text);
	free(url);
	free(direct_url);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(postgres_lost_reply),
		cmocka_unit_test(postgres_lost_reply_of_an_update),
		cmocka_unit_test(postgres_lost_reply_of_a_compare_and_put_batch),
		cmocka_unit_test(redis_lost_reply),
		cmocka_unit_test(redis_lost_reply_of_a_big_write),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
