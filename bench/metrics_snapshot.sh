#!/usr/bin/env bash
# /metrics and the jobs overview under many scrapers (issue 29, item 3), side
# by side: `serve` of this build against `serve` of a BASELINE build (e.g. one
# from before the snapshot), the same repository, the same load, alternating.
#
#   bash bench/metrics_snapshot.sh BUILD_DIR BASELINE_BUILD_DIR
#
# A throwaway cluster (scripts/pg-cluster.sh) gets two repositories (one per
# build: an older build refuses a newer schema) of EXECUTIONS executions each
# (default 50000, bench/growth_gen.sql: 40 jobs, 35 of them scheduled); both
# servers run at once (--pool 4, --client-connections
# 200). Then ROUNDS rounds (default 2), each: wrk with CONNECTIONS (100)
# clients on 2 threads for DURATION (20s) against /metrics of the baseline,
# then of this build, then the same for /api/v1/jobs. Reported per run:
# requests/s, wrk's timeouts (no answer within TIMEOUT, 2s) and other socket
# errors, non-2xx answers, latency p50 and p99, and the database's
# transactions per second during the run (pg_stat_database.xact_commit of the
# repository database: what the scrapers cost it). Needs wrk, curl, psql.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
new="${1:?usage: metrics_snapshot.sh BUILD_DIR BASELINE_BUILD_DIR}/cbatch-examples"
old="${2:?usage: metrics_snapshot.sh BUILD_DIR BASELINE_BUILD_DIR}/cbatch-examples"
EXECUTIONS=${EXECUTIONS:-50000}
CONNECTIONS=${CONNECTIONS:-100}
DURATION=${DURATION:-20s}
TIMEOUT=${TIMEOUT:-2s}
ROUNDS=${ROUNDS:-2}
dir=${SNAPSHOT_BENCH_DIR:-/tmp/cbatch-snapshot-bench-pg}

for t in wrk curl psql; do
	command -v "$t" >/dev/null || { echo "metrics_snapshot: $t is needed (apt-get install -y $t)" >&2; exit 2; }
done
for b in "$new" "$old"; do
	[ -x "$b" ] || { echo "metrics_snapshot: no $b (build it first)" >&2; exit 2; }
done

work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	bash "$root/scripts/pg-cluster.sh" stop "$dir" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

bash "$root/scripts/pg-cluster.sh" start "$dir" >/dev/null
admin="host=$dir port=5432 user=postgres dbname=postgres"
# One database per build, each with its own schema version and the same
# generated history (an older build refuses a newer schema).
for which in baseline snapshot; do
	psql "$admin" -qc "CREATE DATABASE snapshot_$which"
done
db_baseline="host=$dir port=5432 user=postgres dbname=snapshot_baseline"
db_snapshot="host=$dir port=5432 user=postgres dbname=snapshot_snapshot"
echo "metrics_snapshot: two repositories of $EXECUTIONS executions..."
"$old" --db "$db_baseline" schema init >/dev/null
"$new" --db "$db_snapshot" schema init >/dev/null
for d in "$db_baseline" "$db_snapshot"; do
	PGOPTIONS="-c cbatch_bench.executions=$EXECUTIONS" psql "$d" -q -v ON_ERROR_STOP=1 \
		-f "$root/bench/growth_gen.sql" >/dev/null
done

# Sets $port: not in a command substitution, whose subshell would keep the
# server's pid from the cleanup.
start_serve() { # NAME BINARY DB
	"$2" --db "$3" serve --listen 127.0.0.1:0 --pool 4 --client-connections 200 \
		>"$work/$1.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 1 200); do
		grep -q 'listening on' "$work/$1.log" && break
		sleep 0.05
	done
	port=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/$1.log")
}
start_serve baseline "$old" "$db_baseline"
port_old=$port
start_serve snapshot "$new" "$db_snapshot"
port_new=$port
[ -n "$port_old" ] && [ -n "$port_new" ] || { cat "$work"/*.log; exit 1; }
for p in "$port_old" "$port_new"; do
	for _ in $(seq 1 5); do
		curl -sf "http://127.0.0.1:$p/metrics" >/dev/null
		curl -sf "http://127.0.0.1:$p/api/v1/jobs" >/dev/null
	done
done

commits() { # DB: its committed transactions so far
	psql "$1" -Atc "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
}
ms() { # wrk's latency value (e.g. 1.23s, 45.6ms, 789us) in ms
	awk -v v="$1" 'BEGIN { if (v ~ /us$/) print v / 1000; else if (v ~ /ms$/) print v + 0;
		else if (v ~ /s$/) print v * 1000; else print "?" }'
}
printf '| round | path | serve | requests/s | timeouts | other socket errors | non-2xx | p50 ms | p99 ms | db transactions/s |\n'
printf '|---|---|---|---|---|---|---|---|---|---|\n'
for round in $(seq 1 "$ROUNDS"); do
	for path in /metrics /api/v1/jobs; do
		for which in baseline snapshot; do
			port=$port_old d=$db_baseline
			[ "$which" = snapshot ] && port=$port_new d=$db_snapshot
			c0=$(commits "$d")
			t0=$(date +%s.%N)
			wrk -t2 -c"$CONNECTIONS" -d"$DURATION" --timeout "$TIMEOUT" --latency \
				"http://127.0.0.1:$port$path" >"$work/wrk.txt"
			t1=$(date +%s.%N)
			c1=$(commits "$d")
			rps=$(awk '/^Requests\/sec/ {print $2}' "$work/wrk.txt")
			tmo=$(awk -F'[ ,]+' '/Socket errors/ {print $11}' "$work/wrk.txt")
			oth=$(awk -F'[ ,]+' '/Socket errors/ {print $5+$7+$9}' "$work/wrk.txt")
			non2xx=$(awk '/Non-2xx/ {print $NF}' "$work/wrk.txt")
			p50=$(ms "$(awk '$1 == "50%" {print $2}' "$work/wrk.txt")")
			p99=$(ms "$(awk '$1 == "99%" {print $2}' "$work/wrk.txt")")
			tps=$(awk -v a="$c0" -v b="$c1" -v s="$t0" -v e="$t1" 'BEGIN { printf "%.0f", (b - a) / (e - s) }')
			printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$round" "$path" "$which" \
				"${rps:-?}" "${tmo:-0}" "${oth:-0}" "${non2xx:-0}" "$p50" "$p99" "$tps"
		done
	done
done
