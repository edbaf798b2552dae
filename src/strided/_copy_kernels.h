/* Block kernels of strided's copy engine: the innermost two loops of a strided copy.
 *
 * The planner in _core.pyx reduces every copy to an outer loop over blocks of a 2-D problem
 *
 *     dst[r * dp + c * dq] = src[r * sp + c * sq]      (0 <= r < R, 0 <= c < C, element strides)
 *
 * and calls st_copy_block() once per block. This header only moves bytes: it knows nothing of
 * layouts, validation or threads. Two block kinds exist:
 *
 *   ST_BLOCK_COPY       any strides; rows are memcpy'd when both sides are unit-stride, filled
 *                       when the source repeats (sq == 0), gathered/scattered otherwise;
 *   ST_BLOCK_TRANSPOSE  dq == 1 and sp == 1: the destination's rows are the source's columns.
 *                       Square micro-tiles of one 16-byte vector per row are transposed in
 *                       registers (SSE2 unpack rounds, or plain C the compiler vectorises);
 *                       short extents (C or R below the micro-tile) use interleave loops with
 *                       the extent a compile-time constant.
 *
 * Items of 1, 2, 4, 8 and 16 bytes have typed paths; the planner rewrites other itemsizes as
 * runs of one of these. Every access goes through a type of alignment 1 (GCC/Clang) or memcpy,
 * so no path assumes aligned memory.
 */
#ifndef STRIDED_COPY_KERNELS_H
#define STRIDED_COPY_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__SSE2__) || defined(_M_X64) || (defined(_M_IX86_FP) && _M_IX86_FP >= 2)
#include <emmintrin.h>
#define ST_HAVE_SSE2 1
#else
#define ST_HAVE_SSE2 0
#endif

#if defined(__GNUC__) || defined(__clang__)
#define ST_UNALIGNED __attribute__((aligned(1), may_alias))
#define ST_INLINE static inline __attribute__((always_inline))
#else
#define ST_UNALIGNED
#define ST_INLINE static __forceinline
#endif

typedef ptrdiff_t st_idx;
typedef uint8_t st_t1;
typedef uint16_t ST_UNALIGNED st_t2;
typedef uint32_t ST_UNALIGNED st_t4;
typedef uint64_t ST_UNALIGNED st_t8;
#if defined(__GNUC__) || defined(__clang__)
typedef struct __attribute__((packed, may_alias)) { uint64_t lo, hi; } st_t16;
#else
#pragma pack(push, 1)
typedef struct { uint64_t lo, hi; } st_t16;
#pragma pack(pop)
#endif

enum { ST_BLOCK_COPY = 0, ST_BLOCK_TRANSPOSE = 1 };

/* ---- copies of any strides -------------------------------------------------------------- */

#define ST_DEFINE_COPY(T, NAME)                                                                \
static void NAME(char *dst, st_idx dp, st_idx dq, const char *src, st_idx sp, st_idx sq,      \
                 st_idx R, st_idx C)                                                          \
{                                                                                             \
    T *d = (T *)dst;                                                                          \
    const T *s = (const T *)src;                                                              \
    st_idx r, c;                                                                              \
    if (dq == 1 && sq == 1) {                                                                 \
        for (r = 0; r < R; r++)                                                               \
            memcpy(d + r * dp, s + r * sp, (size_t)C * sizeof(T));                            \
    } else if (dq == 1 && sq == 0) {                                                          \
        for (r = 0; r < R; r++) {                                                             \
            T v = s[r * sp];                                                                  \
            T *o = d + r * dp;                                                                \
            for (c = 0; c < C; c++) o[c] = v;                                                 \
        }                                                                                     \
    } else if (dq == 1) {                                                                     \
        for (r = 0; r < R; r++) {                                                             \
            T *o = d + r * dp;                                                                \
            const T *i = s + r * sp;                                                          \
            for (c = 0; c < C; c++) o[c] = i[c * sq];                                         \
        }                                                                                     \
    } else if (R > 1 && dp == 1 && sp == 1) {                                                 \
        /* the rows are the unit-stride dim on both sides: walk them innermost */            \
        for (c = 0; c < C; c++)                                                               \
            memcpy(d + c * dq, s + c * sq, (size_t)R * sizeof(T));                            \
    } else {                                                                                  \
        for (r = 0; r < R; r++) {                                                             \
            T *o = d + r * dp;                                                                \
            const T *i = s + r * sp;                                                          \
            for (c = 0; c < C; c++) o[c * dq] = i[c * sq];                                    \
        }                                                                                     \
    }                                                                                         \
}

ST_DEFINE_COPY(st_t1, st_copy_1)
ST_DEFINE_COPY(st_t2, st_copy_2)
ST_DEFINE_COPY(st_t4, st_copy_4)
ST_DEFINE_COPY(st_t8, st_copy_8)
ST_DEFINE_COPY(st_t16, st_copy_16)

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

ST_INLINE void st_micro_1(const char *s, st_idx ss, char *d, st_idx ds)
{
    __m128i a[16], b[16];
    int i;
    for (i = 0; i < 16; i++) a[i] = ST_LOADU(s + i * ss);
    ST_ROUND(16, _mm_unpacklo_epi8, _mm_unpackhi_epi8);
    ST_ROUND(16, _mm_unpacklo_epi8, _mm_unpackhi_epi8);
    ST_ROUND(16, _mm_unpacklo_epi8, _mm_unpackhi_epi8);
    ST_ROUND(16, _mm_unpacklo_epi8, _mm_unpackhi_epi8);
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

#define ST_EDGE(T)                                                                            \
    for (r = r0; r < r1; r++)                                                                 \
        for (c = c0; c < c1; c++) d[r * dp + c] = s[r + c * sq];

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

#define ST_DEFINE_TRANSPOSE(T, M, MICRO, NAME)                                                \
static void NAME(char *dst, st_idx dp, const char *src, st_idx sq, st_idx R, st_idx C)        \
{                                                                                             \
    T *d = (T *)dst;                                                                          \
    const T *s = (const T *)src;                                                              \
    st_idx r, c, r0, c0, r1, c1;                                                              \
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
    for (r0 = 0; r0 + M <= R; r0 += M) {                                                      \
        for (c0 = 0; c0 + M <= C; c0 += M)                                                    \
            MICRO((const char *)(s + r0 + c0 * sq), sq, (char *)(d + r0 * dp + c0), dp);      \
        r1 = r0 + M; c1 = C;                                                                  \
        ST_EDGE(T)                                                                            \
    }                                                                                         \
    r1 = R; c0 = 0; c1 = C;                                                                   \
    ST_EDGE(T)                                                                                \
}

ST_DEFINE_TRANSPOSE(st_t1, 16, st_micro_1, st_transpose_1)
ST_DEFINE_TRANSPOSE(st_t2, 8, st_micro_2, st_transpose_2)
ST_DEFINE_TRANSPOSE(st_t4, 4, st_micro_4, st_transpose_4)
ST_DEFINE_TRANSPOSE(st_t8, 2, st_micro_8, st_transpose_8)
ST_DEFINE_TRANSPOSE(st_t16, 1, st_micro_16, st_transpose_16)

/* One block of the plan (strides in elements of `itemsize` bytes, itemsize 1/2/4/8/16). */
static inline void st_copy_block(int kind, int itemsize, char *dst, st_idx dp, st_idx dq,
                                 const char *src, st_idx sp, st_idx sq, st_idx R, st_idx C)
{
    if (kind == ST_BLOCK_TRANSPOSE) {
        switch (itemsize) {
            case 1: st_transpose_1(dst, dp, src, sq, R, C); return;
            case 2: st_transpose_2(dst, dp, src, sq, R, C); return;
            case 4: st_transpose_4(dst, dp, src, sq, R, C); return;
            case 8: st_transpose_8(dst, dp, src, sq, R, C); return;
            default: st_transpose_16(dst, dp, src, sq, R, C); return;
        }
    }
    switch (itemsize) {
        case 1: st_copy_1(dst, dp, dq, src, sp, sq, R, C); return;
        case 2: st_copy_2(dst, dp, dq, src, sp, sq, R, C); return;
        case 4: st_copy_4(dst, dp, dq, src, sp, sq, R, C); return;
        case 8: st_copy_8(dst, dp, dq, src, sp, sq, R, C); return;
        default: st_copy_16(dst, dp, dq, src, sp, sq, R, C); return;
    }
}

#endif /* STRIDED_COPY_KERNELS_H */
