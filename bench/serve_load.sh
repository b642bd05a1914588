#!/usr/bin/env bash
# Load check of `serve` (not a ctest test): 200 concurrent clients for 30 s
# against /metrics and /api/v1/executions on loopback, with wrk.
#
#   bash bench/serve_load.sh [BUILD_DIR]      (default: build)
#
# Starts a throwaway cluster (scripts/pg-cluster.sh), makes a repository with
# EXECUTIONS real ledger executions (default 200), starts
# `cbatch-examples serve --pool POOL` (default 4) on a free port and runs wrk
# (CONNECTIONS=200, THREADS=2, DURATION=30s), every client alternating the two
# paths. Reports requests/s, errors (non-2xx and socket errors), the server's
# RSS before and after, the most repository connections `serve` held
# (pg_stat_activity, sampled every 100 ms), and the server's exit status on
# SIGTERM. Needs wrk (Debian package wrk) and curl.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
bin="$build/cbatch-examples"
EXECUTIONS=${EXECUTIONS:-200}
POOL=${POOL:-4}
CONNECTIONS=${CONNECTIONS:-200}
THREADS=${THREADS:-2}
DURATION=${DURATION:-30s}
dir=${SERVE_BENCH_DIR:-/tmp/cbatch-serve-bench-pg}

for t in wrk curl psql; do
	command -v "$t" >/dev/null || { echo "serve_load: $t is needed" >&2; exit 2; }
done
[ -x "$bin" ] || { echo "serve_load: no $bin (build first)" >&2; exit 2; }

work=$(mktemp -d)
server_pid=
cleanup() {
	[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
	bash "$root/scripts/pg-cluster.sh" stop "$dir" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

bash "$root/scripts/pg-cluster.sh" start "$dir" >/dev/null
admin="host=$dir port=5432 user=postgres dbname=postgres"
psql "$admin" -qc "CREATE DATABASE serve_bench"
db="host=$dir port=5432 user=postgres dbname=serve_bench"

echo "serve_load: $EXECUTIONS ledger executions..."
"$bin" --db "$db" schema init >/dev/null
"$bin" --db "$db" example-setup ledger --rows 100 >/dev/null
for i in $(seq 1 "$EXECUTIONS"); do
	"$bin" --db "$db" run ledger --next >/dev/null
done

# All of wrk's connections come from one address: allow them all.
"$bin" --db "$db" serve --listen 127.0.0.1:0 --pool "$POOL" --client-connections "$CONNECTIONS" >"$work/serve.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 200); do
	grep -q 'listening on' "$work/serve.log" && break
	sleep 0.05
done
port=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/serve.log")
[ -n "$port" ] || { cat "$work/serve.log"; exit 1; }
base="http://127.0.0.1:$port"
rss() { awk '/^VmRSS/ {print $2}' "/proc/$server_pid/status"; }

# Warm up (open the pool), then measure.
for _ in $(seq 1 20); do curl -sf "$base/metrics" >/dev/null; curl -sf "$base/api/v1/executions" >/dev/null; done
rss_before=$(rss)

cat >"$work/paths.lua" <<'LUA'
local paths = { "/metrics", "/api/v1/executions" }
local n = 0
request = function()
  n = n + 1
  return wrk.format("GET", paths[(n % 2) + 1])
end
LUA

# Repository connections held by serve, sampled while wrk runs.
(
	most=0
	while kill -0 "$server_pid" 2>/dev/null && [ ! -e "$work/done" ]; do
		n=$(psql "$db" -Atc "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'cbatch serve'" 2>/dev/null || echo 0)
		[ "$n" -gt "$most" ] && most=$n
		echo "$most" >"$work/most"
		sleep 0.1
	done
) &
sampler=$!

wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --timeout 10s -s "$work/paths.lua" "$base" | tee "$work/wrk.txt"
touch "$work/done"
wait "$sampler" || true
rss_after=$(rss)

# A second round shows whether memory keeps growing or has settled.
wrk -t"$THREADS" -c"$CONNECTIONS" -d10s --timeout 10s -s "$work/paths.lua" "$base" >"$work/wrk2.txt"
rss_after2=$(rss)

kill -TERM "$server_pid"
set +e
wait "$server_pid"
exit_status=$?
set -e
server_pid=

rps=$(awk '/^Requests\/sec/ {print $2}' "$work/wrk.txt")
total=$(awk '/requests in/ {print $1}' "$work/wrk.txt")
non2xx=$(awk '/Non-2xx/ {print $NF}' "$work/wrk.txt")
sockerr=$(awk -F'[ ,]+' '/Socket errors/ {print $5+$7+$9+$11}' "$work/wrk.txt")
echo
echo "## serve load check: $CONNECTIONS clients, $DURATION, /metrics + /api/v1/executions"
echo "- requests: ${total:-?} (${rps:-?}/s)"
echo "- errors: non-2xx ${non2xx:-0}, socket errors ${sockerr:-0}"
echo "- server RSS: ${rss_before} kB before, ${rss_after} kB after, ${rss_after2} kB after 10 s more"
echo "- repository connections held by serve, at most: $(cat "$work/most" 2>/dev/null || echo ?) (pool $POOL)"
echo "- exit status on SIGTERM: $exit_status"
