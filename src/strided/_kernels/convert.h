/* Conversion kernels of strided: one row of elements read as one dtype, written as another,
 * optionally through an affine step t = x * scale + shift (DESIGN.md §1 "Conversion").
 *
 * The planner in _convert.pyx reduces a conversion to rows (and, for transposes, to tiles it
 * stages in cache and hands to the copy engine's transpose kernels); this header only converts
 * a row:
 *
 *     dst[i * ds] = convert(src[i * ss])                       (plain cast)
 *     dst[i * ds] = store(load(src[i * ss]) * scale[i * ps] + shift[i * ps])   (affine)
 *
 * element strides, any sign. The affine step is computed in the compute type CT (float32 or
 * float64: numpy's result_type(src, float32)) with two roundings: this file is compiled with
 * -ffp-contract=off, so no multiply-add is ever fused. A missing scale is 1 and a missing
 * shift is -0.0, which give bit for bit the value of not applying them (x * 1 == x, and
 * y + (-0.0) == y for every y, -0.0 included).
 *
 * Two paths:
 *   - fused rows: both sides unit-stride, a pair the pipelines use (u8/i8 -> f32 affine,
 *     f32 -> u8/i8 affine, f32 <-> f16, f32 <-> bf16), written so that the compiler
 *     vectorises them, compiled twice (baseline and AVX2 + F16C) and chosen at run time;
 *   - every other pair and stride: a chunk of the row is loaded into a small buffer of a wide
 *     type (int64, uint64, double, complex double; or CT), then stored from it. Each element
 *     is converted once from its exact wide value, so the result is the single rounding numpy
 *     gives (bfloat16 excepted: it rounds from float32, as torch does).
 *
 * Rounding and range (numpy's astype where numpy defines the value):
 *   int -> int wraps modulo 2^bits; float -> int truncates toward zero and, where numpy's
 *   result is undefined, saturates to the type's range with NaN -> 0; affine results stored
 *   to an integer type round half to even, saturate, NaN -> 0; float -> float rounds to
 *   nearest even; anything -> bool is x != 0 (NaN -> true).
 */
#ifndef STRIDED_KERNELS_CONVERT_H
#define STRIDED_KERNELS_CONVERT_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__SSE2__) || defined(_M_X64)
#include <emmintrin.h>
#define ST_CVT_SSE2 1
#else
#define ST_CVT_SSE2 0
#endif

#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>
#define ST_CVT_X86_GNU 1
#else
#define ST_CVT_X86_GNU 0
#endif

typedef ptrdiff_t st_cidx;

#if defined(__GNUC__) || defined(__clang__)
#define ST_CVT_INLINE static inline __attribute__((always_inline))
#else
#define ST_CVT_INLINE static __forceinline
#endif

/* The element types, in the order of _convert.pyx's TYPE_NAMES. */
enum {
    ST_BOOL, ST_I8, ST_I16, ST_I32, ST_I64, ST_U8, ST_U16, ST_U32, ST_U64,
    ST_F16, ST_BF16, ST_F32, ST_F64, ST_C64, ST_C128, ST_NTYPES
};

/* How a row converts: a plain cast, or the affine step in float32 / float64. */
enum { ST_CVT_PLAIN = 0, ST_CVT_AFF32 = 1, ST_CVT_AFF64 = 2 };

static const int st_type_size[ST_NTYPES] = {1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 2, 4, 8, 8, 16};

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

/* ---- the generic path: a chunk through a wide buffer ----------------------------------------- */
enum { ST_CHUNK = 128 };

typedef union {
    int64_t i[ST_CHUNK];      /* bool, signed integers */
    uint64_t u[ST_CHUNK];     /* unsigned integers */
    double d[ST_CHUNK];       /* real floats (exact), or the float64 compute type */
    float f[ST_CHUNK];        /* the float32 compute type */
    double c[2 * ST_CHUNK];   /* complex: (real, imag) pairs */
} st_wide;

/* The wide kind a type is loaded as by a plain cast: 'i', 'u', 'd' or 'c'. */
static inline char st_kind(int t)
{
    if (t == ST_BOOL || (t >= ST_I8 && t <= ST_I64)) return 'i';
    if (t >= ST_U8 && t <= ST_U64) return 'u';
    if (t >= ST_F16 && t <= ST_F64) return 'd';
    return 'c';
}

#define ST_FOR(n) for (st_cidx i = 0; i < (n); i++)

static void st_load_plain(int t, const char *s, st_cidx ss, st_cidx n, st_wide *w)
{
    const st_cidx b = ss * st_type_size[t];
    switch (t) {
    case ST_BOOL: ST_FOR(n) w->i[i] = st_ld_u8(s + i * b) != 0; break;
    case ST_I8: ST_FOR(n) w->i[i] = st_ld_i8(s + i * b); break;
    case ST_I16: ST_FOR(n) w->i[i] = st_ld_i16(s + i * b); break;
    case ST_I32: ST_FOR(n) w->i[i] = st_ld_i32(s + i * b); break;
    case ST_I64: ST_FOR(n) w->i[i] = st_ld_i64(s + i * b); break;
    case ST_U8: ST_FOR(n) w->u[i] = st_ld_u8(s + i * b); break;
    case ST_U16: ST_FOR(n) w->u[i] = st_ld_u16(s + i * b); break;
    case ST_U32: ST_FOR(n) w->u[i] = st_ld_u32(s + i * b); break;
    case ST_U64: ST_FOR(n) w->u[i] = st_ld_u64(s + i * b); break;
    case ST_F16: ST_FOR(n) w->d[i] = st_f16_to_f32(st_ld_u16(s + i * b)); break;
    case ST_BF16: ST_FOR(n) w->d[i] = st_bf16_to_f32(st_ld_u16(s + i * b)); break;
    case ST_F32: ST_FOR(n) w->d[i] = st_ld_f32(s + i * b); break;
    case ST_F64: ST_FOR(n) w->d[i] = st_ld_f64(s + i * b); break;
    case ST_C64:
        ST_FOR(n) {
            w->c[2 * i] = st_ld_f32(s + i * b);
            w->c[2 * i + 1] = st_ld_f32(s + i * b + 4);
        }
        break;
    default:
        ST_FOR(n) {
            w->c[2 * i] = st_ld_f64(s + i * b);
            w->c[2 * i + 1] = st_ld_f64(s + i * b + 8);
        }
        break;
    }
}

/* Store an integer type from a wide buffer of kind k: wrapped from integers, truncated and
 * saturated from floats. */
#define ST_STORE_INT(NAME, T)                                                                 \
    switch (k) {                                                                              \
    case 'i': ST_FOR(n) st_st_##NAME(d + i * b, (T)w->i[i]); break;                           \
    case 'u': ST_FOR(n) st_st_##NAME(d + i * b, (T)w->u[i]); break;                           \
    default: ST_FOR(n) st_st_##NAME(d + i * b, st_trunc_##NAME(w->d[i])); break;              \
    }                                                                                         \
    break

/* Store a real float type: from the wide value with one rounding (to_f: how a double
 * becomes the type; integers are rounded from their exact value by the C cast). */
#define ST_STORE_FLOAT(PUT, FROM_I, FROM_U, FROM_D)                                           \
    switch (k) {                                                                              \
    case 'i': ST_FOR(n) PUT(d + i * b, FROM_I(w->i[i])); break;                               \
    case 'u': ST_FOR(n) PUT(d + i * b, FROM_U(w->u[i])); break;                               \
    default: ST_FOR(n) PUT(d + i * b, FROM_D(w->d[i])); break;                                \
    }                                                                                         \
    break

#define ST_ID(x) (x)
#define ST_TO_F32(x) ((float)(x))
#define ST_TO_F64(x) ((double)(x))
#define ST_I_TO_F16(x) st_f64_to_f16((double)(x))
#define ST_I_TO_BF16(x) st_f32_to_bf16((float)(x))
#define ST_D_TO_BF16(x) st_f32_to_bf16((float)(x))

static void st_store_plain(int t, char k, char *d, st_cidx ds, st_cidx n, const st_wide *w)
{
    const st_cidx b = ds * st_type_size[t];
    switch (t) {
    case ST_BOOL:
        switch (k) {
        case 'i': ST_FOR(n) st_st_u8(d + i * b, w->i[i] != 0); break;
        case 'u': ST_FOR(n) st_st_u8(d + i * b, w->u[i] != 0); break;
        case 'd': ST_FOR(n) st_st_u8(d + i * b, w->d[i] != 0); break;
        default: ST_FOR(n) st_st_u8(d + i * b, w->c[2 * i] != 0 || w->c[2 * i + 1] != 0);
        }
        break;
    case ST_I8: ST_STORE_INT(i8, int8_t);
    case ST_I16: ST_STORE_INT(i16, int16_t);
    case ST_I32: ST_STORE_INT(i32, int32_t);
    case ST_I64: ST_STORE_INT(i64, int64_t);
    case ST_U8: ST_STORE_INT(u8, uint8_t);
    case ST_U16: ST_STORE_INT(u16, uint16_t);
    case ST_U32: ST_STORE_INT(u32, uint32_t);
    case ST_U64: ST_STORE_INT(u64, uint64_t);
    case ST_F16: ST_STORE_FLOAT(st_st_u16, ST_I_TO_F16, ST_I_TO_F16, st_f64_to_f16);
    case ST_BF16: ST_STORE_FLOAT(st_st_u16, ST_I_TO_BF16, ST_I_TO_BF16, ST_D_TO_BF16);
    case ST_F32: ST_STORE_FLOAT(st_st_f32, ST_TO_F32, ST_TO_F32, ST_TO_F32);
    case ST_F64: ST_STORE_FLOAT(st_st_f64, ST_TO_F64, ST_TO_F64, ST_ID);
    case ST_C64:
        if (k == 'c') {
            ST_FOR(n) {
                st_st_f32(d + i * b, (float)w->c[2 * i]);
                st_st_f32(d + i * b + 4, (float)w->c[2 * i + 1]);
            }
        } else {
            ST_FOR(n) {
                float re = k == 'i' ? (float)w->i[i] : k == 'u' ? (float)w->u[i]
                                                                : (float)w->d[i];
                st_st_f32(d + i * b, re);
                st_st_f32(d + i * b + 4, 0.0f);
            }
        }
        break;
    default:
        if (k == 'c') {
            ST_FOR(n) {
                st_st_f64(d + i * b, w->c[2 * i]);
                st_st_f64(d + i * b + 8, w->c[2 * i + 1]);
            }
        } else {
            ST_FOR(n) {
                double re = k == 'i' ? (double)w->i[i] : k == 'u' ? (double)w->u[i] : w->d[i];
                st_st_f64(d + i * b, re);
                st_st_f64(d + i * b + 8, 0.0);
            }
        }
        break;
    }
}

/* The affine step's load: the source's exact value in the compute type (the planner only
 * asks for float32 from types float32 holds exactly, and float64 from the rest). */
static void st_load_ct(int t, int mode, const char *s, st_cidx ss, st_cidx n, st_wide *w)
{
    const st_cidx b = ss * st_type_size[t];
    if (mode == ST_CVT_AFF32) {
        switch (t) {
        case ST_BOOL: ST_FOR(n) w->f[i] = st_ld_u8(s + i * b) != 0; break;
        case ST_I8: ST_FOR(n) w->f[i] = st_ld_i8(s + i * b); break;
        case ST_I16: ST_FOR(n) w->f[i] = st_ld_i16(s + i * b); break;
        case ST_U8: ST_FOR(n) w->f[i] = st_ld_u8(s + i * b); break;
        case ST_U16: ST_FOR(n) w->f[i] = st_ld_u16(s + i * b); break;
        case ST_F16: ST_FOR(n) w->f[i] = st_f16_to_f32(st_ld_u16(s + i * b)); break;
        case ST_BF16: ST_FOR(n) w->f[i] = st_bf16_to_f32(st_ld_u16(s + i * b)); break;
        default: ST_FOR(n) w->f[i] = st_ld_f32(s + i * b); break;
        }
        return;
    }
    switch (t) {
    case ST_I32: ST_FOR(n) w->d[i] = st_ld_i32(s + i * b); break;
    case ST_I64: ST_FOR(n) w->d[i] = (double)st_ld_i64(s + i * b); break;
    case ST_U32: ST_FOR(n) w->d[i] = st_ld_u32(s + i * b); break;
    case ST_U64: ST_FOR(n) w->d[i] = (double)st_ld_u64(s + i * b); break;
    default: ST_FOR(n) w->d[i] = st_ld_f64(s + i * b); break;
    }
}

/* t = t * scale + shift in the compute type, two roundings (no fused multiply-add: this
 * header is compiled with -ffp-contract=off). */
static void st_affine_ct(int mode, st_cidx n, st_wide *w, const char *scale, const char *shift,
                         st_cidx ps)
{
    if (mode == ST_CVT_AFF32) {
        const float *a = (const float *)(const void *)scale, *c = (const float *)(const void *)shift;
        ST_FOR(n) {
            float t = w->f[i] * a[i * ps];
            w->f[i] = t + c[i * ps];
        }
    } else {
        const double *a = (const double *)(const void *)scale;
        const double *c = (const double *)(const void *)shift;
        ST_FOR(n) {
            double t = w->d[i] * a[i * ps];
            w->d[i] = t + c[i * ps];
        }
    }
}

/* Store the affine result: float types round to nearest even (bfloat16 from float32, as
 * torch); integer types round half to even, saturate, NaN -> 0. */
#define ST_STORE_ROUNDED(NAME)                                                                \
    if (mode == ST_CVT_AFF32) {                                                               \
        ST_FOR(n) st_st_##NAME(d + i * b, st_trunc_##NAME(rint((double)w->f[i])));            \
    } else {                                                                                  \
        ST_FOR(n) st_st_##NAME(d + i * b, st_trunc_##NAME(rint(w->d[i])));                    \
    }                                                                                         \
    break

static void st_store_ct(int t, int mode, char *d, st_cidx ds, st_cidx n, const st_wide *w)
{
    const st_cidx b = ds * st_type_size[t];
    switch (t) {
    case ST_I8: ST_STORE_ROUNDED(i8);
    case ST_I16: ST_STORE_ROUNDED(i16);
    case ST_I32: ST_STORE_ROUNDED(i32);
    case ST_I64: ST_STORE_ROUNDED(i64);
    case ST_U8: ST_STORE_ROUNDED(u8);
    case ST_U16: ST_STORE_ROUNDED(u16);
    case ST_U32: ST_STORE_ROUNDED(u32);
    case ST_U64: ST_STORE_ROUNDED(u64);
    case ST_F16:
        if (mode == ST_CVT_AFF32) { ST_FOR(n) st_st_u16(d + i * b, st_f32_to_f16(w->f[i])); }
        else { ST_FOR(n) st_st_u16(d + i * b, st_f64_to_f16(w->d[i])); }
        break;
    case ST_BF16:
        if (mode == ST_CVT_AFF32) { ST_FOR(n) st_st_u16(d + i * b, st_f32_to_bf16(w->f[i])); }
        else { ST_FOR(n) st_st_u16(d + i * b, st_f32_to_bf16((float)w->d[i])); }
        break;
    case ST_F32:
        if (mode == ST_CVT_AFF32) { ST_FOR(n) st_st_f32(d + i * b, w->f[i]); }
        else { ST_FOR(n) st_st_f32(d + i * b, (float)w->d[i]); }
        break;
    default:   /* ST_F64 (bool and complex destinations are refused before planning) */
        if (mode == ST_CVT_AFF32) { ST_FOR(n) st_st_f64(d + i * b, (double)w->f[i]); }
        else { ST_FOR(n) st_st_f64(d + i * b, w->d[i]); }
        break;
    }
}

/* ---- fused rows: unit strides, the pipelines' pairs ------------------------------------------ */
/* Each body is plain C the compiler vectorises; ST_CVT_FUSED instantiates it for the baseline
 * and, on x86 with GCC/Clang, again for AVX2 + F16C (chosen at run time). Parameters: scale and
 * shift of the compute type at stride ps (0: one value for the row, 1: one per element).
 * Rows start at any byte (a float64 view of a uint8 buffer at an odd address is a valid
 * source), so elements are loaded and stored through memcpy (st_ld_*, st_st_*), never through
 * a float* or uint16_t* that would assert an alignment the row does not have; GCC and Clang
 * turn each into one unaligned move and vectorise the loops as before (checked with
 * -fopt-info-vec and in the object code: the same vector loops as with typed pointers).
 * The parameters are the engine's own float buffers, aligned. */

typedef void (*st_fused_fn)(char *d, const char *s, st_cidx n, const void *scale,
                            const void *shift, st_cidx ps);

/* t = (float)source element i * scale + shift, then OUT stores t; LOAD(p) reads an element
 * of SIZE bytes at p. */
#define ST_AFFINE_BODY(LOAD, SIZE, OUT)                                                       \
    const float *a = (const float *)scale, *c = (const float *)shift;                         \
    if (ps == 0) {                                                                            \
        const float a0 = a[0], c0 = c[0];                                                     \
        for (st_cidx i = 0; i < n; i++) {                                                     \
            float t = (float)LOAD(s + (SIZE) * i) * a0;                                       \
            t = t + c0;                                                                       \
            OUT;                                                                              \
        }                                                                                     \
    } else {                                                                                  \
        for (st_cidx i = 0; i < n; i++) {                                                     \
            float t = (float)LOAD(s + (SIZE) * i) * a[i];                                     \
            t = t + c[i];                                                                     \
            OUT;                                                                              \
        }                                                                                     \
    }

/* A plain cast of a unit-stride row: EXPR converts `v`, an element of TS (loaded by st_ld_SN),
 * to TD (stored by st_st_DN). */
#define ST_DEF_PLAIN(NAME, SUFFIX, ATTR, TS, SN, TD, DN, EXPR)                                \
    ATTR static void NAME##_##SUFFIX(char *d, const char *s, st_cidx n, const void *scale,    \
                                     const void *shift, st_cidx ps)                           \
    {                                                                                         \
        (void)scale; (void)shift; (void)ps;                                                   \
        for (st_cidx i = 0; i < n; i++) {                                                     \
            TS v = st_ld_##SN(s + sizeof(TS) * i);                                            \
            st_st_##DN(d + sizeof(TD) * i, EXPR);                                             \
        }                                                                                     \
    }

/* float32 -> a small integer type, truncated toward zero, saturated, NaN -> 0 (the values of
 * st_trunc_*: -1 < v < 0 truncates to 0 either way). */
#define ST_TRUNC_SAT_F32(v, lo, hi)                                                           \
    ((v) != (v) ? 0 : (v) <= (lo) ? (int32_t)(lo) : (v) >= (hi) ? (int32_t)(hi) : (int32_t)(v))

#define ST_DEF_PLAINS(SUFFIX, ATTR)                                                           \
    ST_DEF_PLAIN(st_p_u8_f32, SUFFIX, ATTR, uint8_t, u8, float, f32, (float)v)                \
    ST_DEF_PLAIN(st_p_i8_f32, SUFFIX, ATTR, int8_t, i8, float, f32, (float)v)                 \
    ST_DEF_PLAIN(st_p_u16_f32, SUFFIX, ATTR, uint16_t, u16, float, f32, (float)v)             \
    ST_DEF_PLAIN(st_p_i16_f32, SUFFIX, ATTR, int16_t, i16, float, f32, (float)v)              \
    ST_DEF_PLAIN(st_p_i32_f32, SUFFIX, ATTR, int32_t, i32, float, f32, (float)v)              \
    ST_DEF_PLAIN(st_p_u8_f64, SUFFIX, ATTR, uint8_t, u8, double, f64, (double)v)              \
    ST_DEF_PLAIN(st_p_f32_f64, SUFFIX, ATTR, float, f32, double, f64, (double)v)              \
    ST_DEF_PLAIN(st_p_f64_f32, SUFFIX, ATTR, double, f64, float, f32, (float)v)               \
    ST_DEF_PLAIN(st_p_f32_u16, SUFFIX, ATTR, float, f32, uint16_t, u16,                       \
                 (uint16_t)ST_TRUNC_SAT_F32(v, 0.0f, 65535.0f))                               \
    ST_DEF_PLAIN(st_p_f32_i16, SUFFIX, ATTR, float, f32, int16_t, i16,                        \
                 (int16_t)ST_TRUNC_SAT_F32(v, -32768.0f, 32767.0f))

ST_DEF_PLAINS(base, )
#if ST_CVT_X86_GNU
ST_DEF_PLAINS(avx2, __attribute__((target("avx2"))))
#endif

#define ST_DEF_FUSED(SUFFIX, ATTR)                                                            \
    ATTR static void st_u8_f32_##SUFFIX(char *d, const char *s, st_cidx n, const void *scale, \
                                        const void *shift, st_cidx ps)                        \
    {                                                                                         \
        ST_AFFINE_BODY(st_ld_u8, 1, st_st_f32(d + 4 * i, t))                                  \
    }                                                                                         \
    ATTR static void st_i8_f32_##SUFFIX(char *d, const char *s, st_cidx n, const void *scale, \
                                        const void *shift, st_cidx ps)                        \
    {                                                                                         \
        ST_AFFINE_BODY(st_ld_i8, 1, st_st_f32(d + 4 * i, t))                                  \
    }                                                                                         \
    ATTR static void st_f32_f32_##SUFFIX(char *d, const char *s, st_cidx n,                   \
                                         const void *scale, const void *shift, st_cidx ps)    \
    {                                                                                         \
        ST_AFFINE_BODY(st_ld_f32, 4, st_st_f32(d + 4 * i, t))                                 \
    }                                                                                         \
    ATTR static void st_f32_bf16_##SUFFIX(char *d, const char *s, st_cidx n,                  \
                                          const void *scale, const void *shift, st_cidx ps)   \
    {                                                                                         \
        (void)scale; (void)shift; (void)ps;                                                   \
        for (st_cidx i = 0; i < n; i++) {                                                     \
            uint32_t u = st_ld_u32(s + 4 * i);                                                \
            uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;                              \
            st_st_u16(d + 2 * i, (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? 0x7fc0u : r));  \
        }                                                                                     \
    }                                                                                         \
    ATTR static void st_bf16_f32_##SUFFIX(char *d, const char *s, st_cidx n,                  \
                                          const void *scale, const void *shift, st_cidx ps)   \
    {                                                                                         \
        (void)scale; (void)shift; (void)ps;                                                   \
        for (st_cidx i = 0; i < n; i++)                                                       \
            st_st_u32(d + 4 * i, (uint32_t)st_ld_u16(s + 2 * i) << 16);                       \
    }

ST_DEF_FUSED(base, )
#if ST_CVT_X86_GNU
ST_DEF_FUSED(avx2, __attribute__((target("avx2"))))

/* float32 <-> float16 with F16C: 8 at a time (round to nearest even, as the portable code). */
__attribute__((target("avx2,f16c"))) static void st_f32_f16_f16c(char *d, const char *s,
                                                                 st_cidx n, const void *scale,
                                                                 const void *shift, st_cidx ps)
{
    st_cidx i = 0;
    (void)scale; (void)shift; (void)ps;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps((const float *)(const void *)(s + 4 * i));
        _mm_storeu_si128((__m128i *)(void *)(d + 2 * i),
                         _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
    for (; i < n; i++) st_st_u16(d + 2 * i, st_f32_to_f16(st_ld_f32(s + 4 * i)));
}

__attribute__((target("avx2,f16c"))) static void st_f16_f32_f16c(char *d, const char *s,
                                                                 st_cidx n, const void *scale,
                                                                 const void *shift, st_cidx ps)
{
    st_cidx i = 0;
    (void)scale; (void)shift; (void)ps;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128((const __m128i *)(const void *)(s + 2 * i));
        _mm256_storeu_ps((float *)(void *)(d + 4 * i), _mm256_cvtph_ps(h));
    }
    for (; i < n; i++) st_st_f32(d + 4 * i, st_f16_to_f32(st_ld_u16(s + 2 * i)));
}
#endif

static void st_f32_f16_base(char *d, const char *s, st_cidx n, const void *scale,
                            const void *shift, st_cidx ps)
{
    (void)scale; (void)shift; (void)ps;
    for (st_cidx i = 0; i < n; i++) st_st_u16(d + 2 * i, st_f32_to_f16(st_ld_f32(s + 4 * i)));
}

static void st_f16_f32_base(char *d, const char *s, st_cidx n, const void *scale,
                            const void *shift, st_cidx ps)
{
    (void)scale; (void)shift; (void)ps;
    for (st_cidx i = 0; i < n; i++) st_st_f32(d + 4 * i, st_f16_to_f32(st_ld_u16(s + 2 * i)));
}

/* ---- float32 -> 8-bit integers: quantizing and saturating casts, in intrinsics ------------------
 * The compiler does not vectorise the saturate-and-round of a float into a byte, so these are
 * written out: NaN -> 0 (an ordered-compare mask), clamp to the range, convert (rounding to
 * nearest even by the default MXCSR mode for the affine step, truncating for a plain cast), and
 * pack with saturation. `affine`, `sign` are compile-time constants of each wrapper. */

ST_CVT_INLINE int32_t st_f32_byte_scalar(float t, int affine, int sign)
{
    double v = affine ? rint((double)t) : (double)t;
    return sign ? st_trunc_i8(v) : st_trunc_u8(v);
}

ST_CVT_INLINE void st_f32_bytes_sse2(char *d, const char *s, st_cidx n, const void *scale,
                                 const void *shift, st_cidx ps, int affine, int sign)
{
    const float *a = (const float *)scale, *c = (const float *)shift;
    st_cidx i = 0;
#if ST_CVT_SSE2
    const __m128 lo = _mm_set1_ps(sign ? -128.0f : 0.0f), hi = _mm_set1_ps(sign ? 127.0f : 255.0f);
    __m128 a0 = _mm_setzero_ps(), c0 = _mm_setzero_ps();
    if (affine && ps == 0) { a0 = _mm_set1_ps(a[0]); c0 = _mm_set1_ps(c[0]); }
    for (; i + 16 <= n; i += 16) {
        __m128i q[4];
        for (int k = 0; k < 4; k++) {
            __m128 t = _mm_loadu_ps((const float *)(const void *)(s + 4 * (i + 4 * k)));
            if (affine) {
                __m128 sa = ps ? _mm_loadu_ps(a + i + 4 * k) : a0;
                __m128 sc = ps ? _mm_loadu_ps(c + i + 4 * k) : c0;
                t = _mm_add_ps(_mm_mul_ps(t, sa), sc);
            }
            t = _mm_and_ps(t, _mm_cmpord_ps(t, t));
            t = _mm_min_ps(_mm_max_ps(t, lo), hi);
            q[k] = affine ? _mm_cvtps_epi32(t) : _mm_cvttps_epi32(t);
        }
        __m128i w0 = _mm_packs_epi32(q[0], q[1]), w1 = _mm_packs_epi32(q[2], q[3]);
        _mm_storeu_si128((__m128i *)(void *)(d + i),
                         sign ? _mm_packs_epi16(w0, w1) : _mm_packus_epi16(w0, w1));
    }
#endif
    for (; i < n; i++) {
        float t = st_ld_f32(s + 4 * i);
        if (affine) {
            t = t * a[i * ps];
            t = t + c[i * ps];
        }
        d[i] = (char)st_f32_byte_scalar(t, affine, sign);
    }
}

#define ST_DEF_BYTES(NAME, AFFINE, SIGN, SUFFIX, BODY)                                        \
    static void NAME##_##SUFFIX(char *d, const char *s, st_cidx n, const void *scale,         \
                                const void *shift, st_cidx ps)                                \
    {                                                                                         \
        BODY(d, s, n, scale, shift, ps, AFFINE, SIGN);                                        \
    }
ST_DEF_BYTES(st_f32_u8, 1, 0, base, st_f32_bytes_sse2)
ST_DEF_BYTES(st_f32_i8, 1, 1, base, st_f32_bytes_sse2)
ST_DEF_BYTES(st_p_f32_u8, 0, 0, base, st_f32_bytes_sse2)
ST_DEF_BYTES(st_p_f32_i8, 0, 1, base, st_f32_bytes_sse2)

#if ST_CVT_X86_GNU
/* AVX2: 32 floats to 32 bytes a round; the packs work per 128-bit lane, so a final
 * permutation puts the four 8-byte groups back in order. */
__attribute__((target("avx2"))) static inline void
st_f32_bytes_avx2(char *d, const char *s, st_cidx n, const void *scale, const void *shift,
                  st_cidx ps, int affine, int sign)
{
    const float *a = (const float *)scale, *c = (const float *)shift;
    st_cidx i = 0;
    const __m256 lo = _mm256_set1_ps(sign ? -128.0f : 0.0f);
    const __m256 hi = _mm256_set1_ps(sign ? 127.0f : 255.0f);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    __m256 a0 = _mm256_setzero_ps(), c0 = _mm256_setzero_ps();
    if (affine && ps == 0) { a0 = _mm256_set1_ps(a[0]); c0 = _mm256_set1_ps(c[0]); }
    for (; i + 32 <= n; i += 32) {
        __m256i q[4];
        for (int k = 0; k < 4; k++) {
            __m256 t = _mm256_loadu_ps((const float *)(const void *)(s + 4 * (i + 8 * k)));
            if (affine) {
                __m256 sa = ps ? _mm256_loadu_ps(a + i + 8 * k) : a0;
                __m256 sc = ps ? _mm256_loadu_ps(c + i + 8 * k) : c0;
                t = _mm256_add_ps(_mm256_mul_ps(t, sa), sc);
            }
            t = _mm256_and_ps(t, _mm256_cmp_ps(t, t, _CMP_ORD_Q));
            t = _mm256_min_ps(_mm256_max_ps(t, lo), hi);
            q[k] = affine ? _mm256_cvtps_epi32(t) : _mm256_cvttps_epi32(t);
        }
        __m256i w0 = _mm256_packs_epi32(q[0], q[1]), w1 = _mm256_packs_epi32(q[2], q[3]);
        __m256i b = sign ? _mm256_packs_epi16(w0, w1) : _mm256_packus_epi16(w0, w1);
        _mm256_storeu_si256((__m256i *)(void *)(d + i), _mm256_permutevar8x32_epi32(b, order));
    }
    if (i < n)
        st_f32_bytes_sse2(d + i, s + 4 * i, n - i, a + (ps ? i : 0), c + (ps ? i : 0), ps,
                          affine, sign);
}
__attribute__((target("avx2"))) static void st_f32_u8_avx2(char *d, const char *s, st_cidx n,
    const void *scale, const void *shift, st_cidx ps)
{ st_f32_bytes_avx2(d, s, n, scale, shift, ps, 1, 0); }
__attribute__((target("avx2"))) static void st_f32_i8_avx2(char *d, const char *s, st_cidx n,
    const void *scale, const void *shift, st_cidx ps)
{ st_f32_bytes_avx2(d, s, n, scale, shift, ps, 1, 1); }
__attribute__((target("avx2"))) static void st_p_f32_u8_avx2(char *d, const char *s, st_cidx n,
    const void *scale, const void *shift, st_cidx ps)
{ st_f32_bytes_avx2(d, s, n, scale, shift, ps, 0, 0); }
__attribute__((target("avx2"))) static void st_p_f32_i8_avx2(char *d, const char *s, st_cidx n,
    const void *scale, const void *shift, st_cidx ps)
{ st_f32_bytes_avx2(d, s, n, scale, shift, ps, 0, 1); }
#endif

/* ---- dense 8-bit pixels of 3 or 4 channels -> float32 planes, in one pass ---------------------
 * The image loader's conversion (HWC uint8 -> CHW float32, per-channel affine): plane r gets
 * out_r[i] = (float)px[i * R + r] * a_r + b_r. Written so that the compiler vectorises the
 * de-interleave and the conversion together (measured at 1080x1920: as fast as a contiguous
 * uint8 -> float32 cast of the same bytes, against 2x that through a staged tile). `dp`: bytes
 * between planes; parameters of plane r at scale[r * pp], shift[r * pp] (a plain cast passes
 * 1 and -0.0, which change no value). */

typedef void (*st_planes_fn)(char *d, st_cidx dp, const char *s, st_cidx n, const void *scale,
                             const void *shift, st_cidx pp);

/* (The planes start at any byte: float stores through memcpy, on distinct restrict rows.) */
#define ST_DEF_PLANES3(SUFFIX, ATTR, T, TN)                                                   \
    ATTR static void st_planes3_##TN##_##SUFFIX(char *d, st_cidx dp, const char *s, st_cidx n, \
                                                const void *scale, const void *shift,         \
                                                st_cidx pp)                                   \
    {                                                                                         \
        const T *px = (const T *)(const void *)s;                                             \
        const float *a = (const float *)scale, *c = (const float *)shift;                     \
        char *restrict o0 = d, *restrict o1 = d + dp, *restrict o2 = d + 2 * dp;              \
        const float a0 = a[0], a1 = a[pp], a2 = a[2 * pp];                                    \
        const float c0 = c[0], c1 = c[pp], c2 = c[2 * pp];                                    \
        for (st_cidx i = 0; i < n; i++) {                                                     \
            float t0 = (float)px[3 * i] * a0, t1 = (float)px[3 * i + 1] * a1;                 \
            float t2 = (float)px[3 * i + 2] * a2;                                             \
            st_st_f32(o0 + 4 * i, t0 + c0);                                                   \
            st_st_f32(o1 + 4 * i, t1 + c1);                                                   \
            st_st_f32(o2 + 4 * i, t2 + c2);                                                   \
        }                                                                                     \
    }

#define ST_DEF_PLANES4(SUFFIX, ATTR, T, TN)                                                   \
    ATTR static void st_planes4_##TN##_##SUFFIX(char *d, st_cidx dp, const char *s, st_cidx n, \
                                                const void *scale, const void *shift,         \
                                                st_cidx pp)                                   \
    {                                                                                         \
        const T *px = (const T *)(const void *)s;                                             \
        const float *a = (const float *)scale, *c = (const float *)shift;                     \
        char *restrict o0 = d, *restrict o1 = d + dp, *restrict o2 = d + 2 * dp;              \
        char *restrict o3 = d + 3 * dp;                                                       \
        const float a0 = a[0], a1 = a[pp], a2 = a[2 * pp], a3 = a[3 * pp];                    \
        const float c0 = c[0], c1 = c[pp], c2 = c[2 * pp], c3 = c[3 * pp];                    \
        for (st_cidx i = 0; i < n; i++) {                                                     \
            float t0 = (float)px[4 * i] * a0, t1 = (float)px[4 * i + 1] * a1;                 \
            float t2 = (float)px[4 * i + 2] * a2, t3 = (float)px[4 * i + 3] * a3;             \
            st_st_f32(o0 + 4 * i, t0 + c0);                                                   \
            st_st_f32(o1 + 4 * i, t1 + c1);                                                   \
            st_st_f32(o2 + 4 * i, t2 + c2);                                                   \
            st_st_f32(o3 + 4 * i, t3 + c3);                                                   \
        }                                                                                     \
    }

ST_DEF_PLANES3(base, , uint8_t, u8)
ST_DEF_PLANES3(base, , int8_t, i8)
ST_DEF_PLANES4(base, , uint8_t, u8)
ST_DEF_PLANES4(base, , int8_t, i8)
#if ST_CVT_X86_GNU
/* With AVX2, written out: 8 pixels a round. One 32-byte register holds pixels 0-3 in its low
 * lane and pixels 4-7 in its high lane (for 3 channels, two overlapping 16-byte loads, 12
 * bytes apart); per plane, one in-lane byte shuffle moves channel r of the 4 pixels of each
 * lane into the low byte of a 32-bit item and zeros the rest (uint8: zero-extended), or into
 * its high byte, shifted down arithmetically (int8: sign-extended). Then convert, scale and
 * shift, store. 0.7 instructions an element, where the earlier de-interleave (three byte
 * shuffles and two ors a plane, then widening) took 1.1: a 224x224x3 image normalised on one
 * thread went from 16.3 to 14.9 us, the call included (AMD EPYC). */
#define ST_PLANE_MASK(R, r, SIGNED)                                                           \
    (SIGNED ? _mm256_setr_epi8(-1, -1, -1, (r), -1, -1, -1, (R) + (r), -1, -1, -1,            \
                               2 * (R) + (r), -1, -1, -1, 3 * (R) + (r), -1, -1, -1, (r), -1, \
                               -1, -1, (R) + (r), -1, -1, -1, 2 * (R) + (r), -1, -1, -1,      \
                               3 * (R) + (r))                                                 \
            : _mm256_setr_epi8((r), -1, -1, -1, (R) + (r), -1, -1, -1, 2 * (R) + (r), -1, -1, \
                               -1, 3 * (R) + (r), -1, -1, -1, (r), -1, -1, -1, (R) + (r), -1, \
                               -1, -1, 2 * (R) + (r), -1, -1, -1, 3 * (R) + (r), -1, -1, -1))

#define ST_PLANE_OUT(v, r)                                                                    \
    do {                                                                                      \
        __m256i w_ = _mm256_shuffle_epi8((v), M[r]);                                          \
        if (SIGNED) w_ = _mm256_srai_epi32(w_, 24);                                           \
        _mm256_storeu_ps((float *)(void *)(o[r] + 4 * i),                                     \
                         _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(w_), A[r]), C[r]));   \
    } while (0)

#define ST_DEF_PLANES_AVX2(R, TN, SIGNED_)                                                 \
    __attribute__((target("avx2"))) static void st_planes##R##_##TN##_avx2(                   \
        char *d, st_cidx dp, const char *s, st_cidx n, const void *scale, const void *shift,  \
        st_cidx pp)                                                                           \
    {                                                                                         \
        enum { SIGNED = SIGNED_ };                                                            \
        const char *px = s;                                                                   \
        const float *a = (const float *)scale, *c = (const float *)shift;                     \
        char *o[R];                                                                           \
        __m256i M[R];                                                                         \
        __m256 A[R], C[R];                                                                    \
        st_cidx i = 0;                                                                        \
        int r;                                                                                \
        for (r = 0; r < R; r++) {                                                             \
            o[r] = d + r * dp;                                                                \
            M[r] = ST_PLANE_MASK(R, r, SIGNED);                                               \
            A[r] = _mm256_set1_ps(a[r * pp]);                                                 \
            C[r] = _mm256_set1_ps(c[r * pp]);                                                 \
        }                                                                                     \
        /* the round reads 4 * R + 16 bytes from pixel i (3 channels: 28 of 24, the next     \
         * round's): stop while they are inside the n pixels */                               \
        for (; (i + 8) * R + (R == 3 ? 4 : 0) <= n * R; i += 8) {                             \
            const __m128i lo_ = _mm_loadu_si128((const __m128i *)(const void *)(px + R * i)); \
            const __m128i hi_ =                                                               \
                _mm_loadu_si128((const __m128i *)(const void *)(px + R * i + 4 * R));         \
            const __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(lo_), hi_, 1);   \
            for (r = 0; r < R; r++) ST_PLANE_OUT(v, r);                                       \
        }                                                                                     \
        if (i < n)                                                                            \
            st_planes##R##_##TN##_base(d + 4 * i, dp, s + R * i, n - i, scale,                \
                                       shift, pp);                                            \
    }

ST_DEF_PLANES_AVX2(3, u8, 0)
ST_DEF_PLANES_AVX2(3, i8, 1)
ST_DEF_PLANES_AVX2(4, u8, 0)
ST_DEF_PLANES_AVX2(4, i8, 1)
#undef ST_PLANE_OUT
#endif

/* What the CPU has, found once when _convert is imported (its own libgcc CPU model). */
static int st_cvt_has_avx2 = 0, st_cvt_has_f16c = 0;

static int st_cvt_init(void)
{
#if ST_CVT_X86_GNU
    __builtin_cpu_init();
    st_cvt_has_avx2 = __builtin_cpu_supports("avx2") != 0;
    st_cvt_has_f16c = st_cvt_has_avx2 && __builtin_cpu_supports("f16c") != 0;
#endif
    return st_cvt_has_avx2 + st_cvt_has_f16c;
}

/* ---- float32 planes -> dense 8-bit pixels of 3 or 4 channels, quantized, in one pass ----------
 * The mirror of the planes kernels, for the narrowing direction: packing float32 NCHW into int8
 * NCHW4, or a CHW float32 image into HWC uint8 (x 255). Pixel i, channel r gets
 * saturate(round_half_even(plane_r[i] * a_r + b_r)), NaN -> 0; planes `sp` bytes apart,
 * parameters of channel r at scale[r * pq]. AVX2: 8 pixels a round; the two packs leave each
 * 128-bit lane holding its 4 pixels channel by channel, and one byte shuffle per lane turns
 * that into pixel order. */

typedef void (*st_pixels_fn)(char *d, const char *s, st_cidx n, st_cidx sp, const void *scale,
                             const void *shift, st_cidx pq);

ST_CVT_INLINE void st_pixels_scalar(char *d, const char *s, st_cidx lo, st_cidx n, st_cidx sp,
                                    const float *a, const float *c, st_cidx pq, int R, int sign)
{
    for (st_cidx i = lo; i < n; i++)
        for (int r = 0; r < R; r++) {
            float t = st_ld_f32(s + r * sp + 4 * i) * a[r * pq];
            t = t + c[r * pq];
            d[i * R + r] = (char)st_f32_byte_scalar(t, 1, sign);
        }
}

#if ST_CVT_X86_GNU
__attribute__((target("avx2"))) ST_CVT_INLINE void
st_pixels_avx2(char *d, const char *s, st_cidx n, st_cidx sp, const void *scale,
               const void *shift, st_cidx pq, int R, int sign)
{
    const float *a = (const float *)scale, *c = (const float *)shift;
    const __m256 lo = _mm256_set1_ps(sign ? -128.0f : 0.0f);
    const __m256 hi = _mm256_set1_ps(sign ? 127.0f : 255.0f);
    /* per lane: bytes [ch0 px0..3, ch1 px0..3, ch2 px0..3, ch3 px0..3] -> pixel order; for 3
     * channels the 12 pixel bytes come first */
    const __m256i order4 = _mm256_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15,
                                            0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    const __m256i order3 = _mm256_setr_epi8(0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11, -1, -1, -1, -1,
                                            0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11, -1, -1, -1, -1);
    __m256 A[4], C[4];
    __m256i q[4];
    st_cidx i = 0;
    for (int r = 0; r < 4; r++) {
        A[r] = _mm256_set1_ps(r < R ? a[r * pq] : 0.0f);
        C[r] = _mm256_set1_ps(r < R ? c[r * pq] : 0.0f);
    }
    q[3] = _mm256_setzero_si256();
    /* 3 channels store 12 bytes a lane as 16: the round must leave 4 bytes of room after it */
    for (; i + 8 + (R == 3 ? 2 : 0) <= n; i += 8) {
        for (int r = 0; r < R; r++) {
            __m256 t = _mm256_loadu_ps((const float *)(const void *)(s + r * sp + 4 * i));
            t = _mm256_add_ps(_mm256_mul_ps(t, A[r]), C[r]);
            t = _mm256_and_ps(t, _mm256_cmp_ps(t, t, _CMP_ORD_Q));
            t = _mm256_min_ps(_mm256_max_ps(t, lo), hi);
            q[r] = _mm256_cvtps_epi32(t);
        }
        __m256i w0 = _mm256_packs_epi32(q[0], q[1]), w1 = _mm256_packs_epi32(q[2], q[3]);
        __m256i b = sign ? _mm256_packs_epi16(w0, w1) : _mm256_packus_epi16(w0, w1);
        if (R == 4) {
            _mm256_storeu_si256((__m256i *)(void *)(d + 4 * i), _mm256_shuffle_epi8(b, order4));
        } else {
            b = _mm256_shuffle_epi8(b, order3);
            _mm_storeu_si128((__m128i *)(void *)(d + 3 * i), _mm256_castsi256_si128(b));
            _mm_storeu_si128((__m128i *)(void *)(d + 3 * i + 12), _mm256_extracti128_si256(b, 1));
        }
    }
    st_pixels_scalar(d, s, i, n, sp, a, c, pq, R, sign);
}
#define ST_DEF_PIXELS(NAME, R, SIGN)                                                           \
    __attribute__((target("avx2"))) static void NAME(char *d, const char *s, st_cidx n,        \
                                                     st_cidx sp, const void *scale,           \
                                                     const void *shift, st_cidx pq)           \
    {                                                                                         \
        st_pixels_avx2(d, s, n, sp, scale, shift, pq, R, SIGN);                               \
    }
ST_DEF_PIXELS(st_pixels3_u8_avx2, 3, 0)
ST_DEF_PIXELS(st_pixels4_u8_avx2, 4, 0)
ST_DEF_PIXELS(st_pixels3_i8_avx2, 3, 1)
ST_DEF_PIXELS(st_pixels4_i8_avx2, 4, 1)
#endif

/* The pixels kernel for R channels of a (src, dst, mode) triple at a SIMD level (AVX2 only;
 * below it the tiles do the work), or NULL. */
static st_pixels_fn st_cvt_pixels(int stype, int dtype, int mode, int R, int simd)
{
#if ST_CVT_X86_GNU
    if (stype != ST_F32 || mode != ST_CVT_AFF32 || (R != 3 && R != 4) || simd < 2
            || !st_cvt_has_avx2)
        return NULL;
    if (dtype == ST_U8) return R == 3 ? st_pixels3_u8_avx2 : st_pixels4_u8_avx2;
    if (dtype == ST_I8) return R == 3 ? st_pixels3_i8_avx2 : st_pixels4_i8_avx2;
#endif
    (void)stype; (void)dtype; (void)mode; (void)R; (void)simd;
    return NULL;
}

/* The planes kernel for R planes of a (src, dst, mode) triple, or NULL. */
static st_planes_fn st_cvt_planes(int stype, int dtype, int mode, int R, int simd)
{
    int wide = 0;
    if ((stype != ST_U8 && stype != ST_I8) || dtype != ST_F32 || mode == ST_CVT_AFF64
            || (R != 3 && R != 4))
        return NULL;
#if ST_CVT_X86_GNU
    wide = simd >= 2 && st_cvt_has_avx2;
    if (wide && stype == ST_U8) return R == 3 ? st_planes3_u8_avx2 : st_planes4_u8_avx2;
    if (wide) return R == 3 ? st_planes3_i8_avx2 : st_planes4_i8_avx2;
#endif
    (void)simd; (void)wide;
    if (stype == ST_U8) return R == 3 ? st_planes3_u8_base : st_planes4_u8_base;
    return R == 3 ? st_planes3_i8_base : st_planes4_i8_base;
}

/* The fused row for a (src, dst, mode) triple at a SIMD level (2: AVX2 and F16C where the CPU
 * has them), or NULL: the generic path then converts. */
static st_fused_fn st_cvt_fused(int stype, int dtype, int mode, int simd)
{
    int wide = 0;
#if ST_CVT_X86_GNU
    wide = simd >= 2 && st_cvt_has_avx2;
#define ST_PICK(NAME) return wide ? NAME##_avx2 : NAME##_base
#else
#define ST_PICK(NAME) return NAME##_base
#endif
    (void)simd;
    if (mode == ST_CVT_AFF32) {
        if (stype == ST_U8 && dtype == ST_F32) ST_PICK(st_u8_f32);
        if (stype == ST_I8 && dtype == ST_F32) ST_PICK(st_i8_f32);
        if (stype == ST_F32 && dtype == ST_U8) ST_PICK(st_f32_u8);
        if (stype == ST_F32 && dtype == ST_I8) ST_PICK(st_f32_i8);
        if (stype == ST_F32 && dtype == ST_F32) ST_PICK(st_f32_f32);
        return NULL;
    }
    if (mode != ST_CVT_PLAIN) return NULL;
    if (dtype == ST_F32) {
        if (stype == ST_U8) ST_PICK(st_p_u8_f32);
        if (stype == ST_I8) ST_PICK(st_p_i8_f32);
        if (stype == ST_U16) ST_PICK(st_p_u16_f32);
        if (stype == ST_I16) ST_PICK(st_p_i16_f32);
        if (stype == ST_I32) ST_PICK(st_p_i32_f32);
        if (stype == ST_F64) ST_PICK(st_p_f64_f32);
    }
    if (dtype == ST_F64 && stype == ST_U8) ST_PICK(st_p_u8_f64);
    if (dtype == ST_F64 && stype == ST_F32) ST_PICK(st_p_f32_f64);
    if (stype == ST_F32) {
        if (dtype == ST_U8) ST_PICK(st_p_f32_u8);
        if (dtype == ST_I8) ST_PICK(st_p_f32_i8);
        if (dtype == ST_U16) ST_PICK(st_p_f32_u16);
        if (dtype == ST_I16) ST_PICK(st_p_f32_i16);
    }
    if (stype == ST_F32 && dtype == ST_BF16) ST_PICK(st_f32_bf16);
    if (stype == ST_BF16 && dtype == ST_F32) ST_PICK(st_bf16_f32);
#if ST_CVT_X86_GNU
    if (stype == ST_F32 && dtype == ST_F16) return wide && st_cvt_has_f16c ? st_f32_f16_f16c
                                                                           : st_f32_f16_base;
    if (stype == ST_F16 && dtype == ST_F32) return wide && st_cvt_has_f16c ? st_f16_f32_f16c
                                                                           : st_f16_f32_base;
#else
    if (stype == ST_F32 && dtype == ST_F16) return st_f32_f16_base;
    if (stype == ST_F16 && dtype == ST_F32) return st_f16_f32_base;
#endif
#undef ST_PICK
    return NULL;
}

/* ---- one row ------------------------------------------------------------------------------- */

typedef struct {
    int stype, dtype, mode;
    st_fused_fn fused;          /* the unit-stride row, or NULL */
} st_cvt_op;

/* dst[i * ds] = convert(src[i * ss]) for i < n (element strides); the affine parameters of
 * element i at scale + i * ps, shift + i * ps (compute-type elements; unused when plain). */
static void st_cvt_row(const st_cvt_op *op, char *dst, st_cidx ds, const char *src, st_cidx ss,
                       st_cidx n, const char *scale, const char *shift, st_cidx ps)
{
    st_wide w;
    const int ct = op->mode == ST_CVT_AFF64 ? 8 : 4;
    const int dsz = st_type_size[op->dtype], ssz = st_type_size[op->stype];
    if (op->fused != NULL && ds == 1 && ss == 1 && (ps == 0 || ps == 1)) {
        op->fused(dst, src, n, scale, shift, ps);
        return;
    }
    while (n > 0) {
        st_cidx k = n < ST_CHUNK ? n : ST_CHUNK;
        if (op->mode == ST_CVT_PLAIN) {
            st_load_plain(op->stype, src, ss, k, &w);
            st_store_plain(op->dtype, st_kind(op->stype), dst, ds, k, &w);
        } else {
            st_load_ct(op->stype, op->mode, src, ss, k, &w);
            st_affine_ct(op->mode, k, &w, scale, shift, ps);
            st_store_ct(op->dtype, op->mode, dst, ds, k, &w);
            scale += k * ps * ct;
            shift += k * ps * ct;
        }
        dst += k * ds * dsz;
        src += k * ss * ssz;
        n -= k;
    }
}

#endif /* STRIDED_KERNELS_CONVERT_H */
