#!/usr/bin/env bash
# Install every Debian package the build, the tests and the benchmarks need,
# when it is missing.  Safe to run again; does nothing when all are present.
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
