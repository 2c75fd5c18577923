#!/bin/sh
# Installs the Debian packages mallock needs to build, test and run its demo
# (README.md, "Dependencies", says what each is for).
# Idempotent: when every package is present it only checks and returns.
#
#   scripts/install-deps.sh               build (make build, make demo)
#   scripts/install-deps.sh --test-tools  also what the tests use (make test)
#   scripts/install-deps.sh --list [--test-tools]  print the packages only
set -eu
PKGS="build-essential cmake pkg-config g++ clang libclang-rt-14-dev python3 \
libgoogle-perftools-dev libunwind-dev uthash-dev libdw-dev libelf-dev zlib1g-dev libzstd-dev gdb \
libncurses-dev clang-format-14 pandoc"
# The tests' own tools and the programs they run, each for:
#   golang-go          analyzer_pprof reads the pprof files with go tool pprof
#   protobuf-compiler  analyzer_perfetto decodes the Perfetto file (protoc)
#   chromium           analyzer_html loads the HTML report headless
#   libjemalloc2       rel_allocators, rel_hostile_*_jemalloc: the shim over
#                      jemalloc
#   lintian            install_deb checks the .deb
#   man-db             install_tree renders the man pages (man -l)
#   rocksdb-tools sysbench memcached libmemcached-tools pigz xz-utils
#                      rel_real_programs_short records db_bench, sysbench,
#                      memcached under memcaslap, pigz and xz
#   mariadb-server     rel_mariadb_short (as root): MariaDB under sysbench
#   rsyslog            rel_rsyslog_cascade: rsyslogd over tcmalloc, the
#                      allocator cascade on a real server
#   tmux               server_top_screen: mallock top's screen driven in a
#                      pane (send-keys, capture-pane)
TEST_PKGS="golang-go protobuf-compiler chromium libjemalloc2 lintian man-db \
rocksdb-tools sysbench memcached libmemcached-tools pigz xz-utils \
mariadb-server rsyslog tmux"
list=0 tools=0
for a in "$@"; do
  case "$a" in
  --list) list=1 ;;
  --test-tools) tools=1 ;;
  *) echo "usage: $0 [--list] [--test-tools]" >&2; exit 2 ;;
  esac
done
[ $tools = 1 ] && PKGS="$PKGS $TEST_PKGS"
if [ $list = 1 ]; then
  echo $PKGS
  exit 0
fi
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' \
    || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "install-deps: installing:$missing"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
# Another apt-get (a second checkout's make) may hold dpkg's lock: wait.
APT="$SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600"
if [ $tools = 0 ]; then
  $APT update -qq
  $APT install -y -qq --no-install-recommends $missing
  exit 0
fi
# The test tools: a package that cannot be had here is not a build error;
# the tests that need it then skip, and `make test` lists them with why.
$APT update -qq || echo "install-deps: apt-get update failed"
if ! $APT install -y -qq --no-install-recommends $missing; then
  for p in $missing; do
    $APT install -y -qq --no-install-recommends "$p" >/dev/null 2>&1 ||
      echo "install-deps: could not install $p: the tests that need it will skip"
  done
fi
exit 0
