#!/bin/sh
# Installs the Debian packages mallock needs to build, test and run its demo.
# Idempotent: when every package is present it only checks and returns.
set -eu
PKGS="build-essential cmake pkg-config g++ clang libclang-rt-14-dev python3 \
libgoogle-perftools-dev libunwind-dev uthash-dev libdw-dev libelf-dev zlib1g-dev libzstd-dev gdb \
clang-format-14 pandoc"
# --test-tools: also the tools the output-format tests read mallock's pprof,
# Perfetto and HTML files with (each test installs its own when missing).
[ "${1:-}" = "--test-tools" ] && PKGS="$PKGS golang-go protobuf-compiler chromium"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' \
    || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "install-deps: installing:$missing"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
