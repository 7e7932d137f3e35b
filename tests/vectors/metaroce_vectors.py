#!/usr/bin/env python3
"""Independent generator of the MetaRoCE test vectors of docs/spec.md
section 12 (standard library only).

It is built from the spec's field tables (sections 2 and 3) and shares no
code with mroce's C codec: CRC32C bit by bit from its parameters (R-CRC-2),
headers from the layouts of R-HDR-4 and sections 3.3-3.9, IPv4/IPv6 and UDP
headers with the RFC 768/1071/8200 checksums.

  metaroce_vectors.py markdown         print the spec text of the vectors
                                       that follow 12.12
  metaroce_vectors.py check SPEC       fail unless SPEC holds that text
                                       and the hex dumps of 12.2-12.12 are
                                       these bytes
  metaroce_vectors.py update SPEC      rewrite those sections of SPEC
  metaroce_vectors.py emit FILE        write every vector, its fields and
                                       the required receiver action for
                                       tests/unit/spec_vectors_test.c
"""

import re
import struct
import sys
import textwrap

# ---- CRC32C (R-CRC-2) --------------------------------------------------------


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283  # the check value of R-CRC-2

# ---- MetaRoCE headers (section 3) -------------------------------------------

ACKREQ, RETX = 0x8, 0x4
OPS = {  # opcode: (name, headers after the MTH, payload allowed) -- R-HDR-4
    0x01: ("WRITE", ("DXH", "RETH"), True),
    0x02: ("WRITE_IMM", ("DXH", "RETH", "SNH", "IMM"), True),
    0x03: ("SEND", ("DXH", "SNH"), True),
    0x04: ("SEND_IMM", ("DXH", "SNH", "IMM"), True),
    0x05: ("READ_REQ", ("DXH", "RETH"), False),
    0x06: ("READ_RESP", ("DXH",), True),
    0x10: ("ACK", ("AKH",), False),
    0x11: ("NACK", ("NKH",), False),
    0x12: ("ACKM", ("AKH",), True),  # payload: path records (section 3.15)
    0x20: ("PROBE", ("PAD",), False),
    0x30: ("CLOSE", (), False),
    0x31: ("CLOSE_ACK", (), False),
}
NAME_OP = {v[0]: k for k, v in OPS.items()}
SYNDROMES = {1: "RNR", 2: "REMOTE_ACCESS", 3: "INVALID_REQUEST",
             4: "REMOTE_OP", 5: "CONN_CLOSED"}
HDR_FIELDS = {  # in wire order, as in the tables of 3.3-3.9
    "MTH": ("flags", "opcode", "path", "conn", "psn", "ts"),
    "DXH": ("dsn", "stream", "msn", "msg_len", "offset"),
    "RETH": ("va", "rkey"),
    "SNH": ("ssn",),
    "IMM": ("imm",),
    "AKH": ("sack_high", "dsn_cum", "echo_ts", "rate_mbps", "ce_count",
            "rx_count", "sack"),
    "NKH": ("dsn", "stream", "nak_code", "msn", "nak_info"),
    "PAD": (),
}


def sack_bits(bits):
    """The 32 bytes of the AKH bitmap with bit i set for each i (R-HDR-14)."""
    b = bytearray(32)
    for i in bits:
        assert 0 <= i <= 255
        b[i // 8] |= 0x80 >> (i % 8)
    return bytes(b)


def sack_words(bits):
    """The bitmap as four big-endian 64-bit words."""
    return struct.unpack(">4Q", sack_bits(bits))


def encode(f, payload=b"", version=1, raw=None):
    """A packet from its fields f (dict). raw may override reserved bytes:
    {'flags_low': v, 'dxh_res': v, 'nkh_res': v}."""
    raw = raw or {}
    op = f["opcode"]
    out = bytearray()
    out += bytes([(version << 4) | (f.get("flags", 0) & 0xC) |
                  raw.get("flags_low", 0), op])
    out += struct.pack(">HIII", f.get("path", 0), f["conn"], f.get("psn", 0),
                       f.get("ts", 0))
    headers = OPS[op][1] if op in OPS else ()
    for h in headers:
        if h == "DXH":
            out += struct.pack(">IHHIII", f["dsn"], f["stream"],
                               raw.get("dxh_res", 0), f["msn"], f["msg_len"],
                               f["offset"])
        elif h == "RETH":
            out += struct.pack(">QI", f["va"], f["rkey"])
        elif h == "SNH":
            out += struct.pack(">I", f["ssn"])
        elif h == "IMM":
            out += struct.pack(">I", f["imm"])
        elif h == "AKH":
            out += struct.pack(">IIIIHH", f["sack_high"], f["dsn_cum"],
                               f["echo_ts"], f["rate_mbps"], f["ce_count"],
                               f["rx_count"])
            out += sack_bits(f["sack"])
        elif h == "NKH":
            out += struct.pack(">IHBBII", f["dsn"], f["stream"],
                               f["nak_code"], raw.get("nkh_res", 0), f["msn"],
                               f["nak_info"])
        elif h == "PAD":  # R-VAL-8: a PROBE is as long as an ACK
            out += bytes(52)
    out += payload
    return bytes(out) + struct.pack(">I", crc32c(out))


# ACKM payload (section 3.15): a 4-byte preamble -- count, reserved, the
# MTH path's hold -- then one 48-byte record per further path: path,
# hold, sack_high, echo_ts, ce_count, rx_count, the AKH's SACK bitmap.
ACKM_REC = ("path", "hold_ns", "sack_high", "echo_ts", "ce_count",
            "rx_count", "sack")


def hold_units(ns):
    """A hold in ns as the 16-bit field: units of 8 ns, saturating."""
    return min(ns // 8, 0xFFFF)


def ackm_payload(hold_ns, recs, reserved=0):
    out = struct.pack(">BBH", len(recs), reserved, hold_units(hold_ns))
    for r in recs:
        out += struct.pack(">HHIIHH", r["path"], hold_units(r["hold_ns"]),
                           r["sack_high"], r["echo_ts"], r["ce_count"],
                           r["rx_count"])
        out += sack_bits(r["sack"])
    assert len(out) == 4 + 48 * len(recs)
    return out


def hdr_len(op):
    sizes = {"DXH": 20, "RETH": 12, "SNH": 4, "IMM": 4, "AKH": 52, "NKH": 16,
             "PAD": 52}
    return 16 + sum(sizes[h] for h in OPS[op][1])


# ---- IP and UDP (section 2) --------------------------------------------------


def csum16(data):
    """RFC 1071 Internet checksum of data (big-endian 16-bit words)."""
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(">%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def udp(src_ip, dst_ip, sport, dport, payload, v6):
    length = 8 + len(payload)
    if v6:
        pseudo = src_ip + dst_ip + struct.pack(">I3xB", length, 17)
    else:
        pseudo = src_ip + dst_ip + struct.pack(">xBH", 17, length)
    hdr = struct.pack(">HHHH", sport, dport, length, 0)
    c = csum16(pseudo + hdr + payload)
    return struct.pack(">HHHH", sport, dport, length, c or 0xFFFF) + payload


def ipv4(src, dst, dscp, ecn, ttl, ident, l4):
    tos = (dscp << 2) | ecn
    h = struct.pack(">BBHHHBBH4s4s", 0x45, tos, 20 + len(l4), ident,
                    0x4000, ttl, 17, 0, src, dst)  # DF set (R-ENC-8)
    h = h[:10] + struct.pack(">H", csum16(h)) + h[12:]
    return h + l4


def ipv6(src, dst, dscp, ecn, flow, hop, l4):
    tc = (dscp << 2) | ecn
    first = (6 << 28) | (tc << 20) | (flow & 0xFFFFF)
    return struct.pack(">IHBB16s16s", first, len(l4), 17, hop, src,
                       dst) + l4


def ip4(s):
    return bytes(int(x) for x in s.split("."))


def ip6(s):
    head, _, tail = s.partition("::")
    hw = [int(x, 16) for x in head.split(":") if x]
    tw = [int(x, 16) for x in tail.split(":") if x]
    words = hw + [0] * (8 - len(hw) - len(tw)) + tw
    return struct.pack(">8H", *words)


# ---- the story of section 12 -----------------------------------------------

CONN_A, CONN_B = 0x00C0FFEE, 0x1A2B3C4D
VA, RKEY = 0x00007F3A12345000, 0xC0FFEE01
TEXT = b"MetaRoCE"
SEQ8 = bytes(range(8))


def pattern(n, seed):
    return bytes((seed + 7 * i) & 0xFF for i in range(n))


class Vec:
    """One vector: fields, payload, the bytes, and what a receiver does."""

    def __init__(self, name, title, fields=None, payload=b"", data=None,
                 action="accept", text="", raw=None, version=1,
                 frame=None, canon=None, ackm=None):
        self.name, self.title, self.text = name, title, text
        self.ackm = ackm  # (hold_ns, records) the payload was built from
        self.fields, self.payload, self.action = fields, payload, action
        self.frame = frame  # dict: family, src, dst, sport, dport, ecn, ...
        if data is None:
            data = encode(fields, payload, version, raw)
        self.data = data
        # what a conforming encoder emits for these fields (ignore vectors)
        self.canon = canon if canon is not None else (
            encode(fields, payload) if fields else None)
        self.inner = None
        if frame:
            self.inner = data
            self.data = build_frame(frame, data)


def build_frame(fr, inner):
    if fr["family"] == 6:
        l4 = udp(ip6(fr["src"]), ip6(fr["dst"]), fr["sport"], fr["dport"],
                 inner, True)
        if fr.get("bad_csum"):
            l4 = l4[:6] + struct.pack(">H", fr["bad_csum"]) + l4[8:]
        return ipv6(ip6(fr["src"]), ip6(fr["dst"]), 0, fr["ecn"],
                    fr["flow"], 64, l4)
    l4 = udp(ip4(fr["src"]), ip4(fr["dst"]), fr["sport"], fr["dport"],
             inner, False)
    return ipv4(ip4(fr["src"]), ip4(fr["dst"]), 0, fr["ecn"], 64, 0, l4)


def f_write():  # 12.2
    return dict(opcode=0x01, flags=ACKREQ, path=3, conn=CONN_B, psn=1000,
                ts=0x075BCD15, dsn=0x000A1B2C, stream=1, msn=5, msg_len=8,
                offset=0, va=VA, rkey=RKEY)


def f_send():  # 12.4
    return dict(opcode=0x03, flags=0, path=0, conn=CONN_B, psn=0,
                ts=0x075C00B0, dsn=0x000A1B2E, stream=2, msn=0, msg_len=8,
                offset=0, ssn=0)


def f_ack():  # 12.8; MTH psn: sack_high, no PROBE answered (R-VAL-4)
    return dict(opcode=0x10, flags=0, path=3, conn=CONN_A, psn=1000,
                ts=0x3ADE7EE0, sack_high=1000, dsn_cum=0x000A1B2D,
                echo_ts=0x075BCD15, rate_mbps=50000, ce_count=17,
                rx_count=749, sack=[0, 1, 3, 10])


def f_probe():  # 12.10
    return dict(opcode=0x20, flags=ACKREQ, path=6, conn=CONN_B, psn=9,
                ts=0x075C75E0)


def f_nack(code, path, psn, ts, dsn, stream, msn, info=0, conn=CONN_A):
    return dict(opcode=0x11, flags=0, path=path, conn=conn, psn=psn, ts=ts,
                dsn=dsn, stream=stream, nak_code=code, msn=msn,
                nak_info=info)


# Sections 12.2-12.12: the vectors already in the spec, rebuilt.
OLD = [
    ("12.2", Vec("write", "", f_write(), TEXT)),
    ("12.3", Vec("write_imm", "", dict(
        opcode=0x02, flags=ACKREQ, path=4, conn=CONN_B, psn=17,
        ts=0x075BD9A0, dsn=0x000A1B2D, stream=1, msn=6, msg_len=8, offset=0,
        va=VA + 0x100, rkey=RKEY, ssn=3, imm=0xDEADBEEF), SEQ8)),
    ("12.4", Vec("send", "", f_send(), TEXT)),
    ("12.5", Vec("send_imm", "", dict(
        opcode=0x04, flags=ACKREQ | RETX, path=7, conn=CONN_B,
        psn=0xFFFFFFFE, ts=0x075C27C0, dsn=0x000A1B2F, stream=2, msn=1,
        msg_len=8, offset=0, ssn=1, imm=0x01020304), SEQ8)),
    ("12.6", Vec("read_req", "", dict(
        opcode=0x05, flags=ACKREQ, path=2, conn=CONN_B, psn=1234,
        ts=0x075C4ED0, dsn=0x000A1B30, stream=1, msn=7, msg_len=4104,
        offset=0, va=VA + 0x2000, rkey=RKEY))),
    ("12.7", Vec("read_resp", "", dict(
        opcode=0x06, flags=ACKREQ, path=1, conn=CONN_A, psn=77,
        ts=0x3ADE68B1, dsn=0x101, stream=1, msn=7, msg_len=4104,
        offset=4096), SEQ8)),
    ("12.8", Vec("ack", "", f_ack())),
    ("12.9", Vec("nack_rnr", "", f_nack(1, 5, 42, 0x3ADEA5F0, 0x000A1B31,
                                        2, 3, 200))),
    ("12.10", Vec("probe", "", f_probe())),
    # CLOSE and CLOSE_ACK carry their sender's next DSN (R-VAL-5)
    ("12.11", Vec("close", "", dict(opcode=0x30, flags=0, path=0,
                                    conn=CONN_B, psn=0x000A1B32,
                                    ts=0x075C9CF0))),
    ("12.12", Vec("close_ack", "", dict(opcode=0x31, flags=0, path=0,
                                        conn=CONN_A, psn=0x00000102,
                                        ts=0x3ADEF410))),
]


def new_vectors():
    v = []
    # -- SACK bits in every 64-bit word
    bits = [0, 1, 63, 64, 65, 127, 128, 200, 254, 255]
    v.append(Vec("ack_sack_words", "ACK with SACK bits in every 64-bit word "
                 "(B to A)", dict(
                     opcode=0x10, flags=0, path=9, conn=CONN_A, psn=70000,
                     ts=0x3ADF0000, sack_high=70000, dsn_cum=0x000A2000,
                     echo_ts=0x07600000, rate_mbps=25000, ce_count=3,
                     rx_count=1234, sack=bits),
                 text="B acknowledges A's path 9 with `sack_high` 70000 and "
                 "bits 0, 1, 63, 64, 65, 127, 128, 200, 254 and 255 set: "
                 "PSNs 70000, 69999, 69937, 69936, 69935, 69873, 69872, "
                 "69800, 69746 and 69745 arrived. Read as four big-endian "
                 "64-bit words (R-HDR-14), bit 64k being the most "
                 "significant bit of word k, the bitmap is %s." %
                 ", ".join("0x%016X" % w for w in sack_words(bits)),
                 action="accept: A resolves every unresolved PSN of path 9 "
                 "at or before 70000 whose bit is set as delivered, every "
                 "other one as lost (R-LOSS-1, `reorder_pkts` 0), and "
                 "learns that every DSN before 0x000A2000 is accepted"))
    # -- ACK across PSN wrap
    v.append(Vec("ack_psn_wrap", "ACK across the PSN wrap (B to A)", dict(
        opcode=0x10, flags=0, path=7, conn=CONN_A, psn=1, ts=0x3ADF1000,
        sack_high=1, dsn_cum=0x000A1B30, echo_ts=0x075C3000,
        rate_mbps=50000, ce_count=0, rx_count=5, sack=[0, 1, 3]),
        text="Path 7 of A wrapped after the SEND_IMM of 12.5 (PSN "
        "0xFFFFFFFE): A then sent PSNs 0xFFFFFFFF, 0 and 1. The ACK has "
        "`sack_high` 1 and bits 0, 1 and 3 set: PSNs 1, 0 and 0xFFFFFFFE "
        "arrived, PSN 0xFFFFFFFF (bit 2) did not. With serial arithmetic "
        "(section 1.4) 1 is after 0xFFFFFFFE.",
        action="accept: A resolves PSNs 0xFFFFFFFE, 0 and 1 as delivered "
        "and 0xFFFFFFFF as lost (its DSN is retransmitted on another "
        "path), and takes an RTT sample from `echo_ts`, the ts of PSN 1"))
    # -- fatal NACKs
    v.append(Vec("nack_remote_access", "NACK REMOTE_ACCESS, fatal "
                 "(B to A)", f_nack(2, 2, 1240, 0x3ADF2000, 0x000A1B40, 1, 9),
                 text="A WRITE of A's stream 1 (MSN 9, DSN 0x000A1B40) "
                 "arrived on A's path 2 with PSN 1240 and named memory "
                 "outside B's region. B answers and enters ERROR "
                 "(R-NACK-6).",
                 action="accept: A releases the transmission (path 2, PSN "
                 "1240), completes the WRITE with REM_ACCESS_ERR and enters "
                 "ERROR (R-NACK-5)"))
    v.append(Vec("nack_no_packet", "NACK INVALID_REQUEST naming no packet "
                 "(B to A)", f_nack(3, 0, 0, 0x3ADF3000, 0x000A1B2E, 2, 0),
                 text="The SEND of 12.4 completed at B naming a receive "
                 "that is not the stream's next one (R-MSG-16). No single "
                 "packet is at fault: MTH `path` 0 and `psn` 0; the NKH "
                 "names the message (stream 2, MSN 0) and the DSN of its "
                 "first packet, which A has normally acknowledged already.",
                 action="accept: the DSN does not match, so A matches the "
                 "NACK by stream and MSN to its outstanding work request "
                 "(R-NACK-4), releases no transmission, completes it with "
                 "REM_INV_REQ_ERR and enters ERROR; with no such work "
                 "request it ignores the NACK (`stale`)"))
    v.append(Vec("nack_conn_closed", "NACK CONN_CLOSED (A to B)",
                 f_nack(5, 1, 78, 0x075D0000, 0x00000102, 1, 8,
                        conn=CONN_B),
                 text="A has closed the connection; a READ_RESP of B "
                 "(DSN 0x102 of B's space, A's stream 1, MSN 8) arrives on "
                 "B's path 1 with PSN 78.",
                 action="accept: B enters ERROR; the DSN is a READ "
                 "response, which no local work request owns, so every "
                 "work request completes with FLUSH_ERR (R-NACK-5)"))
    # -- PROBE with RETX
    pr = f_probe()
    pr.update(flags=ACKREQ | RETX, psn=10, ts=0x075E0000)
    v.append(Vec("probe_retx", "PROBE with RETX: a tail-loss probe "
                 "(A to B)", pr,
                 text="Path 6 of A went silent after the PROBE of 12.10; "
                 "its tail-loss probe (R-RTT-7) takes the next PSN, 10, "
                 "with ACKREQ and RETX (R-PATH-7).",
                 action="accept: B records PSN 10 on path 6 if it is the "
                 "path's next PSN (R-VAL-2) and answers it at once with an "
                 "ACK naming it (R-PATH-9, R-VAL-4); RETX starts B's "
                 "ACK-route check (R-ACK-8) if PSN 10 is near path 6's "
                 "highest recorded PSN"))
    # -- zero-length messages
    v.append(Vec("write_zero", "Zero-length WRITE (A to B)", dict(
        opcode=0x01, flags=ACKREQ, path=4, conn=CONN_B, psn=18,
        ts=0x075F0000, dsn=0x000A1B41, stream=1, msn=10, msg_len=0,
        offset=0, va=VA + 0x200, rkey=RKEY),
        text="One packet, `msg_len` 0, no payload (R-MSG-2); `va` and "
        "`rkey` are checked like any other WRITE's: the key must name a "
        "region that allows remote write and `va` lie in it, its end "
        "included.",
        action="accept: B accesses no memory, marks the DSN and "
        "acknowledges it; with a bad key, NACK REMOTE_ACCESS (R-MSG-4)"))
    v.append(Vec("send_zero", "Zero-length SEND (A to B)", dict(
        opcode=0x03, flags=ACKREQ, path=0, conn=CONN_B, psn=1,
        ts=0x075F1000, dsn=0x000A1B42, stream=2, msn=2, msg_len=0,
        offset=0, ssn=2),
        text="Consumes receive 2 of stream 2 (the SEND of 12.4 used "
        "receive 0, the SEND_IMM of 12.5 receive 1).",
        action="accept: B completes receive 2 with byte count 0 when the "
        "message completes; if receive 2 is not posted, NACK RNR "
        "(R-RETRY-3)"))
    v.append(Vec("read_req_zero", "Zero-length READ_REQ (A to B)", dict(
        opcode=0x05, flags=ACKREQ, path=5, conn=CONN_B, psn=43,
        ts=0x075F2000, dsn=0x000A1B43, stream=1, msn=11, msg_len=0,
        offset=0, va=VA + 0x2000, rkey=RKEY),
        action="accept: the key and `va` are checked (R-MSG-2, R-MSG-9); B "
        "answers with exactly one READ_RESP without payload (next "
        "vector)"))
    v.append(Vec("read_resp_zero", "Its one READ_RESP (B to A)", dict(
        opcode=0x06, flags=ACKREQ, path=2, conn=CONN_A, psn=200,
        ts=0x3ADF4000, dsn=0x103, stream=1, msn=11, msg_len=0, offset=0),
        action="accept: A completes the READ once it has accepted this "
        "packet (R-ORD-6)"))
    # -- a message in three packets, mtu 256
    body = pattern(600, 0x11)
    for k, (path, psn) in enumerate([(0, 2), (1, 40), (2, 1235)]):
        part = body[k * 256:(k + 1) * 256]
        v.append(Vec("send_multi_%d" % k, "600-byte SEND, packet %d of 3 "
                     "(A to B, mtu 256)" % (k + 1), dict(
                         opcode=0x03, flags=ACKREQ if k == 2 else 0,
                         path=path, conn=CONN_B, psn=psn,
                         ts=0x07600000 + k * 100, dsn=0x000A1B44 + k,
                         stream=3, msn=0, msg_len=600, offset=k * 256,
                         ssn=0), part,
                     text=("On a connection with mtu 256 (the smallest, "
                           "R-ENC-9) a 600-byte SEND of stream 3 is three "
                           "packets of 256, 256 and 88 bytes at offsets 0, "
                           "256 and 512 (R-MSG-1), each with its own DSN "
                           "and path, the same MSN, SSN and `msg_len`; only "
                           "the last asks for an immediate ACK. Payload "
                           "byte i of the message is (0x11 + 7 i) mod 256."
                           if k == 0 else ""),
                     action=("accept: B places the bytes at offset %d of "
                             "receive 0 of stream 3" % (k * 256)) +
                     ("; the message completes when all three packets are "
                      "accepted, in any order (R-ORD-3)" if k == 2 else "")))
    # -- whole IP datagrams
    v.append(Vec("ipv4_write", "IPv4 datagram carrying the WRITE of 12.2",
                 f_write(), TEXT, frame=dict(
                     family=4, src="192.0.2.10", dst="192.0.2.20",
                     sport=49153, dport=4797, ecn=2),
                 text="From A (192.0.2.10, path 3's source port 49153) to "
                 "B (192.0.2.20, port 4797): IPv4 without options, DSCP 0, "
                 "ECN ECT(0) (R-ENC-6), identification 0, DF set "
                 "(R-ENC-8), TTL 64, protocol 17, header checksum; UDP "
                 "with its checksum computed (R-ENC-7). The UDP payload is "
                 "vector 12.2 unchanged.",
                 action="accept: B checks the IP and UDP checksums, then "
                 "handles the payload as 12.2"))
    v.append(Vec("ipv6_ack", "IPv6 datagram carrying the ACK of 12.8",
                 f_ack(), frame=dict(
                     family=6, src="2001:db8::b", dst="2001:db8::a",
                     sport=50001, dport=4797, ecn=2, flow=50001),
                 text="From B (2001:db8::b, the source port 50001 of the "
                 "path the ACK is sent from, R-ACK-3) to A (2001:db8::a, "
                 "port 4797): traffic class ECT(0), flow label 50001 "
                 "(derived from the path, R-ENC-5; mroce uses the source "
                 "port), next header 17, hop limit 64; the UDP checksum is "
                 "mandatory over IPv6 (R-ENC-7). The UDP payload is vector "
                 "12.8 unchanged.",
                 action="accept: A checks the UDP checksum, then handles "
                 "the payload as 12.8"))
    v.append(Vec("ipv6_bad_udp_csum", "IPv6 datagram with a wrong UDP "
                 "checksum", f_ack(), frame=dict(
                     family=6, src="2001:db8::b", dst="2001:db8::a",
                     sport=50001, dport=4797, ecn=2, flow=50001,
                     bad_csum=0x1234),
                 text="The datagram above with the UDP checksum replaced "
                 "by 0x1234.",
                 action="drop udp_csum: the datagram is dropped before "
                 "MetaRoCE sees it (R-ENC-7), normally by the IP stack"))
    # -- negative vectors: reserved and defined-zero fields (R-VER-4)
    v.append(Vec("neg_reserved_flags", "WRITE with the reserved flag bit "
                 "set", f_write(), TEXT, raw=dict(flags_low=0x1),
                 text="Vector 12.2 with byte 0 = 0x19: flag value 0x1 set "
                 "(reserved without SEAL, R-AEAD-1); the ICRC is "
                 "recomputed.",
                 action="ignore: processed exactly as 12.2 (R-HDR-3, "
                 "R-VER-4); an encoder re-emits 0x18"))
    v.append(Vec("neg_dxh_reserved", "SEND with the DXH reserved bytes "
                 "set", f_send(), TEXT, raw=dict(dxh_res=0xBEEF),
                 text="Vector 12.4 with DXH bytes 6-7 = 0xBEEF; the ICRC "
                 "is recomputed.",
                 action="ignore: processed exactly as 12.4 (R-HDR-7, "
                 "R-VER-4)"))
    na = f_nack(2, 2, 1240, 0x3ADF2000, 0x000A1B40, 1, 9)
    nz = dict(na, nak_info=0x12345678)
    v.append(Vec("neg_nkh_reserved", "NACK with the NKH reserved byte and "
                 "`info` set", nz, raw=dict(nkh_res=0x5A),
                 text="The REMOTE_ACCESS NACK above with NKH byte 7 = 0x5A "
                 "and `info` 0x12345678, which only RNR uses; the ICRC is "
                 "recomputed.",
                 action="ignore: processed exactly as the REMOTE_ACCESS "
                 "NACK above (R-HDR-7, R-VER-4)"))
    ak = dict(f_ack(), psn=0xDEADBEEF)
    v.append(Vec("neg_ack_psn", "ACK whose MTH `psn` names no PROBE", ak,
                 text="Vector 12.8 with MTH `psn` 0xDEADBEEF, which is no "
                 "unresolved PROBE of A's path 3; the ICRC is recomputed.",
                 action="accept: A processes it exactly as 12.8; the "
                 "`psn` resolves nothing (R-VAL-4)"))
    # -- negative vectors: dropped at decoding (R-RX-1)
    v.append(Vec("neg_version_2", "PROBE of version 2", f_probe(),
                 version=2,
                 text="Vector 12.10 with byte 0 = 0x28 (version 2); the "
                 "ICRC is recomputed.",
                 action="drop version: silently, no reply, nothing else "
                 "read (R-VER-2, R-RX-1 step 2)"))
    v.append(Vec("neg_version_0", "PROBE of version 0", f_probe(),
                 version=0, text="Byte 0 = 0x08 (version 0).",
                 action="drop version (R-VER-1, R-VER-2)"))
    v.append(Vec("neg_opcode_21", "Opcode 0x21 (withdrawn PROBE_ACK)",
                 dict(opcode=0x21, flags=0, path=6, conn=CONN_A, psn=0,
                      ts=0x3ADF5000),
                 text="An MTH with opcode 0x21 and a valid ICRC.",
                 action="drop opcode: in every connection state, no reply "
                 "(R-HDR-16, R-PATH-10, R-RX-1 step 3)"))
    v.append(Vec("neg_opcode_07", "Opcode 0x07 (reserved for atomics)",
                 dict(opcode=0x07, flags=ACKREQ, path=0, conn=CONN_B, psn=3,
                      ts=0x07610000),
                 text="An MTH with opcode 0x07 and a valid ICRC.",
                 action="drop opcode (R-MSG-15, R-RX-1 step 3)"))
    w = encode(f_write(), TEXT)
    v.append(Vec("neg_trunc_mth", "A 19-byte packet", data=w[:19],
                 text="The first 19 bytes of vector 12.2: shorter than an "
                 "MTH and an ICRC.",
                 action="drop trunc (R-RX-1 step 1)"))
    v.append(Vec("neg_trunc_hdr", "WRITE cut inside its ICRC", data=w[:51],
                 text="The first 51 bytes of vector 12.2: the WRITE "
                 "headers need 48 + 4 bytes.",
                 action="drop trunc (R-RX-1 step 4, before the ICRC)"))
    bad = bytearray(w)
    bad[-1] ^= 0x01
    v.append(Vec("neg_bad_icrc", "WRITE with a wrong ICRC",
                 data=bytes(bad),
                 text="Vector 12.2 with the last ICRC bit flipped.",
                 action="drop crc (R-CRC-4, R-RX-1 step 5)"))
    bad = bytearray(w)
    bad[50] ^= 0x20
    v.append(Vec("neg_bad_payload_bit", "WRITE with a payload bit flipped",
                 data=bytes(bad),
                 text="Vector 12.2 with payload byte 2 changed from 't' to "
                 "'T'; the ICRC is not recomputed.",
                 action="drop crc (R-RX-1 step 5); nothing is written"))
    v.append(Vec("neg_probe_payload", "PROBE with a payload", f_probe(),
                 b"\0\0\0\0",
                 text="Vector 12.10 with 4 zero bytes after the padding "
                 "and the ICRC recomputed over them.",
                 action="drop payload (R-HDR-6, R-RX-1 step 6)"))
    v.append(Vec("neg_reserved_syndrome", "NACK with a reserved syndrome",
                 f_nack(6, 2, 1240, 0x3ADF6000, 0x000A1B40, 1, 9),
                 text="The REMOTE_ACCESS NACK above with syndrome 0x06.",
                 action="stale: it decodes, but the sender ignores it and "
                 "counts `stale`; it releases nothing and does not end the "
                 "connection (R-NACK-2, R-NACK-4)"))
    # -- the ACK that answers a PROBE (R-VAL-4)
    v.append(Vec("ack_probe_echo", "ACK answering the PROBE of 12.10 "
                 "(B to A)", dict(
                     opcode=0x10, flags=0, path=6, conn=CONN_A, psn=9,
                     ts=0x3ADE9EA0, sack_high=9, dsn_cum=0x000A1B2D,
                     echo_ts=0x075C75E0, rate_mbps=50000, ce_count=0,
                     rx_count=10, sack=list(range(10))),
                 text="B had recorded PSNs 0-8 of A's path 6, so the PROBE "
                 "of 12.10 (PSN 9) is the path's next PSN and B records it "
                 "(R-VAL-2): `sack_high` 9, bits 0-9 set, `echo_ts` the "
                 "PROBE's ts. MTH `psn` names the PROBE answered; it equals "
                 "`sack_high` here, and would not if B had not recorded "
                 "the PROBE (it then still answers it, R-VAL-4).",
                 action="accept: A resolves the PROBE (and PSNs 0-8 if "
                 "unresolved) as delivered, takes an RTT sample, and path 6 "
                 "becomes ACTIVE if it was SUSPECT or PROBING (R-PATH-3)"))
    v.append(f_ackm())
    return v


def f_ackm():
    """ACKM: the ACK of 12.8 that also acknowledges A's paths 5 and 9."""
    recs = [dict(path=5, hold_ns=1000, sack_high=2000, echo_ts=0x075BC9A0,
                 ce_count=0, rx_count=1990, sack=list(range(8))),
            dict(path=9, hold_ns=264, sack_high=70000, echo_ts=0x075BCB00,
                 ce_count=3, rx_count=1234, sack=[0, 2, 64, 255])]
    f = dict(f_ack(), opcode=0x12, ts=0x3ADE8000)
    return Vec("ackm", "ACKM (B to A) for A's path 3 with two records", f,
               ackm_payload(0, recs), ackm=(0, recs),
               text="On a connection where both ends announced feature "
               "ACKM (0x4), B sends the ACK of 12.8 for A's path 3 as an "
               "ACKM (opcode 0x12) that also carries the acknowledgements "
               "of A's paths 5 and 9, which waited as records. MTH and AKH "
               "mean what they mean in 12.8 (`dsn_cum` and `rate_mbps` "
               "included, for the whole connection); path 3's own "
               "acknowledgement did not wait: preamble hold 0. Path 5's "
               "record: PSNs 1993-2000 received (bits 0-7), PSN 2000 "
               "arrived 1,000 ns before the ACKM was sent (hold 125 units "
               "of 8 ns, 0x007D). Path 9's record: bits 0, 2, 64 and 255 "
               "(PSNs 70000, 69998, 69936 and 69745), held 264 ns (33 "
               "units, 0x0021), 3 CE marks. The payload is 4 + 2 x 48 = "
               "100 bytes.",
               action="accept: with ACKM in effect A checks the whole "
               "packet first (count and length, record paths below its "
               "path count, distinct and not 3, each record evidence as "
               "an ACK of its path would be); then it processes path 5's "
               "record and path 9's record each as an ACK of that path "
               "without `dsn_cum`, taking for each path the RTT sample "
               "now - `echo_ts` - hold, then path 3 as the ACK of 12.8. "
               "Without ACKM in effect: drop opcode (R-VER-5)")


# ---- markdown ---------------------------------------------------------------


def hexdump(b):
    rows = []
    for off in range(0, len(b), 16):
        chunk = b[off:off + 16]
        left = " ".join("%02x" % x for x in chunk[:8])
        right = " ".join("%02x" % x for x in chunk[8:])
        rows.append(("%04x  %s  %s" % (off, left, right)).rstrip())
    return "\n".join(rows)


def fmt_fields(f):
    """The fields of a packet as table rows (header, fields)."""
    if f is None:
        return []
    op = f["opcode"]
    name = OPS[op][0] if op in OPS else "unassigned"
    flags = [n for n, m in (("ACKREQ", ACKREQ), ("RETX", RETX))
             if f.get("flags", 0) & m]
    mth = "flags 0x%X (%s), opcode 0x%02X (%s), path %d, conn 0x%08X, " \
          "psn %d, ts 0x%08X" % (f.get("flags", 0),
                                 " + ".join(flags) or "none", op, name,
                                 f.get("path", 0), f["conn"], f.get("psn", 0),
                                 f.get("ts", 0))
    rows = [("MTH", mth)]
    for h in (OPS[op][1] if op in OPS else ()):
        parts = []
        for k in HDR_FIELDS[h]:
            val = f[k]
            if k == "sack":
                parts.append("bits %s set" % ", ".join(map(str, val)))
            elif k in ("conn", "dsn", "ts", "echo_ts", "dsn_cum", "rkey",
                       "imm"):
                parts.append("%s 0x%08X" % (k, val))
            elif k == "va":
                parts.append("va 0x%016X" % val)
            elif k == "nak_code":
                parts.append("syndrome 0x%02X (%s)" % (
                    val, SYNDROMES.get(val, "reserved")))
            elif k == "nak_info":
                parts.append(("info 0x%08X" if val > 0xFFFF else "info %d")
                             % val)
            else:
                parts.append("%s %d" % (k, val))
        rows.append((h, ", ".join(parts)))
    return rows


def ackm_rows(hold_ns, recs):
    """The ACKM payload as table rows: preamble, then each record."""
    def hold(ns):
        return "hold %d (%d ns)" % (hold_units(ns), hold_units(ns) * 8)
    rows = [("ACKM", "count %d, reserved 0, %s" % (len(recs), hold(hold_ns)))]
    for k, r in enumerate(recs):
        rows.append(("record %d" % (k + 1),
                     "path %d, %s, sack_high %d, echo_ts 0x%08X, ce_count "
                     "%d, rx_count %d, bits %s set" % (
                         r["path"], hold(r["hold_ns"]), r["sack_high"],
                         r["echo_ts"], r["ce_count"], r["rx_count"],
                         ", ".join(map(str, r["sack"])))))
    return rows


def wrap(t):
    return "\n".join(textwrap.wrap(t, 76, break_on_hyphens=False,
                                   break_long_words=False))


def vec_markdown(v):
    out = []
    if v.text:
        out += [wrap(v.text), ""]
    rows = fmt_fields(v.fields)
    if v.frame:
        fr = v.frame
        rows = [("IPv%d" % fr["family"], "%s -> %s, ECN %s" % (
            fr["src"], fr["dst"], "ECT(0)" if fr["ecn"] == 2 else fr["ecn"]) +
            (", flow label %d" % fr["flow"] if fr["family"] == 6 else ""))]
        rows.append(("UDP", "source port %d, destination port %d, length "
                     "%d" % (fr["sport"], fr["dport"], 8 + len(v.inner))))
    if v.ackm:
        rows += ackm_rows(*v.ackm)
    elif v.payload and not v.frame:
        rows.append(("payload", "%d bytes" % len(v.payload)))
    if rows:
        out += ["| header | fields |", "|---|---|"]
        out += ["| %s | %s |" % r for r in rows]
        out.append("")
    if v.frame:
        what = "IP datagram"
    else:
        what = "bytes"
    out += ["%s, %d bytes:" % ("Whole " + what if v.frame else "Packet",
                               len(v.data)), "", "```", hexdump(v.data),
            "```", ""]
    out += [wrap("Receiver action: %s." % v.action), ""]
    return "\n".join(out)


def markdown(vecs):
    return "\n".join("### 12.X %s\n\n%s" % (v.title, vec_markdown(v))
                     for v in vecs)


# ---- check against the spec --------------------------------------------------


def sections(spec):
    """{title: body} and {number: body} of the level-3 headings of 12."""
    by_title, by_num = {}, {}
    parts = re.split(r"(?m)^### (12\.\d+) (.*)$", spec)
    for i in range(1, len(parts) - 2, 3):
        num, title, body = parts[i], parts[i + 1], parts[i + 2]
        body = re.split(r"(?m)^## ", body)[0]
        by_title[title.strip()] = body.strip("\n")
        by_num[num] = body
    return by_title, by_num


def dump_in(body):
    m = re.search(r"```\n((?:[0-9a-f]{4}  .*\n)+)```", body)
    return m.group(1).rstrip("\n") if m else None


def check(path):
    spec = open(path, encoding="utf-8").read()
    by_title, by_num = sections(spec)
    errors = []
    for num, v in OLD:
        got = dump_in(by_num.get(num, ""))
        if got != hexdump(v.data):
            errors.append("section %s: hex dump differs from the generator "
                          "(%s)" % (num, v.name))
    for v in new_vectors():
        want = vec_markdown(v).strip("\n")
        got = by_title.get(v.title)
        if got is None:
            errors.append("no section '### 12.N %s'" % v.title)
        elif got != want:
            errors.append("section '%s' differs from the generator; "
                          "rewrite it with: %s update %s" % (
                              v.title, sys.argv[0], path))
    for e in errors:
        print("metaroce_vectors: " + e, file=sys.stderr)
    return 1 if errors else 0


def update(path):
    """Rewrites the body of every generated section found in the spec."""
    spec = open(path, encoding="utf-8").read()
    for v in new_vectors():
        pat = re.compile(r"(?m)^(### 12\.\d+ %s\n)(.*?)(?=^### |^## )" %
                         re.escape(v.title), re.S)
        spec, n = pat.subn(lambda m: m.group(1) + "\n" +
                           vec_markdown(v).strip("\n") + "\n\n", spec)
        if n != 1:
            print("metaroce_vectors: no section for '%s': insert the output "
                  "of 'markdown' first" % v.title, file=sys.stderr)
            return 1
    open(path, "w", encoding="utf-8").write(spec)
    return check(path)


# ---- emit for the C test -----------------------------------------------------

C_FIELDS = ("opcode", "flags", "path", "conn", "psn", "ts", "dsn", "stream",
            "msn", "msg_len", "offset", "va", "rkey", "ssn", "imm",
            "sack_high", "dsn_cum", "echo_ts", "rate_mbps", "ce_count",
            "rx_count", "nak_code", "nak_info")


def emit(path):
    """Fields are the values a decoder reads from the bytes: reserved bits
    are absent (a decoder drops them), defined-zero fields keep what the
    bytes hold (the receiver ignores them when it processes the packet);
    canon is what an encoder emits for those fields."""
    lines = ["# generated by tests/vectors/metaroce_vectors.py emit"]
    for num, v in OLD:
        lines += emit_vec(v, "accept")
    for v in new_vectors():
        m = re.match(r"accept|ignore|stale|drop \w+", v.action)
        lines += emit_vec(v, m.group(0))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return 0


def emit_vec(v, action):
    kind = "frame%d" % v.frame["family"] if v.frame else "packet"
    out = ["vector %s %s %s" % (v.name, kind, action.replace(" ", "_")),
           "hex " + v.data.hex()]
    if v.frame:
        fr = v.frame
        ipb = ip6 if fr["family"] == 6 else ip4
        out.append("ip %s %s %d %d %d" % (ipb(fr["src"]).hex(),
                                          ipb(fr["dst"]).hex(), fr["sport"],
                                          fr["dport"], fr["ecn"]))
        out.append("inner " + v.inner.hex())
    if v.fields and v.fields["opcode"] in OPS:
        f = v.fields
        for k in C_FIELDS:
            if k in f:
                out.append("field %s %d" % (k, f[k]))
        if "sack" in f:
            for k, w in enumerate(sack_words(f["sack"])):
                out.append("field sack%d %d" % (k, w))
        out.append("payload " + (v.payload.hex() or "-"))
        out.append("canon " + v.canon.hex())
    out.append("end")
    return out


def main(argv):
    if len(argv) == 2 and argv[1] == "markdown":
        sys.stdout.write(markdown(new_vectors()))
        return 0
    if len(argv) == 3 and argv[1] == "check":
        return check(argv[2])
    if len(argv) == 3 and argv[1] == "update":
        return update(argv[2])
    if len(argv) == 3 and argv[1] == "emit":
        return emit(argv[2])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
