/*
 * test_backfill_tz.c - the TZif reader and the POSIX footer rule.
 *
 * The oracle is `zdump -v`, the tz project's own reader: for each zone we
 * check our offset on both sides of every transition it lists from 1970 to
 * 2100 (well past the end of the files' tables, so the footer rule is
 * exercised too).  Hand-built files check a "slim" zone that has nothing but
 * a footer, and malformed files must be refused, not misread.
 */
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "backfill/backfill_internal.h"

static faucet_tz *load(const char *name)
{
	faucet_tz *tz = NULL;

	if (faucet_tz_load(&tz, name) != 0)
		fail_msg("load %s: %s", name, faucet_error_last()->message);
	return tz;
}

static int month_of(const char *mon)
{
	static const char *names[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
				      "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
	for (int i = 0; i < 12; i++)
		if (strcmp(mon, names[i]) == 0)
			return i + 1;
	return 0;
}

/* Every instant zdump reports must get zdump's offset, and the local time
 * must map back to an instant with that local time. */
static void check_against_zdump(const char *zone, int *checked)
{
	char cmd[256], line[512];
	faucet_tz *tz = load(zone);
	FILE *f;

	(void)snprintf(cmd, sizeof(cmd), "zdump -v -c 1970,2100 %s", zone);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f) != NULL) {
		char name[128], wday[8], mon[8];
		int d, h, mi, s, y, isdst;
		long gmtoff;
		const char *tail;
		int64_t t, local, back;
		int32_t off, off_back;

		if (sscanf(line, "%127s %7s %7s %d %d:%d:%d %d UT", name, wday, mon, &d, &h, &mi,
			   &s, &y) != 8 || (tail = strstr(line, "isdst=")) == NULL ||
		    sscanf(tail, "isdst=%d gmtoff=%ld", &isdst, &gmtoff) != 2)
			continue; /* the "NULL" lines at the limits of time */
		t = faucet_bf__days_from_civil(y, (unsigned)month_of(mon), (unsigned)d) * 86400 +
		    h * 3600 + mi * 60 + s;
		assert_int_equal(faucet_tz_offset_at(tz, t, &off), 0);
		if (off != gmtoff)
			fail_msg("%s at %lld: offset %d, zdump says %ld", zone, (long long)t, off,
				 gmtoff);
		local = t + off;
		assert_int_equal(faucet_tz_local_to_unix(tz, local, &back, NULL), 0);
		assert_int_equal(faucet_tz_offset_at(tz, back, &off_back), 0);
		assert_int_equal(back + off_back, local);
		assert_true(back <= t); /* the earliest instant with that local time */
		(*checked)++;
	}
	assert_int_equal(pclose(f), 0);
	faucet_tz_free(tz);
}

static void offsets_match_zdump(void **state)
{
	static const char *zones[] = {
		"America/New_York", "Australia/Lord_Howe", "Asia/Kathmandu",  "UTC",
		"America/Santiago", "America/Havana",      "Europe/Dublin",    "Pacific/Chatham",
		"Antarctica/Troll", "Africa/Casablanca",   "America/Sao_Paulo", "Pacific/Apia",
	};
	int checked = 0;
	(void)state;

	for (size_t i = 0; i < sizeof(zones) / sizeof(zones[0]); i++)
		check_against_zdump(zones[i], &checked);
	assert_true(checked > 1000);
}

/* Where a zone has both, the footer rule agrees with the table. */
static void footer_rule_agrees_with_the_table(void **state)
{
	static const char *zones[] = {"America/New_York", "Australia/Lord_Howe",
				      "America/Santiago", "Europe/Dublin", "America/Havana"};
	int64_t from = 1735689600; /* 2025-01-01 */
	(void)state;

	for (size_t i = 0; i < sizeof(zones) / sizeof(zones[0]); i++) {
		faucet_tz *tz = load(zones[i]);
		for (int64_t t = from; t < from + 10LL * 366 * 86400; t += 1800) {
			int32_t a, b;
			assert_int_equal(faucet_tz_offset_at(tz, t, &a), 0);
			assert_int_equal(faucet_tz__rule_offset_at(tz, t, &b), 0);
			if (a != b)
				fail_msg("%s at %lld: table %d, rule %d", zones[i], (long long)t, a, b);
		}
		faucet_tz_free(tz);
	}
}

/* ---- hand-built files ------------------------------------------------------ */

static size_t put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
	return 4;
}

/* A version-2 file with one local time type, no transitions and `footer`:
 * what a slim file looks like for a zone whose history we do not need. */
static size_t slim_file(unsigned char *buf, int32_t utoff, const char *footer)
{
	size_t n = 0;

	for (int block = 0; block < 2; block++) {
		memcpy(buf + n, "TZif2", 5);
		memset(buf + n + 5, 0, 15);
		n += 20;
		n += put32(buf + n, 0);  /* isut */
		n += put32(buf + n, 0);  /* isstd */
		n += put32(buf + n, 0);  /* leap */
		n += put32(buf + n, 0);  /* time */
		n += put32(buf + n, 1);  /* type */
		n += put32(buf + n, 4);  /* chars */
		n += put32(buf + n, (uint32_t)utoff);
		buf[n++] = 0;            /* isdst */
		buf[n++] = 0;            /* abbreviation index */
		memcpy(buf + n, "XXX", 4);
		n += 4;
	}
	n += (size_t)sprintf((char *)buf + n, "\n%s\n", footer);
	return n;
}

static void slim_file_uses_the_footer(void **state)
{
	unsigned char buf[512];
	faucet_tz *tz = NULL;
	size_t len = slim_file(buf, -18000, "EST5EDT,M3.2.0,M11.1.0");
	int64_t t;
	int32_t off;
	int skipped;
	(void)state;

	assert_int_equal(faucet_tz__parse(&tz, "Slim/NY", buf, len), 0);
	/* 2026-03-08 06:59:59Z is EST, 07:00:00Z is EDT. */
	faucet_tz_offset_at(tz, 1772953199, &off);
	assert_int_equal(off, -18000);
	faucet_tz_offset_at(tz, 1772953200, &off);
	assert_int_equal(off, -14400);
	/* 2026-11-01 05:59:59Z is EDT, 06:00:00Z is EST. */
	faucet_tz_offset_at(tz, 1793512799, &off);
	assert_int_equal(off, -14400);
	faucet_tz_offset_at(tz, 1793512800, &off);
	assert_int_equal(off, -18000);
	/* 02:30 local on 2026-03-08 is skipped: the gap ends at 07:00Z. */
	assert_int_equal(faucet_tz_local_to_unix(tz, faucet_bf__days_from_civil(2026, 3, 8) * 86400 +
						 9000, &t, &skipped), 0);
	assert_true(skipped);
	assert_int_equal(t, 1772953200);
	/* 01:30 local on 2026-11-01 happens twice: the EDT one first. */
	assert_int_equal(faucet_tz_local_to_unix(tz, faucet_bf__days_from_civil(2026, 11, 1) * 86400 +
						 5400, &t, &skipped), 0);
	assert_false(skipped);
	assert_int_equal(t, 1793511000);
	faucet_tz_free(tz);

	/* Quoted names, half-hour DST, southern hemisphere. */
	len = slim_file(buf, 37800, "<+1030>-10:30<+11>-11,M10.1.0,M4.1.0");
	assert_int_equal(faucet_tz__parse(&tz, "Slim/Lord_Howe", buf, len), 0);
	faucet_tz_offset_at(tz, 1791041400 - 1, &off); /* 2026-10-03 15:29:59Z */
	assert_int_equal(off, 37800);
	faucet_tz_offset_at(tz, 1791041400, &off);
	assert_int_equal(off, 39600);
	faucet_tz_offset_at(tz, 1798761600, &off); /* 2027-01-01: summer */
	assert_int_equal(off, 39600);
	faucet_tz_free(tz);

	/* Times past 24h and Jn dates (all-year DST written as a rule). */
	len = slim_file(buf, -10800, "<-03>3<-02>,J1/0,J365/25");
	assert_int_equal(faucet_tz__parse(&tz, "Slim/AllYear", buf, len), 0);
	faucet_tz_offset_at(tz, 1783000000, &off);
	assert_int_equal(off, -7200);
	faucet_tz_free(tz);
}

static void malformed_files_are_refused(void **state)
{
	unsigned char buf[512], bad[512];
	faucet_tz *tz = (faucet_tz *)0x1;
	size_t len = slim_file(buf, 0, "UTC0");
	static const char *footers[] = {"EST", "EST5EDT,M13.1.0,M11.1.0", "EST5EDT,M3.2.0",
					"<+1030-10:30", "EST5EDT,M3.2.0,M11.1.0junk", "E5"};
	(void)state;

	assert_int_equal(faucet_tz__parse(&tz, "ok", buf, len), 0);
	faucet_tz_free(tz);
	/* Every truncation of a valid file is refused. */
	for (size_t cut = 0; cut < len; cut++) {
		tz = (faucet_tz *)0x1;
		assert_int_equal(faucet_tz__parse(&tz, "Cut/Zone", buf, cut), FAUCET_ECONFIG);
		assert_null(tz);
	}
	tu_assert_error_contains("time zone 'Cut/Zone'");
	/* A wrong magic, then bad footers. */
	memcpy(bad, buf, len);
	bad[0] = 'X';
	assert_int_equal(faucet_tz__parse(&tz, "x", bad, len), FAUCET_ECONFIG);
	for (size_t i = 0; i < sizeof(footers) / sizeof(footers[0]); i++) {
		size_t n = slim_file(bad, 0, footers[i]);
		assert_int_equal(faucet_tz__parse(&tz, "x", bad, n), FAUCET_ECONFIG);
	}
	/* An absurd offset in a type record. */
	len = slim_file(bad, 30 * 3600, "UTC0");
	assert_int_equal(faucet_tz__parse(&tz, "x", bad, len), FAUCET_ECONFIG);
}

static void tzdir_overrides_the_database(void **state)
{
	unsigned char buf[512];
	char *dir = tu_tempdir(), *sub = tu_join(dir, "Test"), *file = tu_join(sub, "Zone");
	const char *old = getenv("TZDIR");
	char *saved = old ? strdup(old) : NULL;
	faucet_tz *tz = NULL;
	int32_t off;
	size_t len = slim_file(buf, 19800, "<+0530>-5:30");
	(void)state;

	assert_int_equal(mkdir(sub, 0700), 0);
	tu_write_file(file, buf, len);
	setenv("TZDIR", dir, 1);
	assert_int_equal(faucet_tz_load(&tz, "Test/Zone"), 0);
	faucet_tz_offset_at(tz, 0, &off);
	assert_int_equal(off, 19800);
	assert_string_equal(faucet_tz_name(tz), "Test/Zone");
	faucet_tz_free(tz);
	assert_int_equal(faucet_tz_load(&tz, "America/New_York"), FAUCET_ECONFIG);
	if (saved)
		setenv("TZDIR", saved, 1);
	else
		unsetenv("TZDIR");
	free(saved);
	tu_rmrf(dir);
	free(file);
	free(sub);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(offsets_match_zdump),
		cmocka_unit_test(footer_rule_agrees_with_the_table),
		cmocka_unit_test(slim_file_uses_the_footer),
		cmocka_unit_test(malformed_files_are_refused),
		cmocka_unit_test(tzdir_overrides_the_database),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
