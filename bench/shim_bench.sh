#!/bin/sh
# shim_bench.sh BUILD_DIR [ROUNDS] - runs bench/shim_bench bare and under
# libmallock.so (libunwind depth 16, fp depth 16, none, and libunwind depth
# 16 with MALLOCK_COMPRESS=1, "comp": compression on vs the default off), alternating
# the configurations ROUNDS times (default 3), and prints the best ns per
# pair of each and the ns the shim adds over the bare run.
set -eu
BUILD=${1:?usage: shim_bench.sh BUILD_DIR [ROUNDS]}
ROUNDS=${2:-3}
BENCH=$BUILD/bin/shim_bench
SHIM=$(cd "$BUILD/lib" && pwd)/libmallock.so
[ -x "$BENCH" ] || { echo "shim_bench.sh: $BENCH not built" >&2; exit 1; }
[ -f "$SHIM" ] || { echo "shim_bench.sh: $SHIM not built" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT INT TERM

run() { # run CONFIG: appends "config name ns" lines to $TMP/all
	cfg=$1
	case $cfg in
	bare) "$BENCH" ;;
	libunwind) LD_PRELOAD=$SHIM MALLOCK_UNWIND=libunwind MALLOCK_STACK_DEPTH=16 \
		MALLOCK_OUTPUT=$TMP/t.trace "$BENCH" ;;
	fp) LD_PRELOAD=$SHIM MALLOCK_UNWIND=fp MALLOCK_STACK_DEPTH=16 \
		MALLOCK_OUTPUT=$TMP/t.trace "$BENCH" ;;
	comp) LD_PRELOAD=$SHIM MALLOCK_UNWIND=libunwind MALLOCK_STACK_DEPTH=16 \
		MALLOCK_COMPRESS=1 MALLOCK_OUTPUT=$TMP/t.trace "$BENCH" ;;
	none) LD_PRELOAD=$SHIM MALLOCK_UNWIND=none \
		MALLOCK_OUTPUT=$TMP/t.trace "$BENCH" ;;
	esac | sed "s/^/$cfg /" >>"$TMP/all"
	rm -f "$TMP"/t.trace*
}

CONFIGS="bare libunwind comp fp none"
i=0
while [ $i -lt "$ROUNDS" ]; do
	for c in $CONFIGS; do run $c; done
	i=$((i + 1))
done

awk -v configs="$CONFIGS" '
{ key = $1 " " $2; if (!(key in best) || $3 < best[key]) best[key] = $3; names[$2] = 1 }
END {
	n = split(configs, cfg, " ")
	printf "%-16s", "ns/pair"
	for (i = 1; i <= n; i++) printf " %10s", cfg[i]
	for (i = 2; i <= n; i++) printf " %10s", "+" cfg[i]
	printf "\n"
	split("malloc_free_16 malloc_free_64 malloc_free_512 malloc_free_4096 lock_unlock", order, " ")
	for (k = 1; k <= 5; k++) {
		name = order[k]
		printf "%-16s", name
		for (i = 1; i <= n; i++) printf " %10.1f", best[cfg[i] " " name]
		for (i = 2; i <= n; i++) printf " %10.1f", best[cfg[i] " " name] - best["bare " name]
		printf "\n"
	}
}' "$TMP/all"
