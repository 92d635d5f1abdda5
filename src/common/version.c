/*
 * version.c - the library's version at run time.
 *
 * The macros of faucet/version.h are compiled into the caller; these calls
 * are compiled into the library, so a program (or a binding that loads the
 * library with dlopen) can tell the two apart and refuse a mismatch.
 */
#include "internal.h"

const char *faucet_version(void)
{
	return FAUCET_VERSION_STRING;
}

int faucet_version_number(void)
{
	return FAUCET_VERSION_NUMBER;
}
