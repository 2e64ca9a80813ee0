#!/usr/bin/env bash
# Installs what a fresh Debian bookworm machine lacks to build, test and demo stacksym:
#   scripts/setup.sh        everything (make test, test-sanitize, fuzz, bench)
#   scripts/setup.sh demo   only what `make demo` needs (a quarter of the download)
# Idempotent and quick when everything is present: dpkg is asked first, apt only when needed.
set -euo pipefail

# `setup.sh demo` (make demo): what building the `stacksym` command and running the demo need
# (its compilers, libraries and headers, clang for the BPF program and the workload, libc6-dbg
# for the demo's DWARF), plus the test frameworks that configuring the tree asks for (small).
DEMO_PACKAGES=(
  cmake ninja-build g++ make pkg-config
  zlib1g-dev libzstd-dev libisal-dev liblzma-dev libiberty-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang binutils libc6-dbg
  libbpf-dev bpftool
  libprotobuf-dev protobuf-compiler
  libdebuginfod-dev libcpp-httplib-dev
)
# `setup.sh` (make test and the rest): the tools the tests compare against and build fixtures
# with, on top of the demo's (python3-protobuf: a second protobuf implementation that decodes
# what the agent sends; golang-go, openjdk-17 and node: test programs for Go and JIT frames;
# openssl: the certificate of the agent's https test).
PACKAGES=(
  "${DEMO_PACKAGES[@]}"
  llvm llvm-16 libclang-rt-14-dev clang-format lld
  elfutils dwz
  dpkg-dev
  linux-perf
  debuginfod
  python3 python3-protobuf openssl
  golang-go openjdk-17-jdk-headless nodejs
)
# Large packages used by differential tests (librados2: libceph-common, a large C++ library
# for the unwind-table test; librados2-dbg: its DWARF, for the index's differential test),
# benchmarks (libbpf-tools: offcputime, for bench/off_cpu_overhead.py) and the flame graph
# browser test (chromium); wanted but not fatal.
OPTIONAL_PACKAGES=(python3.11-dbg bpftrace libbpf-tools chromium librados2 librados2-dbg)
if [[ ${1:-} == demo ]]; then
  PACKAGES=("${DEMO_PACKAGES[@]}")
  OPTIONAL_PACKAGES=()
fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
optional_missing=()
for p in "${OPTIONAL_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || optional_missing+=("$p")
done

if (( ${#missing[@]} + ${#optional_missing[@]} == 0 )); then
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
echo "setup: installing ${missing[*]} ${optional_missing[*]}" >&2
$SUDO apt-get update -qq
if (( ${#missing[@]} )); then
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
for p in "${optional_missing[@]}"; do
  $SUDO apt-get install -y -qq --no-install-recommends "$p" >/dev/null ||
    echo "setup: optional package $p could not be installed; tests that need it will skip" >&2
done
