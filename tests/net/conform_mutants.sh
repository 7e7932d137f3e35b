#!/usr/bin/env bash
# A small mutation run of the compliance suite in make test: one fault of
# each area of the fault table (receiver ACKs, validation, messages,
# sender loss recovery, timers, NACKs, retry limits, connection, secure
# modes, ACKM, set-up exchange) must each be caught. The whole table runs in
# bench/conform_mutants.sh.
set -euo pipefail
BUILD="${MROCE_BUILD_DIR:-build}"
CONFORM="$BUILD/bin/mroce-conform"
[[ -x "$CONFORM" ]] || { echo "SKIP: $CONFORM not built"; exit 77; }
OUT="$BUILD/conform"
mkdir -p "$OUT"
SET=ack_gap_late,echo_unchecked,zero_len_unchecked,sack_holes_wait
SET+=,rnr_no_wait,nack_msn_unchecked,tx_cap_off,close_psn_unchecked
SET+=,replay_accepted,cm_tag_unchecked,ackm_partial_check
timeout 280 "$CONFORM" --mutants --mutant "$SET" \
    --mutants-json "$OUT/mutants.json" >"$OUT/mutants.log" 2>&1 || true
grep '^mutant' "$OUT/mutants.log" || { tail -20 "$OUT/mutants.log"; exit 1; }
n=$(jq .mutants "$OUT/mutants.json")
k=$(jq .caught "$OUT/mutants.json")
echo "mutants $n, caught $k, survivors: $(jq -c .survivors "$OUT/mutants.json")"
[[ $n -eq 11 ]] || { echo "FAIL: $n of the 11 faults ran"; exit 1; }
[[ $k -eq $n ]] || { echo "FAIL: a fault survived"; exit 1; }
echo "PASS: every fault of the subset caught"
