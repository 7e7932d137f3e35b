#!/usr/bin/env python3
"""Independent generator of the secure-mode test vectors of docs/spec.md
(sections 12.43-12.46, rules R-AEAD-*).

Written from the spec text alone, with the Python standard library only:
AES-128 and GCM (NIST SP 800-38D) are implemented here, bit by bit and
slowly, HKDF-Expand (RFC 5869) with hmac/hashlib. Nothing is shared with
mroce's C code, which uses intel-ipsec-mb or OpenSSL.

  aead_vectors.py            print the spec text of sections 12.43-12.46
  aead_vectors.py --c        print the vectors as C arrays (tests/unit)
  aead_vectors.py --check F  exit 1 unless file F holds that spec text
"""
import hashlib
import hmac
import struct
import sys

# ---- AES-128 (FIPS 197) ----


def _xtime(a):
    a <<= 1
    return (a ^ 0x11B) if a & 0x100 else a


def _gmul(a, b):
    r = 0
    while b:
        if b & 1:
            r ^= a
        a = _xtime(a)
        b >>= 1
    return r


def _sbox():
    s = [0] * 256
    for x in range(256):
        inv = 0
        if x:
            inv = next(y for y in range(1, 256) if _gmul(x, y) == 1)
        b = inv
        r = inv
        for _ in range(4):
            b = ((b << 1) | (b >> 7)) & 0xFF
            r ^= b
        s[x] = r ^ 0x63
    return s


SBOX = _sbox()


def aes128_expand(key):
    w = [list(key[4 * i:4 * i + 4]) for i in range(4)]
    rcon = 1
    for i in range(4, 44):
        t = list(w[i - 1])
        if i % 4 == 0:
            t = t[1:] + t[:1]
            t = [SBOX[b] for b in t]
            t[0] ^= rcon
            rcon = _xtime(rcon) & 0xFF
        w.append([a ^ b for a, b in zip(w[i - 4], t)])
    return [sum(w[4 * r:4 * r + 4], []) for r in range(11)]


def aes128_block(rk, block):
    s = [a ^ b for a, b in zip(block, rk[0])]
    for rnd in range(1, 11):
        s = [SBOX[b] for b in s]
        s = [s[(c * 4 + r + 4 * r) % 16] for c in range(4) for r in range(4)]
        if rnd != 10:
            m = []
            for c in range(4):
                a = s[4 * c:4 * c + 4]
                m += [_gmul(a[0], 2) ^ _gmul(a[1], 3) ^ a[2] ^ a[3],
                      a[0] ^ _gmul(a[1], 2) ^ _gmul(a[2], 3) ^ a[3],
                      a[0] ^ a[1] ^ _gmul(a[2], 2) ^ _gmul(a[3], 3),
                      _gmul(a[0], 3) ^ a[1] ^ a[2] ^ _gmul(a[3], 2)]
            s = m
        s = [a ^ b for a, b in zip(s, rk[rnd])]
    return bytes(s)

# ---- GCM (SP 800-38D), 96-bit IV, 128-bit tag ----


def _gf_mul(x, y):
    r, v = 0, y
    for i in range(127, -1, -1):
        if (x >> i) & 1:
            r ^= v
        v = (v >> 1) ^ (0xE1 << 120) if v & 1 else v >> 1
    return r


def _ghash(h, data):
    y = 0
    for i in range(0, len(data), 16):
        y = _gf_mul(y ^ int.from_bytes(data[i:i + 16], "big"), h)
    return y


def _pad(b):
    return b + bytes(-len(b) % 16)


def gcm_seal(key, iv, aad, pt):
    rk = aes128_expand(key)
    h = int.from_bytes(aes128_block(rk, bytes(16)), "big")
    ct = bytearray()
    for i in range(0, len(pt), 16):
        ctr = iv + struct.pack(">I", 2 + i // 16)
        ks = aes128_block(rk, ctr)
        ct += bytes(a ^ b for a, b in zip(pt[i:i + 16], ks))
    lens = struct.pack(">QQ", 8 * len(aad), 8 * len(ct))
    s = _ghash(h, _pad(aad) + _pad(bytes(ct)) + lens)
    t = int.from_bytes(aes128_block(rk, iv + b"\0\0\0\1"), "big") ^ s
    return bytes(ct), t.to_bytes(16, "big")


def hkdf_expand(prk, info, n):
    out, t, i = b"", b"", 1
    while len(out) < n:
        t = hmac.new(prk, t + info + bytes([i]), hashlib.sha256).digest()
        out += t
        i += 1
    return out[:n]


def _selftest():
    # GCM specification, test case 4
    k = bytes.fromhex("feffe9928665731c6d6a8f9467308308")
    iv = bytes.fromhex("cafebabefacedbaddecaf888")
    p = bytes.fromhex(
        "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
        "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39")
    a = bytes.fromhex("feedfacedeadbeeffeedfacedeadbeefabaddad2")
    c, t = gcm_seal(k, iv, a, p)
    assert c.hex() == (
        "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e"
        "21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091")
    assert t.hex() == "5bc94fbc3221a5db94fae95ae7121a47"
    # GCM specification, test case 1 (empty everything)
    _, t = gcm_seal(bytes(16), bytes(12), b"", b"")
    assert t.hex() == "58e2fccefa7e3061367f1d57a4e7455a"
    # RFC 5869, test case 1 (expand step)
    prk = bytes.fromhex(
        "077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5")
    okm = hkdf_expand(prk, bytes.fromhex("f0f1f2f3f4f5f6f7f8f9"), 42)
    assert okm.hex() == ("3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c"
                         "5db02d56ecc4c5bf34007208d5b887185865")

# ---- mroce's key schedule and framing (R-AEAD-2..R-AEAD-7) ----


AUTH, ENCRYPT = 1, 2
A_ID, B_ID = 0x00C0FFEE, 0x1A2B3C4D
SECRET = bytes(range(32))


def dir_secret(secret, mode, dst, src):
    return hkdf_expand(secret, b"mroce dir" + struct.pack(">BII", mode, dst,
                                                          src), 32)


def epoch_secret(d0, epoch):
    d = d0
    for _ in range(epoch):
        d = hkdf_expand(d, b"mroce ku", 32)
    return d


def key_iv(d):
    return hkdf_expand(d, b"mroce key", 16), hkdf_expand(d, b"mroce iv", 12)


CTL = (0x10, 0x11, 0x12, 0x30, 0x31)  # ACK, NACK, ACKM, CLOSE(_ACK)


def nonce(iv, pkt):
    op = pkt[1]
    if op in CTL:
        n = struct.pack(">HHII", 1, 0, 0, struct.unpack(">I", pkt[12:16])[0])
    else:
        path = struct.unpack(">H", pkt[2:4])[0]
        n = struct.pack(">HHII", 0, path, 0,
                        struct.unpack(">I", pkt[8:12])[0])
    return bytes(a ^ b for a, b in zip(iv, n))


def mth(flags, op, path, conn, psn, ts):
    return struct.pack(">BBHIII", 0x10 | flags, op, path, conn, psn, ts)


def seal(mode, epoch, hdr, payload, dst, src):
    """hdr: the headers with SEAL, phase, CSN and DXH byte 6 already set."""
    key, iv = key_iv(epoch_secret(dir_secret(SECRET, mode, dst, src), epoch))
    n = nonce(iv, hdr)
    if mode == AUTH:
        _, tag = gcm_seal(key, n, hdr + payload, b"")
        return hdr + payload + tag
    ct, tag = gcm_seal(key, n, hdr, payload)
    return hdr + ct + tag


def write_hdrs(phase, prot):
    # 12.2's WRITE, sealed: flags ACKREQ | SEAL | phase, DXH byte 6 = prot
    h = mth(0x8 | 0x2 | phase, 0x01, 3, B_ID, 1000, 0x075BCD15)
    dxh = struct.pack(">IHBBIII", 0x000A1B2C, 1, prot, 0, 5, 8, 0)
    reth = struct.pack(">QI", 0x00007F3A12345000, 0xC0FFEE01)
    return h + dxh + reth


def ack_hdrs(csn):
    # 12.8's ACK, sealed: SEAL, phase 0, MTH ts = CSN
    h = mth(0x2, 0x10, 3, A_ID, 0, csn)
    sack = bytes.fromhex("d020") + bytes(30)
    akh = struct.pack(">IIIIHH", 1000, 662317, 0x075BCD15, 50000, 17, 749)
    return h + akh + sack


def vectors():
    v = []
    w_auth = seal(AUTH, 0, write_hdrs(0, 0), b"MetaRoCE", B_ID, A_ID)
    w_enc = seal(ENCRYPT, 1, write_hdrs(1, 1), b"MetaRoCE", B_ID, A_ID)
    a_enc = seal(ENCRYPT, 0, ack_hdrs(5), b"", A_ID, B_ID)
    v.append(("auth_write", w_auth))
    v.append(("enc_write", w_enc))
    v.append(("enc_ack", a_enc))
    return v


def hexdump(b):
    rows = []
    for i in range(0, len(b), 16):
        r = b[i:i + 16]
        left = " ".join("%02x" % x for x in r[:8])
        right = " ".join("%02x" % x for x in r[8:])
        rows.append(("%04x  %s  %s" % (i, left, right)).rstrip())
    return "\n".join(rows)


def schedule_table():
    rows = ["| direction, mode | value | bytes |", "|---|---|---|"]
    for name, mode, dst, src in (("A to B, authenticated", AUTH, B_ID, A_ID),
                                 ("A to B, encrypted", ENCRYPT, B_ID, A_ID),
                                 ("B to A, encrypted", ENCRYPT, A_ID, B_ID)):
        d0 = dir_secret(SECRET, mode, dst, src)
        for e in (0, 1):
            if e == 1 and name != "A to B, encrypted":
                continue
            d = epoch_secret(d0, e)
            k, iv = key_iv(d)
            rows.append("| %s | D(%d) | `%s` |" % (name, e, d.hex()))
            rows.append("| %s | key(%d) | `%s` |" % (name, e, k.hex()))
            rows.append("| %s | iv(%d) | `%s` |" % (name, e, iv.hex()))
    return "\n".join(rows)


def nonce_of(mode, epoch, pkt, dst, src):
    _, iv = key_iv(epoch_secret(dir_secret(SECRET, mode, dst, src), epoch))
    return nonce(iv, pkt).hex()


def spec_text():
    v = dict(vectors())
    t = []
    t.append("### 12.43 Secure modes: key schedule\n")
    t.append("The connection secret of these vectors is the 32 bytes "
             "`00 01 02 ... 1f`;\nA's connection id is 0x00C0FFEE and B's "
             "0x1A2B3C4D, as above. D(e) is the\nsecret of key epoch e of "
             "a direction, key(e) and iv(e) its AES-128-GCM key\nand IV "
             "(R-AEAD-6, R-AEAD-7):\n")
    t.append(schedule_table() + "\n")
    w = v["auth_write"]
    t.append("### 12.44 WRITE (A to B), authenticated mode, key epoch 0\n")
    t.append("The WRITE of 12.2 on an authenticated connection: byte 0 is "
             "0x1a (ACKREQ,\nSEAL, key phase 0), DXH byte 6 is 0 (payload "
             "in clear);\nnonce = iv(0) XOR (0, path 3, 0, PSN 1000) =\n"
             "`%s`; AAD = bytes 0-55 (headers and payload),\nno "
             "plaintext; the tag is bytes 56-71. Total %d bytes:\n"
             % (nonce_of(AUTH, 0, w, B_ID, A_ID), len(w)))
    t.append("```\n" + hexdump(w) + "\n```\n")
    w = v["enc_write"]
    t.append("### 12.45 WRITE (A to B), encrypted mode, key epoch 1\n")
    t.append("The same WRITE on an encrypted connection after one key "
             "update: byte 0 is\n0x1b (ACKREQ, SEAL, key phase 1), DXH "
             "byte 6 is 0x01 (payload encrypted);\nnonce = iv(1) XOR "
             "(0, path 3, 0, PSN 1000) =\n`%s`; AAD = bytes 0-47 (the "
             "headers),\nplaintext `MetaRoCE`, ciphertext bytes 48-55, "
             "tag bytes 56-71. Total %d\nbytes:\n"
             % (nonce_of(ENCRYPT, 1, w, B_ID, A_ID), len(w)))
    t.append("```\n" + hexdump(w) + "\n```\n")
    a = v["enc_ack"]
    t.append("### 12.46 ACK (B to A), encrypted mode, CSN 5\n")
    t.append("The ACK of 12.8 on the encrypted connection, B's sixth "
             "control packet: byte 0\nis 0x12 (SEAL, key phase 0), MTH ts "
             "carries CSN 5 in place of a clock\nvalue; nonce = iv(0) of "
             "B to A XOR (1, 0, 0, CSN 5) =\n`%s`; AAD = bytes 0-67, no "
             "payload; the tag is bytes\n68-83. Total %d bytes:\n"
             % (nonce_of(ENCRYPT, 0, a, A_ID, B_ID), len(a)))
    t.append("```\n" + hexdump(a) + "\n```\n")
    return "\n".join(t)


def c_text():
    out = ["/* Generated by tests/vectors/aead_vectors.py --c */"]
    for name, b in vectors():
        out.append("static const uint8_t vec_%s[%d] = {" % (name, len(b)))
        for i in range(0, len(b), 12):
            out.append("    " + ", ".join("0x%02x" % x for x in b[i:i + 12])
                       + ",")
        out.append("};")
    return "\n".join(out) + "\n"


def main(argv):
    _selftest()
    if len(argv) == 1:
        sys.stdout.write(spec_text())
        return 0
    if argv[1] == "--c":
        sys.stdout.write(c_text())
        return 0
    if argv[1] == "--check" and len(argv) == 3:
        with open(argv[2], encoding="utf-8") as f:
            doc = f.read()
        if spec_text() not in doc:
            sys.stderr.write("%s does not hold the vectors this generator "
                             "computes; run %s and compare\n"
                             % (argv[2], argv[0]))
            return 1
        print("aead vectors: %s matches" % argv[2])
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
