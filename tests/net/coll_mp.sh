#!/usr/bin/env bash
# mroce-perf coll: the collectives across 4 processes on 127.0.0.1, each
# rank with its own UDP datapath, the mesh set up through the CM; every
# rank verifies its result (exact sums, every block). All-reduce in both
# flavours, all-to-all and all-gather, small sizes; also a run with
# impairment loss, and a run whose rank dies must fail, not hang. Needs no
# root.
set -u
B=${MROCE_BUILD_DIR:-build}
PERF=$B/bin/mroce-perf
[ -x "$PERF" ] || { echo "SKIP: no $PERF"; exit 77; }
TMP=$(mktemp -d /tmp/mroce-coll.XXXXXX)
trap 'rm -rf "$TMP"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }
BASE=$((24000 + ($$ % 1000) * 8))

run() { # name, args...
    local name=$1
    shift
    timeout 25 "$PERF" coll "$@" -N 4 --udp-port $BASE --timeout 20 \
        --check --json "$TMP/$name.json" || fail "$name: $*"
    [ "$(jq -r .check "$TMP/$name.json")" = verified ] ||
        fail "$name: not verified"
}

run ar_imm allreduce -s 256k -n 4 --channels 2
run ar_send allreduce -s 256k -n 4 --flavour send
run a2a alltoall -s 256k -n 4 --channels 2
run ag allgather -s 100000 -n 4 --paths 4
run ar_loss allreduce -s 128k -n 2 --loss 0.02
retx=$(jq .retx_pkts "$TMP/ar_loss.json")
[ "${retx:-0}" -gt 0 ] || fail "2% loss but no retransmission counted"

# A rank that cannot start (its UDP port is taken by a bare socket of ours)
# must make the run fail quickly.
python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", int(sys.argv[1]) + 2))
open(sys.argv[2], "w").close()
time.sleep(15)' $BASE "$TMP/bound" &
holder=$!
for _ in $(seq 100); do [ -e "$TMP/bound" ] && break; sleep 0.05; done
[ -e "$TMP/bound" ] || fail "could not take UDP port $((BASE + 2))"
if timeout 25 "$PERF" coll allreduce -N 4 -s 64k -n 2 --udp-port $BASE \
    --timeout 20 >"$TMP/bad.log" 2>&1; then
    kill $holder
    fail "a rank without a datapath, yet exit 0"
fi
kill $holder 2>/dev/null
grep -q "rank 2" "$TMP/bad.log" || { cat "$TMP/bad.log"; fail "no rank 2 error"; }
# A rank killed with -9 in the middle of a long run: the others notice
# (closed CM channel, the watcher) and the run fails within seconds.
"$PERF" coll allreduce -N 4 -s 1M -n 1000000 --udp-port $BASE --timeout 20 \
    >"$TMP/kill.log" 2>&1 &
perf=$!
sleep 1
victim=$(pgrep -P $perf | sed -n 2p)
[ -n "$victim" ] || fail "no rank 1 process to kill"
kill -9 "$victim"
t0=$SECONDS
wait $perf && fail "a rank was killed, yet exit 0"
[ $((SECONDS - t0)) -le 10 ] || fail "took $((SECONDS - t0)) s to notice"
grep -q "killed by signal 9" "$TMP/kill.log" || {
    cat "$TMP/kill.log"
    fail "the killed rank is not reported"
}
echo PASS
