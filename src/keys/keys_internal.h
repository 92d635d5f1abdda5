/*
 * keys_internal.h - what the key files share with each other (not installed).
 */
#ifndef FAUCET_KEYS_INTERNAL_H
#define FAUCET_KEYS_INTERNAL_H

#include "internal.h"
#include <faucet/keys.h>

/* Whether `kind` is a suffix this build knows (FAUCET_SUFFIX_NONE is not). */
int faucet_suffix__known(faucet_suffix_kind kind);

/* Whether the suffix carries an argument segment (a run id, a range hash). */
int faucet_suffix__takes_arg(faucet_suffix_kind kind);

/* Append one segment to a key under construction: a separator first unless
 * the buffer is still empty.  That is the original's rule, and it matters:
 * an empty tenant or pipeline adds no separator of its own. */
void faucet_key__push(faucet_buf *out, const char *segment);

/* Append the suffix's segments with faucet_key__push (no-op for NONE). */
void faucet_suffix__push(faucet_buf *out, faucet_suffix_kind kind, const char *arg);

#endif
