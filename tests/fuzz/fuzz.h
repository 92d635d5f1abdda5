/*
 * fuzz.h - what every fuzz target in tests/fuzz/ shares.
 *
 * Each target is one LLVMFuzzerTestOneInput().  Built with clang and
 * -fsanitize=fuzzer it is a libFuzzer program; built with replay.c instead
 * (the normal gcc build) it is a plain program that runs the checked-in
 * corpus once, so the seeds are exercised by every build.
 *
 * A broken property must stop the run loudly in both builds, so FUZZ_CHECK
 * prints what broke and calls abort(): libFuzzer saves the input as a crash
 * artifact, and the replay program dies, failing its ctest test.
 */
#ifndef FAUCET_FUZZ_H
#define FAUCET_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond, ...)                                                        \
	do {                                                                         \
		if (!(cond)) {                                                       \
			fprintf(stderr, "%s:%d: property violated: %s\n  ", __FILE__, \
				__LINE__, #cond);                                    \
			fprintf(stderr, __VA_ARGS__);                                \
			fputc('\n', stderr);                                         \
			abort();                                                     \
		}                                                                    \
	} while (0)

/* The input as a NUL-terminated string, cut at its first NUL byte (the
 * APIs under test take C strings).  Caller frees; NULL only when out of
 * memory, which a target treats as "nothing to test". */
static inline char *fuzz_cstring(const uint8_t *data, size_t size)
{
	size_t n = 0;
	char *s;

	while (n < size && data[n] != 0)
		n++;
	s = malloc(n + 1);
	if (s == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++)
		s[i] = (char)data[i];
	s[n] = '\0';
	return s;
}

#endif
