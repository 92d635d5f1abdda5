/*
 * file_internal.h - test hooks of the file state store (not installed).
 *
 * The tests use these to look at what the public API hides (the temp names a
 * put uses, the per-key advisory lock) and to shorten the 10 s a
 * compare-and-put waits for a busy lock.  Library code other than the file
 * store's own sources (src/stores/file*.c) has no reason to include this
 * header; what those share among themselves is in file_store.h.
 */
#ifndef FAUCET_FILE_INTERNAL_H
#define FAUCET_FILE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "stores/file_names.h"

/* How long a lock is waited for by default: 10 s, polled every 10 ms. */
#define FILE_LOCK_WAIT_MS 10000u
#define FILE_LOCK_POLL_MS 10u

/* Change how long a busy lock is waited for (process-wide); 0 restores the
 * default. */
void faucet_file__set_lock_wait_ms(uint64_t ms);

/* Called (with `arg`) every time a lock attempt finds the lock held by
 * someone else, just before the waiter sleeps; NULL removes it.  Lets a test
 * know that a waiter has opened the lock file without sleeping to find out. */
typedef void (*faucet_file_lock_hook)(void *arg);
void faucet_file__set_lock_busy_hook(faucet_file_lock_hook hook, void *arg);

/* Called (with `arg`) by a compare-and-put batch once every key was
 * compared and found holding, before its first write, in the writers' lock;
 * NULL removes it.  Lets a test start a write that must wait for the batch
 * (file_batch.c). */
typedef void (*faucet_file_batch_hook)(void *arg);
void faucet_file__set_batch_hook(faucet_file_batch_hook hook, void *arg);

/* Take the exclusive lock on the lock file `name` under directory `dirfd`
 * (AT_FDCWD and a full path work too), creating it 0600 when missing.
 * `path` names it in messages.  On success *fd_out holds the lock; closing
 * it releases the lock. */
int faucet_file__lock(int dirfd, const char *name, const char *path, int *fd_out);

/* A fresh temp name "{stem}.{token}.{counter}.{kind}.tmp" for one write:
 * the token is 32 random hex digits drawn once per process (again in a
 * forked child), the counter is per process.  `cap` >= FILE_NAME_CAP. */
int faucet_file__temp_name(const char *stem, const char *kind, char *out, size_t cap);

/* Whether `name` is one faucet_file__temp_name could have made for a file
 * the store writes: "{stem}.{32 lower-case hex}.{decimal counter}.{kind}.tmp"
 * with kind "json" and a stem of a key (escaped, legacy or hashed), kind
 * "key" and a hashed stem (a sidecar), or kind "marker" and the encrypted
 * store's marker ".faucet-encrypted".  Nothing else is doctor's to remove. */
int faucet_file__is_temp_name(const char *name);

#endif
