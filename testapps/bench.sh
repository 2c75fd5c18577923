#!/usr/bin/env bash
# bench.sh - runs every bundled test app's bug and fixed variants bare (no
# shim), alternating bug, fixed, bug, fixed... N times each, and prints the
# median with min..max of each app's metric, the fixed/bug gain, and the
# ratio the seed report published. docs/testapps.md explains each app.
#
# usage: testapps/bench.sh BUILD_DIR [-n REPS] [-d SECONDS] [-a ALLOC] [-o APP] [-v]
#   BUILD_DIR   a CMake build tree (its bin/ holds the apps)
#   -n REPS     repetitions of each variant (default 5)
#   -d SECONDS  --duration passed to every run (default 1)
#   -a ALLOC    tcmalloc (the <app> binaries, linked as MALLOCK_TESTAPP_ALLOCATOR
#               says), glibc (the <app>_glibc twins) or both (default both)
#   -o APP      only the cases whose name starts with APP
#   -v          print every run's value and the CPU other processes took
#
# Other processes skew these numbers (on 2 cores, one busy neighbour turns a
# lock-contended benchmark into a single-core one): a run during which they
# took more than a tenth of a CPU (from /proc/stat and bash's `times`) is
# redone once, within a budget of a quarter of all runs, and the table's
# "dist" column counts the disturbed runs it kept.
#
# A default run takes about 2.5 minutes on 2 cores (3 with every redo). Exit
# status: 0, or 1 if an app failed (its output is shown), 2 on bad usage.
set -euo pipefail

usage() {
	sed -n '7,14p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

[[ $# -ge 1 && $1 != -* ]] || usage
build=$1
shift
reps=5
duration=1
alloc=both
only=
verbose=0
while getopts "n:d:a:o:vh" o; do
	case $o in
	n) reps=$OPTARG ;;
	d) duration=$OPTARG ;;
	a) alloc=$OPTARG ;;
	o) only=$OPTARG ;;
	v) verbose=1 ;;
	*) usage ;;
	esac
done
[[ $reps =~ ^[1-9][0-9]*$ ]] || { echo "bench.sh: -n wants a positive integer" >&2; exit 2; }
[[ $duration =~ ^[0-9]*\.?[0-9]+$ ]] || { echo "bench.sh: -d wants seconds" >&2; exit 2; }
case $alloc in
tcmalloc) suffixes=("") ;;
glibc) suffixes=("_glibc") ;;
both) suffixes=("" "_glibc") ;;
*) echo "bench.sh: -a wants tcmalloc, glibc or both" >&2; exit 2 ;;
esac
bin=$build/bin
[[ -d $bin ]] || { echo "bench.sh: no $bin: build first" >&2; exit 2; }

# name | app | bug args | fixed args | metric line label | better (hi|lo) | seed | env
# (env: VAR=VALUE words set for both variants; tcmalloc reads TCMALLOC_*,
# glibc ignores them)
cases=(
	"svcqueue|svcqueue|--container=tree|--container=heap|Reqs/sec|hi|1.23-1.76x (8 cores)"
	"svcqueue_churn|svcqueue|--container=tree --churn-threads=1|--container=heap --churn-threads=1|Reqs/sec|hi|1.23-1.76x (8 cores)|TCMALLOC_TRANSFER_NUM_OBJ=1"
	"svcqueue_cxx|svcqueue_cxx|--container=tree|--container=heap|Reqs/sec|hi|1.23-1.76x (8 cores)"
	"xthread|xthread|--tasks=heap|--tasks=inline|Reqs/sec|hi|~1.00x (<1%, either way)"
	"batcher|batcher|--set=chained|--set=open|time per row|lo|1.27x (27% faster)"
	"reportqueue|reportqueue|--locking=nested|--locking=single|Reports/ms|hi|2.4x at 4 producers"
	"admission|admission|--policy=lifo|--policy=edf|Stddev/mean|lo|stddev/mean 0.67 -> 0.026 (25x)"
)

# metric FILE LABEL: the number after "LABEL: " (units dropped).
metric() {
	awk -F': ' -v l="$2" '$1 == l { print $2 + 0; exit }' "$1"
}

# CPU ticks (1/100 s) the whole machine spent busy, steal included.
busy_ticks() {
	awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 + $9; exit }' /proc/stat
}

# Sets cpu_children to the CPU seconds this shell's finished children used,
# from bash's `times`, which must run in this shell: a $(...) subshell's
# children start at zero.
children_cpu() {
	times >"$timesf"
	cpu_children=$(awk 'NR == 2 {
		n = split($0, f, " "); s = 0
		for (i = 1; i <= n; i++) { split(f[i], a, "m"); s += a[1] * 60 + a[2] }
		print s }' "$timesf")
}

# run_once OUT ENV EXE ARGS: runs the app once; returns 0 and sets
# foreign (CPU seconds other processes used meanwhile), or 1 if it failed.
run_once() {
	local o=$1 e=$2 x=$3 a=$4 b0 b1 c0
	children_cpu
	c0=$cpu_children
	b0=$(busy_ticks)
	# shellcheck disable=SC2086  # env and args are words on purpose
	env $e "$x" $a --duration="$duration" >"$o" 2>&1 || return 1
	b1=$(busy_ticks)
	children_cpu
	foreign=$(awk -v b0="$b0" -v b1="$b1" -v c0="$c0" -v c1="$cpu_children" \
		'BEGIN { f = (b1 - b0) / 100 - (c1 - c0); printf "%.2f", f < 0 ? 0 : f }')
}

# stats V...: "median min max" (median of an even count: mean of the middle two).
stats() {
	printf '%s\n' "$@" | sort -g | awk '
		{ v[NR] = $1 }
		END {
			m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "%s %s %s\n", m, v[1], v[NR]
		}'
}

fmt() { awk -v x="$1" 'BEGIN { printf (x >= 1000 ? "%.0f" : "%.4g"), x }'; }

# Other processes on the machine skew every number: say so.
load=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo 0)
if awk -v l="$load" 'BEGIN { exit !(l > 0.7) }'; then
	echo "bench.sh: warning: load average $load before the run: other work" \
		"is running, expect noisy numbers" >&2
fi

out=$(mktemp)
timesf=$(mktemp)
trap 'rm -f "$out" "$timesf"' EXIT
failed=0
redone=0
redo_budget=$((${#cases[@]} * ${#suffixes[@]} * reps * 2 / 4))
printf '%-14s %-8s %-13s %-28s %-28s %-8s %-5s %s\n' case alloc metric \
	"bug: median [min..max]" "fixed: median [min..max]" gain dist seed
for c in "${cases[@]}"; do
	IFS='|' read -r name app bug fix label better seed env <<<"$c"
	[[ -z $only || $name == "$only"* ]] || continue
	for sfx in "${suffixes[@]}"; do
		exe=$bin/$app$sfx
		if [[ ! -x $exe ]]; then
			echo "bench.sh: $exe missing, skipped" >&2
			continue
		fi
		an=glibc
		if command -v readelf >/dev/null; then
			readelf -d "$exe" | grep -q 'libtcmalloc' && an=tcmalloc
		elif [[ -z $sfx ]]; then
			an=tcmalloc
		fi
		bugv=() fixv=()
		dist=0
		for ((i = 0; i < reps; i++)); do
			for variant in bug fix; do
				args=$bug
				[[ $variant == fix ]] && args=$fix
				# A run during which other processes took more than a
				# tenth of a CPU is redone once, while the whole bench
				# has redone fewer than a quarter of its runs; a
				# disturbed run that is kept is counted in "dist".
				for ((try = 0; ; try++)); do
					if ! run_once "$out" "$env" "$exe" "$args"; then
						echo "bench.sh: FAILED: $exe $args" >&2
						cat "$out" >&2
						failed=1
						continue 2
					fi
					awk -v f="$foreign" -v d="$duration" \
						'BEGIN { exit !(f > 0.1 * d + 0.05) }' || break
					if ((try == 0 && redone < redo_budget)); then
						redone=$((redone + 1))
						continue
					fi
					dist=$((dist + 1))
					break
				done
				v=$(metric "$out" "$label")
				((verbose == 0)) || echo "bench.sh: $name $(basename "$exe") $variant:" \
					"$label ${v:-?}, other processes ${foreign}s CPU" >&2
				[[ -n $v ]] || { echo "bench.sh: no '$label' from $exe $args" >&2; failed=1; continue; }
				if [[ $variant == bug ]]; then bugv+=("$v"); else fixv+=("$v"); fi
			done
		done
		((${#bugv[@]} && ${#fixv[@]})) || continue
		read -r bm blo bhi <<<"$(stats "${bugv[@]}")"
		read -r fm flo fhi <<<"$(stats "${fixv[@]}")"
		gain=$(awk -v b="$bm" -v f="$fm" -v d="$better" 'BEGIN {
			if (d == "hi") r = b > 0 ? f / b : 0; else r = f > 0 ? b / f : 0
			printf "%.2fx", r }')
		printf '%-14s %-8s %-13s %-28s %-28s %-8s %-5s %s\n' "$name" \
			"$an" "$label" \
			"$(fmt "$bm") [$(fmt "$blo")..$(fmt "$bhi")]" \
			"$(fmt "$fm") [$(fmt "$flo")..$(fmt "$fhi")]" "$gain" \
			"$dist/$((${#bugv[@]} + ${#fixv[@]}))" "$seed"
	done
done
echo "cases (each run adds --duration=$duration):"
for c in "${cases[@]}"; do
	IFS='|' read -r name app bug fix label better seed env <<<"$c"
	[[ -z $only || $name == "$only"* ]] || continue
	echo "  $name: ${env:+$env }$app $bug  vs  $fix"
done
echo "dist: runs kept although other processes took >10% of a CPU during them;" \
	"$redone disturbed run(s) were redone (budget $redo_budget)."
echo "gain: fixed/bug for higher-is-better metrics, bug/fixed for lower-is-better;" \
	"$reps runs of ${duration}s per variant, alternated; load average" \
	"$load before, $(cut -d' ' -f1 /proc/loadavg 2>/dev/null) after."
exit $failed
