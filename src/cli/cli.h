/*
 * cli.h - what every `faucet` subcommand shares: the run's context, store
 * selection, argument scanning, error reporting and exit codes.
 *
 * Two decisions shape the whole command:
 *
 *  - The options that pick the store and the output form (--state, -c,
 *    --encryption-key-env, --json, --help) are global: they are accepted
 *    before the command name and anywhere among a subcommand's own
 *    arguments, so `faucet state list --json` and `faucet --json state list`
 *    mean the same.  cli_args_next() applies them to the context as it scans.
 *
 *  - The exit code is decided by the phase that failed, not by the library's
 *    error class alone: everything the user typed (keys, JSON, files, the
 *    config) is checked before the store is touched and fails with 2; once
 *    the store is open, a failure is 1.  So "exit 2" always means "nothing
 *    was written".
 *
 * Adding a command: write `int cli_NAME_main(cli_context *ctx, int argc,
 * char **argv)` (argv[0] is the command's own name, the rest its arguments),
 * declare it below and add one row to the command table in main.c.  The
 * backfill command (src/cli/backfill*.c) joins that way: it declares
 *
 *     int cli_backfill_main(cli_context *ctx, int argc, char **argv);
 *
 * here, adds {"backfill", cli_backfill_main, ...} to main.c's table, reads
 * its defaults through cli_context_config() (the YAML's `name` and
 * `backfill:` block, and the config's absolute path for FAUCET_CONFIG),
 * opens the store with cli_open_store(), and after that call finds in
 * ctx->selected_config_path / ctx->selected_url what to hand its children.
 */
#ifndef FAUCET_CLI_H
#define FAUCET_CLI_H

#include <stdio.h>
#include <faucet/faucet.h>

#include "util.h"

/* Exit codes (doc/design.md §5.2). */
#define CLI_EXIT_OK 0
#define CLI_EXIT_FAILED 1    /* the operation failed: a store error, a failed probe */
#define CLI_EXIT_USAGE 2     /* bad usage, config, key, JSON or input file; nothing written */
#define CLI_EXIT_CONDITION 3 /* a compare-and-put condition did not hold */
#define CLI_EXIT_BUSY 75     /* a lease is held: another run, bulk write or undo is in flight */

typedef struct cli_context {
	/* Global options, set wherever they appear on the command line. */
	int json;                /* --json: print machine-readable JSON */
	int quiet;               /* -q/--quiet: no run ids, undo lines or progress on stderr */
	const char *state_url;   /* --state URL, or NULL (borrowed from argv) */
	const char *config_arg;  /* -c/--config FILE, or NULL (borrowed from argv) */
	const char *key_env;     /* --encryption-key-env VAR, else FAUCET_ENCRYPTION_KEY_ENV, or NULL */
	faucet_strarray previous_key_envs; /* --previous-key-env VAR..., copied */
	int json_error_outcome;  /* --json failures print {"outcome": "error", "error": ...} */

	/* The terminal, looked at once at start-up. */
	int stdout_tty; /* stdout is a terminal: tables and truncation allowed */
	int color;      /* ... and NO_COLOR is unset and TERM is not dumb */

	/* The pipeline config named by -c or FAUCET_CONFIG, loaded on first
	 * use by cli_context_config(); NULL when neither names one. */
	faucet_config *config;
	int config_loaded;

	/* Filled by cli_open_store(): where the store came from.  Exactly one
	 * of the two is set.  selected_url is the URL itself, unredacted
	 * (children need it); print only store_label. */
	const char *selected_config_path; /* absolute config path (owned by config) */
	char *selected_url;               /* owned */
	char *store_label;                /* owned: redacted, safe to print */

	char *key_material; /* owned copy of the key read from key_env; wiped */
	faucet_config *to_config; /* a destination named by --to-config (owned) */
	char *to_label;        /* ... and its name for messages (owned) */
	faucet_strarray previous_material; /* the previous keys' values; wiped */
	char *previous_list; /* the previous keys' variable names, comma-separated */
} cli_context;

/* Set up / release a context.  Dispose wipes any key material held. */
void cli_context_init(cli_context *ctx);
void cli_context_dispose(cli_context *ctx);

/* Called before the process first holds key material (a config, which may
 * carry an encryption key or a password, or --encryption-key-env): turns
 * core dumps off, so a crash cannot write the key to disk - the process is
 * no longer dumpable (PR_SET_DUMPABLE 0, which also keeps other processes
 * of the user from reading its memory) and its core size limit is 0
 * (inherited by the commands backfill starts, which get the key too).  0,
 * or FAUCET_EIO with the last error set. */
int cli_forbid_core_dumps(void);

/* Overwrite a string's bytes with zeros, then free it.  NULL is ignored. */
void cli_wipe_free(char *s);

/* The config named by -c/--config, else by FAUCET_CONFIG, loaded once.
 * *out is NULL when neither names one.  On failure the error has been
 * printed and the exit code (2) is returned; 0 otherwise. */
int cli_context_config(cli_context *ctx, const faucet_config **out);

/* Open the store the user selected: --state, -c, FAUCET_CONFIG,
 * FAUCET_STATE, else file:.faucet-state (first match wins).  On failure
 * the error has been printed and the exit code is returned (2 for a bad
 * URL or config, 1 when the store itself failed); 0 otherwise. */
int cli_open_store(cli_context *ctx, faucet_store **out);

/* A command that writes through a store it opened with
 * cli_open_store_existing (undo, move) says so: a refusal for want of the
 * encryption key is then exit 2, as for every write. */
void cli_note_write(void);

/* As cli_open_store, for the read commands (list, show, get, export,
 * copy's source, doctor): a file: directory or sqlite: database that does
 * not exist is an error, exit 1, "no state store at PATH (write commands
 * create it)", instead of being created empty. */
int cli_open_store_existing(cli_context *ctx, faucet_store **out);

/* Check the shape of a store URL the user gave as `where` ("--state",
 * "--to"): a bare path or a scheme one typo from a known one is a usage
 * error with a "did you mean" (printed; CLI_EXIT_USAGE); 0 otherwise (the
 * library judges the rest). */
int cli_check_store_url(const char *url, const char *where);

/* As cli_open_store_existing, for a dry run: a file: directory or sqlite:
 * database that does not exist yet is not an error - *absent is set and
 * *out is an empty memory: store (nothing is created). */
int cli_open_store_or_absent(cli_context *ctx, faucet_store **out, int *absent);

/* Print "faucet: {what}: {last library error}" on stderr as one line and
 * return exit_code. */
int cli_fail(int exit_code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Print "faucet: {message}" on stderr as one line and return exit_code. */
int cli_error(int exit_code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Every failure goes through cli_fail/cli_error/cli_usage_error, which
 * escape the line (cli_escape) and, with --json, also print
 * {"error": {"code", "message", "exit"}} on stdout - unless the command
 * already printed its JSON document (cli_jw_print calls cli_json_printed), which
 * then carries the error itself.  The code is faucet_error_name() of the
 * library's error, or "invalid" (exit 2) / "state" when there is none.
 * cli_escape and cli_json_error_object are in jsonw.h. */

/* Note that stdout now holds the command's JSON document. */
void cli_json_printed(void);

/* A usage error of `command` ("state put"): one line that also points at
 * the command's --help.  Returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *command, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Flush stdout and turn a failed write (a full disk, a closed pipe) into
 * an error line; returns `exit_code` or CLI_EXIT_FAILED. */
int cli_finish(int exit_code);

/* Read a whole file, or stdin for "-", into a NUL-terminated buffer.
 * Errors print nothing; the library's last error names the file. */
int cli_read_input(const char *path, char **out, size_t *len);

/* ---- argument scanning ------------------------------------------------ */

typedef struct {
	const char *long_name; /* without the dashes: "if-equals" */
	char short_name;       /* 'o', or 0 for none */
	int takes_value;
	int id;                /* > 0, returned by cli_args_next */
} cli_option;

/* cli_args_next() returns an option id (> 0) or one of these. */
#define CLI_ARG_END 0
#define CLI_ARG_POSITIONAL (-1) /* *value is the argument */
#define CLI_ARG_HELP (-2)       /* -h/--help was given */
#define CLI_ARG_ERROR (-3)      /* a usage error, already printed */

typedef struct {
	cli_context *ctx;
	const char *command; /* for messages: "state put" */
	int argc;
	char **argv;
	int next;            /* index of the next argument to look at */
	int positional_only; /* after "--" */
} cli_args;

/* Scan argv[1..] of a command.  `opts` ends with a zeroed row and may be
 * NULL.  The global options are handled here and never returned.  "-" and
 * arguments that look like negative numbers ("-1", "-0.5") are positional,
 * so a JSON value can be written without "--". */
void cli_args_init(cli_args *it, cli_context *ctx, const char *command, int argc, char **argv);
int cli_args_next(cli_args *it, const cli_option *opts, const char **value);

/* faucet__suggest() (util.h) gives every "did you mean". */

/* --tenant T, the one option every command taking a PIPELINE shares: put
 * CLI_TENANT_OPTION(id) in the command's option table and check the value
 * with cli_tenant_check(), which sets *tenant or prints the usage error
 * and returns CLI_EXIT_USAGE. */
#define CLI_TENANT_OPTION(id) {"tenant", 't', 1, (id)}
int cli_tenant_check(const char *command, const char *text, const char **tenant);
/* Whether text is a tenant name: one non-empty key segment, no "::"
 * (what cli_tenant_check accepts; serve's ?tenant= uses it too). */
int cli_is_tenant_name(const char *text);

/* The default PIPELINE of a command given none: the YAML's `name` when -c
 * or FAUCET_CONFIG names a config.  Otherwise (or on a config error) the
 * error has been printed and its exit code is returned. */
int cli_default_pipeline(cli_context *ctx, const char *command, const char **pipeline);

/* A command's PIPELINE argument: the default of cli_default_pipeline when
 * *pipeline is NULL, then checked to be a pipeline name (a valid key of one
 * segment, no '::'; with CLI_PIPELINE_NAMESPACE and no tenant, a namespace
 * such as T::P is taken as written) and the tenant, when given, a valid
 * segment.  With `tenant` and `ns`, *ns becomes "T::P" (caller frees) and
 * *pipeline points at it.  0, or the usage error printed and its exit code. */
#define CLI_PIPELINE_NAMESPACE 1u
int cli_pipeline_arg(cli_context *ctx, const char *command, const char **pipeline,
		     const char *tenant, unsigned flags, char **ns);

/* Print the help of `command` ("state put", a variant such as "state export
 * --format meltano", or "" for faucet's own) on stdout, generated from its
 * row in src/cli/reference.c and ending with how a store is chosen and
 * configured (URLs, YAML fields, defaults, keys), and return 0.  The options
 * of the parser that saw --help are first checked against the command's row:
 * a difference is an internal error, printed, and 1 (the tests run every
 * --help). */
int cli_print_command_help(const char *command);
int cli_args_help_check(void);

/* The value of a duration option (`flag`, e.g. "--lease-ttl", of
 * `command`): a duration such as "500ms", "10s", "2m", "1h" or a bare
 * number of seconds.  0 with *out set when `text` is one from min_ms to
 * max_ms; otherwise the usage error, naming the flag and the value, is
 * printed and CLI_EXIT_USAGE returned.  A value that would overflow is
 * "too long", never wrapped. */
/* --wait takes an optional value (--wait or --wait=D), which the scanner
 * does not know: take it out of argv (from argv[1], up to a "--") before
 * scanning.  *given is set when it was there, *value to D or NULL. */
void cli_take_wait(int *argc, char **argv, int *given, const char **value);

int cli_duration_option(const char *command, const char *flag, const char *text,
			unsigned long long min_ms, unsigned long long max_ms,
			unsigned long long *out);

#define CLI_DAY_MS (24ULL * 3600 * 1000)
#define CLI_LEASE_MAX_MS (30 * CLI_DAY_MS) /* longest lease TTL or --wait */

/* ---- commands --------------------------------------------------------- */

int cli_state_main(cli_context *ctx, int argc, char **argv);
int cli_doctor_main(cli_context *ctx, int argc, char **argv);
int cli_backfill_main(cli_context *ctx, int argc, char **argv);
int cli_completion_main(cli_context *ctx, int argc, char **argv);
int cli_run_main(cli_context *ctx, int argc, char **argv);  /* run.c */
int cli_lock_main(cli_context *ctx, int argc, char **argv); /* lock.c */
int serve_main(cli_context *ctx, int argc, char **argv); /* src/serve/serve.c */

/* The `state` subcommands (state_read.c, state_write.c, state_move.c). */
int cli_state_list(cli_context *ctx, int argc, char **argv);
int cli_state_show(cli_context *ctx, int argc, char **argv);
int cli_state_get(cli_context *ctx, int argc, char **argv);
int cli_state_put(cli_context *ctx, int argc, char **argv);
int cli_state_delete(cli_context *ctx, int argc, char **argv);
int cli_state_export(cli_context *ctx, int argc, char **argv);
int cli_state_import(cli_context *ctx, int argc, char **argv);
int cli_state_copy(cli_context *ctx, int argc, char **argv);
int cli_state_rekey(cli_context *ctx, int argc, char **argv);
int cli_state_runs(cli_context *ctx, int argc, char **argv); /* state_runs.c */
int cli_state_undo(cli_context *ctx, int argc, char **argv); /* state_runs.c */
int cli_state_merge(cli_context *ctx, int argc, char **argv); /* state_merge.c */
int cli_state_clear(cli_context *ctx, int argc, char **argv); /* state_clear.c */

/* ---- listings (table.c) ----------------------------------------------- */

/* Rows of text cells; printed on a terminal as a header and aligned
 * columns, else as tab-separated lines without a header. */
typedef struct {
	size_t ncols, nrows, cap;
	char ***rows;
	int failed;
} cli_table;

void cli_table_init(cli_table *t, size_t ncols);
/* Copy one row of ncols cells (NULL prints "-"); -1 when out of memory
 * (remembered: cli_table_print then fails). */
int cli_table_add(cli_table *t, const char *const *cells);
int cli_table_print(const cli_table *t, const cli_context *ctx, const char *const *heads);
void cli_table_dispose(cli_table *t);

/* A time for a listing: on a terminal in the local zone, else as `utc` (an
 * RFC 3339 UTC text; NULL: unix_seconds is formatted so).  Returns `utc`,
 * `buf` or "-". */
const char *cli_time_shown(const cli_context *ctx, long long unix_seconds, const char *utc,
			   char *buf, size_t size);

int cli_state_pipelines(cli_context *ctx, int argc, char **argv); /* state_pipelines.c */
/* Append what `state pipelines --json` prints to `out`; 0, or a FAUCET_E*
 * code with the library's error set (nothing printed).  faucet serve's
 * GET /v1/pipelines is this too. */
int cli_pipelines_json(faucet_store *s, const char *tenant, faucet_buf *out);
int cli_state_move(cli_context *ctx, int argc, char **argv); /* state_pipeline.c */
int cli_state_copy_pipeline(cli_context *ctx, int argc, char **argv); /* copy --to-pipeline */
int cli_state_export_meltano(cli_context *ctx, int argc, char **argv); /* state_meltano.c */
int cli_state_import_meltano(cli_context *ctx, int argc, char **argv);
/* Whether argv (up to a "--") holds `--format meltano` / `--format=meltano`. */
int cli_wants_meltano(int argc, char **argv);

/* ---- every CLI write is a run (write_run.c) --------------------------- */

typedef struct {
	faucet_run *run; /* NULL when nothing is recorded (bookkeeping keys only) */
	int joined;      /* joined FAUCET_RUN_ID's run: not ended here */
	int ended;       /* cli_write_run_end ended it */
	int defer_error; /* set by the caller: a failed end is returned, not printed
			  * (the caller's report carries it) */
	char *pipeline;
	char *undo;      /* the undo command, once ended (NULL: nothing to undo) */
	int quiet;       /* print no run/undo line (-q, or --json: stderr is for errors) */
} cli_write_run;

/* The write's one put, then its end (cli_write_run_end ok): one durable
 * write for both where the store can (faucet_run_put_end).  *put_done
 * says whether the put happened; when it did not, CLI_EXIT_FAILED is
 * returned with the error unprinted, and the run is still to be ended. */
int cli_write_run_put_end(cli_write_run *w, faucet_store *s, const char *key,
			  const faucet_value *value, int *put_done);

#define CLI_RUN_MAY_JOIN 1  /* join the run of FAUCET_RUN_ID when it is set */
#define CLI_RUN_EXCLUSIVE 2 /* a bulk write: hold the pipeline lease (exit 75 when held) */

/* Begin the run the write of `keys` is recorded in (flags: CLI_RUN_*).  On
 * failure the error has been printed and the exit code is returned. */
int cli_write_run_begin(cli_context *ctx, faucet_store *s, const char *command,
			const char *const *keys, size_t n, int flags, cli_write_run *w);

/* The same with the decision made: a run of {pipeline}::{row}, or a
 * pipeline-level run when row is NULL (pipeline NULL: nothing to record). */
int cli_write_run_begin_in(cli_context *ctx, faucet_store *s, const char *command,
			   const char *pipeline, const char *row, int flags, cli_write_run *w);

/* End it (ok or failed with message) and print the run id and the undo
 * command on stderr.  Returns 0 or the exit code of a failure (printed). */
int cli_write_run_end(cli_write_run *w, int ok, const char *message);

/* Append "run" and "undo" members (after a first member) to a JSON object;
 * both null when `w` is NULL (a dry run, nothing recorded). */
void cli_write_run_json(const cli_write_run *w, faucet_buf *b);

void cli_write_run_dispose(cli_write_run *w);

/* The names of the previous keys' variables as FAUCET_PREVIOUS_KEY_ENV
 * holds them (comma-separated): --previous-key-env, else that variable.
 * NULL when there are none.  Owned by the context. */
const char *cli_previous_key_env_list(cli_context *ctx);

/* Open the store a pipeline YAML names - its state: block, with the
 * encryption the YAML gives it - as the destination of `state copy` or
 * `state import` (--to-config FILE).  *label (owned by the context) names it
 * in messages.  On failure the error has been printed and the exit code is
 * returned: 2 for a bad or state-less config, 1 when the store failed. */
int cli_open_config_store(cli_context *ctx, const char *path, faucet_store **out,
			  const char **label);
int cli_state_reindex(cli_context *ctx, int argc, char **argv);

/* Whether the store cli_open_store() opened has an encryption key. */
int cli_store_is_encrypted(const cli_context *ctx);

#endif
