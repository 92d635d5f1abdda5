/*
 * test_sqlite_crash.c - the SQLite store keeps every acknowledged write
 * through a power cut, shown by simulating power cuts.
 *
 * The idea is SQLite's own crash tests' (its src/test6.c): a VFS that wraps
 * the default one records every write, truncate and sync the store issues.
 * Data written but not yet synced is volatile: a power cut may lose it, keep
 * it, keep part of it.  After a workload has run, every point of the
 * recorded history is taken as a crash point, and for each one the disk is
 * rebuilt in a fresh directory as a power cut could have left it:
 *
 *   - every unsynced write lost (only what was synced survives);
 *   - the unsynced writes applied in the order they were issued, up to
 *     each prefix of them (the drive wrote some, then lost power);
 *   - such a prefix followed by the first half of the next write (a torn
 *     write).
 *
 * The store is then opened there with the default VFS, as after a reboot,
 * and must hold every write acknowledged before the crash point (the call
 * returned 0) with its value; the one operation in flight holds all its old
 * values or all its new ones; and list works.
 *
 * What this proves is the store's part, not SQLite's: a put returns only
 * after its commit is synced (synchronous=FULL in WAL mode syncs the WAL on
 * every commit).  With synchronous=NORMAL, OFF, or a journal mode whose
 * commit is not synced, the "every unsynced write lost" image of the point
 * right after a put returned lacks that put, and this test fails.
 *
 * The model's simplifications: a sync makes that file's writes durable
 * (not other files'); creating and deleting files is durable at once (the
 * store syncs the directory when it creates the database, and SQLite syncs
 * it when it creates the WAL); the -shm file is not kept (it is rebuilt
 * from the WAL, as after a reboot).
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "stores/sqlite_internal.h"

#define CRASH_VFS "faucet-crash-test"
#define MAX_FILES 8
#define NKEYS 6

/* ---- the recording ------------------------------------------------------ */

typedef enum { EV_WRITE, EV_TRUNCATE, EV_SYNC, EV_DELETE, EV_BEGIN, EV_ACK } ev_kind;

typedef struct {
	ev_kind kind;
	int file;             /* index into files[] (file events) */
	sqlite3_int64 offset; /* write: where; truncate: the new size */
	int len;              /* write: bytes */
	unsigned char *data;  /* write: a copy of the bytes */
	int op;               /* begin/ack: the workload operation */
} event;

static struct {
	pthread_mutex_t lock;
	event *events;
	size_t count, cap;
	char *files[MAX_FILES]; /* base names of the files the store opened */
	int nfiles;
} rec = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void record(event ev)
{
	pthread_mutex_lock(&rec.lock);
	if (rec.count == rec.cap) {
		rec.cap = rec.cap ? rec.cap * 2 : 256;
		rec.events = realloc(rec.events, rec.cap * sizeof(*rec.events));
		if (rec.events == NULL)
			abort();
	}
	rec.events[rec.count++] = ev;
	pthread_mutex_unlock(&rec.lock);
}

static int file_id(const char *path)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	int id;

	pthread_mutex_lock(&rec.lock);
	for (id = 0; id < rec.nfiles; id++)
		if (strcmp(rec.files[id], base) == 0)
			break;
	if (id == rec.nfiles) {
		if (id == MAX_FILES || (rec.files[id] = strdup(base)) == NULL)
			abort();
		rec.nfiles++;
	}
	pthread_mutex_unlock(&rec.lock);
	return id;
}

static void forget_recording(void)
{
	for (size_t i = 0; i < rec.count; i++)
		free(rec.events[i].data);
	free(rec.events);
	for (int i = 0; i < rec.nfiles; i++)
		free(rec.files[i]);
	rec.events = NULL;
	rec.count = rec.cap = 0;
	rec.nfiles = 0;
}

/* ---- the recording VFS -------------------------------------------------- */

/* Our file handle; the wrapped VFS's handle follows it in the same block
 * (szOsFile is the sum of both). */
typedef struct {
	sqlite3_file base;
	sqlite3_file *real;
	int id;
} crash_file;

static sqlite3_vfs *real_vfs;

static int cf_close(sqlite3_file *f)
{
	crash_file *c = (crash_file *)f;

	return c->real->pMethods->xClose(c->real);
}

static int cf_read(sqlite3_file *f, void *buf, int n, sqlite3_int64 off)
{
	crash_file *c = (crash_file *)f;

	return c->real->pMethods->xRead(c->real, buf, n, off);
}

static int cf_write(sqlite3_file *f, const void *buf, int n, sqlite3_int64 off)
{
	crash_file *c = (crash_file *)f;
	unsigned char *copy;

	/* Temporary files (no name) are not part of the database. */
	if (c->id < 0)
		return c->real->pMethods->xWrite(c->real, buf, n, off);
	copy = malloc((size_t)n);
	if (copy == NULL)
		return SQLITE_NOMEM;
	memcpy(copy, buf, (size_t)n);
	record((event){.kind = EV_WRITE, .file = c->id, .offset = off, .len = n, .data = copy});
	return c->real->pMethods->xWrite(c->real, buf, n, off);
}

static int cf_truncate(sqlite3_file *f, sqlite3_int64 size)
{
	crash_file *c = (crash_file *)f;

	if (c->id >= 0)
		record((event){.kind = EV_TRUNCATE, .file = c->id, .offset = size});
	return c->real->pMethods->xTruncate(c->real, size);
}

/* The sync is recorded once it has succeeded: only then may SQLite count
 * on it. */
static int cf_sync(sqlite3_file *f, int flags)
{
	crash_file *c = (crash_file *)f;
	int rc = c->real->pMethods->xSync(c->real, flags);

	if (rc == SQLITE_OK && c->id >= 0)
		record((event){.kind = EV_SYNC, .file = c->id});
	return rc;
}

static int cf_size(sqlite3_file *f, sqlite3_int64 *size)
{
	crash_file *c = (crash_file *)f;

	return c->real->pMethods->xFileSize(c->real, size);
}

static int cf_lock(sqlite3_file *f, int level)
{
	crash_file *c = (crash_file *)f;

	return c->real->pMethods->xLock(c->real, level);
}

static int cf_unlock(sqlite3_file *f, int level)
{
	crash_file *c = (crash_file *)f;

	return c->real->pMethods->xUnlock(c->real, level);
}

static int cf_check_lock(sqlite3_file *f, int *out)
{
	crash_file *c = (crash_file *)f;

	return c->real->pMethods->xCheckReservedLock(c->real, out);
}

static int cf_control(sqlite3_file *f, int op, void *arg)
{
	crash_file *c = (crash_file *)f;

	return c->real->pMethods->xFileControl(c->real, op, arg);
}

static int cf_sector(sqlite3_file *f)
{
	crash_file *c = (crash_file *)f;

	return c->real->pMethods->xSectorSize(c->real);
}

static int cf_device(sqlite3_file *f)
{
	crash_file *c = (crash_file *)f;

	return c->real->pMethods->xDeviceCharacteristics(c->real);
}

static int cf_shm_map(sqlite3_file *f, int page, int size, int extend, void volatile **out)
{
	crash_file *c = (crash_file *)f;

	return c->real->pMethods->xShmMap(c->real, page, size, extend, out);
}

static int cf_shm_lock(sqlite3_file *f, int offset, int n, int flags)
{
	crash_file *c = (crash_file *)f;

	return c->real->pMethods->xShmLock(c->real, offset, n, flags);
}

static void cf_shm_barrier(sqlite3_file *f)
{
	crash_file *c = (crash_file *)f;

	c->real->pMethods->xShmBarrier(c->real);
}

static int cf_shm_unmap(sqlite3_file *f, int delete_flag)
{
	crash_file *c = (crash_file *)f;

	return c->real->pMethods->xShmUnmap(c->real, delete_flag);
}

/* Version 2 methods: no xFetch, so SQLite never reads through a memory map
 * that would bypass the recording. */
static const sqlite3_io_methods crash_methods = {
	.iVersion = 2,
	.xClose = cf_close,
	.xRead = cf_read,
	.xWrite = cf_write,
	.xTruncate = cf_truncate,
	.xSync = cf_sync,
	.xFileSize = cf_size,
	.xLock = cf_lock,
	.xUnlock = cf_unlock,
	.xCheckReservedLock = cf_check_lock,
	.xFileControl = cf_control,
	.xSectorSize = cf_sector,
	.xDeviceCharacteristics = cf_device,
	.xShmMap = cf_shm_map,
	.xShmLock = cf_shm_lock,
	.xShmBarrier = cf_shm_barrier,
	.xShmUnmap = cf_shm_unmap,
};

static int cv_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *out_flags)
{
	crash_file *c = (crash_file *)f;
	int rc;

	(void)vfs;
	c->real = (sqlite3_file *)&c[1];
	c->id = name ? file_id(name) : -1;
	rc = real_vfs->xOpen(real_vfs, name, c->real, flags, out_flags);
	/* A failed open leaves no methods: SQLite then closes nothing. */
	c->base.pMethods = rc == SQLITE_OK && c->real->pMethods ? &crash_methods : NULL;
	return rc;
}

static int cv_delete(sqlite3_vfs *vfs, const char *name, int sync_dir)
{
	int rc = real_vfs->xDelete(real_vfs, name, sync_dir);

	(void)vfs;
	if (rc == SQLITE_OK)
		record((event){.kind = EV_DELETE, .file = file_id(name)});
	return rc;
}

static int cv_access(sqlite3_vfs *vfs, const char *name, int flags, int *out)
{
	(void)vfs;
	return real_vfs->xAccess(real_vfs, name, flags, out);
}

static int cv_full_path(sqlite3_vfs *vfs, const char *name, int n, char *out)
{
	(void)vfs;
	return real_vfs->xFullPathname(real_vfs, name, n, out);
}

static void *cv_dl_open(sqlite3_vfs *vfs, const char *name)
{
	(void)vfs;
	return real_vfs->xDlOpen(real_vfs, name);
}

static void cv_dl_error(sqlite3_vfs *vfs, int n, char *out)
{
	(void)vfs;
	real_vfs->xDlError(real_vfs, n, out);
}

static void (*cv_dl_sym(sqlite3_vfs *vfs, void *h, const char *sym))(void)
{
	(void)vfs;
	return real_vfs->xDlSym(real_vfs, h, sym);
}

static void cv_dl_close(sqlite3_vfs *vfs, void *h)
{
	(void)vfs;
	real_vfs->xDlClose(real_vfs, h);
}

static int cv_randomness(sqlite3_vfs *vfs, int n, char *out)
{
	(void)vfs;
	return real_vfs->xRandomness(real_vfs, n, out);
}

static int cv_sleep(sqlite3_vfs *vfs, int us)
{
	(void)vfs;
	return real_vfs->xSleep(real_vfs, us);
}

static int cv_time(sqlite3_vfs *vfs, double *out)
{
	(void)vfs;
	return real_vfs->xCurrentTime(real_vfs, out);
}

static int cv_last_error(sqlite3_vfs *vfs, int n, char *out)
{
	(void)vfs;
	return real_vfs->xGetLastError(real_vfs, n, out);
}

static int cv_time64(sqlite3_vfs *vfs, sqlite3_int64 *out)
{
	(void)vfs;
	return real_vfs->xCurrentTimeInt64(real_vfs, out);
}

static sqlite3_vfs crash_vfs = {
	.iVersion = 2,
	.mxPathname = 0, /* set from the real VFS */
	.zName = CRASH_VFS,
	.xOpen = cv_open,
	.xDelete = cv_delete,
	.xAccess = cv_access,
	.xFullPathname = cv_full_path,
	.xDlOpen = cv_dl_open,
	.xDlError = cv_dl_error,
	.xDlSym = cv_dl_sym,
	.xDlClose = cv_dl_close,
	.xRandomness = cv_randomness,
	.xSleep = cv_sleep,
	.xCurrentTime = cv_time,
	.xGetLastError = cv_last_error,
	.xCurrentTimeInt64 = cv_time64,
};

static void register_crash_vfs(void)
{
	if (real_vfs != NULL)
		return;
	real_vfs = sqlite3_vfs_find(NULL);
	assert_non_null(real_vfs);
	assert_true(real_vfs->iVersion >= 2);
	crash_vfs.szOsFile = (int)sizeof(crash_file) + real_vfs->szOsFile;
	crash_vfs.mxPathname = real_vfs->mxPathname;
	assert_int_equal(sqlite3_vfs_register(&crash_vfs, 0), SQLITE_OK);
}

/* ---- the workload ------------------------------------------------------- */

/* One store call: each change is (key, new JSON or NULL = delete). */
typedef struct {
	int nchanges;
	int key[3];
	char *value[3];
	int batch; /* put_batch (all-or-nothing) */
	int checkpoint; /* a WAL checkpoint after the call (not an op itself) */
} op;

static const char *const keys[NKEYS] = {"p::a", "p::b", "p::c/d", "p::e", "q::f", "q::g"};

/* A value of varying size: some fit a page, some spill into overflow
 * pages, so commits write one frame or several. */
static char *make_value(int opno, int change)
{
	size_t pad = (size_t)((opno * 977 + change * 131) % 5000);
	char *v = malloc(pad + 64);

	assert_non_null(v);
	int n = snprintf(v, 64, "{\"op\":%d,\"change\":%d,\"pad\":\"", opno, change);
	memset(v + n, 'a' + opno % 26, pad);
	strcpy(v + n + pad, "\"}");
	return v;
}

static int checkpoint(sqlite3 *db, void *ctx)
{
	const char *sql = ctx;

	return sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : FAUCET_ERROR;
}

/* Build the workload: puts, deletes, batches, compare-and-puts over a few
 * keys, with checkpoints (which copy the WAL into the database and later
 * restart the WAL) in between. */
static op *plan_workload(int *count)
{
	enum { N = 36 };
	op *ops = calloc(N, sizeof(*ops));

	assert_non_null(ops);
	for (int i = 0; i < N; i++) {
		op *o = &ops[i];

		o->nchanges = 1;
		o->key[0] = (i * 5) % NKEYS;
		if (i % 7 == 3) {
			o->value[0] = NULL; /* delete */
		} else if (i % 5 == 2) {
			o->batch = 1;
			o->nchanges = 3;
			for (int c = 0; c < 3; c++) {
				o->key[c] = (i + c * 2) % NKEYS;
				o->value[c] = make_value(i, c);
			}
		} else {
			o->value[0] = make_value(i, 0);
		}
		o->checkpoint = i % 9 == 8;
	}
	*count = N;
	return ops;
}

static void free_workload(op *ops, int count)
{
	for (int i = 0; i < count; i++)
		for (int c = 0; c < ops[i].nchanges; c++)
			free(ops[i].value[c]);
	free(ops);
}

/* The model of what the store holds: each key's value or NULL. */
static void apply_op(const op *o, const char **model)
{
	for (int c = 0; c < o->nchanges; c++)
		model[o->key[c]] = o->value[c];
}

/* Run op i on the store, marking its start and its acknowledgement.
 * Even-numbered single puts use compare-and-put against the current value
 * (which must hold), the others plain put/delete/put_batch. */
static void run_op(faucet_store *s, faucet_sqlite_store *h, const op *ops, int i,
		   const char **model)
{
	const op *o = &ops[i];
	faucet_value *v[3] = {NULL, NULL, NULL}, *expected = NULL;
	int rc, written = 0;

	for (int c = 0; c < o->nchanges; c++)
		if (o->value[c] != NULL)
			v[c] = tu_v(o->value[c]);
	if (!o->batch && o->value[0] != NULL && i % 2 == 0 && model[o->key[0]] != NULL)
		expected = tu_v(model[o->key[0]]);
	record((event){.kind = EV_BEGIN, .op = i});
	if (o->batch) {
		faucet_entry e[3];
		for (int c = 0; c < o->nchanges; c++)
			e[c] = (faucet_entry){keys[o->key[c]], v[c]};
		rc = faucet_store_put_batch(s, e, (size_t)o->nchanges);
	} else if (o->value[0] == NULL) {
		rc = faucet_store_delete(s, keys[o->key[0]]);
	} else if (expected != NULL) {
		rc = faucet_store_compare_and_put(s, keys[o->key[0]], expected, v[0], &written);
		if (rc == 0 && !written)
			fail_msg("op %d: compare-and-put against the current value did not write", i);
	} else {
		rc = faucet_store_put(s, keys[o->key[0]], v[0]);
	}
	if (rc != 0)
		fail_msg("op %d failed: %s", i, faucet_error_last()->message);
	record((event){.kind = EV_ACK, .op = i});
	apply_op(o, model);
	if (o->checkpoint)
		assert_int_equal(faucet__sqlite_with_connection(
					 h, checkpoint,
					 (void *)(i % 2 ? "PRAGMA wal_checkpoint(TRUNCATE)"
							: "PRAGMA wal_checkpoint(PASSIVE)")),
				 0);
	for (int c = 0; c < 3; c++)
		faucet_value_free(v[c]);
	faucet_value_free(expected);
}

/* ---- rebuilding the disk at a crash point ------------------------------- */

typedef struct {
	unsigned char *bytes;
	size_t size, cap;
	int exists;
} image_file;

static void img_resize(image_file *f, size_t size)
{
	if (size > f->cap) {
		f->cap = size * 2;
		f->bytes = realloc(f->bytes, f->cap);
		assert_non_null(f->bytes);
	}
	if (size > f->size)
		memset(f->bytes + f->size, 0, size - f->size);
	f->size = size;
}

/* Apply a write or truncate to a file image; a torn write keeps only its
 * first half (whole 512-byte sectors when it spans several). */
static void img_apply(image_file *f, const event *ev, int torn)
{
	size_t len, end;

	f->exists = 1;
	if (ev->kind == EV_TRUNCATE) {
		img_resize(f, (size_t)ev->offset);
		return;
	}
	len = (size_t)ev->len;
	if (torn)
		len = len > 1024 ? len / 2 / 512 * 512 : len / 2;
	end = (size_t)ev->offset + len;
	if (end > f->size)
		img_resize(f, end);
	memcpy(f->bytes + ev->offset, ev->data, len);
}

/* The disk just after events[0..upto): per file, what was synced, plus the
 * unsynced writes and truncates in the order they were issued. */
typedef struct {
	image_file durable[MAX_FILES];
	size_t *pending; /* event indices */
	size_t npending;
} disk;

static void disk_replay(disk *d, size_t upto)
{
	d->pending = calloc(rec.count + 1, sizeof(*d->pending));
	assert_non_null(d->pending);
	for (size_t i = 0; i < upto; i++) {
		const event *ev = &rec.events[i];
		size_t kept = 0;

		switch (ev->kind) {
		case EV_WRITE:
		case EV_TRUNCATE:
			d->pending[d->npending++] = i;
			break;
		case EV_SYNC:
		case EV_DELETE:
			/* A sync makes the file's pending changes durable; a delete
			 * drops them with the file. */
			for (size_t j = 0; j < d->npending; j++) {
				const event *p = &rec.events[d->pending[j]];
				if (p->file != ev->file)
					d->pending[kept++] = d->pending[j];
				else if (ev->kind == EV_SYNC)
					img_apply(&d->durable[p->file], p, 0);
			}
			d->npending = kept;
			if (ev->kind == EV_DELETE) {
				d->durable[ev->file].exists = 0;
				d->durable[ev->file].size = 0;
			}
			break;
		default:
			break;
		}
	}
}

static void disk_free(disk *d)
{
	for (int i = 0; i < MAX_FILES; i++)
		free(d->durable[i].bytes);
	free(d->pending);
}

/* Write the post-crash image into dir: the durable state, then the first
 * `applied` pending changes, then (torn) half of the next one. */
static void write_image(const disk *d, const char *dir, size_t applied, int torn)
{
	image_file files[MAX_FILES];

	for (int i = 0; i < rec.nfiles; i++) {
		files[i] = (image_file){NULL, 0, 0, d->durable[i].exists};
		img_resize(&files[i], d->durable[i].size);
		if (d->durable[i].size)
			memcpy(files[i].bytes, d->durable[i].bytes, d->durable[i].size);
	}
	for (size_t j = 0; j < applied + (torn ? 1 : 0); j++) {
		const event *ev = &rec.events[d->pending[j]];
		img_apply(&files[ev->file], ev, j == applied);
	}
	for (int i = 0; i < rec.nfiles; i++) {
		size_t n = strlen(rec.files[i]);
		/* The shared-memory index is rebuilt from the WAL after a reboot. */
		if (files[i].exists && !(n > 4 && strcmp(rec.files[i] + n - 4, "-shm") == 0)) {
			char *path = tu_join(dir, rec.files[i]);
			tu_write_file(path, files[i].bytes ? (const void *)files[i].bytes : "",
				      files[i].size);
			free(path);
		}
		free(files[i].bytes);
	}
}

static void empty_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	assert_non_null(d);
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		char *path = tu_join(dir, e->d_name);
		assert_int_equal(unlink(path), 0);
		free(path);
	}
	closedir(d);
}

/* ---- checking one image ------------------------------------------------- */

typedef struct {
	const char *acked[NKEYS]; /* the model after every acknowledged op */
	const op *in_flight;      /* begun, not acknowledged (or NULL) */
	int in_flight_no;
} expectation;

static int same_json(const faucet_value *got, const char *want)
{
	faucet_value *w;
	int eq;

	if (got == NULL || want == NULL)
		return got == NULL && want == NULL;
	w = tu_v(want);
	eq = faucet_value_equal(got, w);
	faucet_value_free(w);
	return eq;
}

/* Open the store on the image as after a reboot and compare with what the
 * crash point allows. */
static void check_image(const char *db, const expectation *x, const char *what)
{
	faucet_store *s = NULL;
	faucet_value *got[NKEYS] = {NULL};
	faucet_strarray listed = {0};
	int state_new = -1, present = 0;

	assert_int_equal(faucet__store_open_sqlite_vfs(&s, db, NULL, NULL), 0);
	for (int k = 0; k < NKEYS; k++) {
		if (faucet_store_get(s, keys[k], &got[k]) != 0)
			fail_msg("%s: get %s: %s", what, keys[k], faucet_error_last()->message);
		present += got[k] != NULL;
	}
	for (int k = 0; k < NKEYS; k++) {
		int in_op = -1;
		if (x->in_flight != NULL)
			for (int c = 0; c < x->in_flight->nchanges; c++)
				if (x->in_flight->key[c] == k)
					in_op = c;
		if (in_op < 0) {
			if (!same_json(got[k], x->acked[k]))
				fail_msg("%s: %s lost its acknowledged value (has %s, want %.40s)",
					 what, keys[k], got[k] ? faucet_value_json(got[k]) : "nothing",
					 x->acked[k] ? x->acked[k] : "nothing");
			continue;
		}
		/* In flight: old or new, and the same choice for every key of the
		 * operation (a batch is all-or-nothing). */
		int is_new = same_json(got[k], x->in_flight->value[in_op]);
		int is_old = same_json(got[k], x->acked[k]);
		if (!is_new && !is_old)
			fail_msg("%s: %s holds neither its old nor its new value (op %d)", what,
				 keys[k], x->in_flight_no);
		if (!(is_new && is_old)) {
			if (state_new >= 0 && state_new != is_new)
				fail_msg("%s: op %d is half applied", what, x->in_flight_no);
			state_new = is_new;
		}
	}
	if (faucet_store_list(s, "", &listed) != 0)
		fail_msg("%s: list: %s", what, faucet_error_last()->message);
	assert_int_equal(listed.count, (size_t)present);
	for (size_t i = 0; i < listed.count; i++) {
		int k;
		for (k = 0; k < NKEYS && strcmp(keys[k], listed.strings[i]) != 0; k++)
			;
		if (k == NKEYS || got[k] == NULL)
			fail_msg("%s: list names %s, which get does not find", what,
				 listed.strings[i]);
	}
	faucet_strarray_dispose(&listed);
	for (int k = 0; k < NKEYS; k++)
		faucet_value_free(got[k]);
	faucet_store_free(s);
}

/* A private directory for the images: on tmpfs when there is one, since
 * reopening thousands of images syncs a lot and none of it needs a disk. */
static char *image_dir(void)
{
	char tmpl[] = "/dev/shm/faucet-crash-XXXXXX";

	if (access("/dev/shm", W_OK) == 0 && mkdtemp(tmpl) != NULL)
		return strdup(tmpl);
	return tu_tempdir();
}

/* The images' directory, removed by the teardown even when a check failed
 * (it may be on /dev/shm, outside the fixture's directory). */
static char *images;

static int remove_images(void **state)
{
	if (images != NULL) {
		tu_rmrf(images);
		free(images);
		images = NULL;
	}
	return tu_dir_teardown(state);
}

static void acknowledged_writes_survive_every_power_cut(void **state)
{
	tu_dir_fixture *fx = *state;
	char *live = tu_join(fx->dir, "state.db"), *img_db;
	faucet_sqlite_store *h = NULL;
	faucet_store *s = NULL;
	const char *model[NKEYS] = {NULL};
	expectation x = {{NULL}, NULL, -1};
	size_t points = 0, covered = 0, torn = 0, max_pending = 0;
	int nops;
	op *ops = plan_workload(&nops);

	images = image_dir();
	assert_non_null(images);
	img_db = tu_join(images, "state.db");
	register_crash_vfs();
	assert_int_equal(faucet__store_open_sqlite_vfs(&s, live, CRASH_VFS, &h), 0);
	for (int i = 0; i < nops; i++)
		run_op(s, h, ops, i, model);
	faucet_store_free(s);

	/* Crash after each recorded event (a point just after a "begin" mark
	 * is the point before it with a looser expectation: skipped). */
	for (size_t e = 0; e <= rec.count; e++) {
		disk d = {0};
		char what[96];

		if (e > 0 && rec.events[e - 1].kind == EV_BEGIN) {
			x.in_flight = &ops[rec.events[e - 1].op];
			x.in_flight_no = rec.events[e - 1].op;
			continue;
		}
		if (e > 0 && rec.events[e - 1].kind == EV_ACK) {
			apply_op(x.in_flight, x.acked);
			x.in_flight = NULL;
		}
		points++;
		disk_replay(&d, e);
		if (d.npending > max_pending)
			max_pending = d.npending;
		for (size_t applied = 0; applied <= d.npending; applied++) {
			for (int t = 0; t < 2; t++) {
				if (t && (applied == d.npending ||
					  rec.events[d.pending[applied]].kind != EV_WRITE))
					continue;
				(void)snprintf(what, sizeof(what),
					       "crash after event %zu, %zu of %zu unsynced writes%s", e,
					       applied, d.npending, t ? " + a torn one" : "");
				empty_dir(images);
				write_image(&d, images, applied, t);
				check_image(img_db, &x, what);
				covered++;
				torn += (size_t)t;
			}
		}
		disk_free(&d);
	}
	printf("sqlite crash test: %d operations, %zu recorded events, %zu crash points, "
	       "%zu post-crash images checked (%zu with a torn write, at most %zu unsynced "
	       "writes at once)\n",
	       nops, rec.count, points, covered, torn, max_pending);
	assert_true(covered > (size_t)nops);

	forget_recording();
	free_workload(ops, nops);
	free(img_db);
	free(live);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(acknowledged_writes_survive_every_power_cut,
						tu_dir_setup, remove_images),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
