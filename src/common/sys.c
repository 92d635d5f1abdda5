/*
 * sys.c - the default table of system calls of durable writers (sys.h).
 *
 * The wrappers exist because openat() is variadic and cannot be stored in
 * the table as it is; the others are the libc functions themselves.  The
 * current table is one atomic pointer: reading it costs a load per call.
 */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sys.h"

static int real_openat(int dirfd, const char *name, int flags, mode_t mode)
{
	return openat(dirfd, name, flags, mode);
}

static const faucet_sys real_calls = {
	real_openat, write, fsync, renameat, linkat, unlinkat, mkdirat, flock, close, syncfs,
};

static _Atomic(const faucet_sys *) current = &real_calls;

const faucet_sys *faucet__sys(void)
{
	return atomic_load_explicit(&current, memory_order_acquire);
}

const faucet_sys *faucet__sys_default(void)
{
	return &real_calls;
}

void faucet__sys_set(const faucet_sys *table)
{
	atomic_store_explicit(&current, table != NULL ? table : &real_calls,
			      memory_order_release);
}
