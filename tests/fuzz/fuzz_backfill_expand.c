/*
 * fuzz_backfill_expand.c - ${backfill.*} placeholders in a unit command's
 * argument, on arbitrary text (the input up to its first NUL) and a fixed
 * unit (the New York day on which DST starts, doc/design.md §6).
 *
 * The contract (backfill.h): every "${backfill." opens a placeholder; one
 * of the seven known names followed by '}' is replaced by the unit's value;
 * an unknown name, or no '}' after the prefix, is FAUCET_ECONFIG naming the
 * argument; all other text, other ${...} included, is kept byte for byte.
 * The target checks the expander against a small model of exactly that,
 * written independently here.  Properties:
 *   - expansion never crashes or leaks;
 *   - it succeeds exactly when the model does, with the model's output;
 *   - a refusal is FAUCET_ECONFIG with a message naming the argument, and
 *     *out stays NULL;
 *   - on success no "${backfill." is left in the output (no unit value can
 *     form one), and text without "${backfill." - in particular text
 *     without "${" - comes back unchanged.
 */
#include <inttypes.h>
#include <string.h>

#include <faucet/backfill.h>

#include "fuzz.h"

#define PREFIX "${backfill."

static const faucet_backfill_unit unit = {
	.id = "20260308T050000Z",
	.start = "2026-03-08T00:00:00-05:00",
	.end = "2026-03-09T00:00:00-04:00",
	.start_date = "2026-03-08",
	.end_date = "2026-03-09",
	.start_unix = 1772946000,
	.end_unix = 1773028800,
};

/* The known names and their values for `unit`. */
static const struct {
	const char *name;
	const char *value;
} known[] = {
	{"start", "2026-03-08T00:00:00-05:00"},
	{"end", "2026-03-09T00:00:00-04:00"},
	{"start_date", "2026-03-08"},
	{"end_date", "2026-03-09"},
	{"start_unix", "1772946000"},
	{"end_unix", "1773028800"},
	{"unit", "20260308T050000Z"},
};
#define KNOWN_COUNT (sizeof(known) / sizeof(known[0]))

static const char *known_value(const char *name, size_t len)
{
	for (size_t i = 0; i < KNOWN_COUNT; i++)
		if (strlen(known[i].name) == len && memcmp(known[i].name, name, len) == 0)
			return known[i].value;
	return NULL;
}

/* The model: the expansion of arg into a malloc'd string, or NULL when arg
 * must be refused.  *oom is set when the model itself ran out of memory. */
static char *model_expand(const char *arg, int *oom)
{
	size_t len = strlen(arg), plen = strlen(PREFIX), cap = len + 1, n = 0;
	char *out = malloc(cap);

	*oom = out == NULL;
	if (out == NULL)
		return NULL;
	for (size_t i = 0; i < len;) {
		const char *piece = arg + i;
		size_t take = 1;

		if (strncmp(arg + i, PREFIX, plen) == 0) {
			const char *name = arg + i + plen, *close = strchr(name, '}');
			if (close == NULL || (piece = known_value(name, (size_t)(close - name))) == NULL) {
				free(out);
				return NULL;
			}
			take = strlen(piece);
			i = (size_t)(close - arg) + 1;
		} else {
			i++;
		}
		if (n + take + 1 > cap) {
			char *grown = realloc(out, cap = (n + take + 1) * 2);
			if (grown == NULL) {
				free(out);
				*oom = 1;
				return NULL;
			}
			out = grown;
		}
		memcpy(out + n, piece, take);
		n += take;
	}
	out[n] = '\0';
	return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *arg = fuzz_cstring(data, size), *out = (char *)0x1, *want;
	int rc, oom;

	if (arg == NULL)
		return 0;
	want = model_expand(arg, &oom);
	rc = faucet_backfill_expand(arg, &unit, &out);
	if (rc == FAUCET_ENOMEM || oom) {
		if (rc == 0)
			free(out);
		free(want);
		free(arg);
		return 0;
	}
	if (want == NULL) {
		FUZZ_CHECK(rc == FAUCET_ECONFIG, "argument '%.300s' was not refused (code %d)", arg,
			   rc);
		FUZZ_CHECK(out == NULL, "refusal left output behind");
		FUZZ_CHECK(faucet_error_last()->code == FAUCET_ECONFIG &&
				   strstr(faucet_error_last()->message, arg) != NULL,
			   "refusal of '%.300s' does not name it: %s", arg,
			   faucet_error_last()->message);
	} else {
		FUZZ_CHECK(rc == 0, "argument '%.300s' was refused: %s", arg,
			   faucet_error_last()->message);
		FUZZ_CHECK(out != NULL && strcmp(out, want) == 0,
			   "'%.300s' expanded to '%.300s', expected '%.300s'", arg, out ? out : "(null)",
			   want);
		FUZZ_CHECK(strstr(out, PREFIX) == NULL, "'%.300s' left a placeholder in '%.300s'",
			   arg, out);
		if (strstr(arg, PREFIX) == NULL)
			FUZZ_CHECK(strcmp(out, arg) == 0, "'%.300s' without placeholders became '%.300s'",
				   arg, out);
		if (strstr(arg, "${") == NULL)
			FUZZ_CHECK(strcmp(out, arg) == 0, "'%.300s' without ${ became '%.300s'", arg,
				   out);
		free(out);
	}
	free(want);
	free(arg);
	return 0;
}
