#!/bin/sh
# smoke.sh STATUS REGEX APP ARGS... - the test apps' smoke tests
# (testapps/CMakeLists.txt): runs APP ARGS and passes when it exits with
# STATUS and its output (stdout and stderr) matches the extended REGEX.
# (CTest's PASS_REGULAR_EXPRESSION alone would ignore the exit status.)
want=$1 re=$2
shift 2
out=$("$@" 2>&1)
st=$?
printf '%s\n' "$out"
if [ "$st" != "$want" ]; then
	echo "smoke: $1 exited $st, expected $want"
	exit 1
fi
if ! printf '%s\n' "$out" | grep -Eq -- "$re"; then
	echo "smoke: the output of $1 does not match /$re/"
	exit 1
fi
