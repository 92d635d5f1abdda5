/*
 * lockers.c - holding a store's write lock from the test, as another writer
 * would, for the contract suite's "busy" test (see contract_locker).
 *
 * Each locker also shortens the library's wait for that lock through its
 * test hook, so the blocked writer gives up in milliseconds instead of the
 * store's own ten seconds; release restores the default.
 */
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "testutil.h"
#include "contract.h"
#include "stores/file_internal.h"
#include "stores/file_names.h"
#include "stores/sqlite_internal.h"

#define SHORT_WAIT_MS 50

/* The file store: an exclusive flock on "{root}/{stem}.json.lock", the lock
 * compare-and-put and delete take.  A lock on another open file description
 * conflicts with the store's as another process's would. */
static void file_hold(const char *url, const char *key, void **token)
{
	char stem[FILE_STEM_MAX + 1], path[4096];
	const char *root = url + strlen("file:");
	int *fd = malloc(sizeof(*fd));

	assert_non_null(fd);
	(void)faucet_file__stem(key, stem);
	assert_true(snprintf(path, sizeof(path), "%s/%s.json.lock", root, stem) <
		    (int)sizeof(path));
	*fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	assert_true(*fd >= 0);
	assert_int_equal(flock(*fd, LOCK_EX), 0);
	faucet_file__set_lock_wait_ms(SHORT_WAIT_MS);
	*token = fd;
}

static void file_release(void *token)
{
	int *fd = token;

	faucet_file__set_lock_wait_ms(0);
	assert_int_equal(close(*fd), 0);
	free(fd);
}

const contract_locker contract_file_locker = {file_hold, file_release};

/* SQLite: an exclusive transaction on a connection of our own, which keeps
 * every other writer out (the key does not matter: SQLite locks the
 * database). */
static void sqlite_hold(const char *url, const char *key, void **token)
{
	sqlite3 *db = NULL;

	(void)key;
	assert_int_equal(sqlite3_open(url + strlen("sqlite:"), &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "BEGIN EXCLUSIVE", NULL, NULL, NULL), SQLITE_OK);
	faucet__sqlite_set_busy_timeout_ms(SHORT_WAIT_MS);
	*token = db;
}

static void sqlite_release(void *token)
{
	sqlite3 *db = token;

	faucet__sqlite_set_busy_timeout_ms(0);
	assert_int_equal(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_close(db), SQLITE_OK);
}

const contract_locker contract_sqlite_locker = {sqlite_hold, sqlite_release};
