#!/usr/bin/env bash
# Two processes over net_memif (DPDK, --no-huge): every operation type
# with data verified by mroce-dpdk-perf --verify (WRITE then READ checked
# by the client; SEND, SEND_IMM, WRITE_IMM by the server). Bounded: 90 s.
set -euo pipefail
BUILD="${MROCE_BUILD_DIR:-build}"
PERF="$BUILD/bin/mroce-dpdk-perf"
if ! "$PERF" 2>/dev/null; [[ $? -eq 77 || ! -x "$PERF" ]]; then
    echo "SKIP: mroce built without DPDK"
    exit 77
fi
TMP="$(mktemp -d /tmp/mroce-memif.XXXXXX)"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$TMP"
}
trap cleanup EXIT
EAL=(--no-huge --no-pci -m 512 --no-telemetry --log-level '*:error')
SOCK="$TMP/memif.sock"
timeout 90 "$PERF" server --ip 10.66.0.1 --params "$TMP/p" --verify \
    --size 1M -- -l 0 --file-prefix "mrt_ms$$" "${EAL[@]}" \
    "--vdev=net_memif0,role=server,socket=$SOCK,socket-abstract=no,bsize=8192" \
    >"$TMP/server.out" 2>&1 &
srv=$!
pids+=("$srv")
for _ in $(seq 600); do [[ -S "$SOCK" ]] && break; sleep 0.05; done
rc=0
timeout 90 "$PERF" client --ip 10.66.0.2 --params "$TMP/p" --verify \
    --size 1M -- -l 1 --file-prefix "mrt_mc$$" "${EAL[@]}" \
    "--vdev=net_memif0,role=client,socket=$SOCK,socket-abstract=no,bsize=8192" || rc=$?
wait "$srv" || rc=$?
cat "$TMP/server.out"
n=$(grep -c '^verified' "$TMP/server.out" || true)
if [[ $rc -ne 0 || $n -ne 3 ]]; then
    echo "FAIL: rc $rc, server verified $n of 3"
    exit 1
fi
echo "PASS: every operation verified over net_memif"
