/*
 * value.c - immutable, reference-counted JSON values.
 *
 * Values are parsed by json-c in strict mode and kept as both a tree (for
 * structural comparison) and their compact text (what every store writes).
 * json-c alone does not satisfy SPEC section 2: it clamps an integer above
 * 2^64-1 to 2^64-1, and keeps only the last of two members with one name.
 * So after json-c has parsed a text we scan the text once more: an integer
 * literal outside [-2^63, 2^64-1] is refused, and when the text holds more
 * values than the tree, a duplicate member was dropped and the value is
 * refused.  Parsed doubles keep their source text (json-c's double_s), so
 * 0.1 stays 0.1; a double that overflows to infinity is refused because it
 * could not compare correctly afterwards.
 *
 * The stored text is the input itself when it is already compact (no white
 * space, no escapes) - every file this library writes is - and json-c's
 * compact rendering otherwise.  Either way the text and the tree hold the
 * same value; keeping the input avoids re-printing on every read.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "value_internal.h"

#define JSON_MAX_DEPTH 256

struct faucet_value {
	atomic_size_t refs;
	json_object *tree;
	size_t len;
	char text[];
};

static int is_json_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int blank(const char *text, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (!is_json_space(text[i]))
			return 0;
	}
	return 1;
}

/* One pass over valid JSON text (json-c accepted it) that checks what
 * json-c does not, and tells whether the text is already in the compact
 * form json-c would print.  Counted values let the caller detect a dropped
 * duplicate member by comparing with the parsed tree. */
typedef struct {
	size_t items;  /* values in document order, member names excluded */
	int compact;   /* no white space, no escapes, no "-0": json-c prints it as is */
} json_scan;

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* json-c accepts NaN and Infinity even in strict mode; JSON does not. */
static int is_json_literal(const char *tok, size_t len)
{
	return (len == 4 && (memcmp(tok, "true", 4) == 0 || memcmp(tok, "null", 4) == 0)) ||
	       (len == 5 && memcmp(tok, "false", 5) == 0);
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

static int number_is_finite(const char *tok, size_t len)
{
	char buf[512];

	if (len >= sizeof(buf))
		return 1; /* a long mantissa with a small exponent: checked by strtod below otherwise */
	memcpy(buf, tok, len);
	buf[len] = '\0';
	return isfinite(strtod(buf, NULL));
}

static int scan_json(const char *text, size_t len, const char *where, json_scan *out)
{
	const char *p = text, *end = text + len;

	out->items = 0;
	out->compact = 1;
	while (p < end) {
		const char *tok = p;
		char c = *p;

		if (is_json_space(c)) {
			out->compact = 0;
			p++;
		} else if (c == ',' || c == ':' || c == ']' || c == '}') {
			p++;
		} else if (c == '{' || c == '[') {
			out->items++;
			p++;
		} else if (c == '"') {
			const char *q = p + 1;
			while (q < end && *q != '"') {
				if (*q == '\\') {
					out->compact = 0; /* json-c may print the escape another way */
					q++;
				} else if ((unsigned char)*q < 0x20) {
					out->compact = 0;
				}
				q++;
			}
			p = q < end ? q + 1 : end;
			while (q + 1 < end && is_json_space(q[1]))
				q++;
			if (!(q + 1 < end && q[1] == ':'))
				out->items++; /* a value, not a member name */
		} else if (c == '-' || is_digit(c)) {
			int integer = 1;
			while (p < end && (*p == '-' || *p == '+' || *p == '.' || *p == 'e' || *p == 'E' ||
					   is_digit(*p))) {
				if (*p == '.' || *p == 'e' || *p == 'E')
					integer = 0;
				p++;
			}
			out->items++;
			if (integer && !integer_in_range(tok, (size_t)(p - tok)))
				return faucet_error_set(FAUCET_EINVALID,
							"%s: number %.*s at byte %zu cannot be held exactly "
							"(integers must lie between -2^63 and 2^64-1)",
							where, (int)((size_t)(p - tok) > 64 ? 64 : p - tok), tok,
							(size_t)(tok - text));
			if (!integer && !number_is_finite(tok, (size_t)(p - tok)))
				return faucet_error_set(FAUCET_EINVALID,
							"%s: number %.*s at byte %zu is too large for a "
							"double; refusing it rather than storing infinity",
							where, (int)((size_t)(p - tok) > 64 ? 64 : p - tok), tok,
							(size_t)(tok - text));
			if (integer && p - tok == 2 && tok[1] == '0')
				out->compact = 0; /* "-0" prints as "0" */
		} else {
			const char *q = p + 1; /* always advance, whatever the byte */
			while (q < end && ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z')))
				q++;
			if (!is_json_literal(p, (size_t)(q - p)))
				return faucet_error_set(FAUCET_EINVALID,
							"%s: malformed JSON at byte %zu: '%.*s' is not a JSON value",
							where, (size_t)(p - text),
							(int)(q - p > 16 ? 16 : q - p), p);
			out->items++;
			p = q;
		}
	}
	return 0;
}

/* Values in a parsed tree, counted as scan_json counts them in text. */
static size_t tree_items(json_object *o)
{
	size_t n = 1;

	if (json_object_is_type(o, json_type_object)) {
		json_object_object_foreach(o, name, member) {
			(void)name;
			n += tree_items(member);
		}
	} else if (json_object_is_type(o, json_type_array)) {
		size_t len = json_object_array_length(o);
		for (size_t i = 0; i < len; i++)
			n += tree_items(json_object_array_get_idx(o, i));
	}
	return n;
}

/* Wrap `tree` with its text: `in` itself when it is already compact,
 * json-c's rendering otherwise.  Takes ownership of tree. */
static int value_wrap(faucet_value **out, json_object *tree, const char *in, size_t in_len)
{
	size_t len = in_len;
	const char *text = in;
	faucet_value *v;

	if (text == NULL) {
		text = json_object_to_json_string_length(tree, JSON_C_TO_STRING_PLAIN |
								       JSON_C_TO_STRING_NOSLASHESCAPE,
							 &len);
		if (text == NULL) {
			json_object_put(tree);
			return faucet_error_set(FAUCET_ENOMEM, "out of memory serialising JSON");
		}
	}
	v = faucet__malloc(sizeof(*v) + len + 1);
	if (v == NULL) {
		json_object_put(tree);
		return FAUCET_ENOMEM;
	}
	atomic_init(&v->refs, 1);
	v->tree = tree;
	v->len = len;
	memcpy(v->text, text, len);
	v->text[len] = '\0';
	*out = v;
	return 0;
}

/* One tokener per thread, reset before each parse: allocating one costs as
 * much as a third of parsing a small bookmark.  Freed when the thread ends. */
static pthread_key_t tokener_key;
static pthread_once_t tokener_once = PTHREAD_ONCE_INIT;

static void tokener_destroy(void *tok)
{
	json_tokener_free(tok);
}

static void tokener_key_create(void)
{
	(void)pthread_key_create(&tokener_key, tokener_destroy);
}

static struct json_tokener *thread_tokener(void)
{
	struct json_tokener *tok;

	(void)pthread_once(&tokener_once, tokener_key_create);
	tok = pthread_getspecific(tokener_key);
	if (tok == NULL) {
		tok = json_tokener_new_ex(JSON_MAX_DEPTH);
		if (tok == NULL)
			return NULL;
		json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
		if (pthread_setspecific(tokener_key, tok) != 0) {
			json_tokener_free(tok);
			return NULL;
		}
	}
	json_tokener_reset(tok);
	return tok;
}

/* Drop this thread's tokener after a parse error.  json_tokener_reset()
 * does not clear everything a half-read token leaves behind (json-c 0.16
 * keeps a pending \u high surrogate), and a reused tokener then alters the
 * next value it parses: "\ud83d\u" followed by {"a":"\u0041"} read as
 * {"a":"\ufffdA"}.  Errors are rare, so starting afresh costs nothing. */
static void tokener_discard(void)
{
	struct json_tokener *tok = pthread_getspecific(tokener_key);

	if (tok != NULL && pthread_setspecific(tokener_key, NULL) == 0)
		json_tokener_free(tok);
}

int faucet_value__parse_at(faucet_value **out, const char *text, size_t len, const char *where)
{
	struct json_tokener *tok;
	json_object *tree;
	enum json_tokener_error err;
	size_t end, at;
	int fed_terminator = 0;
	json_scan scan;

	*out = NULL;
	if (text == NULL)
		return faucet_error_set(FAUCET_EINVALID, "%s: no JSON text", where);
	if (len > (size_t)INT32_MAX)
		return faucet_error_set(FAUCET_EINVALID, "%s: JSON text too large", where);
	if (blank(text, len))
		return faucet_error_set(FAUCET_EINVALID, "%s: malformed JSON: empty input", where);
	tok = thread_tokener();
	if (tok == NULL)
		return faucet_error_set(FAUCET_ENOMEM, "out of memory");
	tree = json_tokener_parse_ex(tok, text, (int)len);
	err = json_tokener_get_error(tok);
	if (tree == NULL && err == json_tokener_continue) {
		/* A bare number or an unfinished document: the terminator decides. */
		tree = json_tokener_parse_ex(tok, "", 1);
		err = json_tokener_get_error(tok);
		end = len;
		fed_terminator = 1;
	} else {
		end = json_tokener_get_parse_end(tok);
	}
	if (err != json_tokener_success) {
		const char *desc = json_tokener_error_desc(err);
		at = fed_terminator ? len : json_tokener_get_parse_end(tok);
		if (fed_terminator)
			desc = "unexpected end of input";
		json_object_put(tree);
		tokener_discard();
		return faucet_error_set(FAUCET_EINVALID, "%s: malformed JSON at byte %zu: %s",
					where, at > len ? len : at, desc);
	}
	for (size_t i = end; i < len; i++) {
		if (!is_json_space(text[i])) {
			json_object_put(tree);
			return faucet_error_set(FAUCET_EINVALID,
						"%s: malformed JSON at byte %zu: trailing characters "
						"after the value", where, i);
		}
	}
	/* json-c accepted the text; now refuse what it would not hold exactly. */
	if (scan_json(text, len, where, &scan) != 0) {
		json_object_put(tree);
		return FAUCET_EINVALID;
	}
	if (tree_items(tree) != scan.items) {
		json_object_put(tree);
		return faucet_error_set(FAUCET_EINVALID,
					"%s: JSON object has a duplicate member name; "
					"refusing a value that would not be stored as given", where);
	}
	return value_wrap(out, tree, scan.compact ? text : NULL, len);
}

int faucet_value_parse(faucet_value **out, const char *text, size_t len)
{
	if (out == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_value_parse: out is NULL");
	return faucet_value__parse_at(out, text, len, "JSON value");
}

int faucet_value__from_tree(faucet_value **out, json_object *tree)
{
	*out = NULL; /* a NULL tree is JSON null in json-c */
	return value_wrap(out, tree, NULL, 0);
}

json_object *faucet_value__tree(const faucet_value *v)
{
	return v->tree;
}

const char *faucet_value_json(const faucet_value *v)
{
	return v->text;
}

size_t faucet_value_len(const faucet_value *v)
{
	return v->len;
}

int faucet_value_equal(const faucet_value *a, const faucet_value *b)
{
	if (a == b)
		return 1;
	if (a == NULL || b == NULL)
		return 0;
	if (a->len == b->len && memcmp(a->text, b->text, a->len) == 0)
		return 1;
	return json_object_equal(a->tree, b->tree);
}

faucet_value *faucet_value_ref(faucet_value *v)
{
	if (v != NULL)
		atomic_fetch_add_explicit(&v->refs, 1, memory_order_relaxed);
	return v;
}

void faucet_value_free(faucet_value *v)
{
	if (v == NULL)
		return;
	if (atomic_fetch_sub_explicit(&v->refs, 1, memory_order_acq_rel) != 1)
		return;
	json_object_put(v->tree);
	free(v);
}
