/*
 * context.c - the run's shared machinery: choosing and opening the store,
 * printing errors, reading input files.
 *
 * Store selection follows doc/design.md §5.1, first match wins: --state URL,
 * -c FILE, FAUCET_CONFIG, FAUCET_STATE, else file:.faucet-state.  An
 * encryption key never arrives as an argument: --encryption-key-env (or the
 * YAML) names an environment variable, we copy its value once, hand it to
 * the store (which keeps its own copy) and wipe ours when the run ends.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"
#include "cli.h"
#include "jsonw.h"
#include "reference.h"

#define DEFAULT_STATE_URL "file:.faucet-state"

/* The context whose --json decides whether a failure is also reported on
 * stdout, and whether a JSON document was already printed there (then the
 * failure is on stderr only, so stdout stays one JSON document). */
static const cli_context *error_ctx;
static int json_printed;
/* The store was opened to write (cli_open_store): a refusal for want of a
 * key is then a usage error, exit 2 (nothing was written). */
static int opened_to_write;

void cli_context_init(cli_context *ctx)
{
	const char *no_color = getenv("NO_COLOR");
	const char *term = getenv("TERM");

	memset(ctx, 0, sizeof(*ctx));
	error_ctx = ctx;
	/* The default of --encryption-key-env: how a backfill's units learn
	 * the store's key variable without the key in argv. */
	ctx->key_env = getenv("FAUCET_ENCRYPTION_KEY_ENV");
	if (ctx->key_env != NULL && *ctx->key_env == '\0')
		ctx->key_env = NULL;
	ctx->stdout_tty = isatty(STDOUT_FILENO);
	ctx->color = ctx->stdout_tty && (no_color == NULL || *no_color == '\0') &&
		     (term == NULL || strcmp(term, "dumb") != 0);
}

void cli_context_dispose(cli_context *ctx)
{
	faucet_config_free(ctx->config);
	faucet_config_free(ctx->to_config);
	free(ctx->to_label);
	free(ctx->selected_url);
	free(ctx->store_label);
	cli_wipe_free(ctx->key_material);
	for (size_t i = 0; i < ctx->previous_material.count; i++) {
		cli_wipe_free(ctx->previous_material.strings[i]);
		ctx->previous_material.strings[i] = NULL;
	}
	ctx->previous_material.count = 0;
	faucet_strarray_dispose(&ctx->previous_material);
	faucet_strarray_dispose(&ctx->previous_key_envs);
	free(ctx->previous_list);
	memset(ctx, 0, sizeof(*ctx));
	if (error_ctx == ctx)
		error_ctx = NULL;
}

/* ---- messages ---------------------------------------------------------- */


void cli_json_printed(void)
{
	json_printed = 1;
}

/* Length of the UTF-8 sequence at p that is a printable character, or 0
 * when the byte at p must be escaped (a C1 control, or not UTF-8). */
static size_t printable_utf8(const unsigned char *p)
{
	size_t n;
	unsigned long cp;

	if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		n = 2;
		cp = p[0] & 0x1fUL;
	} else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		n = 3;
		cp = p[0] & 0x0fUL;
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		n = 4;
		cp = p[0] & 0x07UL;
	} else {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3fUL);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp <= 0x9f))
		return 0;
	return n;
}

void cli_escape(faucet_buf *b, const char *text)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)text;

	while (*p) {
		size_t n;

		if (*p >= 0x20 && *p < 0x7f) {
			(void)faucet__buf_putc(b, (char)*p++);
			continue;
		}
		if (*p >= 0x80 && (n = printable_utf8(p)) > 0) {
			(void)faucet__buf_put(b, (const char *)p, n);
			p += n;
			continue;
		}
		switch (*p) {
		case '\n': (void)faucet__buf_puts(b, "\\n"); break;
		case '\r': (void)faucet__buf_puts(b, "\\r"); break;
		case '\t': (void)faucet__buf_puts(b, "\\t"); break;
		default:
			(void)faucet__buf_puts(b, "\\x");
			(void)faucet__buf_putc(b, hex[*p >> 4]);
			(void)faucet__buf_putc(b, hex[*p & 15]);
		}
		p++;
	}
}

void cli_json_error_object(faucet_buf *b, const char *code, const char *message, int exit_code)
{
	(void)faucet__buf_putc(b, '{');
	cli_jw_member(b, "code", 1);
	faucet__json_string(b, code);
	cli_jw_member(b, "message", 0);
	faucet__json_string(b, message);
	cli_jw_member(b, "exit", 0);
	(void)faucet__buf_printf(b, "%d", exit_code);
	(void)faucet__buf_putc(b, '}');
}

/* The error code's name for a failure the library did not report. */
static const char *code_for_exit(int exit_code)
{
	return faucet_error_name(exit_code == CLI_EXIT_USAGE ? FAUCET_EINVALID : FAUCET_ERROR);
}

/*
 * Every failure the command reports comes through here: one line on
 * stderr, "faucet: {message}", with the control characters and escape
 * sequences of whatever input it echoes made visible instead of acted on by
 * the terminal; and with --json, {"error": {"code", "message", "exit"}} on
 * stdout, unless a JSON document (a report that carries its own error) was
 * already printed there.
 */
static void report_failure(int exit_code, const char *code, const char *raw)
{
	faucet_buf line = FAUCET_BUF_INIT;
	/* No value that came from ${env:...} is ever shown: the config's
	 * references replace it (library messages name types, paths, ...). */
	char *text = faucet_config_scrub(error_ctx ? error_ctx->config : NULL, raw);

	/* ... nor one from a destination's config (--to-config). */
	if (text != NULL && error_ctx != NULL && error_ctx->to_config != NULL) {
		char *both = faucet_config_scrub(error_ctx->to_config, text);
		free(text);
		text = both;
	}
	if (text == NULL)
		text = faucet__strdup("out of memory");
	if (text == NULL)
		return;

	/* Whatever stdout holds so far comes first, so a report and its
	 * error read in order on a terminal. */
	(void)fflush(stdout);
	(void)faucet__buf_puts(&line, "faucet: ");
	cli_escape(&line, text);
	(void)faucet__buf_putc(&line, '\n');
	fputs(line.failed || line.ptr == NULL ? "faucet: out of memory\n" : line.ptr, stderr);
	faucet__buf_dispose(&line);
	if (error_ctx != NULL && error_ctx->json && !json_printed) {
		faucet_buf b = FAUCET_BUF_INIT;

		(void)faucet__buf_puts(&b, error_ctx->json_error_outcome
					       ? "{\"outcome\":\"error\",\"error\":"
					       : "{\"error\":");
		cli_json_error_object(&b, code, text, exit_code);
		(void)faucet__buf_putc(&b, '}');
		(void)cli_jw_print(&b);
	}
	free(text);
}

__attribute__((format(printf, 1, 0))) static char *vformat(const char *fmt, va_list ap)
{
	va_list copy;
	char *s;
	int n;

	va_copy(copy, ap);
	n = vsnprintf(NULL, 0, fmt, copy);
	va_end(copy);
	if (n < 0 || (s = malloc((size_t)n + 1)) == NULL)
		return NULL;
	(void)vsnprintf(s, (size_t)n + 1, fmt, ap);
	return s;
}

int cli_error(int exit_code, const char *fmt, ...)
{
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	msg = vformat(fmt, ap);
	va_end(ap);
	report_failure(exit_code, code_for_exit(exit_code), msg ? msg : "out of memory");
	free(msg);
	return exit_code;
}

/* What to do about a library error, where the command line has its own
 * answer: the library tells a sealed file read without a key to configure
 * one in the YAML (on the command line the way is a flag), and names what
 * is wrong with a key but not what a key may be. */
/* A sealed value met without a key: the library names the file, which is
 * the store's business, not the operator's (messages name keys and stores,
 * never internal files). */
static int sealed_without_key(const faucet_error *last)
{
	return last->code == FAUCET_ECRYPTO && error_ctx != NULL && error_ctx->key_env == NULL &&
	       strstr(last->message, "no encryption key is configured") != NULL;
}

static const char *key_hint(const faucet_error *last)
{
	if (sealed_without_key(last))
		return "";
	if (last->code == FAUCET_EINVALID && strncmp(last->message, "state key ", 10) == 0)
		return " (a key is 1 to 256 bytes of A-Z a-z 0-9 _ . : / -, does not begin with "
		       "'.', and uses '/' only between non-empty segments that do not begin "
		       "with '.'; e.g. orders::default or acme::orders::eu/2026)";
	return "";
}

int cli_fail(int exit_code, const char *fmt, ...)
{
	const faucet_error *last = faucet_error_last();
	va_list ap;
	char *what, *line;

	/* Bad input the library refused (e.g. a keyless write into an
	 * encrypted store) is a usage error, whoever called. */
	if (exit_code == CLI_EXIT_FAILED && last->code == FAUCET_EINVALID)
		exit_code = CLI_EXIT_USAGE;
	if (sealed_without_key(last) && opened_to_write)
		exit_code = CLI_EXIT_USAGE;
	va_start(ap, fmt);
	what = vformat(fmt, ap);
	va_end(ap);
	line = what ? faucet__sprintf("%s: %s%s", what,
				  sealed_without_key(last)
					  ? "this store is encrypted; give --encryption-key-env VAR "
					    "(VAR holding the key), or state.config.encryption in "
					    "the YAML"
					  : *last->message ? last->message : "unknown error",
				  key_hint(last))
		    : NULL;
	report_failure(exit_code,
		       last->code != 0 ? faucet_error_name(last->code) : code_for_exit(exit_code),
		       line ? line : "out of memory");
	free(line);
	free(what);
	return exit_code;
}

int cli_usage_error(const char *command, const char *fmt, ...)
{
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	msg = vformat(fmt, ap);
	va_end(ap);
	(void)cli_error(CLI_EXIT_USAGE, "%s%s%s (see 'faucet %s%s--help')", command,
			*command ? ": " : "", msg ? msg : "out of memory", command,
			*command ? " " : "");
	free(msg);
	return CLI_EXIT_USAGE;
}

int cli_finish(int exit_code)
{
	if (fflush(stdout) != 0 || ferror(stdout))
		return cli_error(CLI_EXIT_FAILED, "cannot write to standard output: %s",
				 strerror(errno));
	return exit_code;
}

int cli_print_command_help(const char *command)
{
	faucet_buf b = FAUCET_BUF_INIT;

	if (cli_args_help_check() != 0)
		return CLI_EXIT_FAILED;
	if (cli_reference_help(&b, command) != 0) {
		faucet__buf_dispose(&b);
		return cli_error(CLI_EXIT_FAILED, "internal error: src/cli/reference.c has no "
				 "help for '%s'", command);
	}
	if (b.failed) {
		faucet__buf_dispose(&b);
		return cli_error(CLI_EXIT_FAILED, "out of memory");
	}
	(void)fputs(b.ptr, stdout);
	faucet__buf_dispose(&b);
	return cli_finish(CLI_EXIT_OK);
}

/* ---- input ------------------------------------------------------------- */

int cli_read_input(const char *path, char **out, size_t *len)
{
	faucet_buf b = FAUCET_BUF_INIT;
	int use_stdin = strcmp(path, "-") == 0;
	const char *name = use_stdin ? "standard input" : path;
	int fd = use_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);

	*out = NULL;
	*len = 0;
	if (fd < 0)
		return faucet__error_os(FAUCET_EIO, errno, "cannot open %s", name);
	for (;;) {
		ssize_t n;

		if (faucet__buf_grow(&b, 65536) != 0) {
			if (!use_stdin)
				close(fd);
			faucet__buf_dispose(&b);
			return FAUCET_ENOMEM;
		}
		n = read(fd, b.ptr + b.len, b.cap - b.len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = errno;
			if (!use_stdin)
				close(fd);
			faucet__buf_dispose(&b);
			return faucet__error_os(FAUCET_EIO, err, "cannot read %s", name);
		}
		if (n == 0)
			break;
		b.len += (size_t)n;
	}
	if (!use_stdin)
		close(fd);
	b.ptr[b.len] = '\0';
	*len = b.len;
	*out = b.ptr;
	return 0;
}

/* ---- config and store -------------------------------------------------- */

static const char *nonempty_env(const char *name)
{
	const char *v = getenv(name);
	return v != NULL && *v != '\0' ? v : NULL;
}

int cli_forbid_core_dumps(void)
{
	struct rlimit none;

	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
		return faucet__error_os(FAUCET_EIO, errno, "cannot turn core dumps off");
	if (getrlimit(RLIMIT_CORE, &none) != 0)
		return faucet__error_os(FAUCET_EIO, errno, "cannot turn core dumps off");
	/* Only the soft limit: lowering it always works, and a child that
	 * holds no key may raise it again. */
	none.rlim_cur = 0;
	if (setrlimit(RLIMIT_CORE, &none) != 0)
		return faucet__error_os(FAUCET_EIO, errno, "cannot turn core dumps off");
	return 0;
}

void cli_wipe_free(char *s)
{
	if (s == NULL)
		return;
	explicit_bzero(s, strlen(s));
	free(s);
}

/* The library's table of backends, by type or by URL scheme. */
static const faucet_backend_info *backend_of_type(const char *type)
{
	const faucet_backend_info *be;

	for (size_t i = 0; type != NULL && (be = faucet_store_backend_info(i)) != NULL; i++) {
		if (strcmp(be->type, type) == 0)
			return be;
	}
	return NULL;
}

static const faucet_backend_info *backend_of_url(const char *url, const char **rest)
{
	const faucet_backend_info *be;

	for (size_t i = 0; (be = faucet_store_backend_info(i)) != NULL; i++) {
		for (const char *const *sc = be->schemes; *sc != NULL; sc++) {
			if (strncmp(url, *sc, strlen(*sc)) == 0) {
				if (rest != NULL)
					*rest = url + strlen(*sc);
				return be;
			}
		}
	}
	return NULL;
}

/* Whether backend `be` (may be NULL) takes encryption keys. */
static int takes_encryption(const faucet_backend_info *be)
{
	for (const faucet_backend_field *f = be ? be->fields : NULL; f && f->name != NULL; f++) {
		if (strcmp(f->name, "encryption") == 0)
			return 1;
	}
	return 0;
}

/* Load a pipeline YAML.  A config may hold key material (its encryption
 * block, a password in a URL), so core dumps are off before it is read. */
static int load_config(const char *path, faucet_config **out)
{
	int rc = cli_forbid_core_dumps();

	*out = NULL;
	return rc != 0 ? rc : faucet_config_load(out, path);
}

int cli_context_config(cli_context *ctx, const faucet_config **out)
{
	const char *path;
	int rc;

	*out = NULL;
	if (ctx->config_loaded) {
		*out = ctx->config;
		return 0;
	}
	path = ctx->config_arg ? ctx->config_arg : nonempty_env("FAUCET_CONFIG");
	if (path == NULL) {
		ctx->config_loaded = 1;
		return 0;
	}
	rc = load_config(path, &ctx->config);
	if (rc != 0)
		return cli_fail(CLI_EXIT_USAGE, "%s", ctx->config_arg ? "bad config (-c)"
								       : "bad config (FAUCET_CONFIG)");
	ctx->config_loaded = 1;
	*out = ctx->config;
	return 0;
}

#define CLI_SHORT_KEY 16 /* bytes: a key string shorter than this gets a warning */

/* The --previous-key-env names, or FAUCET_PREVIOUS_KEY_ENV's comma-separated
 * list when none was given. */
static int previous_names(cli_context *ctx)
{
	const char *list = getenv("FAUCET_PREVIOUS_KEY_ENV");

	if (ctx->previous_key_envs.count > 0 || list == NULL)
		return 0;
	while (*list) {
		size_t n = strcspn(list, ",");
		char *name = n ? faucet__sprintf("%.*s", (int)n, list) : NULL;

		if (n && (name == NULL || faucet__strarray_append_owned(&ctx->previous_key_envs, name) != 0))
			return FAUCET_ENOMEM;
		list += n;
		if (*list == ',')
			list++;
	}
	return 0;
}

const char *cli_previous_key_env_list(cli_context *ctx)
{
	faucet_buf b = FAUCET_BUF_INIT;

	if (ctx->previous_list != NULL)
		return ctx->previous_list;
	if (previous_names(ctx) != 0 || ctx->previous_key_envs.count == 0)
		return NULL;
	for (size_t i = 0; i < ctx->previous_key_envs.count; i++) {
		if (i)
			(void)faucet__buf_putc(&b, ',');
		(void)faucet__buf_puts(&b, ctx->previous_key_envs.strings[i]);
	}
	ctx->previous_list = faucet__buf_detach(&b);
	return ctx->previous_list;
}

/* The previous keys' values, read from their variables (each must be set
 * and non-empty), for a store opened with a key. */
static int previous_from_env(cli_context *ctx)
{
	if (ctx->previous_material.count > 0)
		return 0;
	if (previous_names(ctx) != 0)
		return cli_error(CLI_EXIT_FAILED, "out of memory");
	for (size_t i = 0; i < ctx->previous_key_envs.count; i++) {
		const char *name = ctx->previous_key_envs.strings[i];
		const char *v = getenv(name);

		if (v == NULL || *v == '\0')
			return cli_error(CLI_EXIT_USAGE,
					 "environment variable %s (a previous key, named by "
					 "--previous-key-env or FAUCET_PREVIOUS_KEY_ENV) is %s",
					 name, v == NULL ? "not set" : "empty");
		if (faucet__strarray_append(&ctx->previous_material, v) != 0)
			return cli_error(CLI_EXIT_FAILED, "out of memory");
	}
	return 0;
}

int cli_default_pipeline(cli_context *ctx, const char *command, const char **pipeline)
{
	const faucet_config *conf = NULL;
	int rc;

	if (*pipeline != NULL)
		return 0;
	if (ctx->state_url == NULL) {
		rc = cli_context_config(ctx, &conf);
		if (rc != 0)
			return rc;
	}
	if (conf != NULL && faucet_config_name(conf) != NULL) {
		*pipeline = faucet_config_name(conf);
		return 0;
	}
	if (conf != NULL)
		return cli_usage_error(command, "missing PIPELINE (the config %s has no name:)",
				       faucet_config_path(conf));
	return cli_usage_error(command, "missing PIPELINE (or give -c FILE, whose name: is "
				        "the default)");
}

int cli_pipeline_arg(cli_context *ctx, const char *command, const char **pipeline,
		     const char *tenant, unsigned flags, char **ns)
{
	const char *colons;
	int rc;

	if (ns != NULL)
		*ns = NULL;
	if ((rc = cli_default_pipeline(ctx, command, pipeline)) != 0)
		return rc;
	if (**pipeline == '\0' || faucet_validate_key(*pipeline) != 0)
		return cli_fail(CLI_EXIT_USAGE, "%s: bad pipeline name", command);
	/* "a::b" would act on pipeline a's row b and everything under it as if
	 * it were a pipeline of its own. */
	colons = strstr(*pipeline, "::");
	if (colons != NULL && (tenant != NULL || !(flags & CLI_PIPELINE_NAMESPACE)))
		return cli_usage_error(command, "'%s' is not a pipeline name: it contains '::' "
				       "(give the pipeline, e.g. '%.*s', or --tenant T for a "
				       "tenant's)",
				       *pipeline, (int)(colons - *pipeline), *pipeline);
	if (tenant != NULL && (rc = cli_tenant_check(command, tenant, &tenant)) != 0)
		return rc;
	if (tenant != NULL && ns != NULL) {
		if ((*ns = faucet__sprintf("%s::%s", tenant, *pipeline)) == NULL)
			return cli_error(CLI_EXIT_FAILED, "out of memory");
		*pipeline = *ns;
	}
	return 0;
}

/* The key named by --encryption-key-env, copied once into the context,
 * with the previous keys. */
static int key_from_env(cli_context *ctx, const char **key)
{
	const char *v;

	if (ctx->key_material != NULL) {
		*key = ctx->key_material;
		return 0;
	}
	if (cli_forbid_core_dumps() != 0)
		return cli_fail(CLI_EXIT_FAILED, "before reading the encryption key");
	v = getenv(ctx->key_env);
	if (v == NULL)
		return cli_error(CLI_EXIT_USAGE,
				 "environment variable %s (named by --encryption-key-env) is not set",
				 ctx->key_env);
	if (*v == '\0')
		return cli_error(CLI_EXIT_USAGE,
				 "environment variable %s (named by --encryption-key-env) is empty; "
				 "an encryption key cannot be empty",
				 ctx->key_env);
	ctx->key_material = faucet__strdup(v);
	if (ctx->key_material == NULL)
		return cli_fail(CLI_EXIT_FAILED, "reading the encryption key");
	/* Any string is a key (its SHA-256 is the AES key), so a short one is
	 * allowed - and guessable. */
	if (strlen(v) < CLI_SHORT_KEY)
		fprintf(stderr, "faucet: warning: the encryption key in %s is only %zu bytes; a "
				"passphrase shorter than %d bytes can be guessed (see 'faucet --help')\n",
			ctx->key_env, strlen(v), CLI_SHORT_KEY);
	*key = ctx->key_material;
	return previous_from_env(ctx);
}

static int open_failed(cli_context *ctx)
{
	int code = faucet_error_last()->code;
	int exit_code = code == FAUCET_ECONFIG || code == FAUCET_EINVALID ? CLI_EXIT_USAGE
									  : CLI_EXIT_FAILED;
	return cli_fail(exit_code, "cannot open the state store %s", ctx->store_label);
}

/* The path of a store URL whose backend lives at a local path (file:P,
 * sqlite://P), or NULL for the other schemes. */
static const char *url_store_path(const char *url)
{
	const char *rest;
	const faucet_backend_info *be = backend_of_url(url, &rest);

	if (be == NULL || !be->local_path)
		return NULL;
	return strncmp(rest, "//", 2) == 0 ? rest + 2 : rest;
}

/*
 * A read command must not create the store it reads: the library creates a
 * file store's directory or a SQLite database on open, and a mistyped path
 * would then read as an empty store (and doctor would pass).  So before a
 * read we look for the directory or database ourselves.  Servers (postgres,
 * redis) and memory: have nothing to create here.
 */
/* must_exist: 1 = a missing store is the error below; 2 = it is not an
 * error: the caller gets an empty memory: store instead (a dry run's view
 * of a store nothing has written yet), and nothing is created. */
#define MUST_EXIST 1
#define MAY_BE_ABSENT 2

static int store_absent; /* set by require_existing in MAY_BE_ABSENT mode */

static int require_existing(const char *path, int mode)
{
	struct stat st;

	if (path == NULL || *path == '\0')
		return 0; /* the library names the missing path itself */
	if (stat(path, &st) == 0)
		return 0;
	if ((errno == ENOENT || errno == ENOTDIR) && mode == MAY_BE_ABSENT) {
		store_absent = 1;
		return 0;
	}
	if (errno == ENOENT || errno == ENOTDIR) {
		char *msg = faucet__sprintf("no state store at %s (write commands create it)", path);

		report_failure(CLI_EXIT_FAILED, faucet_error_name(FAUCET_ENOTFOUND),
			       msg ? msg : "out of memory");
		free(msg);
		return CLI_EXIT_FAILED;
	}
	return cli_error(CLI_EXIT_FAILED, "cannot look for the state store at %s: %s", path,
			 strerror(errno));
}

static int open_from_url(cli_context *ctx, const char *url, int must_exist, faucet_store **out)
{
	const faucet_backend_info *be;
	faucet_encryption_options enc;
	faucet_store_config cfg;
	const char *key = NULL;
	int rc;

	ctx->selected_url = faucet__strdup(url);
	ctx->store_label = faucet_url_redact(url);
	if (ctx->selected_url == NULL || ctx->store_label == NULL)
		return cli_fail(CLI_EXIT_FAILED, "opening the state store");
	if (must_exist && (rc = require_existing(url_store_path(url), must_exist)) != 0)
		return rc;
	if (store_absent)
		return faucet_store_open_url(out, "memory:") != 0 ? open_failed(ctx) : 0;
	if (ctx->key_env == NULL) {
		if (faucet_store_open_url(out, url) != 0)
			return open_failed(ctx);
		return 0;
	}
	/* A key only makes sense for a store with an `encryption` field (the
	 * file store); its URL is a path, simple enough to take apart here so
	 * the key can travel in a config. */
	be = backend_of_url(url, NULL);
	if (be == NULL || !be->local_path || !takes_encryption(be))
		return cli_error(CLI_EXIT_USAGE,
				 "--encryption-key-env applies to the file store only, not to %s",
				 ctx->store_label);
	rc = key_from_env(ctx, &key);
	if (rc != 0)
		return rc;
	memset(&cfg, 0, sizeof(cfg));
	cfg.version = FAUCET_STORE_CONFIG_VERSION;
	memset(&enc, 0, sizeof(enc));
	enc.key = key;
	enc.previous_keys = (const char *const *)ctx->previous_material.strings;
	enc.previous_count = ctx->previous_material.count;
	cfg.type = be->type;
	cfg.path = url_store_path(url);
	cfg.encryption = &enc;
	if (faucet_store_open_config(out, &cfg) != 0)
		return open_failed(ctx);
	return 0;
}

static int open_from_config(cli_context *ctx, const faucet_config *conf, int must_exist,
			    faucet_store **out)
{
	const faucet_store_config *state = faucet_config_store(conf);
	const faucet_backend_info *local;
	faucet_encryption_options enc = {NULL, NULL, 0};
	faucet_store_config cfg;
	const char *key = NULL;
	int rc;

	/* A config given to pick the store must say where the store is: falling
	 * back to ./.faucet-state would read or write the wrong store without a
	 * word. */
	if (state == NULL)
		return cli_error(CLI_EXIT_USAGE,
				 "config %s has no state: block, so it names no store; add one "
				 "(state: {type: file, config: {path: ...}}) or give --state URL",
				 faucet_config_path(conf));
	ctx->selected_config_path = faucet_config_path(conf);
	cfg = *state;
	if (cfg.encryption != NULL)
		enc = *cfg.encryption;
	ctx->store_label =
		faucet__sprintf("'%s' from config %s", cfg.type, faucet_config_path(conf));
	if (ctx->store_label == NULL)
		return cli_fail(CLI_EXIT_FAILED, "opening the state store");
	local = backend_of_type(cfg.type);
	if (must_exist && local != NULL && local->local_path &&
	    (rc = require_existing(cfg.path, must_exist)) != 0)
		return rc;
	if (store_absent)
		return faucet_store_open_url(out, "memory:") != 0 ? open_failed(ctx) : 0;
	if (ctx->key_env != NULL) {
		if (!takes_encryption(local))
			return cli_error(CLI_EXIT_USAGE,
					 "--encryption-key-env applies to the file store only, "
					 "not to %s",
					 ctx->store_label);
		rc = key_from_env(ctx, &key);
		if (rc != 0)
			return rc;
		/* The flag names the write key; the YAML's previous keys stay,
		 * and those of --previous-key-env are tried after them. */
		enc.key = key;
		cfg.encryption = &enc;
		if (ctx->previous_material.count > 0) {
			size_t n = enc.previous_count + ctx->previous_material.count;
			const char **all = calloc(n, sizeof(*all));

			if (all == NULL)
				return cli_error(CLI_EXIT_FAILED, "out of memory");
			for (size_t i = 0; i < enc.previous_count; i++)
				all[i] = enc.previous_keys[i];
			for (size_t i = 0; i < ctx->previous_material.count; i++)
				all[enc.previous_count + i] = ctx->previous_material.strings[i];
			enc.previous_keys = all;
			enc.previous_count = n;
			rc = faucet_store_open_config(out, &cfg);
			free(all);
			return rc != 0 ? open_failed(ctx) : 0;
		}
	}
	if (faucet_store_open_config(out, &cfg) != 0)
		return open_failed(ctx);
	return 0;
}

/* A store URL always has a scheme; a bare path is the commonest slip, and
 * which backend the user meant is theirs to say unless the path tells (a
 * .db/.sqlite file, an existing directory).  A scheme one typo away from a
 * known one (sqllite:) is named with the URL it was meant to be. */
int cli_check_store_url(const char *url, const char *where)
{
	const char *schemes[32], *colon = strchr(url, ':'), *dot;
	char names[32][24];
	size_t count = 0;
	const faucet_backend_info *be;
	faucet_buf b = FAUCET_BUF_INIT;
	struct stat st;
	int rc;

	if (colon != NULL) {
		char scheme[16];
		size_t n = (size_t)(colon - url);
		const char *best;

		if (n == 0 || n >= sizeof(scheme))
			return 0;
		memcpy(scheme, url, n);
		scheme[n] = '\0';
		/* The schemes of the table without their ':' or '://'. */
		for (size_t i = 0; (be = faucet_store_backend_info(i)) != NULL; i++) {
			for (const char *const *sc = be->schemes; *sc != NULL; sc++) {
				size_t len = strcspn(*sc, ":");

				if (len == n && strncmp(*sc, scheme, n) == 0)
					return 0;
				if (count == FAUCET_ARRAY_LEN(names) || len >= sizeof(names[0]))
					continue;
				memcpy(names[count], *sc, len);
				names[count][len] = '\0';
				schemes[count] = names[count];
				count++;
			}
		}
		if ((best = faucet__suggest(scheme, schemes, count)) == NULL)
			return 0; /* the library's message lists the schemes */
		cli_escape(&b, colon);
		rc = cli_usage_error("", "%s: unknown store URL scheme '%s:' (did you mean %s%s?)",
				     where, scheme, best, b.ptr ? b.ptr : "");
		faucet__buf_dispose(&b);
		return rc;
	}
	cli_escape(&b, url);
	dot = strrchr(url, '.');
	if (dot != NULL && strchr(dot, '/') == NULL &&
	    (strcmp(dot, ".db") == 0 || strcmp(dot, ".sqlite") == 0 || strcmp(dot, ".sqlite3") == 0))
		rc = cli_usage_error("", "%s '%s' is not a store URL: did you mean sqlite:%s?", where,
				     b.ptr ? b.ptr : "", b.ptr ? b.ptr : "");
	else if (stat(url, &st) == 0 && S_ISDIR(st.st_mode))
		rc = cli_usage_error("", "%s '%s' is not a store URL: did you mean file:%s?", where,
				     b.ptr ? b.ptr : "", b.ptr ? b.ptr : "");
	else
		rc = cli_usage_error("", "%s '%s' is not a store URL: did you mean file:%s (a "
				     "directory of JSON files) or sqlite:%s (one SQLite database "
				     "file)?", where, b.ptr ? b.ptr : "", b.ptr ? b.ptr : "",
				     b.ptr ? b.ptr : "");
	faucet__buf_dispose(&b);
	return rc;
}

static int open_store(cli_context *ctx, int must_exist, faucet_store **out)
{
	const faucet_config *conf;
	const char *url;
	int rc;

	*out = NULL;
	if (ctx->previous_key_envs.count > 0 && ctx->key_env == NULL)
		return cli_error(CLI_EXIT_USAGE, "--previous-key-env needs --encryption-key-env: "
				 "the previous keys are read, the current one seals what is written");
	if (ctx->state_url != NULL) {
		if ((rc = cli_check_store_url(ctx->state_url, "--state")) != 0)
			return rc;
		return open_from_url(ctx, ctx->state_url, must_exist, out);
	}
	rc = cli_context_config(ctx, &conf);
	if (rc != 0)
		return rc;
	if (conf != NULL)
		return open_from_config(ctx, conf, must_exist, out);
	url = nonempty_env("FAUCET_STATE");
	if (url != NULL && (rc = cli_check_store_url(url, "FAUCET_STATE")) != 0)
		return rc;
	return open_from_url(ctx, url ? url : DEFAULT_STATE_URL, must_exist, out);
}

void cli_note_write(void)
{
	opened_to_write = 1;
}

int cli_open_store(cli_context *ctx, faucet_store **out)
{
	opened_to_write = 1;
	return open_store(ctx, 0, out);
}

int cli_open_store_existing(cli_context *ctx, faucet_store **out)
{
	return open_store(ctx, MUST_EXIST, out);
}

int cli_open_store_or_absent(cli_context *ctx, faucet_store **out, int *absent)
{
	int rc;

	store_absent = 0;
	rc = open_store(ctx, MAY_BE_ABSENT, out);
	*absent = store_absent;
	store_absent = 0;
	return rc;
}

int cli_open_config_store(cli_context *ctx, const char *path, faucet_store **out,
			  const char **label)
{
	const faucet_store_config *cfg;
	faucet_config *conf = NULL;

	*out = NULL;
	*label = NULL;
	if (ctx->to_config != NULL)
		return cli_error(CLI_EXIT_USAGE, "--to-config given twice");
	if (load_config(path, &conf) != 0)
		return cli_fail(CLI_EXIT_USAGE, "bad config (--to-config)");
	ctx->to_config = conf;
	cfg = faucet_config_store(conf);
	if (cfg == NULL)
		return cli_error(CLI_EXIT_USAGE,
				 "config %s (--to-config) has no state: block, so it names no store",
				 faucet_config_path(conf));
	ctx->to_label = faucet__sprintf("'%s' from config %s", cfg->type, faucet_config_path(conf));
	if (ctx->to_label == NULL)
		return cli_error(CLI_EXIT_FAILED, "out of memory");
	*label = ctx->to_label;
	if (faucet_store_open_config(out, cfg) != 0) {
		int code = faucet_error_last()->code;
		return cli_fail(code == FAUCET_ECONFIG || code == FAUCET_EINVALID ? CLI_EXIT_USAGE
										 : CLI_EXIT_FAILED,
				"cannot open the destination store %s", ctx->to_label);
	}
	return 0;
}

int cli_store_is_encrypted(const cli_context *ctx)
{
	if (ctx->key_material != NULL)
		return 1;
	return ctx->selected_config_path != NULL && ctx->config != NULL &&
	       faucet_config_store(ctx->config) != NULL &&
	       faucet_config_store(ctx->config)->encryption != NULL;
}
