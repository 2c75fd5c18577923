# servers_lib.sh - sourced by postgres.sh, nginx.sh and varnish.sh: real
# servers from Debian operated with `mallock ctl` / `mallock attach` while
# they serve. The caller sets NAME (the prefix of every line it prints) and
# BUILD (the build directory) before sourcing it.
#
# What is asserted is the server's own behaviour (its log, its pids, its
# clients); mallock's output is only kept in ctl.log. A ctl start/stop that
# says the request is pending (applied at the process's next allocation or
# lock call) is not a failure; a ctl that does not return within 30 s is.
MALLOCK=$BUILD/bin/mallock
SHIM=$BUILD/lib/libmallock.so
W=
CLEANUPS=

say() { echo "$NAME: $*"; }
skip() {
	say "SKIP: $*"
	exit 77
}
fail() {
	say "FAIL: $*"
	[ -n "${FAIL_LOG:-}" ] && [ -f "$FAIL_LOG" ] && tail -20 "$FAIL_LOG"
	[ -n "$W" ] && [ -f "$W/ctl.log" ] && {
		echo "--- last ctl commands:"
		tail -12 "$W/ctl.log"
	}
	exit 1
}
# no_line PATTERN FILE WHAT: fails with WHAT, and the lines of FILE that
# match the extended regular expression PATTERN (the first 8), if any does.
no_line() {
	grep -qE "$1" "$2" || return 0
	grep -E "$1" "$2" | head -8
	FAIL_LOG=
	fail "$3"
}
now() { date +%s.%N; }
since() { echo "$(now) $1" | awk '{printf "%.1f", $1 - $2}'; }
# elapsed_lt T0 SECONDS: true while less than SECONDS have passed since T0.
elapsed_lt() { echo "$(now) $1 $2" | awk '{exit !($1 - $2 < $3)}'; }

need_root() {
	[ "$(id -u)" = 0 ] ||
		skip "needs root (the server starts as root or as its own user)"
	[ -x "$MALLOCK" ] && [ -f "$SHIM" ] || fail "no $MALLOCK or $SHIM"
}

# need_pkgs PKG...: installs the Debian packages that are not installed.
need_pkgs() {
	missing=
	for _p in "$@"; do
		dpkg-query -W -f='${Status}' "$_p" 2>/dev/null |
			grep -q 'install ok installed' || missing="$missing $_p"
	done
	[ -z "$missing" ] && return 0
	say "installing$missing"
	# Another job may hold dpkg's lock: wait for it (bounded).
	(DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		-o DPkg::Lock::Timeout=120 $missing ||
		{ apt-get update -qq -o DPkg::Lock::Timeout=120 &&
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
				-o DPkg::Lock::Timeout=120 $missing; }) \
		>/tmp/mallock-apt.$$.log 2>&1
	_rc=$?
	for _p in $missing; do
		dpkg-query -W -f='${Status}' "$_p" 2>/dev/null |
			grep -q 'install ok installed' ||
			skip "Debian package $_p could not be installed" \
				"(apt-get rc $_rc: $(tail -1 /tmp/mallock-apt.$$.log))"
	done
	rm -f /tmp/mallock-apt.$$.log
}

# workdir: a private temporary directory W (removed at exit unless KEEP=1)
# and W/out, where every process of the server may write its trace.
workdir() {
	W=$(mktemp -d /tmp/mallock-$NAME.XXXXXX) || fail "mktemp"
	chmod 755 "$W"
	mkdir "$W/out" && chmod 1777 "$W/out"
	: >"$W/ctl.log"
}

# at_exit CMD: CMD runs at exit, before the directory is removed, whatever
# happened (the last added runs first).
at_exit() { CLEANUPS="$1; $CLEANUPS"; }
run_cleanups() {
	trap - EXIT INT TERM
	eval "$CLEANUPS" 2>/dev/null
	if [ -n "$W" ] && [ "${KEEP:-0}" != 1 ]; then
		rm -rf "$W"
	elif [ -n "$W" ]; then
		say "kept $W"
	fi
}
trap 'run_cleanups' EXIT
trap 'exit 1' INT TERM

# kill_tree PID: SIGKILL to PID and its descendants (the cleanup's last
# resort; a test that passes has stopped its server cleanly before). PID
# is stopped first, so that it cannot replace a child killed before it (an
# nginx master forks a new worker when one dies). The control pages of
# processes killed so cannot be removed by the shim: they are removed here.
kill_tree() {
	[ -n "$1" ] && kill -0 "$1" 2>/dev/null || return 0
	kill -STOP "$1" 2>/dev/null
	for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do kill_tree "$c"; done
	kill -KILL "$1" 2>/dev/null
	rm -f /tmp/mallock-*/"$1".page
}

# kill_nginx DIR...: kill_tree of every nginx master started with a prefix
# under DIR: those its pid files name (an upgrade's nginx.pid.oldbin too),
# read all before any is killed (a master renames .oldbin back when its new
# binary dies), and those whose title names DIR.
kill_nginx() {
	_pids=
	for _d in "$@"; do
		_pids="$_pids $(cat "$_d"/nginx.pid "$_d"/nginx.pid.oldbin 2>/dev/null)"
		_pids="$_pids $(ps -eo pid=,args= | awk -v d="$_d/" \
			'/nginx: master process/ && index($0, d) {print $1}')"
	done
	for _p in $_pids; do kill_tree "$_p"; done
}

# free_port: a TCP port on 127.0.0.1 nobody listens on now.
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# shim_in PID: fails unless PID has libmallock.so mapped (else the test
# would operate a process the shim is not in, and prove nothing).
shim_in() {
	grep -q libmallock "/proc/$1/maps" 2>/dev/null ||
		fail "process $1 ($(cat /proc/"$1"/comm 2>/dev/null)) has no libmallock.so mapped"
}

# ctl ARGS...: `mallock ctl ARGS`, its output and exit status kept in
# ctl.log; only a ctl that hangs fails here.
CTL_N=0
ctl() {
	_t0=$(now)
	echo "== ctl $* ($(date +%T.%N | cut -c1-12))" >>"$W/ctl.log"
	timeout 30 "$MALLOCK" ctl "$@" >>"$W/ctl.log" 2>&1
	_rc=$?
	CTL_RC=$_rc
	echo "== rc $_rc, $(since "$_t0") s" >>"$W/ctl.log"
	[ $_rc = 124 ] && fail "mallock ctl $* did not return within 30 s"
	CTL_N=$((CTL_N + 1))
	return 0
}

# ctl_times: "N ctl commands, T s each at most, M s median" from ctl.log.
ctl_times() {
	awk '/^== rc / {sub(/,/, "", $3); print $4}' "$W/ctl.log" | sort -n |
		awk '{v[NR] = $1} END {if (NR) printf "%d ctl commands, %.1f s each at most, %.1f s median", NR, v[NR], v[int((NR + 1) / 2)]}'
}

# total KEY TRACE...: prints the sum of the report's totals.KEY over the
# traces (recording_resumes: the windows; allocations); for a trace `mallock
# report` cannot read it prints why and returns 1 (use: N=$(total ...) ||
# fail "$N").
total() {
	_key=$1
	shift
	_n=0
	for _t in "$@"; do
		[ -s "$_t" ] || continue
		"$MALLOCK" report --format=json "$_t" >"$W/report.json" \
			2>"$W/report.err" || {
			echo "mallock report $_t: $(head -3 "$W/report.err")"
			return 1
		}
		_k=$(python3 -c 'import json,sys
print(json.load(open(sys.argv[1]))["totals"][sys.argv[2]])' \
			"$W/report.json" "$_key") || {
			echo "no totals.$_key in the report of $_t"
			return 1
		}
		_n=$((_n + _k))
	done
	echo $_n
}
