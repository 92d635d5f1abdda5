/*
 * state_move.c - moving a pipeline's state: `faucet state export`, `import`
 * and `copy`.
 *
 * export -o writes like the file store does: a temp file in the target's
 * own directory (so the rename cannot cross filesystems), fsync it, rename
 * it over the target, then fsync the directory so the rename itself
 * survives a crash.  A reader therefore sees the old document or the whole
 * new one, never a torn one.
 *
 * import reads and validates the whole document before the store is opened;
 * a partial import (a non-atomic store that failed midway) is reported key
 * by key, because the operator has to know exactly which keys landed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "jsonw.h"

static const char export_help[] =
	"usage: faucet state export PIPELINE [-o FILE] [OPTIONS]\n"
	"\n"
	"Print the version-1 export document of the pipeline: every key of its\n"
	"namespace (PIPELINE::) with its value.  -o FILE writes it atomically\n"
	"instead (temp file, fsync, rename; created owner-only, mode 0600).\n"
	"Note: the document holds plaintext values, even from an encrypted store.\n";

static const char import_help[] =
	"usage: faucet state import FILE|- [--replace] [OPTIONS]\n"
	"\n"
	"Write an export document (- reads it from standard input) into the store.\n"
	"  --replace   also delete the namespace's keys the document does not hold\n"
	"Prints the report: keys written, stale keys deleted, whether the write was\n"
	"one all-or-nothing batch, and the first error.  On a store without atomic\n"
	"batches a failure midway leaves the keys listed as landed written.\n"
	"Exit 2 when the document cannot be read or is invalid (nothing written),\n"
	"1 when the store failed.\n";

static const char copy_help[] =
	"usage: faucet state copy PIPELINE --to URL [--replace] [OPTIONS]\n"
	"\n"
	"Export the pipeline's namespace from the selected store and import it into\n"
	"the store at URL in one step (file:PATH, memory:, sqlite:PATH, postgres://,\n"
	"redis://).  --replace also deletes keys of the namespace the source lacks.\n"
	"The --to store is opened from its URL alone: it is not encrypted.\n";

/* ---- writing a file atomically ------------------------------------------ */

static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (slash == NULL)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

static int write_all(int fd, const char *data, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, data, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		data += n;
		len -= (size_t)n;
	}
	return 0;
}

static int write_file_atomically(const char *path, const char *data, size_t len)
{
	char *tmp = faucet__sprintf("%s.tmp.XXXXXX", path), *dir = NULL;
	int fd, dfd, err;

	if (tmp == NULL)
		return FAUCET_ENOMEM;
	fd = mkstemp(tmp);
	if (fd < 0) {
		err = errno;
		free(tmp);
		return faucet__error_os(FAUCET_EIO, err, "cannot create a temp file next to %s", path);
	}
	if (write_all(fd, data, len) != 0 || fsync(fd) != 0) {
		err = errno;
		close(fd);
		unlink(tmp);
		free(tmp);
		return faucet__error_os(FAUCET_EIO, err, "cannot write %s", path);
	}
	if (close(fd) != 0 || rename(tmp, path) != 0) {
		err = errno;
		unlink(tmp);
		free(tmp);
		return faucet__error_os(FAUCET_EIO, err, "cannot write %s", path);
	}
	free(tmp);
	/* The data is durable; now make the new directory entry durable. */
	dir = dir_of(path);
	if (dir == NULL)
		return faucet_error_set(FAUCET_ENOMEM, "out of memory");
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fsync(dfd) != 0) {
		err = errno;
		if (dfd >= 0)
			close(dfd);
		(void)faucet__error_os(FAUCET_EIO, err,
				       "wrote %s but could not sync its directory %s", path, dir);
		free(dir);
		return FAUCET_EIO;
	}
	close(dfd);
	free(dir);
	return 0;
}

/* ---- export -------------------------------------------------------------- */

static int set_exported_now(faucet_export *e)
{
	char when[40];
	time_t now = time(NULL);
	struct tm tm;

	if (gmtime_r(&now, &tm) == NULL ||
	    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S+00:00", &tm) == 0)
		return faucet_error_set(FAUCET_ERROR, "cannot read the clock");
	return faucet_export_set_exported_at(e, when);
}

static int export_pipeline(cli_context *ctx, faucet_store *s, const char *pipeline,
			   faucet_export **out)
{
	if (faucet_export_namespace(s, pipeline, out) != 0)
		return cli_fail(CLI_EXIT_FAILED, "cannot export pipeline '%s' from %s", pipeline,
				ctx->store_label);
	if (set_exported_now(*out) != 0) {
		faucet_export_free(*out);
		*out = NULL;
		return cli_fail(CLI_EXIT_FAILED, "export of '%s'", pipeline);
	}
	return 0;
}

int cli_state_export(cli_context *ctx, int argc, char **argv)
{
	enum { OPT_OUTPUT = 1 };
	static const cli_option opts[] = {{"output", 'o', 1, OPT_OUTPUT}, {NULL, 0, 0, 0}};
	const char *pipeline = NULL, *output = NULL, *arg;
	faucet_export *e = NULL;
	faucet_store *s;
	char *doc = NULL;
	cli_args it;
	int id, rc;

	cli_args_init(&it, ctx, "state export", argc, argv);
	while ((id = cli_args_next(&it, opts, &arg)) != CLI_ARG_END) {
		if (id == CLI_ARG_ERROR)
			return CLI_EXIT_USAGE;
		if (id == CLI_ARG_HELP)
			return cli_print_help(export_help);
		if (id == OPT_OUTPUT)
			output = arg;
		else if (pipeline == NULL)
			pipeline = arg;
		else
			return cli_usage_error("state export", "unexpected argument '%s'", arg);
	}
	if (pipeline == NULL)
		return cli_usage_error("state export", "missing PIPELINE");
	if (faucet_validate_key(pipeline) != 0)
		return cli_fail(CLI_EXIT_USAGE, "state export: bad pipeline name");
	rc = cli_open_store_existing(ctx, &s);
	if (rc != 0)
		return rc;
	rc = export_pipeline(ctx, s, pipeline, &e);
	faucet_store_free(s);
	if (rc != 0)
		return rc;
	if (faucet_export_to_json(e, 1, &doc) != 0) {
		rc = cli_fail(CLI_EXIT_FAILED, "cannot render the export of '%s'", pipeline);
	} else if (output == NULL) {
		fputs(doc, stdout);
		putchar('\n');
	} else if (write_file_atomically(output, doc, strlen(doc)) != 0) {
		rc = cli_fail(CLI_EXIT_FAILED, "export of '%s'", pipeline);
	} else if (ctx->json) {
		faucet_buf b = FAUCET_BUF_INIT;

		(void)faucet_buf_putc(&b, '{');
		jw_member(&b, "pipeline", 1);
		jw_string(&b, pipeline);
		jw_member(&b, "keys", 0);
		(void)faucet_buf_printf(&b, "%zu", faucet_export_count(e));
		jw_member(&b, "output", 0);
		jw_string(&b, output);
		(void)faucet_buf_putc(&b, '}');
		if (jw_print(&b) != 0)
			rc = CLI_EXIT_FAILED;
	} else {
		printf("exported %zu keys of pipeline '%s' to %s\n", faucet_export_count(e), pipeline,
		       output);
	}
	faucet_free(doc);
	faucet_export_free(e);
	return rc;
}

/* ---- the import report ------------------------------------------------- */

static int print_report(cli_context *ctx, const char *pipeline, const char *label,
			const faucet_import_report *r)
{
	if (ctx->json) {
		faucet_buf b = FAUCET_BUF_INIT;

		(void)faucet_buf_putc(&b, '{');
		jw_member(&b, "pipeline", 1);
		jw_string(&b, pipeline);
		jw_member(&b, "store", 0);
		jw_string(&b, label);
		jw_member(&b, "written", 0);
		jw_string_array(&b, &r->written);
		jw_member(&b, "deleted", 0);
		jw_string_array(&b, &r->deleted);
		jw_member(&b, "atomic", 0);
		(void)faucet_buf_puts(&b, r->atomic ? "true" : "false");
		jw_member(&b, "error", 0);
		jw_string_or_null(&b, r->error);
		(void)faucet_buf_putc(&b, '}');
		if (jw_print(&b) != 0)
			return CLI_EXIT_FAILED;
	} else {
		printf("pipeline '%s' into %s: %zu key%s written (%s), %zu stale key%s deleted\n",
		       pipeline, label, r->written.count, r->written.count == 1 ? "" : "s",
		       r->atomic ? "one all-or-nothing batch" : "one by one", r->deleted.count,
		       r->deleted.count == 1 ? "" : "s");
		for (size_t i = 0; i < r->deleted.count; i++)
			printf("deleted: %s\n", r->deleted.strings[i]);
		/* After a failure, say exactly which keys are in the store now. */
		for (size_t i = 0; r->error != NULL && i < r->written.count; i++)
			printf("written: %s\n", r->written.strings[i]);
	}
	if (r->error == NULL)
		return CLI_EXIT_OK;
	if (r->atomic && r->written.count == 0)
		return cli_error(CLI_EXIT_FAILED, "import into %s failed, nothing was written: %s",
				 label, r->error);
	return cli_error(CLI_EXIT_FAILED,
			 "import into %s stopped after %zu written and %zu deleted key(s) "
			 "(listed above): %s",
			 label, r->written.count, r->deleted.count, r->error);
}

static int import_into(cli_context *ctx, faucet_store *s, const char *label,
		       const faucet_export *e, int replace)
{
	faucet_import_report report;
	int rc;

	memset(&report, 0, sizeof(report));
	if (faucet_import_namespace(s, e, replace, &report) != 0) {
		faucet_import_report_dispose(&report);
		return cli_fail(CLI_EXIT_FAILED, "cannot import pipeline '%s' into %s",
				faucet_export_pipeline(e), label);
	}
	rc = print_report(ctx, faucet_export_pipeline(e), label, &report);
	faucet_import_report_dispose(&report);
	return rc;
}

/* ---- import ------------------------------------------------------------ */

int cli_state_import(cli_context *ctx, int argc, char **argv)
{
	enum { OPT_REPLACE = 1 };
	static const cli_option opts[] = {{"replace", 0, 0, OPT_REPLACE}, {NULL, 0, 0, 0}};
	const char *input = NULL, *arg, *name;
	faucet_export *e = NULL;
	faucet_store *s;
	int id, rc, replace = 0;
	char *text = NULL;
	size_t len = 0;
	cli_args it;

	cli_args_init(&it, ctx, "state import", argc, argv);
	while ((id = cli_args_next(&it, opts, &arg)) != CLI_ARG_END) {
		if (id == CLI_ARG_ERROR)
			return CLI_EXIT_USAGE;
		if (id == CLI_ARG_HELP)
			return cli_print_help(import_help);
		if (id == OPT_REPLACE)
			replace = 1;
		else if (input == NULL)
			input = arg;
		else
			return cli_usage_error("state import", "unexpected argument '%s'", arg);
	}
	if (input == NULL)
		return cli_usage_error("state import", "missing FILE (or - for standard input)");
	name = strcmp(input, "-") == 0 ? "standard input" : input;
	if (cli_read_input(input, &text, &len) != 0)
		return cli_fail(CLI_EXIT_USAGE, "state import");
	rc = faucet_export_parse(&e, text, len);
	free(text);
	if (rc != 0)
		return cli_fail(CLI_EXIT_USAGE, "state import: %s is not a usable export document",
				name);
	rc = cli_open_store(ctx, &s);
	if (rc == 0) {
		rc = import_into(ctx, s, ctx->store_label, e, replace);
		faucet_store_free(s);
	}
	faucet_export_free(e);
	return rc;
}

/* ---- copy -------------------------------------------------------------- */

int cli_state_copy(cli_context *ctx, int argc, char **argv)
{
	enum { OPT_TO = 1, OPT_REPLACE };
	static const cli_option opts[] = {
		{"to", 0, 1, OPT_TO},
		{"replace", 0, 0, OPT_REPLACE},
		{NULL, 0, 0, 0},
	};
	const char *pipeline = NULL, *to = NULL, *arg;
	faucet_store *src = NULL, *dst = NULL;
	faucet_export *e = NULL;
	char *to_label = NULL;
	int id, rc, replace = 0;
	cli_args it;

	cli_args_init(&it, ctx, "state copy", argc, argv);
	while ((id = cli_args_next(&it, opts, &arg)) != CLI_ARG_END) {
		if (id == CLI_ARG_ERROR)
			return CLI_EXIT_USAGE;
		if (id == CLI_ARG_HELP)
			return cli_print_help(copy_help);
		if (id == OPT_TO)
			to = arg;
		else if (id == OPT_REPLACE)
			replace = 1;
		else if (pipeline == NULL)
			pipeline = arg;
		else
			return cli_usage_error("state copy", "unexpected argument '%s'", arg);
	}
	if (pipeline == NULL)
		return cli_usage_error("state copy", "missing PIPELINE");
	if (to == NULL)
		return cli_usage_error("state copy", "missing --to URL (the destination store)");
	if (faucet_validate_key(pipeline) != 0)
		return cli_fail(CLI_EXIT_USAGE, "state copy: bad pipeline name");
	to_label = faucet_url_redact(to);
	if (to_label == NULL)
		return cli_error(CLI_EXIT_FAILED, "out of memory");
	rc = cli_open_store_existing(ctx, &src);
	/* Open the destination before reading anything, so a bad --to fails
	 * fast with exit 2. */
	if (rc == 0 && faucet_store_open_url(&dst, to) != 0) {
		int code = faucet_error_last()->code;
		rc = cli_fail(code == FAUCET_ECONFIG || code == FAUCET_EINVALID ? CLI_EXIT_USAGE
										 : CLI_EXIT_FAILED,
			      "cannot open the destination store %s", to_label);
	}
	if (rc == 0)
		rc = export_pipeline(ctx, src, pipeline, &e);
	if (rc == 0)
		rc = import_into(ctx, dst, to_label, e, replace);
	faucet_export_free(e);
	faucet_store_free(dst);
	faucet_store_free(src);
	free(to_label);
	return rc;
}
