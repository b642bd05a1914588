#!/usr/bin/env bash
# Growth benchmark (issue 20): does a routine operation cost the same on a
# repository of a thousand executions as on one of millions?
#
#   bash bench/growth.sh [BUILD_DIR]          (default: build)
#   SIZES="1000 100000 1000000 10000000" ROUNDS=5 bash bench/growth.sh
#
# For each size N (default "1000 100000 1000000"): a fresh database on a
# throwaway cluster (scripts/pg-cluster.sh), the schema, then
# bench/growth_gen.sql's repository of N executions (jobs, schedules,
# partitions, parameters, contexts, audit, lock rows, firings, events;
# set-based), VACUUM ANALYZE. Then, each ROUNDS times, median reported:
#   locks, GET /api/v1/locks, metrics, GET /metrics, GET /api/v1/jobs,
#   schedule list, GET /api/v1/executions?job=adhoc_36&status=STOPPED (a rare
#   pair), show EXEC (a recent execution), executions --limit 20, schedule
#   history NAME --limit 20, GET /api/v1/audit (its default page), a
#   scheduler's claim of a fire instant (the statement alone: see claim_ms),
#   run ledger --next (a launch, 2000 rows in chunks of 100: checkpoint
#   after checkpoint on top of the history);
# once: restart of a failed ledger run, and cleanup of the oldest 5% of the
# executions (CLEANUP_SHARE) with a ledger run timed while it runs and alone.
# Prints one markdown table row per operation and size, and the ratio of each
# size's median to the smallest size's.
#
# GROWTH_KEEP=1 leaves the cluster running and the databases in place;
# GROWTH_REUSE=1 then times an existing growth_N database of that cluster
# instead of generating it again (10M takes half an hour; its cleanup has
# removed the oldest 1/CLEANUP_SHARE of it by then).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
cli="$build/cbatch"
ex="$build/cbatch-examples"
SIZES=${SIZES:-"1000 100000 1000000"}
ROUNDS=${ROUNDS:-5}
CLEANUP_SHARE=${CLEANUP_SHARE:-20} # 1/20 of the executions, the oldest
dir=${GROWTH_BENCH_DIR:-/tmp/cbatch-growth-bench-pg}
GROWTH_KEEP=${GROWTH_KEEP:-0}
GROWTH_REUSE=${GROWTH_REUSE:-0}

for t in psql curl; do
	command -v "$t" >/dev/null || { echo "growth: $t is needed" >&2; exit 2; }
done
[ -x "$cli" ] && [ -x "$ex" ] || { echo "growth: no $cli or $ex (build first)" >&2; exit 2; }

work=$(mktemp -d)
server_pid=
stop_server() {
	if [ -n "$server_pid" ]; then
		kill "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
		server_pid=
	fi
}
cleanup() {
	stop_server
	[ "$GROWTH_KEEP" = 1 ] || bash "$root/scripts/pg-cluster.sh" stop "$dir" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

if [ "$GROWTH_REUSE" = 1 ] && bash "$root/scripts/pg-cluster.sh" status "$dir" >/dev/null 2>&1; then
	: # (start would wipe it)
else
	bash "$root/scripts/pg-cluster.sh" start "$dir" >/dev/null
fi
admin="host=$dir port=5432 user=postgres dbname=postgres"

now_ms() { date +%s%3N; }

# median of the numbers on stdin
median() { sort -n | awk '{a[NR]=$1} END {if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

# time_op NAME CMD...: ROUNDS runs after one warm-up; appends "NAME N median_ms" to results.
time_op() {
	local name=$1 t0 t1
	shift
	"$@" >/dev/null 2>&1 || true
	for _ in $(seq 1 "$ROUNDS"); do
		t0=$(now_ms)
		"$@" >/dev/null 2>&1 || true
		t1=$(now_ms)
		echo $((t1 - t0))
	done | median | xargs printf '%s\t%s\t%s\n' "$name" "$size" >>"$work/results"
}

record() { printf '%s\t%s\t%s\n' "$1" "$size" "$2" >>"$work/results"; }

# A scheduler's claim of one fire instant: batch_schedule_claim, the one
# statement a node runs per instant it fires (framework/scheduler.c through
# repository/schedule.c), as the node calls it, for hourly_07's next
# instant a day ahead (on time, so a claim, not a misfire). Timed by psql's
# \timing inside one session, after a first call (a node's session has
# compiled the function long before): the statement's round trip without a
# process start, which would be most of it. Each claim is rolled back, so
# that every round claims the same instant on the same repository. Prints
# the median in ms.
claim_ms() {
	{
		echo '\timing on'
		echo "SELECT schedule_id AS sid, version AS ver FROM batch_schedule"
		echo " WHERE schedule_name = 'hourly_07_schedule' \\gset"
		for _ in $(seq 0 "$ROUNDS"); do
			cat <<-'SQL'
				BEGIN;
				SELECT outcome FROM batch_schedule_claim(p_schedule_id => :sid,
				 p_version => :ver, p_fire_time => date_trunc('hour', now()) + interval '1 day',
				 p_kind => 'SCHEDULED', p_missed_until => NULL, p_missed_count => 0,
				 p_param_time => date_trunc('hour', now()) + interval '1 day',
				 p_next_fire_time => date_trunc('hour', now()) + interval '25 hours',
				 p_node => 'growth-bench', p_job_key => md5('growth-bench'),
				 p_parameters => '[]');
				ROLLBACK;
			SQL
		done
	} | psql "$db" -qXAt -v ON_ERROR_STOP=1 2>/dev/null |
		awk '/^Time:/ { if (out) print $2; out = 0; next } { out = 1 }' |
		tail -n +2 | median
}

for size in $SIZES; do
	db="host=$dir port=5432 user=postgres dbname=growth_$size"
	if [ "$GROWTH_REUSE" = 1 ] && psql "$db" -qXAtc "SELECT 1 FROM batch_job_execution LIMIT 1" \
		2>/dev/null | grep -q 1; then
		echo "growth: reusing growth_$size" >&2
		"$cli" --db "$db" schema init >/dev/null
	else
		psql "$admin" -qc "DROP DATABASE IF EXISTS growth_$size" -qc "CREATE DATABASE growth_$size"
		"$cli" --db "$db" schema init >/dev/null
		echo "growth: generating $size executions..." >&2
		t0=$(now_ms)
		PGOPTIONS="-c cbatch_bench.executions=$size" psql "$db" -qX -v ON_ERROR_STOP=1 \
			-f "$root/bench/growth_gen.sql" >/dev/null
		psql "$db" -qXc "VACUUM ANALYZE"
		gen=$(($(now_ms) - t0))
		record "generate (set-based) + VACUUM ANALYZE" "$gen"
	fi
	record "database size MB" "$(psql "$db" -qXAtc "SELECT pg_database_size(current_database()) / 1048576")"
	"$ex" --db "$db" example-setup ledger --rows 2000 >/dev/null

	"$ex" --db "$db" serve --listen 127.0.0.1:0 --pool 2 >"$work/serve.log" 2>&1 &
	server_pid=$!
	for _ in $(seq 1 200); do
		grep -q 'listening on' "$work/serve.log" && break
		sleep 0.05
	done
	port=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/serve.log")
	url="http://127.0.0.1:$port"

	time_op "locks" "$cli" --db "$db" locks
	time_op "GET /api/v1/locks" curl -fsS "$url/api/v1/locks"
	time_op "metrics" "$cli" --db "$db" metrics
	time_op "GET /metrics" curl -fsS "$url/metrics"
	time_op "GET /api/v1/jobs" curl -fsS "$url/api/v1/jobs"
	time_op "schedule list" "$cli" --db "$db" schedule list
	time_op "GET /api/v1/executions?job=&status= (rare pair)" \
		curl -fsS "$url/api/v1/executions?job=adhoc_36&status=STOPPED"
	exec_id=$(psql "$db" -qXAtc "SELECT max(job_execution_id) - 100 FROM batch_job_execution")
	time_op "show EXEC" "$cli" --db "$db" show "$exec_id"
	time_op "executions --limit 20" "$cli" --db "$db" executions --limit 20
	time_op "schedule history NAME --limit 20" \
		"$cli" --db "$db" schedule history hourly_07_schedule --limit 20
	time_op "GET /api/v1/audit" curl -fsS "$url/api/v1/audit"
	record "scheduler claim (the statement, via psql)" "$(claim_ms)"
	time_op "run ledger --next (2000 rows, chunks of 100)" \
		"$ex" --db "$db" run ledger --next -chunk.size:long=100
	stop_server

	# A restart: a run that fails at account 1000, the account fixed.
	"$ex" --db "$db" example-setup ledger --rows 2000 --negative-at 1000 --reset >/dev/null
	"$ex" --db "$db" run ledger --next -chunk.size:long=100 >/dev/null 2>&1 || true
	failed=$(psql "$db" -qXAtc "SELECT max(job_execution_id) FROM batch_job_execution")
	psql "$db" -qXc "UPDATE account SET amount = 1 WHERE id = 1000"
	t0=$(now_ms)
	"$ex" --db "$db" restart "$failed" >/dev/null 2>&1 || true
	record "restart (failed ledger run)" "$(($(now_ms) - t0))"

	# Cleanup of the oldest executions (2 minutes apart), and a ledger run
	# while it runs against one alone.
	"$ex" --db "$db" example-setup ledger --rows 20000 --reset >/dev/null
	t0=$(now_ms)
	"$ex" --db "$db" run ledger --next -chunk.size:long=100 >/dev/null 2>&1 || true
	record "ledger run alone (20000 rows)" "$(($(now_ms) - t0))"
	minutes=$(( (size - size / CLEANUP_SHARE) * 2 ))
	t0=$(now_ms)
	"$cli" --db "$db" --json cleanup --older-than "${minutes}m" 2>"$work/cleanup.err" \
		>"$work/cleanup.json" &
	cpid=$!
	sleep 1
	"$ex" --db "$db" example-setup ledger --rows 20000 --reset >/dev/null
	t1=$(now_ms)
	"$ex" --db "$db" run ledger --next -chunk.size:long=100 >/dev/null 2>&1 || true
	record "ledger run during cleanup (20000 rows)" "$(($(now_ms) - t1))"
	wait "$cpid" || true
	record "cleanup of the oldest 1/$CLEANUP_SHARE" "$(($(now_ms) - t0))"
	# how long it took to start (its first batch), and its first estimates
	record "cleanup: its first batch after (ms)" "$(sed -n \
		's/.*executions so far, \([0-9.]*\)s.*/\1/p' "$work/cleanup.err" |
		head -n1 | awk '{printf "%d", $1 * 1000}')"
	# The schedule history's phase (last): from the last progress line of
	# the phases before it to the end of the cleanup, by its own clock.
	record "cleanup: its schedule history phase (ms)" "$(sed -n \
		's/.*"seconds": *\([0-9.]*\).*/\1/p' "$work/cleanup.json" | head -n1 |
		awk -v err="$work/cleanup.err" '{ total = $1 }
		END { while ((getline l < err) > 0) if (l !~ /schedule/ &&
			match(l, /[0-9.]+s[,)]/)) before = substr(l, RSTART, RLENGTH - 2)
		      if (total != "") printf "%d", (total - before) * 1000 }')"
	grep 'executions so far' "$work/cleanup.err" | head -n8 >&2 || true
	grep 'schedule' "$work/cleanup.err" | awk 'NR % 10 == 1' | head -n6 >&2 || true
	grep 'about' "$work/cleanup.err" | awk 'NR % 25 == 1' | head -n8 >&2 || true
	tail -n1 "$work/cleanup.err" >&2 || true
	[ "$GROWTH_KEEP" = 1 ] || psql "$admin" -qc "DROP DATABASE growth_$size"
done

first=${SIZES%% *}
echo
printf '| operation (median ms) |'
for size in $SIZES; do printf ' %s |' "$size"; done
printf ' ratio last/first |\n|---|'
for _ in $SIZES; do printf -- '---:|'; done
printf -- '---:|\n'
cut -f1 "$work/results" | awk '!seen[$0]++' | while read -r op; do
	printf '| %s |' "$op"
	base=
	last=
	for size in $SIZES; do
		v=$(awk -F'\t' -v o="$op" -v s="$size" '$1 == o && $2 == s {print $3}' "$work/results")
		printf ' %s |' "${v:--}"
		[ "$size" = "$first" ] && base=$v
		last=$v
	done
	if [ -n "$base" ] && [ -n "$last" ] && [ "$base" != 0 ]; then
		awk -v a="$last" -v b="$base" 'BEGIN {printf " %.2f |\n", a / b}'
	else
		printf ' - |\n'
	fi
done
