/*
 * table.c - the plain output of the listing commands (`state pipelines`,
 * `state runs`, `lock list`): on a terminal a header and aligned columns,
 * times in the local zone; anywhere else tab-separated lines without a
 * header and times as stored (RFC 3339 UTC), which scripts rely on.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

void cli_table_init(cli_table *t, size_t ncols)
{
	memset(t, 0, sizeof(*t));
	t->ncols = ncols;
}

int cli_table_add(cli_table *t, const char *const *cells)
{
	char **row;

	if (t->failed)
		return -1;
	row = calloc(t->ncols, sizeof(*row));
	if (row == NULL)
		goto oom;
	for (size_t c = 0; c < t->ncols; c++) {
		if ((row[c] = faucet__strdup(cells[c] ? cells[c] : "-")) == NULL) {
			for (size_t k = 0; k < c; k++)
				free(row[k]);
			free(row);
			goto oom;
		}
	}
	if (t->nrows == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;
		char ***grown = realloc(t->rows, cap * sizeof(*grown));

		if (grown == NULL) {
			for (size_t c = 0; c < t->ncols; c++)
				free(row[c]);
			free(row);
			goto oom;
		}
		t->rows = grown;
		t->cap = cap;
	}
	t->rows[t->nrows++] = row;
	return 0;
oom:
	t->failed = 1;
	return -1;
}

int cli_table_print(const cli_table *t, const cli_context *ctx, const char *const *heads)
{
	size_t *w;

	if (t->failed)
		return cli_error(CLI_EXIT_FAILED, "out of memory");
	if (!ctx->stdout_tty) {
		for (size_t r = 0; r < t->nrows; r++) {
			for (size_t c = 0; c < t->ncols; c++)
				printf("%s%s", c ? "\t" : "", t->rows[r][c]);
			putchar('\n');
		}
		return 0;
	}
	w = calloc(t->ncols, sizeof(*w));
	if (w == NULL)
		return cli_error(CLI_EXIT_FAILED, "out of memory");
	for (size_t c = 0; c < t->ncols; c++)
		w[c] = strlen(heads[c]);
	for (size_t r = 0; r < t->nrows; r++) {
		for (size_t c = 0; c < t->ncols; c++) {
			if (strlen(t->rows[r][c]) > w[c])
				w[c] = strlen(t->rows[r][c]);
		}
	}
	if (ctx->color)
		fputs("\033[1m", stdout);
	for (size_t c = 0; c + 1 < t->ncols; c++)
		printf("%-*s  ", (int)w[c], heads[c]);
	if (t->ncols > 0)
		fputs(heads[t->ncols - 1], stdout);
	if (ctx->color)
		fputs("\033[0m", stdout);
	putchar('\n');
	for (size_t r = 0; r < t->nrows; r++) {
		for (size_t c = 0; c + 1 < t->ncols; c++)
			printf("%-*s  ", (int)w[c], t->rows[r][c]);
		printf("%s\n", t->ncols ? t->rows[r][t->ncols - 1] : "");
	}
	free(w);
	return 0;
}

void cli_table_dispose(cli_table *t)
{
	for (size_t r = 0; r < t->nrows; r++) {
		for (size_t c = 0; c < t->ncols; c++)
			free(t->rows[r][c]);
		free(t->rows[r]);
	}
	free(t->rows);
	memset(t, 0, sizeof(*t));
}

const char *cli_time_shown(const cli_context *ctx, long long unix_seconds, const char *utc,
			   char *buf, size_t size)
{
	struct tm tm;
	time_t t;

	if (!ctx->stdout_tty) {
		if (utc != NULL)
			return utc;
		if (faucet_utc_text((int64_t)unix_seconds, buf, size) != 0)
			return "-";
		return buf;
	}
	if (utc != NULL && (unix_seconds = faucet__utc_parse(utc)) < 0)
		return utc; /* not a time we can read: shown as it is */
	t = (time_t)unix_seconds;
	if (localtime_r(&t, &tm) == NULL || strftime(buf, size, "%Y-%m-%d %H:%M:%S %z", &tm) == 0)
		return utc != NULL ? utc : "-";
	return buf;
}
