#!/bin/sh
# postgres.sh BUILD_DIR [--long SECONDS] - PostgreSQL 15 from Debian, run as
# user postgres in a temporary data directory (unix socket only, no TCP),
# preloaded with libmallock.so (MALLOCK_START=paused), under pgbench. While
# pgbench runs, `mallock ctl status --tree POSTMASTER`, `ctl start --tree`
# and `ctl stop --tree` are run in rounds (3 by default, as many as start
# within 12 s).
# The server must not notice: its log holds no PANIC, no "terminated by
# signal", no "all server processes terminated; reinitializing" (a crash
# restart), the postmaster's and the checkpointer's pids are unchanged,
# pgbench exits 0 with no session aborted, and a fast shutdown takes less
# than 30 s. The backends' traces must hold the windows (at least one).
#
# The checkpointer's own SIGUSR2 handler means "write the shutdown
# checkpoint and exit": a SIGUSR2 from ctl makes it PANIC under load.
#
# Default (CTest rel_postgres_short, labels reliability and realserver):
# at most 3 rounds under 20 s of pgbench. --long SECONDS (at most 600):
# rounds for SECONDS (at most 1000 rounds), pgbench running 8 s longer.
# Prints the numbers docs/reliability.md quotes. Needs root and Debian's
# postgresql (installed with apt-get when missing; 77 when it cannot be).
set -u
NAME=postgres
BUILD=$(cd "$1" && pwd)
. "$(dirname "$0")/servers_lib.sh"
ROUNDS=3
BUDGET=12
if [ "${2:-}" = --long ]; then
	ROUNDS=1000
	BUDGET=${3:-60}
	[ "$BUDGET" -le 600 ] 2>/dev/null || fail "--long SECONDS: at most 600, not ${3:-}"
fi
need_root
need_pkgs postgresql
BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -n "$BIN" ] && [ -x "$BIN/postgres" ] && [ -x "$BIN/pgbench" ] ||
	skip "no /usr/lib/postgresql/*/bin/postgres or pgbench after installing postgresql"
id postgres >/dev/null 2>&1 || skip "no user postgres after installing postgresql"

workdir
chown postgres "$W"
LOG=$W/server.log
FAIL_LOG=$LOG
PORT=5432 # only names the socket W/.s.PGSQL.5432: listen_addresses is empty
as_pg() { runuser -u postgres -- "$@"; }
at_exit 'as_pg "$BIN/pg_ctl" -D "$W/data" -m immediate -w -t 10 stop >/dev/null 2>&1; kill_tree "${PM:-}"; kill_tree "${BENCH:-}"'
PM=
BENCH=

as_pg "$BIN/initdb" -N -A trust -D "$W/data" >"$W/initdb.log" 2>&1 ||
	fail "initdb: $(tail -3 "$W/initdb.log")"
# MALLOCK_EXE=postgres: pg_ctl and its sh stay inert.
as_pg env LD_PRELOAD="$SHIM" MALLOCK_START=paused MALLOCK_EXE=postgres \
	MALLOCK_OUTPUT="$W/out/pg.%p.trace" \
	"$BIN/pg_ctl" -D "$W/data" -l "$LOG" -w -t 60 \
	-o "-k $W -c listen_addresses= -p $PORT" start >"$W/pg_ctl.log" 2>&1 ||
	fail "pg_ctl start: $(tail -3 "$W/pg_ctl.log")"
PM=$(head -1 "$W/data/postmaster.pid")
aux() { ps -o pid=,args= --ppid "$PM" | awk -v w="$1" '$0 ~ w {print $1}'; }
CKPT=$(aux 'checkpointer')
[ -n "$CKPT" ] || fail "no checkpointer among the postmaster's children"
shim_in "$PM"
shim_in "$CKPT"

PGB="$BIN/pgbench -h $W -p $PORT"
as_pg $PGB -i -s 1 -q postgres >"$W/init.log" 2>&1 ||
	fail "pgbench -i: $(tail -3 "$W/init.log")"
# pgbench runs 8 s longer than rounds start; -T bounds it, timeout too.
T=$((BUDGET + 8))
as_pg timeout $((T + 30)) $PGB -c 4 -j 2 -T $T postgres >"$W/bench.log" 2>&1 &
BENCH=$!
sleep 2
# The 4 pgbench sessions: the backends whose windows are checked below.
BACKENDS=$(aux 'postgres postgres')
[ -n "$BACKENDS" ] || fail "no pgbench backend after 2 s ($(tail -2 "$W/bench.log"))"
PROCS0=$(ps -o pid= --ppid "$PM" | sort -n | tr '\n' ' ')

t0=$(now)
r=0
while [ $r -lt "$ROUNDS" ] && elapsed_lt "$t0" "$BUDGET" &&
	kill -0 "$BENCH" 2>/dev/null; do
	ctl status --tree "$PM"
	ctl start --tree "$PM"
	sleep 1
	ctl stop --tree "$PM"
	r=$((r + 1))
done
LOOP=$(since "$t0")
[ $r -ge 1 ] || fail "not one round ran"
wait "$BENCH"
BRC=$?
BENCH=
sleep 1 # a PANIC is logged within 0.5 s of the signal

no_line 'PANIC|terminated by signal|reinitializing|terminating any other active server processes' \
	"$LOG" "the cluster crash-restarted during the ctl rounds"
grep -q 'aborted' "$W/bench.log" && fail "pgbench sessions were aborted"
[ $BRC = 0 ] || fail "pgbench exit $BRC: $(tail -3 "$W/bench.log")"
[ "$(head -1 "$W/data/postmaster.pid")" = "$PM" ] && kill -0 "$PM" ||
	fail "the postmaster $PM is gone or replaced"
[ "$(aux checkpointer)" = "$CKPT" ] ||
	fail "the checkpointer $CKPT was replaced by $(aux checkpointer)"
TPS=$(awk '/^tps/ {print $3; exit}' "$W/bench.log")

t1=$(now)
as_pg "$BIN/pg_ctl" -D "$W/data" -m fast -w -t 30 stop >"$W/stop.log" 2>&1 ||
	fail "no fast shutdown within 30 s: $(tail -2 "$W/stop.log")"
SHUT=$(since "$t1")
PM0=$PM
PM=
no_line 'PANIC|FATAL|terminated by signal' "$LOG" \
	"errors in the server's log at shutdown"

TRACES=
for p in $BACKENDS; do TRACES="$TRACES $W/out/pg.$p.trace"; done
N=$(total recording_resumes $TRACES) || fail "$N"
[ "$N" -ge 1 ] || fail "no window in the backends' traces ($TRACES)"
say "$r rounds of ctl status/start/stop --tree in $LOOP s under pgbench" \
	"-c 4 ($TPS tps, exit 0); postmaster $PM0 and checkpointer $CKPT" \
	"unchanged (children at start: $PROCS0); no PANIC or restart in the" \
	"log; $N windows in the 4 backends' traces; fast shutdown $SHUT s;" \
	"$(ctl_times)"
say ok
