#!/usr/bin/env bash
# HELLO reflection (R-CM-8 step 6): a client on 127.0.0.1 announces
# 127.0.0.9 as its data address, then sends READ requests from there, so
# that the responses would go to a victim listening on 127.0.0.9. The
# server must refuse the HELLO (REJECT ADDRESS) and still serve the real
# client; with --allow-addr 127.0.0.9 the same HELLO is accepted (which
# shows the probe speaks the exchange). Against main's server the HELLO
# was accepted and 208 bytes of READ requests sent the victim 346 KB.
# Needs no root (127.0.0.0/8 is all local).
source "$(dirname "$0")/cm_lib.bash"

srv_start "$TMP/srv.log" --clients 1 --timeout 60 || fail "server start"
"${PROBE[@]}" reflect $BASE --victim-port $((BASE + 5)) >"$TMP/probe.log" \
    2>&1 || fail "probe failed"
cat "$TMP/probe.log"
grep -q "HELLO rejected: ADDRESS" "$TMP/probe.log" ||
    fail "a HELLO naming a third party's address was not refused"
grep -q "victim received" "$TMP/probe.log" && fail "traffic reflected"
client read_bw -n 200 >"$TMP/client.log" 2>&1 || fail "real client"
grep -q "data verified" "$TMP/client.log" || fail "client data"
srv_wait 20
rc=$?
[ $rc -eq 0 ] || fail "server exit status $rc"
grep -q "served 1 client(s); connectors dropped: 1 refused," "$TMP/srv.log" ||
    fail "server summary: $(tail -n 1 "$TMP/srv.log")"

# The same HELLO with the address allowed: accepted.
BASE=$((BASE + 3))
srv_start "$TMP/srv2.log" --clients 1 --timeout 20 \
    --allow-addr 127.0.0.9/32 || fail "server 2 start"
"${PROBE[@]}" reflect $BASE --victim-port $((BASE + 5)) --secs 0.5 \
    >"$TMP/probe2.log" 2>&1
cat "$TMP/probe2.log"
grep -q "HELLO accepted" "$TMP/probe2.log" ||
    fail "an allowed address was refused"
echo PASS
