/*
 * runner.c - running a backfill plan: one child process per unit, at most
 * N at a time, each claimed by a lease, each outcome merged into the marker
 * as soon as the unit ends.
 *
 * The runner is a single-threaded event loop around poll().  Each running
 * unit contributes three descriptors: the read ends of its stdout and
 * stderr pipes (we keep stderr's last line for the failure message, and hand
 * every line to the caller's on_output, or pass the bytes through as they
 * are when it has none - never straight onto a terminal a progress line is
 * drawn on) and a pidfd that becomes readable when the child exits, so no
 * SIGCHLD handler is needed.  The process around us is the host's
 * (faucet_backfill_host): we install no signal handler and write no file;
 * the host tells us of a stop request (the default host, host.c, through
 * its SIGINT/SIGTERM self-pipe, whose read end we poll) and publishes the
 * metrics we keep in the registry.  The poll timeout is the next lease
 * renewal or deferred-unit retry; nothing here sleeps.
 *
 * A unit's child is started by the one process supervisor (faucet/proc.h):
 * before execve it makes only async-signal-safe system calls on what we
 * prepared, since the embedding program may have threads holding locks.
 *
 * Children run in their own process groups: a Ctrl-C at the terminal then
 * reaches only the runner, which decides what the units get (SIGTERM, and
 * SIGKILL on a second Ctrl-C) and sends it to each unit's whole group, so a
 * unit that is a shell script does not leave orphans behind.
 *
 * Order of writes for one unit: claim lease, re-read marker (someone may
 * have finished the unit meanwhile), migrate a legacy unit key, run, merge
 * the outcome into the marker, release the lease.  Recording before
 * releasing is what makes a late claimer see the outcome (see lease.c).
 * A lease we cannot release would hold its unit until it expires, so the
 * run fails at the end naming each one, rather than exit 0 over it.
 *
 * Units inherit the store: FAUCET_CONFIG or FAUCET_STATE, and for an
 * encrypted file store the *names* of the key variables
 * (FAUCET_ENCRYPTION_KEY_ENV, FAUCET_PREVIOUS_KEY_ENV), so a unit's own
 * `faucet state put` seals what it writes.  Key material never goes into
 * argv or into a variable we set.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "backfill/backfill_internal.h"
#include <faucet/keys.h>
#include <faucet/metrics.h>
#include <faucet/proc.h>

extern char **environ;

#define DEFAULT_TTL 60
#define LAST_LINE_MAX 1024
#define RETRY_MS_MAX 1000 /* how often a unit leased elsewhere is looked at again */
#define TICK_MS 1000      /* how often on_tick is called while units run */
#define STOP_ASK_MS 200   /* how often a host without a stop descriptor is asked */

/* ---- per-unit state ---------------------------------------------------------- */

/* One of a unit's output pipes, read a line at a time. */
typedef struct {
	int fd;                   /* read end, -1 once closed */
	int is_err;               /* stderr: its last line is the failure message */
	int after_cr;             /* the last byte was '\r' (a "\r\n" is one break) */
	char line[LAST_LINE_MAX]; /* the line being read */
	size_t len;
} unit_stream;

typedef struct {
	size_t index;          /* in the plan */
	pid_t pid;
	unit_stream out, err;  /* the child's stdout and stderr */
	int pid_fd;            /* pidfd, -1 when the kernel has none */
	int exited;
	int status;            /* from waitpid */
	int exec_errno;        /* the command could not be run (no process), or 0 */
	int reaped_elsewhere;  /* someone else's waitpid() took its exit status */
	faucet_bf_lease lease;
	uint64_t renew_at_ms;
	uint64_t started_ms;   /* monotonic, for the duration metric */
	int64_t started_at;    /* wall clock, for the marker */
	char last[LAST_LINE_MAX]; /* stderr's last complete non-empty line */
} running_unit;

typedef struct {
	size_t index;
	uint64_t retry_at_ms;
} deferred_unit;

typedef struct {
	faucet_store *store;
	const faucet_backfill_plan *plan;
	const faucet_backfill_run_options *o; /* points at opts */
	faucet_backfill_run_options opts;     /* the caller's, as the current version */
	const faucet_backfill_progress *cb;
	faucet_backfill_result *res;
	faucet_backfill_marker *initial; /* the marker as the run began (NULL = none) */
	char *marker_key;
	faucet_bf__marker_cache mcache;   /* the marker as this runner last wrote it */
	char *holder;
	char *config_abs;
	char *exe_name, *exe_path;        /* the command last resolved on PATH, and where */
	unsigned char *seen_leased;       /* per plan unit */
	size_t *queue, qhead, qlen;       /* ring of plan indexes still to start */
	deferred_unit *deferred;
	size_t ndeferred;
	running_unit *run;
	size_t nrun, cap;
	int64_t ttl;
	const faucet_backfill_host *host; /* the caller's, or own_host */
	faucet_backfill_host own_host;    /* a default host built from the legacy options */
	int stop_fd;                      /* the host's stop descriptor, or -1 */
	int null_fd;                      /* /dev/null for the units' stdin, or -1 */
	int ran;                          /* got past preflight: units may have run */
	int interrupted, killed;
	int fatal;                        /* a store error: no new units */
	char *fatal_msg;
	int fatal_code;
	size_t finished;
	size_t done_elsewhere, failed_elsewhere; /* of res->by_others */
	double duration_sum;              /* seconds, units that reached an outcome */
	uint64_t metrics_written_ms;      /* when metrics were last published */
	int metrics_failure_said;         /* a failed mid-run write was reported */
	faucet_buf leases_left;           /* "KEY (expires ...)" of unreleased leases */
	int lease_code;                   /* the first release failure's code */
	char *lease_msg;                  /* ... and its message */
} runner;

static void say(runner *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(runner *r, const char *fmt, ...)
{
	va_list ap;
	char buf[512];

	if (r->cb == NULL || r->cb->on_message == NULL)
		return;
	va_start(ap, fmt);
	(void)vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	r->cb->on_message(r->cb->ctx, buf);
}

static const faucet_backfill_unit *unit_at(runner *r, size_t i)
{
	return faucet_backfill_plan_unit(r->plan, i);
}

static int64_t wall_now(void)
{
	return (int64_t)time(NULL);
}

/* Remember the first store failure; it ends the run once units drain. */
static void set_fatal(runner *r, int rc)
{
	if (r->fatal)
		return;
	r->fatal = 1;
	r->fatal_code = rc;
	r->fatal_msg = faucet__strdup(faucet_error_last()->message);
	say(r, "stopping: %s", faucet_error_last()->message);
}

/* Give a unit's lease back and dispose of it.  A release that fails leaves
 * the lease in the store, blocking the unit for every runner until it
 * expires: it is remembered, said at once, and fails the run at its end. */
static void release_lease(runner *r, faucet_bf_lease *l, const char *unit)
{
	char when[FAUCET_UTC_TEXT_SIZE];

	if (faucet_bf__lease_release(r->store, l) != 0) {
		say(r, "unit %s: could not release its lease %s: %s", unit, l->key,
		    faucet_error_last()->message);
		if (r->lease_msg == NULL) {
			r->lease_code = faucet_error_last()->code;
			r->lease_msg = faucet__strdup(faucet_error_last()->message);
		}
		(void)faucet_utc_text(l->expires_at, when, sizeof(when));
		(void)faucet__buf_printf(&r->leases_left, "%s%s (expires %s)",
					r->res->leases_left ? ", " : "", l->key, when);
		r->res->leases_left++;
	}
	faucet_bf__lease_dispose(l);
}

/* ---- metrics ---------------------------------------------------------------- */

#define METRICS_EVERY_MS 1000 /* the metrics file is rewritten at most this often mid-run */

static void pipeline_labels(runner *r, char *buf, size_t size, const char *extra_name,
			    const char *extra_value)
{
	if (extra_name != NULL)
		(void)snprintf(buf, size, "pipeline=\"%s\",%s=\"%s\"", r->o->pipeline, extra_name,
			       extra_value);
	else
		(void)snprintf(buf, size, "pipeline=\"%s\"", r->o->pipeline);
}

static void count_outcome(runner *r, const char *outcome, uint64_t n)
{
	char labels[FAUCET_KEY_MAX + 64];

	pipeline_labels(r, labels, sizeof(labels), "outcome", outcome);
	(void)faucet_metrics_counter_add("faucet_backfill_units_total", labels, n);
}

/* The gauges that describe the range as it stands: units by status, the
 * share done (failed units are not progress), and when this was so. */
static void update_gauges(runner *r)
{
	char labels[FAUCET_KEY_MAX + 64];
	size_t total = r->res->total;
	size_t done = r->res->skipped + r->res->done + r->done_elsewhere;
	size_t failed = r->res->failed + r->failed_elsewhere;
	size_t running = r->nrun;
	size_t settled = done + failed + running;
	size_t pending = total > settled ? total - settled : 0;
	const struct {
		const char *status;
		size_t n;
	} by_status[] = {{"done", done}, {"failed", failed}, {"running", running}, {"pending", pending}};
	struct timespec now;

	for (size_t i = 0; i < FAUCET_ARRAY_LEN(by_status); i++) {
		pipeline_labels(r, labels, sizeof(labels), "status", by_status[i].status);
		(void)faucet_metrics_gauge_set("faucet_backfill_units", labels, (double)by_status[i].n);
	}
	pipeline_labels(r, labels, sizeof(labels), NULL, NULL);
	(void)faucet_metrics_gauge_set("faucet_backfill_progress_ratio", labels,
				       total > 0 ? (double)done / (double)total : 1.0);
	(void)clock_gettime(CLOCK_REALTIME, &now);
	(void)faucet_metrics_gauge_set("faucet_backfill_last_update_timestamp_seconds", labels,
				       (double)now.tv_sec + (double)(now.tv_nsec / 1000000) / 1000.0);
}

/* A unit's run time, as a Prometheus summary (sum and count). */
static void observe_duration(runner *r, const running_unit *ru)
{
	char labels[FAUCET_KEY_MAX + 32];

	r->duration_sum += (double)(faucet__now_ms() - ru->started_ms) / 1000.0;
	pipeline_labels(r, labels, sizeof(labels), NULL, NULL);
	(void)faucet_metrics_gauge_set("faucet_backfill_unit_duration_seconds_sum", labels,
				       r->duration_sum);
	(void)faucet_metrics_counter_add("faucet_backfill_unit_duration_seconds_count", labels, 1);
}

/* Publish the metrics mid-run (at most once a second unless `now`), so a
 * scraper follows a long backfill, not only its end.  A failure is said
 * once and the run goes on: the end of the run publishes again and reports
 * the error then. */
static void refresh_metrics(runner *r, int now)
{
	uint64_t t = faucet__now_ms();

	if (r->host->publish_metrics == NULL)
		return;
	update_gauges(r);
	if (!now && r->metrics_written_ms != 0 && t - r->metrics_written_ms < METRICS_EVERY_MS)
		return;
	r->metrics_written_ms = t;
	if (r->host->publish_metrics(r->host->ctx, 0) != 0 && !r->metrics_failure_said) {
		r->metrics_failure_said = 1;
		say(r, "%s", faucet_error_last()->message);
	}
}

/* ---- preflight: everything that can be wrong before anything is written ------ */

/* A variable name we may hand on in NAME=VALUE form (NULL = none). */
static int env_name_ok(const char *name)
{
	return name == NULL || (*name != '\0' && strchr(name, '=') == NULL);
}

static int check_options(runner *r)
{
	const faucet_backfill_run_options *o = r->o;
	const faucet_backfill_unit *first = unit_at(r, 0);
	struct sigaction chld;

	if (o->pipeline == NULL || faucet_validate_key(o->pipeline) != 0 ||
	    strstr(o->pipeline, "::") != NULL)
		return faucet_error_set(FAUCET_ECONFIG, "invalid pipeline name '%s'",
					o->pipeline ? o->pipeline : "");
	if (!o->dry_run && (o->argv == NULL || o->argv[0] == NULL || o->argv[0][0] == '\0'))
		return faucet_error_set(FAUCET_ECONFIG,
					"no command to run: give one after -- or in backfill.command");
	if (o->lease_ttl_ms != 0 &&
	    (o->lease_ttl_ms < 3000 || o->lease_ttl_ms > FAUCET_LEASE_MAX_TTL_MS))
		return faucet_error_set(FAUCET_ECONFIG,
					"lease TTL must be from 3 s to 30 days (3000 to %llu ms), "
					"not %llu ms",
					(unsigned long long)FAUCET_LEASE_MAX_TTL_MS,
					(unsigned long long)o->lease_ttl_ms);
	if (o->mode > FAUCET_BACKFILL_RESTART)
		return faucet_error_set(FAUCET_ECONFIG, "unknown backfill mode");
	if (!env_name_ok(o->key_env) || !env_name_ok(o->previous_key_env))
		return faucet_error_set(FAUCET_ECONFIG, "invalid encryption key variable name");
	/* Two runners of one range stay apart only through leases taken with
	 * compare-and-put, and the marker is merged the same way: with a
	 * read-then-write stand-in both could run a unit, or lose an outcome. */
	if (!o->dry_run && !faucet_store_supports_compare_and_put(r->store))
		return faucet_error_set(FAUCET_EUNSUPPORTED,
					"backfill needs a state store with an atomic compare-and-put "
					"(its unit leases and progress marker rely on it); the '%s' "
					"store has none",
					faucet_store_backend_name(r->store));
	/* With SIGCHLD ignored the kernel reaps units itself, and no exit
	 * status could ever be read. */
	if (!o->dry_run && sigaction(SIGCHLD, NULL, &chld) == 0 &&
	    (((chld.sa_flags & SA_SIGINFO) == 0 && chld.sa_handler == SIG_IGN) ||
	     (chld.sa_flags & SA_NOCLDWAIT) != 0))
		return faucet_error_set(FAUCET_ECONFIG,
					"backfill: SIGCHLD is ignored in this process (SIG_IGN or "
					"SA_NOCLDWAIT), so no unit's exit status could be read");
	/* Every placeholder must expand: try them on the first unit. */
	for (size_t i = 0; o->argv != NULL && o->argv[i] != NULL && first != NULL; i++) {
		char *x = NULL;
		int rc = faucet_backfill_expand(o->argv[i], first, &x);
		free(x);
		if (rc != 0)
			return rc;
	}
	return 0;
}

static int load_initial_marker(runner *r)
{
	faucet_backfill_marker *m = NULL;
	int rc;

	r->marker_key = faucet_backfill_marker_key(r->o->pipeline, faucet_backfill_plan_hash(r->plan));
	if (r->marker_key == NULL)
		return FAUCET_ENOMEM;
	rc = faucet_backfill_marker_load(r->store, r->marker_key, &m);
	if (rc == FAUCET_ECONFIG)
		return faucet__error_wrap("cannot resume or restart: corrupt backfill marker");
	if (rc != 0)
		return rc;
	if (m != NULL &&
	    strcmp(faucet_backfill_marker_descriptor(m), faucet_backfill_plan_descriptor(r->plan)) != 0) {
		rc = faucet_error_set(FAUCET_ECONFIG, "backfill marker %s describes another range ('%s')",
				      r->marker_key, faucet_backfill_marker_descriptor(m));
		faucet_backfill_marker_free(m);
		return rc;
	}
	if (m != NULL && r->o->mode == FAUCET_BACKFILL_FRESH) {
		rc = faucet_error_set(FAUCET_ECONFIG,
				      "a backfill of this range already ran (%zu done, %zu failed; "
				      "marker %s): use --resume to continue it or --restart to start over",
				      faucet_backfill_marker_done_count(m),
				      faucet_backfill_marker_failed_count(m), r->marker_key);
		faucet_backfill_marker_free(m);
		return rc;
	}
	if (r->o->mode == FAUCET_BACKFILL_RESTART) {
		faucet_backfill_marker_free(m);
		m = NULL;
	}
	r->initial = m;
	return 0;
}

/* --restart: the marker and every unit's scoped key (current and legacy
 * rendering, or migration would bring the old value straight back). */
static int discard_previous_run(runner *r)
{
	const char *hash = faucet_backfill_plan_hash(r->plan);
	int rc = faucet_store_delete(r->store, r->marker_key);

	for (size_t i = 0; rc == 0 && i < r->res->total; i++) {
		char *k = faucet_backfill_unit_key(r->o->pipeline, hash, unit_at(r, i)->id);
		char *legacy = faucet_backfill_legacy_unit_key(r->o->pipeline, unit_at(r, i)->id);
		if (k == NULL || legacy == NULL)
			rc = FAUCET_ENOMEM;
		if (rc == 0)
			rc = faucet_store_delete(r->store, k);
		if (rc == 0)
			rc = faucet_store_delete(r->store, legacy);
		free(k);
		free(legacy);
	}
	return rc;
}

/* ---- starting a unit ----------------------------------------------------------- */

static void free_strings(char **v)
{
	for (size_t i = 0; v != NULL && v[i] != NULL; i++)
		free(v[i]);
	free(v);
}

/* The child's environment: ours, minus any store selection or backfill
 * variables we are about to set, plus the unit's values. */
static int build_env(runner *r, const faucet_backfill_unit *u, const char *state_key,
		     char ***env_out)
{
	static const char *const names[] = {"FAUCET_CONFIG", "FAUCET_STATE", "FAUCET_ENCRYPTION_KEY_ENV",
					    "FAUCET_PREVIOUS_KEY_ENV", "FAUCET_BACKFILL_START",
					    "FAUCET_BACKFILL_END", "FAUCET_BACKFILL_START_DATE",
					    "FAUCET_BACKFILL_END_DATE", "FAUCET_BACKFILL_START_UNIX",
					    "FAUCET_BACKFILL_END_UNIX", "FAUCET_BACKFILL_UNIT",
					    "FAUCET_BACKFILL_STATE_KEY", NULL};
	char *set[16] = {0};
	size_t k = 0;
	int rc = 0;

	set[k++] = faucet__sprintf("FAUCET_BACKFILL_START=%s", u->start);
	set[k++] = faucet__sprintf("FAUCET_BACKFILL_END=%s", u->end);
	set[k++] = faucet__sprintf("FAUCET_BACKFILL_START_DATE=%s", u->start_date);
	set[k++] = faucet__sprintf("FAUCET_BACKFILL_END_DATE=%s", u->end_date);
	set[k++] = faucet__sprintf("FAUCET_BACKFILL_START_UNIX=%lld", (long long)u->start_unix);
	set[k++] = faucet__sprintf("FAUCET_BACKFILL_END_UNIX=%lld", (long long)u->end_unix);
	set[k++] = faucet__sprintf("FAUCET_BACKFILL_UNIT=%s", u->id);
	set[k++] = faucet__sprintf("FAUCET_BACKFILL_STATE_KEY=%s", state_key);
	if (r->config_abs != NULL)
		set[k++] = faucet__sprintf("FAUCET_CONFIG=%s", r->config_abs);
	else if (r->o->state_url != NULL)
		set[k++] = faucet__sprintf("FAUCET_STATE=%s", r->o->state_url);
	if (r->o->key_env != NULL)
		set[k++] = faucet__sprintf("FAUCET_ENCRYPTION_KEY_ENV=%s", r->o->key_env);
	if (r->o->previous_key_env != NULL)
		set[k++] = faucet__sprintf("FAUCET_PREVIOUS_KEY_ENV=%s", r->o->previous_key_env);
	for (size_t i = 0; i < k; i++)
		if (set[i] == NULL)
			rc = FAUCET_ENOMEM;
	if (rc == 0)
		rc = faucet_proc_env(names, (const char *const *)set, env_out);
	for (size_t i = 0; i < k; i++)
		free(set[i]);
	return rc;
}

static int build_argv(runner *r, const faucet_backfill_unit *u, char ***out)
{
	size_t n = 0;
	char **argv;

	while (r->o->argv[n] != NULL)
		n++;
	argv = faucet__calloc(n + 1, sizeof(*argv));
	if (argv == NULL)
		return FAUCET_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		int rc = faucet_backfill_expand(r->o->argv[i], u, &argv[i]);
		if (rc != 0) {
			free_strings(argv);
			return rc;
		}
	}
	*out = argv;
	return 0;
}

static const char *resolved_command(runner *r, const char *name)
{
	if (r->exe_name == NULL || strcmp(r->exe_name, name) != 0) {
		free(r->exe_name);
		free(r->exe_path);
		r->exe_path = NULL;
		r->exe_name = faucet__strdup(name);
		/* Resolved once per command rather than per unit: execvp tries
		 * every PATH entry in turn, a failed execve per entry per unit. */
		if (r->exe_name != NULL && faucet_proc_find(name, &r->exe_path) == FAUCET_ENOMEM) {
			free(r->exe_name);
			r->exe_name = NULL;
		}
		faucet_error_clear();
	}
	return r->exe_path;
}

/* The command must exist before any unit runs: otherwise every unit would
 * fail alike (exit 127), each recorded as a failure.  A first argument
 * built from placeholders is left to each unit. */
static int check_command(runner *r)
{
	const char *name;

	if (r->o->dry_run || strstr(r->o->argv[0], "${backfill.") != NULL)
		return 0;
	name = r->o->argv[0];
	if (resolved_command(r, name) != NULL)
		return 0;
	if (r->exe_name == NULL)
		return FAUCET_ENOMEM;
	if (strchr(name, '/') != NULL)
		return faucet_error_set(FAUCET_ECONFIG, "command '%s' does not exist or is not "
					"executable", name);
	return faucet_error_set(FAUCET_ECONFIG, "command '%s' was not found on PATH", name);
}

static void close_pair(int fds[2])
{
	if (fds[0] >= 0)
		close(fds[0]);
	if (fds[1] >= 0)
		close(fds[1]);
	fds[0] = fds[1] = -1;
}

/* Two close-on-exec pipes: the unit's stdout and its stderr. */
static int make_pipes(int out[2], int err[2])
{
	out[0] = out[1] = err[0] = err[1] = -1;
	if (pipe2(out, O_CLOEXEC) == 0 && pipe2(err, O_CLOEXEC) == 0)
		return 0;
	int err_no = errno;
	close_pair(out);
	close_pair(err);
	return faucet__error_os(FAUCET_EIO, err_no, "backfill: cannot create a pipe");
}

/* Start the unit's process (faucet/proc.h): its own process group, stdin
 * from /dev/null, stdout and stderr into our pipes.  A command that cannot
 * be executed (removed since preflight, not executable, a bad interpreter)
 * is not an error of the run: the unit is entered as already ended with
 * ru->exec_errno, and fails with that message. */
static int spawn(runner *r, running_unit *ru, const char *state_key)
{
	const faucet_backfill_unit *u = unit_at(r, ru->index);
	faucet_proc_options po = FAUCET_PROC_OPTIONS_INIT;
	char **argv = NULL, **env = NULL, *path = NULL;
	const char *found;
	int outfd[2], errfd[2], rc;
	pid_t pid;

	if ((rc = build_argv(r, u, &argv)) != 0)
		return rc;
	if ((rc = build_env(r, u, state_key, &env)) != 0) {
		free_strings(argv);
		return rc;
	}
	ru->pid = 0;
	ru->exec_errno = 0;
	ru->last[0] = '\0';
	ru->started_ms = faucet__now_ms();
	ru->started_at = wall_now();
	/* A copy, since the cache changes with the next unit's argv[0].  A
	 * path that fails the check is still tried, for execve's reason why. */
	found = resolved_command(r, argv[0]);
	if (r->exe_name == NULL) {
		rc = FAUCET_ENOMEM;
		goto out;
	}
	if (found == NULL && strchr(argv[0], '/') == NULL) {
		/* Gone from PATH since preflight, or named by a placeholder. */
		ru->exec_errno = ENOENT;
		(void)snprintf(ru->last, sizeof(ru->last), "command '%s' was not found on PATH",
			       argv[0]);
		ru->exited = 1;
		goto out;
	}
	if ((path = faucet__strdup(found != NULL ? found : argv[0])) == NULL) {
		rc = FAUCET_ENOMEM;
		goto out;
	}
	if ((rc = make_pipes(outfd, errfd)) != 0)
		goto out;
	/* No fflush(NULL) first: the child execs or _exits, so it never
	 * flushes a copy of our stdio buffers, and flushing the embedding
	 * program's streams (one may be a full pipe) is not ours to do. */
	po.path = path;
	po.argv = argv;
	po.envp = env;
	po.fd[0] = r->null_fd;
	po.fd[1] = outfd[1];
	po.fd[2] = errfd[1];
	rc = faucet_proc_spawn(&po, &pid, &ru->exec_errno);
	close(outfd[1]);
	close(errfd[1]);
	if (rc != 0 || ru->exec_errno != 0) {
		close(outfd[0]);
		close(errfd[0]);
	}
	if (rc != 0) {
		rc = faucet__error_wrap("backfill: cannot start unit %s", u->id);
		goto out;
	}
	if (ru->exec_errno != 0) {
		faucet_error_clear();
		(void)snprintf(ru->last, sizeof(ru->last), "cannot run '%s': %s", path,
			       strerror(ru->exec_errno));
		ru->exited = 1;
		goto out;
	}
	/* The child set its process group before the exec we waited for, so a
	 * kill of the group right away finds it. */
	(void)fcntl(errfd[0], F_SETFL, O_NONBLOCK);
	(void)fcntl(outfd[0], F_SETFL, O_NONBLOCK);
	ru->pid = pid;
	ru->err = (unit_stream){.fd = errfd[0], .is_err = 1};
	ru->out = (unit_stream){.fd = outfd[0], .is_err = 0};
	ru->pid_fd = (int)syscall(SYS_pidfd_open, pid, 0);
	ru->exited = 0;
	rc = 0;
out:
	free(path);
	free_strings(argv);
	free(env);
	return rc;
}

/* Whether another runner settled unit i while we were not looking: done, or
 * failed when it was not failed (so) as we began, or after we saw it leased. */
static int settled_elsewhere(runner *r, size_t i, const faucet_backfill_marker *now)
{
	const char *id = unit_at(r, i)->id, *err_now = NULL, *err_then = NULL;
	faucet_backfill_status st = faucet_backfill_marker_status(now, id, &err_now), then;

	if (st == FAUCET_BACKFILL_DONE)
		return 1;
	if (st != FAUCET_BACKFILL_FAILED)
		return 0;
	if (r->seen_leased[i])
		return 1;
	then = r->initial ? faucet_backfill_marker_status(r->initial, id, &err_then)
			  : FAUCET_BACKFILL_PENDING;
	return then != FAUCET_BACKFILL_FAILED || strcmp(err_now, err_then) != 0;
}

static void unit_settled_elsewhere(runner *r, size_t i, const faucet_backfill_marker *m)
{
	if (faucet_backfill_marker_status(m, unit_at(r, i)->id, NULL) == FAUCET_BACKFILL_DONE)
		r->done_elsewhere++;
	else
		r->failed_elsewhere++;
	r->res->by_others++;
	r->finished++;
	say(r, "window %s/%s (unit %s) was finished by another runner", unit_at(r, i)->start,
	    unit_at(r, i)->end, unit_at(r, i)->id);
	if (r->cb && r->cb->on_unit_end)
		r->cb->on_unit_end(r->cb->ctx, unit_at(r, i), FAUCET_BACKFILL_PENDING, NULL,
				   r->finished, r->res->total);
}

static void defer(runner *r, size_t i, int64_t held_until)
{
	uint64_t wait_ms = (uint64_t)r->ttl * 1000 / 3;

	if (wait_ms > RETRY_MS_MAX)
		wait_ms = RETRY_MS_MAX;
	if (!r->seen_leased[i]) {
		char until[40];

		(void)faucet_utc_text(held_until, until, sizeof(until));
		say(r, "window %s/%s (unit %s) is leased by another runner until %s; coming back to "
		    "it later", unit_at(r, i)->start, unit_at(r, i)->end, unit_at(r, i)->id, until);
	}
	r->seen_leased[i] = 1;
	r->deferred[r->ndeferred].index = i;
	r->deferred[r->ndeferred].retry_at_ms = faucet__now_ms() + wait_ms;
	r->ndeferred++;
}

/* Claim unit i and start it; a unit leased elsewhere is deferred, one
 * settled elsewhere dropped.  Store errors are returned (fatal). */
static int try_start(runner *r, size_t i)
{
	const faucet_backfill_unit *u = unit_at(r, i);
	const char *hash = faucet_backfill_plan_hash(r->plan);
	running_unit *ru = &r->run[r->nrun];
	const faucet_backfill_marker *now = NULL;
	char *key = NULL, *legacy = NULL;
	const char *cands[1];
	int claimed = 0, rc;
	int64_t held_until = 0;

	memset(ru, 0, sizeof(*ru));
	ru->index = i;
	ru->out.fd = ru->err.fd = ru->pid_fd = -1;
	key = faucet_backfill_unit_key(r->o->pipeline, hash, u->id);
	legacy = faucet_backfill_legacy_unit_key(r->o->pipeline, u->id);
	if (key == NULL || legacy == NULL) {
		rc = FAUCET_ENOMEM;
		goto out;
	}
	rc = faucet_bf__lease_claim(r->store, key, r->holder, wall_now(), r->ttl, &ru->lease,
				    &claimed, &held_until);
	if (rc != 0)
		goto out;
	if (!claimed) {
		defer(r, i, held_until);
		goto out;
	}
	rc = faucet_bf__marker_load_cached(r->store, r->marker_key, &r->mcache, &now);
	if (rc == 0 && now != NULL && settled_elsewhere(r, i, now)) {
		release_lease(r, &ru->lease, u->id);
		unit_settled_elsewhere(r, i, now);
		goto out;
	}
	cands[0] = legacy;
	if (rc == 0) {
		faucet_migration_kind kind = FAUCET_MIGRATION_FRESH;
		rc = faucet_migrate_state_key(r->store, key, cands, 1, &kind, NULL);
		if (rc == 0 && kind == FAUCET_MIGRATION_MOVED)
			say(r, "unit %s: moved its state from %s to %s", u->id, legacy, key);
	}
	if (rc == 0)
		rc = spawn(r, ru, key);
	if (rc != 0) {
		/* Keep the error that stopped us, not the release's. */
		char *msg = faucet__strdup(faucet_error_last()->message);
		release_lease(r, &ru->lease, u->id);
		(void)faucet_error_set(rc, "%s", msg != NULL ? msg : "cannot start the unit");
		free(msg);
		goto out;
	}
	ru->renew_at_ms = faucet__now_ms() + (uint64_t)r->ttl * 1000 / 3;
	r->nrun++;
	if (r->cb && r->cb->on_unit_start)
		r->cb->on_unit_start(r->cb->ctx, u);
	refresh_metrics(r, 0);
out:
	free(key);
	free(legacy);
	return rc;
}

/* ---- a unit's output and end ------------------------------------------------------ */

/* A complete line of a unit's output: to the caller, and stderr's last
 * non-empty line kept for the failure message. */
static void emit_line(runner *r, running_unit *ru, unit_stream *st)
{
	st->line[st->len] = '\0';
	if (st->is_err && st->len > 0)
		memcpy(ru->last, st->line, st->len + 1);
	if (r->cb && r->cb->on_output)
		r->cb->on_output(r->cb->ctx, unit_at(r, ru->index), st->is_err, st->line);
	st->len = 0;
}

static void split_lines(runner *r, running_unit *ru, unit_stream *st, const char *buf, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		char c = buf[k];

		if (c == '\n') {
			/* "\r\n" ends one line, not two. */
			if (!st->after_cr || st->len > 0)
				emit_line(r, ru, st);
		} else if (c == '\r') {
			if (st->len > 0)
				emit_line(r, ru, st);
		} else {
			if (st->len == sizeof(st->line) - 1)
				emit_line(r, ru, st); /* a very long line goes out in pieces */
			st->line[st->len++] = c;
		}
		st->after_cr = c == '\r';
	}
}

/* The stream reached its end: close it and hand on a last unfinished line. */
static void close_stream(runner *r, running_unit *ru, unit_stream *st)
{
	if (st->fd < 0)
		return;
	close(st->fd);
	st->fd = -1;
	if (st->len > 0)
		emit_line(r, ru, st);
}

/* Read what the pipe holds now.  Without an on_output callback the bytes
 * go through to our own stdout or stderr as they came. */
static void drain_stream(runner *r, running_unit *ru, unit_stream *st)
{
	char buf[4096];

	while (st->fd >= 0) {
		ssize_t n = read(st->fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0 || errno != EAGAIN)
				close_stream(r, ru, st);
			return;
		}
		if (r->cb == NULL || r->cb->on_output == NULL)
			(void)!write(st->is_err ? 2 : 1, buf, (size_t)n);
		split_lines(r, ru, st, buf, (size_t)n);
	}
}

static char *failure_message(const running_unit *ru)
{
	const char *sep = ru->last[0] ? ": " : "";

	if (ru->exec_errno != 0)
		return faucet__strdup(ru->last); /* no process: why not, and that is all */
	if (ru->reaped_elsewhere)
		return faucet__sprintf("exit status unknown: another waitpid() in this process "
				       "reaped the unit%s%s", sep, ru->last);
	if (WIFSIGNALED(ru->status))
		return faucet__sprintf("killed by signal %d%s%s", WTERMSIG(ru->status), sep, ru->last);
	return faucet__sprintf("exit status %d%s%s", WEXITSTATUS(ru->status), sep, ru->last);
}

/* Merge the unit's outcome, its attempt's times and the range's zone into
 * the marker. */
static int record_outcome(runner *r, const running_unit *ru, const char *error)
{
	faucet_backfill_outcome o;
	char started[40], ended[40];

	(void)faucet_utc_text(ru->started_at, started, sizeof(started));
	(void)faucet_utc_text(wall_now(), ended, sizeof(ended));
	memset(&o, 0, sizeof(o));
	o.descriptor = faucet_backfill_plan_descriptor(r->plan);
	o.timezone = faucet_backfill_plan_timezone(r->plan);
	o.unit = unit_at(r, ru->index)->id;
	o.error = error;
	o.started_at = started[0] ? started : NULL;
	o.ended_at = ended[0] ? ended : NULL;
	return faucet_bf__marker_record_cached(r->store, r->marker_key, &o, &r->mcache);
}

/* The child has exited: record its outcome and give the lease back. */
static void finish_unit(runner *r, size_t slot)
{
	running_unit *ru = &r->run[slot];
	const faucet_backfill_unit *u = unit_at(r, ru->index);
	int ok = ru->exec_errno == 0 && !ru->reaped_elsewhere && WIFEXITED(ru->status) && WEXITSTATUS(ru->status) == 0;
	faucet_backfill_status st = ok ? FAUCET_BACKFILL_DONE : FAUCET_BACKFILL_FAILED;
	char *error = NULL;
	int rc = 0;

	/* Leave the pipes to EOF: a grandchild may hold them, but we have what
	 * we need. */
	drain_stream(r, ru, &ru->out);
	close_stream(r, ru, &ru->out);
	drain_stream(r, ru, &ru->err);
	close_stream(r, ru, &ru->err);
	if (ru->pid_fd >= 0)
		close(ru->pid_fd);
	if (!ok && r->interrupted) {
		/* Stopped by us: neither done nor failed - it stays pending. */
		st = FAUCET_BACKFILL_PENDING;
		r->res->pending++;
	} else {
		if (!ok && (error = failure_message(ru)) == NULL)
			rc = FAUCET_ENOMEM;
		if (rc == 0)
			rc = record_outcome(r, ru, error);
		if (rc != 0) {
			set_fatal(r, rc);
			st = FAUCET_BACKFILL_PENDING;
			r->res->pending++;
		} else {
			if (ok)
				r->res->done++;
			else
				r->res->failed++;
			count_outcome(r, ok ? "ok" : "err", 1);
			observe_duration(r, ru);
			r->finished++;
		}
	}
	release_lease(r, &ru->lease, u->id);
	if (r->cb && r->cb->on_unit_end)
		r->cb->on_unit_end(r->cb->ctx, u, st, error, r->finished, r->res->total);
	free(error);
	r->run[slot] = r->run[--r->nrun];
	refresh_metrics(r, 0);
}

/* ---- the loop ------------------------------------------------------------------------ */

static void signal_units(runner *r, int sig)
{
	for (size_t i = 0; i < r->nrun; i++) {
		if (!r->run[i].exited)
			(void)kill(-r->run[i].pid, sig);
	}
}

/* Ask the host whether a stop was requested, until it says no more: the
 * first request stops the units (SIGTERM), the second kills them. */
static void handle_stop(runner *r)
{
	int sig;

	if (r->host->stop_requested == NULL)
		return;
	while ((sig = r->host->stop_requested(r->host->ctx)) > 0) {
		if (!r->interrupted) {
			r->interrupted = sig;
			say(r, "interrupted by signal %d: stopping %zu running unit(s); "
			    "interrupt again to kill them", sig, r->nrun);
			signal_units(r, SIGTERM);
			refresh_metrics(r, 1);
		} else if (!r->killed) {
			r->killed = 1;
			signal_units(r, SIGKILL);
		}
	}
}

static void renew_leases(runner *r, uint64_t now_ms)
{
	for (size_t i = 0; i < r->nrun; i++) {
		running_unit *ru = &r->run[i];
		int kept = 0, rc;

		if (ru->exited || now_ms < ru->renew_at_ms)
			continue;
		ru->renew_at_ms = now_ms + (uint64_t)r->ttl * 1000 / 3;
		rc = faucet_bf__lease_renew(r->store, &ru->lease, wall_now(), r->ttl, &kept);
		if (rc == FAUCET_ELEASELOST)
			say(r, "unit %s: %s", unit_at(r, ru->index)->id, faucet_error_last()->message);
		else if (rc != 0)
			say(r, "unit %s: lease renewal failed: %s", unit_at(r, ru->index)->id,
			    faucet_error_last()->message);
		else if (!kept)
			say(r, "unit %s: its lease was taken over by another runner",
			    unit_at(r, ru->index)->id);
		/* A lost lease is never tried again: it would only say so again. */
		if (rc == FAUCET_ELEASELOST || (rc == 0 && !kept))
			ru->renew_at_ms = UINT64_MAX;
	}
}

/* The queue is a ring of plan indexes: a unit is in it, deferred or
 * running at most once, so `total` slots always suffice. */
static void queue_push(runner *r, size_t index)
{
	r->queue[(r->qhead + r->qlen) % r->res->total] = index;
	r->qlen++;
}

/* Deferred units whose retry time has come go back to the queue; those the
 * marker now records are dropped. */
static int requeue_deferred(runner *r, uint64_t now_ms)
{
	faucet_backfill_marker *m = NULL;
	size_t kept = 0;
	int rc, due = 0;

	for (size_t i = 0; i < r->ndeferred; i++)
		due |= r->deferred[i].retry_at_ms <= now_ms;
	if (!due)
		return 0;
	rc = faucet_backfill_marker_load(r->store, r->marker_key, &m);
	if (rc != 0)
		return rc;
	for (size_t i = 0; i < r->ndeferred; i++) {
		deferred_unit d = r->deferred[i];
		if (d.retry_at_ms > now_ms)
			r->deferred[kept++] = d;
		else if (m != NULL && settled_elsewhere(r, d.index, m))
			unit_settled_elsewhere(r, d.index, m);
		else
			queue_push(r, d.index);
	}
	r->ndeferred = kept;
	faucet_backfill_marker_free(m);
	return 0;
}

static int poll_timeout(runner *r, uint64_t now_ms)
{
	uint64_t next = UINT64_MAX;

	for (size_t i = 0; i < r->nrun; i++) {
		if (r->run[i].exited)
			return 0; /* a unit whose command could not run: finish it now */
		if (r->run[i].pid_fd < 0)
			next = now_ms + 50; /* no pidfd: look for the exit ourselves */
		if (r->run[i].renew_at_ms < next)
			next = r->run[i].renew_at_ms;
	}
	if (!r->interrupted && !r->fatal) {
		for (size_t i = 0; i < r->ndeferred; i++)
			if (r->deferred[i].retry_at_ms < next)
				next = r->deferred[i].retry_at_ms;
	}
	if (r->cb && r->cb->on_tick && r->nrun > 0 && next > now_ms + TICK_MS)
		next = now_ms + TICK_MS;
	/* A host that can only be asked: ask it often enough to stop promptly. */
	if (r->host->stop_requested && r->stop_fd < 0 && r->nrun > 0 && next > now_ms + STOP_ASK_MS)
		next = now_ms + STOP_ASK_MS;
	if (next == UINT64_MAX)
		return -1;
	return next <= now_ms ? 0 : (int)(next - now_ms > INT_MAX ? INT_MAX : next - now_ms);
}

static void wait_once(runner *r)
{
	struct pollfd *fds = r->run ? (struct pollfd *)(r->run + r->cap) : NULL;
	size_t n = 0;
	int timeout;

	/* poll() ignores a negative descriptor: a host without one. */
	fds[n++] = (struct pollfd){.fd = r->stop_fd, .events = POLLIN};
	for (size_t i = 0; i < r->nrun; i++) {
		fds[n++] = (struct pollfd){.fd = r->run[i].out.fd, .events = POLLIN};
		fds[n++] = (struct pollfd){.fd = r->run[i].err.fd, .events = POLLIN};
		fds[n++] = (struct pollfd){.fd = r->run[i].pid_fd, .events = POLLIN};
	}
	/* A stop requested while units were starting is acted on before we
	 * wait for them. */
	handle_stop(r);
	timeout = poll_timeout(r, faucet__now_ms());
	if (poll(fds, n, timeout) < 0 && errno != EINTR)
		say(r, "poll failed: %s", strerror(errno));
	handle_stop(r);
	if (r->cb && r->cb->on_tick)
		r->cb->on_tick(r->cb->ctx);
	for (size_t i = 0; i < r->nrun; i++) {
		running_unit *ru = &r->run[i];
		drain_stream(r, ru, &ru->out);
		drain_stream(r, ru, &ru->err);
		if (!ru->exited) {
			pid_t w = waitpid(ru->pid, &ru->status, WNOHANG);
			if (w == ru->pid) {
				ru->exited = 1;
			} else if (w < 0 && errno == ECHILD) {
				/* The embedding program reaped it (a SIGCHLD handler
				 * calling waitpid(-1)): gone, outcome unknown.  Waiting
				 * on would wait forever. */
				ru->exited = 1;
				ru->reaped_elsewhere = 1;
			}
		}
	}
	for (size_t i = r->nrun; i-- > 0;) {
		if (r->run[i].exited)
			finish_unit(r, i);
	}
	renew_leases(r, faucet__now_ms());
}

static int run_loop(runner *r)
{
	unsigned conc = r->o->concurrency ? r->o->concurrency : 1;

	for (;;) {
		int rc;

		while (!r->interrupted && !r->fatal && r->nrun < conc && r->qlen > 0) {
			size_t i = r->queue[r->qhead];
			r->qhead = (r->qhead + 1) % r->res->total;
			r->qlen--;
			if ((rc = try_start(r, i)) != 0)
				set_fatal(r, rc);
		}
		if (r->nrun == 0 && (r->qlen == 0 || r->interrupted || r->fatal) &&
		    (r->ndeferred == 0 || r->interrupted || r->fatal))
			return 0;
		wait_once(r);
		if (!r->interrupted && !r->fatal && (rc = requeue_deferred(r, faucet__now_ms())) != 0)
			set_fatal(r, rc);
	}
}

/* ---- the entry point ----------------------------------------------------------------- */

static int prepare(runner *r)
{
	size_t n = r->res->total, conc = r->o->concurrency ? r->o->concurrency : 1;

	/* Unit leases expire at whole seconds: the TTL rounded up. */
	r->ttl = r->o->lease_ttl_ms ? (int64_t)((r->o->lease_ttl_ms + 999) / 1000) : DEFAULT_TTL;
	r->holder = faucet_bf__lease_holder();
	r->seen_leased = faucet__calloc(n ? n : 1, 1);
	r->queue = faucet__calloc(n ? n : 1, sizeof(*r->queue));
	r->deferred = faucet__calloc(n ? n : 1, sizeof(*r->deferred));
	/* One allocation for the running slots and the pollfd array after them. */
	r->cap = conc;
	r->run = faucet__calloc(1, conc * sizeof(*r->run) + (3 * conc + 1) * sizeof(struct pollfd));
	if (r->holder == NULL || r->seen_leased == NULL || r->queue == NULL || r->deferred == NULL ||
	    r->run == NULL)
		return FAUCET_ENOMEM;
	if (r->o->config_path != NULL) {
		r->config_abs = realpath(r->o->config_path, NULL);
		if (r->config_abs == NULL)
			return faucet__error_os(FAUCET_ECONFIG, errno, "config file %s",
						r->o->config_path);
	}
	/* Opened before any fork, above 0-2: the child only dup2s it. */
	if (!r->o->dry_run) {
		r->null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (r->null_fd < 0)
			return faucet__error_os(FAUCET_EIO, errno, "backfill: cannot open /dev/null");
	}
	return 0;
}

static void release_runner(runner *r)
{
	faucet_backfill_marker_free(r->initial);
	free(r->marker_key);
	faucet_bf__marker_cache_dispose(&r->mcache);
	free(r->holder);
	free(r->config_abs);
	free(r->exe_name);
	free(r->exe_path);
	free(r->seen_leased);
	free(r->queue);
	free(r->deferred);
	free(r->run);
	free(r->fatal_msg);
	free(r->lease_msg);
	faucet__buf_dispose(&r->leases_left);
	if (r->null_fd >= 0)
		close(r->null_fd);
}

static void report_plan(runner *r, const size_t *todo, size_t ntodo)
{
	if (r->cb && r->cb->on_plan)
		r->cb->on_plan(r->cb->ctx, r->res->total, r->res->skipped, ntodo);
	if (!r->o->dry_run || r->cb == NULL || r->cb->on_planned == NULL)
		return;
	for (size_t i = 0; i < r->res->total; i++) {
		const faucet_backfill_unit *u = unit_at(r, i);
		faucet_backfill_status st = r->initial
			? faucet_backfill_marker_status(r->initial, u->id, NULL)
			: FAUCET_BACKFILL_PENDING;
		r->cb->on_planned(r->cb->ctx, u, st);
	}
	(void)todo;
}

/* A range that has no marker yet gets one before its first unit runs: the
 * plan with every unit pending (no unit recorded) and the zone, so a run
 * interrupted during its first unit is still seen by `backfill status` and
 * refused by a fresh run.  Created only where no marker is: a runner that
 * loses that race leaves the other's in place (its outcomes merge into it). */
static int create_marker(runner *r)
{
	faucet_backfill_marker *m = NULL;
	faucet_value *v = NULL;
	int written = 0, rc;

	if (r->initial != NULL)
		return 0;
	rc = faucet_backfill_marker_new(&m, faucet_backfill_plan_descriptor(r->plan));
	if (rc == 0)
		rc = faucet_backfill_marker_set_timezone(m, faucet_backfill_plan_timezone(r->plan));
	if (rc == 0)
		rc = faucet_backfill_marker_to_value(m, &v);
	if (rc == 0)
		rc = faucet_store_compare_and_put(r->store, r->marker_key, NULL, v, &written);
	faucet_value_free(v);
	faucet_backfill_marker_free(m);
	return rc;
}

static int run_units(runner *r, const size_t *todo, size_t ntodo)
{
	int rc;

	if (r->o->mode == FAUCET_BACKFILL_RESTART && (rc = discard_previous_run(r)) != 0)
		return rc;
	if ((rc = create_marker(r)) != 0)
		return rc;
	r->ran = 1;
	memcpy(r->queue, todo, ntodo * sizeof(*todo));
	r->qlen = ntodo;
	r->finished = r->res->skipped;
	if (r->host->start != NULL && (rc = r->host->start(r->host->ctx)) != 0)
		return rc;
	r->stop_fd = r->host->stop_fd ? r->host->stop_fd(r->host->ctx) : -1;
	if (r->res->skipped > 0)
		count_outcome(r, "skipped", r->res->skipped);
	refresh_metrics(r, 1);
	rc = run_loop(r);
	if (r->host->finish != NULL)
		r->host->finish(r->host->ctx);
	r->res->pending = r->res->total - r->res->skipped - r->res->done - r->res->failed -
			  r->res->by_others;
	r->res->signal = r->interrupted;
	return rc;
}

/* Each version's size of faucet_backfill_run_options. */
static const size_t backfill_run_options_sizes[] = {sizeof(faucet_backfill_run_options)};

int faucet_backfill_run_options_init(faucet_backfill_run_options *o, unsigned int version)
{
	static const faucet_backfill_run_options defaults = FAUCET_BACKFILL_RUN_OPTIONS_INIT;

	return faucet__options_init(o, &defaults, backfill_run_options_sizes, version,
				    FAUCET_BACKFILL_RUN_OPTIONS_VERSION,
				    "faucet_backfill_run_options");
}

int faucet_backfill_run(faucet_store *s, const faucet_backfill_plan *plan,
			const faucet_backfill_run_options *opts, faucet_backfill_result *result)
{
	runner r;
	size_t *todo = NULL, ntodo = 0;
	int rc;

	if (s == NULL || plan == NULL || opts == NULL || result == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_backfill_run: NULL argument");
	memset(result, 0, sizeof(*result));
	memset(&r, 0, sizeof(r));
	rc = faucet__options_load(&r.opts, sizeof(r.opts), opts, backfill_run_options_sizes,
				  FAUCET_BACKFILL_RUN_OPTIONS_VERSION, "faucet_backfill_run_options");
	if (rc != 0)
		return rc;
	r.store = s;
	r.plan = plan;
	r.o = &r.opts;
	r.cb = r.opts.progress;
	r.res = result;
	r.stop_fd = r.null_fd = -1;
	result->total = faucet_backfill_plan_count(plan);

	/* The process machinery is the host's: with the caller's own host the
	 * legacy switches would be a second, conflicting source of it. */
	if (opts->host != NULL && (opts->handle_signals || opts->metrics_file != NULL))
		return faucet_error_set(FAUCET_EINVALID, "faucet_backfill_run: handle_signals and "
					"metrics_file belong to the host when one is given");
	if (opts->host != NULL) {
		r.host = opts->host;
	} else {
		rc = faucet_backfill_default_host(&r.own_host, opts->handle_signals,
						  opts->metrics_file);
		if (rc != 0)
			return rc;
		r.host = &r.own_host;
	}

	rc = check_options(&r);
	if (rc == 0)
		rc = check_command(&r);
	if (rc == 0)
		rc = load_initial_marker(&r);
	if (rc == 0)
		rc = faucet_backfill_split(plan, r.initial, &todo, &ntodo, &result->skipped);
	if (rc == 0)
		rc = prepare(&r);
	if (rc == 0) {
		report_plan(&r, todo, ntodo);
		if (r.o->dry_run)
			result->pending = ntodo;
		else
			rc = run_units(&r, todo, ntodo);
	}
	if (rc == 0 && r.fatal) {
		rc = faucet_error_set(r.fatal_code, "%s", r.fatal_msg ? r.fatal_msg : "store error");
	}
	if (rc == 0 && result->leases_left > 0) {
		rc = faucet_error_set(r.lease_code ? r.lease_code : FAUCET_ERROR,
				      "could not release %zu unit lease(s), which keep their units "
				      "from running until they expire: %s; first error: %s",
				      result->leases_left,
				      r.leases_left.ptr ? r.leases_left.ptr : "",
				      r.lease_msg ? r.lease_msg : "unknown");
	}
	/* Metrics describe what ran, so they are published even after a store
	 * error - but not when preflight refused the run (nothing written). */
	if (r.ran && r.host->publish_metrics != NULL) {
		int mrc;

		update_gauges(&r);
		mrc = r.host->publish_metrics(r.host->ctx, 1);
		if (rc == 0)
			rc = mrc;
	}
	result->exit_code = result->signal ? 128 + result->signal
					   : (int)(result->failed > 100 ? 100 : result->failed);
	free(todo);
	release_runner(&r);
	faucet_backfill_default_host_dispose(&r.own_host);
	return rc;
}
