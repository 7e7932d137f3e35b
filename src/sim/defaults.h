/* Simulator defaults, modelled on 400G RoCE gear. Each value says where it
 * comes from: a standard, a datasheet, a paper, issue 3, or "derived"
 * (computed from the others, the formula given). Every default can be
 * overridden in the config structs of link.h, switch.h, nic.h and topo.h.
 */
#ifndef MROCE_SIM_DEFAULTS_H
#define MROCE_SIM_DEFAULTS_H

/* ---- Packets ---- */

/* Payload bytes per packet: the largest IBTA path MTU (InfiniBand
 * Architecture Spec. vol. 1, 4096-byte MTU), used by RoCEv2 NICs on
 * 9000-byte Ethernet; also the engine's default (mroce_ctx_attr.mtu). */
#define MROCE_SIM_MTU_PAYLOAD 4096u

/* Transport header bytes a full data packet adds to its MTU of payload,
 * rounded up: MetaRoCE MTH 16 + DXH 20 + RETH 12 + SNH 4 + IMM 4 + ICRC 4
 * = 60 (docs/spec.md section 3); RoCEv2 BTH 12 + RETH 16 + ImmDt 4 +
 * ICRC 4 = 36 (IBTA vol. 1 annex A17). Used only to size PFC headroom
 * and thresholds (MROCE_SIM_MTU_WIRE). */
#define MROCE_SIM_TRANSPORT_HDR_MAX 64u

/* Bytes a frame costs on the wire beyond its UDP payload (IPv4):
 * preamble+SFD 8 and inter-frame gap 12 (IEEE 802.3 clause 4), Ethernet
 * header 14 and FCS 4 (IEEE 802.3), IPv4 header 20 (RFC 791), UDP header
 * 8 (RFC 768). IPv6 adds 20 more (RFC 8200: 40-byte header). No VLAN tag:
 * PFC priorities come from DSCP, as in SONiC's default RoCE setup. */
#define MROCE_SIM_WIRE_OVERHEAD_V4 66u
#define MROCE_SIM_WIRE_OVERHEAD_V6 86u

/* The largest data frame on the wire at the default MTU: 4096 + 64 + 66
 * = 4226 bytes. */
#define MROCE_SIM_MTU_WIRE                                                     \
    (MROCE_SIM_MTU_PAYLOAD + MROCE_SIM_TRANSPORT_HDR_MAX +                     \
     MROCE_SIM_WIRE_OVERHEAD_V4)

/* Minimum Ethernet frame 64 bytes (IEEE 802.3) + preamble and gap 20: the
 * least a frame occupies on the wire, e.g. a PFC pause frame. */
#define MROCE_SIM_MIN_FRAME_WIRE 84u

/* UDP payloads up to this size travel on the high (control) priority:
 * MetaRoCE ACKs are 72 bytes (MTH 16 + AKH 52 + ICRC 4, docs/spec.md
 * section 3), NACKs and probes smaller; data packets carry at least
 * MTH+DXH+ICRC = 40 bytes plus payload. A hint only: a host can install
 * its own classifier (host.h). Derived. */
#define MROCE_SIM_CTRL_MAX_PAYLOAD 128u

/* Bytes a trimmed packet keeps: its headers up to the largest MetaRoCE
 * header stack (MTH 16 + DXH 20 + RETH 12 + SNH 4 + IMM 4 = 56, rounded
 * up). As in NDP (Handley et al., SIGCOMM 2017), the header survives so
 * the receiver learns exactly what was cut. Derived. */
#define MROCE_SIM_TRIM_BYTES 64u

/* ---- Links ---- */

/* 400 Gb/s: 400GBASE-R (IEEE 802.3bs). One byte serializes in 20 ps. */
#define MROCE_SIM_LINK_BPS 400000000000ull

/* One-way propagation delay per link: 1 us, as issue 3 specifies (about
 * 200 m of fibre at 5 ns/m; conservative for intra-row, typical for a
 * hall-scale spine layer). */
#define MROCE_SIM_LINK_DELAY_PS 1000000ull

/* ---- Switch buffer ---- */

/* Shared buffer per 400G port: Broadcom Tomahawk 3 (BCM56980) has 64 MB
 * on chip for 32 x 400GbE, i.e. 2 MB per port (product brief). A switch's
 * pool is this times its port count. */
#define MROCE_SIM_BUF_PER_PORT (2u * 1024u * 1024u)

/* Dynamic threshold (Choudhury and Hahne, "Dynamic queue length
 * thresholds for shared-memory packet switches", IEEE/ACM ToN 1998): an
 * egress queue may hold at most alpha x (unused shared buffer). alpha = 1
 * is SONiC's lossless profile ("dynamic_th": "0", i.e. 2^0). */
#define MROCE_SIM_DT_ALPHA 1.0

/* ---- ECN (RED-style marking on the egress queue) ---- */

/* DCQCN defaults (Zhu et al., "Congestion Control for Large-Scale RDMA
 * Deployments", SIGCOMM 2015, section 6): Kmin 5 KB, Kmax 200 KB,
 * Pmax 1%. */
#define MROCE_SIM_ECN_KMIN 5000u
#define MROCE_SIM_ECN_KMAX 200000u
#define MROCE_SIM_ECN_PMAX 0.01

/* ---- PFC (IEEE 802.1Qbb) ---- */

/* Headroom per ingress port and priority: what can still arrive after the
 * XOFF decision. Derived from the 802.1Qbb delay model: the pause frame
 * waits for at most one frame leaving in the reverse direction (MTU),
 * travels one link delay, the sender finishes the frame it is sending
 * (MTU), and the frames already on the wire arrive (one link delay of
 * line rate): 2 x rate x delay + 2 x MTU frame + pause frame. At 400G,
 * 1 us, 4096-byte MTU: 100000 + 2 x 4226 + 84 = 108536 bytes. See
 * mroce_sim_pfc_headroom() in switch.h. */

/* XOFF: pause upstream when an ingress port/priority holds this many bytes
 * in the shared buffer: 2 headrooms, 217 KB at the defaults. Derived:
 * (1) it sits just above the ECN Kmax (200 KB), so ECN reacts before PFC,
 * the order DCQCN deployments aim for; (2) after a resume, new frames
 * arrive about 2 link delays (2 us) later, while what the ingress still
 * holds keeps its egress busy for over 4 us at 400G, so pause/resume
 * cycling never idles a congested port; (3) a 16-port switch's buffer
 * (32 MB) covers every port and priority at XOFF + headroom (10.4 MB), so
 * lossless priorities cannot overflow it. */
#define MROCE_SIM_PFC_XOFF_HEADROOMS 2u

/* XON: resume once the ingress port/priority holds XOFF minus this many
 * MTU frames; the hysteresis avoids a pause frame per packet. Derived. */
#define MROCE_SIM_PFC_XON_GAP_MTUS 2u

/* ---- NIC ---- */

/* Frames a NIC port queues ahead of its MAC. Two keep the line busy while
 * the engine is asked for the next packet, yet keep the engine's send
 * timestamps within two frame times of the wire. Derived. */
#define MROCE_SIM_NIC_TXQ_PKTS 2u

#endif
