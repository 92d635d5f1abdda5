/*
 * faults.h - fail the Nth system call of a durable writer (tests only).
 *
 * A faucet_sys table (src/common/sys.h) that passes every call to the real
 * one and counts them; armed with N, the Nth call fails instead - like
 * SQLite's test_syscall.c - with an errno (EIO, ENOSPC) or, for a write, by
 * writing only half and returning the short count (a caller that does not
 * loop would store a torn value).  A test runs an operation once unarmed to
 * learn how many calls it makes, then once for every N.
 */
#ifndef FAUCET_TEST_FAULTS_H
#define FAUCET_TEST_FAULTS_H

#include <stddef.h>

typedef enum {
	FAULT_EIO,
	FAULT_ENOSPC,
	FAULT_SHORT_WRITE /* only writes are affected; other calls pass */
} fault_kind;

/* Install the counting table; nothing is armed.  fault_stop() restores the
 * real calls. */
void fault_start(void);
void fault_stop(void);
/* With refuse != 0, opening an unnamed file (O_TMPFILE) fails with
 * EOPNOTSUPP, as on a filesystem without it (the call still counts). */
void fault_refuse_tmpfile(int refuse);

/* Reset the count; the `n`th call from now (1-based) fails with `kind`;
 * n = 0 arms nothing. */
void fault_arm(size_t n, fault_kind kind);

/* Calls counted since the last fault_arm(); whether the armed fault fired
 * and in which call ("fsync", ...). */
size_t fault_calls(void);
int fault_fired(void);
const char *fault_fired_call(void);

const char *fault_kind_name(fault_kind kind);

#endif
