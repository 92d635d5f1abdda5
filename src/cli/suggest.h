/*
 * suggest.h - "did you mean" for the command's words.
 *
 * The command's allocation, buffers and JSON string writer are the
 * library's own (src/util/util.h, shared by both).
 */
#ifndef FAUCET_CLI_SUGGEST_H
#define FAUCET_CLI_SUGGEST_H

#include <stddef.h>

/* The candidate nearest to `word` that could be a typo of it (a small edit
 * distance, or `word` is its prefix), or NULL.  Every "did you mean" of the
 * command comes from here: commands, options, backend types, URL schemes,
 * YAML fields, time zones. */
const char *cli_suggest(const char *word, const char *const *candidates, size_t n);

/* The system zone nearest to the unknown zone `name`, or NULL (caller frees). */
char *cli_suggest_zone(const char *name);

#endif
