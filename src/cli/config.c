/*
 * config.c - load the parts of a faucet pipeline YAML the command uses.
 *
 * libyaml builds the whole document as a node graph; we then walk only the
 * three top-level entries we understand (`name`, `state`, `backfill`) and
 * ignore the rest, so the pipeline's own sections never need to make sense
 * here.  Inside those three blocks we are strict: an unknown field is an
 * error, because a misspelt `path` would otherwise quietly point the
 * operator at an empty store.
 *
 * Key material (state.config.encryption) passes through three places we
 * control - the file buffer, libyaml's buffers and nodes, and our expanded
 * strings - and each is wiped before it is freed.  Expansion sizes its
 * output exactly, so no realloc leaves a stray copy behind.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "suggest.h"
#include "util.h"
#include "config.h"
#include "yaml_load.h"

typedef struct {
	const char *path;     /* as given, for messages */
	yaml_document_t *doc;
	cli_config *cfg;
} loader;

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

static void wipe_strarray(faucet_strarray *arr)
{
	for (size_t i = 0; i < arr->count; i++) {
		if (arr->strings[i] != NULL)
			explicit_bzero(arr->strings[i], strlen(arr->strings[i]));
	}
	faucet_strarray_dispose(arr);
}

void cli_config_free(cli_config *c)
{
	if (c == NULL)
		return;
	free(c->path);
	free(c->name);
	free(c->state_type);
	free(c->state_path);
	free(c->state_url);
	faucet_strarray_dispose(&c->state_etcd_endpoints);
	free(c->state_etcd_prefix);
	free(c->state_etcd_dial_timeout);
	free(c->state_etcd_request_timeout);
	free(c->state_table);
	free(c->state_namespace);
	cli_wipe_free(c->encryption_key);
	wipe_strarray(&c->encryption_previous_keys);
	free(c->backfill_window);
	free(c->backfill_timezone);
	faucet_strarray_dispose(&c->backfill_command);
	faucet_strarray_dispose(&c->env_refs);
	wipe_strarray(&c->env_values);
	free(c);
}

/* ---- messages ---------------------------------------------------------- */

/* The longest value of `c` that starts at `p`, as an index, or -1. */
static long env_value_at(const cli_config *c, const char *p)
{
	long best = -1;
	size_t best_len = 0;

	for (size_t i = 0; i < c->env_values.count; i++) {
		const char *v = c->env_values.strings[i];
		size_t n = strlen(v);

		if (n >= CLI_SCRUB_MIN && n > best_len && strncmp(p, v, n) == 0) {
			best = (long)i;
			best_len = n;
		}
	}
	return best;
}

char *cli_config_scrub(const cli_config *c, const char *text)
{
	faucet_buf b = FAUCET_BUF_INIT;

	if (c == NULL || c->env_values.count == 0)
		return faucet__strdup(text);
	for (const char *p = text; *p;) {
		long i = env_value_at(c, p);

		if (i < 0) {
			(void)faucet_buf_putc(&b, *p++);
			continue;
		}
		(void)faucet_buf_puts(&b, c->env_refs.strings[i]);
		p += strlen(c->env_values.strings[i]);
	}
	return faucet_buf_detach(&b);
}

static int node_error(loader *l, const yaml_node_t *node, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int node_error(loader *l, const yaml_node_t *node, const char *fmt, ...)
{
	char *msg, *scrubbed;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	msg = n < 0 ? NULL : malloc((size_t)n + 1);
	if (msg == NULL)
		return faucet_error_set(FAUCET_ENOMEM, "out of memory");
	va_start(ap, fmt);
	(void)vsnprintf(msg, (size_t)n + 1, fmt, ap);
	va_end(ap);
	/* A value from ${env:...} may have found its way into the detail (a
	 * type named in another field's message, say): put the reference back. */
	scrubbed = cli_config_scrub(l->cfg, msg);
	explicit_bzero(msg, strlen(msg));
	free(msg);
	if (scrubbed == NULL)
		return faucet_error_set(FAUCET_ENOMEM, "out of memory");
	(void)faucet_error_set(FAUCET_ECONFIG, "config %s: line %zu: %s", l->path,
			       node ? node->start_mark.line + 1 : 1, scrubbed);
	free(scrubbed);
	return FAUCET_ECONFIG;
}

/* ---- scalars ----------------------------------------------------------- */

static yaml_node_t *node_at(loader *l, int index)
{
	return yaml_document_get_node(l->doc, index);
}

static const char *scalar_raw(const yaml_node_t *node)
{
	return (const char *)node->data.scalar.value;
}

/* A plain `~`, `null` or empty scalar: the field is present but unset. */
static int node_is_null(const yaml_node_t *node)
{
	const char *s;

	if (node->type != YAML_SCALAR_NODE || node->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return 0;
	s = scalar_raw(node);
	return *s == '\0' || strcmp(s, "~") == 0 || strcasecmp(s, "null") == 0;
}

static int env_name_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '_';
}

/* Note that `value` came from ${env:name}, so messages can hide it. */
static int remember_env(cli_config *c, const char *name, const char *value)
{
	char *copy;

	/* push_owned frees the string when it cannot keep it. */
	if (faucet__strarray_append_owned(&c->env_refs, faucet__sprintf("${env:%s}", name)) != 0)
		return FAUCET_ENOMEM;
	copy = faucet__strdup(value);
	if (copy == NULL || faucet__strarray_append_owned(&c->env_values, copy) != 0) {
		c->env_refs.count--;
		free(c->env_refs.strings[c->env_refs.count]);
		return FAUCET_ENOMEM;
	}
	return 0;
}

/*
 * Replace each ${env:VAR} in `in`.  Two passes: the first checks every
 * reference and measures the result, the second writes it into a buffer of
 * exactly that size.  Any other ${...} text is left alone (backfill
 * commands carry ${backfill.start} for the runner).
 */
static int expand_env(loader *l, const yaml_node_t *node, const char *field, const char *in,
		      char **out)
{
	static const char opener[] = "${env:";
	const size_t olen = sizeof(opener) - 1;
	size_t need = 0;
	char *res, *w;

	*out = NULL;
	for (const char *p = in; *p;) {
		const char *end, *val;
		char name[256];
		size_t nlen;

		if (strncmp(p, opener, olen) != 0) {
			need++;
			p++;
			continue;
		}
		end = strchr(p + olen, '}');
		if (end == NULL)
			return node_error(l, node, "%s: unterminated ${env:...} reference", field);
		nlen = (size_t)(end - (p + olen));
		if (nlen == 0 || nlen >= sizeof(name))
			return node_error(l, node, "%s: bad environment variable reference '%.*s'",
					  field, (int)(end - p + 1), p);
		for (size_t i = 0; i < nlen; i++) {
			if (!env_name_char(p[olen + i]))
				return node_error(l, node,
						  "%s: bad environment variable name '%.*s'", field,
						  (int)nlen, p + olen);
		}
		memcpy(name, p + olen, nlen);
		name[nlen] = '\0';
		val = getenv(name);
		if (val == NULL)
			return node_error(l, node,
					  "%s: environment variable %s is not set (${env:%s})", field,
					  name, name);
		need += strlen(val);
		p = end + 1;
	}
	res = faucet__malloc(need + 1);
	if (res == NULL)
		return FAUCET_ENOMEM;
	w = res;
	for (const char *p = in; *p;) {
		const char *end;
		char name[256];
		size_t nlen, vlen;
		const char *val;

		if (strncmp(p, opener, olen) != 0) {
			*w++ = *p++;
			continue;
		}
		end = strchr(p + olen, '}');
		nlen = (size_t)(end - (p + olen));
		memcpy(name, p + olen, nlen);
		name[nlen] = '\0';
		val = getenv(name);
		vlen = strlen(val);
		memcpy(w, val, vlen);
		w += vlen;
		p = end + 1;
		if (vlen > 0 && remember_env(l->cfg, name, val) != 0) {
			explicit_bzero(res, need + 1);
			free(res);
			return FAUCET_ENOMEM;
		}
	}
	*w = '\0';
	*out = res;
	return 0;
}

/* A string field: a scalar, with ${env:VAR} replaced.  *out is NULL for a
 * null scalar. */
static int read_string(loader *l, const yaml_node_t *node, const char *field, char **out)
{
	*out = NULL;
	if (node->type != YAML_SCALAR_NODE)
		return node_error(l, node, "%s must be a string", field);
	if (node_is_null(node))
		return 0;
	if (strlen(scalar_raw(node)) != node->data.scalar.length)
		return node_error(l, node, "%s contains a NUL byte", field);
	return expand_env(l, node, field, scalar_raw(node), out);
}

/* A string that holds key material: as read_string, and the node's own copy
 * of the text is wiped once read. */
static int read_secret(loader *l, yaml_node_t *node, const char *field, char **out)
{
	int rc = read_string(l, node, field, out);

	if (node->type == YAML_SCALAR_NODE)
		explicit_bzero(node->data.scalar.value, node->data.scalar.length);
	return rc;
}

/* A value for a message: the scalar as written in the file, so a
 * ${env:VAR} reference is shown as such and never the value it stands for
 * (which may be key material put in the wrong field). */
static const char *shown(const yaml_node_t *node)
{
	return node->type == YAML_SCALAR_NODE ? scalar_raw(node) : "";
}

static int read_int(loader *l, const yaml_node_t *node, const char *field, long min, long max,
		    int *out)
{
	char *text, *end;
	long v;
	int rc;

	rc = read_string(l, node, field, &text);
	if (rc != 0)
		return rc;
	if (text == NULL)
		return node_error(l, node, "%s must be a whole number", field);
	errno = 0;
	v = strtol(text, &end, 10);
	if (errno != 0 || end == text || *end != '\0' || v < min || v > max) {
		rc = node_error(l, node, "%s must be a whole number from %ld to %ld, got '%s'",
				field, min, max, shown(node));
		free(text);
		return rc;
	}
	free(text);
	*out = (int)v;
	return 0;
}

/* A duration "NNNms" or "NNs" (1 ms to 1 hour), in milliseconds. */
static int read_duration_ms(loader *l, const yaml_node_t *node, const char *field, int *out)
{
	char *text, *end;
	long v, scale = 0;
	int rc = read_string(l, node, field, &text);

	if (rc != 0)
		return rc;
	if (text == NULL)
		return node_error(l, node, "%s must be a duration such as 500ms or 1s", field);
	errno = 0;
	v = strtol(text, &end, 10);
	if (end != text && strcmp(end, "ms") == 0)
		scale = 1;
	else if (end != text && strcmp(end, "s") == 0)
		scale = 1000;
	if (errno != 0 || scale == 0 || v < 1 || v > 3600000 / scale) {
		rc = node_error(l, node,
				"%s must be a duration such as 500ms or 1s (1ms to 3600s), got '%s'",
				field, shown(node));
		free(text);
		return rc;
	}
	free(text);
	*out = (int)(v * scale);
	return 0;
}

static int read_bool(loader *l, const yaml_node_t *node, const char *field, int *out)
{
	static const char *const yes[] = {"true", "yes", "on"};
	static const char *const no[] = {"false", "no", "off"};
	char *text;
	int rc = read_string(l, node, field, &text);

	if (rc != 0)
		return rc;
	for (size_t i = 0; text != NULL && i < FAUCET_ARRAY_LEN(yes); i++) {
		if (strcasecmp(text, yes[i]) == 0 || strcasecmp(text, no[i]) == 0) {
			*out = strcasecmp(text, yes[i]) == 0;
			free(text);
			return 0;
		}
	}
	rc = node_error(l, node, "%s must be true or false, got '%s'", field, shown(node));
	free(text);
	return rc;
}

/* A list of strings.  `secret` wipes each node's text once read. */
static int read_string_list(loader *l, yaml_node_t *node, const char *field, int secret,
			    faucet_strarray *out)
{
	if (node_is_null(node))
		return 0;
	if (node->type != YAML_SEQUENCE_NODE)
		return node_error(l, node, "%s must be a list of strings", field);
	for (yaml_node_item_t *it = node->data.sequence.items.start;
	     it < node->data.sequence.items.top; it++) {
		yaml_node_t *item = node_at(l, *it);
		char *s;
		int rc;

		if (item == NULL)
			return node_error(l, node, "%s: broken list", field);
		rc = secret ? read_secret(l, item, field, &s) : read_string(l, item, field, &s);
		if (rc != 0)
			return rc;
		if (s == NULL || *s == '\0') {
			free(s);
			return node_error(l, item, "%s: an entry is empty", field);
		}
		if (faucet__strarray_append_owned(out, s) != 0)
			return FAUCET_ENOMEM;
	}
	return 0;
}

/* ---- mappings ---------------------------------------------------------- */

/* Check `node` is a mapping whose keys are strings, each named at most once
 * and, when `allowed` is given, one of them. */
static int check_mapping(loader *l, const yaml_node_t *node, const char *field,
			 const char *const *allowed)
{
	if (node->type != YAML_MAPPING_NODE)
		return node_error(l, node, "%s must be a mapping", field);
	for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *key = node_at(l, p->key);
		size_t i;

		if (key == NULL || key->type != YAML_SCALAR_NODE)
			return node_error(l, key, "%s: every field name must be a string", field);
		for (yaml_node_pair_t *q = node->data.mapping.pairs.start; q < p; q++) {
			yaml_node_t *prev = node_at(l, q->key);
			if (prev != NULL && prev->type == YAML_SCALAR_NODE &&
			    strcmp(scalar_raw(prev), scalar_raw(key)) == 0)
				return node_error(l, key, "%s: field '%s' is given twice", field,
						  scalar_raw(key));
		}
		if (allowed == NULL)
			continue;
		for (i = 0; allowed[i] != NULL; i++) {
			if (strcmp(allowed[i], scalar_raw(key)) == 0)
				break;
		}
		if (allowed[i] == NULL) {
			faucet_buf names = FAUCET_BUF_INIT;
			int rc;

			for (i = 0; allowed[i] != NULL; i++) {
				(void)faucet_buf_puts(&names, i ? ", " : "");
				(void)faucet_buf_puts(&names, allowed[i]);
			}
			const char *best;
			size_t count = i;

			best = cli_suggest(scalar_raw(key), allowed, count);
			if (best != NULL)
				rc = node_error(l, key, "%s: unknown field '%s' (did you mean '%s'? "
						"known: %s)", field, scalar_raw(key), best,
						names.ptr ? names.ptr : "");
			else
				rc = node_error(l, key, "%s: unknown field '%s' (known: %s)", field,
						scalar_raw(key), names.ptr ? names.ptr : "");
			faucet_buf_dispose(&names);
			return rc;
		}
	}
	return 0;
}

/* The value of field `name` in a checked mapping, or NULL. */
static yaml_node_t *field_of(loader *l, const yaml_node_t *map, const char *name,
			     const yaml_node_t **key_out)
{
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *key = node_at(l, p->key);
		if (key != NULL && key->type == YAML_SCALAR_NODE &&
		    strcmp(scalar_raw(key), name) == 0) {
			if (key_out != NULL)
				*key_out = key;
			return node_at(l, p->value);
		}
	}
	return NULL;
}

/* ---- the blocks -------------------------------------------------------- */

static int load_encryption(loader *l, yaml_node_t *node)
{
	static const char *const fields[] = {"key", "key_env", "previous_keys", "algorithm", NULL};
	cli_config *c = l->cfg;
	yaml_node_t *key, *key_env, *prev, *algo;
	int rc;

	if (node_is_null(node))
		return 0;
	rc = check_mapping(l, node, "state.config.encryption", fields);
	if (rc != 0)
		return rc;
	rc = cli_forbid_core_dumps();
	if (rc != 0)
		return rc;
	c->has_encryption = 1;
	key = field_of(l, node, "key", NULL);
	key_env = field_of(l, node, "key_env", NULL);
	prev = field_of(l, node, "previous_keys", NULL);
	algo = field_of(l, node, "algorithm", NULL);

	if (algo != NULL) {
		char *name;
		rc = read_string(l, algo, "state.config.encryption.algorithm", &name);
		if (rc != 0)
			return rc;
		if (name != NULL && strcasecmp(name, "aes-256-gcm") != 0) {
			rc = node_error(l, algo,
					"encryption algorithm '%s' is not supported (supported: aes-256-gcm)",
					shown(algo));
			free(name);
			return rc;
		}
		free(name);
	}
	if (key != NULL && key_env != NULL)
		return node_error(l, key_env,
				  "state.config.encryption: give `key` or `key_env`, not both");
	if (key != NULL) {
		rc = read_secret(l, key, "state.config.encryption.key", &c->encryption_key);
		if (rc != 0)
			return rc;
	} else if (key_env != NULL) {
		char *var;
		const char *val;

		rc = read_string(l, key_env, "state.config.encryption.key_env", &var);
		if (rc != 0)
			return rc;
		if (var == NULL || *var == '\0') {
			free(var);
			return node_error(l, key_env, "state.config.encryption.key_env is empty");
		}
		val = getenv(var);
		if (val == NULL) {
			rc = node_error(l, key_env,
					"environment variable %s (state.config.encryption.key_env) is not set",
					var);
			free(var);
			return rc;
		}
		free(var);
		c->encryption_key = faucet__strdup(val);
		if (c->encryption_key == NULL)
			return FAUCET_ENOMEM;
	} else {
		return node_error(l, node, "state.config.encryption needs a `key` (or `key_env`)");
	}
	if (c->encryption_key == NULL || *c->encryption_key == '\0')
		return node_error(l, key ? key : key_env, "state.config.encryption key is empty");
	if (prev != NULL)
		return read_string_list(l, prev, "state.config.encryption.previous_keys", 1,
					&c->encryption_previous_keys);
	return 0;
}

/* The library's table of backends, by type or by URL scheme (config.h). */
const faucet_backend_info *cli_backend_of_type(const char *type)
{
	const faucet_backend_info *be;

	for (size_t i = 0; type != NULL && (be = faucet_store_backend_info(i)) != NULL; i++) {
		if (strcmp(be->type, type) == 0)
			return be;
	}
	return NULL;
}

const faucet_backend_info *cli_backend_of_url(const char *url, const char **rest)
{
	const faucet_backend_info *be;

	for (size_t i = 0; (be = faucet_store_backend_info(i)) != NULL; i++) {
		for (const char *const *s = be->schemes; *s != NULL; s++) {
			if (strncmp(url, *s, strlen(*s)) == 0) {
				if (rest != NULL)
					*rest = url + strlen(*s);
				return be;
			}
		}
	}
	return NULL;
}

int cli_backend_has_field(const faucet_backend_info *be, const char *name)
{
	for (const faucet_backend_field *f = be->fields; f->name != NULL; f++) {
		if (strcmp(f->name, name) == 0)
			return 1;
	}
	return 0;
}

/* Every field of every backend, each once, NULL-terminated: what
 * state.config may hold at all.  Returns 0, or -1 when `max` is too few. */
static int all_backend_fields(const char **names, size_t max)
{
	const faucet_backend_info *be;
	size_t n = 0;

	for (size_t i = 0; (be = faucet_store_backend_info(i)) != NULL; i++) {
		for (const faucet_backend_field *f = be->fields; f->name != NULL; f++) {
			size_t k;

			for (k = 0; k < n && strcmp(names[k], f->name) != 0; k++)
				;
			if (k < n)
				continue;
			if (n + 1 >= max)
				return -1;
			names[n++] = f->name;
		}
	}
	names[n] = NULL;
	return 0;
}

/* A field of another backend (type: file with table:) is an error naming
 * it: left alone it would be ignored, and the operator would believe the
 * store is configured as written. */
static int check_backend_fields(loader *l, const yaml_node_t *node)
{
	const faucet_backend_info *be = cli_backend_of_type(l->cfg->state_type);

	if (be == NULL)
		return 0;
	for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *key = node_at(l, p->key);
		const char *name = scalar_raw(key);
		faucet_buf takes = FAUCET_BUF_INIT;
		int rc;

		if (cli_backend_has_field(be, name))
			continue;
		for (const faucet_backend_field *f = be->fields; f->name != NULL; f++)
			(void)faucet_buf_printf(&takes, "%s%s", f == be->fields ? "" : ", ", f->name);
		rc = node_error(l, key, "state.config.%s does not apply to type '%s' (it takes: %s)",
				name, be->type, takes.ptr ? takes.ptr : "no options");
		faucet_buf_dispose(&takes);
		return rc;
	}
	return 0;
}

/* type: etcd - the endpoints, prefix and timeouts become the store's URL,
 * etcd://H:P,H:P/PREFIX?dial_timeout=..&request_timeout=.., which the
 * library reads (its checks and messages are the URL's); `url` instead of
 * endpoints and prefix is taken as it is. */
static int etcd_url(loader *l, yaml_node_t *node)
{
	cli_config *c = l->cfg;
	faucet_buf b = FAUCET_BUF_INIT;

	if (c->state_url != NULL) {
		if (c->state_etcd_endpoints.count > 0 || c->state_etcd_prefix != NULL)
			return node_error(l, node,
					  "state.config: give either url or endpoints and prefix "
					  "for type etcd, not both");
		if (c->state_etcd_dial_timeout != NULL || c->state_etcd_request_timeout != NULL)
			return node_error(l, node,
					  "state.config: with url, give dial_timeout and "
					  "request_timeout in the URL (?dial_timeout=2s)");
		return 0;
	}
	if (c->state_etcd_endpoints.count == 0)
		return node_error(l, node,
				  "state.config.endpoints is missing or empty (type etcd needs "
				  "endpoints: [HOST:PORT, ...])");
	if (c->state_etcd_prefix == NULL || *c->state_etcd_prefix == '\0')
		return node_error(l, node,
				  "state.config.prefix is missing or empty (type etcd keeps its "
				  "keys under PREFIX/)");
	for (size_t i = 0; i < c->state_etcd_endpoints.count; i++) {
		const char *e = c->state_etcd_endpoints.strings[i];

		if (*e == '\0' || strpbrk(e, ",/?&") != NULL)
			return node_error(l, node,
					  "state.config.endpoints[%zu] '%s' must be HOST:PORT", i, e);
	}
	if (strpbrk(c->state_etcd_prefix, "?&") != NULL)
		return node_error(l, node, "state.config.prefix '%s' may not hold '?' or '&'",
				  c->state_etcd_prefix);
	(void)faucet_buf_puts(&b, "etcd://");
	for (size_t i = 0; i < c->state_etcd_endpoints.count; i++)
		(void)faucet_buf_printf(&b, "%s%s", i ? "," : "", c->state_etcd_endpoints.strings[i]);
	(void)faucet_buf_printf(&b, "/%s", c->state_etcd_prefix);
	if (c->state_etcd_dial_timeout != NULL)
		(void)faucet_buf_printf(&b, "?dial_timeout=%s", c->state_etcd_dial_timeout);
	if (c->state_etcd_request_timeout != NULL)
		(void)faucet_buf_printf(&b, "%crequest_timeout=%s",
				     c->state_etcd_dial_timeout ? '&' : '?',
				     c->state_etcd_request_timeout);
	c->state_url = faucet_buf_detach(&b);
	if (c->state_url == NULL)
		return node_error(l, node, "out of memory");
	return 0;
}

static int load_state_config(loader *l, yaml_node_t *node)
{
	const char *fields[64];
	cli_config *c = l->cfg;
	yaml_node_t *v;
	int rc;

	if (node_is_null(node))
		return 0;
	if (all_backend_fields(fields, FAUCET_ARRAY_LEN(fields)) != 0)
		return node_error(l, node, "state.config: too many backend fields");
	rc = check_mapping(l, node, "state.config", fields);
	if (rc == 0)
		rc = check_backend_fields(l, node);
	if (rc == 0 && (v = field_of(l, node, "path", NULL)) != NULL)
		rc = read_string(l, v, "state.config.path", &c->state_path);
	if (rc == 0 && (v = field_of(l, node, "url", NULL)) != NULL)
		rc = read_string(l, v, "state.config.url", &c->state_url);
	if (rc == 0 && (v = field_of(l, node, "table", NULL)) != NULL)
		rc = read_string(l, v, "state.config.table", &c->state_table);
	if (rc == 0 && (v = field_of(l, node, "namespace", NULL)) != NULL)
		rc = read_string(l, v, "state.config.namespace", &c->state_namespace);
	if (rc == 0 && (v = field_of(l, node, "ensure_table", NULL)) != NULL) {
		int on = 0;
		rc = read_bool(l, v, "state.config.ensure_table", &on);
		c->state_ensure_table = on ? 1 : -1;
	}
	if (rc == 0 && (v = field_of(l, node, "max_connections", NULL)) != NULL)
		rc = read_int(l, v, "state.config.max_connections", 1, 10000,
			      &c->state_max_connections);
	if (rc == 0 && (v = field_of(l, node, "index", NULL)) != NULL)
		rc = read_bool(l, v, "state.config.index", &c->state_redis_index);
	if (rc == 0 && (v = field_of(l, node, "endpoints", NULL)) != NULL)
		rc = read_string_list(l, v, "state.config.endpoints", 0, &c->state_etcd_endpoints);
	if (rc == 0 && (v = field_of(l, node, "prefix", NULL)) != NULL)
		rc = read_string(l, v, "state.config.prefix", &c->state_etcd_prefix);
	if (rc == 0 && (v = field_of(l, node, "dial_timeout", NULL)) != NULL)
		rc = read_string(l, v, "state.config.dial_timeout", &c->state_etcd_dial_timeout);
	if (rc == 0 && (v = field_of(l, node, "request_timeout", NULL)) != NULL)
		rc = read_string(l, v, "state.config.request_timeout", &c->state_etcd_request_timeout);
	if (rc == 0 && c->state_type != NULL && strcmp(c->state_type, "etcd") == 0)
		rc = etcd_url(l, node);
	if (rc == 0 && (v = field_of(l, node, "min_replicas", NULL)) != NULL)
		rc = read_int(l, v, "state.config.min_replicas", 1, 100, &c->state_min_replicas);
	if (rc == 0 && (v = field_of(l, node, "wait_timeout", NULL)) != NULL)
		rc = read_duration_ms(l, v, "state.config.wait_timeout", &c->state_wait_timeout_ms);
	if (rc == 0 && (v = field_of(l, node, "encryption", NULL)) != NULL) {
		if (c->state_type != NULL && strcmp(c->state_type, "file") != 0 && !node_is_null(v))
			return node_error(l, v,
					  "state.config.encryption applies to the file store only, "
					  "not to type '%s'",
					  c->state_type);
		rc = load_encryption(l, v);
	}
	return rc;
}

static int load_state(loader *l, yaml_node_t *node)
{
	static const char *const fields[] = {"type", "config", NULL};
	cli_config *c = l->cfg;
	yaml_node_t *type, *conf;
	const char *types[32], *best;
	size_t nt;
	int rc;

	if (node_is_null(node))
		return 0;
	rc = check_mapping(l, node, "state", fields);
	if (rc != 0)
		return rc;
	c->has_state = 1;
	type = field_of(l, node, "type", NULL);
	nt = 0;
	for (const faucet_backend_info *be; nt + 1 < FAUCET_ARRAY_LEN(types) &&
					    (be = faucet_store_backend_info(nt)) != NULL;
	     nt++)
		types[nt] = be->type;
	if (type == NULL) {
		faucet_buf known = FAUCET_BUF_INIT;

		for (size_t i = 0; i < nt; i++)
			(void)faucet_buf_printf(&known, "%s%s", i ? ", " : "", types[i]);
		rc = node_error(l, node, "state needs a `type` (%s)", known.ptr ? known.ptr : "");
		faucet_buf_dispose(&known);
		return rc;
	}
	rc = read_string(l, type, "state.type", &c->state_type);
	if (rc != 0)
		return rc;
	if (c->state_type == NULL || *c->state_type == '\0')
		return node_error(l, type, "state.type is empty");
	/* A near miss of a known type (sqllite) is named here; any other
	 * unknown type is the library's to refuse, with its list. */
	if (cli_backend_of_type(c->state_type) == NULL &&
	    (best = cli_suggest(c->state_type, types, nt)) != NULL)
		return node_error(l, type,
				  "state.type: unknown state store type '%s' (did you mean '%s'?)",
				  c->state_type, best);
	conf = field_of(l, node, "config", NULL);
	return conf == NULL ? 0 : load_state_config(l, conf);
}

static int load_backfill(loader *l, yaml_node_t *node)
{
	static const char *const fields[] = {"window", "concurrency", "timezone", "command", NULL};
	cli_config *c = l->cfg;
	yaml_node_t *v;
	int rc;

	if (node_is_null(node))
		return 0;
	rc = check_mapping(l, node, "backfill", fields);
	if (rc == 0 && (v = field_of(l, node, "window", NULL)) != NULL)
		rc = read_string(l, v, "backfill.window", &c->backfill_window);
	if (rc == 0 && (v = field_of(l, node, "concurrency", NULL)) != NULL)
		rc = read_int(l, v, "backfill.concurrency", 1, 10000, &c->backfill_concurrency);
	if (rc == 0 && (v = field_of(l, node, "timezone", NULL)) != NULL)
		rc = read_string(l, v, "backfill.timezone", &c->backfill_timezone);
	if (rc == 0 && (v = field_of(l, node, "command", NULL)) != NULL) {
		if (v->type == YAML_SCALAR_NODE && !node_is_null(v))
			return node_error(l, v,
					  "backfill.command must be a list of arguments "
					  "(it runs without a shell), e.g. [\"my-job\", \"--from\", \"${backfill.start}\"]");
		rc = read_string_list(l, v, "backfill.command", 0, &c->backfill_command);
	}
	return rc;
}

static int load_root(loader *l)
{
	yaml_node_t *root = yaml_document_get_root_node(l->doc);
	yaml_node_t *v;
	int rc;

	if (root == NULL || node_is_null(root))
		return faucet_error_set(FAUCET_ECONFIG,
					"config %s: the file is empty (expected a pipeline "
					"with name, state, backfill)",
					l->path);
	rc = check_mapping(l, root, "the top level", NULL);
	if (rc != 0)
		return rc;
	if ((v = field_of(l, root, "name", NULL)) != NULL) {
		rc = read_string(l, v, "name", &l->cfg->name);
		if (rc != 0)
			return rc;
	}
	if ((v = field_of(l, root, "state", NULL)) != NULL) {
		rc = load_state(l, v);
		if (rc != 0)
			return rc;
	}
	if ((v = field_of(l, root, "backfill", NULL)) != NULL)
		return load_backfill(l, v);
	return 0;
}

/* ---- the file ---------------------------------------------------------- */

static int read_config_file(const char *path, char **out, size_t *len)
{
	faucet_buf b = FAUCET_BUF_INIT;
	struct stat st;
	int fd;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return faucet__error_os(FAUCET_ECONFIG, errno, "config %s: cannot open", path);
	/* Size the buffer up front so it never moves: it may hold a key. */
	if (fstat(fd, &st) != 0 || faucet_buf_grow(&b, (size_t)st.st_size + 4096) != 0) {
		int err = errno;
		close(fd);
		faucet_buf_dispose(&b);
		return faucet__error_os(FAUCET_ECONFIG, err, "config %s: cannot read", path);
	}
	for (;;) {
		ssize_t n;

		if (b.cap - b.len < 2) {
			/* The file grew while we read it; wipe the old buffer. */
			faucet_buf bigger = FAUCET_BUF_INIT;
			if (faucet_buf_grow(&bigger, b.cap * 2) != 0 ||
			    faucet_buf_put(&bigger, b.ptr, b.len) != 0) {
				explicit_bzero(b.ptr, b.len);
				faucet_buf_dispose(&b);
				faucet_buf_dispose(&bigger);
				close(fd);
				return FAUCET_ENOMEM;
			}
			explicit_bzero(b.ptr, b.len);
			faucet_buf_dispose(&b);
			b = bigger;
		}
		n = read(fd, b.ptr + b.len, b.cap - b.len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = errno;
			explicit_bzero(b.ptr, b.len);
			faucet_buf_dispose(&b);
			close(fd);
			return faucet__error_os(FAUCET_ECONFIG, err, "config %s: cannot read", path);
		}
		if (n == 0)
			break;
		b.len += (size_t)n;
	}
	close(fd);
	b.ptr[b.len] = '\0';
	*len = b.len;
	*out = b.ptr;
	return 0;
}

/* libyaml keeps the raw and decoded input in its own buffers; clear them
 * before the parser frees them. */
static void wipe_parser(yaml_parser_t *p)
{
	if (p->raw_buffer.start != NULL)
		explicit_bzero(p->raw_buffer.start, (size_t)(p->raw_buffer.end - p->raw_buffer.start));
	if (p->buffer.start != NULL)
		explicit_bzero(p->buffer.start, (size_t)(p->buffer.end - p->buffer.start));
}

/* Clear every scalar of the document before it is freed: the loader wipes
 * the ones it recognises as secrets, but a key may also sit in a part of
 * the file we never read (an anchor, an ignored section). */
static void wipe_document(yaml_document_t *doc)
{
	for (yaml_node_t *n = doc->nodes.start; n != NULL && n < doc->nodes.top; n++) {
		if (n->type == YAML_SCALAR_NODE && n->data.scalar.value != NULL)
			explicit_bzero(n->data.scalar.value, n->data.scalar.length);
	}
}

static int parse_yaml(const char *path, const char *text, size_t len, yaml_document_t *doc)
{
	yaml_parser_t parser;
	int ok, rc;

	if ((rc = cli_yaml_load()) != 0)
		return rc;
	if (!yaml_parser_initialize(&parser))
		return faucet_error_set(FAUCET_ENOMEM, "out of memory");
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	ok = yaml_parser_load(&parser, doc);
	if (ok && yaml_document_get_root_node(doc) != NULL) {
		/* A second document would be ignored, and which one is "the"
		 * config would be a guess: refuse the file, naming the line. */
		yaml_document_t next;

		if (!yaml_parser_load(&parser, &next)) {
			ok = 0;
		} else {
			yaml_node_t *root = yaml_document_get_root_node(&next);

			if (root != NULL) {
				(void)faucet_error_set(FAUCET_ECONFIG,
						       "config %s: line %zu: a second YAML document "
						       "(after ---); a config is one document",
						       path, root->start_mark.line + 1);
				wipe_document(&next);
				yaml_document_delete(&next);
				wipe_document(doc);
				yaml_document_delete(doc);
				wipe_parser(&parser);
				yaml_parser_delete(&parser);
				return FAUCET_ECONFIG;
			}
			yaml_document_delete(&next);
		}
		if (!ok) {
			wipe_document(doc);
			yaml_document_delete(doc);
		}
	}
	if (!ok) {
		(void)faucet_error_set(FAUCET_ECONFIG, "config %s: line %zu: bad YAML: %s%s%s", path,
				       parser.problem_mark.line + 1,
				       parser.problem ? parser.problem : "cannot parse",
				       parser.context ? " " : "",
				       parser.context ? parser.context : "");
	}
	wipe_parser(&parser);
	yaml_parser_delete(&parser);
	return ok ? 0 : FAUCET_ECONFIG;
}

int cli_config_load(cli_config **out, const char *path)
{
	yaml_document_t doc;
	cli_config *c;
	char *text = NULL, abs[PATH_MAX];
	size_t len = 0;
	loader l;
	int rc;

	*out = NULL;
	rc = read_config_file(path, &text, &len);
	if (rc != 0)
		return rc;
	rc = parse_yaml(path, text, len, &doc);
	explicit_bzero(text, len);
	free(text);
	if (rc != 0)
		return rc;
	c = faucet__calloc(1, sizeof(*c));
	if (c == NULL) {
		wipe_document(&doc);
		yaml_document_delete(&doc);
		return FAUCET_ENOMEM;
	}
	l.path = path;
	l.doc = &doc;
	l.cfg = c;
	rc = load_root(&l);
	wipe_document(&doc);
	yaml_document_delete(&doc);
	if (rc == 0 && realpath(path, abs) == NULL)
		rc = faucet__error_os(FAUCET_ECONFIG, errno, "config %s: cannot resolve its path", path);
	if (rc == 0 && (c->path = faucet__strdup(abs)) == NULL)
		rc = FAUCET_ENOMEM;
	if (rc != 0) {
		cli_config_free(c);
		return rc;
	}
	*out = c;
	return 0;
}

void cli_config_store(const cli_config *c, faucet_store_config *cfg,
		      faucet_encryption_options *enc)
{
	faucet_store_config init = FAUCET_STORE_CONFIG_INIT;

	*cfg = init;
	memset(enc, 0, sizeof(*enc));
	cfg->type = c->state_type;
	cfg->path = c->state_path;
	cfg->url = c->state_url;
	cfg->table = c->state_table;
	cfg->ensure_table = c->state_ensure_table;
	cfg->max_connections = c->state_max_connections;
	cfg->namespace_name = c->state_namespace;
	cfg->redis_index = c->state_redis_index;
	cfg->redis_min_replicas = c->state_min_replicas;
	cfg->redis_wait_timeout_ms = c->state_wait_timeout_ms;
	if (c->has_encryption) {
		enc->key = c->encryption_key;
		enc->previous_keys = (const char *const *)c->encryption_previous_keys.strings;
		enc->previous_count = c->encryption_previous_keys.count;
		cfg->encryption = enc;
	}
}
