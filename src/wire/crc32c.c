/* CRC32C (R-CRC-2). Three implementations, picked from what the CPU has
 * (by mroce_crc32c's first call, crc32c.h; by mroce_crc32c_impl per
 * call):
 * - AVX2 + VPCLMULQDQ (x86-64): buffers of 256 bytes and more, in blocks
 *   folded half with carry-less multiplications and half with the CRC32
 *   instruction at the same time; ~28 GB/s on a 4 KiB packet here, 1.8x
 *   the three-lane code and 1.5x ISA-L's crc32_iscsi (tests/unit/
 *   crc32c_test.c prints the rates).
 * - SSE4.2 (x86-64): the CRC32 instruction in three lanes, ~10x a table.
 * - elsewhere a byte-wise table (reflected polynomial 0x82F63B78).
 * The tables and constants are constants, so every path is safe to call
 * from any thread without initialisation. */
#include "wire/crc32c.h"

#include <string.h>

#define CRC_FOLD_MIN 256 /* shorter buffers: the three-lane code */

static const uint32_t crc_tab[256] = {
    0x00000000u, 0xF26B8303u, 0xE13B70F7u, 0x1350F3F4u, 0xC79A971Fu,
    0x35F1141Cu, 0x26A1E7E8u, 0xD4CA64EBu, 0x8AD958CFu, 0x78B2DBCCu,
    0x6BE22838u, 0x9989AB3Bu, 0x4D43CFD0u, 0xBF284CD3u, 0xAC78BF27u,
    0x5E133C24u, 0x105EC76Fu, 0xE235446Cu, 0xF165B798u, 0x030E349Bu,
    0xD7C45070u, 0x25AFD373u, 0x36FF2087u, 0xC494A384u, 0x9A879FA0u,
    0x68EC1CA3u, 0x7BBCEF57u, 0x89D76C54u, 0x5D1D08BFu, 0xAF768BBCu,
    0xBC267848u, 0x4E4DFB4Bu, 0x20BD8EDEu, 0xD2D60DDDu, 0xC186FE29u,
    0x33ED7D2Au, 0xE72719C1u, 0x154C9AC2u, 0x061C6936u, 0xF477EA35u,
    0xAA64D611u, 0x580F5512u, 0x4B5FA6E6u, 0xB93425E5u, 0x6DFE410Eu,
    0x9F95C20Du, 0x8CC531F9u, 0x7EAEB2FAu, 0x30E349B1u, 0xC288CAB2u,
    0xD1D83946u, 0x23B3BA45u, 0xF779DEAEu, 0x05125DADu, 0x1642AE59u,
    0xE4292D5Au, 0xBA3A117Eu, 0x4851927Du, 0x5B016189u, 0xA96AE28Au,
    0x7DA08661u, 0x8FCB0562u, 0x9C9BF696u, 0x6EF07595u, 0x417B1DBCu,
    0xB3109EBFu, 0xA0406D4Bu, 0x522BEE48u, 0x86E18AA3u, 0x748A09A0u,
    0x67DAFA54u, 0x95B17957u, 0xCBA24573u, 0x39C9C670u, 0x2A993584u,
    0xD8F2B687u, 0x0C38D26Cu, 0xFE53516Fu, 0xED03A29Bu, 0x1F682198u,
    0x5125DAD3u, 0xA34E59D0u, 0xB01EAA24u, 0x42752927u, 0x96BF4DCCu,
    0x64D4CECFu, 0x77843D3Bu, 0x85EFBE38u, 0xDBFC821Cu, 0x2997011Fu,
    0x3AC7F2EBu, 0xC8AC71E8u, 0x1C661503u, 0xEE0D9600u, 0xFD5D65F4u,
    0x0F36E6F7u, 0x61C69362u, 0x93AD1061u, 0x80FDE395u, 0x72966096u,
    0xA65C047Du, 0x5437877Eu, 0x4767748Au, 0xB50CF789u, 0xEB1FCBADu,
    0x197448AEu, 0x0A24BB5Au, 0xF84F3859u, 0x2C855CB2u, 0xDEEEDFB1u,
    0xCDBE2C45u, 0x3FD5AF46u, 0x7198540Du, 0x83F3D70Eu, 0x90A324FAu,
    0x62C8A7F9u, 0xB602C312u, 0x44694011u, 0x5739B3E5u, 0xA55230E6u,
    0xFB410CC2u, 0x092A8FC1u, 0x1A7A7C35u, 0xE811FF36u, 0x3CDB9BDDu,
    0xCEB018DEu, 0xDDE0EB2Au, 0x2F8B6829u, 0x82F63B78u, 0x709DB87Bu,
    0x63CD4B8Fu, 0x91A6C88Cu, 0x456CAC67u, 0xB7072F64u, 0xA457DC90u,
    0x563C5F93u, 0x082F63B7u, 0xFA44E0B4u, 0xE9141340u, 0x1B7F9043u,
    0xCFB5F4A8u, 0x3DDE77ABu, 0x2E8E845Fu, 0xDCE5075Cu, 0x92A8FC17u,
    0x60C37F14u, 0x73938CE0u, 0x81F80FE3u, 0x55326B08u, 0xA759E80Bu,
    0xB4091BFFu, 0x466298FCu, 0x1871A4D8u, 0xEA1A27DBu, 0xF94AD42Fu,
    0x0B21572Cu, 0xDFEB33C7u, 0x2D80B0C4u, 0x3ED04330u, 0xCCBBC033u,
    0xA24BB5A6u, 0x502036A5u, 0x4370C551u, 0xB11B4652u, 0x65D122B9u,
    0x97BAA1BAu, 0x84EA524Eu, 0x7681D14Du, 0x2892ED69u, 0xDAF96E6Au,
    0xC9A99D9Eu, 0x3BC21E9Du, 0xEF087A76u, 0x1D63F975u, 0x0E330A81u,
    0xFC588982u, 0xB21572C9u, 0x407EF1CAu, 0x532E023Eu, 0xA145813Du,
    0x758FE5D6u, 0x87E466D5u, 0x94B49521u, 0x66DF1622u, 0x38CC2A06u,
    0xCAA7A905u, 0xD9F75AF1u, 0x2B9CD9F2u, 0xFF56BD19u, 0x0D3D3E1Au,
    0x1E6DCDEEu, 0xEC064EEDu, 0xC38D26C4u, 0x31E6A5C7u, 0x22B65633u,
    0xD0DDD530u, 0x0417B1DBu, 0xF67C32D8u, 0xE52CC12Cu, 0x1747422Fu,
    0x49547E0Bu, 0xBB3FFD08u, 0xA86F0EFCu, 0x5A048DFFu, 0x8ECEE914u,
    0x7CA56A17u, 0x6FF599E3u, 0x9D9E1AE0u, 0xD3D3E1ABu, 0x21B862A8u,
    0x32E8915Cu, 0xC083125Fu, 0x144976B4u, 0xE622F5B7u, 0xF5720643u,
    0x07198540u, 0x590AB964u, 0xAB613A67u, 0xB831C993u, 0x4A5A4A90u,
    0x9E902E7Bu, 0x6CFBAD78u, 0x7FAB5E8Cu, 0x8DC0DD8Fu, 0xE330A81Au,
    0x115B2B19u, 0x020BD8EDu, 0xF0605BEEu, 0x24AA3F05u, 0xD6C1BC06u,
    0xC5914FF2u, 0x37FACCF1u, 0x69E9F0D5u, 0x9B8273D6u, 0x88D28022u,
    0x7AB90321u, 0xAE7367CAu, 0x5C18E4C9u, 0x4F48173Du, 0xBD23943Eu,
    0xF36E6F75u, 0x0105EC76u, 0x12551F82u, 0xE03E9C81u, 0x34F4F86Au,
    0xC69F7B69u, 0xD5CF889Du, 0x27A40B9Eu, 0x79B737BAu, 0x8BDCB4B9u,
    0x988C474Du, 0x6AE7C44Eu, 0xBE2DA0A5u, 0x4C4623A6u, 0x5F16D052u,
    0xAD7D5351u,
};

static uint32_t crc_soft(uint32_t c, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    while (len--)
        c = (c >> 8) ^ crc_tab[(c ^ *p++) & 0xFF];
    return c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/* The crc32 instruction has a latency of 3 cycles and a throughput of 1,
 * so one chain runs at a third of the speed the core can give. Long
 * buffers are cut into three equal lanes computed together and joined:
 * the register after A||B||C is shift(A, 2n) ^ shift(B, n) ^ C, where
 * shift(r, n) multiplies r by x^(8n) modulo the polynomial. */
#define CRC_POLY 0x82F63B78u

static uint32_t crc_mulmod(uint32_t a, uint32_t b)
{
    uint32_t m = 1u << 31, p = 0;
    for (;;) {
        if (a & m) {
            p ^= b;
            if (!(a & (m - 1)))
                return p;
        }
        m >>= 1;
        b = (b >> 1) ^ (CRC_POLY & (0u - (b & 1u)));
    }
}

/* Lane length in bytes and x^(8n), x^(16n) mod P (reflected). */
static const struct {
    size_t len;
    uint32_t k1, k2;
} crc_lanes[] = {
    {1360, 0xD6A79573u, 0x4672C7F2u}, /* 3 x 1360 = a 4 KiB packet */
    {128, 0xB8FDB1E7u, 0x88E56F72u},
};

__attribute__((target("sse4.2"))) static uint64_t crc_load64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

__attribute__((target("sse4.2"))) static uint32_t
crc_hw_lanes(uint32_t c, const uint8_t *p, size_t n, uint32_t k1, uint32_t k2)
{
    uint64_t a = c, b = 0, d = 0;
    for (size_t i = 0; i < n; i += 8) {
        a = __builtin_ia32_crc32di(a, crc_load64(p + i));
        b = __builtin_ia32_crc32di(b, crc_load64(p + n + i));
        d = __builtin_ia32_crc32di(d, crc_load64(p + 2 * n + i));
    }
    return crc_mulmod(k2, (uint32_t)a) ^ crc_mulmod(k1, (uint32_t)b) ^
           (uint32_t)d;
}

__attribute__((target("sse4.2"))) static uint32_t
crc_hw(uint32_t c, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    for (size_t l = 0; l < sizeof(crc_lanes) / sizeof(crc_lanes[0]); l++) {
        size_t n = crc_lanes[l].len;
        while (len >= 3 * n) {
            c = crc_hw_lanes(c, p, n, crc_lanes[l].k1, crc_lanes[l].k2);
            p += 3 * n;
            len -= 3 * n;
        }
    }
    uint64_t c64 = c;
    while (len >= 8) {
        c64 = __builtin_ia32_crc32di(c64, crc_load64(p));
        p += 8;
        len -= 8;
    }
    c = (uint32_t)c64;
    while (len--)
        c = __builtin_ia32_crc32qi(c, *p++);
    return c;
}

static int crc_have_hw(void)
{
    return __builtin_cpu_supports("sse4.2");
}

/* ---- folding with carry-less multiplication ----
 * A 16-byte lane read little-endian holds 128 message bits, the first
 * byte's bit 0 the highest power. Moving a lane D bits further down the
 * message multiplies it by x^D: its low 64 bits (higher powers) times
 * x^(D+64) and its high 64 bits times x^D, each mod P. A constant of the
 * pair is x^32 * (x^(D+32) or x^(D-32) mod P), bit-reflected and shifted
 * left once, so the 95-bit product lands with the lane's own bit order.
 * The last lane's remainder, times x^32 mod P, is what the CRC32
 * instruction gives when it reads the lane from a zero register; the
 * same instruction shifts a 32-bit register by n bytes after a multiply
 * by bitrev(x^(8n-32) mod P) << 1. tests/unit/crc32c_test.c checks every
 * path against a bit-at-a-time reference on lengths that use each
 * constant.
 *
 * The multiplier and the CRC32 instruction are separate units (each
 * 6-7 bytes a cycle alone here), so a block of 256n bytes folds its first
 * half (eight lanes, 128 bytes a step) while four CRC32 chains run
 * through the second half, and the five registers are joined. */

/* Vector types for the compiler's builtins (no intrinsics header: the
 * codecs include libc headers only, scripts/check-sans-io.sh). */
typedef long long crc_v2 __attribute__((vector_size(16)));
typedef long long crc_v4 __attribute__((vector_size(32)));

#define CRC_FOLD_ATTR __attribute__((target("avx2,vpclmulqdq,pclmul,sse4.2")))
#ifdef __clang__
#define CRC_CLMUL256 __builtin_ia32_pclmulqdq256
#else
#define CRC_CLMUL256 __builtin_ia32_vpclmulqdq_v4di
#endif

/* Per fold distance: {k for the low 64 bits, k for the high 64 bits}. */
#define CRC_K1024 0x6992CEA2ll, 0x0D3B6092ll  /* 128 bytes: the loop */
#define CRC_K256 0x1384AA63All, 0x0BA4FC28Ell /* 32 bytes: ymm to ymm */
#define CRC_K128 0x0F20C0DFEll, 0x14CD00BD6ll /* 16 bytes: lane to lane */

/* Blocks of 256n bytes and the shift of a register by one CRC32 chain
 * (32n bytes). */
static const struct {
    size_t n;
    uint64_t k;
} crc_blocks[] = {
    {16, 0xDD7E3B0Cull}, /* 4 KiB: a packet of MTU 4096 */
    {4, 0x0D3B6092ull},  /* 1 KiB */
};

CRC_FOLD_ATTR static crc_v4 crc_fold256(crc_v4 v, crc_v4 k, crc_v4 next)
{
    return CRC_CLMUL256(v, k, 0x00) ^ CRC_CLMUL256(v, k, 0x11) ^ next;
}

CRC_FOLD_ATTR static crc_v2 crc_fold128(crc_v2 v, crc_v2 k, crc_v2 next)
{
    return __builtin_ia32_pclmulqdq128(v, k, 0x00) ^
           __builtin_ia32_pclmulqdq128(v, k, 0x11) ^ next;
}

/* The register of a 16-byte lane: the CRC32 instruction from zero. */
CRC_FOLD_ATTR static uint32_t crc_lane_reg(crc_v2 x)
{
    uint64_t r = __builtin_ia32_crc32di(0, (uint64_t)x[0]);
    return (uint32_t)__builtin_ia32_crc32di(r, (uint64_t)x[1]);
}

/* r times x^(8n) mod P, k = bitrev(x^(8n-32) mod P) << 1. */
CRC_FOLD_ATTR static uint32_t crc_shift(uint32_t r, uint64_t k)
{
    crc_v2 m = __builtin_ia32_pclmulqdq128((crc_v2){(long long)r, 0},
                                           (crc_v2){(long long)k, 0}, 0x00);
    return (uint32_t)__builtin_ia32_crc32di(0, (uint64_t)m[0]);
}

/* Eight 16-byte lanes in four registers, named so the compiler keeps
 * them in registers (an array of them lands on the stack). */
struct crc_y {
    crc_v4 a, b, c, d;
};

/* The eight lanes down to one, then through the CRC32 instruction. */
CRC_FOLD_ATTR static uint32_t crc_reduce(struct crc_y y)
{
    const crc_v4 k256 = {CRC_K256, CRC_K256};
    y.b = crc_fold256(y.a, k256, y.b);
    y.c = crc_fold256(y.b, k256, y.c);
    y.d = crc_fold256(y.c, k256, y.d);
    return crc_lane_reg(crc_fold128((crc_v2){y.d[0], y.d[1]},
                                    (crc_v2){CRC_K128},
                                    (crc_v2){y.d[2], y.d[3]}));
}

CRC_FOLD_ATTR static crc_v4 crc_ld(const uint8_t *p)
{
    crc_v4 v;
    memcpy(&v, p, sizeof(v));
    return v;
}

/* The first 128 bytes; register c enters as the message's first 32
 * bits. */
CRC_FOLD_ATTR static struct crc_y crc_load(uint32_t c, const uint8_t *p)
{
    struct crc_y y = {crc_ld(p), crc_ld(p + 32), crc_ld(p + 64),
                      crc_ld(p + 96)};
    y.a ^= (crc_v4){(long long)c, 0, 0, 0};
    return y;
}

/* The eight lanes 128 bytes further, onto the 128 bytes at p. */
CRC_FOLD_ATTR static struct crc_y crc_step(struct crc_y y, const uint8_t *p)
{
    const crc_v4 k = {CRC_K1024, CRC_K1024};
    y.a = crc_fold256(y.a, k, crc_ld(p));
    y.b = crc_fold256(y.b, k, crc_ld(p + 32));
    y.c = crc_fold256(y.c, k, crc_ld(p + 64));
    y.d = crc_fold256(y.d, k, crc_ld(p + 96));
    return y;
}

/* One block of 256n bytes from register c: 128n bytes folded and, in
 * the same loop, four CRC32 chains of 32n bytes; k shifts by 32n. */
CRC_FOLD_ATTR static uint32_t crc_block(uint32_t c, const uint8_t *p, size_t n,
                                        uint64_t k)
{
    const uint8_t *q = p + 128 * n;
    size_t lane = 32 * n;
    uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    struct crc_y y = crc_load(c, p);
    for (size_t i = 0; i < n; i++, q += 32) {
        if (i)
            y = crc_step(y, p + 128 * i);
        for (size_t w = 0; w < 32; w += 8) {
            a0 = __builtin_ia32_crc32di(a0, crc_load64(q + w));
            a1 = __builtin_ia32_crc32di(a1, crc_load64(q + lane + w));
            a2 = __builtin_ia32_crc32di(a2, crc_load64(q + 2 * lane + w));
            a3 = __builtin_ia32_crc32di(a3, crc_load64(q + 3 * lane + w));
        }
    }
    uint32_t r = crc_reduce(y);
    r = crc_shift(r, k) ^ (uint32_t)a0;
    r = crc_shift(r, k) ^ (uint32_t)a1;
    r = crc_shift(r, k) ^ (uint32_t)a2;
    return crc_shift(r, k) ^ (uint32_t)a3;
}

/* Whole 128-byte steps folded, from register c; the rest through the
 * CRC32 instruction (len >= CRC_FOLD_MIN). */
CRC_FOLD_ATTR static uint32_t crc_fold_plain(uint32_t c, const uint8_t *p,
                                             size_t len)
{
    struct crc_y y = crc_load(c, p);
    size_t at = 128;
    for (; len - at >= 128; at += 128)
        y = crc_step(y, p + at);
    return crc_hw(crc_reduce(y), p + at, len - at);
}

CRC_FOLD_ATTR static uint32_t crc_fold(uint32_t c, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    for (size_t b = 0; b < sizeof(crc_blocks) / sizeof(crc_blocks[0]); b++) {
        size_t n = crc_blocks[b].n;
        for (; len >= 256 * n; p += 256 * n, len -= 256 * n)
            c = crc_block(c, p, n, crc_blocks[b].k);
    }
    return len >= CRC_FOLD_MIN ? crc_fold_plain(c, p, len) : crc_hw(c, p, len);
}

static int crc_have_fold(void)
{
    return __builtin_cpu_supports("avx2") &&
           __builtin_cpu_supports("vpclmulqdq") &&
           __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.2");
}
#else
static uint32_t crc_hw(uint32_t c, const void *buf, size_t len)
{
    return crc_soft(c, buf, len);
}

static int crc_have_hw(void)
{
    return 0;
}

static uint32_t crc_fold(uint32_t c, const void *buf, size_t len)
{
    return crc_soft(c, buf, len);
}

static int crc_have_fold(void)
{
    return 0;
}
#endif

/* The best implementation at most `want` that this CPU has. */
static int crc_pick(int want)
{
    if (want >= MROCE_CRC32C_FOLD && crc_have_fold())
        return MROCE_CRC32C_FOLD;
    if (want >= MROCE_CRC32C_SSE42 && crc_have_hw())
        return MROCE_CRC32C_SSE42;
    return MROCE_CRC32C_TABLE;
}

uint32_t mroce_crc32c_impl(int impl, uint32_t crc, const void *buf, size_t len,
                           int *ran)
{
    int i = crc_pick(impl);
    if (ran)
        *ran = i;
    if (i == MROCE_CRC32C_FOLD && len >= CRC_FOLD_MIN)
        return ~crc_fold(~crc, buf, len);
    if (i >= MROCE_CRC32C_SSE42)
        return ~crc_hw(~crc, buf, len);
    return ~crc_soft(~crc, buf, len);
}

mroce_crc32c_fn *mroce_crc32c_best;

/* The folding code takes short buffers to the CRC32 instruction itself
 * (crc_fold). */
mroce_crc32c_fn *mroce_crc32c_pick(void)
{
    static mroce_crc32c_fn *const fn[] = {
        [MROCE_CRC32C_TABLE] = crc_soft,
        [MROCE_CRC32C_SSE42] = crc_hw,
        [MROCE_CRC32C_FOLD] = crc_fold,
    };
    mroce_crc32c_fn *f = fn[crc_pick(MROCE_CRC32C_FOLD)];
    __atomic_store_n(&mroce_crc32c_best, f, __ATOMIC_RELAXED);
    return f;
}

#define CRC_LINE 64 /* cache line */

uint32_t mroce_crc32c_cold(uint32_t crc, const void *buf, size_t len)
{
    const volatile uint8_t *v = buf;
    for (size_t i = 0; i < len; i += CRC_LINE)
        (void)v[i];
    if (len)
        (void)v[len - 1];
    return mroce_crc32c(crc, buf, len);
}
