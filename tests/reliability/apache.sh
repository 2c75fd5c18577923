#!/bin/sh
# apache.sh BUILD_DIR [SECONDS] - Apache httpd (Debian's apache2, mpm_event)
# under the shim, as a worker server runs in production: the parent starts
# as root, its children are forked and drop to www-data, their threads
# block signals. A private config in a temporary directory, listening on
# 127.0.0.1 only. `ab` drives load; one window is recorded for the whole
# process tree with `mallock ctl start --tree` and `mallock ctl stop --exe
# apache2` (as root). Then apache is stopped (SIGTERM): it must exit within
# 30 s, and `mallock report` must read each child's trace, each holding
# exactly one window. Prints requests/s and the windows' sizes. A manual
# check (docs/server.md quotes it), not registered in CTest. Needs root
# and apache2 + apache2-utils (exits 77 without).
set -u
BUILD=$(cd "$1" && pwd)
SECS=${2:-10}
MALLOCK=$BUILD/bin/mallock
SHIM=$BUILD/lib/libmallock.so
[ "$(id -u)" = 0 ] || { echo "apache: SKIP: needs root"; exit 77; }
command -v apache2 >/dev/null 2>&1 && command -v ab >/dev/null 2>&1 ||
	{ echo "apache: SKIP: apache2 or ab missing"; exit 77; }
W=$(mktemp -d /tmp/mallock-apache.XXXXXX)
chmod 755 "$W"
mkdir -p "$W/out" "$W/htdocs" && chmod 1777 "$W/out"
head -c 20000 /dev/urandom | base64 >"$W/htdocs/index.html"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
M=/usr/lib/apache2/modules
cat >"$W/httpd.conf" <<EOF
ServerRoot $W
LoadModule mpm_event_module $M/mod_mpm_event.so
LoadModule authz_core_module $M/mod_authz_core.so
Listen 127.0.0.1:$PORT
ServerName localhost
User www-data
Group www-data
PidFile $W/httpd.pid
ErrorLog $W/error.log
DocumentRoot $W/htdocs
StartServers 2
ServerLimit 2
ThreadsPerChild 8
MaxRequestWorkers 16
<Directory $W/htdocs>
  Require all granted
</Directory>
EOF
PID=
cleanup() {
	[ -n "$PID" ] && for c in $(pgrep -P "$PID"); do kill -KILL "$c"; done
	[ -n "$PID" ] && kill -KILL "$PID" 2>/dev/null
	[ "${KEEP:-0}" = 1 ] || rm -rf "$W"
}
trap cleanup EXIT INT TERM
fail() { echo "apache: FAIL: $*"; tail -5 "$W/error.log"; exit 1; }
now() { date +%s.%N; }
since() { echo "$(now) $1" | awk '{printf "%.1f", $1 - $2}'; }

bench() { # bench SECONDS: requests/s
	ab -q -k -c 8 -t "$1" -n 10000000 "http://127.0.0.1:$PORT/index.html" \
		>"$W/ab.log" 2>&1 || return 1
	awk '/Requests per second/ {print $4}' "$W/ab.log"
}

# bare first
apache2 -f "$W/httpd.conf" -DFOREGROUND 2>"$W/stderr.log" &
PID=$!
sleep 1.5
BARE=$(bench "$SECS") || fail "ab (bare)"
kill -TERM "$PID"; wait "$PID"; PID=

env LD_PRELOAD="$SHIM" MALLOCK_START=paused MALLOCK_EXE=apache2 \
	MALLOCK_OUTPUT="$W/out/apache2.%p.trace" \
	apache2 -f "$W/httpd.conf" -DFOREGROUND 2>"$W/stderr.log" &
PID=$!
sleep 1.5
PAUSED=$(bench "$SECS") || fail "ab (paused)"
# The load outlasts the window: `ctl start` waits 1 s for the idle parent.
bench $((SECS + 8)) >"$W/rps" &
B=$!
sleep 1
t0=$(now)
# The parent (root) sleeps in a loop that makes no allocation or lock
# call: it cannot answer (docs/server.md, Limits): its request stays
# pending ("pid P: pending: ..."); its workers must answer.
"$MALLOCK" ctl start --tree "$PID" >"$W/ctl.log" 2>&1
NW=$(pgrep -c -P "$PID")
[ "$(grep -c '^pid [0-9]*: recording' "$W/ctl.log")" = "$NW" ] ||
	fail "ctl start: $(cat "$W/ctl.log")"
START_T=$(since "$t0")
sleep $((SECS - 2))
t0=$(now)
"$MALLOCK" ctl stop --exe apache2 >>"$W/ctl.log" 2>&1
[ "$(grep -c '^pid [0-9]*: paused' "$W/ctl.log")" = "$NW" ] ||
	fail "ctl stop: $(cat "$W/ctl.log")"
STOP_T=$(since "$t0")
wait "$B" || fail "ab (recording)"
REC=$(cat "$W/rps")
cat "$W/ctl.log"
t0=$(now)
kill -TERM "$PID"
i=0
while kill -0 "$PID" 2>/dev/null; do
	i=$((i + 1)); [ $i -gt 300 ] && fail "no shutdown within 30 s"
	sleep 0.1
done
wait "$PID"
PID=
SHUT=$(since "$t0")
n=0
for t in "$W"/out/*.trace; do
	s=$(stat -c %s "$t")
	t0=$(now)
	"$MALLOCK" report --format=json "$t" >"$W/r.json" 2>"$W/r.err" ||
		fail "report $t: $(head -2 "$W/r.err")"
	rt=$(since "$t0")
	python3 - "$W/r.json" "$t" "$s" "$rt" <<'EOF' || fail "window count in $t"
import json, sys
r = json.load(open(sys.argv[1]))
t = r["totals"]
print("apache: %s: %s bytes, %d resume/%d pause marks, %d threads, %d "
      "events, report %s s" % (sys.argv[2].rsplit("/", 1)[1], sys.argv[3],
      t["recording_resumes"], t["recording_pauses"], r["trace"]["threads"],
      r["trace"]["events"], sys.argv[4]))
sys.exit(0 if t["recording_resumes"] <= 1 and t["recording_pauses"] <= 1 else 1)
EOF
	n=$((n + 1))
done
echo "apache: $n traces; requests/s bare $BARE, paused $PAUSED, recording run $REC;" \
	"ctl start ${START_T} s, stop ${STOP_T} s; shutdown ${SHUT} s"
