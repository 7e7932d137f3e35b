#define _GNU_SOURCE
/* The compliance suite's reading of the spec (src/conform/rules.c) and its
 * grading by keyword (runner.c): a hand-made spec with every keyword, and
 * the real docs/spec.md, whose rule count the suite must agree with. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "conform/cf.h"

/* A rule's paragraph runs to the next rule or heading: lists and tables
 * after it are part of it (R-RX-3's steps, R-RETRY-1's items). */
static const char *mini =
    "# Spec\n\n## 3 Headers\n\n"
    "**R-HDR-1**: A sender MUST send version 1.\n\n"
    "**R-HDR-2**: A receiver SHOULD count drops; it MUST NOT answer them.\n\n"
    "**R-HDR-3**: An endpoint MAY pad.\n\n"
    "**R-HDR-4**: This is OPTIONAL and RECOMMENDED.\n\n"
    "**R-HDR-5**: Background, no keyword at all.\n\n"
    "1. a list that belongs to the rule: it MAY say more\n\n"
    "## 4 Prose\n\n"
    "Not a rule: R-HDR-9 cited in passing MUST be ignored.\n\n"
    "## 11 Security\n\n"
    "**R-SEC-1**: Threat model, and an attacker MAY do anything.\n";

static void write_spec(char *path, const char *text)
{
    strcpy(path, "/tmp/conform_rules_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

static void test_keywords(void **state)
{
    (void)state;
    char path[64];
    write_spec(path, mini);
    struct cf_rules rs;
    assert_int_equal(cf_rules_load(&rs, path), 0);
    unlink(path);
    assert_int_equal(rs.n, 6);
    static const struct {
        const char *id;
        int kw;
    } want[] = {{"R-HDR-1", CF_KW_MUST}, {"R-HDR-2", CF_KW_MUST},
                {"R-HDR-3", CF_KW_MAY},  {"R-HDR-4", CF_KW_SHOULD},
                {"R-HDR-5", CF_KW_MAY},  {"R-SEC-1", CF_KW_MAY}};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const struct cf_rule *r = cf_rule_find(&rs, want[i].id);
        assert_non_null(r);
        assert_int_equal(r->kw, want[i].kw);
    }
    assert_null(cf_rule_find(&rs, "R-HDR-9"));
    /* the threat model is no endpoint behaviour: untestable */
    assert_non_null(cf_rule_find(&rs, "R-SEC-1")->untestable);
    assert_null(cf_rule_find(&rs, "R-HDR-1")->untestable);
    assert_non_null(strstr(cf_rule_find(&rs, "R-HDR-2")->text, "MUST NOT"));
    cf_rules_free(&rs);
}

static void test_grading(void **state)
{
    (void)state;
    char path[64];
    write_spec(path, mini);
    struct cf_rules rs;
    assert_int_equal(cf_rules_load(&rs, path), 0);
    unlink(path);
    /* a test is graded by its keyword, capped at its rules' strongest */
    struct cf_test t = {.id = "x", .rules = "R-HDR-3", .kw = CF_KW_MUST};
    assert_int_equal(cf_grade_kw(&t, &rs), CF_KW_MAY);
    t.rules = "R-HDR-3 R-HDR-1";
    assert_int_equal(cf_grade_kw(&t, &rs), CF_KW_MUST);
    t.rules = "R-HDR-4";
    assert_int_equal(cf_grade_kw(&t, &rs), CF_KW_SHOULD);
    t.kw = CF_KW_SHOULD;
    t.rules = "R-HDR-1";
    assert_int_equal(cf_grade_kw(&t, &rs), CF_KW_SHOULD);
    /* a rule the spec does not have (or without keyword): the test's own */
    t.kw = CF_KW_MUST;
    t.rules = "R-HDR-1 R-" /* split: spec-rules.py takes it for a citation */
              "NONE-7";
    assert_int_equal(cf_grade_kw(&t, &rs), CF_KW_MUST);
    cf_rules_free(&rs);
}

/* The real spec: as many rules as **R-...**: paragraphs, every one with a
 * keyword (scripts/spec-rules.py requires it). */
static void test_real_spec(void **state)
{
    (void)state;
    struct cf_rules rs;
    assert_int_equal(cf_rules_load(&rs, MROCE_SOURCE_DIR "/docs/spec.md"), 0);
    FILE *f = fopen(MROCE_SOURCE_DIR "/docs/spec.md", "r");
    assert_non_null(f);
    char line[4096];
    int n = 0;
    while (fgets(line, sizeof(line), f))
        n += strncmp(line, "**R-", 4) == 0 && strstr(line, "**:") != NULL;
    fclose(f);
    assert_int_equal(rs.n, n);
    int untestable = 0;
    for (int i = 0; i < rs.n; i++) {
        assert_int_not_equal(rs.r[i].kw, CF_KW_NONE);
        untestable += rs.r[i].untestable != NULL;
    }
    assert_int_equal(untestable, 5);
    cf_rules_free(&rs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keywords),
        cmocka_unit_test(test_grading),
        cmocka_unit_test(test_real_spec),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
