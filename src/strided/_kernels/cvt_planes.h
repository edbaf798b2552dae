/* Dense 8-bit pixels of 3, 4 or 32 channels to float32 planes (an image's HWC -> CHW, int8
 * NCHW4 / NCHW32 -> NCHW) and float32 planes back to dense, quantized pixels of 3, 4 or 32
 * channels of 8 bits or 64 of 4 bits (CHW -> HWC uint8, NCHW -> int8 NCHW4 / NCHW32, int4
 * NCHW64), each in one pass: the 3- and 4-channel kernels without a tile, the 32-byte pixels
 * through a small one. */
#ifndef STRIDED_KERNELS_CVT_PLANES_H
#define STRIDED_KERNELS_CVT_PLANES_H

#include "cvt_values.h"
#include "cvt_fused.h"   /* st_f32_byte_scalar: the pixels' rounding, the rows' own */
#include "transpose8.h"  /* st_transpose8_ps: the 32-channel kernel's register transpose */

/* ---- dense 8-bit pixels of 3 or 4 channels -> float32 planes, in one pass ---------------------
 * The image loader's conversion (HWC uint8 -> CHW float32, per-channel affine): plane r gets
 * out_r[i] = (float)px[i * R + r] * a_r + b_r. Written so that the compiler vectorises the
 * de-interleave and the conversion together (measured at 1080x1920: as fast as a contiguous
 * uint8 -> float32 cast of the same bytes, against 2x that through a staged tile). `dp`: bytes
 * between planes; parameters of plane r at scale[r * pp], shift[r * pp] (a plain cast passes
 * 1 and -0.0, which change no value). The kernels are st_planes_fn (types.h). */

/* (The planes start at any byte: float stores through memcpy, on distinct restrict rows.) */
#define ST_DEF_PLANES3(SUFFIX, ATTR, T, TN)                                                   \
    ATTR static void st_planes3_##TN##_##SUFFIX(char *d, st_idx dp, const char *s, st_idx n, \
                                                const void *scale, const void *shift,         \
                                                st_idx pp, char *tile, st_idx tile_bytes)    \
    {                                                                                         \
        const T *px = (const T *)(const void *)s;                                             \
        const float *a = (const float *)scale, *c = (const float *)shift;                     \
        (void)tile; (void)tile_bytes;                                                         \
        char *restrict o0 = d, *restrict o1 = d + dp, *restrict o2 = d + 2 * dp;              \
        const float a0 = a[0], a1 = a[pp], a2 = a[2 * pp];                                    \
        const float c0 = c[0], c1 = c[pp], c2 = c[2 * pp];                                    \
        for (st_idx i = 0; i < n; i++) {                                                     \
            float t0 = (float)px[3 * i] * a0, t1 = (float)px[3 * i + 1] * a1;                 \
            float t2 = (float)px[3 * i + 2] * a2;                                             \
            st_st_f32(o0 + 4 * i, t0 + c0);                                                   \
            st_st_f32(o1 + 4 * i, t1 + c1);                                                   \
            st_st_f32(o2 + 4 * i, t2 + c2);                                                   \
        }                                                                                     \
    }

#define ST_DEF_PLANES4(SUFFIX, ATTR, T, TN)                                                   \
    ATTR static void st_planes4_##TN##_##SUFFIX(char *d, st_idx dp, const char *s, st_idx n, \
                                                const void *scale, const void *shift,         \
                                                st_idx pp, char *tile, st_idx tile_bytes)    \
    {                                                                                         \
        const T *px = (const T *)(const void *)s;                                             \
        const float *a = (const float *)scale, *c = (const float *)shift;                     \
        (void)tile; (void)tile_bytes;                                                         \
        char *restrict o0 = d, *restrict o1 = d + dp, *restrict o2 = d + 2 * dp;              \
        char *restrict o3 = d + 3 * dp;                                                       \
        const float a0 = a[0], a1 = a[pp], a2 = a[2 * pp], a3 = a[3 * pp];                    \
        const float c0 = c[0], c1 = c[pp], c2 = c[2 * pp], c3 = c[3 * pp];                    \
        for (st_idx i = 0; i < n; i++) {                                                     \
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
#if ST_X86_GNU
/* With AVX2, written out: 8 pixels a round. One 32-byte register holds pixels 0-3 in its low
 * lane and pixels 4-7 in its high lane (for 3 channels, two overlapping 16-byte loads, 12
 * bytes apart); per plane, one in-lane byte shuffle moves channel r of the 4 pixels of each
 * lane into the low byte of a 32-bit item and zeros the rest (uint8: zero-extended), or into
 * its high byte, shifted down arithmetically (int8: sign-extended). Then convert, scale and
 * shift, store. 0.7 instructions an element, where the earlier de-interleave (three byte
 * shuffles and two ors a plane, then widening) took 1.1: a 224x224x3 image normalised on one
 * thread went from 16.3 to 14.9 us, the call included (AMD EPYC). */
/* H: where pixel 4 of the round starts in the high lane's 16 bytes (0, or 4 for the last round
 * of 3 channels, whose high load ends at the last pixel's last byte). */
#define ST_PLANE_MASK(R, r, SIGNED, H)                                                        \
    (SIGNED ? _mm256_setr_epi8(-1, -1, -1, (r), -1, -1, -1, (R) + (r), -1, -1, -1,            \
                               2 * (R) + (r), -1, -1, -1, 3 * (R) + (r), -1, -1, -1,          \
                               (H) + (r), -1, -1, -1, (H) + (R) + (r), -1, -1, -1,            \
                               (H) + 2 * (R) + (r), -1, -1, -1, (H) + 3 * (R) + (r))          \
            : _mm256_setr_epi8((r), -1, -1, -1, (R) + (r), -1, -1, -1, 2 * (R) + (r), -1, -1, \
                               -1, 3 * (R) + (r), -1, -1, -1, (H) + (r), -1, -1, -1,          \
                               (H) + (R) + (r), -1, -1, -1, (H) + 2 * (R) + (r), -1, -1, -1,  \
                               (H) + 3 * (R) + (r), -1, -1, -1))

#define ST_PLANE_OUT(v, r, M, i)                                                              \
    do {                                                                                      \
        __m256i w_ = _mm256_shuffle_epi8((v), M[r]);                                          \
        if (SIGNED) w_ = _mm256_srai_epi32(w_, 24);                                           \
        _mm256_storeu_ps((float *)(void *)(o[r] + 4 * i),                                     \
                         _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(w_), A[r]), C[r]));   \
    } while (0)

#define ST_DEF_PLANES_AVX2(R, TN, SIGNED_)                                                 \
    __attribute__((target("avx2"))) static void st_planes##R##_##TN##_avx2(                   \
        char *d, st_idx dp, const char *s, st_idx n, const void *scale, const void *shift,  \
        st_idx pp, char *tile, st_idx tile_bytes)                                            \
    {                                                                                         \
        enum { SIGNED = SIGNED_ };                                                            \
        const char *px = s;                                                                   \
        const float *a = (const float *)scale, *c = (const float *)shift;                     \
        char *o[R];                                                                           \
        __m256i M[R];                                                                         \
        __m256 A[R], C[R];                                                                    \
        st_idx i = 0;                                                                        \
        int r;                                                                                \
        for (r = 0; r < R; r++) {                                                             \
            o[r] = d + r * dp;                                                                \
            M[r] = ST_PLANE_MASK(R, r, SIGNED, 0);                                            \
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
            for (r = 0; r < R; r++) ST_PLANE_OUT(v, r, M, i);                                 \
        }                                                                                     \
        /* the rest (up to 9 pixels) by rounds whose high load ends at their 8th pixel's last \
         * byte, the last one on the last 8 pixels, again where it overlaps the rounds       \
         * above (the same values: d and s never meet here): an image row of 224 pixels left \
         * 8 to the scalar loop, which cost as much as the row's 27 rounds (crops, whose     \
         * rows do not merge, took 1.5-2.4x the time of whole images) */                      \
        if (i < n && n >= 8) {                                                                \
            __m256i L[R];                                                                     \
            for (r = 0; r < R; r++) L[r] = ST_PLANE_MASK(R, r, SIGNED, (R == 3 ? 4 : 0));     \
            while (i < n) {                                                                   \
                const st_idx j = i + 8 <= n ? i : n - 8;                                      \
                const __m128i lo_ =                                                           \
                    _mm_loadu_si128((const __m128i *)(const void *)(px + R * j));             \
                const __m128i hi_ = _mm_loadu_si128(                                          \
                    (const __m128i *)(const void *)(px + R * j + 4 * R - (R == 3 ? 4 : 0)));  \
                const __m256i v =                                                             \
                    _mm256_inserti128_si256(_mm256_castsi128_si256(lo_), hi_, 1);             \
                for (r = 0; r < R; r++) ST_PLANE_OUT(v, r, L, j);                             \
                i = j + 8;                                                                    \
            }                                                                                 \
        }                                                                                     \
        if (i < n)                                                                            \
            st_planes##R##_##TN##_base(d + 4 * i, dp, s + R * i, n - i, scale,                \
                                       shift, pp, tile, tile_bytes);                          \
    }

ST_DEF_PLANES_AVX2(3, u8, 0)
ST_DEF_PLANES_AVX2(3, i8, 1)
ST_DEF_PLANES_AVX2(4, u8, 0)
ST_DEF_PLANES_AVX2(4, i8, 1)
#undef ST_PLANE_OUT

/* ---- 32 channels: int8 NCHW32 -> float32 NCHW (dequantization) ------------------------------
 * A pixel's 32 channels are one 32-byte load, and 8 pixels an 8 x 8 matrix of 32-bit items
 * (item k: channels 4k..4k+3). Transposed in registers (st_transpose8_ps), register k holds
 * channels 4k..4k+3 of the 8 pixels, pixels 0-3 in its low lane, and goes to row k of the
 * scratch tile (as many bytes as the source's pixels: the engine's staging tile). Then each
 * row of the tile leaves as four planes at once, as the 4-channel kernel writes them: per
 * channel, one byte shuffle puts its 8 values in 32-bit items, then convert, scale, shift,
 * store 8 floats. Long runs per plane matter (AMD EPYC Zen 3, (8, 128, 64, 64), 1 thread,
 * paired with a contiguous int8 -> float32 cast of as many items, time of the cast / time of
 * this): the 32 planes of each round written at once (no tile) 0.45, strips of 128 or 1024
 * pixels 0.5 / 0.75, the whole block (4096 pixels, 16 KiB runs) 0.9-0.96; the staged route
 * (a byte transpose into the tile, then its rows converted) 0.5. The strip's last round ends
 * at pixel n, redoing pixels of the one before (the same values: d and s never meet here);
 * fewer than 8 pixels go item by item. */
ST_INLINE void st_planes_items(char *d, st_idx dp, const char *s, st_idx lo, st_idx n,
                               const float *a, const float *c, st_idx pp, int R, int sign)
{
    for (st_idx i = lo; i < n; i++)
        for (int r = 0; r < R; r++) {
            const float v = sign ? (float)(int8_t)s[i * R + r] : (float)(uint8_t)s[i * R + r];
            const float t = v * a[r * pp];
            st_st_f32(d + r * dp + 4 * i, t + c[r * pp]);
        }
}

__attribute__((target("avx2"))) ST_INLINE void
st_planes32_avx2(char *d, st_idx dp, const char *s, st_idx n, const void *scale,
                 const void *shift, st_idx pp, char *tile, st_idx tile_bytes, int sign,
                 int stream)
{
    const float *a = (const float *)scale, *c = (const float *)shift;
    const st_idx most = tile_bytes / 256;   /* rounds of 8 pixels a strip */
    /* streamed: 16-byte stores (numpy's large arrays start 16 bytes into a page, not 32), so
     * planes whose rows start on 16 bytes, and no round redone at the end (pixels in 8s) */
    const int nt = stream && (uintptr_t)d % 16 == 0 && dp % 16 == 0 && n % 8 == 0;
    __m256i M[4];
    if (n < 8 || most < 1) {
        st_planes_items(d, dp, s, 0, n, a, c, pp, 32, sign);
        return;
    }
    for (int r = 0; r < 4; r++)
        M[r] = sign ? ST_PLANE_MASK(4, r, 1, 0) : ST_PLANE_MASK(4, r, 0, 0);
    for (st_idx i0 = 0; i0 < n; i0 += 8 * most) {
        const st_idx rounds = (n - i0 < 8 * most ? n - i0 + 7 : 8 * most) / 8;
        /* round q covers pixels at(q) .. at(q) + 7 */
#define ST_ROUND_AT(q) (i0 + 8 * (q) + 8 <= n ? i0 + 8 * (q) : n - 8)
        for (st_idx q = 0; q < rounds; q++) {
            __m256 v[8];
            const char *px = s + 32 * ST_ROUND_AT(q);
            for (int p = 0; p < 8; p++)
                v[p] = _mm256_loadu_ps((const float *)(const void *)(px + 32 * p));
            st_transpose8_ps(v);
            for (int k = 0; k < 8; k++)
                _mm256_storeu_ps((float *)(void *)(tile + 32 * (k * rounds + q)), v[k]);
        }
        for (int k = 0; k < 8; k++) {
            __m256 A[4], C[4];
            for (int r = 0; r < 4; r++) {
                A[r] = _mm256_broadcast_ss(a + (4 * k + r) * pp);
                C[r] = _mm256_broadcast_ss(c + (4 * k + r) * pp);
            }
            for (st_idx q = 0; q < rounds; q++) {
                const __m256i x = _mm256_loadu_si256(
                    (const __m256i *)(const void *)(tile + 32 * (k * rounds + q)));
                char *o = d + 4 * ST_ROUND_AT(q);
                for (int r = 0; r < 4; r++) {
                    __m256i w = _mm256_shuffle_epi8(x, M[r]);
                    if (sign) w = _mm256_srai_epi32(w, 24);
                    const __m256 t = _mm256_mul_ps(_mm256_cvtepi32_ps(w), A[r]);
                    const __m256 u = _mm256_add_ps(t, C[r]);
                    float *po = (float *)(void *)(o + (4 * k + r) * dp);
                    if (nt) {
                        _mm_stream_ps(po, _mm256_castps256_ps128(u));
                        _mm_stream_ps(po + 4, _mm256_extractf128_ps(u, 1));
                    } else {
                        _mm256_storeu_ps(po, u);
                    }
                }
            }
        }
#undef ST_ROUND_AT
    }
    if (nt)
        _mm_sfence();   /* the streamed stores ordered before whatever follows the call */
}

#define ST_DEF_PLANES32(TN, SIGN, STREAM, NAME)                                               \
    __attribute__((target("avx2"))) static void NAME(                                          \
        char *d, st_idx dp, const char *s, st_idx n, const void *scale, const void *shift,  \
        st_idx pp, char *tile, st_idx tile_bytes)                                            \
    {                                                                                         \
        st_planes32_avx2(d, dp, s, n, scale, shift, pp, tile, tile_bytes, SIGN, STREAM);      \
    }
ST_DEF_PLANES32(u8, 0, 0, st_planes32_u8_avx2)
ST_DEF_PLANES32(i8, 1, 0, st_planes32_i8_avx2)
/* streamed: for destinations far larger than the caches (AMD EPYC Zen 5, int8 NCHW32 ->
 * float32 NCHW (8, 128, 64, 64), cold, against ordinary stores: 1.36x on 1 thread, 1.29x on 2:
 * the planes' lines are no longer read for ownership before they are written) */
ST_DEF_PLANES32(u8, 0, 1, st_planes32_u8_nt_avx2)
ST_DEF_PLANES32(i8, 1, 1, st_planes32_i8_nt_avx2)
#undef ST_DEF_PLANES32
#endif

/* ---- float32 planes -> dense 8-bit pixels of 3 or 4 channels, quantized, in one pass ----------
 * The mirror of the planes kernels, for the narrowing direction: packing float32 NCHW into int8
 * NCHW4, or a CHW float32 image into HWC uint8 (x 255). Pixel i, channel r gets
 * saturate(round_half_even(plane_r[i] * a_r + b_r)), NaN -> 0; planes `sp` bytes apart,
 * parameters of channel r at scale[r * pq]. AVX2: 8 pixels a round; the two packs leave each
 * 128-bit lane holding its 4 pixels channel by channel, and one byte shuffle per lane turns
 * that into pixel order. The kernels are st_pixels_fn (types.h). */

ST_INLINE void st_pixels_scalar(char *d, const char *s, st_idx lo, st_idx n, st_idx sp,
                                    const float *a, const float *c, st_idx pq, int R, int sign)
{
    for (st_idx i = lo; i < n; i++)
        for (int r = 0; r < R; r++) {
            float t = st_ld_f32(s + r * sp + 4 * i) * a[r * pq];
            t = t + c[r * pq];
            d[i * R + r] = (char)st_f32_byte_scalar(t, 1, sign);
        }
}

#if ST_X86_GNU
__attribute__((target("avx2"))) ST_INLINE void
st_pixels_avx2(char *d, const char *s, st_idx n, st_idx sp, const void *scale,
               const void *shift, st_idx pq, int R, int sign)
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
    st_idx i = 0;
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

/* An st_pixels_fn NAME whose body is CALL (the 3- and 4-channel kernels take no tile) */
#define ST_DEF_PIXELS(NAME, CALL)                                                             \
    __attribute__((target("avx2"))) static void NAME(char *d, const char *s, st_idx n,        \
                                                     st_idx sp, const void *scale,           \
                                                     const void *shift, st_idx pq,           \
                                                     char *tile, st_idx tile_bytes)          \
    {                                                                                         \
        (void)tile; (void)tile_bytes;                                                         \
        CALL;                                                                                 \
    }
ST_DEF_PIXELS(st_pixels3_u8_avx2, st_pixels_avx2(d, s, n, sp, scale, shift, pq, 3, 0))
ST_DEF_PIXELS(st_pixels4_u8_avx2, st_pixels_avx2(d, s, n, sp, scale, shift, pq, 4, 0))
ST_DEF_PIXELS(st_pixels3_i8_avx2, st_pixels_avx2(d, s, n, sp, scale, shift, pq, 3, 1))
ST_DEF_PIXELS(st_pixels4_i8_avx2, st_pixels_avx2(d, s, n, sp, scale, shift, pq, 4, 1))

/* ---- float32 planes -> 32-byte pixels: int8 NCHW32, int4 NCHW64 (quantization) --------------
 * The mirror of st_planes32_avx2, for 32 channels of 8 bits and for 64 channels of 4 bits
 * (`nib`: int4 / uint4 pairs, channel 2j in the low nibble of byte j, 2j + 1 in its high one):
 * four planes at a time (eight for nibbles) are read in long runs and quantized as the
 * 4-channel kernel does, 8 pixels a round, and each round's 32 bytes (per lane: 4 pixels of
 * those channels, one 32-bit item a pixel) go to row k (bytes 4k..4k+3 of each pixel) of the
 * scratch tile; then 8 rows of a round, an 8 x 8 matrix of 32-bit items, are transposed in
 * registers (st_transpose8_ps) into the 8 pixels' 32 bytes, one store each. The last round
 * ends at pixel n, redoing pixels of the one before (the same values: d and s never meet
 * here); fewer than 8 pixels go item by item. Quantizing: x * a + c, NaN -> 0, clamped to the
 * type's range, rounded half to even (8 bits: st_f32_byte_scalar's result; 4 bits: the same,
 * as the carrier's saturate to 8 bits then to 4 is the saturate of the exact value). */
ST_INLINE void st_pixels32_scalar(char *d, const char *s, st_idx n, st_idx sp, const float *a,
                                  const float *c, st_idx pq, int sign, int nib)
{
    for (st_idx i = 0; i < n; i++)
        for (int j = 0; j < 32; j++) {
            if (!nib) {
                const float t = st_ld_f32(s + j * sp + 4 * i) * a[j * pq];
                d[32 * i + j] = (char)st_f32_byte_scalar(t + c[j * pq], 1, sign);
                continue;
            }
            unsigned pair = 0;
            for (int h = 0; h < 2; h++) {
                const st_idx ch = 2 * j + h;
                const float t = st_ld_f32(s + ch * sp + 4 * i) * a[ch * pq];
                int v = st_f32_byte_scalar(t + c[ch * pq], 1, sign);
                v = sign ? (v < -8 ? -8 : v > 7 ? 7 : v) : (v > 15 ? 15 : v);
                pair |= ((unsigned)v & 15u) << (4 * h);
            }
            d[32 * i + j] = (char)pair;
        }
}

/* 8 floats of a plane: affine, NaN -> 0, clamped, rounded half to even, as 32-bit items */
__attribute__((target("avx2"))) ST_INLINE __m256i st_quantized8(const char *p, __m256 a,
                                                                __m256 c, __m256 lo, __m256 hi)
{
    __m256 t = _mm256_loadu_ps((const float *)(const void *)p);
    t = _mm256_add_ps(_mm256_mul_ps(t, a), c);
    t = _mm256_and_ps(t, _mm256_cmp_ps(t, t, _CMP_ORD_Q));
    return _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(t, lo), hi));
}

__attribute__((target("avx2"))) ST_INLINE void
st_pixels32_avx2(char *d, const char *s, st_idx n, st_idx sp, const void *scale,
                 const void *shift, st_idx pq, char *tile, st_idx tile_bytes, int sign, int nib)
{
    const float *a = (const float *)scale, *c = (const float *)shift;
    const st_idx most = tile_bytes / 256;   /* rounds of 8 pixels a strip */
    const int per = nib ? 8 : 4;            /* planes a tile row */
    const float top = nib ? (sign ? 7.0f : 15.0f) : (sign ? 127.0f : 255.0f);
    const __m256 lo = _mm256_set1_ps(sign ? (nib ? -8.0f : -128.0f) : 0.0f);
    const __m256 hi = _mm256_set1_ps(top);
    const __m256i low4 = _mm256_set1_epi32(15);
    const __m256i order4 = _mm256_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15,
                                            0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    if (n < 8 || most < 1) {
        st_pixels32_scalar(d, s, n, sp, a, c, pq, sign, nib);
        return;
    }
    for (st_idx i0 = 0; i0 < n; i0 += 8 * most) {
        const st_idx rounds = (n - i0 < 8 * most ? n - i0 + 7 : 8 * most) / 8;
#define ST_ROUND_AT(q) (i0 + 8 * (q) + 8 <= n ? i0 + 8 * (q) : n - 8)
        for (int k = 0; k < 8; k++) {
            __m256 A[8], C[8];
            for (int r = 0; r < per; r++) {
                A[r] = _mm256_broadcast_ss(a + (per * k + r) * pq);
                C[r] = _mm256_broadcast_ss(c + (per * k + r) * pq);
            }
            for (st_idx q = 0; q < rounds; q++) {
                const char *px = s + 4 * ST_ROUND_AT(q) + per * k * sp;
                __m256i v[4];
                for (int r = 0; r < 4; r++) {
                    if (!nib) {
                        v[r] = st_quantized8(px + r * sp, A[r], C[r], lo, hi);
                        continue;
                    }
                    const __m256i e = st_quantized8(px + 2 * r * sp, A[2 * r], C[2 * r], lo, hi);
                    const __m256i o = st_quantized8(px + (2 * r + 1) * sp, A[2 * r + 1],
                                                    C[2 * r + 1], lo, hi);
                    v[r] = _mm256_or_si256(_mm256_and_si256(e, low4),
                                           _mm256_slli_epi32(_mm256_and_si256(o, low4), 4));
                }
                const __m256i w0 = _mm256_packs_epi32(v[0], v[1]);
                const __m256i w1 = _mm256_packs_epi32(v[2], v[3]);
                const __m256i b = sign && !nib ? _mm256_packs_epi16(w0, w1)
                                               : _mm256_packus_epi16(w0, w1);
                _mm256_storeu_si256((__m256i *)(void *)(tile + 32 * (k * rounds + q)),
                                    _mm256_shuffle_epi8(b, order4));
            }
        }
        for (st_idx q = 0; q < rounds; q++) {
            __m256 v[8];
            char *o = d + 32 * ST_ROUND_AT(q);
            for (int k = 0; k < 8; k++)
                v[k] = _mm256_loadu_ps((const float *)(const void *)(tile + 32 * (k * rounds + q)));
            st_transpose8_ps(v);
            for (int p = 0; p < 8; p++)
                _mm256_storeu_ps((float *)(void *)(o + 32 * p), v[p]);
        }
#undef ST_ROUND_AT
    }
}

#define ST_PIXELS32_CALL(SIGN, NIB)                                                           \
    st_pixels32_avx2(d, s, n, sp, scale, shift, pq, tile, tile_bytes, SIGN, NIB)
ST_DEF_PIXELS(st_pixels32_u8_avx2, ST_PIXELS32_CALL(0, 0))
ST_DEF_PIXELS(st_pixels32_i8_avx2, ST_PIXELS32_CALL(1, 0))
ST_DEF_PIXELS(st_pixels64_u4_avx2, ST_PIXELS32_CALL(0, 1))
ST_DEF_PIXELS(st_pixels64_i4_avx2, ST_PIXELS32_CALL(1, 1))
#undef ST_PIXELS32_CALL
#endif

#endif /* STRIDED_KERNELS_CVT_PLANES_H */
