/*
 * memory.c - the in-process state store ("memory:").
 *
 * A chained hash table (FNV-1a 64 of the key) behind a reader-writer lock:
 * gets share the lock, writes take it alone.  Values are immutable and
 * reference counted, so put keeps the caller's value and get hands out a new
 * reference - no copy either way.  References that a write drops are
 * released after the lock, so a value's free never runs inside it.
 * compare-and-put and put_batch run under the write lock and are atomic;
 * a batch allocates every node it needs before it changes anything.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "store/open_internal.h"
#include <faucet/sys/store_backend.h>
#include <faucet/keys.h>

typedef struct node {
	struct node *next;
	uint64_t hash;
	faucet_value *value;
	char key[];
} node;

typedef struct {
	faucet_store_backend base;
	pthread_rwlock_t lock;
	node **buckets;
	size_t nbuckets; /* a power of two */
	size_t count;
} memory_store;

static node **slot_for(memory_store *m, const char *key, uint64_t hash)
{
	node **slot = &m->buckets[hash & (m->nbuckets - 1)];

	while (*slot != NULL && ((*slot)->hash != hash || strcmp((*slot)->key, key) != 0))
		slot = &(*slot)->next;
	return slot;
}

/* Double the table when it is full; a failed allocation just keeps the old
 * (slower, still correct) table. */
static void maybe_grow(memory_store *m)
{
	size_t n = m->nbuckets * 2;
	node **fresh;

	if (m->count < m->nbuckets)
		return;
	fresh = calloc(n, sizeof(*fresh));
	if (fresh == NULL)
		return;
	for (size_t i = 0; i < m->nbuckets; i++) {
		node *e = m->buckets[i];
		while (e != NULL) {
			node *next = e->next;
			e->next = fresh[e->hash & (n - 1)];
			fresh[e->hash & (n - 1)] = e;
			e = next;
		}
	}
	free(m->buckets);
	m->buckets = fresh;
	m->nbuckets = n;
}

static node *node_new(const char *key, uint64_t hash, const faucet_value *value)
{
	size_t len = strlen(key);
	node *e = faucet__malloc(sizeof(*e) + len + 1);

	if (e == NULL)
		return NULL;
	e->next = NULL;
	e->hash = hash;
	e->value = faucet_value_ref((faucet_value *)value);
	memcpy(e->key, key, len + 1);
	return e;
}

/* Store under the write lock; returns the displaced value (to free after
 * unlocking) through *old.  `fresh` is a preallocated node or NULL. */
static int insert_locked(memory_store *m, const char *key, uint64_t hash,
			 const faucet_value *value, node *fresh, faucet_value **old)
{
	node **slot = slot_for(m, key, hash);

	*old = NULL;
	if (*slot != NULL) {
		*old = (*slot)->value;
		(*slot)->value = faucet_value_ref((faucet_value *)value);
		if (fresh != NULL) {
			faucet_value_free(fresh->value);
			free(fresh);
		}
		return 0;
	}
	if (fresh == NULL) {
		fresh = node_new(key, hash, value);
		if (fresh == NULL)
			return FAUCET_ENOMEM;
	}
	*slot = fresh;
	m->count++;
	maybe_grow(m);
	return 0;
}

static uint64_t key_hash(const char *key)
{
	return faucet_fnv1a64(key, strlen(key));
}

static int memory_get(faucet_store_backend *b, const char *key, faucet_value **out)
{
	memory_store *m = (memory_store *)b;
	uint64_t hash = key_hash(key);
	node *e;

	pthread_rwlock_rdlock(&m->lock);
	e = *slot_for(m, key, hash);
	*out = e ? faucet_value_ref(e->value) : NULL;
	pthread_rwlock_unlock(&m->lock);
	return 0;
}

static int memory_put(faucet_store_backend *b, const char *key, const faucet_value *value)
{
	memory_store *m = (memory_store *)b;
	uint64_t hash = key_hash(key);
	faucet_value *old = NULL;
	int rc;

	pthread_rwlock_wrlock(&m->lock);
	rc = insert_locked(m, key, hash, value, NULL, &old);
	pthread_rwlock_unlock(&m->lock);
	faucet_value_free(old);
	return rc;
}

/* Remove the key's node when it exists and, if `expected` is given, holds
 * that value; *deleted says whether it did. */
static void remove_key(memory_store *m, const char *key, const faucet_value *expected,
		       int *deleted)
{
	node **slot, *gone = NULL;

	pthread_rwlock_wrlock(&m->lock);
	slot = slot_for(m, key, key_hash(key));
	if (*slot != NULL && (expected == NULL || faucet_value_equal((*slot)->value, expected))) {
		gone = *slot;
		*slot = gone->next;
		m->count--;
	}
	pthread_rwlock_unlock(&m->lock);
	*deleted = gone != NULL;
	if (gone != NULL) {
		faucet_value_free(gone->value);
		free(gone);
	}
}

static int memory_del(faucet_store_backend *b, const char *key)
{
	int deleted;

	remove_key((memory_store *)b, key, NULL, &deleted);
	return 0;
}

static int memory_compare_and_delete(faucet_store_backend *b, const char *key,
				     const faucet_value *expected, int *deleted)
{
	remove_key((memory_store *)b, key, expected, deleted);
	return 0;
}

static int memory_list(faucet_store_backend *b, const char *prefix, faucet_strarray *out)
{
	memory_store *m = (memory_store *)b;
	size_t plen = strlen(prefix);
	int rc = 0;

	pthread_rwlock_rdlock(&m->lock);
	for (size_t i = 0; i < m->nbuckets && rc == 0; i++) {
		for (node *e = m->buckets[i]; e != NULL && rc == 0; e = e->next) {
			if (strncmp(e->key, prefix, plen) == 0)
				rc = faucet__strarray_push(out, e->key);
		}
	}
	pthread_rwlock_unlock(&m->lock);
	if (rc != 0) {
		faucet_strarray_dispose(out);
		return rc;
	}
	faucet__strarray_sort_unique(out);
	return 0;
}

static int memory_compare_and_put(faucet_store_backend *b, const char *key,
				  const faucet_value *expected, const faucet_value *value,
				  int *written)
{
	memory_store *m = (memory_store *)b;
	uint64_t hash = key_hash(key);
	faucet_value *old = NULL;
	node *e;
	int rc = 0;

	*written = 0;
	pthread_rwlock_wrlock(&m->lock);
	e = *slot_for(m, key, hash);
	if (faucet_value_equal(e ? e->value : NULL, expected)) {
		rc = insert_locked(m, key, hash, value, NULL, &old);
		*written = rc == 0;
	}
	pthread_rwlock_unlock(&m->lock);
	faucet_value_free(old);
	return rc;
}

static int memory_put_batch(faucet_store_backend *b, const faucet_entry *entries, size_t count)
{
	memory_store *m = (memory_store *)b;
	node **fresh = faucet__calloc(count, sizeof(*fresh));
	faucet_value **old = faucet__calloc(count, sizeof(*old));
	int rc = 0;

	if (fresh == NULL || old == NULL) {
		free(fresh);
		free(old);
		return FAUCET_ENOMEM;
	}
	/* Allocate first: once the lock is taken nothing can fail. */
	for (size_t i = 0; i < count && rc == 0; i++) {
		fresh[i] = node_new(entries[i].key, key_hash(entries[i].key), entries[i].value);
		if (fresh[i] == NULL)
			rc = FAUCET_ENOMEM;
	}
	if (rc == 0) {
		pthread_rwlock_wrlock(&m->lock);
		for (size_t i = 0; i < count; i++) {
			(void)insert_locked(m, entries[i].key, fresh[i]->hash, entries[i].value,
					    fresh[i], &old[i]);
			fresh[i] = NULL;
		}
		pthread_rwlock_unlock(&m->lock);
	}
	for (size_t i = 0; i < count; i++) {
		if (fresh[i] != NULL) {
			faucet_value_free(fresh[i]->value);
			free(fresh[i]);
		}
		faucet_value_free(old[i]);
	}
	free(fresh);
	free(old);
	return rc;
}

/* Every key's condition checked under the write lock, then every write
 * made under the same lock: all or nothing.  The nodes a put may need are
 * allocated before the lock, so nothing fails once it is taken. */
static int memory_compare_and_put_batch(faucet_store_backend *b,
					const faucet_store_guard *entries, size_t n, int *written)
{
	memory_store *m = (memory_store *)b;
	node **fresh = faucet__calloc(n, sizeof(*fresh));
	faucet_value **old = faucet__calloc(n, sizeof(*old));
	node **gone = faucet__calloc(n, sizeof(*gone));
	int rc = 0, holds = 1;

	*written = 0;
	if (fresh == NULL || old == NULL || gone == NULL)
		rc = FAUCET_ENOMEM;
	for (size_t i = 0; i < n && rc == 0; i++) {
		if (entries[i].value == NULL)
			continue;
		fresh[i] = node_new(entries[i].key, key_hash(entries[i].key), entries[i].value);
		if (fresh[i] == NULL)
			rc = FAUCET_ENOMEM;
	}
	if (rc == 0) {
		pthread_rwlock_wrlock(&m->lock);
		for (size_t i = 0; i < n && holds; i++) {
			node *e = *slot_for(m, entries[i].key, key_hash(entries[i].key));

			holds = faucet_value_equal(e ? e->value : NULL, entries[i].expected);
		}
		for (size_t i = 0; i < n && holds; i++) {
			node **slot = slot_for(m, entries[i].key, key_hash(entries[i].key));

			if (entries[i].value != NULL) {
				(void)insert_locked(m, entries[i].key, fresh[i]->hash,
						    entries[i].value, fresh[i], &old[i]);
				fresh[i] = NULL;
			} else if (*slot != NULL) {
				gone[i] = *slot;
				*slot = gone[i]->next;
				m->count--;
			}
		}
		pthread_rwlock_unlock(&m->lock);
		*written = holds;
	}
	for (size_t i = 0; i < n; i++) {
		if (fresh != NULL && fresh[i] != NULL) {
			faucet_value_free(fresh[i]->value);
			free(fresh[i]);
		}
		if (gone != NULL && gone[i] != NULL) {
			faucet_value_free(gone[i]->value);
			free(gone[i]);
		}
		if (old != NULL)
			faucet_value_free(old[i]);
	}
	free(fresh);
	free(old);
	free(gone);
	return rc;
}

static int memory_check(faucet_store_backend *b, const faucet_check_context *ctx,
			faucet_check_report **out)
{
	(void)b;
	(void)ctx;
	/* An in-process map is always reachable. */
	int rc = faucet_check_report_new(out);
	if (rc == 0)
		rc = faucet_check_report_add(*out, "sentinel", FAUCET_PROBE_PASS, NULL, 0, NULL);
	return rc;
}

static void memory_free(faucet_store_backend *b)
{
	memory_store *m = (memory_store *)b;

	for (size_t i = 0; i < m->nbuckets; i++) {
		node *e = m->buckets[i];
		while (e != NULL) {
			node *next = e->next;
			faucet_value_free(e->value);
			free(e);
			e = next;
		}
	}
	free(m->buckets);
	pthread_rwlock_destroy(&m->lock);
	free(m);
}

int faucet_store_open_memory(faucet_store **out)
{
	memory_store *m;

	if (out == NULL)
		return faucet_error_set(FAUCET_EINVALID, "faucet_store_open_memory: out is NULL");
	*out = NULL;
	m = faucet__calloc(1, sizeof(*m));
	if (m == NULL)
		return FAUCET_ENOMEM;
	m->nbuckets = 64;
	m->buckets = faucet__calloc(m->nbuckets, sizeof(*m->buckets));
	if (m->buckets == NULL || pthread_rwlock_init(&m->lock, NULL) != 0) {
		free(m->buckets);
		free(m);
		return faucet_error_set(FAUCET_ENOMEM, "cannot create the memory store");
	}
	m->base.version = FAUCET_STORE_BACKEND_VERSION;
	m->base.name = "memory";
	m->base.get = memory_get;
	m->base.put = memory_put;
	m->base.del = memory_del;
	m->base.list = memory_list;
	m->base.compare_and_put = memory_compare_and_put;
	m->base.compare_and_delete = memory_compare_and_delete;
	m->base.put_batch = memory_put_batch;
	m->base.compare_and_put_batch = memory_compare_and_put_batch;
	m->base.cas_batch_max = FAUCET__CAS_BATCH_ONE_TXN;
	m->base.check = memory_check;
	m->base.free = memory_free;
	return faucet_store_new(out, &m->base);
}
