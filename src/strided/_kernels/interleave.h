/* Interleaves: byte planes into dense pixels (C = 2, 3, 4: RGB, RGBA, NCHW4 lanes), the
 * small-C case of a byte transpose, with SSE2 unpacks and an SSSE3 shuffle for C = 3; and the
 * inverse, deinterleaves: dense pixels of a few items into planes (HWC -> CHW images, NHWC ->
 * NCHW with few channels), the small-R case of a transpose, with SSE2 packs and unpacks for
 * two and four planes and byte shuffles (SSSE3, AVX2) for any pixel of up to 8 items. */
#ifndef STRIDED_KERNELS_INTERLEAVE_H
#define STRIDED_KERNELS_INTERLEAVE_H

#include "common.h"
#include "transpose.h"

/* ---- planes into dense pixels: C = 2, 3, 4 (RGB, RGBA, NCHW4 lanes) ---------------------- */
/* dst[r * C + c] = src[r + c * sq], items of 1 or 2 bytes (and 4 for C = 2). 16 bytes of each
 * plane per step: C = 2 and 4 interleave with SSE2 unpacks; C = 3 needs byte shuffles (SSSE3),
 * chosen at run time, so the wheel still runs on any x86-64. Returns the number of pixels
 * done; the caller finishes the tail. */
#if ST_HAVE_SSE2 && ST_X86_GNU
#include <tmmintrin.h>
#define ST_HAVE_SSSE3_DISPATCH 1

/* st_rgb_mask[3 * v + ch], byte k: output byte 16v + k of 16 pixels holds pixel (16v + k) / 3,
 * channel (16v + k) % 3, from byte (16v + k) / 3 of plane ch; -1 (high bit set) zeroes it */
static const int8_t st_rgb_mask[9][16] = {
    {0, -1, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, 4, -1, -1, 5},
    {-1, 0, -1, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, 4, -1, -1},
    {-1, -1, 0, -1, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, 4, -1},
    {-1, -1, 6, -1, -1, 7, -1, -1, 8, -1, -1, 9, -1, -1, 10, -1},
    {5, -1, -1, 6, -1, -1, 7, -1, -1, 8, -1, -1, 9, -1, -1, 10},
    {-1, 5, -1, -1, 6, -1, -1, 7, -1, -1, 8, -1, -1, 9, -1, -1},
    {-1, 11, -1, -1, 12, -1, -1, 13, -1, -1, 14, -1, -1, 15, -1, -1},
    {-1, -1, 11, -1, -1, 12, -1, -1, 13, -1, -1, 14, -1, -1, 15, -1},
    {10, -1, -1, 11, -1, -1, 12, -1, -1, 13, -1, -1, 14, -1, -1, 15},
};
/* The same for items of 2 bytes (16-bit images): output byte 16v + k is byte (16v + k) % 2 of
 * item e = (16v + k) / 2, pixel e / 3's channel e % 3, from bytes 2 (e / 3) .. of its plane */
static const int8_t st_rgb_mask_2[9][16] = {
    {0, 1, -1, -1, -1, -1, 2, 3, -1, -1, -1, -1, 4, 5, -1, -1},
    {-1, -1, 0, 1, -1, -1, -1, -1, 2, 3, -1, -1, -1, -1, 4, 5},
    {-1, -1, -1, -1, 0, 1, -1, -1, -1, -1, 2, 3, -1, -1, -1, -1},
    {-1, -1, 6, 7, -1, -1, -1, -1, 8, 9, -1, -1, -1, -1, 10, 11},
    {-1, -1, -1, -1, 6, 7, -1, -1, -1, -1, 8, 9, -1, -1, -1, -1},
    {4, 5, -1, -1, -1, -1, 6, 7, -1, -1, -1, -1, 8, 9, -1, -1},
    {-1, -1, -1, -1, 12, 13, -1, -1, -1, -1, 14, 15, -1, -1, -1, -1},
    {10, 11, -1, -1, -1, -1, 12, 13, -1, -1, -1, -1, 14, 15, -1, -1},
    {-1, -1, 10, 11, -1, -1, -1, -1, 12, 13, -1, -1, -1, -1, 14, 15},
};
#define ST_RGB_MASKS(w) ((w) == 1 ? st_rgb_mask : st_rgb_mask_2)

/* Pixels r0.. of three planes of items of w = 1 or 2 bytes, 16 bytes of each plane a step:
 * three shuffles and two ORs per 16 output bytes. Returns the pixels done. */
__attribute__((target("ssse3")))
static st_idx st_rgb_ssse3(char *d, const char *s, st_idx sq, st_idx r0, st_idx R, int w)
{
    const int8_t (*masks)[16] = ST_RGB_MASKS(w);
    const st_idx step = 16 / w;
    __m128i mask[9];
    st_idx r;
    int v;
    for (v = 0; v < 9; v++) mask[v] = ST_LOADU(masks[v]);
    for (r = r0; r + step <= R; r += step) {
        const char *p = s + w * r;
        __m128i p0 = ST_LOADU(p), p1 = ST_LOADU(p + w * sq), p2 = ST_LOADU(p + 2 * w * sq);
        for (v = 0; v < 3; v++)
            ST_STOREU(d + 3 * w * r + 16 * v,
                      _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(p0, mask[3 * v]),
                                                _mm_shuffle_epi8(p1, mask[3 * v + 1])),
                                   _mm_shuffle_epi8(p2, mask[3 * v + 2])));
    }
    return r;
}

static int st_has_ssse3(void) { return st_simd >= 1; }
#else
#define ST_HAVE_SSSE3_DISPATCH 0
#endif

#if ST_HAVE_AVX2_DISPATCH
#define ST_BCAST128(p) _mm256_broadcastsi128_si256(ST_LOADU(p))
#endif

/* The streamed part of an interleave into dense pixels (the kernels below): STEP(r, STORE)
 * writes the output of S pixels from pixel r with STORE; LO (< 2 S) is the pixel whose output
 * starts a line, and K steps end on a line. The pixels before LO by one or two ordinary steps
 * (which may overlap the first streamed one: the same values), then whole rounds of K steps
 * with STREAM, leaving r after the last; nothing unless a whole round fits in R pixels. The
 * caller's ordinary steps finish from r; it fences. */
#define ST_STREAMED_STEPS(STEP, LO, S, K, STOREU, STREAM)                                     \
    do {                                                                                      \
        st_idx j_;                                                                            \
        if ((LO) + (K) * (S) <= R && R >= (S)) {                                              \
            if ((LO) > 0)                                                                     \
                STEP(0, STOREU);                                                              \
            if ((LO) > (S))                                                                   \
                STEP((LO) - (S), STOREU);                                                     \
            for (r = (LO); r + (K) * (S) <= R; r += (K) * (S))                                \
                for (j_ = 0; j_ < (K); j_++)                                                  \
                    STEP(r + j_ * (S), STREAM);                                               \
        }                                                                                     \
    } while (0)

#if ST_HAVE_SSSE3_DISPATCH && ST_HAVE_AVX2_DISPATCH
/* For AVX2: one shuffle a plane, then blends. Output vector v's item j (of n = 16 / w in 16
 * bytes) is channel (n v + j) % 3, and as 16 = 1 and 8 = 2 (mod 3), each position j of a
 * vector is channel c in exactly one of the three output vectors: so plane c is shuffled once
 * to hold, at each position, the item of the one output vector that takes channel c there
 * (rows 0-2), and each output vector blends the three shuffled planes by item j % 3 (rows 3-5:
 * 0x80 where j % 3 = 0, 1, 2). 3 shuffles and 6 blends per 32 pixels (96 output bytes), where
 * the loop with st_rgb_mask took 9 shuffles and 6 ORs: shuffles issue on one port of Intel
 * cores and two of Zen 3, blends on more. */
static const int8_t st_rgb_blend_mask[2][6][16] = {
    {   /* 1-byte items */
        {0, 11, 6, 1, 12, 7, 2, 13, 8, 3, 14, 9, 4, 15, 10, 5},
        {5, 0, 11, 6, 1, 12, 7, 2, 13, 8, 3, 14, 9, 4, 15, 10},
        {10, 5, 0, 11, 6, 1, 12, 7, 2, 13, 8, 3, 14, 9, 4, 15},
        {-128, 0, 0, -128, 0, 0, -128, 0, 0, -128, 0, 0, -128, 0, 0, -128},
        {0, -128, 0, 0, -128, 0, 0, -128, 0, 0, -128, 0, 0, -128, 0, 0},
        {0, 0, -128, 0, 0, -128, 0, 0, -128, 0, 0, -128, 0, 0, -128, 0},
    },
    {   /* 2-byte items */
        {0, 1, 6, 7, 12, 13, 2, 3, 8, 9, 14, 15, 4, 5, 10, 11},
        {10, 11, 0, 1, 6, 7, 12, 13, 2, 3, 8, 9, 14, 15, 4, 5},
        {4, 5, 10, 11, 0, 1, 6, 7, 12, 13, 2, 3, 8, 9, 14, 15},
        {-128, -128, 0, 0, 0, 0, -128, -128, 0, 0, 0, 0, -128, -128, 0, 0},
        {0, 0, -128, -128, 0, 0, 0, 0, -128, -128, 0, 0, 0, 0, -128, -128},
        {0, 0, 0, 0, -128, -128, 0, 0, 0, 0, -128, -128, 0, 0, 0, 0},
    },
};

/* 32 pixels at once: lane 0 of each plane's vector holds pixels r..r+15, lane 1 pixels
 * r+16..r+31, so x[v] holds output vector v of both halves; two blends and two lane permutes
 * put the 96 output bytes in order for three 32-byte stores. */
#define ST_RGB_AVX2_STEP(r, STORE)                                                            \
    do {                                                                                      \
        const char *p_ = s + w * (r);                                                         \
        const __m256i p0 = _mm256_shuffle_epi8(                                               \
            _mm256_loadu_si256((const __m256i *)(const void *)p_), shuf[0]);                  \
        const __m256i p1 = _mm256_shuffle_epi8(                                               \
            _mm256_loadu_si256((const __m256i *)(const void *)(p_ + w * sq)), shuf[1]);       \
        const __m256i p2 = _mm256_shuffle_epi8(                                               \
            _mm256_loadu_si256((const __m256i *)(const void *)(p_ + 2 * w * sq)), shuf[2]);   \
        __m256i *o_ = (__m256i *)(void *)(d + 3 * w * (r));                                   \
        for (v = 0; v < 3; v++)                                                               \
            x[v] = _mm256_blendv_epi8(_mm256_blendv_epi8(p0, p1, one[v]), p2, two[v]);         \
        /* x = (A0 B0) (A1 B1) (A2 B2); the output is A0 A1 A2 B0 B1 B2 */                    \
        STORE(o_, _mm256_permute2x128_si256(x[0], x[1], 0x20));                               \
        STORE(o_ + 1, _mm256_blend_epi32(x[2], x[0], 0xF0));                                  \
        STORE(o_ + 2, _mm256_permute2x128_si256(x[1], x[2], 0x31));                           \
    } while (0)

/* Pixels from 0 in steps of 32 / w (items of w = 1 or 2 bytes); returns the pixels done.
 * `stream`: the output's whole lines from its first line boundary on are written with
 * streaming stores, two steps (three lines) at a time, the pixels before them by an ordinary
 * step or two (which may overlap them: the same values), those after by ordinary steps; the
 * caller fences. (2-byte items stream only from an even address: their pixels then start
 * lines.) */
ST_AVX2 static inline __attribute__((always_inline))
st_idx st_rgb_avx2_w(char *d, const char *s, st_idx sq, st_idx R, int stream, const int w)
{
    const int8_t (*masks)[16] = st_rgb_blend_mask[w - 1];
    const st_idx step = 32 / w;
    __m256i shuf[3], one[3], two[3], x[3];
    st_idx r = 0;
    int v;
    for (v = 0; v < 3; v++) {
        /* output vector v's item j is channel (rot + j) % 3: channel 1 where
         * j % 3 = (1 - rot) % 3, channel 2 where j % 3 = (2 - rot) % 3 */
        const int rot = (16 / w * v) % 3;
        shuf[v] = ST_BCAST128(masks[v]);
        one[v] = ST_BCAST128(masks[3 + (4 - rot) % 3]);
        two[v] = ST_BCAST128(masks[3 + (5 - rot) % 3]);
    }
    if (stream && w == 1) {
        /* the pixel whose output starts a line: 3 lo = -d (mod 64), and 1/3 = 43 (mod 64) */
        const st_idx lo = (st_idx)((((0 - (uintptr_t)d) & 63) * 43) & 63);
        ST_STREAMED_STEPS(ST_RGB_AVX2_STEP, lo, 32, 2, _mm256_storeu_si256, _mm256_stream_si256);
    } else if (stream && ((uintptr_t)d & 1) == 0) {
        /* 6 lo = -d (mod 64): 3 lo = -d / 2 (mod 32), and 1/3 = 11 (mod 32) */
        const st_idx lo = (st_idx)(((((0 - (uintptr_t)d) & 63) >> 1) * 11) & 31);
        ST_STREAMED_STEPS(ST_RGB_AVX2_STEP, lo, 16, 2, _mm256_storeu_si256, _mm256_stream_si256);
    }
    for (; r + step <= R; r += step)
        ST_RGB_AVX2_STEP(r, _mm256_storeu_si256);
    return r;
}

/* the loop compiled for each item size (w a constant: no multiply per step) */
ST_AVX2 static st_idx st_rgb_avx2(char *d, const char *s, st_idx sq, st_idx R, int stream,
                                  int w)
{
    return w == 1 ? st_rgb_avx2_w(d, s, sq, R, stream, 1) : st_rgb_avx2_w(d, s, sq, R, stream, 2);
}
#endif

#if ST_HAVE_AVX2_DISPATCH
/* Three planes of 4-byte items into dense pixels (CHW float32 -> HWC), 8 pixels a step, the
 * byte kernel's scheme on 4-item vectors (4 = 1 mod 3): each 128-bit lane of a plane (pixels
 * r..r+3, r+4..r+7) is shuffled once within the lane so that position j holds the item of the
 * one output vector that takes its channel there (plane 0: pixels 0 3 2 1, plane 1: 1 0 3 2,
 * plane 2: 2 1 0 3), two blends a vector pick each item's channel (bit j set where item j is
 * channel 1 / channel 2), and two lane permutes and a blend order the halves as in
 * st_rgb_avx2. 3 in-lane shuffles, 2 lane permutes and 7 blends per 24 items, against 9
 * lane-crossing permutes and 6 blends with a permutevar per plane and vector.
 * dst[3 r + c] = src[r + c * sq] (items); returns the pixels done. `stream`: as st_rgb_avx2
 * (whole output lines streamed, two steps at a time, from the first line boundary). */
#define ST_RGB4_STEP(r, STORE)                                                                \
    do {                                                                                      \
        const __m256 a_ = _mm256_permute_ps(_mm256_loadu_ps(f + (r)), 0x6C);                  \
        const __m256 b_ = _mm256_permute_ps(_mm256_loadu_ps(f + sq + (r)), 0xB1);             \
        const __m256 c_ = _mm256_permute_ps(_mm256_loadu_ps(f + 2 * sq + (r)), 0xC6);         \
        const __m256 x0_ = _mm256_blend_ps(_mm256_blend_ps(a_, b_, 0x22), c_, 0x44);          \
        const __m256 x1_ = _mm256_blend_ps(_mm256_blend_ps(a_, b_, 0x99), c_, 0x22);          \
        const __m256 x2_ = _mm256_blend_ps(_mm256_blend_ps(a_, b_, 0x44), c_, 0x99);          \
        STORE(o + 3 * (r), _mm256_permute2f128_ps(x0_, x1_, 0x20));                           \
        STORE(o + 3 * (r) + 8, _mm256_blend_ps(x2_, x0_, 0xF0));                              \
        STORE(o + 3 * (r) + 16, _mm256_permute2f128_ps(x1_, x2_, 0x31));                      \
    } while (0)

ST_AVX2 static st_idx st_rgb_4_avx2(char *d, const char *s, st_idx sq, st_idx R, int stream)
{
    const float *f = (const float *)(const void *)s;
    float *o = (float *)(void *)d;
    st_idx r = 0;
    if (stream && ((uintptr_t)d & 3) == 0) {
        /* the pixel whose output starts a line: 12 lo = -d (mod 64), 1/3 = 11 (mod 16) */
        const st_idx lo = (st_idx)(((((0 - (uintptr_t)d) & 63) >> 2) * 11) & 15);
        ST_STREAMED_STEPS(ST_RGB4_STEP, lo, 8, 2, _mm256_storeu_ps, _mm256_stream_ps);
    }
    for (; r + 8 <= R; r += 8)
        ST_RGB4_STEP(r, _mm256_storeu_ps);
    return r;
}
#endif

/* dst[r * C + c] = src[r + c * sq] for C = 2, 3, 4, items of w = 1 or 2 bytes (or 4, C = 2),
 * and as many pixels r as the vectors take; returns those. With ST_NT in `nt`, RGB (AVX2) and
 * 4-item pixels stream their output's whole lines (the caller fences). */
static st_idx st_interleave(char *d, const char *s, st_idx sq, st_idx R, st_idx C, int w, int nt)
{
    st_idx r = 0;
#if ST_HAVE_SSE2
    if (C == 2) {
        /* 16 bytes of each plane: two output vectors */
        const st_idx step = 16 / w;
        for (; r + step <= R; r += step) {
            __m128i a = ST_LOADU(s + w * r), b = ST_LOADU(s + w * (sq + r));
            __m128i lo = w == 1 ? _mm_unpacklo_epi8(a, b)
                         : w == 2 ? _mm_unpacklo_epi16(a, b) : _mm_unpacklo_epi32(a, b);
            __m128i hi = w == 1 ? _mm_unpackhi_epi8(a, b)
                         : w == 2 ? _mm_unpackhi_epi16(a, b) : _mm_unpackhi_epi32(a, b);
            ST_STOREU(d + 2 * w * r, lo);
            ST_STOREU(d + 2 * w * r + 16, hi);
        }
    } else if (C == 4 && w <= 2) {
        /* 16 bytes of each plane, 64 output bytes: one output line when d + 4 w r is on a
         * line, streamed from pixel lo on (pixels then start lines: d a multiple of 4 w) */
        const st_idx step = 16 / w;
        const st_idx lo = (st_idx)(((0 - (uintptr_t)d) & 63) / (4 * w));
#define ST_RGBA_STEP(r, STORE)                                                                \
        do {                                                                                  \
            const char *p_ = s + w * (r);                                                     \
            __m128i a = ST_LOADU(p_), b = ST_LOADU(p_ + w * sq);                              \
            __m128i c = ST_LOADU(p_ + 2 * w * sq), e = ST_LOADU(p_ + 3 * w * sq);             \
            __m128i ab0 = w == 1 ? _mm_unpacklo_epi8(a, b) : _mm_unpacklo_epi16(a, b);        \
            __m128i ab1 = w == 1 ? _mm_unpackhi_epi8(a, b) : _mm_unpackhi_epi16(a, b);        \
            __m128i ce0 = w == 1 ? _mm_unpacklo_epi8(c, e) : _mm_unpacklo_epi16(c, e);        \
            __m128i ce1 = w == 1 ? _mm_unpackhi_epi8(c, e) : _mm_unpackhi_epi16(c, e);        \
            __m128i *o_ = (__m128i *)(void *)(d + 4 * w * (r));                               \
            STORE(o_, w == 1 ? _mm_unpacklo_epi16(ab0, ce0) : _mm_unpacklo_epi32(ab0, ce0));  \
            STORE(o_ + 1, w == 1 ? _mm_unpackhi_epi16(ab0, ce0)                               \
                                 : _mm_unpackhi_epi32(ab0, ce0));                             \
            STORE(o_ + 2, w == 1 ? _mm_unpacklo_epi16(ab1, ce1)                               \
                                 : _mm_unpacklo_epi32(ab1, ce1));                             \
            STORE(o_ + 3, w == 1 ? _mm_unpackhi_epi16(ab1, ce1)                               \
                                 : _mm_unpackhi_epi32(ab1, ce1));                             \
        } while (0)
        if ((nt & ST_NT) && ((uintptr_t)d & (uintptr_t)(4 * w - 1)) == 0)
            ST_STREAMED_STEPS(ST_RGBA_STEP, lo, step, 1, _mm_storeu_si128, _mm_stream_si128);
        for (; r + step <= R; r += step)
            ST_RGBA_STEP(r, _mm_storeu_si128);
#undef ST_RGBA_STEP
    }
#endif
#if ST_HAVE_SSSE3_DISPATCH && ST_HAVE_AVX2_DISPATCH
    if (C == 3 && w <= 2 && st_simd >= 2) r = st_rgb_avx2(d, s, sq, R, nt & ST_NT, w);
#endif
#if ST_HAVE_SSSE3_DISPATCH
    if (C == 3 && w <= 2 && st_has_ssse3()) r = st_rgb_ssse3(d, s, sq, r, R, w);
#endif
    (void)nt;
    (void)w;
    return r;
}

/* ---- dense pixels into planes: deinterleaves ---------------------------------------------- */
/* dst[k * dp + c] = src[c * S + k] for planes k < R <= S and pixels c < C (element strides;
 * items of w = 1, 2 or 4 bytes; 2 <= S <= ST_DEINT_MAX): the transpose whose rows, the
 * source's unit dim, are few: HWC -> CHW images (R = S = 3), NHWC -> NCHW with few channels,
 * planes of RGBA. A *group* of S 16-byte vectors holds P = 16 / w whole pixels; each plane's P
 * items are gathered from it by byte shuffles:
 *   S = 2, 4: one shuffle a vector sorts its bytes by channel, then 64-bit (S = 2) or 32-bit
 *             (S = 4) unpacks transpose the sorted vectors (S shuffles + 2 or 8 unpacks);
 *   S odd:    the plane's bytes sit at distinct positions of the S vectors (P is a power of 2,
 *             prime to S), so AVX2 blends the S vectors into one and shuffles once: S - 1
 *             blends and one shuffle a plane;
 *   others:   (and S odd without AVX2) S shuffles a plane, one per vector, OR-ed together.
 * AVX2 runs two groups at once, one per 128-bit lane (shuffles stay within lanes). SSE2 alone
 * has packs and unpacks for S = R = 2 (w = 1, 2, 4) and S = R = 4 (w = 1). The last group is
 * moved back to end at pixel C: it rewrites a few pixels with the same values (source and
 * destination never overlap here). A group reads its pixels whole, items R..S-1 included, and
 * those are not elements: between two pixels they lie inside the source, but after the last
 * pixel they may be past its end (RGBA read as 3 planes: the last pixel's alpha; a column-major
 * (2, 2, 4) array read as 2 of 4: 8 bytes past it), so with R < S the groups stop one pixel
 * short and that pixel is copied item by item (st_deint_last). Each returns the pixels done:
 * C, or 0 when C is below a group (the caller's scalar loops take those). */
#define ST_DEINT_MAX 8

/* Pixels the groups may cover: all C when every item of a pixel is an element, else all but
 * the last. */
#define ST_DEINT_WHOLE(S, R, C) ((R) < (S) ? (C) - 1 : (C))

/* Pixels c0..C-1 of planes k < R, item by item (the pixel the groups leave when R < S). */
static inline void st_deint_last(int lw, char *d, st_idx dpb, const char *s, int S, int R,
                                 st_idx c0, st_idx C)
{
    st_idx c;
    int k;
    for (c = c0; c < C; c++)
        for (k = 0; k < R; k++)
            memcpy(d + k * dpb + (c << lw), s + ((c * S + k) << lw), (size_t)1 << lw);
}

typedef struct {
    uint8_t or_[ST_DEINT_MAX][ST_DEINT_MAX][16];   /* [v][k]: plane k's bytes of vector v */
    uint8_t sel[ST_DEINT_MAX][ST_DEINT_MAX][16];   /* [v][k]: 0x80 where vector v holds plane k */
    uint8_t perm[ST_DEINT_MAX][16];                /* [k]: plane k out of the blended vector */
    uint8_t sort[16];                              /* S = 2, 4: a vector's bytes by channel */
} st_deint_masks;

/* The masks for items of 1 << lw bytes, pixels of S items, planes k < R (about 16 S steps). */
static inline void st_deint_build(st_deint_masks *m, int lw, int S, int R)
{
    int q, chan = 0, pix = 0, b = 0, w = 1 << lw, per = 16 / S;
    memset(m->or_, 0x80, (size_t)S * sizeof m->or_[0]);
    memset(m->sel, 0, (size_t)S * sizeof m->sel[0]);
    for (q = 0; q < 16 * S; q++) {   /* byte q of the group: byte b of item pix * S + chan */
        if (chan < R) {
            int j = (pix << lw) | b;   /* its byte in plane chan's vector */
            m->or_[q >> 4][chan][j] = (uint8_t)(q & 15);
            m->sel[q >> 4][chan][q & 15] = 0x80;
            m->perm[chan][j] = (uint8_t)(q & 15);
        }
        if (q < 16 && (S == 2 || S == 4))   /* sorted: channel chan's bytes first */
            m->sort[chan * per + ((pix << lw) | b)] = (uint8_t)q;
        if (++b == w) {
            b = 0;
            if (++chan == S) {
                chan = 0;
                pix++;
            }
        }
    }
}

#if ST_HAVE_SSSE3_DISPATCH
#define ST_SSSE3 __attribute__((target("ssse3")))

/* S = 2 or 4: sort each vector by channel, then transpose 64-bit (S = 2) or 32-bit (S = 4)
 * pieces. out[k] is plane k's vector. */
#define ST_DEINT_SORTED(VEC, SHUF, LO32, HI32, LO64, HI64)                                    \
    do {                                                                                      \
        if (S == 2) {                                                                         \
            VEC a_ = SHUF(in[0], srt), b_ = SHUF(in[1], srt);                                  \
            out[0] = LO64(a_, b_);                                                            \
            out[1] = HI64(a_, b_);                                                            \
        } else {                                                                              \
            VEC a_ = SHUF(in[0], srt), b_ = SHUF(in[1], srt);                                  \
            VEC c_ = SHUF(in[2], srt), e_ = SHUF(in[3], srt);                                  \
            VEC ab0 = LO32(a_, b_), ab1 = HI32(a_, b_), ce0 = LO32(c_, e_), ce1 = HI32(c_, e_); \
            out[0] = LO64(ab0, ce0);                                                          \
            out[1] = HI64(ab0, ce0);                                                          \
            out[2] = LO64(ab1, ce1);                                                          \
            out[3] = HI64(ab1, ce1);                                                          \
        }                                                                                     \
    } while (0)

ST_SSSE3 static inline __attribute__((always_inline))
st_idx st_deint_ssse3_body(int lw, char *d, st_idx dpb, const char *s, const int S, const int R,
                           st_idx C, const st_deint_masks *mk)
{
    const st_idx P = 16 >> lw;
    const int sorted = (S == 2 || S == 4) && P >= S;
    __m128i m[ST_DEINT_MAX][ST_DEINT_MAX], in[ST_DEINT_MAX], out[4];
    __m128i srt = ST_LOADU(mk->sort);
    st_idx c;
    int v, k;
    if (!sorted)
        for (v = 0; v < S; v++)
            for (k = 0; k < R; k++) m[v][k] = ST_LOADU(mk->or_[v][k]);
    for (c = 0; c < C; c += P) {
        const char *g;
        if (c + P > C) c = C - P;
        g = s + ((c * S) << lw);
        for (v = 0; v < S; v++) in[v] = ST_LOADU(g + 16 * v);
        if (sorted) {
            ST_DEINT_SORTED(__m128i, _mm_shuffle_epi8, _mm_unpacklo_epi32, _mm_unpackhi_epi32,
                            _mm_unpacklo_epi64, _mm_unpackhi_epi64);
            for (k = 0; k < R; k++) ST_STOREU(d + k * dpb + (c << lw), out[k]);
            continue;
        }
        for (k = 0; k < R; k++) {
            __m128i acc = _mm_shuffle_epi8(in[0], m[0][k]);
            for (v = 1; v < S; v++) acc = _mm_or_si128(acc, _mm_shuffle_epi8(in[v], m[v][k]));
            ST_STOREU(d + k * dpb + (c << lw), acc);
        }
    }
    return C;
}

ST_SSSE3 static st_idx st_deint_ssse3(int lw, char *d, st_idx dpb, const char *s, int S, int R,
                                      st_idx C)
{
    st_deint_masks mk;
    const st_idx whole = ST_DEINT_WHOLE(S, R, C);
    if (whole < (16 >> lw))
        return 0;
    st_deint_build(&mk, lw, S, R);
    if (S == R && S == 2) return st_deint_ssse3_body(lw, d, dpb, s, 2, 2, C, &mk);
    if (S == R && S == 3) return st_deint_ssse3_body(lw, d, dpb, s, 3, 3, C, &mk);
    if (S == R && S == 4) return st_deint_ssse3_body(lw, d, dpb, s, 4, 4, C, &mk);
    st_deint_ssse3_body(lw, d, dpb, s, S, R, whole, &mk);
    st_deint_last(lw, d, dpb, s, S, R, whole, C);
    return C;
}
#endif

#if ST_HAVE_AVX2_DISPATCH

/* One group of the AVX2 body at pixel c (two 16-byte groups, one per lane), each plane's
 * 32 bytes stored with STORE. */
#define ST_DEINT_AVX2_GROUP(c, STORE)                                                         \
    do {                                                                                      \
        const char *g_ = s + (((c) * S) << lw);                                               \
        for (v = 0; v < S; v++)   /* lane 0: this group, lane 1: the next one */              \
            in[v] = _mm256_inserti128_si256(_mm256_castsi128_si256(ST_LOADU(g_ + 16 * v)),    \
                                            ST_LOADU(g_ + 16 * (S + v)), 1);                  \
        if (sorted) {                                                                         \
            ST_DEINT_SORTED(__m256i, _mm256_shuffle_epi8, _mm256_unpacklo_epi32,              \
                            _mm256_unpackhi_epi32, _mm256_unpacklo_epi64,                     \
                            _mm256_unpackhi_epi64);                                           \
            for (k = 0; k < R; k++)                                                           \
                STORE((__m256i *)(void *)(d + k * dpb + ((c) << lw)), out[k]);                \
            break;                                                                            \
        }                                                                                     \
        for (k = 0; k < R; k++) {                                                             \
            __m256i acc;                                                                      \
            if (blend) {                                                                      \
                acc = in[0];                                                                  \
                for (v = 1; v < S; v++) acc = _mm256_blendv_epi8(acc, in[v], m[v][k]);        \
                acc = _mm256_shuffle_epi8(acc, pm[k]);                                        \
            } else {                                                                          \
                acc = _mm256_shuffle_epi8(in[0], m[0][k]);                                    \
                for (v = 1; v < S; v++)                                                       \
                    acc = _mm256_or_si256(acc, _mm256_shuffle_epi8(in[v], m[v][k]));          \
            }                                                                                 \
            STORE((__m256i *)(void *)(d + k * dpb + ((c) << lw)), acc);                       \
        }                                                                                     \
    } while (0)

/* The pixels of whole 64-byte lines of every plane, [*lo, *hi), for streaming stores: where
 * the planes start at one offset in a line (dpb a multiple of 64) and a line boundary falls
 * on a pixel; else an empty range. Also empty, unless `alias` (ST_DEINT_ALIAS), for planes a
 * multiple of 2 KiB apart, whose streamed lines share their low address bits: 3 planes of
 * 12-16 MiB (36-48 MiB written, 1 thread, AMD EPYC Zen 3) took 1.1-1.35x the time of
 * ordinary stores at distances of 2^11-2^24 x an odd number of bytes, and 0.88-0.93x at
 * 2^6-2^10 x odd. On an AMD EPYC Zen 5 the same planes (1080 x 1920 float32, 8 MiB apart)
 * streamed 1.42-1.49x faster than with ordinary stores (strided._caches: deint_alias_nt). */
static inline void st_deint_lines(int lw, const char *d, st_idx dpb, st_idx C, int alias,
                                  st_idx *lo, st_idx *hi)
{
    const st_idx head = (st_idx)((64 - ((uintptr_t)d & 63)) & 63);
    *lo = *hi = 0;
    if (dpb % 64 || (dpb % 2048 == 0 && !alias) || head % ((st_idx)1 << lw)
            || (head >> lw) >= C)
        return;
    *lo = head >> lw;
    *hi = *lo + ((((C - *lo) << lw) / 64 * 64) >> lw);
}

/* `stream` (ST_NT, ST_DEINT_ALIAS): the groups inside whole lines (st_deint_lines) store with
 * streaming stores, the head and tail around them ordinary ones (groups there may overlap the
 * streamed ones: they rewrite the same values). The caller fences. */
ST_AVX2 static inline __attribute__((always_inline))
st_idx st_deint_avx2_body(int lw, char *d, st_idx dpb, const char *s, const int S, const int R,
                          st_idx C, const st_deint_masks *mk, int stream)
{
    const st_idx P = 16 >> lw, step = 2 * P;
    const int sorted = (S == 2 || S == 4) && P >= S, blend = S & 1;
    __m256i m[ST_DEINT_MAX][ST_DEINT_MAX], pm[ST_DEINT_MAX], in[ST_DEINT_MAX], out[4];
    __m256i srt = ST_BCAST128(mk->sort);
    st_idx c = 0, lo = 0, hi = 0;
    int v, k;
    if (!sorted)
        for (k = 0; k < R; k++) {
            pm[k] = ST_BCAST128(mk->perm[k]);
            for (v = 0; v < S; v++)
                m[v][k] = blend ? ST_BCAST128(mk->sel[v][k]) : ST_BCAST128(mk->or_[v][k]);
        }
    if (stream & ST_NT)
        st_deint_lines(lw, d, dpb, C, stream & ST_DEINT_ALIAS, &lo, &hi);
    if (hi - lo >= step) {
        for (c = 0; c < lo; c += step)   /* the head: up to the first line, ordinary stores */
            ST_DEINT_AVX2_GROUP(c + step <= lo ? c : lo > step ? lo - step : 0,
                                _mm256_storeu_si256);
        for (c = lo; c + step <= hi; c += step)
            ST_DEINT_AVX2_GROUP(c, _mm256_stream_si256);
        if (c >= C)
            return C;
    }
    for (; c < C; c += step) {
        if (c + step > C) c = C - step;
        ST_DEINT_AVX2_GROUP(c, _mm256_storeu_si256);
    }
    return C;
}

ST_AVX2 static st_idx st_deint_avx2(int lw, char *d, st_idx dpb, const char *s, int S, int R,
                                    st_idx C, int stream)
{
    st_deint_masks mk;
    const st_idx whole = ST_DEINT_WHOLE(S, R, C);
    if (whole < (32 >> lw))
        return 0;
    st_deint_build(&mk, lw, S, R);
    if (S == R && S == 2) return st_deint_avx2_body(lw, d, dpb, s, 2, 2, C, &mk, stream);
    if (S == R && S == 3) return st_deint_avx2_body(lw, d, dpb, s, 3, 3, C, &mk, stream);
    if (S == R && S == 4) return st_deint_avx2_body(lw, d, dpb, s, 4, 4, C, &mk, stream);
    st_deint_avx2_body(lw, d, dpb, s, S, R, whole, &mk, 0);
    st_deint_last(lw, d, dpb, s, S, R, whole, C);
    return C;
}
#endif

#if ST_HAVE_SSE2
/* SSE2 alone: S = R = 2 for items of 1, 2, 4 bytes, S = R = 4 for bytes (packs of the even
 * and odd bytes, word shuffles, float shuffles). */
static st_idx st_deint_sse2(int lw, char *d, st_idx dpb, const char *s, int S, int R, st_idx C)
{
    const st_idx P = 16 >> lw;
    const __m128i lo8 = _mm_set1_epi16(0x00FF);
    st_idx c, o;
    if (S != R || C < P || !(S == 2 || (S == 4 && lw == 0)))
        return 0;
    for (c = 0; c < C; c += P) {
        const char *g;
        if (c + P > C) c = C - P;
        g = s + ((c * S) << lw);
        o = c << lw;
        if (S == 4) {   /* even bytes: channels 0, 2; odd: 1, 3; then again */
            __m128i a = ST_LOADU(g), b = ST_LOADU(g + 16), e = ST_LOADU(g + 32);
            __m128i f = ST_LOADU(g + 48);
            __m128i ev0 = _mm_packus_epi16(_mm_and_si128(a, lo8), _mm_and_si128(b, lo8));
            __m128i ev1 = _mm_packus_epi16(_mm_and_si128(e, lo8), _mm_and_si128(f, lo8));
            __m128i od0 = _mm_packus_epi16(_mm_srli_epi16(a, 8), _mm_srli_epi16(b, 8));
            __m128i od1 = _mm_packus_epi16(_mm_srli_epi16(e, 8), _mm_srli_epi16(f, 8));
            ST_STOREU(d + o, _mm_packus_epi16(_mm_and_si128(ev0, lo8), _mm_and_si128(ev1, lo8)));
            ST_STOREU(d + dpb + o,
                      _mm_packus_epi16(_mm_and_si128(od0, lo8), _mm_and_si128(od1, lo8)));
            ST_STOREU(d + 2 * dpb + o,
                      _mm_packus_epi16(_mm_srli_epi16(ev0, 8), _mm_srli_epi16(ev1, 8)));
            ST_STOREU(d + 3 * dpb + o,
                      _mm_packus_epi16(_mm_srli_epi16(od0, 8), _mm_srli_epi16(od1, 8)));
        } else if (lw == 0) {
            __m128i a = ST_LOADU(g), b = ST_LOADU(g + 16);
            ST_STOREU(d + o, _mm_packus_epi16(_mm_and_si128(a, lo8), _mm_and_si128(b, lo8)));
            ST_STOREU(d + dpb + o, _mm_packus_epi16(_mm_srli_epi16(a, 8), _mm_srli_epi16(b, 8)));
        } else if (lw == 1) {   /* words 0 2 1 3 in each half, then dwords 0 2 1 3 */
            __m128i a = ST_LOADU(g), b = ST_LOADU(g + 16);
            a = _mm_shufflehi_epi16(_mm_shufflelo_epi16(a, 0xD8), 0xD8);
            b = _mm_shufflehi_epi16(_mm_shufflelo_epi16(b, 0xD8), 0xD8);
            a = _mm_shuffle_epi32(a, 0xD8);
            b = _mm_shuffle_epi32(b, 0xD8);
            ST_STOREU(d + o, _mm_unpacklo_epi64(a, b));
            ST_STOREU(d + dpb + o, _mm_unpackhi_epi64(a, b));
        } else {
            __m128 a = _mm_castsi128_ps(ST_LOADU(g)), b = _mm_castsi128_ps(ST_LOADU(g + 16));
            ST_STOREU(d + o, _mm_castps_si128(_mm_shuffle_ps(a, b, 0x88)));
            ST_STOREU(d + dpb + o, _mm_castps_si128(_mm_shuffle_ps(a, b, 0xDD)));
        }
    }
    return C;
}
#endif

/* ---- 32 byte planes into 32-byte pixels (8-bit NCHW -> NCHW32; int4 NCHW64's packed pairs) --
 * dst[r * 32 + c] = src[r + c * sq], a group of 64 W pixels at a time. The group's 64 W bytes
 * of each plane are first copied to a buffer of 2 W KiB (planes a multiple of 4 KiB apart would
 * share one L1 set, and 32 lines of it evict each other), then 8 pixels a round: planes
 * 4k..4k+3 interleaved by two byte and two 16-bit unpacks into one 32-bit item a pixel
 * (register k, pixels 0-3 in its low lane), and the 8 x 8 matrix of those items transposed
 * (st_transpose8_ps): register p holds pixel p's 32 bytes, one store. Returns the pixels done
 * (whole groups; the caller's tiles do the rest). */
#if ST_HAVE_AVX2_DISPATCH
#define ST_DEFINE_PIXELS32(NAME, W)                                                           \
ST_AVX2 static st_idx NAME(char *d, const char *s, st_idx sq, st_idx R)                       \
{                                                                                             \
    __m256i lb[64 * (W)];   /* 32 planes x 64 W bytes */                                      \
    const int P = 64 * (W);                                                                   \
    st_idx g;                                                                                 \
    for (g = 0; g + P <= R; g += P) {                                                         \
        for (int c = 0; c < 32; c++) {                                                        \
            const char *p = s + c * sq + g;                                                   \
            for (int w = 0; w < 2 * (W); w++)                                                 \
                _mm256_store_si256(lb + 2 * (W) * c + w, ST_LOAD256(p + 32 * w));             \
        }                                                                                     \
        for (int q = 0; q < P / 8; q++) {                                                     \
            __m256 v[8];                                                                      \
            for (int k = 0; k < 8; k++) {                                                     \
                const char *b = (const char *)lb + 4 * P * k + 8 * q;  /* plane 4k, pixel 8q */ \
                const __m128i a0 = ST_LOAD64(b), a1 = ST_LOAD64(b + P);                       \
                const __m128i a2 = ST_LOAD64(b + 2 * P), a3 = ST_LOAD64(b + 3 * P);           \
                const __m128i t = _mm_unpacklo_epi8(a0, a1), u = _mm_unpacklo_epi8(a2, a3);   \
                const __m256i x = _mm256_inserti128_si256(                                    \
                    _mm256_castsi128_si256(_mm_unpacklo_epi16(t, u)),                         \
                    _mm_unpackhi_epi16(t, u), 1);                                             \
                v[k] = _mm256_castsi256_ps(x);                                                \
            }                                                                                 \
            st_transpose8_ps(v);                                                              \
            for (int p = 0; p < 8; p++)                                                       \
                _mm256_storeu_ps((float *)(void *)(d + 32 * (g + 8 * q + p)), v[p]);          \
        }                                                                                     \
    }                                                                                         \
    return g;                                                                                 \
}
#define ST_LOAD64(p) _mm_loadl_epi64((const __m128i *)(const void *)(p))
ST_DEFINE_PIXELS32(st_pixels32_w1, 1)
ST_DEFINE_PIXELS32(st_pixels32_w4, 4)
/* Planes whose lines crowd an L1 set (more than 4 of the 32 in one: 64^2, 128^2, 181^2
 * planes) go 256 pixels a group: four lines read from each plane in a row, where one line
 * of each lost its prefetched successors to the other planes' (paired, AMD EPYC Zen 3, 4 MiB:
 * 1.33-1.74x on 1 and 2 threads; spread planes 0.95-1.04x, so they keep 64-pixel groups). */
ST_AVX2 static st_idx st_pixels32_bytes_avx2(char *d, const char *s, st_idx sq, st_idx R)
{
    st_idx g = st_l1_crowd(sq, 32) > 4 ? st_pixels32_w4(d, s, sq, R) : 0;
    return g + st_pixels32_w1(d + 32 * g, s + g, sq, R - g);
}
#endif

#if ST_HAVE_SSSE3_DISPATCH && ST_HAVE_AVX2_DISPATCH
/* Whether the 16-byte (SSSE3) body goes before the AVX2 one: with ST_DEINT16, for S = R = 2
 * (items of 2 or 4 bytes) and S = R = 4 (2 bytes), unless the AVX2 body would stream whole
 * lines. On an Intel Xeon (1 thread, warm, AVX2 -> SSSE3): float32 pairs 1.25x from the L3,
 * 1.34x from the L2, uint16 pairs 1.12x / 1.28x, uint16 quads 1.11x / 1.63x; cold (2048^2
 * planes, which do not stream: 2 KiB multiples), 1 / 2 threads: float32 pairs 1.15x / 1.27x,
 * uint16 pairs 1.21x / 1.31x, quads 1.14x / 1.17x. Where the AVX2 body streams (2040^2
 * planes) the two were level (0.96-1.09x), so it keeps those; float32 quads were level
 * everywhere, and 3 planes mixed (AVX2 ahead in the L2 0.89-0.91x, behind from the L3), so
 * they keep the AVX2 body. On an AMD EPYC Zen 5 (cold) the 16-byte body was level on pairs
 * (0.93-1.01x) and behind on uint16 quads (0.85-0.93x): strided._caches sets the flag for
 * Intel only. */
static inline int st_deint_16_first(int lw, const char *d, st_idx dpb, st_idx S, st_idx R,
                                    st_idx C, int nt)
{
    st_idx lo, hi;
    if (!(nt & ST_DEINT16) || lw == 0 || S != R || !(S == 2 || (S == 4 && lw == 1))
            || !st_has_ssse3())
        return 0;
    if (!(nt & ST_NT))
        return 1;
    st_deint_lines(lw, d, dpb, C, nt & ST_DEINT_ALIAS, &lo, &hi);
    return hi - lo < 2 * (16 >> lw);   /* (the AVX2 body's test for streaming) */
}
#endif

/* The best deinterleave this CPU runs (st_simd), for items of 1, 2 or 4 bytes and pixels of
 * 2 <= S <= ST_DEINT_MAX items (R <= S planes; dp in items): the pixels done, C or 0. With
 * ST_NT in `nt`, whole lines of the planes may be written with streaming stores (AVX2, R = S:
 * the caller fences). */
static st_idx st_deinterleave(int itemsize, char *d, st_idx dp, const char *s, st_idx S,
                              st_idx R, st_idx C, int nt)
{
    int lw = itemsize == 1 ? 0 : itemsize == 2 ? 1 : 2;
    st_idx done = 0;
    if (R < 2 || R > S || S > ST_DEINT_MAX || !(itemsize == 1 || itemsize == 2 || itemsize == 4))
        return 0;
#if ST_HAVE_AVX2_DISPATCH
    if (st_simd >= 2 && !st_deint_16_first(lw, d, dp * itemsize, S, R, C, nt) &&
        (done = st_deint_avx2(lw, d, dp * itemsize, s, (int)S, (int)R, C,
                              nt & (ST_NT | ST_DEINT_ALIAS))))
        return done;
#endif
#if ST_HAVE_SSSE3_DISPATCH
    if (st_simd >= 1 && (done = st_deint_ssse3(lw, d, dp * itemsize, s, (int)S, (int)R, C)))
        return done;
#endif
#if ST_HAVE_SSE2
    done = st_deint_sse2(lw, d, dp * itemsize, s, (int)S, (int)R, C);
#else
    (void)lw; (void)d; (void)dp; (void)s; (void)C;
#endif
    (void)nt;
    return done;
}

#endif /* STRIDED_KERNELS_INTERLEAVE_H */
