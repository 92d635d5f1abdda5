/*
 * faucet/common.h - error codes, the thread-local last error, string arrays.
 *
 * Every libfaucet call that can fail returns an int: 0 on success or one of
 * the negative FAUCET_E* codes below.  The human-readable reason of the most
 * recent failure on the calling thread is kept in a thread-local slot and read
 * with faucet_error_last(); it always says what failed and where (the key, the
 * file, the byte offset), and never contains key material or credentials.
 *
 * The error model (doc/design.md §10, §11):
 *   - The last error is set by a call that fails and is not cleared by one
 *     that succeeds (which may even leave behind the message of a failure it
 *     recovered from): read it only right after a call returned non-zero.
 *   - A call that fills a report returns 0 with a failure in the report when
 *     the request was valid and was carried out as far as it could go: an
 *     import whose write failed midway (faucet_import_report.error, `written`
 *     saying what landed), a backfill whose units failed
 *     (faucet_backfill_result.failed), an undo refused over a conflict
 *     (faucet_undo_result.conflict, nothing written), a doctor probe that
 *     failed (faucet_check_report_failed_count); read the report then, not
 *     the last error.
 *   - Threads: a store and the metrics registry may be used from any
 *     number of threads at once; values, time zones and backfill plans
 *     are immutable once built and may be shared freely; keys, exports,
 *     backfill markers and check reports may be read (their const calls) by
 *     several threads at once, but a thread changing one (set, mark, add)
 *     must be its only user meanwhile; a run handle is used by one thread at
 *     a time.  The last error and the last warning are per thread.
 */
#ifndef FAUCET_COMMON_H
#define FAUCET_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include "export.h"
#include <faucet/version.h> /* generated: in the build tree until installed */

#ifdef __cplusplus
extern "C" {
#endif

/* The library's version ("1.0.0"), which may differ from the headers'
 * FAUCET_VERSION_STRING when the program was compiled against other ones. */
FAUCET_EXTERN const char *faucet_version(void);

/* The library's FAUCET_VERSION_NUMBER (MAJOR * 10000 + MINOR * 100 + PATCH). */
FAUCET_EXTERN int faucet_version_number(void);

/* Return codes.  Each failure code is also the error's "class". */
typedef enum {
	FAUCET_OK = 0,
	FAUCET_ERROR = -1,        /* the operation failed (a state/store error) */
	FAUCET_EINVALID = -2,     /* bad input: invalid key, malformed JSON, bad argument */
	FAUCET_ENOTFOUND = -3,    /* the thing asked for does not exist (where it helps) */
	FAUCET_EUNSUPPORTED = -4, /* the backend cannot do this */
	FAUCET_ECONFIG = -5,      /* bad configuration: unknown store URL, bad option */
	FAUCET_EIO = -6,          /* an operating-system I/O call failed */
	FAUCET_ECRYPTO = -7,      /* a sealed file could not be opened (wrong key, tampered) */
	FAUCET_ENOMEM = -8,       /* out of memory */
	FAUCET_EBUSY = -9,        /* a lock was not had in time (file lock wait, SQLite busy) */
	FAUCET_ECONTENTION = -10, /* compare-and-put kept losing to other writers and gave up */
	FAUCET_EAUTH = -11,       /* the server refused our credentials */
	FAUCET_EUNAVAILABLE = -12,/* the server could not be reached, or the connection dropped
				     before the request was sent */
	FAUCET_ETIMEOUT = -13,    /* the operation ran out of time */
	FAUCET_EUNKNOWN = -14,    /* outcome unknown: the request may have been applied (its
				     reply was lost); read back before retrying */
	FAUCET_ELEASELOST = -15   /* the lease this write depends on was lost or taken over */
} faucet_error_code;

/* Non-zero when an operation that failed with `code` may succeed if simply
 * tried again later (busy, contention, unavailable, timeout).  Outcome
 * unknown is not retryable as such: read the state back first. */
FAUCET_EXTERN int faucet_error_retryable(int code);

/* The last error raised on this thread. */
typedef struct {
	int code;            /* one of faucet_error_code */
	const char *message; /* never NULL; "" when there is no error */
} faucet_error;

/* The calling thread's last error; valid until the next libfaucet call on
 * this thread.  Never returns NULL. */
FAUCET_EXTERN const faucet_error *faucet_error_last(void);

/* Forget the calling thread's last error. */
FAUCET_EXTERN void faucet_error_clear(void);

/* Set the calling thread's last error (printf-style) and return `code`:
 * for backends (faucet/sys/store_backend.h) and for programs that report
 * their own failures the way libfaucet reports its. */
FAUCET_EXTERN int faucet_error_set(int code, const char *fmt, ...) FAUCET_PRINTF(2, 3);

/* The calling thread's last warning: a call that succeeded but has
 * something the operator should hear (e.g. a file store delete whose lock
 * file could not be removed), or NULL.  Cleared by faucet_warning_clear();
 * valid until the next libfaucet call on this thread. */
FAUCET_EXTERN const char *faucet_warning_last(void);
FAUCET_EXTERN void faucet_warning_clear(void);

/* Short name of a code ("invalid", "io", ...), for printing. */
FAUCET_EXTERN const char *faucet_error_name(int code);

/* An owned array of NUL-terminated strings (like git_strarray). */
typedef struct {
	char **strings;
	size_t count;
} faucet_strarray;

/* Free the strings and the array; leaves *arr empty.  NULL is ignored. */
FAUCET_EXTERN void faucet_strarray_dispose(faucet_strarray *arr);

/* Write bytes[0..len) to the file `path` as faucet writes its own: a new
 * file, or an existing regular one, is replaced atomically and durably (a
 * temp file beside it, mode 0600, fsynced and renamed over it, then the
 * directory fsynced: after a crash the old content or the new, never a torn
 * file).  An existing device, FIFO, socket or symbolic link is opened and
 * written through instead, as a shell redirection would, never replaced.
 * `what` names the file in error messages ("export file"; NULL: "file"). */
FAUCET_EXTERN int faucet_write_file(const char *path, const char *what, const void *bytes,
				    size_t len);

/* Unix seconds `t` as RFC 3339 UTC, "2026-01-02T03:04:05+00:00": the form
 * run and backfill documents hold times in (doc/design.md §8.1).  Returns 0, or
 * FAUCET_EINVALID when t has no such form or does not fit in out[size]
 * (FAUCET_UTC_TEXT_SIZE always fits a year of four digits); out is then "". */
#define FAUCET_UTC_TEXT_SIZE 32
FAUCET_EXTERN int faucet_utc_text(int64_t t, char *out, size_t size);

/* Release memory returned by libfaucet as a plain char * (rendered keys,
 * JSON documents).  Same as free(); provided so callers need not know. */
FAUCET_EXTERN void faucet_free(void *ptr);

#ifdef __cplusplus
}
#endif

#endif
