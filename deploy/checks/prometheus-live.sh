#!/usr/bin/env bash
# Prometheus (Debian package `prometheus`) against the running services, with the real
# alerts.yml: asserts that it scrapes every target, then induces faults and asserts that the
# expected alerts fire. A step of `npm test`: about 50 s of checks, then the clean-up waits for
# the killed processor's consumer-group session to expire so it can delete the groups (the
# broker's smallest session timeout, 6 s, for that processor: the default 30 s took ~25 s of CI).
#
# The shared servers and services are never stopped. The faults are made on a processor this
# script starts itself, on its own topic prefix, consumer groups and Redis key prefix:
#   - its ClickHouse URL points at a closed port -> IngestClickHouseInsertsFailing
#   - a message that is not JSON on its events.raw  -> IngestDeadLettersAppearing
#   - it is killed with SIGKILL                     -> IngestTargetDown (its instance)
# The rules are the real ones except that every `for:` is shortened to 10s (the durations
# themselves are covered by `promtool test rules`); this proves the expressions match the
# series the services really export.
#
# Usage: bash deploy/checks/prometheus-live.sh   (GATEWAY_OPS / PROCESSOR_OPS / CRM_SINK_OPS override
# the targets). Needs the local stack (Kafka, ClickHouse, Redis). When the services do not answer
# on their ops ports (npm start not running), it starts its own on a topic prefix of its own.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
cd "$ROOT"

GATEWAY_OPS="${GATEWAY_OPS:-127.0.0.1:3100}"
PROCESSOR_OPS="${PROCESSOR_OPS:-127.0.0.1:3101}"
CRM_SINK_OPS="${CRM_SINK_OPS:-127.0.0.1:3102}"
DEADLINE_S="${DEADLINE_S:-90}"

ensure_apt_tool prometheus prometheus

started=$SECONDS
id="$(head -c 4 /dev/urandom | od -An -tx1 | tr -d ' \n')"
prefix="live-$id."      # the faulty processor's topics
own_prefix="live-${id}s." # the topics of our own gateway and processor, when we start them
work="$(mktemp -d)"
prom_port="$(free_port)"
own_ops_port="$(free_port)"
dead_clickhouse_port="$(free_port)" # free: nothing listens there, so inserts are refused
prom="http://127.0.0.1:$prom_port"
pids=() # every process this script starts: node itself, no npx wrapper, so a kill reaches it
processor_pid=""

cleanup() {
  local rc=$?
  # SIGTERM first: the services leave their consumer groups, so the groups can be deleted.
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for _ in $(seq 20); do
    alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    ((alive)) || break
    sleep 1
  done
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for p in "$prefix" "$own_prefix"; do
    npx tsx deploy/checks/live-fixture.ts cleanup "$p" 2>&1 | grep -v '^npm warn' || true
  done
  if [[ $rc -ne 0 ]]; then
    for log in "$work"/*.log; do
      echo "--- $(basename "$log") (tail)"
      tail -n 15 "$log"
    done
  fi
  rm -rf "$work"
  exit $rc
}
trap cleanup EXIT

# Our own services (gateway, processor) on a topic prefix of their own, with the real ClickHouse.
start_service() { # name, extra env...
  local name=$1
  shift
  env KAFKA_TOPIC_PREFIX="$own_prefix" REDIS_KEY_PREFIX="live-${id}s:" USAGE_RECONCILE_INTERVAL_MS=0 LOG_LEVEL=warn "$@" \
    node --import tsx "services/$name/src/main.ts" >"$work/$name.log" 2>&1 &
  pids+=($!)
}

answers() { curl -fsS -o /dev/null "http://$1/metrics"; }
if ! answers "$GATEWAY_OPS" || ! answers "$PROCESSOR_OPS" || ! answers "$CRM_SINK_OPS"; then
  echo "the services do not all answer on $GATEWAY_OPS, $PROCESSOR_OPS and $CRM_SINK_OPS: starting our own gateway, processor and crm-sink (topic prefix $own_prefix)"
  npx tsx deploy/checks/live-fixture.ts topics "$own_prefix"
  GATEWAY_OPS="127.0.0.1:$(free_port)"
  PROCESSOR_OPS="127.0.0.1:$(free_port)"
  CRM_SINK_OPS="127.0.0.1:$(free_port)"
  # crm-sink's key pair from the stack (`stack.sh up` made it), as npm start gives it.
  start_service gateway GATEWAY_PORT="$(free_port)" GATEWAY_OPS_PORT="${GATEWAY_OPS#*:}" ADMIN_PORT=0 \
    "${GATEWAY_READER_ENV[@]}" \
    CRM_CREDENTIALS_PUBLIC_KEY_FILE="${CRM_CREDENTIALS_PUBLIC_KEY_FILE:-$STACK_DIR/crm-keys/local.pub.pem}"
  start_service processor PROCESSOR_OPS_PORT="${PROCESSOR_OPS#*:}" \
    PROCESSOR_JOBS_GROUP="live-${id}s-jobs" PROCESSOR_DEDUPE_GROUP="live-${id}s-dedupe" PROCESSOR_STORAGE_GROUP="live-${id}s-storage"
  start_service crm-sink CRM_SINK_OPS_PORT="${CRM_SINK_OPS#*:}" CRM_SINK_GROUP="live-${id}s-crm-sink" \
    CRM_CREDENTIALS_PRIVATE_KEY_FILES="${CRM_CREDENTIALS_PRIVATE_KEY_FILES:-$STACK_DIR/crm-keys/local.key.pem}"
fi

say() { printf '[%3ss] %s\n' "$((SECONDS - started))" "$*"; }

# Prometheus API: a JSON document through a small node expression (no jq needed).
api() { curl -fsS "$prom/api/v1/$1"; }
json() { node -e "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>{const r=JSON.parse(s);console.log(($1)(r))})"; }

wait_for() { # description, command
  local what=$1
  shift
  local until=$((SECONDS + DEADLINE_S))
  until "$@"; do
    if ((SECONDS > until)); then
      say "TIMEOUT waiting for: $what"
      return 1
    fi
    sleep 2
  done
  say "ok: $what"
}

# --- Prometheus with the real rules (for: shortened) ---------------------------------------
sed -E 's/^( *)for: .*/\1for: 10s/' deploy/prometheus/alerts.yml >"$work/alerts.yml"
cat >"$work/prometheus.yml" <<EOF
global:
  scrape_interval: 2s
  evaluation_interval: 2s
rule_files: [alerts.yml]
scrape_configs:
  - job_name: gateway
    static_configs: [{ targets: ['$GATEWAY_OPS'] }]
  - job_name: processor
    static_configs: [{ targets: ['$PROCESSOR_OPS', '127.0.0.1:$own_ops_port'] }]
  - job_name: crm-sink
    static_configs: [{ targets: ['$CRM_SINK_OPS'] }]
EOF
promtool check config "$work/prometheus.yml" >/dev/null
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/data" \
  --web.listen-address="127.0.0.1:$prom_port" >"$work/prometheus.log" 2>&1 &
pids+=($!)
wait_for "prometheus ready on :$prom_port" curl -fsS -o /dev/null "$prom/-/ready"

# --- the running services are scraped -------------------------------------------------------
# Predicates are functions so that wait_for evaluates them again on every try.
target_health() { api targets | json "r => r.data.activeTargets.filter(t => t.scrapeUrl.includes('$1')).map(t => t.health).join()"; }
target_up() { [[ "$(target_health "$1")" == up ]]; }
series() { api "query?query=$(node -e 'console.log(encodeURIComponent(process.argv[1]))' "$1")" | json 'r => r.data.result.length'; }
has_series() { (($(series "$1") > 0)); }
wait_for "gateway $GATEWAY_OPS scraped (up)" target_up "$GATEWAY_OPS"
wait_for "processor $PROCESSOR_OPS scraped (up)" target_up "$PROCESSOR_OPS"
wait_for "crm-sink $CRM_SINK_OPS scraped (up)" target_up "$CRM_SINK_OPS"
wait_for "crm-sink series ingest_crm_sync_outcomes_total{job=crm-sink}" has_series 'ingest_crm_sync_outcomes_total{job="crm-sink"}'
wait_for "gateway series process_cpu_seconds_total{job=gateway}" has_series 'process_cpu_seconds_total{job="gateway"}'

# --- faults on a processor of our own -------------------------------------------------------
npx tsx deploy/checks/live-fixture.ts topics "$prefix"
KAFKA_TOPIC_PREFIX="$prefix" REDIS_KEY_PREFIX="live-$id:" \
  PROCESSOR_OPS_HOST=127.0.0.1 PROCESSOR_OPS_PORT="$own_ops_port" \
  PROCESSOR_JOBS_GROUP="live-$id-jobs" PROCESSOR_DEDUPE_GROUP="live-$id-dedupe" PROCESSOR_STORAGE_GROUP="live-$id-storage" \
  CLICKHOUSE_URL="http://127.0.0.1:$dead_clickhouse_port" USAGE_RECONCILE_INTERVAL_MS=0 LOG_LEVEL=warn \
  KAFKA_SESSION_TIMEOUT_MS=6000 \
  node --import tsx services/processor/src/main.ts >"$work/faulty-processor.log" 2>&1 &
processor_pid=$!
pids+=("$processor_pid")
wait_for "own processor :$own_ops_port scraped (up)" target_up "127.0.0.1:$own_ops_port"
wait_for "own processor exports the lag of its groups" has_series "ingest_consumer_lag_messages{instance=\"127.0.0.1:$own_ops_port\"}"
npx tsx deploy/checks/live-fixture.ts produce "$prefix"
say "produced one event and one message that is not JSON to ${prefix}events.raw"

alert_state() { # alertname [label=value] -> firing | pending | (nothing)
  local match=${2:-}
  api alerts | json "r => r.data.alerts.filter(a => a.labels.alertname === '$1' && ('$match' === '' || a.labels['${match%%=*}'] === '${match#*=}')).map(a => a.state).sort().join()"
}
firing() { [[ "$(alert_state "$@")" == *firing* ]]; }
wait_for "IngestDeadLettersAppearing firing (consumer dedupe)" firing IngestDeadLettersAppearing consumer=dedupe
wait_for "IngestClickHouseInsertsFailing firing" firing IngestClickHouseInsertsFailing
has_series "ingest_clickhouse_insert_failures_total{instance=\"127.0.0.1:$own_ops_port\"}"

kill -9 "$processor_pid"
wait "$processor_pid" 2>/dev/null || true
say "own processor killed (SIGKILL)"
wait_for "IngestTargetDown firing (instance 127.0.0.1:$own_ops_port)" firing IngestTargetDown "instance=127.0.0.1:$own_ops_port"

# The shared targets stayed up throughout, and are not reported down.
target_up "$GATEWAY_OPS"
target_up "$PROCESSOR_OPS"
target_up "$CRM_SINK_OPS"
test -z "$(alert_state IngestTargetDown "instance=$GATEWAY_OPS")"
say "prometheus-live: all checks passed"
