/*
 * iter.c - the pull iterator over a store's keys (faucet_store_iter_*).
 *
 * Where the backend has a list_page slot the iterator reads one page at a
 * time and asks for the next one from just after the last key it handed
 * out, so it holds no more than a page and the backend holds nothing
 * between pages: no cursor, no connection, no lock.  Paging by the last
 * key is also what makes the order promise hold under concurrent writes:
 * every page starts strictly after the one before, so no key comes twice.
 * Without the slot it takes faucet_store_list once (the file store lists a
 * directory in one readdir; paging would re-read it per page).
 *
 * The front-end checks each page it is given: keys inside the prefix and
 * strictly increasing from `after` on.  A backend that broke that promise
 * could otherwise make a caller's loop run for ever.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include <faucet/sys/store_backend.h>
#include "store/open_internal.h"

#define ITER_PAGE_MAX 100000

struct faucet_store_iter {
	faucet_store *store;
	char *prefix;
	char *after;          /* the last key of the pages read so far; NULL = none */
	faucet_strarray page; /* the keys being handed out */
	size_t next;          /* the index in page of the next key */
	size_t page_size;
	int exhausted; /* no key is left after this page */
};

int faucet_store_iter_new(faucet_store *s, const char *prefix, faucet_store_iter **out)
{
	faucet_store_iter *it;

	if (out == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_store_iter_new: out is NULL");
	*out = NULL;
	if (s == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_store_iter_new: store is NULL");
	if (!faucet_store_supports_list(s))
		return faucet_error_set(FAUCET_EUNSUPPORTED,
					"this state store cannot enumerate its keys");
	it = faucet__calloc(1, sizeof(*it));
	if (it == NULL)
		return FAUCET_ENOMEM;
	it->prefix = faucet__strdup(prefix != NULL ? prefix : "");
	if (it->prefix == NULL) {
		free(it);
		return FAUCET_ENOMEM;
	}
	it->store = s;
	it->page_size = FAUCET_STORE_ITER_PAGE;
	*out = it;
	return 0;
}

int faucet_store_iter_set_page_size(faucet_store_iter *it, size_t n)
{
	if (it == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_store_iter_set_page_size: NULL iterator");
	if (n < 1 || n > ITER_PAGE_MAX)
		return faucet_error_set(FAUCET_EINVALID,
					"iterator page size %zu is out of range (1 to %d)", n,
					ITER_PAGE_MAX);
	it->page_size = n;
	return 0;
}

/* The page's keys are inside the prefix and strictly increasing after
 * `after`: what list_page promises and the iterator's order rests on. */
static int page_is_ordered(const faucet_store_iter *it, const char *after,
			   const faucet_strarray *page)
{
	size_t plen = strlen(it->prefix);
	const char *prev = after;

	for (size_t i = 0; i < page->count; i++) {
		const char *k = page->strings[i];

		if (strncmp(k, it->prefix, plen) != 0 || (prev != NULL && strcmp(prev, k) >= 0))
			return faucet_error_set(FAUCET_ERROR,
						"the %s store's list_page returned '%s' out of order "
						"(after '%s', prefix '%s')",
						faucet_store_backend_name(it->store), k,
						prev != NULL ? prev : "", it->prefix);
		prev = k;
	}
	return 0;
}

/* Read the next page into it->page.  The last key of the page handed out
 * becomes `after` (moved, not copied) only once the new page is in, so a
 * failed read leaves the iterator as it was and the next call retries. */
static int read_page(faucet_store_iter *it)
{
	faucet_store_backend *b = faucet_store_backend_of(it->store);
	faucet_strarray fresh = {NULL, 0};
	char *last = it->page.count > 0 ? it->page.strings[it->page.count - 1] : NULL;
	const char *after = last != NULL ? last : it->after;
	int rc;

	if (b->list_page == NULL) {
		/* Listed once: the whole listing is the one and only page. */
		rc = faucet_store_list(it->store, it->prefix, &fresh);
		if (rc == 0)
			it->exhausted = 1;
	} else {
		rc = b->list_page(b, it->prefix, after, it->page_size, &fresh);
		if (rc == 0 && fresh.count > it->page_size)
			rc = faucet_error_set(FAUCET_ERROR,
					      "the %s store's list_page returned %zu keys, more "
					      "than the %zu asked for",
					      faucet_store_backend_name(it->store), fresh.count,
					      it->page_size);
		if (rc == 0)
			rc = page_is_ordered(it, after, &fresh);
		/* A short page is the last one: no round trip for an empty one. */
		if (rc == 0)
			it->exhausted = fresh.count < it->page_size;
	}
	if (rc != 0) {
		faucet_strarray_dispose(&fresh);
		return rc;
	}
	if (last != NULL) {
		free(it->after);
		it->after = last;
		it->page.strings[--it->page.count] = NULL;
	}
	faucet_strarray_dispose(&it->page);
	it->page = fresh;
	it->next = 0;
	return 0;
}

int faucet_store_iter_next(faucet_store_iter *it, const char **key)
{
	int rc;

	if (key == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_store_iter_next: key is NULL");
	*key = NULL;
	if (it == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_store_iter_next: NULL iterator");
	if (it->next == it->page.count) {
		if (it->exhausted)
			return 0;
		if ((rc = read_page(it)) != 0)
			return rc;
		if (it->page.count == 0) {
			it->exhausted = 1;
			return 0;
		}
	}
	*key = it->page.strings[it->next++];
	return 1;
}

void faucet_store_iter_free(faucet_store_iter *it)
{
	if (it == NULL)
		return;
	faucet_strarray_dispose(&it->page);
	free(it->after);
	free(it->prefix);
	free(it);
}
