/*
 * bench_bulk.c - import, export and copy of a large namespace: time and
 * peak memory, each beside its budget.
 *
 *   bench_bulk DIR [KEYS [BACKENDS]]     KEYS default 1000000,
 *                                        BACKENDS "sqlite,file" by default;
 *                                        "postgres" (FAUCET_TEST_PG_URL)
 *
 * PostgreSQL: put_batch of KEYS new keys (COPY into the table) and of the
 * same keys again with new values (COPY into the staging table, then one
 * INSERT ... ON CONFLICT DO UPDATE), beside the floor psql's own `\copy`
 * of the same rows into an empty table of the same layout, in alternating
 * blocks (floor, store, floor, store, ...); the ratio is the median.
 *
 * The budget (the issue "import of a 1,000,000-key document peaks at
 * 1.2 GB"): peak RSS at most 6x the document's size + 64 MB, and time at
 * most 1.5x the baseline - the same keys parsed value by value and written
 * with put_batch in chunks of FAUCET_IMPORT_CHUNK, which is what any import
 * must do at the least.
 *
 * Every measured step runs in its own child process, so each peak RSS
 * (ru_maxrss from wait4) is that step's alone, not the largest so far.
 * DIR must be on the normal disk (fsync is free on tmpfs).  The file store
 * writes one durable file per key (~1 ms each here), so a million keys
 * take a quarter of an hour: pass fewer KEYS, or BACKENDS "sqlite", for a
 * quick run.  Not run by CI.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <faucet/faucet.h>

#include "bench.h"

#define PIPELINE "bench"

static size_t n_keys = 1000000;
static const char *dir;

static char *path_of(const char *name)
{
	char *p = NULL;

	if (asprintf(&p, "%s/%s", dir, name) < 0)
		bench_die("asprintf");
	return p;
}

/* A bookmark-like value of ~27 bytes per key once the key is added. */
static void value_text(size_t i, char *buf, size_t size)
{
	snprintf(buf, size, "{\"offset\":%zu,\"p\":%zu}", i * 7919 % 1000003, i % 16);
}

static void key_text(size_t i, char *buf, size_t size)
{
	snprintf(buf, size, PIPELINE "::k%07zu", i);
}

/* The document, written as text (the generator must not be what is measured). */
static off_t write_document(const char *path)
{
	FILE *f = fopen(path, "w");
	char key[64], val[96];
	struct stat st;

	if (f == NULL)
		bench_die("cannot create the document");
	fputs("{\"version\":1,\"pipeline\":\"" PIPELINE "\",\"keys\":{", f);
	for (size_t i = 0; i < n_keys; i++) {
		key_text(i, key, sizeof(key));
		value_text(i, val, sizeof(val));
		fprintf(f, "%s\"%s\":%s", i ? "," : "", key, val);
	}
	fputs("}}\n", f);
	if (fclose(f) != 0 || stat(path, &st) != 0)
		bench_die("cannot write the document");
	return st.st_size;
}

static faucet_store *open_store(const char *url)
{
	faucet_store *s = NULL;

	if (faucet_store_open_url(&s, url) != 0) {
		fprintf(stderr, "open %s: %s\n", url, faucet_error_last()->message);
		exit(1);
	}
	return s;
}

/* ---- the measured steps (each in a child) ---------------------------- */

/* Baseline: every value parsed from text and written with put_batch in
 * chunks of FAUCET_IMPORT_CHUNK. */
static int step_batch_put(const char *url)
{
	faucet_store *s = open_store(url);
	faucet_entry *batch = calloc(FAUCET_IMPORT_CHUNK, sizeof(*batch));
	faucet_value **vals = calloc(FAUCET_IMPORT_CHUNK, sizeof(*vals));
	char (*keys)[32] = calloc(FAUCET_IMPORT_CHUNK, sizeof(*keys));
	char val[96];

	if (batch == NULL || vals == NULL || keys == NULL)
		bench_die("calloc");
	for (size_t from = 0; from < n_keys; from += FAUCET_IMPORT_CHUNK) {
		size_t n = n_keys - from < FAUCET_IMPORT_CHUNK ? n_keys - from : FAUCET_IMPORT_CHUNK;

		for (size_t i = 0; i < n; i++) {
			key_text(from + i, keys[i], sizeof(keys[i]));
			value_text(from + i, val, sizeof(val));
			if (faucet_value_parse(&vals[i], val, strlen(val)) != 0)
				bench_die("parse");
			batch[i].key = keys[i];
			batch[i].value = vals[i];
		}
		if (faucet_store_put_batch(s, batch, n) != 0) {
			fprintf(stderr, "put_batch: %s\n", faucet_error_last()->message);
			return 1;
		}
		for (size_t i = 0; i < n; i++)
			faucet_value_free(vals[i]);
	}
	faucet_store_free(s);
	free(batch);
	free(vals);
	free(keys);
	return 0;
}

static int step_import(const char *url, const char *doc)
{
	faucet_store *s = open_store(url);
	faucet_import_report r = FAUCET_IMPORT_REPORT_INIT;
	FILE *in = fopen(doc, "r");

	if (in == NULL)
		bench_die("cannot open the document");
	if (faucet_import_file(s, in, NULL, &r) != 0 || r.error != NULL) {
		fprintf(stderr, "import: %s\n", r.error ? r.error : faucet_error_last()->message);
		return 1;
	}
	if (r.written.count != n_keys)
		bench_die("import wrote the wrong number of keys");
	faucet_import_report_dispose(&r);
	fclose(in);
	faucet_store_free(s);
	return 0;
}

static int step_export(const char *url, const char *out_path)
{
	faucet_store *s = open_store(url);
	FILE *out = fopen(out_path, "w");
	size_t count = 0;

	if (out == NULL)
		bench_die("cannot create the export");
	if (faucet_export_write(s, PIPELINE, "2026-01-01T00:00:00+00:00", 1, out, &count) != 0) {
		fprintf(stderr, "export: %s\n", faucet_error_last()->message);
		return 1;
	}
	if (fclose(out) != 0 || count != n_keys)
		bench_die("export incomplete");
	faucet_store_free(s);
	return 0;
}

/* What `faucet state copy` does: export into a temp file, import it. */
static int step_copy(const char *from, const char *to)
{
	faucet_store *src = open_store(from), *dst = open_store(to);
	faucet_import_report r = FAUCET_IMPORT_REPORT_INIT;
	FILE *tmp = tmpfile();

	if (tmp == NULL || faucet_export_write(src, PIPELINE, NULL, 0, tmp, NULL) != 0 ||
	    fseek(tmp, 0, SEEK_SET) != 0)
		bench_die("copy: export");
	if (faucet_import_file(dst, tmp, NULL, &r) != 0 || r.error != NULL ||
	    r.written.count != n_keys)
		bench_die("copy: import");
	faucet_import_report_dispose(&r);
	fclose(tmp);
	faucet_store_free(src);
	faucet_store_free(dst);
	return 0;
}

/* ---- running a step in a child ------------------------------------- */

typedef struct {
	double seconds;
	double peak_mb;
} measure;

typedef enum { BATCH, IMPORT, EXPORT, COPY } step_kind;

static measure run_step(step_kind kind, const char *a, const char *b)
{
	struct rusage ru;
	measure m;
	double t0 = bench_now_s();
	int status = 0;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		bench_die("fork");
	if (pid == 0) {
		int rc = kind == BATCH    ? step_batch_put(a)
			 : kind == IMPORT ? step_import(a, b)
			 : kind == EXPORT ? step_export(a, b)
					  : step_copy(a, b);
		_exit(rc);
	}
	if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		bench_die("a step failed");
	m.seconds = bench_now_s() - t0;
	m.peak_mb = (double)ru.ru_maxrss / 1024.0; /* ru_maxrss is in KiB on Linux */
	return m;
}

static void report(const char *what, measure m, double budget_mb, double base_s)
{
	printf("  %-28s %8.2f s  %7.1f MB peak  (budget %.0f MB%s", what, m.seconds, m.peak_mb,
	       budget_mb, m.peak_mb <= budget_mb ? ", ok" : ", OVER");
	if (base_s > 0)
		printf("; %.2fx the batch-put baseline%s", m.seconds / base_s,
		       m.seconds <= 1.5 * base_s ? ", ok" : ", OVER 1.5x");
	printf(")\n");
}

static void remove_store(const char *path)
{
	static const char *const tails[] = {"", "-wal", "-shm"};

	for (size_t i = 0; i < 3; i++) {
		char *p = NULL;
		if (asprintf(&p, "%s%s", path, tails[i]) < 0)
			bench_die("asprintf");
		bench_rmrf(p);
		free(p);
	}
}

static void bench_backend(const char *backend, const char *doc, double budget_mb)
{
	const char *ext = strcmp(backend, "sqlite") == 0 ? ".db" : "";
	char *paths[3], *urls[3], *out = path_of("export.json");
	static const char *const names[3] = {"baseline", "imported", "copied"};
	measure b, m;

	for (int i = 0; i < 3; i++) {
		char *name = NULL;
		if (asprintf(&name, "%s%s", names[i], ext) < 0)
			bench_die("asprintf");
		paths[i] = path_of(name);
		free(name);
		if (asprintf(&urls[i], "%s:%s", backend, paths[i]) < 0)
			bench_die("asprintf");
	}
	printf("%s store, %zu keys:\n", backend, n_keys);
	b = run_step(BATCH, urls[0], NULL);
	report("batch put (baseline)", b, budget_mb, 0);
	m = run_step(IMPORT, urls[1], doc);
	report("import (faucet_import_file)", m, budget_mb, b.seconds);
	m = run_step(EXPORT, urls[1], out);
	report("export (faucet_export_write)", m, budget_mb, b.seconds);
	m = run_step(COPY, urls[1], urls[2]);
	report("copy (export + import)", m, budget_mb, b.seconds);
	for (int i = 0; i < 3; i++) {
		remove_store(paths[i]);
		free(paths[i]);
		free(urls[i]);
	}
	unlink(out);
	free(out);
}

/* ---- PostgreSQL: batches beside psql's \copy ------------------------ */

static int step_batch_put_round(const char *url, int round)
{
	faucet_store *s = open_store(url);
	faucet_entry *batch = calloc(FAUCET_IMPORT_CHUNK, sizeof(*batch));
	faucet_value **vals = calloc(FAUCET_IMPORT_CHUNK, sizeof(*vals));
	char (*keys)[32] = calloc(FAUCET_IMPORT_CHUNK, sizeof(*keys));
	char val[96];

	if (batch == NULL || vals == NULL || keys == NULL)
		bench_die("calloc");
	for (size_t from = 0; from < n_keys; from += FAUCET_IMPORT_CHUNK) {
		size_t n = n_keys - from < FAUCET_IMPORT_CHUNK ? n_keys - from : FAUCET_IMPORT_CHUNK;

		for (size_t i = 0; i < n; i++) {
			key_text(from + i, keys[i], sizeof(keys[i]));
			snprintf(val, sizeof(val), "{\"offset\":%zu,\"p\":%d}",
				 (from + i) * 7919 % 1000003, round);
			if (faucet_value_parse(&vals[i], val, strlen(val)) != 0)
				bench_die("parse");
			batch[i].key = keys[i];
			batch[i].value = vals[i];
		}
		if (faucet_store_put_batch(s, batch, n) != 0) {
			fprintf(stderr, "put_batch: %s\n", faucet_error_last()->message);
			return 1;
		}
		for (size_t i = 0; i < n; i++)
			faucet_value_free(vals[i]);
	}
	faucet_store_free(s);
	free(batch);
	free(vals);
	free(keys);
	return 0;
}

static int psql_run(const char *url, const char *sql)
{
	char *cmd = NULL;
	int rc;

	if (asprintf(&cmd, "PGOPTIONS='-c client_min_messages=warning' psql -q -X '%s' -c \"%s\" "
			   ">/dev/null", url, sql) < 0)
		bench_die("asprintf");
	rc = system(cmd);
	free(cmd);
	return rc;
}

static double time_child(const char *url, int round)
{
	double t0 = bench_now_s();
	int status = 0;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		bench_die("fork");
	if (pid == 0)
		_exit(step_batch_put_round(url, round));
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		bench_die("a step failed");
	return bench_now_s() - t0;
}

static void bench_postgres(void)
{
	const char *pg = getenv("FAUCET_TEST_PG_URL");
	char *rows = path_of("rows.tsv"), *url = NULL, *sql = NULL;
	char key[64], val[96];
	enum { ROUNDS = 3 };
	double floor_s[ROUNDS], new_s[ROUNDS], upd_s[ROUNDS], r_new[ROUNDS], r_upd[ROUNDS];
	FILE *f;

	if (pg == NULL || *pg == '\0') {
		printf("postgres: skipped (FAUCET_TEST_PG_URL is not set)\n");
		free(rows);
		return;
	}
	f = fopen(rows, "w");
	if (f == NULL)
		bench_die("rows.tsv");
	for (size_t i = 0; i < n_keys; i++) {
		key_text(i, key, sizeof(key));
		snprintf(val, sizeof(val), "{\"offset\":%zu,\"p\":%d}", i * 7919 % 1000003, 0);
		fprintf(f, "%s\t%s\n", key, val);
	}
	if (fclose(f) != 0)
		bench_die("rows.tsv");
	if (asprintf(&url, "%s%stable=bench_bulk_pg", pg, strchr(pg, '?') ? "&" : "?") < 0 ||
	    asprintf(&sql, "\\copy bench_bulk_floor (key, value) FROM '%s'", rows) < 0)
		bench_die("asprintf");
	printf("postgres store, %zu keys (put_batch in chunks of %d), blocks alternating with "
	       "psql's \\copy:\n", n_keys, FAUCET_IMPORT_CHUNK);
	for (int r = 0; r < ROUNDS; r++) {
		double t0;

		if (psql_run(pg, "DROP TABLE IF EXISTS bench_bulk_floor; DROP TABLE IF EXISTS "
				 "bench_bulk_pg; CREATE TABLE bench_bulk_floor (key TEXT COLLATE "
				 "\\\"C\\\" PRIMARY KEY, value JSONB NOT NULL, updated_at TIMESTAMPTZ "
				 "NOT NULL DEFAULT NOW())") != 0)
			bench_die("psql");
		t0 = bench_now_s();
		if (psql_run(pg, sql) != 0)
			bench_die("psql \\copy");
		floor_s[r] = bench_now_s() - t0;
		new_s[r] = time_child(url, 1);
		upd_s[r] = time_child(url, 2);
		r_new[r] = new_s[r] / floor_s[r];
		r_upd[r] = upd_s[r] / floor_s[r];
		printf("  block %d: \\copy %.2f s, new keys %.2f s (%.2fx), existing keys %.2f s "
		       "(%.2fx)\n", r + 1, floor_s[r], new_s[r], r_new[r], upd_s[r], r_upd[r]);
	}
	printf("  median: \\copy %.2f s; put_batch of new keys %.2f s, %.2fx; over existing "
	       "keys %.2f s, %.2fx\n", bench_median(floor_s, ROUNDS), bench_median(new_s, ROUNDS),
	       bench_median(r_new, ROUNDS), bench_median(upd_s, ROUNDS), bench_median(r_upd, ROUNDS));
	(void)psql_run(pg, "DROP TABLE IF EXISTS bench_bulk_floor; DROP TABLE IF EXISTS bench_bulk_pg");
	unlink(rows);
	free(rows);
	free(url);
	free(sql);
}

int main(int argc, char **argv)
{
	const char *backends = argc > 3 ? argv[3] : "sqlite,file";
	char *doc;
	off_t size;
	double budget_mb;

	(void)bench_dir_arg(argc, argv, "bench_bulk DIR [KEYS [sqlite,file,postgres]]");
	dir = argv[1];
	if (argc > 2)
		n_keys = (size_t)strtoull(argv[2], NULL, 10);
	if (n_keys == 0)
		bench_die("KEYS must be positive");
	doc = path_of("document.json");
	size = write_document(doc);
	budget_mb = 6.0 * (double)size / (1024.0 * 1024.0) + 64.0;
	printf("document: %zu keys, %.1f MB; memory budget 6x + 64 MB = %.0f MB\n", n_keys,
	       (double)size / (1024.0 * 1024.0), budget_mb);
	if (strstr(backends, "sqlite") != NULL)
		bench_backend("sqlite", doc, budget_mb);
	if (strstr(backends, "file") != NULL)
		bench_backend("file", doc, budget_mb);
	if (strstr(backends, "postgres") != NULL)
		bench_postgres();
	unlink(doc);
	free(doc);
	return 0;
}
