/*
 * faults.c - the counting, failing system-call table of faults.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>

#include "faults.h"
#include "common/sys.h"

static atomic_size_t calls;
static size_t armed;
static fault_kind armed_kind;
static atomic_int fired;
static const char *fired_call = "";

/* Count this call; 1 when it is the one to fail (with errno set). */
static int hit(const char *name, int is_write)
{
	size_t n = atomic_fetch_add(&calls, 1) + 1;

	if (armed == 0 || n != armed)
		return 0;
	if (armed_kind == FAULT_SHORT_WRITE && !is_write)
		return 0;
	atomic_store(&fired, 1);
	fired_call = name;
	errno = armed_kind == FAULT_ENOSPC ? ENOSPC : EIO;
	return 1;
}

static atomic_int refuse_tmpfile;

void fault_refuse_tmpfile(int refuse)
{
	atomic_store(&refuse_tmpfile, refuse);
}

static int f_openat(int dirfd, const char *name, int flags, mode_t mode)
{
	if (hit("openat", 0))
		return -1;
	if ((flags & O_TMPFILE) == O_TMPFILE && atomic_load(&refuse_tmpfile)) {
		errno = EOPNOTSUPP;
		return -1;
	}
	return faucet__sys_default()->openat(dirfd, name, flags, mode);
}

static ssize_t f_write(int fd, const void *buf, size_t len)
{
	if (!hit("write", 1))
		return faucet__sys_default()->write(fd, buf, len);
	if (armed_kind != FAULT_SHORT_WRITE)
		return -1;
	/* A short write: half of it lands.  (A one-byte write cannot be cut;
	 * it then fails with EIO instead.) */
	if (len < 2) {
		errno = EIO;
		return -1;
	}
	return faucet__sys_default()->write(fd, buf, len / 2);
}

static int f_fsync(int fd)
{
	return hit("fsync", 0) ? -1 : faucet__sys_default()->fsync(fd);
}

static int f_renameat(int od, const char *on, int nd, const char *nn)
{
	return hit("renameat", 0) ? -1 : faucet__sys_default()->renameat(od, on, nd, nn);
}

static int f_linkat(int od, const char *on, int nd, const char *nn, int flags)
{
	return hit("linkat", 0) ? -1 : faucet__sys_default()->linkat(od, on, nd, nn, flags);
}

static int f_unlinkat(int dirfd, const char *name, int flags)
{
	return hit("unlinkat", 0) ? -1 : faucet__sys_default()->unlinkat(dirfd, name, flags);
}

static int f_mkdirat(int dirfd, const char *name, mode_t mode)
{
	return hit("mkdirat", 0) ? -1 : faucet__sys_default()->mkdirat(dirfd, name, mode);
}

static int f_flock(int fd, int op)
{
	return hit("flock", 0) ? -1 : faucet__sys_default()->flock(fd, op);
}

static int f_close(int fd)
{
	/* close() releases the descriptor even when it reports an error, as
	 * Linux does: do the real close, then report the failure. */
	if (hit("close", 0)) {
		int err = errno;

		(void)faucet__sys_default()->close(fd);
		errno = err;
		return -1;
	}
	return faucet__sys_default()->close(fd);
}

static int f_syncfs(int fd)
{
	return hit("syncfs", 0) ? -1 : faucet__sys_default()->syncfs(fd);
}

static const faucet_sys failing = {
	f_openat, f_write, f_fsync, f_renameat, f_linkat, f_unlinkat, f_mkdirat, f_flock, f_close,
	f_syncfs,
};

void fault_start(void)
{
	fault_arm(0, FAULT_EIO);
	faucet__sys_set(&failing);
}

void fault_stop(void)
{
	faucet__sys_set(NULL);
	fault_arm(0, FAULT_EIO);
}

void fault_arm(size_t n, fault_kind kind)
{
	atomic_store(&calls, 0);
	armed = n;
	armed_kind = kind;
	atomic_store(&fired, 0);
	fired_call = "";
}

size_t fault_calls(void)
{
	return atomic_load(&calls);
}

int fault_fired(void)
{
	return atomic_load(&fired);
}

const char *fault_fired_call(void)
{
	return fired_call;
}

const char *fault_kind_name(fault_kind kind)
{
	switch (kind) {
	case FAULT_EIO: return "EIO";
	case FAULT_ENOSPC: return "ENOSPC";
	default: return "short write";
	}
}
