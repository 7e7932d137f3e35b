#!/usr/bin/env bash
# Pre-shared keys (R-CM-10): `mroce-perf server --psk K1` refuses a client
# holding another key (REJECT AUTH), a client without a key (REJECT
# FEATURE: a side with a key requires it, so it cannot be stripped) and a
# client whose HELLO a man in the middle altered (its modes byte, a
# downgrade: REJECT AUTH); none of them counts, and the client with K1 is
# then served with its data verified. Needs no root.
source "$(dirname "$0")/cm_lib.bash"

openssl_hex() { od -An -tx1 -N32 /dev/urandom | tr -d ' \n'; }
(umask 077 && openssl_hex >"$TMP/k1" && openssl_hex >"$TMP/k2")

srv_start "$TMP/srv.log" --clients 1 --timeout 60 --psk "$TMP/k1" ||
    fail "server start"
refused() { # LOG WHAT ARGS...: a client that must fail, saying WHAT
    local log=$1 what=$2
    shift 2
    timeout 30 "$PERF" client 127.0.0.1 write_bw -s 64k -n 50 --check \
        --udp-port $((BASE + 2)) --timeout 10 "$@" >"$log" 2>&1 &&
        fail "client $* was served"
    grep -q "$what" "$log" || fail "client $*: no '$what' in: $(cat "$log")"
}
refused "$TMP/wrongkey.log" "authentication" -p $BASE --psk "$TMP/k2"
refused "$TMP/nokey.log" "feature" -p $BASE
"${PROBE[@]}" mitm $((BASE + 4)) $BASE --flip 15 >"$TMP/mitm.log" 2>&1 &
PIDS+=($!)
wait_for "$TMP/mitm.log" "listening" 10 || fail "mitm start"
refused "$TMP/altered.log" "authentication" -p $((BASE + 4)) \
    --psk "$TMP/k1"
grep -q "flipped byte 15" "$TMP/mitm.log" || fail "the proxy altered nothing"
client write_bw -s 64k -n 200 --psk "$TMP/k1" >"$TMP/client.log" 2>&1 ||
    fail "the client with the key was not served"
grep -q "data verified" "$TMP/client.log" || fail "client data"
srv_wait 20
rc=$?
[ $rc -eq 0 ] || fail "server exit status $rc"
grep -q "served 1 client(s); connectors dropped: 3 refused," "$TMP/srv.log" ||
    fail "server summary: $(tail -n 1 "$TMP/srv.log")"
for f in wrongkey nokey altered; do
    echo "$f: $(grep -m1 "rejected" "$TMP/$f.log")"
done
echo PASS
