#!/bin/sh
# perobj_report.sh - the analyzer's memory on per-object locks (not a
# timed test): records bench/perobj_bench (a mutex inside every message,
# made, taken on two threads, destroyed and freed) for each message count
# in SIZES, then times `mallock report` on each trace with destroyed locks
# folded (the default) and with --no-fold (a record per lock, as before
# folding): seconds, peak RSS and the lock table's most records. Folded,
# peak RSS stays flat in the window's length.
#
#   bench/perobj_report.sh [BUILD_DIR] ["SIZES"]   (default build, "1000000 4000000")
set -eu
BUILD=${1:-build}
SIZES=${2:-"1000000 4000000"}
MALLOCK=$BUILD/bin/mallock
DIR=$(mktemp -d /tmp/mallock-perobj.XXXXXX)
trap 'rm -rf "$DIR"' EXIT

echo "mallock report on perobj_bench traces (one core, --no-symbols; $(nproc) cores here):"
for n in $SIZES; do
	"$MALLOCK" record -o "$DIR/p.trace" -- "$BUILD/bin/perobj_bench" "$n" 2 \
		>/dev/null 2>&1
	for mode in fold no-fold; do
		flag=; [ "$mode" = no-fold ] && flag=--no-fold
		/usr/bin/time -f '%e %M' -o "$DIR/time" "$MALLOCK" report \
			--format=json --no-symbols --stats $flag "$DIR/p.trace" \
			>"$DIR/out.json" 2>"$DIR/err"
		read -r secs kb <"$DIR/time"
		peak=$(sed -n 's/.*kept, \([0-9]*\) at most.*/\1/p' "$DIR/err")
		ev=$(python3 -c "import json;print(json.load(open('$DIR/out.json'))['trace']['events'])")
		printf '%8d messages %9d events %-8s %6.2f s  peak RSS %7.1f MB  lock records at most %d\n' \
			"$n" "$ev" "$mode" "$secs" "$(echo "$kb / 1024" | bc -l)" "$peak"
	done
done
