/*
 * bookkeeping.c - recognising run bookkeeping keys by their segments.
 *
 * A segment test, not a parse: it must hold for any key an older or
 * foreign writer left in a store, and it runs once per key of every
 * export and import, so it allocates nothing.
 */
#include <string.h>

#include "bookkeeping.h"

/* Whether `key` holds "::__". */
static int has_marker_start(const char *key)
{
	for (const char *c = strchr(key, ':'); c != NULL; c = strchr(c + 1, ':')) {
		if (c[1] == ':' && c[2] == '_' && c[3] == '_')
			return 1;
	}
	return 0;
}

int faucet__is_bookkeeping_key(const char *key)
{
	/* Every marker segment starts "::__": most keys are told apart by
	 * looking for that at each ':' (strchr is vectorised; a strstr of a
	 * four-byte needle was a twentieth of a big import's CPU). */
	const char *p = key != NULL && has_marker_start(key) ? strstr(key, "::") : NULL;

	/* The first segment is the pipeline (or tenant); a marker segment can
	 * only come after it. */
	while (p != NULL) {
		const char *seg = p + 2, *end = strstr(seg, "::");
		size_t len = end ? (size_t)(end - seg) : strlen(seg);

		if (len == 12 && strncmp(seg, "__rollback__", 12) == 0)
			return 1;
		if (end == NULL && ((len == 9 && strncmp(seg, "__lease__", 9) == 0) ||
				    (len == 10 && strncmp(seg, "__status__", 10) == 0)))
			return 1;
		p = end;
	}
	return 0;
}
