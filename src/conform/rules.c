/* The rules of docs/spec.md: every paragraph that starts with a bold rule
 * id (R-FAMILY-n), its section, its text up to the next rule or heading,
 * and its strongest RFC 2119 keyword. Also the suite's list of rules that
 * no black-box test can check, with the reason (docs/conformance.md,
 * "Testable rules"). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform/cf.h"

/* Rules whose requirement the wire (and the agent's protocol) cannot
 * show. Keep the reasons honest: a rule goes here only if no test could
 * fail when an implementation breaks it. */
static const struct {
    const char *rule, *why;
} rules_untestable[] = {
    {"R-SEC-1", "threat model: says what an attacker can do, requires no "
                "behaviour of an endpoint"},
    {"R-SEC-5", "a bound on what a receiver allocates: internal memory the "
                "wire and the agent's protocol do not show"},
    {"R-SEC-6", "advice to deployments (IPsec, MACsec), not endpoint "
                "behaviour"},
    {"R-VER-3", "binds the authors of later revisions (when a change needs "
                "a new version), not an endpoint"},
    {"R-VER-6", "permits later revisions to define hints; version 1 defines "
                "none, so there is nothing to observe"},
};

const char *cf_kw_name(int kw)
{
    static const char *const n[] = {"NONE", "MAY", "SHOULD", "MUST"};
    return kw >= 0 && kw <= CF_KW_MUST ? n[kw] : "?";
}

static bool rules_word_at(const char *s, size_t i, const char *w)
{
    size_t n = strlen(w);
    if (strncmp(s + i, w, n))
        return false;
    bool before = i == 0 || !isalnum((unsigned char)s[i - 1]);
    bool after = !isalnum((unsigned char)s[i + n]);
    return before && after;
}

/* The strongest BCP 14 keyword (in capitals) in a text. */
static int rules_keyword(const char *s)
{
    static const struct {
        const char *w;
        int kw;
    } kws[] = {{"MUST", CF_KW_MUST},          {"REQUIRED", CF_KW_MUST},
               {"SHALL", CF_KW_MUST},         {"SHOULD", CF_KW_SHOULD},
               {"RECOMMENDED", CF_KW_SHOULD}, {"MAY", CF_KW_MAY},
               {"OPTIONAL", CF_KW_MAY}};
    int best = CF_KW_NONE;
    for (size_t i = 0; s[i]; i++)
        for (size_t k = 0; k < sizeof(kws) / sizeof(kws[0]); k++)
            if (kws[k].kw > best && rules_word_at(s, i, kws[k].w))
                best = kws[k].kw;
    return best;
}

/* "**R-XXX-n**" at the start of a line (after an optional "- " or "1. "):
 * copies the id and returns true. */
static bool rules_start(const char *line, char *id, size_t cap)
{
    const char *s = line;
    if (s[0] == '-' && s[1] == ' ')
        s += 2;
    else if (isdigit((unsigned char)s[0]) && s[1] == '.' && s[2] == ' ')
        s += 3;
    if (strncmp(s, "**R-", 4))
        return false;
    const char *e = strstr(s + 2, "**");
    if (!e || (size_t)(e - s - 2) >= cap)
        return false;
    size_t n = (size_t)(e - s - 2);
    memcpy(id, s + 2, n);
    id[n] = 0;
    for (size_t i = 2; i < n; i++)
        if (!isalnum((unsigned char)id[i]) && id[i] != '-')
            return false;
    return strchr(id + 2, '-') != NULL;
}

/* "## 6. Reliability" -> "6"; "### 6.4 DSN" -> "6.4"; else unchanged. */
static void rules_heading(const char *line, char *sec, size_t cap)
{
    if (line[0] != '#')
        return;
    const char *s = line;
    while (*s == '#')
        s++;
    while (*s == ' ')
        s++;
    size_t n = 0;
    while (s[n] && (isdigit((unsigned char)s[n]) || s[n] == '.'))
        n++;
    if (n && s[n - 1] == '.')
        n--;
    if (!n) {
        snprintf(sec, cap, "%.*s", (int)(cap - 1), s);
        sec[strcspn(sec, "\r\n")] = 0;
        return;
    }
    snprintf(sec, cap, "%.*s", (int)n, s);
}

static bool rules_ends(const char *line)
{
    return line[0] == '#' || !strncmp(line, "---", 3);
}

static void rules_add(struct cf_rules *rs, const char *id, const char *sec,
                      char *text)
{
    if (cf_rule_find(rs, id)) {
        free(text); /* a second paragraph with the same id: keep the first */
        return;
    }
    struct cf_rule *r = realloc(rs->r, (size_t)(rs->n + 1) * sizeof(*r));
    if (!r) {
        free(text);
        return;
    }
    rs->r = r;
    struct cf_rule *x = &rs->r[rs->n++];
    memset(x, 0, sizeof(*x));
    snprintf(x->id, sizeof(x->id), "%s", id);
    snprintf(x->section, sizeof(x->section), "%s", sec);
    x->text = text;
    x->kw = rules_keyword(text);
    for (size_t i = 0;
         i < sizeof(rules_untestable) / sizeof(rules_untestable[0]); i++)
        if (!strcmp(rules_untestable[i].rule, id))
            x->untestable = rules_untestable[i].why;
}

static char *rules_append(char *text, const char *line)
{
    size_t a = text ? strlen(text) : 0, b = strlen(line);
    char *t = realloc(text, a + b + 1);
    if (!t)
        return text;
    memcpy(t + a, line, b + 1);
    return t;
}

int cf_rules_load(struct cf_rules *rs, const char *path)
{
    memset(rs, 0, sizeof(*rs));
    snprintf(rs->path, sizeof(rs->path), "%s", path);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[4096], sec[16] = "", id[24], cur[24] = "";
    char *text = NULL;
    bool appendix = false;
    while (fgets(line, sizeof(line), f)) {
        bool start = rules_start(line, id, sizeof(id));
        if ((start || rules_ends(line)) && text) {
            rules_add(rs, cur, sec, text);
            text = NULL;
        }
        if (line[0] == '#') {
            rules_heading(line, sec, sizeof(sec));
            appendix = strstr(line, "Appendix") != NULL;
        }
        if (start && !appendix) {
            snprintf(cur, sizeof(cur), "%s", id);
            text = rules_append(NULL, line);
        } else if (text) {
            text = rules_append(text, line);
        }
    }
    if (text)
        rules_add(rs, cur, sec, text);
    fclose(f);
    return rs->n > 0 ? 0 : -1;
}

const struct cf_rule *cf_rule_find(const struct cf_rules *rs, const char *id)
{
    for (int i = 0; i < rs->n; i++)
        if (!strcmp(rs->r[i].id, id))
            return &rs->r[i];
    return NULL;
}

void cf_rules_free(struct cf_rules *rs)
{
    for (int i = 0; i < rs->n; i++)
        free(rs->r[i].text);
    free(rs->r);
    rs->r = NULL;
    rs->n = 0;
}
