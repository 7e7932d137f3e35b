#!/usr/bin/env bash
# Sizes a client asks mroce-perf server for (R-CM-8 step 8, R-CM-13):
#  1. a CONFIG for 8-byte messages with --check, then a RUN of 1 GiB after
#     writing the client's pattern over the server's whole buffer: the
#     server refuses the size it was not configured for, and still serves
#     the real client. Main's server checked two 1 GiB slots of its 4 KiB
#     buffer: heap-buffer-overflow in run_cmp under ASan (CTest runs this
#     script in the ASan build too, with its binaries).
#  2. a CONFIG asking for 512 MiB messages (the server would allocate and
#     fill 1 GiB): REJECT APP before the server says anything else
#     (--max-size, 64 MiB by default); the server stays small.
# Needs no root.
source "$(dirname "$0")/cm_lib.bash"

srv_start "$TMP/srv.log" --clients 2 --timeout 60 || fail "server start"
"${PROBE[@]}" runsize $BASE --size 8 --run $((1 << 30)) \
    >"$TMP/probe.log" 2>&1 || fail "probe 1 failed"
"${PROBE[@]}" runsize $BASE --size $((512 << 20)) --run $((512 << 20)) \
    >>"$TMP/probe.log" 2>&1 || fail "probe 2 failed"
cat "$TMP/probe.log"
grep -q "server answered 4 to RUN" "$TMP/probe.log" &&
    fail "the server started a run of a size it was not configured for"
grep -q "runsize: server dropped us" "$TMP/probe.log" ||
    fail "no refusal of the RUN"
grep -q "HELLO rejected: APP" "$TMP/probe.log" ||
    fail "a 512 MiB CONFIG was not refused"
rss=$(awk '/VmHWM/ {print $2}' /proc/$SRV/status 2>/dev/null)
echo "server peak RSS: ${rss:-?} kB"
[ -n "$rss" ] && [ "$rss" -gt $((400 * 1024)) ] &&
    fail "server grew to $rss kB"
client write_bw -s 64k -n 200 >"$TMP/client.log" 2>&1 ||
    fail "the real client was not served after the probes"
grep -q "data verified" "$TMP/client.log" || fail "client data"
srv_wait 20
rc=$?
grep -q "AddressSanitizer" "$TMP/srv.log" && fail "ASan report"
grep -q "did not configure" "$TMP/srv.log" || fail "no refusal logged"
grep -q "served 2 client(s)" "$TMP/srv.log" || fail "server summary"
# The refused run is one failed session: exit status 1, not a crash.
[ $rc -eq 1 ] || fail "server exit status $rc (want 1: one failed session)"
echo PASS
