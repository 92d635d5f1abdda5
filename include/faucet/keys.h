/*
 * faucet/keys.h - state keys: validation, the typed key builder, rendering
 * under key scheme 2 and the legacy scheme 1, parsing, component encoding
 * and key migration.
 *
 * Every key a pipeline reads or writes is built from its components and
 * rendered one way:
 *
 *   [{tenant}::]{pipeline}::{row}[::{sub}][::{shard}][::{suffix}]
 *   [{tenant}::]{pipeline}::{pipeline-level suffix}
 *
 * A changed rendering silently looks like a first run (a full re-sync or a
 * skipped range), so renderings are versioned and a key can list what an
 * earlier scheme rendered for it; faucet_migrate_state_key() moves a value
 * from such a key to the current one.
 */
#ifndef FAUCET_KEYS_H
#define FAUCET_KEYS_H

#include <stddef.h>
#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FAUCET_KEY_SCHEME_VERSION 2 /* the rendering this build writes */
#define FAUCET_KEY_SEPARATOR "::"
#define FAUCET_KEY_MAX 256          /* longest valid key, in bytes */
#define FAUCET_COMPONENT_MAX 64     /* longest raw value encode_component keeps */

/* Check a key: 1..256 bytes of [A-Za-z0-9_.:/-], no leading dot, and `/`
 * only between non-empty segments that do not start with a dot.
 * Returns 0 or FAUCET_EINVALID with a message naming the key, the offending
 * character and its byte offset. */
FAUCET_EXTERN int faucet_validate_key(const char *key);

/* What a key holds besides a plain resume position. */
typedef enum {
	FAUCET_SUFFIX_NONE = 0,
	FAUCET_SUFFIX_SLA,            /* ::__sla__ */
	FAUCET_SUFFIX_PROFILING,      /* ::__profiling__ */
	FAUCET_SUFFIX_ROLLBACK_INDEX, /* ::__rollback__ */
	FAUCET_SUFFIX_ROLLBACK_RUN,   /* ::__rollback__::{run} (has an argument) */
	FAUCET_SUFFIX_STATUS,         /* ::__status__ */
	FAUCET_SUFFIX_LEASE,          /* ::__lease__ */
	FAUCET_SUFFIX_REPLICATION,    /* {pipeline}::__replication__ (pipeline level) */
	FAUCET_SUFFIX_BACKFILL,       /* {pipeline}::__backfill__::{hash} (pipeline level) */
	FAUCET_SUFFIX_SERVE_BACKFILL  /* {pipeline}::__serve_backfill__::{hash} (pipeline level) */
} faucet_suffix_kind;

/* Whether the suffix hangs off the pipeline rather than an invocation. */
FAUCET_EXTERN int faucet_suffix_is_pipeline_level(faucet_suffix_kind kind);

/* The suffix's rendering without the leading separator ("__rollback__::x");
 * `arg` is used only by the kinds that take one.  Caller frees. */
FAUCET_EXTERN char *faucet_suffix_render(faucet_suffix_kind kind, const char *arg);

/* The suffix as it ends a key, separator included ("::__lease__"). Caller frees. */
FAUCET_EXTERN char *faucet_suffix_tail(faucet_suffix_kind kind, const char *arg);

/* A state key under construction.  Opaque; freed with faucet_key_free(). */
typedef struct faucet_key faucet_key;

/* The pipeline-level namespace of `pipeline` (no row yet). */
FAUCET_EXTERN int faucet_key_new_pipeline(faucet_key **out, const char *pipeline);

/* {pipeline}::{row} - a matrix row's (or topology node's) key. */
FAUCET_EXTERN int faucet_key_new_invocation(faucet_key **out, const char *pipeline,
					    const char *row);

/* A key derived from an invocation key rendered earlier; the builder's
 * tenant/row/parent-key/sub setters are then ignored, as in the original. */
FAUCET_EXTERN int faucet_key_new_from_rendered(faucet_key **out, const char *base);

/* Builder setters.  Each copies its argument; NULL clears the component.
 * They return 0, or FAUCET_ENOMEM. */
FAUCET_EXTERN int faucet_key_set_tenant(faucet_key *k, const char *tenant);
FAUCET_EXTERN int faucet_key_set_row(faucet_key *k, const char *row);
FAUCET_EXTERN int faucet_key_set_parent_key(faucet_key *k, const char *raw); /* encoded on render */
FAUCET_EXTERN int faucet_key_set_sub(faucet_key *k, const char *encoded); /* already in key form */
FAUCET_EXTERN int faucet_key_set_shard(faucet_key *k, const char *shard);
FAUCET_EXTERN int faucet_key_set_suffix(faucet_key *k, faucet_suffix_kind kind, const char *arg);

/* Accessors.  Strings are owned by the key; NULL when the component is
 * absent or the key was built from a rendering. */
FAUCET_EXTERN const char *faucet_key_tenant(const faucet_key *k);
FAUCET_EXTERN const char *faucet_key_pipeline_name(const faucet_key *k);
FAUCET_EXTERN const char *faucet_key_row(const faucet_key *k);
FAUCET_EXTERN const char *faucet_key_shard(const faucet_key *k);
FAUCET_EXTERN faucet_suffix_kind faucet_key_suffix(const faucet_key *k);
FAUCET_EXTERN const char *faucet_key_suffix_arg(const faucet_key *k);

/* The rendered sub component (a parent key encoded), or NULL.  Caller frees. */
FAUCET_EXTERN char *faucet_key_sub(const faucet_key *k);

/* [{tenant}::]{pipeline}, or the base rendering.  Caller frees. */
FAUCET_EXTERN char *faucet_key_namespace(const faucet_key *k);

/* The prefix of every key under this one: "{render}::".  Caller frees. */
FAUCET_EXTERN char *faucet_key_children_prefix(const faucet_key *k);

/* The key under the current scheme.  Caller frees; NULL only on ENOMEM. */
FAUCET_EXTERN char *faucet_key_render(const faucet_key *k);

/* The key as scheme `version` (1 or 2) rendered it.  Caller frees. */
FAUCET_EXTERN char *faucet_key_render_scheme(const faucet_key *k, unsigned version);

/* Every distinct, valid key an earlier scheme rendered for this key, newest
 * scheme first.  *out is filled (possibly empty); dispose it. */
FAUCET_EXTERN int faucet_key_legacy_renderings(const faucet_key *k, faucet_strarray *out);

/* Decode `key` under the namespace [{tenant}::]{pipeline} (tenant may be
 * NULL).  FAUCET_ENOTFOUND when the key is outside the namespace.  A shard
 * cannot be told from a sub component, so it is reported as the sub; the
 * rendering round-trips.  A backfill unit's row is backfill::{hash}::{unit}. */
FAUCET_EXTERN int faucet_key_parse(faucet_key **out, const char *tenant, const char *pipeline,
				   const char *key);

FAUCET_EXTERN void faucet_key_free(faucet_key *k);

/* One raw value as a key component: kept when it is 1..64 legal bytes
 * ([A-Za-z0-9_.-], plus ':' and '/' when allow_separators) without "::" and
 * without a leading or trailing ':'; otherwise a readable prefix (up to 32
 * plain characters) + ".h" + FNV-1a 64 of the raw bytes as 16 hex digits.
 * Caller frees. */
FAUCET_EXTERN char *faucet_encode_component(const char *raw, int allow_separators);

/* FNV-1a 64 of `len` bytes. */
FAUCET_EXTERN unsigned long long faucet_fnv1a64(const void *data, size_t len);

/* "backfill::{range_hash}::{unit}" - the row of one backfill unit.  Caller frees. */
FAUCET_EXTERN char *faucet_backfill_unit_row(const char *range_hash, const char *unit);

/* The key prefix every key of pipeline `name` starts with: "{name}::".
 * Caller frees. */
FAUCET_EXTERN char *faucet_namespace_prefix(const char *pipeline);

#ifdef __cplusplus
}
#endif

#endif
