/* The wire monitor's cases: each reports, for one rule, the checks the
 * monitor (mon.c) made on every packet the IUT sent during the whole run
 * and the first violation it saw. They run last. */
#include <stdio.h>

#include "conform/cf.h"

static void mon_case(struct cf_t *t)
{
    const char *rule = t->test->arg;
    struct cf_mon_rule *r = cf_mon_get(rule);
    if (!r || !r->checked)
        cf_skip(t, "no packet of the run was subject to %s", rule);
    cf_note(t, "%llu checks over the run", (unsigned long long)r->checked);
    CF_CHECK(t, !r->violated, "%llu violations of %s; first: %s",
             (unsigned long long)r->violated, rule, r->first);
}

#define MON(rule, sec, what)                                                   \
    CF_TESTA("mon." rule, sec, rule, MUST, what, mon_case, rule)

const struct cf_test cf_t_mon[] = {
    MON("R-ENC-1", "2", "every datagram of the run is one packet"),
    MON("R-ENC-2", "2", "every packet went to the announced port"),
    MON("R-ENC-3", "2", "paths never shared a source port"),
    MON("R-ENC-6", "2", "every packet was ECT(0)"),
    MON("R-ENC-9", "2", "no packet longer than mtu + 60"),
    MON("R-ENC-10", "2", "every packet came from the announced address"),
    MON("R-HDR-3", "3.2", "version 1, reserved flag bits zero"),
    MON("R-HDR-4", "3.2", "only assigned opcodes sent"),
    MON("R-VER-1", "3.12", "version 1 in every packet"),
    MON("R-VER-7", "3.12", "only assigned code points sent"),
    MON("R-HDR-6", "3.2", "no payload on a type without one"),
    MON("R-HDR-7", "3.2", "reserved and defined-zero fields zero"),
    MON("R-HDR-8", "3.3", "MTH path below N"),
    MON("R-HDR-10", "3.3", "MTH ts monotonic per path"),
    MON("R-HDR-11", "3.4", "DXH fields constant per message"),
    MON("R-HDR-12", "3.5", "RETH constant per message"),
    MON("R-HDR-13", "3.7", "immediate constant per message"),
    MON("R-HDR-14", "3.8", "SACK bit 0 set in every ACK"),
    MON("R-HDR-16", "3.2", "opcode 0x21 never sent"),
    MON("R-CRC-1", "3.10", "every ICRC right"),
    MON("R-CONN-1", "4.1", "MTH conn always the destination's id"),
    MON("R-SACK-2", "6.1", "consecutive PSNs per path"),
    MON("R-DSN-1", "6.4", "consecutive DSNs, kept on retransmission"),
    MON("R-DSN-7", "6.4", "no DSN beyond the window"),
    MON("R-LOSS-3", "6.3", "retransmissions repeat the original"),
    MON("R-MSG-1", "7.1", "packetisation by mtu"),
    MON("R-MSG-7", "7.3", "receive indexes counted per stream"),
    MON("R-MSG-15", "7.6", "no atomic opcode sent"),
    MON("R-ACK-2", "6.2", "ACK flags zero"),
    MON("R-HDR-9", "3.3", "MTH psn of ACK, CLOSE and CLOSE_ACK"),
    MON("R-VAL-8", "10.4", "no answer larger than what it answers"),
    MON("R-ACK-5", "6.2", "ACKs name only PSNs the peer sent"),
    MON("R-PATH-7", "5.3", "PROBE format"),
    MON("R-AEAD-1", "3.14", "every packet of a secure connection sealed"),
    MON("R-AEAD-2", "3.14", "sealed packet layout"),
    MON("R-AEAD-3", "3.14", "every tag verifies"),
    MON("R-AEAD-4", "3.14", "control sequence numbers fresh"),
    MON("R-ACKM-1", "3.15", "no ACKM unless both announced the feature"),
    MON("R-ACKM-2", "3.15", "ACKM layout and record paths"),
    {0},
};
