/*
 * fuzz_file_store.c - the file store reading a state file whose bytes are
 * the fuzzer's input (a torn, corrupted, foreign or tampered file on disk).
 *
 * The input is written as the file of one key ("orders::default") in a
 * private temp directory, then read through two stores on that directory:
 * one plaintext, one with the keyring of fuzz_envelope.c (when the file
 * store of this build can encrypt).  Properties:
 *   - get never crashes or leaks, and never reports "no bookmark" for a
 *     file that exists: it returns a value or a typed error with a message;
 *   - plaintext input: get succeeds exactly when the bytes are a value
 *     faucet_value_parse accepts, and returns that value with identical
 *     text (both stores; plaintext stays readable under encryption);
 *   - sealed input ("FCT1..."): the plaintext store refuses it with
 *     FAUCET_ECRYPTO; the encrypted store succeeds exactly when the
 *     envelope opens under its keyring and the plaintext is a value, and
 *     returns that value.
 * The directory is removed when the program exits normally.
 */
#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <faucet/store.h>
#include <faucet/value.h>

#include "crypto/envelope.h"
#include "fuzz.h"

#define WRITE_KEY "fuzz-write-key"
#define PREVIOUS_KEY "faucet-test-key"
#define STATE_KEY "orders::default"
#define STATE_FILE "orders%3A%3Adefault.json"

static char dir[4096];
static char file[4200];
static faucet_store *plain_store;
static faucet_store *sealed_store;
static faucet_keyring *ring;

static void cleanup(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	faucet_store_free(plain_store);
	faucet_store_free(sealed_store);
	faucet__keyring_free(ring);
	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			(void)unlinkat(dirfd(d), e->d_name, 0);
	}
	(void)closedir(d);
	(void)rmdir(dir);
}

static void setup(void)
{
	const char *tmp = getenv("TMPDIR");
	const char *previous[1] = {PREVIOUS_KEY};
	faucet_encryption_options enc = {WRITE_KEY, previous, 1};
	faucet_file_options with_key = {.version = FAUCET_FILE_OPTIONS_VERSION, .encryption = &enc};

	if (plain_store != NULL)
		return;
	snprintf(dir, sizeof(dir), "%s/faucet-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	FUZZ_CHECK(mkdtemp(dir) != NULL, "cannot create a temp directory under %s", dir);
	snprintf(file, sizeof(file), "%s/%s", dir, STATE_FILE);
	FUZZ_CHECK(faucet_store_open_file(&plain_store, dir, NULL) == 0, "open: %s",
		   faucet_error_last()->message);
	/* A build whose file store cannot encrypt fuzzes the plaintext store only. */
	if (faucet_store_open_file(&sealed_store, dir, &with_key) != 0)
		fprintf(stderr, "fuzz_file_store: no encrypted store (%s)\n",
			faucet_error_last()->message);
	FUZZ_CHECK(faucet__keyring_new(&ring, WRITE_KEY, previous, 1) == 0, "keyring: %s",
		   faucet_error_last()->message);
	(void)atexit(cleanup);
}

static void write_state_file(const uint8_t *data, size_t size)
{
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	size_t done = 0;

	FUZZ_CHECK(fd >= 0, "cannot create %s", file);
	while (done < size) {
		ssize_t n = write(fd, data + done, size - done);
		FUZZ_CHECK(n > 0, "cannot write %s", file);
		done += (size_t)n;
	}
	FUZZ_CHECK(close(fd) == 0, "cannot close %s", file);
}

/* What get must return for these bytes as plaintext: a value, or NULL when
 * they are not one. */
static faucet_value *expected_plain(const void *bytes, size_t len)
{
	faucet_value *v = NULL;

	if (faucet_value_parse(&v, bytes, len) != 0)
		return NULL;
	return v;
}

/* The value a sealed input must open to under the keyring, or NULL;
 * *opened says whether the envelope itself opened. */
static faucet_value *expected_sealed(const uint8_t *data, size_t size, int *opened)
{
	unsigned char *plain = NULL;
	size_t plain_len = 0;
	faucet_value *v;

	*opened = faucet__unseal(ring, STATE_KEY, file, data, size, &plain, &plain_len) == 0;
	if (!*opened)
		return NULL;
	v = expected_plain(plain, plain_len);
	free(plain);
	return v;
}

/* want: the value get must return, or NULL when it must fail; crypto: the
 * failure must be FAUCET_ECRYPTO (a sealed file that does not open). */
static void check_get(faucet_store *s, const char *which, const faucet_value *want, int crypto)
{
	faucet_value *got = NULL;
	int rc = faucet_store_get(s, STATE_KEY, &got);

	if (rc != 0) {
		FUZZ_CHECK(got == NULL, "%s store: failed get left a value behind", which);
		FUZZ_CHECK(rc == FAUCET_ENOMEM || want == NULL,
			   "%s store refused a readable file (%d): %s", which, rc,
			   faucet_error_last()->message);
		FUZZ_CHECK(rc == FAUCET_ERROR || rc == FAUCET_EINVALID || rc == FAUCET_ECRYPTO ||
				   rc == FAUCET_EIO || rc == FAUCET_ENOMEM,
			   "%s store: unexpected code %d", which, rc);
		FUZZ_CHECK(!crypto || rc == FAUCET_ECRYPTO || rc == FAUCET_ENOMEM,
			   "%s store: sealed file refused with %d, not ECRYPTO", which, rc);
		FUZZ_CHECK(rc == FAUCET_ENOMEM || strstr(faucet_error_last()->message, STATE_FILE),
			   "%s store: message does not name the file: %s", which,
			   faucet_error_last()->message);
		return;
	}
	FUZZ_CHECK(got != NULL, "%s store reported an existing file as absent", which);
	FUZZ_CHECK(want != NULL, "%s store accepted a file that holds no value: %.200s", which,
		   faucet_value_json(got));
	FUZZ_CHECK(faucet_value_equal(got, want) &&
			   strcmp(faucet_value_json(got), faucet_value_json(want)) == 0,
		   "%s store read %.200s, the file holds %.200s", which, faucet_value_json(got),
		   faucet_value_json(want));
	faucet_value_free(got);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int sealed = faucet__is_sealed(data, size), opened = 0;
	faucet_value *want_plain = NULL, *want_sealed = NULL;

	setup();
	write_state_file(data, size);
	if (sealed)
		want_sealed = expected_sealed(data, size, &opened);
	else
		want_plain = expected_plain(data, size);
	check_get(plain_store, "plaintext", want_plain, sealed);
	if (sealed_store != NULL)
		check_get(sealed_store, "encrypted", sealed ? want_sealed : want_plain,
			  sealed && !opened);
	faucet_value_free(want_plain);
	faucet_value_free(want_sealed);
	return 0;
}
