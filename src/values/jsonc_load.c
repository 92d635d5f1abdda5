/*
 * jsonc_load.c - json-c, loaded when the first value is parsed or built
 * (see src/common/dynload.h for why and how; src/stores/sqlite_load.c is
 * the same pattern).
 *
 * A value keeps its compact text and builds json-c's tree only when it
 * must (a member read, a merge, an equality of two spellings), so the
 * commonest command - `faucet state get` of a file store - never calls
 * json-c, and mapping and relocating it at every exec was a measurable
 * part of that command's cost (bench/README.md, issue 25).  The command
 * and a program linking libfaucet.a reach json-c through these stubs too;
 * one that links json-c itself gets the same library (dlopen() finds the
 * one already mapped).
 *
 * If json-c cannot be loaded, the stubs return their failure values
 * (NULL, 0, -1), which every caller already treats as out of memory or a
 * parse error, and the last error names the package.
 */
#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"
#include "dynload.h"

#define JSONC_FUNCTIONS(FN, VOID_FN)                                                           \
	FN(json_bool, json_object_object_get_ex,                                              \
	   (const struct json_object *obj, const char *key, struct json_object **value),      \
	   (obj, key, value), 0)                                                               \
	FN(int, json_object_is_type, (const struct json_object *obj, enum json_type type),    \
	   (obj, type), 0)                                                                     \
	FN(int64_t, json_object_get_int64, (const struct json_object *obj), (obj), 0)          \
	FN(int, json_object_put, (struct json_object *obj), (obj), 0)                          \
	FN(struct json_object *, json_object_get, (struct json_object *obj), (obj), NULL)      \
	FN(const char *, json_object_get_string, (struct json_object *obj), (obj), NULL)       \
	FN(int, json_object_get_string_len, (const struct json_object *obj), (obj), 0)         \
	FN(struct lh_table *, json_object_get_object, (const struct json_object *obj), (obj),  \
	   NULL)                                                                               \
	FN(size_t, json_object_array_length, (const struct json_object *obj), (obj), 0)        \
	FN(struct json_object *, json_object_array_get_idx,                                   \
	   (const struct json_object *obj, size_t idx), (obj, idx), NULL)                      \
	FN(const char *, json_object_to_json_string_length,                                   \
	   (struct json_object *obj, int flags, size_t *length), (obj, flags, length), NULL)  \
	FN(const char *, json_object_to_json_string_ext, (struct json_object *obj, int flags), \
	   (obj, flags), NULL)                                                                 \
	FN(json_bool, json_object_get_boolean, (const struct json_object *obj), (obj), 0)      \
	FN(int, json_object_object_length, (const struct json_object *obj), (obj), 0)          \
	FN(int, json_object_object_add,                                                       \
	   (struct json_object *obj, const char *key, struct json_object *val),               \
	   (obj, key, val), -1)                                                                \
	FN(struct json_object *, json_object_new_string, (const char *s), (s), NULL)          \
	FN(struct json_object *, json_object_new_object, (void), (), NULL)                     \
	FN(struct json_object *, json_object_new_int64, (int64_t i), (i), NULL)                \
	FN(void *, json_object_get_userdata, (json_object *jso), (jso), NULL)                  \
	FN(uint64_t, json_object_get_uint64, (const struct json_object *obj), (obj), 0)        \
	FN(enum json_type, json_object_get_type, (const struct json_object *obj), (obj),      \
	   json_type_null)                                                                     \
	FN(int32_t, json_object_get_int, (const struct json_object *obj), (obj), 0)            \
	FN(double, json_object_get_double, (const struct json_object *obj), (obj), 0)          \
	FN(struct json_tokener *, json_tokener_new, (void), (), NULL)                          \
	FN(struct json_tokener *, json_tokener_new_ex, (int depth), (depth), NULL)             \
	VOID_FN(json_tokener_free, (struct json_tokener * tok), (tok))                         \
	VOID_FN(json_tokener_reset, (struct json_tokener * tok), (tok))                        \
	VOID_FN(json_tokener_set_flags, (struct json_tokener * tok, int flags), (tok, flags))  \
	FN(struct json_object *, json_tokener_parse_ex,                                       \
	   (struct json_tokener * tok, const char *str, int len), (tok, str, len), NULL)       \
	FN(enum json_tokener_error, json_tokener_get_error, (struct json_tokener * tok),      \
	   (tok), json_tokener_error_parse_eof)                                                \
	FN(size_t, json_tokener_get_parse_end, (struct json_tokener * tok), (tok), 0)          \
	FN(const char *, json_tokener_error_desc, (enum json_tokener_error jerr), (jerr),     \
	   "json-c could not be loaded")                                                       \
	FN(struct json_object *, json_tokener_parse, (const char *str), (str), NULL)          \
	FN(struct json_object *, json_tokener_parse_verbose,                                  \
	   (const char *str, enum json_tokener_error *error), (str, error), NULL)

#define DYN_TABLE jc
#define DYN_LIB libjsonc
static struct {
	JSONC_FUNCTIONS(FAUCET_DYN_SLOT, FAUCET_DYN_VOID_SLOT)
} jc;

static const faucet_dynsym jc_syms[] = {JSONC_FUNCTIONS(FAUCET_DYN_SYM, FAUCET_DYN_VOID_SYM)};

static faucet_dynlib libjsonc =
	FAUCET_DYNLIB_INIT("JSON handling", "libjson-c.so.5", "libjson-c5", jc_syms);

JSONC_FUNCTIONS(FAUCET_DYN_STUB, FAUCET_DYN_VOID_STUB)
