"""faucet.open_config reads a pipeline YAML's state block as the `faucet`
command does."""

import os
import textwrap

import pytest

import faucet
from conftest import server_url, unique


def write(tmp_path, text, name="pipeline.yml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_a_file_store_with_a_relative_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = write(tmp_path, """
        name: orders
        state:
          type: file
          config:
            path: ./state-dir
        backfill:
          window: 1d
        pipeline_section_we_ignore: {anything: [1, 2]}
        """)
    with faucet.open_config(cfg) as s:
        assert s.backend == "file"
        s.put("orders::default", {"cursor": 7})
    assert (tmp_path / "state-dir").is_dir()
    with faucet.open(f"file:{tmp_path}/state-dir") as s:
        assert s.get("orders::default") == {"cursor": 7}


def test_env_references_are_replaced(tmp_path, monkeypatch):
    monkeypatch.setenv("PY_STATE_DIR", str(tmp_path / "from-env"))
    monkeypatch.setenv("PY_EMPTY", "")
    cfg = write(tmp_path, """
        state:
          type: sqlite
          config:
            path: "${env:PY_STATE_DIR}${env:PY_EMPTY}.db"
        """)
    with faucet.open_config(cfg) as s:
        assert s.backend == "sqlite"
        s.put("p::r", 1)
    assert (tmp_path / "from-env.db").exists()


def test_an_unset_variable_is_a_config_error_naming_it(tmp_path, monkeypatch):
    monkeypatch.delenv("PY_NOT_SET", raising=False)
    cfg = write(tmp_path, """
        state:
          type: file
          config: {path: "${env:PY_NOT_SET}/x"}
        """)
    with pytest.raises(faucet.ConfigError) as e:
        faucet.open_config(cfg)
    assert "PY_NOT_SET is not set" in e.value.message and "line 4" in e.value.message


def test_postgres_and_redis_from_config(tmp_path, monkeypatch):
    monkeypatch.setenv("PY_PG_URL", server_url("FAUCET_TEST_PG_URL"))
    monkeypatch.setenv("PY_REDIS_URL", server_url("FAUCET_TEST_REDIS_URL"))
    pg = write(tmp_path, f"""
        state:
          type: postgres
          config:
            url: ${{env:PY_PG_URL}}
            table: {unique("py_")}
            ensure_table: yes
            max_connections: 2
        """, "pg.yml")
    redis = write(tmp_path, f"""
        state:
          type: redis
          config: {{url: "${{env:PY_REDIS_URL}}", namespace: {unique("py")}}}
        """, "redis.yml")
    for cfg, backend in ((pg, "postgres"), (redis, "redis")):
        with faucet.open_config(cfg) as s:
            assert s.backend == backend
            s.put("p::r", {"from": backend})
            assert s.get("p::r") == {"from": backend}


def test_etcd_from_config(tmp_path):
    url = server_url("FAUCET_TEST_ETCD_URL")
    hosts = url[len("etcd://"):].split("/")[0].split(",")
    prefix = unique("py_etcd_")
    cfg = write(tmp_path, f"""
        state:
          type: etcd
          config:
            endpoints: [{", ".join(hosts)}]
            prefix: {prefix}
            request_timeout: 5s
        """, "etcd.yml")
    with faucet.open_config(cfg) as s:
        assert s.backend == "etcd"
        s.put("p::r", {"from": "etcd"})
    # The same key through the URL the command builds from those fields.
    with faucet.open(f"etcd://{','.join(hosts)}/{prefix}") as s:
        assert s.get("p::r") == {"from": "etcd"}
    bad = write(tmp_path, f"""
        state:
          type: etcd
          config: {{prefix: {prefix}}}
        """, "bad.yml")
    with pytest.raises(faucet.ConfigError, match="endpoints"):
        faucet.open_config(bad)


def test_a_redis_namespace_index_from_config(tmp_path, monkeypatch):
    monkeypatch.setenv("PY_REDIS_URL", server_url("FAUCET_TEST_REDIS_URL"))
    ns = unique("pyidx")
    cfg = write(tmp_path, f"""
        state:
          type: redis
          config: {{url: "${{env:PY_REDIS_URL}}", namespace: {ns}, index: true}}
        """, "idx.yml")
    plain = write(tmp_path, f"""
        state:
          type: redis
          config: {{url: "${{env:PY_REDIS_URL}}", namespace: {ns}, index: false}}
        """, "plain.yml")
    with faucet.open_config(cfg) as s, faucet.open_config(plain) as p:
        s.put("p::r", 1)
        assert s.list("p::") == ["p::r"]  # from the index
        assert p.list("p::") == ["p::r"]  # the same keys by SCAN
        s.delete("p::r")
        assert p.list("p::") == []


def test_an_encrypted_file_store(tmp_path, monkeypatch):
    monkeypatch.setenv("PY_KEY", "py-secret-key-9d2")
    cfg = write(tmp_path, f"""
        state:
          type: file
          config:
            path: {tmp_path}/sealed
            encryption: {{key_env: PY_KEY}}
        """)
    with faucet.open_config(cfg) as s:
        s.put("p::r", {"n": 1})
    raw = (tmp_path / "sealed").iterdir()
    assert any(p.read_bytes().startswith(b"FCT1") for p in raw if p.suffix == ".json")
    with faucet.open(f"file:{tmp_path}/sealed") as s:
        with pytest.raises(faucet.Error):
            s.get("p::r")
    with faucet.open_config(cfg) as s:
        assert s.get("p::r") == {"n": 1}


def test_no_state_block_opens_the_default_store(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = write(tmp_path, "name: orders\n")
    with faucet.open_config(cfg) as s:
        assert s.backend == "file"
        s.put("orders::default", 1)
    assert (tmp_path / ".faucet-state").is_dir()


@pytest.mark.parametrize("text, message", [
    ("state:\n  type: file\n  config: {path: x, pathh: y}\n", "unknown field 'pathh'"),
    ("state:\n  type: file\n  config: {path: x, table: t}\n", "does not apply to type 'file'"),
    ("state:\n  type: sqlite\n  config: {path: x, index: true}\n", "does not apply to type 'sqlite'"),
    ("state:\n  type: file\n  type: sqlite\n", "field 'type' is given twice"),
    ("state:\n  config: {path: x}\n", "state needs a `type`"),
    ("state:\n  type: postgres\n  config: {max_connections: lots}\n",
     "max_connections must be a whole number"),
    ("state:\n  type: postgres\n  config: {ensure_table: maybe}\n",
     "ensure_table must be true or false"),
    ("state: [1, 2]\n", "state must be a mapping"),
    ("state:\n  type: file\n  config: {path: '${env:'}\n", "unterminated"),
    ("a: 1\n---\nb: 2\n", "a second YAML document"),
    ("state: {type: file\n", "bad YAML"),
    ("", "the file is empty"),
    ("state:\n  type: nosuch\n", "nosuch"),
    ("state:\n  type: file\n  config:\n    encryption: {key: a, key_env: B}\n",
     "not both"),
    ("x: !!python/object/apply:os.system ['echo hacked']\n"
     "state: {type: memory}\n", None),
])
def test_config_mistakes_are_config_errors(tmp_path, text, message):
    cfg = write(tmp_path, text)
    if message is None:  # tags are never resolved: no object is built
        with faucet.open_config(cfg) as s:
            assert s.backend == "memory"
        return
    with pytest.raises(faucet.ConfigError) as e:
        faucet.open_config(cfg)
    assert message in e.value.message
    assert e.value.code == -5


def test_values_from_the_environment_are_never_echoed(tmp_path, monkeypatch):
    monkeypatch.setenv("PY_SECRET_COUNT", "s3cr3t-v4lue")
    cfg = write(tmp_path, """
        state:
          type: postgres
          config: {max_connections: "${env:PY_SECRET_COUNT}"}
        """)
    with pytest.raises(faucet.ConfigError) as e:
        faucet.open_config(cfg)
    assert "s3cr3t-v4lue" not in e.value.message
    assert "${env:PY_SECRET_COUNT}" in e.value.message


def test_a_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(faucet.ConfigError, match="cannot open"):
        faucet.open_config(tmp_path / "nope.yml")


def test_open_config_accepts_str_paths(tmp_path):
    cfg = write(tmp_path, "state: {type: memory}\n")
    with faucet.open_config(os.fspath(cfg)) as s:
        assert s.backend == "memory"


def test_a_redis_sentinel_config_is_checked_like_the_command_does(tmp_path):
    # No sentinel needed: the URL is refused before any connection.
    cfg = write(tmp_path, """
        state:
          type: redis-sentinel
          config: {url: "redis-sentinel://127.0.0.1:1", namespace: ns}
        """, "sentinel.yml")
    with pytest.raises(faucet.ConfigError) as e:
        faucet.open_config(cfg)
    assert "no master name" in e.value.message
    other = write(tmp_path, """
        state:
          type: redis-sentinel
          config: {url: "redis-sentinel://127.0.0.1:1/m", table: t}
        """, "other.yml")
    with pytest.raises(faucet.ConfigError) as e:
        faucet.open_config(other)
    assert "table" in e.value.message


def test_redis_sentinel_min_replicas_and_wait_timeout_reach_the_library(tmp_path):
    # faucet_store_config version 2.  No sentinel is needed: the library
    # refuses an option given both in the URL and as a field before any
    # connection, which it can only do when the field reached it.
    for field, value, in_url in (("min_replicas", "2", "1"),
                                 ("wait_timeout", "500ms", "1s")):
        cfg = write(tmp_path, f"""
            state:
              type: redis-sentinel
              config:
                url: "redis-sentinel://127.0.0.1:1/m?{field}={in_url}"
                {field}: {value}
            """, f"{field}.yml")
        with pytest.raises(faucet.ConfigError) as e:
            faucet.open_config(cfg)
        assert f"option '{field}' is given both in the URL" in e.value.message
    # Valid values open (the store connects on first use, so this opens
    # without a sentinel; a write through a real one is not tested here).
    cfg = write(tmp_path, """
        state:
          type: redis-sentinel
          config:
            url: "redis-sentinel://127.0.0.1:1/m"
            namespace: ns
            min_replicas: 2
            wait_timeout: 2s
        """, "ok.yml")
    with faucet.open_config(cfg) as s:
        assert s.backend == "redis-sentinel"


def test_the_library_checks_the_version_2_fields():
    # What the YAML reader cannot send, sent straight to the library: its
    # own checks of redis_min_replicas / redis_wait_timeout_ms answer.
    from faucet._config import open_store_config
    with pytest.raises(faucet.ConfigError, match="apply to redis-sentinel only"):
        open_store_config({"type": "redis", "url": "redis://127.0.0.1:1",
                           "min_replicas": 1}, None)
    for field in ("min_replicas", "wait_timeout_ms"):
        with pytest.raises(faucet.ConfigError, match="must not be negative"):
            open_store_config({"type": "redis-sentinel",
                               "url": "redis-sentinel://127.0.0.1:1/m",
                               field: -1}, None)


@pytest.mark.parametrize("field, value, message", [
    ("min_replicas", "0", "min_replicas must be a whole number from 1 to 100, got '0'"),
    ("min_replicas", "many", "min_replicas must be a whole number"),
    ("wait_timeout", "5m", "wait_timeout must be a duration such as 500ms or 1s "
     "(1ms to 3600s), got '5m'"),
    ("wait_timeout", "0ms", "(1ms to 3600s), got '0ms'"),
    ("wait_timeout", "3601s", "got '3601s'"),
])
def test_redis_sentinel_fields_are_checked_like_the_command_does(tmp_path, field,
                                                                 value, message):
    cfg = write(tmp_path, f"""
        state:
          type: redis-sentinel
          config: {{url: "redis-sentinel://127.0.0.1:1/m", {field}: "{value}"}}
        """)
    with pytest.raises(faucet.ConfigError) as e:
        faucet.open_config(cfg)
    assert message in e.value.message


def test_min_replicas_does_not_apply_to_plain_redis(tmp_path):
    cfg = write(tmp_path, """
        state:
          type: redis
          config: {url: "redis://127.0.0.1:1", min_replicas: 1}
        """)
    with pytest.raises(faucet.ConfigError, match="does not apply to type 'redis'"):
        faucet.open_config(cfg)


@pytest.mark.parametrize("text", [
    "state:\n  type: postgres\n  config: {max_connections: lots}\n",
    "state:\n  type: etcd\n  config: {prefix: p}\n",
    "state:\n  type: etcd\n  config: {endpoints: ['a:1', 'b,c'], prefix: p}\n",
    "state:\n  type: file\n  config: {path: x, table: t}\n",
    "state:\n  type: redis\n  config: {url: 'redis://h:1', index: maybe}\n",
    "state:\n  type: sqllite\n",
    "backfill: {concurrency: 0}\nstate: {type: memory}\n",
])
def test_the_command_and_the_package_read_a_config_with_one_reader(tmp_path, text):
    # One reader (faucet_config_load): the command's message is the
    # package's, word for word, for the same file.
    import subprocess
    cli = os.path.join(os.path.dirname(faucet.library_path), "faucet")
    assert os.access(cli, os.X_OK), f"the faucet command is not beside the library ({cli})"
    cfg = write(tmp_path, text)
    with pytest.raises(faucet.ConfigError) as e:
        faucet.open_config(cfg)
    run = subprocess.run([cli, "-c", str(cfg), "state", "list"], capture_output=True,
                         text=True, timeout=60, check=False)
    assert run.returncode == 2
    assert run.stderr == f"faucet: bad config (-c): {e.value.message}\n"
