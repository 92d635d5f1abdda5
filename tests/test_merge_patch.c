/*
 * test_merge_patch.c - faucet_value_merge_patch, RFC 7396 (doc/design.md
 * §2.7): every example of the RFC's appendix A, an absent target, member
 * order and number spelling, and that the inputs are left as they were.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static faucet_value *parse(const char *json)
{
	faucet_value *v = NULL;

	if (faucet_value_parse(&v, json, strlen(json)) != 0)
		fail_msg("%s: %s", json, faucet_error_last()->message);
	return v;
}

/* target NULL: no value.  `want` is compared as text (exact order and
 * spelling) when `exact`, else as a JSON value. */
static void check(const char *target, const char *patch, const char *want, int exact)
{
	faucet_value *t = target ? parse(target) : NULL, *p = parse(patch), *w = parse(want);
	faucet_value *out = NULL;

	if (faucet_value_merge_patch(t, p, &out) != 0)
		fail_msg("merge %s into %s: %s", patch, target ? target : "(absent)",
			 faucet_error_last()->message);
	assert_non_null(out);
	if (exact)
		assert_string_equal(faucet_value_json(out), faucet_value_json(w));
	else if (!faucet_value_equal(out, w))
		fail_msg("merge %s into %s gave %s, want %s", patch, target ? target : "(absent)",
			 faucet_value_json(out), want);
	/* The inputs are immutable. */
	if (t != NULL) {
		faucet_value *again = parse(target);
		assert_true(faucet_value_equal(t, again));
		faucet_value_free(again);
	}
	faucet_value_free(out);
	faucet_value_free(w);
	faucet_value_free(p);
	faucet_value_free(t);
}

/* RFC 7396 appendix A, every row. */
static void rfc7396_appendix_a(void **state)
{
	(void)state;
	check("{\"a\":\"b\"}", "{\"a\":\"c\"}", "{\"a\":\"c\"}", 0);
	check("{\"a\":\"b\"}", "{\"b\":\"c\"}", "{\"a\":\"b\",\"b\":\"c\"}", 0);
	check("{\"a\":\"b\"}", "{\"a\":null}", "{}", 0);
	check("{\"a\":\"b\",\"b\":\"c\"}", "{\"a\":null}", "{\"b\":\"c\"}", 0);
	check("{\"a\":[\"b\"]}", "{\"a\":\"c\"}", "{\"a\":\"c\"}", 0);
	check("{\"a\":\"c\"}", "{\"a\":[\"b\"]}", "{\"a\":[\"b\"]}", 0);
	check("{\"a\":{\"b\":\"c\"}}", "{\"a\":{\"b\":\"d\",\"c\":null}}", "{\"a\":{\"b\":\"d\"}}",
	      0);
	check("{\"a\":[{\"b\":\"c\"}]}", "{\"a\":[1]}", "{\"a\":[1]}", 0);
	check("[\"a\",\"b\"]", "[\"c\",\"d\"]", "[\"c\",\"d\"]", 0);
	check("{\"a\":\"b\"}", "[\"c\"]", "[\"c\"]", 0);
	check("{\"a\":\"foo\"}", "null", "null", 0);
	check("{\"a\":\"foo\"}", "\"bar\"", "\"bar\"", 0);
	check("{\"e\":null}", "{\"a\":1}", "{\"e\":null,\"a\":1}", 0);
	check("[1,2]", "{\"a\":\"b\",\"c\":null}", "{\"a\":\"b\"}", 0);
	check("{}", "{\"a\":{\"bb\":{\"ccc\":null}}}", "{\"a\":{\"bb\":{}}}", 0);
	/* The RFC's section 3 example. */
	check("{\"title\":\"Goodbye!\",\"author\":{\"givenName\":\"John\",\"familyName\":\"Doe\"},"
	      "\"tags\":[\"example\",\"sample\"],\"content\":\"This will be unchanged\"}",
	      "{\"title\":\"Hello!\",\"phoneNumber\":\"+01-123-456-7890\","
	      "\"author\":{\"familyName\":null},\"tags\":[\"example\"]}",
	      "{\"title\":\"Hello!\",\"author\":{\"givenName\":\"John\"},\"tags\":[\"example\"],"
	      "\"content\":\"This will be unchanged\",\"phoneNumber\":\"+01-123-456-7890\"}",
	      1);
}

static void absent_target_is_null(void **state)
{
	(void)state;
	/* The patch with its nulls removed, at every depth. */
	check(NULL, "{\"a\":1,\"b\":null,\"c\":{\"d\":null,\"e\":2}}", "{\"a\":1,\"c\":{\"e\":2}}",
	      1);
	check(NULL, "[1,null]", "[1,null]", 1);
	check(NULL, "null", "null", 1);
	check("null", "{\"a\":null}", "{}", 1);
}

static void order_spelling_and_escapes_are_kept(void **state)
{
	(void)state;
	/* Target order first, new members after in the patch's order. */
	check("{\"z\":1,\"a\":2,\"m\":3}", "{\"b\":4,\"a\":5}", "{\"z\":1,\"a\":5,\"m\":3,\"b\":4}", 1);
	/* Numbers keep every digit and their spelling, in both inputs. */
	check("{\"big\":18446744073709551615,\"x\":0.1,\"y\":1.50}",
	      "{\"n\":9007199254740993,\"e\":1.0E+2}",
	      "{\"big\":18446744073709551615,\"x\":0.1,\"y\":1.50,\"n\":9007199254740993,"
	      "\"e\":1.0E+2}",
	      1);
	/* Names that need escapes survive. */
	check("{\"q\\\"uote\":1,\"back\\\\slash\":2}", "{\"tab\\tx\":3,\"q\\\"uote\":null}",
	      "{\"back\\\\slash\":2,\"tab\\tx\":3}", 1);
	check("{\"caf\\u00e9\":1}", "{\"\\u00e9t\\u00e9\":2}", "{\"café\":1,\"été\":2}", 0);
}

static void bad_arguments_are_refused(void **state)
{
	faucet_value *p = parse("{}"), *out = NULL;

	(void)state;
	assert_int_equal(faucet_value_merge_patch(p, NULL, &out), FAUCET_EINVALID);
	assert_null(out);
	assert_int_equal(faucet_value_merge_patch(p, p, NULL), FAUCET_EINVALID);
	faucet_value_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rfc7396_appendix_a),
		cmocka_unit_test(absent_target_is_null),
		cmocka_unit_test(order_spelling_and_escapes_are_kept),
		cmocka_unit_test(bad_arguments_are_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
