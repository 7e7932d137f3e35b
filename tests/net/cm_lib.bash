# Shared by the CM black-box scripts (cm_*.sh, perf_runsize.sh); sourced,
# not a test itself (CTest runs tests/net/*.sh only).
# Needs MROCE_BUILD_DIR (or build/) with bin/mroce-perf, and python3.
B=${MROCE_BUILD_DIR:-build}
SRC=${MROCE_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
PERF=$B/bin/mroce-perf
PROBE=(python3 "$SRC/tests/net/cm_probe.py")
[ -x "$PERF" ] || { echo "SKIP: no $PERF"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
TMP=$(mktemp -d /tmp/mroce-cm.XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT INT TERM
fail() {
    echo "FAIL: $*"
    for f in "$TMP"/*.log; do
        [ -s "$f" ] && { echo "--- $f"; tail -n 20 "$f"; }
    done
    exit 1
}
BASE=$((24000 + ($$ % 1500) * 8))

# srv_start LOG ARGS...: mroce-perf server in the background on TCP port
# $BASE (UDP $BASE+1); waits until it listens. Sets SRV (its pid).
srv_start() {
    local log=$1
    shift
    "$PERF" server -p $BASE --udp-port $((BASE + 1)) "$@" >"$log" 2>&1 &
    SRV=$!
    PIDS+=($SRV)
    for _ in $(seq 100); do
        grep -q "waiting for a client" "$log" && return 0
        kill -0 $SRV 2>/dev/null || return 1
        sleep 0.05
    done
    return 1
}

# srv_wait SECONDS: the server's exit status, 124 if still running then.
srv_wait() {
    for _ in $(seq $(($1 * 20))); do
        kill -0 $SRV 2>/dev/null || { wait $SRV; return $?; }
        sleep 0.05
    done
    return 124
}

# client ARGS...: the real client, data checked, bounded.
client() {
    timeout 40 "$PERF" client 127.0.0.1 -p $BASE --udp-port $((BASE + 2)) \
        --check --timeout 30 "$@"
}

# wait_for FILE TEXT SECONDS
wait_for() {
    for _ in $(seq $(($3 * 20))); do
        grep -q "$2" "$1" 2>/dev/null && return 0
        sleep 0.05
    done
    return 1
}
