#!/bin/bash
# The demo: the Kudu service-queue cascade recorded, reported and fixed.
# Runs svcqueue with a node allocated per insert under the queue lock (the
# bug), prints mallock's report, runs the pre-allocated heap (the fix) and
# prints `mallock diff` of the two, beside the bare throughput of each
# (run without mallock, for the same duration, before recording).
#
# The whole cascade: svcqueue is linked with tcmalloc,
# and TCMALLOC_TRANSFER_NUM_OBJ=1 makes every thread-cache refill and
# release of the node's size class go to tcmalloc's central free list,
# under its lock; a churn pair (one thread mallocs blocks of that size
# class, another frees them) contends for that lock. So the queue lock's
# holders wait on the allocator's own lock while they hold the queue lock,
# and the report shows that link (the settings of the svcqueue_cascade
# ground truth, tests/testapps/ground_truth.py).
set -euo pipefail
BUILD=${1:-build}
BIN=$BUILD/bin
OUT=${MALLOCK_DEMO_DIR:-$BUILD/demo}
DURATION=${DEMO_DURATION:-3}
mkdir -p "$OUT"
rm -f "$OUT"/tree.trace "$OUT"/heap.trace
APP=(--producers 2 --consumers 2 --allocs-per-put 4 --churn-threads 1
     --duration "$DURATION")
export TCMALLOC_TRANSFER_NUM_OBJ=1

# Requests per second of one bare run (svcqueue prints "Reqs/sec: N").
bare_rps()
{
	"$BIN"/svcqueue --container="$1" "${APP[@]}" |
		awk '/^Reqs\/sec:/ { print $2 }'
}

echo "== bare throughput, no recording (${DURATION} s each, TCMALLOC_TRANSFER_NUM_OBJ=1, one churn pair)"
TREE_RPS=$(bare_rps tree)
HEAP_RPS=$(bare_rps heap)
printf '  tree (the bug): %10s req/s\n  heap (the fix): %10s req/s\n' \
	"$TREE_RPS" "$HEAP_RPS"
echo
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
awk -v t="$TREE_RPS" -v h="$HEAP_RPS" 'BEGIN {
	printf "== bare throughput beside the diff: tree %d req/s, heap %d req/s", t, h
	if (t > 0)
		printf " (the fix: %.2f x)", h / t
	printf "\n"
}'
echo
echo "== the same trace for the tools people already use"
"$BIN"/mallock report --format=pprof --metric=wait -o "$OUT"/tree.wait.pb.gz "$OUT"/tree.trace
"$BIN"/mallock report --format=pprof --metric=caused -o "$OUT"/tree.caused.pb.gz "$OUT"/tree.trace
# The fixed run's profiles too, for pprof's -diff_base.
"$BIN"/mallock report --format=pprof --metric=wait -o "$OUT"/heap.wait.pb.gz "$OUT"/heap.trace
"$BIN"/mallock report --format=pprof --metric=caused -o "$OUT"/heap.caused.pb.gz "$OUT"/heap.trace
"$BIN"/mallock report --format=perfetto -o "$OUT"/tree.pftrace "$OUT"/tree.trace
"$BIN"/mallock report --format=html -o "$OUT"/tree.html "$OUT"/tree.trace
echo "pprof:    go tool pprof -http=: $OUT/tree.wait.pb.gz   (and tree.caused.pb.gz)"
echo "          the fix against the bug: go tool pprof -top -diff_base=$OUT/tree.wait.pb.gz $OUT/heap.wait.pb.gz"
echo "Perfetto: open $OUT/tree.pftrace in https://ui.perfetto.dev"
echo "HTML report: $(realpath "$OUT"/tree.html)"
