/*
 * bookkeeping.h - which keys are run bookkeeping (not installed).
 *
 * The run module owns these keys (doc/design.md §8), but the store module
 * below it must recognise them too - an export, import or replace never
 * touches them - so the test lives here, with the other knowledge of key
 * shapes; faucet_run_is_bookkeeping_key() is its public name.
 */
#ifndef FAUCET_KEYS_BOOKKEEPING_H
#define FAUCET_KEYS_BOOKKEEPING_H

/* Whether `key` is a __lease__, __status__ or __rollback__ key or marker
 * of a pipeline or an invocation (NULL is not). */
int faucet__is_bookkeeping_key(const char *key);

#endif
