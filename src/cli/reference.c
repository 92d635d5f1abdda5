/*
 * reference.c - the one table of the command's commands and flags
 * (reference.h).  The usage text, every --help, the completion scripts and
 * the man page are generated from it (reference_gen.c); every --help checks that its
 * parser accepts exactly the flags of its row (cli_reference_check), and
 * tests/cli/test_reference_texts.sh runs every --help and tries every flag.
 */
#include <string.h>

#include "reference.h"

#define FLAG(l, s, a, d) {.long_name = (l), .short_name = (s), .arg = (a), .desc = (d)}
#define FLAGV(l, s, a, d, v) {.long_name = (l), .short_name = (s), .arg = (a), .desc = (d), .value = (v)}
#define FLAGW(l, a, d, w) {.long_name = (l), .arg = (a), .desc = (d), .with = (w)}
#define FLAGM(l, a, d, m) {.long_name = (l), .arg = (a), .desc = (d), .more = (m)}
#define TENANT(d) FLAG("tenant", 't', "T", d)
#define END {0}

/* The man page's paragraphs of the global options. */
const cli_ref_flag cli_reference_globals[] = {
	FLAGV("state", 0, "URL", "the store (see the store reference)", CLI_VALUE_URL),
	FLAGV("config", 'c', "FILE", "a faucet pipeline YAML: its state: block and name:",
	      CLI_VALUE_FILE),
	{.long_name = "encryption-key-env", .arg = "VAR", .value = CLI_VALUE_VAR,
	 .desc = "the variable holding the encryption key",
	 .more = ": the file store's current key, which seals what is written and is tried "
		 "first on reads (default: $FAUCET_ENCRYPTION_KEY_ENV)"},
	{.long_name = "previous-key-env", .arg = "VAR", .value = CLI_VALUE_VAR,
	 .desc = "a variable holding a previous key (repeatable)",
	 .more = ": an older key, tried after the current one on reads (default: "
		 "$FAUCET_PREVIOUS_KEY_ENV, comma-separated names)"},
	{.long_name = "json", .desc = "print machine-readable JSON",
	 .more = " on stdout; a failure also prints {\"error\": {\"code\", \"message\", "
		 "\"exit\"}} (backfill: {\"outcome\": \"error\", \"error\": {...}}); on success "
		 "stderr stays empty (the run and undo command are in the JSON), a failure writes "
		 "its one-line message there; 'faucet run --json' prints one summary object as "
		 "the last line of stdout"},
	{.long_name = "quiet", .short_name = 'q',
	 .desc = "no run ids, undo commands or progress on stderr; errors only",
	 .more = ": a successful write prints nothing"},
	{.long_name = "help", .short_name = 'h', .desc = "show help (also after any command)",
	 .more = ", ending with the store and key reference"},
	END,
};

static const cli_ref_flag top_flags[] = { /* the first row's: reference_gen.c */
	{.long_name = "version", .short_name = 'V', .desc = "print the version",
	 .more = " (also 'faucet version')"},
	END,
};

static const cli_ref_flag list_flags[] = {
	FLAG("prefix", 0, "PREFIX", "the keys starting with PREFIX"),
	TENANT("the keys of tenant T's PIPELINE"),
	FLAG("all", 0, NULL, "also the run bookkeeping keys"),
	END,
};

static const cli_ref_flag show_flags[] = {
	TENANT("the keys of tenant T's PIPELINE"),
	FLAG("all", 0, NULL, "also the run bookkeeping keys"),
	END,
};

static const cli_ref_flag put_flags[] = {
	FLAG("if-absent", 0, NULL, "write only when KEY has no value"),
	FLAGM("if-equals", "JSON", "write only when KEY's value equals JSON (exit 3 otherwise)",
	      "; compared as JSON values: member order and number spelling do not matter"),
	END,
};

static const cli_ref_flag merge_flags[] = {
	FLAG("if-equals", 0, "JSON", "merge only when KEY's value equals JSON (exit 3 otherwise)"),
	FLAG("dry-run", 'n', NULL, "print the merged value; write nothing"),
	END,
};

static const cli_ref_flag clear_flags[] = {
	FLAG("row", 0, "R", "only the invocation PIPELINE::R"),
	TENANT("the pipeline of tenant T"),
	{.long_name = "yes", .short_name = 'y',
	 .desc = "needed on a terminal when more than one key would go",
	 .more = " (when standard input is one; there is no prompt)"},
	FLAG("dry-run", 'n', NULL, "list the keys that would go; delete nothing"),
	END,
};

static const cli_ref_flag export_flags[] = {
	FLAGV("output", 'o', "FILE", "write the document to FILE (atomically)", CLI_VALUE_FILE),
	{.long_name = "format", .arg = "FORMAT", .value = CLI_VALUE_WORDS,
	 .words = "faucet meltano",
	 .desc = "faucet (the version-1 document) or meltano (one invocation's bookmark)"},
	TENANT("the pipeline of tenant T"),
	FLAGW("row", "R", "the invocation whose bookmark is exported", "--format meltano"),
	END,
};

static const cli_ref_flag import_flags[] = {
	FLAGM("replace", NULL, "also delete the namespace's keys the document does not hold",
	      "; a document without keys is refused (exit 2), since it would empty the "
	      "namespace, unless --allow-empty"),
	FLAG("allow-empty", 0, NULL, "let --replace apply an empty document"),
	FLAG("dry-run", 0, NULL, "print what would be written and deleted; write nothing"),
	FLAGV("to-config", 0, "FILE", "write into the store of this pipeline YAML", CLI_VALUE_FILE),
	{.long_name = "format", .arg = "FORMAT", .value = CLI_VALUE_WORDS,
	 .words = "faucet meltano",
	 .desc = "faucet (an export document) or meltano (a Meltano state document)"},
	FLAGW("pipeline", "P", "the pipeline the Meltano state is for", "--format meltano"),
	FLAGW("row", "R", "the invocation the Meltano state is for", "--format meltano"),
	{.long_name = "tenant", .short_name = 't', .arg = "T", .with = "--format meltano",
	 .desc = "the pipeline of tenant T"},
	FLAGW("merge-partial", NULL, "merge it over the completed part, as Meltano does",
	      "--format meltano"),
	END,
};

static const cli_ref_flag copy_flags[] = {
	FLAGV("to", 0, "URL", "the destination store", CLI_VALUE_URL),
	FLAGV("to-config", 0, "FILE", "the destination: this pipeline YAML's store",
	      CLI_VALUE_FILE),
	FLAG("to-pipeline", 0, "NEW", "copy to pipeline NEW in the same store"),
	FLAGW("row-map", "OLD=NEW", "the invocation row OLD becomes NEW (repeatable)",
	      "--to-pipeline P"),
	TENANT("the pipeline of tenant T"),
	FLAG("replace", 0, NULL, "also delete the destination's keys the source lacks"),
	FLAG("allow-empty", 0, NULL, "let --replace copy an empty source"),
	FLAG("dry-run", 0, NULL, "print what would be written and deleted; write nothing"),
	END,
};

static const cli_ref_flag move_flags[] = {
	FLAG("row-map", 0, "OLD=NEW", "the invocation row OLD becomes NEW (repeatable)"),
	TENANT("the pipelines of tenant T (T::PIPELINE::)"),
	FLAG("replace", 0, NULL, "NEW may already have data keys: they are overwritten"),
	FLAG("dry-run", 0, NULL, "print what would be written and deleted; write nothing"),
	END,
};

static const cli_ref_flag pipelines_flags[] = {
	TENANT("the pipelines of tenant T (its keys T::PIPELINE::...)"),
	END,
};

static const cli_ref_flag runs_flags[] = {
	FLAG("row", 0, "R", "only the runs of the invocation PIPELINE::R"),
	TENANT("the runs of tenant T's PIPELINE"),
	END,
};

static const cli_ref_flag undo_flags[] = {
	FLAG("row", 0, "R", "a run of the invocation PIPELINE::R"),
	TENANT("a run of tenant T's PIPELINE"),
	FLAG("force", 0, NULL, "undo even over later writes (a conflict)"),
	FLAG("dry-run", 0, NULL, "print what would be restored; write nothing"),
	{.long_name = "wait", .arg = "D", .optional_value = 1,
	 .desc = "wait for the pipeline's lease to go (for up to D; without D, no limit)"},
	END,
};

static const cli_ref_flag doctor_flags[] = {
	FLAG("timeout", 0, "DURATION", "bound the whole check (default 10s; 1ms to 24h)"),
	FLAG("repair", 0, NULL, "set broken run documents aside, remove faucet's stale temp files"),
	END,
};

static const cli_ref_flag backfill_flags[] = {
	FLAG("pipeline", 0, "NAME", "the pipeline (default: the YAML's name)"),
	FLAGM("from", "A", "the range's start: RFC 3339 or a date",
	      " (2026-03-07T00:00:00-05:00, or 2026-03-07: local midnight in --timezone)"),
	FLAGM("to", "B", "the range's end: RFC 3339 or a date", ", as --from"),
	FLAGM("window", "W", "a unit's length: Ns, Nm, Nh, Nd or Nw",
	      " (Ns, Nm, Nh or N seconds: elapsed; Nd, Nw: calendar days in --timezone); "
	      "default: one unit for the range"),
	{.long_name = "timezone", .arg = "TZ", .value = CLI_VALUE_ZONE,
	 .desc = "IANA zone of the windows (default UTC)", .more = "; windows are shown in it"},
	FLAG("concurrency", 0, "N", "units in flight (default 1)"),
	FLAG("row", 0, "ROW", "the row this backfill is for (default \"default\")"),
	FLAG("dry-run", 0, NULL, "show the units and what is already done; run nothing"),
	FLAG("resume", 0, NULL, "continue a backfill of this range: skip done units"),
	FLAG("restart", 0, NULL, "forget a backfill of this range and start over"),
	FLAG("lease-ttl", 0, "DURATION",
	     "how long a unit's claim lasts unless renewed (60s; 3s to 720h)"),
	{.long_name = "metrics-file", .arg = "FILE", .value = CLI_VALUE_FILE,
	 .desc = "Prometheus metrics, rewritten as units end",
	 .more = ", when interrupted and at the end"},
	FLAG("hash", 0, "H", "the backfill of this hash (backfill status)"),
	{.long_name = "tenant", .short_name = 't', .arg = "T",
	 .desc = "refused: a backfill runs for a pipeline, not a tenant",
	 .more = " ('backfill status --tenant' reads a tenant's)"},
	END,
};

static const cli_ref_flag backfill_status_flags[] = {
	FLAG("pipeline", 0, "NAME", "the pipeline (default: the YAML's name)"),
	FLAG("from", 0, "A", "with --to: the units of the backfill of that range"),
	FLAG("to", 0, "B", "with --from: the range's end"),
	FLAG("window", 0, "W", "the range's window (default: the YAML's)"),
	FLAGV("timezone", 0, "TZ", "the range's zone (default: the YAML's, else UTC)",
	      CLI_VALUE_ZONE),
	FLAG("row", 0, "R", "the range's row (default \"default\")"),
	FLAG("hash", 0, "H", "the backfill of this hash"),
	TENANT("the backfills of tenant T's pipeline"),
	END,
};

static const cli_ref_flag run_flags[] = {
	FLAG("pipeline", 0, "P", "the pipeline (default: the config's name)"),
	FLAG("row", 0, "R", "the invocation's row (default \"default\")"),
	FLAG("lease-ttl", 0, "D", "how long the lease lasts unless renewed (60s; 1s to 720h)"),
	{.long_name = "wait", .arg = "D", .optional_value = 1,
	 .desc = "wait for a live lease to go (for up to D, at most 720h)",
	 .more = "; without D, no limit"},
	FLAG("singer", 0, NULL, "capture Singer state: the bookmark is handed to the command"),
	END,
};

static const cli_ref_flag lock_break_flags[] = {
	FLAG("if-holder", 0, "H", "remove the lease only while H holds it"),
	FLAG("pipeline", 'p', "P", "the lease of pipeline P (with --row R: of P::R)"),
	FLAG("row", 0, "R", "the invocation's row"),
	END,
};

static const cli_ref_flag serve_flags[] = { /* src/serve/serve.c */
	FLAGM("listen", "HOST:PORT", "where to listen (default 127.0.0.1:8421)",
	      "; port 0 picks one, printed on stderr; a non-loopback address needs --token-file"),
	FLAGV("token-file", 0, "FILE", "the bearer tokens (needed off loopback)", CLI_VALUE_FILE),
	FLAGM("read-only", NULL, "refuse every write", " (403)"),
	FLAG("threads", 0, "N", "worker threads (default 4)"),
	FLAGM("max-connections", "N", "connections at once (default 64)", "; 503 beyond"),
	FLAG("timeout", 0, "D", "a connection's idle timeout (default 30s)"),
	{.long_name = "tls-cert", .arg = "FILE", .value = CLI_VALUE_FILE,
	 .desc = "serve HTTPS with this certificate", .more = " (PEM), with --tls-key"},
	{.long_name = "tls-key", .arg = "FILE", .value = CLI_VALUE_FILE,
	 .desc = "serve HTTPS with this key", .more = " (PEM), with --tls-cert"},
	FLAGM("routes", NULL, "print the routes and exit", " (METHOD PATH)"),
	END,
};

/* Each row's prose: its --help and man-page paragraphs. */
#include "reference_help.inc"

static const cli_ref_variant export_variants[] = {
	{.when = "--format meltano", .help = help_state_export_meltano,
	 .synopsis = "--format meltano [PIPELINE] [--row R] [--tenant T] [-o FILE]",
	 .flags = "row tenant output"},
	{0},
};

static const cli_ref_variant import_variants[] = {
	{.when = "--format meltano", .help = help_state_import_meltano,
	 .synopsis = "--format meltano [--pipeline P] [--row R] [--tenant T] [--merge-partial] "
		     "[--dry-run] FILE|-",
	 .flags = "pipeline row tenant merge-partial dry-run"},
	{0},
};

static const cli_ref_variant copy_variants[] = {
	{.when = "--to-pipeline", .help = help_state_copy_pipeline,
	 .synopsis = "PIPELINE --to-pipeline NEW [--row-map OLD=NEW]... [--tenant T] [--replace] "
		     "[--dry-run]",
	 .flags = "row-map tenant replace dry-run"},
	{0},
};

const cli_ref_command cli_reference_commands[] = {
	{.name = "", .synopsis = "[OPTIONS] COMMAND [ARGS]", .hidden = 1, .flags = top_flags,
	 .summary = "inspect, move and repair the durable state of faucet pipelines"},
	{.name = "state", .synopsis = "SUBCOMMAND [ARGS]",
	 .summary = "read and write state keys (see 'faucet state --help')",
	 .subcommands = "list show get put delete export import copy move rekey reindex runs "
			"undo merge clear pipelines"},
	{.name = "state list", .synopsis = "[PIPELINE [--tenant T] | --prefix PREFIX] [--all]",
	 .summary = "keys in byte order, one a line", .flags = list_flags, .complete_keys = 1,
	 .help = help_state_list},
	{.name = "state show", .synopsis = "[PIPELINE] [--tenant T] [--all]",
	 .summary = "every key of a pipeline with its decoded parts and value",
	 .flags = show_flags, .help = help_state_show},
	{.name = "state get", .synopsis = "KEY", .complete_keys = 1, .help = help_state_get,
	 .summary = "the value as compact JSON on one line; nothing (exit 0) when absent"},
	{.name = "state put", .synopsis = "KEY JSON|- [--if-absent | --if-equals JSON]",
	 .summary = "write a value (- reads it from stdin)", .flags = put_flags,
	 .complete_keys = 1, .help = help_state_put},
	{.name = "state delete", .synopsis = "KEY", .complete_keys = 1, .help = help_state_delete,
	 .summary = "remove a key (absent is not an error)"},
	{.name = "state merge", .synopsis = "KEY JSON|- [--if-equals JSON] [--dry-run]",
	 .summary = "RFC 7396 merge patch into KEY's value", .flags = merge_flags,
	 .complete_keys = 1, .help = help_state_merge},
	{.name = "state clear", .synopsis = "PIPELINE [--row R] [--tenant T] [--yes] [--dry-run]",
	 .summary = "delete a pipeline's data keys (one run)", .flags = clear_flags,
	 .help = help_state_clear},
	{.name = "state pipelines", .synopsis = "[--tenant T]",
	 .summary = "every pipeline: keys, last run, leases", .flags = pipelines_flags,
	 .help = help_state_pipelines},
	{.name = "state export", .synopsis = "[PIPELINE] [--tenant T] [-o FILE] [--format meltano [--row R]]",
	 .summary = "the version-1 export document", .flags = export_flags,
	 .help = help_state_export, .variants = export_variants},
	{.name = "state import",
	 .synopsis = "FILE|- [--replace [--allow-empty]] [--dry-run] [--to-config FILE]",
	 .summary = "write an export document into the store", .flags = import_flags,
	 .help = help_state_import, .variants = import_variants},
	{.name = "state copy",
	 .synopsis = "[PIPELINE] (--to URL | --to-config FILE | --to-pipeline NEW) [--replace]",
	 .summary = "export + import into another store, or to another pipeline",
	 .flags = copy_flags, .help = help_state_copy,
	 .variants = copy_variants},
	{.name = "state move", .synopsis = "PIPELINE NEW [--row-map OLD=NEW]... [--replace]",
	 .summary = "rename a pipeline (one run, one undo)", .flags = move_flags,
	 .help = help_state_move},
	{.name = "state rekey", .synopsis = "[PREFIX]",
	 .summary = "re-seal every file with the current key", .help = help_state_rekey},
	{.name = "state runs", .synopsis = "PIPELINE [--row R | --tenant T]",
	 .summary = "the run history, newest first", .flags = runs_flags, .help = help_state_runs},
	{.name = "state undo", .synopsis = "PIPELINE [--row R | --tenant T] [RUN] [--force] [--dry-run]",
	 .summary = "undo a run (the newest not yet undone)", .flags = undo_flags,
	 .help = help_state_undo},
	{.name = "state reindex", .synopsis = "",
	 .summary = "rebuild a Redis store's namespace index", .help = help_state_reindex},
	{.name = "doctor", .synopsis = "[--timeout DURATION] [--repair]",
	 .summary = "run the state store's health probes", .flags = doctor_flags,
	 .help = help_doctor},
	{.name = "backfill", .synopsis = "(-c FILE | --pipeline NAME) --from A --to B [-- COMMAND ...]",
	 .summary = "re-run a pipeline over a past range (see 'faucet backfill --help')",
	 .flags = backfill_flags, .subcommands = "status", .help = help_backfill},
	{.name = "backfill status",
	 .synopsis = "(-c FILE | --pipeline NAME) [--from A --to B | --hash H] [--tenant T]",
	 .summary = "what the backfills of a pipeline have done", .flags = backfill_status_flags,
	 .parser = "backfill",
	 .help = help_backfill_status},
	{.name = "run",
	 .synopsis = "(--pipeline P [--row R] | -c FILE) [--lease-ttl D] [--wait[=D]] [--singer] -- COMMAND ...",
	 .summary = "run a command as one recorded, undoable run of an invocation",
	 .flags = run_flags, .help = help_run},
	{.name = "lock", .synopsis = "list|break ...", .subcommands = "list break",
	 .summary = "show the leases of runs and backfill units; remove a stuck one"},
	{.name = "lock list", .synopsis = "[PIPELINE]", .help = help_lock_list,
	 .summary = "the leases of runs, bulk writes and backfill units"},
	{.name = "lock break", .synopsis = "KEY | --pipeline P [--row R] [--if-holder H]",
	 .summary = "remove a stuck lease", .flags = lock_break_flags, .help = help_lock_break},
	{.name = "completion", .synopsis = "bash|zsh|fish", .subcommands = "bash zsh fish",
	 .summary = "print a shell completion script", .help = help_completion},
	{.name = "version", .synopsis = "", .summary = "print the version (also -V, --version)",
	 .help = help_version},
	{.name = "serve",
	 .synopsis = "[--listen HOST:PORT] [--token-file FILE] [--read-only] [--threads N] "
		     "[--max-connections N] [--timeout D] [--tls-cert FILE --tls-key FILE] [--routes]",
	 .summary = "an HTTP API over the store (see 'faucet serve --help')", .flags = serve_flags,
	 .help = help_serve},
	/* A command of its own file adds its row here. */
};

const size_t cli_reference_ncommands =
	sizeof(cli_reference_commands) / sizeof(cli_reference_commands[0]);

const cli_ref_env cli_reference_env[] = {
	{"FAUCET_CONFIG", 0, "a pipeline YAML naming the store, like \\fB\\-c\\fR"},
	{"FAUCET_STATE", 0, "a store URL, like \\fB\\-\\-state\\fR"},
	{"FAUCET_ENCRYPTION_KEY_ENV", 0, "the default of \\fB\\-\\-encryption\\-key\\-env\\fR"},
	{"FAUCET_PREVIOUS_KEY_ENV", 0,
	 "the default of \\fB\\-\\-previous\\-key\\-env\\fR, comma-separated"},
	{"FAUCET_RUN_ID", 0, "a \\fBstate put\\fR or \\fBdelete\\fR joins that run"},
	{"NO_COLOR", 0, "no colours on a terminal"},
	{"FAUCET_RUN_ID", 1, "the run's id"},
	{"FAUCET_RUN_PIPELINE", 1, "the run's pipeline"},
	{"FAUCET_RUN_ROW", 1, "the run's row"},
	{"FAUCET_STATE_KEY", 1, "the invocation's key \\fIP\\fR::\\fIR\\fR"},
	{"FAUCET_STATE_FILE", 1, "the Singer state file (with \\fB\\-\\-singer\\fR)"},
	{"FAUCET_BIN", 1, "this faucet's absolute path"},
	{"FAUCET_BACKFILL_START", 2, "the unit's start (RFC 3339)"},
	{"FAUCET_BACKFILL_END", 2, "the unit's end (RFC 3339)"},
	{"FAUCET_BACKFILL_START_DATE", 2, "the unit's start date"},
	{"FAUCET_BACKFILL_END_DATE", 2, "the unit's end date"},
	{"FAUCET_BACKFILL_START_UNIX", 2, "the unit's start in Unix seconds"},
	{"FAUCET_BACKFILL_END_UNIX", 2, "the unit's end in Unix seconds"},
	{"FAUCET_BACKFILL_UNIT", 2, "the unit's number"},
	{"FAUCET_BACKFILL_STATE_KEY", 2, "the unit's state key"},
	{NULL, 0, NULL},
};

const cli_ref_command *cli_reference_find(const char *name)
{
	for (size_t i = 0; i < cli_reference_ncommands; i++) {
		if (strcmp(cli_reference_commands[i].name, name) == 0)
			return &cli_reference_commands[i];
	}
	return NULL;
}

const cli_ref_flag *cli_reference_flag(const cli_ref_command *c, const char *flag)
{
	for (const cli_ref_flag *f = c->flags; f != NULL && f->long_name != NULL; f++) {
		if (strcmp(f->long_name, flag) == 0)
			return f;
	}
	return NULL;
}
