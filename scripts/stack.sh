#!/usr/bin/env bash
# Local development stack without Docker: Kafka (KRaft, jars from Maven Central), ClickHouse and
# Redis (Debian packages), all on 127.0.0.1 with state under $STACK_DIR.
#
#   scripts/stack.sh up|down|status|reset|logs [kafka|clickhouse|redis]
#   STACK_KAFKA_SECURITY=sasl_ssl scripts/stack.sh up   # the secure broker instead of the plain one
#   STACK_KAFKA_NODES=3 scripts/stack.sh up             # a three-node Kafka cluster instead (docs/scale.md)
#
# Servers that already answer on their port are reused and never stopped by `down`; only
# processes whose pid files this script wrote are touched. See usage() for the env vars.
set -euo pipefail

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
REPO_ROOT=$(cd -- "$SCRIPT_DIR/.." && pwd -P)
# shellcheck source=scripts/lib-install.sh
source "$SCRIPT_DIR/lib-install.sh"

STACK_DIR=${STACK_DIR:-$REPO_ROOT/.local}
# Absolute, because pid-file markers and the generated configs embed it and servers run
# from other working directories.
[[ $STACK_DIR == /* ]] || STACK_DIR=$PWD/$STACK_DIR
KAFKA_PORT=${KAFKA_PORT:-9092}
KAFKA_CONTROLLER_PORT=${KAFKA_CONTROLLER_PORT:-9093}
# plaintext: the broker of the tests and `npm start`. sasl_ssl: a second broker with TLS, SASL
# and ACLs (scripts/stack-kafka-secure.sh) on its own ports and state directory, so both run side
# by side; in this mode every command handles that broker (and ClickHouse and Redis as usual).
STACK_KAFKA_SECURITY=${STACK_KAFKA_SECURITY:-plaintext}
# Next to the plain broker's ports by default (9192/9193 beside 9092/9093), so every stack that
# sets its own KAFKA_PORT gets its own secure ports too.
KAFKA_SECURE_PORT=${KAFKA_SECURE_PORT:-$((KAFKA_PORT + 100))}
KAFKA_SECURE_CONTROLLER_PORT=${KAFKA_SECURE_CONTROLLER_PORT:-$((KAFKA_CONTROLLER_PORT + 100))}
case $STACK_KAFKA_SECURITY in
  plaintext) ;;
  sasl_ssl) KAFKA_PORT=$KAFKA_SECURE_PORT KAFKA_CONTROLLER_PORT=$KAFKA_SECURE_CONTROLLER_PORT ;;
  *) printf 'stack: ERROR: STACK_KAFKA_SECURITY=%s (plaintext or sasl_ssl)\n' "$STACK_KAFKA_SECURITY" >&2; exit 2 ;;
esac
KAFKA_HEAP=${KAFKA_HEAP:-512m}
# 1: the single broker. N > 1: a KRaft cluster of N nodes on ports of its own
# (scripts/stack-kafka-cluster.sh), handled by every command in this mode like the secure broker.
STACK_KAFKA_NODES=${STACK_KAFKA_NODES:-1}
CLICKHOUSE_HTTP_PORT=${CLICKHOUSE_HTTP_PORT:-8123}
CLICKHOUSE_TCP_PORT=${CLICKHOUSE_TCP_PORT:-9000}
REDIS_PORT=${REDIS_PORT:-6379}
# Readiness budgets: each starts when its server's process starts, never before the one-time
# steps that precede it (the jar fetch, the storage format), which have bounds of their own.
KAFKA_START_TIMEOUT=${KAFKA_START_TIMEOUT:-60}
KAFKA_FETCH_TIMEOUT=${KAFKA_FETCH_TIMEOUT:-900}
KAFKA_FORMAT_TIMEOUT=${KAFKA_FORMAT_TIMEOUT:-120}
CLICKHOUSE_START_TIMEOUT=${CLICKHOUSE_START_TIMEOUT:-30}
REDIS_START_TIMEOUT=${REDIS_START_TIMEOUT:-10}
STOP_TIMEOUT=${STOP_TIMEOUT:-20}

HOST=127.0.0.1
CLICKHOUSE_SERVER_BIN=/usr/sbin/clickhouse-server
# What a failed install or start names as the way to retry (scripts/test.sh and start.sh set it
# to the command the user ran).
STACK_RETRY="bash scripts/stack.sh up"
[[ $STACK_KAFKA_SECURITY != sasl_ssl ]] || STACK_RETRY="STACK_KAFKA_SECURITY=sasl_ssl $STACK_RETRY"
[[ $STACK_KAFKA_NODES == 1 ]] || STACK_RETRY="STACK_KAFKA_NODES=$STACK_KAFKA_NODES $STACK_RETRY"
STACK_RETRY=${RETRY_COMMAND:-$STACK_RETRY}

usage() {
  cat <<EOF
usage: ${0##*/} up|status|reset
       ${0##*/} down|logs [kafka|clickhouse|redis]

  up      install missing packages/jars, start (or reuse) Kafka, ClickHouse and Redis
  down    stop the servers this script started (reused servers are left alone); with a name,
          only that one (the others keep running)
  status  one line per server; exit status 1 if any is down
  reset   down, then delete all local data (keeps the Kafka jar cache)
  logs    print the last lines of a server's logs (follows them when run in a terminal)

environment (defaults):
  STACK_DIR=$STACK_DIR
  STACK_KAFKA_SECURITY=$STACK_KAFKA_SECURITY (plaintext, or sasl_ssl: the TLS+SASL+ACL broker on
    KAFKA_SECURE_PORT=$KAFKA_SECURE_PORT KAFKA_SECURE_CONTROLLER_PORT=$KAFKA_SECURE_CONTROLLER_PORT, state in \$STACK_DIR/kafka-secure)
  STACK_KAFKA_NODES=$STACK_KAFKA_NODES (1, or a KRaft cluster of 2-9 nodes on KAFKA_CLUSTER_PORT=${KAFKA_CLUSTER_PORT:-9292}...,
    controllers KAFKA_CLUSTER_CONTROLLER_PORT=${KAFKA_CLUSTER_CONTROLLER_PORT:-9392}..., KAFKA_CLUSTER_HEAP=${KAFKA_CLUSTER_HEAP:-384m} each,
    KAFKA_CLUSTER_START_TIMEOUT=${KAFKA_CLUSTER_START_TIMEOUT:-$((KAFKA_START_TIMEOUT * 2))} (seconds, per node),
    state in \$STACK_DIR/kafka-cluster; docs/scale.md)
  KAFKA_PORT=$KAFKA_PORT KAFKA_CONTROLLER_PORT=$KAFKA_CONTROLLER_PORT KAFKA_HEAP=$KAFKA_HEAP
  CLICKHOUSE_HTTP_PORT=$CLICKHOUSE_HTTP_PORT CLICKHOUSE_TCP_PORT=$CLICKHOUSE_TCP_PORT
  STACK_CLICKHOUSE_REPLICAS=$STACK_CLICKHOUSE_REPLICAS (2+: also ZooKeeper and that many ClickHouse replicas of one shard,
    scripts/stack-clickhouse-cluster.sh; docs/scale.md)
  REDIS_PORT=$REDIS_PORT STACK_REDIS_PASSWORD=(empty: none; set: Redis requires it, REDIS_URL=redis://:PASSWORD@...)
  KAFKA_START_TIMEOUT=$KAFKA_START_TIMEOUT CLICKHOUSE_START_TIMEOUT=$CLICKHOUSE_START_TIMEOUT \
REDIS_START_TIMEOUT=$REDIS_START_TIMEOUT (seconds, each from its server's
    process start; Redis gets another REDIS_START_TIMEOUT while its loading progresses) STOP_TIMEOUT=$STOP_TIMEOUT
  KAFKA_FETCH_TIMEOUT=$KAFKA_FETCH_TIMEOUT KAFKA_FORMAT_TIMEOUT=$KAFKA_FORMAT_TIMEOUT APT_TIMEOUT=$APT_TIMEOUT (seconds: the one-time
    jar fetch from Maven Central, storage format, each apt-get step) INSTALL_PROGRESS_INTERVAL=$INSTALL_PROGRESS_INTERVAL
EOF
}

# ---------------------------------------------------------------------------------------------
# helpers

say() { printf '%s: %s\n' "$1" "$2"; }

# Log files are appended to across restarts; remembering their size before a start lets fail()
# show only what this start wrote instead of the previous run's clean shutdown.
declare -A LOG_OFFSET=()
mark_logs() {
  local f
  for f in "$@"; do
    LOG_OFFSET[$f]=$(stat -c %s -- "$f" 2>/dev/null || echo 0)
  done
}

# fail SERVER MESSAGE [LOGFILE...]: the log tails are what make a failed start debuggable
# without knowing where this script keeps its files.
fail() {
  local server=$1 msg=$2 f new
  shift 2
  printf '%s: ERROR: %s\n' "$server" "$msg" >&2
  for f in "$@"; do
    [[ -s $f ]] || continue
    new=$(tail -c +"$((${LOG_OFFSET[$f]:-0} + 1))" -- "$f" | tail -n 40)
    [[ -n $new ]] || continue
    printf -- '----- last 40 lines of %s -----\n%s\n' "$f" "$new" >&2
  done
  exit 1
}

port_open() { (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null; }

# port_owner PORT: who listens there ("java pid 1234"), for the one line that says a port is
# taken; "another process" when ss cannot tell (not root, or no ss).
port_owner() {
  local line
  line=$(ss -Hltnp "sport = :$1" 2>/dev/null | grep -o 'users:(("[^"]*",pid=[0-9]*' | head -n 1 || true)
  if [[ $line =~ \"([^\"]*)\",pid=([0-9]+) ]]; then
    printf '%s pid %s' "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"
  else
    printf 'another process'
  fi
}

# port_taken SERVER PORT VARIABLE [DETAIL]: one line naming the port, who holds it and the way out.
port_taken() {
  printf '%s: ERROR: port :%s is taken by %s%s; stop it or set %s\n' "$1" "$2" "$(port_owner "$2")" "${4:-}" "$3" >&2
  exit 1
}

# Seconds since PID started (0 if unknown): the readiness budget of a server an earlier `up`
# spawned counts from its start, as for one spawned now.
process_age() {
  local age
  age=$(ps -o etimes= -p "$1" 2>/dev/null | tr -d ' ' || true)
  printf '%s\n' "${age:-0}"
}

# A zombie (our child that died during `up` but was not reaped yet) still passes kill -0.
alive() {
  local stat
  [[ -r /proc/$1/stat ]] || return 1
  stat=$(<"/proc/$1/stat") || return 1
  stat=${stat##*) }
  [[ ${stat%% *} != Z ]]
}

# our_pid PIDFILE MARKER [CWD]: prints the recorded pid if that process is alive, its command
# line contains MARKER and (if given) it runs in directory CWD, so a pid recycled by an
# unrelated process, or a server of another STACK_DIR, is never signalled.
our_pid() {
  local pidfile=$1 marker=$2 cwd=${3:-} pid cmdline
  [[ -f $pidfile ]] || return 1
  pid=$(<"$pidfile")
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  alive "$pid" || return 1
  cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
  [[ $cmdline == *"$marker"* ]] || return 1
  if [[ -n $cwd ]]; then
    [[ $(readlink -f "/proc/$pid/cwd" 2>/dev/null) == "$(readlink -f "$cwd")" ]] || return 1
  fi
  printf '%s\n' "$pid"
}

# spawn PIDFILE LOGFILE CMD...: sets SPAWNED_PID. nohup + /dev/null stdin detach the server
# from the terminal; closing fd 9 keeps it from inheriting (and holding forever) our lock.
spawn() {
  local pidfile=$1 logfile=$2
  shift 2
  printf '===== %s starting: %s\n' "$(date -u +%FT%TZ)" "$*" >>"$logfile"
  nohup "$@" >>"$logfile" 2>&1 </dev/null 9>&- &
  SPAWNED_PID=$!
  printf '%s\n' "$SPAWNED_PID" >"$pidfile"
}

# wait_for SECONDS PID CHECK...: 0 when CHECK succeeds, 1 on timeout, 2 if PID exits first
# (so a crashing server is reported immediately rather than after the whole deadline).
wait_for() {
  local end=$((SECONDS + $1)) pid=$2
  shift 2
  until "$@"; do
    alive "$pid" || return 2
    ((SECONDS < end)) || return 1
    sleep 0.25
  done
}

# stop_pid SERVER PIDFILE MARKER [CWD]
stop_pid() {
  local server=$1 pidfile=$2 pid end
  if ! pid=$(our_pid "$pidfile" "${@:3}"); then
    if [[ -f $pidfile ]]; then
      rm -f -- "$pidfile"
      say "$server" "not running (removed stale pid file)"
    else
      return 1
    fi
    return 0
  fi
  kill -TERM "$pid" 2>/dev/null || true
  end=$((SECONDS + STOP_TIMEOUT))
  while alive "$pid" && ((SECONDS < end)); do sleep 0.2; done
  if alive "$pid"; then
    kill -KILL "$pid" 2>/dev/null || true
    while alive "$pid"; do sleep 0.1; done
    say "$server" "pid $pid ignored SIGTERM for ${STOP_TIMEOUT}s; killed it"
  else
    say "$server" "stopped pid $pid"
  fi
  rm -f -- "$pidfile"
}

# Escapes a value for the replacement side of a sed s### expression.
sed_repl() { printf '%s' "$1" | sed -e 's/[\\&#]/\\&/g'; }

# render TEMPLATE OUTPUT NAME=VALUE...: replaces @NAME@ placeholders and refuses to write a
# config that still has one, which would otherwise fail later in a much less obvious way.
render() {
  local template=$1 out=$2 kv args=()
  shift 2
  for kv in "$@"; do
    args+=(-e "s#@${kv%%=*}@#$(sed_repl "${kv#*=}")#g")
  done
  sed "${args[@]}" "$template" >"$out.tmp"
  if grep -q '@[A-Z_]*@' "$out.tmp"; then
    fail stack "unsubstituted placeholder in $out.tmp (from $template)"
  fi
  mv -f -- "$out.tmp" "$out"
}

# ---------------------------------------------------------------------------------------------
# packages

# Packages for whatever is missing, so a fresh Debian machine works and a set-up one never
# touches apt. Java is needed even when Kafka is reused (the metadata check is a JVM tool).
missing_packages() {
  local pkgs=()
  [[ -x $CLICKHOUSE_SERVER_BIN ]] || pkgs+=(clickhouse-server)
  command -v clickhouse-client >/dev/null || pkgs+=(clickhouse-client)
  command -v redis-server >/dev/null || pkgs+=(redis-server)
  command -v redis-cli >/dev/null || pkgs+=(redis-tools)
  command -v curl >/dev/null || pkgs+=(curl)
  command -v java >/dev/null || pkgs+=(default-jre-headless)
  command -v mvn >/dev/null || pkgs+=(maven)
  if ((${#pkgs[@]})); then printf '%s\n' "${pkgs[@]}"; fi
}

ensure_packages() {
  local pkgs created_policy=0
  mapfile -t pkgs < <(missing_packages)
  ((${#pkgs[@]})) || return 0
  if ((EUID != 0)); then
    fail stack "missing packages (${pkgs[*]}); run as root or: apt-get install ${pkgs[*]}"
  fi
  say stack "installing missing Debian packages: ${pkgs[*]} (apt-get, log $STACK_DIR/apt.log; first run only)"
  # The packages' maintainer scripts would start the system clickhouse/redis services on the
  # default ports, which `up` would then "reuse" with the wrong config and data. Debian's
  # policy-rc.d hook (exit 101 = "do not start") prevents that for the duration of the install.
  # Removed also when the install is stopped (Ctrl-C), or nothing would start on this machine again.
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    created_policy=1
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  local rc=0 t0=$SECONDS
  apt_install stack "$STACK_DIR/apt.log" "$STACK_RETRY" "${pkgs[@]}" || rc=$?
  if ((created_policy)); then
    rm -f /usr/sbin/policy-rc.d
    trap - EXIT
  fi
  ((rc == 0)) || install_fail
  say stack "installed ${pkgs[*]} in $((SECONDS - t0))s"
}

# ---------------------------------------------------------------------------------------------
# Kafka

KAFKA_DIR=$STACK_DIR/kafka
# The jar cache is shared by both modes.
KAFKA_LIBS=$STACK_DIR/kafka/libs
KAFKA_TEMPLATE=$REPO_ROOT/deploy/kafka/server.properties.template
if [[ $STACK_KAFKA_SECURITY == sasl_ssl ]]; then
  KAFKA_DIR=$STACK_DIR/kafka-secure
  KAFKA_TEMPLATE=$REPO_ROOT/deploy/kafka/server-secure.properties.template
  # shellcheck source=scripts/stack-kafka-secure.sh
  source "$SCRIPT_DIR/stack-kafka-secure.sh"
fi
# STACK_CLICKHOUSE_REPLICAS=2: ZooKeeper and two ClickHouse replicas beside the single server.
# shellcheck source=scripts/stack-clickhouse-cluster.sh
source "$SCRIPT_DIR/stack-clickhouse-cluster.sh"
KAFKA_POM=$REPO_ROOT/deploy/kafka/pom.xml
KAFKA_PID=$KAFKA_DIR/kafka.pid
KAFKA_PROPS=$KAFKA_DIR/server.properties
# Unique per STACK_DIR, so `down` never matches a broker started from another checkout.
KAFKA_MARKER="kafka.Kafka $KAFKA_PROPS"
KAFKA_STATE=   # reused | started
KAFKA_SPAWNED= # pid of the broker being started
KAFKA_T0=0

kafka_has_jars() { compgen -G "$KAFKA_LIBS/kafka_2.13-*.jar" >/dev/null; }

# The jar cache is stamped with the pom's hash: copy-dependencies only ever adds files, so
# after a version change the old jars would stay on the classpath next to the new ones.
kafka_pom_hash() { sha256sum <"$KAFKA_POM" | cut -d' ' -f1; }

kafka_jars_current() {
  kafka_has_jars && [[ -f $KAFKA_LIBS/.pom.sha256 ]] &&
    [[ $(<"$KAFKA_LIBS/.pom.sha256") == "$(kafka_pom_hash)" ]]
}

# Maven's progress in its log: artifacts downloaded so far and their size.
mvn_progress() {
  local out n mb
  out=$(install_output)
  n=$(grep -c 'Downloaded from' <<<"$out" || true)
  mb=$(grep -o 'Downloaded from .*([0-9.]* [kMG]\{0,1\}B' <<<"$out" | sed 's/.*(//' |
    awk '{ v = $1; if ($2 == "kB") v *= 1e3; else if ($2 == "MB") v *= 1e6; else if ($2 == "GB") v *= 1e9; t += v } END { printf "%.1f", t / 1e6 }')
  printf '%s files, %s MB downloaded' "$n" "$mb"
}

# Maven's reason, on one line: its first [ERROR] without the wrapping of "could not resolve the
# dependencies of the project: the following artifacts ...: <cause> -> [Help 1]".
mvn_cause() {
  install_output | sed -e 's/\x1b\[[0-9;]*m//g' | grep -m 1 '^\[ERROR\] .' | sed -E \
    -e 's/^\[ERROR\] //' -e 's/ -> \[Help [0-9]+\]$//' \
    -e 's/^Failed to execute goal on project [^:]*: //' \
    -e 's/^Could not resolve dependencies for project [^ ]*: //' \
    -e 's/^The following artifacts could not be resolved: ([^ ]+, )*[^ ]+: //' | cut -c1-300 || true
}

# Into a temporary directory beside the cache, moved into place only when complete: a fetch
# that fails or is stopped leaves no partial jar directory for the next run to start a broker
# from. -U: Maven remembers a failed download in ~/.m2 (*.lastUpdated) and would otherwise refuse
# to try again for a day ("was cached in the local repository"); with a filled cache it fetches
# nothing.
kafka_fetch_jars() {
  local reason=$1 new=$KAFKA_LIBS.new t0=$SECONDS
  mkdir -p -- "${KAFKA_LIBS%/*}" "$KAFKA_DIR"
  command -v mvn >/dev/null || fail kafka "mvn not found (apt-get install maven)"
  say kafka "$reason: Kafka $(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$KAFKA_POM") and its dependencies from Maven Central (deploy/kafka/pom.xml) into Maven's cache and $KAFKA_LIBS; log $KAFKA_DIR/mvn.log"
  rm -rf -- "$new"
  if ! INSTALL_PROGRESS=mvn_progress INSTALL_CAUSE=mvn_cause install_run kafka "fetching the broker jars with Maven" \
    "$KAFKA_FETCH_TIMEOUT" KAFKA_FETCH_TIMEOUT "$KAFKA_DIR/mvn.log" "$STACK_RETRY" \
    mvn -U -B -Dstyle.color=never -f "$KAFKA_POM" dependency:copy-dependencies \
    -DoutputDirectory="$new" -DincludeScope=runtime; then
    rm -rf -- "$new"
    install_fail
  fi
  if ! compgen -G "$new/kafka_2.13-*.jar" >/dev/null; then
    rm -rf -- "$new"
    printf 'kafka: ERROR: Maven finished but fetched no kafka_2.13 jar; log %s; retry: %s\n' "$KAFKA_DIR/mvn.log" "$STACK_RETRY" >&2
    exit 1
  fi
  kafka_pom_hash >"$new/.pom.sha256"
  rm -rf -- "$KAFKA_LIBS.old"
  if [[ -d $KAFKA_LIBS ]]; then mv -- "$KAFKA_LIBS" "$KAFKA_LIBS.old"; fi
  mv -- "$new" "$KAFKA_LIBS"
  rm -rf -- "$KAFKA_LIBS.old"
  say kafka "fetched $(compgen -G "$KAFKA_LIBS/*.jar" | wc -l) jars in $((SECONDS - t0))s ($(mvn_progress))"
}

# kafka_java CLASS ARGS...: the storage tools, with a small heap and a bound of their own
# (exit 124 when it is reached).
kafka_java() { timeout "$KAFKA_FORMAT_TIMEOUT" java -Xmx256m -cp "$KAFKA_LIBS/*" "$@"; }

kafka_check_java() {
  local v
  command -v java >/dev/null || fail kafka "java not found (apt-get install default-jre-headless)"
  v=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n1)
  # Kafka 4.x brokers refuse to run on anything older than Java 17.
  [[ -n $v && $v -ge 17 ]] || fail kafka "Kafka 4.x needs Java 17+, found: $(java -version 2>&1 | head -n1)"
}

kafka_begin() {
  local pid
  mkdir -p "$KAFKA_DIR/logs"
  if port_open "$KAFKA_PORT"; then
    KAFKA_STATE=reused
    if pid=$(our_pid "$KAFKA_PID" "$KAFKA_MARKER"); then
      say kafka "reusing server on :$KAFKA_PORT (ours, pid $pid)"
    else
      say kafka "reusing server on :$KAFKA_PORT (external)"
    fi
    # The readiness check at the end of `up` needs the tools jars; never refresh the cache
    # under a running broker of ours, only fill it if it is empty.
    kafka_has_jars || kafka_fetch_jars "fetching Kafka jars with Maven (needed for the metadata check)"
    return 0
  fi
  KAFKA_STATE=started
  if pid=$(our_pid "$KAFKA_PID" "$KAFKA_MARKER"); then
    KAFKA_T0=$((SECONDS - $(process_age "$pid")))
    say kafka "pid $pid is already starting (for $((SECONDS - KAFKA_T0))s); waiting for it"
    KAFKA_SPAWNED=$pid
    return 0
  fi
  if port_open "$KAFKA_CONTROLLER_PORT"; then
    port_taken kafka "$KAFKA_CONTROLLER_PORT" KAFKA_CONTROLLER_PORT " (wanted for the broker's controller)"
  fi
  kafka_check_java
  if ! kafka_has_jars; then
    kafka_fetch_jars "fetching broker jars with Maven (first run only)"
  elif ! kafka_jars_current; then
    kafka_fetch_jars "jar cache does not match deploy/kafka/pom.xml; refreshing it with Maven"
  fi

  local extra=() format_extra=()
  local jvm_extra=()
  if [[ $STACK_KAFKA_SECURITY == sasl_ssl ]]; then
    secure_prepare
    mapfile -t extra < <(secure_render_args)
    mapfile -t format_extra < <(secure_format_args)
    mapfile -t jvm_extra < <(secure_jvm_args)
  fi
  (umask 077 && render "$KAFKA_TEMPLATE" "$KAFKA_PROPS" \
    KAFKA_PORT="$KAFKA_PORT" KAFKA_CONTROLLER_PORT="$KAFKA_CONTROLLER_PORT" \
    KAFKA_DATA_DIR="$KAFKA_DIR/data" "${extra[@]}")

  local log4j=(-Dlog4j2.configurationFile="$REPO_ROOT/deploy/kafka/log4j2.properties"
    -Dkafka.logs.dir="$KAFKA_DIR/logs")

  mark_logs "$KAFKA_DIR/logs/stdout.log" "$KAFKA_DIR/logs/server.log"
  if [[ ! -f $KAFKA_DIR/data/meta.properties ]]; then
    local cid
    if [[ -s $KAFKA_DIR/cluster.id ]]; then
      cid=$(<"$KAFKA_DIR/cluster.id")
    else
      cid=$(kafka_java kafka.tools.StorageTool random-uuid 2>>"$KAFKA_DIR/logs/stdout.log") ||
        fail kafka "could not generate a cluster id" "$KAFKA_DIR/logs/stdout.log"
      printf '%s\n' "$cid" >"$KAFKA_DIR/cluster.id"
    fi
    say kafka "formatting storage in $KAFKA_DIR/data (cluster id $cid)"
    local t0=$SECONDS rc=0
    mkdir -p "$KAFKA_DIR/data"
    # No --standalone: that flag is for the dynamic quorum (controller.quorum.bootstrap.servers)
    # and StorageTool rejects it next to the static controller.quorum.voters we use.
    # Secure mode: the SCRAM users go into the metadata log here (--add-scram).
    kafka_java "${log4j[@]}" kafka.tools.StorageTool format -t "$cid" -c "$KAFKA_PROPS" "${format_extra[@]}" \
      >>"$KAFKA_DIR/logs/stdout.log" 2>&1 || rc=$?
    if ((rc != 0)); then
      # Without meta.properties the directory holds no data, only what the format began: the
      # next run formats it afresh instead of tripping over a half-written one.
      rm -rf -- "${KAFKA_DIR:?}/data"
      ((rc != 124)) || fail kafka "storage format did not finish within ${KAFKA_FORMAT_TIMEOUT}s (KAFKA_FORMAT_TIMEOUT); retry: $STACK_RETRY" "$KAFKA_DIR/logs/stdout.log"
      fail kafka "storage format failed (exit $rc); retry: $STACK_RETRY" "$KAFKA_DIR/logs/stdout.log" "$KAFKA_DIR/logs/server.log"
    fi
    say kafka "formatted storage in $((SECONDS - t0))s"
  fi

  # Same GC settings as Kafka's own kafka-run-class.sh, minus the GC log; ExitOnOutOfMemoryError
  # so an undersized KAFKA_HEAP shows up as a dead broker instead of a hung one.
  spawn "$KAFKA_PID" "$KAFKA_DIR/logs/stdout.log" \
    java "-Xms$KAFKA_HEAP" "-Xmx$KAFKA_HEAP" -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
    -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent \
    -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true "${log4j[@]}" "${jvm_extra[@]}" \
    -cp "$KAFKA_LIBS/*" kafka.Kafka "$KAFKA_PROPS"
  KAFKA_SPAWNED=$SPAWNED_PID
  # The readiness budget starts here, with the broker's JVM: not before the jar fetch or the
  # storage format above, which on a first run can take longer than the whole budget.
  KAFKA_T0=$SECONDS
  say kafka "starting pid $KAFKA_SPAWNED on $HOST:$KAFKA_PORT (readiness checked after the other servers, ${KAFKA_START_TIMEOUT}s from now)"
}

kafka_topics() {
  local auth=()
  if [[ $STACK_KAFKA_SECURITY == sasl_ssl ]]; then auth=(--command-config "$KAFKA_ADMIN_PROPS"); fi
  timeout "$1" java -Xmx256m -cp "$KAFKA_LIBS/*" org.apache.kafka.tools.TopicCommand \
    --bootstrap-server "$HOST:$KAFKA_PORT" "${auth[@]}" --list
}

# Deferred to the end of `up` so the broker's JVM start overlaps with ClickHouse and Redis.
kafka_finish() {
  local logs=("$KAFKA_DIR/logs/stdout.log" "$KAFKA_DIR/logs/server.log") rc=0 left topics
  if [[ $KAFKA_STATE == started ]]; then
    left=$((KAFKA_START_TIMEOUT - (SECONDS - KAFKA_T0)))
    ((left > 0)) || left=1
    wait_for "$left" "$KAFKA_SPAWNED" port_open "$KAFKA_PORT" || rc=$?
    if ((rc == 2)); then
      rm -f -- "$KAFKA_PID"
      fail kafka "broker pid $KAFKA_SPAWNED exited during startup" "${logs[@]}"
    elif ((rc == 1)); then
      fail kafka "broker pid $KAFKA_SPAWNED did not open :$KAFKA_PORT within ${KAFKA_START_TIMEOUT}s of its start (KAFKA_START_TIMEOUT; still running, 'stack.sh down' stops it)" "${logs[@]}"
    fi
    left=$((KAFKA_START_TIMEOUT - (SECONDS - KAFKA_T0)))
  else
    # A server that was already there: its own clock starts with this check.
    left=$KAFKA_START_TIMEOUT
  fi
  # A listening socket is not a working broker (e.g. metadata not loaded yet, or some other
  # program on the port), so do one real metadata round trip. It starts a JVM of its own, so it
  # gets at least 20 s even when the broker used most of its budget to open the port.
  ((left >= 20)) || left=20
  if ! topics=$(kafka_topics "$left" 2>>"$KAFKA_DIR/logs/stdout.log"); then
    if [[ $KAFKA_STATE == reused ]] && ! our_pid "$KAFKA_PID" "$KAFKA_MARKER" >/dev/null; then
      port_taken kafka "$KAFKA_PORT" KAFKA_PORT ", which did not answer a Kafka metadata request within ${left}s"
    fi
    fail kafka "something listens on :$KAFKA_PORT but a Kafka metadata request (TopicCommand --list) failed within ${left}s" "${logs[@]}"
  fi
  local n
  n=$(grep -c . <<<"$topics" || true)
  if [[ $KAFKA_STATE == started ]]; then
    say kafka "started pid $KAFKA_SPAWNED on $HOST:$KAFKA_PORT, ready after $((SECONDS - KAFKA_T0))s ($n topics)"
  else
    say kafka "metadata check ok on $HOST:$KAFKA_PORT ($n topics)"
  fi
}

# Status is deliberately cheap (no JVM): for Kafka "up" means the port accepts connections.
kafka_status() {
  local pid
  if port_open "$KAFKA_PORT"; then
    if pid=$(our_pid "$KAFKA_PID" "$KAFKA_MARKER"); then status_line kafka up "$KAFKA_PORT" "pid $pid"
    else status_line kafka up "$KAFKA_PORT" external; fi
  elif pid=$(our_pid "$KAFKA_PID" "$KAFKA_MARKER"); then
    status_line kafka starting "$KAFKA_PORT" "pid $pid"; return 1
  else
    status_line kafka down "$KAFKA_PORT" -; return 1
  fi
}

kafka_down() { stop_server kafka "$KAFKA_PORT" "$KAFKA_PID" "$KAFKA_MARKER"; }
KAFKA_BOOTSTRAP=$HOST:$KAFKA_PORT
if [[ $STACK_KAFKA_NODES != 1 ]]; then
  # shellcheck source=scripts/stack-kafka-cluster.sh
  source "$SCRIPT_DIR/stack-kafka-cluster.sh"
fi

# ---------------------------------------------------------------------------------------------
# ClickHouse

CH_DIR=$STACK_DIR/clickhouse
CH_PID=$CH_DIR/clickhouse.pid
CH_CONFIG=$CH_DIR/etc/config.xml
CH_MARKER="--config-file=$CH_CONFIG"
CH_URL=http://$HOST:$CLICKHOUSE_HTTP_PORT

ch_query() { curl -sf --max-time 5 --data-binary "$1" "$CH_URL/"; }
ch_ready() { [[ $(curl -sf --max-time 2 "$CH_URL/?query=SELECT%201" 2>/dev/null) == 1 ]]; }

clickhouse_up() {
  local pid rc=0 t0=$SECONDS
  local logs=("$CH_DIR/logs/stdout.log" "$CH_DIR/logs/clickhouse-server.err.log")
  if ch_ready; then
    if pid=$(our_pid "$CH_PID" "$CH_MARKER"); then
      say clickhouse "reusing server on :$CLICKHOUSE_HTTP_PORT (ours, pid $pid, version $(ch_query 'SELECT version()'))"
    else
      say clickhouse "reusing server on :$CLICKHOUSE_HTTP_PORT (external, version $(ch_query 'SELECT version()'))"
    fi
    return 0
  fi
  if pid=$(our_pid "$CH_PID" "$CH_MARKER"); then
    say clickhouse "pid $pid is already starting; waiting for it"
  else
    if port_open "$CLICKHOUSE_HTTP_PORT"; then
      port_taken clickhouse "$CLICKHOUSE_HTTP_PORT" CLICKHOUSE_HTTP_PORT ", which does not answer as ClickHouse"
    fi
    if port_open "$CLICKHOUSE_TCP_PORT"; then
      port_taken clickhouse "$CLICKHOUSE_TCP_PORT" CLICKHOUSE_TCP_PORT " (wanted for ClickHouse's native protocol)"
    fi
    mkdir -p "$CH_DIR"/{etc,logs,data,tmp,user_files,format_schemas}
    render "$REPO_ROOT/deploy/clickhouse/server/config.xml" "$CH_CONFIG" \
      CH_DIR="$CH_DIR" CLICKHOUSE_HTTP_PORT="$CLICKHOUSE_HTTP_PORT" \
      CLICKHOUSE_TCP_PORT="$CLICKHOUSE_TCP_PORT"
    cp -f -- "$REPO_ROOT/deploy/clickhouse/server/users.xml" "$CH_DIR/etc/users.xml"
    mark_logs "${logs[@]}"
    # Foreground mode (no --daemon) so $! is the server itself and nohup owns its output.
    # 18.16 runs fine as root as long as root also owns the data directory, which it does here.
    # The subshell's cd keeps any core dump or relative path inside $CH_DIR.
    (cd "$CH_DIR" && spawn "$CH_PID" "$CH_DIR/logs/stdout.log" \
      "$CLICKHOUSE_SERVER_BIN" "--config-file=$CH_CONFIG")
    pid=$(<"$CH_PID")
  fi
  wait_for "$CLICKHOUSE_START_TIMEOUT" "$pid" ch_ready || rc=$?
  if ((rc == 2)); then
    rm -f -- "$CH_PID"
    fail clickhouse "server pid $pid exited during startup" "${logs[@]}"
  elif ((rc == 1)); then
    fail clickhouse "server pid $pid did not answer on :$CLICKHOUSE_HTTP_PORT within ${CLICKHOUSE_START_TIMEOUT}s (still running; 'stack.sh down' stops it)" "${logs[@]}"
  fi
  say clickhouse "started pid $pid on $HOST:$CLICKHOUSE_HTTP_PORT (tcp :$CLICKHOUSE_TCP_PORT), version $(ch_query 'SELECT version()'), ready after $((SECONDS - t0))s"
}

clickhouse_status() {
  local pid
  if ch_ready; then
    if pid=$(our_pid "$CH_PID" "$CH_MARKER"); then status_line clickhouse up "$CLICKHOUSE_HTTP_PORT" "pid $pid"
    else status_line clickhouse up "$CLICKHOUSE_HTTP_PORT" external; fi
  elif pid=$(our_pid "$CH_PID" "$CH_MARKER"); then
    status_line clickhouse starting "$CLICKHOUSE_HTTP_PORT" "pid $pid"; return 1
  else
    status_line clickhouse down "$CLICKHOUSE_HTTP_PORT" -; return 1
  fi
}

# ---------------------------------------------------------------------------------------------
# Redis

REDIS_DIR=$STACK_DIR/redis
REDIS_PID=$REDIS_DIR/redis.pid
REDIS_LOG=$REDIS_DIR/redis.log
# Redis rewrites its command line to "redis-server 127.0.0.1:PORT", losing our arguments, so
# ownership is recognised by its working directory (--dir) instead; not by the port, so `down`
# still finds it if REDIS_PORT changed in between.
REDIS_MARKER=redis-server

# STACK_REDIS_PASSWORD: the server requires it (the default user's password in the 0600 ACL file,
# so it is not on the command line); the services then need it in REDIS_URL (redis://:password@host:port).
STACK_REDIS_PASSWORD=${STACK_REDIS_PASSWORD:-}
# One redis-cli command against the stack's Redis (with STACK_REDIS_PASSWORD when set), 2 s at most.
redis_cli() {
  local auth=()
  [[ -z $STACK_REDIS_PASSWORD ]] || auth=("REDISCLI_AUTH=$STACK_REDIS_PASSWORD")
  timeout 2 env "${auth[@]}" redis-cli -h "$HOST" -p "$REDIS_PORT" "$@" 2>/dev/null
}

redis_ready() {
  [[ $(redis_cli ping) == PONG ]]
}

# How far Redis has loaded its data set while it starts (loading_loaded_perc of INFO, which it
# answers while loading, unlike PING); nothing once loaded or when it cannot be asked.
redis_loading_percent() {
  redis_cli info persistence | tr -d '\r' | awk -F: '$1 == "loading" && $2 == "1" { loading = 1 } $1 == "loading_loaded_perc" { perc = $2 } END { if (loading) print perc }'
}

# Waits for PING as wait_for does, and on past REDIS_START_TIMEOUT for as long as Redis is loading
# its append-only file and gets further each REDIS_START_TIMEOUT: a large one takes its time
# (1.1 GB of a benchmark's remembered ids loaded in 11 s here, past the old fixed 10 s). Returns
# as wait_for; 3 when the loading stopped moving.
redis_wait_ready() {
  local pid=$1 rc=0 percent previous=''
  wait_for "$REDIS_START_TIMEOUT" "$pid" redis_ready || rc=$?
  while ((rc == 1)); do
    percent=$(redis_loading_percent)
    [[ -n $percent ]] || return 1
    [[ $percent != "$previous" ]] || return 3
    say redis "loading its data set from the append-only file: ${percent}%"
    previous=$percent
    rc=0
    wait_for "$REDIS_START_TIMEOUT" "$pid" redis_ready || rc=$?
  done
  return "$rc"
}

redis_up() {
  local pid rc=0 t0=$SECONDS
  if redis_ready; then
    if pid=$(our_pid "$REDIS_PID" "$REDIS_MARKER" "$REDIS_DIR"); then
      say redis "reusing server on :$REDIS_PORT (ours, pid $pid)"
    else
      say redis "reusing server on :$REDIS_PORT (external)"
    fi
    return 0
  fi
  if pid=$(our_pid "$REDIS_PID" "$REDIS_MARKER" "$REDIS_DIR"); then
    say redis "pid $pid is already starting; waiting for it"
  else
    if port_open "$REDIS_PORT"; then
      port_taken redis "$REDIS_PORT" REDIS_PORT ", which does not answer PING${STACK_REDIS_PASSWORD:+ with STACK_REDIS_PASSWORD}"
    fi
    mkdir -p "$REDIS_DIR"
    mark_logs "$REDIS_LOG"
    # Append-only file, fsynced every second: job progress lives here (rebuildable from the
    # jobs.progress topic), allowance counters too (reconciled from the pipeline), so a
    # restart should keep them. No RDB snapshots. Logging goes to stdout, i.e. $REDIS_LOG.
    # The users live in an ACL file, so the role users setup creates (and saves there: ACL SAVE)
    # survive a restart of Redis; before, a restarted Redis refused every service (WRONGPASS)
    # until `npm start` ran setup again. With an aclfile Redis ignores requirepass, so the default
    # user's password (STACK_REDIS_PASSWORD) goes into the file, as its SHA-256, on every start.
    local acl_file=$REDIS_DIR/users.acl default_user
    if [[ -n $STACK_REDIS_PASSWORD ]]; then
      default_user="user default on #$(printf '%s' "$STACK_REDIS_PASSWORD" | sha256sum | cut -d' ' -f1) ~* &* +@all"
    else
      default_user="user default on nopass ~* &* +@all"
    fi
    (
      umask 077
      { echo "$default_user"; if [[ -f $acl_file ]]; then grep -v '^user default ' "$acl_file" || true; fi; } >"$acl_file.new"
      mv -f -- "$acl_file.new" "$acl_file"
    )
    rm -f -- "$REDIS_DIR/auth.conf" # the requirepass file of earlier versions
    spawn "$REDIS_PID" "$REDIS_LOG" \
      redis-server --aclfile "$acl_file" --port "$REDIS_PORT" --bind "$HOST" --daemonize no --dir "$REDIS_DIR" \
      --pidfile "$REDIS_PID" --save '' --appendonly yes --appendfsync everysec
    pid=$SPAWNED_PID
  fi
  redis_wait_ready "$pid" || rc=$?
  if ((rc == 2)); then
    rm -f -- "$REDIS_PID"
    fail redis "server pid $pid exited during startup" "$REDIS_LOG"
  elif ((rc == 3)); then
    fail redis "server pid $pid stopped loading its data set (no progress in ${REDIS_START_TIMEOUT}s; still running; 'stack.sh down' stops it)" "$REDIS_LOG"
  elif ((rc == 1)); then
    fail redis "server pid $pid did not answer PING on :$REDIS_PORT within ${REDIS_START_TIMEOUT}s (still running; 'stack.sh down' stops it)" "$REDIS_LOG"
  fi
  say redis "started pid $pid on $HOST:$REDIS_PORT${STACK_REDIS_PASSWORD:+ (password required: STACK_REDIS_PASSWORD)}, ready after $((SECONDS - t0))s"
}

redis_status() {
  local pid
  if redis_ready; then
    if pid=$(our_pid "$REDIS_PID" "$REDIS_MARKER" "$REDIS_DIR"); then status_line redis up "$REDIS_PORT" "pid $pid"
    else status_line redis up "$REDIS_PORT" external; fi
  elif pid=$(our_pid "$REDIS_PID" "$REDIS_MARKER" "$REDIS_DIR"); then
    status_line redis starting "$REDIS_PORT" "pid $pid"; return 1
  else
    status_line redis down "$REDIS_PORT" -; return 1
  fi
}

# ---------------------------------------------------------------------------------------------
# crm-sink's key pair for CRM credentials (docs/security.md): made once for the local stack,
# kept under $STACK_DIR (never committed). scripts/start.sh gives the public key to the console
# and the private key to crm-sink only.

CRM_KEYS_DIR=$STACK_DIR/crm-keys

crm_keys_up() {
  if [[ -s $CRM_KEYS_DIR/local.key.pem && -s $CRM_KEYS_DIR/local.pub.pem ]]; then
    say crm-keys "reusing $CRM_KEYS_DIR/local.{key,pub}.pem"
    return 0
  fi
  mkdir -p "$CRM_KEYS_DIR"
  chmod 700 "$CRM_KEYS_DIR"
  (umask 077 && openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:3072 -out "$CRM_KEYS_DIR/local.key.pem" 2>/dev/null) ||
    fail crm-keys "openssl could not make a key pair in $CRM_KEYS_DIR"
  openssl pkey -in "$CRM_KEYS_DIR/local.key.pem" -pubout -out "$CRM_KEYS_DIR/local.pub.pem" 2>/dev/null
  say crm-keys "made $CRM_KEYS_DIR/local.key.pem (crm-sink) and local.pub.pem (console)"
}

# ---------------------------------------------------------------------------------------------
# commands

status_line() { printf '%-11s %-9s %-16s %s\n' "$1" "$2" "$HOST:$3" "$4"; }

# Serialises up/down/reset: two concurrent `up`s would otherwise both start a broker.
take_lock() {
  exec 9>"$STACK_DIR/.stack.lock"
  if ! flock -n 9; then
    say stack "another stack.sh up/down/reset is running; waiting for it"
    flock 9
  fi
}

cmd_up() {
  local t0=$SECONDS
  take_lock
  ensure_packages
  kafka_begin
  clickhouse_up
  redis_up
  kafka_finish
  crm_keys_up
  ((STACK_CLICKHOUSE_REPLICAS < 2)) || clickhouse_cluster_up
  say stack "up in $((SECONDS - t0))s"
  printf 'KAFKA_BROKERS=%s CLICKHOUSE_URL=%s REDIS_URL=%s\n' \
    "$KAFKA_BOOTSTRAP" "$CH_URL" "redis://${STACK_REDIS_PASSWORD:+:<STACK_REDIS_PASSWORD>@}$HOST:$REDIS_PORT"
  if [[ $STACK_KAFKA_SECURITY == sasl_ssl ]]; then
    say kafka "secure broker: client settings per principal in $KAFKA_DIR/env/<user>.env (users: ${SECURE_USERS[*]})"
    say kafka "topics and ACLs: (set -a; source $KAFKA_DIR/env/admin.env; npm run setup)"
  fi
}

# stop_server SERVER PORT PIDFILE MARKER [CWD]
stop_server() {
  local server=$1 port=$2
  if ! stop_pid "$server" "${@:3}"; then
    if port_open "$port"; then
      say "$server" "not started by this script; leaving the server on :$port alone"
    else
      say "$server" "not running"
    fi
  fi
}

# cmd_down [kafka|clickhouse|redis]: every server this script started, or the one named.
cmd_down() {
  local which=${1:-all} beside=
  case $which in
    all | kafka | clickhouse | redis) ;;
    *) usage >&2; exit 2 ;;
  esac
  # The secure broker and the cluster run beside a plain stack that shares ClickHouse and Redis: leave them.
  [[ $STACK_KAFKA_SECURITY != sasl_ssl && $STACK_KAFKA_NODES == 1 ]] || beside=1
  if [[ -n $beside && $which != all && $which != kafka ]]; then
    fail "$which" "shared with the plain stack: stop it with '${0##*/} down $which' without STACK_KAFKA_SECURITY and STACK_KAFKA_NODES"
  fi
  take_lock
  if down_wanted kafka; then kafka_down; fi
  [[ -z $beside ]] || return 0
  if down_wanted clickhouse; then stop_server clickhouse "$CLICKHOUSE_HTTP_PORT" "$CH_PID" "$CH_MARKER"; fi
  if down_wanted redis; then stop_server redis "$REDIS_PORT" "$REDIS_PID" "$REDIS_MARKER" "$REDIS_DIR"; fi
  if [[ $which == all ]] && ((STACK_CLICKHOUSE_REPLICAS >= 2)); then clickhouse_cluster_down; fi
}

# down_wanted SERVER: cmd_down was asked for every server or for this one ($which is cmd_down's).
down_wanted() { [[ $which == all || $which == "$1" ]]; }

cmd_status() {
  local rc=0
  kafka_status || rc=1
  clickhouse_status || rc=1
  redis_status || rc=1
  ((STACK_CLICKHOUSE_REPLICAS < 2)) || clickhouse_cluster_status || rc=1
  return "$rc"
}

cmd_reset() {
  cmd_down
  if [[ $STACK_KAFKA_NODES != 1 ]]; then
    kafka_reset
    return 0
  fi
  # Secure mode: only that broker's data, certificates, passwords and client files.
  if [[ $STACK_KAFKA_SECURITY == sasl_ssl ]]; then
    rm -rf -- "${KAFKA_DIR:?}/data" "${KAFKA_DIR:?}/cluster.id" "${KAFKA_DIR:?}/server.properties" "${KAFKA_DIR:?}/logs" \
      "${KAFKA_DIR:?}/tls" "${KAFKA_DIR:?}/credentials" "${KAFKA_DIR:?}/env" "${KAFKA_DIR:?}/admin.properties"
    say stack "deleted the secure broker's data, certificates and passwords under $KAFKA_DIR; run 'STACK_KAFKA_SECURITY=sasl_ssl ${0##*/} up' to start fresh"
    return 0
  fi
  # ${STACK_DIR:?} guards against an empty STACK_DIR turning these into rm -rf /kafka/...
  rm -rf -- "${KAFKA_DIR:?}/data" "${KAFKA_DIR:?}/cluster.id" \
    "${KAFKA_DIR:?}/server.properties" "${KAFKA_DIR:?}/logs" \
    "${STACK_DIR:?}/clickhouse" "${STACK_DIR:?}/redis"
  say stack "deleted Kafka, ClickHouse and Redis data under $STACK_DIR (kept the jar cache in $KAFKA_LIBS); run '${0##*/} up' to start fresh"
}

cmd_logs() {
  local which=${1:-all} files=() existing=() f
  case $which in
    kafka) files=("$KAFKA_DIR/logs/server.log" "$KAFKA_DIR/logs/stdout.log")
      [[ $STACK_KAFKA_NODES == 1 ]] || mapfile -t files < <(kafka_log_files) ;;
    clickhouse) files=("$CH_DIR/logs/clickhouse-server.log" "$CH_DIR/logs/stdout.log") ;;
    redis) files=("$REDIS_LOG") ;;
    all) files=("$KAFKA_DIR/logs/server.log" "$CH_DIR/logs/clickhouse-server.log" "$REDIS_LOG") ;;
    *) usage >&2; exit 2 ;;
  esac
  for f in "${files[@]}"; do [[ -f $f ]] && existing+=("$f"); done
  ((${#existing[@]})) || { say "$which" "no logs yet under $STACK_DIR"; return 0; }
  # Follow only for a human at a terminal; scripts and pipes get a snapshot and return.
  if [[ -t 1 ]]; then
    exec tail -n 100 -F -- "${existing[@]}"
  else
    tail -n 100 -- "${existing[@]}"
  fi
}

main() {
  local cmd=${1:-}
  [[ -n $cmd ]] || { usage >&2; exit 2; }
  shift
  case $cmd in -h | --help | help) usage; exit 0 ;; esac
  local var
  for var in KAFKA_PORT KAFKA_CONTROLLER_PORT CLICKHOUSE_HTTP_PORT CLICKHOUSE_TCP_PORT REDIS_PORT; do
    # ClickHouse 18.16 silently truncates an out-of-range port to 16 bits.
    if ! [[ ${!var} =~ ^[0-9]+$ ]] || ((${!var} < 1 || ${!var} > 65535)); then
      fail stack "$var=${!var} is not a TCP port"
    fi
  done
  # Only down and logs take a server name; a word after the others was ignored before, so
  # `down redis` stopped every server: refuse what is not understood.
  case $cmd in up | status | reset) (($# == 0)) || { usage >&2; exit 2; } ;; down) (($# <= 1)) || { usage >&2; exit 2; } ;; esac
  mkdir -p "$STACK_DIR"
  case $cmd in
    up) cmd_up ;;
    down) cmd_down "$@" ;;
    status) cmd_status ;;
    reset) cmd_reset ;;
    logs) cmd_logs "$@" ;;
    *) usage >&2; exit 2 ;;
  esac
}

[[ -n ${STACK_NO_MAIN:-} ]] || main "$@"
