# Shared by scripts/start.sh and scripts/test.sh: repository paths, the local stack's
# addresses (same variables and defaults as scripts/stack.sh) and the npm dependency check.
# shellcheck shell=bash

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STACK_DIR="${STACK_DIR:-$ROOT/.local}"
export KAFKA_BROKERS="${KAFKA_BROKERS:-127.0.0.1:${KAFKA_PORT:-9092}}"
export CLICKHOUSE_URL="${CLICKHOUSE_URL:-http://127.0.0.1:${CLICKHOUSE_HTTP_PORT:-8123}}"
# STACK_REDIS_PASSWORD (scripts/stack.sh starts Redis with it) goes into the URL, URL-encoded.
if [[ -z "${REDIS_URL:-}" && -n "${STACK_REDIS_PASSWORD:-}" ]]; then
  REDIS_URL="redis://:$(node -e 'process.stdout.write(encodeURIComponent(process.argv[1]))' "$STACK_REDIS_PASSWORD")@127.0.0.1:${REDIS_PORT:-6379}"
fi
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:${REDIS_PORT:-6379}}"

step() { printf '\n==> %s\n' "$*"; }

# ensure_node: Node 24 first on PATH (installed under .local from the npm registry if need be).
source "$ROOT/scripts/node-runtime.sh"

# npm ci when node_modules is missing, older than the lockfile, or installed by another Node
# major; otherwise nothing. Call ensure_node first.
ensure_node_modules() {
  local marker="$ROOT/node_modules/.package-lock.json" installed_by="$ROOT/node_modules/.node-major"
  if [[ ! -f "$marker" || "$ROOT/package-lock.json" -nt "$marker" || "$(cat "$installed_by" 2>/dev/null)" != "$NODE_MAJOR" ]]; then
    step "installing npm dependencies (npm ci, on Node $(node --version))"
    (cd "$ROOT" && npm ci --no-audit --no-fund)
    echo "$NODE_MAJOR" >"$installed_by"
  else
    step "npm dependencies are up to date"
  fi
}

# ensure_apt_tool COMMAND PACKAGE: installs a Debian package for a check tool when missing.
# The first try uses the package lists as they are; a fresh machine has none, so on failure
# the lists are updated once and the install retried.
ensure_apt_tool() {
  command -v "$1" >/dev/null && return 0
  step "installing $2 (Debian package, for the checks)"
  local install=(env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$2")
  "${install[@]}" >/dev/null 2>&1 || { apt-get update -q >/dev/null && "${install[@]}" >/dev/null; }
}

# A loopback port that was free a moment ago.
free_port() { node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"; }
