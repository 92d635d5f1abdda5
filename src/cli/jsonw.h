/*
 * jsonw.h - writing the command's --json output into a faucet_buf.
 *
 * We assemble JSON text ourselves instead of building a json-c tree: stored
 * values are embedded as the exact compact text the library holds, so a
 * bookmark such as 18446744073709551615 or 0.1 comes out digit for digit,
 * which a round trip through a double would not promise.
 */
#ifndef FAUCET_CLI_JSONW_H
#define FAUCET_CLI_JSONW_H

#include "util.h"

/* (A string is faucet__json_string of src/util/util.h: "null" for NULL.) */

/* Append "name": (with a leading comma unless `first`). */
void cli_jw_member(faucet_buf *b, const char *name, int first);

/* Append a JSON array of strings. */
void cli_jw_string_array(faucet_buf *b, const faucet_strarray *arr);

/* Write the buffer and a newline to stdout; 0, or -1 when it failed to
 * assemble (out of memory, message printed). */
int cli_jw_print(faucet_buf *b);

/* Append `text` with control characters, DEL, C1 controls and bytes that
 * are not UTF-8 written as \n, \r, \t or \xNN, so echoed input can
 * neither break the line nor drive the terminal. */
void cli_escape(faucet_buf *b, const char *text);

/* Append {"code": ..., "message": ..., "exit": N} (the value of "error"). */
void cli_json_error_object(faucet_buf *b, const char *code, const char *message, int exit_code);

#endif
