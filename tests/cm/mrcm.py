"""An independent implementation of mroce's set-up exchange (docs/spec.md
section 4.5, R-CM-*), written from the spec in plain Python: the message
codec, the PSK key schedule (HKDF per RFC 5869 on the standard library's
hmac and hashlib, not OpenSSL's EVP_KDF as src/cm uses), and just enough
of the MetaRoCE packet format (section 3) and of mroce-perf's control
messages to play a hostile peer.

Used by tests/cm/cm_vectors.py (the spec's CM vectors) and by the
black-box probes in tests/net/cm_*.sh and tests/net/perf_*.sh."""

import hashlib
import hmac
import socket
import struct

MAGIC = 0x4D52434D  # "MRCM"
VERSION = 2
HDR_LEN = 12
HELLO, READY, APP, BYE, REJECT, KEEPALIVE = 1, 2, 3, 4, 5, 6
TYPE_NAMES = {1: "HELLO", 2: "READY", 3: "APP", 4: "BYE", 5: "REJECT",
              6: "KEEPALIVE"}
MODE_NONE, MODE_AUTH, MODE_ENC = 1, 2, 4
FEAT_PSK = 1
AF_INET, AF_INET6 = 4, 6
REJ = {1: "VERSION", 2: "PROTO_VERSION", 3: "MALFORMED", 4: "UNEXPECTED",
       5: "FEATURE", 6: "SECURITY", 7: "AUTH", 8: "PARAMS", 9: "ADDRESS",
       10: "LIMIT", 11: "TRANSPORT", 12: "APP", 13: "INTERNAL"}
HELLO_FIXED = 132


# ---- key schedule (R-CM-10) ----

def hkdf_extract(salt, ikm):
    return hmac.new(salt, ikm, hashlib.sha256).digest()


def hkdf_expand(prk, info, n):
    out, t, i = b"", b"", 1
    while len(out) < n:
        t = hmac.new(prk, t + info + bytes([i]), hashlib.sha256).digest()
        out += t
        i += 1
    return out[:n]


class Psk:
    def __init__(self, key):
        assert 16 <= len(key) <= 64
        self.key = key
        early = hkdf_extract(b"mroce-cm2", key)
        self.psk_id = hkdf_expand(early, b"mroce-cm2 psk id", 8)
        self.k_hello = hkdf_expand(early, b"mroce-cm2 hello", 32)

    def hello_tag(self, prefix, msg_without_tag):
        return hmac.new(self.k_hello, prefix + msg_without_tag,
                        hashlib.sha256).digest()

    def session(self, nonce_c, nonce_s, th):
        master = hkdf_extract(nonce_c + nonce_s, self.key)

        def ex(label):
            return hkdf_expand(master, label + th, 32)
        return {"secret": ex(b"mroce-cm2 secret"),
                "ready": [ex(b"mroce-cm2 client ready"),
                          ex(b"mroce-cm2 server ready")],
                "msg": [ex(b"mroce-cm2 client msg"),
                        ex(b"mroce-cm2 server msg")]}


def transcript(hello_c, hello_s):
    return hashlib.sha256(hello_c + hello_s).digest()


def ready_mac(session, side, th):
    return hmac.new(session["ready"][side], th, hashlib.sha256).digest()


def msg_tag(session, side, seq, hdr, body):
    return hmac.new(session["msg"][side], struct.pack(">Q", seq) + hdr + body,
                    hashlib.sha256).digest()[:16]


# ---- framing (R-CM-2) ----

def hdr(mtype, body_len, version=VERSION, magic=MAGIC):
    return struct.pack(">IBBHI", magic, version, mtype, 0, body_len)


def msg(mtype, body=b"", version=VERSION):
    return hdr(mtype, len(body), version) + body


def tagged(session, side, seq, mtype, body=b""):
    """A message after READY with a key: body || 16-byte tag (R-CM-11)."""
    h = hdr(mtype, len(body) + 16)
    return h + body + msg_tag(session, side, seq, h, body)


def reject(reason, detail=0, text=b""):
    return msg(REJECT, struct.pack(">HBBI", reason, VERSION, VERSION, detail)
               + text)


def decode_hdr(b):
    magic, version, mtype, _res, length = struct.unpack(">IBBHI", b[:12])
    return magic, version, mtype, length


def decode_reject(body):
    reason, vmin, vmax, detail = struct.unpack(">HBBI", body[:8])
    return {"reason": reason, "name": REJ.get(reason, "?"), "vmin": vmin,
            "vmax": vmax, "detail": detail, "text": body[8:]}


# ---- HELLO (R-CM-6) ----

HELLO_DEFAULTS = dict(
    proto_min=1, proto_max=1, transport=0, modes=MODE_NONE, features=0,
    required=0, nonce=bytes(32), psk_id=bytes(8), conn_id=1, udp_port=4797,
    af=AF_INET, addrs=[bytes([127, 0, 0, 1])], n_paths=16, n_streams=1,
    mtu=4096, dsn_window=4096, msg_window=64, max_rd=16, path_window=256,
    ack_every=1, ack_delay_ns=2000, min_rto_ns=1000000,
    max_rto_ns=100000000, retry_cnt=15, rnr_retry=7, keepalive_ms=1000,
    rnr_max_us=100, init_psn=0, init_dsn=0, init_msn=0, qpn=(), psn=(),
    blob=b"", ext=b"")


def hello_body(f, psk=None, prefix=b""):
    """Encodes a HELLO message (header included) from field dict f (missing
    fields take HELLO_DEFAULTS). With psk, features get FEAT_PSK and the
    message ends with its tag over prefix || message (R-CM-10)."""
    v = dict(HELLO_DEFAULTS)
    v.update(f)
    if psk:
        v["features"] |= FEAT_PSK
        v["required"] |= FEAT_PSK
        v["psk_id"] = psk.psk_id
    qpn, psn = list(v["qpn"]), list(v["psn"])
    head = struct.pack(">BBBBII", v["proto_min"], v["proto_max"],
                       v["transport"], v["modes"], v["features"],
                       v["required"]) + v["nonce"] + v["psk_id"]
    params = struct.pack(
        ">IHBBHHIIIIHHIQQBBHIIIIHHHH", v["conn_id"], v["udp_port"], v["af"],
        len(v["addrs"]), v["n_paths"], v["n_streams"], v["mtu"],
        v["dsn_window"], v["msg_window"], v["max_rd"], v["path_window"],
        v["ack_every"], v["ack_delay_ns"], v["min_rto_ns"], v["max_rto_ns"],
        v["retry_cnt"], v["rnr_retry"], v["keepalive_ms"], v["rnr_max_us"],
        v["init_psn"], v["init_dsn"], v["init_msn"], len(qpn), len(v["blob"]),
        len(v["ext"]), 0)
    assert len(head) + len(params) == HELLO_FIXED
    addrs = b"".join(a.ljust(16, b"\0") for a in v["addrs"])
    arrays = b"".join(struct.pack(">I", q) for q in qpn + psn)
    body = head + params + addrs + arrays + v["blob"] + v["ext"]
    if not psk:
        return msg(HELLO, body)
    m = hdr(HELLO, len(body) + 32) + body
    return m + psk.hello_tag(prefix, m)


def decode_hello(body):
    """The fields the probes need from a HELLO body."""
    (pmin, pmax, transport, modes, features, required) = struct.unpack(
        ">BBBBII", body[:12])
    nonce, psk_id = body[12:44], body[44:52]
    p = struct.unpack(">IHBBHHIIIIHHIQQBBHIIIIHHHH", body[52:132])
    names = ("conn_id udp_port af n_planes n_paths n_streams mtu dsn_window "
             "msg_window max_rd path_window ack_every ack_delay_ns "
             "min_rto_ns max_rto_ns retry_cnt rnr_retry keepalive_ms "
             "rnr_max_us init_psn init_dsn init_msn n_qps blob_len ext_len "
             "reserved").split()
    d = dict(zip(names, p))
    d.update(proto_min=pmin, proto_max=pmax, transport=transport, modes=modes,
             features=features, required=required, nonce=nonce,
             psk_id=psk_id)
    off = HELLO_FIXED
    d["addrs"] = []
    for _ in range(d["n_planes"]):
        a = body[off:off + 16]
        d["addrs"].append(a[:4] if d["af"] == AF_INET else a)
        off += 16
    off += 8 * d["n_qps"]
    d["blob"] = body[off:off + d["blob_len"]]
    return d


def hello_v1(conn_id=1, addr=b"\x7f\0\0\1", udp_port=4798, blob=b""):
    """A HELLO of CM version 1 (mroce before the normative exchange, in its
    last form: 60 fixed bytes ending with the initial sequence numbers)."""
    body = struct.pack(">IBBH", conn_id, 0, 4, udp_port) + addr.ljust(16,
                                                                     b"\0")
    body += struct.pack(">HHIIIIHHIII", 16, 1, 4096, 4096, 64, 16, 0,
                        len(blob), 0, 0, 0)
    return struct.pack(">IBBHI", MAGIC, 1, HELLO, 0, len(body) + len(blob)) \
        + body + blob


# ---- a client over TCP ----

class Conn:
    def __init__(self, host, port, timeout=10.0, src=None):
        self.s = socket.create_connection((host, port), timeout=timeout,
                                          source_address=src)

    def send(self, b):
        self.s.sendall(b)

    def recv_exact(self, n):
        out = b""
        while len(out) < n:
            c = self.s.recv(n - len(out))
            if not c:
                raise EOFError("peer closed after %d bytes" % len(out))
            out += c
        return out

    def recv_msg(self):
        """(type, body, whole message)."""
        h = self.recv_exact(HDR_LEN)
        magic, _v, mtype, length = decode_hdr(h)
        assert magic == MAGIC, "bad magic from peer"
        body = self.recv_exact(length)
        return mtype, body, h + body

    def close(self):
        self.s.close()


# ---- MetaRoCE packets (section 3) and mroce-perf control messages ----

def _crc32c_table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t


_CRC_T = _crc32c_table()


def crc32c(b):
    c = 0xFFFFFFFF
    for x in b:
        c = _CRC_T[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def read_req(conn, path, psn, dsn, stream, msn, length, va, rkey, ts=0):
    """A READ_REQ packet (MTH, DXH, RETH, ICRC; R-HDR-4)."""
    p = struct.pack(">BBHIII", 0x18, 0x05, path, conn, psn, ts)
    p += struct.pack(">IHHIII", dsn, stream, 0, msn, length, 0)
    p += struct.pack(">QI", va, rkey)
    return p + struct.pack(">I", crc32c(p))


def write_pkt(conn, path, psn, dsn, stream, msn, msg_len, offset, va, rkey,
              payload, ts=0):
    """A WRITE packet (MTH, DXH, RETH, payload, ICRC; R-HDR-4)."""
    p = struct.pack(">BBHIII", 0x18, 0x01, path, conn, psn, ts)
    p += struct.pack(">IHHIII", dsn, stream, 0, msn, msg_len, offset)
    p += struct.pack(">QI", va, rkey) + payload
    return p + struct.pack(">I", crc32c(p))


def perf_pattern(who, i):
    """mroce-perf's verification pattern (src/perf/perf.h)."""
    return ((i * 131 + (i >> 12) * 7 + who * 89) ^ 0x5A) & 0xFF


PERF_MAGIC = 0x4D505246  # "MPRF"
PERF_CONFIG, PERF_MR, PERF_RUN, PERF_GO, PERF_END, PERF_RESULT, PERF_QUIT = \
    range(1, 8)


def perf_ctl(cmd, *v):
    v = list(v) + [0] * (8 - len(v))
    return struct.pack(">II8Q", PERF_MAGIC, cmd, *v)


def perf_ctl_decode(b):
    magic, cmd, *v = struct.unpack(">II8Q", b)
    assert magic == PERF_MAGIC
    return cmd, v
