#!/usr/bin/env bash
# Build the libFuzzer targets with clang (ASan + UBSan) and run each for a
# while on its seed corpus (tests/fuzz/corpus/<target>).
#
#   bash scripts/fuzz.sh [--seconds N]    default 30 per target; 600 for a real run
#
# A crash, leak or sanitizer report fails the run and leaves the input in
# build-fuzz/crashes/. The build is warnings-as-errors: this is CI's only
# clang build, and clang warns of things gcc does not.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
seconds=30
[ "${1:-}" = "--seconds" ] && seconds=$2
command -v clang >/dev/null || { echo "fuzz.sh: clang is needed: apt-get install clang" >&2; exit 2; }
build=$root/build-fuzz
CC=clang cmake -S "$root" -B "$build" -DCB_FUZZ=ON -DCB_BUILD_TESTS=OFF -DCB_WERROR=ON \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)" --target fuzz_params fuzz_csv fuzz_jsonl fuzz_cron fuzz_template >/dev/null
mkdir -p "$build/crashes"
# One target per core at a time, each for its full time: on 2 cores the
# same fuzzing per target in 3/5 of the wall time.
one() {
	local t=$1 work=$build/corpus-$1
	mkdir -p "$work"
	cp -n "$root"/tests/fuzz/corpus/$t/* "$work"/ 2>/dev/null || true
	echo "fuzz: $t for ${seconds}s"
	if ! "$build/fuzz_$t" -max_total_time="$seconds" -max_len=8192 -timeout=10 \
		-artifact_prefix="$build/crashes/$t-" "$work" >"$build/fuzz-$t.log" 2>&1; then
		{
			echo "fuzz: $t FAILED; see $build/fuzz-$t.log and $build/crashes/"
			tail -30 "$build/fuzz-$t.log"
		} >&2
		return 1
	fi
	echo "fuzz: $t: $(grep -E "^#[0-9]+.*(DONE|pulse)" "$build/fuzz-$t.log" | tail -1 || true)"
}
export -f one
export root build seconds
status=0
printf '%s\n' params csv jsonl cron template |
	xargs -r -n 1 -P "$(nproc 2>/dev/null || echo 2)" bash -c 'one "$1"' _ || status=1
exit $status
