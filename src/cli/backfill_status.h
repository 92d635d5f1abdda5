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
	const char *tenant;          /* tenant T's pipeline: markers at T::P::__backfill__:: */
} cli_backfill_status_args;

/* Print the status the arguments ask for; returns the exit code. */
int cli_backfill_status(cli_context *ctx, const cli_backfill_status_args *a);

/* What `backfill status --pipeline P --json` (hash NULL) or `... --hash H
 * --json` prints, appended to `out` instead (faucet serve's backfill
 * routes).  Returns the exit code; a failure's message went to stderr. */
int cli_backfill_status_json(cli_context *ctx, faucet_store *s, const char *pipeline,
			     const char *hash, faucet_buf *out);

/* After a failed faucet_backfill_plan_new(): when the library refused the
 * time zone `tz`, the error with a "did you mean" when one is near;
 * otherwise the library's error.  Printed; returns CLI_EXIT_USAGE. */
int cli_plan_failed(const char *command, const char *tz);

#endif
