#!/usr/bin/env bash
# Forged PROBEs against a live transfer (R-VAL-2, R-VAL-4, R-VAL-8,
# R-SEC-3; issue 15): a blind attacker that read the connection ids in
# the CM's TCP traffic sends the data receiver (the server of
# `write_bw --check -D 3`), from the peers' address, rounds of PROBEs, one
# per path, at PSNs the path has not reached: in the issue's 20-byte form
# (now too short: `drop_truncated`) and in the 72-byte form of R-HDR-4
# (not its path's next PSN: not recorded, `drop_psn_window`, and answered
# to the peer, never to the packet's source). Nothing may come back to
# the attacker, no path may die, and the transfer completes with its data
# verified, without a retransmission timeout of the sender (a 20 ms
# minimum RTO: a descheduled process is none, a path whose ACKs are
# ignored is). Against 1a2472b (before R-VAL-2) the 20-byte PROBEs were
# recorded ahead of the paths' PSNs: the sender ignored every later ACK
# as naming PSNs it never sent and timed out 1758 times in 3 s (its
# DSN acknowledgements alone kept the transfer going); each also drew a
# 72-byte ACK (x3.6; to the peer's address, as now).
source "$(dirname "$0")/dp_lib.bash"

# A 20 ms minimum RTO: a descheduled process is no timeout here, a path
# whose ACKs are ignored is.
srv_start --min-rto 20000 || fail "server did not start"
attack_start probe --secs 1.5 --rounds 6 || fail "attacker did not start"
attacked_client write_bw -s 64k -D 3 --min-rto 20000
back=$(back_bytes)
rto=$(jv "$TMP/cli.json" rto_events)
echo "  client: $rto RTOs, $(jv "$TMP/cli.json" tlp_pkts) tail-loss probes"
[ -n "$rto" ] && [ "$rto" -le 16 ] ||
    fail "the sender's paths timed out $rto times: its ACKs were ignored"
transfer_ok $rc
EXACT=1 counted srv drop_truncated p20
counted srv drop_psn_window p72
[ "$back" = 0 ] || fail "$back bytes came back to the attacker"
echo "  server acks sent $(jv "$TMP/srv.json" tx_acks), client acks" \
    "dropped as naming nothing $(jv "$TMP/cli.json" drop_bad_ack)"
echo PASS
