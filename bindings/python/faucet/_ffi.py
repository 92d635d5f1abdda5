"""
_ffi.py - find libfaucet, declare the calls this package makes, and check
that the library we found is one this package can talk to.

cffi's ABI mode reads the declarations below at import time and calls the
shared library through libffi: nothing is compiled when the package is
installed, so it needs only the library and Debian's python3-cffi.  The
price is that the declarations must match the C headers exactly - cffi
cannot check a struct layout against the library - so the structs we pass
by address are copied here field for field from include/faucet/, and every
function we declare is looked up once at import: a library that lacks one
is an ImportError naming it, never a crash on first use.

Where the library is looked for, first match wins:
  1. $FAUCET_LIBRARY, a path or a name for dlopen (nothing else is tried);
  2. the libdir pkg-config reports for `faucet` (what `cmake --install`
     writes), so an install under /usr/local needs no ldconfig;
  3. the dynamic linker's own search: ctypes.util.find_library("faucet"),
     then libfaucet.so.1 and libfaucet.so.
"""

import ctypes.util
import os
import subprocess

import cffi

# The library version this package was written against.  Within one major
# version (the soname, libfaucet.so.1) the ABI only grows, so any library of
# that major version and at least this minor one will do.
ABI_MAJOR = 1
ABI_MINOR = 0

# The versions of the options structs declared below (their _VERSION
# macros in include/faucet/); each struct's first field says which one a
# caller filled in.
# faucet_store_config: version 2 added redis_min_replicas and
# redis_wait_timeout_ms.  open_store_config fills version 2 only when one of
# them is set, so a library of version 1.0 without them still opens the rest.
STORE_CONFIG_VERSION = 2
STORE_CONFIG_VERSION_1 = 1
CHECK_CONTEXT_VERSION = 1
IMPORT_OPTIONS_VERSION = 1
# faucet_import_report: a result struct; the caller says its version.
IMPORT_REPORT_VERSION = 1

_CDEF = """
typedef struct faucet_store faucet_store;
typedef struct faucet_value faucet_value;
typedef struct faucet_export faucet_export;
typedef struct faucet_check_report faucet_check_report;

typedef struct { int code; const char *message; } faucet_error;
typedef struct { char **strings; size_t count; } faucet_strarray;

typedef struct {
    const char *key;
    const char *const *previous_keys;
    size_t previous_count;
} faucet_encryption_options;

typedef struct {
    unsigned version;
    const char *type;
    const char *path;
    const char *url;
    const char *table;
    int ensure_table;
    int max_connections;
    const char *namespace_name;
    const faucet_encryption_options *encryption;
    int redis_index;
    /* version 2 */
    int redis_min_replicas;
    int redis_wait_timeout_ms;
} faucet_store_config;

typedef struct faucet_config faucet_config;
int faucet_config_load(faucet_config **out, const char *path);
void faucet_config_free(faucet_config *cfg);
const faucet_store_config *faucet_config_store(const faucet_config *cfg);

typedef struct { unsigned version; uint64_t timeout_ms; unsigned flags; } faucet_check_context;

typedef struct {
    const char *name;
    int status;               /* faucet_probe_status, an int-sized enum */
    const char *reason;
    uint64_t elapsed_ms;
    const char *hint;
} faucet_probe;

typedef struct {
    unsigned version;
    faucet_strarray written;
    faucet_strarray durability_unknown;
    faucet_strarray deleted;
    int atomic;
    int dry_run;
    int error_code;
    char *error;
    char *pipeline;
} faucet_import_report;

typedef struct {
    unsigned version; int replace; int allow_empty; int dry_run;
} faucet_import_options;

typedef int (*faucet_key_fn)(const char *key, void *ctx);

typedef struct {
    const char *name; const char *kind; const char *placeholder;
    const char *default_value; const char *doc; int secret;
} faucet_backend_field;
typedef struct {
    const char *type; const char *const *schemes; const faucet_backend_field *fields;
    const char *url_form; const char *doc; int local_path;
} faucet_backend_info;
const faucet_backend_info *faucet_store_backend_info(size_t i);

int faucet_error_retryable(int code);
const faucet_error *faucet_error_last(void);
void faucet_error_clear(void);
const char *faucet_error_name(int code);
void faucet_strarray_dispose(faucet_strarray *arr);
void faucet_free(void *ptr);

int faucet_value_parse(faucet_value **out, const char *text, size_t len);
const char *faucet_value_json(const faucet_value *v);
size_t faucet_value_len(const faucet_value *v);
void faucet_value_free(faucet_value *v);

int faucet_validate_key(const char *key);

int faucet_store_open_url(faucet_store **out, const char *url);
int faucet_store_open_config(faucet_store **out, const faucet_store_config *cfg);
char *faucet_url_redact(const char *url);
void faucet_store_free(faucet_store *s);
const char *faucet_store_backend_name(const faucet_store *s);
int faucet_store_get(faucet_store *s, const char *key, faucet_value **out);
int faucet_store_put(faucet_store *s, const char *key, const faucet_value *value);
int faucet_store_delete(faucet_store *s, const char *key);
int faucet_store_list(faucet_store *s, const char *prefix, faucet_strarray *out);
int faucet_store_scan(faucet_store *s, const char *prefix, faucet_key_fn fn, void *ctx);
int faucet_store_compare_and_put(faucet_store *s, const char *key,
                                 const faucet_value *expected,
                                 const faucet_value *value, int *written);
int faucet_store_compare_and_delete(faucet_store *s, const char *key,
                                    const faucet_value *expected, int *deleted);
int faucet_store_check(faucet_store *s, const faucet_check_context *ctx,
                       faucet_check_report **out);
int faucet_store_supports_list(const faucet_store *s);
int faucet_store_supports_compare_and_put(const faucet_store *s);
int faucet_store_supports_compare_and_delete(const faucet_store *s);
int faucet_store_supports_atomic_batch(const faucet_store *s);

size_t faucet_check_report_count(const faucet_check_report *r);
const faucet_probe *faucet_check_report_probe(const faucet_check_report *r, size_t i);
size_t faucet_check_report_failed_count(const faucet_check_report *r);
void faucet_check_report_free(faucet_check_report *r);

int faucet_export_namespace(faucet_store *s, const char *pipeline, faucet_export **out);
int faucet_export_parse(faucet_export **out, const char *text, size_t len);
int faucet_export_to_json(const faucet_export *e, int pretty, char **out);
void faucet_export_free(faucet_export *e);
int faucet_import_namespace_ex(faucet_store *s, const faucet_export *e,
                               const faucet_import_options *opts,
                               faucet_import_report *report);
void faucet_import_report_dispose(faucet_import_report *r);

/* Optional: present in later libraries only, looked up with has(). */
const char *faucet_version(void);
typedef struct faucet_store_iter faucet_store_iter;
int faucet_store_iter_new(faucet_store *s, const char *prefix, faucet_store_iter **out);
int faucet_store_iter_set_page_size(faucet_store_iter *it, size_t n);
int faucet_store_iter_next(faucet_store_iter *it, const char **key);
void faucet_store_iter_free(faucet_store_iter *it);
int faucet_value_equal(const faucet_value *a, const faucet_value *b);
int faucet_value_merge_patch(const faucet_value *target, const faucet_value *patch,
                             faucet_value **out);

/* include/faucet/run.h (invocation runs) */
typedef struct faucet_run faucet_run;
typedef struct { const char *key; const faucet_value *value; } faucet_entry;
typedef struct {
    unsigned version;
    const char *row;
    int pipeline_level;
    int no_lease;
    uint64_t lease_ttl_ms;
    uint64_t wait_ms;
    const char *command;
} faucet_run_options;
int faucet_run_begin(faucet_run **out, faucet_store *s, const char *pipeline,
                     const faucet_run_options *opts);
int faucet_run_join_env(faucet_run **out, faucet_store *s, const char *pipeline,
                        const char *row);
int faucet_run_join(faucet_run **out, faucet_store *s, const char *pipeline,
                    const char *row, const char *run_id);
const char *faucet_run_id(const faucet_run *r);
const char *faucet_run_scope(const faucet_run *r);
const char *faucet_run_row(const faucet_run *r);
int faucet_run_put(faucet_run *r, const char *key, const faucet_value *value);
int faucet_run_delete(faucet_run *r, const char *key);
int faucet_run_compare_and_put(faucet_run *r, const char *key,
                               const faucet_value *expected,
                               const faucet_value *value, int *written);
int faucet_run_compare_and_delete(faucet_run *r, const char *key,
                                  const faucet_value *expected, int *deleted);
int faucet_run_renew(faucet_run *r);
uint64_t faucet_run_renew_interval_ms(const faucet_run *r);
const faucet_strarray *faucet_run_keys(const faucet_run *r);
int faucet_run_end(faucet_run *r, int outcome, int exit_status, const char *message);
void faucet_run_free(faucet_run *r);
int faucet_run_is_bookkeeping_key(const char *key);
"""

# The calls of invocation runs (run.h); Store.run() needs all of them.
RUN_CALLS = (
    "faucet_run_begin", "faucet_run_join", "faucet_run_join_env", "faucet_run_id", "faucet_run_scope",
    "faucet_run_row", "faucet_run_put", "faucet_run_delete",
    "faucet_run_compare_and_put", "faucet_run_compare_and_delete",
    "faucet_run_renew", "faucet_run_renew_interval_ms", "faucet_run_keys",
    "faucet_run_end", "faucet_run_free",
)
RUN_OPTIONS_VERSION = 1

# Every function above that the package cannot work without.
REQUIRED = (
    "faucet_error_retryable", "faucet_error_last", "faucet_error_clear",
    "faucet_error_name", "faucet_strarray_dispose", "faucet_free",
    "faucet_value_parse", "faucet_value_json", "faucet_value_len",
    "faucet_value_free", "faucet_validate_key",
    "faucet_store_open_url", "faucet_store_open_config", "faucet_url_redact",
    "faucet_store_backend_info", "faucet_config_load", "faucet_config_free",
    "faucet_config_store",
    "faucet_store_free", "faucet_store_backend_name", "faucet_store_get",
    "faucet_store_put", "faucet_store_delete", "faucet_store_list",
    "faucet_store_scan", "faucet_store_compare_and_put",
    "faucet_store_compare_and_delete", "faucet_store_check",
    "faucet_store_supports_list", "faucet_store_supports_compare_and_put",
    "faucet_store_supports_compare_and_delete",
    "faucet_store_supports_atomic_batch",
    "faucet_check_report_count", "faucet_check_report_probe",
    "faucet_check_report_failed_count", "faucet_check_report_free",
    "faucet_export_namespace", "faucet_export_parse", "faucet_export_to_json",
    "faucet_export_free", "faucet_import_namespace_ex",
    "faucet_import_report_dispose",
)


def _pkg_config_libdir():
    """The libdir pkg-config knows for faucet, or None."""
    try:
        res = subprocess.run(["pkg-config", "--variable=libdir", "faucet"],
                             capture_output=True, text=True, timeout=30,
                             check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    libdir = res.stdout.strip()
    return libdir if res.returncode == 0 and libdir else None


def _candidates():
    explicit = os.environ.get("FAUCET_LIBRARY")
    if explicit:
        return [explicit], True
    names = []
    libdir = _pkg_config_libdir()
    if libdir:
        names += [os.path.join(libdir, "libfaucet.so.1"),
                  os.path.join(libdir, "libfaucet.so")]
    found = ctypes.util.find_library("faucet")
    if found:
        names.append(found)
    names += ["libfaucet.so.1", "libfaucet.so"]
    return names, False


def _open_library(ffi):
    names, explicit = _candidates()
    errors = []
    for name in names:
        try:
            return ffi.dlopen(name), name
        except OSError as e:
            errors.append(str(e))
    if explicit:
        raise ImportError("faucet: cannot load the library FAUCET_LIBRARY names "
                          f"({names[0]}): {errors[0]}")
    raise ImportError("faucet: libfaucet not found (tried FAUCET_LIBRARY, "
                      "pkg-config's libdir, the system library path: "
                      f"{', '.join(names)}); install libfaucet or set "
                      "FAUCET_LIBRARY to its path")


def has(lib, name):
    """Whether the loaded library exports `name` (declared in _CDEF)."""
    try:
        getattr(lib, name)
    except AttributeError:
        return False
    return True


def _check_abi(ffi, lib, where):
    if has(lib, "faucet_version"):
        text = ffi.string(lib.faucet_version()).decode("ascii", "replace")
        parts = text.split(".")
        try:
            major, minor = int(parts[0]), int(parts[1])
        except (IndexError, ValueError):
            raise ImportError(f"faucet: {where} reports an unreadable version "
                              f"'{text}'") from None
        if major != ABI_MAJOR or (major == 0 and minor != ABI_MINOR) or \
                minor < ABI_MINOR:
            raise ImportError(f"faucet: {where} is libfaucet {text}, but this "
                              f"package was built for libfaucet "
                              f"{ABI_MAJOR}.{ABI_MINOR}; install matching "
                              "versions of the two")
    missing = [name for name in REQUIRED if not has(lib, name)]
    if missing:
        raise ImportError(f"faucet: {where} is not a libfaucet this package can "
                          f"use ({ABI_MAJOR}.{ABI_MINOR}): it lacks "
                          f"{', '.join(missing)}")


def load():
    """(ffi, lib, path) of a checked libfaucet; ImportError otherwise."""
    ffi = cffi.FFI()
    ffi.cdef(_CDEF)
    lib, where = _open_library(ffi)
    _check_abi(ffi, lib, where)
    return ffi, lib, where


ffi, lib, library_path = load()
