#!/bin/sh
# server_bench.sh BUILD_DIR [ROUNDS] [SECONDS] - the throughput of svcqueue
# (tree variant, --producers 1 --consumers 1) bare, under libmallock.so
# started paused (MALLOCK_START=paused, never switched on), and under the
# shim sampling at 512 KiB (MALLOCK_SAMPLE_BYTES=524288), side by side in
# one run: the three configurations alternate ROUNDS times (default 7), each
# run lasts SECONDS (default 2); prints the median requests/s of each and
# its cost against bare. Targets: paused <= 3%, sampling <= 10%.
set -eu
BUILD=${1:?usage: server_bench.sh BUILD_DIR [ROUNDS] [SECONDS]}
ROUNDS=${2:-7}
SECS=${3:-2}
APP=$BUILD/bin/svcqueue
SHIM=$(cd "$BUILD/lib" && pwd)/libmallock.so
[ -x "$APP" ] || { echo "server_bench.sh: $APP not built" >&2; exit 1; }
[ -f "$SHIM" ] || { echo "server_bench.sh: $SHIM not built" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT INT TERM
ARGS="--container=tree --producers=1 --consumers=1 --duration=$SECS"

run() { # run CONFIG: appends "CONFIG REQS_PER_S" to $TMP/all
	cfg=$1
	case $cfg in
	bare) "$APP" $ARGS ;;
	paused) LD_PRELOAD=$SHIM MALLOCK_START=paused MALLOCK_CTL_DIR=$TMP/ctl \
		MALLOCK_OUTPUT=$TMP/t.trace "$APP" $ARGS ;;
	sample512k) LD_PRELOAD=$SHIM MALLOCK_SAMPLE_BYTES=524288 \
		MALLOCK_CTL_DIR=$TMP/ctl MALLOCK_OUTPUT=$TMP/t.trace "$APP" $ARGS ;;
	esac | awk -v c="$cfg" '/^Reqs\/sec:/ { print c, $2 }' >>"$TMP/all"
	rm -f "$TMP"/t.trace*
}

CONFIGS="bare paused sample512k"
i=0
while [ $i -lt "$ROUNDS" ]; do
	for c in $CONFIGS; do run $c; done
	i=$((i + 1))
done

echo "svcqueue $ARGS, $ROUNDS rounds, median requests/s"
for c in $CONFIGS; do
	grep "^$c " "$TMP/all" | awk '{ print $2 }' | sort -n |
		awk -v c="$c" '{ v[NR] = $1 } END {
			m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "%s %.0f %.0f %.0f\n", c, m, v[1], v[NR] }'
done | awk '
{ name[NR] = $1; med[NR] = $2; lo[NR] = $3; hi[NR] = $4 }
END {
	printf "%-12s %12s %12s %12s %8s\n", "config", "median", "min", "max", "cost"
	for (i = 1; i <= NR; i++) {
		cost = i == 1 ? "" : sprintf("%.1f%%", 100 * (1 - med[i] / med[1]))
		printf "%-12s %12.0f %12.0f %12.0f %8s\n", name[i], med[i], lo[i], hi[i], cost
	}
}'
