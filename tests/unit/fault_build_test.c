/* The conformance fault checks exist only in the fault variant of the
 * engine (src/engine/fault.h, CMakeLists.txt "mroce_link_faults"). This
 * file is built twice: fault_build_test links libmroce, which must refuse
 * every fault (ENOTSUP) and must not act on one even when the context's
 * fault_id is forced past the refusal (its checks are compiled out);
 * fault_build_faults_test links the fault variant (FAULT_BUILD_FAULTS=1),
 * which must take and act on the same faults, and so must the agent's
 * "fault" request on it. The two halves run the same assertions with
 * opposite expectations, so each proves the other can fail. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "agent/agent.h"
#include "cm/check.h"
#include "engine/eng.h"
#include "engine/fault.h"
#include "support/peer.h"

#ifndef FAULT_BUILD_FAULTS
#define FAULT_BUILD_FAULTS 0
#endif

static int teardown(void **state)
{
    (void)state;
    peer_free_all();
    mroce_fault_process = MROCE_FID_NONE;
    return 0;
}

static void test_variant(void **state)
{
    (void)state;
    assert_int_equal(mroce_fault_built(), FAULT_BUILD_FAULTS);
}

/* Every id of the table: refused by libmroce, taken by the variant; 0
 * (none) is taken by both, an id past the table by neither. */
static void test_set_fault_id(void **state)
{
    (void)state;
    struct peer *p = peer_new(NULL);
    int want = FAULT_BUILD_FAULTS ? 0 : MROCE_ENOTSUP;
    for (int id = 1; id < MROCE_FID_COUNT; id++) {
        assert_int_equal(mroce_ctx_set_fault_id(p->ctx, id), want);
        assert_int_equal(p->ctx->fault_id, FAULT_BUILD_FAULTS ? id : 0);
        assert_int_equal(mroce_fault_set_process(id), want);
        assert_int_equal(mroce_fault_process, FAULT_BUILD_FAULTS ? id : 0);
    }
    assert_int_equal(mroce_ctx_set_fault_id(p->ctx, MROCE_FID_NONE), 0);
    assert_int_equal(p->ctx->fault_id, 0);
    assert_int_equal(mroce_fault_set_process(MROCE_FID_NONE), 0);
    assert_int_equal(mroce_ctx_set_fault_id(p->ctx, MROCE_FID_COUNT),
                     MROCE_EINVAL);
    assert_int_equal(mroce_fault_set_process(-1), MROCE_EINVAL);
    peer_check_alive(p);
}

static void test_table(void **state)
{
    (void)state;
    if (FAULT_BUILD_FAULTS) {
        assert_int_equal(mroce_fault_lookup("ecn_not_ect"),
                         MROCE_FID_ECN_NOT_ECT);
        assert_int_equal(mroce_fault_lookup("no_such_fault"), MROCE_ENOENT);
        assert_string_equal(mroce_fault_get(MROCE_FID_ECN_NOT_ECT)->rule,
                            "R-ENC-6");
    } else {
        assert_int_equal(mroce_fault_lookup("ecn_not_ect"), MROCE_ENOTSUP);
        assert_int_equal(mroce_fault_lookup("no_such_fault"), MROCE_ENOTSUP);
        for (int id = 0; id <= MROCE_FID_COUNT; id++)
            assert_null(mroce_fault_get(id));
    }
}

/* A fault site of the engine: with fault_id forced (as a stray write
 * would), libmroce still sends ECN-capable data (R-ENC-6): the check is
 * not there. The variant sends Not-ECT. (The packets are taken here, not
 * with peer_drain, which fails on anything but ECT(0).) */
static void test_engine_site(void **state)
{
    (void)state;
    struct peer *p = peer_new(NULL);
    p->ctx->fault_id = MROCE_FID_ECN_NOT_ECT;
    assert_int_equal(peer_post(p, MROCE_OP_WRITE, 0, 1, 0, 3 * PEER_MTU), 0);
    uint8_t buf[PEER_PKT_MAX];
    struct mroce_pkt_meta m;
    int n, k = 0;
    while ((n = mroce_ctx_tx(p->ctx, p->now, buf, sizeof(buf), &m)) > 0) {
        assert_int_equal(m.ecn, FAULT_BUILD_FAULTS ? MROCE_ECN_NOT_ECT
                                                   : MROCE_ECN_ECT0);
        k++;
    }
    assert_int_equal(n, 0);
    assert_int_equal(k, 3);
}

/* A fault site of the CM (process-wide): R-CM-9 picks the strongest
 * common mode; the forced CM_MODE_WEAKEST picks the weakest only in the
 * variant. */
static void test_cm_site(void **state)
{
    (void)state;
    struct mroce_cm_attr attr = {
        .modes = MROCE_CM_MODE_NONE | MROCE_CM_MODE_AUTH | MROCE_CM_MODE_ENC};
    struct cm_policy pol = {.attr = &attr};
    struct cm_hello h = {.modes = attr.modes};
    struct cm_agreed ag = {.psk = true};
    struct cm_verdict v = {0};
    mroce_fault_process = MROCE_FID_CM_MODE_WEAKEST;
    assert_int_equal(cm_check_mode(&pol, &h, &ag, &v), 0);
    assert_int_equal(ag.mode, FAULT_BUILD_FAULTS ? MROCE_CM_MODE_NONE
                                                 : MROCE_CM_MODE_ENC);
}

static json_t *agent_req(struct agent *a, const char *json)
{
    json_t *req = json_loads(json, 0, NULL);
    assert_non_null(req);
    json_t *rep = agent_handle(a, req);
    json_decref(req);
    return rep;
}

/* The agent on this engine: its hello offers the faults and the "fault"
 * capability only in the variant; libmroce's refuses the request with
 * "unsupported" and says why, and keeps no fault set. Clearing the
 * fault works on both. */
static void test_agent(void **state)
{
    (void)state;
    static struct agent a; /* large handle tables: not on the stack */
    memset(&a, 0, sizeof(a));
    json_t *hello = agent_req(&a, "{\"cmd\":\"hello\"}");
    json_t *faults = json_object_get(hello, "faults");
    assert_int_equal(json_array_size(faults),
                     FAULT_BUILD_FAULTS ? MROCE_FID_COUNT - 1 : 0);
    bool cap = false;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(hello, "caps"), i, c) cap |=
        !strcmp(json_string_value(c), "fault");
    assert_int_equal(cap, FAULT_BUILD_FAULTS);
    json_decref(hello);

    json_t *r = agent_req(&a, "{\"cmd\":\"fault\",\"name\":\"psn_skip\"}");
    assert_int_equal(json_is_true(json_object_get(r, "ok")),
                     FAULT_BUILD_FAULTS);
    if (!FAULT_BUILD_FAULTS) {
        assert_string_equal(json_string_value(json_object_get(r, "error")),
                            "unsupported");
        assert_non_null(strstr(json_string_value(json_object_get(r, "message")),
                               "no fault checks"));
    }
    json_decref(r);
    assert_int_equal(a.fault_id, FAULT_BUILD_FAULTS ? MROCE_FID_PSN_SKIP : 0);
    assert_int_equal(mroce_fault_process, a.fault_id);

    r = agent_req(&a, "{\"cmd\":\"fault\"}");
    assert_true(json_is_true(json_object_get(r, "ok")));
    json_decref(r);
    assert_int_equal(a.fault_id, 0);
    assert_int_equal(mroce_fault_process, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_teardown(f, teardown)
        T(test_variant),     T(test_set_fault_id), T(test_table),
        T(test_engine_site), T(test_cm_site),      T(test_agent),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
