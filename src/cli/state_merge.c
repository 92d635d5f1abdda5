/*
 * state_merge.c - `faucet state merge KEY JSON|-`: an RFC 7396 JSON Merge
 * Patch into the stored value (doc/design.md §2.7).
 *
 * The merge reads the value, patches it with faucet_value_merge_patch() and
 * writes the result with compare-and-put against what it read.  When another
 * writer changed the value in between, the compare fails and the merge
 * starts again from the new value, at most MERGE_ATTEMPTS times; so eight
 * processes merging different members of one value at once all keep their
 * members.  Each attempt is its own run (doc/design.md §8.7): a run's
 * before-image is read when it first touches the key, and an attempt that
 * reused the run of a lost race would keep the older before-image, so that
 * its undo would take back the other writer's change too.
 *
 * Like `state put`, the merge joins FAUCET_RUN_ID's run and otherwise takes
 * no lease: the compare-and-put is what makes it safe beside other writers.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "jsonw.h"

#define MERGE_ATTEMPTS 8

typedef struct {
	const char *key;
	const char *patch_arg;
	const char *if_equals;
	int dry_run;
} merge_args;

static int parse_merge_args(cli_context *ctx, int argc, char **argv, merge_args *ma)
{
	enum { OPT_IF_EQUALS = 1, OPT_DRY_RUN };
	static const cli_option opts[] = {
		{"if-equals", 0, 1, OPT_IF_EQUALS},
		{"dry-run", 'n', 0, OPT_DRY_RUN},
		{NULL, 0, 0, 0},
	};
	const char *arg;
	cli_args it;
	int id;

	memset(ma, 0, sizeof(*ma));
	cli_args_init(&it, ctx, "state merge", argc, argv);
	while ((id = cli_args_next(&it, opts, &arg)) != CLI_ARG_END) {
		if (id == CLI_ARG_ERROR)
			return CLI_EXIT_USAGE;
		if (id == CLI_ARG_HELP)
			return cli_print_command_help("state merge");
		if (id == OPT_IF_EQUALS)
			ma->if_equals = arg;
		else if (id == OPT_DRY_RUN)
			ma->dry_run = 1;
		else if (ma->key == NULL)
			ma->key = arg;
		else if (ma->patch_arg == NULL)
			ma->patch_arg = arg;
		else
			return cli_usage_error("state merge", "unexpected argument '%s'", arg);
	}
	if (ma->key == NULL || ma->patch_arg == NULL)
		return cli_usage_error("state merge",
				       "needs KEY and a JSON merge patch (or - for stdin)");
	return -1;
}

static int read_patch(const merge_args *ma, faucet_value **out)
{
	char *text = NULL;
	size_t len;
	int rc;

	if (strcmp(ma->patch_arg, "-") != 0) {
		if (faucet_value_parse_at(out, ma->patch_arg, strlen(ma->patch_arg), "patch") != 0)
			return cli_fail(CLI_EXIT_USAGE, "state merge '%s'", ma->key);
		return 0;
	}
	if (cli_read_input("-", &text, &len) != 0)
		return cli_fail(CLI_EXIT_USAGE, "state merge '%s'", ma->key);
	rc = faucet_value_parse_at(out, text, len, "patch on standard input");
	free(text);
	if (rc != 0)
		return cli_fail(CLI_EXIT_USAGE, "state merge '%s'", ma->key);
	return 0;
}

/* What kind of JSON value a compact text is, for messages. */
static const char *kind_of(const faucet_value *v)
{
	switch (faucet_value_json(v)[0]) {
	case '{': return "an object";
	case '[': return "an array";
	case '"': return "a string";
	case 't': case 'f': return "a boolean";
	case 'n': return "null";
	default: return "a number";
	}
}

static int print_merge_json(const merge_args *ma, int written, int attempts,
			    const faucet_value *previous, const faucet_value *value,
			    const cli_write_run *w)
{
	faucet_buf b = FAUCET_BUF_INIT;

	(void)faucet__buf_putc(&b, '{');
	cli_jw_member(&b, "key", 1);
	faucet__json_string(&b, ma->key);
	cli_jw_member(&b, "written", 0);
	(void)faucet__buf_puts(&b, written ? "true" : "false");
	cli_jw_member(&b, "dry_run", 0);
	(void)faucet__buf_puts(&b, ma->dry_run ? "true" : "false");
	cli_jw_member(&b, "attempts", 0);
	(void)faucet__buf_printf(&b, "%d", attempts);
	cli_jw_member(&b, "previous", 0);
	(void)faucet__buf_puts(&b, previous ? faucet_value_json(previous) : "null");
	cli_jw_member(&b, "value", 0);
	(void)faucet__buf_puts(&b, value ? faucet_value_json(value) : "null");
	cli_write_run_json(w, &b);
	(void)faucet__buf_putc(&b, '}');
	return cli_jw_print(&b) == 0 ? 0 : CLI_EXIT_FAILED;
}

/* --if-equals did not hold: exit 3, saying what was found. */
static int condition_failed(const merge_args *ma, const faucet_value *found)
{
	const char *text = found ? faucet_value_json(found) : NULL;

	if (text == NULL)
		return cli_error(CLI_EXIT_CONDITION,
				 "state merge '%s': not written: the stored value does not equal "
				 "--if-equals; found: absent",
				 ma->key);
	if (faucet_value_len(found) > 512)
		return cli_error(CLI_EXIT_CONDITION,
				 "state merge '%s': not written: the stored value does not equal "
				 "--if-equals; found: %.512s... (%zu bytes)",
				 ma->key, text, faucet_value_len(found));
	return cli_error(CLI_EXIT_CONDITION,
			 "state merge '%s': not written: the stored value does not equal "
			 "--if-equals; found: %s",
			 ma->key, text);
}

/* One attempt: write `merged` over `current` in a run of its own.  *written
 * says whether the compare-and-put held.  On success with written set, the
 * run is left in *w, ended; otherwise *w is disposed. */
static int merge_attempt(cli_context *ctx, faucet_store *s, const merge_args *ma,
			 const faucet_value *current, const faucet_value *merged, int last,
			 cli_write_run *w, int *written)
{
	const char *keys[] = {ma->key};
	int rc;

	*written = 0;
	rc = cli_write_run_begin(ctx, s, "faucet state merge", keys, 1, CLI_RUN_MAY_JOIN, w);
	if (rc != 0)
		return rc;
	if (faucet_run_compare_and_put(w->run, ma->key, current, merged, written) != 0) {
		rc = cli_fail(CLI_EXIT_FAILED, "cannot write '%s' to %s", ma->key, ctx->store_label);
		if (!w->joined) {
			char *msg = faucet__strdup(faucet_error_last()->message);
			(void)faucet_run_end(w->run, FAUCET_RUN_FAILED, -1, msg);
			free(msg);
		}
		cli_write_run_dispose(w);
		return rc;
	}
	if (*written)
		return cli_write_run_end(w, 1, NULL);
	/* Lost the race: this attempt changed nothing. */
	if (!w->joined)
		rc = faucet_run_end(w->run, FAUCET_RUN_FAILED, -1,
				    last ? "the value changed while merging; gave up"
					 : "the value changed while merging; merged again");
	if (rc != 0)
		rc = cli_fail(CLI_EXIT_FAILED, "recording run %s", faucet_run_id(w->run));
	cli_write_run_dispose(w);
	return rc;
}

/* A merge's values, its store and the run that wrote, every piece freed by
 * merge_dispose. */
typedef struct {
	faucet_value *patch, *expected, *current, *merged;
	faucet_store *s;
	cli_write_run w;
	int attempt, written;
} merge_job;

static void merge_dispose(merge_job *j)
{
	cli_write_run_dispose(&j->w);
	faucet_store_free(j->s);
	faucet_value_free(j->patch);
	faucet_value_free(j->expected);
	faucet_value_free(j->current);
	faucet_value_free(j->merged);
}

static int check_merge_key(const merge_args *ma)
{
	if (faucet_validate_key(ma->key) != 0)
		return cli_fail(CLI_EXIT_USAGE, "state merge");
	if (faucet_run_is_bookkeeping_key(ma->key))
		return cli_error(CLI_EXIT_USAGE,
				 "state merge: '%s' is run bookkeeping (__lease__, __status__, "
				 "__rollback__), written only by faucet's runs; nothing written",
				 ma->key);
	return 0;
}

/* The patch and --if-equals, parsed before the store is opened. */
static int read_inputs(const merge_args *ma, merge_job *j)
{
	int rc = read_patch(ma, &j->patch);

	if (rc != 0)
		return rc;
	if (ma->if_equals != NULL &&
	    faucet_value_parse_at(&j->expected, ma->if_equals, strlen(ma->if_equals),
				  "--if-equals") != 0)
		return cli_fail(CLI_EXIT_USAGE, "state merge '%s'", ma->key);
	return 0;
}

static int open_merge_store(cli_context *ctx, const merge_args *ma, faucet_store **s)
{
	int rc = ma->dry_run ? cli_open_store_existing(ctx, s) : cli_open_store(ctx, s);

	if (rc != 0)
		return rc;
	if (!faucet_store_supports_compare_and_put(*s))
		return cli_error(CLI_EXIT_FAILED,
				 "state merge '%s': %s has no atomic compare-and-put, which a merge "
				 "beside other writers needs; nothing written",
				 ma->key, ctx->store_label);
	return 0;
}

/* Attempt j->attempt: read the value, check it, patch it and write it
 * over what was read.  *settled when there is nothing to write (a dry run,
 * or the patch changes nothing), which is reported here. */
static int merge_once(cli_context *ctx, const merge_args *ma, merge_job *j, int *settled)
{
	*settled = 0;
	faucet_value_free(j->current);
	faucet_value_free(j->merged);
	j->current = j->merged = NULL;
	if (faucet_store_get(j->s, ma->key, &j->current) != 0)
		return cli_fail(CLI_EXIT_FAILED, "cannot read '%s' from %s", ma->key,
				ctx->store_label);
	if (j->expected != NULL && !faucet_value_equal(j->current, j->expected))
		return condition_failed(ma, j->current);
	if (j->current != NULL && faucet_value_json(j->patch)[0] == '{' &&
	    faucet_value_json(j->current)[0] != '{')
		return cli_error(CLI_EXIT_USAGE,
				 "state merge '%s': the stored value is %s, not an object; "
				 "merging an object patch would replace it by {} (RFC 7396); "
				 "nothing written (use `state put` to replace it)",
				 ma->key, kind_of(j->current));
	if (faucet_value_merge_patch(j->current, j->patch, &j->merged) != 0)
		return cli_fail(CLI_EXIT_FAILED, "state merge '%s'", ma->key);
	if (ma->dry_run || (j->current != NULL && faucet_value_equal(j->current, j->merged))) {
		/* Nothing to write: a dry run, or the patch changes nothing. */
		*settled = 1;
		if (ctx->json)
			return print_merge_json(ma, 0, j->attempt, j->current, j->merged, NULL);
		if (ma->dry_run)
			printf("%s\n", faucet_value_json(j->merged));
		return 0;
	}
	return merge_attempt(ctx, j->s, ma, j->current, j->merged, j->attempt == MERGE_ATTEMPTS,
			     &j->w, &j->written);
}

/* Up to MERGE_ATTEMPTS attempts, each starting again from the value a
 * lost race left; then the report. */
static int merge_with_retries(cli_context *ctx, const merge_args *ma, merge_job *j)
{
	int rc, settled;

	for (j->attempt = 1; j->attempt <= MERGE_ATTEMPTS; j->attempt++) {
		if ((rc = merge_once(ctx, ma, j, &settled)) != 0 || settled)
			return rc;
		if (j->written)
			break;
	}
	if (!j->written)
		return cli_error(CLI_EXIT_FAILED,
				 "state merge '%s': the value changed under the merge %d times in "
				 "a row (other writers); nothing written, try again",
				 ma->key, MERGE_ATTEMPTS);
	if (ctx->json)
		return print_merge_json(ma, 1, j->attempt, j->current, j->merged, &j->w);
	return 0;
}

int cli_state_merge(cli_context *ctx, int argc, char **argv)
{
	merge_args ma;
	merge_job j;
	int rc;

	rc = parse_merge_args(ctx, argc, argv, &ma);
	if (rc >= 0)
		return rc;
	if ((rc = check_merge_key(&ma)) != 0)
		return rc;
	memset(&j, 0, sizeof(j));
	if ((rc = read_inputs(&ma, &j)) == 0 && (rc = open_merge_store(ctx, &ma, &j.s)) == 0)
		rc = merge_with_retries(ctx, &ma, &j);
	merge_dispose(&j);
	return rc;
}
