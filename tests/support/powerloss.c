/*
 * powerloss.c - the power-loss simulator of powerloss.h.
 *
 * The model is a set of nodes (files and directories) numbered from 0, the
 * sandbox root.  Each node keeps its content as it was when recording
 * started (`init_*`) and as it is now (`cur_*`); "now" is only needed to
 * resolve names and write offsets while recording.  Every seam call appends
 * one entry to the log - a no-op entry for calls that change nothing we
 * model (flock, close, failed calls, paths outside the sandbox) - so crash
 * point c simply means "the first c calls happened".
 *
 * Durability is one number per logged change: `synced_at`, the index of
 * the first later fsync of the node the change belongs to (the file for a
 * write or truncate, the directory for a create, rename, link, unlink or
 * mkdir).  At crash point c a change is durable when synced_at < c.  An
 * image is built by replaying, in issue order over the initial snapshot,
 * the durable changes plus a chosen prefix of the unsynced ones.
 *
 * The model is strict on purpose: fsync of a new file does not make its
 * directory entry durable, as POSIX promises nothing of the kind (ext4
 * often does it anyway, which is exactly why a real disk cannot show the
 * missing directory sync that this model exposes).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "powerloss.h"
#include "common/sys.h"

typedef struct {
	char *name;
	int node;
} pl_entry;

typedef struct {
	pl_entry *items;
	size_t count;
} pl_dir;

typedef struct {
	unsigned char *data;
	size_t len;
} pl_bytes;

typedef struct {
	int is_dir;
	pl_bytes init_data;
	pl_dir init_dir;
	pl_bytes cur_data;
	pl_dir cur_dir;
} pl_node;

enum { OP_NOP, OP_FSYNC, OP_WRITE, OP_TRUNC, OP_CREATE, OP_MKDIR, OP_RENAME, OP_LINK, OP_UNLINK };

typedef struct {
	int kind;
	const char *call;
	int target;       /* the node whose fsync makes this change durable */
	size_t synced_at; /* index of that fsync, SIZE_MAX while none */
	int dir, dir2;    /* directory changes: where (dir2: rename/link target) */
	char *name, *name2;
	int node;         /* create / mkdir: the new node */
	size_t off;       /* write: where, what */
	pl_bytes bytes;
} pl_op;

typedef struct {
	int node; /* -1 = untracked */
	size_t off;
} pl_fd;

#define PL_MAX_FD 65536

static struct {
	pthread_mutex_t lock;
	int active;
	int paused;
	int refuse_tmpfile;
	char *sandbox;
	size_t sandbox_len;
	pl_node *nodes;
	size_t nnodes;
	pl_op *log;
	size_t nlog;
	pl_fd *fds;
	faucet_sys table;
} sim = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, NULL, 0, NULL, 0, NULL, 0, NULL, {0}};

static void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (q == NULL) {
		fprintf(stderr, "powerloss: out of memory\n");
		abort();
	}
	return q;
}

static char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;

	return memcpy(xrealloc(NULL, n), s, n);
}

static void bytes_copy(pl_bytes *dst, const pl_bytes *src)
{
	dst->data = xrealloc(NULL, src->len);
	if (src->len)
		memcpy(dst->data, src->data, src->len);
	dst->len = src->len;
}

/* Write `len` bytes at `off`, zero-filling a gap, as pwrite would. */
static void bytes_write(pl_bytes *b, size_t off, const unsigned char *data, size_t len)
{
	if (off + len > b->len) {
		b->data = xrealloc(b->data, off + len);
		if (off > b->len)
			memset(b->data + b->len, 0, off - b->len);
		b->len = off + len;
	}
	if (len)
		memcpy(b->data + off, data, len);
}

static void dir_copy(pl_dir *dst, const pl_dir *src)
{
	dst->items = xrealloc(NULL, src->count * sizeof(*dst->items));
	for (size_t i = 0; i < src->count; i++) {
		dst->items[i].name = xstrdup(src->items[i].name);
		dst->items[i].node = src->items[i].node;
	}
	dst->count = src->count;
}

static void dir_free(pl_dir *d)
{
	for (size_t i = 0; i < d->count; i++)
		free(d->items[i].name);
	free(d->items);
	d->items = NULL;
	d->count = 0;
}

static int dir_find(const pl_dir *d, const char *name)
{
	for (size_t i = 0; i < d->count; i++)
		if (strcmp(d->items[i].name, name) == 0)
			return (int)i;
	return -1;
}

static int dir_get(const pl_dir *d, const char *name)
{
	int i = dir_find(d, name);

	return i < 0 ? -1 : d->items[i].node;
}

/* Point `name` at `node`, replacing what it named. */
static void dir_set(pl_dir *d, const char *name, int node)
{
	int i = dir_find(d, name);

	if (i >= 0) {
		d->items[i].node = node;
		return;
	}
	d->items = xrealloc(d->items, (d->count + 1) * sizeof(*d->items));
	d->items[d->count].name = xstrdup(name);
	d->items[d->count].node = node;
	d->count++;
}

static void dir_remove(pl_dir *d, const char *name)
{
	int i = dir_find(d, name);

	if (i < 0)
		return;
	free(d->items[i].name);
	d->items[i] = d->items[d->count - 1];
	d->count--;
}

static int node_new(int is_dir)
{
	sim.nodes = xrealloc(sim.nodes, (sim.nnodes + 1) * sizeof(*sim.nodes));
	memset(&sim.nodes[sim.nnodes], 0, sizeof(*sim.nodes));
	sim.nodes[sim.nnodes].is_dir = is_dir;
	return (int)sim.nnodes++;
}

/* ---- snapshot --------------------------------------------------------- */

static int read_whole(const char *path, pl_bytes *out)
{
	FILE *f = fopen(path, "rb");
	unsigned char buf[65536];
	size_t n;

	out->data = NULL;
	out->len = 0;
	if (f == NULL)
		return -1;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		bytes_write(out, out->len, buf, n);
	fclose(f);
	return 0;
}

/* Model the directory at `path` as node `id` (its initial = current). */
static int snapshot_dir(const char *path, int id)
{
	DIR *d = opendir(path);
	struct dirent *e;

	if (d == NULL) {
		fprintf(stderr, "powerloss: cannot open %s: %s\n", path, strerror(errno));
		return -1;
	}
	while ((e = readdir(d)) != NULL) {
		char child[4096];
		struct stat st;
		int cid;

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		(void)snprintf(child, sizeof(child), "%s/%s", path, e->d_name);
		if (lstat(child, &st) != 0 || !(S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)))
			continue; /* symlinks and the rest are not modelled */
		cid = node_new(S_ISDIR(st.st_mode));
		dir_set(&sim.nodes[id].cur_dir, e->d_name, cid);
		if (S_ISDIR(st.st_mode)) {
			if (snapshot_dir(child, cid) != 0) {
				closedir(d);
				return -1;
			}
		} else if (read_whole(child, &sim.nodes[cid].cur_data) != 0) {
			closedir(d);
			fprintf(stderr, "powerloss: cannot read %s\n", child);
			return -1;
		}
	}
	closedir(d);
	return 0;
}

/* ---- name resolution while recording ---------------------------------- */

static int fd_node(int fd);

/* Resolve (dirfd, path) to the directory node holding its last component
 * (copied into leaf) - or, for the sandbox itself, *parent = -1 and the
 * root.  Returns 0, or -1 when the path lies outside the model. */
static int resolve(int dirfd, const char *path, int *parent, char *leaf, size_t cap)
{
	char buf[4096], *save = NULL, *part, *next;
	int at;

	if (path[0] == '/' || dirfd == AT_FDCWD) {
		char abs[4096];

		if (path[0] == '/') {
			(void)snprintf(abs, sizeof(abs), "%s", path);
		} else {
			char cwd[2048];

			if (getcwd(cwd, sizeof(cwd)) == NULL)
				return -1;
			(void)snprintf(abs, sizeof(abs), "%s/%s", cwd, path);
		}
		if (strncmp(abs, sim.sandbox, sim.sandbox_len) != 0 ||
		    (abs[sim.sandbox_len] != '\0' && abs[sim.sandbox_len] != '/'))
			return -1;
		at = 0;
		(void)snprintf(buf, sizeof(buf), "%s", abs + sim.sandbox_len);
	} else {
		at = fd_node(dirfd);
		if (at < 0)
			return -1;
		(void)snprintf(buf, sizeof(buf), "%s", path);
	}
	*parent = -1;
	leaf[0] = '\0';
	part = strtok_r(buf, "/", &save);
	if (part == NULL) { /* the directory itself */
		*parent = -1;
		(void)snprintf(leaf, cap, "%d", at);
		return at == 0 || sim.nodes[at].is_dir ? 1 : -1;
	}
	while (part != NULL) {
		next = strtok_r(NULL, "/", &save);
		if (strcmp(part, "..") == 0)
			return -1;
		if (strcmp(part, ".") == 0) {
			part = next;
			continue;
		}
		if (next == NULL) {
			*parent = at;
			(void)snprintf(leaf, cap, "%s", part);
			return 0;
		}
		at = dir_get(&sim.nodes[at].cur_dir, part);
		if (at < 0 || !sim.nodes[at].is_dir)
			return -1;
		part = next;
	}
	/* The path ended in "." components: the directory `at` itself. */
	(void)snprintf(leaf, cap, "%d", at);
	return 1;
}

/* ---- the log ---------------------------------------------------------- */

static pl_op *log_add(const char *call, int kind, int target)
{
	pl_op *op;

	sim.log = xrealloc(sim.log, (sim.nlog + 1) * sizeof(*sim.log));
	op = &sim.log[sim.nlog++];
	memset(op, 0, sizeof(*op));
	op->call = call;
	op->kind = kind;
	op->target = target;
	op->synced_at = SIZE_MAX;
	op->dir = op->dir2 = op->node = -1;
	return op;
}

static int recording(void)
{
	return sim.active && !sim.paused;
}

static void fd_track(int fd, int node)
{
	if (fd >= 0 && fd < PL_MAX_FD) {
		sim.fds[fd].node = node;
		sim.fds[fd].off = 0;
	}
}

/* The node an absolute path names in the current model, or -1. */
static int node_of_path(const char *abs)
{
	char buf[4096], *save = NULL, *part;
	int at = 0;

	if (strncmp(abs, sim.sandbox, sim.sandbox_len) != 0 ||
	    (abs[sim.sandbox_len] != '\0' && abs[sim.sandbox_len] != '/'))
		return -1;
	(void)snprintf(buf, sizeof(buf), "%s", abs + sim.sandbox_len);
	for (part = strtok_r(buf, "/", &save); part != NULL; part = strtok_r(NULL, "/", &save)) {
		if (!sim.nodes[at].is_dir)
			return -1;
		at = dir_get(&sim.nodes[at].cur_dir, part);
		if (at < 0)
			return -1;
	}
	return at;
}

/* The node of a descriptor: one the seam opened, or else - a descriptor
 * opened around the seam, e.g. a directory opened read-only with open() -
 * whatever its /proc/self/fd link names in the model. */
static int fd_node(int fd)
{
	char link[64], target[4096];
	ssize_t n;
	int node;

	if (fd < 0 || fd >= PL_MAX_FD)
		return -1;
	/* The link first: a number closed around the seam and reused must not
	 * keep its old node.  A file unlinked while open has no path any more:
	 * then what the seam recorded stands. */
	(void)snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, target, sizeof(target) - 1);
	if (n <= 0)
		return sim.fds[fd].node;
	target[n] = '\0';
	node = node_of_path(target);
	if (node < 0)
		return sim.fds[fd].node;
	if (node != sim.fds[fd].node) {
		sim.fds[fd].node = node;
		sim.fds[fd].off = 0;
	}
	return node;
}

static int rec_openat(int dirfd, const char *name, int flags, mode_t mode)
{
	const faucet_sys *real = faucet__sys_default();
	char leaf[1024];
	int parent = -1, node = -1, existed = 0, where, fd;

	pthread_mutex_lock(&sim.lock);
	if ((flags & O_TMPFILE) == O_TMPFILE) {
		/* An unnamed file: a node without a directory entry until a
		 * linkat names it. */
		if (sim.refuse_tmpfile) {
			pthread_mutex_unlock(&sim.lock);
			errno = EOPNOTSUPP;
			return -1;
		}
		fd = real->openat(dirfd, name, flags, mode);
		if (recording()) {
			log_add("openat", OP_NOP, -1);
			fd_track(fd, fd >= 0 && resolve(dirfd, name, &parent, leaf, sizeof(leaf)) == 1
					     ? node_new(0)
					     : -1);
		}
		pthread_mutex_unlock(&sim.lock);
		return fd;
	}
	where = recording() ? resolve(dirfd, name, &parent, leaf, sizeof(leaf)) : -1;
	if (where == 0) {
		node = dir_get(&sim.nodes[parent].cur_dir, leaf);
		existed = node >= 0;
	} else if (where == 1) {
		node = atoi(leaf);
		existed = 1;
	}
	fd = real->openat(dirfd, name, flags, mode);
	if (!recording()) {
		pthread_mutex_unlock(&sim.lock);
		return fd;
	}
	if (fd < 0 || where < 0) {
		log_add("openat", OP_NOP, -1);
		fd_track(fd, -1);
	} else if (!existed) {
		pl_op *op;

		int through = (flags & O_CREAT) ? -1 : fd_node(fd);

		if (through >= 0) {
			/* A symlink (not modelled) that leads to a modelled file:
			 * the descriptor is that file's. */
			if ((flags & O_TRUNC) && (flags & O_ACCMODE) != O_RDONLY &&
			    !sim.nodes[through].is_dir) {
				sim.nodes[through].cur_data.len = 0;
				log_add("openat", OP_TRUNC, through);
			} else {
				log_add("openat", OP_NOP, -1);
			}
		} else if (!(flags & O_CREAT)) {
			/* It exists on disk but not in the model: something wrote it
			 * around the seam.  Say so; the model cannot vouch for it. */
			fprintf(stderr, "powerloss: %s appeared outside the seam\n", name);
			log_add("openat", OP_NOP, -1);
			fd_track(fd, -1);
		} else {
			node = node_new(0);
			dir_set(&sim.nodes[parent].cur_dir, leaf, node);
			op = log_add("openat", OP_CREATE, parent);
			op->dir = parent;
			op->name = xstrdup(leaf);
			op->node = node;
			fd_track(fd, node);
		}
	} else {
		if ((flags & O_TRUNC) && (flags & O_ACCMODE) != O_RDONLY && !sim.nodes[node].is_dir) {
			sim.nodes[node].cur_data.len = 0;
			log_add("openat", OP_TRUNC, node);
		} else {
			log_add("openat", OP_NOP, -1);
		}
		fd_track(fd, node);
		if ((flags & O_APPEND) && fd >= 0 && fd < PL_MAX_FD)
			sim.fds[fd].off = sim.nodes[node].cur_data.len;
	}
	pthread_mutex_unlock(&sim.lock);
	return fd;
}

static ssize_t rec_write(int fd, const void *buf, size_t len)
{
	ssize_t n = faucet__sys_default()->write(fd, buf, len);
	int node;

	pthread_mutex_lock(&sim.lock);
	if (recording()) {
		node = fd_node(fd);
		if (n > 0 && node >= 0 && !sim.nodes[node].is_dir) {
			pl_op *op = log_add("write", OP_WRITE, node);

			op->off = sim.fds[fd].off;
			op->bytes.data = NULL;
			op->bytes.len = 0;
			bytes_write(&op->bytes, 0, buf, (size_t)n);
			bytes_write(&sim.nodes[node].cur_data, op->off, buf, (size_t)n);
			sim.fds[fd].off += (size_t)n;
		} else {
			log_add("write", OP_NOP, -1);
		}
	}
	pthread_mutex_unlock(&sim.lock);
	return n;
}

static int rec_fsync(int fd)
{
	int rc = faucet__sys_default()->fsync(fd), node;

	pthread_mutex_lock(&sim.lock);
	if (recording()) {
		node = fd_node(fd);
		if (rc == 0 && node >= 0) {
			size_t at = sim.nlog;

			for (size_t i = 0; i < at; i++)
				if (sim.log[i].target == node && sim.log[i].synced_at == SIZE_MAX)
					sim.log[i].synced_at = at;
			log_add("fsync", OP_FSYNC, -1);
		} else {
			log_add("fsync", OP_NOP, -1);
		}
	}
	pthread_mutex_unlock(&sim.lock);
	return rc;
}

/* syncfs: every file's data is durable, as if each file had been fsynced.
 * Directories are not: the model keeps asking for their own fsync (ext4's
 * syncfs commits them too, but the store must not rely on that). */
static int rec_syncfs(int fd)
{
	int rc = faucet__sys_default()->syncfs(fd);

	pthread_mutex_lock(&sim.lock);
	if (recording()) {
		if (rc == 0) {
			size_t at = sim.nlog;

			for (size_t i = 0; i < at; i++) {
				int t = sim.log[i].target;
				if (t >= 0 && !sim.nodes[t].is_dir && sim.log[i].synced_at == SIZE_MAX)
					sim.log[i].synced_at = at;
			}
			log_add("syncfs", OP_FSYNC, -1);
		} else {
			log_add("syncfs", OP_NOP, -1);
		}
	}
	pthread_mutex_unlock(&sim.lock);
	return rc;
}

/* rename and link: both ends resolved before the call, modelled after it. */
static int two_names(const char *call, int kind, int odir, const char *oname, int ndir,
		     const char *nname, int rc)
{
	char oleaf[1024], nleaf[1024];
	int op_parent, np_parent, node;
	pl_op *op;

	if (rc != 0 || resolve(odir, oname, &op_parent, oleaf, sizeof(oleaf)) != 0 ||
	    resolve(ndir, nname, &np_parent, nleaf, sizeof(nleaf)) != 0 ||
	    (node = dir_get(&sim.nodes[op_parent].cur_dir, oleaf)) < 0) {
		log_add(call, OP_NOP, -1);
		return rc;
	}
	dir_set(&sim.nodes[np_parent].cur_dir, nleaf, node);
	if (kind == OP_RENAME)
		dir_remove(&sim.nodes[op_parent].cur_dir, oleaf);
	op = log_add(call, kind, np_parent);
	op->dir = op_parent;
	op->name = xstrdup(oleaf);
	op->dir2 = np_parent;
	op->name2 = xstrdup(nleaf);
	return rc;
}

static int rec_renameat(int odir, const char *oname, int ndir, const char *nname)
{
	int rc, out;

	pthread_mutex_lock(&sim.lock);
	if (!recording()) {
		pthread_mutex_unlock(&sim.lock);
		return faucet__sys_default()->renameat(odir, oname, ndir, nname);
	}
	/* Resolve the source before the call moves it: two_names() looks it up
	 * in the model, which still has it. */
	rc = faucet__sys_default()->renameat(odir, oname, ndir, nname);
	out = two_names("renameat", OP_RENAME, odir, oname, ndir, nname, rc);
	pthread_mutex_unlock(&sim.lock);
	return out;
}

/* linkat of an open descriptor through /proc/self/fd/N: the descriptor's
 * node gets the name (how an unnamed O_TMPFILE file is named). */
static int link_descriptor(const char *oname, int ndir, const char *nname, int rc)
{
	char nleaf[1024];
	int np_parent, node = fd_node(atoi(oname + strlen("/proc/self/fd/")));
	pl_op *op;

	if (rc != 0 || node < 0 || resolve(ndir, nname, &np_parent, nleaf, sizeof(nleaf)) != 0) {
		log_add("linkat", OP_NOP, -1);
		return rc;
	}
	dir_set(&sim.nodes[np_parent].cur_dir, nleaf, node);
	op = log_add("linkat", OP_LINK, np_parent);
	op->node = node; /* op->dir stays -1: the source is the node itself */
	op->dir2 = np_parent;
	op->name2 = xstrdup(nleaf);
	return rc;
}

static int rec_linkat(int odir, const char *oname, int ndir, const char *nname, int flags)
{
	int rc, out;

	pthread_mutex_lock(&sim.lock);
	rc = faucet__sys_default()->linkat(odir, oname, ndir, nname, flags);
	if (!recording())
		out = rc;
	else if (odir == AT_FDCWD && strncmp(oname, "/proc/self/fd/", 14) == 0)
		out = link_descriptor(oname, ndir, nname, rc);
	else
		out = two_names("linkat", OP_LINK, odir, oname, ndir, nname, rc);
	pthread_mutex_unlock(&sim.lock);
	return out;
}

static int rec_unlinkat(int dirfd, const char *name, int flags)
{
	char leaf[1024];
	int parent, rc;

	pthread_mutex_lock(&sim.lock);
	rc = faucet__sys_default()->unlinkat(dirfd, name, flags);
	if (recording()) {
		if (rc == 0 && resolve(dirfd, name, &parent, leaf, sizeof(leaf)) == 0) {
			pl_op *op = log_add("unlinkat", OP_UNLINK, parent);

			dir_remove(&sim.nodes[parent].cur_dir, leaf);
			op->dir = parent;
			op->name = xstrdup(leaf);
		} else {
			log_add("unlinkat", OP_NOP, -1);
		}
	}
	pthread_mutex_unlock(&sim.lock);
	return rc;
}

static int rec_mkdirat(int dirfd, const char *name, mode_t mode)
{
	char leaf[1024];
	int parent, rc;

	pthread_mutex_lock(&sim.lock);
	rc = faucet__sys_default()->mkdirat(dirfd, name, mode);
	if (recording()) {
		if (rc == 0 && resolve(dirfd, name, &parent, leaf, sizeof(leaf)) == 0) {
			pl_op *op = log_add("mkdirat", OP_MKDIR, parent);

			op->node = node_new(1);
			dir_set(&sim.nodes[parent].cur_dir, leaf, op->node);
			op->dir = parent;
			op->name = xstrdup(leaf);
		} else {
			log_add("mkdirat", OP_NOP, -1);
		}
	}
	pthread_mutex_unlock(&sim.lock);
	return rc;
}

static int rec_flock(int fd, int op)
{
	int rc = faucet__sys_default()->flock(fd, op);

	pthread_mutex_lock(&sim.lock);
	if (recording())
		log_add("flock", OP_NOP, -1);
	pthread_mutex_unlock(&sim.lock);
	return rc;
}

static int rec_close(int fd)
{
	int rc = faucet__sys_default()->close(fd);

	pthread_mutex_lock(&sim.lock);
	if (recording()) {
		fd_track(fd, -1);
		log_add("close", OP_NOP, -1);
	}
	pthread_mutex_unlock(&sim.lock);
	return rc;
}

/* ---- public: recording ------------------------------------------------ */

void pl_refuse_tmpfile(int refuse)
{
	pthread_mutex_lock(&sim.lock);
	sim.refuse_tmpfile = refuse;
	pthread_mutex_unlock(&sim.lock);
}

int pl_start(const char *sandbox)
{
	pl_stop();
	sim.sandbox = xstrdup(sandbox);
	sim.sandbox_len = strlen(sandbox);
	while (sim.sandbox_len > 1 && sim.sandbox[sim.sandbox_len - 1] == '/')
		sim.sandbox[--sim.sandbox_len] = '\0';
	sim.fds = xrealloc(NULL, PL_MAX_FD * sizeof(*sim.fds));
	for (size_t i = 0; i < PL_MAX_FD; i++)
		sim.fds[i].node = -1;
	(void)node_new(1);
	if (snapshot_dir(sim.sandbox, 0) != 0) {
		pl_stop();
		return -1;
	}
	for (size_t i = 0; i < sim.nnodes; i++) {
		bytes_copy(&sim.nodes[i].init_data, &sim.nodes[i].cur_data);
		dir_copy(&sim.nodes[i].init_dir, &sim.nodes[i].cur_dir);
	}
	sim.table.openat = rec_openat;
	sim.table.write = rec_write;
	sim.table.fsync = rec_fsync;
	sim.table.renameat = rec_renameat;
	sim.table.linkat = rec_linkat;
	sim.table.unlinkat = rec_unlinkat;
	sim.table.mkdirat = rec_mkdirat;
	sim.table.flock = rec_flock;
	sim.table.close = rec_close;
	sim.table.syncfs = rec_syncfs;
	sim.active = 1;
	sim.paused = 0;
	faucet__sys_set(&sim.table);
	return 0;
}

void pl_stop(void)
{
	faucet__sys_set(NULL);
	pthread_mutex_lock(&sim.lock);
	for (size_t i = 0; i < sim.nnodes; i++) {
		free(sim.nodes[i].init_data.data);
		free(sim.nodes[i].cur_data.data);
		dir_free(&sim.nodes[i].init_dir);
		dir_free(&sim.nodes[i].cur_dir);
	}
	free(sim.nodes);
	for (size_t i = 0; i < sim.nlog; i++) {
		free(sim.log[i].name);
		free(sim.log[i].name2);
		free(sim.log[i].bytes.data);
	}
	free(sim.log);
	free(sim.fds);
	free(sim.sandbox);
	sim.nodes = NULL;
	sim.nnodes = 0;
	sim.log = NULL;
	sim.nlog = 0;
	sim.fds = NULL;
	sim.sandbox = NULL;
	sim.active = 0;
	pthread_mutex_unlock(&sim.lock);
}

void pl_pause(int paused)
{
	pthread_mutex_lock(&sim.lock);
	sim.paused = paused;
	pthread_mutex_unlock(&sim.lock);
}

size_t pl_calls(void)
{
	return sim.nlog;
}

const char *pl_call_name(size_t i)
{
	return i < sim.nlog ? sim.log[i].call : "?";
}

/* ---- public: images --------------------------------------------------- */

static int changes(const pl_op *op)
{
	return op->kind != OP_NOP && op->kind != OP_FSYNC;
}

/* The unsynced changes at crash point c, in issue order, into *out (owned
 * by the caller); their count. */
static size_t unsynced_at(size_t c, size_t **out)
{
	size_t n = 0;

	*out = xrealloc(NULL, (c + 1) * sizeof(**out));
	for (size_t j = 0; j < c && j < sim.nlog; j++)
		if (changes(&sim.log[j]) && !(sim.log[j].synced_at < c))
			(*out)[n++] = j;
	return n;
}

size_t pl_image_count(size_t c)
{
	size_t *u, n = unsynced_at(c, &u), writes = 0;

	for (size_t i = 0; i < n; i++)
		writes += sim.log[u[i]].kind == OP_WRITE;
	free(u);
	return 1 + n + writes;
}

/* Which image `which` is: `prefix` unsynced changes applied, and when
 * `torn` the last of them a write applied half. */
static void image_plan(size_t c, size_t which, size_t *prefix, int *torn)
{
	size_t *u, n = unsynced_at(c, &u);

	*torn = 0;
	*prefix = which <= n ? which : 0;
	if (which > n) {
		size_t want = which - n, seen = 0;

		for (size_t i = 0; i < n; i++) {
			if (sim.log[u[i]].kind != OP_WRITE)
				continue;
			if (++seen == want) {
				*prefix = i + 1;
				*torn = 1;
				break;
			}
		}
	}
	free(u);
}

void pl_image_describe(size_t c, size_t which, char *buf, size_t cap)
{
	size_t prefix;
	int torn;

	image_plan(c, which, &prefix, &torn);
	if (prefix == 0)
		(void)snprintf(buf, cap, "crash after call %zu (%s): every unsynced change lost", c,
			       c ? pl_call_name(c - 1) : "none");
	else
		(void)snprintf(buf, cap, "crash after call %zu (%s): the first %zu unsynced change(s) kept%s",
			       c, c ? pl_call_name(c - 1) : "none", prefix,
			       torn ? ", the last a torn write" : "");
}

static int materialise(pl_node *img, int id, const char *path)
{
	pl_node *n = &img[id];

	if (!n->is_dir) {
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		size_t done = 0;

		if (fd < 0)
			goto fail;
		while (done < n->cur_data.len) {
			ssize_t w = write(fd, n->cur_data.data + done, n->cur_data.len - done);
			if (w <= 0) {
				close(fd);
				goto fail;
			}
			done += (size_t)w;
		}
		return close(fd) == 0 ? 0 : -1;
	}
	if (mkdir(path, 0700) != 0)
		goto fail;
	for (size_t i = 0; i < n->cur_dir.count; i++) {
		char child[4096];

		(void)snprintf(child, sizeof(child), "%s/%s", path, n->cur_dir.items[i].name);
		if (materialise(img, n->cur_dir.items[i].node, child) != 0)
			return -1;
	}
	return 0;
fail:
	fprintf(stderr, "powerloss: cannot write %s: %s\n", path, strerror(errno));
	return -1;
}

static void apply(pl_node *img, const pl_op *op, int torn)
{
	int node;

	switch (op->kind) {
	case OP_WRITE:
		bytes_write(&img[op->target].cur_data, op->off, op->bytes.data,
			    torn ? op->bytes.len / 2 : op->bytes.len);
		break;
	case OP_TRUNC:
		img[op->target].cur_data.len = 0;
		break;
	case OP_CREATE:
	case OP_MKDIR:
		dir_set(&img[op->dir].cur_dir, op->name, op->node);
		break;
	case OP_RENAME:
	case OP_LINK:
		/* A source whose creation is not in this image has nothing to
		 * move: the change is void.  A link of a descriptor names its
		 * node, whatever of its data the image holds. */
		node = op->dir < 0 ? op->node : dir_get(&img[op->dir].cur_dir, op->name);
		if (node < 0)
			break;
		dir_set(&img[op->dir2].cur_dir, op->name2, node);
		if (op->kind == OP_RENAME)
			dir_remove(&img[op->dir].cur_dir, op->name);
		break;
	case OP_UNLINK:
		dir_remove(&img[op->dir].cur_dir, op->name);
		break;
	default:
		break;
	}
}

int pl_image_write(size_t c, size_t which, const char *out)
{
	size_t *u, n = unsynced_at(c, &u), prefix, applied = 0;
	pl_node *img;
	int torn, rc;

	image_plan(c, which, &prefix, &torn);
	img = xrealloc(NULL, sim.nnodes * sizeof(*img));
	for (size_t i = 0; i < sim.nnodes; i++) {
		img[i].is_dir = sim.nodes[i].is_dir;
		bytes_copy(&img[i].cur_data, &sim.nodes[i].init_data);
		dir_copy(&img[i].cur_dir, &sim.nodes[i].init_dir);
	}
	for (size_t j = 0; j < c && j < sim.nlog; j++) {
		const pl_op *op = &sim.log[j];

		if (!changes(op))
			continue;
		if (op->synced_at < c) {
			apply(img, op, 0);
		} else if (applied < prefix) {
			applied++;
			apply(img, op, torn && applied == prefix);
		}
	}
	rc = materialise(img, 0, out);
	for (size_t i = 0; i < sim.nnodes; i++) {
		free(img[i].cur_data.data);
		dir_free(&img[i].cur_dir);
	}
	free(img);
	free(u);
	(void)n;
	return rc;
}
