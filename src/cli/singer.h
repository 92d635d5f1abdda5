/*
 * singer.h - Singer state capture for `faucet run --singer`: split the
 * command's stdout into lines, keep the JSON-object lines as the new state
 * and pass every other line through unchanged, in order.
 */
#ifndef FAUCET_CLI_SINGER_H
#define FAUCET_CLI_SINGER_H

#include <stddef.h>
#include <sys/uio.h>
#include <faucet/value.h>

#include "util.h"

#define SINGER_LINE_MAX ((size_t)64 << 20) /* longest state line kept: 64 MiB */

#define SINGER_SPANS 16 /* pass-through spans gathered into one emit call */

/* Where pass-through bytes go: `n` spans, in order, best written with one
 * writev.  Returns 0 or -1 (errno set). */
typedef int (*singer_emit_fn)(void *ctx, const struct iovec *spans, int n);

typedef struct {
	singer_emit_fn emit;
	void *emit_ctx;
	struct iovec spans[SINGER_SPANS]; /* pass-through bytes not yet emitted: they
					   * point into the caller's data (valid until
					   * singer_feed returns), the carry, or "\n" */
	int nspans;
	int spans_in_carry;    /* a span points into carry: emit before changing it */
	cli_buf carry;      /* the line begun but not finished */
	int carry_state;       /* carry started with '{': may be state */
	int streaming;         /* the current line is passed through as it comes */
	int discarding;        /* the current state line is too long: drop it */
	faucet_value *state;   /* the newest state not yet stored, or NULL */
	unsigned long states;  /* state lines seen */
	char *error;           /* the first bad state line, or NULL */
	unsigned long errors;
} singer;

void singer_init(singer *s, singer_emit_fn emit, void *emit_ctx);

/* Take `len` more bytes of the command's stdout.  Every byte that passes
 * through has been handed to emit when it returns - in one call per feed
 * unless more than SINGER_SPANS pieces gather - except a line begun but not
 * finished that may still be state.  Returns 0, or -1 when emit failed or
 * memory ran out (message in the library's last error). */
int singer_feed(singer *s, const char *data, size_t len);

/* End of stdout: a last line without a newline is handled like the others. */
int singer_finish(singer *s);

/* Hand the pending state to the caller (NULL when none); the caller frees. */
faucet_value *singer_take_state(singer *s);

void singer_dispose(singer *s);

#endif
