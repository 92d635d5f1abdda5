/*
 * durable.c - the durable-write routine and the CLI's output files.
 *
 * faucet__durable_replace() is the only code in libfaucet that replaces a
 * whole file.  A crash at any instant leaves the old complete file or the
 * new complete file under the final name, never a mix, and once it returns
 * 0 the new file survives a crash.  Each step has its reason:
 *
 *  1. The temp file is created O_CREAT|O_EXCL|O_NOFOLLOW under a name no one
 *     can predict (the caller's name-maker, or 32 random hex digits).  With
 *     a predictable name, anyone who can write the directory could plant a
 *     symlink there and make us write through it (a root process
 *     overwriting /etc/shadow); with a shared name two writers would
 *     interleave their bytes and rename a torn file into place.  O_EXCL
 *     never opens an existing file, O_NOFOLLOW never a link.
 *  2. The writer holds flock(LOCK_EX) on its temp file until the file is
 *     renamed.  A writer that dies (SIGKILL, power loss) leaves an unlocked
 *     temp file; `doctor --repair` removes only those, never by age.
 *  3. fsync(temp) before the rename.  rename orders directory entries, not
 *     data blocks: without it a crash can leave the final name on an empty
 *     or partial file.
 *  4. renameat() over the final name, atomic for every reader.
 *  5. fsync(directory).  The rename lives in the directory; until that is
 *     synced a crash may bring the old file back after we said "written".
 *     When this last step fails the new content is in place but its
 *     durability is unknown, and the caller is told so (FAUCET_EUNKNOWN):
 *     claiming "not written" would be as wrong as claiming "durable".
 *
 * Every system call that changes or syncs the disk goes through sys.h's
 * table, so tests can make any of them fail.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "durable.h"
#include "sys.h"

/* Longest temp name we make: NAME_MAX on Linux filesystems. */
#define TEMP_NAME_CAP 256

static int default_namer(void *arg, char *out, size_t cap)
{
	char hex[33];
	int len, rc = faucet__random_hex(hex, 16);

	if (rc != 0)
		return rc;
	/* The final name is cut so that the temp name fits NAME_MAX. */
	len = snprintf(out, cap, "%.200s.%s.tmp", (const char *)arg, hex);
	if (len < 0 || (size_t)len >= cap)
		return faucet_error_set(FAUCET_ERROR, "temp file name for '%s' is too long",
					(const char *)arg);
	return 0;
}

/* The temp file's path for messages: the directory part of t->display
 * followed by the temp name. */
static void temp_display(const faucet_durable_target *t, const char *tmp, char *out, size_t cap)
{
	size_t dlen = strlen(t->display), nlen = strlen(t->name);
	int dir_len = 0;

	if (dlen >= nlen && strcmp(t->display + dlen - nlen, t->name) == 0)
		dir_len = (int)(dlen - nlen);
	(void)snprintf(out, cap, "%.*s%s", dir_len, t->display, tmp);
}

static int write_all(const faucet_sys *sys, int fd, const char *bytes, size_t len)
{
	while (len > 0) {
		ssize_t n = sys->write(fd, bytes, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		bytes += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Lock a temp file we just created and give it mode 0600.  A repair may have found it unlocked in
 * the instant before and removed it (it unlinks while holding the lock):
 * then the file has no name any more and *gone is set. */
static int lock_new_temp(const faucet_sys *sys, int fd, int *gone)
{
	struct stat st;

	while (sys->flock(fd, LOCK_EX) != 0) {
		if (errno != EINTR)
			return -1;
	}
	if (fstat(fd, &st) != 0)
		return -1;
	*gone = st.st_nlink == 0;
	/* Exactly 0600 whatever the umask (doc/design.md §5.3): a umask like
	 * 0277 leaves 0400.  Free in the usual case, where the fstat above
	 * shows 0600. */
	if ((st.st_mode & 07777) != 0600 && fchmod(fd, 0600) != 0)
		return -1;
	return 0;
}

/* Give up a temp file: unlinked before it is closed, so its lock is held
 * until the name is gone (a repair never removes a live writer's file). */
static void discard_temp(const faucet_sys *sys, int dirfd, const char *tmp, int fd)
{
	(void)sys->unlinkat(dirfd, tmp, 0);
	(void)sys->close(fd);
}

/* Create, lock and name the temp file: *fd_out, with its name in tmp. */
static int create_temp(faucet_durable_target *t, const faucet_sys *sys, char *tmp, int *fd_out)
{
	char shown[PATH_MAX + TEMP_NAME_CAP];
	faucet_temp_namer namer = t->namer != NULL ? t->namer : default_namer;
	void *arg = t->namer != NULL ? t->namer_arg : (void *)t->name;
	int reopened = 0, fd, err, gone = 0, rc;

	for (int attempt = 0;; attempt++) {
		rc = namer(arg, tmp, TEMP_NAME_CAP);
		if (rc != 0)
			return rc;
		fd = sys->openat(t->dirfd, tmp,
				 O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0) {
			if (lock_new_temp(sys, fd, &gone) != 0) {
				err = errno;
				discard_temp(sys, t->dirfd, tmp, fd);
				errno = err;
			} else if (gone && attempt < 3) {
				(void)sys->close(fd);
				continue;
			} else if (!gone) {
				*fd_out = fd;
				return 0;
			} else {
				(void)sys->close(fd);
				errno = ENOENT;
			}
		}
		err = errno;
		if (fd < 0 && err == ENOENT && !reopened && t->reopen != NULL) {
			reopened = 1;
			rc = t->reopen(t->reopen_arg, &t->dirfd);
			if (rc < 0)
				return rc;
			if (rc == 0)
				continue;
		}
		/* EEXIST cannot come from our own names (they are fresh): take
		 * another rather than touch a file someone else made. */
		if (fd < 0 && err == EEXIST && attempt < 3)
			continue;
		temp_display(t, tmp, shown, sizeof(shown));
		return faucet__error_os(FAUCET_EIO, err, "failed to create temp %s %s", t->what,
					shown);
	}
}

static int commit_temp(const faucet_sys *sys, faucet_durable_target *t, const char *tmp, int fd);

int faucet__durable_replace(faucet_durable_target *t, const void *bytes, size_t len)
{
	const faucet_sys *sys = faucet__sys();
	char tmp[TEMP_NAME_CAP], shown[PATH_MAX + TEMP_NAME_CAP];
	const char *step;
	int fd = -1, err, rc = create_temp(t, sys, tmp, &fd);

	if (rc != 0)
		return rc;
	if (write_all(sys, fd, bytes, len) != 0) {
		step = "write";
		goto temp_error;
	}
	if (sys->fsync(fd) != 0) {
		step = "fsync";
		goto temp_error;
	}
	return commit_temp(sys, t, tmp, fd);

temp_error:
	err = errno;
	discard_temp(sys, t->dirfd, tmp, fd);
	temp_display(t, tmp, shown, sizeof(shown));
	return faucet__error_os(FAUCET_EIO, err, "failed to %s temp %s %s", step, t->what, shown);
}

/* ---- files durable before another changes ---------------------------------- */

/* Commit a written, synced temp file: renamed while still open, so the lock
 * covers it for as long as it has its temp name (a repair never sees it
 * unlocked); closed (no write is pending after the sync, so a failing close
 * makes the outcome unsure); the directory synced. */
static int commit_temp(const faucet_sys *sys, faucet_durable_target *t, const char *tmp, int fd)
{
	int err;

	if (sys->renameat(t->dirfd, tmp, t->dirfd, t->name) != 0) {
		err = errno;
		discard_temp(sys, t->dirfd, tmp, fd);
		return faucet__error_os(FAUCET_EIO, err, "failed to commit %s %s", t->what,
					t->display);
	}
	if (sys->close(fd) != 0)
		return faucet__error_os(FAUCET_EUNKNOWN, errno,
					"%s %s was replaced, but closing it failed", t->what,
					t->display);
	if (sys->fsync(t->dirfd) != 0)
		return faucet__error_os(FAUCET_EUNKNOWN, errno,
					"%s %s was replaced, but its directory could not be synced "
					"(it may not survive a crash)", t->what, t->display);
	return 0;
}

/* Give up the temp files of guards[0..n) and of `last` (fds < 0 are
 * skipped). */
static void discard_group(const faucet_sys *sys, faucet_durable_target *guards,
			  char (*tmps)[TEMP_NAME_CAP], int *fds, size_t n,
			  faucet_durable_target *last, const char *last_tmp, int last_fd)
{
	if (last_fd >= 0)
		discard_temp(sys, last->dirfd, last_tmp, last_fd);
	for (size_t i = n; i-- > 0;)
		if (fds[i] >= 0)
			discard_temp(sys, guards[i].dirfd, tmps[i], fds[i]);
}

/* Name the guards' synced temp files, in order, then sync the directory
 * once.  *named counts the guards renamed; a failure after the first
 * leaves those in place, their durability unknown (FAUCET_EUNKNOWN). */
static int commit_guards(const faucet_sys *sys, faucet_durable_target *guards,
			 char (*tmps)[TEMP_NAME_CAP], int *fds, size_t n,
			 const faucet_durable_hook *hook, size_t *named)
{
	int err;

	for (*named = 0; *named < n; (*named)++) {
		faucet_durable_target *g = &guards[*named];

		if (sys->renameat(g->dirfd, tmps[*named], g->dirfd, g->name) != 0) {
			err = errno;
			discard_temp(sys, g->dirfd, tmps[*named], fds[*named]);
			fds[*named] = -1;
			return faucet__error_os(*named > 0 ? FAUCET_EUNKNOWN : FAUCET_EIO, err,
						"failed to commit %s %s", g->what, g->display);
		}
		err = sys->close(fds[*named]);
		fds[*named] = -1;
		if (err != 0)
			return faucet__error_os(FAUCET_EUNKNOWN, errno,
						"%s %s was replaced, but closing it failed", g->what,
						g->display);
	}
	if (hook != NULL && hook->fn != NULL)
		hook->fn(hook->arg);
	if (sys->fsync(guards[0].dirfd) != 0)
		return faucet__error_os(FAUCET_EUNKNOWN, errno,
					"%s %s was replaced, but its directory could not be synced "
					"(it may not survive a crash)", guards[0].what,
					guards[0].display);
	return 0;
}

/* Commit `last` as commit_temp does, with `then`'s file (its temp `ttmp`
 * open on tfd) renamed right after it, before the one directory sync. */
static int commit_with_then(const faucet_sys *sys, faucet_durable_target *last, const char *tmp,
			    int fd, faucet_durable_then *then, const char *ttmp, int tfd)
{
	faucet_durable_target *t = then->target;

	if (sys->renameat(last->dirfd, tmp, last->dirfd, last->name) != 0) {
		int err = errno;

		discard_temp(sys, t->dirfd, ttmp, tfd);
		discard_temp(sys, last->dirfd, tmp, fd);
		return faucet__error_os(FAUCET_EIO, err, "failed to commit %s %s", last->what,
					last->display);
	}
	/* Its data was synced with the rest: a failing close loses nothing. */
	then->done = sys->renameat(t->dirfd, ttmp, t->dirfd, t->name) == 0;
	if (then->done)
		(void)sys->close(tfd);
	else
		discard_temp(sys, t->dirfd, ttmp, tfd);
	if (sys->close(fd) != 0)
		return faucet__error_os(FAUCET_EUNKNOWN, errno,
					"%s %s was replaced, but closing it failed", last->what,
					last->display);
	if (sys->fsync(last->dirfd) != 0)
		return faucet__error_os(FAUCET_EUNKNOWN, errno,
					"%s %s was replaced, but its directory could not be synced "
					"(it may not survive a crash)", last->what, last->display);
	return 0;
}

int faucet__durable_replace_guarded(faucet_durable_target *guards, const void *const *bytes,
				    const size_t *lens, size_t n, faucet_durable_target *last,
				    const void *last_bytes, size_t last_len,
				    const faucet_durable_hook *hook, faucet_durable_then *then,
				    int *guards_done)
{
	const faucet_sys *sys = faucet__sys();
	char tmps[FAUCET_DURABLE_GUARDS_MAX][TEMP_NAME_CAP], tmp[TEMP_NAME_CAP];
	char ttmp[TEMP_NAME_CAP], shown[PATH_MAX + TEMP_NAME_CAP];
	int fds[FAUCET_DURABLE_GUARDS_MAX], fd = -1, tfd = -1, err, rc;
	faucet_durable_target *failed = NULL;
	const char *step = "write", *failed_tmp = tmp;
	size_t made = 0, named = 0;

	*guards_done = 0;
	if (then != NULL)
		then->done = 0;
	if (n == 0 || n > FAUCET_DURABLE_GUARDS_MAX)
		return faucet_error_set(FAUCET_EINVALID, "a guarded write takes 1 to %d guards",
					FAUCET_DURABLE_GUARDS_MAX);
	for (; made < n; made++) {
		fds[made] = -1;
		/* create_temp may reopen the directory: every file follows. */
		guards[made].dirfd = guards[0].dirfd;
		if ((rc = create_temp(&guards[made], sys, tmps[made], &fds[made])) != 0)
			goto fail;
		guards[0].dirfd = guards[made].dirfd;
		if (write_all(sys, fds[made], bytes[made], lens[made]) != 0) {
			failed = &guards[made];
			failed_tmp = tmps[made];
			made++;
			goto temp_error;
		}
	}
	for (size_t i = 0; i < n; i++)
		guards[i].dirfd = guards[0].dirfd;
	last->dirfd = guards[0].dirfd;
	if ((rc = create_temp(last, sys, tmp, &fd)) != 0)
		goto fail;
	failed = last;
	if (write_all(sys, fd, last_bytes, last_len) != 0)
		goto temp_error;
	if (then != NULL) {
		then->target->dirfd = last->dirfd;
		if ((rc = create_temp(then->target, sys, ttmp, &tfd)) != 0)
			goto fail;
		if (write_all(sys, tfd, then->bytes, then->len) != 0) {
			failed = then->target;
			failed_tmp = ttmp;
			goto temp_error;
		}
	}
	/* One barrier for every file's data. */
	if (sys->syncfs(last->dirfd) != 0) {
		step = "sync";
		goto temp_error;
	}
	rc = commit_guards(sys, guards, tmps, fds, n, hook, &named);
	/* Every guard in place, maybe not durable: the last one must wait. */
	*guards_done = named == n;
	if (rc != 0) {
		if (tfd >= 0)
			discard_temp(sys, then->target->dirfd, ttmp, tfd);
		discard_group(sys, guards, tmps, fds, n, last, tmp, fd);
		return rc;
	}
	if (hook != NULL && hook->keep_last != NULL && !hook->keep_last(hook->arg)) {
		if (tfd >= 0)
			discard_temp(sys, then->target->dirfd, ttmp, tfd);
		discard_temp(sys, last->dirfd, tmp, fd);
		return 0;
	}
	if (then != NULL)
		return commit_with_then(sys, last, tmp, fd, then, ttmp, tfd);
	return commit_temp(sys, last, tmp, fd);

temp_error:
	err = errno;
	if (tfd >= 0)
		discard_temp(sys, then->target->dirfd, ttmp, tfd);
	discard_group(sys, guards, tmps, fds, made, last, tmp, fd);
	temp_display(failed, failed_tmp, shown, sizeof(shown));
	return faucet__error_os(FAUCET_EIO, err, "failed to %s temp %s %s", step, failed->what,
				shown);
fail:
	if (tfd >= 0)
		discard_temp(sys, then->target->dirfd, ttmp, tfd);
	discard_group(sys, guards, tmps, fds, made, last, tmp, fd);
	return rc;
}

/* ---- a batch of files with one barrier ------------------------------------ */

/*
 * A batch writes each file unnamed where it can: O_TMPFILE gives an inode
 * with no directory entry, and linkat() through /proc/self/fd names it once
 * its data is durable.  A new key then costs one directory insertion
 * instead of three (create the temp name, remove it, insert the final
 * one), and a writer that dies leaves no temp file behind - an unnamed
 * inode vanishes with its descriptor.  linkat never replaces a name: for a
 * key that exists, the file is linked under a locked temp name and renamed
 * over it, as a single replace does.  Filesystems without O_TMPFILE (or a
 * process without /proc) get named temp files from the start.
 */

/* One file of a batch between its creation and its commit. */
typedef struct {
	int fd;
	int named; /* it has the temp name tmp (else it is unnamed) */
	char tmp[TEMP_NAME_CAP];
} pending_file;

/* Close the files [from, to) of a batch; a named one is unlinked first, so
 * its lock covers it until the name is gone. */
static void drop_pending(const faucet_sys *sys, int dirfd, pending_file *p, size_t from,
			 size_t to)
{
	for (size_t i = from; i < to; i++) {
		if (p[i].named)
			(void)sys->unlinkat(dirfd, p[i].tmp, 0);
		(void)sys->close(p[i].fd);
	}
}

/* 1 when a new file made with mode 0600 gets exactly 0600: the umask has
 * no owner bit.  Read from /proc (umask() cannot be read without being
 * set, which would race with other threads); 0 when unknown. */
static int umask_keeps_0600(void)
{
	char buf[2048], *at;
	ssize_t n;
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	(void)close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	at = strstr(buf, "\nUmask:");
	return at != NULL && (strtol(at + 7, NULL, 8) & 0600) == 0;
}

/* An unnamed file in dirfd: 1 and *fd_out, 0 when the filesystem (or the
 * kernel) has no O_TMPFILE, -1 with errno on another failure. */
static int open_unnamed(const faucet_sys *sys, int dirfd, int exact_mode, int *fd_out)
{
	int fd = sys->openat(dirfd, ".", O_WRONLY | O_TMPFILE | O_CLOEXEC, 0600);

	if (fd < 0)
		return errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL ? 0 : -1;
	/* Exactly 0600 whatever the umask (doc/design.md §5.3), as
	 * lock_new_temp does. */
	if (!exact_mode && fchmod(fd, 0600) != 0) {
		int err = errno;
		(void)sys->close(fd);
		errno = err;
		return -1;
	}
	*fd_out = fd;
	return 1;
}

/* Create the file of one item: unnamed where the filesystem can (*unnamed
 * is cleared for the rest of the batch when it cannot), else under a
 * locked temp name.  *err receives errno of a failure. */
static int create_pending(faucet_durable_target *t, const faucet_sys *sys, int *unnamed,
			  int exact_mode, pending_file *p, int *err)
{
	int got = *unnamed ? open_unnamed(sys, t->dirfd, exact_mode, &p->fd) : 0, rc;

	if (got < 0) {
		*err = errno;
		return faucet__error_os(FAUCET_EIO, *err, "failed to create a %s for %s", t->what,
					t->display);
	}
	if (got > 0)
		return 0;
	*unnamed = 0;
	rc = create_temp(t, sys, p->tmp, &p->fd);
	*err = errno;
	p->named = rc == 0;
	return rc;
}

/* Give the unnamed file p its final name: linked when the name is free,
 * else linked under a locked temp name and renamed over it. */
static int name_unnamed(const faucet_sys *sys, int dirfd, pending_file *p,
			const faucet_durable_item *item)
{
	char proc[48];
	faucet_temp_namer namer = item->namer != NULL ? item->namer : default_namer;
	void *arg = item->namer != NULL ? item->namer_arg : (void *)item->name;

	(void)snprintf(proc, sizeof(proc), "/proc/self/fd/%d", p->fd);
	if (sys->linkat(AT_FDCWD, proc, dirfd, item->name, AT_SYMLINK_FOLLOW) == 0)
		return 0;
	if (errno != EEXIST)
		return -1;
	/* Locked before it has a name: a repair never sees it unlocked. */
	while (sys->flock(p->fd, LOCK_EX) != 0) {
		if (errno != EINTR)
			return -1;
	}
	for (int attempt = 0;; attempt++) {
		if (namer(arg, p->tmp, TEMP_NAME_CAP) != 0) {
			errno = ENAMETOOLONG;
			return -1;
		}
		if (sys->linkat(AT_FDCWD, proc, dirfd, p->tmp, AT_SYMLINK_FOLLOW) == 0)
			break;
		if (errno != EEXIST || attempt >= 3)
			return -1;
	}
	p->named = 1;
	if (sys->renameat(dirfd, p->tmp, dirfd, item->name) != 0)
		return -1;
	p->named = 0;
	return 0;
}

static atomic_size_t test_batch_size;

void faucet__durable_test_batch_size(size_t n)
{
	atomic_store(&test_batch_size, n < FAUCET_DURABLE_BATCH_MAX ? n : FAUCET_DURABLE_BATCH_MAX);
}

size_t faucet__durable_batch_size(void)
{
	struct rlimit rl;
	size_t n = atomic_load(&test_batch_size);

	if (n != 0)
		return n;
	n = FAUCET_DURABLE_BATCH_MAX;

	/* An eighth of the descriptors this process may open, so that the two
	 * groups a stream holds open take at most a quarter: the rest stay for
	 * the program that embeds us. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur / 8 < n)
		n = (size_t)(rl.rlim_cur / 8);
	return n < 16 ? 16 : n;
}

/*
 * The steps of faucet__durable_replace, reordered so that the slow one
 * happens once per group: fsync of a small new file costs a journal commit
 * (about half a millisecond) and a group of a thousand would pay a
 * thousand.  syncfs flushes all of them in one go - and, on a busy
 * filesystem, other processes' dirty data too, which is the price of not
 * counting commits.  The ordering that makes each file safe is unchanged:
 * its data is durable before it gets its final name, and the names are
 * durable before the group is reported committed.
 *
 * A group is created (files made and written) and then committed (data
 * synced, files named, directory synced).  The commit touches neither the
 * error slot nor the items' bytes, so a stream can run it on another
 * thread; it records what failed and group_report() words it.
 */
enum { COMMIT_OK, COMMIT_SYNC_DATA, COMMIT_NAME };

typedef struct {
	int dirfd;
	const char *what;
	const faucet_durable_item *items;
	pending_file *p; /* room for the stream's group_max */
	size_t n;        /* files created and written, all to commit */
	/* The commit's outcome. */
	size_t committed; /* leading files named */
	int failed_step;  /* COMMIT_* */
	int err;          /* errno of the failed step */
	int dir_err;      /* errno of a failed directory sync, else 0 */
} durable_group;

/* Create and write the files of items[0..count): 0 with g->n of them made
 * (fewer than count when descriptors ran out after the first), or an error
 * code (message set) with none left behind.  *err receives the errno of a
 * failed creation. */
static int group_create(durable_group *g, const faucet_durable_item *items, size_t count,
			int exact_mode, int *unnamed, int *err)
{
	const faucet_sys *sys = faucet__sys();
	char shown[PATH_MAX + TEMP_NAME_CAP];
	size_t made = 0;
	int rc = 0;

	g->items = items;
	g->n = 0;
	*err = 0;
	for (; made < count; made++) {
		faucet_durable_target t = {g->dirfd, items[made].name, items[made].display,
					   g->what, items[made].namer, items[made].namer_arg,
					   NULL, NULL};

		rc = create_pending(&t, sys, unnamed, exact_mode, &g->p[made], err);
		/* Out of descriptors with some files made: commit those; the
		 * caller comes back for the rest. */
		if (rc != 0 && made > 0 && (*err == EMFILE || *err == ENFILE)) {
			rc = 0;
			break;
		}
		if (rc != 0)
			break;
		if (write_all(sys, g->p[made].fd, items[made].bytes, items[made].len) != 0) {
			int werr = errno;

			made++;
			if (g->p[made - 1].named)
				temp_display(&t, g->p[made - 1].tmp, shown, sizeof(shown));
			else
				(void)snprintf(shown, sizeof(shown), "for %s",
					       items[made - 1].display);
			rc = faucet__error_os(FAUCET_EIO, werr, "failed to write temp %s %s",
					      g->what, shown);
			break;
		}
	}
	if (rc != 0) {
		drop_pending(sys, g->dirfd, g->p, 0, made);
		return rc;
	}
	g->n = made;
	return 0;
}

/* Make the group's data durable, name its files in order, sync the
 * directory once.  Records the outcome in g; sets no error message. */
static void group_commit(durable_group *g)
{
	const faucet_sys *sys = faucet__sys();
	size_t i;

	g->committed = 0;
	g->failed_step = COMMIT_OK;
	g->dir_err = 0;
	if (sys->syncfs(g->dirfd) != 0) {
		g->failed_step = COMMIT_SYNC_DATA;
		g->err = errno;
		drop_pending(sys, g->dirfd, g->p, 0, g->n);
		return;
	}
	for (i = 0; i < g->n; i++) {
		pending_file *f = &g->p[i];
		int failed = f->named ? sys->renameat(g->dirfd, f->tmp, g->dirfd,
						      g->items[i].name) != 0
				      : name_unnamed(sys, g->dirfd, f, &g->items[i]) != 0;

		if (failed) {
			g->failed_step = COMMIT_NAME;
			g->err = errno;
			break;
		}
		f->named = 0;
		/* Closed once named: the lock has nothing left to cover.  Its
		 * data was synced, so close has nothing to report. */
		(void)sys->close(f->fd);
	}
	drop_pending(sys, g->dirfd, g->p, i, g->n);
	g->committed = i;
	if (i > 0 && sys->fsync(g->dirfd) != 0)
		g->dir_err = errno != 0 ? errno : EIO;
}

/* The committed group's outcome as a return code, with its message. */
static int group_report(const durable_group *g)
{
	const char *first = g->items[0].display;
	int rc = 0;

	if (g->failed_step == COMMIT_SYNC_DATA)
		return faucet__error_os(FAUCET_EIO, g->err, "failed to sync the temp %ss of %s",
					g->what, first);
	if (g->failed_step == COMMIT_NAME)
		rc = faucet__error_os(FAUCET_EIO, g->err, "failed to commit %s %s", g->what,
				      g->items[g->committed].display);
	if (g->dir_err == 0)
		return rc;
	if (rc != 0) {
		(void)faucet__error_wrap("and the files renamed before it may not survive a "
					 "crash (the directory could not be synced)");
		return FAUCET_EUNKNOWN;
	}
	return faucet__error_os(FAUCET_EUNKNOWN, g->dir_err,
				"%zu %ss (the first %s) were replaced, but their directory could "
				"not be synced (they may not survive a crash)",
				g->committed, g->what, first);
}

/* Whether files can be made unnamed here (O_TMPFILE named through /proc). */
static int proc_fd_usable(void)
{
	return access("/proc/self/fd", X_OK) == 0;
}

/* ---- a stream of groups: the next written while the last commits --------- */

/*
 * syncfs waits for the disk: for a million small files, about a quarter of
 * an import's time was spent there with the CPU idle.  A stream overlaps
 * it with useful work: while a committer thread syncs and names group k,
 * the caller's thread creates and writes group k+1 (unnamed files, or
 * locked temp names, that no reader sees).  Group k+1 is named only after
 * group k is committed, so what lands is still a prefix of the items, in
 * order, and each file keeps faucet__durable_replace's guarantee.
 */
struct faucet_durable_stream {
	size_t group_max; /* items per group at most */
	int exact_mode, unnamed;
	durable_group groups[2];
	int next;        /* the group the next add fills */
	int busy;        /* groups[!next] is committing (or committed, unreported) */
	int threaded;    /* ... on `thread`, to be joined */
	pthread_t thread;
	size_t done;     /* items committed in the groups reported so far */
	size_t unknown_from;
	int rc;          /* the first failure reported, or 0 */
};

int faucet__durable_stream_open(int dirfd, const char *what, size_t group_max,
				faucet_durable_stream **out)
{
	faucet_durable_stream *s;

	*out = NULL;
	if (group_max == 0 || group_max > FAUCET_DURABLE_BATCH_MAX)
		return faucet_error_set(FAUCET_EINVALID, "durable groups of %zu files (1 to %d)",
					group_max, FAUCET_DURABLE_BATCH_MAX);
	if ((s = faucet__calloc(1, sizeof(*s))) == NULL)
		return FAUCET_ENOMEM;
	for (int i = 0; i < 2; i++) {
		s->groups[i].dirfd = dirfd;
		s->groups[i].what = what;
		s->groups[i].p = faucet__calloc(group_max, sizeof(pending_file));
		if (s->groups[i].p == NULL) {
			free(s->groups[0].p);
			free(s);
			return FAUCET_ENOMEM;
		}
	}
	s->group_max = group_max;
	s->exact_mode = umask_keeps_0600();
	s->unnamed = proc_fd_usable();
	*out = s;
	return 0;
}

static void *commit_thread(void *arg)
{
	group_commit(arg);
	return NULL;
}

/* Commit g: on the committer thread when another group follows (and a
 * thread can start), else here.  The thread blocks every signal: they stay
 * with the embedding program's threads. */
static void commit_start(faucet_durable_stream *s, durable_group *g, int more)
{
	sigset_t all, old;

	s->busy = 1;
	s->threaded = 0;
	(void)sigfillset(&all);
	if (more && pthread_sigmask(SIG_SETMASK, &all, &old) == 0) {
		s->threaded = pthread_create(&s->thread, NULL, commit_thread, g) == 0;
		(void)pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	if (!s->threaded)
		group_commit(g);
}

/* Wait for the committing group and account for it: its return code (its
 * message set). */
static int commit_settle(faucet_durable_stream *s)
{
	durable_group *g = &s->groups[!s->next];
	int rc;

	if (!s->busy)
		return 0;
	if (s->threaded)
		(void)pthread_join(s->thread, NULL);
	s->busy = s->threaded = 0;
	rc = group_report(g);
	s->unknown_from = rc == FAUCET_EUNKNOWN ? s->done : s->done + g->committed;
	s->done += g->committed;
	if (rc != 0)
		s->rc = rc;
	return rc;
}

int faucet__durable_stream_add(faucet_durable_stream *s, const faucet_durable_item *items,
			       size_t count, int more, size_t *accepted)
{
	durable_group *g = &s->groups[s->next];
	int rc, prev_rc, err;

	*accepted = 0;
	if (s->rc != 0)
		return s->rc;
	if (count == 0)
		return 0;
	if (count > s->group_max)
		return faucet_error_set(FAUCET_EINVALID, "durable group of %zu files (at most %zu)",
					count, s->group_max);
	rc = group_create(g, items, count, s->exact_mode, &s->unnamed, &err);
	/* Out of descriptors before the first file: the committing group
	 * holds them; wait for it and try again. */
	if (rc != 0 && (err == EMFILE || err == ENFILE) && s->busy) {
		if ((prev_rc = commit_settle(s)) != 0)
			return prev_rc;
		rc = group_create(g, items, count, s->exact_mode, &s->unnamed, &err);
	}
	prev_rc = commit_settle(s);
	if (prev_rc != 0) {
		/* Nothing after a failed group lands. */
		if (rc == 0)
			drop_pending(faucet__sys(), g->dirfd, g->p, 0, g->n);
		return prev_rc;
	}
	if (rc != 0)
		return s->rc = rc;
	commit_start(s, g, more);
	s->next = !s->next;
	*accepted = g->n;
	/* Committed here: reported at once, so the caller may reuse the
	 * items' storage. */
	return s->threaded ? 0 : commit_settle(s);
}

int faucet__durable_stream_close(faucet_durable_stream *s, size_t *committed,
				 size_t *unknown_from)
{
	int rc;

	if (s == NULL) {
		*committed = *unknown_from = 0;
		return 0;
	}
	rc = s->rc != 0 ? s->rc : commit_settle(s);
	*committed = s->done;
	*unknown_from = rc == FAUCET_EUNKNOWN ? s->unknown_from : s->done;
	free(s->groups[0].p);
	free(s->groups[1].p);
	free(s);
	return rc;
}

/* ---- files the CLI writes outside a store --------------------------------- */

/* Write through an existing non-regular file (a device, FIFO, socket, or a
 * symlink to anything), as `> path` in a shell would.  Such a target is the
 * operator's way of routing the output; replacing it would destroy it (a
 * root `export -o /dev/null` once turned /dev/null into a regular file). */
static int write_through(const char *path, const char *what, const void *bytes, size_t len)
{
	const faucet_sys *sys = faucet__sys();
	int fd = sys->openat(AT_FDCWD, path, O_WRONLY | O_TRUNC | O_NOCTTY | O_CLOEXEC, 0);

	if (fd < 0)
		return faucet__error_os(FAUCET_EIO, errno, "cannot open %s %s", what, path);
	if (write_all(sys, fd, bytes, len) != 0) {
		int err = errno;
		(void)sys->close(fd);
		return faucet__error_os(FAUCET_EIO, err, "cannot write %s %s", what, path);
	}
	/* A symlink may lead to a regular file: sync it.  Devices, pipes and
	 * sockets cannot be synced (EINVAL, EROFS) and need not be. */
	if (sys->fsync(fd) != 0 && errno != EINVAL && errno != EROFS && errno != ENOTSUP) {
		int err = errno;
		(void)sys->close(fd);
		return faucet__error_os(FAUCET_EIO, err, "cannot sync %s %s", what, path);
	}
	if (sys->close(fd) != 0)
		return faucet__error_os(FAUCET_EIO, errno, "cannot write %s %s", what, path);
	return 0;
}

int faucet_write_file(const char *path, const char *what, const void *bytes, size_t len)
{
	faucet_durable_target t;
	const char *slash;
	struct stat st;
	char *dir;
	int rc;

	if (what == NULL)
		what = "file";
	if (path == NULL || *path == '\0' || (bytes == NULL && len > 0))
		return faucet_error_set(FAUCET_EINVALID, "%s: no path or no data to write", what);
	if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode))
		return write_through(path, what, bytes, len);
	slash = strrchr(path, '/');
	if (slash != NULL && slash[1] == '\0')
		return faucet_error_set(FAUCET_EINVALID, "%s %s names a directory", what, path);
	if (slash == NULL)
		dir = faucet__strdup(".");
	else if (slash == path)
		dir = faucet__strdup("/");
	else
		dir = faucet__strndup(path, (size_t)(slash - path));
	if (dir == NULL)
		return FAUCET_ENOMEM;
	memset(&t, 0, sizeof(t));
	t.dirfd = faucet__sys()->openat(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (t.dirfd < 0) {
		rc = faucet__error_os(FAUCET_EIO, errno, "cannot open the directory of %s %s", what,
				      path);
		free(dir);
		return rc;
	}
	t.name = slash != NULL ? slash + 1 : path;
	t.display = path;
	t.what = what;
	rc = faucet__durable_replace(&t, bytes, len);
	(void)close(t.dirfd); /* read-only descriptor: nothing to lose */
	free(dir);
	return rc;
}

/* ---- orphaned temp files ---------------------------------------------------- */

int faucet__temp_is_orphan(int dirfd, const char *name, int remove, long long *bytes,
			   long long *mtime)
{
	const faucet_sys *sys = faucet__sys();
	struct stat st, named;
	int fd, rc = 0;

	/* O_NONBLOCK: a FIFO planted under a temp name must not hang us. */
	fd = sys->openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		return faucet__error_os(FAUCET_EIO, errno, "cannot open temp file %s", name);
	}
	if (fstat(fd, &st) != 0) {
		rc = faucet__error_os(FAUCET_EIO, errno, "cannot stat temp file %s", name);
		goto done;
	}
	if (!S_ISREG(st.st_mode))
		goto done; /* not a temp file of ours */
	if (sys->flock(fd, LOCK_EX | LOCK_NB) != 0) {
		if (errno != EWOULDBLOCK && errno != EINTR)
			rc = faucet__error_os(FAUCET_EIO, errno, "cannot lock temp file %s", name);
		goto done; /* a live writer holds it */
	}
	/* Locked by us now; it is an orphan if it still has its name. */
	if (fstat(fd, &st) != 0) {
		rc = faucet__error_os(FAUCET_EIO, errno, "cannot stat temp file %s", name);
		goto done;
	}
	if (st.st_nlink == 0 || fstatat(dirfd, name, &named, AT_SYMLINK_NOFOLLOW) != 0 ||
	    named.st_dev != st.st_dev || named.st_ino != st.st_ino)
		goto done;
	if (bytes != NULL)
		*bytes = (long long)st.st_size;
	if (mtime != NULL)
		*mtime = (long long)st.st_mtime;
	rc = 1;
	/* Unlinked while the lock is held: a writer that created this very
	 * file an instant ago waits for the lock, then sees it has no name. */
	if (remove && sys->unlinkat(dirfd, name, 0) != 0 && errno != ENOENT)
		rc = faucet__error_os(FAUCET_EIO, errno, "cannot remove temp file %s", name);
done:
	(void)sys->close(fd);
	return rc;
}
