#!/usr/bin/env bash
# The Debian package, installed for real (issue 29, item 5): cpack -G DEB from
# the build tree, dpkg -i, the admin CLI on PATH, a program compiled with
# pkg-config against the installed headers and library and run, the systemd
# units checked by systemd-analyze verify, the wrapper they start, the system
# user, serve run as that user with the package's admin token (and refusing
# it once its mode lets others read it), then dpkg -r (the
# conffile stays) and dpkg -P (nothing stays but the system user).
#   deb.sh BUILD_DIR SOURCE_DIR SCRATCH_DIR
# It installs into / and so needs root and dpkg; without them, or when a
# cbatch package is already installed (someone's own), it says why and exits
# 77 (skipped). Whatever fails, the package is purged again (trap).
set -euo pipefail
build=$1 src=$2 scratch=$3

skip() {
	echo "SKIPPED: $*"
	exit 77
}
[ "$(id -u)" -eq 0 ] || skip "needs root: it installs the package with dpkg into /"
for t in dpkg dpkg-deb dpkg-shlibdeps cpack pkg-config cc curl runuser setpriv; do
	command -v "$t" >/dev/null 2>&1 || skip "no $t (Debian's dpkg-dev, cmake, pkg-config, gcc)"
done
command -v systemd-analyze >/dev/null 2>&1 ||
	skip "no systemd-analyze (apt-get install systemd) to verify the units with"
# A package this test installed and could not purge (it was killed) carries
# the marker; any other is someone's own and is left alone.
marker=/var/tmp/cbatch-package-test.installed
installed() {
	local st
	st=$(dpkg-query -W -f '${Status}' cbatch 2>/dev/null) || return 1
	[ -n "$st" ] && [ "${st%not-installed}" = "$st" ]
}
if installed; then
	[ -e "$marker" ] ||
		skip "a cbatch package is installed already ($(dpkg-query -W -f '${Version} ${Status}' cbatch)): not replaced by a test"
	dpkg -P cbatch >/dev/null
fi

fail() {
	echo "deb: FAILED: $*" >&2
	exit 1
}
pgdir=/tmp/cbatch-deb-$$
serve_pid=
cleanup() {
	[ -z "$serve_pid" ] || kill -KILL "$serve_pid" 2>/dev/null || true
	"$src/scripts/pg-cluster.sh" stop "$pgdir" >/dev/null 2>&1 || true
	if installed; then
		dpkg -P cbatch >/dev/null 2>&1 || echo "deb: warning: dpkg -P cbatch failed" >&2
	fi
	installed || rm -f "$marker"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

rm -rf "$scratch" && mkdir -p "$scratch"
(cd "$build" && cpack -G DEB -B "$scratch/cpack" >"$scratch/cpack.log" 2>&1) ||
	{ cat "$scratch/cpack.log" >&2; fail "cpack -G DEB"; }
deb=$(ls "$scratch"/cpack/cbatch_*.deb)
version=$(sed -n 's/^Version: //p' "$build/cbatch.pc")

# What the package holds.
dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's|^\./|/|' >"$scratch/contents"
for f in /usr/bin/cbatch /usr/include/cbatch.h /usr/include/cbatch/job.h \
	/usr/include/cbatch/version.h /usr/lib/libcbatch.so.0 /usr/lib/pkgconfig/cbatch.pc \
	/usr/lib/cmake/cbatch/cbatchConfig.cmake /usr/lib/systemd/system/cbatch-worker@.service \
	/usr/lib/systemd/system/cbatch-scheduler.service /usr/lib/systemd/system/cbatch-serve.service \
	/usr/lib/sysusers.d/cbatch.conf /usr/libexec/cbatch/cbatch-exec /etc/cbatch/cbatch.env \
	/usr/share/doc/cbatch/deploying.md; do
	grep -qxF "$f" "$scratch/contents" || fail "the package lacks $f"
done
# Man pages and completion, where the build makes them (counted, reported).
man=$(grep -cE '^/usr/share/man/man[0-9]/[^/]+$' "$scratch/contents" || true)
completion=$(grep -cE '^/usr/share/bash-completion/completions/[^/]+$' "$scratch/contents" || true)
grep -q 'libpq5' <<<"$(dpkg-deb -f "$deb" Depends)" || fail "Depends lacks libpq5: $(dpkg-deb -f "$deb" Depends)"
grep -qxF /etc/cbatch/cbatch.env <<<"$(dpkg-deb -I "$deb" conffiles)" || fail "cbatch.env is no conffile"

touch "$marker"
dpkg -i "$deb" >"$scratch/dpkg-i.log" 2>&1 || { cat "$scratch/dpkg-i.log" >&2; fail "dpkg -i"; }

# The admin CLI, from the system's PATH (not one in /usr/local, say).
[ "$(PATH=/usr/bin:/bin command -v cbatch)" = /usr/bin/cbatch ] || fail "no cbatch in /usr/bin"
out=$(PATH=/usr/bin:/bin cbatch --version)
case $out in "cbatch $version "*) ;; *) fail "cbatch --version: '$out', expected version $version" ;; esac

# A program built against the installed package only: pkg-config's default
# search path, /usr/include, /usr/lib, no LD_LIBRARY_PATH.
[ "$(env -u PKG_CONFIG_PATH pkg-config --modversion cbatch)" = "$version" ] ||
	fail "pkg-config --modversion cbatch"
# shellcheck disable=SC2046
env -u PKG_CONFIG_PATH cc -o "$scratch/consumer" "$src/tests/package/consumer.c" \
	-DCONSUMER_PACKAGE_VERSION="\"$version\"" $(env -u PKG_CONFIG_PATH pkg-config --cflags --libs cbatch)
# (ldd may name it /lib/..., the same file on a merged /usr.)
lib=$(ldd "$scratch/consumer" | sed -n 's/^[[:space:]]*libcbatch\.so\.0 => \([^ ]*\) .*/\1/p')
[ -n "$lib" ] && [ "$(readlink -f "$lib")" = "$(readlink -f /usr/lib/libcbatch.so.0)" ] ||
	fail "the consumer's libcbatch is not the package's: $(ldd "$scratch/consumer" | grep cbatch)"
env -u LD_LIBRARY_PATH "$scratch/consumer"

# The units, as systemd reads them (the wrapper they name exists, their
# settings parse; the worker template is checked as an instance).
units=/usr/lib/systemd/system
systemd-analyze verify --man=no "$units/cbatch-scheduler.service" "$units/cbatch-serve.service" \
	"$units/cbatch-worker@.service" >"$scratch/verify.log" 2>&1 ||
	{ cat "$scratch/verify.log" >&2; fail "systemd-analyze verify"; }
if [ -s "$scratch/verify.log" ]; then
	cat "$scratch/verify.log" >&2
	fail "systemd-analyze verify printed warnings"
fi
for u in cbatch-worker@.service cbatch-scheduler.service cbatch-serve.service; do
	for want in 'User=cbatch' 'EnvironmentFile=/etc/cbatch/cbatch.env' 'Restart=on-failure' \
		'KillSignal=SIGTERM' 'ExecStart=/usr/libexec/cbatch/cbatch-exec '; do
		grep -q "^$want" "$units/$u" || fail "$u lacks $want"
	done
done
grep -q '^KillMode=mixed' "$units/cbatch-scheduler.service" ||
	fail "the scheduler's jobs would be signalled by systemd, not by their node"

# The system user, and what serve demands of the admin token file.
getent passwd cbatch >/dev/null || fail "no system user cbatch"
uid=$(id -u cbatch)
[ "$uid" -lt 1000 ] || fail "cbatch is no system user (uid $uid)"
[ "$(stat -c '%U:%G %a' /etc/cbatch/cbatch.env)" = "root:cbatch 640" ] ||
	fail "cbatch.env: $(stat -c '%U:%G %a' /etc/cbatch/cbatch.env), expected root:cbatch 640"
[ "$(stat -c '%U:%G %a' /etc/cbatch/admin-token)" = "cbatch:cbatch 600" ] ||
	fail "admin-token: $(stat -c '%U:%G %a' /etc/cbatch/admin-token), expected cbatch:cbatch 600"
grep -qE '^[0-9a-f]{48}$' /etc/cbatch/admin-token || fail "admin-token holds no 48-hex token"
token=$(cat /etc/cbatch/admin-token)

# The wrapper, run as the units run it: as cbatch, with the configuration's
# variables. Without CBATCH_PROGRAM it refuses (78, not restarted)...
rc=0
runuser -u cbatch -- env -i PATH=/usr/bin:/bin /usr/libexec/cbatch/cbatch-exec worker \
	>"$scratch/exec.out" 2>&1 || rc=$?
[ $rc -eq 78 ] || fail "cbatch-exec without CBATCH_PROGRAM: exit $rc ($(cat "$scratch/exec.out"))"
# ... and with one it runs it: serve as cbatch, on a repository of its own
# (a throwaway cluster whose socket cbatch may reach), with the package's
# token file, which it refuses of any other owner or mode: an action with the
# token gets past the check (404 for a schedule that does not exist), one
# without is 401; SIGTERM ends it cleanly (exit 0), as the unit stops it.
"$src/scripts/pg-cluster.sh" start "$pgdir" >/dev/null
chmod 711 "$pgdir" # reach the socket (0777) as cbatch, list nothing
conninfo="host=$pgdir port=5432 user=postgres dbname=postgres"
cbatch --db "$conninfo" schema init >/dev/null
# setpriv execs (runuser would stand between the signal and serve).
as_cbatch() {
	exec setpriv --reuid=cbatch --regid=cbatch --init-groups -- env -i PATH=/usr/bin:/bin CBATCH_PROGRAM=/usr/bin/cbatch \
		CBATCH_DB="$conninfo" /usr/libexec/cbatch/cbatch-exec "$@"
}
# The log exists before serve does: the loop may read it before the
# background shell has opened it (seen on a loaded machine).
: >"$scratch/serve.log"
(as_cbatch serve --listen 127.0.0.1:0 --admin-token-file /etc/cbatch/admin-token \
	>>"$scratch/serve.log" 2>&1) &
serve_pid=$!
port=
for _ in $(seq 1 600); do
	port=$(sed -n 's|^serve: listening on http://127\.0\.0\.1:\([0-9]*\) .*|\1|p' "$scratch/serve.log")
	[ -n "$port" ] && break
	kill -0 "$serve_pid" 2>/dev/null || fail "serve (as cbatch) exited: $(cat "$scratch/serve.log")"
	sleep 0.1
done
[ -n "$port" ] || fail "serve did not listen within 60 s: $(cat "$scratch/serve.log")"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $token" \
	"http://127.0.0.1:$port/api/v1/schedules/no-such-schedule/pause")
[ "$code" = 404 ] || fail "an action with the package's token: HTTP $code, expected 404"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST \
	"http://127.0.0.1:$port/api/v1/schedules/no-such-schedule/pause")
[ "$code" = 401 ] || fail "an action without the token: HTTP $code, expected 401"
kill -TERM "$serve_pid"
rc=0
wait "$serve_pid" || rc=$?
serve_pid=
[ $rc -eq 0 ] || fail "serve ended with $rc on SIGTERM: $(cat "$scratch/serve.log")"
chmod 0640 /etc/cbatch/admin-token
rc=0
(as_cbatch serve --listen 127.0.0.1:0 --admin-token-file /etc/cbatch/admin-token \
	>"$scratch/serve-bad.log" 2>&1) || rc=$?
[ $rc -ne 0 ] && grep -q 'admin token file .* is readable by group or others' "$scratch/serve-bad.log" ||
	fail "serve took a token file of mode 0640 (exit $rc): $(cat "$scratch/serve-bad.log")"
chmod 0600 /etc/cbatch/admin-token

# Upgrade in place (the same version again): the token is kept.
dpkg -i "$deb" >"$scratch/dpkg-i2.log" 2>&1 || { cat "$scratch/dpkg-i2.log" >&2; fail "dpkg -i again"; }
[ "$(cat /etc/cbatch/admin-token)" = "$token" ] || fail "reinstalling replaced the admin token"

# Remove: the files go, the configuration stays.
dpkg -r cbatch >"$scratch/dpkg-r.log" 2>&1 || { cat "$scratch/dpkg-r.log" >&2; fail "dpkg -r"; }
[ "$(dpkg-query -W -f '${Status}' cbatch)" = "deinstall ok config-files" ] ||
	fail "after dpkg -r: $(dpkg-query -W -f '${Status}' cbatch)"
while read -r f; do
	case $f in
	/etc/* | */) continue ;;
	esac
	[ ! -e "$f" ] && [ ! -L "$f" ] || fail "dpkg -r left $f"
done <"$scratch/contents"
[ -f /etc/cbatch/cbatch.env ] || fail "dpkg -r removed the conffile"
[ -f /etc/cbatch/admin-token ] || fail "dpkg -r removed the admin token"

# Purge: nothing of it stays; the system user does (postrm says why).
dpkg -P cbatch >"$scratch/dpkg-p.log" 2>&1 || { cat "$scratch/dpkg-p.log" >&2; fail "dpkg -P"; }
if installed; then
	fail "after dpkg -P: $(dpkg-query -W -f '${Status}' cbatch)"
fi
[ ! -e /etc/cbatch ] || fail "dpkg -P left /etc/cbatch: $(ls -la /etc/cbatch)"
getent passwd cbatch >/dev/null || fail "dpkg -P removed the system user"

echo "deb: cbatch $version installed, used, verified and purged" \
	"($man man pages, $completion completion files in the package)"
