#!/bin/sh
# varnish.sh BUILD_DIR [--long SECONDS] - varnish from Debian in front of a
# bare nginx (both on 127.0.0.1 only), varnishd preloaded with
# libmallock.so (MALLOCK_START=paused, MALLOCK_EXE=varnishd). With the
# cache idle for 5 s: 3 `mallock ctl status CHILD`, then rounds of `ctl
# start --tree MANAGER`, 1 s, `ctl stop --tree`, `ctl status --tree` (3,
# as many as start within 12 s); then a --wake round (varnishd runs with
# MALLOCK_SIGNAL=RTMIN+5, the shim's handler): `ctl start --wake CHILD`,
# `ctl stop --wake --tree MANAGER` (4 times each), after which the child is
# the same and the object cached before is still a hit; then rounds under
# ab load (2 within 8 s).
# --long SECONDS (at most 600): rounds for SECONDS + 4 idle, SECONDS loaded.
# A signal the cache child did not ask for interrupts its CLI thread's
# poll(): the child ends and the manager starts a new one, the cache lost.
# varnish must not notice: the cache child's pid is unchanged, the
# manager's log holds no "Child ... died", "said Child dies", "Child
# cleanup" or "Panic", what varnish serves is byte for byte the backend's
# file, ab completes with no failed or non-2xx request, and a SIGTERM stops
# varnishd within 30 s. The child's trace must hold the load windows.
#
# Default: CTest rel_varnish_short (labels reliability and realserver);
# --long prints the numbers docs/reliability.md quotes.
# Needs root and Debian's varnish, nginx and apache2-utils (ab), installed
# with apt-get when missing (77 when they cannot be).
set -u
NAME=varnish
BUILD=$(cd "$1" && pwd)
. "$(dirname "$0")/servers_lib.sh"
ROUNDS=2
BUDGET=8
if [ "${2:-}" = --long ]; then
	ROUNDS=1000
	BUDGET=${3:-60}
	[ "$BUDGET" -le 600 ] 2>/dev/null || fail "--long SECONDS: at most 600, not ${3:-}"
fi
need_root
need_pkgs varnish nginx apache2-utils
NGINX=/usr/sbin/nginx
VARNISHD=/usr/sbin/varnishd
[ -x $VARNISHD ] || skip "no $VARNISHD after installing varnish"
[ -x $NGINX ] || skip "no $NGINX after installing nginx"
command -v ab >/dev/null || skip "no ab after installing apache2-utils"

workdir
MGR=
at_exit 'kill_tree "${MGR:-}"; kill_nginx "$W/ng"'

# The backend: a bare nginx serving ng/www/file.
NP=$(free_port)
N=$W/ng
mkdir -p "$N/www" "$N/logs"
head -c 100000 /dev/urandom >"$N/www/file"
cat >"$N/nginx.conf" <<EOC
worker_processes 1;
pid $N/nginx.pid;
error_log $N/logs/error.log notice;
events { worker_connections 256; }
http { access_log off; server { listen 127.0.0.1:$NP; root $N/www; } }
EOC
$NGINX -c "$N/nginx.conf" -p "$N" -e "$N/logs/error.log" ||
	fail "the backend nginx did not start"

VP=$(free_port)
LOG=$W/varnishd.log
FAIL_LOG=$LOG
env LD_PRELOAD="$SHIM" MALLOCK_START=paused MALLOCK_EXE=varnishd \
	MALLOCK_SIGNAL=RTMIN+5 MALLOCK_OUTPUT="$W/out/var.%p.trace" \
	$VARNISHD -F -a "127.0.0.1:$VP" -b "127.0.0.1:$NP" -n "$W/n" \
	-s malloc,32m >"$LOG" 2>&1 </dev/null &
MGR=$!
i=0
until curl -sf -o "$W/got" "http://127.0.0.1:$VP/file"; do
	i=$((i + 1))
	[ $i -gt 300 ] && fail "varnish does not serve on 127.0.0.1:$VP within 30 s"
	kill -0 "$MGR" 2>/dev/null || fail "varnishd exited at start"
	sleep 0.1
done
cmp -s "$W/got" "$N/www/file" || fail "varnish served other bytes than the backend's"
CHILD=$(ps -o pid= --ppid "$MGR" | tr -d ' ')
[ "$(echo $CHILD | wc -w)" = 1 ] || fail "not one child of the manager: $CHILD"
shim_in "$MGR"
shim_in "$CHILD"

# rounds N SECONDS: N windows on the tree (as many as start within SECONDS).
rounds() {
	r=0
	t0=$(now)
	while [ $r -lt "$1" ] && elapsed_lt "$t0" "$2"; do
		ctl start --tree "$MGR"
		sleep 1
		ctl stop --tree "$MGR"
		ctl status --tree "$MGR"
		r=$((r + 1))
	done
	LOOP=$(since "$t0")
}
# Idle first: a child that has served one request and nothing for 5 s
# makes no allocation or lock call for seconds at a time (after a load
# its grown thread pool keeps it busier). The child itself, as an operator
# would look at it, then the tree.
sleep 5
for i in 1 2 3; do
	ctl status "$CHILD"
	sleep 1
done
rounds $((ROUNDS + 1)) $((BUDGET + 4))
R2=$r
L2=$LOOP

# --wake on the idle child: its CLI thread waits in poll(), which a signal
# would make fail with EINTR (the child then dies, the cache with it).
# A hit carries two transaction ids in X-Varnish.
hit() {
	curl -s -D - -o /dev/null "http://127.0.0.1:$VP/file" |
		grep -qiE '^X-Varnish: [0-9]+ [0-9]+'
}
hit || fail "the file is not a cache hit before the --wake round"
# Four rounds of the review's sequence (it killed the child 12 times of
# 12 when the signal went to any thread).
WRC=
for i in 1 2 3 4; do
	sleep 1.5
	ctl start --wake "$CHILD"
	WRC="$WRC $CTL_RC"
	sleep 1.5
	ctl stop --wake --tree "$MGR"
	WRC="$WRC $CTL_RC"
done
sleep 4 # the manager notices a dead child within its CLI ping (3 s)
no_line 'died|said Child dies|Child cleanup|Panic' "$LOG" \
	"the cache child died or was restarted after --wake"
no_line 'is gone' "$W/ctl.log" "ctl saw a woken process or thread gone"
NOW=$(ps -o pid= --ppid "$MGR" | tr -d ' ')
[ "$NOW" = "$CHILD" ] || fail "after --wake the cache child $CHILD is now '$NOW'"
hit || fail "the cached file is no longer a hit after --wake"
WOKEN=$(grep -c ': woken: thread' "$W/ctl.log")
REFUSED=$(grep -c -- '--wake refused' "$W/ctl.log")
# A process that answers within 300 ms is not signalled: how many were
# is printed (tests/server/wake_test.py is the deterministic guard).
timeout $((BUDGET + 60)) ab -q -t $((BUDGET + 40)) -n 2000000 -c 8 \
	"http://127.0.0.1:$VP/file" >"$W/ab.log" 2>&1 &
AB=$!
sleep 1
rounds "$ROUNDS" "$BUDGET"
R1=$r
L1=$LOOP
kill -INT "$AB" 2>/dev/null
wait "$AB"
grep -q '^Complete requests' "$W/ab.log" &&
	grep -qE '^Failed requests: +0$' "$W/ab.log" &&
	! grep -q 'Non-2xx' "$W/ab.log" ||
	fail "ab: $(grep -E 'Complete|Failed|Non-2xx|apr_' "$W/ab.log")"
REQS=$(awk '/^Complete requests/ {print $3}' "$W/ab.log")
RPS=$(awk '/^Requests per second/ {print $4}' "$W/ab.log")
sleep 4 # the manager notices a dead child within its CLI ping (3 s)

no_line 'died|said Child dies|Child cleanup|Panic' "$LOG" \
	"the cache child died or was restarted"
NOW=$(ps -o pid= --ppid "$MGR" | tr -d ' ')
[ "$NOW" = "$CHILD" ] || fail "the cache child $CHILD is now '$NOW'"
curl -sf -o "$W/got" "http://127.0.0.1:$VP/file" &&
	cmp -s "$W/got" "$N/www/file" || fail "varnish serves other bytes after the windows"

t1=$(now)
kill -TERM "$MGR"
i=0
while kill -0 "$MGR" 2>/dev/null; do
	i=$((i + 1))
	[ $i -gt 300 ] && fail "varnishd did not stop within 30 s of SIGTERM"
	sleep 0.1
done
wait "$MGR"
SHUT=$(since "$t1")
MGR0=$MGR
MGR=
WIN=$(total recording_resumes "$W/out/var.$CHILD.trace") || fail "$WIN"
[ "$WIN" -ge 1 ] || fail "no window in the cache child's trace"
$NGINX -c "$N/nginx.conf" -p "$N" -e "$N/logs/error.log" -s quit
say "3 ctl status of the idle child, $R2 windows (ctl start/stop/status" \
	"--tree) in $L2 s idle, 8 --wake (rc$WRC), $WOKEN threads" \
	"woken, $REFUSED processes refused, child and cache hit kept; $R1 in $L1 s under ab ($REQS requests at" \
	"$RPS/s, none failed): cache child" \
	"$CHILD of manager $MGR0 unchanged, no child restart in the log," \
	"$WIN windows in its trace; SIGTERM stop $SHUT s; $(ctl_times)"
say ok
