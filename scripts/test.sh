#!/usr/bin/env bash
# The one test command (`npm test`, and what .ci/run calls): installs what is missing, starts
# the local stack of real servers, then lint, typecheck, unit, integration, abuse, browser, chaos tests and the scale smoke.
# It closes with how long each step and each vitest project took (scripts/test/summary.ts), then
# the `tests: N passed, N failed, N skipped` line, which must stay the last line printed.
set -euo pipefail
# A failed install says to run this again (scripts/lib.sh; exported for the scripts it calls).
export RETRY_COMMAND="${RETRY_COMMAND:-npm test}"
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

results="$STACK_DIR/test-results"
mkdir -p "$results"
rm -f "$results"/*.json
timings="$results/timings.tsv"
: >"$timings"

now_ms() { local t=${EPOCHREALTIME/./}; echo $((10#$t / 1000)); }
started=$(now_ms)
current_step="" step_started=0

# end_step ok|failed: records how long the current step took.
end_step() {
  [[ -n $current_step ]] || return 0
  printf 'step\t%s\t%s\t%s\n' "$current_step" "$(($(now_ms) - step_started))" "$1" >>"$timings"
  current_step=""
}

# begin NAME [HEADING]: ends the step before it and starts the next (NAME in the summary; the
# heading printed now, when the step does not print its own).
begin() {
  end_step ok
  current_step=$1 step_started=$(now_ms)
  if [[ -n ${2:-} ]]; then step "$2"; fi
}

# vitest_project NAME [VITEST ARGS...]: one vitest project with its JSON report, and its own
# duration. REPORT (environment) names the report and the summary's line instead of NAME, for a
# project run in parts.
vitest_project() {
  local project=$1 report=${REPORT:-$1} t0 rc=0
  shift
  t0=$(now_ms)
  npx vitest run --project "$project" "$@" --reporter=default --reporter=json --outputFile.json="$results/$report.json" || rc=$?
  printf 'project\t%s\t%s\t%s\t%s\n' "$current_step" "$report" "$(($(now_ms) - t0))" "$([[ $rc == 0 ]] && echo ok || echo failed)" >>"$timings"
  return "$rc"
}

# The summary, also after a failure (the durations so far, and which step failed).
finish() {
  local rc=$?
  trap - EXIT
  if ((rc == 0)); then end_step ok; else end_step failed; fi
  if ! node --import tsx scripts/test/summary.ts "$results" "$rc" "$(($(now_ms) - started))"; then
    # No tsx (npm ci failed) or no report: the raw durations, and never a tests: line.
    awk -F'\t' '{ printf "  %-60s %8.1fs %s\n", $1 == "step" ? $2 : "  vitest project " $3, ($1 == "step" ? $3 : $4) / 1000, ($1 == "step" ? $4 : $5) }' "$timings"
    ((rc != 0)) || rc=1
  fi
  exit "$rc"
}
trap finish EXIT

begin "Node runtime"
ensure_node

begin "npm dependencies"
ensure_node_modules

begin "local stack" "local stack (Kafka, ClickHouse, Redis)"
bash scripts/stack.sh up

begin "secure Kafka broker" "secure Kafka broker beside it (TLS, SASL, ACLs; docs/security.md)"
STACK_KAFKA_SECURITY=sasl_ssl bash scripts/stack.sh up
export KAFKA_SECURE_ENV_DIR="$STACK_DIR/kafka-secure/env"

# Early, while nothing else of npm test runs: these check the broker's readiness budget.
begin "stack script tests" "stack script tests (a first run: an empty Maven cache, a fetch slower than the broker's budget, a fetch that fails)"
vitest_project stack

# Side by side: eslint and tsc each keep one core busy, and CI has two (43 s one after the
# other in the fresh-clone run of 2026-11-29). The typecheck's output follows the lint's.
begin "lint, formatting, typecheck" "lint (eslint), formatting (prettier) and typecheck (tsc --noEmit), side by side"
typecheck() { npx tsc -p tsconfig.json --noEmit && npx tsc -p services/console/web/tsconfig.json; }
typecheck >"$results/typecheck.log" 2>&1 &
typecheck_pid=$!
lint_status=0
{ npx eslint . && npx prettier --check .; } || lint_status=$?
typecheck_status=0
wait "$typecheck_pid" || typecheck_status=$?
cat "$results/typecheck.log"
((typecheck_status == 0)) || echo "typecheck failed (tsc exited with $typecheck_status)" >&2
((lint_status == 0 && typecheck_status == 0))

begin "production build, bundles start" "production build (esbuild bundles), and each bundle starts"
npm run --silent build
bash scripts/check-bundles.sh

begin "docker-compose config" "docker-compose.yml is valid (docker-compose config)"
ensure_apt_tool docker-compose docker-compose
# Every required variable (${VAR:?...}) set to a placeholder: the check is about the file, and a
# variable made required later needs no edit here.
mapfile -t compose_env < <(grep -o '\${[A-Z0-9_]*:?' docker-compose.yml | sed 's/^\${\(.*\):?$/\1=compose-check/' | sort -u)
env "${compose_env[@]}" docker-compose -f docker-compose.yml config -q

begin "Prometheus, Grafana, Kubernetes files" "Prometheus alerts, Grafana dashboards, Kubernetes manifests (promtool, schemas)"
ensure_apt_tool promtool prometheus
bash deploy/checks/check.sh

begin "unit tests" "unit tests"
vitest_project unit

begin "current-engine tests" "current-engine tests (ClickHouse 26.9 and 24.8 in-process through chdb: migrations, the writer's bytes, every SQL statement; docs/clickhouse.md)"
bash scripts/chdb/install.sh
vitest_project chdb

begin "integration tests" "integration tests (real Kafka, ClickHouse, Redis)"
vitest_project integration

begin "secure tests" "secure tests (the services over SASL_SSL, each with its own principal and ACLs)"
vitest_project secure

begin "abuse tests" "abuse tests (docs/limits.md: every limit attacked while a second tenant's traffic is measured)"
vitest_project abuse

begin "browser tests" "browser tests (dashboard in headless Chromium, real servers)"
ensure_apt_tool chromium chromium
vitest_project browser

# Side by side: the fuzzer against a gateway and a console of its own, and Prometheus against
# services of its own (a processor it breaks on purpose, its own topic prefix): they share only
# the servers, which neither stops. Prometheus live mostly waits for alerts to fire (the CPU ~78 %
# idle while it ran alone in the fresh-clone run of 2026-11-29), so beside the fuzzer it saves
# its ~50 s. Its output follows the fuzzer's.
begin "API fuzzing, Prometheus live beside it" "API fuzzing (schemathesis, from /v1/openapi.json and the admin listener's /admin/v1/openapi.json), and beside it Prometheus against running services: every target scraped, induced faults fire the real alerts"
prometheus_log=$results/prometheus-live.log
bash deploy/checks/prometheus-live.sh >"$prometheus_log" 2>&1 &
prometheus_pid=$!
fuzz_status=0
bash scripts/fuzz/run.sh || fuzz_status=$?
prometheus_status=0
wait "$prometheus_pid" || prometheus_status=$?
step "Prometheus live (it ran beside the fuzzer; its output)"
cat "$prometheus_log"
((prometheus_status == 0)) || echo "Prometheus live failed (exit $prometheus_status)" >&2
((fuzz_status == 0 && prometheus_status == 0))

# Last, and side by side: the chaos tests (they kill processors with SIGKILL and stop the shared
# servers) and the scale smoke: a three-node Kafka cluster beside the single broker
# (scripts/stack.sh cluster mode) and two ClickHouse replicas with ZooKeeper (the smoke's file
# starts them: scripts/stack-clickhouse-cluster.sh), one broker and one replica SIGKILLed under
# load (docs/scale.md; the whole set: npm run test:scale). The smoke shares no server a chaos test
# stops but the ClickHouse the outage test stops, which runs after it; and the chaos tests leave
# the CPU ~65 % idle (vmstat over the fresh-clone run of 2026-11-29), so side by side they save
# the smoke's ~2.7 min of the 30-minute budget. The smoke's output follows the chaos tests'.
begin "chaos tests, scale smoke beside them" "chaos tests (guarantees under SIGKILL, rebalancing and server outages), the scale smoke beside them (a broker of a three-node Kafka cluster and a ClickHouse replica killed under load; docs/scale.md)"
STACK_KAFKA_NODES=3 bash scripts/stack.sh up
smoke_log=$results/scale-smoke.log
KAFKA_BROKERS=127.0.0.1:9292,127.0.0.1:9293,127.0.0.1:9294 vitest_project scale-smoke >"$smoke_log" 2>&1 &
smoke_pid=$!
chaos_status=0
vitest_project chaos --exclude '**/clickhouse-outage.chaos.test.ts' || chaos_status=$?
smoke_status=0
wait "$smoke_pid" || smoke_status=$?
step "scale smoke (it ran beside the chaos tests; its output)"
cat "$smoke_log"
((smoke_status == 0)) || echo "scale smoke failed (vitest exited with $smoke_status)" >&2
REPORT=chaos-clickhouse-outage vitest_project chaos clickhouse-outage.chaos || chaos_status=$?
((chaos_status == 0 && smoke_status == 0))
