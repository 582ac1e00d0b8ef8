#!/usr/bin/env bash
# Replicated ClickHouse for the local stack (docs/scale.md, "Replicated ClickHouse"): ZooKeeper
# (Debian's zookeeper package) and STACK_CLICKHOUSE_REPLICAS ClickHouse 18.16 servers as replicas
# of one shard of the cluster CLICKHOUSE_CLUSTER_NAME, each on its own ports, with state under
# $STACK_DIR/clickhouse-cluster/. The default single server (8123/9000) is not touched.
#
# Sourced by stack.sh (`STACK_CLICKHOUSE_REPLICAS=2 bash scripts/stack.sh up|down|status`), or
# run alone, which the scale tests do to start the cluster and to restart a replica they killed:
#   bash scripts/stack-clickhouse-cluster.sh up|down|status
#   bash scripts/stack-clickhouse-cluster.sh start-replica N     # N = 1, 2, ...
# Replica N listens on CLICKHOUSE_REPLICA_HTTP_PORT+N-1 (8223, 8224), the native protocol on
# CLICKHOUSE_REPLICA_TCP_PORT+N-1 (9100, 9101), interserver on CLICKHOUSE_REPLICA_INTERSERVER_PORT+N-1
# (9109, 9110). Then: CLICKHOUSE_CLUSTER=ingest_cluster CLICKHOUSE_URL=http://127.0.0.1:8223,http://127.0.0.1:8224.

if [[ -z ${STACK_NO_MAIN:-} && ${BASH_SOURCE[0]} == "$0" ]]; then
  # Alone: stack.sh's helpers (spawn, render, wait_for, fail...) without its main. stack.sh
  # sources this file again meanwhile; STACK_NO_MAIN keeps that copy from acting.
  set -euo pipefail
  STACK_NO_MAIN=1
  # shellcheck source=scripts/stack.sh
  source "$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)/stack.sh"
  CHC_STANDALONE=1
fi

STACK_CLICKHOUSE_REPLICAS=${STACK_CLICKHOUSE_REPLICAS:-0}
CLICKHOUSE_CLUSTER_NAME=${CLICKHOUSE_CLUSTER_NAME:-ingest_cluster}
CLICKHOUSE_REPLICA_HTTP_PORT=${CLICKHOUSE_REPLICA_HTTP_PORT:-8223}
CLICKHOUSE_REPLICA_TCP_PORT=${CLICKHOUSE_REPLICA_TCP_PORT:-9100}
CLICKHOUSE_REPLICA_INTERSERVER_PORT=${CLICKHOUSE_REPLICA_INTERSERVER_PORT:-9109}
ZOOKEEPER_PORT=${ZOOKEEPER_PORT:-2181}
ZOOKEEPER_HEAP=${ZOOKEEPER_HEAP:-128m}
ZOOKEEPER_START_TIMEOUT=${ZOOKEEPER_START_TIMEOUT:-30}
ZOOKEEPER_JAR=/usr/share/java/zookeeper.jar

CHC_DIR=$STACK_DIR/clickhouse-cluster
ZK_DIR=$CHC_DIR/zookeeper
ZK_PID=$ZK_DIR/zookeeper.pid
ZK_CONFIG=$ZK_DIR/zoo.cfg
ZK_MARKER="QuorumPeerMain $ZK_CONFIG"

# ZooKeeper's four-letter `srvr`: a `Mode:` line only once it serves requests (`ruok` answers
# `imok` earlier, while it still loads its data, and a replica started then exits on its tables).
zk_ready() {
  local answer=''
  { exec 3<>"/dev/tcp/$HOST/$ZOOKEEPER_PORT"; } 2>/dev/null || return 1
  printf srvr >&3
  answer=$(timeout 2 cat <&3 2>/dev/null || true)
  exec 3>&- 3<&-
  [[ $answer == *"Mode: "* ]]
}

replica_dir() { printf '%s/replica-%s' "$CHC_DIR" "$1"; }
replica_http_port() { printf '%s' $((CLICKHOUSE_REPLICA_HTTP_PORT + $1 - 1)); }
replica_tcp_port() { printf '%s' $((CLICKHOUSE_REPLICA_TCP_PORT + $1 - 1)); }
replica_ready() { [[ $(curl -sf --max-time 2 "http://$HOST:$(replica_http_port "$1")/?query=SELECT%201" 2>/dev/null) == 1 ]]; }
replica_marker() { printf -- '--config-file=%s/etc/config.xml' "$(replica_dir "$1")"; }

cluster_check_settings() {
  [[ $STACK_CLICKHOUSE_REPLICAS =~ ^[0-9]+$ ]] && ((STACK_CLICKHOUSE_REPLICAS >= 2 && STACK_CLICKHOUSE_REPLICAS <= 9)) ||
    fail clickhouse-cluster "STACK_CLICKHOUSE_REPLICAS=$STACK_CLICKHOUSE_REPLICAS (2 to 9 replicas; unset for the single server only)"
  [[ $CLICKHOUSE_CLUSTER_NAME =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || fail clickhouse-cluster "CLICKHOUSE_CLUSTER_NAME=$CLICKHOUSE_CLUSTER_NAME is not a plain name"
}

cluster_ensure_packages() {
  [[ -f $ZOOKEEPER_JAR ]] && [[ -x $CLICKHOUSE_SERVER_BIN ]] && command -v java >/dev/null && return 0
  ((EUID == 0)) || fail clickhouse-cluster "missing packages; run as root or: apt-get install zookeeper clickhouse-server default-jre-headless"
  local rc=0
  say clickhouse-cluster "installing Debian packages zookeeper clickhouse-server (log $STACK_DIR/apt.log; first run only)"
  apt_install clickhouse-cluster "$STACK_DIR/apt.log" "STACK_CLICKHOUSE_REPLICAS=$STACK_CLICKHOUSE_REPLICAS $STACK_RETRY" zookeeper clickhouse-server default-jre-headless || rc=$?
  ((rc == 0)) || install_fail
}

zookeeper_up() {
  local pid rc=0 t0=$SECONDS
  if zk_ready; then
    say zookeeper "reusing server on :$ZOOKEEPER_PORT"
    return 0
  fi
  if ! pid=$(our_pid "$ZK_PID" "$ZK_MARKER"); then
    port_open "$ZOOKEEPER_PORT" && port_taken zookeeper "$ZOOKEEPER_PORT" ZOOKEEPER_PORT ", which does not answer as ZooKeeper"
    mkdir -p "$ZK_DIR/data" "$ZK_DIR/logs"
    printf '%s\n' "tickTime=2000" "dataDir=$ZK_DIR/data" "clientPort=$ZOOKEEPER_PORT" "clientPortAddress=$HOST" \
      "admin.enableServer=false" "4lw.commands.whitelist=srvr" "autopurge.purgeInterval=1" >"$ZK_CONFIG"
    mark_logs "$ZK_DIR/logs/stdout.log"
    (cd "$ZK_DIR" && spawn "$ZK_PID" "$ZK_DIR/logs/stdout.log" \
      java "-Xmx$ZOOKEEPER_HEAP" -cp "$ZOOKEEPER_JAR" org.apache.zookeeper.server.quorum.QuorumPeerMain "$ZK_CONFIG")
    pid=$(<"$ZK_PID")
  fi
  wait_for "$ZOOKEEPER_START_TIMEOUT" "$pid" zk_ready || rc=$?
  ((rc != 2)) || fail zookeeper "pid $pid exited during startup" "$ZK_DIR/logs/stdout.log"
  ((rc != 1)) || fail zookeeper "pid $pid did not answer on :$ZOOKEEPER_PORT within ${ZOOKEEPER_START_TIMEOUT}s" "$ZK_DIR/logs/stdout.log"
  say zookeeper "started pid $pid on $HOST:$ZOOKEEPER_PORT, ready after $((SECONDS - t0))s"
}

# The <replica> entries of remote_servers, on one line (render substitutes line by line).
cluster_replicas_xml() {
  local n out=''
  for ((n = 1; n <= STACK_CLICKHOUSE_REPLICAS; n++)); do
    out+="<replica><host>$HOST</host><port>$(replica_tcp_port "$n")</port></replica>"
  done
  printf '%s' "$out"
}

replica_up() {
  local n=$1 dir pid rc=0 t0=$SECONDS http tcp
  dir=$(replica_dir "$n") http=$(replica_http_port "$n") tcp=$(replica_tcp_port "$n")
  local logs=("$dir/logs/stdout.log" "$dir/logs/clickhouse-server.err.log")
  if replica_ready "$n"; then
    say clickhouse-cluster "reusing replica $n on :$http"
    return 0
  fi
  if ! pid=$(our_pid "$dir/clickhouse.pid" "$(replica_marker "$n")"); then
    port_open "$http" && port_taken clickhouse-cluster "$http" CLICKHOUSE_REPLICA_HTTP_PORT " (replica $n)"
    port_open "$tcp" && port_taken clickhouse-cluster "$tcp" CLICKHOUSE_REPLICA_TCP_PORT " (replica $n)"
    mkdir -p "$dir"/{etc/config.d,logs,data,tmp,user_files,format_schemas}
    render "$REPO_ROOT/deploy/clickhouse/server/config.xml" "$dir/etc/config.xml" \
      CH_DIR="$dir" CLICKHOUSE_HTTP_PORT="$http" CLICKHOUSE_TCP_PORT="$tcp"
    render "$REPO_ROOT/deploy/clickhouse/server/cluster.xml" "$dir/etc/config.d/cluster.xml" \
      INTERSERVER_PORT=$((CLICKHOUSE_REPLICA_INTERSERVER_PORT + n - 1)) ZOOKEEPER_PORT="$ZOOKEEPER_PORT" \
      REPLICA_NAME="replica-$n" CLUSTER="$CLICKHOUSE_CLUSTER_NAME" REPLICAS="$(cluster_replicas_xml)"
    cp -f -- "$REPO_ROOT/deploy/clickhouse/server/users.xml" "$dir/etc/users.xml"
    mark_logs "${logs[@]}"
    (cd "$dir" && spawn "$dir/clickhouse.pid" "$dir/logs/stdout.log" "$CLICKHOUSE_SERVER_BIN" "--config-file=$dir/etc/config.xml")
    pid=$(<"$dir/clickhouse.pid")
  fi
  wait_for "$CLICKHOUSE_START_TIMEOUT" "$pid" replica_ready "$n" || rc=$?
  if ((rc == 2)); then
    rm -f -- "$dir/clickhouse.pid"
    fail clickhouse-cluster "replica $n (pid $pid) exited during startup" "${logs[@]}"
  fi
  ((rc != 1)) || fail clickhouse-cluster "replica $n (pid $pid) did not answer on :$http within ${CLICKHOUSE_START_TIMEOUT}s" "${logs[@]}"
  say clickhouse-cluster "replica $n: pid $pid on $HOST:$http (tcp :$tcp), ready after $((SECONDS - t0))s"
}

clickhouse_cluster_up() {
  local n urls=()
  cluster_check_settings
  cluster_ensure_packages
  zookeeper_up
  for ((n = 1; n <= STACK_CLICKHOUSE_REPLICAS; n++)); do
    replica_up "$n"
    urls+=("http://$HOST:$(replica_http_port "$n")")
  done
  local IFS=,
  printf 'CLICKHOUSE_CLUSTER=%s CLICKHOUSE_URL=%s\n' "$CLICKHOUSE_CLUSTER_NAME" "${urls[*]}"
}

clickhouse_cluster_down() {
  local n
  cluster_check_settings
  for ((n = 1; n <= STACK_CLICKHOUSE_REPLICAS; n++)); do
    stop_server clickhouse-replica-"$n" "$(replica_http_port "$n")" "$(replica_dir "$n")/clickhouse.pid" "$(replica_marker "$n")"
  done
  stop_server zookeeper "$ZOOKEEPER_PORT" "$ZK_PID" "$ZK_MARKER"
}

clickhouse_cluster_status() {
  local n rc=0
  cluster_check_settings
  if zk_ready; then status_line zookeeper up "$ZOOKEEPER_PORT" -; else status_line zookeeper down "$ZOOKEEPER_PORT" -; rc=1; fi
  for ((n = 1; n <= STACK_CLICKHOUSE_REPLICAS; n++)); do
    if replica_ready "$n"; then status_line "replica-$n" up "$(replica_http_port "$n")" -
    else status_line "replica-$n" down "$(replica_http_port "$n")" -; rc=1; fi
  done
  return "$rc"
}

if [[ ${CHC_STANDALONE:-} == 1 ]]; then
  [[ $STACK_CLICKHOUSE_REPLICAS != 0 ]] || STACK_CLICKHOUSE_REPLICAS=2
  mkdir -p "$STACK_DIR"
  case ${1:-} in
    up) take_lock && clickhouse_cluster_up ;;
    down) take_lock && clickhouse_cluster_down ;;
    status) clickhouse_cluster_status ;;
    start-replica)
      [[ ${2:-} =~ ^[1-9]$ ]] || fail clickhouse-cluster "start-replica N: N is a replica number (1 to $STACK_CLICKHOUSE_REPLICAS)"
      cluster_check_settings
      replica_up "$2"
      ;;
    *) printf 'usage: %s up|down|status|start-replica N\n' "${0##*/}" >&2; exit 2 ;;
  esac
fi
