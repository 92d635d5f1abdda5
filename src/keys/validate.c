/*
 * validate.c - the one definition of a valid state key, and FNV-1a 64.
 *
 * A key names a file, a table row and a Redis key at once, so it must be
 * safe everywhere: ASCII letters, digits and `_ - : . /`, 1 to 256 bytes, no
 * leading dot (no hidden files, no `.`/`..`), and `/` only between
 * non-empty segments that do not start with a dot, so a key never reads
 * as a path.  `%` and `~` are never valid, which keeps the file store's
 * escaped and hashed file names collision-free.
 */
#include <string.h>

#include "internal.h"
#include <faucet/keys.h>

static int key_char_ok(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-' || c == ':' || c == '.' || c == '/';
}

/* Describe a byte for a message: printable ASCII quoted, else \xNN. */
static void describe_byte(unsigned char c, char out[8])
{
	static const char hex[] = "0123456789abcdef";

	if (c >= 0x20 && c < 0x7f) {
		out[0] = '\'';
		out[1] = (char)c;
		out[2] = '\'';
		out[3] = '\0';
	} else {
		out[0] = '\\';
		out[1] = 'x';
		out[2] = hex[c >> 4];
		out[3] = hex[c & 15];
		out[4] = '\0';
	}
}

int faucet_validate_key(const char *key)
{
	size_t len;
	const char *seg;

	if (key == NULL || key[0] == '\0')
		return faucet_error_set(FAUCET_EINVALID, "state key must not be empty");
	len = strlen(key);
	if (len > FAUCET_KEY_MAX)
		return faucet_error_set(FAUCET_EINVALID,
					"state key '%.64s...' exceeds %d characters (%zu bytes)",
					key, FAUCET_KEY_MAX, len);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)key[i];
		if (!key_char_ok(c)) {
			char what[8];
			describe_byte(c, what);
			return faucet_error_set(FAUCET_EINVALID,
						"state key '%s' contains illegal character %s at byte %zu",
						key, what, i);
		}
	}
	if (key[0] == '.')
		return faucet_error_set(FAUCET_EINVALID, "state key '%s' must not begin with a dot", key);
	if (strchr(key, '/') == NULL)
		return 0;
	seg = key;
	for (;;) {
		const char *slash = strchr(seg, '/');
		size_t seglen = slash ? (size_t)(slash - seg) : strlen(seg);
		if (seglen == 0 || seg[0] == '.')
			return faucet_error_set(FAUCET_EINVALID,
						"state key '%s' has a path-like segment at byte %zu - "
						"'/' may only separate non-empty, non-dot segments",
						key, (size_t)(seg - key));
		if (slash == NULL)
			return 0;
		seg = slash + 1;
	}
}

unsigned long long faucet_fnv1a64(const void *data, size_t len)
{
	const unsigned char *p = data;
	unsigned long long hash = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < len; i++) {
		hash ^= p[i];
		hash *= 0x00000100000001b3ULL;
	}
	return hash;
}
