/*
 * sentinel.c - the doctor's sentinel probe, written through a backend's own
 * slots.
 *
 * It lives with the store front-end, not with the probe reports of check/,
 * because it drives a backend and compares values: the report module stays
 * below the store, which returns its reports.
 */
#include <stdlib.h>

#include "internal.h"
#include "store/sentinel.h"

int faucet__sentinel_round_trip(faucet_store_backend *b)
{
	static const char probe_json[] = "{\"faucet_doctor\":true}";
	faucet_value *probe = NULL, *got = NULL;
	char *key = faucet_doctor_sentinel_key();
	int rc;

	if (key == NULL)
		return faucet_error_last()->code ? faucet_error_last()->code : FAUCET_ENOMEM;
	rc = faucet_value_parse(&probe, probe_json, sizeof(probe_json) - 1);
	if (rc == 0)
		rc = b->put(b, key, probe);
	if (rc == 0)
		rc = b->get(b, key, &got);
	if (rc == 0) {
		/* A sentinel that cannot be deleted is a store that cannot be used. */
		rc = b->del(b, key);
		if (rc == 0 && !faucet_value_equal(got, probe))
			rc = faucet_error_set(FAUCET_ERROR,
					      "sentinel readback did not match what was written");
	} else {
		int keep = rc;
		char *msg = faucet__strdup(faucet_error_last()->message);
		(void)b->del(b, key); /* best effort: leave no residue */
		rc = faucet_error_set(keep, "%s", msg ? msg : "sentinel write failed");
		free(msg);
	}
	faucet_value_free(got);
	faucet_value_free(probe);
	free(key);
	return rc;
}
