/*
 * util.c - the command's own allocation and text helpers (see util.h).
 *
 * Deliberately plain: the command allocates little and briefly (a line, a
 * document, an environment), so nothing here is tuned.  Out of memory is
 * reported through the library's last error, which is where every failure
 * the command prints comes from.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"

static void *out_of_memory(void)
{
	(void)faucet_error_set(FAUCET_ENOMEM, "out of memory");
	return NULL;
}

void *cli_malloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	return p ? p : out_of_memory();
}

void *cli_calloc(size_t count, size_t size)
{
	void *p = calloc(count ? count : 1, size ? size : 1);

	return p ? p : out_of_memory();
}

char *cli_strndup(const char *s, size_t n)
{
	char *p = cli_malloc(n + 1);

	if (p != NULL) {
		memcpy(p, s, n);
		p[n] = '\0';
	}
	return p;
}

char *cli_strdup(const char *s)
{
	return cli_strndup(s, strlen(s));
}

char *cli_sprintf(const char *fmt, ...)
{
	va_list ap;
	char *p;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return out_of_memory();
	p = cli_malloc((size_t)n + 1);
	if (p == NULL)
		return NULL;
	va_start(ap, fmt);
	(void)vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}

void *cli_reserve(void *items, size_t *cap, size_t need, size_t size, size_t first)
{
	size_t n = *cap ? *cap : first ? first : 1;
	void *grown;

	if (need <= *cap)
		return items;
	while (n < need && n <= SIZE_MAX / 2)
		n *= 2;
	if (n < need || n > SIZE_MAX / size)
		return out_of_memory();
	grown = realloc(items, n * size);
	if (grown == NULL)
		return out_of_memory();
	*cap = n;
	return grown;
}

int cli_error_os(int code, int err, const char *fmt, ...)
{
	char *prefix;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	prefix = n >= 0 ? malloc((size_t)n + 1) : NULL;
	if (prefix == NULL)
		return faucet_error_set(code, "%s", strerror(err)); /* the reason, at least */
	va_start(ap, fmt);
	(void)vsnprintf(prefix, (size_t)n + 1, fmt, ap);
	va_end(ap);
	(void)faucet_error_set(code, "%s: %s", prefix, strerror(err));
	free(prefix);
	return code;
}

uint64_t cli_now_ms(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Arrays the command appends to are short (arguments, an environment) and
 * may have come from the library, whose spare capacity is not ours to
 * know: grow by exactly one. */
int cli_strarray_push_owned(faucet_strarray *arr, char *s)
{
	char **grown;

	if (s == NULL)
		return FAUCET_ENOMEM;
	grown = realloc(arr->strings, (arr->count + 1) * sizeof(char *));
	if (grown == NULL) {
		free(s);
		(void)out_of_memory();
		return FAUCET_ENOMEM;
	}
	arr->strings = grown;
	arr->strings[arr->count++] = s;
	return 0;
}

int cli_strarray_push(faucet_strarray *arr, const char *s)
{
	return cli_strarray_push_owned(arr, cli_strdup(s));
}

/* ---- cli_buf ------------------------------------------------------------ */

int cli_buf_grow(cli_buf *b, size_t extra)
{
	size_t want = b->len + extra + 1, cap = b->cap ? b->cap : 64;
	char *p;

	if (b->failed)
		return FAUCET_ENOMEM;
	if (extra >= SIZE_MAX - b->len) { /* len + extra + 1 would wrap */
		b->failed = 1;
		(void)out_of_memory();
		return FAUCET_ENOMEM;
	}
	if (want <= b->cap)
		return 0;
	while (cap < want && cap <= SIZE_MAX / 2)
		cap *= 2;
	p = cap >= want ? realloc(b->ptr, cap) : NULL;
	if (p == NULL) {
		b->failed = 1;
		(void)out_of_memory();
		return FAUCET_ENOMEM;
	}
	b->ptr = p;
	b->cap = cap;
	return 0;
}

int cli_buf_put(cli_buf *b, const char *data, size_t len)
{
	if (cli_buf_grow(b, len) != 0)
		return FAUCET_ENOMEM;
	memcpy(b->ptr + b->len, data, len);
	b->len += len;
	b->ptr[b->len] = '\0';
	return 0;
}

int cli_buf_puts(cli_buf *b, const char *s)
{
	return cli_buf_put(b, s, strlen(s));
}

int cli_buf_putc(cli_buf *b, char c)
{
	return cli_buf_put(b, &c, 1);
}

int cli_buf_printf(cli_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || cli_buf_grow(b, (size_t)n) != 0) {
		b->failed = 1;
		return FAUCET_ENOMEM;
	}
	va_start(ap, fmt);
	(void)vsnprintf(b->ptr + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

char *cli_buf_detach(cli_buf *b)
{
	char *p;

	if (b->failed) {
		cli_buf_dispose(b);
		return out_of_memory();
	}
	if (b->ptr == NULL && cli_buf_grow(b, 0) != 0)
		return NULL;
	b->ptr[b->len] = '\0';
	p = b->ptr;
	b->ptr = NULL;
	b->len = b->cap = 0;
	return p;
}

void cli_buf_dispose(cli_buf *b)
{
	free(b->ptr);
	b->ptr = NULL;
	b->len = b->cap = 0;
	b->failed = 0;
}

/* ---- "did you mean": the one edit-distance helper ------------------------ */

/* Edit distance (insertions, deletions, substitutions, and swaps of two
 * neighbours) between a and b, or a large number when either is long. */
static size_t distance(const char *a, size_t la, const char *b, size_t lb)
{
	size_t d[33][33];

	if (la > 32 || lb > 32)
		return 99;
	for (size_t i = 0; i <= la; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= la; i++) {
		for (size_t j = 1; j <= lb; j++) {
			size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			if (d[i - 1][j] + 1 < best)
				best = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < best)
				best = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < best)
				best = d[i - 2][j - 2] + 1;
			d[i][j] = best;
		}
	}
	return d[la][lb];
}

/* Close enough to be a typo: at most 1 edit for short words, 2 for longer
 * ones, or the word is a prefix of the candidate ("--win" for "--window"). */
static int near(const char *word, size_t wl, const char *cand, size_t *score)
{
	size_t cl = strlen(cand), limit = wl <= 4 ? 1 : 2;

	*score = distance(word, wl, cand, cl);
	if (*score <= limit)
		return 1;
	if (wl >= 3 && wl < cl && strncmp(word, cand, wl) == 0) {
		*score = limit + 1;
		return 1;
	}
	return 0;
}

const char *cli_suggest(const char *word, const char *const *candidates, size_t n)
{
	const char *best = NULL;
	size_t best_score = 99, wl = strlen(word);

	for (size_t i = 0; i < n; i++) {
		size_t score;

		if (candidates[i] != NULL && near(word, wl, candidates[i], &score) &&
		    score < best_score) {
			best = candidates[i];
			best_score = score;
		}
	}
	return best;
}

/* The IANA zone nearest to `name` among those the system's zone tables
 * list (zone1970.tab, zone.tab under $TZDIR or /usr/share/zoneinfo, where
 * the library loads zones from), or NULL.  Caller frees. */
char *cli_suggest_zone(const char *name)
{
	static const char *const tables[] = {"zone1970.tab", "zone.tab"};
	const char *dir = getenv("TZDIR");
	faucet_strarray zones = {NULL, 0};
	char line[512], *out = NULL;
	const char *best;

	if (dir == NULL || *dir == '\0')
		dir = "/usr/share/zoneinfo";
	if (cli_strarray_push(&zones, "UTC") != 0)
		return NULL;
	for (size_t t = 0; t < sizeof(tables) / sizeof(tables[0]); t++) {
		char *path = cli_sprintf("%s/%s", dir, tables[t]);
		FILE *f = path ? fopen(path, "re") : NULL;

		free(path);
		if (f == NULL)
			continue;
		/* "CC<TAB>coordinates<TAB>Zone/Name[<TAB>comment]" */
		while (fgets(line, sizeof(line), f) != NULL) {
			char *zone, *end;

			if (line[0] == '#' || (zone = strchr(line, '\t')) == NULL ||
			    (zone = strchr(zone + 1, '\t')) == NULL)
				continue;
			zone++;
			end = zone + strcspn(zone, "\t\r\n");
			*end = '\0';
			if (*zone != '\0' && cli_strarray_push(&zones, zone) != 0)
				break;
		}
		fclose(f);
	}
	best = cli_suggest(name, (const char *const *)zones.strings, zones.count);
	if (best != NULL)
		out = cli_strdup(best);
	faucet_strarray_dispose(&zones);
	return out;
}
