#!/usr/bin/env bash
# Checks of the operations files, run by scripts/test.sh (one step, a few seconds):
#   deploy/prometheus  promtool: both scrape configs, the alert rules, their unit tests
#   deploy/grafana     every dashboard query parses (promtool) and reads exported metrics
#   deploy/k8s         every manifest against the Kubernetes schemas, no unknown field
#   deploy/haproxy     the example load balancer configuration parses (haproxy -c)
# The same metric and manifest checks, with the cases that must fail, are vitest unit tests
# (deploy/checks/*.test.ts). Installs promtool (Debian package prometheus) and haproxy when missing.
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

# Debian installs haproxy in /usr/sbin. Its addresses are environment variables: sample ones here.
PATH="$PATH:/usr/sbin:/sbin"
ensure_apt_tool haproxy haproxy
run env HAPROXY_BIND=:8080 HAPROXY_STATS_BIND=127.0.0.1:8404 GATEWAY_1=10.0.0.11:3000 GATEWAY_2=10.0.0.12:3000 GATEWAY_3=10.0.0.13:3000 \
  GATEWAY_1_OPS_PORT=3100 GATEWAY_2_OPS_PORT=3100 GATEWAY_3_OPS_PORT=3100 haproxy -c -f deploy/haproxy/haproxy.cfg
echo "haproxy: deploy/haproxy/haproxy.cfg is valid ($(haproxy -v | awk 'NR==1 {print $3}'))"
