/*
 * faucet/backfill.h - re-running a pipeline over a past time range, one
 * window ("unit") at a time, with durable progress.
 *
 * The pieces, in the order a runner uses them:
 *
 *   faucet_tz              an IANA time zone read from the system tz database
 *                          (TZif files), with no process-global state
 *   faucet_backfill_plan   the range cut into contiguous half-open units,
 *                          with the range's descriptor and hash
 *   faucet_backfill_marker the progress document at
 *                          {pipeline}::__backfill__::{hash}: each finished
 *                          unit's outcome; pending units are absent
 *
 * Planning rules (doc/design.md §6): a boundary is RFC 3339 or a bare date
 * (local midnight, a DST gap resolving to the instant the gap ends); windows
 * Ns/Nm/Nh/N are elapsed time, Nd/Nw step the local wall clock by days; the
 * last unit is cut at the end of the range; more than 10,000 units is an
 * error and more than 1,000 a warning.
 */
#ifndef FAUCET_BACKFILL_H
#define FAUCET_BACKFILL_H

#include <stddef.h>
#include <stdint.h>
#include "common.h"
#include "value.h"
#include "store.h"
#include "lease.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- time zones --------------------------------------------------------- */

/* A parsed time zone.  Immutable once loaded, so one handle may be shared by
 * any number of threads; keep it for as long as you plan in that zone. */
typedef struct faucet_tz faucet_tz;

/* Load the IANA zone `name` ("America/New_York", "UTC") from $TZDIR or
 * /usr/share/zoneinfo.  A name that could leave the database ("..", a
 * leading '/') or that names no zone file is FAUCET_ECONFIG naming it. */
FAUCET_EXTERN int faucet_tz_load(faucet_tz **out, const char *name);

/* The name the zone was loaded under (owned by the zone). */
FAUCET_EXTERN const char *faucet_tz_name(const faucet_tz *tz);

/* Seconds east of UTC in effect at `unix_seconds`. */
FAUCET_EXTERN int faucet_tz_offset_at(const faucet_tz *tz, int64_t unix_seconds, int32_t *offset);

/* The instant of a local wall-clock time, given as seconds since 1970-01-01
 * 00:00 local.  A repeated local time (DST ends) takes its earliest instant;
 * a skipped one (DST starts) the instant the gap ends.  *skipped (may be
 * NULL) says whether the time fell in a gap. */
FAUCET_EXTERN int faucet_tz_local_to_unix(const faucet_tz *tz, int64_t local_seconds, int64_t *out,
					  int *skipped);

FAUCET_EXTERN void faucet_tz_free(faucet_tz *tz);

/* ---- plans --------------------------------------------------------------- */

#define FAUCET_BACKFILL_MAX_UNITS 10000  /* more is an error */
#define FAUCET_BACKFILL_WARN_UNITS 1000  /* more is a warning */

/* What to plan.  Strings are borrowed for the duration of the call. */
typedef struct {
	const char *from;     /* RFC 3339 or YYYY-MM-DD; required */
	const char *to;       /* RFC 3339 or YYYY-MM-DD; required, after from */
	const char *window;   /* "6h", "1d", "3600", ...; NULL or "" = one unit */
	const char *timezone; /* IANA name; NULL = "UTC" */
	const char *row;      /* NULL = "default" */
} faucet_backfill_range;

/* One unit [start, end).  Times are rendered in the plan's zone. */
typedef struct {
	char id[20];         /* UTC start as YYYYMMDDTHHMMSSZ */
	char start[40];      /* RFC 3339, e.g. 2026-03-07T00:00:00-05:00 */
	char end[40];
	char start_date[12]; /* local YYYY-MM-DD */
	char end_date[12];
	int64_t start_unix;  /* epoch seconds (fraction dropped) */
	int64_t end_unix;
} faucet_backfill_unit;

typedef struct faucet_backfill_plan faucet_backfill_plan;

/* Plan `range`.  Bad boundaries, a bad window, an unknown zone, from not
 * before to, or more than FAUCET_BACKFILL_MAX_UNITS units are
 * FAUCET_ECONFIG with a message naming the input. */
FAUCET_EXTERN int faucet_backfill_plan_new(faucet_backfill_plan **out,
					   const faucet_backfill_range *range);

/* The same, with a zone the caller already holds (range->timezone is then
 * ignored).  The plan takes no reference: keep tz alive while planning. */
FAUCET_EXTERN int faucet_backfill_plan_new_in(faucet_backfill_plan **out,
					      const faucet_backfill_range *range,
					      const faucet_tz *tz);

FAUCET_EXTERN size_t faucet_backfill_plan_count(const faucet_backfill_plan *p);
FAUCET_EXTERN const faucet_backfill_unit *faucet_backfill_plan_unit(const faucet_backfill_plan *p,
								    size_t i);

/* "time|{from}|{to}|{window}|{row}" with from/to rendered in the zone. */
FAUCET_EXTERN const char *faucet_backfill_plan_descriptor(const faucet_backfill_plan *p);

/* FNV-1a 64 of the descriptor as 16 lower-case hex digits. */
FAUCET_EXTERN const char *faucet_backfill_plan_hash(const faucet_backfill_plan *p);

/* The zone's name, and the rendered range boundaries. */
FAUCET_EXTERN const char *faucet_backfill_plan_timezone(const faucet_backfill_plan *p);
FAUCET_EXTERN const char *faucet_backfill_plan_from(const faucet_backfill_plan *p);
FAUCET_EXTERN const char *faucet_backfill_plan_to(const faucet_backfill_plan *p);

/* Non-zero when the plan has more than FAUCET_BACKFILL_WARN_UNITS units:
 * callers should warn the operator before running it. */
FAUCET_EXTERN int faucet_backfill_plan_is_large(const faucet_backfill_plan *p);

FAUCET_EXTERN void faucet_backfill_plan_free(faucet_backfill_plan *p);

/* ---- keys ---------------------------------------------------------------- */

/* "{pipeline}::__backfill__::{hash}".  Caller frees; NULL on ENOMEM. */
FAUCET_EXTERN char *faucet_backfill_marker_key(const char *pipeline, const char *range_hash);

/* A unit's scoped key "{pipeline}::backfill::{hash}::{unit}".  Caller frees. */
FAUCET_EXTERN char *faucet_backfill_unit_key(const char *pipeline, const char *range_hash,
					     const char *unit);

/* The legacy unit key "{pipeline}::backfill::{unit}".  Caller frees. */
FAUCET_EXTERN char *faucet_backfill_legacy_unit_key(const char *pipeline, const char *unit);

/* ---- the progress marker ------------------------------------------------- */

typedef enum {
	FAUCET_BACKFILL_PENDING = 0, /* no outcome recorded */
	FAUCET_BACKFILL_DONE = 1,
	FAUCET_BACKFILL_FAILED = 2
} faucet_backfill_status;

typedef struct faucet_backfill_marker faucet_backfill_marker;

/* An empty marker for the range `descriptor`. */
FAUCET_EXTERN int faucet_backfill_marker_new(faucet_backfill_marker **out, const char *descriptor);

/* Read a stored marker.  A document of the wrong shape is FAUCET_ECONFIG
 * ("backfill marker: ..."), since only a person editing the store makes one. */
FAUCET_EXTERN int faucet_backfill_marker_from_value(faucet_backfill_marker **out,
						    const faucet_value *v);

/* The marker as a JSON value (units in byte order of their ids). */
FAUCET_EXTERN int faucet_backfill_marker_to_value(const faucet_backfill_marker *m,
						  faucet_value **out);

FAUCET_EXTERN int faucet_backfill_marker_mark_done(faucet_backfill_marker *m, const char *unit);
FAUCET_EXTERN int faucet_backfill_marker_mark_failed(faucet_backfill_marker *m, const char *unit,
						     const char *error);

/* A unit's status; *error (may be NULL) receives a failed unit's message,
 * owned by the marker. */
FAUCET_EXTERN faucet_backfill_status faucet_backfill_marker_status(const faucet_backfill_marker *m,
								   const char *unit,
								   const char **error);

FAUCET_EXTERN const char *faucet_backfill_marker_descriptor(const faucet_backfill_marker *m);

/* The zone the range was planned in ("Europe/Berlin"), an added field the
 * original does not write: NULL when the marker does not record it. */
FAUCET_EXTERN const char *faucet_backfill_marker_timezone(const faucet_backfill_marker *m);
FAUCET_EXTERN int faucet_backfill_marker_set_timezone(faucet_backfill_marker *m,
						      const char *timezone);

/* What the marker knows of one unit.  Strings are owned by the marker;
 * attempts is 0 and the times NULL when not recorded (a marker written by
 * the original, or a unit still pending). */
typedef struct {
	faucet_backfill_status status;
	const char *error;      /* failed units */
	unsigned attempts;      /* runs of the unit that reached an outcome */
	const char *started_at; /* the last such run's start, RFC 3339 UTC */
	const char *ended_at;   /* ... and end */
} faucet_backfill_unit_info;

/* Fill *out for `unit`; returns 1 when the marker has an outcome for it,
 * 0 (and a PENDING, zeroed *out) otherwise. */
FAUCET_EXTERN int faucet_backfill_marker_unit_info(const faucet_backfill_marker *m,
						   const char *unit,
						   faucet_backfill_unit_info *out);

/* Set the attempt count (at most 1,000,000,000) and times of a unit that
 * has an outcome (FAUCET_EINVALID otherwise).  Times may be NULL. */
FAUCET_EXTERN int faucet_backfill_marker_set_attempt(faucet_backfill_marker *m, const char *unit,
						     unsigned attempts, const char *started_at,
						     const char *ended_at);

FAUCET_EXTERN size_t faucet_backfill_marker_done_count(const faucet_backfill_marker *m);
FAUCET_EXTERN size_t faucet_backfill_marker_failed_count(const faucet_backfill_marker *m);

/* Whether two markers hold the same descriptor and outcomes. */
FAUCET_EXTERN int faucet_backfill_marker_equal(const faucet_backfill_marker *a,
					       const faucet_backfill_marker *b);

FAUCET_EXTERN void faucet_backfill_marker_free(faucet_backfill_marker *m);

/* Split a plan against a marker (NULL = fresh): *todo receives the indexes of
 * the units still to run (failed and pending, in plan order; caller frees),
 * *skipped the number already done. */
FAUCET_EXTERN int faucet_backfill_split(const faucet_backfill_plan *p,
					const faucet_backfill_marker *m, size_t **todo,
					size_t *todo_count, size_t *skipped);

/* Load the marker at `key`: *out is NULL when there is none. */
FAUCET_EXTERN int faucet_backfill_marker_load(faucet_store *s, const char *key,
					      faucet_backfill_marker **out);

/* Record one unit's outcome (error NULL = done) in the stored marker at
 * `key`, creating it with `descriptor` when absent.  The update is a
 * compare-and-put merge retried on conflict, so concurrent runners never
 * lose each other's outcomes.  A recorded "done" is never replaced by
 * "failed".  A stored marker of another range is FAUCET_ECONFIG.
 * *current (may be NULL) receives the marker as written. */
FAUCET_EXTERN int faucet_backfill_marker_record(faucet_store *s, const char *key,
						const char *descriptor, const char *unit,
						const char *error,
						faucet_backfill_marker **current);

/* One unit's outcome with what the runner knows about the attempt. */
typedef struct {
	const char *descriptor; /* the range; required */
	const char *timezone;   /* recorded when the marker has none yet; may be NULL */
	const char *unit;       /* required */
	const char *error;      /* NULL = done */
	const char *started_at; /* RFC 3339; with ended_at, counts one more attempt */
	const char *ended_at;
} faucet_backfill_outcome;

/* As faucet_backfill_marker_record, also counting the attempt (when it
 * has times) and recording its times and the range's zone.  A failure
 * that arrives for a unit already done changes nothing, attempts included. */
FAUCET_EXTERN int faucet_backfill_marker_record_outcome(faucet_store *s, const char *key,
							const faucet_backfill_outcome *o,
							faucet_backfill_marker **current);

/* ---- running ------------------------------------------------------------- */

/* Expand ${backfill.start|end|start_date|end_date|start_unix|end_unix|unit}
 * in one argument for unit `u`.  Other ${...} text is kept as it is; an
 * unknown ${backfill.NAME} or an unterminated "${backfill." is
 * FAUCET_ECONFIG naming the argument.  Caller frees *out. */
FAUCET_EXTERN int faucet_backfill_expand(const char *arg, const faucet_backfill_unit *u,
					 char **out);

typedef enum {
	FAUCET_BACKFILL_FRESH = 0, /* an existing marker is an error */
	FAUCET_BACKFILL_RESUME,    /* skip done units, run failed and pending ones */
	FAUCET_BACKFILL_RESTART    /* discard the marker and every unit's scoped key */
} faucet_backfill_mode;

/* Progress callbacks, all optional, all called on the runner's thread; each
 * takes the struct's own `ctx` first (a hook of a struct that holds its
 * ctx: doc/design.md §1). */
typedef struct {
	void *ctx;
	/* Once, before anything runs: units in the plan, already done, to run. */
	void (*on_plan)(void *ctx, size_t total, size_t skipped, size_t to_run);
	/* Dry runs only: every unit in plan order with its recorded status. */
	void (*on_planned)(void *ctx, const faucet_backfill_unit *u, faucet_backfill_status st);
	void (*on_unit_start)(void *ctx, const faucet_backfill_unit *u);
	/* A unit ended: DONE, FAILED (error set) or PENDING (interrupted, or
	 * settled by another runner).  `finished` counts units settled so far
	 * (skipped ones included) out of `total`. */
	void (*on_unit_end)(void *ctx, const faucet_backfill_unit *u, faucet_backfill_status st,
			    const char *error, size_t finished, size_t total);
	/* A warning or notice worth a line ("unit X is leased by ...; later"). */
	void (*on_message)(void *ctx, const char *text);
	/* One line a unit wrote to its stdout (is_stderr 0) or stderr, without
	 * its line break.  When NULL, the units' output is copied to our own
	 * stdout and stderr as it comes. */
	void (*on_output)(void *ctx, const faucet_backfill_unit *u, int is_stderr,
			  const char *line);
	/* About once a second while units run, so a display can show the time
	 * passing even when no unit starts or ends. */
	void (*on_tick)(void *ctx);
} faucet_backfill_progress;

/* What the runner needs from the process it runs in, beyond the store:
 * whether to stop, and where its metrics go.  Every member is optional (a
 * zeroed host asks for nothing: no stop ever requested, no metrics
 * published).  All are called on the runner's thread, only while
 * faucet_backfill_run runs.
 *
 * The runner itself installs no signal handler and writes no file: the
 * library's default host (faucet_backfill_default_host, what the CLI
 * uses) is where SIGINT/SIGTERM are trapped and the metrics file written.
 * An embedder that owns its signals passes its own host instead. */
typedef struct faucet_backfill_host {
	void *ctx;
	/* Once before the first unit starts (not in dry runs).  Non-zero,
	 * with the error set, stops the run before anything runs. */
	int (*start)(void *ctx);
	/* Once after the last unit ended, when start succeeded. */
	void (*finish)(void *ctx);
	/* A descriptor that becomes readable when a stop is requested, polled
	 * with the units' pipes so the request is seen at once; asked once,
	 * after start.  The runner never reads or closes it: stop_requested
	 * should drain it, or the runner keeps waking.  -1 (or no callback)
	 * = none: stop_requested is then asked at least every 200 ms while
	 * units run. */
	int (*stop_fd)(void *ctx);
	/* Asked whenever the runner wakes, until it returns 0 (or less): each
	 * positive return is one stop request, given as the signal number that stands
	 * for it (reported as result->signal, and exit_code 128 + it).  The
	 * first request stops new units and sends SIGTERM to the running
	 * units' process groups (they stay pending); a second sends SIGKILL. */
	int (*stop_requested)(void *ctx);
	/* The metrics registry (faucet/metrics.h) holds this run's current
	 * numbers: publish them.  Called as units end (at most once a second),
	 * when a stop is requested, and once at the end with final = 1.  A
	 * non-zero return (with the error set) mid-run is said once through
	 * on_message; at the end it is the run's error. */
	int (*publish_metrics)(void *ctx, int final);
} faucet_backfill_host;

/* The library's default host, which the CLI passes: with handle_signals,
 * SIGINT and SIGTERM are caught for the length of the run through a
 * self-pipe (the previous dispositions are put back at its end; one such
 * host may be running in a process at a time, another start fails with
 * FAUCET_EINVALID); with a metrics_file (copied), the registry is written
 * there atomically (faucet_metrics_write_file).  Its state is allocated:
 * give it back with faucet_backfill_default_host_dispose. */
FAUCET_EXTERN int faucet_backfill_default_host(faucet_backfill_host *host, int handle_signals,
					       const char *metrics_file);
FAUCET_EXTERN void faucet_backfill_default_host_dispose(faucet_backfill_host *host);

/* How to run.  Initialise with FAUCET_BACKFILL_RUN_OPTIONS_INIT (or
 * faucet_backfill_run_options_init), then set what you need; the struct
 * may grow at its end (see faucet/store.h on options structs). */
#define FAUCET_BACKFILL_RUN_OPTIONS_VERSION 1
#define FAUCET_BACKFILL_RUN_OPTIONS_INIT {.version = FAUCET_BACKFILL_RUN_OPTIONS_VERSION}
typedef struct {
	unsigned version;              /* FAUCET_BACKFILL_RUN_OPTIONS_VERSION */
	const char *pipeline;          /* required; the keys' namespace */
	const char *const *argv;       /* the command, NULL-terminated; run without a shell */
	unsigned concurrency;          /* units in flight; 0 = 1 */
	faucet_backfill_mode mode;
	int dry_run;                   /* read the marker, report, write nothing, run nothing */
	uint64_t lease_ttl_ms;         /* a unit's lease: 0 = 60 s; 3000 to FAUCET_LEASE_MAX_TTL_MS */
	const char *config_path;       /* given to units as FAUCET_CONFIG (made absolute) */
	const char *state_url;         /* else given as FAUCET_STATE */
	/* Without a host, these two ask for the default host's behaviour
	 * (see faucet_backfill_default_host); with one they must be unset. */
	const char *metrics_file;      /* Prometheus text written here as units end (at most
					* once a second), when interrupted, and at the end;
					* NULL = none */
	int handle_signals;            /* catch SIGINT/SIGTERM while running */
	const faucet_backfill_progress *progress; /* may be NULL */
	/* The names (never the values) of the environment variables holding
	 * the store's encryption key and its previous keys (comma-separated),
	 * given to units as FAUCET_ENCRYPTION_KEY_ENV and
	 * FAUCET_PREVIOUS_KEY_ENV so that what they write is sealed like the
	 * rest of the store.  The variables themselves are inherited.  NULL =
	 * none (a store of plain files, or one whose config names its keys). */
	const char *key_env;
	const char *previous_key_env;
	/* How to learn of a stop and where metrics go; NULL = built from
	 * handle_signals and metrics_file.  Borrowed for the call. */
	const faucet_backfill_host *host;
} faucet_backfill_run_options;

/* Fill `o` as its _INIT macro does, for options version `version` (writing no
 * more than that version's struct); FAUCET_EINVALID for a version unknown here. */
FAUCET_EXTERN int faucet_backfill_run_options_init(faucet_backfill_run_options *o,
						   unsigned int version);

typedef struct {
	size_t total;      /* units in the plan */
	size_t skipped;    /* done before this run started */
	size_t done;       /* finished by this run */
	size_t failed;     /* failed in this run */
	size_t by_others;  /* settled by another runner while we waited */
	size_t pending;    /* neither: interrupted, or never started */
	int signal;        /* the signal that interrupted the run, or 0 */
	int exit_code;     /* failed units capped at 100, or 128 + signal */
	size_t leases_left; /* unit leases we could not release (the run then fails) */
} faucet_backfill_result;

/* Units are started with fork and execve; between the two the child makes
 * only async-signal-safe system calls on what was prepared before the fork
 * (the path found on PATH, argv, envp), so the function may be called from
 * a program with threads.  Where glibc has _Fork, no pthread_atfork handler
 * runs either.  SIGCHLD ignored (SIG_IGN, SA_NOCLDWAIT) is FAUCET_ECONFIG:
 * no exit status could be read; a unit reaped by the caller's own
 * waitpid() fails as "exit status unknown".
 *
 * Run every unit of `plan` that is not done, at most `concurrency` at a
 * time, each claimed by a lease, with its outcome merged into the marker as
 * it ends.  Problems found before anything runs (bad options, a bad
 * placeholder, a command not found on PATH, a corrupt marker, an existing
 * marker in FRESH mode) are FAUCET_ECONFIG and nothing is written; a store
 * whose compare-and-put is not atomic is FAUCET_EUNSUPPORTED (leases and
 * the marker merge depend on it; a dry run is allowed).  Unit failures are
 * not errors: they are in *result; a command that can no longer be executed
 * when a unit starts (removed or made non-executable since the check) fails
 * that unit with "cannot run 'PATH': reason".  A store failure while recording stops
 * new units and is returned once the running ones end.  A lease that could
 * not be released is an error too, returned at the end with every such
 * lease named (the other units still run): it would hold its unit until it
 * expires. */
FAUCET_EXTERN int faucet_backfill_run(faucet_store *s, const faucet_backfill_plan *plan,
				      const faucet_backfill_run_options *opts,
				      faucet_backfill_result *result);

#ifdef __cplusplus
}
#endif

#endif
