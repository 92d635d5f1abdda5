/*
 * buf.c - the growable text buffer and the one JSON string writer.
 *
 * A buffer remembers a failed append (`failed`), so a caller may append a
 * whole document and check once, at faucet__buf_detach.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* ---- faucet_buf ------------------------------------------------------ */

int faucet__buf_grow(faucet_buf *b, size_t extra)
{
	size_t want, cap;
	char *p;

	if (b->failed)
		return FAUCET_ENOMEM;
	if (extra >= SIZE_MAX - b->len) { /* len + extra + 1 would wrap */
		b->failed = 1;
		(void)faucet_error_set(FAUCET_ENOMEM, "out of memory (a text of %zu + %zu bytes)",
				       b->len, extra);
		return FAUCET_ENOMEM;
	}
	want = b->len + extra + 1;
	if (want <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 64;
	while (cap < want && cap <= SIZE_MAX / 2)
		cap *= 2;
	p = cap >= want ? faucet__realloc(b->ptr, cap) : NULL;
	if (p == NULL) {
		b->failed = 1;
		return FAUCET_ENOMEM;
	}
	b->ptr = p;
	b->cap = cap;
	return 0;
}

int faucet__buf_put(faucet_buf *b, const char *data, size_t len)
{
	if (faucet__buf_grow(b, len) != 0)
		return FAUCET_ENOMEM;
	memcpy(b->ptr + b->len, data, len);
	b->len += len;
	b->ptr[b->len] = '\0';
	return 0;
}

int faucet__buf_puts(faucet_buf *b, const char *s)
{
	return faucet__buf_put(b, s, strlen(s));
}

int faucet__buf_putc(faucet_buf *b, char c)
{
	return faucet__buf_put(b, &c, 1);
}

int faucet__buf_printf(faucet_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || faucet__buf_grow(b, (size_t)n) != 0) {
		b->failed = 1;
		return FAUCET_ENOMEM;
	}
	va_start(ap, fmt);
	(void)vsnprintf(b->ptr + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

char *faucet__buf_detach(faucet_buf *b)
{
	char *p;

	if (b->failed) {
		faucet__buf_dispose(b);
		(void)faucet_error_set(FAUCET_ENOMEM, "out of memory");
		return NULL;
	}
	if (b->ptr == NULL && faucet__buf_grow(b, 0) != 0)
		return NULL;
	b->ptr[b->len] = '\0';
	p = b->ptr;
	b->ptr = NULL;
	b->len = b->cap = 0;
	return p;
}

void faucet__buf_dispose(faucet_buf *b)
{
	free(b->ptr);
	b->ptr = NULL;
	b->len = b->cap = 0;
	b->failed = 0;
}

int faucet__buf_put_uint(faucet_buf *b, uint64_t n)
{
	char digits[20];
	size_t at = sizeof(digits);

	do {
		digits[--at] = (char)('0' + n % 10);
		n /= 10;
	} while (n > 0);
	return faucet__buf_put(b, digits + at, sizeof(digits) - at);
}

/* The one JSON string writer of libfaucet and the command (see util.h):
 * the short escapes JSON has for quote, backslash, newline, return and tab,
 * \u00XX for the other control characters, every other byte as it is. */
void faucet__json_string(faucet_buf *b, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const char *start;

	if (s == NULL) {
		(void)faucet__buf_puts(b, "null");
		return;
	}
	(void)faucet__buf_putc(b, '"');
	start = s;
	for (const char *p = s; *p; p++) {
		unsigned char c = (unsigned char)*p;
		char esc[7] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15], 0};

		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		(void)faucet__buf_put(b, start, (size_t)(p - start));
		start = p + 1;
		switch (c) {
		case '"': (void)faucet__buf_puts(b, "\\\""); break;
		case '\\': (void)faucet__buf_puts(b, "\\\\"); break;
		case '\n': (void)faucet__buf_puts(b, "\\n"); break;
		case '\r': (void)faucet__buf_puts(b, "\\r"); break;
		case '\t': (void)faucet__buf_puts(b, "\\t"); break;
		default: (void)faucet__buf_puts(b, esc); break;
		}
	}
	(void)faucet__buf_puts(b, start);
	(void)faucet__buf_putc(b, '"');
}

int faucet__hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}
