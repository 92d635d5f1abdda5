/*
 * tz.c - IANA time zones read straight from the system tz database.
 *
 * Why not localtime_r()/mktime()?  They work in the zone named by the
 * process-wide TZ variable, so two threads planning backfills in two zones
 * would trample each other.  Instead we parse the TZif file ourselves (RFC
 * 8536): the 64-bit table of transitions of a version 2+ file, and the POSIX
 * TZ rule in its footer, which governs every instant after the last listed
 * transition.  Debian may ship "slim" files whose table stops early, so the
 * footer is not an afterthought: current dates can depend on it alone.
 *
 * A parsed zone is immutable, so it needs no lock and may be shared freely;
 * callers load a zone once per call site and keep the handle.
 *
 * Local -> instant: a local time can map to no instant (a DST gap) or to
 * two (a repeated hour).  We enumerate the periods that could contain the
 * answer (every valid instant lies within 26 hours of the local count) and
 * keep the earliest match; a gap resolves to the instant it ends.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "backfill/backfill_internal.h"

#define TZ_MAX_FILE (1u << 20)    /* far above any real zone file */
#define TZ_NAME_MAX 255
#define OFFSET_LIMIT (26 * 3600)  /* no zone is further than this from UTC */

/* One date form of a POSIX rule: Jn, n or Mm.w.d, plus a time of day. */
typedef struct {
	char kind; /* 'J', 'N' (zero-based day), 'M' */
	int day;   /* J: 1..365, N: 0..365, M: weekday 0..6 */
	int month; /* M only: 1..12 */
	int week;  /* M only: 1..5 (5 = last) */
	int32_t time; /* seconds after local midnight, may be negative or > 24h */
} rule_date;

typedef struct {
	int present;
	int has_dst;
	int32_t std_off; /* seconds east of UTC */
	int32_t dst_off;
	rule_date start, end;
} posix_rule;

struct faucet_tz {
	char *name;
	size_t count;        /* transitions */
	int64_t *at;         /* transition instants, ascending */
	unsigned char *kind; /* local time type index per transition */
	size_t types;
	int32_t *utoff;      /* per local time type */
	posix_rule rule;
};

/* ---- calendar helpers (shared with the planner) ------------------------ */

int64_t faucet_bf__floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;
	return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/* Howard Hinnant's days_from_civil / civil_from_days, which hold for every
 * proleptic Gregorian date. */
int64_t faucet_bf__days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = faucet_bf__floor_div(y, 400);
	yoe = y - era * 400;
	doy = (153 * (int64_t)(m > 2 ? m - 3 : m + 9) + 2) / 5 + (int64_t)d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

void faucet_bf__civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
	int64_t era, doe, yoe, doy, mp;

	z += 719468;
	era = faucet_bf__floor_div(z, 146097);
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
	*m = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

static int is_leap(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static unsigned days_in_month(int64_t y, unsigned m)
{
	static const unsigned len[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	return m == 2 && is_leap(y) ? 29 : len[m - 1];
}

/* ---- POSIX TZ rule (the TZif footer) ------------------------------------ */

static int parse_abbrev(const char **p)
{
	const char *s = *p;

	if (*s == '<') {
		const char *close = strchr(s, '>');
		if (close == NULL || close == s + 1)
			return -1;
		*p = close + 1;
		return 0;
	}
	while ((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z'))
		s++;
	if (s - *p < 3)
		return -1;
	*p = s;
	return 0;
}

static int parse_number(const char **p, int max, int *out)
{
	int v = 0, digits = 0;

	while (**p >= '0' && **p <= '9') {
		v = v * 10 + (**p - '0');
		if (v > max)
			return -1;
		(*p)++;
		digits++;
	}
	if (digits == 0)
		return -1;
	*out = v;
	return 0;
}

/* [+-]hh[:mm[:ss]] as seconds (hours up to 167, as RFC 8536 allows). */
static int parse_hms(const char **p, int32_t *out)
{
	int sign = 1, h, m = 0, s = 0;

	if (**p == '+' || **p == '-') {
		sign = **p == '-' ? -1 : 1;
		(*p)++;
	}
	if (parse_number(p, 167, &h) != 0)
		return -1;
	if (**p == ':') {
		(*p)++;
		if (parse_number(p, 59, &m) != 0)
			return -1;
		if (**p == ':') {
			(*p)++;
			if (parse_number(p, 59, &s) != 0)
				return -1;
		}
	}
	*out = sign * (h * 3600 + m * 60 + s);
	return 0;
}

static int parse_rule_date(const char **p, rule_date *out)
{
	out->time = 2 * 3600; /* POSIX default: 02:00 local */
	if (**p == 'M') {
		(*p)++;
		out->kind = 'M';
		if (parse_number(p, 12, &out->month) != 0 || out->month < 1 || **p != '.')
			return -1;
		(*p)++;
		if (parse_number(p, 5, &out->week) != 0 || out->week < 1 || **p != '.')
			return -1;
		(*p)++;
		if (parse_number(p, 6, &out->day) != 0)
			return -1;
	} else if (**p == 'J') {
		(*p)++;
		out->kind = 'J';
		if (parse_number(p, 365, &out->day) != 0 || out->day < 1)
			return -1;
	} else {
		out->kind = 'N';
		if (parse_number(p, 365, &out->day) != 0)
			return -1;
	}
	if (**p == '/') {
		(*p)++;
		if (parse_hms(p, &out->time) != 0)
			return -1;
	}
	return 0;
}

/* Parse "STDoff[DST[off][,start[/time],end[/time]]]".  POSIX offsets count
 * west of UTC, so their sign is flipped here. */
static int parse_posix_rule(const char *s, posix_rule *r)
{
	int32_t off;

	memset(r, 0, sizeof(*r));
	if (parse_abbrev(&s) != 0 || parse_hms(&s, &off) != 0)
		return -1;
	r->std_off = -off;
	r->present = 1;
	if (*s == '\0')
		return 0;
	if (parse_abbrev(&s) != 0)
		return -1;
	r->has_dst = 1;
	r->dst_off = r->std_off + 3600;
	if (*s != ',' && *s != '\0') {
		if (parse_hms(&s, &off) != 0)
			return -1;
		r->dst_off = -off;
	}
	if (*s == '\0') {
		/* No dates: POSIX leaves them to the implementation; the tz code
		 * uses the US rules, and so do we. */
		r->start = (rule_date){'M', 0, 3, 2, 7200};
		r->end = (rule_date){'M', 0, 11, 1, 7200};
		return 0;
	}
	if (*s++ != ',' || parse_rule_date(&s, &r->start) != 0 || *s++ != ',' ||
	    parse_rule_date(&s, &r->end) != 0 || *s != '\0')
		return -1;
	return 0;
}

/* The local second (since the epoch, as if UTC) at which a rule date of
 * year `y` falls. */
static int64_t rule_date_local(const rule_date *rd, int64_t y)
{
	int64_t day;

	if (rd->kind == 'J') {
		/* Jn: 1..365, February 29 is never counted. */
		day = faucet_bf__days_from_civil(y, 1, 1) + rd->day - 1;
		if (is_leap(y) && rd->day >= 60)
			day++;
	} else if (rd->kind == 'N') {
		day = faucet_bf__days_from_civil(y, 1, 1) + rd->day;
	} else {
		int64_t first = faucet_bf__days_from_civil(y, (unsigned)rd->month, 1);
		/* 1970-01-01 was a Thursday (weekday 4). */
		int64_t wday = ((first + 4) % 7 + 7) % 7;
		int64_t delta = ((int64_t)rd->day - wday + 7) % 7;
		int64_t mday = 1 + delta + 7 * (rd->week - 1);
		int64_t len = days_in_month(y, (unsigned)rd->month);
		while (mday > len)
			mday -= 7;
		day = first + mday - 1;
	}
	return day * 86400 + rd->time;
}

/* The rule's transitions in years y-1..y+1, sorted: at[i] switches to
 * is_dst[i]. */
static size_t rule_transitions(const posix_rule *r, int64_t y, int64_t at[6], int is_dst[6])
{
	size_t n = 0;

	for (int64_t yy = y - 1; yy <= y + 1; yy++) {
		/* The start is given in standard time, the end in DST. */
		at[n] = rule_date_local(&r->start, yy) - r->std_off;
		is_dst[n++] = 1;
		at[n] = rule_date_local(&r->end, yy) - r->dst_off;
		is_dst[n++] = 0;
	}
	for (size_t i = 1; i < n; i++) {
		for (size_t j = i; j > 0 && at[j - 1] > at[j]; j--) {
			int64_t t = at[j];
			int d = is_dst[j];
			at[j] = at[j - 1];
			is_dst[j] = is_dst[j - 1];
			at[j - 1] = t;
			is_dst[j - 1] = d;
		}
	}
	return n;
}

static int64_t year_of(int64_t t)
{
	int64_t y;
	unsigned m, d;

	faucet_bf__civil_from_days(faucet_bf__floor_div(t, 86400), &y, &m, &d);
	return y;
}

static int32_t rule_offset(const posix_rule *r, int64_t t)
{
	int64_t at[6];
	int is_dst[6], dst;
	size_t n;

	if (!r->has_dst)
		return r->std_off;
	n = rule_transitions(r, year_of(t + r->std_off), at, is_dst);
	dst = !is_dst[0]; /* before the first of them: the opposite state */
	for (size_t i = 0; i < n && at[i] <= t; i++)
		dst = is_dst[i];
	return dst ? r->dst_off : r->std_off;
}

/* The first rule transition strictly after t, if any within reach. */
static int rule_next(const posix_rule *r, int64_t t, int64_t *next)
{
	int64_t at[6];
	int is_dst[6];
	size_t n;

	if (!r->has_dst)
		return 0;
	n = rule_transitions(r, year_of(t + r->std_off), at, is_dst);
	for (size_t i = 0; i < n; i++) {
		if (at[i] > t) {
			*next = at[i];
			return 1;
		}
	}
	return 0;
}

/* ---- TZif parsing --------------------------------------------------------- */

typedef struct {
	const unsigned char *p;
	size_t left;
} reader;

static int take(reader *r, size_t n, const unsigned char **out)
{
	if (r->left < n)
		return -1;
	*out = r->p;
	r->p += n;
	r->left -= n;
	return 0;
}

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int64_t be64(const unsigned char *p)
{
	return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

typedef struct {
	char version;
	uint32_t isut, isstd, leap, time, type, chars;
} tzif_header;

static int read_header(reader *r, tzif_header *h)
{
	const unsigned char *p;

	if (take(r, 44, &p) != 0 || memcmp(p, "TZif", 4) != 0)
		return -1;
	h->version = (char)p[4];
	h->isut = be32(p + 20);
	h->isstd = be32(p + 24);
	h->leap = be32(p + 28);
	h->time = be32(p + 32);
	h->type = be32(p + 36);
	h->chars = be32(p + 40);
	if (h->type == 0 || h->type > 256 || h->time > 100000 || h->leap > 10000 ||
	    h->chars > 100000 || (h->isut != 0 && h->isut != h->type) ||
	    (h->isstd != 0 && h->isstd != h->type))
		return -1;
	return 0;
}

static size_t block_size(const tzif_header *h, size_t timesize)
{
	return h->time * timesize + h->time + h->type * 6u + h->chars +
	       h->leap * (timesize + 4) + h->isstd + h->isut;
}

/* Read one data block (32- or 64-bit times) into the zone. */
static int read_block(reader *r, const tzif_header *h, size_t timesize, faucet_tz *tz)
{
	const unsigned char *times, *idx, *types, *skip;

	if (take(r, h->time * timesize, &times) != 0 || take(r, h->time, &idx) != 0 ||
	    take(r, h->type * 6u, &types) != 0 ||
	    take(r, block_size(h, timesize) - h->time * (timesize + 1) - h->type * 6u, &skip) != 0)
		return -1;
	tz->count = h->time;
	tz->types = h->type;
	tz->at = faucet__calloc(h->time ? h->time : 1, sizeof(*tz->at));
	tz->kind = faucet__calloc(h->time ? h->time : 1, 1);
	tz->utoff = faucet__calloc(h->type, sizeof(*tz->utoff));
	if (tz->at == NULL || tz->kind == NULL || tz->utoff == NULL)
		return FAUCET_ENOMEM;
	for (uint32_t i = 0; i < h->time; i++) {
		tz->at[i] = timesize == 8 ? be64(times + 8 * i) : (int32_t)be32(times + 4 * i);
		tz->kind[i] = idx[i];
		if (idx[i] >= h->type || (i > 0 && tz->at[i] <= tz->at[i - 1]))
			return -1;
	}
	for (uint32_t i = 0; i < h->type; i++) {
		int32_t off = (int32_t)be32(types + 6 * i);
		if (off <= -OFFSET_LIMIT || off >= OFFSET_LIMIT)
			return -1;
		tz->utoff[i] = off;
	}
	return 0;
}

/* The footer of a v2+ file: "\n<rule>\n"; an empty rule is allowed. */
static int read_footer(reader *r, faucet_tz *tz)
{
	const unsigned char *nl;
	char buf[128];
	size_t len;

	if (r->left < 2 || r->p[0] != '\n')
		return -1;
	nl = memchr(r->p + 1, '\n', r->left - 1);
	if (nl == NULL)
		return -1;
	len = (size_t)(nl - r->p - 1);
	if (len == 0)
		return 0;
	if (len >= sizeof(buf))
		return -1;
	memcpy(buf, r->p + 1, len);
	buf[len] = '\0';
	return parse_posix_rule(buf, &tz->rule);
}

static void tz_release(faucet_tz *tz)
{
	if (tz == NULL)
		return;
	free(tz->name);
	free(tz->at);
	free(tz->kind);
	free(tz->utoff);
	free(tz);
}

int faucet_tz__parse(faucet_tz **out, const char *name, const unsigned char *data, size_t len)
{
	reader r = {data, len};
	tzif_header h;
	faucet_tz *tz;
	const unsigned char *skip;
	int rc = -1;

	*out = NULL;
	tz = faucet__calloc(1, sizeof(*tz));
	if (tz == NULL || (tz->name = faucet__strdup(name)) == NULL) {
		tz_release(tz);
		return FAUCET_ENOMEM;
	}
	if (read_header(&r, &h) == 0) {
		if (h.version == '\0') {
			rc = read_block(&r, &h, 4, tz);
		} else if (take(&r, block_size(&h, 4), &skip) == 0 && read_header(&r, &h) == 0) {
			rc = read_block(&r, &h, 8, tz);
			if (rc == 0)
				rc = read_footer(&r, tz);
		}
	}
	if (rc != 0) {
		tz_release(tz);
		if (rc == FAUCET_ENOMEM)
			return rc;
		return faucet_error_set(FAUCET_ECONFIG,
					"time zone '%s': the zone file is not valid TZif data", name);
	}
	*out = tz;
	return 0;
}

/* ---- loading ------------------------------------------------------------- */

/* A zone name must stay inside the database: no absolute paths, no "..",
 * nothing but the characters IANA names use. */
static int zone_name_ok(const char *name)
{
	size_t len = strlen(name);
	const char *seg = name;

	if (len == 0 || len > TZ_NAME_MAX || name[0] == '/')
		return 0;
	for (const char *p = name; *p; p++) {
		char c = *p;
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-' || c == '+' || c == '/' || c == '.'))
			return 0;
	}
	for (;;) {
		const char *end = strchr(seg, '/');
		size_t n = end ? (size_t)(end - seg) : strlen(seg);
		if (n == 0 || seg[0] == '.')
			return 0; /* empty segment, ".", "..", hidden files */
		if (end == NULL)
			return 1;
		seg = end + 1;
	}
}

static int unknown_zone(const char *name)
{
	return faucet_error_set(FAUCET_ECONFIG, "unknown time zone '%s'", name);
}

int faucet_tz__load_path(faucet_tz **out, const char *name, const char *path)
{
	unsigned char *data;
	struct stat st;
	size_t got = 0;
	int fd, rc;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return unknown_zone(name);
		return faucet__error_os(FAUCET_ECONFIG, errno, "time zone '%s': cannot open %s",
					name, path);
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (off_t)TZ_MAX_FILE) {
		close(fd);
		return unknown_zone(name);
	}
	data = faucet__malloc((size_t)st.st_size + 1);
	if (data == NULL) {
		close(fd);
		return FAUCET_ENOMEM;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, data + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = n < 0 ? errno : EIO;
			free(data);
			close(fd);
			return faucet__error_os(FAUCET_ECONFIG, rc, "time zone '%s': cannot read %s",
						name, path);
		}
		got += (size_t)n;
	}
	close(fd);
	rc = faucet_tz__parse(out, name, data, got);
	free(data);
	return rc;
}

int faucet_tz_load(faucet_tz **out, const char *name)
{
	const char *dir = getenv("TZDIR");
	char *path;
	int rc;

	if (out == NULL || name == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_tz_load: NULL argument");
	*out = NULL;
	if (!zone_name_ok(name))
		return faucet_error_set(FAUCET_ECONFIG, "invalid time zone name '%s'", name);
	if (dir == NULL || dir[0] == '\0')
		dir = "/usr/share/zoneinfo";
	path = faucet__sprintf("%s/%s", dir, name);
	if (path == NULL)
		return FAUCET_ENOMEM;
	rc = faucet_tz__load_path(out, name, path);
	free(path);
	return rc;
}

const char *faucet_tz_name(const faucet_tz *tz)
{
	return tz->name;
}

void faucet_tz_free(faucet_tz *tz)
{
	tz_release(tz);
}

/* ---- queries ------------------------------------------------------------- */

/* Index of the last transition at or before t, or -1. */
static long last_transition(const faucet_tz *tz, int64_t t)
{
	size_t lo = 0, hi = tz->count;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (tz->at[mid] <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (long)lo - 1;
}

static int32_t offset_at(const faucet_tz *tz, int64_t t)
{
	long i = last_transition(tz, t);

	if (tz->rule.present && (tz->count == 0 || i == (long)tz->count - 1))
		return rule_offset(&tz->rule, t);
	/* Before the first transition RFC 8536 says type 0 applies. */
	return tz->utoff[i < 0 ? 0 : tz->kind[i]];
}

/* The next instant after t at which the offset may change; 0 when none. */
static int next_change(const faucet_tz *tz, int64_t t, int64_t *next)
{
	long i = last_transition(tz, t);

	if (i + 1 < (long)tz->count) {
		*next = tz->at[i + 1];
		return 1;
	}
	return tz->rule.present && rule_next(&tz->rule, t, next);
}

int faucet_tz_offset_at(const faucet_tz *tz, int64_t unix_seconds, int32_t *offset)
{
	*offset = offset_at(tz, unix_seconds);
	return 0;
}

int faucet_tz__rule_offset_at(const faucet_tz *tz, int64_t t, int32_t *offset)
{
	if (!tz->rule.present)
		return faucet_error_set(FAUCET_ENOTFOUND, "time zone '%s' has no footer rule",
					tz->name);
	*offset = rule_offset(&tz->rule, t);
	return 0;
}

/* Walk the periods around `local` and find the earliest instant whose
 * local time is `local`, or the end of the gap that swallows it. */
int faucet_tz_local_to_unix(const faucet_tz *tz, int64_t local, int64_t *out, int *skipped)
{
	int64_t t = local - OFFSET_LIMIT - 3600, hi = local + OFFSET_LIMIT + 3600;
	int64_t best = 0, gap_end = 0;
	int found = 0, in_gap = 0;

	if (local < INT64_MIN / 2 || local > INT64_MAX / 2)
		return faucet_error_set(FAUCET_EINVALID, "local time out of range");
	for (;;) {
		int32_t before = offset_at(tz, t), after;
		int64_t cand = local - before, next;

		if (offset_at(tz, cand) == before && (!found || cand < best)) {
			best = cand;
			found = 1;
		}
		if (!next_change(tz, t, &next) || next > hi)
			break;
		after = offset_at(tz, next);
		/* A forward jump skips the local times [next+before, next+after). */
		if (after > before && local >= next + before && local < next + after) {
			gap_end = next;
			in_gap = 1;
		}
		t = next;
	}
	if (skipped != NULL)
		*skipped = !found;
	if (found) {
		*out = best;
		return 0;
	}
	if (in_gap) {
		*out = gap_end;
		return 0;
	}
	return faucet_error_set(FAUCET_ERROR, "time zone '%s': local time %lld has no instant",
				tz->name, (long long)local);
}
