#!/usr/bin/env bash
# READ amplification against a live transfer (R-VAL-3, R-VAL-7, R-VAL-8,
# R-SEC-3; issue 15): a blind attacker that read the connection ids and
# both memory regions (address, rkey, length: mroce-perf swaps them in
# the CM's APP messages) sends, from the peers' address, 52-byte READ
# requests for a whole region with DSNs and message numbers swept from 0
# (where they started before R-CONN-5), and random ones: to the client
# of `write_bw --check -D 3`, whose receiving side is idle, and to the
# server. An nftables counter on the namespace's output hook counts
# every READ_RESP (MetaRoCE version 1, opcode 0x06) sent by anybody: a
# write_bw has none of its own. None may be sent, nothing may come back
# to the attacker, each request is dropped by the DSN window and counted
# (`drop_dsn_window`), and the transfer completes with its data verified.
# Against 1a2472b the client executed the sweep's requests: READ_RESP to
# the server (see the report in the commit that added this test) and the
# connection ended.
source "$(dirname "$0")/dp_lib.bash"
command -v nft >/dev/null || { echo "SKIP: no nft"; exit 77; }

"${NX[@]}" nft -f - <<'NFT' || fail "nft"
table inet mrdp {
    chain out {
        type filter hook output priority 0; policy accept;
        meta l4proto udp @th,64,4 1 @th,72,8 6 counter
        meta l4proto udp @th,64,4 1 @th,72,8 5 counter
    }
}
NFT
# nft_count N: packets and bytes of the Nth rule's counter (0: READ_RESP,
# 1: READ_REQ).
nft_count() {
    "${NX[@]}" nft -j list table inet mrdp |
        jq -r "[.nftables[] | select(.rule) | .rule.expr[] |
                select(.counter) | .counter][$1] | \"\(.packets) \(.bytes)\""
}

srv_start || fail "server did not start"
attack_start read --secs 1 --rounds 2 --sweep 256 ||
    fail "attacker did not start"
attacked_client write_bw -s 64k -D 3
read -r resp_pkts resp_bytes <<<"$(nft_count 0)"
read -r req_pkts req_bytes <<<"$(nft_count 1)"
echo "  READ_REQ sent in the namespace: $req_pkts ($req_bytes bytes);" \
    "READ_RESP: $resp_pkts ($resp_bytes bytes)"
[ "$resp_pkts" = 0 ] ||
    fail "forged READ requests drew $resp_bytes bytes of READ_RESP" \
        "for $req_bytes bytes of requests"
[ "$(back_bytes)" = 0 ] || fail "$(back_bytes) bytes came back to the attacker"
[ "$req_pkts" -ge "$(sent read_)" ] || fail "nft missed the requests"
transfer_ok $rc
EXACT=1 counted srv drop_dsn_window "read_srv"
EXACT=1 counted cli drop_dsn_window "read_cli"
echo PASS
