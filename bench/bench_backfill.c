/*
 * bench_backfill.c - what backfill itself costs.
 *
 *   planning 10,000 one-hour units in America/New_York   target <= 50 ms
 *   runner overhead per unit, 1,000 units of `true`      target <= 5 ms + one durable write
 *   the marker's record of one unit (look, then record     target <= 1 ms beyond one durable
 *   with attempts and times) in a 1,000 / 10,000-unit range        write of a small file
 *
 * The runner's per-unit cost is everything around the command: claiming the
 * unit's lease, recording its outcome in the marker, releasing the lease
 * (each a durable compare-and-put on the file store) and spawning the
 * process.  It is measured against the two-fsync floor (write temp, fsync,
 * rename, fsync dir) taken in the same run on the same disk, because fsync
 * latency here drifts from run to run.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <faucet/faucet.h>
#include <faucet/backfill.h>

#include "bench.h"
#include "backfill/backfill_internal.h" /* the runner's cached marker calls */

static double floor_ms(const char *dir, int n)
{
	int dfd = open(dir, O_DIRECTORY | O_RDONLY);
	double t0 = bench_now_s();

	if (dfd < 0)
		bench_die("open floor dir");
	for (int i = 0; i < n; i++)
		bench_durable_replace(dfd, "floor.json", i, "{\"status\":\"done\"}", 17);
	close(dfd);
	return (bench_now_s() - t0) / n * 1e3;
}

/* What the runner does to the marker for each unit of a range of `total`
 * units, of which all but the last `measured` are done already: look at it
 * (faucet_bf__marker_load_cached), then record the outcome with its attempt
 * and times (faucet_bf__marker_record_cached).  Blocks of 20 alternate with
 * 20 durable replaces of a small file; returns the median of the blocks'
 * per-unit differences (record minus floor), *per_unit the mean record. */
static double bench_marker(const char *base, size_t total, size_t measured, double *per_unit,
			   double *floor_unit)
{
	char dir[4096], fdir[4096], unit[32];
	faucet_backfill_marker *m = NULL;
	faucet_bf__marker_cache cache = {NULL, NULL};
	faucet_value *v = NULL;
	faucet_store *s;
	const char *desc = "2026-01-01T00:00:00Z|2027-02-21T16:00:00Z|1h";
	const char *key = "bench::__backfill__::0123456789abcdef";
	double diff[64], sum_rec = 0, sum_floor = 0;
	size_t blocks = 0;
	int dfd;

	snprintf(dir, sizeof(dir), "%s/marker-state", base);
	snprintf(fdir, sizeof(fdir), "%s/marker-floor", base);
	mkdir(fdir, 0700);
	if (faucet_store_open_file(&s, dir, NULL) != 0 || faucet_backfill_marker_new(&m, desc) != 0)
		bench_die("open marker store");
	for (size_t i = 0; i < total - measured; i++) {
		snprintf(unit, sizeof(unit), "2026%07zuZ", i);
		if (faucet_backfill_marker_mark_done(m, unit) != 0 ||
		    faucet_backfill_marker_set_attempt(m, unit, 1, "2026-12-07T09:00:00Z",
							"2026-12-07T09:00:01Z") != 0)
			bench_die("fill marker");
	}
	if (faucet_backfill_marker_to_value(m, &v) != 0 || faucet_store_put(s, key, v) != 0)
		bench_die("write marker");
	faucet_value_free(v);
	faucet_backfill_marker_free(m);
	dfd = open(fdir, O_DIRECTORY | O_RDONLY);
	if (dfd < 0)
		bench_die("open floor dir");
	for (size_t i = total - measured; i < total; i += 20) {
		double t0 = bench_now_s(), fl, rec;

		for (int k = 0; k < 20; k++)
			bench_durable_replace(dfd, "floor.json", k, "{\"status\":\"done\"}", 17);
		fl = (bench_now_s() - t0) / 20;
		t0 = bench_now_s();
		for (size_t k = i; k < i + 20 && k < total; k++) {
			const faucet_backfill_marker *now = NULL;
			faucet_backfill_outcome o = {desc, "UTC", unit, NULL, "2026-12-07T09:00:00Z",
						     "2026-12-07T09:00:01Z"};

			snprintf(unit, sizeof(unit), "2026%07zuZ", k);
			if (faucet_bf__marker_load_cached(s, key, &cache, &now) != 0 ||
			    faucet_bf__marker_record_cached(s, key, &o, &cache) != 0)
				bench_die("record outcome");
		}
		rec = (bench_now_s() - t0) / 20;
		if (i > total - measured) { /* the first block parses the marker once */
			diff[blocks++] = (rec - fl) * 1e3;
			sum_rec += rec;
			sum_floor += fl;
		}
	}
	close(dfd);
	faucet_bf__marker_cache_dispose(&cache);
	faucet_store_free(s);
	bench_rmrf(dir);
	bench_rmrf(fdir);
	*per_unit = sum_rec / (double)blocks * 1e3;
	*floor_unit = sum_floor / (double)blocks * 1e3;
	return bench_median(diff, blocks);
}

int main(int argc, char **argv)
{
	const char *base = argc > 1 ? bench_dir_arg(argc, argv, "bench_backfill [DIR]") : "bench-data";
	faucet_backfill_range big = {"2026-01-01T00:00:00Z", "2027-02-21T16:00:00Z", "1h",
				     "America/New_York", NULL};
	faucet_backfill_range units = {"2026-01-01T00:00:00Z", "2026-01-01T16:40:00Z", "60",
				       "UTC", NULL};
	const char *const cmd[] = {"true", NULL};
	faucet_backfill_run_options opts;
	faucet_backfill_result result;
	faucet_backfill_plan *plan;
	faucet_store *s;
	char dir[4096], fdir[4096];
	double best = 1e9, t0, run_ms, fl_before, fl_after;

	snprintf(dir, sizeof(dir), "%s/backfill-state", base);
	snprintf(fdir, sizeof(fdir), "%s/backfill-floor", base);
	mkdir(base, 0700);
	bench_rmrf(dir);
	bench_rmrf(fdir);
	mkdir(fdir, 0700);

	for (int i = 0; i < 5; i++) {
		t0 = bench_now_s();
		if (faucet_backfill_plan_new(&plan, &big) != 0)
			bench_die("plan 10,000 units");
		if (bench_now_s() - t0 < best)
			best = bench_now_s() - t0;
		if (faucet_backfill_plan_count(plan) != 10000) {
			fprintf(stderr, "bench_backfill: expected 10,000 units, planned %zu\n",
				faucet_backfill_plan_count(plan));
			return 1;
		}
		faucet_backfill_plan_free(plan);
	}
	printf("%-46s %9.3f ms   target <= 50 ms\n", "plan 10,000 units (1h, America/New_York)",
	       best * 1e3);

	if (faucet_backfill_plan_new(&plan, &units) != 0)
		bench_die("plan 1,000 units");
	if (faucet_store_open_file(&s, dir, NULL) != 0)
		bench_die("open file store");
	memset(&opts, 0, sizeof(opts));
	opts.version = FAUCET_BACKFILL_RUN_OPTIONS_VERSION;
	opts.pipeline = "bench";
	opts.argv = cmd;
	opts.concurrency = 1;
	opts.state_url = "file:bench";
	fl_before = floor_ms(fdir, 100);
	t0 = bench_now_s();
	if (faucet_backfill_run(s, plan, &opts, &result) != 0)
		bench_die("run");
	run_ms = (bench_now_s() - t0) / (double)faucet_backfill_plan_count(plan) * 1e3;
	fl_after = floor_ms(fdir, 100);
	if (result.done != 1000 || result.failed != 0) {
		fprintf(stderr, "bench_backfill: %zu done, %zu failed of 1,000\n", result.done,
			result.failed);
		return 1;
	}
	printf("%-46s %9.3f ms\n", "floor: temp+fsync+rename+fsync dir (mean)",
	       (fl_before + fl_after) / 2);
	printf("%-46s %9.3f ms\n", "runner, per unit of `true` (1,000 units)", run_ms);
	printf("%-46s %9.3f ms   target <= 5 ms\n", "runner overhead beyond one durable write",
	       run_ms - (fl_before + fl_after) / 2);
	faucet_backfill_plan_free(plan);
	faucet_store_free(s);
	bench_rmrf(dir);
	bench_rmrf(fdir);
	for (int r = 0; r < 2; r++) {
		size_t total = r == 0 ? 1000 : 10000;
		double rec, fl, beyond = bench_marker(base, total, 220, &rec, &fl);

		printf("%-46s %9.3f ms   floor %.3f ms; beyond it %.3f ms (median of blocks), "
		       "target <= 1 ms\n",
		       total == 1000 ? "marker per unit, 1,000-unit range"
				     : "marker per unit, 10,000-unit range",
		       rec, fl, beyond);
	}
	return 0;
}
