/* Packet capture: writes MetaRoCE datagrams to a pcap file that tshark and
 * Wireshark read (dissector: tools/wireshark/mroce.lua, docs/wireshark.md).
 *
 * Engines and the test wire deal in UDP payloads plus a struct
 * mroce_pkt_meta, so each payload is wrapped in synthesized Ethernet,
 * IPv4 or IPv6 and UDP headers built from the meta: addresses, ports and
 * ECN (R-ENC-6) as given, DF set on IPv4 (R-ENC-8), correct lengths, the
 * IPv4 header checksum and the UDP checksum (R-ENC-7). Ethernet addresses
 * are made up from the IP addresses (02:00 + the last four bytes), and over
 * IPv6 the flow label is the UDP source port (R-ENC-5 leaves it to the
 * datapath). The file has nanosecond timestamps, taken from the caller's
 * clock (virtual time in the simulator and on the test wire), so packets
 * sent at time 0 appear at 1970-01-01 00:00:00 UTC.
 *
 * Errors are codes from enum mroce_err. Thread-safety: none; one writer
 * belongs to one thread. Buffers passed in are only lent for the call.
 */
#ifndef MROCE_IO_PCAP_PCAP_H
#define MROCE_IO_PCAP_PCAP_H

#include <stddef.h>
#include <stdint.h>

#include <mroce/mroce.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Largest UDP payload a frame can carry (the IPv4 limit, used for both). */
#define MROCE_PCAP_MAX_PAYLOAD 65507

struct mroce_pcap;

/* Creates or truncates the file at path and writes the pcap file header
 * (link type Ethernet, nanosecond resolution). Errors: EINVAL (NULL
 * argument, or the file cannot be created: errno says why), ENOMEM.
 * *out is NULL on failure. */
int mroce_pcap_open(const char *path, struct mroce_pcap **out);

/* Appends one frame carrying the UDP payload buf[0..len), stamped now_ns
 * (nanoseconds since the epoch of the caller's clock). meta->src and
 * meta->dst must both be MROCE_AF_INET or both MROCE_AF_INET6. Errors:
 * EINVAL (NULL argument, families unknown or different, len above
 * MROCE_PCAP_MAX_PAYLOAD, or the write failed: errno says why). */
int mroce_pcap_write(struct mroce_pcap *p, uint64_t now_ns,
                     const struct mroce_pkt_meta *meta, const uint8_t *buf,
                     size_t len);

/* Number of frames written so far. */
uint64_t mroce_pcap_count(const struct mroce_pcap *p);

/* Flushes and closes the file and frees p. Returns 0, or EINVAL if a write
 * or the flush failed (the file may then be incomplete). NULL: no-op. */
int mroce_pcap_close(struct mroce_pcap *p);

#ifdef __cplusplus
}
#endif
#endif
