/*
 * fuzz_export.c - faucet_export_parse() on arbitrary bytes (an operator's
 * `faucet state import FILE`).
 *
 * Properties:
 *   - parsing never crashes or leaks; a refused document is FAUCET_EINVALID
 *     (or ENOMEM) with a message;
 *   - an accepted document passes faucet_export_validate, holds its keys in
 *     strcmp order, and written out again - compact and pretty - parses to
 *     a document with the same pipeline, exported_at, keys and values (each
 *     value equal and with identical compact text: an export/import round
 *     trip never alters a bookmark).
 */
#include <string.h>

#include <faucet/store.h>
#include <faucet/value.h>

#include "fuzz.h"

static int same_text(const char *a, const char *b)
{
	return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static void check_same(const faucet_export *a, const faucet_export *b, int pretty)
{
	size_t n = faucet_export_count(a);

	FUZZ_CHECK(same_text(faucet_export_pipeline(a), faucet_export_pipeline(b)),
		   "pipeline changed (pretty=%d)", pretty);
	FUZZ_CHECK(same_text(faucet_export_exported_at(a), faucet_export_exported_at(b)),
		   "exported_at changed (pretty=%d)", pretty);
	FUZZ_CHECK(faucet_export_count(b) == n, "%zu keys became %zu (pretty=%d)", n,
		   faucet_export_count(b), pretty);
	for (size_t i = 0; i < n; i++) {
		const faucet_value *va = faucet_export_value_at(a, i);
		const faucet_value *vb = faucet_export_value_at(b, i);

		FUZZ_CHECK(strcmp(faucet_export_key_at(a, i), faucet_export_key_at(b, i)) == 0,
			   "key %zu changed: %s -> %s", i, faucet_export_key_at(a, i),
			   faucet_export_key_at(b, i));
		FUZZ_CHECK(faucet_value_equal(va, vb), "value of %s changed: %.200s -> %.200s",
			   faucet_export_key_at(a, i), faucet_value_json(va), faucet_value_json(vb));
		FUZZ_CHECK(strcmp(faucet_value_json(va), faucet_value_json(vb)) == 0,
			   "text of %s changed: %.200s -> %.200s", faucet_export_key_at(a, i),
			   faucet_value_json(va), faucet_value_json(vb));
	}
}

static void check_round_trip(const faucet_export *doc, int pretty)
{
	faucet_export *again = NULL;
	char *text = NULL;
	int rc = faucet_export_to_json(doc, pretty, &text);

	if (rc == FAUCET_ENOMEM)
		return;
	FUZZ_CHECK(rc == 0 && text != NULL, "export_to_json failed: %s",
		   faucet_error_last()->message);
	rc = faucet_export_parse(&again, text, strlen(text));
	FUZZ_CHECK(rc == 0 || rc == FAUCET_ENOMEM, "written document does not parse: %s\n%.400s",
		   faucet_error_last()->message, text);
	if (rc == 0)
		check_same(doc, again, pretty);
	faucet_export_free(again);
	faucet_free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	faucet_export *doc = NULL;
	int rc = faucet_export_parse(&doc, (const char *)data, size);

	if (rc != 0) {
		FUZZ_CHECK(doc == NULL, "failed parse left a document behind");
		FUZZ_CHECK(rc == FAUCET_EINVALID || rc == FAUCET_ENOMEM, "unexpected code %d", rc);
		FUZZ_CHECK(faucet_error_last()->message[0] != '\0', "failure without a message");
		return 0;
	}
	FUZZ_CHECK(faucet_export_validate(doc) == 0, "accepted document fails validation: %s",
		   faucet_error_last()->message);
	for (size_t i = 1; i < faucet_export_count(doc); i++)
		FUZZ_CHECK(strcmp(faucet_export_key_at(doc, i - 1), faucet_export_key_at(doc, i)) < 0,
			   "keys out of order at %zu", i);
	check_round_trip(doc, 0);
	check_round_trip(doc, 1);
	faucet_export_free(doc);
	return 0;
}
