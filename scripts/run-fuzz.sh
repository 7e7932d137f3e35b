#!/usr/bin/env bash
# Runs the libFuzzer targets (tests/fuzz/) for a while.
#
#   scripts/run-fuzz.sh [SECONDS] [NAME...]     NAME: wire rx roce_wire
#                                               roce_rx cm (default all)
#
# Configures build-fuzz/ with clang and MROCE_FUZZ=ON, builds the fuzzers,
# writes fresh seeds with the codec's encoder, then runs each fuzzer for
# SECONDS (default 60) on its corpus build-fuzz/corpus/<name>, which is
# kept between runs. On a crash it prints the sanitizer report, the crash
# file and the command that replays it, and exits 1.
set -euo pipefail
cd "$(dirname "$0")/.."

secs=${1:-60}
shift || true
names=("$@")
((${#names[@]})) || names=(wire rx roce_wire roce_rx cm)
if ! [[ "$secs" =~ ^[0-9]+$ ]]; then
    echo "usage: $0 [SECONDS] [wire|rx|roce_wire|roce_rx|cm ...]" >&2
    exit 2
fi

dir=build-fuzz
cmake -S . -B "$dir" -DCMAKE_C_COMPILER="${CC:-clang}" \
    -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-O1 -g" \
    -DMROCE_SANITIZE=OFF -DMROCE_FUZZ=ON >/dev/null
cmake --build "$dir" -j"${JOBS:-2}" --target mroce_fuzzers

seeds="$dir/fuzz-seeds"
rm -rf "$seeds"
mkdir -p "$seeds/wire" "$seeds/rx" "$seeds/cm"
"$dir/bin/mroce_fuzz_seedgen" "$seeds/wire" "$seeds/rx" "$seeds/cm"

status=0
for name in "${names[@]}"; do
    mkdir -p "$seeds/$name" # the RoCEv2 fuzzers start from an empty corpus
    bin="$dir/bin/${name}_fuzz"
    corpus="$dir/corpus/$name"
    art="$dir/artifacts/$name"
    log="$dir/fuzz-$name.log"
    if [[ ! -x "$bin" ]]; then
        echo "run-fuzz: no fuzzer named '$name' ($bin)" >&2
        exit 2
    fi
    mkdir -p "$corpus" "$art"
    echo "run-fuzz: $name for ${secs}s (corpus $corpus, log $log)"
    # rx_fuzz writes rx-replay-<pid> (the inputs that built the engine's
    # state, joined) next to the crash file when the state mattered.
    if RX_FUZZ_REPLAY_DIR="$art" UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}" \
        "$bin" -max_total_time="$secs" -max_len=9000 -print_final_stats=1 \
        -artifact_prefix="$art/" "$corpus" "$seeds/$name" >"$log" 2>&1; then
        grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n 1 || true
        continue
    fi
    status=1
    echo "run-fuzz: $name FAILED; report (full log: $log):"
    sed -n '/ERROR:\|check failed\|runtime error/,/^SUMMARY/p' "$log" | head -n 60
    for f in "$art"/crash-* "$art"/leak-* "$art"/timeout-* "$art"/oom-* \
        "$art"/slow-unit-* "$art"/rx-replay-*; do
        [[ -e "$f" ]] || continue
        echo "run-fuzz: input file: $f"
        echo "run-fuzz:   hex: $(od -An -v -tx1 "$f" | tr -d ' \n' | head -c 600)"
        echo "run-fuzz:   replay: $bin $f"
    done
done
exit "$status"
