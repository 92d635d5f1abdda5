/*
 * json_check.c - one strict pass over JSON text, before anything is built.
 *
 * Every value read from a store is checked, so this pass decides what a get
 * costs beyond the backend's own read; building json-c's tree is left until
 * something needs the structure (value.c).  The checker therefore has to
 * refuse everything json-c would refuse, and everything json-c would accept
 * but alter:
 *
 *   - grammar: RFC 8259 exactly - no trailing commas, no leading zeros, no
 *     "1." or ".5", no NaN/Infinity, only the four JSON white-space bytes;
 *   - strings: no raw control characters, only the JSON escapes, no
 *     unpaired \u surrogate (json-c would turn it into U+FFFD), no \u0000
 *     (json-c cuts a member name at it, so {"a\u0000b":1} would become
 *     {"a":1}; PostgreSQL's JSONB refuses it in any string: refusing it
 *     everywhere keeps every backend alike and nothing altered), and
 *     well-formed UTF-8 (RFC 3629: no overlong forms, no encoded surrogates,
 *     nothing above U+10FFFF - json-c lets all three through);
 *   - numbers: integers within [-2^63, 2^64-1] (json-c clamps beyond) and
 *     doubles that stay finite;
 *   - objects: no member name twice (json-c keeps the last one);
 *   - nesting: at most FAUCET_JSON_MAX_DEPTH levels, json-c's own limit.
 *
 * Duplicate names are compared as written, which is exact when the text
 * has no escapes; text with escapes is not compact, so value.c parses it at
 * once and catches a duplicate spelt two ways by counting the tree.
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "values/json_check.h"

typedef struct {
	const char *at; /* first byte of the name, after the quote */
	size_t len;
} name_span;

typedef struct {
	const char *text, *end, *where;
	faucet_json_check_result *out;
	/* Member names of every open object, innermost last. */
	name_span *names;
	size_t nnames, cap;
	name_span local[32];
} checker;

/* Set "{where}: malformed JSON at byte N: {why}" and return FAUCET_EINVALID. */
__attribute__((format(printf, 3, 4))) static int bad(const checker *ck, const char *at,
						      const char *fmt, ...)
{
	char why[160];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return faucet_error_set(FAUCET_EINVALID, "%s: malformed JSON at byte %zu: %s", ck->where,
				(size_t)(at - ck->text), why);
}

static int end_of_input(const checker *ck)
{
	return bad(ck, ck->end, "unexpected end of input");
}

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int is_letter(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static inline const char *skip_space(checker *ck, const char *p)
{
	while (p < ck->end && is_space(*p)) {
		ck->out->compact = 0;
		p++;
	}
	return p;
}

/* "unexpected character": shown as itself when printable, else in hex. */
static int unexpected(const checker *ck, const char *p, const char *wanted)
{
	unsigned char c = (unsigned char)*p;

	if (c > 0x20 && c < 0x7f)
		return bad(ck, p, "unexpected '%c', expected %s", c, wanted);
	return bad(ck, p, "unexpected byte 0x%02x, expected %s", c, wanted);
}

/* Length of the well-formed UTF-8 sequence at p (RFC 3629, Unicode table
 * 3-7), or 0 when it is not one. */
static size_t utf8_length(const unsigned char *p, const unsigned char *end)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n;

	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		n = 3;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4;
	else
		return 0;
	if ((size_t)(end - p) < n)
		return 0;
	if (p[0] == 0xe0)
		lo = 0xa0; /* shorter forms are overlong */
	else if (p[0] == 0xed)
		hi = 0x9f; /* U+D800..U+DFFF are surrogates, not characters */
	else if (p[0] == 0xf0)
		lo = 0x90;
	else if (p[0] == 0xf4)
		hi = 0x8f; /* nothing above U+10FFFF */
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++) {
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	}
	return n;
}

/* Four hex digits at p (bounds checked by the caller), or -1. */
static long hex4(const char *p)
{
	long v = 0;

	for (int i = 0; i < 4; i++) {
		int d = faucet__hex_digit(p[i]);
		if (d < 0)
			return -1;
		v = v * 16 + d;
	}
	return v;
}

/* One escape after the backslash at p; *next is set past it. */
static int check_escape(checker *ck, const char *p, const char **next)
{
	const char *e = p + 1;
	long cp;

	ck->out->compact = 0; /* json-c may print the escape another way */
	if (e >= ck->end)
		return end_of_input(ck);
	if (strchr("\"\\/bfnrt", *e) != NULL && *e != '\0') {
		*next = e + 1;
		return 0;
	}
	if (*e != 'u')
		return bad(ck, p, "invalid escape '\\%c' in a string", is_letter(*e) ? *e : '?');
	if (ck->end - e < 5 || (cp = hex4(e + 1)) < 0)
		return bad(ck, p, "\\u must be followed by four hex digits");
	if (cp == 0)
		return faucet_error_set(FAUCET_EINVALID,
					"%s: \\u0000 at byte %zu: a NUL character cannot be held "
					"exactly (json-c cuts member names at it, PostgreSQL "
					"refuses it)",
					ck->where, (size_t)(p - ck->text));
	if (cp >= 0xdc00 && cp <= 0xdfff)
		return bad(ck, p, "unpaired surrogate \\u%04lx in a string", cp);
	if (cp >= 0xd800 && cp <= 0xdbff) {
		const char *low = e + 5;
		long lc;
		if (ck->end - low < 6 || low[0] != '\\' || low[1] != 'u' ||
		    (lc = hex4(low + 2)) < 0xdc00 || lc > 0xdfff)
			return bad(ck, p, "unpaired surrogate \\u%04lx in a string", cp);
		*next = low + 6;
		return 0;
	}
	*next = e + 5;
	return 0;
}

/* Whether all 8 bytes of x are plain: printable ASCII, neither '"' nor
 * '\\'.  Each test is the exact "some byte is below n" one of the bit
 * hacks: (x - n per byte) & ~x has a byte's top bit set for some byte
 * below n (exact as a whole for n <= 128, and bytes >= 0x80 are refused
 * by the last term anyway). */
static int plain8(uint64_t x)
{
	const uint64_t ones = 0x0101010101010101u, top = 0x8080808080808080u;
	uint64_t quote = x ^ (ones * '"'), slash = x ^ (ones * '\\');

	return (((x - ones * 0x20) & ~x) | ((quote - ones) & ~quote) | ((slash - ones) & ~slash) |
		x) & top ? 0 : 1;
}

/* A string starting at the quote at p; on success *next is past the
 * closing quote and *span holds its raw content. */
static int check_string(checker *ck, const char *p, const char **next, name_span *span)
{
	const char *q = p + 1;

	for (;;) {
		unsigned char c;

		/* Plain ASCII is almost everything: run through it first, a word
		 * at a time, then byte by byte to the byte that ends it. */
		for (uint64_t w; ck->end - q >= 8; q += 8) {
			memcpy(&w, q, sizeof(w));
			if (!plain8(w))
				break;
		}
		while (q < ck->end && (unsigned char)*q >= 0x20 && (unsigned char)*q < 0x80 &&
		       *q != '"' && *q != '\\')
			q++;
		if (q >= ck->end)
			return bad(ck, ck->end, "unexpected end of input inside a string");
		c = (unsigned char)*q;
		if (c == '"')
			break;
		if (c == '\\') {
			int rc = check_escape(ck, q, &q);
			if (rc != 0)
				return rc;
		} else if (c < 0x20) {
			return bad(ck, q, "control character 0x%02x in a string must be escaped", c);
		} else {
			size_t n = utf8_length((const unsigned char *)q, (const unsigned char *)ck->end);
			if (n == 0)
				return bad(ck, q, "invalid UTF-8 in a string");
			q += n;
		}
	}
	span->at = p + 1;
	span->len = (size_t)(q - (p + 1));
	*next = q + 1;
	return 0;
}

/* Whether an integer literal lies in [-2^63, 2^64-1], json-c's range;
 * outside it json-c silently clamps. */
static int integer_in_range(const char *tok, size_t len)
{
	static const char max_u[] = "18446744073709551615", min_i[] = "9223372036854775808";
	const char *bound = max_u;
	size_t blen = sizeof(max_u) - 1;

	if (tok[0] == '-') {
		tok++;
		len--;
		bound = min_i;
		blen = sizeof(min_i) - 1;
	}
	if (len != blen)
		return len < blen;
	return memcmp(tok, bound, len) <= 0;
}

/* 1 when the number (not an integer) is finite as a double, 0 when it is
 * not, FAUCET_ENOMEM.  A long mantissa is no proof of anything: 2 and 511
 * zeros, e-7, is 2e504. */
static int number_is_finite(const char *tok, size_t len)
{
	char buf[512], *p = len < sizeof(buf) ? buf : faucet__malloc(len + 1);
	int finite;

	if (p == NULL)
		return FAUCET_ENOMEM;
	memcpy(p, tok, len);
	p[len] = '\0';
	finite = isfinite(strtod(p, NULL));
	if (p != buf)
		free(p);
	return finite;
}

static const char *digits(const checker *ck, const char *p)
{
	while (p < ck->end && is_digit(*p))
		p++;
	return p;
}

/* A number starting at p ('-' or a digit). */
static int check_number(checker *ck, const char *p, const char **next)
{
	const char *tok = p, *q;
	int integer = 1, finite = 1;
	size_t len;

	if (*p == '-') {
		p++;
		if (p < ck->end && is_letter(*p)) {
			q = p;
			while (q < ck->end && is_letter(*q))
				q++;
			return bad(ck, tok, "'%.*s' is not a JSON value", (int)(q - tok > 16 ? 16 : q - tok),
				   tok);
		}
		if (p >= ck->end || !is_digit(*p))
			return p >= ck->end ? end_of_input(ck) : bad(ck, p, "expected a digit after '-'");
	}
	if (*p == '0') {
		p++;
		if (p < ck->end && is_digit(*p))
			return bad(ck, tok, "a number cannot start with a leading zero");
	} else {
		p = digits(ck, p);
	}
	if (p < ck->end && *p == '.') {
		integer = 0;
		q = digits(ck, p + 1);
		if (q == p + 1)
			return q >= ck->end ? end_of_input(ck) : bad(ck, q, "expected a digit after '.'");
		p = q;
	}
	if (p < ck->end && (*p == 'e' || *p == 'E')) {
		integer = 0;
		p++;
		if (p < ck->end && (*p == '+' || *p == '-'))
			p++;
		q = digits(ck, p);
		if (q == p)
			return q >= ck->end ? end_of_input(ck)
					    : bad(ck, q, "expected a digit in the exponent");
		p = q;
	}
	len = (size_t)(p - tok);
	if (integer && !integer_in_range(tok, len))
		return faucet_error_set(FAUCET_EINVALID,
					"%s: number %.*s at byte %zu cannot be held exactly "
					"(integers must lie between -2^63 and 2^64-1)",
					ck->where, (int)(len > 64 ? 64 : len), tok,
					(size_t)(tok - ck->text));
	if (!integer && (finite = number_is_finite(tok, len)) < 0)
		return faucet_error_set(finite, "%s: out of memory checking a number", ck->where);
	if (!integer && !finite)
		return faucet_error_set(FAUCET_EINVALID,
					"%s: number %.*s at byte %zu is too large for a double; "
					"refusing it rather than storing infinity",
					ck->where, (int)(len > 64 ? 64 : len), tok,
					(size_t)(tok - ck->text));
	if (integer && len == 2 && tok[0] == '-')
		ck->out->compact = 0; /* "-0" is printed as "0" */
	*next = p;
	return 0;
}

static int check_literal(const checker *ck, const char *p, const char **next)
{
	const char *q = p;
	size_t len;

	while (q < ck->end && is_letter(*q))
		q++;
	len = (size_t)(q - p);
	if ((len == 4 && (memcmp(p, "true", 4) == 0 || memcmp(p, "null", 4) == 0)) ||
	    (len == 5 && memcmp(p, "false", 5) == 0)) {
		*next = q;
		return 0;
	}
	return bad(ck, p, "'%.*s' is not a JSON value", (int)(len > 16 ? 16 : len), p);
}

static int push_name(checker *ck, name_span span)
{
	if (ck->nnames == ck->cap) {
		size_t cap = ck->cap * 2;
		name_span *grown;
		if (ck->names == ck->local) {
			grown = faucet__malloc(cap * sizeof(*grown));
			if (grown != NULL)
				memcpy(grown, ck->local, sizeof(ck->local));
		} else {
			grown = faucet__realloc(ck->names, cap * sizeof(*grown));
		}
		if (grown == NULL)
			return FAUCET_ENOMEM;
		ck->names = grown;
		ck->cap = cap;
	}
	ck->names[ck->nnames++] = span;
	return 0;
}

static int span_cmp(const void *a, const void *b)
{
	const name_span *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->at, y->at, n);

	if (c != 0)
		return c;
	return x->len < y->len ? -1 : x->len > y->len;
}

/* The object whose names start at names[base] has closed: refuse a name
 * given twice, then forget its names. */
static int close_object(checker *ck, size_t base)
{
	name_span *m = ck->names + base;
	size_t n = ck->nnames - base;
	const name_span *dup = NULL;

	if (n <= 16) {
		for (size_t i = 1; i < n && dup == NULL; i++) {
			for (size_t j = 0; j < i; j++) {
				if (m[i].len == m[j].len && memcmp(m[i].at, m[j].at, m[i].len) == 0) {
					dup = &m[i];
					break;
				}
			}
		}
	} else {
		qsort(m, n, sizeof(*m), span_cmp);
		for (size_t i = 1; i < n && dup == NULL; i++) {
			if (span_cmp(&m[i - 1], &m[i]) == 0)
				dup = m[i].at > m[i - 1].at ? &m[i] : &m[i - 1];
		}
	}
	ck->nnames = base;
	if (dup != NULL)
		return faucet_error_set(FAUCET_EINVALID,
					"%s: JSON object has a duplicate member name \"%.*s\" at byte "
					"%zu; refusing a value that would not be stored as given",
					ck->where, (int)(dup->len > 64 ? 64 : dup->len), dup->at,
					(size_t)(dup->at - 1 - ck->text));
	return 0;
}

/* A member name and its colon, at p (white space before it skipped). */
static int check_member_name(checker *ck, const char *p, const char **next)
{
	name_span span;
	int rc;

	if (p >= ck->end)
		return end_of_input(ck);
	if (*p != '"')
		return unexpected(ck, p, "a member name in double quotes");
	rc = check_string(ck, p, &p, &span);
	if (rc == 0)
		rc = push_name(ck, span);
	if (rc != 0)
		return rc;
	p = skip_space(ck, p);
	if (p >= ck->end)
		return end_of_input(ck);
	if (*p != ':')
		return unexpected(ck, p, "':' after a member name");
	*next = p + 1;
	return 0;
}

static int check_document(checker *ck)
{
	char kind[FAUCET_JSON_MAX_DEPTH]; /* '[' or '{' for each open container */
	size_t base[FAUCET_JSON_MAX_DEPTH];
	int depth = 0, rc;
	const char *p = ck->text;

	for (;;) {
		/* A value is expected at p. */
		p = skip_space(ck, p);
		if (p >= ck->end)
			return end_of_input(ck);
		ck->out->items++;
		if (*p == '{' || *p == '[') {
			char open = *p;
			if (depth == FAUCET_JSON_MAX_DEPTH)
				return bad(ck, p, "nested deeper than %d levels", FAUCET_JSON_MAX_DEPTH);
			kind[depth] = open;
			base[depth] = ck->nnames;
			depth++;
			p = skip_space(ck, p + 1);
			if (p < ck->end && *p == (open == '{' ? '}' : ']')) {
				depth--;
				p++;
			} else if (open == '{') {
				rc = check_member_name(ck, p, &p);
				if (rc != 0)
					return rc;
				continue;
			} else {
				continue;
			}
		} else if (*p == '"') {
			name_span span;
			rc = check_string(ck, p, &p, &span);
			if (rc != 0)
				return rc;
		} else if (*p == '-' || is_digit(*p)) {
			rc = check_number(ck, p, &p);
			if (rc != 0)
				return rc;
		} else if (is_letter(*p)) {
			rc = check_literal(ck, p, &p);
			if (rc != 0)
				return rc;
		} else {
			return unexpected(ck, p, "a JSON value");
		}

		/* A value has ended: close containers until one continues. */
		for (;;) {
			p = skip_space(ck, p);
			if (depth == 0) {
				if (p < ck->end)
					return bad(ck, p, "trailing characters after the value");
				return 0;
			}
			if (p >= ck->end)
				return end_of_input(ck);
			if (*p == ',') {
				p++;
				if (kind[depth - 1] == '{') {
					rc = check_member_name(ck, skip_space(ck, p), &p);
					if (rc != 0)
						return rc;
				}
				break;
			}
			if (*p != (kind[depth - 1] == '{' ? '}' : ']'))
				return unexpected(ck, p, kind[depth - 1] == '{' ? "',' or '}'" : "',' or ']'");
			depth--;
			if (kind[depth] == '{' && (rc = close_object(ck, base[depth])) != 0)
				return rc;
			p++;
		}
	}
}

int faucet__json_check(const char *text, size_t len, const char *where,
		       faucet_json_check_result *out)
{
	checker ck; /* not zeroed: `local` is scratch, filled as names come */
	int rc;

	ck.text = text;
	ck.end = text + len;
	ck.where = where;
	ck.out = out;
	ck.nnames = 0;
	out->items = 0;
	out->compact = 1;
	ck.names = ck.local;
	ck.cap = FAUCET_ARRAY_LEN(ck.local);
	rc = check_document(&ck);
	if (ck.names != ck.local)
		free(ck.names);
	return rc;
}
