/*
 * undo.c - undoing a run, finding runs, and reading the history.
 *
 * An undo is planned in full before anything is written: every key of the
 * run's marker is read and classified
 *
 *   restore   it holds what the run left (its after-image; for an abandoned
 *             run, which has none, anything no later run touched)
 *   done      it already holds its before-image (an undo that crashed
 *             half-way restored it; running the undo again finishes the job)
 *   conflict  it changed since - refused, naming the key, unless forced
 *
 * Then the undo runs as a run of its own (so it can be undone), restoring
 * each key with compare-and-put against the value the plan saw; a writer
 * that slips in between makes that compare-and-put fail, which is reported
 * as a conflict like any other, with what was restored so far listed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "run/run_internal.h"
#include <faucet/keys.h>

void faucet_undo_result_dispose(faucet_undo_result *r)
{
	if (r == NULL)
		return;
	free(r->run);
	free(r->scope);
	free(r->undo_run);
	free(r->conflict_key);
	faucet_value_free(r->conflict_current);
	faucet_value_free(r->conflict_wrote);
	faucet_strarray_dispose(&r->restored);
	memset(r, 0, sizeof(*r));
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
			rc = faucet_strarray_push(rows, "");
		else if (len > strlen(tail) && strcmp(keys.strings[i] + len - strlen(tail), tail) == 0)
			rc = faucet_strarray_push_owned(
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
	char *key = run__key(scope, "__status__");
	faucet_value *v = NULL;
	int rc;

	memset(st, 0, sizeof(*st));
	if (key == NULL)
		return FAUCET_ENOMEM;
	rc = faucet_store_get(s, key, &v);
	if (rc == 0)
		rc = run__status_parse(v, key, st);
	faucet_value_free(v);
	free(key);
	return rc;
}

static int load_marker(faucet_store *s, const char *scope, const char *run, run_marker *m,
		       int *exists)
{
	char *key = run__marker_key(scope, run);
	faucet_value *v = NULL;
	int rc;

	*exists = 0;
	memset(m, 0, sizeof(*m));
	if (key == NULL)
		return FAUCET_ENOMEM;
	rc = faucet_store_get(s, key, &v);
	if (rc == 0 && v != NULL) {
		rc = run__marker_parse(v, key, run, m);
		*exists = rc == 0;
	}
	faucet_value_free(v);
	free(key);
	return rc;
}

/* A run `state undo` would pick by itself: not undone, and it changed
 * something (or died before it could say what it changed). */
static int undoable(const run_entry *e)
{
	if (strcmp(e->outcome, "undone") == 0)
		return 0;
	/* An undo that died half-way is not what to undo next: the run it was
	 * undoing is (still not undone), and undoing that again finishes the
	 * job the dead undo began. */
	if (e->undoes != NULL && e->ended_at == NULL)
		return 0;
	if (e->keys_total > 0)
		return 1;
	return strcmp(e->outcome, "running") == 0 || strcmp(e->outcome, "abandoned") == 0;
}

typedef struct {
	char *row;  /* "" = pipeline level */
	run_entry entry;
	int found;
} located;

/* Find the named run (or the newest undoable one) in the chosen scopes. */
static int locate(faucet_store *s, const char *pipeline, const faucet_undo_options *o,
		  located *out)
{
	faucet_strarray rows = {0};
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (o->pipeline_level)
		rc = faucet_strarray_push(&rows, "");
	else if (o->row != NULL)
		rc = faucet_strarray_push(&rows, o->row);
	else
		rc = status_scopes(s, pipeline, &rows);
	for (size_t i = 0; rc == 0 && i < rows.count; i++) {
		char *scope = scope_of(pipeline, rows.strings[i]);
		run_status st;

		if (scope == NULL) {
			rc = FAUCET_ENOMEM;
			break;
		}
		rc = load_status(s, scope, &st);
		free(scope);
		for (size_t j = 0; rc == 0 && j < st.count; j++) {
			run_entry *e = &st.items[j];
			int pick;

			if (o->run != NULL)
				pick = strcmp(e->run, o->run) == 0;
			else
				pick = undoable(e) &&
				       (!out->found || strcmp(e->run, out->entry.run) > 0);
			if (!pick)
				continue;
			run__entry_dispose(&out->entry);
			free(out->row);
			out->entry = *e;
			memset(e, 0, sizeof(*e));
			out->row = faucet__strdup(rows.strings[i]);
			out->found = 1;
			if (out->row == NULL)
				rc = FAUCET_ENOMEM;
			if (o->run == NULL)
				break; /* newest first: the first undoable one is this scope's newest */
		}
		run__status_dispose(&st);
	}
	faucet_strarray_dispose(&rows);
	if (rc != 0) {
		run__entry_dispose(&out->entry);
		free(out->row);
		memset(out, 0, sizeof(*out));
	}
	return rc;
}

/* ---- planning ------------------------------------------------------------------------------- */

typedef enum { STEP_RESTORE, STEP_DONE, STEP_CONFLICT } step_kind;

typedef struct {
	const run_image *img;
	faucet_value *current; /* NULL = absent */
	step_kind kind;
} step;

/* Whether a run newer than `run` in the scope has `key` in its marker. */
static int changed_later(faucet_store *s, const char *scope, const run_status *st,
			 const char *run, const char *key, int *later)
{
	*later = 0;
	for (size_t i = 0; i < st->count && !*later; i++) {
		run_marker m;
		int exists, rc;

		if (strcmp(st->items[i].run, run) <= 0)
			continue;
		if ((rc = load_marker(s, scope, st->items[i].run, &m, &exists)) != 0)
			return rc;
		*later = exists && run__marker_find(&m, key) != NULL;
		run__marker_dispose(&m);
	}
	return 0;
}

static int plan(faucet_store *s, const char *scope, const run_status *st, const char *run,
		const run_marker *m, step *steps)
{
	for (size_t i = 0; i < m->count; i++) {
		const run_image *img = &m->items[i];
		int rc = faucet_store_get(s, img->key, &steps[i].current), later = 0;

		steps[i].img = img;
		if (rc != 0)
			return rc;
		if (faucet_value_equal(steps[i].current, img->before))
			steps[i].kind = STEP_DONE;
		else if (m->has_after)
			steps[i].kind = faucet_value_equal(steps[i].current, img->after)
						? STEP_RESTORE : STEP_CONFLICT;
		else {
			if ((rc = changed_later(s, scope, st, run, img->key, &later)) != 0)
				return rc;
			steps[i].kind = later ? STEP_CONFLICT : STEP_RESTORE;
		}
	}
	return 0;
}

static int note_conflict(faucet_undo_result *res, const step *st, int has_after)
{
	res->conflict = 1;
	res->conflict_key = faucet__strdup(st->img->key);
	res->conflict_current = faucet_value_ref(st->current);
	res->conflict_wrote_known = has_after;
	res->conflict_wrote = has_after ? faucet_value_ref(st->img->after) : NULL;
	return res->conflict_key ? 0 : FAUCET_ENOMEM;
}

/* ---- applying --------------------------------------------------------------------------------- */

static int restore(faucet_run *u, const step *st, int force, int *ok)
{
	const faucet_value *before = st->img->before;
	int rc;

	*ok = 1;
	if (force)
		return before ? faucet_run_put(u, st->img->key, before)
			      : faucet_run_delete(u, st->img->key);
	if (before == NULL) {
		if (st->current == NULL)
			return 0;
		return faucet_run_compare_and_delete(u, st->img->key, st->current, ok);
	}
	rc = faucet_run_compare_and_put(u, st->img->key, st->current, before, ok);
	return rc;
}

int faucet_run_undo(faucet_store *s, const char *pipeline, const faucet_undo_options *opts,
		    faucet_undo_result *res)
{
	faucet_undo_options def = FAUCET_UNDO_OPTIONS_INIT;
	faucet_run_options ro = FAUCET_RUN_OPTIONS_INIT;
	faucet_run *u = NULL;
	located loc;
	run_status st;
	run_marker m;
	step *steps = NULL;
	int rc, exists = 0;

	if (res == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_run_undo: result is NULL");
	memset(res, 0, sizeof(*res));
	memset(&st, 0, sizeof(st));
	memset(&m, 0, sizeof(m));
	if (opts == NULL)
		opts = &def;
	if (opts->version != FAUCET_UNDO_OPTIONS_VERSION)
		return faucet_error_set(FAUCET_EINVALID, "undo options version %u is not supported",
					opts->version);
	if (pipeline == NULL || faucet_validate_key(pipeline) != 0 || strstr(pipeline, "::"))
		return faucet_error_set(FAUCET_EINVALID, "invalid pipeline name '%s'",
					pipeline ? pipeline : "");
	if (opts->run != NULL && !run__valid_id(opts->run))
		return faucet_error_set(FAUCET_EINVALID,
					"'%s' is not a run id (YYYYMMDDTHHMMSS.mmmZ-xxxxxx)", opts->run);
	if ((rc = locate(s, pipeline, opts, &loc)) != 0)
		return rc;
	if (!loc.found) {
		if (opts->run != NULL)
			return faucet_error_set(FAUCET_ENOTFOUND, "no run %s in pipeline %s%s%s",
						opts->run, pipeline, opts->row ? " row " : "",
						opts->row ? opts->row : "");
		return faucet_error_set(FAUCET_ENOTFOUND, "pipeline %s has no run to undo", pipeline);
	}
	res->run = faucet__strdup(loc.entry.run);
	res->scope = scope_of(pipeline, loc.row);
	if (res->run == NULL || res->scope == NULL) {
		rc = FAUCET_ENOMEM;
		goto done;
	}
	if (strcmp(loc.entry.outcome, "undone") == 0) {
		rc = faucet_error_set(FAUCET_EINVALID, "run %s was already undone", loc.entry.run);
		goto done;
	}
	if ((rc = load_marker(s, res->scope, loc.entry.run, &m, &exists)) != 0)
		goto done;
	if (!exists) {
		rc = faucet_error_set(FAUCET_ENOTFOUND,
				      "run %s has nothing to undo (it changed no key, or its "
				      "rollback marker was retired: only the last %d are kept)",
				      loc.entry.run, FAUCET_RUN_ROLLBACK_MAX);
		goto done;
	}
	if (!m.has_after && strcmp(loc.entry.outcome, "running") == 0 && *loc.row) {
		/* A run still in flight cannot be undone under its feet. */
		char *lk = run__key(res->scope, "__lease__");
		faucet_value *lv = NULL;
		faucet_lease l;

		rc = lk ? faucet_store_get(s, lk, &lv) : FAUCET_ENOMEM;
		memset(&l, 0, sizeof(l));
		if (rc == 0 && lv != NULL && (rc = faucet_lease_parse(lv, lk, &l)) == 0 && l.run &&
		    strcmp(l.run, loc.entry.run) == 0 && l.expires_at > (int64_t)time(NULL))
			rc = faucet_error_set(FAUCET_EBUSY, "run %s is still running (it holds %s)",
					      loc.entry.run, res->scope);
		faucet_lease_dispose(&l);
		faucet_value_free(lv);
		free(lk);
		if (rc != 0)
			goto done;
	}
	if ((rc = load_status(s, res->scope, &st)) != 0)
		goto done;
	steps = faucet__calloc(m.count ? m.count : 1, sizeof(*steps));
	if (steps == NULL) {
		rc = FAUCET_ENOMEM;
		goto done;
	}
	if ((rc = plan(s, res->scope, &st, loc.entry.run, &m, steps)) != 0)
		goto done;
	for (size_t i = 0; i < m.count; i++) {
		if (steps[i].kind == STEP_CONFLICT && !opts->force) {
			rc = note_conflict(res, &steps[i], m.has_after);
			goto done;
		}
		if (steps[i].kind != STEP_DONE || opts->force)
			if ((rc = faucet_strarray_push(&res->restored, steps[i].img->key)) != 0)
				goto done;
	}
	if (opts->dry_run)
		goto done;
	ro.row = *loc.row ? loc.row : NULL;
	ro.pipeline_level = *loc.row == '\0';
	ro.no_lease = 1;
	ro.command = opts->command;
	ro.undoes = loc.entry.run;
	if ((rc = faucet_run_begin(&u, s, pipeline, &ro)) != 0)
		goto done;
	res->undo_run = faucet__strdup(faucet_run_id(u));
	if (res->undo_run == NULL)
		rc = FAUCET_ENOMEM;
	for (size_t i = 0; rc == 0 && i < m.count; i++) {
		int ok = 1;

		if (steps[i].kind == STEP_DONE && !opts->force)
			continue;
		rc = restore(u, &steps[i], opts->force, &ok);
		if (rc == 0 && !ok) {
			/* Someone wrote the key between the plan and now. */
			faucet_value_free(steps[i].current);
			steps[i].current = NULL;
			rc = faucet_store_get(s, steps[i].img->key, &steps[i].current);
			if (rc == 0)
				rc = note_conflict(res, &steps[i], m.has_after);
			break;
		}
	}
	if (rc == 0 && res->conflict) {
		char msg[FAUCET_KEY_MAX + 64];
		(void)snprintf(msg, sizeof(msg), "conflict: %s changed during the undo",
			       res->conflict_key);
		rc = faucet_run_end(u, FAUCET_RUN_FAILED, -1, msg);
	} else if (rc == 0) {
		rc = faucet_run_end(u, FAUCET_RUN_OK, 0, NULL);
	} else {
		int keep = rc;
		char *msg = faucet__strdup(faucet_error_last()->message);
		(void)faucet_run_end(u, FAUCET_RUN_FAILED, -1, msg);
		(void)faucet_error_set(keep, "%s", msg ? msg : "undo failed");
		free(msg);
	}
done:
	for (size_t i = 0; steps != NULL && i < m.count; i++)
		faucet_value_free(steps[i].current);
	free(steps);
	faucet_run_free(u);
	run__marker_dispose(&m);
	run__status_dispose(&st);
	run__entry_dispose(&loc.entry);
	free(loc.row);
	return rc;
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
	rc = row ? faucet_strarray_push(&rows, row) : status_scopes(s, pipeline, &rows);
	(void)faucet_buf_putc(&b, '[');
	for (size_t i = 0, n = 0; rc == 0 && i < rows.count; i++) {
		char *scope = scope_of(pipeline, rows.strings[i]);
		run_status st;

		if (scope == NULL) {
			rc = FAUCET_ENOMEM;
			break;
		}
		rc = load_status(s, scope, &st);
		if (rc == 0 && (st.count > 0 || row == NULL)) {
			if (n++ > 0)
				(void)faucet_buf_putc(&b, ',');
			(void)faucet_buf_puts(&b, "{\"scope\":");
			run__json_string(&b, scope);
			(void)faucet_buf_puts(&b, ",\"row\":");
			run__json_string(&b, *rows.strings[i] ? rows.strings[i] : NULL);
			(void)faucet_buf_puts(&b, ",\"runs\":[");
			for (size_t j = 0; j < st.count; j++) {
				if (j > 0)
					(void)faucet_buf_putc(&b, ',');
				run__entry_json(&b, &st.items[j]);
			}
			(void)faucet_buf_puts(&b, "]}");
		}
		run__status_dispose(&st);
		free(scope);
	}
	(void)faucet_buf_putc(&b, ']');
	faucet_strarray_dispose(&rows);
	if (rc == 0 && b.failed)
		rc = FAUCET_ENOMEM;
	if (rc != 0) {
		faucet_buf_dispose(&b);
		return rc;
	}
	*json_out = faucet_buf_detach(&b);
	return *json_out ? 0 : FAUCET_ENOMEM;
}
