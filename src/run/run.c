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
#include "keys/bookkeeping.h"
#include <faucet/keys.h>

#define CAS_ATTEMPTS 1000 /* lost races are short-lived; this is a safety stop */

enum { AFTER_NONE = 0, AFTER_KNOWN = 1, AFTER_UNKNOWN = 2 };

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
	 * AFTER_UNKNOWN (it failed or its outcome is unknown) - so that the
	 * end need not read every key back.  Trusted only by a run that took
	 * no lease: no other handle can join it (faucet_run_join needs the
	 * lease), so only its own writes and outside writers touch its keys. */
	faucet_value **after;
	unsigned char *after_known;
	size_t after_cap;
	int leased;               /* took a lease: children may join and write */
	char *undoes;
	int ended;
};

static int64_t wall_now(void)
{
	return (int64_t)time(NULL);
}

/* ---- naming -------------------------------------------------------------------- */

int faucet_run_is_bookkeeping_key(const char *key)
{
	return faucet__is_bookkeeping_key(key);
}

/* ---- which invocation keys belong to ------------------------------------------ */

void run__scope_init(run_scope *sc)
{
	memset(sc, 0, sizeof(*sc));
}

void run__scope_dispose(run_scope *sc)
{
	free(sc->pipeline);
	free(sc->row);
	memset(sc, 0, sizeof(*sc));
}

/* A key's pipeline is its first segment and its row what the key parser
 * says (p::backfill::h::u belongs to the backfill unit's invocation;
 * p::__backfill__::h to none). */
int run__scope_add(run_scope *sc, const char *key)
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
	run__scope_init(&sc);
	for (size_t i = 0; i < count && rc == 0; i++)
		rc = run__scope_add(&sc, keys[i]);
	if (rc != 0) {
		run__scope_dispose(&sc);
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
		r->lease_key = run__key(r->scope, "__lease__");
		r->status_key = run__key(r->scope, "__status__");
		r->index_key = run__key(r->scope, "__rollback__");
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
	else if (run__new_id(r->id, sizeof(r->id)) != 0)
		return faucet_error_last()->code;
	r->marker_key = run__marker_key(r->scope, r->id);
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
	faucet_value_free(r->lease);
	faucet_value_free(r->marker);
	run__marker_dispose(&r->mcache);
	faucet_value_free(r->status);
	if (r->scache_ok)
		run__status_dispose(&r->scache);
	for (size_t i = 0; r->after != NULL && i < r->recorded.count; i++)
		faucet_value_free(r->after[i]);
	free(r->after);
	free(r->after_known);
	faucet_strarray_dispose(&r->recorded);
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
			rc = run__status_parse(cur, r->status_key, &st);
		}
		if (rc == 0 && (rc = edit(&st, ctx)) == 0 && (rc = run__status_value(&st, &next)) == 0)
			rc = faucet_store_compare_and_put(r->s, r->status_key, cur, next, &written);
		if (rc == 0 && written) {
			faucet_value_free(r->status);
			r->status = next;
			r->scache = st;
			r->scache_ok = 1;
			next = NULL;
		} else {
			run__status_dispose(&st);
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
	(void)faucet_buf_puts(&b, "{\"host\":");
	run__json_string(&b, host);
	(void)faucet_buf_printf(&b, ",\"pid\":%ld,\"user\":", (long)getpid());
	run__json_string(&b, user ? user : "");
	(void)faucet_buf_puts(&b, ",\"command\":");
	run__json_string(&b, command ? command : "");
	(void)faucet_buf_putc(&b, '}');
	if (b.failed) {
		faucet_buf_dispose(&b);
		return NULL;
	}
	return faucet_buf_detach(&b);
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
	run_entry e;
	char when[32];

	if (c->abandoned != NULL) {
		run_entry *dead = run__status_find(st, c->abandoned);
		if (dead != NULL && strcmp(dead->outcome, "running") == 0) {
			char *o = faucet__strdup("abandoned");
			if (o == NULL)
				return FAUCET_ENOMEM;
			free(dead->outcome);
			dead->outcome = o;
			if (c->abandoned_keys != NULL &&
			    run__entry_set_keys(dead, c->abandoned_keys) != 0)
				return FAUCET_ENOMEM;
		}
	}
	memset(&e, 0, sizeof(e));
	(void)faucet_utc_text(wall_now(), when, sizeof(when));
	e.run = faucet__strdup(c->r->id);
	e.started_at = faucet__strdup(when);
	e.outcome = faucet__strdup("running");
	e.by = by_json(c->command);
	e.undoes = c->r->undoes ? faucet__strdup(c->r->undoes) : NULL;
	if (e.run == NULL || e.started_at == NULL || e.outcome == NULL || e.by == NULL ||
	    (c->r->undoes && e.undoes == NULL)) {
		run__entry_dispose(&e);
		return FAUCET_ENOMEM;
	}
	return run__status_push(st, &e);
}

/* ---- rollback index -------------------------------------------------------------------- */

/* Put `run` first in the scope's index; markers pushed beyond 20 are
 * deleted once the index no longer names them. */
static int index_add(faucet_store *s, const char *scope, const char *index_key, const char *run)
{
	for (int attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
		faucet_value *cur = NULL, *next = NULL;
		faucet_strarray runs = {0}, next_runs = {0}, dropped = {0};
		int rc, written = 0;

		if ((rc = faucet_store_get(s, index_key, &cur)) != 0)
			return rc;
		rc = run__index_parse(cur, index_key, &runs);
		if (rc == 0)
			rc = faucet_strarray_push(&next_runs, run);
		for (size_t i = 0; rc == 0 && i < runs.count; i++) {
			if (strcmp(runs.strings[i], run) == 0)
				continue;
			if (next_runs.count < FAUCET_RUN_ROLLBACK_MAX)
				rc = faucet_strarray_push(&next_runs, runs.strings[i]);
			else
				rc = faucet_strarray_push(&dropped, runs.strings[i]);
		}
		if (rc == 0)
			rc = run__index_value(&next_runs, &next);
		if (rc == 0)
			rc = faucet_store_compare_and_put(s, index_key, cur, next, &written);
		for (size_t i = 0; rc == 0 && written && i < dropped.count; i++) {
			char *mk = run__marker_key(scope, dropped.strings[i]);
			rc = mk ? faucet_store_delete(s, mk) : FAUCET_ENOMEM;
			free(mk);
		}
		faucet_value_free(cur);
		faucet_value_free(next);
		faucet_strarray_dispose(&runs);
		faucet_strarray_dispose(&next_runs);
		faucet_strarray_dispose(&dropped);
		if (rc != 0 || written)
			return rc;
	}
	return faucet_error_set(FAUCET_ECONTENTION, "%s: gave up after %d lost races", index_key,
				CAS_ATTEMPTS);
}

/* ---- begin ------------------------------------------------------------------------------ */

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
static int settle_claim(faucet_run *r, const faucet_value *mine, int rc, int *written)
{
	char *msg = faucet__strdup(faucet_error_last()->message);
	faucet_value *back = NULL;

	if (faucet_store_get(r->s, r->lease_key, &back) == 0 && back != NULL &&
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

/* Take the invocation's lease.  *dead receives the run of an expired lease
 * we took over (its holder died), or NULL. */
static int claim_lease(faucet_run *r, uint64_t wait_ms, char **dead)
{
	uint64_t deadline = faucet__now_ms() + wait_ms;

	*dead = NULL;
	for (int attempt = 0;; attempt++) {
		faucet_value *cur = NULL, *mine = NULL;
		faucet_lease held;
		int64_t now = wall_now();
		int rc, written = 0;

		if ((rc = faucet_store_get(r->s, r->lease_key, &cur)) != 0)
			return rc;
		memset(&held, 0, sizeof(held));
		if (cur != NULL && (rc = faucet_lease_parse(cur, r->lease_key, &held)) != 0) {
			faucet_value_free(cur);
			return rc;
		}
		if (cur != NULL && held.expires_at > now) {
			uint64_t t = faucet__now_ms();
			if (t >= deadline) {
				char until[32];
				(void)faucet_utc_text(held.expires_at, until, sizeof(until));
				rc = faucet_error_set(FAUCET_EBUSY,
						      "%s is held by run %s (holder %s) until %s",
						      r->scope, held.run ? held.run : "(a backfill unit)",
						      held.holder, until);
				faucet_lease_dispose(&held);
				faucet_value_free(cur);
				return rc;
			}
			/* Look again when it expires, or sooner: it may be released. */
			uint64_t nap = (uint64_t)(held.expires_at - now) * 1000;
			nap = nap < 200 ? nap : 200;
			nap = nap < deadline - t ? nap : deadline - t;
			faucet_lease_dispose(&held);
			faucet_value_free(cur);
			sleep_ms(nap ? nap : 1);
			continue;
		}
		rc = run__lease_value(r->holder, now + r->ttl_s, r->id, &mine);
		if (rc == 0) {
			rc = faucet_store_compare_and_put(r->s, r->lease_key, cur, mine, &written);
			if (rc != 0)
				rc = settle_claim(r, mine, rc, &written);
		}
		if (written) {
			r->lease = mine;
			r->lease_expires = now + r->ttl_s;
			mine = NULL;
			if (held.run != NULL) {
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
						r->lease_key, CAS_ATTEMPTS);
	}
}

static int release_lease(faucet_run *r)
{
	int deleted = 0, rc;

	if (r->lease == NULL)
		return 0;
	rc = faucet_store_compare_and_delete(r->s, r->lease_key, r->lease, &deleted);
	if (rc == 0) {
		faucet_value_free(r->lease);
		r->lease = NULL;
	}
	return rc;
}

/* The keys in a dead run's marker (for its status entry). */
static int dead_run_keys(faucet_run *r, const char *dead, faucet_strarray *keys, int *has_marker)
{
	char *mk = run__marker_key(r->scope, dead);
	faucet_value *v = NULL;
	run_marker m;
	int rc;

	*has_marker = 0;
	if (mk == NULL)
		return FAUCET_ENOMEM;
	rc = faucet_store_get(r->s, mk, &v);
	if (rc == 0 && v != NULL && (rc = run__marker_parse(v, mk, dead, &m)) == 0) {
		*has_marker = 1;
		for (size_t i = 0; rc == 0 && i < m.count; i++)
			rc = faucet_strarray_push(keys, m.items[i].key);
		run__marker_dispose(&m);
	}
	faucet_value_free(v);
	free(mk);
	return rc;
}

static int check_index(faucet_run *r)
{
	faucet_value *v = NULL;
	faucet_strarray runs = {0};
	int rc = faucet_store_get(r->s, r->index_key, &v);

	if (rc == 0)
		rc = run__index_parse(v, r->index_key, &runs);
	faucet_strarray_dispose(&runs);
	faucet_value_free(v);
	return rc;
}

int faucet_run_begin(faucet_run **out, faucet_store *s, const char *pipeline,
		     const faucet_run_options *opts)
{
	faucet_run_options def = FAUCET_RUN_OPTIONS_INIT;
	faucet_strarray dead_keys = {0};
	faucet_run *r = NULL;
	char *dead = NULL;
	int rc, dead_marker = 0;

	if (out == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_run_begin: out is NULL");
	*out = NULL;
	if (opts == NULL)
		opts = &def;
	if (opts->version != FAUCET_RUN_OPTIONS_VERSION)
		return faucet_error_set(FAUCET_EINVALID, "run options version %u is not supported",
					opts->version);
	if (opts->lease_ttl_ms != 0 && opts->lease_ttl_ms < 1000)
		return faucet_error_set(FAUCET_EINVALID, "lease TTL must be at least 1s");
	rc = run_new(&r, s, pipeline,
		     opts->pipeline_level ? NULL : (opts->row ? opts->row : FAUCET_RUN_DEFAULT_ROW));
	if (rc != 0)
		return rc;
	r->ttl_s = (int64_t)(((opts->lease_ttl_ms ? opts->lease_ttl_ms : FAUCET_RUN_DEFAULT_TTL_MS) +
			      999) / 1000);
	if ((rc = set_id(r, NULL)) != 0)
		goto fail;
	if (opts->undoes != NULL && (r->undoes = faucet__strdup(opts->undoes)) == NULL) {
		rc = FAUCET_ENOMEM;
		goto fail;
	}
	/* Every bookkeeping document this run will update must be ours before
	 * anything is written: the index is updated only at the end, and
	 * finding someone else's data there then would leave a half-recorded
	 * run. */
	if ((rc = check_index(r)) != 0)
		goto fail;
	if (!opts->pipeline_level && !opts->no_lease) {
		if ((r->holder = faucet__holder_id()) == NULL) {
			rc = FAUCET_ENOMEM;
			goto fail;
		}
		if ((rc = claim_lease(r, opts->wait_ms, &dead)) != 0)
			goto fail;
		r->leased = 1;
		if (dead != NULL && (rc = dead_run_keys(r, dead, &dead_keys, &dead_marker)) != 0)
			goto fail;
	}
	{
		start_ctx c = {r, opts->command, dead, &dead_keys};
		rc = status_update(r, edit_start, &c);
	}
	if (rc != 0)
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
	if (r->lease != NULL) {
		int keep = faucet_error_last()->code;
		char *msg = faucet__strdup(faucet_error_last()->message);
		(void)release_lease(r);
		if (msg != NULL)
			(void)faucet_error_set(keep, "%s", msg);
		free(msg);
	}
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
	if (!run__valid_id(run_id))
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
	    held.expires_at <= wall_now()) {
		rc = faucet_error_set(FAUCET_ELEASELOST, "run %s no longer holds %s%s%s", run_id,
				      r->scope, held.run ? ": it is held by run " : "",
				      held.run ? held.run : "");
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

/* ---- fencing ---------------------------------------------------------------------------- */

static int lease_lost(faucet_run *r, const char *why)
{
	return faucet_error_set(FAUCET_ELEASELOST, "run %s lost its lease on %s (%s); nothing written",
				r->id, r->scope, why);
}

/* Whether the run may still write.  Own lease: the stored lease must be the
 * one we wrote; if it has run out by our clock, renewing it is the check.
 * Joined run: the lease must name our run and be live. */
static int fence(faucet_run *r)
{
	faucet_value *v = NULL;
	faucet_lease held;
	int rc;

	if (r->ended)
		return faucet_error_set(FAUCET_EINVALID, "run %s has ended", r->id);
	if (!r->joined && r->lease == NULL)
		return 0;
	if ((rc = faucet_store_get(r->s, r->lease_key, &v)) != 0)
		return rc;
	if (v == NULL) {
		return lease_lost(r, "the lease is gone");
	}
	if (!r->joined) {
		/* Most stores hand back the exact text we wrote: compare bytes
		 * first, values only when the store re-renders (PostgreSQL). */
		int same = (faucet_value_len(v) == faucet_value_len(r->lease) &&
			    memcmp(faucet_value_json(v), faucet_value_json(r->lease),
				   faucet_value_len(v)) == 0) ||
			   faucet_value_equal(v, r->lease);
		faucet_value_free(v);
		if (!same)
			return lease_lost(r, "another run took it over");
		if (r->lease_expires <= wall_now())
			return faucet_run_renew(r);
		return 0;
	}
	rc = faucet_lease_parse(v, r->lease_key, &held);
	faucet_value_free(v);
	if (rc != 0)
		return rc;
	if (held.run == NULL || strcmp(held.run, r->id) != 0)
		rc = lease_lost(r, "another run took it over");
	else if (held.expires_at <= wall_now())
		rc = lease_lost(r, "it expired");
	faucet_lease_dispose(&held);
	return rc;
}

int faucet_run_renew(faucet_run *r)
{
	faucet_value *next = NULL;
	int rc, written = 0;
	int64_t until;

	if (r->joined || r->lease == NULL)
		return 0;
	until = wall_now() + r->ttl_s;

	rc = run__lease_value(r->holder, until, r->id, &next);
	if (rc == 0)
		rc = faucet_store_compare_and_put(r->s, r->lease_key, r->lease, next, &written);
	if (rc != 0 || !written) {
		faucet_value_free(next);
		return rc != 0 ? rc : lease_lost(r, "another run took it over");
	}
	faucet_value_free(r->lease);
	r->lease = next;
	r->lease_expires = until;
	return 0;
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

/* What a write of `key` by this handle left: `v` (NULL = absent) when
 * known, else unknown (the end reads the key back). */
static void note_after(faucet_run *r, const char *key, const faucet_value *v, int known)
{
	size_t at;

	if (!is_recorded(r, key, &at))
		return;
	faucet_value_free(r->after[at]);
	r->after[at] = known && v != NULL ? faucet_value_ref((faucet_value *)v) : NULL;
	r->after_known[at] = known ? AFTER_KNOWN : AFTER_UNKNOWN;
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

/* Record the before-image of every key not yet recorded, in one marker
 * write.  Our own last write of the marker is tried first as the expected
 * value; a joined child may have changed it, and then we read and merge.
 * With `put` (one key), the key's put goes with the marker's write
 * (faucet__store_put_guarded: one data barrier for both on the file store);
 * *put_rc then gets the put's result and *put_done is set. */
static int record_before_put(faucet_run *r, const char *const *keys, size_t n,
			     const faucet_value *put, int *put_done, int *put_rc)
{
	const char **todo_keys = NULL;
	faucet_value **todo_vals = NULL;
	size_t todo = 0;
	int rc = 0;

	for (size_t i = 0; i < n; i++) {
		if (faucet_run_is_bookkeeping_key(keys[i]))
			return faucet_error_set(FAUCET_EINVALID,
						"%s is run bookkeeping; a run cannot write it", keys[i]);
		if ((rc = faucet_validate_key(keys[i])) != 0)
			return rc;
	}
	rc = read_before(r, keys, n, &todo_keys, &todo_vals, &todo);
	for (int attempt = 0; rc == 0 && todo > 0; attempt++) {
		faucet_value *cur = r->marker, *fresh = NULL, *next = NULL;
		int written = 0, changed = 0;

		if (r->joined || attempt > 0 || !r->mcache_ok) {
			if ((r->joined || attempt > 0) &&
			    (rc = faucet_store_get(r->s, r->marker_key, &fresh)) != 0)
				break;
			if (r->joined || attempt > 0)
				cur = fresh;
			run__marker_dispose(&r->mcache);
			r->mcache_ok = 0;
			if ((rc = run__marker_parse(cur, r->marker_key, r->id, &r->mcache)) != 0) {
				faucet_value_free(fresh);
				break;
			}
		}
		/* From here the cache is ahead of the store until the write lands. */
		r->mcache_ok = 0;
		rc = run__marker_add_many(&r->mcache, todo_keys, todo_vals, todo, &changed);
		if (rc == 0 && changed && (rc = run__marker_value(&r->mcache, &next)) == 0) {
			if (put != NULL && n == 1) {
				*put_rc = faucet__store_put_guarded(r->s, r->marker_key, cur, next,
								    keys[0], put, &written);
				/* The marker was written and the put failed after it:
				 * the marker is ours, the put's error the caller's. */
				*put_done = written;
				if (!written)
					rc = *put_rc;
			} else {
				rc = faucet_store_compare_and_put(r->s, r->marker_key, cur, next,
								  &written);
			}
		}
		if (rc == 0 && (written || !changed)) {
			faucet_value_free(r->marker);
			r->marker = written ? next : faucet_value_ref(cur);
			r->mcache_ok = 1;
			next = NULL;
			rc = remember(r, keys, n);
			faucet_value_free(fresh);
			break;
		}
		faucet_value_free(fresh);
		faucet_value_free(next);
		if (attempt >= CAS_ATTEMPTS)
			rc = faucet_error_set(FAUCET_ECONTENTION, "%s: gave up after %d lost races",
					      r->marker_key, CAS_ATTEMPTS);
	}
	for (size_t i = 0; todo_vals != NULL && i < todo; i++)
		faucet_value_free(todo_vals[i]);
	free(todo_vals);
	free(todo_keys);
	return rc;
}

/* Before a write of keys: the run is checked and fenced, their
 * before-images recorded.  With `put` (one key), the key's put goes with
 * the marker's write (see record_before_put). */
static int prepare_write_put(faucet_run *r, const char *const *keys, size_t n,
			     const faucet_value *put, int *put_done, int *put_rc)
{
	int rc;

	if (r == NULL)
		return faucet_error_set(FAUCET_EINVALID, "run: NULL run");
	if ((rc = fence(r)) != 0)
		return rc;
	return record_before_put(r, keys, n, put, put_done, put_rc);
}

static int prepare_write(faucet_run *r, const char *const *keys, size_t n)
{
	return prepare_write_put(r, keys, n, NULL, NULL, NULL);
}

int faucet_run__record(faucet_run *r, const char *const *keys, size_t n)
{
	if (r == NULL || r->joined)
		return 0; /* a joined handle records as it writes (see record_before_put) */
	return n ? prepare_write(r, keys, n) : 0;
}

int faucet_run_put(faucet_run *r, const char *key, const faucet_value *value)
{
	int rc, put_done = 0, put_rc = 0;

	if (r != NULL && value == NULL)
		return faucet_error_set(FAUCET_EINVALID, "put '%s': no value (use delete)", key);
	/* A first write goes with its marker write. */
	if ((rc = prepare_write_put(r, &key, 1, value, &put_done, &put_rc)) != 0)
		return rc;
	rc = put_done ? put_rc : faucet_store_put(r->s, key, value);
	note_after(r, key, value, rc == 0);
	return rc;
}

int faucet_run_delete(faucet_run *r, const char *key)
{
	int rc = prepare_write(r, &key, 1);

	if (rc != 0)
		return rc;
	rc = faucet_store_delete(r->s, key);
	note_after(r, key, NULL, rc == 0);
	return rc;
}

int faucet_run_compare_and_put(faucet_run *r, const char *key, const faucet_value *expected,
			       const faucet_value *value, int *written)
{
	int rc = prepare_write(r, &key, 1);

	if (rc != 0) {
		if (written)
			*written = 0;
		return rc;
	}
	rc = faucet_store_compare_and_put(r->s, key, expected, value, written);
	/* A condition that did not hold wrote nothing: the key holds what
	 * someone else left, read back at the end. */
	note_after(r, key, value, rc == 0 && written != NULL && *written);
	return rc;
}

int faucet_run_compare_and_delete(faucet_run *r, const char *key, const faucet_value *expected,
				  int *deleted)
{
	int rc = prepare_write(r, &key, 1);

	if (rc != 0) {
		if (deleted)
			*deleted = 0;
		return rc;
	}
	rc = faucet_store_compare_and_delete(r->s, key, expected, deleted);
	note_after(r, key, NULL, rc == 0 && deleted != NULL && *deleted);
	return rc;
}

/* The keys of a batch (borrowed), for prepare_write().  Caller frees. */
static const char **entry_keys(const faucet_entry *entries, size_t count)
{
	const char **keys = faucet__calloc(count, sizeof(*keys));

	for (size_t i = 0; keys != NULL && i < count; i++)
		keys[i] = entries[i].key;
	return keys;
}

/* After a batch: the first `known` entries hold what we wrote; the rest
 * may or may not (read back at the end).  In order, so that a key written
 * twice keeps its last value. */
static void note_after_entries(faucet_run *r, const faucet_entry *entries, size_t count,
			       size_t known)
{
	for (size_t i = 0; i < count; i++)
		note_after(r, entries[i].key, entries[i].value, i < known);
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

int faucet_run_put_batch(faucet_run *r, const faucet_entry *entries, size_t count)
{
	const char **keys;
	int rc;

	if (count == 0)
		return r ? fence(r) : FAUCET_EINVALID;
	if ((keys = entry_keys(entries, count)) == NULL)
		return FAUCET_ENOMEM;
	rc = prepare_write(r, keys, count);
	free(keys);
	if (rc != 0)
		return rc;
	rc = faucet_store_put_batch(r->s, entries, count);
	note_after_entries(r, entries, count, rc == 0 ? count : 0);
	return rc;
}

int faucet_run__put_prefix(faucet_run *r, const faucet_entry *entries, size_t count,
			   size_t *written, size_t *unknown_from)
{
	const char **keys;
	size_t ok = 0;
	int rc, err;

	*written = 0;
	*unknown_from = 0;
	if (count == 0)
		return fence(r);
	if ((keys = entry_keys(entries, count)) == NULL)
		return FAUCET_ENOMEM;
	rc = prepare_write(r, keys, count);
	if (rc == 0) {
		free(keys);
		return put_prefix_noted(r, entries, count, written, unknown_from);
	}
	/* Some before-image cannot be recorded (a value that cannot be read,
	 * a lost lease).  Find the first such key - the rare failure path may
	 * write the marker once per key - and write the prefix before it, so
	 * that the batch fails at that key exactly as a plain one would. */
	while (ok < count && (err = prepare_write(r, &keys[ok], 1)) == 0)
		ok++;
	free(keys);
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

/* ---- end ----------------------------------------------------------------------------------- */

/* Take out of an unleased run's marker the keys it recorded ahead but never
 * wrote (an import that stopped early): they are not its changes, and undo
 * must not restore them over what others wrote since. */
static void drop_unwritten(faucet_run *r, run_marker *m)
{
	size_t kept = 0, at;

	for (size_t i = 0; i < m->count; i++) {
		run_image *img = &m->items[i];

		if (is_recorded(r, img->key, &at) && r->after_known[at] == AFTER_NONE) {
			free(img->key);
			faucet_value_free(img->before);
			faucet_value_free(img->after);
			continue;
		}
		m->items[kept++] = *img;
	}
	m->count = kept;
}

/* The after-images of a marker's keys: what this handle's own writes left,
 * where it knows that (see `after` in struct faucet_run), else the keys'
 * current values, read with get_many a chunk at a time. */
static int fill_after(faucet_run *r, run_marker *m)
{
	const char **want = NULL;
	faucet_value **got = NULL;
	size_t *slot = NULL, n = 0, at;
	int rc = 0;

	for (size_t i = 0; i < m->count; i++) {
		faucet_value_free(m->items[i].after);
		m->items[i].after = NULL;
	}
	for (size_t i = 0; i <= m->count && rc == 0; i++) {
		if (i < m->count) {
			const char *key = m->items[i].key;

			if (!r->leased && is_recorded(r, key, &at) &&
			    r->after_known[at] == AFTER_KNOWN) {
				m->items[i].after =
					r->after[at] ? faucet_value_ref(r->after[at]) : NULL;
				continue;
			}
			if (!r->leased && is_recorded(r, key, &at) &&
			    r->after_known[at] == AFTER_NONE) {
				/* Recorded ahead, never written: not the run's
				 * change, dropped from the marker below. */
				m->items[i].after = NULL;
				continue;
			}
			if (want == NULL) {
				want = faucet__calloc(READ_CHUNK, sizeof(*want));
				got = faucet__calloc(READ_CHUNK, sizeof(*got));
				slot = faucet__calloc(READ_CHUNK, sizeof(*slot));
				if (want == NULL || got == NULL || slot == NULL) {
					rc = FAUCET_ENOMEM;
					break;
				}
			}
			slot[n] = i;
			want[n++] = key;
			if (n < READ_CHUNK)
				continue;
		}
		if (n > 0 && (rc = faucet_store_get_many(r->s, want, n, got)) == 0) {
			for (size_t j = 0; j < n; j++)
				m->items[slot[j]].after = got[j];
		}
		n = 0;
	}
	free(want);
	free(got);
	free(slot);
	if (rc == 0 && !r->leased)
		drop_unwritten(r, m);
	return rc;
}

/* Whether two stored documents have the same text (a store that
 * re-renders JSON, like PostgreSQL's JSONB, may say no to equal values:
 * callers only take a shortcut on yes). */
static int same_text(const faucet_value *a, const faucet_value *b)
{
	return a != NULL && b != NULL && faucet_value_len(a) == faucet_value_len(b) &&
	       memcmp(faucet_value_json(a), faucet_value_json(b), faucet_value_len(a)) == 0;
}

/* Fill the marker's after-images. */
/* Forget the after-images the run's own writes left: fill_after then reads
 * those keys from the store, as for a leased run. */
static void release_known_after(faucet_run *r)
{
	for (size_t i = 0; r->after != NULL && i < r->recorded.count; i++) {
		if (r->after_known[i] != AFTER_KNOWN)
			continue;
		faucet_value_free(r->after[i]);
		r->after[i] = NULL;
		r->after_known[i] = AFTER_UNKNOWN;
	}
}

static int record_after(faucet_run *r, faucet_strarray *keys, int *has_marker)
{
	*has_marker = 0;
	for (int attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
		faucet_value *cur = NULL, *next = NULL;
		run_marker m;
		size_t m_count;
		int rc, written = 0;

		/* First try our own last write of the marker as the expected
		 * value, as record_before_put does: a big import's marker (a hundred
		 * megabytes at a million keys) is then not read back.  A joined
		 * child that added to it makes the compare-and-put fail, and the
		 * next attempt reads it. */
		if (attempt == 0 && r->mcache_ok && r->marker != NULL)
			cur = faucet_value_ref(r->marker);
		else if ((rc = faucet_store_get(r->s, r->marker_key, &cur)) != 0)
			return rc;
		if (cur == NULL)
			return 0;
		if (r->mcache_ok && same_text(cur, r->marker)) {
			/* The marker is as we last wrote it (no joined child added
			 * to it): our parsed copy is current - a big import's
			 * marker is then not parsed again. */
			m = r->mcache;
			memset(&r->mcache, 0, sizeof(r->mcache));
			r->mcache_ok = 0;
		} else if ((rc = run__marker_parse(cur, r->marker_key, r->id, &m)) != 0) {
			faucet_value_free(cur);
			return rc;
		}
		rc = fill_after(r, &m);
		m.has_after = 1;
		if (rc == 0)
			rc = run__marker_value(&m, &next);
		/* The status lists the keys the run changed: a key it wrote back
		 * unchanged, or a compare-and-put that did not hold, is left out
		 * (the marker keeps its images; undo skips it).  Listed before
		 * the marker is written, so that the images - a big import's
		 * whole document - are gone while the store copies the marker. */
		faucet_strarray_dispose(keys);
		for (size_t i = 0; rc == 0 && i < m.count; i++) {
			if (!faucet_value_equal(m.items[i].before, m.items[i].after))
				rc = faucet_strarray_push(keys, m.items[i].key);
		}
		m_count = m.count;
		run__marker_dispose(&m);
		if (rc == 0) {
			release_known_after(r); /* a lost race reads them back */
#ifdef __GLIBC__
			/* Hand the images' pages back before the store copies a
			 * marker of a hundred megabytes: freed small blocks would
			 * otherwise stay in this process's heap. */
			if (m_count > 100000)
				(void)malloc_trim(0);
#endif
			rc = faucet_store_compare_and_put(r->s, r->marker_key, cur, next, &written);
		}
		faucet_value_free(cur);
		faucet_value_free(next);
		if (rc != 0)
			return rc;
		if (written) {
			*has_marker = 1;
			return 0;
		}
	}
	return faucet_error_set(FAUCET_ECONTENTION, "%s: gave up after %d lost races", r->marker_key,
				CAS_ATTEMPTS);
}

typedef struct {
	faucet_run *r;
	const char *outcome;
	int exit_status;
	const char *message;
	const faucet_strarray *keys;
} end_ctx;

static int edit_end(run_status *st, void *arg)
{
	end_ctx *c = arg;
	run_entry *e = run__status_find(st, c->r->id), fresh;
	char when[32];

	(void)faucet_utc_text(wall_now(), when, sizeof(when));
	if (e == NULL) {
		/* Pushed out of the 50 by other runs while we ran: add it again. */
		memset(&fresh, 0, sizeof(fresh));
		fresh.run = faucet__strdup(c->r->id);
		fresh.started_at = faucet__strdup(when);
		fresh.outcome = faucet__strdup("running");
		if (fresh.run == NULL || fresh.started_at == NULL || fresh.outcome == NULL ||
		    run__status_push(st, &fresh) != 0) {
			run__entry_dispose(&fresh);
			return FAUCET_ENOMEM;
		}
		e = &st->items[0];
	}
	free(e->ended_at);
	free(e->outcome);
	free(e->message);
	e->ended_at = faucet__strdup(when);
	e->outcome = faucet__strdup(c->outcome);
	e->message = c->message ? faucet__strdup(c->message) : NULL;
	e->has_exit = c->exit_status >= 0;
	e->exit_status = c->exit_status;
	if (run__entry_set_keys(e, c->keys) != 0)
		return FAUCET_ENOMEM;
	if (e->ended_at == NULL || e->outcome == NULL || (c->message && e->message == NULL))
		return FAUCET_ENOMEM;
	if (c->r->undoes != NULL && strcmp(c->outcome, "ok") == 0) {
		run_entry *target = run__status_find(st, c->r->undoes);
		if (target != NULL) {
			char *o = faucet__strdup("undone");
			if (o == NULL)
				return FAUCET_ENOMEM;
			free(target->outcome);
			target->outcome = o;
		}
		/* Earlier undos of the same run that died half-way: this one
		 * finished their job. */
		for (size_t i = 0; i < st->count; i++) {
			run_entry *d = &st->items[i];
			char *o;

			if (d == e || d->undoes == NULL || strcmp(d->undoes, c->r->undoes) != 0 ||
			    strcmp(d->outcome, "running") != 0)
				continue;
			if ((o = faucet__strdup("abandoned")) == NULL)
				return FAUCET_ENOMEM;
			free(d->outcome);
			d->outcome = o;
		}
	}
	return 0;
}

int faucet_run_end(faucet_run *r, faucet_run_outcome outcome, int exit_status,
		   const char *message)
{
	faucet_strarray keys = {0};
	int rc, has_marker = 0;

	if (r == NULL || r->joined)
		return faucet_error_set(FAUCET_EINVALID, "only the process that began a run ends it");
	if (r->ended)
		return faucet_error_set(FAUCET_EINVALID, "run %s has already ended", r->id);
	if ((rc = fence(r)) != 0)
		return rc;
	rc = record_after(r, &keys, &has_marker);
	if (rc == 0) {
		end_ctx c = {r, outcome == FAUCET_RUN_OK ? "ok" : "failed", exit_status, message, &keys};
		rc = status_update(r, edit_end, &c);
	}
	if (rc == 0 && has_marker)
		rc = index_add(r->s, r->scope, r->index_key, r->id);
	if (rc == 0) {
		r->ended = 1;
		rc = release_lease(r);
	}
	faucet_strarray_dispose(&keys);
	return rc;
}
