/* Copies of rows and fills: contiguous rows (with streaming stores for huge copies), the
 * line stitching of streamed rows, the team's work counter, fills of a repeated element, and
 * the typed copies of any strides (memcpy, fill, gather, scatter). */
#ifndef STRIDED_KERNELS_BLOCKS_H
#define STRIDED_KERNELS_BLOCKS_H

#include "common.h"

/* ---- contiguous rows, optionally with non-temporal stores --------------------------------- */
/* Streaming stores skip the read-for-ownership of each destination line, which is a third of
 * the memory traffic of a large copy; they are used only for copies far larger than the cache
 * (the planner decides) and only on whole, 64-byte-aligned lines: the ragged head and tail of
 * a row are ordinary stores. */
/* A short run (a tile row, a small image row): inline vector moves, since a call to memcpy
 * costs as much as moving a few hundred bytes. The source and destination never overlap
 * here (overlapping copies go through a temporary), so the tail may re-store a few bytes. */
ST_INLINE void st_copy_run(char *d, const char *s, size_t n)
{
    size_t i;
    uint64_t a, b;
#if ST_HAVE_SSE2
    if (n >= 16) {
        for (i = 0; i + 16 <= n; i += 16)
            _mm_storeu_si128((__m128i *)(void *)(d + i),
                             _mm_loadu_si128((const __m128i *)(const void *)(s + i)));
        if (i < n)
            _mm_storeu_si128((__m128i *)(void *)(d + n - 16),
                             _mm_loadu_si128((const __m128i *)(const void *)(s + n - 16)));
        return;
    }
#endif
    if (n >= 8) {
        for (i = 0; i + 8 <= n; i += 8) {
            memcpy(&a, s + i, 8);
            memcpy(d + i, &a, 8);
        }
        if (i < n) {
            memcpy(&b, s + n - 8, 8);
            memcpy(d + n - 8, &b, 8);
        }
        return;
    }
    for (i = 0; i < n; i++) d[i] = s[i];
}

ST_INLINE void st_store_row(char *d, const char *s, size_t n, int nt)
{
#if ST_HAVE_SSE2
    if ((nt & ST_NT) && n >= 64) {
        size_t head = (size_t)(-(uintptr_t)d) & 63;
        if (head) {
            st_copy_run(d, s, head);
            d += head; s += head; n -= head;
        }
        for (; n >= 64; n -= 64, d += 64, s += 64) {
            __m128i v0 = _mm_loadu_si128((const __m128i *)(const void *)s);
            __m128i v1 = _mm_loadu_si128((const __m128i *)(const void *)(s + 16));
            __m128i v2 = _mm_loadu_si128((const __m128i *)(const void *)(s + 32));
            __m128i v3 = _mm_loadu_si128((const __m128i *)(const void *)(s + 48));
            _mm_stream_si128((__m128i *)(void *)d, v0);
            _mm_stream_si128((__m128i *)(void *)(d + 16), v1);
            _mm_stream_si128((__m128i *)(void *)(d + 32), v2);
            _mm_stream_si128((__m128i *)(void *)(d + 48), v3);
        }
        if (n) st_copy_run(d, s, n);
        return;
    }
#else
    (void)nt;
#endif
    if (n <= 512)
        st_copy_run(d, s, n);
    else
        memcpy(d, s, n);
}

#define ST_STITCH_ROWS 1024   /* the most tile rows a stitched block may have */

/* Write n bytes at d, the next piece of a destination row that a strip of blocks writes left
 * to right, streaming every line it completes. `carry` holds the *k bytes that come right
 * before d and have not been written (d - *k is then the start of a line); the last bytes that
 * do not finish a line become the new carry (*k = -1: d is inside a line already written).
 * Bytes of a line shared with another strip or another thread (the row's ends, a share's
 * ends) are written with ordinary stores: a line is either streamed whole by one thread or
 * never streamed. Correctness never depends on the flags (st_store_row writes any bytes at
 * any alignment); they only decide which lines stream. */
ST_INLINE void st_stitch_row(char *d, const char *s, size_t n, char *carry, int *k, int flags)
{
    size_t head, need;
    if ((flags & ST_FRESH) || *k < 0) {
        head = (size_t)(-(uintptr_t)d) & 63;
        *k = 0;
        if (head >= n) {   /* all of it in the line's first part: the next piece starts anew */
            st_copy_run(d, s, n);
            *k = head > n ? -1 : 0;
            return;
        }
        st_copy_run(d, s, head);
        d += head; s += head; n -= head;
    } else if (*k) {
        need = 64 - (size_t)*k;
        if (n < need) {
            memcpy(carry + *k, s, n);
            if (flags & ST_LAST) {
                st_copy_run(d - *k, carry, (size_t)*k + n);
                *k = 0;
            } else {
                *k += (int)n;
            }
            return;
        }
        memcpy(carry + *k, s, need);
        st_store_row(d - *k, carry, 64, ST_NT);
        d += need; s += need; n -= need;
        *k = 0;
    }
    st_store_row(d, s, n - n % 64, ST_NT);   /* d is at a line start (or n < 64) */
    d += n - n % 64; s += n - n % 64; n %= 64;
    if (n && (flags & ST_LAST)) {
        st_copy_run(d, s, n);
    } else if (n) {
        memcpy(carry, s, n);
        *k = (int)n;
    }
}

/* Claim n work items from a counter shared by a team: return the first (>= the total when none
 * is left). Relaxed order: the items are independent, and the parallel region's end orders
 * their stores before the caller goes on. */
static inline int64_t st_claim(int64_t *next, int64_t n)
{
#if defined(__GNUC__) || defined(__clang__)
    return __atomic_fetch_add(next, n, __ATOMIC_RELAXED);
#else
    int64_t first;
#pragma omp atomic capture
    { first = *next; *next += n; }
    return first;
#endif
}

/* Order this thread's streaming stores before whatever follows (the end of the copy). */
static inline void st_store_fence(void)
{
#if ST_HAVE_SSE2
    _mm_sfence();
#endif
}

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

#endif /* STRIDED_KERNELS_BLOCKS_H */
