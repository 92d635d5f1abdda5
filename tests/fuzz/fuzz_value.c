/*
 * fuzz_value.c - faucet_value_parse() on arbitrary bytes.
 *
 * Properties (doc/design.md §2.4, the fidelity rule):
 *   - parsing never crashes or leaks, and fails with FAUCET_EINVALID (or
 *     FAUCET_ENOMEM) and a message;
 *   - an accepted value's compact text parses again, to a value whose text
 *     is byte-for-byte the same (writing a bookmark back never changes it);
 *   - faucet_value_equal is reflexive and agrees both ways between the value
 *     and its re-parse;
 *   - the value with its numbers spelt canonically (what PostgreSQL's
 *     compare-and-put sends) is an equal value, and spelling it again
 *     changes nothing;
 *   - the strict checker never passes what json-c would refuse or alter:
 *     json-c parses every accepted text and prints it back byte for byte
 *     (the library builds json-c's tree only when it needs one, so a
 *     disagreement would surface far from the read that let it in);
 *   - an input leaves no trace: a fixed value with escapes, parsed after
 *     every input, always reads the same (the parser reuses per-thread
 *     state, and state left by a malformed input once altered the next
 *     value parsed on that thread).
 */
#include <string.h>

#include <faucet/value.h>

#include "fuzz.h"
#include "values/value_internal.h"

static void check_json_c_agrees(const faucet_value *v)
{
	json_object *tree = NULL;
	const char *printed;
	size_t len = 0;
	int rc = faucet_value__tree(v, &tree);

	if (rc == FAUCET_ENOMEM)
		return;
	FUZZ_CHECK(rc == 0, "json-c refused accepted text %.200s: %s", faucet_value_json(v),
		   faucet_error_last()->message);
	printed = json_object_to_json_string_length(
		tree, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
	FUZZ_CHECK(printed != NULL && len == faucet_value_len(v) &&
			   memcmp(printed, faucet_value_json(v), len) == 0,
		   "json-c reads %.200s as %.200s", faucet_value_json(v),
		   printed ? printed : "(nothing)");
}

static void check_reparse(const faucet_value *v)
{
	const char *text = faucet_value_json(v);
	size_t len = faucet_value_len(v);
	faucet_value *again = NULL;
	int rc;

	/* JSON escapes every control character, so the text holds no NUL. */
	FUZZ_CHECK(text != NULL && strlen(text) == len, "value text missing or mis-sized");
	rc = faucet_value_parse(&again, text, len);
	FUZZ_CHECK(rc == 0, "compact text %.200s does not parse again: %s", text,
		   faucet_error_last()->message);
	FUZZ_CHECK(faucet_value_len(again) == len &&
			   memcmp(faucet_value_json(again), text, len) == 0,
		   "text changed on re-parse: %.200s -> %.200s", text, faucet_value_json(again));
	FUZZ_CHECK(faucet_value_equal(v, again) && faucet_value_equal(again, v),
		   "value and its re-parse compare unequal: %.200s", text);
	FUZZ_CHECK(faucet_value_equal(again, again), "equality not reflexive: %.200s", text);
	faucet_value_free(again);
}

static void check_canonical(const faucet_value *v)
{
	faucet_value *c = NULL, *again = NULL;
	int64_t lo, hi, lo2, hi2;
	int rc = faucet_value__canonical_numbers(v, &c, &lo, &hi);

	if (rc == FAUCET_ENOMEM)
		return;
	FUZZ_CHECK(rc == 0, "no canonical spelling of %.200s: %s", faucet_value_json(v),
		   faucet_error_last()->message);
	FUZZ_CHECK(faucet_value_equal(v, c) && faucet_value_equal(c, v),
		   "canonical spelling %.200s is another value than %.200s", faucet_value_json(c),
		   faucet_value_json(v));
	rc = faucet_value__canonical_numbers(c, &again, &lo2, &hi2);
	if (rc == 0)
		FUZZ_CHECK(strcmp(faucet_value_json(again), faucet_value_json(c)) == 0 &&
				   lo == lo2 && hi == hi2,
			   "canonical spelling not stable: %.200s -> %.200s", faucet_value_json(c),
			   faucet_value_json(again));
	faucet_value_free(again);
	faucet_value_free(c);
}

/* Parse a value whose every string is escaped and compare its text. */
static void check_canary(void)
{
	static const char canary[] = "[\"\\u0041\",\"\\u00e9\",\"\\ud83d\\ude00\",\"\\u001c\"]";
	static const char want[] = "[\"A\",\"\xc3\xa9\",\"\xf0\x9f\x98\x80\",\"\\u001c\"]";
	faucet_value *v = NULL;

	if (faucet_value_parse(&v, canary, sizeof(canary) - 1) == FAUCET_ENOMEM)
		return;
	FUZZ_CHECK(v != NULL && strcmp(faucet_value_json(v), want) == 0,
		   "the input left state behind: %s now reads as %s", canary,
		   v ? faucet_value_json(v) : faucet_error_last()->message);
	faucet_value_free(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	faucet_value *v = NULL;
	int rc = faucet_value_parse(&v, (const char *)data, size);

	if (rc != 0) {
		FUZZ_CHECK(v == NULL, "failed parse left a value behind");
		FUZZ_CHECK(rc == FAUCET_EINVALID || rc == FAUCET_ENOMEM, "unexpected code %d", rc);
		FUZZ_CHECK(faucet_error_last()->message[0] != '\0', "failure without a message");
		check_canary();
		return 0;
	}
	FUZZ_CHECK(faucet_value_equal(v, v), "equality not reflexive");
	check_reparse(v);
	check_canonical(v);
	check_json_c_agrees(v);
	/* A second reference must outlive the first. */
	faucet_value *ref = faucet_value_ref(v);
	faucet_value_free(v);
	FUZZ_CHECK(strlen(faucet_value_json(ref)) == faucet_value_len(ref),
		   "value damaged by dropping a reference");
	faucet_value_free(ref);
	check_canary();
	return 0;
}
