/*
 * faucet_counter.c - a test and benchmark tool: compare-and-put increments
 * of one counter through the library, each outcome logged.
 *
 *   faucet_counter URL KEY LOG STOPFILE
 *
 * Until STOPFILE exists: read KEY (absent = 0), compare-and-put n -> n+1.
 * Every attempt that was not a plain "someone else won" is one line in LOG,
 * written and flushed as it happens:
 *   ack N MS START the increment to N was acknowledged (MS: wall clock, ms;
 *                  START: when the attempt began, its read)
 *   unknown N MS START  its outcome is unknown (FAUCET_EUNKNOWN): it may have landed
 *   error MS TEXT  it failed for sure (no quorum, no endpoint), tried again
 * So after a run, acknowledged <= final <= acknowledged + unknown must hold
 * for the counter's final value (tests/cluster/test_etcd_failover.sh).
 * Built for the tests only, never installed.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include <faucet/faucet.h>

static long long now_ms(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return (long long)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

int main(int argc, char **argv)
{
	faucet_store *s = NULL;
	FILE *log;
	int rc;

	if (argc != 5) {
		fprintf(stderr, "usage: faucet_counter URL KEY LOG STOPFILE\n");
		return 2;
	}
	log = fopen(argv[3], "a");
	if (log == NULL) {
		perror(argv[3]);
		return 1;
	}
	rc = faucet_store_open_url(&s, argv[1]);
	if (rc != 0) {
		fprintf(stderr, "faucet_counter: %s\n", faucet_error_last()->message);
		fclose(log);
		return 1;
	}
	while (access(argv[4], F_OK) != 0) {
		faucet_value *cur = NULL, *next = NULL;
		unsigned long long n = 0;
		char text[32];
		int written = 0;
		long long start = now_ms();

		rc = faucet_store_get(s, argv[2], &cur);
		if (rc != 0) {
			fprintf(log, "error %lld %s\n", now_ms(), faucet_error_last()->message);
			fflush(log);
			continue;
		}
		if (cur != NULL)
			n = strtoull(faucet_value_json(cur), NULL, 10);
		snprintf(text, sizeof(text), "%llu", n + 1);
		rc = faucet_value_parse(&next, text, strlen(text));
		if (rc == 0)
			rc = faucet_store_compare_and_put(s, argv[2], cur, next, &written);
		if (rc == 0 && written)
			fprintf(log, "ack %llu %lld %lld\n", n + 1, now_ms(), start);
		else if (rc == FAUCET_EUNKNOWN)
			fprintf(log, "unknown %llu %lld %lld\n", n + 1, now_ms(), start);
		else if (rc != 0)
			fprintf(log, "error %lld %s\n", now_ms(), faucet_error_last()->message);
		fflush(log);
		faucet_value_free(cur);
		faucet_value_free(next);
	}
	faucet_store_free(s);
	fclose(log);
	return 0;
}
