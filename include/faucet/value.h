/*
 * faucet/value.h - immutable JSON values, the payload of every state entry.
 *
 * A faucet_value is a parsed, validated JSON document with its compact text.
 * It is immutable and reference counted, so a store can keep the caller's
 * value without copying it and hand the same value to many readers at once
 * (the reference count is atomic: values may be shared across threads).
 *
 * Fidelity rule (doc/design.md §2.4): a value read and written back is unchanged.
 * Integers from -2^63 to 2^64-1 keep every digit, a parsed number keeps its
 * source text (0.1 stays 0.1), object members keep their order.  Input that
 * the JSON layer cannot hold exactly - an integer out of that range, a number
 * too large for a double, an object with a duplicate member name, invalid
 * UTF-8 - is refused with FAUCET_EINVALID; it is never silently altered.
 */
#ifndef FAUCET_VALUE_H
#define FAUCET_VALUE_H

#include <stddef.h>
#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct faucet_value faucet_value;

/* Parse `len` bytes of strict JSON (surrounding white space allowed) into a
 * new value with one reference owned by the caller.  Errors: FAUCET_EINVALID
 * naming the problem and its byte offset. */
FAUCET_EXTERN int faucet_value_parse(faucet_value **out, const char *text, size_t len);

/* Parse like faucet_value_parse, with the error message starting with
 * `where` (a file name, "--if-equals") instead of "JSON value", so that it
 * says which input held the bad JSON, and at which byte offset. */
FAUCET_EXTERN int faucet_value_parse_at(faucet_value **out, const char *text, size_t len,
					const char *where);

/* The value's compact JSON text, NUL-terminated, owned by the value. */
FAUCET_EXTERN const char *faucet_value_json(const faucet_value *v);

/* Length in bytes of faucet_value_json(v). */
FAUCET_EXTERN size_t faucet_value_len(const faucet_value *v);

/* The member `name` of the JSON object v as a new value with one reference
 * owned by the caller (numbers keep their digits, as everywhere); *out is
 * NULL when v is not an object or has no such member (a member that is JSON
 * null is the value null).  Fails only when out of memory. */
FAUCET_EXTERN int faucet_value_member(const faucet_value *v, const char *name,
				      faucet_value **out);

/* Whether two values are equal as JSON values: objects compare by member set
 * ({"a":1,"b":2} equals {"b":2,"a":1}), arrays in order, numbers by exact
 * decimal value whatever the spelling (1200, 1200.0 and 1.2e3 are equal, so
 * are -0 and 0; 9007199254740993 differs from 9007199254740992 and 0.1 from
 * 0.10000000000000001: never through a double).  NULL equals only NULL
 * (NULL stands for "no entry").  Every store's compare-and-put and
 * compare-and-delete follow this rule. */
FAUCET_EXTERN int faucet_value_equal(const faucet_value *a, const faucet_value *b);

/* RFC 7396 JSON Merge Patch: *out is `patch` applied to `target` (NULL: no
 * value, merged as null), a new value with one reference owned by the
 * caller; neither input is changed.  A null member of the patch removes the
 * member, an object merges member by member, anything else (arrays
 * included) replaces; a patch that is not an object is the result; a
 * target that is not an object, patched by an object, is replaced by {}
 * first (callers that must not lose such a value check it themselves).
 * Members keep the target's order, new ones follow in the patch's order;
 * numbers keep their spelling.  Errors: FAUCET_ENOMEM, FAUCET_EINVALID. */
FAUCET_EXTERN int faucet_value_merge_patch(const faucet_value *target, const faucet_value *patch,
					   faucet_value **out);

/* Take one more reference to v (returns v).  NULL is passed through. */
FAUCET_EXTERN faucet_value *faucet_value_ref(faucet_value *v);

/* Drop one reference; the value is freed with its last one.  NULL is ignored. */
FAUCET_EXTERN void faucet_value_free(faucet_value *v);

#ifdef __cplusplus
}
#endif

#endif
