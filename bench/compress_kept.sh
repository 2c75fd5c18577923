#!/bin/bash
# svcqueue pinned to CPU 1, N alternations of 1 s runs: bare, the shim
# writing raw chunks (MALLOCK_COMPRESS=0) and compressing them with zstd
# level 1 in the flushing thread (MALLOCK_COMPRESS=1). Prints per run:
# alternation, mode, req/s, trace bytes, events (docs/performance.md,
# "Trace bytes and the analyzer on a real server's window").
# usage: bench/compress_kept.sh [BUILD] [N] [tree|heap]
set -u
B=${1:-build}; N=${2:-5}; C=${3:-tree}
T=$(mktemp -d); trap 'rm -rf $T' EXIT
for i in $(seq "$N"); do
  for mode in bare off on; do
    rm -f $T/t.trace
    if [ $mode = bare ]; then
      r=$(taskset -c 1 $B/bin/svcqueue --container=$C --duration=1 | awk '/Reqs\/sec/{print $2}')
      echo "$i $mode $r 0 0"; continue
    fi
    z=0; [ $mode = on ] && z=1
    r=$(MALLOCK_COMPRESS=$z taskset -c 1 $B/bin/mallock record -o $T/t.trace --no-compress -- \
        $B/bin/svcqueue --container=$C --duration=1 2>/dev/null | awk '/Reqs\/sec/{print $2}')
    ev=$($B/bin/mallock report --format json --no-symbols $T/t.trace 2>/dev/null |
         python3 -c "import json,sys; print(json.load(sys.stdin)['traces'][0]['events'])")
    echo "$i $mode $r $(stat -c %s $T/t.trace) $ev"
  done
done
