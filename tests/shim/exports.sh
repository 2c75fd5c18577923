#!/bin/sh
# exports.sh SHIM MAP - the shim exports exactly the hooks listed in
# shim/hooks/exports.map and mallock_* (nm -D --defined-only), and the key hooks
# are there.
set -eu
SHIM=$1 MAP=$2
fail=0
allowed=$(sed -n '/global:/,/local:/p' "$MAP" | tr ' ;' '\n\n' |
	grep -E '^[A-Za-z_][A-Za-z0-9_]*$' | grep -v -x -e global -e local)
for sym in $(nm -D --defined-only "$SHIM" | awk '{print $NF}'); do
	case $sym in mallock_*) continue ;; esac
	if ! printf '%s\n' "$allowed" | grep -q -x -- "$sym"; then
		echo "exports: unexpected exported symbol: $sym"
		fail=1
	fi
done
for sym in malloc free calloc realloc _Znwm _ZdlPv pthread_mutex_lock \
	pthread_mutex_unlock pthread_cond_wait pthread_create syscall \
	_exit _Exit quick_exit \
	mallock_lock_name_impl mallock_recording_impl; do
	nm -D --defined-only "$SHIM" | awk '{print $NF}' | grep -q -x "$sym" ||
		{ echo "exports: missing $sym"; fail=1; }
done
[ $fail = 0 ] && echo "exports: ok"
exit $fail
