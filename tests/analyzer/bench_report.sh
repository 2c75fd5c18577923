#!/bin/sh
# bench_report.sh - the analyzer's speed benchmark (not a timed test):
# writes a steady-state synthetic trace of EVENTS events (default 50M) with
# mktrace, then times `mallock report` on it and prints events per second
# and peak RSS. A second run on a trace half as long shows that peak memory
# does not grow with trace length.
#
#   tests/analyzer/bench_report.sh [BUILD_DIR] [EVENTS]
#
# If heaptrack is installed and HEAPTRACK_TRACE names a heaptrack trace of
# the same program, heaptrack_print is timed on it for comparison.
set -eu
BUILD=${1:-build}
EVENTS=${2:-50000000}
MALLOCK=$BUILD/bin/mallock
MKTRACE=$BUILD/tests/analyzer/mktrace
DIR=$(mktemp -d /tmp/mallock-bench.XXXXXX)
trap 'rm -rf "$DIR"' EXIT

run() { # run NAME FILE: prints events/s and peak RSS of mallock report
	/usr/bin/time -f '%e %M' -o "$DIR/time" \
		"$MALLOCK" report --format=json --no-symbols "$2" >"$DIR/out.json"
	read -r secs kb <"$DIR/time"
	ev=$(python3 -c "import json;print(json.load(open('$DIR/out.json'))['trace']['events'])")
	python3 -c "
ev, s, kb = $ev, $secs, $kb
print('%-6s %11d events %6.2f s %7.1f M events/s  peak RSS %6.1f MB  (%s)'
      % ('$1', ev, s, ev / max(s, 1e-3) / 1e6, kb / 1024, '$(du -h "$2" | cut -f1)'))"
}

"$MKTRACE" big "$DIR/big.trace" --events "$EVENTS" --threads 8 2>/dev/null
"$MKTRACE" big "$DIR/half.trace" --events $((EVENTS / 2)) --threads 8 2>/dev/null
echo "mallock report (one core, no symbolization; $(nproc) cores here):"
run full "$DIR/big.trace"
run half "$DIR/half.trace"
if [ -n "${HEAPTRACK_TRACE:-}" ] && command -v heaptrack_print >/dev/null; then
	/usr/bin/time -f '%e s, peak RSS %M KB' heaptrack_print "$HEAPTRACK_TRACE" >/dev/null
fi
