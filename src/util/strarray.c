/*
 * strarray.c - string arrays and sorted-name lookups.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

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

int faucet__strarray_push_owned(faucet_strarray *arr, char *s)
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

int faucet__strarray_push(faucet_strarray *arr, const char *s)
{
	char *copy = faucet__strdup(s);
	return copy ? faucet__strarray_push_owned(arr, copy) : FAUCET_ENOMEM;
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

void faucet__strarray_sort_unique(faucet_strarray *arr)
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

/* Arrays of unknown origin (the library's exact-size results among them)
 * have no spare capacity we could know of: grow by exactly one. */
int faucet__strarray_append_owned(faucet_strarray *arr, char *s)
{
	char **grown;

	if (s == NULL)
		return FAUCET_ENOMEM;
	if (arr->count >= SIZE_MAX / sizeof(char *) - 1) {
		free(s);
		return faucet_error_set(FAUCET_ENOMEM, "out of memory (%zu strings)", arr->count);
	}
	grown = faucet__realloc(arr->strings, (arr->count + 1) * sizeof(char *));
	if (grown == NULL) {
		free(s);
		return FAUCET_ENOMEM;
	}
	arr->strings = grown;
	arr->strings[arr->count++] = s;
	return 0;
}

int faucet__strarray_append(faucet_strarray *arr, const char *s)
{
	return faucet__strarray_append_owned(arr, faucet__strdup(s));
}
