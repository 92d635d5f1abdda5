/*
 * registry.c - the table of backends (registry.h): one row per backend,
 * with what a URL, a `state:` config, the store reference and redaction
 * need to know of it, and the small adapters between a URL or config and
 * the backend's own open function.
 *
 * A new backend: its file in src/stores/, its opener declared in
 * registry.h, and a row below (a new config field also needs its member
 * in faucet_store_config and a line in `members`; URL options and the
 * pipeline YAML's fields are both read through that line).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"
#include "stores/loaders.h"
#include "stores/registry.h"

static int memory_from_url(char *url, faucet_store_config *cfg)
{
	if (strcmp(url, "memory:") != 0 && strcmp(url, "memory://") != 0) {
		char *shown = faucet_url_redact(url);

		(void)faucet_error_set(FAUCET_ECONFIG,
				       "store URL 'memory:' takes no path or options (got '%s')",
				       shown ? shown : "?");
		free(shown);
		return FAUCET_ECONFIG;
	}
	cfg->type = "memory";
	return 0;
}

static int memory_open(faucet_store **out, const faucet_store_config *cfg)
{
	(void)cfg;
	return faucet_store_open_memory(out);
}

/* "T:PATH" or "T://PATH" (so file:///abs is /abs), for the types whose
 * scheme is their name and a colon. */
static int path_from_url(char *url, faucet_store_config *cfg, const char *type)
{
	char *path = url + strlen(type) + 1;

	if (strncmp(path, "//", 2) == 0)
		path += 2;
	if (*path == '\0')
		return faucet_error_set(FAUCET_ECONFIG, "store URL '%s' has no path (%s:PATH)", url,
					type);
	cfg->type = type;
	cfg->path = path;
	return 0;
}

static int file_from_url(char *url, faucet_store_config *cfg)
{
	return path_from_url(url, cfg, "file");
}

static int file_open(faucet_store **out, const faucet_store_config *cfg)
{
	faucet_file_options opts = FAUCET_FILE_OPTIONS_INIT;

	opts.encryption = cfg->encryption;

	if (cfg->path == NULL || *cfg->path == '\0')
		return faucet_error_set(FAUCET_ECONFIG, "file state store needs a `path`");
	return faucet_store_open_file(out, cfg->path, &opts);
}

static int sqlite_from_url(char *url, faucet_store_config *cfg)
{
	return path_from_url(url, cfg, "sqlite");
}

static int sqlite_open(faucet_store **out, const faucet_store_config *cfg)
{
	if (cfg->path == NULL || *cfg->path == '\0')
		return faucet_error_set(FAUCET_ECONFIG, "sqlite state store needs a `path`");
	return faucet__store_open_sqlite(out, cfg->path);
}

/*
 * How each config field that is a member of faucet_store_config becomes
 * its value: one row per field name, for URL options and YAML fields
 * alike, so `?max_connections=` and `max_connections:` take the same text
 * and answer with the same message.  Which backend takes which field is
 * its row's `fields` below.
 */
enum member_kind { MEMBER_TEXT, MEMBER_BOOL, MEMBER_TRISTATE, MEMBER_COUNT, MEMBER_MS };

static const struct {
	const char *name;
	enum member_kind kind;
	size_t offset; /* of a const char * (TEXT) or an int */
	long max;      /* COUNT: 1..max; MS: 1 ms..max */
} members[] = {
	{"path", MEMBER_TEXT, offsetof(faucet_store_config, path), 0},
	{"url", MEMBER_TEXT, offsetof(faucet_store_config, url), 0},
	{"table", MEMBER_TEXT, offsetof(faucet_store_config, table), 0},
	{"namespace", MEMBER_TEXT, offsetof(faucet_store_config, namespace_name), 0},
	{"ensure_table", MEMBER_TRISTATE, offsetof(faucet_store_config, ensure_table), 0},
	{"index", MEMBER_BOOL, offsetof(faucet_store_config, redis_index), 0},
	{"max_connections", MEMBER_COUNT, offsetof(faucet_store_config, max_connections), 1000},
	{"min_replicas", MEMBER_COUNT, offsetof(faucet_store_config, redis_min_replicas), 100},
	{"wait_timeout", MEMBER_MS, offsetof(faucet_store_config, redis_wait_timeout_ms), 3600000},
};

/* true/yes/on/1 or false/no/off/0, in any case. */
static int parse_bool(const char *text, const char *label, int *out)
{
	static const char *const yes[] = {"true", "yes", "on", "1"};
	static const char *const no[] = {"false", "no", "off", "0"};

	for (size_t i = 0; i < FAUCET_ARRAY_LEN(yes); i++) {
		if (strcasecmp(text, yes[i]) == 0 || strcasecmp(text, no[i]) == 0) {
			*out = strcasecmp(text, yes[i]) == 0;
			return 0;
		}
	}
	return faucet_error_set(FAUCET_ECONFIG, "%s must be true or false, got '%s'", label, text);
}

int faucet__store_field_set(faucet_store_config *cfg, const char *name, const char *text,
			    const char *label)
{
	for (size_t i = 0; i < FAUCET_ARRAY_LEN(members); i++) {
		char *at = (char *)cfg + members[i].offset;
		int v = 0, rc = 0;

		if (strcmp(members[i].name, name) != 0)
			continue;
		switch (members[i].kind) {
		case MEMBER_TEXT:
			memcpy(at, &text, sizeof(text));
			return 0;
		case MEMBER_BOOL:
			rc = parse_bool(text, label, &v);
			break;
		case MEMBER_TRISTATE:
			rc = parse_bool(text, label, &v);
			v = v ? 1 : -1;
			break;
		case MEMBER_COUNT:
			rc = faucet__parse_positive(text, label, members[i].max, &v);
			break;
		case MEMBER_MS:
			rc = faucet__parse_duration_ms(text, label, members[i].max, &v);
			break;
		}
		if (rc == 0)
			memcpy(at, &v, sizeof(v));
		return rc;
	}
	return 1;
}

/* Take the options `names` off a URL copy and set each one given. */
static int url_options(char *url, faucet_store_config *cfg, const char *const *names,
		       size_t count)
{
	char *values[8] = {NULL};
	int rc = faucet__url_take_params(url, names, values, count);

	for (size_t i = 0; rc == 0 && i < count; i++) {
		char label[64];

		if (values[i] == NULL)
			continue;
		(void)snprintf(label, sizeof(label), "option '%s'", names[i]);
		rc = faucet__store_field_set(cfg, names[i], values[i], label);
	}
	return rc;
}

/* postgres://...?table=t&ensure_table=true&max_connections=5: faucet's
 * options come off the query; the rest (sslmode, ...) goes to libpq. */
static int postgres_from_url(char *url, faucet_store_config *cfg)
{
	static const char *const names[] = {"table", "ensure_table", "max_connections"};
	int rc = url_options(url, cfg, names, FAUCET_ARRAY_LEN(names));

	if (rc == 0)
		rc = faucet__check_pg_hosts(url);
	cfg->type = "postgres";
	cfg->url = url;
	return rc;
}

/* The options of redis:// (the first three) and redis-sentinel:// (all
 * five): namespace, max_connections, index, min_replicas, wait_timeout. */
static int redis_options(char *url, faucet_store_config *cfg, const char *type, size_t count)
{
	static const char *const names[] = {"namespace", "max_connections", "index",
					     "min_replicas", "wait_timeout"};

	cfg->type = type;
	cfg->url = url;
	return url_options(url, cfg, names, count);
}

/* redis://[:password@]host:port/DB?namespace=ns&index=true */
static int redis_from_url(char *url, faucet_store_config *cfg)
{
	return redis_options(url, cfg, "redis", 3);
}

/* The client libraries of PostgreSQL and Redis are loaded on first use
 * (loaders.h): a program that never opens such a store never maps them. */
static int postgres_open(faucet_store **out, const faucet_store_config *cfg)
{
	int rc = faucet__libpq_load();

	return rc ? rc : faucet__store_open_postgres(out, cfg);
}

static int redis_open(faucet_store **out, const faucet_store_config *cfg)
{
	int rc = faucet__hiredis_load();

	return rc ? rc : faucet__store_open_redis(out, cfg);
}

/* etcd://H:P[,H:P...]/PREFIX?dial_timeout=2s&request_timeout=10s: the
 * store reads its own options off the URL (etcd.c), so a config of type
 * etcd is its url alone. */
static int etcd_from_url(char *url, faucet_store_config *cfg)
{
	cfg->type = "etcd";
	cfg->url = url;
	return 0;
}

/* type: etcd in a config: endpoints, prefix and the timeouts become the
 * URL etcd://H:P,H:P/PREFIX?dial_timeout=..&request_timeout=.., which the
 * store reads (its checks and messages are the URL's); a `url` instead of
 * endpoints and prefix is taken as it is. */
static int etcd_from_fields(faucet_store_config *cfg, const char *const *names,
			    const char *const *values, size_t count, char **url_out)
{
	const char *ends = NULL, *prefix = NULL, *dial = NULL, *request = NULL;
	faucet_buf b = FAUCET_BUF_INIT;

	for (size_t i = 0; i < count; i++) {
		const char **slot = strcmp(names[i], "endpoints") == 0	     ? &ends
				    : strcmp(names[i], "prefix") == 0	     ? &prefix
				    : strcmp(names[i], "dial_timeout") == 0 ? &dial
				    : strcmp(names[i], "request_timeout") == 0 ? &request
										: NULL;
		if (slot == NULL)
			return faucet_error_set(FAUCET_ECONFIG, "%s does not apply to type 'etcd'",
						names[i]);
		*slot = values[i];
	}
	if (cfg->url != NULL) {
		if (ends != NULL || prefix != NULL)
			return faucet_error_set(FAUCET_ECONFIG, "give either url or endpoints and "
								"prefix for type etcd, not both");
		if (dial != NULL || request != NULL)
			return faucet_error_set(FAUCET_ECONFIG,
						"with url, give dial_timeout and request_timeout in "
						"the URL (?dial_timeout=2s)");
		return 0;
	}
	if (ends == NULL || *ends == '\0')
		return faucet_error_set(FAUCET_ECONFIG, "endpoints is missing or empty (type etcd "
							"needs endpoints: [HOST:PORT, ...])");
	if (prefix == NULL || *prefix == '\0')
		return faucet_error_set(FAUCET_ECONFIG, "prefix is missing or empty (type etcd "
							"keeps its keys under PREFIX/)");
	for (const char *e = ends; *e != '\0';) {
		size_t n = strcspn(e, ",");

		if (n == 0 || strcspn(e, "/?&") < n)
			return faucet_error_set(FAUCET_ECONFIG, "endpoint '%.*s' must be HOST:PORT",
						(int)n, e);
		e += n + (e[n] == ',');
	}
	if (strpbrk(prefix, "?&") != NULL)
		return faucet_error_set(FAUCET_ECONFIG, "prefix '%s' may not hold '?' or '&'",
					prefix);
	(void)faucet__buf_printf(&b, "etcd://%s/%s", ends, prefix);
	if (dial != NULL)
		(void)faucet__buf_printf(&b, "?dial_timeout=%s", dial);
	if (request != NULL)
		(void)faucet__buf_printf(&b, "%crequest_timeout=%s", dial ? '&' : '?', request);
	*url_out = faucet__buf_detach(&b);
	if (*url_out == NULL)
		return FAUCET_ENOMEM;
	cfg->url = *url_out;
	return 0;
}

static int etcd_open(faucet_store **out, const faucet_store_config *cfg)
{
	return faucet__store_open_etcd(out, cfg);
}

/* redis-sentinel://[[user]:password@]H:P[,H:P...]/MASTER[/DB]?namespace=ns&
 * min_replicas=N&wait_timeout=1s: faucet's options as redis://'s, plus
 * WAIT's (doc/design.md §3.9). */
static int redis_sentinel_from_url(char *url, faucet_store_config *cfg)
{
	return redis_options(url, cfg, "redis-sentinel", 5);
}

#define FIELD(n, k, ph, def, d) {.name = (n), .kind = (k), .placeholder = (ph), .default_value = (def), .doc = (d)}
#define END_FIELDS {0}

/* Fields several backends share. */
#define PATH_FIELD FIELD("path", "string", NULL, NULL, NULL)
#define URL_FIELD FIELD("url", "string", NULL, NULL, NULL)
#define POOL_FIELD FIELD("max_connections", "number", "N", FAUCET__TEXT(FAUCET__POOL_DEFAULT), NULL)
#define NAMESPACE_FIELD                                                                         \
	FIELD("namespace", "string", "NS", FAUCET__REDIS_NAMESPACE_DEFAULT, "non-empty, no ':'")
#define INDEX_FIELD                                                                             \
	FIELD("index", "bool", "B", "false", "true: keep an index of the namespace's keys "      \
	      "rather than SCAN")

static const faucet_backend_field no_fields[] = {END_FIELDS};

static const faucet_backend_field file_fields[] = {
	PATH_FIELD,
	{.name = "encryption", .kind = "mapping", .secret = 1,
	 .doc = "{key, previous_keys: [...], algorithm: aes-256-gcm}, see Encryption"},
	END_FIELDS,
};

static const faucet_backend_field sqlite_fields[] = {PATH_FIELD, END_FIELDS};

static const faucet_backend_field postgres_fields[] = {
	URL_FIELD,
	FIELD("table", "string", "T", FAUCET__PG_TABLE_DEFAULT, "[A-Za-z0-9_]{1,63}"),
	FIELD("ensure_table", "bool", "B", "true", "true: create a missing table; false: never"),
	POOL_FIELD,
	END_FIELDS,
};

static const faucet_backend_field redis_fields[] = {
	URL_FIELD, NAMESPACE_FIELD, INDEX_FIELD, POOL_FIELD, END_FIELDS,
};

static const faucet_backend_field etcd_fields[] = {
	FIELD("endpoints", "list", NULL, NULL, "required: [HOST:PORT, ...]"),
	FIELD("prefix", "string", NULL, NULL, "required; keys live at PREFIX/KEY"),
	FIELD("dial_timeout", "duration", "D", FAUCET__TEXT(FAUCET__ETCD_DIAL_S_DEFAULT) "s", NULL),
	FIELD("request_timeout", "duration", "D", FAUCET__TEXT(FAUCET__ETCD_REQUEST_S_DEFAULT) "s",
	      NULL),
	POOL_FIELD,
	FIELD("url", "string", NULL, NULL, "the URL instead of endpoints and prefix"),
	END_FIELDS,
};

static const faucet_backend_field redis_sentinel_fields[] = {
	URL_FIELD,
	NAMESPACE_FIELD,
	INDEX_FIELD,
	POOL_FIELD,
	FIELD("min_replicas", "number", "N", NULL,
	      "a write counts once N replicas have it; none: a failover may lose acknowledged "
	      "writes"),
	FIELD("wait_timeout", "duration", "T", FAUCET__TEXT(FAUCET__REDIS_WAIT_S_DEFAULT) "s", NULL),
	END_FIELDS,
};

static const char *const memory_schemes[] = {"memory:", NULL};
static const char *const file_schemes[] = {"file:", NULL};
static const char *const sqlite_schemes[] = {"sqlite:", NULL};
static const char *const postgres_schemes[] = {"postgres://", "postgresql://", NULL};
static const char *const redis_schemes[] = {"redis://", NULL};
static const char *const etcd_schemes[] = {"etcd://", NULL};
static const char *const redis_sentinel_schemes[] = {"redis-sentinel://", NULL};

/* The order is the order of every list shown (this build knows: ...). */
static const faucet__backend_desc backends[] = {
	{.info = {"memory", memory_schemes, no_fields, "memory:",
		  "In-process; gone when the command ends.", 0},
	 .from_url = memory_from_url, .open = memory_open},
	{.info = {"file", file_schemes, file_fields, "file:PATH",
		  "A directory of JSON files, one per key.", 1},
	 .from_url = file_from_url, .open = file_open},
	{.info = {"sqlite", sqlite_schemes, sqlite_fields, "sqlite:PATH",
		  "One database file, WAL, durable commits.", 1},
	 .from_url = sqlite_from_url, .open = sqlite_open},
	{.info = {"postgres", postgres_schemes, postgres_fields, "postgres://USER[:PW]@HOST:PORT/DB",
		  "libpq's multi-host form, postgres://USER@H1:P1,H2:P2/DB with "
		  "target_session_attrs=read-write, takes the first host that is a primary; "
		  "libpq's own options pass through.", 0},
	 .from_url = postgres_from_url, .open = postgres_open, .check_url = faucet__check_pg_hosts},
	{.info = {"redis", redis_schemes, redis_fields, "redis://[:PW@]HOST:PORT/DB", NULL, 0},
	 .from_url = redis_from_url, .open = redis_open, .userinfo_is_secret = 1},
	{.info = {"etcd", etcd_schemes, etcd_fields, "etcd://HOST:PORT[,HOST:PORT...]/PREFIX",
		  NULL, 0},
	 .from_url = etcd_from_url, .open = etcd_open, .from_fields = etcd_from_fields},
	{.info = {"redis-sentinel", redis_sentinel_schemes, redis_sentinel_fields,
		  "redis-sentinel://[:PW@]H:P[,H:P...]/MASTER[/DB]",
		  "Redis behind Sentinel: the master Sentinel names, found again after a failover.",
		  0},
	 .from_url = redis_sentinel_from_url, .open = redis_open, .userinfo_is_secret = 1},
};

const faucet__backend_desc *faucet__backend_at(size_t i)
{
	return i < FAUCET_ARRAY_LEN(backends) ? &backends[i] : NULL;
}

const faucet_backend_info *faucet_store_backend_info(size_t i)
{
	return i < FAUCET_ARRAY_LEN(backends) ? &backends[i].info : NULL;
}

const faucet__backend_desc *faucet__backend_by_type(const char *type)
{
	for (size_t i = 0; type != NULL && i < FAUCET_ARRAY_LEN(backends); i++) {
		if (strcmp(backends[i].info.type, type) == 0)
			return &backends[i];
	}
	return NULL;
}

const faucet__backend_desc *faucet__backend_by_url(const char *url, int nocase)
{
	for (size_t i = 0; url != NULL && i < FAUCET_ARRAY_LEN(backends); i++) {
		for (const char *const *s = backends[i].info.schemes; *s != NULL; s++) {
			size_t n = strlen(*s);

			if ((nocase ? strncasecmp(url, *s, n) : strncmp(url, *s, n)) == 0)
				return &backends[i];
		}
	}
	return NULL;
}
