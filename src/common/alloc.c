/*
 * alloc.c - allocation helpers that record FAUCET_ENOMEM, the growable
 * buffer, string arrays, clocks and random bytes.
 *
 * Every allocation of libfaucet goes through faucet__malloc, faucet__calloc
 * or faucet__realloc, so the tests can fail any one of them on purpose (a
 * countdown, off unless a test sets it) and check that each caller
 * reports FAUCET_ENOMEM, frees what it took and leaves stored state alone.
 * What json-c, OpenSSL, SQLite and libc allocate for themselves is outside
 * its reach: they take no allocator from us.
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "internal.h"

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

char *faucet__sprintf(const char *fmt, ...)
{
	va_list ap;
	int n;
	char *p;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return oom();
	p = faucet__malloc((size_t)n + 1);
	if (p == NULL)
		return NULL;
	va_start(ap, fmt);
	(void)vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}

void faucet_free(void *ptr)
{
	free(ptr);
}

/* ---- faucet_buf ------------------------------------------------------ */

int faucet_buf_grow(faucet_buf *b, size_t extra)
{
	size_t want, cap;
	char *p;

	if (b->failed)
		return FAUCET_ENOMEM;
	want = b->len + extra + 1;
	if (want <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 64;
	while (cap < want)
		cap *= 2;
	p = faucet__realloc(b->ptr, cap);
	if (p == NULL) {
		b->failed = 1;
		return FAUCET_ENOMEM;
	}
	b->ptr = p;
	b->cap = cap;
	return 0;
}

int faucet_buf_put(faucet_buf *b, const char *data, size_t len)
{
	if (faucet_buf_grow(b, len) != 0)
		return FAUCET_ENOMEM;
	memcpy(b->ptr + b->len, data, len);
	b->len += len;
	b->ptr[b->len] = '\0';
	return 0;
}

int faucet_buf_puts(faucet_buf *b, const char *s)
{
	return faucet_buf_put(b, s, strlen(s));
}

int faucet_buf_putc(faucet_buf *b, char c)
{
	return faucet_buf_put(b, &c, 1);
}

int faucet_buf_printf(faucet_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || faucet_buf_grow(b, (size_t)n) != 0) {
		b->failed = 1;
		return FAUCET_ENOMEM;
	}
	va_start(ap, fmt);
	(void)vsnprintf(b->ptr + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

char *faucet_buf_detach(faucet_buf *b)
{
	char *p;

	if (b->failed) {
		faucet_buf_dispose(b);
		return oom();
	}
	if (b->ptr == NULL && faucet_buf_grow(b, 0) != 0)
		return NULL;
	b->ptr[b->len] = '\0';
	p = b->ptr;
	b->ptr = NULL;
	b->len = b->cap = 0;
	return p;
}

void faucet_buf_dispose(faucet_buf *b)
{
	free(b->ptr);
	b->ptr = NULL;
	b->len = b->cap = 0;
	b->failed = 0;
}

/* ---- faucet_strarray ------------------------------------------------- */

void faucet_strarray_dispose(faucet_strarray *arr)
{
	if (arr == NULL)
		return;
	for (size_t i = 0; i < arr->count; i++)
		free(arr->strings[i]);
	free(arr->strings);
	arr->strings = NULL;
	arr->count = 0;
}

int faucet_strarray_push_owned(faucet_strarray *arr, char *s)
{
	char **grown;
	size_t count = arr->count;

	if (s == NULL)
		return FAUCET_ENOMEM;
	/* Grow by doubling: capacity is the next power of two above count. */
	if ((count & (count - 1)) == 0) {
		grown = faucet__realloc(arr->strings, (count ? count * 2 : 4) * sizeof(char *));
		if (grown == NULL) {
			free(s);
			return FAUCET_ENOMEM;
		}
		arr->strings = grown;
	}
	arr->strings[arr->count++] = s;
	return 0;
}

int faucet_strarray_push(faucet_strarray *arr, const char *s)
{
	char *copy = faucet__strdup(s);
	return copy ? faucet_strarray_push_owned(arr, copy) : FAUCET_ENOMEM;
}

static const char *name_at(const void *base, size_t i, size_t stride)
{
	const char *const *name = (const void *)((const char *)base + i * stride);

	return *name;
}

size_t faucet__find_sorted(const void *base, size_t count, size_t stride, const char *name,
			   int *found)
{
	size_t lo = 0, hi = count;

	*found = 0;
	if (hi > 0 && strcmp(name_at(base, hi - 1, stride), name) < 0)
		return hi;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(name_at(base, mid, stride), name);
		if (c == 0) {
			*found = 1;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int faucet__names_sorted(const void *base, size_t count, size_t stride)
{
	for (size_t i = 1; i < count; i++) {
		if (strcmp(name_at(base, i - 1, stride), name_at(base, i, stride)) > 0)
			return 0;
	}
	return 1;
}

size_t faucet__find_sorted_near(const void *base, size_t count, size_t stride, const char *name,
				size_t *near, int *found)
{
	size_t i = *near;

	*found = 0;
	for (size_t k = 0; k < 2 && i < count; k++, i++) {
		int c = strcmp(name_at(base, i, stride), name);

		if (c == 0) {
			*found = 1;
			*near = i;
			return i;
		}
		if (c > 0) {
			/* name belongs at or before i: at i when i == 0 or the
			 * element before i is smaller. */
			if (i == 0 || strcmp(name_at(base, i - 1, stride), name) < 0) {
				*near = i;
				return i;
			}
			break;
		}
	}
	i = faucet__find_sorted(base, count, stride, name, found);
	*near = i;
	return i;
}

static int compare_strings(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void faucet_strarray_sort_unique(faucet_strarray *arr)
{
	size_t kept = 0;

	if (arr->count < 2)
		return;
	qsort(arr->strings, arr->count, sizeof(char *), compare_strings);
	for (size_t i = 0; i < arr->count; i++) {
		if (kept > 0 && strcmp(arr->strings[kept - 1], arr->strings[i]) == 0) {
			free(arr->strings[i]);
			continue;
		}
		arr->strings[kept++] = arr->strings[i];
	}
	arr->count = kept;
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

/* ---- clocks and randomness ------------------------------------------- */

uint64_t faucet__now_ns(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t faucet__now_ms(void)
{
	return faucet__now_ns() / 1000000u;
}

int faucet__random_bytes(void *buf, size_t n)
{
	unsigned char *p = buf;

	while (n > 0) {
		ssize_t got = getrandom(p, n, 0);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			return faucet__error_os(FAUCET_EIO, errno, "failed to read random bytes");
		}
		p += got;
		n -= (size_t)got;
	}
	return 0;
}

int faucet__random_hex(char *out, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	unsigned char raw[64];

	if (n > sizeof(raw))
		return faucet_error_set(FAUCET_EINVALID, "random token too long");
	if (faucet__random_bytes(raw, n) != 0)
		return FAUCET_EIO;
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[raw[i] >> 4];
		out[2 * i + 1] = digits[raw[i] & 15];
	}
	out[2 * n] = '\0';
	return 0;
}

char *faucet__holder_id(void)
{
	char host[256] = "localhost", rnd[17];

	if (gethostname(host, sizeof(host)) != 0)
		(void)snprintf(host, sizeof(host), "localhost");
	host[sizeof(host) - 1] = '\0';
	if (faucet__random_hex(rnd, 8) != 0)
		return NULL;
	return faucet__sprintf("%s:%ld:%s", host, (long)getpid(), rnd);
}

int faucet__holder_dead(const char *holder)
{
	char host[256] = "localhost";
	const char *colon, *p;
	char *end;
	long pid;

	if (holder == NULL || (colon = strchr(holder, ':')) == NULL)
		return 0;
	if (gethostname(host, sizeof(host)) != 0)
		return 0;
	host[sizeof(host) - 1] = '\0';
	if ((size_t)(colon - holder) != strlen(host) || strncmp(holder, host, strlen(host)) != 0)
		return 0; /* another host's process: only its lease's expiry tells */
	p = colon + 1;
	errno = 0;
	pid = strtol(p, &end, 10);
	if (errno != 0 || end == p || *end != ':' || pid <= 0 || pid > INT32_MAX)
		return 0;
	/* EPERM: it exists but is another user's. */
	return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

/* The one JSON string writer of the library (see internal.h). */
void faucet__json_string(faucet_buf *b, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const char *start;

	if (s == NULL) {
		(void)faucet_buf_puts(b, "null");
		return;
	}
	(void)faucet_buf_putc(b, '"');
	start = s;
	for (const char *p = s; *p; p++) {
		unsigned char c = (unsigned char)*p;

		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		(void)faucet_buf_put(b, start, (size_t)(p - start));
		start = p + 1;
		if (c == '"' || c == '\\') {
			(void)faucet_buf_putc(b, '\\');
			(void)faucet_buf_putc(b, (char)c);
		} else {
			char esc[7] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15], 0};
			(void)faucet_buf_puts(b, esc);
		}
	}
	(void)faucet_buf_puts(b, start);
	(void)faucet_buf_putc(b, '"');
}
