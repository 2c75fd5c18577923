#!/bin/bash
# usage: tests/tooling/suite_bar.sh N [busy]
#
# The suite's bar: the README's test command (make test, warnings as
# errors) N times in this clone, each run judged by CI's verdict
# (.ci/ctest_verdict.py with .ci/allowed-skips, every registered test
# run). With busy, two busy loops of its own run beside the suite for the
# whole time. One line a run, then "K of N passed"; each run's log and
# JUnit file stay in build/bar/. Exits 0 when every run passed.
set -uo pipefail
cd "$(dirname "$0")/../.."
n=${1:?usage: suite_bar.sh N [busy]}
mode=${2:-quiet}
case "$mode" in quiet | busy) ;; *)
	echo "suite_bar.sh: $mode: not quiet or busy" >&2
	exit 2
	;;
esac
mapfile -t allowed < <(grep -v -e '^#' -e '^$' .ci/allowed-skips)
loops=()
if [ "$mode" = busy ]; then
	for _ in 1 2; do
		(while :; do :; done) &
		loops+=($!)
	done
	trap 'kill "${loops[@]}" 2>/dev/null' EXIT
fi
mkdir -p build/bar
passed=0
for i in $(seq 1 "$n"); do
	log=build/bar/$mode-$i.log
	t0=$(date +%s)
	rm -f build/ctest-junit.xml
	make test CMAKE_FLAGS="-DMALLOCK_WERROR=ON" >"$log" 2>&1
	rc=$?
	t1=$(date +%s)
	rm -f "build/bar/$mode-$i.xml"
	cp build/ctest-junit.xml "build/bar/$mode-$i.xml" 2>/dev/null
	registered=$(ctest --test-dir build -N | sed -n 's/^Total Tests: //p')
	verdict=$(python3 .ci/ctest_verdict.py "build/bar/$mode-$i.xml" \
		"${registered:-1}" "${allowed[@]}" 2>&1)
	vrc=$?
	[ "$rc" = 0 ] && [ "$vrc" = 0 ] && passed=$((passed + 1))
	# What the JUnit file says beyond pass or fail: ground-truth cases
	# that recorded again because a run missed its precondition, and how
	# often calibration's recorded form was judged.
	extra=$(python3 - "build/bar/$mode-$i.xml" 2>/dev/null <<-'EOF'
		import re, sys, xml.etree.ElementTree as ET
		again, cal = {}, "calibration: no output"
		for tc in ET.parse(sys.argv[1]).getroot().iter("testcase"):
		    out = "".join(s.text or "" for s in tc.iter("system-out"))
		    k = out.count("precondition not met")
		    if k:
		        again[tc.get("name")] = k
		    if tc.get("name") == "analyzer_calibration":
		        m = re.search(r"tight check in [^\n]*", out)
		        cal = m.group(0) if m else cal
		print("recorded again:", again or "none", "|", cal)
	EOF
	) || extra="no JUnit file to read"
	echo "run $i ($mode): make test $rc, verdict $vrc, $((t1 - t0)) s," \
		"load $(cut -d' ' -f1 /proc/loadavg); $extra"
	[ "$vrc" = 0 ] || printf '%s\n' "$verdict" | sed 's/^/    /'
done
echo "$passed of $n passed ($mode, $(git rev-parse --short HEAD))"
[ "$passed" = "$n" ]
