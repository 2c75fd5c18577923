#!/bin/sh
# nginx.sh BUILD_DIR [--long SECONDS] - nginx from Debian (a root master
# and 2 www-data workers, 127.0.0.1 only) operated with mallock while ab
# loads it.
#
# 1. Started as /usr/sbin/nginx (an absolute path: a binary upgrade would
#    really start a second master) with libmallock.so preloaded
#    (MALLOCK_START=paused). Rounds (2 by default, as many as start
#    within 10 s; --long: for SECONDS, at most 600) of `mallock ctl
#    status --tree`, `ctl start --tree`, `ctl stop --tree` of the master,
#    then the same without --tree. nginx's own SIGUSR2 handler means
#    "upgrade the binary": a signal from ctl starts a second master.
# 2. A bare nginx: `mallock attach --duration 1` to a worker, then
#    `mallock ctl status`, `ctl stop` of it.
# Each server must not notice: its error.log holds no "changing binary",
# no signal received, no [alert], [crit] or [emerg] and no mallock text
# (a daemon's fd 2 is its error.log); no nginx.pid.oldbin appears and one
# master runs with this configuration; the master's and the workers' pids
# are unchanged; ab completes with no failed or non-2xx request; `nginx -s
# quit` stops it within 30 s. The workers' traces must hold the windows.
#
# Default: CTest rel_nginx_short (labels reliability and realserver);
# --long prints the numbers docs/reliability.md quotes.
# Needs root and Debian's nginx and apache2-utils (ab), installed with
# apt-get when missing (77 when they cannot be).
set -u
NAME=nginx
BUILD=$(cd "$1" && pwd)
. "$(dirname "$0")/servers_lib.sh"
ROUNDS=2
BUDGET=10
if [ "${2:-}" = --long ]; then
	ROUNDS=1000
	BUDGET=${3:-60}
	[ "$BUDGET" -le 600 ] 2>/dev/null || fail "--long SECONDS: at most 600, not ${3:-}"
fi
need_root
need_pkgs nginx apache2-utils
NGINX=/usr/sbin/nginx
[ -x $NGINX ] || skip "no $NGINX after installing nginx"
command -v ab >/dev/null || skip "no ab after installing apache2-utils"
id www-data >/dev/null 2>&1 || skip "no user www-data"

workdir
at_exit 'kill_nginx "$W/shim" "$W/bare"'

# conf DIR PORT: an nginx prefix directory DIR serving DIR/www on PORT.
conf() {
	mkdir -p "$1/www" "$1/logs"
	head -c 20000 /dev/urandom >"$1/www/file"
	cat >"$1/nginx.conf" <<EOC
user www-data;
worker_processes 2;
pid $1/nginx.pid;
error_log $1/logs/error.log info;
events { worker_connections 256; }
http {
	access_log off;
	server { listen 127.0.0.1:$2; root $1/www; }
}
EOC
}
# up DIR PORT: waits (at most 10 s) until nginx serves DIR/www/file.
up() {
	i=0
	until curl -sf -o /dev/null "http://127.0.0.1:$2/file"; do
		i=$((i + 1))
		[ $i -gt 100 ] && fail "nginx ($1) does not serve on 127.0.0.1:$2"
		sleep 0.1
	done
	MASTER=$(cat "$1/nginx.pid")
	WORKERS=$(ps -o pid= --ppid "$MASTER" | sort -n | tr -d ' ' | tr '\n' ' ')
}
# load PORT SECONDS: ab in the background, bounded by count and time;
# load_end interrupts it (ab then prints what it did so far).
load() {
	timeout $(($2 + 20)) ab -q -t "$2" -n 2000000 -c 8 \
		"http://127.0.0.1:$1/file" >"$W/ab.log" 2>&1 &
	AB=$!
}
load_end() {
	kill -INT "$AB" 2>/dev/null
	wait "$AB"
}
# check DIR: the server in DIR did not notice what was done to it.
check() {
	FAIL_LOG=$1/logs/error.log
	no_line 'changing binary|signal [0-9]+ .* received|\[(alert|crit|emerg)\]' \
		"$1/logs/error.log" "nginx ($1) reacted in its error.log"
	no_line '[Mm]allock' "$1/logs/error.log" "mallock wrote into nginx's error.log"
	[ -e "$1/nginx.pid.oldbin" ] && fail "nginx.pid.oldbin: a second master was started"
	[ "$(cat "$1/nginx.pid")" = "$MASTER" ] || fail "the master's pid changed"
	n=$(ps -eo args= | grep -c "^nginx: master process .*$1/nginx.conf")
	[ "$n" = 1 ] || fail "$n masters run with $1/nginx.conf"
	now_w=$(ps -o pid= --ppid "$MASTER" | sort -n | tr -d ' ' | tr '\n' ' ')
	[ "$now_w" = "$WORKERS" ] || fail "workers $WORKERS became $now_w"
	load_end
	grep -q '^Complete requests' "$W/ab.log" &&
		grep -qE '^Failed requests: +0$' "$W/ab.log" &&
		! grep -q 'Non-2xx' "$W/ab.log" ||
		fail "ab: $(grep -E 'Complete|Failed|Non-2xx|apr_' "$W/ab.log")"
	REQS=$(awk '/^Complete requests/ {print $3}' "$W/ab.log")
	RPS=$(awk '/^Requests per second/ {print $4}' "$W/ab.log")
}
# quit DIR: `nginx -s quit` (bare), the master gone within 30 s.
quit() {
	$NGINX -c "$1/nginx.conf" -p "$1" -e "$1/logs/error.log" -s quit ||
		fail "nginx -s quit"
	i=0
	while kill -0 "$MASTER" 2>/dev/null; do
		i=$((i + 1))
		[ $i -gt 300 ] && fail "nginx ($1) did not quit within 30 s"
		sleep 0.1
	done
}

# 1. Preloaded, operated with mallock ctl.
P1=$(free_port)
S=$W/shim
conf "$S" "$P1"
env LD_PRELOAD="$SHIM" MALLOCK_START=paused \
	MALLOCK_OUTPUT="$W/out/ng.%p.trace" \
	$NGINX -c "$S/nginx.conf" -p "$S" -e "$S/logs/error.log" ||
	fail "nginx did not start: $(tail -3 "$S/logs/error.log")"
up "$S" "$P1"
for p in $MASTER $WORKERS; do shim_in "$p"; done
M1=$MASTER
W1=$WORKERS
load "$P1" $((BUDGET + 40))
sleep 1
t0=$(now)
r=0
while [ $r -lt "$ROUNDS" ] && elapsed_lt "$t0" "$BUDGET"; do
	for tree in --tree ""; do
		ctl status $tree "$MASTER"
		ctl start $tree "$MASTER"
		sleep 0.5
		ctl stop $tree "$MASTER"
	done
	r=$((r + 1))
done
LOOP=$(since "$t0")
sleep 1
check "$S"
R1="$REQS requests at $RPS/s"
TRACES=
for p in $WORKERS; do TRACES="$TRACES $W/out/ng.$p.trace"; done
quit "$S"
N=$(total recording_resumes $TRACES) || fail "$N"
[ "$N" -ge 1 ] || fail "no window in the workers' traces ($TRACES)"
say "preloaded: $r rounds of ctl status/start/stop, plain and --tree, on" \
	"the master in $LOOP s under ab ($R1, none failed); master $M1 and" \
	"workers ${W1}unchanged, no second master, error.log clean; $N windows" \
	"in the workers' traces; $(ctl_times)"

# 2. Bare, a worker attached to.
P2=$(free_port)
B=$W/bare
conf "$B" "$P2"
$NGINX -c "$B/nginx.conf" -p "$B" -e "$B/logs/error.log" ||
	fail "bare nginx did not start: $(tail -3 "$B/logs/error.log")"
up "$B" "$P2"
load "$P2" 30
sleep 1
WK=${WORKERS%% *}
timeout 30 "$MALLOCK" attach -o "$W/out/att.%p.trace" --duration 1 "$WK" \
	>"$W/attach.log" 2>&1 || fail "mallock attach $WK: $(cat "$W/attach.log")"
sleep 1.5
ctl status "$WK"
ctl stop "$WK"
check "$B"
quit "$B"
N=$(total allocations "$W/out/att.$WK.trace") || fail "$N"
[ "$N" -ge 1 ] || fail "no allocation in the attached worker's trace"
say "bare: attach --duration 1 to worker $WK under ab ($REQS requests at" \
	"$RPS/s, none failed; $N allocations recorded), then ctl status/stop:" \
	"pids unchanged, error.log clean"
say ok
