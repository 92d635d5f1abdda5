/*
 * bench.h - what every benchmark program needs: a clock, a way to die, a
 * median, JSON literals, a clean-up, and the durable-write floor.  Header
 * only (static inline): each bench_*.c file is a program of its own.
 */
#ifndef FAUCET_BENCH_H
#define FAUCET_BENCH_H

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <faucet/faucet.h>

/* The work directory argument (argv[1]), or the usage and exit: none
 * given, or one that reads as an option ("--help" is not a directory to
 * fill with a benchmark's store). */
static inline const char *bench_dir_arg(int argc, char **argv, const char *usage)
{
	if (argc < 2 || argv[1][0] == '-') {
		int help = argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0);

		fprintf(help ? stdout : stderr, "usage: %s\n", usage);
		exit(help ? 0 : 2);
	}
	return argv[1];
}

/* Monotonic seconds. */
static inline double bench_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Stop the benchmark: what failed, the library's last error, and errno. */
static inline void bench_die(const char *what)
{
	const faucet_error *e = faucet_error_last();

	fprintf(stderr, "bench: %s: %s%s%s\n", what, e->message, errno ? " / " : "",
		errno ? strerror(errno) : "");
	exit(1);
}

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median of n figures (sorts them in place). */
static inline double bench_median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), bench_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* A JSON literal as a value; the benchmark dies if it does not parse. */
static inline faucet_value *bench_json(const char *text)
{
	faucet_value *v = NULL;

	if (faucet_value_parse(&v, text, strlen(text)) != 0)
		bench_die("parse");
	return v;
}

static inline int bench_rm_one(const char *p, const struct stat *st, int f, struct FTW *w)
{
	(void)st;
	(void)f;
	(void)w;
	return remove(p);
}

/* Remove a directory tree (what is missing is not an error). */
static inline void bench_rmrf(const char *path)
{
	(void)nftw(path, bench_rm_one, 32, FTW_DEPTH | FTW_PHYS);
}

/* The two-fsync floor, what any durable atomic replace must do: write the
 * bytes to "{name}.{seq}.tmp", fsync it, rename it over `name`, fsync the
 * directory. */
static inline void bench_durable_replace(int dirfd, const char *name, int seq, const char *data,
					 size_t len)
{
	char tmp[256];
	int fd;

	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", name, seq);
	fd = openat(dirfd, tmp, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, data, len) != (ssize_t)len || fsync(fd) != 0 || close(fd) != 0 ||
	    renameat(dirfd, tmp, dirfd, name) != 0 || fsync(dirfd) != 0)
		bench_die("floor write");
}

#endif
