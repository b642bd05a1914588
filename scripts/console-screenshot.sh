#!/usr/bin/env bash
# Regenerate the console page's screenshot (docs/console.png, in docs/console.md) from the
# browser test (tests/browser/run.sh, ctest browser.dashboard): its running
# execution at 1366x768, taken while its counts advance.
#
#   bash scripts/console-screenshot.sh [BUILD_DIR]     (default: build)
#
# Builds BUILD_DIR first (configured if needed). Needs what the browser test
# needs (chromium, node and npm); if the test is skipped or fails, the picture
# is left as it was and the exit status is 1.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
[ -f "$build/CMakeCache.txt" ] || cmake -S "$root" -B "$build" -DCB_WERROR=ON
cmake --build "$build" -j"$(nproc 2>/dev/null || echo 2)"
out=$(mktemp --suffix=.png)
trap 'rm -f "$out"' EXIT
rm -f "$out"
(cd "$build" && CBATCH_CONSOLE_PNG=$out ctest -R '^browser\.dashboard$' --output-on-failure)
if [ ! -s "$out" ]; then
	echo "console-screenshot: the browser test made no screenshot (skipped?); docs/console.png unchanged" >&2
	exit 1
fi
cp "$out" "$root/docs/console.png"
echo "console-screenshot: docs/console.png regenerated"
