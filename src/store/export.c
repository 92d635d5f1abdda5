/*
 * export.c - export / import documents: one pipeline's namespace as a
 * portable JSON snapshot, and writing such a snapshot into a store.
 *
 *   {"version":1,"pipeline":"orders","exported_at":"...","keys":{"orders::a":{...}}}
 *
 * Two decisions shape this file:
 *   - Writing is a hot path (an export of 100,000 keys is benchmarked
 *     against raw disk reads), so faucet_export_to_json() does not build a
 *     json-c tree: it appends each value's stored compact text straight into
 *     one buffer.  Keys and the pipeline are key characters and never need
 *     escaping; they still go through a check so an unvalidated document
 *     cannot produce broken JSON.
 *   - Reading parses the whole document once through the value layer, so the
 *     fidelity rules (exact integers, no duplicate members) hold for every
 *     bookmark in it.  Each key's value is then serialised and parsed again
 *     into its own faucet_value: json-c's reference counts are not atomic,
 *     so values that may travel to other threads must not share a subtree of
 *     the document.
 * Entries are kept in one array sorted by strcmp, the order the document
 * and the import report list them in.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json_object_iterator.h>

#include "internal.h"
#include "value_internal.h"
#include <faucet/keys.h>

typedef struct {
	char *key; /* first: faucet__find_sorted looks it up */
	faucet_value *value;
} export_entry;

struct faucet_export {
	unsigned version;
	char *pipeline;
	char *exported_at;
	export_entry *entries;
	size_t count;
	size_t cap;
};

int faucet_export_new(faucet_export **out, const char *pipeline)
{
	faucet_export *e;

	if (out == NULL || pipeline == NULL) {
		if (out != NULL)
			*out = NULL;
		return faucet_error_set(FAUCET_EINVALID, "faucet_export_new: NULL argument");
	}
	*out = NULL;
	e = faucet__calloc(1, sizeof(*e));
	if (e == NULL)
		return FAUCET_ENOMEM;
	e->version = FAUCET_STATE_EXPORT_VERSION;
	e->pipeline = faucet__strdup(pipeline);
	if (e->pipeline == NULL) {
		free(e);
		return FAUCET_ENOMEM;
	}
	*out = e;
	return 0;
}

void faucet_export_free(faucet_export *e)
{
	if (e == NULL)
		return;
	for (size_t i = 0; i < e->count; i++) {
		free(e->entries[i].key);
		faucet_value_free(e->entries[i].value);
	}
	free(e->entries);
	free(e->pipeline);
	free(e->exported_at);
	free(e);
}

static int reserve(faucet_export *e, size_t extra)
{
	export_entry *grown;

	if (e->count + extra <= e->cap)
		return 0; /* also when nothing is added to an empty document */
	grown = faucet__reserve(e->entries, &e->cap, e->count + extra, sizeof(*e->entries), 16);
	if (grown == NULL)
		return FAUCET_ENOMEM;
	e->entries = grown;
	return 0;
}

/* Index of key, or where it would be inserted; *found says which. */
static size_t find_key(const faucet_export *e, const char *key, int *found)
{
	return faucet__find_sorted(e->entries, e->count, sizeof(*e->entries), key, found);
}

int faucet_export_set(faucet_export *e, const char *key, faucet_value *value)
{
	size_t at;
	int found;
	char *copy;

	if (e == NULL || key == NULL || value == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_export_set: NULL argument");
	at = find_key(e, key, &found);
	if (found) {
		faucet_value_free(e->entries[at].value);
		e->entries[at].value = faucet_value_ref(value);
		return 0;
	}
	copy = faucet__strdup(key);
	if (copy == NULL || reserve(e, 1) != 0) {
		free(copy);
		return FAUCET_ENOMEM;
	}
	memmove(&e->entries[at + 1], &e->entries[at], (e->count - at) * sizeof(*e->entries));
	e->entries[at].key = copy;
	e->entries[at].value = faucet_value_ref(value);
	e->count++;
	return 0;
}

int faucet_export_set_exported_at(faucet_export *e, const char *when)
{
	char *copy = NULL;

	if (e == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_export_set_exported_at: NULL document");
	if (when != NULL && (copy = faucet__strdup(when)) == NULL)
		return FAUCET_ENOMEM;
	free(e->exported_at);
	e->exported_at = copy;
	return 0;
}

const char *faucet_export_pipeline(const faucet_export *e)
{
	return e ? e->pipeline : NULL;
}

const char *faucet_export_exported_at(const faucet_export *e)
{
	return e ? e->exported_at : NULL;
}

size_t faucet_export_count(const faucet_export *e)
{
	return e ? e->count : 0;
}

const char *faucet_export_key_at(const faucet_export *e, size_t i)
{
	return e && i < e->count ? e->entries[i].key : NULL;
}

const faucet_value *faucet_export_value_at(const faucet_export *e, size_t i)
{
	return e && i < e->count ? e->entries[i].value : NULL;
}

/* ---- validation ----------------------------------------------------- */

int faucet_export_validate(const faucet_export *e)
{
	size_t ns_len;

	if (e == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_export_validate: NULL document");
	if (faucet_validate_key(e->pipeline) != 0)
		return faucet__error_wrap("state export pipeline name");
	ns_len = strlen(e->pipeline) + 2;
	for (size_t i = 0; i < e->count; i++) {
		const char *key = e->entries[i].key;
		if (faucet_validate_key(key) != 0)
			return FAUCET_EINVALID;
		if (strncmp(key, e->pipeline, ns_len - 2) != 0 ||
		    strncmp(key + ns_len - 2, FAUCET_KEY_SEPARATOR, 2) != 0)
			return faucet_error_set(FAUCET_EINVALID,
						"state export key '%s' is outside the namespace "
						"'%s" FAUCET_KEY_SEPARATOR "' of pipeline '%s'",
						key, e->pipeline, e->pipeline);
	}
	return 0;
}

/* ---- writing -------------------------------------------------------- */

/* Whether s can be written between quotes as it is. */
static int needs_no_escape(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p < 0x20 || *p == '"' || *p == '\\')
			return 0;
	}
	return 1;
}

static void put_json_string(faucet_buf *b, const char *s)
{
	static const char hex[] = "0123456789abcdef";

	(void)faucet_buf_putc(b, '"');
	if (needs_no_escape(s)) {
		(void)faucet_buf_puts(b, s);
		(void)faucet_buf_putc(b, '"');
		return;
	}
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\') {
			(void)faucet_buf_putc(b, '\\');
			(void)faucet_buf_putc(b, (char)*p);
		} else if (*p < 0x20) {
			char esc[7] = {'\\', 'u', '0', '0', hex[*p >> 4], hex[*p & 15], '\0'};
			(void)faucet_buf_puts(b, esc);
		} else {
			(void)faucet_buf_putc(b, (char)*p);
		}
	}
	(void)faucet_buf_putc(b, '"');
}

/* A member name and the separator after it: `"name":` or `"name": `. */
static void put_member(faucet_buf *b, const char *indent, const char *name, int pretty)
{
	(void)faucet_buf_puts(b, indent);
	put_json_string(b, name);
	(void)faucet_buf_puts(b, pretty ? ": " : ":");
}

/* An upper bound on the text, so the buffer grows once, not 20 times. */
static size_t estimate_size(const faucet_export *e)
{
	size_t n = 128 + strlen(e->pipeline) + (e->exported_at ? strlen(e->exported_at) : 0);

	for (size_t i = 0; i < e->count; i++)
		n += strlen(e->entries[i].key) + faucet_value_len(e->entries[i].value) + 12;
	return n;
}

int faucet_export_to_json(const faucet_export *e, int pretty, char **out)
{
	faucet_buf b = FAUCET_BUF_INIT;
	const char *nl = pretty ? "\n" : "", *in1 = pretty ? "  " : "", *in2 = pretty ? "    " : "";

	if (out == NULL || e == NULL) {
		if (out != NULL)
			*out = NULL;
		return faucet_error_set(FAUCET_EINVALID, "faucet_export_to_json: NULL argument");
	}
	*out = NULL;
	if (faucet_buf_grow(&b, estimate_size(e)) != 0)
		return FAUCET_ENOMEM;
	(void)faucet_buf_printf(&b, "{%s", nl);
	put_member(&b, in1, "version", pretty);
	(void)faucet_buf_printf(&b, "%u,%s", e->version, nl);
	put_member(&b, in1, "pipeline", pretty);
	put_json_string(&b, e->pipeline);
	(void)faucet_buf_printf(&b, ",%s", nl);
	if (e->exported_at != NULL) {
		put_member(&b, in1, "exported_at", pretty);
		put_json_string(&b, e->exported_at);
		(void)faucet_buf_printf(&b, ",%s", nl);
	}
	put_member(&b, in1, "keys", pretty);
	(void)faucet_buf_putc(&b, '{');
	for (size_t i = 0; i < e->count; i++) {
		(void)faucet_buf_puts(&b, i > 0 ? "," : "");
		(void)faucet_buf_puts(&b, nl);
		put_member(&b, in2, e->entries[i].key, pretty);
		(void)faucet_buf_put(&b, faucet_value_json(e->entries[i].value),
				     faucet_value_len(e->entries[i].value));
	}
	if (e->count > 0)
		(void)faucet_buf_printf(&b, "%s%s", nl, in1);
	(void)faucet_buf_printf(&b, "}%s}", nl);
	*out = faucet_buf_detach(&b);
	return *out ? 0 : FAUCET_ENOMEM;
}

/* ---- reading -------------------------------------------------------- */

#define PARSE_WHERE "state export"

/* A JSON node's compact text for a message, cut to a readable length. */
static int error_with_node(const char *fmt_prefix, json_object *node)
{
	const char *text = json_object_to_json_string_ext(node, JSON_C_TO_STRING_PLAIN |
								  JSON_C_TO_STRING_NOSLASHESCAPE);
	return faucet_error_set(FAUCET_EINVALID, "%s%.64s", fmt_prefix, text ? text : "?");
}

/* The version member: present, an unsigned integer, and one this build reads. */
static int check_version(json_object *root)
{
	json_object *v;
	uint64_t version;

	if (!json_object_is_type(root, json_type_object) ||
	    !json_object_object_get_ex(root, "version", &v))
		return faucet_error_set(FAUCET_EINVALID, "state export has no `version` field");
	if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0)
		return error_with_node("state export `version` must be an integer, got ", v);
	version = json_object_get_uint64(v);
	if (version == 0 || version > FAUCET_STATE_EXPORT_VERSION)
		return faucet_error_set(FAUCET_EINVALID,
					"state export version %llu is not supported by this build "
					"(supported: %d) - import it with the faucet release that "
					"wrote it or newer",
					(unsigned long long)version, FAUCET_STATE_EXPORT_VERSION);
	return 0;
}

/* The pipeline and exported_at members; a new document in *out. */
static int read_header(json_object *root, faucet_export **out)
{
	json_object *pipeline, *when;
	int rc;

	if (!json_object_object_get_ex(root, "pipeline", &pipeline))
		return faucet_error_set(FAUCET_EINVALID,
					"malformed state export: missing field `pipeline`");
	if (!json_object_is_type(pipeline, json_type_string))
		return error_with_node("malformed state export: `pipeline` must be a string, got ",
				       pipeline);
	rc = faucet_export_new(out, json_object_get_string(pipeline));
	if (rc != 0)
		return rc;
	if (json_object_object_get_ex(root, "exported_at", &when) && when != NULL) {
		if (!json_object_is_type(when, json_type_string))
			rc = error_with_node("malformed state export: `exported_at` must be a "
					     "string, got ", when);
		else
			rc = faucet_export_set_exported_at(*out, json_object_get_string(when));
	}
	if (rc != 0) {
		faucet_export_free(*out);
		*out = NULL;
	}
	return rc;
}

/* One key's value as an independent faucet_value (see the file comment). */
static int copy_value(json_object *node, const char *key, faucet_value **out)
{
	size_t len = 0;
	const char *text = json_object_to_json_string_length(
		node, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);

	if (text == NULL)
		return faucet_error_set(FAUCET_ENOMEM, "out of memory serialising '%s'", key);
	return faucet_value__parse_at(out, text, len, "state export value");
}

static int compare_entries(const void *a, const void *b)
{
	return strcmp(((const export_entry *)a)->key, ((const export_entry *)b)->key);
}

/* The keys member: absent means none; anything but an object is refused. */
static int read_keys(json_object *root, faucet_export *e)
{
	json_object *keys;
	struct json_object_iterator it, end;

	if (!json_object_object_get_ex(root, "keys", &keys))
		return 0;
	if (!json_object_is_type(keys, json_type_object))
		return error_with_node("malformed state export: `keys` must be an object, got ",
				       keys);
	if (reserve(e, (size_t)json_object_object_length(keys)) != 0)
		return FAUCET_ENOMEM;
	it = json_object_iter_begin(keys);
	end = json_object_iter_end(keys);
	for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
		export_entry *slot = &e->entries[e->count];
		const char *name = json_object_iter_peek_name(&it);
		int rc;

		slot->key = faucet__strdup(name);
		if (slot->key == NULL)
			return FAUCET_ENOMEM;
		rc = copy_value(json_object_iter_peek_value(&it), name, &slot->value);
		if (rc != 0) {
			free(slot->key);
			return rc;
		}
		e->count++;
	}
	/* Member names are unique (duplicates were refused), so one sort
	 * gives the strcmp order faucet_export_set keeps. */
	if (e->count > 1)
		qsort(e->entries, e->count, sizeof(*e->entries), compare_entries);
	return 0;
}

int faucet_export_parse(faucet_export **out, const char *text, size_t len)
{
	faucet_value *doc = NULL;
	faucet_export *e = NULL;
	json_object *root;
	int rc;

	if (out == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_export_parse: out is NULL");
	*out = NULL;
	rc = faucet_value__parse_at(&doc, text, len, PARSE_WHERE);
	if (rc != 0)
		return rc;
	/* The document value is ours alone until it is freed below, so
	 * serialising its subtrees (which caches text inside them) is safe. */
	rc = faucet_value__tree(doc, &root);
	if (rc == 0)
		rc = check_version(root);
	if (rc == 0)
		rc = read_header(root, &e);
	if (rc == 0)
		rc = read_keys(root, e);
	faucet_value_free(doc);
	if (rc == 0)
		rc = faucet_export_validate(e);
	if (rc != 0) {
		faucet_export_free(e);
		return rc;
	}
	*out = e;
	return 0;
}

/* ---- export and import against a store ------------------------------ */

/* Reading a namespace is one get per key, and each get is a system-call
 * round trip plus a JSON parse that do not depend on each other; a large
 * namespace is therefore read by a few threads at once (every store is
 * thread-safe), each taking the next chunk of keys.  The first failure stops
 * every reader; its message is carried back to the calling thread, since the
 * last error is per thread. */
#define READ_CHUNK 64
#define READ_PARALLEL_MIN 1024
#define READ_THREADS_MAX 4

typedef struct {
	faucet_store *store;
	char **keys;
	size_t count;
	faucet_value **values;
	atomic_size_t next;
	atomic_int failed;
	pthread_mutex_t lock;
	int rc;
	char *message;
} namespace_read;

static void *read_chunks(void *arg)
{
	namespace_read *job = arg;

	while (!atomic_load(&job->failed)) {
		size_t from = atomic_fetch_add(&job->next, READ_CHUNK);
		if (from >= job->count)
			break;
		for (size_t i = from; i < from + READ_CHUNK && i < job->count; i++) {
			int rc = faucet_store_get(job->store, job->keys[i], &job->values[i]);
			if (rc == 0)
				continue;
			pthread_mutex_lock(&job->lock);
			if (job->rc == 0) {
				job->rc = rc;
				job->message = strdup(faucet_error_last()->message);
			}
			pthread_mutex_unlock(&job->lock);
			atomic_store(&job->failed, 1);
			return NULL;
		}
	}
	return NULL;
}

static int read_values(faucet_store *s, const faucet_strarray *keys, faucet_value **values)
{
	namespace_read job;
	pthread_t threads[READ_THREADS_MAX];
	size_t started = 0, want = 1;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	memset(&job, 0, sizeof(job));
	job.store = s;
	job.keys = keys->strings;
	job.count = keys->count;
	job.values = values;
	atomic_init(&job.next, 0);
	atomic_init(&job.failed, 0);
	if (pthread_mutex_init(&job.lock, NULL) != 0)
		return faucet_error_set(FAUCET_ENOMEM, "cannot create a lock for the export");
	if (keys->count >= READ_PARALLEL_MIN && cpus > 1)
		want = (size_t)(cpus < READ_THREADS_MAX ? cpus : READ_THREADS_MAX);
	/* The calling thread is one of the readers; a thread that cannot be
	 * started only makes the export slower. */
	for (; started + 1 < want; started++) {
		if (pthread_create(&threads[started], NULL, read_chunks, &job) != 0)
			break;
	}
	(void)read_chunks(&job);
	for (size_t i = 0; i < started; i++)
		(void)pthread_join(threads[i], NULL);
	(void)pthread_mutex_destroy(&job.lock);
	if (job.rc != 0) {
		(void)faucet_error_set(job.rc, "%s", job.message ? job.message : "out of memory");
		free(job.message);
		return job.rc;
	}
	return 0;
}

int faucet_export_namespace(faucet_store *s, const char *pipeline, faucet_export **out)
{
	faucet_strarray keys = {NULL, 0};
	faucet_export *e = NULL;
	faucet_value **values = NULL;
	char *prefix;
	int rc;

	if (out == NULL || s == NULL || pipeline == NULL) {
		if (out != NULL)
			*out = NULL;
		return faucet_error_set(FAUCET_EINVALID, "faucet_export_namespace: NULL argument");
	}
	*out = NULL;
	prefix = faucet_namespace_prefix(pipeline);
	if (prefix == NULL)
		return FAUCET_ENOMEM;
	rc = faucet_store_list(s, prefix, &keys);
	free(prefix);
	if (rc == 0)
		rc = faucet_export_new(&e, pipeline);
	if (rc == 0)
		rc = reserve(e, keys.count);
	if (rc == 0 && (values = faucet__calloc(keys.count, sizeof(*values))) == NULL)
		rc = FAUCET_ENOMEM;
	if (rc == 0)
		rc = read_values(s, &keys, values);
	/* The listing is sorted, so each set appends. */
	for (size_t i = 0; i < keys.count && rc == 0; i++) {
		/* A key deleted between the listing and its read is skipped. */
		if (values[i] != NULL)
			rc = faucet_export_set(e, keys.strings[i], values[i]);
	}
	for (size_t i = 0; values != NULL && i < keys.count; i++)
		faucet_value_free(values[i]);
	free(values);
	faucet_strarray_dispose(&keys);
	if (rc != 0) {
		faucet_export_free(e);
		return rc;
	}
	*out = e;
	return 0;
}

void faucet_import_report_dispose(faucet_import_report *r)
{
	if (r == NULL)
		return;
	faucet_strarray_dispose(&r->written);
	faucet_strarray_dispose(&r->deleted);
	free(r->error);
	r->error = NULL;
	r->atomic = 0;
}

static int export_has_key(const faucet_export *e, const char *key)
{
	int found;

	(void)find_key(e, key, &found);
	return found;
}

/* With replace: the namespace's keys that the document does not hold. */
static int list_stale(faucet_store *s, const faucet_export *e, faucet_strarray *stale)
{
	faucet_strarray listed = {NULL, 0};
	char *prefix = faucet_namespace_prefix(e->pipeline);
	size_t kept = 0;
	int rc;

	if (prefix == NULL)
		return FAUCET_ENOMEM;
	rc = faucet_store_list(s, prefix, &listed);
	free(prefix);
	if (rc != 0)
		return rc;
	for (size_t i = 0; i < listed.count; i++) {
		if (export_has_key(e, listed.strings[i]))
			free(listed.strings[i]);
		else
			listed.strings[kept++] = listed.strings[i];
	}
	listed.count = kept;
	*stale = listed;
	return 0;
}

/* Record the first failure in the report from the last error.  Returns 0,
 * or FAUCET_ENOMEM when even the message cannot be kept. */
static int report_failure(faucet_import_report *r, const char *what, const char *key)
{
	const char *msg = faucet_error_last()->message;

	if (what == NULL)
		r->error = faucet__strdup(msg);
	else
		r->error = faucet__sprintf("%s '%s': %s", what, key, msg);
	return r->error ? 0 : FAUCET_ENOMEM;
}

/* Every key of the document, copied up front: once writes start, the
 * report must be able to record each key that lands without allocating. */
static int prepare_written(const faucet_export *e, char ***names)
{
	*names = faucet__calloc(e->count, sizeof(**names));
	if (*names == NULL)
		return FAUCET_ENOMEM;
	for (size_t i = 0; i < e->count; i++) {
		(*names)[i] = faucet__strdup(e->entries[i].key);
		if ((*names)[i] == NULL) {
			for (size_t j = 0; j < i; j++)
				free((*names)[j]);
			free(*names);
			*names = NULL;
			return FAUCET_ENOMEM;
		}
	}
	return 0;
}

/* Free the prepared names beyond what the report says landed. */
static void trim_written(faucet_import_report *r, size_t prepared)
{
	for (size_t i = r->written.count; i < prepared; i++)
		free(r->written.strings[i]);
}

static int write_entries(faucet_store *s, const faucet_export *e, faucet_import_report *r)
{
	if (r->atomic) {
		faucet_entry *batch = faucet__calloc(e->count, sizeof(*batch));
		int rc;

		if (batch == NULL)
			return FAUCET_ENOMEM;
		for (size_t i = 0; i < e->count; i++) {
			batch[i].key = e->entries[i].key;
			batch[i].value = e->entries[i].value;
		}
		rc = faucet_store_put_batch(s, batch, e->count);
		free(batch);
		if (rc != 0)
			return report_failure(r, NULL, NULL);
		r->written.count = e->count;
		return 0;
	}
	for (size_t i = 0; i < e->count; i++) {
		if (faucet_store_put(s, e->entries[i].key, e->entries[i].value) != 0)
			return report_failure(r, "writing", e->entries[i].key);
		r->written.count++;
	}
	return 0;
}

static int delete_stale(faucet_store *s, faucet_strarray *stale, faucet_import_report *r)
{
	/* The report takes the stale names over one by one as they go. */
	r->deleted.strings = stale->strings;
	r->deleted.count = 0;
	for (size_t i = 0; i < stale->count; i++) {
		if (faucet_store_delete(s, stale->strings[i]) != 0) {
			int rc = report_failure(r, "deleting stale", stale->strings[i]);
			for (size_t j = i; j < stale->count; j++)
				free(stale->strings[j]);
			stale->strings = NULL;
			stale->count = 0;
			return rc;
		}
		r->deleted.count++;
	}
	stale->strings = NULL;
	stale->count = 0;
	return 0;
}

int faucet_import_namespace(faucet_store *s, const faucet_export *e, int replace,
			    faucet_import_report *report)
{
	faucet_strarray stale = {NULL, 0};
	char **names = NULL;
	int rc;

	if (report == NULL || s == NULL || e == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_import_namespace: NULL argument");
	memset(report, 0, sizeof(*report));
	rc = faucet_export_validate(e);
	if (rc == 0 && replace)
		rc = list_stale(s, e, &stale);
	if (rc == 0)
		rc = prepare_written(e, &names);
	if (rc != 0) {
		faucet_strarray_dispose(&stale);
		return rc;
	}
	report->atomic = faucet_store_supports_atomic_batch(s);
	report->written.strings = names;
	rc = write_entries(s, e, report);
	trim_written(report, e->count);
	if (rc == 0 && report->error == NULL)
		rc = delete_stale(s, &stale, report);
	faucet_strarray_dispose(&stale);
	return rc;
}
