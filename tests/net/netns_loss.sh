#!/usr/bin/env bash
# mroce-perf across a veth pair (MTU 9000) between two network namespaces,
# with 1% random loss from nftables on both ingress hooks (data and ACKs),
# every operation verified byte for byte; retransmissions must show.
# Needs root and network namespaces (else SKIP, exit 77).
set -u
B=${MROCE_BUILD_DIR:-build}
PERF=$B/bin/mroce-perf
[ -x "$PERF" ] || { echo "SKIP: no $PERF"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
command -v nft >/dev/null || { echo "SKIP: no nft"; exit 77; }
NSA=mrtA$$
NSB=mrtB$$
TMP=$(mktemp -d /tmp/mroce-net.XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    ip netns del $NSA 2>/dev/null
    ip netns del $NSB 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }

ip netns add $NSA 2>/dev/null || { echo "SKIP: no netns"; exit 77; }
ip netns add $NSB || fail "netns"
ip link add vA netns $NSA type veth peer name vB netns $NSB || fail "veth"
ip -n $NSA addr add 10.232.0.1/24 dev vA
ip -n $NSB addr add 10.232.0.2/24 dev vB
for x in "$NSA vA" "$NSB vB"; do
    set -- $x
    ip -n $1 link set $2 mtu 9000 up
    ip -n $1 link set lo up
    ip netns exec $1 nft -f - <<NFT || fail "nft"
table netdev mroce_test {
    chain ingress {
        type filter hook ingress device $2 priority 0; policy accept;
        meta protocol ip numgen random mod 100 < 1 counter drop
    }
}
NFT
done

for t in write_bw read_bw send_bw write_lat; do
    # descheduled processes (2 shared cores, ASan) must not read as loss
    ip netns exec $NSB timeout 120 "$PERF" server --timeout 100 \
        --min-rto 2000 --retry 15 \
        >"$TMP/srv.log" 2>&1 &
    PIDS+=($!)
    spid=$!
    sz="-s 256k -n 200"
    [ $t = write_lat ] && sz="-s 8k -n 2000"
    ip netns exec $NSA timeout 120 "$PERF" client 10.232.0.2 $t \
        $sz --check --timeout 100 --min-rto 2000 --retry 15 \
        --json "$TMP/$t.json" ||
        fail "$t across the lossy veth"
    wait $spid || { cat "$TMP/srv.log"; fail "server of $t"; }
    r=$(jq '.results[0].retx_pkts + .results[0].peer_retx_pkts' \
        "$TMP/$t.json")
    echo "$t: retransmitted $r packets"
    [ $t = write_lat ] || [ "${r:-0}" -gt 0 ] || fail "$t: 1% loss, no retx"
done
drops=$(ip netns exec $NSB nft list table netdev mroce_test |
    sed -n 's/.*packets \([0-9]*\).*/\1/p')
echo "nftables dropped $drops packets entering $NSB"
[ "${drops:-0}" -gt 0 ] || fail "nftables dropped nothing"
echo PASS
