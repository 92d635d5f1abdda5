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

void jw_string(cli_buf *b, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const char *run = s;

	(void)cli_buf_putc(b, '"');
	for (const char *p = s; *p; p++) {
		unsigned char c = (unsigned char)*p;
		char esc[7];

		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		(void)cli_buf_put(b, run, (size_t)(p - run));
		run = p + 1;
		switch (c) {
		case '"': (void)cli_buf_puts(b, "\\\""); break;
		case '\\': (void)cli_buf_puts(b, "\\\\"); break;
		case '\n': (void)cli_buf_puts(b, "\\n"); break;
		case '\r': (void)cli_buf_puts(b, "\\r"); break;
		case '\t': (void)cli_buf_puts(b, "\\t"); break;
		default:
			memcpy(esc, "\\u00", 4);
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			esc[6] = '\0';
			(void)cli_buf_puts(b, esc);
		}
	}
	(void)cli_buf_puts(b, run);
	(void)cli_buf_putc(b, '"');
}

void jw_string_or_null(cli_buf *b, const char *s)
{
	if (s == NULL)
		(void)cli_buf_puts(b, "null");
	else
		jw_string(b, s);
}

void jw_member(cli_buf *b, const char *name, int first)
{
	if (!first)
		(void)cli_buf_putc(b, ',');
	jw_string(b, name);
	(void)cli_buf_putc(b, ':');
}

void jw_string_array(cli_buf *b, const faucet_strarray *arr)
{
	(void)cli_buf_putc(b, '[');
	for (size_t i = 0; i < arr->count; i++) {
		if (i > 0)
			(void)cli_buf_putc(b, ',');
		jw_string(b, arr->strings[i]);
	}
	(void)cli_buf_putc(b, ']');
}

int jw_print(cli_buf *b)
{
	if (b->failed || b->ptr == NULL) {
		cli_buf_dispose(b);
		(void)cli_error(CLI_EXIT_FAILED, "out of memory while writing the JSON output");
		return -1;
	}
	(void)fwrite(b->ptr, 1, b->len, stdout);
	(void)putchar('\n');
	cli_buf_dispose(b);
	cli_json_printed();
	return 0;
}
