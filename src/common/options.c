/*
 * options.c - reading a caller's versioned options struct.
 *
 * Every public options struct that can grow starts with `unsigned version`
 * and only ever grows at its end, so the struct of version N is a prefix of
 * the struct of version N + 1.  The library reads a caller's struct through
 * a table of each version's size: an older caller's smaller struct is
 * copied as far as it goes and the fields it lacks keep their zero
 * defaults; a version this library does not know (0: the caller forgot the
 * _INIT macro, or a newer caller's) is refused, since the library cannot
 * know what the caller meant by fields it has never heard of.  The public
 * faucet_*_options_init functions fill a caller's struct of a given
 * version through the same table, writing no more than that version's
 * size.
 */
#include <string.h>

#include "internal.h"

/* FAUCET_EINVALID unless `version` is from 1 to `current`; `hint` ends
 * the message. */
static int check_version(unsigned version, unsigned current, const char *what, const char *hint)
{
	if (version == 0 || version > current)
		return faucet_error_set(FAUCET_EINVALID,
					"%s version %u is not one this libfaucet (%s) knows "
					"(1 to %u)%s",
					what, version, FAUCET_VERSION_STRING, current, hint);
	return 0;
}

int faucet__options_check(const void *src, unsigned current, const char *what)
{
	unsigned version;

	memcpy(&version, src, sizeof(version));
	return check_version(version, current, what, "; initialise it with its _INIT macro");
}

int faucet__options_load(void *dst, size_t dst_size, const void *src, const size_t *sizes,
			 unsigned current, const char *what)
{
	unsigned version;

	memset(dst, 0, dst_size);
	if (faucet__options_check(src, current, what) != 0)
		return FAUCET_EINVALID;
	memcpy(&version, src, sizeof(version));
	memcpy(dst, src, sizes[version - 1] < dst_size ? sizes[version - 1] : dst_size);
	memcpy(dst, &current, sizeof(current));
	return 0;
}

int faucet__options_init(void *dst, const void *defaults, const size_t *sizes, unsigned version,
			 unsigned current, const char *what)
{
	if (dst == NULL)
		return faucet_error_set(FAUCET_EINVALID, "%s_init: the struct is NULL", what);
	if (check_version(version, current, what, "") != 0)
		return FAUCET_EINVALID;
	memcpy(dst, defaults, sizes[version - 1]);
	memcpy(dst, &version, sizeof(version));
	return 0;
}
