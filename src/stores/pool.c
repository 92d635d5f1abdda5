/*
 * pool.c - the bounded connection pool of the server-backed stores.
 *
 * The mutex guards only the bookkeeping (the idle stack and the count of
 * open connections).  Opening and closing connections - network round trips
 * that can take a connect timeout - happen outside it, so one slow connect
 * never stalls callers that could use an idle connection.  The idle list is
 * a stack: the most recently used connection is handed out first, which
 * keeps a lightly loaded store on one warm connection.
 *
 * fork(): the pools form a list that a pthread_atfork handler walks (see
 * pool.h).  Lock order: pools_lock, then a pool's lock; nothing that holds
 * a pool's lock takes pools_lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"
#include "stores/pool.h"

struct faucet_pool {
	pthread_mutex_t lock;
	pthread_cond_t freed; /* signalled when a connection is given back or closed */
	faucet_pool_ops ops;
	void *owner;
	size_t max;
	size_t open; /* connections that exist or are being opened */
	void **idle;
	size_t nidle;
	/* Set in a forked child (under no lock: the child runs one thread
	 * then); the next acquire or free drops the inherited connections. */
	int inherited;
	int fork_failed; /* the child could not renew the condition variable */
	faucet_pool *prev, *next; /* in `pools` */
};

/* ---- fork ------------------------------------------------------------- */

static pthread_mutex_t pools_lock = PTHREAD_MUTEX_INITIALIZER;
static faucet_pool *pools; /* every live pool */
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static int atfork_rc;

/* Before fork: no pool's bookkeeping is half-done in another thread, and
 * the list stays as it is. */
static void pools_before_fork(void)
{
	pthread_mutex_lock(&pools_lock);
	for (faucet_pool *p = pools; p != NULL; p = p->next)
		pthread_mutex_lock(&p->lock);
}

static void pools_after_fork_parent(void)
{
	for (faucet_pool *p = pools; p != NULL; p = p->next)
		pthread_mutex_unlock(&p->lock);
	pthread_mutex_unlock(&pools_lock);
}

/* In the child: every pool's connections are its parent's.  The condition
 * variable may count waiters that are threads of the parent; a fresh one
 * forgets them (initialising it again is what the C library does with its
 * own state after fork; no thread of the child can be waiting on it). */
static void pools_after_fork_child(void)
{
	for (faucet_pool *p = pools; p != NULL; p = p->next) {
		p->inherited = 1;
		if (pthread_cond_init(&p->freed, NULL) != 0)
			p->fork_failed = 1;
		pthread_mutex_unlock(&p->lock);
	}
	pthread_mutex_unlock(&pools_lock);
}

static void register_fork_handler(void)
{
	atfork_rc = pthread_atfork(pools_before_fork, pools_after_fork_parent,
				   pools_after_fork_child);
}

static void drop_conn(faucet_pool *p, void *conn, int inherited)
{
	if (inherited && p->ops.abandon != NULL)
		p->ops.abandon(conn);
	else
		p->ops.disconnect(conn);
}

/* In a forked child, under p->lock: abandon the parent's idle connections
 * and forget the ones its other threads had taken.  Abandoning sends the
 * server nothing, so it is quick enough to do under the lock (and it runs
 * once per fork). */
static void drop_inherited(faucet_pool *p)
{
	for (size_t i = 0; i < p->nidle; i++)
		drop_conn(p, p->idle[i], 1);
	p->nidle = 0;
	p->open = 0;
	p->inherited = 0;
}

int faucet__pool_detach_socket(int fd)
{
	int null, rc;

	if (fd < 0)
		return 0;
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null < 0)
		return -1;
	do
		rc = dup2(null, fd);
	while (rc < 0 && errno == EINTR);
	(void)close(null);
	if (rc < 0)
		return -1;
	/* dup2 clears close-on-exec; the descriptor lives until the client
	 * library closes it, which should not leak it into an exec'd program. */
	(void)fcntl(fd, F_SETFD, FD_CLOEXEC);
	return 0;
}

int faucet__pool_new(faucet_pool **out, const faucet_pool_ops *ops, void *owner, size_t max)
{
	faucet_pool *p;

	*out = NULL;
	if (max == 0)
		max = 1;
	p = faucet__calloc(1, sizeof(*p));
	if (p == NULL)
		return FAUCET_ENOMEM;
	p->idle = faucet__calloc(max, sizeof(*p->idle));
	if (p->idle == NULL) {
		free(p);
		return FAUCET_ENOMEM;
	}
	if (pthread_mutex_init(&p->lock, NULL) != 0) {
		free(p->idle);
		free(p);
		return faucet_error_set(FAUCET_ENOMEM, "cannot create a connection pool lock");
	}
	if (pthread_cond_init(&p->freed, NULL) != 0) {
		pthread_mutex_destroy(&p->lock);
		free(p->idle);
		free(p);
		return faucet_error_set(FAUCET_ENOMEM, "cannot create a connection pool lock");
	}
	p->ops = *ops;
	p->owner = owner;
	p->max = max;
	(void)pthread_once(&atfork_once, register_fork_handler);
	if (atfork_rc != 0) {
		pthread_cond_destroy(&p->freed);
		pthread_mutex_destroy(&p->lock);
		free(p->idle);
		free(p);
		return faucet__error_os(FAUCET_ERROR, atfork_rc,
					"cannot register the connection pool's fork handler");
	}
	pthread_mutex_lock(&pools_lock);
	p->next = pools;
	if (pools != NULL)
		pools->prev = p;
	pools = p;
	pthread_mutex_unlock(&pools_lock);
	*out = p;
	return 0;
}

/* Close a connection that the pool no longer counts (outside the lock). */
static void close_uncounted(faucet_pool *p, void *conn)
{
	if (conn != NULL)
		p->ops.disconnect(conn);
}

/* Give up a slot counted in p->open (after a failed connect or a close). */
static void drop_slot(faucet_pool *p)
{
	pthread_mutex_lock(&p->lock);
	p->open--;
	pthread_cond_signal(&p->freed);
	pthread_mutex_unlock(&p->lock);
}

int faucet__pool_acquire(faucet_pool *p, void **conn, int *fresh)
{
	int rc;

	*conn = NULL;
	if (fresh != NULL)
		*fresh = 0;
	for (;;) {
		void *c = NULL;

		pthread_mutex_lock(&p->lock);
		if (p->inherited)
			drop_inherited(p);
		if (p->fork_failed) {
			pthread_mutex_unlock(&p->lock);
			return faucet_error_set(FAUCET_ERROR,
						"the connection pool cannot be used after fork: its "
						"condition variable could not be renewed");
		}
		while (p->nidle == 0 && p->open >= p->max)
			pthread_cond_wait(&p->freed, &p->lock);
		if (p->nidle > 0)
			c = p->idle[--p->nidle];
		else
			p->open++; /* reserve a slot; the connect happens unlocked */
		pthread_mutex_unlock(&p->lock);

		if (c != NULL) {
			if (p->ops.alive == NULL || p->ops.alive(c)) {
				*conn = c;
				return 0;
			}
			/* Stale (the server closed it): replace it by a fresh one. */
			close_uncounted(p, c);
			drop_slot(p);
			continue;
		}
		rc = p->ops.connect(p->owner, &c);
		if (rc != 0) {
			drop_slot(p);
			return rc;
		}
		if (fresh != NULL)
			*fresh = 1;
		*conn = c;
		return 0;
	}
}

void faucet__pool_release(faucet_pool *p, void *conn, int broken)
{
	void **stale = NULL;
	size_t nstale = 0;

	if (conn == NULL)
		return;
	pthread_mutex_lock(&p->lock);
	if (p->inherited || p->nidle >= p->open) {
		/* Not one the pool counts: taken before a fork, given back in
		 * the child (which the callers never do).  Drop it rather than
		 * upset the counts. */
		pthread_mutex_unlock(&p->lock);
		drop_conn(p, conn, 1);
		return;
	}
	if (!broken) {
		p->idle[p->nidle++] = conn;
		pthread_cond_signal(&p->freed);
		pthread_mutex_unlock(&p->lock);
		return;
	}
	/* A broken connection usually means the server restarted or went away:
	 * the idle ones are just as dead, so close them all now rather than
	 * let each fail one future operation. */
	if (p->nidle > 0) {
		stale = malloc(p->nidle * sizeof(*stale));
		if (stale != NULL) {
			nstale = p->nidle;
			for (size_t i = 0; i < nstale; i++)
				stale[i] = p->idle[i];
			p->open -= nstale;
			p->nidle = 0;
		}
	}
	p->open--;
	pthread_cond_broadcast(&p->freed);
	pthread_mutex_unlock(&p->lock);

	p->ops.disconnect(conn);
	for (size_t i = 0; i < nstale; i++)
		p->ops.disconnect(stale[i]);
	free(stale);
}

void faucet__pool_free(faucet_pool *p)
{
	if (p == NULL)
		return;
	pthread_mutex_lock(&pools_lock);
	if (p->prev != NULL)
		p->prev->next = p->next;
	else
		pools = p->next;
	if (p->next != NULL)
		p->next->prev = p->prev;
	pthread_mutex_unlock(&pools_lock);
	for (size_t i = 0; i < p->nidle; i++)
		drop_conn(p, p->idle[i], p->inherited);
	free(p->idle);
	pthread_cond_destroy(&p->freed);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

/* The retry of a write whose outcome was unknown failed too: it is still
 * unknown whether the first try was applied, whatever the retry says. */
static int still_unknown(const char *first)
{
	const char *retry = faucet_error_last()->message;
	char *both = faucet__sprintf("%s (a retry on a new connection failed too: %s)",
				     first ? first : "outcome unknown", retry);

	if (both == NULL)
		return faucet_error_set(FAUCET_EUNKNOWN, "outcome unknown");
	(void)faucet_error_set(FAUCET_EUNKNOWN, "%s", both);
	free(both);
	return FAUCET_EUNKNOWN;
}

int faucet__pool_run(faucet_pool *p, int (*fn)(void *conn, void *ctx), void *ctx, int idempotent)
{
	char *unknown = NULL; /* the first try's message when its outcome is unknown */

	for (int attempt = 0;; attempt++) {
		void *conn;
		int fresh, broken = 0, rc;

		rc = faucet__pool_acquire(p, &conn, &fresh);
		if (rc == 0) {
			rc = fn(conn, ctx);
			broken = p->ops.broken != NULL && p->ops.broken(conn);
			faucet__pool_release(p, conn, broken);
		}
		if (rc != 0 && unknown != NULL)
			rc = still_unknown(unknown);
		if (rc == 0 || !broken || fresh || !idempotent || attempt > 0) {
			free(unknown);
			return rc;
		}
		/* Retried once: idempotent, on a connection that had gone stale. */
		if (rc == FAUCET_EUNKNOWN)
			unknown = faucet__strdup(faucet_error_last()->message);
	}
}

int faucet__pool_socket_quiet(int fd)
{
	struct pollfd pfd = {fd, POLLIN, 0};

	return fd >= 0 && poll(&pfd, 1, 0) == 0;
}
