#!/bin/sh
# real_programs.sh BUILD_DIR [--short] - programs nobody here wrote, from
# Debian's packages, run bare and under `mallock record`: the exit status
# and the output (numbers masked where they are timings) must be the same,
# `mallock report` must read the trace, and the counts must be plausible
# (events recorded, none dropped). Missing packages are installed with
# apt-get (as root; idempotent). Prints one table row per program; exits 1
# if any row failed, else 77 if a program could not be installed.
# --short: small sizes, for CTest (under ~2 minutes).
#
#   db_bench     rocksdb-tools: fillrandom then readrandom, 4 threads
#   sysbench     mutex, memory and threads tests, 4 threads
#   memcached    4 threads on 127.0.0.1 (a free port), loaded by memcapable
#                and memaslap (libmemcached-tools), then SIGTERM
#   pigz         pigz -p 2 compressing a file (the .gz must be identical)
#   python3      a Python 3 program with 4 threads, a lock and a queue
#   sort, xz     coreutils sort --parallel=2 (threads with no -S), xz -T2
set -u
BUILD=$(cd "$1" && pwd)
SHORT=0
[ "${2:-}" = --short ] && SHORT=1
MALLOCK=$BUILD/bin/mallock
WORK=$BUILD/tests/reliability/tmp_real_programs
rm -rf "$WORK" && mkdir -p "$WORK"
PY=/usr/bin/python3
fail=0

# ---- install what is missing --------------------------------------------
need=""
for p in rocksdb-tools:db_bench sysbench:sysbench memcached:memcached \
	libmemcached-tools:memcaslap pigz:pigz xz-utils:xz; do
	command -v "${p#*:}" >/dev/null 2>&1 || need="$need ${p%%:*}"
done
if [ -n "$need" ]; then
	if [ "$(id -u)" = 0 ]; then
		echo "real_programs: installing$need"
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
			apt-get install -y -qq $need) >"$WORK/apt.log" 2>&1 ||
			echo "real_programs: apt-get failed (see $WORK/apt.log)"
	else
		echo "real_programs: missing$need (not root: not installing)"
	fi
fi

# ---- helpers ------------------------------------------------------------
# mask FILE: timings and other numbers out, so that only the text compares;
# with the blanks that pad a number to a width ("( 9430.42 per second)" from
# a slower run, "(90792.66 per second)" from a faster one).
mask() {
	sed -E -e '/^Date:/d' -e 's/[[:space:]]*[0-9]+(\.[0-9]+)?/ N/g' \
		-e 's/[[:space:]]+/ /g' "$1"
}

# stats TRACE -> "events dropped threads allocs locks" (or "unreadable")
stats() {
	"$MALLOCK" report --format=json "$1" >"$1.json" 2>"$1.rerr" || {
		echo unreadable
		return
	}
	$PY -c 'import json,sys
d=json.load(open(sys.argv[1])); t=d["trace"]; s=d["totals"]
print(t["events"], t["dropped_events"], t["threads"], s["allocations"],
      s["lock_acquisitions"], "clean" if t["clean_exit"] else "unclean")' "$1.json"
}

printf '%-22s %-7s %-7s %-9s %10s %6s %4s %9s %9s\n' program status output trace \
	events drops thr allocs locks
row() { # name status_same output_same trace_stats min_events
	name=$1 st=$2 out=$3 s=$4 min=$5
	set -- $s
	if [ "$1" = unreadable ]; then
		tr=unreadable ev=- dr=- th=- al=- lk=-
	else
		tr=readable ev=$1 dr=$2 th=$3 al=$4 lk=$5
		[ "$6" = clean ] || tr=unclean
	fi
	printf '%-22s %-7s %-7s %-9s %10s %6s %4s %9s %9s\n' "$name" "$st" "$out" \
		"$tr" "$ev" "$dr" "$th" "$al" "$lk"
	if [ "$st" != same ] || [ "$out" != same ] || [ "$tr" != readable ] ||
		[ "$ev" -lt "$min" ] || [ "$dr" != 0 ]; then
		fail=1
		echo "  ^ FAILED (see $WORK/$name.*)"
	fi
}
# skip NAME WHY: a program that could not be had here (WHY: which). The run
# then ends with exit 77 (CTest's SKIP_RETURN_CODE), not "ok", unless a row
# failed: an untested program is not a pass.
skipped=""
skip() {
	printf '%-22s skipped: %s\n' "$1" "$2"
	skipped="$skipped $1"
}

# compare NAME MODE MIN_EVENTS CMD... : runs CMD bare (cwd $WORK/NAME.bare)
# and recorded (cwd $WORK/NAME.rec), MODE exact|masked for stdout+stderr.
# $PRE, if set, is evaluated before each of the two runs.
compare() {
	name=$1 mode=$2 min=$3
	shift 3
	b=$WORK/$name.bare r=$WORK/$name.rec
	mkdir -p "$b" "$r"
	[ -n "${PRE:-}" ] && eval "$PRE"
	(cd "$b" && timeout 300 "$@" >../$name.bare.out 2>../$name.bare.err)
	bs=$?
	[ -n "${PRE:-}" ] && eval "$PRE"
	(cd "$r" && timeout 300 "$MALLOCK" record -o "$WORK/$name.trace" -- "$@" \
		>../$name.rec.out 2>../$name.rec.err)
	rs=$?
	# record's own lines: where the trace went, its compression after the
	# run (and the traces it left, of children still running).
	grep -v -E '^mallock: (trace written to |traces? compressed |.*: (still open for writing by pid|no chunk gets smaller|not compressed: |chunk [0-9]+: .* at byte [0-9]+: the ))' \
		"$WORK/$name.rec.err" >"$WORK/$name.rec.err2"
	st=same
	[ "$bs" = "$rs" ] || st="$bs/$rs"
	out=same
	if [ "$mode" = exact ]; then
		cmp -s "$WORK/$name.bare.out" "$WORK/$name.rec.out" || out=differs
	else
		mask "$WORK/$name.bare.out" >"$WORK/$name.bare.m"
		mask "$WORK/$name.rec.out" >"$WORK/$name.rec.m"
		cmp -s "$WORK/$name.bare.m" "$WORK/$name.rec.m" || out=differs
	fi
	mask "$WORK/$name.bare.err" >"$WORK/$name.bare.em"
	mask "$WORK/$name.rec.err2" >"$WORK/$name.rec.em"
	cmp -s "$WORK/$name.bare.em" "$WORK/$name.rec.em" || out=differs
	row "$name" "$st" "$out" "$(stats "$WORK/$name.trace")" "$min"
}

# The minimum events of each row: about a quarter of what the --short sizes
# recorded on 2026-12-01 (db_bench 575k, sysbench mutex 17k, memory 493,
# threads 200k, memcached 160k, pigz 7.5k, xz 11.7k, sort 1.1k, python 187k):
# a recording that lost most of a program's events fails (sort keeps its
# older 1000).
if [ $SHORT = 1 ]; then N_DB=4000 N_SB=2000 MB=4 N_SLAP=5000 N_PY=20000
else N_DB=100000 N_SB=20000 MB=16 N_SLAP=200000 N_PY=300000; fi

# ---- db_bench -----------------------------------------------------------
if command -v db_bench >/dev/null; then
	# The same --db path for both runs (it is printed); removed in between.
	DB=$WORK/rocksdb
	PRE='rm -rf "$DB"' compare db_bench masked 100000 db_bench --db="$DB" \
		--benchmarks=fillrandom,readrandom --threads=4 --num=$N_DB --seed=1 \
		--compression_type=none --progress_reports=false
else skip db_bench "rocksdb-tools not installed"; fi

# ---- sysbench -----------------------------------------------------------
if command -v sysbench >/dev/null; then
	compare sysbench_mutex masked 4000 sysbench mutex --threads=4 \
		--mutex-num=256 --mutex-locks=$N_SB --mutex-loops=50 run
	compare sysbench_memory masked 200 sysbench memory --threads=4 \
		--memory-total-size=${MB}M --memory-block-size=4K run
	compare sysbench_threads masked 50000 sysbench threads --threads=4 \
		--thread-yields=50 --thread-locks=4 --time=0 --events=$N_SB run
else skip sysbench "sysbench not installed"; fi

# ---- memcached under memcapable and memaslap ----------------------------
# run_mc PORT OUTPREFIX [record TRACE]: the server, the two clients, then
# SIGTERM to the server by the pid it wrote (-P; `mallock record` does not
# pass SIGTERM on); a watchdog kills it after 120 s if anything hangs.
run_mc() {
	port=$1 pre=$2
	shift 2
	u=""
	[ "$(id -u)" = 0 ] && u="-u root"
	rm -f "$pre.pid"
	if [ "${1:-}" = record ]; then
		"$MALLOCK" record -o "$2" -- memcached -l 127.0.0.1 -p "$port" \
			-U 0 -t 4 -m 32 -P "$pre.pid" $u >"$pre.srv.out" 2>"$pre.srv.err" &
	else
		memcached -l 127.0.0.1 -p "$port" -U 0 -t 4 -m 32 -P "$pre.pid" $u \
			>"$pre.srv.out" 2>"$pre.srv.err" &
	fi
	spid=$!
	$PY - "$port" "$pre.pid" <<'EOF'
import os, socket, sys, time
for _ in range(200):
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), 0.2).close()
        if os.path.getsize(sys.argv[2]) > 0:
            break
    except OSError:
        pass
    time.sleep(0.05)
EOF
	mpid=$(cat "$pre.pid" 2>/dev/null)
	# The watchdog holds no pipe (CTest waits for every holder) and takes
	# its sleep with it when stopped.
	(
		sleep 120 &
		s=$!
		trap 'kill $s; exit 0' TERM
		wait $s
		[ -n "$mpid" ] && kill -KILL "$mpid"
	) </dev/null >/dev/null 2>&1 &
	dog=$!
	timeout 60 memccapable -h 127.0.0.1 -p "$port" -t 5 >"$pre.cap" 2>&1
	echo "memcapable $?" >>"$pre.out"
	timeout 60 memcaslap -s 127.0.0.1:"$port" -x $N_SLAP -T 2 -c 16 >"$pre.slap" 2>&1
	echo "memaslap $?" >>"$pre.out"
	cat "$pre.cap" >>"$pre.out"
	grep -E '^(Run time|Get|Set)' "$pre.slap" | sed -E 's/[0-9.]+/N/g' >>"$pre.out"
	[ -n "$mpid" ] && kill -TERM "$mpid"
	wait "$spid"
	echo "server $?" >>"$pre.out"
	kill "$dog" 2>/dev/null
}
if command -v memcached >/dev/null && command -v memcaslap >/dev/null; then
	PORT=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	run_mc "$PORT" "$WORK/memcached.bare"
	run_mc "$PORT" "$WORK/memcached.rec" record "$WORK/memcached.trace"
	out=same
	cmp -s "$WORK/memcached.bare.out" "$WORK/memcached.rec.out" || out=differs
	st=same
	[ "$(tail -1 "$WORK/memcached.bare.out")" = "$(tail -1 "$WORK/memcached.rec.out")" ] ||
		st="$(tail -1 "$WORK/memcached.bare.out" | cut -d' ' -f2)/$(tail -1 "$WORK/memcached.rec.out" | cut -d' ' -f2)"
	row memcached "$st" "$out" "$(stats "$WORK/memcached.trace")" 40000
else skip memcached "memcached or libmemcached-tools not installed"; fi

# ---- pigz, xz, sort: identical output -----------------------------------
seq 1 $((MB * 150000)) | sed 's/$/ lorem ipsum dolor/' >"$WORK/input.txt"
if command -v pigz >/dev/null; then
	compare pigz exact 2000 pigz -p 2 -c "$WORK/input.txt"
else skip pigz "pigz not installed"; fi
if command -v xz >/dev/null; then
	compare xz exact 3000 xz -T2 -3 -c "$WORK/input.txt"
else skip xz "xz-utils not installed"; fi
compare sort exact 1000 sort --parallel=2 -r "$WORK/input.txt"

# ---- Python 3 with threads ----------------------------------------------
cat >"$WORK/threads.py" <<'EOF'
import hashlib, queue, sys, threading
n = int(sys.argv[1])
q, lock, totals = queue.Queue(), threading.Lock(), {}
def work(k):
    h = 0
    for i in range(k, n, 4):
        d = hashlib.sha1(str(i).encode()).digest()
        h ^= int.from_bytes(d[:8], "little")
        if i % 1000 == 0:
            q.put(i)
    with lock:
        totals[k] = h
ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
for t in ts: t.start()
for t in ts: t.join()
print("items", q.qsize(), "xor", "%016x" % (totals[0] ^ totals[1] ^ totals[2] ^ totals[3]))
EOF
compare python3_threads exact 40000 $PY "$WORK/threads.py" $N_PY

if [ $fail != 0 ]; then
	echo "real_programs: FAILED"
	exit 1
fi
if [ -n "$skipped" ]; then
	echo "real_programs: SKIP: not run here:$skipped"
	exit 77
fi
echo "real_programs: ok"
