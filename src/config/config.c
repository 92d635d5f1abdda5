/*
 * config.c - a faucet pipeline YAML, read for everyone who reads one
 * (faucet/config.h): the command, the Python package, an embedder.
 *
 * libyaml builds the whole document as a node graph; we then walk only the
 * three top-level entries we understand (`name`, `state`, `backfill`) and
 * ignore the rest, so the pipeline's own sections never need to make sense
 * here.  Inside those three blocks we are strict: an unknown field is an
 * error, because a misspelt `path` would otherwise quietly point the
 * operator at an empty store.  Which fields `state.config` takes, and of
 * what kind each is, is the backend table's (src/stores/registry.c); how a
 * field's text becomes its value is faucet__store_field_set's, the same
 * for a URL option - nothing here knows one backend from another.
 *
 * Key material (state.config.encryption, and a password in a URL) passes
 * through three places we control - the file buffer, libyaml's buffers and
 * nodes, and our expanded strings - and each is wiped before it is freed.
 * Expansion sizes its output exactly, so no realloc leaves a stray copy
 * behind.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include <faucet/config.h>

#include "internal.h"
#include "config/config_internal.h"
#include "stores/registry.h"

struct faucet_config {
	char *path; /* absolute */
	char *name;

	int has_state;
	faucet_store_config store;  /* its strings are in `texts` */
	faucet_encryption_options enc;
	faucet_strarray texts;      /* every string `store` and `enc` point at; wiped when freed */
	char *store_url;            /* a URL the backend built from its fields, or NULL */
	faucet_strarray previous_keys;
	const char **previous;      /* previous_keys.strings, for enc */

	faucet_config_backfill backfill;
	char *backfill_window;
	char *backfill_timezone;
	faucet_strarray backfill_argv;
	const char **backfill_command; /* backfill_argv's strings and a NULL */

	/* Every ${env:VAR} substituted: env_refs[i] is "${env:VAR}", env_values[i]
	 * the text put in its place (wiped when freed).  No message may show
	 * such a value: faucet_config_scrub() puts the reference back. */
	faucet_strarray env_refs;
	faucet_strarray env_values;
};

typedef struct {
	const char *path; /* as given, for messages */
	yaml_document_t *doc;
	faucet_config *cfg;
} loader;

/* The smallest expanded value faucet_config_scrub hides (config.h). */
#define SCRUB_MIN 4

static void wipe_free(char *s)
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

void faucet_config_free(faucet_config *c)
{
	if (c == NULL)
		return;
	free(c->path);
	free(c->name);
	wipe_strarray(&c->texts);
	wipe_free(c->store_url);
	wipe_strarray(&c->previous_keys);
	free(c->previous);
	free(c->backfill_window);
	free(c->backfill_timezone);
	faucet_strarray_dispose(&c->backfill_argv);
	free(c->backfill_command);
	faucet_strarray_dispose(&c->env_refs);
	wipe_strarray(&c->env_values);
	free(c);
}

const char *faucet_config_path(const faucet_config *c)
{
	return c->path;
}

const char *faucet_config_name(const faucet_config *c)
{
	return c->name;
}

const faucet_store_config *faucet_config_store(const faucet_config *c)
{
	return c->has_state ? &c->store : NULL;
}

const faucet_config_backfill *faucet_config_backfill_defaults(const faucet_config *c)
{
	return &c->backfill;
}

/* ---- messages ---------------------------------------------------------- */

/* The longest value of `c` that starts at `p`, as an index, or -1. */
static long env_value_at(const faucet_config *c, const char *p)
{
	long best = -1;
	size_t best_len = 0;

	for (size_t i = 0; i < c->env_values.count; i++) {
		const char *v = c->env_values.strings[i];
		size_t n = strlen(v);

		if (n >= SCRUB_MIN && n > best_len && strncmp(p, v, n) == 0) {
			best = (long)i;
			best_len = n;
		}
	}
	return best;
}

char *faucet_config_scrub(const faucet_config *c, const char *text)
{
	faucet_buf b = FAUCET_BUF_INIT;

	if (c == NULL || c->env_values.count == 0)
		return faucet__strdup(text);
	for (const char *p = text; *p;) {
		long i = env_value_at(c, p);

		if (i < 0) {
			(void)faucet__buf_putc(&b, *p++);
			continue;
		}
		(void)faucet__buf_puts(&b, c->env_refs.strings[i]);
		p += strlen(c->env_values.strings[i]);
	}
	return faucet__buf_detach(&b);
}

static int node_error(loader *l, const yaml_node_t *node, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int node_error(loader *l, const yaml_node_t *node, const char *fmt, ...)
{
	char *msg, *scrubbed;
	va_list ap;

	va_start(ap, fmt);
	msg = faucet__vsprintf(fmt, ap);
	va_end(ap);
	if (msg == NULL)
		return faucet_error_set(FAUCET_ENOMEM, "out of memory");
	/* A value from ${env:...} may have found its way into the detail (a
	 * type named in another field's message, say): put the reference back. */
	scrubbed = faucet_config_scrub(l->cfg, msg);
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
static int remember_env(faucet_config *c, const char *name, const char *value)
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
				(void)faucet__buf_puts(&names, i ? ", " : "");
				(void)faucet__buf_puts(&names, allowed[i]);
			}
			const char *best;
			size_t count = i;

			best = faucet__suggest(scalar_raw(key), allowed, count);
			if (best != NULL)
				rc = node_error(l, key, "%s: unknown field '%s' (did you mean '%s'? "
						"known: %s)", field, scalar_raw(key), best,
						names.ptr ? names.ptr : "");
			else
				rc = node_error(l, key, "%s: unknown field '%s' (known: %s)", field,
						scalar_raw(key), names.ptr ? names.ptr : "");
			faucet__buf_dispose(&names);
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

/* state.config.encryption.algorithm: aes-256-gcm, the one there is. */
static int check_algorithm(loader *l, const yaml_node_t *algo)
{
	char *name;
	int rc = read_string(l, algo, "state.config.encryption.algorithm", &name);

	if (rc == 0 && name != NULL && strcasecmp(name, "aes-256-gcm") != 0)
		rc = node_error(l, algo,
				"encryption algorithm '%s' is not supported (supported: aes-256-gcm)",
				shown(algo));
	free(name);
	return rc;
}

/* The key in the environment variable state.config.encryption.key_env
 * names, copied into *out (caller wipes and frees). */
static int key_from_env(loader *l, const yaml_node_t *key_env, char **out)
{
	const char *val;
	char *var;
	int rc = read_string(l, key_env, "state.config.encryption.key_env", &var);

	*out = NULL;
	if (rc != 0)
		return rc;
	if (var == NULL || *var == '\0') {
		free(var);
		return node_error(l, key_env, "state.config.encryption.key_env is empty");
	}
	val = getenv(var);
	if (val == NULL)
		rc = node_error(l, key_env,
				"environment variable %s (state.config.encryption.key_env) is not set",
				var);
	else if ((*out = faucet__strdup(val)) == NULL)
		rc = FAUCET_ENOMEM;
	free(var);
	return rc;
}

static int load_previous_keys(loader *l, yaml_node_t *prev);

static int load_encryption(loader *l, yaml_node_t *node)
{
	static const char *const fields[] = {"key", "key_env", "previous_keys", "algorithm", NULL};
	faucet_config *c = l->cfg;
	yaml_node_t *key, *key_env, *prev, *algo;
	char *secret = NULL;
	int rc;

	if (node_is_null(node))
		return 0;
	rc = check_mapping(l, node, "state.config.encryption", fields);
	if (rc != 0)
		return rc;
	key = field_of(l, node, "key", NULL);
	key_env = field_of(l, node, "key_env", NULL);
	prev = field_of(l, node, "previous_keys", NULL);
	algo = field_of(l, node, "algorithm", NULL);

	if (algo != NULL && (rc = check_algorithm(l, algo)) != 0)
		return rc;
	if (key != NULL && key_env != NULL)
		return node_error(l, key_env,
				  "state.config.encryption: give `key` or `key_env`, not both");
	if (key != NULL) {
		rc = read_secret(l, key, "state.config.encryption.key", &secret);
		if (rc != 0)
			return rc;
	} else if (key_env != NULL) {
		if ((rc = key_from_env(l, key_env, &secret)) != 0)
			return rc;
	} else {
		return node_error(l, node, "state.config.encryption needs a `key` (or `key_env`)");
	}
	if (secret == NULL || *secret == '\0') {
		free(secret);
		return node_error(l, key ? key : key_env, "state.config.encryption key is empty");
	}
	if (faucet__strarray_append_owned(&c->texts, secret) != 0)
		return FAUCET_ENOMEM;
	c->enc.key = secret;
	c->store.encryption = &c->enc;
	return prev == NULL ? 0 : load_previous_keys(l, prev);
}

/* state.config.encryption.previous_keys, into the encryption options. */
static int load_previous_keys(loader *l, yaml_node_t *prev)
{
	faucet_config *c = l->cfg;
	int rc = read_string_list(l, prev, "state.config.encryption.previous_keys", 1,
				  &c->previous_keys);

	if (rc != 0)
		return rc;
	/* enc wants `const char *const *`: a copy of the array (not the keys). */
	c->previous = faucet__calloc(c->previous_keys.count + 1, sizeof(*c->previous));
	if (c->previous == NULL)
		return FAUCET_ENOMEM;
	for (size_t i = 0; i < c->previous_keys.count; i++)
		c->previous[i] = c->previous_keys.strings[i];
	c->enc.previous_keys = c->previous;
	c->enc.previous_count = c->previous_keys.count;
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

/* The field `name` of backend `be`, or NULL. */
static const faucet_backend_field *backend_field(const faucet_backend_info *be, const char *name)
{
	for (const faucet_backend_field *f = be->fields; f->name != NULL; f++) {
		if (strcmp(f->name, name) == 0)
			return f;
	}
	return NULL;
}

/* A field of another backend (type: file with table:) is an error naming
 * it: left alone it would be ignored, and the operator would believe the
 * store is configured as written. */
static int not_this_backends(loader *l, const yaml_node_t *key, const faucet_backend_info *be)
{
	faucet_buf takes = FAUCET_BUF_INIT;
	int rc;

	for (const faucet_backend_field *f = be->fields; f->name != NULL; f++)
		(void)faucet__buf_printf(&takes, "%s%s", f == be->fields ? "" : ", ", f->name);
	rc = node_error(l, key, "state.config.%s does not apply to type '%s' (it takes: %s)",
			scalar_raw(key), be->type, takes.ptr ? takes.ptr : "no options");
	faucet__buf_dispose(&takes);
	return rc;
}

/* The library's last message, as the message of the config at `node`:
 * "config PATH: line N: PREFIX<message>". */
static int wrap_error(loader *l, const yaml_node_t *node, const char *prefix, int rc)
{
	char *msg;

	if (rc == FAUCET_ENOMEM)
		return rc;
	msg = faucet__strdup(faucet_error_last()->message);
	if (msg == NULL)
		return FAUCET_ENOMEM;
	rc = node_error(l, node, "%s%s", prefix, msg);
	free(msg);
	return rc;
}

/* A field's value as text: a string (NULL when null), or a list's entries
 * joined by ',' (an entry holding ',' refused: it would read as two). */
static int field_text(loader *l, yaml_node_t *node, const faucet_backend_field *f,
		      const char *label, char **out)
{
	faucet_strarray items = {NULL, 0};
	faucet_buf b = FAUCET_BUF_INIT;
	int rc;

	*out = NULL;
	if (strcmp(f->kind, "list") != 0)
		return read_string(l, node, label, out);
	rc = read_string_list(l, node, label, 0, &items);
	for (size_t i = 0; rc == 0 && i < items.count; i++) {
		if (strchr(items.strings[i], ',') != NULL)
			rc = node_error(l, node, "%s[%zu] '%s' may not hold ','", label, i,
					items.strings[i]);
		else
			(void)faucet__buf_printf(&b, "%s%s", i ? "," : "", items.strings[i]);
	}
	wipe_strarray(&items);
	if (rc == 0 && b.len > 0 && (*out = faucet__buf_detach(&b)) == NULL)
		rc = FAUCET_ENOMEM;
	faucet__buf_dispose(&b);
	return rc;
}

/* One field of state.config into the store config: a member of
 * faucet_store_config, or kept in `names`/`values` for the backend's
 * from_fields.  Its text is kept in c->texts (wiped when freed). */
static int load_field(loader *l, const yaml_node_t *key, yaml_node_t *value,
		      const faucet_backend_field *f, const char **names, const char **values,
		      size_t *left)
{
	faucet_config *c = l->cfg;
	char label[96], *text;
	int rc;

	if (strcmp(f->kind, "mapping") == 0) /* encryption, the one mapping */
		return load_encryption(l, value);
	(void)snprintf(label, sizeof(label), "state.config.%s", f->name);
	rc = field_text(l, value, f, label, &text);
	if (rc != 0 || text == NULL)
		return rc;
	if (faucet__strarray_append_owned(&c->texts, text) != 0)
		return FAUCET_ENOMEM;
	rc = faucet__store_field_set(&c->store, f->name, text, label);
	if (rc == 1) {
		names[*left] = f->name;
		values[(*left)++] = text;
		return 0;
	}
	return rc == 0 ? 0 : wrap_error(l, key, "", rc);
}

static int load_state_config(loader *l, yaml_node_t *node, const faucet__backend_desc *be)
{
	const char *fields[64], *names[16], *values[16];
	faucet_config *c = l->cfg;
	size_t left = 0;
	int rc;

	if (node_is_null(node))
		return 0;
	if (all_backend_fields(fields, FAUCET_ARRAY_LEN(fields)) != 0)
		return node_error(l, node, "state.config: too many backend fields");
	rc = check_mapping(l, node, "state.config", fields);
	for (yaml_node_pair_t *p = node->data.mapping.pairs.start;
	     rc == 0 && be != NULL && p < node->data.mapping.pairs.top; p++) {
		yaml_node_t *key = node_at(l, p->key), *value = node_at(l, p->value);
		const faucet_backend_field *f = backend_field(&be->info, scalar_raw(key));

		if (f == NULL)
			rc = not_this_backends(l, key, &be->info);
		else if (value == NULL)
			rc = node_error(l, key, "state.config.%s: broken value", f->name);
		else if (left >= FAUCET_ARRAY_LEN(names))
			rc = node_error(l, key, "state.config: too many fields");
		else
			rc = load_field(l, key, value, f, names, values, &left);
	}
	if (rc != 0 || be == NULL)
		return rc;
	/* The fields that are no member of faucet_store_config are the
	 * backend's own (etcd's endpoints and prefix become its URL). */
	if (be->from_fields != NULL)
		rc = be->from_fields(&c->store, names, values, left, &c->store_url);
	else if (left > 0)
		rc = faucet_error_set(FAUCET_ECONFIG, "%s does not apply to type '%s'", names[0],
				      be->info.type);
	return rc == 0 ? 0 : wrap_error(l, node, "state.config: ", rc);
}

static int load_state(loader *l, yaml_node_t *node)
{
	static const char *const fields[] = {"type", "config", NULL};
	faucet_config *c = l->cfg;
	yaml_node_t *type, *conf;
	const char *types[32], *best;
	const faucet__backend_desc *be;
	char *name;
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
	for (const faucet_backend_info *bi; nt + 1 < FAUCET_ARRAY_LEN(types) &&
					    (bi = faucet_store_backend_info(nt)) != NULL;
	     nt++)
		types[nt] = bi->type;
	if (type == NULL) {
		faucet_buf known = FAUCET_BUF_INIT;

		for (size_t i = 0; i < nt; i++)
			(void)faucet__buf_printf(&known, "%s%s", i ? ", " : "", types[i]);
		rc = node_error(l, node, "state needs a `type` (%s)", known.ptr ? known.ptr : "");
		faucet__buf_dispose(&known);
		return rc;
	}
	rc = read_string(l, type, "state.type", &name);
	if (rc != 0)
		return rc;
	if (name == NULL || *name == '\0') {
		free(name);
		return node_error(l, type, "state.type is empty");
	}
	if (faucet__strarray_append_owned(&c->texts, name) != 0)
		return FAUCET_ENOMEM;
	c->store.type = name;
	/* A near miss of a known type (sqllite) is named here; any other
	 * unknown type is refused when the store is opened, with its list. */
	be = faucet__backend_by_type(name);
	if (be == NULL && (best = faucet__suggest(name, types, nt)) != NULL)
		return node_error(l, type,
				  "state.type: unknown state store type '%s' (did you mean '%s'?)",
				  name, best);
	conf = field_of(l, node, "config", NULL);
	return conf == NULL ? 0 : load_state_config(l, conf, be);
}

static int load_backfill(loader *l, yaml_node_t *node)
{
	static const char *const fields[] = {"window", "concurrency", "timezone", "command", NULL};
	faucet_config *c = l->cfg;
	yaml_node_t *v;
	int n = 0, rc;

	if (node_is_null(node))
		return 0;
	rc = check_mapping(l, node, "backfill", fields);
	if (rc == 0 && (v = field_of(l, node, "window", NULL)) != NULL)
		rc = read_string(l, v, "backfill.window", &c->backfill_window);
	if (rc == 0 && (v = field_of(l, node, "concurrency", NULL)) != NULL)
		rc = read_int(l, v, "backfill.concurrency", 1, 10000, &n);
	if (rc == 0 && (v = field_of(l, node, "timezone", NULL)) != NULL)
		rc = read_string(l, v, "backfill.timezone", &c->backfill_timezone);
	if (rc == 0 && (v = field_of(l, node, "command", NULL)) != NULL) {
		if (v->type == YAML_SCALAR_NODE && !node_is_null(v))
			return node_error(l, v,
					  "backfill.command must be a list of arguments "
					  "(it runs without a shell), e.g. [\"my-job\", \"--from\", \"${backfill.start}\"]");
		rc = read_string_list(l, v, "backfill.command", 0, &c->backfill_argv);
	}
	if (rc != 0)
		return rc;
	c->backfill.window = c->backfill_window;
	c->backfill.concurrency = (unsigned)n;
	c->backfill.timezone = c->backfill_timezone;
	if (c->backfill_argv.count == 0)
		return 0;
	c->backfill_command = faucet__calloc(c->backfill_argv.count + 1, sizeof(char *));
	if (c->backfill_command == NULL)
		return FAUCET_ENOMEM;
	for (size_t i = 0; i < c->backfill_argv.count; i++)
		c->backfill_command[i] = c->backfill_argv.strings[i];
	c->backfill.command = c->backfill_command;
	c->backfill.command_count = c->backfill_argv.count;
	return 0;
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
	if (fstat(fd, &st) != 0 || faucet__buf_grow(&b, (size_t)st.st_size + 4096) != 0) {
		int err = errno;
		close(fd);
		faucet__buf_dispose(&b);
		return faucet__error_os(FAUCET_ECONFIG, err, "config %s: cannot read", path);
	}
	for (;;) {
		ssize_t n;

		if (b.cap - b.len < 2) {
			/* The file grew while we read it; wipe the old buffer. */
			faucet_buf bigger = FAUCET_BUF_INIT;
			if (faucet__buf_grow(&bigger, b.cap * 2) != 0 ||
			    faucet__buf_put(&bigger, b.ptr, b.len) != 0) {
				explicit_bzero(b.ptr, b.len);
				faucet__buf_dispose(&b);
				faucet__buf_dispose(&bigger);
				close(fd);
				return FAUCET_ENOMEM;
			}
			explicit_bzero(b.ptr, b.len);
			faucet__buf_dispose(&b);
			b = bigger;
		}
		n = read(fd, b.ptr + b.len, b.cap - b.len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = errno;
			explicit_bzero(b.ptr, b.len);
			faucet__buf_dispose(&b);
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

	if ((rc = faucet__yaml_load()) != 0)
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

int faucet_config_load(faucet_config **out, const char *path)
{
	yaml_document_t doc;
	faucet_config *c;
	char *text = NULL, abs[PATH_MAX];
	size_t len = 0;
	loader l;
	int rc;

	if (out == NULL || path == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_config_load: NULL argument");
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
	c->store.version = FAUCET_STORE_CONFIG_VERSION;
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
		faucet_config_free(c);
		return rc;
	}
	*out = c;
	return 0;
}
