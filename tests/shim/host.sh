#!/bin/sh
# host.sh SHIM TMPDIR - the host's exit status, stdout and stderr are the
# same with and without the shim (a shell pipeline with children, exec and
# threads of sort).
set -eu
SHIM=$1 TMP=$2
rm -rf "$TMP" && mkdir -p "$TMP"
prog='printf "line1\nline2\n"; seq 1 2000 | sort -n -r --parallel=2 | head -3; ls / >/dev/null; exit 7'
set +e
sh -c "$prog" >"$TMP/bare.out" 2>"$TMP/bare.err"; bare=$?
LD_PRELOAD=$SHIM MALLOCK_OUTPUT=$TMP/t.%p.trace sh -c "$prog" \
	>"$TMP/shim.out" 2>"$TMP/shim.err"; shim=$?
set -e
fail=0
[ "$bare" = 7 ] && [ "$shim" = 7 ] || { echo "host: status $bare vs $shim"; fail=1; }
cmp -s "$TMP/bare.out" "$TMP/shim.out" || { echo "host: stdout differs"; fail=1; }
cmp -s "$TMP/bare.err" "$TMP/shim.err" || { echo "host: stderr differs"; cat "$TMP/shim.err"; fail=1; }
n=$(ls "$TMP"/t.*.trace 2>/dev/null | wc -l)
[ "$n" -ge 2 ] || { echo "host: expected traces of sh and its children, got $n"; fail=1; }
[ $fail = 0 ] && echo "host: ok"
exit $fail
