/*
 * bench_serve_put.c - the floors bench/serve.sh compares `faucet serve`'s
 * PUT with: the file store's own durable put, and the same put recorded as
 * a run (what the server and `faucet state put` do: doc/design.md §8.7).
 *
 *   bench_serve_put DIR [N]     prints "put_us X" and "run_put_us Y"
 *
 * Run with no arguments (as bench/run.sh does) it uses a directory of its
 * own under the current one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <faucet/faucet.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "bench-serve-put";
	int n = argc > 2 ? atoi(argv[2]) : 200;
	char path[4096], text[64];
	faucet_store *s = NULL;
	double t0, put, run_put;

	if (dir[0] == '-') { /* "--help" is not a directory to fill */
		int help = strcmp(dir, "--help") == 0 || strcmp(dir, "-h") == 0;

		fprintf(help ? stdout : stderr, "usage: bench_serve_put [DIR [N]]\n");
		return help ? 0 : 2;
	}

	snprintf(path, sizeof(path), "%s/bench-serve-put", dir);
	if (n < 1 || faucet_store_open_file(&s, path, NULL) != 0) {
		fprintf(stderr, "bench_serve_put: %s\n", faucet_error_last()->message);
		return 1;
	}
	t0 = now_s();
	for (int i = 0; i < n; i++) {
		faucet_value *v = NULL;

		snprintf(text, sizeof(text), "{\"n\":%d}", i);
		if (faucet_value_parse(&v, text, strlen(text)) != 0 ||
		    faucet_store_put(s, "bench::default::plain", v) != 0) {
			fprintf(stderr, "bench_serve_put: %s\n", faucet_error_last()->message);
			return 1;
		}
		faucet_value_free(v);
	}
	put = (now_s() - t0) / n;
	t0 = now_s();
	for (int i = 0; i < n; i++) {
		faucet_run_options o = FAUCET_RUN_OPTIONS_INIT;
		faucet_value *v = NULL;
		faucet_run *r = NULL;

		o.no_lease = 1;
		o.command = "bench";
		snprintf(text, sizeof(text), "{\"n\":%d}", i);
		if (faucet_value_parse(&v, text, strlen(text)) != 0 ||
		    faucet_run_begin(&r, s, "bench", &o) != 0 ||
		    faucet_run_put(r, "bench::default::run", v) != 0 ||
		    faucet_run_end(r, FAUCET_RUN_OK, 0, NULL) != 0) {
			fprintf(stderr, "bench_serve_put: %s\n", faucet_error_last()->message);
			return 1;
		}
		faucet_run_free(r);
		faucet_value_free(v);
	}
	run_put = (now_s() - t0) / n;
	printf("put_us %.1f\nrun_put_us %.1f\n", put * 1e6, run_put * 1e6);
	faucet_store_free(s);
	return 0;
}
