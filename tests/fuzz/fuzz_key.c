/*
 * fuzz_key.c - key validation, key parsing and component encoding on
 * arbitrary text (the input up to its first NUL).
 *
 * Properties (doc/design.md §2.1, §2.2 and seed 000):
 *   - validation and parsing never crash or leak;
 *   - a key that validates and parses under the namespace "p" (or "t::p")
 *     renders back to exactly itself, so decoding a listed key and
 *     rendering it again addresses the same bookmark;
 *   - encode_component's output, with or without separators, is always a
 *     valid key component: "p::r::" + output is a valid key;
 *   - a parent key is rendered through encode_component (scheme 2) and that
 *     rendering parses back to itself.
 */
#include <string.h>

#include <faucet/keys.h>

#include "fuzz.h"

#define COMPONENT_PREFIX "p::r::"

/* Poke every accessor and derived rendering: none may crash. */
static void touch_accessors(const faucet_key *k)
{
	faucet_strarray legacy = {NULL, 0};
	char *texts[4];

	(void)faucet_key_tenant(k);
	(void)faucet_key_pipeline_name(k);
	(void)faucet_key_row(k);
	(void)faucet_key_shard(k);
	(void)faucet_key_suffix(k);
	(void)faucet_key_suffix_arg(k);
	texts[0] = faucet_key_sub(k);
	texts[1] = faucet_key_namespace(k);
	texts[2] = faucet_key_children_prefix(k);
	texts[3] = faucet_key_render_scheme(k, 1);
	for (size_t i = 0; i < 4; i++)
		faucet_free(texts[i]);
	if (faucet_key_legacy_renderings(k, &legacy) == 0) {
		for (size_t i = 0; i < legacy.count; i++)
			FUZZ_CHECK(faucet_validate_key(legacy.strings[i]) == 0,
				   "legacy rendering '%s' is not a valid key", legacy.strings[i]);
		faucet_strarray_dispose(&legacy);
	}
}

static void check_parse(const char *tenant, const char *input, int valid)
{
	faucet_key *k = NULL;
	char *again;
	int rc = faucet_key_parse(&k, tenant, "p", input);

	if (rc != 0) {
		FUZZ_CHECK(k == NULL, "failed parse left a key behind");
		FUZZ_CHECK(rc == FAUCET_ENOTFOUND || rc == FAUCET_ENOMEM,
			   "parse of '%.300s' failed with code %d", input, rc);
		return;
	}
	touch_accessors(k);
	again = faucet_key_render(k);
	if (again != NULL && valid)
		FUZZ_CHECK(strcmp(again, input) == 0, "key '%s' (tenant %s) renders as '%s'", input,
			   tenant ? tenant : "none", again);
	faucet_free(again);
	faucet_key_free(k);
}

static void check_component(const char *raw, int allow_separators)
{
	char *enc = faucet_encode_component(raw, allow_separators);
	char key[sizeof(COMPONENT_PREFIX) + FAUCET_KEY_MAX];

	if (enc == NULL)
		return; /* out of memory */
	FUZZ_CHECK(strlen(enc) + sizeof(COMPONENT_PREFIX) <= sizeof(key),
		   "encoded component of %zu bytes is too long", strlen(enc));
	memcpy(key, COMPONENT_PREFIX, sizeof(COMPONENT_PREFIX) - 1);
	strcpy(key + sizeof(COMPONENT_PREFIX) - 1, enc);
	FUZZ_CHECK(faucet_validate_key(key) == 0,
		   "encode_component('%.300s', %d) = '%s' is not a valid component: %s", raw,
		   allow_separators, enc, faucet_error_last()->message);
	faucet_free(enc);
}

/* with_parent_key(raw) renders "p::r::" + encode_component(raw, 1). */
static void check_parent_key(const char *raw)
{
	faucet_key *k = NULL;
	char *rendered, *enc;

	if (faucet_key_new_invocation(&k, "p", "r") != 0)
		return;
	if (faucet_key_set_parent_key(k, raw) != 0) {
		faucet_key_free(k);
		return;
	}
	rendered = faucet_key_render(k);
	enc = faucet_encode_component(raw, 1);
	if (rendered != NULL && enc != NULL) {
		FUZZ_CHECK(strncmp(rendered, COMPONENT_PREFIX, strlen(COMPONENT_PREFIX)) == 0 &&
				   strcmp(rendered + strlen(COMPONENT_PREFIX), enc) == 0,
			   "parent key '%.300s' renders as '%s', not " COMPONENT_PREFIX "%s", raw,
			   rendered, enc);
		if (faucet_validate_key(rendered) == 0)
			check_parse(NULL, rendered, 1);
	}
	faucet_free(rendered);
	faucet_free(enc);
	faucet_key_free(k);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *input = fuzz_cstring(data, size);
	int valid;

	if (input == NULL)
		return 0;
	valid = faucet_validate_key(input) == 0;
	if (!valid)
		FUZZ_CHECK(faucet_error_last()->code == FAUCET_EINVALID &&
				   faucet_error_last()->message[0] != '\0',
			   "invalid key without an EINVALID message");
	check_parse(NULL, input, valid);
	check_parse("t", input, valid);
	check_component(input, 0);
	check_component(input, 1);
	check_parent_key(input);
	free(input);
	return 0;
}
