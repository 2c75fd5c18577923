#!/bin/sh
# tests/fuzz/run.sh BUILD_DIR SECONDS [JOBS] - fuzz the analyzer.
#
# Configures BUILD_DIR as a clang build with -DMALLOCK_FUZZ=ON (when it is
# not one yet), builds tests/fuzz/fuzz_report and the sanitized `mallock`,
# then runs libFuzzer for SECONDS seconds (over JOBS processes, default 1)
# from the checked-in seeds (tests/fuzz/corpus/) into a working corpus
# (BUILD_DIR/fuzz-corpus/, kept between runs). Afterwards the seeds, the
# inputs this run added (up to 400) and every crash are replayed through the
# command line, checking the contract: exit status 0 or 2 (or 1 for a trace
# of which no chunk could be read) and at most one line on stderr.
#
# Exit status: 0 when no crash, hang, leak, sanitizer report or contract
# violation was found; 1 otherwise (crash-*, leak-*, timeout-* files are left
# in BUILD_DIR/fuzz-artifacts/).
#
# CI:     tests/fuzz/run.sh build-fuzz 60
# Long:   tests/fuzz/run.sh build-fuzz 3600 2
set -eu
if [ $# -lt 2 ]; then
	echo "usage: $0 BUILD_DIR SECONDS [JOBS]" >&2
	exit 1
fi
BUILD=$1
SECONDS_=$2
JOBS=${3:-1}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
CC_=${CC:-$(command -v clang || command -v clang-14)}
CXX_=${CXX:-$(command -v clang++ || command -v clang++-14)}

if ! grep -q '^MALLOCK_FUZZ:BOOL=ON' "$BUILD/CMakeCache.txt" 2>/dev/null; then
	CC=$CC_ CXX=$CXX_ cmake -S "$SRC" -B "$BUILD" -DMALLOCK_FUZZ=ON \
		-DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$BUILD" -j "$(nproc)" --target fuzz_report mallock-cli >/dev/null

FUZZ=$BUILD/tests/fuzz/fuzz_report
CLI=$BUILD/bin/mallock
WORK=$BUILD/fuzz-corpus
ART=$BUILD/fuzz-artifacts
mkdir -p "$WORK" "$ART"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

status=0
touch "$BUILD/fuzz-stamp"
# -close_fd_mask=2: the analyzer's one-line errors stay off the terminal
# (libFuzzer and the sanitizers keep their own descriptor for reports).
# With JOBS > 1 libFuzzer runs JOBS worker processes, each logging to
# fuzz-N.log in the current directory: run them in BUILD_DIR.
FLAGS="-max_total_time=$SECONDS_ -timeout=10 -rss_limit_mb=2048 \
-malloc_limit_mb=512 -max_len=65536 -close_fd_mask=2 -print_final_stats=1 \
-artifact_prefix=$(cd "$ART" && pwd)/"
WORK_ABS=$(cd "$WORK" && pwd)
FUZZ_ABS=$(cd "$(dirname "$FUZZ")" && pwd)/$(basename "$FUZZ")
if [ "$JOBS" -gt 1 ]; then
	# shellcheck disable=SC2086
	(cd "$BUILD" && "$FUZZ_ABS" $FLAGS -jobs="$JOBS" -workers="$JOBS" \
		"$WORK_ABS" "$SRC/tests/fuzz/corpus" > fuzz.log 2>&1) || status=1
	cat "$BUILD"/fuzz-[0-9]*.log >> "$BUILD/fuzz.log" 2>/dev/null || true
	rm -f "$BUILD"/fuzz-[0-9]*.log
else
	# shellcheck disable=SC2086
	"$FUZZ_ABS" $FLAGS "$WORK_ABS" "$SRC/tests/fuzz/corpus" \
		> "$BUILD/fuzz.log" 2>&1 || status=1
fi
grep -E '^(stat::|#[0-9]+.*DONE)|ERROR|SUMMARY' "$BUILD/fuzz.log" | tail -20

# Replay: the contract through the command line, for the seeds, what this
# run added to the working corpus (at most 400 inputs) and any artifact.
bad=0
n=0
for f in "$SRC"/tests/fuzz/corpus/* "$ART"/* \
	$(find "$WORK" -type f -newer "$BUILD/fuzz-stamp" | head -400); do
	[ -f "$f" ] || continue
	n=$((n + 1))
	for args in "report --no-symbols" "dump --merged"; do
		rc=0
		# shellcheck disable=SC2086
		"$CLI" $args "$f" >/dev/null 2>"$BUILD/fuzz-stderr" || rc=$?
		lines=$(wc -l < "$BUILD/fuzz-stderr")
		# 1: a trace of which no chunk could be read, said so
		if [ $rc -eq 1 ] &&
			grep -q ': no chunk could be read: ' "$BUILD/fuzz-stderr"; then
			rc=0
		fi
		if { [ $rc -ne 0 ] && [ $rc -ne 2 ]; } || [ "$lines" -gt 1 ]; then
			echo "contract: mallock $args $f: exit $rc, $lines stderr lines" >&2
			head -5 "$BUILD/fuzz-stderr" >&2
			bad=1
		fi
	done
done
[ $bad -eq 0 ] || status=1
echo "fuzz: $(ls "$WORK" | wc -l) inputs in $WORK, $n replayed through $CLI;" \
	"status $status"
exit $status
