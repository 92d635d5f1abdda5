/*
 * json_check.h - the strict JSON checker every value passes before it is
 * stored or returned (not installed).
 */
#ifndef FAUCET_JSON_CHECK_H
#define FAUCET_JSON_CHECK_H

#include <stddef.h>

/* Deepest nesting of arrays and objects accepted: json-c's limit for the
 * tokener value.c creates, so whatever the checker passes json-c can parse. */
#define FAUCET_JSON_MAX_DEPTH 256

typedef struct {
	size_t items; /* values, member names excluded (compare with a parsed tree) */
	int compact;  /* no white space, no escapes, no "-0": json-c prints it as is */
} faucet_json_check_result;

/* Check that len bytes of text are exactly one JSON value (RFC 8259, with
 * white space around it) that faucet can hold without altering it.  On
 * failure sets FAUCET_EINVALID "{where}: ..." naming the byte offset. */
int faucet__json_check(const char *text, size_t len, const char *where,
		       faucet_json_check_result *out);

#endif
