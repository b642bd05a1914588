#!/usr/bin/env bash
# browser.dashboard: the console's dashboard in a real browser (issue 12).
#
#   tests/browser/run.sh EXAMPLES WORKDIR
#
# EXAMPLES is the cbatch-examples program; WORKDIR a directory of the build
# tree where the npm packages are installed (from package-lock.json, by
# `npm ci`) and the artifacts are left: dashboard-1366.png, dashboard-390.png
# and the servers' logs.
#
# It starts a PostgreSQL cluster of its own (scripts/pg-cluster.sh), runs a
# partitioned ledger job that fails and its restart, a ledger job to
# completion (with a parameter that is an HTML injection attempt) and starts a long one (400,000 accounts, two per chunk), starts
# `serve` twice, with an admin token and without, and runs dashboard.test.js
# (puppeteer-core driving the system's Chromium, headless) against both.
# Afterwards the stopped job's process must have ended and its execution be
# STOPPED in the repository; the lock unlocked from the page is released, with
# a FORCE_UNLOCKED audit row that names the reason typed there.
#
# Needs chromium and node (>= 18) with npm: as root, missing ones are
# installed with apt-get; when they still are not there, or npm cannot fetch
# the pinned packages, it prints "SKIPPED: <reason>" and exits 77 (ctest
# reports it as skipped, never as passed).
set -euo pipefail

SKIP=77
ROWS=${CBATCH_BROWSER_ROWS:-400000}

[ $# -eq 2 ] || {
	echo "usage: $0 EXAMPLES WORKDIR" >&2
	exit 2
}
examples=$(realpath -- "$1")
work=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
mkdir -p "$work"
work=$(realpath -- "$work")

say() { echo "browser: $*"; }
skip() {
	echo "SKIPPED: $*"
	exit $SKIP
}

# ---- the browser and node --------------------------------------------------
chromium_bin() {
	for c in "${CBATCH_CHROMIUM:-}" /usr/bin/chromium /usr/bin/chromium-browser; do
		[ -n "$c" ] && [ -x "$c" ] && { echo "$c"; return 0; }
	done
	return 1
}
node_ok() {
	command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 &&
		[ "$(node -p 'parseInt(process.versions.node)' 2>/dev/null || echo 0)" -ge 18 ]
}
if ! chromium_bin >/dev/null || ! node_ok; then
	if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
		pkgs=()
		chromium_bin >/dev/null || pkgs+=(chromium)
		command -v node >/dev/null 2>&1 || pkgs+=(nodejs)
		command -v npm >/dev/null 2>&1 || pkgs+=(npm)
		say "installing ${pkgs[*]}"
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${pkgs[@]}" \
			</dev/null >"$work/apt.log" 2>&1 ||
			say "apt-get install failed (see $work/apt.log)"
	fi
fi
chromium=$(chromium_bin) || skip "no chromium (apt-get install chromium)"
node_ok || skip "no node >= 18 with npm (apt-get install nodejs npm)"

# ---- puppeteer-core, pinned by package-lock.json ---------------------------
# Reinstalled only when the lock file changed.
if ! cmp -s "$here/package-lock.json" "$work/package-lock.json" ||
	[ ! -d "$work/node_modules/puppeteer-core" ]; then
	cp "$here/package.json" "$here/package-lock.json" "$work/"
	say "npm ci in $work"
	(cd "$work" && npm ci --no-audit --no-fund --loglevel=error) >"$work/npm.log" 2>&1 || {
		rm -f "$work/package-lock.json"
		skip "npm ci failed: $(tail -n 3 "$work/npm.log" | tr '\n' ' ')"
	}
fi

# ---- the repository ----------------------------------------------------------
pgdir=/tmp/cbatch-browser-$$
pids=()
cleanup() {
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	for p in "${pids[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	bash "$root/scripts/pg-cluster.sh" stop "$pgdir" >/dev/null 2>&1 || true
}
trap cleanup EXIT
bash "$root/scripts/pg-cluster.sh" start "$pgdir" >"$work/pg.log" 2>&1 || {
	cat "$work/pg.log"
	echo "FAILED: cannot start PostgreSQL"
	exit 1
}
db="host=$pgdir port=5432 user=postgres dbname=postgres"
ex() { "$examples" --db "$db" "$@"; }
# A query; values travel as psql variables (:'id'), never pasted into SQL.
q() {
	local sql=$1
	shift
	printf '%s\n' "$sql" | psql -X -q -A -t -v ON_ERROR_STOP=1 "$@" "$db"
}

ex schema init >/dev/null
# A partitioned run that fails on account 30, and its restart: the execution
# page's partition columns and the restart's lineage.
ex example-setup ledger --rows 50 --negative-at 30 >/dev/null
prc=0
ex run ledger_partitioned run.id:long=1 -partition.threads:long=2 >/dev/null 2>&1 || prc=$?
[ $prc -eq 1 ] || {
	echo "FAILED: the partitioned run was to fail on account 30 (exit $prc)"
	exit 1
}
part_failed_id=$(q "SELECT max(job_execution_id) FROM batch_job_execution")
q "UPDATE account SET amount = 1 WHERE id = 30"
ex restart "$part_failed_id" >/dev/null
part_id=$(q "SELECT max(job_execution_id) FROM batch_job_execution")
ex example-setup ledger --rows 50 >/dev/null
ex run ledger day:date=2026-06-01 'note=<img src=x onerror=alert(1)>' >/dev/null
done_id=$(q "SELECT max(job_execution_id) FROM batch_job_execution")
ex example-setup ledger --rows "$ROWS" >/dev/null
# Started directly (not through ex, a function: its background copy would be
# a subshell, and $! that shell, not the job).
"$examples" --db "$db" run ledger day:date=2026-06-02 -chunk.size:long=2 >"$work/running.log" 2>&1 &
job_pid=$!
pids+=("$job_pid")
running_id=
for _ in $(seq 1 600); do
	running_id=$(q "SELECT e.job_execution_id FROM batch_job_execution e JOIN
		batch_step_execution s USING (job_execution_id) WHERE e.status = 'STARTED'
		AND s.read_count > 0 LIMIT 1")
	[ -n "$running_id" ] && break
	sleep 0.05
done
[ -n "$running_id" ] || {
	cat "$work/running.log"
	echo "FAILED: the long job did not start"
	exit 1
}
say "finished execution $done_id, running execution $running_id"
# A schedule (never fired: its next firings and an empty history) and the
# tick job's declared parameters for the launch form.
ex example-setup tick >/dev/null
ex schedule add nightly-berlin --cron '30 2 * * *' --tz Europe/Berlin --job tick \
	'at={fire_utc}' >/dev/null
# ledger's only schedule is paused: its next firing says so.
ex schedule add ledger-paused --cron '0 1 * * *' --job ledger 'day:date={fire_date}' \
	--paused >/dev/null
# A schedule whose firing ran long: the six instants skipped meanwhile are one
# row (sql/021), read on its page as a count and a range.
ex schedule add skips --cron '* * * * * *' --job tick 'at={fire_utc}' --paused >/dev/null
q "WITH s AS (SELECT schedule_id FROM batch_schedule WHERE schedule_name = 'skips'),
	f AS (INSERT INTO batch_schedule_firing (schedule_id, fire_time, kind, node_id, status,
	  job_name, finished_at) SELECT schedule_id, timestamptz '2026-03-01 07:48:24Z',
	  'SCHEDULED', 'node-a', 'FINISHED', 'tick', now() FROM s RETURNING firing_id)
	INSERT INTO batch_schedule_firing (schedule_id, fire_time, kind, node_id, status, job_name,
	  message, finished_at, last_instant, instant_count, blocked_by)
	SELECT schedule_id, timestamptz '2026-03-01 07:48:25Z', 'SCHEDULED', 'node-b',
	  'SKIPPED_OVERLAP', 'tick', 'skipped: firing ' || f.firing_id || ' runs (overlap policy SKIP)',
	  now(), timestamptz '2026-03-01 07:48:30Z', 6, f.firing_id FROM s, f"
# A lock another host holds for an hour, its name markup too: unlocked from the page.
lock_name='ops/<b>nightly</b> lock'
q "INSERT INTO batch_lock (lock_name, owner_id, fencing_token, locked_until, locked_at,
	updated_at) VALUES (:'name', 'ops@elsewhere', 7, now() + interval '1 hour', now(), now())" \
	-v name="$lock_name"

# ---- two servers ---------------------------------------------------------------
token=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
umask 077
printf '%s\n' "$token" >"$work/token"
umask 022
port=
start_serve() { # LOG [ARGS...]: its pid appended to pids, its port in $port
	local log=$1
	shift
	port=
	# The log exists before serve does: the loop may read it before the
	# background process has opened it (seen on a loaded machine).
	: >"$log"
	"$examples" --db "$db" serve --listen 127.0.0.1:0 "$@" >>"$log" 2>&1 &
	pids+=($!)
	for _ in $(seq 1 3000); do
		port=$(sed -n 's|^serve: listening on http://127\.0\.0\.1:\([0-9]*\) .*|\1|p' "$log")
		[ -n "$port" ] && return 0
		sleep 0.02
	done
	cat "$log" >&2
	echo "FAILED: serve did not start"
	exit 1
}
start_serve "$work/serve-admin.log" --admin-token-file "$work/token"
admin_port=$port admin_pid=${pids[-1]}
start_serve "$work/serve-readonly.log"
ro_port=$port ro_pid=${pids[-1]}

# ---- the browser ---------------------------------------------------------------
rc=0
CBATCH_CHROMIUM="$chromium" ADMIN_URL="http://127.0.0.1:$admin_port" \
	RO_URL="http://127.0.0.1:$ro_port" ADMIN_TOKEN="$token" DONE_ID="$done_id" \
	RUNNING_ID="$running_id" LOCK_NAME="$lock_name" ARTIFACTS="$work" \
	PART_ID="$part_id" PART_FAILED_ID="$part_failed_id" \
	NODE_PATH="$work/node_modules" \
	node "$here/dashboard.test.js" || rc=$?
[ $rc -eq 0 ] || {
	echo "FAILED: dashboard.test.js exited with $rc (logs and screenshots in $work)"
	exit 1
}

# The stop from the page ended the job: its process exits (5: stopped) and
# the repository says STOPPED.
job_rc=0
wait "$job_pid" || job_rc=$?
status=$(q "SELECT status FROM batch_job_execution WHERE job_execution_id = :'id'" -v id="$running_id")
[ "$status" = STOPPED ] && [ $job_rc -eq 5 ] || {
	echo "FAILED: after the stop: execution $running_id is $status, its process exited $job_rc"
	exit 1
}
say "execution $running_id STOPPED, its process exited $job_rc"
n=$(q "SELECT count(*) FROM batch_lock_audit a JOIN batch_lock l USING (lock_name)
	WHERE a.lock_name = :'name' AND a.outcome = 'FORCE_UNLOCKED' AND l.released
	AND a.owner_id = 'console@127.0.0.1' AND a.detail LIKE '%host ops-3 is gone%'" -v name="$lock_name")
[ "$n" = 1 ] || {
	echo "FAILED: lock '$lock_name': $n FORCE_UNLOCKED audit rows by the console with the reason"
	exit 1
}
say "lock '$lock_name' released from the page, audited with its reason"

# Both servers stop on SIGTERM with 0 (under the sanitizers: nothing found).
for p in "$admin_pid" "$ro_pid"; do
	kill -TERM "$p"
	src=0
	wait "$p" || src=$?
	[ $src -eq 0 ] || {
		cat "$work/serve-admin.log" "$work/serve-readonly.log"
		echo "FAILED: serve (pid $p) exited with $src on SIGTERM"
		exit 1
	}
done
pids=()
# scripts/console-screenshot.sh: the console page's picture (docs/console.png, docs/console.md) is
# this run's running execution at 1366 px.
if [ -n "${CBATCH_CONSOLE_PNG:-}" ]; then
	cp "$work/dashboard-1366.png" "$CBATCH_CONSOLE_PNG"
	say "screenshot copied to $CBATCH_CONSOLE_PNG"
fi
echo "PASSED"
