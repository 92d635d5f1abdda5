/*
 * internal.h - what every module of libfaucet shares beyond src/util/util.h
 * (allocation, buffers, errors, clocks: included here): the versioned
 * options loader and lease holder ids (not installed).
 */
#ifndef FAUCET_INTERNAL_H
#define FAUCET_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <faucet/common.h>

#include "util.h"

/* Read a caller's versioned options struct `src` (public options structs
 * start with `unsigned version`) into `dst`, the library's current struct of
 * `dst_size` bytes: sizes[v - 1] is the size of version v, for v = 1 up to
 * `current`.  An older version's missing fields are left zero (their
 * defaults); dst->version becomes `current`.  Version 0 or one above
 * `current` is FAUCET_EINVALID naming `what`. */
int faucet__options_load(void *dst, size_t dst_size, const void *src, const size_t *sizes,
			 unsigned current, const char *what);

/* Whether the versioned struct `src` is of a version from 1 to `current`;
 * FAUCET_EINVALID naming `what` otherwise (what faucet__options_load refuses,
 * for a struct the library fills rather than reads). */
int faucet__options_check(const void *src, unsigned current, const char *what);

/* Fill the caller's options struct `dst` of version `version` with
 * `defaults` (the current struct's _INIT): only sizes[version - 1] bytes
 * are written, and dst->version becomes `version`.  NULL `dst`, version 0
 * or one above `current` is FAUCET_EINVALID naming `what`. */
int faucet__options_init(void *dst, const void *defaults, const size_t *sizes, unsigned version,
			 unsigned current, const char *what);

/* "{host}:{pid}:{16 random hex}": who holds a lease (backfill units and
 * invocation runs alike).  Caller frees; NULL when out of memory. */
char *faucet__holder_id(void);
/* Whether the process behind a holder id is known to be gone: the id names
 * this host and no process has its pid.  0 when alive, on another host
 * (only a lease's expiry tells then) or not a holder id. */
int faucet__holder_dead(const char *holder);

#endif
