# bench/lib.sh - what the benchmark scripts share (sourced, not run).

# refuse_tmpfs DIR WHO: stop (exit 1) when DIR is on tmpfs, where fsync is
# free and every durable-write ratio would be a lie.
refuse_tmpfs() {
  if [ "$(stat -f -c %T "$1")" = "tmpfs" ]; then
    echo "$2: $1 is on tmpfs; durable-write figures would be meaningless" >&2
    exit 1
  fi
}
