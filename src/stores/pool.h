/*
 * pool.h - a bounded pool of connections shared by the server-backed stores
 * (SQLite, PostgreSQL, Redis, etcd).  Not installed.
 *
 * A caller takes a connection for one operation and gives it back.  At most
 * `max` connections exist at once; a caller that finds them all in use waits
 * on a condition variable.  Connections are opened lazily (the first
 * operation, not the store's open call, reaches the server), so a store
 * whose server is down still opens and `faucet doctor` can report why.
 *
 * Reconnection: a connection given back as broken is closed, and so is every
 * idle one (they talked to the same server, which has most likely gone away
 * too); the next caller opens a fresh one.  Before an idle connection is
 * handed out, the optional `alive` callback may reject it.
 *
 * fork(): a child must never talk over its parent's connections - the two
 * processes would share each socket and read each other's replies.  Every
 * pool is registered with a pthread_atfork handler: before the fork it
 * takes each pool's lock (so no other thread is half-way through the
 * bookkeeping), and in the child it marks each pool as inherited and gives
 * it a fresh condition variable (the parent's waiters do not exist there).
 * The child's first acquire (or faucet__pool_free) drops every inherited
 * idle connection with the `abandon` callback, which must not disturb the
 * parent's session, and the child opens connections of its own.  The
 * hot path costs nothing: the mark is read under the lock acquire takes
 * anyway (a getpid() per operation is a real system call since glibc 2.25,
 * measured at 2.5 us here).  Connections that other threads of the parent
 * had taken at the fork are simply forgotten by the child (their memory
 * stays allocated there); a connection taken before the fork must not be
 * given back in the child.  A child made without the fork handlers
 * (_Fork, a raw clone) must not use a pool made before it.
 */
#ifndef FAUCET_STORES_POOL_H
#define FAUCET_STORES_POOL_H

#include <stddef.h>

typedef struct faucet_pool faucet_pool;

typedef struct {
	/* Open one connection; sets the last error and returns a FAUCET_E*
	 * code on failure. */
	int (*connect)(void *owner, void **conn);
	/* Close a connection. */
	void (*disconnect)(void *conn);
	/* Optional: whether an idle connection still looks usable (cheap, no
	 * round trip).  NULL = always. */
	int (*alive)(void *conn);
	/* Optional: whether a connection that just ran an operation is broken
	 * and must not be reused (used by faucet__pool_run).  NULL = never. */
	int (*broken)(void *conn);
	/* Optional: drop a connection inherited across fork() without
	 * disturbing the parent, which still uses it: send the server nothing
	 * (no goodbye, no shutdown of the shared socket) and release only
	 * this process's resources.  NULL = `disconnect` is safe for that. */
	void (*abandon)(void *conn);
} faucet_pool_ops;

int faucet__pool_new(faucet_pool **out, const faucet_pool_ops *ops, void *owner, size_t max);

/* Take a connection, opening one when none is idle and fewer than `max`
 * exist, else waiting for one.  *fresh (may be NULL) says whether it was
 * opened by this call. */
int faucet__pool_acquire(faucet_pool *p, void **conn, int *fresh);

/* Give a connection back; `broken` closes it and every idle connection. */
void faucet__pool_release(faucet_pool *p, void *conn, int broken);

/* Run `fn` on a pooled connection and give it back.  A server restart
 * closes every idle connection at once and only their next use finds out,
 * so when `fn` fails on a connection that the `broken` callback condemns,
 * and that connection was not opened for this call, an `idempotent`
 * operation is run once more on a fresh connection.  A non-idempotent one
 * (a compare-and-put) never is: after a broken connection we cannot know
 * whether it landed, and a second try could report it as not written.
 * When the first try's outcome was unknown (FAUCET_EUNKNOWN) and the retry
 * fails too, the result stays FAUCET_EUNKNOWN: the first try may have been
 * applied whatever stopped the second. */
int faucet__pool_run(faucet_pool *p, int (*fn)(void *conn, void *ctx), void *ctx, int idempotent);

/* For `alive` callbacks of network connections: whether socket fd is open
 * and has nothing to read.  An idle connection is owed no data, so a
 * readable socket means the server is closing it (EOF after a restart). */
int faucet__pool_socket_quiet(int fd);

/* For `abandon` callbacks: make descriptor fd, a socket this process shares
 * with its parent, refer to /dev/null instead (dup2, atomic), so that the
 * client library's close sequence that follows writes nothing to the
 * parent's connection and closes only this process's descriptor.  Returns
 * 0, or -1 when /dev/null cannot be opened - then the caller must leave the
 * connection alone (leak it) rather than close it normally. */
int faucet__pool_detach_socket(int fd);

/* Close every connection (abandon them in a forked child that inherited
 * them).  No connection may be in use. */
void faucet__pool_free(faucet_pool *p);

#endif
