/*
 * stream.c - export and import through the caller's read and write
 * functions (faucet_export_write_to, faucet_import_read), for a binding or
 * an embedder whose bytes do not live in a FILE: a socket, an object-store
 * upload, a Python file object.
 *
 * Each is the FILE* call it mirrors over a stream of glibc's fopencookie(),
 * whose functions call the caller's: one writer and one reader of the
 * document format, not two.  The caller's failure code is kept and
 * returned as it was, not as the FAUCET_EIO the stdio layer would make of
 * it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include <faucet/store.h>

typedef struct {
	faucet_write_fn write;
	faucet_read_fn read;
	faucet_rewind_fn rewind;
	void *ctx;
	long long pos; /* bytes read since the last rewind */
	int code;      /* the caller's failure, 0 while none */
} stream;

static ssize_t stream_write(void *cookie, const char *buf, size_t size)
{
	stream *st = cookie;
	int rc = st->code != 0 ? st->code : st->write(buf, size, st->ctx);

	if (rc < 0) {
		st->code = rc;
		errno = EIO;
		return 0; /* fopencookie: 0 is a failed write */
	}
	return (ssize_t)size;
}

static ssize_t stream_read(void *cookie, char *buf, size_t size)
{
	stream *st = cookie;
	ptrdiff_t n = st->code != 0 ? st->code : st->read(buf, size, st->ctx);

	if (n < 0 || (size_t)n > size) {
		st->code = n < 0 ? (int)n : FAUCET_EINVALID;
		if (n >= 0)
			(void)faucet_error_set(FAUCET_EINVALID,
					       "the read function returned %td bytes for a buffer "
					       "of %zu",
					       n, size);
		errno = EIO;
		return -1;
	}
	st->pos += n;
	return n;
}

/* Only what an import asks: where it is (ftell) and back to the start. */
static int stream_seek(void *cookie, off64_t *offset, int whence)
{
	stream *st = cookie;
	int rc;

	if (whence == SEEK_CUR && *offset == 0) {
		*offset = st->pos;
		return 0;
	}
	if (whence != SEEK_SET || *offset != 0 || st->rewind == NULL) {
		errno = EINVAL;
		return -1;
	}
	rc = st->code != 0 ? st->code : st->rewind(st->ctx);
	if (rc < 0) {
		st->code = rc;
		errno = EIO;
		return -1;
	}
	st->pos = 0;
	return 0;
}

/* The caller's code when its function failed (with its message, or one
 * saying which function), else rc as it is. */
static int callers_code(const stream *st, int rc, const char *what)
{
	if (st->code == 0)
		return rc;
	if (faucet_error_last()->code != st->code)
		(void)faucet_error_set(st->code, "the %s function failed (%s)", what,
				       faucet_error_name(st->code));
	return st->code;
}

int faucet_export_write_to(faucet_store *s, const char *pipeline, const char *exported_at,
			   int pretty, faucet_write_fn write, void *ctx, size_t *count)
{
	cookie_io_functions_t io = {.write = stream_write};
	stream st = {write, NULL, NULL, ctx, 0, 0};
	FILE *out;
	int rc, closed;

	if (count != NULL)
		*count = 0;
	if (write == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_export_write_to: write is NULL");
	out = fopencookie(&st, "w", io);
	if (out == NULL)
		return faucet__error_os(FAUCET_ENOMEM, errno, "cannot set up the export stream");
	rc = faucet_export_write(s, pipeline, exported_at, pretty, out, count);
	/* What stdio still buffers reaches `write` here. */
	closed = fclose(out);
	if (st.code != 0) {
		if (count != NULL)
			*count = 0;
		return callers_code(&st, rc, "write");
	}
	if (rc == 0 && closed != 0)
		rc = faucet__error_os(FAUCET_EIO, errno, "cannot finish the export stream");
	return rc;
}

int faucet_import_read(faucet_store *s, faucet_read_fn read, faucet_rewind_fn rewind,
		       void *ctx, const faucet_import_options *opts, faucet_import_report *report)
{
	cookie_io_functions_t io = {.read = stream_read, .seek = stream_seek};
	stream st = {NULL, read, rewind, ctx, 0, 0};
	FILE *in;
	int rc;

	if (read == NULL || rewind == NULL)
		return faucet_error_set(FAUCET_EINVALID,
					"faucet_import_read: read and rewind are required");
	in = fopencookie(&st, "r", io);
	if (in == NULL)
		return faucet__error_os(FAUCET_ENOMEM, errno, "cannot set up the import stream");
	rc = faucet_import_file(s, in, opts, report);
	(void)fclose(in);
	/* A failure while writing is the report's, as for a FILE: with the
	 * caller's code in it. */
	if (rc == 0 && st.code != 0 && report->error != NULL)
		report->error_code = st.code;
	return rc == 0 ? 0 : callers_code(&st, rc, "read or rewind");
}
