/*
 * state_move.c - moving a pipeline's state: `faucet state export`, `import`
 * and `copy`.
 *
 * export -o writes through libfaucet's one durable-write routine
 * (faucet_write_file): a new or regular target is replaced atomically and durably,
 * so a reader sees the old document or the whole new one; an existing
 * device, FIFO, socket or symlink is written through, never replaced.
 * "-o -" is standard output.
 *
 * import validates the whole document before anything is written (the
 * library reads it twice, so it streams; standard input is spooled to a
 * temp file first); a partial import is reported key by key, because the
 * operator has to know exactly which keys landed.  export and copy stream
 * the document through an anonymous temp file, so none of the three holds
 * a namespace's values in memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "jsonw.h"

/* ---- export -------------------------------------------------------------- */

int cli_wants_meltano(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (strcmp(argv[i], "--format=meltano") == 0 ||
		    (strcmp(argv[i], "--format") == 0 && i + 1 < argc &&
		     strcmp(argv[i + 1], "meltano") == 0))
			return 1;
	}
	return 0;
}

/* --format of export and import: faucet (the version-1 document, the
 * default) or meltano (handled by state_meltano.c before this is reached). */
static int check_format(const char *command, const char *format)
{
	static const char *const formats[] = {"faucet", "meltano"};
	const char *best;

	if (strcmp(format, "faucet") == 0)
		return 0;
	best = faucet__suggest(format, formats, 2);
	if (best != NULL)
		return cli_usage_error(command, "unknown --format '%s' (did you mean '%s'?)", format,
				       best);
	return cli_usage_error(command, "unknown --format '%s' (faucet or meltano)", format);
}

/* An anonymous read-write temp file in $TMPDIR (else /tmp), unlinked at
 * once so it disappears with the process; owner-only, since it holds
 * plaintext values. */
static FILE *anonymous_temp(void)
{
	const char *dir = getenv("TMPDIR");
	char *path = faucet__sprintf("%s/faucet-move.XXXXXX", dir && *dir ? dir : "/tmp");
	FILE *f = NULL;
	int fd;

	if (path == NULL)
		return NULL;
	fd = mkstemp(path);
	if (fd >= 0) {
		(void)unlink(path);
		f = fdopen(fd, "w+");
		if (f == NULL)
			close(fd);
	}
	free(path);
	return f;
}

static int format_now(char *when, size_t size)
{
	if (faucet_utc_text((int64_t)time(NULL), when, size) != 0)
		return faucet_error_set(FAUCET_ERROR, "cannot read the clock");
	return 0;
}

/* The pipeline's export document, streamed into an anonymous temp file as
 * the keys are read (memory stays bounded whatever the namespace holds), and
 * rewound.  Nothing reaches the real output until the whole document has
 * been written, so a failure midway never leaves half a document behind. */
static int export_to_temp(cli_context *ctx, faucet_store *s, const char *pipeline, FILE **out,
			  size_t *count)
{
	char when[40];
	FILE *tmp;

	*out = NULL;
	if (format_now(when, sizeof(when)) != 0)
		return cli_fail(CLI_EXIT_FAILED, "export of '%s'", pipeline);
	tmp = anonymous_temp();
	if (tmp == NULL)
		return cli_error(CLI_EXIT_FAILED, "export of '%s': cannot create a temp file: %s",
				 pipeline, strerror(errno));
	if (faucet_export_write(s, pipeline, when, 1, tmp, count) != 0) {
		fclose(tmp);
		return cli_fail(CLI_EXIT_FAILED, "cannot export pipeline '%s' from %s", pipeline,
				ctx->store_label);
	}
	if (fflush(tmp) != 0 || fseek(tmp, 0, SEEK_SET) != 0) {
		int err = errno;
		fclose(tmp);
		return cli_error(CLI_EXIT_FAILED, "export of '%s': temp file: %s", pipeline,
				 strerror(err));
	}
	*out = tmp;
	return 0;
}

static int copy_to_stdout(FILE *in)
{
	char block[65536];
	size_t n;

	while ((n = fread(block, 1, sizeof(block), in)) > 0) {
		if (fwrite(block, 1, n, stdout) != n)
			return -1;
	}
	return ferror(in) ? -1 : 0;
}

/* The temp file's document, mapped, goes through the one durable-write
 * routine (faucet_write_file: a device, FIFO, socket or symlink target is
 * written through, anything else replaced atomically): the mapping is
 * file-backed, so it costs no heap however large it is. */
static int write_temp_atomically(FILE *tmp, const char *path)
{
	struct stat st;
	void *map;
	int rc;

	if (fstat(fileno(tmp), &st) != 0)
		return faucet__error_os(FAUCET_EIO, errno, "cannot read the export temp file");
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fileno(tmp), 0);
	if (map == MAP_FAILED)
		return faucet__error_os(FAUCET_EIO, errno, "cannot map the export temp file");
	rc = faucet_write_file(path, "export file", map, (size_t)st.st_size);
	(void)munmap(map, (size_t)st.st_size);
	return rc;
}

static int print_export_summary(cli_context *ctx, const char *pipeline, const char *output,
				size_t count)
{
	if (ctx->json) {
		faucet_buf b = FAUCET_BUF_INIT;

		(void)faucet__buf_putc(&b, '{');
		cli_jw_member(&b, "pipeline", 1);
		faucet__json_string(&b, pipeline);
		cli_jw_member(&b, "keys", 0);
		(void)faucet__buf_printf(&b, "%zu", count);
		cli_jw_member(&b, "output", 0);
		faucet__json_string(&b, output);
		(void)faucet__buf_putc(&b, '}');
		return cli_jw_print(&b) != 0 ? CLI_EXIT_FAILED : CLI_EXIT_OK;
	}
	if (!ctx->quiet)
		printf("exported %zu keys of pipeline '%s' to %s\n", count, pipeline, output);
	return CLI_EXIT_OK;
}

int cli_state_export(cli_context *ctx, int argc, char **argv)
{
	enum { OPT_OUTPUT = 1, OPT_FORMAT, OPT_TENANT };
	static const cli_option opts[] = {{"output", 'o', 1, OPT_OUTPUT},
					  {"format", 0, 1, OPT_FORMAT},
					  CLI_TENANT_OPTION(OPT_TENANT), {NULL, 0, 0, 0}};
	const char *pipeline = NULL, *output = NULL, *tenant = NULL, *arg;
	char *ns = NULL;
	faucet_store *s;
	FILE *tmp = NULL;
	size_t count = 0;
	cli_args it;
	int id, rc;

	if (cli_wants_meltano(argc, argv))
		return cli_state_export_meltano(ctx, argc, argv);
	cli_args_init(&it, ctx, "state export", argc, argv);
	while ((id = cli_args_next(&it, opts, &arg)) != CLI_ARG_END) {
		if (id == CLI_ARG_ERROR)
			return CLI_EXIT_USAGE;
		if (id == CLI_ARG_HELP)
			return cli_print_command_help("state export");
		if (id == OPT_OUTPUT)
			output = arg;
		else if (id == OPT_FORMAT && (rc = check_format("state export", arg)) != 0)
			return rc;
		else if (id == OPT_FORMAT)
			continue;
		else if (id == OPT_TENANT && (rc = cli_tenant_check("state export", arg, &tenant)) != 0)
			return rc;
		else if (id == OPT_TENANT)
			continue;
		else if (pipeline == NULL)
			pipeline = arg;
		else
			return cli_usage_error("state export", "unexpected argument '%s'", arg);
	}
	if ((rc = cli_pipeline_arg(ctx, "state export", &pipeline, tenant,
				   CLI_PIPELINE_NAMESPACE, &ns)) != 0)
		return rc;
	rc = cli_open_store_existing(ctx, &s);
	if (rc != 0) {
		free(ns);
		return rc;
	}
	rc = export_to_temp(ctx, s, pipeline, &tmp, &count);
	faucet_store_free(s);
	if (rc != 0) {
		free(ns);
		return rc;
	}
	if (output == NULL || strcmp(output, "-") == 0) {
		if (copy_to_stdout(tmp) != 0 || putchar('\n') == EOF)
			rc = cli_error(CLI_EXIT_FAILED, "export of '%s': cannot write it out: %s",
				       pipeline, strerror(errno));
	} else if (write_temp_atomically(tmp, output) != 0) {
		rc = cli_fail(CLI_EXIT_FAILED, "export of '%s'", pipeline);
	} else {
		rc = print_export_summary(ctx, pipeline, output, count);
	}
	fclose(tmp);
	free(ns);
	return rc;
}

/* ---- the import report ------------------------------------------------- */

static void print_json_report(faucet_buf *b, const char *pipeline, const char *label,
			      const faucet_import_report *r, const cli_write_run *w)
{
	(void)faucet__buf_putc(b, '{');
	cli_jw_member(b, "pipeline", 1);
	faucet__json_string(b, pipeline);
	cli_jw_member(b, "store", 0);
	faucet__json_string(b, label);
	cli_jw_member(b, "dry_run", 0);
	(void)faucet__buf_puts(b, r->dry_run ? "true" : "false");
	cli_jw_member(b, "written", 0);
	cli_jw_string_array(b, &r->written);
	cli_jw_member(b, "durability_unknown", 0);
	cli_jw_string_array(b, &r->durability_unknown);
	cli_jw_member(b, "deleted", 0);
	cli_jw_string_array(b, &r->deleted);
	cli_jw_member(b, "atomic", 0);
	(void)faucet__buf_puts(b, r->atomic ? "true" : "false");
	cli_jw_member(b, "error", 0);
	if (r->error == NULL) {
		(void)faucet__buf_puts(b, "null");
	} else {
		(void)faucet__buf_putc(b, '{');
		cli_jw_member(b, "code", 1);
		faucet__json_string(b, faucet_error_name(r->error_code));
		cli_jw_member(b, "message", 0);
		faucet__json_string(b, r->error);
		cli_jw_member(b, "exit", 0);
		(void)faucet__buf_printf(b, "%d", CLI_EXIT_FAILED);
		(void)faucet__buf_putc(b, '}');
	}
	cli_write_run_json(w, b);
	(void)faucet__buf_putc(b, '}');
}

static void print_list(const char *what, const faucet_strarray *keys)
{
	for (size_t i = 0; i < keys->count; i++)
		printf("%s: %s\n", what, keys->strings[i]);
}

static void print_text_report(const char *pipeline, const char *label,
			      const faucet_import_report *r)
{
	if (r->dry_run) {
		printf("dry run: pipeline '%s' into %s: %zu key%s would be written (%s), %zu stale "
		       "key%s would be deleted; nothing was written\n",
		       pipeline, label, r->written.count, r->written.count == 1 ? "" : "s",
		       r->atomic ? "one all-or-nothing batch" : "not all-or-nothing",
		       r->deleted.count, r->deleted.count == 1 ? "" : "s");
		print_list("would write", &r->written);
		print_list("would delete", &r->deleted);
		return;
	}
	printf("pipeline '%s' into %s: %zu key%s written (%s), %zu stale key%s deleted\n",
	       pipeline, label, r->written.count, r->written.count == 1 ? "" : "s",
	       r->atomic ? "one all-or-nothing batch" : "not all-or-nothing", r->deleted.count,
	       r->deleted.count == 1 ? "" : "s");
	print_list("deleted", &r->deleted);
	/* After a failure, say exactly which keys are in the store now. */
	if (r->error != NULL)
		print_list("written", &r->written);
	print_list("durability unknown", &r->durability_unknown);
}

static int print_report(cli_context *ctx, const char *pipeline, const char *label,
			const faucet_import_report *r, const cli_write_run *w)
{
	if (ctx->json) {
		faucet_buf b = FAUCET_BUF_INIT;

		print_json_report(&b, pipeline, label, r, w);
		if (cli_jw_print(&b) != 0)
			return CLI_EXIT_FAILED;
	} else if (!ctx->quiet || r->dry_run || r->error != NULL) {
		/* -q: a successful write's report is chatter; a failure's is not. */
		print_text_report(pipeline, label, r);
	}
	if (r->error == NULL)
		return CLI_EXIT_OK;
	if (r->error_code == FAUCET_EUNKNOWN)
		return cli_error(CLI_EXIT_FAILED,
				 "import into %s stopped with an unknown outcome after %zu written "
				 "key(s), %zu of them not known to be durable (listed above; read "
				 "them back before retrying): %s",
				 label, r->written.count, r->durability_unknown.count, r->error);
	if (r->written.count == 0 && r->deleted.count == 0)
		return cli_error(CLI_EXIT_FAILED, "import into %s failed, nothing was written: %s",
				 label, r->error);
	return cli_error(CLI_EXIT_FAILED,
			 "import into %s stopped after %zu written and %zu deleted key(s) "
			 "(listed above): %s",
			 label, r->written.count, r->deleted.count, r->error);
}

/* Import the document in `in` into `s` and print the report.  A document
 * the library refuses before writing (invalid, unreadable, or an empty
 * source for --replace) is exit 2 - the report's pipeline is set only once
 * the document has been read whole and validated, so an error without it
 * was the document's. */
/* Every import and copy is one run (doc/design.md §8.7), begun by the library
 * once the document is known valid: the run of the invocation every
 * changed key belongs to, else a pipeline-level run of the document's
 * pipeline. */
typedef struct {
	cli_context *ctx;
	faucet_store *s;
	const char *command;
	int may_join;
	cli_write_run w;
	int begin_rc; /* the exit code of a failed begin (already printed) */
} import_run;

static int begin_import_run(void *arg, const char *pipeline, const char *row, faucet_run **run)
{
	import_run *ir = arg;
	const char *sep = strstr(pipeline, "::");
	char *first = NULL;

	/* A tenant's document (pipeline "T::P") records where its keys' runs
	 * live: the run pipeline is a key's first segment (doc/design.md §8.7). */
	if (sep != NULL && (first = faucet__strndup(pipeline, (size_t)(sep - pipeline))) == NULL) {
		ir->begin_rc = cli_error(CLI_EXIT_FAILED, "out of memory");
		return faucet_error_set(FAUCET_ENOMEM, "out of memory");
	}
	ir->begin_rc = cli_write_run_begin_in(ir->ctx, ir->s, ir->command,
					      first ? first : pipeline, row,
					      (ir->may_join ? CLI_RUN_MAY_JOIN : 0) |
						      CLI_RUN_EXCLUSIVE, &ir->w);
	free(first);
	if (ir->begin_rc != 0)
		return faucet_error_set(FAUCET_ERROR, "the import could not be recorded as a run");
	*run = ir->w.run;
	return 0;
}

static int import_from(cli_context *ctx, faucet_store *s, const char *label, FILE *in,
		       const char *source_name, const faucet_import_options *opts,
		       const char *command, int may_join)
{
	faucet_import_run_hook hook = FAUCET_IMPORT_RUN_HOOK_INIT;
	faucet_import_report report = FAUCET_IMPORT_REPORT_INIT;
	import_run ir;
	int rc;

	memset(&ir, 0, sizeof(ir));
	ir.ctx = ctx;
	ir.s = s;
	ir.command = command;
	ir.may_join = may_join;
	hook.begin_run = begin_import_run;
	hook.ctx = &ir;
	report = (faucet_import_report)FAUCET_IMPORT_REPORT_INIT;
	rc = faucet_import_file_recorded(s, in, opts, &hook, &report);
	if (rc != 0 && ir.begin_rc != 0) {
		/* The run could not begin: already said, nothing written. */
		faucet_import_report_dispose(&report);
		cli_write_run_dispose(&ir.w);
		return ir.begin_rc;
	}
	if (ir.w.run != NULL) {
		int end_rc;

		ir.w.defer_error = rc == 0 && report.error == NULL;
		end_rc = cli_write_run_end(&ir.w, rc == 0 && report.error == NULL,
					   rc != 0 ? faucet_error_last()->message : report.error);
		if (end_rc != 0 && ir.w.defer_error) {
			/* The data landed but its run could not be recorded: the
			 * report still says exactly what was written, with that
			 * error (the run reads "abandoned" once we are gone). */
			report.error = faucet__sprintf("the data was written but its run %s could not "
						   "be recorded: %s", faucet_run_id(ir.w.run),
						   faucet_error_last()->message);
			report.error_code = faucet_error_last()->code;
			if (report.error == NULL) {
				faucet_import_report_dispose(&report);
				cli_write_run_dispose(&ir.w);
				return end_rc;
			}
		}
	}
	if (rc != 0) {
		int usage = report.pipeline == NULL || rc == FAUCET_EINVALID;
		if (report.pipeline != NULL && rc == FAUCET_EINVALID && opts->replace)
			rc = cli_fail(CLI_EXIT_USAGE, "%s", source_name);
		else if (usage)
			rc = cli_fail(CLI_EXIT_USAGE, "%s is not a usable export document",
				      source_name);
		else
			rc = cli_fail(CLI_EXIT_FAILED, "cannot import into %s", label);
		faucet_import_report_dispose(&report);
		cli_write_run_dispose(&ir.w);
		return rc;
	}
	rc = print_report(ctx, report.pipeline, label, &report, &ir.w);
	faucet_import_report_dispose(&report);
	cli_write_run_dispose(&ir.w);
	return rc;
}

/* ---- import ------------------------------------------------------------ */

/* The input as a seekable stream: a regular file is read in place;
 * standard input, a pipe or a FIFO is copied into an anonymous temp file
 * first (the import reads the document twice). */
static int open_input(const char *input, const char *name, FILE **out)
{
	int use_stdin = strcmp(input, "-") == 0;
	FILE *f = use_stdin ? stdin : fopen(input, "re");
	char block[65536];
	struct stat st;
	FILE *tmp;
	size_t n;

	*out = NULL;
	if (f == NULL)
		return faucet__error_os(FAUCET_EIO, errno, "cannot open %s", name);
	if (fstat(fileno(f), &st) != 0) {
		int err = errno;
		if (!use_stdin)
			fclose(f);
		return faucet__error_os(FAUCET_EIO, err, "cannot read %s", name);
	}
	if (S_ISDIR(st.st_mode)) {
		if (!use_stdin)
			fclose(f);
		return faucet__error_os(FAUCET_EIO, EISDIR, "cannot read %s", name);
	}
	if (S_ISREG(st.st_mode) && !use_stdin) {
		*out = f;
		return 0;
	}
	tmp = anonymous_temp();
	if (tmp == NULL) {
		int err = errno;
		if (!use_stdin)
			fclose(f);
		return faucet__error_os(FAUCET_EIO, err, "cannot create a temp file for %s", name);
	}
	while ((n = fread(block, 1, sizeof(block), f)) > 0) {
		if (fwrite(block, 1, n, tmp) != n)
			break;
	}
	if (ferror(f) || ferror(tmp) || fflush(tmp) != 0 || fseek(tmp, 0, SEEK_SET) != 0) {
		int err = errno;
		if (!use_stdin)
			fclose(f);
		fclose(tmp);
		return faucet__error_os(FAUCET_EIO, err, "cannot read %s", name);
	}
	if (!use_stdin)
		fclose(f);
	*out = tmp;
	return 0;
}

enum { OPT_REPLACE = 1, OPT_ALLOW_EMPTY, OPT_DRY_RUN, OPT_TO, OPT_TO_CONFIG, OPT_IMPORT_FORMAT,
       OPT_COPY_TENANT };

/* --replace, --allow-empty, --dry-run: 1 when `id` was one of them. */
static int import_option(int id, faucet_import_options *o)
{
	if (id == OPT_REPLACE)
		o->replace = 1;
	else if (id == OPT_ALLOW_EMPTY)
		o->allow_empty = 1;
	else if (id == OPT_DRY_RUN)
		o->dry_run = 1;
	else
		return 0;
	return 1;
}

int cli_state_import(cli_context *ctx, int argc, char **argv)
{
	static const cli_option opts[] = {
		{"replace", 0, 0, OPT_REPLACE},
		{"allow-empty", 0, 0, OPT_ALLOW_EMPTY},
		{"dry-run", 0, 0, OPT_DRY_RUN},
		{"to-config", 0, 1, OPT_TO_CONFIG},
		{"format", 0, 1, OPT_IMPORT_FORMAT},
		{NULL, 0, 0, 0},
	};
	const char *input = NULL, *arg, *name, *to_config = NULL, *label;
	faucet_import_options o = FAUCET_IMPORT_OPTIONS_INIT;
	faucet_store *s;
	FILE *in = NULL;
	cli_args it;
	int id, rc;

	if (cli_wants_meltano(argc, argv))
		return cli_state_import_meltano(ctx, argc, argv);
	cli_args_init(&it, ctx, "state import", argc, argv);
	while ((id = cli_args_next(&it, opts, &arg)) != CLI_ARG_END) {
		if (id == CLI_ARG_ERROR)
			return CLI_EXIT_USAGE;
		if (id == CLI_ARG_HELP)
			return cli_print_command_help("state import");
		if (import_option(id, &o))
			continue;
		if (id == OPT_TO_CONFIG)
			to_config = arg;
		else if (id == OPT_IMPORT_FORMAT && (rc = check_format("state import", arg)) != 0)
			return rc;
		else if (id == OPT_IMPORT_FORMAT)
			continue;
		else if (input == NULL)
			input = arg;
		else
			return cli_usage_error("state import", "unexpected argument '%s'", arg);
	}
	if (input == NULL)
		return cli_usage_error("state import", "missing FILE (or - for standard input)");
	name = strcmp(input, "-") == 0 ? "standard input" : input;
	if (open_input(input, name, &in) != 0)
		return cli_fail(CLI_EXIT_USAGE, "state import");
	if (to_config != NULL) {
		rc = cli_open_config_store(ctx, to_config, &s, &label);
	} else {
		rc = cli_open_store(ctx, &s);
		label = ctx->store_label;
	}
	if (rc == 0) {
		char *what = faucet__sprintf("state import: %s", name);
		rc = what ? import_from(ctx, s, label, in, what, &o, "faucet state import", 1)
			  : cli_error(CLI_EXIT_FAILED, "out of memory");
		free(what);
		faucet_store_free(s);
	}
	if (in != stdin)
		fclose(in);
	return rc;
}

/* ---- copy -------------------------------------------------------------- */

typedef struct {
	const char *pipeline, *to, *to_config, *tenant;
	faucet_import_options o;
} copy_args;

/* --to-pipeline NEW: a copy within this store (state_pipeline.c). */
static int wants_to_pipeline(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (strcmp(argv[i], "--to-pipeline") == 0 ||
		    strncmp(argv[i], "--to-pipeline=", 14) == 0)
			return 1;
	}
	return 0;
}

/* copy's arguments into *a: -1 to go on, else the exit code. */
static int parse_copy_args(cli_context *ctx, int argc, char **argv, copy_args *a)
{
	static const cli_option opts[] = {
		{"to", 0, 1, OPT_TO},
		{"to-config", 0, 1, OPT_TO_CONFIG},
		{"replace", 0, 0, OPT_REPLACE},
		{"allow-empty", 0, 0, OPT_ALLOW_EMPTY},
		{"dry-run", 0, 0, OPT_DRY_RUN},
		CLI_TENANT_OPTION(OPT_COPY_TENANT),
		{NULL, 0, 0, 0},
	};
	const char *arg;
	cli_args it;
	int id, rc;

	cli_args_init(&it, ctx, "state copy", argc, argv);
	while ((id = cli_args_next(&it, opts, &arg)) != CLI_ARG_END) {
		if (id == CLI_ARG_ERROR)
			return CLI_EXIT_USAGE;
		if (id == CLI_ARG_HELP)
			return cli_print_command_help("state copy");
		if (id == OPT_TO)
			a->to = arg;
		else if (id == OPT_TO_CONFIG)
			a->to_config = arg;
		else if (import_option(id, &a->o))
			continue;
		else if (id == OPT_COPY_TENANT &&
			 (rc = cli_tenant_check("state copy", arg, &a->tenant)) != 0)
			return rc;
		else if (id == OPT_COPY_TENANT)
			continue;
		else if (a->pipeline == NULL)
			a->pipeline = arg;
		else
			return cli_usage_error("state copy", "unexpected argument '%s'", arg);
	}
	if ((a->to == NULL) == (a->to_config == NULL))
		return cli_usage_error("state copy", "give the destination store as --to URL or "
				       "--to-config FILE (one of them)");
	return -1;
}

/* The pipeline (with --tenant, a->pipeline becomes the namespace *ns) and
 * the --to URL checked; *to_label is that URL without its password. */
static int check_copy_args(cli_context *ctx, copy_args *a, char **ns, char **to_label)
{
	int rc;

	*to_label = NULL;
	if ((rc = cli_pipeline_arg(ctx, "state copy", &a->pipeline, a->tenant,
				   CLI_PIPELINE_NAMESPACE, ns)) != 0)
		return rc;
	if (a->to == NULL)
		return 0;
	if ((rc = cli_check_store_url(a->to, "--to")) != 0)
		return rc;
	if ((*to_label = faucet_url_redact(a->to)) == NULL)
		return cli_error(CLI_EXIT_FAILED, "out of memory");
	return 0;
}

static int open_destination(cli_context *ctx, const copy_args *a, const char *to_label,
			    faucet_store **dst, const char **dst_label)
{
	int code;

	if (a->to_config != NULL)
		return cli_open_config_store(ctx, a->to_config, dst, dst_label);
	if (faucet_store_open_url(dst, a->to) == 0)
		return 0;
	code = faucet_error_last()->code;
	return cli_fail(code == FAUCET_ECONFIG || code == FAUCET_EINVALID ? CLI_EXIT_USAGE
									  : CLI_EXIT_FAILED,
			"cannot open the destination store %s", to_label);
}

static int import_copy(cli_context *ctx, const copy_args *a, faucet_store *dst,
		       const char *dst_label, FILE *tmp)
{
	char *what = faucet__sprintf("state copy: the source %s of pipeline '%s'",
				     ctx->store_label, a->pipeline);
	int rc;

	if (what == NULL)
		return cli_error(CLI_EXIT_FAILED, "out of memory");
	rc = import_from(ctx, dst, dst_label, tmp, what, &a->o, "faucet state copy", 0);
	free(what);
	return rc;
}

/* The source's namespace exported into a temp file, then imported into
 * the destination. */
static int copy_between(cli_context *ctx, const copy_args *a, const char *to_label)
{
	faucet_store *src = NULL, *dst = NULL;
	const char *dst_label = to_label;
	FILE *tmp = NULL;
	size_t count = 0;
	int rc;

	rc = cli_open_store_existing(ctx, &src);
	/* Open the destination before reading anything, so a bad --to fails
	 * fast: exit 2 for a URL or config that is wrong, 1 for a store that
	 * cannot be opened (a server is reached at its first request). */
	if (rc == 0)
		rc = open_destination(ctx, a, to_label, &dst, &dst_label);
	/* The namespace goes through a temp file, so a copy's memory stays
	 * bounded like an export's and an import's. */
	if (rc == 0)
		rc = export_to_temp(ctx, src, a->pipeline, &tmp, &count);
	/* The source is read: close it before writing, so that its connections
	 * and their buffers are not held through a long import. */
	faucet_store_free(src);
	if (rc == 0)
		rc = import_copy(ctx, a, dst, dst_label, tmp);
	if (tmp != NULL)
		fclose(tmp);
	faucet_store_free(dst);
	return rc;
}

int cli_state_copy(cli_context *ctx, int argc, char **argv)
{
	copy_args a = {.o = FAUCET_IMPORT_OPTIONS_INIT};
	char *ns = NULL, *to_label = NULL;
	int rc;

	if (wants_to_pipeline(argc, argv))
		return cli_state_copy_pipeline(ctx, argc, argv);
	if ((rc = parse_copy_args(ctx, argc, argv, &a)) >= 0)
		return rc;
	if ((rc = check_copy_args(ctx, &a, &ns, &to_label)) == 0)
		rc = copy_between(ctx, &a, to_label);
	free(to_label);
	free(ns);
	return rc;
}
