/*
 * internal.h - helpers shared by every module of libfaucet (not installed).
 *
 * Allocation helpers set the last error to FAUCET_ENOMEM when they fail, so
 * a caller only has to propagate the NULL.  A growable byte buffer serves
 * every place that assembles text (keys, paths, documents).
 */
#ifndef FAUCET_INTERNAL_H
#define FAUCET_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <faucet/common.h>

#define FAUCET_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

void *faucet__malloc(size_t n);
void *faucet__calloc(size_t count, size_t size);
void *faucet__realloc(void *p, size_t n);
char *faucet__strdup(const char *s);
/* Grow an array of `size`-byte elements whose capacity is *cap so that it
 * holds at least `need` (>= 1), doubling from `first`.  Returns the array,
 * moved or not, or NULL when out of memory (then nothing changed). */
void *faucet__reserve(void *items, size_t *cap, size_t need, size_t size, size_t first);
char *faucet__strndup(const char *s, size_t n);
char *faucet__sprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* For the tests only (this header is not installed): make the n-th call
 * from now of faucet__malloc/calloc/realloc (and of everything built on
 * them) fail as out of memory, later ones succeed again; 0 turns it off.
 * faucet__alloc_failed says whether that failure happened since. */
void faucet__alloc_fail_at(long n);
int faucet__alloc_failed(void);

/* Read a caller's versioned options struct `src` (public options structs
 * start with `unsigned version`) into `dst`, the library's current struct of
 * `dst_size` bytes: sizes[v - 1] is the size of version v, for v = 1 up to
 * `current`.  An older version's missing fields are left zero (their
 * defaults); dst->version becomes `current`.  Version 0 or one above
 * `current` is FAUCET_EINVALID naming `what`. */
int faucet__options_load(void *dst, size_t dst_size, const void *src, const size_t *sizes,
			 unsigned current, const char *what);

/* Set the last error from errno-style `err` with a printf-style prefix:
 * "{prefix}: {strerror(err)}".  Returns `code`. */
int faucet__error_os(int code, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Prepend context to the current last error ("{context}: {old message}"),
 * keeping its code.  Returns that code. */
int faucet__error_wrap(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A growable NUL-terminated byte buffer. */
typedef struct {
	char *ptr;
	size_t len;
	size_t cap;
	int failed; /* an allocation failed; the content is incomplete */
} faucet_buf;

#define FAUCET_BUF_INIT {NULL, 0, 0, 0}

int faucet_buf_grow(faucet_buf *b, size_t extra);
int faucet_buf_put(faucet_buf *b, const char *data, size_t len);
int faucet_buf_puts(faucet_buf *b, const char *s);
int faucet_buf_putc(faucet_buf *b, char c);
int faucet_buf_printf(faucet_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append `s` as a JSON string, quoted and escaped ("null" for NULL); a
 * failure shows in b->failed. */
void faucet__json_string(faucet_buf *b, const char *s);
/* Hand the buffer's string to the caller (never NULL unless failed). */
char *faucet_buf_detach(faucet_buf *b);
void faucet_buf_dispose(faucet_buf *b);

/* Binary search of `count` elements of `stride` bytes, each starting with
 * its `char *` name, sorted by strcmp: the index of `name`, or where it
 * would be inserted; *found says which.  Appending in order is cheap: the
 * last element is looked at first. */
size_t faucet__find_sorted(const void *base, size_t count, size_t stride, const char *name,
			   int *found);
/* Whether `count` elements laid out as for faucet__find_sorted are in
 * strcmp order already (duplicates allowed): a sort can then be skipped. */
int faucet__names_sorted(const void *base, size_t count, size_t stride);
/* The same, looking first at *near and the element after it (then
 * updated to the answer): keys met in order - an import, a run's end -
 * are found in one or two comparisons instead of twenty. */
size_t faucet__find_sorted_near(const void *base, size_t count, size_t stride, const char *name,
				size_t *near, int *found);

/* Append one string to a strarray (copied). */
int faucet_strarray_push(faucet_strarray *arr, const char *s);
/* Append one string to a strarray, taking ownership (freed on failure). */
int faucet_strarray_push_owned(faucet_strarray *arr, char *s);
/* Sort by strcmp and drop duplicates. */
void faucet_strarray_sort_unique(faucet_strarray *arr);

/* The value of one hexadecimal digit (either case), or -1. */
int faucet__hex_digit(char c);

/* Monotonic milliseconds / nanoseconds. */
uint64_t faucet__now_ms(void);
uint64_t faucet__now_ns(void);

/* Fill `buf` with `n` bytes from the kernel's CSPRNG. */
int faucet__random_bytes(void *buf, size_t n);

/* Write `n` random bytes as 2n lower-case hex digits + NUL into out. */
int faucet__random_hex(char *out, size_t n);

/* "{host}:{pid}:{16 random hex}": who holds a lease (backfill units and
 * invocation runs alike).  Caller frees; NULL when out of memory. */
char *faucet__holder_id(void);
/* Whether the process behind a holder id is known to be gone: the id names
 * this host and no process has its pid.  0 when alive, on another host
 * (only a lease's expiry tells then) or not a holder id. */
int faucet__holder_dead(const char *holder);

#endif
