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
	local s
	s=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
	s=${s##*) }
	set -- $s
	echo "${20}"
}

# End every process in namespace $1 (all of them were started by the run that
# made it), then delete the namespace: a namespace with processes in it
# outlives `ip netns del`.
drop_ns() {
	local ns=$1 pids
	ip netns list 2>/dev/null | grep -q "^$ns\b" || return 0
	pids=$(ip netns pids "$ns" 2>/dev/null || true)
	if [ -n "$pids" ]; then
		kill -TERM $pids 2>/dev/null || true
		for _ in 1 2 3 4 5 6 7 8 9 10; do
			pids=$(ip netns pids "$ns" 2>/dev/null || true)
			[ -z "$pids" ] && break
			sleep 0.2
		done
		[ -n "$pids" ] && kill -KILL $pids 2>/dev/null || true
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
trap 'rc=$?; trap - EXIT; teardown "$tag"; exit $rc' EXIT
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
	ip netns exec "cbh$h-$tag" unshare --uts sh -c 'hostname "$0" && exec "$@"' \
		"cbh$h-$tag" "$@"
}

# ---- the plain ledger job: the expected result ----

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
say "plain ledger: $ROWS accounts in $((SECONDS - t0)) s"
