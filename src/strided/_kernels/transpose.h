/* Transposes: in-register micro-transposes (SSE2 unpack rounds, or plain C), transposed
 * blocks, transposed blocks through the L1 staging tile, and the AVX2 micro-tiles chosen at
 * run time. */
#ifndef STRIDED_KERNELS_TRANSPOSE_H
#define STRIDED_KERNELS_TRANSPOSE_H

#include "common.h"
#include "blocks.h"
#include "tile.h"

/* ---- in-register micro-transposes ------------------------------------------------------- */
/* M x M tiles, M = 16 / itemsize: M source rows (stride ss) of one vector each become M
 * destination rows (stride ds). Round k pairs vector i with vector i + M/2 by an unpack of the
 * element width: read as a bit string (row bits | column bits), each round rotates the string
 * by one bit, so log2(M) rounds exchange rows and columns. */

#if ST_HAVE_SSE2
#define ST_LOADU(p) _mm_loadu_si128((const __m128i *)(const void *)(p))
#define ST_STOREU(p, v) _mm_storeu_si128((__m128i *)(void *)(p), (v))

#define ST_ROUND(M, LO, HI)                                                                   \
    do {                                                                                      \
        int i_;                                                                               \
        for (i_ = 0; i_ < (M) / 2; i_++) {                                                    \
            b[2 * i_] = LO(a[i_], a[i_ + (M) / 2]);                                           \
            b[2 * i_ + 1] = HI(a[i_], a[i_ + (M) / 2]);                                       \
        }                                                                                     \
        for (i_ = 0; i_ < (M); i_++) a[i_] = b[i_];                                           \
    } while (0)

/* the four rounds of a 16 x 16 byte transpose (in each 16-byte lane), a[] to a[] */
#define ST_BYTE_ROUNDS(LO, HI)                                                                \
    do {                                                                                      \
        ST_ROUND(16, LO, HI);                                                                 \
        ST_ROUND(16, LO, HI);                                                                 \
        ST_ROUND(16, LO, HI);                                                                 \
        ST_ROUND(16, LO, HI);                                                                 \
    } while (0)

ST_INLINE void st_micro_1(const char *s, st_idx ss, char *d, st_idx ds)
{
    __m128i a[16], b[16];
    int i;
    for (i = 0; i < 16; i++) a[i] = ST_LOADU(s + i * ss);
    ST_BYTE_ROUNDS(_mm_unpacklo_epi8, _mm_unpackhi_epi8);
    for (i = 0; i < 16; i++) ST_STOREU(d + i * ds, a[i]);
}

ST_INLINE void st_micro_2(const char *s, st_idx ss, char *d, st_idx ds)
{
    __m128i a[8], b[8];
    int i;
    for (i = 0; i < 8; i++) a[i] = ST_LOADU(s + i * ss * 2);
    ST_ROUND(8, _mm_unpacklo_epi16, _mm_unpackhi_epi16);
    ST_ROUND(8, _mm_unpacklo_epi16, _mm_unpackhi_epi16);
    ST_ROUND(8, _mm_unpacklo_epi16, _mm_unpackhi_epi16);
    for (i = 0; i < 8; i++) ST_STOREU(d + i * ds * 2, a[i]);
}

ST_INLINE void st_micro_4(const char *s, st_idx ss, char *d, st_idx ds)
{
    __m128i a[4], b[4];
    int i;
    for (i = 0; i < 4; i++) a[i] = ST_LOADU(s + i * ss * 4);
    ST_ROUND(4, _mm_unpacklo_epi32, _mm_unpackhi_epi32);
    ST_ROUND(4, _mm_unpacklo_epi32, _mm_unpackhi_epi32);
    for (i = 0; i < 4; i++) ST_STOREU(d + i * ds * 4, a[i]);
}

ST_INLINE void st_micro_8(const char *s, st_idx ss, char *d, st_idx ds)
{
    __m128i a0 = ST_LOADU(s), a1 = ST_LOADU(s + ss * 8);
    ST_STOREU(d, _mm_unpacklo_epi64(a0, a1));
    ST_STOREU(d + ds * 8, _mm_unpackhi_epi64(a0, a1));
}
#else
/* Portable micro-tiles: the same data movement in plain C. */
#define ST_DEFINE_MICRO(T, M, NAME)                                                           \
ST_INLINE void NAME(const char *s, st_idx ss, char *d, st_idx ds)                             \
{                                                                                             \
    T t[M][M];                                                                                \
    int i, j;                                                                                 \
    for (i = 0; i < M; i++)                                                                   \
        for (j = 0; j < M; j++) t[i][j] = ((const T *)s)[i * ss + j];                         \
    for (j = 0; j < M; j++)                                                                   \
        for (i = 0; i < M; i++) ((T *)d)[j * ds + i] = t[i][j];                               \
}
ST_DEFINE_MICRO(st_t1, 16, st_micro_1)
ST_DEFINE_MICRO(st_t2, 8, st_micro_2)
ST_DEFINE_MICRO(st_t4, 4, st_micro_4)
ST_DEFINE_MICRO(st_t8, 2, st_micro_8)
#endif

ST_INLINE void st_micro_16(const char *s, st_idx ss, char *d, st_idx ds)
{
    (void)ss; (void)ds;
    memcpy(d, s, 16);
}

/* ---- transposed blocks ------------------------------------------------------------------ */
/* dst[r * dp + c] = src[r + c * sq]. Full M x M tiles go through the micro-kernel; the ragged
 * edges, and blocks narrower than a tile, through the interleave loops below, which the
 * compiler unrolls for the small constant extents that matter (C = 2, 3, 4: RGB(A) pixels,
 * NCHW4 lanes). */

/* items [r0_, r1_) x [c0_, c1_) of a block, one at a time */
#define ST_EDGE(T)                                                                            \
    for (r = r0_; r < r1_; r++)                                                               \
        for (c = c0_; c < c1_; c++) d[r * dp + c] = s[r + c * sq];

#define ST_INTERLEAVE_CASE(T, K)                                                              \
    case K:                                                                                   \
        for (r = 0; r < R; r++) {                                                             \
            T *o = d + r * dp;                                                                \
            int k_;                                                                           \
            for (k_ = 0; k_ < K; k_++) o[k_] = s[r + k_ * sq];                                \
        }                                                                                     \
        return;

#define ST_DEINTERLEAVE_CASE(T, K)                                                            \
    case K:                                                                                   \
        for (c = 0; c < C; c++) {                                                             \
            const T *i_ = s + c * sq;                                                         \
            int k_;                                                                           \
            for (k_ = 0; k_ < K; k_++) d[k_ * dp + c] = i_[k_];                               \
        }                                                                                     \
        return;

#define ST_DEFINE_TRANSPOSE(T, M, MICRO, NAME, ATTR)                                          \
ATTR static void NAME(char *dst, st_idx dp, const char *src, st_idx sq, st_idx R, st_idx C) \
{                                                                                             \
    T *d = (T *)dst;                                                                          \
    const T *s = (const T *)src;                                                              \
    st_idx r, c, r0, c0, rf, cf, rt, r0_, r1_, c0_, c1_;                                      \
    int ro, co;                                                                               \
    if (C < M) {                                                                              \
        switch (C) {                                                                          \
            ST_INTERLEAVE_CASE(T, 1)                                                          \
            ST_INTERLEAVE_CASE(T, 2)                                                          \
            ST_INTERLEAVE_CASE(T, 3)                                                          \
            ST_INTERLEAVE_CASE(T, 4)                                                          \
            default: break;                                                                   \
        }                                                                                     \
    }                                                                                         \
    if (R < M) {                                                                              \
        switch (R) {                                                                          \
            ST_DEINTERLEAVE_CASE(T, 1)                                                        \
            ST_DEINTERLEAVE_CASE(T, 2)                                                        \
            ST_DEINTERLEAVE_CASE(T, 3)                                                        \
            ST_DEINTERLEAVE_CASE(T, 4)                                                        \
            default: break;                                                                   \
        }                                                                                     \
    }                                                                                         \
    /* A ragged edge of at least half a tile is one more tile flush with the block's last     \
     * row or column, over items already written (the same values again; source and           \
     * destination never share bytes here); a thinner one goes through the item loop, which   \
     * was faster there (C harness, NHWC -> NCHW bytes and floats: an edge of 1 item 0.57-    \
     * 0.68x as a tile, 8 of 16 bytes 1.8-2.05x, 4 of 8 floats 0.87-1.15x). */                \
    rf = R - R % M; cf = C - C % M;                                                           \
    ro = R >= M && 2 * (R % M) >= M;                                                          \
    co = C >= M && 2 * (C % M) >= M;                                                          \
    for (r0 = 0; r0 < rf + (ro ? M : 0); r0 += M) {                                           \
        rt = r0 < rf ? r0 : R - M;                                                            \
        for (c0 = 0; c0 < cf; c0 += M)                                                        \
            MICRO((const char *)(s + rt + c0 * sq), sq, (char *)(d + rt * dp + c0), dp);      \
        if (co)                                                                               \
            MICRO((const char *)(s + rt + (C - M) * sq), sq,                                  \
                  (char *)(d + rt * dp + C - M), dp);                                         \
        r0_ = rt; r1_ = rt + M; c0_ = co ? C : cf; c1_ = C;                                   \
        ST_EDGE(T)                                                                            \
    }                                                                                         \
    if (!ro) {                                                                                \
        r0_ = rf; r1_ = R; c0_ = 0; c1_ = C;                                                  \
        ST_EDGE(T)                                                                            \
    }                                                                                         \
}

ST_DEFINE_TRANSPOSE(st_t1, 16, st_micro_1, st_transpose_1, )
ST_DEFINE_TRANSPOSE(st_t2, 8, st_micro_2, st_transpose_2, )
ST_DEFINE_TRANSPOSE(st_t4, 4, st_micro_4, st_transpose_4, )
ST_DEFINE_TRANSPOSE(st_t8, 2, st_micro_8, st_transpose_8, )
ST_DEFINE_TRANSPOSE(st_t16, 1, st_micro_16, st_transpose_16, )

/* ---- narrow transposes: fewer than a tile's rows on one side ---------------------------- */
/* Blocks with 5 to M - 1 items on one side (bytes: NCHW <-> NHWC with 5-15 channels; 2-byte
 * items: 5-7) have no whole M x M tile, and went item by item (8-14x slower than 4 or 16
 * channels). Here the K planes still make a tile, its other rows zero: M pixels at a time,
 * one vector a pixel. A tile's vectors are loaded and stored whole where the bytes past the
 * K items a vector carries are the next pixels' (dense pixels, not the block's last 16
 * bytes): a whole store spills into pixels written after it, a whole load reads items of the
 * layout; every other pixel goes through the exact moves below. */
#if ST_HAVE_SSE2
/* the first n < 16 bytes of v to o, exactly */
ST_INLINE void st_store_part(char *o, __m128i v, int n)
{
    if (n & 8) {
        _mm_storel_epi64((__m128i *)(void *)o, v);
        v = _mm_srli_si128(v, 8);
        o += 8;
    }
    if (n & 4) {
        int32_t x = _mm_cvtsi128_si32(v);
        memcpy(o, &x, 4);
        v = _mm_srli_si128(v, 4);
        o += 4;
    }
    if (n & 2) {
        int16_t x = (int16_t)_mm_cvtsi128_si32(v);
        memcpy(o, &x, 2);
        v = _mm_srli_si128(v, 2);
        o += 2;
    }
    if (n & 1) *o = (char)_mm_cvtsi128_si32(v);
}

/* n < 16 bytes from p, exactly, the rest of the vector zero */
ST_INLINE __m128i st_load_part(const char *p, int n)
{
    char t[16] = {0};
    memcpy(t, p, (size_t)n);
    return ST_LOADU(t);
}

/* ROUNDS transposes a[] (M vectors) in place, b[] its scratch */
#define ST_DEFINE_NARROW(M, U, ROUNDS, INTO, OUTOF)                                           \
/* K < M planes (sq items apart) into R >= M pixels of K items (dp apart) */                 \
static void INTO(char *d, st_idx dp, const char *s, st_idx sq, st_idx R, int K)              \
{                                                                                             \
    __m128i a[M], b[M];                                                                       \
    const st_idx db = dp * (U), sb = sq * (U), whole = dp == K ? 16 : 0;                      \
    st_idx r0, rt;                                                                            \
    int i;                                                                                    \
    for (r0 = 0; r0 < R; r0 += M) {                                                           \
        rt = r0 + M <= R ? r0 : R - M;                                                        \
        for (i = 0; i < M; i++)                                                               \
            a[i] = i < K ? ST_LOADU(s + rt * (U) + i * sb) : _mm_setzero_si128();            \
        ROUNDS;                                                                               \
        if (whole && (R - rt - M + 1) * db >= whole) {  /* every store inside */              \
            for (i = 0; i < M; i++) ST_STOREU(d + (rt + i) * db, a[i]);                       \
            continue;                                                                         \
        }                                                                                     \
        for (i = 0; i < M; i++) {                                                             \
            char *o = d + (rt + i) * db;                                                      \
            if ((R - rt - i) * db >= whole && whole)                                          \
                ST_STOREU(o, a[i]);                                                           \
            else                                                                              \
                st_store_part(o, a[i], K * (U));                                              \
        }                                                                                     \
    }                                                                                         \
}                                                                                             \
/* C >= M pixels of K < M items (sq apart) out to K planes (dp items apart) */               \
static void OUTOF(char *d, st_idx dp, const char *s, st_idx sq, int K, st_idx C)             \
{                                                                                             \
    __m128i a[M], b[M];                                                                       \
    const st_idx db = dp * (U), sb = sq * (U), whole = sq == K ? 16 : 0;                      \
    st_idx c0, ct;                                                                            \
    int i;                                                                                    \
    for (c0 = 0; c0 < C; c0 += M) {                                                          \
        ct = c0 + M <= C ? c0 : C - M;                                                        \
        if (whole && (C - ct - M + 1) * sb >= whole)    /* every load inside */               \
            for (i = 0; i < M; i++) a[i] = ST_LOADU(s + (ct + i) * sb);                       \
        else                                                                                  \
        for (i = 0; i < M; i++) {                                                             \
            const char *p = s + (ct + i) * sb;                                                \
            a[i] = (C - ct - i) * sb >= whole && whole ? ST_LOADU(p)                          \
                                                       : st_load_part(p, K * (U));            \
        }                                                                                     \
        ROUNDS;                                                                               \
        for (i = 0; i < K; i++) ST_STOREU(d + i * db + ct * (U), a[i]);                       \
    }                                                                                         \
}

ST_DEFINE_NARROW(16, 1, ST_BYTE_ROUNDS(_mm_unpacklo_epi8, _mm_unpackhi_epi8),
                 st_narrow_into_1, st_narrow_outof_1)
ST_DEFINE_NARROW(8, 2,
                 ST_ROUND(8, _mm_unpacklo_epi16, _mm_unpackhi_epi16);
                 ST_ROUND(8, _mm_unpacklo_epi16, _mm_unpackhi_epi16);
                 ST_ROUND(8, _mm_unpacklo_epi16, _mm_unpackhi_epi16),
                 st_narrow_into_2, st_narrow_outof_2)

/* Bytes into pixels of K <= 8: eight plane rows (the missing ones zero) need three unpack
 * rounds, not four, and come out two pixels a vector (rows of 8 bytes: the round rotates the
 * bit string plane(3) | pixel(4) by one, so three leave pixel(3) | pixel's low bit, plane).
 * 24 shuffles for 16 pixels against the 16-row tile's 64. */
static void st_narrow_into_1_8(char *d, st_idx dp, const char *s, st_idx sq, st_idx R, int K)
{
    __m128i a[8], b[8];
    const int dense = dp == K;
    st_idx r0, rt;
    int i;
    for (r0 = 0; r0 < R; r0 += 16) {
        rt = r0 + 16 <= R ? r0 : R - 16;
        for (i = 0; i < 8; i++)
            a[i] = i < K ? ST_LOADU(s + rt + i * sq) : _mm_setzero_si128();
        ST_ROUND(8, _mm_unpacklo_epi8, _mm_unpackhi_epi8);
        ST_ROUND(8, _mm_unpacklo_epi8, _mm_unpackhi_epi8);
        ST_ROUND(8, _mm_unpacklo_epi8, _mm_unpackhi_epi8);
        if (dense && K == 8) {
            for (i = 0; i < 8; i++) ST_STOREU(d + (rt + 2 * i) * 8, a[i]);
            continue;
        }
        if (dense && (R - rt - 15) * K >= 8) {   /* every pixel's 8-byte store inside */
            for (i = 0; i < 8; i++) {
                _mm_storel_epi64((__m128i *)(void *)(d + (rt + 2 * i) * K), a[i]);
                _mm_storel_epi64((__m128i *)(void *)(d + (rt + 2 * i + 1) * K),
                                 _mm_unpackhi_epi64(a[i], a[i]));
            }
            continue;
        }
        for (i = 0; i < 16; i++) {
            char *o = d + (rt + i) * dp;
            const __m128i v = i & 1 ? _mm_unpackhi_epi64(a[i >> 1], a[i >> 1]) : a[i >> 1];
            if (dense && (R - rt - i) * K >= 8)
                _mm_storel_epi64((__m128i *)(void *)o, v);
            else
                st_store_part(o, v, K);
        }
    }
}

/* A block with 5 to M - 1 items on one side and a whole tile on the other, bytes or 2-byte
 * items: run it here (1) or leave it to the tiles and item loops (0). */
static int st_narrow_transpose(int itemsize, char *d, st_idx dp, const char *s, st_idx sq,
                               st_idx R, st_idx C)
{
    const st_idx M = itemsize == 1 ? 16 : 8;
    if (itemsize > 2)
        return 0;
    if (4 < C && C < M && R >= M) {
        (itemsize == 2 ? st_narrow_into_2 : C <= 8 ? st_narrow_into_1_8 : st_narrow_into_1)(
            d, dp, s, sq, R, (int)C);
        return 1;
    }
    if (4 < R && R < M && C >= M) {
        (itemsize == 1 ? st_narrow_outof_1 : st_narrow_outof_2)(d, dp, s, sq, (int)R, C);
        return 1;
    }
    return 0;
}
#else
static int st_narrow_transpose(int itemsize, char *d, st_idx dp, const char *s, st_idx sq,
                               st_idx R, st_idx C)
{
    (void)itemsize; (void)d; (void)dp; (void)s; (void)sq; (void)R; (void)C;
    return 0;
}
#endif

/* ---- transposed blocks through a staging tile ------------------------------------------- */
/* tile.h's loop with the same items on both sides (the conversion engine's instances of it
 * convert as they go: convert_tiles.h). */
#define ST_DEFINE_BUFFERED(T, M, MICRO, NAME, ATTR)                                           \
    ST_DEFINE_TILED(T, T, M, MICRO, ST_SAME, NAME, ATTR)

ST_DEFINE_BUFFERED(st_t1, 16, st_micro_1, st_tbuf_1, )
ST_DEFINE_BUFFERED(st_t2, 8, st_micro_2, st_tbuf_2, )
ST_DEFINE_BUFFERED(st_t4, 4, st_micro_4, st_tbuf_4, )
ST_DEFINE_BUFFERED(st_t8, 2, st_micro_8, st_tbuf_8, )
ST_DEFINE_BUFFERED(st_t16, 1, st_micro_16, st_tbuf_16, )

/* ---- AVX2 micro-tiles, chosen at run time ------------------------------------------------- */
/* One 32-byte vector per row: 8 x 8 tiles of 4-byte items, 4 x 4 of 8-byte ones. Twice the
 * work of an SSE2 tile per shuffle, and the source is read 32 bytes per row: a streamed 4096^2
 * float32 transpose ran 1.3-1.4x faster with these than with the SSE2 tiles (C prototype). The
 * functions carry target("avx2"), so the rest of the module still runs on any x86-64;
 * st_copy_block calls them only when the CPU has AVX2 (st_cpu_init). */
#if ST_HAVE_SSE2 && ST_X86_GNU
#include <immintrin.h>
#define ST_HAVE_AVX2_DISPATCH 1
#define ST_AVX2 __attribute__((target("avx2")))

ST_AVX2 static inline __attribute__((always_inline))
void st_micro_4_avx2(const char *s, st_idx ss, char *d, st_idx ds)
{
    const float *f = (const float *)(const void *)s;
    float *o = (float *)(void *)d;
    __m256 r[8];
    int i;
    for (i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(f + i * ss);
    st_transpose8_ps(r);
    for (i = 0; i < 8; i++) _mm256_storeu_ps(o + i * ds, r[i]);
}

ST_AVX2 static inline __attribute__((always_inline))
void st_micro_8_avx2(const char *s, st_idx ss, char *d, st_idx ds)
{
    const double *f = (const double *)(const void *)s;
    double *o = (double *)(void *)d;
    __m256d r0 = _mm256_loadu_pd(f), r1 = _mm256_loadu_pd(f + ss);
    __m256d r2 = _mm256_loadu_pd(f + 2 * ss), r3 = _mm256_loadu_pd(f + 3 * ss);
    __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1);
    __m256d t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);
    _mm256_storeu_pd(o, _mm256_permute2f128_pd(t0, t2, 0x20));
    _mm256_storeu_pd(o + ds, _mm256_permute2f128_pd(t1, t3, 0x20));
    _mm256_storeu_pd(o + 2 * ds, _mm256_permute2f128_pd(t0, t2, 0x31));
    _mm256_storeu_pd(o + 3 * ds, _mm256_permute2f128_pd(t1, t3, 0x31));
}

/* 16 x 16 tiles of 2-byte items, one 32-byte row each: the SSE2 kernel's three unpack rounds
 * run in both lanes at once, transposing the four 8 x 8 quarters in place (rows 0-7, then rows
 * 8-15), and one lane permute a destination row puts the quarters where they belong. 64
 * shuffles and 32 loads and stores of 32 bytes for 512 bytes, against 96 shuffles and 64
 * moves of 16 bytes for four SSE2 tiles. */
#define ST_LOAD256(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define ST_STORE256(p, v) _mm256_storeu_si256((__m256i *)(void *)(p), (v))
ST_AVX2 static inline __attribute__((always_inline))
void st_micro_2_avx2(const char *s, st_idx ss, char *d, st_idx ds)
{
    __m256i a[8], b[8], top[8];
    int i;
    for (i = 0; i < 8; i++) a[i] = ST_LOAD256(s + i * ss * 2);
    ST_ROUND(8, _mm256_unpacklo_epi16, _mm256_unpackhi_epi16);
    ST_ROUND(8, _mm256_unpacklo_epi16, _mm256_unpackhi_epi16);
    ST_ROUND(8, _mm256_unpacklo_epi16, _mm256_unpackhi_epi16);
    /* top[j]: destination row j's items 0-7 (lane 0) and row 8 + j's items 0-7 (lane 1) */
    for (i = 0; i < 8; i++) top[i] = a[i];
    for (i = 0; i < 8; i++) a[i] = ST_LOAD256(s + (8 + i) * ss * 2);
    ST_ROUND(8, _mm256_unpacklo_epi16, _mm256_unpackhi_epi16);
    ST_ROUND(8, _mm256_unpacklo_epi16, _mm256_unpackhi_epi16);
    ST_ROUND(8, _mm256_unpacklo_epi16, _mm256_unpackhi_epi16);
    for (i = 0; i < 8; i++) {
        ST_STORE256(d + i * ds * 2, _mm256_permute2x128_si256(top[i], a[i], 0x20));
        ST_STORE256(d + (8 + i) * ds * 2, _mm256_permute2x128_si256(top[i], a[i], 0x31));
    }
}

/* 32 x 32 tiles of bytes, one 32-byte row each: the SSE2 kernel's four unpack rounds run in
 * both lanes at once on rows 0-15 (the two 16 x 16 quarters of their columns 0-15 and
 * 16-31), then on rows 16-31, and one lane permute a destination row joins the halves, as in
 * the 2-byte kernel above: 128 shuffles and 64 loads and stores of 32 bytes for 1 KiB, against
 * 256 shuffles and 128 moves of 16 bytes for four SSE2 tiles. */
ST_AVX2 static inline __attribute__((always_inline))
void st_micro_1_avx2(const char *s, st_idx ss, char *d, st_idx ds)
{
    __m256i a[16], b[16], top[16];
    int i;
    for (i = 0; i < 16; i++) a[i] = ST_LOAD256(s + i * ss);
    ST_BYTE_ROUNDS(_mm256_unpacklo_epi8, _mm256_unpackhi_epi8);
    /* top[j]: destination row j's bytes 0-15 (lane 0) and row 16 + j's bytes 0-15 (lane 1) */
    for (i = 0; i < 16; i++) top[i] = a[i];
    for (i = 0; i < 16; i++) a[i] = ST_LOAD256(s + (16 + i) * ss);
    ST_BYTE_ROUNDS(_mm256_unpacklo_epi8, _mm256_unpackhi_epi8);
    for (i = 0; i < 16; i++) {
        ST_STORE256(d + i * ds, _mm256_permute2x128_si256(top[i], a[i], 0x20));
        ST_STORE256(d + (16 + i) * ds, _mm256_permute2x128_si256(top[i], a[i], 0x31));
    }
}

/* Floats into pixels of 4 < K < 8 (NCHW -> NHWC with 5-7 channels): the AVX2 8 x 8 tile with
 * its missing plane rows zero, pixel vectors stored whole where the floats past the K spill
 * into pixels written after them (dense pixels), else under a mask (exact). The SSE2 4 x 4
 * tiles left a column of K - 4 floats to the item loop (K = 5 ran 2.5x slower than K = 4). */
ST_AVX2 static void st_narrow_into_4_avx2(char *d, st_idx dp, const char *s, st_idx sq,
                                          st_idx R, int K)
{
    const float *f = (const float *)(const void *)s;
    float *o = (float *)(void *)d;
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(K),
                                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    __m256 r[8];
    st_idx r0, rt;
    int i;
    for (r0 = 0; r0 < R; r0 += 8) {
        rt = r0 + 8 <= R ? r0 : R - 8;
        for (i = 0; i < 8; i++)
            r[i] = i < K ? _mm256_loadu_ps(f + rt + i * sq) : _mm256_setzero_ps();
        st_transpose8_ps(r);
        if (dp == K && (R - rt - 7) * K >= 8) {   /* every pixel's whole store inside */
            for (i = 0; i < 8; i++) _mm256_storeu_ps(o + (rt + i) * K, r[i]);
            continue;
        }
        for (i = 0; i < 8; i++) {
            if (dp == K && (R - rt - i) * K >= 8)
                _mm256_storeu_ps(o + (rt + i) * K, r[i]);
            else
                _mm256_maskstore_ps(o + (rt + i) * dp, mask, r[i]);
        }
    }
}

/* The staged AVX2 kernels (tile.h) leave ragged edges (below their M x M tiles) to scalar
 * loops: AVX2 only when the edges are a small part of the block. In place, a ragged edge is
 * one more tile (ST_DEFINE_TRANSPOSE): any block of a tile each way. */
#define ST_AVX2_FITS(R, C, M) ((R) >= (M) && (C) >= (M) && ((C) % (M) == 0 || (C) >= 4 * (M)))
#define ST_AVX2_TILES(R, C, M) ((R) >= (M) && (C) >= (M))

ST_DEFINE_TRANSPOSE(st_t1, 32, st_micro_1_avx2, st_transpose_1_avx2, ST_AVX2)
ST_DEFINE_TRANSPOSE(st_t2, 16, st_micro_2_avx2, st_transpose_2_avx2, ST_AVX2)
ST_DEFINE_TRANSPOSE(st_t4, 8, st_micro_4_avx2, st_transpose_4_avx2, ST_AVX2)
ST_DEFINE_TRANSPOSE(st_t8, 4, st_micro_8_avx2, st_transpose_8_avx2, ST_AVX2)
ST_DEFINE_BUFFERED(st_t2, 16, st_micro_2_avx2, st_tbuf_2_avx2, ST_AVX2)
ST_DEFINE_BUFFERED(st_t4, 8, st_micro_4_avx2, st_tbuf_4_avx2, ST_AVX2)
ST_DEFINE_BUFFERED(st_t8, 4, st_micro_8_avx2, st_tbuf_8_avx2, ST_AVX2)
#else
#define ST_HAVE_AVX2_DISPATCH 0
#endif

#endif /* STRIDED_KERNELS_TRANSPOSE_H */
