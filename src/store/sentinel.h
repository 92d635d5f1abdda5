/*
 * sentinel.h - the doctor's sentinel probe for backends (internal to
 * libfaucet; the store module).
 */
#ifndef FAUCET_STORE_SENTINEL_H
#define FAUCET_STORE_SENTINEL_H

#include <faucet/sys/store_backend.h>

/* The doctor's sentinel probe through a backend's own slots: put a unique
 * key, read it back, delete it (also when the read failed: no residue) and
 * compare.  Returns 0 or the first failure, with its message. */
int faucet__sentinel_round_trip(faucet_store_backend *b);

#endif
