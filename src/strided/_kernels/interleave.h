/* Interleaves: byte planes into dense pixels (C = 2, 3, 4: RGB, RGBA, NCHW4 lanes), the
 * small-C case of a byte transpose, with SSE2 unpacks and an SSSE3 shuffle for C = 3. */
#ifndef STRIDED_KERNELS_INTERLEAVE_H
#define STRIDED_KERNELS_INTERLEAVE_H

#include "common.h"
#include "transpose.h"

/* ---- byte planes into dense pixels: C = 2, 3, 4 (RGB, RGBA, NCHW4 lanes) ------------------ */
/* dst[r * C + c] = src[r + c * sq]. 16 pixels per step: C = 2 and 4 interleave with SSE2
 * unpacks; C = 3 needs byte shuffles (SSSE3), chosen at run time, so the wheel still runs on
 * any x86-64. Returns the number of pixels done; the caller finishes the tail. */
#if ST_HAVE_SSE2 && ST_X86_GNU
#include <tmmintrin.h>
#define ST_HAVE_SSSE3_DISPATCH 1

__attribute__((target("ssse3")))
static st_idx st_rgb_ssse3(char *d, const char *s, st_idx sq, st_idx R)
{
    /* mask[3 * v + ch], byte k: output byte 16v + k holds pixel (16v + k) / 3, channel
     * (16v + k) % 3; -1 (high bit set) zeroes the byte */
    const __m128i mask[9] = {
        _mm_setr_epi8(0, -1, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, 4, -1, -1, 5),
        _mm_setr_epi8(-1, 0, -1, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, 4, -1, -1),
        _mm_setr_epi8(-1, -1, 0, -1, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, 4, -1),
        _mm_setr_epi8(-1, -1, 6, -1, -1, 7, -1, -1, 8, -1, -1, 9, -1, -1, 10, -1),
        _mm_setr_epi8(5, -1, -1, 6, -1, -1, 7, -1, -1, 8, -1, -1, 9, -1, -1, 10),
        _mm_setr_epi8(-1, 5, -1, -1, 6, -1, -1, 7, -1, -1, 8, -1, -1, 9, -1, -1),
        _mm_setr_epi8(-1, 11, -1, -1, 12, -1, -1, 13, -1, -1, 14, -1, -1, 15, -1, -1),
        _mm_setr_epi8(-1, -1, 11, -1, -1, 12, -1, -1, 13, -1, -1, 14, -1, -1, 15, -1),
        _mm_setr_epi8(10, -1, -1, 11, -1, -1, 12, -1, -1, 13, -1, -1, 14, -1, -1, 15),
    };
    st_idx r;
    int v;
    for (r = 0; r + 16 <= R; r += 16) {
        __m128i p0 = ST_LOADU(s + r), p1 = ST_LOADU(s + sq + r), p2 = ST_LOADU(s + 2 * sq + r);
        for (v = 0; v < 3; v++)
            ST_STOREU(d + 3 * r + 16 * v,
                      _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(p0, mask[3 * v]),
                                                _mm_shuffle_epi8(p1, mask[3 * v + 1])),
                                   _mm_shuffle_epi8(p2, mask[3 * v + 2])));
    }
    return r;
}

/* The inverse: dense pixels of K = 2, 3, 4 bytes into K planes, 16 pixels per step:
 * dst[k * dp + c] = src[c * K + k]. Plane k gathers byte 16v + j of input vector v when
 * 16v + j = K * pixel + k: one shuffle per (vector, plane), OR-ed together. */
__attribute__((target("ssse3")))
static st_idx st_planes_ssse3(char *d, st_idx dp, const char *s, st_idx K, st_idx C)
{
    __m128i mask[4][4], in[4];
    st_idx c;
    int v, k, j;
    for (v = 0; v < K; v++)
        for (k = 0; k < K; k++) {
            char m[16];
            for (j = 0; j < 16; j++) {      /* output byte j is pixel j: input byte K*j + k */
                int at = (int)K * j + k;
                m[j] = (at / 16 == v) ? (char)(at % 16) : (char)0x80;
            }
            mask[v][k] = _mm_loadu_si128((const __m128i *)(const void *)m);
        }
    for (c = 0; c + 16 <= C; c += 16) {
        for (v = 0; v < K; v++) in[v] = ST_LOADU(s + c * K + 16 * v);
        for (k = 0; k < K; k++) {
            __m128i acc = _mm_shuffle_epi8(in[0], mask[0][k]);
            for (v = 1; v < K; v++) acc = _mm_or_si128(acc, _mm_shuffle_epi8(in[v], mask[v][k]));
            ST_STOREU(d + k * dp + c, acc);
        }
    }
    return c;
}

static int st_has_ssse3(void) { return st_simd >= 1; }
#else
#define ST_HAVE_SSSE3_DISPATCH 0
#endif

static st_idx st_interleave_bytes(char *d, const char *s, st_idx sq, st_idx R, st_idx C)
{
    st_idx r = 0;
#if ST_HAVE_SSE2
    if (C == 2) {
        for (; r + 16 <= R; r += 16) {
            __m128i a = ST_LOADU(s + r), b = ST_LOADU(s + sq + r);
            ST_STOREU(d + 2 * r, _mm_unpacklo_epi8(a, b));
            ST_STOREU(d + 2 * r + 16, _mm_unpackhi_epi8(a, b));
        }
    } else if (C == 4) {
        for (; r + 16 <= R; r += 16) {
            __m128i a = ST_LOADU(s + r), b = ST_LOADU(s + sq + r);
            __m128i c = ST_LOADU(s + 2 * sq + r), e = ST_LOADU(s + 3 * sq + r);
            __m128i ab0 = _mm_unpacklo_epi8(a, b), ab1 = _mm_unpackhi_epi8(a, b);
            __m128i ce0 = _mm_unpacklo_epi8(c, e), ce1 = _mm_unpackhi_epi8(c, e);
            ST_STOREU(d + 4 * r, _mm_unpacklo_epi16(ab0, ce0));
            ST_STOREU(d + 4 * r + 16, _mm_unpackhi_epi16(ab0, ce0));
            ST_STOREU(d + 4 * r + 32, _mm_unpacklo_epi16(ab1, ce1));
            ST_STOREU(d + 4 * r + 48, _mm_unpackhi_epi16(ab1, ce1));
        }
    }
#endif
#if ST_HAVE_SSSE3_DISPATCH
    if (C == 3 && st_has_ssse3()) r = st_rgb_ssse3(d, s, sq, R);
#endif
    return r;
}

#endif /* STRIDED_KERNELS_INTERLEAVE_H */
