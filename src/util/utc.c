/*
 * utc.c - faucet_utc_text() and faucet__utc_parse(): the one place that
 * writes and reads a time as doc/design.md §8.1's documents and the
 * command's messages show it.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "util.h"

int faucet_utc_text(int64_t t, char *out, size_t size)
{
	time_t tt = (time_t)t;
	struct tm tm;
	int n;

	if (out == NULL || size == 0)
		return faucet_error_set(FAUCET_EINVALID, "faucet_utc_text: no room for the text");
	out[0] = '\0';
	if (gmtime_r(&tt, &tm) == NULL)
		return faucet_error_set(FAUCET_EINVALID, "time %lld has no calendar date",
					(long long)t);
	n = snprintf(out, size, "%04d-%02d-%02dT%02d:%02d:%02d+00:00", tm.tm_year + 1900,
		     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
	if (n < 0 || (size_t)n >= size) {
		out[0] = '\0';
		return faucet_error_set(FAUCET_EINVALID, "time %lld does not fit in %zu bytes",
					(long long)t, size);
	}
	return 0;
}

int64_t faucet__utc_parse(const char *text)
{
	struct tm tm;
	int y, mo, d, h, mi, s, n = 0;

	if (text == NULL ||
	    sscanf(text, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &s, &n) != 6 || n == 0)
		return -1;
	if (strcmp(text + n, "+00:00") != 0 && strcmp(text + n, "Z") != 0)
		return -1;
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = s;
	return (int64_t)timegm(&tm);
}
