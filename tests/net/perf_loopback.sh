#!/usr/bin/env bash
# mroce-perf on 127.0.0.1, every operation verified byte for byte (--check):
# all six tests in one process (--loopback), write_bw with 5% impairment
# loss plus several paths and streams, and two processes set up through
# the CM (write_bw, read_bw, send_bw, write_lat). Needs no root.
set -u
B=${MROCE_BUILD_DIR:-build}
PERF=$B/bin/mroce-perf
[ -x "$PERF" ] || { echo "SKIP: no $PERF"; exit 77; }
TMP=$(mktemp -d /tmp/mroce-net.XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    rm -rf "$TMP"
}
trap cleanup EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }
BASE=$((20000 + ($$ % 2000) * 8))

for t in write_bw read_bw send_bw; do
    timeout 60 "$PERF" --loopback $t -s 256k -n 64 --check --timeout 50 \
        --udp-port $BASE || fail "loopback $t"
done
for t in write_lat read_lat send_lat; do
    timeout 60 "$PERF" --loopback $t -s 5000 -n 200 --check --timeout 50 \
        --udp-port $BASE || fail "loopback $t"
done
timeout 90 "$PERF" --loopback write_bw -s 1m -n 32 --check --loss 0.05 \
    --paths 32 --streams 4 --timeout 80 --udp-port $BASE \
    --json "$TMP/loss.json" || fail "loopback write_bw with 5% loss"
retx=$(jq '.results[0].retx_pkts' "$TMP/loss.json")
[ "${retx:-0}" -gt 0 ] || fail "5% loss but no retransmission counted"

port=$((BASE + 4))
for t in write_bw read_bw send_bw write_lat; do
    timeout 60 "$PERF" server -p $port --udp-port $((BASE + 2)) \
        --timeout 50 >"$TMP/srv.log" 2>&1 &
    PIDS+=($!)
    spid=$!
    timeout 60 "$PERF" client 127.0.0.1 $t -p $port --udp-port $((BASE + 3)) \
        -s 64k -n 100 --check --timeout 50 || fail "two processes: $t"
    wait $spid || { cat "$TMP/srv.log"; fail "server of $t"; }
done
echo PASS
