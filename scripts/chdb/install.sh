#!/usr/bin/env bash
# The current-engine tests' engines (docs/clickhouse.md, "Current-engine tests"): ClickHouse's
# engine in-process from PyPI, each in a venv of its own under .local/chdb/:
#   chdb-core 26.9.0  the newest engine (ClickHouse 26.9)
#   chdb 2.1.1        the oldest current server the project supports (ClickHouse 24.8 LTS)
# Installed with --no-deps: the engine needs none of the pandas/pyarrow extras, so a new machine
# downloads two wheels (about 180 MB and 140 MB) and nothing else; pip's cache is reused when
# present. Idempotent: a venv with the pinned version is kept; a failed install leaves no venv.
# Bounded by CHDB_INSTALL_TIMEOUT seconds per engine, progress every few seconds, and one line
# naming the cause, the log and the retry command when it fails (scripts/lib-install.sh).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

CHDB_INSTALL_TIMEOUT=${CHDB_INSTALL_TIMEOUT:-600}
CHDB_DIR="$STACK_DIR/chdb"
# name=pip requirement; the name is the venv's folder and what the tests call the engine
# (testkit/src/chdb/chdb.fixture.ts reads the same list).
ENGINES=("chdb-core-26.9.0=chdb-core==26.9.0" "chdb-2.1.1=chdb==2.1.1")

# pip's progress: the wheel it is downloading and how much of it so far.
chdb_progress() {
  install_output | grep -E '^(Collecting|Downloading|Installing|  Downloading)' | tail -n 1 | sed 's/^ *//' | cut -c1-120 || true
}
chdb_cause() {
  local e
  e=$(install_output | grep -m 1 '^ERROR: ' | sed 's/ (from versions:.*//' | cut -c1-300 || true)
  printf '%s' "${e:-$(install_last_line)}"
}

for engine in "${ENGINES[@]}"; do
  name=${engine%%=*} requirement=${engine#*=}
  venv="$CHDB_DIR/$name"
  [[ -f "$venv/.installed" ]] && continue
  step "installing $requirement (PyPI, the ClickHouse engine for the current-engine tests) into $venv (log $CHDB_DIR/install.log)"
  rm -rf "$venv"
  mkdir -p "$CHDB_DIR"
  if ! python3 -m venv "$venv" 2>/dev/null; then
    # Debian's own python3 keeps venv support in a separate package.
    rm -rf "$venv"
    apt_install apt "$STACK_DIR/apt.log" "$RETRY_COMMAND" python3-venv || install_fail
    python3 -m venv "$venv"
  fi
  if ! INSTALL_PROGRESS=chdb_progress INSTALL_CAUSE=chdb_cause install_run chdb "installing $requirement with pip" \
    "$CHDB_INSTALL_TIMEOUT" CHDB_INSTALL_TIMEOUT "$CHDB_DIR/install.log" "$RETRY_COMMAND" \
    "$venv/bin/pip" install --no-deps --disable-pip-version-check --progress-bar off "$requirement"; then
    rm -rf "$venv"
    install_fail
  fi
  # Written last: a venv without it is taken as half-installed and redone.
  touch "$venv/.installed"
done
