#!/bin/sh
# preload_order.sh SHIM TMPDIR - an allocator preloaded ahead of the shim
# (LD_PRELOAD=libtcmalloc.so.4:libmallock.so) is said to be that, with
# "put libmallock.so first", not "a statically linked allocator"; in the
# right order no warning is given, nor with the shim preloaded alone by a
# name that does not say libmallock.
set -eu
SHIM=$1 TMP=$2
rm -rf "$TMP" && mkdir -p "$TMP"
TCM=$(ldconfig -p | awk '/libtcmalloc\.so\.4 /{print $NF; exit}')
if [ -z "$TCM" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
	apt-get install -y libgoogle-perftools4 >/dev/null 2>&1 ||
		{ apt-get update >/dev/null 2>&1 &&
			apt-get install -y libgoogle-perftools4 >/dev/null 2>&1; } || true
	TCM=$(ldconfig -p | awk '/libtcmalloc\.so\.4 /{print $NF; exit}')
fi
if [ -z "$TCM" ]; then
	echo "preload_order: libtcmalloc.so.4 not installed (libgoogle-perftools4)"
	exit 77
fi
fail=0
no() { echo "preload_order: $*"; fail=1; }

LD_PRELOAD=$TCM:$SHIM MALLOCK_OUTPUT=$TMP/wrong.trace /bin/true 2>"$TMP/wrong.err"
grep -q "^mallock: malloc is defined by .*libtcmalloc.so.4, preloaded ahead of the shim: .*put libmallock.so first in LD_PRELOAD$" \
	"$TMP/wrong.err" || no "wrong order not told: $(cat "$TMP/wrong.err")"
grep -q "statically linked" "$TMP/wrong.err" && no "called a static link"

# Debian's python3 takes &malloc (non-PIE): malloc's address is its PLT
# stub, the order is still told.
if [ -x /usr/bin/python3 ]; then
	LD_PRELOAD=$TCM:$SHIM MALLOCK_OUTPUT=$TMP/py.trace /usr/bin/python3 \
		-c pass 2>"$TMP/py.err"
	grep -q "^mallock: .*libtcmalloc.so.4 is preloaded ahead of the shim: .*put libmallock.so first in LD_PRELOAD$" \
		"$TMP/py.err" || no "python3, wrong order not told: $(cat "$TMP/py.err")"
	LD_PRELOAD=$SHIM:$TCM MALLOCK_OUTPUT=$TMP/pyr.trace /usr/bin/python3 \
		-c pass 2>"$TMP/pyr.err"
	grep -q "ahead of the shim" "$TMP/pyr.err" &&
		no "python3, right order warned: $(cat "$TMP/pyr.err")"
	# The shim preloaded by another name (a link whose path does not say
	# libmallock), alone: nothing in LD_PRELOAD is an allocator ahead of
	# it, so no warning, and the program runs as without it.
	ln -sf "$SHIM" "$TMP/shim.so"
	if ! LD_PRELOAD=$TMP/shim.so MALLOCK_OUTPUT=$TMP/pyl.trace \
		timeout 20 /usr/bin/python3 -c pass 2>"$TMP/pyl.err"; then
		no "python3 with the shim preloaded as shim.so failed or hung"
	fi
	grep -q "ahead of the shim" "$TMP/pyl.err" &&
		no "python3, shim.so alone warned: $(cat "$TMP/pyl.err")"
fi

LD_PRELOAD=$SHIM:$TCM MALLOCK_OUTPUT=$TMP/right.trace /bin/true 2>"$TMP/right.err"
grep -q "ahead of the shim" "$TMP/right.err" &&
	no "right order warned: $(cat "$TMP/right.err")"
[ $fail = 0 ] && echo "preload_order: ok"
exit $fail
