#!/usr/bin/env bash
# Prove the test suite stable under load: N consecutive CI runs, each from a
# fresh clone of the current commit, while stress-ng keeps every core busy.
#
#   bash scripts/stress-ci.sh [--cpu N] [--test-sh] [--keep] [--logs DIR] RUNS [-- CTEST-ARGS...]
#
#   RUNS          how many runs, one after the other (each a fresh clone)
#   --cpu N       stress-ng CPU workers at 100 % load (default: every core, nproc)
#   --test-sh     run `bash scripts/test.sh` (normal build only) instead of the
#                 whole `.ci/run` (normal and sanitizer builds, memcheck, fuzz)
#   --keep        keep each run's clone (default: removed after a passing run;
#                 a failing run's clone is always kept, with its build trees)
#   --logs DIR    where the logs go (default: a new directory under $TMPDIR)
#   -- ARGS       with --test-sh only: passed to ctest, e.g. -- -R integration.schedule
#
# It stops at the first failing run and prints one line per run (PASS/FAIL,
# exit status, wall time, ctest's count, its log), then the failed tests of a
# failing one. Exit status: 0 if every run passed, 1 at the first failure,
# 2 on bad usage or when stress-ng is missing and cannot be installed.
# Only committed work is tested: the clone is of HEAD (the script says so when
# the tree has changes). stress-ng is stopped on every exit, Ctrl-C included.
# A full `.ci/run` takes 26-33 minutes on two busy cores: N=5 is 2 h 15 min to 2 h 45 min.
# Debian's stress-ng package is installed with apt-get when run as root (as
# scripts/install-deps.sh does for the rest); otherwise the command is printed.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cpu=$(nproc 2>/dev/null || echo 2)
mode=ci
keep=0
logs=
runs=
ctest_args=()

usage() { sed -n '2,25p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
die() {
	echo "stress-ci: $*" >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case "$1" in
	--cpu)
		[ $# -ge 2 ] || die "--cpu needs a number"
		cpu=$2
		shift
		;;
	--test-sh) mode="test" ;;
	--keep) keep=1 ;;
	--logs)
		[ $# -ge 2 ] || die "--logs needs a directory"
		logs=$2
		shift
		;;
	-h | --help)
		usage
		exit 0
		;;
	--)
		shift
		ctest_args=("$@")
		break
		;;
	-*) die "unknown option '$1' (try --help)" ;;
	*)
		[ -z "$runs" ] || die "one RUNS only (try --help)"
		runs=$1
		;;
	esac
	shift
done
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || die "RUNS must be a positive number (try --help)"
[[ "$cpu" =~ ^[1-9][0-9]*$ ]] || die "--cpu must be a positive number"
if [ ${#ctest_args[@]} -gt 0 ] && [ $mode != test ]; then
	die "ctest arguments go with --test-sh only (.ci/run runs every test)"
fi

if ! command -v stress-ng >/dev/null 2>&1; then
	if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
		echo "stress-ci: installing stress-ng" >&2
		DEBIAN_FRONTEND=noninteractive apt-get install -y stress-ng >&2 ||
			{ apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y stress-ng >&2; } ||
			die "could not install stress-ng"
	else
		die "stress-ng is missing; install it with: sudo apt-get install stress-ng"
	fi
fi

head=$(git -C "$root" rev-parse HEAD)
if [ -n "$(git -C "$root" status --porcelain --untracked-files=no)" ]; then
	echo "stress-ci: note: the tree has uncommitted changes; only HEAD ($head) is tested" >&2
fi
[ -n "$logs" ] || logs=$(mktemp -d "${TMPDIR:-/tmp}/cbatch-stress-ci.XXXXXX")
mkdir -p "$logs"
logs=$(cd "$logs" && pwd)

stress_pid=
run_pid=
# Each run is a session of its own (setsid), so that an interrupted one is
# ended whole: its ctest, test programs, PostgreSQL cluster and children.
stop_all() {
	if [ -n "$run_pid" ] && kill -0 "$run_pid" 2>/dev/null; then
		kill -TERM -- "-$run_pid" 2>/dev/null || kill -TERM "$run_pid" 2>/dev/null || true
		wait "$run_pid" 2>/dev/null || true
		echo "stress-ci: the run in progress was stopped" >&2
	fi
	run_pid=
	if [ -n "$stress_pid" ] && kill -0 "$stress_pid" 2>/dev/null; then
		kill -TERM "$stress_pid" 2>/dev/null || true
		wait "$stress_pid" 2>/dev/null || true
		echo "stress-ci: stress-ng stopped" >&2
	fi
	stress_pid=
}
trap stop_all EXIT
trap 'echo "stress-ci: interrupted" >&2; exit 130' INT
trap 'echo "stress-ci: terminated" >&2; exit 143' TERM

stress-ng --cpu "$cpu" --cpu-load 100 --quiet >"$logs/stress-ng.log" 2>&1 &
stress_pid=$!
sleep 1
kill -0 "$stress_pid" 2>/dev/null || die "stress-ng did not start (see $logs/stress-ng.log)"
echo "stress-ci: commit $head, $runs run(s) of $([ $mode = ci ] && echo .ci/run || echo scripts/test.sh)" \
	"beside stress-ng --cpu $cpu --cpu-load 100 (pid $stress_pid); logs in $logs" >&2

summary=()
for ((i = 1; i <= runs; i++)); do
	clone=$logs/run-$i
	log=$logs/run-$i.log
	rm -rf "$clone"
	git clone -q --no-checkout "$root" "$clone"
	git -C "$clone" checkout -q --detach "$head"
	start=$(date +%s)
	status=0
	if [ $mode = ci ]; then
		cmd=(bash .ci/run)
	else
		cmd=(bash scripts/test.sh -- "${ctest_args[@]}")
	fi
	(cd "$clone" && exec setsid --wait "${cmd[@]}") >"$log" 2>&1 </dev/null &
	run_pid=$!
	wait "$run_pid" || status=$?
	run_pid=
	secs=$(($(date +%s) - start))
	count=$(grep -E '^ci: [0-9]+ passed|^[0-9]+% tests passed' "$log" | tail -1 || true)
	if [ $status -eq 0 ]; then
		line=$(printf 'run %d/%d: PASS  exit 0  %5ds  %s  %s' "$i" "$runs" "$secs" "${count:--}" "$log")
	else
		line=$(printf 'run %d/%d: FAIL  exit %d  %5ds  %s  %s' "$i" "$runs" "$status" "$secs" \
			"${count:--}" "$log")
	fi
	summary+=("$line")
	echo "stress-ci: $line" >&2
	if [ $status -ne 0 ]; then
		echo "stress-ci: failed tests of run $i (its clone and build trees kept in $clone):" >&2
		# ctest's list of failed tests; else (a build or setup failure) the log's end.
		grep -E '^[[:space:]]*[0-9]+ - .*\((Failed|Timeout|SEGFAULT|Subprocess aborted|Not Run)\)' \
			"$log" >&2 || tail -n 15 "$log" >&2 || true
		break
	fi
	[ $keep -eq 1 ] || rm -rf "$clone"
done

stop_all
echo "stress-ci: summary (commit $head, stress-ng --cpu $cpu):"
printf '  %s\n' "${summary[@]}"
for line in "${summary[@]}"; do
	case "$line" in *": FAIL "*) exit 1 ;; esac
done
exit 0
