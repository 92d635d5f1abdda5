/*
 * file_store.h - what the file state store's four sources share (internal
 * to libfaucet, not installed).
 *
 * file.c is the store: temp names, the advisory locks (a key's, and the
 * writers' lock every write shares), the root directory, reading, the disk
 * encoding, writing, the listing's sort, the backend slots, the
 * encrypted-store marker, open and free.  Three concerns live
 * in files of their own: file_legacy.c (renaming the files earlier
 * releases named otherwise, and the directory walk the listing shares with
 * it), file_batch.c (put_many and compare_and_put_batch) and file_doctor.c
 * (the doctor probes).  The tests' hooks are in file_internal.h, not
 * here.
 */
#ifndef FAUCET_FILE_STORE_H
#define FAUCET_FILE_STORE_H

#include <dirent.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <faucet/sys/store_backend.h>

#include "crypto/envelope.h"
#include "stores/file_names.h"

/* Room for "{root}/{name}" in messages; a longer root is cut (the message
 * only). */
#define PATH_CAP (PATH_MAX + FILE_NAME_CAP)

/* The hidden file that marks a store encrypted (file.c's encrypted-store
 * marker section says why it exists). */
#define STORE_MARKER ".faucet-encrypted"

/* The writers' lock every write holds shared and a compare-and-put batch
 * exclusive, and the gate a writer passes to take it (file.c, "The
 * writers' gate"). */
#define WRITERS_LOCK ".faucet-writers.lock"
#define WRITERS_GATE ".faucet-writers.gate"

typedef struct {
	faucet_store_backend base;
	char *root;               /* as configured, without trailing slashes */
	atomic_int dirfd;         /* the open root, -1 until first needed */
	/* dirfd's device and inode, read at open (under dir_lock): a get that
	 * misses compares them with the root path's (one stat, not two). */
	unsigned long long root_dev, root_ino;
	pthread_mutex_t dir_lock; /* opening or replacing dirfd */
	int *retired;             /* replaced root descriptors, closed at free */
	size_t nretired;
	atomic_int migrated;      /* legacy names renamed (or nothing to do) */
	atomic_int fold_case;     /* -1 unknown, 1 the root ignores case, 0 not */
	pthread_mutex_t migrate_lock;
	faucet_keyring *keyring; /* NULL = plaintext; else every write seals */
	atomic_int marked;        /* the encrypted-store marker is known to exist */
} file_store;

/* The temp name of one write: doc/design.md §3.3's
 * "{stem}.{32-hex random per process}.{counter}.{kind}.tmp". */
typedef struct {
	const char *stem;
	const char *kind;
} temp_spec;

/* The keys a listing found, in readdir order (file.c sorts them). */
typedef struct key_list key_list;

/* ---- file.c ---- */

/* "{stem}{suffix}" into out[FILE_NAME_CAP]; both are short and known. */
void faucet_file__name_from_stem(char *out, const char *stem, const char *suffix);

/* "{root}/{name}" into out[PATH_CAP], for messages. */
void faucet_file__path_of(const file_store *fs, const char *name, char *out);

/* Whether stem[0..len) is a hashed stem exactly as faucet_file__stem makes
 * one: an escaped prefix, '~', 64 lower-case hex digits. */
int faucet_file__hashed_stem_ok(const char *stem, size_t len);

/* The root's descriptor in *dfd, opened (and with `create`, made) on first
 * use; without `create`, a missing root gives *dfd = -1 and rc 0. */
int faucet_file__root_get(file_store *fs, int create, int *dfd);

/* The value of `key` from its file `name` (*out NULL when there is none).
 * `verified` is NULL, or get_many's flag that the root was checked once. */
int faucet_file__read_entry(file_store *fs, const char *key, const char *name, int *verified,
			    faucet_value **out);

/* A durable write's temp namer (faucet_durable_target, faucet_durable_item):
 * a fresh temp name for the temp_spec `arg`. */
int faucet_file__temp_namer(void *arg, char *out, size_t cap);

/* Read a small file (a sidecar) under dfd into buf[cap]; 0 with *len set,
 * or -1 with errno (ENOENT: absent; EFBIG: longer than cap - 1). */
int faucet_file__read_small(int dfd, const char *name, char *buf, size_t cap, size_t *len);

/* Make "{stem}.key" hold `key`, durably, before a hashed stem's value is
 * written (a no-op when it does already). */
int faucet_file__ensure_sidecar(file_store *fs, int *dfd, const char *stem, const char *key);

/* Add a copy of key[0..len) to a listing's keys. */
int faucet_file__key_list_push(key_list *l, const char *key, size_t len);

/* The current stem of `key` into stem[FILE_STEM_MAX + 1] (its length in
 * *len unless len is NULL); 0, or the error of a long key's SHA-256. */
int faucet_file__key_stem(const char *key, char *stem, size_t *len);

/* What a put checks and encodes before its write (the key's legacy file,
 * its name, the encrypted-store rules, its bytes, its sidecar). */
int faucet_file__prepare_put(file_store *fs, int *dfd, const char *key,
			     const faucet_value *value, int marker_seen, char *stem, char *name,
			     const char **bytes, size_t *len, char **owned);

/* 1 when the store's marker is there under dfd (or cannot be ruled out). */
int faucet_file__store_is_marked(int dfd);

/* The error of a write without the key to an encrypted store. */
int faucet_file__keyless_write_refused(const file_store *fs);

/* Enter the writers' lock under the root *dfd (followed when it was
 * replaced, and made again only with `create`: else *fd_out -1, rc 0, as
 * there is nothing to write), shared or `exclusive` (a compare-and-put
 * batch): closing *fd_out leaves it (file.c, "The writers' gate"). */
int faucet_file__writers_enter(file_store *fs, int *dfd, int create, int exclusive,
			       int *fd_out);

/* Whether `key` holds `expected` (NULL: absent) now: *holds.  Its legacy
 * file settled first.  `verified` as for faucet_file__read_entry: a batch
 * asks whether the root was replaced on its first miss only. */
int faucet_file__entry_holds(file_store *fs, int *dfd, const char *key,
			     const faucet_value *expected, int *verified, int *holds);

/* put's write of one value, without the writers' lock (the caller holds
 * it). */
int faucet_file__store_value(file_store *fs, const char *key, const faucet_value *value);

/* A put in the writers' lock (the caller holds it): under the key's lock
 * when the key has a lock file (design §3.3). */
int faucet_file__put_entered(file_store *fs, const char *key, const faucet_value *value);

/* Whether `key` has a lock file under the root dfd: a plain batch, in the
 * writers' lock, writes such a key alone under its lock. */
int faucet_file__has_lock_file(int dfd, const char *key);

/* delete's removal of one key under its lock, without the writers' lock;
 * without `sync` the directory is left for the caller to sync.  *removed
 * when a file went away. */
int faucet_file__remove_key(file_store *fs, const char *key, int sync, int *removed);

/* fsync the root directory dfd. */
int faucet_file__sync_root(const file_store *fs, int dfd);

/* ---- file_legacy.c ---- */

/* If `name` is a value file, its key into key[FILE_KEY_CAP] and the key's
 * length (0 otherwise); *legacy (unless NULL): whether the name is legacy. */
size_t faucet_file__classify_entry(int dfd, const char *name, size_t name_len, char *key,
				   int *legacy);

/* Whether `name` under dfd is a symlink, for filesystems whose readdir
 * gives no type. */
int faucet_file__entry_is_symlink(int dfd, const char *name);

/* Walk the directory `d` once: keys starting with `prefix` to `keys`, names
 * of legacy files to `legacy` (each when not NULL). */
int faucet_file__scan_dir(const file_store *fs, DIR *d, const char *prefix, key_list *keys,
			  faucet_strarray *legacy);

/* Rename each legacy file in `legacy` to its current name (or drop it when
 * the current one exists). */
int faucet_file__migrate_names(file_store *fs, int dfd, const faucet_strarray *legacy);

/* A second descriptor of the root dfd as a directory stream for readdir. */
int faucet_file__open_dir_stream(const file_store *fs, int dfd, DIR **out);

/* Before an operation on `key`: move its legacy file, if it has one, to the
 * current name (the whole root once on a filesystem that ignores case). */
int faucet_file__settle_legacy(file_store *fs, int *dfd, const char *key);

/* ---- file_batch.c ---- */

/* The put_many slot: entries[0..count) written in groups, one data barrier
 * per group; a failure leaves a prefix of *written entries written. */
int faucet_file__put_many(faucet_store_backend *b, const faucet_entry *entries, size_t count,
			  size_t *written, size_t *unknown_from);

/* The compare_and_put_batch slot: every key compared, then all written or
 * none, in the writers' lock held exclusive; the first entry is durable
 * before any other is written (a run puts its marker part first). */
int faucet_file__compare_and_put_batch(faucet_store_backend *b,
				       const faucet_store_guard *entries, size_t n,
				       int *written);

/* ---- file_doctor.c ---- */

/* The check slot: the sentinel round trip, then the walk's probes (values,
 * symlinks, temp files of dead writers; FAUCET_CHECK_REPAIR removes those). */
int faucet_file__check(faucet_store_backend *b, const faucet_check_context *ctx,
		       faucet_check_report **out);

#endif
