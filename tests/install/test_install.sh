#!/usr/bin/env bash
# test_install.sh - `cmake --install` gives an embedder everything it needs:
# the headers (with the generated version.h), the shared and static
# libraries, faucet.pc, the CMake package, the command (and its man page
# when doc/faucet.1 exists).  A small consumer (tests/install/consumer/) is
# built against the installed prefix with pkg-config and with
# find_package(faucet CONFIG), each against the shared and the static
# library, and run.
#   usage: test_install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
cc=${CC:-cc}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

fail() { echo "FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" >/dev/null
for f in include/faucet/faucet.h include/faucet/export.h include/faucet/version.h \
         include/faucet/sys/store_backend.h lib/libfaucet.so lib/libfaucet.so.1 lib/libfaucet.a \
         lib/pkgconfig/faucet.pc lib/cmake/faucet/faucetConfig.cmake \
         lib/cmake/faucet/faucetConfigVersion.cmake lib/cmake/faucet/faucetTargets.cmake bin/faucet; do
  [ -e "$prefix/$f" ] || fail "cmake --install did not install $f"
done
[ ! -e "$prefix/include/faucet/version.h.in" ] || fail "the version.h template was installed"
if [ -f "$src/doc/faucet.1" ]; then
  [ -f "$prefix/share/man/man1/faucet.1" ] || fail "the man page was not installed"
fi
"$prefix/bin/faucet" --version | grep -q "^faucet $("$prefix/bin/faucet" --version | cut -d' ' -f2)$" ||
  fail "the installed faucet does not run"

# Run a consumer with nothing but its own rpath to find the library.
run() {
  local out
  out=$(env -u LD_LIBRARY_PATH "$1") || fail "$1 failed"
  case $out in
    "consumer ok: libfaucet "*'{"cursor":18446744073709551615}') ;;
    *) fail "$1 printed '$out'" ;;
  esac
}

# pkg-config, shared and static.
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
pkg-config --exists faucet || fail "pkg-config does not find faucet"
$cc -std=c11 -Wall -Wextra -Werror "$src/tests/install/consumer/consumer.c" \
  $(pkg-config --cflags faucet) $(pkg-config --libs faucet) -Wl,-rpath,"$prefix/lib" \
  -o "$work/pc_shared"
run "$work/pc_shared"
libs=$(pkg-config --static --libs faucet)
$cc -std=c11 -Wall -Wextra -Werror "$src/tests/install/consumer/consumer.c" \
  $(pkg-config --cflags faucet) ${libs/-lfaucet/-l:libfaucet.a} -o "$work/pc_static"
run "$work/pc_static"
if ldd "$work/pc_static" | grep -q libfaucet; then
  fail "the static consumer still loads libfaucet.so"
fi

# The CMake package, shared and static.
cmake -S "$src/tests/install/consumer" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_C_COMPILER="$cc" >/dev/null || fail "find_package(faucet CONFIG) failed"
cmake --build "$work/cmake" >/dev/null || fail "the CMake consumer did not build"
run "$work/cmake/consumer_shared"
run "$work/cmake/consumer_static"
if ldd "$work/cmake/consumer_static" | grep -q libfaucet; then
  fail "faucet::faucet_static links libfaucet.so"
fi
echo "ok: installed, and consumed through pkg-config and find_package, shared and static"
