/*
 * events.c - GET /v1/events: Server-Sent Events of the bookkeeping that
 * changed (doc/design.md §9).
 *
 * One poller thread serves every client: while at least one client
 * listens, it scans the store's keys, reads the run status documents, the
 * leases and the backfill markers, and compares a hash of each with the
 * last poll's - once a second, or, on a store so large that a poll takes
 * more than 10 ms, after 100 times what the last poll took (at most 30 s):
 * an open dashboard then costs the server under 1% of a core.  Each
 * difference is one event in a ring of the last SERVE_EVENTS_RING; a
 * client that fell further behind is told to reload ("event: reset").  The
 * store is read at that rate however many clients there are.
 *
 * A client's connection is suspended (MHD_suspend_connection) while it has
 * nothing to send, so it holds no worker thread; the poller resumes the
 * waiting ones when it adds events, and every 10 s for a comment line that
 * keeps proxies from closing the stream.  On stop every stream ends, so the
 * graceful stop does not wait on them.
 *
 * A store that can be watched (etcd) is not polled: a watcher thread
 * follows faucet_store_watch and turns each change of a bookkeeping key
 * into its event as it happens.  The watch takes over from the poller only
 * once it is in place (after a last poll, so nothing between the two is
 * missed); when its stream breaks, polling resumes from a new baseline and
 * every client is told to reload, since changes may have gone unseen, and
 * the watch is tried again a second later.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mhd.h"

#include "serve.h"

#define SERVE_EVENTS_RING 1024
#define POLL_MIN_MS 1000
#define POLL_MAX_MS 30000
#define POLL_DUTY 100
#define HEARTBEAT_MS 10000
#define WATCH_RETRY_MS 1000

typedef struct {
	unsigned long long seq;
	char *text; /* "id: N\nevent: T\ndata: {...}\n\n" */
} ev;

typedef struct client {
	struct MHD_Connection *conn;
	unsigned long long next; /* seq of the next event to send */
	int suspended, heartbeat, reset;
	struct client *prev, *nextc;
} client;

typedef struct {
	char *key;
	uint64_t hash;
} seen;

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t thread;
	int started, stopping;
	faucet_store *store;
	ev ring[SERVE_EVENTS_RING];
	unsigned long long seq; /* of the newest event; 0 none */
	client *clients;
	size_t nclients, nconnecting;
	seen *last;
	size_t nlast;
	int have_baseline;
	pthread_t watcher;
	int watcher_started;
	int watching; /* the store's watch is in place: no polling */
	unsigned long long polls, watch_starts;
} E = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static uint64_t fnv(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ULL;
	}
	return h;
}

static const char *kind_of(const char *key)
{
	size_t n = strlen(key);

	if (n > 12 && strcmp(key + n - 12, "::__status__") == 0)
		return "run";
	if (n > 11 && strcmp(key + n - 11, "::__lease__") == 0)
		return strstr(key, "::backfill::") ? "unit" : "lease";
	if (strstr(key, "::__backfill__::") != NULL)
		return "backfill";
	return NULL;
}

static int collect_key(const char *key, void *arg)
{
	faucet_strarray *keys = arg;

	if (kind_of(key) != NULL && faucet__strarray_append(keys, key) != 0)
		return 1;
	return 0;
}

/* Add an event (E.mu held). */
static void add_event(const char *kind, const char *key, const char *change)
{
	faucet_buf b = FAUCET_BUF_INIT;
	unsigned long long seq = E.seq + 1;
	const char *sep = strstr(key, "::");
	ev *slot = &E.ring[seq % SERVE_EVENTS_RING];

	(void)faucet__buf_printf(&b, "id: %llu\nevent: %s\ndata: {", seq, kind);
	cli_jw_member(&b, "kind", 1);
	faucet__json_string(&b, kind);
	cli_jw_member(&b, "key", 0);
	faucet__json_string(&b, key);
	cli_jw_member(&b, "pipeline", 0);
	{
		char *p = faucet__strndup(key, sep ? (size_t)(sep - key) : strlen(key));

		faucet__json_string(&b, p ? p : "");
		free(p);
	}
	cli_jw_member(&b, "change", 0);
	faucet__json_string(&b, change);
	(void)faucet__buf_puts(&b, "}\n\n");
	if (b.failed) {
		faucet__buf_dispose(&b);
		return;
	}
	free(slot->text);
	slot->text = faucet__buf_detach(&b);
	slot->seq = seq;
	E.seq = seq;
}

static int seen_cmp(const void *a, const void *b)
{
	return strcmp(((const seen *)a)->key, ((const seen *)b)->key);
}

static void free_seen(seen *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(s[i].key);
	free(s);
}

/* One poll: read, compare with the last, queue the differences. */
static void poll_once(void)
{
	faucet_strarray keys = {NULL, 0};
	faucet_value **values = NULL;
	seen *now = NULL;
	size_t n = 0, i, j;

	pthread_mutex_lock(&E.mu);
	E.polls++;
	pthread_mutex_unlock(&E.mu);

	if (faucet_store_scan(E.store, "", collect_key, &keys) < 0 ||
	    (keys.count && (values = calloc(keys.count, sizeof(*values))) == NULL) ||
	    (keys.count && (now = calloc(keys.count, sizeof(*now))) == NULL) ||
	    (keys.count && faucet_store_get_many(E.store, (const char *const *)keys.strings, keys.count,
						 values) != 0)) {
		serve_count_store_error();
		goto done;
	}
	for (i = 0; i < keys.count; i++) {
		if (values[i] == NULL)
			continue;
		now[n].key = keys.strings[i];
		keys.strings[i] = NULL;
		now[n].hash = fnv(faucet_value_json(values[i]), faucet_value_len(values[i]));
		n++;
	}
	if (n > 1)
		qsort(now, n, sizeof(*now), seen_cmp);
	pthread_mutex_lock(&E.mu);
	if (E.have_baseline) {
		size_t before = (size_t)E.seq;

		for (i = 0, j = 0; i < n || j < E.nlast;) {
			int c = i == n ? 1 : j == E.nlast ? -1 : strcmp(now[i].key, E.last[j].key);

			if (c < 0) {
				add_event(kind_of(now[i].key), now[i].key, "added");
				i++;
			} else if (c > 0) {
				add_event(kind_of(E.last[j].key), E.last[j].key, "removed");
				j++;
			} else {
				if (now[i].hash != E.last[j].hash)
					add_event(kind_of(now[i].key), now[i].key, "changed");
				i++;
				j++;
			}
		}
		if ((size_t)E.seq != before)
			pthread_cond_broadcast(&E.cv);
	}
	free_seen(E.last, E.nlast);
	E.last = now;
	E.nlast = n;
	E.have_baseline = 1;
	now = NULL;
	n = 0;
	pthread_mutex_unlock(&E.mu);
done:
	if (values != NULL)
		for (i = 0; i < keys.count; i++)
			faucet_value_free(values[i]);
	free(values);
	free_seen(now, n);
	faucet_strarray_dispose(&keys);
}

/* Resume the clients waiting (E.mu held); heartbeat: they send a comment. */
static void wake(int heartbeat)
{
	for (client *c = E.clients; c != NULL; c = c->nextc) {
		if (!c->suspended)
			continue;
		if (heartbeat)
			c->heartbeat = 1;
		c->suspended = 0;
		MHD_resume_connection(c->conn);
	}
}

static long long mono_ms(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The wait before the next poll, given what the last one took: at least a
 * second, and at least POLL_DUTY times the poll, so that a store too large
 * to read every second costs a listened-to server under 1% of a core. */
static long long next_poll_wait_ms(long long took_ms)
{
	long long w = took_ms * POLL_DUTY;

	return w < POLL_MIN_MS ? POLL_MIN_MS : w > POLL_MAX_MS ? POLL_MAX_MS : w;
}

/* Wait on E.cv (E.mu held) until `ms` milliseconds from now at most. */
static void wait_ms(long long ms)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)(ms / 1000);
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	(void)pthread_cond_timedwait(&E.cv, &E.mu, &ts);
}

static void *poller(void *arg)
{
	unsigned long long last_seq = 0;
	long long next_poll = mono_ms() + POLL_MIN_MS, next_beat = next_poll + HEARTBEAT_MS;

	(void)arg;
	pthread_mutex_lock(&E.mu);
	while (!E.stopping) {
		long long now = mono_ms(), due = next_poll < next_beat ? next_poll : next_beat;

		if (due > now) {
			wait_ms(due - now);
			continue;
		}
		if (E.nclients == 0) {
			/* Nobody listens: no polling, and the baseline goes stale -
			 * unless a client is taking it to connect. */
			if (E.nconnecting == 0)
				E.have_baseline = 0;
			next_poll = now + POLL_MIN_MS;
			next_beat = next_poll + HEARTBEAT_MS;
			continue;
		}
		if (E.watching) {
			next_poll = now + POLL_MIN_MS; /* the watch reports changes */
		} else if (now >= next_poll) {
			pthread_mutex_unlock(&E.mu);
			poll_once();
			pthread_mutex_lock(&E.mu);
			long long done = mono_ms();

			next_poll = done + next_poll_wait_ms(done - now);
			if (E.seq != last_seq) {
				last_seq = E.seq;
				wake(0);
				next_beat = mono_ms() + HEARTBEAT_MS;
			}
		}
		if (mono_ms() >= next_beat) {
			wake(1);
			next_beat = mono_ms() + HEARTBEAT_MS;
		}
	}
	pthread_mutex_unlock(&E.mu);
	return NULL;
}

/* ---- the store's watch ------------------------------------------------ */

static int on_watch(faucet_watch_event what, const char *key, void *arg)
{
	const char *kind = key != NULL ? kind_of(key) : NULL;
	int stop;

	(void)arg;
	if (what == FAUCET_WATCH_READY) {
		/* A last poll against the baseline, if anyone listens, covers
		 * what changed before the watch began; a change made since is
		 * then reported twice at most, never missed. */
		pthread_mutex_lock(&E.mu);
		if (E.have_baseline) {
			pthread_mutex_unlock(&E.mu);
			poll_once();
			pthread_mutex_lock(&E.mu);
		}
		E.watching = 1;
		E.watch_starts++;
		wake(0);
		pthread_mutex_unlock(&E.mu);
		return 0;
	}
	pthread_mutex_lock(&E.mu);
	stop = E.stopping;
	if (!stop && kind != NULL && what != FAUCET_WATCH_TICK) {
		add_event(kind, key,
			  what == FAUCET_WATCH_ADDED ? "added"
			  : what == FAUCET_WATCH_REMOVED ? "removed" : "changed");
		pthread_cond_broadcast(&E.cv);
		wake(0);
	}
	pthread_mutex_unlock(&E.mu);
	return stop;
}

/* The watch lost (E.mu held): polling resumes from a new baseline, and
 * every client reloads, since what changed meanwhile went unseen. */
static void watch_lost(void)
{
	if (!E.watching)
		return;
	E.watching = 0;
	E.have_baseline = 0;
	for (client *c = E.clients; c != NULL; c = c->nextc)
		c->reset = 1;
	wake(0);
}

static void *watcher(void *arg)
{
	(void)arg;
	for (;;) {
		int rc = faucet_store_watch(E.store, "", on_watch, NULL);

		pthread_mutex_lock(&E.mu);
		watch_lost();
		if (rc == FAUCET_EUNSUPPORTED || E.stopping) {
			pthread_mutex_unlock(&E.mu);
			return NULL;
		}
		serve_count_store_error();
		wait_ms(WATCH_RETRY_MS);
		if (E.stopping) {
			pthread_mutex_unlock(&E.mu);
			return NULL;
		}
		pthread_mutex_unlock(&E.mu);
	}
}

int serve_events_start(faucet_store *s)
{
	E.store = s;
	E.stopping = 0;
	if (pthread_create(&E.thread, NULL, poller, NULL) != 0)
		return faucet_error_set(FAUCET_ERROR, "cannot start the event poller");
	E.started = 1;
	if (pthread_create(&E.watcher, NULL, watcher, NULL) != 0) {
		serve_events_stop();
		return faucet_error_set(FAUCET_ERROR, "cannot start the store's watcher");
	}
	E.watcher_started = 1;
	return 0;
}

void serve_events_metrics(faucet_buf *b)
{
	pthread_mutex_lock(&E.mu);
	(void)faucet__buf_printf(b,
			     "# HELP faucet_serve_event_polls_total Reads of the store's bookkeeping "
			     "for /v1/events.\n"
			     "# TYPE faucet_serve_event_polls_total counter\n"
			     "faucet_serve_event_polls_total %llu\n"
			     "# HELP faucet_serve_watch_active Whether the store's watch reports its "
			     "changes (then it is not polled).\n"
			     "# TYPE faucet_serve_watch_active gauge\n"
			     "faucet_serve_watch_active %d\n"
			     "# HELP faucet_serve_watch_starts_total Times the store's watch was put "
			     "in place.\n"
			     "# TYPE faucet_serve_watch_starts_total counter\n"
			     "faucet_serve_watch_starts_total %llu\n",
			     E.polls, E.watching, E.watch_starts);
	pthread_mutex_unlock(&E.mu);
}

void serve_events_end_streams(void)
{
	pthread_mutex_lock(&E.mu);
	E.stopping = 1;
	wake(0);
	pthread_cond_broadcast(&E.cv);
	pthread_mutex_unlock(&E.mu);
}

void serve_events_stop(void)
{
	serve_events_end_streams();
	if (E.started)
		(void)pthread_join(E.thread, NULL);
	E.started = 0;
	if (E.watcher_started)
		(void)pthread_join(E.watcher, NULL);
	E.watcher_started = 0;
	free_seen(E.last, E.nlast);
	E.last = NULL;
	E.nlast = 0;
	for (size_t i = 0; i < SERVE_EVENTS_RING; i++) {
		free(E.ring[i].text);
		E.ring[i].text = NULL;
	}
}

static ssize_t reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	client *c = cls;
	ssize_t n = 0;

	(void)pos;
	pthread_mutex_lock(&E.mu);
	if (E.stopping) {
		pthread_mutex_unlock(&E.mu);
		return MHD_CONTENT_READER_END_OF_STREAM;
	}
	if (c->reset || (E.seq >= SERVE_EVENTS_RING && c->next <= E.seq - SERVE_EVENTS_RING)) {
		static const char reset[] = "event: reset\ndata: {}\n\n";

		c->reset = 0;
		c->next = E.seq + 1;
		memcpy(buf, reset, sizeof(reset) - 1);
		n = (ssize_t)(sizeof(reset) - 1);
	}
	while (c->next <= E.seq) {
		const ev *e = &E.ring[c->next % SERVE_EVENTS_RING];
		size_t len = e->text ? strlen(e->text) : 0;

		if ((size_t)n + len > max)
			break;
		memcpy(buf + n, e->text, len);
		n += (ssize_t)len;
		c->next++;
	}
	if (n == 0 && c->heartbeat) {
		static const char beat[] = ": keep-alive\n\n";

		memcpy(buf, beat, sizeof(beat) - 1);
		n = (ssize_t)(sizeof(beat) - 1);
	}
	c->heartbeat = 0;
	if (n == 0) {
		c->suspended = 1;
		MHD_suspend_connection(c->conn);
	}
	pthread_mutex_unlock(&E.mu);
	return n;
}

static void reader_done(void *cls)
{
	client *c = cls;

	pthread_mutex_lock(&E.mu);
	if (c->prev)
		c->prev->nextc = c->nextc;
	else
		E.clients = c->nextc;
	if (c->nextc)
		c->nextc->prev = c->prev;
	E.nclients--;
	pthread_mutex_unlock(&E.mu);
	free(c);
}

/* The response of GET /v1/events for `conn` (NULL when out of memory). */
struct MHD_Response *serve_events_response(struct MHD_Connection *conn)
{
	client *c = faucet__calloc(1, sizeof(*c));
	struct MHD_Response *r;
	static const char hello[] = ": faucet events\n\n";

	if (c == NULL)
		return NULL;
	c->conn = conn;
	/* The first listener takes the baseline now, so a change made right
	 * after it connected is an event, not part of the baseline.  Counted
	 * as connecting meanwhile, so that the poller, seeing no client, does
	 * not drop that baseline before this one is added. */
	pthread_mutex_lock(&E.mu);
	E.nconnecting++;
	{
		int need = !E.have_baseline && !E.watching;

		pthread_mutex_unlock(&E.mu);
		if (need)
			poll_once();
	}
	r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, reader, c, reader_done);
	pthread_mutex_lock(&E.mu);
	E.nconnecting--;
	if (r == NULL) {
		pthread_mutex_unlock(&E.mu);
		free(c);
		return NULL;
	}
	c->next = E.seq + 1;
	c->heartbeat = 1; /* a first line at once, so the client knows it is connected */
	c->nextc = E.clients;
	if (E.clients)
		E.clients->prev = c;
	E.clients = c;
	E.nclients++;
	pthread_mutex_unlock(&E.mu);
	(void)hello;
	return r;
}
