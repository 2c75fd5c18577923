#!/bin/bash
# floor_bench.sh OLD_BUILD NEW_BUILD [ROUNDS] - the shim's per-event cost and
# svcqueue's throughput kept, two builds side by side in one run (the before
# and after of a change), ROUNDS alternations (default 5):
#  1. shim_bench (NEW's binary) bare, under heaptrack, and under each build's
#     libmallock.so with MALLOCK_UNWIND libunwind, fp and none (depth 16):
#     best ns per pair;
#  2. svcqueue P/C 1/1 (NEW's binary), tree and heap, 1 s, pinned to one CPU
#     (taskset -c 1: both threads on one CPU, so that a run cannot flip
#     between the queue's contended and idle modes): the rate under each
#     configuration / the bare rate of the same alternation, median;
#     configurations: old, new, new with MALLOCK_TIME_EVERY=1, old and new
#     with MALLOCK_SAMPLE_BYTES=524288;
#  3. the same unpinned, new beside heaptrack (pinned, heaptrack's
#     interpreter shares the program's CPU and the program gets almost none).
set -eu
OLD=${1:?usage: floor_bench.sh OLD_BUILD NEW_BUILD [ROUNDS]}
NEW=${2:?usage: floor_bench.sh OLD_BUILD NEW_BUILD [ROUNDS]}
ROUNDS=${3:-5}
for f in "$OLD/lib/libmallock.so" "$NEW/lib/libmallock.so" \
	"$NEW/bin/shim_bench" "$NEW/bin/svcqueue"; do
	[ -e "$f" ] || { echo "floor_bench.sh: $f not built" >&2; exit 1; }
done
OLD=$(cd "$OLD" && pwd)
NEW=$(cd "$NEW" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT INT TERM
APP=$NEW/bin/svcqueue

shim_env() { # shim_env CONFIG: the environment of a configuration
	case $1 in
	bare) ;;
	old) echo "LD_PRELOAD=$OLD/lib/libmallock.so MALLOCK_OUTPUT=$TMP/t.trace" ;;
	new) echo "LD_PRELOAD=$NEW/lib/libmallock.so MALLOCK_OUTPUT=$TMP/t.trace" ;;
	new1) echo "LD_PRELOAD=$NEW/lib/libmallock.so MALLOCK_TIME_EVERY=1" \
		"MALLOCK_OUTPUT=$TMP/t.trace" ;;
	olds) echo "LD_PRELOAD=$OLD/lib/libmallock.so" \
		"MALLOCK_SAMPLE_BYTES=524288 MALLOCK_OUTPUT=$TMP/t.trace" ;;
	news) echo "LD_PRELOAD=$NEW/lib/libmallock.so" \
		"MALLOCK_SAMPLE_BYTES=524288 MALLOCK_OUTPUT=$TMP/t.trace" ;;
	esac
}

rate() { # rate CONFIG CONTAINER PIN: svcqueue's Reqs/sec
	if [ "$1" = heaptrack ]; then
		heaptrack -o "$TMP/ht" "$APP" --container="$2" --duration=1 \
			2>/dev/null | awk '/^Reqs\/sec/ { print $2 }'
	else
		# shellcheck disable=SC2046 # the words of shim_env are meant
		env $(shim_env "$1") $3 "$APP" --container="$2" --duration=1 \
			2>/dev/null | awk '/^Reqs\/sec/ { print $2 }'
	fi
	rm -rf "$TMP"/t.trace* "$TMP"/ht*
}

i=0
while [ $i -lt "$ROUNDS" ]; do
	"$NEW/bin/shim_bench" | sed 's/^/bare - /' >>"$TMP/bench"
	heaptrack -o "$TMP/ht" "$NEW/bin/shim_bench" 2>/dev/null |
		grep -E '^(malloc_free|lock_unlock)' |
		sed 's/^/heaptrack - /' >>"$TMP/bench"
	rm -rf "$TMP"/ht*
	for b in old new; do
		for u in libunwind fp none; do
			# shellcheck disable=SC2046
			env $(shim_env $b) MALLOCK_UNWIND=$u MALLOCK_STACK_DEPTH=16 \
				"$NEW/bin/shim_bench" | sed "s/^/$b $u /" >>"$TMP/bench"
			rm -f "$TMP"/t.trace*
		done
	done
	for c in tree heap; do
		bare=$(rate bare $c "taskset -c 1")
		for cfg in old new new1 olds news; do
			echo "pinned $c $cfg $(rate $cfg $c "taskset -c 1") $bare" \
				>>"$TMP/kept"
		done
		bare=$(rate bare $c "")
		echo "free $c new $(rate new $c "") $bare" >>"$TMP/kept"
		echo "free $c heaptrack $(rate heaptrack $c "") $bare" >>"$TMP/kept"
	done
	i=$((i + 1))
done

echo "shim_bench, best ns per pair of $ROUNDS (bare: absolute; others: added)"
awk '{ k = $1 " " $2 " " $3; if (!(k in b) || $4 < b[k]) b[k] = $4 }
END {
	split("malloc_free_64 malloc_free_4096 lock_unlock", pair, " ")
	printf "%-18s %8s", "pair", "bare"
	split("old:libunwind new:libunwind old:fp new:fp old:none new:none heaptrack:-", c, " ")
	for (j = 1; j <= 7; j++) printf " %13s", c[j]
	printf "\n"
	for (p = 1; p <= 3; p++) {
		bare = b["bare - " pair[p]]
		printf "%-18s %8.1f", pair[p], bare
		for (j = 1; j <= 7; j++) {
			split(c[j], bu, ":")
			printf " %+13.1f", b[bu[1] " " bu[2] " " pair[p]] - bare
		}
		printf "\n"
	}
}' "$TMP/bench"
echo "svcqueue P/C 1/1, rate kept (tool / bare of the same alternation): median [min..max] of $ROUNDS"
awk '{ k = $1 " " $2 " " $3; v[k] = v[k] " " ($5 > 0 ? $4 / $5 : 0) }
END {
	for (k in v) {
		n = split(substr(v[k], 2), a, " ")
		for (i = 1; i <= n; i++)
			for (j = i + 1; j <= n; j++)
				if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		printf "%-24s %.3f [%.3f..%.3f]\n", k, a[int((n + 1) / 2)], a[1], a[n]
	}
}' "$TMP/kept" | sort
