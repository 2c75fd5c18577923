#!/bin/sh
# rsyslog.sh BUILD_DIR [--long SECONDS [RUNS]] - the allocator cascade on a
# real server: Debian's rsyslogd, unmodified, with Debian's tcmalloc
# preloaded after the shim (LD_PRELOAD="$SHIM:$TCMALLOC", docs/server.md),
# its imptcp input fed syslog lines over TCP by local senders, one window
# recorded with `mallock ctl start PID; sleep N; mallock ctl stop PID`.
#
# rsyslog destroys each processed batch of messages (DeleteProcessedBatch:
# msgDestruct of every message) while it holds its queue's mutex; the input
# threads allocated those messages. So the holders of the queue lock free
# under it, into tcmalloc's central free lists, whose locks the input
# threads need too: the lock's holders wait on the allocator's own locks
# while producers and consumers wait on the queue (docs/cascade-real-server.md).
#
# The report (`mallock report --format=json` of the window) must say so:
# its highest-ranked alloc_under_lock finding is on a queue-like lock, the
# calls under that lock are mostly frees (frees > allocs), its advice is to
# free "after unlocking", and the holders' wait on the allocator's own locks
# (allocator_lock_wait_ns_in_holds) is not zero. Each check is printed with
# its value. The trace must hold exactly one window; rsyslogd must stop on
# SIGTERM within 30 s and leave no control page behind.
#
# How much the holders wait on tcmalloc's locks depends on the machine's
# load: a window that does not show the cascade (no queue-like finding, or
# no allocator-lock wait) is taken again on a new server, at most ATTEMPTS
# times (3), each attempt printed. The report's wording checks (frees,
# advice) are judged on the window that shows the cascade.
#
# Default (CTest rel_rsyslog_cascade, labels reliability and realserver):
# windows of 6 s. --long SECONDS [RUNS]: RUNS (3) servers, each recorded for
# SECONDS (1 to 120), every run's figures printed (docs/reliability.md
# and docs/cascade-real-server.md quote them); it fails when a run fails a
# check.
#
# Environment: TCMALLOC_STOCK=1 runs tcmalloc with its own settings (by
# default TCMALLOC_TRANSFER_NUM_OBJ=1 and
# TCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES=1048576: objects move between the
# thread caches and the central lists one at a time, so its locks are taken
# often on a small machine too); SENDERS (4); KEEP=1 keeps the temporary
# directory (the traces, report.txt and report.json of every attempt).
# Needs Debian's rsyslog and libgoogle-perftools4, installed with apt-get
# when missing (77 when they cannot be). Traffic goes to 127.0.0.1 only;
# the senders are stopped when the window closes (each stops by itself
# after WINDOW + 20 s or 5M lines).
set -u
NAME=rsyslog
BUILD=$(cd "$1" && pwd)
. "$(dirname "$0")/servers_lib.sh"
LONG=0
RUNS=1
WINDOW=6
ATTEMPTS=${ATTEMPTS:-3}
SENDERS=${SENDERS:-4}
if [ "${2:-}" = --long ]; then
	LONG=1
	WINDOW=${3:-30}
	RUNS=${4:-3}
	ATTEMPTS=1
	[ "$WINDOW" -ge 1 ] 2>/dev/null && [ "$WINDOW" -le 120 ] ||
		fail "--long SECONDS: 1 to 120, not ${3:-}"
	[ "$RUNS" -ge 1 ] 2>/dev/null && [ "$RUNS" -le 10 ] ||
		fail "--long SECONDS RUNS: 1 to 10 runs, not ${4:-}"
fi
[ -x "$MALLOCK" ] && [ -f "$SHIM" ] || fail "no $MALLOCK or $SHIM"
need_pkgs rsyslog libgoogle-perftools4
RSYSLOGD=/usr/sbin/rsyslogd
[ -x $RSYSLOGD ] || skip "no $RSYSLOGD after installing rsyslog"
TCMALLOC=$(ls /usr/lib/*/libtcmalloc.so.4 2>/dev/null | head -1)
[ -n "$TCMALLOC" ] || skip "no libtcmalloc.so.4 after installing libgoogle-perftools4"
if [ "${TCMALLOC_STOCK:-0}" = 1 ]; then
	KNOBS=
	SETTINGS="tcmalloc stock"
else
	KNOBS="TCMALLOC_TRANSFER_NUM_OBJ=1 TCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES=1048576"
	SETTINGS="tcmalloc $KNOBS"
fi

workdir
RPID=
SPIDS=
# stop_all: the senders, then rsyslogd (SIGKILL: a run that passes has
# stopped it with SIGTERM before), by the pids this script started.
stop_all() {
	for _p in $SPIDS; do kill -KILL "$_p" 2>/dev/null; done
	SPIDS=
	[ -n "$RPID" ] && kill_tree "$RPID"
	RPID=
}
at_exit stop_all

# The sender: one TCP connection to 127.0.0.1:PORT, lines of 100 to 300
# bytes (2000 made once, sent again and again, 500 per sendall) until
# SIGTERM, SECONDS have passed or LIMIT lines were sent; prints what it sent.
cat >"$W/send.py" <<'EOF'
import random, signal, socket, sys, time
stopped = []
signal.signal(signal.SIGTERM, lambda sig, frame: stopped.append(sig))
port, secs, ident, limit = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
r = random.Random(ident)
lines = []
for n in range(2000):
    msg = "GET /api/v1/items/%d status=200 latency_ms=%d upstream=10.0.0.%d %s" % (
        r.randrange(10 ** 6), r.randrange(1000), r.randrange(256), "x" * r.randrange(10, 200))
    lines.append("<14>Dec  5 08:00:%02d web%02d app%d[%d]: %s\n" % (
        n % 60, ident, ident % 3, 1000 + ident, msg))
chunks = [("".join(lines[i:i + 500])).encode() for i in range(0, 2000, 500)]
s = socket.create_connection(("127.0.0.1", port), timeout=5)
start = time.monotonic()
sent = 0
try:
    while not stopped and sent < limit and time.monotonic() - start < secs:
        s.sendall(chunks[(sent // 500) % 4])
        sent += 500
except OSError as e:
    print("sender %d: %s" % (ident, e))
s.close()
print("sender %d: %d lines in %.1f s" % (ident, sent, time.monotonic() - start))
EOF

# The checks, on the window's JSON report: prints one line per check with
# its value ("check NAME: ok|FAIL (value)") and the run's figures; exits 0
# when every check passes, 2 when the cascade was not seen (worth another
# window), 1 when it was seen and a check on the report's account failed.
cat >"$W/check.py" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
name = sys.argv[2]
t = r["totals"]
res = []
def check(what, ok, value, cascade):
    res.append((ok, cascade))
    print("%s: check %s: %s (%s)" % (name, what, "ok" if ok else "FAIL", value))
def ms(ns):
    return "%.1f ms" % (ns / 1e6)
check("one window in the trace", t["recording_resumes"] == 1 and t["recording_pauses"] == 1,
      "%d resume, %d pause marks" % (t["recording_resumes"], t["recording_pauses"]), False)
fs = r["findings"]
au = [(i, f) for i, f in enumerate(fs) if f["kind"] == "alloc_under_lock"]
if not au:
    check("an alloc_under_lock finding", False,
          "%d findings: %s" % (len(fs), ", ".join(f["kind"] for f in fs[:5])), True)
    sys.exit(2)
i, f = au[0]
e = f["evidence"]
print("%s: top alloc_under_lock: #%d of %d findings [%s], lock %s" % (
    name, i + 1, len(fs), f["severity"], f["lock_name"]))
print("%s: figures: waiters lost %s (%d contended of %d acquisitions); holders %.1f%% of "
      "their hold time (%s of %s) in the allocator, %s of it waiting on the allocator's "
      "locks; under the lock %d frees, %d allocs" % (
    name, ms(e["lock_wait_ns"]), e["contended"], e["acquisitions"],
    100.0 * e["allocator_share_of_hold"], ms(e["allocator_ns_in_holds"]), ms(e["hold_ns"]),
    ms(e["allocator_lock_wait_ns_in_holds"]), e["frees"], e["allocs"]))
check("on a queue-like lock", e["queue_like"] == 1, "queue_like %d" % e["queue_like"], True)
check("the holders wait on the allocator's locks", e["allocator_lock_wait_ns_in_holds"] > 0,
      "allocator_lock_wait_ns_in_holds %d" % e["allocator_lock_wait_ns_in_holds"], True)
check("the calls under the lock are frees", e["frees"] > e["allocs"],
      "frees %d, allocs %d" % (e["frees"], e["allocs"]), False)
check("the advice frees after unlocking", "after unlocking" in f["advice"],
      "advice: %s" % f["advice"], False)
if all(ok for ok, _ in res):
    sys.exit(0)
sys.exit(2 if any(not ok for ok, c in res if c) else 1)
EOF

# lines FILE: the lines in FILE (0 when there is none).
lines() { [ -f "$1" ] && wc -l <"$1" || echo 0; }

# run TAG: one server, SENDERS senders, one window of WINDOW s taken 1 s
# into the load, the server stopped, the window's report checked. Returns
# check.py's status.
run() {
	_d=$W/$1
	mkdir "$_d"
	_port=$(free_port)
	cat >"$_d/rsyslog.conf" <<EOC
global(workDirectory="$_d")
module(load="imptcp" threads="2")
input(type="imptcp" port="$_port" address="127.0.0.1")
template(name="line" type="string"
	string="%timegenerated:::date-rfc3339% %hostname% %syslogtag%%msg:::drop-last-lf%\n")
action(type="omfile" file="$_d/all.log" template="line")
EOC
	env LD_PRELOAD="$SHIM:$TCMALLOC" $KNOBS MALLOCK_START=paused \
		MALLOCK_EXE=rsyslogd MALLOCK_OUTPUT="$_d/rsyslogd.%p.trace" \
		$RSYSLOGD -n -f "$_d/rsyslog.conf" -i "$_d/rsyslogd.pid" \
		>"$_d/rsyslogd.out" 2>&1 &
	RPID=$!
	FAIL_LOG=$_d/rsyslogd.out
	_i=0
	until python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1).close()' \
		"$_port" 2>/dev/null; do
		_i=$((_i + 1))
		[ $_i -gt 100 ] && fail "rsyslogd not listening on $_port within 20 s"
		kill -0 "$RPID" 2>/dev/null || fail "rsyslogd died at start"
		sleep 0.2
	done
	shim_in "$RPID"
	_ts=$(now)
	for _s in $(seq "$SENDERS"); do
		python3 "$W/send.py" "$_port" $((WINDOW + 20)) "$_s" 5000000 \
			>>"$_d/send.log" 2>&1 &
		SPIDS="$SPIDS $!"
	done
	# The load has begun when rsyslogd has written 1 MB (the senders are
	# slow to start on a loaded machine); the window opens 1 s later.
	_i=0
	until [ "$(stat -c %s "$_d/all.log" 2>/dev/null || echo 0)" -gt 1000000 ]; do
		_i=$((_i + 1))
		[ $_i -gt 100 ] && fail "rsyslogd wrote no 1 MB within 20 s of load"
		kill -0 "$RPID" 2>/dev/null || fail "rsyslogd died under load"
		sleep 0.2
	done
	sleep 1
	_tc=$(now)
	ctl start "$RPID"
	_start=$(since "$_tc")
	sleep "$WINDOW"
	ctl stop "$RPID"
	# The senders stop on SIGTERM and print what they sent (SIGKILL when
	# one has not exited 3 s later).
	for _p in $SPIDS; do kill -TERM "$_p" 2>/dev/null; done
	for _p in $SPIDS; do
		_j=0
		while kill -0 "$_p" 2>/dev/null && [ $_j -lt 30 ]; do
			sleep 0.1
			_j=$((_j + 1))
		done
		kill -KILL "$_p" 2>/dev/null
		wait "$_p" 2>/dev/null
	done
	SPIDS=
	_load=$(cut -d' ' -f1-3 /proc/loadavg)
	_sent=$(awk '/lines in/ {n += $3} END {print n + 0}' "$_d/send.log")
	kill -TERM "$RPID"
	_i=0
	while kill -0 "$RPID" 2>/dev/null; do
		_i=$((_i + 1))
		[ $_i -gt 300 ] && fail "rsyslogd $RPID: no exit within 30 s of SIGTERM"
		sleep 0.1
	done
	wait "$RPID" 2>/dev/null
	_pid=$RPID
	RPID=
	_page=$(ls /tmp/mallock-*/"$_pid".page 2>/dev/null)
	[ -z "$_page" ] || fail "rsyslogd $_pid left its control page $_page"
	_logged=$(lines "$_d/all.log")
	[ "${KEEP:-0}" = 1 ] || rm -f "$_d/all.log"
	_tr=$_d/rsyslogd.$_pid.trace
	[ -s "$_tr" ] || fail "no trace $_tr"
	say "$1: $_sent lines sent by $SENDERS senders in $(since "$_ts") s," \
		"$_logged logged; ctl start took ${_start} s, then" \
		"${WINDOW} s to ctl stop; load $_load;" \
		"trace $(stat -c %s "$_tr") bytes"
	_t0=$(now)
	"$MALLOCK" report --format=json "$_tr" >"$_d/report.json" \
		2>"$_d/report.err" || fail "mallock report: $(head -3 "$_d/report.err")"
	say "$1: report in $(since "$_t0") s"
	[ "${KEEP:-0}" = 1 ] && "$MALLOCK" report --top 5 "$_tr" >"$_d/report.txt" 2>&1
	python3 "$W/check.py" "$_d/report.json" "$NAME: $1"
	_rc=$?
	[ "${KEEP:-0}" = 1 ] || rm -f "$_tr"
	return $_rc
}

say "$SETTINGS; $SENDERS senders; window ${WINDOW} s"
rc=0
if [ $LONG = 1 ]; then
	for n in $(seq "$RUNS"); do
		run "run$n" || rc=1
	done
	[ $rc = 0 ] || fail "a run failed a check (above)"
	say "ok"
	exit 0
fi
for n in $(seq "$ATTEMPTS"); do
	run "attempt$n"
	rc=$?
	[ $rc = 2 ] || break
	say "attempt $n of $ATTEMPTS: the window did not show the cascade"
done
[ $rc = 0 ] || fail "the report's checks (above)"
say "ok"
