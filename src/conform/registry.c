/* The test table: the per-section tables of t_*.c, in spec order, with
 * the wire monitor's cases last (they report over the whole run). */
#include <string.h>

#include "conform/cf.h"

static const struct cf_test *const registry_sections[] = {
    cf_t_enc, cf_t_hdr,  cf_t_aead, cf_t_conn, cf_t_cm,  cf_t_path,  cf_t_sack,
    cf_t_ack, cf_t_ackm, cf_t_loss, cf_t_dsn,  cf_t_rtt, cf_t_retry, cf_t_msg,
    cf_t_ord, cf_t_cc,   cf_t_rx,   cf_t_nack, cf_t_val, cf_t_sec,   cf_t_mon,
};

#define REGISTRY_MAX 1024

const struct cf_test *const *cf_tests(int *n)
{
    static const struct cf_test *all[REGISTRY_MAX];
    static int count = -1;
    if (count < 0) {
        count = 0;
        for (size_t s = 0;
             s < sizeof(registry_sections) / sizeof(registry_sections[0]); s++)
            for (const struct cf_test *t = registry_sections[s];
                 t->id && count < REGISTRY_MAX; t++)
                all[count++] = t;
    }
    *n = count;
    return all;
}

bool cf_test_has_rule(const struct cf_test *ts, const char *rule)
{
    size_t n = strlen(rule);
    for (const char *s = ts->rules; (s = strstr(s, rule)); s += n)
        if ((s == ts->rules || s[-1] == ' ') && (s[n] == ' ' || !s[n]))
            return true;
    return false;
}
