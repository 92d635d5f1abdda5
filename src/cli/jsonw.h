/*
 * jsonw.h - writing the command's --json output into a cli_buf.
 *
 * We assemble JSON text ourselves instead of building a json-c tree: stored
 * values are embedded as the exact compact text the library holds, so a
 * bookmark such as 18446744073709551615 or 0.1 comes out digit for digit,
 * which a round trip through a double would not promise.
 */
#ifndef FAUCET_CLI_JSONW_H
#define FAUCET_CLI_JSONW_H

#include "util.h"

/* Append `s` as a JSON string (quoted, escaped). */
void jw_string(cli_buf *b, const char *s);

/* Append `s` as a JSON string, or null when s is NULL. */
void jw_string_or_null(cli_buf *b, const char *s);

/* Append "name": (with a leading comma unless `first`). */
void jw_member(cli_buf *b, const char *name, int first);

/* Append a JSON array of strings. */
void jw_string_array(cli_buf *b, const faucet_strarray *arr);

/* Write the buffer and a newline to stdout; 0, or -1 when it failed to
 * assemble (out of memory, message printed). */
int jw_print(cli_buf *b);

/* Append `text` with control characters, DEL, C1 controls and bytes that
 * are not UTF-8 written as \n, \r, \t or \xNN, so echoed input can
 * neither break the line nor drive the terminal. */
void cli_escape(cli_buf *b, const char *text);

/* Append {"code": ..., "message": ..., "exit": N} (the value of "error"). */
void cli_json_error_object(cli_buf *b, const char *code, const char *message, int exit_code);

#endif
