# Shared by the datapath probes (tests/net/dp_*.sh); sourced, not a test
# itself (CTest runs tests/net/*.sh only).
#
# Each probe runs `mroce-perf server` and `client` and the attacker
# (tests/net/dp_attack.py) in a network namespace of its own (mrdp$$,
# loopback only): nothing else's traffic is in the attacker's capture,
# and the fixed ports below clash with nothing outside it. Needs root
# (namespaces, AF_PACKET), python3 and jq; else SKIP (exit 77).
# MROCE_PERF overrides the binary (to run a probe against an old build:
# MROCE_PERF=/tmp/old/build/bin/mroce-perf bash tests/net/dp_close.sh);
# MROCE_KEEP=1 keeps the logs and JSON files.
set -u
B=${MROCE_BUILD_DIR:-build}
SRC=${MROCE_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
PERF=${MROCE_PERF:-$B/bin/mroce-perf}
ATTACK=(python3 "$SRC/tests/net/dp_attack.py")
[ -x "$PERF" ] || { echo "SKIP: no $PERF"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
for t in python3 jq ip; do
    command -v $t >/dev/null || { echo "SKIP: no $t"; exit 77; }
done
NS=mrdp$$
TMP=$(mktemp -d /tmp/mroce-dp.XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    ip netns del $NS 2>/dev/null
    [ -n "${MROCE_KEEP:-}" ] && echo "kept $TMP" || rm -rf "$TMP"
}
trap cleanup EXIT INT TERM
fail() {
    echo "FAIL: $*"
    for f in "$TMP"/*.log; do
        [ -s "$f" ] && { echo "--- $f"; tail -n 25 "$f"; }
    done
    exit 1
}
ip netns add $NS 2>/dev/null || { echo "SKIP: no network namespaces"; exit 77; }
ip -n $NS link set lo up || fail "lo up"
NX=(ip netns exec $NS)
CM_PORT=18515 # inside $NS only
SRV_UDP=4797
CLI_UDP=4798

# srv_start ARGS...: the server in the background; waits until it
# listens. SRV: its pid. Its own counters go to $TMP/srv.json.
srv_start() {
    "${NX[@]}" timeout 55 "$PERF" server -p $CM_PORT --udp-port $SRV_UDP \
        --timeout 45 --json "$TMP/srv.json" "$@" >"$TMP/srv.log" 2>&1 &
    SRV=$!
    PIDS+=($SRV)
    for _ in $(seq 200); do
        grep -q "waiting for a client" "$TMP/srv.log" && return 0
        kill -0 $SRV 2>/dev/null || return 1
        sleep 0.05
    done
    return 1
}

# attacked_client ARGS...: the client (ARGS as for `client`) while the
# attacker runs; then waits for the attacker and prints its lines. Sets rc
# (the client's status) and KDROP (datagrams the kernel dropped meanwhile).
attacked_client() {
    local k0
    k0=$(rcvbuf_errors)
    client "$@"
    rc=$?
    wait_pid $ATK 15 || fail "attacker: $(tail -n 3 "$TMP/attack.log")"
    KDROP=$(($(rcvbuf_errors) - k0))
    grep -v '^RESULT' "$TMP/attack.log"
}

# attack_start ATTACK ARGS...: the attacker in the background, capturing
# before the client dials. ATK: its pid; its output in $TMP/attack.log.
attack_start() {
    "${NX[@]}" timeout 55 "${ATTACK[@]}" "$@" --cm-port $CM_PORT \
        >"$TMP/attack.log" 2>&1 &
    ATK=$!
    PIDS+=($ATK)
    for _ in $(seq 200); do
        grep -q "^ready" "$TMP/attack.log" && return 0
        kill -0 $ATK 2>/dev/null || return 1
        sleep 0.05
    done
    return 1
}

# client ARGS...: the real client, data checked; its exit status.
client() {
    "${NX[@]}" timeout 50 "$PERF" client 127.0.0.1 -p $CM_PORT \
        --udp-port $CLI_UDP --check --timeout 40 --json "$TMP/cli.json" \
        "$@" >"$TMP/client.log" 2>&1
}

# wait_pid PID SECONDS: its exit status, 124 if it still runs then.
wait_pid() {
    for _ in $(seq $(($2 * 20))); do
        kill -0 $1 2>/dev/null || { wait $1; return $?; }
        sleep 0.05
    done
    return 124
}

# The namespace's UDP receive-buffer drops (/proc/net/snmp): forged
# packets the kernel dropped never reached a receiver to be counted.
rcvbuf_errors() {
    "${NX[@]}" awk '/^Udp:/ { if (h) { print $6; exit } h = 1 }' \
        /proc/net/snmp
}

# jv FILE FIELD: field of the first result ("" if absent).
jv() {
    jq -r ".results[0].$2 // empty" "$1" 2>/dev/null
}

# sent WHAT: packets of kind WHAT the attacker sent (0 if none).
sent() {
    sed -n 's/^RESULT //p' "$TMP/attack.log" |
        jq -r "[.sent | to_entries[] | select(.key | test(\"$1\")) |
                .value] | add // 0"
}

# back: bytes that came back to the attacker's own socket.
back_bytes() {
    sed -n 's/^RESULT //p' "$TMP/attack.log" | jq -r '.back_bytes'
}

# The live transfer must have completed as if nobody had attacked it:
# the client exits 0 with its data verified, the server exits 0, and
# neither saw a failed completion.
transfer_ok() {
    [ "$1" = 0 ] || fail "the client failed (status $1)"
    grep -q "data verified" "$TMP/client.log" ||
        fail "client: data not verified"
    wait_pid $SRV 20
    local rc=$?
    [ $rc = 0 ] || fail "server exit status $rc"
    [ "$(jv "$TMP/cli.json" check)" = verified ] || fail "client check"
    [ "$(jv "$TMP/srv.json" check)" = verified ] || fail "server check"
    ! grep -q "failed:" "$TMP/client.log" "$TMP/srv.log" ||
        fail "a completion failed"
}

# counted SIDE FIELD WHAT: the side's counter FIELD took every packet of
# kind WHAT the attacker sent to it, but those the kernel dropped for
# want of buffer ($KDROP), and none more than were sent when EXACT=1.
counted() {
    local n s
    n=$(jv "$TMP/$1.json" "$2")
    s=$(sent "$3")
    [ -n "$n" ] || fail "$1: no counter $2"
    echo "  $1 $2 = $n for $s sent ($KDROP dropped by the kernel)"
    [ "$s" -gt 0 ] || fail "nothing of $3 was sent"
    [ $((n + KDROP)) -ge "$s" ] || fail "$1 $2: $n < $s sent - $KDROP"
    [ "${EXACT:-0}" = 0 ] || [ "$n" -le "$s" ] || fail "$1 $2: $n > $s"
}
