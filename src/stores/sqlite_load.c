/*
 * sqlite_load.c - SQLite, loaded when the first SQLite store is opened
 * (see dynload.h for why and how; libpq_load.c is the same pattern).
 *
 * faucet__store_open_sqlite_vfs calls faucet__sqlite_load first, so a
 * missing library is an error at open naming the package; the stubs'
 * failure values are never seen, since no database handle exists before.
 * SQLITE_TRANSIENT and the other special destructors are constants, not
 * functions, and pass through the stubs unchanged.
 */
#include <sqlite3.h>
#include <stddef.h>

#include "internal.h"
#include "dynload.h"
#include "stores/loaders.h"
#include "stores/sqlite_internal.h"

static const char not_loaded[] = "SQLite could not be loaded";

#define SQLITE_FUNCTIONS(FN)                                                                   \
	FN(int, sqlite3_threadsafe, (void), (), 0)                                             \
	FN(int, sqlite3_open, (const char *filename, sqlite3 **ppDb), (filename, ppDb),        \
	   SQLITE_ERROR)                                                                       \
	FN(int, sqlite3_open_v2,                                                               \
	   (const char *filename, sqlite3 **ppDb, int flags, const char *zVfs),                \
	   (filename, ppDb, flags, zVfs), SQLITE_ERROR)                                        \
	FN(int, sqlite3_close, (sqlite3 * db), (db), SQLITE_ERROR)                             \
	FN(int, sqlite3_close_v2, (sqlite3 * db), (db), SQLITE_ERROR)                          \
	FN(int, sqlite3_busy_timeout, (sqlite3 * db, int ms), (db, ms), SQLITE_ERROR)          \
	FN(int, sqlite3_sleep, (int ms), (ms), 0)                                              \
	FN(int, sqlite3_exec,                                                                  \
	   (sqlite3 * db, const char *sql, int (*callback)(void *, int, char **, char **),     \
	    void *arg, char **errmsg),                                                         \
	   (db, sql, callback, arg, errmsg), SQLITE_ERROR)                                     \
	FN(int, sqlite3_prepare_v2,                                                            \
	   (sqlite3 * db, const char *zSql, int nByte, sqlite3_stmt **ppStmt,                  \
	    const char **pzTail),                                                              \
	   (db, zSql, nByte, ppStmt, pzTail), SQLITE_ERROR)                                    \
	FN(int, sqlite3_prepare_v3,                                                            \
	   (sqlite3 * db, const char *zSql, int nByte, unsigned int prepFlags,                 \
	    sqlite3_stmt **ppStmt, const char **pzTail),                                       \
	   (db, zSql, nByte, prepFlags, ppStmt, pzTail), SQLITE_ERROR)                         \
	FN(int, sqlite3_bind_text,                                                             \
	   (sqlite3_stmt * stmt, int i, const char *text, int n, void (*destructor)(void *)),  \
	   (stmt, i, text, n, destructor), SQLITE_ERROR)                                       \
	FN(int, sqlite3_bind_int64, (sqlite3_stmt * stmt, int i, sqlite3_int64 value),        \
	   (stmt, i, value), SQLITE_ERROR)                                                     \
	FN(int, sqlite3_step, (sqlite3_stmt * stmt), (stmt), SQLITE_ERROR)                     \
	FN(int, sqlite3_reset, (sqlite3_stmt * pStmt), (pStmt), SQLITE_ERROR)                  \
	FN(int, sqlite3_clear_bindings, (sqlite3_stmt * stmt), (stmt), SQLITE_ERROR)           \
	FN(int, sqlite3_finalize, (sqlite3_stmt * pStmt), (pStmt), SQLITE_ERROR)               \
	FN(const unsigned char *, sqlite3_column_text, (sqlite3_stmt * stmt, int iCol),        \
	   (stmt, iCol), NULL)                                                                 \
	FN(int, sqlite3_column_bytes, (sqlite3_stmt * stmt, int iCol), (stmt, iCol), 0)        \
	FN(sqlite3_int64, sqlite3_column_int64, (sqlite3_stmt * stmt, int iCol), (stmt, iCol), \
	   0)                                                                                  \
	FN(int, sqlite3_get_autocommit, (sqlite3 * db), (db), 1)                               \
	FN(int, sqlite3_errcode, (sqlite3 * db), (db), SQLITE_ERROR)                           \
	FN(const char *, sqlite3_errmsg, (sqlite3 * db), (db), not_loaded)                     \
	FN(sqlite3_vfs *, sqlite3_vfs_find, (const char *zVfsName), (zVfsName), NULL)          \
	FN(int, sqlite3_vfs_register, (sqlite3_vfs * vfs, int makeDflt), (vfs, makeDflt),      \
	   SQLITE_ERROR)

#define DYN_TABLE sq
#define DYN_LIB libsqlite
static struct {
	SQLITE_FUNCTIONS(FAUCET_DYN_SLOT)
} sq;

static const faucet_dynsym sq_syms[] = {SQLITE_FUNCTIONS(FAUCET_DYN_SYM)};

static faucet_dynlib libsqlite =
	FAUCET_DYNLIB_INIT("the SQLite store", "libsqlite3.so.0", "libsqlite3-0", sq_syms);

int faucet__sqlite_load(void)
{
	return faucet__dynlib_ensure(&libsqlite);
}

SQLITE_FUNCTIONS(FAUCET_DYN_STUB)
