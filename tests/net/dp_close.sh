#!/usr/bin/env bash
# Forged CLOSEs against a live transfer (R-VAL-5, issue 15): a blind
# attacker that read the connection ids in the CM's TCP traffic sends
# CLOSEs to both ends during `write_bw --check -D 3`, from the peers'
# address, with DSNs it guesses (0 and others: where everything started
# before R-CONN-5). Each must be dropped unanswered and counted
# (`drop_bad_close`), nothing may come back to the attacker, and the
# transfer completes with its data verified. Against 1a2472b (before
# R-VAL-5) the first CLOSE ended the connection and the client failed.
# A blind guess lands in the window with probability W / 2^32 (64
# guesses: 6e-5 that this test fails for a good engine).
source "$(dirname "$0")/dp_lib.bash"

srv_start || fail "server did not start"
attack_start close --secs 1 --rounds 2 || fail "attacker did not start"
attacked_client write_bw -s 64k -D 3
transfer_ok $rc
EXACT=1 counted srv drop_bad_close server
EXACT=1 counted cli drop_bad_close client
[ "$(back_bytes)" = 0 ] || fail "$(back_bytes) bytes came back to the attacker"
echo PASS
