#!/usr/bin/env bash
# The demo: build cbatch and run the ledger example job end to end.
#
#   bash scripts/demo.sh [--rows N]
#
# Uses the database named by CBATCH_DB (a libpq conninfo) or libpq's PG*
# variables when one of those is set; otherwise starts a private PostgreSQL
# on a Unix socket under /tmp (scripts/pg-cluster.sh) and stops it at the end.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rows=50000
while [ $# -gt 0 ]; do
	case "$1" in
	--rows) rows=$2; shift ;;
	-h | --help) sed -n '2,8p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "demo.sh: unknown argument '$1'" >&2; exit 2 ;;
	esac
	shift
done

bash "$root/scripts/install-deps.sh"
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$root/build" -j"$(nproc)" --target cbatch-examples cbatch_cli >/dev/null
bin=$root/build/cbatch-examples

cluster=
if [ -z "${CBATCH_DB:-}" ] && [ -z "${PGHOST:-}${PGDATABASE:-}${PGSERVICE:-}" ]; then
	cluster=/tmp/cbatch-demo-$(id -u)
	echo "demo: no CBATCH_DB or PG* set: starting a private PostgreSQL in $cluster"
	bash "$root/scripts/pg-cluster.sh" start "$cluster" >/dev/null
	export CBATCH_DB="host=$cluster port=5432 user=postgres dbname=postgres"
	trap 'bash "$root/scripts/pg-cluster.sh" stop "$cluster" >/dev/null' EXIT
fi

run() { echo "\$ cbatch-examples $*"; "$bin" "$@"; }

run schema init
run example-setup settlement --reset --rows "$rows" --date 2026-06-30
run run settlement targetDate:date=2026-06-30
echo "\$ cbatch-examples run settlement targetDate:date=2026-06-30 --next   # a deliberate rerun: same result"
"$bin" run settlement targetDate:date=2026-06-30 --next
echo "\$ psql: the settlement"
psql "$CBATCH_DB" -X -c "SELECT settlement_date, time_zone, count(*) AS sellers,
       sum(order_count) AS orders, sum(amount) AS total FROM settlement_daily GROUP BY 1, 2"
run example-setup ledger --reset --rows "$rows"
run run ledger
run executions ledger
id=$("$bin" executions ledger --json | sed -n 's/.*"job_execution_id": *\([0-9]*\).*/\1/p' | head -1)
run show "$id"
echo "\$ psql: the ledger against its source"
psql "$CBATCH_DB" -X -c "SELECT (SELECT count(*) FROM account) AS accounts,
       (SELECT count(*) FROM account WHERE processed) AS processed,
       (SELECT count(*) FROM ledger) AS ledger_rows,
       (SELECT sum(amount) FROM account) = (SELECT sum(amount) FROM ledger) AS sums_match"
echo "\$ cbatch-examples run ledger   # the same instance again: already complete (exit 3)"
"$bin" run ledger || echo "exit $?"
echo "\$ cbatch-examples schedule add demo-tick --cron '* * * * * *' --job tick 'at={fire_utc}'"
run example-setup tick --reset >/dev/null
"$bin" schedule remove demo-tick >/dev/null 2>&1 || true
"$bin" schedule add demo-tick --cron '* * * * * *' --job tick 'at={fire_utc}'
run schedule next demo-tick --count 3
echo "\$ cbatch-examples scheduler --exit-after 3 --quiet   # fires each second once"
"$bin" scheduler --exit-after 3 --quiet >/dev/null
run schedule history demo-tick --limit 6
"$bin" schedule remove demo-tick >/dev/null
