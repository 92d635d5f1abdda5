/*
 * value.c - immutable, reference-counted JSON values.
 *
 * A value is its compact JSON text, and - once something needs the
 * structure - json-c's tree of it.  Every text first passes the strict
 * checker of json_check.c, which refuses what json-c would refuse and also
 * what json-c would accept but alter (doc/design.md §2.4): integers beyond
 * [-2^63, 2^64-1], which it clamps; a member name given twice, of which it
 * keeps one; NaN, Infinity, numbers that overflow a double; lone \u
 * surrogates and ill-formed UTF-8.
 *
 * The stored text is the input itself when it is already compact (no white
 * space, no escapes) - every file this library writes is - and json-c's
 * compact rendering otherwise.  A compact text is all a store needs to
 * write or to return, so its tree is built only on first use (structural
 * comparison, the backfill and export readers); a get that merely returns
 * a stored bookmark costs one checking pass, not a parse.  Other texts are
 * parsed at once, since their stored form is json-c's rendering.  Parsed
 * doubles keep their source text (json-c's double_s), so 0.1 stays 0.1.
 *
 * Equality is of JSON values (doc/design.md §2.5), on the trees: member order
 * does not matter, and numbers compare by exact decimal value - their
 * written text normalised to sign, significant digits and scale - never
 * through a double.  Equal texts short-cut it with one memcmp.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "values/json_check.h"
#include "value_internal.h"

struct faucet_value {
	atomic_size_t refs;
	atomic_int built;  /* tree holds the parsed text (json-c's null is NULL) */
	json_object *tree;
	size_t len;
	char text[];
};

/* Serialises the first building of a value's tree; later readers see
 * `built` set and never take it. */
static pthread_mutex_t tree_lock = PTHREAD_MUTEX_INITIALIZER;

static int blank(const char *text, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (text[i] != ' ' && text[i] != '\t' && text[i] != '\n' && text[i] != '\r')
			return 0;
	}
	return 1;
}

/* Values in a parsed tree, counted as faucet__json_check counts them in text. */
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
 * json-c's rendering otherwise.  Takes ownership of tree.  With `lazy` the
 * tree is not built yet (tree is NULL, text is `in`). */
static int value_wrap(faucet_value **out, json_object *tree, int lazy, const char *in,
		      size_t in_len)
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
	atomic_init(&v->built, !lazy);
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
		tok = json_tokener_new_ex(FAUCET_JSON_MAX_DEPTH);
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

/* json-c's tree of a text the checker has passed.  A refusal here means
 * the checker and json-c disagree, which the fuzzers hunt for. */
static int parse_tree(const char *text, size_t len, const char *where, json_object **out)
{
	struct json_tokener *tok = thread_tokener();
	enum json_tokener_error err;
	json_object *tree;

	*out = NULL;
	if (tok == NULL)
		return faucet_error_set(FAUCET_ENOMEM, "out of memory");
	tree = json_tokener_parse_ex(tok, text, (int)len);
	err = json_tokener_get_error(tok);
	if (tree == NULL && err == json_tokener_continue) {
		/* A bare number ends only where the input does. */
		tree = json_tokener_parse_ex(tok, "", 1);
		err = json_tokener_get_error(tok);
	}
	if (err != json_tokener_success) {
		json_object_put(tree);
		tokener_discard();
		return faucet_error_set(FAUCET_ERROR, "%s: json-c refused JSON the checker passed: %s",
					where, json_tokener_error_desc(err));
	}
	*out = tree;
	return 0;
}

int faucet_value__from_buf(faucet_value **out, faucet_buf *b, const char *where)
{
	size_t len = b->len, head = offsetof(faucet_value, text);
	faucet_value *v;

	*out = NULL;
	if (b->failed || b->ptr == NULL || blank(b->ptr, len))
		return b->failed ? FAUCET_ENOMEM : faucet_value_parse_at(out, "", 0, where);
	if (len > (size_t)INT32_MAX)
		return faucet_error_set(FAUCET_EINVALID, "%s: JSON text too large", where);
	/* Grow the buffer's block by the value's header and slide the text
	 * behind it: a large block grows in place (mremap), so the text is
	 * never held twice. */
	v = faucet__realloc(b->ptr, head + len + 1);
	if (v == NULL)
		return FAUCET_ENOMEM;
	memmove((char *)v + head, v, len);
	b->ptr = NULL;
	b->len = b->cap = 0;
	atomic_init(&v->refs, 1);
	atomic_init(&v->built, 0);
	v->tree = NULL;
	v->len = len;
	v->text[len] = '\0';
	*out = v;
	return 0;
}

int faucet_value_parse_at(faucet_value **out, const char *text, size_t len, const char *where)
{
	faucet_json_check_result check;
	json_object *tree;
	int rc;

	if (out == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_value_parse_at: out is NULL");
	if (where == NULL)
		where = "JSON value";
	*out = NULL;
	if (text == NULL)
		return faucet_error_set(FAUCET_EINVALID, "%s: no JSON text", where);
	if (len > (size_t)INT32_MAX)
		return faucet_error_set(FAUCET_EINVALID, "%s: JSON text too large", where);
	if (blank(text, len))
		return faucet_error_set(FAUCET_EINVALID, "%s: malformed JSON: empty input", where);
	rc = faucet__json_check(text, len, where, &check);
	if (rc != 0)
		return rc;
	if (check.compact)
		return value_wrap(out, NULL, 1, text, len);
	rc = parse_tree(text, len, where, &tree);
	if (rc != 0)
		return rc;
	/* Names spelt with different escapes ("a" and "\u0061") are one name;
	 * json-c keeps one of them, so the tree holds fewer values. */
	if (tree_items(tree) != check.items) {
		json_object_put(tree);
		return faucet_error_set(FAUCET_EINVALID,
					"%s: JSON object has a duplicate member name; "
					"refusing a value that would not be stored as given", where);
	}
	return value_wrap(out, tree, 0, NULL, 0);
}

int faucet_value_parse(faucet_value **out, const char *text, size_t len)
{
	if (out == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_value_parse: out is NULL");
	return faucet_value_parse_at(out, text, len, NULL);
}

int faucet_value__from_tree(faucet_value **out, json_object *tree)
{
	*out = NULL; /* a NULL tree is JSON null in json-c */
	return value_wrap(out, tree, 0, NULL, 0);
}

int faucet_value__tree(const faucet_value *cv, json_object **out)
{
	faucet_value *v = (faucet_value *)cv; /* the tree is a cache of the text */
	int rc = 0;

	if (!atomic_load_explicit(&v->built, memory_order_acquire)) {
		if (pthread_mutex_lock(&tree_lock) != 0)
			return faucet_error_set(FAUCET_ERROR, "cannot lock the JSON tree cache");
		if (!atomic_load_explicit(&v->built, memory_order_relaxed)) {
			rc = parse_tree(v->text, v->len, "JSON value", &v->tree);
			if (rc == 0)
				atomic_store_explicit(&v->built, 1, memory_order_release);
		}
		(void)pthread_mutex_unlock(&tree_lock);
	}
	*out = rc == 0 ? v->tree : NULL;
	return rc;
}

/* The member is read from a private tree, not from v's shared one: turning
 * a node into text writes into the node (json-c keeps its print buffer
 * there), which readers of a shared tree on other threads must not see.
 * The member's subtree then becomes the new value's, as a parsed
 * non-compact text does. */
int faucet_value_member(const faucet_value *v, const char *name, faucet_value **out)
{
	json_object *tree, *member;
	int rc;

	if (out == NULL || v == NULL || name == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_value_member: NULL argument");
	*out = NULL;
	if (v->text[0] != '{')
		return 0; /* not an object: its compact text would start with '{' */
	rc = parse_tree(v->text, v->len, "JSON value", &tree);
	if (rc != 0)
		return rc;
	if (json_object_object_get_ex(tree, name, &member))
		rc = value_wrap(out, json_object_get(member), 0, NULL, 0);
	json_object_put(tree);
	return rc;
}

const char *faucet_value_json(const faucet_value *v)
{
	return v->text;
}

size_t faucet_value_len(const faucet_value *v)
{
	return v->len;
}

/* ---- equality (doc/design.md §2.5) -----------------------------------
 *
 * Two values are equal when they are the same JSON value: object members
 * in any order, arrays in order, and numbers by their exact decimal value,
 * whatever the spelling - 1200, 1200.0 and 1.2e3 are one number, and so
 * are -0 and 0.  Numbers are never compared through a double: that would
 * make 9007199254740993 equal 9007199254740992 and 0.1 equal
 * 0.10000000000000001, and a compare-and-put would overwrite a value it was
 * not given.  The exact decimal value is what PostgreSQL's JSONB equality
 * (numeric) compares too, so every backend answers alike.
 */

/* A number as sign, significant digits and the place of the first one:
 * value = sign * d1.d2...dn * 10^(exp + adjust).  The exponent is kept as
 * its digits, since JSON allows 1e-000000000000000000000042. */
typedef struct {
	const char *mant; /* the digits before any exponent, '.' included */
	size_t int_len;   /* digits before the '.' (or all of them) */
	size_t first, last; /* first and last non-zero digit, '.' not counted */
	int zero, negative;
	const char *exp; /* exponent digits, leading zeros dropped */
	size_t exp_len;
	int exp_negative;
	int64_t adjust; /* int_len - 1 - first: the place of digit `first` */
} decimal;

static int is_digit_char(char c)
{
	return c >= '0' && c <= '9';
}

/* Digit i of the mantissa, skipping the '.', which sits at int_len. */
static char digit_at(const decimal *d, size_t i)
{
	return i < d->int_len ? d->mant[i] : d->mant[i + 1];
}

/* Split the JSON number at p (already checked, or printed by us; it ends
 * at the first byte that cannot continue it) into d.  Returns its end. */
static const char *decimal_read(const char *p, decimal *d)
{
	size_t n = 0;
	int point = 0;

	memset(d, 0, sizeof(*d));
	d->zero = 1;
	if (*p == '-') {
		d->negative = 1;
		p++;
	}
	d->mant = p;
	for (; is_digit_char(*p) || *p == '.'; p++) {
		if (*p == '.') {
			point = 1;
			continue;
		}
		if (*p != '0') {
			if (d->zero)
				d->first = n;
			d->zero = 0;
			d->last = n;
		}
		n++;
		if (!point)
			d->int_len = n;
	}
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			d->exp_negative = *p++ == '-';
		while (*p == '0')
			p++;
		d->exp = p;
		while (is_digit_char(*p))
			p++;
		d->exp_len = (size_t)(p - d->exp);
	}
	d->adjust = (int64_t)d->int_len - 1 - (int64_t)d->first;
	return p;
}

#define SHORT_EXPONENT 18 /* digits an int64 holds with room for adjust */

static int64_t exponent_value(const decimal *d)
{
	int64_t e = 0;

	for (size_t i = 0; i < d->exp_len; i++)
		e = e * 10 + (d->exp[i] - '0');
	return d->exp_negative ? -e : e;
}

/* Whether the first significant digits of a and b sit at the same place.
 * The usual exponents fit an int64.  An exponent of more than 18 digits
 * is compared digit by digit: a's scale equals b's when |a.exp| equals
 * |b.exp| + delta, where delta (the difference of the adjusts, below
 * 2^32) is far smaller than such an exponent, so the sum keeps its sign. */
static int scale_equal(const decimal *a, const decimal *b)
{
	const decimal *t;
	int64_t carry;
	size_t longest;

	if (a->exp_len <= SHORT_EXPONENT && b->exp_len <= SHORT_EXPONENT)
		return exponent_value(a) + a->adjust == exponent_value(b) + b->adjust;
	if (b->exp_len <= SHORT_EXPONENT) {
		t = a;
		a = b;
		b = t;
	}
	if (a->exp_negative != b->exp_negative)
		return 0;
	carry = b->adjust - a->adjust;
	if (b->exp_negative)
		carry = -carry;
	longest = a->exp_len > b->exp_len ? a->exp_len : b->exp_len;
	/* Add carry to b's exponent from its last digit up, matching a's
	 * digits as they come.  A carry of fewer than 11 digits is spent
	 * within 11 places of the longer exponent's end. */
	for (size_t i = 0; i < longest + 12; i++) {
		int64_t sum = carry + (i < b->exp_len ? b->exp[b->exp_len - 1 - i] - '0' : 0);
		int64_t digit = ((sum % 10) + 10) % 10;
		int64_t want = i < a->exp_len ? a->exp[a->exp_len - 1 - i] - '0' : 0;

		if (digit != want)
			return 0;
		carry = (sum - digit) / 10;
	}
	return carry == 0;
}

static int decimal_equal(const char *ta, const char *tb)
{
	decimal a, b;

	if (strcmp(ta, tb) == 0)
		return 1;
	(void)decimal_read(ta, &a);
	(void)decimal_read(tb, &b);
	if (a.zero || b.zero)
		return a.zero && b.zero; /* -0 and 0e5 are 0 */
	if (a.negative != b.negative || a.last - a.first != b.last - b.first)
		return 0;
	for (size_t i = 0; i <= a.last - a.first; i++) {
		if (digit_at(&a, a.first + i) != digit_at(&b, b.first + i))
			return 0;
	}
	return scale_equal(&a, &b);
}

/* A number node's decimal text: a parsed double keeps its source text as
 * json-c's userdata (json_object_new_double_s); a double the library built
 * has none and is written with 17 digits, as json-c prints it; an integer
 * is exact in int64 or uint64 (json-c keeps which: get_int64 clamps a
 * uint64 above INT64_MAX to INT64_MAX). */
static const char *number_text(json_object *o, char *buf, size_t size)
{
	if (json_object_is_type(o, json_type_double)) {
		const char *source = json_object_get_userdata(o);

		if (source != NULL)
			return source;
		(void)snprintf(buf, size, "%.17g", json_object_get_double(o));
	} else if (json_object_get_int64(o) == INT64_MAX) {
		(void)snprintf(buf, size, "%" PRIu64, json_object_get_uint64(o));
	} else {
		(void)snprintf(buf, size, "%" PRId64, json_object_get_int64(o));
	}
	return buf;
}

static int is_number(json_object *o)
{
	return json_object_is_type(o, json_type_int) || json_object_is_type(o, json_type_double);
}

static int numbers_equal(json_object *a, json_object *b)
{
	char ba[32], bb[32];

	if (json_object_is_type(a, json_type_int) && json_object_is_type(b, json_type_int)) {
		int64_t ia = json_object_get_int64(a), ib = json_object_get_int64(b);

		if (ia == INT64_MAX && ib == INT64_MAX)
			return json_object_get_uint64(a) == json_object_get_uint64(b);
		return ia == ib;
	}
	return decimal_equal(number_text(a, ba, sizeof(ba)), number_text(b, bb, sizeof(bb)));
}

/* Structural equality of two read-only trees; the checker bounds the
 * nesting, so the recursion is at most FAUCET_JSON_MAX_DEPTH deep. */
static int tree_equal(json_object *a, json_object *b)
{
	if (a == b)
		return 1;
	if (is_number(a) && is_number(b))
		return numbers_equal(a, b);
	if (json_object_get_type(a) != json_object_get_type(b))
		return 0;
	switch (json_object_get_type(a)) {
	case json_type_boolean:
		return json_object_get_boolean(a) == json_object_get_boolean(b);
	case json_type_string:
		return json_object_get_string_len(a) == json_object_get_string_len(b) &&
		       memcmp(json_object_get_string(a), json_object_get_string(b),
			      (size_t)json_object_get_string_len(a)) == 0;
	case json_type_array: {
		size_t n = json_object_array_length(a);

		if (n != json_object_array_length(b))
			return 0;
		for (size_t i = 0; i < n; i++) {
			if (!tree_equal(json_object_array_get_idx(a, i), json_object_array_get_idx(b, i)))
				return 0;
		}
		return 1;
	}
	case json_type_object: {
		/* Names are unique (the checker refuses duplicates), so equal
		 * counts and every member of a found equal in b is equality. */
		if (json_object_object_length(a) != json_object_object_length(b))
			return 0;
		json_object_object_foreach(a, name, member) {
			json_object *other;

			if (!json_object_object_get_ex(b, name, &other) || !tree_equal(member, other))
				return 0;
		}
		return 1;
	}
	default: /* null (a NULL tree, caught by a == b), or a type we never build */
		return 0;
	}
}

int faucet_value_equal(const faucet_value *a, const faucet_value *b)
{
	/* Set by faucet_value__tree on success; initialised for GCC -O3,
	 * which cannot see that (a Release build warned). */
	json_object *ta = NULL, *tb = NULL;

	if (a == b)
		return 1;
	if (a == NULL || b == NULL)
		return 0;
	/* Equal texts are equal values: the usual answer, one memcmp. */
	if (a->len == b->len && memcmp(a->text, b->text, a->len) == 0)
		return 1;
	/* Unequal texts may still be equal values ({"a":1,"b":2} and
	 * {"b":2,"a":1}, 1200 and 1.2e3).  A tree that cannot be built (out of
	 * memory) makes the values unequal, the answer that never overwrites
	 * anything. */
	if (faucet_value__tree(a, &ta) != 0 || faucet_value__tree(b, &tb) != 0)
		return 0;
	return tree_equal(ta, tb);
}

/* Append one number of a canonical text - 0, or [-]d[.ddd]e[-]N with only
 * significant digits - and widen [*lowest, *highest] to its digits'
 * places.  An exponent too long for an int64 is copied as written and its
 * place saturates.  An append that fails marks out failed, which the
 * caller checks once. */
static void canonical_number(faucet_buf *out, const char *p, const char **end,
			     int64_t *lowest, int64_t *highest)
{
	decimal d;
	int64_t top, bottom;

	*end = decimal_read(p, &d);
	if (d.zero) {
		(void)faucet__buf_putc(out, '0');
		return;
	}
	if (d.exp_len > SHORT_EXPONENT) {
		if (d.exp_negative)
			*lowest = INT64_MIN;
		else
			*highest = INT64_MAX;
		(void)faucet__buf_put(out, p, (size_t)(*end - p));
		return;
	}
	top = exponent_value(&d) + d.adjust;
	bottom = top - (int64_t)(d.last - d.first);
	if (bottom < *lowest)
		*lowest = bottom;
	if (top > *highest)
		*highest = top;
	if (d.negative)
		(void)faucet__buf_putc(out, '-');
	(void)faucet__buf_putc(out, digit_at(&d, d.first));
	if (d.last > d.first)
		(void)faucet__buf_putc(out, '.');
	for (size_t i = d.first + 1; i <= d.last; i++)
		(void)faucet__buf_putc(out, digit_at(&d, i));
	(void)faucet__buf_printf(out, "e%" PRId64, top);
}

int faucet_value__canonical_numbers(const faucet_value *v, faucet_value **out, int64_t *lowest,
				    int64_t *highest)
{
	faucet_buf buf = FAUCET_BUF_INIT;
	const char *p = v->text, *end = v->text + v->len;
	int rc;

	*out = NULL;
	*lowest = INT64_MAX;
	*highest = INT64_MIN;
	while (p < end) {
		const char *from = p;

		if (*p == '"') {
			/* A string, copied as it is: skip to its closing quote. */
			for (p++; *p != '"'; p++) {
				if (*p == '\\')
					p++;
			}
			(void)faucet__buf_put(&buf, from, (size_t)(++p - from));
		} else if (*p == '-' || is_digit_char(*p)) {
			canonical_number(&buf, p, &p, lowest, highest);
		} else {
			(void)faucet__buf_putc(&buf, *p++);
		}
	}
	/* Every append fails once the buffer has: one check covers them. */
	if (buf.failed || buf.ptr == NULL) {
		faucet__buf_dispose(&buf);
		return faucet_error_set(FAUCET_ENOMEM, "out of memory spelling numbers canonically");
	}
	rc = faucet_value_parse_at(out, buf.ptr, buf.len, "JSON value");
	faucet__buf_dispose(&buf);
	return rc;
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
	if (atomic_load_explicit(&v->built, memory_order_acquire))
		json_object_put(v->tree);
	free(v);
}

/* ---- JSON Merge Patch (RFC 7396, doc/design.md §2.7) -----------------
 *
 * The result is written as text while walking private trees of the target
 * and the patch (never the values' shared trees: rendering a node writes
 * into it), then parsed and checked like any input.  Members keep the
 * target's order, new members follow in the patch's order, and every leaf
 * is json-c's rendering of its node, which for a parsed number is its
 * source text: nothing is ever re-spelt.
 */

static void merge_put_name(faucet_buf *b, const char *name)
{
	(void)faucet__buf_putc(b, '"');
	for (const unsigned char *p = (const unsigned char *)name; *p != '\0'; p++) {
		if (*p == '"' || *p == '\\') {
			(void)faucet__buf_putc(b, '\\');
			(void)faucet__buf_putc(b, (char)*p);
		} else if (*p < 0x20) {
			(void)faucet__buf_printf(b, "\\u%04x", (unsigned)*p);
		} else {
			(void)faucet__buf_putc(b, (char)*p);
		}
	}
	(void)faucet__buf_putc(b, '"');
}

static void merge_put_node(faucet_buf *b, json_object *o)
{
	size_t len = 0;
	const char *text;

	if (o == NULL) {
		(void)faucet__buf_puts(b, "null");
		return;
	}
	text = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN |
							    JSON_C_TO_STRING_NOSLASHESCAPE,
						 &len);
	if (text == NULL)
		b->failed = 1;
	else
		(void)faucet__buf_put(b, text, len);
}

static void merge_member(faucet_buf *b, int *first, const char *name)
{
	if (!*first)
		(void)faucet__buf_putc(b, ',');
	*first = 0;
	merge_put_name(b, name);
	(void)faucet__buf_putc(b, ':');
}

/* MergePatch(target, patch) of RFC 7396 section 2; `has_target` is 0 for
 * an absent target (treated as null).  The nesting is bounded by the
 * checker's FAUCET_JSON_MAX_DEPTH, and so is this recursion. */
static void merge_tree(faucet_buf *b, json_object *target, int has_target, json_object *patch)
{
	int first = 1;

	if (!json_object_is_type(patch, json_type_object)) {
		merge_put_node(b, patch);
		return;
	}
	if (!has_target || !json_object_is_type(target, json_type_object))
		target = NULL; /* a non-object target is replaced by {} */
	(void)faucet__buf_putc(b, '{');
	if (target != NULL) {
		json_object_object_foreach(target, name, tv) {
			json_object *pv;

			if (!json_object_object_get_ex(patch, name, &pv)) {
				merge_member(b, &first, name);
				merge_put_node(b, tv);
			} else if (pv != NULL) {
				merge_member(b, &first, name);
				merge_tree(b, tv, 1, pv);
			} /* a null in the patch removes the member */
		}
	}
	json_object_object_foreach(patch, pname, pv) {
		if (pv == NULL || (target != NULL && json_object_object_get_ex(target, pname, NULL)))
			continue;
		merge_member(b, &first, pname);
		merge_tree(b, NULL, 0, pv);
	}
	(void)faucet__buf_putc(b, '}');
}

int faucet_value_merge_patch(const faucet_value *target, const faucet_value *patch,
			     faucet_value **out)
{
	json_object *ttree = NULL, *ptree = NULL;
	faucet_buf buf = FAUCET_BUF_INIT;
	int rc;

	if (out == NULL || patch == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_value_merge_patch: NULL argument");
	*out = NULL;
	if (patch->text[0] != '{') {
		/* Not an object: the patch is the result (RFC 7396 section 2). */
		*out = faucet_value_ref((faucet_value *)patch);
		return 0;
	}
	rc = parse_tree(patch->text, patch->len, "merge patch", &ptree);
	if (rc == 0 && target != NULL)
		rc = parse_tree(target->text, target->len, "JSON value", &ttree);
	if (rc == 0) {
		merge_tree(&buf, ttree, target != NULL, ptree);
		if (buf.failed || buf.ptr == NULL)
			rc = faucet_error_set(FAUCET_ENOMEM, "out of memory merging JSON");
		else
			rc = faucet_value_parse_at(out, buf.ptr, buf.len, "merged value");
	}
	faucet__buf_dispose(&buf);
	json_object_put(ttree);
	json_object_put(ptree);
	return rc;
}

int faucet_value__member_string(json_object *o, const char *name, int nullable, char **out)
{
	json_object *m = NULL;

	*out = NULL;
	if (!json_object_object_get_ex(o, name, &m) || m == NULL)
		return nullable ? 0 : -1;
	if (!json_object_is_type(m, json_type_string))
		return -1;
	*out = faucet__strdup(json_object_get_string(m));
	return *out ? 0 : FAUCET_ENOMEM;
}
