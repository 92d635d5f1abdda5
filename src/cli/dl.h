/*
 * dl.h - the libraries the command opens when it first needs them rather
 * than at every exec: libmicrohttpd and libcrypto for `faucet serve`
 * (src/serve/mhd.h, ssl.h).  Each has a table
 * of function pointers filled by cli_dl_load and macros with the library's
 * own names that call through it, so the code reads as ordinary calls and
 * the command defines none of the library's symbols.  (The library's own
 * loads are src/common/dynload.h.)
 */
#ifndef FAUCET_CLI_DL_H
#define FAUCET_CLI_DL_H

#include <stddef.h>

typedef struct {
	const char *name; /* the library's symbol */
	size_t offset;    /* where its address goes in the table */
} cli_dl_sym;

/* Open the first of `sonames` that loads and fill `table` (size bytes)
 * with every symbol, once per table: 0, or FAUCET_EUNSUPPORTED with the
 * library's error set ("cannot load WHAT (why): install Debian's PACKAGE"),
 * nothing printed and the table untouched.  `*done` records success. */
int cli_dl_load(const char *what, const char *package, const char *const *sonames,
		size_t nsonames, const cli_dl_sym *syms, size_t nsyms, void *table, size_t size,
		int *done);

#endif
