#!/bin/bash
# Formats mallock's C and C++ sources and headers with clang-format 14 and the
# committed .clang-format (the house style).
#   scripts/format.sh           rewrites every file that is not formatted
#   scripts/format.sh --check   changes nothing; prints each unformatted file,
#                               one a line, and exits 1 if there is any (CI)
# Files: *.c, *.h and *.cc under shim/ format/ analyzer/ testapps/ tests/
# bench/ include/ (git's tracked files in a clone, else every such file),
# except vendored code (a vendor/ or third_party/ folder).
# The version is pinned: another clang-format formats the same file
# differently, and CI would then disagree with the developer's machine.
# Layout clang-format would spoil (the X-macro lists, and the enums and
# initializers that expand them) sits between /* clang-format off */ and
# /* clang-format on */.
set -euo pipefail
cd "$(dirname "$0")/.."

check=0
case "${1:-}" in
--check) check=1 ;;
"") ;;
*)
	echo "format.sh: unknown argument '$1' (usage: scripts/format.sh [--check])" >&2
	exit 2
	;;
esac

cf=""
for c in clang-format-14 clang-format; do
	if command -v "$c" >/dev/null &&
		"$c" --version | grep -q 'version 14\.'; then
		cf=$c
		break
	fi
done
if [ -z "$cf" ]; then
	echo "format.sh: clang-format 14 not found (scripts/install-deps.sh installs clang-format-14)" >&2
	exit 2
fi

dirs=(shim format analyzer testapps tests bench include)
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	list() { git ls-files -- "${dirs[@]}"; }
else
	list() { find "${dirs[@]}" -type f; }
fi
mapfile -t files < <(list | grep -E '\.(c|h|cc)$' |
	grep -vE '(^|/)(vendor|third_party)/' | sort)

bad=0
for f in "${files[@]}"; do
	if [ "$check" = 1 ]; then
		if ! "$cf" --style=file "$f" | cmp -s - "$f"; then
			echo "$f"
			bad=1
		fi
	else
		"$cf" --style=file -i "$f"
	fi
done
exit "$bad"
