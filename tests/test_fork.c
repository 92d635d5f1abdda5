/*
 * test_fork.c - a store handle used on both sides of fork().
 *
 * Python's multiprocessing forks by default, so a handle opened in the
 * parent is routinely used by a child too.  Every backend (memory aside)
 * must then give each process its own replies: the child gets connections
 * of its own instead of talking over the parent's sockets, where the two
 * processes' requests and replies would cross.
 *
 * Each test opens a store, uses it (so pooled connections exist), forks,
 * and lets parent and child each put and get keys of their own with
 * values of their own, at the same time, a bounded number of times.  Every
 * reply must be the caller's own value.  The child reports the first
 * mismatch or error through a pipe and its exit status; it never calls
 * cmocka (a failed assertion there would unwind into the parent's copy of
 * the test).  An alarm bounds each process: before the fix a reply taken
 * by the other process could leave a caller waiting for ever.
 *
 * Also: a PostgreSQL child that only closes its copy leaves the parent's
 * server session alone (no Terminate over the shared socket), and the
 * pool's own rules with fake connections - the child's connections are
 * its own, inherited ones are abandoned (or, without an abandon callback,
 * closed), a slot a parent's thread held is the child's again.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "contract/servers.h"
#include "stores/pool.h"

#define KEYS 16        /* keys per process, reused round robin */
#define WATCHDOG_S 60 /* a process still in a store call after this is stuck */

/* Put and get keys "fork_{who}_{n}" holding {"who":who,"i":i}; 0, or -1
 * with the first problem described in msg. */
static int exercise(faucet_store *s, const char *who, int round, int count, char *msg,
		    size_t cap)
{
	for (int i = 0; i < count; i++) {
		char key[64], json[96];
		faucet_value *want = NULL, *got = NULL;
		int rc;

		snprintf(key, sizeof(key), "fork_%s_%d", who, i % KEYS);
		snprintf(json, sizeof(json), "{\"who\":\"%s\",\"round\":%d,\"i\":%d}", who, round,
			 i);
		if (faucet_value_parse(&want, json, strlen(json)) != 0) {
			snprintf(msg, cap, "%s: parse %s: %s", who, json, faucet_error_last()->message);
			return -1;
		}
		rc = faucet_store_put(s, key, want);
		if (rc == 0)
			rc = faucet_store_get(s, key, &got);
		if (rc != 0) {
			snprintf(msg, cap, "%s: operation %d on %s failed: %s", who, i, key,
				 faucet_error_last()->message);
		} else if (got == NULL) {
			snprintf(msg, cap, "%s: get %d of %s found no entry, expected %s", who, i,
				 key, json);
			rc = -1;
		} else if (!faucet_value_equal(got, want)) {
			snprintf(msg, cap, "%s: get %d of %s returned %s, expected %s", who, i, key,
				 faucet_value_json(got), json);
			rc = -1;
		}
		faucet_value_free(got);
		faucet_value_free(want);
		if (rc != 0)
			return -1;
	}
	return 0;
}

static void write_all(int fd, const char *text)
{
	size_t len = strlen(text);

	while (len > 0) {
		ssize_t n = write(fd, text, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		text += n;
		len -= (size_t)n;
	}
}

/* Read until EOF into buf (NUL-terminated, cut at cap - 1). */
static void read_all(int fd, char *buf, size_t cap)
{
	size_t len = 0;

	for (;;) {
		ssize_t n = read(fd, buf + len, cap - 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || (len += (size_t)n) == cap - 1)
			break;
	}
	buf[len] = '\0';
}

/* The parent's watchdog: a store call that never returns (its reply was
 * read by the child) fails the test with a message instead of hanging. */
static void parent_stuck(int sig)
{
	static const char msg[] = "test_fork: the parent is stuck in a store call (its reply "
				  "went to the child?)\n";

	(void)sig;
	(void)!write(2, msg, sizeof(msg) - 1);
	_exit(1);
}

/* The child: exercise its own keys, close the store (which must not
 * disturb the parent's connections), report. */
static void child(faucet_store *s, int round, int count, int report)
{
	char msg[1024] = "";
	int rc;

	(void)signal(SIGALRM, SIG_DFL);
	(void)alarm(WATCHDOG_S);
	rc = exercise(s, "child", round, count, msg, sizeof(msg));
	faucet_store_free(s);
	write_all(report, msg);
	close(report);
	_exit(rc == 0 ? 0 : 1);
}

/* One fork of a used store; parent and child exercise it at once (both
 * start straight away, so the child's first calls meet the parent's). */
static void fork_once(faucet_store *s, int round, int count)
{
	int report[2], status, prc;
	char pmsg[1024] = "", cmsg[1024];
	faucet_value *warm = NULL;
	pid_t pid;

	/* The pool now holds a connection (a SQLite handle, a socket). */
	assert_int_equal(faucet_store_get(s, "fork_warm", &warm), 0);
	faucet_value_free(warm);
	assert_int_equal(pipe(report), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(report[0]);
		child(s, round, count, report[1]);
	}
	close(report[1]);
	prc = exercise(s, "parent", round, count, pmsg, sizeof(pmsg));
	read_all(report[0], cmsg, sizeof(cmsg));
	close(report[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (prc != 0)
		fail_msg("round %d: %s", round, pmsg);
	if (!WIFEXITED(status))
		fail_msg("round %d: the child died of signal %d%s", round, WTERMSIG(status),
			 WTERMSIG(status) == SIGALRM ? " (stuck in a store call: its watchdog fired)"
						     : "");
	if (WEXITSTATUS(status) != 0)
		fail_msg("round %d: %s", round, cmsg[0] ? cmsg : "the child failed without a message");

	/* The child's writes landed under its keys, and the parent's handle
	 * still works after the child closed its copy. */
	for (int k = 0; k < KEYS && k < count; k++) {
		char key[64], json[96];
		int last = (count - 1) - ((count - 1 - k) % KEYS);

		snprintf(key, sizeof(key), "fork_child_%d", k);
		snprintf(json, sizeof(json), "{\"who\":\"child\",\"round\":%d,\"i\":%d}", round,
			 last);
		tu_assert_value(s, key, json);
	}
}

/* `rounds` forks of one handle, `count` puts and gets each per process. */
static void parent_and_child_get_their_own_replies(faucet_store *s, int rounds, int count)
{
	(void)signal(SIGALRM, parent_stuck);
	(void)alarm(WATCHDOG_S);
	for (int r = 0; r < rounds; r++)
		fork_once(s, r, count);
	(void)alarm(0);
	(void)signal(SIGALRM, SIG_DFL);
	assert_true(tu_cas(s, "fork_parent_0", NULL, "{\"after\":true}") == 0);
	assert_true(tu_cas(s, "fork_after", NULL, "{\"after\":true}") == 1);
	tu_assert_value(s, "fork_after", "{\"after\":true}");
}

static faucet_store *open_url(const char *url)
{
	faucet_store *s = NULL;

	if (faucet_store_open_url(&s, url) != 0)
		fail_msg("open %s: %s", url, faucet_error_last()->message);
	return s;
}

/* The server stores get a table / namespace of their own per run. */
static faucet_store *open_server(const char *env, const char *param)
{
	char url[1024];

	snprintf(url, sizeof(url), "%s?%s=fork_%d", ts_env(env), param, (int)getpid());
	return open_url(url);
}

static void redis_store_after_fork(void **state)
{
	faucet_store *s = open_server("FAUCET_TEST_REDIS_URL", "namespace");

	(void)state;
	parent_and_child_get_their_own_replies(s, 20, 300);
	faucet_store_free(s);
}

static void postgres_store_after_fork(void **state)
{
	faucet_store *s = open_server("FAUCET_TEST_PG_URL", "table");

	(void)state;
	parent_and_child_get_their_own_replies(s, 20, 200);
	faucet_store_free(s);
}

/* The server's sessions named `app`, as "pid,pid,..." in order. */
static char *sessions_named(const char *app)
{
	return ts_sh("psql -X -q -At -d '%s' -c \"select coalesce(string_agg(pid::text, ',' order by "
		     "pid), '') from pg_stat_activity where application_name = '%s'\" 2>&1",
		     ts_env("FAUCET_TEST_PG_URL"), app);
}

/* A child that only closes its copy of the handle must not end the
 * parent's session: libpq's PQfinish would send Terminate over the shared
 * socket.  The parent then still talks to the same server process (a new
 * one would have been connected when its connection was found closed). */
static void postgres_child_leaves_the_parents_session_alone(void **state)
{
	char app[64], url[1024], *before, *after;
	faucet_store *s;
	faucet_value *v = NULL;
	int status;
	pid_t pid;

	(void)state;
	snprintf(app, sizeof(app), "fork_session_%d", (int)getpid());
	snprintf(url, sizeof(url), "%s?table=fork_%d&application_name=%s",
		 ts_env("FAUCET_TEST_PG_URL"), (int)getpid(), app);
	s = open_url(url);
	assert_int_equal(faucet_store_get(s, "fork_warm", &v), 0);
	faucet_value_free(v);
	before = sessions_named(app);
	assert_true(before[0] != '\0' && strchr(before, ',') == NULL); /* one connection */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		faucet_store_free(s);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(faucet_store_get(s, "fork_warm", &v), 0);
	faucet_value_free(v);
	after = sessions_named(app);
	if (strcmp(before, after) != 0)
		fail_msg("the parent's session %s was ended by the child (sessions now: %s)",
			 before, after);
	free(before);
	free(after);
	faucet_store_free(s);
}

static void sqlite_store_after_fork(void **state)
{
	tu_dir_fixture *f = *state;
	char url[1024];
	faucet_store *s;

	snprintf(url, sizeof(url), "sqlite:%s/state.db", f->dir);
	s = open_url(url);
	parent_and_child_get_their_own_replies(s, 5, 200);
	faucet_store_free(s);
}

static void file_store_after_fork(void **state)
{
	tu_dir_fixture *f = *state;
	char url[1024];
	faucet_store *s;

	snprintf(url, sizeof(url), "file:%s/state", f->dir);
	s = open_url(url);
	parent_and_child_get_their_own_replies(s, 5, 200);
	faucet_store_free(s);
}

/* ---- the pool's part, with fake connections ---------------------------- */

typedef struct {
	pid_t made_by;
} fake_conn;

static int fake_abandoned, fake_closed_inherited, fake_closed_own;

static int fake_connect(void *owner, void **out)
{
	fake_conn *c = malloc(sizeof(*c));

	(void)owner;
	if (c == NULL)
		return FAUCET_ENOMEM;
	c->made_by = getpid();
	*out = c;
	return 0;
}

static void fake_disconnect(void *conn)
{
	fake_conn *c = conn;

	if (c->made_by == getpid())
		fake_closed_own++;
	else
		fake_closed_inherited++;
	free(c);
}

static void fake_abandon(void *conn)
{
	fake_abandoned++;
	free(conn);
}

static const faucet_pool_ops fake_ops = {fake_connect, fake_disconnect, NULL, NULL, fake_abandon};
static const faucet_pool_ops fake_ops_close = {fake_connect, fake_disconnect, NULL, NULL, NULL};

/* A pool of max 3 holding two idle connections, and (held = 1) a third
 * taken and not given back, as another thread's would be at the fork. */
static faucet_pool *pool_with_connections(const faucet_pool_ops *ops, int held, void **taken)
{
	faucet_pool *p;
	void *a, *b;

	assert_int_equal(faucet__pool_new(&p, ops, NULL, held ? 3 : 2), 0);
	assert_int_equal(faucet__pool_acquire(p, &a, NULL), 0);
	assert_int_equal(faucet__pool_acquire(p, &b, NULL), 0);
	*taken = NULL;
	if (held)
		assert_int_equal(faucet__pool_acquire(p, taken, NULL), 0);
	faucet__pool_release(p, a, 0);
	faucet__pool_release(p, b, 0);
	fake_abandoned = fake_closed_inherited = fake_closed_own = 0;
	return p;
}

/* Run child_fn in a forked child (exit status 0 = passed, else the number
 * of the failed check). */
static void in_child(faucet_pool *p, int (*child_fn)(faucet_pool *p))
{
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		(void)alarm(WATCHDOG_S);
		_exit(child_fn(p));
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status))
		fail_msg("the child died of signal %d", WTERMSIG(status));
	if (WEXITSTATUS(status) != 0)
		fail_msg("the child's check %d failed", WEXITSTATUS(status));
}

/* Every connection the child takes is its own: the inherited idle ones are
 * abandoned (never disconnected), and all slots - also the one a parent's
 * thread held - are the child's again (no wait for them). */
static int child_takes_fresh_connections(faucet_pool *p)
{
	void *c[3];
	int fresh;

	for (int i = 0; i < 3; i++) {
		if (faucet__pool_acquire(p, &c[i], &fresh) != 0)
			return 1;
		if (!fresh || ((fake_conn *)c[i])->made_by != getpid())
			return 2;
	}
	if (fake_abandoned != 2 || fake_closed_inherited != 0)
		return 3;
	for (int i = 0; i < 3; i++)
		faucet__pool_release(p, c[i], 0);
	faucet__pool_free(p);
	return fake_closed_own == 3 && fake_abandoned == 2 && fake_closed_inherited == 0 ? 0 : 4;
}

/* A child that only frees the pool abandons what it inherited. */
static int child_frees_the_pool(faucet_pool *p)
{
	faucet__pool_free(p);
	return fake_abandoned == 2 && fake_closed_inherited == 0 && fake_closed_own == 0 ? 0 : 1;
}

/* Without an abandon callback (SQLite) the inherited ones are closed. */
static int child_closes_without_abandon(faucet_pool *p)
{
	void *c;
	int fresh;

	if (faucet__pool_acquire(p, &c, &fresh) != 0 || !fresh)
		return 1;
	if (fake_closed_inherited != 2 || fake_abandoned != 0)
		return 2;
	faucet__pool_release(p, c, 0);
	faucet__pool_free(p);
	return fake_closed_own == 1 ? 0 : 3;
}

/* The parent's pool is as it was: its idle connections come back. */
static void parent_pool_untouched(faucet_pool *p, void *taken)
{
	void *c;
	int fresh;

	assert_int_equal(faucet__pool_acquire(p, &c, &fresh), 0);
	assert_false(fresh);
	assert_int_equal(((fake_conn *)c)->made_by, getpid());
	faucet__pool_release(p, c, 0);
	if (taken != NULL)
		faucet__pool_release(p, taken, 0);
	assert_int_equal(fake_abandoned, 0);
	faucet__pool_free(p);
	assert_int_equal(fake_closed_inherited, 0);
}

static void pool_child_gets_its_own_connections(void **state)
{
	void *taken;
	faucet_pool *p = pool_with_connections(&fake_ops, 1, &taken);

	(void)state;
	in_child(p, child_takes_fresh_connections);
	parent_pool_untouched(p, taken);
}

static void pool_child_abandons_on_free(void **state)
{
	void *taken;
	faucet_pool *p = pool_with_connections(&fake_ops, 0, &taken);

	(void)state;
	in_child(p, child_frees_the_pool);
	parent_pool_untouched(p, taken);
}

static void pool_child_closes_without_abandon(void **state)
{
	void *taken;
	faucet_pool *p = pool_with_connections(&fake_ops_close, 0, &taken);

	(void)state;
	in_child(p, child_closes_without_abandon);
	parent_pool_untouched(p, taken);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(pool_child_gets_its_own_connections),
		cmocka_unit_test(pool_child_abandons_on_free),
		cmocka_unit_test(pool_child_closes_without_abandon),
		cmocka_unit_test(redis_store_after_fork),
		cmocka_unit_test(postgres_store_after_fork),
		cmocka_unit_test(postgres_child_leaves_the_parents_session_alone),
		TU_DIR_TEST(sqlite_store_after_fork),
		TU_DIR_TEST(file_store_after_fork),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
