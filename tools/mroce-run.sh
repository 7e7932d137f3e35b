#!/usr/bin/env bash
# mroce-run [OPTIONS] PROGRAM [ARGS...]
#
# Runs an unmodified verbs program (ib_write_bw, ibv_rc_pingpong, an MPI
# or NCCL-style application...) over mroce: it puts the drop-in
# libibverbs.so.1 of this build (and the libmlx5/libefa stand-ins Debian's
# perftest needs to load) in front of the system's, sets the soft NIC's
# profile from the options below (MROCE_VERBS_* variables, docs/verbs.md),
# and execs the program. Two programs started this way on one host find
# each other with nothing else (R-SOFT-1).
#
# Options (each sets the variable in brackets; the environment's value is
# kept when the option is absent):
#   --paths N        paths per QP, 1..256 [MROCE_VERBS_PATHS, 16]
#   --streams N      ordered streams per QP [MROCE_VERBS_STREAMS, 1]
#   --planes N       NIC planes [MROCE_VERBS_PLANES, 1]
#   --ip ADDR        address to bind, the GID [MROCE_VERBS_IP, 127.0.0.1]
#   --port P         UDP port, the LID [MROCE_VERBS_PORT, first free]
#   --datapath udp|dpdk  [MROCE_VERBS_DATAPATH, udp]
#   --spray-run N    packets a path takes in a row [MROCE_VERBS_SPRAY_RUN]
#   --min-rto US     minimum RTO in microseconds [MROCE_VERBS_MIN_RTO_US]
#   --retry N        timeout rounds before error [MROCE_VERBS_RETRY]
#   --loss P         test impairment: drop P of sent packets [MROCE_VERBS_LOSS]
#   --log            the soft NIC says what it does [MROCE_VERBS_LOG=1]
#   -h, --help
#
# A library built with -fsanitize=address (make build-asan) needs the
# sanitizer runtimes loaded first: mroce-run preloads them itself.
set -euo pipefail

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
    exit "${1:-0}"
}

die() {
    echo "mroce-run: $*" >&2
    exit 2
}

here="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)"
lib="${MROCE_RUN_LIB:-$here/../lib}"
[[ -e "$lib/libibverbs.so.1" ]] ||
    die "no libibverbs.so.1 in $lib (build first: make build)"
lib="$(cd "$lib" && pwd)"

setvar() { # option value variable
    [[ -n "$2" ]] || die "$1 needs a value"
    export "$3=$2"
}

while (($#)); do
    case "$1" in
    --paths) setvar "$1" "${2:-}" MROCE_VERBS_PATHS; shift 2 ;;
    --streams) setvar "$1" "${2:-}" MROCE_VERBS_STREAMS; shift 2 ;;
    --planes) setvar "$1" "${2:-}" MROCE_VERBS_PLANES; shift 2 ;;
    --ip) setvar "$1" "${2:-}" MROCE_VERBS_IP; shift 2 ;;
    --port) setvar "$1" "${2:-}" MROCE_VERBS_PORT; shift 2 ;;
    --datapath) setvar "$1" "${2:-}" MROCE_VERBS_DATAPATH; shift 2 ;;
    --spray-run) setvar "$1" "${2:-}" MROCE_VERBS_SPRAY_RUN; shift 2 ;;
    --min-rto) setvar "$1" "${2:-}" MROCE_VERBS_MIN_RTO_US; shift 2 ;;
    --retry) setvar "$1" "${2:-}" MROCE_VERBS_RETRY; shift 2 ;;
    --loss) setvar "$1" "${2:-}" MROCE_VERBS_LOSS; shift 2 ;;
    --log) export MROCE_VERBS_LOG=1; shift ;;
    -h | --help) usage 0 ;;
    --) shift; break ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) break ;;
    esac
done
(($#)) || usage 2

# DPDK loads its mlx5 driver, which needs the real libmlx5 (and works with
# this libibverbs): the stand-ins stay out of its way.
path="$lib"
[[ "${MROCE_VERBS_DATAPATH:-udp}" == dpdk && -d "$lib/noprov" ]] &&
    path="$lib/noprov"
export LD_LIBRARY_PATH="$path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# The sanitized library (make build-asan) needs its runtimes loaded first.
deps="$(ldd "$lib/libibverbs.so.1" 2>/dev/null || true)"
if [[ "$deps" == *libasan* ]]; then
    pre=""
    for rt in libasan.so libubsan.so; do
        p="$(gcc -print-file-name="$rt" 2>/dev/null || true)"
        [[ "$p" == /* ]] && pre="$pre${pre:+:}$(readlink -f "$p")"
    done
    export LD_PRELOAD="$pre${LD_PRELOAD:+:$LD_PRELOAD}"
fi

exec "$@"
