/*
 * singer.h - Singer state capture for `faucet run --singer` (doc/design.md §8):
 * split the command's stdout into lines, keep the state lines and pass every
 * other line through unchanged, byte for byte and in order.
 *
 * A line is classified by what it is as JSON:
 *   - an object with a string member "type" is a Singer message: a STATE
 *     contributes its "value" (which must be an object; a STATE without one
 *     is an error and no state is taken from then on), every other type
 *     (RECORD, SCHEMA, ACTIVATE_VERSION, BATCH, unknown) passes through;
 *   - an object without "type" is a target's state line: it is the state;
 *   - every other line passes through.
 */
#ifndef FAUCET_CLI_SINGER_H
#define FAUCET_CLI_SINGER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include <faucet/value.h>

#include "util.h"

#define SINGER_LINE_MAX ((size_t)64 << 20) /* longest state line kept: 64 MiB */

#define SINGER_SPANS 16 /* pass-through spans gathered into one emit call */

/* Where pass-through bytes go: `n` spans, in order, best written with one
 * writev.  Returns 0 or -1 (errno set). */
typedef int (*singer_emit_fn)(void *ctx, const struct iovec *spans, int n);

/* What is known of a line that begins (after blanks) with '{', read so far:
 * a scan of its top-level object, enough to tell a Singer message's type
 * without parsing the line (see singer.c). */
typedef struct {
	unsigned char st;      /* where in the top-level object the scan is */
	unsigned char in_str;  /* inside a string: 1, after its '\\': 2, in \uXXXX: 3 */
	unsigned char hex;     /* \uXXXX: hex digits still to come */
	unsigned char what;    /* the string being read: a key, the type, or skipped */
	unsigned char type_key; /* the member whose value comes next is "type" */
	unsigned char is_state; /* "type" is the string "STATE" */
	unsigned char len;     /* bytes of the current key or type kept in `text` */
	unsigned char too_long; /* ... and whether there were more */
	unsigned code;         /* \uXXXX's value so far */
	char text[8];
	uint32_t depth;        /* nesting below the top-level object */
	uint64_t arrays;       /* bit i: depth i+1 is an array (the first 64) */
} singer_scan;

typedef struct {
	singer_emit_fn emit;
	void *emit_ctx;
	struct iovec spans[SINGER_SPANS]; /* pass-through bytes not yet emitted: they
					   * point into the caller's data (valid until
					   * cli_singer_feed returns) or into the carry */
	int nspans;
	int spans_in_carry;    /* a span points into carry: emit before changing it */
	int mode;              /* what the current line is (singer.c) */
	singer_scan scan;      /* the current line's scan, while it may be state */
	faucet_buf carry;         /* the current line, begun but not finished, while it
				* may be state */
	faucet_value *state;   /* the newest state not yet taken, or NULL */
	unsigned long states;  /* state lines taken */
	char *error;           /* what was wrong with the first bad state line */
	unsigned long errors;  /* bad state lines */
} singer;

void cli_singer_init(singer *s, singer_emit_fn emit, void *emit_ctx);

/* Take `len` more bytes of the command's stdout.  Every byte that passes
 * through has been handed to emit when it returns - in one call per feed
 * unless more than SINGER_SPANS pieces gather - except a line begun but not
 * finished that may still be state.  Returns 0, or -1 when emit failed or
 * memory ran out (message in the library's last error). */
int cli_singer_feed(singer *s, const char *data, size_t len);

/* End of stdout: a last line without a newline is handled like the others
 * (and passes through without one). */
int cli_singer_finish(singer *s);

/* Hand the pending state to the caller (NULL when none); the caller frees.
 * Once a bad state line was seen (s->error) there is none, ever: the run
 * fails and must store nothing. */
faucet_value *cli_singer_take_state(singer *s);

void cli_singer_dispose(singer *s);

#endif
