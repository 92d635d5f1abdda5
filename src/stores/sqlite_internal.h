/*
 * sqlite_internal.h - test hooks of the SQLite store (not installed, not
 * part of the API).
 *
 * The durability tests need two things the public API rightly hides: to run
 * the store on a VFS of their own (one that records every write and sync and
 * replays them as a power cut would leave the disk), and to look at each
 * pooled connection's settings.
 */
#ifndef FAUCET_SQLITE_INTERNAL_H
#define FAUCET_SQLITE_INTERNAL_H

#include <sqlite3.h>
#include <faucet/store.h>

/* How many connections one store keeps open at most. */
#define FAUCET_SQLITE_POOL_SIZE 5

typedef struct faucet_sqlite_store faucet_sqlite_store;

/* faucet__store_open_sqlite with the SQLite VFS named `vfs` (NULL = the
 * default one, which the store uses otherwise).  *handle (may be NULL) is
 * the backend, valid until the store is freed. */
int faucet__store_open_sqlite_vfs(faucet_store **out, const char *path, const char *vfs,
				  faucet_sqlite_store **handle);

/* Run fn on one pooled connection (opening one when none is idle) while
 * holding it; returns fn's result, or the error of taking a connection. */
int faucet__sqlite_with_connection(faucet_sqlite_store *s, int (*fn)(sqlite3 *db, void *ctx),
				   void *ctx);

/* Wait at most `ms` for a database locked by another connection, in
 * connections opened from now on (0 = the store's own 10 s again). */
void faucet__sqlite_set_busy_timeout_ms(int ms);

#endif
