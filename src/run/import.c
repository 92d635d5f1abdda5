/*
 * import.c - an import recorded as one run: faucet_import_file_recorded().
 *
 * The store module reads, validates and writes the document
 * (faucet__import_file_via); this file plugs the run in through that
 * import's writer seam, so the store module never calls up into this one.
 *
 * The run is begun once every key the import will change is known (the
 * document is validated whole first): the run of the invocation they all
 * belong to, else a pipeline-level run - the caller's hook decides, given
 * that row.
 *
 * The first chunk's before-images go into the run's marker as any batch's
 * do.  Each later chunk is recorded in a marker part of its own - its
 * keys' before-images, read just before it, and the values it writes -
 * written once, with the chunk in one compare-and-put batch where the
 * backend's batch holds both (else just before it), and never rewritten
 * (faucet_run__put_part, doc/design.md §8.2, §8.6): the marker then costs
 * what its images weigh, where
 * one document rewritten at every chunk made an import of N keys write
 * O(N^2) bytes of marker.
 *
 * A run that cannot part (one others may join) records ahead instead, a
 * window at a time, the window as large as what is recorded already:
 * doubling windows write less than twice the final marker in all.  The
 * price there: a key's before-image may be read up to one window before
 * the key is written (read again just before the write, see
 * read_ahead_again in run.c).  A key recorded but never written (the
 * import stopped first) is left alone by undo (see faucet_run__record).
 * Stale keys, deleted one at a time after the chunks, are recorded that
 * way too.
 */
#include <string.h>

#include "run/run_internal.h"
#include "store/export_internal.h"
#include "store/open_internal.h"

typedef struct {
	const faucet_import_run_hook *hook;
	faucet_store *s;
	faucet_run *run; /* handed to the hook's caller, who ends and frees it */
	const char *const *names, *const *stale; /* borrowed from the import */
	size_t count, nstale;
	size_t done, sdone;   /* names / stale keys handed to the writes so far */
	size_t ahead, sahead; /* names / stale keys recorded so far */
	size_t window_min;    /* the smallest window: the import's own chunk */
} recorded_import;


/* Record keys[from..] ahead, unless keys[from, from + n) are recorded
 * already.  A failure here is left to the writes themselves, which record
 * what they write and fail at the exact key, as without the window. */
static void record_ahead(recorded_import *ri, const char *const *keys, size_t total, size_t from,
			 size_t n, size_t *ahead)
{
	size_t recorded = ri->ahead + ri->sahead, w;

	if (from + n <= *ahead)
		return;
	w = recorded > ri->window_min ? recorded : ri->window_min;
	w = w > n ? w : n;
	w = w < total - from ? w : total - from;
	if (faucet_run__record(ri->run, keys + from, w) == 0)
		*ahead = from + w;
}

static int ri_begin(void *arg, const char *pipeline, const char *const *names, size_t count,
		    const char *const *stale, size_t nstale, int *active)
{
	recorded_import *ri = arg;
	const faucet_import_run_hook *h = ri->hook;
	run_scope sc;
	int rc = 0;

	*active = 0;
	if (h->begin_run == NULL)
		return 0;
	faucet_run__scope_init(&sc);
	for (size_t i = 0; i < count && rc == 0; i++)
		rc = faucet_run__scope_add(&sc, names[i]);
	for (size_t i = 0; i < nstale && rc == 0; i++)
		rc = faucet_run__scope_add(&sc, stale[i]);
	if (rc == 0)
		rc = h->begin_run(h->ctx, pipeline, sc.any && !sc.spans ? sc.row : NULL, &ri->run);
	faucet_run__scope_dispose(&sc);
	*active = rc == 0 && ri->run != NULL;
	ri->names = names;
	ri->count = count;
	ri->stale = stale;
	ri->nstale = nstale;
	return rc;
}

static int ri_put_batch(void *arg, const faucet_entry *entries, size_t count)
{
	recorded_import *ri = arg;
	int part = ri->done > 0 && faucet_run__can_part(ri->run, entries, count);

	if (!part)
		record_ahead(ri, ri->names, ri->count, ri->done, count, &ri->ahead);
	ri->done += count;
	if (part)
		return faucet_run__put_part(ri->run, entries, count, NULL, NULL);
	return faucet_run_put_batch(ri->run, entries, count);
}

static int ri_put_prefix(void *arg, const faucet_entry *entries, size_t count, size_t *written,
			 size_t *unknown_from)
{
	recorded_import *ri = arg;
	int part = ri->done > 0 && faucet_run__can_part(ri->run, entries, count);

	if (!part)
		record_ahead(ri, ri->names, ri->count, ri->done, count, &ri->ahead);
	ri->done += count;
	if (part)
		return faucet_run__put_part(ri->run, entries, count, written, unknown_from);
	return faucet_run__put_prefix(ri->run, entries, count, written, unknown_from);
}

static int ri_delete(void *arg, const char *key)
{
	recorded_import *ri = arg;

	/* Stale keys are deleted one at a time, in order. */
	if (ri->sdone < ri->nstale && strcmp(ri->stale[ri->sdone], key) == 0) {
		record_ahead(ri, ri->stale, ri->nstale, ri->sdone, 1, &ri->sahead);
		ri->sdone++;
	}
	return faucet_run_delete(ri->run, key);
}

/* A chunk small enough that it and its marker part are one compare-and-put
 * batch of the store's (design §8.2), on a store whose chunks are not
 * all-or-nothing anyway: etcd's 128 operations a transaction make chunks
 * of 127 keys.  0, the import's own chunk, where the batch holds one
 * (SQLite, PostgreSQL, memory), there is none (the file store), or a
 * smaller chunk would cost the chunk's all-or-nothing write (Redis). */
static size_t ri_chunk(const faucet_store *s)
{
	size_t max = faucet__store_cas_batch_max(s);

	if (faucet_store_supports_atomic_batch(s) || max < 2)
		return 0;
	return max - 1 < faucet__import_chunk() ? max - 1 : 0;
}

int faucet_import_file_recorded(faucet_store *s, FILE *in, const faucet_import_options *opts,
				const faucet_import_run_hook *hook, faucet_import_report *report)
{
	recorded_import ri;
	faucet__import_writer w;

	if (hook == NULL)
		return faucet_import_file(s, in, opts, report);
	if (hook->version != FAUCET_IMPORT_RUN_HOOK_VERSION)
		return faucet_error_set(FAUCET_EINVALID,
					"import run hook version %u is not supported (expected %u)",
					hook->version, FAUCET_IMPORT_RUN_HOOK_VERSION);
	memset(&ri, 0, sizeof(ri));
	ri.hook = hook;
	ri.s = s;
	w.begin = ri_begin;
	w.put_batch = ri_put_batch;
	w.put_prefix = ri_put_prefix;
	w.del = ri_delete;
	w.ctx = &ri;
	w.chunk = ri_chunk(s);
	ri.window_min = w.chunk ? w.chunk : faucet__import_chunk();
	return faucet__import_file_via(s, in, opts, &w, report);
}
