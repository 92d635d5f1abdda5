/*
 * rewrite.c - rewrite every value of a store in place (`faucet state rekey`).
 *
 * Re-sealing a file store with a new key is nothing but reading each value
 * (which tries the current key, then the previous ones) and writing it back
 * (which always seals with the current key).  The write is a compare-and-put
 * against the value just read: if another writer changed the key meanwhile,
 * its value was already written with the current settings and must not be
 * replaced by our older copy.  Every single rewrite is atomic (a file store
 * renames a complete temp file over the old one), so an interrupted run
 * leaves each file sealed with either the old or the new key, both readable,
 * and running it again completes the job.
 */
#include "internal.h"
#include <faucet/store.h>

int faucet_store_rewrite_all(faucet_store *s, const char *prefix, size_t *rewritten,
			     size_t *skipped)
{
	faucet_strarray keys = {NULL, 0};
	size_t done = 0, left = 0;
	int rc;

	if (s == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_store_rewrite_all: NULL store");
	rc = faucet_store_list(s, prefix ? prefix : "", &keys);
	for (size_t i = 0; i < keys.count && rc == 0; i++) {
		faucet_value *v = NULL;
		int written = 0;

		rc = faucet_store_get(s, keys.strings[i], &v);
		if (rc != 0) {
			rc = faucet__error_wrap("rewriting '%s'", keys.strings[i]);
			break;
		}
		if (v == NULL) {
			left++; /* deleted since the listing */
			continue;
		}
		rc = faucet_store_compare_and_put(s, keys.strings[i], v, v, &written);
		faucet_value_free(v);
		if (rc != 0) {
			rc = faucet__error_wrap("rewriting '%s'", keys.strings[i]);
			break;
		}
		if (written)
			done++;
		else
			left++;
	}
	faucet_strarray_dispose(&keys);
	if (rewritten)
		*rewritten = done;
	if (skipped)
		*skipped = left;
	return rc;
}
