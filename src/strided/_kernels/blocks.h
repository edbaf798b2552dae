/* Fills of a repeated element and the typed copies of any strides (memcpy, fill, gather,
 * scatter); the contiguous rows they write are in rows.h. */
#ifndef STRIDED_KERNELS_BLOCKS_H
#define STRIDED_KERNELS_BLOCKS_H

#include "common.h"
#include "rows.h"

/* Fill n elements of `size` bytes at d with the element at v, from a 64-byte pattern (64 is
 * a multiple of every typed size, so the pattern repeats from d whatever d's alignment).
 * Ordinary stores: measured on 64 MiB fills, streaming stores were 20% slower (a fill has no
 * reads for the stores to overlap with), where they make a large copy 1.2-1.5x faster. */
#define ST_DEFINE_FILL(NAME, ATTR, VEC, LOAD, STORE)                                          \
ATTR static void NAME(char *d, const char *v, size_t size, size_t n)                          \
{                                                                                             \
    union { char b[64]; VEC x[64 / sizeof(VEC)]; } pat;                                       \
    size_t i, bytes = size * n;                                                               \
    for (i = 0; i < 64; i += size) memcpy(pat.b + i, v, size);                                \
    for (; bytes >= 64; bytes -= 64, d += 64)                                                 \
        for (i = 0; i < 64 / sizeof(VEC); i++)                                                \
            STORE((VEC *)(void *)(d + i * sizeof(VEC)), LOAD(&pat.x[i]));                     \
    memcpy(d, pat.b, bytes);                                                                  \
}

#if ST_HAVE_SSE2
#define ST_LOAD128(p) _mm_load_si128(p)
ST_DEFINE_FILL(st_fill_sse2, , __m128i, ST_LOAD128, _mm_storeu_si128)
#if ST_X86_GNU
#include <immintrin.h>
#define ST_FILL_AVX2 1
ST_DEFINE_FILL(st_fill_avx2, __attribute__((target("avx2"))), __m256i, _mm256_load_si256,
               _mm256_storeu_si256)
#endif
#endif

/* Long fills: 32-byte stores where the CPU has AVX2 (in C, 64 MiB: 1.9-2.0 ms against 2.0-2.3 ms
 * with 16-byte stores; within the noise through the library). */
static inline void st_fill(char *d, const char *v, size_t size, size_t n)
{
#if defined(ST_FILL_AVX2)
    if (st_simd >= 2) {
        st_fill_avx2(d, v, size, n);
        return;
    }
#endif
#if ST_HAVE_SSE2
    st_fill_sse2(d, v, size, n);
#else
    size_t i;
    for (i = 0; i < n; i++) memcpy(d + i * size, v, size);
#endif
}

/* ---- copies of any strides -------------------------------------------------------------- */

#define ST_DEFINE_COPY(T, NAME)                                                                \
static void NAME(char *dst, st_idx dp, st_idx dq, const char *src, st_idx sp, st_idx sq,      \
                 st_idx R, st_idx C, int nt)                                                  \
{                                                                                             \
    T *d = (T *)dst;                                                                          \
    const T *s = (const T *)src;                                                              \
    st_idx r, c;                                                                              \
    if (dq == 1 && sq == 1) {                                                                 \
        for (r = 0; r < R; r++)                                                               \
            st_store_row((char *)(d + r * dp), (const char *)(s + r * sp),                     \
                         (size_t)C * sizeof(T), nt);                                          \
    } else if (dq == 1 && sq == 0) {                                                          \
        for (r = 0; r < R; r++) {                                                             \
            T v = s[r * sp];                                                                  \
            T *o = d + r * dp;                                                                \
            if (C * (st_idx)sizeof(T) >= 256) {                                               \
                st_fill((char *)o, (const char *)(s + r * sp), sizeof(T), (size_t)C);         \
                continue;                                                                     \
            }                                                                                 \
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
            st_memcpy((char *)(d + c * dq), (const char *)(s + c * sq),                      \
                      (size_t)R * sizeof(T));                                                 \
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

#endif /* STRIDED_KERNELS_BLOCKS_H */
