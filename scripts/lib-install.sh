# One-time installs (the Kafka jars from Maven Central, Debian packages, npm ci, schemathesis from
# PyPI), shared by scripts/stack.sh and scripts/lib.sh. On a machine that has never run the
# project each of them may take minutes, so each one says what it fetches, prints how far it is
# every INSTALL_PROGRESS_INTERVAL seconds, has a time bound of its own (never a server's readiness
# budget), and when it fails or runs out of time prints one line: the step, the cause, where the
# log is and the command to retry. The callers leave nothing half-installed: they fetch into a
# temporary place and move it into place only when complete.
# shellcheck shell=bash

INSTALL_PROGRESS_INTERVAL=${INSTALL_PROGRESS_INTERVAL:-10}
# Per step, in seconds; also in `stack.sh --help` and docs/configuration.md.
APT_TIMEOUT=${APT_TIMEOUT:-900}

# Set by install_run when it fails: the one line to print, and whether the bound was reached.
INSTALL_ERROR=
INSTALL_TIMED_OUT=0
# The log and the offset where the current step's output starts (logs are appended to).
INSTALL_LOG=
INSTALL_OFFSET=0
# The timeout(1) process of the running step.
INSTALL_PID=

# What the current step wrote to its log so far.
install_output() { tail -c +"$((INSTALL_OFFSET + 1))" -- "$INSTALL_LOG" 2>/dev/null || true; }

# The last non-empty line of the step's output, shortened: the default progress and cause.
install_last_line() {
  install_output | tr -d '\r' | sed -e 's/\x1b\[[0-9;]*m//g' -e 's/^[[:space:]]*//' | grep -v '^$' | tail -n 1 | cut -c1-200 || true
}

# install_alive PID: running and not a zombie.
install_alive() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [[ ${stat%% *} != Z ]]
}

# Stops the running step (timeout(1) passes the signal on to its whole group) and waits for it.
install_stop() {
  kill -TERM "$INSTALL_PID" 2>/dev/null || true
  wait "$INSTALL_PID" 2>/dev/null || true
}

# install_run LABEL WHAT LIMIT LIMIT_VAR LOG RETRY CMD...
#   LABEL      prefix of every line ("kafka", "stack", "npm")
#   WHAT       the step, for its messages ("fetching the broker jars with Maven")
#   LIMIT      its bound in seconds, set by the variable named LIMIT_VAR
#   LOG        CMD's output is appended there
#   RETRY      the command that retries, named by the error line
# INSTALL_PROGRESS / INSTALL_CAUSE name functions that read install_output and print how far the
# step is / why it failed (default: the log's last line). Returns 0, or 1 with INSTALL_ERROR set
# (the caller cleans up, then install_fail prints it).
install_run() {
  local label=$1 what=$2 limit=$3 limit_var=$4 log=$5 retry=$6
  shift 6
  local progress=${INSTALL_PROGRESS:-install_last_line} cause=${INSTALL_CAUSE:-install_last_line}
  local t0=$SECONDS next=$((SECONDS + INSTALL_PROGRESS_INTERVAL)) rc=0 status saved_int saved_term
  INSTALL_LOG=$log INSTALL_ERROR= INSTALL_TIMED_OUT=0
  mkdir -p -- "$(dirname -- "$log")"
  INSTALL_OFFSET=$(stat -c %s -- "$log" 2>/dev/null || echo 0)
  printf '===== %s %s: %s\n' "$(date -u +%FT%TZ)" "$what" "$*" >>"$log"
  INSTALL_OFFSET=$(stat -c %s -- "$log")
  # timeout(1) runs CMD in a process group of its own and signals all of it (Maven's JVM under
  # the mvn script, dpkg under apt-get). That group is not the terminal's, so Ctrl-C (or a
  # SIGTERM to this script) is passed on by the trap below: no fetch runs on after its caller.
  # fd 9 (stack.sh's lock) is not passed on. Polled rather than waited for, to print progress.
  saved_int=$(trap -p INT) saved_term=$(trap -p TERM)
  trap 'install_stop; exit 130' INT
  trap 'install_stop; exit 143' TERM
  timeout --kill-after=10 "$limit" "$@" >>"$log" 2>&1 </dev/null 9>&- &
  INSTALL_PID=$!
  while install_alive "$INSTALL_PID"; do
    if ((SECONDS >= next)); then
      status=$("$progress")
      printf '%s: %s: %s (%ss; gives up after %ss)\n' "$label" "$what" "${status:-working}" "$((SECONDS - t0))" "$limit"
      next=$((SECONDS + INSTALL_PROGRESS_INTERVAL))
    fi
    sleep 0.25
  done
  wait "$INSTALL_PID" || rc=$?
  eval "${saved_int:-trap - INT}"
  eval "${saved_term:-trap - TERM}"
  ((rc != 0)) || return 0
  # 124: the bound was reached; 137: the command ignored SIGTERM for another 10 s.
  if ((rc == 124 || (rc == 137 && SECONDS - t0 >= limit))); then
    INSTALL_TIMED_OUT=1
    status=$("$progress")
    INSTALL_ERROR="$label: ERROR: $what did not finish within ${limit}s ($limit_var)${status:+; got this far: $status}; log $log; retry: $retry (raise $limit_var on a slow connection)"
  else
    status=$("$cause")
    INSTALL_ERROR="$label: ERROR: $what failed (exit $rc): ${status:-no output}; log $log; retry: $retry"
  fi
  return 1
}

# The one line of a failed install, then exit.
install_fail() {
  printf '%s\n' "$INSTALL_ERROR" >&2
  exit 1
}

# apt progress: files fetched so far, and the latest line (a download, an unpack, a setup).
apt_progress() {
  local n
  n=$(install_output | grep -c '^Get:' || true)
  printf '%s files fetched; latest: %s' "$n" "$(install_last_line | cut -c1-80)"
}

# apt's own reason: its first E: line (the later ones follow from it; W: lines are warnings).
apt_cause() {
  local e
  e=$(install_output | grep -m 1 '^E: ' | cut -c1-200 || true)
  printf '%s' "${e:-$(install_last_line)}"
}

# apt_install LABEL LOG RETRY PKG...: Debian packages, as root, bounded by APT_TIMEOUT per step.
# The download is a step of its own: stopping it leaves only apt's own partial files, which the
# next run resumes; stopping the install itself would leave dpkg "interrupted", so every install
# first finishes whatever an earlier, interrupted one left (dpkg --configure -a, a no-op otherwise).
apt_install() {
  local label=$1 log=$2 retry=$3
  shift 3
  local get=(env DEBIAN_FRONTEND=noninteractive apt-get -y -q --no-install-recommends -o DPkg::Lock::Timeout=120)
  install_run "$label" "finishing an interrupted Debian install (dpkg --configure -a)" "$APT_TIMEOUT" APT_TIMEOUT "$log" "$retry" \
    env DEBIAN_FRONTEND=noninteractive dpkg --configure -a || return 1
  # The package lists as they are first; a fresh machine has none, so when that fails they are
  # updated once and the download tried again.
  if ! INSTALL_PROGRESS=apt_progress INSTALL_CAUSE=apt_cause install_run "$label" "downloading Debian packages ($*)" "$APT_TIMEOUT" APT_TIMEOUT "$log" "$retry" \
    "${get[@]}" install --download-only "$@"; then
    ((INSTALL_TIMED_OUT == 0)) || return 1
    INSTALL_PROGRESS=apt_progress INSTALL_CAUSE=apt_cause install_run "$label" "updating the Debian package lists (apt-get update)" "$APT_TIMEOUT" APT_TIMEOUT "$log" "$retry" \
      "${get[@]}" update || return 1
    INSTALL_PROGRESS=apt_progress INSTALL_CAUSE=apt_cause install_run "$label" "downloading Debian packages ($*)" "$APT_TIMEOUT" APT_TIMEOUT "$log" "$retry" \
      "${get[@]}" install --download-only "$@" || return 1
  fi
  INSTALL_PROGRESS=apt_progress INSTALL_CAUSE=apt_cause install_run "$label" "installing Debian packages ($*)" "$APT_TIMEOUT" APT_TIMEOUT "$log" "$retry" \
    "${get[@]}" install "$@"
}
