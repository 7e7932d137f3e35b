#!/usr/bin/env bash
# bench/dpdk_vs_raw.sh: mroce over DPDK against raw DPDK frame forwarding
# between two processes over net_memif, in one run, plus mroce over the
# UDP datapath on loopback for context (issue 7).
#
#   (a) raw: mroce-dpdk-fwd gen -> sink, 4096-byte frames;
#   (b) mroce write_bw: mroce-dpdk-perf client -> server, 4 MiB WRITEs,
#       mtu 4096, over the same memif set-up (bursts of 64, the tool's
#       DPDK default);
#   (c) mroce write_bw over UDP sockets on 127.0.0.1.
# Without hugepages always; with them too when they can be reserved (root;
# HUGEPAGES=0 skips). With MROCE_BENCH_REPEAT=N, (a) and (b) run N times
# per memory mode, alternately: *_gbps are the medians, *_runs every run
# (the spread), ratio_runs the ratio of each raw/mroce pair run back to
# back. Writes bench/out/dpdk_vs_raw.json; the headline numbers are from
# the hugepage runs when there were some. The phase profiles are the
# medians, per phase, of the runs' cycles per packet (client: sender;
# server: receiver; keys as mroce_dpdk_counters.cyc, docs/dpdk.md).
#
# With MROCE_BENCH_NOZC=1 each repeat also runs (b) with zero-copy
# transmit off (mroce-dpdk-perf --no-zc, same binary) right after it:
# mroce_nozc_gbps, mroce_nozc_runs, zc_ratio_runs (zc / copy, per pair)
# and the copying client's phase profile.
#
# Usage: bench/dpdk_vs_raw.sh [SECONDS]
#        (env MROCE_BUILD_DIR [build], MROCE_BENCH_REPEAT [1],
#         MROCE_BENCH_NOZC [0])
set -euo pipefail

SRC="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${MROCE_BUILD_DIR:-$SRC/build}"
SECS="${1:-3}"
REPEAT="${MROCE_BENCH_REPEAT:-1}"
NOZC="${MROCE_BENCH_NOZC:-0}"
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
PHASES='["rx","eng_rx","pool","timers","eng_tx","tx","app"]'

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

# A JSON number from a file holding JSON lines, or null.
num_or_null() { # $1 file, $2 jq filter
    local v
    v=$(jq -s "map(select(type == \"object\")) | last | $2 // null" "$1" \
        2>/dev/null || true)
    echo "${v:-null}"
}

run_raw() { # $1 huge|nohuge, $2 run tag -> gbps (or null) on stdout
    local sock="$TMP/raw-$2.sock" mem
    mem=$(eal_mem "$1")
    # shellcheck disable=SC2086
    timeout $((SECS + 60)) "$FWD" sink --seconds "$SECS" -- -l 0 \
        --file-prefix "mrb_rs$$" $mem "${EAL_COMMON[@]}" \
        "$(memif server "$sock")" >"$TMP/raw-$2.json" 2>"$TMP/raw-$2.err" &
    local sink=$!
    wait_sock "$sock"
    # shellcheck disable=SC2086
    timeout $((SECS + 60)) "$FWD" gen --seconds "$SECS" --size 4096 -- -l 1 \
        --file-prefix "mrb_rg$$" $mem "${EAL_COMMON[@]}" \
        "$(memif client "$sock")" 2>>"$TMP/raw-$2.err" || true
    wait "$sink" || true
    local g
    g=$(num_or_null "$TMP/raw-$2.json" .gbps)
    [[ "$g" != null ]] || sed 's/^/  raw: /' "$TMP/raw-$2.err" >&2
    echo "$g"
}

# $1 huge|nohuge|udp, $2 run tag, $3.. more options for both sides:
# client and server JSON lines in $TMP/mroce-$2.json and $TMP/mroce-$2.srv.
run_mroce() {
    local tag=$1 sock="$TMP/mr-$2.sock" mem
    local more=("${@:3}")
    local s=(--ip 10.77.0.1 --params "$TMP/p-$2") c=(--ip 10.77.0.2 --params "$TMP/p-$2")
    local se=() ce=()
    if [[ "$tag" == udp ]]; then
        s=(--datapath udp --ip 127.0.0.1 --udp-port 4901 --params "$TMP/p-$2")
        c=(--datapath udp --ip 127.0.0.1 --udp-port 4902 --params "$TMP/p-$2")
    else
        mem=$(eal_mem "$tag")
        # shellcheck disable=SC2206
        se=(-- -l 0 --file-prefix "mrb_ms$$" $mem "${EAL_COMMON[@]}" "$(memif server "$sock")")
        # shellcheck disable=SC2206
        ce=(-- -l 1 --file-prefix "mrb_mc$$" $mem "${EAL_COMMON[@]}" "$(memif client "$sock")")
    fi
    timeout $((SECS + 60)) "$PERF" server "${s[@]}" "${more[@]}" "${se[@]}" \
        >"$TMP/mroce-$2.srv" 2>&1 &
    local srv=$!
    [[ "$tag" == udp ]] || wait_sock "$sock"
    timeout $((SECS + 60)) "$PERF" client "${c[@]}" --size 4M --mtu 4096 \
        --seconds "$SECS" "${more[@]}" "${ce[@]}" >"$TMP/mroce-$2.json" 2>"$TMP/mroce-$2.err" ||
        { cat "$TMP/mroce-$2.err" >&2; }
    wait "$srv" || true
}

role_lines() { # $1 file, $2 role -> that role's JSON line (or nothing)
    grep "\"role\":\"$2\"" "$1" 2>/dev/null | tail -1 || true
}

# median of a JSON array of numbers (nulls dropped; null if none)
median() { jq -n "[$1[] | select(. != null)] | sort |
                  if length == 0 then null
                  else (.[(length - 1) / 2 | floor] + .[length / 2 | floor]) / 2
                  end"; }

ratio() { jq -n "if ($1 == null or $2 == null or $2 == 0) then null
                 else ($1 / $2 * 1000 | round / 1000) end"; }

# Per-phase medians of an array of phase objects.
phase_median() { # $1 JSON array of {phase: cycles}
    jq -c -n --argjson p "$PHASES" --argjson a "$1" \
        '[$p[] as $k | {($k): ([$a[] | .[$k] | select(. != null)] | sort |
          if length == 0 then null
          else (.[(length - 1) / 2 | floor] + .[length / 2 | floor]) / 2 end)}]
         | add'
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

# mode $1: REPEAT raw/mroce pairs; sets SECTION (JSON) for the mode.
mode_runs() {
    local m=$1 raw=() mr=() cyc=() busy=() cph=() sph=() rr=() i t c sv g
    local nz=() nzr=() nzcyc=() nzph=() z
    for i in $(seq 1 "$REPEAT"); do
        t="$m-$i"
        g=$(run_raw "$m" "$t")
        run_mroce "$m" "$t"
        c=$(role_lines "$TMP/mroce-$t.json" client)
        sv=$(role_lines "$TMP/mroce-$t.srv" server)
        [[ -n "$c" ]] || c='{}'
        [[ -n "$sv" ]] || sv='{}'
        raw+=("$g")
        mr+=("$(jq -n "$c | .gbps // null")")
        cyc+=("$(jq -n "$c | .cycles_per_pkt // null")")
        busy+=("$(jq -n "$c | .busy_cycles_per_pkt // null")")
        cph+=("$(jq -c -n "$c | .phase_cycles_per_pkt // {}")")
        sph+=("$(jq -c -n "$sv | .phase_cycles_per_pkt // {}")")
        rr+=("$(ratio "${mr[-1]}" "$g")")
        echo "$m run $i: raw $g Gbit/s; mroce: $c" >&2
        if [[ "$NOZC" == 1 ]]; then
            run_mroce "$m" "$t-nozc" --no-zc
            z=$(role_lines "$TMP/mroce-$t-nozc.json" client)
            [[ -n "$z" ]] || z='{}'
            nz+=("$(jq -n "$z | .gbps // null")")
            nzr+=("$(ratio "${mr[-1]}" "${nz[-1]}")")
            nzcyc+=("$(jq -n "$z | .cycles_per_pkt // null")")
            nzph+=("$(jq -c -n "$z | .phase_cycles_per_pkt // {}")")
            echo "$m run $i: mroce --no-zc: $z" >&2
        fi
    done
    local R M
    R="[$(IFS=,; echo "${raw[*]}")]" M="[$(IFS=,; echo "${mr[*]}")]"
    local rmed mmed
    rmed=$(median "$R") mmed=$(median "$M")
    SECTION=$(jq -c -n \
        --argjson r "$R" --argjson mr "$M" --argjson rr "[$(IFS=,; echo "${rr[*]}")]" \
        --argjson cyc "$(median "[$(IFS=,; echo "${cyc[*]}")]")" \
        --argjson busy "$(median "[$(IFS=,; echo "${busy[*]}")]")" \
        --argjson cph "$(phase_median "[$(IFS=,; echo "${cph[*]}")]")" \
        --argjson sph "$(phase_median "[$(IFS=,; echo "${sph[*]}")]")" \
        --argjson batch "$(jq -n "$c | .batch // null")" \
        "{raw_gbps: $rmed, mroce_dpdk_gbps: $mmed, ratio: $(ratio "$mmed" "$rmed"),
          raw_runs: \$r, mroce_runs: \$mr, ratio_runs: \$rr,
          mroce_cycles_per_pkt: \$cyc, mroce_busy_cycles_per_pkt: \$busy,
          batch: \$batch,
          client_phase_cycles_per_pkt: \$cph,
          server_phase_cycles_per_pkt: \$sph}")
    [[ "$NOZC" == 1 ]] || return 0
    local N="[$(IFS=,; echo "${nz[*]}")]"
    SECTION=$(jq -c -n --argjson s "$SECTION" --argjson n "$N" \
        --argjson nmed "$(median "$N")" \
        --argjson zr "[$(IFS=,; echo "${nzr[*]}")]" \
        --argjson ncyc "$(median "[$(IFS=,; echo "${nzcyc[*]}")]")" \
        --argjson nph "$(phase_median "[$(IFS=,; echo "${nzph[*]}")]")" \
        '$s + {mroce_nozc_gbps: $nmed, mroce_nozc_runs: $n,
               zc_ratio_runs: $zr, mroce_nozc_cycles_per_pkt: $ncyc,
               client_nozc_phase_cycles_per_pkt: $nph}')
}

declare -A SEC
modes=(nohuge)
if try_hugepages; then modes+=(huge); fi
for m in "${modes[@]}"; do
    mode_runs "$m"
    SEC[$m]=$SECTION
    echo "$m: $SECTION" >&2
done
run_mroce udp udp
UDP=$(role_lines "$TMP/mroce-udp.json" client)
echo "udp: $UDP" >&2
[[ -n "$UDP" ]] || UDP='{}'

best=${modes[-1]}
load=$(cut -d' ' -f1 /proc/loadavg)
jq -n --argjson b "${SEC[$best]}" --argjson nh "${SEC[nohuge]}" \
    --argjson udp "$(jq -n "$UDP | .gbps // null")" \
    --argjson huge "$([[ $best == huge ]] && echo true || echo false)" \
    --argjson secs "$SECS" --argjson rep "$REPEAT" --argjson load "$load" \
    '$b + {mroce_udp_gbps: $udp, hugepages: $huge,
           nohuge: ($nh | {raw_gbps, mroce_dpdk_gbps, ratio, raw_runs,
                           mroce_runs}),
           seconds: $secs, repeat: $rep, frame_bytes: 4096,
           msg_bytes: 4194304, mtu: 4096, load_avg_1m: $load}' \
    >"$OUT/dpdk_vs_raw.json"
cat "$OUT/dpdk_vs_raw.json"
