/*
 * faultshim.c - an LD_PRELOAD shim for the history checker: fsync,
 * fdatasync, syncfs, rename, renameat and renameat2 fail with EIO with
 * probability FAULTSHIM_P (0..1), drawn from a generator seeded with
 * FAULTSHIM_SEED, so a schedule's faults can be replayed.  A failed rename
 * renames nothing; a failed fsync is reported after the real fsync ran (as
 * a disk error would: the data may or may not be on disk).
 *
 * Used by tests/history/check_history.py --faults P on the file and SQLite
 * stores; every op that meets a fault is then failed or unknown.
 *
 * FAULTSHIM_RENAME_MATCH=TEXT fails, always, every rename and link whose
 * new name contains TEXT (a test that must fail one file's write only).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int ready;
static double probability;
static uint64_t state;

static void setup(void)
{
	const char *p = getenv("FAULTSHIM_P");
	const char *seed = getenv("FAULTSHIM_SEED");
	probability = p ? strtod(p, NULL) : 0.0;
	state = seed ? strtoull(seed, NULL, 10) : 1;
	state = state * 6364136223846793005ULL + 1442695040888963407ULL;
	ready = 1;
}

/* 1 when this call should fail (splitmix64 step under a lock). */
static int inject(void)
{
	uint64_t z;
	int hit;
	pthread_mutex_lock(&lock);
	if (!ready)
		setup();
	state += 0x9e3779b97f4a7c15ULL;
	z = state;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	z ^= z >> 31;
	hit = (double)(z >> 11) / 9007199254740992.0 < probability;
	pthread_mutex_unlock(&lock);
	return hit;
}

/* The next definition of a function (libc's), looked up once. */
static void *next(void **slot, const char *name)
{
	if (!*slot)
		*slot = dlsym(RTLD_NEXT, name);
	return *slot;
}

typedef int (*fd_fn)(int);
typedef int (*rename_fn)(const char *, const char *);
typedef int (*renameat_fn)(int, const char *, int, const char *);
typedef int (*renameat2_fn)(int, const char *, int, const char *, unsigned int);

/* A sync call: the real one runs, then maybe reports EIO. */
static int synced(int rc)
{
	if (rc == 0 && inject()) {
		errno = EIO;
		return -1;
	}
	return rc;
}

int fsync(int fd)
{
	static void *real;
	return synced(((fd_fn)next(&real, "fsync"))(fd));
}

int fdatasync(int fd)
{
	static void *real;
	return synced(((fd_fn)next(&real, "fdatasync"))(fd));
}

int syncfs(int fd)
{
	static void *real;
	return synced(((fd_fn)next(&real, "syncfs"))(fd));
}

/* Whether the new name `to` is one FAULTSHIM_RENAME_MATCH fails. */
static int matched(const char *to)
{
	const char *m = getenv("FAULTSHIM_RENAME_MATCH");
	return m != NULL && *m != '\0' && to != NULL && strstr(to, m) != NULL;
}

/* A rename call: maybe EIO, and then nothing renamed. */
static int refused_to(const char *to)
{
	if (matched(to) || inject()) {
		errno = EIO;
		return 1;
	}
	return 0;
}

int rename(const char *from, const char *to)
{
	static void *real;
	return refused_to(to) ? -1 : ((rename_fn)next(&real, "rename"))(from, to);
}

int renameat(int fromdir, const char *from, int todir, const char *to)
{
	static void *real;
	return refused_to(to) ? -1 : ((renameat_fn)next(&real, "renameat"))(fromdir, from, todir, to);
}

int renameat2(int fromdir, const char *from, int todir, const char *to, unsigned int flags)
{
	static void *real;
	return refused_to(to) ? -1
			      : ((renameat2_fn)next(&real, "renameat2"))(fromdir, from, todir, to, flags);
}

typedef int (*linkat_fn)(int, const char *, int, const char *, int);

/* linkat names a new file (O_TMPFILE) once: only FAULTSHIM_RENAME_MATCH
 * fails it (the random faults stay on fsync and rename, as before). */
int linkat(int fromdir, const char *from, int todir, const char *to, int flags)
{
	static void *real;
	if (matched(to)) {
		errno = EIO;
		return -1;
	}
	return ((linkat_fn)next(&real, "linkat"))(fromdir, from, todir, to, flags);
}
