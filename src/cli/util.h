/*
 * util.h - the command's own allocation and text helpers.
 *
 * The command uses libfaucet through its public API only (scripts/
 * check-layers.sh holds it to that), so the conveniences the library keeps
 * for itself - allocation that reports, a growable buffer, string-array
 * appends - exist here in the command's own small form.
 *
 * One rule makes them easy to use: a helper that runs out of memory sets
 * the library's last error to FAUCET_ENOMEM (faucet_error_set, public), as
 * the library's own helpers do.  A caller only passes the NULL or the code
 * on, and the usual cli_fail() prints "out of memory" once.
 */
#ifndef FAUCET_CLI_UTIL_H
#define FAUCET_CLI_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <faucet/common.h>

#define CLI_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* malloc/calloc/strdup/strndup that set FAUCET_ENOMEM when they fail. */
void *cli_malloc(size_t n);
void *cli_calloc(size_t count, size_t size);
char *cli_strdup(const char *s);
char *cli_strndup(const char *s, size_t n);

/* A new string formatted like printf (caller frees), or NULL. */
char *cli_sprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Grow an array of `size`-byte elements whose capacity is *cap so that it
 * holds at least `need`, doubling from `first`.  Returns the array, moved
 * or not, or NULL (then nothing changed and the array is still the
 * caller's). */
void *cli_reserve(void *items, size_t *cap, size_t need, size_t size, size_t first);

/* Set the last error to "{prefix}: {strerror(err)}" and return `code`. */
int cli_error_os(int code, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Monotonic milliseconds, for durations shown to the operator. */
uint64_t cli_now_ms(void);

/* Append a copy of `s` / `s` itself (taken, freed on failure; NULL is an
 * allocation that already failed) to a faucet_strarray, which
 * faucet_strarray_dispose releases.  0 or FAUCET_ENOMEM. */
int cli_strarray_push(faucet_strarray *arr, const char *s);
int cli_strarray_push_owned(faucet_strarray *arr, char *s);

/* A growable NUL-terminated text buffer.  After a failed append `failed`
 * is set and every later append fails too, so a caller may append a whole
 * document and check once at the end. */
typedef struct {
	char *ptr;
	size_t len;
	size_t cap;
	int failed;
} cli_buf;

#define CLI_BUF_INIT {NULL, 0, 0, 0}

/* Room for `extra` more bytes (and the NUL).  0 or FAUCET_ENOMEM. */
int cli_buf_grow(cli_buf *b, size_t extra);
int cli_buf_put(cli_buf *b, const char *data, size_t len);
int cli_buf_puts(cli_buf *b, const char *s);
int cli_buf_putc(cli_buf *b, char c);
int cli_buf_printf(cli_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Hand the text to the caller (free it) and leave the buffer empty; NULL
 * when an append had failed (the buffer is then released). */
char *cli_buf_detach(cli_buf *b);
void cli_buf_dispose(cli_buf *b);

/* The candidate nearest to `word` that could be a typo of it (a small edit
 * distance, or `word` is its prefix), or NULL.  Every "did you mean" of the
 * command comes from here: commands, options, backend types, URL schemes,
 * YAML fields, time zones. */
const char *cli_suggest(const char *word, const char *const *candidates, size_t n);

/* The system zone nearest to the unknown zone `name`, or NULL (caller frees). */
char *cli_suggest_zone(const char *name);

#endif
