#!/usr/bin/env python3
"""The CM test vectors of docs/spec.md section 4.6, generated from the
spec's text by an implementation independent of src/cm (mrcm.py).

    python3 tests/cm/cm_vectors.py            prints the vectors (markdown)
    python3 tests/cm/cm_vectors.py --check docs/spec.md
                                              exits 1 unless every vector
                                              in the spec is byte-identical

tests/unit/cm_test.c checks src/cm's encoder and key schedule against the
same dumps, so the spec, this generator and the C code agree."""

import re
import sys

import mrcm

# The story: client A (10.0.0.1, 10.1.0.1) dials server B (10.0.0.2,
# 10.1.0.2), two planes each; A's connection id 0x00C0FFEE, B's
# 0x1A2B3C4D (as in section 12); fixed nonces and key for the example.
NONCE_C = bytes(range(0x00, 0x20))
NONCE_S = bytes(range(0x20, 0x40))
KEY = bytes(range(0x40, 0x60))

CLIENT = dict(conn_id=0x00C0FFEE, udp_port=4798,
              addrs=[bytes([10, 0, 0, 1]), bytes([10, 1, 0, 1])],
              n_paths=16, n_streams=2, nonce=NONCE_C, keepalive_ms=1000,
              init_psn=0x9E3779B9, init_dsn=0x7F4A7C15, init_msn=0x2545F491,
              blob=b"demo")
SERVER = dict(conn_id=0x1A2B3C4D, udp_port=4797,
              addrs=[bytes([10, 0, 0, 2]), bytes([10, 1, 0, 2])],
              n_paths=32, n_streams=1, nonce=NONCE_S, keepalive_ms=2000,
              init_psn=0x6C078965, init_dsn=0x5851F42D, init_msn=0x4C957F2D,
              dsn_window=8192, msg_window=128, blob=b"")


def dump(b):
    rows = []
    for off in range(0, len(b), 16):
        row = b[off:off + 16]
        left = " ".join("%02x" % x for x in row[:8])
        right = " ".join("%02x" % x for x in row[8:])
        rows.append(("%04x  %s  %s" % (off, left, right)).rstrip())
    return "\n".join(rows)


def vectors():
    """(name, bytes, description) in the order of the spec."""
    v = []
    hc = mrcm.hello_body(CLIENT)
    hs = mrcm.hello_body(SERVER)
    v.append(("cm-hello-c", hc, "client HELLO, no key"))
    v.append(("cm-hello-s", hs, "server HELLO, no key"))
    v.append(("cm-ready", mrcm.msg(mrcm.READY), "READY, no key"))
    psk = mrcm.Psk(KEY)
    modes = mrcm.MODE_NONE | mrcm.MODE_AUTH | mrcm.MODE_ENC
    kc = mrcm.hello_body(dict(CLIENT, modes=modes), psk)
    ks = mrcm.hello_body(dict(SERVER, modes=modes), psk, prefix=kc)
    th = mrcm.transcript(kc, ks)
    ses = psk.session(NONCE_C, NONCE_S, th)
    v.append(("cm-hello-c-psk", kc, "client HELLO with the key"))
    v.append(("cm-hello-s-psk", ks, "server HELLO with the key"))
    v.append(("cm-ready-c-psk",
              mrcm.msg(mrcm.READY, mrcm.ready_mac(ses, 0, th)),
              "client READY with the key"))
    v.append(("cm-ready-s-psk",
              mrcm.msg(mrcm.READY, mrcm.ready_mac(ses, 1, th)),
              "server READY with the key"))
    v.append(("cm-app-c-psk", mrcm.tagged(ses, 0, 0, mrcm.APP, b"hello"),
              "the client's first message after READY: APP \"hello\""))
    v.append(("cm-keepalive-s-psk", mrcm.tagged(ses, 1, 0, mrcm.KEEPALIVE),
              "the server's first message after READY: KEEPALIVE"))
    v.append(("cm-reject-version",
              mrcm.reject(1, 0, b"unsupported CM version"),
              "REJECT VERSION"))
    keys = [("psk_id", psk.psk_id), ("k_hello", psk.k_hello), ("th", th),
            ("secret", ses["secret"]), ("k_ready client", ses["ready"][0]),
            ("k_ready server", ses["ready"][1]),
            ("k_msg client", ses["msg"][0]), ("k_msg server", ses["msg"][1])]
    return v, keys


def markdown():
    v, keys = vectors()
    out = []
    for name, b, desc in v:
        out.append("Vector `%s` (%s, %d bytes):\n" % (name, desc, len(b)))
        out.append("```\n%s\n```\n" % dump(b))
    out.append("Derived values (hex) of the exchange with the key:\n")
    out.append("| value | bytes |\n|---|---|")
    for k, b in keys:
        out.append("| `%s` | `%s` |" % (k, b.hex()))
    return "\n".join(out) + "\n"


def check(path):
    text = open(path, encoding="utf-8").read()
    v, keys = vectors()
    bad = 0
    for name, b, _ in v:
        m = re.search(r"Vector `%s` \([^\n]*\):\n\n```\n(.*?)\n```" %
                      re.escape(name), text, re.S)
        if not m:
            print("missing vector %s" % name)
            bad += 1
        elif m.group(1) != dump(b):
            print("vector %s differs:\n%s\nexpected:\n%s" %
                  (name, m.group(1), dump(b)))
            bad += 1
    for k, b in keys:
        if "| `%s` | `%s` |" % (k, b.hex()) not in text:
            print("derived value %s missing or different" % k)
            bad += 1
    print("%d CM vectors, %d bad" % (len(v) + len(keys), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        sys.exit(check(sys.argv[2]))
    sys.stdout.write(markdown())
