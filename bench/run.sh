#!/usr/bin/env bash
# Run the benchmarks: one command, from the repository root or anywhere.
#
#   bash bench/run.sh            the full benchmark (about 20 minutes)
#   bash bench/run.sh --quick    the ratios only, smaller (1.5 minutes once
#                                built): the ledger at chunk 1000 (cbatch, on one
#                                connection and on two, vs the hand-written loop
#                                vs set-based SQL) and the other built-in paths
#                                against their limits
#
# Builds with -DCB_BUILD_BENCH=ON -DCMAKE_BUILD_TYPE=Release into build-bench/,
# starts a private PostgreSQL with DEFAULT durability settings
# (bench/pg-bench-cluster.sh; fsync and synchronous_commit on, unlike the test
# cluster of scripts/pg-cluster.sh), and runs on it:
#   1. cbatch-bench: the ledger job through cbatch (on one connection, and on
#      two: chunk.connections=2) vs the hand-written libpq loop vs set-based
#      SQL vs the partitioned ledger with 1, 2 and 4 workers (threads of the
#      launching process, and worker processes; and 4 partitions on 2 threads),
#      at chunk 1000 and at chunk 10000
#   2. cbatch-bench --mode rss-scaling: cbatch's peak RSS at 100k, 1M, 5M rows
#   3. cbatch-repo-bench: launches per second and one chunk's bookkeeping, at
#      chunk 1000 and 10000
#   4. cbatch-paths-bench: the queue reader, the CSV and JSONL readers, the
#      file writers and the accumulating upsert (sales_totals) against their
#      limits (bench/paths_bench.c)
#   5. bench/firing_latency.sh: a scheduler firing's latency with 1, 10 and
#      100 schedules due at once on 2 nodes (its own cluster; FIRING=0 skips)
# then stops and removes the cluster. The tables are printed as Markdown; the
# whole output is also saved in build-bench/bench-results.txt.
#
# Settings (environment): ROWS (default 500000; --quick 100000), ROUNDS
# (default 5), PATH_ROWS (paths, default 200000; --quick 50000), CHUNKS
# (default "1000 10000"; --quick 1000), RSS=0 skips the rss-scaling run (5M rows: ~2 min),
# BENCH_DIR (cluster directory, default /tmp/cbatch-bench-pg), NICE=0 to run
# at normal priority, FIRING=0 skips the firing latency (FIRING_COUNTS, default
# "1 10 100", and FIRING_ROUNDS, instants per count, default 2).
# Takes about 20 minutes on 2 cores (more on a busy machine: each run first waits
# up to 15 s for the machine to be quiet; --quick waits 1 s at most, and says
# the load average instead). Not part of the test suite.
set -euo pipefail

quick=0
case "${1:-}" in
--quick) quick=1 ;;
"") ;;
*)
	echo "usage: bash bench/run.sh [--quick]" >&2
	exit 2
	;;
esac
if [ "$quick" = 1 ]; then
	: "${ROWS:=100000}" "${ROUNDS:=5}" "${CHUNKS:=1000}" "${PATH_ROWS:=50000}"
fi
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="$root/build-bench"
ROWS=${ROWS:-500000}
PATH_ROWS=${PATH_ROWS:-200000}
ROUNDS=${ROUNDS:-5}
CHUNKS=${CHUNKS:-"1000 10000"}
RSS=${RSS:-1}
dir=${BENCH_DIR:-/tmp/cbatch-bench-pg}
out="$build/bench-results$([ "$quick" = 1 ] && echo -quick).txt"

cmake -S "$root" -B "$build" -DCB_BUILD_BENCH=ON -DCB_BUILD_TESTS=OFF \
	-DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"$(nproc)" --target cbatch-bench cbatch-repo-bench \
	cbatch-paths-bench cbatch-examples >/dev/null

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
machine() {
	echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')," \
		"$(psql "$db" -XAtqc 'SELECT version()' | cut -d, -f1), load average $(cut -d' ' -f1-3 /proc/loadavg)"
}
if [ "$quick" = 1 ]; then
	{
		echo "# cbatch quick benchmark, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$root" diff --quiet 2>/dev/null || echo ' (with local changes)')"
		machine
		"${run[@]}" "$build/bench/cbatch-bench" --db "$db" --rows "$ROWS" --rounds "$ROUNDS" \
			--chunk "${CHUNKS%% *}" --quiet-wait 1 --only cbatch,cbatch-2c,libpq-seq,libpq-pipe,set-based \
			>"$build/quick-ledger.txt"
		"${run[@]}" "$build/bench/cbatch-paths-bench" --db "$db" --rows "$PATH_ROWS" \
			--rounds "$ROUNDS" --chunk "${CHUNKS%% *}" >"$build/quick-paths.txt"
		echo
		echo "## ratios (medians; $ROWS ledger rows, $PATH_ROWS rows per path, chunk ${CHUNKS%% *}, $ROUNDS rounds run alternately)"
		echo
		# the ledger's ratios pair by pair (round by round), as the paths'
		awk '
			function med(a, n,   i, j, x) {
				for (i = 2; i <= n; i++)
					for (j = i; j > 1 && a[j - 1] > a[j]; j--) { x = a[j]; a[j] = a[j - 1]; a[j - 1] = x }
				return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
			}
			function show(v, lim, name,   i, n, c, l, q, lo, hi) {
				n = 0; lo = 1e9; hi = 0
				for (i = 1; i <= rounds; i++) {
					q = rate[i, v] / rate[i, lim]
					c[++n] = rate[i, v]; l[n] = rate[i, lim]; r[n] = q
					if (q < lo) lo = q
					if (q > hi) hi = q
				}
				printf "| ledger%s | %.0f | %s | %.0f | **%.3f** [%.3f, %.3f] |\n", \
					v == "cbatch" ? "" : " (" v ")", med(c, n), name, med(l, n), med(r, n), lo, hi
			}
			$1 == "round" && $4 + 0 > 0 {
				rate[$2, $3] = $4; if ($2 > rounds) rounds = $2
				sum[$3] += $4
			}
			END {
				print "| path | cbatch rows/s | limit | limit rows/s | cbatch / limit (pairs: median [min, max]) |"
				print "|---|---:|---|---:|---:|"
				base = sum["libpq-pipe"] > sum["libpq-seq"] ? "libpq-pipe" : "libpq-seq"
				show("cbatch", base, "hand-written libpq loop (" base ")")
				show("cbatch", "set-based", "set-based SQL pair")
				show("cbatch-2c", "set-based", "set-based SQL pair")
			}' "$build/quick-ledger.txt"
		awk -F'|' '/^\| [a-z-]+ \|/ && $2 !~ /path/ {
				print "| " substr($2, 2) "|" $4 "|" $3 "|" $5 "|" $6 "|"
			}' "$build/quick-paths.txt"
		echo
		echo "(spread: min and max over rounds in $build/quick-ledger.txt and quick-paths.txt)"
		echo
		echo "total wall time: $(($(date +%s) - start)) s"
	} 2>&1 | tee "$out"
	exit 0
fi
{
	echo "# cbatch benchmarks, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$root" diff --quiet 2>/dev/null || echo ' (with local changes)')"
	machine
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
	for c in $CHUNKS; do
		"${run[@]}" "$build/bench/cbatch-paths-bench" --db "$db" --rows "$PATH_ROWS" \
			--rounds "$ROUNDS" --chunk "$c"
	done
	if [ "${FIRING:-1}" != 0 ]; then
		echo
		EVERY=20 ROUNDS="${FIRING_ROUNDS:-2}" COUNTS="${FIRING_COUNTS:-1 10 100}" \
			BENCH_DIR="$dir-fire" bash "$root/bench/firing_latency.sh" "$build"
	fi
	echo
	echo "total wall time: $(($(date +%s) - start)) s"
} 2>&1 | tee "$out"
