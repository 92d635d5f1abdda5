/*
 * file_doctor.c - the file store's doctor probes (its check slot).
 *
 * Besides the sentinel round trip, doctor walks the root once and reports
 * what a put or get never looks at: value files it cannot open (a wrong key
 * opens nothing, so every value file is read when the store is small, the
 * first DOCTOR_READ_MAX otherwise), symlinks (never followed: a FAIL), and
 * temp files of writers that died (a WARN; with FAUCET_CHECK_REPAIR they
 * are removed).  A temp file is a dead writer's only when nobody holds its
 * flock (durable.c): age says nothing about a writer stalled on a slow
 * disk.
 *
 * Only faucet's own temp names count (faucet_file__is_temp_name): a root
 * may be any directory (`file:/tmp`), and another program's "*.tmp" is not
 * ours to remove.  Even those are removed only from a directory recognised
 * as a faucet store: one that others cannot write (faucet makes its store
 * directories 0700; a shared directory like /tmp, 1777, never is one) and
 * that holds a file only faucet writes - an owner-only value file
 * "{stem}.json" of a valid key (faucet creates them 0600 whatever the umask,
 * as the original faucet does) or the encrypted store's marker.  Otherwise
 * the orphans are reported, and the repair says why it leaves them.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"
#include "check/check_internal.h"
#include "store/sentinel.h"
#include "durable.h"
#include "file_internal.h"
#include "file_store.h"
#include "crypto/libcrypto_load.h"

#define DOCTOR_READ_MAX 1000

typedef struct {
	size_t values;                /* value files read */
	size_t unreadable;            /* ... of which failed to open or parse */
	char *first_error;            /* the first one's message */
	int first_code;
	size_t symlinks;
	char first_link[FILE_NAME_CAP];
	size_t orphans;               /* temp files no writer holds */
	long long orphan_bytes, oldest;
	int repair;
	size_t removed;
	faucet_strarray temps;        /* faucet temp names seen, looked at after the walk */
	int store_file;               /* a file only faucet writes was seen */
	char not_store[160];          /* why the root is not recognised ("" = it is) */
} doctor_walk;

static void walk_value(file_store *fs, int dfd, const char *name, doctor_walk *w)
{
	char key[FILE_KEY_CAP];
	faucet_value *v = NULL;
	int rc;

	if (w->values >= DOCTOR_READ_MAX)
		return;
	/* Without libcrypto a hashed name cannot be checked: unreadable, not
	 * silently left out. */
	if (strchr(name, '~') != NULL && (rc = faucet__libcrypto_load()) != 0) {
		w->values++;
	} else if (faucet_file__classify_entry(dfd, name, strlen(name), key, NULL) == 0) {
		return;
	} else {
		w->values++;
		rc = faucet_file__read_entry(fs, key, name, NULL, &v);
	}
	faucet_value_free(v);
	if (rc == 0)
		return;
	if (w->unreadable++ == 0) {
		w->first_code = rc;
		w->first_error = faucet__strdup(faucet_error_last()->message);
	}
}

static int walk_temp(int dfd, const char *name, int remove, doctor_walk *w)
{
	long long bytes = 0, mtime = 0;
	int rc = faucet__temp_is_orphan(dfd, name, remove, &bytes, &mtime);

	if (rc <= 0)
		return rc;
	if (w->orphans == 0 || mtime < w->oldest)
		w->oldest = mtime;
	w->orphans++;
	w->orphan_bytes += bytes;
	w->removed += (size_t)remove;
	return 0;
}

/* Whether `name` is a file only faucet writes: the encrypted store's
 * marker, or an owner-only regular "{stem}.json" whose stem is a key's. */
static int is_store_file(int dfd, const char *name, size_t len)
{
	char key[FILE_KEY_CAP];
	struct stat st;

	if (strcmp(name, STORE_MARKER) != 0) {
		if (len <= 5 || name[0] == '.' || strcmp(name + len - 5, ".json") != 0)
			return 0;
		if (faucet_file__stem_is_hashed(name, len - 5)
			    ? !faucet_file__hashed_stem_ok(name, len - 5)
			    : faucet_file__decode_stem(name, len - 5, key) == 0)
			return 0;
	}
	return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	       (st.st_mode & 077) == 0;
}

/* Sets w->not_store to why the root is not recognised as a faucet store,
 * or leaves it empty. */
static int recognise_store(const file_store *fs, int dfd, doctor_walk *w)
{
	struct stat st;

	if (fstat(dfd, &st) != 0)
		return faucet__error_os(FAUCET_EIO, errno, "cannot stat state dir %s", fs->root);
	if ((st.st_mode & S_IWOTH) != 0)
		(void)snprintf(w->not_store, sizeof(w->not_store),
			       "every user may write to it (mode %04o), which a faucet store "
			       "never allows",
			       (unsigned)(st.st_mode & 07777));
	else if (!w->store_file)
		(void)snprintf(w->not_store, sizeof(w->not_store),
			       "it holds no file faucet writes (an owner-only {stem}.json value "
			       "file or the %s marker)",
			       STORE_MARKER);
	return 0;
}

static int walk_root(file_store *fs, int dfd, doctor_walk *w)
{
	struct dirent *e;
	DIR *d;
	int rc = faucet_file__open_dir_stream(fs, dfd, &d);

	while (rc == 0) {
		size_t len;

		errno = 0;
		e = readdir(d);
		if (e == NULL) {
			if (errno != 0)
				rc = faucet__error_os(FAUCET_EIO, errno, "failed to list state dir %s",
						      fs->root);
			break;
		}
		len = strlen(e->d_name);
		if (e->d_type == DT_DIR)
			continue;
		if (e->d_type == DT_LNK ||
		    (e->d_type == DT_UNKNOWN && faucet_file__entry_is_symlink(dfd, e->d_name))) {
			if (w->symlinks++ == 0)
				(void)snprintf(w->first_link, sizeof(w->first_link), "%s", e->d_name);
		} else if (faucet_file__is_temp_name(e->d_name)) {
			rc = faucet__strarray_push(&w->temps, e->d_name);
		} else {
			if (!w->store_file)
				w->store_file = is_store_file(dfd, e->d_name, len);
			walk_value(fs, dfd, e->d_name, w);
		}
	}
	(void)closedir(d);
	/* The temp files once the whole root has been seen: whether they may
	 * be removed depends on what else it holds. */
	if (rc == 0)
		rc = recognise_store(fs, dfd, w);
	for (size_t i = 0; rc == 0 && i < w->temps.count; i++)
		rc = walk_temp(dfd, w->temps.strings[i], w->repair && w->not_store[0] == '\0', w);
	return rc;
}

static int add_values_probe(faucet_check_report *r, const file_store *fs, const doctor_walk *w,
			    uint64_t elapsed)
{
	char *reason, *hint;
	int rc;

	if (w->unreadable == 0)
		return faucet_check_report_add(r, "values", FAUCET_PROBE_PASS, NULL, elapsed, NULL);
	reason = w->unreadable == 1
			 ? faucet__sprintf("%s", w->first_error ? w->first_error : "unreadable")
			 : faucet__sprintf("%s (and %zu more of %zu files read)",
					   w->first_error ? w->first_error : "unreadable",
					   w->unreadable - 1, w->values);
	hint = w->first_code == FAUCET_ECRYPTO
		       ? faucet__sprintf("give the key these files were sealed with "
					 "(--encryption-key-env, --previous-key-env)")
		       : faucet__sprintf("restore the file from a backup or remove it from %s",
					 fs->root);
	rc = reason == NULL || hint == NULL
		     ? FAUCET_ENOMEM
		     : faucet_check_report_add(r, "values", FAUCET_PROBE_FAIL, reason, elapsed, hint);
	free(reason);
	free(hint);
	return rc;
}

static int add_symlink_probe(faucet_check_report *r, const file_store *fs, const doctor_walk *w)
{
	char *reason;
	int rc;

	if (w->symlinks == 0)
		return faucet_check_report_add(r, "symlinks", FAUCET_PROBE_PASS, NULL, 0, NULL);
	reason = faucet__sprintf("%zu symbolic link%s in the store, never followed: %s/%s%s",
				 w->symlinks, w->symlinks == 1 ? "" : "s", fs->root, w->first_link,
				 w->symlinks == 1 ? "" : ", ...");
	rc = reason == NULL ? FAUCET_ENOMEM
			    : faucet_check_report_add(r, "symlinks", FAUCET_PROBE_FAIL, reason, 0,
						      "a state store holds no links: remove them");
	free(reason);
	return rc;
}

static int add_temp_probe(faucet_check_report *r, const file_store *fs, const doctor_walk *w)
{
	char when[FAUCET_UTC_TEXT_SIZE], *text, *hint;
	int removed = w->repair && w->not_store[0] == '\0';
	int rc;

	if (w->orphans == 0)
		return faucet_check_report_add(r, "temp files", FAUCET_PROBE_PASS, NULL, 0, NULL);
	if (faucet_utc_text(w->oldest, when, sizeof(when)) != 0)
		(void)snprintf(when, sizeof(when), "%lld", w->oldest);
	text = faucet__sprintf("%s %zu orphaned temp file%s (%lld bytes, oldest %s) of writers "
			       "that died%s%s%s%s",
			       removed ? "removed" : "found", w->orphans,
			       w->orphans == 1 ? "" : "s", w->orphan_bytes, when,
			       w->repair && !removed ? "; not removed: " : "",
			       w->repair && !removed ? fs->root : "",
			       w->repair && !removed ? " is not recognised as a faucet store: " : "",
			       w->repair && !removed ? w->not_store : "");
	if (w->not_store[0] == '\0')
		hint = faucet__strdup("run `faucet doctor --repair` to remove them");
	else
		hint = faucet__sprintf("--repair removes temp files only from a faucet store, and %s "
				       "is not recognised as one: %s",
				       fs->root, w->not_store);
	if (text == NULL || hint == NULL) {
		free(text);
		free(hint);
		return FAUCET_ENOMEM;
	}
	/* Removed: nothing is left to look at, so a pass that says what it did. */
	if (removed)
		rc = faucet_check_report_add(r, "temp files", FAUCET_PROBE_PASS, NULL, 0, text);
	else
		rc = faucet_check_report_add(r, "temp files", FAUCET_PROBE_WARN, text, 0, hint);
	free(text);
	free(hint);
	return rc;
}

/* The walk's probes; a root that does not exist has nothing to walk. */
static int add_walk_probes(file_store *fs, int repair, faucet_check_report *r)
{
	doctor_walk w;
	uint64_t started = faucet__now_ms();
	int dfd, rc = faucet_file__root_get(fs, 0, &dfd);

	/* No root, or one that cannot be opened: the sentinel probe has said
	 * so already. */
	if (rc != 0 || dfd < 0)
		return 0;
	memset(&w, 0, sizeof(w));
	w.repair = repair;
	rc = walk_root(fs, dfd, &w);
	faucet_strarray_dispose(&w.temps);
	if (rc == FAUCET_ENOMEM) {
		free(w.first_error);
		return rc;
	}
	if (rc != 0) {
		free(w.first_error);
		return faucet__check_report_probe(r, "values", 1, started, NULL);
	}
	rc = add_values_probe(r, fs, &w, faucet__now_ms() - started);
	if (rc == 0)
		rc = add_symlink_probe(r, fs, &w);
	if (rc == 0)
		rc = add_temp_probe(r, fs, &w);
	free(w.first_error);
	return rc;
}

int faucet_file__check(faucet_store_backend *b, const faucet_check_context *ctx,
		       faucet_check_report **out)
{
	file_store *fs = (file_store *)b;
	uint64_t started = faucet__now_ms(), elapsed;
	char *reason = NULL, *hint = NULL;
	int rc, probe_rc;

	probe_rc = faucet__sentinel_round_trip(&fs->base);
	elapsed = faucet__now_ms() - started;
	if (probe_rc != 0) {
		reason = faucet__strdup(faucet_error_last()->message);
		hint = faucet__sprintf("ensure %s exists and is writable", fs->root);
		if (reason == NULL || hint == NULL) {
			free(reason);
			free(hint);
			return FAUCET_ENOMEM;
		}
	}
	rc = faucet_check_report_new(out);
	if (rc == 0)
		rc = faucet_check_report_add(*out, "sentinel",
					     probe_rc == 0 ? FAUCET_PROBE_PASS : FAUCET_PROBE_FAIL,
					     reason, elapsed, hint);
	if (rc == 0)
		rc = add_walk_probes(fs, ctx != NULL && (ctx->flags & FAUCET_CHECK_REPAIR) != 0,
				     *out);
	if (rc != 0) {
		faucet_check_report_free(*out);
		*out = NULL;
	}
	free(reason);
	free(hint);
	return rc;
}
