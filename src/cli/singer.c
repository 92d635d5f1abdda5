/*
 * singer.c - Singer state capture (see singer.h).
 *
 * The common case is a flood of lines that are not state (a target's log,
 * records passed along), so that path copies nothing: complete lines that
 * cannot be state are handed on as spans straight from the read buffer, and
 * the spans of one feed - a line finished from the last read, the lines
 * between, the start of a line the next read will finish - go to emit
 * together, one writev per read rather than one write per piece.  Only a
 * line whose first non-blank byte is '{' is gathered and parsed - with the
 * library's strict parser, so a state that could not be stored exactly is
 * an error rather than an altered bookmark.
 *
 * A state line is at most 64 MiB: past that it is dropped and reported, so a
 * runaway command cannot make faucet hold an unbounded line.  A line that is
 * not state is never held: once its first non-blank byte shows it is not,
 * it streams through whatever its length.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "singer.h"

void singer_init(singer *s, singer_emit_fn emit, void *emit_ctx)
{
	memset(s, 0, sizeof(*s));
	s->emit = emit;
	s->emit_ctx = emit_ctx;
	s->carry = (cli_buf)CLI_BUF_INIT;
}

static void note_error(singer *s, const char *what, const char *detail)
{
	s->errors++;
	if (s->error == NULL)
		s->error = cli_sprintf("%s%.200s", what, detail);
}

/* Hand the gathered spans to emit. */
static int flush_spans(singer *s)
{
	int n = s->nspans;

	s->nspans = 0;
	s->spans_in_carry = 0;
	if (n > 0 && s->emit(s->emit_ctx, s->spans, n) != 0)
		return cli_error_os(FAUCET_EIO, errno, "cannot write the command's output");
	return 0;
}

/* Queue n bytes at p (which must stay valid until the next flush). */
static int emit(singer *s, const char *p, size_t n)
{
	if (n == 0)
		return 0;
	if (s->nspans == SINGER_SPANS && flush_spans(s) != 0)
		return -1;
	s->spans[s->nspans++] = (struct iovec){(void *)p, n};
	return 0;
}

/* Queue the carry's bytes: they must not change until the next flush. */
static int emit_carry(singer *s)
{
	s->spans_in_carry = 1;
	return emit(s, s->carry.ptr, s->carry.len);
}

/* Before the carry's bytes change or move: emit what still points at them. */
static int carry_put(singer *s, const char *p, size_t len)
{
	if (s->spans_in_carry && flush_spans(s) != 0)
		return -1;
	return cli_buf_put(&s->carry, p, len) == 0 ? 0 : FAUCET_ENOMEM;
}

/* Offset of the first byte that is not a blank, or len. */
static size_t skip_blank(const char *p, size_t len)
{
	size_t i = 0;

	while (i < len && (p[i] == ' ' || p[i] == '\t'))
		i++;
	return i;
}

/* One complete line that starts with '{' (after blanks), without its '\n'. */
static int state_line(singer *s, const char *p, size_t len)
{
	faucet_value *v = NULL, *type = NULL, *inner = NULL;

	if (len > 0 && p[len - 1] == '\r')
		len--;
	if (faucet_value_parse(&v, p, len) != 0) {
		if (faucet_error_last()->code == FAUCET_ENOMEM)
			return FAUCET_ENOMEM;
		note_error(s, "invalid state line: ", faucet_error_last()->message);
		return 0;
	}
	if (faucet_value_member(v, "type", &type) != 0) {
		faucet_value_free(v);
		return FAUCET_ENOMEM;
	}
	if (type != NULL && strcmp(faucet_value_json(type), "\"STATE\"") == 0) {
		if (faucet_value_member(v, "value", &inner) != 0) {
			faucet_value_free(type);
			faucet_value_free(v);
			return FAUCET_ENOMEM;
		}
	}
	faucet_value_free(type);
	if (inner != NULL) {
		faucet_value_free(v);
		if (faucet_value_json(inner)[0] != '{') {
			note_error(s, "a STATE message's value is not a JSON object: ",
				   faucet_value_json(inner));
			faucet_value_free(inner);
			return 0;
		}
		v = inner;
	}
	s->states++;
	faucet_value_free(s->state);
	s->state = v;
	return 0;
}

/* A complete line (carry, or a span of the input), without its '\n';
 * nl_follows: p[len] is that '\n', so it goes out with the line. */
static int whole_line(singer *s, const char *p, size_t len, int nl_follows)
{
	size_t b = skip_blank(p, len);

	if (b < len && p[b] == '{')
		return state_line(s, p, len);
	if (nl_follows)
		return emit(s, p, len + 1);
	if (emit(s, p, len) != 0 || emit(s, "\n", 1) != 0)
		return -1;
	return 0;
}

static int flush_carry(singer *s)
{
	int rc = emit_carry(s);

	s->carry.len = 0;
	return rc;
}

/* Bytes of an unfinished line: decide as early as possible whether it can
 * be state; if not, stream it. */
static int partial(singer *s, const char *p, size_t len)
{
	size_t b;
	int rc;

	if (s->discarding)
		return 0;
	if (s->streaming)
		return emit(s, p, len);
	/* The usual case: a new line whose first byte already says it is not
	 * state streams from the caller's data, never copied. */
	b = skip_blank(p, len);
	if (s->carry.len == 0 && b < len && p[b] != '{') {
		s->streaming = 1;
		return emit(s, p, len);
	}
	if ((rc = carry_put(s, p, len)) != 0)
		return rc;
	b = skip_blank(s->carry.ptr, s->carry.len);
	if ((b < s->carry.len && s->carry.ptr[b] != '{') ||
	    (b == s->carry.len && s->carry.len > SINGER_LINE_MAX)) {
		s->streaming = 1;
		return flush_carry(s);
	}
	if (s->carry.len <= SINGER_LINE_MAX)
		return 0;
	note_error(s, "a state line is larger than 64 MiB; it was not stored", "");
	s->discarding = 1;
	cli_buf_dispose(&s->carry);
	return 0;
}

/* The rest of a line up to its '\n' at p[len]. */
static int line_end(singer *s, const char *p, size_t len)
{
	int rc = 0;

	if (s->discarding) {
		s->discarding = 0;
	} else if (s->streaming) {
		rc = emit(s, p, len + 1);
		s->streaming = 0;
	} else if (s->carry.len > 0) {
		if ((rc = carry_put(s, p, len)) != 0)
			return rc;
		if (s->carry.len > SINGER_LINE_MAX) {
			note_error(s, "a state line is larger than 64 MiB; it was not stored", "");
			rc = 0;
		} else {
			s->spans_in_carry = 1;
			rc = whole_line(s, s->carry.ptr, s->carry.len, 0);
		}
		/* Emptied, not freed: a span may still point at its bytes. */
		s->carry.len = 0;
	} else {
		rc = whole_line(s, p, len, 1);
	}
	return rc;
}

/* Where the line holding `brace` starts, if only blanks come before the
 * brace on it; NULL otherwise.  `p` is the start of a line. */
static const char *state_line_start(const char *p, const char *brace)
{
	const char *q = brace;

	while (q > p && (q[-1] == ' ' || q[-1] == '\t'))
		q--;
	return q == p || q[-1] == '\n' ? q : NULL;
}

static int feed(singer *s, const char *data, size_t len);

int singer_feed(singer *s, const char *data, size_t len)
{
	int rc = feed(s, data, len);

	/* Whatever happened, nothing may point into `data` once we return. */
	if (flush_spans(s) != 0 && rc == 0)
		rc = -1;
	return rc;
}

static int feed(singer *s, const char *data, size_t len)
{
	const char *p = data, *end = data + len;

	while (p < end) {
		const char *nl, *span = p, *from = p, *brace, *start = NULL, *last;

		if (s->discarding || s->streaming || s->carry.len > 0) {
			int rc;

			if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
				return partial(s, p, (size_t)(end - p));
			if ((rc = line_end(s, p, (size_t)(nl - p))) != 0)
				return rc;
			p = nl + 1;
			continue;
		}
		/* p starts a line.  Only a '{' first on its line can start a
		 * state, so jump from brace to brace instead of line to line: a
		 * chunk of log lines without one is passed on in a single call. */
		while ((brace = memchr(from, '{', (size_t)(end - from))) != NULL &&
		       (start = state_line_start(p, brace)) == NULL)
			from = brace + 1;
		if (brace == NULL) {
			last = memrchr(p, '\n', (size_t)(end - p));
			if (last != NULL && emit(s, span, (size_t)(last + 1 - span)) != 0)
				return -1;
			p = last ? last + 1 : p;
			return p < end ? partial(s, p, (size_t)(end - p)) : 0;
		}
		if (emit(s, span, (size_t)(start - span)) != 0)
			return -1;
		p = start;
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			return partial(s, p, (size_t)(end - p));
		{
			int rc = state_line(s, p, (size_t)(nl - p));
			if (rc != 0)
				return rc;
		}
		p = nl + 1;
	}
	return 0;
}

int singer_finish(singer *s)
{
	int rc = 0;

	if (s->streaming) {
		s->streaming = 0;
	} else if (s->carry.len > 0 && !s->discarding) {
		size_t b = skip_blank(s->carry.ptr, s->carry.len);
		if (b < s->carry.len && s->carry.ptr[b] == '{')
			rc = state_line(s, s->carry.ptr, s->carry.len);
		else
			rc = emit_carry(s);
	}
	if (flush_spans(s) != 0 && rc == 0)
		rc = -1;
	s->carry.len = 0;
	s->discarding = 0;
	return rc;
}

faucet_value *singer_take_state(singer *s)
{
	faucet_value *v = s->state;

	s->state = NULL;
	return v;
}

void singer_dispose(singer *s)
{
	cli_buf_dispose(&s->carry);
	faucet_value_free(s->state);
	free(s->error);
	memset(s, 0, sizeof(*s));
}
