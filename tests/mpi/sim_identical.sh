#!/usr/bin/env bash
# mroce-sim under mpirun (issue 19, docs/sim.md "Parallel runs"): the same
# scenario on 1, 2 and 4 MPI ranks (oversubscribed) must write the same
# results JSON, apart from the wall-clock fields and those that say how
# it ran (ranks, rank_events, sync_wait_s, ...). 256 hosts, a leaf-spine
# and a 3-tier fat-tree, each with a permutation, an all-to-all with 1%
# loss and a permutation through a failing link. Also: the ranks' events
# add up to the run's, only rank 0 prints, a configuration that cannot be
# partitioned is refused clearly, --partition shows the cut, and the
# comparison itself can fail (two seeds differ).
# Registered by CMake only when it finds MPI; exit 77 (skip) without
# mpirun. Needs MROCE_BUILD_DIR.
set -euo pipefail

B=${MROCE_BUILD_DIR:?MROCE_BUILD_DIR not set}
SIM=$B/bin/mroce-sim
MPIRUN=${MPIEXEC:-mpirun}
command -v "$MPIRUN" >/dev/null 2>&1 || { echo "SKIP: no mpirun"; exit 77; }
command -v jq >/dev/null 2>&1 || { echo "SKIP: no jq"; exit 77; }
T=$(mktemp -d /tmp/mroce-mpi.XXXXXX)
trap 'rm -rf "$T"' EXIT

MPI=("$MPIRUN" --oversubscribe)
[[ $(id -u) -eq 0 ]] && MPI+=(--allow-run-as-root)
# fields that may differ between rank counts and between runs
VARY='del(.setup_s, .wall_s, .events_per_s, .pkts_per_s, .peak_rss_mb,
          .insns, .insns_per_pkt, .insns_per_event, .ranks, .rank_events,
          .sync_wait_s, .rank_sync_wait_s, .rank_run_s, .rank_run_cpu_s,
          .rank_import_s, .cut_msgs, .cut_bytes, .windows, .window_us,
          .lookahead_us)'

fail() { echo "FAIL: $*"; exit 1; }

sim() { # NP NAME ARGS...: one run, JSON to $T/NAME.NP.json, table to .txt
    local np=$1 name=$2
    shift 2
    "${MPI[@]}" -np "$np" "$SIM" "$@" --quiet --json "$T/$name.$np.json" \
        >"$T/$name.$np.txt" 2>"$T/$name.$np.err" ||
        fail "$name on $np ranks: exit $? ($(tail -n 2 "$T/$name.$np.err"))"
}

check() { # NAME ARGS...: 1, 2 and 4 ranks, identical
    local name=$1 t0=$SECONDS
    shift
    for np in 1 2 4; do
        sim "$np" "$name" "$@"
        local j=$T/$name.$np.json
        [[ $(jq .ranks "$j") == "$np" ]] || fail "$name: ranks != $np"
        [[ $(jq '.rank_events | add' "$j") == $(jq .events "$j") ]] ||
            fail "$name: rank_events do not add up to events on $np ranks"
        [[ $(grep -c '^mroce-sim:' "$T/$name.$np.txt") == 1 ]] ||
            fail "$name: not exactly one report on $np ranks"
        jq -S "$VARY" "$j" >"$T/$name.$np.cmp"
    done
    jq -e '.flows_failed == 0 and .flows_corrupt == 0' "$T/$name.1.json" \
        >/dev/null || fail "$name: the one-rank run failed its flows"
    for np in 2 4; do
        cmp -s "$T/$name.1.cmp" "$T/$name.$np.cmp" || {
            diff "$T/$name.1.cmp" "$T/$name.$np.cmp" | head -20
            fail "$name: $np ranks differ from 1"
        }
    done
    echo "ok: $name: 1, 2, 4 ranks identical ($(jq .events "$T/$name.1.json")" \
        "events, $(jq .cut_msgs "$T/$name.4.json") messages across the" \
        "4-rank cut, $((SECONDS - t0)) s)"
}

LS=(--hosts 256 --hosts-per-leaf 16 --spines 16)
FT=(--fat-tree 8 --oversub 2)
PERM=(--workload permutation --size 256k --paths 32 --seed 3)
A2A=(--workload alltoall --size 512k --paths 4 --loss 0.01 --seed 3)

check ls_perm "${LS[@]}" "${PERM[@]}"
# payload-free: squeezed packets cross the cut (sim/pkt.h)
check ls_perm_free "${LS[@]}" "${PERM[@]}" --payload free
check ls_a2a_loss "${LS[@]}" "${A2A[@]}"
check ls_fail "${LS[@]}" "${PERM[@]}" --fail-link leaf0-spine1@3
check ft_perm "${FT[@]}" "${PERM[@]}"
check ft_a2a_loss "${FT[@]}" "${A2A[@]}"
check ft_fail "${FT[@]}" "${PERM[@]}" --fail-link agg0-core1@3

# the comparison can fail: another seed gives other results
sim 2 other_seed "${LS[@]}" --workload permutation --size 256k --paths 32 \
    --seed 4
jq -S "$VARY" "$T/other_seed.2.json" >"$T/other_seed.cmp"
cmp -s "$T/ls_perm.1.cmp" "$T/other_seed.cmp" &&
    fail "the comparison does not see a different seed"

# refusals: more ranks than leaf groups; a cut without propagation delay
rc=0
"${MPI[@]}" -np 4 "$SIM" --hosts 16 --workload permutation --quiet \
    >"$T/r1.txt" 2>&1 || rc=$?
[[ $rc == 2 ]] && grep -q "a rank owns at least one" "$T/r1.txt" ||
    fail "4 ranks on 2 leaf groups: not refused clearly (exit $rc)"
rc=0
"${MPI[@]}" -np 2 "$SIM" --hosts 64 --link-delay-ns 0 --workload permutation \
    --quiet >"$T/r2.txt" 2>&1 || rc=$?
[[ $rc == 2 ]] && grep -q "no lookahead" "$T/r2.txt" ||
    fail "zero link delay across the cut: not refused clearly (exit $rc)"
[[ $(grep -c "cannot partition" "$T/r2.txt") == 1 ]] ||
    fail "the refusal is not said once (by rank 0)"
echo "ok: refusals: $(head -n 1 "$T/r2.txt")"

# --partition: the cut and the lookahead, once
"${MPI[@]}" -np 4 "$SIM" "${FT[@]}" --partition >"$T/p.txt" 2>&1 ||
    fail "--partition failed"
grep -q "lookahead 1.000 us (link agg" "$T/p.txt" &&
    [[ $(grep -c '^partition:' "$T/p.txt") == 1 ]] ||
    fail "--partition does not show the agg-core cut once: $(cat "$T/p.txt")"
echo "ok: --partition: $(grep 'cut:' "$T/p.txt")"
