#!/usr/bin/env bash
# A throwaway highly available PostgreSQL on loopback, for tests (issue 26).
#
#   scripts/ha-cluster.sh start DIR          (re)create the cluster in DIR, start it, wait
#                                            until it is healthy (below)
#   scripts/ha-cluster.sh stop DIR           stop everything and remove DIR
#   scripts/ha-cluster.sh switchover DIR     planned switchover to the synchronous standby
#                                            (patronictl switchover --force); waits until the
#                                            new leader takes writes
#   scripts/ha-cluster.sh kill-primary DIR   crash the primary's node (below); waits until
#                                            a new primary takes writes
#   scripts/ha-cluster.sh heal DIR           start every member that is down again, wait
#                                            until the cluster is healthy
#   scripts/ha-cluster.sh catch-up DIR       wait until every running replica has replayed
#                                            what the primary has written so far
#   scripts/ha-cluster.sh primary DIR        the primary member's name (m1, m2 or m3)
#   scripts/ha-cluster.sh conninfo DIR [--multi-host | --proxy]
#                                            line 1: libpq multi-host conninfo over the three
#                                            members, target_session_attrs=read-write;
#                                            line 2: the HAProxy endpoint (one line with an
#                                            option)
#   scripts/ha-cluster.sh status DIR         patronictl list; exit 0 if healthy
#
# Layout, all on 127.0.0.1 and nowhere else: one etcd (3.4, Patroni's `etcd3`
# section: the v3 API through etcd's gRPC gateway), three Patroni (3.0)
# members m1..m3 each running PostgreSQL 15 (/usr/lib/postgresql/15/bin, else
# the newest installed), and HAProxy in front of them, routing to the member
# whose Patroni REST API answers 200 on GET /primary. The ports are free ones
# picked at start in 20000-32767 (below the kernel's ephemeral range), kept in
# DIR/ports. The DCS namespace is DIR's own, so clusters of several build trees
# never meet.
#
# PostgreSQL: synchronous_mode (Patroni keeps one synchronous standby; a commit
# is acknowledged once it is on two nodes), synchronous_commit on, fsync off
# (the data is disposable, a node "crash" here never loses the OS page cache),
# full_page_writes and wal_log_hints on (pg_rewind of a crashed primary), trust
# for local and 127.0.0.1 connections, superuser "postgres", no password.
# Patroni: ttl 10 s, loop_wait 1 s, retry_timeout 4 s, so that a crashed
# primary's leader key expires about 10 s after the crash.
#
# Healthy (what start, heal and status wait for, up to 120 s): one leader,
# writable through the multi-host conninfo (a probe row commits, which needs
# the synchronous standby's acknowledgement), both other members streaming from
# it, one of them its synchronous standby, and HAProxy routing to it.
#
# A crash (kill-primary) is a node crash: SIGKILL, at once, to the primary's
# Patroni, its postmaster and every child of the postmaster. Nothing shuts
# down cleanly and nothing releases the leader key: the other members take
# over only when it expires (ttl). Clients see their connections reset at
# once (loopback): unlike a real host that loses power, where a client's
# socket hangs until a TCP timeout or keepalive gives up. The member stays down
# until `heal`, which starts its Patroni again (pg_rewind, or a new base backup
# if the rewind fails). switchover and kill-primary print "outage: S s", the
# longest gap between two successful probe commits (a commit every 50 ms
# through the multi-host conninfo) around the event: from the last commit
# before to the first after.
#
# Everything runs from DIR: etcd's data, the members' data directories and
# Unix sockets, the logs (DIR/*.log), pid files (DIR/pids). As root, every
# process runs as the unprivileged user "postgres" (initdb and the postmaster
# refuse root) and DIR belongs to it; keep DIR out of /root. No systemd. DIR is
# marked with .cbatch-ha-cluster and only such a DIR (or an empty or missing
# one) is ever wiped. A start that fails stops what it started (trap).
#
# Needs: patroni, etcd-server, haproxy, curl, psql (Debian packages; see
# scripts/install-deps.sh). When one is missing, start exits 77 (skipped).
#
# The port variables (etcd, m1_pg, ..., proxy) are read from DIR/ports by load_ports.
# shellcheck disable=SC2154
set -euo pipefail

MARKER=.cbatch-ha-cluster
MEMBERS=(m1 m2 m3)
SKIP=77
HEALTHY_WAIT=${CBATCH_HA_WAIT:-120} # seconds, for start, heal and status
EVENT_WAIT=90                       # seconds, for a switchover or a crash to end

die() {
	echo "ha-cluster: $*" >&2
	exit 1
}
say() { echo "ha-cluster: $*" >&2; }

usage() {
	echo "usage: $0 start|stop|switchover|kill-primary|heal|catch-up|primary|status DIR" >&2
	echo "       $0 conninfo DIR [--multi-host | --proxy]" >&2
	exit 2
}

[ $# -ge 2 ] && [ $# -le 3 ] || usage
cmd=$1
dir=$2
opt=${3:-}
[ -z "$opt" ] || [ "$cmd" = conninfo ] || usage

case "$dir" in
/*) ;;
*) dir="$(pwd)/$dir" ;;
esac
dir=$(realpath -m -- "$dir")
case "$dir" in
/ | /tmp | /var | /var/tmp | /home | /root | /usr | /etc) die "refusing to use '$dir' as a cluster directory" ;;
esac
case "$dir" in
*[[:space:]\'\"\\]*) die "cluster directory '$dir' must not contain spaces, quotes or backslashes" ;;
esac
# The longest Unix socket path: DIR/mN/.s.PGSQL.PPPPP (sun_path: 107 bytes).
[ $((${#dir} + 20)) -le 107 ] || die "'$dir' is too long for the members' Unix sockets"

# PostgreSQL's own (env) settings must not leak into psql, initdb or Patroni.
unset PGDATA PGHOST PGHOSTADDR PGPORT PGUSER PGDATABASE PGOPTIONS PGSERVICE PGPASSWORD \
	PGTARGETSESSIONATTRS PGCONNECT_TIMEOUT PATRONI_CONFIGURATION

# ---- tools -----------------------------------------------------------------

find_bindir() {
	local d
	for d in /usr/lib/postgresql/15/bin $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -rV); do
		[ -x "$d/postgres" ] && [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && {
			echo "$d"
			return 0
		}
	done
	return 1
}

missing_tools() {
	local t miss=()
	for t in patroni patronictl etcd haproxy curl psql ss; do
		command -v "$t" >/dev/null 2>&1 || miss+=("$t")
	done
	find_bindir >/dev/null || miss+=(postgresql-15)
	echo "${miss[*]}"
}

if [ "$(id -u)" -eq 0 ]; then
	id -u postgres >/dev/null 2>&1 ||
		die "running as root needs the unprivileged user 'postgres' (created by the postgresql package)"
	command -v setpriv >/dev/null 2>&1 || die "running as root needs setpriv (util-linux)"
	# setpriv execs (no fork), so that $! is the daemon's own pid.
	owner_cmd=(setpriv --reuid=postgres --regid=postgres --init-groups -- env HOME=/tmp)
	owner=postgres
else
	owner_cmd=()
	owner=$(id -un)
fi
as_owner() { (cd / && exec "${owner_cmd[@]}" "$@"); }

# ---- processes ---------------------------------------------------------------

# The start time of process $1 (field 22 of /proc/PID/stat), empty when gone.
# A pid alone may be reused; pid and start time name one process.
proc_start() {
	local s f
	s=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
	read -ra f <<<"${s##*) }"
	echo "${f[19]}"
}

# Is the process of pid file DIR/pids/$1 (pid and start time) alive?
# A zombie nobody has reaped yet is not.
alive() {
	local pid start state
	[ -r "$dir/pids/$1" ] || return 1
	read -r pid start <"$dir/pids/$1" || return 1
	[ -n "$pid" ] && [ "$(proc_start "$pid")" = "$start" ] || return 1
	state=$(sed -n 's/^[0-9]* (.*) \([A-Za-z]\) .*/\1/p' "/proc/$pid/stat" 2>/dev/null) || return 1
	[ "$state" != Z ] && [ "$state" != X ]
}

pid_of() {
	local pid start
	alive "$1" || return 1
	read -r pid start <"$dir/pids/$1"
	echo "$pid"
}

# Start a daemon in the background, detached (own session, no terminal, output
# to DIR/$1.log), and record its pid and start time in DIR/pids/$1.
launch() {
	local name=$1 pid
	shift
	# Not a process group leader (no job control here): setsid execs too.
	(cd / && exec setsid "${owner_cmd[@]}" "$@") </dev/null >>"$dir/$name.log" 2>&1 &
	pid=$!
	echo "$pid $(proc_start "$pid")" >"$dir/pids/$name"
}

# The postmaster of member $1, if one is alive.
postmaster_of() {
	local pid state
	[ -r "$dir/$1/data/postmaster.pid" ] || return 1
	pid=$(head -n 1 "$dir/$1/data/postmaster.pid" 2>/dev/null) || return 1
	[[ "$pid" =~ ^[0-9]+$ ]] || return 1
	state=$(sed -n 's/^[0-9]* (.*) \([A-Za-z]\) .*/\1/p' "/proc/$pid/stat" 2>/dev/null) || return 1
	[ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ] || return 1
	# The pid file outlives a crash: the pid must still be a postgres of ours.
	tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$dir/$1/data" || return 1
	echo "$pid"
}

# The children of process $1.
children_of() {
	local f s rest ppid pids=()
	for f in /proc/[0-9]*/stat; do
		s=$(cat "$f" 2>/dev/null) || continue
		rest=${s##*) }
		read -r _ ppid _ <<<"$rest"
		if [ "$ppid" = "$1" ]; then
			s=${f#/proc/}
			pids+=("${s%/stat}")
		fi
	done
	echo "${pids[*]}"
}

# Wait up to $2 seconds until the processes of pid files $1 (a list) are gone.
wait_gone() {
	local names=$1 deadline=$((SECONDS + $2)) n left
	while :; do
		left=0
		for n in $names; do
			alive "$n" && left=1
		done
		[ $left -eq 0 ] && return 0
		[ $SECONDS -ge $deadline ] && return 1
		sleep 0.2
	done
}

# Stop the daemons of pid files $@: SIGTERM, up to 30 s, then SIGKILL.
stop_daemons() {
	local n pid
	for n in "$@"; do
		if pid=$(pid_of "$n"); then
			kill -TERM "$pid" 2>/dev/null || true
		fi
	done
	if ! wait_gone "$*" 30; then
		for n in "$@"; do
			pid=$(pid_of "$n") && {
				say "$n (pid $pid) did not stop within 30 s: SIGKILL"
				kill -KILL "$pid" 2>/dev/null || true
			}
		done
		wait_gone "$*" 10 || true
	fi
}

# Kill what is left of member $1's PostgreSQL (its Patroni is gone).
kill_postgres() {
	local pm kids
	pm=$(postmaster_of "$1") || return 0
	kids=$(children_of "$pm")
	# shellcheck disable=SC2086
	kill -KILL "$pm" $kids 2>/dev/null || true
	for _ in $(seq 50); do
		postmaster_of "$1" >/dev/null || return 0
		sleep 0.1
	done
}

# Everything of this DIR, whatever state it is in. The cluster is thrown
# away (its directory is removed next), so nothing is gained by Patroni's
# graceful stop, which under load took 35 s (three members, one after
# another): the Patronis are killed at once, so that none acts on the others'
# going, then every PostgreSQL is shut down immediately (SIGQUIT: the
# postmaster still removes its shared memory), then HAProxy and etcd.
stop_all() {
	local m pid pm pms=() deadline
	[ -d "$dir/pids" ] || return 0
	for m in "${MEMBERS[@]}"; do
		if pid=$(pid_of "$m"); then
			kill -KILL "$pid" 2>/dev/null || true
		fi
	done
	wait_gone "${MEMBERS[*]}" 10 || true
	for m in "${MEMBERS[@]}"; do
		if pm=$(postmaster_of "$m"); then
			kill -QUIT "$pm" 2>/dev/null || true
			pms+=("$m")
		fi
	done
	deadline=$((SECONDS + 10))
	for m in "${pms[@]}"; do
		while postmaster_of "$m" >/dev/null && [ $SECONDS -lt $deadline ]; do
			sleep 0.1
		done
		kill_postgres "$m"
	done
	stop_daemons haproxy etcd
	return 0
}

# Not ours to wipe: a non-empty directory without our marker.
check_ours() {
	if [ -e "$dir" ] && [ ! -d "$dir" ]; then
		die "'$dir' exists and is not a directory"
	fi
	if [ -d "$dir" ] && [ ! -e "$dir/$MARKER" ] && [ -n "$(ls -A -- "$dir" 2>/dev/null)" ]; then
		die "'$dir' is not empty and was not made by ha-cluster.sh (no $MARKER); refusing to touch it"
	fi
}

# ---- ports and addresses -----------------------------------------------------

PORT_NAMES=(etcd etcd_peer m1_pg m2_pg m3_pg m1_api m2_api m3_api proxy)

# Nine free loopback ports in a row, from a random base.
pick_ports() {
	local used base p ok n=${#PORT_NAMES[@]}
	used=" $(ss -Htan 2>/dev/null | awk '{ n = split($4, a, ":"); print a[n] }' | sort -u | tr '\n' ' ') "
	for _ in $(seq 200); do
		base=$((20000 + RANDOM % (32768 - 20000 - n)))
		ok=1
		for ((p = base; p < base + n; p++)); do
			case "$used" in *" $p "*) ok=0 ;; esac
		done
		if [ $ok -eq 1 ]; then
			echo "$base"
			return 0
		fi
	done
	return 1
}

load_ports() {
	[ -r "$dir/ports" ] || die "no cluster in $dir (no $dir/ports): start it first"
	# shellcheck disable=SC1091
	. "$dir/ports"
}

pg_port() {
	local v="${1}_pg"
	echo "${!v}"
}
api_port() {
	local v="${1}_api"
	echo "${!v}"
}

multi_host_conninfo() {
	echo "host=127.0.0.1,127.0.0.1,127.0.0.1 port=$m1_pg,$m2_pg,$m3_pg user=postgres dbname=postgres target_session_attrs=read-write connect_timeout=5"
}
proxy_conninfo() {
	echo "host=127.0.0.1 port=$proxy user=postgres dbname=postgres connect_timeout=5"
}

# ---- state -----------------------------------------------------------------

# HTTP status of Patroni's REST API of member $1 at path $2 (000: no answer).
api() {
	curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$(api_port "$1")$2" 2>/dev/null || true
}

# The member whose Patroni says it is the primary (exactly one), else fail.
leader_name() {
	local m found=()
	load_ports
	for m in "${MEMBERS[@]}"; do
		alive "$m" && [ "$(api "$m" /primary)" = 200 ] && found+=("$m")
	done
	[ ${#found[@]} -eq 1 ] || return 1
	echo "${found[0]}"
}

# The synchronous standby (Patroni's /sync), else fail.
sync_name() {
	local m
	for m in "${MEMBERS[@]}"; do
		alive "$m" && [ "$(api "$m" /sync)" = 200 ] && {
			echo "$m"
			return 0
		}
	done
	return 1
}

# psql on conninfo $1, query $2, unaligned, at most 10 s.
sql_on() {
	timeout -k 2 10 psql -X -A -t -q -v ON_ERROR_STOP=1 -d "$1" -c "$2" 2>/dev/null
}

# One probe commit through the multi-host conninfo; prints the server's port.
probe() {
	sql_on "$(multi_host_conninfo)" \
		"INSERT INTO cbatch_ha_probe DEFAULT VALUES RETURNING inet_server_port()"
}

# Healthy (see the top); with $1 = -v, say what is missing.
healthy() {
	local l port n why=
	if ! l=$(leader_name); then
		why="no single leader"
	else
		port=$(pg_port "$l")
		n=$(sql_on "host=127.0.0.1 port=$port user=postgres dbname=postgres" \
			"SELECT count(*) FILTER (WHERE state = 'streaming') || ' ' || count(*) FILTER (WHERE sync_state = 'sync') FROM pg_stat_replication" ||
			true)
		if [ "$n" != "2 1" ]; then
			why="leader $l: streaming replicas and synchronous standbys '${n:-?}', want '2 1'"
		elif ! sync_name >/dev/null; then
			why="Patroni names no synchronous standby yet"
		elif [ "$(probe || true)" != "$port" ]; then
			why="leader $l takes no write through the multi-host conninfo"
		elif [ "$(sql_on "$(proxy_conninfo)" "SELECT inet_server_port()" || true)" != "$port" ]; then
			why="HAProxy does not route to the leader $l"
		fi
	fi
	if [ -n "$why" ]; then
		[ "${1:-}" = -v ] && echo "$why"
		return 1
	fi
	return 0
}

wait_healthy() {
	local deadline=$((SECONDS + HEALTHY_WAIT)) why
	while :; do
		why=$(healthy -v) && return 0
		if [ $SECONDS -ge $deadline ]; then
			say "not healthy after $HEALTHY_WAIT s: $why"
			show_logs
			return 1
		fi
		sleep 0.5
	done
}

show_logs() {
	local f
	for f in "$dir"/*.log; do
		[ -f "$f" ] || continue
		echo "---- last lines of $f" >&2
		tail -n 15 "$f" >&2
	done
	as_owner patronictl -c "$dir/m1/patroni.yml" list >&2 2>&1 || true
}

# ---- probe loop: the outage, as the longest gap between commits --------------

probe_start() {
	local until=$((SECONDS + EVENT_WAIT + 30))
	: >"$dir/probe.times"
	rm -f "$dir/probe.stop"
	# Bounded, and gone with DIR, whatever happens to this script.
	(
		while [ ! -e "$dir/probe.stop" ] && [ -d "$dir/pids" ] && [ $SECONDS -lt $until ]; do
			if probe >/dev/null; then
				date +%s.%N >>"$dir/probe.times"
			fi
			sleep 0.05
		done
	) </dev/null >/dev/null 2>&1 &
	probe_pid=$!
	# The gap needs a commit before the event: wait for two.
	for _ in $(seq 200); do
		[ "$(wc -l <"$dir/probe.times")" -ge 2 ] && return 0
		sleep 0.05
	done
	say "warning: no probe commit before the event; the outage will not be measured"
}

# Stop the loop (in this shell, never in a $(...) subshell: only the shell that
# started it can wait for it); set outage to the longest gap between
# successive commits, in seconds.
probe_stop() {
	touch "$dir/probe.stop"
	wait "$probe_pid" 2>/dev/null || true
	rm -f "$dir/probe.stop"
	outage=$(awk 'NR > 1 && $1 - prev > max { max = $1 - prev } { prev = $1 }
	     END { if (NR < 2) print "unknown"; else printf "%.2f\n", max }' "$dir/probe.times")
}

# Wait until a member other than $1 is the leader and takes writes.
wait_new_leader() {
	local old=$1 deadline=$((SECONDS + EVENT_WAIT)) l
	while :; do
		if l=$(leader_name) && [ "$l" != "$old" ] && [ "$(probe || true)" = "$(pg_port "$l")" ]; then
			echo "$l"
			return 0
		fi
		if [ $SECONDS -ge $deadline ]; then
			say "no new writable leader $EVENT_WAIT s after the loss of $old"
			show_logs
			return 1
		fi
		sleep 0.1
	done
}

# ---- configuration -------------------------------------------------------------

write_config() {
	local m=$1 bindir=$2 tag=$3
	cat >"$dir/$m/patroni.yml" <<YAML
# scripts/ha-cluster.sh: member $m of a disposable test cluster
scope: cbatch-ha
namespace: /cbatch-ha-$tag/
name: $m
log:
  level: INFO
restapi:
  listen: 127.0.0.1:$(api_port "$m")
  connect_address: 127.0.0.1:$(api_port "$m")
etcd3:
  hosts: 127.0.0.1:$etcd
  protocol: http
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 1
    retry_timeout: 4
    maximum_lag_on_failover: 1048576
    synchronous_mode: true
    primary_stop_timeout: 10
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        max_connections: 200
        shared_buffers: 64MB
        fsync: 'off'
        synchronous_commit: 'on'
        full_page_writes: 'on'
        wal_log_hints: 'on'
        wal_level: replica
        hot_standby: 'on'
        max_wal_senders: 10
        max_replication_slots: 10
        wal_keep_size: 256MB
        log_min_messages: warning
        log_line_prefix: '%m [%p] %d '
  initdb:
    - encoding: UTF8
    - locale: C
    - auth: trust
    - no-sync
postgresql:
  listen: 127.0.0.1:$(pg_port "$m")
  connect_address: 127.0.0.1:$(pg_port "$m")
  use_unix_socket: true
  data_dir: $dir/$m/data
  bin_dir: $bindir
  pgpass: $dir/$m/pgpass
  remove_data_directory_on_rewind_failure: true
  remove_data_directory_on_diverged_timelines: true
  authentication:
    superuser:
      username: postgres
    replication:
      username: postgres
    rewind:
      username: postgres
  parameters:
    unix_socket_directories: $dir/$m
    unix_socket_permissions: '0777'
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - local replication all trust
    - host replication all 127.0.0.1/32 trust
  basebackup:
    - checkpoint: fast
YAML
}

write_haproxy() {
	local m
	{
		cat <<CFG
# scripts/ha-cluster.sh: HAProxy in front of the members, to the primary only
global
    maxconn 400

defaults
    mode tcp
    retries 2
    timeout connect 2s
    timeout client 1h
    timeout server 1h
    timeout check 2s

listen postgres
    bind 127.0.0.1:$proxy
    option httpchk GET /primary
    http-check expect status 200
    default-server inter 500ms fastinter 250ms fall 2 rise 1 on-marked-down shutdown-sessions
CFG
		for m in "${MEMBERS[@]}"; do
			echo "    server $m 127.0.0.1:$(pg_port "$m") maxconn 200 check port $(api_port "$m")"
		done
	} >"$dir/haproxy.cfg"
}

start_member() {
	launch "$1" patroni "$dir/$1/patroni.yml"
}

# ---- commands ------------------------------------------------------------------

do_start() {
	local miss bindir base i m tag
	miss=$(missing_tools)
	if [ -n "$miss" ]; then
		echo "SKIPPED: missing $miss (Debian: bash scripts/install-deps.sh)"
		exit $SKIP
	fi
	bindir=$(find_bindir)
	check_ours
	stop_all
	rm -rf -- "$dir" || die "could not remove '$dir'"
	(umask 077 && mkdir -p -- "$dir/pids" "$dir/etcd" "${MEMBERS[@]/#/$dir/}")
	touch "$dir/$MARKER"
	chmod 700 "$dir"
	[ "$owner" = postgres ] && [ "$(id -u)" -eq 0 ] && chown -R postgres: "$dir"
	# From here on, a failure stops what was started.
	trap 'rc=$?; if [ $rc -ne 0 ]; then say "start failed: stopping what it started"; stop_all; fi' EXIT

	base=$(pick_ports) || die "no nine free loopback ports in a row in 20000-32767"
	i=0
	for name in "${PORT_NAMES[@]}"; do
		echo "$name=$((base + i))"
		i=$((i + 1))
	done >"$dir/ports"
	load_ports
	tag=$(printf '%s' "$dir" | md5sum | cut -c1-12)

	launch etcd etcd --name etcd0 --data-dir "$dir/etcd/data" \
		--listen-client-urls "http://127.0.0.1:$etcd" \
		--advertise-client-urls "http://127.0.0.1:$etcd" \
		--listen-peer-urls "http://127.0.0.1:$etcd_peer" \
		--initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" \
		--initial-cluster "etcd0=http://127.0.0.1:$etcd_peer" \
		--initial-cluster-token "cbatch-ha-$tag" --initial-cluster-state new \
		--enable-v2=false --logger=zap --log-outputs=stderr
	for _ in $(seq 300); do
		[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$etcd/health" || true)" = 200 ] && break
		alive etcd || {
			show_logs
			die "etcd did not start (see $dir/etcd.log)"
		}
		sleep 0.1
	done

	for m in "${MEMBERS[@]}"; do
		write_config "$m" "$bindir" "$tag"
	done
	[ "$owner" = postgres ] && [ "$(id -u)" -eq 0 ] && chown -R postgres: "$dir"
	# m1 first, so that it bootstraps the cluster; the others clone it.
	start_member m1
	local deadline=$((SECONDS + HEALTHY_WAIT))
	until [ "$(api m1 /primary)" = 200 ]; do
		alive m1 || {
			show_logs
			die "m1's Patroni exited while bootstrapping (see $dir/m1.log)"
		}
		[ $SECONDS -lt $deadline ] || {
			show_logs
			die "m1 did not become the leader within $HEALTHY_WAIT s"
		}
		sleep 0.2
	done
	sql_on "host=127.0.0.1 port=$m1_pg user=postgres dbname=postgres" \
		"CREATE TABLE IF NOT EXISTS cbatch_ha_probe (id bigserial PRIMARY KEY, at timestamptz NOT NULL DEFAULT clock_timestamp())" >/dev/null ||
		die "could not create the probe table on m1"
	start_member m2
	start_member m3
	write_haproxy
	launch haproxy haproxy -db -f "$dir/haproxy.cfg"
	wait_healthy || die "the cluster did not become healthy"
	trap - EXIT
	say "healthy: leader $(leader_name), synchronous standby $(sync_name || echo '?')"
	multi_host_conninfo
	proxy_conninfo
}

do_switchover() {
	local old cand new out
	load_ports
	# Only from a healthy cluster: right after an event, a member may still be
	# on the old timeline, and Patroni then refuses to promote anyone.
	wait_healthy || die "not switching over: the cluster is not healthy"
	old=$(leader_name) || die "no single leader to switch over from"
	cand=$(sync_name) || die "no synchronous standby to switch over to"
	probe_start
	trap 'probe_stop' EXIT
	if ! out=$(as_owner patronictl -c "$dir/$old/patroni.yml" switchover --leader "$old" \
		--candidate "$cand" --force 2>&1); then
		echo "$out" >&2
		die "patronictl switchover failed"
	fi
	new=$(wait_new_leader "$old") || die "the switchover from $old to $cand did not complete"
	# A few more commits after the first, so that the gap is closed.
	sleep 0.3
	say "switchover: $old -> $new"
	probe_stop
	echo "outage: $outage s"
	trap - EXIT
}

do_kill_primary() {
	local old pat pm kids new
	load_ports
	wait_healthy || die "not crashing the primary: the cluster is not healthy"
	old=$(leader_name) || die "no single leader to kill"
	pat=$(pid_of "$old") || die "the Patroni of $old is not running"
	pm=$(postmaster_of "$old") || die "the postmaster of $old is not running"
	kids=$(children_of "$pm")
	probe_start
	trap 'probe_stop' EXIT
	# The node dies: its Patroni, its postmaster and every backend at once.
	# shellcheck disable=SC2086
	kill -KILL "$pat" "$pm" $kids 2>/dev/null || true
	say "killed $old: Patroni $pat, postmaster $pm and its children"
	new=$(wait_new_leader "$old") || die "no new primary after the crash of $old"
	sleep 0.3
	say "crash: $old -> $new ($old stays down until heal)"
	probe_stop
	echo "outage: $outage s"
	trap - EXIT
}

do_heal() {
	local m
	load_ports
	for m in "${MEMBERS[@]}"; do
		if ! alive "$m"; then
			kill_postgres "$m"
			say "starting $m again"
			start_member "$m"
		fi
	done
	alive etcd || die "etcd is not running"
	alive haproxy || launch haproxy haproxy -db -f "$dir/haproxy.cfg"
	wait_healthy || die "the cluster did not become healthy"
}

# Wait until every running replica has replayed what the primary has written
# so far. libpq tries a multi-host conninfo's hosts in order, and a server's
# FATAL at connection (a database it has not replayed yet) ends the attempt
# there: a database just created is usable through the multi-host conninfo
# only once every member has it.
do_catch_up() {
	local l port lsn n want=0 m deadline=$((SECONDS + HEALTHY_WAIT))
	load_ports
	l=$(leader_name) || die "no single leader"
	port=$(pg_port "$l")
	for m in "${MEMBERS[@]}"; do
		[ "$m" != "$l" ] && alive "$m" && want=$((want + 1))
	done
	lsn=$(sql_on "host=127.0.0.1 port=$port user=postgres dbname=postgres" "SELECT pg_current_wal_lsn()") ||
		die "cannot read the WAL position of the leader $l"
	while :; do
		n=$(sql_on "host=127.0.0.1 port=$port user=postgres dbname=postgres" \
			"SELECT count(*) FROM pg_stat_replication WHERE replay_lsn >= '$lsn'" || true)
		[ "${n:-0}" -ge "$want" ] && return 0
		[ $SECONDS -lt $deadline ] || die "the replicas did not replay $lsn within $HEALTHY_WAIT s"
		sleep 0.1
	done
}

case "$cmd" in
start)
	do_start
	;;
stop)
	check_ours
	[ -d "$dir" ] || exit 0
	stop_all
	rm -rf -- "$dir" || die "could not remove '$dir'"
	;;
switchover)
	do_switchover
	;;
kill-primary)
	do_kill_primary
	;;
heal)
	do_heal
	;;
catch-up)
	do_catch_up
	;;
primary)
	leader_name || die "no single leader"
	;;
conninfo)
	load_ports
	case "$opt" in
	"")
		multi_host_conninfo
		proxy_conninfo
		;;
	--multi-host) multi_host_conninfo ;;
	--proxy) proxy_conninfo ;;
	*) usage ;;
	esac
	;;
status)
	load_ports
	as_owner patronictl -c "$dir/m1/patroni.yml" list || true
	why=$(healthy -v) || die "not healthy: $why"
	echo "healthy"
	;;
*)
	usage
	;;
esac
