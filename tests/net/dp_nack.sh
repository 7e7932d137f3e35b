#!/usr/bin/env bash
# Forged NACKs against a live transfer (R-VAL-6, R-NACK-4, R-RETRY-4;
# issue 15): a blind attacker that read the connection ids in the CM's
# TCP traffic sweeps the data sender (the client of `write_bw --check
# -D 3`), from the peers' address, with NACKs over message numbers and
# DSNs from 0 (where they started before R-CONN-5) and random ones: the
# fatal syndromes (REMOTE_ACCESS, INVALID_REQUEST, REMOTE_OP,
# CONN_CLOSED) and RNR asking for 0xFFFFFFFF us. None names an
# outstanding DSN with its message: each is dropped and counted
# (`drop_stale`), no work request fails or waits, and the transfer
# completes with its data verified. Against 1a2472b the sweep put the
# client in ERROR (REM_ACCESS_ERR on the first matching message number).
source "$(dirname "$0")/dp_lib.bash"

srv_start || fail "server did not start"
attack_start nack --rounds 2 --step 32 || fail "attacker did not start"
attacked_client write_bw -s 64k -D 3
transfer_ok $rc
EXACT=1 counted cli drop_stale nack
EXACT=1 counted cli rx_nacks nack
[ "$(jv "$TMP/cli.json" rnr_capped)" = 0 ] ||
    fail "a forged RNR NACK was taken (and capped)"
[ "$(back_bytes)" = 0 ] || fail "$(back_bytes) bytes came back to the attacker"
echo PASS
