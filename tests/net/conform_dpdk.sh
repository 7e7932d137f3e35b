#!/usr/bin/env bash
# The compliance suite (docs/conformance.md) against mroce's agent on its
# DPDK datapath: net_af_packet on one end of a veth pair (namespace
# cfd, 10.88.0.1), the suite on the other end (namespace cfu, 10.88.0.2)
# as the peer, driving the agent over a unix socket (a path is the same in
# every namespace). The pass criteria of conform_udp.sh, the coverage
# without the CM's rules (below). Needs root,
# network namespaces and a build with DPDK; SKIP (77) otherwise.
set -euo pipefail
BUILD="${MROCE_BUILD_DIR:-build}"
CONFORM="$BUILD/bin/mroce-conform"
AGENT="$BUILD/bin/mroce-agent"
PERF="$BUILD/bin/mroce-dpdk-perf"
[[ -x "$CONFORM" && -x "$AGENT" ]] || { echo "SKIP: suite not built"; exit 77; }
if ! "$PERF" 2>/dev/null; [[ $? -eq 77 || ! -x "$PERF" ]]; then
    echo "SKIP: mroce built without DPDK"
    exit 77
fi
if [[ $(id -u) -ne 0 ]] || ! ip netns add cfprobe$$ 2>/dev/null; then
    echo "SKIP: needs root and network namespaces"
    exit 77
fi
ip netns del cfprobe$$
OUT="$BUILD/conform"
mkdir -p "$OUT"
TMP="$(mktemp -d /tmp/mroce-conform-dpdk.XXXXXX)"
NS_D=cfd$$
NS_U=cfu$$
SOCK="$TMP/agent.sock"
AGENT_PID=
cleanup() {
    [[ -n "$AGENT_PID" ]] && kill "$AGENT_PID" 2>/dev/null || true
    [[ -n "$AGENT_PID" ]] && wait "$AGENT_PID" 2>/dev/null || true
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
# each test opens a fresh context, whose first answer would otherwise wait
# for ARP: both sides know each other's MAC from the start
MAC_D=$(ip -n "$NS_D" -o link show d0 | grep -o 'link/ether [0-9a-f:]*' | cut -d' ' -f2)
MAC_U=$(ip -n "$NS_U" -o link show u0 | grep -o 'link/ether [0-9a-f:]*' | cut -d' ' -f2)
ip -n "$NS_U" neigh replace 10.88.0.1 lladdr "$MAC_D" dev u0 nud permanent

EAL=(--no-huge --no-pci -m 512 --no-telemetry --log-level '*:error' -l 0
    --file-prefix "cfd$$"
    "--vdev=net_af_packet0,iface=d0,blocksz=8192,framesz=8192,framecnt=1024,qpairs=1")
ip netns exec "$NS_D" "$AGENT" --datapath dpdk --ip 10.88.0.1 \
    --neigh "10.88.0.2=$MAC_U" --listen "unix:$SOCK" -- "${EAL[@]}" \
    >"$TMP/agent.log" 2>&1 &
AGENT_PID=$!
for _ in $(seq 100); do [[ -S "$SOCK" ]] && break; sleep 0.1; done
[[ -S "$SOCK" ]] || { cat "$TMP/agent.log"; echo "FAIL: the agent did not start"; exit 1; }

# the agent's datapath thread busy-polls one core that the suite and other
# processes share: timing margins x3
rc=0
timeout 280 ip netns exec "$NS_U" "$CONFORM" --target "unix:$SOCK" \
    --ip 10.88.0.2 --slow 3 --retry 1 --json "$OUT/dpdk.json" --junit "$OUT/dpdk.xml" \
    --md "$OUT/dpdk.md" "$@" || rc=$?
echo "reports: $OUT/dpdk.json $OUT/dpdk.xml $OUT/dpdk.md"
if [[ $rc -ne 0 ]]; then
    tail -20 "$TMP/agent.log"
    echo "FAIL: mroce-conform exit $rc"
    exit 1
fi
tests=$(jq '.tests | length' "$OUT/dpdk.json")
must=$(jq '[.tests[] | select(.outcome == "fail" and (.known_failure | not))] | length' "$OUT/dpdk.json")
cov=$(jq '.rules_covered * 1000 / .rules_testable | floor' "$OUT/dpdk.json")
echo "test cases $tests, MUST failures (not known) $must, coverage ${cov}/1000 of testable rules"
[[ $tests -ge 150 ]] || { echo "FAIL: fewer than 150 test cases"; exit 1; }
[[ $must -eq 0 ]] || { echo "FAIL: MUST failures"; exit 1; }
# the CM's rules (R-CM-*) SKIP here: the set-up exchange speaks TCP
# through the kernel, which does not own the DPDK port's address (they run
# against the UDP agent); hence 80% rather than conform_udp.sh's 85%
[[ $cov -ge 800 ]] || { echo "FAIL: coverage below 80% of the testable rules"; exit 1; }
echo "PASS: compliance suite against the DPDK agent"
