/*
 * faucet/check.h - doctor probes: what `faucet doctor` runs against a store.
 *
 * A probe has a name, a status (pass, fail with a reason, skip with a
 * reason, or warn with a reason: something to look at that is not a failure), the time it took and an optional hint for the operator.  Hints
 * and reasons never contain secrets.  A report is an ordered list of probes.
 */
#ifndef FAUCET_CHECK_H
#define FAUCET_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
	FAUCET_PROBE_PASS = 0,
	FAUCET_PROBE_FAIL = 1,
	FAUCET_PROBE_SKIP = 2,
	FAUCET_PROBE_WARN = 3  /* worth the operator's attention; does not fail the report */
} faucet_probe_status;

/* One probe's outcome.  Read-only view owned by its report. */
typedef struct {
	const char *name;
	faucet_probe_status status;
	const char *reason;  /* why it failed or was skipped; NULL on pass */
	uint64_t elapsed_ms;
	const char *hint;    /* what the operator can do; may be NULL */
} faucet_probe;

/* What a check may use: a deadline for the whole report, and flags.
 * Initialise with FAUCET_CHECK_CONTEXT_INIT (or faucet_check_context_init);
 * the struct may grow at its end (see faucet/store.h on options structs). */
#define FAUCET_CHECK_CONTEXT_VERSION 1
#define FAUCET_CHECK_CONTEXT_INIT {.version = FAUCET_CHECK_CONTEXT_VERSION}
typedef struct {
	unsigned version;    /* FAUCET_CHECK_CONTEXT_VERSION */
	uint64_t timeout_ms; /* 0 = the default, 10 000 ms */
	unsigned flags;      /* FAUCET_CHECK_* */
} faucet_check_context;

/* Fill `c` as its _INIT macro does, for context version `version` (writing no
 * more than that version's struct); FAUCET_EINVALID for a version unknown here. */
FAUCET_EXTERN int faucet_check_context_init(faucet_check_context *c, unsigned int version);

/* Repair what is safe to repair: the file store removes the temp files no
 * live writer holds (`faucet doctor --repair`). */
#define FAUCET_CHECK_REPAIR 1u

typedef struct faucet_check_report faucet_check_report;

/* A new, empty report.  Free with faucet_check_report_free(). */
FAUCET_EXTERN int faucet_check_report_new(faucet_check_report **out);

/* The default report of a store that implements no check: one skipped probe
 * "no check implemented". */
FAUCET_EXTERN int faucet_check_report_not_implemented(faucet_check_report **out);

/* Append a probe (strings are copied; reason/hint may be NULL). */
FAUCET_EXTERN int faucet_check_report_add(faucet_check_report *r, const char *name,
					  faucet_probe_status status, const char *reason,
					  uint64_t elapsed_ms, const char *hint);

FAUCET_EXTERN size_t faucet_check_report_count(const faucet_check_report *r);

/* The i-th probe, or NULL past the end. */
FAUCET_EXTERN const faucet_probe *faucet_check_report_probe(const faucet_check_report *r, size_t i);

/* How many probes failed. */
FAUCET_EXTERN size_t faucet_check_report_failed_count(const faucet_check_report *r);

FAUCET_EXTERN void faucet_check_report_free(faucet_check_report *r);

/* A doctor sentinel key unique to one probe: "faucet_doctor_probe.{32 hex}".
 * Caller frees. */
FAUCET_EXTERN char *faucet_doctor_sentinel_key(void);

#define FAUCET_DOCTOR_SENTINEL_PREFIX "faucet_doctor_probe"

#ifdef __cplusplus
}
#endif

#endif
