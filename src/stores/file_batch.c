/*
 * file_batch.c - the file store's batches (its put_many slot).
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
#include <stdlib.h>

#include "internal.h"
#include "durable.h"
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

int faucet_file__put_many(faucet_store_backend *b, const faucet_entry *entries, size_t count,
			  size_t *written, size_t *unknown_from)
{
	file_store *fs = (file_store *)b;
	size_t group = faucet__durable_batch_size();
	batch_slot *slots[2] = {NULL, NULL};
	faucet_durable_item *items[2] = {NULL, NULL};
	int dfd, sets = count > group ? 2 : 1, rc;

	*written = *unknown_from = 0;
	if (count == 0)
		return 0;
	if (group > count)
		group = count;
	rc = faucet_file__root_get(fs, 1, &dfd);
	if (rc != 0)
		return rc;
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
