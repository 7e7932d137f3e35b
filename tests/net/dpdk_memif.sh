#!/usr/bin/env bash
# Two processes over net_memif (DPDK, --no-huge): every operation type
# with data verified by mroce-dpdk-perf --verify (WRITE then READ checked
# by the client; SEND, SEND_IMM, WRITE_IMM by the server). Bounded: 90 s.
# Zero-copy transmit (docs/dpdk.md) is on over memif: both sides must
# have sent frames with the payload attached (tx_zc > 0: the client its
# WRITEs and SENDs, the server its READ responses) and no PMD may have
# kept one (tx_zc_async 0). With --no-zc (dpdk_memif_nozc.sh) every
# payload is copied instead and tx_zc must stay 0.
set -euo pipefail
ZC=1
ZC_OPT=()
if [[ "${1:-}" == --no-zc ]]; then
    ZC=0
    ZC_OPT=(--no-zc)
fi
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
    --size 1M "${ZC_OPT[@]}" -- -l 0 --file-prefix "mrt_ms$$" "${EAL[@]}" \
    "--vdev=net_memif0,role=server,socket=$SOCK,socket-abstract=no,bsize=8192" \
    >"$TMP/server.out" 2>&1 &
srv=$!
pids+=("$srv")
for _ in $(seq 600); do [[ -S "$SOCK" ]] && break; sleep 0.05; done
rc=0
timeout 90 "$PERF" client --ip 10.66.0.2 --params "$TMP/p" --verify \
    --size 1M "${ZC_OPT[@]}" -- -l 1 --file-prefix "mrt_mc$$" "${EAL[@]}" \
    "--vdev=net_memif0,role=client,socket=$SOCK,socket-abstract=no,bsize=8192" \
    >"$TMP/client.out" 2>&1 || rc=$?
wait "$srv" || rc=$?
cat "$TMP/client.out" "$TMP/server.out"
n=$(grep -c '^verified' "$TMP/server.out" || true)
c=$(grep -c '^verified' "$TMP/client.out" || true)
if [[ $rc -ne 0 || $n -ne 3 || $c -ne 1 ]]; then
    echo "FAIL: rc $rc, server verified $n of 3, client $c of 1"
    exit 1
fi
# A counter from a side's JSON line (the last one), or -1.
counter() { # $1 file, $2 name
    local v
    v=$(grep -o "\"$2\":[0-9]*" "$1" | tail -1 | cut -d: -f2)
    echo "${v:--1}"
}
for side in client server; do
    zc=$(counter "$TMP/$side.out" tx_zc)
    async=$(counter "$TMP/$side.out" tx_zc_async)
    echo "$side: tx_zc $zc tx_zc_async $async"
    if [[ $ZC -eq 1 && ($zc -le 0 || $async -ne 0) ]] ||
        [[ $ZC -eq 0 && $zc -ne 0 ]]; then
        echo "FAIL: $side tx_zc $zc, tx_zc_async $async (zero-copy $ZC)"
        exit 1
    fi
done
echo "PASS: every operation verified over net_memif (zero-copy $ZC)"
