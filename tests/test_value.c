/*
 * test_value.c - JSON values: strict parsing, the fidelity rule of
 * doc/design.md §2.4, structural equality and reference counting.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "values/value_internal.h"

static void assert_round_trip(const char *json, const char *want)
{
	faucet_value *v = NULL, *again = NULL;

	if (faucet_value_parse(&v, json, strlen(json)) != 0)
		fail_msg("%s: %s", json, faucet_error_last()->message);
	assert_string_equal(faucet_value_json(v), want);
	assert_int_equal(faucet_value_len(v), strlen(want));
	/* Parsing the stored text again gives the same text: stable on disk. */
	assert_int_equal(faucet_value_parse(&again, faucet_value_json(v), faucet_value_len(v)), 0);
	assert_string_equal(faucet_value_json(again), want);
	assert_true(faucet_value_equal(v, again));
	faucet_value_free(again);
	faucet_value_free(v);
}

static void numbers_keep_every_digit(void **state)
{
	(void)state;
	assert_round_trip("18446744073709551615", "18446744073709551615");
	assert_round_trip("-9223372036854775808", "-9223372036854775808");
	assert_round_trip("9223372036854775807", "9223372036854775807");
	assert_round_trip("0.1", "0.1");
	assert_round_trip("2.25e-7", "2.25e-7");
	assert_round_trip("1e300", "1e300");
	assert_round_trip("1.0", "1.0");
	assert_round_trip("-0.0", "-0.0");
	assert_round_trip("[1E5, 1e+5, 0.30000000000000004]", "[1E5,1e+5,0.30000000000000004]");
}

static void structure_and_text_survive(void **state)
{
	(void)state;
	assert_round_trip(" { \"b\" : 1 , \"a\" : [ true, false, null ] } ",
			  "{\"b\":1,\"a\":[true,false,null]}");
	assert_round_trip("\"caf\\u00e9 \\ud83d\\ude00 \\/\"", "\"caf\xc3\xa9 \xf0\x9f\x98\x80 /\"");
	assert_round_trip("\"a\\u0001b\"", "\"a\\u0001b\"");
	assert_round_trip("{\"nested\":{\"deep\":{\"x\":[{},[]]}}}",
			  "{\"nested\":{\"deep\":{\"x\":[{},[]]}}}");
	assert_round_trip("null", "null");
	assert_round_trip("\"\"", "\"\"");
	assert_round_trip("-0", "0");
}

static void assert_refused_len(const char *json, size_t len, const char *needle)
{
	faucet_value *v = (faucet_value *)0x1;

	assert_int_equal(faucet_value_parse(&v, json, len), FAUCET_EINVALID);
	assert_null(v);
	tu_assert_error_contains(needle);
}

static void assert_refused(const char *json, const char *needle)
{
	assert_refused_len(json, strlen(json), needle);
}

static void values_json_c_cannot_hold_are_refused(void **state)
{
	(void)state;
	assert_refused("18446744073709551616", "cannot be held exactly");
	assert_refused("[1, -9223372036854775809]", "number -9223372036854775809 at byte 4");
	assert_refused("{\"a\":99999999999999999999999}", "cannot be held exactly");
	assert_refused("1e400", "too large for a double");
	{
		/* A mantissa of 512 characters and more: 2e504 and -2e504
		 * (found by fuzz_value), and a long one that is finite. */
		char big[600];
		faucet_value *v = NULL;

		memset(big, '0', sizeof(big));
		big[0] = '2';
		memcpy(big + 512, "e-7", 4);
		assert_refused(big, "too large for a double");
		big[0] = '-';
		big[1] = '2';
		assert_refused(big, "too large for a double");
		memcpy(big, "0.", 2);
		memcpy(big + 512, "1e-7", 5);
		assert_int_equal(faucet_value_parse(&v, big, strlen(big)), 0);
		faucet_value_free(v);
	}
	assert_refused("{\"a\":1,\"a\":2}", "duplicate member name");
	/* json-c cuts a member name at \u0000 ({"a\u0000b":1} became {"a":1})
	 * and PostgreSQL refuses it anywhere: refused, with its offset. */
	assert_refused("{\"a\\u0000b\":1}", "\\u0000 at byte 3");
	assert_refused("\"a\\u0000b\"", "\\u0000 at byte 2");
	assert_refused("{\"k\":[\"\\u0000\"]}", "\\u0000 at byte 7");
	assert_refused("{\"x\":{\"a\":\"s\",\"a\":\"t\"}}", "duplicate member name");
}

static void malformed_json_is_refused_with_an_offset(void **state)
{
	(void)state;
	assert_refused("", "empty input");
	assert_refused("   ", "empty input");
	assert_refused("{\"a\":1,}", "malformed JSON at byte 7");
	assert_refused("1 2", "malformed JSON at byte");
	assert_refused("{\"a\":", "malformed JSON");
	assert_refused("NaN", "malformed JSON");
	assert_refused("01", "malformed JSON");
	assert_refused("'x'", "malformed JSON");
	assert_refused("\"\xff\"", "malformed JSON");
	assert_refused("{} x", "malformed JSON at byte 3");
	assert_refused("[NaN]", "is not a JSON value");
	assert_refused("-Infinity", "is not a JSON value");
	/* An embedded NUL is not white space. */
	{
		faucet_value *v = NULL;
		assert_int_equal(faucet_value_parse(&v, "{}\0", 3), FAUCET_EINVALID);
		tu_assert_error_contains("trailing characters");
	}
}

/* faucet_value_parse_at (public): the message names the input the caller
 * gives and the byte offset; without one it reads as faucet_value_parse's. */
static void parse_at_names_the_input_and_the_offset(void **state)
{
	faucet_value *v = NULL;
	(void)state;

	assert_int_equal(faucet_value_parse_at(&v, "{\"a\":1,}", 8, "--if-equals"),
			 FAUCET_EINVALID);
	assert_null(v);
	assert_int_equal(strncmp(faucet_error_last()->message, "--if-equals: ", 13), 0);
	tu_assert_error_contains("malformed JSON at byte 7");
	assert_int_equal(faucet_value_parse_at(&v, "[1,", 3, NULL), FAUCET_EINVALID);
	tu_assert_error_contains("JSON value: malformed JSON at byte 3");
	assert_int_equal(faucet_value_parse_at(&v, " ", 1, "value on standard input"),
			 FAUCET_EINVALID);
	tu_assert_error_contains("value on standard input: malformed JSON: empty input");
	assert_int_equal(faucet_value_parse_at(NULL, "1", 1, "x"), FAUCET_EINVALID);
	assert_int_equal(faucet_value_parse_at(&v, "[1, 2]", 6, "file a.json"), 0);
	assert_string_equal(faucet_value_json(v), "[1,2]");
	faucet_value_free(v);
}

/* faucet_value_member: a member as a value of its own, digits kept; NULL
 * for a missing member or a value that is not an object; JSON null is a
 * value. */
static void members_read_as_values(void **state)
{
	faucet_value *v = tu_v("{\"type\":\"STATE\",\"value\":{\"n\":18446744073709551615,"
			       "\"x\":0.1,\"s\":\"a\\u0041\"},\"nil\":null,\"b\\u0063\":[1, 2]}");
	faucet_value *m = NULL, *arr = tu_v("[{\"a\":1}]");
	(void)state;

	assert_int_equal(faucet_value_member(v, "type", &m), 0);
	assert_string_equal(faucet_value_json(m), "\"STATE\"");
	faucet_value_free(m);
	assert_int_equal(faucet_value_member(v, "value", &m), 0);
	assert_string_equal(faucet_value_json(m), "{\"n\":18446744073709551615,\"x\":0.1,\"s\":\"aA\"}");
	faucet_value_free(m);
	assert_int_equal(faucet_value_member(v, "nil", &m), 0);
	assert_non_null(m);
	assert_string_equal(faucet_value_json(m), "null");
	faucet_value_free(m);
	assert_int_equal(faucet_value_member(v, "bc", &m), 0);
	assert_string_equal(faucet_value_json(m), "[1,2]");
	faucet_value_free(m);
	m = (faucet_value *)1;
	assert_int_equal(faucet_value_member(v, "absent", &m), 0);
	assert_null(m);
	m = (faucet_value *)1;
	assert_int_equal(faucet_value_member(arr, "a", &m), 0);
	assert_null(m);
	assert_int_equal(faucet_value_member(NULL, "a", &m), FAUCET_EINVALID);
	assert_int_equal(faucet_value_member(v, NULL, &m), FAUCET_EINVALID);
	assert_int_equal(faucet_value_member(v, "a", NULL), FAUCET_EINVALID);
	faucet_value_free(arr);
	faucet_value_free(v);
}

static void deep_nesting_is_bounded(void **state)
{
	char deep[2048];
	faucet_value *v = NULL;
	(void)state;
	for (int i = 0; i < 1000; i++)
		deep[i] = '[';
	for (int i = 0; i < 1000; i++)
		deep[1000 + i] = ']';
	assert_int_equal(faucet_value_parse(&v, deep, 2000), FAUCET_EINVALID);
	assert_null(v);
}

/* json-c accepts these but would store something else (or RFC 8259 does
 * not allow them); each is refused, never altered. */
static void json_c_leniencies_are_refused(void **state)
{
	(void)state;
	assert_refused("1.", "byte 2: unexpected end of input");
	assert_refused("[1.]", "byte 3: expected a digit after '.'");
	assert_refused("[0.e1]", "byte 3: expected a digit after '.'");
	assert_refused("-01", "leading zero");
	assert_refused("1e", "unexpected end of input");
	assert_refused("[1,]", "byte 3: unexpected ']', expected a JSON value");
	assert_refused("{\"a\" 1}", "expected ':' after a member name");
	assert_refused("[1 2]", "expected ',' or ']'");
	assert_refused("\"\\ud800\"", "unpaired surrogate \\ud800");
	assert_refused("\"\\udc00x\"", "unpaired surrogate \\udc00");
	assert_refused("\"\\ud800\\u0041\"", "unpaired surrogate");
	assert_refused("\"\\x\"", "invalid escape");
	assert_refused("\"\\u12\"", "four hex digits");
	assert_refused("\"a\tb\"", "control character 0x09");
	assert_refused("\"\xed\xa0\x80\"", "byte 1: invalid UTF-8"); /* an encoded surrogate */
	assert_refused("\"\xc0\x80\"", "invalid UTF-8");             /* overlong NUL */
	assert_refused("\"\xf4\x90\x80\x80\"", "invalid UTF-8");     /* above U+10FFFF */
	assert_refused("\"\xe2\x82\"", "invalid UTF-8");             /* cut short */
	assert_refused("\"abc", "end of input inside a string");
	assert_refused("\f1", "byte 0: unexpected byte 0x0c");
	assert_refused("TRUE", "'TRUE' is not a JSON value");
	/* What is allowed stays as written. */
	assert_round_trip("\"\xf4\x8f\xbf\xbf \xe2\x82\xac \x7f\"", "\"\xf4\x8f\xbf\xbf \xe2\x82\xac \x7f\"");
	assert_round_trip("[-0.0e-0,0e0,1E+2,-1]", "[-0.0e-0,0e0,1E+2,-1]");
}

/* A string is scanned a word at a time where it is plain: each byte that
 * ends the plain run - a quote, a backslash, a control character, a byte
 * of UTF-8, a bad byte - is found at every offset of a long string, and
 * the error names its exact offset. */
static void strings_are_checked_at_every_offset(void **state)
{
	static const struct {
		const char *bytes; /* put at offset i of 40 'a's inside quotes */
		const char *refused; /* NULL: accepted */
	} cases[] = {
		{"\\\"", NULL}, {"\\\\", NULL}, {"\\u00e9", NULL}, {"\xc3\xa9", NULL},
		{"\xe2\x82\xac", NULL}, {"\x7f", NULL}, {" ", NULL},
		{"\t", "control character 0x09"}, {"\x01", "control character 0x01"},
		{"\x1f", "control character 0x1f"}, {"\x80", "invalid UTF-8"},
		{"\xff", "invalid UTF-8"}, {"\\q", "invalid escape"},
	};
	(void)state;

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		for (size_t i = 0; i <= 40; i++) {
			char text[64], want[64];
			faucet_value *v = NULL;
			size_t n = 0, blen = strlen(cases[c].bytes);

			text[n++] = '"';
			memset(text + n, 'a', i);
			n += i;
			memcpy(text + n, cases[c].bytes, blen);
			n += blen;
			memset(text + n, 'b', 40 - i);
			n += 40 - i;
			text[n++] = '"';
			if (cases[c].refused == NULL) {
				if (faucet_value_parse(&v, text, n) != 0)
					fail_msg("case %zu at %zu: %s", c, i, faucet_error_last()->message);
				faucet_value_free(v);
				continue;
			}
			assert_int_not_equal(faucet_value_parse(&v, text, n), 0);
			assert_null(v);
			snprintf(want, sizeof(want), "byte %zu: ", i + 1);
			tu_assert_error_contains(want);
			tu_assert_error_contains(cases[c].refused);
		}
	}
	/* A plain run that reaches the end of the input. */
	for (size_t i = 0; i <= 20; i++) {
		char text[32] = "\"aaaaaaaaaaaaaaaaaaaa";

		assert_refused_len(text, 1 + i, "end of input inside a string");
	}
}

static void nesting_limit_is_exact(void **state)
{
	char text[1200];
	faucet_value *v = NULL;
	(void)state;
	for (int depth = 255; depth <= 257; depth++) {
		for (int i = 0; i < depth; i++) {
			text[i] = '[';
			text[depth + i] = ']';
		}
		if (depth <= 256) {
			assert_int_equal(faucet_value_parse(&v, text, (size_t)depth * 2), 0);
			/* json-c can build what the checker passed. */
			assert_true(faucet_value_equal(v, v));
			faucet_value_free(v);
		} else {
			assert_refused_len(text, (size_t)depth * 2, "nested deeper than 256 levels");
		}
	}
}

static void duplicate_names_are_found_in_any_object(void **state)
{
	char big[512];
	size_t n = 0;
	(void)state;
	/* Twenty members: found by sorting rather than pairwise. */
	big[n++] = '{';
	for (int i = 0; i < 20; i++)
		n += (size_t)snprintf(big + n, sizeof(big) - n, "%s\"m%02d\":%d", i ? "," : "",
				      i == 17 ? 3 : i, i);
	big[n++] = '}';
	big[n] = '\0';
	assert_refused(big, "duplicate member name \"m03\" at byte");
	/* Sibling objects may reuse names; only one object's names must differ. */
	assert_round_trip("[{\"a\":1},{\"a\":2,\"b\":{\"a\":3}}]", "[{\"a\":1},{\"a\":2,\"b\":{\"a\":3}}]");
	/* One name spelt two ways. */
	assert_refused("{\"a\":1,\"\\u0061\":2}", "duplicate member name");
}

static void equality_is_structural(void **state)
{
	faucet_value *a = tu_v("{\"a\":1,\"b\":[2.0,{\"c\":null}]}");
	faucet_value *b = tu_v("{\"b\":[2.00,{\"c\":null}],\"a\":1}");
	faucet_value *c = tu_v("{\"a\":1,\"b\":[2.0,{\"c\":false}]}");
	faucet_value *one = tu_v("1"), *one_f = tu_v("1.0");
	(void)state;
	assert_true(faucet_value_equal(a, b));
	assert_false(faucet_value_equal(a, c));
	assert_false(faucet_value_equal(a, NULL));
	assert_true(faucet_value_equal(NULL, NULL));
	/* doc/design.md §2.5: numbers by value, whatever the spelling. */
	assert_true(faucet_value_equal(one, one_f));
	faucet_value_free(a);
	faucet_value_free(b);
	faucet_value_free(c);
	faucet_value_free(one);
	faucet_value_free(one_f);
}

static void assert_equal_values(const char *x, const char *y, int want)
{
	faucet_value *a = tu_v(x), *b = tu_v(y);

	/* Equality is symmetric, whichever side is compared first. */
	if (faucet_value_equal(a, b) != want || faucet_value_equal(b, a) != want)
		fail_msg("%s %s %s", x, want ? "should equal" : "should differ from", y);
	faucet_value_free(a);
	faucet_value_free(b);
}

/* doc/design.md §2.5: numbers compare by their exact decimal value - never
 * through a double - whatever the spelling or the json-c type. */
static void numbers_compare_by_exact_decimal_value(void **state)
{
	(void)state;
	assert_equal_values("1200", "1200.0", 1);
	assert_equal_values("1200", "1.2e3", 1);
	assert_equal_values("1200.0", "1.2E+3", 1);
	assert_equal_values("1200", "12000e-1", 1);
	assert_equal_values("1200", "0.0012e6", 1);
	assert_equal_values("0.5", "5e-1", 1);
	assert_equal_values("0.5", "50E-2", 1);
	assert_equal_values("-12.50", "-1.25e1", 1);
	assert_equal_values("1200", "1201", 0);
	assert_equal_values("1200", "120", 0);
	assert_equal_values("1200", "12", 0);
	assert_equal_values("1200", "-1200", 0);
	assert_equal_values("0.5", "0.05", 0);
	assert_equal_values("1.5", "15", 0);
	/* Beyond 2^53 a double cannot tell these apart; the values differ. */
	assert_equal_values("9007199254740993", "9007199254740992", 0);
	assert_equal_values("9007199254740993", "9007199254740992.0", 0);
	assert_equal_values("9007199254740993", "9.007199254740993e15", 1);
	assert_equal_values("9007199254740993.0", "9007199254740992.0", 0);
	/* The whole json-c range: uint64 above INT64_MAX, int64 below zero. */
	assert_equal_values("18446744073709551615", "18446744073709551615", 1);
	assert_equal_values("18446744073709551615", "18446744073709551614", 0);
	assert_equal_values("18446744073709551615", "1.8446744073709551615e19", 1);
	assert_equal_values("18446744073709551615", "1.8446744073709551616e19", 0);
	assert_equal_values("18446744073709551615", "9223372036854775807", 0);
	assert_equal_values("9223372036854775808", "9223372036854775807", 0);
	assert_equal_values("9223372036854775807", "9223372036854775807.0", 1);
	assert_equal_values("-9223372036854775808", "-9.223372036854775808e18", 1);
	assert_equal_values("-9223372036854775808", "9223372036854775808", 0);
	/* Exact decimals: the double nearest 0.1 is not 0.1. */
	assert_equal_values("0.1", "0.10000000000000001", 0);
	assert_equal_values("0.1", "0.100", 1);
	assert_equal_values("0.30000000000000004", "0.3", 0);
	/* Zero has no sign as a value. */
	assert_equal_values("-0", "0", 1);
	assert_equal_values("-0.0", "0", 1);
	assert_equal_values("0e5", "-0.000E-7", 1);
	assert_equal_values("0", "1e-300", 0);
	/* Exponents longer than an int64: compared digit by digit. */
	assert_equal_values("1e-100000000000000000000", "10e-100000000000000000001", 1);
	assert_equal_values("1e-100000000000000000000", "1e-100000000000000000001", 0);
	assert_equal_values("1e-100000000000000000000", "0.1e-99999999999999999999", 1);
	assert_equal_values("1e-100000000000000000000", "1e-000000000000000000000100000000000000000000",
			    1);
	assert_equal_values("1e-99999999999999999999", "1000e-100000000000000000002", 1);
	assert_equal_values("1e-99999999999999999999", "1e-99", 0);
	assert_equal_values("0e99999999999999999999", "0", 1);
	/* Inside structures, with members in any order. */
	assert_equal_values("{\"a\":1.0,\"b\":[2e0]}", "{\"b\":[2],\"a\":1}", 1);
	assert_equal_values("{\"a\":1.0,\"b\":[2e0]}", "{\"b\":[2],\"a\":1.5}", 0);
	assert_equal_values("[1,2.0]", "[2,1]", 0);
	assert_equal_values("[1,2.0]", "[1.0,2]", 1);
	/* A number is never a string, a boolean or null. */
	assert_equal_values("1", "\"1\"", 0);
	assert_equal_values("1", "true", 0);
	assert_equal_values("0", "false", 0);
	assert_equal_values("0", "null", 0);
	assert_equal_values("{\"a\":0}", "{\"b\":0}", 0);
}

static void assert_canonical(const char *json, const char *want, int64_t lowest,
			     int64_t highest)
{
	faucet_value *v = tu_v(json), *c = NULL;
	int64_t lo = 0, hi = 0;

	if (faucet_value__canonical_numbers(v, &c, &lo, &hi) != 0)
		fail_msg("%s: %s", json, faucet_error_last()->message);
	assert_string_equal(faucet_value_json(c), want);
	if (lo != lowest || hi != highest)
		fail_msg("%s: places [%lld, %lld], expected [%lld, %lld]", json, (long long)lo,
			 (long long)hi, (long long)lowest, (long long)highest);
	assert_true(faucet_value_equal(v, c));
	faucet_value_free(c);
	faucet_value_free(v);
}

/* The canonical spelling PostgreSQL's compare-and-put sends: the same
 * value in significant digits only, and the places its digits span. */
static void numbers_have_one_canonical_spelling(void **state)
{
	(void)state;
	assert_canonical("1200", "1.2e3", 2, 3);
	assert_canonical("1200.0", "1.2e3", 2, 3);
	assert_canonical("0.00120", "1.2e-3", -4, -3);
	assert_canonical("-7", "-7e0", 0, 0);
	assert_canonical("[0,-0.0,0e-2000000000]", "[0,0,0]", INT64_MAX, INT64_MIN);
	assert_canonical("10e-16384", "1e-16383", -16383, -16383);
	assert_canonical("18446744073709551615", "1.8446744073709551615e19", 0, 19);
	/* Strings, names and literals stay as they are, escapes included. */
	assert_canonical("{\"n1\":[1.50,\"2.50\\\"1\",true,null],\"\\u00e9\":{}}",
			 "{\"n1\":[1.5e0,\"2.50\\\"1\",true,null],\"\xc3\xa9\":{}}", -1, 0);
	assert_canonical("\"\"", "\"\"", INT64_MAX, INT64_MIN);
	/* An exponent beyond an int64 stays as written; its place saturates. */
	assert_canonical("[1e-100000000000000000000,2]", "[1e-100000000000000000000,2e0]",
			 INT64_MIN, 0);
	assert_canonical("[0e+100000000000000000000]", "[0]", INT64_MAX, INT64_MIN);
}

/* The tree behind a value is built on first use; many threads comparing
 * the same shared values at once must all see it whole. */
typedef struct {
	faucet_value *a, *b;
	int equal;
} compare_job;

static void *compare_thread(void *arg)
{
	compare_job *job = arg;

	job->equal = faucet_value_equal(job->a, job->b) && faucet_value_equal(job->b, job->a);
	return NULL;
}

static void shared_values_compare_from_many_threads(void **state)
{
	faucet_value *a = tu_v("{\"a\":1,\"b\":[2.5,{\"c\":null}]}");
	faucet_value *b = tu_v("{\"b\":[2.5,{\"c\":null}],\"a\":1}");
	pthread_t threads[8];
	compare_job jobs[8];
	(void)state;
	for (int i = 0; i < 8; i++) {
		jobs[i] = (compare_job){a, b, 0};
		assert_int_equal(pthread_create(&threads[i], NULL, compare_thread, &jobs[i]), 0);
	}
	for (int i = 0; i < 8; i++) {
		assert_int_equal(pthread_join(threads[i], NULL), 0);
		assert_true(jobs[i].equal);
	}
	faucet_value_free(a);
	faucet_value_free(b);
}

static void references_are_counted(void **state)
{
	faucet_value *v = tu_v("{\"k\":\"v\"}");
	(void)state;
	assert_ptr_equal(faucet_value_ref(v), v);
	faucet_value_free(v);
	assert_string_equal(faucet_value_json(v), "{\"k\":\"v\"}");
	faucet_value_free(v);
	faucet_value_free(NULL);
	assert_null(faucet_value_ref(NULL));
}

/* A value built in a buffer's own memory: the same value a parse gives,
 * the buffer left empty. */
static void a_value_takes_over_a_buffer(void **state)
{
	static const char compact[] = "{\"a\":[1,2.50,\"x\"],\"b\":null}";
	faucet_buf b = FAUCET_BUF_INIT;
	faucet_value *v = NULL;

	(void)state;
	assert_int_equal(faucet__buf_puts(&b, compact), 0);
	assert_int_equal(faucet_value__from_buf(&v, &b, "the marker"), 0);
	assert_null(b.ptr);
	assert_int_equal(b.len, 0);
	assert_string_equal(faucet_value_json(v), compact);
	assert_int_equal(faucet_value_len(v), strlen(compact));
	{
		faucet_value *m = NULL, *x = NULL;

		assert_int_equal(faucet_value_member(v, "a", &m), 0); /* its tree builds */
		assert_int_equal(faucet_value_parse(&x, "[1,2.50,\"x\"]", 12), 0);
		assert_true(faucet_value_equal(m, x));
		faucet_value_free(m);
		faucet_value_free(x);
	}
	faucet_value_free(v);

	/* Text the library built is taken as it is, not checked again; a
	 * failed buffer (out of memory while building) is refused. */
	b.failed = 1;
	assert_int_equal(faucet_value__from_buf(&v, &b, "the marker"), FAUCET_ENOMEM);
	assert_null(v);
	faucet__buf_dispose(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(numbers_keep_every_digit),
		cmocka_unit_test(structure_and_text_survive),
		cmocka_unit_test(parse_at_names_the_input_and_the_offset),
		cmocka_unit_test(members_read_as_values),
		cmocka_unit_test(a_value_takes_over_a_buffer),
		cmocka_unit_test(values_json_c_cannot_hold_are_refused),
		cmocka_unit_test(malformed_json_is_refused_with_an_offset),
		cmocka_unit_test(deep_nesting_is_bounded),
		cmocka_unit_test(json_c_leniencies_are_refused),
		cmocka_unit_test(strings_are_checked_at_every_offset),
		cmocka_unit_test(nesting_limit_is_exact),
		cmocka_unit_test(duplicate_names_are_found_in_any_object),
		cmocka_unit_test(equality_is_structural),
		cmocka_unit_test(numbers_compare_by_exact_decimal_value),
		cmocka_unit_test(numbers_have_one_canonical_spelling),
		cmocka_unit_test(shared_values_compare_from_many_threads),
		cmocka_unit_test(references_are_counted),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
