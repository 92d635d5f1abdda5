/*
 * file.c - the file state store ("file:PATH"), faucet's embedded default.
 *
 * One "{stem}.json" file per key in a root directory, named and laid out
 * exactly as the original faucet does it (file_names.h), so either
 * implementation reads a directory the other wrote.  Four decisions shape
 * this file:
 *
 *  - Durability.  A put never changes a value file in place: it writes a
 *    temp file under a name no other writer can use, syncs it, renames it
 *    over "{stem}.json" and syncs the directory, through libfaucet's one
 *    durable-write routine (src/common/durable.c says why each step is
 *    needed).  A reader therefore sees the old value or the new one, never
 *    a torn one, and a put that returned survives a crash.  The calls that
 *    change or sync the disk go through the sys.h table, so tests can make
 *    them fail (the legacy migration's renameat2 is not in it yet).
 *
 *  - Nothing is followed.  Values, sidecars and lock files are opened
 *    O_NOFOLLOW and a symlink is never listed as a key: a link planted in
 *    the directory must not make us read or create a file elsewhere.
 *
 *  - No store-wide mutex.  Because temp names are unique per write, puts to
 *    different keys (and even to one key) run side by side, and their fsyncs
 *    overlap so the filesystem journal can commit them together; they share
 *    the writers' lock, which only a compare-and-put batch takes exclusive.
 *    Writes of a key a compare-and-put manages serialise through an OS
 *    advisory lock (flock) on "{stem}.json.lock"; it works across processes
 *    and the kernel releases it when its holder dies, so no stale-lock rule
 *    exists.
 *
 *  - The root stays open.  The store keeps an O_DIRECTORY descriptor of the
 *    root and reaches every file with openat()/renameat() relative to it, so
 *    a get or put does not resolve the root path again.  When an operation
 *    meets ENOENT and the root path now names another directory (it was
 *    removed, or removed and created again), the descriptor is reopened
 *    once.  A replaced descriptor is kept open until the store is freed, so
 *    a thread still using it never sees its number reused for another file.
 *
 * The legacy-name migration (file_legacy.c), batches (file_batch.c) and the
 * doctor probes (file_doctor.c) are files of their own; file_store.h is
 * what the four share.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "durable.h"
#include "sys.h"
#include "warning.h"
#include "values/value_internal.h"
#include "file_internal.h"
#include "file_store.h"
#include "crypto/envelope.h"
#include "store/open_internal.h"
#include <faucet/keys.h>

/* "{stem}{suffix}" into out[FILE_NAME_CAP]; both are short and known. */
void faucet_file__name_from_stem(char *out, const char *stem, const char *suffix)
{
	size_t stem_len = strlen(stem), suffix_len = strlen(suffix);

	memcpy(out, stem, stem_len);
	memcpy(out + stem_len, suffix, suffix_len + 1);
}

/* "{root}/{name}" into out[PATH_CAP], for messages. */
void faucet_file__path_of(const file_store *fs, const char *name, char *out)
{
	(void)snprintf(out, PATH_CAP, "%s/%s", fs->root, name);
}

/* ---- temp names ------------------------------------------------------
 *
 * A temp name is "{stem}.{token}.{counter}.{kind}.tmp".  The token is drawn
 * from the kernel's random source once per process; the counter tells this
 * process's writes apart.  The token must not come from the process id:
 * containers sharing a volume all run as pid 1, and two writers sharing a
 * temp name would interleave their bytes and rename a torn file into place.
 * A forked child inherits its parent's memory, so the fork handler below
 * makes it draw a token of its own.
 */

static pthread_mutex_t token_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int token_ready;
static char token[33];
static atomic_ullong temp_counter;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static int atfork_rc;

static void token_before_fork(void)
{
	(void)pthread_mutex_lock(&token_lock);
}

static void token_after_fork_parent(void)
{
	(void)pthread_mutex_unlock(&token_lock);
}

static void token_after_fork_child(void)
{
	atomic_store(&token_ready, 0);
	(void)pthread_mutex_unlock(&token_lock);
}

static void register_fork_handler(void)
{
	atfork_rc = pthread_atfork(token_before_fork, token_after_fork_parent,
				   token_after_fork_child);
}

static int process_token(const char **out)
{
	int rc = 0;

	(void)pthread_once(&atfork_once, register_fork_handler);
	if (atfork_rc != 0)
		return faucet__error_os(FAUCET_ERROR, atfork_rc,
					"cannot register the file store's fork handler");
	if (!atomic_load_explicit(&token_ready, memory_order_acquire)) {
		(void)pthread_mutex_lock(&token_lock);
		if (!atomic_load_explicit(&token_ready, memory_order_relaxed)) {
			rc = faucet__random_hex(token, 16);
			if (rc == 0)
				atomic_store_explicit(&token_ready, 1, memory_order_release);
		}
		(void)pthread_mutex_unlock(&token_lock);
	}
	*out = token;
	return rc;
}

int faucet_file__temp_name(const char *stem, const char *kind, char *out, size_t cap)
{
	const char *tok;
	unsigned long long n;
	int len, rc = process_token(&tok);

	if (rc != 0)
		return rc;
	n = atomic_fetch_add_explicit(&temp_counter, 1, memory_order_relaxed);
	len = snprintf(out, cap, "%s.%s.%llu.%s.tmp", stem, tok, n, kind);
	if (len < 0 || (size_t)len >= cap)
		return faucet_error_set(FAUCET_ERROR, "temp file name for '%s' is too long", stem);
	return 0;
}

/* The last dot-separated field of name[0..*len), taken off: *len becomes
 * the length before its dot.  NULL when there is no dot. */
static const char *last_field(const char *name, size_t *len, size_t *field_len)
{
	size_t i = *len;

	while (i > 0 && name[i - 1] != '.')
		i--;
	if (i == 0)
		return NULL;
	*field_len = *len - i;
	*len = i - 1;
	return name + i;
}

static int lower_hex_run(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
			return 0;
	}
	return 1;
}

/* A hashed stem exactly as faucet_file__stem makes one: an escaped prefix,
 * '~', the key's SHA-256 in 64 lower-case hex digits. */
int faucet_file__hashed_stem_ok(const char *stem, size_t len)
{
	const char *tilde = memchr(stem, '~', len);

	if (tilde == NULL || (size_t)(stem + len - tilde) != 65 || !lower_hex_run(tilde + 1, 64))
		return 0;
	for (const char *p = stem; p < tilde; p++) {
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || (*p >= 'A' && *p <= 'F') ||
		      *p == '_' || *p == '-' || *p == '.' || *p == '%'))
			return 0;
	}
	return 1;
}

int faucet_file__is_temp_name(const char *name)
{
	static const char marker[] = ".faucet-encrypted";
	size_t len = strlen(name), flen, stem_len;
	const char *kind, *counter, *tok;
	char key[FILE_KEY_CAP];

	if (len >= FILE_NAME_CAP || len <= 4 || strcmp(name + len - 4, ".tmp") != 0)
		return 0;
	len -= 4;
	if ((kind = last_field(name, &len, &flen)) == NULL)
		return 0;
	size_t kind_len = flen;
	if ((counter = last_field(name, &len, &flen)) == NULL || flen == 0 || flen > 20)
		return 0;
	for (size_t i = 0; i < flen; i++) {
		if (counter[i] < '0' || counter[i] > '9')
			return 0;
	}
	if (flen > 1 && counter[0] == '0')
		return 0; /* %llu writes no leading zero */
	if ((tok = last_field(name, &len, &flen)) == NULL || flen != 32 || !lower_hex_run(tok, 32))
		return 0;
	stem_len = len;
	if (stem_len == 0 || stem_len > FILE_STEM_MAX)
		return 0;
	if (kind_len == 6 && memcmp(kind, "marker", 6) == 0)
		return stem_len == sizeof(marker) - 1 && memcmp(name, marker, stem_len) == 0;
	if (name[0] == '.')
		return 0;
	if (kind_len == 3 && memcmp(kind, "key", 3) == 0)
		return faucet_file__hashed_stem_ok(name, stem_len);
	if (kind_len != 4 || memcmp(kind, "json", 4) != 0)
		return 0;
	if (faucet_file__stem_is_hashed(name, stem_len))
		return faucet_file__hashed_stem_ok(name, stem_len);
	return faucet_file__decode_stem(name, stem_len, key) != 0;
}

/* ---- the advisory lock -------------------------------------------------
 *
 * flock() locks belong to an open file description, so two opens of the
 * lock file - in two processes or two threads of one - exclude each other,
 * and the kernel drops the lock when the last descriptor closes, also when
 * the holder is killed.  delete unlinks the lock file while holding it; a
 * waiter that then wins the lock holds it on a file no path names any more,
 * while a newcomer could create and lock a fresh file at the same path.  So
 * after winning, the holder checks that the path still names its file, and
 * otherwise opens the path again and retries.
 */

static atomic_ullong lock_wait_ms;
static _Atomic(faucet_file_lock_hook) lock_busy_hook;
static _Atomic(void *) lock_busy_arg;

void faucet_file__set_lock_wait_ms(uint64_t ms)
{
	atomic_store(&lock_wait_ms, (unsigned long long)ms);
}

void faucet_file__set_lock_busy_hook(faucet_file_lock_hook hook, void *arg)
{
	atomic_store(&lock_busy_arg, arg);
	atomic_store(&lock_busy_hook, hook);
}

/* Give fd the mode `mode` when a umask (0277, say) took bits off it: a
 * lock file of 0400 could not be opened for writing by its owner again. */
static int fix_mode(int fd, mode_t mode)
{
	struct stat st;

	if (fstat(fd, &st) != 0)
		return -1;
	if ((st.st_mode & 07777) == mode)
		return 0;
	return fchmod(fd, mode);
}

/* What a lock file locks: a key (exclusive), or the store's writers' lock
 * and its gate (shared by every write, exclusive for a compare-and-put
 * batch: "The writers' gate" below). */
typedef enum { LOCK_KEY, LOCK_GATE_SHARED, LOCK_GATE_EXCLUSIVE } lock_kind;

/* Open the lock file, creating it when `make`; *open_err receives errno on
 * failure.  Without `make`, a lock file that does not exist is *fd_out -1,
 * rc 0 (and *open_err ENOENT). */
static int lock_open(int dirfd, const char *name, const char *path, int make, int *fd_out,
		     int *open_err)
{
	/* O_NOFOLLOW: a symlink planted at a lock name (-> /etc/nologin) would
	 * otherwise make us create or open a file anywhere. */
	int fd = faucet__sys()->openat(dirfd, name,
				       O_RDWR | (make ? O_CREAT : 0) | O_NOFOLLOW | O_CLOEXEC, 0600);

	*fd_out = -1;
	if (fd < 0) {
		*open_err = errno;
		if (errno == ENOENT && !make)
			return 0;
		if (errno == ELOOP)
			return faucet_error_set(FAUCET_ERROR,
						"state lock %s is a symbolic link; refusing to follow it",
						path);
		return faucet__error_os(FAUCET_EIO, errno, "failed to create state lock %s", path);
	}
	/* Best effort: a lock file another user created (a store shared with
	 * the original faucet) may not be ours to chmod, and its mode does not
	 * matter to a lock we already hold open. */
	(void)fix_mode(fd, 0600);
	*fd_out = fd;
	return 0;
}

/* 1 when `name` under dirfd is the file fd has open, 0 when it is another
 * file or none, or an error code. */
static int lock_names_file(int dirfd, const char *name, const char *path, int fd)
{
	struct stat held, named;

	if (fstat(fd, &held) != 0)
		return faucet__error_os(FAUCET_EIO, errno, "failed to stat state lock %s", path);
	if (fstatat(dirfd, name, &named, AT_SYMLINK_NOFOLLOW) != 0) {
		if (errno == ENOENT)
			return 0;
		return faucet__error_os(FAUCET_EIO, errno, "failed to stat state lock %s", path);
	}
	return held.st_dev == named.st_dev && held.st_ino == named.st_ino;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {0, (long)ms * 1000000L};

	/* An early wake-up (EINTR) only shortens one poll interval. */
	(void)nanosleep(&ts, NULL);
}

/* Take the lock of the file `name` (created when `make`; without it, a file
 * that does not exist is *fd_out -1, rc 0). */
static int lock_acquire(int dirfd, const char *name, const char *path, lock_kind kind, int make,
			int *fd_out, int *open_err)
{
	uint64_t wait = atomic_load(&lock_wait_ms);
	uint64_t started = faucet__now_ms();
	int fd = -1, rc, op = kind == LOCK_GATE_SHARED ? LOCK_SH : LOCK_EX;

	if (wait == 0)
		wait = FILE_LOCK_WAIT_MS;
	rc = lock_open(dirfd, name, path, make, &fd, open_err);
	while (rc == 0 && fd >= 0) {
		if (faucet__sys()->flock(fd, op | LOCK_NB) == 0) {
			int named = lock_names_file(dirfd, name, path, fd);
			if (named == 1) {
				*fd_out = fd;
				return 0;
			}
			(void)close(fd);
			fd = -1;
			rc = named < 0 ? named : lock_open(dirfd, name, path, make, &fd, open_err);
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno != EWOULDBLOCK) {
			rc = faucet__error_os(FAUCET_EIO, errno, "failed to lock state lock %s", path);
			break;
		}
		faucet_file_lock_hook hook = atomic_load(&lock_busy_hook);
		if (hook != NULL)
			hook(atomic_load(&lock_busy_arg));
		if (faucet__now_ms() - started >= wait) {
			/* Busy, not failed: the holder is alive and the
			 * same call may succeed later (faucet_error_retryable). */
			rc = faucet_error_set(FAUCET_EBUSY, "state lock %s is held by another writer",
					      path);
			break;
		}
		sleep_ms(FILE_LOCK_POLL_MS);
	}
	if (fd >= 0)
		(void)close(fd);
	return rc;
}

int faucet_file__lock(int dirfd, const char *name, const char *path, int *fd_out)
{
	int open_err = 0;

	*fd_out = -1;
	return lock_acquire(dirfd, name, path, LOCK_KEY, 1, fd_out, &open_err);
}

/* ---- the root directory ----------------------------------------------- */

/* Make a directory entry we just created durable: a new directory is an
 * entry in its parent, and until the parent is synced a crash may forget
 * it - together with every file later synced inside it. */
static int sync_parent_of(const char *dir)
{
	const char *slash = strrchr(dir, '/');
	char *parent;
	int fd, rc = 0;

	if (slash == NULL)
		parent = faucet__strdup(".");
	else if (slash == dir)
		parent = faucet__strdup("/");
	else
		parent = faucet__strndup(dir, (size_t)(slash - dir));
	if (parent == NULL)
		return FAUCET_ENOMEM;
	fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || faucet__sys()->fsync(fd) != 0)
		rc = faucet__error_os(FAUCET_EIO, errno, "failed to fsync state dir %s", parent);
	if (fd >= 0)
		(void)close(fd);
	free(parent);
	return rc;
}

/* mkdir -p the root, each new directory 0700 and durable in its parent. */
static int make_root(const file_store *fs)
{
	char *path = faucet__strdup(fs->root);
	int rc = 0;

	if (path == NULL)
		return FAUCET_ENOMEM;
	for (char *p = path + 1; rc == 0; p++) {
		int last = *p == '\0';
		if (*p != '/' && !last)
			continue;
		*p = '\0';
		/* chmod: a umask such as 0277 would leave 0500, a directory
		 * its owner cannot write (doc/design.md §5.3: 0700 whatever
		 * the umask). */
		if (faucet__sys()->mkdirat(AT_FDCWD, path, 0700) == 0) {
			if (chmod(path, 0700) != 0)
				rc = faucet__error_os(FAUCET_EIO, errno,
						      "failed to set the mode of state dir %s", path);
			else
				rc = sync_parent_of(path);
		}
		else if (errno != EEXIST)
			rc = faucet__error_os(FAUCET_EIO, errno, "failed to create state dir %s",
					      fs->root);
		if (last)
			break;
		*p = '/';
	}
	free(path);
	return rc;
}

/* Replace the root descriptor `stale` (-1: there is none yet) with a fresh
 * one.  Without `create`, a missing root gives *dfd = -1 and rc 0: nothing
 * is stored yet.  Another thread may have replaced it already; then its
 * descriptor is used. */
static int root_reopen(file_store *fs, int stale, int create, int *dfd)
{
	int fd, rc = 0;

	(void)pthread_mutex_lock(&fs->dir_lock);
	fd = atomic_load(&fs->dirfd);
	if (fd >= 0 && fd != stale) {
		(void)pthread_mutex_unlock(&fs->dir_lock);
		*dfd = fd;
		return 0;
	}
	fd = open(fs->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 && (errno == ENOENT || errno == ENOTDIR) && create) {
		rc = make_root(fs);
		if (rc == 0)
			fd = open(fs->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if (rc == 0 && fd < 0 && (errno != ENOENT || create))
		rc = faucet__error_os(FAUCET_EIO, errno, "failed to open state dir %s", fs->root);
	if (rc == 0 && fd >= 0) {
		struct stat st;

		if (fstat(fd, &st) != 0) {
			rc = faucet__error_os(FAUCET_EIO, errno, "failed to stat state dir %s",
					      fs->root);
		} else {
			fs->root_dev = (unsigned long long)st.st_dev;
			fs->root_ino = (unsigned long long)st.st_ino;
		}
	}
	if (rc == 0 && stale >= 0) {
		int *grown = faucet__realloc(fs->retired, (fs->nretired + 1) * sizeof(int));
		if (grown == NULL) {
			rc = FAUCET_ENOMEM;
		} else {
			fs->retired = grown;
			fs->retired[fs->nretired++] = stale;
		}
	}
	if (rc == 0)
		atomic_store(&fs->dirfd, fd);
	else if (fd >= 0)
		(void)close(fd);
	(void)pthread_mutex_unlock(&fs->dir_lock);
	*dfd = rc == 0 ? fd : -1;
	return rc;
}

/* The root's descriptor, opened (and with `create`, made) on first use. */
int faucet_file__root_get(file_store *fs, int create, int *dfd)
{
	int fd = atomic_load(&fs->dirfd);

	if (fd >= 0) {
		*dfd = fd;
		return 0;
	}
	return root_reopen(fs, -1, create, dfd);
}

/* Asked after ENOENT under dfd: does the root path now name another
 * directory than dfd (or none)?  Then dfd is stale. */
static int root_is_stale(file_store *fs, int dfd)
{
	unsigned long long dev, ino;
	struct stat held, named;
	int current;

	if (stat(fs->root, &named) != 0)
		return 1;
	/* The identity read at open belongs to dfd while dfd is the current
	 * root; a replaced descriptor (kept open, so its number is never
	 * reused) is asked itself. */
	(void)pthread_mutex_lock(&fs->dir_lock);
	current = atomic_load(&fs->dirfd) == dfd;
	dev = fs->root_dev;
	ino = fs->root_ino;
	(void)pthread_mutex_unlock(&fs->dir_lock);
	if (!current) {
		if (fstat(dfd, &held) != 0)
			return 1;
		dev = (unsigned long long)held.st_dev;
		ino = (unsigned long long)held.st_ino;
	}
	return dev != (unsigned long long)named.st_dev || ino != (unsigned long long)named.st_ino;
}

/* ---- reading ------------------------------------------------------------ */

/* Entries are opened without following a symlink: a link planted at a key's
 * name (-> /root/creds.json) would make `export` print another file.
 * O_NONBLOCK keeps a FIFO planted there from hanging the read; it changes
 * nothing for a regular file. */
#define ENTRY_OPEN_FLAGS (O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)

/* After a miss under dfd: was the root replaced?  Asked once per call of
 * get_many (*verified), every time when verified is NULL. */
static int miss_means_stale(file_store *fs, int dfd, int *verified)
{
	if (verified != NULL) {
		if (*verified)
			return 0;
		*verified = 1;
	}
	return root_is_stale(fs, dfd);
}

/* Open `name` under the root for reading.  *fd_out = -1 (rc 0) when the file
 * or the root does not exist.  A miss asks whether the root was replaced,
 * unless *verified says this call already asked (get_many asks once). */
static int open_entry(file_store *fs, const char *name, int *verified, int *fd_out)
{
	char path[PATH_CAP];
	int dfd, fd, err, rc = faucet_file__root_get(fs, 0, &dfd);

	*fd_out = -1;
	if (rc != 0 || dfd < 0)
		return rc;
	fd = openat(dfd, name, ENTRY_OPEN_FLAGS);
	err = errno;
	if (fd < 0 && err == ENOENT && miss_means_stale(fs, dfd, verified)) {
		rc = root_reopen(fs, dfd, 0, &dfd);
		if (rc != 0 || dfd < 0)
			return rc;
		fd = openat(dfd, name, ENTRY_OPEN_FLAGS);
		err = errno;
	}
	if (fd < 0 && err == ELOOP) {
		faucet_file__path_of(fs, name, path);
		return faucet_error_set(FAUCET_ERROR,
					"state file %s is a symbolic link; refusing to follow it", path);
	}
	if (fd < 0 && err != ENOENT) {
		faucet_file__path_of(fs, name, path);
		return faucet__error_os(FAUCET_EIO, err, "failed to read state file %s", path);
	}
	*fd_out = fd;
	return 0;
}

/* Small values are read into the caller's stack buffer: no allocation on the
 * common path of get. */
#define READ_INLINE 4096

/* Read all of fd: its size from fstat, then normally one read.  Files are
 * replaced by rename and never rewritten in place, so the size is exact.
 * The bytes land in inline[READ_INLINE] when they fit, else in a new buffer
 * returned through *heap. */
static int read_whole(int fd, const file_store *fs, const char *name, char *inline_buf,
		      char **bytes, size_t *len, char **heap)
{
	char path[PATH_CAP];
	struct stat st;
	size_t cap = READ_INLINE - 1, got = 0;
	char *buf = inline_buf;
	int err;

	*heap = NULL;
	/* Bookmarks are small: one read into the stack buffer usually returns
	 * the whole file (a regular file reads short only at its end), which
	 * saves an fstat per get.  A full buffer means a bigger file: size it. */
	for (;;) {
		ssize_t n = read(fd, buf + got, cap - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = errno;
			goto os_error;
		}
		got += (size_t)n;
		if (n == 0 || got < cap)
			break;
		if (buf == inline_buf) {
			size_t want;
			if (fstat(fd, &st) != 0) {
				err = errno;
				goto os_error;
			}
			want = (size_t)st.st_size > cap ? (size_t)st.st_size + 1 : cap * 2;
			buf = *heap = faucet__malloc(want + 1);
			if (buf == NULL)
				return FAUCET_ENOMEM;
			memcpy(buf, inline_buf, got);
			cap = want;
		} else {
			char *grown = faucet__realloc(*heap, cap * 2 + 1);
			if (grown == NULL) {
				free(*heap);
				*heap = NULL;
				return FAUCET_ENOMEM;
			}
			buf = *heap = grown;
			cap *= 2;
		}
	}
	buf[got] = '\0';
	*bytes = buf;
	*len = got;
	return 0;
os_error:
	free(*heap);
	*heap = NULL;
	faucet_file__path_of(fs, name, path);
	return faucet__error_os(FAUCET_EIO, err, "failed to read state file %s", path);
}

/* ---- the disk encoding ---------------------------------------------------
 *
 * The two functions below are the only places that know how a value looks on
 * disk.  Plaintext is the value's compact JSON, byte for byte.  Sealing
 * (doc/design.md §4) belongs here and nowhere else.
 */

/* The bytes to write for `value`.  *owned is what the caller frees (NULL
 * when the bytes belong to the value). */
static int encode_value(const file_store *fs, const char *key, const faucet_value *value,
			const char **bytes, size_t *len, char **owned)
{
	unsigned char *sealed = NULL;
	size_t sealed_len = 0;
	int rc;

	*owned = NULL;
	if (fs->keyring == NULL) {
		*bytes = faucet_value_json(value);
		*len = faucet_value_len(value);
		return 0;
	}
	/* Sealed with the state key as associated data (format 0x02), so a
	 * file copied under another key's name fails to open. */
	rc = faucet__seal(fs->keyring, key, faucet_value_json(value), faucet_value_len(value),
			  &sealed, &sealed_len);
	if (rc != 0)
		return rc;
	*owned = (char *)sealed;
	*bytes = (const char *)sealed;
	*len = sealed_len;
	return 0;
}

/* "{prefix}{root}/{name}" into out[PATH_CAP + 32] without printf: this runs
 * on every read, so it must cost next to nothing. */
static void describe_file(char *out, const char *prefix, const file_store *fs, const char *name)
{
	size_t cap = PATH_CAP + 32, n = 0;
	const char *parts[4] = {prefix, fs->root, "/", name};

	for (size_t i = 0; i < 4; i++) {
		size_t len = strlen(parts[i]);
		if (len > cap - 1 - n)
			len = cap - 1 - n;
		memcpy(out + n, parts[i], len);
		n += len;
	}
	out[n] = '\0';
}

/* The value stored as `bytes` in the file `name` under `key`. */
static int decode_value(const file_store *fs, const char *key, const char *name,
			const char *bytes, size_t len, faucet_value **out)
{
	char where[PATH_CAP + 32];
	int rc;

	/* A sealed file is never "no bookmark" and never JSON garbage: treating
	 * it as either would make the pipeline start over.  Plaintext files stay
	 * readable under a keyring and are sealed on their next write. */
	if (faucet__is_sealed(bytes, len)) {
		unsigned char *plain = NULL;
		size_t plain_len = 0;

		describe_file(where, "", fs, name);
		if (fs->keyring == NULL)
			return faucet__sealed_without_key(where);
		rc = faucet__unseal(fs->keyring, key, where, bytes, len, &plain, &plain_len);
		if (rc != 0)
			return rc;
		describe_file(where, "failed to parse state file ", fs, name);
		rc = faucet_value_parse_at(out, (const char *)plain, plain_len, where);
		explicit_bzero(plain, plain_len);
		free(plain);
	} else {
		describe_file(where, "failed to parse state file ", fs, name);
		rc = faucet_value_parse_at(out, bytes, len, where);
	}
	/* Corrupt stored state is a store failure, not bad input from the caller. */
	if (rc == FAUCET_EINVALID)
		rc = faucet_error_set(FAUCET_ERROR, "%s", faucet_error_last()->message);
	return rc;
}

static int read_entry_as(file_store *fs, const char *key, const char *name, int *verified,
			 const faucet_value *expected, faucet_value **out, int *equal);

/* The value of `key` from its file `name`; *out NULL when there is none.
 * `verified` as for open_entry. */
int faucet_file__read_entry(file_store *fs, const char *key, const char *name, int *verified,
			    faucet_value **out)
{
	return read_entry_as(fs, key, name, verified, NULL, out, NULL);
}

/*
 * The file `name`'s value, or (with `expected`) only whether it equals
 * `expected`: *out NULL when there is no file.  A plaintext file whose
 * bytes are expected's own text is equal without a parse - a compare-and-
 * put of a document its writer wrote last (a run's status, its marker)
 * then reads it and compares bytes; any other file is decoded and compared
 * as a value, so a corrupt one is still an error.
 */
static int read_entry_as(file_store *fs, const char *key, const char *name, int *verified,
			 const faucet_value *expected, faucet_value **out, int *equal)
{
	char inline_buf[READ_INLINE];
	char *bytes = NULL, *heap = NULL;
	size_t len = 0;
	int fd, rc;

	*out = NULL;
	if (equal != NULL)
		*equal = expected == NULL;
	rc = open_entry(fs, name, verified, &fd);
	if (rc != 0 || fd < 0)
		return rc;
	rc = read_whole(fd, fs, name, inline_buf, &bytes, &len, &heap);
	(void)close(fd); /* read-only: nothing to lose on close */
	if (rc == 0 && equal != NULL && expected != NULL && len == faucet_value_len(expected) &&
	    memcmp(bytes, faucet_value_json(expected), len) == 0 && !faucet__is_sealed(bytes, len)) {
		*equal = 1;
	} else if (rc == 0) {
		rc = decode_value(fs, key, name, bytes, len, out);
		if (rc == 0 && equal != NULL)
			*equal = faucet_value_equal(*out, expected);
	}
	free(heap);
	return rc;
}

/* ---- writing -------------------------------------------------------------- */

static int sync_root(const file_store *fs, int dfd)
{
	if (faucet__sys()->fsync(dfd) != 0)
		return faucet__error_os(FAUCET_EIO, errno, "failed to fsync state dir %s", fs->root);
	return 0;
}

/* A durable write's temp namer: a fresh temp name for the temp_spec `arg`. */
int faucet_file__temp_namer(void *arg, char *out, size_t cap)
{
	const temp_spec *spec = arg;

	return faucet_file__temp_name(spec->stem, spec->kind, out, cap);
}

/* The root vanished under a write: take the directory the path names now,
 * once, when it is another one (root_reopen creates it). */
static int file_reopen_root(void *arg, int *dfd)
{
	file_store *fs = arg;

	if (!root_is_stale(fs, *dfd))
		return 1;
	return root_reopen(fs, *dfd, 1, dfd);
}

/*
 * Replace the file `name` under the root with `bytes`, durably, through the
 * one durable-write routine (durable.c explains each step).  A reader sees
 * the old file or the new one; once this returns 0 the new one survives a
 * crash; any failure before the rename leaves the old file and no temp
 * file.  FAUCET_EUNKNOWN: the new file is in place, but the directory sync
 * failed, so it may not survive a crash.
 */
static int write_durably(file_store *fs, int *dfd, const char *stem, const char *kind,
			 const char *name, const char *bytes, size_t len)
{
	char path[PATH_CAP];
	temp_spec spec = {stem, kind};
	faucet_durable_target t = {*dfd, name, path, "state file", faucet_file__temp_namer, &spec,
				   file_reopen_root, fs};
	int rc;

	faucet_file__path_of(fs, name, path);
	rc = faucet__durable_replace(&t, bytes, len);
	*dfd = t.dirfd;
	return rc;
}

/* Read a small file (a sidecar) into buf[cap]; 0 with *len set, or -1 with
 * errno (ENOENT: absent; EFBIG: longer than cap - 1). */
int faucet_file__read_small(int dfd, const char *name, char *buf, size_t cap, size_t *len)
{
	int fd = openat(dfd, name, ENTRY_OPEN_FLAGS);
	size_t got = 0;

	if (fd < 0)
		return -1;
	for (;;) {
		ssize_t n = read(fd, buf + got, cap - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = errno;
			(void)close(fd);
			errno = err;
			return -1;
		}
		if (n == 0)
			break;
		got += (size_t)n;
		if (got == cap) {
			(void)close(fd);
			errno = EFBIG;
			return -1;
		}
	}
	(void)close(fd);
	buf[got] = '\0';
	*len = got;
	return 0;
}

/*
 * Make "{stem}.key" hold the full key of a hashed stem: the listing reads it
 * to report the key.  It is written only when missing or different, the
 * same crash-safe way as a value, and before the value: write_durably's
 * directory sync then makes the sidecar durable before the value that
 * depends on it can be renamed into place, so a crash never leaves a hashed
 * value that the listing cannot name.
 */
int faucet_file__ensure_sidecar(file_store *fs, int *dfd, const char *stem, const char *key)
{
	char name[FILE_NAME_CAP], have[FILE_KEY_CAP + 1];
	size_t len;
	int rc;

	faucet_file__name_from_stem(name, stem, ".key");
	if (faucet_file__read_small(*dfd, name, have, sizeof(have), &len) == 0 &&
	    strcmp(have, key) == 0)
		return 0;
	rc = write_durably(fs, dfd, stem, "key", name, key, strlen(key));
	/* The value is not written after this: its put failed, whatever
	 * became of the sidecar. */
	return rc == FAUCET_EUNKNOWN ? FAUCET_EIO : rc;
}

/* ---- sorting the listing ----------------------------------------------------
 *
 * Sorting is most of what a listing of many keys costs beyond the readdir
 * itself.  Keys share long prefixes ("pipeline::row::..."), so a strcmp sort
 * keeps comparing the same leading bytes, each time through a pointer into
 * another heap block.  Instead each key carries 8 of its bytes next to its
 * pointer, as a big-endian integer: integer order is strcmp's unsigned byte
 * order (a key's end pads with zero bytes, and keys hold no zero bytes).  A
 * radix sort orders those integers with a few sequential passes (a pass is
 * skipped when all keys agree on its byte, as they do on shared prefixes),
 * and each run of equal integers moves on to the keys' next 8 bytes.
 */

typedef struct {
	uint64_t chunk; /* the key's 8 bytes from the current depth */
	char *key;
} sort_item;

typedef struct {
	sort_item *tmp;        /* scatter target, as long as the input */
	size_t count[8][256];  /* per byte of the chunk; reused at every level */
} sort_space;

static uint64_t chunk_at(const char *key, size_t depth)
{
	uint64_t c = 0;
	size_t i = 0;

	for (; i < 8 && key[depth + i] != '\0'; i++)
		c = c << 8 | (unsigned char)key[depth + i];
	return i == 0 ? 0 : c << (8 * (8 - i));
}

/* Least-significant-byte-first radix sort of a[0..n) by chunk. */
static void radix_sort_chunks(sort_item *a, size_t n, sort_space *sp)
{
	sort_item *src = a, *dst = sp->tmp;

	memset(sp->count, 0, sizeof(sp->count));
	for (size_t i = 0; i < n; i++) {
		for (unsigned b = 0; b < 8; b++)
			sp->count[b][(a[i].chunk >> (8 * b)) & 0xff]++;
	}
	for (unsigned b = 0; b < 8; b++) {
		size_t *count = sp->count[b], offset = 0;
		sort_item *t;

		if (count[(a[0].chunk >> (8 * b)) & 0xff] == n)
			continue; /* every key has the same byte here */
		for (unsigned d = 0; d < 256; d++) {
			size_t c = count[d];
			count[d] = offset;
			offset += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[count[(src[i].chunk >> (8 * b)) & 0xff]++] = src[i];
		t = src;
		src = dst;
		dst = t;
	}
	if (src != a)
		memcpy(a, src, n * sizeof(*a));
}

/* Sort a[0..n), whose keys agree on their first `depth` bytes and whose
 * chunks are loaded for `depth`.  Recursion goes 8 bytes deeper each level,
 * so it is at most 33 levels deep for a 256-byte key.  Sets *equal when two
 * keys are equal: keys from different runs differ, and in an insertion sort
 * every pair that ends up adjacent has been compared.  `sp` is needed (and
 * may be NULL otherwise) when n >= 32. */
static void sort_by_chunks(sort_item *a, size_t n, size_t depth, sort_space *sp, int *equal)
{
	if (n < 32) {
		/* Few keys: insertion sort on their remaining bytes. */
		for (size_t k = 1; k < n; k++) {
			for (size_t j = k; j > 0; j--) {
				int c = strcmp(a[j - 1].key + depth, a[j].key + depth);
				sort_item t;

				if (c <= 0) {
					*equal |= c == 0;
					break;
				}
				t = a[j - 1];
				a[j - 1] = a[j];
				a[j] = t;
			}
		}
		return;
	}
	radix_sort_chunks(a, n, sp);
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && a[j].chunk == a[i].chunk; j++)
			;
		if (j - i < 2)
			continue;
		/* A run whose chunk ends in a zero byte holds equal keys. */
		if ((a[i].chunk & 0xff) == 0) {
			*equal = 1;
			continue;
		}
		for (size_t k = i; k < j; k++)
			a[k].chunk = chunk_at(a[k].key, depth + 8);
		sort_by_chunks(a + i, j - i, depth + 8, sp, equal);
	}
}

/* The keys a listing found, with their first chunk, in readdir order. */
struct key_list {
	sort_item *items;
	size_t count, cap;
};

int faucet_file__key_list_push(key_list *l, const char *key, size_t len)
{
	sort_item *grown;
	char *copy;

	grown = faucet__reserve(l->items, &l->cap, l->count + 1, sizeof(*l->items), 256);
	if (grown == NULL)
		return FAUCET_ENOMEM;
	l->items = grown;
	copy = faucet__strndup(key, len);
	if (copy == NULL)
		return FAUCET_ENOMEM;
	/* The chunk comes from the caller's copy, still in cache. */
	l->items[l->count].chunk = chunk_at(key, 0);
	l->items[l->count].key = copy;
	l->count++;
	return 0;
}

static void key_list_dispose(key_list *l)
{
	for (size_t i = 0; i < l->count; i++)
		free(l->items[i].key);
	free(l->items);
	l->items = NULL;
	l->count = l->cap = 0;
}

/* Hand the keys over to `out` sorted by strcmp, without duplicates (a key
 * can be found under its legacy and its current name before migration).
 * `l` is left empty. */
static int key_list_finish(key_list *l, faucet_strarray *out)
{
	sort_space *sp = NULL;
	size_t cap = 4;
	int equal = 0;

	if (l->count == 0)
		return 0;
	/* Capacity as faucet__strarray_push_owned() expects it: the next power
	 * of two, so a caller may append to the result. */
	while (cap < l->count)
		cap *= 2;
	out->strings = faucet__malloc(cap * sizeof(char *));
	if (out->strings != NULL && l->count >= 32) {
		sp = faucet__malloc(sizeof(*sp));
		if (sp != NULL)
			sp->tmp = faucet__malloc(l->count * sizeof(*sp->tmp));
		if (sp != NULL && sp->tmp == NULL) {
			free(sp);
			sp = NULL;
		}
		if (sp == NULL) {
			free(out->strings);
			out->strings = NULL;
		}
	}
	if (out->strings == NULL) {
		key_list_dispose(l);
		return FAUCET_ENOMEM;
	}
	sort_by_chunks(l->items, l->count, 0, sp, &equal);
	out->count = 0;
	for (size_t i = 0; i < l->count; i++) {
		/* Equal keys are adjacent now; compare only if the sort met some. */
		if (equal && out->count > 0 &&
		    strcmp(out->strings[out->count - 1], l->items[i].key) == 0)
			free(l->items[i].key);
		else
			out->strings[out->count++] = l->items[i].key;
	}
	if (sp != NULL)
		free(sp->tmp);
	free(sp);
	free(l->items);
	l->items = NULL;
	l->count = l->cap = 0;
	return 0;
}

/* ---- the backend slots ------------------------------------------------------ */

/* The current stem of `key` into stem[FILE_STEM_MAX + 1] (its length in
 * *len unless len is NULL): 0, or the error of a long key whose SHA-256
 * cannot be computed (libcrypto is loaded on the first such key). */
int faucet_file__key_stem(const char *key, char *stem, size_t *len)
{
	size_t n = faucet_file__stem(key, stem);

	if (n == 0)
		return faucet_error_last()->code;
	if (len != NULL)
		*len = n;
	return 0;
}

/* Many gets in one call: the same reads, but a miss asks whether the root
 * was replaced only once per call (a before-image read of a big import
 * misses on every key). */
static int file_get_many(faucet_store_backend *b, const char *const *keys, size_t count,
			 faucet_value **out)
{
	file_store *fs = (file_store *)b;
	char stem[FILE_STEM_MAX + 1], name[FILE_NAME_CAP];
	int dfd, verified = 0, rc = faucet_file__root_get(fs, 0, &dfd);

	for (size_t i = 0; i < count; i++)
		out[i] = NULL;
	for (size_t i = 0; rc == 0 && i < count; i++) {
		if ((rc = faucet_file__settle_legacy(fs, &dfd, keys[i])) != 0)
			break;
		if ((rc = faucet_file__key_stem(keys[i], stem, NULL)) != 0)
			break;
		faucet_file__name_from_stem(name, stem, ".json");
		rc = faucet_file__read_entry(fs, keys[i], name, &verified, &out[i]);
		if (rc != 0 && count > 1) /* which of them (a single get's caller knows) */
			(void)faucet__error_wrap("reading '%s'", keys[i]);
	}
	if (rc != 0) {
		for (size_t i = 0; i < count; i++) {
			faucet_value_free(out[i]);
			out[i] = NULL;
		}
	}
	return rc;
}

static int file_get(faucet_store_backend *b, const char *key, faucet_value **out)
{
	return file_get_many(b, &key, 1, out);
}

static int ensure_marker(file_store *fs, int *dfd);
static int refuse_keyless_write(const file_store *fs, int dfd, const char *name,
				int marker_seen);

/* What a put checks and encodes before its write: the key's legacy file
 * settled, its file name, the encrypted-store rules, its bytes (*owned when
 * sealed: the caller frees it) and, for a hashed name, its sidecar.
 * marker_seen: a batch has looked for the store marker once for its group
 * (keyless writes then look only at the file about to be replaced). */
int faucet_file__prepare_put(file_store *fs, int *dfd, const char *key,
			     const faucet_value *value, int marker_seen, char *stem, char *name,
			     const char **bytes, size_t *len, char **owned)
{
	size_t stem_len = 0;
	int rc = faucet_file__settle_legacy(fs, dfd, key);

	*owned = NULL;
	if (rc == 0)
		rc = faucet_file__key_stem(key, stem, &stem_len);
	if (rc != 0)
		return rc;
	faucet_file__name_from_stem(name, stem, ".json");
	/* doctor's sentinel is removed at once: it must not mark a plaintext
	 * store encrypted. */
	if (fs->keyring == NULL)
		rc = refuse_keyless_write(fs, *dfd, name, marker_seen);
	else if (strncmp(key, FAUCET_DOCTOR_SENTINEL_PREFIX,
			 strlen(FAUCET_DOCTOR_SENTINEL_PREFIX)) != 0)
		rc = ensure_marker(fs, dfd);
	if (rc == 0)
		rc = encode_value(fs, key, value, bytes, len, owned);
	if (rc == 0 && faucet_file__stem_is_hashed(stem, stem_len))
		rc = faucet_file__ensure_sidecar(fs, dfd, stem, key);
	return rc;
}

/* put's body, shared with compare-and-put (which holds the key's lock). */
static int store_value(file_store *fs, const char *key, const faucet_value *value)
{
	char stem[FILE_STEM_MAX + 1], name[FILE_NAME_CAP];
	const char *bytes = NULL;
	char *owned = NULL;
	size_t len = 0;
	int dfd, rc = faucet_file__root_get(fs, 1, &dfd);

	if (rc == 0)
		rc = faucet_file__prepare_put(fs, &dfd, key, value, 0, stem, name, &bytes, &len,
					      &owned);
	if (rc == 0)
		rc = write_durably(fs, &dfd, stem, "json", name, bytes, len);
	free(owned);
	return rc;
}

/* ---- the encrypted-store marker ----------------------------------------------
 *
 * A store that holds sealed files has a hidden file STORE_MARKER, written
 * durably before its first sealed value.  A writer without a key checks
 * for it and refuses: a child started without the key's variable would
 * otherwise write plaintext bookmarks into an encrypted store.  The original
 * faucet ignores the marker (it lists only "*.json").  A store it sealed has
 * no marker, so a keyless put also looks at the header of the file it is
 * about to replace.  Both checks cost a syscall or three next to a put's
 * two fsyncs.
 */
static const char marker_text[] =
	"This faucet state store holds sealed (encrypted) values: open it with the key.\n";

/* 1 when `name` under dfd holds a sealed value, 0 when not (or absent). */
static int holds_sealed_file(int dfd, const char *name)
{
	char head[FAUCET_SEAL_MAGIC_LEN];
	ssize_t n;
	int fd = openat(dfd, name, ENTRY_OPEN_FLAGS);

	if (fd < 0)
		return 0;
	do
		n = read(fd, head, sizeof(head));
	while (n < 0 && errno == EINTR);
	(void)close(fd);
	return n > 0 && faucet__is_sealed(head, (size_t)n);
}

int faucet_file__keyless_write_refused(const file_store *fs)
{
	return faucet_error_set(FAUCET_EINVALID,
				"this store (%s) is encrypted; give --encryption-key-env "
				"(a write without the key is refused)",
				fs->root);
}

/* 1 when the store's marker is there (or cannot be ruled out). */
int faucet_file__store_is_marked(int dfd)
{
	struct stat st;

	return fstatat(dfd, STORE_MARKER, &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT;
}

/* A write without the key is refused when the store is marked encrypted
 * (not looked at again when the caller has: marker_seen) or when the file
 * it would replace is sealed. */
static int refuse_keyless_write(const file_store *fs, int dfd, const char *name,
				int marker_seen)
{
	if ((marker_seen || !faucet_file__store_is_marked(dfd)) && !holds_sealed_file(dfd, name))
		return 0;
	return faucet_file__keyless_write_refused(fs);
}

/* Make sure the marker exists before a sealed value is written. */
static int ensure_marker(file_store *fs, int *dfd)
{
	char path[PATH_CAP];
	struct stat st;
	int rc;

	if (atomic_load_explicit(&fs->marked, memory_order_acquire))
		return 0;
	faucet_file__path_of(fs, STORE_MARKER, path);
	if (fstatat(*dfd, STORE_MARKER, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (!S_ISREG(st.st_mode))
			return faucet_error_set(FAUCET_ERROR,
						"store marker %s is not a regular file", path);
		atomic_store_explicit(&fs->marked, 1, memory_order_release);
		return 0;
	}
	if (errno != ENOENT)
		return faucet__error_os(FAUCET_EIO, errno, "failed to stat store marker %s", path);
	/* Durable (directory synced) before the sealed file that needs it. */
	rc = write_durably(fs, dfd, STORE_MARKER, "marker", STORE_MARKER, marker_text,
			   sizeof(marker_text) - 1);
	if (rc == 0)
		atomic_store_explicit(&fs->marked, 1, memory_order_release);
	/* No sealed value follows an undurable marker: the put failed. */
	return rc == FAUCET_EUNKNOWN ? FAUCET_EIO : rc;
}

static int enter_shared(file_store *fs, int create, int *fd_out);
static void writers_leave(int fd);
static int lock_if_managed(file_store *fs, const char *key, int *lock_fd);

int faucet_file__put_entered(file_store *fs, const char *key, const faucet_value *value)
{
	int lock_fd = -1, rc = lock_if_managed(fs, key, &lock_fd);

	if (rc == 0)
		rc = store_value(fs, key, value);
	if (lock_fd >= 0)
		(void)close(lock_fd); /* releases the key's lock */
	return rc;
}

static int file_put(faucet_store_backend *b, const char *key, const faucet_value *value)
{
	file_store *fs = (file_store *)b;
	int gate, rc = enter_shared(fs, 1, &gate);

	if (rc == 0)
		rc = faucet_file__put_entered(fs, key, value);
	writers_leave(gate);
	return rc;
}

/* ---- compare-and-put, delete and the listing ------------------------------ */

/* Take the key's lock "{stem}.json.lock", following a replaced root once.
 * Without `create`, a root that no longer exists gives *fd_out = -1, rc 0.
 * The lock file is never made here: a key without one gives *fd_out -1,
 * rc 0 too ("Lock files are made in the writers' lock", below). */
static int take_key_lock(file_store *fs, int *dfd, int create, const char *stem, int *fd_out)
{
	char name[FILE_NAME_CAP], path[PATH_CAP];
	int open_err = 0, rc;

	faucet_file__name_from_stem(name, stem, ".json.lock");
	faucet_file__path_of(fs, name, path);
	*fd_out = -1;
	rc = lock_acquire(*dfd, name, path, LOCK_KEY, 0, fd_out, &open_err);
	if (*fd_out < 0 && open_err == ENOENT && root_is_stale(fs, *dfd)) {
		rc = root_reopen(fs, *dfd, create, dfd);
		if (rc != 0 || *dfd < 0)
			return rc;
		rc = lock_acquire(*dfd, name, path, LOCK_KEY, 0, fd_out, &open_err);
	}
	return rc;
}

/*
 * The writers' gate.  A key's lock orders compare-and-puts of that key, but
 * a compare-and-put batch compares many keys and then writes them all: a
 * write of one of them that landed in between would be overwritten unseen
 * (and undo would give back the value read before it, design §8.2).  So
 * every write of ours holds the store's writers' lock ".faucet-writers.lock"
 * shared for its duration, and a batch holds it exclusive from its first
 * compare to its last rename.  A waiting batch would starve behind a
 * stream of shared holders (flock grants a shared lock while an exclusive
 * one waits), so a writer first passes ".faucet-writers.gate" - shared,
 * held only until the writers' lock is taken - which a batch holds
 * exclusive while it waits: new writers queue at the gate, those inside
 * finish, and the batch goes in.  Both files are empty, hidden, never
 * removed, and invisible to the listing, doctor and the original faucet
 * (which does not take them: its writes are not ordered against our
 * batches).
 */
int faucet_file__writers_enter(file_store *fs, int *dfd, int create, int exclusive,
			       int *fd_out)
{
	lock_kind kind = exclusive ? LOCK_GATE_EXCLUSIVE : LOCK_GATE_SHARED;
	char path[PATH_CAP];
	int gate = -1, open_err = 0, rc;

	*fd_out = -1;
	faucet_file__path_of(fs, WRITERS_GATE, path);
	rc = lock_acquire(*dfd, WRITERS_GATE, path, kind, 1, &gate, &open_err);
	/* The root was removed or replaced: follow it once, as a key's lock
	 * does (take_key_lock). */
	if (rc != 0 && open_err == ENOENT && root_is_stale(fs, *dfd)) {
		if ((rc = root_reopen(fs, *dfd, create, dfd)) != 0 || *dfd < 0)
			return rc; /* without `create`: no root, nothing to write */
		rc = lock_acquire(*dfd, WRITERS_GATE, path, kind, 1, &gate, &open_err);
	}
	if (rc != 0)
		return rc;
	faucet_file__path_of(fs, WRITERS_LOCK, path);
	rc = lock_acquire(*dfd, WRITERS_LOCK, path, kind, 1, fd_out, &open_err);
	(void)close(gate); /* the next writer may queue behind us now */
	return rc;
}

/* Enter the writers' lock shared, in the root (made when `create`): *fd_out
 * -1 (rc 0) when there is no root and so nothing to write. */
static int enter_shared(file_store *fs, int create, int *fd_out)
{
	int dfd, rc = faucet_file__root_get(fs, create, &dfd);

	*fd_out = -1;
	if (rc != 0 || dfd < 0)
		return rc;
	return faucet_file__writers_enter(fs, &dfd, create, 0, fd_out);
}

/* Leave the writers' lock entered with fd (-1: none was). */
static void writers_leave(int fd)
{
	if (fd >= 0)
		(void)close(fd); /* releases the lock */
}

/*
 * Lock files are made in the writers' lock, held exclusive.  A write that
 * compares (compare-and-put, compare-and-delete, a guarded put's guards and
 * condition) holds its key's lock from its compare to its rename.  A write
 * that does not (a put, a delete, a plain batch) holds the key's lock only
 * when the key has a lock file, which it looks for inside the writers'
 * lock.  Were a lock file made while such a write, having found none, was
 * writing unlocked, a compare-and-put could take the new lock and compare,
 * and the unlocked write land before its rename, to be overwritten unseen.
 * So a writer that compares and finds no lock file leaves the writers' lock
 * and makes the file here - every write of ours finished, and every later
 * one sees the file and takes its lock - then tries again.  Only a key's
 * first compared write pays for this (design §3.3).
 */
#define LOCK_MAKE_ATTEMPTS 100

/* Make the lock files of keys[0..n) that have none, in the writers' lock
 * held exclusive (nothing to do, and no lock taken, when every one
 * exists).  Called before the writer enters the writers' lock, and again
 * each time it found one missing inside; attempt: how many times that
 * happened in a row (a delete removes a key's lock file): FAUCET_EBUSY
 * past LOCK_MAKE_ATTEMPTS. */
static int make_lock_files(file_store *fs, const char *const *keys, size_t n, int attempt)
{
	char stem[FILE_STEM_MAX + 1], name[FILE_NAME_CAP], path[PATH_CAP];
	int dfd, gate = -1, missing = 0, rc;

	if (attempt >= LOCK_MAKE_ATTEMPTS)
		return faucet_error_set(FAUCET_EBUSY,
					"the lock file of %s was removed %d times while it was taken",
					keys[0], LOCK_MAKE_ATTEMPTS);
	rc = faucet_file__root_get(fs, 1, &dfd);
	for (size_t i = 0; rc == 0 && i < n && !missing; i++)
		missing = !faucet_file__has_lock_file(dfd, keys[i]);
	if (rc != 0 || !missing)
		return rc;
	/* A keyless write to an encrypted store leaves no lock file of a key
	 * it is refused (lock_and_compare refuses it where none is made). */
	if (fs->keyring == NULL && faucet_file__store_is_marked(dfd))
		return faucet_file__keyless_write_refused(fs);
	rc = faucet_file__writers_enter(fs, &dfd, 1, 1, &gate);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		int fd = -1, open_err = 0;

		if (faucet_file__has_lock_file(dfd, keys[i]))
			continue;
		if ((rc = faucet_file__key_stem(keys[i], stem, NULL)) != 0)
			break;
		faucet_file__name_from_stem(name, stem, ".json.lock");
		faucet_file__path_of(fs, name, path);
		rc = lock_open(dfd, name, path, 1, &fd, &open_err);
		if (fd >= 0)
			(void)close(fd);
	}
	writers_leave(gate);
	return rc;
}

/* A plain put of a key managed with compare-and-put - its lock file
 * exists, as for every key a run or a compare-and-put has written - holds
 * the key's lock, so that it never lands between such a writer's compare
 * and its rename (which would overwrite the put unseen).  A key without a
 * lock file is written unlocked: no writer that compares is inside the
 * writers' lock with it then, and none enters before it leaves (lock files
 * are made in the writers' lock exclusive, above; design §3.3). */
static int lock_if_managed(file_store *fs, const char *key, int *lock_fd)
{
	char stem[FILE_STEM_MAX + 1];
	int dfd, rc = faucet_file__root_get(fs, 1, &dfd);

	*lock_fd = -1;
	if (rc == 0)
		rc = faucet_file__settle_legacy(fs, &dfd, key);
	if (rc == 0)
		rc = faucet_file__key_stem(key, stem, NULL);
	if (rc != 0)
		return rc;
	return take_key_lock(fs, &dfd, 1, stem, lock_fd);
}

/* Take the key's lock and compare its entry with `expected`: *holds says
 * whether they are equal.  On success the caller writes (or not), then
 * closes *lock_fd, which releases the lock; on error no lock is held.  A
 * key without a lock file is *lock_fd -1, rc 0: the caller leaves the
 * writers' lock, makes it (make_lock_files) and tries again. */
static int lock_and_compare(file_store *fs, int *dfd, const char *key,
			    const faucet_value *expected, char *stem, int *lock_fd, int *holds)
{
	char name[FILE_NAME_CAP];
	faucet_value *current = NULL;
	int rc = faucet_file__root_get(fs, 1, dfd);

	*holds = 0;
	if (rc == 0)
		rc = faucet_file__settle_legacy(fs, dfd, key);
	if (rc != 0)
		return rc;
	/* A keyless write to an encrypted store is refused before the lock,
	 * so that it leaves no lock file of a key it never wrote. */
	if (fs->keyring == NULL && faucet_file__store_is_marked(*dfd))
		return faucet_file__keyless_write_refused(fs);
	if ((rc = faucet_file__key_stem(key, stem, NULL)) != 0 ||
	    (rc = take_key_lock(fs, dfd, 1, stem, lock_fd)) != 0 || *lock_fd < 0)
		return rc;
	faucet_file__name_from_stem(name, stem, ".json");
	rc = read_entry_as(fs, key, name, NULL, expected, &current, holds);
	*holds = rc == 0 && *holds;
	faucet_value_free(current);
	if (rc != 0)
		(void)close(*lock_fd);
	return rc;
}

/* Atomic across threads and processes sharing the directory: the read, the
 * comparison and the write all happen under the key's lock, which every
 * other write of the key then takes too (lock_if_managed; a key's first
 * compare makes its lock file: make_lock_files). */
static int file_compare_and_put(faucet_store_backend *b, const char *key,
				const faucet_value *expected, const faucet_value *value,
				int *written)
{
	file_store *fs = (file_store *)b;
	char stem[FILE_STEM_MAX + 1];
	int dfd, lock_fd = -1, holds = 0, gate = -1, rc = 0;

	*written = 0;
	for (int attempt = 0; rc == 0 && lock_fd < 0; attempt++) {
		writers_leave(gate);
		gate = -1;
		rc = make_lock_files(fs, &key, 1, attempt);
		if (rc == 0)
			rc = enter_shared(fs, 1, &gate);
		if (rc == 0)
			rc = lock_and_compare(fs, &dfd, key, expected, stem, &lock_fd, &holds);
	}
	if (rc != 0) {
		writers_leave(gate);
		return rc;
	}
	if (holds) {
		rc = store_value(fs, key, value);
		/* FAUCET_EUNKNOWN: the new value is in place, durable or not. */
		*written = rc == 0 || rc == FAUCET_EUNKNOWN;
	}
	(void)close(lock_fd); /* releases the lock */
	writers_leave(gate);
	return rc;
}

static int remove_locked(file_store *fs, int dfd, const char *stem, size_t stem_len, int sync,
			 int *removed);

/* One guard (or key to drop) of a guarded put, from its lock to its
 * write. */
typedef struct {
	const char *key;
	const faucet_store_guard *g; /* NULL: a key to drop, or the put's key */
	const faucet_store_guard *cond; /* the put's key, compared with cond->expected */
	int lock_only;                  /* the put's key without cond: locked only */
	int held;                       /* its comparison held (a guard or cond) */
	char stem[FILE_STEM_MAX + 1], name[FILE_NAME_CAP], path[PATH_CAP];
	size_t stem_len;
	const char *bytes;
	size_t len;
	char *owned; /* a sealed value's bytes */
	int lock_fd;
	temp_spec spec;
} guard_slot;

static int by_stem(const void *a, const void *b)
{
	return strcmp(((const guard_slot *)a)->stem, ((const guard_slot *)b)->stem);
}

/* Lock every slot's key in the order of their stems (two guarded puts of
 * the same keys never wait for each other in a circle) and compare each
 * guard and the put's condition (each slot's `held`): *holds when every
 * guard is as expected.  A key to drop or the put's uncompared key without
 * a lock file is written unlocked (lock_fd -1).  On error, or when a key
 * compared has no lock file (*unmade: the caller makes them and tries
 * again), no lock is held. */
static int lock_guards(file_store *fs, int *dfd, guard_slot *slots, size_t n, int *holds,
		       int *unmade)
{
	int rc = 0;
	size_t locked = 0;

	*holds = 1;
	*unmade = 0;
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = faucet_file__key_stem(slots[i].key, slots[i].stem, &slots[i].stem_len);
	if (rc != 0)
		return rc;
	qsort(slots, n, sizeof(*slots), by_stem);
	for (; locked < n; locked++) {
		guard_slot *sl = &slots[locked];

		const faucet_store_guard *cmp = sl->g != NULL ? sl->g : sl->cond;

		sl->held = 1;
		if (cmp != NULL)
			rc = lock_and_compare(fs, dfd, sl->key, cmp->expected, sl->stem,
					      &sl->lock_fd, &sl->held);
		else
			rc = take_key_lock(fs, dfd, 0, sl->stem, &sl->lock_fd);
		if (rc != 0 || (*unmade = cmp != NULL && sl->lock_fd < 0) != 0)
			break; /* neither holds a lock then */
		*holds = *holds && (sl->g == NULL || sl->held);
	}
	if (rc != 0 || *unmade)
		for (size_t i = 0; i < locked; i++)
			if (slots[i].lock_fd >= 0)
				(void)close(slots[i].lock_fd);
	return rc;
}

typedef struct {
	file_store *fs;
	int dfd;
	guard_slot *slots;
	size_t n;
	guard_slot *cond; /* the put's key and what it must hold, or NULL */
	int moved;        /* ... it held something else just before its rename */
	int rc;           /* reading it failed */
} drop_ctx;

/* The guards are in place: delete the keys to drop, their unlinks made
 * durable by the sync that follows (faucet_durable_hook). */
static void drop_keys(void *arg)
{
	drop_ctx *d = arg;

	for (size_t i = 0; i < d->n; i++) {
		guard_slot *sl = &d->slots[i];
		int removed = 0;

		if (sl->g == NULL && sl->cond == NULL && !sl->lock_only &&
		    remove_locked(d->fs, d->dfd, sl->stem, sl->stem_len, 0, &removed) != 0)
			faucet__warning_set("%s was not deleted: %s", sl->key,
					    faucet_error_last()->message);
	}
}

/* The guards are durable: the put's key is compared once more, under its
 * lock, just before its rename.  A writer that takes none of our locks
 * (the original faucet) may have replaced it while the guards were synced;
 * it is then left as that writer made it (0: not kept). */
static int key_still_holds(void *arg)
{
	drop_ctx *d = arg;
	char name[FILE_NAME_CAP];
	faucet_value *current = NULL;
	int holds = 0;

	faucet_file__name_from_stem(name, d->cond->stem, ".json");
	d->rc = read_entry_as(d->fs, d->cond->key, name, NULL, d->cond->cond->expected, &current,
			      &holds);
	faucet_value_free(current);
	d->moved = d->rc == 0 && !holds;
	return d->rc == 0 && holds;
}

/* Point each guard's target at its slot, in the caller's order: the last
 * guard is its own commit point (a run's marker after its status). */
static void guard_targets(file_store *fs, int dfd, const faucet_store_guard *guards, size_t n,
			  guard_slot *slots, size_t nslots, faucet_durable_target *targets,
			  const void **bytes, size_t *lens)
{
	for (size_t i = 0; i < n; i++) {
		guard_slot *sl = NULL;

		for (size_t j = 0; j < nslots && sl == NULL; j++)
			if (slots[j].g == &guards[i])
				sl = &slots[j];
		sl->spec = (temp_spec){sl->stem, "json"};
		faucet_file__path_of(fs, sl->name, sl->path);
		targets[i] = (faucet_durable_target){dfd, sl->name, sl->path, "state file",
						     faucet_file__temp_namer, &sl->spec,
						     file_reopen_root, fs};
		bytes[i] = sl->bytes;
		lens[i] = sl->len;
	}
}

/* The slot of `then`'s key among the guards, or NULL. */
static guard_slot *then_slot(guard_slot *slots, size_t nslots, const faucet_store_guard *then)
{
	for (size_t i = 0; then != NULL && i < nslots; i++)
		if (slots[i].g != NULL && strcmp(slots[i].key, then->key) == 0 &&
		    faucet_value_equal(slots[i].g->value, then->expected))
			return &slots[i];
	return NULL;
}

/* Every guard compared-and-put and, only when all held, the keys to drop
 * deleted and the key's put, with one data barrier for all the files
 * (faucet__durable_replace_guarded): the guards' new files are in place
 * and durable before the key's is renamed.  With `then` (one guard's key,
 * from that guard's new value to then->value), its file follows the key's
 * under the same locks and in the same directory sync; any other `then`
 * is not written (*then_written 0).  With `cond` (the key and the value
 * it must hold), the key is locked and compared with the guards: when it
 * holds something else nothing is written and *moved is set. */
static int put_guarded_entered(file_store *fs, const faucet_store_guard *guards, size_t n,
			       const char *const *drop, size_t ndrop, const char *key,
			       const faucet_value *value, const faucet_store_guard *then,
			       const faucet_store_guard *cond, int *written, int *then_written,
			       int *moved, int *unmade)
{
	guard_slot slots[2 * FAUCET_STORE_GUARDS_MAX + 1], *ts;
	faucet_durable_target targets[FAUCET_STORE_GUARDS_MAX];
	const void *bytes[FAUCET_STORE_GUARDS_MAX];
	size_t lens[FAUCET_STORE_GUARDS_MAX], nslots = n + ndrop, tlen = 0;
	char kstem[FILE_STEM_MAX + 1], kname[FILE_NAME_CAP], kpath[PATH_CAP], tpath[PATH_CAP];
	const char *kbytes = NULL, *tbytes = NULL;
	char *kowned = NULL, *towned = NULL;
	size_t klen = 0;
	int dfd = -1, holds = 0, rc;

	*written = 0;
	*then_written = 0;
	*unmade = 0;
	if (n == 0 || n > FAUCET_STORE_GUARDS_MAX || ndrop > FAUCET_STORE_GUARDS_MAX)
		return faucet_error_set(FAUCET_EINVALID, "a guarded put takes 1 to %d guards",
					FAUCET_STORE_GUARDS_MAX);
	memset(slots, 0, sizeof(slots));
	for (size_t i = 0; i < nslots; i++) {
		slots[i].g = i < n ? &guards[i] : NULL;
		slots[i].key = i < n ? guards[i].key : drop[i - n];
		slots[i].lock_fd = -1;
	}
	/* The put's key is locked too, compared or not: a compare-and-put of
	 * it (an operator's `state put --if-equals`) then never has a run's
	 * later write of it land between its compare and its rename. */
	slots[nslots].cond = cond;
	slots[nslots].lock_only = cond == NULL;
	slots[nslots].key = key;
	slots[nslots++].lock_fd = -1;
	if ((rc = faucet_file__root_get(fs, 1, &dfd)) != 0 ||
	    (rc = lock_guards(fs, &dfd, slots, nslots, &holds, unmade)) != 0 || *unmade)
		return rc;
	for (size_t i = 0; holds && i < nslots; i++)
		if (slots[i].cond != NULL && !slots[i].held) {
			*moved = 1;
			holds = 0;
		}
	ts = then_slot(slots, nslots, then); /* (lock_guards sorts the slots) */
	for (size_t i = 0; holds && rc == 0 && i < nslots; i++)
		if (slots[i].g != NULL)
			rc = faucet_file__prepare_put(fs, &dfd, slots[i].key, slots[i].g->value, 0,
						      slots[i].stem, slots[i].name, &slots[i].bytes,
						      &slots[i].len, &slots[i].owned);
	if (holds && rc == 0)
		rc = faucet_file__prepare_put(fs, &dfd, key, value, 0, kstem, kname, &kbytes, &klen,
					      &kowned);
	if (holds && rc == 0 && ts != NULL)
		rc = faucet_file__prepare_put(fs, &dfd, ts->key, then->value, 0, ts->stem, ts->name,
					      &tbytes, &tlen, &towned);
	if (holds && rc == 0) {
		temp_spec kspec = {kstem, "json"}, tspec = {ts ? ts->stem : NULL, "json"};
		faucet_durable_target k = {dfd, kname, kpath, "state file", faucet_file__temp_namer,
					   &kspec, file_reopen_root, fs};
		faucet_durable_target t = {dfd, ts ? ts->name : NULL, tpath, "state file",
					   faucet_file__temp_namer, &tspec, file_reopen_root, fs};
		faucet_durable_then th = {&t, tbytes, tlen, 0};
		drop_ctx d = {fs, dfd, slots, nslots, NULL, 0, 0};
		faucet_durable_hook hook = {ndrop > 0 ? drop_keys : NULL, &d, NULL};

		for (size_t i = 0; i < nslots; i++)
			if (slots[i].cond != NULL) {
				d.cond = &slots[i];
				hook.keep_last = key_still_holds;
			}

		guard_targets(fs, dfd, guards, n, slots, nslots, targets, bytes, lens);
		faucet_file__path_of(fs, kname, kpath);
		if (ts != NULL)
			faucet_file__path_of(fs, ts->name, tpath);
		rc = faucet__durable_replace_guarded(targets, bytes, lens, n, &k, kbytes, klen,
						     ndrop > 0 || d.cond != NULL ? &hook : NULL,
						     ts != NULL ? &th : NULL, written);
		*then_written = *written && th.done && (rc == 0 || rc == FAUCET_EUNKNOWN);
		if (rc == 0 && d.rc != 0)
			rc = d.rc; /* the guards are written, the key is not */
		*moved = rc == 0 && d.moved;
	}
	free(kowned);
	free(towned);
	for (size_t i = 0; i < nslots; i++) {
		free(slots[i].owned);
		if (slots[i].lock_fd >= 0)
			(void)close(slots[i].lock_fd); /* releases the lock */
	}
	return rc;
}

/* put_guarded_entered in the writers' lock. */
static int file_put_guarded_impl(file_store *fs, const faucet_store_guard *guards, size_t n,
				 const char *const *drop, size_t ndrop, const char *key,
				 const faucet_value *value, const faucet_store_guard *then,
				 const faucet_store_guard *cond, int *written, int *then_written,
				 int *moved)
{
	const char *made[FAUCET_STORE_GUARDS_MAX + 1];
	size_t nmade = 0;
	int gate = -1, unmade = 1, rc = 0;

	*written = 0;
	*then_written = 0;
	/* The keys compared, which must have lock files: the guards' and the
	 * condition's (too many guards: put_guarded_entered says so). */
	for (size_t i = 0; n <= FAUCET_STORE_GUARDS_MAX && i < n; i++)
		made[nmade++] = guards[i].key;
	if (cond != NULL && n <= FAUCET_STORE_GUARDS_MAX)
		made[nmade++] = key;
	for (int attempt = 0; rc == 0 && unmade; attempt++) {
		writers_leave(gate);
		gate = -1;
		rc = make_lock_files(fs, made, nmade, attempt);
		if (rc == 0)
			rc = enter_shared(fs, 1, &gate);
		if (rc == 0)
			rc = put_guarded_entered(fs, guards, n, drop, ndrop, key, value, then,
						 cond, written, then_written, moved, &unmade);
	}
	writers_leave(gate);
	return rc;
}

static int file_put_guarded_many(faucet_store_backend *b, const faucet_store_guard *guards,
				 size_t n, const char *const *drop, size_t ndrop, const char *key,
				 const faucet_value *value, int *written)
{
	int then_written;

	int moved = 0;

	return file_put_guarded_impl((file_store *)b, guards, n, drop, ndrop, key, value, NULL,
				     NULL, written, &then_written, &moved);
}

static int file_put_guarded_then(faucet_store_backend *b, const faucet_store_guard *guards,
				 size_t n, const char *const *drop, size_t ndrop, const char *key,
				 const faucet_value *value, const faucet_store_guard *then,
				 int *written, int *then_written)
{
	int moved = 0;

	return file_put_guarded_impl((file_store *)b, guards, n, drop, ndrop, key, value, then,
				     NULL, written, then_written, &moved);
}

static int file_put_guarded_if(faucet_store_backend *b, const faucet_store_guard *guards,
			       size_t n, const char *const *drop, size_t ndrop,
			       const faucet_store_guard *put, const faucet_store_guard *then,
			       int *written, int *then_written, int *moved)
{
	*moved = 0;
	return file_put_guarded_impl((file_store *)b, guards, n, drop, ndrop, put->key, put->value,
				     then, put, written, then_written, moved);
}

/* put_guarded_many with one guard. */
static int file_put_guarded(faucet_store_backend *b, const char *guard,
			    const faucet_value *expected, const faucet_value *guard_value,
			    const char *key, const faucet_value *value, int *written)
{
	faucet_store_guard g = {guard, expected, guard_value};

	return file_put_guarded_many(b, &g, 1, NULL, 0, key, value, written);
}

/* Remove `name` under dfd; *removed is set when a file went away. */
static int unlink_present(const file_store *fs, int dfd, const char *name, const char *what,
			  int *removed)
{
	char path[PATH_CAP];

	if (faucet__sys()->unlinkat(dfd, name, 0) == 0) {
		*removed = 1;
		return 0;
	}
	if (errno == ENOENT)
		return 0;
	faucet_file__path_of(fs, name, path);
	return faucet__error_os(FAUCET_EIO, errno, "failed to delete %s %s", what, path);
}

/* Remove a key's files and then its lock file, holding the key's lock;
 * *removed says whether a file went away.  Without `sync` the directory
 * is left for the caller to sync (a guarded put's drops). */
static int remove_locked(file_store *fs, int dfd, const char *stem, size_t stem_len, int sync,
			 int *removed)
{
	char name[FILE_NAME_CAP];
	int rc;

	faucet_file__name_from_stem(name, stem, ".json");
	rc = unlink_present(fs, dfd, name, "state file", removed);
	if (rc == 0 && faucet_file__stem_is_hashed(stem, stem_len)) {
		faucet_file__name_from_stem(name, stem, ".key");
		rc = unlink_present(fs, dfd, name, "state key file", removed);
	}
	/* A delete that returned must not be undone by a crash either.  When
	 * the sync fails the value is gone but may come back after a crash:
	 * the outcome is unknown, not a failure that left the value in place. */
	if (rc == 0 && *removed && sync && sync_root(fs, dfd) != 0) {
		(void)faucet__error_wrap("deleted, but the delete may not survive a crash");
		rc = faucet_error_set(FAUCET_EUNKNOWN, "%s", faucet_error_last()->message);
	}
	/* Unlink the lock file while still holding it: a waiter that wins the
	 * orphaned file notices and locks the path afresh (see above).  The
	 * value is durably gone by now, so a lock file that stays is only
	 * clutter (an empty file the next writer reuses): the delete succeeded,
	 * with a warning, rather than "failed" after the fact. */
	if (rc == 0) {
		int ignored = 0;
		faucet_file__name_from_stem(name, stem, ".json.lock");
		if (unlink_present(fs, dfd, name, "state lock", &ignored) != 0)
			faucet__warning_set("deleted, but %s", faucet_error_last()->message);
	}
	return rc;
}

/* Take the key's lock for a removal: *dfd is -1 (rc 0) when there is no
 * root, so nothing is stored; *lock_fd is -1 also when the key has no lock
 * file (take_key_lock). */
static int lock_for_removal(file_store *fs, const char *key, char *stem, size_t *stem_len,
			    int *dfd, int *lock_fd)
{
	int rc = faucet_file__root_get(fs, 0, dfd);

	*lock_fd = -1;
	if (rc == 0)
		rc = faucet_file__settle_legacy(fs, dfd, key);
	if (rc != 0 || *dfd < 0)
		return rc;
	if ((rc = faucet_file__key_stem(key, stem, stem_len)) != 0)
		return rc;
	return take_key_lock(fs, dfd, 0, stem, lock_fd);
}

static int file_del(faucet_store_backend *b, const char *key)
{
	file_store *fs = (file_store *)b;
	char stem[FILE_STEM_MAX + 1];
	size_t stem_len = 0;
	int dfd = -1, lock_fd = -1, removed = 0, gate, rc = enter_shared(fs, 0, &gate);

	/* A key without a lock file is removed unlocked, as a put writes it
	 * (lock_if_managed). */
	if (rc == 0 && gate >= 0)
		rc = lock_for_removal(fs, key, stem, &stem_len, &dfd, &lock_fd);
	if (rc == 0 && dfd >= 0)
		rc = remove_locked(fs, dfd, stem, stem_len, 1, &removed);
	if (lock_fd >= 0)
		(void)close(lock_fd);
	writers_leave(gate);
	return rc;
}

/* Under the key's lock, like compare-and-put: read, compare, remove. */
static int file_compare_and_delete(faucet_store_backend *b, const char *key,
				   const faucet_value *expected, int *deleted)
{
	file_store *fs = (file_store *)b;
	char stem[FILE_STEM_MAX + 1], name[FILE_NAME_CAP];
	faucet_value *current = NULL;
	size_t stem_len = 0;
	int dfd = -1, lock_fd = -1, removed = 0, gate = -1, rc = 0;

	*deleted = 0;
	/* Compared, so under the key's lock: a key without a lock file gets
	 * one first (make_lock_files). */
	for (int attempt = 0; rc == 0 && lock_fd < 0; attempt++) {
		writers_leave(gate);
		gate = -1;
		if (attempt > 0)
			rc = make_lock_files(fs, &key, 1, attempt - 1);
		if (rc == 0)
			rc = enter_shared(fs, 0, &gate);
		if (rc == 0 && gate >= 0)
			rc = lock_for_removal(fs, key, stem, &stem_len, &dfd, &lock_fd);
		if (rc == 0 && dfd < 0)
			break; /* no root: nothing stored */
	}
	if (rc != 0 || lock_fd < 0) {
		writers_leave(gate);
		return rc;
	}
	faucet_file__name_from_stem(name, stem, ".json");
	rc = faucet_file__read_entry(fs, key, name, NULL, &current);
	if (rc == 0 && current != NULL && faucet_value_equal(current, expected)) {
		rc = remove_locked(fs, dfd, stem, stem_len, 1, &removed);
		*deleted = rc == 0;
	}
	faucet_value_free(current);
	(void)close(lock_fd);
	writers_leave(gate);
	return rc;
}

/* ---- what a compare-and-put batch (file_batch.c) does key by key ---------- */

int faucet_file__entry_holds(file_store *fs, int *dfd, const char *key,
			     const faucet_value *expected, int *verified, int *holds)
{
	char stem[FILE_STEM_MAX + 1], name[FILE_NAME_CAP];
	faucet_value *current = NULL;
	int rc = faucet_file__settle_legacy(fs, dfd, key);

	*holds = 0;
	if (rc == 0)
		rc = faucet_file__key_stem(key, stem, NULL);
	if (rc != 0)
		return rc;
	faucet_file__name_from_stem(name, stem, ".json");
	rc = read_entry_as(fs, key, name, verified, expected, &current, holds);
	faucet_value_free(current);
	return rc;
}

int faucet_file__store_value(file_store *fs, const char *key, const faucet_value *value)
{
	return store_value(fs, key, value);
}

int faucet_file__has_lock_file(int dfd, const char *key)
{
	char stem[FILE_STEM_MAX + 1], name[FILE_NAME_CAP];
	struct stat st;

	if (faucet_file__key_stem(key, stem, NULL) != 0)
		return 0; /* the write itself says what is wrong with the key */
	faucet_file__name_from_stem(name, stem, ".json.lock");
	return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

int faucet_file__remove_key(file_store *fs, const char *key, int sync, int *removed)
{
	char stem[FILE_STEM_MAX + 1];
	size_t stem_len = 0;
	int dfd = -1, lock_fd = -1, rc = lock_for_removal(fs, key, stem, &stem_len, &dfd, &lock_fd);

	*removed = 0;
	if (rc == 0 && dfd >= 0)
		rc = remove_locked(fs, dfd, stem, stem_len, sync, removed);
	if (lock_fd >= 0)
		(void)close(lock_fd);
	return rc;
}

int faucet_file__sync_root(const file_store *fs, int dfd)
{
	return sync_root(fs, dfd);
}

static int file_list(faucet_store_backend *b, const char *prefix, faucet_strarray *out)
{
	file_store *fs = (file_store *)b;
	faucet_strarray legacy = {NULL, 0};
	key_list found = {NULL, 0, 0};
	int pending, dfd, rc = 0;
	DIR *d;

	/* The listing opens the path itself: it always sees the directory the
	 * path names now, at the price of one lookup per listing. */
	d = opendir(fs->root);
	if (d == NULL) {
		if (errno == ENOENT)
			return 0;
		return faucet__error_os(FAUCET_EIO, errno, "failed to list state dir %s", fs->root);
	}
	/* The first use of the store renames legacy files; the listing finds
	 * them in the same pass instead of reading the directory twice. */
	pending = !atomic_load_explicit(&fs->migrated, memory_order_acquire);
	if (pending) {
		(void)pthread_mutex_lock(&fs->migrate_lock);
		pending = !atomic_load(&fs->migrated);
		if (!pending)
			(void)pthread_mutex_unlock(&fs->migrate_lock);
	}
	rc = faucet_file__scan_dir(fs, d, prefix, &found, pending ? &legacy : NULL);
	(void)closedir(d);
	if (pending) {
		if (rc == 0)
			rc = faucet_file__root_get(fs, 0, &dfd);
		if (rc == 0 && dfd >= 0)
			rc = faucet_file__migrate_names(fs, dfd, &legacy);
		if (rc == 0)
			atomic_store_explicit(&fs->migrated, 1, memory_order_release);
		(void)pthread_mutex_unlock(&fs->migrate_lock);
		faucet_strarray_dispose(&legacy);
	}
	if (rc != 0) {
		key_list_dispose(&found);
		return rc;
	}
	return key_list_finish(&found, out);
}

/* ---- open and free ----------------------------------------------------------- */

static void file_free(faucet_store_backend *b)
{
	file_store *fs = (file_store *)b;
	int fd = atomic_load(&fs->dirfd);

	if (fd >= 0)
		(void)close(fd);
	for (size_t i = 0; i < fs->nretired; i++)
		(void)close(fs->retired[i]);
	free(fs->retired);
	faucet__keyring_free(fs->keyring); /* wipes the derived keys */
	free(fs->root);
	(void)pthread_mutex_destroy(&fs->dir_lock);
	(void)pthread_mutex_destroy(&fs->migrate_lock);
	free(fs);
}

/* Each version's size of faucet_file_options. */
static const size_t file_options_sizes[] = {sizeof(faucet_file_options)};

int faucet_file_options_init(faucet_file_options *o, unsigned int version)
{
	static const faucet_file_options defaults = FAUCET_FILE_OPTIONS_INIT;

	return faucet__options_init(o, &defaults, file_options_sizes, version,
				    FAUCET_FILE_OPTIONS_VERSION, "faucet_file_options");
}

int faucet_store_open_file(faucet_store **out, const char *root,
			   const faucet_file_options *caller_opts)
{
	faucet_file_options o = FAUCET_FILE_OPTIONS_INIT;
	const faucet_file_options *opts = &o;
	file_store *fs;
	size_t len;

	if (out == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_store_open_file: out is NULL");
	*out = NULL;
	if (caller_opts != NULL &&
	    faucet__options_load(&o, sizeof(o), caller_opts, file_options_sizes,
				 FAUCET_FILE_OPTIONS_VERSION,
				 "faucet_file_options") != 0)
		return FAUCET_EINVALID;
	if (root == NULL || root[0] == '\0')
		return faucet_error_set(FAUCET_ECONFIG, "file state store needs a non-empty path");
	fs = faucet__calloc(1, sizeof(*fs));
	if (fs == NULL)
		return FAUCET_ENOMEM;
	/* A key of NULL with no previous keys means "no encryption" (store.h). */
	if (opts != NULL && opts->encryption != NULL &&
	    (opts->encryption->key != NULL || opts->encryption->previous_count > 0)) {
		const faucet_encryption_options *enc = opts->encryption;
		int rc = faucet__keyring_new(&fs->keyring, enc->key, enc->previous_keys,
					     enc->previous_count);
		if (rc != 0) {
			free(fs);
			return rc;
		}
	}
	len = strlen(root);
	while (len > 1 && root[len - 1] == '/')
		len--;
	fs->root = faucet__strndup(root, len);
	if (fs->root == NULL) {
		faucet__keyring_free(fs->keyring);
		free(fs);
		return FAUCET_ENOMEM;
	}
	if (pthread_mutex_init(&fs->dir_lock, NULL) != 0) {
		faucet__keyring_free(fs->keyring);
		free(fs->root);
		free(fs);
		return faucet_error_set(FAUCET_ENOMEM, "cannot create the file store's lock");
	}
	if (pthread_mutex_init(&fs->migrate_lock, NULL) != 0) {
		(void)pthread_mutex_destroy(&fs->dir_lock);
		faucet__keyring_free(fs->keyring);
		free(fs->root);
		free(fs);
		return faucet_error_set(FAUCET_ENOMEM, "cannot create the file store's lock");
	}
	atomic_init(&fs->dirfd, -1);
	atomic_init(&fs->migrated, 0);
	atomic_init(&fs->fold_case, -1);
	atomic_init(&fs->marked, 0);
	fs->base.version = FAUCET_STORE_BACKEND_VERSION;
	fs->base.name = "file";
	fs->base.get = file_get;
	fs->base.put = file_put;
	fs->base.del = file_del;
	fs->base.list = file_list;
	fs->base.compare_and_put = file_compare_and_put;
	fs->base.put_guarded = file_put_guarded;
	fs->base.put_guarded_many = file_put_guarded_many;
	fs->base.put_guarded_then = file_put_guarded_then;
	fs->base.put_guarded_if = file_put_guarded_if;
	fs->base.compare_and_delete = file_compare_and_delete;
	fs->base.put_batch = NULL; /* a batch of files is not atomic: put_many */
	fs->base.put_many = faucet_file__put_many;
	fs->base.compare_and_put_batch = faucet_file__compare_and_put_batch;
	fs->base.cas_batch_max = FAUCET__CAS_BATCH_ONE_TXN;
	fs->base.get_many = file_get_many;
	fs->base.check = faucet_file__check;
	fs->base.free = file_free;
	return faucet_store_new(out, &fs->base);
}
