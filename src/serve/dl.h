/*
 * dl.h - the libraries `faucet serve` opens when it starts rather than at
 * every exec (mhd.h: libmicrohttpd; ssl.h: libcrypto).  Each has a table
 * of function pointers filled by serve_dl_load and macros with the
 * library's own names that call through it, so serve's code reads as
 * ordinary calls and defines none of the library's symbols.
 */
#ifndef FAUCET_SERVE_DL_H
#define FAUCET_SERVE_DL_H

#include <stddef.h>

typedef struct {
	const char *name; /* the library's symbol */
	size_t offset;    /* where its address goes in the table */
} serve_dl_sym;

/* Open the first of `sonames` that loads and fill `table` (size bytes)
 * with every symbol, once per table: 0, or the error printed - naming the
 * library, what was missing and Debian's `package` - and CLI_EXIT_FAILED,
 * the table untouched.  `*done` records success. */
int serve_dl_load(const char *what, const char *package, const char *const *sonames,
		  size_t nsonames, const serve_dl_sym *syms, size_t nsyms, void *table,
		  size_t size, int *done);

#endif
