#!/usr/bin/env python3
"""Black-box probes against `mroce-perf server` (tests/net/cm_*.sh,
perf_runsize.sh): a hostile peer of the set-up exchange, written from
docs/spec.md with tests/cm/mrcm.py, that speaks CM version 2 or (--v1)
the version 1 of mroce before the normative exchange, so that each probe
can be shown to break the old server.

    cm_probe.py hostile PORT --hold S     garbage, oversized headers,
                                          6 bytes then silence, idle,
                                          connect-and-close, v1 HELLO
    cm_probe.py reflect PORT --victim-port V [--v1]
                                          HELLO naming 127.0.0.9, then
                                          READ requests from there
    cm_probe.py runsize PORT --size N --run M [--v1]
                                          CONFIG size N, then a RUN of M
    cm_probe.py mitm LISTEN PORT --flip OFF
                                          TCP proxy flipping one byte of
                                          the client's first message
Each prints one line per finding and exits 0; the shell scripts judge."""

import argparse
import os
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "cm"))
import mrcm  # noqa: E402

HOST = "127.0.0.1"


def log(*a):
    print(*a, flush=True)


def drain(s, secs):
    """Everything the server sends within secs (until it closes)."""
    s.settimeout(0.2)
    out, t0 = b"", time.time()
    while time.time() - t0 < secs:
        try:
            c = s.recv(65536)
        except socket.timeout:
            continue
        except OSError:
            break
        if not c:
            break
        out += c
    return out


def describe(b):
    if not b:
        return "nothing"
    if len(b) >= 12 and b[:4] == b"MRCM":
        _m, v, t, n = mrcm.decode_hdr(b[:12])
        what = "%s v%d" % (mrcm.TYPE_NAMES.get(t, "type%d" % t), v)
        if t == mrcm.REJECT and v == 2:
            what += " " + mrcm.decode_reject(b[12:12 + n])["name"]
        return "%s (%d bytes in all)" % (what, len(b))
    return "%d bytes" % len(b)


# ---- hostile connectors ----

def hostile(args):
    big = lambda n: struct.pack(">IBBHI", mrcm.MAGIC, 2, 1, 0, n)  # noqa
    probes = [("garbage", b"GET / HTTP/1.0\r\n\r\n"),
              ("oversized-8193", big(8193)),
              ("oversized-ffffffff", big(0xFFFFFFFF)),
              ("six-bytes-then-silence", big(200)[:6]),
              ("idle-1", b""), ("idle-2", b""), ("idle-3", b""),
              ("connect-and-close", None),
              ("v1-hello", mrcm.hello_v1())]
    socks = []
    for name, data in probes:
        s = socket.create_connection((HOST, args.port), timeout=5)
        if data is None:
            s.close()
            log("%s: closed" % name)
            continue
        if data:
            s.sendall(data)
        socks.append((name, s))
    log("probes sent; holding %g s" % args.hold)
    got = {}
    t0 = time.time()
    while time.time() - t0 < args.hold:  # keep reading: the server may
        for name, s in socks:            # answer or close at any time
            got[name] = got.get(name, b"") + drain(s, 0.05)
    for name, s in socks:
        log("%s: got %s" % (name, describe(got.get(name, b""))))
        s.close()


# ---- a client of the exchange (v1 or v2) ----

def perf_config(test, size, iters, check=True, depth=1):
    return mrcm.perf_ctl(mrcm.PERF_CONFIG, test, size, iters, 0, depth,
                         int(check) << 1, (16 << 16) | 1)


def v1_msg(t, body=b""):
    return struct.pack(">IBBHI", mrcm.MAGIC, 1, t, 0, len(body)) + body


class Client:
    """The exchange up to both READYs, then APP messages."""

    def __init__(self, port, v1, addr, blob, udp_port):
        self.v1 = v1
        self.c = mrcm.Conn(HOST, port)
        if v1:
            self.c.send(mrcm.hello_v1(conn_id=0x5151, addr=addr,
                                      udp_port=udp_port, blob=blob))
        else:
            self.c.send(mrcm.hello_body(dict(
                conn_id=0x5151, addrs=[addr], udp_port=udp_port, blob=blob,
                nonce=os.urandom(32), n_paths=16)))
        t, body, _ = self.c.recv_msg()
        if t == mrcm.REJECT:
            self.rejected = (mrcm.decode_reject(body)["name"] if not v1
                             else "v1 code %d" % struct.unpack(">i",
                                                               body[:4])[0])
            return
        self.rejected = None
        assert t == mrcm.HELLO, "expected HELLO, got type %d" % t
        if v1:
            self.conn_id = struct.unpack(">I", body[:4])[0]
            self.udp_port = struct.unpack(">H", body[6:8])[0]
            self.c.send(v1_msg(mrcm.READY))
        else:
            h = mrcm.decode_hello(body)
            self.conn_id, self.udp_port = h["conn_id"], h["udp_port"]
            self.c.send(mrcm.msg(mrcm.READY))
        t, body, _ = self.c.recv_msg()
        assert t == mrcm.READY, "expected READY, got type %d" % t

    def app(self, b):
        self.c.send(v1_msg(mrcm.APP, b) if self.v1 else mrcm.msg(mrcm.APP, b))

    def recv_app(self):
        t, body, _ = self.c.recv_msg()
        assert t == mrcm.APP, "expected APP, got type %d" % t
        return mrcm.perf_ctl_decode(body)


def reflect(args):
    """A client announcing 127.0.0.9 (not its TCP address) runs read_bw's
    set-up, then sends READ requests from 127.0.0.9: on a server that takes
    the address, the responses go to the victim listening there."""
    victim = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    victim.bind(("127.0.0.9", args.victim_port))
    victim.settimeout(0.1)
    cfg = perf_config(2, 1 << 20, 1000, check=False, depth=1)  # read_bw
    cl = Client(args.port, args.v1, bytes([127, 0, 0, 9]), cfg,
                args.victim_port)
    if cl.rejected:
        log("reflect: HELLO rejected: %s" % cl.rejected)
        return
    log("reflect: HELLO accepted, server conn id 0x%08x" % cl.conn_id)
    cmd, v = cl.recv_app()  # the server's MR
    addr, rkey, length = v[0], v[1], v[2]
    cl.app(mrcm.perf_ctl(mrcm.PERF_MR, 0x1000, 1, length))
    cl.app(mrcm.perf_ctl(mrcm.PERF_RUN, 1 << 20))
    cmd, v = cl.recv_app()
    assert cmd == mrcm.PERF_GO
    src = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    src.bind(("127.0.0.9", 0))
    n = min(length, 1 << 20)
    for msn in range(4):
        pkt = mrcm.read_req(cl.conn_id, 0, msn, msn, 0, msn, n, addr, rkey)
        src.sendto(pkt, (HOST, cl.udp_port))
    got, t0 = 0, time.time()
    while time.time() - t0 < args.secs:
        try:
            got += len(victim.recv(65536))
        except socket.timeout:
            pass
    log("reflect: victim received %d bytes for %d bytes sent" %
        (got, 4 * len(pkt)))


def fill_buffer(cl, addr, rkey, length):
    """WRITEs of the client's pattern over the server's whole buffer, so
    that its check compares equal up to the buffer's end."""
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind((HOST, 0))
    mtu, dsn = 4096, 0
    for off in range(0, length, mtu):
        data = bytes(mrcm.perf_pattern(0, off + i) for i in range(mtu))
        pkt = mrcm.write_pkt(cl.conn_id, 0, dsn, dsn, 0, 0, length, off,
                             addr, rkey, data)
        u.sendto(pkt, (HOST, cl.udp_port))
        dsn += 1
    time.sleep(0.3)


def runsize(args):
    """CONFIG with one size (write_bw, --check), then a RUN of another; the
    client writes its pattern over the server's whole buffer, and END says
    it sent two messages, so the server checks two slots of the RUN's
    size."""
    cfg = perf_config(0, args.size, 1, check=True, depth=1)  # write_bw
    cl = Client(args.port, args.v1, bytes([127, 0, 0, 1]), cfg, 4798)
    if cl.rejected:
        log("runsize: HELLO rejected: %s" % cl.rejected)
        return
    log("runsize: HELLO accepted")
    cmd, v = cl.recv_app()
    assert cmd == mrcm.PERF_MR
    addr, rkey, length = v[0], v[1], v[2]
    cl.app(mrcm.perf_ctl(mrcm.PERF_MR, 0x1000, 1, 1 << 40))
    cl.app(mrcm.perf_ctl(mrcm.PERF_RUN, args.run))
    try:
        cmd, v = cl.recv_app()
        log("runsize: server answered %d to RUN %d" % (cmd, args.run))
        if cmd == mrcm.PERF_GO:
            fill_buffer(cl, addr, rkey, length)
            cl.app(mrcm.perf_ctl(mrcm.PERF_END, 2))
            cmd, v = cl.recv_app()
            log("runsize: server answered %d to END" % cmd)
    except (EOFError, AssertionError, OSError) as e:
        log("runsize: server dropped us: %s" % e)


# ---- a man in the middle ----

def mitm(args):
    """Accepts one client on LISTEN, forwards to PORT both ways, flipping
    byte --flip of the client's first message."""
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((HOST, args.listen))
    ls.listen(1)
    log("mitm: listening")
    cs, _ = ls.accept()
    ss = socket.create_connection((HOST, args.port))
    first = [True]

    def pump(a, b, flip):
        try:
            while True:
                d = a.recv(65536)
                if not d:
                    break
                if flip and first[0] and len(d) > args.flip:
                    d = d[:args.flip] + bytes([d[args.flip] ^ args.xor]) + \
                        d[args.flip + 1:]
                    first[0] = False
                    log("mitm: flipped byte %d" % args.flip)
                b.sendall(d)
        except OSError:
            pass
        for x in (a, b):
            try:
                x.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
    t = threading.Thread(target=pump, args=(ss, cs, False), daemon=True)
    t.start()
    pump(cs, ss, True)
    t.join(5)


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    h = sub.add_parser("hostile")
    h.add_argument("port", type=int)
    h.add_argument("--hold", type=float, default=10)
    r = sub.add_parser("reflect")
    r.add_argument("port", type=int)
    r.add_argument("--victim-port", type=int, required=True)
    r.add_argument("--secs", type=float, default=2)
    r.add_argument("--v1", action="store_true")
    s = sub.add_parser("runsize")
    s.add_argument("port", type=int)
    s.add_argument("--size", type=int, default=8)
    s.add_argument("--run", type=int, default=1 << 30)
    s.add_argument("--v1", action="store_true")
    m = sub.add_parser("mitm")
    m.add_argument("listen", type=int)
    m.add_argument("port", type=int)
    m.add_argument("--flip", type=int, default=15)
    m.add_argument("--xor", type=int, default=0x06)
    a = p.parse_args()
    {"hostile": hostile, "reflect": reflect, "runsize": runsize,
     "mitm": mitm}[a.cmd](a)


if __name__ == "__main__":
    main()
