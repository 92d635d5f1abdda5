/*
 * plan.c - cutting a backfill range into units.
 *
 * Two kinds of window, because operators mean two different things:
 * "24h" is elapsed time (a unit is always 86,400 s, so across a DST change
 * units stop starting at midnight), while "1d" is a calendar day (the
 * cursor's local wall-clock time moves by a day and is resolved again, so
 * units keep starting at local midnight and last 23 or 25 hours across a
 * change).  A calendar step that lands in a gap moves forward an hour at a
 * time until the local time exists; a repeated hour takes its first instant.
 *
 * The descriptor names the range in a form that does not depend on how the
 * operator spelled it (boundaries rendered in the zone, windows normalised),
 * and its FNV-1a hash keys the progress marker - both must match the
 * original faucet byte for byte, or a resumed backfill would start over.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "backfill/backfill_internal.h"
#include <faucet/keys.h>

struct faucet_backfill_plan {
	faucet_backfill_unit *units;
	size_t count;
	char *descriptor;
	char hash[17];
	char *zone;
	char from[40];
	char to[40];
};

/* One calendar step of `days` from t, resolved as described above. */
static int calendar_step(const faucet_tz *tz, int64_t t, int64_t days, int64_t *out)
{
	int32_t off;
	int64_t local;
	int skipped = 1;

	(void)faucet_tz_offset_at(tz, t, &off);
	local = t + off + days * 86400;
	for (int tries = 0; tries < 48; tries++) {
		if (faucet_tz_local_to_unix(tz, local, out, &skipped) != 0)
			return FAUCET_ERROR;
		if (!skipped)
			return 0;
		local += 3600;
	}
	return faucet_error_set(FAUCET_ERROR, "time zone '%s': no valid local time within "
				"two days of a calendar step", faucet_tz_name(tz));
}

static int fill_unit(faucet_backfill_unit *u, const faucet_tz *tz, faucet_bf_instant start,
		     faucet_bf_instant end)
{
	int64_t days = faucet_bf__floor_div(start.sec, 86400), y;
	int64_t sod = start.sec - days * 86400;
	unsigned m, d;

	faucet_bf__civil_from_days(days, &y, &m, &d);
	(void)snprintf(u->id, sizeof(u->id), "%04d%02u%02uT%02d%02d%02dZ", (int)y, m, d,
		       (int)(sod / 3600), (int)(sod / 60 % 60), (int)(sod % 60));
	u->start_unix = start.sec;
	u->end_unix = end.sec;
	if (faucet_bf__render(tz, start, u->start, sizeof(u->start)) != 0 ||
	    faucet_bf__render(tz, end, u->end, sizeof(u->end)) != 0 ||
	    faucet_bf__render_date(tz, start.sec, u->start_date, sizeof(u->start_date)) != 0 ||
	    faucet_bf__render_date(tz, end.sec, u->end_date, sizeof(u->end_date)) != 0)
		return FAUCET_EINVALID;
	return 0;
}

static int before(faucet_bf_instant a, faucet_bf_instant b)
{
	return a.sec < b.sec || (a.sec == b.sec && a.nsec < b.nsec);
}

static int too_many(const faucet_backfill_plan *p, const char *window)
{
	return faucet_error_set(FAUCET_ECONFIG,
				"backfill from %s to %s with window %s has more than %d units; "
				"choose a larger --window",
				p->from, p->to, window, FAUCET_BACKFILL_MAX_UNITS);
}

static int cut_units(faucet_backfill_plan *p, const faucet_tz *tz, faucet_bf_instant from,
		     faucet_bf_instant to, const faucet_bf_window *w, const char *window_text)
{
	faucet_bf_instant cursor = from;
	size_t cap = 0;

	while (before(cursor, to)) {
		faucet_bf_instant next = cursor;
		faucet_backfill_unit *grown;
		int rc;

		if (p->count == FAUCET_BACKFILL_MAX_UNITS)
			return too_many(p, window_text);
		if (w->whole)
			next = to;
		else if (w->calendar && calendar_step(tz, cursor.sec, w->days, &next.sec) != 0)
			return FAUCET_ERROR;
		else if (!w->calendar)
			next.sec = cursor.sec + w->seconds;
		if (before(to, next))
			next = to;
		grown = faucet__reserve(p->units, &cap, p->count + 1, sizeof(*p->units), 16);
		if (grown == NULL)
			return FAUCET_ENOMEM;
		p->units = grown;
		rc = fill_unit(&p->units[p->count], tz, cursor, next);
		if (rc != 0)
			return rc;
		p->count++;
		cursor = next;
	}
	return 0;
}

/* Render a boundary in the zone.  Times have four-digit years both there
 * and in unit ids (the UTC start as YYYYMMDDTHHMMSSZ), so a boundary outside
 * the years 0000..9999 in either is refused here: every unit starts between
 * the two boundaries, and an id like "-0011231T181844Z" must never be made. */
static int render_boundary(const faucet_tz *tz, faucet_bf_instant t, const char *what,
			   const char *text, char *out, size_t size)
{
	int64_t first = faucet_bf__days_from_civil(0, 1, 1) * 86400;
	int64_t past = faucet_bf__days_from_civil(10000, 1, 1) * 86400;

	if (t.sec < first || t.sec >= past || faucet_bf__render(tz, t, out, size) != 0)
		return faucet_error_set(FAUCET_ECONFIG,
					"%s '%s' is outside the years 0000-9999 in UTC or in "
					"time zone '%s'",
					what, text, faucet_tz_name(tz));
	return 0;
}

static int plan_build(faucet_backfill_plan *p, const faucet_backfill_range *r, const faucet_tz *tz)
{
	const char *window = r->window && r->window[0] ? r->window : NULL;
	const char *row = r->row ? r->row : "default";
	faucet_bf_instant from, to;
	faucet_bf_window w;
	int rc;

	if (r->from == NULL || r->to == NULL)
		return faucet_error_set(FAUCET_ECONFIG, "a backfill needs both --from and --to");
	if (row[0] == '\0')
		return faucet_error_set(FAUCET_ECONFIG, "--row must not be empty");
	if ((rc = faucet_bf__parse_window(window, &w)) != 0 ||
	    (rc = faucet_bf__parse_boundary(tz, r->from, "--from", &from)) != 0 ||
	    (rc = faucet_bf__parse_boundary(tz, r->to, "--to", &to)) != 0)
		return rc;
	if (!before(from, to))
		return faucet_error_set(FAUCET_ECONFIG, "--from '%s' must be before --to '%s'",
					r->from, r->to);
	if ((rc = render_boundary(tz, from, "--from", r->from, p->from, sizeof(p->from))) != 0 ||
	    (rc = render_boundary(tz, to, "--to", r->to, p->to, sizeof(p->to))) != 0)
		return rc;
	p->zone = faucet__strdup(faucet_tz_name(tz));
	p->descriptor = faucet__sprintf("time|%s|%s|%s|%s", p->from, p->to, w.label, row);
	if (p->zone == NULL || p->descriptor == NULL)
		return FAUCET_ENOMEM;
	(void)snprintf(p->hash, sizeof(p->hash), "%016llx",
		       faucet_fnv1a64(p->descriptor, strlen(p->descriptor)));
	return cut_units(p, tz, from, to, &w, window ? window : "whole");
}

int faucet_backfill_plan_new_in(faucet_backfill_plan **out, const faucet_backfill_range *range,
				const faucet_tz *tz)
{
	faucet_backfill_plan *p;
	int rc;

	if (out == NULL || range == NULL || tz == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_backfill_plan_new: NULL argument");
	*out = NULL;
	p = faucet__calloc(1, sizeof(*p));
	if (p == NULL)
		return FAUCET_ENOMEM;
	rc = plan_build(p, range, tz);
	if (rc != 0) {
		faucet_backfill_plan_free(p);
		return rc;
	}
	*out = p;
	return 0;
}

int faucet_backfill_plan_new(faucet_backfill_plan **out, const faucet_backfill_range *range)
{
	faucet_tz *tz = NULL;
	int rc;

	if (out == NULL || range == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_backfill_plan_new: NULL argument");
	*out = NULL;
	rc = faucet_tz_load(&tz, range->timezone ? range->timezone : "UTC");
	if (rc != 0)
		return rc;
	rc = faucet_backfill_plan_new_in(out, range, tz);
	faucet_tz_free(tz);
	return rc;
}

size_t faucet_backfill_plan_count(const faucet_backfill_plan *p)
{
	return p->count;
}

const faucet_backfill_unit *faucet_backfill_plan_unit(const faucet_backfill_plan *p, size_t i)
{
	return i < p->count ? &p->units[i] : NULL;
}

const char *faucet_backfill_plan_descriptor(const faucet_backfill_plan *p)
{
	return p->descriptor;
}

const char *faucet_backfill_plan_hash(const faucet_backfill_plan *p)
{
	return p->hash;
}

const char *faucet_backfill_plan_timezone(const faucet_backfill_plan *p)
{
	return p->zone;
}

const char *faucet_backfill_plan_from(const faucet_backfill_plan *p)
{
	return p->from;
}

const char *faucet_backfill_plan_to(const faucet_backfill_plan *p)
{
	return p->to;
}

int faucet_backfill_plan_is_large(const faucet_backfill_plan *p)
{
	return p->count > FAUCET_BACKFILL_WARN_UNITS;
}

void faucet_backfill_plan_free(faucet_backfill_plan *p)
{
	if (p == NULL)
		return;
	free(p->units);
	free(p->descriptor);
	free(p->zone);
	free(p);
}
