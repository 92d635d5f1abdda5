/*
 * fuzz_config.c - the library's pipeline YAML reader (src/config/config.c,
 * faucet/config.h), which the command and the Python package both use, on
 * arbitrary files.
 *
 * Operators point -c / FAUCET_CONFIG at files they did not always write,
 * and the loader pulls secrets out of them, so it is fuzzed like the
 * storage parsers.  The input is written to a temp file and loaded with
 * two variables set (FUZZ_SET and an empty FUZZ_EMPTY) so ${env:...}
 * substitution is reached.  Properties:
 *   - loading never crashes or leaks;
 *   - a refusal is FAUCET_ECONFIG (or ENOMEM) with a message naming the file;
 *   - an accepted file gives what config.h promises: an absolute path, a
 *     non-empty encryption key when encryption is configured, counts
 *     within their documented ranges, a NULL-terminated command.
 */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <faucet/config.h>
#include "fuzz.h"

static char path[4096];

static void cleanup(void)
{
	(void)unlink(path);
}

static void setup(void)
{
	const char *tmp = getenv("TMPDIR");
	int fd;

	if (path[0] != '\0')
		return;
	snprintf(path, sizeof(path), "%s/faucet-fuzz-config-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	fd = mkstemp(path);
	FUZZ_CHECK(fd >= 0, "cannot create %s", path);
	(void)close(fd);
	FUZZ_CHECK(setenv("FUZZ_SET", "value", 1) == 0 && setenv("FUZZ_EMPTY", "", 1) == 0,
		   "setenv failed");
	(void)atexit(cleanup);
}

static void write_input(const uint8_t *data, size_t size)
{
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	size_t done = 0;

	FUZZ_CHECK(fd >= 0, "cannot open %s", path);
	while (done < size) {
		ssize_t n = write(fd, data + done, size - done);
		FUZZ_CHECK(n > 0, "cannot write %s", path);
		done += (size_t)n;
	}
	FUZZ_CHECK(close(fd) == 0, "cannot close %s", path);
}

static void check_loaded(const faucet_config *c)
{
	const faucet_store_config *st = faucet_config_store(c);
	const faucet_config_backfill *bf = faucet_config_backfill_defaults(c);

	FUZZ_CHECK(faucet_config_path(c) != NULL && faucet_config_path(c)[0] == '/',
		   "config path is not absolute");
	FUZZ_CHECK(bf->concurrency <= 10000, "concurrency %u", bf->concurrency);
	if (st != NULL) {
		FUZZ_CHECK(st->type != NULL && st->type[0] != '\0', "a state block without a type");
		FUZZ_CHECK(st->max_connections >= 0 && st->max_connections <= 1000,
			   "max_connections %d", st->max_connections);
		FUZZ_CHECK(st->ensure_table >= -1 && st->ensure_table <= 1, "ensure_table is %d",
			   st->ensure_table);
	}
	if (st != NULL && st->encryption != NULL) {
		FUZZ_CHECK(st->encryption->key != NULL && st->encryption->key[0] != '\0',
			   "encryption configured with an empty key");
		for (size_t i = 0; i < st->encryption->previous_count; i++)
			FUZZ_CHECK(st->encryption->previous_keys[i][0] != '\0',
				   "empty previous key %zu", i);
	}
	for (size_t i = 0; i < bf->command_count; i++)
		FUZZ_CHECK(bf->command[i] != NULL, "NULL argument %zu", i);
	FUZZ_CHECK(bf->command == NULL || bf->command[bf->command_count] == NULL,
		   "the command does not end in NULL");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	faucet_config *c = NULL;
	int rc;

	setup();
	write_input(data, size);
	rc = faucet_config_load(&c, path);
	if (rc != 0) {
		FUZZ_CHECK(c == NULL, "failed load left a config behind");
		FUZZ_CHECK(rc == FAUCET_ECONFIG || rc == FAUCET_ENOMEM, "unexpected code %d", rc);
		FUZZ_CHECK(rc == FAUCET_ENOMEM || strstr(faucet_error_last()->message, path) != NULL,
			   "message does not name the file: %s", faucet_error_last()->message);
		return 0;
	}
	check_loaded(c);
	faucet_config_free(c);
	return 0;
}
