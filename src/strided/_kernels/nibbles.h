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
#include <stdint.h>

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

#endif
