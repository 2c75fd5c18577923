#!/bin/sh
# mariadb.sh BUILD_DIR [--long SECONDS | --attach SECONDS] - MariaDB as it runs in production,
# under the shim (docs/server.md): started by root with --user=mysql (the
# shim's control page follows the privilege drop), a private datadir made
# by mariadb-install-db in a temporary directory, a socket there and no
# network (--skip-networking). sysbench oltp_read_write loads a few tables
# and drives load; one window is recorded with `mallock ctl start/stop` run
# as root. Then the server is shut down: it must exit within 30 s, its
# error log must hold no [ERROR], and `mallock report` must read the
# window's trace (exactly one window in it).
#
# Default (CTest, label reliability): 5 s of load, the window in its
# middle. --long SECONDS: a bare server (no shim) first for the baseline,
# then SECONDS of load paused and SECONDS with the window open; prints
# transactions/s of each, the window's size and times (docs/server.md
# quotes them).
#
# --attach SECONDS (by hand, not in CTest): a bare server, root-started with
# --user=mysql (so not dumpable), loaded for SECONDS + 5 s while `mallock
# attach --duration SECONDS` records it; prints transactions/s, the
# attach's lines, the trace's size and the report's header and top 5.
#
# Needs root (the server starts as root and drops to mysql) and Debian's
# mariadb-server and sysbench (installed with apt-get when missing):
# exits 77 when they cannot be had. MALLOCK_* variables in the environment
# are passed on to the server.
set -u
BUILD=$(cd "$1" && pwd)
LONG=0
ATTACH=0
[ "${2:-}" = --long ] && LONG=${3:-60}
[ "${2:-}" = --attach ] && ATTACH=${3:-10}
MALLOCK=$BUILD/bin/mallock
SHIM=$BUILD/lib/libmallock.so

if [ "$(id -u)" != 0 ]; then
	echo "mariadb: SKIP: needs root (the server starts as root)"
	exit 77
fi
if ! command -v mariadbd >/dev/null 2>&1 && ! [ -x /usr/sbin/mariadbd ] ||
	! command -v sysbench >/dev/null 2>&1; then
	(DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mariadb-server \
		sysbench) >/dev/null 2>&1
fi
MARIADBD=$(command -v mariadbd || echo /usr/sbin/mariadbd)
if ! [ -x "$MARIADBD" ] || ! command -v sysbench >/dev/null 2>&1 ||
	! id mysql >/dev/null 2>&1; then
	echo "mariadb: SKIP: mariadb-server or sysbench not installed"
	exit 77
fi

W=$(mktemp -d /tmp/mallock-mariadb.XXXXXX)
chmod 755 "$W"
mkdir -p "$W/out" && chmod 1777 "$W/out"
SOCK=$W/sock
PID=
cleanup() {
	[ -n "$PID" ] && kill -KILL "$PID" 2>/dev/null
	[ "${KEEP:-0}" = 1 ] || rm -rf "$W"
}
trap cleanup EXIT INT TERM
fail() {
	echo "mariadb: FAIL: $*"
	[ -f "$W/err.log" ] && tail -20 "$W/err.log"
	exit 1
}
now() { date +%s.%N; }
since() { echo "$(now) $1" | awk '{printf "%.1f", $1 - $2}'; }

# mariadbd --user=mysql: the datadir and socket directory are mysql's.
init_db() {
	rm -rf "$W/data" && mkdir "$W/data" && chown mysql:mysql "$W/data" "$W"
	mariadb-install-db --no-defaults --user=mysql --datadir="$W/data" \
		--auth-root-authentication-method=socket --skip-test-db \
		>"$W/install.log" 2>&1 || fail "mariadb-install-db (see install.log)"
}

# start_server SHIMMED: starts mariadbd in the background (PID).
start_server() {
	: >"$W/err.log" && chown mysql:mysql "$W/err.log"
	if [ "$1" = 1 ]; then
		env LD_PRELOAD="$SHIM" MALLOCK_START=paused MALLOCK_EXE=mariadbd \
			MALLOCK_OUTPUT="$W/out/mariadbd.%p.trace" \
			"$MARIADBD" --no-defaults --user=mysql --datadir="$W/data" \
			--socket="$SOCK" --skip-networking --pid-file="$W/pid" \
			--log-error="$W/err.log" --innodb-buffer-pool-size=128M \
			--max-connections=64 2>"$W/stderr.log" &
	else
		"$MARIADBD" --no-defaults --user=mysql --datadir="$W/data" \
			--socket="$SOCK" --skip-networking --pid-file="$W/pid" \
			--log-error="$W/err.log" --innodb-buffer-pool-size=128M \
			--max-connections=64 2>"$W/stderr.log" &
	fi
	PID=$!
	i=0
	until mariadb-admin --socket="$SOCK" -uroot ping >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -gt 600 ] && fail "server not up within 60 s"
		kill -0 "$PID" 2>/dev/null || fail "server died at start"
		sleep 0.1
	done
}

SB="sysbench oltp_read_write --db-driver=mysql --mysql-socket=$SOCK \
--mysql-user=root --tables=4 --table-size=20000"

prepare() {
	mariadb --socket="$SOCK" -uroot -e "CREATE DATABASE sbtest" ||
		fail "create database"
	$SB prepare >"$W/prepare.log" 2>&1 || fail "sysbench prepare"
}

# load SECONDS: runs sysbench, prints transactions/s.
load() {
	$SB --threads=4 --time="$1" --report-interval=0 run >"$W/run.log" 2>&1 ||
		return 1
	awk '/transactions:/ {gsub(/\(/, "", $3); print $3}' "$W/run.log"
}

# stop_server: shutdown; must exit within 30 s.
stop_server() {
	t0=$(now)
	kill -TERM "$PID" # as systemd and init scripts stop it
	i=0
	while kill -0 "$PID" 2>/dev/null; do
		i=$((i + 1))
		[ $i -gt 300 ] && fail "no shutdown within 30 s (pid $PID hangs)"
		sleep 0.1
	done
	wait "$PID" 2>/dev/null
	PID=
	SHUT=$(since "$t0")
	grep -q '\[ERROR\]' "$W/err.log" && fail "errors in the server's log"
	return 0
}

if [ "$ATTACH" -gt 0 ]; then
	init_db
	start_server 0
	prepare
	load $((ATTACH + 5)) >"$W/tps" &
	LOADER=$!
	sleep 2
	"$MALLOCK" attach -o "$W/out/attach.trace" --duration "$ATTACH" "$PID" ||
		fail "mallock attach"
	wait "$LOADER" || fail "sysbench run: $(tail -3 "$W/run.log")"
	stop_server
	TR=$W/out/attach.trace
	t0=$(now)
	"$MALLOCK" report "$TR" >"$W/report.txt" 2>"$W/report.err" ||
		fail "mallock report: $(head -3 "$W/report.err")"
	echo "mariadb: attach: $(cat "$W/tps") transactions/s over $((ATTACH + 5)) s," \
		"trace $(stat -c %s "$TR") bytes; shutdown ${SHUT} s;" \
		"report $(since "$t0") s (KEEP=1 keeps $W/report.txt)"
	sed -n '1,3p' "$W/report.txt"
	grep -A3 '^#[1-5] ' "$W/report.txt" | grep -E '^#|^   (lock|code|what)'
	echo "mariadb: ok"
	exit 0
fi

if [ "$LONG" -gt 0 ]; then
	init_db
	start_server 0
	prepare
	BARE=$(load "$LONG") || fail "sysbench run: $(tail -3 "$W/run.log")"
	stop_server
	echo "mariadb: bare: $BARE transactions/s, shutdown ${SHUT} s"
fi

init_db
start_server 1
prepare
SPID=$PID
DUR=5
[ "$LONG" -gt 0 ] && DUR=$LONG
if [ "$LONG" -gt 0 ]; then
	PAUSED=$(load "$LONG") || fail "sysbench run: $(tail -3 "$W/run.log")"
	echo "mariadb: shim paused: $PAUSED transactions/s"
fi
TR=$(ls "$W"/out/mariadbd.*.trace 2>/dev/null | head -1)
[ -n "$TR" ] || fail "no trace file (stderr: $(cat "$W/stderr.log"))"
SIZE0=$(stat -c %s "$TR")
# The window: opened after 1 s of load, closed 1 s before its end.
load "$DUR" >"$W/tps" &
LOADER=$!
sleep 1
t0=$(now)
"$MALLOCK" ctl start "$SPID" >"$W/ctl.log" 2>&1 || fail "ctl start: $(cat "$W/ctl.log")"
START_T=$(since "$t0")
sleep $((DUR - 2))
t0=$(now)
"$MALLOCK" ctl stop "$SPID" >>"$W/ctl.log" 2>&1 || fail "ctl stop: $(cat "$W/ctl.log")"
STOP_T=$(since "$t0")
wait "$LOADER" || fail "sysbench run: $(tail -3 "$W/run.log")"
REC=$(cat "$W/tps")
SIZE1=$(stat -c %s "$TR")
"$MALLOCK" ctl status "$SPID" | grep -q "paused (mallock ctl stop)" ||
	fail "status after stop: $("$MALLOCK" ctl status "$SPID")"
stop_server
t0=$(now)
"$MALLOCK" report --format=json "$TR" >"$W/report.json" 2>"$W/report.err" ||
	fail "mallock report: $(head -3 "$W/report.err")"
REPT=$(since "$t0")
python3 - "$W/report.json" <<'EOF' || fail "the trace does not hold exactly one window"
import json, sys
r = json.load(open(sys.argv[1]))
t = r["totals"]
ok = t["recording_resumes"] == 1 and t["recording_pauses"] == 1
print("mariadb: trace: %d resume, %d pause marks, %d locks, %d threads"
      % (t["recording_resumes"], t["recording_pauses"], len(r["locks"]),
         r["trace"]["threads"]))
sys.exit(0 if ok else 1)
EOF
echo "mariadb: window $((DUR - 2)) s of load at $REC transactions/s (whole run)," \
	"trace $SIZE0 -> $SIZE1 bytes; ctl start ${START_T} s, ctl stop ${STOP_T} s;" \
	"shutdown ${SHUT} s; report ${REPT} s"
echo "mariadb: ok"
