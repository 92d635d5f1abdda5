/*
 * faucet/faucet.h - everything a connector or pipeline runner needs from
 * libfaucet, the durable state layer of faucet.  Include this one header.
 */
#ifndef FAUCET_FAUCET_H
#define FAUCET_FAUCET_H

#include "common.h"
#include "value.h"
#include "keys.h"
#include "check.h"
#include "metrics.h"
#include "store.h"
#include "backfill.h"
#include "run.h"

#endif
