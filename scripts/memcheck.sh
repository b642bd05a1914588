#!/usr/bin/env bash
# Run every unit test program of a build under valgrind memcheck: any error
# or definite leak fails.   bash scripts/memcheck.sh [BUILD_DIR]   (default build)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
command -v valgrind >/dev/null || { echo "memcheck.sh: apt-get install valgrind" >&2; exit 2; }
export CBATCH_TEST_SOURCE_DIR=$root CBATCH_TEST_TMPDIR=$build/tests/tmp
# What ctest gives unit.docs: the manual page and completion the build wrote,
# and the cbatch that wrote them.
export CBATCH_TEST_DOC_DIR=$build/doc CBATCH_TEST_CLI=$build/cbatch
mkdir -p "$CBATCH_TEST_TMPDIR"
# One program per core at a time (valgrind is CPU-bound; each program's
# scratch files are its own, mkdtemp): on 2 cores half the wall time.
# Each line is one write, so parallel lines never mix.
one() {
	local t=$1
	if valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
		"$t" >"$t.memcheck.log" 2>&1; then
		echo "memcheck: $(basename "$t"): clean"
	else
		{
			echo "memcheck: $(basename "$t"): FAILED"
			tail -40 "$t.memcheck.log"
		} >&2
		return 1
	fi
}
export -f one
status=0
find "$build/tests" -maxdepth 1 -name 'unit_test_*' -type f -perm -u+x -print0 | sort -z |
	xargs -0 -r -n 1 -P "$(nproc 2>/dev/null || echo 2)" bash -c 'one "$1"' _ || status=1
exit $status
