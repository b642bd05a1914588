#!/usr/bin/env bash
# A firing's end-to-end latency: from the fire instant to its first (here its
# only) chunk committed, with N schedules due in the same second on 2
# scheduler nodes (two real `scheduler` processes), for N = 1, 10, 100.
#
#   bash bench/firing_latency.sh [BUILD_DIR]        (default build-bench)
#
# Each schedule fires the tick example once a minute at second 0 (or, with
# EVERY=SECONDS, on the next multiple of it), with `at={schedule}@{fire_utc}`:
# one job instance per (schedule, instant). The tick job's tasklet inserts
# one tick_log row in its chunk's transaction, stamped by clock_timestamp();
# the latency of a firing is that stamp minus its fire instant, both read by
# the database's clock. After each round the script checks that every
# (schedule, instant) has exactly one firing row, one job execution and one
# tick_log row: no instant ran twice, none was lost. The schedules use
# `--overlap allow`, so that a burst slower than EVERY still runs every
# instant (the check would otherwise count the skipped ones as lost).
#
# A second table says where the time went (instant -> claim committed ->
# execution created -> chunk committed, from the repository's timestamps)
# and the CPU per firing: the whole server's (its backends, those reaped at
# their exit and those still open, and background processes) and the two
# nodes' with their children (the job processes or the runners), from /proc.
#
# Settings (environment): COUNTS (default "1 10 100"), ROUNDS (instants per
# count, default 2), RUNNERS (each node's --runners: firings in that many
# long-lived runner processes; default: none, a process per firing),
# MAX_RUNNING (each node's --max-running; default: the
# scheduler's own default), BENCH_DIR (cluster directory, default
# /tmp/cbatch-fire-pg), EVERY (seconds between instants: 60, or 10/20/30 for
# a quicker run; default 60). Prints Markdown tables. Not part of the tests.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-"$root/build-bench"}
exe="$build/cbatch-examples"
COUNTS=${COUNTS:-"1 10 100"}
ROUNDS=${ROUNDS:-2}
EVERY=${EVERY:-60}
dir=${BENCH_DIR:-/tmp/cbatch-fire-pg}
[ -x "$exe" ] || {
	echo "firing_latency: $exe not built (cmake --build $build --target cbatch-examples)" >&2
	exit 2
}
case "$EVERY" in 10 | 15 | 20 | 30 | 60) ;; *)
	echo "firing_latency: EVERY must be 10, 15, 20, 30 or 60" >&2
	exit 2
	;;
esac

db=$(bash "$root/bench/pg-bench-cluster.sh" start "$dir")
export CBATCH_DB="$db"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	bash "$root/bench/pg-bench-cluster.sh" stop "$dir"
}
trap cleanup EXIT
q() { psql "$db" -XAtq -v ON_ERROR_STOP=1 -c "$1"; }
# CPU seconds of a process with its reaped children (/proc/PID/stat fields 14-17)
cpu() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.3f", ($14 + $15 + $16 + $17) / hz }' "/proc/$1/stat"; }
# ... and its live children's own (a runner, a kept connection's backend:
# not reaped yet, so not in the parent's figure)
tree_cpu() {
	local t
	t=$(cpu "$1")
	for c in $(pgrep -P "$1" || true); do
		t=$(awk -v a="$t" -v b="$(cpu "$c" 2>/dev/null || echo 0)" 'BEGIN { print a + b }')
	done
	echo "$t"
}

"$exe" schema init >/dev/null
"$exe" example-setup tick --reset >/dev/null
mr=()
[ -n "${MAX_RUNNING:-}" ] && mr=(--max-running "$MAX_RUNNING")
[ -n "${RUNNERS:-}" ] && mr+=(--runners "$RUNNERS")
for node in 1 2; do
	"$exe" scheduler --quiet "${mr[@]}" >"$dir/node$node.log" 2>&1 &
	pids+=($!)
done
cron="0 * * * * *"
[ "$EVERY" = 60 ] || cron="*/$EVERY * * * * *"

echo "# firing latency, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores," \
	"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(q 'SHOW server_version')," \
	"2 scheduler nodes, max-running ${MAX_RUNNING:-default} each, runners ${RUNNERS:-none}"
echo
echo "| schedules due at once | firings | median s | p90 s | p99 s | max s | each instant once |"
echo "|---:|---:|---:|---:|---:|---:|---|"
breakdown=""
pm=$(head -n 1 "$dir/data/postmaster.pid")
nodes_cpu() { awk -v a="$(tree_cpu "${pids[0]}")" -v b="$(tree_cpu "${pids[1]}")" 'BEGIN { print a + b }'; }
for n in $COUNTS; do
	q "DELETE FROM tick_log" >/dev/null
	for i in $(seq 1 "$n"); do
		"$exe" schedule add "lat-$n-$i" --cron "$cron" --job tick 'at={schedule}@{fire_utc}' \
			--overlap allow >/dev/null
	done
	server0=$(tree_cpu "$pm") nodes0=$(nodes_cpu)
	# the instants these schedules fire at from now on: wait for ROUNDS of them
	first=$(q "SELECT extract(epoch FROM date_trunc('minute', batch_now()))::bigint")
	now=$(q "SELECT extract(epoch FROM batch_now())")
	first=$(awk -v f="$first" -v n="$now" -v e="$EVERY" \
		'BEGIN { t = f; while (t <= n + 1) t += e; print t }')
	last=$((first + (ROUNDS - 1) * EVERY))
	want=$((n * ROUNDS))
	deadline=$((last + 120))
	while :; do
		# its tick committed, and its firing's end (with its execution) recorded
		got=$(q "SELECT least(
		           (SELECT count(*) FROM tick_log t WHERE t.fired_for LIKE 'lat-$n-%'
		             AND split_part(t.fired_for, '@', 2)::timestamptz
		                 BETWEEN to_timestamp($first) AND to_timestamp($last)),
		           (SELECT count(*) FROM batch_schedule_firing f JOIN batch_schedule s
		             USING (schedule_id) WHERE s.schedule_name LIKE 'lat-$n-%'
		             AND f.status = 'FINISHED' AND f.job_execution_id IS NOT NULL
		             AND f.fire_time BETWEEN to_timestamp($first) AND to_timestamp($last)))")
		[ "$got" -ge "$want" ] && break
		if [ "$(q "SELECT extract(epoch FROM batch_now())::bigint")" -gt "$deadline" ]; then
			echo "firing_latency: only $got of $want firings committed by 120 s after the last instant" >&2
			break
		fi
		sleep 1
	done
	# the whole server's CPU (every backend, reaped or still open) and the
	# nodes' with their children (the jobs, the runners), per firing; the server's also
	# counts the script's own queries and the background processes
	server1=$(tree_cpu "$pm") nodes1=$(nodes_cpu)
	cpu_cols=$(awk -v s0="$server0" -v s1="$server1" -v n0="$nodes0" -v n1="$nodes1" -v f="$want" \
		'BEGIN { printf "%.0f | %.0f", (s1 - s0) * 1000 / f, (n1 - n0) * 1000 / f }')
	# each (schedule, instant) once: one firing row, one execution, one tick_log row
	once=$(q "
	  WITH inst AS (
	    SELECT s.schedule_name, f.fire_time, count(*) AS firings,
	           count(DISTINCT f.job_execution_id) AS execs
	      FROM batch_schedule s JOIN batch_schedule_firing f USING (schedule_id)
	     WHERE s.schedule_name LIKE 'lat-$n-%'
	       AND f.fire_time BETWEEN to_timestamp($first) AND to_timestamp($last)
	     GROUP BY 1, 2),
	  ticks AS (
	    SELECT fired_for, count(*) AS c FROM tick_log WHERE fired_for LIKE 'lat-$n-%'
	     GROUP BY 1)
	  SELECT CASE WHEN count(*) = $want AND bool_and(firings = 1 AND execs = 1)
	                   AND (SELECT bool_and(c = 1) FROM ticks)
	              THEN 'yes (' || count(*) || ' of $want)'
	              ELSE 'NO: ' || count(*) || ' instants, '
	                   || count(*) FILTER (WHERE firings > 1 OR execs > 1) || ' with more than one run, '
	                   || (SELECT count(*) FILTER (WHERE c > 1) FROM ticks) || ' ticks twice'
	         END FROM inst")
	q "
	  WITH lat AS (
	    SELECT extract(epoch FROM t.logged_at
	                   - split_part(t.fired_for, '@', 2)::timestamptz) AS s
	      FROM tick_log t WHERE t.fired_for LIKE 'lat-$n-%'
	       AND split_part(t.fired_for, '@', 2)::timestamptz
	           BETWEEN to_timestamp($first) AND to_timestamp($last))
	  SELECT format('| %s | %s | %s | %s | %s | %s | %s |', $n, count(*),
	         round(percentile_cont(0.5) WITHIN GROUP (ORDER BY s)::numeric, 3),
	         round(percentile_cont(0.9) WITHIN GROUP (ORDER BY s)::numeric, 3),
	         round(percentile_cont(0.99) WITHIN GROUP (ORDER BY s)::numeric, 3),
	         round(max(s)::numeric, 3), '$once') FROM lat"
	# where the time went: instant -> claim committed (the node's walk over
	# the due instants), claim -> execution created (launch confirmation,
	# fork, exec, connect, the launch's own checks), created -> tick
	# committed (lock, heartbeat, step, the chunk)
	breakdown="$breakdown$(q "
	  WITH st AS (
	    SELECT extract(epoch FROM f.claimed_at - f.fire_time) AS claim,
	           extract(epoch FROM e.create_time - f.claimed_at) AS spawn,
	           extract(epoch FROM t.logged_at - e.create_time) AS run
	      FROM batch_schedule s JOIN batch_schedule_firing f USING (schedule_id)
	      JOIN batch_job_execution e ON e.job_execution_id = f.job_execution_id
	      JOIN tick_log t ON t.job_execution_id = e.job_execution_id
	     WHERE s.schedule_name LIKE 'lat-$n-%'
	       AND f.fire_time BETWEEN to_timestamp($first) AND to_timestamp($last))
	  SELECT format(E'\n| %s | %s / %s | %s / %s | %s / %s | %s |', $n,
	         round(percentile_cont(0.5) WITHIN GROUP (ORDER BY claim)::numeric, 3),
	         round(max(claim)::numeric, 3),
	         round(percentile_cont(0.5) WITHIN GROUP (ORDER BY spawn)::numeric, 3),
	         round(max(spawn)::numeric, 3),
	         round(percentile_cont(0.5) WITHIN GROUP (ORDER BY run)::numeric, 3),
	         round(max(run)::numeric, 3), '$cpu_cols') FROM st")"
	for i in $(seq 1 "$n"); do
		"$exe" schedule remove "lat-$n-$i" >/dev/null
	done
done
echo
echo "| schedules due at once | instant -> claimed, median / max s | claimed -> execution created | created -> chunk committed | server CPU ms per firing | scheduler + job processes CPU ms per firing |"
echo "|---:|---:|---:|---:|---:|---:|$breakdown"
