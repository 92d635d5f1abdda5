/*
 * suggest.c - "did you mean": the nearest candidate to a mistyped word
 * (util.h), for the command's words and the library's config reader.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

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

const char *faucet__suggest(const char *word, const char *const *candidates, size_t n)
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
char *faucet__suggest_zone(const char *name)
{
	static const char *const tables[] = {"zone1970.tab", "zone.tab"};
	const char *dir = getenv("TZDIR");
	faucet_strarray zones = {NULL, 0};
	char line[512], *out = NULL;
	const char *best;

	if (dir == NULL || *dir == '\0')
		dir = "/usr/share/zoneinfo";
	if (faucet__strarray_append(&zones, "UTC") != 0)
		return NULL;
	for (size_t t = 0; t < sizeof(tables) / sizeof(tables[0]); t++) {
		char *path = faucet__sprintf("%s/%s", dir, tables[t]);
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
			if (*zone != '\0' && faucet__strarray_append(&zones, zone) != 0)
				break;
		}
		fclose(f);
	}
	best = faucet__suggest(name, (const char *const *)zones.strings, zones.count);
	if (best != NULL)
		out = faucet__strdup(best);
	faucet_strarray_dispose(&zones);
	return out;
}
