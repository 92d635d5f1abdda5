/*
 * test_backfill_runner.c - the unit runner with real commands: outcomes in
 * the marker, resume/restart/dry-run, placeholders and environment, key
 * migration, overlap under concurrency, leases held elsewhere, signals and
 * exit codes, leases that cannot be released or whose writes lose their
 * reply, stores without an atomic compare-and-put, a command not on PATH,
 * and the encryption key variables units inherit.
 *
 * Commands are small /bin/sh scripts that leave evidence in a temp
 * directory.  Nothing is timed: overlap is proven by units that each wait
 * for a sibling's file, signals are sent by the units themselves.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "internal.h"
#include "backfill/backfill_internal.h"
#include <faucet/sys/store_backend.h>

typedef struct {
	char *dir;
	faucet_store *store;
	faucet_backfill_plan *plan;
	char events[4096];
	size_t started;
	void (*on_start_hook)(void *t, const faucet_backfill_unit *u);
	void (*on_end_hook)(void *t, const faucet_backfill_unit *u);
	char *command; /* the file an on_end_hook makes unrunnable */
} fixture;

/* Append "{a}{sep}{b};" to the event log. */
static void ev(fixture *f, const char *a, char sep, const char *b)
{
	size_t len = strlen(f->events);
	(void)snprintf(f->events + len, sizeof(f->events) - len, "%s%c%s;", a, sep, b);
}

static void cb_start(void *ctx, const faucet_backfill_unit *u)
{
	fixture *f = ctx;
	f->started++;
	if (f->on_start_hook)
		f->on_start_hook(f, u);
}

static void cb_end(void *ctx, const faucet_backfill_unit *u, faucet_backfill_status st,
		   const char *error, size_t finished, size_t total)
{
	fixture *f = ctx;
	(void)finished;
	(void)total;
	ev(f, u->id, '=',
	   st == FAUCET_BACKFILL_DONE ? "done" : st == FAUCET_BACKFILL_FAILED ? error : "pending");
	if (f->on_end_hook)
		f->on_end_hook(f, u);
}

static void cb_planned(void *ctx, const faucet_backfill_unit *u, faucet_backfill_status st)
{
	fixture *f = ctx;
	ev(f, u->id, ':', st == FAUCET_BACKFILL_DONE ? "done" : "todo");
}

static fixture *setup_plan(const char *window, int units)
{
	fixture *f = calloc(1, sizeof(*f));
	char to[32];
	faucet_backfill_range r = {"2026-06-01", to, window, "UTC", NULL};

	(void)snprintf(to, sizeof(to), "2026-06-%02d", units + 1);
	f->dir = tu_tempdir();
	assert_int_equal(faucet_store_open_memory(&f->store), 0);
	assert_int_equal(faucet_backfill_plan_new(&f->plan, &r), 0);
	assert_int_equal(faucet_backfill_plan_count(f->plan), (size_t)units);
	assert_int_equal(setenv("T", f->dir, 1), 0);
	faucet_metrics_reset();
	return f;
}

static void teardown(fixture *f)
{
	free(f->command);
	faucet_backfill_plan_free(f->plan);
	faucet_store_free(f->store);
	tu_rmrf(f->dir);
	free(f->dir);
	free(f);
}

/* What a run stopped during its first unit leaves: no outcome and no
 * lease, only the marker written before that unit started (every unit
 * pending). */
static void assert_only_an_empty_marker(faucet_store *s)
{
	faucet_strarray keys = {0};
	faucet_backfill_marker *m = NULL;

	assert_int_equal(faucet_store_list(s, "", &keys), 0);
	assert_int_equal(keys.count, 1);
	assert_non_null(strstr(keys.strings[0], "::__backfill__::"));
	assert_int_equal(faucet_backfill_marker_load(s, keys.strings[0], &m), 0);
	assert_non_null(m);
	assert_int_equal(faucet_backfill_marker_done_count(m), 0);
	assert_int_equal(faucet_backfill_marker_failed_count(m), 0);
	assert_non_null(faucet_backfill_marker_timezone(m));
	faucet_backfill_marker_free(m);
	faucet_strarray_dispose(&keys);
}


static int run(fixture *f, const char *script, faucet_backfill_mode mode, unsigned conc,
	       int dry, faucet_backfill_result *res)
{
	const char *argv[] = {"/bin/sh", "-c", script, "unit", "${backfill.start}",
			      "${backfill.end_date}", "${backfill.unit}", NULL};
	faucet_backfill_progress cb = {f, NULL, cb_planned, cb_start, cb_end, NULL, NULL, NULL};
	faucet_backfill_run_options o = FAUCET_BACKFILL_RUN_OPTIONS_INIT;

	f->events[0] = '\0';
	o.pipeline = "orders";
	o.argv = argv;
	o.concurrency = conc;
	o.mode = mode;
	o.dry_run = dry;
	o.state_url = "memory:";
	o.handle_signals = 1;
	o.progress = &cb;
	return faucet_backfill_run(f->store, f->plan, &o, res);
}

static char *marker_key(fixture *f)
{
	return faucet_backfill_marker_key("orders", faucet_backfill_plan_hash(f->plan));
}

static char *log_of(fixture *f, const char *name)
{
	char *path = tu_join(f->dir, name), *text = tu_read_file(path, NULL);
	free(path);
	return text;
}

static void units_run_with_placeholders_and_environment(void **state)
{
	fixture *f = setup_plan("1d", 2);
	faucet_backfill_result res;
	faucet_backfill_marker *m = NULL;
	faucet_strarray keys = {0};
	char *key = marker_key(f), *log, *metrics_path, *metrics;
	const char *argv[] = {"/bin/sh", "-c",
			      "echo \"$1|$2|$3|${HOME:+home}|$FAUCET_BACKFILL_START|$FAUCET_BACKFILL_END"
			      "|$FAUCET_BACKFILL_START_DATE|$FAUCET_BACKFILL_END_DATE"
			      "|$FAUCET_BACKFILL_START_UNIX|$FAUCET_BACKFILL_END_UNIX"
			      "|$FAUCET_BACKFILL_UNIT|$FAUCET_BACKFILL_STATE_KEY|$FAUCET_STATE"
			      "|${FAUCET_CONFIG:-none}\" >> \"$T/log\"",
			      "unit", "${backfill.start}", "${backfill.end_date}",
			      "x=${backfill.start_unix}-${backfill.end_unix}", NULL};
	faucet_backfill_run_options o = FAUCET_BACKFILL_RUN_OPTIONS_INIT;
	(void)state;

	setenv("FAUCET_CONFIG", "/should/not/leak.yaml", 1);
	metrics_path = tu_join(f->dir, "metrics.prom");
	o.pipeline = "orders";
	o.argv = argv;
	o.state_url = "memory:";
	o.metrics_file = metrics_path;
	assert_int_equal(faucet_backfill_run(f->store, f->plan, &o, &res), 0);
	unsetenv("FAUCET_CONFIG");
	assert_int_equal(res.done, 2);
	assert_int_equal(res.exit_code, 0);
	log = log_of(f, "log");
	assert_string_equal(log,
		"2026-06-01T00:00:00+00:00|2026-06-02|x=1780272000-1780358400|home"
		"|2026-06-01T00:00:00+00:00|2026-06-02T00:00:00+00:00|2026-06-01|2026-06-02"
		"|1780272000|1780358400|20260601T000000Z"
		"|orders::backfill::99fe5d502e08464a::20260601T000000Z|memory:|none\n"
		"2026-06-02T00:00:00+00:00|2026-06-03|x=1780358400-1780444800|home"
		"|2026-06-02T00:00:00+00:00|2026-06-03T00:00:00+00:00|2026-06-02|2026-06-03"
		"|1780358400|1780444800|20260602T000000Z"
		"|orders::backfill::99fe5d502e08464a::20260602T000000Z|memory:|none\n");
	free(log);
	assert_int_equal(faucet_backfill_marker_load(f->store, key, &m), 0);
	assert_int_equal(faucet_backfill_marker_done_count(m), 2);
	faucet_backfill_marker_free(m);
	/* Only the marker is left: the leases are gone. */
	assert_int_equal(faucet_store_list(f->store, "", &keys), 0);
	tu_assert_strings(&keys, key, NULL);
	faucet_strarray_dispose(&keys);
	metrics = tu_read_file(metrics_path, NULL);
	assert_non_null(metrics);
	assert_non_null(strstr(metrics,
		"faucet_backfill_units_total{pipeline=\"orders\",outcome=\"ok\"} 2\n"));
	assert_non_null(strstr(metrics, "faucet_backfill_progress_ratio{pipeline=\"orders\"} 1"));
	free(metrics);
	free(metrics_path);
	free(key);
	teardown(f);
}

#define FAIL_SECOND "echo ran $3 >> \"$T/log\"; " \
	"if [ \"$3\" = 20260602T000000Z ]; then echo first >&2; echo 'last line' >&2; exit 3; fi"

static void failure_resume_and_restart(void **state)
{
	fixture *f = setup_plan("1d", 3);
	faucet_backfill_result res;
	faucet_backfill_marker *m = NULL;
	char *key = marker_key(f), *log;
	const char *err = NULL;
	faucet_value *v;
	(void)state;

	assert_int_equal(run(f, FAIL_SECOND, FAUCET_BACKFILL_FRESH, 1, 0, &res), 0);
	assert_int_equal(res.done, 2);
	assert_int_equal(res.failed, 1);
	assert_int_equal(res.exit_code, 1);
	assert_string_equal(f->events, "20260601T000000Z=done;20260602T000000Z=exit status 3: last line;"
				       "20260603T000000Z=done;");
	assert_int_equal(faucet_backfill_marker_load(f->store, key, &m), 0);
	assert_int_equal(faucet_backfill_marker_status(m, "20260602T000000Z", &err),
			 FAUCET_BACKFILL_FAILED);
	assert_string_equal(err, "exit status 3: last line");
	faucet_backfill_marker_free(m);

	/* Without --resume/--restart an existing marker stops everything. */
	assert_int_equal(run(f, FAIL_SECOND, FAUCET_BACKFILL_FRESH, 1, 0, &res), FAUCET_ECONFIG);
	tu_assert_error_contains("2 done, 1 failed");
	tu_assert_error_contains("--resume");
	log = log_of(f, "log");
	assert_string_equal(log, "ran 20260601T000000Z\nran 20260602T000000Z\nran 20260603T000000Z\n");
	free(log);

	/* --resume runs only the failed unit. */
	assert_int_equal(run(f, "echo ran $3 >> \"$T/log\"", FAUCET_BACKFILL_RESUME, 1, 0, &res), 0);
	assert_int_equal(res.skipped, 2);
	assert_int_equal(res.done, 1);
	assert_int_equal(res.exit_code, 0);
	log = log_of(f, "log");
	assert_string_equal(log, "ran 20260601T000000Z\nran 20260602T000000Z\nran 20260603T000000Z\n"
				 "ran 20260602T000000Z\n");
	free(log);

	/* --restart drops the marker and each unit's key, then runs all. */
	v = tu_v("{\"cursor\":42}");
	assert_int_equal(faucet_store_put(f->store,
		"orders::backfill::816002da283beacb::20260601T000000Z", v), 0);
	faucet_value_free(v);
	assert_int_equal(run(f, "echo again $3 >> \"$T/log2\"", FAUCET_BACKFILL_RESTART, 1, 0, &res), 0);
	assert_int_equal(res.skipped, 0);
	assert_int_equal(res.done, 3);
	tu_assert_value(f->store, "orders::backfill::816002da283beacb::20260601T000000Z", NULL);
	log = log_of(f, "log2");
	assert_string_equal(log, "again 20260601T000000Z\nagain 20260602T000000Z\nagain 20260603T000000Z\n");
	free(log);
	free(key);
	teardown(f);
}

static void dry_run_writes_nothing(void **state)
{
	fixture *f = setup_plan("1d", 3);
	faucet_backfill_result res;
	faucet_strarray before = {0}, after = {0};
	char *key = marker_key(f), *log;
	(void)state;

	assert_int_equal(faucet_backfill_marker_record(f->store, key,
		faucet_backfill_plan_descriptor(f->plan), "20260602T000000Z", NULL, NULL), 0);
	assert_int_equal(faucet_store_list(f->store, "", &before), 0);
	assert_int_equal(run(f, "echo ran >> \"$T/log\"", FAUCET_BACKFILL_RESUME, 2, 1, &res), 0);
	assert_string_equal(f->events, "20260601T000000Z:todo;20260602T000000Z:done;"
				       "20260603T000000Z:todo;");
	assert_int_equal(res.skipped, 1);
	assert_int_equal(res.pending, 2);
	assert_int_equal(f->started, 0);
	log = log_of(f, "log");
	assert_null(log);
	assert_int_equal(faucet_store_list(f->store, "", &after), 0);
	assert_int_equal(after.count, before.count);
	assert_string_equal(after.strings[0], before.strings[0]);
	/* Even a dry run refuses an existing marker without --resume. */
	assert_int_equal(run(f, "true", FAUCET_BACKFILL_FRESH, 1, 1, &res), FAUCET_ECONFIG);
	faucet_strarray_dispose(&before);
	faucet_strarray_dispose(&after);
	free(key);
	teardown(f);
}

static void bad_input_runs_nothing(void **state)
{
	fixture *f = setup_plan("1d", 2);
	faucet_backfill_result res;
	faucet_strarray keys = {0};
	faucet_backfill_run_options o = FAUCET_BACKFILL_RUN_OPTIONS_INIT;
	const char *bad_ph[] = {"echo", "${backfill.strat}", NULL};
	const char *open_ph[] = {"echo", "${backfill.start", NULL};
	const char *ok_ph[] = {"echo", "${HOME} ${other.x} $${backfill.unit}", NULL};
	char *x = NULL;
	faucet_value *junk = tu_v("{\"units\":{}}");
	char *key = marker_key(f);
	(void)state;

	o.pipeline = "orders";
	o.argv = bad_ph;
	assert_int_equal(faucet_backfill_run(f->store, f->plan, &o, &res), FAUCET_ECONFIG);
	tu_assert_error_contains("unknown placeholder ${backfill.strat}");
	o.argv = open_ph;
	assert_int_equal(faucet_backfill_run(f->store, f->plan, &o, &res), FAUCET_ECONFIG);
	tu_assert_error_contains("unterminated");
	assert_int_equal(faucet_backfill_expand(ok_ph[1], faucet_backfill_plan_unit(f->plan, 0), &x), 0);
	assert_string_equal(x, "${HOME} ${other.x} $20260601T000000Z");
	free(x);
	o.argv = ok_ph;
	o.lease_ttl_ms = 2999;
	assert_int_equal(faucet_backfill_run(f->store, f->plan, &o, &res), FAUCET_ECONFIG);
	tu_assert_error_contains("lease TTL must be from 3 s");
	o.lease_ttl_ms = FAUCET_LEASE_MAX_TTL_MS + 1;
	assert_int_equal(faucet_backfill_run(f->store, f->plan, &o, &res), FAUCET_ECONFIG);
	o.lease_ttl_ms = 0;
	o.argv = NULL;
	assert_int_equal(faucet_backfill_run(f->store, f->plan, &o, &res), FAUCET_ECONFIG);
	tu_assert_error_contains("no command");
	o.argv = ok_ph;
	o.pipeline = "bad pipeline";
	assert_int_equal(faucet_backfill_run(f->store, f->plan, &o, &res), FAUCET_ECONFIG);
	assert_int_equal(faucet_store_list(f->store, "", &keys), 0);
	assert_int_equal(keys.count, 0);
	faucet_strarray_dispose(&keys);

	/* A corrupt marker: a config error naming the key, left untouched. */
	assert_int_equal(faucet_store_put(f->store, key, junk), 0);
	o.pipeline = "orders";
	o.mode = FAUCET_BACKFILL_RESUME;
	assert_int_equal(faucet_backfill_run(f->store, f->plan, &o, &res), FAUCET_ECONFIG);
	tu_assert_error_contains("corrupt backfill marker");
	tu_assert_error_contains(key);
	o.mode = FAUCET_BACKFILL_RESTART;
	assert_int_equal(faucet_backfill_run(f->store, f->plan, &o, &res), FAUCET_ECONFIG);
	tu_assert_value(f->store, key, "{\"units\":{}}");
	faucet_value_free(junk);
	free(key);
	teardown(f);
}

static void exit_codes_and_missing_commands(void **state)
{
	fixture *f = setup_plan("1d", 3);
	faucet_backfill_result res;
	faucet_backfill_run_options o = FAUCET_BACKFILL_RUN_OPTIONS_INIT;
	const char *missing[] = {"/nonexistent/faucet-test-cmd", NULL};
	const char *not_on_path[] = {"faucet-test-no-such-command", NULL};
	const char *by_placeholder[] = {"/nonexistent/${backfill.unit}", NULL};
	const char *no[] = {"false", NULL};
	char *key = marker_key(f);
	faucet_backfill_marker *m = NULL;
	const char *err = NULL;
	(void)state;

	o.pipeline = "orders";
	o.argv = no;
	assert_int_equal(faucet_backfill_run(f->store, f->plan, &o, &res), 0);
	assert_int_equal(res.failed, 3);
	assert_int_equal(res.exit_code, 3);
	/* A command that cannot be found is bad input: nothing runs, and the
	 * marker keeps what the last run recorded. */
	o.argv = missing;
	o.mode = FAUCET_BACKFILL_RESUME;
	assert_int_equal(faucet_backfill_run(f->store, f->plan, &o, &res), FAUCET_ECONFIG);
	tu_assert_error_contains("command '/nonexistent/faucet-test-cmd' does not exist");
	o.argv = not_on_path;
	assert_int_equal(faucet_backfill_run(f->store, f->plan, &o, &res), FAUCET_ECONFIG);
	tu_assert_error_contains("command 'faucet-test-no-such-command' was not found on PATH");
	assert_int_equal(faucet_backfill_marker_load(f->store, key, &m), 0);
	faucet_backfill_marker_status(m, "20260601T000000Z", &err);
	assert_string_equal(err, "exit status 1");
	faucet_backfill_marker_free(m);
	/* A command made of placeholders is looked for by each unit. */
	o.argv = by_placeholder;
	assert_int_equal(faucet_backfill_run(f->store, f->plan, &o, &res), 0);
	assert_int_equal(res.exit_code, 3);
	assert_int_equal(faucet_backfill_marker_load(f->store, key, &m), 0);
	faucet_backfill_marker_status(m, "20260601T000000Z", &err);
	assert_string_equal(err, "cannot run '/nonexistent/20260601T000000Z': No such file or "
				 "directory");
	faucet_backfill_marker_free(m);
	free(key);
	teardown(f);
}


/* ---- commands that stop being runnable after preflight ------------------------ */

/* After the first unit ends, its command loses its execute bits, or goes:
 * the next units find out only at exec time, in the child, which must not
 * format the reason itself (see child_exec). */
static void drop_exec_bits(void *ctx, const faucet_backfill_unit *u)
{
	fixture *f = ctx;
	(void)u;
	assert_int_equal(chmod(f->command, 0644), 0);
}

static void remove_command(void *ctx, const faucet_backfill_unit *u)
{
	fixture *f = ctx;
	(void)u;
	(void)unlink(f->command);
}

static void unrunnable_after_preflight(void (*hook)(void *, const faucet_backfill_unit *),
				       const char *reason)
{
	fixture *f = setup_plan("1d", 3);
	faucet_backfill_result res;
	faucet_backfill_run_options o = FAUCET_BACKFILL_RUN_OPTIONS_INIT;
	faucet_backfill_progress cb = {f, NULL, NULL, cb_start, cb_end, NULL, NULL, NULL};
	const char *argv[] = {NULL, "${backfill.unit}", NULL};
	const char script[] = "#!/bin/sh\necho ran $1 >> \"$T/log\"\n";
	char *key = marker_key(f), *log, want[600], events[1400];
	faucet_backfill_marker *m = NULL;
	const char *err = NULL;

	f->command = tu_join(f->dir, "unit.sh");
	tu_write_file(f->command, script, strlen(script));
	assert_int_equal(chmod(f->command, 0755), 0);
	argv[0] = f->command;
	f->on_end_hook = hook;
	o.pipeline = "orders";
	o.argv = argv;
	o.progress = &cb;
	assert_int_equal(faucet_backfill_run(f->store, f->plan, &o, &res), 0);
	/* The run goes on: each later unit fails with the reason as its
	 * message, not an exit status of a child that wrote it. */
	assert_int_equal(res.done, 1);
	assert_int_equal(res.failed, 2);
	assert_int_equal(res.exit_code, 2);
	(void)snprintf(want, sizeof(want), "cannot run '%s': %s", f->command, reason);
	(void)snprintf(events, sizeof(events),
		       "20260601T000000Z=done;20260602T000000Z=%s;20260603T000000Z=%s;", want, want);
	assert_string_equal(f->events, events);
	assert_int_equal(faucet_backfill_marker_load(f->store, key, &m), 0);
	assert_int_equal(faucet_backfill_marker_status(m, "20260602T000000Z", &err),
			 FAUCET_BACKFILL_FAILED);
	assert_string_equal(err, want);
	faucet_backfill_marker_free(m);
	log = log_of(f, "log");
	assert_string_equal(log, "ran 20260601T000000Z\n");
	free(log);
	free(key);
	teardown(f);
}

static void a_command_no_longer_executable_fails_its_units(void **state)
{
	(void)state;
	unrunnable_after_preflight(drop_exec_bits, "Permission denied");
}

static void a_command_removed_after_preflight_fails_its_units(void **state)
{
	(void)state;
	unrunnable_after_preflight(remove_command, "No such file or directory");
}

/* ---- no code of the embedding program in the child -------------------------------- */

/* An atfork child handler stands for the embedding program's code: with a
 * plain fork() it would run in every unit's child before exec, where a lock
 * another thread held at the fork stays locked.  The runner's child must run
 * none of it (glibc's _Fork). */
static int atfork_report_fd = -1;

static void atfork_child(void)
{
	if (atfork_report_fd >= 0)
		(void)!write(atfork_report_fd, "c", 1);
}

static void the_child_runs_no_atfork_handler(void **state)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
	static int registered;
	fixture *f = setup_plan("1d", 2);
	faucet_backfill_result res;
	int fds[2];
	char c;
	(void)state;

	if (!registered) {
		assert_int_equal(pthread_atfork(NULL, NULL, atfork_child), 0);
		registered = 1;
	}
	assert_int_equal(pipe2(fds, O_NONBLOCK | O_CLOEXEC), 0);
	atfork_report_fd = fds[1];
	assert_int_equal(run(f, "true", FAUCET_BACKFILL_FRESH, 1, 0, &res), 0);
	atfork_report_fd = -1;
	assert_int_equal(res.done, 2);
	assert_int_equal(read(fds[0], &c, 1), -1);
	assert_int_equal(errno, EAGAIN);
	close(fds[0]);
	close(fds[1]);
	teardown(f);
#else
	(void)state;
	skip();
#endif
}

/* The embedding program's stdio streams are its own: starting units
 * flushes none of them (one could be a full pipe, and block us). */
static void starting_units_flushes_no_stream_of_the_program(void **state)
{
	fixture *f = setup_plan("1d", 1);
	faucet_backfill_result res;
	char buf[64];
	int fds[2];
	FILE *out;
	(void)state;

	assert_int_equal(pipe2(fds, O_NONBLOCK | O_CLOEXEC), 0);
	out = fdopen(fds[1], "w");
	assert_non_null(out);
	assert_int_equal(setvbuf(out, NULL, _IOFBF, 4096), 0);
	assert_true(fputs("buffered, unflushed", out) >= 0);
	assert_int_equal(run(f, "true", FAUCET_BACKFILL_FRESH, 1, 0, &res), 0);
	assert_int_equal(res.done, 1);
	assert_int_equal(read(fds[0], buf, sizeof(buf)), -1);
	assert_int_equal(errno, EAGAIN);
	assert_int_equal(fclose(out), 0); /* now it is flushed, by its owner */
	assert_int_equal(read(fds[0], buf, sizeof(buf)), (ssize_t)strlen("buffered, unflushed"));
	close(fds[0]);
	teardown(f);
}

/* ---- an embedding program's own SIGCHLD --------------------------------------------- */

static void reap_everything(int signo)
{
	int saved = errno;
	(void)signo;
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	errno = saved;
}

static void sigchld_set_by_the_embedder(void **state)
{
	fixture *f = setup_plan("1d", 2);
	faucet_backfill_result res;
	struct sigaction sa, old;
	char *key = marker_key(f);
	faucet_backfill_marker *m = NULL;
	(void)state;

	/* Ignored: the kernel would reap the units, so the run is refused. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	assert_int_equal(sigaction(SIGCHLD, &sa, &old), 0);
	assert_int_equal(run(f, "true", FAUCET_BACKFILL_FRESH, 1, 0, &res), FAUCET_ECONFIG);
	tu_assert_error_contains("SIGCHLD is ignored");
	/* A handler that reaps every child: the run still ends, each unit
	 * either done (we reaped it first) or failed saying why. */
	sa.sa_handler = reap_everything;
	assert_int_equal(sigaction(SIGCHLD, &sa, NULL), 0);
	assert_int_equal(run(f, "true", FAUCET_BACKFILL_FRESH, 1, 0, &res), 0);
	assert_int_equal(sigaction(SIGCHLD, &old, NULL), 0);
	assert_int_equal(res.done + res.failed, 2);
	assert_int_equal(faucet_backfill_marker_load(f->store, key, &m), 0);
	for (size_t i = 0; i < 2; i++) {
		const char *err = NULL;
		if (faucet_backfill_marker_status(m, faucet_backfill_plan_unit(f->plan, i)->id, &err) ==
		    FAUCET_BACKFILL_FAILED)
			assert_non_null(strstr(err, "another waitpid() in this process reaped"));
	}
	faucet_backfill_marker_free(m);
	free(key);
	teardown(f);
}

/* ---- a host of the embedder's own ------------------------------------------------ */

typedef struct {
	fixture *f;
	struct sigaction before_int, before_term; /* as the test began */
	int handlers_changed;                     /* seen while the run ran */
	int started, finished;
	int stop_asked;                           /* stop requests handed out */
	int wake[2];                              /* the stop descriptor, or -1 */
	int publishes, finals;
} test_host;

static int handler_changed(int signo, const struct sigaction *before)
{
	struct sigaction now;

	assert_int_equal(sigaction(signo, NULL, &now), 0);
	return now.sa_handler != before->sa_handler || now.sa_flags != before->sa_flags;
}

static void look_at_handlers(test_host *h)
{
	h->handlers_changed |= handler_changed(SIGINT, &h->before_int);
	h->handlers_changed |= handler_changed(SIGTERM, &h->before_term);
}

static int th_start(void *ctx)
{
	test_host *h = ctx;
	h->started++;
	return 0;
}

static void th_finish(void *ctx)
{
	test_host *h = ctx;
	h->finished++;
}

static int th_stop_fd(void *ctx)
{
	test_host *h = ctx;
	return h->wake[0];
}

/* One stop request, once the first unit runs. */
static int th_stop_requested(void *ctx)
{
	test_host *h = ctx;

	look_at_handlers(h);
	if (h->f->started == 0 || h->stop_asked)
		return 0;
	h->stop_asked++;
	return SIGTERM;
}

static int th_publish(void *ctx, int final)
{
	test_host *h = ctx;

	look_at_handlers(h);
	h->publishes++;
	h->finals += final != 0;
	return 0;
}

static void run_with_host(int with_fd)
{
	fixture *f = setup_plan("1d", 3);
	test_host h;
	faucet_backfill_host host = {0};
	faucet_backfill_result res;
	faucet_backfill_run_options o = FAUCET_BACKFILL_RUN_OPTIONS_INIT;
	faucet_backfill_progress cb = {f, NULL, NULL, cb_start, cb_end, NULL, NULL, NULL};
	const char *argv[] = {"/bin/sh", "-c", "echo ran >> \"$T/log\"; exec sleep 30", NULL};
	struct sigaction dfl;
	sigset_t saved_mask;

	/* Default dispositions to begin with, which a trap would change. */
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	assert_int_equal(sigaction(SIGINT, &dfl, NULL), 0);
	assert_int_equal(sigaction(SIGTERM, &dfl, NULL), 0);
	memset(&h, 0, sizeof(h));
	h.f = f;
	h.wake[0] = h.wake[1] = -1;
	assert_int_equal(sigaction(SIGINT, NULL, &h.before_int), 0);
	assert_int_equal(sigaction(SIGTERM, NULL, &h.before_term), 0);
	if (with_fd) {
		sigset_t block;

		/* A program with a stop descriptor is likely to read its
		 * signals from a signalfd, with them blocked: the units must
		 * still stop at our SIGTERM. */
		sigemptyset(&block);
		sigaddset(&block, SIGINT);
		sigaddset(&block, SIGTERM);
		assert_int_equal(sigprocmask(SIG_BLOCK, &block, &saved_mask), 0);
		/* Readable throughout (a host that never drains it): only
		 * stop_requested's answer is a stop request, not readability. */
		assert_int_equal(pipe(h.wake), 0);
		assert_int_equal(write(h.wake[1], "x", 1), 1);
	}
	host = (faucet_backfill_host){&h, th_start, th_finish, th_stop_fd, th_stop_requested,
				      th_publish};
	o.pipeline = "orders";
	o.argv = argv;
	o.progress = &cb;
	o.host = &host;
	assert_int_equal(faucet_backfill_run(f->store, f->plan, &o, &res), 0);
	if (with_fd)
		assert_int_equal(sigprocmask(SIG_SETMASK, &saved_mask, NULL), 0);
	assert_int_equal(h.handlers_changed, 0);
	look_at_handlers(&h);
	assert_int_equal(h.handlers_changed, 0);
	assert_int_equal(h.started, 1);
	assert_int_equal(h.finished, 1);
	/* The stop was honoured: the running unit got SIGTERM and stays
	 * pending, nothing else started. */
	assert_int_equal(h.stop_asked, 1);
	assert_int_equal(f->started, 1);
	assert_int_equal(res.signal, SIGTERM);
	assert_int_equal(res.exit_code, 128 + SIGTERM);
	assert_int_equal(res.pending, 3);
	assert_int_equal(res.done + res.failed, 0);
	assert_string_equal(f->events, "20260601T000000Z=pending;");
	assert_only_an_empty_marker(f->store);
	/* Metrics went to the host, the last time as final; no file was
	 * written behind its back (the unit's log is all the directory has,
	 * if the unit got to write it before its SIGTERM). */
	assert_true(h.publishes >= 2);
	assert_int_equal(h.finals, 1);
	assert_true(tu_count_entries(f->dir) <= 1);
	if (with_fd) {
		close(h.wake[0]);
		close(h.wake[1]);
	}
	teardown(f);
}

static void a_custom_host_gets_no_signal_handler_and_stops_the_run(void **state)
{
	(void)state;
	run_with_host(0);
}

static void a_custom_host_with_a_stop_descriptor_stops_the_run(void **state)
{
	(void)state;
	run_with_host(1);
}

static void a_host_and_the_legacy_switches_do_not_mix(void **state)
{
	fixture *f = setup_plan("1d", 1);
	faucet_backfill_host host = {0};
	faucet_backfill_result res;
	faucet_backfill_run_options o = FAUCET_BACKFILL_RUN_OPTIONS_INIT;
	const char *argv[] = {"true", NULL};
	(void)state;

	o.pipeline = "orders";
	o.argv = argv;
	o.host = &host;
	o.handle_signals = 1;
	assert_int_equal(faucet_backfill_run(f->store, f->plan, &o, &res), FAUCET_EINVALID);
	o.handle_signals = 0;
	o.metrics_file = "/nonexistent/metrics.prom";
	assert_int_equal(faucet_backfill_run(f->store, f->plan, &o, &res), FAUCET_EINVALID);
	/* A zeroed host asks for nothing and the run goes through. */
	o.metrics_file = NULL;
	assert_int_equal(faucet_backfill_run(f->store, f->plan, &o, &res), 0);
	assert_int_equal(res.done, 1);
	teardown(f);
}

/* ---- stores that misbehave on lease writes ------------------------------------ */

/* The fixture's memory store seen through a backend that can drop its
 * compare-and-put (no_cas), fail every compare-and-delete of a lease
 * (stuck_leases), or apply each compare-and-put of a lease and then report
 * that its reply was lost (lost_replies). */
typedef struct {
	faucet_store_backend base;
	faucet_store *inner;
	int stuck_leases, lost_replies;
} odd_backend;

static faucet_store *inner_of(faucet_store_backend *b)
{
	return ((odd_backend *)b)->inner;
}

static int is_lease(const char *key)
{
	size_t n = strlen(key), m = strlen("::__lease__");
	return n >= m && strcmp(key + n - m, "::__lease__") == 0;
}

static int odd_get(faucet_store_backend *b, const char *key, faucet_value **out)
{
	return faucet_store_get(inner_of(b), key, out);
}

static int odd_put(faucet_store_backend *b, const char *key, const faucet_value *v)
{
	return faucet_store_put(inner_of(b), key, v);
}

static int odd_del(faucet_store_backend *b, const char *key)
{
	return faucet_store_delete(inner_of(b), key);
}

static int odd_list(faucet_store_backend *b, const char *prefix, faucet_strarray *out)
{
	return faucet_store_list(inner_of(b), prefix, out);
}

static int odd_cas(faucet_store_backend *b, const char *key, const faucet_value *expected,
		   const faucet_value *v, int *written)
{
	int rc = faucet_store_compare_and_put(inner_of(b), key, expected, v, written);

	if (rc == 0 && *written && is_lease(key) && ((odd_backend *)b)->lost_replies)
		return faucet_error_set(FAUCET_EUNKNOWN, "reply lost writing %s", key);
	return rc;
}

static int odd_cad(faucet_store_backend *b, const char *key, const faucet_value *expected,
		   int *deleted)
{
	if (is_lease(key) && ((odd_backend *)b)->stuck_leases)
		return faucet_error_set(FAUCET_EUNAVAILABLE, "connection dropped deleting %s", key);
	return faucet_store_compare_and_delete(inner_of(b), key, expected, deleted);
}

static void odd_free(faucet_store_backend *b)
{
	faucet_store_free(inner_of(b));
	free(b);
}

/* Put the fixture's store behind an odd_backend; returns it for tuning. */
static odd_backend *wrap_store(fixture *f, int with_cas)
{
	odd_backend *b = calloc(1, sizeof(*b));

	assert_non_null(b);
	b->inner = f->store;
	b->base.version = FAUCET_STORE_BACKEND_VERSION;
	b->base.name = "odd";
	b->base.get = odd_get;
	b->base.put = odd_put;
	b->base.del = odd_del;
	b->base.list = odd_list;
	b->base.compare_and_put = with_cas ? odd_cas : NULL;
	b->base.compare_and_delete = odd_cad;
	b->base.free = odd_free;
	assert_int_equal(faucet_store_new(&f->store, &b->base), 0);
	return b;
}

/* Leases that cannot be released would hold their units until they
 * expire: every unit still runs and is recorded, but the run fails and
 * names each lease left behind. */
static void unreleased_leases_fail_the_run_and_are_named(void **state)
{
	fixture *f = setup_plan("1d", 2);
	faucet_backfill_result res;
	faucet_backfill_marker *m = NULL;
	char *key = marker_key(f), *log;
	(void)state;

	wrap_store(f, 1)->stuck_leases = 1;
	assert_int_equal(run(f, "echo ran $3 >> \"$T/log\"", FAUCET_BACKFILL_FRESH, 1, 0, &res),
			 FAUCET_EUNAVAILABLE);
	tu_assert_error_contains("could not release 2 unit lease(s)");
	tu_assert_error_contains("orders::backfill::99fe5d502e08464a::20260601T000000Z::__lease__ (expires ");
	tu_assert_error_contains("orders::backfill::99fe5d502e08464a::20260602T000000Z::__lease__ (expires ");
	tu_assert_error_contains("connection dropped");
	assert_int_equal(res.leases_left, 2);
	assert_int_equal(res.done, 2);
	log = log_of(f, "log");
	assert_string_equal(log, "ran 20260601T000000Z\nran 20260602T000000Z\n");
	free(log);
	assert_int_equal(faucet_backfill_marker_load(f->store, key, &m), 0);
	assert_int_equal(faucet_backfill_marker_done_count(m), 2);
	faucet_backfill_marker_free(m);
	free(key);
	teardown(f);
}

/* Lease writes that land but lose their reply do not stop the run: the
 * runner finds its own holder id on the lease and goes on. */
static void lease_replies_lost_do_not_stop_the_run(void **state)
{
	fixture *f = setup_plan("1d", 2);
	faucet_backfill_result res;
	faucet_strarray keys = {0};
	char *key = marker_key(f);
	(void)state;

	wrap_store(f, 1)->lost_replies = 1;
	assert_int_equal(run(f, "true", FAUCET_BACKFILL_FRESH, 2, 0, &res), 0);
	assert_int_equal(res.done, 2);
	assert_int_equal(res.leases_left, 0);
	assert_int_equal(faucet_store_list(f->store, "", &keys), 0);
	tu_assert_strings(&keys, key, NULL);
	faucet_strarray_dispose(&keys);
	free(key);
	teardown(f);
}

/* Without an atomic compare-and-put two runners could both run a unit:
 * such a store is refused before anything runs; a dry run is allowed. */
static void a_store_without_atomic_compare_and_put_is_refused(void **state)
{
	fixture *f = setup_plan("1d", 2);
	faucet_backfill_result res;
	faucet_strarray keys = {0};
	char *path;
	(void)state;

	wrap_store(f, 0);
	assert_false(faucet_store_supports_compare_and_put(f->store));
	assert_int_equal(run(f, "echo ran >> \"$T/log\"", FAUCET_BACKFILL_FRESH, 1, 0, &res),
			 FAUCET_EUNSUPPORTED);
	tu_assert_error_contains("atomic compare-and-put");
	tu_assert_error_contains("'odd'");
	path = tu_join(f->dir, "log");
	assert_false(tu_exists(path));
	free(path);
	assert_int_equal(faucet_store_list(f->store, "", &keys), 0);
	assert_int_equal(keys.count, 0);
	faucet_strarray_dispose(&keys);
	assert_int_equal(run(f, "true", FAUCET_BACKFILL_FRESH, 1, 1, &res), 0);
	assert_int_equal(res.pending, 2);
	teardown(f);
}

/* Units get the names of the key variables, never their values, and a
 * stray FAUCET_ENCRYPTION_KEY_ENV of ours is not passed on unasked. */
static void units_inherit_the_key_variable_names(void **state)
{
	fixture *f = setup_plan("1d", 1);
	faucet_backfill_result res;
	faucet_backfill_run_options o = FAUCET_BACKFILL_RUN_OPTIONS_INIT;
	const char *argv[] = {"/bin/sh", "-c",
			      "echo \"${FAUCET_ENCRYPTION_KEY_ENV:-none}|${FAUCET_PREVIOUS_KEY_ENV:-none}"
			      "|$BF_TEST_KEY\" >> \"$T/log\"", NULL};
	char *log;
	(void)state;

	assert_int_equal(setenv("BF_TEST_KEY", "k", 1), 0);
	assert_int_equal(setenv("FAUCET_ENCRYPTION_KEY_ENV", "STRAY", 1), 0);
	o.pipeline = "orders";
	o.argv = argv;
	o.state_url = "file:x";
	assert_int_equal(faucet_backfill_run(f->store, f->plan, &o, &res), 0);
	o.mode = FAUCET_BACKFILL_RESTART;
	o.key_env = "BF_TEST_KEY";
	o.previous_key_env = "OLD_A,OLD_B";
	assert_int_equal(faucet_backfill_run(f->store, f->plan, &o, &res), 0);
	o.key_env = "BAD=NAME";
	assert_int_equal(faucet_backfill_run(f->store, f->plan, &o, &res), FAUCET_ECONFIG);
	unsetenv("FAUCET_ENCRYPTION_KEY_ENV");
	unsetenv("BF_TEST_KEY");
	log = log_of(f, "log");
	assert_string_equal(log, "none|none|k\nBF_TEST_KEY|OLD_A,OLD_B|k\n");
	free(log);
	teardown(f);
}

static void legacy_unit_keys_are_migrated(void **state)
{
	fixture *f = setup_plan("1d", 1);
	faucet_backfill_result res;
	faucet_value *v = tu_v("{\"cursor\":7}");
	(void)state;

	assert_int_equal(faucet_store_put(f->store, "orders::backfill::20260601T000000Z", v), 0);
	assert_int_equal(run(f, "true", FAUCET_BACKFILL_FRESH, 1, 0, &res), 0);
	tu_assert_value(f->store, "orders::backfill::3c43b8ed6269ef11::20260601T000000Z",
			"{\"cursor\":7}");
	tu_assert_value(f->store, "orders::backfill::20260601T000000Z", NULL);
	assert_int_equal(faucet_metrics_counter_get("faucet_state_key_migrations_total",
						    "outcome=\"moved\""), 1);
	faucet_value_free(v);
	teardown(f);
}

/* Each unit announces itself, then waits until both have: with
 * concurrency 1 the first would give up and fail. */
static void concurrency_really_overlaps(void **state)
{
	fixture *f = setup_plan("1d", 2);
	faucet_backfill_result res;
	(void)state;

	assert_int_equal(run(f,
		"mkdir -p \"$T/up\"; touch \"$T/up/$3\"; i=0; "
		"while [ \"$(ls \"$T/up\" | wc -l)\" -lt 2 ]; do "
		"  i=$((i+1)); [ $i -gt 3000 ] && { echo 'no sibling' >&2; exit 1; }; sleep 0.01; "
		"done", FAUCET_BACKFILL_FRESH, 2, 0, &res), 0);
	assert_int_equal(res.done, 2);
	assert_int_equal(res.failed, 0);
	teardown(f);
}

/* Another runner holds unit 1's lease; while unit 2 runs, that runner
 * finishes unit 1 (simulated from the start callback).  We must not run it. */
static void finish_unit_one_elsewhere(void *ctx, const faucet_backfill_unit *u)
{
	fixture *f = ctx;
	char *key = marker_key(f);

	if (strcmp(u->id, "20260602T000000Z") == 0) {
		assert_int_equal(faucet_backfill_marker_record(f->store, key,
			faucet_backfill_plan_descriptor(f->plan), "20260601T000000Z", NULL, NULL), 0);
		assert_int_equal(faucet_store_delete(f->store,
			"orders::backfill::99fe5d502e08464a::20260601T000000Z::__lease__"), 0);
	}
	free(key);
}

static void units_leased_elsewhere_are_left_to_their_holder(void **state)
{
	fixture *f = setup_plan("1d", 2);
	faucet_backfill_result res;
	char lease[128];
	faucet_value *v;
	char *log;
	(void)state;

	(void)snprintf(lease, sizeof(lease), "{\"holder\":\"elsewhere:1:x\",\"expires_at\":%lld}",
		       (long long)time(NULL) + 3600);
	v = tu_v(lease);
	assert_int_equal(faucet_store_put(f->store,
		"orders::backfill::99fe5d502e08464a::20260601T000000Z::__lease__", v), 0);
	faucet_value_free(v);
	f->on_start_hook = finish_unit_one_elsewhere;
	assert_int_equal(run(f, "echo ran $3 >> \"$T/log\"", FAUCET_BACKFILL_FRESH, 1, 0, &res), 0);
	assert_int_equal(res.done, 1);
	assert_int_equal(res.by_others, 1);
	log = log_of(f, "log");
	assert_string_equal(log, "ran 20260602T000000Z\n");
	free(log);
	teardown(f);
}

static void sigterm_leaves_running_units_pending(void **state)
{
	fixture *f = setup_plan("1d", 3);
	faucet_backfill_result res;
	(void)state;

	assert_int_equal(run(f, "echo ran $3 >> \"$T/log\"; kill -TERM $PPID; exec sleep 30",
			     FAUCET_BACKFILL_FRESH, 1, 0, &res), 0);
	assert_int_equal(res.signal, SIGTERM);
	assert_int_equal(res.exit_code, 128 + SIGTERM);
	assert_int_equal(res.pending, 3);
	assert_int_equal(res.done + res.failed, 0);
	assert_string_equal(f->events, "20260601T000000Z=pending;");
	/* No outcome recorded, no lease left behind. */
	assert_only_an_empty_marker(f->store);
	/* The handlers are gone again. */
	{
		struct sigaction sa;
		sigaction(SIGTERM, NULL, &sa);
		assert_true(sa.sa_handler == SIG_DFL);
	}
	teardown(f);
}

static void second_interrupt_kills(void **state)
{
	fixture *f = setup_plan("1d", 2);
	faucet_backfill_result res;
	(void)state;

	/* Unit 1 interrupts the runner, and answers the SIGTERM the runner then
	 * sends it with a second interrupt; both units survive SIGTERM, so only
	 * the SIGKILL that the second interrupt triggers ends them.  (Sending the
	 * two signals back to back would leave their order to the kernel.) */
	assert_int_equal(run(f, "if [ $3 = 20260601T000000Z ]; then "
			     "  trap '' INT; trap 'kill -TERM $PPID' TERM; kill -INT $PPID; i=0; "
			     "  while [ $i -lt 3000 ]; do i=$((i+1)); sleep 0.01; done; exit 0; "
			     "fi; trap '' TERM INT; exec sleep 30",
			     FAUCET_BACKFILL_FRESH, 2, 0, &res), 0);
	assert_int_equal(res.signal, SIGINT);
	assert_int_equal(res.exit_code, 128 + SIGINT);
	assert_int_equal(res.pending, 2);
	assert_int_equal(res.done, 0);
	teardown(f);
}

/* ---- two runners, one range ----------------------------------------------- */

typedef struct {
	faucet_store *store;
	const faucet_backfill_plan *plan;
	pthread_barrier_t *go;
	faucet_backfill_result res;
	int rc;
} racer;

static void *race_thread(void *arg)
{
	racer *r = arg;
	const char *argv[] = {"/bin/sh", "-c", "echo x >> \"$T/ran.$1\"", "unit", "${backfill.unit}", NULL};
	faucet_backfill_run_options o = FAUCET_BACKFILL_RUN_OPTIONS_INIT;

	o.pipeline = "orders";
	o.argv = argv;
	o.concurrency = 2;
	o.mode = FAUCET_BACKFILL_RESUME;
	pthread_barrier_wait(r->go);
	r->rc = faucet_backfill_run(r->store, r->plan, &o, &r->res);
	return NULL;
}

/* Two runners of one range at once (threads sharing a store whose
 * compare-and-put is atomic): every unit's command runs exactly once, and
 * between them they finish every unit. */
static void two_runners_share_the_work(void **state)
{
	fixture *f = setup_plan("1d", 8);
	pthread_barrier_t go;
	pthread_t th[2];
	racer rs[2];
	faucet_backfill_marker *m = NULL;
	char *key = marker_key(f);
	size_t done = 0;
	(void)state;

	assert_int_equal(pthread_barrier_init(&go, NULL, 2), 0);
	for (int i = 0; i < 2; i++) {
		rs[i] = (racer){f->store, f->plan, &go, {0}, -1};
		assert_int_equal(pthread_create(&th[i], NULL, race_thread, &rs[i]), 0);
	}
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	pthread_barrier_destroy(&go);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(rs[i].rc, 0);
		assert_int_equal(rs[i].res.failed, 0);
		assert_int_equal(rs[i].res.pending, 0);
		assert_int_equal(rs[i].res.done + rs[i].res.by_others + rs[i].res.skipped, 8);
		done += rs[i].res.done;
	}
	assert_int_equal(done, 8);
	for (size_t i = 0; i < 8; i++) {
		char name[64], *text;
		(void)snprintf(name, sizeof(name), "ran.%s", faucet_backfill_plan_unit(f->plan, i)->id);
		text = log_of(f, name);
		assert_non_null(text);
		assert_string_equal(text, "x\n");
		free(text);
	}
	assert_int_equal(faucet_backfill_marker_load(f->store, key, &m), 0);
	assert_int_equal(faucet_backfill_marker_done_count(m), 8);
	faucet_backfill_marker_free(m);
	free(key);
	teardown(f);
}

/* The same across processes, through one file store: its compare-and-put
 * holds an OS lock, so the leases and marker merges are atomic between
 * runners that share nothing but the directory. */
static int race_in_child(const char *root, const faucet_backfill_plan *plan)
{
	faucet_store *s = NULL;
	faucet_backfill_result res;
	const char *argv[] = {"/bin/sh", "-c", "echo x >> \"$T/ran.$1\"", "unit", "${backfill.unit}", NULL};
	faucet_backfill_run_options o = FAUCET_BACKFILL_RUN_OPTIONS_INIT;

	o.pipeline = "orders";
	o.argv = argv;
	o.concurrency = 3;
	o.mode = FAUCET_BACKFILL_RESUME;
	if (faucet_store_open_file(&s, root, NULL) != 0)
		return 10;
	if (faucet_backfill_run(s, plan, &o, &res) != 0) {
		fprintf(stderr, "runner: %s\n", faucet_error_last()->message);
		return 11;
	}
	faucet_store_free(s);
	return res.failed == 0 && res.pending == 0 &&
	       res.done + res.by_others + res.skipped == res.total ? 0 : 12;
}

static void two_processes_share_the_work_through_a_file_store(void **state)
{
	fixture *f = setup_plan("1d", 12);
	char *root = tu_join(f->dir, "state");
	faucet_store *fs = NULL;
	faucet_backfill_marker *m = NULL;
	char *key = marker_key(f);
	int go[2];
	pid_t pids[2];
	(void)state;

	/* Both children block on a pipe until the parent closes it: a start line. */
	assert_int_equal(pipe(go), 0);
	for (int i = 0; i < 2; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			char c;
			close(go[1]);
			(void)!read(go[0], &c, 1);
			_exit(race_in_child(root, f->plan));
		}
	}
	close(go[0]);
	close(go[1]);
	for (int i = 0; i < 2; i++) {
		int st = 0;
		assert_int_equal(waitpid(pids[i], &st, 0), pids[i]);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
	}
	for (size_t i = 0; i < 12; i++) {
		char name[64], *text;
		(void)snprintf(name, sizeof(name), "ran.%s", faucet_backfill_plan_unit(f->plan, i)->id);
		text = log_of(f, name);
		assert_non_null(text);
		assert_string_equal(text, "x\n");
		free(text);
	}
	assert_int_equal(faucet_store_open_file(&fs, root, NULL), 0);
	assert_int_equal(faucet_backfill_marker_load(fs, key, &m), 0);
	assert_non_null(m);
	assert_int_equal(faucet_backfill_marker_done_count(m), 12);
	faucet_backfill_marker_free(m);
	faucet_store_free(fs);
	free(key);
	free(root);
	teardown(f);
}

/* on_output: every line of both streams, whole, without its break, tagged
 * with its unit and stream; "\r\n" is one break, a bare "\r" ends a line
 * too, an unterminated last line still arrives, a line longer than the
 * buffer arrives in pieces.  Stdout no longer reaches our own stdout. */
typedef struct {
	faucet_buf lines;
	size_t count;
	int started, ticks;
} output_log;

static void cb_output(void *ctx, const faucet_backfill_unit *u, int is_stderr, const char *line)
{
	output_log *o = ctx;

	(void)faucet__buf_printf(&o->lines, "%s %s [%.40s] %zu\n", u->id, is_stderr ? "err" : "out",
				line, strlen(line));
	o->count++;
}

static void cb_tick(void *ctx)
{
	((output_log *)ctx)->ticks++;
}

static void unit_output_arrives_line_by_line(void **state)
{
	fixture *f = setup_plan(NULL, 1);
	output_log log = {FAUCET_BUF_INIT, 0, 0, 0};
	const char *argv[] = {"/bin/sh", "-c",
			      "printf 'one\\r\\ntwo\\rthree\\n\\n'; printf 'e1\\ne2' >&2; "
			      "head -c 3000 /dev/zero | tr '\\0' x",
			      NULL};
	faucet_backfill_progress cb = {&log, NULL, NULL, NULL, NULL, NULL, cb_output, cb_tick};
	faucet_backfill_run_options o = FAUCET_BACKFILL_RUN_OPTIONS_INIT;
	faucet_backfill_result res;
	(void)state;

	o.pipeline = "orders";
	o.argv = argv;
	o.state_url = "memory:";
	o.progress = &cb;
	assert_int_equal(faucet_backfill_run(f->store, f->plan, &o, &res), 0);
	assert_int_equal(res.done, 1);
	assert_non_null(log.lines.ptr);
	/* Stdout and stderr are read separately, so only each stream's own
	 * order is fixed. */
	assert_non_null(strstr(log.lines.ptr, "20260601T000000Z out [one] 3\n"
						"20260601T000000Z out [two] 3\n"
						"20260601T000000Z out [three] 5\n"
						"20260601T000000Z out [] 0\n"));
	assert_non_null(strstr(log.lines.ptr, "20260601T000000Z err [e1] 2\n"));
	assert_non_null(strstr(log.lines.ptr, "20260601T000000Z err [e2] 2\n"));
	/* 3000 bytes with no break: pieces of at most 1023, all of them. */
	assert_non_null(strstr(log.lines.ptr, "out [xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx] 1023\n"));
	assert_non_null(strstr(log.lines.ptr, "out [xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx] 954\n"));
	assert_int_equal(log.count, 9);
	faucet__buf_dispose(&log.lines);
	teardown(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(units_run_with_placeholders_and_environment),
		cmocka_unit_test(failure_resume_and_restart),
		cmocka_unit_test(dry_run_writes_nothing),
		cmocka_unit_test(bad_input_runs_nothing),
		cmocka_unit_test(exit_codes_and_missing_commands),
		cmocka_unit_test(legacy_unit_keys_are_migrated),
		cmocka_unit_test(concurrency_really_overlaps),
		cmocka_unit_test(units_leased_elsewhere_are_left_to_their_holder),
		cmocka_unit_test(sigterm_leaves_running_units_pending),
		cmocka_unit_test(second_interrupt_kills),
		cmocka_unit_test(two_runners_share_the_work),
		cmocka_unit_test(two_processes_share_the_work_through_a_file_store),
		cmocka_unit_test(unreleased_leases_fail_the_run_and_are_named),
		cmocka_unit_test(lease_replies_lost_do_not_stop_the_run),
		cmocka_unit_test(a_store_without_atomic_compare_and_put_is_refused),
		cmocka_unit_test(units_inherit_the_key_variable_names),
		cmocka_unit_test(unit_output_arrives_line_by_line),
		cmocka_unit_test(a_command_no_longer_executable_fails_its_units),
		cmocka_unit_test(a_command_removed_after_preflight_fails_its_units),
		cmocka_unit_test(a_custom_host_gets_no_signal_handler_and_stops_the_run),
		cmocka_unit_test(a_custom_host_with_a_stop_descriptor_stops_the_run),
		cmocka_unit_test(a_host_and_the_legacy_switches_do_not_mix),
		cmocka_unit_test(the_child_runs_no_atfork_handler),
		cmocka_unit_test(sigchld_set_by_the_embedder),
		cmocka_unit_test(starting_units_flushes_no_stream_of_the_program),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
