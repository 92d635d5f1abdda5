/*
 * undo.c - undoing a run, finding runs, and reading the history.
 *
 * An undo runs under the pipeline lease ({p}::__lease__, an exclusive run):
 * no `faucet run`, bulk write or other undo of the pipeline is in flight
 * while it plans and writes, so the store is never left holding part of an
 * undo and part of a later bulk write.  Under the lease it finds its
 * target again and plans in full before writing; every key of the run's
 * marker is classified
 *
 *   done      it already holds its before-image (an undo that failed or
 *             died half-way restored it: running the undo again finishes
 *             the job)
 *   restore   it still holds what the run last wrote (its after-image, or,
 *             where the run's last write has none, whatever is there), and
 *             no later run of any scope of the pipeline changed it
 *   conflict  anything else - refused, naming the key and the later run,
 *             unless forced
 *
 * Then it restores each key with compare-and-put against the value the plan
 * saw, through a run of its own (so that it can be undone by name).  A plain
 * write that slips in between (single puts take no lease) makes that
 * compare-and-put fail: the keys restored so far are put back, and the
 * undo reports the conflict - all of it or none of it.  The undo's "ok" and
 * its target's "undone" are written together, last (faucet_run_end).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "run/run_internal.h"
#include <faucet/keys.h>

/* Each version's size of faucet_undo_result: what a caller of that
 * version allocated, and all the library may write. */
static const size_t undo_result_sizes[] = {sizeof(faucet_undo_result)};

int faucet_undo_result_init(faucet_undo_result *r, unsigned int version)
{
	static const faucet_undo_result empty = FAUCET_UNDO_RESULT_INIT;

	return faucet__options_init(r, &empty, undo_result_sizes, version,
				    FAUCET_UNDO_RESULT_VERSION, "faucet_undo_result");
}

/* Empty the caller's result `r` of a known version: everything after the
 * version zeroed, as far as that version's struct goes. */
static void undo_result_clear(faucet_undo_result *r)
{
	unsigned int version = r->version;

	memset(r, 0, undo_result_sizes[version - 1]);
	r->version = version;
}

void faucet_undo_result_dispose(faucet_undo_result *r)
{
	/* A version this library does not know was never filled by it. */
	if (r == NULL || r->version == 0 || r->version > FAUCET_UNDO_RESULT_VERSION)
		return;
	for (size_t i = 0; i < r->conflict_count; i++) {
		free(r->conflicts[i].key);
		free(r->conflicts[i].run);
		faucet_value_free(r->conflicts[i].current);
		faucet_value_free(r->conflicts[i].wrote);
	}
	free(r->conflicts);
	for (size_t i = 0; i < r->restored.count; i++) {
		if (r->replaced != NULL)
			faucet_value_free(r->replaced[i]);
		if (r->restored_to != NULL)
			faucet_value_free(r->restored_to[i]);
	}
	free(r->replaced);
	free(r->restored_to);
	free(r->run);
	free(r->scope);
	free(r->undo_run);
	free(r->conflict_key);
	free(r->conflict_run);
	faucet_value_free(r->conflict_current);
	faucet_value_free(r->conflict_wrote);
	faucet_strarray_dispose(&r->restored);
	undo_result_clear(r);
}

/* ---- finding status documents ---------------------------------------------------------- */

/* The rows of `pipeline` that have a status document ("" = pipeline level),
 * in key order. */
static int status_scopes(faucet_store *s, const char *pipeline, faucet_strarray *rows)
{
	char *prefix = faucet__sprintf("%s::", pipeline);
	faucet_strarray keys = {0};
	static const char tail[] = "::__status__";
	int rc;

	if (prefix == NULL)
		return FAUCET_ENOMEM;
	rc = faucet_store_list(s, prefix, &keys);
	for (size_t i = 0; rc == 0 && i < keys.count; i++) {
		const char *k = keys.strings[i] + strlen(prefix);
		size_t len = strlen(keys.strings[i]);

		if (strcmp(k, "__status__") == 0)
			rc = faucet__strarray_push(rows, "");
		else if (len > strlen(tail) && strcmp(keys.strings[i] + len - strlen(tail), tail) == 0)
			rc = faucet__strarray_push_owned(
				rows, faucet__strndup(k, strlen(k) - strlen(tail)));
	}
	faucet_strarray_dispose(&keys);
	free(prefix);
	return rc;
}

static char *scope_of(const char *pipeline, const char *row)
{
	return *row ? faucet__sprintf("%s::%s", pipeline, row) : faucet__strdup(pipeline);
}

static int load_status(faucet_store *s, const char *scope, run_status *st)
{
	char *key = faucet_run__key(scope, "__status__");
	faucet_value *v = NULL;
	int rc;

	memset(st, 0, sizeof(*st));
	if (key == NULL)
		return FAUCET_ENOMEM;
	rc = faucet_store_get(s, key, &v);
	if (rc == 0)
		rc = faucet_run__status_parse(v, key, st);
	faucet_value_free(v);
	free(key);
	return rc;
}

/* The run's marker with its parts (a big import's) merged in. */
static int load_marker(faucet_store *s, const char *scope, const char *run, run_marker *m,
		       int *exists)
{
	char *key = faucet_run__marker_key(scope, run);
	int rc;

	*exists = 0;
	memset(m, 0, sizeof(*m));
	if (key == NULL)
		return FAUCET_ENOMEM;
	rc = faucet_run__marker_load(s, key, run, m, exists, NULL);
	free(key);
	return rc;
}

/* ---- which run ------------------------------------------------------------------------------ */

typedef struct {
	char *row;  /* "" = pipeline level */
	run_entry entry;
	int found;
} located;

static void located_dispose(located *l)
{
	faucet_run__entry_dispose(&l->entry);
	free(l->row);
	memset(l, 0, sizeof(*l));
}

/* Whether a run in the status may be what `state undo` picks by itself:
 * not undone, not an undo (an undo is undone only when named - a failed
 * one is finished by undoing its target again), not in flight, and it
 * changed something (a run that died says so through its marker, which
 * the caller checks). */
static int candidate(faucet_store *s, const run_entry *e, int *yes)
{
	int gone = 0, rc;

	*yes = 0;
	if (strcmp(e->outcome, "undone") == 0 || e->undoes != NULL)
		return 0;
	if (strcmp(e->outcome, "running") == 0) {
		if ((rc = faucet_run__entry_gone(s, e, &gone)) != 0)
			return rc;
		*yes = gone;
		return 0;
	}
	*yes = e->keys_total > 0 || strcmp(e->outcome, "abandoned") == 0;
	return 0;
}

static int marker_exists(faucet_store *s, const char *scope, const char *run, int *exists)
{
	char *key = faucet_run__marker_key(scope, run);
	faucet_value *v = NULL;
	int rc;

	*exists = 0;
	if (key == NULL)
		return FAUCET_ENOMEM;
	rc = faucet_store_get(s, key, &v);
	*exists = rc == 0 && v != NULL;
	faucet_value_free(v);
	free(key);
	return rc;
}

static int take_entry(located *out, run_entry *e, const char *row)
{
	located_dispose(out);
	out->entry = *e;
	memset(e, 0, sizeof(*e));
	out->row = faucet__strdup(row);
	out->found = 1;
	return out->row ? 0 : FAUCET_ENOMEM;
}

/* In one scope's status: the named run, or the newest candidate with a
 * marker (if newer than what *out holds). */
static int locate_in(faucet_store *s, const char *scope, const char *row, const char *run,
		     run_status *st, located *out)
{
	for (size_t j = 0; j < st->count; j++) {
		run_entry *e = &st->items[j];
		int pick = 0, exists = 0, rc;

		if (run != NULL) {
			if (strcmp(e->run, run) == 0)
				return take_entry(out, e, row);
			continue;
		}
		if (out->found && strcmp(e->run, out->entry.run) <= 0)
			return 0; /* newest first: nothing newer in this scope */
		if ((rc = candidate(s, e, &pick)) != 0)
			return rc;
		if (pick && (rc = marker_exists(s, scope, e->run, &exists)) != 0)
			return rc;
		if (pick && exists)
			return take_entry(out, e, row);
	}
	return 0;
}

/* Find the named run (or the newest undoable one) in the chosen scopes. */
static int locate(faucet_store *s, const char *pipeline, const faucet_undo_options *o,
		  const char *run, located *out)
{
	faucet_strarray rows = {0};
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (o->pipeline_level)
		rc = faucet__strarray_push(&rows, "");
	else if (o->row != NULL)
		rc = faucet__strarray_push(&rows, o->row);
	else
		rc = status_scopes(s, pipeline, &rows);
	for (size_t i = 0; rc == 0 && i < rows.count && !(run && out->found); i++) {
		char *scope = scope_of(pipeline, rows.strings[i]);
		run_status st;

		if (scope == NULL) {
			rc = FAUCET_ENOMEM;
			break;
		}
		if ((rc = load_status(s, scope, &st)) == 0)
			rc = locate_in(s, scope, rows.strings[i], run, &st, out);
		faucet_run__status_dispose(&st);
		free(scope);
	}
	faucet_strarray_dispose(&rows);
	if (rc != 0)
		located_dispose(out);
	return rc;
}

/* The run to undo.  A named undo that did not finish (failed, died) is
 * resumed - its target undone again - unless forced: a retry never
 * reverses the half-done undo. */
static int find_target(faucet_store *s, const char *pipeline, const faucet_undo_options *o,
		       located *loc)
{
	int rc = locate(s, pipeline, o, o->run, loc);

	if (rc == 0 && loc->found && o->run != NULL && !o->force && loc->entry.undoes != NULL &&
	    strcmp(loc->entry.outcome, "ok") != 0 && strcmp(loc->entry.outcome, "undone") != 0) {
		faucet_undo_options in_row = *o;
		char *target = faucet__strdup(loc->entry.undoes);

		in_row.row = *loc->row ? loc->row : NULL;
		in_row.pipeline_level = *loc->row == '\0';
		if (target == NULL)
			return FAUCET_ENOMEM;
		in_row.row = in_row.row ? faucet__strdup(in_row.row) : NULL;
		located_dispose(loc);
		if (!in_row.pipeline_level && in_row.row == NULL)
			rc = FAUCET_ENOMEM;
		else
			rc = locate(s, pipeline, &in_row, target, loc);
		free((char *)in_row.row);
		free(target);
	}
	if (rc != 0)
		return rc;
	if (!loc->found) {
		if (o->run != NULL)
			return faucet_error_set(FAUCET_ENOTFOUND, "no run %s in pipeline %s%s%s",
						o->run, pipeline, o->row ? " row " : "",
						o->row ? o->row : "");
		return faucet_error_set(FAUCET_ENOTFOUND, "pipeline %s has no run to undo", pipeline);
	}
	if (strcmp(loc->entry.outcome, "undone") == 0)
		return faucet_error_set(FAUCET_EINVALID, "run %s was already undone", loc->entry.run);
	return 0;
}

/* ---- later runs ----------------------------------------------------------------------------- */

/* Every key changed by a run newer than the target, in any scope of the
 * pipeline, with the run that changed it (sorted by key). */
typedef struct {
	char *key; /* first: faucet__find_sorted */
	char *run;
} later_key;

typedef struct {
	later_key *items;
	size_t count, cap;
	int sorted;
	char *unknown_run; /* a later run whose changed keys are not all known */
} later_set;

static void later_dispose(later_set *l)
{
	for (size_t i = 0; i < l->count; i++) {
		free(l->items[i].key);
		free(l->items[i].run);
	}
	free(l->items);
	free(l->unknown_run);
	memset(l, 0, sizeof(*l));
}

static int later_add(later_set *l, const char *key, const char *run)
{
	later_key *items = faucet__reserve(l->items, &l->cap, l->count + 1, sizeof(*items), 16);

	if (items == NULL)
		return FAUCET_ENOMEM;
	l->items = items;
	items[l->count].key = faucet__strdup(key);
	items[l->count].run = faucet__strdup(run);
	if (items[l->count].key == NULL || items[l->count].run == NULL) {
		free(items[l->count].key);
		free(items[l->count].run);
		return FAUCET_ENOMEM;
	}
	l->count++;
	return 0;
}

/* A later run's changed keys: its marker's (a key whose after-image is
 * unknown counts as changed), else its status entry's list. */
static int later_from_run(faucet_store *s, const char *scope, const run_entry *e, later_set *l)
{
	run_marker m;
	int exists, rc = load_marker(s, scope, e->run, &m, &exists);

	if (rc != 0)
		return rc;
	if (exists) {
		for (size_t i = 0; rc == 0 && i < m.count; i++) {
			const run_image *img = &m.items[i];

			if (!img->after_known || !faucet_value_equal(img->before, img->after))
				rc = later_add(l, img->key, e->run);
		}
		faucet_run__marker_dispose(&m);
		return rc;
	}
	for (size_t i = 0; rc == 0 && i < e->keys.count; i++)
		rc = later_add(l, e->keys.strings[i], e->run);
	if (rc == 0 && e->keys_total > e->keys.count && l->unknown_run == NULL &&
	    (l->unknown_run = faucet__strdup(e->run)) == NULL)
		rc = FAUCET_ENOMEM;
	return rc;
}

static int compare_later(const void *a, const void *b)
{
	return strcmp(((const later_key *)a)->key, ((const later_key *)b)->key);
}

/* The runs that count as "later" than `target`: started after it (run ids
 * sort by start time), not undone, and neither the undo in progress
 * (`self`), nor an earlier attempt at undoing the target, nor the undo of
 * a run later than the target. */
static int later_runs(faucet_store *s, const char *pipeline, const char *target,
		      const char *self, later_set *l)
{
	faucet_strarray rows = {0};
	int rc = status_scopes(s, pipeline, &rows);

	memset(l, 0, sizeof(*l));
	for (size_t i = 0; rc == 0 && i < rows.count; i++) {
		char *scope = scope_of(pipeline, rows.strings[i]);
		run_status st;

		if (scope == NULL) {
			rc = FAUCET_ENOMEM;
			break;
		}
		rc = load_status(s, scope, &st);
		for (size_t j = 0; rc == 0 && j < st.count; j++) {
			const run_entry *e = &st.items[j];

			/* An undo of a run later than the target took that run's
			 * change back: the two cancel out (the undone run is
			 * skipped as undone). */
			if (strcmp(e->run, target) <= 0 || strcmp(e->outcome, "undone") == 0 ||
			    (self != NULL && strcmp(e->run, self) == 0) ||
			    (e->undoes != NULL && strcmp(e->undoes, target) >= 0))
				continue;
			rc = later_from_run(s, scope, e, l);
		}
		faucet_run__status_dispose(&st);
		free(scope);
	}
	faucet_strarray_dispose(&rows);
	if (rc == 0 && l->count > 1)
		qsort(l->items, l->count, sizeof(*l->items), compare_later);
	if (rc != 0)
		later_dispose(l);
	return rc;
}

static const char *later_changed(const later_set *l, const char *key)
{
	int found = 0;
	size_t at;

	if (l->unknown_run != NULL)
		return l->unknown_run;
	if (l->count == 0)
		return NULL;
	at = faucet__find_sorted(l->items, l->count, sizeof(*l->items), key, &found);
	return found ? l->items[at].run : NULL;
}

/* ---- planning ------------------------------------------------------------------------------- */

typedef enum { STEP_RESTORE, STEP_DONE, STEP_CONFLICT } step_kind;

typedef struct {
	const run_image *img;
	faucet_value *current; /* NULL = absent */
	step_kind kind;
	const char *later;     /* a conflict's later run, or NULL */
	int restored;          /* written by this undo */
} step;

/* Keys read per get_many while planning. */
#define PLAN_CHUNK 1000

/* What every key of the marker holds now, a chunk of keys per read. */
static int read_current(faucet_store *s, const run_marker *m, step *steps)
{
	const char *keys[PLAN_CHUNK];
	faucet_value *got[PLAN_CHUNK];
	int rc = 0;

	for (size_t from = 0; rc == 0 && from < m->count; from += PLAN_CHUNK) {
		size_t k = m->count - from < PLAN_CHUNK ? m->count - from : PLAN_CHUNK;

		for (size_t i = 0; i < k; i++)
			keys[i] = m->items[from + i].key;
		rc = faucet_store_get_many(s, keys, k, got);
		for (size_t i = 0; rc == 0 && i < k; i++)
			steps[from + i].current = got[i];
	}
	return rc;
}

static int plan(faucet_store *s, const run_marker *m, const later_set *later, step *steps)
{
	int rc = read_current(s, m, steps);

	for (size_t i = 0; rc == 0 && i < m->count; i++) {
		const run_image *img = &m->items[i];

		steps[i].img = img;
		if (faucet_value_equal(steps[i].current, img->before))
			steps[i].kind = STEP_DONE;
		else if (img->after_known && !faucet_value_equal(steps[i].current, img->after)) {
			steps[i].kind = STEP_CONFLICT;
			steps[i].later = later_changed(later, img->key); /* who, if a run */
		} else if ((steps[i].later = later_changed(later, img->key)) != NULL)
			steps[i].kind = STEP_CONFLICT;
		else
			steps[i].kind = STEP_RESTORE;
	}
	return rc;
}

static int note_conflict(faucet_undo_result *res, const step *st)
{
	res->conflict = 1;
	res->conflict_key = faucet__strdup(st->img->key);
	res->conflict_current = faucet_value_ref(st->current);
	res->conflict_wrote_known = st->img->after_known;
	res->conflict_wrote = st->img->after_known ? faucet_value_ref(st->img->after) : NULL;
	res->conflict_run = st->later ? faucet__strdup(st->later) : NULL;
	if (res->conflict_key == NULL || (st->later && res->conflict_run == NULL))
		return FAUCET_ENOMEM;
	return 0;
}

/* Every planned conflict into the result: the first into the single-key
 * fields, up to `max` into the list, all of them counted. */
static int note_conflicts(faucet_undo_result *res, const step *steps, size_t n, size_t max)
{
	size_t total = 0;
	int rc = 0;

	for (size_t i = 0; i < n; i++)
		total += steps[i].kind == STEP_CONFLICT;
	for (size_t i = 0; i < n; i++) {
		if (steps[i].kind == STEP_CONFLICT) {
			rc = note_conflict(res, &steps[i]);
			break;
		}
	}
	if (rc != 0)
		return rc;
	res->conflict_total = total;
	res->conflicts = faucet__calloc(total < max ? total : max, sizeof(*res->conflicts));
	if (res->conflicts == NULL)
		return FAUCET_ENOMEM;
	for (size_t i = 0; i < n && res->conflict_count < max; i++) {
		const step *st = &steps[i];
		faucet_undo_conflict *c = &res->conflicts[res->conflict_count];

		if (st->kind != STEP_CONFLICT)
			continue;
		res->conflict_count++; /* counted first: dispose frees what is there */
		c->key = faucet__strdup(st->img->key);
		c->current = faucet_value_ref(st->current);
		c->wrote_known = st->img->after_known;
		c->wrote = st->img->after_known ? faucet_value_ref(st->img->after) : NULL;
		c->run = st->later ? faucet__strdup(st->later) : NULL;
		if (c->key == NULL || (st->later && c->run == NULL))
			return FAUCET_ENOMEM;
	}
	res->conflicts_truncated = res->conflict_count < total;
	return 0;
}

/* The plan's restores into the result (keys, replaced, restored_to). */
static int report_plan(faucet_undo_result *res, const step *steps, size_t n, int force)
{
	size_t k = 0;

	res->replaced = faucet__calloc(n ? n : 1, sizeof(*res->replaced));
	res->restored_to = faucet__calloc(n ? n : 1, sizeof(*res->restored_to));
	if (res->replaced == NULL || res->restored_to == NULL)
		return FAUCET_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (steps[i].kind == STEP_DONE && !force)
			continue;
		if (faucet__strarray_push(&res->restored, steps[i].img->key) != 0)
			return FAUCET_ENOMEM;
		res->replaced[k] = faucet_value_ref(steps[i].current);
		res->restored_to[k++] = faucet_value_ref(steps[i].img->before);
	}
	return 0;
}

/* ---- applying --------------------------------------------------------------------------------- */

/* Compare-and-put (or -delete) `key` from `from` to `to` through the undo
 * run; *ok says whether `from` held. */
static int swap(faucet_run *u, const char *key, const faucet_value *from, const faucet_value *to,
		int *ok)
{
	*ok = 1;
	if (to == NULL)
		return from == NULL ? 0 : faucet_run_compare_and_delete(u, key, from, ok);
	return faucet_run_compare_and_put(u, key, from, to, ok);
}

static int restore(faucet_run *u, step *st, int force, int *ok)
{
	const faucet_value *before = st->img->before;
	int rc;

	*ok = 1;
	if (force)
		rc = before ? faucet_run_put(u, st->img->key, before)
			    : faucet_run_delete(u, st->img->key);
	else
		rc = swap(u, st->img->key, st->current, before, ok);
	st->restored = rc == 0 && *ok;
	return rc;
}

/* A restore found its key changed under it: put back what this undo
 * restored so far, newest first, so that the store holds none of it.  A
 * key someone changed again since cannot be put back: FAUCET_ERROR naming
 * it (the undo run's marker still lets `state undo` take it back). */
static int roll_back(faucet_run *u, step *steps, size_t upto)
{
	for (size_t i = upto; i-- > 0;) {
		int ok = 1, rc;

		if (!steps[i].restored)
			continue;
		rc = swap(u, steps[i].img->key, steps[i].img->before, steps[i].current, &ok);
		if (rc != 0)
			return rc;
		if (!ok)
			return faucet_error_set(FAUCET_ERROR,
						"undo stopped half-way and could not put %s back: "
						"it changed again meanwhile (undo run %s holds what "
						"it restored)", steps[i].img->key, faucet_run_id(u));
		steps[i].restored = 0;
	}
	return 0;
}

/* The before-images of every key the undo will restore, recorded in its
 * run's marker in one write.  Recorded one key at a time instead, with each
 * key's first write, the marker - which grows by a key each time - would be
 * rewritten once a key: an undo of N keys would write O(N^2) bytes of
 * marker (hours for a big import's).  Each key is read again just before
 * its write, so a put landing in between is still what the undo's own
 * marker gives back. */
static int record_restores(faucet_run *u, const step *steps, size_t n, int force)
{
	const char **keys = faucet__calloc(n ? n : 1, sizeof(*keys));
	size_t k = 0;
	int rc;

	if (keys == NULL)
		return FAUCET_ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (steps[i].kind != STEP_DONE || force)
			keys[k++] = steps[i].img->key;
	rc = faucet_run__record(u, keys, k);
	free(keys);
	return rc;
}

/* A conflict met on the way at steps[i]: the key read again for the
 * report, then every key restored so far put back. */
static int stop_at(faucet_store *s, faucet_run *u, step *steps, size_t n, size_t i, size_t max,
		   faucet_undo_result *res)
{
	int rc;

	/* Someone wrote the key between the plan and now. */
	faucet_value_free(steps[i].current);
	steps[i].current = NULL;
	/* The only conflict: the plan had none. */
	steps[i].kind = STEP_CONFLICT;
	if ((rc = faucet_store_get(s, steps[i].img->key, &steps[i].current)) == 0)
		rc = note_conflicts(res, steps, n, max);
	if (rc == 0)
		rc = roll_back(u, steps, i);
	return rc;
}

/* Restore steps [from, to) - at most FAUCET_STORE_CAS_BATCH_MAX - in one
 * compare-and-put batch through the undo run, when the store has one
 * (*batched): all of them (*done), or - a key changed since the plan -
 * none, and then the caller goes key by key, which finds the key. */
static int restore_batch(faucet_run *u, step *steps, size_t from, size_t to, int *done,
			 int *batched)
{
	faucet_store_guard g[FAUCET_STORE_CAS_BATCH_MAX];
	size_t at[FAUCET_STORE_CAS_BATCH_MAX], k = 0;
	int held = 0, rc;

	for (size_t i = from; i < to; i++) {
		if (steps[i].kind == STEP_DONE)
			continue;
		g[k] = (faucet_store_guard){steps[i].img->key, steps[i].current, steps[i].img->before};
		at[k++] = i;
	}
	*done = k == 0;
	if (k == 0)
		return 0;
	rc = faucet_run__compare_and_put_batch(u, g, k, &held);
	if (rc == FAUCET_EUNSUPPORTED) {
		*batched = 0;
		return 0;
	}
	for (size_t j = 0; rc == 0 && held && j < k; j++)
		steps[at[j]].restored = 1;
	*done = rc == 0 && held;
	return rc;
}

/* Restore every planned key - a batch at a time where the store writes
 * batches, else (and forced, and after a batch that did not hold) key by
 * key; on a conflict met on the way, roll back. */
static int apply(faucet_store *s, faucet_run *u, step *steps, size_t n, int force, size_t max,
		 faucet_undo_result *res)
{
	int rc = record_restores(u, steps, n, force), batched = !force;
	size_t i = 0;

	while (rc == 0 && i < n) {
		size_t end = n - i < FAUCET_STORE_CAS_BATCH_MAX ? n : i + FAUCET_STORE_CAS_BATCH_MAX;
		int done = 0;

		if (batched && (rc = restore_batch(u, steps, i, end, &done, &batched)) != 0)
			break;
		if (done) {
			i = end;
			continue;
		}
		for (; rc == 0 && i < end; i++) {
			int ok = 1;

			if (steps[i].kind == STEP_DONE && !force)
				continue;
			rc = restore(u, &steps[i], force, &ok);
			if (rc == 0 && !ok)
				return stop_at(s, u, steps, n, i, max, res);
		}
	}
	return rc;
}

static const size_t undo_options_sizes[] = {offsetof(faucet_undo_options, wait_ms),
					    offsetof(faucet_undo_options, max_conflicts),
					    sizeof(faucet_undo_options)};

int faucet_undo_options_init(faucet_undo_options *o, unsigned int version)
{
	static const faucet_undo_options defaults = FAUCET_UNDO_OPTIONS_INIT;

	return faucet__options_init(o, &defaults, undo_options_sizes, version,
				    FAUCET_UNDO_OPTIONS_VERSION, "faucet_undo_options");
}

static int load_undo_options(const faucet_undo_options *opts, faucet_undo_options *o)
{
	faucet_undo_options def = FAUCET_UNDO_OPTIONS_INIT;

	if (opts == NULL) {
		*o = def;
		return 0;
	}
	if (faucet__options_load(o, sizeof(*o), opts, undo_options_sizes, FAUCET_UNDO_OPTIONS_VERSION,
				 "faucet_undo_options") != 0)
		return FAUCET_EINVALID;
	if (o->wait_ms > FAUCET_RUN_MAX_TTL_MS && o->wait_ms != FAUCET_RUN_WAIT_FOREVER)
		return faucet_error_set(FAUCET_EINVALID, "undo wait of %llu ms is over 30 days",
					(unsigned long long)o->wait_ms);
	return 0;
}

/* One undo on its way: what faucet_run_undo's steps share. */
typedef struct {
	faucet_store *s;
	const char *pipeline;
	faucet_undo_options o;
	size_t max_conflicts;
	faucet_undo_result *res;
	faucet_run *u;     /* the undo's own run; NULL on a dry run */
	located loc;       /* the target */
	run_marker m;      /* the target's marker */
	later_set later;   /* the keys later runs changed, and which run */
	step *steps;       /* the plan: one step a key of the marker */
	int ended;         /* u's outcome is recorded */
} undo_job;

/* The arguments: the result cleared, the options loaded, the pipeline and
 * a named run id checked.  Nothing is held when this fails. */
static int undo_start(undo_job *j, faucet_store *s, const char *pipeline,
		      const faucet_undo_options *opts, faucet_undo_result *res)
{
	int rc;

	memset(j, 0, sizeof(*j));
	j->s = s;
	j->pipeline = pipeline;
	j->res = res;
	if (res == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_run_undo: result is NULL");
	if (faucet__options_check(res, FAUCET_UNDO_RESULT_VERSION, "faucet_undo_result") != 0)
		return FAUCET_EINVALID;
	undo_result_clear(res);
	if ((rc = load_undo_options(opts, &j->o)) != 0)
		return rc;
	j->max_conflicts = j->o.max_conflicts == 0 || j->o.max_conflicts > FAUCET_UNDO_CONFLICTS_MAX
				   ? FAUCET_UNDO_CONFLICTS_MAX
				   : j->o.max_conflicts;
	if (pipeline == NULL || faucet_validate_key(pipeline) != 0 || strstr(pipeline, "::"))
		return faucet_error_set(FAUCET_EINVALID, "invalid pipeline name '%s'",
					pipeline ? pipeline : "");
	if (j->o.run != NULL && !faucet_run__valid_id(j->o.run))
		return faucet_error_set(FAUCET_EINVALID,
					"'%s' is not a run id (YYYYMMDDTHHMMSS.mmmZ-xxxxxx)", j->o.run);
	return 0;
}

/* Step 1: the target (to know which scope the undo records in), then the
 * undo's own run under the pipeline lease (exclusive), so that no run,
 * bulk write or other undo of the pipeline is in flight from here on.  A
 * dry run takes no lease. */
static int undo_lock(undo_job *j)
{
	faucet_run_options ro = FAUCET_RUN_OPTIONS_INIT;
	int rc;

	if ((rc = find_target(j->s, j->pipeline, &j->o, &j->loc)) != 0 || j->o.dry_run)
		return rc;
	ro.row = *j->loc.row ? j->loc.row : NULL;
	ro.pipeline_level = *j->loc.row == '\0';
	ro.no_lease = 1;
	ro.exclusive = 1;
	ro.wait_ms = j->o.wait_ms;
	ro.command = j->o.command;
	/* Which run it undoes is the library's own business, not an option:
	 * set before anything of the undo run is recorded. */
	rc = faucet_run_begin(&j->u, j->s, j->pipeline, &ro);
	return rc != 0 ? rc : faucet_run__set_undoes(j->u, j->loc.entry.run);
}

/* Step 2, under the lease: the target found again (another undo or run may
 * have got there first), its marker, the keys later runs of any scope
 * changed, and the plan of every key. */
static int undo_plan(undo_job *j)
{
	char *scope = NULL;
	int rc, exists = 0;

	located_dispose(&j->loc);
	if ((rc = find_target(j->s, j->pipeline, &j->o, &j->loc)) != 0)
		return rc;
	if ((scope = scope_of(j->pipeline, j->loc.row)) == NULL)
		return FAUCET_ENOMEM;
	rc = load_marker(j->s, scope, j->loc.entry.run, &j->m, &exists);
	if (rc == 0 && !exists)
		rc = faucet_error_set(FAUCET_ENOTFOUND,
				      "run %s has nothing to undo (it changed no key, or its "
				      "rollback marker was retired: only the last %d are kept)",
				      j->loc.entry.run, FAUCET_RUN_ROLLBACK_MAX);
	if (rc == 0 && strcmp(j->loc.entry.outcome, "running") == 0) {
		int gone = 0;

		if ((rc = faucet_run__entry_gone(j->s, &j->loc.entry, &gone)) == 0 && !gone)
			rc = faucet_error_set(FAUCET_EBUSY, "run %s is still running",
					      j->loc.entry.run);
	}
	/* The newest run may have changed between the two looks; one in
	 * another scope than the undo run records in means starting again. */
	if (rc == 0 && j->u != NULL && strcmp(scope, faucet_run_scope(j->u)) != 0)
		rc = faucet_error_set(FAUCET_ECONTENTION,
				      "the newest run of %s changed while the undo started; "
				      "run it again", j->pipeline);
	else if (rc == 0 && j->u != NULL)
		rc = faucet_run__set_undoes(j->u, j->loc.entry.run);
	free(scope);
	if (rc == 0)
		rc = later_runs(j->s, j->pipeline, j->loc.entry.run,
				j->u ? faucet_run_id(j->u) : NULL, &j->later);
	if (rc == 0 &&
	    (j->steps = faucet__calloc(j->m.count ? j->m.count : 1, sizeof(*j->steps))) == NULL)
		rc = FAUCET_ENOMEM;
	if (rc == 0)
		rc = plan(j->s, &j->m, &j->later, j->steps);
	return rc;
}

/* Step 3: the target named in the result; then, unless forced, any key in
 * conflict refuses the whole undo, every one of them checked and reported
 * (res->conflict set, nothing written); else the restores planned. */
static int undo_refuse(undo_job *j)
{
	faucet_undo_result *res = j->res;

	if ((res->run = faucet__strdup(j->loc.entry.run)) == NULL ||
	    (res->scope = scope_of(j->pipeline, j->loc.row)) == NULL)
		return FAUCET_ENOMEM;
	for (size_t i = 0; !j->o.force && i < j->m.count; i++) {
		if (j->steps[i].kind == STEP_CONFLICT)
			return note_conflicts(res, j->steps, j->m.count, j->max_conflicts);
	}
	return report_plan(res, j->steps, j->m.count, j->o.force);
}

/* Step 4: restore every key by compare-and-put against what the plan saw,
 * through the undo run; a write that slipped in puts the restored keys
 * back and fails the undo as a conflict.  The undo's "ok" and its target's
 * "undone" are written together, last. */
static int undo_write(undo_job *j)
{
	faucet_undo_result *res = j->res;
	int rc;

	if ((res->undo_run = faucet__strdup(faucet_run_id(j->u))) == NULL)
		return FAUCET_ENOMEM;
	/* Recorded even when every key is back already (a retry of an undo
	 * that failed after restoring): the target must still be marked. */
	rc = faucet_run__start(j->u);
	if (rc == 0)
		rc = apply(j->s, j->u, j->steps, j->m.count, j->o.force, j->max_conflicts, res);
	if (rc != 0)
		return rc;
	j->ended = 1;
	if (!res->conflict)
		return faucet_run_end(j->u, FAUCET_RUN_OK, 0, NULL);
	{
		char msg[FAUCET_KEY_MAX + 64];

		(void)snprintf(msg, sizeof(msg), "conflict: %s changed during the undo",
			       res->conflict_key);
		rc = faucet_run_end(j->u, FAUCET_RUN_FAILED, -1, msg);
	}
	free(res->undo_run);
	res->undo_run = NULL;
	for (size_t i = 0; i < res->restored.count; i++) {
		faucet_value_free(res->replaced[i]);
		faucet_value_free(res->restored_to[i]);
	}
	faucet_strarray_dispose(&res->restored);
	return rc;
}

/* The end: an undo run that failed, or stopped at a conflict before
 * writing, is recorded as failed when it wrote and leaves no trace when
 * not; its lease is released.  Everything held is freed; `rc` returned with
 * its message. */
static int undo_finish(undo_job *j, int rc)
{
	if (j->u != NULL && !j->ended) {
		int keep = rc;
		char *msg = faucet__strdup(faucet_error_last()->message);

		(void)faucet_run_end(j->u, FAUCET_RUN_FAILED, -1, rc ? msg : "conflict");
		if (rc != 0)
			(void)faucet_error_set(keep, "%s", msg ? msg : "undo failed");
		free(msg);
	}
	for (size_t i = 0; j->steps != NULL && i < j->m.count; i++)
		faucet_value_free(j->steps[i].current);
	free(j->steps);
	faucet_run_free(j->u); /* an unended run releases nothing: ended above */
	later_dispose(&j->later);
	faucet_run__marker_dispose(&j->m);
	located_dispose(&j->loc);
	return rc;
}

/* SPEC's undo (doc/design.md §8.5), one step a function. */
int faucet_run_undo(faucet_store *s, const char *pipeline, const faucet_undo_options *opts,
		    faucet_undo_result *res)
{
	undo_job j;
	int rc = undo_start(&j, s, pipeline, opts, res);

	if (rc != 0)
		return rc;
	rc = undo_lock(&j);
	if (rc == 0)
		rc = undo_plan(&j);
	if (rc == 0)
		rc = undo_refuse(&j);
	if (rc == 0 && !res->conflict && !j.o.dry_run)
		rc = undo_write(&j);
	return undo_finish(&j, rc);
}

/* ---- history ------------------------------------------------------------------------------------ */

int faucet_run_history_json(faucet_store *s, const char *pipeline, const char *row,
			    char **json_out)
{
	faucet_strarray rows = {0};
	faucet_buf b = FAUCET_BUF_INIT;
	int rc;

	*json_out = NULL;
	if (pipeline == NULL || faucet_validate_key(pipeline) != 0 || strstr(pipeline, "::"))
		return faucet_error_set(FAUCET_EINVALID, "invalid pipeline name '%s'",
					pipeline ? pipeline : "");
	rc = row ? faucet__strarray_push(&rows, row) : status_scopes(s, pipeline, &rows);
	(void)faucet__buf_putc(&b, '[');
	for (size_t i = 0, n = 0; rc == 0 && i < rows.count; i++) {
		char *scope = scope_of(pipeline, rows.strings[i]);
		run_status st;

		if (scope == NULL) {
			rc = FAUCET_ENOMEM;
			break;
		}
		rc = load_status(s, scope, &st);
		/* A run whose holder is gone reads "abandoned" to everyone, not
		 * only to the next run that begins. */
		for (size_t j = 0; rc == 0 && j < st.count; j++) {
			int gone = 0;

			if ((rc = faucet_run__entry_gone(s, &st.items[j], &gone)) == 0 && gone) {
				char *o = faucet__strdup("abandoned");

				if (o == NULL) {
					rc = FAUCET_ENOMEM;
				} else {
					free(st.items[j].outcome);
					st.items[j].outcome = o;
				}
			}
		}
		if (rc == 0 && (st.count > 0 || row == NULL)) {
			if (n++ > 0)
				(void)faucet__buf_putc(&b, ',');
			(void)faucet__buf_puts(&b, "{\"scope\":");
			faucet__json_string(&b, scope);
			(void)faucet__buf_puts(&b, ",\"row\":");
			faucet__json_string(&b, *rows.strings[i] ? rows.strings[i] : NULL);
			(void)faucet__buf_puts(&b, ",\"runs\":[");
			for (size_t j = 0; j < st.count; j++) {
				if (j > 0)
					(void)faucet__buf_putc(&b, ',');
				faucet_run__entry_json(&b, &st.items[j]);
			}
			(void)faucet__buf_puts(&b, "]}");
		}
		faucet_run__status_dispose(&st);
		free(scope);
	}
	(void)faucet__buf_putc(&b, ']');
	faucet_strarray_dispose(&rows);
	if (rc == 0 && b.failed)
		rc = FAUCET_ENOMEM;
	if (rc != 0) {
		faucet__buf_dispose(&b);
		return rc;
	}
	*json_out = faucet__buf_detach(&b);
	return *json_out ? 0 : FAUCET_ENOMEM;
}
