#!/bin/sh
# trace_bytes.sh OLD_BUILD NEW_BUILD ROUNDS [SVCQUEUE_ARGS...] - raw trace
# bytes per event of svcqueue (1 s) under two builds, alternated ROUNDS
# times: each records with MALLOCK_COMPRESS=0 and `mallock record
# --no-compress` (the bytes the shim writes, as a `ctl` window's) and
# prints its build's bench/trace_bytes summary line. Extra arguments go to
# svcqueue (--container=tree, --producers=2 ...). Environment passes
# through (MALLOCK_HOLD_EVERY=16 ...).
set -eu
OLD=${1:?usage: trace_bytes.sh OLD_BUILD NEW_BUILD ROUNDS [ARGS...]}
NEW=${2:?usage: trace_bytes.sh OLD_BUILD NEW_BUILD ROUNDS [ARGS...]}
ROUNDS=${3:?usage: trace_bytes.sh OLD_BUILD NEW_BUILD ROUNDS [ARGS...]}
shift 3
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT INT TERM
i=1
while [ $i -le "$ROUNDS" ]; do
	for B in "$OLD" "$NEW"; do
		T=$TMP/t.trace
		MALLOCK_COMPRESS=0 "$B/bin/mallock" record -o "$T" \
		    --no-compress -- "$B/bin/svcqueue" --duration=1 "$@" \
		    >/dev/null 2>&1
		echo "$B $i $("$B/bin/trace_bytes" "$T" | head -1 |
		    sed 's/.*raw (records inflated), //')"
		rm -f "$T"*
	done
	i=$((i + 1))
done
