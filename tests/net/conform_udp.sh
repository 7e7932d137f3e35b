#!/usr/bin/env bash
# The compliance suite (docs/conformance.md) against mroce's own agent on
# its UDP datapath, over loopback: every test case, then the done criteria
# of issue 16 checked in the JSON: at least 150 test cases, no MUST
# failure, at least 85% of the testable rules covered.
#
# Known failures: tests that fail because mroce's engine violates a MUST
# of the spec. They are reported to the engine's owner and stay in the run
# (their failures show in every report); --xfail only keeps them from
# failing this CTest until the engine is fixed. Remove an entry when its
# fix lands: the test must then pass.
set -euo pipefail
BUILD="${MROCE_BUILD_DIR:-build}"
CONFORM="$BUILD/bin/mroce-conform"
[[ -x "$CONFORM" ]] || { echo "SKIP: $CONFORM not built"; exit 77; }
OUT="$BUILD/conform"
mkdir -p "$OUT"

XFAIL=()

# --retry 1: a test that fails runs once more (a timing check on a host
# that other jobs keep busy); a pass on the second try shows in the
# reports ("retries")
rc=0
timeout 300 "$CONFORM" --retry 1 --json "$OUT/udp.json" --junit "$OUT/udp.xml" \
    --md "$OUT/udp.md" "${XFAIL[@]}" "$@" || rc=$?
echo "reports: $OUT/udp.json $OUT/udp.xml $OUT/udp.md"
[[ $rc -eq 0 ]] || { echo "FAIL: mroce-conform exit $rc"; exit 1; }

tests=$(jq '.tests | length' "$OUT/udp.json")
must=$(jq '[.tests[] | select(.outcome == "fail" and (.known_failure | not))] | length' "$OUT/udp.json")
cov=$(jq '.rules_covered * 1000 / .rules_testable | floor' "$OUT/udp.json")
echo "test cases $tests, MUST failures (not known) $must, coverage ${cov}/1000 of testable rules"
[[ $tests -ge 150 ]] || { echo "FAIL: fewer than 150 test cases"; exit 1; }
[[ $must -eq 0 ]] || { echo "FAIL: MUST failures"; exit 1; }
[[ $cov -ge 850 ]] || { echo "FAIL: coverage below 85% of the testable rules"; exit 1; }
echo "PASS: compliance suite against the UDP agent"
