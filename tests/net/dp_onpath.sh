#!/usr/bin/env bash
# An on-path attacker against a live transfer, without and with the
# secure modes (R-SEC-1, R-AEAD-8, R-AEAD-9; issue 15). The attacker also
# reads the UDP data (a capture on the data ports, one packet is
# enough) during `write_bw --check -D 3 --pace 1`:
#
# - mode none, the CM only (the first control): the HELLOs carry the
#   first sequence numbers in clear (R-CM-14), so whoever reads the CM's
#   TCP traffic knows where the DSN window starts: a CLOSE naming a DSN
#   just after the client's first ends the connection at once. The blind
#   probes (dp_close.sh ...) do not use these numbers; an attacker that
#   can read the CM is on-path.
# - mode none (the control): it sends the server a CLOSE naming the
#   server's own next DSN, read from the latest data packet. R-SEC-1 says
#   such an attacker can end the connection, and it does: the CLOSE is
#   taken (no `drop_bad_close`) and the client fails. This shows that the
#   attacker's packets are right, so that the drops below mean something.
# - --auth and --encrypt with a pre-shared key (--psk): it replays every
#   packet it read to both ends (`drop_replay`), sends them again with a
#   bit changed in the timestamp, the last header or payload byte or the
#   tag, and a CLOSE and an ACK sealed under no key (`drop_bad_tag`), and
#   the same plain CLOSE (`drop_sec_mode`). Each is dropped and counted,
#   and the transfer completes with its data verified. The payloads it
#   read are mroce-perf's pattern in clear with --auth, and never with
#   --encrypt.
#
# Against 1a2472b the control behaves the same (the CLOSE ends the
# connection) and the secure runs cannot start: that build has no
# --auth, --encrypt or --psk.
source "$(dirname "$0")/dp_lib.bash"
python3 -c 'import os; print(os.urandom(32).hex())' >"$TMP/psk"
chmod 600 "$TMP/psk"

# clear_writes: "N M": WRITE payloads the attacker read, and how many of
# them in clear.
clear_writes() {
    sed -n 's/^onpath: WRITE payloads read: \([0-9]*\), in clear.*: \([0-9]*\)$/\1 \2/p' \
        "$TMP/attack.log"
}

# run MODE [OPTIONS...]: one transfer under the on-path attack
# ($ATTACK_MODE, onpath by default).
run() {
    local mode=$1 rc
    shift
    rm -f "$TMP/srv.json" "$TMP/cli.json"
    srv_start "$@" || fail "$mode: server did not start"
    attack_start ${ATTACK_MODE:-onpath} --delay 0 ||
        fail "$mode: attacker did not start"
    k0=$(rcvbuf_errors)
    client write_bw -s 64k -D 3 --pace 1 "$@"
    rc=$?
    wait_pid $ATK 40 || fail "$mode: attacker: $(tail -n 8 "$TMP/attack.log")"
    KDROP=$(($(rcvbuf_errors) - k0))
    echo "== $mode"
    grep -v '^RESULT' "$TMP/attack.log" | tail -n 2
    return $rc
}

# The first control: the CM's reader closes a plain connection.
ATTACK_MODE=cmclose run none-cm &&
    fail "none-cm: the CM reader's CLOSE did not end the connection"
wait_pid $SRV 20
grep -qE "failed: .*(CLOSED|CLOSING|ERROR)|REM_OP_ERR" "$TMP/client.log" ||
    fail "none-cm: the client failed for another reason"
[ "$(jv "$TMP/srv.json" drop_bad_close)" = 0 ] ||
    fail "none-cm: the server dropped the CM reader's CLOSE"
echo "  the CLOSE ended the connection: $(grep -m1 failed: "$TMP/client.log")"

# The control: in mode none the reader's CLOSE is the peer's own.
run none && fail "none: the reader's CLOSE did not end the connection"
wait_pid $SRV 20
grep -q "read .* in clear" "$TMP/attack.log" || fail "none: read no data"
grep -qE "failed: .*(CLOSED|CLOSING|ERROR)|REM_OP_ERR" "$TMP/client.log" ||
    fail "none: the client failed for another reason"
[ "$(jv "$TMP/srv.json" drop_bad_close)" = 0 ] ||
    fail "none: the server dropped the reader's CLOSE"
echo "  the CLOSE ended the connection: $(grep -m1 failed: "$TMP/client.log")"
read -r n c <<<"$(clear_writes)"
[ "${n:-0}" -gt 0 ] && [ "$c" = "$n" ] || fail "none: payloads read $n, clear $c"

for m in --auth --encrypt; do
    run "$m" --psk "$TMP/psk" "$m"
    rc=$?
    grep -q "read .* sealed" "$TMP/attack.log" || fail "$m: data not sealed"
    transfer_ok $rc
    counted srv drop_replay replay_srv
    counted cli drop_replay replay_cli
    counted srv drop_bad_tag "tampered_srv|sealed_close_srv"
    counted cli drop_bad_tag "tampered_cli|sealed_ack_cli"
    EXACT=1 counted srv drop_sec_mode "^close_srv$"
    [ "$(jv "$TMP/srv.json" drop_bad_close)" = 0 ] ||
        fail "$m: a forged CLOSE got past the tag"
    read -r n c <<<"$(clear_writes)"
    echo "  WRITE payloads read $n, in clear $c"
    [ "${n:-0}" -gt 0 ] || fail "$m: read no WRITE"
    if [ $m = --auth ]; then
        [ "$c" = "$n" ] || fail "--auth: payloads not in clear"
    else
        [ "$c" = 0 ] || fail "--encrypt: $c payloads in clear"
    fi
done
[ "$(back_bytes)" = 0 ] || fail "$(back_bytes) bytes came back to the attacker"
echo PASS
