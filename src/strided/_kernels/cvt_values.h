/* Element values for strided's conversion kernels (convert.h and the headers it includes): the
 * element types and their sizes, what the CPU offers them (common.h's one detection), unaligned
 * loads and stores, bit-exact float16/bfloat16, and float -> integer truncation, saturated with
 * NaN -> 0. The semantics of every conversion are in convert.h's opening comment. */
#ifndef STRIDED_KERNELS_CVT_VALUES_H
#define STRIDED_KERNELS_CVT_VALUES_H



#include <math.h>

#include "common.h"   /* ST_HAVE_SSE2, ST_X86_GNU, ST_INLINE, st_idx, st_cpu_init */

#if ST_X86_GNU
#include <immintrin.h>
#endif

#include "types.h"   /* the element types' codes and sizes */

/* What the CPU has: common.h's one detection, run when _convert is imported (this module's
 * own copy of its statics); the SIMD level a call may use still comes from _copy.simd_level. */
#define st_cvt_has_avx2 (st_simd_found == 2)
#define st_cvt_has_f16c st_has_f16c

static int st_cvt_init(void)
{
    st_cpu_init();
    return st_cvt_has_avx2 + st_cvt_has_f16c;
}

/* ---- unaligned loads and stores ------------------------------------------------------------ */
#define ST_DEF_IO(NAME, T)                                                                    \
    static inline T st_ld_##NAME(const char *p) { T v; memcpy(&v, p, sizeof v); return v; }   \
    static inline void st_st_##NAME(char *p, T v) { memcpy(p, &v, sizeof v); }
ST_DEF_IO(i8, int8_t)
ST_DEF_IO(i16, int16_t)
ST_DEF_IO(i32, int32_t)
ST_DEF_IO(i64, int64_t)
ST_DEF_IO(u8, uint8_t)
ST_DEF_IO(u16, uint16_t)
ST_DEF_IO(u32, uint32_t)
ST_DEF_IO(u64, uint64_t)
ST_DEF_IO(f32, float)
ST_DEF_IO(f64, double)

static inline uint32_t st_f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float st_bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint64_t st_f64_bits(double f) { uint64_t u; memcpy(&u, &f, 8); return u; }

/* ---- float16 and bfloat16, bit exact ------------------------------------------------------- */

/* Round `m >> shift` to nearest, ties to even (shift >= 1). */
#define ST_RNE_SHIFT(m, shift, one)                                                           \
    (((m) >> (shift)) + ((((m) & (((one) << (shift)) - 1)) > ((one) << ((shift) - 1)) ||       \
                          (((m) & (((one) << (shift)) - 1)) == ((one) << ((shift) - 1)) &&    \
                           (((m) >> (shift)) & 1)))                                            \
                             ? 1 : 0))

/* float32 -> float16 bits, rounding to nearest even (subnormals, overflow to inf); a NaN stays
 * a NaN (its top payload bits kept, quiet bit set when they are all zero). */
static inline uint16_t st_f32_to_f16(float value)
{
    uint32_t f = st_f32_bits(value);
    uint16_t sign = (uint16_t)((f >> 16) & 0x8000u);
    f &= 0x7fffffffu;
    if (f >= 0x7f800000u) {
        uint16_t h = 0x7c00u;
        if (f > 0x7f800000u) {
            h |= (uint16_t)((f >> 13) & 0x3ffu);
            if (!(h & 0x3ffu)) h |= 0x200u;
        }
        return sign | h;
    }
    if (f >= 0x477ff000u) return sign | 0x7c00u;        /* >= 65520: rounds to inf */
    if (f < 0x38800000u) {                              /* below 2^-14: subnormal or zero */
        uint32_t e = f >> 23, m;
        if (f < 0x33000000u) return sign;              /* below 2^-25: rounds to 0 */
        m = (f & 0x7fffffu) | 0x800000u;
        return sign | (uint16_t)ST_RNE_SHIFT(m, 126u - e, 1u);
    }
    return sign | (uint16_t)ST_RNE_SHIFT(f - 0x38000000u, 13u, 1u);
}

/* float64 -> float16 bits, rounded once (as numpy does). */
static inline uint16_t st_f64_to_f16(double value)
{
    uint64_t f = st_f64_bits(value);
    uint16_t sign = (uint16_t)((f >> 48) & 0x8000u);
    f &= 0x7fffffffffffffffull;
    if (f >= 0x7ff0000000000000ull) {
        uint16_t h = 0x7c00u;
        if (f > 0x7ff0000000000000ull) {
            h |= (uint16_t)((f >> 42) & 0x3ffu);
            if (!(h & 0x3ffu)) h |= 0x200u;
        }
        return sign | h;
    }
    if (f >= 0x40effe0000000000ull) return sign | 0x7c00u;         /* >= 65520 */
    if (f < 0x3f10000000000000ull) {                                /* below 2^-14 */
        uint64_t e = f >> 52, m;
        if (f < 0x3e60000000000000ull) return sign;                /* below 2^-25 */
        m = (f & 0xfffffffffffffull) | 0x10000000000000ull;
        return sign | (uint16_t)ST_RNE_SHIFT(m, 1051u - e, 1ull);
    }
    return sign | (uint16_t)ST_RNE_SHIFT(f - (1008ull << 52), 42u, 1ull);
}

static inline float st_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0) {   /* zero or subnormal: m * 2^-24, exact in float32 */
        float v = (float)m * 5.9604644775390625e-08f;
        return st_bits_f32(st_f32_bits(v) | sign);
    }
    if (e == 31) return st_bits_f32(sign | 0x7f800000u | (m << 13));
    return st_bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}

/* float32 -> bfloat16 bits as torch rounds: to nearest even; every NaN becomes 0x7fc0. */
static inline uint16_t st_f32_to_bf16(float value)
{
    uint32_t u = st_f32_bits(value);
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0u;
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static inline float st_bf16_to_f32(uint16_t b) { return st_bits_f32((uint32_t)b << 16); }

/* ---- float -> integer: truncated or rounded, saturated, NaN -> 0 ----------------------------- */
/* The bounds are exact doubles: 2^(bits-1) and 2^bits (the maxima 2^63 - 1 and 2^64 - 1 are
 * not). A signed type saturates at or above 2^(bits-1) and at or below -2^(bits-1) - 1 (for
 * 64 bits that bound rounds to -2^63 itself, whose truncation is the minimum anyway); an
 * unsigned one at or above 2^bits, and at or below -1 (-1 < d < 0 truncates to 0). */
#define ST_DEF_TRUNC_SIGNED(NAME, T, BITS, MIN, MAX)                                          \
    static inline T st_trunc_##NAME(double d)                                                 \
    {                                                                                         \
        if (d != d) return 0;                                                                 \
        if (d >= 0x1p##BITS) return MAX;                                                      \
        if (d <= -0x1p##BITS - 1.0) return MIN;                                               \
        return (T)(int64_t)d;                                                                 \
    }
#define ST_DEF_TRUNC_UNSIGNED(NAME, T, BITS, MAX)                                             \
    static inline T st_trunc_##NAME(double d)                                                 \
    {                                                                                         \
        if (d != d || d <= -1.0) return 0;                                                    \
        if (d >= 0x1p##BITS) return MAX;                                                      \
        return d < 0 ? 0 : (T)(uint64_t)d;                                                    \
    }
ST_DEF_TRUNC_SIGNED(i8, int8_t, 7, INT8_MIN, INT8_MAX)
ST_DEF_TRUNC_SIGNED(i16, int16_t, 15, INT16_MIN, INT16_MAX)
ST_DEF_TRUNC_SIGNED(i32, int32_t, 31, INT32_MIN, INT32_MAX)
ST_DEF_TRUNC_SIGNED(i64, int64_t, 63, INT64_MIN, INT64_MAX)
ST_DEF_TRUNC_UNSIGNED(u8, uint8_t, 8, UINT8_MAX)
ST_DEF_TRUNC_UNSIGNED(u16, uint16_t, 16, UINT16_MAX)
ST_DEF_TRUNC_UNSIGNED(u32, uint32_t, 32, UINT32_MAX)
ST_DEF_TRUNC_UNSIGNED(u64, uint64_t, 64, UINT64_MAX)

#endif /* STRIDED_KERNELS_CVT_VALUES_H */
