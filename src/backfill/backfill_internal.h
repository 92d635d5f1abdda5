/*
 * backfill_internal.h - pieces of the backfill module shared between its
 * files and its tests (not installed).
 *
 * Time is handled as plain integers: an instant is seconds since the Unix
 * epoch plus nanoseconds, and a "local" wall-clock time is the same count as
 * if the zone were UTC.  A zone maps one to the other; nothing here touches
 * the process's TZ variable or the C library's notion of local time, so two
 * threads can work in two zones at once.
 */
#ifndef FAUCET_BACKFILL_INTERNAL_H
#define FAUCET_BACKFILL_INTERNAL_H

#include <stdint.h>
#include <faucet/backfill.h>
#include <faucet/store.h>

/* ---- the marker --------------------------------------------------------- */

/* The marker as one runner last wrote it (the value and its parse, both
 * owned), tried first as the expected value of the next outcome's
 * compare-and-put: a runner that is alone on its range then neither reads
 * nor parses the marker per unit.  A lost race drops it and re-reads. */
typedef struct {
	faucet_value *value;
	faucet_backfill_marker *parsed;
} faucet_bf__marker_cache;

/* faucet_backfill_marker_record_outcome, trying `cache` first and keeping
 * what it wrote there. */
int faucet_bf__marker_record_cached(faucet_store *s, const char *key,
				    const faucet_backfill_outcome *o, faucet_bf__marker_cache *cache);
void faucet_bf__marker_cache_dispose(faucet_bf__marker_cache *cache);

/* The marker as stored now (*now NULL: none), borrowed from `cache`: its
 * parse when the stored text is what the cache holds (no parse per unit
 * for a runner alone on its range), else the stored marker parsed, which
 * then replaces the cache's. */
int faucet_bf__marker_load_cached(faucet_store *s, const char *key,
				  faucet_bf__marker_cache *cache,
				  const faucet_backfill_marker **now);

/* ---- civil calendar ---------------------------------------------------- */

/* Days since 1970-01-01 of a proleptic Gregorian date. */
int64_t faucet_bf__days_from_civil(int64_t y, unsigned m, unsigned d);

/* The date of a day count since 1970-01-01. */
void faucet_bf__civil_from_days(int64_t days, int64_t *y, unsigned *m, unsigned *d);

/* Floor division of seconds by 86400 (works for negative counts). */
int64_t faucet_bf__floor_div(int64_t a, int64_t b);

/* ---- zones --------------------------------------------------------------- */

/* How a local time that falls in a DST gap is resolved. */
typedef enum {
	FAUCET_TZ_GAP_TO_TRANSITION, /* the instant the gap ends (bare dates) */
	FAUCET_TZ_GAP_HOUR_FORWARD   /* add an hour until valid (calendar steps) */
} faucet_tz_gap_mode;

/* Parse a TZif image already in memory; `name` is kept for messages. */
int faucet_tz__parse(faucet_tz **out, const char *name, const unsigned char *data, size_t len);

/* Load the zone from a TZif file at `path` (named `name` in messages). */
int faucet_tz__load_path(faucet_tz **out, const char *name, const char *path);

/* The offset the zone's POSIX footer rule gives at `t`, ignoring the table
 * of transitions; FAUCET_ENOTFOUND when the zone has no footer.  Tests use it
 * to check the rule against the table. */
int faucet_tz__rule_offset_at(const faucet_tz *tz, int64_t t, int32_t *offset);

/* ---- RFC 3339 ------------------------------------------------------------ */

typedef struct {
	int64_t sec;  /* seconds since the epoch */
	int32_t nsec; /* 0..999999999 */
} faucet_bf_instant;

/* Render `t` in `tz`'s offset at that instant.  Fractions are printed only
 * when nsec is non-zero (3, 6 or 9 digits, whichever keeps every non-zero
 * digit), and the offset is always numeric.  `out` holds at least 40 bytes. */
int faucet_bf__render(const faucet_tz *tz, faucet_bf_instant t, char *out, size_t size);

/* The local date of `t` in `tz` as YYYY-MM-DD (`out` >= 11 bytes). */
int faucet_bf__render_date(const faucet_tz *tz, int64_t t, char *out, size_t size);

/* Parse an RFC 3339 timestamp or a bare date (local midnight in `tz`).
 * `what` ("--from") names the input in messages.  FAUCET_ECONFIG on error. */
int faucet_bf__parse_boundary(const faucet_tz *tz, const char *text, const char *what,
			      faucet_bf_instant *out);

/* ---- windows ------------------------------------------------------------- */

typedef struct {
	int whole;       /* no window: one unit */
	int calendar;    /* Nd / Nw: local days */
	int64_t seconds; /* elapsed windows: the length */
	int64_t days;    /* calendar windows: days per step */
	char label[32];  /* the descriptor's rendering: "86400", "1d", "2w", "whole" */
} faucet_bf_window;

/* Parse a --window value (NULL = whole).  FAUCET_ECONFIG on a bad one. */
int faucet_bf__parse_window(const char *text, faucet_bf_window *out);

/* ---- leases ---------------------------------------------------------------- */

/* A claim on one unit: {"holder": "{host}:{pid}:{random}", "expires_at": N}
 * at "{unit key}::__lease__". */
typedef struct {
	char *key;
	const char *holder;  /* borrowed from the runner */
	faucet_value *value; /* what we last wrote there */
	int64_t expires_at;
} faucet_bf_lease;

/* "{host}:{pid}:{16 random hex}" naming this runner.  Caller frees. */
char *faucet_bf__lease_holder(void);

/* Try to take the lease of `unit_key` for ttl seconds (until
 * faucet__lease_until(now, ttl)): granted when there is
 * no lease, the one there expired, or it names `holder` (an earlier claim of
 * ours), by compare-and-put against exactly what was read.  A write that
 * reports an error is settled by reading the lease back: our holder id there
 * means it landed.  *claimed says whether we hold it; when not, *held_until
 * (may be NULL) says when the other holder's lease runs out.  On success
 * `out` must be disposed. */
int faucet_bf__lease_claim(faucet_store *s, const char *unit_key, const char *holder,
			   int64_t now, int64_t ttl, faucet_bf_lease *out, int *claimed,
			   int64_t *held_until);

/* Extend our lease by ttl seconds from now.  *kept = 0 when it is no longer
 * ours.  A lease already past its expiry is not renewed: FAUCET_ELEASELOST,
 * *kept = 0.  A failed write that left our lease as it was is returned as
 * an error (the lease is still ours; try again later). */
int faucet_bf__lease_renew(faucet_store *s, faucet_bf_lease *l, int64_t now, int64_t ttl,
			   int *kept);

/* Give the lease up and remove it (see lease.c for why in two steps).  An
 * error means our lease is still there (or we could not find out). */
int faucet_bf__lease_release(faucet_store *s, faucet_bf_lease *l);

void faucet_bf__lease_dispose(faucet_bf_lease *l);

#endif
