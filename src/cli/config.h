/*
 * config.h - a faucet pipeline YAML, as far as the `faucet` command needs it:
 * the top-level `name`, the `state: {type, config}` block that says where the
 * pipeline's state lives, and the `backfill:` defaults.
 *
 * `${env:VAR}` is replaced in every string read from these three parts (an
 * unset VAR is an error naming it; a set-but-empty one is ""); the rest of
 * the file - sources, sinks and their credentials - is not interpreted, so a
 * variable only the pipeline itself needs does not have to be set for an
 * operator to inspect its state.  Every error is FAUCET_ECONFIG with a
 * message that names the file and the line.
 */
#ifndef FAUCET_CLI_CONFIG_H
#define FAUCET_CLI_CONFIG_H

#include <faucet/faucet.h>

typedef struct cli_config {
	char *path; /* absolute path of the YAML file */
	char *name; /* top-level `name`, or NULL */

	/* `state:`; has_state is 0 when the file has no such block. */
	int has_state;
	char *state_type;          /* file, memory, sqlite, postgres, redis, ... */
	char *state_path;          /* file, sqlite; relative = to the current directory */
	char *state_url;           /* postgres, redis */
	char *state_table;         /* postgres, or NULL */
	int state_ensure_table;    /* postgres: 0 default, 1 true, -1 false */
	int state_max_connections; /* postgres, redis: 0 default, else >= 1 */
	char *state_namespace;     /* redis, or NULL */
	int state_redis_index;     /* redis: index: true */
	faucet_strarray state_etcd_endpoints; /* etcd: HOST:PORT each; with the next */
	char *state_etcd_prefix;              /* three turned into state_url */
	char *state_etcd_dial_timeout;
	char *state_etcd_request_timeout;
	int state_min_replicas;    /* redis-sentinel: 0 = no WAIT */
	int state_wait_timeout_ms; /* redis-sentinel: 0 = default */

	/* `state.config.encryption` (file store).  The key is either given
	 * (usually as ${env:VAR}) or named by `key_env`; it is resolved at load
	 * time and never empty.  All key strings are wiped when freed. */
	int has_encryption;
	char *encryption_key;
	faucet_strarray encryption_previous_keys;

	/* `backfill:` defaults; NULL / 0 / empty when not given. */
	char *backfill_window;           /* as written: "1d", "3600", "6h" */
	int backfill_concurrency;        /* >= 1, or 0 */
	char *backfill_timezone;         /* IANA name */
	faucet_strarray backfill_command; /* argv; ${backfill.*} left for the runner */

	/* Every ${env:VAR} substituted: env_refs[i] is "${env:VAR}", env_values[i]
	 * the text put in its place (wiped when freed).  No message may show
	 * such a value: cli_config_scrub() puts the reference back. */
	faucet_strarray env_refs;
	faucet_strarray env_values;
} cli_config;

/* Read and check the YAML at `path`.  Errors: FAUCET_ECONFIG (unreadable
 * file, bad YAML with its line, a wrong type or value with its line, an
 * unset ${env:VAR}, an empty encryption key, an unknown algorithm). */
int cli_config_load(cli_config **out, const char *path);

/* Fill a store config from the `state:` block.  The strings stay owned by
 * `c`; `enc` receives the encryption options when the block has them (and
 * cfg->encryption then points at it).  Call only when has_state. */
void cli_config_store(const cli_config *c, faucet_store_config *cfg,
		      faucet_encryption_options *enc);

void cli_config_free(cli_config *c);

/* The backend of a config type, or of the scheme starting `url` (then
 * *rest, when not NULL, is what follows the scheme); NULL when unknown. */
const faucet_backend_info *cli_backend_of_type(const char *type);
const faucet_backend_info *cli_backend_of_url(const char *url, const char **rest);

/* Whether `name` is one of the state.config fields of `be`. */
int cli_backend_has_field(const faucet_backend_info *be, const char *name);

/* A copy of `text` with every value that came from ${env:VAR} (and is at
 * least CLI_SCRUB_MIN bytes long) replaced by "${env:VAR}"; NULL when out of
 * memory.  `c` may be NULL (then a plain copy).  Shorter values are left:
 * replacing every "1" or "on" would garble the message; config.c's own
 * messages never echo an expanded value of any length. */
#define CLI_SCRUB_MIN 4
char *cli_config_scrub(const cli_config *c, const char *text);

/* Called before the process first holds key material (a config's
 * encryption block, --encryption-key-env): turns core dumps off, so a crash
 * cannot write the key to disk - the process is no longer dumpable
 * (PR_SET_DUMPABLE 0, which also keeps other processes of the user from
 * reading its memory) and its core size limit is 0 (inherited by the
 * commands backfill starts, which get the key too).  0, or FAUCET_EIO with
 * the last error set. */
int cli_forbid_core_dumps(void);

/* Overwrite a string's bytes with zeros, then free it.  NULL is ignored. */
void cli_wipe_free(char *s);

#endif
