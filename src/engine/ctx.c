/* The endpoint: demultiplexes received packets to connections, schedules
 * transmission across connections, and runs their timers. */
#include <string.h>

#include "engine/eng.h"
#include "engine/fault.h"
#include "engine/seal.h"
#include "wire/aead.h"
#include "wire/decode.h"

void *eng_alloc(struct mroce_ctx *ctx, size_t size)
{
    return dev_alloc(&ctx->dev, size);
}

void eng_free(struct mroce_ctx *ctx, void *p)
{
    dev_free(&ctx->dev, p);
}

/* R-SEC-7: the source mroce_ctx_open chose (a CSPRNG unless the
 * application asked for a deterministic run). */
uint64_t eng_rand(struct mroce_ctx *ctx)
{
    return dev_rand(&ctx->dev);
}

/* R-ENC-3: uniform over 49152-65535, or over the datapath's set. */
uint16_t eng_rand_port(struct mroce_ctx *ctx)
{
    if (ctx->n_src_ports)
        return ctx->src_ports[eng_rand(ctx) % ctx->n_src_ports];
    return (uint16_t)(49152 + eng_rand(ctx) % 16384);
}

void mroce_ctx_set_fault(struct mroce_ctx *ctx, uint32_t flags)
{
    ctx->fault = flags;
}

size_t eng_ctx_max_pkt(const struct mroce_ctx *ctx)
{
    /* R-ENC-9, R-AEAD-3: a sealed packet's trailer is the 16-byte tag */
    return MROCE_MAX_HDR_LEN + ctx->mtu +
           (ctx->has_crypto ? MROCE_TAG_LEN : MROCE_ICRC_LEN);
}

void eng_ctx_get_counters(const struct mroce_ctx *ctx,
                          struct mroce_ctx_counters *out)
{
    *out = ctx->cnt;
}

/* ---- connection table ---- */

static uint32_t ctx_hash(const struct mroce_ctx *ctx, uint32_t id)
{
    return (id * 2654435761u) & (ctx->conn_hash_cap - 1);
}

struct mroce_conn *eng_conn_find(struct mroce_ctx *ctx, uint32_t id)
{
    struct mroce_conn *c = ctx->conn_hash[ctx_hash(ctx, id)];
    while (c && c->local.conn_id != id)
        c = c->hnext;
    return c;
}

static uint32_t ctx_fresh_id(struct mroce_ctx *ctx)
{
    uint32_t id = 0;
    do
        id = MROCE_FAULT(ctx, CONN_ID_SEQUENTIAL) ? ctx->n_conns + 1 + id
                                                  : (uint32_t)eng_rand(ctx);
    while (!id || eng_conn_find(ctx, id));
    return id;
}

/* The hash, the list, and the scheduler (which may need room: ENOMEM).
 * id 0: a fresh random id (R-CONN-1); else that id, EBUSY if taken. */
int eng_conn_link(struct mroce_ctx *ctx, struct mroce_conn *c, uint32_t id)
{
    if (id && eng_conn_find(ctx, id))
        return MROCE_EBUSY;
    if (eng_sched_add(ctx, c))
        return MROCE_ENOMEM;
    c->local.conn_id = id ? id : ctx_fresh_id(ctx);
    uint32_t h = ctx_hash(ctx, c->local.conn_id);
    c->hnext = ctx->conn_hash[h];
    ctx->conn_hash[h] = c;
    c->next = ctx->conns;
    if (ctx->conns)
        ctx->conns->prev = c;
    ctx->conns = c;
    ctx->n_conns++;
    return 0;
}

void eng_conn_unlink(struct mroce_ctx *ctx, struct mroce_conn *c)
{
    struct mroce_conn **pp = &ctx->conn_hash[ctx_hash(ctx, c->local.conn_id)];
    while (*pp != c)
        pp = &(*pp)->hnext;
    *pp = c->hnext;
    if (c->prev)
        c->prev->next = c->next;
    else
        ctx->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    eng_sched_del(ctx, c);
    ctx->n_conns--;
}

/* ---- receive ---- */

static int ctx_drop_wire(struct mroce_ctx *ctx, int err)
{
    switch (err) {
    case MROCE_WIRE_ETRUNC:
        ctx->cnt.drop_truncated++;
        break;
    case MROCE_WIRE_EVERSION:
        ctx->cnt.drop_bad_version++;
        break;
    case MROCE_WIRE_EOPCODE:
        ctx->cnt.drop_bad_opcode++;
        break;
    case MROCE_WIRE_ECRC:
        ctx->cnt.drop_bad_crc++;
        break;
    default:
        ctx->cnt.drop_bad_payload++;
        break;
    }
    return MROCE_EPROTO;
}

/* Constant lengths: the compiler compares words instead of calling
 * memcmp (every packet received comes here). */
static bool ctx_addr_eq(const struct mroce_addr *a, const struct mroce_addr *b)
{
    if (a->family != b->family)
        return false;
    if (a->family == MROCE_AF_INET)
        return memcmp(a->ip, b->ip, 4) == 0;
    return memcmp(a->ip, b->ip, 16) == 0;
}

/* R-RX-2 step 8, R-ENC-10: a packet sent on path p comes from the peer's
 * address of plane p mod P; an ACK or NACK travels on a path of the
 * peer's own choosing (R-ACK-3), so it comes from any of its planes. */
static bool ctx_src_ok(const struct mroce_conn *c,
                       const struct mroce_pkt_meta *meta,
                       const struct mroce_hdr *h)
{
    uint32_t n = c->ctx->dev.n_planes;
    if (h->opcode != MROCE_OP_ACK && h->opcode != MROCE_OP_ACKM &&
        h->opcode != MROCE_OP_NACK)
        return ctx_addr_eq(&meta->src, &c->peer_addr[h->path % n]);
    for (uint32_t i = 0; i < n; i++)
        if (ctx_addr_eq(&meta->src, &c->peer_addr[i]))
            return true;
    return false;
}

/* The completer's opcodes, ACK, NACK and ACKM (0x10-0x12, R-HDR-4), are
 * tested as one range: a data packet passes with one test, not three. */
static void ctx_dispatch(struct mroce_conn *c, uint64_t now,
                         const struct mroce_pkt_meta *meta,
                         const struct mroce_hdr *h)
{
    if (h->opcode < MROCE_OP_ACK || h->opcode > MROCE_OP_ACKM)
        eng_resp_rx(c, now, meta, h);
    else if (h->opcode == MROCE_OP_ACK)
        eng_comp_ack(c, now, h);
    else if (h->opcode == MROCE_OP_ACKM)
        eng_comp_ackm(c, now, h);
    else
        eng_comp_nak(c, now, h);
}

/* WRITE and SEND data change nothing the receiver may send but its ACKs
 * (their own set, R-ACK-9) and what the responder readies itself (a READ
 * started behind them, a PROBE of R-ACK-8), and no timer but the
 * coalesced ACK's, which only ever arms earlier (eng_conn_arm): the
 * connection is neither made ready nor its deadline recomputed, which
 * spares an empty transmit attempt per packet. */
static bool ctx_plain_data(uint8_t op)
{
    return op == MROCE_OP_WRITE || op == MROCE_OP_WRITE_IMM ||
           op == MROCE_OP_SEND || op == MROCE_OP_SEND_IMM;
}

/* Whether c can stay out of the ready set: a try would find nothing
 * (eng_req_spent: nothing but ACKs, which go through the ACK set). With
 * more than one plane it stays in: R-PATH-100's walk chooses among the
 * ready connections by their shares, and a try that finds nothing there
 * changes whose turn it is. */
static bool ctx_spent(const struct mroce_conn *c)
{
    return c->ctx->dev.n_planes == 1 && eng_req_spent(c);
}

/* c changed (a packet received, its timers run): it may have something
 * to send (ctx_spent). */
static void ctx_changed(struct mroce_conn *c)
{
    if (!ctx_spent(c))
        eng_sched_ready(c);
}

/* R-RX-1, R-RX-2: decode, find the connection, check the source and the
 * path, then dispatch. */
int eng_ctx_rx(struct mroce_ctx *ctx, uint64_t now,
               const struct mroce_pkt_meta *meta, const uint8_t *buf,
               size_t len)
{
    struct mroce_hdr h;
    int err = mroce_wire_decode_inline(buf, len, &h, !ctx->no_icrc);
    if (err && ctx->fault_id) /* fault.h: R-RX-1 faults */
        err = eng_fault_redecode(ctx, &buf, &len, &h, err);

    ctx->cnt.rx_pkts++;
    if (err)
        return ctx_drop_wire(ctx, err);
    struct mroce_conn *c = eng_conn_find(ctx, h.conn);
    if (!c || c->state == MROCE_CONN_INIT) {
        ctx->cnt.drop_unknown_conn++; /* R-CONN-2: no reply */
        return MROCE_EPROTO;
    }
    if (!ctx_src_ok(c, meta, &h) && !MROCE_FAULT(ctx, BAD_SRC_ACCEPTED)) {
        ctx->cnt.drop_bad_src++;
        return MROCE_EPROTO;
    }
    c->cnt.rx_pkts++;
    c->cnt.rx_bytes += len;
    if (h.path >= c->n_paths) {
        c->cnt.drop_bad_path++;
        return MROCE_EPROTO;
    }
    if (ctx->no_icrc && eng_resp_cut(c, &h)) { /* no ICRC caught it */
        ctx->cnt.drop_bad_crc++;
        return MROCE_EPROTO;
    }
    if ((c->aead || (h.flags & MROCE_HF_SEAL)) && /* else nothing to open */
        eng_open(c, buf, len, &h)) /* R-AEAD-8: counted by reason */
        return MROCE_EPROTO;
    ctx_dispatch(c, now, meta, &h);
    if (!ctx_plain_data(h.opcode)) {
        eng_conn_update_deadline(c); /* its timers moved */
        ctx_changed(c);              /* whatever it changed may let c send */
    }
    return 0;
}

/* ---- transmit: round-robin over ready connections ---- */

/* Counts a packet sent; its caller has updated c's deadline (sending
 * moves its timers). */
static int ctx_count_tx(struct mroce_conn *c, int n)
{
    if (n > 0) {
        c->ver++; /* a packet sent changes what c may send next */
        c->ctx->cnt.tx_pkts++;
        c->cnt.tx_pkts++;
        c->cnt.tx_bytes += (uint64_t)n;
    }
    return n;
}

/* c leaves the ready set as a try that found nothing leaves it. */
static void ctx_idle(struct mroce_conn *c)
{
    c->plane_held = false;
    eng_sched_idle(c);
}

/* A connection leaves the ready set when it has nothing to send; every
 * entry point that changes it (receive, timers, posts, connect, path
 * calls) puts it back (receive and timers unless it has nothing but ACKs
 * to send, ctx_changed), so skipping the others skips calls that would
 * return 0 and change nothing. */
static int ctx_conn_tx(struct mroce_conn *c, uint64_t now, uint8_t *buf,
                       size_t cap, struct mroce_pkt_meta *meta)
{
    c->plane_held = false;
    if (c->held_group != ENG_HELD_NONE) /* tried again: no longer held */
        eng_sched_unhold(c);
    if (c->state == MROCE_CONN_INIT)
        return 0;
    int n = eng_req_ctl_tx(c, now, buf, cap, meta);
    if (n > 0) { /* a data packet's eng_req_data_tx moves the deadline */
        eng_conn_update_deadline(c);
        if (ctx_spent(c)) /* its next try would find nothing */
            ctx_idle(c);
    } else if (!n && (n = eng_req_data_tx(c, now, buf, meta)) > 0) {
        eng_sched_sent(c); /* R-ACK-9: data is a turn */
    }
    return ctx_count_tx(c, n);
}

/* c's turn, or for NULL the ready set's next one's (its round-robin).
 * With every plane open that is the whole walk: while the one tried
 * sends nothing, it leaves the ready set and the next one's turn
 * follows; the context settles when none sends. With some closed,
 * ctx_tx_some_planes walks, one turn at a time. The only call of
 * ctx_conn_tx, and not inlined: eng_req_ctl_tx and eng_req_data_tx are
 * inlined here, so that a data packet costs one frame (eng_ctx_tx_busy,
 * with none, jumps here). */
__attribute__((noinline)) static int
ctx_turns(struct mroce_ctx *ctx, uint64_t now, uint8_t *buf, size_t cap,
          struct mroce_pkt_meta *meta, struct mroce_conn *c)
{
    for (;; c = NULL) {
        if (!c && !(c = eng_sched_pick(ctx))) {
            eng_sched_settle(ctx);
            return 0;
        }
        int n = ctx_conn_tx(c, now, buf, cap, meta);
        if (n > 0 || !eng_planes_all_open(ctx))
            return n;
        eng_sched_idle(c);
    }
}

/* A held connection whose state, open planes and plane health are all as
 * when it last found no port: trying it again would return 0 again. */
static bool ctx_still_held(const struct mroce_conn *c)
{
    const struct mroce_ctx *ctx = c->ctx;
    return c->plane_held && c->held_ver == c->ver &&
           c->held_planes == ctx->dev.tx_planes &&
           c->held_plane_ver == ctx->plane_ver;
}

static void ctx_note_held(struct mroce_conn *c)
{
    c->held_ver = c->ver;
    c->held_planes = c->ctx->dev.tx_planes;
    c->held_plane_ver = c->ctx->plane_ver;
}

/* c was tried and sent nothing: out of the ready set, or held when its
 * data waits only for closed planes (R-PATH-14). */
static void ctx_tried(struct mroce_conn *c)
{
    if (!c->plane_held) {
        eng_sched_idle(c);
    } else {
        ctx_note_held(c);
        eng_sched_hold(c);
    }
}

/* R-PATH-100: the some-planes walk's head, past the connections that
 * sent their round's packet early: each gives up this turn instead. */
static struct mroce_conn *ctx_walk_head(struct mroce_ctx *ctx)
{
    struct mroce_conn *c = eng_sched_pick_held(ctx);
    for (uint32_t left = ctx->n_conns; c && c->turn_taken && left; left--) {
        c->turn_taken = false;
        eng_sched_sent(c); /* the round-robin moves past it */
        struct mroce_conn *next = eng_sched_after_held(c);
        c = next ? next : c;
    }
    return c;
}

/* R-PATH-100: with one plane's port open, and that plane up, the
 * connection among the walk's first ENG_PLANE_LOOK from its head whose
 * data is furthest below its share on that plane (the head on a tie);
 * those that sent early this round, and the held, are passed over. With
 * several planes open, the head. */
static struct mroce_conn *ctx_plane_best(struct mroce_ctx *ctx,
                                         struct mroce_conn *head)
{
    uint64_t open = ctx->dev.tx_planes & eng_plane_bits(ctx);
    if (!head || !open || (open & (open - 1)))
        return head;
    uint32_t k = (uint32_t)__builtin_ctzll(open);
    if (eng_plane_down(ctx, (uint8_t)k))
        return head;
    struct mroce_conn *best = head, *c = head;
    int64_t lag = eng_plane_lag(head, k);
    for (uint32_t i = 1; i < ENG_PLANE_LOOK; i++) {
        c = eng_sched_after_held(c);
        if (!c || c == head)
            break;
        int64_t l = c->turn_taken || ctx_still_held(c) ? INT64_MIN
                                                       : eng_plane_lag(c, k);
        if (l > lag) {
            lag = l;
            best = c;
        }
    }
    return best;
}

/* R-PATH-100: b, not the walk's head, sends out of turn; if it sent data
 * the round-robin stays at the head and b gives up its next turn. */
static int ctx_tx_early(struct mroce_conn *b, uint64_t now, uint8_t *buf,
                        size_t cap, struct mroce_pkt_meta *meta)
{
    struct eng_sched *s = &b->ctx->sched;
    uint32_t cursor = s->tx_next;
    uint64_t data = b->cnt.tx_data_pkts;
    int n = ctx_turns(b->ctx, now, buf, cap, meta, b);
    if (b->cnt.tx_data_pkts != data) { /* data: a turn (R-ACK-9) */
        s->tx_next = cursor;
        b->turn_taken = true;
    }
    if (n <= 0)
        ctx_tried(b);
    return n;
}

/* R-PATH-14: with some planes closed, a connection whose data waits only
 * for those (plane_held) stays ready but is held (sched.c): the walk
 * passes over it while the open planes and the plane version are those
 * it was held at and it has not changed (eng_sched_ready, an ACK it sent
 * and a try end the hold). A ready one that finds them as when it was
 * last held (its group was freed) is passed over here. The connections
 * tried, and their order, are those of the walk over every ready one
 * that skipped the unchanged, without the skips (after a plane failure
 * that walk made ~42 visits per call, 98% of them skips: 48% of the run;
 * now 0.81 visits per call, all of them tries).
 * R-PATH-100: with one plane open, a connection furthest below its
 * share on it may go first (ctx_plane_best). Not inlined: ctx_tx_data
 * jumps here or to ctx_turns, and keeps no frame (one plane: every
 * call comes here). */
__attribute__((noinline)) static int
ctx_tx_some_planes(struct mroce_ctx *ctx, uint64_t now, uint8_t *buf,
                   size_t cap, struct mroce_pkt_meta *meta)
{
    eng_sched_held_begin(ctx);
    struct mroce_conn *c = ctx_walk_head(ctx);
    struct mroce_conn *b = ctx_plane_best(ctx, c);
    if (b != c) {
        int n = ctx_tx_early(b, now, buf, cap, meta);
        if (n > 0)
            return n;
        c = ctx_walk_head(ctx);
    }
    for (uint32_t left = ctx->n_conns; c && left; left--) {
        int n = ctx_still_held(c) ? 0 : ctx_turns(ctx, now, buf, cap, meta, c);
        if (n > 0) {
            c->turn_taken = false; /* its turn, early or not */
            return n;
        }
        struct mroce_conn *next = eng_sched_after_held(c);
        ctx_tried(c);
        c = next == c ? NULL : next;
    }
    eng_sched_settle(ctx);
    return 0;
}

/* The walk over the ready connections, ctx_turns's or, with some planes
 * closed, ctx_tx_some_planes's: calls ending in a jump, no frame here.
 * Not inlined: in eng_ctx_tx_busy the planes' mask (a shift by a count
 * in %cl) had the arguments' registers moved there and back, 7 moves
 * per call; here it is 2. */
__attribute__((noinline)) static int ctx_tx_data(struct mroce_ctx *ctx,
                                                 uint64_t now, uint8_t *buf,
                                                 size_t cap,
                                                 struct mroce_pkt_meta *meta)
{
    if (!eng_planes_all_open(ctx))
        return ctx_tx_some_planes(ctx, now, buf, cap, meta);
    return ctx_turns(ctx, now, buf, cap, meta, NULL);
}

/* R-ACK-9: ACKs and NACKs go first, whichever connection's turn it is;
 * with none sent, the data walk. Not inlined: eng_ctx_tx_busy keeps no
 * frame for the calls with no ACK owed. */
__attribute__((noinline)) static int ctx_tx_acks(struct mroce_ctx *ctx,
                                                 uint64_t now, uint8_t *buf,
                                                 size_t cap,
                                                 struct mroce_pkt_meta *meta)
{
    struct mroce_conn *c;
    while ((c = eng_sched_pick_ack(ctx))) {
        int n = eng_resp_ack_tx(c, now, buf, cap, meta);
        bool done = n <= 0 || (!c->nak_count && !c->ack_q_count);
        if (done)
            eng_sched_ack_done(c); /* none owed now: not picked again */
        if (n <= 0)
            continue;
        if (done) /* the last ACK owed may be the last packet to send */
            eng_sched_settle(ctx);
        if (c->held_group != ENG_HELD_NONE) /* it changed (ver) */
            eng_sched_unhold(c);
        eng_conn_ack_sent(c);
        return ctx_count_tx(c, n);
    }
    return ctx_tx_data(ctx, now, buf, cap, meta);
}

/* Not inlined, so that eng_ctx_tx (inline in mroce_ctx_tx, called for
 * nothing as often as not) needs no prologue; nor has it a frame (its
 * calls end in jumps). */
__attribute__((noinline)) int eng_ctx_tx_busy(struct mroce_ctx *ctx,
                                              uint64_t now, uint8_t *buf,
                                              size_t cap,
                                              struct mroce_pkt_meta *meta)
{
    if (eng_sched_acks_maybe(ctx))
        return ctx_tx_acks(ctx, now, buf, cap, meta);
    return ctx_tx_data(ctx, now, buf, cap, meta);
}

/* ---- timers ---- */

static void ctx_conn_expiry(struct mroce_conn *c, uint64_t now)
{
    eng_path_timers(c, now);
    eng_comp_timers(c, now);
    if (c->close_pending && c->close_at <= now) {
        c->close_at = ENG_NEVER;
        c->close_due = true;
    }
    eng_resp_timers(c, now);
    eng_conn_update_deadline(c);
    ctx_changed(c);
}

/* Connections whose cached deadline is due, newest first (the order the
 * list scan had: repaths draw source ports from the context's generator). */
void eng_ctx_on_expiry(struct mroce_ctx *ctx, uint64_t now)
{
    eng_sched_collect_due(ctx, now);
    struct mroce_conn *c;
    while ((c = eng_sched_next_due(ctx)))
        ctx_conn_expiry(c, now);
}

/* ---- the receiver's fair share (R-CC-2) ---- */

uint32_t eng_rate_hint(struct mroce_ctx *ctx, uint64_t now)
{
    if (now >= ctx->share_at) {
        uint32_t n = 0;
        for (struct mroce_conn *c = ctx->conns; c; c = c->next)
            if (c->last_data_rx && now - c->last_data_rx < SHARE_WINDOW_NS)
                n++;
        ctx->active_senders = n;
        ctx->share_at = now + SHARE_WINDOW_NS / 4;
    }
    return ctx->link_mbps / (ctx->active_senders ? ctx->active_senders : 1);
}

/* Connections (they hold references on the device's objects), then the
 * engine's tables. */
void eng_ctx_release(struct mroce_ctx *ctx)
{
    while (ctx->conns)
        eng_conn_destroy(ctx->conns);
    eng_free(ctx, ctx->conn_hash);
    eng_free(ctx, ctx->planes);
    eng_free(ctx, ctx->aead_buf);
    eng_free(ctx, ctx->fault_buf);
    eng_sched_release(ctx);
}
