/*
 * value_internal.h - how the library builds and inspects values with json-c.
 * Only libfaucet's own modules see json-c; the public API deals in text.
 */
#ifndef FAUCET_VALUE_INTERNAL_H
#define FAUCET_VALUE_INTERNAL_H

#include <stdint.h>

#include <json-c/json.h>
#include <faucet/value.h>

#include "common/internal.h"

/* Wrap a tree the library built (takes ownership of `tree`, even on error). */
int faucet_value__from_tree(faucet_value **out, json_object *tree);

/* A value of the JSON text in *b, built in b's own memory (no copy: a run's
 * rollback marker can be a hundred megabytes).  The text must be compact
 * JSON that this library built from values and validated keys: it is not
 * checked again (a million-member object's duplicate-name check alone took
 * a second).  On success *b is left empty; on error it is as it was. */
int faucet_value__from_buf(faucet_value **out, faucet_buf *b, const char *where);

/* The value's parsed tree in *out (NULL is JSON null), built on first use;
 * read-only and shared: never modify it.  Fails only when out of memory. */
int faucet_value__tree(const faucet_value *v, json_object **out);

/* Member `name` of object `o`, which must be a string (or, when `nullable`,
 * null or absent: *out NULL), copied into *out (caller frees).  0, -1 when
 * it is not such a member, FAUCET_ENOMEM. */
int faucet_value__member_string(json_object *o, const char *name, int nullable, char **out);

/* v with every number spelt canonically - 0, or [-]d[.ddd]e[-]N with only
 * significant digits - the same JSON value (faucet_value_equal) in the
 * fewest digits.  *lowest and *highest are the places (powers of ten) of
 * the least and most significant non-zero digit among all its numbers
 * (INT64_MAX and INT64_MIN when it has none; saturated for exponents an
 * int64 cannot hold), for a backend whose number type has a range. */
int faucet_value__canonical_numbers(const faucet_value *v, faucet_value **out, int64_t *lowest,
				    int64_t *highest);

#endif
