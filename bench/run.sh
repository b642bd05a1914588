#!/usr/bin/env bash
# Run the benchmarks: one command, from the repository root or anywhere.
#
#   bash bench/run.sh
#
# Builds with -DCB_BUILD_BENCH=ON -DCMAKE_BUILD_TYPE=Release into build-bench/,
# starts a private PostgreSQL with DEFAULT durability settings
# (bench/pg-bench-cluster.sh; fsync and synchronous_commit on, unlike the test
# cluster of scripts/pg-cluster.sh), and runs on it:
#   1. cbatch-bench: the ledger job through cbatch vs the hand-written libpq
#      loop vs set-based SQL vs the partitioned ledger with 1, 2 and 4 workers
#      (threads of the launching process, and worker processes), at chunk 1000
#      and at chunk 10000
#   2. cbatch-bench --mode rss-scaling: cbatch's peak RSS at 100k, 1M, 5M rows
#   3. cbatch-repo-bench: launches per second and one chunk's bookkeeping, at
#      chunk 1000 and 10000
# then stops and removes the cluster. The tables are printed as Markdown; the
# whole output is also saved in build-bench/bench-results.txt.
#
# Settings (environment): ROWS (default 500000), ROUNDS (default 5), CHUNKS
# (default "1000 10000"), RSS=0 skips the rss-scaling run (5M rows: ~2 min),
# BENCH_DIR (cluster directory, default /tmp/cbatch-bench-pg), NICE=0 to run
# at normal priority.
# Takes about 15 minutes on 2 cores (more on a busy machine: each run first waits
# up to 15 s for the machine to be quiet). Not part of the test suite.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="$root/build-bench"
ROWS=${ROWS:-500000}
ROUNDS=${ROUNDS:-5}
CHUNKS=${CHUNKS:-"1000 10000"}
RSS=${RSS:-1}
dir=${BENCH_DIR:-/tmp/cbatch-bench-pg}
out="$build/bench-results.txt"

cmake -S "$root" -B "$build" -DCB_BUILD_BENCH=ON -DCB_BUILD_TESTS=OFF \
	-DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"$(nproc)" --target cbatch-bench cbatch-repo-bench >/dev/null

db=$(bash "$root/bench/pg-bench-cluster.sh" start "$dir")
trap 'bash "$root/bench/pg-bench-cluster.sh" stop "$dir"' EXIT

# On a shared machine, other processes take CPU from the client and the
# server at random moments (each run prints how much, "others N cores").
# As root, the server and the benchmarks run at nice -10, which shields them
# from ordinary processes; every variant gets the same treatment.
run=()
if [ "$(id -u)" -eq 0 ] && [ "${NICE:-1}" != 0 ]; then
	pm=$(head -n 1 "$dir/data/postmaster.pid")
	renice -n -10 -p "$pm" $(pgrep -P "$pm") >/dev/null
	run=(nice -n -10)
fi

start=$(date +%s)
{
	echo "# cbatch benchmarks, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$root" diff --quiet 2>/dev/null || echo ' (with local changes)')"
	for c in $CHUNKS; do
		"${run[@]}" "$build/bench/cbatch-bench" --db "$db" --rows "$ROWS" --rounds "$ROUNDS" --chunk "$c"
	done
	if [ "$RSS" != 0 ]; then
		"${run[@]}" "$build/bench/cbatch-bench" --db "$db" --mode rss-scaling --chunk 1000
	fi
	for c in $CHUNKS; do
		"${run[@]}" "$build/bench/cbatch-repo-bench" --db "$db" --chunk "$c" --chunks 1000 \
			--launches 200 --rounds "$ROUNDS" $([ "$c" = "${CHUNKS%% *}" ] || echo --only chunk)
	done
	echo
	echo "total wall time: $(($(date +%s) - start)) s"
} 2>&1 | tee "$out"
