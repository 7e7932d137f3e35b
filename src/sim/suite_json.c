/* The suite's JSON document model; see suite_json.h. */
#include "sim/suite_json.h"

#include <stdlib.h>
#include <string.h>

#define SJ_MAX_DEPTH 64

struct sj_in {
    const char *p;
    int depth;
    char *err;
    size_t n;
};

static char *sj_dup(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

struct sj *sj_new(enum sj_type type)
{
    struct sj *v = calloc(1, sizeof(*v));
    if (v)
        v->type = type;
    return v;
}

void sj_free(struct sj *v)
{
    while (v) {
        struct sj *next = v->next;
        sj_free(v->child);
        free(v->key);
        free(v->str);
        free(v);
        v = next;
    }
}

/* ---- Parser ---- */

static struct sj *sj_fail(struct sj_in *in, const char *why)
{
    if (in->err && !in->err[0])
        snprintf(in->err, in->n, "%s at '%.20s'", why, in->p);
    return NULL;
}

static void sj_ws(struct sj_in *in)
{
    while (*in->p == ' ' || *in->p == '\t' || *in->p == '\n' || *in->p == '\r')
        in->p++;
}

static int sj_escape(char c)
{
    switch (c) {
    case 'n':
        return '\n';
    case 't':
        return '\t';
    case 'r':
        return '\r';
    case 'b':
        return '\b';
    case 'f':
        return '\f';
    case '"':
    case '\\':
    case '/':
        return c;
    default:
        return -1;
    }
}

/* A string literal at in->p (past the quote on return); malloc'd. */
static char *sj_string(struct sj_in *in)
{
    const char *s = ++in->p;
    char *out = malloc(strlen(s) + 1), *o = out;
    while (out && *s && *s != '"') {
        if (*s != '\\') {
            *o++ = *s++;
            continue;
        }
        int c = sj_escape(s[1]);
        if (c < 0 && s[1] == 'u' && strlen(s) >= 6) {
            c = (int)strtol((char[5]){s[2], s[3], s[4], s[5], 0}, NULL, 16);
            s += 4;
        }
        if (c <= 0 || c > 127) {
            free(out);
            return NULL;
        }
        *o++ = (char)c;
        s += 2;
    }
    if (!out || *s != '"') {
        free(out);
        return NULL;
    }
    *o = '\0';
    in->p = s + 1;
    return out;
}

static struct sj *sj_value(struct sj_in *in);

static struct sj *sj_number(struct sj_in *in)
{
    char *end;
    double d = strtod(in->p, &end);
    if (end == in->p)
        return sj_fail(in, "bad value");
    struct sj *v = sj_new(SJ_NUM);
    if (v && !(v->str = sj_dup(in->p, (size_t)(end - in->p)))) {
        free(v);
        v = NULL;
    }
    if (v)
        v->num = d;
    in->p = end;
    return v;
}

static struct sj *sj_word(struct sj_in *in)
{
    static const struct {
        const char *w;
        enum sj_type t;
        bool b;
    } words[] = {{"null", SJ_NULL, false},
                 {"true", SJ_BOOL, true},
                 {"false", SJ_BOOL, false}};
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        size_t n = strlen(words[i].w);
        if (strncmp(in->p, words[i].w, n) == 0) {
            in->p += n;
            struct sj *v = sj_new(words[i].t);
            if (v)
                v->b = words[i].b;
            return v;
        }
    }
    return sj_number(in);
}

/* One member of an array or object (with its key) appended to c. */
static int sj_member(struct sj_in *in, struct sj *c)
{
    char *key = NULL;
    sj_ws(in);
    if (c->type == SJ_OBJ) {
        if (*in->p != '"' || !(key = sj_string(in))) {
            sj_fail(in, "expected a key");
            return -1;
        }
        sj_ws(in);
        if (*in->p++ != ':') {
            free(key);
            sj_fail(in, "expected ':'");
            return -1;
        }
    }
    struct sj *v = sj_value(in);
    if (!v) {
        free(key);
        return -1;
    }
    v->key = key;
    sj_add(c, NULL, v);
    return 0;
}

static struct sj *sj_container(struct sj_in *in, enum sj_type t, char close)
{
    struct sj *c = sj_new(t);
    if (!c || ++in->depth > SJ_MAX_DEPTH) {
        sj_free(c);
        return sj_fail(in, "too deep");
    }
    in->p++;
    sj_ws(in);
    if (*in->p == close) {
        in->p++;
        in->depth--;
        return c;
    }
    for (;;) {
        if (sj_member(in, c))
            break;
        sj_ws(in);
        char sep = *in->p++;
        if (sep == close) {
            in->depth--;
            return c;
        }
        if (sep != ',') {
            in->p--;
            sj_fail(in, "expected ',' or a close");
            break;
        }
    }
    sj_free(c);
    return NULL;
}

static struct sj *sj_value(struct sj_in *in)
{
    sj_ws(in);
    if (*in->p == '{')
        return sj_container(in, SJ_OBJ, '}');
    if (*in->p == '[')
        return sj_container(in, SJ_ARR, ']');
    if (*in->p == '"') {
        char *s = sj_string(in);
        struct sj *v = s ? sj_new(SJ_STR) : NULL;
        if (!v) {
            free(s);
            return sj_fail(in, "bad string");
        }
        v->str = s;
        return v;
    }
    return sj_word(in);
}

struct sj *sj_parse(const char *text, char *err, size_t n)
{
    struct sj_in in = {.p = text, .err = err, .n = n};
    if (err && n)
        err[0] = '\0';
    struct sj *v = sj_value(&in);
    sj_ws(&in);
    if (v && *in.p) {
        sj_free(v);
        return sj_fail(&in, "trailing text");
    }
    return v;
}

static char *sj_slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        len += fread(buf + len, 1, cap - len - 1, f);
        if (len < cap - 1)
            break;
        char *nb = realloc(buf, cap *= 2);
        if (!nb)
            free(buf);
        buf = nb;
    }
    if (buf)
        buf[len] = '\0';
    fclose(f);
    return buf;
}

struct sj *sj_parse_file(const char *path, char *err, size_t n)
{
    char *text = sj_slurp(path);
    if (!text) {
        if (err && n)
            snprintf(err, n, "cannot read %s", path);
        return NULL;
    }
    struct sj *v = sj_parse(text, err, n);
    free(text);
    return v;
}

/* ---- Lookups ---- */

struct sj *sj_get(const struct sj *obj, const char *key)
{
    if (!obj || obj->type != SJ_OBJ)
        return NULL;
    for (struct sj *m = obj->child; m; m = m->next)
        if (m->key && strcmp(m->key, key) == 0)
            return m;
    return NULL;
}

struct sj *sj_path(const struct sj *obj, const char *k1, const char *k2)
{
    return sj_get(sj_get(obj, k1), k2);
}

bool sj_has_num(const struct sj *obj, const char *key)
{
    const struct sj *v = sj_get(obj, key);
    return v && v->type == SJ_NUM;
}

double sj_num(const struct sj *obj, const char *key, double dflt)
{
    const struct sj *v = sj_get(obj, key);
    return v && v->type == SJ_NUM ? v->num : dflt;
}

const char *sj_str(const struct sj *obj, const char *key)
{
    const struct sj *v = sj_get(obj, key);
    return v && v->type == SJ_STR ? v->str : NULL;
}

int sj_len(const struct sj *arr)
{
    int n = 0;
    if (arr && (arr->type == SJ_ARR || arr->type == SJ_OBJ))
        for (const struct sj *m = arr->child; m; m = m->next)
            n++;
    return n;
}

const char *sj_fmt(const struct sj *v, int dec)
{
    static char bufs[32][48];
    static unsigned next;
    if (!v || v->type != SJ_NUM)
        return "—";
    char *b = bufs[next++ % 32];
    snprintf(b, sizeof(bufs[0]), "%.*f", dec, v->num);
    return b;
}

/* ---- Builders ---- */

struct sj *sj_add(struct sj *obj, const char *key, struct sj *v)
{
    if (!v)
        return NULL;
    if (key && !(v->key = sj_dup(key, strlen(key)))) {
        sj_free(v);
        return NULL;
    }
    if (obj->last)
        obj->last->next = v;
    else
        obj->child = v;
    obj->last = v;
    return v;
}

static struct sj *sj_num_new(double v)
{
    char buf[64];
    if (v != v || v > 1e300 || v < -1e300)
        return sj_new(SJ_NULL);
    if (v == (double)(long long)v && v < 9e15 && v > -9e15)
        snprintf(buf, sizeof(buf), "%lld", (long long)v);
    else
        snprintf(buf, sizeof(buf), "%.6f", v);
    struct sj *n = sj_new(SJ_NUM);
    if (n && !(n->str = sj_dup(buf, strlen(buf)))) {
        free(n);
        return NULL;
    }
    if (n)
        n->num = strtod(buf, NULL);
    return n;
}

struct sj *sj_add_num(struct sj *obj, const char *key, double v)
{
    return sj_add(obj, key, sj_num_new(v));
}

struct sj *sj_add_int(struct sj *obj, const char *key, long long v)
{
    return sj_add(obj, key, sj_num_new((double)v));
}

struct sj *sj_add_str(struct sj *obj, const char *key, const char *s)
{
    struct sj *v = sj_new(SJ_STR);
    if (v && !(v->str = sj_dup(s, strlen(s)))) {
        free(v);
        v = NULL;
    }
    return sj_add(obj, key, v);
}

struct sj *sj_add_bool(struct sj *obj, const char *key, bool b)
{
    struct sj *v = sj_new(SJ_BOOL);
    if (v)
        v->b = b;
    return sj_add(obj, key, v);
}

struct sj *sj_add_null(struct sj *obj, const char *key)
{
    return sj_add(obj, key, sj_new(SJ_NULL));
}

struct sj *sj_add_obj(struct sj *obj, const char *key)
{
    return sj_add(obj, key, sj_new(SJ_OBJ));
}

struct sj *sj_add_arr(struct sj *obj, const char *key)
{
    return sj_add(obj, key, sj_new(SJ_ARR));
}

struct sj *sj_set_num(struct sj *obj, const char *key, double v)
{
    struct sj *m = sj_get(obj, key), *n = sj_num_new(v);
    if (!m || !n)
        return n ? sj_add(obj, key, n) : NULL;
    free(m->str);
    m->type = n->type;
    m->str = n->str;
    m->num = n->num;
    free(n);
    return m;
}

struct sj *sj_set_str(struct sj *obj, const char *key, const char *s)
{
    struct sj *m = sj_get(obj, key);
    if (!m)
        return sj_add_str(obj, key, s);
    char *d = sj_dup(s, strlen(s));
    if (!d)
        return NULL;
    free(m->str);
    sj_free(m->child);
    m->child = m->last = NULL;
    m->type = SJ_STR;
    m->str = d;
    return m;
}

/* ---- Writer ---- */

static void sj_write_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if (*s == '\n')
            fputs("\\n", f);
        else if ((unsigned char)*s < 0x20)
            fprintf(f, "\\u%04x", (unsigned char)*s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

static bool sj_flat(const struct sj *v)
{
    for (const struct sj *m = v->child; m; m = m->next)
        if (m->type == SJ_ARR || m->type == SJ_OBJ)
            return false;
    return true;
}

static void sj_write_at(FILE *f, const struct sj *v, int ind);

static void sj_write_members(FILE *f, const struct sj *v, int ind)
{
    bool flat = sj_flat(v);
    for (const struct sj *m = v->child; m; m = m->next) {
        if (flat)
            fputs(m == v->child ? "" : " ", f);
        else
            fprintf(f, "\n%*s", ind + 2, "");
        if (m->key) {
            sj_write_str(f, m->key);
            fputs(": ", f);
        }
        sj_write_at(f, m, ind + 2);
        if (m->next)
            fputc(',', f);
    }
    if (!flat)
        fprintf(f, "\n%*s", ind, "");
}

static void sj_write_at(FILE *f, const struct sj *v, int ind)
{
    switch (v->type) {
    case SJ_NULL:
        fputs("null", f);
        break;
    case SJ_BOOL:
        fputs(v->b ? "true" : "false", f);
        break;
    case SJ_NUM:
        fputs(v->str, f);
        break;
    case SJ_STR:
        sj_write_str(f, v->str);
        break;
    case SJ_ARR:
    case SJ_OBJ:
        fputc(v->type == SJ_ARR ? '[' : '{', f);
        sj_write_members(f, v, ind);
        fputc(v->type == SJ_ARR ? ']' : '}', f);
        break;
    }
}

int sj_write(FILE *f, const struct sj *v)
{
    sj_write_at(f, v, 0);
    fputc('\n', f);
    return ferror(f) ? -1 : 0;
}

int sj_write_file(const char *path, const struct sj *v)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int rc = sj_write(f, v);
    if (fclose(f) != 0)
        rc = -1;
    return rc;
}
