/*
 * warning.c - the thread-local last warning (faucet_warning_last).
 *
 * Kept apart from the last error: a warning comes with success (return 0),
 * and an error set later by another call must not hide it, nor it an error.
 * One heap string per thread, freed when the thread exits.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "util.h"
#include "warning.h"

static pthread_key_t warning_key;
static pthread_once_t warning_once = PTHREAD_ONCE_INIT;
static int warning_key_ok;

static void warning_key_create(void)
{
	warning_key_ok = pthread_key_create(&warning_key, free) == 0;
}

static void warning_replace(char *text)
{
	(void)pthread_once(&warning_once, warning_key_create);
	if (!warning_key_ok) {
		free(text);
		return;
	}
	free(pthread_getspecific(warning_key));
	if (pthread_setspecific(warning_key, text) != 0)
		free(text);
}

void faucet__warning_set(const char *fmt, ...)
{
	va_list ap, copy;
	char *text;
	int n;

	va_start(ap, fmt);
	va_copy(copy, ap);
	n = vsnprintf(NULL, 0, fmt, copy);
	va_end(copy);
	text = n < 0 ? NULL : malloc((size_t)n + 1);
	if (text != NULL)
		(void)vsnprintf(text, (size_t)n + 1, fmt, ap);
	va_end(ap);
	if (text != NULL)
		warning_replace(text);
}

const char *faucet_warning_last(void)
{
	(void)pthread_once(&warning_once, warning_key_create);
	return warning_key_ok ? pthread_getspecific(warning_key) : NULL;
}

void faucet_warning_clear(void)
{
	warning_replace(NULL);
}
