#!/usr/bin/env bash
# bench/secure_vs_plain.sh: what the secure modes cost (docs/spec.md
# section 3.14, issue 15). write_bw with 4 MiB messages and a 4096-byte
# mtu between two processes (tools/mroce-dpdk-perf, the write_bw loop of
# bench/dpdk_vs_raw.sh), plain, authenticated (--auth) and encrypted
# (--encrypt), alternated in one run:
#
#   udp:  UDP sockets on 127.0.0.1;
#   dpdk: net_memif between the two processes (--no-huge; with hugepages
#         too when HUGEPAGES=1 and they can be reserved, as root).
#
# Each of MROCE_BENCH_REPEAT rounds [3] runs the three modes back to back
# (the order rotates from round to round); *_gbps are the medians over the
# rounds, *_ratio the medians of each round's mode / plain ratio, *_runs
# every run. The client's CPU time per data packet (cpu_ns_per_data_pkt)
# is reported too. Then:
#
#   dpdk_loop: mroce-dpdk-perf loop over net_ring (sender and receiver in
#     one thread, no second process, no device copy): the CPU time per
#     data packet of both ends together, per mode -- what the crypto adds
#     to the engine's own work, which machine load does not inflate;
#   write_lat: mroce-perf --loopback write_lat, 8 bytes, plain and
#     --encrypt alternated (t_typical and t_p99, medians);
#   crypto: tools/mroce-crypto-bench (GB/s of AES-128-GCM per backend).
#
# Writes bench/out/secure_vs_plain.json,
#   {"udp":{plain_gbps,auth_gbps,encrypt_gbps,auth_ratio,encrypt_ratio,...},
#    "dpdk":{...}, "dpdk_loop":{...}, "write_lat":{...}, "crypto":{...}}
# and prints the same. The target (issue 15): encrypted >= 0.75 and
# authenticated >= 0.85 of plain over memif, in the same run.
#
# Usage: bench/secure_vs_plain.sh [SECONDS]
#        (env MROCE_BUILD_DIR [build], MROCE_BENCH_REPEAT [3], HUGEPAGES [0])
set -euo pipefail

SRC="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${MROCE_BUILD_DIR:-$SRC/build}"
SECS="${1:-3}"
REPEAT="${MROCE_BENCH_REPEAT:-3}"
OUT="$SRC/bench/out"
PERF="$BUILD/bin/mroce-dpdk-perf"
MPERF="$BUILD/bin/mroce-perf"
CBENCH="$BUILD/bin/mroce-crypto-bench"
TMP="$(mktemp -d /tmp/mroce-secbench.XXXXXX)"
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$OUT"
for b in "$PERF" "$MPERF" "$CBENCH"; do
    [[ -x "$b" ]] || { echo "missing $b (make build)" >&2; exit 1; }
done
DPDK=1
if ! "$PERF" 2>/dev/null; [[ $? -eq 77 ]]; then DPDK=0; fi

EAL_COMMON=(--no-pci --no-telemetry --log-level '*:error')
MODES=(plain auth encrypt)

mode_flag() { case $1 in auth) echo --auth ;; encrypt) echo --encrypt ;; esac; }

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

try_hugepages() {
    [[ "${HUGEPAGES:-0}" == 1 ]] || return 1
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

# The client's JSON line of a run (or {}).
client_line() {
    local l
    l=$(grep '"role":"client"' "$1" 2>/dev/null | tail -1 || true)
    echo "${l:-\{\}}"
}

# $1 udp|nohuge|huge, $2 plain|auth|encrypt, $3 run tag: one write_bw
# run; the client's JSON line on stdout.
run_bw() {
    local dp=$1 mode=$2 tag=$3 flag s c se=() ce=() mem
    flag=$(mode_flag "$mode")
    local sock="$TMP/$tag.sock"
    if [[ "$dp" == udp ]]; then
        s=(--datapath udp --ip 127.0.0.1 --udp-port 4921)
        c=(--datapath udp --ip 127.0.0.1 --udp-port 4922)
    else
        mem=$(eal_mem "$dp")
        s=(--ip 10.78.0.1)
        c=(--ip 10.78.0.2)
        # shellcheck disable=SC2206
        se=(-- -l 0 --file-prefix "mrsb_s$$" $mem "${EAL_COMMON[@]}" "$(memif server "$sock")")
        # shellcheck disable=SC2206
        ce=(-- -l 1 --file-prefix "mrsb_c$$" $mem "${EAL_COMMON[@]}" "$(memif client "$sock")")
    fi
    timeout $((SECS + 60)) "$PERF" server "${s[@]}" --params "$TMP/p-$tag" \
        --size 4M --mtu 4096 $flag "${se[@]}" >"$TMP/$tag.srv" 2>&1 &
    local srv=$!
    [[ "$dp" == udp ]] || wait_sock "$sock"
    timeout $((SECS + 60)) "$PERF" client "${c[@]}" --params "$TMP/p-$tag" \
        --size 4M --mtu 4096 --seconds "$SECS" $flag "${ce[@]}" \
        >"$TMP/$tag.cli" 2>"$TMP/$tag.err" || cat "$TMP/$tag.err" >&2
    wait "$srv" || true
    client_line "$TMP/$tag.cli"
}

median() { jq -n "[$1[] | select(. != null)] | sort |
                  if length == 0 then null
                  else (.[(length - 1) / 2 | floor] + .[length / 2 | floor]) / 2
                  end"; }

ratio() { jq -n "if ($1 == null or $2 == null or $2 == 0) then null
                 else ($1 / $2 * 1000 | round / 1000) end"; }

arr() { local IFS=,; echo "[$*]"; }

# $1 udp|nohuge|huge: REPEAT rounds of the three modes; sets SECTION.
bw_section() {
    local dp=$1 r k m line
    declare -A G CPU RAT
    for m in "${MODES[@]}"; do G[$m]="" CPU[$m]="" RAT[$m]=""; done
    for r in $(seq 1 "$REPEAT"); do
        declare -A got=()
        for k in 0 1 2; do
            m=${MODES[$(((r + k) % 3))]}
            line=$(run_bw "$dp" "$m" "$dp-$m-$r")
            got[$m]=$(jq -n "$line | .gbps // null")
            CPU[$m]+="$(jq -n "$line | .cpu_ns_per_data_pkt // null"),"
            echo "$dp round $r $m: ${got[$m]} Gbit/s" \
                 "(bad_tag $(jq -n "$line | .drop_bad_tag // null")," \
                 "retx $(jq -n "$line | .retx_pkts // null"))" >&2
        done
        for m in "${MODES[@]}"; do
            G[$m]+="${got[$m]},"
            RAT[$m]+="$(ratio "${got[$m]}" "${got[plain]}"),"
        done
    done
    local j='{}' runs
    for m in "${MODES[@]}"; do
        runs="[${G[$m]%,}]"
        j=$(jq -c -n --argjson j "$j" --argjson runs "$runs" \
            --argjson med "$(median "$runs")" \
            --argjson rat "$(median "[${RAT[$m]%,}]")" \
            --argjson cpu "$(median "[${CPU[$m]%,}]")" --arg m "$m" \
            '$j + {($m + "_gbps"): $med, ($m + "_runs"): $runs,
                   ($m + "_cpu_ns_per_data_pkt"): $cpu}
             + (if $m == "plain" then {} else {($m + "_ratio"): $rat} end)')
    done
    SECTION="$j"
}

# Sender and receiver in one thread (loop over net_ring): CPU per data
# packet of both ends, per mode, REPEAT times each, alternated.
loop_section() {
    local r m line j='{}'
    declare -A CPU G
    for r in $(seq 1 "$REPEAT"); do
        for m in "${MODES[@]}"; do
            # shellcheck disable=SC2046
            line=$(timeout $((SECS + 60)) "$PERF" loop --ip 10.79.0.1 \
                --size 4M --mtu 4096 --seconds "$SECS" $(mode_flag "$m") \
                -- -l 0 --file-prefix "mrsb_l$$" --no-huge -m 512 \
                "${EAL_COMMON[@]}" --vdev=net_ring0 2>/dev/null |
                grep '"role"' | tail -1 || true)
            line=${line:-\{\}}
            CPU[$m]+="$(jq -n "$line | .cpu_ns_per_data_pkt // null"),"
            G[$m]+="$(jq -n "$line | .gbps // null"),"
            echo "loop round $r $m: $(jq -n "$line | .cpu_ns_per_data_pkt // null") ns/pkt" >&2
        done
    done
    local plain
    plain=$(median "[${CPU[plain]%,}]")
    for m in "${MODES[@]}"; do
        local c
        c=$(median "[${CPU[$m]%,}]")
        j=$(jq -c -n --argjson j "$j" --arg m "$m" --argjson c "$c" \
            --argjson g "$(median "[${G[$m]%,}]")" \
            --argjson r "$(ratio "$plain" "$c")" \
            '$j + {($m + "_cpu_ns_per_data_pkt"): $c, ($m + "_gbps"): $g}
             + (if $m == "plain" then {} else
                {($m + "_cpu_ratio"): $r} end)')
    done
    SECTION="$j"
}

lat_section() {
    local r m f j='{}'
    declare -A TT TP
    for r in $(seq 1 "$REPEAT"); do
        for m in plain encrypt; do
            f="$TMP/lat-$m-$r.json"
            # shellcheck disable=SC2046
            "$MPERF" --loopback write_lat -s 8 -n 20000 --udp-port 4931 \
                $(mode_flag "$m") --json "$f" --quiet >/dev/null 2>&1 || true
            TT[$m]+="$(jq '.results[0].t_typical_us // null' "$f" 2>/dev/null || echo null),"
            TP[$m]+="$(jq '.results[0].t_p99_us // null' "$f" 2>/dev/null || echo null),"
        done
    done
    for m in plain encrypt; do
        j=$(jq -c -n --argjson j "$j" --arg m "$m" \
            --argjson t "$(median "[${TT[$m]%,}]")" \
            --argjson p "$(median "[${TP[$m]%,}]")" \
            '$j + {($m + "_t_typical_us"): $t, ($m + "_t_p99_us"): $p}')
    done
    SECTION="$j"
}

bw_section udp
UDP=$SECTION
echo "udp: $UDP" >&2
DP='null'
DPH='null'
LOOP='null'
if [[ $DPDK == 1 ]]; then
    bw_section nohuge
    DP=$SECTION
    echo "dpdk (memif, no hugepages): $DP" >&2
    if try_hugepages; then
        bw_section huge
        DPH=$SECTION
        echo "dpdk (memif, hugepages): $DPH" >&2
    fi
    loop_section
    LOOP=$SECTION
    echo "dpdk_loop: $LOOP" >&2
fi
lat_section
LAT=$SECTION
echo "write_lat: $LAT" >&2
"$CBENCH" --ms 100 --json "$TMP/crypto.json" >&2 || true
CRYPTO=$(cat "$TMP/crypto.json" 2>/dev/null || echo null)
load=$(cut -d' ' -f1 /proc/loadavg)
jq -n --argjson udp "$UDP" --argjson dpdk "$DP" --argjson huge "$DPH" \
    --argjson loop "$LOOP" --argjson lat "$LAT" --argjson crypto "$CRYPTO" \
    --argjson secs "$SECS" --argjson rep "$REPEAT" --argjson load "$load" \
    '{udp: $udp, dpdk: $dpdk, dpdk_huge: $huge, dpdk_loop: $loop,
      write_lat: $lat, crypto: $crypto, seconds: $secs, repeat: $rep,
      msg_bytes: 4194304, mtu: 4096, load_avg_1m: $load,
      target: {dpdk_encrypt_ratio: 0.75, dpdk_auth_ratio: 0.85}}' \
    >"$OUT/secure_vs_plain.json"
cat "$OUT/secure_vs_plain.json"
