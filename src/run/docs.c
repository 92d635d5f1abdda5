/*
 * docs.c - the run bookkeeping documents: parsing and writing the lease,
 * the status history, the rollback index and a run's rollback marker.
 *
 * Reading goes through a private json-c tree of the stored text (never the
 * value's shared tree, which other threads may be reading: serialising a
 * json-c node writes into it).  A document that is valid JSON but not the
 * shape we write - someone else's data under a bookkeeping key - is refused
 * with FAUCET_ERROR naming the key, so that nothing is written over it.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/time.h>

#include "run/run_internal.h"
#include "values/value_internal.h"
#include "values/json_check.h"

/* ---- text helpers ------------------------------------------------------------ */

/* Ids are made from the wall clock in milliseconds, never going backwards
 * within a process: two runs begun in the same millisecond (or across a
 * clock step) still sort in the order they began. */
int faucet_run__new_id(char *out, size_t size)
{
	static _Atomic long long last_ms;
	struct timeval tv;
	struct tm tm;
	time_t tt;
	char rnd[7];
	long long ms, prev;
	int rc;

	if (size < FAUCET_RUN_ID_LEN + 1)
		return faucet_error_set(FAUCET_EINVALID, "run id buffer too small");
	(void)gettimeofday(&tv, NULL);
	ms = (long long)tv.tv_sec * 1000 + tv.tv_usec / 1000;
	prev = atomic_load(&last_ms);
	do {
		if (ms <= prev)
			ms = prev + 1;
	} while (!atomic_compare_exchange_weak(&last_ms, &prev, ms));
	tt = (time_t)(ms / 1000);
	if (gmtime_r(&tt, &tm) == NULL)
		return faucet_error_set(FAUCET_ERROR, "cannot read the clock");
	rc = faucet__random_hex(rnd, 3);
	if (rc != 0)
		return rc;
	(void)snprintf(out, size, "%04d%02d%02dT%02d%02d%02d.%03dZ-%.6s", tm.tm_year + 1900,
		       tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		       (int)(ms % 1000), rnd);
	return 0;
}

int faucet_run__valid_id(const char *id)
{
	static const char shape[] = "99999999T999999.999Z-xxxxxx";

	if (id == NULL || strlen(id) != FAUCET_RUN_ID_LEN)
		return 0;
	for (size_t i = 0; i < FAUCET_RUN_ID_LEN; i++) {
		char c = id[i], s = shape[i];

		if (s == '9' && (c < '0' || c > '9'))
			return 0;
		if (s == 'x' && !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return 0;
		if (s != '9' && s != 'x' && c != s)
			return 0;
	}
	return 1;
}

char *faucet_run__key(const char *scope, const char *suffix)
{
	return faucet__sprintf("%s::%s", scope, suffix);
}

char *faucet_run__marker_key(const char *scope, const char *run)
{
	return faucet__sprintf("%s::__rollback__::%s", scope, run);
}

char *faucet_run__marker_part_key(const char *marker_key, size_t n)
{
	return faucet__sprintf("%s::%zu", marker_key, n);
}

/* ---- private trees ------------------------------------------------------------ */

static int private_tree(const faucet_value *v, json_object **out)
{
	/* As deep as any value may be: a marker embeds stored values. */
	struct json_tokener *tok = json_tokener_new_ex(FAUCET_JSON_MAX_DEPTH);
	enum json_tokener_error err;

	*out = NULL;
	if (tok == NULL)
		return faucet_error_set(FAUCET_ENOMEM, "out of memory parsing a run document");
	/* The terminating NUL is passed too: it ends a top-level scalar, which
	 * json-c otherwise waits on for more input. */
	*out = json_tokener_parse_ex(tok, faucet_value_json(v), (int)faucet_value_len(v) + 1);
	err = json_tokener_get_error(tok);
	json_tokener_free(tok);
	/* The text passed the value checker, so only memory can fail here; a
	 * JSON null parses to NULL and is never a run document either way. */
	if (*out == NULL && err != json_tokener_success)
		return faucet_error_set(FAUCET_ENOMEM, "cannot parse a run document: %s",
					json_tokener_error_desc(err));
	return 0;
}

static int foreign(const char *key, const char *what)
{
	return faucet_error_set(FAUCET_ERROR,
				"%s holds something that is not a faucet %s (foreign JSON); "
				"refusing to use or overwrite it",
				key, what);
}

static int node_value(json_object *node, faucet_value **out)
{
	size_t len = 0;
	const char *text;

	*out = NULL;
	if (node == NULL)
		return 0;
	text = json_object_to_json_string_length(
		node, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
	if (text == NULL)
		return faucet_error_set(FAUCET_ENOMEM, "out of memory reading a run document");
	return faucet_value_parse(out, text, len);
}

/* The "version": 1 member every document but the lease carries. */
static int version_one(json_object *root)
{
	json_object *v;

	return json_object_is_type(root, json_type_object) &&
	       json_object_object_get_ex(root, "version", &v) &&
	       json_object_is_type(v, json_type_int) && json_object_get_int64(v) == 1;
}

/* A {"version": 1, "runs": [...]} document (the status history and the
 * rollback index both have this shape): its tree in *root (to be put by the
 * caller, also on failure) and the array in *runs.  -1 when it has another
 * shape; a parse or memory error is returned as such. */
static int runs_document(const faucet_value *v, json_object **root, json_object **runs)
{
	int rc = private_tree(v, root);

	if (rc != 0)
		return rc;
	if (!version_one(*root) || !json_object_object_get_ex(*root, "runs", runs) ||
	    !json_object_is_type(*runs, json_type_array))
		return -1;
	return 0;
}

/* ---- rollback marker ---------------------------------------------------------- */

run_image *faucet_run__marker_find(run_marker *m, const char *key)
{
	int found = 0;
	size_t i = faucet__find_sorted_near(m->items, m->count, sizeof(run_image), key, &m->near,
					    &found);

	return found ? &m->items[i] : NULL;
}

static int compare_images(const void *a, const void *b)
{
	return strcmp(((const run_image *)a)->key, ((const run_image *)b)->key);
}

int faucet_run__marker_add_many(run_marker *m, const char *const *keys,
			 faucet_value *const *befores, size_t n, int *added)
{
	run_image *fresh, *items;
	size_t k = 0, u = 0;

	*added = 0;
	if ((fresh = faucet__calloc(n ? n : 1, sizeof(*fresh))) == NULL)
		return FAUCET_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (faucet_run__marker_find(m, keys[i]) == NULL) {
			fresh[k].key = (char *)keys[i];
			fresh[k++].before = befores[i];
		}
	}
	/* Sorted and merged in one pass (see the header). */
	if (!faucet__names_sorted(fresh, k, sizeof(*fresh)))
		qsort(fresh, k, sizeof(*fresh), compare_images);
	for (size_t i = 0; i < k; i++) {
		if (u == 0 || strcmp(fresh[u - 1].key, fresh[i].key) != 0)
			fresh[u++] = fresh[i];
	}
	k = u;
	items = k ? faucet__reserve(m->items, &m->cap, m->count + k, sizeof(run_image), 8)
		  : m->items;
	if (k && items == NULL) {
		free(fresh);
		return FAUCET_ENOMEM;
	}
	m->items = items;
	for (size_t i = 0; i < k; i++) {
		if ((fresh[i].key = faucet__strdup(fresh[i].key)) == NULL) {
			for (size_t j = 0; j < i; j++)
				free(fresh[j].key);
			free(fresh);
			return FAUCET_ENOMEM;
		}
		fresh[i].before = faucet_value_ref(fresh[i].before);
		fresh[i].after = NULL;
		fresh[i].after_known = 0;
	}
	{
		size_t i = m->count, j = k, w = m->count + k;

		while (j > 0) {
			if (i > 0 && strcmp(items[i - 1].key, fresh[j - 1].key) > 0)
				items[--w] = items[--i];
			else
				items[--w] = fresh[--j];
		}
	}
	m->count += k;
	*added = k > 0;
	free(fresh);
	return 0;
}

int faucet_run__marker_add(run_marker *m, const char *key, const faucet_value *before, int *added)
{
	int found = 0;
	size_t i = m->count ? faucet__find_sorted(m->items, m->count, sizeof(run_image), key, &found)
			    : 0;
	run_image *items;
	char *k;

	*added = 0;
	if (found)
		return 0;
	items = faucet__reserve(m->items, &m->cap, m->count + 1, sizeof(run_image), 8);
	if (items == NULL)
		return FAUCET_ENOMEM;
	m->items = items;
	k = faucet__strdup(key);
	if (k == NULL)
		return FAUCET_ENOMEM;
	memmove(&items[i + 1], &items[i], (m->count - i) * sizeof(run_image));
	items[i].key = k;
	items[i].before = faucet_value_ref((faucet_value *)before);
	items[i].after = NULL;
	items[i].after_known = 0;
	m->count++;
	*added = 1;
	return 0;
}

/* One images object ("before" or "after", or their _text forms, whose
 * members are JSON texts) into the marker. */
static int read_images(run_marker *m, json_object *images, int after, int as_text)
{
	json_object_object_foreach(images, name, node) {
		faucet_value *v = NULL;
		run_image *img;
		int added, rc;

		if (as_text) {
			if (!json_object_is_type(node, json_type_string))
				return -1;
			if ((rc = faucet_value_parse(&v, json_object_get_string(node),
						     (size_t)json_object_get_string_len(node))) != 0)
				return rc == FAUCET_ENOMEM ? rc : -1;
		} else if (node != NULL && (rc = node_value(node, &v)) != 0) {
			return rc;
		}
		if (!after) {
			rc = faucet_run__marker_add(m, name, v, &added);
			faucet_value_free(v);
			if (rc != 0)
				return rc;
			continue;
		}
		img = faucet_run__marker_find(m, name);
		if (img == NULL) {
			/* An after-image without a before-image: the document was not
			 * written by us.  Treat it as foreign. */
			faucet_value_free(v);
			return -1;
		}
		faucet_value_free(img->after);
		img->after = v;
		img->after_known = 1;
	}
	return 0;
}

int faucet_run__marker_parse(const faucet_value *v, const char *key, const char *run, run_marker *m)
{
	json_object *root = NULL, *before, *after;
	char *id = NULL;
	int rc = 0;

	memset(m, 0, sizeof(*m));
	if (v == NULL) {
		m->run = faucet__strdup(run ? run : "");
		return m->run ? 0 : FAUCET_ENOMEM;
	}
	if ((rc = private_tree(v, &root)) != 0)
		return rc;
	/* -1 is "foreign"; out of memory copying the id stays itself. */
	rc = version_one(root) ? faucet_value__member_string(root, "run", 0, &id) : -1;
	if (rc == 0 && (!json_object_object_get_ex(root, "before", &before) ||
			!json_object_is_type(before, json_type_object)))
		rc = -1;
	if (rc != 0)
		goto done;
	m->run = id;
	id = NULL;
	rc = read_images(m, before, 0, 0);
	if (rc == 0 && json_object_object_get_ex(root, "before_text", &before) && before != NULL)
		rc = json_object_is_type(before, json_type_object) ? read_images(m, before, 0, 1) : -1;
	if (rc == 0 && json_object_object_get_ex(root, "after", &after) && after != NULL) {
		if (!json_object_is_type(after, json_type_object))
			rc = -1;
		else
			rc = read_images(m, after, 1, 0);
		m->has_after = 1;
	}
	if (rc == 0 && m->has_after && json_object_object_get_ex(root, "after_text", &after) &&
	    after != NULL)
		rc = json_object_is_type(after, json_type_object) ? read_images(m, after, 1, 1) : -1;
done:
	free(id);
	json_object_put(root);
	if (rc != 0) {
		faucet_run__marker_dispose(m);
		return rc == -1 ? foreign(key, "rollback marker") : rc;
	}
	return 0;
}

/* How deeply a value's containers nest (0 for a scalar). */
static size_t json_depth(const char *p, size_t len)
{
	size_t depth = 0, max = 0;
	int in_string = 0;

	for (size_t i = 0; i < len; i++) {
		char c = p[i];

		if (in_string) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_string = 0;
		} else if (c == '"') {
			in_string = 1;
		} else if (c == '[' || c == '{') {
			if (++depth > max)
				max = depth;
		} else if (c == ']' || c == '}') {
			depth--;
		}
	}
	return max;
}

/* A marker nests each image two levels down ({"before": {key: image}}), so
 * an image as deep as a value may be (json-c's limit) would make the marker
 * too deep to store.  Such an image is kept as its JSON text instead, in
 * "before_text" / "after_text"; every other image is embedded as is. */
static int too_deep(const faucet_value *v)
{
	/* Each level takes an opening and a closing bracket, so a short
	 * value is not scanned: depth <= len / 2. */
	return v != NULL && faucet_value_len(v) / 2 + 2 > FAUCET_JSON_MAX_DEPTH &&
	       json_depth(faucet_value_json(v), faucet_value_len(v)) + 2 > FAUCET_JSON_MAX_DEPTH;
}

static void images_json(faucet_buf *b, const run_marker *m, int after, int as_text)
{
	size_t n = 0;

	(void)faucet__buf_putc(b, '{');
	for (size_t i = 0; i < m->count; i++) {
		const faucet_value *v = after ? m->items[i].after : m->items[i].before;

		if (after && !m->items[i].after_known)
			continue; /* unknown: no member (a null member is "absent") */
		if (too_deep(v) != as_text)
			continue;
		if (n++ > 0)
			(void)faucet__buf_putc(b, ',');
		faucet__json_string(b, m->items[i].key);
		(void)faucet__buf_putc(b, ':');
		if (as_text)
			faucet__json_string(b, faucet_value_json(v));
		else
			(void)faucet__buf_puts(b, v ? faucet_value_json(v) : "null");
	}
	(void)faucet__buf_putc(b, '}');
}

static int any_too_deep(const run_marker *m, int after)
{
	for (size_t i = 0; i < m->count; i++) {
		if (after && !m->items[i].after_known)
			continue;
		if (too_deep(after ? m->items[i].after : m->items[i].before))
			return 1;
	}
	return 0;
}

int faucet_run__marker_any_after(const run_marker *m)
{
	for (size_t i = 0; i < m->count; i++) {
		if (m->items[i].after_known)
			return 1;
	}
	return m->has_after;
}

int faucet_run__marker_value(const run_marker *m, faucet_value **out)
{
	faucet_buf b = FAUCET_BUF_INIT;
	int rc;

	(void)faucet__buf_puts(&b, "{\"version\":1,\"run\":");
	faucet__json_string(&b, m->run);
	(void)faucet__buf_puts(&b, ",\"before\":");
	images_json(&b, m, 0, 0);
	if (any_too_deep(m, 0)) {
		(void)faucet__buf_puts(&b, ",\"before_text\":");
		images_json(&b, m, 0, 1);
	}
	if (faucet_run__marker_any_after(m)) {
		(void)faucet__buf_puts(&b, ",\"after\":");
		images_json(&b, m, 1, 0);
		if (any_too_deep(m, 1)) {
			(void)faucet__buf_puts(&b, ",\"after_text\":");
			images_json(&b, m, 1, 1);
		}
	}
	(void)faucet__buf_putc(&b, '}');
	if (b.failed) {
		faucet__buf_dispose(&b);
		return FAUCET_ENOMEM;
	}
	rc = faucet_value__from_buf(out, &b, "rollback marker");
	faucet__buf_dispose(&b);
	return rc;
}

/* Move part's images into m (its items taken; part left empty). */
static int take_images(run_marker *m, run_marker *part)
{
	run_image *items;

	if (part->count == 0)
		return 0;
	items = faucet__reserve(m->items, &m->cap, m->count + part->count, sizeof(run_image), 8);
	if (items == NULL)
		return FAUCET_ENOMEM;
	m->items = items;
	memcpy(items + m->count, part->items, part->count * sizeof(run_image));
	m->count += part->count;
	part->count = 0;
	return 0;
}

/* After the parts were appended: sorted again, and a key in two documents
 * (which no run writes) refused as not faucet's. */
static int sort_images(run_marker *m, const char *key)
{
	qsort(m->items, m->count, sizeof(run_image), compare_images);
	m->near = 0;
	for (size_t i = 1; i < m->count; i++)
		if (strcmp(m->items[i - 1].key, m->items[i].key) == 0)
			return faucet_error_set(FAUCET_ERROR,
						"%s: %s has images in two parts of the marker; "
						"it is not one faucet wrote",
						key, m->items[i].key);
	return 0;
}

int faucet_run__marker_load(faucet_store *s, const char *key, const char *run, run_marker *m,
		     int *exists, size_t *parts)
{
	faucet_value *v = NULL;
	size_t n = 0;
	int rc;

	*exists = 0;
	memset(m, 0, sizeof(*m));
	if ((rc = faucet_store_get(s, key, &v)) != 0 || v == NULL)
		goto out;
	if ((rc = faucet_run__marker_parse(v, key, run, m)) != 0)
		goto out;
	for (;;) {
		char *pk = faucet_run__marker_part_key(key, n + 1);
		faucet_value *pv = NULL;
		run_marker part;

		if (pk == NULL) {
			rc = FAUCET_ENOMEM;
			break;
		}
		rc = faucet_store_get(s, pk, &pv);
		if (rc == 0 && pv != NULL && (rc = faucet_run__marker_parse(pv, pk, run, &part)) == 0) {
			rc = take_images(m, &part);
			faucet_run__marker_dispose(&part);
			n++;
		}
		faucet_value_free(pv);
		free(pk);
		if (rc != 0 || pv == NULL)
			break;
	}
	if (rc == 0 && n > 0)
		rc = sort_images(m, key);
	if (rc != 0)
		faucet_run__marker_dispose(m);
	*exists = rc == 0;
out:
	if (parts != NULL)
		*parts = n;
	faucet_value_free(v);
	return rc;
}

int faucet_run__marker_delete(faucet_store *s, const char *key)
{
	int rc = faucet_store_delete(s, key);

	/* The marker first: a crash part-way leaves parts that nothing reads
	 * (a marker is only read through its main document), never a marker
	 * that reads as fewer keys than its run changed. */
	return rc == 0 ? faucet_run__marker_delete_parts(s, key) : rc;
}

int faucet_run__marker_delete_parts(faucet_store *s, const char *key)
{
	int rc = 0;

	for (size_t n = 1; rc == 0; n++) {
		char *pk = faucet_run__marker_part_key(key, n);
		faucet_value *pv = NULL;

		if (pk == NULL)
			return FAUCET_ENOMEM;
		rc = faucet_store_get(s, pk, &pv);
		if (rc == 0 && pv != NULL)
			rc = faucet_store_delete(s, pk);
		free(pk);
		if (pv == NULL)
			break;
		faucet_value_free(pv);
	}
	return rc;
}

void faucet_run__marker_dispose(run_marker *m)
{
	for (size_t i = 0; i < m->count; i++) {
		free(m->items[i].key);
		faucet_value_free(m->items[i].before);
		faucet_value_free(m->items[i].after);
	}
	free(m->items);
	free(m->run);
	memset(m, 0, sizeof(*m));
}

/* ---- status ------------------------------------------------------------------ */

void faucet_run__entry_dispose(run_entry *e)
{
	free(e->run);
	free(e->started_at);
	free(e->ended_at);
	free(e->outcome);
	free(e->message);
	free(e->undoes);
	free(e->by);
	free(e->lease);
	faucet_strarray_dispose(&e->keys);
	memset(e, 0, sizeof(*e));
}

void faucet_run__status_dispose(run_status *st)
{
	for (size_t i = 0; i < st->count; i++)
		faucet_run__entry_dispose(&st->items[i]);
	free(st->items);
	memset(st, 0, sizeof(*st));
}

static int read_entry(json_object *o, run_entry *e)
{
	json_object *m, *keys;
	int rc;

	memset(e, 0, sizeof(*e));
	if (!json_object_is_type(o, json_type_object))
		return -1;
	if ((rc = faucet_value__member_string(o, "run", 0, &e->run)) != 0 ||
	    (rc = faucet_value__member_string(o, "started_at", 1, &e->started_at)) != 0 ||
	    (rc = faucet_value__member_string(o, "ended_at", 1, &e->ended_at)) != 0 ||
	    (rc = faucet_value__member_string(o, "outcome", 0, &e->outcome)) != 0 ||
	    (rc = faucet_value__member_string(o, "message", 1, &e->message)) != 0 ||
	    (rc = faucet_value__member_string(o, "undoes", 1, &e->undoes)) != 0 ||
	    (rc = faucet_value__member_string(o, "lease", 1, &e->lease)) != 0)
		return rc;
	if (json_object_object_get_ex(o, "exit_status", &m) && m != NULL) {
		if (!json_object_is_type(m, json_type_int))
			return -1;
		e->has_exit = 1;
		e->exit_status = (long long)json_object_get_int64(m);
	}
	if (json_object_object_get_ex(o, "keys", &keys) && keys != NULL) {
		if (!json_object_is_type(keys, json_type_array))
			return -1;
		for (size_t i = 0; i < json_object_array_length(keys); i++) {
			json_object *k = json_object_array_get_idx(keys, i);
			if (!json_object_is_type(k, json_type_string))
				return -1;
			if (faucet__strarray_push(&e->keys, json_object_get_string(k)) != 0)
				return FAUCET_ENOMEM;
		}
	}
	e->keys_total = e->keys.count;
	if (json_object_object_get_ex(o, "keys_total", &m) && m != NULL) {
		int64_t total = json_object_get_int64(m);

		if (!json_object_is_type(m, json_type_int) || total < (int64_t)e->keys.count)
			return -1;
		e->keys_total = (size_t)total;
	}
	if (json_object_object_get_ex(o, "by", &m) && m != NULL) {
		const char *t = json_object_to_json_string_ext(
			m, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
		if (!json_object_is_type(m, json_type_object))
			return -1;
		e->by = t ? faucet__strdup(t) : NULL;
		if (e->by == NULL)
			return FAUCET_ENOMEM;
	}
	return 0;
}

/* The "{host}:{pid}:" holder id of the process in an entry's "by", or
 * NULL (no "by", or one without both). */
static char *by_holder(const char *by)
{
	json_object *root, *host, *pid;
	char *out = NULL;

	if (by == NULL || (root = json_tokener_parse(by)) == NULL)
		return NULL;
	if (json_object_object_get_ex(root, "host", &host) &&
	    json_object_is_type(host, json_type_string) &&
	    json_object_object_get_ex(root, "pid", &pid) && json_object_is_type(pid, json_type_int))
		out = faucet__sprintf("%s:%lld:", json_object_get_string(host),
				      (long long)json_object_get_int64(pid));
	json_object_put(root);
	return out;
}

int faucet_run__entry_gone(faucet_store *s, const run_entry *e, int *gone)
{
	faucet_value *v = NULL;
	faucet_lease l;
	char *holder;
	int rc;

	*gone = 0;
	if (strcmp(e->outcome, "running") != 0)
		return 0;
	if (e->lease == NULL) {
		/* A run that took no lease (a CLI write of one key or a joined
		 * few): its process tells, when it is of this host.  One of
		 * another host, or whose pid was reused, would read "running"
		 * for ever; such a write lasts seconds, so once it is older than
		 * RUN_UNLEASED_MAX_S (far beyond any clock skew) it is gone. */
		int64_t started = faucet__utc_parse(e->started_at);

		holder = by_holder(e->by);
		*gone = (holder != NULL && faucet__holder_dead(holder)) ||
			(started >= 0 && (int64_t)time(NULL) - started > RUN_UNLEASED_MAX_S);
		free(holder);
		return 0;
	}
	if ((rc = faucet_store_get(s, e->lease, &v)) != 0)
		return rc;
	if (v == NULL) {
		*gone = 1; /* released or broken without the run's end */
		return 0;
	}
	if (faucet_lease_parse(v, e->lease, &l) != 0) {
		faucet_value_free(v);
		faucet_error_clear();
		return 0; /* not a lease: doctor says so; nothing to tell here */
	}
	*gone = l.run == NULL || strcmp(l.run, e->run) != 0 || l.expires_at <= (int64_t)time(NULL) ||
		faucet__holder_dead(l.holder);
	faucet_lease_dispose(&l);
	faucet_value_free(v);
	return 0;
}

int faucet_run__status_parse(const faucet_value *v, const char *key, run_status *st)
{
	json_object *root = NULL, *runs;
	int rc = 0;

	memset(st, 0, sizeof(*st));
	if (v == NULL)
		return 0;
	if ((rc = runs_document(v, &root, &runs)) != 0)
		goto done;
	st->items = faucet__calloc(json_object_array_length(runs) + 1, sizeof(run_entry));
	if (st->items == NULL) {
		rc = FAUCET_ENOMEM;
		goto done;
	}
	st->cap = json_object_array_length(runs) + 1;
	for (size_t i = 0; rc == 0 && i < json_object_array_length(runs); i++) {
		rc = read_entry(json_object_array_get_idx(runs, i), &st->items[i]);
		st->count = i + 1;
	}
done:
	json_object_put(root);
	if (rc != 0) {
		faucet_run__status_dispose(st);
		return rc == -1 ? foreign(key, "run status document") : rc;
	}
	return 0;
}

int faucet_run__entry_set_keys(run_entry *e, const faucet_strarray *keys, size_t total)
{
	size_t n = keys ? keys->count : 0;

	faucet_strarray_dispose(&e->keys);
	for (size_t i = 0; i < n && i < RUN_STATUS_KEYS; i++) {
		if (faucet__strarray_push(&e->keys, keys->strings[i]) != 0)
			return FAUCET_ENOMEM;
	}
	e->keys_total = total > n ? total : n;
	return 0;
}

void faucet_run__entry_json(faucet_buf *b, const run_entry *e)
{
	(void)faucet__buf_puts(b, "{\"run\":");
	faucet__json_string(b, e->run);
	(void)faucet__buf_puts(b, ",\"started_at\":");
	faucet__json_string(b, e->started_at);
	(void)faucet__buf_puts(b, ",\"ended_at\":");
	faucet__json_string(b, e->ended_at);
	(void)faucet__buf_puts(b, ",\"outcome\":");
	faucet__json_string(b, e->outcome);
	if (e->has_exit)
		(void)faucet__buf_printf(b, ",\"exit_status\":%lld", e->exit_status);
	else
		(void)faucet__buf_puts(b, ",\"exit_status\":null");
	(void)faucet__buf_puts(b, ",\"message\":");
	faucet__json_string(b, e->message);
	(void)faucet__buf_puts(b, ",\"keys\":[");
	for (size_t i = 0; i < e->keys.count; i++) {
		if (i > 0)
			(void)faucet__buf_putc(b, ',');
		faucet__json_string(b, e->keys.strings[i]);
	}
	(void)faucet__buf_putc(b, ']');
	if (e->keys_total > e->keys.count)
		(void)faucet__buf_printf(b, ",\"keys_total\":%zu", e->keys_total);
	(void)faucet__buf_puts(b, ",\"undoes\":");
	faucet__json_string(b, e->undoes);
	if (e->lease != NULL) {
		(void)faucet__buf_puts(b, ",\"lease\":");
		faucet__json_string(b, e->lease);
	}
	(void)faucet__buf_puts(b, ",\"by\":");
	(void)faucet__buf_puts(b, e->by ? e->by : "null");
	(void)faucet__buf_putc(b, '}');
}

int faucet_run__status_value(const run_status *st, faucet_value **out)
{
	faucet_buf b = FAUCET_BUF_INIT;
	int rc;

	(void)faucet__buf_puts(&b, "{\"version\":1,\"runs\":[");
	for (size_t i = 0; i < st->count; i++) {
		if (i > 0)
			(void)faucet__buf_putc(&b, ',');
		faucet_run__entry_json(&b, &st->items[i]);
	}
	(void)faucet__buf_puts(&b, "]}");
	if (b.failed) {
		faucet__buf_dispose(&b);
		return FAUCET_ENOMEM;
	}
	rc = faucet_value_parse(out, b.ptr, b.len);
	faucet__buf_dispose(&b);
	return rc;
}

run_entry *faucet_run__status_find(const run_status *st, const char *run)
{
	for (size_t i = 0; i < st->count; i++) {
		if (strcmp(st->items[i].run, run) == 0)
			return &st->items[i];
	}
	return NULL;
}

int faucet_run__status_push(run_status *st, run_entry *e)
{
	run_entry *items = faucet__reserve(st->items, &st->cap, st->count + 1, sizeof(run_entry), 8);

	if (items == NULL)
		return FAUCET_ENOMEM;
	st->items = items;
	memmove(&items[1], &items[0], st->count * sizeof(run_entry));
	items[0] = *e;
	memset(e, 0, sizeof(*e));
	st->count++;
	while (st->count > FAUCET_RUN_STATUS_MAX)
		faucet_run__entry_dispose(&st->items[--st->count]);
	return 0;
}

/* ---- rollback index ------------------------------------------------------------ */

int faucet_run__index_parse(const faucet_value *v, const char *key, faucet_strarray *runs)
{
	json_object *root = NULL, *list;
	int rc = 0;

	memset(runs, 0, sizeof(*runs));
	if (v == NULL)
		return 0;
	if ((rc = runs_document(v, &root, &list)) != 0)
		goto done;
	for (size_t i = 0; rc == 0 && i < json_object_array_length(list); i++) {
		json_object *id = json_object_array_get_idx(list, i);
		if (!json_object_is_type(id, json_type_string))
			rc = -1;
		else
			rc = faucet__strarray_push(runs, json_object_get_string(id));
	}
done:
	json_object_put(root);
	if (rc != 0) {
		faucet_strarray_dispose(runs);
		return rc == -1 ? foreign(key, "rollback index") : rc;
	}
	return 0;
}

int faucet_run__index_value(const faucet_strarray *runs, faucet_value **out)
{
	faucet_buf b = FAUCET_BUF_INIT;
	int rc;

	(void)faucet__buf_puts(&b, "{\"version\":1,\"runs\":[");
	for (size_t i = 0; i < runs->count; i++) {
		if (i > 0)
			(void)faucet__buf_putc(&b, ',');
		faucet__json_string(&b, runs->strings[i]);
	}
	(void)faucet__buf_puts(&b, "]}");
	if (b.failed) {
		faucet__buf_dispose(&b);
		return FAUCET_ENOMEM;
	}
	rc = faucet_value_parse(out, b.ptr, b.len);
	faucet__buf_dispose(&b);
	return rc;
}
