/*
 * test_store_sqlite.c - what the contract suite cannot say about the SQLite
 * store: the table layout shared with the original faucet (rows written with
 * plain SQL are read, ours are read by plain SQL), the durability settings,
 * bad stored values and an unusable path.
 */
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "testutil.h"
#include "stores/sqlite_internal.h"

typedef struct {
	char *dir;
	char *db;
	char *url;
} paths;

static int setup(void **state)
{
	paths *p = calloc(1, sizeof(*p));

	assert_non_null(p);
	p->dir = tu_tempdir();
	p->db = tu_join(p->dir, "state.db");
	assert_true(asprintf(&p->url, "sqlite:%s", p->db) > 0);
	*state = p;
	return 0;
}

static int teardown(void **state)
{
	paths *p = *state;

	tu_rmrf(p->dir);
	free(p->dir);
	free(p->db);
	free(p->url);
	free(p);
	return 0;
}

/* Run SQL on a plain connection of our own, like another program would. */
static void sql(const char *db, const char *text)
{
	sqlite3 *c = NULL;
	char *err = NULL;

	assert_int_equal(sqlite3_open(db, &c), SQLITE_OK);
	sqlite3_busy_timeout(c, 5000);
	if (sqlite3_exec(c, text, NULL, NULL, &err) != SQLITE_OK)
		fail_msg("%s: %s", text, err);
	sqlite3_close(c);
}

/* The first column of the first row, as text (caller frees), or NULL. */
static char *sql_text(const char *db, const char *text)
{
	sqlite3 *c = NULL;
	sqlite3_stmt *st = NULL;
	char *out = NULL;

	assert_int_equal(sqlite3_open(db, &c), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(c, text, -1, &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0) != NULL)
		out = strdup((const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	sqlite3_close(c);
	return out;
}

static faucet_store *open_store(const paths *p)
{
	faucet_store *s = NULL;

	if (faucet_store_open_url(&s, p->url) != 0)
		fail_msg("open: %s", faucet_error_last()->message);
	return s;
}

static void rows_are_shared_with_plain_sql(void **state)
{
	paths *p = *state;
	faucet_store *s;
	faucet_value *v = tu_v("{\"b\":1,\"a\":[1.0,0.1]}");
	faucet_strarray keys = {0};
	char *text;

	/* A table created the original's way, before faucet opens the file. */
	sql(p->db, "CREATE TABLE faucet_state (key TEXT PRIMARY KEY, value TEXT NOT NULL,"
		   " updated_at TEXT);"
		   "INSERT INTO faucet_state (key, value) VALUES"
		   " ('p::theirs', '{\"cursor\": 18446744073709551615, \"ts\": 0.1}');");
	s = open_store(p);
	tu_assert_value(s, "p::theirs", "{\"cursor\":18446744073709551615,\"ts\":0.1}");
	assert_int_equal(faucet_store_put(s, "p::ours", v), 0);
	text = sql_text(p->db, "SELECT value FROM faucet_state WHERE key = 'p::ours'");
	assert_string_equal(text, "{\"b\":1,\"a\":[1.0,0.1]}"); /* the exact compact text */
	free(text);
	text = sql_text(p->db, "SELECT updated_at IS NOT NULL FROM faucet_state"
			       " WHERE key = 'p::ours'");
	assert_string_equal(text, "1");
	free(text);
	assert_int_equal(faucet_store_list(s, "p::", &keys), 0);
	tu_assert_strings(&keys, "p::ours", "p::theirs", NULL);
	faucet_strarray_dispose(&keys);
	faucet_store_free(s);
	faucet_value_free(v);
}

static void commits_are_durable_and_shared(void **state)
{
	paths *p = *state;
	faucet_store *s = open_store(p);
	faucet_value *v = tu_v("1");
	char *mode;

	assert_int_equal(faucet_store_put(s, "k", v), 0);
	/* WAL is a property of the file: every later connection sees it. */
	mode = sql_text(p->db, "PRAGMA journal_mode");
	assert_string_equal(mode, "wal");
	free(mode);
	faucet_store_free(s);
	faucet_value_free(v);
}

static void bad_stored_values_are_clear_errors(void **state)
{
	paths *p = *state;
	faucet_store *s = open_store(p);
	faucet_value *v = tu_v("1"), *out = NULL;

	/* Let the store create its table, then spoil two rows behind its back. */
	assert_int_equal(faucet_store_put(s, "p::ok", v), 0);
	sql(p->db, "INSERT INTO faucet_state (key, value) VALUES ('p::text', 'not json'),"
		   " ('p::cut', '{\"a\":');");
	assert_int_equal(faucet_store_get(s, "p::text", &out), FAUCET_ERROR);
	assert_null(out);
	tu_assert_error_contains("sqlite state store");
	tu_assert_error_contains(p->db);
	tu_assert_error_contains("'p::text'");
	tu_assert_error_contains("not valid JSON");
	assert_int_equal(faucet_store_get(s, "p::cut", &out), FAUCET_ERROR);
	tu_assert_error_contains("'p::cut'");
	/* A compare-and-put over a bad row fails and writes nothing. */
	assert_int_equal(faucet_store_compare_and_put(s, "p::text", NULL, v, NULL), FAUCET_ERROR);
	tu_assert_error_contains("'p::text'");
	/* The store stays usable. */
	tu_assert_value(s, "p::ok", "1");
	faucet_store_free(s);
	faucet_value_free(v);
}

static void an_unusable_path_fails_clearly(void **state)
{
	paths *p = *state;
	char *url, *missing = tu_join(p->dir, "no/such/dir/state.db");
	faucet_store *s = NULL;
	faucet_value *out = NULL, *v = tu_v("1");
	faucet_check_report *r = NULL;
	const faucet_probe *probe;

	assert_true(asprintf(&url, "sqlite:%s", missing) > 0);
	assert_int_equal(faucet_store_open_url(&s, url), 0); /* opened on first use */
	assert_int_equal(faucet_store_get(s, "k", &out), FAUCET_ERROR);
	tu_assert_error_contains("sqlite state store");
	tu_assert_error_contains(missing);
	assert_int_equal(faucet_store_put(s, "k", v), FAUCET_ERROR);
	assert_int_equal(faucet_store_check(s, NULL, &r), 0);
	assert_int_equal(faucet_check_report_failed_count(r), 1);
	probe = faucet_check_report_probe(r, 0);
	assert_int_equal(probe->status, FAUCET_PROBE_FAIL);
	assert_non_null(strstr(probe->hint, missing));
	faucet_check_report_free(r);
	faucet_store_free(s);
	assert_int_equal(faucet_store_open_url(&s, "sqlite:"), FAUCET_ECONFIG);
	free(url);
	free(missing);
	faucet_value_free(v);
}

static void a_file_that_is_not_a_database_fails_clearly(void **state)
{
	paths *p = *state;
	faucet_store *s;
	faucet_value *out = NULL;

	tu_write_file(p->db, "this is not a database, just some text long enough", 51);
	s = open_store(p);
	assert_int_equal(faucet_store_get(s, "k", &out), FAUCET_ERROR);
	tu_assert_error_contains("sqlite state store");
	tu_assert_error_contains(p->db);
	faucet_store_free(s);
}

static void assert_mode_0600(const char *path)
{
	struct stat st;

	if (stat(path, &st) != 0)
		fail_msg("%s does not exist", path);
	if ((st.st_mode & 07777) != 0600)
		fail_msg("%s has mode %04o, not 0600", path, (unsigned)(st.st_mode & 07777));
}

/* Under umask 000 SQLite alone would create the database, its -wal and its
 * -shm world-readable (0644): bookmarks, and whatever secrets a connector
 * keeps in them, are owner-only like the file store's.  The umask is a
 * process-wide setting, so it is changed only around the store's use in
 * this single-threaded test and restored. */
static void files_are_owner_only_whatever_the_umask(void **state)
{
	paths *p = *state;
	char *wal = NULL, *shm = NULL;
	mode_t old = umask(0);
	faucet_store *s = open_store(p);

	tu_put(s, "k", "1");
	assert_true(asprintf(&wal, "%s-wal", p->db) > 0);
	assert_true(asprintf(&shm, "%s-shm", p->db) > 0);
	/* While the store is open the WAL and the shared-memory file exist. */
	assert_mode_0600(p->db);
	assert_mode_0600(wal);
	assert_mode_0600(shm);
	faucet_store_free(s);
	(void)umask(old);
	free(wal);
	free(shm);
}

/* ---- every pooled connection's durability settings ---------------------- */

typedef struct {
	faucet_sqlite_store *store;
	pthread_barrier_t *all_hold_one;
	sqlite3 *db;         /* the connection this thread was given */
	long long synchronous; /* PRAGMA synchronous (2 = FULL) */
	char journal_mode[16];
	int rc;
} conn_probe;

static int pragma_int(sqlite3 *db, const char *sql, long long *out)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);

	if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		*out = sqlite3_column_int64(st, 0);
		rc = SQLITE_OK;
	}
	sqlite3_finalize(st);
	return rc;
}

static int pragma_text(sqlite3 *db, const char *sql, char *out, size_t size)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);

	if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		(void)snprintf(out, size, "%s", (const char *)sqlite3_column_text(st, 0));
		rc = SQLITE_OK;
	}
	sqlite3_finalize(st);
	return rc;
}

/* Runs while the thread holds its pooled connection: read the settings,
 * then wait until every other thread holds one too, so no two threads can
 * have been handed the same connection. */
static int read_settings(sqlite3 *db, void *ctx)
{
	conn_probe *p = ctx;

	p->db = db;
	p->rc = pragma_int(db, "PRAGMA synchronous", &p->synchronous);
	if (p->rc == SQLITE_OK)
		p->rc = pragma_text(db, "PRAGMA journal_mode", p->journal_mode,
				    sizeof(p->journal_mode));
	(void)pthread_barrier_wait(p->all_hold_one);
	return 0;
}

static void *probe_thread(void *arg)
{
	conn_probe *p = arg;

	if (faucet__sqlite_with_connection(p->store, read_settings, p) != 0)
		p->rc = -1;
	return NULL;
}

/* A put survives a power cut only because each connection commits with
 * synchronous=FULL in WAL mode (see test_sqlite_crash.c); both are
 * per-connection settings (synchronous is not stored in the file), so each
 * of the pool's connections is checked, all held at once. */
static void every_pooled_connection_is_durable(void **state)
{
	paths *p = *state;
	conn_probe probes[FAUCET_SQLITE_POOL_SIZE];
	pthread_t threads[FAUCET_SQLITE_POOL_SIZE];
	pthread_barrier_t barrier;
	faucet_sqlite_store *handle = NULL;
	faucet_store *s = NULL;
	const size_t n = FAUCET_SQLITE_POOL_SIZE;

	assert_int_equal(faucet__store_open_sqlite_vfs(&s, p->db, NULL, &handle), 0);
	assert_int_equal(pthread_barrier_init(&barrier, NULL, (unsigned)n), 0);
	for (size_t i = 0; i < n; i++) {
		probes[i] = (conn_probe){.store = handle, .all_hold_one = &barrier};
		assert_int_equal(pthread_create(&threads[i], NULL, probe_thread, &probes[i]), 0);
	}
	for (size_t i = 0; i < n; i++)
		assert_int_equal(pthread_join(threads[i], NULL), 0);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(probes[i].rc, SQLITE_OK);
		assert_int_equal(probes[i].synchronous, 2); /* FULL */
		assert_string_equal(probes[i].journal_mode, "wal");
		for (size_t j = 0; j < i; j++)
			assert_ptr_not_equal(probes[i].db, probes[j].db);
	}
	printf("checked synchronous=FULL and journal_mode=WAL on %zu pooled connections\n", n);
	(void)pthread_barrier_destroy(&barrier);
	faucet_store_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(rows_are_shared_with_plain_sql, setup, teardown),
		cmocka_unit_test_setup_teardown(commits_are_durable_and_shared, setup, teardown),
		cmocka_unit_test_setup_teardown(bad_stored_values_are_clear_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(an_unusable_path_fails_clearly, setup, teardown),
		cmocka_unit_test_setup_teardown(files_are_owner_only_whatever_the_umask, setup,
						teardown),
		cmocka_unit_test_setup_teardown(every_pooled_connection_is_durable, setup, teardown),
		cmocka_unit_test_setup_teardown(a_file_that_is_not_a_database_fails_clearly, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
