/*
 * counter_driver.c - the writer of the failover tests (tests/cluster/).
 *
 *   counter_driver URL KEY STOPFILE DEADLINE_S
 *
 * Increments the integer under KEY by compare-and-put (read v, write v+1
 * if it still holds v) until STOPFILE exists, then prints one line:
 *
 *   acked=A unknown=U failed=F first_ack_after_error_ns=T
 *
 * acked: increments the store acknowledged; unknown: compare-and-puts that
 * answered FAUCET_EUNKNOWN (they may have been applied); failed: attempts
 * that certainly wrote nothing (a refused connection, a condition that no
 * longer held).  Since every applied increment adds exactly 1, the
 * counter's final value must lie in [sum acked, sum acked + sum unknown]
 * (doc/design.md §3.9).  T is the CLOCK_REALTIME of the first acknowledged
 * increment after the first error (0 if none), for the benchmark's
 * "time to the first acknowledged write".  Exit 1 when DEADLINE_S passes
 * first; each error is logged on stderr with its time.
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
	uint64_t first_ack_after_error = 0, deadline;
	int had_error = 0;
	faucet_store *s = NULL;
	int rc;

	if (argc != 5) {
		fprintf(stderr, "usage: counter_driver URL KEY STOPFILE DEADLINE_S\n");
		return 2;
	}
	deadline = now_ns(CLOCK_MONOTONIC) + (uint64_t)strtoull(argv[4], NULL, 10) * 1000000000u;
	rc = faucet_store_open_url(&s, argv[1]);
	if (rc != 0) {
		fprintf(stderr, "counter_driver: %s\n", faucet_error_last()->message);
		return 2;
	}
	while (access(argv[3], F_OK) != 0) {
		faucet_value *cur = NULL, *next = NULL;
		long long v = 0;
		char text[32];
		int written = 0;

		if (now_ns(CLOCK_MONOTONIC) > deadline) {
			fprintf(stderr, "counter_driver: deadline passed before the stop file\n");
			faucet_store_free(s);
			return 1;
		}
		rc = faucet_store_get(s, argv[2], &cur);
		if (rc == 0 && cur != NULL)
			v = strtoll(faucet_value_json(cur), NULL, 10);
		if (rc == 0) {
			snprintf(text, sizeof(text), "%lld", v + 1);
			rc = faucet_value_parse(&next, text, strlen(text));
		}
		if (rc == 0) {
			rc = faucet_store_compare_and_put(s, argv[2], cur, next, &written);
			if (rc == 0 && written) {
				acked++;
				if (had_error && first_ack_after_error == 0)
					first_ack_after_error = now_ns(CLOCK_REALTIME);
			} else if (rc == 0) {
				failed++; /* another writer got there first */
			} else if (rc == FAUCET_EUNKNOWN) {
				unknown++;
			} else {
				failed++;
			}
		} else {
			failed++;
		}
		if (rc != 0) {
			fprintf(stderr, "counter_driver %llu: %s\n",
				(unsigned long long)(now_ns(CLOCK_REALTIME) / 1000000u),
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
	return 0;
}
