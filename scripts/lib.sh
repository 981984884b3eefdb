# Shared by the scripts that start real servers on loopback (sourced, not run).
#   free_port             a free TCP port on 127.0.0.1, below the kernel's ephemeral range (32768+
#                         by default), so no outgoing connection can be holding it when it is bound
#   track PID             kill PID when the script exits
#   wait_for SECONDS CMD  run CMD every half second until it succeeds; false after SECONDS
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

free_port() {
  for _ in $(seq 1 100); do
    local p=$((20000 + RANDOM % 12000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return 0; fi
  done
  return 1
}

wait_for() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || return 1
    sleep 0.5
  done
}
