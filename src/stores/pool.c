/*
 * pool.c - the bounded connection pool of the server-backed stores.
 *
 * The mutex guards only the bookkeeping (the idle stack and the count of
 * open connections).  Opening and closing connections - network round trips
 * that can take a connect timeout - happen outside it, so one slow connect
 * never stalls callers that could use an idle connection.  The idle list is
 * a stack: the most recently used connection is handed out first, which
 * keeps a lightly loaded store on one warm connection.
 */
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>

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
};

int faucet_pool_new(faucet_pool **out, const faucet_pool_ops *ops, void *owner, size_t max)
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

int faucet_pool_acquire(faucet_pool *p, void **conn, int *fresh)
{
	int rc;

	*conn = NULL;
	if (fresh != NULL)
		*fresh = 0;
	for (;;) {
		void *c = NULL;

		pthread_mutex_lock(&p->lock);
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

void faucet_pool_release(faucet_pool *p, void *conn, int broken)
{
	void **stale = NULL;
	size_t nstale = 0;

	if (conn == NULL)
		return;
	pthread_mutex_lock(&p->lock);
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

void faucet_pool_free(faucet_pool *p)
{
	if (p == NULL)
		return;
	for (size_t i = 0; i < p->nidle; i++)
		p->ops.disconnect(p->idle[i]);
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

int faucet_pool_run(faucet_pool *p, int (*fn)(void *conn, void *ctx), void *ctx, int idempotent)
{
	char *unknown = NULL; /* the first try's message when its outcome is unknown */

	for (int attempt = 0;; attempt++) {
		void *conn;
		int fresh, broken = 0, rc;

		rc = faucet_pool_acquire(p, &conn, &fresh);
		if (rc == 0) {
			rc = fn(conn, ctx);
			broken = p->ops.broken != NULL && p->ops.broken(conn);
			faucet_pool_release(p, conn, broken);
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

int faucet_pool_socket_quiet(int fd)
{
	struct pollfd pfd = {fd, POLLIN, 0};

	return fd >= 0 && poll(&pfd, 1, 0) == 0;
}
