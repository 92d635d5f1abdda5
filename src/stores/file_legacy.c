/*
 * file_legacy.c - the file store's legacy names: files an earlier release
 * named otherwise, found and renamed to their current names, and the
 * directory walk that the listing shares with the migration.
 *
 * Releases before escaped capitals and hashed long names wrote "Users:x" as
 * "Users%3Ax.json" and long keys unhashed.  Those files are renamed to their
 * current names once per store, eagerly, rather than looked up as a fallback
 * on each read: on a case-insensitive filesystem the current name of
 * "users:x" would otherwise open the legacy file of "Users:x".
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "internal.h"
#include "sys.h"
#include "file_store.h"
#include "crypto/libcrypto_load.h"

/* If `name` is a value file, put its key in key[FILE_KEY_CAP] and return
 * the key's length (0 otherwise).  When `legacy` is not NULL it receives
 * whether the name is not the key's current one.  Hashed names are resolved
 * through their sidecar. */
size_t faucet_file__classify_entry(int dfd, const char *name, size_t name_len, char *key,
				   int *legacy)
{
	char stem[FILE_STEM_MAX + 1], side[FILE_NAME_CAP];
	size_t stem_len, key_len;

	if (legacy != NULL)
		*legacy = 0;
	if (name_len <= 5 || name[0] == '.' || memcmp(name + name_len - 5, ".json", 5) != 0)
		return 0;
	stem_len = name_len - 5;
	if (!faucet_file__stem_is_hashed(name, stem_len)) {
		key_len = faucet_file__decode_stem(name, stem_len, key);
		if (key_len == 0)
			return 0;
		/* Current names are exactly what encoding the key gives back. */
		if (legacy != NULL)
			*legacy = faucet_file__stem(key, stem) != stem_len ||
				  memcmp(stem, name, stem_len) != 0;
		return key_len;
	}
	if (stem_len > FILE_STEM_MAX)
		return 0;
	memcpy(side, name, stem_len);
	memcpy(side + stem_len, ".key", 5);
	if (faucet_file__read_small(dfd, side, key, FILE_KEY_CAP, &key_len) != 0)
		return 0;
	if (!faucet_file__key_is_valid(key, key_len))
		return 0;
	/* Only a sidecar that matches its name counts; a stray one is ignored. */
	if (faucet_file__stem(key, stem) != stem_len || memcmp(stem, name, stem_len) != 0)
		return 0;
	return key_len;
}

/* For filesystems whose readdir gives no type. */
int faucet_file__entry_is_symlink(int dfd, const char *name)
{
	struct stat st;

	return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
}

/*
 * Walk the directory once.  Keys starting with `prefix` go to `keys` (when
 * not NULL); names of legacy files go to `legacy` (when not NULL).
 * Everything that is not a value file - temp files, lock files, sidecars,
 * hidden and foreign files, directories - is skipped.
 */
int faucet_file__scan_dir(const file_store *fs, DIR *d, const char *prefix, key_list *keys,
			  faucet_strarray *legacy)
{
	size_t plen = prefix ? strlen(prefix) : 0;
	int dfd = dirfd(d), rc = 0;
	struct dirent *e;

	for (;;) {
		char key[FILE_KEY_CAP];
		size_t klen;
		int is_legacy = 0;

		errno = 0;
		e = readdir(d);
		if (e == NULL)
			break;
		/* A symlink is never a key (doc/design.md §3.3: nothing in a
		 * store follows one); doctor reports it. */
		if (e->d_type == DT_DIR || e->d_type == DT_LNK ||
		    (e->d_type == DT_UNKNOWN && faucet_file__entry_is_symlink(dfd, e->d_name)))
			continue;
		/* Only migration asks for no keys, and hashed names are current. */
		if (keys == NULL && strchr(e->d_name, '~') != NULL)
			continue;
		/* A hashed name is checked against its key's SHA-256: without
		 * libcrypto the listing fails rather than leave the key out. */
		if (strchr(e->d_name, '~') != NULL && (rc = faucet__libcrypto_load()) != 0)
			return rc;
		klen = faucet_file__classify_entry(dfd, e->d_name, strlen(e->d_name), key,
						   legacy != NULL ? &is_legacy : NULL);
		if (klen == 0)
			continue;
		if (legacy != NULL && is_legacy)
			rc = faucet__strarray_push(legacy, e->d_name);
		if (rc == 0 && keys != NULL && klen >= plen && memcmp(key, prefix, plen) == 0)
			rc = faucet_file__key_list_push(keys, key, klen);
		if (rc != 0)
			return rc;
	}
	if (errno != 0)
		return faucet__error_os(FAUCET_EIO, errno, "failed to list state dir %s", fs->root);
	return 0;
}

/* Move one legacy file to its current name, or drop it when the current name
 * exists already (the current file is newer by construction). */
static int migrate_one(file_store *fs, int *dfd, const char *legacy_name)
{
	char key[FILE_KEY_CAP], stem[FILE_STEM_MAX + 1], name[FILE_NAME_CAP];
	char from[PATH_CAP], to[PATH_CAP];
	size_t len = strlen(legacy_name), stem_len = 0;
	int rc;

	if (faucet_file__decode_stem(legacy_name, len - 5, key) == 0)
		return 0;
	if ((rc = faucet_file__key_stem(key, stem, &stem_len)) != 0)
		return rc;
	if (faucet_file__stem_is_hashed(stem, stem_len)) {
		rc = faucet_file__ensure_sidecar(fs, dfd, stem, key);
		if (rc != 0)
			return rc;
	}
	faucet_file__name_from_stem(name, stem, ".json");
	/* RENAME_NOREPLACE decides "current name exists" and the move in one
	 * atomic step, so a value written meanwhile is never overwritten. */
	if (renameat2(*dfd, legacy_name, *dfd, name, RENAME_NOREPLACE) == 0 || errno == ENOENT)
		return 0;
	if (errno == EINVAL || errno == ENOSYS) {
		/* A filesystem without RENAME_NOREPLACE: check, then move. */
		struct stat st;
		if (fstatat(*dfd, name, &st, 0) == 0)
			errno = EEXIST;
		else if (errno == ENOENT &&
			 (faucet__sys()->renameat(*dfd, legacy_name, *dfd, name) == 0 || errno == ENOENT))
			return 0;
	}
	if (errno == EEXIST) {
		if (faucet__sys()->unlinkat(*dfd, legacy_name, 0) == 0 || errno == ENOENT)
			return 0;
		faucet_file__path_of(fs, legacy_name, from);
		return faucet__error_os(FAUCET_EIO, errno, "failed to remove legacy state file %s",
					from);
	}
	faucet_file__path_of(fs, legacy_name, from);
	faucet_file__path_of(fs, name, to);
	return faucet__error_os(FAUCET_EIO, errno, "failed to rename legacy state file %s to %s",
				from, to);
}

int faucet_file__migrate_names(file_store *fs, int dfd, const faucet_strarray *legacy)
{
	int rc = 0;

	/* No directory sync follows the renames: a value lives under exactly
	 * one of its two names at every moment, and both are read, so a crash
	 * that undoes a rename only brings the legacy name back, to be renamed
	 * again (and a legacy file left beside a current one loses to it).
	 * The next write of the key syncs the directory as every write does. */
	for (size_t i = 0; i < legacy->count && rc == 0; i++)
		rc = migrate_one(fs, &dfd, legacy->strings[i]);
	return rc;
}

/* A second descriptor of the root for readdir (fdopendir owns it). */
int faucet_file__open_dir_stream(const file_store *fs, int dfd, DIR **out)
{
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	*out = fd >= 0 ? fdopendir(fd) : NULL;
	if (*out == NULL) {
		int err = errno;
		if (fd >= 0)
			(void)close(fd);
		return faucet__error_os(FAUCET_EIO, err, "failed to list state dir %s", fs->root);
	}
	return 0;
}

/* Rename legacy files, the first time this store is used (see above).  A
 * failure is returned and the work tried again on the next call. */
static int migrate_once(file_store *fs)
{
	faucet_strarray legacy = {NULL, 0};
	DIR *d;
	int dfd, rc;

	if (atomic_load_explicit(&fs->migrated, memory_order_acquire))
		return 0;
	(void)pthread_mutex_lock(&fs->migrate_lock);
	rc = atomic_load(&fs->migrated) ? 0 : faucet_file__root_get(fs, 0, &dfd);
	if (rc == 0 && !atomic_load(&fs->migrated) && dfd >= 0) {
		rc = faucet_file__open_dir_stream(fs, dfd, &d);
		if (rc == 0) {
			rc = faucet_file__scan_dir(fs, d, NULL, NULL, &legacy);
			(void)closedir(d);
		}
		if (rc == 0)
			rc = faucet_file__migrate_names(fs, dfd, &legacy);
		faucet_strarray_dispose(&legacy);
	}
	if (rc == 0)
		atomic_store_explicit(&fs->migrated, 1, memory_order_release);
	(void)pthread_mutex_unlock(&fs->migrate_lock);
	return rc;
}

/*
 * Per key, not per store.  Renaming every legacy file on a store's first
 * use read and classified the whole directory before the first get or put
 * of each process: 330 ms at a million keys.  On a case-sensitive
 * filesystem a key's legacy file can only be found under one name, so each
 * operation looks there instead - a single fstatat, and only for keys whose
 * legacy name differs from the current one (keys with capitals, long
 * keys).  A listing still migrates every legacy file it walks (file_list).
 * A filesystem that ignores case keeps the eager migration: there, opening
 * "users%3Ax.json" would open the legacy "Users%3Ax.json" of another key.
 */

/* The name an earlier release gave `key` - ':' and '/' escaped, capitals
 * as they are, never hashed - into out[FILE_NAME_CAP].  0 when it is the
 * current name or too long to exist. */
static int legacy_name_of(const char *key, const char *stem, char *out)
{
	size_t n = 0;

	for (const char *p = key; *p != '\0'; p++) {
		if (n + 3 + 5 >= FILE_NAME_CAP)
			return 0;
		if (*p == ':' || *p == '/') {
			out[n++] = '%';
			out[n++] = *p == ':' ? '3' : '2';
			out[n++] = *p == ':' ? 'A' : 'F';
		} else {
			out[n++] = *p;
		}
	}
	out[n] = '\0';
	if (strcmp(out, stem) == 0)
		return 0;
	memcpy(out + n, ".json", 6);
	return 1;
}

/* Whether the root's filesystem ignores case: FAT, exFAT, NTFS, SMB/CIFS
 * and HFS+ by their type, ext4/f2fs directories by their casefold flag.
 * Decided once per store. */
static int root_folds_case(file_store *fs, int dfd)
{
	static const long folding[] = {0x4d44 /* msdos */,      0x2011BAB0 /* exfat */,
				       0x5346544e /* ntfs */,  0x7366746e /* ntfs3 */,
				       (long)0xFF534D42 /* cifs */, (long)0xFE534D42 /* smb2 */,
				       0x517B /* smb */,       0x482b /* hfs+ */};
	int known = atomic_load(&fs->fold_case), folds = 0, flags = 0;
	struct statfs sf;

	if (known >= 0)
		return known;
	if (fstatfs(dfd, &sf) == 0) {
		for (size_t i = 0; i < FAUCET_ARRAY_LEN(folding); i++)
			folds |= (long)sf.f_type == folding[i];
	}
	if (ioctl(dfd, FS_IOC_GETFLAGS, &flags) == 0 && (flags & FS_CASEFOLD_FL) != 0)
		folds = 1;
	atomic_store(&fs->fold_case, folds);
	return folds;
}

/* Before an operation on `key`: move its legacy file, if it has one, to
 * the current name (or drop it when the current one exists: that one is
 * newer).  A root that does not exist holds nothing. */
int faucet_file__settle_legacy(file_store *fs, int *dfd, const char *key)
{
	char stem[FILE_STEM_MAX + 1], legacy[FILE_NAME_CAP], path[PATH_CAP];
	struct stat st;
	int rc;

	if (*dfd < 0)
		return 0;
	if (root_folds_case(fs, *dfd))
		return migrate_once(fs);
	if ((rc = faucet_file__key_stem(key, stem, NULL)) != 0)
		return rc;
	if (!legacy_name_of(key, stem, legacy))
		return 0;
	if (fstatat(*dfd, legacy, &st, AT_SYMLINK_NOFOLLOW) != 0) {
		if (errno == ENOENT)
			return 0;
		faucet_file__path_of(fs, legacy, path);
		return faucet__error_os(FAUCET_EIO, errno, "failed to look for legacy state file %s",
					path);
	}
	if (!S_ISREG(st.st_mode))
		return 0; /* a symlink or a directory is never a key (doctor says so) */
	/* No directory sync: as in faucet_file__migrate_names(), a value is
	 * under one of its two names at every moment and both are read, so a
	 * crash that undoes the rename loses nothing; the write that follows
	 * syncs. */
	return migrate_one(fs, dfd, legacy);
}
