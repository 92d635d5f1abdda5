/*
 * export.c - export / import documents: one pipeline's namespace as a
 * portable JSON snapshot, and writing such a snapshot into a store.
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
 *   - An import from a file reads the document twice: first to validate all
 *     of it (an invalid or truncated document writes nothing), then to
 *     write it FAUCET_IMPORT_CHUNK keys at a time.  Only the keys' names
 *     stay in memory throughout.
 *   - The import report says what is true of the store after a failure: a
 *     write that returned FAUCET_EUNKNOWN may have landed, so it is listed
 *     as written and marked durability_unknown.
 * Entries of an in-memory document are kept in one array sorted by strcmp,
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
static int validate_pipeline(const char *pipeline)
{
	if (faucet_validate_key(pipeline) != 0)
		return faucet__error_wrap("state export pipeline name");
	return 0;
}

/* Run bookkeeping (doc/design.md §8.9) is written by the run machinery only,
 * and an export never holds it: a document that does is refused whole,
 * before anything is written, rather than imported in part. */
static int refuse_bookkeeping(const char *key)
{
	if (!faucet__is_bookkeeping_key(key))
		return 0;
	return faucet_error_set(FAUCET_EINVALID,
				"state export key '%s' is run bookkeeping (__lease__, __status__, "
				"__rollback__), which only faucet's runs write: remove it from the "
				"document",
				key);
}

static int validate_member(const char *pipeline, size_t plen, const char *key)
{
	if (faucet_validate_key(key) != 0)
		return FAUCET_EINVALID;
	if (refuse_bookkeeping(key) != 0)
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
	if ((rc = validate_pipeline(e->pipeline)) != 0)
		return rc;
	plen = strlen(e->pipeline);
	for (size_t i = 0; i < e->count; i++) {
		if ((rc = validate_member(e->pipeline, plen, e->entries[i].key)) != 0)
			return rc;
	}
	return 0;
}

/* ---- writing -------------------------------------------------------- */

/* A member name and the separator after it: `"name":` or `"name": `. */
static void put_member(faucet_buf *b, const char *indent, const char *name, int pretty)
{
	(void)faucet_buf_puts(b, indent);
	faucet__json_string(b, name);
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

/* The document in three pieces, so the streaming export writes the same
 * text: the header up to `"keys":{`, each entry, and the closing brackets. */
static void put_header(faucet_buf *b, unsigned version, const char *pipeline,
		       const char *exported_at, int pretty)
{
	const char *nl = pretty ? "\n" : "", *in1 = pretty ? "  " : "";

	(void)faucet_buf_printf(b, "{%s", nl);
	put_member(b, in1, "version", pretty);
	(void)faucet_buf_printf(b, "%u,%s", version, nl);
	put_member(b, in1, "pipeline", pretty);
	faucet__json_string(b, pipeline);
	(void)faucet_buf_printf(b, ",%s", nl);
	if (exported_at != NULL) {
		put_member(b, in1, "exported_at", pretty);
		faucet__json_string(b, exported_at);
		(void)faucet_buf_printf(b, ",%s", nl);
	}
	put_member(b, in1, "keys", pretty);
	(void)faucet_buf_putc(b, '{');
}

static void put_entry(faucet_buf *b, int first, const char *key, const faucet_value *v,
		      int pretty)
{
	(void)faucet_buf_puts(b, first ? "" : ",");
	(void)faucet_buf_puts(b, pretty ? "\n" : "");
	put_member(b, pretty ? "    " : "", key, pretty);
	(void)faucet_buf_put(b, faucet_value_json(v), faucet_value_len(v));
}

static void put_trailer(faucet_buf *b, size_t count, int pretty)
{
	if (count > 0 && pretty)
		(void)faucet_buf_puts(b, "\n  ");
	(void)faucet_buf_printf(b, "}%s}", pretty ? "\n" : "");
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
	if (faucet_buf_grow(&b, estimate_size(e)) != 0)
		return FAUCET_ENOMEM;
	put_header(&b, e->version, e->pipeline, e->exported_at, pretty);
	for (size_t i = 0; i < e->count; i++)
		put_entry(&b, i == 0, e->entries[i].key, e->entries[i].value, pretty);
	put_trailer(&b, e->count, pretty);
	*out = faucet_buf_detach(&b);
	return *out ? 0 : FAUCET_ENOMEM;
}

/* ---- reading -------------------------------------------------------- */

/* Each value is parsed on its own into an independent faucet_value (json-c's
 * reference counts are not atomic, so values that may travel to other
 * threads must not share a subtree), and judged by the same rules as a put:
 * a value put accepts is accepted inside a document too, whatever the
 * document adds around it. */
static int parse_entry_value(const char *key, const char *text, size_t len, uint64_t offset,
			     faucet_value **out)
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
	rc = parse_entry_value(key, text, len, offset, &slot->value);
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

static int duplicate_key(const char *key)
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
				rc = duplicate_key(e->entries[i].key);
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
static void drop_bookkeeping(faucet_strarray *keys)
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
	drop_bookkeeping(&keys);
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
	faucet_buf_dispose(&so.b);
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
	if ((rc = validate_pipeline(pipeline)) != 0)
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
	drop_bookkeeping(&keys);
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
	faucet_buf_dispose(&b);
	free(values);
	faucet_strarray_dispose(&keys);
	if (rc == 0 && count != NULL)
		*count = written;
	return rc;
}

/* ---- import ------------------------------------------------------------ */

void faucet_import_report_dispose(faucet_import_report *r)
{
	if (r == NULL)
		return;
	faucet_strarray_dispose(&r->written);
	faucet_strarray_dispose(&r->durability_unknown);
	faucet_strarray_dispose(&r->deleted);
	free(r->error);
	free(r->pipeline);
	memset(r, 0, sizeof(*r));
}

/* An import in progress.  The document's keys (in document order) are
 * known before anything is written; report->written takes them over and
 * counts how many have landed, so it never needs to allocate after a
 * failure.  Values pass through in chunks of at most FAUCET_IMPORT_CHUNK. */
typedef struct {
	faucet_store *s;
	faucet_import_report *r;
	char **names;          /* the document's keys, document order */
	size_t count;
	int batch;             /* the store has an all-or-nothing put_batch */
	int own_values;        /* the chunk's values are ours to free */
	faucet_entry *chunk;
	size_t n;              /* entries in the chunk */
	size_t next;           /* index of the next document entry */
	const faucet__import_writer *w; /* the writes go through it, or NULL */
} importer;

#define IMPORT_STOPPED 1 /* a write failed: the report says so */

/* Record the first failure in the report from the last error.  Returns
 * IMPORT_STOPPED, or FAUCET_ENOMEM when even the message cannot be kept. */
static int report_failure(faucet_import_report *r, const char *what, const char *key)
{
	const faucet_error *err = faucet_error_last();

	r->error_code = err->code != 0 ? err->code : FAUCET_ERROR;
	if (what == NULL)
		r->error = faucet__strdup(err->message);
	else if (key == NULL)
		r->error = faucet__sprintf("%s: %s", what, err->message);
	else
		r->error = faucet__sprintf("%s '%s': %s", what, key, err->message);
	return r->error ? IMPORT_STOPPED : FAUCET_ENOMEM;
}

/* A write that returned FAUCET_EUNKNOWN may have landed (the file store:
 * did land, only its durability is unknown), so it counts as written and
 * is marked.  The message is saved first: the push may not touch it, but
 * reading it after other calls would not be safe. */
static int note_unknown(importer *imp, size_t from, size_t n)
{
	for (size_t i = from; i < from + n; i++) {
		if (faucet_strarray_push(&imp->r->durability_unknown, imp->names[i]) != 0)
			return FAUCET_ENOMEM;
	}
	imp->r->written.count += n;
	return 0;
}

static void drop_chunk(importer *imp)
{
	for (size_t i = 0; imp->own_values && i < imp->n; i++)
		faucet_value_free((faucet_value *)imp->chunk[i].value);
	imp->n = 0;
}

static int write_chunk_entries(importer *imp)
{
	size_t first = imp->r->written.count;
	int rc = 0, stop;

	if (imp->batch) {
		rc = imp->w ? imp->w->put_batch(imp->w->ctx, imp->chunk, imp->n)
			    : faucet_store_put_batch(imp->s, imp->chunk, imp->n);
		if (rc == 0) {
			imp->r->written.count += imp->n;
			return 0;
		}
		stop = report_failure(imp->r, NULL, NULL);
		if (rc == FAUCET_EUNKNOWN && stop == IMPORT_STOPPED)
			stop = note_unknown(imp, first, imp->n) == 0 ? IMPORT_STOPPED : FAUCET_ENOMEM;
		return stop;
	}
	/* In order, so that a failure tells exactly which keys landed: a
	 * prefix of the chunk (the file store writes it with one durability
	 * barrier, others a put at a time).  A writer (a run) records the
	 * chunk's before-images first. */
	{
		size_t landed = 0, unknown_from = 0;

		rc = imp->w ? imp->w->put_prefix(imp->w->ctx, imp->chunk, imp->n, &landed,
						 &unknown_from)
			    : faucet__store_put_prefix(imp->s, imp->chunk, imp->n, &landed,
						       &unknown_from);
		if (rc == 0) {
			imp->r->written.count += imp->n;
			return 0;
		}
		imp->r->written.count += unknown_from;
		/* The key that failed, or the first whose durability is unknown. */
		stop = report_failure(imp->r, "writing",
				      imp->chunk[rc == FAUCET_EUNKNOWN || landed >= imp->n ? unknown_from
											  : landed]
					      .key);
		if (rc == FAUCET_EUNKNOWN && stop == IMPORT_STOPPED)
			stop = note_unknown(imp, first + unknown_from, landed - unknown_from) == 0
				       ? IMPORT_STOPPED
				       : FAUCET_ENOMEM;
		return stop;
	}
}

static int flush_chunk(importer *imp)
{
	int rc = imp->n > 0 ? write_chunk_entries(imp) : 0;

	drop_chunk(imp);
	return rc;
}

/* Queue the next document entry; the chunk is written when full. */
static int queue_entry(importer *imp, const faucet_value *value)
{
	imp->chunk[imp->n].key = imp->names[imp->next];
	imp->chunk[imp->n].value = value;
	imp->n++;
	imp->next++;
	return imp->n == FAUCET_IMPORT_CHUNK ? flush_chunk(imp) : 0;
}

static int compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int has_name(char *const *sorted, size_t count, const char *key)
{
	return count > 0 && bsearch(&key, sorted, count, sizeof(*sorted), compare_names) != NULL;
}

/* The document's keys sorted (borrowed pointers): a duplicate is refused. */
static int sort_names(char **names, size_t count, char ***sorted)
{
	*sorted = NULL;
	if (count == 0)
		return 0;
	*sorted = faucet__malloc(count * sizeof(**sorted));
	if (*sorted == NULL)
		return FAUCET_ENOMEM;
	memcpy(*sorted, names, count * sizeof(**sorted));
	qsort(*sorted, count, sizeof(**sorted), compare_names);
	for (size_t i = 1; i < count; i++) {
		if (strcmp((*sorted)[i - 1], (*sorted)[i]) == 0) {
			int rc = duplicate_key((*sorted)[i]);
			free(*sorted);
			*sorted = NULL;
			return rc;
		}
	}
	return 0;
}

/* With replace: the namespace's keys that the document does not hold. */
static int list_stale(faucet_store *s, const char *pipeline, char *const *sorted, size_t count,
		      faucet_strarray *stale)
{
	faucet_strarray listed = {NULL, 0};
	char *prefix = faucet_namespace_prefix(pipeline);
	size_t kept = 0;
	int rc;

	if (prefix == NULL)
		return FAUCET_ENOMEM;
	rc = faucet_store_list(s, prefix, &listed);
	free(prefix);
	if (rc != 0)
		return rc;
	drop_bookkeeping(&listed);
	for (size_t i = 0; i < listed.count; i++) {
		if (has_name(sorted, count, listed.strings[i]))
			free(listed.strings[i]);
		else
			listed.strings[kept++] = listed.strings[i];
	}
	listed.count = kept;
	*stale = listed;
	return 0;
}

static int delete_stale(faucet_store *s, const faucet__import_writer *w, faucet_strarray *stale,
			faucet_import_report *r)
{
	/* The report takes the stale names over one by one as they go. */
	r->deleted.strings = stale->strings;
	r->deleted.count = 0;
	for (size_t i = 0; i < stale->count; i++) {
		int rc = w ? w->del(w->ctx, stale->strings[i])
			   : faucet_store_delete(s, stale->strings[i]);
		if (rc != 0) {
			int stop = report_failure(r, "deleting stale", stale->strings[i]);
			/* A delete whose outcome is unknown may have happened: listed,
			 * and the error says so. */
			if (rc == FAUCET_EUNKNOWN)
				r->deleted.count++;
			for (size_t j = r->deleted.count; j < stale->count; j++)
				free(stale->strings[j]);
			stale->strings = NULL;
			stale->count = 0;
			return stop == IMPORT_STOPPED ? 0 : stop;
		}
		r->deleted.count++;
	}
	stale->strings = NULL;
	stale->count = 0;
	return 0;
}

static void free_names(char **names, size_t from, size_t count)
{
	for (size_t i = from; i < count; i++)
		free(names[i]);
}

/* Where a source of values plugs into run_import: queue every entry of the
 * document, in the order of imp->names, with queue_entry(). */
typedef int (*import_source)(importer *imp, void *src);

/* The common part of every import.  Takes `names` (document order, every
 * one already validated, `count` of them) over whatever happens. */
static int run_import(faucet_store *s, const char *pipeline, char **names, size_t count,
		      const faucet_import_options *o, const faucet__import_writer *w,
		      import_source source, void *src, faucet_import_report *r)
{
	faucet_strarray stale = {NULL, 0};
	char **sorted = NULL;
	importer imp;
	int rc;

	if (o->replace && count == 0 && !o->allow_empty)
		rc = faucet_error_set(FAUCET_EINVALID,
				      "refusing to replace the namespace '%s" FAUCET_KEY_SEPARATOR
				      "' with a source that holds no key of it: that would "
				      "delete every key of the namespace (allow_empty, "
				      "--allow-empty, to do that)",
				      pipeline);
	else
		rc = sort_names(names, count, &sorted);
	if (rc == 0 && o->replace)
		rc = list_stale(s, pipeline, sorted, count, &stale);
	free(sorted);
	if (rc != 0) {
		free_names(names, 0, count);
		free(names);
		return rc;
	}
	r->written.strings = names;
	r->atomic = faucet_store_supports_atomic_batch(s) && count <= FAUCET_IMPORT_CHUNK;
	if (o->dry_run) {
		r->dry_run = 1;
		r->written.count = count;
		r->deleted = stale;
		return 0;
	}
	memset(&imp, 0, sizeof(imp));
	imp.s = s;
	imp.r = r;
	imp.names = names;
	imp.count = count;
	imp.batch = faucet_store_supports_atomic_batch(s);
	/* The writer (the caller's run) begins only now, once the document is
	 * known to be valid and something will be written (an import that
	 * writes nothing is no run), with every key that will change. */
	if (w != NULL && (count > 0 || stale.count > 0)) {
		int active = 0;

		rc = w->begin(w->ctx, pipeline, (const char *const *)names, count,
			      (const char *const *)stale.strings, stale.count, &active);
		if (rc != 0) {
			free_names(names, 0, count);
			r->written.count = 0;
			faucet_strarray_dispose(&stale);
			return rc;
		}
		imp.w = active ? w : NULL;
	}
	imp.chunk = faucet__calloc(count < FAUCET_IMPORT_CHUNK ? (count ? count : 1)
							       : FAUCET_IMPORT_CHUNK,
				   sizeof(*imp.chunk));
	rc = imp.chunk != NULL ? source(&imp, src) : FAUCET_ENOMEM;
	if (rc == 0)
		rc = flush_chunk(&imp);
	drop_chunk(&imp);
	free(imp.chunk);
	if (rc < 0 && r->error == NULL)
		rc = report_failure(r, NULL, NULL); /* e.g. the document changed under us */
	free_names(names, r->written.count, count);
	if (rc == IMPORT_STOPPED || r->error != NULL)
		rc = 0;
	if (rc == 0 && r->error == NULL)
		rc = delete_stale(s, imp.w, &stale, r);
	faucet_strarray_dispose(&stale);
	return rc;
}

/* ---- import of a document in memory ----------------------------------- */

static int source_export(importer *imp, void *src)
{
	const faucet_export *e = src;

	for (size_t i = 0; i < e->count; i++) {
		int rc;

		if (faucet__is_bookkeeping_key(e->entries[i].key))
			continue;
		if ((rc = queue_entry(imp, e->entries[i].value)) != 0)
			return rc;
	}
	return 0;
}

static int copy_names(const faucet_export *e, char ***names, size_t *count)
{
	*names = NULL;
	*count = 0;
	if (e->count == 0)
		return 0;
	*names = faucet__calloc(e->count, sizeof(**names));
	if (*names == NULL)
		return FAUCET_ENOMEM;
	for (size_t i = 0; i < e->count; i++) {
		if (faucet__is_bookkeeping_key(e->entries[i].key))
			continue;
		(*names)[*count] = faucet__strdup(e->entries[i].key);
		if ((*names)[*count] == NULL) {
			free_names(*names, 0, *count);
			free(*names);
			*names = NULL;
			*count = 0;
			return FAUCET_ENOMEM;
		}
		++*count;
	}
	return 0;
}

/* Each version's size of faucet_import_options. */
static const size_t import_options_sizes[] = {sizeof(faucet_import_options)};

int faucet_import_options_init(faucet_import_options *o, unsigned int version)
{
	static const faucet_import_options defaults = FAUCET_IMPORT_OPTIONS_INIT;

	return faucet__options_init(o, &defaults, import_options_sizes, version,
				    FAUCET_IMPORT_OPTIONS_VERSION, "faucet_import_options");
}

/* The caller's options (NULL = the defaults) as the current struct. */
static int load_import_options(faucet_import_options *o, const faucet_import_options *caller)
{
	faucet_import_options defaults = FAUCET_IMPORT_OPTIONS_INIT;

	if (caller == NULL) {
		*o = defaults;
		return 0;
	}
	return faucet__options_load(o, sizeof(*o), caller, import_options_sizes,
				    FAUCET_IMPORT_OPTIONS_VERSION,
				    "faucet_import_options");
}

int faucet_import_namespace_ex(faucet_store *s, const faucet_export *e,
			       const faucet_import_options *opts, faucet_import_report *report)
{
	faucet_import_options o;
	char **names = NULL;
	size_t count = 0;
	int rc;

	if (report == NULL || s == NULL || e == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_import_namespace: NULL argument");
	memset(report, 0, sizeof(*report));
	rc = load_import_options(&o, opts);
	if (rc == 0)
		rc = faucet_export_validate(e);
	if (rc == 0)
		rc = copy_names(e, &names, &count);
	if (rc != 0)
		return rc;
	return run_import(s, e->pipeline, names, count, &o, NULL, source_export, (void *)e,
			  report);
}

int faucet_import_namespace(faucet_store *s, const faucet_export *e, int replace,
			    faucet_import_report *report)
{
	/* This call always allowed emptying a namespace; it keeps doing so. */
	faucet_import_options o = FAUCET_IMPORT_OPTIONS_INIT;

	o.replace = replace;
	o.allow_empty = 1;

	return faucet_import_namespace_ex(s, e, &o, report);
}

/* ---- import of a document in a file ---------------------------------- */

/* First pass: every value checked, every name kept. */
typedef struct {
	char **names;
	size_t count, cap;
} name_list;

static int check_entry(void *ctx, const char *key, const char *text, size_t len,
		       uint64_t offset)
{
	name_list *l = ctx;
	faucet_json_check_result res;
	char **grown, *copy;

	if (faucet__json_check(text, len, "state export value", &res) != 0)
		return faucet__error_wrap("state export key '%s' (value at byte %llu)", key,
					  (unsigned long long)offset);
	if (refuse_bookkeeping(key) != 0)
		return FAUCET_EINVALID;
	if (l->count == l->cap) {
		grown = faucet__reserve(l->names, &l->cap, l->count + 1, sizeof(*l->names), 1024);
		if (grown == NULL)
			return FAUCET_ENOMEM;
		l->names = grown;
	}
	if ((copy = faucet__strdup(key)) == NULL)
		return FAUCET_ENOMEM;
	l->names[l->count++] = copy;
	return 0;
}

/* Second pass: the values, in the order the first pass saw them. */
static int write_entry(void *ctx, const char *key, const char *text, size_t len,
		       uint64_t offset)
{
	importer *imp = ctx;
	faucet_value *v;
	int rc;

	if (faucet__is_bookkeeping_key(key))
		return 0;
	if (imp->next >= imp->count || strcmp(imp->names[imp->next], key) != 0)
		return faucet_error_set(FAUCET_ERROR,
					"the export document changed while it was imported "
					"(at byte %llu)", (unsigned long long)offset);
	rc = parse_entry_value(key, text, len, offset, &v);
	if (rc != 0)
		return rc;
	return queue_entry(imp, v);
}

typedef struct {
	FILE *in;
	long start;
} file_source;

static int source_file(importer *imp, void *src)
{
	file_source *fs = src;
	faucet__doc_header h;
	int rc;

	imp->own_values = 1;
	if (fseek(fs->in, fs->start, SEEK_SET) != 0)
		return faucet__error_os(FAUCET_EIO, errno, "cannot re-read the export document");
	rc = faucet__doc_walk_file(fs->in, write_entry, imp, &h);
	faucet__doc_header_dispose(&h);
	if (rc == 0 && imp->next != imp->count)
		rc = faucet_error_set(FAUCET_ERROR, "the export document changed while it was imported");
	return rc;
}

int faucet_import_file(faucet_store *s, FILE *in, const faucet_import_options *opts,
		       faucet_import_report *report)
{
	return faucet__import_file_via(s, in, opts, NULL, report);
}

int faucet__import_file_via(faucet_store *s, FILE *in, const faucet_import_options *opts,
			    const faucet__import_writer *w, faucet_import_report *report)
{
	faucet_import_options o;
	faucet__doc_header h;
	name_list l = {NULL, 0, 0};
	file_source fs;
	char **sorted = NULL;
	int rc;

	if (report == NULL || s == NULL || in == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_import_file: NULL argument");
	memset(report, 0, sizeof(*report));
	rc = load_import_options(&o, opts);
	if (rc != 0)
		return rc;
	fs.in = in;
	fs.start = ftell(in);
	if (fs.start < 0)
		return faucet__error_os(FAUCET_EIO, errno,
					"the export document must be a seekable file");
	rc = faucet__doc_walk_file(in, check_entry, &l, &h);
	if (rc == 0)
		rc = validate_pipeline(h.pipeline);
	for (size_t i = 0; rc == 0 && i < l.count; i++)
		rc = validate_member(h.pipeline, strlen(h.pipeline), l.names[i]);
	/* Duplicates are refused here too, before anything is written. */
	if (rc == 0 && (rc = sort_names(l.names, l.count, &sorted)) == 0)
		free(sorted);
	if (rc != 0) {
		free_names(l.names, 0, l.count);
		free(l.names);
		faucet__doc_header_dispose(&h);
		return rc;
	}
	report->pipeline = h.pipeline;
	free(h.exported_at);
	return run_import(s, report->pipeline, l.names, l.count, &o, w, source_file, &fs, report);
}
