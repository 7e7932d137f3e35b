#!/usr/bin/env bash
# mroce-dpdk-perf loop: write_bw client and server as two connections of
# one context on a net_ring port that receives what it sends, one process,
# over IPv4 and IPv6 (--no-huge). Checks that data moved, that no frame
# was refused (an IPv6 UDP checksum we got wrong would be, R-ENC-7), and
# that the JSON line carries the loop's phase profile. Bounded: 60 s.
set -euo pipefail
BUILD="${MROCE_BUILD_DIR:-build}"
PERF="$BUILD/bin/mroce-dpdk-perf"
rc=0
"$BUILD/bin/mroce-dpdk-fwd" >/dev/null 2>&1 || rc=$? # 77: no DPDK
if [[ $rc -eq 77 || ! -x "$PERF" ]]; then
    echo "SKIP: mroce built without DPDK"
    exit 77
fi
if ! command -v jq >/dev/null; then
    echo "SKIP: jq not installed"
    exit 77
fi
EAL=(--no-huge --no-pci -m 512 --no-telemetry --log-level '*:error'
     --vdev=net_ring0)
for ip in 10.66.0.1 fd00:66::1; do
    out=$(timeout 60 "$PERF" loop --ip "$ip" --size 1M --seconds 0.5 \
        -- -l 0 --file-prefix "mrt_lp$$" "${EAL[@]}")
    echo "$out"
    jq -e '.role == "loop" and .msgs > 0 and .rx_bad_frame == 0 and
           .tx_dropped == 0 and .batch == 64 and .passes > 0 and
           (.phase_cycles_per_pkt | .eng_tx > 0 and .eng_rx > 0 and
            .rx > 0 and .tx > 0)' <<<"$out" >/dev/null ||
        { echo "FAIL: loop over $ip"; exit 1; }
done
echo "PASS: loop mode over net_ring, IPv4 and IPv6"
