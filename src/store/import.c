/*
 * import.c - writing an export document (export.c) into a store, from
 * memory (faucet_import_namespace*) or from a file (faucet_import_file).
 *
 * Decisions that shape this file:
 *   - An import from a file reads the document twice: first to validate all
 *     of it (an invalid or truncated document writes nothing), then to
 *     write it FAUCET_IMPORT_CHUNK keys at a time.  Only the keys' names
 *     stay in memory throughout.
 *   - The import report says what is true of the store after a failure: a
 *     write that returned FAUCET_EUNKNOWN may have landed, so it is listed
 *     as written and marked durability_unknown.
 *   - A run records the import through the writer seam of
 *     export_internal.h (src/run/import.c), so this module never calls up
 *     into the run module.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include <faucet/store.h>
#include "values/value_internal.h"
#include "export_internal.h"
#include "values/json_check.h"
#include "open_internal.h"
#include "keys/bookkeeping.h"
#include <faucet/keys.h>

/* Each version's size of faucet_import_report: what a caller of that
 * version allocated, so the library writes no further. */
static const size_t report_sizes[] = {sizeof(faucet_import_report)};

int faucet_import_report_init(faucet_import_report *r, unsigned int version)
{
	static const faucet_import_report empty = FAUCET_IMPORT_REPORT_INIT;

	return faucet__options_init(r, &empty, report_sizes, version, FAUCET_IMPORT_REPORT_VERSION,
				    "faucet_import_report");
}

/* Empty a caller's report of a version this library knows, keeping its
 * version: 0, or FAUCET_EINVALID (nothing written) for version 0 or a newer
 * one.  Every import starts here. */
int faucet__import_report_start(faucet_import_report *r)
{
	unsigned version;

	if (faucet__options_check(r, FAUCET_IMPORT_REPORT_VERSION, "faucet_import_report") != 0)
		return FAUCET_EINVALID;
	version = r->version;
	memset(r, 0, report_sizes[version - 1]);
	r->version = version;
	return 0;
}

void faucet_import_report_dispose(faucet_import_report *r)
{
	unsigned version;

	if (r == NULL || r->version < 1 || r->version > FAUCET_IMPORT_REPORT_VERSION)
		return;
	faucet_strarray_dispose(&r->written);
	faucet_strarray_dispose(&r->durability_unknown);
	faucet_strarray_dispose(&r->deleted);
	free(r->error);
	free(r->pipeline);
	version = r->version;
	memset(r, 0, report_sizes[version - 1]);
	r->version = version;
}

/* An import in progress.  The document's keys (in document order) are
 * known before anything is written; report->written takes them over and
 * counts how many have landed, so it never needs to allocate after a
 * failure.  Values pass through in chunks of at most FAUCET_IMPORT_CHUNK
 * (faucet__import_chunk()). */
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
	size_t max;            /* entries a chunk holds: faucet__import_chunk() */
	const faucet__import_writer *w; /* the writes go through it, or NULL */
} importer;

#define IMPORT_STOPPED 1 /* a write failed: the report says so */

size_t faucet__import_chunk(void)
{
	const char *e = getenv("FAUCET_TEST_IMPORT_CHUNK");
	char *end = NULL;
	unsigned long n;

	if (e == NULL || *e < '1' || *e > '9')
		return FAUCET_IMPORT_CHUNK;
	errno = 0;
	n = strtoul(e, &end, 10);
	if (errno != 0 || *end != '\0' || n > FAUCET_IMPORT_CHUNK)
		return FAUCET_IMPORT_CHUNK;
	return (size_t)n;
}

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
		if (faucet__strarray_push(&imp->r->durability_unknown, imp->names[i]) != 0)
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
		/* The key that failed, or the first whose durability is unknown;
		 * a run's chunk that landed not at all was written as one batch
		 * (compared first), whose error names the key it failed at. */
		if (imp->w != NULL && landed == 0 && unknown_from == 0 && imp->n > 1 &&
		    rc != FAUCET_EUNKNOWN) {
			char what[64];

			(void)snprintf(what, sizeof(what), "writing a chunk of %zu keys from",
				       imp->n);
			stop = report_failure(imp->r, what, imp->chunk[0].key);
		} else {
			stop = report_failure(
				imp->r, "writing",
				imp->chunk[rc == FAUCET_EUNKNOWN || landed >= imp->n ? unknown_from
										   : landed]
					.key);
		}
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
	return imp->n == imp->max ? flush_chunk(imp) : 0;
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
	size_t i;

	*sorted = NULL;
	if (count == 0)
		return 0;
	*sorted = faucet__malloc(count * sizeof(**sorted));
	if (*sorted == NULL)
		return FAUCET_ENOMEM;
	memcpy(*sorted, names, count * sizeof(**sorted));
	/* An export document lists its keys in strictly increasing order: one
	 * pass says so, and then there is neither a sort nor a duplicate. */
	for (i = 1; i < count && strcmp((*sorted)[i - 1], (*sorted)[i]) < 0; i++)
		;
	if (i == count)
		return 0;
	qsort(*sorted, count, sizeof(**sorted), compare_names);
	for (i = 1; i < count; i++) {
		if (strcmp((*sorted)[i - 1], (*sorted)[i]) == 0) {
			int rc = faucet__export_duplicate_key((*sorted)[i]);
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
	faucet__export_drop_bookkeeping(&listed);
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
	memset(&imp, 0, sizeof(imp));
	imp.max = faucet__import_chunk();
	if (w != NULL && w->chunk > 0 && w->chunk < imp.max)
		imp.max = w->chunk;
	r->atomic = faucet_store_supports_atomic_batch(s) && count <= imp.max;
	if (o->dry_run) {
		r->dry_run = 1;
		r->written.count = count;
		r->deleted = stale;
		return 0;
	}
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
	imp.chunk = faucet__calloc(count < imp.max ? (count ? count : 1) : imp.max,
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

	for (size_t i = 0; i < faucet_export_count(e); i++) {
		int rc;

		if (faucet__is_bookkeeping_key(faucet_export_key_at(e, i)))
			continue;
		if ((rc = queue_entry(imp, faucet_export_value_at(e, i))) != 0)
			return rc;
	}
	return 0;
}

static int copy_names(const faucet_export *e, char ***names, size_t *count)
{
	*names = NULL;
	*count = 0;
	if (faucet_export_count(e) == 0)
		return 0;
	*names = faucet__calloc(faucet_export_count(e), sizeof(**names));
	if (*names == NULL)
		return FAUCET_ENOMEM;
	for (size_t i = 0; i < faucet_export_count(e); i++) {
		if (faucet__is_bookkeeping_key(faucet_export_key_at(e, i)))
			continue;
		(*names)[*count] = faucet__strdup(faucet_export_key_at(e, i));
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
	rc = faucet__import_report_start(report);
	if (rc != 0)
		return rc;
	rc = load_import_options(&o, opts);
	if (rc == 0)
		rc = faucet_export_validate(e);
	if (rc == 0)
		rc = copy_names(e, &names, &count);
	if (rc != 0)
		return rc;
	return run_import(s, faucet_export_pipeline(e), names, count, &o, NULL, source_export, (void *)e,
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
	if (faucet__export_refuse_bookkeeping(key) != 0)
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
	rc = faucet__export_parse_entry_value(key, text, len, offset, &v);
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
	rc = faucet__import_report_start(report);
	if (rc != 0)
		return rc;
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
		rc = faucet__export_validate_pipeline(h.pipeline);
	for (size_t i = 0; rc == 0 && i < l.count; i++)
		rc = faucet__export_validate_member(h.pipeline, strlen(h.pipeline), l.names[i]);
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
