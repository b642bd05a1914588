#!/usr/bin/env bash
# A private PostgreSQL cluster for the benchmarks, with DEFAULT durability.
#
#   bench/pg-bench-cluster.sh start  DIR   (re)create a cluster in DIR and start it
#   bench/pg-bench-cluster.sh stop   DIR   stop it (if running) and remove DIR
#
# Same approach as scripts/pg-cluster.sh (initdb as the unprivileged user
# "postgres" via runuser when run as root, Unix socket in DIR, no TCP, trust
# auth), but unlike that test cluster it keeps PostgreSQL's defaults for
# everything that costs time: fsync, synchronous_commit, full_page_writes,
# wal_level, shared_buffers (128MB), max_wal_size, checkpoint_timeout.
# Only the socket, the port and logging are set (PG_BENCH_CONF: more lines for
# postgresql.conf, e.g. to load pg_stat_statements for a profile). DIR is marked with a
# .cbatch-bench-cluster file, and only such a DIR (or an empty or missing one)
# is ever wiped. On start, prints the conninfo.
set -euo pipefail

PORT=5432
MARKER=.cbatch-bench-cluster

die() {
	echo "pg-bench-cluster: $*" >&2
	exit 1
}

[ $# -eq 2 ] || {
	echo "usage: $0 start|stop DIR" >&2
	exit 2
}
cmd=$1
dir=$(realpath -m -- "$2")
case "$dir" in
/ | /tmp | /var | /var/tmp | /home | /root | /usr | /etc) die "refusing to use '$dir'" ;;
*[[:space:]\'\"\\]*) die "'$dir' must not contain spaces, quotes or backslashes" ;;
esac
[ ${#dir} -le 90 ] || die "'$dir' is too long for a Unix socket path"

bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
	bindir=$(pg_config --bindir 2>/dev/null || dirname "$(command -v initdb 2>/dev/null || echo /nonexistent/x)")
fi
for b in initdb pg_ctl postgres; do
	[ -x "$bindir/$b" ] || die "PostgreSQL server binaries not found (scripts/install-deps.sh installs them)"
done

if [ "$(id -u)" -eq 0 ]; then
	id -u postgres >/dev/null 2>&1 || die "running as root needs the user 'postgres'"
	as_owner() { (cd / && runuser -u postgres -- "$@"); }
	owner=postgres
else
	as_owner() { (cd / && "$@"); }
	owner=$(id -un)
fi

check_ours() {
	if [ -d "$dir" ] && [ ! -e "$dir/$MARKER" ] && [ -n "$(ls -A -- "$dir" 2>/dev/null)" ]; then
		die "'$dir' is not empty and was not made by this script (no $MARKER); refusing to touch it"
	fi
}

stop_server() {
	[ -f "$dir/data/postmaster.pid" ] || return 0
	as_owner "$bindir/pg_ctl" stop -D "$dir/data" -m fast -w -t 120 >/dev/null 2>&1 ||
		as_owner "$bindir/pg_ctl" stop -D "$dir/data" -m immediate -w -t 30 >/dev/null 2>&1 || true
}

unset PGDATA PGHOST PGHOSTADDR PGPORT PGUSER PGDATABASE PGOPTIONS PGSERVICE PGPASSWORD

case "$cmd" in
start)
	check_ours
	stop_server
	rm -rf -- "$dir"
	(umask 077 && mkdir -p -- "$dir")
	touch "$dir/$MARKER"
	chmod 700 "$dir"
	[ "$owner" = postgres ] && [ "$(id -u)" -eq 0 ] && chown -R postgres: "$dir"
	as_owner "$bindir/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --locale=C \
		>"$dir/initdb.log" 2>&1 || {
		cat "$dir/initdb.log" >&2
		die "initdb failed"
	}
	cat >>"$dir/data/postgresql.conf" <<CONF

# bench/pg-bench-cluster.sh: connection and logging only; durability and
# memory settings are PostgreSQL's defaults
listen_addresses = ''
port = $PORT
unix_socket_directories = '$dir'
log_min_messages = warning
log_line_prefix = '%m [%p] %d '
${PG_BENCH_CONF:-}
CONF
	as_owner "$bindir/pg_ctl" start -D "$dir/data" -l "$dir/log" -w -t 60 >/dev/null || {
		tail -n 30 "$dir/log" >&2 || true
		die "the server did not start"
	}
	echo "host=$dir port=$PORT user=postgres dbname=postgres"
	;;
stop)
	check_ours
	[ -d "$dir" ] || exit 0
	stop_server
	rm -rf -- "$dir"
	;;
*)
	die "unknown command '$cmd'"
	;;
esac
