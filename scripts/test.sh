#!/usr/bin/env bash
# Build and run every test: once in a normal build, once under
# AddressSanitizer + UndefinedBehaviorSanitizer, the file-store batch tests
# under ThreadSanitizer, and the fuzz targets.  This is what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh

jobs=$(nproc)
status=0
failed=()

# failed [WHAT]: the stage under way failed; the run goes on and exits 1,
# and its last lines name every failed stage (CI may keep only the tail).
failed() {
  status=1
  failed+=("$stage_name${1:+: $1}")
}

# stage NAME: print the stage's heading, and how long the one before took
# (the whole run must stay within CI's budget: these say where it goes).
stage_name= stage_start=$SECONDS
stage() {
  [ -n "$stage_name" ] && echo "-- $stage_name: $((SECONDS - stage_start)) s"
  stage_name=$1 stage_start=$SECONDS
  [ -n "$1" ] && echo "== $1 =="
  return 0
}

# Throw-away PostgreSQL and Redis servers for the backend tests; their URLs
# reach the tests through the environment (FAUCET_TEST_PG_URL, ...).  They
# are stopped on every exit, failure included.
servers_env=$(./scripts/test-servers.sh start)
eval "$servers_env"
trap './scripts/test-servers.sh stop "$FAUCET_TEST_SERVERS_DIR"' EXIT

# run_suite DIR [CMAKE_ARGS...]; $ctest_args (e.g. -LE LABELS) narrows ctest.
run_suite() {
  local dir=$1; shift
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFAUCET_WERROR=ON "$@" >/dev/null
  cmake --build "$dir" -j"$jobs"
  # shellcheck disable=SC2086
  if ! (cd "$dir" && ctest --output-on-failure -j"$jobs" ${ctest_args:-}); then
    failed "$(tr '\n' ' ' <"$dir/Testing/Temporary/LastTestsFailed.log" 2>/dev/null)"
  fi
}

stage "normal build"
run_suite build

# The other build types compile warning-free too (-O2/-Os see different
# code than -O0/-O2 -g: uninitialized-variable and overflow warnings come
# and go with the optimizer), with GCC and with clang: compiled only, every
# target, tests and benchmarks included.  A user's build of a released tree
# does not use -Werror (FAUCET_WERROR is OFF by default); CI does.  They
# build in the background (niced) while the checks below run: the mutation
# check mostly waits on fsync, and the CPU it leaves idle compiles these.
compile_only() { # DIR CMAKE_ARGS...: 1 when the build fails
  local dir=$1; shift
  if ! { cmake -S . -B "$dir" -DFAUCET_WERROR=ON "$@" && cmake --build "$dir" -j"$jobs"; } \
    >"$dir.log" 2>&1; then
    grep -E 'error|warning' "$dir.log" | head -40 || true
    echo "build $dir ($*) failed; the whole log is $dir.log"
    return 1
  fi
  echo "build $dir ($*): ok"
}
other_builds() {
  local rc=0 clang_cc
  renice -n 10 -p "$BASHPID" >/dev/null 2>&1 || true
  compile_only build-release -DCMAKE_BUILD_TYPE=Release || rc=1
  compile_only build-minsizerel -DCMAKE_BUILD_TYPE=MinSizeRel || rc=1
  clang_cc=$(command -v clang || command -v clang-14 || true)
  if [ -n "$clang_cc" ]; then
    compile_only build-clang -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER="$clang_cc" || rc=1
  elif [ "${CI:-}" = "true" ]; then
    echo "clang is missing although install-deps.sh installs it"
    rc=1
  fi
  return $rc
}
other_builds >build-other.log 2>&1 &
other_builds_pid=$!

# The shared library's ABI against the committed baseline abi/libfaucet.abi
# (scripts/abi-check.sh --update records an intended change).
stage "ABI check"
./scripts/abi-check.sh build || failed

# Modules depend on the ones below them only (the order is in the script).
stage "layer check"
./scripts/check-layers.sh build || failed

# The Python binding (bindings/python) against the library just built, on
# the file, SQLite, PostgreSQL and Redis stores.  Debian's interpreter has
# pytest (python3-pytest); a `python3` earlier on PATH may not, so the
# package is also imported with that one, which is all it must do there.
stage "Python binding"
FAUCET_LIBRARY=build/libfaucet.so /usr/bin/python3 -m pytest -q -p no:cacheprovider \
  bindings/python/tests || failed
if [ "$(command -v python3)" != /usr/bin/python3 ]; then
  FAUCET_LIBRARY=build/libfaucet.so PYTHONPATH=bindings/python python3 -c \
    'import faucet; s = faucet.open("memory:"); s.put("p::r", 2**64 - 1); assert s.get("p::r") == 2**64 - 1' \
    || failed
fi
# The durability proof must be able to fail: every fsync removed, every
# directory sync dropped, the temp file synced after its rename, SQLite at
# synchronous=OFF/NORMAL - each must turn a durability test red.
stage "mutation check of the durability tests"
./scripts/mutate.sh || failed

stage "other build types (compile only; built in the background since the normal build)"
wait "$other_builds_pid" || failed
cat build-other.log

stage "AddressSanitizer + UndefinedBehaviorSanitizer build"
# The failover tests (label cluster: servers killed, leaders elected) and
# the history checker's schedules exercise timing across processes, which
# the normal build has just proven; under the sanitizers every other test
# runs, the etcd, PostgreSQL and Redis backends' own included.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest_args="-LE ^(cluster|history)$" run_suite build-asan -DFAUCET_SANITIZE=ON

# A long file-store batch commits each group on a second thread while the
# next is written (faucet__durable_stream): the tests that drive it, under
# ThreadSanitizer, which fails them on any data race.
stage "ThreadSanitizer build (file-store batches)"
tsan_tests="test_durability test_file_store test_file_faults"
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFAUCET_WERROR=ON -DFAUCET_TSAN=ON \
  >/dev/null
cmake --build build-tsan -j"$jobs" --target $tsan_tests >/dev/null
(cd build-tsan && TSAN_OPTIONS=halt_on_error=1:abort_on_error=1 \
  ctest --output-on-failure -R "^($(echo $tsan_tests | tr ' ' '|'))\$") || failed

# The binding again, over the sanitized library: a struct declared in
# bindings/python/faucet/_ffi.py that no longer matches its header makes
# the library write past the end of what Python allocated, which ASan sees
# once Python allocates with malloc.  (Leak detection stays off: the
# interpreter does not free everything at exit.)
stage "Python binding over the ASan/UBSan library"
LD_PRELOAD="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)" \
  PYTHONMALLOC=malloc ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 FAUCET_LIBRARY=build-asan/libfaucet.so \
  /usr/bin/python3 -m pytest -q -p no:cacheprovider bindings/python/tests || failed

# Coverage-guided fuzzing (tests/fuzz/): a clang build whose ctest tests
# each fuzz one parser for FAUCET_FUZZ_SECONDS (20 s) and fail on any crash,
# leak, sanitizer report or broken property.  install-deps.sh installs clang
# and libFuzzer, so CI always runs it; elsewhere it is skipped when missing.
fuzzer_available() {
  local probe
  command -v clang-14 >/dev/null 2>&1 || return 1
  probe=$(mktemp -d) || return 1
  printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
    'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);' \
    'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }' \
    >"$probe/probe.c"
  clang-14 -fsanitize=fuzzer,address,undefined "$probe/probe.c" -o "$probe/probe" >/dev/null 2>&1
  local rc=$?
  rm -rf "$probe"
  return $rc
}

stage "libFuzzer build (clang 14)"
if fuzzer_available; then
  cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang-14 \
    -DFAUCET_WERROR=ON -DFAUCET_FUZZ=ON >/dev/null
  cmake --build build-fuzz -j"$jobs" --target fuzz_targets
  (cd build-fuzz && ctest --output-on-failure -j"$jobs") || failed
elif [ "${CI:-}" = "true" ]; then
  echo "clang-14 with libFuzzer is missing although install-deps.sh installs it" >&2
  failed
else
  echo "skipped: clang-14 with libFuzzer is not installed (scripts/install-deps.sh installs it)"
fi

stage ""
echo "-- the whole run: $SECONDS s"
if [ "$status" -ne 0 ]; then
  echo "== FAILED =="
  printf '  %s\n' "${failed[@]}"
fi
exit $status
