/*
 * util.h - the helpers below every module, shared by libfaucet and the
 * `faucet` command (not installed).
 *
 * Both link the same objects (the command links libfaucet.a), so there is
 * one allocator, one buffer, one JSON string writer and one last error.
 * One rule makes them easy to use: a helper that runs out of memory sets
 * the last error to FAUCET_ENOMEM, so a caller only passes the NULL or the
 * code on.  scripts/check-layers.sh lets the command use this module and
 * the public API, nothing else of the library.
 */
#ifndef FAUCET_UTIL_H
#define FAUCET_UTIL_H

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
/* The same from a va_list (which it leaves used). */
char *faucet__vsprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

/* For the tests only (this header is not installed): make the n-th call
 * from now of faucet__malloc/calloc/realloc (and of everything built on
 * them) fail as out of memory, later ones succeed again; 0 turns it off.
 * faucet__alloc_failed says whether that failure happened since. */
void faucet__alloc_fail_at(long n);
int faucet__alloc_failed(void);

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

int faucet__buf_grow(faucet_buf *b, size_t extra);
int faucet__buf_put(faucet_buf *b, const char *data, size_t len);
int faucet__buf_puts(faucet_buf *b, const char *s);
int faucet__buf_putc(faucet_buf *b, char c);
int faucet__buf_printf(faucet_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append n in decimal (what "%" PRIu64 gives, without printf's cost). */
int faucet__buf_put_uint(faucet_buf *b, uint64_t n);
/* Append `s` as a JSON string, quoted and escaped ("null" for NULL); a
 * failure shows in b->failed. */
void faucet__json_string(faucet_buf *b, const char *s);
/* Hand the buffer's string to the caller (never NULL unless failed). */
char *faucet__buf_detach(faucet_buf *b);
void faucet__buf_dispose(faucet_buf *b);

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

/* Append one string to a strarray (copied) / taking ownership (freed on
 * failure).  For arrays grown by these from empty only: capacity is
 * assumed to be the next power of two above the count. */
int faucet__strarray_push(faucet_strarray *arr, const char *s);
int faucet__strarray_push_owned(faucet_strarray *arr, char *s);
/* The same for an array of any origin (one the library returned): grows
 * by exactly one.  `s` NULL (an allocation that failed) is FAUCET_ENOMEM. */
int faucet__strarray_append(faucet_strarray *arr, const char *s);
int faucet__strarray_append_owned(faucet_strarray *arr, char *s);
/* Sort by strcmp and drop duplicates. */
void faucet__strarray_sort_unique(faucet_strarray *arr);

/* The value of one hexadecimal digit (either case), or -1. */
int faucet__hex_digit(char c);

/* Monotonic milliseconds / nanoseconds. */
/* "YYYY-MM-DDTHH:MM:SS+00:00" (or with "Z"), as faucet_utc_text writes it,
 * in Unix seconds; -1 when `text` is NULL or not such a time. */
int64_t faucet__utc_parse(const char *text);
uint64_t faucet__now_ms(void);
uint64_t faucet__now_ns(void);

/* Fill `buf` with `n` bytes from the kernel's CSPRNG. */
int faucet__random_bytes(void *buf, size_t n);

/* Write `n` random bytes as 2n lower-case hex digits + NUL into out. */
int faucet__random_hex(char *out, size_t n);

/* "Did you mean" (suggest.c): the candidate nearest to `word` that could be
 * a typo of it (a small edit distance, or `word` is its prefix), or NULL.
 * Every suggestion comes from here: commands, options, backend types, URL
 * schemes, YAML fields, time zones. */
const char *faucet__suggest(const char *word, const char *const *candidates, size_t n);

/* The system zone nearest to the unknown zone `name`, or NULL (caller frees). */
char *faucet__suggest_zone(const char *name);

#endif
