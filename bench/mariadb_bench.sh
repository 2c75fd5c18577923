#!/bin/sh
# mariadb_bench.sh CFG SHIM [SECONDS] - one run of MariaDB (Debian's mariadbd, with
# Debian's tcmalloc preloaded) under sysbench oltp_read_write, 8 threads, on
# a fresh data directory; CFG bare*, full* (SHIM recording everything,
# its default timing: one uncontended nest of holds in 16 timed), timed*
# (the same with every hold timed: MALLOCK_HOLD_EVERY=1) or sampled*
# (MALLOCK_SAMPLE_BYTES=524288); prints "CFG tps errors=N" (N:
# [ERROR] lines in the server log). Needs mariadb-server and sysbench; run
# as root. Alternate the configurations and divide by the bare run.
CFG=$1; SHIM=$2
W=${TMPDIR:-/tmp}/mallock-mdb; rm -rf $W; mkdir -p $W/out; chmod 755 $W; chmod 1777 $W/out
TC=/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4
mkdir $W/data; chown mysql:mysql $W/data $W
mariadb-install-db --no-defaults --user=mysql --datadir=$W/data --auth-root-authentication-method=socket --skip-test-db > $W/install.log 2>&1
: > $W/err.log; chown mysql:mysql $W/err.log
case $CFG in
bare*) PRE=$TC; EXTRA= ;;
full*) PRE="$SHIM:$TC"; EXTRA= ;;
timed*) PRE="$SHIM:$TC"; EXTRA="MALLOCK_HOLD_EVERY=1" ;;
sampled*) PRE="$SHIM:$TC"; EXTRA="MALLOCK_SAMPLE_BYTES=524288" ;;
esac
env LD_PRELOAD="$PRE" $EXTRA MALLOCK_EXE=mariadbd MALLOCK_OUTPUT="$W/out/mariadbd.%p.trace" /usr/sbin/mariadbd --no-defaults --user=mysql --datadir=$W/data --socket=$W/sock --skip-networking --pid-file=$W/pid --log-error=$W/err.log --innodb-buffer-pool-size=128M --max-connections=64 2>$W/stderr.log &
PID=$!
until mariadb-admin --socket=$W/sock -uroot ping >/dev/null 2>&1; do sleep 0.1; done
SB="sysbench oltp_read_write --db-driver=mysql --mysql-socket=$W/sock --mysql-user=root --tables=4 --table-size=20000"
mariadb --socket=$W/sock -uroot -e "CREATE DATABASE sbtest"
$SB prepare > $W/prepare.log 2>&1
$SB --threads=8 --time=${3:-15} --report-interval=0 run > $W/run.log 2>&1
kill -TERM $PID; while kill -0 $PID 2>/dev/null; do sleep 0.1; done
echo "$CFG $(awk '/transactions:/{gsub(/\(/,"",$3); print $3}' $W/run.log) errors=$(grep -c '\[ERROR\]' $W/err.log)"
