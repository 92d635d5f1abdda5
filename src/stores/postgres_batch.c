/*
 * postgres_batch.c - the PostgreSQL store's bulk paths: every entry under a
 * prefix streamed with COPY ... TO STDOUT, and a batch of writes (import,
 * copy, a run's restore) by COPY ... FROM STDIN.
 *
 * A batch of new keys (no row lies in its key range) is one COPY into the
 * table.  Any other batch is COPY into a temporary staging table, then one
 * INSERT ... ON CONFLICT DO UPDATE from it, in one transaction: the rows
 * travel in COPY's text format instead of as one JSON document the server
 * parses and takes apart (jsonb_each), which was most of the server's time
 * for a batch over existing keys.  A batch the staging path cannot write
 * (a key given twice) goes by the one statement over a JSON object.
 * Every path is all-or-nothing: one statement, or one transaction.
 *
 * And compare_and_put_batch: compare-and-puts in one transaction of two
 * round trips (faucet__pg_cas_batch_on); a big batch of puts stages its
 * values by COPY (cas_batch_stage_commit).
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "values/value_internal.h"
#include "stores/postgres_internal.h"

/* ---- streaming every entry under a prefix ------------------------------ */

/* Undo COPY's text-format escaping of one field in place (PostgreSQL
 * writes \\ \b \f \n \r \t \v; JSON text holds no raw control bytes, so
 * in practice only doubled backslashes occur).  Returns the new length. */
static size_t copy_unescape(char *p, size_t len)
{
	size_t r = 0, w = 0;

	while (r < len) {
		char c = p[r++];

		if (c == '\\' && r < len) {
			char e = p[r++];
			switch (e) {
			case 'b': c = '\b'; break;
			case 'f': c = '\f'; break;
			case 'n': c = '\n'; break;
			case 'r': c = '\r'; break;
			case 't': c = '\t'; break;
			case 'v': c = '\v'; break;
			default: c = e; break;
			}
		}
		p[w++] = c;
	}
	return w;
}

/* One COPY row "key<TAB>value\n": parse the value, hand both to fn. */
static int copy_row_to_fn(pg_store *s, char *row, int len, faucet_entry_fn fn, void *ctx,
			  int *stopped)
{
	char *tab = memchr(row, '\t', (size_t)len);
	faucet_value *v = NULL;
	size_t vlen;
	int rc;

	if (tab == NULL || len < 2 || row[len - 1] != '\n')
		return faucet__pg_fail(s, FAUCET_ERROR, "cannot read the entries", "malformed COPY row");
	*tab = '\0';
	vlen = copy_unescape(tab + 1, (size_t)(len - 1) - (size_t)(tab + 1 - row));
	rc = faucet_value_parse(&v, tab + 1, faucet__pg_jsonb_squeeze(tab + 1, vlen));
	if (rc != 0)
		return rc == FAUCET_ENOMEM ? rc : faucet__pg_bad_stored_value(s, row);
	rc = fn(row, v, ctx);
	faucet_value_free(v);
	if (rc != 0)
		*stopped = rc;
	return 0;
}

/*
 * One ordered query streamed with COPY ... TO STDOUT: a single snapshot of
 * the namespace, and the server sends rows while we parse the ones before
 * them - a cursor's FETCHes stop the server at every batch, which made the
 * export twice as slow - and we hold one row at a time however large the
 * namespace.  (A listing followed by reads of each chunk of keys costs an
 * index probe per key, and a listing of a million keys alone is a result
 * of a million rows.)  COPY takes no parameters, so the prefix goes in as a
 * literal quoted by libpq.  JSONB prints with spaces after ':' and ',',
 * which go before the value is parsed (faucet__pg_jsonb_squeeze).  When fn stops
 * early, or anything fails, the connection is still inside the COPY and
 * is dropped rather than drained (pg_broken).
 */
/* What scan_data leaves out, in SQL: the run bookkeeping keys of
 * faucet__is_bookkeeping_key (a segment "__rollback__" after the first, or
 * a last segment "__lease__" or "__status__").  '_' is a LIKE wildcard and
 * is escaped with '!' (a backslash would depend on
 * standard_conforming_strings).  The front-end applies the exact rule
 * again. */
#define PG_NOT_BOOKKEEPING                                                          \
	" AND key NOT LIKE '%::!_!_rollback!_!_' ESCAPE '!'"                        \
	" AND key NOT LIKE '%::!_!_rollback!_!_::%' ESCAPE '!'"                     \
	" AND key NOT LIKE '%::!_!_lease!_!_' ESCAPE '!'"                           \
	" AND key NOT LIKE '%::!_!_status!_!_' ESCAPE '!'"

int faucet__pg_scan_entries_on(pg_store *s, PGconn *c, const char *prefix, int data_only,
			      faucet_entry_fn fn, void *ctx)
{
	char *literal = PQescapeLiteral(c, prefix, strlen(prefix));
	char *sql = NULL, *quoted;
	PGresult *res;
	int rc = 0, stopped = 0;

	if (literal == NULL)
		return faucet__pg_fail(s, FAUCET_ENOMEM, "cannot read the entries", PQerrorMessage(c));
	quoted = faucet__sprintf("COPY (SELECT key, value::text FROM {table} WHERE starts_with(key, "
				 "%s)%s ORDER BY key COLLATE \"C\") TO STDOUT",
				 literal, data_only ? PG_NOT_BOOKKEEPING : "");
	PQfreemem(literal);
	if (quoted != NULL)
		sql = faucet__pg_statement_sql(quoted, s->quoted);
	free(quoted);
	if (sql == NULL)
		return FAUCET_ENOMEM;
	res = PQexec(c, sql);
	free(sql);
	rc = faucet__pg_result_ok(s, c, res, PGRES_COPY_OUT, "cannot read the entries");
	if (rc != 0)
		return rc;
	PQclear(res);
	for (;;) {
		char *row = NULL;
		int len = PQgetCopyData(c, &row, 0);

		if (len < 0)
			break; /* -1: done; -2: failed (the result below says why) */
		rc = copy_row_to_fn(s, row, len, fn, ctx, &stopped);
		PQfreemem(row);
		if (rc != 0 || stopped != 0)
			return rc != 0 ? rc : stopped;
	}
	res = PQgetResult(c);
	rc = faucet__pg_result_ok(s, c, res, PGRES_COMMAND_OK, "cannot read the entries");
	if (rc == 0) {
		PQclear(res);
		while ((res = PQgetResult(c)) != NULL)
			PQclear(res);
	}
	return rc;
}

/* ---- writing a batch ---------------------------------------------------- */

/* The batch as one JSON object {key: value, ...}.  Keys are valid state
 * keys ([A-Za-z0-9_.:/-]), so they need no JSON escaping; a key given
 * twice keeps its last value (JSONB keeps the last of duplicate members),
 * as one-by-one puts would. */
static char *batch_object(const faucet_entry *entries, size_t count)
{
	faucet_buf doc = FAUCET_BUF_INIT;

	(void)faucet__buf_putc(&doc, '{');
	for (size_t i = 0; i < count; i++) {
		(void)faucet__buf_printf(&doc, "%s\"%s\":", i ? "," : "", entries[i].key);
		(void)faucet__buf_put(&doc, faucet_value_json(entries[i].value),
				     faucet_value_len(entries[i].value));
	}
	(void)faucet__buf_putc(&doc, '}');
	if (doc.failed) {
		faucet__buf_dispose(&doc);
		return NULL;
	}
	return faucet__buf_detach(&doc);
}

/* Two statements, because the one that is right in every case is not the
 * fast one.  INSERT ... ON CONFLICT DO UPDATE is safe against concurrent
 * writers, but every new row costs a speculative insertion (and its WAL
 * records) in case another session inserts the same key meanwhile.  So a
 * batch first updates the keys that exist and plain-inserts the others in
 * one statement.  That INSERT fails with unique_violation only when another
 * session inserted one of our keys after our snapshot; the statement
 * is atomic, so nothing was written and the batch runs again as the upsert,
 * on the same connection.  Any other error is the batch's error. */
static int batch_by_statement(pg_store *s, PGconn *c, pg_args *a)
{
	char *doc = batch_object(a->entries, a->count);
	const char *params[1] = {doc};
	PGresult *res;
	const char *state;
	int rc;

	if (doc == NULL)
		return FAUCET_ENOMEM;
	res = faucet__pg_run_prepared(c, "faucet_batch_split", 1, params);
	if (res != NULL && PQresultStatus(res) == PGRES_COMMAND_OK) {
		PQclear(res);
		free(doc);
		return 0;
	}
	state = res != NULL ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	if (state == NULL || strcmp(state, PG_UNIQUE_VIOLATION) != 0) {
		rc = faucet__pg_write_result_ok(s, c, res, PGRES_COMMAND_OK, "cannot write a batch");
	} else {
		PQclear(res);
		rc = faucet__pg_command_on(s, c, "faucet_batch_upsert", 1, params, "cannot write a batch",
				   NULL);
	}
	free(doc);
	return rc;
}

/* Append one field in COPY's text format: backslash, tab, newline and
 * carriage return mean escape, column end and row end there, so each goes
 * as its backslash escape; every other byte goes as it is.  Compact JSON
 * holds no raw tab, newline or CR, but its string escapes are full of
 * backslashes - the JSON text "\\t" (a backslash, then t) sent unescaped
 * would arrive as a tab. */
static void copy_field(faucet_buf *b, const char *p)
{
	for (;;) {
		size_t run = strcspn(p, "\\\t\n\r");

		(void)faucet__buf_put(b, p, run);
		p += run;
		if (*p == '\0')
			return;
		(void)faucet__buf_putc(b, '\\');
		(void)faucet__buf_putc(b, *p == '\t' ? 't' : *p == '\n' ? 'n' : *p == '\r' ? 'r' : '\\');
		p++;
	}
}

/* The batch's smallest and largest key, bytewise. */
static void batch_range(const faucet_entry *entries, size_t count, const char **lo,
			const char **hi)
{
	*lo = *hi = entries[0].key;
	for (size_t i = 1; i < count; i++) {
		if (strcmp(entries[i].key, *lo) < 0)
			*lo = entries[i].key;
		else if (strcmp(entries[i].key, *hi) > 0)
			*hi = entries[i].key;
	}
}

/* The batch as COPY rows "key<TAB>value", with "<TAB>now" for updated_at
 * unless it defaults to now(): the timestamp input "now" is the
 * transaction's start time, what NOW() returns in the statements. */
static int batch_rows(const faucet_entry *entries, size_t count, int with_now,
		      faucet_buf *rows)
{
	for (size_t i = 0; i < count; i++) {
		copy_field(rows, entries[i].key);
		(void)faucet__buf_putc(rows, '\t');
		copy_field(rows, faucet_value_json(entries[i].value));
		(void)faucet__buf_puts(rows, with_now ? "\tnow\n" : "\n");
	}
	return rows->failed ? FAUCET_ENOMEM : 0;
}

/* Whether any row lies between lo and hi: then some key of the batch may
 * exist, and the batch is no plain insert. */
static int batch_range_taken(pg_store *s, PGconn *c, const char *lo, const char *hi, int *taken)
{
	const char *params[2] = {lo, hi};
	PGresult *res = faucet__pg_run_prepared(c, "faucet_batch_probe", 2, params);
	int rc = faucet__pg_result_ok(s, c, res, PGRES_TUPLES_OK, "cannot write a batch");

	if (rc != 0)
		return rc;
	*taken = strcmp(PQgetvalue(res, 0, 0), "f") != 0;
	PQclear(res);
	return 0;
}

/* Read the end of a COPY: its result, then nothing, so that the connection
 * is idle again.  A unique_violation - a key inserted by another session
 * since the probe, or a key given twice in the batch - wrote nothing (the
 * COPY is one statement) and leaves *copied 0 for the statement path. */
static int copy_finish(pg_store *s, PGconn *c, int *copied)
{
	PGresult *res = PQgetResult(c), *more;
	const char *state = res != NULL ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	int rc = 0;

	if (res != NULL && PQresultStatus(res) == PGRES_COMMAND_OK) {
		*copied = 1;
		PQclear(res);
	} else if (state != NULL && strcmp(state, PG_UNIQUE_VIOLATION) == 0) {
		PQclear(res);
	} else {
		rc = faucet__pg_write_result_ok(s, c, res, PGRES_COMMAND_OK, "cannot write a batch");
	}
	while ((more = PQgetResult(c)) != NULL)
		PQclear(more);
	return rc;
}

/* Send the rows and the end of data, then read the server's answer.  When
 * libpq cannot send them: a lost connection wrote nothing (the COPY had
 * not ended); a COPY the server already ended with an error has that
 * error waiting in its result; else libpq itself failed (out of memory),
 * and the COPY is abandoned with CopyFail. */
static int copy_send(pg_store *s, PGconn *c, const faucet_buf *rows, int *copied)
{
	char *why;
	PGresult *res;
	int rc;

	if (PQputCopyData(c, rows->ptr, (int)rows->len) == 1 && PQputCopyEnd(c, NULL) == 1)
		return copy_finish(s, c, copied);
	if (PQstatus(c) == CONNECTION_BAD)
		return faucet__pg_fail(s, FAUCET_EUNAVAILABLE, "cannot write a batch", PQerrorMessage(c));
	why = faucet__strdup(PQerrorMessage(c));
	if (PQputCopyEnd(c, "faucet could not send the rows") != 1) {
		free(why);
		return copy_finish(s, c, copied);
	}
	while ((res = PQgetResult(c)) != NULL)
		PQclear(res);
	rc = faucet__pg_fail(s, FAUCET_ERROR, "cannot write a batch", why ? why : "libpq failed");
	free(why);
	return rc;
}

/*
 * The fast way to write new keys: COPY, which takes about 60% of the
 * statements' time per row (no JSON object to parse and take apart, no
 * join against the rows updated; 25 ms instead of 40 for 10,000 keys).  COPY only inserts, so it is used when
 * one index range probe shows that no row lies between the batch's
 * smallest and largest key - which proves that none of its keys exists
 * only where the index orders by bytes, as the range was computed
 * (key_bytewise).  That is the import into a new namespace, and a copy.
 * The COPY is one statement, so the batch stays all-or-nothing: when it
 * meets a key that exists after all (another session inserted it since
 * the probe) it fails with unique_violation, nothing is written, and the
 * batch is written by the statements instead, as faucet__pg_batch_on's comment says.
 * *copied says whether the COPY wrote the batch.
 *
 * What reached the server: the COPY commits only once the server has read
 * the end-of-data message, so a connection lost before PQputCopyEnd
 * queued it wrote nothing (FAUCET_EUNAVAILABLE); lost after that, the
 * outcome is unknown (faucet__pg_write_result_ok).
 */
/* entries[0..count) by one COPY into the table, all or nothing: *copied
 * 0 (no error) when a key exists (unique_violation).  FAUCET_EUNSUPPORTED,
 * with nothing sent, when the rows are more than one COPY message carries
 * (2 GB): the caller goes another way. */
static int copy_into_table(pg_store *s, PGconn *c, const faucet_entry *entries, size_t count,
			   int *copied)
{
	faucet_buf rows = FAUCET_BUF_INIT;
	char *sql;
	PGresult *res;
	int rc = batch_rows(entries, count, !s->default_now, &rows);

	*copied = 0;
	if (rc == 0 && rows.len > INT_MAX - 5)
		rc = FAUCET_EUNSUPPORTED;
	if (rc != 0) {
		faucet__buf_dispose(&rows);
		return rc;
	}
	sql = faucet__pg_statement_sql(s->default_now ? "COPY {table} (key, value) FROM STDIN"
					   : "COPY {table} (key, value, updated_at) FROM STDIN",
			    s->quoted);
	if (sql == NULL) {
		faucet__buf_dispose(&rows);
		return FAUCET_ENOMEM;
	}
	res = PQexec(c, sql);
	free(sql);
	rc = faucet__pg_result_ok(s, c, res, PGRES_COPY_IN, "cannot write a batch");
	if (rc == 0) {
		PQclear(res);
		rc = copy_send(s, c, &rows, copied);
	}
	faucet__buf_dispose(&rows);
	return rc;
}

static int batch_by_copy(pg_store *s, PGconn *c, pg_args *a, int *copied)
{
	const char *lo, *hi;
	int taken = 1, rc;

	*copied = 0;
	batch_range(a->entries, a->count, &lo, &hi);
	rc = batch_range_taken(s, c, lo, hi, &taken);
	if (rc != 0 || taken)
		return rc;
	rc = copy_into_table(s, c, a->entries, a->count, copied);
	return rc == FAUCET_EUNSUPPORTED ? 0 : rc; /* by the statements */
}

/*
 * Any batch that is not known to be new keys only: COPY into a temporary
 * staging table, then one INSERT ... ON CONFLICT DO UPDATE from it, in one
 * transaction (BEGIN; CREATE TEMP TABLE IF NOT EXISTS - once per session,
 * ON COMMIT DELETE ROWS empties it at every commit - then the COPY, then
 * "INSERT ...; COMMIT" in one request).  All-or-nothing: nothing of the
 * batch is visible before the COMMIT, and a failure at any step before it
 * rolls the transaction back.  *staged says whether this path wrote the
 * batch: a batch that gives a key twice makes ON CONFLICT DO UPDATE fail
 * with cardinality_violation (it would affect a row twice), writes nothing,
 * and goes by the JSON statement instead, which keeps the last value.
 *
 * What reached the server: a connection lost before the INSERT and COMMIT
 * were sent committed nothing.  The COPY's own lost reply is reported as
 * FAUCET_EUNKNOWN, as for the plain COPY (copy_finish), although here the
 * transaction cannot have committed: the caller is told less than it could
 * be, never that nothing was written when it was.  A reply lost after the
 * INSERT and COMMIT were sent is FAUCET_EUNKNOWN.
 */
#define PG_STAGE "pg_temp.faucet_batch_stage"
#define PG_CARDINALITY_VIOLATION "21000"

/* Leave no transaction open on a connection going back to the pool (one
 * that cannot even roll back is dropped by the pool: pg_broken). */
static void stage_rollback(PGconn *c)
{
	if (PQstatus(c) == CONNECTION_OK && PQtransactionStatus(c) != PQTRANS_IDLE)
		PQclear(PQexec(c, "ROLLBACK"));
}

/* Read the INSERT's and the COMMIT's results, then nothing. */
static int stage_finish(pg_store *s, PGconn *c, int *staged)
{
	PGresult *res = PQgetResult(c), *more;
	const char *state = res != NULL ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	int rc;

	if (state != NULL && strcmp(state, PG_CARDINALITY_VIOLATION) == 0) {
		PQclear(res);
		rc = 0; /* a key twice: nothing written, the statement path */
	} else {
		rc = faucet__pg_write_result_ok(s, c, res, PGRES_COMMAND_OK, "cannot write a batch");
		if (rc == 0) {
			PQclear(res);
			res = PQgetResult(c); /* the COMMIT's */
			rc = faucet__pg_write_result_ok(s, c, res, PGRES_COMMAND_OK,
							"cannot write a batch");
			if (rc == 0)
				PQclear(res);
			*staged = rc == 0;
		}
	}
	while ((more = PQgetResult(c)) != NULL)
		PQclear(more);
	return rc;
}

static int batch_by_stage(pg_store *s, PGconn *c, pg_args *a, int *staged)
{
	faucet_buf rows = FAUCET_BUF_INIT;
	char *sql = NULL;
	PGresult *res;
	int copied = 0, rc;

	*staged = 0;
	rc = batch_rows(a->entries, a->count, 0, &rows);
	if (rc == 0 && rows.len <= INT_MAX - 5) {
		sql = faucet__pg_statement_sql(
			"INSERT INTO {table} (key, value, updated_at) SELECT key, value, NOW() "
			"FROM " PG_STAGE " ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, "
			"updated_at = NOW(); COMMIT",
			s->quoted);
		if (sql == NULL)
			rc = FAUCET_ENOMEM;
	}
	/* (A batch of 2 GB of rows, more than one COPY message can carry, goes
	 * by the statement.) */
	if (rc != 0 || sql == NULL) {
		faucet__buf_dispose(&rows);
		return rc;
	}
	res = PQexec(c, "BEGIN; CREATE TEMP TABLE IF NOT EXISTS faucet_batch_stage "
			"(key text NOT NULL, value jsonb NOT NULL) ON COMMIT DELETE ROWS");
	rc = faucet__pg_result_ok(s, c, res, PGRES_COMMAND_OK, "cannot write a batch");
	if (rc == 0) {
		PQclear(res);
		res = PQexec(c, "COPY " PG_STAGE " (key, value) FROM STDIN");
		rc = faucet__pg_result_ok(s, c, res, PGRES_COPY_IN, "cannot write a batch");
	}
	if (rc == 0) {
		PQclear(res);
		rc = copy_send(s, c, &rows, &copied);
		if (rc == 0 && !copied) /* no unique index there: cannot happen */
			rc = faucet__pg_fail(s, FAUCET_ERROR, "cannot write a batch",
					     "the staging table refused the rows");
	}
	faucet__buf_dispose(&rows);
	if (rc == 0) {
		if (PQsendQuery(c, sql) == 1)
			rc = stage_finish(s, c, staged);
		else
			rc = faucet__pg_fail(s, PQstatus(c) == CONNECTION_BAD ? FAUCET_EUNAVAILABLE
										: FAUCET_ERROR,
					     "cannot write a batch", PQerrorMessage(c));
	}
	free(sql);
	stage_rollback(c);
	return rc;
}

/* A batch of new keys goes by COPY into the table where that is known to
 * be safe, every other batch (or one that meets a key after all) by COPY
 * into the staging table, and one that gives a key twice by the
 * statement. */
int faucet__pg_batch_on(pg_store *s, PGconn *c, pg_args *a)
{
	int copied = 0, staged = 0, rc;

	if (s->key_bytewise) {
		rc = batch_by_copy(s, c, a, &copied);
		if (rc != 0 || copied)
			return rc;
	}
	rc = batch_by_stage(s, c, a, &staged);
	if (rc != 0 || staged)
		return rc;
	return batch_by_statement(s, c, a);
}

/* ---- a batch of compare-and-puts ---------------------------------------- */

/*
 * compare_and_put_batch: one transaction, two round trips whatever the
 * batch's size.
 *
 *   1. "BEGIN; SELECT key, value ... WHERE key = ANY(...) ORDER BY key
 *      FOR UPDATE" reads every row of the batch that exists and locks it,
 *      in key order so that two batches over the same keys queue instead
 *      of deadlocking.  Under READ COMMITTED a row another session is
 *      updating is waited for, and its newest version is what we read.
 *   2. Each row is compared here, with faucet_value_equal - the equality
 *      every other store uses, which JSONB's own = is not quite (its
 *      numbers refuse some spellings) - and then either ROLLBACK, or the
 *      writes and their COMMIT in one request: "INSERT ...; UPDATE ...;
 *      DELETE ...; COMMIT".
 *
 * The locked rows cannot change before the commit.  A key expected absent
 * has no row to lock: a plain INSERT of it - no ON CONFLICT - claims it
 * instead.  When another session has inserted it since the SELECT, our
 * INSERT waits for that transaction and fails with unique_violation once
 * it commits: the key no longer holds, the server skips the rest of the
 * request (the COMMIT too), and nothing is written (*written 0, no error).
 * A key expected absent that is to stay absent is claimed the same way,
 * inserted as a null placeholder that the DELETE removes again, so that
 * no insert of it can slip in before our commit either.  The INSERT, too,
 * takes its keys in one order (JSONB's order of an object's members).
 *
 * The batch travels as literals (PQescapeLiteral) because a request of
 * several statements takes no parameters.  A reply lost once the request
 * with the COMMIT was sent is FAUCET_EUNKNOWN (faucet__pg_write_result_ok);
 * the caller never retries it (pg_run(..., 0)).
 */
#define PG_CAS_BATCH_WHAT "cannot compare-and-put a batch"

/* Append `body` as one string literal, quoted for this connection. */
static int put_literal(pg_store *s, PGconn *c, faucet_buf *sql, const faucet_buf *body)
{
	char *literal;

	if (body->failed)
		return FAUCET_ENOMEM;
	literal = PQescapeLiteral(c, body->ptr, body->len);
	if (literal == NULL)
		return faucet__pg_fail(s, FAUCET_ERROR, PG_CAS_BATCH_WHAT, PQerrorMessage(c));
	(void)faucet__buf_puts(sql, literal);
	PQfreemem(literal);
	return sql->failed ? FAUCET_ENOMEM : 0;
}

/* One item of a list: with `member`, `"key":value` of a JSON object (a
 * NULL value is JSON null, the placeholder of a key to stay absent), else
 * `"key"` of a text[] array.  Keys are valid state keys ([A-Za-z0-9_.:/-]):
 * nothing in them needs escaping in either. */
static void put_item(faucet_buf *b, size_t *count, const char *key, int member,
		     const faucet_value *value)
{
	(void)faucet__buf_printf(b, "%s\"%s\"", *count > 0 ? "," : "{", key);
	if (member && value != NULL) {
		(void)faucet__buf_putc(b, ':');
		(void)faucet__buf_put(b, faucet_value_json(value), faucet_value_len(value));
	} else if (member) {
		(void)faucet__buf_puts(b, ":null");
	}
	(*count)++;
}

/* One statement over a list's literal, or nothing when the list is empty:
 * head (its {table} replaced, never the literal's text), the literal,
 * tail. */
static int put_statement(pg_store *s, PGconn *c, faucet_buf *sql, faucet_buf *list,
			 size_t count, const char *head, const char *tail)
{
	char *start;
	int rc;

	if (count == 0)
		return 0;
	start = faucet__pg_statement_sql(head, s->quoted);
	if (start == NULL)
		return FAUCET_ENOMEM;
	(void)faucet__buf_putc(list, '}');
	(void)faucet__buf_puts(sql, start);
	free(start);
	rc = put_literal(s, c, sql, list);
	if (rc == 0 && faucet__buf_puts(sql, tail) != 0)
		rc = FAUCET_ENOMEM;
	return rc;
}

/* The two requests: *lock reads and locks the batch's rows (step 1),
 * *write makes every write and commits (step 2; NULL: not built, the
 * staged path writes).  Built before the transaction starts, so that no
 * lock waits on them. */
static int cas_batch_sql(pg_store *s, PGconn *c, const faucet_store_guard *g, size_t n,
			 char **lock, char **write)
{
	faucet_buf keys = FAUCET_BUF_INIT, ins = FAUCET_BUF_INIT, upd = FAUCET_BUF_INIT;
	faucet_buf del = FAUCET_BUF_INIT, locking = FAUCET_BUF_INIT, writing = FAUCET_BUF_INIT;
	size_t nkeys = 0, nins = 0, nupd = 0, ndel = 0;
	int rc;

	*lock = NULL;
	if (write != NULL)
		*write = NULL;
	for (size_t i = 0; i < n; i++) {
		put_item(&keys, &nkeys, g[i].key, 0, NULL);
		if (write == NULL)
			continue;
		if (g[i].expected == NULL)
			put_item(&ins, &nins, g[i].key, 1, g[i].value);
		else if (g[i].value != NULL)
			put_item(&upd, &nupd, g[i].key, 1, g[i].value);
		if (g[i].value == NULL)
			put_item(&del, &ndel, g[i].key, 0, NULL);
	}
	rc = put_statement(s, c, &locking, &keys, nkeys,
			   "BEGIN; SELECT key, value::text FROM {table} WHERE key = ANY(",
			   "::text[]) ORDER BY key FOR UPDATE");
	if (rc == 0)
		rc = put_statement(s, c, &writing, &ins, nins,
				   "INSERT INTO {table} (key, value, updated_at) "
				   "SELECT key, value, NOW() FROM jsonb_each(",
				   "::jsonb); ");
	if (rc == 0)
		rc = put_statement(s, c, &writing, &upd, nupd,
				   "UPDATE {table} AS t SET value = e.value, updated_at = NOW() "
				   "FROM jsonb_each(",
				   "::jsonb) AS e WHERE t.key = e.key; ");
	if (rc == 0)
		rc = put_statement(s, c, &writing, &del, ndel,
				   "DELETE FROM {table} WHERE key = ANY(", "::text[]); ");
	if (rc == 0 && faucet__buf_puts(&writing, "COMMIT") != 0)
		rc = FAUCET_ENOMEM;
	if (rc == 0 && (locking.failed || writing.failed))
		rc = FAUCET_ENOMEM;
	if (rc == 0) {
		*lock = faucet__buf_detach(&locking);
		if (write != NULL)
			*write = faucet__buf_detach(&writing);
	}
	faucet__buf_dispose(&keys);
	faucet__buf_dispose(&ins);
	faucet__buf_dispose(&upd);
	faucet__buf_dispose(&del);
	faucet__buf_dispose(&locking);
	faucet__buf_dispose(&writing);
	return rc;
}

static int compare_guard_keys(const void *a, const void *b)
{
	return strcmp(((const faucet_store_guard *)a)->key, ((const faucet_store_guard *)b)->key);
}

/* Whether every entry holds: each row the lock returned equal to its
 * entry's expected value, and a row for every entry that expects one.
 * The entries are looked up by key in a sorted copy (faucet__find_sorted:
 * the key is a guard's first member). */
static int cas_batch_holds(pg_store *s, PGresult *rows, const faucet_store_guard *g, size_t n,
			   int *holds)
{
	faucet_store_guard *sorted = faucet__calloc(n, sizeof(*sorted));
	size_t present = 0, seen = 0;
	int rc = 0;

	*holds = 0;
	if (sorted == NULL)
		return FAUCET_ENOMEM;
	memcpy(sorted, g, n * sizeof(*g));
	qsort(sorted, n, sizeof(*sorted), compare_guard_keys);
	for (size_t i = 0; i < n; i++)
		present += g[i].expected != NULL;
	*holds = 1;
	for (int row = 0; rc == 0 && *holds && row < PQntuples(rows); row++) {
		const char *key = PQgetvalue(rows, row, 0);
		faucet_value *current = NULL;
		int found = 0;
		size_t at = faucet__find_sorted(sorted, n, sizeof(*sorted), key, &found);

		/* A row under a key we did not ask for (a collation that calls
		 * other bytes equal) or one expected absent: does not hold. */
		if (!found || sorted[at].expected == NULL) {
			*holds = 0;
			break;
		}
		rc = faucet__pg_parse_stored(s, key, PQgetvalue(rows, row, 1),
					     (size_t)PQgetlength(rows, row, 1), &current);
		*holds = rc == 0 && faucet_value_equal(current, sorted[at].expected);
		faucet_value_free(current);
		seen++;
	}
	if (rc == 0 && *holds)
		*holds = seen == present;
	free(sorted);
	return rc;
}

/* Send the writes and the COMMIT, and read every result.  A
 * unique_violation is a key expected absent that another session
 * inserted: nothing was committed (the server skipped the rest of the
 * request), *written stays 0, and it is no error. */
static int cas_batch_commit(pg_store *s, PGconn *c, const char *sql, int *written)
{
	PGresult *res;
	int rc = 0, taken = 0;

	if (PQsendQuery(c, sql) != 1)
		return faucet__pg_fail(s, PQstatus(c) == CONNECTION_BAD ? FAUCET_EUNAVAILABLE
								       : FAUCET_ERROR,
				       PG_CAS_BATCH_WHAT, PQerrorMessage(c));
	while ((res = PQgetResult(c)) != NULL) {
		const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);

		if (rc != 0 || taken) {
			PQclear(res);
		} else if (state != NULL && strcmp(state, PG_UNIQUE_VIOLATION) == 0) {
			taken = 1;
			PQclear(res);
		} else {
			/* A lost reply: the COMMIT may have landed (FAUCET_EUNKNOWN). */
			rc = faucet__pg_write_result_ok(s, c, res, PGRES_COMMAND_OK,
							PG_CAS_BATCH_WHAT);
			if (rc == 0)
				PQclear(res);
		}
	}
	*written = rc == 0 && !taken;
	return rc;
}

/*
 * A big batch of puts - more than FAUCET_STORE_CAS_BATCH_MAX entries, none
 * a delete: an import's chunk and its marker part - takes the same lock
 * and compare, but its values go by COPY into a staging table, as a plain
 * batch's do, instead of in one JSON literal that the server parses into
 * jsonb and takes apart (a million-key import took 22.5 s that way against
 * 13.1 s for plain chunks).  Then "UPDATE ... FROM the stage WHERE NOT
 * fresh; INSERT ... WHERE fresh; COMMIT" in one request: the rows updated
 * are the ones the lock holds, and a key expected absent is inserted with
 * no ON CONFLICT, so one that another session inserted since is a
 * unique_violation that commits nothing (cas_batch_commit).
 */
#define PG_CAS_STAGE "pg_temp.faucet_cas_stage"

static int cas_batch_stageable(const pg_args *a)
{
	if (a->count <= FAUCET_STORE_CAS_BATCH_MAX)
		return 0;
	for (size_t i = 0; i < a->count; i++)
		if (a->guards[i].value == NULL)
			return 0;
	return 1;
}

/* COPY rows "key<TAB>value<TAB>fresh" (fresh: expected absent). */
static int cas_stage_rows(const faucet_store_guard *g, size_t n, faucet_buf *rows)
{
	for (size_t i = 0; i < n; i++) {
		copy_field(rows, g[i].key);
		(void)faucet__buf_putc(rows, '\t');
		copy_field(rows, faucet_value_json(g[i].value));
		(void)faucet__buf_puts(rows, g[i].expected == NULL ? "\tt\n" : "\tf\n");
	}
	return rows->failed ? FAUCET_ENOMEM : 0;
}

/* The rows are locked and hold: stage the values and commit. */
static int cas_batch_stage_commit(pg_store *s, PGconn *c, pg_args *a)
{
	faucet_buf rows = FAUCET_BUF_INIT;
	char *sql = faucet__pg_statement_sql(
		"UPDATE {table} AS t SET value = s.value, updated_at = NOW() FROM " PG_CAS_STAGE
		" AS s WHERE t.key = s.key AND NOT s.fresh; INSERT INTO {table} (key, value, "
		"updated_at) SELECT key, value, NOW() FROM " PG_CAS_STAGE " WHERE fresh; COMMIT",
		s->quoted);
	PGresult *res;
	int copied = 0, rc = sql == NULL ? FAUCET_ENOMEM : cas_stage_rows(a->guards, a->count, &rows);

	if (rc == 0 && rows.len > INT_MAX - 5)
		rc = faucet__pg_fail(s, FAUCET_EINVALID, PG_CAS_BATCH_WHAT,
				     "more than one COPY message carries");
	if (rc == 0) {
		res = PQexec(c, "CREATE TEMP TABLE IF NOT EXISTS faucet_cas_stage (key text NOT NULL, "
				"value jsonb NOT NULL, fresh boolean NOT NULL) ON COMMIT DELETE ROWS");
		rc = faucet__pg_result_ok(s, c, res, PGRES_COMMAND_OK, PG_CAS_BATCH_WHAT);
		if (rc == 0)
			PQclear(res);
	}
	if (rc == 0) {
		res = PQexec(c, "COPY " PG_CAS_STAGE " (key, value, fresh) FROM STDIN");
		rc = faucet__pg_result_ok(s, c, res, PGRES_COPY_IN, PG_CAS_BATCH_WHAT);
		if (rc == 0)
			PQclear(res);
	}
	if (rc == 0 && (rc = copy_send(s, c, &rows, &copied)) == 0 && !copied)
		rc = faucet__pg_fail(s, FAUCET_ERROR, PG_CAS_BATCH_WHAT,
				     "the staging table refused the rows");
	if (rc == 0)
		rc = cas_batch_commit(s, c, sql, a->written);
	faucet__buf_dispose(&rows);
	free(sql);
	return rc;
}

/*
 * A big batch whose every key is expected absent - an import's chunk of
 * new keys and its marker part - has no row to lock or compare: it is one
 * COPY into the table, which inserts every key or, when one exists (a put
 * landed on it since it was read), fails with unique_violation and writes
 * nothing (*written 0, no error).  That is the compare, made by the
 * table's key, without the staging table's second copy of the values.
 * FAUCET_EUNSUPPORTED (nothing sent) when the batch is not such a one.
 */
static int cas_batch_fresh(pg_store *s, PGconn *c, pg_args *a)
{
	faucet_entry *e;
	int rc;

	if (!cas_batch_stageable(a))
		return FAUCET_EUNSUPPORTED;
	for (size_t i = 0; i < a->count; i++)
		if (a->guards[i].expected != NULL)
			return FAUCET_EUNSUPPORTED;
	if ((e = faucet__calloc(a->count, sizeof(*e))) == NULL)
		return FAUCET_ENOMEM;
	for (size_t i = 0; i < a->count; i++)
		e[i] = (faucet_entry){a->guards[i].key, a->guards[i].value};
	rc = copy_into_table(s, c, e, a->count, a->written);
	free(e);
	return rc;
}

int faucet__pg_cas_batch_on(pg_store *s, PGconn *c, pg_args *a)
{
	PGresult *rows;
	char *lock = NULL, *write = NULL;
	int holds = 0, staged = cas_batch_stageable(a), rc;

	*a->written = 0;
	if ((rc = cas_batch_fresh(s, c, a)) != FAUCET_EUNSUPPORTED)
		return rc;
	rc = cas_batch_sql(s, c, a->guards, a->count, &lock, staged ? NULL : &write);
	if (rc == 0) {
		rows = PQexec(c, lock);
		rc = faucet__pg_result_ok(s, c, rows, PGRES_TUPLES_OK, PG_CAS_BATCH_WHAT);
		if (rc == 0) {
			rc = cas_batch_holds(s, rows, a->guards, a->count, &holds);
			PQclear(rows);
		}
	}
	if (rc == 0 && holds)
		rc = staged ? cas_batch_stage_commit(s, c, a) : cas_batch_commit(s, c, write, a->written);
	/* Does not hold, or failed: the ROLLBACK releases the locks. */
	stage_rollback(c);
	free(lock);
	free(write);
	return rc;
}
