#!/bin/bash
# The demo: the Kudu service-queue cascade recorded, reported and fixed.
# Runs svcqueue with a node allocated per insert under the queue lock (the
# bug), prints mallock's report, runs the pre-allocated heap (the fix) and
# prints `mallock diff` of the two.
set -euo pipefail
BUILD=${1:-build}
BIN=$BUILD/bin
OUT=${MALLOCK_DEMO_DIR:-$BUILD/demo}
DURATION=${DEMO_DURATION:-3}
mkdir -p "$OUT"
rm -f "$OUT"/tree.trace "$OUT"/heap.trace
APP=(--producers 2 --consumers 2 --allocs-per-put 4 --duration "$DURATION")

echo "== svcqueue --container=tree: a node allocated per insert, under the queue lock"
"$BIN"/mallock record -o "$OUT"/tree.trace -- "$BIN"/svcqueue --container=tree "${APP[@]}"
echo
"$BIN"/mallock report --top 3 "$OUT"/tree.trace
echo
echo "== svcqueue --container=heap: a pre-allocated heap, no allocation under the lock"
"$BIN"/mallock record -o "$OUT"/heap.trace -- "$BIN"/svcqueue --container=heap "${APP[@]}"
echo
echo "== mallock diff tree heap"
"$BIN"/mallock diff "$OUT"/tree.trace "$OUT"/heap.trace
echo
echo "== the same trace for the tools people already use (issue 14)"
"$BIN"/mallock report --format=pprof --metric=wait -o "$OUT"/tree.wait.pb.gz "$OUT"/tree.trace
"$BIN"/mallock report --format=pprof --metric=caused -o "$OUT"/tree.caused.pb.gz "$OUT"/tree.trace
"$BIN"/mallock report --format=perfetto --lock=svcqueue.lock --to=0.5 -o "$OUT"/tree.pftrace "$OUT"/tree.trace
"$BIN"/mallock report --format=html -o "$OUT"/tree.html "$OUT"/tree.trace
echo "pprof:    go tool pprof -http=: $OUT/tree.wait.pb.gz   (and tree.caused.pb.gz)"
echo "Perfetto: open $OUT/tree.pftrace in https://ui.perfetto.dev"
echo "HTML report: $(realpath "$OUT"/tree.html)"
