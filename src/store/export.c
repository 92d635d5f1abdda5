/*
 * export.c - export documents: one pipeline's namespace as a portable JSON
 * snapshot, in memory (faucet_export_*) or streamed to a file; their
 * validation and parsing, which import.c shares.
 *
 *   {"version":1,"pipeline":"orders","exported_at":"...","keys":{"orders::a":{...}}}
 *
 * Decisions that shape this file:
 *   - Writing a document does not build a json-c tree: each value's stored
 *     compact text is appended as it is.  faucet_export_write() streams the
 *     document chunk by chunk as the keys are read, so an export's memory
 *     does not grow with the namespace's values.
 *   - Reading goes through export_read.c, which hands each value over as
 *     text to be checked on its own, exactly as a put checks it: whatever a
 *     put accepts, the document that carries it is accepted too.
 * * Entries of an in-memory document are kept in one array sorted by strcmp,
 * the order the document lists them in.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include <faucet/store.h>
#include "values/value_internal.h"
#include "export_internal.h"
#include "values/json_check.h"
#include "open_internal.h"
#include "keys/bookkeeping.h"
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

/* The pipeline name is a valid key; `key` is one too, inside its namespace. */
int faucet__export_validate_pipeline(const char *pipeline)
{
	if (faucet_validate_key(pipeline) != 0)
		return faucet__error_wrap("state export pipeline name");
	return 0;
}

/* Run bookkeeping (doc/design.md §8.9) is written by the run machinery only,
 * and an export never holds it: a document that does is refused whole,
 * before anything is written, rather than imported in part. */
int faucet__export_refuse_bookkeeping(const char *key)
{
	if (!faucet__is_bookkeeping_key(key))
		return 0;
	return faucet_error_set(FAUCET_EINVALID,
				"state export key '%s' is run bookkeeping (__lease__, __status__, "
				"__rollback__), which only faucet's runs write: remove it from the "
				"document",
				key);
}

int faucet__export_validate_member(const char *pipeline, size_t plen, const char *key)
{
	if (faucet_validate_key(key) != 0)
		return FAUCET_EINVALID;
	if (faucet__export_refuse_bookkeeping(key) != 0)
		return FAUCET_EINVALID;
	if (strncmp(key, pipeline, plen) != 0 || strncmp(key + plen, FAUCET_KEY_SEPARATOR, 2) != 0)
		return faucet_error_set(FAUCET_EINVALID,
					"state export key '%s' is outside the namespace "
					"'%s" FAUCET_KEY_SEPARATOR "' of pipeline '%s'",
					key, pipeline, pipeline);
	return 0;
}

int faucet_export_validate(const faucet_export *e)
{
	size_t plen;
	int rc;

	if (e == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_export_validate: NULL document");
	if ((rc = faucet__export_validate_pipeline(e->pipeline)) != 0)
		return rc;
	plen = strlen(e->pipeline);
	for (size_t i = 0; i < e->count; i++) {
		if ((rc = faucet__export_validate_member(e->pipeline, plen, e->entries[i].key)) != 0)
			return rc;
	}
	return 0;
}

/* ---- writing -------------------------------------------------------- */

/* A member name and the separator after it: `"name":` or `"name": `. */
static void put_member(faucet_buf *b, const char *indent, const char *name, int pretty)
{
	(void)faucet__buf_puts(b, indent);
	faucet__json_string(b, name);
	(void)faucet__buf_puts(b, pretty ? ": " : ":");
}

/* An upper bound on the text, so the buffer grows once, not 20 times. */
static size_t estimate_size(const faucet_export *e)
{
	size_t n = 128 + strlen(e->pipeline) + (e->exported_at ? strlen(e->exported_at) : 0);

	for (size_t i = 0; i < e->count; i++)
		n += strlen(e->entries[i].key) + faucet_value_len(e->entries[i].value) + 12;
	return n;
}

/* The document in three pieces, so the streaming export writes the same
 * text: the header up to `"keys":{`, each entry, and the closing brackets. */
static void put_header(faucet_buf *b, unsigned version, const char *pipeline,
		       const char *exported_at, int pretty)
{
	const char *nl = pretty ? "\n" : "", *in1 = pretty ? "  " : "";

	(void)faucet__buf_printf(b, "{%s", nl);
	put_member(b, in1, "version", pretty);
	(void)faucet__buf_printf(b, "%u,%s", version, nl);
	put_member(b, in1, "pipeline", pretty);
	faucet__json_string(b, pipeline);
	(void)faucet__buf_printf(b, ",%s", nl);
	if (exported_at != NULL) {
		put_member(b, in1, "exported_at", pretty);
		faucet__json_string(b, exported_at);
		(void)faucet__buf_printf(b, ",%s", nl);
	}
	put_member(b, in1, "keys", pretty);
	(void)faucet__buf_putc(b, '{');
}

static void put_entry(faucet_buf *b, int first, const char *key, const faucet_value *v,
		      int pretty)
{
	(void)faucet__buf_puts(b, first ? "" : ",");
	(void)faucet__buf_puts(b, pretty ? "\n" : "");
	put_member(b, pretty ? "    " : "", key, pretty);
	(void)faucet__buf_put(b, faucet_value_json(v), faucet_value_len(v));
}

static void put_trailer(faucet_buf *b, size_t count, int pretty)
{
	if (count > 0 && pretty)
		(void)faucet__buf_puts(b, "\n  ");
	(void)faucet__buf_printf(b, "}%s}", pretty ? "\n" : "");
}

int faucet_export_to_json(const faucet_export *e, int pretty, char **out)
{
	faucet_buf b = FAUCET_BUF_INIT;

	if (out == NULL || e == NULL) {
		if (out != NULL)
			*out = NULL;
		return faucet_error_set(FAUCET_EINVALID, "faucet_export_to_json: NULL argument");
	}
	*out = NULL;
	if (faucet__buf_grow(&b, estimate_size(e)) != 0)
		return FAUCET_ENOMEM;
	put_header(&b, e->version, e->pipeline, e->exported_at, pretty);
	for (size_t i = 0; i < e->count; i++)
		put_entry(&b, i == 0, e->entries[i].key, e->entries[i].value, pretty);
	put_trailer(&b, e->count, pretty);
	*out = faucet__buf_detach(&b);
	return *out ? 0 : FAUCET_ENOMEM;
}

/* ---- reading -------------------------------------------------------- */

/* Each value is parsed on its own into an independent faucet_value (json-c's
 * reference counts are not atomic, so values that may travel to other
 * threads must not share a subtree), and judged by the same rules as a put:
 * a value put accepts is accepted inside a document too, whatever the
 * document adds around it. */
int faucet__export_parse_entry_value(const char *key, const char *text, size_t len,
				     uint64_t offset, faucet_value **out)
{
	if (faucet_value_parse_at(out, text, len, "state export value") != 0)
		return faucet__error_wrap("state export key '%s' (value at byte %llu)", key,
					  (unsigned long long)offset);
	return 0;
}

static int collect_entry(void *ctx, const char *key, const char *text, size_t len,
			 uint64_t offset)
{
	faucet_export *e = ctx;
	export_entry *slot;
	int rc;

	if (reserve(e, 1) != 0)
		return FAUCET_ENOMEM;
	slot = &e->entries[e->count];
	slot->key = faucet__strdup(key);
	if (slot->key == NULL)
		return FAUCET_ENOMEM;
	rc = faucet__export_parse_entry_value(key, text, len, offset, &slot->value);
	if (rc != 0) {
		free(slot->key);
		return rc;
	}
	e->count++;
	return 0;
}

static int compare_entries(const void *a, const void *b)
{
	return strcmp(((const export_entry *)a)->key, ((const export_entry *)b)->key);
}

int faucet__export_duplicate_key(const char *key)
{
	return faucet_error_set(FAUCET_EINVALID,
				"state export: duplicate member name '%s' in `keys`", key);
}

int faucet_export_parse(faucet_export **out, const char *text, size_t len)
{
	faucet__doc_header h;
	faucet_export *e = NULL;
	int rc;

	if (out == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_export_parse: out is NULL");
	*out = NULL;
	if (text == NULL)
		return faucet_error_set(FAUCET_EINVALID, "state export: no JSON text");
	/* The pipeline is only known at the end, so the entries gather in a
	 * document named later. */
	rc = faucet_export_new(&e, "");
	if (rc == 0)
		rc = faucet__doc_walk_memory(text, len, collect_entry, e, &h);
	if (rc == 0) {
		free(e->pipeline);
		e->pipeline = h.pipeline;
		e->exported_at = h.exported_at;
		if (e->count > 1)
			qsort(e->entries, e->count, sizeof(*e->entries), compare_entries);
		for (size_t i = 1; i < e->count && rc == 0; i++) {
			if (strcmp(e->entries[i - 1].key, e->entries[i].key) == 0)
				rc = faucet__export_duplicate_key(e->entries[i].key);
		}
	}
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
 * thread-safe), each taking the next chunk of keys and reading it with one
 * faucet_store_get_many (one transaction on SQLite).  The first failure stops
 * every reader; its message is carried back to the calling thread, since the
 * last error is per thread. */
#define READ_CHUNK 256
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
		size_t n = job->count - from < READ_CHUNK ? job->count - from : READ_CHUNK;
		int rc = faucet_store_get_many(job->store, (const char *const *)job->keys + from, n,
					       job->values + from);
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

/* Run bookkeeping (__lease__, __status__, __rollback__: doc/design.md §8.9) is
 * never exported, imported or deleted by a replace: it describes this
 * store's runs, not the pipeline's position. */
void faucet__export_drop_bookkeeping(faucet_strarray *keys)
{
	size_t kept = 0;

	for (size_t i = 0; i < keys->count; i++) {
		if (faucet__is_bookkeeping_key(keys->strings[i]))
			free(keys->strings[i]);
		else
			keys->strings[kept++] = keys->strings[i];
	}
	keys->count = kept;
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
	faucet__export_drop_bookkeeping(&keys);
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

/* ---- streaming export ------------------------------------------------- */

/* Keys read and written per step: enough to keep the parallel readers busy,
 * few enough that only a sliver of the namespace's values is in memory. */
#define WRITE_CHUNK 4096

static int flush_out(faucet_buf *b, FILE *out)
{
	if (b->failed)
		return faucet_error_set(FAUCET_ENOMEM, "out of memory writing the export");
	if (b->len > 0 && fwrite(b->ptr, 1, b->len, out) != b->len)
		return faucet__error_os(FAUCET_EIO, errno, "cannot write the export document");
	b->len = 0;
	return 0;
}

/* One chunk of the listing: read the values, append the entries. */
static int write_chunk(faucet_store *s, char **keys, size_t n, faucet_value **values,
		       faucet_buf *b, size_t *written, int pretty)
{
	faucet_strarray view = {keys, n};
	int rc;

	memset(values, 0, n * sizeof(*values));
	rc = read_values(s, &view, values);
	for (size_t i = 0; i < n; i++) {
		/* A key deleted between the listing and its read is skipped. */
		if (rc == 0 && values[i] != NULL) {
			put_entry(b, *written == 0, keys[i], values[i], pretty);
			(*written)++;
		}
		faucet_value_free(values[i]);
	}
	return rc;
}

/* The document being streamed from faucet_store_scan_data (which leaves
 * the bookkeeping out, like drop_bookkeeping). */
typedef struct {
	faucet_buf b;
	FILE *out;
	size_t written;
	int pretty;
} stream_out;

#define STREAM_FLUSH 65536

static int stream_entry(const char *key, const faucet_value *value, void *ctx)
{
	stream_out *so = ctx;

	put_entry(&so->b, so->written == 0, key, value, so->pretty);
	so->written++;
	return so->b.len >= STREAM_FLUSH ? flush_out(&so->b, so->out) : 0;
}

/* A backend that streams its entries in order (PostgreSQL) is read in one
 * pass: no listing first, no read per chunk. */
static int export_streamed(faucet_store *s, const char *prefix, const char *pipeline,
			   const char *exported_at, int pretty, FILE *out, size_t *count)
{
	stream_out so = {FAUCET_BUF_INIT, out, 0, pretty};
	int rc;

	put_header(&so.b, FAUCET_STATE_EXPORT_VERSION, pipeline, exported_at, pretty);
	rc = flush_out(&so.b, out);
	if (rc == 0)
		rc = faucet_store_scan_data(s, prefix, stream_entry, &so);
	if (rc == 0) {
		put_trailer(&so.b, so.written, pretty);
		rc = flush_out(&so.b, out);
	}
	faucet__buf_dispose(&so.b);
	if (rc == 0 && count != NULL)
		*count = so.written;
	return rc;
}

int faucet_export_write(faucet_store *s, const char *pipeline, const char *exported_at,
			int pretty, FILE *out, size_t *count)
{
	faucet_strarray keys = {NULL, 0};
	faucet_value **values = NULL;
	faucet_buf b = FAUCET_BUF_INIT;
	size_t written = 0;
	char *prefix;
	int rc;

	if (count != NULL)
		*count = 0;
	if (s == NULL || pipeline == NULL || out == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_export_write: NULL argument");
	if ((rc = faucet__export_validate_pipeline(pipeline)) != 0)
		return rc;
	prefix = faucet_namespace_prefix(pipeline);
	if (prefix == NULL)
		return FAUCET_ENOMEM;
	if (faucet__store_has_scan_entries(s)) {
		rc = export_streamed(s, prefix, pipeline, exported_at, pretty, out, count);
		free(prefix);
		return rc;
	}
	rc = faucet_store_list(s, prefix, &keys);
	free(prefix);
	faucet__export_drop_bookkeeping(&keys);
	if (rc == 0 && keys.count > 0 &&
	    (values = faucet__calloc(keys.count < WRITE_CHUNK ? keys.count : WRITE_CHUNK,
				     sizeof(*values))) == NULL)
		rc = FAUCET_ENOMEM;
	if (rc == 0) {
		put_header(&b, FAUCET_STATE_EXPORT_VERSION, pipeline, exported_at, pretty);
		rc = flush_out(&b, out);
	}
	for (size_t from = 0; rc == 0 && from < keys.count; from += WRITE_CHUNK) {
		size_t n = keys.count - from < WRITE_CHUNK ? keys.count - from : WRITE_CHUNK;

		rc = write_chunk(s, keys.strings + from, n, values, &b, &written, pretty);
		if (rc == 0)
			rc = flush_out(&b, out);
	}
	if (rc == 0) {
		put_trailer(&b, written, pretty);
		rc = flush_out(&b, out);
	}
	faucet__buf_dispose(&b);
	free(values);
	faucet_strarray_dispose(&keys);
	if (rc == 0 && count != NULL)
		*count = written;
	return rc;
}

