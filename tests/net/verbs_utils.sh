#!/usr/bin/env bash
# Debian's ibverbs-utils over mroce (build/bin/mroce-run): ibv_devices
# lists mroce0, ibv_devinfo shows it active with an Ethernet port, MTU
# 4096 and a RoCE v2 GID, and ibv_rc_pingpong -c (which checks the data it
# receives) runs between two processes with and without completion events
# (-e), with the GID (-g 0) and without it (the LID alone, R-SOFT-1).
# Needs no root; SKIP when ibverbs-utils is missing.
set -u
B=${MROCE_BUILD_DIR:-build}
RUN=$B/bin/mroce-run
[ -x "$RUN" ] || { echo "SKIP: no $RUN"; exit 77; }
command -v ibv_rc_pingpong >/dev/null || {
    echo "SKIP: ibverbs-utils is not installed"
    exit 77
}
TMP=$(mktemp -d /tmp/mroce-verbs.XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    rm -rf "$TMP"
}
trap cleanup EXIT INT TERM
fail() {
    echo "FAIL: $*"
    for f in "$TMP"/*.log; do
        [ -e "$f" ] && { echo "--- $f"; tail -n 25 "$f"; }
    done
    exit 1
}
PORT=$((25000 + ($$ % 4000)))

timeout 20 "$RUN" ibv_devices >"$TMP/dev.log" 2>&1 || fail "ibv_devices"
grep -Eq '^\s+mroce0\s+[0-9a-f]{16}$' "$TMP/dev.log" ||
    fail "ibv_devices does not list mroce0"

timeout 20 "$RUN" ibv_devinfo -v >"$TMP/info.log" 2>&1 || fail "ibv_devinfo"
for want in 'hca_id:\s+mroce0' 'state:\s+PORT_ACTIVE' \
    'link_layer:\s+Ethernet' 'active_mtu:\s+4096' \
    'GID\[\s*0\]:\s+::ffff:127\.0\.0\.1, RoCE v2' 'vendor_id:\s+0xffffff' \
    'max_qp_rd_atom:\s+64' 'atomic_cap:\s+ATOMIC_NONE'; do
    grep -Eq "$want" "$TMP/info.log" || fail "ibv_devinfo: no '$want'"
done
# the port's LID is the soft NIC's UDP port (R-SOFT-1): nonzero
grep -Eq 'port_lid:\s+[1-9]' "$TMP/info.log" || fail "ibv_devinfo: LID 0"

listening() {
    for _ in $(seq 1 200); do
        ss -ltn 2>/dev/null | grep -q ":$1 " && return 0
        sleep 0.05
    done
    return 1
}

pingpong() { # args...
    PORT=$((PORT + 1))
    timeout 60 "$RUN" ibv_rc_pingpong -p $PORT "$@" >"$TMP/srv.log" 2>&1 &
    local spid=$!
    PIDS+=($spid)
    listening $PORT || fail "ibv_rc_pingpong $*: the server does not listen"
    timeout 60 "$RUN" ibv_rc_pingpong -p $PORT "$@" 127.0.0.1 \
        >"$TMP/cli.log" 2>&1 || fail "ibv_rc_pingpong $*: client exit $?"
    wait $spid || fail "ibv_rc_pingpong $*: server exit $?"
    grep -Eq '^[0-9]+ iters in [0-9.]+ seconds' "$TMP/cli.log" ||
        fail "ibv_rc_pingpong $*: no result line"
    echo "ibv_rc_pingpong $*: $(grep iters "$TMP/cli.log")"
}

pingpong -c -n 500
pingpong -c -n 500 -e
pingpong -c -n 200 -g 0 -s 65536
pingpong -c -n 200 -e -g 0 -s 1
echo PASS
