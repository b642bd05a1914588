#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for tests and demos.
#
#   scripts/pg-cluster.sh start  DIR [--tcp ADDR/PREFIX | --faketime]
#                                      (re)create a cluster in DIR and start it
#   scripts/pg-cluster.sh stop   DIR   stop it (if running) and remove DIR
#   scripts/pg-cluster.sh status DIR   pg_ctl status; exit 0 if running
#
# Layout: DIR/data is the data directory, DIR/log the server log, and DIR itself
# the Unix socket directory (DIR/.s.PGSQL.5432). No TCP (listen_addresses=''),
# so port 5432 only names the socket file and never clashes with a system
# cluster. Authentication is trust; the superuser is "postgres". Durability is
# off (fsync, synchronous_commit, full_page_writes): the data is disposable.
#
# --tcp ADDR/PREFIX also listens on ADDR, port 5432, and trusts every client of
# the network ADDR/PREFIX. Only for a network that nothing else can reach: the
# multi-host test starts the server inside a network namespace it made itself.
#
# --faketime runs the server under libfaketime, its clock offset read from the
# file DIR/faketime (created holding "+0"; write e.g. "+300" into it to move
# the server's clock five minutes ahead, read within a second). Monotonic time
# is left alone, so timeouts are not fired by the jump. For tests of what a
# database-clock jump means (every scheduler down for five minutes).
#
# initdb refuses to run as root, so as root the server runs as the unprivileged
# user "postgres" and DIR is owned by it (mode 700; root can still connect).
# Keep DIR out of the source tree: a checkout under /root is not traversable by
# that user. DIR is marked with a .cbatch-pg-cluster file, and only such a DIR
# (or an empty or missing one) is ever wiped.
#
# On start, prints the conninfo: host=DIR port=5432 user=postgres dbname=postgres
set -euo pipefail

PORT=5432
MARKER=.cbatch-pg-cluster

die() {
	echo "pg-cluster: $*" >&2
	exit 1
}

usage() {
	echo "usage: $0 start DIR [--tcp ADDR/PREFIX | --faketime] | stop DIR | status DIR" >&2
	exit 2
}

[ $# -ge 2 ] && [ $# -le 4 ] || usage
cmd=$1
dir=$2
tcp_addr=
tcp_net=
faketime=
if [ $# -eq 3 ]; then
	[ "$cmd" = start ] && [ "$3" = --faketime ] || usage
	faketime=1
elif [ $# -eq 4 ]; then
	if [ "$cmd" != start ] || [ "$3" != --tcp ]; then
		usage
	fi
	# An IPv4 address with its prefix length, nothing that could smuggle a setting in.
	[[ "$4" =~ ^([0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3})/([0-9]{1,2})$ ]] ||
		die "--tcp '$4' is not ADDR/PREFIX (IPv4, e.g. 10.0.0.1/24)"
	tcp_addr=${BASH_REMATCH[1]}
	tcp_net=$4
fi

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
# sun_path holds 107 bytes plus the NUL.
sock="$dir/.s.PGSQL.$PORT"
[ ${#sock} -le 107 ] || die "socket path '$sock' is longer than 107 bytes; choose a shorter DIR"

find_bindir() {
	local d
	d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
	if [ -n "$d" ] && [ -x "$d/initdb" ]; then
		echo "$d"
		return
	fi
	if command -v pg_config >/dev/null 2>&1; then
		d=$(pg_config --bindir)
		if [ -x "$d/initdb" ]; then
			echo "$d"
			return
		fi
	fi
	if command -v initdb >/dev/null 2>&1; then
		dirname "$(command -v initdb)"
		return
	fi
	return 1
}

bindir=$(find_bindir) ||
	die "PostgreSQL server binaries (initdb, pg_ctl, postgres) not found in /usr/lib/postgresql/*/bin, pg_config --bindir or PATH; run scripts/install-deps.sh (Debian: apt-get install postgresql-15)"
for b in initdb pg_ctl postgres; do
	[ -x "$bindir/$b" ] || die "$bindir/$b is missing or not executable"
done

# Run a server binary as the cluster's owner. From /, so that a working
# directory the postgres user cannot enter (e.g. under /root) does not matter.
if [ "$(id -u)" -eq 0 ]; then
	id -u postgres >/dev/null 2>&1 ||
		die "running as root needs the unprivileged user 'postgres' (created by the postgresql package)"
	command -v runuser >/dev/null 2>&1 || die "running as root needs runuser (util-linux)"
	as_owner() { (cd / && runuser -u postgres -- "$@"); }
	owner=postgres
else
	as_owner() { (cd / && "$@"); }
	owner=$(id -un)
fi

# Not ours to wipe: a non-empty directory without our marker.
check_ours() {
	if [ -d "$dir" ] && [ ! -e "$dir/$MARKER" ] && [ -n "$(ls -A -- "$dir" 2>/dev/null)" ]; then
		die "'$dir' is not empty and was not made by pg-cluster.sh (no $MARKER); refusing to touch it"
	fi
	if [ -e "$dir" ] && [ ! -d "$dir" ]; then
		die "'$dir' exists and is not a directory"
	fi
}

# Is the postmaster of DIR alive? A crashed one (gone, or a zombie nobody has
# reaped yet) is not, though pg_ctl status would still believe it.
postmaster_alive() {
	local pid state
	[ -r "$dir/data/postmaster.pid" ] || return 1
	pid=$(head -n 1 "$dir/data/postmaster.pid" 2>/dev/null) || return 1
	[[ "$pid" =~ ^[0-9]+$ ]] || return 1
	[ -r "/proc/$pid/stat" ] || return 1
	state=$(sed -n 's/^[0-9]* (.*) \([A-Za-z]\) .*/\1/p' "/proc/$pid/stat" 2>/dev/null) || return 1
	[ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}

stop_server() {
	postmaster_alive || return 0
	as_owner "$bindir/pg_ctl" stop -D "$dir/data" -m fast -w -t 60 >/dev/null 2>&1 && return 0
	as_owner "$bindir/pg_ctl" stop -D "$dir/data" -m immediate -w -t 30 >/dev/null 2>&1 && return 0
	postmaster_alive && die "could not stop the server in $dir/data (see $dir/log)"
	return 0
}

wipe() {
	rm -rf -- "$dir" || die "could not remove '$dir' (made by another user?)"
}

# PostgreSQL's own (env) settings must not leak into initdb or pg_ctl.
unset PGDATA PGHOST PGHOSTADDR PGPORT PGUSER PGDATABASE PGOPTIONS PGSERVICE PGPASSWORD

case "$cmd" in
start)
	check_ours
	stop_server
	wipe
	(umask 077 && mkdir -p -- "$dir")
	touch "$dir/$MARKER"
	chmod 700 "$dir"
	if [ "$owner" = postgres ] && [ "$(id -u)" -eq 0 ]; then
		chown -R postgres: "$dir"
	fi
	if ! as_owner "$bindir/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 \
		--locale=C --no-sync >"$dir/initdb.log" 2>&1; then
		cat "$dir/initdb.log" >&2
		die "initdb failed (log above, also in $dir/initdb.log)"
	fi
	cat >>"$dir/data/postgresql.conf" <<CONF

# scripts/pg-cluster.sh: a disposable test cluster
listen_addresses = '$tcp_addr'
port = $PORT
unix_socket_directories = '$dir'
unix_socket_permissions = 0777
max_connections = 200
shared_buffers = 128MB
fsync = off
synchronous_commit = off
full_page_writes = off
log_min_messages = warning
log_line_prefix = '%m [%p] %d '
CONF
	if [ -n "$tcp_net" ]; then
		# initdb's own lines cover only the Unix socket and loopback.
		echo "host all all $tcp_net trust" >>"$dir/data/pg_hba.conf"
	fi
	preload=()
	if [ -n "$faketime" ]; then
		lib=$(compgen -G '/usr/lib/*/faketime/libfaketime.so.1' | head -n 1 || true)
		[ -n "$lib" ] || die "--faketime needs libfaketime (Debian: apt-get install faketime)"
		echo "+0" >"$dir/faketime"
		[ "$owner" = postgres ] && [ "$(id -u)" -eq 0 ] && chown postgres: "$dir/faketime"
		preload=(env "LD_PRELOAD=$lib" "FAKETIME_TIMESTAMP_FILE=$dir/faketime"
			FAKETIME_CACHE_DURATION=1 FAKETIME_DONT_FAKE_MONOTONIC=1)
	fi
	if ! as_owner "${preload[@]}" "$bindir/pg_ctl" start -D "$dir/data" -l "$dir/log" -w -t 60 >/dev/null; then
		[ -f "$dir/log" ] && tail -n 30 "$dir/log" >&2
		die "the server did not start (log above, also in $dir/log)"
	fi
	echo "host=$dir port=$PORT user=postgres dbname=postgres"
	;;
stop)
	check_ours
	[ -d "$dir" ] || exit 0
	stop_server
	wipe
	;;
status)
	[ -f "$dir/data/PG_VERSION" ] || {
		echo "pg-cluster: no cluster in $dir"
		exit 3
	}
	as_owner "$bindir/pg_ctl" status -D "$dir/data"
	;;
*)
	usage
	;;
esac
