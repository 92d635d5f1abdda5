/*
 * fuzz_file_names.c - the file store's name decoding on arbitrary bytes.
 *
 * Listing a state directory turns every "{stem}.json" it finds back into a
 * key, and the directory may hold anything (files of other tools, names an
 * older release wrote, names made by hand).  Properties:
 *   - decoding never reads or writes out of bounds (the buffers below are
 *     heap blocks of the exact documented size, so ASan sees any overrun);
 *   - a stem that decodes gives a valid key, and that key's current stem
 *     decodes back to it unless it is the hashed (sidecar) form;
 *   - the store's allocation-free validity check agrees with
 *     faucet_validate_key on every input;
 *   - the stem of a valid key is at most FILE_STEM_MAX bytes, never ends in
 *     half an escape, and holds no '/', ':' or capital outside an escape
 *     (the case-insensitive filesystem rule).
 */
#include <string.h>

#include <faucet/keys.h>

#include "fuzz.h"
#include "stores/file_names.h"

static void check_stem_of(const char *key, char *stem, char *again)
{
	size_t len = faucet_file__stem(key, stem), n;

	FUZZ_CHECK(len <= FILE_STEM_MAX && strlen(stem) == len, "stem of '%s' is %zu bytes", key,
		   len);
	for (size_t i = 0; i < len; i++) {
		if (stem[i] == '%') {
			FUZZ_CHECK(i + 2 < len, "stem '%s' of '%s' ends in half an escape", stem, key);
			i += 2; /* the escape's hex digits may be capitals */
			continue;
		}
		FUZZ_CHECK(stem[i] != '/' && stem[i] != ':' && !(stem[i] >= 'A' && stem[i] <= 'Z'),
			   "stem '%s' of '%s' holds '%c' unescaped", stem, key, stem[i]);
	}
	if (faucet_file__stem_is_hashed(stem, len))
		return;
	n = faucet_file__decode_stem(stem, len, again);
	FUZZ_CHECK(n == strlen(key) && strcmp(again, key) == 0,
		   "stem '%s' of '%s' decodes to '%s'", stem, key, n ? again : "(nothing)");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *key = malloc(FILE_KEY_CAP), *stem = malloc(FILE_STEM_MAX + 1);
	char *again = malloc(FILE_KEY_CAP), *text = fuzz_cstring(data, size);
	size_t n;

	if (key == NULL || stem == NULL || again == NULL || text == NULL)
		goto out;
	/* The input as a stem. */
	n = faucet_file__decode_stem((const char *)data, size, key);
	if (n > 0) {
		FUZZ_CHECK(strlen(key) == n && faucet_validate_key(key) == 0,
			   "stem decodes to an invalid key '%.300s'", key);
		check_stem_of(key, stem, again);
	}
	/* The input as a key. */
	if (strlen(text) == size) {
		int valid = faucet_validate_key(text) == 0;
		FUZZ_CHECK(faucet_file__key_is_valid(text, size) == valid,
			   "validators disagree on '%.300s' (faucet_validate_key: %d)", text, valid);
		if (valid)
			check_stem_of(text, stem, again);
	}
out:
	free(key);
	free(stem);
	free(again);
	free(text);
	return 0;
}
