#!/usr/bin/env bash
# Forged ACKs against a live transfer under loss (R-VAL-1; issue 15): a
# blind attacker that read the connection ids in the CM's TCP traffic
# sweeps the data sender (the client of `write_bw --check`, 16 messages
# of 4 MiB, each in a slot of its own, with 2% loss both ways from the
# client's impairment layer, paced at 0.5 Gbit/s so that the attack
# meets packets in flight), from the peers' address, with ACKs that
# claim all 256 PSNs up to a guessed one received, their `dsn_cum`
# coming down from 17000 in steps of 16 (sweeps that cross the sender's
# next DSN as counted from 0, where it started before R-CONN-5). None
# names a PSN the sender sent with its timestamp: each is dropped whole
# and counted (`drop_bad_ack`), lost packets are sent again, and every
# byte arrives (the server's check). Against 1a2472b (before R-VAL-1)
# the forged bitmaps and `dsn_cum` were taken: 3 runs of 3 ended with
# RETRY_EXC_ERR (connection ERROR) after 191-902 RTOs; a gentler sweep
# (steps of 64) let one run through and ended another the same way.
source "$(dirname "$0")/dp_lib.bash"

srv_start || fail "server did not start"
attack_start ack --secs 2 --step 16 --top 17000 || fail "attacker did not start"
attacked_client write_bw -s 4M -n 16 --loss 0.02 --pace 0.5
echo "  client: $(jv "$TMP/cli.json" retx_pkts) packets sent again," \
    "$(jv "$TMP/cli.json" imp_lost) lost by the impairment layer"
transfer_ok $rc
# Only the ACKs the attacker sent while the transfer ran were counted
# (its counters cover the run); the real ACKs the sender drops name
# PSNs it no longer holds (ACKs of a retransmission's original).
n=$(jv "$TMP/cli.json" drop_bad_ack)
echo "  cli drop_bad_ack = $n for $(sent ack) sent"
[ "$n" -gt 0 ] || fail "no forged ACK was counted"
[ "$(jv "$TMP/cli.json" retx_pkts)" -gt 0 ] || fail "no loss recovered"
[ "$(back_bytes)" = 0 ] || fail "$(back_bytes) bytes came back to the attacker"
echo PASS
