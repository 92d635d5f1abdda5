/*
 * migrate.c - moving a bookmark from the key an earlier release used to the
 * key this release renders.
 *
 * Two rules keep this safe when several runners start at once:
 *   - the value is claimed with compare-and-put against an absent entry, so
 *     a runner that has already written the current key is never
 *     overwritten (the mover then reports CURRENT: someone else won);
 *   - the old key is deleted only after the claim, and best-effort.  A crash
 *     or a failed delete in between leaves the value under both keys; the
 *     next run finds the current key first and moves nothing, so the stale
 *     copy is harmless.
 * Everything that can fail on allocation is done before the claim, so once
 * the store has changed the call reports MOVED.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include <faucet/metrics.h>
#include <faucet/store.h>

#define MIGRATIONS_METRIC "faucet_state_key_migrations_total"

/* Metrics are advisory: a counter that cannot be allocated must not turn a
 * completed move into a reported failure. */
static void count_outcome(const char *outcome_label)
{
	(void)faucet_metrics_counter_add(MIGRATIONS_METRIC, outcome_label, 1);
}

/* Claim `value` for `key` and retire `old`.  *kind is MOVED or CURRENT. */
static int claim(faucet_store *s, const char *key, const char *old, const faucet_value *value,
		 faucet_migration_kind *kind, char **from_out)
{
	char *from = NULL;
	int written = 0, rc;

	if (from_out != NULL) {
		from = faucet__strdup(old);
		if (from == NULL)
			return FAUCET_ENOMEM;
	}
	rc = faucet_store_compare_and_put(s, key, NULL, value, &written);
	if (rc != 0) {
		free(from);
		return rc;
	}
	if (!written) {
		free(from);
		count_outcome("outcome=\"raced\"");
		*kind = FAUCET_MIGRATION_CURRENT;
		return 0;
	}
	/* The value is safe under `key` now; a stale copy left behind by a
	 * failed delete is shadowed by it on every later run. */
	if (faucet_store_delete(s, old) != 0)
		faucet_error_clear();
	count_outcome("outcome=\"moved\"");
	*kind = FAUCET_MIGRATION_MOVED;
	if (from_out != NULL)
		*from_out = from;
	return 0;
}

int faucet_migrate_state_key(faucet_store *s, const char *key,
			     const char *const *candidates, size_t count,
			     faucet_migration_kind *kind_out, char **from_out)
{
	faucet_migration_kind ignored;
	faucet_value *value = NULL;
	int rc;

	if (from_out != NULL)
		*from_out = NULL;
	if (kind_out == NULL)
		kind_out = &ignored;
	*kind_out = FAUCET_MIGRATION_FRESH;
	if (s == NULL || key == NULL || (count > 0 && candidates == NULL))
		return faucet_error_set(FAUCET_EINVALID, "faucet_migrate_state_key: NULL argument");
	if (count == 0)
		return 0;
	rc = faucet_store_get(s, key, &value);
	if (rc != 0)
		return rc;
	if (value != NULL) {
		faucet_value_free(value);
		*kind_out = FAUCET_MIGRATION_CURRENT;
		return 0;
	}
	for (size_t i = 0; i < count; i++) {
		const char *old = candidates[i];
		if (old == NULL)
			return faucet_error_set(FAUCET_EINVALID,
						"key migration: candidate %zu is NULL", i);
		if (strcmp(old, key) == 0)
			continue;
		rc = faucet_store_get(s, old, &value);
		if (rc != 0)
			return rc;
		if (value == NULL)
			continue;
		rc = claim(s, key, old, value, kind_out, from_out);
		faucet_value_free(value);
		return rc;
	}
	return 0;
}
