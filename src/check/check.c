/*
 * check.c - doctor probe reports.
 *
 * A report owns copies of every string it holds; the faucet_probe views it
 * hands out point into those copies and live as long as the report.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "check/check_internal.h"
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
		faucet__buf_dispose(bad);
		return FAUCET_ENOMEM;
	}
	if (bad->len == 0) {
		faucet__buf_dispose(bad);
		return faucet_check_report_add(r, "durability", FAUCET_PROBE_PASS, NULL,
					       faucet__now_ms() - start_ms, NULL);
	}
	reason = faucet__sprintf("the server is configured with %s: %s", bad->ptr, risk);
	faucet__buf_dispose(bad);
	if (reason == NULL)
		return FAUCET_ENOMEM;
	rc = faucet_check_report_add(r, "durability", FAUCET_PROBE_WARN, reason,
				     faucet__now_ms() - start_ms, hint);
	free(reason);
	return rc;
}

