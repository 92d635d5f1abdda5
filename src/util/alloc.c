/*
 * alloc.c - allocation that records FAUCET_ENOMEM, and its failure
 * injection.
 *
 * Every allocation of libfaucet and of the `faucet` command goes through
 * faucet__malloc, faucet__calloc or faucet__realloc, so the tests can fail
 * any one of them on purpose (a countdown, off unless a test sets it) and
 * check that each caller reports FAUCET_ENOMEM, frees what it took and
 * leaves stored state alone.  What json-c, OpenSSL, SQLite and libc
 * allocate for themselves is outside its reach: they take no allocator
 * from us.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static void *oom(void)
{
	(void)faucet_error_set(FAUCET_ENOMEM, "out of memory");
	return NULL;
}

/* ---- allocation-failure injection (tests) ------------------------------ */

/* The tests make the n-th allocation fail to walk every out-of-memory path
 * (see faucet__alloc_fail_at).  0 = off: then the cost is one relaxed load
 * and a branch predicted not taken.  Atomics only so that a test with
 * threads does not race; the countdown is process-wide. */
static _Atomic long fail_countdown;
static _Atomic int fail_happened;

void faucet__alloc_fail_at(long n)
{
	atomic_store(&fail_happened, 0);
	atomic_store(&fail_countdown, n > 0 ? n : 0);
}

int faucet__alloc_failed(void)
{
	return atomic_load(&fail_happened);
}

/* Whether this allocation is the one to fail. */
static int injected_failure(void)
{
	long left = atomic_load_explicit(&fail_countdown, memory_order_relaxed);

	if (__builtin_expect(left == 0, 1))
		return 0;
	/* Only the thread that takes the count from 1 to 0 fails. */
	while (left > 0 && !atomic_compare_exchange_weak(&fail_countdown, &left, left - 1))
		;
	if (left != 1)
		return 0;
	atomic_store(&fail_happened, 1);
	return 1;
}

void *faucet__malloc(size_t n)
{
	void *p = injected_failure() ? NULL : malloc(n ? n : 1);
	return p ? p : oom();
}

void *faucet__calloc(size_t count, size_t size)
{
	void *p = injected_failure() ? NULL : calloc(count ? count : 1, size ? size : 1);
	return p ? p : oom();
}

/* A failed realloc leaves p as it was, like realloc. */
void *faucet__realloc(void *p, size_t n)
{
	void *q = injected_failure() ? NULL : realloc(p, n ? n : 1);
	return q ? q : oom();
}

char *faucet__strndup(const char *s, size_t n)
{
	char *p = faucet__malloc(n + 1);

	if (p == NULL)
		return NULL;
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *faucet__strdup(const char *s)
{
	return faucet__strndup(s, strlen(s));
}

void *faucet__reserve(void *items, size_t *cap, size_t need, size_t size, size_t first)
{
	size_t n;
	void *grown;

	if (need <= *cap)
		return items;
	n = *cap ? *cap : first;
	while (n < need) {
		if (n > SIZE_MAX / 2)
			break;
		n *= 2;
	}
	if (n < need || n > SIZE_MAX / size) {
		(void)faucet_error_set(FAUCET_ENOMEM, "out of memory (an array of %zu elements)",
				       need);
		return NULL;
	}
	grown = faucet__realloc(items, n * size);
	if (grown != NULL)
		*cap = n;
	return grown;
}

char *faucet__vsprintf(const char *fmt, va_list ap)
{
	va_list copy;
	int n;
	char *p;

	va_copy(copy, ap);
	n = vsnprintf(NULL, 0, fmt, copy);
	va_end(copy);
	if (n < 0)
		return oom();
	p = faucet__malloc((size_t)n + 1);
	if (p != NULL)
		(void)vsnprintf(p, (size_t)n + 1, fmt, ap);
	return p;
}

char *faucet__sprintf(const char *fmt, ...)
{
	va_list ap;
	char *p;

	va_start(ap, fmt);
	p = faucet__vsprintf(fmt, ap);
	va_end(ap);
	return p;
}

void faucet_free(void *ptr)
{
	free(ptr);
}
