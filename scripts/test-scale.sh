#!/usr/bin/env bash
# `npm run test:scale`: the scale tests (docs/scale.md), not part of `npm test` (which runs only
# the `scale-smoke` project). Installs what is missing (Node, npm dependencies), starts what the
# tests need through scripts/stack.sh (the three-node Kafka cluster on its own ports, beside the
# single broker; ClickHouse and Redis are started or reused), the chaos tests of the Kafka driver
# npm test leaves out, then `vitest run --project scale`.
# Arguments go to vitest (e.g. a file name). The cluster is left running; stop it with
# `STACK_KAFKA_NODES=3 bash scripts/stack.sh down`.
set -euo pipefail
export RETRY_COMMAND="${RETRY_COMMAND:-npm run test:scale}"
export STACK_KAFKA_NODES="${STACK_KAFKA_NODES:-3}"
KAFKA_CLUSTER_PORT="${KAFKA_CLUSTER_PORT:-9292}"
# The tests' servers: the cluster's bootstrap list instead of the single broker (lib.sh keeps a
# KAFKA_BROKERS that is set).
brokers=()
for ((i = 0; i < STACK_KAFKA_NODES; i++)); do brokers+=("127.0.0.1:$((KAFKA_CLUSTER_PORT + i))"); done
KAFKA_BROKERS=$(IFS=,; printf '%s' "${brokers[*]}")
export KAFKA_BROKERS KAFKA_CLUSTER_PORT
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

step "Node runtime"
ensure_node
ensure_node_modules

step "local stack with a ${STACK_KAFKA_NODES}-node Kafka cluster (scripts/stack.sh)"
bash scripts/stack.sh up

# The chaos scenarios that run for every Kafka driver (a stalled broker, a restarted one,
# liveness) run the default driver in npm test; here the other one, on the single broker they
# pause and restart (testkit's chaosKafkaDrivers; docs/development.md). Not when arguments or
# SCALE_PROJECT pick tests.
if (($# == 0)) && [[ ${SCALE_PROJECT:-scale} == scale ]]; then
  step "chaos tests of the other Kafka driver (kafkajs; the single broker)"
  STACK_KAFKA_NODES=1 bash scripts/stack.sh up
  KAFKA_BROKERS=127.0.0.1:${KAFKA_PORT:-9092} CHAOS_KAFKA_DRIVERS=kafkajs \
    npx vitest run --project chaos contract.chaos broker-pause liveness
fi

step "scale tests (KAFKA_BROKERS=$KAFKA_BROKERS)"
exec npx vitest run --project "${SCALE_PROJECT:-scale}" "$@"
