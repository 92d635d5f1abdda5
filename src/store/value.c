/*
 * value.c - immutable, reference-counted JSON values.
 *
 * Values are parsed by json-c in strict mode and kept as both a tree (for
 * structural comparison) and their compact text (what every store writes).
 * json-c alone does not satisfy SPEC section 2: it clamps an integer above
 * 2^64-1 to 2^64-1, and keeps only the last of two members with one name.
 * So after parsing we walk the input and the re-serialised text side by side
 * and refuse the value when they disagree: a different number of values
 * means a duplicate member was dropped; a different number literal means a
 * number was altered.  Parsed doubles keep their source text (json-c's
 * double_s), so 0.1 stays 0.1; a double that overflows to infinity is
 * refused because it could not compare correctly afterwards.
 */
#include <math.h>
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

/* A walk over JSON text that yields each value in document order, skipping
 * member names.  The text is already known to be valid JSON. */
typedef struct {
	const char *p;
	const char *end;
	const char *start; /* of the whole text, for offsets */
} json_walk;

typedef enum { ITEM_END, ITEM_NUMBER, ITEM_OTHER } item_kind;

static const char *skip_string(const char *p, const char *end)
{
	p++; /* opening quote */
	while (p < end && *p != '"') {
		if (*p == '\\' && p + 1 < end)
			p++;
		p++;
	}
	return p < end ? p + 1 : end;
}

static item_kind walk_next(json_walk *w, const char **tok, size_t *toklen)
{
	for (;;) {
		const char *p = w->p;
		while (p < w->end && (is_json_space(*p) || *p == ',' || *p == ':' ||
				      *p == ']' || *p == '}'))
			p++;
		if (p >= w->end) {
			w->p = p;
			return ITEM_END;
		}
		if (*p == '"') {
			const char *after = skip_string(p, w->end), *q = after;
			while (q < w->end && is_json_space(*q))
				q++;
			w->p = after;
			if (q < w->end && *q == ':')
				continue; /* a member name, not a value */
			*tok = p;
			*toklen = (size_t)(after - p);
			return ITEM_OTHER;
		}
		if (*p == '-' || (*p >= '0' && *p <= '9')) {
			const char *q = p;
			while (q < w->end && (*q == '-' || *q == '+' || *q == '.' || *q == 'e' ||
					      *q == 'E' || (*q >= '0' && *q <= '9')))
				q++;
			*tok = p;
			*toklen = (size_t)(q - p);
			w->p = q;
			return ITEM_NUMBER;
		}
		/* '{', '[', true, false, null */
		*tok = p;
		*toklen = 1;
		if (*p == '{' || *p == '[') {
			w->p = p + 1;
		} else {
			const char *q = p + 1; /* always advance, whatever the byte */
			while (q < w->end && ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z')))
				q++;
			w->p = q;
			*toklen = (size_t)(q - p);
		}
		return ITEM_OTHER;
	}
}

/* json-c accepts NaN and Infinity even in strict mode; JSON does not. */
static int is_json_literal(const char *tok, size_t len)
{
	if (tok[0] == '{' || tok[0] == '[' || tok[0] == '"')
		return 1;
	return (len == 4 && (memcmp(tok, "true", 4) == 0 || memcmp(tok, "null", 4) == 0)) ||
	       (len == 5 && memcmp(tok, "false", 5) == 0);
}

static int number_is_finite(const char *tok, size_t len)
{
	char buf[512];

	if (memchr(tok, '.', len) == NULL && memchr(tok, 'e', len) == NULL &&
	    memchr(tok, 'E', len) == NULL)
		return 1; /* an integer: checked against the re-serialised text */
	if (len >= sizeof(buf))
		return 1; /* a long mantissa; strtod below would still be finite */
	memcpy(buf, tok, len);
	buf[len] = '\0';
	return isfinite(strtod(buf, NULL));
}

/* Check that `out` (json-c's rendering) holds exactly what `in` held. */
static int check_fidelity(const char *in, size_t in_len, const char *out, size_t out_len,
			  const char *where)
{
	json_walk a = {in, in + in_len, in}, b = {out, out + out_len, out};
	size_t in_items = 0, out_items = 0;
	const char *ta, *tb;
	size_t la, lb;
	item_kind ka, kb;

	/* First count: a dropped duplicate member makes the counts differ and
	 * would misalign the number comparison below. */
	while (walk_next(&a, &ta, &la) != ITEM_END)
		in_items++;
	while (walk_next(&b, &tb, &lb) != ITEM_END)
		out_items++;
	if (in_items != out_items)
		return faucet_error_set(FAUCET_EINVALID,
					"%s: JSON object has a duplicate member name; "
					"refusing a value that would not be stored as given", where);
	a.p = in;
	b.p = out;
	for (;;) {
		ka = walk_next(&a, &ta, &la);
		kb = walk_next(&b, &tb, &lb);
		if (ka == ITEM_END || kb == ITEM_END)
			return 0;
		if (ka == ITEM_OTHER && !is_json_literal(ta, la))
			return faucet_error_set(FAUCET_EINVALID,
						"%s: malformed JSON at byte %zu: '%.*s' is not a JSON value",
						where, (size_t)(ta - in), (int)(la > 16 ? 16 : la), ta);
		if (ka != ITEM_NUMBER)
			continue;
		if (!number_is_finite(ta, la))
			return faucet_error_set(FAUCET_EINVALID,
						"%s: number %.*s at byte %zu is too large for a "
						"double; refusing it rather than storing infinity",
						where, (int)(la > 64 ? 64 : la), ta, (size_t)(ta - in));
		if (kb != ITEM_NUMBER || la != lb || memcmp(ta, tb, la) != 0) {
			if (la == 2 && memcmp(ta, "-0", 2) == 0)
				continue; /* -0 is the integer 0 */
			return faucet_error_set(FAUCET_EINVALID,
						"%s: number %.*s at byte %zu cannot be held exactly "
						"(integers must lie between -2^63 and 2^64-1)",
						where, (int)(la > 64 ? 64 : la), ta, (size_t)(ta - in));
		}
	}
}

static int value_wrap(faucet_value **out, json_object *tree, const char *in, size_t in_len,
		      const char *where)
{
	size_t len = 0;
	const char *text;
	faucet_value *v;

	text = json_object_to_json_string_length(tree, JSON_C_TO_STRING_PLAIN |
							       JSON_C_TO_STRING_NOSLASHESCAPE,
						 &len);
	if (text == NULL) {
		json_object_put(tree);
		return faucet_error_set(FAUCET_ENOMEM, "out of memory serialising JSON");
	}
	if (in != NULL && check_fidelity(in, in_len, text, len, where) != 0) {
		json_object_put(tree);
		return FAUCET_EINVALID;
	}
	v = faucet__malloc(sizeof(*v) + len + 1);
	if (v == NULL) {
		json_object_put(tree);
		return FAUCET_ENOMEM;
	}
	atomic_init(&v->refs, 1);
	v->tree = tree;
	v->len = len;
	memcpy(v->text, text, len + 1);
	*out = v;
	return 0;
}

int faucet_value__parse_at(faucet_value **out, const char *text, size_t len, const char *where)
{
	struct json_tokener *tok;
	json_object *tree;
	enum json_tokener_error err;
	size_t end, at;
	int fed_terminator = 0;

	*out = NULL;
	if (text == NULL)
		return faucet_error_set(FAUCET_EINVALID, "%s: no JSON text", where);
	if (len > (size_t)INT32_MAX)
		return faucet_error_set(FAUCET_EINVALID, "%s: JSON text too large", where);
	if (blank(text, len))
		return faucet_error_set(FAUCET_EINVALID, "%s: malformed JSON: empty input", where);
	tok = json_tokener_new_ex(JSON_MAX_DEPTH);
	if (tok == NULL)
		return faucet_error_set(FAUCET_ENOMEM, "out of memory");
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
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
		json_tokener_free(tok);
		return faucet_error_set(FAUCET_EINVALID, "%s: malformed JSON at byte %zu: %s",
					where, at > len ? len : at, desc);
	}
	json_tokener_free(tok);
	for (size_t i = end; i < len; i++) {
		if (!is_json_space(text[i])) {
			json_object_put(tree);
			return faucet_error_set(FAUCET_EINVALID,
						"%s: malformed JSON at byte %zu: trailing characters "
						"after the value", where, i);
		}
	}
	return value_wrap(out, tree, text, len, where);
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
	return value_wrap(out, tree, NULL, 0, NULL);
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
