#!/usr/bin/env bash
# Checks of the operations files, run by scripts/test.sh (one step, a few seconds):
#   deploy/prometheus  promtool: both scrape configs, the alert rules, their unit tests
#   deploy/grafana     every dashboard query parses (promtool) and reads exported metrics
#   deploy/k8s         every manifest against the Kubernetes schemas, no unknown field
# The same metric and manifest checks, with the cases that must fail, are vitest unit tests
# (deploy/checks/*.test.ts). Installs promtool (Debian package prometheus) when missing.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
cd "$ROOT"

ensure_apt_tool promtool prometheus

# Quiet on success, everything on failure.
run() {
  local out
  if ! out=$("$@" 2>&1); then
    printf '%s\n' "$out"
    printf 'FAILED: %s\n' "$*"
    return 1
  fi
}

run promtool check config deploy/prometheus/prometheus.yml
run promtool check config deploy/prometheus/prometheus-kubernetes.yml
run promtool check rules deploy/prometheus/alerts.yml
run promtool test rules deploy/prometheus/tests/*.yml
echo "prometheus: scrape configs, alert rules and their unit tests pass (promtool $(promtool --version 2>&1 | awk 'NR==1 {print $3}'))"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
npx tsx deploy/checks/check-deploy.ts "$tmp/dashboard-queries.rules.yml"
run promtool check rules "$tmp/dashboard-queries.rules.yml"
echo "grafana: every dashboard query parses"
