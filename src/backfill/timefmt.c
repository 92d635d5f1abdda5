/*
 * timefmt.c - the text forms of backfill times: RFC 3339 boundaries, bare
 * dates, window lengths, and the rendering every unit is shown in.
 *
 * The rendering follows the original faucet exactly, because it feeds the
 * range descriptor and therefore the marker's key: the zone's numeric offset
 * ("+00:00", never "Z") and a fraction only when the instant has one - which
 * happens only when an input boundary carried a non-zero fraction - printed
 * with 3, 6 or 9 digits, the fewest that keep every non-zero digit.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "backfill/backfill_internal.h"

/* Read exactly n digits. */
static int digits(const char **p, int n, int *out)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		char c = (*p)[i];
		if (c < '0' || c > '9')
			return -1;
		v = v * 10 + (c - '0');
	}
	*p += n;
	*out = v;
	return 0;
}

static int valid_date(int y, int m, int d)
{
	static const int len[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

	if (m < 1 || m > 12 || d < 1)
		return 0;
	return d <= len[m - 1] + (m == 2 && leap);
}

static int bad_boundary(const char *what, const char *text)
{
	return faucet_error_set(FAUCET_ECONFIG,
				"%s '%s' is neither an RFC 3339 timestamp "
				"(2026-03-07T00:00:00-05:00) nor a date (2026-03-07)",
				what, text);
}

int faucet_bf__parse_boundary(const faucet_tz *tz, const char *text, const char *what,
			      faucet_bf_instant *out)
{
	const char *p = text;
	int y, mo, d, h, mi, s, oh, om, sign;
	int32_t nsec = 0;
	int64_t local;

	if (digits(&p, 4, &y) != 0 || *p++ != '-' || digits(&p, 2, &mo) != 0 || *p++ != '-' ||
	    digits(&p, 2, &d) != 0 || !valid_date(y, mo, d))
		return bad_boundary(what, text);
	local = faucet_bf__days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400;
	if (*p == '\0') {
		/* A bare date: local midnight, a gap resolving to its end. */
		out->nsec = 0;
		if (faucet_tz_local_to_unix(tz, local, &out->sec, NULL) != 0)
			return faucet__error_wrap("%s '%s'", what, text);
		return 0;
	}
	if ((*p != 'T' && *p != 't' && *p != ' ') || (p++, digits(&p, 2, &h)) != 0 ||
	    *p++ != ':' || digits(&p, 2, &mi) != 0 || *p++ != ':' || digits(&p, 2, &s) != 0 ||
	    h > 23 || mi > 59 || s > 59)
		return bad_boundary(what, text);
	if (*p == '.') {
		int n = 0;
		p++;
		if (*p < '0' || *p > '9')
			return bad_boundary(what, text);
		/* Digits past the ninth are below a nanosecond: dropped. */
		for (; *p >= '0' && *p <= '9'; p++, n++) {
			if (n < 9)
				nsec = nsec * 10 + (*p - '0');
		}
		for (; n < 9; n++)
			nsec *= 10;
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
		sign = 0, oh = 0, om = 0;
	} else if (*p == '+' || *p == '-') {
		sign = *p++ == '-' ? -1 : 1;
		if (digits(&p, 2, &oh) != 0 || *p++ != ':' || digits(&p, 2, &om) != 0 || oh > 23 ||
		    om > 59)
			return bad_boundary(what, text);
	} else {
		return bad_boundary(what, text);
	}
	if (*p != '\0')
		return bad_boundary(what, text);
	out->sec = local + h * 3600 + mi * 60 + s - (int64_t)sign * (oh * 3600 + om * 60);
	out->nsec = nsec;
	return 0;
}

static int render_local(int64_t local, int32_t nsec, int32_t off, char *out, size_t size)
{
	int64_t days = faucet_bf__floor_div(local, 86400), y;
	int64_t sod = local - days * 86400;
	unsigned m, d;
	char frac[12] = "";
	int32_t aoff = off < 0 ? -off : off;
	int n;

	faucet_bf__civil_from_days(days, &y, &m, &d);
	if (y < 0 || y > 9999)
		return faucet_error_set(FAUCET_EINVALID, "year %lld cannot be rendered", (long long)y);
	if (nsec != 0) {
		if (nsec % 1000000 == 0)
			(void)snprintf(frac, sizeof(frac), ".%03d", (int)(nsec / 1000000));
		else if (nsec % 1000 == 0)
			(void)snprintf(frac, sizeof(frac), ".%06d", (int)(nsec / 1000));
		else
			(void)snprintf(frac, sizeof(frac), ".%09d", (int)nsec);
	}
	n = snprintf(out, size, "%04d-%02u-%02uT%02d:%02d:%02d%s%c%02d:%02d", (int)y, m, d,
		     (int)(sod / 3600), (int)(sod / 60 % 60), (int)(sod % 60), frac,
		     off < 0 ? '-' : '+', (int)(aoff / 3600), (int)(aoff / 60 % 60));
	if (n < 0 || (size_t)n >= size)
		return faucet_error_set(FAUCET_EINVALID, "rendered time too long");
	return 0;
}

int faucet_bf__render(const faucet_tz *tz, faucet_bf_instant t, char *out, size_t size)
{
	int32_t off;

	(void)faucet_tz_offset_at(tz, t.sec, &off);
	return render_local(t.sec + off, t.nsec, off, out, size);
}

int faucet_bf__render_date(const faucet_tz *tz, int64_t t, char *out, size_t size)
{
	int32_t off;
	int64_t y;
	unsigned m, d;
	int n;

	(void)faucet_tz_offset_at(tz, t, &off);
	faucet_bf__civil_from_days(faucet_bf__floor_div(t + off, 86400), &y, &m, &d);
	n = snprintf(out, size, "%04d-%02u-%02u", (int)y, m, d);
	if (n < 0 || (size_t)n >= size)
		return faucet_error_set(FAUCET_EINVALID, "rendered date too long");
	return 0;
}

/* ---- windows --------------------------------------------------------------- */

#define WINDOW_MAX_SECONDS (100LL * 366 * 86400) /* a century: far beyond any range */

static int bad_window(const char *text)
{
	return faucet_error_set(FAUCET_ECONFIG,
				"invalid window '%s': expected a positive count with a unit "
				"s, m, h, d or w (\"6h\", \"1d\"), or plain seconds",
				text);
}

int faucet_bf__parse_window(const char *text, faucet_bf_window *out)
{
	const char *p = text;
	int64_t n = 0, mult = 1;
	char unit;

	memset(out, 0, sizeof(*out));
	if (text == NULL) {
		out->whole = 1;
		(void)snprintf(out->label, sizeof(out->label), "whole");
		return 0;
	}
	if (*p < '0' || *p > '9')
		return bad_window(text);
	for (; *p >= '0' && *p <= '9'; p++) {
		n = n * 10 + (*p - '0');
		if (n > WINDOW_MAX_SECONDS)
			return bad_window(text);
	}
	unit = *p;
	if (unit != '\0' && p[1] != '\0')
		return bad_window(text);
	switch (unit) {
	case '\0':
	case 's': mult = 1; break;
	case 'm': mult = 60; break;
	case 'h': mult = 3600; break;
	case 'd': mult = 86400; break;
	case 'w': mult = 7 * 86400; break;
	default: return bad_window(text);
	}
	if (n == 0 || n > WINDOW_MAX_SECONDS / mult)
		return bad_window(text);
	if (unit == 'd' || unit == 'w') {
		out->calendar = 1;
		out->days = unit == 'd' ? n : 7 * n;
		(void)snprintf(out->label, sizeof(out->label), "%lld%c", (long long)n, unit);
	} else {
		out->seconds = n * mult;
		(void)snprintf(out->label, sizeof(out->label), "%lld", (long long)out->seconds);
	}
	return 0;
}
