/*
 * test_file_processes.c - the file store across real processes.
 *
 * What threads cannot show: compare-and-put is atomic between processes
 * (the flock lock, not an in-process mutex, does the work), and a writer
 * killed at any moment never leaves a torn value behind.  Children are
 * forked and started together through a pipe barrier: each blocks reading
 * the pipe until the parent closes its write end, so all of them see EOF at
 * once.  A child reports through its exit status.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

#define WORKERS 8

typedef tu_dir_fixture fixture;

/* Block until the parent closes the barrier's write end. */
static void wait_for_start(int barrier[2])
{
	char c;

	close(barrier[1]);
	while (read(barrier[0], &c, 1) < 0 && errno == EINTR)
		;
	close(barrier[0]);
}

/* Fork `n` children running body(dir, i); release them together; return
 * how many exited with each status 0, 1, other in counts[3]. */
static void run_children(const char *dir, int n, int (*body)(const char *dir, int i),
			 int counts[3])
{
	int barrier[2];
	pid_t pids[WORKERS];

	counts[0] = counts[1] = counts[2] = 0;
	assert_int_equal(pipe(barrier), 0);
	for (int i = 0; i < n; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			wait_for_start(barrier);
			_exit(body(dir, i));
		}
	}
	close(barrier[0]);
	close(barrier[1]); /* go */
	for (int i = 0; i < n; i++) {
		int status;
		assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
		if (WIFEXITED(status) && WEXITSTATUS(status) <= 1)
			counts[WEXITSTATUS(status)]++;
		else
			counts[2]++;
	}
}

static const char *race_key;

/* 0: this child wrote the absent key; 1: another did; 2: error. */
static int race_once(const char *dir, int i)
{
	faucet_store *s = NULL;
	faucet_value *v = NULL;
	char json[32];
	int written = 0, rc;

	snprintf(json, sizeof(json), "{\"by\":%d}", i);
	if (faucet_store_open_file(&s, dir, NULL) != 0 || faucet_value_parse(&v, json, strlen(json)) != 0)
		return 2;
	rc = faucet_store_compare_and_put(s, race_key, NULL, v, &written);
	if (rc != 0)
		fprintf(stderr, "child %d: %s\n", i, faucet_error_last()->message);
	faucet_value_free(v);
	faucet_store_free(s);
	return rc != 0 ? 2 : written ? 0 : 1;
}

static void exactly_one_process_takes_an_absent_key(void **state)
{
	fixture *f = *state;

	for (int round = 0; round < 20; round++) {
		char key[32];
		int counts[3];

		snprintf(key, sizeof(key), "lease%d", round);
		race_key = key;
		run_children(f->dir, WORKERS, race_once, counts);
		assert_int_equal(counts[2], 0);
		assert_int_equal(counts[0], 1);
		assert_int_equal(counts[1], WORKERS - 1);
	}
}

#define INCREMENTS 250

/* Add one to the counter INCREMENTS times through compare-and-put retries. */
static int increment_counter(const char *dir, int i)
{
	faucet_store *s = NULL;
	int done = 0, rc = 0;

	(void)i;
	if (faucet_store_open_file(&s, dir, NULL) != 0)
		return 2;
	while (done < INCREMENTS && rc == 0) {
		faucet_value *cur = NULL, *next = NULL;
		long long n = 0;
		char json[32];
		int written = 0;

		rc = faucet_store_get(s, "counter", &cur);
		if (rc == 0 && cur != NULL)
			n = strtoll(faucet_value_json(cur), NULL, 10);
		snprintf(json, sizeof(json), "%lld", n + 1);
		if (rc == 0)
			rc = faucet_value_parse(&next, json, strlen(json));
		if (rc == 0)
			rc = faucet_store_compare_and_put(s, "counter", cur, next, &written);
		done += written;
		faucet_value_free(cur);
		faucet_value_free(next);
	}
	if (rc != 0)
		fprintf(stderr, "incrementer %d: %s\n", i, faucet_error_last()->message);
	faucet_store_free(s);
	return rc != 0 ? 2 : 0;
}

static void concurrent_increments_are_never_lost(void **state)
{
	fixture *f = *state;
	faucet_store *s = NULL;
	int counts[3];

	run_children(f->dir, WORKERS, increment_counter, counts);
	assert_int_equal(counts[0], WORKERS);
	assert_int_equal(faucet_store_open_file(&s, f->dir, NULL), 0);
	tu_assert_value(s, "counter", "2000");
	faucet_store_free(s);
}

#define KILLS 200
#define PAYLOAD 65536

/* A value of about PAYLOAD bytes that says which round wrote it, so a torn
 * or mixed file cannot pass for a whole one. */
static char *round_value(int round)
{
	char *json = malloc(PAYLOAD + 64);
	int n = snprintf(json, 64, "{\"round\":%d,\"fill\":\"", round);

	memset(json + n, 'a' + round % 26, PAYLOAD);
	strcpy(json + n + PAYLOAD, "\"}");
	return json;
}

/* Rewrite `key` with this round's value until killed; say on `ready` when
 * the writing starts, so the kill never lands in the child's start-up. */
_Noreturn static void write_until_killed(const char *dir, const char *json, int ready)
{
	faucet_store *s = NULL;
	faucet_value *v = NULL;

	if (faucet_store_open_file(&s, dir, NULL) != 0 || faucet_value_parse(&v, json, strlen(json)) != 0)
		_exit(2);
	if (write(ready, "r", 1) != 1)
		_exit(2);
	for (;;) {
		if (faucet_store_put(s, "k", v) != 0)
			_exit(3);
	}
}

static void a_killed_writer_never_leaves_a_torn_value(void **state)
{
	fixture *f = *state;
	unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
	faucet_store *s = NULL;
	faucet_strarray keys = {NULL, 0};
	char *old = round_value(-1);
	int landed = 0;

	fprintf(stderr, "kill test seed %u\n", seed);
	assert_int_equal(faucet_store_open_file(&s, f->dir, NULL), 0);
	{
		faucet_value *v = tu_v(old);
		assert_int_equal(faucet_store_put(s, "k", v), 0);
		faucet_value_free(v);
	}
	for (int round = 0; round < KILLS; round++) {
		char *fresh = round_value(round);
		faucet_value *got = NULL;
		struct timespec delay = {0, (long)(rand_r(&seed) % 3000) * 1000L};
		int ready[2], status;
		pid_t child;
		char c;

		assert_int_equal(pipe(ready), 0);
		child = fork();
		assert_true(child >= 0);
		if (child == 0) {
			close(ready[0]);
			write_until_killed(f->dir, fresh, ready[1]);
		}
		close(ready[1]);
		assert_int_equal(read(ready[0], &c, 1), 1);
		close(ready[0]);
		/* The delay only spreads the kill over the writer's steps. */
		(void)nanosleep(&delay, NULL);
		assert_int_equal(kill(child, SIGKILL), 0);
		assert_int_equal(waitpid(child, &status, 0), child);
		if (!WIFSIGNALED(status))
			fail_msg("writer exited with %d before the kill", WEXITSTATUS(status));

		if (faucet_store_get(s, "k", &got) != 0)
			fail_msg("round %d: %s", round, faucet_error_last()->message);
		assert_non_null(got);
		if (strcmp(faucet_value_json(got), fresh) == 0) {
			landed++;
			free(old);
			old = fresh;
		} else {
			if (strcmp(faucet_value_json(got), old) != 0)
				fail_msg("round %d: the value is neither the old nor the new one", round);
			free(fresh);
		}
		faucet_value_free(got);
	}
	fprintf(stderr, "%d of %d kills came after a complete write, %d temp files left\n", landed,
		KILLS, tu_count_entries(f->dir) - 1);
	/* Killed writers leave temp files behind; the listing ignores them. */
	assert_int_equal(faucet_store_list(s, "", &keys), 0);
	tu_assert_strings(&keys, "k", NULL);
	faucet_strarray_dispose(&keys);
	faucet_store_free(s);
	free(old);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		TU_DIR_TEST(exactly_one_process_takes_an_absent_key),
		TU_DIR_TEST(concurrent_increments_are_never_lost),
		TU_DIR_TEST(a_killed_writer_never_leaves_a_torn_value),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
