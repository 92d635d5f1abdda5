/*
 * bench_memory.c - the C cost of one get and one put on the memory store,
 * the baseline bindings/python/bench.py subtracts from the Python call's
 * time to report what the binding adds.
 *
 * Both programs time the same thing: 1,000 keys "bench::m0000".."m0999"
 * used in turn, the value {"cursor":18446744073709551615,"ts":"..."}, get
 * releasing the value it received.  Each figure is the best of several
 * rounds (the least disturbed by other processes on a shared machine), in
 * nanoseconds per call.  The value is parsed once up front: a C caller
 * builds its value once and may store it many times, so the Python side's
 * JSON encoding and parsing count as binding overhead.
 *
 * Output: "memory put NS ns", "memory get NS ns", and for reference
 * "memory parse+put NS ns": the put of a value parsed from its JSON text
 * each time, which is what a caller holding only text pays.  The
 * directory argument bench/run.sh passes is not used.
 */
#include <stdio.h>
#include <stdlib.h>

#include <faucet/faucet.h>

#include "bench.h"

#define KEYS 1000
#define CALLS 1000000
#define ROUNDS 7

int main(void)
{
	static char keys[KEYS][32];
	faucet_value *v = bench_json("{\"cursor\":18446744073709551615,\"ts\":\"2026-01-01T00:00:00Z\"}");
	faucet_value *got = NULL;
	faucet_store *mem;
	static const char text[] = "{\"cursor\":18446744073709551615,\"ts\":\"2026-01-01T00:00:00Z\"}";
	double best_put = 1e9, best_get = 1e9, best_parse_put = 1e9;

	if (faucet_store_open_memory(&mem) != 0)
		bench_die("open memory");
	for (int i = 0; i < KEYS; i++)
		snprintf(keys[i], sizeof(keys[i]), "bench::m%04d", i);
	for (int r = 0; r < ROUNDS; r++) {
		double t0 = bench_now_s(), t;

		for (int i = 0; i < CALLS; i++) {
			if (faucet_store_put(mem, keys[i % KEYS], v) != 0)
				bench_die("memory put");
		}
		t = (bench_now_s() - t0) / CALLS;
		if (t < best_put)
			best_put = t;
		t0 = bench_now_s();
		for (int i = 0; i < CALLS; i++) {
			if (faucet_store_get(mem, keys[i % KEYS], &got) != 0 || got == NULL)
				bench_die("memory get");
			faucet_value_free(got);
		}
		t = (bench_now_s() - t0) / CALLS;
		if (t < best_get)
			best_get = t;
		t0 = bench_now_s();
		for (int i = 0; i < CALLS; i++) {
			faucet_value *p = NULL;

			if (faucet_value_parse(&p, text, sizeof(text) - 1) != 0 ||
			    faucet_store_put(mem, keys[i % KEYS], p) != 0)
				bench_die("memory parse+put");
			faucet_value_free(p);
		}
		t = (bench_now_s() - t0) / CALLS;
		if (t < best_parse_put)
			best_parse_put = t;
	}
	printf("memory put %.1f ns\n", best_put * 1e9);
	printf("memory get %.1f ns\n", best_get * 1e9);
	printf("memory parse+put %.1f ns\n", best_parse_put * 1e9);
	faucet_store_free(mem);
	faucet_value_free(v);
	return 0;
}
