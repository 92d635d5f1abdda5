#!/usr/bin/env bash
# Install every Debian package the build, the tests and the benchmarks need,
# when it is missing.  Safe to run again; does nothing when all are present.
#
#   scripts/install-deps.sh                    what the build, tests and CI need
#   scripts/install-deps.sh --original-bench   and the crate sources that
#       bench/original.sh builds the original Rust store against (opt-in: CI
#       does not install them; rustc >= 1.89 and cargo are not Debian 12's
#       and must already be on PATH)
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libjson-c-dev libyaml-dev libssl-dev libcmocka-dev
  libsqlite3-dev libpq-dev libhiredis-dev
  postgresql redis-server
  etcd-server etcd-client libcurl4-openssl-dev curl
  python3 tzdata util-linux procps bsdutils zsh fish
  python3-cffi python3-pytest python3-setuptools python3-wheel python3-pip python3-venv
  chromium chromium-driver python3-selenium
  clang-14 libclang-rt-14-dev libfuzzer-14-dev
  abigail-tools
  libmicrohttpd-dev wrk
)

# The crates the original faucet_core's state.rs and state_key.rs use, as
# Debian source packages (into /usr/share/cargo/registry; each provides
# every feature of its crate that Debian can build).
original_bench_packages=(
  librust-async-trait-dev librust-serde-dev librust-serde-derive-dev
  librust-serde-json-dev librust-sha2-dev librust-tokio-dev
  librust-tokio-macros-dev librust-tracing-dev librust-uuid-dev
  librust-tempfile-dev
)
for arg in "$@"; do
  case "$arg" in
    --original-bench) packages+=("${original_bench_packages[@]}") ;;
    *) echo "usage: $0 [--original-bench]" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
