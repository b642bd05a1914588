#!/usr/bin/env bash
# The database roles of docs/deploying.md, as printed there (issue 29, item 6):
# its SQL block run on a fresh database of the test cluster, `schema init` as
# the owner role, then what the services do as the runner role: schema check,
# a run, a partitioned run, a schedule and a scheduler node, the metrics,
# cleanup. Fails if any of them lacks a privilege.
#   roles.sh CBATCH_CLI EXAMPLES SOURCE_DIR   (env: CBATCH_TEST_PGHOST, _PGPORT, _PGUSER)
set -euo pipefail
cli=$1 examples=$2 src=$3
base="host=$CBATCH_TEST_PGHOST port=$CBATCH_TEST_PGPORT"
super="$base user=$CBATCH_TEST_PGUSER"
db=cbatch_roles_$$
fail() {
	echo "roles: FAILED: $*" >&2
	exit 1
}
psql_super() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }
cleanup() {
	psql_super "$super dbname=postgres" -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true
	psql_super "$super dbname=postgres" -c "DROP ROLE IF EXISTS batch_runner" \
		-c "DROP ROLE IF EXISTS batch_owner" >/dev/null 2>&1 || true
}
trap cleanup EXIT
# Left over by a run that was killed: their database is gone with the cluster
# or is dropped here; roles own nothing elsewhere.
cleanup

block=$(awk '/^## Database roles and privileges/ { on = 1 } on && /^```sql$/ { grab = 1; next }
	grab && /^```$/ { exit } grab { print }' "$src/docs/deploying.md")
grep -q 'CREATE ROLE batch_runner' <<<"$block" || fail "no SQL block in docs/deploying.md"
psql_super "$super dbname=postgres" -c "CREATE DATABASE $db" >/dev/null
psql_super "$super dbname=$db" <<<"$block" >/dev/null

owner="$base dbname=$db user=batch_owner"
runner="$base dbname=$db user=batch_runner"
"$cli" --db "$owner" schema init >/dev/null || fail "schema init as batch_owner"
[ "$(psql_super "$super dbname=$db" -At -c "SELECT count(*) FROM pg_tables
	WHERE tablename = 'batch_job_execution' AND schemaname = 'batch'")" = 1 ] ||
	fail "the repository is not in schema batch"
"$examples" --db "$owner" example-setup ledger --rows 40 --reset >/dev/null ||
	fail "example-setup as batch_owner"

"$cli" --db "$runner" schema check >/dev/null || fail "schema check as batch_runner"
out=$("$examples" --db "$runner" run ledger 2>&1) || fail "run ledger as batch_runner: $out"
grep -q COMPLETED <<<"$out" || fail "run ledger: $out"
out=$("$examples" --db "$runner" run ledger_partitioned -partition.count:long=2 2>&1) ||
	fail "run ledger_partitioned as batch_runner: $out"
grep -q COMPLETED <<<"$out" || fail "run ledger_partitioned: $out"
"$examples" --db "$runner" schedule add tick --cron '0 0 1 1 *' --job ledger --same-instance \
	>/dev/null 2>&1 || fail "schedule add as batch_runner"
out=$("$examples" --db "$runner" scheduler --exit-after 1 --quiet 2>&1) ||
	fail "a scheduler node as batch_runner: $out"
out=$("$examples" --db "$runner" metrics 2>&1) || fail "metrics as batch_runner: $out"
grep -q '^cbatch_scheduler_host_live_nodes{' <<<"$out" || fail "metrics as batch_runner: $out"
"$cli" --db "$runner" executions >/dev/null || fail "executions as batch_runner"
"$cli" --db "$runner" cleanup --older-than 1d >/dev/null || fail "cleanup as batch_runner"
echo "roles: docs/deploying.md's roles: schema init as owner; run, partitions, scheduler, metrics, cleanup as runner"
