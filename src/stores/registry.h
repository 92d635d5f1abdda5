/*
 * registry.h - the one table of backends (registry.c).  Not installed.
 *
 * Each row says everything the rest of faucet knows about a backend: its
 * config `type`, URL schemes, `state: config` fields (kind, default,
 * whether secret, a note), a line of documentation - the public part,
 * faucet_backend_info, which faucet_store_backend_info() hands to the command
 * for its YAML reader, --help, man page and completion - and the private
 * part: how a URL becomes a config, how the store is opened, and how its
 * URL is redacted.  Adding a backend is its file plus one row.
 *
 * Also the store openers of src/stores/ and the URL option helpers of
 * open.c that the backends share.
 */
#ifndef FAUCET_STORES_REGISTRY_H
#define FAUCET_STORES_REGISTRY_H

#include <faucet/store.h>

/* The defaults of the backends' config fields: what each backend uses
 * when a field is not given and what its row shows (--help, the man page,
 * completion), from one definition each.  Durations are whole seconds. */
#define FAUCET__POOL_DEFAULT 5
#define FAUCET__PG_TABLE_DEFAULT "faucet_state"
#define FAUCET__REDIS_NAMESPACE_DEFAULT "faucet"
#define FAUCET__REDIS_WAIT_S_DEFAULT 1
#define FAUCET__ETCD_DIAL_S_DEFAULT 2
#define FAUCET__ETCD_REQUEST_S_DEFAULT 10

/* A default's text in a row: FAUCET__TEXT(FAUCET__POOL_DEFAULT) is "5". */
#define FAUCET__TEXT(x) FAUCET__TEXT_(x)
#define FAUCET__TEXT_(x) #x

typedef struct {
	faucet_backend_info info; /* first: faucet_store_backend_info() returns &row->info */
	/* Fill cfg from a URL (a private copy the function may modify; the
	 * strings it points cfg at must live in that copy). */
	int (*from_url)(char *url_copy, faucet_store_config *cfg);
	int (*open)(faucet_store **out, const faucet_store_config *cfg);
	/* Check a config's own `url` before it is opened, or NULL. */
	int (*check_url)(const char *url);
	/* The config fields of this backend that are no member of
	 * faucet_store_config (etcd's endpoints and prefix), given as text
	 * (a list joined by ','), made into cfg->url: *url_out is the URL it
	 * points at (the caller frees it).  NULL when every field is a member. */
	int (*from_fields)(faucet_store_config *cfg, const char *const *names,
			   const char *const *values, size_t count, char **url_out);
	/* User information without ':' (redis://PW@host) is a password. */
	int userinfo_is_secret;
} faucet__backend_desc;

/* The row of config type `type`, or NULL. */
const faucet__backend_desc *faucet__backend_by_type(const char *type);

/* The row whose scheme starts `url` (case-insensitively when `nocase`), or NULL. */
const faucet__backend_desc *faucet__backend_by_url(const char *url, int nocase);

/* The row at index i, or NULL past the last. */
const faucet__backend_desc *faucet__backend_at(size_t i);

/* The stores opened through the table (src/stores/). */
int faucet__store_open_sqlite(faucet_store **out, const char *path);
int faucet__store_open_postgres(faucet_store **out, const faucet_store_config *cfg);
int faucet__store_open_redis(faucet_store **out, const faucet_store_config *cfg);
int faucet__store_open_etcd(faucet_store **out, const faucet_store_config *cfg);

/* A command line with the secrets it may carry replaced by *** - the
 * passwords of URLs (user:pw@, ?password=), libpq's password=, and any
 * NAME=VALUE word whose name ends in password, secret, token or key.
 * Caller frees; NULL when out of memory (redact.c). */
char *faucet__redact_command(const char *cmd);

/* Remove the query options `names` (at most 8) from a URL copy in place;
 * values[i] points at option i's percent-decoded value, stored inside the
 * copy behind the URL's terminator, or is NULL when the option is absent.
 * Other options stay in the URL.  An option given twice is FAUCET_ECONFIG. */
int faucet__url_take_params(char *url, const char *const *names, char **values, size_t count);

/* Set the config field `name` (a URL option or a YAML field: the same
 * rules for both) from its text; a string member then points at `text`,
 * which must outlive cfg.  `label` names the field in messages ("option
 * 'table'", "state.config.table").  Returns 0; 1 when `name` is no member
 * of faucet_store_config (the backend's from_fields takes it); or
 * FAUCET_ECONFIG: "LABEL must be ..., got 'TEXT'". */
int faucet__store_field_set(faucet_store_config *cfg, const char *name, const char *text,
			    const char *label);

/* Parse a positive integer (1..max) for option `name`. */
int faucet__parse_positive(const char *text, const char *name, long max, int *out);

/* Parse a duration "NNNms" or "NNs" (1 ms .. max_ms) for option `name`. */
int faucet__parse_duration_ms(const char *text, const char *name, long max_ms, int *out);

/* Check the host list of a postgres:// URL (multi-host form included):
 * every host non-empty, every port 1..65535; FAUCET_ECONFIG naming which. */
int faucet__check_pg_hosts(const char *url);

#endif
