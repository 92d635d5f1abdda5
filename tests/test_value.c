/*
 * test_value.c - JSON values: strict parsing, the fidelity rule of SPEC
 * section 2, structural equality and reference counting.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

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
	/* As in the original: an integer and a float are different values. */
	assert_false(faucet_value_equal(one, one_f));
	faucet_value_free(a);
	faucet_value_free(b);
	faucet_value_free(c);
	faucet_value_free(one);
	faucet_value_free(one_f);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(numbers_keep_every_digit),
		cmocka_unit_test(structure_and_text_survive),
		cmocka_unit_test(values_json_c_cannot_hold_are_refused),
		cmocka_unit_test(malformed_json_is_refused_with_an_offset),
		cmocka_unit_test(deep_nesting_is_bounded),
		cmocka_unit_test(json_c_leniencies_are_refused),
		cmocka_unit_test(nesting_limit_is_exact),
		cmocka_unit_test(duplicate_names_are_found_in_any_object),
		cmocka_unit_test(equality_is_structural),
		cmocka_unit_test(shared_values_compare_from_many_threads),
		cmocka_unit_test(references_are_counted),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
