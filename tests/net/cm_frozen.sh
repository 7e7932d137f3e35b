#!/usr/bin/env bash
# A frozen client (R-CM-12): client A runs write_bw for 30 s and is
# stopped (SIGSTOP) one second in; its sockets stay open and the kernel
# still acknowledges its TCP. With 500 ms keepalives on both sides the
# server declares it gone within a few seconds (4 of A's intervals of
# silence, not the whole run's timeout) and serves client B. Main's server
# waited out its --timeout while B was refused. Needs no root.
source "$(dirname "$0")/cm_lib.bash"

srv_start "$TMP/srv.log" --clients 2 --timeout 60 --keepalive 500 ||
    fail "server start"
"$PERF" client 127.0.0.1 write_bw -p $BASE --udp-port $((BASE + 3)) \
    -D 30 --timeout 60 --keepalive 500 >"$TMP/a.log" 2>&1 &
A=$!
PIDS+=($A)
sleep 1
kill -0 $A 2>/dev/null || fail "client A ended early"
kill -STOP $A
t0=$(date +%s%N)
wait_for "$TMP/srv.log" "peer silent\|peer closed" 15 ||
    fail "the server did not notice the frozen client"
ms=$((($(date +%s%N) - t0) / 1000000))
echo "frozen client dropped after $ms ms"
[ $ms -lt 8000 ] || fail "took $ms ms"
client write_bw -s 64k -n 200 --keepalive 500 >"$TMP/client.log" 2>&1 ||
    fail "client B was not served"
grep -q "data verified" "$TMP/client.log" || fail "client B data"
kill -CONT $A
kill $A 2>/dev/null
srv_wait 20
rc=$?
grep -q "served 2 client(s)" "$TMP/srv.log" || fail "server summary"
[ $rc -eq 1 ] || fail "server exit status $rc (want 1: A's session failed)"
echo PASS
