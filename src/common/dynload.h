/*
 * dynload.h - load a library when the first store that needs it is opened,
 * not when the program starts.  Not installed.
 *
 * Why: libpq alone pulls in some twenty shared libraries (Kerberos, LDAP,
 * GnuTLS, SASL, ...).  Linked normally, every program using libfaucet -
 * every `faucet` command, even `faucet run` on a file store - pays for
 * mapping and relocating all of them at exec, a few milliseconds, for a
 * backend it does not use.  So libpq, hiredis, SQLite and libcurl are opened
 * with dlopen() on first use instead (src/stores/libpq_load.c, hiredis_load.c,
 * sqlite_load.c, curl_load.c).
 *
 * How: each of those files defines functions with the client library's own
 * names and prototypes (PQexec, redisGetReply, ...), checked by the
 * compiler against the library's header, which forward through a table of
 * pointers filled here.  postgres.c and redis.c are written against the
 * ordinary client API and need not know.  The stubs are hidden like every
 * internal symbol, so libfaucet.so exports none of them.  The library is
 * never unloaded: these libraries keep process-wide state.
 *
 * A program linking libfaucet.a that calls libpq or SQLite itself gets
 * those calls through the same stubs, hence the same library - unless it
 * links a static libpq.a or libsqlite3.a, whose definitions would clash with
 * the stubs (and dlopen() does not work in a fully static program anyway).
 */
#ifndef FAUCET_COMMON_DYNLOAD_H
#define FAUCET_COMMON_DYNLOAD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

/* One function to look up: its name, and where its address goes (a
 * function pointer of the right type, seen as bytes). */
typedef struct {
	const char *name;
	void *slot;
} faucet_dynsym;

typedef struct {
	const char *what;    /* who needs it, for messages: "the PostgreSQL store" */
	const char *soname;  /* what dlopen() is given: "libpq.so.5" */
	const char *package; /* the Debian/Ubuntu package that installs it: "libpq5" */
	const faucet_dynsym *syms;
	size_t nsyms;
	pthread_mutex_t lock; /* one loader at a time */
	atomic_int loaded;    /* set once every slot is filled */
} faucet_dynlib;

/* The pieces a *_load.c file builds from its one list of functions, whose
 * entries are FN(ret, name, params, args, fail) or VOID_FN(name, params,
 * args): the table's pointers, the names to resolve, and the stubs - which
 * call through the table once DYN_LIB is loaded, else return `fail`.  The
 * file defines DYN_TABLE (its table) and DYN_LIB (its faucet_dynlib) first. */
#define FAUCET_DYN_SLOT(ret, name, params, args, fail) ret(*name) params;
#define FAUCET_DYN_VOID_SLOT(name, params, args) void(*name) params;
#define FAUCET_DYN_SYM(ret, name, params, args, fail) {#name, &DYN_TABLE.name},
#define FAUCET_DYN_VOID_SYM(name, params, args) {#name, &DYN_TABLE.name},
#define FAUCET_DYN_STUB(ret, name, params, args, fail) \
	ret name params { return faucet__dynlib_ensure(&DYN_LIB) == 0 ? DYN_TABLE.name args : (fail); }
#define FAUCET_DYN_VOID_STUB(name, params, args) \
	void name params { if (faucet__dynlib_ensure(&DYN_LIB) == 0) DYN_TABLE.name args; }

#define FAUCET_DYNLIB_INIT(what, soname, package, syms) \
	{(what), (soname), (package), (syms), sizeof(syms) / sizeof((syms)[0]), \
	 PTHREAD_MUTEX_INITIALIZER, 0}

/* Make sure lib is loaded: dlopen() lib->soname and resolve every symbol
 * the first time, then only an atomic read.  Returns 0, or
 * FAUCET_EUNSUPPORTED with a message naming the library, the package to
 * install and dlerror()'s reason; then no slot was written, nothing stays
 * loaded, and the next call tries again (the package may have been
 * installed meanwhile).  Thread-safe. */
int faucet__dynlib_ensure(faucet_dynlib *lib);

#endif
