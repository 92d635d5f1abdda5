/*
 * reference.h - the one table of the command's commands, flags and
 * environment variables (reference.c), and what is generated from it: the
 * usage text, every command's --help, the flag lists of the completion
 * scripts, the man page (`faucet help --man`, committed as doc/faucet.1)
 * and the check, made whenever a help is printed, that a parser accepts
 * exactly the flags its row documents.
 *
 * Adding a command: one row in cli_reference_commands (its synopsis,
 * summary, prose and the flags it takes, in an array beside it); the parser
 * in its own file, printing its help with cli_print_command_help().  A
 * command of its own file (`faucet serve`) adds its row at the end of the
 * table, where the comment says.
 *
 * Prose (a row's `help`, a variant's, a flag's `more`) is plain text, the
 * same for --help and the man page: lines of at most 78 columns, printed as
 * they are by --help and filled by roff (escaped there).  A blank line
 * starts a paragraph.  Lines starting with spaces make a list: one at the
 * block's first indent starts an item whose first word is its tag ("-",
 * "bash:"), a deeper one continues the item; the man page hangs the item's
 * filled text after its tag.  No other markup.
 */
#ifndef FAUCET_CLI_REFERENCE_H
#define FAUCET_CLI_REFERENCE_H

#include <stddef.h>

#include "cli.h"

/* How a shell completes a flag's value. */
enum {
	CLI_VALUE_TEXT = 0, /* anything: nothing offered */
	CLI_VALUE_FILE,     /* a file name */
	CLI_VALUE_VAR,      /* an environment variable's name */
	CLI_VALUE_URL,      /* a store URL: the schemes */
	CLI_VALUE_ZONE,     /* an IANA time zone (/usr/share/zoneinfo) */
	CLI_VALUE_WORDS     /* one of `words` */
};

typedef struct {
	const char *long_name; /* without the dashes */
	char short_name;       /* or 0 */
	const char *arg;       /* the value's name ("FILE"), or NULL: takes none */
	const char *desc;      /* one line, lower case, no full stop */
	int value;             /* CLI_VALUE_* */
	const char *words;     /* CLI_VALUE_WORDS: "faucet meltano" */
	const char *with;      /* accepted only with these arguments ("--format meltano") */
	int optional_value;    /* --wait[=D]: the value only after '=' */
	const char *more;      /* prose continuing desc in --help and the man page, not
				* in the completions: "; compared as JSON values" */
} cli_ref_flag;

/* Another form of a command, with a help of its own: `state export --format
 * meltano --help`.  Its usage line follows the command's in the command's
 * --help, its prose follows the command's in the man page. */
typedef struct {
	const char *when;     /* the arguments selecting it: "--format meltano" */
	const char *synopsis; /* after "faucet NAME ", `when` included */
	const char *help;     /* prose */
	const char *flags;    /* the long names of the row's flags it takes: "row tenant" */
} cli_ref_variant;

typedef struct {
	const char *name;     /* "state put"; a top-level command has no space */
	const char *synopsis; /* after "faucet NAME ": "KEY JSON|- [--if-absent]" */
	const char *summary;  /* one line for the usage text and the man page */
	const cli_ref_flag *flags; /* ends with a zeroed row; NULL: none */
	const char *subcommands;   /* "list break": completed after NAME, or NULL */
	int complete_keys;         /* complete the store's keys as arguments */
	int hidden;                /* not in the usage text (a command of another's row) */
	const char *help;          /* prose: what it does, its output, its exit codes; the
				    * --help and the man page's paragraphs; or NULL */
	const char *parser;        /* its parser is that row's (accepting all of its flags;
				    * this row lists those it uses), or NULL */
	const cli_ref_variant *variants; /* ends with a zeroed one; NULL: none */
} cli_ref_command;

extern const cli_ref_command cli_reference_commands[];
extern const size_t cli_reference_ncommands;
extern const cli_ref_flag cli_reference_globals[];

typedef struct {
	const char *name;
	int given_to; /* 0: read by faucet; 1: given to a run's command; 2: to a backfill unit */
	const char *desc; /* roff */
} cli_ref_env;

extern const cli_ref_env cli_reference_env[];

/* The row of `name` ("state put"), or NULL. */
const cli_ref_command *cli_reference_find(const char *name);

/* Whether `flag` (a long name) is among the row's flags. */
const cli_ref_flag *cli_reference_flag(const cli_ref_command *c, const char *flag);

/* The generated texts, appended to `b` (an allocation failure shows in
 * b->failed): the usage text of `faucet --help`; the whole man page in roff
 * (`faucet help --man`); the completion script of `shell` (bash, zsh or
 * fish; -1 for another); the table as tab-separated lines "COMMAND --FLAG
 * ARG WITH", "command\tNAME\tSYNOPSIS" and "variant\tNAME\tWHEN\tSYNOPSIS\tFLAGS" lines
 * for the tests (`faucet help --reference`). */
void cli_reference_usage(faucet_buf *b);
void cli_reference_man(faucet_buf *b);
int cli_reference_completion(faucet_buf *b, const char *shell);
void cli_reference_dump(faucet_buf *b);

/* The --help of `command` ("state put", or a variant: "state export --format
 * meltano"; "" for `faucet --help`): its usage lines, prose, options, then
 * the store selection and reference every help ends with.  -1 when there is
 * no such row. */
int cli_reference_help(faucet_buf *b, const char *command);

/* Called when a parser has seen --help (args.c): whether the options it
 * accepts (`opts`, the global ones included) are all in the row of
 * `command`, with the same short name and value.  Prints the difference as
 * an internal error and returns 1 when they are not. */
int cli_reference_check(const char *command, const cli_option *opts,
			const cli_option *globals);

#endif
