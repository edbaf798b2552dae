/* Fused conversion rows: both sides unit-stride, the pairs the pipelines use (8-bit <-> float32
 * affine, float32 <-> float16 / bfloat16, float32 -> 8-bit quantizing and saturating), written
 * for the compiler to vectorise or in intrinsics, baseline and AVX2 (+ F16C). */
#ifndef STRIDED_KERNELS_CVT_FUSED_H
#define STRIDED_KERNELS_CVT_FUSED_H

#include "cvt_values.h"

/* ---- fused rows: unit strides, the pipelines' pairs ------------------------------------------ */
/* Each body is plain C the compiler vectorises; ST_CVT_FUSED instantiates it for the baseline
 * and, on x86 with GCC/Clang, again for AVX2 + F16C (chosen at run time). Parameters: scale and
 * shift of the compute type at stride ps (0: one value for the row, 1: one per element).
 * Rows start at any byte (a float64 view of a uint8 buffer at an odd address is a valid
 * source), so elements are loaded and stored through memcpy (st_ld_*, st_st_*), never through
 * a float* or uint16_t* that would assert an alignment the row does not have; GCC and Clang
 * turn each into one unaligned move and vectorise the loops as before (checked with
 * -fopt-info-vec and in the object code: the same vector loops as with typed pointers).
 * The parameters are the engine's own float buffers, aligned. The rows are st_fused_fn
 * (types.h). */

/* t = (float)source element i * scale + shift, then OUT stores t; LOAD(p) reads an element
 * of SIZE bytes at p. */
#define ST_AFFINE_BODY(LOAD, SIZE, OUT)                                                       \
    const float *a = (const float *)scale, *c = (const float *)shift;                         \
    if (ps == 0) {                                                                            \
        const float a0 = a[0], c0 = c[0];                                                     \
        for (st_idx i = 0; i < n; i++) {                                                     \
            float t = (float)LOAD(s + (SIZE) * i) * a0;                                       \
            t = t + c0;                                                                       \
            OUT;                                                                              \
        }                                                                                     \
    } else {                                                                                  \
        for (st_idx i = 0; i < n; i++) {                                                     \
            float t = (float)LOAD(s + (SIZE) * i) * a[i];                                     \
            t = t + c[i];                                                                     \
            OUT;                                                                              \
        }                                                                                     \
    }

/* t = source element i / scale + shift in float32 (ST_CVT_DIV32, float32 -> float32): each
 * run of 64 elements is loaded into a local buffer before any is stored, so the row may be
 * converted in place (d == s: the torchvision form divides a batch where it is), and the
 * loops still vectorise (the buffer aliases nothing). */
#define ST_DIV_BODY                                                                           \
    const float *a = (const float *)scale, *c = (const float *)shift;                         \
    float t[64];                                                                              \
    for (st_idx i0 = 0; i0 < n; i0 += 64) {                                                  \
        const st_idx k = n - i0 < 64 ? n - i0 : 64;                                           \
        const char *sp = s + 4 * i0;                                                          \
        if (ps == 0) {                                                                        \
            const float a0 = a[0], c0 = c[0];                                                 \
            for (st_idx j = 0; j < k; j++) {                                                 \
                float q = st_ld_f32(sp + 4 * j) / a0;                                         \
                t[j] = q + c0;                                                                \
            }                                                                                 \
        } else {                                                                              \
            for (st_idx j = 0; j < k; j++) {                                                 \
                float q = st_ld_f32(sp + 4 * j) / a[i0 + j];                                  \
                t[j] = q + c[i0 + j];                                                         \
            }                                                                                 \
        }                                                                                     \
        for (st_idx j = 0; j < k; j++)                                                       \
            st_st_f32(d + 4 * (i0 + j), t[j]);                                                \
    }

/* A plain cast of a unit-stride row: EXPR converts `v`, an element of TS (loaded by st_ld_SN),
 * to TD (stored by st_st_DN). */
#define ST_DEF_PLAIN(NAME, SUFFIX, ATTR, TS, SN, TD, DN, EXPR)                                \
    ATTR static void NAME##_##SUFFIX(char *d, const char *s, st_idx n, const void *scale,    \
                                     const void *shift, st_idx ps)                           \
    {                                                                                         \
        (void)scale; (void)shift; (void)ps;                                                   \
        for (st_idx i = 0; i < n; i++) {                                                     \
            TS v = st_ld_##SN(s + sizeof(TS) * i);                                            \
            st_st_##DN(d + sizeof(TD) * i, EXPR);                                             \
        }                                                                                     \
    }

/* Plain casts of a unit-stride row between the real types (bool, the integers, float32,
 * float64; float32 -> 8-bit has rows of its own, below): numpy's values, in one tight loop per
 * pair, which the compiler vectorises where the target has the instructions (widening,
 * narrowing, int <-> float). Integers wrap modulo 2^bits (the C cast: GCC and Clang define the
 * signed case so); floats truncate toward zero, saturate outside the type's range and map NaN
 * to 0 (st_sat_*: st_trunc_*'s values, written as one expression); bool is x != 0 either way.
 * The planner sends same-type and same-width integer pairs to the copy engine (their bits do
 * not change); their rows serve only where a copy is refused. */
static inline int8_t st_sat_i8(double d)
{ return d != d ? 0 : d >= 128.0 ? INT8_MAX : d <= -128.0 ? INT8_MIN : (int8_t)(int32_t)d; }
static inline int16_t st_sat_i16(double d)
{ return d != d ? 0 : d >= 32768.0 ? INT16_MAX : d <= -32768.0 ? INT16_MIN
                                                                 : (int16_t)(int32_t)d; }
static inline int32_t st_sat_i32(double d)
{ return d != d ? 0 : d >= 0x1p31 ? INT32_MAX : d <= -0x1p31 ? INT32_MIN : (int32_t)d; }
static inline int64_t st_sat_i64(double d)
{ return d != d ? 0 : d >= 0x1p63 ? INT64_MAX : d <= -0x1p63 ? INT64_MIN : (int64_t)d; }
static inline uint8_t st_sat_u8(double d)
{ return d != d || d <= 0 ? 0 : d >= 256.0 ? UINT8_MAX : (uint8_t)(int32_t)d; }
static inline uint16_t st_sat_u16(double d)
{ return d != d || d <= 0 ? 0 : d >= 65536.0 ? UINT16_MAX : (uint16_t)(int32_t)d; }
static inline uint32_t st_sat_u32(double d)
{ return d != d || d <= 0 ? 0 : d >= 0x1p32 ? UINT32_MAX : (uint32_t)(int64_t)d; }
static inline uint64_t st_sat_u64(double d)
{ return d != d || d <= 0 ? 0 : d >= 0x1p64 ? UINT64_MAX : (uint64_t)d; }

/* The real types, each as (type code, name, C type, load/store name, kind): B bool, I
 * integer, F float. Two copies of the list, so that one can run inside the other. */
#define ST_REAL_TYPES_OUTER(X, ...)                                                           \
    X(__VA_ARGS__, ST_BOOL, b, uint8_t, u8, B) X(__VA_ARGS__, ST_I8, i8, int8_t, i8, I)       \
    X(__VA_ARGS__, ST_I16, i16, int16_t, i16, I) X(__VA_ARGS__, ST_I32, i32, int32_t, i32, I) \
    X(__VA_ARGS__, ST_I64, i64, int64_t, i64, I) X(__VA_ARGS__, ST_U8, u8, uint8_t, u8, I)    \
    X(__VA_ARGS__, ST_U16, u16, uint16_t, u16, I)                                             \
    X(__VA_ARGS__, ST_U32, u32, uint32_t, u32, I)                                             \
    X(__VA_ARGS__, ST_U64, u64, uint64_t, u64, I) X(__VA_ARGS__, ST_F32, f32, float, f32, F)  \
    X(__VA_ARGS__, ST_F64, f64, double, f64, F)
#define ST_REAL_TYPES_INNER(X, ...)                                                           \
    X(__VA_ARGS__, ST_BOOL, b, uint8_t, u8, B) X(__VA_ARGS__, ST_I8, i8, int8_t, i8, I)       \
    X(__VA_ARGS__, ST_I16, i16, int16_t, i16, I) X(__VA_ARGS__, ST_I32, i32, int32_t, i32, I) \
    X(__VA_ARGS__, ST_I64, i64, int64_t, i64, I) X(__VA_ARGS__, ST_U8, u8, uint8_t, u8, I)    \
    X(__VA_ARGS__, ST_U16, u16, uint16_t, u16, I)                                             \
    X(__VA_ARGS__, ST_U32, u32, uint32_t, u32, I)                                             \
    X(__VA_ARGS__, ST_U64, u64, uint64_t, u64, I) X(__VA_ARGS__, ST_F32, f32, float, f32, F)  \
    X(__VA_ARGS__, ST_F64, f64, double, f64, F)

/* The value of `v` (source kind first, destination kind second) as TD, named DN. */
#define ST_CONV_B_B(v, TD, DN) ((uint8_t)((v) != 0))
#define ST_CONV_B_I(v, TD, DN) ((TD)((v) != 0))
#define ST_CONV_B_F(v, TD, DN) ((TD)((v) != 0))
#define ST_CONV_I_B(v, TD, DN) ((uint8_t)((v) != 0))
#define ST_CONV_I_I(v, TD, DN) ((TD)(v))
#define ST_CONV_I_F(v, TD, DN) ((TD)(v))
#define ST_CONV_F_B(v, TD, DN) ((uint8_t)((v) != 0))
#define ST_CONV_F_I(v, TD, DN) st_sat_##DN((double)(v))
#define ST_CONV_F_F(v, TD, DN) ((TD)(v))

#define ST_DEF_REAL_PAIR(SUFFIX, ATTR, SC, SN, TS, SL, SK, DC, DN, TD, DL, DK)                \
    ST_DEF_PLAIN(st_r_##SN##_##DN, SUFFIX, ATTR, TS, SL, TD, DL, ST_CONV_##SK##_##DK(v, TD, DN))
#define ST_DEF_REALS_FROM(SUFFIX, ATTR, SC, SN, TS, SL, SK)                                   \
    ST_REAL_TYPES_INNER(ST_DEF_REAL_PAIR, SUFFIX, ATTR, SC, SN, TS, SL, SK)
#define ST_DEF_REALS(SUFFIX, ATTR) ST_REAL_TYPES_OUTER(ST_DEF_REALS_FROM, SUFFIX, ATTR)

ST_DEF_REALS(base, )
#if ST_X86_GNU
ST_DEF_REALS(avx2, __attribute__((target("avx2"))))
#endif

/* The row of a plain cast between real types s and d (type codes, types.h), at a SIMD level:
 * [avx2][s][d], NULL where there is none (float16, bfloat16, complex). */
#define ST_REAL_ENTRY(SUFFIX, SC, SN, TS, SL, SK, DC, DN, TD, DL, DK)                         \
    [DC] = st_r_##SN##_##DN##_##SUFFIX,
#define ST_REAL_ROW(SUFFIX, SC, SN, TS, SL, SK)                                               \
    [SC] = {ST_REAL_TYPES_INNER(ST_REAL_ENTRY, SUFFIX, SC, SN, TS, SL, SK)},
#define ST_REAL_TABLE(SUFFIX) {ST_REAL_TYPES_OUTER(ST_REAL_ROW, SUFFIX)}
static st_fused_fn const st_real_rows[2][ST_NTYPES][ST_NTYPES] = {
    ST_REAL_TABLE(base),
#if ST_X86_GNU
    ST_REAL_TABLE(avx2),
#else
    ST_REAL_TABLE(base),
#endif
};

/* A bfloat16 or float16 element at p as the float32 it is (exact). */
static inline float st_ld_bf16f(const char *p) { return st_bf16_to_f32(st_ld_u16(p)); }
static inline float st_ld_f16f(const char *p) { return st_f16_to_f32(st_ld_u16(p)); }

#define ST_DEF_FUSED(SUFFIX, ATTR)                                                            \
    ATTR static void st_u8_f32_##SUFFIX(char *d, const char *s, st_idx n, const void *scale, \
                                        const void *shift, st_idx ps)                        \
    {                                                                                         \
        ST_AFFINE_BODY(st_ld_u8, 1, st_st_f32(d + 4 * i, t))                                  \
    }                                                                                         \
    ATTR static void st_i8_f32_##SUFFIX(char *d, const char *s, st_idx n, const void *scale, \
                                        const void *shift, st_idx ps)                        \
    {                                                                                         \
        ST_AFFINE_BODY(st_ld_i8, 1, st_st_f32(d + 4 * i, t))                                  \
    }                                                                                         \
    ATTR static void st_f32_f32_##SUFFIX(char *d, const char *s, st_idx n,                   \
                                         const void *scale, const void *shift, st_idx ps)    \
    {                                                                                         \
        ST_AFFINE_BODY(st_ld_f32, 4, st_st_f32(d + 4 * i, t))                                 \
    }                                                                                         \
    ATTR static void st_f32_f32_div_##SUFFIX(char *d, const char *s, st_idx n,               \
                                             const void *scale, const void *shift,           \
                                             st_idx ps)                                      \
    {                                                                                         \
        ST_DIV_BODY                                                                           \
    }                                                                                         \
    ATTR static void st_bf16_f32_##SUFFIX(char *d, const char *s, st_idx n,                  \
                                          const void *scale, const void *shift, st_idx ps)   \
    {                                                                                         \
        (void)scale; (void)shift; (void)ps;                                                   \
        for (st_idx i = 0; i < n; i++)                                                       \
            st_st_u32(d + 4 * i, (uint32_t)st_ld_u16(s + 2 * i) << 16);                       \
    }                                                                                         \
    ATTR static void st_a_bf16_f32_##SUFFIX(char *d, const char *s, st_idx n,                \
                                            const void *scale, const void *shift, st_idx ps) \
    {                                                                                         \
        ST_AFFINE_BODY(st_ld_bf16f, 2, st_st_f32(d + 4 * i, t))                               \
    }

ST_DEF_FUSED(base, )

static void st_f32_bf16_base(char *d, const char *s, st_idx n, const void *scale,
                             const void *shift, st_idx ps)
{
    (void)scale; (void)shift; (void)ps;
    for (st_idx i = 0; i < n; i++) st_st_u16(d + 2 * i, st_f32_to_bf16(st_ld_f32(s + 4 * i)));
}

#if ST_X86_GNU
ST_DEF_FUSED(avx2, __attribute__((target("avx2"))))

/* 8 floats rounded as torch rounds to bfloat16 (st_f32_to_bf16: to nearest even, NaN ->
 * 0x7fc0), each result in the high half of its 32-bit item (the low half is left over); the
 * tiled conversions (convert_tiles.h) use it too. */
__attribute__((target("avx2"))) static inline __attribute__((always_inline)) __m256i
st_bf16_high(__m256 x)
{
    const __m256i u = _mm256_castps_si256(x);
    const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    const __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(odd, _mm256_set1_epi32(0x7fff)));
    return _mm256_blendv_epi8(r, _mm256_set1_epi32(0x7fc00000),
                              _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_UNORD_Q)));
}

/* float32 -> bfloat16, 16 at a time: the compiler's vectorisation of the scalar rounding ran
 * at a quarter of the float16 cast's speed in the L2 (23 against 99 GB/s on an Intel Xeon);
 * written out, the two halves' high 16 bits are packed by one unsigned-saturating pack (each
 * is at most 0xffff after the shift, so nothing saturates) and put back in order across the
 * lanes by one permute. */
__attribute__((target("avx2"))) static void st_f32_bf16_avx2(char *d, const char *s, st_idx n,
                                                             const void *scale,
                                                             const void *shift, st_idx ps)
{
    st_idx i = 0;
    (void)scale; (void)shift; (void)ps;
    for (; i + 16 <= n; i += 16) {
        const __m256i a = _mm256_srli_epi32(
            st_bf16_high(_mm256_loadu_ps((const float *)(const void *)(s + 4 * i))), 16);
        const __m256i b = _mm256_srli_epi32(
            st_bf16_high(_mm256_loadu_ps((const float *)(const void *)(s + 4 * i + 32))), 16);
        _mm256_storeu_si256((__m256i *)(void *)(d + 2 * i),
                            _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xD8));
    }
    for (; i < n; i++) st_st_u16(d + 2 * i, st_f32_to_bf16(st_ld_f32(s + 4 * i)));
}

/* float32 <-> float16 with F16C: 8 at a time (round to nearest even, as the portable code). */
__attribute__((target("avx2,f16c"))) static void st_f32_f16_f16c(char *d, const char *s,
                                                                 st_idx n, const void *scale,
                                                                 const void *shift, st_idx ps)
{
    st_idx i = 0;
    (void)scale; (void)shift; (void)ps;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps((const float *)(const void *)(s + 4 * i));
        _mm_storeu_si128((__m128i *)(void *)(d + 2 * i),
                         _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
    for (; i < n; i++) st_st_u16(d + 2 * i, st_f32_to_f16(st_ld_f32(s + 4 * i)));
}

__attribute__((target("avx2,f16c"))) static void st_f16_f32_f16c(char *d, const char *s,
                                                                 st_idx n, const void *scale,
                                                                 const void *shift, st_idx ps)
{
    st_idx i = 0;
    (void)scale; (void)shift; (void)ps;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128((const __m128i *)(const void *)(s + 2 * i));
        _mm256_storeu_ps((float *)(void *)(d + 4 * i), _mm256_cvtph_ps(h));
    }
    for (; i < n; i++) st_st_f32(d + 4 * i, st_f16_to_f32(st_ld_u16(s + 2 * i)));
}
#endif

static void st_f32_f16_base(char *d, const char *s, st_idx n, const void *scale,
                            const void *shift, st_idx ps)
{
    (void)scale; (void)shift; (void)ps;
    for (st_idx i = 0; i < n; i++) st_st_u16(d + 2 * i, st_f32_to_f16(st_ld_f32(s + 4 * i)));
}

static void st_f16_f32_base(char *d, const char *s, st_idx n, const void *scale,
                            const void *shift, st_idx ps)
{
    (void)scale; (void)shift; (void)ps;
    for (st_idx i = 0; i < n; i++) st_st_f32(d + 4 * i, st_f16_to_f32(st_ld_u16(s + 2 * i)));
}

/* ---- float32 <-> float16 / bfloat16 with an affine step in float32 --------------------------
 * The generic path's values (t = x * scale, then t + shift, each rounded to float32; a half
 * float read exactly, written rounded to nearest even from t; bfloat16 as torch rounds it), a
 * vector at a time: through the generic path's scalar loads and stores these ran 11x slower
 * than the plain casts (4.5x slower than torch's copy_ then mul_). */
static void st_a_f16_f32_base(char *d, const char *s, st_idx n, const void *scale,
                              const void *shift, st_idx ps)
{
    ST_AFFINE_BODY(st_ld_f16f, 2, st_st_f32(d + 4 * i, t))
}

static void st_a_f32_f16_base(char *d, const char *s, st_idx n, const void *scale,
                              const void *shift, st_idx ps)
{
    ST_AFFINE_BODY(st_ld_f32, 4, st_st_u16(d + 2 * i, st_f32_to_f16(t)))
}

static void st_a_f32_bf16_base(char *d, const char *s, st_idx n, const void *scale,
                               const void *shift, st_idx ps)
{
    ST_AFFINE_BODY(st_ld_f32, 4, st_st_u16(d + 2 * i, st_f32_to_bf16(t)))
}

#if ST_X86_GNU
/* t = x * scale + shift for the 8 elements from i: one scale and shift (ps 0, a0 and c0) or one
 * each (ps 1). */
__attribute__((target("avx2"))) static inline __attribute__((always_inline)) __m256
st_affine8(__m256 x, const float *a, const float *c, st_idx i, st_idx ps, __m256 a0, __m256 c0)
{
    const __m256 sa = ps ? _mm256_loadu_ps(a + i) : a0;
    const __m256 sc = ps ? _mm256_loadu_ps(c + i) : c0;
    return _mm256_add_ps(_mm256_mul_ps(x, sa), sc);
}

/* The row's one scale and shift, broadcast (ps 0); with one per element (ps 1) st_affine8 loads
 * them at each i instead. */
#define ST_AFFINE_SPLAT                                                                       \
    const float *a = (const float *)scale, *c = (const float *)shift;                         \
    const __m256 a0 = ps == 0 ? _mm256_set1_ps(a[0]) : _mm256_setzero_ps();                   \
    const __m256 c0 = ps == 0 ? _mm256_set1_ps(c[0]) : _mm256_setzero_ps();

__attribute__((target("avx2,f16c"))) static void st_a_f16_f32_f16c(char *d, const char *s,
                                                                   st_idx n,
                                                                   const void *scale,
                                                                   const void *shift,
                                                                   st_idx ps)
{
    ST_AFFINE_SPLAT
    st_idx i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 x =
            _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(s + 2 * i)));
        _mm256_storeu_ps((float *)(void *)(d + 4 * i), st_affine8(x, a, c, i, ps, a0, c0));
    }
    st_a_f16_f32_base(d + 4 * i, s + 2 * i, n - i, a + i * ps, c + i * ps, ps);   /* tail */
}

__attribute__((target("avx2,f16c"))) static void st_a_f32_f16_f16c(char *d, const char *s,
                                                                   st_idx n,
                                                                   const void *scale,
                                                                   const void *shift,
                                                                   st_idx ps)
{
    ST_AFFINE_SPLAT
    st_idx i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 t = st_affine8(_mm256_loadu_ps((const float *)(const void *)(s + 4 * i)),
                                    a, c, i, ps, a0, c0);
        _mm_storeu_si128((__m128i *)(void *)(d + 2 * i),
                         _mm256_cvtps_ph(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
    st_a_f32_f16_base(d + 2 * i, s + 4 * i, n - i, a + i * ps, c + i * ps, ps);   /* tail */
}

__attribute__((target("avx2"))) static void st_a_f32_bf16_avx2(char *d, const char *s, st_idx n,
                                                               const void *scale,
                                                               const void *shift, st_idx ps)
{
    ST_AFFINE_SPLAT
    st_idx i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256 x = st_affine8(_mm256_loadu_ps((const float *)(const void *)(s + 4 * i)),
                                    a, c, i, ps, a0, c0);
        const __m256 y = st_affine8(
            _mm256_loadu_ps((const float *)(const void *)(s + 4 * i + 32)), a, c, i + 8, ps,
            a0, c0);
        const __m256i lo = _mm256_srli_epi32(st_bf16_high(x), 16);
        const __m256i hi = _mm256_srli_epi32(st_bf16_high(y), 16);
        _mm256_storeu_si256((__m256i *)(void *)(d + 2 * i),
                            _mm256_permute4x64_epi64(_mm256_packus_epi32(lo, hi), 0xD8));
    }
    st_a_f32_bf16_base(d + 2 * i, s + 4 * i, n - i, a + i * ps, c + i * ps, ps);  /* tail */
}
#undef ST_AFFINE_SPLAT
#endif

/* ---- float32 -> 8-bit integers: quantizing and saturating casts, in intrinsics ------------------
 * The compiler does not vectorise the saturate-and-round of a float into a byte, so these are
 * written out: NaN -> 0 (an ordered-compare mask), clamp to the range, convert (rounding to
 * nearest even by the default MXCSR mode for the affine step, truncating for a plain cast), and
 * pack with saturation. `affine`, `sign` are compile-time constants of each wrapper. */

ST_INLINE int32_t st_f32_byte_scalar(float t, int affine, int sign)
{
    double v = affine ? rint((double)t) : (double)t;
    return sign ? st_trunc_i8(v) : st_trunc_u8(v);
}

ST_INLINE void st_f32_bytes_sse2(char *d, const char *s, st_idx n, const void *scale,
                                 const void *shift, st_idx ps, int affine, int sign)
{
    const float *a = (const float *)scale, *c = (const float *)shift;
    st_idx i = 0;
#if ST_HAVE_SSE2
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
    static void NAME##_##SUFFIX(char *d, const char *s, st_idx n, const void *scale,         \
                                const void *shift, st_idx ps)                                \
    {                                                                                         \
        BODY(d, s, n, scale, shift, ps, AFFINE, SIGN);                                        \
    }
ST_DEF_BYTES(st_f32_u8, 1, 0, base, st_f32_bytes_sse2)
ST_DEF_BYTES(st_f32_i8, 1, 1, base, st_f32_bytes_sse2)
ST_DEF_BYTES(st_p_f32_u8, 0, 0, base, st_f32_bytes_sse2)
ST_DEF_BYTES(st_p_f32_i8, 0, 1, base, st_f32_bytes_sse2)

#if ST_X86_GNU
/* AVX2: 32 floats to 32 bytes a round; the packs work per 128-bit lane, so a final
 * permutation puts the four 8-byte groups back in order. */
__attribute__((target("avx2"))) static inline void
st_f32_bytes_avx2(char *d, const char *s, st_idx n, const void *scale, const void *shift,
                  st_idx ps, int affine, int sign)
{
    const float *a = (const float *)scale, *c = (const float *)shift;
    st_idx i = 0;
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
__attribute__((target("avx2"))) static void st_f32_u8_avx2(char *d, const char *s, st_idx n,
    const void *scale, const void *shift, st_idx ps)
{ st_f32_bytes_avx2(d, s, n, scale, shift, ps, 1, 0); }
__attribute__((target("avx2"))) static void st_f32_i8_avx2(char *d, const char *s, st_idx n,
    const void *scale, const void *shift, st_idx ps)
{ st_f32_bytes_avx2(d, s, n, scale, shift, ps, 1, 1); }
__attribute__((target("avx2"))) static void st_p_f32_u8_avx2(char *d, const char *s, st_idx n,
    const void *scale, const void *shift, st_idx ps)
{ st_f32_bytes_avx2(d, s, n, scale, shift, ps, 0, 0); }
__attribute__((target("avx2"))) static void st_p_f32_i8_avx2(char *d, const char *s, st_idx n,
    const void *scale, const void *shift, st_idx ps)
{ st_f32_bytes_avx2(d, s, n, scale, shift, ps, 0, 1); }
#endif

#endif /* STRIDED_KERNELS_CVT_FUSED_H */
