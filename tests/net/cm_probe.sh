#!/usr/bin/env bash
# Hostile connectors against `mroce-perf server` (R-CM-2, R-CM-13): while
# connectors that sent garbage, headers claiming 8193 and 0xFFFFFFFF
# bytes, 6 bytes then silence, nothing at all (three), a version 1 HELLO,
# or that connected and closed are still open, the real client is served
# at once with its data verified, and the server exits 0 after it. What
# each connector got back: nothing for garbage and silence, one REJECT
# (MALFORMED, VERSION) for the ones that speak the CM. Before the
# normative exchange the server exited on the garbage and the client was
# refused. Needs no root.
source "$(dirname "$0")/cm_lib.bash"

srv_start "$TMP/srv.log" --clients 1 --hello-timeout 1500 --timeout 60 ||
    fail "server did not start"
"${PROBE[@]}" hostile $BASE --hold 5 >"$TMP/probe.log" 2>&1 &
PIDS+=($!)
probe=$!
wait_for "$TMP/probe.log" "probes sent" 10 || fail "probes not sent"
t0=$(date +%s%N)
client write_bw -s 64k -n 200 >"$TMP/client.log" 2>&1 ||
    fail "the real client was not served"
ms=$((($(date +%s%N) - t0) / 1000000))
grep -q "data verified" "$TMP/client.log" || fail "client data not verified"
# The silent connectors hold their connections for 5 s; the client must
# not have waited for them (nor for their 1.5 s HELLO timeout).
[ $ms -lt 1500 ] || fail "client served after $ms ms"
srv_wait 20
rc=$?
[ $rc -eq 0 ] || fail "server exit status $rc"
grep -q "served 1 client" "$TMP/srv.log" || fail "server summary"
wait $probe
expect() {
    grep -q "^$1: got $2" "$TMP/probe.log" || fail "$1: expected '$2'"
}
expect garbage nothing
expect oversized-8193 "REJECT v2 MALFORMED"
expect oversized-ffffffff "REJECT v2 MALFORMED"
expect six-bytes-then-silence nothing
expect idle-1 nothing
expect v1-hello "REJECT v2 VERSION"
cat "$TMP/probe.log"
tail -n 1 "$TMP/srv.log"
echo "PASS (client served in $ms ms)"
