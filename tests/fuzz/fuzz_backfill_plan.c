/*
 * fuzz_backfill_plan.c - backfill planning (--from, --to, --window,
 * --timezone, --row) on arbitrary text.
 *
 * Input: one selector byte, then newline-separated fields
 * from / to / window / zone / row; a missing field is NULL.  The selector
 * picks the zone from a short fixed list of zones with odd rules (or the
 * default, or - one time in seven - the raw zone field), so the fuzzer
 * spends its time in the planner rather than opening random files.
 *
 * TZDIR points at a private directory holding only those zones, with a
 * valid zone file planted just outside it ("bait").  A name that could
 * walk out of the database ("../bait") would therefore load, so any raw
 * name that is not one of the listed zones must be refused, and one
 * that is absolute, has a "." or ".." segment or characters IANA names
 * never use must be refused as invalid before anything is opened.
 *
 * Properties (doc/design.md §6, backfill.h):
 *   - planning never crashes or leaks;
 *   - a refusal is FAUCET_ECONFIG (or ENOMEM), with the same code and a
 *     non-empty message in faucet_error_last();
 *   - a plan has 1..10,000 units, contiguous (each start is the previous
 *     end), the first starting at from and the last ending at to; each id
 *     is the UTC start as YYYYMMDDTHHMMSSZ; the descriptor is
 *     "time|{from}|{to}|{window}|{row}" and the hash is FNV-1a 64 of it as
 *     16 lower-case hex digits.
 */
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <faucet/backfill.h>
#include <faucet/keys.h>

#include "fuzz.h"

static const char *const zones[] = {"UTC", "America/New_York", "Australia/Lord_Howe",
				    "Asia/Kathmandu", "America/Havana"};
#define ZONE_COUNT (sizeof(zones) / sizeof(zones[0]))
#define FIELD_COUNT 5

/* The private database: root/zoneinfo/{zones}, root/bait. */
static char root[4096];
static const char *const subdirs[] = {"zoneinfo", "zoneinfo/America", "zoneinfo/Australia",
				      "zoneinfo/Asia"};
#define SUBDIR_COUNT (sizeof(subdirs) / sizeof(subdirs[0]))

static void under_root(char *out, size_t size, const char *rel)
{
	int n = snprintf(out, size, "%s/%s", root, rel);
	FUZZ_CHECK(n > 0 && (size_t)n < size, "path %s/%s too long", root, rel);
}

static void cleanup(void)
{
	char path[8192];

	for (size_t i = 0; i < ZONE_COUNT; i++) {
		char rel[256];
		(void)snprintf(rel, sizeof(rel), "zoneinfo/%s", zones[i]);
		under_root(path, sizeof(path), rel);
		(void)unlink(path);
	}
	under_root(path, sizeof(path), "bait");
	(void)unlink(path);
	for (size_t i = SUBDIR_COUNT; i > 0; i--) {
		under_root(path, sizeof(path), subdirs[i - 1]);
		(void)rmdir(path);
	}
	(void)rmdir(root);
}

static void link_zone(const char *system_dir, const char *zone, const char *rel)
{
	char target[4096], path[8192];
	int n = snprintf(target, sizeof(target), "%s/%s", system_dir, zone);

	FUZZ_CHECK(n > 0 && (size_t)n < sizeof(target), "zone path too long");
	under_root(path, sizeof(path), rel);
	FUZZ_CHECK(symlink(target, path) == 0, "cannot link %s to %s", path, target);
}

static void setup(void)
{
	const char *tmp = getenv("TMPDIR"), *sys = getenv("TZDIR");
	char path[8192];

	if (root[0] != '\0')
		return;
	if (sys == NULL || sys[0] == '\0')
		sys = "/usr/share/zoneinfo";
	(void)snprintf(root, sizeof(root), "%s/faucet-fuzz-tz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	FUZZ_CHECK(mkdtemp(root) != NULL, "cannot create %s", root);
	(void)atexit(cleanup);
	for (size_t i = 0; i < SUBDIR_COUNT; i++) {
		under_root(path, sizeof(path), subdirs[i]);
		FUZZ_CHECK(mkdir(path, 0700) == 0, "cannot create %s", path);
	}
	for (size_t i = 0; i < ZONE_COUNT; i++) {
		char rel[256];
		(void)snprintf(rel, sizeof(rel), "zoneinfo/%s", zones[i]);
		link_zone(sys, zones[i], rel);
	}
	link_zone(sys, "UTC", "bait");
	under_root(path, sizeof(path), "zoneinfo");
	FUZZ_CHECK(setenv("TZDIR", path, 1) == 0, "setenv failed");
}

static int listed_zone(const char *name)
{
	for (size_t i = 0; i < ZONE_COUNT; i++)
		if (strcmp(name, zones[i]) == 0)
			return 1;
	return 0;
}

/* A name that must be refused before any file is opened: absolute, with
 * an empty, "." or ".." segment, or with a character IANA names never use. */
static int unsafe_zone(const char *name)
{
	const char *seg = name;

	if (name[0] == '\0' || name[0] == '/')
		return 1;
	for (const char *c = name; *c; c++)
		if (strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-+/.",
			   *c) == NULL)
			return 1;
	for (;;) {
		size_t n = strcspn(seg, "/");
		if (n == 0 || (n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.'))
			return 1;
		if (seg[n] == '\0')
			return 0;
		seg += n + 1;
	}
}

/* The unit id doc/design.md §6 asks for, computed independently with gmtime_r
 * (which, unlike localtime, ignores TZ).  Not strftime: glibc's %Y does not
 * pad years before 1000 to four digits. */
static int expected_id(int64_t unix_seconds, char *out, size_t size)
{
	time_t t = (time_t)unix_seconds;
	struct tm tm;

	if (gmtime_r(&t, &tm) == NULL || tm.tm_year < -1900 || tm.tm_year > 9999 - 1900)
		return -1;
	return snprintf(out, size, "%04d%02d%02dT%02d%02d%02dZ", tm.tm_year + 1900, tm.tm_mon + 1,
			tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec) == 16
		       ? 0
		       : -1;
}

static void check_id(const faucet_backfill_unit *u, size_t i)
{
	char want[32];

	FUZZ_CHECK(strlen(u->id) == 16, "unit %zu id '%s' is not 16 characters", i, u->id);
	for (size_t k = 0; k < 16; k++) {
		char c = u->id[k];
		int ok = k == 8 ? c == 'T' : k == 15 ? c == 'Z' : (c >= '0' && c <= '9');
		FUZZ_CHECK(ok, "unit %zu id '%s' is not YYYYMMDDTHHMMSSZ", i, u->id);
	}
	FUZZ_CHECK(expected_id(u->start_unix, want, sizeof(want)) == 0 && strcmp(u->id, want) == 0,
		   "unit %zu id '%s' is not its UTC start %lld", i, u->id,
		   (long long)u->start_unix);
}

static void check_plan(const faucet_backfill_plan *p, const faucet_backfill_range *r)
{
	size_t n = faucet_backfill_plan_count(p);
	const char *desc = faucet_backfill_plan_descriptor(p), *hash = faucet_backfill_plan_hash(p);
	const char *from = faucet_backfill_plan_from(p), *to = faucet_backfill_plan_to(p);
	const char *row = r->row ? r->row : "default";
	char want[17];
	size_t dl = strlen(desc), rl = strlen(row);

	FUZZ_CHECK(n >= 1 && n <= FAUCET_BACKFILL_MAX_UNITS, "plan has %zu units", n);
	FUZZ_CHECK(!faucet_backfill_plan_is_large(p) == (n <= FAUCET_BACKFILL_WARN_UNITS),
		   "is_large disagrees with %zu units", n);
	FUZZ_CHECK(strcmp(faucet_backfill_plan_unit(p, 0)->start, from) == 0,
		   "first unit starts at %s, not at from %s", faucet_backfill_plan_unit(p, 0)->start,
		   from);
	FUZZ_CHECK(strcmp(faucet_backfill_plan_unit(p, n - 1)->end, to) == 0,
		   "last unit ends at %s, not at to %s", faucet_backfill_plan_unit(p, n - 1)->end, to);
	FUZZ_CHECK(faucet_backfill_plan_unit(p, n) == NULL, "unit %zu exists past the count", n);
	for (size_t i = 0; i < n; i++) {
		const faucet_backfill_unit *u = faucet_backfill_plan_unit(p, i);
		FUZZ_CHECK(u->start_unix <= u->end_unix, "unit %zu ends before it starts", i);
		if (i > 0) {
			const faucet_backfill_unit *prev = faucet_backfill_plan_unit(p, i - 1);
			FUZZ_CHECK(strcmp(u->start, prev->end) == 0 &&
					   u->start_unix == prev->end_unix,
				   "unit %zu starts at %s, previous ends at %s", i, u->start,
				   prev->end);
		}
		check_id(u, i);
	}
	FUZZ_CHECK(strncmp(desc, "time|", 5) == 0 && strncmp(desc + 5, from, strlen(from)) == 0 &&
			   desc[5 + strlen(from)] == '|' &&
			   strncmp(desc + 6 + strlen(from), to, strlen(to)) == 0 &&
			   desc[6 + strlen(from) + strlen(to)] == '|',
		   "descriptor '%s' does not start with time|%s|%s|", desc, from, to);
	FUZZ_CHECK(dl > rl && desc[dl - rl - 1] == '|' && strcmp(desc + dl - rl, row) == 0,
		   "descriptor '%s' does not end with |%s", desc, row);
	(void)snprintf(want, sizeof(want), "%016llx", faucet_fnv1a64(desc, dl));
	FUZZ_CHECK(strlen(hash) == 16 && strcmp(hash, want) == 0,
		   "hash '%s' of '%s' is not FNV-1a 64 %s", hash, desc, want);
}

/* Cut text at newlines into up to FIELD_COUNT fields; the rest stay NULL
 * (the last field keeps any further newlines). */
static void split_fields(char *text, char **fields)
{
	char *cursor = text;

	for (size_t i = 0; i < FIELD_COUNT && cursor != NULL; i++) {
		char *nl = i + 1 < FIELD_COUNT ? strchr(cursor, '\n') : NULL;
		fields[i] = cursor;
		if (nl != NULL)
			*nl = '\0';
		cursor = nl ? nl + 1 : NULL;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text, *fields[FIELD_COUNT] = {NULL};
	faucet_backfill_range r;
	faucet_backfill_plan *p = (faucet_backfill_plan *)0x1;
	const char *zone;
	int rc, raw;
	unsigned sel;

	if (size == 0)
		return 0;
	setup();
	sel = data[0] % (ZONE_COUNT + 2);
	text = fuzz_cstring(data + 1, size - 1);
	if (text == NULL)
		return 0;
	split_fields(text, fields);
	raw = sel == ZONE_COUNT + 1;
	zone = sel < ZONE_COUNT ? zones[sel] : raw ? fields[3] : NULL;
	r = (faucet_backfill_range){fields[0], fields[1], fields[2], zone, fields[4]};

	rc = faucet_backfill_plan_new(&p, &r);
	if (rc == 0) {
		FUZZ_CHECK(p != NULL, "success without a plan");
		check_plan(p, &r);
		/* Only the listed zones exist inside the private database: any
		 * other raw name that loads was read from somewhere else. */
		if (zone != NULL)
			FUZZ_CHECK(listed_zone(zone), "zone '%.300s' loaded from outside the database",
				   zone);
		FUZZ_CHECK(strcmp(faucet_backfill_plan_timezone(p), zone ? zone : "UTC") == 0,
			   "plan zone '%s' is not the one asked for", faucet_backfill_plan_timezone(p));
		faucet_backfill_plan_free(p);
	} else {
		FUZZ_CHECK(p == NULL, "failed plan left a plan behind");
		if (raw && zone != NULL && unsafe_zone(zone))
			FUZZ_CHECK(rc == FAUCET_ECONFIG &&
					   strstr(faucet_error_last()->message,
						  "invalid time zone name") != NULL,
				   "unsafe zone name '%.300s' was not refused as invalid: %s", zone,
				   faucet_error_last()->message);
		FUZZ_CHECK(rc == FAUCET_ECONFIG || rc == FAUCET_ENOMEM, "planning failed with code %d",
			   rc);
		FUZZ_CHECK(faucet_error_last()->code == rc && faucet_error_last()->message[0] != '\0',
			   "code %d returned, but the last error is %d '%s'", rc,
			   faucet_error_last()->code, faucet_error_last()->message);
	}
	free(text);
	return 0;
}
