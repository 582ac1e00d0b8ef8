#!/usr/bin/env bash
# HAProxy from Debian (the `haproxy` package), the load balancer of the gateways-behind-a-load-
# balancer scale tests (docs/scale.md, "Gateways behind a load balancer"; deploy/haproxy/).
# Idempotent: nothing happens when `haproxy` is on PATH. Bounded by APT_TIMEOUT, one line naming
# the cause, the log and the retry command when it fails (scripts/lib-install.sh).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
PATH="$PATH:/usr/sbin:/sbin"
mkdir -p "$STACK_DIR"
ensure_apt_tool haproxy haproxy
