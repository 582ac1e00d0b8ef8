# Shared by scripts/start.sh and scripts/test.sh: repository paths, the local stack's
# addresses (same variables and defaults as scripts/stack.sh) and the npm dependency check.
# shellcheck shell=bash

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/lib-install.sh
source "$ROOT/scripts/lib-install.sh"
# What a failed install names as the way to retry: the command the user ran (scripts/test.sh and
# scripts/start.sh export it, so the scripts they call say it too), else this script.
RETRY_COMMAND="${RETRY_COMMAND:-bash ${0#"$ROOT"/}}"
NPM_CI_TIMEOUT="${NPM_CI_TIMEOUT:-900}"
STACK_DIR="${STACK_DIR:-$ROOT/.local}"
export KAFKA_BROKERS="${KAFKA_BROKERS:-127.0.0.1:${KAFKA_PORT:-9092}}"
export CLICKHOUSE_URL="${CLICKHOUSE_URL:-http://127.0.0.1:${CLICKHOUSE_HTTP_PORT:-8123}}"
# STACK_REDIS_PASSWORD (scripts/stack.sh starts Redis with it) goes into the URL, URL-encoded.
if [[ -z "${REDIS_URL:-}" && -n "${STACK_REDIS_PASSWORD:-}" ]]; then
  REDIS_URL="redis://:$(node -e 'process.stdout.write(encodeURIComponent(process.argv[1]))' "$STACK_REDIS_PASSWORD")@127.0.0.1:${REDIS_PORT:-6379}"
fi
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:${REDIS_PORT:-6379}}"

step() { printf '\n==> %s\n' "$*"; }

# The gateway only reads ClickHouse: as the stack's read-only user (users.xml, readonly = 1), as
# the manifests run it. Every script that starts a gateway passes these.
GATEWAY_READER_ENV=("CLICKHOUSE_USER=${GATEWAY_CLICKHOUSE_USER:-ingest_reader}" "CLICKHOUSE_PASSWORD=${GATEWAY_CLICKHOUSE_PASSWORD:-ingest-reader-local}")

# ensure_node: Node 24 first on PATH (installed under .local from the npm registry if need be).
source "$ROOT/scripts/node-runtime.sh"

# npm ci's progress: packages in node_modules so far, of those the lockfile lists.
npm_progress() {
  local have
  have=$(find "$ROOT/node_modules" -regextype posix-extended -regex '.*/node_modules/(@[^/]+/)?[^/]+/package\.json' 2>/dev/null | wc -l)
  printf '%s of about %s packages in node_modules' "$have" "$(grep -c '"node_modules/' "$ROOT/package-lock.json" || true)"
}

# npm's reason: its first error lines (the code, then what failed).
npm_cause() {
  install_output | grep -E '^npm (error|ERR!) ' | head -n 2 | sed -E 's/^npm (error|ERR!) //' | awk 'NR > 1 { printf "; " } { printf "%s", $0 }' | cut -c1-300 || true
}

# npm ci when node_modules is missing, older than the lockfile, or installed by another Node
# major (call ensure_node first); otherwise nothing. npm ci
# deletes node_modules first, and the marker (.package-lock.json) is written last, so a run
# that fails or is stopped leaves no node_modules that the next run would take as complete.
ensure_node_modules() {
  local marker="$ROOT/node_modules/.package-lock.json" installed_by="$ROOT/node_modules/.node-major" log="$STACK_DIR/npm-ci.log" t0=$SECONDS
  if [[ ! -f "$marker" || "$ROOT/package-lock.json" -nt "$marker" || "$(cat "$installed_by" 2>/dev/null)" != "$NODE_MAJOR" ]]; then
    step "installing npm dependencies (npm ci on Node $(node --version): the packages of package-lock.json from the npm registry; log $log)"
    pushd "$ROOT" >/dev/null
    if ! INSTALL_PROGRESS=npm_progress INSTALL_CAUSE=npm_cause install_run npm "npm ci" "$NPM_CI_TIMEOUT" NPM_CI_TIMEOUT "$log" "$RETRY_COMMAND" \
      npm ci --no-audit --no-fund; then
      rm -f -- "$marker"
      install_fail
    fi
    popd >/dev/null
    # npm's own summary and warnings (engines, deprecations), as it would have printed them.
    install_output
    echo "$NODE_MAJOR" >"$installed_by"
    echo "npm ci done in $((SECONDS - t0))s"
  else
    step "npm dependencies are up to date"
  fi
}

# ensure_apt_tool COMMAND PACKAGE: installs a Debian package for a check tool when missing
# (scripts/lib-install.sh: bounded by APT_TIMEOUT, one line when it fails).
ensure_apt_tool() {
  command -v "$1" >/dev/null && return 0
  step "installing $2 (Debian package, for the checks; log $STACK_DIR/apt.log)"
  apt_install apt "$STACK_DIR/apt.log" "$RETRY_COMMAND" "$2" || install_fail
}

# A loopback port that was free a moment ago.
# A free port below the kernel's ephemeral range (ip_local_port_range), so that an outbound
# connection of a process already running cannot take it between this check and the listen
# (a port from listen(0) is ephemeral: that race failed the bundle check once).
free_port() {
  node -e "
    const net = require('net');
    const low = Number((require('fs').readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\\s+/)[0]) || 32768);
    const tryPort = (n) => {
      if (n === 0) throw new Error('no free port below ' + low);
      const port = 20000 + Math.floor(Math.random() * (low - 20000));
      const s = net.createServer().once('error', () => tryPort(n - 1)).listen(port, '127.0.0.1', () => { console.log(port); s.close(); });
    };
    tryPort(50);
  "
}
