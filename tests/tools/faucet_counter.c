/*
 * faucet_counter.c - the one writer of the failover tests (tests/cluster/)
 * and benchmarks (bench/etcd.sh, bench/failover.sh): compare-and-put
 * increments of one counter through the library, each outcome logged.
 *
 *   faucet_counter URL KEY LOG STOPFILE [DEADLINE_S]
 *
 * Until STOPFILE exists: read KEY (absent = 0), compare-and-put n -> n+1.
 * Every attempt that was not a plain "someone else won" is one line in LOG,
 * written and flushed as it happens:
 *   ack N MS START      the increment to N was acknowledged (MS: wall clock,
 *                       ms; START: when the attempt began, its read)
 *   unknown N MS START  its outcome is unknown (FAUCET_EUNKNOWN): it may
 *                       have landed
 *   error MS TEXT       it failed for sure (no quorum, no endpoint), tried
 *                       again after a short back-off
 * Errors go to stderr too.  When STOPFILE appears, one summary line goes to
 * stdout:
 *   acked=A unknown=U failed=F first_ack_after_error_ns=T
 * (failed: attempts that certainly wrote nothing, a lost race included; T:
 * the CLOCK_REALTIME of the first acknowledged increment after the first
 * error, 0 if none).  Since every applied increment adds exactly 1,
 * acknowledged <= final <= acknowledged + unknown must hold for the
 * counter's final value (doc/design.md §3.9).  With DEADLINE_S, exit 1 when
 * that many seconds pass before STOPFILE exists.  Built for the tests only,
 * never installed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <faucet/faucet.h>

static uint64_t now_ns(clockid_t clk)
{
	struct timespec ts;

	if (clock_gettime(clk, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static long long now_ms(void)
{
	return (long long)(now_ns(CLOCK_REALTIME) / 1000000u);
}

/* A pause between attempts after an error, so a writer does not spin on a
 * server that is down (a back-off, not a synchronisation). */
static void back_off(void)
{
	struct timespec ts = {0, 20 * 1000 * 1000};

	(void)nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	long long acked = 0, unknown = 0, failed = 0;
	uint64_t first_ack_after_error = 0, deadline = 0;
	int had_error = 0;
	faucet_store *s = NULL;
	FILE *log;
	int rc;

	if (argc != 5 && argc != 6) {
		fprintf(stderr, "usage: faucet_counter URL KEY LOG STOPFILE [DEADLINE_S]\n");
		return 2;
	}
	if (argc == 6)
		deadline = now_ns(CLOCK_MONOTONIC) +
			   (uint64_t)strtoull(argv[5], NULL, 10) * 1000000000u;
	log = fopen(argv[3], "a");
	if (log == NULL) {
		perror(argv[3]);
		return 2;
	}
	rc = faucet_store_open_url(&s, argv[1]);
	if (rc != 0) {
		fprintf(stderr, "faucet_counter: %s\n", faucet_error_last()->message);
		fclose(log);
		return 2;
	}
	while (access(argv[4], F_OK) != 0) {
		faucet_value *cur = NULL, *next = NULL;
		unsigned long long n = 0;
		char text[32];
		int written = 0;
		long long start = now_ms();

		if (deadline != 0 && now_ns(CLOCK_MONOTONIC) > deadline) {
			fprintf(stderr, "faucet_counter: deadline passed before the stop file\n");
			faucet_store_free(s);
			fclose(log);
			return 1;
		}
		rc = faucet_store_get(s, argv[2], &cur);
		if (rc == 0 && cur != NULL)
			n = strtoull(faucet_value_json(cur), NULL, 10);
		if (rc == 0) {
			snprintf(text, sizeof(text), "%llu", n + 1);
			rc = faucet_value_parse(&next, text, strlen(text));
		}
		if (rc == 0)
			rc = faucet_store_compare_and_put(s, argv[2], cur, next, &written);
		if (rc == 0 && written) {
			acked++;
			if (had_error && first_ack_after_error == 0)
				first_ack_after_error = now_ns(CLOCK_REALTIME);
			fprintf(log, "ack %llu %lld %lld\n", n + 1, now_ms(), start);
		} else if (rc == 0) {
			failed++; /* another writer got there first */
		} else if (rc == FAUCET_EUNKNOWN) {
			unknown++;
			fprintf(log, "unknown %llu %lld %lld\n", n + 1, now_ms(), start);
		} else {
			failed++;
			fprintf(log, "error %lld %s\n", now_ms(), faucet_error_last()->message);
		}
		if (fflush(log) != 0) {
			perror(argv[3]);
			faucet_value_free(cur);
			faucet_value_free(next);
			faucet_store_free(s);
			fclose(log);
			return 2;
		}
		if (rc != 0) {
			fprintf(stderr, "faucet_counter %lld: %s\n", now_ms(),
				faucet_error_last()->message);
			had_error = 1;
			back_off();
		}
		faucet_value_free(cur);
		faucet_value_free(next);
	}
	printf("acked=%lld unknown=%lld failed=%lld first_ack_after_error_ns=%llu\n", acked,
	       unknown, failed, (unsigned long long)first_ack_after_error);
	faucet_store_free(s);
	return fclose(log) == 0 ? 0 : 2;
}
