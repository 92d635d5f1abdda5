/*
 * test_backfill_plan.c - cutting ranges into units: calendar and elapsed
 * windows across DST changes, odd offsets, gaps at midnight, truncation,
 * the unit limits, bad input, the descriptor and its hash, and planning in
 * two zones from two threads at once.
 *
 * Expected instants were checked against `zdump -v` and Python's zoneinfo;
 * expected hashes were computed with a separate FNV-1a in Python.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "backfill/backfill_internal.h"

typedef struct {
	const char *start, *end, *id;
} want_unit;

static faucet_backfill_plan *plan_ok(const char *from, const char *to, const char *window,
				     const char *zone)
{
	faucet_backfill_range r = {from, to, window, zone, NULL};
	faucet_backfill_plan *p = NULL;

	if (faucet_backfill_plan_new(&p, &r) != 0)
		fail_msg("plan %s..%s/%s in %s: %s", from, to, window ? window : "whole",
			 zone ? zone : "UTC", faucet_error_last()->message);
	return p;
}

static void assert_units(const faucet_backfill_plan *p, const want_unit *want, size_t n)
{
	assert_int_equal(faucet_backfill_plan_count(p), n);
	for (size_t i = 0; i < n; i++) {
		const faucet_backfill_unit *u = faucet_backfill_plan_unit(p, i);
		assert_string_equal(u->start, want[i].start);
		assert_string_equal(u->end, want[i].end);
		assert_string_equal(u->id, want[i].id);
		if (i > 0) /* contiguous */
			assert_string_equal(faucet_backfill_plan_unit(p, i - 1)->end, u->start);
	}
}

static void new_york_calendar_days_keep_midnight(void **state)
{
	static const want_unit spring[] = {
		{"2026-03-07T00:00:00-05:00", "2026-03-08T00:00:00-05:00", "20260307T050000Z"},
		{"2026-03-08T00:00:00-05:00", "2026-03-09T00:00:00-04:00", "20260308T050000Z"},
		{"2026-03-09T00:00:00-04:00", "2026-03-10T00:00:00-04:00", "20260309T040000Z"},
	};
	static const want_unit autumn[] = {
		{"2026-10-31T00:00:00-04:00", "2026-11-01T00:00:00-04:00", "20261031T040000Z"},
		{"2026-11-01T00:00:00-04:00", "2026-11-02T00:00:00-05:00", "20261101T040000Z"},
		{"2026-11-02T00:00:00-05:00", "2026-11-03T00:00:00-05:00", "20261102T050000Z"},
	};
	faucet_backfill_plan *p;
	const faucet_backfill_unit *u;
	(void)state;

	p = plan_ok("2026-03-07", "2026-03-10", "1d", "America/New_York");
	assert_units(p, spring, 3);
	u = faucet_backfill_plan_unit(p, 1);
	assert_int_equal(u->end_unix - u->start_unix, 23 * 3600);
	assert_string_equal(u->start_date, "2026-03-08");
	assert_string_equal(u->end_date, "2026-03-09");
	faucet_backfill_plan_free(p);

	p = plan_ok("2026-10-31", "2026-11-03", "1d", "America/New_York");
	assert_units(p, autumn, 3);
	u = faucet_backfill_plan_unit(p, 1);
	assert_int_equal(u->end_unix - u->start_unix, 25 * 3600);
	faucet_backfill_plan_free(p);
}

static void new_york_elapsed_hours_keep_length(void **state)
{
	static const want_unit spring[] = {
		{"2026-03-07T00:00:00-05:00", "2026-03-08T00:00:00-05:00", "20260307T050000Z"},
		{"2026-03-08T00:00:00-05:00", "2026-03-09T01:00:00-04:00", "20260308T050000Z"},
		{"2026-03-09T01:00:00-04:00", "2026-03-10T00:00:00-04:00", "20260309T050000Z"},
	};
	static const want_unit autumn[] = {
		{"2026-10-31T00:00:00-04:00", "2026-11-01T00:00:00-04:00", "20261031T040000Z"},
		{"2026-11-01T00:00:00-04:00", "2026-11-01T23:00:00-05:00", "20261101T040000Z"},
		{"2026-11-01T23:00:00-05:00", "2026-11-02T23:00:00-05:00", "20261102T040000Z"},
		{"2026-11-02T23:00:00-05:00", "2026-11-03T00:00:00-05:00", "20261103T040000Z"},
	};
	faucet_backfill_plan *p;
	(void)state;

	p = plan_ok("2026-03-07", "2026-03-10", "24h", "America/New_York");
	assert_units(p, spring, 3);
	/* The last unit is cut at --to: 23 hours, not 24. */
	assert_int_equal(faucet_backfill_plan_unit(p, 2)->end_unix -
			 faucet_backfill_plan_unit(p, 2)->start_unix, 23 * 3600);
	faucet_backfill_plan_free(p);

	p = plan_ok("2026-10-31", "2026-11-03", "86400", "America/New_York");
	assert_units(p, autumn, 4);
	faucet_backfill_plan_free(p);
}

static void lord_howe_half_hour_dst(void **state)
{
	static const want_unit days[] = {
		{"2026-10-03T00:00:00+10:30", "2026-10-04T00:00:00+10:30", "20261002T133000Z"},
		{"2026-10-04T00:00:00+10:30", "2026-10-05T00:00:00+11:00", "20261003T133000Z"},
	};
	/* 02:15 on the change day does not exist (02:00 -> 02:30): the step
	 * moves on by an hour, to 03:15. */
	static const want_unit gap[] = {
		{"2026-10-03T02:15:00+10:30", "2026-10-04T03:15:00+11:00", "20261002T154500Z"},
		{"2026-10-04T03:15:00+11:00", "2026-10-05T00:00:00+11:00", "20261003T161500Z"},
	};
	/* 01:45 on 2026-04-05 happens twice (+11 then +10:30): the first one. */
	static const want_unit fold[] = {
		{"2026-04-04T01:45:00+11:00", "2026-04-05T01:45:00+11:00", "20260403T144500Z"},
		{"2026-04-05T01:45:00+11:00", "2026-04-06T00:00:00+10:30", "20260404T144500Z"},
	};
	faucet_backfill_plan *p;
	(void)state;

	p = plan_ok("2026-10-03", "2026-10-05", "1d", "Australia/Lord_Howe");
	assert_units(p, days, 2);
	assert_int_equal(faucet_backfill_plan_unit(p, 1)->end_unix -
			 faucet_backfill_plan_unit(p, 1)->start_unix, 23 * 3600 + 1800);
	faucet_backfill_plan_free(p);

	p = plan_ok("2026-10-03T02:15:00+10:30", "2026-10-05", "1d", "Australia/Lord_Howe");
	assert_units(p, gap, 2);
	faucet_backfill_plan_free(p);

	p = plan_ok("2026-04-04T01:45:00+11:00", "2026-04-06", "1d", "Australia/Lord_Howe");
	assert_units(p, fold, 2);
	faucet_backfill_plan_free(p);
}

static void kathmandu_quarter_hour_offset(void **state)
{
	static const want_unit want[] = {
		{"2026-01-01T00:00:00+05:45", "2026-01-01T12:00:00+05:45", "20251231T181500Z"},
		{"2026-01-01T12:00:00+05:45", "2026-01-02T00:00:00+05:45", "20260101T061500Z"},
	};
	faucet_backfill_plan *p = plan_ok("2026-01-01", "2026-01-02", "12h", "Asia/Kathmandu");
	(void)state;

	assert_units(p, want, 2);
	assert_string_equal(faucet_backfill_plan_unit(p, 0)->start_date, "2026-01-01");
	assert_int_equal(faucet_backfill_plan_unit(p, 0)->start_unix, 1767204900);
	faucet_backfill_plan_free(p);
}

static void utc_minutes_weeks_and_truncation(void **state)
{
	static const want_unit minutes[] = {
		{"2026-06-01T00:00:00+00:00", "2026-06-01T00:45:00+00:00", "20260601T000000Z"},
		{"2026-06-01T00:45:00+00:00", "2026-06-01T01:00:00+00:00", "20260601T004500Z"},
	};
	static const want_unit weeks[] = {
		{"2026-06-01T00:00:00+00:00", "2026-06-15T00:00:00+00:00", "20260601T000000Z"},
		{"2026-06-15T00:00:00+00:00", "2026-06-20T00:00:00+00:00", "20260615T000000Z"},
	};
	faucet_backfill_plan *p;
	(void)state;

	p = plan_ok("2026-06-01T00:00:00Z", "2026-06-01T01:00:00Z", "45m", NULL);
	assert_units(p, minutes, 2);
	assert_string_equal(faucet_backfill_plan_descriptor(p),
			    "time|2026-06-01T00:00:00+00:00|2026-06-01T01:00:00+00:00|2700|default");
	faucet_backfill_plan_free(p);

	p = plan_ok("2026-06-01", "2026-06-20", "2w", "UTC");
	assert_units(p, weeks, 2);
	faucet_backfill_plan_free(p);
}

static void no_window_is_one_unit(void **state)
{
	static const want_unit want[] = {
		{"2026-06-01T00:00:00+00:00", "2026-07-01T00:00:00+00:00", "20260601T000000Z"},
	};
	faucet_backfill_plan *p = plan_ok("2026-06-01", "2026-07-01", NULL, "UTC");
	(void)state;

	assert_units(p, want, 1);
	faucet_backfill_plan_free(p);
	p = plan_ok("2026-06-01", "2026-07-01", "", "UTC");
	assert_units(p, want, 1);
	faucet_backfill_plan_free(p);
	/* A window longer than the range is one unit as well. */
	p = plan_ok("2026-06-01", "2026-07-01", "6w", "UTC");
	assert_units(p, want, 1);
	faucet_backfill_plan_free(p);
}

/* America/Havana starts DST at midnight: 2026-03-08 00:00 does not exist,
 * so the bare date means 01:00 CDT (zdump: 05:00 UT).  And 2026-11-01
 * 00:00 happens twice; the first (CDT) is taken. */
static void bare_date_in_a_gap(void **state)
{
	faucet_backfill_plan *p;
	(void)state;

	p = plan_ok("2026-03-08", "2026-03-10", "1d", "America/Havana");
	assert_int_equal(faucet_backfill_plan_count(p), 2);
	assert_string_equal(faucet_backfill_plan_from(p), "2026-03-08T01:00:00-04:00");
	assert_string_equal(faucet_backfill_plan_unit(p, 0)->id, "20260308T050000Z");
	/* The cursor's wall clock (01:00) is what the next step advances. */
	assert_string_equal(faucet_backfill_plan_unit(p, 1)->start, "2026-03-09T01:00:00-04:00");
	assert_string_equal(faucet_backfill_plan_to(p), "2026-03-10T00:00:00-04:00");
	faucet_backfill_plan_free(p);

	p = plan_ok("2026-11-01", "2026-11-02", NULL, "America/Havana");
	assert_string_equal(faucet_backfill_plan_from(p), "2026-11-01T00:00:00-04:00");
	faucet_backfill_plan_free(p);

	/* Santiago: 2026-09-06 00:00 is skipped (-04 -> -03 at 04:00 UT). */
	p = plan_ok("2026-09-06", "2026-09-07", NULL, "America/Santiago");
	assert_string_equal(faucet_backfill_plan_from(p), "2026-09-06T01:00:00-03:00");
	assert_int_equal(faucet_backfill_plan_unit(p, 0)->start_unix, 1788667200);
	faucet_backfill_plan_free(p);
}

static void fractions_are_kept_only_when_given(void **state)
{
	faucet_backfill_plan *p;
	(void)state;

	p = plan_ok("2026-06-01T00:00:00.5Z", "2026-06-01T02:00:00Z", "1h", "UTC");
	assert_int_equal(faucet_backfill_plan_count(p), 2);
	assert_string_equal(faucet_backfill_plan_unit(p, 0)->start, "2026-06-01T00:00:00.500+00:00");
	assert_string_equal(faucet_backfill_plan_unit(p, 0)->end, "2026-06-01T01:00:00.500+00:00");
	assert_string_equal(faucet_backfill_plan_unit(p, 1)->end, "2026-06-01T02:00:00+00:00");
	assert_string_equal(faucet_backfill_plan_unit(p, 0)->id, "20260601T000000Z");
	assert_string_equal(faucet_backfill_plan_descriptor(p),
			    "time|2026-06-01T00:00:00.500+00:00|2026-06-01T02:00:00+00:00|3600|default");
	faucet_backfill_plan_free(p);

	p = plan_ok("2026-06-01T00:00:00.123456Z", "2026-06-01T00:00:01.000000001+00:00", NULL, NULL);
	assert_string_equal(faucet_backfill_plan_from(p), "2026-06-01T00:00:00.123456+00:00");
	assert_string_equal(faucet_backfill_plan_to(p), "2026-06-01T00:00:01.000000001+00:00");
	faucet_backfill_plan_free(p);

	/* Offsets in the input are re-rendered in the zone. */
	p = plan_ok("2026-06-01T09:30:00+05:30", "2026-06-01T05:00:00Z", NULL, "America/New_York");
	assert_string_equal(faucet_backfill_plan_from(p), "2026-06-01T00:00:00-04:00");
	assert_string_equal(faucet_backfill_plan_to(p), "2026-06-01T01:00:00-04:00");
	faucet_backfill_plan_free(p);
}

static void descriptor_and_hash(void **state)
{
	faucet_backfill_plan *p;
	faucet_backfill_range r = {"2026-06-01", "2026-06-02", NULL, "UTC", "orders"};
	(void)state;

	p = plan_ok("2026-03-07", "2026-03-10", "1d", "America/New_York");
	assert_string_equal(faucet_backfill_plan_descriptor(p),
			    "time|2026-03-07T00:00:00-05:00|2026-03-10T00:00:00-04:00|1d|default");
	assert_string_equal(faucet_backfill_plan_hash(p), "b03d230b10fe877f");
	faucet_backfill_plan_free(p);

	/* The same range spelt differently has the same descriptor. */
	p = plan_ok("2026-03-07T05:00:00Z", "2026-03-10T04:00:00+00:00", "24h", "America/New_York");
	assert_string_equal(faucet_backfill_plan_descriptor(p),
			    "time|2026-03-07T00:00:00-05:00|2026-03-10T00:00:00-04:00|86400|default");
	assert_string_equal(faucet_backfill_plan_hash(p), "63df3a16044c5bfa");
	faucet_backfill_plan_free(p);

	assert_int_equal(faucet_backfill_plan_new(&p, &r), 0);
	assert_string_equal(faucet_backfill_plan_descriptor(p),
			    "time|2026-06-01T00:00:00+00:00|2026-06-02T00:00:00+00:00|whole|orders");
	assert_string_equal(faucet_backfill_plan_hash(p), "4f97b0aa6db437d9");
	assert_string_equal(faucet_backfill_plan_timezone(p), "UTC");
	faucet_backfill_plan_free(p);
}

static void assert_config_error(const char *from, const char *to, const char *window,
				const char *zone, const char *needle)
{
	faucet_backfill_range r = {from, to, window, zone, NULL};
	faucet_backfill_plan *p = (faucet_backfill_plan *)0x1;

	assert_int_equal(faucet_backfill_plan_new(&p, &r), FAUCET_ECONFIG);
	assert_null(p);
	tu_assert_error_contains(needle);
}

static void bounds_errors(void **state)
{
	faucet_backfill_plan *p;
	(void)state;
	assert_config_error("2026-06-02", "2026-06-01", "1d", NULL, "must be before --to");
	assert_config_error("2026-06-01", "2026-06-01", "1d", NULL, "must be before --to");
	assert_config_error("2026-06-01T00:00:00.5Z", "2026-06-01T00:00:00.25Z", NULL, NULL,
			    "must be before");
	assert_config_error("2026-02-30", "2026-06-01", NULL, NULL, "--from '2026-02-30'");
	assert_config_error("2026-06-01", "yesterday", NULL, NULL, "--to 'yesterday'");
	assert_config_error("2026-06-01T00:00:00", "2026-06-02", NULL, NULL, "RFC 3339");
	assert_config_error("2026-06-01T24:00:00Z", "2026-06-02", NULL, NULL, "--from");
	assert_config_error("2026-06-01T00:00:00+25:00", "2026-06-02", NULL, NULL, "--from");
	assert_config_error("2026-06-01T00:00:00.Z", "2026-06-02", NULL, NULL, "--from");
	assert_config_error("2026-06-01 ", "2026-06-02", NULL, NULL, "--from");
	assert_config_error(NULL, "2026-06-02", NULL, NULL, "--from and --to");
	/* Ids are YYYYMMDDTHHMMSSZ in UTC and times have four-digit years:
	 * year 0000 in Kathmandu starts in year -1 in UTC, 9999 in New York
	 * ends in 10000, and 9999 in Kathmandu cannot be rendered there. */
	assert_config_error("0000-01-01", "0000-01-02", "1h", "Asia/Kathmandu",
			    "--from '0000-01-01' is outside the years 0000-9999");
	assert_config_error("9999-12-31", "9999-12-31T23:59:59-05:00", "1h", "America/New_York",
			    "--to '9999-12-31T23:59:59-05:00' is outside the years 0000-9999");
	assert_config_error("2026-01-01", "9999-12-31T23:00:00Z", NULL, "Asia/Kathmandu",
			    "--to '9999-12-31T23:00:00Z' is outside");
	assert_config_error("0000-01-01T00:00:00+01:00", "2026-01-01", NULL, NULL,
			    "--from '0000-01-01T00:00:00+01:00' is outside");
	/* The first and last representable days still plan. */
	p = plan_ok("0000-01-01", "0000-01-02", "1d", "UTC");
	assert_string_equal(faucet_backfill_plan_unit(p, 0)->id, "00000101T000000Z");
	faucet_backfill_plan_free(p);
	p = plan_ok("9999-12-31", "9999-12-31T23:59:59.5Z", "12h", NULL);
	assert_string_equal(faucet_backfill_plan_unit(p, 1)->id, "99991231T120000Z");
	assert_string_equal(faucet_backfill_plan_to(p), "9999-12-31T23:59:59.500+00:00");
	faucet_backfill_plan_free(p);
}

static void bad_windows(void **state)
{
	static const char *bad[] = {"0h", "5x", "-1d", "1.5h", "h", "1hh", " 1h", "1H", "0",
				    "99999999999999999999s", "40000w"};
	(void)state;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_config_error("2026-06-01", "2026-06-02", bad[i], NULL, "invalid window");
}

static void unknown_and_unsafe_zones(void **state)
{
	(void)state;
	assert_config_error("2026-06-01", "2026-06-02", NULL, "Mars/Olympus_Mons",
			    "unknown time zone 'Mars/Olympus_Mons'");
	assert_config_error("2026-06-01", "2026-06-02", NULL, "America",
			    "unknown time zone 'America'");
	assert_config_error("2026-06-01", "2026-06-02", NULL, "../../etc/passwd",
			    "invalid time zone name");
	assert_config_error("2026-06-01", "2026-06-02", NULL, "/etc/localtime",
			    "invalid time zone name");
	assert_config_error("2026-06-01", "2026-06-02", NULL, "", "invalid time zone name");
	assert_config_error("2026-06-01", "2026-06-02", NULL, "Europe/../Europe/Paris",
			    "invalid time zone name");
	/* zone.tab is a file in the database, but not a zone. */
	assert_config_error("2026-06-01", "2026-06-02", NULL, "zone.tab", "time zone 'zone.tab'");
}

static void unit_limits(void **state)
{
	faucet_backfill_plan *p;
	(void)state;

	/* 10,000 minutes is allowed (with the warning flag)... */
	p = plan_ok("2026-01-01T00:00:00Z", "2026-01-07T22:40:00Z", "1m", "UTC");
	assert_int_equal(faucet_backfill_plan_count(p), 10000);
	assert_true(faucet_backfill_plan_is_large(p));
	faucet_backfill_plan_free(p);
	/* ...one more is not, */
	assert_config_error("2026-01-01T00:00:00Z", "2026-01-07T22:40:01Z", "1m", NULL,
			    "more than 10000 units");
	/* and a decade of seconds fails fast rather than allocating them all. */
	assert_config_error("2016-01-01", "2026-01-01", "1s", NULL, "more than 10000 units");

	p = plan_ok("2026-01-01", "2026-01-01T16:40:00Z", "1m", "UTC");
	assert_int_equal(faucet_backfill_plan_count(p), 1000);
	assert_false(faucet_backfill_plan_is_large(p));
	faucet_backfill_plan_free(p);
	p = plan_ok("2026-01-01", "2026-01-01T16:41:00Z", "1m", "UTC");
	assert_true(faucet_backfill_plan_is_large(p));
	faucet_backfill_plan_free(p);
}

/* ---- two zones, two threads ------------------------------------------------ */

typedef struct {
	const char *zone, *from, *to, *window;
	char *rendering; /* every unit's start|end|id, joined */
	pthread_barrier_t *go;
} plan_job;

static char *render_plan(const plan_job *job)
{
	faucet_backfill_plan *p = NULL;
	faucet_backfill_range r = {job->from, job->to, job->window, job->zone, NULL};
	size_t cap = 1 << 16, len = 0;
	char *out = malloc(cap);

	if (out == NULL || faucet_backfill_plan_new(&p, &r) != 0) {
		free(out);
		return NULL;
	}
	out[0] = '\0';
	for (size_t i = 0; i < faucet_backfill_plan_count(p); i++) {
		const faucet_backfill_unit *u = faucet_backfill_plan_unit(p, i);
		int n = snprintf(out + len, cap - len, "%s|%s|%s\n", u->start, u->end, u->id);
		if (n < 0 || (size_t)n >= cap - len)
			break;
		len += (size_t)n;
	}
	faucet_backfill_plan_free(p);
	return out;
}

static void *plan_thread(void *arg)
{
	plan_job *job = arg;

	pthread_barrier_wait(job->go);
	/* Plan many times so the two threads really interleave. */
	for (int i = 0; i < 50; i++) {
		char *r = render_plan(job);
		if (r == NULL || (job->rendering != NULL && strcmp(r, job->rendering) != 0)) {
			free(r);
			free(job->rendering);
			job->rendering = NULL;
			return (void *)1;
		}
		free(job->rendering);
		job->rendering = r;
	}
	return NULL;
}

static void two_threads_plan_in_two_zones(void **state)
{
	pthread_barrier_t go;
	plan_job jobs[2] = {
		{"America/New_York", "2026-03-01", "2026-04-01", "1d", NULL, &go},
		{"Australia/Lord_Howe", "2026-09-20", "2026-10-20", "1d", NULL, &go},
	};
	pthread_t th[2];
	void *res;
	(void)state;

	assert_int_equal(pthread_barrier_init(&go, NULL, 2), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, plan_thread, &jobs[i]), 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(pthread_join(th[i], &res), 0);
		assert_null(res);
	}
	pthread_barrier_destroy(&go);
	for (int i = 0; i < 2; i++) {
		plan_job alone = jobs[i];
		char *want = render_plan(&alone);
		assert_non_null(want);
		assert_non_null(jobs[i].rendering);
		assert_string_equal(jobs[i].rendering, want);
		free(want);
		free(jobs[i].rendering);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(new_york_calendar_days_keep_midnight),
		cmocka_unit_test(new_york_elapsed_hours_keep_length),
		cmocka_unit_test(lord_howe_half_hour_dst),
		cmocka_unit_test(kathmandu_quarter_hour_offset),
		cmocka_unit_test(utc_minutes_weeks_and_truncation),
		cmocka_unit_test(no_window_is_one_unit),
		cmocka_unit_test(bare_date_in_a_gap),
		cmocka_unit_test(fractions_are_kept_only_when_given),
		cmocka_unit_test(descriptor_and_hash),
		cmocka_unit_test(bounds_errors),
		cmocka_unit_test(bad_windows),
		cmocka_unit_test(unknown_and_unsafe_zones),
		cmocka_unit_test(unit_limits),
		cmocka_unit_test(two_threads_plan_in_two_zones),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
