# The cluster mode of scripts/stack.sh (STACK_KAFKA_NODES=3): a KRaft cluster of N nodes, each
# broker and controller, on its own ports and under its own state directory, beside the single
# broker (9092/9093) and the secure one (9192/9193). Sourced by stack.sh after its Kafka section:
# it replaces kafka_begin, kafka_finish, kafka_status and kafka_down with cluster versions and
# uses stack.sh's helpers (say, fail, render, spawn, wait_for, our_pid, the jar fetch).
#
#   node i (1..N): client port KAFKA_CLUSTER_PORT+i-1 (9292, 9293, 9294), controller port
#   KAFKA_CLUSTER_CONTROLLER_PORT+i-1 (9392, 9393, 9394), state in $STACK_DIR/kafka-cluster/node-<i>
#   (server.properties, data/, logs/, kafka.pid); one cluster id in $STACK_DIR/kafka-cluster/cluster.id.
#
# `up` starts the nodes that do not answer (so after a node was killed, `up` brings back just
# that one) and waits until every node is a registered broker. `down` stops the nodes and leaves
# ClickHouse and Redis alone (they are shared with the plain stack, as in secure mode).

KAFKA_CLUSTER_DIR=$STACK_DIR/kafka-cluster
KAFKA_CLUSTER_PORT=${KAFKA_CLUSTER_PORT:-9292}
KAFKA_CLUSTER_CONTROLLER_PORT=${KAFKA_CLUSTER_CONTROLLER_PORT:-9392}
# Three JVMs beside ClickHouse, Redis, the single broker and the services on this machine.
KAFKA_CLUSTER_HEAP=${KAFKA_CLUSTER_HEAP:-384m}
# A node restarted after a SIGKILL recovers its logs and catches up on the metadata log before it
# opens its port: twice the single broker's budget, each node from its own start.
KAFKA_CLUSTER_START_TIMEOUT=${KAFKA_CLUSTER_START_TIMEOUT:-$((KAFKA_START_TIMEOUT * 2))}
KAFKA_CLUSTER_TEMPLATE=$REPO_ROOT/deploy/kafka/server-cluster.properties.template
# Replication 3 and min.insync.replicas 2 from three nodes on (the production setting); fewer
# nodes replicate to all of them and need all but one in sync.
CLUSTER_REPLICATION=$((STACK_KAFKA_NODES < 3 ? STACK_KAFKA_NODES : 3))
CLUSTER_MIN_ISR=$((CLUSTER_REPLICATION > 1 ? CLUSTER_REPLICATION - 1 : 1))

cluster_nodes() { seq 1 "$STACK_KAFKA_NODES"; }
cluster_port() { printf '%s\n' "$((KAFKA_CLUSTER_PORT + $1 - 1))"; }
cluster_controller_port() { printf '%s\n' "$((KAFKA_CLUSTER_CONTROLLER_PORT + $1 - 1))"; }
cluster_node_dir() { printf '%s/node-%s\n' "$KAFKA_CLUSTER_DIR" "$1"; }
# Unique per STACK_DIR and node, so `down` never matches a node of another checkout.
cluster_marker() { printf 'kafka.Kafka %s/server.properties\n' "$(cluster_node_dir "$1")"; }
cluster_pid() { our_pid "$(cluster_node_dir "$1")/kafka.pid" "$(cluster_marker "$1")"; }

cluster_bootstrap() {
  local i out=()
  for i in $(cluster_nodes); do out+=("$HOST:$(cluster_port "$i")"); done
  local IFS=,
  printf '%s\n' "${out[*]}"
}

cluster_voters() {
  local i out=()
  for i in $(cluster_nodes); do out+=("$i@$HOST:$(cluster_controller_port "$i")"); done
  local IFS=,
  printf '%s\n' "${out[*]}"
}

cluster_check_settings() {
  [[ $STACK_KAFKA_NODES =~ ^[0-9]+$ ]] && ((STACK_KAFKA_NODES >= 2 && STACK_KAFKA_NODES <= 9)) ||
    fail stack "STACK_KAFKA_NODES=$STACK_KAFKA_NODES: 1 (the single broker) or a cluster of 2 to 9 nodes"
  [[ $STACK_KAFKA_SECURITY == plaintext ]] ||
    fail stack "STACK_KAFKA_NODES=$STACK_KAFKA_NODES with STACK_KAFKA_SECURITY=$STACK_KAFKA_SECURITY: the cluster is plaintext only"
  local var
  for var in KAFKA_CLUSTER_PORT KAFKA_CLUSTER_CONTROLLER_PORT; do
    if ! [[ ${!var} =~ ^[0-9]+$ ]] || ((${!var} < 1 || ${!var} + STACK_KAFKA_NODES - 1 > 65535)); then
      fail stack "$var=${!var} does not leave $STACK_KAFKA_NODES TCP ports"
    fi
  done
}

# Per node: reused | started; the pid being started and its start time.
declare -A CLUSTER_STATE=() CLUSTER_SPAWNED=() CLUSTER_T0=()

# Renders the node's config and formats its storage on the first start (a JVM of a few
# seconds: the nodes' formats run side by side).
cluster_prepare_node() {
  local i=$1 dir
  dir=$(cluster_node_dir "$i")
  mkdir -p "$dir/logs"
  render "$KAFKA_CLUSTER_TEMPLATE" "$dir/server.properties" \
    NODE_ID="$i" KAFKA_PORT="$(cluster_port "$i")" KAFKA_CONTROLLER_PORT="$(cluster_controller_port "$i")" \
    QUORUM_VOTERS="$(cluster_voters)" KAFKA_DATA_DIR="$dir/data" REPLICATION="$CLUSTER_REPLICATION" MIN_ISR="$CLUSTER_MIN_ISR"
  mark_logs "$dir/logs/stdout.log" "$dir/logs/server.log"
  [[ ! -f $dir/data/meta.properties ]] || return 0
  local rc=0 t0=$SECONDS
  mkdir -p "$dir/data"
  kafka_java -Dlog4j2.configurationFile="$REPO_ROOT/deploy/kafka/log4j2.properties" -Dkafka.logs.dir="$dir/logs" \
    kafka.tools.StorageTool format -t "$(<"$KAFKA_CLUSTER_DIR/cluster.id")" -c "$dir/server.properties" \
    >>"$dir/logs/stdout.log" 2>&1 || rc=$?
  if ((rc != 0)); then
    # Without meta.properties the next run formats afresh instead of tripping over a half-written one.
    rm -rf -- "${dir:?}/data"
    fail kafka-$i "storage format failed (exit $rc); retry: $STACK_RETRY" "$dir/logs/stdout.log"
  fi
  say kafka-$i "formatted storage in $dir/data in $((SECONDS - t0))s"
}

cluster_spawn_node() {
  local i=$1 dir
  dir=$(cluster_node_dir "$i")
  spawn "$dir/kafka.pid" "$dir/logs/stdout.log" \
    java "-Xms$KAFKA_CLUSTER_HEAP" "-Xmx$KAFKA_CLUSTER_HEAP" -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
    -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -XX:+ExitOnOutOfMemoryError \
    -Djava.awt.headless=true -Dlog4j2.configurationFile="$REPO_ROOT/deploy/kafka/log4j2.properties" -Dkafka.logs.dir="$dir/logs" \
    -cp "$KAFKA_LIBS/*" kafka.Kafka "$dir/server.properties"
  CLUSTER_SPAWNED[$i]=$SPAWNED_PID
  CLUSTER_T0[$i]=$SECONDS
  CLUSTER_STATE[$i]=started
  say kafka-$i "starting pid $SPAWNED_PID on $HOST:$(cluster_port "$i") (controller :$(cluster_controller_port "$i"))"
}

kafka_begin() {
  cluster_check_settings
  local i pid to_start=() running=0
  mkdir -p "$KAFKA_CLUSTER_DIR"
  for i in $(cluster_nodes); do
    if port_open "$(cluster_port "$i")"; then
      CLUSTER_STATE[$i]=reused
      running=1
      if pid=$(cluster_pid "$i"); then say kafka-$i "reusing node on :$(cluster_port "$i") (ours, pid $pid)"
      else say kafka-$i "reusing node on :$(cluster_port "$i") (external)"; fi
    elif pid=$(cluster_pid "$i"); then
      CLUSTER_STATE[$i]=started CLUSTER_SPAWNED[$i]=$pid CLUSTER_T0[$i]=$((SECONDS - $(process_age "$pid")))
      running=1
      say kafka-$i "pid $pid is already starting; waiting for it"
    else
      port_open "$(cluster_controller_port "$i")" &&
        port_taken kafka-$i "$(cluster_controller_port "$i")" KAFKA_CLUSTER_CONTROLLER_PORT " (wanted for node $i's controller)"
      to_start+=("$i")
    fi
  done
  if ((${#to_start[@]} == 0)); then
    kafka_has_jars || kafka_fetch_jars "fetching Kafka jars with Maven (needed for the metadata check)"
    return 0
  fi
  kafka_check_java
  if ! kafka_has_jars; then
    kafka_fetch_jars "fetching broker jars with Maven (first run only)"
  elif ! kafka_jars_current && ((running == 0)); then
    # Never under running nodes: they would lose their classpath.
    kafka_fetch_jars "jar cache does not match deploy/kafka/pom.xml; refreshing it with Maven"
  fi
  if [[ ! -s $KAFKA_CLUSTER_DIR/cluster.id ]]; then
    kafka_java kafka.tools.StorageTool random-uuid >"$KAFKA_CLUSTER_DIR/cluster.id" 2>>"$KAFKA_CLUSTER_DIR/format.log" ||
      fail kafka "could not generate a cluster id" "$KAFKA_CLUSTER_DIR/format.log"
  fi
  local pids=() failed=0 p
  for i in "${to_start[@]}"; do
    cluster_prepare_node "$i" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || failed=1; done
  ((failed == 0)) || exit 1
  for i in "${to_start[@]}"; do cluster_spawn_node "$i"; done
}

# Waits for every started node's port (each within KAFKA_CLUSTER_START_TIMEOUT of its own start), then
# until the cluster reports all N brokers (BrokerApiVersionsCommand: one metadata round trip
# that lists the registered brokers). A node that opened its port but is not registered yet
# would make topic creation with replication N fail.
kafka_finish() {
  local i rc left dir
  for i in $(cluster_nodes); do
    [[ ${CLUSTER_STATE[$i]} == started ]] || continue
    dir=$(cluster_node_dir "$i")
    rc=0
    left=$((KAFKA_CLUSTER_START_TIMEOUT - (SECONDS - CLUSTER_T0[$i])))
    ((left > 0)) || left=1
    wait_for "$left" "${CLUSTER_SPAWNED[$i]}" port_open "$(cluster_port "$i")" || rc=$?
    if ((rc == 2)); then
      rm -f -- "$dir/kafka.pid"
      fail kafka-$i "node pid ${CLUSTER_SPAWNED[$i]} exited during startup" "$dir/logs/stdout.log" "$dir/logs/server.log"
    elif ((rc == 1)); then
      fail kafka-$i "node pid ${CLUSTER_SPAWNED[$i]} did not open :$(cluster_port "$i") within ${KAFKA_CLUSTER_START_TIMEOUT}s of its start (KAFKA_CLUSTER_START_TIMEOUT)" "$dir/logs/server.log"
    fi
  done
  local end=$((SECONDS + KAFKA_CLUSTER_START_TIMEOUT)) brokers=0 out
  while :; do
    out=$(timeout 30 java -Xmx128m -XX:TieredStopAtLevel=1 -cp "$KAFKA_LIBS/*" org.apache.kafka.tools.BrokerApiVersionsCommand \
      --bootstrap-server "$(cluster_bootstrap)" 2>>"$KAFKA_CLUSTER_DIR/check.log" || true)
    brokers=$(grep -c '(id: [0-9]* rack' <<<"$out" || true)
    ((brokers >= STACK_KAFKA_NODES)) && break
    ((SECONDS < end)) || fail kafka "the cluster reports $brokers of $STACK_KAFKA_NODES brokers after waiting; see $KAFKA_CLUSTER_DIR/node-*/logs/server.log" "$KAFKA_CLUSTER_DIR/check.log"
    sleep 1
  done
  say kafka "cluster of $brokers brokers ready on $(cluster_bootstrap) (replication $CLUSTER_REPLICATION, min.insync.replicas $CLUSTER_MIN_ISR)"
}

kafka_status() {
  local i pid rc=0
  for i in $(cluster_nodes); do
    if port_open "$(cluster_port "$i")"; then
      if pid=$(cluster_pid "$i"); then status_line kafka-$i up "$(cluster_port "$i")" "pid $pid"
      else status_line kafka-$i up "$(cluster_port "$i")" external; fi
    elif pid=$(cluster_pid "$i"); then
      status_line kafka-$i starting "$(cluster_port "$i")" "pid $pid"
      rc=1
    else
      status_line kafka-$i down "$(cluster_port "$i")" -
      rc=1
    fi
  done
  return "$rc"
}

# All nodes at once: one after the other, the last would wait (STOP_TIMEOUT, then SIGKILL) for a
# controlled shutdown that needs a controller quorum no longer there.
kafka_down() {
  local i pids=() p
  for i in $(cluster_nodes); do
    stop_server kafka-$i "$(cluster_port "$i")" "$(cluster_node_dir "$i")/kafka.pid" "$(cluster_marker "$i")" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || true; done
}

kafka_reset() {
  rm -rf -- "${KAFKA_CLUSTER_DIR:?}"
  say stack "deleted the Kafka cluster's data under $KAFKA_CLUSTER_DIR; run 'STACK_KAFKA_NODES=$STACK_KAFKA_NODES ${0##*/} up' to start fresh"
}

kafka_log_files() {
  local i
  for i in $(cluster_nodes); do printf '%s\n' "$(cluster_node_dir "$i")/logs/server.log"; done
}

KAFKA_BOOTSTRAP=$(cluster_bootstrap)
