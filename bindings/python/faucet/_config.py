"""
_config.py - the `state:` block of a faucet pipeline YAML, read the way the
`faucet` command reads it (src/cli/config.c), and mapped onto
faucet_store_config.

The library has no YAML reader (the command's lives in the CLI), so this is
a second reader of the same format, kept as strict as the first: PyYAML
composes the document into nodes without resolving any tag (so `5`, `yes`
and `null` stay the text they are, and no YAML tag can build a Python
object), then we walk only `state`, with the CLI's rules:

  - one document; every mapping key a string, given once;
  - state: {type, config}; config takes the fields of its backend only,
    as the library's table of backends lists them (faucet_store_backend_info,
    src/stores/registry.c); encryption: {key | key_env, previous_keys, algorithm};
  - a plain empty, `~` or `null` scalar is an unset field;
  - ${env:VAR} in any string is replaced by the variable's value; an unset
    variable is a ConfigError naming it, a set-but-empty one is "".

Messages name the file, the line and the field, and quote what the file
says, never what an ${env:...} reference expanded to.  Key material passes
through Python strings, which cannot be wiped; it is copied into C memory
only for the open call, and that copy is zeroed straight after.
"""

import os
import re

from ._ffi import ffi, lib, STORE_CONFIG_VERSION, STORE_CONFIG_VERSION_1
from . import _errors as E

DEFAULT_URL = "file:.faucet-state"



def _backend_table():
    """The library's table of backends (faucet_store_backend_info): a dict
    of each type's state.config fields, in the library's order."""
    table = {}
    i = 0
    while True:
        be = lib.faucet_store_backend_info(i)
        if be == ffi.NULL:
            return table
        names = []
        f = be.fields
        while f.name != ffi.NULL:
            names.append(ffi.string(f.name).decode("utf-8"))
            f += 1
        table[ffi.string(be.type).decode("utf-8")] = tuple(names)
        i += 1


_BACKEND_FIELDS = _backend_table()
_ALL_FIELDS = tuple(dict.fromkeys(n for names in _BACKEND_FIELDS.values() for n in names))
_DURATION = re.compile(r"([0-9]+)(ms|s)\Z")
_ENV_REF = re.compile(r"\$\{env:([^}]*)\}")
_ENV_NAME = re.compile(r"[A-Za-z0-9_]+\Z")


class _Reader:
    def __init__(self, path):
        self.path = path

    def fail(self, node, text):
        line = node.start_mark.line + 1 if node is not None else 1
        return E.ConfigError(f"config {self.path}: line {line}: {text}", E.ECONFIG)

    @staticmethod
    def is_null(node):
        import yaml
        return (isinstance(node, yaml.ScalarNode) and node.style is None and
                (node.value == "" or node.value == "~" or node.value.lower() == "null"))

    def mapping(self, node, field, allowed=None):
        """{name: (key node, value node)} of a mapping node, strictly."""
        import yaml
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(node, f"{field} must be a mapping")
        out = {}
        for k, v in node.value:
            if not isinstance(k, yaml.ScalarNode):
                raise self.fail(k, f"{field}: every field name must be a string")
            if k.value in out:
                raise self.fail(k, f"{field}: field '{k.value}' is given twice")
            if allowed is not None and k.value not in allowed:
                raise self.fail(k, f"{field}: unknown field '{k.value}' (known: "
                                f"{', '.join(allowed)})")
            out[k.value] = (k, v)
        return out

    def expand(self, node, field, text):
        """text with each ${env:VAR} replaced."""
        if "${env:" not in text:
            return text
        out, pos = [], 0
        while True:
            start = text.find("${env:", pos)
            if start < 0:
                out.append(text[pos:])
                return "".join(out)
            end = text.find("}", start)
            if end < 0:
                raise self.fail(node, f"{field}: unterminated ${{env:...}} reference")
            name = text[start + 6:end]
            if not name or len(name) >= 256:
                raise self.fail(node, f"{field}: bad environment variable "
                                f"reference '{text[start:end + 1]}'")
            if not _ENV_NAME.match(name):
                raise self.fail(node, f"{field}: bad environment variable name '{name}'")
            value = os.environ.get(name)
            if value is None:
                raise self.fail(node, f"{field}: environment variable {name} is "
                                f"not set (${{env:{name}}})")
            out.append(text[pos:start])
            out.append(value)
            pos = end + 1

    def string(self, node, field):
        """A string field (None when unset)."""
        import yaml
        if not isinstance(node, yaml.ScalarNode):
            raise self.fail(node, f"{field} must be a string")
        if self.is_null(node):
            return None
        if "\0" in node.value:
            raise self.fail(node, f"{field} contains a NUL byte")
        return self.expand(node, field, node.value)

    def integer(self, node, field, low, high):
        text = self.string(node, field)
        if text is None:
            raise self.fail(node, f"{field} must be a whole number")
        try:
            value = int(text.strip(), 10)
        except ValueError:
            value = None
        if value is None or not low <= value <= high or text != text.strip():
            raise self.fail(node, f"{field} must be a whole number from {low} to "
                            f"{high}, got '{node.value}'")
        return value

    def duration_ms(self, node, field):
        """A duration such as 500ms or 1s (1ms to 3600s), in milliseconds,
        read as the command reads it (read_duration_ms in src/cli/config.c)."""
        text = self.string(node, field)
        if text is None:
            raise self.fail(node, f"{field} must be a duration such as 500ms or 1s")
        m = _DURATION.match(text)
        ms = int(m.group(1)) * (1 if m.group(2) == "ms" else 1000) if m else 0
        if not 1 <= ms <= 3600000:
            raise self.fail(node, f"{field} must be a duration such as 500ms or 1s "
                            f"(1ms to 3600s), got '{node.value}'")
        return ms

    def boolean(self, node, field):
        text = self.string(node, field)
        if text is not None and text.lower() in ("true", "yes", "on"):
            return True
        if text is not None and text.lower() in ("false", "no", "off"):
            return False
        raise self.fail(node, f"{field} must be true or false, got '{node.value}'")

    def string_list(self, node, field):
        import yaml
        if self.is_null(node):
            return []
        if not isinstance(node, yaml.SequenceNode):
            raise self.fail(node, f"{field} must be a list of strings")
        items = []
        for item in node.value:
            s = self.string(item, field)
            if not s:
                raise self.fail(item, f"{field}: an entry is empty")
            items.append(s)
        return items


def _encryption(r, node):
    fields = r.mapping(node, "state.config.encryption",
                       ("key", "key_env", "previous_keys", "algorithm"))
    if "algorithm" in fields:
        k, v = fields["algorithm"]
        name = r.string(v, "state.config.encryption.algorithm")
        if name is not None and name.lower() != "aes-256-gcm":
            raise r.fail(v, f"encryption algorithm '{v.value}' is not supported "
                         "(supported: aes-256-gcm)")
    if "key" in fields and "key_env" in fields:
        raise r.fail(fields["key_env"][1],
                     "state.config.encryption: give `key` or `key_env`, not both")
    if "key" in fields:
        node_used = fields["key"][1]
        key = r.string(node_used, "state.config.encryption.key")
    elif "key_env" in fields:
        node_used = fields["key_env"][1]
        var = r.string(node_used, "state.config.encryption.key_env")
        if not var:
            raise r.fail(node_used, "state.config.encryption.key_env is empty")
        key = os.environ.get(var)
        if key is None:
            raise r.fail(node_used, f"environment variable {var} "
                         "(state.config.encryption.key_env) is not set")
    else:
        raise r.fail(node, "state.config.encryption needs a `key` (or `key_env`)")
    if not key:
        raise r.fail(node_used, "state.config.encryption key is empty")
    previous = []
    if "previous_keys" in fields:
        previous = r.string_list(fields["previous_keys"][1],
                                 "state.config.encryption.previous_keys")
    return key, previous


def read_state(path):
    """The store a pipeline YAML names: (fields, encryption) where fields is
    a dict of faucet_store_config strings/ints, or (None, None) when the
    file has no state block (the default store then applies)."""
    try:
        import yaml
    except ImportError:
        raise E.ConfigError("faucet.open_config needs PyYAML (Debian: "
                            "python3-yaml)", E.ECONFIG) from None
    r = _Reader(path)
    try:
        with open(path, "rb") as f:
            text = f.read()
    except OSError as e:
        raise E.ConfigError(f"config {path}: cannot open: {e.strerror}", E.ECONFIG) from None
    try:
        root = yaml.compose(text, Loader=yaml.BaseLoader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(e, "problem", None) or "cannot parse"
        raise E.ConfigError(f"config {path}: {line}bad YAML: {problem}", E.ECONFIG) from None
    if root is None or r.is_null(root):
        raise E.ConfigError(f"config {path}: the file is empty (expected a pipeline "
                            "with name, state, backfill)", E.ECONFIG)
    top = r.mapping(root, "the top level")
    if "state" not in top or r.is_null(top["state"][1]):
        return None, None
    state = r.mapping(top["state"][1], "state", ("type", "config"))
    if "type" not in state:
        raise r.fail(top["state"][1],
                     "state needs a `type` (" + ", ".join(_BACKEND_FIELDS) + ")")
    tnode = state["type"][1]
    stype = r.string(tnode, "state.type")
    if not stype:
        raise r.fail(tnode, "state.type is empty")
    fields = {"type": stype}
    encryption = None
    if "config" not in state or r.is_null(state["config"][1]):
        return fields, encryption
    conf = r.mapping(state["config"][1], "state.config", _ALL_FIELDS)
    allowed = _BACKEND_FIELDS.get(stype)
    for name, (knode, vnode) in conf.items():
        if allowed is not None and name not in allowed:
            known = ", ".join(allowed) if allowed else "none"
            raise r.fail(knode, f"state.config: field '{name}' does not apply to "
                         f"type '{stype}' (its fields: {known})")
        field = f"state.config.{name}"
        if name in ("path", "url", "table", "namespace"):
            fields[name] = r.string(vnode, field)
        elif name == "ensure_table":
            fields[name] = 1 if r.boolean(vnode, field) else -1
        elif name == "index":
            fields[name] = 1 if r.boolean(vnode, field) else 0
        elif name == "max_connections":
            fields[name] = r.integer(vnode, field, 1, 10000)
        elif name == "min_replicas":
            fields[name] = r.integer(vnode, field, 1, 100)
        elif name == "wait_timeout":
            fields["wait_timeout_ms"] = r.duration_ms(vnode, field)
        elif name == "encryption" and not r.is_null(vnode):
            encryption = _encryption(r, vnode)
        elif name in ("prefix", "dial_timeout", "request_timeout"):
            fields[name] = r.string(vnode, field)
        elif name == "endpoints":
            fields[name] = r.string_list(vnode, field)
    if stype == "etcd":
        _etcd_url(r, state["config"][1], fields)
    return fields, encryption


def _etcd_url(r, node, fields):
    """type etcd: endpoints, prefix and the timeouts become the store's URL,
    as the command builds it (src/cli/config.c)."""
    ends = fields.pop("endpoints", None)
    prefix = fields.pop("prefix", None)
    dial = fields.pop("dial_timeout", None)
    req = fields.pop("request_timeout", None)
    if "url" in fields:
        if ends or prefix is not None or dial is not None or req is not None:
            raise r.fail(node, "state.config: give either url or endpoints and prefix "
                         "for type etcd, not both")
        return
    if not ends:
        raise r.fail(node, "state.config.endpoints is missing or empty (type etcd needs "
                     "endpoints: [HOST:PORT, ...])")
    if not prefix:
        raise r.fail(node, "state.config.prefix is missing or empty (type etcd keeps its "
                     "keys under PREFIX/)")
    for i, e in enumerate(ends):
        if not e or any(ch in e for ch in ",/?&"):
            raise r.fail(node, f"state.config.endpoints[{i}] '{e}' must be HOST:PORT")
    url = "etcd://" + ",".join(ends) + "/" + prefix
    opts = [f"{k}={v}" for k, v in (("dial_timeout", dial), ("request_timeout", req)) if v]
    fields["url"] = url + ("?" + "&".join(opts) if opts else "")


class CStrings:
    """C copies of Python strings for the length of one call; wipe() zeroes
    them (the key material among them) once the call has returned."""

    def __init__(self):
        self._bufs = []

    def __call__(self, text):
        if text is None:
            return ffi.NULL
        data = text.encode("utf-8")
        if b"\0" in data:
            raise E.ConfigError("a store setting contains a NUL character", E.ECONFIG)
        buf = ffi.new("char[]", data)
        self._bufs.append(buf)
        return buf

    def wipe(self):
        for buf in self._bufs:
            ffi.memmove(buf, b"\0" * len(buf), len(buf))
        self._bufs = []


def open_store_config(fields, encryption):
    """faucet_store_open_config with `fields` (type, path, url, table,
    ensure_table, max_connections, namespace, index, min_replicas,
    wait_timeout_ms) and encryption (key, previous
    keys) or None.  Returns the faucet_store *."""
    c = CStrings()
    try:
        cfg = ffi.new("faucet_store_config *")
        min_replicas = fields.get("min_replicas", 0)
        wait_timeout_ms = fields.get("wait_timeout_ms", 0)
        # Version 2 only when one of its fields is set: a 1.0 library, which
        # refuses a version newer than itself, still opens everything else.
        cfg.version = (STORE_CONFIG_VERSION if min_replicas or wait_timeout_ms
                       else STORE_CONFIG_VERSION_1)
        cfg.type = c(fields.get("type"))
        cfg.path = c(fields.get("path"))
        cfg.url = c(fields.get("url"))
        cfg.table = c(fields.get("table"))
        cfg.namespace_name = c(fields.get("namespace"))
        cfg.ensure_table = fields.get("ensure_table", 0)
        cfg.max_connections = fields.get("max_connections", 0)
        cfg.redis_index = fields.get("index", 0)
        cfg.redis_min_replicas = min_replicas
        cfg.redis_wait_timeout_ms = wait_timeout_ms
        keep = []
        if encryption is not None:
            key, previous = encryption
            prev = ffi.new("const char *[]", [c(p) for p in previous] or [ffi.NULL])
            enc = ffi.new("faucet_encryption_options *")
            enc.key = c(key)
            enc.previous_keys = prev
            enc.previous_count = len(previous)
            cfg.encryption = enc
            keep += [prev, enc]
        out = ffi.new("faucet_store **")
        rc = lib.faucet_store_open_config(out, cfg)
        if rc != 0:
            raise E.last_error(rc, E.ConfigError)
        return out[0]
    finally:
        c.wipe()
