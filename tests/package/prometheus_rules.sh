#!/usr/bin/env bash
# The Prometheus rules of deploy/prometheus (issue 29, item 6): promtool
# accepts them (check rules), its unit tests of them pass (test rules), and
# every cbatch series they read is one that `metrics` prints (named in
# repository/metrics.c), so that renaming a series cannot leave an alert that
# never fires. Without promtool it says how to get it and exits 77 (skipped).
#   prometheus_rules.sh SOURCE_DIR
set -euo pipefail
src=$1
dir=$src/deploy/prometheus
if ! command -v promtool >/dev/null 2>&1; then
	echo "SKIPPED: no promtool (apt-get install prometheus, or bash scripts/install-deps.sh)"
	exit 77
fi
promtool check rules "$dir/cbatch-rules.yml"
promtool check config --syntax-only "$dir/prometheus.yml" >/dev/null
(cd "$dir" && promtool test rules cbatch-rules.test.yml)
names=$(grep -v '^[[:space:]]*#' "$dir/cbatch-rules.yml" | grep -oE '\bcbatch_[a-z_]+' | sort -u)
[ -n "$names" ] || { echo "no cbatch series in the rules" >&2; exit 1; }
for n in $names; do
	grep -q "'$n'" "$src/repository/metrics.c" ||
		{ echo "the rules read $n, which metrics does not print" >&2; exit 1; }
done
echo "prometheus rules: checked, tested, and read only series that exist: ${names//$'\n'/ }"
