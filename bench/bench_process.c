/*
 * bench_process.c - a whole `faucet state get` process on a file store,
 * beside its floor: minimal_reader (bench/minimal/), a C program that
 * opens the same value file, reads it and prints it.  Both are started
 * with posix_spawn, their output to /dev/null, in alternating blocks
 * (floor, faucet, floor, faucet, ...) of RUNS processes; each block's figure is
 * its median process, and the ratio is the median of the blocks' ratios.
 * Everything a get pays before and after main - mapping and relocating
 * its libraries, constructors, reading the environment - is in the
 * figure.
 *
 *   bench_process DIR      (faucet and minimal_reader beside this program)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <libgen.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <faucet/faucet.h>

#include "bench.h"

#define BLOCKS 9
#define RUNS 41

extern char **environ;

static double spawn_once(char *const argv[])
{
	posix_spawn_file_actions_t fa;
	double t0;
	pid_t pid;
	int status = 0;

	if (posix_spawn_file_actions_init(&fa) != 0 ||
	    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0) != 0)
		bench_die("posix_spawn_file_actions");
	t0 = bench_now_s();
	if (posix_spawn(&pid, argv[0], &fa, NULL, argv, environ) != 0)
		bench_die(argv[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		bench_die("a process failed");
	t0 = bench_now_s() - t0;
	posix_spawn_file_actions_destroy(&fa);
	return t0;
}

static double block(char *const argv[])
{
	double t[RUNS];

	for (int i = 0; i < RUNS; i++)
		t[i] = spawn_once(argv);
	return bench_median(t, RUNS);
}

int main(int argc, char **argv)
{
	char *self, *here, *faucet = NULL, *reader = NULL, *store = NULL, *url = NULL, *file = NULL;
	double fl[BLOCKS], get[BLOCKS], ratio[BLOCKS];
	faucet_store *s = NULL;
	faucet_value *v;

	(void)bench_dir_arg(argc, argv, "bench_process DIR");
	self = strdup(argv[0]);
	if (self == NULL)
		bench_die("strdup");
	here = dirname(self);
	if (asprintf(&faucet, "%s/faucet", here) < 0 || asprintf(&reader, "%s/minimal_reader", here) < 0 ||
	    asprintf(&store, "%s/process-get", argv[1]) < 0 || asprintf(&url, "file:%s", store) < 0 ||
	    asprintf(&file, "%s/bench%%3A%%3Ak.json", store) < 0)
		bench_die("asprintf");
	bench_rmrf(store);
	v = bench_json("{\"cursor\":\"2026-12-01T00:00:00Z\",\"offset\":123456}");
	if (faucet_store_open_url(&s, url) != 0 || faucet_store_put(s, "bench::k", v) != 0)
		bench_die("put");
	faucet_store_free(s);
	faucet_value_free(v);
	if (access(file, R_OK) != 0)
		bench_die("the value file is not where the benchmark expects it");
	{
		char *get_argv[] = {faucet, "--state", url, "state", "get", "bench::k", NULL};
		char *min_argv[] = {reader, file, NULL};

		(void)block(min_argv); /* warm the page cache and the dynamic loader's */
		(void)block(get_argv);
		for (int b = 0; b < BLOCKS; b++) {
			fl[b] = block(min_argv);
			get[b] = block(get_argv);
			ratio[b] = get[b] / fl[b];
		}
	}
	printf("whole-process get (faucet state get, file store): %.2f ms, minimal C reader of the "
	       "value file %.2f ms: %.2fx (target <= 1.3x; %d blocks of %d processes, alternating)\n",
	       bench_median(get, BLOCKS) * 1e3, bench_median(fl, BLOCKS) * 1e3,
	       bench_median(ratio, BLOCKS), BLOCKS, RUNS);
	bench_rmrf(store);
	free(self);
	free(faucet);
	free(reader);
	free(store);
	free(url);
	free(file);
	return 0;
}
