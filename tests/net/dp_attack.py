#!/usr/bin/env python3
"""A hostile host against a live `mroce-perf server`/`client` transfer over
UDP sockets (tests/net/dp_*.sh): the black-box probes of issue 15 as
datapath tests. It runs in the network namespace of both ends, as root,
and sends its packets from the peers' address (127.0.0.1 on the
namespace's loopback, which the receivers' source check of R-RX-2 step 8
accepts), from a port of its own.

What it knows is what the threat model of docs/spec.md R-SEC-1 gives it:

  blind     a capture filter on the CM's TCP port only (a classic BPF
            program attached to an AF_PACKET socket: the kernel hands it
            no UDP packet): the connection ids, UDP ports and data
            addresses of both HELLOs, and the memory regions mroce-perf
            swaps in APP messages. It does not use the initial sequence
            numbers the HELLOs also carry in clear (R-CM-14: whoever
            reads the CM is on-path); it guesses, as an attacker of the
            old predictable state (every number from 0) would.
  onpath    the same plus a capture of the UDP data: it reads sealed and
            plain packets, replays and alters them.

    dp_attack.py close|probe|nack|ack|read|onpath --cm-port P [--secs S]

It prints what it learnt, what it sent to whom, and what came back to its
own socket, then one line `RESULT {json}` that the shell scripts judge.
It exits 0 whatever happened to the transfer; 2 if it never saw the
transfer start."""

import argparse
import ctypes
import json
import os
import random
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "cm"))
import mrcm  # noqa: E402

ETH_P_ALL = 0x0003
SO_ATTACH_FILTER = 26
PACKET_OUTGOING = 4

# opcodes (docs/spec.md R-HDR-4)
WRITE, READ_REQ, READ_RESP, ACK, NACK, PROBE, CLOSE = \
    0x01, 0x05, 0x06, 0x10, 0x11, 0x20, 0x30
SEAL = 0x02
MAX_PKT = 56 + 4096 + 16  # largest header + mroce-perf's mtu + a tag
FIXED_LEN = {READ_REQ: 48, ACK: 68, NACK: 32, PROBE: 68, CLOSE: 16,
             0x31: 16}  # header lengths of the opcodes without payload


def log(*a):
    print(*a, flush=True)


# ---- capture: AF_PACKET with a kernel filter ----

def bpf_ports(proto, ports):
    """Classic BPF: IPv4, IP protocol `proto`, not a fragment, source or
    destination port in `ports` (at most 4). What tcpdump compiles for
    `tcp port P`, written out so that no tool is needed."""
    ports = list(ports)[:4]
    n = len(ports)
    rej = 9 + 2 * n + 1  # index of `ret 0`
    acc = rej - 1
    prog = [(0x28, 0, 0, 12)]                          # ldh [12]
    prog.append((0x15, 0, rej - 2, 0x0800))            # jeq IPv4
    prog.append((0x30, 0, 0, 23))                      # ldb [23]
    prog.append((0x15, 0, rej - 4, proto))             # jeq proto
    prog.append((0x28, 0, 0, 20))                      # ldh [20]
    prog.append((0x45, rej - 6, 0, 0x1FFF))            # jset frag
    prog.append((0xB1, 0, 0, 14))                      # ldxb 4*([14]&15)
    prog.append((0x48, 0, 0, 14))                      # ldh [x+14] sport
    for i, p in enumerate(ports):                      # jeq p -> accept
        at = 8 + i
        prog.append((0x15, acc - at - 1, 0, p))
    prog.append((0x48, 0, 0, 16))                      # ldh [x+16] dport
    for i, p in enumerate(ports):
        at = 9 + n + i
        last = i == n - 1
        prog.append((0x15, acc - at - 1, 1 if last else 0, p))
    prog.append((0x06, 0, 0, 0x40000))                # accept
    prog.append((0x06, 0, 0, 0))                      # reject
    assert len(prog) == rej + 1
    return prog


def capture_socket(iface, proto, ports):
    """An AF_PACKET socket that the kernel feeds only the packets of
    `proto` to or from `ports`: protocol 0 at creation (no packet
    queued before the filter), then the filter, then the bind."""
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    raw = b"".join(struct.pack("HBBI", *i) for i in bpf_ports(proto, ports))
    buf = ctypes.create_string_buffer(raw)  # copied by the kernel
    fprog = struct.pack("HL", len(raw) // 8, ctypes.addressof(buf))
    s.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, fprog)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
    s.bind((iface, ETH_P_ALL))
    return s


def ipv4_split(frame):
    """(proto, src, sport, dst, dport, l4 header, payload) or None."""
    if len(frame) < 34 or frame[12:14] != b"\x08\x00":
        return None
    ip = frame[14:]
    ihl = (ip[0] & 15) * 4
    total = struct.unpack(">H", ip[2:4])[0]
    ip = ip[:total]
    proto = ip[9]
    src, dst = socket.inet_ntoa(ip[12:16]), socket.inet_ntoa(ip[16:20])
    l4 = ip[ihl:]
    if len(l4) < 8:
        return None
    sport, dport = struct.unpack(">HH", l4[:4])
    if proto == 6:
        off = (l4[12] >> 4) * 4
        return proto, src, sport, dst, dport, l4[:off], l4[off:]
    return proto, src, sport, dst, dport, l4[:8], l4[8:]


# ---- what the CM tells a listener ----

class CmSniffer(threading.Thread):
    """Reassembles both directions of the CM's TCP connection(s) and
    decodes HELLO (v1 and v2) and mroce-perf's APP messages."""

    def __init__(self, iface, port):
        super().__init__(daemon=True)
        self.sock = capture_socket(iface, 6, [port])
        self.port = port
        self.streams = {}   # (sport, dport) -> [isn, {seq: bytes}]
        self.parsed = {}    # (sport, dport) -> bytes consumed
        self.side = {}      # "server"/"client" -> knowledge
        self.go = threading.Event()
        self.non_tcp = 0
        self.lock = threading.Lock()

    def run(self):
        while True:
            try:
                frame, addr = self.sock.recvfrom(65536)
            except OSError:
                return
            if addr[2] == PACKET_OUTGOING:  # loopback shows each twice
                continue
            p = ipv4_split(frame)
            if not p or p[0] != 6:
                self.non_tcp += 1
                continue
            self.tcp(p)

    def tcp(self, p):
        _, _, sport, _, dport, th, data = p
        seq = struct.unpack(">I", th[4:8])[0]
        flags = th[13]
        key = (sport, dport)
        st = self.streams.setdefault(key, [None, {}])
        if flags & 0x02:  # SYN
            st[0] = (seq + 1) & 0xFFFFFFFF
            st[1].clear()
            self.parsed[key] = 0
            return
        if data and st[0] is not None:
            st[1][(seq - st[0]) & 0xFFFFFFFF] = data
            self.decode(key, st)

    def stream_bytes(self, st):
        out, off = b"", 0
        while off in st[1]:
            out += st[1][off]
            off += len(st[1][off])
        return out

    def decode(self, key, st):
        b = self.stream_bytes(st)
        at = self.parsed.get(key, 0)
        who = "server" if key[0] == self.port else "client"
        while len(b) - at >= 12:
            magic, ver, mtype, n = mrcm.decode_hdr(b[at:at + 12])
            if magic != mrcm.MAGIC or len(b) - at < 12 + n:
                break
            self.message(who, ver, mtype, b[at + 12:at + 12 + n])
            at += 12 + n
        self.parsed[key] = at

    def message(self, who, ver, mtype, body):
        with self.lock:
            k = self.side.setdefault(who, {})
            if mtype == mrcm.HELLO and ver >= 2:
                h = mrcm.decode_hello(body)
                k.update(conn=h["conn_id"], udp_port=h["udp_port"],
                         addr=socket.inet_ntoa(h["addrs"][0][:4]),
                         paths=h["n_paths"], cm=2, modes=h["modes"],
                         psk=bool(h["features"] & mrcm.FEAT_PSK),
                         init_dsn=h["init_dsn"])
            elif mtype == mrcm.HELLO:
                conn, _r, _af, udp = struct.unpack(">IBBH", body[:8])
                k.update(conn=conn, udp_port=udp,
                         addr=socket.inet_ntoa(body[8:12]), paths=16, cm=1,
                         psk=False)
            elif mtype == mrcm.APP and len(body) >= 72:
                try:
                    cmd, v = mrcm.perf_ctl_decode(body[:72])
                except (AssertionError, struct.error):
                    return
                if cmd == mrcm.PERF_MR:
                    k["mr"] = (v[0], v[1], v[2])
                if cmd == mrcm.PERF_GO:
                    self.go.set()

    def knowledge(self):
        with self.lock:
            return json.loads(json.dumps(self.side))


# ---- packets (docs/spec.md section 3; ICRC of R-CRC-1) ----

def mth(op, path, conn, psn, ts=0, flags=0):
    return struct.pack(">BBHIII", 0x10 | flags, op, path, conn, psn, ts)


def icrc(p):
    return p + struct.pack(">I", mrcm.crc32c(p))


def close_pkt(conn, path, psn):
    return icrc(mth(CLOSE, path, conn, psn))


def probe_pkt(conn, path, psn, padded):
    """A PROBE: 72 bytes now (52-byte PAD, R-HDR-4), 20 before the
    padding rule (the issue's probe)."""
    return icrc(mth(PROBE, path, conn, psn) + (bytes(52) if padded else b""))


def nack_pkt(conn, path, psn, dsn, msn, syndrome, info=0, stream=0):
    return icrc(mth(NACK, path, conn, psn) +
                struct.pack(">IHBBII", dsn, stream, syndrome, 0, msn, info))


def ack_pkt(conn, path, sack_high, dsn_cum, echo_ts=0):
    """Claims every PSN up to sack_high received (all 256 bits set)."""
    akh = struct.pack(">IIIIHH", sack_high, dsn_cum, echo_ts, 0, 0, 0)
    return icrc(mth(ACK, path, conn, sack_high) + akh + b"\xff" * 32)


def read_req_pkt(conn, path, psn, dsn, msn, length, va, rkey):
    return icrc(mth(READ_REQ, path, conn, psn) +
                struct.pack(">IHHIIIQI", dsn, 0, 0, msn, length, 0, va,
                            rkey))


# ---- the attacker's own socket ----

class Sender:
    """Sends from 127.0.0.1 (the peers' address) and counts what comes
    back to it: R-SEC-3 says nothing may."""

    def __init__(self, addr):
        self.s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.s.bind((addr, 0))
        self.s.setblocking(False)
        self.sent = {}
        self.sent_bytes = 0
        self.back_pkts = self.back_bytes = 0

    def send(self, what, pkt, dest):
        while True:
            try:
                self.s.sendto(pkt, dest)
                break
            except BlockingIOError:
                time.sleep(0.001)
        self.sent[what] = self.sent.get(what, 0) + 1
        self.sent_bytes += len(pkt)
        self.drain()

    def drain(self):
        while True:
            try:
                b = self.s.recv(65536)
            except (BlockingIOError, OSError):
                return
            self.back_pkts += 1
            self.back_bytes += len(b)


def pace(i, every=16, secs=0.002):
    """A short pause every few packets: the receivers' socket buffers
    are shared with the live transfer, and a burst the kernel drops
    proves nothing."""
    if i % every == every - 1:
        time.sleep(secs)


# ---- blind attacks ----

def guesses(rng, n_random, fixed):
    """The fixed values an attacker of the old state tries (everything
    started at 0) and n_random others."""
    return list(fixed) + [rng.getrandbits(32) for _ in range(n_random)]


def attack_close(k, snd, rng, args):
    """Forged CLOSEs to both ends (R-VAL-5: a blind one is dropped,
    `bad_close`). Before R-VAL-5 one 20-byte CLOSE ended the connection.
    Each guess lands in the window with probability W / 2^32."""
    for rnd in range(args.rounds):
        g = guesses(rng, 10, [0, 1, 2048, 4096, 65536, 1 << 31])
        for i, psn in enumerate(g):
            for who in ("server", "client"):
                t = k[who]
                snd.send(who, close_pkt(t["conn"], i % t["paths"], psn),
                         (t["addr"], t["udp_port"]))
            pace(i)
        time.sleep(args.secs / args.rounds)


def attack_probe(k, snd, rng, args):
    """PROBEs, one per path and round, at PSNs the receiver's path has not
    reached, to the data receiver (the server of write_bw): in the
    issue's 20-byte form and in the 72-byte padded form of R-HDR-4. Before
    R-VAL-2 they were recorded ahead of the path's PSNs, every later ACK
    named PSNs the sender never sent, and 16 of them declared a healthy
    peer dead in 127.5 ms."""
    t = k["server"]
    i = 0
    for rnd in range(args.rounds):
        for path in range(t["paths"]):
            psn = (0x10000 + 977 * rnd + path) if rnd % 2 == 0 else \
                rng.getrandbits(32)
            for padded in (False, True):
                snd.send("p%d" % (72 if padded else 20),
                         probe_pkt(t["conn"], path, psn, padded),
                         (t["addr"], t["udp_port"]))
                i += 1
                pace(i)
        time.sleep(args.secs / args.rounds)


# syndromes (R-NACK-2)
RNR, REMOTE_ACCESS, INVALID_REQUEST, REMOTE_OP, CONN_CLOSED = 1, 2, 3, 4, 5


def attack_nack(k, snd, rng, args):
    """A sweep of NACKs to the data sender (the client of write_bw) over
    message numbers from 0 (where they started before R-CONN-5's random
    starts), each naming the first DSN of its message (a 64 KiB message is
    16 DSNs), with the fatal syndromes (REMOTE_ACCESS, INVALID_REQUEST,
    REMOTE_OP, CONN_CLOSED) and RNR with info 0xFFFFFFFF (before
    R-RETRY-4's cap: a 71.6-minute stall); then random ones. The sweep
    runs ahead of the transfer (--step below the sender's outstanding
    messages), so it crosses the messages in flight. R-VAL-6: each is
    `stale`."""
    t = k["client"]
    syn = [REMOTE_ACCESS, INVALID_REQUEST, REMOTE_OP, CONN_CLOSED, RNR]
    i = 0
    for rnd in range(args.rounds):
        for msn in range(rnd, 1 << 16, args.step):
            s = syn[i % len(syn)]
            dsn = msn * 16
            snd.send("nack%d" % s,
                     nack_pkt(t["conn"], msn % t["paths"], dsn, dsn, msn, s,
                              0xFFFFFFFF if s == RNR else 0),
                     (t["addr"], t["udp_port"]))
            i += 1
            pace(i, 32)
        for _ in range(64):
            s = syn[rng.randrange(len(syn))]
            dsn, msn = rng.getrandbits(32), rng.getrandbits(32)
            snd.send("nack%d" % s,
                     nack_pkt(t["conn"], rng.randrange(t["paths"]), dsn, dsn,
                              msn, s, 0xFFFFFFFF if s == RNR else 0),
                     (t["addr"], t["udp_port"]))
            i += 1
            pace(i, 32)


def attack_ack(k, snd, rng, args):
    """Sweeps of ACKs to the data sender (the client of write_bw), run
    under loss: every ACK claims all 256 PSNs up to a guessed sack_high
    received, and its `dsn_cum` comes down from --top in steps of --step,
    so that each sweep crosses the sender's next DSN (counted from 0, as
    before R-CONN-5) just below it; every eighth ACK is random. Before
    R-VAL-1 a `dsn_cum` not beyond the sender's next DSN was taken
    whatever else the ACK said: the sender completed the messages in
    flight, lost packets included, and never sent those again."""
    t = k["client"]
    end = time.time() + args.secs
    i = 0
    while time.time() < end:
        for cum in range(args.top, -1, -args.step):
            path = i % t["paths"]
            high = cum // t["paths"]
            if i % 8 == 7:
                cum, high = rng.getrandbits(32), rng.getrandbits(32)
            snd.send("ack", ack_pkt(t["conn"], path, high, cum, 0),
                     (t["addr"], t["udp_port"]))
            i += 1
            pace(i, 32, 0.001)
            if time.time() >= end:
                break


def attack_read(k, snd, rng, args):
    """READ requests for a whole memory region (its address and key are in
    the CM's APP messages), with DSNs and message numbers from 0 up
    (R-CONN-5: they started there): to the client of write_bw, whose
    receiving side is idle (nothing of the server's sequence numbers has
    moved, so message i of a sweep from 0 is the next one to execute),
    and to the server, sweeping ahead of the client's DSNs. Before R-VAL-7
    one 52-byte READ_REQ drew 223 KB of READ_RESP (x4,300). Now each is
    dropped by the DSN window (a lucky one, W / 2^32 each, would still
    wait for the proof of R-VAL-7)."""
    i = 0
    for rnd in range(args.rounds):
        t = k["client"]
        va, rkey, length = t["mr"]
        for m in range(args.sweep // 4):
            dsn = m * 64 + rnd * 16
            snd.send("read_cli", read_req_pkt(t["conn"], m % t["paths"], dsn,
                                          dsn, m, length, va, rkey),
                     (t["addr"], t["udp_port"]))
            i += 1
            pace(i)
        t = k["server"]
        va, rkey, length = t["mr"]
        for d in range(args.sweep):
            dsn = d * 256 + rnd * 64
            msn = dsn // 16 + 4 + (d % 3) * 16
            snd.send("read_srv", read_req_pkt(t["conn"], d % t["paths"], dsn,
                                          dsn, msn, length, va, rkey),
                     (t["addr"], t["udp_port"]))
            i += 1
            pace(i)
        for who, tag in (("client", "read_cli"), ("server", "read_srv")):
            t = k[who]
            va, rkey, length = t["mr"]
            for _ in range(4):
                dsn = rng.getrandbits(32)
                snd.send(tag, read_req_pkt(t["conn"], 0, dsn, dsn,
                                           rng.getrandbits(32), length, va,
                                           rkey), (t["addr"], t["udp_port"]))
        time.sleep(args.secs / args.rounds)


# ---- on-path ----

class UdpSniffer(threading.Thread):
    """The data the on-path attacker reads: packets to either end's UDP
    port, kept per direction (the first few and the latest)."""

    def __init__(self, iface, ports):
        super().__init__(daemon=True)
        self.sock = capture_socket(iface, 17, ports)
        self.lock = threading.Lock()
        self.first = {}   # dport -> [payload, ...] (up to 64)
        self.last_data = {}  # dport -> payload of the latest data packet
        self.n = 0

    def run(self):
        while True:
            try:
                frame, addr = self.sock.recvfrom(65536)
            except OSError:
                return
            if addr[2] == PACKET_OUTGOING:
                continue
            p = ipv4_split(frame)
            if not p or p[0] != 17:
                continue
            dport, pl = p[4], p[6]
            if len(pl) < 20:
                continue
            # A sender's UDP GSO train crosses the loopback whole: one
            # frame, several datagrams. A train of packets of one fixed
            # length is cut to its first; a data train is read (its first
            # header) but not replayed (it is no packet).
            fixed = FIXED_LEN.get(pl[1])
            if fixed:
                pl = pl[:fixed + (16 if pl[0] & SEAL else 4)]
            whole = len(pl) <= MAX_PKT
            with self.lock:
                self.n += 1
                lst = self.first.setdefault(dport, [])
                if len(lst) < 64 and whole:
                    lst.append(pl)
                if 1 <= pl[1] <= 6:
                    self.last_data[dport] = pl

    def latest_dsn(self, dport):
        with self.lock:
            p = self.last_data.get(dport)
        return None if p is None else struct.unpack(">I", p[16:20])[0]

    def copies(self, dport):
        with self.lock:
            return list(self.first.get(dport, []))


def flip(p, i, bit=1):
    return p[:i] + bytes([p[i] ^ bit]) + p[i + 1:]


def readable(pkts, base, sealed):
    """(WRITEs, WRITEs whose payload is mroce-perf's pattern of the
    client at the place it is written to): what a reader of the data
    learns (the encrypted mode must leave it nothing)."""
    n = clear = 0
    for p in pkts:
        if p[1] != WRITE or len(p) < 48 + 64 + 16:
            continue
        off = struct.unpack(">I", p[32:36])[0]
        va = struct.unpack(">Q", p[36:44])[0]
        at = va - base + off
        n += 1
        clear += all(p[48 + i] == mrcm.perf_pattern(0, at + i)
                     for i in range(64))
    return n, clear


def attack_onpath(k, snd, rng, args):
    """Reads the data, then (1) sends the CLOSE a reader can make: the
    server's own next DSN, from the latest data packet it read (R-VAL-5
    passes it: in mode none this ends the connection, R-SEC-1); in the
    secure modes also (2) replays every packet it read (to both ends:
    `replay`), (3) the same packets with one bit changed in the header,
    the payload or the tag, and a CLOSE and an ACK sealed under no key
    (`bad_tag`); the plain CLOSE of (1) is `sec_mode` there."""
    srv, cli = k["server"], k["client"]
    sn = args.udp
    t0 = time.time()
    while time.time() - t0 < 5 and (
            sn.latest_dsn(srv["udp_port"]) is None or
            min(len(sn.copies(srv["udp_port"])),
                len(sn.copies(cli["udp_port"]))) < 16):
        time.sleep(0.01)
    d = sn.latest_dsn(srv["udp_port"])
    if d is None:
        log("onpath: read no data packet")
        return
    sealed = bool(sn.last_data[srv["udp_port"]][0] & SEAL)
    log("onpath: read %d packets; data %s; latest DSN to the server 0x%08x"
        % (sn.n, "sealed" if sealed else "in clear", d))
    clear = readable(sn.copies(srv["udp_port"]), srv["mr"][0], sealed)
    log("onpath: WRITE payloads read: %d, in clear (the client's pattern): %d"
        % clear)
    dests = ((srv, "srv"), (cli, "cli"))
    if sealed:
        i = 0
        for t, tag in dests:
            port = t["udp_port"]
            for p in sn.copies(port):
                snd.send("replay_" + tag, p, (t["addr"], port))
                tag_at = len(p) - 16
                for at in (12, tag_at - 1 if tag_at > 48 else 13,
                           len(p) - 1):  # ts, payload or header, tag
                    snd.send("tampered_" + tag, flip(p, at),
                             (t["addr"], port))
                i += 1
                pace(i, 4)
        for j in range(16):
            d = sn.latest_dsn(srv["udp_port"]) or d
            snd.send("sealed_close_srv",
                     mth(CLOSE, j % srv["paths"], srv["conn"],
                         (d + 2048) & 0xFFFFFFFF, j, SEAL) +
                     os.urandom(16), (srv["addr"], srv["udp_port"]))
            akh = struct.pack(">IIIIHH", 0, 0, 0, 0, 0, 0) + b"\xff" * 32
            snd.send("sealed_ack_cli",
                     mth(ACK, j % cli["paths"], cli["conn"], 0, j, SEAL) +
                     akh + os.urandom(16), (cli["addr"], cli["udp_port"]))
    for j in range(8):  # the CLOSE of (1), several times: the latest DSN
        d = sn.latest_dsn(srv["udp_port"]) or d
        snd.send("close_srv", close_pkt(srv["conn"], j % srv["paths"],
                                    (d + 2048) & 0xFFFFFFFF),
                 (srv["addr"], srv["udp_port"]))
        time.sleep(0.02)


def attack_cmclose(k, snd, rng, args):
    """What the CM's clear HELLO gives a reader (R-CM-14): the client's
    first DSN, hence where the server's DSN window lies when the transfer
    starts. A CLOSE naming a DSN just ahead of it passes R-VAL-5. Not a
    blind attacker: this one is on-path for the CM (mode none)."""
    srv, cli = k["server"], k["client"]
    for j in range(8):
        psn = (cli.get("init_dsn", 0) + 512 * (j + 1)) & 0xFFFFFFFF
        snd.send("close_srv", close_pkt(srv["conn"], j % srv["paths"], psn),
                 (srv["addr"], srv["udp_port"]))


ATTACKS = {"close": attack_close, "cmclose": attack_cmclose, "probe": attack_probe,
           "nack": attack_nack, "ack": attack_ack, "read": attack_read,
           "onpath": attack_onpath}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("attack", choices=sorted(ATTACKS))
    p.add_argument("--cm-port", type=int, required=True)
    p.add_argument("--iface", default="lo")
    p.add_argument("--secs", type=float, default=1.0)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--sweep", type=int, default=256)
    p.add_argument("--step", type=int, default=64)
    p.add_argument("--top", type=int, default=20000)
    p.add_argument("--delay", type=float, default=0.05,
                   help="seconds between the transfer's start and the "
                   "first forged packet")
    p.add_argument("--wait", type=float, default=30)
    p.add_argument("--seed", type=int, default=None)
    args = p.parse_args()
    rng = random.Random(args.seed)
    cm = CmSniffer(args.iface, args.cm_port)
    cm.start()
    args.udp = None
    log("ready: capturing tcp port %d on %s" % (args.cm_port, args.iface))
    if not cm.go.wait(args.wait):
        log("never saw the transfer start: %s" % cm.knowledge())
        for key, st in list(cm.streams.items()):
            log("  stream %s: isn %s, %d segments, %d bytes in order, "
                "%d parsed" % (key, st[0], len(st[1]),
                               len(cm.stream_bytes(st)),
                               cm.parsed.get(key, 0)))
        print("RESULT " + json.dumps({"error": "no GO"}), flush=True)
        sys.exit(2)
    k = cm.knowledge()
    for who in ("server", "client"):
        t = k.get(who, {})
        log("%s: conn 0x%08x udp %s:%d paths %d cm v%d%s" % (
            who, t["conn"], t["addr"], t["udp_port"], t["paths"], t["cm"],
            " mr va 0x%x rkey 0x%08x len %d" % tuple(t["mr"])
            if "mr" in t else ""))
    if args.attack == "onpath":
        args.udp = UdpSniffer(args.iface, [k["server"]["udp_port"],
                                           k["client"]["udp_port"]])
        args.udp.start()
    time.sleep(args.delay)
    snd = Sender(k["server"]["addr"])
    t0 = time.time()
    ATTACKS[args.attack](k, snd, rng, args)
    spent = time.time() - t0
    time.sleep(0.3)  # anything answered to us arrives by now
    snd.drain()
    res = {"sent": snd.sent, "sent_bytes": snd.sent_bytes,
           "back_pkts": snd.back_pkts, "back_bytes": snd.back_bytes,
           "secs": round(spent, 3), "cm_non_tcp_seen": cm.non_tcp,
           "knowledge": k}
    log("sent %s (%d bytes) in %.2f s; got back %d packets, %d bytes" % (
        snd.sent, snd.sent_bytes, spent, snd.back_pkts, snd.back_bytes))
    print("RESULT " + json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
