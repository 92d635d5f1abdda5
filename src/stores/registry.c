/*
 * registry.c - the table of backends (registry.h): one row per backend,
 * with what a URL, a `state:` config, the store reference and redaction
 * need to know of it, and the small adapters between a URL or config and
 * the backend's own open function.
 *
 * A new backend: its file in src/stores/, its opener declared in
 * registry.h, and a row below (a new config field also needs its member
 * in faucet_store_config and a line in the command's YAML reader).
 */
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
	return faucet_store_open_sqlite(out, cfg->path);
}

/* postgres://...?table=t&ensure_table=true&max_connections=5: faucet's
 * options come off the query; the rest (sslmode, ...) goes to libpq. */
static int postgres_from_url(char *url, faucet_store_config *cfg)
{
	static const char *const names[] = {"table", "ensure_table", "max_connections"};
	char *values[3];
	int rc = faucet__url_take_params(url, names, values, 3);

	if (rc != 0)
		return rc;
	rc = faucet__check_pg_hosts(url);
	if (rc != 0)
		return rc;
	cfg->type = "postgres";
	cfg->url = url;
	cfg->table = values[0];
	if (values[1] != NULL) {
		int on;
		rc = faucet__parse_bool(values[1], "ensure_table", &on);
		if (rc != 0)
			return rc;
		cfg->ensure_table = on ? 1 : -1;
	}
	if (values[2] != NULL)
		rc = faucet__parse_positive(values[2], "max_connections", 1000, &cfg->max_connections);
	return rc;
}

/* The options of redis:// (the first three) and redis-sentinel:// (all
 * five): namespace, max_connections, index, min_replicas, wait_timeout. */
static int redis_options(char *url, faucet_store_config *cfg, const char *type, size_t count)
{
	static const char *const names[] = {"namespace", "max_connections", "index",
					     "min_replicas", "wait_timeout"};
	char *values[5] = {NULL, NULL, NULL, NULL, NULL};
	int rc = faucet__url_take_params(url, names, values, count);

	if (rc != 0)
		return rc;
	cfg->type = type;
	cfg->url = url;
	cfg->namespace_name = values[0];
	if (values[1] != NULL)
		rc = faucet__parse_positive(values[1], "max_connections", 1000, &cfg->max_connections);
	if (rc == 0 && values[2] != NULL)
		rc = faucet__parse_bool(values[2], "index", &cfg->redis_index);
	if (rc == 0 && values[3] != NULL)
		rc = faucet__parse_positive(values[3], "min_replicas", 100, &cfg->redis_min_replicas);
	if (rc == 0 && values[4] != NULL)
		rc = faucet__parse_duration_ms(values[4], "wait_timeout", 3600000,
					       &cfg->redis_wait_timeout_ms);
	return rc;
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

	return rc ? rc : faucet_store_open_postgres(out, cfg);
}

static int redis_open(faucet_store **out, const faucet_store_config *cfg)
{
	int rc = faucet__hiredis_load();

	return rc ? rc : faucet_store_open_redis(out, cfg);
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

static int etcd_open(faucet_store **out, const faucet_store_config *cfg)
{
	return faucet_store_open_etcd(out, cfg);
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
	 .from_url = etcd_from_url, .open = etcd_open},
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
