/*
 * sys.h - the system calls of durable writers, behind one table (internal).
 *
 * Every call through which a durable writer (the durable-write helper, the
 * file store) changes or syncs the disk goes through faucet__sys(), a table
 * of function pointers that by default holds the real calls.  Tests swap in
 * their own table to inject failures (a directory fsync that fails, an
 * unlink that fails) or to simulate power loss, which a storage engine must
 * be tested against and which the real calls cannot produce on demand.
 *
 * Production code never changes the table; faucet__sys_set() exists for
 * tests only and is not thread-safe against writers running at that moment.
 */
#ifndef FAUCET_SYS_H
#define FAUCET_SYS_H

#include <sys/types.h>

typedef struct {
	int (*openat)(int dirfd, const char *name, int flags, mode_t mode);
	ssize_t (*write)(int fd, const void *buf, size_t len);
	int (*fsync)(int fd);
	int (*renameat)(int olddirfd, const char *oldname, int newdirfd, const char *newname);
	int (*linkat)(int olddirfd, const char *oldname, int newdirfd, const char *newname,
		      int flags);
	int (*unlinkat)(int dirfd, const char *name, int flags);
	int (*mkdirat)(int dirfd, const char *name, mode_t mode);
	int (*flock)(int fd, int op);
	int (*close)(int fd);
	/* Flush every file of fd's filesystem (Linux syncfs): one barrier for
	 * a batch of files instead of an fsync each. */
	int (*syncfs)(int fd);
} faucet_sys;

/* The table in use (never NULL). */
const faucet_sys *faucet__sys(void);

/* The table of the real calls. */
const faucet_sys *faucet__sys_default(void);

/* Tests only: use `table` from now on (NULL restores the real calls).  The
 * table must outlive its use. */
void faucet__sys_set(const faucet_sys *table);

#endif
