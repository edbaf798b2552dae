/* 4-bit elements (int4, uint4): packing bytes of their carrier (one value per byte: int8
 * sign-extended, uint8) into nibbles and unpacking them back. The one memory format of strided
 * (MegEngine, CUTLASS, oneDNN, ONNX, DLPack): element 2k in bits 0-3 of byte k, element 2k+1
 * in bits 4-7. The conversion engine moves 4-bit elements through a box of carrier bytes
 * (_convert.pyx, "4-bit elements"); these are the two ends of that box.
 *
 * Nibble `first` (0: low, 1: high) of byte d[0] is the first element: a run may start or end
 * in the middle of a byte, whose other nibble is kept as it was (read, then written back).
 * SSE2 moves 32 elements (16 bytes) a round; the rest is scalar. */
#ifndef STRIDED_KERNELS_NIBBLES_H
#define STRIDED_KERNELS_NIBBLES_H

#include "common.h"
#include "cvt_fused.h"   /* st_cvt_has_avx2, st_ld_f32, st_f32_byte_scalar: the rows' rounding */
#include <stdint.h>
#include <string.h>

#if ST_HAVE_SSE2
#include <emmintrin.h>
#endif

/* How a carrier byte becomes a nibble: ST_NIB_WRAP keeps its low 4 bits (numpy's and
 * ml_dtypes' modular integer cast), ST_NIB_SAT_I4 / _U4 saturate to [-8, 7] / [0, 15] first
 * (the affine step's saturate: the carrier saturated to 8 bits already, so saturating it again
 * to 4 bits is the saturate of the exact value). */
enum { ST_NIB_WRAP = 0, ST_NIB_SAT_I4 = 1, ST_NIB_SAT_U4 = 2 };

ST_INLINE unsigned st_nib_of(const char *s, int how)
{
    int v;
    if (how == ST_NIB_SAT_I4) {
        v = (signed char)*s;
        v = v < -8 ? -8 : v > 7 ? 7 : v;
    } else if (how == ST_NIB_SAT_U4) {
        v = (unsigned char)*s;
        v = v > 15 ? 15 : v;
    } else {
        v = (unsigned char)*s;
    }
    return (unsigned)v & 15u;
}

#if ST_HAVE_SSE2
/* 32 carrier bytes -> 16 packed bytes */
ST_INLINE __m128i st_nib_pack32(__m128i a, __m128i b, int how)
{
    const __m128i low = _mm_set1_epi16(0x000F), high = _mm_set1_epi16(0x00F0);
    if (how == ST_NIB_SAT_I4) {   /* signed bytes compared as unsigned: flip the sign bit */
        const __m128i flip = _mm_set1_epi8((char)0x80);
        a = _mm_xor_si128(_mm_min_epu8(_mm_max_epu8(_mm_xor_si128(a, flip),
                                                    _mm_set1_epi8(0x78)), _mm_set1_epi8((char)0x87)),
                          flip);
        b = _mm_xor_si128(_mm_min_epu8(_mm_max_epu8(_mm_xor_si128(b, flip),
                                                    _mm_set1_epi8(0x78)), _mm_set1_epi8((char)0x87)),
                          flip);
    } else if (how == ST_NIB_SAT_U4) {
        a = _mm_min_epu8(a, _mm_set1_epi8(15));
        b = _mm_min_epu8(b, _mm_set1_epi8(15));
    }
    /* each 16-bit item holds an element pair: the even one in its low byte, the odd one in its
     * high byte; (item >> 4) & 0xF0 brings the odd one's low nibble to bits 4-7 */
    a = _mm_or_si128(_mm_and_si128(a, low), _mm_and_si128(_mm_srli_epi16(a, 4), high));
    b = _mm_or_si128(_mm_and_si128(b, low), _mm_and_si128(_mm_srli_epi16(b, 4), high));
    return _mm_packus_epi16(a, b);
}
#endif

/* n carrier bytes s[0..n) into the nibbles first .. first + n - 1 counted from d[0] */
static void st_pack4(unsigned char *d, int first, const char *s, st_idx n, int how)
{
    st_idx i = 0, k = 0;
    if (n <= 0)
        return;
    if (first) {
        d[0] = (unsigned char)((d[0] & 0x0Fu) | (st_nib_of(s, how) << 4));
        d++;
        i = 1;
    }
#if ST_HAVE_SSE2
    for (; i + 32 <= n; i += 32, k += 16) {
        __m128i a = _mm_loadu_si128((const __m128i *)(s + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(s + i + 16));
        _mm_storeu_si128((__m128i *)(d + k), st_nib_pack32(a, b, how));
    }
#endif
    for (; i + 2 <= n; i += 2, k++)
        d[k] = (unsigned char)(st_nib_of(s + i, how) | (st_nib_of(s + i + 1, how) << 4));
    if (i < n)   /* the last element in a low nibble: its byte's high nibble stays */
        d[k] = (unsigned char)((d[k] & 0xF0u) | st_nib_of(s + i, how));
}

ST_INLINE char st_nib_value(unsigned nib, int sign)
{
    return (char)(sign ? (int)((nib ^ 8u)) - 8 : (int)nib);
}

/* the nibbles first .. first + n - 1 counted from s[0] into n carrier bytes d[0..n), sign-
 * extended when `sign` (int4) */
static void st_unpack4(char *d, const unsigned char *s, int first, st_idx n, int sign)
{
    st_idx i = 0, k = 0;
    if (n <= 0)
        return;
    if (first) {
        d[0] = st_nib_value(s[0] >> 4, sign);
        s++;
        i = 1;
    }
#if ST_HAVE_SSE2
    {
        const __m128i low = _mm_set1_epi8(0x0F), eight = _mm_set1_epi8(8);
        for (; i + 32 <= n; i += 32, k += 16) {
            __m128i v = _mm_loadu_si128((const __m128i *)(s + k));
            __m128i lo = _mm_and_si128(v, low);
            __m128i hi = _mm_and_si128(_mm_srli_epi16(v, 4), low);
            __m128i a = _mm_unpacklo_epi8(lo, hi), b = _mm_unpackhi_epi8(lo, hi);
            if (sign) {   /* (x ^ 8) - 8 sign-extends a nibble */
                a = _mm_sub_epi8(_mm_xor_si128(a, eight), eight);
                b = _mm_sub_epi8(_mm_xor_si128(b, eight), eight);
            }
            _mm_storeu_si128((__m128i *)(d + i), a);
            _mm_storeu_si128((__m128i *)(d + i + 16), b);
        }
    }
#endif
    for (; i + 2 <= n; i += 2, k++) {
        d[i] = st_nib_value(s[k] & 15u, sign);
        d[i + 1] = st_nib_value(s[k] >> 4, sign);
    }
    if (i < n)
        d[i] = st_nib_value(s[k] & 15u, sign);
}

/* One element: nibble `at` (a nibble index from `base`, any sign) */
ST_INLINE char st_nib_get(const unsigned char *base, int64_t at, int sign)
{
    unsigned char b = base[at >> 1];   /* (arithmetic shift: floor, for negative `at` too) */
    return st_nib_value((at & 1) ? (unsigned)(b >> 4) : (unsigned)(b & 15u), sign);
}

ST_INLINE void st_nib_put(unsigned char *base, int64_t at, const char *value, int how)
{
    unsigned char *b = base + (at >> 1);
    unsigned nib = st_nib_of(value, how);
    *b = (unsigned char)((at & 1) ? ((*b & 0x0Fu) | (nib << 4)) : ((*b & 0xF0u) | nib));
}

/* Rows of element pairs: byte p of d gets element p of row `even` in its low nibble and element
 * p of row `odd` in its high nibble (two channel planes of a box in the source's order, before
 * the bytes are transposed into pixels: NCHW -> NCHW64's pack). */
static void st_pack4_rows(unsigned char *d, const char *even, const char *odd, st_idx n,
                          int how)
{
    st_idx i = 0;
#if ST_HAVE_SSE2
    const __m128i low = _mm_set1_epi8(0x0F), high = _mm_set1_epi8((char)0xF0);
    const __m128i flip = _mm_set1_epi8((char)0x80);
    for (; i + 16 <= n; i += 16) {
        __m128i a = _mm_loadu_si128((const __m128i *)(even + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(odd + i));
        if (how == ST_NIB_SAT_I4) {
            a = _mm_xor_si128(_mm_min_epu8(_mm_max_epu8(_mm_xor_si128(a, flip),
                              _mm_set1_epi8(0x78)), _mm_set1_epi8((char)0x87)), flip);
            b = _mm_xor_si128(_mm_min_epu8(_mm_max_epu8(_mm_xor_si128(b, flip),
                              _mm_set1_epi8(0x78)), _mm_set1_epi8((char)0x87)), flip);
        } else if (how == ST_NIB_SAT_U4) {
            a = _mm_min_epu8(a, _mm_set1_epi8(15));
            b = _mm_min_epu8(b, _mm_set1_epi8(15));
        }
        a = _mm_and_si128(a, low);
        b = _mm_and_si128(_mm_slli_epi16(b, 4), high);
        _mm_storeu_si128((__m128i *)(d + i), _mm_or_si128(a, b));
    }
#endif
    for (; i < n; i++)
        d[i] = (unsigned char)(st_nib_of(even + i, how) | (st_nib_of(odd + i, how) << 4));
}

/* The inverse: the low nibbles of s[0..n) into row `even`, the high ones into row `odd` */
static void st_unpack4_rows(char *even, char *odd, const unsigned char *s, st_idx n, int sign)
{
    st_idx i = 0;
#if ST_HAVE_SSE2
    const __m128i low = _mm_set1_epi8(0x0F), eight = _mm_set1_epi8(8);
    for (; i + 16 <= n; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(s + i));
        __m128i a = _mm_and_si128(v, low);
        __m128i b = _mm_and_si128(_mm_srli_epi16(v, 4), low);
        if (sign) {
            a = _mm_sub_epi8(_mm_xor_si128(a, eight), eight);
            b = _mm_sub_epi8(_mm_xor_si128(b, eight), eight);
        }
        _mm_storeu_si128((__m128i *)(even + i), a);
        _mm_storeu_si128((__m128i *)(odd + i), b);
    }
#endif
    for (; i < n; i++) {
        even[i] = st_nib_value(s[i] & 15u, sign);
        odd[i] = st_nib_value(s[i] >> 4, sign);
    }
}

/* ---- 4-bit pairs straight to two float32 planes, through tables ------------------------------
 * The dequantize of the planes route (NCHW64 int4 -> NCHW float32): byte i of s holds pixel i of
 * plane `even` (low nibble) and of plane `odd` (high nibble). A nibble has 16 values, so each
 * plane's conversion (any mode: plain, affine, divide) is a table of 16 float32 results, made
 * by the row kernel itself from the 16 carrier values (the same values, bit for bit, as
 * converting the unpacked carriers); one lookup then replaces the unpack, its carrier rows and
 * their conversion. `stream`: whole 32-byte runs of both planes leave with streaming stores
 * (destinations far larger than the cache; the caller fences). The kernels are
 * st_unpack4_f32_fn. */
/* The 16 values of a nibble as its carrier byte holds them, by nibble: int4, uint4 */
static const char st_nib_int4[16] = {0, 1, 2, 3, 4, 5, 6, 7, -8, -7, -6, -5, -4, -3, -2, -1};
static const char st_nib_uint4[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
static const char *const st_nib_carriers[2] = {st_nib_int4, st_nib_uint4};

typedef void (*st_unpack4_f32_fn)(char *even, char *odd, const unsigned char *s, st_idx n,
                                   const float *te, const float *to, int stream);

static void st_unpack4_f32_base(char *even, char *odd, const unsigned char *s, st_idx n,
                                const float *te, const float *to, int stream)
{
    (void)stream;
    for (st_idx i = 0; i < n; i++) {
        memcpy(even + 4 * i, te + (s[i] & 15u), 4);
        memcpy(odd + 4 * i, to + (s[i] >> 4), 4);
    }
}

#if ST_X86_GNU
/* 8 pixels a round: the bytes widened to 32-bit lanes, a lane's nibble picks entry `nib & 7` of
 * the table's low or high half (two permutes), bit 3 (moved to the sign bit) chooses the half */
__attribute__((target("avx2"))) ST_INLINE __m256 st_nib_lookup(__m256i nib, __m256 lo,
                                                               __m256 hi)
{
    return _mm256_blendv_ps(_mm256_permutevar8x32_ps(lo, nib), _mm256_permutevar8x32_ps(hi, nib),
                            _mm256_castsi256_ps(_mm256_slli_epi32(nib, 28)));
}

__attribute__((target("avx2"))) static void st_unpack4_f32_avx2(char *even, char *odd,
                                                               const unsigned char *s,
                                                               st_idx n, const float *te,
                                                               const float *to, int stream)
{
    const __m256 e0 = _mm256_loadu_ps(te), e1 = _mm256_loadu_ps(te + 8);
    const __m256 o0 = _mm256_loadu_ps(to), o1 = _mm256_loadu_ps(to + 8);
    const __m256i low = _mm256_set1_epi32(15);
    st_idx i = 0;
    /* streamed: first up to the pixel where both planes are 32-byte aligned (they may never
     * be: then the stores stay plain) */
    if (stream) {
        while (i < n && (((uintptr_t)(even + 4 * i)) & 31)) {
            memcpy(even + 4 * i, te + (s[i] & 15u), 4);
            memcpy(odd + 4 * i, to + (s[i] >> 4), 4);
            i++;
        }
        stream = !(((uintptr_t)(odd + 4 * i)) & 31);
    }
    for (; i + 8 <= n; i += 8) {
        const __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(s + i)));
        const __m256 a = st_nib_lookup(_mm256_and_si256(v, low), e0, e1);
        const __m256 b = st_nib_lookup(_mm256_srli_epi32(v, 4), o0, o1);
        if (stream) {
            _mm256_stream_ps((float *)(void *)(even + 4 * i), a);
            _mm256_stream_ps((float *)(void *)(odd + 4 * i), b);
        } else {
            _mm256_storeu_ps((float *)(void *)(even + 4 * i), a);
            _mm256_storeu_ps((float *)(void *)(odd + 4 * i), b);
        }
    }
    st_unpack4_f32_base(even + 4 * i, odd + 4 * i, s + i, n - i, te, to, 0);
}
#endif

/* ---- two float32 planes straight to 4-bit pairs --------------------------------------------
 * The quantize of the planes route (NCHW float32 -> NCHW64 int4 / uint4, the affine step in
 * float32): byte i of d gets pixel i of plane `even` in its low nibble and of plane `odd` in its
 * high one, each t = x * a + c (two roundings, as the rows), rounded half to even and saturated
 * to [-8, 7] (sign) or [0, 15], NaN -> 0: the values of converting to the carrier (saturated to
 * 8 bits) and saturating that to 4 bits, without the carrier rows and the packing pass. The
 * kernels are st_pack4_f32_fn. */
typedef void (*st_pack4_f32_fn)(unsigned char *d, const char *even, const char *odd, st_idx n,
                                float ae, float ce, float ao, float co, int sign);

ST_INLINE unsigned st_nib_quantized(float x, float a, float c, int sign)
{
    float t = x * a;
    char carrier;
    t = t + c;
    carrier = (char)st_f32_byte_scalar(t, 1, sign);
    return st_nib_of(&carrier, sign ? ST_NIB_SAT_I4 : ST_NIB_SAT_U4);
}

static void st_pack4_f32_base(unsigned char *d, const char *even, const char *odd, st_idx n,
                              float ae, float ce, float ao, float co, int sign)
{
    for (st_idx i = 0; i < n; i++)
        d[i] = (unsigned char)(st_nib_quantized(st_ld_f32(even + 4 * i), ae, ce, sign)
                               | (st_nib_quantized(st_ld_f32(odd + 4 * i), ao, co, sign) << 4));
}

#if ST_X86_GNU
/* 8 pixels of a plane: affine, NaN -> 0, clamped (then rounding cannot leave the range),
 * rounded half to even by the conversion (the default rounding mode), as 32-bit nibbles */
__attribute__((target("avx2"))) ST_INLINE __m256i st_nib_round(const char *p, __m256 a,
                                                               __m256 c, __m256 lo, __m256 hi)
{
    __m256 t = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps((const float *)(const void *)p), a),
                             c);
    t = _mm256_and_ps(t, _mm256_cmp_ps(t, t, _CMP_ORD_Q));
    t = _mm256_min_ps(_mm256_max_ps(t, lo), hi);
    return _mm256_and_si256(_mm256_cvtps_epi32(t), _mm256_set1_epi32(15));
}

/* 16 pixels a round: two rounds of 8 bytes as 32-bit lanes, packed (per 128-bit lane) to
 * bytes, whose four 4-byte groups a permutation puts back in order */
__attribute__((target("avx2"))) static void st_pack4_f32_avx2(unsigned char *d, const char *even,
                                                             const char *odd, st_idx n,
                                                             float ae, float ce, float ao,
                                                             float co, int sign)
{
    const __m256 A0 = _mm256_set1_ps(ae), C0 = _mm256_set1_ps(ce);
    const __m256 A1 = _mm256_set1_ps(ao), C1 = _mm256_set1_ps(co);
    const __m256 lo = _mm256_set1_ps(sign ? -8.0f : 0.0f), hi = _mm256_set1_ps(sign ? 7.0f : 15.0f);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    st_idx i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256i b[2];
        for (int k = 0; k < 2; k++) {
            const __m256i e = st_nib_round(even + 4 * (i + 8 * k), A0, C0, lo, hi);
            const __m256i o = st_nib_round(odd + 4 * (i + 8 * k), A1, C1, lo, hi);
            b[k] = _mm256_or_si256(e, _mm256_slli_epi32(o, 4));
        }
        __m256i w = _mm256_packus_epi32(b[0], b[1]);
        w = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(w, w), order);
        _mm_storeu_si128((__m128i *)(void *)(d + i), _mm256_castsi256_si128(w));
    }
    st_pack4_f32_base(d + i, even + 4 * i, odd + 4 * i, n - i, ae, ce, ao, co, sign);
}
#endif

/* The kernel at a SIMD level (2: AVX2 where the CPU has it). */
static st_pack4_f32_fn st_pack4_f32(int simd)
{
#if ST_X86_GNU
    if (simd >= 2 && st_cvt_has_avx2) return st_pack4_f32_avx2;
#endif
    (void)simd;
    return st_pack4_f32_base;
}

/* The kernel at a SIMD level (2: AVX2 where the CPU has it). */
static st_unpack4_f32_fn st_unpack4_f32(int simd)
{
#if ST_X86_GNU
    if (simd >= 2 && st_cvt_has_avx2) return st_unpack4_f32_avx2;
#endif
    (void)simd;
    return st_unpack4_f32_base;
}

#endif
