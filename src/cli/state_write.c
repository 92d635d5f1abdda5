/*
 * state_write.c - `faucet state put` and `faucet state delete`.
 *
 * Everything the user typed is checked before the store is opened: the key,
 * the value's JSON, the condition's JSON.  A typo therefore exits 2 with the
 * store untouched.  A conditional put goes through the library's
 * compare-and-put; when the condition does not hold nothing is written and
 * the exit code is 3, so a script can tell "someone else moved the
 * bookmark" from a failure.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "jsonw.h"

/* Run bookkeeping (doc/design.md §8.9) is written by the run machinery only: a
 * put or delete of one would leave a document no run can read (every later
 * write of its row failing) or drop a run's history.  Refused with exit 2
 * before the store is opened. */
static int refuse_bookkeeping(const char *command, const char *key)
{
	if (!faucet_run_is_bookkeeping_key(key))
		return 0;
	return cli_error(CLI_EXIT_USAGE,
			 "%s: '%s' is run bookkeeping (__lease__, __status__, __rollback__), "
			 "written only by faucet's runs; nothing written (`faucet lock break` "
			 "removes a stuck lease, `faucet doctor --repair` sets a broken "
			 "document aside)",
			 command, key);
}

typedef struct {
	const char *key;
	const char *value_arg;
	int if_absent;
	const char *if_equals;
} put_args;

static int parse_put_args(cli_context *ctx, int argc, char **argv, put_args *pa)
{
	enum { OPT_IF_ABSENT = 1, OPT_IF_EQUALS };
	static const cli_option opts[] = {
		{"if-absent", 0, 0, OPT_IF_ABSENT},
		{"if-equals", 0, 1, OPT_IF_EQUALS},
		{NULL, 0, 0, 0},
	};
	const char *arg;
	cli_args it;
	int id;

	memset(pa, 0, sizeof(*pa));
	cli_args_init(&it, ctx, "state put", argc, argv);
	while ((id = cli_args_next(&it, opts, &arg)) != CLI_ARG_END) {
		if (id == CLI_ARG_ERROR)
			return CLI_EXIT_USAGE;
		if (id == CLI_ARG_HELP)
			return cli_print_command_help("state put");
		if (id == OPT_IF_ABSENT)
			pa->if_absent = 1;
		else if (id == OPT_IF_EQUALS)
			pa->if_equals = arg;
		else if (pa->key == NULL)
			pa->key = arg;
		else if (pa->value_arg == NULL)
			pa->value_arg = arg;
		else
			return cli_usage_error("state put", "unexpected argument '%s'", arg);
	}
	if (pa->key == NULL || pa->value_arg == NULL)
		return cli_usage_error("state put", "needs KEY and a JSON value (or - for stdin)");
	if (pa->if_absent && pa->if_equals != NULL)
		return cli_usage_error("state put", "--if-absent and --if-equals exclude each other");
	return -1;
}

/* The value to write: the argument itself, or standard input for "-". */
static int read_value(const put_args *pa, faucet_value **out)
{
	char *text = NULL;
	size_t len;
	int rc;

	if (strcmp(pa->value_arg, "-") != 0) {
		if (faucet_value_parse_at(out, pa->value_arg, strlen(pa->value_arg), "value") != 0)
			return cli_fail(CLI_EXIT_USAGE, "state put '%s'", pa->key);
		return 0;
	}
	if (cli_read_input("-", &text, &len) != 0)
		return cli_fail(CLI_EXIT_USAGE, "state put '%s'", pa->key);
	rc = faucet_value_parse_at(out, text, len, "value on standard input");
	free(text);
	if (rc != 0)
		return cli_fail(CLI_EXIT_USAGE, "state put '%s'", pa->key);
	return 0;
}

static int print_put_json(const char *key, int written, int conditional, int atomic,
			  const cli_write_run *w)
{
	faucet_buf b = FAUCET_BUF_INIT;

	(void)faucet__buf_putc(&b, '{');
	cli_jw_member(&b, "key", 1);
	faucet__json_string(&b, key);
	cli_jw_member(&b, "written", 0);
	(void)faucet__buf_puts(&b, written ? "true" : "false");
	if (conditional) {
		cli_jw_member(&b, "atomic", 0);
		(void)faucet__buf_puts(&b, atomic ? "true" : "false");
	}
	cli_write_run_json(w, &b);
	(void)faucet__buf_putc(&b, '}');
	return cli_jw_print(&b);
}

/* The longest found value the stderr line shows in full; --json always
 * carries all of it. */
#define FOUND_SHOWN_MAX 512

/*
 * A condition that did not hold: say what was found instead, so the
 * caller can tell "someone else moved the bookmark to X" from "the key is
 * gone" without a second command.  The value is read after the failed
 * compare-and-put, so it is what the store held a moment later, which is
 * what a retry would compare against.  With --json the one object on
 * stdout is the put report with "found" and "error" added.
 */
static int condition_failed(cli_context *ctx, faucet_store *s, const put_args *pa, int atomic,
			    const cli_write_run *w)
{
	const char *why = pa->if_absent ? "the key already has a value (--if-absent)"
					: "the stored value does not equal --if-equals";
	faucet_value *found = NULL;
	const char *text;
	char *msg;
	int rc;

	if (faucet_store_get(s, pa->key, &found) != 0)
		return cli_fail(CLI_EXIT_FAILED,
				"state put '%s': not written: %s; reading the value found",
				pa->key, why);
	text = found ? faucet_value_json(found) : NULL;
	if (text == NULL)
		msg = faucet__sprintf("state put '%s': not written: %s; found: absent", pa->key, why);
	else if (faucet_value_len(found) <= FOUND_SHOWN_MAX)
		msg = faucet__sprintf("state put '%s': not written: %s; found: %s", pa->key, why,
				  text);
	else
		msg = faucet__sprintf("state put '%s': not written: %s; found: %.*s... (%zu bytes)",
				  pa->key, why, FOUND_SHOWN_MAX, text, faucet_value_len(found));
	if (msg == NULL) {
		faucet_value_free(found);
		return cli_error(CLI_EXIT_FAILED, "out of memory");
	}
	if (ctx->json) {
		faucet_buf b = FAUCET_BUF_INIT;

		(void)faucet__buf_putc(&b, '{');
		cli_jw_member(&b, "key", 1);
		faucet__json_string(&b, pa->key);
		cli_jw_member(&b, "written", 0);
		(void)faucet__buf_puts(&b, "false");
		cli_jw_member(&b, "atomic", 0);
		(void)faucet__buf_puts(&b, atomic ? "true" : "false");
		cli_jw_member(&b, "found", 0);
		(void)faucet__buf_puts(&b, text ? text : "null");
		cli_write_run_json(w, &b);
		cli_jw_member(&b, "error", 0);
		cli_json_error_object(&b, faucet_error_name(FAUCET_ERROR), msg, CLI_EXIT_CONDITION);
		(void)faucet__buf_putc(&b, '}');
		if (cli_jw_print(&b) != 0) {
			free(msg);
			faucet_value_free(found);
			return CLI_EXIT_FAILED;
		}
	}
	rc = cli_error(CLI_EXIT_CONDITION, "%s", msg);
	free(msg);
	faucet_value_free(found);
	return rc;
}

int cli_state_put(cli_context *ctx, int argc, char **argv)
{
	faucet_value *value = NULL, *expected = NULL;
	int conditional, written = 0, rc;
	faucet_store *s = NULL;
	cli_write_run w = {0};
	put_args pa;

	rc = parse_put_args(ctx, argc, argv, &pa);
	if (rc >= 0)
		return rc;
	if (faucet_validate_key(pa.key) != 0)
		return cli_fail(CLI_EXIT_USAGE, "state put");
	if (refuse_bookkeeping("state put", pa.key) != 0)
		return CLI_EXIT_USAGE;
	rc = read_value(&pa, &value);
	if (rc != 0)
		return rc;
	if (pa.if_equals != NULL &&
	    faucet_value_parse_at(&expected, pa.if_equals, strlen(pa.if_equals), "--if-equals") != 0) {
		faucet_value_free(value);
		return cli_fail(CLI_EXIT_USAGE, "state put '%s'", pa.key);
	}
	conditional = pa.if_absent || pa.if_equals != NULL;
	rc = cli_open_store(ctx, &s);
	if (rc != 0)
		goto done;
	{
		const char *keys[] = {pa.key};
		rc = cli_write_run_begin(ctx, s, "faucet state put", keys, 1, CLI_RUN_MAY_JOIN, &w);
		if (rc != 0)
			goto done;
	}
	if (conditional) {
		if ((w.run ? faucet_run_compare_and_put(w.run, pa.key, expected, value, &written)
			   : faucet_store_compare_and_put(s, pa.key, expected, value, &written)) != 0) {
			rc = cli_fail(CLI_EXIT_FAILED, "cannot write '%s' to %s", pa.key,
				      ctx->store_label);
			goto done;
		}
		rc = cli_write_run_end(&w, written, written ? NULL : "the condition did not hold");
	} else {
		/* The put and the run's end: one durable write on the file store. */
		rc = cli_write_run_put_end(&w, s, pa.key, value, &written);
		if (!written) {
			rc = cli_fail(CLI_EXIT_FAILED, "cannot write '%s' to %s", pa.key,
				      ctx->store_label);
			goto done;
		}
	}
	if (rc != 0)
		goto done;
	if (!written)
		rc = condition_failed(ctx, s, &pa, faucet_store_supports_compare_and_put(s), &w);
	else if (ctx->json &&
		 print_put_json(pa.key, written, conditional,
				faucet_store_supports_compare_and_put(s), &w) != 0)
		rc = CLI_EXIT_FAILED;
done:
	if (rc != 0 && w.run != NULL && !w.joined && !w.ended) {
		/* The write failed: the run ends failed, so it does not stay
		 * "running" in the history. */
		char *msg = faucet__strdup(faucet_error_last()->message);
		(void)faucet_run_end(w.run, FAUCET_RUN_FAILED, -1, msg);
		free(msg);
	}
	cli_write_run_dispose(&w);
	faucet_store_free(s);
	faucet_value_free(value);
	faucet_value_free(expected);
	return rc;
}

int cli_state_delete(cli_context *ctx, int argc, char **argv)
{
	const char *key = NULL, *arg;
	cli_write_run w = {0};
	faucet_store *s;
	cli_args it;
	int id, rc;

	cli_args_init(&it, ctx, "state delete", argc, argv);
	while ((id = cli_args_next(&it, NULL, &arg)) != CLI_ARG_END) {
		if (id == CLI_ARG_ERROR)
			return CLI_EXIT_USAGE;
		if (id == CLI_ARG_HELP)
			return cli_print_command_help("state delete");
		if (key != NULL)
			return cli_usage_error("state delete", "unexpected argument '%s'", arg);
		key = arg;
	}
	if (key == NULL)
		return cli_usage_error("state delete", "missing KEY");
	if (faucet_validate_key(key) != 0)
		return cli_fail(CLI_EXIT_USAGE, "state delete");
	if (refuse_bookkeeping("state delete", key) != 0)
		return CLI_EXIT_USAGE;
	rc = cli_open_store(ctx, &s);
	if (rc != 0)
		return rc;
	rc = cli_write_run_begin(ctx, s, "faucet state delete", &key, 1, CLI_RUN_MAY_JOIN, &w);
	faucet_warning_clear();
	if (rc == 0 && (w.run ? faucet_run_delete(w.run, key) : faucet_store_delete(s, key)) != 0) {
		rc = cli_fail(CLI_EXIT_FAILED, "cannot delete '%s' from %s", key, ctx->store_label);
		if (w.run != NULL && !w.joined)
			(void)faucet_run_end(w.run, FAUCET_RUN_FAILED, -1, "the delete failed");
	} else if (rc == 0) {
		if (faucet_warning_last() != NULL) /* e.g. a lock file left behind */
			(void)cli_error(0, "warning: state delete '%s': %s", key,
					faucet_warning_last());
		rc = cli_write_run_end(&w, 1, NULL);
	}
	faucet_store_free(s);
	if (rc == 0 && ctx->json) {
		faucet_buf b = FAUCET_BUF_INIT;

		(void)faucet__buf_putc(&b, '{');
		cli_jw_member(&b, "key", 1);
		faucet__json_string(&b, key);
		cli_jw_member(&b, "deleted", 0);
		/* A delete of an absent key deleted nothing (and recorded no run). */
		(void)faucet__buf_puts(&b, w.run == NULL ? "true"
				       : (w.joined ? faucet_run_keys(w.run)->count
						   : faucet_run_changed(w.run)) > 0 ? "true" : "false");
		cli_write_run_json(&w, &b);
		(void)faucet__buf_putc(&b, '}');
		if (cli_jw_print(&b) != 0)
			rc = CLI_EXIT_FAILED;
	}
	cli_write_run_dispose(&w);
	return rc;
}
