/*
 * test_store_postgres.c - what the contract suite cannot say about the
 * PostgreSQL store: the table layout shared with the original faucet (rows
 * written with psql are read, ours are read by psql), configuration errors,
 * an unreachable server, a wrong password, a missing table, values JSONB
 * cannot give back, every way a batch is written (COPY for new keys, the
 * statements otherwise, either racing another writer), a compare-and-put
 * batch racing an insert of a key it expects absent, a connection lost
 * in a batch's COPY, statements that time out, and a server restarted
 * under a live store.
 */
#include <libpq-fe.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "contract/servers.h"
#include "store/open_internal.h"

static char *url_with(const char *base, const char *query)
{
	char *u = NULL;

	assert_true(asprintf(&u, "%s%s%s", base, strchr(base, '?') ? "&" : "?", query) > 0);
	return u;
}

/* Run SQL through psql against the shared server; returns its output. */
static char *psql(const char *sql)
{
	char path[] = "/tmp/faucet-psql-XXXXXX";
	int fd = mkstemp(path);
	char *out;

	assert_true(fd >= 0);
	assert_int_equal(write(fd, sql, strlen(sql)), (ssize_t)strlen(sql));
	close(fd);
	out = ts_sh("psql -X -q -At -v ON_ERROR_STOP=1 -d '%s' -f %s 2>&1",
		    ts_env("FAUCET_TEST_PG_URL"), path);
	unlink(path);
	return out;
}

/* Run SQL with psql and check its whole output. */
static void assert_psql(const char *sql, const char *want)
{
	char *out = psql(sql);

	assert_string_equal(out, want);
	free(out);
}

static faucet_store *open_table(const char *table, const char *extra)
{
	char q[256];
	char *url;
	faucet_store *s = NULL;

	snprintf(q, sizeof(q), "table=%s%s%s", table, extra ? "&" : "", extra ? extra : "");
	url = url_with(ts_env("FAUCET_TEST_PG_URL"), q);
	if (faucet_store_open_url(&s, url) != 0)
		fail_msg("open %s: %s", table, faucet_error_last()->message);
	free(url);
	return s;
}

/* open_table, connected: the store creates its table on its first
 * connection. */
static faucet_store *open_created(const char *table)
{
	faucet_store *s = open_table(table, NULL);
	faucet_value *out = NULL;

	assert_int_equal(faucet_store_get(s, "none::", &out), 0);
	assert_null(out);
	return s;
}

static void rows_are_shared_with_plain_sql(void **state)
{
	char sql[1024];
	faucet_store *s;
	faucet_value *v = tu_v("{\"b\":1,\"a\":[1,2],\"c\":\"x\"}");
	faucet_strarray keys = {0};

	(void)state;
	/* A table created the original's way, before faucet ever opens it. */
	snprintf(sql, sizeof(sql),
		 "DROP TABLE IF EXISTS interop_%d;"
		 "CREATE TABLE interop_%d (key TEXT PRIMARY KEY, value JSONB NOT NULL,"
		 " updated_at TIMESTAMPTZ NOT NULL DEFAULT NOW());"
		 "INSERT INTO interop_%d (key, value) VALUES"
		 " ('p::theirs', '{\"cursor\": 18446744073709551615, \"ts\": 0.1, \"s\": \"a_b\"}');",
		 getpid(), getpid(), getpid());
	free(psql(sql));
	snprintf(sql, sizeof(sql), "interop_%d", getpid());
	s = open_table(sql, "ensure_table=false");
	tu_assert_value(s, "p::theirs", "{\"cursor\":18446744073709551615,\"ts\":0.1,\"s\":\"a_b\"}");
	assert_int_equal(faucet_store_put(s, "p::ours", v), 0);
	snprintf(sql, sizeof(sql),
		 "SELECT value->>'b', value->'a'->>1, updated_at > NOW() - interval '1 hour'"
		 " FROM interop_%d WHERE key = 'p::ours';",
		 getpid());
	assert_psql(sql, "1|2|t");
	assert_int_equal(faucet_store_list(s, "p::", &keys), 0);
	tu_assert_strings(&keys, "p::ours", "p::theirs", NULL);
	faucet_strarray_dispose(&keys);
	/* This table's key follows the database's collation (ICU English on
	 * the test cluster, where "a" < "B" < "_x"); list still gives byte
	 * order. */
	snprintf(sql, sizeof(sql),
		 "INSERT INTO interop_%d (key, value) VALUES ('o::a', '1'), ('o::B', '1'),"
		 " ('o::_x', '1'), ('o::Z', '1'), ('o::a_', '1');",
		 getpid());
	free(psql(sql));
	assert_int_equal(faucet_store_list(s, "o::", &keys), 0);
	tu_assert_strings(&keys, "o::B", "o::Z", "o::_x", "o::a", "o::a_", NULL);
	faucet_strarray_dispose(&keys);
	faucet_store_free(s);
	snprintf(sql, sizeof(sql), "DROP TABLE interop_%d;", getpid());
	free(psql(sql));
	faucet_value_free(v);
}

static void the_table_is_created_with_the_original_layout(void **state)
{
	char sql[512], name[64];
	faucet_store *s;
	faucet_value *v = tu_v("1");

	(void)state;
	snprintf(name, sizeof(name), "created_%d", getpid());
	s = open_table(name, NULL);
	assert_int_equal(faucet_store_put(s, "k", v), 0);
	snprintf(sql, sizeof(sql),
		 "SELECT string_agg(column_name || ' ' || data_type || ' ' || is_nullable, ', '"
		 " ORDER BY ordinal_position) FROM information_schema.columns"
		 " WHERE table_name = '%s';",
		 name);
	assert_psql(sql, "key text NO, value jsonb NO, updated_at timestamp with time zone NO");
	/* Its key compares bytes, the order list() gives. */
	snprintf(sql, sizeof(sql),
		 "SELECT collation_name FROM information_schema.columns"
		 " WHERE table_name = '%s' AND column_name = 'key';",
		 name);
	assert_psql(sql, "C");
	faucet_store_free(s);
	snprintf(sql, sizeof(sql), "DROP TABLE %s;", name);
	free(psql(sql));
	faucet_value_free(v);
}

static void a_missing_table_without_ensure_table_is_a_clear_error(void **state)
{
	faucet_store *s;
	faucet_value *out = NULL;
	char sql[256], *exists;

	(void)state;
	s = open_table("never_created", "ensure_table=false");
	assert_int_equal(faucet_store_get(s, "k", &out), FAUCET_ECONFIG);
	tu_assert_error_contains("postgres");
	tu_assert_error_contains("\"never_created\" does not exist");
	ts_assert_no_secret(faucet_error_last()->message);
	faucet_store_free(s);
	snprintf(sql, sizeof(sql), "SELECT to_regclass('never_created') IS NULL;");
	exists = psql(sql);
	assert_string_equal(exists, "t"); /* and nothing created it */
	free(exists);
}

static void bad_options_are_config_errors(void **state)
{
	static const char *const bad[] = {"table=bad-name", "table=x%3Bdrop", "table=",
					  ("table=a234567890123456789012345678901234567890123456789"
					   "012345678901234"),
					  "max_connections=0", "max_connections=-1",
					  "ensure_table=maybe", "table=a&table=b"};
	faucet_store_config cfg = FAUCET_STORE_CONFIG_INIT;
	faucet_store *s = NULL;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *url = url_with(ts_env("FAUCET_TEST_PG_URL"), bad[i]);
		assert_int_equal(faucet_store_open_url(&s, url), FAUCET_ECONFIG);
		assert_null(s);
		ts_assert_no_secret(faucet_error_last()->message);
		free(url);
	}
	cfg.type = "postgres";
	cfg.url = ts_env("FAUCET_TEST_PG_URL");
	cfg.table = "quote\"d";
	assert_int_equal(faucet_store_open_config(&s, &cfg), FAUCET_ECONFIG);
	tu_assert_error_contains("table name");
	cfg.table = NULL;
	cfg.max_connections = -3;
	assert_int_equal(faucet_store_open_config(&s, &cfg), FAUCET_ECONFIG);
	cfg.max_connections = 0;
	cfg.url = NULL;
	assert_int_equal(faucet_store_open_config(&s, &cfg), FAUCET_ECONFIG);
}

static void an_unreachable_server_fails_fast_and_clearly(void **state)
{
	char url[256];
	faucet_store *s = NULL;
	faucet_value *out = NULL, *v = tu_v("1");

	(void)state;
	snprintf(url, sizeof(url), "postgres://faucet:wrong-secret-pw@127.0.0.1:%d/postgres",
		 ts_closed_port());
	assert_int_equal(faucet_store_open_url(&s, url), 0); /* lazily connected */
	assert_int_equal(faucet_store_get(s, "k", &out), FAUCET_EUNAVAILABLE);
	tu_assert_error_contains("postgres state store postgres://faucet:***@127.0.0.1");
	tu_assert_error_contains("cannot connect");
	ts_assert_no_secret(faucet_error_last()->message);
	/* Nothing was sent: a write that could not connect is not "unknown". */
	assert_int_equal(faucet_store_put(s, "k", v), FAUCET_EUNAVAILABLE);
	ts_assert_check_fails_without_secrets(s);
	faucet_store_free(s);
	faucet_value_free(v);
}

static void a_wrong_password_is_refused_without_showing_it(void **state)
{
	(void)state;
	ts_assert_wrong_password_refused("FAUCET_TEST_PG_URL", "password authentication failed");
}

static void values_jsonb_cannot_give_back_are_refused(void **state)
{
	char name[64], sql[512];
	faucet_store *s;
	faucet_value *v = tu_v("{\"n\":1E5}"), *out = NULL;

	(void)state;
	snprintf(name, sizeof(name), "jsonb_%d", getpid());
	s = open_table(name, NULL);
	/* Refused before writing: JSONB would hand back 100000, an integer. */
	assert_int_equal(faucet_store_put(s, "p::e", v), FAUCET_EINVALID);
	tu_assert_error_contains("1E5");
	tu_assert_error_contains("'p::e'");
	tu_assert_value(s, "p::e", NULL);
	/* A row someone else wrote that we cannot hold exactly: an error naming
	 * the key, never a wrong or missing bookmark. */
	snprintf(sql, sizeof(sql), "INSERT INTO %s (key, value) VALUES ('p::huge', '1e30');", name);
	free(psql(sql));
	assert_int_equal(faucet_store_get(s, "p::huge", &out), FAUCET_ERROR);
	assert_null(out);
	tu_assert_error_contains("postgres");
	tu_assert_error_contains("'p::huge'");
	faucet_store_free(s);
	snprintf(sql, sizeof(sql), "DROP TABLE %s;", name);
	free(psql(sql));
	faucet_value_free(v);
}

static void a_pool_of_one_connection_serves_every_call(void **state)
{
	/* (The contract suite runs 8 threads on the default pool of 5, so
	 * waiting for a connection is covered there.) */
	char name[64];
	faucet_store *s;

	(void)state;
	snprintf(name, sizeof(name), "pool_%d", getpid());
	s = open_table(name, "max_connections=1");
	for (int i = 0; i < 20; i++) {
		char key[32], json[32];
		faucet_value *v;
		snprintf(key, sizeof(key), "k%d", i);
		snprintf(json, sizeof(json), "%d", i);
		v = tu_v(json);
		assert_int_equal(faucet_store_put(s, key, v), 0);
		faucet_value_free(v);
	}
	tu_assert_value(s, "k19", "19");
	faucet_store_free(s);
	snprintf(name, sizeof(name), "DROP TABLE pool_%d;", getpid());
	free(psql(name));
}

/* A batch first updates the keys that exist and plain-inserts the rest, in
 * one statement: both halves at once, and a key given twice that already
 * exists (the contract suite gives a new key twice). */
static void a_batch_updates_existing_keys_and_inserts_new_ones(void **state)
{
	char name[64], sql[256];
	faucet_store *s;
	faucet_value *v[6];
	faucet_entry e[5];

	(void)state;
	for (int i = 0; i < 6; i++) {
		char json[16];
		snprintf(json, sizeof(json), "%d", i);
		v[i] = tu_v(json);
	}
	snprintf(name, sizeof(name), "mixed_%d", getpid());
	s = open_table(name, NULL);
	assert_int_equal(faucet_store_put(s, "m::a", v[0]), 0);
	assert_int_equal(faucet_store_put(s, "m::b", v[0]), 0);
	assert_int_equal(faucet_store_put(s, "m::untouched", v[0]), 0);
	e[0] = (faucet_entry){"m::a", v[1]};
	e[1] = (faucet_entry){"m::new1", v[2]};
	e[2] = (faucet_entry){"m::b", v[3]};
	e[3] = (faucet_entry){"m::a", v[4]};
	e[4] = (faucet_entry){"m::new2", v[5]};
	assert_int_equal(faucet_store_put_batch(s, e, 5), 0);
	tu_assert_value(s, "m::a", "4");
	tu_assert_value(s, "m::b", "3");
	tu_assert_value(s, "m::new1", "2");
	tu_assert_value(s, "m::new2", "5");
	tu_assert_value(s, "m::untouched", "0");
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s;", name);
	assert_psql(sql, "5");
	faucet_store_free(s);
	snprintf(sql, sizeof(sql), "DROP TABLE %s;", name);
	free(psql(sql));
	for (int i = 0; i < 6; i++)
		faucet_value_free(v[i]);
}

/* Record the first word of every statement that writes `table` (a
 * statement-level trigger), into table_log. */
static void log_statements(const char *table)
{
	char sql[1024];

	snprintf(sql, sizeof(sql),
		 "CREATE TABLE %s_log (n serial, q text);"
		 "CREATE FUNCTION %s_logf() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN "
		 "INSERT INTO %s_log (q) VALUES (split_part(current_query(), ' ', 1)); "
		 "RETURN NULL; END$$;"
		 "CREATE TRIGGER %s_logt AFTER INSERT OR UPDATE ON %s FOR EACH STATEMENT "
		 "EXECUTE FUNCTION %s_logf();",
		 table, table, table, table, table, table);
	assert_psql(sql, "");
}

/* The statements logged since the last call, distinct, then forgotten. */
static void assert_logged(const char *table, const char *want)
{
	char sql[256];

	snprintf(sql, sizeof(sql),
		 "SELECT coalesce(string_agg(DISTINCT q, ','), '') FROM %s_log; TRUNCATE %s_log;",
		 table, table);
	assert_psql(sql, want);
}

/* A batch of new keys goes by COPY, whose text format gives backslash,
 * tab, newline and CR a meaning: values full of JSON escapes (a backslash
 * followed by t is the trap - unescaped, COPY would store a tab), raw
 * UTF-8 and \u escapes arrive as the same JSONB that a put writes, and read
 * back as the same values.  A batch that gives a new key twice keeps the
 * last value; one that touches an existing key goes by the statements. */
static void a_batch_of_new_keys_is_copied_exactly(void **state)
{
	static const char *const json[] = {
		"{\"s\":\"tab\\there\"}", "{\"s\":\"back\\\\slash\"}", "{\"s\":\"\\\\t\"}",
		"{\"s\":\"new\\nline\\r\\n\"}", "{\"s\":\"x\\\\\"}", "{\"s\":\"\\\\.\"}",
		"{\"s\":\"\\\\N\"}", "{\"s\":\"caf\xc3\xa9 \xf0\x9f\x98\x80 \\u00e9\"}",
		"{\"s\":\"quote\\\"d\",\"t\":[\"\\u0001\",\"\\\\\\\\\",\"\\/\"]}",
		"[1,2.50,-0.0,18446744073709551615,\"\\b\\f\"]", "\"\\\\\\\\n\"", "null"};
	enum { N = sizeof(json) / sizeof(json[0]) };
	char name[64], sql[1024], keys[2 * N][32];
	faucet_value *v[N];
	faucet_entry e[N + 1];
	faucet_store *s;

	(void)state;
	snprintf(name, sizeof(name), "copied_%d", getpid());
	s = open_created(name);
	log_statements(name);
	for (int i = 0; i < N; i++) {
		v[i] = tu_v(json[i]);
		snprintf(keys[i], sizeof(keys[i]), "c::%02d", i);
		snprintf(keys[N + i], sizeof(keys[N + i]), "p::%02d", i);
		e[i] = (faucet_entry){keys[i], v[i]};
		assert_int_equal(faucet_store_put(s, keys[N + i], v[i]), 0);
	}
	assert_logged(name, "INSERT");
	assert_int_equal(faucet_store_put_batch(s, e, N), 0);
	assert_logged(name, "COPY");
	for (int i = 0; i < N; i++) {
		faucet_value *out = NULL;
		assert_int_equal(faucet_store_get(s, keys[i], &out), 0);
		if (!faucet_value_equal(out, v[i]))
			fail_msg("%s: wrote %s, read %s", keys[i], json[i], faucet_value_json(out));
		faucet_value_free(out);
	}
	/* The same JSONB as a put's, and the strings as they were meant. */
	snprintf(sql, sizeof(sql),
		 "SELECT count(*) FROM %s c JOIN %s p ON p.key = 'p' || substr(c.key, 2) "
		 "WHERE c.key LIKE 'c::%%' AND c.value = p.value AND c.updated_at > NOW() - "
		 "interval '1 hour';"
		 "SELECT value->>'s' = E'\\\\t', octet_length(value->>'s') FROM %s WHERE key = 'c::02';"
		 "SELECT value->>'s' = E'tab\\there' FROM %s WHERE key = 'c::00';"
		 "SELECT value->>'s' = E'x\\\\' FROM %s WHERE key = 'c::04';",
		 name, name, name, name, name);
	snprintf(keys[0], sizeof(keys[0]), "%d\nt|2\nt\nt", N);
	assert_psql(sql, keys[0]);
	snprintf(keys[0], sizeof(keys[0]), "c::%02d", 0);
	/* A new key twice: the COPY meets its own key, and the statements
	 * write the batch, the last value winning. */
	e[0] = (faucet_entry){"d::twice", v[0]};
	e[1] = (faucet_entry){"d::once", v[1]};
	e[2] = (faucet_entry){"d::twice", v[2]};
	assert_int_equal(faucet_store_put_batch(s, e, 3), 0);
	assert_logged(name, "WITH");
	tu_assert_value(s, "d::twice", json[2]);
	tu_assert_value(s, "d::once", json[1]);
	/* A new key beside an existing one: the staging table.  (A new key
	 * alone, even between existing ones, is a plain insert.) */
	e[0] = (faucet_entry){"c::005", v[3]};
	e[1] = (faucet_entry){"c::01", v[4]};
	assert_int_equal(faucet_store_put_batch(s, e, 2), 0);
	assert_logged(name, "INSERT");
	e[0] = (faucet_entry){"c::007", v[5]};
	assert_int_equal(faucet_store_put_batch(s, e, 1), 0);
	assert_logged(name, "COPY");
	tu_assert_value(s, "c::005", json[3]);
	tu_assert_value(s, "c::01", json[4]);
	tu_assert_value(s, "c::007", json[5]);
	faucet_store_free(s);
	snprintf(sql, sizeof(sql), "DROP TABLE %s; DROP TABLE %s_log; DROP FUNCTION %s_logf();",
		 name, name, name);
	free(psql(sql));
	for (int i = 0; i < N; i++)
		faucet_value_free(v[i]);
}

/* A batch over existing keys goes by COPY into the staging table, then one
 * INSERT ... ON CONFLICT: every value that COPY's text format gives a
 * meaning (backslash, tab, newline, CR in JSON escapes) arrives as the same
 * JSONB a put writes, existing keys are updated and new ones inserted, and
 * a second batch on the same connection writes its own rows only (the
 * staging table is empty again after each commit). */
static void a_staged_batch_over_existing_keys_is_exact(void **state)
{
	static const char *const json[] = {
		"{\"s\":\"tab\\there\"}", "{\"s\":\"back\\\\slash\"}", "{\"s\":\"\\\\t\"}",
		"{\"s\":\"new\\nline\\r\\n\"}", "{\"s\":\"x\\\\\"}", "{\"s\":\"\\\\.\"}",
		"{\"s\":\"\\\\N\"}", "{\"s\":\"caf\xc3\xa9 \\u00e9\"}", "\"\\\\\\\\n\"",
		"[1,2.50,18446744073709551615,\"\\b\\f\"]", "null"};
	enum { N = sizeof(json) / sizeof(json[0]) };
	char name[64], sql[1024], keys[2 * N][32], want[32];
	faucet_value *v[N], *old = tu_v("{\"old\":true}");
	faucet_entry e[N];
	faucet_store *s;

	(void)state;
	snprintf(name, sizeof(name), "staged_%d", getpid());
	s = open_created(name);
	log_statements(name);
	for (int i = 0; i < N; i++) {
		v[i] = tu_v(json[i]);
		snprintf(keys[i], sizeof(keys[i]), "s::%02d", i);
		snprintf(keys[N + i], sizeof(keys[N + i]), "p::%02d", i);
		e[i] = (faucet_entry){keys[i], v[i]};
		assert_int_equal(faucet_store_put(s, keys[N + i], v[i]), 0);
		if (i % 2 == 0) /* every other key exists: updates and inserts */
			assert_int_equal(faucet_store_put(s, keys[i], old), 0);
	}
	assert_logged(name, "INSERT");
	assert_int_equal(faucet_store_put_batch(s, e, N), 0);
	assert_logged(name, "INSERT");
	for (int i = 0; i < N; i++) {
		faucet_value *out = NULL;
		assert_int_equal(faucet_store_get(s, keys[i], &out), 0);
		if (out == NULL || !faucet_value_equal(out, v[i]))
			fail_msg("%s: wrote %s, read %s", keys[i], json[i],
				 out ? faucet_value_json(out) : "nothing");
		faucet_value_free(out);
	}
	/* The same JSONB as a put's; the strings as they were meant. */
	snprintf(sql, sizeof(sql),
		 "SELECT count(*) FROM %s c JOIN %s p ON p.key = 'p' || substr(c.key, 2) "
		 "WHERE c.key LIKE 's::%%' AND c.value = p.value AND c.updated_at > NOW() - "
		 "interval '1 hour';"
		 "SELECT value->>'s' = E'tab\\there' FROM %s WHERE key = 's::00';"
		 "SELECT value->>'s' = E'\\\\t' FROM %s WHERE key = 's::02';"
		 "SELECT value->>'s' = E'new\\nline\\r\\n' FROM %s WHERE key = 's::03';",
		 name, name, name, name, name);
	snprintf(want, sizeof(want), "%d\nt\nt\nt", N);
	assert_psql(sql, want);
	/* A second staged batch on the same connection: its rows only. */
	e[0] = (faucet_entry){"s::00", old};
	e[1] = (faucet_entry){"s::new", old};
	assert_int_equal(faucet_store_put_batch(s, e, 2), 0);
	assert_logged(name, "INSERT");
	tu_assert_value(s, "s::00", "{\"old\":true}");
	tu_assert_value(s, "s::new", "{\"old\":true}");
	tu_assert_value(s, "s::01", json[1]);
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s WHERE key LIKE 's::%%';", name);
	snprintf(want, sizeof(want), "%d", N + 1);
	assert_psql(sql, want);
	faucet_store_free(s);
	snprintf(sql, sizeof(sql), "DROP TABLE %s; DROP TABLE %s_log; DROP FUNCTION %s_logf();",
		 name, name, name);
	free(psql(sql));
	for (int i = 0; i < N; i++)
		faucet_value_free(v[i]);
	faucet_value_free(old);
}

/* A staged batch is all-or-nothing: one whose last value the table refuses
 * (a CHECK constraint, met by the INSERT after the COPY into the staging
 * table succeeded) fails, and neither its updates of existing keys nor its
 * new keys are visible; the connection goes back to the pool usable (the
 * transaction rolled back), and the next batch writes exactly its own
 * rows. */
static void a_staged_batch_that_fails_writes_nothing(void **state)
{
	char name[64], sql[256];
	faucet_value *old = tu_v("{\"old\":1}"), *ours = tu_v("{\"ours\":1}"),
		     *bad = tu_v("{\"refused\":\"a\\tb\"}");
	faucet_entry e[4] = {{"f::a", ours}, {"f::new", ours}, {"f::b", ours}, {"f::c", bad}};
	faucet_store *s;

	(void)state;
	snprintf(name, sizeof(name), "stagefail_%d", getpid());
	s = open_created(name);
	snprintf(sql, sizeof(sql), "ALTER TABLE %s ADD CHECK (NOT value ? 'refused');", name);
	assert_psql(sql, "");
	assert_int_equal(faucet_store_put(s, "f::a", old), 0);
	assert_int_equal(faucet_store_put(s, "f::b", old), 0);
	assert_int_not_equal(faucet_store_put_batch(s, e, 4), 0);
	assert_non_null(strstr(faucet_error_last()->message, "cannot write a batch"));
	tu_assert_value(s, "f::a", "{\"old\":1}");
	tu_assert_value(s, "f::b", "{\"old\":1}");
	tu_assert_value(s, "f::new", NULL);
	tu_assert_value(s, "f::c", NULL);
	for (int round = 0; round < 3; round++) { /* the pool's connections, each used */
		assert_int_equal(faucet_store_put_batch(s, e, 3), 0);
		tu_assert_value(s, "f::new", "{\"ours\":1}");
	}
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s WHERE key LIKE 'f::%%';", name);
	assert_psql(sql, "3");
	faucet_store_free(s);
	snprintf(sql, sizeof(sql), "DROP TABLE %s;", name);
	free(psql(sql));
	faucet_value_free(old);
	faucet_value_free(ours);
	faucet_value_free(bad);
}

/* A batch of new keys into a table made another way: one whose key follows
 * the database's collation (the original's layout) goes by the staging table,
 * since a range of it does not order keys bytewise; one whose updated_at
 * has no default gets NOW() from the COPY's rows. */
static void a_batch_follows_the_table_layout(void **state)
{
	char name[64], sql[512];
	faucet_value *v = tu_v("{\"n\":1}");
	faucet_entry e[3] = {{"l::a", v}, {"l::b", v}, {"l::c", v}};
	faucet_store *s;

	(void)state;
	for (int collated = 0; collated < 2; collated++) {
		snprintf(name, sizeof(name), "layout%d_%d", collated, getpid());
		snprintf(sql, sizeof(sql),
			 "CREATE TABLE %s (key TEXT %s PRIMARY KEY, value JSONB NOT NULL, "
			 "updated_at TIMESTAMPTZ NOT NULL %s);",
			 name, collated ? "COLLATE \"C\"" : "", collated ? "" : "DEFAULT NOW()");
		assert_psql(sql, "");
		log_statements(name);
		s = open_table(name, "ensure_table=false");
		assert_int_equal(faucet_store_put_batch(s, e, 3), 0);
		assert_logged(name, collated ? "COPY" : "INSERT");
		snprintf(sql, sizeof(sql),
			 "SELECT count(*) FROM %s WHERE value = '{\"n\":1}' AND "
			 "updated_at > NOW() - interval '1 hour';",
			 name);
		assert_psql(sql, "3");
		faucet_store_free(s);
		snprintf(sql, sizeof(sql),
			 "DROP TABLE %s; DROP TABLE %s_log; DROP FUNCTION %s_logf();", name, name,
			 name);
		free(psql(sql));
	}
	faucet_value_free(v);
}

typedef struct {
	const faucet_value *const *want;
	size_t seen;
} scan_check;

static int check_scanned(const char *key, const faucet_value *value, void *arg)
{
	scan_check *c = arg;
	size_t i = (size_t)atoi(key + strlen("w::"));

	if (!faucet_value_equal(value, c->want[i]))
		fail_msg("scan_entries %s: read %s", key, faucet_value_json(value));
	c->seen++;
	return 0;
}

/* JSONB prints a space after every ':' and ',' between tokens, which the
 * store drops before parsing; spaces inside strings - also right after an
 * escaped quote or backslash - stay, through get, get_many and
 * scan_entries alike. */
static void values_read_back_without_the_spaces_jsonb_prints(void **state)
{
	static const char *const json[] = {
		"{\"a b\":\" x , y : z \",\"n\":[1,{\"k\":\" \"},-2.50]}",
		"{\"q\":\"\\\" , \\\" : \",\"bs\":\"\\\\\",\"t\":\" \\\\\\\" \"}",
		"[\" \",\"\",{\"\":\" , \"},[[]],{}]", "\"  \"", "18446744073709551615"};
	enum { N = sizeof(json) / sizeof(json[0]) };
	char name[64], keys[N][16];
	const char *key_list[N];
	faucet_value *v[N], *got[N] = {NULL};
	scan_check c = {(const faucet_value *const *)v, 0};
	faucet_store *s;

	(void)state;
	snprintf(name, sizeof(name), "squeeze_%d", getpid());
	s = open_table(name, NULL);
	for (int i = 0; i < N; i++) {
		faucet_value *out = NULL;

		v[i] = tu_v(json[i]);
		snprintf(keys[i], sizeof(keys[i]), "w::%d", i);
		key_list[i] = keys[i];
		assert_int_equal(faucet_store_put(s, keys[i], v[i]), 0);
		assert_int_equal(faucet_store_get(s, keys[i], &out), 0);
		if (!faucet_value_equal(out, v[i]))
			fail_msg("get %s: wrote %s, read %s", keys[i], json[i],
				 faucet_value_json(out));
		faucet_value_free(out);
	}
	assert_int_equal(faucet_store_get_many(s, key_list, N, got), 0);
	for (int i = 0; i < N; i++) {
		if (!faucet_value_equal(got[i], v[i]))
			fail_msg("get_many %s: read %s", keys[i], faucet_value_json(got[i]));
		faucet_value_free(got[i]);
	}
	assert_int_equal(faucet_store_scan_entries(s, "w::", check_scanned, &c), 0);
	assert_int_equal(c.seen, N);
	faucet_store_free(s);
	snprintf(name, sizeof(name), "DROP TABLE squeeze_%d;", getpid());
	free(psql(name));
	for (int i = 0; i < N; i++)
		faucet_value_free(v[i]);
}

static PGconn *raw_connect(void)
{
	PGconn *c = PQconnectdb(ts_env("FAUCET_TEST_PG_URL"));

	if (PQstatus(c) != CONNECTION_OK)
		fail_msg("connect: %s", PQerrorMessage(c));
	return c;
}

static void raw_exec(PGconn *c, const char *sql)
{
	PGresult *res = PQexec(c, sql);

	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		fail_msg("%s: %s", sql, PQerrorMessage(c));
	PQclear(res);
}

typedef struct {
	faucet_store *store;
	const faucet_entry *entries;
	const faucet_store_guard *guards; /* run_cas_batch, `count` of them */
	size_t count;
	int rc;
	int written; /* run_cas_batch */
	char message[512];
	atomic_int done;
} batch_call;

static void *run_batch(void *arg)
{
	batch_call *b = arg;

	b->rc = faucet_store_put_batch(b->store, b->entries, b->count);
	if (b->rc != 0)
		snprintf(b->message, sizeof(b->message), "%s", faucet_error_last()->message);
	atomic_store(&b->done, 1);
	return NULL;
}

static void *run_cas_batch(void *arg)
{
	batch_call *b = arg;

	b->rc = faucet__store_compare_and_put_batch(b->store, b->guards, b->count, &b->written);
	if (b->rc != 0)
		snprintf(b->message, sizeof(b->message), "%s", faucet_error_last()->message);
	atomic_store(&b->done, 1);
	return NULL;
}

/* Another session inserts `key` ("theirs") into `table` and keeps its
 * transaction open (*other); *monitor is a third session to watch the
 * server with. */
static void rival_insert(const char *table, const char *key, PGconn **other, PGconn **monitor)
{
	char sql[256];

	*other = raw_connect();
	*monitor = raw_connect();
	raw_exec(*other, "BEGIN");
	snprintf(sql, sizeof(sql), "INSERT INTO %s (key, value) VALUES ('%s', '\"theirs\"')",
		 table, key);
	raw_exec(*other, sql);
}

/* Wait until some backend waits for a lock held by backend `pid`; fails
 * when the batch finishes first or nothing waits within a minute.  Returns
 * the first word of the waiting statement. */
static char *wait_until_blocked_by(PGconn *monitor, int pid, batch_call *b)
{
	const struct timespec pause = {0, 1000000};
	time_t deadline = time(NULL) + 60;
	char text[16];
	const char *params[1] = {text};

	snprintf(text, sizeof(text), "%d", pid);
	for (;;) {
		PGresult *res = PQexecParams(monitor,
					     "SELECT split_part(query, ' ', 1) FROM pg_stat_activity "
					     "WHERE $1::int = ANY(pg_blocking_pids(pid))",
					     1, NULL, params, NULL, NULL, 0);
		char *waiting = NULL;

		if (PQresultStatus(res) != PGRES_TUPLES_OK)
			fail_msg("pg_stat_activity: %s", PQerrorMessage(monitor));
		if (PQntuples(res) > 0)
			waiting = strdup(PQgetvalue(res, 0, 0));
		PQclear(res);
		if (waiting != NULL)
			return waiting;
		if (atomic_load(&b->done))
			fail_msg("the batch did not wait for the uncommitted insert (rc %d: %s)",
				 b->rc, b->message);
		if (time(NULL) > deadline)
			fail_msg("nothing waited for the uncommitted insert within a minute");
		nanosleep(&pause, NULL);
	}
}

/* Another session inserts one of the batch's keys after the batch looked
 * (uncommitted, so invisible to it): the batch's insert - the COPY, or the
 * plain INSERT of the split statement - waits for that transaction, then
 * fails with a unique violation once it commits, and the batch is written
 * again as an update of that key.  Every key ends with the batch's value.
 * With `old`, one key exists beforehand, so the batch is no plain insert
 * and goes by the staging table, whose INSERT ... ON CONFLICT waits, then
 * updates the key; without, it goes by COPY, then by the staging table. */
static void race_a_batch(const char *prefix, int old)
{
	char name[64], sql[256];
	char keys[4][32];
	faucet_store *s;
	faucet_value *ours = tu_v("\"ours\""), *before = tu_v("\"old\"");
	faucet_entry e[4];
	batch_call b = {0};
	PGconn *other, *monitor;
	pthread_t thread;
	char *waiting;

	for (int i = 0; i < 4; i++) {
		static const char *const tail[] = {"a", "race", "b", "old"};
		snprintf(keys[i], sizeof(keys[i]), "r::%s", tail[i]);
		e[i] = (faucet_entry){keys[i], ours};
	}
	snprintf(name, sizeof(name), "%s_%d", prefix, getpid());
	s = open_created(name);
	if (old)
		assert_int_equal(faucet_store_put(s, "r::old", before), 0);
	rival_insert(name, "r::race", &other, &monitor);
	b.store = s;
	b.entries = e;
	b.count = 4;
	assert_int_equal(pthread_create(&thread, NULL, run_batch, &b), 0);
	waiting = wait_until_blocked_by(monitor, PQbackendPID(other), &b);
	assert_string_equal(waiting, old ? "INSERT" : "COPY");
	free(waiting);
	raw_exec(other, "COMMIT");
	assert_int_equal(pthread_join(thread, NULL), 0);
	if (b.rc != 0)
		fail_msg("put_batch: %s", b.message);
	for (int i = 0; i < 4; i++)
		tu_assert_value(s, keys[i], "\"ours\"");
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s;", name);
	assert_psql(sql, "4");
	PQfinish(other);
	PQfinish(monitor);
	faucet_store_free(s);
	snprintf(sql, sizeof(sql), "DROP TABLE %s;", name);
	free(psql(sql));
	faucet_value_free(ours);
	faucet_value_free(before);
}

static void a_batch_racing_an_insert_of_one_of_its_keys_still_lands(void **state)
{
	(void)state;
	race_a_batch("race", 1);
}

static void a_copied_batch_racing_an_insert_of_one_of_its_keys_still_lands(void **state)
{
	(void)state;
	race_a_batch("copyrace", 0);
}

/* A compare-and-put batch expects c::race absent, and another session
 * inserts it after the batch looked (uncommitted, so invisible to the
 * batch's SELECT ... FOR UPDATE): the batch's plain INSERT of the key
 * waits for that transaction - the test commits it once the server shows
 * that wait (pg_blocking_pids), not after a fixed time - and fails with a
 * unique violation once it commits.  The key no longer holds, so nothing of the batch is written
 * and the batch says so (*written 0, no error).  With `stays`, the batch
 * meant the key to stay absent: its null placeholder claims the key the
 * same way. */
static void race_a_cas_batch(int stays, size_t pad)
{
	char name[64], sql[256], *waiting, (*pads)[24] = calloc(pad ? pad : 1, sizeof(*pads));
	faucet_value *one = tu_v("1"), *two = tu_v("2"), *ours = tu_v("\"ours\"");
	faucet_value *theirs = tu_v("\"theirs\"");
	faucet_store_guard *g = calloc(3 + pad, sizeof(*g));
	batch_call b = {0};

	assert_non_null(g);
	assert_non_null(pads);
	g[0] = (faucet_store_guard){"c::a", one, two};
	g[1] = (faucet_store_guard){"c::race", NULL, stays ? NULL : ours};
	g[2] = (faucet_store_guard){"c::new", NULL, ours};
	for (size_t i = 0; i < pad; i++) {
		snprintf(pads[i], sizeof(pads[i]), "c::pad%04zu", i);
		g[3 + i] = (faucet_store_guard){pads[i], NULL, ours};
	}
	PGconn *other, *monitor;
	pthread_t thread;
	faucet_store *s;

	snprintf(name, sizeof(name), "casrace_%d", getpid());
	s = open_created(name);
	assert_int_equal(faucet_store_put(s, "c::a", one), 0);
	rival_insert(name, "c::race", &other, &monitor);
	b.store = s;
	b.guards = g;
	b.count = 3 + pad;
	b.written = -1;
	assert_int_equal(pthread_create(&thread, NULL, run_cas_batch, &b), 0);
	waiting = wait_until_blocked_by(monitor, PQbackendPID(other), &b);
	/* (The staged batch's request begins with its UPDATE of the locked
	 * rows; the INSERT after it is what waits.) */
	assert_string_equal(waiting, pad ? "UPDATE" : "INSERT");
	free(waiting);
	raw_exec(other, "COMMIT");
	assert_int_equal(pthread_join(thread, NULL), 0);
	if (b.rc != 0)
		fail_msg("compare_and_put_batch: %s", b.message);
	assert_int_equal(b.written, 0);
	tu_assert_value(s, "c::a", "1");
	tu_assert_value(s, "c::race", "\"theirs\"");
	tu_assert_value(s, "c::new", NULL);
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s;", name);
	assert_psql(sql, "2");
	/* The connection went back to the pool idle: a batch over what the
	 * keys hold now lands. */
	g[1] = (faucet_store_guard){"c::race", theirs, NULL};
	assert_int_equal(faucet__store_compare_and_put_batch(s, g, 2, &b.written), 0);
	assert_int_equal(b.written, 1);
	tu_assert_value(s, "c::a", "2");
	tu_assert_value(s, "c::race", NULL);
	PQfinish(other);
	PQfinish(monitor);
	faucet_store_free(s);
	snprintf(sql, sizeof(sql), "DROP TABLE %s;", name);
	free(psql(sql));
	faucet_value_free(one);
	faucet_value_free(two);
	faucet_value_free(ours);
	faucet_value_free(theirs);
	free(g);
	free(pads);
}

static void a_cas_batch_racing_an_insert_of_a_key_it_expects_absent_is_refused(void **state)
{
	(void)state;
	race_a_cas_batch(0, 0);
}

static void a_cas_batch_racing_an_insert_of_a_key_to_stay_absent_is_refused(void **state)
{
	(void)state;
	race_a_cas_batch(1, 0);
}

/* The same for a batch of more than FAUCET_STORE_CAS_BATCH_MAX puts, whose
 * values are staged by COPY (an import's chunk and its part): its plain
 * INSERT of the fresh keys waits and fails the same way, and nothing is
 * written. */
static void a_big_cas_batch_racing_an_insert_of_a_key_it_expects_absent_is_refused(void **state)
{
	(void)state;
	race_a_cas_batch(0, FAUCET_STORE_CAS_BATCH_MAX);
}

/* A table laid out as the store creates it, made before any store opens
 * it, so that the store's first call runs on a fresh connection (which the
 * pool never retries). */
static void create_table(const char *name)
{
	char sql[256];

	snprintf(sql, sizeof(sql),
		 "CREATE TABLE %s (key TEXT COLLATE \"C\" PRIMARY KEY, value JSONB NOT NULL, "
		 "updated_at TIMESTAMPTZ NOT NULL DEFAULT NOW());",
		 name);
	assert_psql(sql, "");
}

static void assert_rows(const char *table, const char *prefix, const char *want)
{
	char sql[256];

	snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s WHERE starts_with(key, '%s');", table,
		 prefix);
	assert_psql(sql, want);
}

/* The server ends the connection while a batch's COPY waits for another
 * session's uncommitted insert of one of its keys: the server says why
 * (57P01), the COPY had not ended and cannot have committed, so the batch
 * fails as FAUCET_EUNAVAILABLE and none of its keys landed.  The store
 * writes the batch on a new connection at once. */
static void a_connection_lost_in_a_batch_copy_writes_nothing(void **state)
{
	enum { N = 50 };
	char name[64], sql[256], keys[N][32], *waiting;
	faucet_value *v = tu_v("{\"cursor\":\"a\\\\tb\"}");
	faucet_entry e[N];
	batch_call b = {0};
	PGconn *other, *monitor;
	pthread_t thread;
	PGresult *res;
	const char *params[1] = {sql};
	faucet_store *s;

	(void)state;
	snprintf(name, sizeof(name), "lost_%d", getpid());
	create_table(name);
	for (int i = 0; i < N; i++) {
		snprintf(keys[i], sizeof(keys[i]), "l::k%03d", i);
		e[i] = (faucet_entry){keys[i], v};
	}
	other = raw_connect();
	monitor = raw_connect();
	raw_exec(other, "BEGIN");
	snprintf(sql, sizeof(sql), "INSERT INTO %s (key, value) VALUES ('l::k025', '1')", name);
	raw_exec(other, sql);
	s = open_table(name, NULL);
	b.store = s;
	b.entries = e;
	b.count = N;
	assert_int_equal(pthread_create(&thread, NULL, run_batch, &b), 0);
	waiting = wait_until_blocked_by(monitor, PQbackendPID(other), &b);
	assert_string_equal(waiting, "COPY");
	free(waiting);
	snprintf(sql, sizeof(sql), "%d", PQbackendPID(other));
	res = PQexecParams(monitor,
			   "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
			   "WHERE $1::int = ANY(pg_blocking_pids(pid))",
			   1, NULL, params, NULL, NULL, 0);
	assert_int_equal(PQresultStatus(res), PGRES_TUPLES_OK);
	assert_string_equal(PQgetvalue(res, 0, 0), "1");
	PQclear(res);
	assert_int_equal(pthread_join(thread, NULL), 0);
	if (b.rc != FAUCET_EUNAVAILABLE)
		fail_msg("put_batch returned %d: %s", b.rc, b.message);
	assert_non_null(strstr(b.message, "cannot write a batch"));
	assert_non_null(strstr(b.message, name));
	raw_exec(other, "ROLLBACK");
	assert_rows(name, "l::", "0");
	assert_int_equal(faucet_store_put_batch(s, e, N), 0);
	assert_rows(name, "l::", "50");
	tu_assert_value(s, "l::k025", "{\"cursor\":\"a\\\\tb\"}");
	PQfinish(other);
	PQfinish(monitor);
	faucet_store_free(s);
	snprintf(sql, sizeof(sql), "DROP TABLE %s;", name);
	free(psql(sql));
	faucet_value_free(v);
}

static void assert_timeout(int rc, const char *why)
{
	if (rc != FAUCET_ETIMEOUT)
		fail_msg("expected FAUCET_ETIMEOUT, got %d: %s", rc, faucet_error_last()->message);
	assert_true(faucet_error_retryable(rc));
	tu_assert_error_contains("postgres state store");
	tu_assert_error_contains(why);
}

/* A statement that waits past the session's statement_timeout (set for
 * the store's connections through libpq's options in the URL) is
 * cancelled by the server: FAUCET_ETIMEOUT, retryable - for a read blocked
 * by a lock on the table, and for a batch's COPY waiting for another
 * session's uncommitted insert of one of its keys, which writes nothing. */
static void a_statement_past_statement_timeout_is_a_timeout(void **state)
{
	char name[64], sql[256];
	faucet_value *v = tu_v("1"), *out = NULL;
	faucet_entry e[3] = {{"t::a", v}, {"t::m", v}, {"t::z", v}};
	faucet_store *s;
	PGconn *other;

	(void)state;
	snprintf(name, sizeof(name), "stmt_timeout_%d", getpid());
	s = open_table(name, "options=-cstatement_timeout%3D200");
	assert_int_equal(faucet_store_get(s, "t::a", &out), 0); /* creates the table */
	other = raw_connect();
	raw_exec(other, "BEGIN");
	snprintf(sql, sizeof(sql), "INSERT INTO %s (key, value) VALUES ('t::m', '2')", name);
	raw_exec(other, sql);
	assert_timeout(faucet_store_put_batch(s, e, 3), "statement timeout");
	tu_assert_error_contains("cannot write a batch");
	snprintf(sql, sizeof(sql), "LOCK TABLE %s IN ACCESS EXCLUSIVE MODE", name);
	raw_exec(other, sql);
	assert_timeout(faucet_store_get(s, "t::a", &out), "statement timeout");
	assert_null(out);
	raw_exec(other, "ROLLBACK");
	assert_rows(name, "t::", "0");
	assert_int_equal(faucet_store_put_batch(s, e, 3), 0);
	assert_rows(name, "t::", "3");
	PQfinish(other);
	faucet_store_free(s);
	snprintf(sql, sizeof(sql), "DROP TABLE %s;", name);
	free(psql(sql));
	faucet_value_free(v);
}

/* lock_timeout bounds the wait for a lock alone; running out of it
 * (lock_not_available) is a timeout too, not a plain failure. */
static void a_lock_wait_past_lock_timeout_is_a_timeout(void **state)
{
	char name[64], sql[256];
	faucet_value *v = tu_v("1"), *out = NULL;
	faucet_store *s;
	PGconn *other;

	(void)state;
	snprintf(name, sizeof(name), "lock_timeout_%d", getpid());
	s = open_table(name, "options=-clock_timeout%3D200");
	assert_int_equal(faucet_store_put(s, "t::a", v), 0);
	other = raw_connect();
	raw_exec(other, "BEGIN");
	snprintf(sql, sizeof(sql), "LOCK TABLE %s IN ACCESS EXCLUSIVE MODE", name);
	raw_exec(other, sql);
	assert_timeout(faucet_store_get(s, "t::a", &out), "lock timeout");
	assert_null(out);
	assert_timeout(faucet_store_put(s, "t::a", v), "lock timeout");
	raw_exec(other, "ROLLBACK");
	tu_assert_value(s, "t::a", "1");
	PQfinish(other);
	faucet_store_free(s);
	snprintf(sql, sizeof(sql), "DROP TABLE %s;", name);
	free(psql(sql));
	faucet_value_free(v);
}

static faucet_store *open_restart_store(void)
{
	char *url = url_with(ts_env("FAUCET_TEST_PG_RESTART_URL"), "table=restart_test");
	faucet_store *s = NULL;

	if (faucet_store_open_url(&s, url) != 0)
		fail_msg("open: %s", faucet_error_last()->message);
	free(url);
	return s;
}

static void a_restarted_server_is_reconnected(void **state)
{
	faucet_store *s = open_restart_store();

	(void)state;
	ts_assert_reconnects_after_restart(s, "pg", "postgres state store");
	/* Once more, then a plain read on the stale pool. */
	ts_ctl("pg-stop");
	ts_ctl("pg-start");
	tu_assert_value(s, "k", "{\"n\":1}");
	assert_int_equal(faucet_store_delete(s, "k"), 0);
	faucet_store_free(s);
}

typedef struct {
	size_t seen;
	char table[64];
} drop_ctx;

/* At the first entry, end the server process that streams them (another
 * session's pg_terminate_backend, as an administrator or a failover would). */
static int drop_on_first(const char *key, const faucet_value *value, void *arg)
{
	drop_ctx *d = arg;
	char sql[256], *out;

	(void)key;
	(void)value;
	if (d->seen++ == 0) {
		snprintf(sql, sizeof(sql),
			 "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
			 "WHERE query LIKE 'COPY (SELECT key, value::text FROM \"%s\"%%';",
			 d->table);
		out = psql(sql);
		assert_string_equal(out, "1");
		free(out);
	}
	return 0;
}

/* A connection dropped in the middle of a streamed read is an error that
 * says so - FAUCET_EUNAVAILABLE, naming the table - never a short but
 * "complete" listing, and the store works again at once. */
static void a_stream_cut_mid_way_is_an_error(void **state)
{
	enum { N = 200000, CHUNK = 5000 };
	faucet_entry *e = calloc(CHUNK, sizeof(*e));
	char (*names)[32] = calloc(CHUNK, sizeof(*names));
	faucet_value *v = tu_v("{\"cursor\":\"2026-11-30T00:00:00+00:00\",\"n\":123456789}");
	drop_ctx d = {0, ""};
	faucet_store *s;
	faucet_value *out = NULL;
	char sql[128];

	(void)state;
	assert_non_null(e);
	assert_non_null(names);
	snprintf(d.table, sizeof(d.table), "cut_%d", getpid());
	s = open_table(d.table, NULL);
	for (int from = 0; from < N; from += CHUNK) {
		for (int i = 0; i < CHUNK; i++) {
			snprintf(names[i], sizeof(names[i]), "p::k%07d", from + i);
			e[i].key = names[i];
			e[i].value = v;
		}
		assert_int_equal(faucet_store_put_batch(s, e, CHUNK), 0);
	}
	assert_int_equal(faucet_store_scan_entries(s, "p::", drop_on_first, &d), FAUCET_EUNAVAILABLE);
	assert_true(d.seen >= 1);
	assert_true(d.seen < N);
	tu_assert_error_contains("cannot read the entries");
	tu_assert_error_contains(d.table);
	assert_int_equal(faucet_store_get(s, "p::k0000001", &out), 0);
	assert_true(faucet_value_equal(out, v));
	faucet_value_free(out);
	faucet_store_free(s);
	snprintf(sql, sizeof(sql), "DROP TABLE \"%s\";", d.table);
	free(psql(sql));
	faucet_value_free(v);
	free(names);
	free(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rows_are_shared_with_plain_sql),
		cmocka_unit_test(the_table_is_created_with_the_original_layout),
		cmocka_unit_test(a_missing_table_without_ensure_table_is_a_clear_error),
		cmocka_unit_test(bad_options_are_config_errors),
		cmocka_unit_test(an_unreachable_server_fails_fast_and_clearly),
		cmocka_unit_test(a_wrong_password_is_refused_without_showing_it),
		cmocka_unit_test(values_jsonb_cannot_give_back_are_refused),
		cmocka_unit_test(a_pool_of_one_connection_serves_every_call),
		cmocka_unit_test(a_batch_updates_existing_keys_and_inserts_new_ones),
		cmocka_unit_test(a_batch_of_new_keys_is_copied_exactly),
		cmocka_unit_test(a_batch_follows_the_table_layout),
		cmocka_unit_test(values_read_back_without_the_spaces_jsonb_prints),
		cmocka_unit_test(a_batch_racing_an_insert_of_one_of_its_keys_still_lands),
		cmocka_unit_test(a_copied_batch_racing_an_insert_of_one_of_its_keys_still_lands),
		cmocka_unit_test(a_cas_batch_racing_an_insert_of_a_key_it_expects_absent_is_refused),
		cmocka_unit_test(a_cas_batch_racing_an_insert_of_a_key_to_stay_absent_is_refused),
		cmocka_unit_test(a_big_cas_batch_racing_an_insert_of_a_key_it_expects_absent_is_refused),
		cmocka_unit_test(a_connection_lost_in_a_batch_copy_writes_nothing),
		cmocka_unit_test(a_staged_batch_over_existing_keys_is_exact),
		cmocka_unit_test(a_staged_batch_that_fails_writes_nothing),
		cmocka_unit_test(a_statement_past_statement_timeout_is_a_timeout),
		cmocka_unit_test(a_lock_wait_past_lock_timeout_is_a_timeout),
		cmocka_unit_test(a_stream_cut_mid_way_is_an_error),
		cmocka_unit_test(a_restarted_server_is_reconnected),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
