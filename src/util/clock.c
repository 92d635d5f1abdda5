/*
 * clock.c - monotonic clocks and the kernel's random bytes.
 */
#include <errno.h>
#include <stdint.h>
#include <sys/random.h>
#include <time.h>

#include "util.h"

uint64_t faucet__now_ns(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t faucet__now_ms(void)
{
	return faucet__now_ns() / 1000000u;
}

int faucet__random_bytes(void *buf, size_t n)
{
	unsigned char *p = buf;

	while (n > 0) {
		ssize_t got = getrandom(p, n, 0);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			return faucet__error_os(FAUCET_EIO, errno, "failed to read random bytes");
		}
		p += got;
		n -= (size_t)got;
	}
	return 0;
}

int faucet__random_hex(char *out, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	unsigned char raw[64];

	if (n > sizeof(raw))
		return faucet_error_set(FAUCET_EINVALID, "random token too long");
	if (faucet__random_bytes(raw, n) != 0)
		return FAUCET_EIO;
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[raw[i] >> 4];
		out[2 * i + 1] = digits[raw[i] & 15];
	}
	out[2 * n] = '\0';
	return 0;
}
