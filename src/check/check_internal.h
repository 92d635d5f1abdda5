/*
 * check_internal.h - helpers of the check module for the backends' doctor
 * probes (internal to libfaucet).
 */
#ifndef FAUCET_CHECK_INTERNAL_H
#define FAUCET_CHECK_INTERNAL_H

#include <stdint.h>
#include <faucet/check.h>

/* Append a probe whose outcome is the calling thread's last error when
 * `failed` (its message is the reason, `hint` the hint), else a pass; the
 * elapsed time runs from `start_ms` (faucet__now_ms()). */
int faucet__check_report_probe(faucet_check_report *r, const char *name, int failed,
			       uint64_t start_ms, const char *hint);

#endif
