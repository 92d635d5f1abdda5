/*
 * export_internal.h - the export-document reader shared by
 * faucet_export_parse() (a document in memory) and the streaming import
 * (a document in a file, read in blocks), and the seam through which a run
 * makes an import's writes (not installed).
 */
#ifndef FAUCET_EXPORT_INTERNAL_H
#define FAUCET_EXPORT_INTERNAL_H

#include <stdint.h>
#include <stdio.h>

#include "internal.h"
#include <faucet/store.h>

/* What the reader found outside `keys`; owned by the caller of the walk
 * (free with faucet__doc_header_dispose), valid after a successful walk. */
typedef struct {
	char *pipeline;    /* decoded */
	char *exported_at; /* decoded, NULL when absent or null */
} faucet__doc_header;

void faucet__doc_header_dispose(faucet__doc_header *h);

/* Called for each member of `keys`, in document order: the decoded name and
 * the raw text of its value (not yet checked: the callee checks it exactly
 * as a put would, so a value is judged on its own depth, not the
 * document's).  `offset` is the value's byte offset in the document.
 * Return 0 to go on, a FAUCET_E* error, or a positive number to stop the
 * walk (it is returned as is). */
typedef int (*faucet__doc_entry_fn)(void *ctx, const char *key, const char *text, size_t len,
				    uint64_t offset);

/* Walk a document held in memory / read from `f` (from its current
 * position to its end; a read error is FAUCET_EIO).  Only one value's text
 * is held at a time.  The header is checked once the whole document has
 * been seen: version present and supported, pipeline a string, exported_at
 * a string or null.  Errors are FAUCET_EINVALID naming the byte offset. */
int faucet__doc_walk_memory(const char *text, size_t len, faucet__doc_entry_fn fn, void *ctx,
			    faucet__doc_header *header);
int faucet__doc_walk_file(FILE *f, faucet__doc_entry_fn fn, void *ctx,
			  faucet__doc_header *header);

/* Where an import's writes go when they are not plain store writes: the
 * run module's recorded import (faucet_import_file_recorded, src/run/)
 * plugs a run in here, which keeps this module free of calls into the
 * module above it.  begin is called once, before the first write, with
 * every key that will change (the document's keys in document order, then
 * the stale keys a replace deletes); *active = 0 means plain writes after
 * all.  The other slots have the contracts of faucet_store_put_batch,
 * faucet__store_put_prefix and faucet_store_delete. */
typedef struct {
	int (*begin)(void *ctx, const char *pipeline, const char *const *names, size_t count,
		     const char *const *stale, size_t nstale, int *active);
	int (*put_batch)(void *ctx, const faucet_entry *entries, size_t count);
	int (*put_prefix)(void *ctx, const faucet_entry *entries, size_t count, size_t *written,
			  size_t *unknown_from);
	int (*del)(void *ctx, const char *key);
	void *ctx;
	size_t chunk; /* the most keys a chunk of the writer's holds; 0: any */
} faucet__import_writer;

/* The checks export.c and import.c share (each sets the last error):
 * a pipeline name; a document member's key inside pipeline[0, plen); run
 * bookkeeping refused in a document; a key given twice. */
int faucet__export_validate_pipeline(const char *pipeline);
int faucet__export_validate_member(const char *pipeline, size_t plen, const char *key);
int faucet__export_refuse_bookkeeping(const char *key);
int faucet__export_duplicate_key(const char *key);

/* Parse one member's value text as a put would (own tree; caller frees). */
int faucet__export_parse_entry_value(const char *key, const char *text, size_t len,
				     uint64_t offset, faucet_value **out);

/* Drop run bookkeeping keys from `keys`, in place. */
void faucet__export_drop_bookkeeping(faucet_strarray *keys);

/* The keys an import writes at a time: FAUCET_IMPORT_CHUNK, or a smaller
 * number from 1 up given by the environment's FAUCET_TEST_IMPORT_CHUNK, with
 * which tests (the contract suite, the history checker) cover many chunks -
 * a big import's marker parts - with few keys. */
size_t faucet__import_chunk(void);

/* faucet_import_file() with its writes made through `w` (NULL = the store). */
int faucet__import_file_via(faucet_store *s, FILE *in, const faucet_import_options *opts,
			    const faucet__import_writer *w, faucet_import_report *report);

/* Check a caller's report is of a version this library knows and empty it,
 * keeping its version (import.c); FAUCET_EINVALID, nothing written, when not. */
int faucet__import_report_start(faucet_import_report *r);

#endif
