#!/bin/bash
# `make bench`: every benchmark, side by side in one run; writes docs/performance.md.
set -euo pipefail
BUILD=${1:-build}
shift || true
exec "$(dirname "$0")/../bench/run_all.sh" "$BUILD" "$@"
