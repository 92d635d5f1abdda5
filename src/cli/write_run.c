/*
 * write_run.c - every CLI write is one run (doc/design.md §8.7).
 *
 * `state put/delete/import/copy` record what they change as a run, so any
 * of them can be undone with `faucet state undo`.  Which run:
 *
 *   - FAUCET_RUN_ID set (a command started by `faucet run`): the write
 *     joins that run - recorded in its marker, fenced by its lease; a run
 *     that lost its lease cannot write (exit 1, nothing written);
 *   - every changed key belongs to one invocation {p}::{r}: a run of that
 *     invocation, without a lease (a CLI write does not wait for a run in
 *     flight; it is fenced only when it joins one);
 *   - otherwise a pipeline-level run of the first key's pipeline.
 *
 * Which invocation keys belong to is the library's decision
 * (faucet_run_keys_invocation), so that an import - whose run the library
 * begins once it knows every key the import changes - decides exactly as
 * put and delete do.  Writes of the bookkeeping keys themselves are not
 * recorded: they are the records.  A copy never joins FAUCET_RUN_ID's run,
 * which lives in another store.
 */
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "cli.h"
#include "jsonw.h"

static int write_run_fail(const char *command)
{
	int code = faucet_error_last()->code;

	if (code == FAUCET_EBUSY)
		return cli_fail(CLI_EXIT_BUSY, "%s", command);
	return cli_fail(code == FAUCET_EINVALID ? CLI_EXIT_USAGE : CLI_EXIT_FAILED,
			"%s: cannot record the write as a run", command);
}

int cli_write_run_begin_in(cli_context *ctx, faucet_store *s, const char *command,
			   const char *pipeline, const char *row, int flags, cli_write_run *w)
{
	int may_join = (flags & CLI_RUN_MAY_JOIN) != 0;
	faucet_run_options o = FAUCET_RUN_OPTIONS_INIT;
	int rc = 0;

	memset(w, 0, sizeof(*w));
	w->quiet = ctx->quiet || ctx->json;
	if (pipeline == NULL)
		goto done; /* bookkeeping only */
	/* Inside `faucet run`, every write of the command joins its run, of
	 * whichever pipeline: undoing the run undoes all the job wrote. */
	rc = may_join ? faucet_run_join_env(&w->run, s, NULL, NULL) : FAUCET_ENOTFOUND;
	if (rc == 0) {
		w->joined = 1;
		goto done;
	}
	if (rc != FAUCET_ENOTFOUND) {
		rc = cli_fail(faucet_error_last()->code == FAUCET_EINVALID ? CLI_EXIT_USAGE
									  : CLI_EXIT_FAILED,
			      "%s: cannot join the run of `faucet run` (FAUCET_RUN_ID=%s)", command,
			      getenv("FAUCET_RUN_ID"));
		goto done;
	}
	rc = 0;
	o.no_lease = 1;
	/* A bulk write holds the pipeline lease: no `faucet run` or undo of
	 * the pipeline runs while it writes (a joined one is under its run's). */
	o.exclusive = (flags & CLI_RUN_EXCLUSIVE) != 0;
	o.command = command;
	if (row != NULL)
		o.row = row;
	else
		o.pipeline_level = 1;
	if (faucet_run_begin(&w->run, s, pipeline, &o) != 0)
		rc = write_run_fail(command);
done:
	w->pipeline = faucet__strdup(pipeline ? pipeline : "");
	if (rc == 0 && w->pipeline == NULL)
		rc = cli_fail(CLI_EXIT_FAILED, "%s", command);
	if (rc != 0)
		cli_write_run_dispose(w);
	return rc;
}

int cli_write_run_begin(cli_context *ctx, faucet_store *s, const char *command,
			const char *const *keys, size_t n, int flags, cli_write_run *w)
{
	char *pipeline = NULL, *row = NULL;
	int rc;

	if (faucet_run_keys_invocation(keys, n, &pipeline, &row) != 0) {
		memset(w, 0, sizeof(*w));
		return cli_fail(CLI_EXIT_FAILED, "%s", command);
	}
	rc = cli_write_run_begin_in(ctx, s, command, pipeline, row, flags, w);
	free(pipeline);
	free(row);
	return rc;
}

static int ended(cli_write_run *w, int rc, int ok);

int cli_write_run_end(cli_write_run *w, int ok, const char *message)
{
	int rc;

	if (w->run == NULL)
		return 0;
	if (w->joined) {
		if (faucet_run_keys(w->run)->count > 0 && !w->quiet)
			fprintf(stderr, "faucet: recorded in run %s\n", faucet_run_id(w->run));
		return 0;
	}
	rc = faucet_run_end(w->run, ok ? FAUCET_RUN_OK : FAUCET_RUN_FAILED, ok ? 0 : -1, message);
	return ended(w, rc, ok);
}

int cli_write_run_put_end(cli_write_run *w, faucet_store *s, const char *key,
			  const faucet_value *value, int *put_done)
{
	int rc;

	*put_done = 0;
	if (w->run == NULL || w->joined) {
		rc = w->run ? faucet_run_put(w->run, key, value) : faucet_store_put(s, key, value);
		*put_done = rc == 0;
		return rc == 0 ? cli_write_run_end(w, 1, NULL) : CLI_EXIT_FAILED;
	}
	rc = faucet_run_put_end(w->run, key, value, put_done);
	if (!*put_done)
		return CLI_EXIT_FAILED;
	return ended(w, rc, 1);
}

/* After faucet_run_end returned rc: the failure reported, or the undo
 * command made and announced. */
static int ended(cli_write_run *w, int rc, int ok)
{
	const char *row;

	if (rc != 0 && w->defer_error)
		return CLI_EXIT_FAILED;
	if (rc != 0)
		return cli_fail(CLI_EXIT_FAILED, "recording run %s", faucet_run_id(w->run));
	w->ended = 1;
	if (!ok || faucet_run_changed(w->run) == 0)
		return 0; /* nothing changed: nothing to undo (a failure's error says why) */
	row = faucet_run_row(w->run);
	w->undo = row ? faucet__sprintf("faucet state undo %s --row %s %s", w->pipeline, row,
					faucet_run_id(w->run))
		      : faucet__sprintf("faucet state undo %s %s", w->pipeline, faucet_run_id(w->run));
	if (w->undo == NULL)
		return cli_fail(CLI_EXIT_FAILED, "recording run %s", faucet_run_id(w->run));
	if (!w->quiet)
		fprintf(stderr, "faucet: run %s; undo: %s\n", faucet_run_id(w->run), w->undo);
	return 0;
}

/* The run a write was recorded in: none when it changed nothing. */
static const char *recorded_run(const cli_write_run *w)
{
	if (w->run == NULL)
		return NULL;
	if (w->joined)
		return faucet_run_keys(w->run)->count > 0 ? faucet_run_id(w->run) : NULL;
	return !w->ended || faucet_run_changed(w->run) > 0 ? faucet_run_id(w->run) : NULL;
}

void cli_write_run_json(const cli_write_run *w, faucet_buf *b)
{
	cli_jw_member(b, "run", 0);
	faucet__json_string(b, w != NULL ? recorded_run(w) : NULL);
	cli_jw_member(b, "undo", 0);
	faucet__json_string(b, w != NULL ? w->undo : NULL);
}

void cli_write_run_dispose(cli_write_run *w)
{
	faucet_run_free(w->run);
	free(w->pipeline);
	free(w->undo);
	memset(w, 0, sizeof(*w));
}
