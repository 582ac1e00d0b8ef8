#!/usr/bin/env bash
# Starts each production bundle (what the Docker image runs) against the local stack until it
# is ready, then stops it: a bundle that cannot resolve a package or read its config fails
# here, not in production. Uses its own topic prefix, database and key prefix.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

run_id="bundlecheck$(date +%s)$RANDOM"
export KAFKA_TOPIC_PREFIX="$run_id." CLICKHOUSE_DATABASE="$run_id" REDIS_KEY_PREFIX="$run_id:" LOG_LEVEL=warn
export CLICKHOUSE_MIGRATIONS_DIR="$ROOT/deploy/clickhouse/migrations" ADMIN_TOKEN="$run_id-admin-token-at-least-32-bytes" USAGE_RECONCILE_INTERVAL_MS=0
logs="$STACK_DIR/test-results/bundles"
mkdir -p "$logs"
pids=()

cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  curl -sf "$CLICKHOUSE_URL/" --data-binary "DROP DATABASE IF EXISTS $CLICKHOUSE_DATABASE" >/dev/null || true
  npx tsx -e "
    import { createKafkaClient, createLogger, deleteTopics, allTopicSpecs } from '@ingest/platform';
    const kafka = createKafkaClient({ brokers: process.env.KAFKA_BROKERS, clientId: 'bundle-check', logger: createLogger({ service: 'bundle-check', level: 'silent' }) });
    await deleteTopics(kafka, allTopicSpecs().map((s) => process.env.KAFKA_TOPIC_PREFIX + s.name));
  " >/dev/null 2>&1 || true
}
trap cleanup EXIT

# crm-sink's key pair for CRM credentials (docs/security.md): the console gets the public key,
# crm-sink the private one (it does not start without).
keys="$logs/crm-keys"
mkdir -p "$keys"
(umask 077 && openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$keys/key.pem" 2>/dev/null)
openssl pkey -in "$keys/key.pem" -pubout -out "$keys/pub.pem" 2>/dev/null
export CRM_CREDENTIALS_PUBLIC_KEY_FILE="$keys/pub.pem" CRM_CREDENTIALS_PRIVATE_KEY_FILES="$keys/key.pem"


# The image's operator command: `ingest setup` is what the setup Job and compose service run.
node dist/ingest.mjs setup >"$logs/setup.log" 2>&1 || { echo "ingest setup (bundle) failed:"; tail -20 "$logs/setup.log"; exit 1; }
node dist/ingest.mjs deadletters list --limit 1 >"$logs/deadletters.log" 2>&1 || { echo "ingest deadletters (bundle) failed:"; tail -20 "$logs/deadletters.log"; exit 1; }
echo "ingest bundle: setup and deadletters ran"

check() {
  local name=$1 ops_var=$2 port reader=()
  port=$(free_port)
  api_port=$(free_port)
  admin_port=$(free_port)
  # Three separate picks: draw again in the rare case two are the same.
  while [[ $api_port == "$port" ]]; do api_port=$(free_port); done
  while [[ $admin_port == "$port" || $admin_port == "$api_port" ]]; do admin_port=$(free_port); done
  [[ $name == gateway || $name == console ]] && reader=("${GATEWAY_READER_ENV[@]}")
  env "${reader[@]}" "$ops_var=$port" GATEWAY_PORT="$api_port" CONSOLE_PORT="$api_port" ADMIN_PORT="$admin_port" node services/"$name"/dist/main.js >"$logs/$name.log" 2>&1 &
  pids+=("$!")
  local deadline=$((SECONDS + 60))
  until curl -sf "http://127.0.0.1:$port/readyz" >/dev/null; do
    if ! kill -0 "${pids[-1]}" 2>/dev/null || ((SECONDS > deadline)); then
      echo "$name bundle did not become ready:"
      tail -20 "$logs/$name.log"
      exit 1
    fi
    sleep 0.5
  done
  # What the image runs, on the project's runtime: the bundle reports the .nvmrc Node major.
  local runtime
  runtime=$(curl -sf "http://127.0.0.1:$port/metrics" | sed -n 's/^nodejs_version_info{version="v\([0-9.]*\)".*/\1/p')
  if [[ "${runtime%%.*}" != "$(cut -d. -f1 .nvmrc)" ]]; then
    echo "$name bundle runs Node ${runtime:-(not reported)}; the project's runtime is Node $(cat .nvmrc) (.nvmrc)"
    exit 1
  fi
  echo "$name bundle: ready (Node $runtime)"
}

check gateway GATEWAY_OPS_PORT
# The ingestion API only: its document lists no admin path, and it serves no dashboard.
curl -sf "http://127.0.0.1:$api_port/v1/openapi.json" | grep -q '"/v1/events"' || { echo "gateway bundle: no public OpenAPI document"; exit 1; }
if curl -sf "http://127.0.0.1:$api_port/v1/openapi.json" | grep -q '/admin/v1'; then echo "gateway bundle: the public OpenAPI document lists admin paths"; exit 1; fi
[[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$api_port/dashboard/") == 404 ]] || { echo "gateway bundle serves a dashboard"; exit 1; }
echo "gateway bundle: ingestion API only"
check console CONSOLE_OPS_PORT
# The console bundle serves the dashboard's web app from services/console/dist/web, as in the image.
curl -sf "http://127.0.0.1:$api_port/dashboard/" | grep -q '<div id="root">' || { echo "console bundle does not serve the dashboard web app"; exit 1; }
echo "console bundle: dashboard web app served"
# The admin API answers on its own listener only.
curl -sf -H "Authorization: Bearer $ADMIN_TOKEN" "http://127.0.0.1:$admin_port/admin/v1/openapi.json" | grep -q '"/admin/v1/accounts"' || { echo "console bundle: no admin API on ADMIN_PORT"; exit 1; }
[[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$api_port/admin/v1/accounts") == 404 ]] || { echo "console bundle: the admin API answers on the dashboard's port"; exit 1; }
echo "console bundle: admin API on its own listener"
check processor PROCESSOR_OPS_PORT
check crm-sink CRM_SINK_OPS_PORT
