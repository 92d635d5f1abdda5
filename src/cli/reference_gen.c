/*
 * reference_gen.c - the texts generated from the table of reference.c: the
 * usage text, every --help, the man page, the bash/zsh/fish completion
 * scripts, the dump the tests read, and the check that a parser's options
 * are its row's.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "reference.h"

/* The date on the man page's .TH line: raise it with a change of the page. */
#define MAN_DATE "2026-12-02"

#include "man_text.inc"

#define PUTS(s) (void)faucet__buf_puts(b, (s))
#define PRINTF(...) (void)faucet__buf_printf(b, __VA_ARGS__)

/* -V/--version, the one option of the top-level row. */
static const cli_ref_flag *version_flag(void)
{
	return cli_reference_commands[0].flags;
}

static int is_group(const cli_ref_command *c)
{
	/* A row that only picks a subcommand: `state`, `lock`. */
	return c->subcommands != NULL && c->flags == NULL && strchr(c->name, ' ') == NULL &&
	       strcmp(c->name, "completion") != 0;
}

static int is_top(const cli_ref_command *c)
{
	return c->name[0] != '\0' && strchr(c->name, ' ') == NULL;
}

/* The parent's name of "state put" ("state"), in buf. */
static int split_name(const char *name, char *parent, size_t size, const char **child)
{
	const char *sp = strchr(name, ' ');
	size_t n;

	if (sp == NULL)
		return 0;
	n = (size_t)(sp - name);
	if (n >= size)
		return 0;
	memcpy(parent, name, n);
	parent[n] = '\0';
	*child = sp + 1;
	return 1;
}

/* The child name of a row under `parent` ("put" of "state put"), or NULL. */
static const char *child_of(const cli_ref_command *c, const char *parent)
{
	size_t n = strlen(parent);

	if (strncmp(c->name, parent, n) != 0 || c->name[n] != ' ')
		return NULL;
	return c->name + n + 1;
}

/* "-c, --config FILE" */
static void flag_label(faucet_buf *b, const cli_ref_flag *f)
{
	if (f->short_name != 0)
		PRINTF("-%c, ", f->short_name);
	PRINTF("--%s", f->long_name);
	if (f->arg != NULL)
		PRINTF(f->optional_value ? "[=%s]" : " %s", f->arg);
}

/* ---- usage -------------------------------------------------------------- */

static void column(faucet_buf *b, size_t start, const char *text)
{
	size_t used = b->len - start;

	if (used >= 21) {
		PUTS("\n");
		used = 0;
	}
	PRINTF("%*s%s\n", (int)(21 - used), "", text);
}

void cli_reference_usage(faucet_buf *b)
{
	PUTS("usage: faucet [OPTIONS] COMMAND [ARGS]\n\n"
	     "Inspect, move and repair the durable state of faucet pipelines.\n\nCommands:\n");
	for (size_t i = 0; i < cli_reference_ncommands; i++) {
		const cli_ref_command *c = &cli_reference_commands[i];
		char parent[32];
		const char *child;
		size_t start = b->len;

		if (c->hidden)
			continue;
		if (split_name(c->name, parent, sizeof(parent), &child)) {
			const cli_ref_command *p = cli_reference_find(parent);
			if (p != NULL && is_group(p))
				continue; /* said by its group's line */
		}
		PRINTF("  %s", c->name);
		if (is_group(c) || strcmp(c->name, "completion") == 0) {
			/* its subcommands, as a|b|c */
			PUTS(" ");
			for (const char *s = c->subcommands; *s != '\0'; s++)
				(void)faucet__buf_putc(b, *s == ' ' ? '|' : *s);
		}
		column(b, start, c->summary);
	}
	PUTS("  help               this text\n"
	     "\nOptions (accepted before or after the command):\n");
	for (const cli_ref_flag *f = cli_reference_globals; f->long_name != NULL; f++) {
		size_t start = b->len;

		PUTS("  ");
		flag_label(b, f);
		column(b, start, f->desc);
	}
	{
		size_t start = b->len;

		PUTS("  ");
		flag_label(b, version_flag());
		column(b, start, version_flag()->desc);
	}
	PUTS("\nExit codes: 0 success; 1 the operation failed; 2 bad usage, config, key,\n"
	     "JSON or input file (nothing written); 3 a compare-and-put condition did not hold.\n");
}

/* ---- man page ----------------------------------------------------------- */

/* Plain text as roff, up to `end`: '-' and '\' escaped, a leading '.' or
 * '\'' protected (it would be a request). */
static void roff_span(faucet_buf *b, const char *s, const char *end)
{
	if (s < end && (*s == '.' || *s == '\''))
		PUTS("\\&");
	for (; s < end; s++) {
		if (*s == '-')
			PUTS("\\-");
		else if (*s == '\\')
			PUTS("\\e");
		else
			(void)faucet__buf_putc(b, *s);
	}
}

static void roff_text(faucet_buf *b, const char *s)
{
	roff_span(b, s, s + strlen(s));
}

/* The first word's length of each line of the indented block at `s` that
 * starts an item (indented by `indent`), the longest: the tags' column. */
static size_t block_tag_width(const char *s, size_t indent)
{
	size_t width = 0;

	while (*s == ' ') {
		size_t n = strspn(s, " ");

		if (n == indent) {
			size_t k = strcspn(s + n, " \n");

			if (k > width)
				width = k;
		}
		s += strcspn(s, "\n");
		s += *s == '\n';
	}
	return width;
}

/* A line of an indented block: one at the block's indent starts an item,
 * its first word the tag (".IP bash: 6"); a deeper one continues it. */
static void roff_item_line(faucet_buf *b, const char *s, const char *end, size_t indent,
			   size_t width)
{
	size_t n = strspn(s, " ");

	s += n;
	if (n == indent) {
		size_t k = strcspn(s, " \n");

		PUTS(".IP \"");
		roff_span(b, s, s + k);
		PRINTF("\" %zu\n", width + 1);
		s += k;
		s += strspn(s, " ");
	}
	if (s < end) {
		roff_span(b, s, end);
		PUTS("\n");
	}
}

/* Prose (reference.h) as roff: each line escaped (roff fills them), a blank
 * line a new paragraph at the indent of the .TP it is in, an indented block
 * a list of tagged items (filled: the page is narrower than --help). */
static void roff_prose(faucet_buf *b, const char *s)
{
	int blank = 0;
	size_t indent = 0, width = 0; /* indent != 0: in a block */

	while (*s != '\0') {
		const char *nl = strchr(s, '\n');
		const char *end = nl != NULL ? nl : s + strlen(s);

		if (indent != 0 && *s != ' ') {
			PUTS(".PD\n.RE\n");
			indent = 0;
			blank = 1;
		}
		if (end == s) {
			blank = 1;
		} else if (*s == ' ') {
			if (indent == 0) {
				indent = strspn(s, " ");
				width = block_tag_width(s, indent);
				PUTS(".RS\n.PD 0\n");
			}
			roff_item_line(b, s, end, indent, width);
		} else {
			if (blank)
				PUTS(".IP\n");
			blank = 0;
			roff_span(b, s, end);
			PUTS("\n");
		}
		s = nl != NULL ? nl + 1 : end;
	}
	if (indent != 0)
		PUTS(".PD\n.RE\n");
}

/* A synopsis in roff: flags and literal words bold, NAMEs italic. */
static void roff_synopsis(faucet_buf *b, const char *s)
{
	while (*s != '\0') {
		size_t n = strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_=-");
		int upper = 1, bold;

		if (n == 0 || (s[0] == '.' )) {
			(void)faucet__buf_putc(b, *s);
			s++;
			continue;
		}
		for (size_t i = 0; i < n; i++) {
			if (islower((unsigned char)s[i]))
				upper = 0;
		}
		bold = s[0] == '-' || !upper;
		PUTS(bold ? "\\fB" : "\\fI");
		for (size_t i = 0; i < n; i++) {
			if (s[i] == '-')
				PUTS("\\-");
			else
				(void)faucet__buf_putc(b, s[i]);
		}
		PUTS("\\fR");
		s += n;
	}
}

/* "a description" and its `more` (or NULL) as "A description more." */
static void roff_sentence(faucet_buf *b, const char *s, const char *more)
{
	if (*s == '.' || *s == '\'')
		PUTS("\\&");
	if (*s != '\0') {
		(void)faucet__buf_putc(b, (char)toupper((unsigned char)*s));
		roff_span(b, s + 1, s + strlen(s));
	}
	if (more != NULL)
		roff_text(b, more);
	PUTS(".\n");
}

static void man_flag(faucet_buf *b, const cli_ref_flag *f)
{
	PUTS(".TP\n");
	if (f->short_name != 0)
		PRINTF("\\fB\\-%c\\fR, ", f->short_name);
	PUTS("\\fB\\-\\-");
	roff_text(b, f->long_name);
	PUTS("\\fR");
	if (f->arg != NULL) {
		PUTS(f->optional_value ? "[=\\fI" : " \\fI");
		roff_text(b, f->arg);
		PUTS(f->optional_value ? "\\fR]" : "\\fR");
	}
	PUTS("\n");
	roff_sentence(b, f->desc, f->more);
	if (f->with != NULL) {
		PUTS("Only with\n.BR \"");
		roff_text(b, f->with);
		PUTS("\" .\n");
	}
}

/* ---- the backends ------------------------------------------------------ */

/* The URL form with the options faucet takes off it: "?table=T&...". */
static void backend_url(faucet_buf *b, const faucet_backend_info *be)
{
	char sep = '?';

	PUTS(be->url_form);
	for (const faucet_backend_field *f = be->fields; f->name != NULL; f++) {
		if (f->placeholder == NULL)
			continue;
		PRINTF("%c%s=%s", sep, f->name, f->placeholder);
		sep = '&';
	}
}

/* A field's note and default in parentheses, or nothing; `sp` is the space
 * before the note and inside "default X" (NOBREAK keeps them on one line). */
static void field_note(faucet_buf *b, const faucet_backend_field *f, const char *sp)
{
	if (f->default_value == NULL && f->doc == NULL)
		return;
	PRINTF("%s(", sp);
	if (f->default_value != NULL)
		PRINTF("default%s%s%s", sp, f->default_value, f->doc != NULL ? "; " : "");
	if (f->doc != NULL)
		PUTS(f->doc);
	PUTS(")");
}

/* A space wrap() never breaks a line at. */
#define NOBREAK "\001"

/* Append `text` to b word by word, breaking lines before column `width`
 * and indenting each new one by `indent`; `col` is the current column. */
static void wrap(faucet_buf *b, const char *text, size_t indent, size_t width, size_t col)
{
	while (*text != '\0') {
		size_t n = strcspn(text, " ");

		if (col > indent && col + 1 + n > width) {
			PRINTF("\n%*s", (int)indent, "");
			col = indent;
		} else if (col > indent) {
			PUTS(" ");
			col++;
		}
		for (size_t i = 0; i < n; i++)
			(void)faucet__buf_putc(b, text[i] == NOBREAK[0] ? ' ' : text[i]);
		col += n;
		text += n;
		text += strspn(text, " ");
	}
	PUTS("\n");
}

#define STORE_COLUMN 27
#define URL_INDENT 9

/* The store reference of every --help, from the library's table of backends
 * (faucet_store_backend_info): each URL form with its options, its YAML type
 * and fields with their defaults. */
static void help_stores(faucet_buf *b)
{
	const faucet_backend_info *be;

	PUTS("Store URLs and their YAML form, state: {type: T, config: {...}}, with defaults:\n");
	for (size_t i = 0; (be = faucet_store_backend_info(i)) != NULL; i++) {
		faucet_buf url = FAUCET_BUF_INIT, text = FAUCET_BUF_INIT;
		size_t col;

		backend_url(&url, be);
		PUTS("  ");
		col = 2;
		/* A long URL goes on at its next option, indented. */
		for (const char *p = url.ptr ? url.ptr : ""; *p != '\0';) {
			size_t n = 1 + strcspn(p + 1, "&");

			if (*p == '&' && col + n > 80) {
				PRINTF("\n%*s", URL_INDENT, "");
				col = URL_INDENT;
			}
			(void)faucet__buf_put(b, p, n);
			col += n;
			p += n;
		}
		if (col + 1 > STORE_COLUMN) {
			PUTS("\n");
			col = 0;
		}
		PRINTF("%*s", (int)(STORE_COLUMN - col), "");
		(void)faucet__buf_printf(&text, "type: %s", be->type);
		for (const faucet_backend_field *f = be->fields; f->name != NULL; f++) {
			(void)faucet__buf_printf(&text, "%s%s", f == be->fields ? ", config: " : ", ",
						f->name);
			field_note(&text, f, NOBREAK);
		}
		(void)faucet__buf_printf(&text, ".%s%s", be->doc != NULL ? " " : "",
					be->doc != NULL ? be->doc : "");
		wrap(b, text.ptr ? text.ptr : "", STORE_COLUMN, 80, STORE_COLUMN);
		if (url.failed || text.failed)
			b->failed = 1;
		faucet__buf_dispose(&url);
		faucet__buf_dispose(&text);
	}
	PUTS("  A relative PATH is relative to the current directory.\n");
}

/* ---- --help ------------------------------------------------------------- */

#define HELP_WIDTH 80
#define FLAG_COLUMN_MAX 26
#define GROUP_COLUMN 36

/* How a store is chosen and configured, and the file store's keys: prose
 * (reference.h) that every --help ends with and the man page's STORE
 * SELECTION, its YAML paragraph and ENCRYPTION render - one text each. */
static const char store_selection_prose[] =
	"  --state            URL: a store URL (below); a bare path is refused with a\n"
	"                     suggestion of file:PATH or sqlite:PATH\n"
	"  -c/--config        FILE: a pipeline YAML, which must have a state: block\n"
	"  $FAUCET_CONFIG     a pipeline YAML, like -c\n"
	"  $FAUCET_STATE      a store URL, like --state\n"
	"  otherwise          file:.faucet-state in the current directory\n";

static const char store_yaml_prose[] =
	"Pipeline YAML fields read by faucet (the rest is the pipeline's own):\n"
	"  name:              P: the default PIPELINE of state show, export and copy,\n"
	"                     and of backfill\n"
	"  state:             {type, config}: the store, as above (required with -c)\n"
	"  backfill:          {window, concurrency (default 1), timezone (default\n"
	"                     UTC), command: [...] (the argv)}\n"
	"Strings may use ${env:VAR}: an unset VAR is an error, a set-but-empty one is\n"
	"the empty string.\n";

static const char encryption_prose[] =
	"The file store can seal every file with AES-256-GCM.  A key is any non-empty\n"
	"string - a passphrase or random bytes in text form - and the AES key is the\n"
	"SHA-256 of its bytes, so every length works; one shorter than 16 bytes is\n"
	"easy to guess and draws a warning (make one with: openssl rand -base64 32).\n"
	"A key is never put on the command line: --encryption-key-env and\n"
	"--previous-key-env name the environment variables holding the keys, or the\n"
	"YAML gives them.  To rotate: --encryption-key-env NEW --previous-key-env OLD\n"
	"state rekey; then drop OLD.\n";

/* The global flag `name`'s row (the table's zeroed end when there is none). */
static const cli_ref_flag *global_flag(const char *name)
{
	const cli_ref_flag *f = cli_reference_globals;

	while (f->long_name != NULL && strcmp(f->long_name, name) != 0)
		f++;
	return f;
}

/* Whether `name` is one of the space-separated `words`. */
static int in_words(const char *words, const char *name)
{
	size_t n = strlen(name);

	for (const char *w = words; *w != '\0'; w += strspn(w, " ")) {
		size_t k = strcspn(w, " ");

		if (k == n && strncmp(w, name, n) == 0)
			return 1;
		w += k;
	}
	return 0;
}

/* Append a synopsis from column `col`, breaking lines only at spaces outside
 * brackets and parentheses, each new line indented by `indent`. */
static void wrap_synopsis(faucet_buf *b, const char *s, size_t indent, size_t col)
{
	while (*s != '\0') {
		size_t n = 0;
		int depth = 0;

		for (; s[n] != '\0' && (s[n] != ' ' || depth > 0); n++) {
			if (s[n] == '[' || s[n] == '(')
				depth++;
			else if ((s[n] == ']' || s[n] == ')') && depth > 0)
				depth--;
		}
		if (col > indent && col + 1 + n > HELP_WIDTH) {
			PRINTF("\n%*s", (int)indent, "");
			col = indent;
		} else if (col > indent) {
			PUTS(" ");
			col++;
		}
		(void)faucet__buf_put(b, s, n);
		col += n;
		s += n;
		s += strspn(s, " ");
	}
	PUTS("\n");
}

/* One usage line, "usage: faucet NAME SYNOPSIS [OPTIONS]" (`lead` is
 * "usage: " or as many spaces).  [OPTIONS] goes before a "-- COMMAND":
 * what follows "--" is the command's, not faucet's. */
static void usage_line(faucet_buf *b, const char *lead, const char *name, const char *synopsis)
{
	faucet_buf words = FAUCET_BUF_INIT;
	const char *dash = NULL;
	size_t start = b->len;

	for (const char *p = synopsis; (p = strstr(p, "-- ")) != NULL; p++) {
		if (p == synopsis || p[-1] == ' ' || p[-1] == '[') {
			dash = p > synopsis && p[-1] == '[' ? p - 1 : p;
			break;
		}
	}
	if (dash == NULL)
		(void)faucet__buf_printf(&words, "%s%s[OPTIONS]", synopsis, *synopsis ? " " : "");
	else
		(void)faucet__buf_printf(&words, "%.*s[OPTIONS] %s", (int)(dash - synopsis),
					synopsis, dash);
	PRINTF("%sfaucet %s ", lead, name);
	wrap_synopsis(b, words.ptr != NULL ? words.ptr : "", b->len - start, b->len - start);
	if (words.failed)
		b->failed = 1;
	faucet__buf_dispose(&words);
}

/* "  --if-equals JSON   write only when ..." from column `col`. */
static void help_flag(faucet_buf *b, const cli_ref_flag *f, size_t col)
{
	faucet_buf text = FAUCET_BUF_INIT;
	size_t start = b->len;

	PUTS("  ");
	flag_label(b, f);
	if (b->len - start + 2 > col) {
		PUTS("\n");
		start = b->len;
	}
	PRINTF("%*s", (int)(col - (b->len - start)), "");
	(void)faucet__buf_printf(&text, "%s%s", f->desc, f->more != NULL ? f->more : "");
	if (f->with != NULL)
		(void)faucet__buf_printf(&text, " (only with %s)", f->with);
	wrap(b, text.ptr != NULL ? text.ptr : "", col, HELP_WIDTH, col);
	if (text.failed)
		b->failed = 1;
	faucet__buf_dispose(&text);
}

/* The "Options:" list of the row's flags (those named in `only`, unless
 * NULL), their descriptions aligned after the longest name. */
static void help_flags(faucet_buf *b, const cli_ref_flag *flags, const char *only)
{
	size_t col = 0;

	for (const cli_ref_flag *f = flags; f != NULL && f->long_name != NULL; f++) {
		faucet_buf label = FAUCET_BUF_INIT;

		if (only != NULL && !in_words(only, f->long_name))
			continue;
		flag_label(&label, f);
		if (label.len + 5 > col)
			col = label.len + 5; /* 2 before, 3 after */
		faucet__buf_dispose(&label);
	}
	if (col == 0)
		return;
	PUTS("\nOptions:\n");
	for (const cli_ref_flag *f = flags; f->long_name != NULL; f++) {
		if (only == NULL || in_words(only, f->long_name))
			help_flag(b, f, col < FLAG_COLUMN_MAX ? col : FLAG_COLUMN_MAX);
	}
}

/* The global options, in one wrapped paragraph, and where they are said. */
static void help_globals(faucet_buf *b)
{
	faucet_buf text = FAUCET_BUF_INIT;

	(void)faucet__buf_puts(&text, "Global options (see 'faucet --help'):");
	for (const cli_ref_flag *f = cli_reference_globals; f->long_name != NULL; f++) {
		(void)faucet__buf_puts(&text, " ");
		if (f->short_name != 0)
			(void)faucet__buf_printf(&text, "-%c/", f->short_name);
		(void)faucet__buf_printf(&text, "--%s", f->long_name);
		if (f->arg != NULL)
			(void)faucet__buf_printf(&text, NOBREAK "%s", f->arg);
		(void)faucet__buf_puts(&text, f[1].long_name != NULL ? "," : ".");
	}
	PUTS("\n");
	wrap(b, text.ptr != NULL ? text.ptr : "", 2, HELP_WIDTH, 0);
	if (text.failed)
		b->failed = 1;
	faucet__buf_dispose(&text);
}

/* A group's subcommands, "  put KEY JSON|-    write a value". */
static void help_children(faucet_buf *b, const cli_ref_command *g)
{
	PUTS("\nSubcommands:\n");
	for (size_t i = 0; i < cli_reference_ncommands; i++) {
		const cli_ref_command *c = &cli_reference_commands[i];
		const char *child = child_of(c, g->name);
		size_t start = b->len;

		if (child == NULL)
			continue;
		PRINTF("  %s%s%s", child, c->synopsis[0] != '\0' ? " " : "", c->synopsis);
		if (b->len - start + 1 > GROUP_COLUMN) {
			PUTS("\n");
			start = b->len;
		}
		PRINTF("%*s", (int)(GROUP_COLUMN - (b->len - start)), "");
		wrap(b, c->summary, GROUP_COLUMN, HELP_WIDTH, GROUP_COLUMN);
	}
}

/* The help of row `c`, or of its variant `v` (or NULL). */
static void help_command(faucet_buf *b, const cli_ref_command *c, const cli_ref_variant *v)
{
	const char *help = v != NULL ? v->help : c->help;

	usage_line(b, "usage: ", c->name, v != NULL ? v->synopsis : c->synopsis);
	if (v == NULL && !is_group(c)) {
		/* its other forms, each with a help of its own */
		for (const cli_ref_variant *o = c->variants; o != NULL && o->when != NULL; o++)
			usage_line(b, "       ", c->name, o->synopsis);
		for (size_t i = 0; i < cli_reference_ncommands; i++) {
			const cli_ref_command *r = &cli_reference_commands[i];

			if (child_of(r, c->name) != NULL)
				usage_line(b, "       ", r->name, r->synopsis);
		}
	}
	if (help != NULL) {
		PUTS("\n");
		PUTS(help);
	} else if (!is_group(c)) {
		PRINTF("\n%c%s.\n", toupper((unsigned char)c->summary[0]), c->summary + 1);
	}
	if (is_group(c))
		help_children(b, c);
	help_flags(b, c->flags, v != NULL ? v->flags : NULL);
	help_globals(b);
}

int cli_reference_help(faucet_buf *b, const char *command)
{
	const cli_ref_command *c = cli_reference_find(command);
	const cli_ref_variant *v = NULL;

	for (size_t i = 0; c == NULL && i < cli_reference_ncommands; i++) {
		const cli_ref_command *r = &cli_reference_commands[i];
		size_t n = strlen(r->name);

		if (n == 0 || strncmp(command, r->name, n) != 0 || command[n] != ' ')
			continue;
		for (v = r->variants; v != NULL && v->when != NULL; v++) {
			if (strcmp(command + n + 1, v->when) == 0)
				break;
		}
		if (v != NULL && v->when != NULL)
			c = r;
		else
			v = NULL;
	}
	if (c == NULL)
		return -1;
	if (c->name[0] == '\0')
		cli_reference_usage(b);
	else
		help_command(b, c, v);
	PUTS("\nStore selection (the first given wins):\n");
	PUTS(store_selection_prose);
	PUTS("\n");
	help_stores(b);
	PUTS("\n");
	PUTS(store_yaml_prose);
	PUTS("\nEncryption at rest:\n");
	PUTS(encryption_prose);
	help_flag(b, global_flag("encryption-key-env"), 29);
	help_flag(b, global_flag("previous-key-env"), 29);
	return 0;
}

/* The man page's "Store URLs and YAML" subsection. */
static void man_stores(faucet_buf *b)
{
	const faucet_backend_info *be;

	PUTS(".SS Store URLs and YAML\n"
	     "The YAML form is\n"
	     ".BR \"state: {type: \" \\fIT\\fB \", config: {\" ... }} .\n");
	for (size_t i = 0; (be = faucet_store_backend_info(i)) != NULL; i++) {
		faucet_buf url = FAUCET_BUF_INIT;

		backend_url(&url, be);
		PUTS(".TP\n.B ");
		roff_text(b, url.ptr ? url.ptr : "");
		if (url.failed)
			b->failed = 1;
		faucet__buf_dispose(&url);
		PRINTF("\n.BR \"type: %s\" %s\n", be->type, be->fields[0].name != NULL ? ";" : ".");
		for (const faucet_backend_field *f = be->fields; f->name != NULL; f++) {
			faucet_buf note = FAUCET_BUF_INIT;

			const char *end = f[1].name != NULL ? "," : ".";

			field_note(&note, f, " ");
			if (note.ptr == NULL) {
				PRINTF(".BR %s %s\n", f->name, end);
			} else {
				PRINTF(".B %s\n", f->name);
				roff_text(b, note.ptr + 1);
				PRINTF("%s\n", end);
			}
			if (note.failed)
				b->failed = 1;
			faucet__buf_dispose(&note);
		}
		if (be->doc != NULL) {
			roff_text(b, be->doc);
			PUTS("\n");
		}
	}
}

static void man_env(faucet_buf *b, int given_to)
{
	for (const cli_ref_env *e = cli_reference_env; e->name != NULL; e++) {
		if (e->given_to != given_to)
			continue;
		PRINTF(".TP\n.B %s\n", e->name);
		PUTS(e->desc);
		PUTS(".\n");
	}
}

void cli_reference_man(faucet_buf *b)
{
	PUTS(".\\\" faucet(1) - the durable state layer of faucet pipelines.\n"
	     ".\\\" Generated by `faucet help --man` from src/cli/reference.c and\n"
	     ".\\\" src/cli/man_text.inc; do not edit (scripts/update-man.sh rewrites it).\n");
	PRINTF(".TH FAUCET 1 \"%s\" \"faucet %s\" \"User Commands\"\n", MAN_DATE,
	       faucet_version());
	PUTS(".SH NAME\n"
	     "faucet \\- inspect, move, repair and back-fill the durable state of faucet "
	     "pipelines\n.SH SYNOPSIS\n");
	for (size_t i = 0; i < cli_reference_ncommands; i++) {
		const cli_ref_command *c = &cli_reference_commands[i];

		if (c->name[0] == '\0' || is_group(c))
			continue;
		PUTS(".B faucet\n.RI [ OPTIONS ]\n");
		PRINTF(".B %s\n", c->name);
		if (c->synopsis[0] != '\0') {
			roff_synopsis(b, c->synopsis);
			PUTS("\n");
		}
		PUTS(".br\n");
	}
	PUTS(man_description);
	PUTS(".SH STORE SELECTION\nThe first of these that is given wins:\n");
	roff_prose(b, store_selection_prose);
	man_stores(b);
	PUTS(".PP\n");
	roff_prose(b, store_yaml_prose);
	PUTS(".SH OPTIONS\nAccepted before the command or anywhere among its arguments.\n");
	for (const cli_ref_flag *f = cli_reference_globals; f->long_name != NULL; f++)
		man_flag(b, f);
	man_flag(b, version_flag());
	PUTS(".SH COMMANDS\n");
	for (size_t i = 0; i < cli_reference_ncommands; i++) {
		const cli_ref_command *c = &cli_reference_commands[i];

		if (c->name[0] == '\0' || is_group(c))
			continue;
		PRINTF(".TP\n\\fB%s\\fR", c->name);
		if (c->synopsis[0] != '\0') {
			PUTS(" ");
			roff_synopsis(b, c->synopsis);
		}
		PUTS("\n");
		if (c->help != NULL)
			roff_prose(b, c->help);
		else
			roff_sentence(b, c->summary, NULL);
		for (const cli_ref_variant *v = c->variants; v != NULL && v->when != NULL; v++) {
			PRINTF(".IP\n\\fB%s\\fR ", c->name);
			roff_synopsis(b, v->synopsis);
			PUTS("\n.br\n");
			roff_prose(b, v->help);
		}
		if (c->flags != NULL && c->flags[0].long_name != NULL) {
			PUTS(".RS\n");
			for (const cli_ref_flag *f = c->flags; f->long_name != NULL; f++)
				man_flag(b, f);
			PUTS(".RE\n");
		}
	}
	PUTS(".SH ENCRYPTION\n");
	roff_prose(b, encryption_prose);
	PUTS(man_exit);
	PUTS(".SH ENVIRONMENT\nRead by faucet:\n");
	man_env(b, 0);
	PUTS(".PP\nGiven to the command of\n.BR \"faucet run\" ,\n"
	     "with the store\n.RB ( FAUCET_CONFIG \" or \" FAUCET_STATE ,\n"
	     "the key variables' names):\n");
	man_env(b, 1);
	PUTS(".PP\nGiven to each backfill unit, with the store as above:\n");
	man_env(b, 2);
	PUTS(man_examples);
}

/* ---- completion --------------------------------------------------------- */

/* The store URL schemes offered after --state and --to, from the table of
 * backends, space-separated.  Returns a static buffer. */
static const char *url_schemes(void)
{
	static char text[512];
	const faucet_backend_info *be;
	size_t n = 0;

	if (text[0] != '\0')
		return text;
	for (size_t i = 0; (be = faucet_store_backend_info(i)) != NULL; i++) {
		for (const char *const *sc = be->schemes; *sc != NULL; sc++) {
			int w = snprintf(text + n, sizeof(text) - n, "%s%s", n ? " " : "", *sc);

			if (w < 0 || (size_t)w >= sizeof(text) - n) {
				text[n] = '\0';
				return text;
			}
			n += (size_t)w;
		}
	}
	return text;
}

/* Every flag of the table taking a value (not the store-selecting globals),
 * each once: what the scripts skip with its value when finding the words. */
static void value_flags(faucet_buf *b, const char *sep)
{
	const char *seen[128];
	size_t n = 0;

	for (size_t i = 0; i < cli_reference_ncommands; i++) {
		const cli_ref_flag *f = cli_reference_commands[i].flags;

		for (; f != NULL && f->long_name != NULL; f++) {
			size_t k;

			if (f->arg == NULL || f->optional_value)
				continue;
			for (k = 0; k < n && strcmp(seen[k], f->long_name) != 0; k++)
				;
			if (k < n || n == sizeof(seen) / sizeof(seen[0]))
				continue;
			seen[n++] = f->long_name;
			PRINTF("%s--%s", n > 1 ? sep : "", f->long_name);
			if (f->short_name != 0)
				PRINTF("%s-%c", sep, f->short_name);
		}
	}
}

/* The globals selecting the store, which the scripts hand on to `state
 * list` when completing keys: with a value, or with "=*" after each. */
static void store_flags(faucet_buf *b, const char *sep, int eq)
{
	int first = 1;

	for (const cli_ref_flag *f = cli_reference_globals; f->long_name != NULL; f++) {
		if (f->arg == NULL)
			continue;
		if (eq) {
			PRINTF("%s%s--%s=*%s", first ? "" : sep, eq == 2 ? "'" : "", f->long_name,
			       eq == 2 ? "'" : "");
		} else {
			if (f->short_name != 0)
				PRINTF("%s-%c", first ? "" : sep, f->short_name), first = 0;
			PRINTF("%s--%s", first ? "" : sep, f->long_name);
		}
		first = 0;
	}
}

/* The flags (long names, and -X for a short one) of `kind` values. */
static void flags_of_value(faucet_buf *b, const char *sep, int kind)
{
	int first = 1;
	const char *seen[32];
	size_t n = 0;

	for (size_t i = 0; i <= cli_reference_ncommands; i++) {
		const cli_ref_flag *f = i == cli_reference_ncommands ? cli_reference_globals
								     : cli_reference_commands[i].flags;

		for (; f != NULL && f->long_name != NULL; f++) {
			size_t k;

			if (f->arg == NULL || f->value != kind)
				continue;
			for (k = 0; k < n && strcmp(seen[k], f->long_name) != 0; k++)
				;
			if (k < n || n == sizeof(seen) / sizeof(seen[0]))
				continue;
			seen[n++] = f->long_name;
			if (f->short_name != 0)
				PRINTF("%s-%c", first ? "" : sep, f->short_name), first = 0;
			PRINTF("%s--%s", first ? "" : sep, f->long_name);
			first = 0;
		}
	}
}

static void flag_words(faucet_buf *b, const cli_ref_flag *f)
{
	int first = 1;

	for (; f != NULL && f->long_name != NULL; f++) {
		if (f->short_name != 0 && f->value == CLI_VALUE_FILE) /* -o FILE */
			PRINTF("%s-%c", first ? "" : " ", f->short_name), first = 0;
		PRINTF("%s--%s", first ? "" : " ", f->long_name);
		first = 0;
	}
}

static void global_words(faucet_buf *b)
{
	for (const cli_ref_flag *f = cli_reference_globals; f->long_name != NULL; f++)
		PRINTF("%s--%s", f == cli_reference_globals ? "" : " ", f->long_name);
}

static void top_words(faucet_buf *b)
{
	for (size_t i = 0; i < cli_reference_ncommands; i++) {
		if (is_top(&cli_reference_commands[i]))
			PRINTF("%s ", cli_reference_commands[i].name);
	}
	PUTS("help");
}

static const char bash_head[] =
	"# bash completion for faucet (from `faucet completion bash`).\n"
	"# Install: faucet completion bash > /etc/bash_completion.d/faucet, or\n"
	"# source <(faucet completion bash) in ~/.bashrc.\n"
	"_faucet_words() {\n"
	"\t# The command line up to the cursor, split at blanks only: bash also\n"
	"\t# splits words at ':', which every state key and store URL contains.\n"
	"\tlocal line=${COMP_LINE:0:COMP_POINT}\n"
	"\tread -ra _faucet_w <<< \"$line\"\n"
	"\tif [[ -z $line || $line == *[[:blank:]] ]]; then\n"
	"\t\t_faucet_w+=(\"\")\n"
	"\tfi\n"
	"}\n"
	"\n"
	"_faucet_reply() { # _faucet_reply CUR WORD...: the words that start with CUR\n"
	"\tlocal cur=$1 w\n"
	"\tshift\n"
	"\tCOMPREPLY=()\n"
	"\tfor w in \"$@\"; do\n"
	"\t\t[[ $w == \"$cur\"* ]] && COMPREPLY+=(\"$w\")\n"
	"\tdone\n"
	"}\n"
	"\n"
	"_faucet_trim_colons() { # bash replaces only the text after the last ':'\n"
	"\tlocal cur=$1\n"
	"\tif [[ $cur == *:* && $COMP_WORDBREAKS == *:* ]]; then\n"
	"\t\tlocal prefix=${cur%\"${cur##*:}\"} i\n"
	"\t\tfor i in \"${!COMPREPLY[@]}\"; do\n"
	"\t\t\tCOMPREPLY[i]=${COMPREPLY[i]#\"$prefix\"}\n"
	"\t\tdone\n"
	"\tfi\n"
	"}\n"
	"\n"
	"_faucet_keys() { # the store's keys starting with CUR\n"
	"\tlocal IFS=$'\\n'\n"
	"\tCOMPREPLY=($(faucet \"${store[@]}\" state list --prefix=\"$1\" 2>/dev/null))\n"
	"\t_faucet_trim_colons \"$1\"\n"
	"}\n"
	"\n"
	"_faucet() {\n"
	"\tlocal _faucet_w cur prev cmd=\"\" sub=\"\" i store=()\n"
	"\t_faucet_words\n"
	"\tlocal n=${#_faucet_w[@]}\n"
	"\tcur=${_faucet_w[n-1]}\n"
	"\tprev=\"\"\n"
	"\t((n > 1)) && prev=${_faucet_w[n-2]}\n"
	"\tfor ((i = 1; i < n - 1; i++)); do\n"
	"\t\tcase ${_faucet_w[i]} in\n";

static void bash_children(faucet_buf *b, const cli_ref_command *p)
{
	PUTS("\t\tcase $sub in\n");
	for (size_t i = 0; i < cli_reference_ncommands; i++) {
		const cli_ref_command *c = &cli_reference_commands[i];
		const char *child = child_of(c, p->name);

		if (child == NULL)
			continue;
		PRINTF("\t\t%s)\n", child);
		if (c->complete_keys)
			PUTS("\t\t\t[[ $cur != -* ]] && { _faucet_keys \"$cur\"; return; }\n");
		PUTS("\t\t\tflags=\"");
		flag_words(b, c->flags);
		PUTS("\"\n\t\t\t;;\n");
	}
	PUTS("\t\tesac\n");
}

/* `--format) _faucet_reply "$cur" faucet meltano` for each flag of words
 * (the first row's words for a name). */
static void words_arms(faucet_buf *b)
{
	const char *seen[16];
	size_t n = 0;

	for (size_t i = 0; i < cli_reference_ncommands; i++) {
		const cli_ref_flag *f = cli_reference_commands[i].flags;

		for (; f != NULL && f->long_name != NULL; f++) {
			size_t k;

			if (f->value != CLI_VALUE_WORDS || f->words == NULL)
				continue;
			for (k = 0; k < n && strcmp(seen[k], f->long_name) != 0; k++)
				;
			if (k < n || n == sizeof(seen) / sizeof(seen[0]))
				continue;
			seen[n++] = f->long_name;
			PRINTF("\t--%s)\n\t\t_faucet_reply \"$cur\" %s\n\t\treturn\n\t\t;;\n",
			       f->long_name, f->words);
		}
	}
}

static void bash_script(faucet_buf *b)
{
	PUTS(bash_head);
	PUTS("\t\t");
	store_flags(b, " | ", 0);
	PUTS(")\n\t\t\tstore+=(\"${_faucet_w[i]}\" \"${_faucet_w[i + 1]}\")\n"
	     "\t\t\t((i++))\n\t\t\tcontinue\n\t\t\t;;\n\t\t");
	store_flags(b, " | ", 1);
	PUTS(")\n\t\t\tstore+=(\"${_faucet_w[i]}\")\n\t\t\tcontinue\n\t\t\t;;\n\t\t");
	value_flags(b, " | ");
	PUTS(")\n\t\t\t((i++))\n\t\t\tcontinue\n\t\t\t;;\n"
	     "\t\t-*) continue ;;\n\t\tesac\n"
	     "\t\tif [[ -z $cmd ]]; then\n\t\t\tcmd=${_faucet_w[i]}\n"
	     "\t\telif [[ -z $sub ]]; then\n\t\t\tsub=${_faucet_w[i]}\n\t\tfi\n\tdone\n"
	     "\tlocal globals=\"");
	global_words(b);
	PUTS("\"\n\tcase $prev in\n\t");
	flags_of_value(b, " | ", CLI_VALUE_URL);
	PRINTF(")\n\t\t_faucet_reply \"$cur\" %s\n\t\t_faucet_trim_colons \"$cur\"\n"
	       "\t\treturn\n\t\t;;\n\t", url_schemes());
	flags_of_value(b, " | ", CLI_VALUE_FILE);
	PUTS(")\n\t\tCOMPREPLY=($(compgen -f -- \"$cur\"))\n\t\treturn\n\t\t;;\n\t");
	flags_of_value(b, " | ", CLI_VALUE_VAR);
	PUTS(")\n\t\tCOMPREPLY=($(compgen -v -- \"$cur\"))\n\t\treturn\n\t\t;;\n\t");
	flags_of_value(b, " | ", CLI_VALUE_ZONE);
	PUTS(")\n\t\tlocal z=/usr/share/zoneinfo\n"
	     "\t\tCOMPREPLY=($(cd \"$z\" 2>/dev/null && compgen -f -- \"$cur\"))\n"
	     "\t\treturn\n\t\t;;\n");
	words_arms(b);
	PUTS("\tesac\n\tif [[ -z $cmd ]]; then\n\t\t_faucet_reply \"$cur\" ");
	top_words(b);
	PUTS(" --version $globals\n\t\treturn\n\tfi\n\tlocal flags=\"\"\n\tcase $cmd in\n");
	for (size_t i = 0; i < cli_reference_ncommands; i++) {
		const cli_ref_command *c = &cli_reference_commands[i];

		if (!is_top(c))
			continue;
		PRINTF("\t%s)\n", c->name);
		if (c->subcommands != NULL) {
			PRINTF("\t\tif [[ -z $sub && $cur != -* ]]; then\n"
			       "\t\t\t_faucet_reply \"$cur\" %s\n\t\t\treturn\n\t\tfi\n",
			       c->subcommands);
		}
		PUTS("\t\tflags=\"");
		flag_words(b, c->flags);
		PUTS("\"\n");
		if (c->subcommands != NULL && !is_group(c) && strcmp(c->name, "completion") == 0)
			PUTS("\t\treturn\n");
		else
			bash_children(b, c);
		PUTS("\t\t;;\n");
	}
	PUTS("\tesac\n\t_faucet_reply \"$cur\" $flags $globals\n}\n"
	     "complete -o default -F _faucet faucet\n");
}

static void zsh_script(faucet_buf *b)
{
	PUTS("#compdef faucet\n"
	     "# zsh completion for faucet (from `faucet completion zsh`).  Install: put it\n"
	     "# in a directory of $fpath as _faucet, or: source <(faucet completion zsh).\n"
	     "_faucet() {\n"
	     "\tlocal cur=${words[CURRENT]} prev=${words[CURRENT-1]} cmd= sub= i\n"
	     "\tlocal -a store flags\n"
	     "\tfor ((i = 2; i < CURRENT; i++)); do\n"
	     "\t\tcase ${words[i]} in\n\t\t");
	store_flags(b, "|", 0);
	PUTS(")\n\t\t\tstore+=(${words[i]} ${words[i+1]}); ((i++)); continue ;;\n\t\t");
	store_flags(b, "|", 1);
	PUTS(")\n\t\t\tstore+=(${words[i]}); continue ;;\n\t\t");
	value_flags(b, "|");
	PUTS(")\n\t\t\t((i++)); continue ;;\n"
	     "\t\t-*) continue ;;\n\t\tesac\n"
	     "\t\tif [[ -z $cmd ]]; then cmd=${words[i]}\n"
	     "\t\telif [[ -z $sub ]]; then sub=${words[i]}\n\t\tfi\n\tdone\n"
	     "\tlocal -a globals\n\tglobals=(");
	global_words(b);
	PUTS(")\n\tcase $prev in\n\t");
	flags_of_value(b, "|", CLI_VALUE_URL);
	PRINTF(") compadd -S '' -- %s; return ;;\n\t", url_schemes());
	flags_of_value(b, "|", CLI_VALUE_FILE);
	PUTS(") _files; return ;;\n\t");
	flags_of_value(b, "|", CLI_VALUE_VAR);
	PUTS(") _parameters; return ;;\n\t");
	flags_of_value(b, "|", CLI_VALUE_ZONE);
	PUTS(") _files -W /usr/share/zoneinfo; return ;;\n"
	     "\t--format) compadd -- faucet meltano; return ;;\n"
	     "\tesac\n\tif [[ -z $cmd ]]; then\n\t\tcompadd -- ");
	top_words(b);
	PUTS(" --version $globals\n\t\treturn\n\tfi\n\tcase $cmd in\n");
	for (size_t i = 0; i < cli_reference_ncommands; i++) {
		const cli_ref_command *c = &cli_reference_commands[i];

		if (!is_top(c))
			continue;
		PRINTF("\t%s)\n", c->name);
		if (c->subcommands != NULL)
			PRINTF("\t\tif [[ -z $sub && $cur != -* ]]; then compadd -- %s; return; fi\n",
			       c->subcommands);
		if (strcmp(c->name, "completion") == 0) {
			PUTS("\t\treturn ;;\n");
			continue;
		}
		PUTS("\t\tflags=(");
		flag_words(b, c->flags);
		PUTS(")\n\t\tcase $sub in\n");
		for (size_t k = 0; k < cli_reference_ncommands; k++) {
			const cli_ref_command *r = &cli_reference_commands[k];
			const char *child = child_of(r, c->name);

			if (child == NULL)
				continue;
			PRINTF("\t\t%s)\n", child);
			if (r->complete_keys)
				PUTS("\t\t\tif [[ $cur != -* ]]; then\n"
				     "\t\t\t\tcompadd -- ${(f)\"$(faucet $store state list "
				     "--prefix=$cur 2>/dev/null)\"}\n\t\t\t\treturn\n\t\t\tfi\n");
			PUTS("\t\t\tflags=(");
			flag_words(b, r->flags);
			PUTS(") ;;\n");
		}
		PUTS("\t\tesac ;;\n");
	}
	PUTS("\tesac\n\tcompadd -- $flags $globals\n}\n"
	     "if [[ $zsh_eval_context[-1] == loadautofunc ]]; then\n"
	     "\t_faucet \"$@\"\nelse\n\tcompdef _faucet faucet\nfi\n");
}

/* A description in fish's single quotes. */
static void fish_quoted(faucet_buf *b, const char *s)
{
	(void)faucet__buf_putc(b, '\'');
	for (; *s != '\0'; s++) {
		if (*s == '\'' || *s == '\\')
			(void)faucet__buf_putc(b, '\\');
		(void)faucet__buf_putc(b, *s);
	}
	(void)faucet__buf_putc(b, '\'');
}

static void fish_flag(faucet_buf *b, const char *condition, const cli_ref_flag *f)
{
	PUTS("complete -c faucet");
	if (condition != NULL)
		PRINTF(" -n \"%s\"", condition);
	if (f->short_name != 0)
		PRINTF(" -s %c", f->short_name);
	PRINTF(" -l %s", f->long_name);
	if (f->arg != NULL && !f->optional_value)
		PUTS(" -r");
	if (f->value == CLI_VALUE_FILE)
		PUTS(" -F");
	if (f->value == CLI_VALUE_WORDS && f->words != NULL)
		PRINTF(" -a '%s'", f->words);
	if (f->value == CLI_VALUE_URL) {
		PRINTF(" -a '%s'", url_schemes());
	}
	PUTS(" -d ");
	fish_quoted(b, f->desc);
	PUTS("\n");
}

static void fish_script(faucet_buf *b)
{
	PUTS("# fish completion for faucet (from `faucet completion fish`).  Install:\n"
	     "# faucet completion fish > ~/.config/fish/completions/faucet.fish\n"
	     "function __faucet_store\n"
	     "\t# The store options already on the command line, for listing keys.\n"
	     "\tset -l tokens (commandline -opc)\n"
	     "\tset -l i 2\n"
	     "\twhile test $i -le (count $tokens)\n"
	     "\t\tswitch $tokens[$i]\n\t\t\tcase ");
	store_flags(b, " ", 0);
	PUTS("\n\t\t\t\tset -l j (math $i + 1)\n"
	     "\t\t\t\tif test $j -le (count $tokens)\n"
	     "\t\t\t\t\techo $tokens[$i]\n\t\t\t\t\techo $tokens[$j]\n\t\t\t\tend\n"
	     "\t\t\t\tset i $j\n\t\t\tcase ");
	store_flags(b, " ", 2);
	PUTS("\n\t\t\t\techo $tokens[$i]\n\t\tend\n\t\tset i (math $i + 1)\n\tend\nend\n"
	     "function __faucet_keys\n"
	     "\tfaucet (__faucet_store) state list --prefix=(commandline -ct) 2>/dev/null\n"
	     "end\nset -l cmds ");
	top_words(b);
	PUTS("\ncomplete -c faucet -f\n");
	for (const cli_ref_flag *f = cli_reference_globals; f->long_name != NULL; f++)
		fish_flag(b, NULL, f);
	fish_flag(b, NULL, version_flag());
	PUTS("complete -c faucet -n \"not __fish_seen_subcommand_from $cmds\" -a \"$cmds\"\n");
	for (size_t i = 0; i < cli_reference_ncommands; i++) {
		const cli_ref_command *c = &cli_reference_commands[i];
		char cond[256], parent[32];
		const char *child;

		if (c->name[0] == '\0')
			continue;
		if (split_name(c->name, parent, sizeof(parent), &child))
			(void)snprintf(cond, sizeof(cond),
				       "__fish_seen_subcommand_from %s; and __fish_seen_subcommand_from %s",
				       parent, child);
		else
			(void)snprintf(cond, sizeof(cond), "__fish_seen_subcommand_from %s", c->name);
		if (c->subcommands != NULL)
			PRINTF("complete -c faucet -n \"__fish_seen_subcommand_from %s; and not "
			       "__fish_seen_subcommand_from %s\" -a '%s'\n",
			       c->name, c->subcommands, c->subcommands);
		if (c->complete_keys)
			PRINTF("complete -c faucet -n \"%s\" -a '(__faucet_keys)'\n", cond);
		for (const cli_ref_flag *f = c->flags; f != NULL && f->long_name != NULL; f++)
			fish_flag(b, cond, f);
	}
}

int cli_reference_completion(faucet_buf *b, const char *shell)
{
	if (strcmp(shell, "bash") == 0)
		bash_script(b);
	else if (strcmp(shell, "zsh") == 0)
		zsh_script(b);
	else if (strcmp(shell, "fish") == 0)
		fish_script(b);
	else
		return -1;
	return 0;
}

/* ---- the dump (an empty field is "-") and the check --------------------------------------------- */

void cli_reference_dump(faucet_buf *b)
{
	for (size_t i = 0; i < cli_reference_ncommands; i++) {
		const cli_ref_command *c = &cli_reference_commands[i];

		PRINTF("command\t%s\t%s\n", c->name, c->synopsis);
		for (const cli_ref_flag *f = c->flags; f != NULL && f->long_name != NULL; f++)
			PRINTF("flag\t%s\t--%s\t%s\t%s\n", c->name, f->long_name,
			       f->arg == NULL ? "-" : f->optional_value ? "=" : f->arg,
			       f->with == NULL ? "-" : f->with);
		for (const cli_ref_variant *v = c->variants; v != NULL && v->when != NULL; v++)
			PRINTF("variant\t%s\t%s\t%s\t%s\n", c->name, v->when, v->synopsis,
			       v->flags);
	}
	for (const cli_ref_flag *f = cli_reference_globals; f->long_name != NULL; f++)
		PRINTF("global\t--%s\t%s\n", f->long_name, f->arg == NULL ? "-" : f->arg);
	for (const cli_ref_env *e = cli_reference_env; e->name != NULL; e++)
		PRINTF("env\t%s\n", e->name);
}

static int same_flag(const cli_option *o, const cli_ref_flag *f)
{
	return f != NULL && f->short_name == o->short_name &&
	       (f->arg != NULL && !f->optional_value) == (o->takes_value != 0);
}

int cli_reference_check(const char *command, const cli_option *opts, const cli_option *globals)
{
	const cli_ref_command *c = cli_reference_find(command);
	int bad = 0;

	if (c != NULL && c->parser != NULL)
		c = cli_reference_find(c->parser);

	if (c == NULL) {
		(void)fprintf(stderr, "faucet: internal error: src/cli/reference.c has no row "
				      "for '%s'\n", command);
		return 1;
	}
	for (const cli_option *o = opts; o != NULL && o->long_name != NULL; o++) {
		if (!same_flag(o, cli_reference_flag(c, o->long_name))) {
			(void)fprintf(stderr, "faucet: internal error: the row of '%s' in "
					      "src/cli/reference.c lacks --%s as its parser takes it\n",
				      command, o->long_name);
			bad = 1;
		}
	}
	for (const cli_option *o = globals; o->long_name != NULL; o++) {
		const cli_ref_flag *f = global_flag(o->long_name);

		if (!same_flag(o, f->long_name != NULL ? f : NULL)) {
			(void)fprintf(stderr, "faucet: internal error: src/cli/reference.c's "
					      "global options lack --%s as the parser takes it\n",
				      o->long_name);
			bad = 1;
		}
	}
	for (const cli_ref_flag *f = cli_reference_globals; f->long_name != NULL; f++) {
		const cli_option *o = globals;

		while (o->long_name != NULL && strcmp(f->long_name, o->long_name) != 0)
			o++;
		if (o->long_name == NULL) {
			(void)fprintf(stderr, "faucet: internal error: src/cli/reference.c has "
					      "the global option --%s, which the parser lacks\n",
				      f->long_name);
			bad = 1;
		}
	}
	return bad;
}
