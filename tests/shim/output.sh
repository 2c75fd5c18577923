#!/bin/sh
# output.sh SHIM TRACE_STATS TMPDIR - the trace file: mode 0600; a relative
# path named by its absolute path; a symlink
# (or any file) at the output path is never followed nor overwritten (the
# trace goes to PATH.<pid>, with a warning); an unwritable path warns once
# and leaves the host alone; invalid settings warn in one line and use the
# default, and their NOTEs are in the trace from its start.
set -eu
SHIM=$1 STATS=$2 TMP=$3
rm -rf "$TMP" && mkdir -p "$TMP"
fail=0
no() { echo "output: $*"; fail=1; }

# Mode 0600.
LD_PRELOAD=$SHIM MALLOCK_OUTPUT=$TMP/plain.trace /bin/true
[ "$(stat -c %a "$TMP/plain.trace")" = 600 ] || no "mode is not 0600"
"$STATS" "$TMP/plain.trace" >/dev/null || no "plain trace unreadable"

# A relative path is taken from the working directory at start, and the
# trace's first note names the file by its absolute path.
(cd "$TMP" && LD_PRELOAD=$SHIM MALLOCK_OUTPUT=rel.trace /bin/true)
real=$(cd "$TMP" && pwd -P)
"$STATS" -d "$TMP/rel.trace" | grep -q -F " NOTE level=0 tracing to $real/rel.trace" ||
	no "a relative MALLOCK_OUTPUT not named by its absolute path: $("$STATS" -d "$TMP/rel.trace" | grep -m1 NOTE)"

# A symlink at the path.
echo keep >"$TMP/victim"
ln -s "$TMP/victim" "$TMP/link.trace"
LD_PRELOAD=$SHIM MALLOCK_OUTPUT=$TMP/link.trace /bin/true 2>"$TMP/link.err"
[ "$(cat "$TMP/victim")" = keep ] || no "symlink target was written"
[ -L "$TMP/link.trace" ] || no "symlink replaced"
ls "$TMP"/link.trace.* >/dev/null 2>&1 || no "no fallback trace"
grep -q "^mallock: .*link.trace exists; tracing to .*link.trace\.[0-9]*$" \
	"$TMP/link.err" || no "no warning about the symlink"

# An unwritable path: one warning, exit status kept.
set +e
LD_PRELOAD=$SHIM MALLOCK_OUTPUT=$TMP/nodir/x.trace sh -c 'exit 3' 2>"$TMP/nodir.err"
st=$?
set -e
[ $st = 3 ] || no "exit status $st with an unwritable output"
[ "$(grep -c '^mallock: cannot create trace file' "$TMP/nodir.err")" = 1 ] ||
	no "expected one warning for an unwritable output"

# Invalid settings.
LD_PRELOAD=$SHIM MALLOCK_OUTPUT=$TMP/bad.trace MALLOCK_STACK_DEPTH=abc \
	MALLOCK_UNWIND=bogus MALLOCK_BUFFER_KB=1 /bin/true 2>"$TMP/bad.err"
grep -q -x "mallock: MALLOCK_STACK_DEPTH=abc: not a whole number in 1..64; using 16" \
	"$TMP/bad.err" || no "no warning for MALLOCK_STACK_DEPTH"
grep -q -x "mallock: MALLOCK_UNWIND=bogus: not libunwind, fp or none; using libunwind" \
	"$TMP/bad.err" || no "no warning for MALLOCK_UNWIND"
grep -q "^mallock: MALLOCK_BUFFER_KB=1: " "$TMP/bad.err" || no "no warning for MALLOCK_BUFFER_KB"
# Each warning in the trace too, as a WARN (level=1) NOTE: counting NOTEs
# would not do (every trace holds two INFO NOTEs anyway).
"$STATS" -d "$TMP/bad.trace" >"$TMP/bad.dump"
for w in "MALLOCK_STACK_DEPTH=abc: not a whole number in 1..64; using 16" \
	"MALLOCK_UNWIND=bogus: not libunwind, fp or none; using libunwind" \
	"MALLOCK_BUFFER_KB=1: "; do
	[ "$(grep -c -F " NOTE level=1 $w" "$TMP/bad.dump")" = 1 ] ||
		no "warning not in the trace once as a WARN NOTE: $w"
done
[ "$(grep -c ' NOTE level=1 ' "$TMP/bad.dump")" = 3 ] ||
	no "expected exactly 3 WARN NOTEs in bad.trace"
# ... written with the trace's header, not only at exit: a process killed
# by SIGKILL (no exit, no flush) keeps them.
set +e
LD_PRELOAD=$SHIM MALLOCK_OUTPUT=$TMP/killed.trace MALLOCK_STACK_DEPTH=abc \
	sh -c 'kill -9 $$' 2>/dev/null
set -e
"$STATS" -d "$TMP/killed.trace" >"$TMP/killed.dump" 2>&1 || true
[ "$(grep -c -F ' NOTE level=1 MALLOCK_STACK_DEPTH=abc: ' "$TMP/killed.dump")" = 1 ] ||
	no "a process killed by SIGKILL lost the warning NOTE of its start"

# Each unwinder produces a readable trace.
for u in libunwind fp none; do
	LD_PRELOAD=$SHIM MALLOCK_OUTPUT=$TMP/u_$u.trace MALLOCK_UNWIND=$u \
		MALLOCK_STACK_DEPTH=8 sort /etc/passwd >/dev/null
	[ "$("$STATS" -c ALLOC "$TMP/u_$u.trace")" -gt 0 ] || no "no ALLOC with MALLOCK_UNWIND=$u"
done
[ $fail = 0 ] && echo "output: ok"
exit $fail
