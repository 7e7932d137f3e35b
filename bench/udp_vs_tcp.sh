#!/usr/bin/env bash
# mroce write_bw (4 MiB messages, 4096-byte MTU) next to kernel TCP (iperf3,
# one stream), in one run: on loopback, across a veth pair (MTU 9000)
# between two network namespaces, and on that veth with 1% random loss
# applied by nftables in both directions (ingress of each namespace, so
# data and ACKs both see it; both transports run through the same rule).
# Then mroce write_lat (8 bytes) next to a bare UDP ping-pong
# (mroce-perf udp_pingpong: the datapath's syscalls, no engine).
#
# Writes bench/out/udp_vs_tcp.json:
#   {"loopback":{"mroce_gbps","tcp_gbps","ratio","mroce_runs","tcp_runs"},
#    "veth":{...}, "veth_loss1":{..., "mroce_vs_lossfree"}, "latency":{...}}
# With MROCE_BENCH_REPEAT=N each bandwidth pair runs N times, mroce and TCP
# alternately; *_gbps are the medians, *_runs every run (the spread).
#
# Usage: bench/udp_vs_tcp.sh [SECONDS]   (root; default 5 s per figure)
# Environment: MROCE_BUILD_DIR [build], MROCE_PERF_ARGS (extra mroce-perf
# flags for every run, e.g. "--pace 20" or "--paths 32"),
# MROCE_BENCH_REPEAT [1].
# A benchmark prints numbers; it has no thresholds and never fails on them.
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
B=${MROCE_BUILD_DIR:-$SRC/build}
PERF=$B/bin/mroce-perf
SECS=${1:-5}
EXTRA=${MROCE_PERF_ARGS:-}
REPEAT=${MROCE_BENCH_REPEAT:-1}
OUT=$SRC/bench/out
JSON=$OUT/udp_vs_tcp.json
TMP=$(mktemp -d /tmp/mroce-bench.XXXXXX)
NSA=mrbenchA$$
NSB=mrbenchB$$
IPA=10.231.0.1
IPB=10.231.0.2
PIDS=()

die() { echo "udp_vs_tcp: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (network namespaces)"
[ -x "$PERF" ] || die "no $PERF (make build)"
command -v iperf3 >/dev/null || die "no iperf3 (scripts/install-deps.sh)"
command -v nft >/dev/null || die "no nft (scripts/install-deps.sh)"
command -v jq >/dev/null || die "no jq"
mkdir -p "$OUT"

cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    ip netns del "$NSA" 2>/dev/null
    ip netns del "$NSB" 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

netns_up() {
    ip netns add "$NSA" && ip netns add "$NSB" || die "ip netns add failed"
    ip link add vA netns "$NSA" type veth peer name vB netns "$NSB"
    ip -n "$NSA" addr add $IPA/24 dev vA
    ip -n "$NSB" addr add $IPB/24 dev vB
    for x in "$NSA vA" "$NSB vB"; do
        set -- $x
        ip -n "$1" link set "$2" mtu 9000 up
        ip -n "$1" link set lo up
    done
}

# 1% random loss on IPv4 entering each namespace (socket receivers: the
# ingress hook, see machine.md).
loss_on() {
    for x in "$NSA vA" "$NSB vB"; do
        set -- $x
        ip netns exec "$1" nft -f - <<NFT
table netdev mroce_bench {
    chain ingress {
        type filter hook ingress device $2 priority 0; policy accept;
        meta protocol ip numgen random mod 100 < 1 counter drop
    }
}
NFT
    done
}

loss_drops() {
    local n=0 x
    for ns in "$NSA" "$NSB"; do
        x=$(ip netns exec "$ns" nft list table netdev mroce_bench 2>/dev/null |
            sed -n 's/.*packets \([0-9]*\).*/\1/p' | head -1)
        n=$((n + ${x:-0}))
    done
    echo $n
}

# run_in NS CMD...: NS "" means the root namespace.
run_in() {
    local ns=$1; shift
    if [ -n "$ns" ]; then ip netns exec "$ns" "$@"; else "$@"; fi
}

# mroce_bw SERVER_NS CLIENT_NS SERVER_IP TAG -> Gbit/s (or "null")
mroce_bw() {
    local sns=$1 cns=$2 sip=$3 tag=$4 port=$((18600 + RANDOM % 1000))
    rm -f "$TMP/$tag.json"
    run_in "$sns" timeout $((SECS + 60)) "$PERF" server -p $port \
        --timeout $((SECS + 50)) $EXTRA >"$TMP/$tag.srv" 2>&1 &
    PIDS+=($!)
    local spid=$!
    run_in "$cns" timeout $((SECS + 60)) "$PERF" client "$sip" write_bw \
        -p $port -s 4m --mtu 4096 -D "$SECS" --timeout $((SECS + 50)) \
        --json "$TMP/$tag.json" $EXTRA >"$TMP/$tag.cli" 2>&1
    local rc=$?
    wait $spid 2>/dev/null
    cat "$TMP/$tag.cli" >&2
    if [ $rc = 0 ] && [ -s "$TMP/$tag.json" ]; then
        cp "$TMP/$tag.json" "$OUT/mroce_$tag.json"
        jq '.results[0].bw_avg_gbps' "$TMP/$tag.json"
    else
        echo "udp_vs_tcp: mroce $tag failed (rc $rc):" >&2
        cat "$TMP/$tag.srv" >&2
        echo null
    fi
}

# tcp_bw SERVER_NS CLIENT_NS SERVER_IP TAG -> Gbit/s (or "null")
tcp_bw() {
    local sns=$1 cns=$2 sip=$3 tag=$4 port=$((25200 + RANDOM % 1000))
    run_in "$sns" timeout $((SECS + 30)) iperf3 -s -1 -p $port \
        >/dev/null 2>&1 &
    PIDS+=($!)
    sleep 0.5
    run_in "$cns" timeout $((SECS + 30)) iperf3 -c "$sip" -p $port -P 1 \
        -t "$SECS" -J >"$TMP/$tag.iperf.json" 2>/dev/null
    local v
    v=$(jq '.end.sum_received.bits_per_second / 1e9' \
        "$TMP/$tag.iperf.json" 2>/dev/null)
    echo "${v:-null}"
}

# lat SERVER_NS CLIENT_NS SERVER_IP TEST TAG -> t_typical us (or "null")
lat() {
    local sns=$1 cns=$2 sip=$3 test=$4 tag=$5 port=$((19600 + RANDOM % 1000))
    local uport=$((40000 + RANDOM % 1000))
    run_in "$sns" timeout 90 "$PERF" server $test -p $port \
        --udp-port $uport --timeout 80 $EXTRA >"$TMP/$tag.srv" 2>&1 &
    PIDS+=($!)
    local spid=$!
    sleep 0.3
    local cport=""
    [ $test = udp_pingpong ] && cport="--udp-port $uport" # where to ping
    run_in "$cns" timeout 90 "$PERF" client "$sip" $test -s 8 -n 20000 \
        -p $port $cport --timeout 80 --json "$TMP/$tag.json" \
        $EXTRA >"$TMP/$tag.cli" 2>&1
    local rc=$?
    wait $spid 2>/dev/null
    cat "$TMP/$tag.cli" >&2
    if [ $rc = 0 ] && [ -s "$TMP/$tag.json" ]; then
        jq '.results[0].t_typical_us' "$TMP/$tag.json"
    else
        cat "$TMP/$tag.srv" >&2
        echo null
    fi
}

ratio() { jq -n "if ($1 == null or $2 == null or $2 == 0) then null
                 else ($1 / $2 * 1000 | round / 1000) end"; }

# median of a JSON array of numbers (nulls dropped; null if none)
median() { jq -n "[$1[] | select(. != null)] | sort |
                  if length == 0 then null
                  else (.[(length - 1) / 2 | floor] + .[length / 2 | floor]) / 2
                  end"; }

# pair SERVER_NS CLIENT_NS SERVER_IP TAG: REPEAT runs of mroce, then TCP,
# alternately; sets M_RUNS and T_RUNS (JSON arrays)
pair() {
    local m=() t=() i
    for i in $(seq 1 "$REPEAT"); do
        m+=("$(mroce_bw "$1" "$2" "$3" "$4")")
        t+=("$(tcp_bw "$1" "$2" "$3" "$4")")
    done
    M_RUNS="[$(IFS=,; echo "${m[*]}")]"
    T_RUNS="[$(IFS=,; echo "${t[*]}")]"
}

section() {
    local m t
    m=$(median "$1") t=$(median "$2")
    echo "{\"mroce_gbps\":$m,\"tcp_gbps\":$t,\"ratio\":$(ratio "$m" "$t"),\"mroce_runs\":$1,\"tcp_runs\":$2}"
}

echo "== loopback ($SECS s each, $REPEAT time(s))" >&2
pair "" "" 127.0.0.1 loopback
LO_M=$M_RUNS LO_T=$T_RUNS
echo "   mroce $LO_M Gbit/s   tcp $LO_T Gbit/s" >&2

netns_up
echo "== veth MTU 9000" >&2
pair "$NSB" "$NSA" $IPB veth
VE_M=$M_RUNS VE_T=$T_RUNS
echo "   mroce $VE_M Gbit/s   tcp $VE_T Gbit/s" >&2

echo "== veth MTU 9000, 1% nftables loss both ways" >&2
loss_on
pair "$NSB" "$NSA" $IPB veth_loss1
VL_M=$M_RUNS VL_T=$T_RUNS
DROPS=$(loss_drops)
echo "   mroce $VL_M Gbit/s   tcp $VL_T Gbit/s   (nft dropped $DROPS)" >&2

echo "== latency, 8 bytes, loopback" >&2
L_M=$(lat "" "" 127.0.0.1 write_lat lat_mroce)
L_U=$(lat "" "" 127.0.0.1 udp_pingpong lat_udp)
echo "   mroce write_lat $L_M us   bare UDP $L_U us" >&2

VL=$(section "$VL_M" "$VL_T" | jq -c \
    ". + {mroce_vs_lossfree: $(ratio "$(median "$VL_M")" "$(median "$VE_M")"),
          nft_drops: $DROPS}")
jq -n \
    --argjson lo "$(section "$LO_M" "$LO_T")" \
    --argjson ve "$(section "$VE_M" "$VE_T")" \
    --argjson vl "$VL" \
    --argjson lat "{\"size\":8,\"where\":\"loopback\",\"mroce_write_lat_us\":$L_M,\"udp_pingpong_us\":$L_U,\"ratio\":$(ratio "$L_M" "$L_U")}" \
    --arg secs "$SECS" --arg extra "$EXTRA" --arg rep "$REPEAT" \
    '{loopback:$lo, veth:$ve, veth_loss1:$vl, latency:$lat,
      config:{seconds:($secs|tonumber), repeat:($rep|tonumber),
              message_bytes:4194304, mtu:4096, veth_mtu:9000,
              tcp:"iperf3 -P 1", mroce_extra_args:$extra}}' \
    >"$JSON"
cat "$JSON"
