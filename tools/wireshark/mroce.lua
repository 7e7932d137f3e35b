-- MetaRoCE dissector for Wireshark / tshark 4.0 (Lua 5.2).
--
-- Decodes the MetaRoCE transport header (MTH), the extension headers of
-- each opcode (DXH, RETH, SNH, IMM, AKH, NKH, the PROBE's padding), the
-- path records of an ACKM (section 3.15), the payload length, and
-- verifies the CRC32C trailer (ICRC). A sealed packet of the authenticated
-- or encrypted mode (SEAL flag, docs/spec.md section 3.14) ends in a
-- 16-byte AES-GCM tag instead, shown but not verified (the dissector has
-- no keys); its key phase, its control sequence number (the MTH ts of a
-- control packet) and whether its payload is encrypted are decoded.
-- Packet format: docs/spec.md section 3; usage and field list:
-- docs/wireshark.md.
--
--   tshark -X lua_script:tools/wireshark/mroce.lua -r capture.pcap
--
-- or copy this file to ~/.local/lib/wireshark/plugins/. Registered on UDP
-- port 4797 (R-ENC-2); change it with the preference mroce.udp_port,
-- e.g. tshark -o mroce.udp_port:5000.

local DEFAULT_PORT = 4797
local MTH_LEN = 16
local ICRC_LEN = 4
local TAG_LEN = 16 -- the trailer of a sealed packet (R-AEAD-2)
local SACK_BITS = 256
local ACKM_PRE_LEN = 4 -- count, reserved, hold of the MTH path
local ACKM_REC_LEN = 48
local ACKM_MAX_RECS = 32
local ACKM_HOLD_UNIT = 8 -- ns

local mroce = Proto("mroce", "MetaRoCE")

-- ---------------------------------------------------------------------
-- Tables (R-HDR-4, R-NACK-2)
-- ---------------------------------------------------------------------

-- Headers after the MTH, in wire order (R-HDR-5), and the header length.
local ops = {
    [0x01] = { name = "WRITE", hdrs = { "dxh", "reth" }, len = 48,
               payload = true },
    [0x02] = { name = "WRITE_IMM", hdrs = { "dxh", "reth", "snh", "imm" },
               len = 56, payload = true },
    [0x03] = { name = "SEND", hdrs = { "dxh", "snh" }, len = 40,
               payload = true },
    [0x04] = { name = "SEND_IMM", hdrs = { "dxh", "snh", "imm" }, len = 44,
               payload = true },
    [0x05] = { name = "READ_REQ", hdrs = { "dxh", "reth" }, len = 48 },
    [0x06] = { name = "READ_RESP", hdrs = { "dxh" }, len = 36,
               payload = true },
    [0x10] = { name = "ACK", hdrs = { "akh" }, len = 68 },
    [0x11] = { name = "NACK", hdrs = { "nkh" }, len = 32 },
    [0x12] = { name = "ACKM", hdrs = { "akh" }, len = 68, payload = true },
    [0x20] = { name = "PROBE", hdrs = { "pad" }, len = 68 },
    [0x30] = { name = "CLOSE", hdrs = {}, len = 16 },
    [0x31] = { name = "CLOSE_ACK", hdrs = {}, len = 16 },
}

local op_names = {}
for code, oi in pairs(ops) do
    op_names[code] = oi.name
end

local nak_names = {
    [0] = "NONE",
    [1] = "RNR",
    [2] = "REMOTE_ACCESS",
    [3] = "INVALID_REQUEST",
    [4] = "REMOTE_OP",
    [5] = "CONN_CLOSED",
}

-- ---------------------------------------------------------------------
-- Fields: filter as mroce.opcode == 0x10, mroce.path == 3, mroce.dsn ...
-- ---------------------------------------------------------------------

local F = {
    -- MTH (R-HDR-3, section 3.3)
    version = ProtoField.uint8("mroce.version", "Version", base.DEC, nil,
                               0xF0),
    flags = ProtoField.uint8("mroce.flags", "Flags", base.HEX, nil, 0x0F),
    ackreq = ProtoField.bool("mroce.flags.ackreq", "ACKREQ", 8, nil, 0x08),
    retx = ProtoField.bool("mroce.flags.retx", "RETX", 8, nil, 0x04),
    seal = ProtoField.bool("mroce.flags.seal", "SEAL (AES-GCM tag trailer)", 8,
                           nil, 0x02),
    kphase = ProtoField.uint8("mroce.flags.kphase",
                              "Key phase (sealed; else reserved)", base.DEC,
                              nil, 0x01),
    opcode = ProtoField.uint8("mroce.opcode", "Opcode", base.HEX, op_names),
    path = ProtoField.uint16("mroce.path", "Path", base.DEC),
    conn = ProtoField.uint32("mroce.conn", "Destination connection ID",
                             base.HEX),
    psn = ProtoField.uint32("mroce.psn", "PSN", base.DEC),
    ts = ProtoField.uint32("mroce.ts", "Timestamp (ns mod 2^32)", base.DEC),
    csn = ProtoField.uint32("mroce.csn", "Control sequence number (CSN)",
                            base.DEC),
    -- DXH (section 3.4); the NKH's copies use the same fields
    dsn = ProtoField.uint32("mroce.dsn", "DSN", base.DEC),
    stream = ProtoField.uint16("mroce.stream", "Stream", base.DEC),
    dxh_rsvd = ProtoField.uint16("mroce.dxh.reserved", "Reserved", base.HEX),
    prot = ProtoField.uint8("mroce.prot", "Protection", base.HEX),
    prot_enc = ProtoField.bool("mroce.prot.enc", "Payload encrypted (ENC)", 8,
                               nil, 0x01),
    dxh_rsvd8 = ProtoField.uint8("mroce.dxh.reserved8", "Reserved", base.HEX),
    msn = ProtoField.uint32("mroce.msn", "MSN", base.DEC),
    msg_len = ProtoField.uint32("mroce.msg_len", "Message length", base.DEC),
    offset = ProtoField.uint32("mroce.offset", "Offset", base.DEC),
    -- RETH, SNH, IMM (sections 3.5-3.7)
    va = ProtoField.uint64("mroce.va", "Virtual address", base.HEX),
    rkey = ProtoField.uint32("mroce.rkey", "Remote key", base.HEX),
    ssn = ProtoField.uint32("mroce.ssn", "Receive index (SSN)", base.DEC),
    imm = ProtoField.uint32("mroce.imm", "Immediate data", base.HEX),
    -- AKH (section 3.8)
    sack_high = ProtoField.uint32("mroce.sack_high", "SACK high PSN",
                                  base.DEC),
    dsn_cum = ProtoField.uint32("mroce.dsn_cum", "Cumulative DSN", base.DEC),
    echo_ts = ProtoField.uint32("mroce.echo_ts", "Echoed timestamp",
                                base.DEC),
    rate = ProtoField.uint32("mroce.rate_mbps", "Rate hint (Mbit/s)",
                             base.DEC),
    ce_count = ProtoField.uint16("mroce.ce_count", "CE count", base.DEC),
    rx_count = ProtoField.uint16("mroce.rx_count", "RX count", base.DEC),
    sack = ProtoField.bytes("mroce.sack", "SACK bitmap"),
    sack_count = ProtoField.uint16("mroce.sack.count",
                                   "Acknowledged PSN count", base.DEC),
    sack_rel = ProtoField.string("mroce.sack.rel",
                                 "Acknowledged, as i in sack_high - i"),
    sack_psn = ProtoField.uint32("mroce.sack.psn", "Acknowledged PSN",
                                 base.DEC),
    -- ACKM payload (section 3.15): preamble, then one record per path
    ackm_count = ProtoField.uint8("mroce.ackm.count", "Record count",
                                  base.DEC),
    ackm_rsvd = ProtoField.uint8("mroce.ackm.reserved", "Reserved", base.HEX),
    ackm_hold = ProtoField.uint32("mroce.ackm.hold_ns",
                                  "Hold of the MTH path (ns)", base.DEC),
    ackm_sealed = ProtoField.bytes("mroce.ackm.sealed",
                                   "Sealed records (ciphertext if the "
                                   .. "connection encrypts)"),
    rec_path = ProtoField.uint16("mroce.ackm.rec.path", "Path", base.DEC),
    rec_hold = ProtoField.uint32("mroce.ackm.rec.hold_ns", "Hold (ns)",
                                 base.DEC),
    rec_high = ProtoField.uint32("mroce.ackm.rec.sack_high",
                                 "SACK high PSN", base.DEC),
    rec_echo = ProtoField.uint32("mroce.ackm.rec.echo_ts",
                                 "Echoed timestamp", base.DEC),
    rec_ce = ProtoField.uint16("mroce.ackm.rec.ce_count", "CE count",
                               base.DEC),
    rec_rx = ProtoField.uint16("mroce.ackm.rec.rx_count", "RX count",
                               base.DEC),
    rec_sack = ProtoField.bytes("mroce.ackm.rec.sack", "SACK bitmap"),
    rec_sack_count = ProtoField.uint16("mroce.ackm.rec.sack.count",
                                       "Acknowledged PSN count", base.DEC),
    rec_sack_rel = ProtoField.string("mroce.ackm.rec.sack.rel",
                                     "Acknowledged, as i in sack_high - i"),
    rec_sack_psn = ProtoField.uint32("mroce.ackm.rec.sack.psn",
                                     "Acknowledged PSN", base.DEC),
    -- NKH (section 3.9)
    syndrome = ProtoField.uint8("mroce.nak.syndrome", "Syndrome", base.HEX,
                                nak_names),
    nkh_rsvd = ProtoField.uint8("mroce.nak.reserved", "Reserved", base.HEX),
    nak_info = ProtoField.uint32("mroce.nak.info", "Info", base.DEC),
    -- PROBE padding (R-VAL-8)
    pad = ProtoField.bytes("mroce.pad", "Padding"),
    -- payload and ICRC (sections 3.1, 3.10)
    payload = ProtoField.bytes("mroce.payload", "Payload"),
    payload_enc = ProtoField.bytes("mroce.payload_enc",
                                   "Encrypted payload (AES-128-GCM)"),
    payload_len = ProtoField.uint32("mroce.payload_len", "Payload length",
                                    base.DEC),
    crc = ProtoField.uint32("mroce.crc", "ICRC", base.HEX),
    crc_calc = ProtoField.uint32("mroce.crc.calculated", "Calculated ICRC",
                                 base.HEX),
    crc_ok = ProtoField.bool("mroce.crc_ok", "ICRC good"),
    tag = ProtoField.bytes("mroce.tag", "AES-GCM tag"),
}

-- In wire order, so that tshark -G fields lists them that way.
mroce.fields = {
    F.version, F.flags, F.ackreq, F.retx, F.seal, F.kphase, F.opcode, F.path,
    F.conn, F.psn, F.ts, F.csn,
    F.dsn, F.stream, F.dxh_rsvd, F.prot, F.prot_enc, F.dxh_rsvd8, F.msn,
    F.msg_len, F.offset,
    F.va, F.rkey, F.ssn, F.imm,
    F.sack_high, F.dsn_cum, F.echo_ts, F.rate, F.ce_count, F.rx_count,
    F.sack, F.sack_count, F.sack_rel, F.sack_psn,
    F.ackm_count, F.ackm_rsvd, F.ackm_hold, F.ackm_sealed, F.rec_path, F.rec_hold,
    F.rec_high, F.rec_echo, F.rec_ce, F.rec_rx, F.rec_sack, F.rec_sack_count,
    F.rec_sack_rel, F.rec_sack_psn,
    F.syndrome, F.nkh_rsvd, F.nak_info, F.pad,
    F.payload, F.payload_enc, F.payload_len, F.crc, F.crc_calc, F.crc_ok,
    F.tag,
}

local E = {
    crc_good = ProtoExpert.new("mroce.crc.good", "ICRC correct",
                               expert.group.CHECKSUM, expert.severity.CHAT),
    crc_bad = ProtoExpert.new("mroce.crc.bad", "ICRC incorrect",
                              expert.group.CHECKSUM, expert.severity.ERROR),
    crc_skip = ProtoExpert.new("mroce.crc.unverified",
                               "ICRC not verified",
                               expert.group.CHECKSUM, expert.severity.NOTE),
    malformed = ProtoExpert.new("mroce.malformed",
                                "Malformed MetaRoCE packet",
                                expert.group.MALFORMED,
                                expert.severity.ERROR),
    snaplen = ProtoExpert.new("mroce.snaplen",
                              "Headers not captured in full (snaplen)",
                              expert.group.UNDECODED, expert.severity.NOTE),
    nak = ProtoExpert.new("mroce.nak.expert", "NACK",
                          expert.group.RESPONSE_CODE, expert.severity.NOTE),
    tag_skip = ProtoExpert.new("mroce.tag.unverified",
                               "AES-GCM tag not verified (no key)",
                               expert.group.SECURITY, expert.severity.NOTE),
    ackm_bad = ProtoExpert.new("mroce.ackm.malformed",
                               "Malformed ACKM payload (dropped whole)",
                               expert.group.MALFORMED,
                               expert.severity.ERROR),
    ackm_path = ProtoExpert.new("mroce.ackm.bad_path",
                                "ACKM record path repeated or the MTH "
                                .. "path's (the sender drops the ACKM)",
                                expert.group.PROTOCOL,
                                expert.severity.WARN),
    ackm_sat = ProtoExpert.new("mroce.ackm.hold_saturated",
                               "Hold saturated (524,280 ns or more)",
                               expert.group.SEQUENCE, expert.severity.NOTE),
}
mroce.experts = { E.crc_good, E.crc_bad, E.crc_skip, E.malformed,
                  E.snaplen, E.nak, E.tag_skip, E.ackm_bad, E.ackm_path,
                  E.ackm_sat }

mroce.prefs.udp_port = Pref.uint("UDP port", DEFAULT_PORT,
                                 "UDP port of MetaRoCE (R-ENC-2)")
mroce.prefs.check_crc = Pref.bool("Verify ICRC", true,
                                  "Compute the CRC32C trailer (R-CRC-1)")
mroce.prefs.sack_psns = Pref.bool("List acknowledged PSNs", true,
                                  "One mroce.sack.psn item per set SACK "
                                  .. "bit (up to 256 per ACK; about half "
                                  .. "the decoding time of a bench capture)")

-- ---------------------------------------------------------------------
-- CRC32C (R-CRC-2), slicing by 8 with bit32 and plain arithmetic, so a
-- 4 KiB payload costs about 1500 library calls.
-- ---------------------------------------------------------------------

local bxor = bit32.bxor
local T = {}

local function crc_tables()
    for k = 0, 7 do
        T[k] = {}
    end
    for n = 0, 255 do
        local c = n
        for _ = 1, 8 do
            if c % 2 == 1 then
                c = bxor(0x82F63B78, (c - 1) / 2)
            else
                c = c / 2
            end
        end
        T[0][n] = c
    end
    for n = 0, 255 do
        local c = T[0][n]
        for k = 1, 7 do
            c = bxor(T[0][c % 256], (c - c % 256) / 256)
            T[k][n] = c
        end
    end
end
crc_tables()

local function crc32c(s)
    local t0, t1, t2, t3 = T[0], T[1], T[2], T[3]
    local t4, t5, t6, t7 = T[4], T[5], T[6], T[7]
    local crc, i, n = 0xFFFFFFFF, 1, #s
    while i + 7 <= n do
        local b0, b1, b2, b3, b4, b5, b6, b7 = s:byte(i, i + 7)
        local x = bxor(crc, b0 + b1 * 256 + b2 * 65536 + b3 * 16777216)
        local x0 = x % 256
        x = (x - x0) / 256
        local x1 = x % 256
        x = (x - x1) / 256
        local x2 = x % 256
        local x3 = (x - x2) / 256
        crc = bxor(t7[x0], t6[x1], t5[x2], t4[x3], t3[b4], t2[b5], t1[b6],
                   t0[b7])
        i = i + 8
    end
    for j = i, n do
        local x = bxor(crc, s:byte(j)) % 256
        crc = bxor(t0[x], (crc - crc % 256) / 256)
    end
    return bxor(crc, 0xFFFFFFFF)
end

-- ---------------------------------------------------------------------
-- Extension headers: each adds its subtree and fills h
-- ---------------------------------------------------------------------

local function u(tvb, t, field, off, n)
    local r = tvb(off, n)
    t:add(field, r)
    return r:uint()
end

-- DXH byte 6 is the protection byte of a sealed packet (R-AEAD-2).
local function dissect_dxh(tvb, off, t, h)
    local st = t:add(mroce, tvb(off, 20), "Data Extension Header (DXH)")
    h.dsn = u(tvb, st, F.dsn, off, 4)
    h.stream = u(tvb, st, F.stream, off + 4, 2)
    if h.sealed then
        local pt = st:add(F.prot, tvb(off + 6, 1))
        pt:add(F.prot_enc, tvb(off + 6, 1))
        h.enc = tvb(off + 6, 1):uint() % 2 == 1
        st:add(F.dxh_rsvd8, tvb(off + 7, 1))
    else
        st:add(F.dxh_rsvd, tvb(off + 6, 2))
    end
    h.msn = u(tvb, st, F.msn, off + 8, 4)
    h.msg_len = u(tvb, st, F.msg_len, off + 12, 4)
    h.offset = u(tvb, st, F.offset, off + 16, 4)
    return 20
end

local function dissect_reth(tvb, off, t, h)
    local st = t:add(mroce, tvb(off, 12),
                     "Remote Extended Transport Header (RETH)")
    st:add(F.va, tvb(off, 8))
    h.rkey = u(tvb, st, F.rkey, off + 8, 4)
    return 12
end

local function dissect_snh(tvb, off, t, h)
    local st = t:add(mroce, tvb(off, 4), "Send Number Header (SNH)")
    h.ssn = u(tvb, st, F.ssn, off, 4)
    return 4
end

local function dissect_imm(tvb, off, t, h)
    local st = t:add(mroce, tvb(off, 4), "Immediate Data (IMM)")
    h.imm = u(tvb, st, F.imm, off, 4)
    return 4
end

-- bits_of[b]: positions (0 = MSB) of the set bits of byte value b.
local bits_of = {}
for b = 0, 255 do
    local pos = {}
    for k = 0, 7 do
        if math.floor(b / 2 ^ (7 - k)) % 2 == 1 then
            pos[#pos + 1] = k
        end
    end
    bits_of[b] = pos
end

-- Offsets i of the set bits of the bitmap (bit i = PSN sack_high - i,
-- MSB of the first byte is i = 0; R-HDR-14).
local function sack_bits(raw)
    local set, n = {}, 0
    for byte_i = 1, #raw do
        local base_i = (byte_i - 1) * 8
        for _, k in ipairs(bits_of[raw:byte(byte_i)]) do
            n = n + 1
            set[n] = base_i + k
        end
    end
    return set
end

-- "0-3,5,10-20" from a sorted list of offsets.
local function ranges(list)
    local out, j = {}, 1
    while j <= #list do
        local k = j
        while k < #list and list[k + 1] == list[k] + 1 do
            k = k + 1
        end
        out[#out + 1] = (k == j) and tostring(list[j])
                        or (list[j] .. "-" .. list[k])
        j = k + 1
    end
    return table.concat(out, ",")
end

-- The fields of the AKH's bitmap and of an ACKM record's.
local SACK_AKH = { bits = F.sack, count = F.sack_count, rel = F.sack_rel,
                   psn = F.sack_psn }
local SACK_REC = { bits = F.rec_sack, count = F.rec_sack_count,
                   rel = F.rec_sack_rel, psn = F.rec_sack_psn }

-- Returns the number of set bits.
local function dissect_sack(tvb, off, t, high, fs)
    local r = tvb(off, 32)
    local set = sack_bits(r:raw())
    local rel = ranges(set)
    local st = t:add(fs.bits, r)
    st:append_text(string.format(" (%d/%d acknowledged: sack_high - {%s})",
                                 #set, SACK_BITS, rel))
    st:add(fs.count, #set):set_generated()
    st:add(fs.rel, rel):set_generated()
    if not mroce.prefs.sack_psns then
        return #set
    end
    local pt = st:add(mroce, r, "Acknowledged PSNs")
    for _, i in ipairs(set) do
        pt:add(fs.psn, (high - i) % 2 ^ 32):set_generated()
    end
    return #set
end

local function dissect_akh(tvb, off, t, h)
    local st = t:add(mroce, tvb(off, 52), "ACK Header (AKH)")
    h.sack_high = u(tvb, st, F.sack_high, off, 4)
    h.dsn_cum = u(tvb, st, F.dsn_cum, off + 4, 4)
    u(tvb, st, F.echo_ts, off + 8, 4)
    h.rate = u(tvb, st, F.rate, off + 12, 4)
    h.ce_count = u(tvb, st, F.ce_count, off + 16, 2)
    h.rx_count = u(tvb, st, F.rx_count, off + 18, 2)
    h.sack_count = dissect_sack(tvb, off + 20, st, h.sack_high, SACK_AKH)
    return 52
end

local function dissect_nkh(tvb, off, t, h)
    local st = t:add(mroce, tvb(off, 16), "NACK Header (NKH)")
    h.dsn = u(tvb, st, F.dsn, off, 4)
    h.stream = u(tvb, st, F.stream, off + 4, 2)
    h.syndrome = u(tvb, st, F.syndrome, off + 6, 1)
    st:add(F.nkh_rsvd, tvb(off + 7, 1))
    h.msn = u(tvb, st, F.msn, off + 8, 4)
    h.nak_info = u(tvb, st, F.nak_info, off + 12, 4)
    local name = nak_names[h.syndrome] or "reserved"
    st:add_proto_expert_info(E.nak, "NACK " .. name)
    return 16
end

-- 52 zero bytes that make a PROBE as long as the ACK it draws (R-VAL-8:
-- no amplification); ignored on receipt.
local function dissect_pad(tvb, off, t, h)
    t:add(F.pad, tvb(off, 52))
    return 52
end

local dissect_ext = {
    dxh = dissect_dxh,
    reth = dissect_reth,
    snh = dissect_snh,
    imm = dissect_imm,
    akh = dissect_akh,
    nkh = dissect_nkh,
    pad = dissect_pad,
}

-- ---------------------------------------------------------------------
-- MTH, payload, ICRC
-- ---------------------------------------------------------------------

local function dissect_mth(tvb, t, h)
    local st = t:add(mroce, tvb(0, MTH_LEN), "Transport Header (MTH)")
    h.version = u(tvb, st, F.version, 0, 1)
    h.version = math.floor(h.version / 16)
    local ft = st:add(F.flags, tvb(0, 1))
    ft:add(F.ackreq, tvb(0, 1))
    ft:add(F.retx, tvb(0, 1))
    ft:add(F.seal, tvb(0, 1))
    ft:add(F.kphase, tvb(0, 1))
    h.flags = tvb(0, 1):uint() % 16
    h.sealed = h.flags % 4 >= 2
    h.kphase = h.flags % 2
    h.opcode = u(tvb, st, F.opcode, 1, 1)
    h.path = u(tvb, st, F.path, 2, 2)
    h.conn = u(tvb, st, F.conn, 4, 4)
    h.psn = u(tvb, st, F.psn, 8, 4)
    -- R-AEAD-4: a sealed control packet's ts is its CSN
    local ctl = h.opcode == 0x10 or h.opcode == 0x11 or h.opcode == 0x12
                or h.opcode == 0x30 or h.opcode == 0x31
    if h.sealed and ctl then
        h.csn = u(tvb, st, F.csn, 12, 4)
    else
        u(tvb, st, F.ts, 12, 4)
    end
end

-- ---------------------------------------------------------------------
-- ACKM path records (section 3.15)
-- ---------------------------------------------------------------------

-- A hold field: 16 bits in units of 8 ns, 0xFFFF meaning "at least".
local function add_hold(tvb, off, t, field)
    local r = tvb(off, 2)
    local units = r:uint()
    local it = t:add(field, r, units * ACKM_HOLD_UNIT)
    it:append_text(string.format(" (%d x %d ns)", units, ACKM_HOLD_UNIT))
    if units == 0xFFFF then
        it:add_proto_expert_info(E.ackm_sat)
    end
    return units * ACKM_HOLD_UNIT
end

local function dissect_ackm_rec(tvb, off, t, k, h, seen)
    local st = t:add(mroce, tvb(off, ACKM_REC_LEN), "")
    local path = u(tvb, st, F.rec_path, off, 2)
    local hold = add_hold(tvb, off + 2, st, F.rec_hold)
    local high = u(tvb, st, F.rec_high, off + 4, 4)
    u(tvb, st, F.rec_echo, off + 8, 4)
    local ce = u(tvb, st, F.rec_ce, off + 12, 2)
    u(tvb, st, F.rec_rx, off + 14, 2)
    local n = dissect_sack(tvb, off + 16, st, high, SACK_REC)
    st:set_text(string.format("Path record %d: path %d, high %d, "
                              .. "sack %d/%d, ce %d, hold %d ns", k, path,
                              high, n, SACK_BITS, ce, hold))
    if path == h.path or seen[path] then
        st:add_proto_expert_info(E.ackm_path, string.format(
            "Record path %d %s", path, path == h.path
            and "is the MTH path" or "repeats an earlier record"))
    end
    seen[path] = true
    h.rec_paths[#h.rec_paths + 1] = path
end

-- What is wrong with an ACKM payload of len bytes whose count byte is n
-- (nil: n is out of the captured bytes), or nil when it is well formed.
local function ackm_problem(len, n)
    if len < ACKM_PRE_LEN then
        return string.format("ACKM payload of %d bytes: shorter than its "
                             .. "4-byte preamble", len)
    elseif n > ACKM_MAX_RECS then
        return string.format("ACKM count %d: at most %d records", n,
                             ACKM_MAX_RECS)
    elseif len ~= ACKM_PRE_LEN + ACKM_REC_LEN * n then
        return string.format("ACKM payload of %d bytes: count %d needs %d",
                             len, n, ACKM_PRE_LEN + ACKM_REC_LEN * n)
    end
    return nil
end

-- The payload of an ACKM: preamble and records. A sealed ACKM's payload
-- is ciphertext in the encrypted mode (R-AEAD-3), with nothing on the
-- wire to tell the modes apart, and the dissector has no key: it shows
-- the bytes and checks only the length (the same in both modes).
local function dissect_ackm(tvb, off, t, h)
    local len = h.payload_len
    local captured = math.min(len, tvb:len() - off)
    h.rec_paths = {}
    local st = t
    if captured > 0 then
        st = t:add(mroce, tvb(off, captured), "ACKM Path Records")
    end
    local n = captured >= 1 and tvb(off, 1):uint() or 0
    if h.sealed then
        st:append_text(" (sealed: not decoded)")
        if captured > 0 then
            st:add(F.ackm_sealed, tvb(off, captured))
        end
        n = math.floor((len - ACKM_PRE_LEN) / ACKM_REC_LEN)
    elseif captured >= ACKM_PRE_LEN then
        st:add(F.ackm_count, tvb(off, 1))
        st:add(F.ackm_rsvd, tvb(off + 1, 1))
        h.ackm_hold = add_hold(tvb, off + 2, st, F.ackm_hold)
    end
    local problem = ackm_problem(len, n)
    if problem then
        h.ackm_bad = true
        st:add_proto_expert_info(E.ackm_bad, problem)
    end
    if h.sealed then
        return
    end
    -- the records present, even in a malformed payload, for diagnosis
    local seen = {}
    for k = 1, math.min(n, ACKM_MAX_RECS) do
        local ro = off + ACKM_PRE_LEN + (k - 1) * ACKM_REC_LEN
        if ro + ACKM_REC_LEN > off + captured then
            break
        end
        dissect_ackm_rec(tvb, ro, st, k, h, seen)
    end
end

local function dissect_payload(tvb, off, body, t, h, oi)
    h.payload_len = body - off
    t:add(F.payload_len, h.payload_len):set_generated()
    if h.payload_len == 0 and h.opcode ~= 0x12 then
        return
    end
    if h.opcode == 0x12 then
        return dissect_ackm(tvb, off, t, h)
    end
    local captured = math.min(h.payload_len, tvb:len() - off)
    if captured <= 0 then
        return
    end
    local it = t:add(h.enc and F.payload_enc or F.payload, tvb(off, captured))
    if not oi.payload then
        h.extra = true
        it:add_proto_expert_info(E.malformed,
                                 "Payload on a packet type without one "
                                 .. "(R-HDR-6)")
    end
end

-- Returns true, false, or nil when the ICRC was not checked (turned off,
-- or the capture's snaplen cut the packet short).
local function dissect_crc(tvb, body, t)
    if tvb:len() < body + ICRC_LEN then
        t:add_proto_expert_info(E.crc_skip, "ICRC not verified: packet "
                                .. "not captured in full")
        return nil
    end
    local r = tvb(body, ICRC_LEN)
    local it = t:add(F.crc, r)
    local wire = r:uint()
    if not mroce.prefs.check_crc then
        it:add_proto_expert_info(E.crc_skip)
        return nil
    end
    local calc = crc32c(tvb:raw(0, body))
    t:add(F.crc_calc, r, calc):set_generated()
    local ok = calc == wire
    t:add(F.crc_ok, r, ok):set_generated()
    if ok then
        it:append_text(" [correct]")
        it:add_proto_expert_info(E.crc_good)
    else
        it:append_text(string.format(" [incorrect, should be 0x%08x]", calc))
        it:add_proto_expert_info(E.crc_bad)
    end
    return ok
end

-- The tag of a sealed packet: shown, not verified (no key).
local function dissect_tag(tvb, body, t)
    if tvb:len() < body + TAG_LEN then
        return
    end
    local it = t:add(F.tag, tvb(body, TAG_LEN))
    it:add_proto_expert_info(E.tag_skip)
end

-- ---------------------------------------------------------------------
-- Info column
-- ---------------------------------------------------------------------

local function info_data(h, oi)
    local s = string.format("%s path=%d psn=%d dsn=%d s%d/m%d", oi.name,
                            h.path, h.psn, h.dsn, h.stream, h.msn)
    if h.opcode == 0x05 then
        s = s .. string.format(" rlen=%d", h.msg_len)
    else
        s = s .. string.format(" off=%d len=%d", h.offset, h.payload_len)
    end
    if h.ssn then
        s = s .. string.format(" ssn=%d", h.ssn)
    end
    if h.imm then
        s = s .. string.format(" imm=0x%08x", h.imm)
    end
    return s
end

local function info_text(h, oi)
    if oi.hdrs[1] == "dxh" then
        return info_data(h, oi)
    elseif h.opcode == 0x10 then
        local s = string.format("ACK path=%d high=%d cum=%d sack=%d/%d ce=%d",
                                h.path, h.sack_high, h.dsn_cum, h.sack_count,
                                SACK_BITS, h.ce_count)
        if h.psn ~= h.sack_high then
            s = s .. string.format(" probe=%d", h.psn)
        end
        return s
    elseif h.opcode == 0x12 then
        local s = string.format("ACKM path=%d high=%d cum=%d sack=%d/%d "
                                .. "ce=%d", h.path, h.sack_high, h.dsn_cum,
                                h.sack_count, SACK_BITS, h.ce_count)
        if h.psn ~= h.sack_high then
            s = s .. string.format(" probe=%d", h.psn)
        end
        if h.ackm_hold and h.ackm_hold > 0 then
            s = s .. string.format(" hold=%d", h.ackm_hold)
        end
        if #h.rec_paths > 0 then
            s = s .. " +paths=" .. table.concat(h.rec_paths, ",")
        end
        return s
    elseif h.opcode == 0x11 then
        return string.format("NACK %s path=%d psn=%d dsn=%d s%d/m%d info=%d",
                             nak_names[h.syndrome] or "reserved", h.path,
                             h.psn, h.dsn, h.stream, h.msn, h.nak_info)
    elseif h.opcode == 0x20 then
        return string.format("PROBE path=%d psn=%d", h.path, h.psn)
    elseif h.opcode == 0x30 or h.opcode == 0x31 then
        return string.format("%s path=%d conn=0x%08x next_dsn=%d", oi.name,
                             h.path, h.conn, h.psn)
    end
    return string.format("%s path=%d conn=0x%08x", oi.name, h.path, h.conn)
end

local function info_flags(h, crc_ok)
    local tags = {}
    if h.flags % 16 >= 8 then
        tags[#tags + 1] = "ACKREQ"
    end
    if h.flags % 8 >= 4 then
        tags[#tags + 1] = "RETX"
    end
    if h.sealed then
        tags[#tags + 1] = string.format("SEALED K%d", h.kphase)
        if h.csn then
            tags[#tags + 1] = "csn=" .. h.csn
        end
        if h.enc then
            tags[#tags + 1] = "ENC"
        end
    end
    if h.extra then
        tags[#tags + 1] = "UNEXPECTED PAYLOAD"
    end
    if h.ackm_bad then
        tags[#tags + 1] = "MALFORMED ACKM"
    end
    if crc_ok == false then
        tags[#tags + 1] = "BAD ICRC"
    end
    return #tags > 0 and (" [" .. table.concat(tags, ",") .. "]") or ""
end

-- ---------------------------------------------------------------------
-- Dissector
-- ---------------------------------------------------------------------

local function malformed(t, pinfo, text)
    t:add_proto_expert_info(E.malformed, text)
    pinfo.cols.info:set("Malformed: " .. text)
end

-- What a receiver would drop before looking at the extension headers
-- (R-RX-1 steps 2-4), or nil.
local function header_problem(h, oi, len, trailer)
    if h.version ~= 1 then
        return "version " .. h.version
    elseif not oi then
        return string.format("unknown opcode 0x%02x", h.opcode)
    elseif len < oi.len + trailer then
        return string.format("%s shorter than its headers (%d bytes)",
                             oi.name, len)
    end
    return nil
end

-- R-RX-1 order: length, version, opcode, opcode's length. The ICRC is
-- checked whenever the packet holds one, so that damage shows up even in
-- packets a receiver would drop for another reason.
local function dissect_body(tvb, pinfo, t, len)
    local h = {}
    dissect_mth(tvb, t, h)
    local trailer = h.sealed and TAG_LEN or ICRC_LEN
    local body = len - trailer
    local oi = ops[h.opcode]
    local problem = header_problem(h, oi, len, trailer)
    if problem then
        local ok = nil
        if not h.sealed then
            ok = dissect_crc(tvb, body, t)
        end
        return malformed(t, pinfo, problem .. info_flags(h, ok))
    end
    if tvb:len() < oi.len then
        local text = string.format("%s path=%d psn=%d [headers cut by "
                                   .. "snaplen]", oi.name, h.path, h.psn)
        t:add_proto_expert_info(E.snaplen)
        return pinfo.cols.info:set(text)
    end
    local off = MTH_LEN
    for _, name in ipairs(oi.hdrs) do
        off = off + dissect_ext[name](tvb, off, t, h)
    end
    dissect_payload(tvb, off, body, t, h, oi)
    local ok = nil
    if h.sealed then
        dissect_tag(tvb, body, t)
    else
        ok = dissect_crc(tvb, body, t)
    end
    local text = info_text(h, oi) .. info_flags(h, ok)
    pinfo.cols.info:set(text)
    t:append_text(", " .. text)
end

function mroce.dissector(tvb, pinfo, tree)
    local len = tvb:reported_length_remaining()
    pinfo.cols.protocol = "MetaRoCE"
    local t = tree:add(mroce, tvb())
    if len < MTH_LEN + ICRC_LEN then
        malformed(t, pinfo, "shorter than MTH + ICRC")
        return len
    elseif tvb:len() < MTH_LEN then
        t:add_proto_expert_info(E.snaplen)
        pinfo.cols.info:set("MetaRoCE [headers cut by snaplen]")
        return len
    end
    dissect_body(tvb, pinfo, t, len)
    return len
end

-- ---------------------------------------------------------------------
-- Registration
-- ---------------------------------------------------------------------

local udp_table = DissectorTable.get("udp.port")
local current_port = DEFAULT_PORT
udp_table:add(current_port, mroce)

function mroce.prefs_changed()
    if mroce.prefs.udp_port ~= current_port then
        udp_table:remove(current_port, mroce)
        current_port = mroce.prefs.udp_port
        udp_table:add(current_port, mroce)
    end
end
