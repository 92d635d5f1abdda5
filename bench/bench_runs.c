/*
 * bench_runs.c - what invocation runs cost (faucet/run.h, `faucet run`).
 *
 * Figures, each beside the thing it must be compared with, in one run on
 * one directory of the normal disk (argv[1]; never tmpfs):
 *
 *   put inside a run, first write of a key   vs  a plain put of a new key   (<= 2.1x),
 *                                                and vs a compare-and-put over an existing
 *                                                document (the run's marker) + a put of a
 *                                                new key done one after the other (the
 *                                                file store's guarded put shares one
 *                                                data barrier between the two files)
 *   put inside a run, first write of a key that exists  vs  a plain put over an existing key
 *                                                (the usual bookmark update)
 *   put inside a run, same key again         vs  a plain put of that key (a new value: the
 *                                                after-image goes into the marker with it)
 *   durable writes of begin + end            counted through a wrapper backend (<= 5)
 *   `faucet run --pipeline p -- true`        wall time minus its durable writes (<= 6 ms)
 *   `faucet run --singer -- cat F`           lines/s and CPU vs `cat F | cat` (>= 100k/s, <= 1.1x)
 *
 * Durable writes drift by 2x within a minute, so plain and in-run writes
 * are measured alternately, one operation each, and medians compared.  The faucet binary is found next to this
 * program (the build directory) or given as argv[2].
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <faucet/faucet.h>
#include <faucet/sys/store_backend.h>

#include "bench.h"

#define WRITE_OPS 120
#define RUN_KEYS 10
#define E2E_RUNS 20
/* 4M lines (~250 MB): at 1M the whole measurement was ~0.05 s of CPU and
 * the ratio moved by 0.1 with the clock tick. */
#define SINGER_LINES 4000000
#define SINGER_REPS 7

/* ---- a backend that counts the durable writes it passes on ---------------- */

typedef struct {
	faucet_store_backend b;
	faucet_store *inner;
	unsigned long writes;
} counting;

static int c_get(faucet_store_backend *b, const char *key, faucet_value **out)
{
	return faucet_store_get(((counting *)b)->inner, key, out);
}

static int c_put(faucet_store_backend *b, const char *key, const faucet_value *v)
{
	((counting *)b)->writes++;
	return faucet_store_put(((counting *)b)->inner, key, v);
}

static int c_del(faucet_store_backend *b, const char *key)
{
	((counting *)b)->writes++;
	return faucet_store_delete(((counting *)b)->inner, key);
}

static int c_list(faucet_store_backend *b, const char *prefix, faucet_strarray *out)
{
	return faucet_store_list(((counting *)b)->inner, prefix, out);
}

static int c_cas(faucet_store_backend *b, const char *key, const faucet_value *expected,
		 const faucet_value *v, int *written)
{
	int rc = faucet_store_compare_and_put(((counting *)b)->inner, key, expected, v, written);

	((counting *)b)->writes += rc == 0 && *written;
	return rc;
}

static int c_cad(faucet_store_backend *b, const char *key, const faucet_value *expected,
		 int *deleted)
{
	int rc = faucet_store_compare_and_delete(((counting *)b)->inner, key, expected, deleted);

	((counting *)b)->writes += rc == 0 && *deleted;
	return rc;
}

static void c_free(faucet_store_backend *b)
{
	faucet_store_free(((counting *)b)->inner);
	free(b);
}

static faucet_store *counting_store(const char *dir, counting **out)
{
	counting *c = calloc(1, sizeof(*c));
	faucet_store *s = NULL;

	if (c == NULL || faucet_store_open_file(&c->inner, dir, NULL) != 0)
		bench_die("open the counted store");
	c->b.version = FAUCET_STORE_BACKEND_VERSION;
	c->b.name = "counting";
	c->b.get = c_get;
	c->b.put = c_put;
	c->b.del = c_del;
	c->b.list = c_list;
	c->b.compare_and_put = c_cas;
	c->b.compare_and_delete = c_cad;
	c->b.free = c_free;
	if (faucet_store_new(&s, &c->b) != 0)
		bench_die("wrap the counted store");
	*out = c;
	return s;
}

/* ---- in-run writes vs plain puts -------------------------------------------- */

static faucet_run *begin(faucet_store *s, const char *row)
{
	faucet_run_options o = FAUCET_RUN_OPTIONS_INIT;
	faucet_run *r = NULL;

	o.row = row;
	if (faucet_run_begin(&r, s, "bench", &o) != 0)
		bench_die("begin");
	return r;
}

static void end(faucet_run *r)
{
	if (faucet_run_end(r, FAUCET_RUN_OK, 0, NULL) != 0)
		bench_die("end");
	faucet_run_free(r);
}

/* Op by op, alternating: a plain put and a put inside one run, each of a
 * new key and of a key written before.  Blocks of one kind after another
 * showed a bias of their own (the journal's state after the other block's
 * writes); interleaving single operations cancels it. */
static void bench_writes(const char *dir)
{
	faucet_store *s = NULL;
	faucet_value *v = bench_json("{\"cursor\":\"2026-11-29T12:00:00Z\",\"offset\":123456789}");
	double plain_new[WRITE_OPS], run_new[WRITE_OPS], plain_same[WRITE_OPS], run_same[WRITE_OPS];
	double floor_new[WRITE_OPS], plain_over[WRITE_OPS], run_over[WRITE_OPS];
	faucet_value *doc[2];
	faucet_run *r, *fresh = NULL, *over = NULL;

	/* Two documents of a marker's size (a run of a few keys), to overwrite
	 * one with the other by compare-and-put as a first write's marker
	 * update does. */
	for (int j = 0; j < 2; j++) {
		char text[700];
		snprintf(text, sizeof(text), "{\"version\":1,\"run\":\"r%d\",\"before\":{\"k\":\"%0480d\"},"
			 "\"after\":{}}", j, j);
		doc[j] = bench_json(text);
	}
	if (faucet_store_open_file(&s, dir, NULL) != 0)
		bench_die("open");
	if (faucet_store_put(s, "bench::floor::marker", doc[0]) != 0)
		bench_die("floor marker");
	r = begin(s, "writes");
	if (faucet_store_put(s, "bench::plain::same", v) != 0 ||
	    faucet_run_put(r, "bench::run::same", v) != 0)
		bench_die("first puts");
	for (int i = 0; i < WRITE_OPS; i++) {
		char pk[64], rk[64], fk[64];
		double t0, t1, t2, t3, t4, t5;
		int written = 0;

		/* New keys go into runs of RUN_KEYS keys (begin and end not
		 * timed): a run's marker holds one image per key, so its size -
		 * and the cost of rewriting it - depends on how many keys the run
		 * has touched. */
		if (i % RUN_KEYS == 0) {
			if (fresh != NULL)
				end(fresh);
			if (over != NULL)
				end(over);
			fresh = begin(s, "fresh");
			over = begin(s, "over");
		}
		snprintf(pk, sizeof(pk), "bench::plain::k%d", i);
		snprintf(rk, sizeof(rk), "bench::run::k%d", i);
		/* A bookmark moves: each write is a new value (a write of the
		 * identical text changes nothing and is skipped). */
		{
			char text[96];
			snprintf(text, sizeof(text),
				 "{\"cursor\":\"2026-11-29T12:00:00Z\",\"offset\":%d}", 123456789 + i);
			faucet_value_free(v);
			v = bench_json(text);
		}
		snprintf(fk, sizeof(fk), "bench::floor::k%d", i);
		t0 = bench_now_s();
		if (faucet_store_put(s, pk, v) != 0)
			bench_die("plain put");
		t1 = bench_now_s();
		if (faucet_run_put(fresh, rk, v) != 0)
			bench_die("run put");
		t2 = bench_now_s();
		if (faucet_store_put(s, "bench::plain::same", v) != 0)
			bench_die("plain put");
		t3 = bench_now_s();
		if (faucet_run_put(r, "bench::run::same", v) != 0)
			bench_die("run put");
		t4 = bench_now_s();
		if (faucet_store_put(s, fk, v) != 0 ||
		    faucet_store_compare_and_put(s, "bench::floor::marker", doc[i % 2], doc[(i + 1) % 2],
						 &written) != 0 || !written)
			bench_die("floor of a first write");
		t5 = bench_now_s();
		/* Keys that exist already, written over: a plain put, and the
		 * first write of such a key in a run. */
		snprintf(pk, sizeof(pk), "bench::plain::e%d", i);
		snprintf(rk, sizeof(rk), "bench::run::e%d", i);
		if (faucet_store_put(s, pk, doc[0]) != 0 || faucet_store_put(s, rk, doc[0]) != 0)
			bench_die("existing keys");
		{
			double t6 = bench_now_s(), t7, t8;

			if (faucet_store_put(s, pk, v) != 0)
				bench_die("plain put over a key");
			t7 = bench_now_s();
			if (faucet_run_put(over, rk, v) != 0)
				bench_die("run put over a key");
			t8 = bench_now_s();
			plain_over[i] = t7 - t6;
			run_over[i] = t8 - t7;
		}
		floor_new[i] = t5 - t4;
		plain_new[i] = t1 - t0;
		run_new[i] = t2 - t1;
		plain_same[i] = t3 - t2;
		run_same[i] = t4 - t3;
	}
	end(r);
	end(fresh);
	end(over);
	{
		double pn = bench_median(plain_new, WRITE_OPS), rn = bench_median(run_new, WRITE_OPS);
		double ps = bench_median(plain_same, WRITE_OPS), rs = bench_median(run_same, WRITE_OPS);
		double fn = bench_median(floor_new, WRITE_OPS);
		printf("run: first write of a key in a run    %.2fx a plain put of a new key (%.3f vs %.3f ms; "
		       "runs of %d keys; limit 2.1x)\n", rn / pn, rn * 1e3, pn * 1e3, RUN_KEYS);
		printf("run:   vs the two writes one by one   %.2fx a compare-and-put over a 0.5 KB document + "
		       "a put of a new key (%.3f ms = %.2fx a plain put)\n", rn / fn, fn * 1e3, fn / pn);
		printf("run: first write of an existing key   %.2fx a plain put over an existing key (%.3f vs "
		       "%.3f ms)\n", bench_median(run_over, WRITE_OPS) / bench_median(plain_over, WRITE_OPS),
		       bench_median(run_over, WRITE_OPS) * 1e3, bench_median(plain_over, WRITE_OPS) * 1e3);
		printf("run: later write of that key          %.3fx a plain put of that key (%.3f vs %.3f ms; "
		       "a leased run's after-image goes with the write: one guarded put)\n",
		       rs / ps, rs * 1e3, ps * 1e3);
	}
	faucet_value_free(v);
	faucet_value_free(doc[0]);
	faucet_value_free(doc[1]);
	faucet_store_free(s);
}

static void bench_write_counts(const char *dir)
{
	counting *c;
	faucet_store *s = counting_store(dir, &c);
	faucet_value *v = bench_json("1");
	faucet_run *r;
	unsigned long before;

	before = c->writes;
	end(begin(s, "count"));
	printf("run: durable writes of begin + end     %lu (a run that changed nothing; limit 5)\n",
	       c->writes - before);
	before = c->writes;
	r = begin(s, "count");
	if (faucet_run_put(r, "bench::count::k", v) != 0)
		bench_die("put");
	end(r);
	printf("run: durable writes of a one-key run   %lu (begin + end + before-image + the put)\n",
	       c->writes - before);
	{
		/* A CLI write's run: no lease, its status written with its
		 * first change (what `faucet state put` does). */
		faucet_run_options o = FAUCET_RUN_OPTIONS_INIT;
		faucet_value *w = bench_json("2");

		o.row = "cli";
		o.no_lease = 1;
		before = c->writes;
		if (faucet_run_begin(&r, s, "bench", &o) != 0 ||
		    faucet_run_put(r, "bench::cli::k", w) != 0)
			bench_die("cli run");
		end(r);
		printf("run: writes of a CLI put's run         %lu (status, index, marker + the put, "
		       "status, through a wrapper without put_guarded_then; the file store makes "
		       "all five one guarded write)\n",
		       c->writes - before);
		faucet_value_free(w);
	}
	faucet_value_free(v);
	faucet_store_free(s);
}

/* ---- the command ------------------------------------------------------------ */

static double run_command(char *const argv[], const char *out_path, double *cpu)
{
	struct rusage before, after;
	double t0 = bench_now_s();
	int status;
	pid_t pid;

	getrusage(RUSAGE_CHILDREN, &before);
	pid = fork();
	if (pid < 0)
		bench_die("fork");
	if (pid == 0) {
		int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || dup2(fd, 1) < 0)
			_exit(126);
		execv(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		bench_die(argv[0]);
	getrusage(RUSAGE_CHILDREN, &after);
	if (cpu != NULL)
		*cpu = (double)(after.ru_utime.tv_sec - before.ru_utime.tv_sec) +
		       (double)(after.ru_stime.tv_sec - before.ru_stime.tv_sec) +
		       (double)(after.ru_utime.tv_usec - before.ru_utime.tv_usec) / 1e6 +
		       (double)(after.ru_stime.tv_usec - before.ru_stime.tv_usec) / 1e6;
	return bench_now_s() - t0;
}

/* The time of `n` durable writes at the floor, one after another. */
static double floor_writes(int dfd, int n, int *seq)
{
	double t0 = bench_now_s();

	for (int j = 0; j < n; j++, (*seq)++)
		bench_durable_replace(dfd, "floor", *seq, "{\"x\":1}", 7);
	return bench_now_s() - t0;
}

/* A run that changes nothing makes 4 durable writes (lease, status at
 * begin and at end, lease release).  Their floor is measured right after
 * each run, and the run's time beyond it taken per pair: fsync latency
 * here drifts several-fold within a minute, so a floor measured once,
 * before, can make the figure anything. */
static void bench_end_to_end(const char *faucet, const char *dir)
{
	char state[PATH_MAX + 8], out[PATH_MAX];
	char *argv[] = {(char *)faucet, "--state", state, "run", "--pipeline", "p", "--", "true", NULL};
	char *bare[] = {"/bin/true", NULL};
	char *version[] = {(char *)faucet, "--version", NULL};
	double t[E2E_RUNS], tb[E2E_RUNS], tv[E2E_RUNS], tf[E2E_RUNS], beyond[E2E_RUNS];
	int dfd = open(dir, O_DIRECTORY | O_RDONLY), seq = 0;

	if (dfd < 0)
		bench_die("open floor dir");
	snprintf(state, sizeof(state), "file:%s/e2e", dir);
	snprintf(out, sizeof(out), "%s/e2e.out", dir);
	for (int i = 0; i < E2E_RUNS; i++) {
		tb[i] = run_command(bare, out, NULL);
		tv[i] = run_command(version, out, NULL);
		t[i] = run_command(argv, out, NULL);
		tf[i] = floor_writes(dfd, 4, &seq);
		beyond[i] = t[i] - tf[i];
	}
	close(dfd);
	{
		double total = bench_median(t, E2E_RUNS), base = bench_median(tb, E2E_RUNS);
		double start = bench_median(tv, E2E_RUNS), fl = bench_median(tf, E2E_RUNS);
		printf("run: faucet run --pipeline p -- true  %.2f ms (true alone %.2f ms; faucet --version "
		       "%.2f ms; 4 durable writes at the floor %.2f ms)\n", total * 1e3, base * 1e3,
		       start * 1e3, fl * 1e3);
		printf("run:   beyond its durable writes      %.2f ms (limit 6 ms; median of each run minus "
		       "the floor measured after it), of which starting the faucet binary %.2f ms\n",
		       bench_median(beyond, E2E_RUNS) * 1e3, start * 1e3);
	}
}

/* `faucet state put` is a whole run: its status, the rollback index and the
 * marker with the key's before- and after-image go with the key in one
 * guarded write, with the end's status renamed after the key in the same
 * commit (faucet_run_put_end).  Its floor
 * is one whole-process durable replace: starting the same binary (`faucet
 * --version`) plus one durable replace of a small file, both measured in
 * the same iteration as the put (alternating blocks); the ratio is the
 * median of the per-iteration ratios. */
static void bench_state_put(const char *faucet, const char *dir)
{
	char state[PATH_MAX + 8], out[PATH_MAX], value[32];
	char *argv[] = {(char *)faucet, "-q", "--state", state, "state", "put", "p::r::k", value,
			NULL};
	char *version[] = {(char *)faucet, "--version", NULL};
	double t[E2E_RUNS], tv[E2E_RUNS], tf[E2E_RUNS], fl[E2E_RUNS], ratio[E2E_RUNS];
	int dfd = open(dir, O_DIRECTORY | O_RDONLY), seq = 1000;

	if (dfd < 0)
		bench_die("open floor dir");
	snprintf(state, sizeof(state), "file:%s/put", dir);
	snprintf(out, sizeof(out), "%s/put.out", dir);
	/* The steady state of a key written every hour: its index is full, so
	 * every put also retires the oldest run's marker. */
	for (int i = 0; i < FAUCET_RUN_ROLLBACK_MAX; i++) {
		snprintf(value, sizeof(value), "{\"warm\":%d}", i);
		(void)run_command(argv, out, NULL);
	}
	for (int i = 0; i < E2E_RUNS; i++) {
		snprintf(value, sizeof(value), "{\"offset\":%d}", i);
		tv[i] = run_command(version, out, NULL);
		tf[i] = floor_writes(dfd, 1, &seq);
		t[i] = run_command(argv, out, NULL);
		fl[i] = tv[i] + tf[i];
		ratio[i] = t[i] / fl[i];
	}
	close(dfd);
	printf("run: faucet state put (a whole run)   %.2f ms = %.2fx one whole-process durable replace "
	       "%.2f ms (faucet --version %.2f ms + one durable replace %.2f ms; limit 2.0x)\n",
	       bench_median(t, E2E_RUNS) * 1e3, bench_median(ratio, E2E_RUNS),
	       bench_median(fl, E2E_RUNS) * 1e3, bench_median(tv, E2E_RUNS) * 1e3,
	       bench_median(tf, E2E_RUNS) * 1e3);
}

static void bench_singer(const char *faucet, const char *dir)
{
	char lines[PATH_MAX], state[PATH_MAX + 8], out[PATH_MAX], pipe_cmd[3 * PATH_MAX];
	char *with_faucet[] = {(char *)faucet, "--state", state, "run", "--singer", "--pipeline",
			       "singer", "--", "/bin/cat", lines, NULL};
	char *with_cat[] = {"/bin/sh", "-c", pipe_cmd, NULL};
	char *empty[] = {(char *)faucet, "--state", state, "run", "--singer", "--pipeline",
			 "singer", "--", "/bin/cat", "/dev/null", NULL};
	double tf[SINGER_REPS], cf[SINGER_REPS], cc[SINGER_REPS];
	double ce[SINGER_REPS], whole[SINGER_REPS], own[SINGER_REPS];
	FILE *f;

	snprintf(lines, sizeof(lines), "%s/lines.txt", dir);
	snprintf(state, sizeof(state), "file:%s/singer", dir);
	snprintf(out, sizeof(out), "%s/singer.out", dir);
	snprintf(pipe_cmd, sizeof(pipe_cmd), "/bin/cat '%s' | /bin/cat", lines);
	f = fopen(lines, "w");
	if (f == NULL)
		bench_die("lines file");
	for (int i = 0; i < SINGER_LINES; i++)
		fprintf(f, "INFO target wrote record %d to the warehouse table events\n", i);
	if (fclose(f) != 0)
		bench_die("lines file");
	/* Alternating, and the ratio is the median of each iteration's ratio:
	 * the page cache and the clock are the same for the three commands of
	 * one iteration. */
	(void)run_command(with_cat, out, NULL);
	for (int i = 0; i < SINGER_REPS; i++) {
		(void)run_command(with_cat, out, &cc[i]);
		tf[i] = run_command(with_faucet, out, &cf[i]);
		(void)run_command(empty, out, &ce[i]);
		whole[i] = cf[i] / cc[i];
		own[i] = (cf[i] - ce[i]) / cc[i];
	}
	{
		double t = bench_median(tf, SINGER_REPS), c = bench_median(cf, SINGER_REPS);
		double base = bench_median(cc, SINGER_REPS), fixed = bench_median(ce, SINGER_REPS);
		printf("run: --singer pass-through            %.0f lines/s (%d lines in %.3f s; limit >= 100000)\n",
		       SINGER_LINES / t, SINGER_LINES, t);
		printf("run:   CPU                            %.3f s vs %.3f s for cat | cat: %.2fx; "
		       "without the %.3f s of starting faucet and the run's begin/end: %.2fx (limit 1.1x; "
		       "medians of %d alternating iterations' ratios)\n",
		       c, base, bench_median(whole, SINGER_REPS), fixed, bench_median(own, SINGER_REPS),
		       SINGER_REPS);
	}
	unlink(lines);
}

int main(int argc, char **argv)
{
	char *dir, faucet[PATH_MAX];

	(void)bench_dir_arg(argc, argv, "bench_runs DIR [FAUCET_BIN]");
	if (asprintf(&dir, "%s/runs", argv[1]) < 0)
		bench_die("asprintf");
	bench_rmrf(dir);
	if (mkdir(dir, 0700) != 0)
		bench_die("mkdir");
	if (argc > 2) {
		snprintf(faucet, sizeof(faucet), "%s", argv[2]);
	} else {
		char self[PATH_MAX];
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (n < 0)
			bench_die("readlink");
		self[n] = '\0';
		snprintf(faucet, sizeof(faucet), "%s/faucet", dirname(self));
	}
	{
		char *w = NULL, *c = NULL;
		if (asprintf(&w, "%s/writes", dir) < 0 || asprintf(&c, "%s/counts", dir) < 0)
			bench_die("asprintf");
		bench_writes(w);
		bench_write_counts(c);
		free(w);
		free(c);
	}
	bench_state_put(faucet, dir);
	bench_end_to_end(faucet, dir);
	bench_singer(faucet, dir);
	bench_rmrf(dir);
	free(dir);
	return 0;
}
