/*
 * check_internal.h - helpers of the check module for the backends' doctor
 * probes (internal to libfaucet).
 */
#ifndef FAUCET_CHECK_INTERNAL_H
#define FAUCET_CHECK_INTERNAL_H

#include <stdint.h>
#include <faucet/check.h>
#include "internal.h"

/* Append a probe whose outcome is the calling thread's last error when
 * `failed` (its message is the reason, `hint` the hint), else a pass; the
 * elapsed time runs from `start_ms` (faucet__now_ms()). */
int faucet__check_report_probe(faucet_check_report *r, const char *name, int failed,
			       uint64_t start_ms, const char *hint);

/* The "durability" probe of a server store from `bad`, the settings found
 * against durable commits ("fsync=off, ..."; empty: none): a pass, or a
 * warning naming them with `risk` (what can happen) and `hint`.  Disposes
 * `bad`. */
int faucet__check_durability_verdict(faucet_check_report *r, faucet_buf *bad, uint64_t start_ms,
				     const char *risk, const char *hint);

#endif
