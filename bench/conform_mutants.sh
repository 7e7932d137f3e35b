#!/usr/bin/env bash
# The mutation run of the compliance suite (docs/conformance.md, "Mutation
# run"): every fault of the engine's fault table (src/engine/fault.h) is
# set in mroce's UDP agent in turn and the suite runs until a test catches
# it (fails twice under the fault, passes without it). Writes
# bench/out/conform_mutants.json: {"mutants","caught","score",
# "survivors","results":[{"name","rule","caught","by","time_s"}]}.
# A few minutes on a quiet machine. tests/net/conform_mutants.sh runs a
# small subset in make test.
set -euo pipefail
BUILD="${MROCE_BUILD_DIR:-build}"
CONFORM="$BUILD/bin/mroce-conform"
[[ -x "$CONFORM" ]] || { echo "build first: $CONFORM missing" >&2; exit 1; }
OUT="$(dirname "$0")/out"
mkdir -p "$OUT"
"$CONFORM" --mutants --mutants-json "$OUT/conform_mutants.json" "$@" \
    >"$OUT/conform_mutants.log" 2>&1 || true
grep '^mutant' "$OUT/conform_mutants.log" || true
jq -r '"mutants \(.mutants), caught \(.caught), score \(.score * 1000 | floor / 10)%, survivors: \(.survivors | join(" "))"' \
    "$OUT/conform_mutants.json"
