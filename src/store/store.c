/*
 * store.c - the store front-end: key validation and the seed trait's defaults.
 *
 * Every public store call lands here first.  Keys are validated in this one
 * place, so no backend ever sees an invalid key and every backend rejects
 * the same keys with the same message.  Where a backend leaves a slot NULL
 * the front-end supplies the default behaviour documented in store.h.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "warning.h"
#include <faucet/sys/store_backend.h>
#include "store/open_internal.h"
#include "keys/bookkeeping.h"
#include <faucet/keys.h>

struct faucet_store {
	faucet_store_backend *backend;
};

int faucet_store_new(faucet_store **out, faucet_store_backend *backend)
{
	faucet_store *s;

	if (out == NULL || backend == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_store_new: NULL argument");
	*out = NULL;
	if (backend->version < FAUCET_STORE_BACKEND_MIN_VERSION ||
	    backend->version > FAUCET_STORE_BACKEND_VERSION) {
		int version = (int)backend->version;
		if (backend->free)
			backend->free(backend);
		return faucet_error_set(FAUCET_EINVALID,
					"state store backend version %d is not supported (expected %d; "
					"this library takes %d to %d)",
					version, FAUCET_STORE_BACKEND_VERSION,
					FAUCET_STORE_BACKEND_MIN_VERSION, FAUCET_STORE_BACKEND_VERSION);
	}
	if (backend->get == NULL || backend->put == NULL || backend->del == NULL ||
	    backend->free == NULL) {
		const char *missing = backend->get == NULL   ? "get"
				      : backend->put == NULL ? "put"
				      : backend->del == NULL ? "del"
							     : "free";
		/* The message reads the backend's name: set it before the backend is freed. */
		int rc = faucet_error_set(FAUCET_EINVALID,
					  "state store backend '%s' has no %s (get, put, del and free "
					  "are required)",
					  backend->name != NULL ? backend->name : "custom", missing);
		if (backend->free)
			backend->free(backend);
		return rc;
	}
	s = faucet__calloc(1, sizeof(*s));
	if (s == NULL) {
		backend->free(backend);
		return FAUCET_ENOMEM;
	}
	s->backend = backend;
	*out = s;
	return 0;
}

void faucet_store_free(faucet_store *s)
{
	if (s == NULL)
		return;
	s->backend->free(s->backend);
	free(s);
}

faucet_store_backend *faucet_store_backend_of(faucet_store *s)
{
	return s->backend;
}

const char *faucet_store_backend_name(const faucet_store *s)
{
	return s->backend->name ? s->backend->name : "custom";
}

int faucet__store_has_list_page(const faucet_store *s)
{
	return s->backend->list_page != NULL;
}

int faucet__store_has_cas_batch(const faucet_store *s)
{
	return s->backend->version >= 13 && s->backend->compare_and_put_batch != NULL;
}

size_t faucet__store_cas_batch_max(const faucet_store *s)
{
	if (!faucet__store_has_cas_batch(s))
		return 0;
	if (s->backend->version >= 14 && s->backend->cas_batch_max > FAUCET_STORE_CAS_BATCH_MAX)
		return s->backend->cas_batch_max;
	return FAUCET_STORE_CAS_BATCH_MAX;
}

int faucet_store_supports_list(const faucet_store *s)
{
	return s->backend->list != NULL || s->backend->scan != NULL ||
	       faucet__store_has_list_page(s);
}

int faucet_store_supports_compare_and_put(const faucet_store *s)
{
	return s->backend->compare_and_put != NULL;
}

int faucet_store_supports_compare_and_delete(const faucet_store *s)
{
	return s->backend->compare_and_delete != NULL;
}

int faucet_store_supports_atomic_batch(const faucet_store *s)
{
	return s->backend->put_batch != NULL;
}

int faucet_store_get(faucet_store *s, const char *key, faucet_value **out)
{
	if (out == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_store_get: out is NULL");
	*out = NULL;
	if (faucet_validate_key(key) != 0)
		return FAUCET_EINVALID;
	return s->backend->get(s->backend, key, out);
}

int faucet_store_get_many(faucet_store *s, const char *const *keys, size_t count,
			  faucet_value **out)
{
	int rc = 0;

	if (out == NULL || (keys == NULL && count > 0))
		return faucet_error_set(FAUCET_EINVALID, "faucet_store_get_many: NULL argument");
	memset(out, 0, count * sizeof(*out));
	for (size_t i = 0; i < count; i++) {
		if (faucet_validate_key(keys[i]) != 0)
			return FAUCET_EINVALID;
	}
	/* get_many is the last slot, which a version-2 backend does not have. */
	if (s->backend->get_many != NULL)
		return s->backend->get_many(s->backend, keys, count, out);
	for (size_t i = 0; i < count && rc == 0; i++)
		rc = s->backend->get(s->backend, keys[i], &out[i]);
	if (rc != 0) {
		for (size_t i = 0; i < count; i++) {
			faucet_value_free(out[i]);
			out[i] = NULL;
		}
	}
	return rc;
}

int faucet_store_put(faucet_store *s, const char *key, const faucet_value *value)
{
	if (faucet_validate_key(key) != 0)
		return FAUCET_EINVALID;
	if (value == NULL)
		return faucet_error_set(FAUCET_EINVALID, "put '%s': no value (use delete)", key);
	return s->backend->put(s->backend, key, value);
}

int faucet_store_delete(faucet_store *s, const char *key)
{
	if (faucet_validate_key(key) != 0)
		return FAUCET_EINVALID;
	return s->backend->del(s->backend, key);
}

static int cannot_enumerate(void)
{
	return faucet_error_set(FAUCET_EUNSUPPORTED, "this state store cannot enumerate its keys");
}

static int push_key(const char *key, void *arr)
{
	return faucet__strarray_push(arr, key);
}

#define LIST_BY_PAGES 10000

/* A backend with only list_page: its pages one after another, through the
 * iterator, which checks that each page goes on from the one before. */
static int list_by_pages(faucet_store *s, const char *prefix, faucet_strarray *out)
{
	faucet_store_iter *it = NULL;
	const char *key;
	int rc = faucet_store_iter_new(s, prefix, &it);

	if (rc == 0)
		rc = faucet_store_iter_set_page_size(it, LIST_BY_PAGES);
	while (rc == 0 && (rc = faucet_store_iter_next(it, &key)) == 1)
		rc = faucet__strarray_push(out, key);
	faucet_store_iter_free(it);
	if (rc != 0)
		faucet_strarray_dispose(out);
	return rc;
}

int faucet_store_list(faucet_store *s, const char *prefix, faucet_strarray *out)
{
	int rc;

	if (out == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_store_list: out is NULL");
	out->strings = NULL;
	out->count = 0;
	prefix = prefix ? prefix : "";
	if (s->backend->list != NULL)
		return s->backend->list(s->backend, prefix, out);
	if (s->backend->scan == NULL && faucet__store_has_list_page(s))
		return list_by_pages(s, prefix, out);
	if (s->backend->scan == NULL)
		return cannot_enumerate();
	/* Default: copy what a scan hands over. */
	rc = s->backend->scan(s->backend, prefix, push_key, out);
	if (rc != 0)
		faucet_strarray_dispose(out);
	return rc;
}

int faucet_store_scan(faucet_store *s, const char *prefix, faucet_key_fn fn, void *ctx)
{
	faucet_strarray keys = {NULL, 0};
	int rc;

	if (fn == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_store_scan: fn is NULL");
	prefix = prefix ? prefix : "";
	if (s->backend->scan != NULL)
		return s->backend->scan(s->backend, prefix, fn, ctx);
	if (!faucet_store_supports_list(s))
		return cannot_enumerate();
	/* Default: visit a list.  No lock is held while fn runs. */
	rc = faucet_store_list(s, prefix, &keys);
	for (size_t i = 0; rc == 0 && i < keys.count; i++)
		rc = fn(keys.strings[i], ctx);
	faucet_strarray_dispose(&keys);
	return rc;
}

#define SCAN_ENTRIES_CHUNK 256

/* The default: the listing, read a chunk at a time. */
static int scan_entries_by_list(faucet_store *s, const char *prefix, int data_only,
				faucet_entry_fn fn, void *ctx)
{
	faucet_strarray keys = {NULL, 0};
	faucet_value *values[SCAN_ENTRIES_CHUNK];
	int rc = faucet_store_list(s, prefix, &keys);

	if (rc == 0 && data_only) { /* bookkeeping keys are not even read */
		size_t kept = 0;

		for (size_t i = 0; i < keys.count; i++) {
			if (faucet__is_bookkeeping_key(keys.strings[i]))
				free(keys.strings[i]);
			else
				keys.strings[kept++] = keys.strings[i];
		}
		keys.count = kept;
	}

	for (size_t from = 0; rc == 0 && from < keys.count; from += SCAN_ENTRIES_CHUNK) {
		size_t n = keys.count - from < SCAN_ENTRIES_CHUNK ? keys.count - from
								   : SCAN_ENTRIES_CHUNK;

		rc = faucet_store_get_many(s, (const char *const *)keys.strings + from, n, values);
		for (size_t i = 0; i < n && rc == 0; i++) {
			if (values[i] != NULL)
				rc = fn(keys.strings[from + i], values[i], ctx);
		}
		for (size_t i = 0; i < n; i++)
			faucet_value_free(values[i]);
	}
	faucet_strarray_dispose(&keys);
	return rc;
}

int faucet__store_has_scan_entries(const faucet_store *s)
{
	return s->backend->scan_entries != NULL;
}

int faucet_store_scan_entries(faucet_store *s, const char *prefix, faucet_entry_fn fn,
			      void *ctx)
{
	if (s == NULL || fn == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_store_scan_entries: NULL argument");
	prefix = prefix ? prefix : "";
	if (faucet__store_has_scan_entries(s))
		return s->backend->scan_entries(s->backend, prefix, fn, ctx);
	return scan_entries_by_list(s, prefix, 0, fn, ctx);
}

typedef struct {
	faucet_entry_fn fn;
	void *ctx;
} data_only;

static int data_entry(const char *key, const faucet_value *value, void *ctx)
{
	data_only *d = ctx;

	return faucet__is_bookkeeping_key(key) ? 0 : d->fn(key, value, d->ctx);
}

int faucet_store_scan_data(faucet_store *s, const char *prefix, faucet_entry_fn fn, void *ctx)
{
	data_only d = {fn, ctx};

	if (s == NULL || fn == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_store_scan_data: NULL argument");
	prefix = prefix ? prefix : "";
	/* The backend's own filter is a first cut; the rule is applied here
	 * again, so what counts as bookkeeping is decided in one place. */
	if (s->backend->scan_data != NULL)
		return s->backend->scan_data(s->backend, prefix, data_entry, &d);
	if (faucet__store_has_scan_entries(s))
		return s->backend->scan_entries(s->backend, prefix, data_entry, &d);
	return scan_entries_by_list(s, prefix, 1, data_entry, &d);
}

int faucet__store_put_guarded(faucet_store *s, const char *guard, const faucet_value *expected,
			      const faucet_value *guard_value, const char *key,
			      const faucet_value *value, int *written)
{
	int rc;

	*written = 0;
	if ((rc = faucet_validate_key(guard)) != 0 || (rc = faucet_validate_key(key)) != 0)
		return rc;
	if (guard_value == NULL || value == NULL)
		return faucet_error_set(FAUCET_EINVALID, "put '%s' guarded by '%s': no value", key,
					guard);
	if (strcmp(guard, key) == 0)
		return faucet_error_set(FAUCET_EINVALID, "put '%s' guarded by itself", key);
	if (s->backend->put_guarded != NULL)
		return s->backend->put_guarded(s->backend, guard, expected, guard_value, key, value,
					       written);
	rc = faucet_store_compare_and_put(s, guard, expected, guard_value, written);
	if (rc != 0 || !*written)
		return rc;
	return faucet_store_put(s, key, value);
}

/* The checks every guarded write makes, whichever way it is written. */
static int check_guarded(const faucet_store_guard *guards, size_t n, const char *const *drop,
			 size_t ndrop, const char *key)
{
	int rc;

	if (n == 0 || n > FAUCET_STORE_GUARDS_MAX || ndrop > FAUCET_STORE_GUARDS_MAX)
		return faucet_error_set(FAUCET_EINVALID, "put '%s': 1 to %d guards and at most %d "
					"keys to drop", key, FAUCET_STORE_GUARDS_MAX,
					FAUCET_STORE_GUARDS_MAX);
	if ((rc = faucet_validate_key(key)) != 0)
		return rc;
	for (size_t i = 0; i < n + ndrop; i++) {
		const char *k = i < n ? guards[i].key : drop[i - n];

		if ((rc = faucet_validate_key(k)) != 0)
			return rc;
		if ((i < n && guards[i].value == NULL) || strcmp(k, key) == 0)
			return faucet_error_set(FAUCET_EINVALID, "put '%s': guard '%s' has no value "
						"or is the key", key, k);
		for (size_t j = 0; j < i; j++)
			if (strcmp(k, j < n ? guards[j].key : drop[j - n]) == 0)
				return faucet_error_set(FAUCET_EINVALID,
							"put '%s': '%s' given twice", key, k);
	}
	return 0;
}

int faucet__store_put_guarded_then(faucet_store *s, const faucet_store_guard *guards, size_t n,
				   const char *const *drop, size_t ndrop, const char *key,
				   const faucet_value *value, const faucet_store_guard *then,
				   int *written, int *then_written)
{
	int rc;

	*written = 0;
	*then_written = 0;
	if (then == NULL || then->value == NULL)
		return faucet_error_set(FAUCET_EINVALID, "put '%s': a follow-up write needs a value",
					key);
	if ((rc = check_guarded(guards, n, drop, ndrop, key)) != 0)
		return rc;
	if (s->backend->put_guarded_then != NULL)
		return s->backend->put_guarded_then(s->backend, guards, n, drop, ndrop, key, value,
						    then, written, then_written);
	return faucet__store_put_guarded_many(s, guards, n, drop, ndrop, key, value, written);
}

/* The keys to drop once the guards are in place: cleanup, whose failure is
 * a warning (the put's own error, when there is one, stands). */
static void drop_after_guards(faucet_store *s, const char *const *drop, size_t ndrop, int rc)
{
	char *msg = rc != 0 ? faucet__strdup(faucet_error_last()->message) : NULL;

	for (size_t i = 0; i < ndrop; i++)
		if (faucet_store_delete(s, drop[i]) != 0)
			faucet__warning_set("%s was not deleted: %s", drop[i],
					    faucet_error_last()->message);
	if (rc != 0)
		(void)faucet_error_set(rc, "%s", msg ? msg : "");
	free(msg);
}

int faucet__store_put_guarded_if(faucet_store *s, const faucet_store_guard *guards, size_t n,
				 const char *const *drop, size_t ndrop, const faucet_store_guard *put,
				 const faucet_store_guard *then, int *written, int *then_written,
				 int *moved)
{
	int rc, held = 0;

	*written = 0;
	*then_written = 0;
	*moved = 0;
	if (put == NULL || put->value == NULL || (then != NULL && then->value == NULL))
		return faucet_error_set(FAUCET_EINVALID, "a guarded put needs its values");
	if ((rc = check_guarded(guards, n, drop, ndrop, put->key)) != 0)
		return rc;
	if (s->backend->put_guarded_if != NULL)
		return s->backend->put_guarded_if(s->backend, guards, n, drop, ndrop, put, then,
						  written, then_written, moved);
	/* One by one, as put_guarded_many's fallback, the key last: a key that
	 * moved leaves the guards written, which the caller's retry finds. */
	for (size_t i = 0; i < n; i++) {
		rc = faucet_store_compare_and_put(s, guards[i].key, guards[i].expected,
						  guards[i].value, &held);
		if (rc != 0 || !held)
			return rc;
	}
	*written = 1;
	if (ndrop > 0)
		drop_after_guards(s, drop, ndrop, 0);
	rc = faucet_store_compare_and_put(s, put->key, put->expected, put->value, &held);
	if (rc == 0 && !held)
		*moved = 1;
	return rc; /* `then` is the caller's */
}

int faucet__store_put_guarded_many(faucet_store *s, const faucet_store_guard *guards, size_t n,
				   const char *const *drop, size_t ndrop, const char *key,
				   const faucet_value *value, int *written)
{
	int rc;

	*written = 0;
	if ((rc = check_guarded(guards, n, drop, ndrop, key)) != 0)
		return rc;
	if (s->backend->put_guarded_many != NULL)
		return s->backend->put_guarded_many(s->backend, guards, n, drop, ndrop, key, value,
						    written);
	/* One by one: a guard that does not hold stops here, those before it
	 * written - the caller reads again and retries, with edits that find
	 * their own earlier write in place. */
	for (size_t i = 0; i + 1 < n; i++) {
		rc = faucet_store_compare_and_put(s, guards[i].key, guards[i].expected,
						  guards[i].value, written);
		if (rc != 0 || !*written) {
			*written = 0;
			return rc;
		}
	}
	*written = 0;
	rc = faucet__store_put_guarded(s, guards[n - 1].key, guards[n - 1].expected,
				       guards[n - 1].value, key, value, written);
	if (*written && ndrop > 0)
		drop_after_guards(s, drop, ndrop, rc);
	return rc;
}

static int compare_key_ptrs(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Every key valid, and no key twice (sorted copies of the pointers). */
static int check_batch_keys(const faucet_store_guard *entries, size_t n)
{
	const char **keys = faucet__calloc(n, sizeof(*keys));
	int rc = 0;

	if (keys == NULL)
		return FAUCET_ENOMEM;
	for (size_t i = 0; i < n && rc == 0; i++) {
		keys[i] = entries[i].key;
		if (faucet_validate_key(keys[i]) != 0)
			rc = FAUCET_EINVALID;
	}
	if (rc == 0)
		qsort(keys, n, sizeof(*keys), compare_key_ptrs);
	for (size_t i = 1; i < n && rc == 0; i++)
		if (strcmp(keys[i - 1], keys[i]) == 0)
			rc = faucet_error_set(FAUCET_EINVALID,
					      "compare-and-put batch: %s is given twice", keys[i]);
	free(keys);
	return rc;
}

int faucet__store_compare_and_put_batch(faucet_store *s, const faucet_store_guard *entries,
					size_t n, int *written)
{
	int rc;

	*written = 0;
	if (!faucet__store_has_cas_batch(s))
		return FAUCET_EUNSUPPORTED;
	if (n == 0 || n > faucet__store_cas_batch_max(s))
		return faucet_error_set(FAUCET_EINVALID,
					"compare-and-put batch: %zu entries (1 to %zu)", n,
					faucet__store_cas_batch_max(s));
	if ((rc = check_batch_keys(entries, n)) != 0)
		return rc;
	return s->backend->compare_and_put_batch(s->backend, entries, n, written);
}

/* The checks of every compare-and-put before the backend sees it: *written
 * 0, then a valid key and a value (0), else FAUCET_EINVALID. */
static int cas_refused(const char *key, const faucet_value *value, int *written)
{
	*written = 0;
	if (faucet_validate_key(key) != 0)
		return FAUCET_EINVALID;
	if (value == NULL)
		return faucet_error_set(FAUCET_EINVALID, "compare-and-put '%s': no value", key);
	return 0;
}

int faucet_store_compare_and_put(faucet_store *s, const char *key,
				 const faucet_value *expected,
				 const faucet_value *value, int *written)
{
	faucet_value *current = NULL;
	int rc, dummy;

	if (written == NULL)
		written = &dummy;
	if ((rc = cas_refused(key, value, written)) != 0)
		return rc;
	if (s->backend->compare_and_put != NULL)
		return s->backend->compare_and_put(s->backend, key, expected, value, written);

	/* Default: read, compare, write.  Not atomic across processes; the
	 * store says so through faucet_store_supports_compare_and_put(). */
	rc = s->backend->get(s->backend, key, &current);
	if (rc != 0)
		return rc;
	if (!faucet_value_equal(current, expected)) {
		faucet_value_free(current);
		return 0;
	}
	faucet_value_free(current);
	rc = s->backend->put(s->backend, key, value);
	if (rc == 0)
		*written = 1;
	return rc;
}

int faucet__store_compare_and_put_expiring(faucet_store *s, const char *key,
					   const faucet_value *expected, const faucet_value *value,
					   int64_t expires_at, int *written)
{
	int rc, dummy;

	if (s->backend->compare_and_put_expiring == NULL)
		return faucet_store_compare_and_put(s, key, expected, value, written);
	if (written == NULL)
		written = &dummy;
	if ((rc = cas_refused(key, value, written)) != 0)
		return rc;
	return s->backend->compare_and_put_expiring(s->backend, key, expected, value, expires_at,
						   written);
}

int faucet_store_compare_and_delete(faucet_store *s, const char *key,
				    const faucet_value *expected, int *deleted)
{
	faucet_value *current = NULL;
	int rc, dummy, equal;

	if (deleted == NULL)
		deleted = &dummy;
	*deleted = 0;
	if (faucet_validate_key(key) != 0)
		return FAUCET_EINVALID;
	if (expected == NULL)
		return faucet_error_set(FAUCET_EINVALID,
					"compare-and-delete '%s': no expected value (use delete)", key);
	if (s->backend->compare_and_delete != NULL)
		return s->backend->compare_and_delete(s->backend, key, expected, deleted);

	/* Default: read, compare, delete.  Not atomic across processes; the
	 * store says so through faucet_store_supports_compare_and_delete(). */
	rc = s->backend->get(s->backend, key, &current);
	if (rc != 0)
		return rc;
	equal = faucet_value_equal(current, expected);
	faucet_value_free(current);
	if (!equal)
		return 0;
	rc = s->backend->del(s->backend, key);
	*deleted = rc == 0;
	return rc;
}

int faucet_store_put_batch(faucet_store *s, const faucet_entry *entries, size_t count)
{
	if (count > 0 && entries == NULL)
		return faucet_error_set(FAUCET_EINVALID, "put_batch: entries is NULL");
	for (size_t i = 0; i < count; i++) {
		if (faucet_validate_key(entries[i].key) != 0)
			return FAUCET_EINVALID;
		if (entries[i].value == NULL)
			return faucet_error_set(FAUCET_EINVALID, "put_batch '%s': no value",
						entries[i].key);
	}
	if (s->backend->put_batch != NULL)
		return s->backend->put_batch(s->backend, entries, count);
	/* Default: in order; an error leaves the entries before it written. */
	return faucet__store_put_prefix(s, entries, count, NULL, NULL);
}

int faucet__store_put_prefix(faucet_store *s, const faucet_entry *entries, size_t count,
			     size_t *written, size_t *unknown_from)
{
	size_t w = 0, u = 0;
	int rc = 0;

	if (s->backend->put_many != NULL) {
		rc = s->backend->put_many(s->backend, entries, count, &w, &u);
	} else {
		for (; w < count; w++) {
			rc = s->backend->put(s->backend, entries[w].key, entries[w].value);
			if (rc != 0)
				break;
		}
		/* A put whose outcome is unknown may have landed. */
		u = w;
		if (rc == FAUCET_EUNKNOWN)
			w++;
	}
	if (written != NULL)
		*written = w;
	if (unknown_from != NULL)
		*unknown_from = u;
	return rc;
}

/* The size of each version of faucet_check_context, oldest first. */
static const size_t check_context_sizes[] = {sizeof(faucet_check_context)};

int faucet_check_context_init(faucet_check_context *c, unsigned int version)
{
	static const faucet_check_context defaults = FAUCET_CHECK_CONTEXT_INIT;

	return faucet__options_init(c, &defaults, check_context_sizes, version,
				    FAUCET_CHECK_CONTEXT_VERSION, "faucet_check_context");
}

int faucet_store_check(faucet_store *s, const faucet_check_context *ctx,
		       faucet_check_report **out)
{
	faucet_check_context c = FAUCET_CHECK_CONTEXT_INIT;

	if (out == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_store_check: out is NULL");
	*out = NULL;
	c.timeout_ms = 10000;
	/* Backends always see the current struct, whatever the caller had. */
	if (ctx != NULL) {
		int rc = faucet__options_load(&c, sizeof(c), ctx, check_context_sizes,
					      FAUCET_CHECK_CONTEXT_VERSION, "faucet_check_context");
		if (rc != 0)
			return rc;
	}
	if (s->backend->check == NULL)
		return faucet_check_report_not_implemented(out);
	return s->backend->check(s->backend, &c, out);
}

/* Only a backend whose server pushes changes has the slot; the rest are
 * polled by whoever wants to follow them. */
int faucet_store_watch(faucet_store *s, const char *prefix, faucet_watch_fn fn, void *ctx)
{
	if (s == NULL || prefix == NULL || fn == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_store_watch: NULL argument");
	if (s->backend->watch == NULL)
		return faucet_error_set(FAUCET_EUNSUPPORTED, "the %s store cannot be watched",
					faucet_store_backend_name(s));
	return s->backend->watch(s->backend, prefix, fn, ctx);
}

/* Only a backend that keeps a key index beside its entries (Redis with
 * index=true) has the slot; for every other one there is nothing to
 * rebuild. */
int faucet_store_reindex(faucet_store *s, size_t *added, size_t *removed)
{
	size_t a = 0, r = 0;
	int rc;

	if (s == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_store_reindex: NULL store");
	if (s->backend->reindex == NULL)
		return faucet_error_set(FAUCET_EUNSUPPORTED,
					"the %s store keeps no key index; only a Redis store "
					"opened with index=true has one",
					faucet_store_backend_name(s));
	rc = s->backend->reindex(s->backend, &a, &r);
	if (added != NULL)
		*added = a;
	if (removed != NULL)
		*removed = r;
	return rc;
}
