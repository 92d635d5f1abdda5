/*
 * faucet/faucet.h - everything a connector or pipeline runner needs from
 * libfaucet, the durable state layer of faucet.  Include this one header.
 *
 * libfaucet runs on Linux only (faucet/export.h says why).  Build against
 * it with `pkg-config --cflags --libs faucet`, or find_package(faucet
 * CONFIG) and faucet::faucet in CMake; FAUCET_VERSION_STRING is the headers'
 * version, faucet_version() the library's.
 */
#ifndef FAUCET_FAUCET_H
#define FAUCET_FAUCET_H

#include "common.h"
#include "value.h"
#include "keys.h"
#include "check.h"
#include "metrics.h"
#include "store.h"
#include "config.h"
#include "lease.h"
#include "backfill.h"
#include "run.h"
#include "proc.h"

#endif
