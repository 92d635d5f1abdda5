/*
 * check.c - doctor probe reports.
 *
 * A report owns copies of every string it holds; the faucet_probe views it
 * hands out point into those copies and live as long as the report.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include <faucet/check.h>

struct faucet_check_report {
	faucet_probe *probes;
	size_t count;
	size_t cap;
};

int faucet_check_report_new(faucet_check_report **out)
{
	*out = faucet__calloc(1, sizeof(**out));
	return *out ? 0 : FAUCET_ENOMEM;
}

int faucet_check_report_not_implemented(faucet_check_report **out)
{
	int rc = faucet_check_report_new(out);

	if (rc == 0)
		rc = faucet_check_report_add(*out, "state", FAUCET_PROBE_SKIP,
					     "no check implemented", 0, NULL);
	if (rc != 0) {
		faucet_check_report_free(*out);
		*out = NULL;
	}
	return rc;
}

static char *dup_or_null(const char *s, int *failed)
{
	char *d;

	if (s == NULL)
		return NULL;
	d = faucet__strdup(s);
	if (d == NULL)
		*failed = 1;
	return d;
}

int faucet_check_report_add(faucet_check_report *r, const char *name,
			    faucet_probe_status status, const char *reason,
			    uint64_t elapsed_ms, const char *hint)
{
	faucet_probe *p, *grown;
	int failed = 0;

	grown = faucet__reserve(r->probes, &r->cap, r->count + 1, sizeof(*r->probes), 4);
	if (grown == NULL)
		return FAUCET_ENOMEM;
	r->probes = grown;
	p = &r->probes[r->count];
	p->name = dup_or_null(name ? name : "probe", &failed);
	p->status = status;
	p->reason = dup_or_null(reason, &failed);
	p->elapsed_ms = elapsed_ms;
	p->hint = dup_or_null(hint, &failed);
	if (failed) {
		free((char *)p->name);
		free((char *)p->reason);
		free((char *)p->hint);
		return FAUCET_ENOMEM;
	}
	r->count++;
	return 0;
}

size_t faucet_check_report_count(const faucet_check_report *r)
{
	return r->count;
}

const faucet_probe *faucet_check_report_probe(const faucet_check_report *r, size_t i)
{
	return i < r->count ? &r->probes[i] : NULL;
}

size_t faucet_check_report_failed_count(const faucet_check_report *r)
{
	size_t n = 0;

	for (size_t i = 0; i < r->count; i++)
		n += r->probes[i].status == FAUCET_PROBE_FAIL;
	return n;
}

void faucet_check_report_free(faucet_check_report *r)
{
	if (r == NULL)
		return;
	for (size_t i = 0; i < r->count; i++) {
		free((char *)r->probes[i].name);
		free((char *)r->probes[i].reason);
		free((char *)r->probes[i].hint);
	}
	free(r->probes);
	free(r);
}

char *faucet_doctor_sentinel_key(void)
{
	char hex[33];

	if (faucet__random_hex(hex, 16) != 0)
		return NULL;
	return faucet__sprintf("%s.%s", FAUCET_DOCTOR_SENTINEL_PREFIX, hex);
}

int faucet__check_report_probe(faucet_check_report *r, const char *name, int failed,
			       uint64_t start_ms, const char *hint)
{
	return faucet_check_report_add(r, name, failed ? FAUCET_PROBE_FAIL : FAUCET_PROBE_PASS,
				       failed ? faucet_error_last()->message : NULL,
				       faucet__now_ms() - start_ms, failed ? hint : NULL);
}

int faucet__check_durability_verdict(faucet_check_report *r, faucet_buf *bad, uint64_t start_ms,
				     const char *risk, const char *hint)
{
	char *reason;
	int rc;

	if (bad->failed) {
		faucet_buf_dispose(bad);
		return FAUCET_ENOMEM;
	}
	if (bad->len == 0) {
		faucet_buf_dispose(bad);
		return faucet_check_report_add(r, "durability", FAUCET_PROBE_PASS, NULL,
					       faucet__now_ms() - start_ms, NULL);
	}
	reason = faucet__sprintf("the server is configured with %s: %s", bad->ptr, risk);
	faucet_buf_dispose(bad);
	if (reason == NULL)
		return FAUCET_ENOMEM;
	rc = faucet_check_report_add(r, "durability", FAUCET_PROBE_WARN, reason,
				     faucet__now_ms() - start_ms, hint);
	free(reason);
	return rc;
}

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
