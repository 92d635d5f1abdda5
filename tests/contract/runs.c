/*
 * runs.c - the invocation-run contract (doc/design.md §8) against every
 * backend: the lease, fencing, before/after images, undo, retention and
 * runs that die.
 *
 * Lease expiry is simulated by rewriting the stored lease with an
 * expires_at in the past (holder and run kept), which is exactly what the
 * store holds once a holder's TTL has run out - no test waits for a clock.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "contract.h"
#include "run/run_internal.h"
#include "store/export_internal.h"
#include "store/open_internal.h"
#include "backfill/backfill_internal.h"

typedef contract_fixture fixture;

static const contract_backend *current;

static int setup(void **state)
{
	return contract_fixture_setup(state, current, "runs");
}

static int teardown(void **state)
{
	return contract_fixture_teardown(state, current);
}

static faucet_store *S(void **state)
{
	return contract_fixture_store(state);
}

/* ---- helpers ----------------------------------------------------------------------- */

static faucet_run *begin(faucet_store *s, const char *row)
{
	faucet_run_options o = FAUCET_RUN_OPTIONS_INIT;
	faucet_run *r = NULL;

	o.row = row;
	o.command = "contract";
	if (faucet_run_begin(&r, s, "p", &o) != 0)
		fail_msg("begin p::%s: %s", row ? row : "default", faucet_error_last()->message);
	return r;
}

static void run_put(faucet_run *r, const char *key, const char *json)
{
	faucet_value *v = tu_v(json);

	if (faucet_run_put(r, key, v) != 0)
		fail_msg("run put %s: %s", key, faucet_error_last()->message);
	faucet_value_free(v);
}

static void end_ok(faucet_run *r)
{
	if (faucet_run_end(r, FAUCET_RUN_OK, 0, NULL) != 0)
		fail_msg("end: %s", faucet_error_last()->message);
	faucet_run_free(r);
}

static run_status status_of(faucet_store *s, const char *scope)
{
	char *key = faucet_run__key(scope, "__status__");
	faucet_value *v = NULL;
	run_status st;

	assert_int_equal(faucet_store_get(s, key, &v), 0);
	assert_int_equal(faucet_run__status_parse(v, key, &st), 0);
	faucet_value_free(v);
	free(key);
	return st;
}

static const char *outcome_of(faucet_store *s, const char *scope, const char *run, char *buf,
			      size_t size)
{
	run_status st = status_of(s, scope);
	run_entry *e = faucet_run__status_find(&st, run);

	snprintf(buf, size, "%s", e ? e->outcome : "(missing)");
	faucet_run__status_dispose(&st);
	return buf;
}

static void assert_outcome(faucet_store *s, const char *scope, const char *run, const char *want)
{
	char buf[32];

	assert_string_equal(outcome_of(s, scope, run, buf, sizeof(buf)), want);
}

/* Make the stored lease look as it does once its TTL has run out. */
static void expire_lease(faucet_store *s, const char *scope)
{
	char *key = faucet_run__key(scope, "__lease__");
	faucet_value *v = NULL, *old;
	faucet_lease l;

	assert_int_equal(faucet_store_get(s, key, &v), 0);
	assert_non_null(v);
	assert_int_equal(faucet_lease_parse(v, key, &l), 0);
	old = v;
	assert_int_equal(faucet__lease_doc(l.holder, 1, l.run, &v), 0);
	assert_int_equal(faucet_store_put(s, key, v), 0);
	faucet_value_free(old);
	faucet_value_free(v);
	faucet_lease_dispose(&l);
	free(key);
}

static faucet_undo_result undo(faucet_store *s, const char *run, int force)
{
	faucet_undo_options o = FAUCET_UNDO_OPTIONS_INIT;
	faucet_undo_result res = FAUCET_UNDO_RESULT_INIT;

	o.run = run;
	o.force = force;
	if (faucet_run_undo(s, "p", &o, &res) != 0)
		fail_msg("undo %s: %s", run ? run : "(newest)", faucet_error_last()->message);
	return res;
}

/* ---- begin / write / end ---------------------------------------------------------------- */

static void a_run_records_images_status_and_index(void **state)
{
	faucet_store *s = S(state);
	faucet_run *r;
	char id[FAUCET_RUN_ID_LEN + 1];
	faucet_value *v = NULL;
	run_marker m;
	run_status st;
	faucet_strarray idx = {0};
	char *mk;

	tu_put(s, "p::default", "{\"cursor\":1}");
	r = begin(s, NULL);
	snprintf(id, sizeof(id), "%s", faucet_run_id(r));
	assert_true(faucet_run__valid_id(id));
	assert_outcome(s, "p::default", id, "running");
	{
		faucet_value *l = NULL;
		assert_int_equal(faucet_store_get(s, "p::default::__lease__", &l), 0);
		assert_non_null(l);
		faucet_value_free(l);
	}
	run_put(r, "p::default", "{\"cursor\":2}");
	run_put(r, "p::default", "{\"cursor\":3}");
	run_put(r, "p::default::extra", "18446744073709551615");
	assert_int_equal(faucet_run_delete(r, "p::gone"), 0);
	/* The before-images are durable before the run ends. */
	mk = faucet_run__marker_key("p::default", id);
	assert_int_equal(faucet_store_get(s, mk, &v), 0);
	assert_int_equal(faucet_run__marker_parse(v, mk, id, &m), 0);
	/* (The delete of the absent p::gone changed nothing: not recorded.) */
	assert_int_equal(m.count, 2);
	assert_null(faucet_run__marker_find(&m, "p::gone"));
	/* ... and so are the after-images of a leased run, recorded as it
	 * wrote them (never read back at its end: another writer may have
	 * changed a key since). */
	assert_true(m.has_after);
	assert_string_equal(faucet_value_json(faucet_run__marker_find(&m, "p::default")->after),
			    "{\"cursor\":3}");
	assert_string_equal(faucet_value_json(faucet_run__marker_find(&m, "p::default")->before),
			    "{\"cursor\":1}");
	assert_null(faucet_run__marker_find(&m, "p::default::extra")->before);
	faucet_run__marker_dispose(&m);
	faucet_value_free(v);
	end_ok(r);

	assert_int_equal(faucet_store_get(s, mk, &v), 0);
	assert_int_equal(faucet_run__marker_parse(v, mk, id, &m), 0);
	assert_true(m.has_after);
	assert_string_equal(faucet_value_json(faucet_run__marker_find(&m, "p::default")->after),
			    "{\"cursor\":3}");
	assert_string_equal(faucet_value_json(faucet_run__marker_find(&m, "p::default::extra")->after),
			    "18446744073709551615");
	faucet_run__marker_dispose(&m);
	faucet_value_free(v);
	free(mk);

	st = status_of(s, "p::default");
	assert_int_equal(st.count, 1);
	assert_string_equal(st.items[0].outcome, "ok");
	assert_non_null(st.items[0].ended_at);
	assert_true(st.items[0].has_exit);
	/* The delete of an absent key changed nothing: not listed. */
	assert_int_equal(st.items[0].keys.count, 2);
	assert_non_null(strstr(st.items[0].by, "\"command\":\"contract\""));
	faucet_run__status_dispose(&st);

	assert_int_equal(faucet_store_get(s, "p::default::__rollback__", &v), 0);
	assert_int_equal(faucet_run__index_parse(v, "p::default::__rollback__", &idx), 0);
	assert_int_equal(idx.count, 1);
	assert_string_equal(idx.strings[0], id);
	faucet_strarray_dispose(&idx);
	faucet_value_free(v);
	tu_assert_value(s, "p::default::__lease__", NULL);
}

static void the_lease_document_is_spec_shaped(void **state)
{
	faucet_store *s = S(state);
	faucet_run *r = begin(s, "r1");
	faucet_value *v = NULL;
	faucet_lease l;

	assert_int_equal(faucet_store_get(s, "p::r1::__lease__", &v), 0);
	assert_non_null(v);
	assert_int_equal(faucet_lease_parse(v, "p::r1::__lease__", &l), 0);
	assert_string_equal(l.run, faucet_run_id(r));
	assert_true(l.expires_at > (int64_t)time(NULL) + 50);
	assert_int_equal(faucet_run_renew(r), 0);
	faucet_lease_dispose(&l);
	faucet_value_free(v);
	end_ok(r);
}

static void a_live_lease_is_busy_naming_holder_and_expiry(void **state)
{
	faucet_store *s = S(state);
	faucet_run_options o = FAUCET_RUN_OPTIONS_INIT;
	faucet_run *r = begin(s, NULL), *other = NULL;
	char want[64];

	assert_int_equal(faucet_run_begin(&other, s, "p", &o), FAUCET_EBUSY);
	assert_null(other);
	snprintf(want, sizeof(want), "held by run %s", faucet_run_id(r));
	tu_assert_error_contains(want);
	tu_assert_error_contains("until 20");
	/* Another invocation of the same pipeline is independent. */
	other = begin(s, "other");
	end_ok(other);
	end_ok(r);
	other = begin(s, NULL);
	end_ok(other);
}

/* 8 runs of one invocation begin together: exactly one holds it. */
static int begin_and_hold(faucet_store *s)
{
	faucet_run_options o = FAUCET_RUN_OPTIONS_INIT;
	faucet_run *r = NULL;
	int rc = faucet_run_begin(&r, s, "p", &o);

	faucet_run_free(r); /* left as a crash leaves it: the lease stays */
	if (rc == FAUCET_EBUSY)
		return 0;
	return rc == 0 ? 1 : -1;
}

typedef struct {
	faucet_store *s;
	pthread_barrier_t *go;
	int result;
} begin_job;

static void *begin_thread(void *arg)
{
	begin_job *j = arg;

	(void)pthread_barrier_wait(j->go);
	j->result = begin_and_hold(j->s);
	return NULL;
}

static void eight_racing_begins_one_winner(void **state)
{
	fixture *f = *state;
	int total = 0;

	if (!current->cross_process) {
		pthread_t tid[8];
		begin_job jobs[8];
		pthread_barrier_t go;

		assert_int_equal(pthread_barrier_init(&go, NULL, 8), 0);
		for (int i = 0; i < 8; i++) {
			jobs[i] = (begin_job){f->store, &go, -1};
			assert_int_equal(pthread_create(&tid[i], NULL, begin_thread, &jobs[i]), 0);
		}
		for (int i = 0; i < 8; i++) {
			assert_int_equal(pthread_join(tid[i], NULL), 0);
			assert_true(jobs[i].result >= 0);
			total += jobs[i].result;
		}
		pthread_barrier_destroy(&go);
	} else {
		int gate[2], done[2], told[2];
		pid_t pids[8];

		faucet_store_free(f->store);
		f->store = NULL;
		assert_int_equal(pipe(gate), 0);
		assert_int_equal(pipe(done), 0);
		assert_int_equal(pipe(told), 0);
		fflush(NULL);
		for (int i = 0; i < 8; i++) {
			pids[i] = fork();
			assert_true(pids[i] >= 0);
			if (pids[i] == 0) {
				faucet_store *s = NULL;
				int result = -1;
				char c;

				close(gate[1]);
				close(done[1]);
				close(told[0]);
				(void)read(gate[0], &c, 1);
				if (faucet_store_open_url(&s, f->url) == 0)
					result = begin_and_hold(s);
				if (result < 0)
					fprintf(stderr, "child %d: %s\n", i, faucet_error_last()->message);
				faucet_store_free(s);
				/* Stay alive until every child has tried: a dead
				 * holder's lease may be taken over at once. */
				c = 'x';
				(void)write(told[1], &c, 1);
				(void)read(done[0], &c, 1);
				_exit(result < 0 ? 255 : result);
			}
		}
		close(gate[0]);
		close(gate[1]);
		close(done[0]);
		close(told[1]);
		for (int i = 0; i < 8; i++) {
			char c;
			assert_int_equal(read(told[0], &c, 1), 1);
		}
		close(told[0]);
		close(done[1]);
		for (int i = 0; i < 8; i++) {
			int status = 0;
			assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
			assert_true(WIFEXITED(status));
			assert_int_not_equal(WEXITSTATUS(status), 255);
			total += WEXITSTATUS(status);
		}
		assert_int_equal(faucet_store_open_url(&f->store, f->url), 0);
	}
	assert_int_equal(total, 1);
	/* And the status shows exactly that one run. */
	{
		run_status st = status_of(f->store, "p::default");
		assert_int_equal(st.count, 1);
		assert_string_equal(st.items[0].outcome, "running");
		faucet_run__status_dispose(&st);
	}
}

/* ---- expiry, takeover, fencing ------------------------------------------------------------ */

static void an_expired_lease_is_taken_over_and_the_old_run_is_fenced(void **state)
{
	faucet_store *s = S(state);
	faucet_run *a, *b;
	faucet_value *v = tu_v("\"late\"");
	char a_id[FAUCET_RUN_ID_LEN + 1];

	tu_put(s, "p::default", "1");
	a = begin(s, NULL);
	snprintf(a_id, sizeof(a_id), "%s", faucet_run_id(a));
	run_put(a, "p::default", "2");
	expire_lease(s, "p::default");
	b = begin(s, NULL);
	assert_outcome(s, "p::default", a_id, "abandoned");
	/* The old run can no longer write, nor end as if it had held on. */
	assert_int_equal(faucet_run_put(a, "p::default", v), FAUCET_ELEASELOST);
	tu_assert_error_contains("lost its lease");
	assert_int_equal(faucet_run_put(a, "p::fresh", v), FAUCET_ELEASELOST);
	tu_assert_value(s, "p::default", "2");
	tu_assert_value(s, "p::fresh", NULL);
	assert_int_equal(faucet_run_end(a, FAUCET_RUN_OK, 0, NULL), FAUCET_ELEASELOST);
	assert_outcome(s, "p::default", a_id, "abandoned");
	faucet_run_free(a);
	run_put(b, "p::default", "3");
	end_ok(b);
	faucet_value_free(v);
}

/* A run whose own lease ran out (its holder stalled past the TTL) may
 * already be judged abandoned and undone: it must not renew the lease and
 * write on.  The lease it wrote lasts at least its TTL. */
static void an_own_lease_past_its_expiry_is_lost_not_renewed(void **state)
{
	faucet_store *s = S(state);
	faucet_run_options o = FAUCET_RUN_OPTIONS_INIT;
	faucet_run *r = NULL;
	faucet_value *v = tu_v("\"late\""), *lease = NULL, *after = NULL;
	faucet_lease l;
	int64_t t0 = (int64_t)time(NULL);
	struct timespec nap = {0, 50 * 1000 * 1000};

	o.command = "contract";
	o.lease_ttl_ms = 1000;
	assert_int_equal(faucet_run_begin(&r, s, "p", &o), 0);
	assert_int_equal(faucet_store_get(s, "p::default::__lease__", &lease), 0);
	assert_non_null(lease);
	assert_int_equal(faucet_lease_parse(lease, "p::default::__lease__", &l), 0);
	assert_true(l.expires_at >= t0 + 1 + 1); /* at least the TTL, whole seconds */
	/* Time is what is tested: wait, by the clock, until the lease is past. */
	while ((int64_t)time(NULL) < l.expires_at)
		(void)nanosleep(&nap, NULL);
	faucet_lease_dispose(&l);
	assert_int_equal(faucet_run_put(r, "p::default", v), FAUCET_ELEASELOST);
	tu_assert_error_contains("expired");
	tu_assert_value(s, "p::default", NULL);
	/* The stored lease is as it was: not renewed. */
	assert_int_equal(faucet_store_get(s, "p::default::__lease__", &after), 0);
	assert_non_null(after);
	assert_true(faucet_value_equal(lease, after));
	(void)faucet_run_end(r, FAUCET_RUN_FAILED, 1, "lease lost");
	faucet_run_free(r);
	faucet_value_free(lease);
	faucet_value_free(after);
	faucet_value_free(v);
}

static void a_broken_lease_fences_the_run(void **state)
{
	faucet_store *s = S(state);
	faucet_run *r = begin(s, NULL);
	faucet_value *v = tu_v("1");

	assert_int_equal(faucet_store_delete(s, "p::default::__lease__"), 0);
	assert_int_equal(faucet_run_put(r, "p::default", v), FAUCET_ELEASELOST);
	tu_assert_value(s, "p::default", NULL);
	faucet_value_free(v);
	faucet_run_free(r);
}

/* faucet_run_join_env: the one rule by which a writer inside `faucet run`
 * (the command's writes, the Python package's runs) joins its run. */
static void the_run_of_faucet_run_is_joined_by_the_environments_rule(void **state)
{
	faucet_store *s = S(state);
	faucet_run *r = begin(s, NULL), *child = (faucet_run *)1;

	assert_int_equal(unsetenv("FAUCET_RUN_ID"), 0);
	assert_int_equal(unsetenv("FAUCET_RUN_PIPELINE"), 0);
	assert_int_equal(unsetenv("FAUCET_RUN_ROW"), 0);
	assert_int_equal(faucet_run_join_env(&child, s, "p", NULL), FAUCET_ENOTFOUND);
	assert_null(child);
	assert_int_equal(setenv("FAUCET_RUN_ID", "", 1), 0);
	assert_int_equal(faucet_run_join_env(&child, s, NULL, NULL), FAUCET_ENOTFOUND);
	/* An id without its pipeline names no run: an error, not a guess. */
	assert_int_equal(setenv("FAUCET_RUN_ID", faucet_run_id(r), 1), 0);
	assert_int_equal(faucet_run_join_env(&child, s, "p", NULL), FAUCET_EINVALID);
	assert_null(child);
	assert_int_equal(setenv("FAUCET_RUN_PIPELINE", "p", 1), 0);
	/* Another pipeline's or row's writer begins its own run. */
	assert_int_equal(faucet_run_join_env(&child, s, "q", NULL), FAUCET_ENOTFOUND);
	assert_int_equal(faucet_run_join_env(&child, s, "p", "other"), FAUCET_ENOTFOUND);
	assert_null(child);
	/* An unset row is the default row, for every caller alike. */
	assert_int_equal(faucet_run_join_env(&child, s, "p", FAUCET_RUN_DEFAULT_ROW), 0);
	assert_string_equal(faucet_run_id(child), faucet_run_id(r));
	assert_string_equal(faucet_run_row(child), FAUCET_RUN_DEFAULT_ROW);
	faucet_run_free(child);
	assert_int_equal(faucet_run_join_env(&child, s, NULL, NULL), 0);
	assert_string_equal(faucet_run_scope(child), faucet_run_scope(r));
	faucet_run_free(child);
	/* A row the run does not hold: its lease is not this run's. */
	assert_int_equal(setenv("FAUCET_RUN_ROW", "other", 1), 0);
	assert_int_equal(faucet_run_join_env(&child, s, "p", NULL), FAUCET_ELEASELOST);
	assert_null(child);
	assert_int_equal(unsetenv("FAUCET_RUN_ID"), 0);
	assert_int_equal(unsetenv("FAUCET_RUN_PIPELINE"), 0);
	assert_int_equal(unsetenv("FAUCET_RUN_ROW"), 0);
	end_ok(r);
}

static void a_joined_run_records_into_the_runs_marker(void **state)
{
	faucet_store *s = S(state);
	faucet_run *r = begin(s, NULL), *child = NULL;
	faucet_value *v = tu_v("7");
	run_status st;

	tu_put(s, "p::default", "1");
	run_put(r, "p::default", "2");
	assert_int_equal(faucet_run_join(&child, s, "p", NULL, faucet_run_id(r)), 0);
	assert_int_equal(faucet_run_put(child, "p::default::side", v), 0);
	assert_int_equal(faucet_run_put(child, "p::default", v), 0);
	faucet_run_free(child);
	assert_int_equal(faucet_run_join(&child, s, "p", NULL, "20260101T000000.000Z-abcdef"),
			 FAUCET_ELEASELOST);
	/* The parent's next first write merges with what the child recorded. */
	run_put(r, "p::default::late", "1");
	end_ok(r);
	st = status_of(s, "p::default");
	assert_int_equal(st.items[0].keys.count, 3);
	faucet_run__status_dispose(&st);
	/* Undo restores what the child wrote too, and the parent's before-image wins. */
	faucet_undo_result res = undo(s, NULL, 0);
	assert_false(res.conflict);
	faucet_undo_result_dispose(&res);
	tu_assert_value(s, "p::default", "1");
	tu_assert_value(s, "p::default::side", NULL);
	tu_assert_value(s, "p::default::late", NULL);
	faucet_value_free(v);
}

/* ---- undo -------------------------------------------------------------------------------------- */

static void undo_restores_before_images_and_is_a_run(void **state)
{
	faucet_store *s = S(state);
	faucet_run *r;
	faucet_undo_result res = FAUCET_UNDO_RESULT_INIT, again = FAUCET_UNDO_RESULT_INIT;
	faucet_undo_options o = FAUCET_UNDO_OPTIONS_INIT;
	char id[FAUCET_RUN_ID_LEN + 1];
	run_status st;

	tu_put(s, "p::default", "{\"c\":1}");
	r = begin(s, NULL);
	snprintf(id, sizeof(id), "%s", faucet_run_id(r));
	run_put(r, "p::default", "{\"c\":2}");
	run_put(r, "p::default::new", "true");
	end_ok(r);

	res = undo(s, NULL, 0);
	assert_false(res.conflict);
	assert_string_equal(res.run, id);
	assert_non_null(res.undo_run);
	assert_int_equal(res.restored.count, 2);
	tu_assert_value(s, "p::default", "{\"c\":1}");
	tu_assert_value(s, "p::default::new", NULL);
	st = status_of(s, "p::default");
	assert_string_equal(st.items[0].run, res.undo_run);
	assert_string_equal(st.items[0].undoes, id);
	assert_string_equal(st.items[0].outcome, "ok");
	assert_string_equal(faucet_run__status_find(&st, id)->outcome, "undone");
	faucet_run__status_dispose(&st);

	/* The same run again: refused, nothing written. */
	o.run = id;
	assert_int_equal(faucet_run_undo(s, "p", &o, &again), FAUCET_EINVALID);
	tu_assert_error_contains("already undone");
	faucet_undo_result_dispose(&again);
	/* An unknown run id. */
	o.run = "20200101T000000.000Z-000000";
	assert_int_equal(faucet_run_undo(s, "p", &o, &again), FAUCET_ENOTFOUND);
	faucet_undo_result_dispose(&again);
	o.run = "not-a-run";
	assert_int_equal(faucet_run_undo(s, "p", &o, &again), FAUCET_EINVALID);
	faucet_undo_result_dispose(&again);

	/* The undo is undoable: undoing it redoes the run. */
	again = undo(s, res.undo_run, 0);
	assert_false(again.conflict);
	tu_assert_value(s, "p::default", "{\"c\":2}");
	tu_assert_value(s, "p::default::new", "true");
	faucet_undo_result_dispose(&again);
	faucet_undo_result_dispose(&res);
}

static void undo_refuses_a_key_changed_since_unless_forced(void **state)
{
	faucet_store *s = S(state);
	faucet_run *r;
	faucet_undo_result res = FAUCET_UNDO_RESULT_INIT;
	faucet_undo_options o = FAUCET_UNDO_OPTIONS_INIT;

	tu_put(s, "p::default", "1");
	tu_put(s, "p::default::b", "10");
	r = begin(s, NULL);
	run_put(r, "p::default::b", "20");
	run_put(r, "p::default", "2");
	end_ok(r);
	tu_put(s, "p::default", "3");

	o.dry_run = 1;
	assert_int_equal(faucet_run_undo(s, "p", &o, &res), 0);
	assert_true(res.conflict);
	faucet_undo_result_dispose(&res);

	res = undo(s, NULL, 0);
	assert_true(res.conflict);
	assert_string_equal(res.conflict_key, "p::default");
	assert_string_equal(faucet_value_json(res.conflict_current), "3");
	assert_true(res.conflict_wrote_known);
	assert_string_equal(faucet_value_json(res.conflict_wrote), "2");
	assert_null(res.undo_run);
	faucet_undo_result_dispose(&res);
	/* Nothing was written: not even the key without a conflict. */
	tu_assert_value(s, "p::default", "3");
	tu_assert_value(s, "p::default::b", "20");

	res = undo(s, NULL, 1);
	assert_false(res.conflict);
	faucet_undo_result_dispose(&res);
	tu_assert_value(s, "p::default", "1");
	tu_assert_value(s, "p::default::b", "10");
}

static const faucet_undo_conflict *find_conflict(const faucet_undo_result *res, const char *key)
{
	for (size_t i = 0; i < res->conflict_count; i++)
		if (strcmp(res->conflicts[i].key, key) == 0)
			return &res->conflicts[i];
	return NULL;
}

/* Every key is checked before the undo refuses: the operator sees all the
 * keys to settle at once, not one per retry. */
static void undo_reports_every_conflicting_key(void **state)
{
	faucet_store *s = S(state);
	faucet_run *r;
	faucet_undo_result res = FAUCET_UNDO_RESULT_INIT;
	faucet_undo_options o = FAUCET_UNDO_OPTIONS_INIT;
	const faucet_undo_conflict *c;
	char first[FAUCET_RUN_ID_LEN + 1], later[FAUCET_RUN_ID_LEN + 1];

	r = begin(s, NULL);
	run_put(r, "p::default::a", "1");
	run_put(r, "p::default::b", "2");
	run_put(r, "p::default::c", "3");
	(void)snprintf(first, sizeof(first), "%s", faucet_run_id(r));
	end_ok(r);
	tu_put(s, "p::default::a", "10"); /* a plain write */
	{
		/* Run ids sort by their start millisecond. */
		struct timespec ms2 = {0, 2000000};

		(void)nanosleep(&ms2, NULL);
	}
	r = begin(s, NULL); /* a later run */
	run_put(r, "p::default::c", "30");
	(void)snprintf(later, sizeof(later), "%s", faucet_run_id(r));
	end_ok(r);

	o.run = first; /* not the newest */
	assert_int_equal(faucet_run_undo(s, "p", &o, &res), 0);
	assert_int_equal(res.conflict, 1); /* a boolean, no bits */
	assert_int_equal(res.conflict_count, 2);
	assert_int_equal(res.conflict_total, 2);
	assert_false(res.conflicts_truncated);
	assert_null(find_conflict(&res, "p::default::b"));
	c = find_conflict(&res, "p::default::a");
	assert_non_null(c);
	assert_string_equal(faucet_value_json(c->current), "10");
	assert_true(c->wrote_known);
	assert_string_equal(faucet_value_json(c->wrote), "1");
	assert_null(c->run);
	c = find_conflict(&res, "p::default::c");
	assert_non_null(c);
	assert_string_equal(faucet_value_json(c->current), "30");
	assert_non_null(c->run);
	assert_string_equal(c->run, later);
	/* The single-key fields: the first of the list. */
	assert_string_equal(res.conflict_key, res.conflicts[0].key);
	assert_null(res.undo_run);
	faucet_undo_result_dispose(&res);
	assert_null(res.conflicts);
	assert_int_equal(res.conflict_count, 0);
	assert_int_equal(res.version, FAUCET_UNDO_RESULT_VERSION); /* kept for reuse */
	/* Nothing written, not even the key without a conflict. */
	tu_assert_value(s, "p::default::a", "10");
	tu_assert_value(s, "p::default::b", "2");
	tu_assert_value(s, "p::default::c", "30");

	/* Capped: the first listed, both counted. */
	o.max_conflicts = 1;
	assert_int_equal(faucet_run_undo(s, "p", &o, &res), 0);
	assert_int_equal(res.conflict_count, 1);
	assert_int_equal(res.conflict_total, 2);
	assert_true(res.conflicts_truncated);
	faucet_undo_result_dispose(&res);

	/* Version 2 options (no max_conflicts): the list still comes, at
	 * the default cap - the result's version says what it holds. */
	o.version = 2;
	assert_int_equal(faucet_run_undo(s, "p", &o, &res), 0);
	assert_int_equal(res.conflict, 1);
	assert_non_null(res.conflict_key);
	assert_int_equal(res.conflict_count, 2);
	assert_false(res.conflicts_truncated);
	faucet_undo_result_dispose(&res);
	tu_assert_value(s, "p::default::b", "2");

	/* A result without its version (not initialised) or of a newer
	 * library: refused, the struct untouched, nothing written. */
	o.version = FAUCET_UNDO_OPTIONS_VERSION;
	for (unsigned v = 0; v <= FAUCET_UNDO_RESULT_VERSION + 1; v += FAUCET_UNDO_RESULT_VERSION + 1) {
		faucet_undo_result bad;

		memset(&bad, 0, sizeof(bad));
		bad.version = v;
		assert_int_equal(faucet_run_undo(s, "p", &o, &bad), FAUCET_EINVALID);
		tu_assert_error_contains("faucet_undo_result version");
		assert_null(bad.run);
		faucet_undo_result_dispose(&bad); /* a no-op on an unknown version */
	}
	assert_int_equal(faucet_undo_result_init(&res, FAUCET_UNDO_RESULT_VERSION), 0);
	assert_int_equal(faucet_run_undo(s, "p", &o, &res), 0);
	assert_int_equal(res.conflict_total, 2);
	faucet_undo_result_dispose(&res);
	assert_int_equal(faucet_undo_result_init(&res, 0), FAUCET_EINVALID);
	assert_int_equal(faucet_undo_result_init(&res, FAUCET_UNDO_RESULT_VERSION + 1),
			 FAUCET_EINVALID);
	tu_assert_value(s, "p::default::a", "10");
}

/* A run that took no lease (every CLI write) knows what its own writes
 * left and records that as the after-image, rather than reading the keys
 * back at the end: a key another writer changed after the run wrote it is
 * then a conflict for undo, not silently restored over.  A compare-and-put
 * whose condition failed wrote nothing: its key is read back (and, left
 * unchanged, is not in the status's keys). */
static void a_key_changed_after_an_unleased_run_wrote_it_is_a_conflict(void **state)
{
	faucet_store *s = S(state);
	faucet_run_options o = FAUCET_RUN_OPTIONS_INIT;
	faucet_value *one = tu_v("1"), *nine = tu_v("9");
	faucet_undo_result res = FAUCET_UNDO_RESULT_INIT;
	faucet_run *r = NULL;
	run_status st;
	int written = 1;
	char *id;

	tu_put(s, "p::default", "1");
	tu_put(s, "p::default::c", "5");
	o.no_lease = 1;
	o.command = "contract";
	assert_int_equal(faucet_run_begin(&r, s, "p", &o), 0);
	id = strdup(faucet_run_id(r));
	run_put(r, "p::default", "2");
	assert_int_equal(faucet_run_compare_and_put(r, "p::default::c", one, nine, &written), 0);
	assert_false(written);
	tu_put(s, "p::default", "3"); /* another writer, before the run ends */
	end_ok(r);

	st = status_of(s, "p::default");
	assert_int_equal(st.items[0].keys.count, 1);
	assert_string_equal(st.items[0].keys.strings[0], "p::default");
	faucet_run__status_dispose(&st);
	res = undo(s, id, 0);
	assert_true(res.conflict);
	assert_string_equal(res.conflict_key, "p::default");
	assert_string_equal(faucet_value_json(res.conflict_current), "3");
	assert_true(res.conflict_wrote_known);
	assert_string_equal(faucet_value_json(res.conflict_wrote), "2");
	faucet_undo_result_dispose(&res);
	tu_assert_value(s, "p::default", "3");
	tu_assert_value(s, "p::default::c", "5");
	faucet_value_free(one);
	faucet_value_free(nine);
	free(id);
}

/* An import records its keys' before-images ahead of writing them.  A key
 * recorded but never written (the import stopped first) is not the run's
 * change: the end drops it from the marker, so undo leaves it alone -
 * neither a conflict nor restored over what someone else wrote since. */
static void a_key_recorded_ahead_but_never_written_is_left_alone_by_undo(void **state)
{
	faucet_store *s = S(state);
	faucet_run_options o = FAUCET_RUN_OPTIONS_INIT;
	const char *keys[] = {"p::default", "p::default::b"};
	faucet_undo_result res = FAUCET_UNDO_RESULT_INIT;
	faucet_run *r = NULL;
	run_status st;
	char *id;

	tu_put(s, "p::default", "1");
	tu_put(s, "p::default::b", "10");
	o.no_lease = 1;
	assert_int_equal(faucet_run_begin(&r, s, "p", &o), 0);
	id = strdup(faucet_run_id(r));
	assert_int_equal(faucet_run__record(r, keys, 2), 0);
	run_put(r, "p::default", "2");
	tu_put(s, "p::default::b", "11"); /* not the run's change */
	end_ok(r);

	st = status_of(s, "p::default");
	assert_int_equal(st.items[0].keys.count, 1);
	assert_string_equal(st.items[0].keys.strings[0], "p::default");
	faucet_run__status_dispose(&st);
	{
		char *mk = faucet_run__marker_key("p::default", id);
		faucet_value *mv = NULL;
		run_marker m;

		assert_int_equal(faucet_store_get(s, mk, &mv), 0);
		assert_int_equal(faucet_run__marker_parse(mv, mk, id, &m), 0);
		assert_int_equal(m.count, 1);
		assert_string_equal(m.items[0].key, "p::default");
		faucet_run__marker_dispose(&m);
		faucet_value_free(mv);
		free(mk);
	}
	res = undo(s, id, 0);
	assert_false(res.conflict);
	faucet_undo_result_dispose(&res);
	tu_assert_value(s, "p::default", "1");
	tu_assert_value(s, "p::default::b", "11");
	free(id);
}

/* A batch out of key order: the run's keys come back sorted, each once. */
static void a_batch_out_of_order_is_recorded_sorted(void **state)
{
	faucet_store *s = S(state);
	faucet_value *v = tu_v("7");
	faucet_entry e[] = {{"p::default::c", NULL}, {"p::default::a", NULL},
			    {"p::default::b", NULL}, {"p::default::a", NULL}};
	const faucet_strarray *keys;
	faucet_run *r = begin(s, NULL);

	for (size_t i = 0; i < 4; i++)
		e[i].value = v;
	assert_int_equal(faucet_run_put_batch(r, e, 4), 0);
	run_put(r, "p::default", "1");
	keys = faucet_run_keys(r);
	assert_int_equal(keys->count, 4);
	assert_string_equal(keys->strings[0], "p::default");
	assert_string_equal(keys->strings[1], "p::default::a");
	assert_string_equal(keys->strings[2], "p::default::b");
	assert_string_equal(keys->strings[3], "p::default::c");
	end_ok(r);
	faucet_value_free(v);
}

/* n entries p::default::kNNNNN = v (borrowed), their keys in *names.  The
 * caller frees both. */
static faucet_entry *numbered_entries(size_t n, faucet_value *v, char (**names)[32])
{
	faucet_entry *e = calloc(n, sizeof(*e));
	char (*k)[32] = calloc(n, sizeof(*k));

	assert_non_null(e);
	assert_non_null(k);
	for (size_t i = 0; i < n; i++) {
		snprintf(k[i], sizeof(k[i]), "p::default::k%05zu", i);
		e[i] = (faucet_entry){k[i], v};
	}
	*names = k;
	return e;
}

/* A big run's status entry lists its first RUN_STATUS_KEYS keys and the
 * count; the marker still has them all, so undo restores every one. */
static void a_big_runs_status_lists_some_keys_and_the_count(void **state)
{
	enum { N = RUN_STATUS_KEYS + 500 };
	faucet_store *s = S(state);
	faucet_value *v = tu_v("1");
	char (*names)[32];
	faucet_entry *e = numbered_entries(N, v, &names);
	faucet_undo_result res = FAUCET_UNDO_RESULT_INIT;
	char id[FAUCET_RUN_ID_LEN + 1];
	run_status st;
	run_entry *entry;
	faucet_run *r;

	r = begin(s, NULL);
	snprintf(id, sizeof(id), "%s", faucet_run_id(r));
	assert_int_equal(faucet_run_put_batch(r, e, N), 0);
	end_ok(r);
	st = status_of(s, "p::default");
	entry = faucet_run__status_find(&st, id);
	assert_non_null(entry);
	assert_int_equal(entry->keys.count, RUN_STATUS_KEYS);
	assert_int_equal(entry->keys_total, N);
	assert_string_equal(entry->keys.strings[0], "p::default::k00000");
	faucet_run__status_dispose(&st);

	res = undo(s, id, 0);
	assert_false(res.conflict);
	assert_int_equal(res.restored.count, N);
	tu_assert_value(s, "p::default::k00000", NULL);
	tu_assert_value(s, "p::default::k01499", NULL);
	faucet_undo_result_dispose(&res);
	faucet_value_free(v);
	free(names);
	free(e);
}

/* The guarded put a run's first write goes through: the key is written
 * only when the guard held, and then both are. */
static void a_guarded_put_writes_the_key_only_when_the_guard_holds(void **state)
{
	faucet_store *s = S(state);
	faucet_value *g1 = tu_v("{\"g\":1}"), *g2 = tu_v("{\"g\":2}"), *v = tu_v("7");
	int written = 1;

	assert_int_equal(faucet__store_put_guarded(s, "p::guard", NULL, g1, "p::k", v, &written),
			 0);
	assert_true(written);
	tu_assert_value(s, "p::guard", "{\"g\":1}");
	tu_assert_value(s, "p::k", "7");
	/* A guard that does not hold: nothing written. */
	assert_int_equal(faucet__store_put_guarded(s, "p::guard", g2, g2, "p::k2", v, &written), 0);
	assert_false(written);
	tu_assert_value(s, "p::guard", "{\"g\":1}");
	tu_assert_value(s, "p::k2", NULL);
	/* Holds again, over an existing key. */
	assert_int_equal(faucet__store_put_guarded(s, "p::guard", g1, g2, "p::k", g1, &written), 0);
	assert_true(written);
	tu_assert_value(s, "p::guard", "{\"g\":2}");
	tu_assert_value(s, "p::k", "{\"g\":1}");
	/* Both are listed (Redis with index=true lists its index). */
	{
		faucet_strarray keys = {NULL, 0};

		assert_int_equal(faucet_store_list(s, "p::", &keys), 0);
		tu_assert_strings(&keys, "p::guard", "p::k", NULL);
		faucet_strarray_dispose(&keys);
	}
	/* A guard of megabytes (a big run's marker; Redis writes it with
	 * writev, the key's SET queued behind it). */
	{
		char *text = tu_big_string_json(2u << 20, 'm');
		faucet_value *big = tu_v(text);

		assert_int_equal(
			faucet__store_put_guarded(s, "p::guard", g2, big, "p::k3", v, &written), 0);
		assert_true(written);
		tu_assert_value(s, "p::guard", text);
		tu_assert_value(s, "p::k3", "7");
		assert_int_equal(
			faucet__store_put_guarded(s, "p::guard", big, g2, "p::k3", g1, &written), 0);
		assert_true(written);
		tu_assert_value(s, "p::k3", "{\"g\":1}");
		faucet_value_free(big);
		free(text);
	}
	/* Bad input: refused before anything is written. */
	assert_int_equal(faucet__store_put_guarded(s, "p::guard", g2, g1, "bad key", v, &written),
			 FAUCET_EINVALID);
	assert_false(written);
	assert_int_equal(faucet__store_put_guarded(s, "p::guard", g2, g1, "p::guard", v, &written),
			 FAUCET_EINVALID);
	tu_assert_value(s, "p::guard", "{\"g\":2}");
	faucet_value_free(g1);
	faucet_value_free(g2);
	faucet_value_free(v);
}

static void a_crashed_undo_run_again_finishes_the_job(void **state)
{
	faucet_store *s = S(state);
	faucet_run *r;
	faucet_undo_result res = FAUCET_UNDO_RESULT_INIT;

	tu_put(s, "p::default::a", "1");
	tu_put(s, "p::default::b", "1");
	r = begin(s, NULL);
	run_put(r, "p::default::a", "2");
	run_put(r, "p::default::b", "2");
	end_ok(r);
	/* An undo that died after restoring a, before b. */
	tu_put(s, "p::default::a", "1");
	res = undo(s, NULL, 0);
	assert_false(res.conflict);
	assert_int_equal(res.restored.count, 1);
	assert_string_equal(res.restored.strings[0], "p::default::b");
	faucet_undo_result_dispose(&res);
	tu_assert_value(s, "p::default::a", "1");
	tu_assert_value(s, "p::default::b", "1");
}

/* An undo run that died half-way: `undo` without a run id does not undo the
 * dead undo but finishes it, and the dead one is then marked abandoned. */
static void a_dead_undo_run_is_finished_not_undone(void **state)
{
	faucet_store *s = S(state);
	faucet_run_options o = FAUCET_RUN_OPTIONS_INIT;
	faucet_run *r, *dead = NULL;
	faucet_undo_result res = FAUCET_UNDO_RESULT_INIT;
	char id[FAUCET_RUN_ID_LEN + 1], dead_id[FAUCET_RUN_ID_LEN + 1];

	tu_put(s, "p::default::a", "1");
	tu_put(s, "p::default::b", "1");
	r = begin(s, NULL);
	snprintf(id, sizeof(id), "%s", faucet_run_id(r));
	run_put(r, "p::default::a", "2");
	run_put(r, "p::default::b", "2");
	end_ok(r);
	/* The undo's process restores a, then dies. */
	o.no_lease = 1;
	assert_int_equal(faucet_run_begin(&dead, s, "p", &o), 0);
	assert_int_equal(faucet_run__set_undoes(dead, id), 0); /* as undo does */
	snprintf(dead_id, sizeof(dead_id), "%s", faucet_run_id(dead));
	run_put(dead, "p::default::a", "1");
	faucet_run_free(dead);

	res = undo(s, NULL, 0);
	assert_false(res.conflict);
	assert_string_equal(res.run, id);
	faucet_undo_result_dispose(&res);
	tu_assert_value(s, "p::default::a", "1");
	tu_assert_value(s, "p::default::b", "1");
	assert_outcome(s, "p::default", id, "undone");
	assert_outcome(s, "p::default", dead_id, "abandoned");
}

/* A run whose process is killed mid-run: found abandoned by the next begin
 * once its lease expired; its marker still undoes what it wrote, and a key
 * a later run changed is a conflict. */
static void a_killed_run_is_abandoned_and_its_marker_undoes_it(void **state)
{
	fixture *f = *state;
	faucet_store *s;
	faucet_run *b;
	faucet_undo_result res = FAUCET_UNDO_RESULT_INIT;
	run_status st;
	char dead[FAUCET_RUN_ID_LEN + 1];
	int status = 0;
	pid_t pid;

	tu_put(f->store, "p::default", "1");
	tu_put(f->store, "p::default::x", "1");
	if (current->cross_process) {
		faucet_store_free(f->store);
		f->store = NULL;
		fflush(NULL);
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			faucet_store *cs = NULL;
			faucet_run *r = NULL;
			faucet_run_options o = FAUCET_RUN_OPTIONS_INIT;
			faucet_value *v = NULL;

			if (faucet_store_open_url(&cs, f->url) != 0 ||
			    faucet_run_begin(&r, cs, "p", &o) != 0 ||
			    faucet_value_parse(&v, "2", 1) != 0 ||
			    faucet_run_put(r, "p::default", v) != 0 ||
			    faucet_run_put(r, "p::default::x", v) != 0)
				_exit(1);
			raise(SIGKILL);
			_exit(2);
		}
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFSIGNALED(status));
		assert_int_equal(faucet_store_open_url(&f->store, f->url), 0);
	} else {
		faucet_run *r = begin(f->store, NULL);
		run_put(r, "p::default", "2");
		run_put(r, "p::default::x", "2");
		faucet_run_free(r); /* the process "died": no end */
	}
	s = f->store;
	st = status_of(s, "p::default");
	assert_int_equal(st.count, 1);
	assert_string_equal(st.items[0].outcome, "running");
	snprintf(dead, sizeof(dead), "%s", st.items[0].run);
	faucet_run__status_dispose(&st);
	tu_assert_value(s, "p::default", "2");

	/* A holder that is alive keeps the invocation until its lease
	 * expires; a dead process of this host holds nothing. */
	if (!current->cross_process) {
		faucet_run_options o = FAUCET_RUN_OPTIONS_INIT;
		faucet_run *blocked = NULL;
		assert_int_equal(faucet_run_begin(&blocked, s, "p", &o), FAUCET_EBUSY);
		expire_lease(s, "p::default");
	}
	b = begin(s, NULL);
	st = status_of(s, "p::default");
	assert_string_equal(faucet_run__status_find(&st, dead)->outcome, "abandoned");
	assert_int_equal(faucet_run__status_find(&st, dead)->keys.count, 2);
	faucet_run__status_dispose(&st);
	run_put(b, "p::default::x", "3");
	end_ok(b);

	/* x was changed by the later run: a conflict naming it. */
	res = undo(s, dead, 0);
	assert_true(res.conflict);
	assert_string_equal(res.conflict_key, "p::default::x");
	/* It wrote it before it died: the after-image went in ahead. */
	assert_true(res.conflict_wrote_known);
	assert_string_equal(faucet_value_json(res.conflict_wrote), "2");
	faucet_undo_result_dispose(&res);
	tu_assert_value(s, "p::default", "2");
	res = undo(s, dead, 1);
	assert_false(res.conflict);
	faucet_undo_result_dispose(&res);
	tu_assert_value(s, "p::default", "1");
	tu_assert_value(s, "p::default::x", "1");
}

/* A CLI write (a run without a lease) killed after its put landed: its
 * marker already holds the put's after-image, logged in the marker write
 * that recorded the before-image.  So a plain put of the key after it is
 * seen by undo as a change since - a conflict - and not restored over: with
 * no after-image, undo of the abandoned run would take "anything" for the
 * run's own value and lose the later write. */
static void a_killed_cli_write_keeps_its_after_image_so_undo_spares_a_later_put(void **state)
{
	fixture *f = *state;
	faucet_store *s;
	faucet_undo_result res = FAUCET_UNDO_RESULT_INIT;
	run_status st;
	char dead[FAUCET_RUN_ID_LEN + 1];
	int status = 0;
	pid_t pid;

	if (!current->cross_process)
		skip();
	tu_put(f->store, "p::default", "1");
	faucet_store_free(f->store);
	f->store = NULL;
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		faucet_store *cs = NULL;
		faucet_run *r = NULL;
		faucet_run_options o = FAUCET_RUN_OPTIONS_INIT;
		faucet_value *v = NULL;

		o.no_lease = 1;
		o.command = "contract";
		if (faucet_store_open_url(&cs, f->url) != 0 ||
		    faucet_run_begin(&r, cs, "p", &o) != 0 ||
		    faucet_value_parse(&v, "2", 1) != 0 || faucet_run_put(r, "p::default", v) != 0)
			_exit(1);
		raise(SIGKILL);
		_exit(2);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(faucet_store_open_url(&f->store, f->url), 0);
	s = f->store;
	tu_assert_value(s, "p::default", "2");
	st = status_of(s, "p::default");
	assert_int_equal(st.count, 1);
	snprintf(dead, sizeof(dead), "%s", st.items[0].run);
	faucet_run__status_dispose(&st);
	tu_put(s, "p::default", "3"); /* a plain write, no run */

	res = undo(s, dead, 0);
	assert_true(res.conflict);
	assert_string_equal(res.conflict_key, "p::default");
	assert_true(res.conflict_wrote_known);
	assert_string_equal(faucet_value_json(res.conflict_wrote), "2");
	faucet_undo_result_dispose(&res);
	tu_assert_value(s, "p::default", "3");
}

/* ---- retention, bad documents, pipeline level ------------------------------------------------ */

static void status_keeps_50_runs_and_rollback_20_markers(void **state)
{
	faucet_store *s = S(state);
	char first[FAUCET_RUN_ID_LEN + 1] = "", *mk;
	faucet_value *v = NULL;
	faucet_strarray idx = {0};
	run_status st;

	for (int i = 0; i < 52; i++) {
		faucet_run *r = begin(s, NULL);
		char n[16];

		if (i == 0)
			snprintf(first, sizeof(first), "%s", faucet_run_id(r));
		snprintf(n, sizeof(n), "%d", i);
		run_put(r, "p::default", n);
		end_ok(r);
	}
	st = status_of(s, "p::default");
	assert_int_equal(st.count, FAUCET_RUN_STATUS_MAX);
	assert_null(faucet_run__status_find(&st, first));
	for (size_t i = 1; i < st.count; i++)
		assert_true(strcmp(st.items[i - 1].run, st.items[i].run) > 0);
	faucet_run__status_dispose(&st);
	assert_int_equal(faucet_store_get(s, "p::default::__rollback__", &v), 0);
	assert_int_equal(faucet_run__index_parse(v, "p::default::__rollback__", &idx), 0);
	assert_int_equal(idx.count, FAUCET_RUN_ROLLBACK_MAX);
	faucet_strarray_dispose(&idx);
	faucet_value_free(v);
	mk = faucet_run__marker_key("p::default", first);
	tu_assert_value(s, mk, NULL);
	free(mk);
	{
		faucet_strarray keys = {0};
		size_t markers = 0;
		assert_int_equal(faucet_store_list(s, "p::default::__rollback__::", &keys), 0);
		markers = keys.count;
		faucet_strarray_dispose(&keys);
		assert_int_equal(markers, FAUCET_RUN_ROLLBACK_MAX);
	}
}

static void foreign_json_in_bookkeeping_keys_is_refused_and_nothing_written(void **state)
{
	faucet_store *s = S(state);
	faucet_run_options o = FAUCET_RUN_OPTIONS_INIT;
	faucet_undo_options uo = FAUCET_UNDO_OPTIONS_INIT;
	faucet_undo_result res = FAUCET_UNDO_RESULT_INIT;
	faucet_run *r = NULL;

	tu_put(s, "p::default::__status__", "{\"mine\":true}");
	assert_int_equal(faucet_run_begin(&r, s, "p", &o), FAUCET_ERROR);
	tu_assert_error_contains("p::default::__status__");
	tu_assert_error_contains("foreign");
	tu_assert_value(s, "p::default::__status__", "{\"mine\":true}");
	tu_assert_value(s, "p::default::__lease__", NULL);
	assert_int_equal(faucet_run_undo(s, "p", &uo, &res), FAUCET_ERROR);
	faucet_undo_result_dispose(&res);

	tu_put(s, "p::r2::__lease__", "[1,2]");
	o.row = "r2";
	assert_int_equal(faucet_run_begin(&r, s, "p", &o), FAUCET_ERROR);
	tu_assert_error_contains("p::r2::__lease__");
	tu_assert_value(s, "p::r2::__lease__", "[1,2]");
	tu_assert_value(s, "p::r2::__status__", NULL);

	tu_put(s, "p::r4::__rollback__", "{\"version\":1,\"runs\":\"nope\"}");
	o.row = "r4";
	assert_int_equal(faucet_run_begin(&r, s, "p", &o), FAUCET_ERROR);
	tu_assert_error_contains("p::r4::__rollback__");
	tu_assert_value(s, "p::r4::__lease__", NULL);
	tu_assert_value(s, "p::r4::__status__", NULL);

		/* A run cannot write bookkeeping keys. */
	r = begin(s, "r3");
	{
		faucet_value *v = tu_v("{}");
		assert_int_equal(faucet_run_put(r, "p::r3::__status__", v), FAUCET_EINVALID);
		faucet_value_free(v);
	}
	end_ok(r);
}

static void a_pipeline_level_run_takes_no_lease(void **state)
{
	faucet_store *s = S(state);
	faucet_run_options o = FAUCET_RUN_OPTIONS_INIT;
	faucet_run *r = NULL;
	faucet_undo_result res = FAUCET_UNDO_RESULT_INIT;
	faucet_undo_options uo = FAUCET_UNDO_OPTIONS_INIT;

	o.pipeline_level = 1;
	assert_int_equal(faucet_run_begin(&r, s, "p", &o), 0);
	assert_null(faucet_run_row(r));
	assert_string_equal(faucet_run_scope(r), "p");
	run_put(r, "p::a", "1");
	run_put(r, "p::b", "1");
	end_ok(r);
	tu_assert_value(s, "p::__lease__", NULL);
	{
		run_status st = status_of(s, "p");
		assert_int_equal(st.count, 1);
		assert_int_equal(st.items[0].keys.count, 2);
		faucet_run__status_dispose(&st);
	}
	uo.pipeline_level = 1;
	assert_int_equal(faucet_run_undo(s, "p", &uo, &res), 0);
	assert_false(res.conflict);
	assert_string_equal(res.scope, "p");
	faucet_undo_result_dispose(&res);
	tu_assert_value(s, "p::a", NULL);
	tu_assert_value(s, "p::b", NULL);
}

static void bookkeeping_keys_are_recognised(void **state)
{
	(void)state;
	assert_true(faucet_run_is_bookkeeping_key("p::r::__lease__"));
	assert_true(faucet_run_is_bookkeeping_key("p::r::__status__"));
	assert_true(faucet_run_is_bookkeeping_key("p::__status__"));
	assert_true(faucet_run_is_bookkeeping_key("p::r::__rollback__"));
	assert_true(faucet_run_is_bookkeeping_key("p::r::__rollback__::20260101T000000.000Z-abcdef"));
	assert_true(faucet_run_is_bookkeeping_key("p::backfill::h::u::__lease__"));
	assert_false(faucet_run_is_bookkeeping_key("p::r"));
	assert_false(faucet_run_is_bookkeeping_key("__status__"));
	assert_false(faucet_run_is_bookkeeping_key("p::__status__x"));
	assert_false(faucet_run_is_bookkeeping_key("p::__lease__::x"));
	assert_false(faucet_run_is_bookkeeping_key("p::__backfill__::abc"));
	/* Runs of colons split from the left: "::" "::" leaves an empty
	 * segment, "::" ":" a segment that starts with ':'. */
	assert_true(faucet_run_is_bookkeeping_key("p::::__status__"));
	assert_false(faucet_run_is_bookkeeping_key("p:::__status__"));
	assert_false(faucet_run_is_bookkeeping_key("p:x::r:::__rollback__"));
	assert_false(faucet_run_is_bookkeeping_key("p:__status__"));
	assert_false(faucet_run_is_bookkeeping_key("p::_:__status__"));
}


/* ---- undo never loses a write (doc/design.md §8.5) ------------------------------------------- */

/* A run that takes no lease: a CLI write. */
static faucet_run *begin_write(faucet_store *s, const char *row, int exclusive)
{
	faucet_run_options o = FAUCET_RUN_OPTIONS_INIT;
	faucet_run *r = NULL;

	o.row = row;
	o.pipeline_level = row == NULL;
	o.no_lease = 1;
	o.exclusive = exclusive;
	o.command = "contract write";
	if (faucet_run_begin(&r, s, "p", &o) != 0)
		fail_msg("begin write: %s", faucet_error_last()->message);
	return r;
}

static faucet_run *join(faucet_store *s, const faucet_run *r)
{
	faucet_run *j = NULL;

	if (faucet_run_join(&j, s, "p", faucet_run_row(r), faucet_run_id(r)) != 0)
		fail_msg("join: %s", faucet_error_last()->message);
	return j;
}

/* Fails before after-images were recorded as the run wrote: the end read
 * the key back - the operator's {"v":3} - and undo "restored" v1 over it. */
static void undo_of_a_run_never_clobbers_a_later_write(void **state)
{
	faucet_store *s = S(state);
	faucet_undo_result res = FAUCET_UNDO_RESULT_INIT;
	faucet_run *r, *child, *op;
	char id[FAUCET_RUN_ID_LEN + 1];

	tu_put(s, "p::default", "{\"v\":1}");
	r = begin(s, NULL);
	snprintf(id, sizeof(id), "%s", faucet_run_id(r));
	child = join(s, r); /* `faucet state put` run by the command */
	run_put(child, "p::default", "{\"v\":2}");
	faucet_run_free(child);
	op = begin_write(s, "default", 0); /* an operator's put meanwhile */
	run_put(op, "p::default", "{\"v\":3}");
	end_ok(op);
	end_ok(r);

	res = undo(s, id, 0);
	assert_true(res.conflict);
	assert_string_equal(res.conflict_key, "p::default");
	assert_true(res.conflict_wrote_known);
	assert_string_equal(faucet_value_json(res.conflict_wrote), "{\"v\":2}");
	faucet_undo_result_dispose(&res);
	tu_assert_value(s, "p::default", "{\"v\":3}");
	assert_outcome(s, "p::default", id, "ok");
}

/* Fails before undo looked at later runs of every scope: the killed run
 * has no end, and a later pipeline-level import of the same key was
 * clobbered. */
static void undo_of_a_killed_run_respects_a_later_import(void **state)
{
	faucet_store *s = S(state);
	faucet_undo_result res = FAUCET_UNDO_RESULT_INIT;
	faucet_run *r, *child, *imp;
	faucet_entry e[2];
	char id[FAUCET_RUN_ID_LEN + 1];

	tu_put(s, "p::default", "1");
	r = begin(s, NULL);
	snprintf(id, sizeof(id), "%s", faucet_run_id(r));
	child = join(s, r);
	run_put(child, "p::default", "2");
	faucet_run_free(child);
	faucet_run_free(r); /* killed: no end */
	expire_lease(s, "p::default");
	imp = begin_write(s, NULL, 1);
	e[0].key = "p::default";
	e[0].value = tu_v("2");
	e[1].key = "p::other";
	e[1].value = tu_v("9");
	assert_int_equal(faucet_run_put_batch(imp, e, 2), 0); /* p::default unchanged */
	faucet_value_free((faucet_value *)e[0].value);
	faucet_value_free((faucet_value *)e[1].value);
	e[0].value = tu_v("7");
	assert_int_equal(faucet_run_put_batch(imp, e, 1), 0);
	faucet_value_free((faucet_value *)e[0].value);
	end_ok(imp);
	/* The import wrote 7 and then nobody; put the killed run's value back
	 * by hand, so that only the later-run rule can see the conflict. */
	tu_put(s, "p::default", "2");

	res = undo(s, id, 0);
	assert_true(res.conflict);
	assert_string_equal(res.conflict_key, "p::default");
	assert_non_null(res.conflict_run);
	faucet_undo_result_dispose(&res);
	tu_assert_value(s, "p::default", "2");
}

/* The later-run rule looks at every scope of the pipeline: a run of the
 * invocation p::a changed the key after a pipeline-level run did, and the
 * key was put back to the earlier run's value by a writer outside any run
 * (so only the later run tells). */
static void undo_sees_a_later_run_of_any_scope(void **state)
{
	faucet_store *s = S(state);
	faucet_undo_result res = FAUCET_UNDO_RESULT_INIT;
	faucet_run *w, *v;
	char id[FAUCET_RUN_ID_LEN + 1], later[FAUCET_RUN_ID_LEN + 1];

	tu_put(s, "p::a", "1");
	w = begin_write(s, NULL, 0);
	snprintf(id, sizeof(id), "%s", faucet_run_id(w));
	run_put(w, "p::a", "2");
	end_ok(w);
	v = begin_write(s, "a", 0);
	snprintf(later, sizeof(later), "%s", faucet_run_id(v));
	run_put(v, "p::a", "3");
	end_ok(v);
	tu_put(s, "p::a", "2");

	res = undo(s, id, 0);
	assert_true(res.conflict);
	assert_string_equal(res.conflict_key, "p::a");
	assert_non_null(res.conflict_run);
	assert_string_equal(res.conflict_run, later);
	faucet_undo_result_dispose(&res);
	tu_assert_value(s, "p::a", "2");
}

/* Fails before undo held the pipeline lease: an undo ran beside an import
 * (and a `faucet run`) of the same pipeline and left the store mixed. */
static void undo_bulk_writes_and_runs_exclude_each_other(void **state)
{
	faucet_store *s = S(state);
	faucet_undo_options o = FAUCET_UNDO_OPTIONS_INIT;
	faucet_run_options ro = FAUCET_RUN_OPTIONS_INIT;
	faucet_undo_result res = FAUCET_UNDO_RESULT_INIT;
	faucet_run *w, *imp, *r, *blocked = NULL;

	tu_put(s, "p::default", "1");
	w = begin_write(s, "default", 0);
	run_put(w, "p::default", "2");
	end_ok(w);

	/* An import in flight: undo and a leased run wait or are busy. */
	imp = begin_write(s, NULL, 1);
	assert_int_equal(faucet_run_undo(s, "p", &o, &res), FAUCET_EBUSY);
	assert_non_null(strstr(faucet_error_last()->message, faucet_run_id(imp)));
	faucet_undo_result_dispose(&res);
	assert_int_equal(faucet_run_begin(&blocked, s, "p", &ro), FAUCET_EBUSY);
	assert_null(blocked);
	{
		faucet_run_options eo = FAUCET_RUN_OPTIONS_INIT;
		eo.pipeline_level = 1;
		eo.exclusive = 1;
		assert_int_equal(faucet_run_begin(&blocked, s, "p", &eo), FAUCET_EBUSY);
	}
	end_ok(imp);

	/* A leased run in flight: undo and bulk writes are busy. */
	r = begin(s, "r");
	assert_int_equal(faucet_run_undo(s, "p", &o, &res), FAUCET_EBUSY);
	faucet_undo_result_dispose(&res);
	{
		faucet_run_options eo = FAUCET_RUN_OPTIONS_INIT;
		eo.pipeline_level = 1;
		eo.exclusive = 1;
		assert_int_equal(faucet_run_begin(&blocked, s, "p", &eo), FAUCET_EBUSY);
	}
	end_ok(r);

	/* Nothing in flight: the undo goes ahead, and releases the lease. */
	res = undo(s, NULL, 0);
	assert_false(res.conflict);
	faucet_undo_result_dispose(&res);
	tu_assert_value(s, "p::default", "1");
	tu_assert_value(s, "p::__lease__", NULL);
	r = begin(s, "r");
	end_ok(r);
}

/* Fails before undo runs were skipped and failed undos resumed: the retry
 * picked the failed undo as the newest run and re-applied what it undid. */
static void a_retried_undo_finishes_and_never_reverses_itself(void **state)
{
	faucet_store *s = S(state);
	faucet_run_options ro = FAUCET_RUN_OPTIONS_INIT;
	faucet_undo_options o = FAUCET_UNDO_OPTIONS_INIT;
	faucet_undo_result res = FAUCET_UNDO_RESULT_INIT;
	faucet_run *w, *d = NULL;
	char id[FAUCET_RUN_ID_LEN + 1], did[FAUCET_RUN_ID_LEN + 1];

	tu_put(s, "p::default", "1");
	tu_put(s, "p::default::b", "10");
	w = begin_write(s, "default", 0);
	snprintf(id, sizeof(id), "%s", faucet_run_id(w));
	run_put(w, "p::default", "2");
	run_put(w, "p::default::b", "20");
	end_ok(w);
	/* An undo that restored one key and then failed (an I/O error). */
	ro.no_lease = 1;
	assert_int_equal(faucet_run_begin(&d, s, "p", &ro), 0);
	assert_int_equal(faucet_run__set_undoes(d, id), 0); /* as undo does */
	snprintf(did, sizeof(did), "%s", faucet_run_id(d));
	run_put(d, "p::default", "1");
	assert_int_equal(faucet_run_end(d, FAUCET_RUN_FAILED, -1, "injected"), 0);
	faucet_run_free(d);

	/* The retry undoes the run again (not the failed undo), finishing. */
	res = undo(s, NULL, 0);
	assert_false(res.conflict);
	assert_string_equal(res.run, id);
	faucet_undo_result_dispose(&res);
	tu_assert_value(s, "p::default", "1");
	tu_assert_value(s, "p::default::b", "10");
	assert_outcome(s, "p::default", id, "undone");
	/* Naming the failed undo resumes it too (here: already finished). */
	o.run = did;
	assert_int_equal(faucet_run_undo(s, "p", &o, &res), FAUCET_EINVALID);
	faucet_undo_result_dispose(&res);
	tu_assert_value(s, "p::default", "1");
	/* And nothing is left to undo by itself. */
	o.run = NULL;
	assert_int_equal(faucet_run_undo(s, "p", &o, &res), FAUCET_ENOTFOUND);
	faucet_undo_result_dispose(&res);
}

/* Fails before writes that change nothing were skipped: a delete of an
 * absent key recorded a run (three bookkeeping keys and an undo hint). */
static void a_write_that_changes_nothing_records_no_run(void **state)
{
	faucet_store *s = S(state);
	faucet_strarray keys = {0};
	faucet_run *w;

	tu_put(s, "p::default", "{\"a\":1}");
	w = begin_write(s, "default", 0);
	assert_int_equal(faucet_run_delete(w, "p::default::gone"), 0);
	run_put(w, "p::default", "{\"a\":1}"); /* the identical text */
	assert_int_equal(faucet_run_end(w, FAUCET_RUN_OK, 0, NULL), 0);
	assert_int_equal(faucet_run_changed(w), 0);
	assert_int_equal(faucet_run_keys(w)->count, 0);
	faucet_run_free(w);
	assert_int_equal(faucet_store_list(s, "p::", &keys), 0);
	assert_int_equal(keys.count, 1); /* p::default, and no bookkeeping */
	faucet_strarray_dispose(&keys);
	/* The same value spelled differently is a change, and is recorded. */
	w = begin_write(s, "default", 0);
	run_put(w, "p::default", "{\"a\":1.0}");
	assert_int_equal(faucet_run_end(w, FAUCET_RUN_OK, 0, NULL), 0);
	faucet_run_free(w);
	tu_assert_value(s, "p::default", "{\"a\":1.0}");
}

/* faucet_run_put_end: the put, then the end - on the file store both in
 * one commit, elsewhere one after the other - leave what a put and an end
 * leave: the key, its marker (before and after), the run in the index and
 * "ok" in the status with the key.  21 of them keep 20 markers, the
 * oldest retired with the index; the newest is undone like any run; an
 * identical value records nothing; a run ended so cannot be ended again. */
static void a_put_that_ends_the_run_records_what_an_end_does(void **state)
{
	faucet_store *s = S(state);
	char first[FAUCET_RUN_ID_LEN + 1] = "", last[FAUCET_RUN_ID_LEN + 1] = "";
	faucet_strarray idx = {0}, markers = {0};
	faucet_value *v = NULL;
	faucet_undo_result res;
	run_marker m;
	run_status st;
	char *mk;

	tu_put(s, "p::default", "{\"a\":0}");
	for (int i = 1; i <= FAUCET_RUN_ROLLBACK_MAX + 1; i++) {
		faucet_run *w = begin_write(s, "default", 0);
		char json[32];
		faucet_value *nv;
		int done = 0;

		snprintf(json, sizeof(json), "{\"a\":%d}", i);
		nv = tu_v(json);
		if (faucet_run_put_end(w, "p::default", nv, &done) != 0)
			fail_msg("put_end %d: %s", i, faucet_error_last()->message);
		assert_int_equal(done, 1);
		assert_int_equal(faucet_run_changed(w), 1);
		assert_int_equal(faucet_run_end(w, FAUCET_RUN_OK, 0, NULL), FAUCET_EINVALID);
		assert_int_equal(faucet_run_put_end(w, "p::default", nv, &done), FAUCET_EINVALID);
		assert_int_equal(done, 0);
		snprintf(i == 1 ? first : last, FAUCET_RUN_ID_LEN + 1, "%s", faucet_run_id(w));
		faucet_value_free(nv);
		faucet_run_free(w);
	}
	tu_assert_value(s, "p::default", "{\"a\":21}");
	st = status_of(s, "p::default");
	assert_int_equal(st.count, FAUCET_RUN_ROLLBACK_MAX + 1);
	assert_string_equal(st.items[0].run, last);
	assert_string_equal(st.items[0].outcome, "ok");
	assert_non_null(st.items[0].ended_at);
	assert_true(st.items[0].has_exit);
	assert_int_equal(st.items[0].exit_status, 0);
	assert_int_equal(st.items[0].keys.count, 1);
	assert_string_equal(st.items[0].keys.strings[0], "p::default");
	faucet_run__status_dispose(&st);
	assert_int_equal(faucet_store_get(s, "p::default::__rollback__", &v), 0);
	assert_int_equal(faucet_run__index_parse(v, "p::default::__rollback__", &idx), 0);
	assert_int_equal(idx.count, FAUCET_RUN_ROLLBACK_MAX);
	assert_string_equal(idx.strings[0], last);
	faucet_strarray_dispose(&idx);
	faucet_value_free(v);
	assert_int_equal(faucet_store_list(s, "p::default::__rollback__::", &markers), 0);
	assert_int_equal(markers.count, FAUCET_RUN_ROLLBACK_MAX);
	faucet_strarray_dispose(&markers);
	mk = faucet_run__marker_key("p::default", first);
	tu_assert_value(s, mk, NULL);
	free(mk);
	mk = faucet_run__marker_key("p::default", last);
	assert_int_equal(faucet_store_get(s, mk, &v), 0);
	assert_int_equal(faucet_run__marker_parse(v, mk, last, &m), 0);
	assert_string_equal(faucet_value_json(faucet_run__marker_find(&m, "p::default")->before),
			    "{\"a\":20}");
	assert_string_equal(faucet_value_json(faucet_run__marker_find(&m, "p::default")->after),
			    "{\"a\":21}");
	faucet_run__marker_dispose(&m);
	faucet_value_free(v);
	free(mk);
	/* Undone like any run. */
	res = undo(s, NULL, 0);
	assert_int_equal(res.restored.count, 1);
	faucet_undo_result_dispose(&res);
	tu_assert_value(s, "p::default", "{\"a\":20}");
	assert_outcome(s, "p::default", last, "undone");
	/* The identical value: no run at all. */
	{
		faucet_run *w = begin_write(s, "default", 0);
		faucet_value *same = tu_v("{\"a\":20}");
		int done = 0;

		assert_int_equal(faucet_run_put_end(w, "p::default", same, &done), 0);
		assert_int_equal(done, 1);
		assert_int_equal(faucet_run_changed(w), 0);
		st = status_of(s, "p::default");
		assert_null(faucet_run__status_find(&st, faucet_run_id(w)));
		faucet_run__status_dispose(&st);
		faucet_value_free(same);
		faucet_run_free(w);
	}
}

/* An import records its keys' before-images a window ahead of writing
 * them (faucet_run__record).  A put by someone else that lands on a key in
 * that window, before the run writes the key, is what the key held just
 * before the run changed it: undo must give that back, not the older
 * value the window read. */
static void undo_restores_a_put_that_landed_between_record_and_write(void **state)
{
	faucet_store *s = S(state);
	const char *keys[] = {"p::default::a", "p::default::b"};
	faucet_value *i1 = tu_v("{\"import\":1}"), *i2 = tu_v("{\"import\":2}");
	faucet_entry batch[2] = {{"p::default::a", i1}, {"p::default::b", i2}};
	faucet_undo_result res;
	faucet_run *w;

	tu_put(s, "p::default::a", "{\"v\":0}");
	tu_put(s, "p::default::b", "{\"v\":0}");
	w = begin_write(s, "default", 0);
	assert_int_equal(faucet_run__record(w, keys, 2), 0);
	tu_put(s, "p::default::a", "{\"v\":\"put in the window\"}");
	assert_int_equal(faucet_run_put_batch(w, batch, 2), 0);
	end_ok(w);
	res = undo(s, NULL, 0);
	assert_int_equal(res.restored.count, 2);
	faucet_undo_result_dispose(&res);
	tu_assert_value(s, "p::default::a", "{\"v\":\"put in the window\"}");
	tu_assert_value(s, "p::default::b", "{\"v\":0}");
	faucet_value_free(i1);
	faucet_value_free(i2);
}

/* ---- a put that lands between a run's read of a key and its first write ---------------- */

/* A store in front of the fixture's: the first read of `key` lets someone
 * else's put of `value` land on it just after the read - inside the window
 * between a run's reading of the key's before-image and its first write. */
typedef struct {
	faucet_store_backend base;
	faucet_store *inner; /* borrowed */
	const char *key;
	const char *value;
	int armed;            /* the put lands after the armed-th read of key
			       * (1: the first) */
	int armed_batch;      /* the put lands just before the first batch */
	int armed_key_batch;  /* ... or just before the first batch writing key */
	size_t marker_writes; /* writes of a rollback marker through this store */
	size_t expiring;      /* compare_and_put_expiring calls, the last one's: */
	char last_expiring[128];
	int64_t last_expires_at;
	size_t batches;       /* compare_and_put_batch calls */
} racing_store;

/* Count a write of `key` when it is a rollback marker. */
static void race_count(racing_store *rs, const char *key)
{
	if (strstr(key, "::__rollback__::") != NULL)
		rs->marker_writes++;
}

static int race_get(faucet_store_backend *b, const char *key, faucet_value **out)
{
	racing_store *rs = (racing_store *)b;
	int rc = faucet_store_get(rs->inner, key, out);

	if (rc == 0 && rs->armed > 0 && strcmp(key, rs->key) == 0 && --rs->armed == 0)
		tu_put(rs->inner, rs->key, rs->value);
	return rc;
}

static int race_put(faucet_store_backend *b, const char *key, const faucet_value *value)
{
	race_count((racing_store *)b, key);
	return faucet_store_put(((racing_store *)b)->inner, key, value);
}

/* The backend's own atomic batch, where it has one (an import's chunks). */
static int race_put_batch(faucet_store_backend *b, const faucet_entry *entries, size_t count)
{
	return faucet_store_put_batch(((racing_store *)b)->inner, entries, count);
}

static int race_del(faucet_store_backend *b, const char *key)
{
	return faucet_store_delete(((racing_store *)b)->inner, key);
}

static int race_list(faucet_store_backend *b, const char *prefix, faucet_strarray *out)
{
	return faucet_store_list(((racing_store *)b)->inner, prefix, out);
}

static int race_cas(faucet_store_backend *b, const char *key, const faucet_value *expected,
		    const faucet_value *value, int *written)
{
	race_count((racing_store *)b, key);
	return faucet_store_compare_and_put(((racing_store *)b)->inner, key, expected, value,
					    written);
}

/* A lease write: recorded, then the inner store's own (etcd's native lease). */
static int race_cas_expiring(faucet_store_backend *b, const char *key,
			     const faucet_value *expected, const faucet_value *value,
			     int64_t expires_at, int *written)
{
	racing_store *rs = (racing_store *)b;

	rs->expiring++;
	snprintf(rs->last_expiring, sizeof(rs->last_expiring), "%s", key);
	rs->last_expires_at = expires_at;
	return faucet__store_compare_and_put_expiring(rs->inner, key, expected, value, expires_at,
						      written);
}

static int race_cad(faucet_store_backend *b, const char *key, const faucet_value *expected,
		    int *deleted)
{
	return faucet_store_compare_and_delete(((racing_store *)b)->inner, key, expected,
					       deleted);
}

/* The backend's own conditional guarded put, so that each backend's is the
 * one under test. */
static int race_put_guarded_if(faucet_store_backend *b, const faucet_store_guard *guards,
			       size_t n, const char *const *drop, size_t ndrop,
			       const faucet_store_guard *put, const faucet_store_guard *then,
			       int *written, int *then_written, int *moved)
{
	for (size_t i = 0; i < n; i++)
		race_count((racing_store *)b, guards[i].key);
	return faucet__store_put_guarded_if(((racing_store *)b)->inner, guards, n, drop, ndrop,
					    put, then, written, then_written, moved);
}

/* The backend's own compare-and-put batch (an undo's restores), counted;
 * a backend without one says so as the front-end does. */
static int race_cas_batch(faucet_store_backend *b, const faucet_store_guard *entries, size_t n,
			  int *written)
{
	racing_store *rs = (racing_store *)b;
	int rc;

	for (size_t i = 0; rs->armed_key_batch && i < n; i++)
		if (strcmp(entries[i].key, rs->key) == 0)
			rs->armed_batch = 1;
	if (rs->armed_batch) {
		rs->armed_batch = rs->armed_key_batch = 0;
		tu_put(rs->inner, rs->key, rs->value);
	}
	rc = faucet__store_compare_and_put_batch(rs->inner, entries, n, written);
	rs->batches += rc != FAUCET_EUNSUPPORTED;
	return rc;
}

static void race_free(faucet_store_backend *b)
{
	free(b);
}

/* A store over s whose first read of key lets a put of value land. */
static faucet_store *racing(faucet_store *s, const char *key, const char *value)
{
	racing_store *rs = calloc(1, sizeof(*rs));
	faucet_store *out = NULL;

	assert_non_null(rs);
	rs->base.version = FAUCET_STORE_BACKEND_VERSION;
	rs->base.name = "racing";
	rs->base.get = race_get;
	rs->base.put = race_put;
	rs->base.del = race_del;
	rs->base.list = race_list;
	rs->base.compare_and_put = race_cas;
	rs->base.compare_and_put_expiring = race_cas_expiring;
	rs->base.compare_and_delete = race_cad;
	rs->base.put_guarded_if = race_put_guarded_if;
	rs->base.compare_and_put_batch = race_cas_batch;
	rs->base.cas_batch_max = faucet_store_backend_of(s)->cas_batch_max;
	rs->base.put_batch = faucet_store_supports_atomic_batch(s) ? race_put_batch : NULL;
	rs->base.free = race_free;
	rs->inner = s;
	rs->key = key;
	rs->value = value;
	rs->armed = 1;
	assert_int_equal(faucet_store_new(&out, &rs->base), 0);
	return out;
}

/* A run's first write of a key replaces exactly the before-image it
 * recorded: a put that landed after the read is recorded as the key's
 * before-image instead, and undo gives it back - for a CLI-style write
 * (lazy, its bookkeeping with the key's put) and a leased run, a put and a
 * delete. */
/* Undo the newest run of s: no conflict, one key restored, and k holds the
 * put that landed in the run's window again. */
static void undo_gives_back_the_window_put(faucet_store *s, const char *k)
{
	faucet_undo_result res = undo(s, NULL, 0);

	assert_false(res.conflict);
	assert_int_equal(res.restored.count, 1);
	faucet_undo_result_dispose(&res);
	tu_assert_value(s, k, "{\"v\":\"put in the window\"}");
}

static void undo_restores_a_put_that_landed_before_a_runs_first_write(void **state)
{
	faucet_store *s = S(state);
	const char *k = "p::default::a";

	for (int leased = 0; leased < 2; leased++) {
		for (int del = 0; del < 2; del++) {
			faucet_store *rs;
			faucet_run *w;

			tu_put(s, k, "{\"v\":0}");
			rs = racing(s, k, "{\"v\":\"put in the window\"}");
			w = leased ? begin(rs, NULL) : begin_write(rs, "default", 0);
			if (del)
				assert_int_equal(faucet_run_delete(w, k), 0);
			else
				run_put(w, k, "{\"v\":\"the run\"}");
			tu_assert_value(s, k, del ? NULL : "{\"v\":\"the run\"}");
			end_ok(w);
			faucet_store_free(rs);
			undo_gives_back_the_window_put(s, k);
		}
	}
}

/* The three keys of a batch-window test as they are before the run (the
 * second absent with `absent`), and a run over a racing store in front of
 * s (*rs, freed by the caller) whose first read of the second key lets a
 * put land on it. */
static faucet_run *batch_window_run(faucet_store *s, const char *const *keys, int absent,
				    int leased, faucet_store **rs)
{
	tu_put(s, keys[0], "{\"v\":0}");
	tu_put(s, keys[2], "{\"v\":2}");
	if (!absent)
		tu_put(s, keys[1], "{\"v\":1}");
	*rs = racing(s, keys[1], "{\"v\":\"put in the window\"}");
	return leased ? begin(*rs, NULL) : begin_write(*rs, "default", 0);
}

/* End run w, free its racing store rs, and undo the newest run of s: no
 * conflict. */
static void end_and_undo(faucet_store *s, faucet_run *w, faucet_store *rs)
{
	faucet_undo_result res;

	end_ok(w);
	faucet_store_free(rs);
	res = undo(s, NULL, 0);
	assert_false(res.conflict);
	faucet_undo_result_dispose(&res);
}

/* end_and_undo of batch_window_run's run: the first and third keys back
 * as they were. */
static void undo_batch_window_run(faucet_store *s, const char *const *keys, faucet_run *w,
				  faucet_store *rs)
{
	end_and_undo(s, w, rs);
	tu_assert_value(s, keys[0], "{\"v\":0}");
	tu_assert_value(s, keys[2], "{\"v\":2}");
}

/* The same for a batch delete (what `faucet state clear` does): every
 * before-image is recorded in one marker write, then each key is deleted
 * only while it holds what that write read.  A put that landed on one key
 * in between is recorded as its before-image and given back by undo; a key
 * that was absent when read and written meanwhile is left as written, and
 * is not the batch's change.
 * Fails before the batch's deletes were conditional: the put was deleted
 * unseen and undo restored the value read before it. */
static void undo_restores_a_put_that_landed_before_a_batch_delete(void **state)
{
	faucet_store *s = S(state);
	const char *keys[] = {"p::default::a", "p::default::b", "p::default::c"};

	/* (leased, absent): a leased run logs the after-images ahead, and its
	 * undo sees a put on a key absent when read as a conflict (safe). */
	for (int c = 0; c < 3; c++) {
		int leased = c == 1, absent = c == 2;
		{
			faucet_store *rs;
			faucet_run *w = batch_window_run(s, keys, absent, leased, &rs);

			assert_int_equal(faucet_run_delete_batch(w, keys, 3), 0);
			tu_assert_value(s, keys[0], NULL);
			/* Absent when read: the put is not the batch's to delete. */
			tu_assert_value(s, keys[1], absent ? "{\"v\":\"put in the window\"}" : NULL);
			tu_assert_value(s, keys[2], NULL);
			undo_batch_window_run(s, keys, w, rs);
			tu_assert_value(s, keys[1], "{\"v\":\"put in the window\"}");
			tu_put(s, keys[1], "{\"v\":1}");
			assert_int_equal(faucet_store_delete(s, keys[1]), 0);
		}
	}
}

/* The same for a run's batch put of at most FAUCET_STORE_CAS_BATCH_MAX keys
 * (a small import's): every before-image is recorded in one marker write,
 * then the batch is written only while every key holds what that write
 * read - else each key is read again, recorded anew, and the batch tried
 * again.  A put that landed on one key in between is then recorded as its
 * before-image and given back by undo, for a key present and one absent
 * when read.  Fails before the batch was conditional: undo restored the
 * value read before the put (and on the file store, before it had a
 * compare-and-put batch). */
static void undo_restores_a_put_that_landed_before_a_batch_put(void **state)
{
	faucet_store *s = S(state);
	const char *keys[] = {"p::default::a", "p::default::b", "p::default::c"};
	for (int c = 0; c < 3; c++) {
		int leased = c == 1, absent = c == 2;
		faucet_value *v[3] = {tu_v("{\"v\":\"a\"}"), tu_v("{\"v\":\"b\"}"),
				      tu_v("{\"v\":\"c\"}")};
		faucet_entry e[3] = {{keys[0], v[0]}, {keys[1], v[1]}, {keys[2], v[2]}};
		faucet_store *rs;
		faucet_run *w;

		w = batch_window_run(s, keys, absent, leased, &rs);
		assert_int_equal(faucet_run_put_batch(w, e, 3), 0);
		for (int i = 0; i < 3; i++)
			tu_assert_value(s, keys[i], faucet_value_json(v[i]));
		undo_batch_window_run(s, keys, w, rs);
		tu_assert_value(s, keys[1], "{\"v\":\"put in the window\"}");
		assert_int_equal(faucet_store_delete(s, keys[1]), 0);
		for (int i = 0; i < 3; i++)
			faucet_value_free(v[i]);
	}
}

/* The same for a batch bigger than FAUCET_STORE_CAS_BATCH_MAX (an import's
 * first chunk of up to 10,000 keys): a backend whose compare-and-put batch
 * is one transaction of any size (cas_batch_max) writes it whole against
 * what was read, so the put that landed is given back by undo.  Fails
 * before such batches were conditional, on memory, SQLite, PostgreSQL and
 * Redis, and on the file store before it had a compare-and-put batch. */
static void undo_restores_a_put_that_landed_before_a_big_batch_put(void **state)
{
	faucet_store *s = S(state);
	enum { N = FAUCET_STORE_CAS_BATCH_MAX + 72 };
	faucet_value *v = tu_v("{\"v\":\"the batch\"}");
	char (*keys)[32];
	faucet_entry *e = numbered_entries(N, v, &keys);
	faucet_store *rs;
	faucet_run *w;

	tu_put(s, keys[0], "{\"v\":0}");
	tu_put(s, keys[150], "{\"v\":150}");
	rs = racing(s, keys[150], "{\"v\":\"put in the window\"}");
	if (faucet__store_cas_batch_max(rs) < N) {
		/* etcd: covered by the sliced batch below */
		faucet_store_free(rs);
		faucet_value_free(v);
		free(e);
		free(keys);
		return;
	}
	w = begin_write(rs, "default", 0);
	assert_int_equal(faucet_run_put_batch(w, e, N), 0);
	tu_assert_value(s, keys[150], "{\"v\":\"the batch\"}");
	end_and_undo(s, w, rs);
	tu_assert_value(s, keys[0], "{\"v\":0}");
	tu_assert_value(s, keys[1], NULL);
	tu_assert_value(s, keys[150], "{\"v\":\"put in the window\"}");
	faucet_value_free(v);
	free(e);
	free(keys);
}

/* A batch bigger than the backend's compare-and-put batch (over 128 keys
 * on etcd; here every backend is given 128) is written in slices of it,
 * each against what was read: a put landing on a key of the first slice or
 * of a later one, after the read or after an earlier slice landed, is
 * recorded and given back by undo, for a CLI write and a leased run.
 * Fails before such batches were written in slices (they were plain). */
static void undo_restores_a_put_that_landed_in_a_slice_of_a_bigger_batch(void **state)
{
	faucet_store *s = S(state);
	enum { N = 2 * FAUCET_STORE_CAS_BATCH_MAX + 44 };
	faucet_value *v = tu_v("{\"v\":\"the batch\"}");
	char (*keys)[32];
	faucet_entry *e = numbered_entries(N, v, &keys);
	const size_t racy[] = {5, 150, N - 1};

	for (size_t round = 0; round < 2 * 3 * 2; round++) {
		size_t k = racy[round % 3];
		int leased = (round / 3) % 2 == 1, between = round >= 6;
		racing_store *rb;
		faucet_store *rs;
		faucet_run *w;
		size_t batches;

		tu_put(s, keys[0], "{\"v\":0}");
		tu_put(s, keys[k], "{\"v\":\"before\"}");
		rs = racing(s, keys[k], "{\"v\":\"put in the window\"}");
		rb = (racing_store *)faucet_store_backend_of(rs);
		rb->base.cas_batch_max = 0; /* FAUCET_STORE_CAS_BATCH_MAX */
		if (between) { /* after the read, with the first slice */
			rb->armed = 0;
			rb->armed_batch = 1;
		}
		w = leased ? begin(rs, NULL) : begin_write(rs, "default", 0);
		assert_int_equal(faucet_run_put_batch(w, e, N), 0);
		batches = rb->batches;
		for (size_t i = 0; i < N; i++)
			tu_assert_value(s, keys[i], "{\"v\":\"the batch\"}");
		end_and_undo(s, w, rs);
		tu_assert_value(s, keys[0], "{\"v\":0}");
		tu_assert_value(s, keys[1], NULL);
		tu_assert_value(s, keys[N - 2], NULL);
		tu_assert_value(s, keys[k], "{\"v\":\"put in the window\"}");
		assert_true(batches >= 3); /* in slices, the raced one twice */
		for (size_t i = 0; i < N; i++)
			assert_int_equal(faucet_store_delete(s, keys[i]), 0);
	}
	faucet_value_free(v);
	free(e);
	free(keys);
}

/* The same for a command of a `faucet run` (a handle that joined the run):
 * its first write of a key - the run's first - replaces exactly the
 * before-image it recorded in the run's shared marker.  A put that landed
 * between the read and the write is recorded instead and given back by
 * undo; a key another handle of the run wrote first is not the joined
 * handle's first write, and keeps that handle's before-image.  Fails
 * before a joined handle's first write was conditional. */
static void undo_restores_a_put_that_landed_before_a_joined_handles_first_write(void **state)
{
	faucet_store *s = S(state);
	const char *k = "p::default::a";

	for (int del = 0; del < 2; del++) {
		faucet_run *leader = begin(s, NULL), *child = NULL;
		faucet_store *rs;

		tu_put(s, k, "{\"v\":0}");
		rs = racing(s, k, "{\"v\":\"put in the window\"}");
		assert_int_equal(faucet_run_join(&child, rs, "p", NULL, faucet_run_id(leader)), 0);
		if (del)
			assert_int_equal(faucet_run_delete(child, k), 0);
		else
			run_put(child, k, "{\"v\":\"the child\"}");
		tu_assert_value(s, k, del ? NULL : "{\"v\":\"the child\"}");
		/* The leader's later write of the key is not a first write. */
		run_put(leader, k, "{\"v\":\"the leader\"}");
		faucet_run_free(child);
		end_ok(leader);
		faucet_store_free(rs);
		undo_gives_back_the_window_put(s, k);
	}
}

/* A run's compare-and-put whose condition did not hold when the key was
 * read does not write, even when a put lands the expected value on the key
 * before the write: the run's before-image would be a value the key no
 * longer held. */
static void a_runs_compare_and_put_holds_against_what_it_read(void **state)
{
	faucet_store *s = S(state), *rs;
	faucet_value *want = tu_v("{\"v\":1}"), *v = tu_v("{\"v\":\"the run\"}");
	const char *k = "p::default::a";
	faucet_run *w;
	int written = 1;

	tu_put(s, k, "{\"v\":0}");
	rs = racing(s, k, "{\"v\":1}");
	w = begin_write(rs, "default", 0);
	assert_int_equal(faucet_run_compare_and_put(w, k, want, v, &written), 0);
	assert_int_equal(written, 0);
	assert_int_equal(faucet_run_changed(w), 0);
	end_ok(w);
	faucet_store_free(rs);
	tu_assert_value(s, k, "{\"v\":1}");
	faucet_value_free(want);
	faucet_value_free(v);
}

/* faucet__store_put_guarded_if: a key that does not hold what the put
 * expects is not written, and the guards are either written with it or
 * (the one-by-one fallback) reported written; a key that holds is. */
static void a_conditional_guarded_put_writes_only_a_key_that_holds(void **state)
{
	faucet_store *s = S(state);
	faucet_value *g1 = tu_v("1"), *g2 = tu_v("2"), *g3 = tu_v("3"), *x = tu_v("\"x\""),
		     *a = tu_v("\"a\""), *b = tu_v("\"b\"");
	faucet_store_guard guard = {"p::g", g1, g2}, put = {"p::k", x, b};
	faucet_value *now = NULL;
	int written = 1, then_written = 1, moved = 0;

	tu_put(s, "p::g", "1");
	tu_put(s, "p::k", "\"a\"");
	assert_int_equal(faucet__store_put_guarded_if(s, &guard, 1, NULL, 0, &put, NULL, &written,
						      &then_written, &moved),
			 0);
	assert_int_equal(moved, 1);
	assert_int_equal(then_written, 0);
	tu_assert_value(s, "p::k", "\"a\"");
	assert_int_equal(faucet_store_get(s, "p::g", &now), 0);
	assert_true(faucet_value_equal(now, written ? g2 : g1));
	/* Expecting what the key holds (and the guard as it is now): written. */
	guard.expected = now;
	guard.value = g3;
	put.expected = a;
	assert_int_equal(faucet__store_put_guarded_if(s, &guard, 1, NULL, 0, &put, NULL, &written,
						      &then_written, &moved),
			 0);
	assert_int_equal(written, 1);
	assert_int_equal(moved, 0);
	tu_assert_value(s, "p::k", "\"b\"");
	tu_assert_value(s, "p::g", "3");
	faucet_value_free(now);
	faucet_value_free(g1);
	faucet_value_free(g2);
	faucet_value_free(g3);
	faucet_value_free(x);
	faucet_value_free(a);
	faucet_value_free(b);
}

/* A conflict met half-way through an undo puts back what it restored. */
static void an_undo_is_all_or_nothing(void **state)
{
	faucet_store *s = S(state);
	faucet_undo_result res = FAUCET_UNDO_RESULT_INIT;
	faucet_run *w, *op;
	char id[FAUCET_RUN_ID_LEN + 1];

	tu_put(s, "p::default::a", "1");
	tu_put(s, "p::default::b", "1");
	w = begin_write(s, "default", 0);
	snprintf(id, sizeof(id), "%s", faucet_run_id(w));
	run_put(w, "p::default::a", "2");
	run_put(w, "p::default::b", "2");
	end_ok(w);
	op = begin_write(s, "default", 0);
	run_put(op, "p::default::b", "3");
	end_ok(op);
	res = undo(s, id, 0);
	assert_true(res.conflict);
	assert_string_equal(res.conflict_key, "p::default::b");
	assert_int_equal(res.restored.count, 0);
	faucet_undo_result_dispose(&res);
	tu_assert_value(s, "p::default::a", "2");
	tu_assert_value(s, "p::default::b", "3");
}

/* A key written between the undo's plan and its restores: where the store
 * restores in batches (every store does) the batch holding the key writes nothing, the keys
 * go one by one, the key is the conflict and every key restored before it
 * is put back - the same outcome as without batches. */
static void an_undo_in_batches_stops_at_a_key_written_after_its_plan(void **state)
{
	faucet_store *s = S(state), *rs;
	faucet_undo_result res = FAUCET_UNDO_RESULT_INIT;
	faucet_undo_options o = FAUCET_UNDO_OPTIONS_INIT;
	faucet_run *w;
	char id[FAUCET_RUN_ID_LEN + 1];

	tu_put(s, "p::default::a", "1");
	tu_put(s, "p::default::c", "1");
	w = begin_write(s, "default", 0);
	snprintf(id, sizeof(id), "%s", faucet_run_id(w));
	run_put(w, "p::default::a", "2");
	run_put(w, "p::default::b", "2");
	run_put(w, "p::default::c", "2");
	end_ok(w);
	/* Another writer's put lands on b after every read of the undo, just
	 * before its first batch. */
	rs = racing(s, "p::default::b", "{\"v\":\"written after the plan\"}");
	((racing_store *)faucet_store_backend_of(rs))->armed = 0;
	((racing_store *)faucet_store_backend_of(rs))->armed_batch = 1;
	o.run = id;
	assert_int_equal(faucet_run_undo(rs, "p", &o, &res), 0);
	assert_true(res.conflict);
	assert_string_equal(res.conflict_key, "p::default::b");
	assert_int_equal(res.restored.count, 0);
	/* One batch, refused: every store restores in batches. */
	assert_int_equal(((racing_store *)faucet_store_backend_of(rs))->batches, 1);
	faucet_undo_result_dispose(&res);
	faucet_store_free(rs);
	tu_assert_value(s, "p::default::a", "2");
	tu_assert_value(s, "p::default::b", "{\"v\":\"written after the plan\"}");
	tu_assert_value(s, "p::default::c", "2");
	/* Nothing in the way: the same undo restores every key, in a batch. */
	tu_put(s, "p::default::b", "2");
	res = undo(s, id, 0);
	assert_false(res.conflict);
	assert_int_equal(res.restored.count, 3);
	faucet_undo_result_dispose(&res);
	tu_assert_value(s, "p::default::a", "1");
	tu_assert_value(s, "p::default::b", NULL);
	tu_assert_value(s, "p::default::c", "1");
}

/* faucet_run_delete_batch: every before-image recorded, the keys gone, and
 * undo puts each one back (`faucet state clear`). */
static void a_delete_batch_is_recorded_and_undone(void **state)
{
	faucet_store *s = S(state);
	const char *keys[] = {"p::default", "p::default::a", "p::default::b"};
	faucet_undo_result res = FAUCET_UNDO_RESULT_INIT;
	faucet_run *r;

	tu_put(s, "p::default", "{\"c\":1}");
	tu_put(s, "p::default::a", "[1,2]");
	tu_put(s, "p::default::b", "18446744073709551615");
	r = begin(s, NULL);
	assert_int_equal(faucet_run_delete_batch(r, keys, 3), 0);
	tu_assert_value(s, "p::default", NULL);
	tu_assert_value(s, "p::default::a", NULL);
	tu_assert_value(s, "p::default::b", NULL);
	assert_int_equal(faucet_run_delete_batch(r, keys, 0), 0);
	assert_int_equal(faucet_run_delete_batch(NULL, keys, 1), FAUCET_EINVALID);
	end_ok(r);
	res = undo(s, NULL, 0);
	assert_false(res.conflict);
	assert_int_equal(res.restored.count, 3);
	tu_assert_value(s, "p::default", "{\"c\":1}");
	tu_assert_value(s, "p::default::a", "[1,2]");
	tu_assert_value(s, "p::default::b", "18446744073709551615");
	faucet_undo_result_dispose(&res);
}

/* ---- a big import: its marker in parts ------------------------------------------------- */

/* The import's chunk is made small here (FAUCET_TEST_IMPORT_CHUNK, read by
 * faucet__import_chunk), so that a hundred keys make three chunks on every
 * backend: a real chunk is 10,000 keys, whose undo, one durable
 * compare-and-put a key, would take minutes on the file store and etcd. */
#define BIG_CHUNK 50
#define BIG_IMPORT (2 * BIG_CHUNK + 5) /* three chunks: the last two in parts */

static int big_setup(void **state)
{
	assert_int_equal(setenv("FAUCET_TEST_IMPORT_CHUNK", "50", 1), 0);
	assert_int_equal(faucet__import_chunk(), BIG_CHUNK);
	return setup(state);
}

static int big_teardown(void **state)
{
	assert_int_equal(unsetenv("FAUCET_TEST_IMPORT_CHUNK"), 0);
	return teardown(state);
}

typedef struct {
	faucet_store *s;
	faucet_run *run;
} big_hook;

static int big_begin(void *ctx, const char *pipeline, const char *row, faucet_run **run)
{
	big_hook *h = ctx;
	faucet_run_options o = FAUCET_RUN_OPTIONS_INIT;

	o.row = row;
	o.pipeline_level = row == NULL;
	o.no_lease = 1; /* as the CLI's import: nobody joins it */
	o.exclusive = 1;
	o.command = "contract import";
	if (faucet_run_begin(&h->run, h->s, pipeline, &o) != 0)
		fail_msg("begin import: %s", faucet_error_last()->message);
	*run = h->run;
	return 0;
}

/* Undo the big import run `id` of s: no conflict, every key restored. */
static void undo_big_import(faucet_store *s, const char *id)
{
	faucet_undo_result res = undo(s, id, 0);

	assert_false(res.conflict);
	assert_int_equal(res.restored.count, BIG_IMPORT);
	faucet_undo_result_dispose(&res);
}

/* Import n keys p::big::kNNNNN = {"new":N} as one run, left for the
 * caller to end (h->run). */
static void import_n(big_hook *h, int n)
{
	faucet_import_run_hook hook = FAUCET_IMPORT_RUN_HOOK_INIT;
	faucet_import_report rep = FAUCET_IMPORT_REPORT_INIT;
	FILE *f = tmpfile();

	assert_non_null(f);
	fputs("{\"version\":1,\"pipeline\":\"p\",\"keys\":{", f);
	for (int i = 0; i < n; i++)
		fprintf(f, "%s\"p::big::k%05d\":{\"new\":%d}", i ? "," : "", i, i);
	fputs("}}", f);
	rewind(f);
	hook.begin_run = big_begin;
	hook.ctx = h;
	rep = (faucet_import_report)FAUCET_IMPORT_REPORT_INIT;
	if (faucet_import_file_recorded(h->s, f, NULL, &hook, &rep) != 0)
		fail_msg("import: %s", faucet_error_last()->message);
	if (rep.error != NULL)
		fail_msg("import: %s", rep.error);
	faucet_import_report_dispose(&rep);
	fclose(f);
	assert_non_null(h->run);
}

/* import_n of BIG_IMPORT keys. */
static void big_import(big_hook *h)
{
	import_n(h, BIG_IMPORT);
}

/* The marker document n of a run (0 = the main one, n > 0 its parts):
 * its image count, or -1 when it is absent. */
static long marker_doc_count(faucet_store *s, const char *mk, const char *id, size_t n)
{
	char *key = n ? faucet_run__marker_part_key(mk, n) : strdup(mk);
	faucet_value *v = NULL;
	run_marker m;
	long count = -1;

	assert_non_null(key);
	assert_int_equal(faucet_store_get(s, key, &v), 0);
	if (v != NULL) {
		assert_int_equal(faucet_run__marker_parse(v, key, id, &m), 0);
		count = (long)m.count;
		faucet_run__marker_dispose(&m);
	}
	faucet_value_free(v);
	free(key);
	return count;
}

/* The big import over a racing store whose `armed`-th read of k lets a put
 * land on k; k then holds `imported`; the run ended and undone, k holds
 * the put that landed. */
static void import_with_a_put_in_the_window(faucet_store *s, const char *k, int armed,
					    const char *imported)
{
	big_hook h;
	char *id;

	h.s = racing(s, k, "{\"v\":\"put in the window\"}");
	((racing_store *)faucet_store_backend_of(h.s))->armed = armed;
	h.run = NULL;
	big_import(&h);
	tu_assert_value(s, k, imported);
	id = strdup(faucet_run_id(h.run));
	end_ok(h.run);
	faucet_store_free(h.s);
	undo_big_import(s, id);
	tu_assert_value(s, k, "{\"v\":\"put in the window\"}");
	free(id);
}

/* An import's chunk after its first is written with its marker part in
 * one compare-and-put batch, against the before-images the part records:
 * a put that lands on one of its keys after the part's read is recorded
 * instead (the part built again) and given back by undo, on every store.
 * Fails before a part and its chunk were one batch (and on the file store
 * before it had a compare-and-put batch): the part was written, then the
 * chunk plainly, and undo restored the value read before the put. */
static void undo_restores_a_put_that_landed_before_an_import_chunk(void **state)
{
	faucet_store *s = S(state);
	const char *k = "p::big::k00075"; /* the second chunk's: the first part */

	tu_put(s, "p::big::k00010", "{\"old\":10}");
	tu_put(s, k, "{\"old\":75}");
	import_with_a_put_in_the_window(s, k, 1, "{\"new\":75}");
	tu_assert_value(s, "p::big::k00010", "{\"old\":10}");
	tu_assert_value(s, "p::big::k00076", NULL);
}

/* A chunk of new keys is written with a part built without a read, as if
 * every key were absent (part_and_chunk's guess): its batch expects every
 * key absent.  A put that lands on one of them just before that batch
 * makes it write nothing; the chunk is read, and its part then records the
 * put, which undo gives back.  Fails when the guessed batch is written
 * without its compare: undo then deleted the put. */
static void undo_restores_a_put_that_landed_on_a_new_key_before_its_chunk(void **state)
{
	faucet_store *s = S(state);
	const char *k = "p::big::k00075"; /* the second chunk's, absent */
	big_hook h;
	char *id;

	h.s = racing(s, k, "{\"v\":\"put in the window\"}");
	((racing_store *)faucet_store_backend_of(h.s))->armed_key_batch = 1;
	h.run = NULL;
	big_import(&h);
	assert_int_equal(((racing_store *)faucet_store_backend_of(h.s))->armed_key_batch, 0);
	tu_assert_value(s, k, "{\"new\":75}");
	id = strdup(faucet_run_id(h.run));
	end_ok(h.run);
	faucet_store_free(h.s);
	undo_big_import(s, id);
	tu_assert_value(s, k, "{\"v\":\"put in the window\"}");
	tu_assert_value(s, "p::big::k00076", NULL);
	tu_assert_value(s, "p::big::k00010", NULL);
	free(id);
}

/* The same for a key of an import's first chunk, which is recorded in the
 * main marker, not a part: written against what was read on every store.
 * Fails before the file store and etcd (whose imports write by prefix, to
 * report exactly what landed) wrote that chunk conditionally: there the
 * put was overwritten unseen, and undo restored the value read before
 * it. */
static void undo_restores_a_put_that_landed_before_an_imports_first_chunk(void **state)
{
	faucet_store *s = S(state);
	const char *k = "p::big::k00010"; /* the first chunk's */

	tu_put(s, k, "{\"old\":10}");
	/* After the second read: the first records the chunk's images ahead
	 * of it, the second reads them again just before the write. */
	import_with_a_put_in_the_window(s, k, 2, "{\"new\":10}");
	tu_assert_value(s, "p::big::k00011", NULL);
}

/* An import's chunk is as big as the store's compare-and-put batch takes
 * with the chunk's marker part, where its chunks are not all-or-nothing
 * anyway: 127 keys on etcd (128 operations a transaction), so that every
 * chunk after the first is written with its part against what was read
 * (design §8.2).  Elsewhere the import's own chunk (10,000 keys): here
 * one chunk, no part. */
static void an_import_chunk_fits_the_stores_batch_with_its_part(void **state)
{
	faucet_store *s = S(state);
	int etcd = strcmp(current->name, "etcd") == 0;
	big_hook h = {s, NULL};
	char *id, *mk;

	import_n(&h, 300);
	id = strdup(faucet_run_id(h.run));
	mk = faucet_run__marker_key("p::big", id);
	end_ok(h.run);
	assert_int_equal(marker_doc_count(s, mk, id, 0), etcd ? 127 : 300);
	assert_int_equal(marker_doc_count(s, mk, id, 1), etcd ? 127 : -1);
	assert_int_equal(marker_doc_count(s, mk, id, 2), etcd ? 46 : -1);
	assert_int_equal(marker_doc_count(s, mk, id, 3), -1);
	tu_assert_value(s, "p::big::k00299", "{\"new\":299}");
	free(mk);
	free(id);
}

/* Fails before markers had parts: the whole marker was one document,
 * rewritten at every chunk (O(N^2) bytes for an import of N keys).  Each
 * chunk after the first is recorded in a part of its own, written once;
 * undo reads them all back and restores every key. */
static void a_big_import_is_recorded_in_parts_and_undone_whole(void **state)
{
	faucet_store *s = S(state);
	big_hook h = {s, NULL};
	run_marker all;
	run_status st;
	size_t parts = 0;
	int exists = 0;
	char *id, *mk;

	for (int i = 0; i < BIG_IMPORT; i += 10) {
		char key[32], json[32];

		snprintf(key, sizeof(key), "p::big::k%05d", i);
		snprintf(json, sizeof(json), "{\"old\":%d}", i);
		tu_put(s, key, json);
	}
	big_import(&h);
	id = strdup(faucet_run_id(h.run));
	mk = faucet_run__marker_key("p::big", id);
	/* A key in a part is not the handle's to write again. */
	{
		faucet_value *v = tu_v("{\"again\":1}");

		assert_int_equal(faucet_run_put(h.run, "p::big::k00104", v), FAUCET_EINVALID);
		tu_assert_error_contains("part of the marker");
		faucet_value_free(v);
	}
	end_ok(h.run);
	tu_assert_value(s, "p::big::k00104", "{\"new\":104}");

	assert_int_equal(marker_doc_count(s, mk, id, 0), BIG_CHUNK);
	assert_int_equal(marker_doc_count(s, mk, id, 1), BIG_CHUNK);
	assert_int_equal(marker_doc_count(s, mk, id, 2), 5);
	assert_int_equal(marker_doc_count(s, mk, id, 3), -1);
	assert_int_equal(faucet_run__marker_load(s, mk, id, &all, &exists, &parts), 0);
	assert_true(exists);
	assert_int_equal(parts, 2);
	assert_int_equal(all.count, BIG_IMPORT);
	for (size_t i = 1; i < all.count; i++)
		assert_true(strcmp(all.items[i - 1].key, all.items[i].key) < 0);
	faucet_run__marker_dispose(&all);
	st = status_of(s, "p::big");
	assert_string_equal(st.items[0].outcome, "ok");
	assert_int_equal(st.items[0].keys_total, BIG_IMPORT);
	faucet_run__status_dispose(&st);

	undo_big_import(s, id);
	tu_assert_value(s, "p::big::k00000", "{\"old\":0}");
	tu_assert_value(s, "p::big::k00001", NULL);
	tu_assert_value(s, "p::big::k00070", "{\"old\":70}");
	tu_assert_value(s, "p::big::k00100", "{\"old\":100}");
	tu_assert_value(s, "p::big::k00104", NULL);
	free(mk);
	free(id);
}

/* A later write by someone else of a key in a part is a conflict for the
 * undo, as of a key in the main marker; and when the import's marker is
 * retired (20 are kept), its parts go with it. */
static void a_big_imports_parts_conflict_and_retire_with_it(void **state)
{
	faucet_store *s = S(state);
	big_hook h = {s, NULL};
	faucet_undo_options o = FAUCET_UNDO_OPTIONS_INIT;
	faucet_undo_result res = FAUCET_UNDO_RESULT_INIT;
	char *id, *mk;

	big_import(&h);
	id = strdup(faucet_run_id(h.run));
	mk = faucet_run__marker_key("p::big", id);
	end_ok(h.run);
	tu_put(s, "p::big::k00070", "{\"operator\":1}");
	o.run = id;
	assert_int_equal(faucet_run_undo(s, "p", &o, &res), 0);
	assert_true(res.conflict);
	assert_string_equal(res.conflict_key, "p::big::k00070");
	faucet_undo_result_dispose(&res);
	tu_assert_value(s, "p::big::k00071", "{\"new\":71}"); /* nothing restored */

	for (int i = 0; i < 20; i++) {
		faucet_run *r = begin_write(s, "big", 0);
		char json[16];

		snprintf(json, sizeof(json), "%d", i);
		run_put(r, "p::big::x", json);
		end_ok(r);
	}
	assert_int_equal(marker_doc_count(s, mk, id, 0), -1);
	assert_int_equal(marker_doc_count(s, mk, id, 1), -1);
	assert_int_equal(marker_doc_count(s, mk, id, 2), -1);
	free(mk);
	free(id);
}

/* Every lease claim and renewal - a run's, a backfill unit's - goes through
 * the lease module's one write, compare_and_put_expiring with the
 * document's own expires_at (so that etcd attaches it to a native lease).
 * Fails when a claim or renewal is a plain compare-and-put. */
static void lease_writes_say_when_the_lease_may_go(void **state)
{
	faucet_store *s = S(state), *cs = racing(s, "", "");
	racing_store *rs = (racing_store *)faucet_store_backend_of(cs);
	faucet_run_options o = FAUCET_RUN_OPTIONS_INIT;
	faucet_lease held;
	faucet_bf_lease unit;
	faucet_value *v = NULL;
	faucet_run *r = NULL;
	char *holder = faucet_bf__lease_holder();
	int claimed = 0, kept = 0;
	int64_t now = (int64_t)time(NULL);

	rs->armed = 0;
	o.lease_ttl_ms = 30000;
	assert_int_equal(faucet_run_begin(&r, cs, "p", &o), 0);
	assert_int_equal(rs->expiring, 1);
	assert_string_equal(rs->last_expiring, "p::default::__lease__");
	assert_int_equal(faucet_store_get(s, "p::default::__lease__", &v), 0);
	assert_int_equal(faucet_lease_parse(v, "p::default::__lease__", &held), 0);
	assert_int_equal(rs->last_expires_at, held.expires_at);
	assert_true(held.expires_at >= now + 30);
	faucet_lease_dispose(&held);
	faucet_value_free(v);
	assert_int_equal(faucet_run_renew(r), 0);
	assert_int_equal(rs->expiring, 2);
	end_ok(r);

	assert_non_null(holder);
	assert_int_equal(faucet_bf__lease_claim(cs, "p::__backfill__::h::u1", holder, now, 60,
						&unit, &claimed, NULL),
			 0);
	assert_true(claimed);
	assert_int_equal(rs->expiring, 3);
	assert_int_equal(rs->last_expires_at, unit.expires_at);
	assert_int_equal(faucet_bf__lease_renew(cs, &unit, now + 1, 60, &kept), 0);
	assert_true(kept);
	assert_int_equal(rs->expiring, 4);
	assert_int_equal(rs->last_expires_at, unit.expires_at);
	assert_int_equal(faucet_bf__lease_release(cs, &unit), 0);
	faucet_bf__lease_dispose(&unit);
	free(holder);
	faucet_store_free(cs);
}

/* An undo of N keys writes its own run's marker a few times, not once a
 * key: recorded one key at a time, the marker (one key longer each time)
 * was rewritten with every restore, O(N^2) bytes - an undo of a
 * 10,000-key import ran for many minutes.  Fails before the undo recorded
 * its keys in one write. */
static void an_undo_of_many_keys_writes_its_marker_a_few_times(void **state)
{
	faucet_store *s = S(state), *cs;
	faucet_run *w = begin_write(s, "default", 0);
	faucet_undo_result res;
	racing_store *rs;
	/* More keys than several compare-and-put batches hold: recorded a
	 * batch at a time, the marker would be written once per batch. */
	enum { KEYS = 1000 };
	faucet_value *one = tu_v("1");
	char (*keys)[32];
	faucet_entry *entries = numbered_entries(KEYS, one, &keys);

	assert_int_equal(faucet_run_put_batch(w, entries, KEYS), 0);
	faucet_value_free(one);
	free(entries);
	free(keys);
	end_ok(w);
	cs = racing(s, "", "");
	rs = (racing_store *)faucet_store_backend_of(cs);
	rs->armed = 0;
	res = undo(cs, NULL, 0);
	assert_false(res.conflict);
	assert_int_equal(res.restored.count, KEYS);
	faucet_undo_result_dispose(&res);
	assert_true(rs->marker_writes <= 4);
	faucet_store_free(cs);
	tu_assert_value(s, "p::default::k00000", NULL);
	tu_assert_value(s, "p::default::k00999", NULL);
}

int contract_runs_run(const contract_backend *b)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(bookkeeping_keys_are_recognised),
		cmocka_unit_test_setup_teardown(a_run_records_images_status_and_index, setup, teardown),
		cmocka_unit_test_setup_teardown(a_put_that_ends_the_run_records_what_an_end_does, setup,
						teardown),
		cmocka_unit_test_setup_teardown(undo_restores_a_put_that_landed_between_record_and_write,
						setup, teardown),
		cmocka_unit_test_setup_teardown(undo_restores_a_put_that_landed_before_a_runs_first_write,
						setup, teardown),
		cmocka_unit_test_setup_teardown(undo_restores_a_put_that_landed_before_a_batch_delete,
						setup, teardown),
		cmocka_unit_test_setup_teardown(undo_restores_a_put_that_landed_before_a_batch_put,
						setup, teardown),
		cmocka_unit_test_setup_teardown(undo_restores_a_put_that_landed_before_a_big_batch_put,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			undo_restores_a_put_that_landed_in_a_slice_of_a_bigger_batch, setup, teardown),
		cmocka_unit_test_setup_teardown(undo_restores_a_put_that_landed_before_an_imports_first_chunk,
						big_setup, big_teardown),
		cmocka_unit_test_setup_teardown(undo_restores_a_put_that_landed_on_a_new_key_before_its_chunk,
						big_setup, big_teardown),
		cmocka_unit_test_setup_teardown(undo_restores_a_put_that_landed_before_an_import_chunk,
						big_setup, big_teardown),
		cmocka_unit_test_setup_teardown(an_import_chunk_fits_the_stores_batch_with_its_part,
						setup, teardown),
		cmocka_unit_test_setup_teardown(a_runs_compare_and_put_holds_against_what_it_read,
						setup, teardown),
		cmocka_unit_test_setup_teardown(a_conditional_guarded_put_writes_only_a_key_that_holds,
						setup, teardown),
		cmocka_unit_test_setup_teardown(the_lease_document_is_spec_shaped, setup, teardown),
		cmocka_unit_test_setup_teardown(a_live_lease_is_busy_naming_holder_and_expiry, setup,
						teardown),
		cmocka_unit_test_setup_teardown(eight_racing_begins_one_winner, setup, teardown),
		cmocka_unit_test_setup_teardown(
			an_expired_lease_is_taken_over_and_the_old_run_is_fenced, setup, teardown),
		cmocka_unit_test_setup_teardown(an_own_lease_past_its_expiry_is_lost_not_renewed, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_broken_lease_fences_the_run, setup, teardown),
		cmocka_unit_test_setup_teardown(the_run_of_faucet_run_is_joined_by_the_environments_rule,
						setup, teardown),
		cmocka_unit_test_setup_teardown(a_joined_run_records_into_the_runs_marker, setup,
						teardown),
		cmocka_unit_test_setup_teardown(undo_restores_before_images_and_is_a_run, setup,
						teardown),
		cmocka_unit_test_setup_teardown(undo_reports_every_conflicting_key, setup, teardown),
		cmocka_unit_test_setup_teardown(undo_refuses_a_key_changed_since_unless_forced, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_crashed_undo_run_again_finishes_the_job, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_dead_undo_run_is_finished_not_undone, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_killed_run_is_abandoned_and_its_marker_undoes_it,
						setup, teardown),
		cmocka_unit_test_setup_teardown(status_keeps_50_runs_and_rollback_20_markers, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			foreign_json_in_bookkeeping_keys_is_refused_and_nothing_written, setup, teardown),
		cmocka_unit_test_setup_teardown(a_pipeline_level_run_takes_no_lease, setup, teardown),
		cmocka_unit_test_setup_teardown(
			a_key_changed_after_an_unleased_run_wrote_it_is_a_conflict, setup, teardown),
		cmocka_unit_test_setup_teardown(
			a_key_recorded_ahead_but_never_written_is_left_alone_by_undo, setup, teardown),
		cmocka_unit_test_setup_teardown(a_big_runs_status_lists_some_keys_and_the_count,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			a_guarded_put_writes_the_key_only_when_the_guard_holds, setup, teardown),
		cmocka_unit_test_setup_teardown(undo_of_a_run_never_clobbers_a_later_write, setup,
						teardown),
		cmocka_unit_test_setup_teardown(undo_of_a_killed_run_respects_a_later_import, setup,
						teardown),
		cmocka_unit_test_setup_teardown(undo_sees_a_later_run_of_any_scope, setup, teardown),
		cmocka_unit_test_setup_teardown(undo_bulk_writes_and_runs_exclude_each_other, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_retried_undo_finishes_and_never_reverses_itself,
						setup, teardown),
		cmocka_unit_test_setup_teardown(a_write_that_changes_nothing_records_no_run, setup,
						teardown),
		cmocka_unit_test_setup_teardown(an_undo_is_all_or_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(
			an_undo_in_batches_stops_at_a_key_written_after_its_plan, setup, teardown),
		cmocka_unit_test_setup_teardown(a_batch_out_of_order_is_recorded_sorted, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
		    a_killed_cli_write_keeps_its_after_image_so_undo_spares_a_later_put, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(a_delete_batch_is_recorded_and_undone, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_big_import_is_recorded_in_parts_and_undone_whole,
						big_setup, big_teardown),
		cmocka_unit_test_setup_teardown(a_big_imports_parts_conflict_and_retire_with_it,
						big_setup, big_teardown),
		cmocka_unit_test_setup_teardown(lease_writes_say_when_the_lease_may_go, setup, teardown),
		cmocka_unit_test_setup_teardown(an_undo_of_many_keys_writes_its_marker_a_few_times,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
		    undo_restores_a_put_that_landed_before_a_joined_handles_first_write, setup,
		    teardown),
	};
	char group[64];

	current = b;
	snprintf(group, sizeof(group), "runs/%s", b->name);
	return _cmocka_run_group_tests(group, tests, sizeof(tests) / sizeof(tests[0]), NULL, NULL);
}
