#!/bin/sh
# analyzer_speed.sh - events per second and peak RSS of `mallock report`
# on one big trace, for one build or two side by side (not a timed test).
#
#   bench/analyzer_speed.sh [-r REPS] [-t TRACE] [-a "REPORT ARGS"] BUILD [BUILD2]
#
# Without -t, records a bundled app first: `svcqueue --container=tree
# --churn-threads=1 --duration=1` under BUILD's `mallock record` (about
# 24M events, 55 MB, on the 2-core VM; the trace is kept in a temporary
# directory). Each
# repetition runs BUILD then BUILD2 on the same trace (alternated, so that
# a change of load on a shared machine falls on both), timed by
# /usr/bin/time; every run is printed, then the medians. events/s is
# given per wall second and per CPU second (user + system): on a loaded
# machine the CPU figure is the steadier one. With two builds
# the JSON reports are compared with cmp: the two must be byte-identical.
# REPORT ARGS default to --format=json (symbolized, as a user runs it).
set -eu
REPS=3
TRACE=
ARGS=--format=json
while getopts r:t:a: o; do
	case $o in
	r) REPS=$OPTARG ;;
	t) TRACE=$OPTARG ;;
	a) ARGS=$OPTARG ;;
	*) sed -n 4,5p "$0" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { sed -n 4,5p "$0" >&2; exit 2; }
BUILDS="$*"
DIR=$(mktemp -d /tmp/mallock-anspeed.XXXXXX)
trap 'rm -rf "$DIR"' EXIT

if [ -z "$TRACE" ]; then
	B1=$1
	TRACE=$DIR/svcqueue.trace
	"$B1/bin/mallock" record -o "$TRACE" -- "$B1/bin/svcqueue" \
		--container=tree --churn-threads=1 --duration=1 >/dev/null 2>&1
fi
echo "trace: $TRACE ($(stat -c %s "$TRACE") bytes); report args: $ARGS"
echo "$(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"

events=
n=0
for b in $BUILDS; do
	n=$((n + 1))
	: >"$DIR/res.$n"
done
rep=1
while [ "$rep" -le "$REPS" ]; do
	n=0
	for b in $BUILDS; do
		n=$((n + 1))
		# shellcheck disable=SC2086 # ARGS is a list of options
		/usr/bin/time -f '%e %U %S %M' -o "$DIR/time" "$b/bin/mallock" \
			report $ARGS --no-progress "$TRACE" >"$DIR/out.$n" \
			2>"$DIR/err.$n" || {
			echo "$b: mallock report failed:" >&2
			cat "$DIR/err.$n" >&2
			exit 1
		}
		if [ -z "$events" ]; then
			events=$(python3 -c "import json,sys;print(json.load(open(sys.argv[1]))['trace']['events'])" "$DIR/out.$n" 2>/dev/null ||
				"$b/bin/mallock" report --format=json --no-symbols \
					--no-progress "$TRACE" | python3 -c \
					"import json,sys;print(json.load(sys.stdin)['trace']['events'])")
			echo "events: $events"
		fi
		read -r wall usr sys kb <"$DIR/time"
		cpu=$(echo "$usr + $sys" | bc -l)
		eps=$(echo "$events / $wall" | bc -l)
		cps=$(echo "$events / $cpu" | bc -l)
		printf 'rep %d  %-28s %6.2f s wall %6.2f s CPU  %6.2fM events/s (wall) %6.2fM (CPU)  max RSS %7.1f MB\n' \
			"$rep" "$b" "$wall" "$cpu" "$(echo "$eps / 1000000" | bc -l)" \
			"$(echo "$cps / 1000000" | bc -l)" "$(echo "$kb / 1024" | bc -l)"
		echo "$eps $kb $cps" >>"$DIR/res.$n"
	done
	if [ "$n" -ge 2 ]; then
		if cmp -s "$DIR/out.1" "$DIR/out.2"; then
			echo "rep $rep  reports identical (cmp)"
		else
			cp "$DIR/out.1" "$DIR/out.1.rep$rep"
			cp "$DIR/out.2" "$DIR/out.2.rep$rep"
			echo "rep $rep  REPORTS DIFFER (cmp $DIR/out.1.rep$rep $DIR/out.2.rep$rep)"
			trap - EXIT
		fi
	fi
	rep=$((rep + 1))
done

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
n=0
for b in $BUILDS; do
	n=$((n + 1))
	eps=$(cut -d' ' -f1 "$DIR/res.$n" | median)
	kb=$(cut -d' ' -f2 "$DIR/res.$n" | median)
	cps=$(cut -d' ' -f3 "$DIR/res.$n" | median)
	printf 'median %-28s %6.2fM events/s (wall) %6.2fM (CPU)  max RSS %7.1f MB\n' \
		"$b" "$(echo "$eps / 1000000" | bc -l)" \
		"$(echo "$cps / 1000000" | bc -l)" "$(echo "$kb / 1024" | bc -l)"
done
