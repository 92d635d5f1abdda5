/*
 * file_names.h - how the file store turns state keys into file names and
 * back (internal to libfaucet).
 *
 * The mapping is part of the on-disk format shared with the original faucet,
 * so it must never change:
 *
 *   stem     ':' -> "%3A", '/' -> "%2F", 'A'..'Z' -> "%41".."%5A", the rest
 *            as is.  A stem longer than FILE_STEM_MAX bytes becomes a
 *            readable prefix (never cut inside an escape) + '~' + the
 *            SHA-256 of the key in lower-case hex; the full key then lives
 *            in a "{stem}.key" sidecar.
 *   files    "{stem}.json" (the value), "{stem}.json.lock" (compare-and-put
 *            lock), "{stem}.key" (sidecar), temp files ending ".tmp".
 *
 * '%' and '~' are never part of a valid key, so escaped, plain and hashed
 * stems cannot collide.  Every function here works in caller-supplied
 * buffers and never allocates: the listing decodes one name per directory
 * entry and must stay close to the cost of the readdir itself.
 */
#ifndef FAUCET_FILE_NAMES_H
#define FAUCET_FILE_NAMES_H

#include <stddef.h>

/* Longest stem faucet_file__stem() produces.  The longest name derived from
 * a stem is a temp name, stem + ".{32 hex}.{counter}.json.tmp" (at most 63
 * more bytes), which keeps every name under the usual 255-byte limit. */
#define FILE_STEM_MAX 160

/* Room for any stem plus the longest suffix the store appends, NUL included. */
#define FILE_NAME_CAP 256

/* Room for a decoded key, NUL included (keys are at most 256 bytes). */
#define FILE_KEY_CAP 257

/* Write the current stem of `key` (a valid key) into out[FILE_STEM_MAX + 1];
 * returns its length, or 0 (error set) when the key is too long to be its
 * own name and its SHA-256 cannot be computed (libcrypto cannot be loaded). */
size_t faucet_file__stem(const char *key, char *out);

/* Whether a stem is the hashed form (and so has a sidecar). */
int faucet_file__stem_is_hashed(const char *stem, size_t len);

/* Decode a stem of `len` bytes, current or legacy (unescaped capitals, long
 * names not hashed), into key[FILE_KEY_CAP].  Returns the key's length, or 0
 * when the stem is hashed, holds a bad escape or does not decode to a valid
 * key. */
size_t faucet_file__decode_stem(const char *stem, size_t len, char *key);

/* faucet_validate_key() without touching the last error: 1 when valid.  The
 * listing filters foreign names with it, where a failure is expected and
 * must neither allocate nor overwrite the caller's error. */
int faucet_file__key_is_valid(const char *key, size_t len);

#endif
