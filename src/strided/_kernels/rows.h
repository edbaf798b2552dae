/* Contiguous runs and rows: short runs in registers, rows with streaming stores for huge
 * copies, the line stitching of streamed rows, the team's work counter and the store fence.
 * Shared by the copy engine (blocks.h, transpose.h) and the conversion engine's tiles
 * (convert_tiles.h); every function here is inline, so a module that includes it and uses
 * part of it compiles nothing it does not call. */
#ifndef STRIDED_KERNELS_ROWS_H
#define STRIDED_KERNELS_ROWS_H

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

#if ST_HAVE_SSE2
/* Copy n bytes in 64-byte rounds of four vector loads, then four stores (streaming ones with
 * `stream`: d is then 64-byte aligned), the last n % 64 bytes by st_copy_run. Inlined with a
 * constant `stream`, each caller gets its own loop. */
ST_INLINE void st_copy_rounds(char *d, const char *s, size_t n, int stream)
{
    for (; n >= 64; n -= 64, d += 64, s += 64) {
        __m128i v0 = _mm_loadu_si128((const __m128i *)(const void *)s);
        __m128i v1 = _mm_loadu_si128((const __m128i *)(const void *)(s + 16));
        __m128i v2 = _mm_loadu_si128((const __m128i *)(const void *)(s + 32));
        __m128i v3 = _mm_loadu_si128((const __m128i *)(const void *)(s + 48));
        if (stream) {
            _mm_stream_si128((__m128i *)(void *)d, v0);
            _mm_stream_si128((__m128i *)(void *)(d + 16), v1);
            _mm_stream_si128((__m128i *)(void *)(d + 32), v2);
            _mm_stream_si128((__m128i *)(void *)(d + 48), v3);
        } else {
            _mm_storeu_si128((__m128i *)(void *)d, v0);
            _mm_storeu_si128((__m128i *)(void *)(d + 16), v1);
            _mm_storeu_si128((__m128i *)(void *)(d + 32), v2);
            _mm_storeu_si128((__m128i *)(void *)(d + 48), v3);
        }
    }
    if (n) st_copy_run(d, s, n);
}
#endif

/* memcpy of a long run, except at the distances where glibc's choice for copies of a few KiB
 * up to the L2's size, `rep movsb`, crawls: a destination 1 to 63 bytes past the source modulo
 * 4096 (the "short distance" of 4K aliasing; on AMD Zen, measured 1-3 GB/s against 17-35 GB/s
 * at every other distance, from 16 KiB to 256 KiB). Those go through the vector rounds, which
 * run at memcpy's speed there. Source and destination never overlap here (overlapping copies
 * go through a temporary). */
ST_INLINE void st_memcpy(char *d, const char *s, size_t n)
{
#if ST_HAVE_SSE2
    const size_t gap = (size_t)((uintptr_t)d - (uintptr_t)s) & 4095;
    if (gap != 0 && gap < 64 && n >= 64) {
        st_copy_rounds(d, s, n, 0);
        return;
    }
#endif
    memcpy(d, s, n);
}

#if ST_HAVE_SSE2
/* Stream `lines` whole lines of four runs, line k of each in turn: d[i] 64-byte aligned.
 * A core reads from memory faster from four places at once than along one: the hardware
 * prefetchers follow each run within its 4 KiB page, and four keep more lines in flight (the
 * way glibc's memcpy streams copies larger than its non-temporal threshold). Measured in C,
 * streaming 64 and 512 MiB with 16-byte stores (Intel Xeon, 2 MiB L2, 480 MiB L3; operands
 * cold): one run 16.2-17.4 GB/s on 1 thread, 33.6-35.0 on 2; four runs 4 KiB apart 21.7-22.5
 * and 43.8-44.7 (glibc's memcpy at 512 MiB: 21.5 and 43.5); two runs 20.1-20.2 and 40.4-40.9;
 * a software prefetch 512 B or 1 KiB ahead 0.6-0.8x slower; 32-byte stores level. */
ST_INLINE void st_stream_lines4(char *const d[4], const char *const s[4], size_t lines)
{
    size_t k;
    int i;
    for (k = 0; k < lines * 64; k += 64)
        for (i = 0; i < 4; i++) {
            const char *in = s[i] + k;
            char *o = d[i] + k;
            __m128i v0 = _mm_loadu_si128((const __m128i *)(const void *)in);
            __m128i v1 = _mm_loadu_si128((const __m128i *)(const void *)(in + 16));
            __m128i v2 = _mm_loadu_si128((const __m128i *)(const void *)(in + 32));
            __m128i v3 = _mm_loadu_si128((const __m128i *)(const void *)(in + 48));
            _mm_stream_si128((__m128i *)(void *)o, v0);
            _mm_stream_si128((__m128i *)(void *)(o + 16), v1);
            _mm_stream_si128((__m128i *)(void *)(o + 32), v2);
            _mm_stream_si128((__m128i *)(void *)(o + 48), v3);
        }
}

#define ST_PAGE_SPAN 16384   /* four 4 KiB pieces of a run streamed at once */
#endif

ST_INLINE void st_store_row(char *d, const char *s, size_t n, int nt)
{
#if ST_HAVE_SSE2
    if ((nt & ST_NT) && n >= 64) {
        size_t head = (size_t)(-(uintptr_t)d) & 63;
        if (head) {
            st_copy_run(d, s, head);
            d += head; s += head; n -= head;
        }
        if (nt & ST_PAGES)
            for (; n >= ST_PAGE_SPAN; n -= ST_PAGE_SPAN, d += ST_PAGE_SPAN, s += ST_PAGE_SPAN) {
                char *const o[4] = {d, d + 4096, d + 8192, d + 12288};
                const char *const in[4] = {s, s + 4096, s + 8192, s + 12288};
                st_stream_lines4(o, in, 4096 / 64);
            }
        st_copy_rounds(d, s, n, 1);
        return;
    }
#else
    (void)nt;
#endif
    if (n <= 512)
        st_copy_run(d, s, n);
    else
        st_memcpy(d, s, n);
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
    /* d is at a line start (or n < 64); long pieces read four pages at once with ST_PAGES */
    st_store_row(d, s, n - n % 64, ST_NT | (flags & ST_PAGES));
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

/* How many items of the counter have been claimed (>= the total once none is left). */
static inline int64_t st_claimed(int64_t *next)
{
#if defined(__GNUC__) || defined(__clang__)
    return __atomic_load_n(next, __ATOMIC_RELAXED);
#else
    int64_t now;
#pragma omp atomic read
    now = *next;
    return now;
#endif
}

/* Order this thread's streaming stores before whatever follows (the end of the copy). */
static inline void st_store_fence(void)
{
#if ST_HAVE_SSE2
    _mm_sfence();
#endif
}

#endif /* STRIDED_KERNELS_ROWS_H */
