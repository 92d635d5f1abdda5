/*
 * fuzz_config.c - the `faucet` command's pipeline YAML loader
 * (src/cli/config.c) on arbitrary files.
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
 *     within their documented ranges.
 */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "cli/config.h"
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

static void check_loaded(const cli_config *c)
{
	FUZZ_CHECK(c->path != NULL && c->path[0] == '/', "config path is not absolute");
	FUZZ_CHECK(c->backfill_concurrency >= 0, "negative concurrency %d",
		   c->backfill_concurrency);
	FUZZ_CHECK(c->state_max_connections >= 0, "negative max_connections %d",
		   c->state_max_connections);
	FUZZ_CHECK(c->state_ensure_table >= -1 && c->state_ensure_table <= 1,
		   "ensure_table is %d", c->state_ensure_table);
	if (c->has_encryption) {
		FUZZ_CHECK(c->has_state, "encryption outside a state block");
		FUZZ_CHECK(c->encryption_key != NULL && c->encryption_key[0] != '\0',
			   "encryption configured with an empty key");
		for (size_t i = 0; i < c->encryption_previous_keys.count; i++)
			FUZZ_CHECK(c->encryption_previous_keys.strings[i][0] != '\0',
				   "empty previous key %zu", i);
	}
	for (size_t i = 0; i < c->backfill_command.count; i++)
		FUZZ_CHECK(c->backfill_command.strings[i] != NULL, "NULL argument %zu", i);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cli_config *c = NULL;
	int rc;

	setup();
	write_input(data, size);
	rc = cli_config_load(&c, path);
	if (rc != 0) {
		FUZZ_CHECK(c == NULL, "failed load left a config behind");
		FUZZ_CHECK(rc == FAUCET_ECONFIG || rc == FAUCET_ENOMEM, "unexpected code %d", rc);
		FUZZ_CHECK(rc == FAUCET_ENOMEM || strstr(faucet_error_last()->message, path) != NULL,
			   "message does not name the file: %s", faucet_error_last()->message);
		return 0;
	}
	check_loaded(c);
	cli_config_free(c);
	return 0;
}
