#!/usr/bin/env bash
# bench/verbs_vs_native.sh [SECONDS]     (default 3 s per run)
#
# Debian's unmodified perftest over mroce's drop-in libibverbs (through
# build/bin/mroce-run) next to mroce's own mroce-perf, in one run, on
# 127.0.0.1, two processes each:
#   - ib_write_bw vs mroce-perf write_bw at 1 MiB and 64 KiB messages,
#     4096-byte MTU, the same number of paths (16) and the same 128
#     outstanding requests;
#   - ib_write_lat vs mroce-perf write_lat, 8 bytes, 10000 round trips
#     (MROCE_BENCH_LAT_ITERS): their medians ("typical") and means.
# MROCE_BENCH_REPEAT=N (default 3) runs each pair N times, verbs and native
# alternately; the figures are medians of the runs, every run is kept.
# Writes bench/out/verbs_vs_native.json:
#   {"write_bw": [{"size", "verbs_gbps", "native_gbps", "ratio",
#                  "verbs_runs", "native_runs"}, ...],
#    "write_lat": {"size", "verbs_us", "native_us", "diff_us",
#                  "verbs_avg_us", "native_avg_us", "verbs_runs",
#                  "native_runs"},
#    "config": {...}}
# Gb/s are 10^9 bit/s of message payload for both tools (perftest with
# --report_gbits). Needs perftest and jq (scripts/install-deps.sh); no
# root. MROCE_BUILD_DIR picks the build; MROCE_VERBS_* variables reach the
# soft NIC (docs/verbs.md).
set -u
SECS=${1:-3}
REPEAT=${MROCE_BENCH_REPEAT:-3}
B=${MROCE_BUILD_DIR:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
RUN=$B/bin/mroce-run
PERF=$B/bin/mroce-perf
OUT=bench/out
PATHS=16
DEPTH=128
LAT_ITERS=${MROCE_BENCH_LAT_ITERS:-10000}
for x in "$RUN" "$PERF"; do
    [ -x "$x" ] || { echo "no $x: build first (make build)" >&2; exit 1; }
done
command -v ib_write_bw >/dev/null || { echo "perftest missing" >&2; exit 1; }
command -v jq >/dev/null || { echo "jq missing" >&2; exit 1; }
mkdir -p "$OUT"
TMP=$(mktemp -d /tmp/mroce-vvn.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$TMP"' EXIT
PORT=$((30000 + ($$ % 2000) * 4))

listening() {
    for _ in $(seq 1 200); do
        ss -ltn 2>/dev/null | grep -q ":$1 " && return 0
        sleep 0.05
    done
    return 1
}

# perftest pair: prints the client's result line
verbs_run() { # test size [args]
    local t=$1 s=$2
    shift 2
    PORT=$((PORT + 1))
    export MROCE_VERBS_PATHS=$PATHS
    timeout $((SECS + 120)) "$RUN" "$t" -s "$s" -p $PORT "$@" \
        >"$TMP/vs.log" 2>&1 &
    local spid=$!
    listening $PORT || { cat "$TMP/vs.log" >&2; return 1; }
    timeout $((SECS + 120)) "$RUN" "$t" -s "$s" -p $PORT "$@" \
        127.0.0.1 >"$TMP/vc.log" 2>&1 || { cat "$TMP/vc.log" >&2; return 1; }
    wait $spid || return 1
    awk -v s="$s" '$1 == s && NF >= 5 && $3 ~ /^[0-9.]+$/' "$TMP/vc.log"
}

# mroce-perf pair: prints the client's JSON result
native_run() { # test size [args]
    local t=$1 s=$2
    shift 2
    PORT=$((PORT + 1))
    timeout $((SECS + 120)) "$PERF" server -p $PORT --udp-port $((PORT + 7000)) \
        >"$TMP/ns.log" 2>&1 &
    local spid=$!
    listening $PORT || { cat "$TMP/ns.log" >&2; return 1; }
    timeout $((SECS + 120)) "$PERF" client 127.0.0.1 "$t" -s "$s" \
        -p $PORT --udp-port $((PORT + 7001)) --paths $PATHS "$@" \
        --json "$TMP/n.json" >"$TMP/nc.log" 2>&1 || {
        cat "$TMP/nc.log" >&2
        return 1
    }
    wait $spid
    jq -c '.results[0]' "$TMP/n.json"
}

median() { # numbers...
    printf '%s\n' "$@" | grep -E '^[0-9.]+$' | sort -g |
        awk '{a[NR] = $1} END { if (!NR) print "null";
             else if (NR % 2) print a[(NR + 1) / 2];
             else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

jlist() { # numbers... -> [a,b,c]
    local IFS=,
    echo "[$*]"
}

bw_entries=()
for s in 1048576 65536; do
    vr=() nr=()
    for r in $(seq 1 "$REPEAT"); do
        # ib_write_bw's average: the 4th column with --report_gbits
        v=$(verbs_run ib_write_bw $s -D "$SECS" --report_gbits -t $DEPTH |
            awk '{print $4}')
        vr+=("${v:-null}")
        n=$(native_run write_bw $s -D "$SECS" -t $DEPTH | jq '.bw_avg_gbps')
        nr+=("${n:-null}")
        echo "write_bw $s run $r: verbs ${v:-failed} Gb/s, native ${n:-failed} Gb/s" >&2
    done
    vm=$(median "${vr[@]}")
    nm=$(median "${nr[@]}")
    ratio=$(awk -v a="$vm" -v b="$nm" 'BEGIN { if (a == "null" || b == "null" || b == 0) print "null"; else printf "%.3f", a / b }')
    bw_entries+=("{\"size\":$s,\"verbs_gbps\":$vm,\"native_gbps\":$nm,\"ratio\":$ratio,\"verbs_runs\":$(jlist "${vr[@]}"),\"native_runs\":$(jlist "${nr[@]}")}")
done

vl=() nl=() va=() na=()
for r in $(seq 1 "$REPEAT"); do
    # ib_write_lat: t_typical (median) is column 5, t_avg column 6
    line=$(verbs_run ib_write_lat 8 -n $LAT_ITERS)
    vl+=("$(echo "$line" | awk '{print $5}')")
    va+=("$(echo "$line" | awk '{print $6}')")
    j=$(native_run write_lat 8 -n $LAT_ITERS)
    nl+=("$(echo "$j" | jq '.t_typical_us')")
    na+=("$(echo "$j" | jq '.t_avg_us')")
    echo "write_lat 8 run $r: verbs ${vl[-1]:-failed} us, native ${nl[-1]:-failed} us" >&2
done
vm=$(median "${vl[@]}")
nm=$(median "${nl[@]}")
diff=$(awk -v a="$vm" -v b="$nm" 'BEGIN { if (a == "null" || b == "null") print "null"; else printf "%.2f", a - b }')
lat="{\"size\":8,\"verbs_us\":$vm,\"native_us\":$nm,\"diff_us\":$diff,\"verbs_avg_us\":$(median "${va[@]}"),\"native_avg_us\":$(median "${na[@]}"),\"verbs_runs\":$(jlist "${vl[@]}"),\"native_runs\":$(jlist "${nl[@]}")}"

load=$(cut -d' ' -f1 /proc/loadavg)
cfg="{\"seconds\":$SECS,\"lat_iters\":$LAT_ITERS,\"repeat\":$REPEAT,\"paths\":$PATHS,\"mtu\":4096,\"tx_depth\":$DEPTH,\"where\":\"127.0.0.1, two processes each\",\"loadavg_at_end\":$load,\"cpus\":$(nproc)}"
bw=$(
    IFS=,
    echo "${bw_entries[*]}"
)
echo "{\"write_bw\":[$bw],\"write_lat\":$lat,\"config\":$cfg}" | jq . \
    >"$OUT/verbs_vs_native.json"
cat "$OUT/verbs_vs_native.json"
