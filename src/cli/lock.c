/*
 * lock.c - `faucet lock list` and `faucet lock break`: the leases of runs
 * ({p}::{r}::__lease__) and of backfill units ({unit key}::__lease__).
 *
 * Breaking a lease is a compare-and-delete against the lease just read, so
 * a lease renewed or taken over between the read and the delete is left
 * alone (exit 3) - the operator never removes a claim they did not see.
 * The run whose lease is broken finds out at its next write (fencing).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"
#include "cli.h"
#include "jsonw.h"

static const char lock_help[] =
	"usage: faucet lock list [PIPELINE] [OPTIONS]\n"
	"       faucet lock break KEY [--if-holder H] [OPTIONS]\n"
	"\n"
	"  list    every lease (of runs and backfill units): key, holder, expiry,\n"
	"          live, expired or dead (its holder, a process of this host, is\n"
	"          gone: the next run takes it over), and the run holding it\n"
	"  break   remove the lease KEY (a ...::__lease__ key) with compare-and-delete;\n"
	"          with --if-holder only when H holds it.  Exit 3 when the lease is\n"
	"          held by someone else than H or changed meanwhile.\n";

static const char *lease_tail = "::__lease__";

static int is_lease_key(const char *key)
{
	size_t n = strlen(key), t = strlen(lease_tail);

	return n > t && strcmp(key + n - t, lease_tail) == 0;
}

static int lock_list(cli_context *ctx, int argc, char **argv)
{
	const char *pipeline = NULL, *arg;
	faucet_strarray keys = {0};
	cli_buf b = CLI_BUF_INIT;
	faucet_store *s = NULL;
	char *prefix = NULL;
	cli_args it;
	int id, rc, n = 0;
	int64_t now = (int64_t)time(NULL);

	cli_args_init(&it, ctx, "lock list", argc, argv);
	while ((id = cli_args_next(&it, NULL, &arg)) != CLI_ARG_END) {
		if (id == CLI_ARG_ERROR)
			return CLI_EXIT_USAGE;
		if (id == CLI_ARG_HELP)
			return cli_print_help(lock_help);
		if (pipeline != NULL)
			return cli_usage_error("lock list", "unexpected argument '%s'", arg);
		pipeline = arg;
	}
	if (pipeline != NULL && (faucet_validate_key(pipeline) != 0 || strstr(pipeline, "::")))
		return cli_usage_error("lock list", "invalid pipeline name '%s'", pipeline);
	prefix = pipeline ? cli_sprintf("%s::", pipeline) : cli_strdup("");
	if (prefix == NULL)
		return cli_fail(CLI_EXIT_FAILED, "lock list");
	if ((rc = cli_open_store_existing(ctx, &s)) != 0) {
		free(prefix);
		return rc;
	}
	if (faucet_store_list(s, prefix, &keys) != 0) {
		rc = cli_fail(CLI_EXIT_FAILED, "cannot list the keys of %s", ctx->store_label);
		goto done;
	}
	(void)cli_buf_putc(&b, '[');
	for (size_t i = 0; i < keys.count; i++) {
		faucet_value *v = NULL;
		faucet_lease l;
		char until[64];
		const char *state;

		if (!is_lease_key(keys.strings[i]))
			continue;
		if (faucet_store_get(s, keys.strings[i], &v) != 0) {
			rc = cli_fail(CLI_EXIT_FAILED, "reading %s", keys.strings[i]);
			goto done;
		}
		if (v == NULL)
			continue; /* released meanwhile */
		if (faucet_lease_parse(v, keys.strings[i], &l) != 0) {
			fprintf(stderr, "faucet: warning: %s\n", faucet_error_last()->message);
			faucet_value_free(v);
			continue;
		}
		faucet_value_free(v);
		(void)faucet_utc_text(l.expires_at, until, sizeof(until));
		/* A holder process gone from this host holds nothing. */
		state = faucet_lease_holder_dead(&l) ? "dead"
			: l.expires_at > now         ? "live"
						     : "expired";
		if (ctx->json) {
			if (n > 0)
				(void)cli_buf_putc(&b, ',');
			(void)cli_buf_putc(&b, '{');
			jw_member(&b, "key", 1);
			jw_string(&b, keys.strings[i]);
			jw_member(&b, "holder", 0);
			jw_string(&b, l.holder);
			jw_member(&b, "run", 0);
			jw_string_or_null(&b, l.run);
			jw_member(&b, "expires_at", 0);
			(void)cli_buf_printf(&b, "%lld", (long long)l.expires_at);
			jw_member(&b, "expires", 0);
			jw_string(&b, until);
			jw_member(&b, "state", 0);
			jw_string(&b, state);
			(void)cli_buf_putc(&b, '}');
		} else {
			printf("%s\t%s\t%s\t%s\t%s\n", keys.strings[i], l.holder, until, state,
			       l.run ? l.run : "-");
		}
		n++;
		faucet_lease_dispose(&l);
	}
	(void)cli_buf_putc(&b, ']');
	rc = ctx->json ? (jw_print(&b) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILED) : CLI_EXIT_OK;
done:
	cli_buf_dispose(&b);
	faucet_strarray_dispose(&keys);
	faucet_store_free(s);
	free(prefix);
	return rc;
}

static int lock_break(cli_context *ctx, int argc, char **argv)
{
	enum { O_IF_HOLDER = 1 };
	static const cli_option opts[] = {{"if-holder", 0, 1, O_IF_HOLDER}, {NULL, 0, 0, 0}};
	const char *key = NULL, *if_holder = NULL, *arg;
	faucet_store *s = NULL;
	faucet_value *v = NULL;
	faucet_lease l;
	cli_args it;
	int id, rc, deleted = 0;

	cli_args_init(&it, ctx, "lock break", argc, argv);
	while ((id = cli_args_next(&it, opts, &arg)) != CLI_ARG_END) {
		if (id == CLI_ARG_ERROR)
			return CLI_EXIT_USAGE;
		if (id == CLI_ARG_HELP)
			return cli_print_help(lock_help);
		if (id == O_IF_HOLDER) {
			if_holder = arg;
			continue;
		}
		if (key != NULL)
			return cli_usage_error("lock break", "unexpected argument '%s'", arg);
		key = arg;
	}
	if (key == NULL)
		return cli_usage_error("lock break", "which lease? give its key (...::__lease__)");
	if (faucet_validate_key(key) != 0)
		return cli_fail(CLI_EXIT_USAGE, "lock break");
	if (!is_lease_key(key))
		return cli_usage_error("lock break", "'%s' is not a lease key (it must end in "
				       "::__lease__)", key);
	if ((rc = cli_open_store_existing(ctx, &s)) != 0)
		return rc;
	memset(&l, 0, sizeof(l));
	if (faucet_store_get(s, key, &v) != 0) {
		rc = cli_fail(CLI_EXIT_FAILED, "reading %s", key);
		goto done;
	}
	if (v == NULL) {
		fprintf(stderr, "faucet: no lease at %s\n", key);
		rc = if_holder ? CLI_EXIT_CONDITION : CLI_EXIT_OK;
		goto done;
	}
	if (faucet_lease_parse(v, key, &l) != 0) {
		rc = cli_fail(CLI_EXIT_FAILED, "lock break");
		goto done;
	}
	if (if_holder != NULL && strcmp(l.holder, if_holder) != 0) {
		rc = cli_error(CLI_EXIT_CONDITION, "%s is held by %s, not %s; left alone", key,
			       l.holder, if_holder);
		goto done;
	}
	if (faucet_store_compare_and_delete(s, key, v, &deleted) != 0) {
		rc = cli_fail(CLI_EXIT_FAILED, "breaking %s", key);
		goto done;
	}
	if (!deleted) {
		rc = cli_error(CLI_EXIT_CONDITION, "%s changed while it was being broken; left alone",
			       key);
		goto done;
	}
	fprintf(stderr, "faucet: broke %s (held by %s%s%s)\n", key, l.holder,
		l.run ? ", run " : "", l.run ? l.run : "");
	if (ctx->json) {
		cli_buf b = CLI_BUF_INIT;

		(void)cli_buf_putc(&b, '{');
		jw_member(&b, "key", 1);
		jw_string(&b, key);
		jw_member(&b, "holder", 0);
		jw_string(&b, l.holder);
		jw_member(&b, "run", 0);
		jw_string_or_null(&b, l.run);
		(void)cli_buf_putc(&b, '}');
		(void)jw_print(&b);
	}
	rc = CLI_EXIT_OK;
done:
	faucet_lease_dispose(&l);
	faucet_value_free(v);
	faucet_store_free(s);
	return rc;
}

int cli_lock_main(cli_context *ctx, int argc, char **argv)
{
	const char *arg;
	cli_args it;
	int id;

	cli_args_init(&it, ctx, "lock", argc, argv);
	id = cli_args_next(&it, NULL, &arg);
	if (id == CLI_ARG_ERROR)
		return CLI_EXIT_USAGE;
	if (id == CLI_ARG_HELP)
		return cli_print_help(lock_help);
	if (id == CLI_ARG_END)
		return cli_usage_error("lock", "missing subcommand (list, break)");
	if (strcmp(arg, "list") == 0)
		return lock_list(ctx, argc - (it.next - 1), argv + (it.next - 1));
	if (strcmp(arg, "break") == 0)
		return lock_break(ctx, argc - (it.next - 1), argv + (it.next - 1));
	return cli_usage_error("lock", "unknown subcommand '%s'", arg);
}
