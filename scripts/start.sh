#!/usr/bin/env bash
# The one start command (`npm start`): local servers, topics and migrations, then every
# service, and where each one listens. Ctrl-C stops the services; the servers keep running
# (`npm run stack -- down` stops them). `--detach` returns once everything is ready;
# `npm run stop` then stops the services.
set -euo pipefail
# A failed install says to run this again (scripts/lib.sh; exported for stack.sh).
export RETRY_COMMAND="${RETRY_COMMAND:-npm start}"
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

RUN_DIR="$STACK_DIR/run"
LOG_DIR="$STACK_DIR/logs"
mkdir -p "$RUN_DIR" "$LOG_DIR"

# name:ops-port (the port that answers /readyz). Add a service here when it gets a main.ts.
SERVICES=("gateway:${GATEWAY_OPS_PORT:-3100}" "console:${CONSOLE_OPS_PORT:-3103}" "processor:${PROCESSOR_OPS_PORT:-3101}" "crm-sink:${CRM_SINK_OPS_PORT:-3102}")
GATEWAY_URL="http://127.0.0.1:${GATEWAY_PORT:-3000}"
# The console: the dashboard on its own port, the admin API on a listener of its own, on
# loopback (ADMIN_HOST/ADMIN_PORT of the console).
CONSOLE_URL="http://127.0.0.1:${CONSOLE_PORT:-3003}"
ADMIN_URL="http://127.0.0.1:${ADMIN_PORT:-3200}"

# The local admin token: generated once, kept in .local (ignored), so the CLI keeps working
# across restarts. Production sets ADMIN_TOKEN from a secret.
if [[ -z "${ADMIN_TOKEN:-}" ]]; then
  if [[ ! -s "$STACK_DIR/admin-token" ]]; then
    mkdir -p "$STACK_DIR"
    (umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$STACK_DIR/admin-token")
  fi
  ADMIN_TOKEN=$(cat "$STACK_DIR/admin-token")
fi
export ADMIN_TOKEN ADMIN_URL

# The connection channel's token (docs/crm-sync.md, "Connection checks"), the same way: given to
# the console and crm-sink only (not exported), so the dashboard's "Test connection" works locally.
if [[ -z "${CRM_SINK_INTERNAL_TOKEN:-}" ]]; then
  if [[ ! -s "$STACK_DIR/crm-sink-internal-token" ]]; then
    mkdir -p "$STACK_DIR"
    (umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$STACK_DIR/crm-sink-internal-token")
  fi
  CRM_SINK_INTERNAL_TOKEN=$(cat "$STACK_DIR/crm-sink-internal-token")
fi

# The seen-id memory's HMAC key (docs/security.md), the same for the gateway and the console:
# generated once like the admin token, given to those two only. Production sets it from a secret.
if [[ -z "${SEEN_IDS_HMAC_KEY:-}" ]]; then
  if [[ ! -s "$STACK_DIR/seen-ids-key" ]]; then
    mkdir -p "$STACK_DIR"
    (umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$STACK_DIR/seen-ids-key")
  fi
  SEEN_IDS_HMAC_KEY=$(cat "$STACK_DIR/seen-ids-key")
fi

# One Redis user per service (docs/security.md, "Redis users"): the passwords generated once like
# the admin token, `ingest setup` creates the users from them (REDIS_ADMIN_URL: the stack's
# default user), and each service gets redis://ROLE:PASSWORD@ its own. REDIS_ROLE_USERS=off:
# every service uses REDIS_URL as it is (an external Redis older than 7, say).
REDIS_ROLE_USERS=${REDIS_ROLE_USERS:-on}
REDIS_ROLES=(gateway console processor crm-sink)
if [[ $REDIS_ROLE_USERS != off ]]; then
  mkdir -p "$STACK_DIR/redis-roles"
  for role in "${REDIS_ROLES[@]}"; do
    [[ -s "$STACK_DIR/redis-roles/$role" ]] || (umask 077 && head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$STACK_DIR/redis-roles/$role")
  done
fi
role_redis_url() {
  local rest=${REDIS_URL#*://}
  [[ $rest == *@* ]] && rest=${rest#*@}
  echo "${REDIS_URL%%://*}://$1:$(cat "$STACK_DIR/redis-roles/$1")@$rest"
}
redis_setup_env() {
  [[ $REDIS_ROLE_USERS == off ]] && return
  local pairs=() role
  for role in "${REDIS_ROLES[@]}"; do pairs+=("$role=$(cat "$STACK_DIR/redis-roles/$role")"); done
  local IFS=,
  echo "REDIS_ADMIN_URL=$REDIS_URL"
  echo "REDIS_ROLE_PASSWORDS=${pairs[*]}"
}

service_pid() {
  local pidfile="$RUN_DIR/$1.pid"
  [[ -f "$pidfile" ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null && cat "$pidfile"
}

start_service() {
  local name=$1 port=$2 pid
  if pid=$(service_pid "$name"); then
    echo "$name: already running (pid $pid)"
    return
  fi
  # Each service connects to Redis as its role's user (docs/security.md, "Redis users").
  local -x REDIS_URL="$REDIS_URL"
  [[ $REDIS_ROLE_USERS == off ]] || REDIS_URL=$(role_redis_url "$name")
  # CRM credential keys (docs/security.md): the console gets crm-sink's public key, crm-sink its
  # private key; neither is given the other's. `stack.sh up` made the local pair. The gateway
  # and the console read ClickHouse as the read-only user.
  local keys=()
  case $name in
    gateway) keys=("SEEN_IDS_HMAC_KEY=$SEEN_IDS_HMAC_KEY" "${GATEWAY_READER_ENV[@]}") ;;
    console)
      # The console's own secret key (seals owners' TOTP secrets, signs device cookies), made once.
      [[ -s $STACK_DIR/dashboard-secret.key ]] || (umask 077 && openssl rand -base64 32 >"$STACK_DIR/dashboard-secret.key")
      keys=(
        "CRM_CREDENTIALS_PUBLIC_KEY_FILE=${CRM_CREDENTIALS_PUBLIC_KEY_FILE:-$STACK_DIR/crm-keys/local.pub.pem}"
        "CRM_SINK_INTERNAL_TOKEN=$CRM_SINK_INTERNAL_TOKEN"
        "SEEN_IDS_HMAC_KEY=$SEEN_IDS_HMAC_KEY"
        "DASHBOARD_SECRET_KEYS_FILE=${DASHBOARD_SECRET_KEYS_FILE:-$STACK_DIR/dashboard-secret.key}"
        "${GATEWAY_READER_ENV[@]}"
        # Erasures delete events rows, which the read-only user may not: the stack's admin user.
        "CLICKHOUSE_ERASURE_USER=${CLICKHOUSE_ERASURE_USER:-default}"
      )
      ;;
    crm-sink) keys=("CRM_CREDENTIALS_PRIVATE_KEY_FILES=${CRM_CREDENTIALS_PRIVATE_KEY_FILES:-$STACK_DIR/crm-keys/local.key.pem}" "CRM_SINK_INTERNAL_TOKEN=$CRM_SINK_INTERNAL_TOKEN") ;;
  esac
  # setsid: the service gets its own process group, so stopping it stops tsx and node together.
  setsid nohup env "${keys[@]}" npx tsx "services/$name/src/main.ts" >>"$LOG_DIR/$name.log" 2>&1 &
  echo $! >"$RUN_DIR/$name.pid"
  local deadline=$((SECONDS + 60))
  until curl -sf --max-time 2 "http://127.0.0.1:$port/readyz" >/dev/null; do
    if ! kill -0 "$(cat "$RUN_DIR/$name.pid")" 2>/dev/null || ((SECONDS > deadline)); then
      echo "$name: failed to become ready; last lines of $LOG_DIR/$name.log:" >&2
      tail -n 40 "$LOG_DIR/$name.log" >&2
      exit 1
    fi
    sleep 0.5
  done
  echo "$name: ready (pid $(cat "$RUN_DIR/$name.pid")), log $LOG_DIR/$name.log"
}

stop_services() {
  local entry name pid
  for entry in "${SERVICES[@]}"; do
    name=${entry%%:*}
    if pid=$(service_pid "$name"); then
      kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
      kill -KILL -- "-$pid" 2>/dev/null || true
      echo "$name: stopped"
    fi
    rm -f "$RUN_DIR/$name.pid"
  done
}

case "${1:-}" in
  stop)
    stop_services
    exit 0
    ;;
  --detach | "") ;;
  *)
    echo "usage: scripts/start.sh [--detach|stop]" >&2
    exit 2
    ;;
esac

ensure_node
ensure_node_modules
if [[ ! -f services/console/dist/web/index.html ]]; then
  step "dashboard web app (vite build)"
  npx tsx scripts/build-dashboard.ts
fi
step "local stack"
bash scripts/stack.sh up
step "topics, migrations and Redis users"
mapfile -t redis_setup < <(redis_setup_env)
env "${redis_setup[@]}" npx tsx tools/cli/src/main.ts setup
step "services"
for entry in "${SERVICES[@]}"; do start_service "${entry%%:*}" "${entry##*:}"; done

step "demo account"
demo=$(npx tsx scripts/demo-account.ts)
DEMO_API_KEY=$(sed -n 's/^DEMO_API_KEY=//p' <<<"$demo")
DEMO_ACCOUNT_ID=$(sed -n 's/^DEMO_ACCOUNT_ID=//p' <<<"$demo")
DEMO_OWNER_EMAIL=$(sed -n 's/^DEMO_OWNER_EMAIL=//p' <<<"$demo")
DEMO_OWNER_PASSWORD=$(sed -n 's/^DEMO_OWNER_PASSWORD=//p' <<<"$demo")

cat <<SUMMARY

Running:
  Kafka       $KAFKA_BROKERS
  ClickHouse  $CLICKHOUSE_URL   (database ${CLICKHOUSE_DATABASE:-ingest})
  Redis       $REDIS_URL
  gateway     $GATEWAY_URL   (API; OpenAPI at /v1/openapi.json, docs at /docs)
  console     $CONSOLE_URL/dashboard/   (dashboard)
  console     admin $ADMIN_URL  (admin API, loopback only; OpenAPI at /admin/v1/openapi.json, with the admin token)
SUMMARY
for entry in "${SERVICES[@]}"; do printf '  %-11s ops http://127.0.0.1:%s  (/healthz /readyz /metrics)\n' "${entry%%:*}" "${entry##*:}"; done
cat <<DEMO

Demo account $DEMO_ACCOUNT_ID (plan pro), API key:
  $DEMO_API_KEY
Try it:
  curl -s $GATEWAY_URL/v1/events -H 'Authorization: Bearer $DEMO_API_KEY' -H 'Content-Type: application/json' \\
    -d '{"events":[{"eventName":"Signed Up","email":"ada@example.com"}]}'
  curl -s '$CLICKHOUSE_URL/?query=SELECT+event_name,email+FROM+${CLICKHOUSE_DATABASE:-ingest}.events_dedup+FORMAT+PrettyCompact'
Dashboard (API keys, usage, jobs, CRM mapping and connections, sync health, event debugger, two-step sign-in):
  $CONSOLE_URL/dashboard/
  email    $DEMO_OWNER_EMAIL
  password $DEMO_OWNER_PASSWORD
Admin CLI (token in $STACK_DIR/admin-token, admin API at $ADMIN_URL):
  ADMIN_URL=$ADMIN_URL ADMIN_TOKEN=\$(cat $STACK_DIR/admin-token) npm run admin -- accounts list
DEMO
if [[ "${1:-}" == "--detach" ]]; then
  echo -e "\nServices run in the background: 'npm run stop' stops them, 'npm run stack -- down' the servers."
  exit 0
fi
echo -e "\nFollowing the service logs; Ctrl-C stops the services (the servers keep running)."
trap 'echo; stop_services; exit 0' INT TERM
tail -n 0 -F "$LOG_DIR"/*.log &
wait
