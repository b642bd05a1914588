#!/usr/bin/env bash
# The formatting check: clang-format (.clang-format at the top) over the
# tracked C sources and headers, without changing them.
#
#   bash scripts/format-check.sh [--fix] [FILE...]
#
#   --fix     format the files in place instead of checking them
#   FILE...   check (or fix) only these files (default: every tracked *.c and
#             *.h; generated files live in the build tree and are never tracked)
#
# Exit status: 0 all formatted, 1 some file is not (each is listed, with
# clang-format's diagnostics), 2 clang-format is missing or bad usage.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
fix=0
files=()
for a in "$@"; do
	case "$a" in
	--fix) fix=1 ;;
	-h | --help)
		sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	-*)
		echo "format-check: unknown option '$a' (try --help)" >&2
		exit 2
		;;
	*) files+=("$a") ;;
	esac
done

cf=${CLANG_FORMAT:-}
if [ -z "$cf" ]; then
	for c in clang-format clang-format-19 clang-format-16 clang-format-15 clang-format-14; do
		if command -v "$c" >/dev/null 2>&1; then
			cf=$c
			break
		fi
	done
fi
if [ -z "$cf" ]; then
	echo "format-check: clang-format not found (apt-get install clang-format, or set CLANG_FORMAT)" >&2
	exit 2
fi

if [ ${#files[@]} -eq 0 ]; then
	mapfile -t files < <(git ls-files -- '*.c' '*.h')
fi
if [ ${#files[@]} -eq 0 ]; then
	echo "format-check: no files" >&2
	exit 0
fi

if [ $fix -eq 1 ]; then
	"$cf" -i --style=file "${files[@]}"
	exit 0
fi

bad=0
for f in "${files[@]}"; do
	if ! "$cf" --dry-run --Werror --style=file "$f" >/dev/null 2>&1; then
		echo "format-check: $f is not formatted (bash scripts/format-check.sh --fix $f)" >&2
		bad=$((bad + 1))
	fi
done
if [ $bad -gt 0 ]; then
	echo "format-check: $bad of ${#files[@]} files not formatted ($cf)" >&2
	exit 1
fi
echo "format-check: ${#files[@]} files formatted ($cf)"
