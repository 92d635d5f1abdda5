/*
 * durable.h - the one durable-write routine of libfaucet (internal).
 *
 * Everything faucet writes as a whole file - a file store's value or key
 * sidecar, the store's marker, `export -o` and `--metrics-file` through
 * faucet_write_file - goes through faucet__durable_replace(): a temp file under an unpredictable name
 * (O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC, mode 0600), written, fsynced,
 * renamed over the final name, and the directory fsynced.  While it writes,
 * the writer holds flock(LOCK_EX) on its temp file, so that a repair can
 * tell a live writer's temp file from a dead one's (faucet__temp_is_orphan).
 */
#ifndef FAUCET_DURABLE_H
#define FAUCET_DURABLE_H

#include <stddef.h>

/* Make a fresh temp name for one write into out[cap]: 0 or an error code. */
typedef int (*faucet_temp_namer)(void *arg, char *out, size_t cap);

typedef struct {
	int dirfd;             /* the directory that holds `name` */
	const char *name;      /* the final name under dirfd (no '/') */
	const char *display;   /* the final file's path as messages show it */
	const char *what;      /* what it is in messages: "state file", ... */
	faucet_temp_namer namer; /* NULL: "{name}.{32 random hex}.tmp" */
	void *namer_arg;
	/* Optional: called once when the temp file cannot be created because
	 * the directory is gone (ENOENT).  Returns 0 after putting a fresh
	 * descriptor in *dirfd (the write is retried), 1 to give up, or an
	 * error code. */
	int (*reopen)(void *arg, int *dirfd);
	void *reopen_arg;
} faucet_durable_target;

/* Replace t->name under t->dirfd with bytes[0..len), durably.  Returns 0
 * (the new content is in place and survives a crash); FAUCET_EUNKNOWN when
 * the rename happened but the directory could not be synced (the new
 * content is in place but may not survive a crash); or another error code,
 * and then the old file is untouched and no temp file is left. */
int faucet__durable_replace(faucet_durable_target *t, const void *bytes, size_t len);

/* Most guards of one faucet__durable_replace_guarded. */
#define FAUCET_DURABLE_GUARDS_MAX 4

/* Calls of faucet__durable_replace_guarded into its caller (either may be
 * NULL).  `fn`: once every guard is renamed, before the directory sync
 * that makes them durable - a change of the directory made here (an
 * unlink) is made durable by that same sync.  `keep_last`: once the guards
 * are durable, right before `last` is renamed; 0 leaves `last` (and
 * `then`) unwritten, and the call returns 0 with the guards done. */
typedef struct {
	void (*fn)(void *arg);
	void *arg;
	int (*keep_last)(void *arg);
} faucet_durable_hook;

/* A file of the guarded write's directory that follows `last`: written
 * with the others (the one syncfs covers its data) and renamed right after
 * `last`, before the directory sync that makes `last` durable.  It is
 * never in place without `last` (metadata persists in the order it was
 * issued), and costs no barrier of its own.  `done` (out) says whether it
 * was renamed; when it was not, the write of `last` stands and the caller
 * writes this file some other way. */
typedef struct {
	faucet_durable_target *target;
	const void *bytes;
	size_t len;
	int done;
} faucet_durable_then;

/* Replace the files guards[0..n) and `last` of one directory, every guard
 * durable before `last` changes: all temp files written, one syncfs for
 * their data, the guards renamed in order, `hook` called (NULL: none) and
 * the directory synced, then `last` renamed (and `then`'s file, when not
 * NULL) and the directory synced (a single guard: three barriers instead
 * of the four of two faucet__durable_replace calls).  *guards_done says
 * whether every guard is in place; errors as faucet__durable_replace's
 * (FAUCET_EUNKNOWN also when only some guards were renamed), and `last` is
 * untouched unless every guard is durably in place. */
int faucet__durable_replace_guarded(faucet_durable_target *guards, const void *const *bytes,
				    const size_t *lens, size_t n, faucet_durable_target *last,
				    const void *last_bytes, size_t last_len,
				    const faucet_durable_hook *hook, faucet_durable_then *then,
				    int *guards_done);

/* One file of a durable batch. */
typedef struct {
	const char *name;        /* the final name under the batch's directory */
	const char *display;     /* its path for messages */
	faucet_temp_namer namer; /* as in faucet_durable_target (NULL: default) */
	void *namer_arg;
	const void *bytes;
	size_t len;
} faucet_durable_item;

/* Most files of one group (each holds an open, locked or unnamed file
 * until it is named). */
#define FAUCET_DURABLE_BATCH_MAX 1024
/* How many items a group should hold here: FAUCET_DURABLE_BATCH_MAX, or an
 * eighth of the process's descriptor limit when that is less (at least
 * 16) - a stream holds two groups open.  Fewer, larger groups pay fewer
 * syncfs barriers. */
size_t faucet__durable_batch_size(void);
/* Tests only: make faucet__durable_batch_size() return n (0 restores the
 * computed size), so a test can drive a stream of many small groups. */
void faucet__durable_test_batch_size(size_t n);

/*
 * A batch of files of one directory, written as a stream of groups, with
 * one data barrier per group instead of an fsync per file: each group's
 * files are written, one syncfs of the directory's filesystem makes their
 * data durable, then each is named (renamed or linked over its final name)
 * in order and the directory is fsynced once.  The crash guarantees of
 * faucet__durable_replace hold for each file (old or new content, never
 * torn; new once its group is reported committed); the batch as a whole is
 * not atomic.  While a group that another follows is committed on a
 * committer thread, the caller prepares and adds the next one - the disk's
 * wait for one group overlaps the writing of the next.  What lands is a
 * prefix of the items, in order: a group is named only after the one
 * before it is committed, and nothing after a failed group is named.
 */
typedef struct faucet_durable_stream faucet_durable_stream;

/* Start a stream into dirfd, of groups of at most group_max items (1 ..
 * FAUCET_DURABLE_BATCH_MAX); "what" names the files in messages, and it
 * and dirfd must outlive the stream.  0, FAUCET_EINVALID or FAUCET_ENOMEM. */
int faucet__durable_stream_open(int dirfd, const char *what, size_t group_max,
				faucet_durable_stream **out);

/* Create and write the files of items[0..count) now and commit them: in
 * the background when `more` says another group follows, else before this
 * returns.  *accepted says how many leading items were taken (fewer when
 * descriptors ran out: add the rest again).  The items' names, displays
 * and namers must stay valid until the next add or the close returns;
 * their bytes only until this call returns.  Returns 0, or the first
 * failure - this group's, or the previous group's commit (then this group
 * is dropped); after a failure, only close. */
int faucet__durable_stream_add(faucet_durable_stream *s, const faucet_durable_item *items,
			       size_t count, int more, size_t *accepted);

/* Wait for the last group and free the stream (NULL is a no-op).
 * *committed: how many leading items of the whole stream are in place
 * (durably, but for those from *unknown_from on, whose directory sync
 * failed); items after them are untouched and no temp file is left.
 * Returns 0, or the stream's first failure: its code (FAUCET_EUNKNOWN when
 * a directory sync failed) with its message kept. */
int faucet__durable_stream_close(faucet_durable_stream *s, size_t *committed,
				 size_t *unknown_from);

/* faucet_write_file (faucet/common.h) writes the files the command
 * produces outside a store (`export -o`, metrics): a new or regular target
 * through faucet__durable_replace(), any other written through. */

/* Whether the temp file `name` under dirfd belongs to no live writer: 1
 * when nobody holds its lock (a writer that died left it), 0 when a writer
 * holds it or it is gone, or an error code.  With `remove`, an orphan is
 * unlinked while its lock is held, so a writer can never lose a file it
 * has just created.  *bytes and *mtime (may be NULL) receive its size and
 * modification time. */
int faucet__temp_is_orphan(int dirfd, const char *name, int remove, long long *bytes,
			   long long *mtime);

#endif
