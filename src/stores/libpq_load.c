/*
 * libpq_load.c - libpq, loaded when the first PostgreSQL store is opened
 * (see dynload.h for why and how).
 *
 * LIBPQ_FUNCTIONS is the one list of the libpq functions libfaucet calls:
 * return type, name, parameters, the arguments passed on, and what the
 * stub returns if libpq cannot be loaded.  From it come the table of
 * pointers, the names to resolve, and a stub with libpq's own name and
 * prototype for each.  A new call in postgres.c that is missing here fails
 * the link ("undefined reference to PQ..."): add one line.  Every function
 * listed must exist in the installed libpq, or opening a PostgreSQL store
 * fails naming it.
 *
 * The failure values are never seen in practice: no PGconn exists before
 * the library is loaded, and the opener loads it first.
 */
#include <libpq-fe.h>
#include <stddef.h>

#include "internal.h"
#include "dynload.h"
#include "stores/loaders.h"

static char not_loaded[] = "libpq could not be loaded";

#define LIBPQ_FUNCTIONS(FN, VOID_FN)                                                            \
	FN(PGconn *, PQconnectdb, (const char *conninfo), (conninfo), NULL)                     \
	FN(PGconn *, PQconnectdbParams,                                                         \
	   (const char *const *keywords, const char *const *values, int expand_dbname),         \
	   (keywords, values, expand_dbname), NULL)                                             \
	VOID_FN(PQfinish, (PGconn *conn), (conn))                                               \
	FN(ConnStatusType, PQstatus, (const PGconn *conn), (conn), CONNECTION_BAD)              \
	FN(PGTransactionStatusType, PQtransactionStatus, (const PGconn *conn), (conn),          \
	   PQTRANS_UNKNOWN)                                                                     \
	FN(char *, PQerrorMessage, (const PGconn *conn), (conn), not_loaded)                    \
	FN(int, PQsocket, (const PGconn *conn), (conn), -1)                                     \
	FN(int, PQbackendPID, (const PGconn *conn), (conn), 0)                                  \
	FN(int, PQisthreadsafe, (void), (), 0)                                                  \
	FN(PQnoticeProcessor, PQsetNoticeProcessor,                                             \
	   (PGconn *conn, PQnoticeProcessor proc, void *arg), (conn, proc, arg), NULL)          \
	FN(PQnoticeReceiver, PQsetNoticeReceiver,                                               \
	   (PGconn *conn, PQnoticeReceiver proc, void *arg), (conn, proc, arg), NULL)           \
	FN(PGresult *, PQexec, (PGconn *conn, const char *query), (conn, query), NULL)          \
	FN(PGresult *, PQexecParams,                                                            \
	   (PGconn *conn, const char *command, int nParams, const Oid *paramTypes,              \
	    const char *const *paramValues, const int *paramLengths, const int *paramFormats,   \
	    int resultFormat),                                                                  \
	   (conn, command, nParams, paramTypes, paramValues, paramLengths, paramFormats,        \
	    resultFormat), NULL)                                                                \
	FN(PGresult *, PQprepare,                                                               \
	   (PGconn *conn, const char *stmtName, const char *query, int nParams,                 \
	    const Oid *paramTypes),                                                             \
	   (conn, stmtName, query, nParams, paramTypes), NULL)                                  \
	FN(PGresult *, PQexecPrepared,                                                          \
	   (PGconn *conn, const char *stmtName, int nParams, const char *const *paramValues,    \
	    const int *paramLengths, const int *paramFormats, int resultFormat),                \
	   (conn, stmtName, nParams, paramValues, paramLengths, paramFormats, resultFormat),    \
	   NULL)                                                                                \
	FN(int, PQsendQuery, (PGconn *conn, const char *query), (conn, query), 0)               \
	FN(PGresult *, PQgetResult, (PGconn *conn), (conn), NULL)                               \
	FN(int, PQconsumeInput, (PGconn *conn), (conn), 0)                                      \
	FN(int, PQisBusy, (PGconn *conn), (conn), 0)                                            \
	FN(int, PQsetnonblocking, (PGconn *conn, int arg), (conn, arg), -1)                     \
	FN(int, PQflush, (PGconn *conn), (conn), -1)                                            \
	FN(int, PQputCopyData, (PGconn *conn, const char *buffer, int nbytes),                  \
	   (conn, buffer, nbytes), -1)                                                          \
	FN(int, PQputCopyEnd, (PGconn *conn, const char *errormsg), (conn, errormsg), -1)       \
	FN(int, PQgetCopyData, (PGconn *conn, char **buffer, int async), (conn, buffer, async), \
	   -2)                                                                                  \
	FN(ExecStatusType, PQresultStatus, (const PGresult *res), (res), PGRES_FATAL_ERROR)     \
	FN(char *, PQresultErrorMessage, (const PGresult *res), (res), not_loaded)              \
	FN(char *, PQresultErrorField, (const PGresult *res, int fieldcode),                    \
	   (res, fieldcode), NULL)                                                              \
	FN(int, PQntuples, (const PGresult *res), (res), 0)                                     \
	FN(int, PQnfields, (const PGresult *res), (res), 0)                                     \
	FN(char *, PQgetvalue, (const PGresult *res, int tup_num, int field_num),               \
	   (res, tup_num, field_num), NULL)                                                     \
	FN(int, PQgetlength, (const PGresult *res, int tup_num, int field_num),                 \
	   (res, tup_num, field_num), 0)                                                        \
	FN(int, PQgetisnull, (const PGresult *res, int tup_num, int field_num),                 \
	   (res, tup_num, field_num), 1)                                                        \
	FN(char *, PQcmdTuples, (PGresult *res), (res), NULL)                                   \
	VOID_FN(PQclear, (PGresult *res), (res))                                                \
	FN(char *, PQescapeLiteral, (PGconn *conn, const char *str, size_t len),                \
	   (conn, str, len), NULL)                                                              \
	FN(char *, PQescapeIdentifier, (PGconn *conn, const char *str, size_t len),             \
	   (conn, str, len), NULL)                                                              \
	VOID_FN(PQfreemem, (void *ptr), (ptr))

/* The table the stubs call through. */
#define DYN_TABLE pq
#define DYN_LIB libpq
static struct {
	LIBPQ_FUNCTIONS(FAUCET_DYN_SLOT, FAUCET_DYN_VOID_SLOT)
} pq;

static const faucet_dynsym pq_syms[] = {LIBPQ_FUNCTIONS(FAUCET_DYN_SYM, FAUCET_DYN_VOID_SYM)};

static faucet_dynlib libpq =
	FAUCET_DYNLIB_INIT("the PostgreSQL store", "libpq.so.5", "libpq5", pq_syms);

int faucet__libpq_load(void)
{
	return faucet__dynlib_ensure(&libpq);
}

/* The stubs. */
LIBPQ_FUNCTIONS(FAUCET_DYN_STUB, FAUCET_DYN_VOID_STUB)
