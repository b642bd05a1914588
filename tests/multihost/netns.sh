#!/usr/bin/env bash
# multihost.netns: several hosts, really separated (issue 10).
#
#   tests/multihost/netns.sh EXAMPLES
#
# EXAMPLES is the cbatch-examples program. The test builds a small network of
# its own out of Linux network namespaces:
#
#   cbdb-T   the database "host": a bridge (the switch) with 10.203.0.1/24 and
#            a PostgreSQL cluster listening on that address only
#   cbhN-T   worker "hosts" N = 1..3, each with its own host name (a UTS
#            namespace) and one veth link into the bridge, 10.203.0.1N/24
#
# T is a tag made from this script's pid, so that runs side by side never
# share a name; the addresses are the same in every run, but each run's are
# in its own namespaces. Every cbatch process talks to the database over TCP
# across those links; only the test's own checks use the cluster's Unix socket.
#
# The scenario: the ledger_partitioned job with three partitions, no local
# threads (the launching process only waits) and a lease of 3 s, worked by one
# worker process per host. While they run, host 1's link is cut for longer
# than the lease (until another host has taken its partition over), then
# healed. The job must complete with the same ledger as the plain `ledger` job
# over the same accounts, every account posted once, host 1's partition
# claimed twice through a lease-expired takeover, and host 1's worker fenced.
#
# Needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN) and iproute2. When network
# namespaces cannot be made, it prints "SKIPPED: <reason>" and exits 77,
# which ctest reports as skipped (tests/CMakeLists.txt, SKIP_RETURN_CODE).
#
# Cleanup: an EXIT trap stops the cluster, ends the processes left in the
# namespaces and deletes them. A run that was killed outright (a ctest
# timeout) leaves its state directory /tmp/cbatch-netns-T behind; the next run
# removes what such a run left, once its process is gone.
set -euo pipefail

SKIP=77
NET=10.203.0
ROWS=${CBATCH_NETNS_ROWS:-150000}
LEASE=3    # partition lease, seconds
MIN_CUT=8  # the link stays down at least this long (> LEASE)
MAX_CUT=40 # and at most this long, waiting for the takeover

[ $# -eq 1 ] || {
	echo "usage: $0 EXAMPLES" >&2
	exit 2
}
examples=$(realpath -- "$1")
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
[ -x "$examples" ] || {
	echo "FAILED: '$examples' is not an executable" >&2
	exit 1
}

say() { echo "netns: $*"; }
skip() {
	echo "SKIPPED: $*"
	exit $SKIP
}

# ---- state of this run, and of runs that were killed ----

tag=$(printf '%x' $$)
state=/tmp/cbatch-netns-$tag
ns_db=cbdb-$tag
hosts=(1 2 3)

# The start time of process $1 (field 22 of /proc/PID/stat), empty when gone.
# A pid alone is reused; pid and start time name one process.
proc_start() {
	local s f
	s=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
	# After the command name, which may hold spaces: field 3 onwards.
	read -ra f <<<"${s##*) }"
	echo "${f[19]}"
}

# End every process in namespace $1 (all of them were started by the run that
# made it), then delete the namespace: a namespace with processes in it
# outlives `ip netns del`.
drop_ns() {
	local ns=$1 pids=()
	ip netns list 2>/dev/null | grep -q "^$ns\b" || return 0
	read -ra pids <<<"$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')"
	if [ ${#pids[@]} -gt 0 ]; then
		kill -TERM "${pids[@]}" 2>/dev/null || true
		for _ in 1 2 3 4 5 6 7 8 9 10; do
			read -ra pids <<<"$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')"
			[ ${#pids[@]} -eq 0 ] && break
			sleep 0.2
		done
		if [ ${#pids[@]} -gt 0 ]; then
			kill -KILL "${pids[@]}" 2>/dev/null || true
		fi
	fi
	ip netns del "$ns" 2>/dev/null || true
}

# Remove everything of the run with tag $1: cluster, processes, namespaces.
teardown() {
	local t=$1 dir=/tmp/cbatch-netns-$1
	if [ -d "$dir/pg" ]; then
		bash "$root/scripts/pg-cluster.sh" stop "$dir/pg" >/dev/null 2>&1 || true
	fi
	for h in "${hosts[@]}"; do
		drop_ns "cbh$h-$t"
	done
	drop_ns "cbdb-$t"
	rm -rf -- "$dir"
}

# Runs that were killed before their trap ran: their process is gone (or is
# another process now), or they had our pid.
sweep() {
	local d t pid start
	for d in /tmp/cbatch-netns-*; do
		[ -f "$d/owner" ] || continue
		t=${d#/tmp/cbatch-netns-}
		read -r pid start <"$d/owner" || continue
		if [ "$pid" != $$ ] && [ -n "$(proc_start "$pid")" ] &&
			[ "$(proc_start "$pid")" = "$start" ]; then
			continue # alive: not ours to touch
		fi
		say "removing what the killed run $t left behind"
		teardown "$t"
	done
}

logs_on_failure() {
	local f
	for f in "$state"/*.out "$state"/*.err "$state"/pg/log; do
		[ -s "$f" ] || continue
		echo "---- ${f#"$state"/} (last 30 lines)"
		tail -n 30 "$f"
	done
}

fail() {
	echo "FAILED: $*"
	logs_on_failure
	exit 1
}

# ---- can we make namespaces at all? ----

command -v ip >/dev/null 2>&1 || skip "no 'ip' command (iproute2) to make network namespaces"
command -v unshare >/dev/null 2>&1 || skip "no 'unshare' command (util-linux)"
command -v psql >/dev/null 2>&1 || fail "no psql (the PostgreSQL client)"

sweep
on_exit() {
	local rc=$?
	trap - EXIT
	teardown "$tag"
	exit $rc
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

(umask 022 && mkdir -p -- "$state")
echo "$$ $(proc_start $$)" >"$state/owner"

if ! out=$(ip netns add "$ns_db" 2>&1); then
	skip "cannot create a network namespace (ip netns add: ${out//$'\n'/ }); needs root with CAP_SYS_ADMIN"
fi

# ---- the network ----

ip -n "$ns_db" link set lo up
if ! out=$(ip -n "$ns_db" link add br0 type bridge 2>&1); then
	skip "cannot create a bridge in a network namespace (${out//$'\n'/ })"
fi
ip -n "$ns_db" addr add "$NET.1/24" dev br0
ip -n "$ns_db" link set br0 up
for h in "${hosts[@]}"; do
	ns=cbh$h-$tag
	ip netns add "$ns"
	ip -n "$ns" link set lo up
	# Interface names have at most 15 characters: cb + tag (<= 6) + h1/d1.
	if ! out=$(ip link add "cb${tag}h$h" netns "$ns" type veth peer name "cb${tag}d$h" \
		netns "$ns_db" 2>&1); then
		skip "cannot create a veth pair between namespaces (${out//$'\n'/ })"
	fi
	ip -n "$ns_db" link set "cb${tag}d$h" master br0
	ip -n "$ns_db" link set "cb${tag}d$h" up
	ip -n "$ns" addr add "$NET.1$h/24" dev "cb${tag}h$h"
	ip -n "$ns" link set "cb${tag}h$h" up
done
say "namespaces $ns_db and cbh{1,2,3}-$tag, bridge $NET.1/24"

# ---- the database, inside cbdb ----

ip netns exec "$ns_db" bash "$root/scripts/pg-cluster.sh" start "$state/pg" \
	--tcp "$NET.1/24" >"$state/pg-start.out" 2>&1 ||
	fail "the cluster did not start in $ns_db"
sock="host=$state/pg port=5432 user=postgres"
q() { psql "$sock dbname=${2:-cbatch}" -X -A -t -q -v ON_ERROR_STOP=1 -c "$1"; }
q "CREATE DATABASE cbatch" postgres >/dev/null
q "CREATE DATABASE plain" postgres >/dev/null
tcp="host=$NET.1 port=5432 user=postgres connect_timeout=5"
db="$tcp dbname=cbatch"

# Each host reaches the server over its own link (the server sees the host's
# address), and the test's own namespace does not reach it at all.
for h in "${hosts[@]}"; do
	got=$(ip netns exec "cbh$h-$tag" psql "$db" -X -A -t -q -c \
		"SELECT host(inet_client_addr())" 2>&1) ||
		fail "host $h cannot connect to the database at $NET.1: $got"
	[ "$got" = "$NET.1$h" ] || fail "host $h connected as '$got', expected $NET.1$h"
done
if psql "$tcp dbname=cbatch connect_timeout=2" -X -A -t -q -c "SELECT 1" >/dev/null 2>&1; then
	fail "the database at $NET.1 is reachable from outside the test's namespaces"
fi
say "hosts 1..3 reach the database at $NET.1:5432 over TCP, each from its own address"

# A cbatch process on a host: its own network and host name (cbhN-T, which
# the worker's and the lock owner's names carry). exec all the way down, so
# that $! is the cbatch process itself.
on_host() {
	local h=$1
	shift
	# shellcheck disable=SC2016 # expanded by that sh, not here
	ip netns exec "cbh$h-$tag" unshare --uts sh -c 'hostname "$0" && exec "$@"' \
		"cbh$h-$tag" "$@"
}

# ---- the same accounts in two databases; the plain ledger job on one ----

# A cbatch-examples command on host $1 against database $2.
cbx() {
	local h=$1 d=$2
	shift 2
	on_host "$h" "$examples" --db "$tcp dbname=$d" "$@"
}
for d in plain cbatch; do
	cbx 2 "$d" schema init >"$state/schema-$d.out" 2>&1 || fail "schema init ($d)"
	cbx 2 "$d" example-setup ledger --rows "$ROWS" >"$state/setup-$d.out" 2>&1 ||
		fail "example-setup ledger ($d)"
done
t0=$SECONDS
cbx 2 plain run ledger >"$state/plain.out" 2>&1 || fail "the plain ledger job did not complete"
say "plain ledger: $ROWS accounts posted in $((SECONDS - t0)) s (host 2)"

# ---- the partitioned job: three workers, one per host; host 1 is cut off ----

declare -A wpid
for h in "${hosts[@]}"; do
	cbx "$h" cbatch worker --job ledger_partitioned --threads 1 --lease "$LEASE" \
		--exit-when-idle 10 >"$state/worker$h.out" 2>"$state/worker$h.err" &
	wpid[$h]=$!
done
# The launcher runs no partition itself (0 threads): it waits for the
# workers. Its own lock has a longer lease, so that only host 1 ever loses one.
cbx 2 cbatch run ledger_partitioned -partition.threads:long=0 -partition.count:long=3 \
	--lease 20 >"$state/launch.out" 2>"$state/launch.err" &
lpid=$!
t0=$SECONDS

# Host 1's partition, once it has committed a chunk and is still running.
p1=
while [ -z "$p1" ]; do
	p1=$(q "SELECT step_execution_id FROM batch_step_execution
	         WHERE partition_index IS NOT NULL AND worker LIKE 'cbh1-$tag/%'
	           AND status = 'STARTED' AND commit_count >= 1")
	[ -n "$p1" ] && break
	kill -0 "$lpid" 2>/dev/null || fail "the launch ended before host 1 had committed a chunk"
	[ $((SECONDS - t0)) -lt 30 ] || fail "host 1 committed no chunk of a partition in 30 s"
	sleep 0.1
done
lock1="cbatch.partition:$p1"
token1=$(q "SELECT fencing_token FROM batch_step_execution WHERE step_execution_id = $p1")
done1=$(q "SELECT write_count FROM batch_step_execution WHERE step_execution_id = $p1")

ip -n "cbh1-$tag" link set "cb${tag}h1" down
cut=$SECONDS
say "cut host 1's link, its partition $p1 at $done1 rows (fencing token $token1)"
if ip netns exec "cbh1-$tag" psql "$tcp dbname=cbatch connect_timeout=2" -X -A -t -q \
	-c "SELECT 1" >/dev/null 2>&1; then
	fail "host 1 still reaches the database with its link down"
fi
# Down for longer than the lease, and until another host has taken over.
while :; do
	n=$(q "SELECT claim_count FROM batch_step_execution WHERE step_execution_id = $p1")
	[ "$n" -ge 2 ] && [ $((SECONDS - cut)) -ge $MIN_CUT ] && break
	[ $((SECONDS - cut)) -lt $MAX_CUT ] ||
		fail "host 1's partition $p1 was not taken over in $MAX_CUT s (claims: $n)"
	sleep 0.2
done
ip -n "cbh1-$tag" link set "cb${tag}h1" up
say "healed host 1's link after $((SECONDS - cut)) s; partition $p1 now runs on" \
	"$(q "SELECT worker FROM batch_step_execution WHERE step_execution_id = $p1")"

# Everything ends by itself: the launch when the partitions are done, the
# workers after 10 s without work.
wait_for() {
	local pid=$1 what=$2 limit=$3 start=$SECONDS
	while kill -0 "$pid" 2>/dev/null; do
		[ $((SECONDS - start)) -lt "$limit" ] || fail "$what did not end in $limit s"
		sleep 0.2
	done
	wait "$pid"
}
lrc=0
wait_for "$lpid" "the launch" 60 || lrc=$?
[ $lrc -eq 0 ] || fail "the launch exited $lrc, expected 0 (completed)"
say "the launch completed $((SECONDS - t0)) s after it started, $((SECONDS - cut)) s after the cut"
# What the job wrote, when it completed: nothing may change it afterwards,
# in particular not host 1's worker, which may learn only now that it was cut off.
written="SELECT md5(string_agg(l.account_id || ':' || l.amount || ':' || l.job_execution_id, ','
	ORDER BY l.account_id)) || (SELECT count(*) FROM account WHERE processed)
	|| (SELECT string_agg(step_execution_id || ':' || status || ':' || version || ':'
	    || write_count || ':' || commit_count, ',' ORDER BY step_execution_id)
	    FROM batch_step_execution) FROM ledger l"
at_end=$(q "$written")
if grep -q "lost ledger_partitioned" "$state/worker1.err"; then
	say "host 1's worker had already given its partition up"
else
	say "host 1's worker still believes it runs its partition"
fi
declare -A wrc
for h in "${hosts[@]}"; do
	wrc[$h]=0
	wait_for "${wpid[$h]}" "the worker on host $h" 60 || wrc[$h]=$?
	say "the worker on host $h exited ${wrc[$h]}, $((SECONDS - cut)) s after the cut"
done
# A lost partition is no error of the worker's (its successor finishes it);
# anything else, a sanitizer's report included, is.
for h in "${hosts[@]}"; do
	[ "${wrc[$h]}" -eq 0 ] || fail "the worker on host $h exited ${wrc[$h]}, expected 0"
done

# ---- what the repository and the ledger say ----

check() { # check WHAT EXPECTED SQL [DB]
	local got
	got=$(q "$3" "${4:-cbatch}") || fail "$1: query failed"
	[ "$got" = "$2" ] || fail "$1: got '$got', expected '$2'"
}
check "job execution status" COMPLETED "SELECT string_agg(status, ',') FROM batch_job_execution"
check "partitions completed" "3|3" "SELECT count(*), count(*) FILTER (WHERE status = 'COMPLETED')
	FROM batch_step_execution WHERE partition_index IS NOT NULL"
# Every account posted once: the partitions' counts add up to the accounts,
# no upsert met a row already there, and no chunk was undone after its commit.
check "rows written by the partitions" "$ROWS|0" "SELECT sum(write_count),
	sum(duplicate_target_write_count) FROM batch_step_execution WHERE partition_index IS NOT NULL"
check "accounts left unprocessed" 0 "SELECT count(*) FROM account WHERE NOT processed"
check "ledger rows" "$ROWS|$ROWS" "SELECT count(*), count(DISTINCT account_id) FROM ledger"
check "ledger rows matching their account" "$ROWS" "SELECT count(*) FROM account a
	JOIN ledger l ON l.account_id = a.id AND l.seller_id = a.seller_id AND l.amount = a.amount"
# The same ledger as the plain job's (the stamp column names the execution,
# which differs by design).
digest="SELECT md5(string_agg(account_id || ':' || seller_id || ':' || amount, ','
	ORDER BY account_id)) FROM ledger"
check "ledger equal to the plain job's" "$(q "$digest" plain)" "$digest"

# Host 1's partition was taken over after its lease expired, resumed from
# its committed context (the rows host 1 committed were not read again), and
# host 1's worker learnt that it had lost it.
check "claims of host 1's partition" t "SELECT claim_count >= 2 AND worker NOT LIKE 'cbh1-$tag/%'
	FROM batch_step_execution WHERE step_execution_id = $p1"
check "lease-expired takeovers of $lock1" t "SELECT count(*) >= 1 FROM batch_lock_audit
	WHERE lock_name = '$lock1' AND outcome = 'LEASE_EXPIRED_TAKEOVER'
	  AND fencing_token > $token1"
check "what the job wrote, once every worker had exited" "$at_end" "$written"
check "rows read again by host 1's partition" t "SELECT read_count = write_count
	FROM batch_step_execution WHERE step_execution_id = $p1"
grep -q "gave up ledger_partitioned execution .*: taken over by " "$state/worker1.err" ||
	fail "host 1's worker did not report losing its partition"
grep -q "worker: claimed 1 partitions, completed 0," "$state/worker1.out" ||
	fail "host 1's worker completed a partition: $(cat "$state/worker1.out")"
say "host 1's worker: $(grep -m1 "gave up ledger_partitioned" "$state/worker1.err")"
for h in "${hosts[@]}"; do
	echo "---- worker on host $h"
	cat "$state/worker$h.err" "$state/worker$h.out"
done
echo "---- audit of $lock1"
q "SELECT outcome, fencing_token, owner_id, detail FROM batch_lock_audit
	WHERE lock_name = '$lock1' ORDER BY audit_id"
say "PASSED"
