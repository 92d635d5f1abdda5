/*
 * postgres.c - the PostgreSQL state store ("postgres://...").
 *
 * Layout (shared with the original faucet): one table, "faucet_state" unless
 * configured,
 *
 *   key TEXT PRIMARY KEY, value JSONB NOT NULL,
 *   updated_at TIMESTAMPTZ NOT NULL DEFAULT NOW()
 *
 * The table name is checked against [A-Za-z0-9_]{1,63} and always written
 * as a quoted identifier.  Unless ensure_table is "never", the first
 * connection creates a missing table, under an advisory lock so several
 * processes starting at once do not race on the catalog.  A table we create
 * declares its key COLLATE "C": still TEXT, so the original reads and
 * writes it unchanged, but its index compares bytes - the order list()
 * promises - instead of running the database's collation (ICU or libc)
 * for every comparison, which was a fifth of a 10,000-key batch.  Tables
 * made by the original keep their collation and work the same.
 *
 * What round-trips through JSONB: JSONB keeps values, not text.  Every
 * integer we accept (-2^63 .. 2^64-1) and every decimal written without an
 * exponent (0.1, 1.0, 2.50) comes back with the same digits; whitespace is
 * dropped and object members come back in JSONB's order (shorter names
 * first), which is the same JSON value.  Exponents are expanded (1e5 comes
 * back as 100000, 2.5e-3 as 0.0025) and -0.0 becomes 0.0.  Where that
 * turns a decimal into an integer (1E5, 1e300) the value would change type,
 * or not parse at all, so such a value is refused before it is written -
 * never stored altered (see check_jsonb_safe).  A string holding
 * \u0000 is refused by PostgreSQL itself.
 *
 * Batches (import and copy write 10,000 keys at a time): a batch of new
 * keys is one COPY ... FROM STDIN, which takes about 60% of the
 * statements' time; any other batch is one statement over a JSON object.
 * Both are single statements, so a batch is all-or-nothing either way
 * (see faucet__pg_batch_on and batch_by_copy).
 *
 * Connections: a pool (pool.c) of at most max_connections libpq connections,
 * each with its statements prepared once.  A connection found closed by the
 * server is replaced; an operation that fails because its connection broke
 * reports the error, and - for idempotent operations on a reused
 * connection, the usual sign of a server restart - is tried once more on a
 * fresh one.  compare-and-put is one statement (see pg_cas_on), a batch
 * of them one transaction (faucet__pg_cas_batch_on); neither is ever
 * retried.  Credentials never appear in messages: the URL is redacted and
 * the password is scrubbed from libpq's own text.
 */
#include <libpq-fe.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "store/open_internal.h"
#include "stores/registry.h"
#include "values/value_internal.h"
#include "stores/pool.h"
#include "stores/postgres_internal.h"

#define PG_DEFAULT_TABLE FAUCET__PG_TABLE_DEFAULT
#define PG_DEFAULT_POOL FAUCET__POOL_DEFAULT
#define PG_CONNECT_TIMEOUT "10"
#define SENTINEL_JSON "{\"faucet_doctor\":true}"

/* pg_store is in postgres_internal.h. */

/* ---- messages ---------------------------------------------------------- */

/* A password at least this long is masked wherever it appears in a
 * message; a shorter one only inside a quoted span, where libpq echoes a
 * piece of the connection string.  Masking a short one everywhere would
 * mangle the message ("p" turned "port 1 failed" into "***ort 1 failed")
 * and show the password by what it masked. */
#define PG_MASK_ANYWHERE 8

/* Whether msg[at, at + n) lies inside one "..." span of msg. */
static int in_quotes(const char *msg, const char *at, size_t n)
{
	size_t quotes = 0;

	for (const char *c = msg; c < at; c++)
		quotes += *c == '"';
	return quotes % 2 == 1 && memchr(at, '"', n) == NULL;
}

/* libpq's message without its trailing newline, the password masked. */
static char *clean_message(const pg_store *s, const char *msg)
{
	faucet_buf b = FAUCET_BUF_INIT;
	size_t len = strlen(msg), pwlen = s->password != NULL ? strlen(s->password) : 0;
	const char *p = msg, *from = msg;

	while (len > 0 && (msg[len - 1] == '\n' || msg[len - 1] == ' '))
		len--;
	while (pwlen > 0 && (size_t)(p - msg) < len) {
		const char *hit = strstr(p, s->password);

		if (hit == NULL || (size_t)(hit - msg) + pwlen > len)
			break;
		if (pwlen >= PG_MASK_ANYWHERE || in_quotes(msg, hit, pwlen)) {
			(void)faucet__buf_put(&b, from, (size_t)(hit - from));
			(void)faucet__buf_puts(&b, "***");
			from = p = hit + pwlen;
		} else {
			p = hit + 1;
		}
	}
	(void)faucet__buf_put(&b, from, len - (size_t)(from - msg));
	(void)faucet__buf_puts(&b, "");
	return faucet__buf_detach(&b);
}

/* Set the last error: what failed, on which server and table, and why. */
int faucet__pg_fail(const pg_store *s, int code, const char *what, const char *why)
{
	char *clean = clean_message(s, why ? why : "unknown error");

	(void)faucet_error_set(code, "postgres state store %s table %s: %s: %s", s->redacted,
			       s->quoted, what, clean ? clean : "unknown error");
	free(clean);
	return code;
}

/* The code of a failed statement: the server's SQLSTATE when it answered
 * (57014 query_canceled is what statement_timeout raises, 55P03
 * lock_not_available what lock_timeout raises - we never ask for NOWAIT;
 * 57P01..57P03 are a server shutting down or starting up), else the
 * connection's state - a connection gone bad without an answer is
 * FAUCET_EUNAVAILABLE. */
static int result_code(PGconn *c, const PGresult *res)
{
	const char *state = res != NULL ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;

	if (state != NULL) {
		if (strcmp(state, "57014") == 0 || strcmp(state, "55P03") == 0)
			return FAUCET_ETIMEOUT;
		if (strncmp(state, "57P0", 4) == 0 || strncmp(state, "08", 2) == 0)
			return FAUCET_EUNAVAILABLE;
		if (strncmp(state, "28", 2) == 0)
			return FAUCET_EAUTH;
		return FAUCET_ERROR;
	}
	return PQstatus(c) == CONNECTION_BAD ? FAUCET_EUNAVAILABLE : FAUCET_ERROR;
}

/* The code of a connection attempt that failed.  libpq gives no SQLSTATE
 * here, only its message: a refused password is the server's FATAL
 * "password authentication failed" (or "no pg_hba.conf entry", access
 * refused for this role), running out of connect_timeout is "timeout
 * expired", and anything else that kept us from the server is
 * FAUCET_EUNAVAILABLE. */
static int connect_code(const char *msg)
{
	if (strstr(msg, "authentication failed") != NULL ||
	    strstr(msg, "no pg_hba.conf entry") != NULL ||
	    strstr(msg, "no password supplied") != NULL)
		return FAUCET_EAUTH;
	if (strstr(msg, "timeout expired") != NULL)
		return FAUCET_ETIMEOUT;
	if (strstr(msg, "does not exist") != NULL)
		return FAUCET_ERROR; /* the database or role: a configuration error */
	return FAUCET_EUNAVAILABLE;
}

/* Check a result; on failure set the last error and free it. */
int faucet__pg_result_ok(const pg_store *s, PGconn *c, PGresult *res, ExecStatusType want,
			const char *what)
{
	int code;

	if (res != NULL && PQresultStatus(res) == want)
		return 0;
	code = result_code(c, res);
	(void)faucet__pg_fail(s, code, what,
		      res != NULL && *PQresultErrorMessage(res) ? PQresultErrorMessage(res)
								 : PQerrorMessage(c));
	PQclear(res);
	return code;
}

/*
 * A commit that waited for a synchronous standby and had that wait
 * cancelled (a statement_timeout, pg_cancel_backend) is committed on the
 * primary alone, and PostgreSQL answers it as a success with only a
 * WARNING "canceling wait for synchronous replication ... The transaction
 * has already committed locally, but might not have been replicated to the
 * standby" (SPEC §7).  Acknowledging it would break doc/design.md §3.9's
 * promise: a failover now loses it.  The notice receiver, which libpq calls
 * in the thread that runs the statement, notes the warning here; a write
 * that "succeeded" with it noted is FAUCET_EUNKNOWN.  Reset before every
 * pooled operation (pg_call_on).  The match is on the English text: a
 * server with another lc_messages is not recognised.
 */
static _Thread_local int sync_wait_cancelled;

static void notice_receiver(void *arg, const PGresult *res)
{
	const char *severity = PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);
	const char *primary = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);

	(void)arg;
	if (severity != NULL && strcmp(severity, "WARNING") == 0 && primary != NULL &&
	    strstr(primary, "wait for synchronous replication") != NULL)
		sync_wait_cancelled = 1;
}

/* A write that failed: when the connection broke without an answer from
 * the server (no SQLSTATE), the request may have reached it and been
 * committed - its reply was lost - so the outcome is unknown
 * (FAUCET_EUNKNOWN), unless libpq says it could not even send the request
 * (FAUCET_EUNAVAILABLE: nothing reached the server).  Reporting either as
 * a plain failure would tell an import that nothing was written. */
int faucet__pg_write_result_ok(const pg_store *s, PGconn *c, PGresult *res, ExecStatusType want,
			      const char *what)
{
	const char *why;
	int code;

	if (res != NULL && PQresultStatus(res) == want && sync_wait_cancelled) {
		PQclear(res);
		return faucet_error_set(FAUCET_EUNKNOWN,
					"postgres state store %s table %s: %s: the server committed "
					"the write locally but its wait for the synchronous standby "
					"was cancelled - outcome unknown (a failover now may lose it)",
					s->redacted, s->quoted, what);
	}
	if (res != NULL && PQresultStatus(res) == want)
		return 0;
	if (PQstatus(c) != CONNECTION_BAD ||
	    (res != NULL && PQresultErrorField(res, PG_DIAG_SQLSTATE) != NULL))
		return faucet__pg_result_ok(s, c, res, want, what);
	why = PQerrorMessage(c);
	code = strstr(why, "could not send data") != NULL ? FAUCET_EUNAVAILABLE : FAUCET_EUNKNOWN;
	(void)faucet__pg_fail(s, code, what, why);
	if (code == FAUCET_EUNKNOWN)
		(void)faucet__error_wrap("outcome unknown (the connection was lost after the "
					 "request was sent; it may have been applied)");
	PQclear(res);
	return code;
}

/* ---- connections ------------------------------------------------------- */

/* Statements are prepared on every connection; TABLE_MARK in their SQL
 * stands for the quoted table name, wherever and however often it occurs. */
#define TABLE_MARK "{table}"

typedef struct {
	const char *name;
	const char *sql;
	int nparams;
} pg_statement;

static const pg_statement statements[] = {
	{"faucet_get", "SELECT value::text FROM {table} WHERE key = $1", 1},
	{"faucet_put",
	 "INSERT INTO {table} (key, value, updated_at) VALUES ($1, $2::jsonb, NOW()) "
	 "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = NOW()",
	 2},
	{"faucet_del", "DELETE FROM {table} WHERE key = $1", 1},
	/* Many keys in one round trip: = ANY compares like = does (the same
	 * index, whatever the column's collation). */
	{"faucet_get_many", "SELECT key, value::text FROM {table} WHERE key = ANY($1::text[])", 1},
	/* starts_with() compares literally ('_' and '%' are not wildcards) and
	 * COLLATE "C" orders by bytes whatever the database's collation. */
	{"faucet_list",
	 "SELECT key FROM {table} WHERE starts_with(key, $1) ORDER BY key COLLATE \"C\"", 1},
	/* list_page: the same keys from just after $2 ('' = from the first:
	 * keys are never empty), $3 of them.  The range bounds let a COLLATE
	 * "C" key index start at the page's first key; on a table of the
	 * original's layout each page is one top-$3 sort of the prefix's rest. */
	{"faucet_list_page",
	 "SELECT key FROM {table} WHERE starts_with(key, $1) AND key COLLATE \"C\" >= $1 "
	 "AND key COLLATE \"C\" > $2 ORDER BY key COLLATE \"C\" LIMIT $3::bigint",
	 3},
	{"faucet_cas_absent",
	 "INSERT INTO {table} (key, value, updated_at) VALUES ($1, $2::jsonb, NOW()) "
	 "ON CONFLICT (key) DO NOTHING",
	 2},
	{"faucet_cas_update",
	 "UPDATE {table} SET value = $3::jsonb, updated_at = NOW() "
	 "WHERE key = $1 AND value = $2::jsonb",
	 3},
	{"faucet_cad", "DELETE FROM {table} WHERE key = $1 AND value = $2::jsonb", 2},
	/* put_guarded: the guard's compare-and-put (as the two above) and the
	 * key's put in one statement, so one commit: the key's row is written
	 * only for the guard's row that was; one row affected when it held. */
	{"faucet_guarded_absent",
	 "WITH g AS (INSERT INTO {table} (key, value, updated_at) VALUES ($1, $2::jsonb, NOW()) "
	 "ON CONFLICT (key) DO NOTHING RETURNING 1) "
	 "INSERT INTO {table} (key, value, updated_at) SELECT $3, $4::jsonb, NOW() FROM g "
	 "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = NOW()",
	 4},
	{"faucet_guarded_update",
	 "WITH g AS (UPDATE {table} SET value = $3::jsonb, updated_at = NOW() "
	 "WHERE key = $1 AND value = $2::jsonb RETURNING 1) "
	 "INSERT INTO {table} (key, value, updated_at) SELECT $4, $5::jsonb, NOW() FROM g "
	 "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = NOW()",
	 5},
	/* A batch that is no plain insert (see faucet__pg_batch_on) is one statement over
	 * a JSON object {key: value, ...}: one round trip, and atomic like any
	 * single statement.  JSONB keeps the last of duplicate members, so
	 * each key occurs once.  See batch_by_statement for why there are
	 * two. */
	{"faucet_batch_split",
	 "WITH src AS MATERIALIZED (SELECT key, value FROM jsonb_each($1::jsonb)), "
	 "upd AS (UPDATE {table} AS t SET value = src.value, updated_at = NOW() FROM src "
	 "WHERE t.key = src.key RETURNING t.key) "
	 "INSERT INTO {table} (key, value, updated_at) SELECT key, value, NOW() FROM src "
	 "WHERE NOT EXISTS (SELECT 1 FROM upd WHERE upd.key = src.key)",
	 1},
	{"faucet_batch_upsert",
	 "INSERT INTO {table} (key, value, updated_at) "
	 "SELECT e.key, e.value, NOW() FROM jsonb_each($1::jsonb) AS e "
	 "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = NOW()",
	 1},
	/* Whether any row lies between a batch's smallest and largest key: one
	 * index range probe, used only where the key column compares bytes, so
	 * that the range holds every key of the batch (see faucet__pg_batch_on). */
	{"faucet_batch_probe",
	 "SELECT EXISTS (SELECT 1 FROM {table} WHERE key >= $1 AND key <= $2)", 2},
};

/* A statement's SQL with every TABLE_MARK replaced by the quoted name. */
char *faucet__pg_statement_sql(const char *sql, const char *quoted)
{
	faucet_buf b = FAUCET_BUF_INIT;
	const char *hit;

	while ((hit = strstr(sql, TABLE_MARK)) != NULL) {
		(void)faucet__buf_put(&b, sql, (size_t)(hit - sql));
		(void)faucet__buf_puts(&b, quoted);
		sql = hit + strlen(TABLE_MARK);
	}
	(void)faucet__buf_puts(&b, sql);
	if (b.failed) {
		faucet__buf_dispose(&b);
		return NULL;
	}
	return faucet__buf_detach(&b);
}

static PGresult *exec_sql(PGconn *c, const char *sql, int n, const char *const *params)
{
	return PQexecParams(c, sql, n, NULL, params, NULL, NULL, 0);
}

/* What the table's layout allows a batch (faucet__pg_batch_on).  Whether its key
 * column compares bytes (collation "C" or "POSIX": every table faucet
 * creates), which lets a batch find out with one range probe whether any
 * of its keys exists; a table made by the original follows the database's
 * collation, and its batches take the statement that works everywhere.
 * And whether updated_at defaults to now(), which a COPY then leaves to
 * the server instead of sending 'now' on every row for it to parse. */
static int read_table_traits(pg_store *s, PGconn *c)
{
	const char *params[1] = {s->quoted};
	PGresult *res = exec_sql(
		c,
		"SELECT coalesce((SELECT co.collname IN ('C', 'POSIX') AND "
		"co.collnamespace = 'pg_catalog'::regnamespace "
		"FROM pg_attribute a JOIN pg_collation co ON co.oid = a.attcollation "
		"WHERE a.attrelid = $1::regclass AND a.attname = 'key'), false), "
		"EXISTS (SELECT 1 FROM pg_attrdef d JOIN pg_attribute a "
		"ON a.attrelid = d.adrelid AND a.attnum = d.adnum "
		"WHERE d.adrelid = $1::regclass AND a.attname = 'updated_at' AND "
		"pg_get_expr(d.adbin, d.adrelid) = 'now()')",
		1, params);
	int rc = faucet__pg_result_ok(s, c, res, PGRES_TUPLES_OK, "cannot look up the table's layout");

	if (rc != 0)
		return rc;
	s->key_bytewise = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	s->default_now = strcmp(PQgetvalue(res, 0, 1), "t") == 0;
	PQclear(res);
	return 0;
}

/* Create the table when it is missing (unless ensure_table says never).
 * Runs once per store, on its first connection. */
static int ensure_table(pg_store *s, PGconn *c)
{
	const char *params[1] = {s->quoted};
	char *create = NULL;
	PGresult *res;
	int missing, rc = 0;

	res = exec_sql(c, "SELECT to_regclass($1) IS NULL", 1, params);
	rc = faucet__pg_result_ok(s, c, res, PGRES_TUPLES_OK, "cannot look up the table");
	if (rc != 0)
		return rc;
	missing = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	PQclear(res);
	if (!missing)
		return read_table_traits(s, c);
	if (s->ensure_table < 0)
		return faucet_error_set(FAUCET_ECONFIG,
					"postgres state store %s: table %s does not exist and "
					"ensure_table is false (create it, or allow faucet to)",
					s->redacted, s->quoted);
	create = faucet__sprintf(
		"BEGIN; SELECT pg_advisory_xact_lock(hashtext('faucet_state_create')); "
		"CREATE TABLE IF NOT EXISTS %s (key TEXT COLLATE \"C\" PRIMARY KEY, "
		"value JSONB NOT NULL, "
		"updated_at TIMESTAMPTZ NOT NULL DEFAULT NOW()); COMMIT",
		s->quoted);
	if (create == NULL)
		return FAUCET_ENOMEM;
	res = PQexec(c, create);
	if (faucet__pg_result_ok(s, c, res, PGRES_COMMAND_OK, "cannot create the table") != 0) {
		PQclear(PQexec(c, "ROLLBACK"));
		rc = FAUCET_ERROR;
	} else {
		PQclear(res);
	}
	free(create);
	/* Ours declares COLLATE "C" - unless another process created it first,
	 * with the original's layout: ask. */
	return rc != 0 ? rc : read_table_traits(s, c);
}

static int prepare_statements(pg_store *s, PGconn *c)
{
	for (size_t i = 0; i < FAUCET_ARRAY_LEN(statements); i++) {
		char *sql = faucet__pg_statement_sql(statements[i].sql, s->quoted);
		PGresult *res;

		if (sql == NULL)
			return FAUCET_ENOMEM;
		res = PQprepare(c, statements[i].name, sql, statements[i].nparams, NULL);
		free(sql);
		int prc = faucet__pg_result_ok(s, c, res, PGRES_COMMAND_OK, "cannot prepare a statement");

		if (prc != 0)
			return prc;
		PQclear(res);
	}
	return 0;
}

static int pg_connect(void *owner, void **out)
{
	pg_store *s = owner;
	/* dbname comes last so options written in the URL win over ours. */
	const char *keys[] = {"connect_timeout", "application_name", "dbname", NULL};
	const char *vals[] = {PG_CONNECT_TIMEOUT, "faucet", s->url, NULL};
	PGconn *c = PQconnectdbParams(keys, vals, 1);
	int rc = 0;

	if (c == NULL)
		return faucet_error_set(FAUCET_ENOMEM, "postgres state store: out of memory");
	if (PQstatus(c) != CONNECTION_OK) {
		rc = faucet__pg_fail(s, connect_code(PQerrorMessage(c)), "cannot connect", PQerrorMessage(c));
		PQfinish(c);
		return rc;
	}
	/* A library does not print the server's NOTICEs on the caller's stderr;
	 * the receiver only notes a cancelled synchronous-replication wait. */
	(void)PQsetNoticeReceiver(c, notice_receiver, NULL);
	pthread_mutex_lock(&s->table_lock);
	if (!s->table_ready) {
		rc = ensure_table(s, c);
		s->table_ready = rc == 0;
	}
	pthread_mutex_unlock(&s->table_lock);
	if (rc == 0)
		rc = prepare_statements(s, c);
	if (rc != 0) {
		PQfinish(c);
		return rc;
	}
	*out = c;
	return 0;
}

static void pg_disconnect(void *conn)
{
	PQfinish(conn);
}

/* An idle connection has nothing to read: we never LISTEN, and every reply
 * is consumed by the call that asked for it.  A readable socket means the
 * server is closing it - after a restart it sends "terminating connection"
 * and EOF - so the connection is replaced before anyone uses it. */
static int pg_alive(void *conn)
{
	PGconn *c = conn;

	return PQstatus(c) == CONNECTION_OK && PQtransactionStatus(c) == PQTRANS_IDLE &&
	       faucet__pool_socket_quiet(PQsocket(c));
}

/* A connection that lost the server, or was left inside a transaction by a
 * failed statement, is not reused. */
static int pg_broken(void *conn)
{
	PGconn *c = conn;

	return PQstatus(c) != CONNECTION_OK || PQtransactionStatus(c) != PQTRANS_IDLE;
}

/* A connection inherited across fork() is the parent's too: PQfinish would
 * send the server a Terminate message (and TLS a close_notify) over the
 * socket both processes share, ending the parent's session.  With the
 * descriptor pointed at /dev/null first, PQfinish's goodbye goes nowhere
 * and it frees only this process's copy.  Without /dev/null the connection
 * is left alone (its memory and descriptor stay with the child). */
static void pg_abandon(void *conn)
{
	if (faucet__pool_detach_socket(PQsocket(conn)) == 0)
		PQfinish(conn);
}

static const faucet_pool_ops pg_pool_ops = {pg_connect, pg_disconnect, pg_alive, pg_broken,
					    pg_abandon};

/* ---- values ------------------------------------------------------------ */

/* Whether JSONB would print this number token (written with an exponent)
 * without a decimal point.  PostgreSQL's numeric keeps max(0, fraction
 * digits - exponent) decimals: 1E5 and 2.5e1 come back as the integers
 * 100000 and 25, while 2.50e1 comes back as 25.0. */
static int exponent_becomes_integer(const char *tok, size_t len)
{
	const char *dot = memchr(tok, '.', len);
	const char *e = tok + strcspn(tok, "eE");
	long frac = 0, exp;

	if ((size_t)(e - tok) >= len)
		return 0;
	if (dot != NULL && dot < e)
		frac = (long)(e - dot - 1);
	exp = strtol(e + 1, NULL, 10);
	return frac - exp <= 0;
}

/* Refuse a value JSONB would hand back altered in a way that matters: a
 * number written with an exponent that comes back as an integer (1E5 ->
 * 100000) is no longer the same JSON value to us, and one of 2^64 or more
 * (1e300) would not even parse.  Other exponents (2.25e-7 -> 0.000000225)
 * come back as the same double. */
static int check_jsonb_safe(const pg_store *s, const char *key, const faucet_value *v)
{
	const char *p = faucet_value_json(v);
	int in_string = 0;

	for (; *p; p++) {
		size_t len;

		if (in_string) {
			if (*p == '\\' && p[1] != '\0')
				p++;
			else if (*p == '"')
				in_string = 0;
			continue;
		}
		if (*p == '"') {
			in_string = 1;
			continue;
		}
		if (*p != '-' && (*p < '0' || *p > '9'))
			continue;
		len = strspn(p, "0123456789+-.eE");
		if (exponent_becomes_integer(p, len))
			return faucet_error_set(
				FAUCET_EINVALID,
				"postgres state store table %s: the value for key '%s' holds the number "
				"%.*s, which JSONB would return as the integer it equals, changing the "
				"stored value; write it without an exponent (or as a string)",
				s->quoted, key, (int)len, p);
		p += len - 1;
	}
	return 0;
}

/* numeric's range, part of its on-disk format: 131072 digits before the
 * point, 16383 (NUMERIC_DSCALE_MAX) after it. */
#define PG_NUMERIC_HIGHEST_PLACE 131071
#define PG_NUMERIC_LOWEST_PLACE (-16383)

/* The expected value as JSONB equality gets it.  JSONB compares numbers by
 * exact decimal value - doc/design.md §2.5's rule - but numeric refuses some
 * spellings of values it holds (10e-16384: more than 16383 digits after
 * the point once trailing zeros count; 0e-2000000000) and every value
 * beyond its range, with an error where the other stores answer "not
 * equal".  So the numbers go in their canonical spelling, and a value with
 * a number numeric cannot hold - which no stored JSONB value can equal -
 * sets *holdable = 0: the condition does not hold. */
static int expected_for_jsonb(const faucet_value *expected, faucet_value **out, int *holdable)
{
	int64_t lowest, highest;
	int rc = faucet_value__canonical_numbers(expected, out, &lowest, &highest);

	*holdable = rc == 0 && lowest >= PG_NUMERIC_LOWEST_PLACE &&
		    highest <= PG_NUMERIC_HIGHEST_PLACE;
	return rc;
}

int faucet__pg_bad_stored_value(const pg_store *s, const char *key)
{
	char *why = faucet__strdup(faucet_error_last()->message);

	(void)faucet_error_set(FAUCET_ERROR,
			       "postgres state store table %s: the value of key '%s' cannot be read "
			       "back exactly (%s)",
			       s->quoted, key, why ? why : "unparsable");
	free(why);
	return FAUCET_ERROR;
}

/* JSONB prints a value with a space after every ':' and ',' between
 * tokens, and nowhere else outside strings.  Without them the text is
 * compact, which faucet_value_parse keeps as it is after one checking
 * pass, instead of parsing it with json-c and printing it again - the
 * larger part of an export's time on our side.  Spaces inside strings
 * stay.  Works in place; returns the new length. */
size_t faucet__pg_jsonb_squeeze(char *p, size_t len)
{
	size_t w = 0;
	int in_string = 0;

	for (size_t r = 0; r < len; r++) {
		char c = p[r];

		if (in_string) {
			if (c == '\\' && r + 1 < len) {
				p[w++] = c;
				c = p[++r];
			} else if (c == '"') {
				in_string = 0;
			}
		} else if (c == '"') {
			in_string = 1;
		} else if (c == ' ') {
			continue;
		}
		p[w++] = c;
	}
	return w;
}

/* Parse a stored value (JSONB's text) that libpq holds: squeezed in a copy
 * of our own. */
int faucet__pg_parse_stored(const pg_store *s, const char *key, const char *text, size_t len,
			    faucet_value **out)
{
	char *copy = faucet__malloc(len + 1);
	int rc;

	if (copy == NULL)
		return FAUCET_ENOMEM;
	memcpy(copy, text, len);
	rc = faucet_value_parse(out, copy, faucet__pg_jsonb_squeeze(copy, len));
	free(copy);
	if (rc != 0 && rc != FAUCET_ENOMEM)
		rc = faucet__pg_bad_stored_value(s, key);
	return rc;
}

/* ---- operations on one connection ------------------------------------ */

PGresult *faucet__pg_run_prepared(PGconn *c, const char *name, int n, const char *const *params)
{
	return PQexecPrepared(c, name, n, params, NULL, NULL, 0);
}

static int pg_get_on(pg_store *s, PGconn *c, const char *key, faucet_value **out)
{
	const char *params[1] = {key};
	PGresult *res = faucet__pg_run_prepared(c, "faucet_get", 1, params);
	int rc = 0;

	*out = NULL;
	rc = faucet__pg_result_ok(s, c, res, PGRES_TUPLES_OK, "cannot read a key");
	if (rc != 0)
		return rc;
	if (PQntuples(res) == 1)
		rc = faucet__pg_parse_stored(s, key, PQgetvalue(res, 0, 0),
					     (size_t)PQgetlength(res, 0, 0), out);
	PQclear(res);
	return rc;
}

int faucet__pg_command_on(pg_store *s, PGconn *c, const char *name, int n,
			 const char *const *params, const char *what, int *affected)
{
	PGresult *res = faucet__pg_run_prepared(c, name, n, params);
	int rc = faucet__pg_write_result_ok(s, c, res, PGRES_COMMAND_OK, what);

	if (rc != 0)
		return rc;
	if (affected != NULL)
		*affected = atoi(PQcmdTuples(res));
	PQclear(res);
	return 0;
}

static int pg_put_on(pg_store *s, PGconn *c, const char *key, const faucet_value *v)
{
	const char *params[2] = {key, faucet_value_json(v)};

	return faucet__pg_command_on(s, c, "faucet_put", 2, params, "cannot write a key", NULL);
}

static int pg_del_on(pg_store *s, PGconn *c, const char *key)
{
	const char *params[1] = {key};

	return faucet__pg_command_on(s, c, "faucet_del", 1, params, "cannot delete a key", NULL);
}

/* One statement either way, so the comparison and the write are atomic:
 * absent - INSERT ... ON CONFLICT DO NOTHING inserts only when no row
 * exists; present - UPDATE ... WHERE value = $2::jsonb compares with JSONB
 * equality (members in any order, numbers by value), and under READ
 * COMMITTED a concurrent update makes PostgreSQL re-check the condition on
 * the newest row version before writing. */
static int pg_cas_on(pg_store *s, PGconn *c, const char *key, const faucet_value *expected,
		     const faucet_value *value, int *written)
{
	int affected = 0, rc;

	if (expected == NULL) {
		const char *params[2] = {key, faucet_value_json(value)};
		rc = faucet__pg_command_on(s, c, "faucet_cas_absent", 2, params,
				   "cannot compare-and-put a key", &affected);
	} else {
		const char *params[3] = {key, faucet_value_json(expected), faucet_value_json(value)};
		rc = faucet__pg_command_on(s, c, "faucet_cas_update", 3, params,
				   "cannot compare-and-put a key", &affected);
	}
	*written = rc == 0 && affected == 1;
	return rc;
}

/* ---- many keys at once ------------------------------------------------ */

/* A key of a get_many request and where its value goes. */
typedef struct {
	const char *key; /* first: faucet__find_sorted looks it up */
	size_t slot;
} pg_wanted;

static int compare_wanted(const void *a, const void *b)
{
	int c = strcmp(((const pg_wanted *)a)->key, ((const pg_wanted *)b)->key);

	if (c != 0)
		return c;
	return ((const pg_wanted *)a)->slot < ((const pg_wanted *)b)->slot ? -1 : 1;
}

/* The text[] literal {"k1","k2",...}.  Every element is quoted, so a key
 * spelled NULL stays a string; state keys hold no '"' or '\', the only
 * characters that would need escaping inside the quotes. */
static char *key_array(const char *const *keys, size_t count)
{
	faucet_buf b = FAUCET_BUF_INIT;

	(void)faucet__buf_putc(&b, '{');
	for (size_t i = 0; i < count; i++)
		(void)faucet__buf_printf(&b, "%s\"%s\"", i ? "," : "", keys[i]);
	(void)faucet__buf_putc(&b, '}');
	if (b.failed) {
		faucet__buf_dispose(&b);
		return NULL;
	}
	return faucet__buf_detach(&b);
}

/* Hand each row of a get_many result to every slot that asked for its key
 * (a key may be asked for twice). */
static int fill_slots(pg_store *s, PGresult *res, const pg_wanted *w, size_t count,
		      faucet_value **out)
{
	for (int row = 0; row < PQntuples(res); row++) {
		const char *key = PQgetvalue(res, row, 0);
		int found = 0;
		size_t at = faucet__find_sorted(w, count, sizeof(*w), key, &found);

		/* The search lands on one of equal keys; start from the first. */
		while (found && at > 0 && strcmp(w[at - 1].key, key) == 0)
			at--;
		for (; found && at < count && strcmp(w[at].key, key) == 0; at++) {
			if (out[w[at].slot] != NULL)
				continue;
			int rc = faucet__pg_parse_stored(s, key, PQgetvalue(res, row, 1),
							 (size_t)PQgetlength(res, row, 1),
							 &out[w[at].slot]);
			if (rc != 0)
				return rc;
		}
	}
	return 0;
}

static int pg_get_many_on(pg_store *s, PGconn *c, const char *const *keys, size_t count,
			  faucet_value **out)
{
	pg_wanted *w = faucet__calloc(count, sizeof(*w));
	char *array = key_array(keys, count);
	const char *params[1] = {array};
	PGresult *res = NULL;
	int rc;

	if (w == NULL || array == NULL) {
		free(w);
		free(array);
		return FAUCET_ENOMEM;
	}
	for (size_t i = 0; i < count; i++) {
		w[i].key = keys[i];
		w[i].slot = i;
	}
	qsort(w, count, sizeof(*w), compare_wanted);
	res = faucet__pg_run_prepared(c, "faucet_get_many", 1, params);
	rc = faucet__pg_result_ok(s, c, res, PGRES_TUPLES_OK, "cannot read keys");
	if (rc == 0) {
		rc = fill_slots(s, res, w, count, out);
		PQclear(res);
	}
	for (size_t i = 0; rc != 0 && i < count; i++) {
		faucet_value_free(out[i]);
		out[i] = NULL;
	}
	free(w);
	free(array);
	return rc;
}

/* ---- pooled operations ------------------------------------------------- */


typedef int (*pg_op)(pg_store *s, PGconn *c, pg_args *a);

static int op_get(pg_store *s, PGconn *c, pg_args *a)
{
	return pg_get_on(s, c, a->key, a->out);
}

static int op_get_many(pg_store *s, PGconn *c, pg_args *a)
{
	return pg_get_many_on(s, c, a->keys, a->count, a->values);
}

static int op_scan_entries(pg_store *s, PGconn *c, pg_args *a)
{
	return faucet__pg_scan_entries_on(s, c, a->prefix, a->data_only, a->fn, a->ctx);
}

static int op_put(pg_store *s, PGconn *c, pg_args *a)
{
	return pg_put_on(s, c, a->key, a->value);
}

static int op_del(pg_store *s, PGconn *c, pg_args *a)
{
	return pg_del_on(s, c, a->key);
}

static int op_cas(pg_store *s, PGconn *c, pg_args *a)
{
	return pg_cas_on(s, c, a->key, a->expected, a->value, a->written);
}

/* The guard is a->key (a->expected -> a->value), the key a->then_key. */
static int op_guarded(pg_store *s, PGconn *c, pg_args *a)
{
	int affected = 0, rc;

	if (a->expected == NULL) {
		const char *params[4] = {a->key, faucet_value_json(a->value), a->then_key,
					 faucet_value_json(a->then_value)};
		rc = faucet__pg_command_on(s, c, "faucet_guarded_absent", 4, params,
				   "cannot compare-and-put a key", &affected);
	} else {
		const char *params[5] = {a->key, faucet_value_json(a->expected),
					 faucet_value_json(a->value), a->then_key,
					 faucet_value_json(a->then_value)};
		rc = faucet__pg_command_on(s, c, "faucet_guarded_update", 5, params,
				   "cannot compare-and-put a key", &affected);
	}
	*a->written = rc == 0 && affected == 1;
	return rc;
}

/* One DELETE whose condition compares with JSONB equality, atomic like
 * the compare-and-put UPDATE. */
static int op_cad(pg_store *s, PGconn *c, pg_args *a)
{
	const char *params[2] = {a->key, faucet_value_json(a->expected)};
	int affected = 0;
	int rc = faucet__pg_command_on(s, c, "faucet_cad", 2, params, "cannot compare-and-delete a key",
			       &affected);

	*a->written = rc == 0 && affected == 1;
	return rc;
}

static int op_scan(pg_store *s, PGconn *c, pg_args *a)
{
	const char *params[1] = {a->prefix};
	PGresult *res = faucet__pg_run_prepared(c, "faucet_list", 1, params);
	int rc = faucet__pg_result_ok(s, c, res, PGRES_TUPLES_OK, "cannot list keys");

	if (rc != 0)
		return rc;
	a->rows = res;
	return 0;
}

static int op_list_page(pg_store *s, PGconn *c, pg_args *a)
{
	char limit[32];
	const char *params[3] = {a->prefix, a->key != NULL ? a->key : "", limit};
	PGresult *res;
	int rc;

	snprintf(limit, sizeof(limit), "%zu", a->count);
	res = faucet__pg_run_prepared(c, "faucet_list_page", 3, params);
	rc = faucet__pg_result_ok(s, c, res, PGRES_TUPLES_OK, "cannot list a page of keys");
	if (rc != 0)
		return rc;
	a->rows = res;
	return 0;
}

/* One operation bound to its store and arguments, for faucet__pool_run. */
typedef struct {
	pg_store *s;
	pg_op op;
	pg_args *a;
} pg_call;

static int pg_call_on(void *conn, void *ctx)
{
	pg_call *k = ctx;

	sync_wait_cancelled = 0;
	return k->op(k->s, conn, k->a);
}

/* Run op on a pooled connection; the pool retries an idempotent op once
 * after a broken connection (faucet__pool_run). */
static int pg_run(pg_store *s, pg_op op, pg_args *a, int idempotent)
{
	pg_call k = {s, op, a};

	return faucet__pool_run(s->pool, pg_call_on, &k, idempotent);
}

static int pg_get(faucet_store_backend *b, const char *key, faucet_value **out)
{
	pg_args a = {.key = key, .out = out};

	return pg_run((pg_store *)b, op_get, &a, 1);
}

/* One statement for the whole chunk (an export reads 256 keys a call): a
 * round trip per chunk instead of one per key. */
static int pg_get_many(faucet_store_backend *b, const char *const *keys, size_t count,
		       faucet_value **out)
{
	pg_args a = {.keys = keys, .count = count, .values = out};

	if (count == 0)
		return 0;
	return pg_run((pg_store *)b, op_get_many, &a, 1);
}

/* Not retried: fn has seen entries by the time the connection can break,
 * and a second pass would hand them over again. */
static int pg_scan_entries(faucet_store_backend *b, const char *prefix, faucet_entry_fn fn,
			   void *ctx)
{
	pg_args a = {.prefix = prefix, .fn = fn, .ctx = ctx};

	return pg_run((pg_store *)b, op_scan_entries, &a, 0);
}

static int pg_scan_data(faucet_store_backend *b, const char *prefix, faucet_entry_fn fn,
			void *ctx)
{
	pg_args a = {.prefix = prefix, .fn = fn, .ctx = ctx, .data_only = 1};

	return pg_run((pg_store *)b, op_scan_entries, &a, 0);
}

static int pg_put(faucet_store_backend *b, const char *key, const faucet_value *value)
{
	pg_store *s = (pg_store *)b;
	pg_args a = {.key = key, .value = value};

	if (check_jsonb_safe(s, key, value) != 0)
		return FAUCET_EINVALID;
	return pg_run(s, op_put, &a, 1);
}

static int pg_del(faucet_store_backend *b, const char *key)
{
	pg_args a = {.key = key};

	return pg_run((pg_store *)b, op_del, &a, 1);
}

/* The keys come in one result; fn sees them after the connection has gone
 * back to the pool, so it may use the store freely. */
static int pg_scan(faucet_store_backend *b, const char *prefix, faucet_key_fn fn, void *ctx)
{
	pg_args a = {.prefix = prefix};
	int rc = pg_run((pg_store *)b, op_scan, &a, 1);

	for (int i = 0; rc == 0 && i < PQntuples(a.rows); i++)
		rc = fn(PQgetvalue(a.rows, i, 0), ctx);
	PQclear(a.rows);
	return rc;
}

/* One statement a page, its rows copied after the connection is back. */
static int pg_list_page(faucet_store_backend *b, const char *prefix, const char *after,
			size_t limit, faucet_strarray *out)
{
	pg_args a = {.prefix = prefix, .key = after, .count = limit};
	int rc = pg_run((pg_store *)b, op_list_page, &a, 1);

	for (int i = 0; rc == 0 && i < PQntuples(a.rows); i++)
		rc = faucet__strarray_push(out, PQgetvalue(a.rows, i, 0));
	PQclear(a.rows);
	if (rc != 0)
		faucet_strarray_dispose(out);
	return rc;
}

/* compare_and_put, or with then_key the guarded put (op_guarded). */
static int pg_cas_then(pg_store *s, const char *key, const faucet_value *expected,
		       const faucet_value *value, const char *then_key,
		       const faucet_value *then_value, int *written)
{
	pg_args a = {.key = key, .expected = expected, .value = value, .written = written,
		     .then_key = then_key, .then_value = then_value};
	faucet_value *canonical = NULL;
	int holdable = 1, rc;

	*written = 0;
	if (check_jsonb_safe(s, key, value) != 0 ||
	    (then_key != NULL && check_jsonb_safe(s, then_key, then_value) != 0))
		return FAUCET_EINVALID;
	if (expected != NULL) {
		rc = expected_for_jsonb(expected, &canonical, &holdable);
		if (rc != 0 || !holdable) {
			faucet_value_free(canonical);
			return rc;
		}
		a.expected = canonical;
	}
	/* Never retried: after a broken connection we cannot know whether the
	 * write landed, and a second try could report it as not written. */
	rc = pg_run(s, then_key != NULL ? op_guarded : op_cas, &a, 0);
	faucet_value_free(canonical);
	return rc;
}

static int pg_compare_and_put(faucet_store_backend *b, const char *key,
			      const faucet_value *expected, const faucet_value *value,
			      int *written)
{
	return pg_cas_then((pg_store *)b, key, expected, value, NULL, NULL, written);
}

static int pg_put_guarded(faucet_store_backend *b, const char *guard,
			  const faucet_value *expected, const faucet_value *guard_value,
			  const char *key, const faucet_value *value, int *written)
{
	return pg_cas_then((pg_store *)b, guard, expected, guard_value, key, value, written);
}

static int pg_compare_and_delete(faucet_store_backend *b, const char *key,
				 const faucet_value *expected, int *deleted)
{
	pg_args a = {.key = key, .written = deleted};
	faucet_value *canonical = NULL;
	int holdable, rc;

	*deleted = 0;
	rc = expected_for_jsonb(expected, &canonical, &holdable);
	if (rc == 0 && holdable) {
		a.expected = canonical;
		/* Never retried, for the reason compare-and-put is not. */
		rc = pg_run((pg_store *)b, op_cad, &a, 0);
	}
	faucet_value_free(canonical);
	return rc;
}

static int pg_put_batch(faucet_store_backend *b, const faucet_entry *entries, size_t count)
{
	pg_store *s = (pg_store *)b;
	pg_args a = {.entries = entries, .count = count};

	if (count == 0)
		return 0;
	for (size_t i = 0; i < count; i++) {
		if (check_jsonb_safe(s, entries[i].key, entries[i].value) != 0)
			return FAUCET_EINVALID;
	}
	return pg_run(s, faucet__pg_batch_on, &a, 1);
}

/* All or nothing in one transaction of two round trips
 * (faucet__pg_cas_batch_on).  Never retried, for the reason compare-and-put
 * is not.  Every value is checked first, as a put's is: one that JSONB
 * cannot hold exactly refuses the whole batch. */
static int pg_compare_and_put_batch(faucet_store_backend *b, const faucet_store_guard *entries,
				    size_t n, int *written)
{
	pg_store *s = (pg_store *)b;
	pg_args a = {.guards = entries, .count = n, .written = written};

	*written = 0;
	if (n == 0) {
		*written = 1; /* nothing to compare: it holds (the front-end gives 1 or more) */
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		if (entries[i].value != NULL &&
		    check_jsonb_safe(s, entries[i].key, entries[i].value) != 0)
			return FAUCET_EINVALID;
	}
	return pg_run(s, faucet__pg_cas_batch_on, &a, 0);
}

/* ---- doctor ------------------------------------------------------------ */

static int set_timeout(PGconn *c, uint64_t ms)
{
	char sql[64];
	PGresult *res;
	int ok;

	snprintf(sql, sizeof(sql), "SET statement_timeout = %llu", (unsigned long long)ms);
	res = PQexec(c, sql);
	ok = PQresultStatus(res) == PGRES_COMMAND_OK;
	PQclear(res);
	return ok ? 0 : -1;
}

static int sentinel_round_trip(pg_store *s, PGconn *c)
{
	char *key = faucet_doctor_sentinel_key();
	faucet_value *probe = NULL, *got = NULL;
	int rc;

	if (key == NULL)
		return FAUCET_ENOMEM;
	rc = faucet_value_parse(&probe, SENTINEL_JSON, strlen(SENTINEL_JSON));
	if (rc == 0)
		rc = pg_put_on(s, c, key, probe);
	if (rc == 0)
		rc = pg_get_on(s, c, key, &got);
	if (pg_del_on(s, c, key) != 0 && rc == 0)
		rc = FAUCET_ERROR;
	if (rc == 0 && !faucet_value_equal(got, probe))
		rc = faucet_error_set(FAUCET_ERROR,
				      "sentinel readback did not match what was written");
	faucet_value_free(probe);
	faucet_value_free(got);
	free(key);
	return rc;
}


/* Whether one server setting keeps "a put that returned is durable": fsync
 * and full_page_writes must be on (without them a crash can lose or tear
 * committed pages); synchronous_commit must not be off (every other value -
 * on, local, remote_write, remote_apply - flushes the commit to the local
 * WAL before the server answers). */
static int setting_is_durable(const char *name, const char *value)
{
	if (strcmp(name, "synchronous_commit") == 0)
		return strcmp(value, "off") != 0;
	return strcmp(value, "on") == 0;
}

/* The "durability" probe: a server that answers COMMIT before the commit
 * is on disk breaks the store's promise, though every write works - a WARN
 * naming each setting at fault.  pg_settings is readable by every role, and
 * SHOWs the values this session runs with (a role's or the URL's `options`
 * override included). */
static int durability_probe(pg_store *s, PGconn *c, faucet_check_report *r)
{
	static const char sql[] = "SELECT name, setting FROM pg_settings WHERE name IN "
				  "('fsync', 'synchronous_commit', 'full_page_writes') ORDER BY name";
	uint64_t start = faucet__now_ms();
	PGresult *res = PQexec(c, sql);
	faucet_buf bad = FAUCET_BUF_INIT;

	/* Not being able to look is no failure of the store: say so, skip. */
	if (faucet__pg_result_ok(s, c, res, PGRES_TUPLES_OK, "cannot read the server's settings") != 0)
		return faucet_check_report_add(r, "durability", FAUCET_PROBE_SKIP,
					       faucet_error_last()->message,
					       faucet__now_ms() - start,
					       "check fsync, full_page_writes and synchronous_commit "
					       "on the server by hand");
	for (int i = 0; i < PQntuples(res); i++) {
		const char *name = PQgetvalue(res, i, 0), *value = PQgetvalue(res, i, 1);
		if (!setting_is_durable(name, value))
			(void)faucet__buf_printf(&bad, "%s%s=%s", bad.len ? ", " : "", name, value);
	}
	PQclear(res);
	return faucet__check_durability_verdict(
		r, &bad, start,
		"it can acknowledge a commit that a crash or power cut then loses, so a "
		"bookmark written just before one may be lost",
		"set fsync = on, full_page_writes = on and synchronous_commit = on in "
		"postgresql.conf (or ALTER SYSTEM SET ...; SELECT pg_reload_conf()), and for "
		"the role faucet connects as");
}


/* What a failover can cost (doc/design.md §3.9): the server's role, its
 * standbys as pg_stat_replication shows them to this role, and whether a
 * commit waits for one.  PASS when this is a primary whose commits wait for
 * a connected synchronous standby (synchronous_commit on, remote_write or
 * remote_apply); otherwise a WARN saying how an acknowledged write can be
 * lost - or, when synchronous_standby_names names no connected standby,
 * that every commit waits.  Not being able to look is a SKIP. */
static int replication_probe(pg_store *s, PGconn *c, faucet_check_report *r)
{
	static const char sql[] =
		"SELECT pg_is_in_recovery(), current_setting('synchronous_standby_names'), "
		"current_setting('synchronous_commit'), "
		"(SELECT count(*) FROM pg_stat_replication WHERE sync_state IN ('sync', 'quorum')), "
		"(SELECT count(*) FROM pg_stat_replication), "
		"coalesce((SELECT string_agg(coalesce(nullif(application_name, ''), '?') || ' at ' || "
		"coalesce(host(client_addr), 'local socket') || ' (' || coalesce(sync_state, '?') || ', ' "
		"|| coalesce(state, '?') || ')', ', ' ORDER BY application_name) "
		"FROM pg_stat_replication), 'none')";
	uint64_t start = faucet__now_ms();
	PGresult *res = PQexec(c, sql);
	const char *names, *commit, *standbys;
	long nsync, nall;
	int standby, rc, waits;
	char *reason;

	if (faucet__pg_result_ok(s, c, res, PGRES_TUPLES_OK, "cannot read the replication state") != 0)
		return faucet_check_report_add(r, "replication", FAUCET_PROBE_SKIP,
					       faucet_error_last()->message,
					       faucet__now_ms() - start,
					       "check pg_stat_replication and synchronous_standby_names "
					       "on the server by hand");
	standby = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	names = PQgetvalue(res, 0, 1);
	commit = PQgetvalue(res, 0, 2);
	nsync = strtol(PQgetvalue(res, 0, 3), NULL, 10);
	nall = strtol(PQgetvalue(res, 0, 4), NULL, 10);
	standbys = PQgetvalue(res, 0, 5);
	waits = strcmp(commit, "on") == 0 || strcmp(commit, "remote_write") == 0 ||
		strcmp(commit, "remote_apply") == 0;
	if (standby) {
		reason = faucet__sprintf("the server is a standby (in recovery, read-only): writes "
					 "fail until it is promoted");
		rc = reason ? faucet_check_report_add(r, "replication", FAUCET_PROBE_WARN, reason,
						      faucet__now_ms() - start,
						      "list every server in the URL (postgres://u@h1:p1,"
						      "h2:p2/db) with target_session_attrs=read-write")
			    : FAUCET_ENOMEM;
	} else if (nsync > 0 && waits) {
		reason = faucet__sprintf("primary; synchronous standby(s): %s; "
					 "synchronous_standby_names='%s', synchronous_commit=%s: an "
					 "acknowledged commit is on a standby too",
					 standbys, names, commit);
		rc = reason ? faucet_check_report_add(r, "replication", FAUCET_PROBE_PASS, reason,
						      faucet__now_ms() - start, NULL)
			    : FAUCET_ENOMEM;
	} else if (*names != '\0' && nsync == 0 && waits) {
		reason = faucet__sprintf("primary; synchronous_standby_names='%s' but no synchronous "
					 "standby is connected (standbys: %s): every commit waits "
					 "until one is",
					 names, standbys);
		rc = reason ? faucet_check_report_add(r, "replication", FAUCET_PROBE_WARN, reason,
						      faucet__now_ms() - start,
						      "start the standby, or clear synchronous_standby_names "
						      "(after a promotion the new primary keeps it)")
			    : FAUCET_ENOMEM;
	} else {
		reason = faucet__sprintf(
			"primary without a synchronous standby (standbys: %s; "
			"synchronous_standby_names='%s', synchronous_commit=%s): an acknowledged "
			"commit may exist on this server alone, and a failover to a standby can lose it",
			nall > 0 ? standbys : "none", names, commit);
		rc = reason ? faucet_check_report_add(r, "replication", FAUCET_PROBE_WARN, reason,
						      faucet__now_ms() - start,
						      "for failover without loss: a streaming standby, "
						      "synchronous_standby_names naming it and "
						      "synchronous_commit = on (README: When one server is not "
						      "enough)")
			    : FAUCET_ENOMEM;
	}
	free(reason);
	PQclear(res);
	return rc;
}

/* Four probes: "connect" (a connection and SELECT 1), "sentinel" (put,
 * get and delete of a unique key, no residue), "durability" (the
 * server's settings keep a commit once it is acknowledged) and
 * "replication" (replication_probe: what a failover can lose).  Statements run under a
 * statement_timeout of the doctor's timeout. */
static int pg_check(faucet_store_backend *b, const faucet_check_context *ctx,
		    faucet_check_report **out)
{
	pg_store *s = (pg_store *)b;
	uint64_t timeout = ctx->timeout_ms ? ctx->timeout_ms : 10000;
	uint64_t start = faucet__now_ms();
	char *hint = faucet__sprintf("check that the server in %s is reachable, the credentials "
				     "are right and table %s can be created or exists",
				     s->redacted, s->quoted);
	PGconn *c = NULL;
	int rc, failed, broken = 0;

	if (hint == NULL)
		return FAUCET_ENOMEM;
	rc = faucet_check_report_new(out);
	if (rc != 0) {
		free(hint);
		return rc;
	}
	failed = faucet__pool_acquire(s->pool, (void **)&c, NULL) != 0;
	if (!failed) {
		PGresult *res;
		if (set_timeout(c, timeout) != 0)
			failed = faucet__pg_fail(s, FAUCET_ERROR, "cannot set statement_timeout",
					 PQerrorMessage(c)) != 0;
		res = failed ? NULL : PQexec(c, "SELECT 1");
		if (!failed && faucet__pg_result_ok(s, c, res, PGRES_TUPLES_OK, "SELECT 1 failed") != 0)
			failed = 1;
		else if (res != NULL)
			PQclear(res);
	}
	rc = faucet__check_report_probe(*out, "connect", failed, start, hint);
	if (rc == 0 && c != NULL && !failed) {
		sync_wait_cancelled = 0;
		start = faucet__now_ms();
		rc = faucet__check_report_probe(*out, "sentinel", sentinel_round_trip(s, c) != 0, start, hint);
		if (rc == 0)
			rc = durability_probe(s, c, *out);
		if (rc == 0)
			rc = replication_probe(s, c, *out);
		PQclear(PQexec(c, "RESET statement_timeout"));
	}
	if (c != NULL) {
		broken = PQstatus(c) != CONNECTION_OK || PQtransactionStatus(c) != PQTRANS_IDLE;
		faucet__pool_release(s->pool, c, broken);
	}
	free(hint);
	if (rc != 0) {
		faucet_check_report_free(*out);
		*out = NULL;
	}
	return rc;
}

/* ---- open / free ------------------------------------------------------- */

static void pg_free(faucet_store_backend *b)
{
	pg_store *s = (pg_store *)b;

	faucet__pool_free(s->pool);
	pthread_mutex_destroy(&s->table_lock);
	free(s->url);
	free(s->redacted);
	free(s->password);
	free(s->table);
	free(s);
}

static int valid_table_name(const char *t)
{
	size_t n = strlen(t);

	if (n == 0 || n > 63)
		return 0;
	return strspn(t, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") == n;
}

/* The password of a postgres://user:password@host URL, else of its
 * ?password= option (as written: libpq echoes a bad %-escape raw), or
 * NULL. */
static char *url_password(const char *url)
{
	const char *auth = strstr(url, "://");
	const char *at, *colon, *slash, *q;

	if (auth == NULL)
		return NULL;
	auth += 3;
	at = strchr(auth, '@');
	slash = strchr(auth, '/');
	if (at != NULL && (slash == NULL || slash > at)) {
		colon = memchr(auth, ':', (size_t)(at - auth));
		if (colon != NULL && colon + 1 != at)
			return faucet__strndup(colon + 1, (size_t)(at - colon - 1));
	}
	for (q = strchr(auth, '?'); q != NULL; q = strchr(q + 1, '&')) {
		if (strncmp(q + 1, "password=", 9) == 0 && q[10] != '\0' && q[10] != '&')
			return faucet__strndup(q + 10, strcspn(q + 10, "&#"));
	}
	return NULL;
}

int faucet__store_open_postgres(faucet_store **out, const faucet_store_config *cfg)
{
	const char *table = cfg->table ? cfg->table : PG_DEFAULT_TABLE;
	int pool = cfg->max_connections ? cfg->max_connections : PG_DEFAULT_POOL;
	pg_store *s;
	int rc;

	*out = NULL;
	if (cfg->url == NULL || *cfg->url == '\0')
		return faucet_error_set(FAUCET_ECONFIG, "postgres state store needs a `url`");
	if (!valid_table_name(table))
		return faucet_error_set(FAUCET_ECONFIG,
					"postgres state store: table name '%s' is not allowed "
					"(1 to 63 of A-Z, a-z, 0-9 and _)",
					table);
	if (pool < 1)
		return faucet_error_set(FAUCET_ECONFIG,
					"postgres state store: max_connections must be at least 1, "
					"got %d",
					pool);
	if (!PQisthreadsafe())
		return faucet_error_set(FAUCET_ECONFIG,
					"the libpq library was built without thread support");
	s = faucet__calloc(1, sizeof(*s));
	if (s == NULL)
		return FAUCET_ENOMEM;
	s->url = faucet__strdup(cfg->url);
	s->redacted = faucet_url_redact(cfg->url);
	s->password = url_password(cfg->url);
	s->table = faucet__strdup(table);
	s->ensure_table = cfg->ensure_table;
	snprintf(s->quoted, sizeof(s->quoted), "\"%s\"", table);
	if (s->url == NULL || s->redacted == NULL || s->table == NULL ||
	    pthread_mutex_init(&s->table_lock, NULL) != 0) {
		free(s->url);
		free(s->redacted);
		free(s->password);
		free(s->table);
		free(s);
		return faucet_error_set(FAUCET_ENOMEM, "postgres state store: out of memory");
	}
	rc = faucet__pool_new(&s->pool, &pg_pool_ops, s, (size_t)pool);
	if (rc != 0) {
		s->pool = NULL;
		pg_free(&s->base);
		return rc;
	}
	s->base.version = FAUCET_STORE_BACKEND_VERSION;
	s->base.name = "postgres";
	s->base.get = pg_get;
	s->base.get_many = pg_get_many;
	s->base.scan_entries = pg_scan_entries;
	s->base.scan_data = pg_scan_data;
	s->base.put = pg_put;
	s->base.del = pg_del;
	s->base.scan = pg_scan;
	s->base.list_page = pg_list_page;
	s->base.compare_and_put = pg_compare_and_put;
	s->base.put_guarded = pg_put_guarded;
	s->base.compare_and_delete = pg_compare_and_delete;
	s->base.put_batch = pg_put_batch;
	s->base.compare_and_put_batch = pg_compare_and_put_batch;
	s->base.cas_batch_max = FAUCET__CAS_BATCH_ONE_TXN;
	s->base.check = pg_check;
	s->base.free = pg_free;
	return faucet_store_new(out, &s->base);
}
