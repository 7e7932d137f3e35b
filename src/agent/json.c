/* Replies, error codes and request field readers of the agent's control
 * protocol (docs/conformance.md, "Errors"). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"

json_t *agent_ok(void)
{
    return json_pack("{s:b}", "ok", 1);
}

json_t *agent_err(const char *code, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return json_pack("{s:b, s:s, s:s}", "ok", 0, "error", code, "message", msg);
}

const char *agent_err_code(int rc)
{
    switch (rc) {
    case MROCE_EINVAL:
        return "invalid";
    case MROCE_ENOMEM:
        return "nomem";
    case MROCE_EAGAIN:
        return "again";
    case MROCE_ENOENT:
        return "not_found";
    case MROCE_ESTATE:
        return "state";
    case MROCE_ERANGE:
        return "range";
    case MROCE_EACCES:
        return "access";
    case MROCE_EBUSY:
        return "busy";
    case MROCE_EPROTO:
        return "proto";
    default:
        return "internal";
    }
}

json_t *agent_err_rc(int rc, const char *what)
{
    return agent_err(agent_err_code(rc), "%s: %s", what, mroce_strerror(rc));
}

bool agent_get_int(json_t *req, const char *key, int64_t def, int64_t lo,
                   int64_t hi, int64_t *out)
{
    json_t *v = json_object_get(req, key);
    if (!v || json_is_null(v)) {
        *out = def;
        return true;
    }
    if (!json_is_integer(v))
        return false;
    int64_t x = (int64_t)json_integer_value(v);
    if (x < lo || x > hi)
        return false;
    *out = x;
    return true;
}

bool agent_get_u64(json_t *req, const char *key, uint64_t def, uint64_t *out)
{
    json_t *v = json_object_get(req, key);
    if (!v || json_is_null(v)) {
        *out = def;
        return true;
    }
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        *out = (uint64_t)json_integer_value(v);
        return true;
    }
    if (!json_is_string(v))
        return false;
    const char *s = json_string_value(v);
    char *end;
    *out = strtoull(s, &end, 0);
    return *s && !*end;
}

const char *agent_get_str(json_t *req, const char *key, const char *def)
{
    json_t *v = json_object_get(req, key);
    return json_is_string(v) ? json_string_value(v) : def;
}

char *agent_hex(const uint8_t *p, size_t n)
{
    static const char dig[] = "0123456789abcdef";
    char *s = malloc(2 * n + 1);
    if (!s)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        s[2 * i] = dig[p[i] >> 4];
        s[2 * i + 1] = dig[p[i] & 15];
    }
    s[2 * n] = 0;
    return s;
}

static int agent_nibble(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

long agent_unhex(const char *s, uint8_t *out, size_t cap)
{
    size_t n = strlen(s);
    if (n % 2 || n / 2 > cap)
        return -1;
    for (size_t i = 0; i < n / 2; i++) {
        int hi = agent_nibble(s[2 * i]), lo = agent_nibble(s[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return (long)(n / 2);
}
