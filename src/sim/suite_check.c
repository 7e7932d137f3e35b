/* The suite's output checker (suite.h): results.json parses, report.md
 * names every scenario, and report.md prints no number that results.json
 * does not hold.
 *
 * A number of the report is a run of digits with an optional fraction
 * ("12", "0.953") that does not continue a word ("rocev2", "p99",
 * "loss0.1pct" are names, not numbers). It is found in results.json if
 * some number there -- a value, or a number written inside a string
 * value, such as an ideal's formula with its values -- rounds to it at
 * the printed number of decimals (signs ignored). */
#include <stdlib.h>
#include <string.h>

#include "sim/suite.h"
#include "sim/suite_int.h"

struct numset {
    double *v;
    int n, cap;
};

static int ns_add(struct numset *s, double v)
{
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 1024;
        double *nv = realloc(s->v, sizeof(*nv) * (size_t)cap);
        if (!nv)
            return -1;
        s->v = nv;
        s->cap = cap;
    }
    s->v[s->n++] = v < 0 ? -v : v;
    return 0;
}

static bool word_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_' || c == '.';
}

static bool digit(char c)
{
    return c >= '0' && c <= '9';
}

/* The next number token at or after *p: its value and decimals, *p past
 * it. false at the end of the text. */
static bool next_token(const char **p, const char *start, double *v, int *dec,
                       const char **at)
{
    for (const char *s = *p; *s; s++) {
        if (!digit(*s) || (s > start && word_char(s[-1])))
            continue;
        const char *e = s;
        while (digit(*e))
            e++;
        *dec = 0;
        if (*e == '.' && digit(e[1]))
            for (e++; digit(*e); e++)
                (*dec)++;
        *v = strtod(s, NULL);
        *at = s;
        *p = e;
        return true;
    }
    return false;
}

static int ns_from_text(struct numset *s, const char *text)
{
    const char *p = text, *at;
    double v;
    int dec;
    while (next_token(&p, text, &v, &dec, &at))
        if (ns_add(s, v))
            return -1;
    return 0;
}

static int ns_collect(struct numset *s, const struct sj *v)
{
    for (; v; v = v->next) {
        int rc = v->type == SJ_NUM   ? ns_add(s, v->num)
                 : v->type == SJ_STR ? ns_from_text(s, v->str)
                                     : 0;
        if (rc || ns_collect(s, v->child))
            return -1;
    }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Is some value within half a unit of the last printed decimal? */
static bool ns_has(const struct numset *s, double t, int dec)
{
    double half = 0.5;
    for (int i = 0; i < dec; i++)
        half /= 10;
    half *= 1 + 1e-9;
    int lo = 0, hi = s->n;
    while (lo < hi) { /* first value >= t - half */
        int mid = (lo + hi) / 2;
        if (s->v[mid] < t - half)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->n && s->v[lo] <= t + half;
}

static int line_of(const char *text, const char *at)
{
    int line = 1;
    for (const char *p = text; p < at; p++)
        line += *p == '\n';
    return line;
}

static int check_numbers(const struct numset *s, const char *md, char *why,
                         size_t n)
{
    const char *p = md, *at;
    double v;
    int dec;
    while (next_token(&p, md, &v, &dec, &at))
        if (!ns_has(s, v, dec)) {
            snprintf(why, n, "report.md line %d: %.*s is not in results.json",
                     line_of(md, at), (int)(p - at), at);
            return -1;
        }
    return 0;
}

/* id appears as a whole name (not a prefix of a longer id). */
static bool names(const char *md, const char *id)
{
    size_t len = strlen(id);
    for (const char *p = strstr(md, id); p; p = strstr(p + 1, id))
        if ((p == md || !word_char(p[-1])) && !word_char(p[len]))
            return true;
    return false;
}

static int check_runs(const struct sj *res, const char *md, char *why, size_t n)
{
    if (!res || res->type != SJ_ARR || !res->child) {
        snprintf(why, n, "results.json is not a non-empty array");
        return -1;
    }
    for (const struct sj *r = res->child; r; r = r->next) {
        const char *s = sj_str(r, "scenario");
        if (!s || !sj_str(r, "transport") || !sj_str(r, "status")) {
            snprintf(why, n,
                     "results.json: a run lacks scenario, "
                     "transport or status");
            return -1;
        }
        if (!names(md, s)) {
            snprintf(why, n, "report.md does not name scenario %s", s);
            return -1;
        }
    }
    return 0;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long len = -1;
    if (f && fseek(f, 0, SEEK_END) == 0)
        len = ftell(f);
    if (len >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = malloc((size_t)len + 1)) != NULL)
        buf[fread(buf, 1, (size_t)len, f)] = '\0';
    if (f)
        fclose(f);
    return buf;
}

int mroce_sim_suite_check(const char *dir, char *why, size_t n)
{
    char path[1024], err[160];
    snprintf(path, sizeof(path), "%s/results.json", dir);
    struct sj *res = sj_parse_file(path, err, sizeof(err));
    snprintf(path, sizeof(path), "%s/report.md", dir);
    char *md = slurp(path);
    struct numset s = {0};
    int rc = -1;
    if (!res)
        snprintf(why, n, "results.json: %s", err);
    else if (!md)
        snprintf(why, n, "cannot read %s", path);
    else if (check_runs(res, md, why, n))
        rc = -1;
    else if (ns_collect(&s, res))
        snprintf(why, n, "out of memory");
    else {
        qsort(s.v, (size_t)s.n, sizeof(*s.v), cmp_double);
        rc = check_numbers(&s, md, why, n);
    }
    free(s.v);
    free(md);
    sj_free(res);
    return rc;
}
