#!/usr/bin/env bash
# Wire interop: the DPDK datapath (net_af_packet on one end of a veth
# pair, namespace mrdp) against the UDP-socket datapath (the other end,
# namespace mrud), every operation type with data verified, both ways
# round (DPDK as server, then as client). The first run also captures the
# DPDK side with net_pcap and reads it back with tshark. --no-huge.
# Zero-copy transmit (docs/dpdk.md): off in the first run (capture rules
# it out: tx_zc must be 0), on in the second (net_af_packet copies during
# tx_burst: the DPDK client's WRITEs and SENDs must leave with their
# payload attached, tx_zc > 0, and none be kept by the PMD).
set -euo pipefail
BUILD="${MROCE_BUILD_DIR:-build}"
PERF="$BUILD/bin/mroce-dpdk-perf"
if ! "$PERF" 2>/dev/null; [[ $? -eq 77 || ! -x "$PERF" ]]; then
    echo "SKIP: mroce built without DPDK"
    exit 77
fi
if [[ $(id -u) -ne 0 ]] || ! ip netns add mrdp_probe$$ 2>/dev/null; then
    echo "SKIP: needs root and network namespaces"
    exit 77
fi
ip netns del mrdp_probe$$
TMP="$(mktemp -d /tmp/mroce-interop.XXXXXX)"
NS_D=mrdp$$
NS_U=mrud$$
cleanup() {
    ip netns del "$NS_D" 2>/dev/null || true
    ip netns del "$NS_U" 2>/dev/null || true
    rm -rf "$TMP"
}
trap cleanup EXIT
ip netns add "$NS_D"
ip netns add "$NS_U"
ip link add d0 netns "$NS_D" type veth peer name u0 netns "$NS_U"
ip -n "$NS_D" link set d0 mtu 9000 up
ip -n "$NS_U" link set u0 mtu 9000 up
ip -n "$NS_U" addr add 10.88.0.2/24 dev u0
ip -n "$NS_U" link set lo up

EAL=(--no-huge --no-pci -m 512 --no-telemetry --log-level '*:error' -l 0
    "--vdev=net_af_packet0,iface=d0,blocksz=8192,framesz=8192,framecnt=1024,qpairs=1")
DPDK=(--ip 10.88.0.1 --size 1M)
UDP=(--datapath udp --ip 10.88.0.2 --size 1M --no-gso)

run() { # $1 dpdk-role, $2 tag, $3.. extra DPDK options
    local drole=$1 tag=$2 urole
    shift 2
    urole=$([[ $drole == server ]] && echo client || echo server)
    local p="$TMP/p-$tag"
    if [[ $drole == server ]]; then
        timeout 90 ip netns exec "$NS_D" "$PERF" server "${DPDK[@]}" --params "$p" \
            --verify "$@" -- --file-prefix "mrt_d$tag$$" "${EAL[@]}" \
            >"$TMP/$tag.server" 2>&1 &
        local bg=$!
        timeout 90 ip netns exec "$NS_U" "$PERF" client "${UDP[@]}" --params "$p" \
            --verify >"$TMP/$tag.client" 2>&1 || echo "client rc $?" >>"$TMP/$tag.client"
    else
        timeout 90 ip netns exec "$NS_U" "$PERF" server "${UDP[@]}" --params "$p" \
            --verify >"$TMP/$tag.server" 2>&1 &
        local bg=$!
        timeout 90 ip netns exec "$NS_D" "$PERF" client "${DPDK[@]}" --params "$p" \
            --verify "$@" -- --file-prefix "mrt_d$tag$$" "${EAL[@]}" \
            >"$TMP/$tag.client" 2>&1 || echo "client rc $?" >>"$TMP/$tag.client"
    fi
    wait "$bg" || echo "server rc $?" >>"$TMP/$tag.server"
    cat "$TMP/$tag.server" "$TMP/$tag.client"
    local s c
    s=$(grep -c '^verified' "$TMP/$tag.server" || true)
    c=$(grep -c '^verified' "$TMP/$tag.client" || true)
    if grep -q ' rc ' "$TMP/$tag.server" "$TMP/$tag.client" || [[ $s -ne 3 || $c -ne 1 ]]; then
        echo "FAIL ($tag): server verified $s of 3, client $c of 1"
        exit 1
    fi
}

# A counter from the DPDK side's JSON line, or -1.
counter() { # $1 file, $2 name
    local v
    v=$(grep -o "\"$2\":[0-9]*" "$1" | tail -1 | cut -d: -f2)
    echo "${v:--1}"
}

run server a --pcap "$TMP/dpdk.pcap"
zc=$(counter "$TMP/a.server" tx_zc)
echo "DPDK server with capture: tx_zc $zc"
[[ $zc -eq 0 ]] || { echo "FAIL: zero-copy with capture on"; exit 1; }
run client b
zc=$(counter "$TMP/b.client" tx_zc)
async=$(counter "$TMP/b.client" tx_zc_async)
echo "DPDK client: tx_zc $zc tx_zc_async $async"
[[ $zc -gt 0 && $async -eq 0 ]] || { echo "FAIL: zero-copy over af_packet"; exit 1; }
if command -v tshark >/dev/null; then
    n=$(tshark -r "$TMP/dpdk.pcap" -Y 'udp.port == 4797' 2>/dev/null | wc -l)
    arp=$(tshark -r "$TMP/dpdk.pcap" -Y arp 2>/dev/null | wc -l)
    echo "capture: $n UDP frames, $arp ARP frames"
    [[ $n -gt 100 && $arp -ge 1 ]] || { echo "FAIL: capture"; exit 1; }
fi
echo "PASS: DPDK <-> UDP sockets, every operation verified both ways"
