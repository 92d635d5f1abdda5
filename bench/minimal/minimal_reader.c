/*
 * minimal_reader.c - the floor of a whole-process `faucet state get` on a
 * file store (bench/bench_process.c): a C program that opens the key's
 * value file, reads it and writes it to standard output, dynamically linked
 * against libc only, as a C program is by default.
 */
#include <fcntl.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char buf[4096];
	ssize_t n;
	int fd;

	if (argc < 2 || (fd = open(argv[1], O_RDONLY | O_CLOEXEC)) < 0)
		return 1;
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		if (write(1, buf, (size_t)n) != n)
			return 1;
	}
	if (n < 0 || write(1, "\n", 1) != 1)
		return 1;
	return close(fd) != 0;
}
