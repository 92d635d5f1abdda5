/*
 * jsonw.c - JSON text for --json output (see jsonw.h for why by hand).
 *
 * Strings are escaped per RFC 8259: the quote, the backslash and every
 * control character; other bytes pass through, since keys are ASCII and
 * messages are UTF-8 already.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "jsonw.h"

void cli_jw_member(faucet_buf *b, const char *name, int first)
{
	if (!first)
		(void)faucet__buf_putc(b, ',');
	faucet__json_string(b, name);
	(void)faucet__buf_putc(b, ':');
}

void cli_jw_string_array(faucet_buf *b, const faucet_strarray *arr)
{
	(void)faucet__buf_putc(b, '[');
	for (size_t i = 0; i < arr->count; i++) {
		if (i > 0)
			(void)faucet__buf_putc(b, ',');
		faucet__json_string(b, arr->strings[i]);
	}
	(void)faucet__buf_putc(b, ']');
}

int cli_jw_print(faucet_buf *b)
{
	if (b->failed || b->ptr == NULL) {
		faucet__buf_dispose(b);
		(void)cli_error(CLI_EXIT_FAILED, "out of memory while writing the JSON output");
		return -1;
	}
	(void)fwrite(b->ptr, 1, b->len, stdout);
	(void)putchar('\n');
	faucet__buf_dispose(b);
	cli_json_printed();
	return 0;
}
