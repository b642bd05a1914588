#!/usr/bin/env bash
# The full exactly-once torture run (the test suite runs a smoke version):
# up to 200 SIGKILLs of the ledger job over 200,000 rows, 50 zombie rounds, 100
# rounds of 8 racing launchers, 20 cut sessions, CSV import/export killed
# 50 times each, and 100 rounds of two overlapping sales_totals instances
# (accumulating upsert + strict transition) with one of them killed; then a
# summary table of rounds, faults, rows lost and rows
# duplicated (both must be 0). Then the partition proofs
# (tests/torture/partition_torture.c): the partitioned ledger over 1,000,000
# rows with 1, 2 and 4 threads and worker processes against the plain ledger,
# worker processes SIGKILLed 20 times, workers frozen past their lease and
# thawed (fenced), and four workers draining a 200,000-row outbox, one killed.
#
#   bash scripts/torture.sh [--sanitize] [--partitions]   (about 15-20 minutes)
#
# --partitions runs the partition proofs only (about 8-10 minutes).
# CBATCH_TORTURE_SEED=N repeats a run's random choices.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
args=()
tests='torture|pg\.'
for a in "$@"; do
	case "$a" in
	--sanitize) args=(--sanitize) ;;
	--partitions) tests='torture\.partitions|pg\.' ;;
	*)
		echo "torture.sh: unknown argument '$a' (--sanitize, --partitions)" >&2
		exit 2
		;;
	esac
done
CBATCH_TORTURE=full bash "$root/scripts/test.sh" "${args[@]}" -- -R "$tests" -V
