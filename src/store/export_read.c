/*
 * export_read.c - reading an export document one value at a time.
 *
 *   {"version":1,"pipeline":"orders","exported_at":"...","keys":{"orders::a":{...}}}
 *
 * The document is not parsed as one JSON value, for two reasons:
 *   - Memory.  A million-key document is tens of megabytes of text and a
 *     json-c tree of it is gigabytes; read from a file, this reader holds
 *     one block of input plus the value being read, whatever the size.
 *   - Depth.  The document wraps each value in two levels (the document
 *     object and `keys`).  Parsed whole, a value at the deepest level a put
 *     accepts would be refused inside its backup, a backup that cannot be
 *     restored.  Here the outer structure is read by a small scanner and
 *     each value is handed on as text, to be checked on its own by the
 *     same strict checker a put uses.
 * The scanner only finds where each value ends (strings, brackets); it
 * does not judge a value, which the callee does.  Offsets in messages are
 * byte offsets in the whole document.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <faucet/store.h>

#include "export_internal.h"
#include "values/json_check.h"

#define READ_BLOCK 65536
#define NO_MARK ((size_t)-1)
#define WHERE "state export"

typedef struct {
	FILE *f;             /* NULL: the whole document is in data */
	const char *data;    /* the bytes at hand: the document, or buf */
	char *buf;           /* file mode: the window of the document read so far */
	size_t len, pos, cap;
	size_t mark;         /* first byte that must stay in the window, or NO_MARK */
	uint64_t base;       /* the document offset of data[0] */
	int eof;
	faucet_buf name;     /* the member name just read, decoded */
} doc_in;

void faucet__doc_header_dispose(faucet__doc_header *h)
{
	if (h == NULL)
		return;
	free(h->pipeline);
	free(h->exported_at);
	h->pipeline = NULL;
	h->exported_at = NULL;
}

/* ---- the input window ------------------------------------------------- */

/* Read the next block, first dropping what nobody needs any more (before
 * the mark, or before pos).  1 = more bytes, 0 = end of input, < 0 error. */
static int in_more(doc_in *in)
{
	size_t keep = in->mark != NO_MARK ? in->mark : in->pos, n;

	if (in->f == NULL || in->eof)
		return 0;
	if (keep > 0) {
		memmove(in->buf, in->buf + keep, in->len - keep);
		in->len -= keep;
		in->pos -= keep;
		if (in->mark != NO_MARK)
			in->mark -= keep;
		in->base += keep;
	}
	if (in->cap - in->len < READ_BLOCK) {
		size_t cap = in->cap ? in->cap : READ_BLOCK;
		char *grown;

		while (cap - in->len < READ_BLOCK)
			cap *= 2;
		grown = faucet__realloc(in->buf, cap);
		if (grown == NULL)
			return FAUCET_ENOMEM;
		in->buf = grown;
		in->cap = cap;
	}
	n = fread(in->buf + in->len, 1, in->cap - in->len, in->f);
	in->data = in->buf;
	if (n == 0) {
		if (ferror(in->f))
			return faucet__error_os(FAUCET_EIO, errno, "cannot read the export document");
		in->eof = 1;
		return 0;
	}
	in->len += n;
	return 1;
}

/* 1 when a byte is at pos, 0 at the end of the input, < 0 on error. */
static int in_ensure(doc_in *in)
{
	if (in->pos < in->len)
		return 1;
	return in_more(in);
}

__attribute__((format(printf, 2, 3))) static int malformed(const doc_in *in, const char *fmt,
							    ...)
{
	char why[160];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return faucet_error_set(FAUCET_EINVALID, WHERE ": malformed JSON at byte %llu: %s",
				(unsigned long long)(in->base + in->pos), why);
}

/* The byte at pos after white space; 0 with *c = -1 at the end of input. */
static int skip_ws(doc_in *in, int *c)
{
	for (;;) {
		int rc = in_ensure(in);
		if (rc < 0)
			return rc;
		if (rc == 0) {
			*c = -1;
			return 0;
		}
		*c = (unsigned char)in->data[in->pos];
		if (*c != ' ' && *c != '\t' && *c != '\n' && *c != '\r')
			return 0;
		in->pos++;
	}
}

/* ---- skipping over one value ---------------------------------------- */

/* pos is on the opening quote; leaves pos after the closing one. */
static int scan_string(doc_in *in)
{
	in->pos++;
	for (;;) {
		int rc = in_ensure(in);
		unsigned char c;

		if (rc < 0)
			return rc;
		if (rc == 0)
			return malformed(in, "unterminated string");
		c = (unsigned char)in->data[in->pos];
		if (c == '"') {
			in->pos++;
			return 0;
		}
		if (c < 0x20)
			return malformed(in, "control character in a string");
		in->pos++;
		if (c == '\\') {
			if ((rc = in_ensure(in)) < 0)
				return rc;
			if (rc == 0)
				return malformed(in, "unterminated string");
			in->pos++; /* the escaped byte cannot end the string */
		}
	}
}

static int is_delimiter(int c)
{
	return c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' ||
	       c == '\r';
}

/* Move pos over one value that starts at pos (white space skipped).  Only
 * the extent is found: brackets are counted without matching their kinds,
 * which the checker of the value's text then does. */
static int scan_value(doc_in *in)
{
	size_t depth = 0;
	int c, rc;

	if ((rc = skip_ws(in, &c)) != 0)
		return rc;
	if (c < 0 || c == ',' || c == '}' || c == ']')
		return malformed(in, c < 0 ? "unexpected end of input" : "expected a value");
	if (c == '"')
		return scan_string(in);
	if (c != '{' && c != '[') {
		while ((rc = in_ensure(in)) > 0 && !is_delimiter(in->data[in->pos]))
			in->pos++;
		return rc < 0 ? rc : 0;
	}
	for (;;) {
		if ((rc = in_ensure(in)) < 0)
			return rc;
		if (rc == 0)
			return malformed(in, "unexpected end of input");
		c = (unsigned char)in->data[in->pos];
		if (c == '"') {
			if ((rc = scan_string(in)) != 0)
				return rc;
			continue;
		}
		in->pos++;
		if (c == '{' || c == '[') {
			depth++;
		} else if (c == '}' || c == ']') {
			if (--depth == 0)
				return 0;
		}
	}
}

/* ---- strings -------------------------------------------------------- */

static int hex4(const char *p, unsigned *out)
{
	unsigned v = 0;

	for (int i = 0; i < 4; i++) {
		int d = faucet__hex_digit(p[i]);
		if (d < 0)
			return -1;
		v = v * 16 + (unsigned)d;
	}
	*out = v;
	return 0;
}

static void put_utf8(faucet_buf *b, unsigned cp)
{
	char u[4];
	size_t n;

	if (cp < 0x80) {
		u[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = (char)(0xC0 | (cp >> 6));
		u[1] = (char)(0x80 | (cp & 0x3F));
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = (char)(0xE0 | (cp >> 12));
		u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		u[2] = (char)(0x80 | (cp & 0x3F));
		n = 3;
	} else {
		u[0] = (char)(0xF0 | (cp >> 18));
		u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
		u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
		u[3] = (char)(0x80 | (cp & 0x3F));
		n = 4;
	}
	(void)faucet__buf_put(b, u, n);
}

/* Decode the quoted JSON string text[0..len) (quotes included, already
 * scanned) into out.  \u0000 is refused: every string read here (a key, the
 * pipeline, exported_at) is used as a C string, and cutting it short at the
 * NUL would silently make it another one. */
static int decode_string(const char *text, size_t len, faucet_buf *out, uint64_t offset)
{
	const char *p = text + 1, *end = text + len - 1;

	out->len = 0;
	out->failed = 0;
	if (faucet__buf_grow(out, len) != 0)
		return FAUCET_ENOMEM;
	out->ptr[0] = '\0';
	while (p < end) {
		unsigned cp, lo;

		if (*p != '\\') {
			const char *run = p;
			while (p < end && *p != '\\')
				p++;
			(void)faucet__buf_put(out, run, (size_t)(p - run));
			continue;
		}
		p++;
		switch (*p++) {
		case '"': (void)faucet__buf_putc(out, '"'); continue;
		case '\\': (void)faucet__buf_putc(out, '\\'); continue;
		case '/': (void)faucet__buf_putc(out, '/'); continue;
		case 'b': (void)faucet__buf_putc(out, '\b'); continue;
		case 'f': (void)faucet__buf_putc(out, '\f'); continue;
		case 'n': (void)faucet__buf_putc(out, '\n'); continue;
		case 'r': (void)faucet__buf_putc(out, '\r'); continue;
		case 't': (void)faucet__buf_putc(out, '\t'); continue;
		case 'u': break;
		default: goto bad_escape;
		}
		if (end - p < 4 || hex4(p, &cp) != 0)
			goto bad_escape;
		p += 4;
		if (cp >= 0xD800 && cp < 0xDC00) {
			if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || hex4(p + 2, &lo) != 0 ||
			    lo < 0xDC00 || lo > 0xDFFF)
				goto bad_escape;
			p += 6;
			cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
		} else if (cp >= 0xDC00 && cp < 0xE000) {
			goto bad_escape;
		}
		if (cp == 0)
			return faucet_error_set(FAUCET_EINVALID,
						WHERE ": a string at byte %llu holds \\u0000, which "
						"no key, pipeline name or time can hold",
						(unsigned long long)offset);
		put_utf8(out, cp);
	}
	return out->failed ? FAUCET_ENOMEM : 0;
bad_escape:
	return faucet_error_set(FAUCET_EINVALID,
				WHERE ": malformed JSON at byte %llu: bad escape in a string",
				(unsigned long long)(offset + (uint64_t)(p - text)));
}

/* A member name at pos (white space skipped) into in->name. */
static int read_name(doc_in *in)
{
	uint64_t at;
	int c, rc;

	if ((rc = skip_ws(in, &c)) != 0)
		return rc;
	if (c != '"')
		return malformed(in, c < 0 ? "unexpected end of input" : "expected a member name");
	in->mark = in->pos;
	at = in->base + in->pos;
	rc = scan_string(in);
	if (rc == 0)
		rc = decode_string(in->data + in->mark, in->pos - in->mark, &in->name, at);
	in->mark = NO_MARK;
	return rc;
}

static int expect(doc_in *in, char want, const char *what)
{
	int c, rc = skip_ws(in, &c);

	if (rc != 0)
		return rc;
	if (c != want)
		return malformed(in, c < 0 ? "unexpected end of input" : "expected %s", what);
	in->pos++;
	return 0;
}

/* After a member: ',' (1, another follows) or '}' (0, the object ends). */
static int member_end(doc_in *in, int *more)
{
	int c, rc = skip_ws(in, &c);

	if (rc != 0)
		return rc;
	if (c != ',' && c != '}')
		return malformed(in, c < 0 ? "unexpected end of input" : "expected ',' or '}'");
	in->pos++;
	*more = c == ',';
	return 0;
}

/* ---- the header members ------------------------------------------- */

typedef struct {
	faucet__doc_header *out;
	char *version;  /* the version member's text */
	char *pipeline_text;
	int seen_keys, seen_exported_at;
	uint64_t pipeline_at, exported_at_at;
} header_state;

/* A header member's value text, checked as JSON. */
static int check_text(const char *text, size_t len, uint64_t at)
{
	faucet_json_check_result res;

	if (faucet__json_check(text, len, WHERE, &res) != 0)
		return faucet__error_wrap(WHERE ": member at byte %llu", (unsigned long long)at);
	return 0;
}

static int keep_text(char **slot, const char *text, size_t len, const char *name)
{
	if (*slot != NULL)
		return faucet_error_set(FAUCET_EINVALID, WHERE ": duplicate member name '%s'", name);
	*slot = faucet__strndup(text, len);
	return *slot ? 0 : FAUCET_ENOMEM;
}

static int header_member(doc_in *in, header_state *h, const char *text, size_t len,
			 uint64_t at)
{
	const char *name = in->name.ptr;
	int rc = check_text(text, len, at);

	if (rc != 0)
		return rc;
	if (strcmp(name, "version") == 0)
		return keep_text(&h->version, text, len, name);
	if (strcmp(name, "pipeline") == 0) {
		h->pipeline_at = at;
		return keep_text(&h->pipeline_text, text, len, name);
	}
	if (strcmp(name, "exported_at") == 0) {
		if (h->seen_exported_at++)
			return faucet_error_set(FAUCET_EINVALID,
						WHERE ": duplicate member name 'exported_at'");
		h->exported_at_at = at;
		if (len == 4 && memcmp(text, "null", 4) == 0)
			return 0;
		/* `text` points into the document: not NUL-terminated. */
		if (text[0] != '"')
			return faucet_error_set(FAUCET_EINVALID,
						"malformed state export: `exported_at` must be a "
						"string, got %.*s", (int)(len < 64 ? len : 64), text);
		if ((rc = decode_string(text, len, &in->name, at)) != 0)
			return rc;
		h->out->exported_at = faucet__buf_detach(&in->name);
		return h->out->exported_at ? 0 : FAUCET_ENOMEM;
	}
	return 0; /* unknown members are ignored, as the original does */
}

/* The version member: present, an unsigned integer, and one this build reads. */
static int check_version(const char *text)
{
	unsigned long long version;
	char *end;

	if (text == NULL)
		return faucet_error_set(FAUCET_EINVALID, "state export has no `version` field");
	if (text[0] == '-' || strcspn(text, ".eE\"tfn[{") != strlen(text))
		return faucet_error_set(FAUCET_EINVALID,
					"state export `version` must be an integer, got %.64s", text);
	errno = 0;
	version = strtoull(text, &end, 10);
	if (errno != 0 || version == 0 || version > FAUCET_STATE_EXPORT_VERSION)
		return faucet_error_set(FAUCET_EINVALID,
					"state export version %.40s is not supported by this build "
					"(supported: %d) - import it with the faucet release that "
					"wrote it or newer",
					text, FAUCET_STATE_EXPORT_VERSION);
	return 0;
}

static int finish_header(doc_in *in, header_state *h)
{
	int rc = check_version(h->version);

	if (rc != 0)
		return rc;
	if (h->pipeline_text == NULL)
		return faucet_error_set(FAUCET_EINVALID,
					"malformed state export: missing field `pipeline`");
	if (h->pipeline_text[0] != '"')
		return faucet_error_set(FAUCET_EINVALID,
					"malformed state export: `pipeline` must be a string, got "
					"%.64s", h->pipeline_text);
	rc = decode_string(h->pipeline_text, strlen(h->pipeline_text), &in->name, h->pipeline_at);
	if (rc != 0)
		return rc;
	h->out->pipeline = faucet__buf_detach(&in->name);
	return h->out->pipeline ? 0 : FAUCET_ENOMEM;
}

/* ---- the walk -------------------------------------------------------- */

/* The members of `keys`; pos is on its '{'. */
static int walk_keys(doc_in *in, faucet__doc_entry_fn fn, void *ctx)
{
	int c, more = 1, rc;

	in->pos++;
	if ((rc = skip_ws(in, &c)) != 0)
		return rc;
	if (c == '}') {
		in->pos++;
		return 0;
	}
	while (more) {
		uint64_t at;

		if ((rc = read_name(in)) != 0 || (rc = expect(in, ':', "':'")) != 0 ||
		    (rc = skip_ws(in, &c)) != 0)
			return rc;
		in->mark = in->pos;
		at = in->base + in->pos;
		if ((rc = scan_value(in)) != 0)
			return rc;
		rc = fn(ctx, in->name.ptr, in->data + in->mark, in->pos - in->mark, at);
		in->mark = NO_MARK;
		if (rc != 0)
			return rc;
		if ((rc = member_end(in, &more)) != 0)
			return rc;
	}
	return 0;
}

/* One top-level member: its name is in in->name. */
static int walk_member(doc_in *in, header_state *h, faucet__doc_entry_fn fn, void *ctx)
{
	uint64_t at;
	int c, rc;

	if ((rc = skip_ws(in, &c)) != 0)
		return rc;
	if (strcmp(in->name.ptr, "keys") == 0 && c == '{') {
		if (h->seen_keys++)
			return faucet_error_set(FAUCET_EINVALID, WHERE ": duplicate member name 'keys'");
		return walk_keys(in, fn, ctx);
	}
	in->mark = in->pos;
	at = in->base + in->pos;
	rc = scan_value(in);
	if (rc == 0 && strcmp(in->name.ptr, "keys") == 0)
		rc = faucet_error_set(FAUCET_EINVALID,
				      "malformed state export: `keys` must be an object, got %.*s",
				      (int)(in->pos - in->mark < 64 ? in->pos - in->mark : 64),
				      in->data + in->mark);
	if (rc == 0)
		rc = header_member(in, h, in->data + in->mark, in->pos - in->mark, at);
	in->mark = NO_MARK;
	return rc;
}

static int walk_document(doc_in *in, header_state *h, faucet__doc_entry_fn fn, void *ctx)
{
	int c, more = 1, rc;

	if ((rc = skip_ws(in, &c)) != 0)
		return rc;
	if (c < 0)
		return faucet_error_set(FAUCET_EINVALID, WHERE ": malformed JSON: empty input");
	if (c != '{') {
		/* Not an object: say what a reader needs to hear once it is
		 * known to be JSON at all. */
		in->mark = in->pos;
		rc = scan_value(in);
		if (rc == 0)
			rc = check_text(in->data + in->mark, in->pos - in->mark, in->base + in->mark);
		in->mark = NO_MARK;
		return rc != 0 ? rc
			       : faucet_error_set(FAUCET_EINVALID,
						  "state export has no `version` field");
	}
	in->pos++;
	if ((rc = skip_ws(in, &c)) != 0)
		return rc;
	if (c == '}') {
		in->pos++;
		more = 0;
	}
	while (more) {
		if ((rc = read_name(in)) != 0 || (rc = expect(in, ':', "':'")) != 0 ||
		    (rc = walk_member(in, h, fn, ctx)) != 0 || (rc = member_end(in, &more)) != 0)
			return rc;
	}
	if ((rc = skip_ws(in, &c)) != 0)
		return rc;
	if (c >= 0)
		return malformed(in, "text after the document");
	return finish_header(in, h);
}

static int walk(doc_in *in, faucet__doc_entry_fn fn, void *ctx, faucet__doc_header *header)
{
	header_state h;
	int rc;

	memset(&h, 0, sizeof(h));
	memset(header, 0, sizeof(*header));
	h.out = header;
	rc = walk_document(in, &h, fn, ctx);
	free(h.version);
	free(h.pipeline_text);
	faucet__buf_dispose(&in->name);
	free(in->buf);
	if (rc != 0)
		faucet__doc_header_dispose(header);
	return rc;
}

int faucet__doc_walk_memory(const char *text, size_t len, faucet__doc_entry_fn fn, void *ctx,
			    faucet__doc_header *header)
{
	doc_in in;

	memset(&in, 0, sizeof(in));
	in.data = text;
	in.len = text != NULL ? len : 0;
	in.mark = NO_MARK;
	return walk(&in, fn, ctx, header);
}

int faucet__doc_walk_file(FILE *f, faucet__doc_entry_fn fn, void *ctx,
			  faucet__doc_header *header)
{
	doc_in in;

	memset(&in, 0, sizeof(in));
	in.f = f;
	in.mark = NO_MARK;
	return walk(&in, fn, ctx, header);
}
