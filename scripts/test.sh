#!/usr/bin/env bash
# The one test command (`npm test`, and what .ci/run calls): installs what is missing, starts
# the local stack of real servers, then lint, typecheck, unit, integration, abuse, browser and chaos tests.
set -euo pipefail
# A failed install says to run this again (scripts/lib.sh; exported for the scripts it calls).
export RETRY_COMMAND="${RETRY_COMMAND:-npm test}"
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

started=$SECONDS
results="$STACK_DIR/test-results"
mkdir -p "$results"
rm -f "$results"/*.json

ensure_node_modules

step "local stack (Kafka, ClickHouse, Redis)"
bash scripts/stack.sh up

step "secure Kafka broker beside it (TLS, SASL, ACLs; docs/security.md)"
STACK_KAFKA_SECURITY=sasl_ssl bash scripts/stack.sh up
export KAFKA_SECURE_ENV_DIR="$STACK_DIR/kafka-secure/env"

# Early, while nothing else of npm test runs: these check the broker's readiness budget.
step "stack script tests (a first run: an empty Maven cache, a fetch slower than the broker's budget, a fetch that fails)"
npx vitest run --project stack --reporter=default --reporter=json --outputFile.json="$results/stack.json"

step "lint (eslint) and formatting (prettier)"
npx eslint .
npx prettier --check .

step "typecheck (tsc --noEmit)"
npx tsc -p tsconfig.json --noEmit
npx tsc -p services/gateway/web/tsconfig.json

step "production build (esbuild bundles), and each bundle starts"
npm run --silent build
bash scripts/check-bundles.sh

step "docker-compose.yml is valid (docker-compose config)"
ensure_apt_tool docker-compose docker-compose
ADMIN_TOKEN=compose-check REDIS_PASSWORD=compose-check docker-compose -f docker-compose.yml config -q

step "Prometheus alerts, Grafana dashboards, Kubernetes manifests (promtool, schemas)"
ensure_apt_tool promtool prometheus
bash scripts/ops/check.sh

step "unit tests"
npx vitest run --project unit --reporter=default --reporter=json --outputFile.json="$results/unit.json"

step "integration tests (real Kafka, ClickHouse, Redis)"
npx vitest run --project integration --reporter=default --reporter=json --outputFile.json="$results/integration.json"

step "secure tests (the services over SASL_SSL, each with its own principal and ACLs)"
npx vitest run --project secure --reporter=default --reporter=json --outputFile.json="$results/secure.json"

step "abuse tests (docs/limits.md: every limit attacked while a second tenant's traffic is measured)"
npx vitest run --project abuse --reporter=default --reporter=json --outputFile.json="$results/abuse.json"

step "browser tests (dashboard in headless Chromium, real servers)"
ensure_apt_tool chromium chromium
npx vitest run --project browser --reporter=default --reporter=json --outputFile.json="$results/browser.json"

step "API fuzzing (schemathesis, from /v1/openapi.json and the admin listener's /admin/v1/openapi.json)"
bash scripts/fuzz/run.sh

step "Prometheus against the running services: every target scraped, induced faults fire the real alerts"
bash scripts/ops/prometheus-live.sh

# Alone, after everything else: these kill processors with SIGKILL and stop the shared servers.
step "chaos tests (guarantees under SIGKILL, rebalancing and server outages)"
npx vitest run --project chaos --reporter=default --reporter=json --outputFile.json="$results/chaos.json"

# One closing line that any CI reader understands, summed over all projects; it must stay the
# last line printed.
ELAPSED=$((SECONDS - started)) node -e '
  const fs = require("node:fs");
  let passed = 0, failed = 0, skipped = 0;
  for (const f of process.argv.slice(1)) {
    const r = JSON.parse(fs.readFileSync(f, "utf8"));
    passed += r.numPassedTests; failed += r.numFailedTests; skipped += r.numPendingTests + r.numTodoTests;
  }
  console.log(`\nall checks passed in ${process.env.ELAPSED}s`);
  console.log(`tests: ${passed} passed, ${failed} failed, ${skipped} skipped`);
' "$results/stack.json" "$results/unit.json" "$results/integration.json" "$results/secure.json" "$results/abuse.json" "$results/browser.json" "$results/chaos.json"
