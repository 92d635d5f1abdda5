/*
 * incremental_copy.c - copy what is new in an append-only file, resuming
 * from a bookmark kept in a faucet file store.
 *
 *   incremental_copy STATE_DIR SOURCE DEST
 *
 * The first run copies the whole source; each later run copies only the
 * bytes appended since.  The bookmark records how far the source was read
 * and how long the destination was when that was durable:
 *
 *   {"source_offset": N, "dest_length": M}
 *
 * Order of writes, and why: the copied bytes are made durable first (fsync
 * of DEST), the bookmark second (faucet_store_put is durable on return).  A
 * crash between the two leaves DEST longer than the bookmark says; the next
 * run truncates DEST back to dest_length and copies that tail again, so a
 * crash never duplicates or loses a byte.  A source shorter than the
 * bookmark (rotated or rewritten) is refused: re-copying silently would
 * duplicate data, skipping silently would lose it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <faucet/faucet.h>
#include <json-c/json.h>

static int fail(const char *what)
{
	fprintf(stderr, "incremental_copy: %s: %s\n", what, faucet_error_last()->message);
	return 1;
}

static int fail_os(const char *what, const char *path)
{
	fprintf(stderr, "incremental_copy: %s %s: %s\n", what, path, strerror(errno));
	return 1;
}

/* Read the bookmark's two numbers; absent bookmark = start of both files. */
static int read_bookmark(const faucet_value *v, uint64_t *src_off, uint64_t *dst_len)
{
	json_object *doc, *a, *b;

	*src_off = *dst_len = 0;
	if (v == NULL)
		return 0;
	doc = json_tokener_parse(faucet_value_json(v));
	if (doc == NULL || !json_object_object_get_ex(doc, "source_offset", &a) ||
	    !json_object_object_get_ex(doc, "dest_length", &b) ||
	    !json_object_is_type(a, json_type_int) || !json_object_is_type(b, json_type_int)) {
		json_object_put(doc);
		fprintf(stderr, "incremental_copy: bookmark %s is not {source_offset, dest_length}\n",
			faucet_value_json(v));
		return -1;
	}
	*src_off = json_object_get_uint64(a);
	*dst_len = json_object_get_uint64(b);
	json_object_put(doc);
	return 0;
}

static int copy_tail(int src, int dst, uint64_t from, uint64_t *copied)
{
	char buf[1 << 16];
	off_t at = (off_t)from;

	*copied = 0;
	for (;;) {
		ssize_t n = pread(src, buf, sizeof(buf), at);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0)
			return 0;
		for (ssize_t done = 0; done < n;) {
			ssize_t w = write(dst, buf + done, (size_t)(n - done));
			if (w < 0) {
				if (errno == EINTR)
					continue;
				return -1;
			}
			done += w;
		}
		at += n;
		*copied += (uint64_t)n;
	}
}

int main(int argc, char **argv)
{
	faucet_store *store = NULL;
	faucet_key *k = NULL;
	faucet_value *bookmark = NULL, *next = NULL;
	char *row = NULL, *key = NULL, json[128];
	uint64_t src_off, dst_len, copied;
	struct stat st;
	int src = -1, dst = -1, rc = 1;

	if (argc != 4) {
		fprintf(stderr, "usage: incremental_copy STATE_DIR SOURCE DEST\n");
		return 2;
	}
	if (faucet_store_open_file(&store, argv[1], NULL) != 0)
		return fail("open state store");

	/* One bookmark per source file: the path becomes a safe key component. */
	row = faucet_encode_component(argv[2], 1);
	if (row == NULL || faucet_key_new_invocation(&k, "incremental_copy", row) != 0 ||
	    (key = faucet_key_render(k)) == NULL) {
		rc = fail("build state key");
		goto out;
	}
	if (faucet_store_get(store, key, &bookmark) != 0) {
		rc = fail("read bookmark");
		goto out;
	}
	if (read_bookmark(bookmark, &src_off, &dst_len) != 0)
		goto out;

	src = open(argv[2], O_RDONLY | O_CLOEXEC);
	if (src < 0 || fstat(src, &st) != 0) {
		rc = fail_os("cannot read", argv[2]);
		goto out;
	}
	if ((uint64_t)st.st_size < src_off) {
		fprintf(stderr,
			"incremental_copy: %s is shorter (%lld bytes) than the bookmark's offset %" PRIu64
			"; it was rotated or rewritten - delete key %s to start over\n",
			argv[2], (long long)st.st_size, src_off, key);
		goto out;
	}
	dst = open(argv[3], O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (dst < 0) {
		rc = fail_os("cannot open", argv[3]);
		goto out;
	}
	/* Undo whatever a crashed run appended after its last bookmark. */
	if (ftruncate(dst, (off_t)dst_len) != 0 || lseek(dst, (off_t)dst_len, SEEK_SET) < 0) {
		rc = fail_os("cannot truncate", argv[3]);
		goto out;
	}
	if (copy_tail(src, dst, src_off, &copied) != 0 || fsync(dst) != 0) {
		rc = fail_os("copy failed for", argv[3]);
		goto out;
	}
	snprintf(json, sizeof(json), "{\"source_offset\":%" PRIu64 ",\"dest_length\":%" PRIu64 "}",
		 src_off + copied, dst_len + copied);
	if (faucet_value_parse(&next, json, strlen(json)) != 0 ||
	    faucet_store_put(store, key, next) != 0) {
		rc = fail("write bookmark");
		goto out;
	}
	printf("copied %" PRIu64 " new bytes from %s (offset %" PRIu64 " -> %" PRIu64 "), bookmark %s\n",
	       copied, argv[2], src_off, src_off + copied, key);
	rc = 0;
out:
	if (src >= 0)
		close(src);
	if (dst >= 0)
		close(dst);
	faucet_value_free(bookmark);
	faucet_value_free(next);
	faucet_free(key);
	faucet_free(row);
	faucet_key_free(k);
	faucet_store_free(store);
	return rc;
}
