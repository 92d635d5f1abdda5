/*
 * marker.c - the durable progress marker of one backfill range.
 *
 * The marker is a single JSON document per range,
 *   {"descriptor": "...", "units": {"{unit}": {"status": "done"} |
 *                                   {"status": "failed", "error": "..."}}}
 * at {pipeline}::__backfill__::{hash}, kept apart from the live bookmark
 * ({pipeline}::{row}) and from every unit's own key.  Pending units are
 * simply absent, so an interrupted unit is retried by --resume.
 *
 * We add fields the original does not write and does not need - the range's
 * "timezone" beside the descriptor, and per unit "attempts", "started_at"
 * and "ended_at" (RFC 3339 UTC) - so `faucet backfill status` can show them.
 * The original's own fields keep their names and meaning, so it still reads
 * a marker we wrote; a marker without our fields reads as attempts 0 and
 * no times.
 *
 * Several runners may finish units of one range at the same time, so the
 * marker is never written blind: each outcome is merged into the document
 * read from the store and written back with compare-and-put, and a lost race
 * re-reads and merges again.  Outcomes of other units are thus never lost,
 * provided the store's compare-and-put is atomic (every backend that reports
 * faucet_store_supports_compare_and_put()).
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "backfill/backfill_internal.h"
#include "values/value_internal.h"
#include <faucet/backfill.h>
#include <faucet/keys.h>

/* Most attempts a unit's entry may count (what the reader accepts). */
#define MARKER_ATTEMPTS_MAX 1000000000u

#define RECORD_MAX_ATTEMPTS 10000 /* conflicts are short-lived; this is a safety stop */

typedef struct {
	char *unit; /* first: faucet__find_sorted looks it up */
	faucet_backfill_status status;
	char *error; /* failed units only */
	unsigned attempts;             /* runs that reached an outcome; 0 = not recorded */
	char *started_at, *ended_at;   /* the last such run's times, or NULL */
} unit_outcome;

struct faucet_backfill_marker {
	char *descriptor;
	char *timezone; /* the zone the range was planned in, or NULL (not recorded) */
	unit_outcome *units; /* sorted by strcmp of unit */
	size_t count, cap;
};

/* ---- keys ------------------------------------------------------------------ */

char *faucet_backfill_marker_key(const char *pipeline, const char *range_hash)
{
	return faucet__sprintf("%s::__backfill__::%s", pipeline, range_hash);
}

char *faucet_backfill_unit_key(const char *pipeline, const char *range_hash, const char *unit)
{
	char *row = faucet_backfill_unit_row(range_hash, unit), *key;

	if (row == NULL)
		return NULL;
	key = faucet__sprintf("%s" FAUCET_KEY_SEPARATOR "%s", pipeline, row);
	free(row);
	return key;
}

char *faucet_backfill_legacy_unit_key(const char *pipeline, const char *unit)
{
	return faucet__sprintf("%s::backfill::%s", pipeline, unit);
}

/* ---- the document in memory ------------------------------------------------ */

int faucet_backfill_marker_new(faucet_backfill_marker **out, const char *descriptor)
{
	faucet_backfill_marker *m;

	*out = NULL;
	m = faucet__calloc(1, sizeof(*m));
	if (m == NULL)
		return FAUCET_ENOMEM;
	m->descriptor = faucet__strdup(descriptor ? descriptor : "");
	if (m->descriptor == NULL) {
		free(m);
		return FAUCET_ENOMEM;
	}
	*out = m;
	return 0;
}

void faucet_backfill_marker_free(faucet_backfill_marker *m)
{
	if (m == NULL)
		return;
	for (size_t i = 0; i < m->count; i++) {
		free(m->units[i].unit);
		free(m->units[i].error);
		free(m->units[i].started_at);
		free(m->units[i].ended_at);
	}
	free(m->units);
	free(m->descriptor);
	free(m->timezone);
	free(m);
}

/* The index of `unit`, or where it would go (*found = 0). */
static size_t find(const faucet_backfill_marker *m, const char *unit, int *found)
{
	return faucet__find_sorted(m->units, m->count, sizeof(*m->units), unit, found);
}

static int set_outcome(faucet_backfill_marker *m, const char *unit, faucet_backfill_status st,
		       const char *error)
{
	int found;
	size_t i = find(m, unit, &found);
	char *err_copy = NULL;

	if (st == FAUCET_BACKFILL_FAILED && (err_copy = faucet__strdup(error ? error : "")) == NULL)
		return FAUCET_ENOMEM;
	if (!found) {
		char *name = faucet__strdup(unit);
		if (name == NULL) {
			free(err_copy);
			return FAUCET_ENOMEM;
		}
		unit_outcome *grown =
			faucet__reserve(m->units, &m->cap, m->count + 1, sizeof(*m->units), 8);
		if (grown == NULL) {
			free(name);
			free(err_copy);
			return FAUCET_ENOMEM;
		}
		m->units = grown;
		memmove(&m->units[i + 1], &m->units[i], (m->count - i) * sizeof(*m->units));
		m->count++;
		m->units[i].unit = name;
		m->units[i].error = NULL;
		m->units[i].attempts = 0;
		m->units[i].started_at = m->units[i].ended_at = NULL;
	}
	free(m->units[i].error);
	m->units[i].status = st;
	m->units[i].error = err_copy;
	return 0;
}

int faucet_backfill_marker_mark_done(faucet_backfill_marker *m, const char *unit)
{
	return set_outcome(m, unit, FAUCET_BACKFILL_DONE, NULL);
}

int faucet_backfill_marker_mark_failed(faucet_backfill_marker *m, const char *unit,
				       const char *error)
{
	return set_outcome(m, unit, FAUCET_BACKFILL_FAILED, error);
}

faucet_backfill_status faucet_backfill_marker_status(const faucet_backfill_marker *m,
						     const char *unit, const char **error)
{
	int found;
	size_t i = find(m, unit, &found);

	if (error != NULL)
		*error = found ? m->units[i].error : NULL;
	return found ? m->units[i].status : FAUCET_BACKFILL_PENDING;
}

const char *faucet_backfill_marker_descriptor(const faucet_backfill_marker *m)
{
	return m->descriptor;
}

const char *faucet_backfill_marker_timezone(const faucet_backfill_marker *m)
{
	return m->timezone;
}

int faucet_backfill_marker_set_timezone(faucet_backfill_marker *m, const char *timezone)
{
	char *copy = NULL;

	if (timezone != NULL && (copy = faucet__strdup(timezone)) == NULL)
		return FAUCET_ENOMEM;
	free(m->timezone);
	m->timezone = copy;
	return 0;
}

/* Replace *slot by a copy of `text` (NULL clears it). */
static int set_text(char **slot, const char *text)
{
	char *copy = NULL;

	if (text != NULL && (copy = faucet__strdup(text)) == NULL)
		return FAUCET_ENOMEM;
	free(*slot);
	*slot = copy;
	return 0;
}

int faucet_backfill_marker_set_attempt(faucet_backfill_marker *m, const char *unit,
				       unsigned attempts, const char *started_at,
				       const char *ended_at)
{
	int found;
	size_t i = find(m, unit, &found);
	char *s = NULL, *e = NULL;

	if (!found)
		return faucet_error_set(FAUCET_EINVALID, "backfill marker: no outcome for unit '%s'",
					unit);
	/* What the reader takes (read_attempt): a marker is never written
	 * that it could not read back. */
	if (attempts > MARKER_ATTEMPTS_MAX)
		return faucet_error_set(FAUCET_EINVALID,
					"backfill marker: unit '%s': %u attempts is over the limit of %u",
					unit, attempts, (unsigned)MARKER_ATTEMPTS_MAX);
	if (set_text(&s, started_at) != 0 || set_text(&e, ended_at) != 0) {
		free(s);
		return FAUCET_ENOMEM;
	}
	free(m->units[i].started_at);
	free(m->units[i].ended_at);
	m->units[i].attempts = attempts;
	m->units[i].started_at = s;
	m->units[i].ended_at = e;
	return 0;
}

int faucet_backfill_marker_unit_info(const faucet_backfill_marker *m, const char *unit,
				     faucet_backfill_unit_info *out)
{
	int found;
	size_t i = find(m, unit, &found);

	memset(out, 0, sizeof(*out));
	if (!found)
		return 0;
	out->status = m->units[i].status;
	out->error = m->units[i].error;
	out->attempts = m->units[i].attempts;
	out->started_at = m->units[i].started_at;
	out->ended_at = m->units[i].ended_at;
	return 1;
}

size_t faucet_backfill_marker_done_count(const faucet_backfill_marker *m)
{
	size_t n = 0;

	for (size_t i = 0; i < m->count; i++)
		n += m->units[i].status == FAUCET_BACKFILL_DONE;
	return n;
}

size_t faucet_backfill_marker_failed_count(const faucet_backfill_marker *m)
{
	return m->count - faucet_backfill_marker_done_count(m);
}

int faucet_backfill_marker_equal(const faucet_backfill_marker *a, const faucet_backfill_marker *b)
{
	if (strcmp(a->descriptor, b->descriptor) != 0 || a->count != b->count ||
	    strcmp(a->timezone ? a->timezone : "", b->timezone ? b->timezone : "") != 0)
		return 0;
	for (size_t i = 0; i < a->count; i++) {
		const unit_outcome *x = &a->units[i], *y = &b->units[i];
		if (strcmp(x->unit, y->unit) != 0 || x->status != y->status ||
		    strcmp(x->error ? x->error : "", y->error ? y->error : "") != 0 ||
		    x->attempts != y->attempts ||
		    strcmp(x->started_at ? x->started_at : "", y->started_at ? y->started_at : "") != 0 ||
		    strcmp(x->ended_at ? x->ended_at : "", y->ended_at ? y->ended_at : "") != 0)
			return 0;
	}
	return 1;
}

/* ---- JSON ------------------------------------------------------------------ */

static int marker_shape_error(const char *what)
{
	return faucet_error_set(FAUCET_ECONFIG, "backfill marker: %s", what);
}

/* Our added fields of a unit: "attempts" (a count), "started_at" and
 * "ended_at" (strings).  Absent ones stay 0 / NULL; a wrong type is a shape
 * error like any other. */
static int read_attempt(faucet_backfill_marker *m, const char *unit, json_object *o)
{
	json_object *att = NULL, *st = NULL, *en = NULL;
	int64_t n = 0;

	if (json_object_object_get_ex(o, "attempts", &att)) {
		if (!json_object_is_type(att, json_type_int) || (n = json_object_get_int64(att)) < 0 ||
		    n > MARKER_ATTEMPTS_MAX)
			return faucet_error_set(FAUCET_ECONFIG,
						"backfill marker: unit '%s' has a bad \"attempts\"", unit);
	}
	if ((json_object_object_get_ex(o, "started_at", &st) &&
	     !json_object_is_type(st, json_type_string)) ||
	    (json_object_object_get_ex(o, "ended_at", &en) &&
	     !json_object_is_type(en, json_type_string)))
		return faucet_error_set(FAUCET_ECONFIG,
					"backfill marker: unit '%s' has a non-string time", unit);
	if (att == NULL && st == NULL && en == NULL)
		return 0;
	return faucet_backfill_marker_set_attempt(m, unit, (unsigned)n,
						  st ? json_object_get_string(st) : NULL,
						  en ? json_object_get_string(en) : NULL);
}

/* Read one unit's {"status": ...} object into the marker. */
static int read_outcome(faucet_backfill_marker *m, const char *unit, json_object *o)
{
	json_object *status, *error;
	const char *s;
	int rc;

	if (!json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, "status", &status) ||
	    !json_object_is_type(status, json_type_string))
		return faucet_error_set(FAUCET_ECONFIG,
					"backfill marker: unit '%s' has no \"status\" string", unit);
	s = json_object_get_string(status);
	if (strcmp(s, "done") == 0) {
		rc = faucet_backfill_marker_mark_done(m, unit);
	} else if (strcmp(s, "failed") != 0) {
		return faucet_error_set(FAUCET_ECONFIG,
					"backfill marker: unit '%s' has unknown status '%s'", unit, s);
	} else {
		error = NULL;
		if (json_object_object_get_ex(o, "error", &error) &&
		    !json_object_is_type(error, json_type_string))
			return faucet_error_set(FAUCET_ECONFIG,
						"backfill marker: unit '%s' has a non-string \"error\"",
						unit);
		rc = faucet_backfill_marker_mark_failed(m, unit,
							error ? json_object_get_string(error) : "");
	}
	return rc != 0 ? rc : read_attempt(m, unit, o);
}

int faucet_backfill_marker_from_value(faucet_backfill_marker **out, const faucet_value *v)
{
	json_object *tree, *desc, *units, *tz;
	faucet_backfill_marker *m = NULL;
	int rc;

	*out = NULL;
	rc = faucet_value__tree(v, &tree);
	if (rc != 0)
		return rc;
	if (!json_object_is_type(tree, json_type_object))
		return marker_shape_error("not a JSON object");
	if (!json_object_object_get_ex(tree, "descriptor", &desc) ||
	    !json_object_is_type(desc, json_type_string))
		return marker_shape_error("missing the \"descriptor\" string");
	rc = faucet_backfill_marker_new(&m, json_object_get_string(desc));
	if (rc != 0)
		return rc;
	if (json_object_object_get_ex(tree, "timezone", &tz) &&
	    json_object_is_type(tz, json_type_string) &&
	    (rc = faucet_backfill_marker_set_timezone(m, json_object_get_string(tz))) != 0) {
		faucet_backfill_marker_free(m);
		return rc;
	}
	if (json_object_object_get_ex(tree, "units", &units) && !json_object_is_type(units, json_type_null)) {
		if (!json_object_is_type(units, json_type_object)) {
			faucet_backfill_marker_free(m);
			return marker_shape_error("\"units\" is not an object");
		}
		json_object_object_foreach(units, unit, outcome) {
			rc = read_outcome(m, unit, outcome);
			if (rc != 0) {
				faucet_backfill_marker_free(m);
				return rc;
			}
		}
	}
	*out = m;
	return 0;
}

/* Append ,"name":"s" - nothing when s is NULL (the member is absent). */
static void put_member(faucet_buf *b, const char *name, const char *s)
{
	if (s == NULL)
		return;
	(void)faucet__buf_putc(b, ',');
	faucet__json_string(b, name);
	(void)faucet__buf_putc(b, ':');
	faucet__json_string(b, s);
}

/* The marker's text is written directly, not through a json-c tree: a
 * runner rewrites the whole marker after every unit, so building and
 * freeing a tree of every unit each time made the per-unit cost grow with
 * the range (a third of a 1,000-unit backfill's CPU).  Members in the order
 * a reader of earlier versions saw them. */

int faucet_backfill_marker_to_value(const faucet_backfill_marker *m, faucet_value **out)
{
	faucet_buf b = FAUCET_BUF_INIT;
	int rc;

	*out = NULL;
	(void)faucet__buf_puts(&b, "{\"descriptor\":");
	faucet__json_string(&b, m->descriptor);
	put_member(&b, "timezone", m->timezone);
	(void)faucet__buf_puts(&b, ",\"units\":{");
	for (size_t i = 0; i < m->count; i++) {
		const unit_outcome *u = &m->units[i];
		int failed = u->status == FAUCET_BACKFILL_FAILED;

		if (i > 0)
			(void)faucet__buf_putc(&b, ',');
		faucet__json_string(&b, u->unit);
		(void)faucet__buf_puts(&b, failed ? ":{\"status\":\"failed\"" : ":{\"status\":\"done\"");
		if (failed)
			put_member(&b, "error", u->error != NULL ? u->error : "");
		if (u->attempts > 0) {
			(void)faucet__buf_puts(&b, ",\"attempts\":");
			(void)faucet__buf_put_uint(&b, u->attempts);
		}
		put_member(&b, "started_at", u->started_at);
		put_member(&b, "ended_at", u->ended_at);
		(void)faucet__buf_putc(&b, '}');
	}
	(void)faucet__buf_puts(&b, "}}");
	rc = faucet_value__from_buf(out, &b, "backfill marker");
	faucet__buf_dispose(&b);
	return rc;
}

/* ---- plans against markers ------------------------------------------------- */

int faucet_backfill_split(const faucet_backfill_plan *p, const faucet_backfill_marker *m,
			  size_t **todo, size_t *todo_count, size_t *skipped)
{
	size_t n = faucet_backfill_plan_count(p), k = 0;
	size_t *idx = faucet__calloc(n ? n : 1, sizeof(*idx));

	*todo = NULL;
	*todo_count = 0;
	*skipped = 0;
	if (idx == NULL)
		return FAUCET_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const char *id = faucet_backfill_plan_unit(p, i)->id;
		if (m != NULL && faucet_backfill_marker_status(m, id, NULL) == FAUCET_BACKFILL_DONE)
			(*skipped)++;
		else
			idx[k++] = i;
	}
	*todo = idx;
	*todo_count = k;
	return 0;
}

/* ---- stored markers -------------------------------------------------------- */

int faucet_backfill_marker_load(faucet_store *s, const char *key, faucet_backfill_marker **out)
{
	faucet_value *v = NULL;
	int rc;

	*out = NULL;
	rc = faucet_store_get(s, key, &v);
	if (rc != 0)
		return rc;
	if (v == NULL)
		return 0;
	rc = faucet_backfill_marker_from_value(out, v);
	faucet_value_free(v);
	if (rc != 0)
		return faucet__error_wrap("%s", key);
	return 0;
}

int faucet_bf__marker_load_cached(faucet_store *s, const char *key,
				  faucet_bf__marker_cache *cache,
				  const faucet_backfill_marker **now)
{
	faucet_backfill_marker *m = NULL;
	faucet_value *v = NULL;
	int rc;

	*now = NULL;
	if ((rc = faucet_store_get(s, key, &v)) != 0)
		return rc;
	if (v == NULL) {
		faucet_bf__marker_cache_dispose(cache);
		return 0;
	}
	if (cache->value != NULL && cache->parsed != NULL &&
	    faucet_value_len(v) == faucet_value_len(cache->value) &&
	    memcmp(faucet_value_json(v), faucet_value_json(cache->value), faucet_value_len(v)) == 0) {
		faucet_value_free(v);
		*now = cache->parsed;
		return 0;
	}
	if ((rc = faucet_backfill_marker_from_value(&m, v)) != 0) {
		faucet_value_free(v);
		return faucet__error_wrap("%s", key);
	}
	faucet_bf__marker_cache_dispose(cache);
	cache->value = v;
	cache->parsed = m;
	*now = m;
	return 0;
}

/* Apply one outcome to the marker read from the store.  A unit some runner
 * already finished stays done: a later failure of the same unit (a runner
 * whose lease lapsed) must not hide data that was written. */
static int apply_outcome(faucet_backfill_marker *m, const faucet_backfill_outcome *o)
{
	faucet_backfill_unit_info prev;
	int rc;

	(void)faucet_backfill_marker_unit_info(m, o->unit, &prev);
	if (o->error != NULL && prev.status == FAUCET_BACKFILL_DONE)
		return 0;
	rc = o->error == NULL ? faucet_backfill_marker_mark_done(m, o->unit)
			      : faucet_backfill_marker_mark_failed(m, o->unit, o->error);
	/* The count stops at the limit rather than fail the record. */
	if (rc == 0 && (o->started_at != NULL || o->ended_at != NULL))
		rc = faucet_backfill_marker_set_attempt(
			m, o->unit, prev.attempts < MARKER_ATTEMPTS_MAX ? prev.attempts + 1 : prev.attempts,
			o->started_at, o->ended_at);
	if (rc == 0 && o->timezone != NULL && m->timezone == NULL)
		rc = faucet_backfill_marker_set_timezone(m, o->timezone);
	return rc;
}

/* One read-merge-compare-and-put round; *written says whether it landed.
 * With a cache holding our last write, that is the expected value and its
 * parse the document merged into (taken from the cache either way). */
static int record_once(faucet_store *s, const char *key, const faucet_backfill_outcome *o,
		       faucet_bf__marker_cache *cache, faucet_backfill_marker **merged,
		       faucet_value **wrote, int *written)
{
	faucet_value *current = NULL, *next = NULL;
	faucet_backfill_marker *m = NULL;
	int rc = 0;

	*written = 0;
	*merged = NULL;
	*wrote = NULL;
	if (cache != NULL && cache->value != NULL && cache->parsed != NULL) {
		current = cache->value;
		m = cache->parsed;
		cache->value = NULL;
		cache->parsed = NULL;
	} else {
		if (cache != NULL)
			faucet_bf__marker_cache_dispose(cache);
		if ((rc = faucet_store_get(s, key, &current)) != 0)
			return rc;
		if (current == NULL)
			rc = faucet_backfill_marker_new(&m, o->descriptor);
		else if ((rc = faucet_backfill_marker_from_value(&m, current)) != 0)
			rc = faucet__error_wrap("%s", key);
		else if (strcmp(m->descriptor, o->descriptor) != 0)
			rc = faucet_error_set(FAUCET_ECONFIG,
					      "backfill marker %s belongs to another range ('%s')",
					      key, m->descriptor);
	}
	if (rc == 0)
		rc = apply_outcome(m, o);
	if (rc == 0)
		rc = faucet_backfill_marker_to_value(m, &next);
	if (rc == 0)
		rc = faucet_store_compare_and_put(s, key, current, next, written);
	faucet_value_free(current);
	if (rc == 0 && *written) {
		*merged = m;
		*wrote = next;
	} else {
		faucet_backfill_marker_free(m);
		faucet_value_free(next);
	}
	return rc;
}

static int record_outcome(faucet_store *s, const char *key, const faucet_backfill_outcome *o,
			  faucet_bf__marker_cache *cache, faucet_backfill_marker **current)
{
	if (current != NULL)
		*current = NULL;
	for (int attempt = 0; attempt < RECORD_MAX_ATTEMPTS; attempt++) {
		faucet_backfill_marker *merged = NULL;
		faucet_value *wrote = NULL;
		int written = 0;
		int rc = record_once(s, key, o, cache, &merged, &wrote, &written);

		if (rc != 0)
			return rc;
		if (written) {
			if (cache != NULL) {
				cache->value = wrote;
				cache->parsed = merged;
			} else {
				faucet_value_free(wrote);
				if (current != NULL)
					*current = merged;
				else
					faucet_backfill_marker_free(merged);
			}
			return 0;
		}
	}
	return faucet_error_set(FAUCET_ECONTENTION,
				"backfill marker %s: gave up after %d conflicting updates", key,
				RECORD_MAX_ATTEMPTS);
}

int faucet_backfill_marker_record_outcome(faucet_store *s, const char *key,
					  const faucet_backfill_outcome *o,
					  faucet_backfill_marker **current)
{
	return record_outcome(s, key, o, NULL, current);
}

int faucet_bf__marker_record_cached(faucet_store *s, const char *key,
				    const faucet_backfill_outcome *o, faucet_bf__marker_cache *cache)
{
	return record_outcome(s, key, o, cache, NULL);
}

void faucet_bf__marker_cache_dispose(faucet_bf__marker_cache *cache)
{
	faucet_value_free(cache->value);
	faucet_backfill_marker_free(cache->parsed);
	cache->value = NULL;
	cache->parsed = NULL;
}

int faucet_backfill_marker_record(faucet_store *s, const char *key, const char *descriptor,
				  const char *unit, const char *error,
				  faucet_backfill_marker **current)
{
	faucet_backfill_outcome o;

	memset(&o, 0, sizeof(o));
	o.descriptor = descriptor;
	o.unit = unit;
	o.error = error;
	return faucet_backfill_marker_record_outcome(s, key, &o, current);
}
