/*
 * expand.c - ${backfill.*} placeholders in a unit's command arguments.
 *
 * Only the "${backfill." prefix is ours: other ${...} text (a shell
 * variable in an `sh -c` script, say) passes through untouched, so users can
 * write shell when they want it.  Inside our prefix we are strict - a typo
 * in a placeholder name must stop the backfill before anything runs, not
 * hand a literal "${backfill.strat}" to a thousand units.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include <faucet/backfill.h>

#define PREFIX "${backfill."

/* The value of placeholder `name` (len bytes) for u, in buf when numeric. */
static const char *lookup(const char *name, size_t len, const faucet_backfill_unit *u,
			  char *buf, size_t size)
{
#define IS(lit) (len == sizeof(lit) - 1 && memcmp(name, lit, len) == 0)
	if (IS("start"))
		return u->start;
	if (IS("end"))
		return u->end;
	if (IS("start_date"))
		return u->start_date;
	if (IS("end_date"))
		return u->end_date;
	if (IS("unit"))
		return u->id;
	if (IS("start_unix") || IS("end_unix")) {
		(void)snprintf(buf, size, "%" PRId64, IS("start_unix") ? u->start_unix : u->end_unix);
		return buf;
	}
	return NULL;
#undef IS
}

int faucet_backfill_expand(const char *arg, const faucet_backfill_unit *u, char **out)
{
	faucet_buf b = FAUCET_BUF_INIT;
	const char *p = arg;

	*out = NULL;
	for (;;) {
		const char *hit = strstr(p, PREFIX), *name, *close, *value;
		char num[32];

		if (hit == NULL) {
			(void)faucet__buf_puts(&b, p);
			break;
		}
		(void)faucet__buf_put(&b, p, (size_t)(hit - p));
		name = hit + strlen(PREFIX);
		close = strchr(name, '}');
		if (close == NULL) {
			faucet__buf_dispose(&b);
			return faucet_error_set(FAUCET_ECONFIG,
						"unterminated ${backfill. placeholder in argument '%s'",
						arg);
		}
		value = lookup(name, (size_t)(close - name), u, num, sizeof(num));
		if (value == NULL) {
			int n = (int)(close - name);
			faucet__buf_dispose(&b);
			return faucet_error_set(FAUCET_ECONFIG,
						"unknown placeholder ${backfill.%.*s} in argument '%s' "
						"(known: start, end, start_date, end_date, start_unix, "
						"end_unix, unit)",
						n, name, arg);
		}
		(void)faucet__buf_puts(&b, value);
		p = close + 1;
	}
	if (b.failed) {
		faucet__buf_dispose(&b);
		return FAUCET_ENOMEM;
	}
	*out = faucet__buf_detach(&b);
	if (*out == NULL)
		*out = faucet__strdup("");
	return *out ? 0 : FAUCET_ENOMEM;
}
