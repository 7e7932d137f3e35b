#!/usr/bin/env bash
# bench/dpdk_vs_raw.sh: mroce over DPDK against raw DPDK frame forwarding
# between two processes over net_memif, in one run, plus mroce over the
# UDP datapath on loopback for context (issue 7).
#
#   (a) raw: mroce-dpdk-fwd gen -> sink, 4096-byte frames;
#   (b) mroce write_bw: mroce-dpdk-perf client -> server, 4 MiB WRITEs,
#       mtu 4096, over the same memif set-up;
#   (c) mroce write_bw over UDP sockets on 127.0.0.1.
# Without hugepages always; with them too when they can be reserved (root;
# HUGEPAGES=0 skips). Writes bench/out/dpdk_vs_raw.json; the headline
# numbers are from the hugepage run when there was one.
#
# Usage: bench/dpdk_vs_raw.sh [SECONDS]   (env MROCE_BUILD_DIR [build])
set -euo pipefail

SRC="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${MROCE_BUILD_DIR:-$SRC/build}"
SECS="${1:-3}"
OUT="$SRC/bench/out"
PERF="$BUILD/bin/mroce-dpdk-perf"
FWD="$BUILD/bin/mroce-dpdk-fwd"
TMP="$(mktemp -d /tmp/mroce-bench.XXXXXX)"
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$OUT"

for b in "$PERF" "$FWD"; do
    [[ -x "$b" ]] || { echo "missing $b (make build with libdpdk-dev)" >&2; exit 1; }
done

EAL_COMMON=(--no-pci --no-telemetry --log-level '*:error')

eal_mem() { # $1: huge|nohuge
    if [[ "$1" == huge ]]; then echo "--in-memory -m 256"; else echo "--no-huge -m 512"; fi
}

memif() { # $1 role, $2 socket
    echo "--vdev=net_memif0,role=$1,socket=$2,socket-abstract=no,bsize=8192"
}

wait_sock() {
    for _ in $(seq 600); do [[ -S "$1" ]] && return 0; sleep 0.05; done
    echo "memif socket $1 never appeared" >&2
    return 1
}

json_get() { # $1 key, stdin: one JSON line
    sed -n "s/.*\"$1\":\([0-9.eE+-]*\).*/\1/p" | tail -1
}

run_raw() { # $1 huge|nohuge -> gbps on stdout
    local sock="$TMP/raw-$1.sock" mem
    mem=$(eal_mem "$1")
    # shellcheck disable=SC2086
    timeout $((SECS + 60)) "$FWD" sink --seconds "$SECS" -- -l 0 \
        --file-prefix "mrb_rs$$" $mem "${EAL_COMMON[@]}" \
        "$(memif server "$sock")" >"$TMP/raw-$1.json" 2>"$TMP/raw-$1.err" &
    local sink=$!
    wait_sock "$sock"
    # shellcheck disable=SC2086
    timeout $((SECS + 60)) "$FWD" gen --seconds "$SECS" --size 4096 -- -l 1 \
        --file-prefix "mrb_rg$$" $mem "${EAL_COMMON[@]}" \
        "$(memif client "$sock")" 2>>"$TMP/raw-$1.err"
    wait "$sink"
    json_get gbps <"$TMP/raw-$1.json"
}

run_mroce() { # $1 huge|nohuge|udp -> client JSON line in $TMP/mroce-$1.json
    local tag=$1 sock="$TMP/mr-$1.sock" mem
    local s=(--ip 10.77.0.1 --params "$TMP/p-$tag") c=(--ip 10.77.0.2 --params "$TMP/p-$tag")
    local se=() ce=()
    if [[ "$tag" == udp ]]; then
        s=(--datapath udp --ip 127.0.0.1 --udp-port 4901 --params "$TMP/p-$tag")
        c=(--datapath udp --ip 127.0.0.1 --udp-port 4902 --params "$TMP/p-$tag")
    else
        mem=$(eal_mem "$tag")
        # shellcheck disable=SC2206
        se=(-- -l 0 --file-prefix "mrb_ms$$" $mem "${EAL_COMMON[@]}" "$(memif server "$sock")")
        # shellcheck disable=SC2206
        ce=(-- -l 1 --file-prefix "mrb_mc$$" $mem "${EAL_COMMON[@]}" "$(memif client "$sock")")
    fi
    timeout $((SECS + 60)) "$PERF" server "${s[@]}" "${se[@]}" \
        >"$TMP/mroce-$tag.srv" 2>&1 &
    local srv=$!
    [[ "$tag" == udp ]] || wait_sock "$sock"
    timeout $((SECS + 60)) "$PERF" client "${c[@]}" --size 4M --mtu 4096 \
        --seconds "$SECS" "${ce[@]}" >"$TMP/mroce-$tag.json" 2>"$TMP/mroce-$tag.err" ||
        { cat "$TMP/mroce-$tag.err" >&2; }
    wait "$srv" || true
    grep '"role":"client"' "$TMP/mroce-$tag.json" | tail -1
}

try_hugepages() {
    [[ "${HUGEPAGES:-1}" == 0 ]] && return 1
    local free
    free=$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)
    if [[ "${free:-0}" -lt 128 && -w /proc/sys/vm/nr_hugepages ]]; then
        echo 256 >/proc/sys/vm/nr_hugepages 2>/dev/null || true
        free=$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)
    fi
    if ! grep -q hugetlbfs /proc/mounts; then
        mkdir -p /dev/hugepages
        mount -t hugetlbfs nodev /dev/hugepages 2>/dev/null || return 1
    fi
    [[ "${free:-0}" -ge 128 ]]
}

declare -A RAW MR
modes=(nohuge)
if try_hugepages; then modes+=(huge); fi
for m in "${modes[@]}"; do
    RAW[$m]=$(run_raw "$m")
    MR[$m]=$(run_mroce "$m")
    echo "$m: raw ${RAW[$m]} Gbit/s; mroce: ${MR[$m]}"
done
UDP=$(run_mroce udp)
echo "udp: $UDP"

best=${modes[-1]}
raw=${RAW[$best]:-0}
mr_g=$(json_get gbps <<<"${MR[$best]}")
cyc=$(json_get cycles_per_pkt <<<"${MR[$best]}")
busy=$(json_get busy_cycles_per_pkt <<<"${MR[$best]}")
udp_g=$(json_get gbps <<<"$UDP")
ratio=$(awk -v a="${mr_g:-0}" -v b="${raw:-0}" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }')
nh_raw=${RAW[nohuge]:-0}
nh_mr=$(json_get gbps <<<"${MR[nohuge]}")
load=$(cut -d' ' -f1 /proc/loadavg)
cat >"$OUT/dpdk_vs_raw.json" <<JSON
{"raw_gbps":${raw:-0},"mroce_dpdk_gbps":${mr_g:-0},"ratio":$ratio,"mroce_udp_gbps":${udp_g:-0},"hugepages":$([[ $best == huge ]] && echo true || echo false),
 "mroce_cycles_per_pkt":${cyc:-0},"mroce_busy_cycles_per_pkt":${busy:-0},
 "nohuge":{"raw_gbps":${nh_raw:-0},"mroce_dpdk_gbps":${nh_mr:-0}},
 "seconds":$SECS,"frame_bytes":4096,"msg_bytes":4194304,"mtu":4096,"load_avg_1m":$load}
JSON
cat "$OUT/dpdk_vs_raw.json"
