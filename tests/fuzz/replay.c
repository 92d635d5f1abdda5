/*
 * replay.c - a main() that runs a fuzz target over files, for builds
 * without libFuzzer.
 *
 * Usage: fuzz_replay_<target> PATH...  Each PATH is a file or a directory
 * of files (not recursive); directory entries run in name order so a
 * failure is reproducible.  Exits non-zero when an input cannot be read
 * or when nothing at all was run: an empty or misplaced corpus must not
 * pass as "all inputs fine".  A broken property aborts inside the target.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

/* Read a whole file into a malloc'd buffer (at least one byte allocated). */
static int read_file(const char *path, uint8_t **out, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t cap = 0, n = 0;

	if (f == NULL)
		return -1;
	for (;;) {
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 4096;
			uint8_t *grown = realloc(buf, ncap);
			if (grown == NULL)
				break;
			buf = grown;
			cap = ncap;
		}
		size_t got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
	}
	if (ferror(f) || buf == NULL || n == cap) {
		/* n == cap after the loop means realloc failed mid-read */
		fclose(f);
		free(buf);
		return -1;
	}
	fclose(f);
	/* Hand the target a buffer of exactly the input's size, as libFuzzer
	 * does, so that reading one byte past the input is a sanitizer error
	 * here too rather than a read of the spare capacity. */
	*out = malloc(n ? n : 1);
	if (*out == NULL) {
		free(buf);
		return -1;
	}
	memcpy(*out, buf, n);
	free(buf);
	*len = n;
	return 0;
}

static int run_file(const char *path)
{
	uint8_t *data;
	size_t len;

	if (read_file(path, &data, &len) != 0) {
		fprintf(stderr, "replay: cannot read %s\n", path);
		return -1;
	}
	(void)LLVMFuzzerTestOneInput(data, len);
	free(data);
	return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int skip_entry(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

/* Run every regular file of dir; returns how many ran, or -1. */
static long run_dir(const char *dir)
{
	struct dirent **names;
	long ran = 0;
	int n = scandir(dir, &names, skip_entry, by_name);

	if (n < 0) {
		fprintf(stderr, "replay: cannot list %s\n", dir);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		char path[4096];
		struct stat st;
		int w = snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);

		if (ran >= 0 && w > 0 && (size_t)w < sizeof(path) && stat(path, &st) == 0 &&
		    S_ISREG(st.st_mode))
			ran = run_file(path) == 0 ? ran + 1 : -1;
		free(names[i]);
	}
	free(names);
	return ran;
}

int main(int argc, char **argv)
{
	long total = 0;

	for (int i = 1; i < argc; i++) {
		struct stat st;
		long ran;

		if (stat(argv[i], &st) != 0) {
			fprintf(stderr, "replay: no such file or directory: %s\n", argv[i]);
			return 1;
		}
		ran = S_ISDIR(st.st_mode) ? run_dir(argv[i]) : (run_file(argv[i]) == 0 ? 1 : -1);
		if (ran < 0)
			return 1;
		total += ran;
	}
	if (total == 0) {
		fprintf(stderr, "replay: no inputs found in the given paths\n");
		return 1;
	}
	printf("replay: %ld inputs, every property held\n", total);
	return 0;
}
