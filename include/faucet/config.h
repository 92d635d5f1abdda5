/*
 * faucet/config.h - a faucet pipeline YAML, read as the `faucet` command
 * reads it: the top-level `name`, the `state: {type, config}` block that
 * says where the pipeline's state lives, and the `backfill:` defaults.
 *
 * One reader for every user of the format (the command, the Python
 * package, an embedder): the `state.config` fields each backend takes, and
 * their kinds, come from the table faucet_store_backend_info() lists.
 * `${env:VAR}` is replaced in every string of those three parts (an unset
 * VAR is an error naming it; a set-but-empty one is ""); the rest of the
 * file - sources, sinks and their credentials - is not interpreted.  Every
 * error is FAUCET_ECONFIG with a message naming the file and the line, and
 * never showing a value that came from the environment.  libyaml is loaded
 * when the first file is read (FAUCET_EUNSUPPORTED naming its package when
 * it is missing).  Key material (state.config.encryption) is wiped from
 * every buffer that held it before that buffer is freed.
 */
#ifndef FAUCET_CONFIG_H
#define FAUCET_CONFIG_H

#include <stddef.h>

#include "common.h"
#include "store.h"

/* A loaded pipeline YAML (opaque): freed with faucet_config_free; every
 * pointer the functions below return lives as long as it. */
typedef struct faucet_config faucet_config;

/* Read and check the YAML at `path`.  Errors: FAUCET_ECONFIG (unreadable
 * file, bad YAML, a second document, a wrong type or value, an unset
 * ${env:VAR}, a field its backend does not take), FAUCET_EUNSUPPORTED
 * (libyaml missing), FAUCET_ENOMEM.  *out is NULL on error. */
FAUCET_EXTERN int faucet_config_load(faucet_config **out, const char *path);

/* Free a config, wiping the key material it holds.  NULL is ignored. */
FAUCET_EXTERN void faucet_config_free(faucet_config *cfg);

/* The file's absolute path. */
FAUCET_EXTERN const char *faucet_config_path(const faucet_config *cfg);

/* The top-level `name` (the pipeline), or NULL. */
FAUCET_EXTERN const char *faucet_config_name(const faucet_config *cfg);

/* The store the `state:` block describes, ready for faucet_store_open_config
 * (its encryption, when configured, included), or NULL when the file has no
 * state block.  A relative `path` is relative to the current directory. */
FAUCET_EXTERN const faucet_store_config *faucet_config_store(const faucet_config *cfg);

/* The `backfill:` defaults; a field not given is NULL or 0.  Owned by cfg;
 * only grows at its end. */
typedef struct {
	const char *window;         /* as written: "1d", "3600", "6h" */
	unsigned concurrency;       /* >= 1, or 0 */
	const char *timezone;       /* an IANA name */
	const char *const *command; /* argv, NULL-terminated ("${backfill.*}" left for the runner), or NULL */
	size_t command_count;
} faucet_config_backfill;

FAUCET_EXTERN const faucet_config_backfill *faucet_config_backfill_defaults(const faucet_config *cfg);

/* A copy of `text` with every value of at least 4 bytes that came from a
 * ${env:VAR} of the file replaced by "${env:VAR}", so a message can show
 * it; `cfg` may be NULL (a plain copy).  Caller frees; NULL when out of
 * memory.  Shorter values are left: replacing every "1" or "on" would garble
 * the text, and the reader's own messages never show an expanded value. */
FAUCET_EXTERN char *faucet_config_scrub(const faucet_config *cfg, const char *text);

#endif
