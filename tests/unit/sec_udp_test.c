/* The UDP datapath never fragments (R-ENC-8): every socket it opens, the
 * receive socket and one send socket per source port, refuses to
 * fragment (IP_PMTUDISC_DO: DF set on IPv4; IPV6_PMTUDISC_DO on IPv6),
 * so a datagram above the path MTU fails to send instead of leaving in
 * fragments. The kernel's default (IP_PMTUDISC_WANT) would fragment.
 *
 * And a datapath's context draws its ids and keys from the kernel's
 * CSPRNG whatever seed it is given (R-SEC-7): mroce-perf used to pass
 * seeds 1 and 2, so every run had the same connection ids and rkeys. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <mroce/mroce.h>
#include <mroce/mroce_dp.h>

#include "io/dp.h"
#include "io/udp/udp.h"

/* A datapath on ip at a free port (ESTATE: the port is taken). */
static struct mroce_dp *dp_open_seed(const char *ip, uint64_t seed)
{
    struct mroce_dp_attr a;
    memset(&a, 0, sizeof(a));
    a.kind = MROCE_DP_UDP;
    a.local_ip = ip;
    a.n_src_ports = 8;
    a.ctx.seed = seed;
    int rc = MROCE_ESTATE;
    struct mroce_dp *dp = NULL;
    for (int t = 0; t < 50 && rc == MROCE_ESTATE; t++) {
        a.port = (uint16_t)(20000 + (unsigned)rand() % 12000);
        rc = mroce_dp_create(&a, &dp);
    }
    if (rc == MROCE_EINVAL)
        return NULL; /* no such address here (IPv6 off) */
    assert_int_equal(rc, 0);
    return dp;
}

static struct mroce_dp *dp_open(const char *ip)
{
    return dp_open_seed(ip, 0);
}

static int pmtu_mode(int fd, int level, int opt)
{
    int v = -1;
    socklen_t len = sizeof(v);
    assert_int_equal(getsockopt(fd, level, opt, &v, &len), 0);
    return v;
}

static void check_sockets(struct mroce_dp *dp, int level, int opt, int want)
{
    struct udp_dp *u = dp->priv;
    assert_int_equal(pmtu_mode(u->rx_fd, level, opt), want);
    assert_true(u->n_tx >= 1);
    for (uint32_t i = 0; i < u->n_tx; i++)
        assert_int_equal(pmtu_mode(u->tx_fd[i], level, opt), want);
}

static void test_df_ipv4(void **state)
{
    (void)state;
    struct mroce_dp *dp = dp_open("127.0.0.1");
    assert_non_null(dp);
    check_sockets(dp, IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO);
    mroce_dp_destroy(dp);
}

static void test_df_ipv6(void **state)
{
    (void)state;
    struct mroce_dp *dp = dp_open("::1");
    if (!dp)
        skip();
    check_sockets(dp, IPPROTO_IPV6, IPV6_MTU_DISCOVER, IPV6_PMTUDISC_DO);
    mroce_dp_destroy(dp);
}

/* The first memory key and connection id of a datapath's context. */
static void first_ids(struct mroce_dp *dp, uint32_t out[2])
{
    static uint8_t mem[64];
    struct mroce_ctx *ctx = mroce_dp_ctx(dp);
    struct mroce_pd *pd;
    struct mroce_cq *cq;
    struct mroce_mr *mr;
    struct mroce_conn *c;
    assert_int_equal(mroce_pd_alloc(ctx, &pd), 0);
    assert_int_equal(mroce_cq_create(ctx, 64, &cq), 0);
    assert_int_equal(
        mroce_reg_mr(pd, mem, sizeof(mem), MROCE_ACCESS_LOCAL_WRITE, &mr), 0);
    struct mroce_conn_attr ca = {.send_cq = cq, .recv_cq = cq, .n_paths = 4};
    assert_int_equal(mroce_conn_create(pd, &ca, &c), 0);
    struct mroce_conn_params prm;
    mroce_conn_get_params(c, &prm);
    out[0] = mroce_mr_rkey(mr);
    out[1] = prm.conn_id;
}

static void test_seeded_datapaths_differ(void **state)
{
    (void)state;
    uint32_t ids[2][2];
    for (int i = 0; i < 2; i++) {
        struct mroce_dp *dp = dp_open_seed("127.0.0.1", 1);
        assert_non_null(dp);
        first_ids(dp, ids[i]);
        mroce_dp_destroy(dp);
    }
    assert_int_not_equal(ids[0][0], ids[1][0]);
    assert_int_not_equal(ids[0][1], ids[1][1]);
}

int main(void)
{
    srand(7);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_df_ipv4),
        cmocka_unit_test(test_df_ipv6),
        cmocka_unit_test(test_seeded_datapaths_differ),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
