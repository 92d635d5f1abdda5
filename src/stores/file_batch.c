/*
 * file_batch.c - the file store's batches: its put_many slot, and its
 * compare_and_put_batch (below, "the compare-and-put batch").
 *
 * A put pays two fsyncs - its temp file's and the directory's - and an
 * import of a million keys paid two million (377 s).  put_many writes a
 * group of values as temp files, makes all their data durable with one
 * syncfs, renames each into place and syncs the directory once
 * (faucet__durable_stream): the same guarantee per file, one barrier per
 * group, and each group is prepared and written while the one before it
 * commits on a second thread.  Not all-or-nothing: a crash
 * or a failure leaves a prefix of the entries written, and says how long.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"
#include "durable.h"
#include "file_internal.h"
#include "file_store.h"

/* What one group of a batch needs to live until its files are written. */
typedef struct {
	char stem[FILE_STEM_MAX + 1];
	char name[FILE_NAME_CAP];
	char path[PATH_CAP];
	temp_spec spec;
	char *owned; /* a sealed value's bytes */
} batch_slot;

/* Everything a put checks and prepares before its write, for one entry. */
static int prepare_slot(file_store *fs, int *dfd, const faucet_entry *e, batch_slot *slot,
			faucet_durable_item *item)
{
	const char *bytes = NULL;
	size_t len = 0;
	/* put_group has looked for the store marker once for the group. */
	int rc = faucet_file__prepare_put(fs, dfd, e->key, e->value, 1, slot->stem, slot->name,
					  &bytes, &len, &slot->owned);

	if (rc != 0)
		return rc;
	faucet_file__path_of(fs, slot->name, slot->path);
	slot->spec.stem = slot->stem;
	slot->spec.kind = "json";
	*item = (faucet_durable_item){slot->name, slot->path, faucet_file__temp_namer, &slot->spec,
				      bytes, len};
	return 0;
}

/* Free the sealed values of slots[0..n). */
static void free_owned(batch_slot *slots, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(slots[i].owned);
		slots[i].owned = NULL;
	}
}

/* Prepare entries[0..n) into slots and items (the store marker checked
 * once for them all); on failure nothing is left owned. */
static int prepare_group(file_store *fs, int *dfd, const faucet_entry *entries, size_t n,
			 batch_slot *slots, faucet_durable_item *items)
{
	size_t ready = 0;
	int rc = 0;

	if (fs->keyring == NULL && faucet_file__store_is_marked(*dfd))
		return faucet_file__keyless_write_refused(fs);
	for (; ready < n && rc == 0; ready++)
		rc = prepare_slot(fs, dfd, &entries[ready], &slots[ready], &items[ready]);
	if (rc != 0)
		free_owned(slots, ready);
	return rc;
}

/* The batch as a stream of groups (faucet__durable_stream): each group is
 * prepared and written while the one before it commits.  With more than
 * one group, two sets of slots take turns, as a group's names must live
 * until the next group is added; a single set serves a batch of one group
 * (its commit is over when the add returns). */
static int put_groups(file_store *fs, int dfd, const faucet_entry *entries, size_t count,
		      size_t group, int sets, batch_slot *slots[2],
		      faucet_durable_item *items[2], size_t *written, size_t *unknown_from)
{
	faucet_durable_stream *stream;
	size_t from = 0;
	int turn = 0, end_rc, rc = faucet__durable_stream_open(dfd, "state file", group, &stream);

	while (rc == 0 && from < count) {
		size_t n = count - from < group ? count - from : group, accepted = 0;

		rc = prepare_group(fs, &dfd, entries + from, n, slots[turn], items[turn]);
		if (rc != 0)
			break;
		rc = faucet__durable_stream_add(stream, items[turn], n, from + n < count,
						&accepted);
		free_owned(slots[turn], n);
		if (rc == 0 && accepted == 0) /* cannot happen: a short group lands one */
			rc = faucet_error_set(FAUCET_ERROR, "a batch group landed nothing");
		from += accepted;
		turn = (turn + 1) % sets;
	}
	end_rc = faucet__durable_stream_close(stream, written, unknown_from);
	/* A failure to prepare comes after what the stream committed. */
	return rc != 0 && end_rc == 0 ? rc : end_rc;
}

/* entries[0..count) as put_groups does, under the root dfd, without the
 * writers' lock (the caller holds it). */
static int put_entries(file_store *fs, int dfd, const faucet_entry *entries, size_t count,
		       size_t *written, size_t *unknown_from)
{
	size_t group = faucet__durable_batch_size();
	batch_slot *slots[2] = {NULL, NULL};
	faucet_durable_item *items[2] = {NULL, NULL};
	int sets = count > group ? 2 : 1, rc = 0;

	*written = *unknown_from = 0;
	if (count == 0)
		return 0;
	if (group > count)
		group = count;
	for (int i = 0; i < sets && rc == 0; i++) {
		slots[i] = faucet__calloc(group, sizeof(*slots[i]));
		items[i] = faucet__calloc(group, sizeof(*items[i]));
		if (slots[i] == NULL || items[i] == NULL)
			rc = FAUCET_ENOMEM;
	}
	if (rc == 0)
		rc = put_groups(fs, dfd, entries, count, group, sets, slots, items, written,
				unknown_from);
	for (int i = 0; i < 2; i++) {
		free(slots[i]);
		free(items[i]);
	}
	return rc;
}

/* A plain batch holds the writers' lock shared a slice at a time, so that
 * a compare-and-put batch waits for one slice, not for a million keys. */
#define PUT_SLICE 4096

/* entries[0..count) in the writers' lock, in order: a key with a lock file
 * (one a compare-and-put or a run manages) alone under its lock, as a put
 * writes it, so that it never lands between that writer's compare and its
 * rename; the keys between them as put_entries' streamed groups. */
static int put_slice(file_store *fs, int dfd, const faucet_entry *entries, size_t count,
		     size_t *written, size_t *unknown_from)
{
	size_t from = 0;
	int rc = 0;

	while (rc == 0 && from < count) {
		size_t to = from, w = 0, u = 0;

		while (to < count && !faucet_file__has_lock_file(dfd, entries[to].key))
			to++;
		if (to > from) {
			rc = put_entries(fs, dfd, entries + from, to - from, &w, &u);
			if (rc != 0) {
				*written = from + w;
				*unknown_from = from + u;
				return rc;
			}
		}
		if (to < count) {
			rc = faucet_file__put_entered(fs, entries[to].key, entries[to].value);
			/* A put whose outcome is unknown may have landed. */
			*written = to + (rc == 0 || rc == FAUCET_EUNKNOWN);
			*unknown_from = to + (rc == 0);
			to++;
		}
		from = to;
	}
	if (rc == 0)
		*written = *unknown_from = count;
	return rc;
}

int faucet_file__put_many(faucet_store_backend *b, const faucet_entry *entries, size_t count,
			  size_t *written, size_t *unknown_from)
{
	file_store *fs = (file_store *)b;
	size_t done = 0;
	int dfd, rc;

	*written = *unknown_from = 0;
	if (count == 0)
		return 0;
	rc = faucet_file__root_get(fs, 1, &dfd);
	while (rc == 0 && done < count) {
		size_t n = count - done < PUT_SLICE ? count - done : PUT_SLICE, w = 0, u = 0;
		int gate = -1;

		rc = faucet_file__writers_enter(fs, &dfd, 1, 0, &gate);
		if (rc == 0) {
			rc = put_slice(fs, dfd, entries + done, n, &w, &u);
			(void)close(gate); /* leaves the writers' lock */
		}
		if (rc != 0) {
			*written = done + w;
			*unknown_from = done + u;
			return rc;
		}
		done += n;
	}
	*written = *unknown_from = done;
	return rc;
}

/* ---- the compare-and-put batch ------------------------------------------------
 *
 * Files cannot be renamed into place all at once.  What the batch promises
 * instead: every key is compared, and then all are written or - one does
 * not hold - none, with no write of ours in between (the writers' lock
 * held exclusive, file.c's "The writers' gate").  The first entry is made
 * durable before any other is written: a run puts its marker part there,
 * and the part must never be behind the keys it records (design §8.2).  A
 * failure after that (a full disk) leaves the first entry and part of the
 * rest, and is an error the caller sees as a failed write, never
 * FAUCET_EUNKNOWN: that would tell a run that found its part in place that
 * the whole chunk landed.
 */

static _Atomic(faucet_file_batch_hook) batch_hook;
static _Atomic(void *) batch_hook_arg;

void faucet_file__set_batch_hook(faucet_file_batch_hook hook, void *arg)
{
	atomic_store(&batch_hook_arg, arg);
	atomic_store(&batch_hook, hook);
}

/* g[from..n): the deletes key by key, then the puts in put_many's groups
 * (or, without puts, one directory sync for the deletes). */
static int write_rest(file_store *fs, const faucet_store_guard *g, size_t from, size_t n)
{
	faucet_entry *puts = faucet__calloc(n, sizeof(*puts));
	size_t np = 0, written = 0, unknown_from = 0;
	int dfd = -1, removed_any = 0, rc = puts == NULL ? FAUCET_ENOMEM : 0;

	for (size_t i = from; rc == 0 && i < n; i++) {
		int removed = 0;

		if (g[i].value != NULL) {
			puts[np++] = (faucet_entry){g[i].key, g[i].value};
			continue;
		}
		rc = faucet_file__remove_key(fs, g[i].key, 0, &removed);
		removed_any = removed_any || removed;
	}
	if (rc == 0 && (removed_any || np > 0))
		rc = faucet_file__root_get(fs, 1, &dfd);
	/* The puts' directory sync makes the unlinks durable too; without
	 * puts, they get one of their own. */
	if (rc == 0 && removed_any && np == 0)
		rc = faucet_file__sync_root(fs, dfd);
	if (rc == 0 && np > 0)
		rc = put_entries(fs, dfd, puts, np, &written, &unknown_from);
	free(puts);
	return rc;
}

/* Write every entry: the first alone, durable before the rest, then the
 * rest.  After the first, a failure is not FAUCET_EUNKNOWN (see above). */
static int write_all(file_store *fs, const faucet_store_guard *g, size_t n)
{
	size_t alone = 1; /* the power-loss test fails when this is 0 */
	int removed = 0, rc = 0;

	if (alone)
		rc = g[0].value != NULL ? faucet_file__store_value(fs, g[0].key, g[0].value)
					: faucet_file__remove_key(fs, g[0].key, 1, &removed);
	if (rc == FAUCET_EUNKNOWN) { /* in place, perhaps not durable: stop here */
		(void)faucet__error_wrap("compare-and-put batch: %s may be written, the other "
					 "%zu entries are not",
					 g[0].key, n - 1);
		return faucet_error_set(FAUCET_EIO, "%s", faucet_error_last()->message);
	}
	if (rc != 0 || n == alone)
		return rc;
	if ((rc = write_rest(fs, g, alone, n)) != 0) {
		(void)faucet__error_wrap("compare-and-put batch: %s is written, the other %zu "
					 "entries may be in part",
					 g[0].key, n - 1);
		if (rc == FAUCET_EUNKNOWN)
			rc = faucet_error_set(FAUCET_EIO, "%s", faucet_error_last()->message);
	}
	return rc;
}

int faucet_file__compare_and_put_batch(faucet_store_backend *b,
				       const faucet_store_guard *entries, size_t n,
				       int *written)
{
	file_store *fs = (file_store *)b;
	int dfd, gate = -1, holds = 1, verified = 0, rc = faucet_file__root_get(fs, 1, &dfd);
	faucet_file_batch_hook hook;

	*written = 0;
	if (rc == 0)
		rc = faucet_file__writers_enter(fs, &dfd, 1, 1, &gate);
	/* Refused before anything is written: a put without the key to an
	 * encrypted store (deletes need no key). */
	for (size_t i = 0; rc == 0 && fs->keyring == NULL && i < n; i++)
		if (entries[i].value != NULL) {
			if (faucet_file__store_is_marked(dfd))
				rc = faucet_file__keyless_write_refused(fs);
			break;
		}
	for (size_t i = 0; rc == 0 && holds && i < n; i++)
		if ((rc = faucet_file__entry_holds(fs, &dfd, entries[i].key, entries[i].expected,
						   &verified, &holds)) != 0)
			(void)faucet__error_wrap("reading '%s'", entries[i].key);
	if (rc == 0 && holds && (hook = atomic_load(&batch_hook)) != NULL)
		hook(atomic_load(&batch_hook_arg));
	if (rc == 0 && holds) {
		rc = write_all(fs, entries, n);
		*written = rc == 0;
	}
	if (gate >= 0)
		(void)close(gate); /* leaves the writers' lock */
	return rc;
}
