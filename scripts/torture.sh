#!/usr/bin/env bash
# The full exactly-once torture run (the test suite runs a smoke version):
# up to 200 SIGKILLs of the ledger job over 200,000 rows, 50 zombie rounds, 100
# rounds of 8 racing launchers, 20 cut sessions, and CSV import/export killed
# 50 times each; then a summary table of rounds, faults, rows lost and rows
# duplicated (both must be 0).
#
#   bash scripts/torture.sh [--sanitize]     (takes about 6-10 minutes)
#
# CBATCH_TORTURE_SEED=N repeats a run's random choices.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
args=()
[ "${1:-}" = "--sanitize" ] && args=(--sanitize)
CBATCH_TORTURE=full bash "$root/scripts/test.sh" "${args[@]}" -- -R 'torture|pg\.' -V
