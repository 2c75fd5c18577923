#!/bin/sh
# run_all.sh BUILD_DIR [--quick] [--only SECTIONS] [--reps N] [--out FILE]
#
# mallock's benchmark suite: per-event cost, throughput kept,
# fidelity, scaling, trace size, analyzer speed, db_bench, compression on
# vs off, with heaptrack (and valgrind drd for locks) measured side by side
# in one invocation. Writes docs/performance.md and prints the tables. A
# full run took 14 minutes on 2 loaded cores (--reps 7), --quick 2 (plus
# under 2 for section 8, the compression A/B: `--quick --only 8`), pinned to
# the last CPU (--pin CPUS, --pin none). Run it on a quiet machine.
# The work is done by bench/run_all.py (python3, standard library only).
set -eu
[ $# -ge 1 ] || { sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
py=$(command -v python3 || true)
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
[ -n "$py" ] || { echo "run_all.sh: python3 is needed" >&2; exit 1; }
exec "$py" "$here/run_all.py" "$@"
