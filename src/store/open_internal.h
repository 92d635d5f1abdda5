/*
 * open_internal.h - the table of backends a store URL or config can name.
 * A backend joins by adding one row to the table in stores/open.c.  A built-in
 * backend that includes this also gets the backend interface and the
 * doctor helpers (the sentinel probe, probe reports) it implements its
 * check slot with.
 */
#ifndef FAUCET_OPEN_INTERNAL_H
#define FAUCET_OPEN_INTERNAL_H

#include <faucet/store.h>
#include <faucet/sys/store_backend.h>
#include "check/check_internal.h"
#include "store/sentinel.h"

typedef struct {
	const char *type;        /* config `type` */
	const char *const *url_schemes; /* URL prefixes, NULL-terminated ("postgres://", ...) */
	/* Fill cfg from a URL (a private copy the function may modify; the
	 * strings it points cfg at must live in that copy). */
	int (*from_url)(char *url_copy, faucet_store_config *cfg);
	int (*open)(faucet_store **out, const faucet_store_config *cfg);
} faucet_backend_entry;

/* The server-backed stores (src/stores/), reached through the table. */
int faucet_store_open_sqlite(faucet_store **out, const char *path);
int faucet_store_open_postgres(faucet_store **out, const faucet_store_config *cfg);
int faucet_store_open_redis(faucet_store **out, const faucet_store_config *cfg);
int faucet_store_open_etcd(faucet_store **out, const faucet_store_config *cfg);
/* Write entries in order, by the backend's put_many or one put each; on
 * error *written leading entries are in place, and with FAUCET_EUNKNOWN
 * those from *unknown_from on may not be durable (either may be NULL). */
int faucet__store_put_prefix(faucet_store *s, const faucet_entry *entries, size_t count,
			     size_t *written, size_t *unknown_from);

/* Compare-and-put `guard` and, only when it was written, put `key`: the
 * guard's new value durable before the key changes (see put_guarded in
 * faucet/sys/store_backend.h, which this falls back from). */
int faucet__store_put_guarded(faucet_store *s, const char *guard, const faucet_value *expected,
			      const faucet_value *guard_value, const char *key,
			      const faucet_value *value, int *written);

/* A command line with the secrets it may carry replaced by *** - the
 * passwords of URLs (user:pw@, ?password=), libpq's password=, and any
 * NAME=VALUE word whose name ends in password, secret, token or key.
 * Caller frees; NULL when out of memory. */
char *faucet__redact_command(const char *cmd);

/* Whether the store's backend streams faucet_store_scan_entries itself. */
int faucet__store_has_scan_entries(const faucet_store *s);

/* Remove the query options `names` (at most 8) from a URL copy in place;
 * values[i] points at option i's percent-decoded value, stored inside the
 * copy behind the URL's terminator, or is NULL when the option is absent.
 * Other options stay in the URL.  An option given twice is FAUCET_ECONFIG. */
int faucet__url_take_params(char *url, const char *const *names, char **values, size_t count);

/* Parse "true"/"false"/"1"/"0"/"yes"/"no" for option `name`. */
int faucet__parse_bool(const char *text, const char *name, int *out);

/* Parse a positive integer (1..max) for option `name`. */
int faucet__parse_positive(const char *text, const char *name, long max, int *out);

/* Parse a duration "NNNms" or "NNs" (1 ms .. max_ms) for option `name`. */
int faucet__parse_duration_ms(const char *text, const char *name, long max_ms, int *out);

/* Check the host list of a postgres:// URL (multi-host form included):
 * every host non-empty, every port 1..65535; FAUCET_ECONFIG naming which. */
int faucet__check_pg_hosts(const char *url);

#endif
