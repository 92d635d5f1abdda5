/*
 * backfill_status.h - `faucet backfill status`: what the markers of a
 * pipeline's backfills say, read without writing anything.
 */
#ifndef FAUCET_CLI_BACKFILL_STATUS_H
#define FAUCET_CLI_BACKFILL_STATUS_H

#include "cli.h"

typedef struct {
	const char *pipeline;        /* required (the YAML's name by default) */
	faucet_backfill_range range; /* from/to set: one range's units */
	const char *hash;            /* or one range by its hash */
} cli_backfill_status_args;

/* Print the status the arguments ask for; returns the exit code. */
int cli_backfill_status(cli_context *ctx, const cli_backfill_status_args *a);

#endif
