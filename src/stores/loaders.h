/*
 * loaders.h - the backends' client libraries, loaded on first use (see
 * src/common/dynload.h).  Not installed.
 *
 * Each returns 0 once its library is loaded, or FAUCET_EUNSUPPORTED naming
 * the package to install.  A store's opener calls its loader before
 * anything else, so a missing library is a clear error at open rather than
 * a failure inside a call.  Thread-safe; a library is loaded once.
 */
#ifndef FAUCET_STORES_LOADERS_H
#define FAUCET_STORES_LOADERS_H

int faucet__libpq_load(void);   /* libpq_load.c: PostgreSQL */
int faucet__hiredis_load(void); /* hiredis_load.c: Redis */
int faucet__sqlite_load(void);  /* sqlite_load.c: SQLite */
int faucet__curl_load(void);    /* curl_load.c: libcurl (etcd) */

#endif
