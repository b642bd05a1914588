#!/usr/bin/env bash
# The test command: install what is missing, configure, build, run every test.
#
#   bash scripts/test.sh [--sanitize] [--build-dir DIR] [-- CTEST-ARGS...]
#
#   --sanitize        build with -DCB_SANITIZE=address;undefined (default build
#                     directory build-asan) and run with leak detection on
#   --build-dir DIR   build directory (default: build, or build-asan)
#   -- ARGS           passed to ctest, e.g. `-- -R integration.harness` or `-- -L unit`
#
# Without ARGS, every test, the `ha` label's (a highly available cluster
# through switchovers and crashes, tests/ha/test_ha.c) included.
#
# Warnings are errors (-DCB_WERROR=ON). Integration tests run against a
# throwaway PostgreSQL cluster that ctest starts and removes (tests/CMakeLists.txt,
# scripts/pg-cluster.sh). The exit status is ctest's.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
sanitize=0
build_dir=
ctest_args=()

while [ $# -gt 0 ]; do
	case "$1" in
	--sanitize) sanitize=1 ;;
	--build-dir)
		[ $# -ge 2 ] || { echo "test.sh: --build-dir needs a directory" >&2; exit 2; }
		build_dir=$2
		shift
		;;
	--build-dir=*) build_dir=${1#--build-dir=} ;;
	--)
		shift
		ctest_args=("$@")
		break
		;;
	-h | --help)
		sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "test.sh: unknown argument '$1' (try --help)" >&2
		exit 2
		;;
	esac
	shift
done

if [ -z "$build_dir" ]; then
	build_dir=$root/build
	[ $sanitize -eq 1 ] && build_dir=$root/build-asan
fi

bash "$root/scripts/install-deps.sh"

cmake_args=(-S "$root" -B "$build_dir" -DCB_WERROR=ON)
if [ $sanitize -eq 1 ]; then
	cmake_args+=("-DCB_SANITIZE=address;undefined")
	export ASAN_OPTIONS=detect_leaks=1
	export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
else
	# Reset it, in case this build directory was configured with sanitizers.
	cmake_args+=("-DCB_SANITIZE=")
fi

jobs=$(nproc 2>/dev/null || echo 2)
echo "test.sh: configuring $build_dir" >&2
cmake "${cmake_args[@]}"
echo "test.sh: building with $jobs jobs" >&2
cmake --build "$build_dir" -j"$jobs"

echo "test.sh: running tests" >&2
status=0
# One case more than cores: most cases spend their time waiting (a lease, a
# child, a server restart), so a core is seldom kept idle by that; on 2 busy
# cores (stress-ng beside it) -j3 took the suite from 899 s to 769 s, and
# every case passed. Cases that must not overlap hold a lock (RESOURCE_LOCK
# cbatch_paced, cbatch_ha; tests/CMakeLists.txt).
(cd "$build_dir" && ctest --output-on-failure -j$((jobs + 1)) "${ctest_args[@]}") || status=$?
exit $status
