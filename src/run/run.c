/*
 * run.c - one run of an invocation: the lease, fenced writes with
 * before-images, and the recorded end.
 *
 * Order of durable writes, and why:
 *
 *   begin   lease (compare-and-put: absent or expired), then the status
 *           entry "running".  The lease comes first so that two runs racing
 *           for one invocation never both appear to run.
 *   write   the key's before-image into the marker, then the key.  The
 *           image is durable before the change, so a crash between the two
 *           leaves an image of a key that did not change - harmless to undo
 *           (the key still equals its before-image and is skipped).
 *   end     after-images into the marker, the outcome into the status, the
 *           run into the rollback index, then the lease released.  A run
 *           that changed nothing has no marker and skips the index.
 *
 * Every document is updated by compare-and-put against the exact value read
 * (or last written by us), re-read and merged after a lost race, so children
 * that joined the run (faucet state put with FAUCET_RUN_ID) and concurrent
 * runs of other invocations never lose each other's entries.
 *
 * Fencing reads the lease before each write and compares it with the value
 * we last wrote.  That read is a few microseconds against a durable write
 * of a millisecond, and it also notices a lease broken by hand (`faucet lock
 * break`), which trusting our own clock would not.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <pwd.h>

#include "run/run_internal.h"
#include "store/open_internal.h"
#include "stores/registry.h"
#include "keys/bookkeeping.h"
#include <faucet/keys.h>

#define CAS_ATTEMPTS 1000 /* lost races are short-lived; this is a safety stop */

/* AFTER_PART: recorded, before and after, in a part of the marker
 * (faucet_run__put_part), which is never rewritten. */
enum { AFTER_NONE = 0, AFTER_KNOWN = 1, AFTER_UNKNOWN = 2, AFTER_PART = 3 };

#define READ_CHUNK 10000 /* keys per get_many */

struct faucet_run {
	faucet_store *s;
	char *pipeline;
	char *row;   /* NULL for a pipeline-level run */
	char *scope; /* {p}::{r} or {p} */
	char id[FAUCET_RUN_ID_LEN + 1];
	char *lease_key, *status_key, *index_key, *marker_key;
	char *holder;
	faucet_value *lease;  /* what we last wrote to the lease key (NULL = no lease) */
	int64_t lease_expires;
	int64_t ttl_s;
	int joined;
	faucet_value *marker; /* what we last saw in the marker key (NULL = none yet) */
	run_marker mcache;    /* `marker` parsed, when mcache_ok: a run's first write of
			       * a key then costs no re-parse of its own marker */
	int mcache_ok;
	faucet_value *status;     /* the status document as we last wrote it, and */
	run_status scache;        /* parsed, when scache_ok: the end then neither reads */
	int scache_ok;            /* nor parses a document of up to 50 entries */
	faucet_strarray recorded; /* keys with a before-image, sorted */
	size_t recorded_near;     /* where the last lookup in it ended */
	/* Parallel to `recorded`: what this handle's writes of the key did -
	 * AFTER_NONE (none: the key was recorded ahead and never written),
	 * AFTER_KNOWN (the last one left after[i], NULL = absent) or
	 * AFTER_UNKNOWN (it failed or its outcome is unknown), AFTER_PART (in a
	 * marker part, with the value written) - so that the
	 * end need not read every key back.  Trusted only by a run that took
	 * no lease: no other handle can join it (faucet_run_join needs the
	 * lease), so only its own writes and outside writers touch its keys. */
	faucet_value **after;
	unsigned char *after_known;
	size_t after_cap;
	int leased;               /* took a lease: children may join and write */
	char *undoes;
	int ended;
	/* A run that took no lease writes its status entry only with its
	 * first change (lazy): a CLI write that changes nothing records no
	 * run at all. */
	int lazy, started;
	/* faucet_run_put_end: the put is the run's last write (end_with_put),
	 * and its end "ok" was written with it (end_recorded). */
	int end_with_put, end_recorded;
	const char *command;      /* for the lazy start: borrowed from the options */
	char *command_own;
	size_t changed;           /* keys the run changed (known at its end) */
	/* The pipeline lease {p}::__lease__ of an exclusive run (bulk writes,
	 * undo): what we wrote there, NULL when not held. */
	char *plock_key;
	faucet_value *plock;
	int64_t plock_expires;
	int64_t lease_renewed_at, plock_renewed_at; /* when each was last written */
	/* The index as begin read it (index_seen_ok), tried first as the
	 * expected value by a lazy run's first put, which puts the run in the
	 * index with its first change (indexed) - the end then has no index
	 * to write, only the markers it pushed out (retire) to delete. */
	faucet_value *index_seen;
	int index_seen_ok, indexed;
	faucet_strarray retire;
	faucet_strarray parts_retire; /* runs whose markers went, their parts not yet */
	/* A big import's chunks after its first are recorded in marker parts
	 * (faucet_run__put_part): how many were written, and the keys they
	 * changed - the first RUN_STATUS_KEYS, and how many in all. */
	size_t parts;
	faucet_strarray part_changed;
	size_t part_changed_total;
	/* A chunk's part is first built as if none of its keys existed, not
	 * read (part_and_chunk), until one such guess did not land. */
	int parts_guess_wrong;
};

static int64_t wall_now(void)
{
	return (int64_t)time(NULL);
}

/* When a lease of this run written now ends (lease/lease.c says why +1). */
static int64_t lease_until(const faucet_run *r, int64_t now)
{
	return faucet__lease_until(now, r->ttl_s);
}

/* ---- naming -------------------------------------------------------------------- */

int faucet_run_is_bookkeeping_key(const char *key)
{
	return faucet__is_bookkeeping_key(key);
}

/* ---- which invocation keys belong to ------------------------------------------ */

void faucet_run__scope_init(run_scope *sc)
{
	memset(sc, 0, sizeof(*sc));
}

void faucet_run__scope_dispose(run_scope *sc)
{
	free(sc->pipeline);
	free(sc->row);
	memset(sc, 0, sizeof(*sc));
}

/* A key's pipeline is its first segment and its row what the key parser
 * says (p::backfill::h::u belongs to the backfill unit's invocation;
 * p::__backfill__::h to none). */
int faucet_run__scope_add(run_scope *sc, const char *key)
{
	const char *sep, *row = NULL;
	faucet_key *k = NULL;
	size_t plen;

	if (sc->spans || faucet__is_bookkeeping_key(key))
		return 0; /* decided already, or not a change to record */
	sep = strstr(key, "::");
	plen = sep ? (size_t)(sep - key) : strlen(key);
	if (sc->pipeline != NULL &&
	    (strncmp(sc->pipeline, key, plen) != 0 || sc->pipeline[plen] != '\0')) {
		sc->spans = 1; /* another pipeline: the first key's pipeline stays */
		return 0;
	}
	if (sc->pipeline == NULL && (sc->pipeline = faucet__strndup(key, plen)) == NULL)
		return FAUCET_ENOMEM;
	if (sep != NULL && faucet_key_parse(&k, NULL, sc->pipeline, key) == 0)
		row = faucet_key_row(k);
	if (!sc->any) {
		sc->any = 1;
		if (row != NULL && (sc->row = faucet__strdup(row)) == NULL) {
			faucet_key_free(k);
			return FAUCET_ENOMEM;
		}
		sc->spans = row == NULL;
	} else if (row == NULL || strcmp(row, sc->row) != 0) {
		sc->spans = 1;
	}
	faucet_key_free(k);
	return 0;
}

int faucet_run_keys_invocation(const char *const *keys, size_t count, char **pipeline,
			       char **row)
{
	run_scope sc;
	int rc = 0;

	if (pipeline == NULL || row == NULL || (keys == NULL && count > 0))
		return faucet_error_set(FAUCET_EINVALID, "faucet_run_keys_invocation: NULL argument");
	*pipeline = NULL;
	*row = NULL;
	faucet_run__scope_init(&sc);
	for (size_t i = 0; i < count && rc == 0; i++)
		rc = faucet_run__scope_add(&sc, keys[i]);
	if (rc != 0) {
		faucet_run__scope_dispose(&sc);
		return rc;
	}
	*pipeline = sc.pipeline;
	if (!sc.spans)
		*row = sc.row;
	else
		free(sc.row);
	return 0;
}

static int check_pipeline(const char *pipeline)
{
	if (pipeline == NULL || faucet_validate_key(pipeline) != 0 || strstr(pipeline, "::") != NULL)
		return faucet_error_set(FAUCET_EINVALID, "invalid pipeline name '%s'",
					pipeline ? pipeline : "");
	return 0;
}

static int check_row(const char *pipeline, const char *row)
{
	char *key = faucet__sprintf("%s::%s", pipeline, row);
	int rc;

	if (key == NULL)
		return FAUCET_ENOMEM;
	rc = faucet_validate_key(key);
	if (rc == 0 && faucet_run_is_bookkeeping_key(key))
		rc = faucet_error_set(FAUCET_EINVALID, "invalid row '%s': a bookkeeping name", row);
	else if (rc != 0)
		rc = faucet__error_wrap("invalid row '%s'", row);
	free(key);
	return rc;
}


/* ---- the handle ------------------------------------------------------------------ */

static int run_new(faucet_run **out, faucet_store *s, const char *pipeline, const char *row)
{
	faucet_run *r;
	int rc;

	*out = NULL;
	if (s == NULL)
		return faucet_error_set(FAUCET_EINVALID, "run: no store");
	if ((rc = check_pipeline(pipeline)) != 0)
		return rc;
	if (row != NULL && (rc = check_row(pipeline, row)) != 0)
		return rc;
	r = faucet__calloc(1, sizeof(*r));
	if (r == NULL)
		return FAUCET_ENOMEM;
	r->s = s;
	r->pipeline = faucet__strdup(pipeline);
	r->row = row ? faucet__strdup(row) : NULL;
	r->scope = row ? faucet__sprintf("%s::%s", pipeline, row) : faucet__strdup(pipeline);
	if (r->scope != NULL) {
		r->lease_key = faucet_run__key(r->scope, "__lease__");
		r->status_key = faucet_run__key(r->scope, "__status__");
		r->index_key = faucet_run__key(r->scope, "__rollback__");
	}
	if (r->pipeline == NULL || (row && r->row == NULL) || r->scope == NULL ||
	    r->lease_key == NULL || r->status_key == NULL || r->index_key == NULL) {
		faucet_run_free(r);
		return FAUCET_ENOMEM;
	}
	*out = r;
	return 0;
}

static int set_id(faucet_run *r, const char *id)
{
	if (id != NULL)
		(void)snprintf(r->id, sizeof(r->id), "%s", id);
	else if (faucet_run__new_id(r->id, sizeof(r->id)) != 0)
		return faucet_error_last()->code;
	r->marker_key = faucet_run__marker_key(r->scope, r->id);
	return r->marker_key ? 0 : FAUCET_ENOMEM;
}

void faucet_run_free(faucet_run *r)
{
	if (r == NULL)
		return;
	free(r->pipeline);
	free(r->row);
	free(r->scope);
	free(r->lease_key);
	free(r->status_key);
	free(r->index_key);
	free(r->marker_key);
	free(r->holder);
	free(r->undoes);
	free(r->command_own);
	free(r->plock_key);
	faucet_value_free(r->plock);
	faucet_value_free(r->lease);
	faucet_value_free(r->marker);
	faucet_run__marker_dispose(&r->mcache);
	faucet_value_free(r->status);
	if (r->scache_ok)
		faucet_run__status_dispose(&r->scache);
	for (size_t i = 0; r->after != NULL && i < r->recorded.count; i++)
		faucet_value_free(r->after[i]);
	free(r->after);
	free(r->after_known);
	faucet_strarray_dispose(&r->recorded);
	faucet_value_free(r->index_seen);
	faucet_strarray_dispose(&r->retire);
	faucet_strarray_dispose(&r->parts_retire);
	faucet_strarray_dispose(&r->part_changed);
	free(r);
}

const char *faucet_run_id(const faucet_run *r)
{
	return r->id;
}

const char *faucet_run_scope(const faucet_run *r)
{
	return r->scope;
}

const char *faucet_run_row(const faucet_run *r)
{
	return r->row;
}

const faucet_strarray *faucet_run_keys(const faucet_run *r)
{
	return &r->recorded;
}

uint64_t faucet_run_renew_interval_ms(const faucet_run *r)
{
	return (uint64_t)r->ttl_s * 1000 / 3;
}

/* ---- status updates ------------------------------------------------------------------ */

typedef int (*status_edit_fn)(run_status *st, void *ctx);

/*
 * Read-modify-write of the run's status document with compare-and-put.
 * The document as this run last wrote it (kept parsed) is tried first as
 * the expected value: between a run's begin and its end nobody else
 * usually writes it - one run per invocation holds the lease - so the end
 * costs no read and no parse.  A lost race (an undo marking a run, another
 * scope's writer) re-reads and edits the stored document, as always.
 */
static int status_update(faucet_run *r, status_edit_fn edit, void *ctx)
{
	for (int attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
		faucet_value *cur = NULL, *next = NULL;
		run_status st;
		int rc, written = 0;

		if (attempt == 0 && r->scache_ok) {
			/* Taken over: edited in place, kept again only if written. */
			cur = r->status;
			st = r->scache;
			r->status = NULL;
			r->scache_ok = 0;
			rc = 0;
		} else {
			if ((rc = faucet_store_get(r->s, r->status_key, &cur)) != 0)
				return rc;
			rc = faucet_run__status_parse(cur, r->status_key, &st);
		}
		if (rc == 0 && (rc = edit(&st, ctx)) == 0 && (rc = faucet_run__status_value(&st, &next)) == 0)
			rc = faucet_store_compare_and_put(r->s, r->status_key, cur, next, &written);
		if (rc == 0 && written) {
			faucet_value_free(r->status);
			r->status = next;
			r->scache = st;
			r->scache_ok = 1;
			next = NULL;
		} else {
			faucet_run__status_dispose(&st);
		}
		faucet_value_free(cur);
		faucet_value_free(next);
		if (rc != 0 || written)
			return rc;
	}
	return faucet_error_set(FAUCET_ECONTENTION, "%s: gave up after %d lost races",
				r->status_key, CAS_ATTEMPTS);
}

static char *by_json(const char *command)
{
	faucet_buf b = FAUCET_BUF_INIT;
	char *safe = faucet__redact_command(command);
	char host[256] = "localhost";
	struct passwd pw, *res = NULL;
	char pwbuf[1024];
	const char *user = NULL;

	if (gethostname(host, sizeof(host)) != 0)
		(void)snprintf(host, sizeof(host), "localhost");
	host[sizeof(host) - 1] = '\0';
	if (getpwuid_r(getuid(), &pw, pwbuf, sizeof(pwbuf), &res) == 0 && res != NULL)
		user = res->pw_name;
	if (user == NULL)
		user = getenv("USER");
	(void)faucet__buf_puts(&b, "{\"host\":");
	faucet__json_string(&b, host);
	(void)faucet__buf_printf(&b, ",\"pid\":%ld,\"user\":", (long)getpid());
	faucet__json_string(&b, user ? user : "");
	(void)faucet__buf_puts(&b, ",\"command\":");
	faucet__json_string(&b, safe ? safe : "");
	(void)faucet__buf_putc(&b, '}');
	if (safe == NULL)
		b.failed = 1;
	free(safe);
	if (b.failed) {
		faucet__buf_dispose(&b);
		return NULL;
	}
	return faucet__buf_detach(&b);
}

typedef struct {
	faucet_run *r;
	const char *command;
	const char *abandoned;            /* a run found dead, or NULL */
	const faucet_strarray *abandoned_keys;
} start_ctx;

static int edit_start(run_status *st, void *arg)
{
	start_ctx *c = arg;
	const char *held;
	run_entry e;
	char when[32];

	if (c->abandoned != NULL) {
		run_entry *dead = faucet_run__status_find(st, c->abandoned);
		if (dead != NULL && strcmp(dead->outcome, "running") == 0) {
			char *o = faucet__strdup("abandoned");
			if (o == NULL)
				return FAUCET_ENOMEM;
			free(dead->outcome);
			dead->outcome = o;
			if (c->abandoned_keys != NULL &&
			    faucet_run__entry_set_keys(dead, c->abandoned_keys, 0) != 0)
				return FAUCET_ENOMEM;
		}
	}
	/* A first put that lost a race after its status write landed (a
	 * backend without put_guarded_many) tries again: it is there. */
	if (faucet_run__status_find(st, c->r->id) != NULL)
		return 0;
	memset(&e, 0, sizeof(e));
	(void)faucet_utc_text(wall_now(), when, sizeof(when));
	e.run = faucet__strdup(c->r->id);
	e.started_at = faucet__strdup(when);
	e.outcome = faucet__strdup("running");
	e.by = by_json(c->command);
	e.undoes = c->r->undoes ? faucet__strdup(c->r->undoes) : NULL;
	/* The lease the run holds, by which every reader tells a run whose
	 * holder is gone (faucet_run__entry_gone). */
	held = c->r->lease != NULL ? c->r->lease_key : c->r->plock != NULL ? c->r->plock_key : NULL;
	e.lease = held ? faucet__strdup(held) : NULL;
	if (e.run == NULL || e.started_at == NULL || e.outcome == NULL || e.by == NULL ||
	    (c->r->undoes && e.undoes == NULL) || (held && e.lease == NULL)) {
		faucet_run__entry_dispose(&e);
		return FAUCET_ENOMEM;
	}
	return faucet_run__status_push(st, &e);
}

/* ---- rollback index -------------------------------------------------------------------- */

/* The scope's index `cur` (NULL = none) with `run` put first: *next, and
 * in *dropped the runs pushed beyond 20, whose markers go once *next is
 * written (index_retire). */
static int index_next(const faucet_value *cur, const char *index_key, const char *run,
		      faucet_value **next, faucet_strarray *dropped)
{
	faucet_strarray runs = {0}, next_runs = {0};
	int rc = faucet_run__index_parse(cur, index_key, &runs);

	*next = NULL;
	if (rc == 0)
		rc = faucet__strarray_push(&next_runs, run);
	for (size_t i = 0; rc == 0 && i < runs.count; i++) {
		if (strcmp(runs.strings[i], run) == 0)
			continue;
		if (next_runs.count < FAUCET_RUN_ROLLBACK_MAX)
			rc = faucet__strarray_push(&next_runs, runs.strings[i]);
		else
			rc = faucet__strarray_push(dropped, runs.strings[i]);
	}
	if (rc == 0)
		rc = faucet_run__index_value(&next_runs, next);
	faucet_strarray_dispose(&runs);
	faucet_strarray_dispose(&next_runs);
	return rc;
}

/* Delete the markers of runs the index no longer names. */
static int index_retire(faucet_store *s, const char *scope, const faucet_strarray *dropped)
{
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < dropped->count; i++) {
		char *mk = faucet_run__marker_key(scope, dropped->strings[i]);

		rc = mk ? faucet_run__marker_delete(s, mk) : FAUCET_ENOMEM;
		free(mk);
	}
	return rc;
}

/* Put `run` first in the scope's index; markers pushed beyond 20 are
 * deleted once the index no longer names them. */
static int index_add(faucet_store *s, const char *scope, const char *index_key, const char *run)
{
	for (int attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
		faucet_value *cur = NULL, *next = NULL;
		faucet_strarray dropped = {0};
		int rc, written = 0;

		if ((rc = faucet_store_get(s, index_key, &cur)) != 0)
			return rc;
		rc = index_next(cur, index_key, run, &next, &dropped);
		if (rc == 0)
			rc = faucet_store_compare_and_put(s, index_key, cur, next, &written);
		if (rc == 0 && written)
			rc = index_retire(s, scope, &dropped);
		faucet_value_free(cur);
		faucet_value_free(next);
		faucet_strarray_dispose(&dropped);
		if (rc != 0 || written)
			return rc;
	}
	return faucet_error_set(FAUCET_ECONTENTION, "%s: gave up after %d lost races", index_key,
				CAS_ATTEMPTS);
}

/* Take `run` out of the scope's index (its marker is gone). */
static int index_drop(faucet_store *s, const char *index_key, const char *run)
{
	for (int attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
		faucet_value *cur = NULL, *next = NULL;
		faucet_strarray runs = {0};
		int rc, written = 0, found = 0;

		if ((rc = faucet_store_get(s, index_key, &cur)) != 0)
			return rc;
		rc = faucet_run__index_parse(cur, index_key, &runs);
		for (size_t i = 0; rc == 0 && i < runs.count; i++) {
			if (strcmp(runs.strings[i], run) != 0)
				continue;
			free(runs.strings[i]);
			memmove(&runs.strings[i], &runs.strings[i + 1],
				(runs.count - i - 1) * sizeof(runs.strings[0]));
			runs.count--;
			found = 1;
			break;
		}
		if (rc == 0 && found && (rc = faucet_run__index_value(&runs, &next)) == 0)
			rc = faucet_store_compare_and_put(s, index_key, cur, next, &written);
		faucet_value_free(cur);
		faucet_value_free(next);
		faucet_strarray_dispose(&runs);
		if (rc != 0 || written || !found)
			return rc;
	}
	return faucet_error_set(FAUCET_ECONTENTION, "%s: gave up after %d lost races", index_key,
				CAS_ATTEMPTS);
}

/* ---- leases ------------------------------------------------------------------------------ */

static void sleep_ms(uint64_t ms)
{
	struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* A lease write that failed may still have landed (its reply or its
 * directory sync was lost: FAUCET_EUNKNOWN, or an error after the write).
 * Read the lease back: holding exactly what we wrote means it is ours -
 * then an unknown outcome counts as claimed, and any other error still
 * fails the begin but with the lease known, so the failure path releases
 * it instead of leaving the invocation blocked for a whole TTL.  The
 * original error is kept when the lease is not ours (or cannot be read). */
static int settle_claim(faucet_run *r, const char *key, const faucet_value *mine, int rc,
			int *written)
{
	char *msg = faucet__strdup(faucet_error_last()->message);
	faucet_value *back = NULL;

	if (faucet_store_get(r->s, key, &back) == 0 && back != NULL &&
	    faucet_value_equal(back, mine)) {
		*written = 1;
		if (rc == FAUCET_EUNKNOWN)
			rc = 0;
	}
	faucet_value_free(back);
	if (rc != 0)
		(void)faucet_error_set(rc, "%s", msg != NULL ? msg : "out of memory");
	free(msg);
	return rc;
}

static int busy(const char *what, const char *key, const faucet_lease *held)
{
	char until[32];

	(void)faucet_utc_text(held->expires_at, until, sizeof(until));
	return faucet_error_set(FAUCET_EBUSY, "%s is held by %s%s (holder %s, lease %s) until %s",
				what, held->run ? "run " : "a backfill unit",
				held->run ? held->run : "", held->holder, key, until);
}

/* Claim the lease at `key` with compare-and-put (absent, expired or its
 * holder dead), waiting until `deadline` (ms) for a live one to go.
 * *mine gets what we wrote; *dead the run of a lease we took over. */
static int claim_lease(faucet_run *r, const char *key, const char *what, uint64_t deadline,
		       faucet_value **mine_out, int64_t *expires, char **dead)
{
	*mine_out = NULL;
	if (dead != NULL)
		*dead = NULL;
	for (int attempt = 0;; attempt++) {
		faucet_value *cur = NULL, *mine = NULL;
		faucet_lease held;
		int64_t now = wall_now();
		int rc, written = 0;

		if ((rc = faucet_store_get(r->s, key, &cur)) != 0)
			return rc;
		memset(&held, 0, sizeof(held));
		if (cur != NULL && (rc = faucet_lease_parse(cur, key, &held)) != 0) {
			faucet_value_free(cur);
			return rc;
		}
		if (cur != NULL && faucet__lease_live(&held, now)) {
			uint64_t t = faucet__now_ms(), nap;

			if (t >= deadline) {
				rc = busy(what, key, &held);
				faucet_lease_dispose(&held);
				faucet_value_free(cur);
				return rc;
			}
			/* Look again when it expires, or sooner: it may be released. */
			nap = (uint64_t)(held.expires_at - now) * 1000;
			nap = nap < 200 ? nap : 200;
			nap = nap < deadline - t ? nap : deadline - t;
			faucet_lease_dispose(&held);
			faucet_value_free(cur);
			sleep_ms(nap ? nap : 1);
			continue;
		}
		rc = faucet__lease_doc(r->holder, lease_until(r, now), r->id, &mine);
		if (rc == 0) {
			rc = faucet__lease_write(r->s, key, cur, mine, lease_until(r, now), &written);
			if (rc != 0)
				rc = settle_claim(r, key, mine, rc, &written);
		}
		if (written) {
			*mine_out = mine;
			*expires = lease_until(r, now);
			mine = NULL;
			if (dead != NULL && held.run != NULL) {
				*dead = held.run;
				held.run = NULL;
			}
		}
		faucet_lease_dispose(&held);
		faucet_value_free(cur);
		faucet_value_free(mine);
		if (rc != 0 || written)
			return rc;
		if (attempt >= CAS_ATTEMPTS)
			return faucet_error_set(FAUCET_ECONTENTION, "%s: gave up after %d lost races",
						key, CAS_ATTEMPTS);
	}
}

/* Release a lease we hold (never one another run took over). */
static int release_one(faucet_run *r, const char *key, faucet_value **held)
{
	int rc;

	if (*held == NULL)
		return 0;
	rc = faucet__lease_release(r->s, key, *held, r->holder);
	if (rc == 0) {
		faucet_value_free(*held);
		*held = NULL;
	}
	return rc;
}

/* Both leases; the first error is the one reported. */
static int release_leases(faucet_run *r)
{
	int rc = release_one(r, r->lease_key, &r->lease);
	int rc2 = release_one(r, r->plock_key, &r->plock);

	return rc != 0 ? rc : rc2;
}

/* The same, keeping the last error (a failure path releasing what it took). */
static void release_keeping_error(faucet_run *r)
{
	int keep = faucet_error_last()->code;
	char *msg = faucet__strdup(faucet_error_last()->message);

	(void)release_leases(r);
	if (msg != NULL)
		(void)faucet_error_set(keep, "%s", msg);
	free(msg);
}

/* A live invocation run lease of the pipeline other than ours, into *held
 * (*found).  A backfill unit's lease (no "run") does not count: its
 * command writes unit keys, which no bulk write or undo of runs takes. */
static int live_run_lease(faucet_run *r, faucet_lease *held, char **key, int *found)
{
	static const char tail[] = "::__lease__";
	char *prefix = faucet__sprintf("%s::", r->pipeline);
	faucet_strarray keys = {0};
	int64_t now = wall_now();
	int rc;

	*found = 0;
	*key = NULL;
	if (prefix == NULL)
		return FAUCET_ENOMEM;
	rc = faucet_store_list(r->s, prefix, &keys);
	for (size_t i = 0; rc == 0 && !*found && i < keys.count; i++) {
		const char *k = keys.strings[i];
		size_t len = strlen(k);
		faucet_value *v = NULL;

		if (len <= strlen(tail) || strcmp(k + len - strlen(tail), tail) != 0 ||
		    strcmp(k, r->plock_key) == 0)
			continue;
		if ((rc = faucet_store_get(r->s, k, &v)) != 0 || v == NULL)
			continue;
		memset(held, 0, sizeof(*held));
		if (faucet_lease_parse(v, k, held) != 0) {
			faucet_error_clear(); /* not a lease: doctor's business */
		} else if (held->run != NULL && faucet__lease_live(held, now)) {
			*found = 1;
			if ((*key = faucet__strdup(k)) == NULL)
				rc = FAUCET_ENOMEM;
		}
		if (!*found)
			faucet_lease_dispose(held);
		faucet_value_free(v);
	}
	faucet_strarray_dispose(&keys);
	free(prefix);
	return rc;
}

/* A live pipeline lease ({p}::__lease__: a bulk write or an undo). */
static int live_pipeline_lease(faucet_run *r, faucet_lease *held, int *found)
{
	faucet_value *v = NULL;
	int rc;

	*found = 0;
	memset(held, 0, sizeof(*held));
	if ((rc = faucet_store_get(r->s, r->plock_key, &v)) != 0 || v == NULL)
		return rc;
	rc = faucet_lease_parse(v, r->plock_key, held);
	faucet_value_free(v);
	if (rc != 0)
		return rc;
	*found = faucet__lease_live(held, wall_now());
	if (!*found)
		faucet_lease_dispose(held);
	return 0;
}

/*
 * Take what the run needs: the invocation's lease (a leased run) or the
 * pipeline's (an exclusive run), then make sure the other kind is not held.
 * Each side writes its own lease first and reads the other's second, so of
 * a run and an undo (or bulk write) starting at once at least one sees the
 * other and steps back: they never both go ahead.  Stepping back releases
 * what was taken and tries again until the deadline.
 */
/* When a wait of wait_ms from now ends (UINT64_MAX: never). */
static uint64_t deadline_of(uint64_t wait_ms)
{
	return wait_ms > FAUCET_RUN_MAX_TTL_MS ? UINT64_MAX : faucet__now_ms() + wait_ms;
}

static int take_leases(faucet_run *r, uint64_t wait_ms, char **dead)
{
	uint64_t deadline = deadline_of(wait_ms);
	char what[FAUCET_KEY_MAX + 32];

	for (;;) {
		faucet_lease other;
		char *other_key = NULL;
		int rc, found = 0;

		if (r->leased) {
			free(*dead);
			rc = claim_lease(r, r->lease_key, r->scope, deadline, &r->lease,
					 &r->lease_expires, dead);
			if (rc == 0)
				rc = live_pipeline_lease(r, &other, &found);
		} else {
			(void)snprintf(what, sizeof(what), "pipeline %s", r->pipeline);
			rc = claim_lease(r, r->plock_key, what, deadline, &r->plock,
					 &r->plock_expires, NULL);
			if (rc == 0)
				rc = live_run_lease(r, &other, &other_key, &found);
		}
		r->lease_renewed_at = r->plock_renewed_at = wall_now();
		if (rc == 0 && !found)
			return 0;
		if (rc != 0) {
			release_keeping_error(r);
			return rc;
		}
		(void)release_leases(r);
		if (faucet__now_ms() >= deadline) {
			(void)snprintf(what, sizeof(what), "pipeline %s", r->pipeline);
			rc = busy(what, other_key ? other_key : r->plock_key, &other);
			faucet_lease_dispose(&other);
			free(other_key);
			return rc;
		}
		faucet_lease_dispose(&other);
		free(other_key);
		sleep_ms(50);
	}
}

/* The keys in a dead run's marker (for its status entry). */
static int dead_run_keys(faucet_run *r, const char *dead, faucet_strarray *keys, int *has_marker)
{
	char *mk = faucet_run__marker_key(r->scope, dead);
	run_marker m;
	int rc;

	*has_marker = 0;
	if (mk == NULL)
		return FAUCET_ENOMEM;
	rc = faucet_run__marker_load(r->s, mk, dead, &m, has_marker, NULL);
	for (size_t i = 0; rc == 0 && i < m.count; i++)
		rc = faucet__strarray_push(keys, m.items[i].key);
	faucet_run__marker_dispose(&m);
	free(mk);
	return rc;
}

static int check_index(faucet_run *r)
{
	faucet_value *v = NULL;
	faucet_strarray runs = {0};
	int rc = faucet_store_get(r->s, r->index_key, &v);

	if (rc == 0)
		rc = faucet_run__index_parse(v, r->index_key, &runs);
	faucet_strarray_dispose(&runs);
	if (rc == 0) {
		r->index_seen = v;
		r->index_seen_ok = 1;
	} else {
		faucet_value_free(v);
	}
	return rc;
}

/* Record the run as "running" (marking a dead predecessor abandoned). */
static int start_entry(faucet_run *r, const char *dead, const faucet_strarray *dead_keys)
{
	start_ctx c = {r, r->command, dead, dead_keys};
	int rc = status_update(r, edit_start, &c);

	if (rc == 0)
		r->started = 1;
	return rc;
}

/* Each version's size of faucet_run_options. */
static const size_t run_options_sizes[] = {offsetof(faucet_run_options, exclusive),
					   sizeof(faucet_run_options)};

int faucet_run_options_init(faucet_run_options *o, unsigned int version)
{
	static const faucet_run_options defaults = FAUCET_RUN_OPTIONS_INIT;

	return faucet__options_init(o, &defaults, run_options_sizes, version,
				    FAUCET_RUN_OPTIONS_VERSION, "faucet_run_options");
}

static int load_run_options(const faucet_run_options *opts, faucet_run_options *o)
{
	faucet_run_options def = FAUCET_RUN_OPTIONS_INIT;

	if (opts == NULL) {
		*o = def;
		return 0;
	}
	if (faucet__options_load(o, sizeof(*o), opts, run_options_sizes, FAUCET_RUN_OPTIONS_VERSION,
				 "faucet_run_options") != 0)
		return FAUCET_EINVALID;
	if (o->lease_ttl_ms != 0 && o->lease_ttl_ms < 1000)
		return faucet_error_set(FAUCET_EINVALID, "lease TTL must be at least 1s");
	if (o->lease_ttl_ms > FAUCET_RUN_MAX_TTL_MS)
		return faucet_error_set(FAUCET_EINVALID, "lease TTL of %llu ms is over the limit "
					"of 30 days", (unsigned long long)o->lease_ttl_ms);
	if (o->wait_ms > FAUCET_RUN_MAX_TTL_MS && o->wait_ms != FAUCET_RUN_WAIT_FOREVER)
		return faucet_error_set(FAUCET_EINVALID, "lease wait of %llu ms is over the limit "
					"of 30 days", (unsigned long long)o->wait_ms);
	return 0;
}

int faucet_run_begin(faucet_run **out, faucet_store *s, const char *pipeline,
		     const faucet_run_options *opts)
{
	faucet_run_options o;
	faucet_strarray dead_keys = {0};
	faucet_run *r = NULL;
	char *dead = NULL;
	int rc, dead_marker = 0;

	if (out == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_run_begin: out is NULL");
	*out = NULL;
	if ((rc = load_run_options(opts, &o)) != 0)
		return rc;
	rc = run_new(&r, s, pipeline,
		     o.pipeline_level ? NULL : (o.row ? o.row : FAUCET_RUN_DEFAULT_ROW));
	if (rc != 0)
		return rc;
	r->ttl_s = (int64_t)(((o.lease_ttl_ms ? o.lease_ttl_ms : FAUCET_RUN_DEFAULT_TTL_MS) +
			      999) / 1000);
	if ((rc = set_id(r, NULL)) != 0)
		goto fail;
	if ((o.command != NULL && (r->command_own = faucet__strdup(o.command)) == NULL) ||
	    (r->plock_key = faucet_run__key(r->pipeline, "__lease__")) == NULL) {
		rc = FAUCET_ENOMEM;
		goto fail;
	}
	r->command = r->command_own;
	/* Every bookkeeping document this run will update must be ours before
	 * anything is written: the index is updated only at the end, and
	 * finding someone else's data there then would leave a half-recorded
	 * run. */
	if ((rc = check_index(r)) != 0)
		goto fail;
	r->leased = !o.pipeline_level && !o.no_lease;
	if (r->leased && o.exclusive) {
		rc = faucet_error_set(FAUCET_EINVALID, "an exclusive run takes no invocation lease "
				      "(set no_lease or pipeline_level)");
		goto fail;
	}
	if (r->leased || o.exclusive) {
		if ((r->holder = faucet__holder_id()) == NULL) {
			rc = FAUCET_ENOMEM;
			goto fail;
		}
		if ((rc = take_leases(r, o.wait_ms, &dead)) != 0)
			goto fail;
		if (dead != NULL && (rc = dead_run_keys(r, dead, &dead_keys, &dead_marker)) != 0)
			goto fail;
	}
	/* A leased run is recorded "running" at once (children join it); any
	 * other run with its first change, so that one changing nothing
	 * leaves no trace. */
	r->lazy = !r->leased;
	if (!r->lazy && (rc = start_entry(r, dead, &dead_keys)) != 0)
		goto fail;
	/* The dead run never reached its end, where runs join the index:
	 * add it now so that its marker is retained and retired like others. */
	if (dead_marker)
		(void)index_add(s, r->scope, r->index_key, dead);
	free(dead);
	faucet_strarray_dispose(&dead_keys);
	*out = r;
	return 0;
fail:
	if (r->lease != NULL || r->plock != NULL)
		release_keeping_error(r);
	free(dead);
	faucet_strarray_dispose(&dead_keys);
	faucet_run_free(r);
	return rc;
}

int faucet_run_join(faucet_run **out, faucet_store *s, const char *pipeline, const char *row,
		    const char *run_id)
{
	faucet_value *v = NULL;
	faucet_run *r = NULL;
	faucet_lease held;
	int rc;

	if (out == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_run_join: out is NULL");
	*out = NULL;
	if (!faucet_run__valid_id(run_id))
		return faucet_error_set(FAUCET_EINVALID, "'%s' is not a run id", run_id ? run_id : "");
	if ((rc = run_new(&r, s, pipeline, row ? row : FAUCET_RUN_DEFAULT_ROW)) != 0)
		return rc;
	r->joined = 1;
	if ((rc = set_id(r, run_id)) != 0)
		goto fail;
	if ((rc = faucet_store_get(s, r->lease_key, &v)) != 0)
		goto fail;
	memset(&held, 0, sizeof(held));
	if (v != NULL && (rc = faucet_lease_parse(v, r->lease_key, &held)) != 0)
		goto fail;
	if (v == NULL || held.run == NULL || strcmp(held.run, run_id) != 0 ||
	    !faucet__lease_live(&held, wall_now())) {
		rc = faucet_error_set(FAUCET_ELEASELOST, "run %s no longer holds %s: %s", run_id,
				      r->scope,
				      v == NULL ? "its lease is gone (released or broken)"
				      : held.run == NULL || strcmp(held.run, run_id) != 0
					      ? "another run took it over"
				      : faucet__holder_dead(held.holder)
					      ? "the process holding it has died"
					      : "its lease expired");
		if (v != NULL && held.run != NULL && strcmp(held.run, run_id) != 0)
			(void)faucet_error_set(FAUCET_ELEASELOST,
					       "run %s no longer holds %s: run %s (holder %s) took "
					       "it over", run_id, r->scope, held.run, held.holder);
		faucet_lease_dispose(&held);
		goto fail;
	}
	faucet_lease_dispose(&held);
	faucet_value_free(v);
	*out = r;
	return 0;
fail:
	faucet_value_free(v);
	faucet_run_free(r);
	return rc;
}

/* An environment variable's value, or NULL when unset or empty. */
static const char *env_text(const char *name)
{
	const char *v = getenv(name);

	return v != NULL && *v != '\0' ? v : NULL;
}

int faucet_run_join_env(faucet_run **out, faucet_store *s, const char *pipeline, const char *row)
{
	const char *id = env_text("FAUCET_RUN_ID"), *jp = env_text("FAUCET_RUN_PIPELINE");
	const char *jr = env_text("FAUCET_RUN_ROW");

	if (out == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_run_join_env: out is NULL");
	*out = NULL;
	if (id == NULL)
		return FAUCET_ENOTFOUND;
	if (jp == NULL)
		return faucet_error_set(FAUCET_EINVALID,
					"FAUCET_RUN_ID=%s is set but FAUCET_RUN_PIPELINE is not: "
					"which run to join is unknown (`faucet run` sets both)",
					id);
	if (jr == NULL)
		jr = FAUCET_RUN_DEFAULT_ROW;
	if ((pipeline != NULL && strcmp(pipeline, jp) != 0) || (row != NULL && strcmp(row, jr) != 0))
		return FAUCET_ENOTFOUND;
	return faucet_run_join(out, s, jp, jr, id);
}

/* ---- fencing ---------------------------------------------------------------------------- */

static int lease_lost(faucet_run *r, const char *why)
{
	return faucet_error_set(FAUCET_ELEASELOST, "run %s lost its lease on %s (%s); nothing written",
				r->id, r->scope, why);
}

static int same_text(const faucet_value *a, const faucet_value *b);

/* Rewrite a lease we hold with a new expiry (compare-and-put against what
 * we last wrote).  FAUCET_ELEASELOST when it was taken over. */
static int renew_one(faucet_run *r, const char *key, faucet_value **held, int64_t *expires,
		     int64_t *renewed_at)
{
	faucet_value *next = NULL;
	int64_t now = wall_now(), until = lease_until(r, now);
	int rc, written = 0;

	if (*held == NULL)
		return 0;
	/* Past its expiry the lease may already have been judged gone - the
	 * run abandoned, undone, its invocation taken by another run - so it
	 * is lost, never brought back: renewing it would let this run write
	 * on after an undo of it (history seed redis 1395586430). */
	if (*expires <= now)
		return lease_lost(r, "it expired before it was renewed");
	rc = faucet__lease_doc(r->holder, until, r->id, &next);
	if (rc == 0)
		rc = faucet__lease_write(r->s, key, *held, next, until, &written);
	if (rc != 0 || !written) {
		faucet_value_free(next);
		return rc != 0 ? rc : lease_lost(r, "another run took it over");
	}
	faucet_value_free(*held);
	*held = next;
	*expires = until;
	*renewed_at = now;
	return 0;
}

/* Check that the lease at `key` is still the one we wrote; renew it when a
 * third of its TTL has passed (a long import keeps its pipeline lease by
 * writing, without a thread to renew it). */
static int check_own(faucet_run *r, const char *key, faucet_value **held, int64_t *expires,
		     int64_t *renewed_at)
{
	faucet_value *v = NULL;
	int rc, same;

	if (*held == NULL)
		return 0;
	if ((rc = faucet_store_get(r->s, key, &v)) != 0)
		return rc;
	if (v == NULL)
		return lease_lost(r, "the lease is gone");
	/* Most stores hand back the exact text we wrote: compare bytes first,
	 * values only when the store re-renders (PostgreSQL). */
	same = same_text(v, *held) || faucet_value_equal(v, *held);
	faucet_value_free(v);
	if (!same)
		return lease_lost(r, "another run took it over");
	if (*expires <= wall_now() || wall_now() - *renewed_at >= (r->ttl_s + 2) / 3)
		return renew_one(r, key, held, expires, renewed_at);
	return 0;
}

/* Whether the run may still write.  Own leases: each stored lease must be
 * the one we wrote.  Joined run: the lease must name our run, be live and
 * its holder alive - the orphans of a killed `faucet run` write nothing. */
static int fence(faucet_run *r)
{
	faucet_value *v = NULL;
	faucet_lease held;
	int rc;

	if (r->ended)
		return faucet_error_set(FAUCET_EINVALID, "run %s has ended", r->id);
	if (!r->joined) {
		rc = check_own(r, r->lease_key, &r->lease, &r->lease_expires, &r->lease_renewed_at);
		if (rc == 0)
			rc = check_own(r, r->plock_key, &r->plock, &r->plock_expires,
				       &r->plock_renewed_at);
		return rc;
	}
	if ((rc = faucet_store_get(r->s, r->lease_key, &v)) != 0)
		return rc;
	if (v == NULL)
		return lease_lost(r, "the lease is gone");
	rc = faucet_lease_parse(v, r->lease_key, &held);
	faucet_value_free(v);
	if (rc != 0)
		return rc;
	if (held.run == NULL || strcmp(held.run, r->id) != 0)
		rc = lease_lost(r, "another run took it over");
	else if (held.expires_at <= wall_now())
		rc = lease_lost(r, "it expired");
	else if (faucet__holder_dead(held.holder))
		rc = lease_lost(r, "the process holding it has died");
	faucet_lease_dispose(&held);
	return rc;
}

int faucet_run_renew(faucet_run *r)
{
	int rc;

	if (r == NULL || r->joined)
		return 0;
	rc = renew_one(r, r->lease_key, &r->lease, &r->lease_expires, &r->lease_renewed_at);
	if (rc == 0)
		rc = renew_one(r, r->plock_key, &r->plock, &r->plock_expires, &r->plock_renewed_at);
	return rc;
}

/* ---- before-images ---------------------------------------------------------------------- */

static int is_recorded(faucet_run *r, const char *key, size_t *at)
{
	int found = 0;

	*at = faucet__find_sorted_near(r->recorded.strings, r->recorded.count, sizeof(char *), key,
				       &r->recorded_near, &found);
	return found;
}

/* Room for `need` keys in `recorded` and its two parallel arrays (one
 * capacity for the three, kept in after_cap). */
static int reserve_recorded(faucet_run *r, size_t need)
{
	size_t cap = r->after_cap, c;
	void *p;

	if (need <= cap)
		return 0;
	c = cap;
	if ((p = faucet__reserve(r->recorded.strings, &c, need, sizeof(char *), 64)) == NULL)
		return FAUCET_ENOMEM;
	r->recorded.strings = p;
	c = cap;
	if ((p = faucet__reserve(r->after, &c, need, sizeof(*r->after), 64)) == NULL)
		return FAUCET_ENOMEM;
	r->after = p;
	c = cap;
	if ((p = faucet__reserve(r->after_known, &c, need, sizeof(*r->after_known), 64)) == NULL)
		return FAUCET_ENOMEM;
	r->after_known = p;
	r->after_cap = c;
	return 0;
}

static int compare_keys(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Add the keys not yet recorded.  The new ones are sorted and merged in
 * one pass: inserting them one at a time into the sorted array would move
 * it once per key, quadratic for a document not in key order. */
static int remember(faucet_run *r, const char *const *keys, size_t n)
{
	size_t k = 0, at, count = r->recorded.count;
	char **fresh;
	int rc = 0;

	if ((fresh = faucet__calloc(n ? n : 1, sizeof(*fresh))) == NULL)
		return FAUCET_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (!is_recorded(r, keys[i], &at))
			fresh[k++] = (char *)keys[i];
	}
	if (!faucet__names_sorted(fresh, k, sizeof(*fresh)))
		qsort(fresh, k, sizeof(*fresh), compare_keys);
	{
		size_t u = 0; /* drop duplicates */
		for (size_t i = 0; i < k; i++) {
			if (u == 0 || strcmp(fresh[u - 1], fresh[i]) != 0)
				fresh[u++] = fresh[i];
		}
		k = u;
	}
	if (k > 0)
		rc = reserve_recorded(r, count + k);
	for (size_t i = 0; rc == 0 && i < k; i++) {
		if ((fresh[i] = faucet__strdup(fresh[i])) == NULL) {
			for (size_t j = 0; j < i; j++)
				free(fresh[j]);
			rc = FAUCET_ENOMEM;
		}
	}
	if (rc == 0 && k > 0) {
		/* Merge from the back, so nothing is overwritten before it moved. */
		char **strings = r->recorded.strings;
		size_t i = count, j = k, w = count + k;

		while (j > 0) {
			if (i > 0 && strcmp(strings[i - 1], fresh[j - 1]) > 0) {
				i--;
				w--;
				strings[w] = strings[i];
				r->after[w] = r->after[i];
				r->after_known[w] = r->after_known[i];
			} else {
				j--;
				w--;
				strings[w] = fresh[j];
				r->after[w] = NULL;
				r->after_known[w] = AFTER_NONE;
			}
		}
		r->recorded.count = count + k;
	}
	free(fresh);
	return rc;
}

/* The keys not yet recorded (*todo_keys, borrowed from keys) and their
 * current values (*todo_vals, NULL = absent), read with get_many: a
 * snapshot where the store has one, and far fewer round trips or system
 * calls than a get each.  The caller frees both arrays and the values. */
static int read_before(faucet_run *r, const char *const *keys, size_t n,
		       const char ***todo_keys, faucet_value ***todo_vals, size_t *todo)
{
	const char **want;
	faucet_value **got;
	size_t m = 0, at;
	int rc = 0;

	*todo = 0;
	*todo_keys = want = faucet__calloc(n ? n : 1, sizeof(*want));
	*todo_vals = got = faucet__calloc(n ? n : 1, sizeof(*got));
	if (want == NULL || got == NULL)
		return FAUCET_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (!r->joined && is_recorded(r, keys[i], &at))
			continue;
		want[m++] = keys[i];
	}
	/* A chunk at a time: a window ahead can be half a million keys, more
	 * than a server store should get in one request. */
	for (size_t from = 0; rc == 0 && from < m; from += READ_CHUNK) {
		size_t k = m - from < READ_CHUNK ? m - from : READ_CHUNK;

		rc = faucet_store_get_many(r->s, want + from, k, got + from);
	}
	*todo = m; /* on error the values read so far are freed by the caller */
	return rc;
}

/* What a write of `key` by this handle did. */
enum { NOTE_WROTE, NOTE_NOTHING, NOTE_UNKNOWN };

/* Note what a write of `key` by this handle left: `v` (NULL = absent) when
 * it wrote, nothing when it changed nothing (a condition that did not
 * hold), else unknown. */
static void note_after(faucet_run *r, const char *key, const faucet_value *v, int how)
{
	size_t at;

	if (how == NOTE_NOTHING || !is_recorded(r, key, &at))
		return;
	faucet_value_free(r->after[at]);
	r->after[at] = how == NOTE_WROTE && v != NULL ? faucet_value_ref((faucet_value *)v) : NULL;
	r->after_known[at] = how == NOTE_WROTE ? AFTER_KNOWN : AFTER_UNKNOWN;
}

static int note_of(int rc)
{
	return rc == 0 ? NOTE_WROTE : NOTE_UNKNOWN;
}

/* Whether the run's after-images go into the marker ahead of each write:
 * a leased run, which other processes may join, and every joined handle.
 * (A run nobody can join keeps them in memory and records them at its end:
 * one marker write for the whole run.) */
static int logs_after(const faucet_run *r)
{
	return r->leased || r->joined;
}

/* Whether two values are the same text (NULL = absent). */
static int same_value(const faucet_value *a, const faucet_value *b)
{
	return a == NULL ? b == NULL : same_text(a, b);
}

/* ---- the marker -------------------------------------------------------------------------- */

typedef int (*marker_edit_fn)(faucet_run *r, run_marker *m, void *ctx, int *changed);

/* A key's put that goes with a marker write (guarded_put).  With `cond`,
 * the key's first write by this run: it lands only while the key still
 * holds `expected`, the before-image the marker write records - a put by
 * someone else in between is not overwritten unseen (§8.2). */
typedef struct {
	const char *key;
	const faucet_value *value;
	int cond;
	const faucet_value *expected;
	int done;         /* the marker was written and the put tried: rc is its result */
	int rc;
	int moved;        /* cond did not hold: the key was not written */
	int marker_moved; /* ... and the marker was (the one-by-one fallback) */
} key_put;

/*
 * A lazy run's first change, when it is one key's put, records the run
 * with it: the status entry "running" and the run in the index are two
 * more guards of the marker's guarded write (faucet__store_put_guarded_many:
 * on the file store one data barrier for all four files, the key renamed
 * only once the other three are durable) instead of two writes of their
 * own.  The order every reader relies on holds: the run is recorded, and
 * its before-image durable, before the key changes.
 */
typedef struct {
	faucet_value *scur, *snext, *icur, *inext;
	run_status st;
	int st_ok;
	faucet_strarray dropped;
} first_guards;

static void first_guards_dispose(first_guards *g)
{
	faucet_value_free(g->scur);
	faucet_value_free(g->snext);
	faucet_value_free(g->icur);
	faucet_value_free(g->inext);
	if (g->st_ok)
		faucet_run__status_dispose(&g->st);
	faucet_strarray_dispose(&g->dropped);
	memset(g, 0, sizeof(*g));
}

/* The status and index documents as they are to be written; attempt 0
 * expects the index begin read, later attempts read both again. */
static int first_guards_build(faucet_run *r, int attempt, first_guards *g)
{
	start_ctx c = {r, r->command, NULL, NULL};
	int rc;

	memset(g, 0, sizeof(*g));
	if ((rc = faucet_store_get(r->s, r->status_key, &g->scur)) != 0 ||
	    (rc = faucet_run__status_parse(g->scur, r->status_key, &g->st)) != 0)
		return rc;
	g->st_ok = 1;
	if ((rc = edit_start(&g->st, &c)) != 0 || (rc = faucet_run__status_value(&g->st, &g->snext)) != 0)
		return rc;
	if (attempt == 0 && r->index_seen_ok)
		g->icur = r->index_seen ? faucet_value_ref(r->index_seen) : NULL;
	else if ((rc = faucet_store_get(r->s, r->index_key, &g->icur)) != 0)
		return rc;
	return index_next(g->icur, r->index_key, r->id, &g->inext, &g->dropped);
}

/* The first `done` pushed-out runs had their markers dropped with the
 * guards: only the rest is left for the end to retire, and the parts of
 * those (a big import's) to the end too (parts_retire). */
static void first_guards_unretired(faucet_run *r, first_guards *g, size_t done)
{
	if (done == 0)
		return;
	/* Out of memory, a part is left behind: nothing reads it. */
	for (size_t i = 0; i < done && i < g->dropped.count; i++)
		(void)faucet__strarray_push_owned(&r->parts_retire, g->dropped.strings[i]);
	memmove(g->dropped.strings, g->dropped.strings + done,
		(g->dropped.count - done) * sizeof(g->dropped.strings[0]));
	g->dropped.count -= done;
}

/* The guards were written: the run is recorded and indexed, its status
 * kept as the expected value of the end's update. */
static void first_guards_keep(faucet_run *r, first_guards *g)
{
	faucet_value_free(r->status);
	if (r->scache_ok)
		faucet_run__status_dispose(&r->scache);
	r->status = g->snext;
	r->scache = g->st;
	r->scache_ok = 1;
	g->snext = NULL;
	g->st_ok = 0;
	faucet_strarray_dispose(&r->retire);
	r->retire = g->dropped;
	memset(&g->dropped, 0, sizeof(g->dropped));
	r->started = r->indexed = 1;
}

static int changed_keys(const run_marker *m, faucet_strarray *keys);
static int end_edit_ok(faucet_run *r, run_status *st, const faucet_strarray *keys);

/* A run ended with its put (faucet_run_put_end): its status as the end
 * leaves it, "ok" with the keys the marker says it changed - g->st edited
 * into it (g->snext, the "running" document, is already made). */
static int folded_end(faucet_run *r, first_guards *g, faucet_value **final)
{
	faucet_strarray keys = {0};
	int rc = changed_keys(&r->mcache, &keys);

	*final = NULL;
	if (rc == 0)
		rc = end_edit_ok(r, &g->st, &keys);
	if (rc == 0)
		rc = faucet_run__status_value(&g->st, final);
	faucet_strarray_dispose(&keys);
	return rc;
}

/* The guards and the key's put, conditional with kp->cond. */
static int put_with_guards(faucet_run *r, const faucet_store_guard *gs, size_t n,
			   const char *const *drop, size_t ndrop, key_put *kp,
			   const faucet_store_guard *then, int *written, int *then_written)
{
	faucet_store_guard put = {kp->key, kp->expected, kp->value};

	*then_written = 0;
	if (kp->cond)
		return faucet__store_put_guarded_if(r->s, gs, n, drop, ndrop, &put, then, written,
						    then_written, &kp->moved);
	if (then != NULL)
		return faucet__store_put_guarded_then(r->s, gs, n, drop, ndrop, kp->key, kp->value,
						      then, written, then_written);
	if (n == 1)
		return faucet__store_put_guarded(r->s, gs[0].key, gs[0].expected, gs[0].value,
						 kp->key, kp->value, written);
	return faucet__store_put_guarded_many(r->s, gs, n, drop, ndrop, kp->key, kp->value,
					      written);
}

/* The guarded put of a run not yet recorded; with `final`, its end's
 * status follows the key (*ended when it landed). */
static int first_put(faucet_run *r, first_guards *g, faucet_value *cur, faucet_value *next,
		     const char *const *drop, size_t ndrop, key_put *kp,
		     const faucet_value *final, int *written, int *ended)
{
	faucet_store_guard gs[3] = {{r->status_key, g->scur, g->snext},
				    {r->index_key, g->icur, g->inext},
				    {r->marker_key, cur, next}};
	faucet_store_guard then = {r->status_key, g->snext, final};

	return put_with_guards(r, gs, 3, drop, ndrop, kp, final != NULL ? &then : NULL, written,
			       ended);
}

/* The marker's write `cur` -> `next` with the put of put_key; for a run
 * not yet recorded, with its status and index entries (first_guards), and
 * for one that ends with this put, with its end where the store can. */
static int guarded_put(faucet_run *r, int attempt, faucet_value *cur, faucet_value *next,
		       key_put *kp, int *written)
{
	faucet_value *final = NULL;
	first_guards g;
	int rc, ended = 0;

	if (!r->lazy || r->started) {
		faucet_store_guard mg = {r->marker_key, cur, next};

		return put_with_guards(r, &mg, 1, NULL, 0, kp, NULL, written, &ended);
	}
	*written = 0;
	if ((rc = first_guards_build(r, attempt, &g)) == 0) {
		char *drop[FAUCET_STORE_GUARDS_MAX];
		size_t ndrop = 0;

		/* The markers the index pushes out go with it (one run's
		 * index, full, drops one); any beyond are left to the end. */
		for (; rc == 0 && ndrop < g.dropped.count && ndrop < FAUCET_STORE_GUARDS_MAX;
		     ndrop++)
			if ((drop[ndrop] = faucet_run__marker_key(r->scope, g.dropped.strings[ndrop])) ==
			    NULL)
				rc = FAUCET_ENOMEM;
		if (rc == 0 && r->end_with_put && r->undoes == NULL)
			rc = folded_end(r, &g, &final);
		if (rc == 0)
			rc = first_put(r, &g, cur, next, (const char *const *)drop, ndrop, kp, final,
				       written, &ended);
		if (*written)
			first_guards_unretired(r, &g, ndrop);
		for (size_t i = 0; i < ndrop; i++)
			free(drop[i]);
		if (*written) {
			first_guards_keep(r, &g);
			if (ended) {
				/* The status is the end's: kept as the expected value
				 * of any later update. */
				faucet_value_free(r->status);
				r->status = final;
				final = NULL;
				r->end_recorded = 1;
			} else if (final != NULL) {
				/* The kept parse is the end's, the store's the
				 * start's: the end reads the store's. */
				faucet_run__status_dispose(&r->scache);
				r->scache_ok = 0;
			}
		} else if (rc != 0) {
			r->started = 1; /* some may have landed: the end records the failure */
		}
	}
	faucet_value_free(final);
	first_guards_dispose(&g);
	return rc;
}

/*
 * Read-modify-write of the run's marker with compare-and-put, like
 * status_update.  Our own last write of the marker is tried first as the
 * expected value (kept parsed in mcache: a run's next write of a key then
 * costs no re-parse of a marker that may be large); a joined handle always
 * reads it, since the run's other handles write it too.  With `put`, the
 * key's put `kp` goes with the marker's write (faucet__store_put_guarded: one
 * data barrier for both on the file store; kp->rc gets the put's result,
 * kp->done whether it was tried).  A conditional put whose key moved
 * returns 0 with kp->moved set, the marker written only with
 * kp->marker_moved.  An edit that changes nothing writes nothing.
 */
static int marker_update(faucet_run *r, int reread, marker_edit_fn edit, void *ctx, key_put *kp)
{
	reread |= r->joined;
	for (int attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
		faucet_value *cur = r->marker, *fresh = NULL, *next = NULL;
		int rc = 0, written = 0, changed = 0;

		if (reread || attempt > 0 || !r->mcache_ok) {
			if ((reread || attempt > 0) &&
			    (rc = faucet_store_get(r->s, r->marker_key, &fresh)) != 0)
				return rc;
			if (reread || attempt > 0)
				cur = fresh;
			faucet_run__marker_dispose(&r->mcache);
			r->mcache_ok = 0;
			if ((rc = faucet_run__marker_parse(cur, r->marker_key, r->id, &r->mcache)) != 0) {
				faucet_value_free(fresh);
				return rc;
			}
		}
		/* From here the cache is ahead of the store until the write lands. */
		r->mcache_ok = 0;
		rc = edit(r, &r->mcache, ctx, &changed);
		/* A run not yet recorded whose put records nothing (prepare
		 * leaves its start to the guarded put) is recorded on its own. */
		if (rc == 0 && !changed && kp != NULL && r->lazy && !r->started)
			rc = start_entry(r, NULL, NULL);
		if (rc == 0 && changed && (rc = faucet_run__marker_value(&r->mcache, &next)) == 0) {
			if (kp != NULL) {
				kp->rc = guarded_put(r, attempt, cur, next, kp, &written);
				/* The marker was written and the put failed after it:
				 * the marker is ours, the put's error the caller's. */
				kp->done = written && !kp->moved;
				kp->marker_moved = written && kp->moved;
				if (!written)
					rc = kp->rc;
				if (rc == 0 && kp->moved && !written) {
					faucet_value_free(fresh);
					faucet_value_free(next);
					return 0; /* nothing written: the caller reads the key again */
				}
			} else {
				rc = faucet_store_compare_and_put(r->s, r->marker_key, cur, next,
								  &written);
			}
		}
		if (rc == 0 && (written || !changed)) {
			/* cur may be r->marker itself: take it before letting go. */
			faucet_value *kept = written ? next : faucet_value_ref(cur);

			faucet_value_free(r->marker);
			r->marker = kept;
			r->mcache_ok = 1;
			faucet_value_free(fresh);
			return 0;
		}
		faucet_value_free(fresh);
		faucet_value_free(next);
		if (rc != 0)
			return rc;
	}
	return faucet_error_set(FAUCET_ECONTENTION, "%s: gave up after %d lost races", r->marker_key,
				CAS_ATTEMPTS);
}

/* What a write asks of the marker. */
typedef struct {
	const char *const *keys;
	const faucet_value *const *vals; /* the values to write (NULL = delete); NULL: none */
	size_t n;
	const char **todo_keys;          /* keys without a before-image here, and */
	faucet_value **todo_vals;        /* their current values (NULL = absent) */
	size_t todo;
	/* n == 1: the key's image before the edit (see forget_intent) */
	int had_image, had_after;
	faucet_value *prev_after;
	/* A plain put or delete by a run that keeps its after-images in
	 * memory: a key's first write sets its after-image in the marker
	 * write that records its before-image (that write happens anyway),
	 * so the end has no marker to rewrite when the write succeeds. */
	int after_ahead;
	/* Keys this handle recorded ahead and has not written yet, read
	 * again just before this write (see read_ahead_again). */
	const char **again_keys;
	faucet_value **again_vals;
	size_t again;
	/* A retry after this handle's conditional first write of the key found
	 * it moved: the before-image its marker holds is replaced by what the
	 * key holds now, the after-image it logged ahead notwithstanding. */
	int moved;
} write_req;

static void req_dispose(write_req *q)
{
	for (size_t i = 0; q->todo_vals != NULL && i < q->todo; i++)
		faucet_value_free(q->todo_vals[i]);
	for (size_t i = 0; q->again_vals != NULL && i < q->again; i++)
		faucet_value_free(q->again_vals[i]);
	free(q->again_vals);
	free(q->again_keys);
	q->again_vals = NULL;
	q->again_keys = NULL;
	q->again = 0;
	free(q->todo_vals);
	free(q->todo_keys);
	faucet_value_free(q->prev_after);
	q->todo_vals = NULL;
	q->todo_keys = NULL;
	q->prev_after = NULL;
}

/*
 * Before a write, the keys among q->keys that this handle recorded ahead
 * (an import's window) and has not written yet are read again: a put by
 * someone else that landed on one since is what the key holds just before
 * this run changes it, so it, not the value the window read, is the key's
 * before-image (edit_write replaces the recorded one when they differ).
 * Then an undo gives that put back.  The window between this read and the
 * write is that of any first write of a key (read_before).
 */
static int read_ahead_again(faucet_run *r, write_req *q)
{
	size_t m = 0, at;
	int rc = 0;

	for (size_t i = 0; i < q->n; i++)
		if (is_recorded(r, q->keys[i], &at) && r->after_known[at] == AFTER_NONE)
			m++;
	if (m == 0)
		return 0;
	q->again_keys = faucet__calloc(m, sizeof(*q->again_keys));
	q->again_vals = faucet__calloc(m, sizeof(*q->again_vals));
	if (q->again_keys == NULL || q->again_vals == NULL)
		return FAUCET_ENOMEM;
	for (size_t i = 0; i < q->n; i++)
		if (is_recorded(r, q->keys[i], &at) && r->after_known[at] == AFTER_NONE)
			q->again_keys[q->again++] = q->keys[i];
	for (size_t from = 0; rc == 0 && from < m; from += READ_CHUNK) {
		size_t k = m - from < READ_CHUNK ? m - from : READ_CHUNK;

		rc = faucet_store_get_many(r->s, q->again_keys + from, k, q->again_vals + from);
	}
	return rc;
}

/* Whether `key` is one of the keys this write records a before-image of. */
static int is_todo(const write_req *q, const char *key)
{
	for (size_t i = 0; i < q->todo; i++)
		if (strcmp(q->todo_keys[i], key) == 0)
			return 1;
	return 0;
}

/* Add the missing before-images; for a run that logs them, set each key's
 * after-image to the value about to be written. */
static int edit_write(faucet_run *r, run_marker *m, void *ctx, int *changed)
{
	write_req *q = ctx;
	int rc, added = 0;

	if (q->n == 1) {
		run_image *img = faucet_run__marker_find(m, q->keys[0]);

		faucet_value_free(q->prev_after);
		q->prev_after = NULL;
		q->had_image = img != NULL;
		q->had_after = img != NULL && img->after_known;
		if (q->had_after && img->after != NULL)
			q->prev_after = faucet_value_ref(img->after);
	}
	if ((rc = faucet_run__marker_add_many(m, q->todo_keys, q->todo_vals, q->todo, &added)) != 0)
		return rc;
	*changed = added;
	for (size_t i = 0, at = 0; i < q->again; i++) {
		run_image *img = faucet_run__marker_find(m, q->again_keys[i]);

		/* Changed by someone else since it was recorded ahead (and not
		 * written by this run): its value now is its before-image. */
		if (img == NULL || faucet_value_equal(img->before, q->again_vals[i]))
			continue;
		/* An after-image logged ahead is this write's own only on its
		 * retry, when it is the value this write gives that key
		 * (again_keys are q->keys' own pointers, in their order). */
		while (at < q->n && q->keys[at] != q->again_keys[i])
			at++;
		if (img->after_known &&
		    !(q->moved && q->vals != NULL && at < q->n && same_value(img->after, q->vals[at])))
			continue;
		faucet_value_free(img->before);
		img->before = q->again_vals[i] ? faucet_value_ref(q->again_vals[i]) : NULL;
		*changed = 1;
	}
	if (q->vals == NULL || (!logs_after(r) && !(q->after_ahead && added)))
		return 0;
	for (size_t i = 0; i < q->n; i++) {
		run_image *img = faucet_run__marker_find(m, q->keys[i]);

		/* Ahead only for a key this edit recorded: a later write of it
		 * leaves its after-image to the end (edit_final). */
		if (!logs_after(r) && !is_todo(q, q->keys[i]))
			continue;

		if (img == NULL) /* our own before-image vanished: not our marker */
			return faucet_error_set(FAUCET_ERROR, "%s lost the before-image of %s",
						r->marker_key, q->keys[i]);
		if (img->after_known && same_value(img->after, q->vals[i]))
			continue;
		faucet_value_free(img->after);
		img->after = q->vals[i] ? faucet_value_ref((faucet_value *)q->vals[i]) : NULL;
		img->after_known = 1;
		*changed = 1;
	}
	return 0;
}

/* Take back the after-image a compare-and-put logged ahead and then did
 * not write (its condition did not hold): the key is as it was, so its
 * image is too - gone when this write added it. */
static int edit_forget(faucet_run *r, run_marker *m, void *ctx, int *changed)
{
	write_req *q = ctx;
	run_image *img = faucet_run__marker_find(m, q->keys[0]);

	(void)r;
	*changed = 0;
	if (img == NULL)
		return 0;
	if (!q->had_image) {
		size_t at = (size_t)(img - m->items);

		free(img->key);
		faucet_value_free(img->before);
		faucet_value_free(img->after);
		memmove(img, img + 1, (m->count - at - 1) * sizeof(*img));
		m->count--;
		m->near = 0;
	} else {
		faucet_value_free(img->after);
		img->after = q->had_after && q->prev_after ? faucet_value_ref(q->prev_after) : NULL;
		img->after_known = q->had_after;
	}
	*changed = 1;
	return 0;
}

/* The value the one key of q holds as this handle is about to write it
 * first (its before-image, just read): *known 0 when the run wrote it
 * already, or when q is not one key. */
static const faucet_value *first_write_expects(const write_req *q, int *known)
{
	*known = q->n == 1 && (q->todo == 1 || q->again == 1);
	if (!*known)
		return NULL;
	return q->todo == 1 ? q->todo_vals[0] : q->again_vals[0];
}

/* Whether this write of q's one key must hold against the before-image just
 * read (*expects, borrowed from q): the handle's first write of the key -
 * for a joined handle, the run's first (the run's shared marker had no
 * image of it before this write recorded one), or that write tried again
 * after the key moved (q->moved: the image recorded anew).  A key another
 * handle of the run wrote first keeps that handle's before-image, and this
 * write of it is a later write of the run. */
static int holds_first(const faucet_run *r, const write_req *q, const faucet_value **expects)
{
	int known;

	*expects = first_write_expects(q, &known);
	if (!known || !r->joined)
		return known;
	return q->todo == 1 ? !q->had_image : q->moved;
}

/*
 * Before a write of q->keys: the run is checked and fenced, the before-image
 * of every key it has not touched yet recorded, and (a run that logs them)
 * the after-images set to what is about to be written - all in one marker
 * write, which with `kp` (one key; a handle that has not joined) carries
 * the key's put too, conditional on the before-image when it is the key's
 * first write.  *noop (may be NULL) is set when the one key already holds
 * exactly q->vals[0]: then nothing is recorded or written.
 */
static int prepare(faucet_run *r, write_req *q, key_put *kp, int *noop)
{
	size_t at;
	int rc;

	if (noop != NULL)
		*noop = 0;
	if (r == NULL)
		return faucet_error_set(FAUCET_EINVALID, "run: NULL run");
	if ((rc = fence(r)) != 0)
		return rc;
	for (size_t i = 0; i < q->n; i++) {
		if (faucet_run_is_bookkeeping_key(q->keys[i]))
			return faucet_error_set(FAUCET_EINVALID,
						"%s is run bookkeeping; a run cannot write it",
						q->keys[i]);
		if ((rc = faucet_validate_key(q->keys[i])) != 0)
			return rc;
		if (q->vals != NULL && r->parts > 0 && is_recorded(r, q->keys[i], &at) &&
		    r->after_known[at] == AFTER_PART)
			return faucet_error_set(FAUCET_EINVALID,
						"%s: %s is recorded in a part of the marker, which is "
						"never rewritten; this run cannot write it again",
						r->id, q->keys[i]);
	}
	rc = read_before(r, q->keys, q->n, &q->todo_keys, &q->todo_vals, &q->todo);
	if (rc == 0 && q->vals != NULL && (!r->joined || q->moved))
		rc = read_ahead_again(r, q);
	if (rc == 0 && noop != NULL && q->n == 1 && q->vals != NULL && q->todo == 1 &&
	    same_value(q->todo_vals[0], q->vals[0])) {
		*noop = 1;
		return 0;
	}
	if (kp != NULL && r->joined)
		kp = NULL; /* a joined handle writes its images apart from the key */
	if (rc == 0 && kp != NULL)
		kp->expected = first_write_expects(q, &kp->cond);
	/* A put's marker write records the run too (guarded_put). */
	if (rc == 0 && r->lazy && !r->started && (q->todo > 0 || q->vals != NULL) && kp == NULL)
		rc = start_entry(r, NULL, NULL);
	/* A joined handle (a command of a `faucet run`) writes its images
	 * apart from the key and looks at the lease again in between: a run
	 * whose process died since the first look - and which an undo may now
	 * take back - gets no write from the commands it left behind.  (The
	 * window left is the key's own write.) */
	if (rc == 0)
		rc = marker_update(r, 0, edit_write, q, kp);
	if (rc == 0 && kp != NULL && kp->moved && !kp->marker_moved)
		return 0; /* nothing recorded: the retry reads the key as new */
	if (rc == 0 && r->joined)
		rc = fence(r);
	if (rc == 0)
		rc = remember(r, q->keys, q->n);
	return rc;
}

int faucet_run__record(faucet_run *r, const char *const *keys, size_t n)
{
	write_req q = {.keys = keys, .n = n};
	int rc;

	if (r == NULL || r->joined)
		return 0; /* a joined handle records as it writes */
	if (n == 0)
		return 0;
	rc = prepare(r, &q, NULL, NULL);
	req_dispose(&q);
	return rc;
}

/* A key that kept moving under a run's first write of it. */
static int kept_moving(const faucet_run *r, const char *key)
{
	return faucet_error_set(FAUCET_ECONTENTION,
				"%s: %s changed under the run's first write of it %d times in a row",
				r->id, key, CAS_ATTEMPTS);
}

/* A joined handle's put of kp's key, written apart from its images (which
 * prepare recorded): with compare-and-put against the before-image when it
 * is the run's first write of the key (holds_first), plainly otherwise.
 * The outcome goes into kp as a guarded put's would (done, rc, moved). */
static void joined_put(faucet_run *r, const write_req *q, key_put *kp)
{
	const faucet_value *expects;
	int written = 0;

	kp->done = 1;
	if (!holds_first(r, q, &expects)) {
		kp->rc = faucet_store_put(r->s, kp->key, kp->value);
		return;
	}
	kp->rc = faucet_store_compare_and_put(r->s, kp->key, expects, kp->value, &written);
	kp->moved = kp->rc == 0 && !written;
}

int faucet_run_put(faucet_run *r, const char *key, const faucet_value *value)
{
	key_put kp = {0};
	int rc = 0, noop = 0;

	if (r != NULL && value == NULL)
		return faucet_error_set(FAUCET_EINVALID, "put '%s': no value (use delete)", key);
	/* The write goes with its marker write; a first write that finds the
	 * key moved since its before-image was read records it again. */
	for (int attempt = 0;; attempt++) {
		write_req q = {.keys = &key, .vals = &value, .n = 1, .after_ahead = 1,
			       .moved = attempt > 0};

		memset(&kp, 0, sizeof(kp));
		kp.key = key;
		kp.value = value;
		rc = prepare(r, &q, &kp, &noop);
		if (rc == 0 && !noop && r->joined)
			joined_put(r, &q, &kp);
		req_dispose(&q);
		if (rc != 0 || noop)
			return rc;
		if (!kp.moved)
			break;
		if (attempt + 1 >= CAS_ATTEMPTS)
			return kept_moving(r, key);
	}
	rc = kp.done ? kp.rc : faucet_store_put(r->s, key, value);
	note_after(r, key, value, note_of(rc));
	return rc;
}

int faucet_run_put_end(faucet_run *r, const char *key, const faucet_value *value, int *put_done)
{
	int rc;

	*put_done = 0;
	if (r == NULL || r->joined)
		return faucet_error_set(FAUCET_EINVALID, "only the process that began a run ends it");
	if (r->ended)
		return faucet_error_set(FAUCET_EINVALID, "run %s has already ended", r->id);
	r->end_with_put = 1;
	rc = faucet_run_put(r, key, value);
	r->end_with_put = 0;
	if (rc != 0)
		return rc;
	*put_done = 1;
	return faucet_run_end(r, FAUCET_RUN_OK, 0, NULL);
}

/* The first write of a key by a handle that has not joined is a
 * compare-and-delete against the before-image it recorded: a put that
 * landed since is recorded as the before-image instead (the retry, q.moved)
 * and deleted, not lost unseen.  `attempt` > 0: a caller's own first
 * attempt found the key moved. */
static int run_delete_from(faucet_run *r, const char *key, int attempt)
{
	const faucet_value *none = NULL;
	int rc = 0, noop = 0;

	for (;; attempt++) {
		write_req q = {.keys = &key, .vals = &none, .n = 1, .after_ahead = 1,
			       .moved = attempt > 0};
		int first = 0, deleted = 0, present;
		faucet_value *expected;

		const faucet_value *expects = NULL;

		rc = prepare(r, &q, NULL, &noop);
		if (rc == 0)
			first = holds_first(r, &q, &expects);
		expected = faucet_value_ref((faucet_value *)expects);
		req_dispose(&q);
		if (rc != 0 || noop) {
			faucet_value_free(expected);
			return rc;
		}
		present = expected != NULL; /* (absent when read again: nothing to delete) */
		if (!first)
			rc = faucet_store_delete(r->s, key);
		else if (present)
			rc = faucet_store_compare_and_delete(r->s, key, expected, &deleted);
		faucet_value_free(expected);
		if (rc != 0 || !first || !present || deleted)
			break;
		if (attempt + 1 >= CAS_ATTEMPTS)
			return kept_moving(r, key);
	}
	note_after(r, key, NULL, note_of(rc));
	return rc;
}

int faucet_run_delete(faucet_run *r, const char *key)
{
	return run_delete_from(r, key, 0);
}

/* A compare-and-put or -delete through the run (value NULL = delete). */
static int run_cas(faucet_run *r, const char *key, const faucet_value *expected,
		   const faucet_value *value, int *done)
{
	write_req q = {.keys = &key, .vals = &value, .n = 1};
	int rc = prepare(r, &q, NULL, NULL), ok = 0, first = 0;
	const faucet_value *before = NULL;

	if (rc == 0)
		first = holds_first(r, &q, &before);
	/* The key's first write: its before-image, just read, is not what the
	 * condition wants - the condition did not hold then (a put landing on
	 * the key since must not make it hold against a stale image). */
	if (rc == 0 && first && !faucet_value_equal(before, expected)) {
		note_after(r, key, value, NOTE_NOTHING);
		if (logs_after(r))
			(void)marker_update(r, 0, edit_forget, &q, NULL);
	} else if (rc == 0) {
		rc = value ? faucet_store_compare_and_put(r->s, key, expected, value, &ok)
			   : faucet_store_compare_and_delete(r->s, key, expected, &ok);
		note_after(r, key, value, rc != 0 ? NOTE_UNKNOWN : ok ? NOTE_WROTE : NOTE_NOTHING);
		/* A condition that did not hold wrote nothing: the after-image
		 * logged ahead is taken back, so that undo does not see the key
		 * as changed under it.  Left in place when that fails: a false
		 * conflict later is safe, a lost write is not. */
		if (rc == 0 && !ok && logs_after(r))
			(void)marker_update(r, 0, edit_forget, &q, NULL);
	}
	req_dispose(&q);
	if (done != NULL)
		*done = rc == 0 && ok;
	return rc;
}

int faucet_run_compare_and_put(faucet_run *r, const char *key, const faucet_value *expected,
			       const faucet_value *value, int *written)
{
	if (r != NULL && value == NULL) {
		if (written)
			*written = 0;
		return faucet_error_set(FAUCET_EINVALID, "compare-and-put '%s': no value", key);
	}
	return run_cas(r, key, expected, value, written);
}

int faucet_run_compare_and_delete(faucet_run *r, const char *key, const faucet_value *expected,
				  int *deleted)
{
	return run_cas(r, key, expected, NULL, deleted);
}

/* The value q read of keys[i] just now, and whether it read one: the
 * before-image of a key new to the run, or the value of a key recorded
 * ahead, read again.  (Both lists follow q->keys' order.) */
static int read_now(const write_req *q, size_t *todo_at, size_t *again_at, const char *key,
		    const faucet_value **now)
{
	if (*todo_at < q->todo && strcmp(q->todo_keys[*todo_at], key) == 0) {
		*now = q->todo_vals[(*todo_at)++];
		return 1;
	}
	if (*again_at < q->again && strcmp(q->again_keys[*again_at], key) == 0) {
		*now = q->again_vals[(*again_at)++];
		return 1;
	}
	return 0;
}

/* Whether every key read just now holds what its compare-and-put expects
 * (run_cas's first-write rule, for each key of the batch). */
static int batch_holds_now(const write_req *q, const faucet_store_guard *g, size_t n)
{
	size_t todo_at = 0, again_at = 0;

	for (size_t i = 0; i < n; i++) {
		const faucet_value *now = NULL;

		if (read_now(q, &todo_at, &again_at, g[i].key, &now) &&
		    !faucet_value_equal(now, g[i].expected))
			return 0;
	}
	return 1;
}

int faucet_run__compare_and_put_batch(faucet_run *r, const faucet_store_guard *g, size_t n,
				      int *held)
{
	write_req q = {.n = n};
	const char **keys = NULL;
	const faucet_value **vals = NULL;
	int rc = 0, holds = 0;

	*held = 0;
	if (r == NULL || r->joined || logs_after(r) || n == 0 || !faucet__store_has_cas_batch(r->s))
		return FAUCET_EUNSUPPORTED; /* the caller goes key by key */
	keys = faucet__calloc(n, sizeof(*keys));
	vals = faucet__calloc(n, sizeof(*vals));
	if (keys == NULL || vals == NULL)
		rc = FAUCET_ENOMEM;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		keys[i] = g[i].key;
		vals[i] = g[i].value;
	}
	q.keys = keys;
	q.vals = vals;
	if (rc == 0)
		rc = prepare(r, &q, NULL, NULL);
	if (rc == 0 && batch_holds_now(&q, g, n)) {
		rc = faucet__store_compare_and_put_batch(r->s, g, n, &holds);
		for (size_t i = 0; rc != FAUCET_EUNSUPPORTED && i < n; i++)
			note_after(r, keys[i], vals[i],
				   rc != 0 ? NOTE_UNKNOWN : holds ? NOTE_WROTE : NOTE_NOTHING);
	}
	req_dispose(&q);
	free(keys);
	free(vals);
	*held = rc == 0 && holds;
	return rc;
}

/* The keys and values of a batch (borrowed), for prepare().  Caller frees
 * both. */
static int entry_arrays(const faucet_entry *entries, size_t count, const char ***keys,
			const faucet_value ***vals)
{
	*keys = faucet__calloc(count ? count : 1, sizeof(**keys));
	*vals = faucet__calloc(count ? count : 1, sizeof(**vals));
	if (*keys == NULL || *vals == NULL) {
		free(*keys);
		free(*vals);
		*keys = NULL;
		*vals = NULL;
		return FAUCET_ENOMEM;
	}
	for (size_t i = 0; i < count; i++) {
		(*keys)[i] = entries[i].key;
		(*vals)[i] = entries[i].value;
	}
	return 0;
}

/* prepare() for `count` entries. */
static int prepare_entries(faucet_run *r, const faucet_entry *entries, size_t count)
{
	const char **keys;
	const faucet_value **vals;
	write_req q;
	int rc;

	if ((rc = entry_arrays(entries, count, &keys, &vals)) != 0)
		return rc;
	memset(&q, 0, sizeof(q));
	q.keys = keys;
	q.vals = vals;
	q.n = count;
	rc = prepare(r, &q, NULL, NULL);
	req_dispose(&q);
	free(keys);
	free(vals);
	return rc;
}

/* After a batch: the first `known` entries hold what we wrote; the rest
 * may or may not.  In order, so that a key written twice keeps its last
 * value. */
static void note_after_entries(faucet_run *r, const faucet_entry *entries, size_t count,
			       size_t known)
{
	for (size_t i = 0; i < count; i++)
		note_after(r, entries[i].key, entries[i].value,
			   i < known ? NOTE_WROTE : NOTE_UNKNOWN);
}

/* faucet__store_put_prefix, noting what landed: on an error the entries
 * before both *written and *unknown_from are in place as written; those
 * from there on failed or have an outcome we do not trust. */
static int put_prefix_noted(faucet_run *r, const faucet_entry *entries, size_t count,
			    size_t *written, size_t *unknown_from)
{
	int rc = faucet__store_put_prefix(r->s, entries, count, written, unknown_from);
	size_t known = rc == 0 ? count : *written < *unknown_from ? *written : *unknown_from;

	note_after_entries(r, entries, count, known);
	return rc;
}

static int by_key_text(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Whether the batch can be written as compare-and-put batches of the
 * store's: a value for every key (the plain path refuses a missing one)
 * and no key twice.  Sorted copies of the keys find a repeat in n log n. */
static int batch_distinct(const faucet_entry *entries, size_t count)
{
	const char **keys;
	int ok = 1;

	if (count == 0)
		return 0;
	for (size_t i = 0; i < count; i++)
		if (entries[i].key == NULL || entries[i].value == NULL)
			return 0;
	if ((keys = faucet__calloc(count, sizeof(*keys))) == NULL)
		return 0; /* the plain path then runs into the same shortage */
	for (size_t i = 0; i < count; i++)
		keys[i] = entries[i].key;
	qsort(keys, count, sizeof(*keys), by_key_text);
	for (size_t i = 1; i < count && ok; i++)
		ok = strcmp(keys[i - 1], keys[i]) != 0;
	free(keys);
	return ok;
}

/* Whether the batch, with `extra` more entries (a marker part), is one
 * compare-and-put batch of the store's: distinct, and small enough. */
static int batch_can_hold(const faucet_run *r, const faucet_entry *entries, size_t count,
			  size_t extra)
{
	return count + extra <= faucet__store_cas_batch_max(r->s) &&
	       batch_distinct(entries, count);
}

/* Guards for keys[0..n) against what q read of them just now.
 * FAUCET_EUNSUPPORTED when one was not read: this run wrote it already,
 * and its write is not a first write. */
static int guards_read(const write_req *q, const char *const *keys,
		       const faucet_value *const *vals, size_t n, faucet_store_guard *g)
{
	size_t todo_at = 0, again_at = 0;

	for (size_t i = 0; i < n; i++) {
		const faucet_value *now = NULL;

		if (!read_now(q, &todo_at, &again_at, keys[i], &now))
			return FAUCET_EUNSUPPORTED;
		g[i] = (faucet_store_guard){keys[i], now, vals[i]};
	}
	return 0;
}

/* One slice of put_batch_held, its guards g[0..n) against what was read:
 * written at once, or - when a put landed on one of its keys after the
 * read - not at all, and then its keys are read again, their before-images
 * recorded anew and the slice tried again. */
static int slice_held(faucet_run *r, const faucet_entry *entries, const char *const *keys,
		      const faucet_value *const *vals, size_t n, faucet_store_guard *g)
{
	int rc = 0, written = 0;

	for (int attempt = 0; rc == 0 && !written; attempt++) {
		write_req q = {.keys = keys, .vals = vals, .n = n, .moved = 1};

		if (attempt >= CAS_ATTEMPTS)
			return kept_moving(r, keys[0]);
		/* The first attempt goes against the batch's own read. */
		if (attempt > 0 && (rc = prepare(r, &q, NULL, NULL)) == 0)
			rc = guards_read(&q, keys, vals, n, g);
		if (rc == 0) {
			rc = faucet__store_compare_and_put_batch(r->s, g, n, &written);
			/* What the slice did, once it was tried; a key moved
			 * (nothing written) goes round again. */
			if (rc != FAUCET_EUNSUPPORTED && (rc != 0 || written))
				note_after_entries(r, entries, n, rc == 0 ? n : 0);
		}
		req_dispose(&q);
	}
	return rc;
}

/* A batch of first writes, each against the value its before-image was
 * read as (design §8.2): every before-image recorded in one marker write,
 * then the batch written in slices of the store's compare-and-put batch,
 * each all at once or - when a put landed on one of its keys after the
 * read - not at all and tried again (slice_held), so that undo gives back
 * the put that landed rather than the value read before it.  *landed: the
 * entries in place as written (the slices before an error).
 * FAUCET_EUNSUPPORTED, before anything is written, when the batch is not
 * one of first writes or the backend has no compare-and-put batch: the
 * caller writes it plainly. */
static int put_batch_held(faucet_run *r, const faucet_entry *entries, size_t count,
			  size_t *landed)
{
	size_t max = faucet__store_cas_batch_max(r->s);
	faucet_store_guard *g = faucet__calloc(count, sizeof(*g));
	const char **keys = NULL;
	const faucet_value **vals = NULL;
	write_req all = {.n = count};
	int rc = g == NULL ? FAUCET_ENOMEM : entry_arrays(entries, count, &keys, &vals);

	*landed = 0;
	if (rc == 0 && max == 0)
		rc = FAUCET_EUNSUPPORTED;
	all.keys = keys;
	all.vals = vals;
	if (rc == 0 && (rc = prepare(r, &all, NULL, NULL)) == 0)
		rc = guards_read(&all, keys, vals, count, g);
	for (size_t off = 0, n; rc == 0 && off < count; off += n) {
		n = count - off < max ? count - off : max;
		rc = slice_held(r, entries + off, keys + off, vals + off, n, g + off);
		if (rc == 0)
			*landed = off + n;
	}
	req_dispose(&all);
	free(keys);
	free(vals);
	free(g);
	return rc;
}

int faucet_run_put_batch(faucet_run *r, const faucet_entry *entries, size_t count)
{
	size_t landed;
	int rc;

	if (count == 0)
		return r ? fence(r) : FAUCET_EINVALID;
	if (r != NULL && !r->joined && entries != NULL && batch_distinct(entries, count) &&
	    (rc = put_batch_held(r, entries, count, &landed)) != FAUCET_EUNSUPPORTED)
		return rc;
	if ((rc = prepare_entries(r, entries, count)) != 0)
		return rc;
	rc = faucet_store_put_batch(r->s, entries, count);
	note_after_entries(r, entries, count, rc == 0 ? count : 0);
	return rc;
}

/* One key of a run's batch delete, read just now as *now (read: whether
 * it was).  A handle that has not joined deletes it only while it holds
 * what was read - absent, there is nothing to delete - and a key that moved
 * since goes the way of a delete's retry: read again, its new value
 * recorded as its before-image, deleted against that (design §8.2).  A
 * joined handle, or a key this run wrote before, is deleted plainly. */
static int delete_read_key(faucet_run *r, const char *key, int read, const faucet_value *now)
{
	int rc, deleted = 0;

	if (!read || r->joined) {
		rc = faucet_store_delete(r->s, key);
	} else if (now == NULL) {
		/* Absent when read: a put landing since is not this run's to
		 * delete, and the key is not its change - left unwritten, its
		 * image leaves the marker at the end (a leased run logged the
		 * after-image ahead: undo then sees such a put as a conflict). */
		return 0;
	} else {
		rc = faucet_store_compare_and_delete(r->s, key, now, &deleted);
		if (rc == 0 && !deleted)
			return run_delete_from(r, key, 1);
	}
	note_after(r, key, NULL, note_of(rc));
	return rc;
}

int faucet_run_delete_batch(faucet_run *r, const char *const *keys, size_t count)
{
	const faucet_value **vals;
	write_req q;
	size_t done = 0, todo_at = 0, again_at = 0;
	int rc;

	if (r == NULL || (count > 0 && keys == NULL))
		return faucet_error_set(FAUCET_EINVALID, "run: NULL argument");
	if (count == 0)
		return fence(r);
	vals = faucet__calloc(count, sizeof(*vals)); /* every one NULL: a delete */
	if (vals == NULL)
		return FAUCET_ENOMEM;
	/* Every before-image in one marker write, then the deletes, each
	 * against the value the marker write read. */
	memset(&q, 0, sizeof(q));
	q.keys = keys;
	q.vals = vals;
	q.n = count;
	rc = prepare(r, &q, NULL, NULL);
	for (; rc == 0 && done < count; done++) {
		const faucet_value *now = NULL;
		int read = read_now(&q, &todo_at, &again_at, keys[done], &now);

		rc = delete_read_key(r, keys[done], read, now);
	}
	req_dispose(&q);
	free(vals);
	/* After a failed delete the keys not reached are as they were, but
	 * their images are marked unknown: a false conflict is safe. */
	for (size_t i = done; rc != 0 && i < count; i++)
		note_after(r, keys[i], NULL, NOTE_UNKNOWN);
	return rc;
}

int faucet_run__put_prefix(faucet_run *r, const faucet_entry *entries, size_t count,
			   size_t *written, size_t *unknown_from)
{
	size_t ok = 0;
	int rc, err = 0;

	*written = 0;
	*unknown_from = 0;
	if (count == 0)
		return fence(r);
	/* First writes are written against what was read, as
	 * faucet_run_put_batch's (an import's first chunk on the file store
	 * and etcd, which write by prefix): on an error, the slices of the
	 * store's compare-and-put batch before it are what we vouch for. */
	if (r != NULL && !r->joined && entries != NULL && batch_distinct(entries, count) &&
	    (rc = put_batch_held(r, entries, count, written)) != FAUCET_EUNSUPPORTED) {
		*unknown_from = *written;
		return rc;
	}
	*written = 0;
	if ((rc = prepare_entries(r, entries, count)) == 0)
		return put_prefix_noted(r, entries, count, written, unknown_from);
	/* Some before-image cannot be recorded (a value that cannot be read,
	 * a lost lease).  Find the first such key - the rare failure path may
	 * write the marker once per key - and write the prefix before it, so
	 * that the batch fails at that key exactly as a plain one would. */
	while (ok < count && (err = prepare_entries(r, &entries[ok], 1)) == 0)
		ok++;
	if (ok == count) /* it went away meanwhile: everything is recorded */
		return put_prefix_noted(r, entries, count, written, unknown_from);
	if (ok > 0) {
		char *msg = faucet__strdup(faucet_error_last()->message);

		rc = put_prefix_noted(r, entries, ok, written, unknown_from);
		if (rc == 0)
			rc = faucet_error_set(err, "%s", msg != NULL ? msg : "out of memory");
		free(msg);
		return rc;
	}
	return err;
}

/* ---- marker parts ----------------------------------------------------------------------------- */

int faucet_run__can_part(faucet_run *r, const faucet_entry *entries, size_t count)
{
	size_t at;

	/* Only a handle nobody joins, whose main marker exists: then no one
	 * else writes this run's images, and the parts hang off a marker. */
	if (r == NULL || r->leased || r->joined || r->marker == NULL || count == 0)
		return 0;
	for (size_t i = 0; i < count; i++)
		if (is_recorded(r, entries[i].key, &at))
			return 0;
	return 1;
}

/* The part for `count` entries: each key's value now (its before-image,
 * read here; with `absent`, not read but taken to be absent) and the value
 * about to be written (its after-image).  *dup when a key comes twice:
 * then no part is made. */
static int part_build(faucet_run *r, const faucet_entry *entries, size_t count, int absent,
		      run_marker *m, int *dup)
{
	const char **keys = NULL;
	faucet_value **befores;
	int rc = 0, added;

	*dup = 0;
	memset(m, 0, sizeof(*m));
	befores = faucet__calloc(count, sizeof(*befores));
	keys = faucet__calloc(count, sizeof(*keys));
	if (befores == NULL || keys == NULL)
		rc = FAUCET_ENOMEM;
	for (size_t i = 0; rc == 0 && i < count; i++) {
		keys[i] = entries[i].key;
		if (faucet_run_is_bookkeeping_key(keys[i]))
			rc = faucet_error_set(FAUCET_EINVALID,
					      "%s is run bookkeeping; a run cannot write it", keys[i]);
		else
			rc = faucet_validate_key(keys[i]);
	}
	for (size_t from = 0; rc == 0 && !absent && from < count; from += READ_CHUNK) {
		size_t k = count - from < READ_CHUNK ? count - from : READ_CHUNK;

		rc = faucet_store_get_many(r->s, keys + from, k, befores + from);
	}
	if (rc == 0 && (m->run = faucet__strdup(r->id)) == NULL)
		rc = FAUCET_ENOMEM;
	if (rc == 0)
		rc = faucet_run__marker_add_many(m, keys, befores, count, &added);
	if (rc == 0 && m->count != count)
		*dup = 1;
	for (size_t i = 0; rc == 0 && !*dup && i < count; i++) {
		run_image *img = faucet_run__marker_find(m, keys[i]);

		img->after = entries[i].value ? faucet_value_ref((faucet_value *)entries[i].value)
					      : NULL;
		img->after_known = 1;
	}
	m->has_after = 1;
	for (size_t i = 0; befores != NULL && i < count; i++)
		faucet_value_free(befores[i]);
	free(befores);
	free(keys);
	if (rc != 0 || *dup)
		faucet_run__marker_dispose(m);
	return rc;
}

/* A part's write that did not land, or whose reply was lost: whether part
 * pk holds v.  Found with the same text, it is ours (*ours 1; a reply
 * that was lost); absent, *ours 0; anything else is not this run's. */
static int part_is_ours(faucet_run *r, const char *pk, const faucet_value *v, int *ours)
{
	faucet_value *there = NULL;
	int rc = faucet_store_get(r->s, pk, &there);

	*ours = rc == 0 && there != NULL && same_value(there, v);
	if (rc == 0 && there != NULL && !*ours)
		rc = faucet_error_set(FAUCET_ERROR,
				      "%s is there already and is not this run's part: "
				      "not writing over it",
				      pk);
	faucet_value_free(there);
	return rc;
}

/* Write part number r->parts + 1, once: compare-and-put against its
 * absence (part_is_ours when it is there). */
static int part_write(faucet_run *r, const run_marker *m)
{
	char *pk = faucet_run__marker_part_key(r->marker_key, r->parts + 1);
	faucet_value *v = NULL;
	int rc, written = 0;

	if (pk == NULL)
		return FAUCET_ENOMEM;
	rc = faucet_run__marker_value(m, &v);
	if (rc == 0)
		rc = faucet_store_compare_and_put(r->s, pk, NULL, v, &written);
	if (rc == 0 && !written && (rc = part_is_ours(r, pk, v, &written)) == 0 && !written)
		rc = faucet_error_set(FAUCET_ERROR, "%s: cannot write the run's part", pk);
	faucet_value_free(v);
	free(pk);
	if (rc == 0)
		r->parts++;
	return rc;
}

/* The part's keys into `recorded` as AFTER_PART, and the ones it changes
 * into part_changed (the first RUN_STATUS_KEYS) and part_changed_total. */
static int part_remember(faucet_run *r, const run_marker *m)
{
	const char **keys = faucet__calloc(m->count ? m->count : 1, sizeof(*keys));
	size_t at;
	int rc;

	if (keys == NULL)
		return FAUCET_ENOMEM;
	for (size_t i = 0; i < m->count; i++)
		keys[i] = m->items[i].key;
	rc = remember(r, keys, m->count);
	free(keys);
	for (size_t i = 0; rc == 0 && i < m->count; i++) {
		const run_image *img = &m->items[i];

		if (is_recorded(r, img->key, &at))
			r->after_known[at] = AFTER_PART;
		if (faucet_value_equal(img->before, img->after))
			continue;
		r->part_changed_total++;
		if (r->part_changed.count < RUN_STATUS_KEYS)
			rc = faucet__strarray_push(&r->part_changed, img->key);
	}
	return rc;
}

/* One attempt of put_part_held: the part built from a new read of the
 * chunk's keys, then it and the chunk in one compare-and-put batch (g:
 * count + 1 slots).  *landed when both are in place.
 *
 * Until a guess has been wrong in this run, the part is built without a
 * read, as if every key were absent: an import of new keys then costs one
 * write a chunk, not a read and a write.  The batch expects every key
 * absent, so it lands only when that image was true at the moment of the
 * write, exactly as a read one is; when it does not, the chunk is read
 * and tried again, and the run stops guessing (an import of existing keys
 * pays one batch that does not land). */
static int part_and_chunk(faucet_run *r, const faucet_entry *entries, size_t count,
			  const char *pk, faucet_store_guard *g, int *landed)
{
	run_marker m;
	faucet_value *pv = NULL;
	int rc, dup = 0, guess = !r->parts_guess_wrong;

	*landed = 0;
	if ((rc = part_build(r, entries, count, guess, &m, &dup)) != 0)
		return rc;
	if (dup) { /* batch_can_hold let no key come twice */
		faucet_run__marker_dispose(&m);
		return faucet_error_set(FAUCET_EINVALID, "%s: a key is given twice", pk);
	}
	rc = faucet_run__marker_value(&m, &pv);
	g[0] = (faucet_store_guard){pk, NULL, pv};
	for (size_t i = 0; rc == 0 && i < count; i++)
		g[i + 1] = (faucet_store_guard){entries[i].key,
						faucet_run__marker_find(&m, entries[i].key)->before,
						entries[i].value};
	if (rc == 0)
		rc = faucet__store_compare_and_put_batch(r->s, g, count + 1, landed);
	if (rc == FAUCET_EUNSUPPORTED)
		faucet_error_clear();
	/* Nothing written, or a reply lost: the part tells, since it lands
	 * with the chunk or not at all.  Absent, a key moved (or the batch
	 * did not land: the error stands). */
	if ((rc == 0 && !*landed) || rc == FAUCET_EUNKNOWN) {
		int err = rc, ours = 0;

		rc = part_is_ours(r, pk, pv, &ours);
		*landed = rc == 0 && ours;
		if (rc == 0 && !ours)
			rc = err;
		else if (rc != 0 && err == FAUCET_EUNKNOWN)
			rc = faucet_error_set(FAUCET_EUNKNOWN,
					      "%s: whether the chunk landed is unknown: reading its "
					      "part back failed too",
					      pk);
	}
	if (rc == 0 && !*landed && guess)
		r->parts_guess_wrong = 1;
	if (rc == 0 && *landed) {
		r->parts++;
		rc = part_remember(r, &m);
	}
	faucet_run__marker_dispose(&m);
	faucet_value_free(pv);
	return rc;
}

/* A chunk of first writes and its part in one compare-and-put batch
 * (design §8.2, §8.6): the part expected absent, each key expected to hold
 * the before-image the part records.  Both land, or neither: when a put
 * landed on a key after it was read, nothing is written, and the part is
 * built again from a new read and tried again - so that undo gives back
 * that put, not the value read before it. */
static int put_part_held(faucet_run *r, const faucet_entry *entries, size_t count)
{
	char *pk = faucet_run__marker_part_key(r->marker_key, r->parts + 1);
	faucet_store_guard *g = faucet__calloc(count + 1, sizeof(*g));
	int rc = pk == NULL || g == NULL ? FAUCET_ENOMEM : 0, landed = 0;

	for (int attempt = 0; rc == 0 && !landed; attempt++)
		rc = attempt < CAS_ATTEMPTS ? part_and_chunk(r, entries, count, pk, g, &landed)
					    : kept_moving(r, entries[0].key);
	free(g);
	free(pk);
	return rc;
}

int faucet_run__put_part(faucet_run *r, const faucet_entry *entries, size_t count,
			 size_t *written, size_t *unknown_from)
{
	run_marker m;
	int rc, dup = 0;

	if (written != NULL)
		*written = *unknown_from = 0;
	if (!faucet_run__can_part(r, entries, count))
		goto plain;
	if ((rc = fence(r)) != 0)
		return rc;
	/* (FAUCET_EUNSUPPORTED, before anything is written: a backend that
	 * passes the batch on to one without it.) */
	if (batch_can_hold(r, entries, count, 1) &&
	    (rc = put_part_held(r, entries, count)) != FAUCET_EUNSUPPORTED) {
		if (rc == 0 && written != NULL)
			*written = *unknown_from = count;
		return rc;
	}
	if ((rc = part_build(r, entries, count, 0, &m, &dup)) != 0)
		return rc;
	if (dup)
		goto plain;
	/* The part lands before the chunk: an import that dies in between
	 * leaves images of keys still as they were, which undo passes by. */
	rc = part_write(r, &m);
	if (rc == 0)
		rc = part_remember(r, &m);
	faucet_run__marker_dispose(&m);
	if (rc != 0)
		return rc;
	if (written != NULL)
		return faucet__store_put_prefix(r->s, entries, count, written, unknown_from);
	return faucet_store_put_batch(r->s, entries, count);
plain:
	if (written != NULL)
		return faucet_run__put_prefix(r, entries, count, written, unknown_from);
	return faucet_run_put_batch(r, entries, count);
}

/* ---- end ----------------------------------------------------------------------------------- */

/* Whether two stored documents have the same text (a store that
 * re-renders JSON, like PostgreSQL's JSONB, may say no to equal values:
 * callers only take a shortcut on yes). */
static int same_text(const faucet_value *a, const faucet_value *b)
{
	return a != NULL && b != NULL && faucet_value_len(a) == faucet_value_len(b) &&
	       memcmp(faucet_value_json(a), faucet_value_json(b), faucet_value_len(a)) == 0;
}

static void drop_image(run_marker *m, size_t i)
{
	free(m->items[i].key);
	faucet_value_free(m->items[i].before);
	faucet_value_free(m->items[i].after);
	memmove(&m->items[i], &m->items[i + 1], (m->count - i - 1) * sizeof(m->items[0]));
	m->count--;
	m->near = 0;
}

/*
 * The end's edit of the marker, from what this handle knows of its own
 * writes: a key it recorded ahead but never wrote (an import that stopped
 * early) is not its change and leaves the marker - undo must not restore
 * it over what others wrote since; a run that did not log its after-images
 * as it wrote (no lease: nobody else wrote through it) records them now,
 * and a key whose last write has an unknown outcome gets none.  Nothing is
 * read back from the store: another writer may have changed a key since.
 */
static int edit_final(faucet_run *r, run_marker *m, void *ctx, int *changed)
{
	size_t at;

	(void)ctx;
	*changed = 0;
	for (size_t i = m->count; i-- > 0;) {
		run_image *img = &m->items[i];

		if (!is_recorded(r, img->key, &at))
			continue; /* a joined child's key: its after-image is in place */
		if (r->after_known[at] == AFTER_NONE && !img->after_known) {
			drop_image(m, i);
			*changed = 1;
		} else if (!logs_after(r) && r->after_known[at] == AFTER_KNOWN &&
			   !(img->after_known && same_value(img->after, r->after[at]))) {
			faucet_value_free(img->after);
			img->after = r->after[at] ? faucet_value_ref(r->after[at]) : NULL;
			img->after_known = 1;
			*changed = 1;
		} else if (!logs_after(r) && r->after_known[at] == AFTER_UNKNOWN &&
			   img->after_known) {
			faucet_value_free(img->after);
			img->after = NULL;
			img->after_known = 0;
			*changed = 1;
		}
	}
	return 0;
}

/* Finish the marker (edit_final) and list the keys the run changed: those
 * whose after-image differs from the before-image, or is unknown.
 * *has_marker: a marker with at least one key remains. */
/* The keys the marker `m` says its run changed: those written whose
 * after-image is unknown or differs from the before-image. */
static int changed_keys(const run_marker *m, faucet_strarray *keys)
{
	for (size_t i = 0; i < m->count; i++) {
		const run_image *img = &m->items[i];
		int rc;

		if (!img->after_known || !faucet_value_equal(img->before, img->after))
			if ((rc = faucet__strarray_push(keys, img->key)) != 0)
				return rc;
	}
	return 0;
}

static int record_after(faucet_run *r, faucet_strarray *keys, int *has_marker, size_t *total)
{
	run_marker *m = &r->mcache;
	int rc;

	*has_marker = 0;
	*total = 0;
	if (r->marker == NULL && !r->leased)
		return 0; /* nothing recorded, and nobody else records in this run */
	/* A leased run's children write the marker too: read what they left. */
	if ((rc = marker_update(r, r->leased, edit_final, NULL, NULL)) != 0)
		return rc;
	faucet_strarray_dispose(keys);
	if ((rc = changed_keys(m, keys)) != 0)
		return rc;
	*total = keys->count + r->part_changed_total;
	/* The parts' changed keys after the marker's own (the status lists the
	 * first of them; the parts have them all). */
	for (size_t i = 0; i < r->part_changed.count && keys->count < RUN_STATUS_KEYS; i++)
		if ((rc = faucet__strarray_push(keys, r->part_changed.strings[i])) != 0)
			return rc;
	if (r->parts > 0) {
		*has_marker = 1;
		return 0;
	}
	if (m->count == 0 && r->marker != NULL) {
		int deleted = 0;

		/* Everything it recorded was taken back: no marker to keep. */
		if ((rc = faucet_store_compare_and_delete(r->s, r->marker_key, r->marker,
							  &deleted)) != 0)
			return rc;
		return 0;
	}
	*has_marker = m->count > 0;
#ifdef __GLIBC__
	/* Hand the images' pages back: a big import's marker held a hundred
	 * megabytes of small blocks that would otherwise stay in this heap. */
	if (m->count > 100000)
		(void)malloc_trim(0);
#endif
	return 0;
}

typedef struct {
	faucet_run *r;
	const char *outcome;
	int exit_status;
	const char *message;
	const faucet_strarray *keys;
	size_t total; /* keys changed in all, when more than keys holds */
} end_ctx;

static int set_outcome(run_entry *e, const char *outcome)
{
	char *o = faucet__strdup(outcome);

	if (o == NULL)
		return FAUCET_ENOMEM;
	free(e->outcome);
	e->outcome = o;
	return 0;
}

static int edit_end(run_status *st, void *arg)
{
	end_ctx *c = arg;
	run_entry *e = faucet_run__status_find(st, c->r->id), fresh;
	char when[32];
	int rc;

	(void)faucet_utc_text(wall_now(), when, sizeof(when));
	if (e == NULL) {
		/* Pushed out of the 50 by other runs while we ran: add it again. */
		memset(&fresh, 0, sizeof(fresh));
		fresh.run = faucet__strdup(c->r->id);
		fresh.started_at = faucet__strdup(when);
		fresh.outcome = faucet__strdup("running");
		if (fresh.run == NULL || fresh.started_at == NULL || fresh.outcome == NULL ||
		    faucet_run__status_push(st, &fresh) != 0) {
			faucet_run__entry_dispose(&fresh);
			return FAUCET_ENOMEM;
		}
		e = &st->items[0];
	}
	free(e->ended_at);
	free(e->message);
	e->ended_at = faucet__strdup(when);
	e->message = c->message ? faucet__strdup(c->message) : NULL;
	e->has_exit = c->exit_status >= 0;
	e->exit_status = c->exit_status;
	/* An undo that got there first stays: a late "ok" never replaces
	 * "undone". */
	if (strcmp(e->outcome, "undone") != 0 && (rc = set_outcome(e, c->outcome)) != 0)
		return rc;
	if (faucet_run__entry_set_keys(e, c->keys, c->total) != 0)
		return FAUCET_ENOMEM;
	if (e->ended_at == NULL || (c->message && e->message == NULL))
		return FAUCET_ENOMEM;
	if (c->r->undoes != NULL && strcmp(c->outcome, "ok") == 0) {
		run_entry *target = faucet_run__status_find(st, c->r->undoes);

		if (target != NULL && (rc = set_outcome(target, "undone")) != 0)
			return rc;
		/* Earlier undos of the same run that died or failed half-way:
		 * this one finished their job. */
		for (size_t i = 0; i < st->count; i++) {
			run_entry *d = &st->items[i];

			if (d == e || d->undoes == NULL || strcmp(d->undoes, c->r->undoes) != 0 ||
			    strcmp(d->outcome, "running") != 0)
				continue;
			if ((rc = set_outcome(d, "abandoned")) != 0)
				return rc;
		}
	}
	return 0;
}

/* The end of a run that succeeded (exit status 0, no message) made to `st`. */
static int end_edit_ok(faucet_run *r, run_status *st, const faucet_strarray *keys)
{
	end_ctx c = {r, "ok", 0, NULL, keys, 0};

	return edit_end(st, &c);
}

/* The parts of markers that a first put dropped with its guards. */
static int retire_parts(faucet_run *r)
{
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < r->parts_retire.count; i++) {
		char *mk = faucet_run__marker_key(r->scope, r->parts_retire.strings[i]);

		rc = mk ? faucet_run__marker_delete_parts(r->s, mk) : FAUCET_ENOMEM;
		free(mk);
	}
	if (rc == 0)
		faucet_strarray_dispose(&r->parts_retire);
	return rc;
}

/*
 * The end, in this order: the marker finished, the run into the rollback
 * index (older markers retired), then the outcome into the status - the
 * commit point: an undo's "ok" and its target's "undone" are one
 * compare-and-put, so an undo that fails before it is finished by running
 * it again, and one that got past it is complete - then the leases
 * released.
 */
int faucet_run_end(faucet_run *r, faucet_run_outcome outcome, int exit_status,
		   const char *message)
{
	faucet_strarray keys = {0};
	size_t total = 0; /* keys changed: `keys` lists the first of them */
	int rc, has_marker = 0;

	if (r == NULL || r->joined)
		return faucet_error_set(FAUCET_EINVALID, "only the process that began a run ends it");
	if (r->ended)
		return faucet_error_set(FAUCET_EINVALID, "run %s has already ended", r->id);
	if (r->lazy && !r->started) {
		/* It changed nothing: it leaves no trace. */
		r->ended = 1;
		r->changed = 0;
		return release_leases(r);
	}
	if ((rc = fence(r)) != 0)
		return rc;
	rc = record_after(r, &keys, &has_marker, &total);
	if (rc == 0 && has_marker && !r->indexed)
		rc = index_add(r->s, r->scope, r->index_key, r->id);
	else if (rc == 0 && !has_marker && r->indexed)
		rc = index_drop(r->s, r->index_key, r->id);
	if (rc == 0)
		rc = index_retire(r->s, r->scope, &r->retire);
	if (rc == 0)
		rc = retire_parts(r);
	/* An end written with the run's last put (faucet_run_put_end) stands
	 * when it says what this one would. */
	if (rc == 0 && !(r->end_recorded && outcome == FAUCET_RUN_OK && exit_status == 0 &&
			 message == NULL)) {
		end_ctx c = {r, outcome == FAUCET_RUN_OK ? "ok" : "failed", exit_status, message,
			     &keys, total};
		rc = status_update(r, edit_end, &c);
	}
	if (rc == 0) {
		r->ended = 1;
		r->changed = total;
		rc = release_leases(r);
	}
	faucet_strarray_dispose(&keys);
	return rc;
}

int faucet_run__set_undoes(faucet_run *r, const char *run)
{
	char *copy;

	if (r->started)
		return faucet_error_set(FAUCET_EINVALID, "run %s is recorded already", r->id);
	if ((copy = faucet__strdup(run)) == NULL)
		return FAUCET_ENOMEM;
	free(r->undoes);
	r->undoes = copy;
	return 0;
}

int faucet_run__start(faucet_run *r)
{
	if (r->ended)
		return faucet_error_set(FAUCET_EINVALID, "run %s has ended", r->id);
	return r->started ? 0 : start_entry(r, NULL, NULL);
}

size_t faucet_run_changed(const faucet_run *r)
{
	return r ? r->changed : 0;
}
