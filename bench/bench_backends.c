/*
 * bench_backends.c - the server-backed stores beside their bare floors.
 *
 * For each of sqlite, postgres and redis, through the public store API:
 *
 *   put, get, compare-and-put cycle (get + compare-and-put), list of 10,000
 *   keys, batch of 10,000 keys, 10,000 single puts
 *
 * and, in the same run, what the backend costs with nothing of ours on top:
 *
 *   sqlite    raw SQLite, WAL + synchronous=FULL, prepared statements: put,
 *             get, 10,000- and 100,000-row batch in one transaction, range
 *             scan of 10,000 and 100,000 keys (the store's batch and list
 *             are measured at both sizes too)
 *   postgres  a bare `SELECT 1` round trip (libpq)
 *   redis     a bare `PING` round trip (hiredis)
 *
 * The batch and the single puts each write 10,000 distinct new keys
 * (bench::list::%06d in one put_batch, bench::single::%06d one put at a
 * time), so "batch speed-up over 10,000 single puts" is literally that; the
 * target for it is 20x.  The single puts' floor is the raw put (SQLite) or
 * the bare round trip (PostgreSQL, Redis) times 10,000.
 *
 * Round-trip and fsync latency on a small machine drift within a run (a
 * loopback round trip here takes 10 us or 100 us depending on where the
 * scheduler puts the two processes), so put and get are measured in
 * alternating blocks - floor, store, floor, store, ... - and each ratio is
 * the median of the per-block ratios, the store's block against the mean
 * of the two floor blocks around it.  Every 10,000-key batch (the store's
 * and the raw SQLite one) is the median of three batches of distinct new
 * keys, and every list or range scan the median of three after one
 * untimed warm-up.
 *
 * Each store figure is printed with its ratio to the floor.  Durable-write
 * figures (SQLite put, compare-and-put) swing with fsync latency from run
 * to run; compare them only with the raw figures of the same run.  The SQLite
 * database lives in argv[1] (on the normal disk: fsync on tmpfs is free).
 * PostgreSQL and Redis come from FAUCET_TEST_PG_URL / FAUCET_TEST_REDIS_URL
 * (scripts/test-servers.sh start prints them); a backend whose URL is unset
 * is reported as not measured.
 */
#include <hiredis/hiredis.h>
#include <libpq-fe.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <faucet/faucet.h>

#include "bench.h"

#define BLOCKS 11
#define PUTS 30 /* per block */
#define GETS 1000 /* per block */
#define CAS_CYCLES 200
#define LIST_KEYS 10000
#define RAW_BIG 100000

typedef void (*op_fn)(void *ctx, int i);

/* Seconds per call of op(ctx, first..first+n-1). */
static double block(op_fn op, void *ctx, int first, int n)
{
	double t = bench_now_s();

	for (int i = 0; i < n; i++)
		op(ctx, first + i);
	return (bench_now_s() - t) / n;
}

static double median3(double a, double b, double c)
{
	double v[3] = {a, b, c};

	return bench_median(v, 3);
}

/* What the store's put and get are compared with. */
typedef struct {
	op_fn put, get;
	void *ctx;
} floor_ops;

typedef struct {
	double store, floor, ratio; /* medians: seconds per call, and per-block ratios */
} paired;

/* Blocks of n calls alternating floor, store, floor, ...: the median store
 * time, floor time and ratio of each store block to the floor blocks
 * around it.  tidy (may be NULL) runs untimed after each store block. */
static paired interleaved_tidy(op_fn floor_op, void *floor_ctx, op_fn store_op, void *store_ctx,
			       op_fn tidy, int n)
{
	double fl[BLOCKS + 1], st[BLOCKS], ratio[BLOCKS];
	paired out;

	fl[0] = block(floor_op, floor_ctx, 0, n);
	for (int b = 0; b < BLOCKS; b++) {
		st[b] = block(store_op, store_ctx, b * n, n);
		if (tidy != NULL)
			tidy(store_ctx, b);
		fl[b + 1] = block(floor_op, floor_ctx, (b + 1) * n, n);
		ratio[b] = st[b] / ((fl[b] + fl[b + 1]) / 2);
	}
	out.ratio = bench_median(ratio, BLOCKS);
	out.store = bench_median(st, BLOCKS);
	out.floor = bench_median(fl, BLOCKS + 1);
	return out;
}

static paired interleaved(op_fn floor_op, void *floor_ctx, op_fn store_op, void *store_ctx,
			  int n)
{
	return interleaved_tidy(floor_op, floor_ctx, store_op, store_ctx, NULL, n);
}

static void row_ratio(const char *name, double seconds, double ratio, const char *floor_name)
{
	printf("  %-28s %12.1f us   %6.2fx %s\n", name, seconds * 1e6, ratio, floor_name);
}

static void row(const char *name, double seconds, double floor_seconds, const char *floor_name)
{
	if (floor_seconds > 0)
		printf("  %-28s %12.1f us   %6.2fx %s\n", name, seconds * 1e6,
		       seconds / floor_seconds, floor_name);
	else
		printf("  %-28s %12.1f us\n", name, seconds * 1e6);
}

/* ---- the store API ------------------------------------------------------ */

typedef struct {
	faucet_store *s;
	faucet_value *vals[PUTS * BLOCKS];
} store_op;

static void store_put(void *ctx, int i)
{
	store_op *op = ctx;

	if (faucet_store_put(op->s, "bench::put", op->vals[i]) != 0)
		bench_die("put");
}

static void store_get(void *ctx, int i)
{
	store_op *op = ctx;
	faucet_value *out = NULL;

	(void)i;
	if (faucet_store_get(op->s, "bench::put", &out) != 0 || out == NULL)
		bench_die("get");
	faucet_value_free(out);
}

/* One put_batch of 10,000 new keys named prefix%06d, in seconds. */
static double store_batch(faucet_store *s, faucet_entry *entries, char (*keys)[32],
			  faucet_value *v, const char *prefix)
{
	double t;

	for (int i = 0; i < LIST_KEYS; i++) {
		snprintf(keys[i], sizeof(keys[i]), "%s%06d", prefix, i);
		entries[i].key = keys[i];
		entries[i].value = v;
	}
	t = bench_now_s();
	if (faucet_store_put_batch(s, entries, LIST_KEYS) != 0)
		bench_die("put_batch");
	return bench_now_s() - t;
}

/* One list of `prefix`, which must hold `want` keys, in seconds. */
static double store_list(faucet_store *s, const char *prefix, size_t want)
{
	faucet_strarray listed = {0};
	double t = bench_now_s();

	if (faucet_store_list(s, prefix, &listed) != 0 || listed.count != want)
		bench_die("list");
	t = bench_now_s() - t;
	faucet_strarray_dispose(&listed);
	return t;
}

typedef struct {
	paired put, get;
	double cas, list, batch, singles;
} store_figures;

static store_figures measure_store(const char *url, int clean_up, const floor_ops *fl)
{
	store_figures f;
	faucet_store *s = NULL;
	faucet_value *v = bench_json("{\"cursor\":18446744073709551615,\"ts\":\"2026-01-01T00:00:00Z\"}");
	faucet_entry *entries = calloc(LIST_KEYS, sizeof(*entries));
	char (*keys)[32] = calloc(LIST_KEYS, sizeof(*keys));
	faucet_strarray listed = {0};
	double t;

	if (entries == NULL || keys == NULL)
		bench_die("out of memory");
	if (faucet_store_open_url(&s, url) != 0)
		bench_die("open");
	if (faucet_store_put(s, "bench::warm", v) != 0)
		bench_die("put");

	/* Distinct values: rewriting an identical row changes no page, and a
	 * commit that changes nothing costs nothing - that would not measure a
	 * durable write. */
	{
		static store_op op;
		op.s = s;
		for (int i = 0; i < PUTS * BLOCKS; i++) {
			char text[96];
			snprintf(text, sizeof(text), "{\"cursor\":%d,\"ts\":\"2026-01-01T00:00:00Z\"}", i);
			op.vals[i] = bench_json(text);
		}
		f.put = interleaved(fl->put, fl->ctx, store_put, &op, PUTS);
		for (int i = 0; i < PUTS * BLOCKS; i++)
			faucet_value_free(op.vals[i]);
		f.get = interleaved(fl->get, fl->ctx, store_get, &op, GETS);
	}

	t = bench_now_s();
	for (int i = 0; i < CAS_CYCLES; i++) {
		faucet_value *cur = NULL, *next;
		char text[32];
		int written = 0;

		if (faucet_store_get(s, "bench::cas", &cur) != 0)
			bench_die("get");
		snprintf(text, sizeof(text), "{\"n\":%d}", i);
		next = bench_json(text);
		if (faucet_store_compare_and_put(s, "bench::cas", cur, next, &written) != 0 ||
		    !written)
			bench_die("compare-and-put");
		faucet_value_free(cur);
		faucet_value_free(next);
	}
	f.cas = (bench_now_s() - t) / CAS_CYCLES;

	for (int i = 0; i < LIST_KEYS; i++)
		snprintf(keys[i], sizeof(keys[i]), "bench::single::%06d", i);
	t = bench_now_s();
	for (int i = 0; i < LIST_KEYS; i++) {
		if (faucet_store_put(s, keys[i], v) != 0)
			bench_die("put");
	}
	f.singles = bench_now_s() - t;

	f.batch = median3(store_batch(s, entries, keys, v, "bench::list::"),
			  store_batch(s, entries, keys, v, "bench::batch1::"),
			  store_batch(s, entries, keys, v, "bench::batch2::"));

	(void)store_list(s, "bench::list::", LIST_KEYS); /* warm-up */
	f.list = median3(store_list(s, "bench::list::", LIST_KEYS),
			 store_list(s, "bench::list::", LIST_KEYS),
			 store_list(s, "bench::list::", LIST_KEYS));

	/* Leave a server as we found it (a SQLite file is simply removed). */
	if (clean_up && faucet_store_list(s, "bench::", &listed) == 0) {
		for (size_t i = 0; i < listed.count; i++)
			(void)faucet_store_delete(s, listed.strings[i]);
		faucet_strarray_dispose(&listed);
	}
	faucet_store_free(s);
	faucet_value_free(v);
	free(entries);
	free(keys);
	return f;
}

/* ---- raw SQLite -------------------------------------------------------- */

typedef struct {
	double batch_small, batch_big;
} sqlite_floor;

static void sq(sqlite3 *db, const char *text)
{
	if (sqlite3_exec(db, text, NULL, NULL, NULL) != SQLITE_OK) {
		fprintf(stderr, "bench: %s: %s\n", text, sqlite3_errmsg(db));
		exit(1);
	}
}

static double raw_batch(sqlite3 *db, sqlite3_stmt *put, const char *value, int n, int offset)
{
	double t = bench_now_s();

	sq(db, "BEGIN IMMEDIATE");
	for (int i = 0; i < n; i++) {
		char key[32];
		snprintf(key, sizeof(key), "raw::%d::%07d", offset, i);
		sqlite3_bind_text(put, 1, key, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(put, 2, value, -1, SQLITE_STATIC);
		if (sqlite3_step(put) != SQLITE_DONE)
			exit(1);
		sqlite3_reset(put);
	}
	sq(db, "COMMIT");
	return bench_now_s() - t;
}

/* The floor's connections are single-threaded, so they skip SQLite's
 * per-call mutex, as the store's pooled connections do. */
static int raw_sqlite_open(const char *path, sqlite3 **db)
{
	return sqlite3_open_v2(path, db,
			       SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
}

typedef struct {
	sqlite3_stmt *put, *get;
	const char *value;
} raw_op;

/* Like the store's puts, each writes a value unlike the one before: an
 * unchanged row would make the commit cheaper than a real update. */
static void raw_put(void *ctx, int i)
{
	raw_op *op = ctx;
	char text[96];

	snprintf(text, sizeof(text), "{\"cursor\":%d,\"ts\":\"2026-01-01T00:00:00Z\"}", i);
	sqlite3_bind_text(op->put, 1, "raw::put", -1, SQLITE_STATIC);
	sqlite3_bind_text(op->put, 2, text, -1, SQLITE_TRANSIENT);
	if (sqlite3_step(op->put) != SQLITE_DONE)
		exit(1);
	sqlite3_reset(op->put);
}

static void raw_get(void *ctx, int i)
{
	raw_op *op = ctx;

	(void)i;
	sqlite3_bind_text(op->get, 1, "raw::put", -1, SQLITE_STATIC);
	if (sqlite3_step(op->get) != SQLITE_ROW || sqlite3_column_text(op->get, 0) == NULL)
		exit(1);
	sqlite3_reset(op->get);
}

typedef struct {
	sqlite3 *db;
	raw_op op;
} raw_db;

static void raw_open(raw_db *r, const char *path)
{
	static const char value[] = "{\"cursor\":18446744073709551615,\"ts\":\"2026-01-01T00:00:00Z\"}";

	if (raw_sqlite_open(path, &r->db) != SQLITE_OK)
		exit(1);
	sq(r->db, "PRAGMA journal_mode=WAL");
	sq(r->db, "PRAGMA synchronous=FULL");
	sq(r->db, "CREATE TABLE IF NOT EXISTS t (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
	if (sqlite3_prepare_v2(r->db, "INSERT OR REPLACE INTO t (key, value) VALUES (?1, ?2)", -1,
			       &r->op.put, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(r->db, "SELECT value FROM t WHERE key = ?1", -1, &r->op.get,
			       NULL) != SQLITE_OK)
		exit(1);
	r->op.value = value;
	raw_put(&r->op, 0); /* the row raw_get reads */
}

/* The raw batches (put, get and scans are measured beside the store). */
static sqlite_floor raw_figures(raw_db *r)
{
	sqlite_floor f = {0};

	f.batch_small = median3(raw_batch(r->db, r->op.put, r->op.value, LIST_KEYS, 1),
				raw_batch(r->db, r->op.put, r->op.value, LIST_KEYS, 3),
				raw_batch(r->db, r->op.put, r->op.value, LIST_KEYS, 4));
	f.batch_big = raw_batch(r->db, r->op.put, r->op.value, RAW_BIG, 2);
	return f;
}

static void raw_close(raw_db *r)
{
	sqlite3_finalize(r->op.put);
	sqlite3_finalize(r->op.get);
	sqlite3_close(r->db);
}

/* A range scan of the store's own table through a plain connection: the
 * floor of list(), on the very same file, WAL and data. */
typedef struct {
	sqlite3_stmt *st;
	const char *lo, *hi;
	int want;
} raw_scan_op;

static void raw_scan(void *ctx, int i)
{
	raw_scan_op *op = ctx;
	int n = 0;

	(void)i;
	sqlite3_bind_text(op->st, 1, op->lo, -1, SQLITE_STATIC);
	sqlite3_bind_text(op->st, 2, op->hi, -1, SQLITE_STATIC);
	while (sqlite3_step(op->st) == SQLITE_ROW) {
		if (sqlite3_column_text(op->st, 0) != NULL)
			n++;
	}
	sqlite3_reset(op->st);
	if (n != op->want)
		exit(1);
}

typedef struct {
	faucet_store *s;
	const char *prefix;
	size_t want;
	faucet_strarray listed; /* freed untimed: the scan frees nothing either */
} list_op;

static void list_once(void *ctx, int i)
{
	list_op *op = ctx;

	(void)i;
	if (faucet_store_list(op->s, op->prefix, &op->listed) != 0 || op->listed.count != op->want)
		bench_die("list");
}

static void list_tidy(void *ctx, int i)
{
	(void)i;
	faucet_strarray_dispose(&((list_op *)ctx)->listed);
}

static int count_key(const char *key, void *n)
{
	(void)key;
	++*(size_t *)n;
	return 0;
}

/* faucet_store_scan, counting the keys as the raw scan does. */
static void scan_once(void *ctx, int i)
{
	list_op *op = ctx;
	size_t n = 0;

	(void)i;
	if (faucet_store_scan(op->s, op->prefix, count_key, &n) != 0 || n != op->want)
		bench_die("scan");
}

/* list() or faucet_store_scan() of one key range against the raw scan of
 * it, after one untimed warm-up each. */
static paired vs_raw_scan(faucet_store *s, sqlite3_stmt *st, const char *prefix,
			  const char *successor, int want, int scan)
{
	raw_scan_op raw = {st, prefix, successor, want};
	list_op op = {s, prefix, (size_t)want, {NULL, 0}};
	op_fn visit = scan ? scan_once : list_once;

	raw_scan(&raw, 0);
	visit(&op, 0);
	list_tidy(&op, 0);
	return interleaved_tidy(raw_scan, &raw, visit, &op, list_tidy, 1);
}

/* On the database measure_store left (bench::list:: holds 10,000 keys):
 * a put_batch of 100,000 new keys, then list() and faucet_store_scan() of
 * 10,000 and of 100,000 keys, each against a raw range scan of the same
 * rows.  list() also copies every key into a caller-owned array, which the
 * raw scan does not; the scan is the like-for-like figure. */
static void sqlite_lists(const char *url, const char *path, double *big_batch, paired lists[4])
{
	faucet_store *s = NULL;
	faucet_value *v = bench_json("{\"cursor\":18446744073709551615,\"ts\":\"2026-01-01T00:00:00Z\"}");
	faucet_entry *entries = calloc(RAW_BIG, sizeof(*entries));
	char (*keys)[32] = calloc(RAW_BIG, sizeof(*keys));
	sqlite3 *db;
	sqlite3_stmt *st;
	double t;

	if (entries == NULL || keys == NULL || faucet_store_open_url(&s, url) != 0)
		bench_die("open");
	for (int i = 0; i < RAW_BIG; i++) {
		snprintf(keys[i], sizeof(keys[i]), "big::%07d", i);
		entries[i].key = keys[i];
		entries[i].value = v;
	}
	t = bench_now_s();
	if (faucet_store_put_batch(s, entries, RAW_BIG) != 0)
		bench_die("put_batch");
	*big_batch = bench_now_s() - t;
	if (raw_sqlite_open(path, &db) != SQLITE_OK ||
	    sqlite3_prepare_v2(db,
			       "SELECT key FROM faucet_state WHERE key >= ?1 AND key < ?2 "
			       "ORDER BY key",
			       -1, &st, NULL) != SQLITE_OK)
		exit(1);
	lists[0] = vs_raw_scan(s, st, "bench::list::", "bench::list:;", LIST_KEYS, 0);
	lists[1] = vs_raw_scan(s, st, "big::", "big:;", RAW_BIG, 0);
	lists[2] = vs_raw_scan(s, st, "bench::list::", "bench::list:;", LIST_KEYS, 1);
	lists[3] = vs_raw_scan(s, st, "big::", "big:;", RAW_BIG, 1);
	sqlite3_finalize(st);
	sqlite3_close(db);
	faucet_store_free(s);
	faucet_value_free(v);
	free(entries);
	free(keys);
}

/* ---- bare server round trips ------------------------------------------ */

static void select1(void *ctx, int i)
{
	(void)i;
	PQclear(PQexec(ctx, "SELECT 1"));
}

/* The store's put statement, prepared and run by hand on a plain
 * connection: what a durable PostgreSQL write costs with nothing of ours. */
static void raw_upsert(void *ctx, int i)
{
	char text[96];
	const char *params[2] = {"bench::raw-upsert", text};
	PGresult *res;

	snprintf(text, sizeof(text), "{\"cursor\":%d,\"ts\":\"2026-01-01T00:00:00Z\"}", i);
	res = PQexecPrepared(ctx, "raw_upsert", 2, params, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_COMMAND_OK) {
		fprintf(stderr, "bench: raw upsert: %s", PQresultErrorMessage(res));
		exit(1);
	}
	PQclear(res);
}

/* The store's put against raw_upsert, in alternating blocks. */
static paired pg_put_vs_upsert(const char *store_url, PGconn *c)
{
	static store_op op;
	faucet_store *s = NULL;
	PGresult *res;
	paired out;

	if (faucet_store_open_url(&s, store_url) != 0)
		bench_die("open");
	res = PQprepare(c, "raw_upsert",
			"INSERT INTO faucet_bench (key, value, updated_at) VALUES ($1, $2::jsonb, NOW()) "
			"ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = NOW()",
			2, NULL);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		exit(1);
	PQclear(res);
	op.s = s;
	for (int i = 0; i < PUTS * BLOCKS; i++) {
		char text[96];
		snprintf(text, sizeof(text), "{\"cursor\":%d,\"ts\":\"2026-01-01T00:00:00Z\"}", i);
		op.vals[i] = bench_json(text);
	}
	raw_upsert(c, 0);
	out = interleaved(raw_upsert, c, store_put, &op, PUTS);
	for (int i = 0; i < PUTS * BLOCKS; i++)
		faucet_value_free(op.vals[i]);
	(void)faucet_store_delete(s, "bench::put");
	(void)faucet_store_delete(s, "bench::raw-upsert");
	faucet_store_free(s);
	return out;
}

static void ping(void *ctx, int i)
{
	(void)i;
	freeReplyObject(redisCommand(ctx, "PING"));
}

static PGconn *pg_connect(const char *url)
{
	PGconn *c = PQconnectdb(url);

	if (PQstatus(c) != CONNECTION_OK) {
		fprintf(stderr, "bench: cannot connect to PostgreSQL\n");
		exit(1);
	}
	return c;
}

static redisContext *redis_connect(const char *url)
{
	/* redis://:password@host:port/db */
	const char *at = strchr(url + 8, '@');
	const char *hostp = at ? at + 1 : url + 8;
	const char *colon = strchr(hostp, ':');
	char host[128], password[128] = "";
	redisContext *c;

	snprintf(host, sizeof(host), "%.*s", (int)(colon - hostp), hostp);
	if (at != NULL && url[8] == ':')
		snprintf(password, sizeof(password), "%.*s", (int)(at - url - 9), url + 9);
	c = redisConnect(host, atoi(colon + 1));
	if (c == NULL || c->err)
		exit(1);
	if (*password)
		freeReplyObject(redisCommand(c, "AUTH %s", password));
	return c;
}

static void remove_db(const char *path)
{
	static const char *const suffixes[] = {"", "-wal", "-shm"};

	for (size_t i = 0; i < 3; i++) {
		char p[4200];
		snprintf(p, sizeof(p), "%s%s", path, suffixes[i]);
		(void)unlink(p);
	}
}

/* Both write 10,000 distinct new keys. */
static void batch_rows(store_figures f, double single_floor, const char *single_floor_name)
{
	row("10,000 single puts", f.singles, single_floor, single_floor_name);
	printf("  %-38s %6.1fx (target >= 20x)\n", "batch speed-up over 10,000 single puts",
	       f.singles / f.batch);
}

static void print_store(const char *name, store_figures f, const char *rt_name,
			const char *rts_name)
{
	double rt = (f.put.floor + f.get.floor) / 2;

	printf("%s (store API)\n", name);
	row_ratio("put", f.put.store, f.put.ratio, rt_name);
	row_ratio("get", f.get.store, f.get.ratio, rt_name);
	row("compare-and-put cycle", f.cas, rt, rt_name);
	row("list of 10,000 keys", f.list, rt, rt_name);
	row("batch of 10,000 keys", f.batch, rt, rt_name);
	batch_rows(f, rt * LIST_KEYS, rts_name);
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? bench_dir_arg(argc, argv, "bench_backends [DIR]") : ".";
	const char *pg = getenv("FAUCET_TEST_PG_URL");
	const char *redis = getenv("FAUCET_TEST_REDIS_URL");
	char path[4096], raw_path[4096], url[4200];
	store_figures f;
	sqlite_floor raw;
	double big_batch;
	paired lists[4];
	raw_db rdb;
	floor_ops fl;

	snprintf(path, sizeof(path), "%s/bench-backends-%ld.db", dir, (long)getpid());
	snprintf(raw_path, sizeof(raw_path), "%s/bench-backends-raw-%ld.db", dir, (long)getpid());
	snprintf(url, sizeof(url), "sqlite:%s", path);
	raw_open(&rdb, raw_path);
	fl = (floor_ops){raw_put, raw_get, &rdb.op};
	f = measure_store(url, 0, &fl);
	sqlite_lists(url, path, &big_batch, lists);
	raw = raw_figures(&rdb);
	raw_close(&rdb);
	printf("sqlite (store API vs raw SQLite, WAL + synchronous=FULL, prepared)\n");
	row_ratio("put", f.put.store, f.put.ratio, "raw put");
	row_ratio("get", f.get.store, f.get.ratio, "raw get");
	row("compare-and-put cycle", f.cas, f.put.floor, "raw put");
	row_ratio("list of 10,000 keys", lists[0].store, lists[0].ratio, "raw scan of 10,000");
	row_ratio("scan of 10,000 keys", lists[2].store, lists[2].ratio, "raw scan of 10,000");
	row("batch of 10,000 keys", f.batch, raw.batch_small, "raw batch of 10,000");
	row("batch of 100,000 keys", big_batch, raw.batch_big, "raw batch of 100,000");
	row_ratio("list of 100,000 keys", lists[1].store, lists[1].ratio, "raw scan of 100,000");
	row_ratio("scan of 100,000 keys", lists[3].store, lists[3].ratio, "raw scan of 100,000");
	batch_rows(f, f.put.floor * LIST_KEYS, "raw put x 10,000");
	printf("raw SQLite\n");
	row("put", f.put.floor, 0, NULL);
	row("get", f.get.floor, 0, NULL);
	row("batch of 100,000 rows", raw.batch_big, 0, NULL);
	row("range scan of 100,000 keys", lists[3].floor, 0, NULL);
	remove_db(raw_path);
	remove_db(path);

	if (pg != NULL && *pg) {
		PGconn *c = pg_connect(pg);
		fl = (floor_ops){select1, select1, c};
		snprintf(url, sizeof(url), "%s%sfaucet_bench", pg, strchr(pg, '?') ? "&table=" : "?table=");
		f = measure_store(url, 1, &fl);
		print_store("postgres", f, "SELECT 1", "SELECT 1 x 10,000");
		row("bare SELECT 1 round trip", (f.put.floor + f.get.floor) / 2, 0, NULL);
		{
			paired up = pg_put_vs_upsert(url, c);
			row_ratio("put, against a raw upsert", up.store, up.ratio,
				  "the same statement by hand");
			row("raw prepared upsert", up.floor, 0, NULL);
		}
		PQfinish(c);
	} else {
		printf("postgres: not measured (FAUCET_TEST_PG_URL is unset)\n");
	}
	if (redis != NULL && *redis) {
		redisContext *c = redis_connect(redis);
		fl = (floor_ops){ping, ping, c};
		snprintf(url, sizeof(url), "%s%snamespace=faucet_bench", redis,
			 strchr(redis, '?') ? "&" : "?");
		f = measure_store(url, 1, &fl);
		print_store("redis", f, "PING", "PING x 10,000");
		row("bare PING round trip", (f.put.floor + f.get.floor) / 2, 0, NULL);
		redisFree(c);
	} else {
		printf("redis: not measured (FAUCET_TEST_REDIS_URL is unset)\n");
	}
	return 0;
}
