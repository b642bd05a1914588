#!/usr/bin/env bash
# Install what building and testing cbatch needs (Debian/Ubuntu).
#
#   bash scripts/install-deps.sh
#
# Required: a C toolchain, CMake, pkg-config, the libpq, jansson, xxHash,
# libmicrohttpd (`serve`) and CUnit development packages, libcurl (the `serve`
# tests' HTTP client), faketime (the lock tests run a worker with its
# clock an hour off), pgbouncer (the lock tests put it in front of the test
# cluster, in transaction and session mode), prometheus (its promtool checks the metrics
# exposition and integration.prometheus scrapes `serve` with its server, which the test starts
# on a free loopback port with its own storage: the package's own service, if it starts, is
# never used), patroni, etcd-server, haproxy and curl (the `ha` label's highly available
# cluster, scripts/ha-cluster.sh: etcd, three Patroni members and HAProxy on loopback, started
# by the test itself; the packages' own services, if they start, are never used), groff-base
# (unit.docs reads the manual page the build writes for warnings), dpkg-dev and systemd (the
# Debian package: cpack's dpkg-shlibdeps, and package.deb's systemd-analyze verify of the
# units; no systemd needs to run), locales (integration.dbrestart makes a German locale with
# localedef for its server, whose refusals must be understood in any language), and a
# PostgreSQL server (the tests run their own throwaway cluster; see scripts/pg-cluster.sh). Optional: clang and clang-format (used by some
# checks: fuzzing, scripts/format-check.sh), and chromium, node and npm (the console's browser
# test, browser.dashboard, which skips without them); failing to install them is only a warning.
# The browser test's tools are looked for as commands (a node from elsewhere, with its own npm,
# will do).
#
# Installed packages are detected with dpkg, so a machine that has everything
# needs neither root nor network. As root, missing packages are installed with
# apt-get; as another user, the command to run is printed and the exit status
# is 1. Installing the server package may create and start a default cluster
# on port 5432; the tests never use it.
#
# CBATCH_APT_UPDATED=1 skips "apt-get update" (the caller has just run it).
set -euo pipefail

required=(build-essential cmake pkg-config libpq-dev libjansson-dev libxxhash-dev libcunit1-dev
	libmicrohttpd-dev libcurl4-openssl-dev faketime pgbouncer prometheus patroni etcd-server
	haproxy curl groff-base dpkg-dev systemd locales)
optional=(clang clang-format)

log() { echo "install-deps: $*" >&2; }

installed() {
	dpkg -s "$1" 2>/dev/null | grep -q '^Status: install ok installed'
}

# Any server package will do (postgresql-15, -16, ...): look for initdb.
have_server() {
	compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null
}

# Which server package to ask for: postgresql-15 on Debian 12, else the
# distribution's default major version through the "postgresql" metapackage.
server_package() {
	if apt-cache show postgresql-15 >/dev/null 2>&1; then
		echo postgresql-15
	else
		echo postgresql
	fi
}

if ! command -v dpkg >/dev/null 2>&1; then
	log "no dpkg: not a Debian-like system. Install by hand: a C compiler, cmake (>= 3.18),"
	log "pkg-config, libpq, jansson, libxxhash, libmicrohttpd, libcurl and CUnit with their headers and .pc files,"
	log "faketime, pgbouncer, Prometheus (promtool, prometheus), Patroni, etcd, HAProxy, curl, groff,"
	log "localedef with the glibc locale sources (Debian: locales)"
	log "and a PostgreSQL server (initdb, pg_ctl). Optional: clang."
	missing=0
	for t in cc cmake pkg-config faketime promtool prometheus patroni etcd haproxy curl groff; do
		command -v "$t" >/dev/null 2>&1 || { log "missing: $t"; missing=1; }
	done
	for m in libpq jansson libxxhash libmicrohttpd libcurl cunit; do
		pkg-config --exists "$m" 2>/dev/null || { log "missing: pkg-config module $m"; missing=1; }
	done
	command -v initdb >/dev/null 2>&1 || command -v pg_config >/dev/null 2>&1 ||
		{ log "missing: PostgreSQL server binaries"; missing=1; }
	exit $missing
fi

missing=()
for p in "${required[@]}"; do
	installed "$p" || missing+=("$p")
done
need_server=0
have_server || need_server=1
missing_opt=()
for p in "${optional[@]}"; do
	installed "$p" || missing_opt+=("$p")
done
command -v chromium >/dev/null 2>&1 || missing_opt+=(chromium)
command -v node >/dev/null 2>&1 || missing_opt+=(nodejs)
command -v npm >/dev/null 2>&1 || missing_opt+=(npm)

if [ ${#missing[@]} -eq 0 ] && [ $need_server -eq 0 ] && [ ${#missing_opt[@]} -eq 0 ]; then
	log "all dependencies are installed"
	exit 0
fi

apt_install=(env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends)

if [ "$(id -u)" -ne 0 ]; then
	if [ ${#missing[@]} -eq 0 ] && [ $need_server -eq 0 ]; then
		log "warning: optional test tools missing: ${missing_opt[*]} (some checks will be skipped)"
		log "to install them: sudo apt-get install -y --no-install-recommends ${missing_opt[*]}"
		exit 0
	fi
	pkgs=("${missing[@]}")
	[ $need_server -eq 1 ] && pkgs+=("$(server_package)")
	pkgs+=("${missing_opt[@]}")
	log "missing packages: ${pkgs[*]}"
	log "run as root:"
	echo "sudo apt-get update && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${pkgs[*]}"
	exit 1
fi

need_required=0
{ [ ${#missing[@]} -gt 0 ] || [ $need_server -eq 1 ]; } && need_required=1

if [ "${CBATCH_APT_UPDATED:-0}" != 1 ]; then
	log "apt-get update"
	if ! apt-get update </dev/null; then
		# Only fatal if something required is missing; stale lists may still do.
		[ $need_required -eq 1 ] && { log "apt-get update failed"; exit 1; }
		log "warning: apt-get update failed"
	fi
fi

if [ $need_required -eq 1 ]; then
	pkgs=("${missing[@]}")
	[ $need_server -eq 1 ] && pkgs+=("$(server_package)")
	log "installing: ${pkgs[*]}"
	"${apt_install[@]}" "${pkgs[@]}" </dev/null
	have_server || { log "a PostgreSQL server package was installed but no initdb was found"; exit 1; }
fi

for p in "${missing_opt[@]}"; do
	log "installing optional: $p"
	if ! "${apt_install[@]}" "$p" </dev/null; then
		log "warning: could not install optional package $p (some checks will be skipped)"
	fi
done
exit 0
