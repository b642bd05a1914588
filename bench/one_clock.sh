#!/usr/bin/env bash
# One clock (issue 27): what reading the time through batch_now() costs the
# chunk checkpoint, against the same function reading clock_timestamp().
#
#   bash bench/one_clock.sh [BUILD]    BUILD: a build tree holding the cbatch
#                                      CLI (default: build/)
#
# Starts a private PostgreSQL with default durability (bench/pg-bench-cluster.sh),
# makes a repository (`cbatch schema init`) holding one STARTED job execution
# with its step and lock, and defines beside batch_chunk_checkpoint its copy
# bench_checkpoint_clock, the file with clock_timestamp() wherever it has
# batch_now(): the function as it was before issue 27. Then:
#   1. checkpoint: ROUNDS rounds of pgbench, one client, CALLS checkpoints of
#      the step per round, each its own transaction (synchronous_commit off,
#      so that a WAL flush does not drown the statement; prepared, as the
#      engine prepares it), each picking the old
#      or the new function at random (pgbench's weighted scripts), so that both
#      meet the same machine at the same moments. Per round each one's average
#      latency; then the medians, and the median of the rounds' ratios.
#   2. the clock alone: a PL/pgSQL loop of LOOPS reads, x := batch_now() vs
#      x := clock_timestamp() (and x := a constant, the loop's own cost),
#      alternating, ROUNDS times each; the medians per read.
# Settings (environment): ROUNDS (default 15), CALLS (default 20000), LOOPS
# (default 1000000), BENCH_DIR (default /tmp/cbatch-bench-clock). Prints
# Markdown. Not part of the test suite.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(realpath "${1:-$root/build}")
ROUNDS=${ROUNDS:-15}
CALLS=${CALLS:-20000}
LOOPS=${LOOPS:-1000000}
dir=${BENCH_DIR:-/tmp/cbatch-bench-clock}
[ -x "$build/cbatch" ] || {
	echo "one_clock.sh: no cbatch CLI in $build (build it first)" >&2
	exit 2
}
command -v pgbench >/dev/null || {
	echo "one_clock.sh: pgbench is missing (postgresql-contrib or postgresql-client)" >&2
	exit 2
}

db=$(bash "$root/bench/pg-bench-cluster.sh" start "$dir")
work=$(mktemp -d)
trap 'rm -rf "$work"; bash "$root/bench/pg-bench-cluster.sh" stop "$dir"' EXIT
psql=(psql -X -q -v ON_ERROR_STOP=1 -At "$db")

"$build/cbatch" schema init --db "$db" >/dev/null
sed -e 's/batch_now()/clock_timestamp()/g' \
	-e 's/FUNCTION batch_chunk_checkpoint(/FUNCTION bench_checkpoint_clock(/' \
	"$root/sql/functions/batch_chunk_checkpoint.sql" >"$work/old.sql"
"${psql[@]}" -f "$work/old.sql"
token=$("${psql[@]}" <<'SQL'
INSERT INTO batch_job_instance (job_name, job_key) VALUES ('bench', repeat('0', 32));
INSERT INTO batch_job_execution (job_instance_id, status, start_time, owner_id)
SELECT job_instance_id, 'STARTED', batch_now(), 'bench-owner' FROM batch_job_instance;
INSERT INTO batch_job_execution_context (job_execution_id)
SELECT job_execution_id FROM batch_job_execution;
INSERT INTO batch_step_execution (step_name, job_execution_id, status, start_time)
SELECT 'step', job_execution_id, 'STARTED', batch_now() FROM batch_job_execution;
INSERT INTO batch_step_execution_context (step_execution_id)
SELECT step_execution_id FROM batch_step_execution;
SELECT fencing_token FROM batch_lock_acquire('bench', 'bench-owner', 3600);
SQL
)
for f in batch_chunk_checkpoint bench_checkpoint_clock; do
	cat >"$work/$f.sql" <<SQL
SELECT $f(p_step_execution_id => 1,
    p_version => (SELECT version FROM batch_step_execution WHERE step_execution_id = 1),
    p_read => 1000, p_write => 1000, p_filter => 0, p_commit => 1, p_read_skip => 0,
    p_write_skip => 0, p_process_skip => 0, p_duplicate => 0,
    p_context => '{"reader": {"last": [123456]}, "writer": {"rows": 1000}}',
    p_job_execution_id => 1, p_job_context => NULL, p_lock_name => 'bench',
    p_fencing_token => $token, p_lease_seconds => 60);
SQL
done
"${psql[@]}" -c "VACUUM ANALYZE"

median() { sort -g | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.4f", m}'; }

echo "# one clock: batch_now() vs clock_timestamp(), $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')"
echo
echo "## checkpoint (pgbench, 1 client, $CALLS calls a round, old and new picked at random)"
echo
echo "| round | clock_timestamp() ms | batch_now() ms | new/old |"
echo "|---:|---:|---:|---:|"
# (pgbench prints latencies in ms with 3 decimals: 1 µs steps.)
: >"$work/old.lat"
: >"$work/new.lat"
: >"$work/ratio"
for r in $(seq "$ROUNDS"); do
	PGOPTIONS='-c synchronous_commit=off' pgbench -n -M prepared -c 1 -t "$CALLS" \
		-f "$work/bench_checkpoint_clock.sql@1" -f "$work/batch_chunk_checkpoint.sql@1" \
		"$db" >"$work/pgbench.out" 2>&1
	# Per script: "SQL script N: FILE" ... " - latency average = X ms".
	old=$(awk '/^SQL script [0-9]+: .*bench_checkpoint_clock/ {s=1} /^SQL script [0-9]+: .*batch_chunk_checkpoint/ {s=0}
		s && /latency average/ {print $(NF-1); exit}' "$work/pgbench.out")
	new=$(awk '/^SQL script [0-9]+: .*batch_chunk_checkpoint/ {s=1} /^SQL script [0-9]+: .*bench_checkpoint_clock/ {s=0}
		s && /latency average/ {print $(NF-1); exit}' "$work/pgbench.out")
	[ -n "$old" ] && [ -n "$new" ] || {
		cat "$work/pgbench.out" >&2
		exit 1
	}
	echo "$old" >>"$work/old.lat"
	echo "$new" >>"$work/new.lat"
	ratio=$(awk -v a="$new" -v b="$old" 'BEGIN {printf "%.4f", a / b}')
	echo "$ratio" >>"$work/ratio"
	echo "| $r | $old | $new | $ratio |"
done
echo "| **median** | **$(median <"$work/old.lat")** | **$(median <"$work/new.lat")** | **$(median <"$work/ratio")** |"

echo
echo "## the clock alone (PL/pgSQL loop of $LOOPS reads, ns a read)"
echo
echo "| round | x := constant | x := clock_timestamp() | x := batch_now() |"
echo "|---:|---:|---:|---:|"
for v in const clock now; do : >"$work/$v.ns"; done
loop() {
	"${psql[@]}" -c "DO \$\$ DECLARE t0 timestamptz; x timestamptz; k timestamptz := '2030-01-01';
BEGIN t0 := clock_timestamp();
FOR i IN 1..$LOOPS LOOP x := $1; END LOOP;
RAISE NOTICE '%', round(extract(epoch FROM clock_timestamp() - t0) * 1e9 / $LOOPS, 1);
END \$\$" 2>&1 | sed 's/^NOTICE: *//'
}
for r in $(seq "$ROUNDS"); do
	c=$(loop k)
	o=$(loop 'clock_timestamp()')
	n=$(loop 'batch_now()')
	echo "$c" >>"$work/const.ns"
	echo "$o" >>"$work/clock.ns"
	echo "$n" >>"$work/now.ns"
	echo "| $r | $c | $o | $n |"
done
echo "| **median** | **$(median <"$work/const.ns")** | **$(median <"$work/clock.ns")** | **$(median <"$work/now.ns")** |"
