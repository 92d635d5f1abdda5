/*
 * context.c - the run's shared machinery: choosing and opening the store,
 * printing errors, reading input files.
 *
 * Store selection follows SPEC section 5, first match wins: --state URL,
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
#include <unistd.h>

#include "internal.h"
#include "cli.h"

#define DEFAULT_STATE_URL "file:.faucet-state"

void cli_context_init(cli_context *ctx)
{
	const char *no_color = getenv("NO_COLOR");
	const char *term = getenv("TERM");

	memset(ctx, 0, sizeof(*ctx));
	ctx->stdout_tty = isatty(STDOUT_FILENO);
	ctx->color = ctx->stdout_tty && (no_color == NULL || *no_color == '\0') &&
		     (term == NULL || strcmp(term, "dumb") != 0);
}

void cli_context_dispose(cli_context *ctx)
{
	cli_config_free(ctx->config);
	free(ctx->selected_url);
	free(ctx->store_label);
	cli_wipe_free(ctx->key_material);
	memset(ctx, 0, sizeof(*ctx));
}

/* ---- messages ---------------------------------------------------------- */

/* One line on stderr: any newline a message carries becomes a space. */
static void print_line(const char *text)
{
	/* Whatever stdout holds so far comes first, so a report and its
	 * error read in order on a terminal. */
	(void)fflush(stdout);
	fputs("faucet: ", stderr);
	for (const char *p = text; *p; p++)
		fputc(*p == '\n' || *p == '\r' ? ' ' : *p, stderr);
	fputc('\n', stderr);
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
	print_line(msg ? msg : "out of memory");
	free(msg);
	return exit_code;
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
	va_start(ap, fmt);
	what = vformat(fmt, ap);
	va_end(ap);
	line = what ? faucet__sprintf("%s: %s", what,
				      *last->message ? last->message : "unknown error")
		    : NULL;
	print_line(line ? line : "out of memory");
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

int cli_print_help(const char *text)
{
	fputs(text, stdout);
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

		if (faucet_buf_grow(&b, 65536) != 0) {
			if (!use_stdin)
				close(fd);
			faucet_buf_dispose(&b);
			return FAUCET_ENOMEM;
		}
		n = read(fd, b.ptr + b.len, b.cap - b.len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = errno;
			if (!use_stdin)
				close(fd);
			faucet_buf_dispose(&b);
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

int cli_context_config(cli_context *ctx, const cli_config **out)
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
	rc = cli_config_load(&ctx->config, path);
	if (rc != 0)
		return cli_fail(CLI_EXIT_USAGE, "%s", ctx->config_arg ? "bad config (-c)"
								       : "bad config (FAUCET_CONFIG)");
	ctx->config_loaded = 1;
	*out = ctx->config;
	return 0;
}

/* The key named by --encryption-key-env, copied once into the context. */
static int key_from_env(cli_context *ctx, const char **key)
{
	const char *v;

	if (ctx->key_material != NULL) {
		*key = ctx->key_material;
		return 0;
	}
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
	*key = ctx->key_material;
	return 0;
}

static int open_failed(cli_context *ctx)
{
	int code = faucet_error_last()->code;
	int exit_code = code == FAUCET_ECONFIG || code == FAUCET_EINVALID ? CLI_EXIT_USAGE
									  : CLI_EXIT_FAILED;
	return cli_fail(exit_code, "cannot open the state store %s", ctx->store_label);
}

static int open_from_url(cli_context *ctx, const char *url, faucet_store **out)
{
	faucet_encryption_options enc;
	faucet_store_config cfg;
	const char *key = NULL;
	int rc;

	ctx->selected_url = faucet__strdup(url);
	ctx->store_label = faucet_url_redact(url);
	if (ctx->selected_url == NULL || ctx->store_label == NULL)
		return cli_fail(CLI_EXIT_FAILED, "opening the state store");
	if (ctx->key_env == NULL) {
		if (faucet_store_open_url(out, url) != 0)
			return open_failed(ctx);
		return 0;
	}
	/* A key only makes sense for the file store; its URL is simple enough
	 * to take apart here so the key can travel in a config. */
	if (strncmp(url, "file:", 5) != 0)
		return cli_error(CLI_EXIT_USAGE,
				 "--encryption-key-env applies to the file store only, not to %s",
				 ctx->store_label);
	rc = key_from_env(ctx, &key);
	if (rc != 0)
		return rc;
	memset(&cfg, 0, sizeof(cfg));
	memset(&enc, 0, sizeof(enc));
	enc.key = key;
	cfg.type = "file";
	cfg.path = url + 5;
	if (strncmp(cfg.path, "//", 2) == 0)
		cfg.path += 2;
	cfg.encryption = &enc;
	if (faucet_store_open_config(out, &cfg) != 0)
		return open_failed(ctx);
	return 0;
}

static int open_from_config(cli_context *ctx, const cli_config *conf, faucet_store **out)
{
	faucet_encryption_options enc;
	faucet_store_config cfg;
	const char *key = NULL;
	int rc;

	ctx->selected_config_path = conf->path;
	if (!conf->has_state) {
		/* A pipeline without a `state:` block keeps its state where the
		 * original does by default; the config still names the store for
		 * child processes, so only selected_config_path stays set. */
		rc = open_from_url(ctx, DEFAULT_STATE_URL, out);
		free(ctx->selected_url);
		ctx->selected_url = NULL;
		return rc;
	}
	cli_config_store(conf, &cfg, &enc);
	ctx->store_label = faucet__sprintf("'%s' from config %s", conf->state_type, conf->path);
	if (ctx->store_label == NULL)
		return cli_fail(CLI_EXIT_FAILED, "opening the state store");
	if (ctx->key_env != NULL) {
		if (strcmp(conf->state_type, "file") != 0)
			return cli_error(CLI_EXIT_USAGE,
					 "--encryption-key-env applies to the file store only, "
					 "not to %s",
					 ctx->store_label);
		rc = key_from_env(ctx, &key);
		if (rc != 0)
			return rc;
		/* The flag names the write key; the YAML's previous keys stay. */
		enc.key = key;
		cfg.encryption = &enc;
	}
	if (faucet_store_open_config(out, &cfg) != 0)
		return open_failed(ctx);
	return 0;
}

int cli_open_store(cli_context *ctx, faucet_store **out)
{
	const cli_config *conf;
	const char *url;
	int rc;

	*out = NULL;
	if (ctx->state_url != NULL)
		return open_from_url(ctx, ctx->state_url, out);
	rc = cli_context_config(ctx, &conf);
	if (rc != 0)
		return rc;
	if (conf != NULL)
		return open_from_config(ctx, conf, out);
	url = nonempty_env("FAUCET_STATE");
	return open_from_url(ctx, url ? url : DEFAULT_STATE_URL, out);
}

int cli_store_is_encrypted(const cli_context *ctx)
{
	if (ctx->key_material != NULL)
		return 1;
	return ctx->selected_config_path != NULL && ctx->config != NULL &&
	       ctx->config->has_state && ctx->config->has_encryption;
}
