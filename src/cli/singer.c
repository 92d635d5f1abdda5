/*
 * singer.c - Singer state capture (see singer.h for the rule).
 *
 * The common case is a flood of lines that are not state - RECORD messages,
 * a target's log - so that path copies nothing and parses nothing.  Lines
 * without a '{' pass together, found by one memchr for the next '{'.  Any
 * other line is looked at only as far as it takes to tell what it is: a line
 * whose first non-blank byte is not '{' passes at once; a line that starts an
 * object is scanned (singer_scan: strings, nesting and the top-level members'
 * names, no values parsed) until its top-level "type" member shows it is a
 * Singer message other than STATE - at once, for the usual
 * {"type":"RECORD",...} - or until it ends.  Lines that pass are handed on
 * as spans straight from the read buffer, adjacent lines as one span, so a
 * read of RECORD lines goes out in one writev.
 *
 * Only a line that is still an object with no "type", or a STATE, at its end
 * is parsed - with the library's strict parser, so a state that could not
 * be stored exactly is an error rather than an altered bookmark.  A line
 * that may be state is held (the carry) while it spans reads, up to 64 MiB:
 * past that it streams through like any other line, and if it ends as a
 * state line that is an error (it was not stored).  A line that is not
 * state is never held, whatever its length.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "singer.h"

/* What the current line is (singer.mode). */
enum {
	L_START,  /* nothing of it seen yet */
	L_PASS,   /* it passes through: the rest streams */
	L_GATHER, /* it may be state: held in the carry, scanned */
	L_OVER    /* it may be state but is too long to hold: streams, scanned */
};

/* Where the scan is in the top-level object (singer_scan.st). */
enum {
	S_LEAD,   /* blanks before the '{' */
	S_OPEN,   /* after the '{': a member's name or '}' */
	S_NAME,   /* after a ',': a member's name */
	S_COLON,  /* after a name */
	S_VALUE,  /* after the ':' */
	S_SCALAR, /* in a number or literal */
	S_AFTER,  /* after a member's value: ',' or '}' */
	S_NESTED, /* inside an object or array below the top level */
	S_TAIL    /* after the closing '}': only blanks may follow */
};

/* Which string is being read (singer_scan.what). */
enum { W_SKIP, W_NAME, W_TYPE };

/* What a scan says about its line. */
enum {
	SCAN_MORE,  /* not decided yet */
	SCAN_PASS,  /* the line passes through */
	SCAN_STATE  /* (at the line's end) an object without "type", or a STATE */
};

void cli_singer_init(singer *s, singer_emit_fn emit, void *emit_ctx)
{
	memset(s, 0, sizeof(*s));
	s->emit = emit;
	s->emit_ctx = emit_ctx;
	s->carry = (faucet_buf)FAUCET_BUF_INIT;
	s->mode = L_START;
}

/* ---- the scan of a line that may be an object -------------------------------------- */

static int is_blank(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/* A byte of a number or of true/false/null (the parser judges them later). */
static int is_scalar(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       c == '-' || c == '+' || c == '.';
}

/* A decoded byte of the string being read: kept when it is a member's name
 * or the type, as far as `text` goes (enough to compare with "type" and
 * "STATE"). */
static void keep(singer_scan *sc, unsigned c)
{
	if (sc->what == W_SKIP)
		return;
	if (c < 0x80 && sc->len < sizeof(sc->text))
		sc->text[sc->len++] = (char)c;
	else
		sc->too_long = 1;
}

static int kept_is(const singer_scan *sc, const char *word)
{
	size_t n = strlen(word);

	return !sc->too_long && sc->len == n && memcmp(sc->text, word, n) == 0;
}

static void string_start(singer_scan *sc, unsigned char what)
{
	sc->in_str = 1;
	sc->what = what;
	sc->len = 0;
	sc->too_long = 0;
}

static int string_end(singer_scan *sc)
{
	sc->in_str = 0;
	if (sc->what == W_NAME) {
		sc->type_key = (unsigned char)kept_is(sc, "type");
		sc->st = S_COLON;
		return SCAN_MORE;
	}
	if (sc->what == W_TYPE) {
		/* A Singer message other than STATE passes through, whatever
		 * follows (if the line is not valid JSON after all, it passes
		 * through as well). */
		if (!kept_is(sc, "STATE"))
			return SCAN_PASS;
		sc->is_state = 1;
	}
	sc->st = sc->depth > 0 ? S_NESTED : S_AFTER;
	return SCAN_MORE;
}

static int nest(singer_scan *sc, unsigned char c)
{
	if (sc->depth == UINT32_MAX)
		return SCAN_PASS;
	if (sc->depth < 64) {
		uint64_t bit = (uint64_t)1 << sc->depth;
		sc->arrays = c == '[' ? sc->arrays | bit : sc->arrays & ~bit;
	}
	sc->depth++;
	sc->st = S_NESTED;
	return SCAN_MORE;
}

static int unnest(singer_scan *sc, unsigned char c)
{
	sc->depth--;
	if (sc->depth < 64 && (((sc->arrays >> sc->depth) & 1) != 0) != (c == ']'))
		return SCAN_PASS; /* "[}" or "{]": not JSON */
	if (sc->depth == 0)
		sc->st = S_AFTER;
	return SCAN_MORE;
}

/* Inside a string: one byte. */
static int scan_string(singer_scan *sc, unsigned char c)
{
	static const char escapes[] = "\"\\/bfnrt", decoded[] = "\"\\/\b\f\n\r\t";
	const char *e;
	int d;

	switch (sc->in_str) {
	case 1:
		if (c == '"')
			return string_end(sc);
		if (c == '\\')
			sc->in_str = 2;
		else if (c < 0x20)
			return SCAN_PASS; /* a raw control character: not JSON */
		else
			keep(sc, c);
		return SCAN_MORE;
	case 2:
		if (c == 'u') {
			sc->in_str = 3;
			sc->hex = 4;
			sc->code = 0;
			return SCAN_MORE;
		}
		if (c == '\0' || (e = strchr(escapes, c)) == NULL)
			return SCAN_PASS;
		keep(sc, (unsigned char)decoded[e - escapes]);
		sc->in_str = 1;
		return SCAN_MORE;
	default:
		if ((d = faucet__hex_digit((char)c)) < 0)
			return SCAN_PASS;
		sc->code = sc->code * 16 + (unsigned)d;
		if (--sc->hex == 0) {
			keep(sc, sc->code);
			sc->in_str = 1;
		}
		return SCAN_MORE;
	}
}

/* `n` more bytes of the line (no '\n' among them): SCAN_PASS once the line
 * is known to pass through, else SCAN_MORE. */
static int scan(singer_scan *sc, const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];
		int r = SCAN_MORE;

		if (sc->in_str) {
			r = scan_string(sc, c);
		} else {
			switch (sc->st) {
			case S_LEAD:
				if (c == '{')
					sc->st = S_OPEN;
				else if (!is_blank(c))
					r = SCAN_PASS;
				break;
			case S_OPEN:
			case S_NAME:
				if (c == '"')
					string_start(sc, W_NAME);
				else if (c == '}' && sc->st == S_OPEN)
					sc->st = S_TAIL;
				else if (!is_blank(c))
					r = SCAN_PASS;
				break;
			case S_COLON:
				if (c == ':')
					sc->st = S_VALUE;
				else if (!is_blank(c))
					r = SCAN_PASS;
				break;
			case S_VALUE:
				if (is_blank(c))
					break;
				if (c == '"')
					string_start(sc, sc->type_key ? W_TYPE : W_SKIP);
				else if (sc->type_key)
					r = SCAN_PASS; /* a "type" that is not a string */
				else if (c == '{' || c == '[')
					r = nest(sc, c);
				else if (is_scalar(c))
					sc->st = S_SCALAR;
				else
					r = SCAN_PASS;
				break;
			case S_SCALAR:
				if (is_scalar(c))
					break;
				sc->st = S_AFTER;
				/* fall through */
			case S_AFTER:
				if (c == ',')
					sc->st = S_NAME;
				else if (c == '}')
					sc->st = S_TAIL;
				else if (!is_blank(c))
					r = SCAN_PASS;
				break;
			case S_NESTED:
				if (c == '"')
					string_start(sc, W_SKIP);
				else if (c == '{' || c == '[')
					r = nest(sc, c);
				else if (c == '}' || c == ']')
					r = unnest(sc, c);
				break;
			default: /* S_TAIL */
				if (!is_blank(c))
					r = SCAN_PASS;
				break;
			}
		}
		if (r != SCAN_MORE)
			return r;
	}
	return SCAN_MORE;
}

/* The shape nearly every Singer message has - {"type":"RECORD", or with a
 * blank after the colon - told without the scan: SCAN_PASS when the line
 * starts like that with a type other than STATE, SCAN_MORE when it does not
 * (or is a STATE, or its type has an escape): then the scan decides.  It
 * never decides otherwise than the scan would. */
static int quick_type(const char *p, size_t n)
{
	const char *v, *q;
	size_t i = 7;

	if (n < 10 || memcmp(p, "{\"type\"", 7) != 0)
		return SCAN_MORE;
	if (p[i] == ' ')
		i++;
	if (p[i++] != ':')
		return SCAN_MORE;
	if (i < n && p[i] == ' ')
		i++;
	if (i >= n || p[i] != '"')
		return SCAN_MORE;
	v = p + i + 1;
	if ((q = memchr(v, '"', n - i - 1)) == NULL || memchr(v, '\\', (size_t)(q - v)) != NULL)
		return SCAN_MORE;
	return q - v == 5 && memcmp(v, "STATE", 5) == 0 ? SCAN_MORE : SCAN_PASS;
}

/* The line ended: is it (still) an object without "type", or a STATE? */
static int scan_end(const singer_scan *sc)
{
	return sc->st == S_TAIL && !sc->in_str ? SCAN_STATE : SCAN_PASS;
}

/* ---- output ------------------------------------------------------------------------ */

static void note_error(singer *s, const char *what, const char *detail)
{
	s->errors++;
	if (s->error == NULL)
		s->error = faucet__sprintf("%s%.200s", what, detail);
	/* A bad state line fails the run, which then stores nothing. */
	faucet_value_free(s->state);
	s->state = NULL;
}

/* Hand the gathered spans to emit. */
static int flush_spans(singer *s)
{
	int n = s->nspans;

	s->nspans = 0;
	s->spans_in_carry = 0;
	if (n > 0 && s->emit(s->emit_ctx, s->spans, n) != 0)
		return faucet__error_os(FAUCET_EIO, errno, "cannot write the command's output");
	return 0;
}

/* Queue n bytes at p (which must stay valid until the next flush); bytes
 * that follow the last span's join it. */
static int emit(singer *s, const char *p, size_t n)
{
	struct iovec *last = s->nspans > 0 ? &s->spans[s->nspans - 1] : NULL;

	if (n == 0)
		return 0;
	if (last != NULL && (const char *)last->iov_base + last->iov_len == p) {
		last->iov_len += n;
		return 0;
	}
	if (s->nspans == SINGER_SPANS && flush_spans(s) != 0)
		return -1;
	s->spans[s->nspans++] = (struct iovec){(void *)p, n};
	return 0;
}

/* Queue the carry's bytes: they must not change until the next flush. */
static int emit_carry(singer *s)
{
	if (s->carry.len == 0)
		return 0;
	s->spans_in_carry = 1;
	return emit(s, s->carry.ptr, s->carry.len);
}

/* The carry's line is done with.  Emptied, not freed, unless it grew large:
 * a span may still point at its bytes. */
static int carry_done(singer *s)
{
	s->carry.len = 0;
	if (s->carry.cap <= ((size_t)1 << 20))
		return 0;
	if (flush_spans(s) != 0)
		return -1;
	faucet__buf_dispose(&s->carry);
	s->carry = (faucet_buf)FAUCET_BUF_INIT;
	return 0;
}

/* The current line may be state but goes on past this read: hold its next
 * `n` bytes, or - past SINGER_LINE_MAX, or when there is no memory for
 * them - let the line stream through from here on. */
static int hold(singer *s, const char *p, size_t n)
{
	if (s->carry.len + n <= SINGER_LINE_MAX) {
		if (s->spans_in_carry && flush_spans(s) != 0)
			return -1;
		if (faucet__buf_put(&s->carry, p, n) == 0) {
			s->mode = L_GATHER;
			return 0;
		}
	}
	s->mode = L_OVER;
	if (emit_carry(s) != 0 || emit(s, p, n) != 0 || flush_spans(s) != 0)
		return -1;
	faucet__buf_dispose(&s->carry);
	s->carry = (faucet_buf)FAUCET_BUF_INIT;
	return 0;
}

/* ---- state lines ------------------------------------------------------------------- */

/* A complete line that scanned as a state line (without its '\n'): a STATE
 * message (is_state) whose value is taken, or an object without "type",
 * taken whole. */
static int take_state(singer *s, const char *p, size_t len, int is_state)
{
	faucet_value *v = NULL, *inner = NULL;

	if (faucet_value_parse(&v, p, len) != 0) {
		if (faucet_error_last()->code == FAUCET_ENOMEM)
			return FAUCET_ENOMEM;
		note_error(s, is_state ? "a STATE message that cannot be read: "
				       : "invalid state line: ",
			   faucet_error_last()->message);
		return 0;
	}
	if (is_state) {
		if (faucet_value_member(v, "value", &inner) != 0) {
			faucet_value_free(v);
			return FAUCET_ENOMEM;
		}
		if (inner == NULL || faucet_value_json(inner)[0] != '{') {
			note_error(s,
				   inner == NULL ? "a STATE message without a \"value\": "
						 : "a STATE message's value is not a JSON object: ",
				   faucet_value_json(inner ? inner : v));
			faucet_value_free(inner);
			faucet_value_free(v);
			return 0;
		}
		faucet_value_free(v);
		v = inner;
	}
	/* After a bad state line no state is kept: the run stores nothing. */
	if (s->error != NULL) {
		faucet_value_free(v);
		return 0;
	}
	s->states++;
	faucet_value_free(s->state);
	s->state = v;
	return 0;
}

/* A line that went past SINGER_LINE_MAX (it streamed through) has ended. */
static void over_end(singer *s)
{
	if (scan_end(&s->scan) == SCAN_STATE)
		note_error(s, "a state line larger than 64 MiB (or than the memory at hand) "
			      "was passed through, not stored", "");
}

/* ---- feeding ---------------------------------------------------------------------- */

static int feed(singer *s, const char *data, size_t len);

int cli_singer_feed(singer *s, const char *data, size_t len)
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
		const char *nl;

		/* At a line's start, every whole line before the next '{' passes:
		 * a line without one is no object (a log's lines, a target's
		 * progress), and they go out as one span, unlooked at. */
		if (s->mode == L_START && *p != '{') {
			const char *brace = memchr(p, '{', (size_t)(end - p));
			const char *last = memrchr(p, '\n', (size_t)((brace ? brace : end) - p));

			if (last != NULL) {
				if (emit(s, p, (size_t)(last + 1 - p)) != 0)
					return -1;
				p = last + 1;
				continue;
			}
		}
		nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		size_t with_nl = nl ? n + 1 : n;
		int rc = 0;

		switch (s->mode) {
		case L_PASS:
			rc = emit(s, p, with_nl);
			break;
		case L_START:
			memset(&s->scan, 0, sizeof(s->scan));
			if (quick_type(p, n) == SCAN_PASS || scan(&s->scan, p, n) == SCAN_PASS) {
				rc = emit(s, p, with_nl);
				s->mode = L_PASS;
			} else if (nl == NULL) {
				rc = hold(s, p, n);
			} else if (scan_end(&s->scan) == SCAN_STATE) {
				rc = take_state(s, p, n, s->scan.is_state);
			} else {
				rc = emit(s, p, with_nl);
			}
			break;
		case L_GATHER:
			if (scan(&s->scan, p, n) == SCAN_PASS) {
				/* Not state after all: what was held goes first. */
				if ((rc = emit_carry(s)) == 0 && (rc = emit(s, p, with_nl)) == 0)
					rc = carry_done(s);
				s->mode = L_PASS;
			} else if (nl == NULL) {
				rc = hold(s, p, n);
			} else if (scan_end(&s->scan) == SCAN_STATE) {
				if ((rc = hold(s, p, n)) == 0 && s->mode == L_GATHER) {
					rc = take_state(s, s->carry.ptr, s->carry.len, s->scan.is_state);
					if (rc == 0)
						rc = carry_done(s);
				} else if (rc == 0) {
					/* It did not fit: it has streamed, only its '\n' is left. */
					rc = emit(s, nl, 1);
					over_end(s);
				}
			} else {
				if ((rc = emit_carry(s)) == 0 && (rc = emit(s, p, with_nl)) == 0)
					rc = carry_done(s);
			}
			break;
		default: /* L_OVER */
			rc = emit(s, p, with_nl);
			if (rc == 0 && scan(&s->scan, p, n) == SCAN_PASS)
				s->mode = L_PASS;
			else if (rc == 0 && nl != NULL)
				over_end(s);
			break;
		}
		if (rc != 0)
			return rc;
		if (nl != NULL)
			s->mode = L_START;
		p += with_nl;
	}
	return 0;
}

int cli_singer_finish(singer *s)
{
	int rc = 0;

	if (s->mode == L_GATHER) {
		if (scan_end(&s->scan) == SCAN_STATE)
			rc = take_state(s, s->carry.ptr, s->carry.len, s->scan.is_state);
		else
			rc = emit_carry(s);
	} else if (s->mode == L_OVER) {
		over_end(s);
	}
	s->mode = L_START;
	if (flush_spans(s) != 0 && rc == 0)
		rc = -1;
	s->carry.len = 0;
	return rc;
}

faucet_value *cli_singer_take_state(singer *s)
{
	faucet_value *v = s->state;

	s->state = NULL;
	if (s->error != NULL) {
		faucet_value_free(v);
		return NULL;
	}
	return v;
}

void cli_singer_dispose(singer *s)
{
	faucet__buf_dispose(&s->carry);
	faucet_value_free(s->state);
	free(s->error);
	memset(s, 0, sizeof(*s));
}
