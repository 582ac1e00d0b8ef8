#!/usr/bin/env bash
# API fuzzing: "bad input never gets a 500, a crash or a hang", checked by schemathesis against
# the APIs' own OpenAPI documents: the public one (/v1/openapi.json on the API port; while it
# documents no request body for the CSV upload, scripts/fuzz/document.py adds that one) and the
# admin API's (/admin/v1/openapi.json, served only on the admin listener).
#
# Starts the real gateway and console as processes on free ports, on topics, a ClickHouse database and
# Redis keys of its own (the local stack's servers must answer: `bash scripts/stack.sh up`),
# seeds an account, an API key and a few records (scripts/fuzz/fixture.ts), runs schemathesis
# with the settings in scripts/fuzz/schemathesis.toml, and always stops both and deletes
# what the run created. Exits non-zero when schemathesis reports a failure (each one with a
# curl command that reproduces it), when either dies during the run, or when it is no
# longer ready afterwards.
#
# Idempotent: schemathesis is installed from PyPI into the ignored .local/fuzz/venv when it is
# missing or not the pinned version. Knobs: FUZZ_SEED, FUZZ_MAX_EXAMPLES (per operation and
# phase), FUZZ_WORKERS. The run's files (service logs, reports) stay in .local/fuzz/runs/<id>.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
cd "$ROOT"

# The one place the version is pinned: the newest release, checked to install and run on the
# machines' Python 3.11 (`pip index versions schemathesis`).
SCHEMATHESIS_VERSION=4.32.5
FUZZ_SEED=${FUZZ_SEED:-20261122}
FUZZ_MAX_EXAMPLES=${FUZZ_MAX_EXAMPLES:-100}
# Two: one per core. 182 s against 217 s with one in the same state of the machine (2026-11-29),
# the same public cases (3,698) and 3 % fewer admin ones (6,410 against 6,614: the stateful
# phase's links fall differently between the workers). Not four: the admin run took longer
# (3 m 07 s against 2 m 37 s) and schemathesis 4.32.5 itself failed with a KeyError in its
# coverage phase's shared cache ("2 errors", no response involved), a race between its threads.
FUZZ_WORKERS=${FUZZ_WORKERS:-2}
SCHEMATHESIS_INSTALL_TIMEOUT=${SCHEMATHESIS_INSTALL_TIMEOUT:-600}

FUZZ_DIR="$STACK_DIR/fuzz"
VENV="$FUZZ_DIR/venv"

installed_version() {
  "$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("schemathesis"))' 2>/dev/null || true
}

# pip's progress: distributions collected so far, and the latest one.
pip_progress() {
  local out
  out=$(install_output)
  printf '%s collected, latest: %s' "$(grep -c '^Collecting ' <<<"$out" || true)" "$(grep -E '^(Collecting|Downloading|Installing) ' <<<"$out" | tail -n 1 | cut -c1-80 || true)"
}
pip_cause() {
  local e
  e=$(install_output | grep -m 1 '^ERROR: ' | sed 's/ (from versions:.*//' | cut -c1-300 || true)
  printf '%s' "${e:-$(install_last_line)}"
}

# A venv that failed half-way is removed: the version check above would redo it anyway, but
# nothing half-installed stays behind.
if [[ "$(installed_version)" != "$SCHEMATHESIS_VERSION" ]]; then
  step "installing schemathesis $SCHEMATHESIS_VERSION (PyPI) into $VENV (log $FUZZ_DIR/install.log)"
  rm -rf "$VENV"
  mkdir -p "$FUZZ_DIR"
  if ! python3 -m venv "$VENV" 2>/dev/null; then
    # Debian's own python3 keeps venv support in a separate package.
    rm -rf "$VENV"
    apt_install apt "$STACK_DIR/apt.log" "$RETRY_COMMAND" python3-venv || install_fail
    python3 -m venv "$VENV"
  fi
  if ! INSTALL_PROGRESS=pip_progress INSTALL_CAUSE=pip_cause install_run fuzz "installing schemathesis $SCHEMATHESIS_VERSION with pip" \
    "$SCHEMATHESIS_INSTALL_TIMEOUT" SCHEMATHESIS_INSTALL_TIMEOUT "$FUZZ_DIR/install.log" "$RETRY_COMMAND" \
    "$VENV/bin/pip" install --disable-pip-version-check --progress-bar off "schemathesis==$SCHEMATHESIS_VERSION"; then
    rm -rf "$VENV"
    install_fail
  fi
fi

# Everything this run creates carries its id: nothing is shared with `npm start`, the tests or
# another run.
RUN_ID="$(date +%s)$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')"
RUN_DIR="$FUZZ_DIR/runs/$RUN_ID"
mkdir -p "$RUN_DIR/dict"
# Keep the last few runs' logs and reports, not all of them.
find "$FUZZ_DIR/runs" -mindepth 1 -maxdepth 1 -type d -printf '%T@ %p\n' | sort -rn | tail -n +6 | cut -d' ' -f2- | xargs -r rm -rf

export KAFKA_TOPIC_PREFIX="fuzz-$RUN_ID."
export CLICKHOUSE_DATABASE="fuzz_$RUN_ID"
export REDIS_KEY_PREFIX="fuzz:$RUN_ID:"
ADMIN_TOKEN="$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')"
export ADMIN_TOKEN
# The run's own client address, sent as X-Forwarded-For (see schemathesis.toml).
export FUZZ_CLIENT_ADDRESS="127.$((RANDOM % 254 + 1)).$((RANDOM % 256)).$((RANDOM % 254 + 1))"

# The gateway serves the public API, the console the admin API: both run, each a process.
GATEWAY_PID=""
CONSOLE_PID=""
FUZZER_PID=""
provisioned=false

stop_service() {
  local name=$1 pid=$2
  [[ -n "$pid" ]] || return 0
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM -- "-$pid" 2>/dev/null || true
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    if kill -0 "$pid" 2>/dev/null; then
      echo "warning: the $name did not stop within 20 s of SIGTERM; killed" >&2
      kill -KILL -- "-$pid" 2>/dev/null || true
    fi
  fi
  wait "$pid" 2>/dev/null || true
}

stop_services() {
  stop_service gateway "$GATEWAY_PID"
  GATEWAY_PID=""
  stop_service console "$CONSOLE_PID"
  CONSOLE_PID=""
}

# Waits until the service's "<name> running" log line names its ops listener and /readyz answers;
# prints that line. Ports are chosen by the OS (no race for a "free" port).
await_running() {
  local name=$1 pid=$2 running="" ops="" deadline=$((SECONDS + 90))
  until [[ -n "$ops" ]] && curl -sf --max-time 2 "$ops/readyz" >/dev/null; do
    if ! kill -0 "$pid" 2>/dev/null || ((SECONDS > deadline)); then
      echo "the $name did not become ready; last lines of $RUN_DIR/$name.log:" >&2
      tail -n 40 "$RUN_DIR/$name.log" >&2
      exit 1
    fi
    running=$(grep -m1 "\"msg\":\"$name running\"" "$RUN_DIR/$name.log" || true)
    ops=$(sed -n 's/.*"ops":"\([^"]*\)".*/\1/p' <<<"$running")
    sleep 0.5
  done
  echo "$running"
}
field() { sed -n "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p" <<<"$2"; }

finish() {
  local status=$?
  trap - EXIT INT TERM
  if [[ -n "$FUZZER_PID" ]]; then
    kill -TERM "$FUZZER_PID" 2>/dev/null || true
    wait "$FUZZER_PID" 2>/dev/null || true
  fi
  stop_services
  if $provisioned; then
    # A leftover here is a nuisance, not a test failure: say so and keep the run's verdict.
    npx tsx scripts/fuzz/fixture.ts cleanup >"$RUN_DIR/cleanup.log" 2>&1 ||
      { echo "warning: cleanup incomplete (topics $KAFKA_TOPIC_PREFIX*, database $CLICKHOUSE_DATABASE, keys $REDIS_KEY_PREFIX*):" >&2; tail -n 5 "$RUN_DIR/cleanup.log" >&2; }
  fi
  exit "$status"
}
trap finish EXIT
trap 'exit 130' INT TERM

step "fuzz: topics and database ($KAFKA_TOPIC_PREFIX*, $CLICKHOUSE_DATABASE)"
provisioned=true
if ! LOG_LEVEL=warn npx tsx tools/cli/src/main.ts setup >"$RUN_DIR/setup.log" 2>&1; then
  cat "$RUN_DIR/setup.log" >&2
  echo "setup failed: are Kafka, ClickHouse and Redis up? (bash scripts/stack.sh up)" >&2
  exit 1
fi

step "fuzz: starting the gateway and the console"
# The rate limit is raised so the fuzzer measures the API, not the limiter: thousands of
# requests a minute would otherwise all be 429s. The limit has its own tests
# (services/gateway/src/limits/limits.integration.test.ts). X-Forwarded-For is trusted from
# 127.0.0.1 only, for the run's own rate-limit counter. The per-account ceilings are raised for
# the same reason (the fuzzer may change the account's plan; account-rate.integration.test.ts
# tests them). crm-sink's public key from the stack (`stack.sh up` made it): the admin API seals
# CRM credentials (the console). ClickHouse as the read-only user, as npm start and the manifests
# run both.
env "${GATEWAY_READER_ENV[@]}" \
  GATEWAY_HOST=127.0.0.1 GATEWAY_PORT=0 GATEWAY_OPS_HOST=127.0.0.1 GATEWAY_OPS_PORT=0 \
  RATE_LIMIT_PER_MINUTE=1000000 GATEWAY_TRUST_PROXY=127.0.0.1 LOG_LEVEL=info \
  ACCOUNT_RATE_LIMIT_REQUESTS_PER_SECOND_FREE=1000000 ACCOUNT_RATE_LIMIT_REQUESTS_PER_SECOND_PRO=1000000 \
  ACCOUNT_RATE_LIMIT_REQUESTS_PER_SECOND_GROWTH=1000000 ACCOUNT_RATE_LIMIT_EVENTS_PER_SECOND_FREE=1000000 \
  ACCOUNT_RATE_LIMIT_EVENTS_PER_SECOND_PRO=1000000 ACCOUNT_RATE_LIMIT_EVENTS_PER_SECOND_GROWTH=1000000 \
  setsid npx tsx services/gateway/src/main.ts >"$RUN_DIR/gateway.log" 2>&1 &
GATEWAY_PID=$!
env "${GATEWAY_READER_ENV[@]}" \
  CONSOLE_HOST=127.0.0.1 CONSOLE_PORT=0 CONSOLE_OPS_HOST=127.0.0.1 CONSOLE_OPS_PORT=0 ADMIN_HOST=127.0.0.1 ADMIN_PORT=0 \
  CRM_CREDENTIALS_PUBLIC_KEY_FILE="${CRM_CREDENTIALS_PUBLIC_KEY_FILE:-$STACK_DIR/crm-keys/local.pub.pem}" \
  RATE_LIMIT_PER_MINUTE=1000000 GATEWAY_TRUST_PROXY=127.0.0.1 LOG_LEVEL=info \
  setsid npx tsx services/console/src/main.ts >"$RUN_DIR/console.log" 2>&1 &
CONSOLE_PID=$!

gateway_running=$(await_running gateway "$GATEWAY_PID")
api_url=$(field api "$gateway_running")
ops_url=$(field ops "$gateway_running")
console_running=$(await_running console "$CONSOLE_PID")
admin_url=$(field admin "$console_running")
console_ops_url=$(field ops "$console_running")
echo "gateway ready: API $api_url, ops $ops_url (pid $GATEWAY_PID, log $RUN_DIR/gateway.log)"
echo "console ready: admin $admin_url, ops $console_ops_url (pid $CONSOLE_PID, log $RUN_DIR/console.log)"

step "fuzz: seeding accounts, API keys, a job and a stored event"
seeded=$(GATEWAY_URL="$api_url" ADMIN_URL="$admin_url" npx tsx scripts/fuzz/fixture.ts seed 2>"$RUN_DIR/seed.log") || {
  cat "$RUN_DIR/seed.log" >&2
  exit 1
}
value() { sed -n "s/^$1=//p" <<<"$seeded"; }
export FUZZ_API_KEY FUZZ_ADMIN_TOKEN="$ADMIN_TOKEN"
FUZZ_API_KEY=$(value FUZZ_API_KEY)
printf '"%s"\n' "$(value FUZZ_TARGET_ACCOUNT_ID)" >"$RUN_DIR/dict/target-account.dict"
printf '"%s"\n' "$(value FUZZ_TARGET_KEY_ID)" >"$RUN_DIR/dict/target-key.dict"
printf '"%s"\n' "$(value FUZZ_JOB_ID)" >"$RUN_DIR/dict/job-id.dict"
printf '"%s"\n' "$(value FUZZ_EVENT_ID)" >"$RUN_DIR/dict/event-id.dict"
cp scripts/fuzz/schemathesis.toml "$RUN_DIR/schemathesis.toml"
echo "fuzz account $(value FUZZ_ACCOUNT_ID) (plan growth), admin target $(value FUZZ_TARGET_ACCOUNT_ID)"

# The served documents, plus the CSV upload's request body while the gateway leaves it out
# (scripts/fuzz/document.py says so when it adds it). The public one must not list the admin API.
curl -sf --max-time 10 -H "X-Forwarded-For: $FUZZ_CLIENT_ADDRESS" "$api_url/v1/openapi.json" -o "$RUN_DIR/openapi.json"
curl -sf --max-time 10 -H "X-Forwarded-For: $FUZZ_CLIENT_ADDRESS" -H "Authorization: Bearer $ADMIN_TOKEN" "$admin_url/admin/v1/openapi.json" -o "$RUN_DIR/openapi-admin.json"
if grep -q '/admin/v1' "$RUN_DIR/openapi.json"; then
  echo "FAIL: the public OpenAPI document ($api_url/v1/openapi.json) lists admin paths" >&2
  exit 1
fi
"$VENV/bin/python" scripts/fuzz/document.py "$RUN_DIR/openapi.json" "$RUN_DIR/openapi-fuzz.json"

# One run per API, the public one first: the admin run creates, changes and revokes accounts
# and keys, and it can reach the fuzz account's own (GET /admin/v1/accounts lists it).
fuzz_status=0
fuzz() {
  local name=$1 paths=$2 document=$3 url=$4
  step "fuzz: $name API ($paths), schemathesis $SCHEMATHESIS_VERSION, seed $FUZZ_SEED, at most $FUZZ_MAX_EXAMPLES examples per operation and phase"
  # From the run's directory, so whatever schemathesis writes stays there. The outer timeout
  # only guards against schemathesis itself hanging; a slow response fails its own request.
  # In the background and waited for, so that a signal to this script stops it at once.
  (cd "$RUN_DIR" && exec timeout --kill-after=10 600 "$VENV/bin/st" --config-file "$RUN_DIR/schemathesis.toml" run \
    "$document" --url "$url" --include-path-regex "$paths" \
    --seed "$FUZZ_SEED" --max-examples "$FUZZ_MAX_EXAMPLES" --workers "$FUZZ_WORKERS" --no-color \
    --report junit,ndjson --report-junit-path "$RUN_DIR/junit-$name.xml" --report-ndjson-path "$RUN_DIR/events-$name.ndjson") \
    >"$RUN_DIR/schemathesis-$name.log" 2>&1 &
  FUZZER_PID=$!
  local status=0
  wait "$FUZZER_PID" || status=$?
  FUZZER_PID=""
  # Schemathesis's own report goes to a log and is shown whole only when it failed: its closing
  # banner looks like pytest's, and CI readers took it for the suite's result.
  if ((status != 0)); then
    cat "$RUN_DIR/schemathesis-$name.log"
    fuzz_status=$status
  else
    grep -A1 '^Test cases:' "$RUN_DIR/schemathesis-$name.log" | tail -n 1 | sed "s/^ */$name API: /"
  fi
}
fuzz public '^/v1/' "$RUN_DIR/openapi-fuzz.json" "$api_url"
fuzz admin '^/admin/v1/' "$RUN_DIR/openapi-admin.json" "$admin_url"

step "fuzz: what was exercised (test cases and responses per operation) and what the services logged as errors"
# One table per document, each with the logged errors of the service that serves it.
"$VENV/bin/python" scripts/fuzz/summary.py "$RUN_DIR/openapi-fuzz.json" "$RUN_DIR/gateway.log" "$RUN_DIR"/events-public.ndjson || true
"$VENV/bin/python" scripts/fuzz/summary.py "$RUN_DIR/openapi-admin.json" "$RUN_DIR/console.log" "$RUN_DIR"/events-admin.ndjson || true

# A crash is a failure even when every response before it was fine.
gateway_status=0
for svc in "gateway $GATEWAY_PID $ops_url" "console $CONSOLE_PID $console_ops_url"; do
  read -r name pid url <<<"$svc"
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "FAIL: the $name process died during fuzzing; last lines of its log:" >&2
    tail -n 40 "$RUN_DIR/$name.log" >&2
    gateway_status=1
  elif ! curl -sf --max-time 5 "$url/readyz" >/dev/null; then
    echo "FAIL: the $name is no longer ready after fuzzing ($url/readyz)" >&2
    gateway_status=1
  fi
done

if ((fuzz_status != 0 || gateway_status != 0)); then
  cat >&2 <<HINT

API fuzzing failed (schemathesis exit $fuzz_status). Each failure above ends with a curl command
that reproduces it; [Filtered] stands for a credential (an API key, or the admin token for
/admin/v1) and for X-Forwarded-For (drop that header). The run's service logs and JUnit reports:
$RUN_DIR. Rerun the same cases with FUZZ_SEED=$FUZZ_SEED bash scripts/fuzz/run.sh.
HINT
  exit 1
fi
echo "API fuzzing passed (seed $FUZZ_SEED)"
