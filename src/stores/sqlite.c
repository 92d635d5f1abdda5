/*
 * sqlite.c - the SQLite state store ("sqlite:PATH").
 *
 * Layout (shared with the original faucet): one table
 *
 *   faucet_state(key TEXT PRIMARY KEY, value TEXT NOT NULL, updated_at TEXT)
 *
 * holding each value's compact JSON text, so what was written is read back
 * byte for byte.
 *
 * Durability: the database runs in WAL mode with synchronous=FULL, so every
 * COMMIT fsyncs the write-ahead log before it returns - a put that returned
 * survives a power cut.  Several processes may share one file; a writer that
 * finds the database locked waits up to BUSY_TIMEOUT_MS (SQLite's busy
 * handler) before it reports the lock.
 *
 * Threads: a SQLite connection must not be used by two threads at once, and
 * its prepared statements belong to it.  We keep a small pool of connections
 * (pool.c), each with its statements prepared once, and give one to each
 * operation.  A pool rather than one connection per thread: an application
 * with many short-lived threads would otherwise leak connections, and WAL
 * lets the pooled connections read in parallel anyway.
 *
 * Permissions: the database is created by us, owner-only (0600), before
 * SQLite opens it.  SQLite would create it 0644 minus the umask, and it
 * gives the -wal and -shm files the database's own mode (fchmod-ing them
 * past the umask), so an owner-only database means owner-only companions.
 * An existing database keeps the mode its owner gave it.
 *
 * Atomicity: compare-and-put and put_batch run in one BEGIN IMMEDIATE
 * transaction, which takes the database's write lock up front, so no other
 * connection or process can write between our read and our write.
 */
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "values/value_internal.h"
#include "store/open_internal.h"
#include "stores/registry.h"
#include "stores/loaders.h"
#include "stores/pool.h"
#include "stores/sqlite_internal.h"

#define BUSY_TIMEOUT_MS 10000
/* The tests' override of BUSY_TIMEOUT_MS (0 = none). */
static atomic_int busy_timeout_override;
#define SQLITE_POOL_SIZE FAUCET_SQLITE_POOL_SIZE

enum {
	ST_GET,
	ST_PUT,
	ST_DEL,
	ST_LIST_ALL,
	ST_LIST_FROM,
	ST_LIST_RANGE,
	ST_PAGE_GE, /* list_page: these four in this order (see sq_list_page) */
	ST_PAGE_GT,
	ST_PAGE_GE_LT,
	ST_PAGE_GT_LT,
	ST_BEGIN,
	ST_COMMIT,
	ST_ROLLBACK,
	ST_COUNT
};

/* Statements, in the order of the enum above.  updated_at is ISO 8601 UTC
 * with milliseconds; SQLite's default BINARY collation compares keys with
 * memcmp, which is byte order - what list() promises. */
static const char *const statement_sql[ST_COUNT] = {
	"SELECT value FROM faucet_state WHERE key = ?1",
	"INSERT INTO faucet_state (key, value, updated_at) "
	"VALUES (?1, ?2, ?3) "
	"ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
	"DELETE FROM faucet_state WHERE key = ?1",
	"SELECT key FROM faucet_state ORDER BY key",
	"SELECT key FROM faucet_state WHERE key >= ?1 ORDER BY key",
	"SELECT key FROM faucet_state WHERE key >= ?1 AND key < ?2 ORDER BY key",
	/* One bound each side, so the page is one walk of the key index from
	 * its first row; ?3 is the page's size. */
	"SELECT key FROM faucet_state WHERE key >= ?1 ORDER BY key LIMIT ?3",
	"SELECT key FROM faucet_state WHERE key > ?1 ORDER BY key LIMIT ?3",
	"SELECT key FROM faucet_state WHERE key >= ?1 AND key < ?2 ORDER BY key LIMIT ?3",
	"SELECT key FROM faucet_state WHERE key > ?1 AND key < ?2 ORDER BY key LIMIT ?3",
	"BEGIN IMMEDIATE",
	"COMMIT",
	"ROLLBACK",
};

static const char schema_sql[] =
	"CREATE TABLE IF NOT EXISTS faucet_state ("
	" key TEXT PRIMARY KEY NOT NULL,"
	" value TEXT NOT NULL,"
	" updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))";

typedef struct {
	sqlite3 *db;
	sqlite3_stmt *st[ST_COUNT];
} sq_conn;

typedef struct faucet_sqlite_store {
	faucet_store_backend base;
	char *path;
	char *vfs; /* NULL = SQLite's default VFS; another only in tests */
	faucet_pool *pool;
} sqlite_store;

void faucet__sqlite_set_busy_timeout_ms(int ms)
{
	atomic_store(&busy_timeout_override, ms);
}

static int busy_timeout_ms(void)
{
	int ms = atomic_load(&busy_timeout_override);

	return ms > 0 ? ms : BUSY_TIMEOUT_MS;
}

/* Set the last error from a connection's SQLite error.  A database that
 * stayed locked by another connection past the busy timeout is
 * FAUCET_EBUSY, which callers may retry; anything else is a failure. */
static int sq_error(const sqlite_store *s, sqlite3 *db, const char *what)
{
	int primary = db ? sqlite3_errcode(db) & 0xff : SQLITE_NOMEM;
	int code = primary == SQLITE_BUSY || primary == SQLITE_LOCKED ? FAUCET_EBUSY : FAUCET_ERROR;

	return faucet_error_set(code, "sqlite state store %s: %s: %s", s->path, what,
				db ? sqlite3_errmsg(db) : "out of memory");
}

static void sq_disconnect(void *conn)
{
	sq_conn *c = conn;

	for (size_t i = 0; i < ST_COUNT; i++)
		sqlite3_finalize(c->st[i]);
	sqlite3_close_v2(c->db);
	free(c);
}

/* Run one setup statement; PRAGMA journal_mode may answer SQLITE_BUSY without
 * consulting the busy handler when another process is switching the mode at
 * the same moment, so retry that case for as long as the busy timeout. */
static int sq_setup_exec(sqlite3 *db, const char *sql)
{
	uint64_t deadline = faucet__now_ms() + (uint64_t)busy_timeout_ms();
	int rc;

	for (;;) {
		rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
		if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) || faucet__now_ms() >= deadline)
			return rc;
		sqlite3_sleep(5);
	}
}

/* Create the database file owner-only when it does not exist yet (see the
 * header).  O_EXCL: an existing file, or a symlink, is left alone - SQLite
 * opens it as it is. */
static int create_owner_only(const sqlite_store *s)
{
	int fd = open(s->path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);

	if (fd < 0) {
		if (errno == EEXIST)
			return 0;
		return faucet__error_os(FAUCET_ERROR, errno,
					"sqlite state store %s: cannot create the database",
					s->path);
	}
	/* The umask may have taken bits off 0600 (0400 under umask 0200). */
	if (fchmod(fd, 0600) != 0) {
		int err = errno;
		(void)close(fd);
		(void)unlink(s->path);
		return faucet__error_os(FAUCET_ERROR, err,
					"sqlite state store %s: cannot make the database owner-only",
					s->path);
	}
	if (close(fd) != 0) {
		int err = errno;
		(void)unlink(s->path);
		return faucet__error_os(FAUCET_ERROR, err,
					"sqlite state store %s: cannot create the database",
					s->path);
	}
	/* The new name needs no directory sync of ours: before SQLite
	 * acknowledges the first write it creates a rollback journal and then
	 * the WAL beside the database, and the unix VFS fsyncs the directory
	 * on each one's first sync - which makes this entry durable too, as it
	 * lives in the same directory.  (An extra fsync here would be one that
	 * no crash test can tell apart from its absence.) */
	return 0;
}

static int sq_connect(void *owner, void **out)
{
	sqlite_store *s = owner;
	sq_conn *c = faucet__calloc(1, sizeof(*c));
	int rc;

	if (c == NULL)
		return FAUCET_ENOMEM;
	rc = create_owner_only(s);
	if (rc != 0) {
		free(c);
		return rc;
	}
	/* NOMUTEX: the pool guarantees one thread per connection at a time. */
	rc = sqlite3_open_v2(s->path, &c->db,
			     SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
			     s->vfs);
	if (rc != SQLITE_OK) {
		(void)sq_error(s, c->db, "cannot open the database");
		sq_disconnect(c);
		return FAUCET_ERROR;
	}
	sqlite3_busy_timeout(c->db, busy_timeout_ms());
	if (sq_setup_exec(c->db, "PRAGMA journal_mode=WAL") != SQLITE_OK ||
	    sq_setup_exec(c->db, "PRAGMA synchronous=FULL") != SQLITE_OK ||
	    sq_setup_exec(c->db, schema_sql) != SQLITE_OK) {
		rc = sq_error(s, c->db, "cannot set up the faucet_state table");
		sq_disconnect(c);
		return rc;
	}
	for (size_t i = 0; i < ST_COUNT; i++) {
		if (sqlite3_prepare_v3(c->db, statement_sql[i], -1, SQLITE_PREPARE_PERSISTENT,
				       &c->st[i], NULL) != SQLITE_OK) {
			(void)sq_error(s, c->db, "cannot prepare a statement");
			sq_disconnect(c);
			return FAUCET_ERROR;
		}
	}
	*out = c;
	return 0;
}

/* No `abandon`: in a forked child the pool closes the inherited connections
 * with sq_disconnect before opening its own, as SQLite asks ("a connection
 * used in a child process must be opened in the child").  Closing is safe
 * there: the child holds none of its parent's POSIX locks, so releasing
 * them changes nothing for the parent, and the last-close checkpoint that
 * deletes the WAL needs an exclusive lock the parent's open connections
 * deny.  Closing (rather than leaking) also clears SQLite's per-process
 * record of the file's locks, which was copied from the parent and would
 * otherwise let the child's new connections believe they hold locks they
 * do not. */
static const faucet_pool_ops sq_pool_ops = {sq_connect, sq_disconnect, NULL, NULL, NULL};

static void st_done(sqlite3_stmt *st)
{
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
}

/* Run a statement that returns no rows. */
static int st_exec(sqlite_store *s, sq_conn *c, int which, const char *what)
{
	sqlite3_stmt *st = c->st[which];
	int rc = sqlite3_step(st);

	st_done(st);
	if (rc != SQLITE_DONE)
		return sq_error(s, c->db, what);
	return 0;
}

/* A stored text that is not JSON: say which key and where, and never hand
 * back an altered or empty bookmark. */
static int bad_stored_value(const sqlite_store *s, const char *key, const char *why)
{
	return faucet_error_set(FAUCET_ERROR,
				"sqlite state store %s: the value of key '%s' in table faucet_state "
				"is not valid JSON (%s)",
				s->path, key, why);
}

static int read_value(sqlite_store *s, sq_conn *c, const char *key, faucet_value **out)
{
	sqlite3_stmt *st = c->st[ST_GET];
	int rc;

	*out = NULL;
	if (sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC) != SQLITE_OK) {
		st_done(st);
		return sq_error(s, c->db, "cannot bind a key");
	}
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		const char *text = (const char *)sqlite3_column_text(st, 0);
		int len = sqlite3_column_bytes(st, 0);

		if (text == NULL) {
			rc = bad_stored_value(s, key, "it is NULL");
		} else if ((rc = faucet_value_parse(out, text, (size_t)len)) == FAUCET_ENOMEM) {
			/* Out of memory says nothing about the stored text. */
			(void)faucet__error_wrap("sqlite state store %s: cannot read key '%s'",
						 s->path, key);
		} else if (rc != 0) {
			char *why = faucet__strdup(faucet_error_last()->message);
			rc = bad_stored_value(s, key, why ? why : "unparsable");
			free(why);
		}
	} else if (rc == SQLITE_DONE) {
		rc = 0;
	} else {
		rc = sq_error(s, c->db, "cannot read a key");
	}
	st_done(st);
	return rc;
}

/* updated_at as SQLite's strftime('%Y-%m-%dT%H:%M:%fZ', 'now') writes it
 * (the schema's default), computed once per write or batch in C: asking
 * SQLite for the time on every row costs more than the row itself. */
typedef struct {
	char text[64];
} sq_stamp;

static void stamp_now(sq_stamp *out)
{
	struct timespec ts;
	struct tm tm;

	(void)clock_gettime(CLOCK_REALTIME, &ts);
	(void)gmtime_r(&ts.tv_sec, &tm);
	(void)snprintf(out->text, sizeof(out->text), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
		       tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
		       tm.tm_sec, (int)(ts.tv_nsec / 1000000));
}

static int write_value(sqlite_store *s, sq_conn *c, const char *key, const faucet_value *v,
		       const sq_stamp *when)
{
	sqlite3_stmt *st = c->st[ST_PUT];

	if (sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_text(st, 2, faucet_value_json(v), (int)faucet_value_len(v),
			      SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_text(st, 3, when->text, -1, SQLITE_STATIC) != SQLITE_OK) {
		st_done(st);
		return sq_error(s, c->db, "cannot bind a value");
	}
	return st_exec(s, c, ST_PUT, "cannot write a key");
}

static int with_conn(sqlite_store *s, sq_conn **c)
{
	return faucet__pool_acquire(s->pool, (void **)c, NULL);
}

/* Hand a connection back.  A connection whose error left a transaction open
 * (it cannot roll back) is closed rather than reused. */
static void give_back(sqlite_store *s, sq_conn *c)
{
	faucet__pool_release(s->pool, c, !sqlite3_get_autocommit(c->db));
}

static int sq_get(faucet_store_backend *b, const char *key, faucet_value **out)
{
	sqlite_store *s = (sqlite_store *)b;
	sq_conn *c;
	int rc = with_conn(s, &c);

	if (rc != 0)
		return rc;
	rc = read_value(s, c, key, out);
	give_back(s, c);
	return rc;
}

/* Many reads in one read transaction: outside one, every SELECT opens and
 * closes its own, and that locking (fcntl and fstat on the database and
 * its WAL index) costs more than the read. */
static int sq_get_many(faucet_store_backend *b, const char *const *keys, size_t count,
		       faucet_value **out)
{
	sqlite_store *s = (sqlite_store *)b;
	sq_conn *c;
	int rc = with_conn(s, &c);

	if (rc != 0)
		return rc;
	if (sqlite3_exec(c->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
		rc = sq_error(s, c->db, "cannot begin a read");
	for (size_t i = 0; i < count && rc == 0; i++)
		rc = read_value(s, c, keys[i], &out[i]);
	if (rc == 0 && sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		rc = sq_error(s, c->db, "cannot end a read");
	if (rc != 0) {
		(void)sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
		for (size_t i = 0; i < count; i++) {
			faucet_value_free(out[i]);
			out[i] = NULL;
		}
	}
	give_back(s, c);
	return rc;
}

static int sq_put(faucet_store_backend *b, const char *key, const faucet_value *value)
{
	sqlite_store *s = (sqlite_store *)b;
	sq_stamp when;
	sq_conn *c;
	int rc = with_conn(s, &c);

	if (rc != 0)
		return rc;
	stamp_now(&when);
	rc = write_value(s, c, key, value, &when);
	give_back(s, c);
	return rc;
}

static int delete_on(sqlite_store *s, sq_conn *c, const char *key)
{
	if (sqlite3_bind_text(c->st[ST_DEL], 1, key, -1, SQLITE_STATIC) != SQLITE_OK) {
		st_done(c->st[ST_DEL]);
		return sq_error(s, c->db, "cannot bind a key");
	}
	return st_exec(s, c, ST_DEL, "cannot delete a key");
}

static int sq_del(faucet_store_backend *b, const char *key)
{
	sqlite_store *s = (sqlite_store *)b;
	sq_conn *c;
	int rc = with_conn(s, &c);

	if (rc != 0)
		return rc;
	rc = delete_on(s, c, key);
	give_back(s, c);
	return rc;
}

/* The smallest string greater than every string starting with `prefix`:
 * drop trailing 0xFF bytes, then add one to the last byte.  Returns 0 when
 * there is none (the prefix is all 0xFF), so the range has no upper end.
 * A range instead of LIKE: '_' and '%' in a prefix stay literal. */
static size_t prefix_successor(const char *prefix, char *succ)
{
	size_t n = strlen(prefix);

	memcpy(succ, prefix, n);
	while (n > 0 && (unsigned char)succ[n - 1] == 0xFF)
		n--;
	if (n == 0)
		return 0;
	succ[n - 1] = (char)((unsigned char)succ[n - 1] + 1);
	succ[n] = '\0';
	return n;
}

/* Keys are handed to fn straight from SQLite's row, so listing copies each
 * key once (into the caller's list, front-end) and scanning copies none. */
static int sq_scan(faucet_store_backend *b, const char *prefix, faucet_key_fn fn, void *ctx)
{
	sqlite_store *s = (sqlite_store *)b;
	char *succ = NULL;
	sqlite3_stmt *st;
	sq_conn *c;
	int rc, step;

	if (*prefix != '\0') {
		succ = faucet__malloc(strlen(prefix) + 1);
		if (succ == NULL)
			return FAUCET_ENOMEM;
	}
	rc = with_conn(s, &c);
	if (rc != 0) {
		free(succ);
		return rc;
	}
	if (*prefix == '\0') {
		st = c->st[ST_LIST_ALL];
	} else if (prefix_successor(prefix, succ) == 0) {
		st = c->st[ST_LIST_FROM];
		rc = sqlite3_bind_text(st, 1, prefix, -1, SQLITE_STATIC);
	} else {
		st = c->st[ST_LIST_RANGE];
		rc = sqlite3_bind_text(st, 1, prefix, -1, SQLITE_STATIC);
		if (rc == SQLITE_OK)
			rc = sqlite3_bind_text(st, 2, succ, -1, SQLITE_STATIC);
	}
	if (rc != SQLITE_OK)
		rc = sq_error(s, c->db, "cannot bind a prefix");
	while (rc == 0 && (step = sqlite3_step(st)) == SQLITE_ROW) {
		const char *key = (const char *)sqlite3_column_text(st, 0);
		if (key != NULL)
			rc = fn(key, ctx);
	}
	if (rc == 0 && step != SQLITE_DONE)
		rc = sq_error(s, c->db, "cannot list keys");
	st_done(st);
	give_back(s, c);
	free(succ);
	return rc;
}

/* The page's statement with its bounds bound: from just after `after` when
 * that lies inside the prefix's range, else from the prefix; up to the
 * prefix's successor when it has one. */
static int bind_page(sq_conn *c, const char *prefix, const char *after, const char *succ,
		     size_t limit, sqlite3_stmt **out)
{
	int gt = after != NULL && strcmp(after, prefix) >= 0;
	int upper = succ != NULL && *succ != '\0';
	sqlite3_stmt *st = c->st[ST_PAGE_GE + gt + 2 * upper];
	int rc = sqlite3_bind_text(st, 1, gt ? after : prefix, -1, SQLITE_STATIC);

	if (rc == SQLITE_OK && upper)
		rc = sqlite3_bind_text(st, 2, succ, -1, SQLITE_STATIC);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(st, 3, (sqlite3_int64)limit);
	*out = st;
	return rc;
}

/* One page: one statement on one pooled connection, given back before
 * returning, so an iterator holds no connection between pages. */
static int sq_list_page(faucet_store_backend *b, const char *prefix, const char *after,
			size_t limit, faucet_strarray *out)
{
	sqlite_store *s = (sqlite_store *)b;
	char *succ = faucet__malloc(strlen(prefix) + 1);
	sqlite3_stmt *st = NULL;
	sq_conn *c;
	int rc, step = SQLITE_DONE;

	if (succ == NULL)
		return FAUCET_ENOMEM;
	if (prefix_successor(prefix, succ) == 0)
		*succ = '\0';
	rc = with_conn(s, &c);
	if (rc != 0) {
		free(succ);
		return rc;
	}
	if (bind_page(c, prefix, after, succ, limit, &st) != SQLITE_OK)
		rc = sq_error(s, c->db, "cannot bind a page's bounds");
	while (rc == 0 && (step = sqlite3_step(st)) == SQLITE_ROW) {
		const char *key = (const char *)sqlite3_column_text(st, 0);
		if (key != NULL)
			rc = faucet__strarray_push(out, key);
	}
	if (rc == 0 && step != SQLITE_DONE)
		rc = sq_error(s, c->db, "cannot list a page of keys");
	st_done(st);
	give_back(s, c);
	free(succ);
	if (rc != 0)
		faucet_strarray_dispose(out);
	return rc;
}

/* Undo an open transaction after an error, keeping the first error's
 * message (the rollback's own failure would only hide it). */
static void rollback_quietly(sq_conn *c)
{
	sqlite3_stmt *st = c->st[ST_ROLLBACK];

	if (!sqlite3_get_autocommit(c->db)) {
		(void)sqlite3_step(st);
		st_done(st);
	}
}

/* The end of a write transaction: committed when everything before went
 * well (rc 0), else rolled back; the transaction's outcome returned. */
static int end_write(sqlite_store *s, sq_conn *c, int rc, const char *what)
{
	if (rc == 0)
		rc = st_exec(s, c, ST_COMMIT, what);
	if (rc != 0)
		rollback_quietly(c);
	return rc;
}

/* Compare-and-put (value given) or compare-and-delete (value NULL): read,
 * compare and act inside one BEGIN IMMEDIATE transaction - with then_key,
 * also put then_value there in the same transaction (put_guarded). */
static int compare_and_act(sqlite_store *s, const char *key, const faucet_value *expected,
			   const faucet_value *value, const char *then_key,
			   const faucet_value *then_value, int *done)
{
	faucet_value *current = NULL;
	sq_stamp when;
	sq_conn *c;
	int rc = with_conn(s, &c);

	*done = 0;
	if (rc != 0)
		return rc;
	rc = st_exec(s, c, ST_BEGIN, "cannot take the write lock");
	if (rc == 0)
		rc = read_value(s, c, key, &current);
	if (rc == 0 && faucet_value_equal(current, expected)) {
		if (value != NULL) {
			stamp_now(&when);
			rc = write_value(s, c, key, value, &when);
			if (rc == 0 && then_key != NULL)
				rc = write_value(s, c, then_key, then_value, &when);
		} else {
			rc = delete_on(s, c, key);
		}
		if (rc == 0)
			*done = 1;
	}
	/* Committed even when nothing changed: it only releases the lock. */
	if ((rc = end_write(s, c, rc, "cannot commit")) != 0)
		*done = 0;
	faucet_value_free(current);
	give_back(s, c);
	return rc;
}

static int sq_compare_and_put(faucet_store_backend *b, const char *key,
			      const faucet_value *expected, const faucet_value *value,
			      int *written)
{
	return compare_and_act((sqlite_store *)b, key, expected, value, NULL, NULL, written);
}

/* The guard and the key in one transaction: both written or neither. */
static int sq_put_guarded(faucet_store_backend *b, const char *guard,
			  const faucet_value *expected, const faucet_value *guard_value,
			  const char *key, const faucet_value *value, int *written)
{
	return compare_and_act((sqlite_store *)b, guard, expected, guard_value, key, value,
			       written);
}

/* Inside a transaction: whether every key holds its expected value
 * (*holds), read until the first that does not. */
static int each_holds(sqlite_store *s, sq_conn *c, const faucet_store_guard *g, size_t n,
		      int *holds)
{
	int rc = 0;

	*holds = 1;
	for (size_t i = 0; rc == 0 && *holds && i < n; i++) {
		faucet_value *current = NULL;

		rc = read_value(s, c, g[i].key, &current);
		*holds = rc == 0 && faucet_value_equal(current, g[i].expected);
		faucet_value_free(current);
	}
	return rc;
}

/* Every guard and the key's condition compared, then all of it written -
 * guards, drops, the key, `then` - in one BEGIN IMMEDIATE transaction. */
static int sq_put_guarded_if(faucet_store_backend *b, const faucet_store_guard *guards, size_t n,
			     const char *const *drop, size_t ndrop, const faucet_store_guard *put,
			     const faucet_store_guard *then, int *written, int *then_written,
			     int *moved)
{
	sqlite_store *s = (sqlite_store *)b;
	sq_stamp when;
	sq_conn *c;
	int rc = with_conn(s, &c), holds = 1;

	*written = 0;
	*then_written = 0;
	*moved = 0;
	if (rc != 0)
		return rc;
	rc = st_exec(s, c, ST_BEGIN, "cannot take the write lock");
	if (rc == 0)
		rc = each_holds(s, c, guards, n, &holds);
	if (rc == 0 && holds) {
		rc = each_holds(s, c, put, 1, &holds);
		*moved = rc == 0 && !holds;
	}
	if (rc == 0 && holds) {
		stamp_now(&when);
		for (size_t i = 0; rc == 0 && i < n; i++)
			rc = write_value(s, c, guards[i].key, guards[i].value, &when);
		for (size_t i = 0; rc == 0 && i < ndrop; i++)
			rc = delete_on(s, c, drop[i]);
		if (rc == 0)
			rc = write_value(s, c, put->key, put->value, &when);
		if (rc == 0 && then != NULL)
			rc = write_value(s, c, then->key, then->value, &when);
	}
	/* Committed even when nothing changed: it only releases the lock. */
	if ((rc = end_write(s, c, rc, "cannot commit")) != 0) {
		*moved = 0;
	} else if (holds) {
		*written = 1;
		*then_written = then != NULL;
	}
	give_back(s, c);
	return rc;
}

/* Every entry's condition compared, then every write made, in one BEGIN
 * IMMEDIATE transaction: all or nothing. */
static int sq_compare_and_put_batch(faucet_store_backend *b, const faucet_store_guard *entries,
				    size_t n, int *written)
{
	sqlite_store *s = (sqlite_store *)b;
	sq_stamp when;
	sq_conn *c;
	int rc = with_conn(s, &c), holds = 1;

	*written = 0;
	if (rc != 0)
		return rc;
	rc = st_exec(s, c, ST_BEGIN, "cannot take the write lock");
	if (rc == 0)
		rc = each_holds(s, c, entries, n, &holds);
	if (rc == 0 && holds) {
		stamp_now(&when);
		for (size_t i = 0; rc == 0 && i < n; i++)
			rc = entries[i].value != NULL
				     ? write_value(s, c, entries[i].key, entries[i].value, &when)
				     : delete_on(s, c, entries[i].key);
	}
	/* Committed even when nothing changed: it only releases the lock. */
	if ((rc = end_write(s, c, rc, "cannot commit")) == 0)
		*written = holds;
	give_back(s, c);
	return rc;
}

static int sq_compare_and_delete(faucet_store_backend *b, const char *key,
				 const faucet_value *expected, int *deleted)
{
	return compare_and_act((sqlite_store *)b, key, expected, NULL, NULL, NULL, deleted);
}

static int sq_put_batch(faucet_store_backend *b, const faucet_entry *entries, size_t count)
{
	sqlite_store *s = (sqlite_store *)b;
	sq_stamp when;
	sq_conn *c;
	int rc = with_conn(s, &c);

	if (rc != 0)
		return rc;
	stamp_now(&when);
	rc = st_exec(s, c, ST_BEGIN, "cannot take the write lock");
	for (size_t i = 0; i < count && rc == 0; i++)
		rc = write_value(s, c, entries[i].key, entries[i].value, &when);
	rc = end_write(s, c, rc, "cannot commit a batch");
	give_back(s, c);
	return rc;
}

/* Doctor: put, read back and delete a sentinel key through the real code
 * path; a pass proves the file opens, the table exists and commits work. */
static int sq_check(faucet_store_backend *b, const faucet_check_context *ctx,
		    faucet_check_report **out)
{
	sqlite_store *s = (sqlite_store *)b;
	uint64_t start = faucet__now_ms();
	char *reason = NULL, *hint = NULL;
	int rc;

	(void)ctx;
	if (faucet__sentinel_round_trip(b) != 0) {
		reason = faucet__strdup(faucet_error_last()->message);
		hint = faucet__sprintf("ensure %s can be created and written (its directory "
				       "exists and is writable)",
				       s->path);
	}
	rc = faucet_check_report_new(out);
	if (rc == 0)
		rc = faucet_check_report_add(*out, "sentinel",
					     reason ? FAUCET_PROBE_FAIL : FAUCET_PROBE_PASS,
					     reason, faucet__now_ms() - start, hint);
	if (rc != 0) {
		faucet_check_report_free(*out);
		*out = NULL;
	}
	free(reason);
	free(hint);
	return rc;
}

static void sq_free(faucet_store_backend *b)
{
	sqlite_store *s = (sqlite_store *)b;

	faucet__pool_free(s->pool);
	free(s->path);
	free(s->vfs);
	free(s);
}

/* Open the store; the database file is opened (and created) by the first
 * operation, so a bad path is reported by that operation and by doctor. */
int faucet__store_open_sqlite_vfs(faucet_store **out, const char *path, const char *vfs,
				  faucet_sqlite_store **handle)
{
	sqlite_store *s;
	int rc;

	*out = NULL;
	if (handle != NULL)
		*handle = NULL;
	if (path == NULL || *path == '\0')
		return faucet_error_set(FAUCET_ECONFIG, "sqlite state store needs a `path`");
	if ((rc = faucet__sqlite_load()) != 0)
		return rc;
	if (!sqlite3_threadsafe())
		return faucet_error_set(FAUCET_ECONFIG,
					"the SQLite library was built without thread support");
	s = faucet__calloc(1, sizeof(*s));
	if (s == NULL)
		return FAUCET_ENOMEM;
	s->path = faucet__strdup(path);
	s->vfs = vfs ? faucet__strdup(vfs) : NULL;
	rc = s->path == NULL || (vfs != NULL && s->vfs == NULL) ? FAUCET_ENOMEM : 0;
	if (rc == 0)
		rc = faucet__pool_new(&s->pool, &sq_pool_ops, s, SQLITE_POOL_SIZE);
	if (rc != 0) {
		free(s->path);
		free(s->vfs);
		free(s);
		return rc;
	}
	s->base.version = FAUCET_STORE_BACKEND_VERSION;
	s->base.name = "sqlite";
	s->base.get = sq_get;
	s->base.put = sq_put;
	s->base.del = sq_del;
	s->base.scan = sq_scan;
	s->base.list_page = sq_list_page;
	s->base.compare_and_put = sq_compare_and_put;
	s->base.put_guarded = sq_put_guarded;
	s->base.put_guarded_if = sq_put_guarded_if;
	s->base.compare_and_delete = sq_compare_and_delete;
	s->base.compare_and_put_batch = sq_compare_and_put_batch;
	s->base.cas_batch_max = FAUCET__CAS_BATCH_ONE_TXN;
	s->base.put_batch = sq_put_batch;
	s->base.check = sq_check;
	s->base.get_many = sq_get_many;
	s->base.free = sq_free;
	rc = faucet_store_new(out, &s->base);
	if (rc == 0 && handle != NULL)
		*handle = s;
	return rc;
}

int faucet__store_open_sqlite(faucet_store **out, const char *path)
{
	return faucet__store_open_sqlite_vfs(out, path, NULL, NULL);
}

int faucet__sqlite_with_connection(faucet_sqlite_store *s, int (*fn)(sqlite3 *db, void *ctx),
				   void *ctx)
{
	sq_conn *c;
	int rc = with_conn(s, &c);

	if (rc != 0)
		return rc;
	rc = fn(c->db, ctx);
	give_back(s, c);
	return rc;
}
