/*
 * args.c - scanning a command's arguments.
 *
 * A small scanner of our own rather than getopt_long: the global options
 * must be recognised inside every subcommand, and a JSON value such as -1
 * must reach `state put` as an argument, not as an unknown option.  When an
 * unknown option is reported, only its name is echoed - never the text
 * after '=' - so a mistyped `--encryption-key=...` does not print a secret.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "cli.h"
#include "reference.h"

enum {
	GLOBAL_STATE = 1,
	GLOBAL_CONFIG,
	GLOBAL_KEY_ENV,
	GLOBAL_PREV_KEY_ENV,
	GLOBAL_JSON,
	GLOBAL_QUIET,
	GLOBAL_HELP
};

static const cli_option global_options[] = {
	{"state", 0, 1, GLOBAL_STATE},
	{"config", 'c', 1, GLOBAL_CONFIG},
	{"encryption-key-env", 0, 1, GLOBAL_KEY_ENV},
	{"previous-key-env", 0, 1, GLOBAL_PREV_KEY_ENV},
	{"json", 0, 0, GLOBAL_JSON},
	{"quiet", 'q', 0, GLOBAL_QUIET},
	{"help", 'h', 0, GLOBAL_HELP},
	{NULL, 0, 0, 0},
};

/* The command and options of the scan that last saw --help: the help it
 * prints is checked against the reference table (cli_args_help_check). */
static const char *help_command;
static const cli_option *help_opts;

int cli_args_help_check(void)
{
	if (help_command == NULL)
		return 0;
	return cli_reference_check(help_command, help_opts, global_options);
}

void cli_args_init(cli_args *it, cli_context *ctx, const char *command, int argc, char **argv)
{
	memset(it, 0, sizeof(*it));
	it->ctx = ctx;
	it->command = command;
	it->argc = argc;
	it->argv = argv;
	it->next = 1;
}

static const cli_option *find_long(const cli_option *opts, const char *name, size_t len)
{
	for (const cli_option *o = opts; o != NULL && o->long_name != NULL; o++) {
		if (strlen(o->long_name) == len && strncmp(o->long_name, name, len) == 0)
			return o;
	}
	return NULL;
}

static const cli_option *find_short(const cli_option *opts, char c)
{
	for (const cli_option *o = opts; o != NULL && o->long_name != NULL; o++) {
		if (o->short_name != 0 && o->short_name == c)
			return o;
	}
	return NULL;
}

static int looks_like_number(const char *arg)
{
	return arg[0] == '-' &&
	       (isdigit((unsigned char)arg[1]) || (arg[1] == '.' && isdigit((unsigned char)arg[2])));
}

/* Apply a global option to the context; returns CLI_ARG_HELP for --help. */
static int apply_global(cli_args *it, const cli_option *o, const char *value)
{
	switch (o->id) {
	case GLOBAL_STATE: it->ctx->state_url = value; break;
	case GLOBAL_CONFIG: it->ctx->config_arg = value; break;
	case GLOBAL_KEY_ENV:
		if (*value == '\0') {
			(void)cli_usage_error(it->command, "--encryption-key-env needs the name "
							   "of an environment variable");
			return CLI_ARG_ERROR;
		}
		it->ctx->key_env = value;
		break;
	case GLOBAL_PREV_KEY_ENV:
		if (*value == '\0' || strchr(value, ',') != NULL || strchr(value, '=') != NULL) {
			(void)cli_usage_error(it->command, "--previous-key-env needs the name of an "
							   "environment variable");
			return CLI_ARG_ERROR;
		}
		if (faucet__strarray_append(&it->ctx->previous_key_envs, value) != 0) {
			(void)cli_error(CLI_EXIT_FAILED, "out of memory");
			return CLI_ARG_ERROR;
		}
		break;
	case GLOBAL_JSON: it->ctx->json = 1; break;
	case GLOBAL_QUIET: it->ctx->quiet = 1; break;
	default: return CLI_ARG_HELP;
	}
	return 0;
}

int cli_is_tenant_name(const char *text)
{
	return *text != '\0' && faucet_validate_key(text) == 0 && strstr(text, "::") == NULL;
}

int cli_tenant_check(const char *command, const char *text, const char **tenant)
{
	if (!cli_is_tenant_name(text))
		return cli_usage_error(command, "--tenant '%s' is not a tenant name (one key "
				       "segment: [A-Za-z0-9_.:/-], no '::')", text);
	*tenant = text;
	return 0;
}

/* " (did you mean --NAME?)" for the option nearest to `name` (the text
 * after "--", up to any '='), among the command's and the global ones. */
static void option_hint(const cli_option *opts, const char *name, char *out, size_t size)
{
	const char *names[64];
	char word[48];
	size_t n = 0, len = strcspn(name, "=");
	const char *best;

	if (len >= sizeof(word))
		return;
	memcpy(word, name, len);
	word[len] = '\0';
	for (const cli_option *o = opts; o != NULL && o->long_name != NULL && n < 48; o++)
		names[n++] = o->long_name;
	for (const cli_option *o = global_options; o->long_name != NULL && n < 64; o++)
		names[n++] = o->long_name;
	best = faucet__suggest(word, names, n);
	if (best != NULL)
		(void)snprintf(out, size, " (did you mean --%s?)", best);
}

int cli_args_next(cli_args *it, const cli_option *opts, const char **value)
{
	for (;;) {
		const char *arg, *inline_value = NULL;
		const cli_option *o;
		int is_global = 0;
		char shown[64];

		*value = NULL;
		if (it->next >= it->argc)
			return CLI_ARG_END;
		arg = it->argv[it->next++];
		if (it->positional_only || arg[0] != '-' || arg[1] == '\0' || looks_like_number(arg)) {
			*value = arg;
			return CLI_ARG_POSITIONAL;
		}
		if (strcmp(arg, "--") == 0) {
			it->positional_only = 1;
			continue;
		}
		if (arg[1] == '-') {
			const char *name = arg + 2, *eq = strchr(name, '=');
			size_t len = eq ? (size_t)(eq - name) : strlen(name);

			o = find_long(opts, name, len);
			if (o == NULL && (o = find_long(global_options, name, len)) != NULL)
				is_global = 1;
			if (eq != NULL)
				inline_value = eq + 1;
			(void)snprintf(shown, sizeof(shown), "--%.*s", (int)(len < 40 ? len : 40), name);
		} else {
			o = find_short(opts, arg[1]);
			if (o == NULL && (o = find_short(global_options, arg[1])) != NULL)
				is_global = 1;
			if (arg[2] != '\0')
				inline_value = arg + 2;
			(void)snprintf(shown, sizeof(shown), "-%c", arg[1]);
		}
		if (o == NULL) {
			char hint[80] = "";

			if (arg[1] == '-')
				option_hint(opts, arg + 2, hint, sizeof(hint));
			(void)cli_usage_error(it->command, "unknown option '%s'%s", shown, hint);
			return CLI_ARG_ERROR;
		}
		if (o->takes_value && inline_value == NULL) {
			if (it->next >= it->argc) {
				(void)cli_usage_error(it->command, "option '%s' needs a value", shown);
				return CLI_ARG_ERROR;
			}
			inline_value = it->argv[it->next++];
		} else if (!o->takes_value && inline_value != NULL) {
			(void)cli_usage_error(it->command, "option '%s' takes no value", shown);
			return CLI_ARG_ERROR;
		}
		if (!is_global) {
			*value = inline_value;
			return o->id;
		}
		{
			int rc = apply_global(it, o, inline_value);

			if (rc == CLI_ARG_HELP) {
				help_command = it->command;
				help_opts = opts;
			}
			if (rc != 0)
				return rc;
		}
	}
}

/* A duration's value: 0, or -1 for text that is not a duration, -2 for one
 * too long to count in milliseconds (a digit string past 2^64, or one that
 * overflows when multiplied by its unit). */
static int parse_duration(const char *text, unsigned long long *out)
{
	static const struct {
		const char *unit;
		unsigned long long ms;
	} units[] = {{"ms", 1}, {"s", 1000}, {"", 1000}, {"m", 60000}, {"h", 3600000}};
	unsigned long long n;
	char *end;

	if (!isdigit((unsigned char)text[0]))
		return -1; /* empty, negative, "+5", " 5" */
	errno = 0;
	n = strtoull(text, &end, 10);
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].unit) != 0)
			continue;
		if (errno == ERANGE || n > ULLONG_MAX / units[i].ms)
			return -2;
		if (errno != 0)
			return -1;
		*out = n * units[i].ms;
		return 0;
	}
	return -1;
}

/* A limit the way a person would type it ("720h", "1s", "500ms"), and in
 * days when it is whole days. */
static void limit_text(char *buf, size_t size, unsigned long long ms)
{
	if (ms % 3600000 == 0 && ms >= 86400000 && ms % 86400000 == 0)
		(void)snprintf(buf, size, "%lluh (%llu day%s)", ms / 3600000, ms / 86400000,
			       ms == 86400000 ? "" : "s");
	else if (ms % 3600000 == 0)
		(void)snprintf(buf, size, "%lluh", ms / 3600000);
	else if (ms % 60000 == 0)
		(void)snprintf(buf, size, "%llum", ms / 60000);
	else if (ms % 1000 == 0)
		(void)snprintf(buf, size, "%llus", ms / 1000);
	else
		(void)snprintf(buf, size, "%llums", ms);
}

int cli_duration_option(const char *command, const char *flag, const char *text,
			unsigned long long min_ms, unsigned long long max_ms,
			unsigned long long *out)
{
	unsigned long long ms = 0;
	char lo[48], hi[48];
	int rc = parse_duration(text, &ms);

	limit_text(lo, sizeof(lo), min_ms);
	limit_text(hi, sizeof(hi), max_ms);
	if (rc == -1)
		return cli_usage_error(command, "%s '%s' is not a duration: a whole number with "
				       "ms, s, m or h (e.g. 30s), from %s to %s", flag, text, lo,
				       hi);
	if (rc == -2 || ms > max_ms)
		return cli_usage_error(command, "%s '%s' is too long: at most %s", flag, text, hi);
	if (ms < min_ms)
		return cli_usage_error(command, "%s '%s' is too short: at least %s", flag, text, lo);
	*out = ms;
	return 0;
}

void cli_take_wait(int *argc, char **argv, int *given, const char **value)
{
	int out = 1;

	for (int i = 1; i < *argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			while (i < *argc)
				argv[out++] = argv[i++];
			break;
		}
		if (strcmp(argv[i], "--wait") == 0 || strncmp(argv[i], "--wait=", 7) == 0) {
			*given = 1;
			*value = argv[i][6] == '=' ? argv[i] + 7 : NULL;
			continue;
		}
		argv[out++] = argv[i];
	}
	*argc = out;
}
