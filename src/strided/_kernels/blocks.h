/* Fills of a repeated element and the typed copies of any strides (memcpy, fill, gather,
 * scatter); the contiguous rows they write are in rows.h. */
#ifndef STRIDED_KERNELS_BLOCKS_H
#define STRIDED_KERNELS_BLOCKS_H

#include "common.h"
#include "rows.h"

/* ---- fills: one element broadcast over a row -------------------------------------------- */
/* Fill n elements of `size` bytes (1, 2, 4, 8 or 16) at d with the element at v: the element
 * splatted into one vector register (SPLAT), stored over the row. The first vector is stored
 * unaligned at d; the rest at addresses aligned to the vector (aligned stores: 1.25x faster
 * than unaligned ones on rows of 8 KiB in the L3, AMD EPYC), from a copy of the register
 * rotated to that phase of the pattern when the alignment falls inside an element (d not a
 * multiple of `size`); the last vector ends at the row's end (unaligned, the pattern's phase
 * 0 again, as W is a multiple of size). Every store lies in [d, d + size * n): no byte
 * outside the row is read or written. With ST_NT in `nt`, rows of 256 bytes or more stream
 * their whole 64-byte lines (ordinary stores for the ragged ends: a line is streamed whole or
 * not at all): measured on 64 MiB fills (AMD EPYC), 1.4-1.5x faster than ordinary stores
 * here, which a fill's stores pay with a read of every line. Rows of up to four vectors are
 * unaligned vectors from d, the last ending at the row's end; rows shorter than a vector are
 * filled element by element (st_fill_short). A call fills a block's R rows (one splat a row),
 * so that short rows do not pay a call each. The value is read into the register before any
 * store, so it may lie in the row itself. */
ST_INLINE void st_fill_short(char *d, const char *v, size_t size, size_t n)
{
    size_t i;
    switch (size) {
#define ST_FILL_SHORT_CASE(K, T)                                                              \
        case K: { T x; memcpy(&x, v, K); for (i = 0; i < n; i++) memcpy(d + i * K, &x, K); }  \
            return;
        ST_FILL_SHORT_CASE(1, uint8_t)
        ST_FILL_SHORT_CASE(2, uint16_t)
        ST_FILL_SHORT_CASE(4, uint32_t)
        ST_FILL_SHORT_CASE(8, uint64_t)
#undef ST_FILL_SHORT_CASE
        default: {
            st_t16 x;
            memcpy(&x, v, 16);
            for (i = 0; i < n; i++) memcpy(d + i * 16, &x, 16);
        }
    }
}

#define ST_DEFINE_FILL(NAME, ATTR, VEC, W, SPLAT, LOADU, STOREU, STORE, STREAM, SHORT)         \
ATTR static void NAME(char *d, st_idx dp, const char *v, st_idx vp, st_idx R, size_t size,      \
                      size_t n, int nt)                                                       \
{                                                                                             \
    union { char b[2 * W]; VEC x[2]; } pat;                                                   \
    const size_t total = size * n;                                                            \
    const size_t align = (nt & ST_NT) && total >= 256 ? 64 : W;                               \
    size_t bytes, head, i;                                                                    \
    st_idx r;                                                                                 \
    VEC x, y;                                                                                 \
    char *a;                                                                                  \
    if (total < W) {                                                                          \
        SHORT(d, dp, v, vp, R, size, n, nt);                                                  \
        return;                                                                               \
    }                                                                                         \
    for (r = 0; r < R; r++, d += dp, v += vp) {                                               \
        x = SPLAT(v, size);                                                                   \
        if (total <= 4 * W) {   /* a short row: vectors from d, the last ending at its end */ \
            for (i = 0; i + W < total; i += W)                                                \
                STOREU((VEC *)(void *)(d + i), x);                                            \
            STOREU((VEC *)(void *)(d + total - W), x);                                        \
            continue;                                                                         \
        }                                                                                     \
        STOREU((VEC *)(void *)d, x);                                                          \
        head = (size_t)(-(uintptr_t)d) & (align - 1);                                         \
        for (i = W; i < head; i += W)   /* (streamed: the line's head) */                     \
            STOREU((VEC *)(void *)(d + i), x);                                                \
        a = d + head;                                                                         \
        bytes = total - head;                                                                 \
        y = x;                                                                                \
        if (head % size) {   /* the pattern's phase at a: rotate the register */              \
            pat.x[0] = x;                                                                     \
            pat.x[1] = x;                                                                     \
            y = LOADU((const VEC *)(const void *)(pat.b + head % size));                      \
        }                                                                                     \
        if (align == 64) {                                                                    \
            for (; bytes >= 64; bytes -= 64, a += 64)                                         \
                for (i = 0; i < 64; i += W)                                                   \
                    STREAM((VEC *)(void *)(a + i), y);                                        \
        } else {                                                                              \
            for (; bytes >= 4 * W; bytes -= 4 * W, a += 4 * W) {                              \
                STORE((VEC *)(void *)a, y);                                                   \
                STORE((VEC *)(void *)(a + W), y);                                             \
                STORE((VEC *)(void *)(a + 2 * W), y);                                         \
                STORE((VEC *)(void *)(a + 3 * W), y);                                         \
            }                                                                                 \
        }                                                                                     \
        for (; bytes >= W; bytes -= W, a += W)                                                \
            STORE((VEC *)(void *)a, y);                                                       \
        if (bytes)                                                                            \
            STOREU((VEC *)(void *)(a + bytes - W), x);                                        \
    }                                                                                         \
}

/* R rows of n elements at d, dp bytes apart, each all equal to its element at v + r * vp. */
ST_INLINE void st_fill_short_rows(char *d, st_idx dp, const char *v, st_idx vp, st_idx R,
                                  size_t size, size_t n, int nt)
{
    st_idx r;
    (void)nt;
    for (r = 0; r < R; r++) st_fill_short(d + r * dp, v + r * vp, size, n);
}

#if ST_HAVE_SSE2
/* A vector of W bytes holding the element at v (1, 2, 4, 8 or 16 bytes) over and over: PFX is
 * the intrinsics' prefix (_mm, _mm256), WIDEN turns a 16-byte element's vector into VEC. */
#define ST_DEFINE_SPLAT(NAME, ATTR, VEC, PFX, WIDEN)                                          \
ATTR ST_INLINE VEC NAME(const char *v, size_t size)                                           \
{                                                                                             \
    uint16_t h;                                                                               \
    uint32_t w;                                                                               \
    int64_t q;                                                                                \
    switch (size) {                                                                           \
        case 1: return PFX##_set1_epi8((char)*v);                                             \
        case 2: memcpy(&h, v, 2); return PFX##_set1_epi16((short)h);                          \
        case 4: memcpy(&w, v, 4); return PFX##_set1_epi32((int)w);                            \
        case 8: memcpy(&q, v, 8); return PFX##_set1_epi64x(q);                                \
        default: return WIDEN(_mm_loadu_si128((const __m128i *)(const void *)v));             \
    }                                                                                         \
}
#define ST_SAME128(x) (x)
ST_DEFINE_SPLAT(st_splat_sse2, , __m128i, _mm, ST_SAME128)
ST_DEFINE_FILL(st_fill_sse2, , __m128i, 16, st_splat_sse2, _mm_loadu_si128, _mm_storeu_si128,
               _mm_store_si128, _mm_stream_si128, st_fill_short_rows)
#if ST_X86_GNU
#include <immintrin.h>
#define ST_FILL_AVX2 1
ST_DEFINE_SPLAT(st_splat_avx2, __attribute__((target("avx2"))), __m256i, _mm256,
                _mm256_broadcastsi128_si256)
/* (rows of 16-31 bytes: the 16-byte vectors) */
ST_DEFINE_FILL(st_fill_avx2, __attribute__((target("avx2"))), __m256i, 32, st_splat_avx2,
               _mm256_loadu_si256, _mm256_storeu_si256, _mm256_store_si256, _mm256_stream_si256,
               st_fill_sse2)
#endif
#endif

/* R rows (dp bytes apart) of n elements of `size` bytes (1, 2, 4, 8, 16), row r all equal to
 * the element at v + r * vp: 32-byte vectors where the CPU has AVX2 (st_simd 2), 16-byte ones
 * below. */
static inline void st_fill(char *d, st_idx dp, const char *v, st_idx vp, st_idx R, size_t size,
                           size_t n, int nt)
{
#if defined(ST_FILL_AVX2)
    if (st_simd >= 2) {
        st_fill_avx2(d, dp, v, vp, R, size, n, nt);
        return;
    }
#endif
#if ST_HAVE_SSE2
    st_fill_sse2(d, dp, v, vp, R, size, n, nt);
#else
    st_fill_short_rows(d, dp, v, vp, R, size, n, nt);
#endif
}

/* ---- runs of elements any distance apart ------------------------------------------------- */
/* One run of C elements dq and sq apart (in elements), four a round, the four loads before
 * the four stores. Measured (AMD EPYC Zen 3, 1 thread, dst[0::2] <- src[1::2] of separate
 * arrays, 64 KiB - 64 MiB): through the engine, float32 / uint16 0.56-0.9x numpy with one
 * element a round, 0.91-1.0x with four; in C (4 MiB), 1-byte items 2.3 -> 1.45 ms, 2- and
 * 4-byte ones level; eight a round (numpy's loop) was no faster, and 1.1-1.2x slower on
 * 2-byte items. Inlined with a constant dq (1: a gather), each caller gets its own loop. */
#define ST_DEFINE_STRIDED_RUN(T, NAME)                                                         \
ST_INLINE void NAME(T *o, st_idx dq, const T *i, st_idx sq, st_idx C)                          \
{                                                                                             \
    st_idx c = 0;                                                                             \
    for (; c + 4 <= C; c += 4, o += 4 * dq, i += 4 * sq) {                                    \
        T v0 = i[0], v1 = i[sq], v2 = i[2 * sq], v3 = i[3 * sq];                              \
        o[0] = v0;                                                                            \
        o[dq] = v1;                                                                           \
        o[2 * dq] = v2;                                                                       \
        o[3 * dq] = v3;                                                                       \
    }                                                                                         \
    for (; c < C; c++, o += dq, i += sq) *o = *i;                                             \
}

ST_DEFINE_STRIDED_RUN(st_t1, st_strided_run_1)
ST_DEFINE_STRIDED_RUN(st_t2, st_strided_run_2)
ST_DEFINE_STRIDED_RUN(st_t4, st_strided_run_4)
ST_DEFINE_STRIDED_RUN(st_t8, st_strided_run_8)
ST_DEFINE_STRIDED_RUN(st_t16, st_strided_run_16)

/* ---- bytes two apart on both sides (interleaved slices: a[0::2] <- a[1::2]) --------------- */
/* dst[2k] = src[2k], 0 <= k < n, 1-byte items. Two parts:
 * - where every byte between the destination's elements (its gaps) is an element of the
 *   source, 16 or 32 elements a vector: the source's and the destination's bytes loaded, the
 *   even lanes taken from the source, the odd ones kept, stored back. The gaps are then
 *   rewritten with the values they hold, and they are bytes that this copy reads, never
 *   writes, so nothing changes under another writer that the copy itself did not already
 *   race with. The source is then the destination's other lane in one buffer (a[0::2] <-
 *   a[1::2], a[1::2] <- a[0::2]: addresses an odd number of bytes apart), and the vectors
 *   cover all but the ends;
 * - elsewhere (the ends, a source in another buffer) only the destination's elements are
 *   stored, one byte a store (st_s2_scalar: a separate source, 4 MiB, 1 thread, measured
 *   in C: 1.44-1.93 ms, as numpy's loop; four stores from each 8-byte load were 1.70-2.18 ms).
 * No load or store leaves [d, d + 2(n-1)] or [s, s + 2(n-1)]; the engine runs this only on
 * layouts that share no element (overlapping ones are staged), so no store changes a source
 * byte. Measured in C (AMD EPYC, 64 MiB, 1 thread, a[0::2] <- a[1::2]): byte by byte 15-24 ms,
 * four stores a load 8.5-13 ms, the vectors 4.5-5.5 ms. */
/* The byte-by-byte part: st_strided_run_1 (four loads, then four stores) compiled scalar.
 * gcc 12 -O3 vectorized it here, where its strides are the constant 2, into one vpextrb store
 * a byte, one a cycle; scalar loads and stores issue two a cycle (Zen 3; Ice Lake on).
 * Paired against np.copyto (b[0::2] <- a[1::2], separate 4 MiB arrays, 1 thread, AMD EPYC
 * Zen 3): 0.95-1.09x -> 1.14-1.19x; 64 MiB level (both wait on memory). */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("no-tree-vectorize")))
#endif
static void st_s2_scalar(char *d, const char *s, st_idx n)
{
    st_strided_run_1((st_t1 *)d, 2, (const st_t1 *)s, 2, n);
}

ST_INLINE void st_s2_bytes(char *d, const char *s, st_idx k, st_idx end)
{
    if (k < end)
        st_s2_scalar(d + 2 * k, s + 2 * k, end - k);
}

/* [*lo, *hi): the elements whose vectors of W bytes (W / 2 elements from k) may be rewritten:
 * every gap of the vector a source element, and the vector's bytes inside both layouts. */
ST_INLINE void st_s2_vector_range(const char *d, const char *s, st_idx n, st_idx W, st_idx *lo,
                                  st_idx *hi)
{
    /* delta: the source's byte offset from the destination, as integers (the two may lie in
     * different objects) */
    const intptr_t delta = (intptr_t)((uintptr_t)s - (uintptr_t)d);
    intptr_t first, last;
    *lo = *hi = 0;
    if ((delta & 1) == 0 || delta <= -2 * (intptr_t)n || delta >= 2 * (intptr_t)n)
        return;
    /* gaps 2k+1 .. 2k+W-1 within the source's bytes delta .. delta + 2(n-1), and the vector's
     * last byte 2k+W-1 within both layouts (2(n-1)) */
    first = delta > 1 ? (delta - 1) / 2 : 0;
    last = 2 * ((intptr_t)n - 1);
    if (delta < 0)
        last += delta;
    if (last < (intptr_t)W - 1 + 2 * first)
        return;
    *lo = (st_idx)first;
    *hi = (st_idx)((last - (W - 1)) / 2 + 1);   /* vectors start at k < *hi */
}

#define ST_DEFINE_S2(NAME, ATTR, VEC, W, LOADU, STOREU, SELECT, MASK)                          \
ATTR static void NAME(char *d, const char *s, st_idx n)                                       \
{                                                                                             \
    st_idx k, lo, hi;                                                                         \
    const VEC even = MASK;                                                                    \
    st_s2_vector_range(d, s, n, W, &lo, &hi);                                                 \
    if (hi <= lo) {                                                                           \
        st_s2_bytes(d, s, 0, n);                                                              \
        return;                                                                               \
    }                                                                                         \
    st_s2_bytes(d, s, 0, lo);                                                                 \
    for (k = lo; k < hi; k += W / 2) {                                                        \
        VEC x = LOADU((const VEC *)(const void *)(s + 2 * k));                                \
        VEC y = LOADU((const VEC *)(const void *)(d + 2 * k));                                \
        STOREU((VEC *)(void *)(d + 2 * k), SELECT(y, x, even));                               \
    }                                                                                         \
    st_s2_bytes(d, s, k, n);                                                                  \
}

#if ST_HAVE_SSE2
#define ST_SELECT_SSE2(y, x, m) _mm_or_si128(_mm_and_si128(m, x), _mm_andnot_si128(m, y))
ST_DEFINE_S2(st_copy_s2_sse2, , __m128i, 16, _mm_loadu_si128, _mm_storeu_si128, ST_SELECT_SSE2,
             _mm_set1_epi16(0x00ff))
#if defined(ST_FILL_AVX2)
ST_DEFINE_S2(st_copy_s2_avx2, __attribute__((target("avx2"))), __m256i, 32, _mm256_loadu_si256,
             _mm256_storeu_si256, _mm256_blendv_epi8, _mm256_set1_epi16(0x00ff))
#endif
#endif

/* A row of 1-byte items two apart on both sides: 32-byte vectors where the CPU has AVX2,
 * 16-byte ones below. */
static inline void st_copy_s2(char *d, const char *s, st_idx n)
{
#if defined(ST_FILL_AVX2)
    if (st_simd >= 2) {
        st_copy_s2_avx2(d, s, n);
        return;
    }
#endif
#if ST_HAVE_SSE2
    st_copy_s2_sse2(d, s, n);
#else
    st_s2_bytes(d, s, 0, n);
#endif
}

/* Rows of this many bytes or more are filled by st_fill, shorter ones element by element.
 * Measured in C (AMD EPYC, 1 MiB of rows, AVX2): st_fill 2.1-2.5x faster than the element loop
 * on rows of 1-byte items from 16 bytes on, 1.2-1.3x on 32-byte rows of 4- and 8-byte items,
 * 2-9x from 64 bytes on; 0.5-0.8x on 16-byte rows of those. */
#ifndef ST_FILL_FROM
#define ST_FILL_FROM 32
#endif

/* ---- rows of a few KiB: 32-byte moves inline ---------------------------------------------- */
/* R rows of n bytes (dp and sp bytes apart, never overlapping), ordinary stores. A call to
 * memcpy a row costs a dispatch and a size switch per row, and st_copy_run moves 16 bytes a
 * step: on AVX2 machines rows of 32 bytes to ST_ROWS_INLINE_MAX go through this loop instead,
 * 128 bytes a round (four loads, then four stores: a load never waits on the round's own
 * stores, whatever the rows' distance modulo 4 KiB), the last 32..127 bytes as vectors ending
 * at the row's end. Every load and store lies in [s, s + n) and [d, d + n) of its row. */
/* Measured (AMD EPYC Zen 3, 1 thread, rows of uint8/float32 in the L3, medians of 15, against
 * torch's copy_ and numpy): 836-byte rows 0.78x -> 1.04x torch, 1024 0.93x -> 1.04x, 512
 * (st_copy_run before) 1.03x -> 1.08x; 4 MiB padded->packed float32 in bench_copy 0.70x ->
 * 0.95x torch (a neighbour on the other core). Rows of 8-32 KiB were faster still than memcpy
 * here (117-121 us against 136-154 us), but glibc copies those with `rep movsb` on Intel, not
 * measured: the bound stays where glibc itself moves vectors on both vendors. */
#ifndef ST_ROWS_INLINE_MAX
#define ST_ROWS_INLINE_MAX 4096
#endif
#if defined(ST_FILL_AVX2)
__attribute__((target("avx2")))
static void st_rows_avx2(char *d, st_idx dp, const char *s, st_idx sp, st_idx R, size_t n)
{
    st_idx r;
    for (r = 0; r < R; r++, d += dp, s += sp) {
        size_t k = 0, left;
        __m256i a0, a1, a2, a3;
        for (; k + 128 <= n; k += 128) {
            a0 = _mm256_loadu_si256((const __m256i *)(const void *)(s + k));
            a1 = _mm256_loadu_si256((const __m256i *)(const void *)(s + k + 32));
            a2 = _mm256_loadu_si256((const __m256i *)(const void *)(s + k + 64));
            a3 = _mm256_loadu_si256((const __m256i *)(const void *)(s + k + 96));
            _mm256_storeu_si256((__m256i *)(void *)(d + k), a0);
            _mm256_storeu_si256((__m256i *)(void *)(d + k + 32), a1);
            _mm256_storeu_si256((__m256i *)(void *)(d + k + 64), a2);
            _mm256_storeu_si256((__m256i *)(void *)(d + k + 96), a3);
        }
        left = n - k;                 /* 0..127; n >= 32, so the last vector fits the row */
        if (left == 0)
            continue;
        a3 = _mm256_loadu_si256((const __m256i *)(const void *)(s + n - 32));
        if (left > 32) a0 = _mm256_loadu_si256((const __m256i *)(const void *)(s + k));
        if (left > 64) a1 = _mm256_loadu_si256((const __m256i *)(const void *)(s + k + 32));
        if (left > 96) a2 = _mm256_loadu_si256((const __m256i *)(const void *)(s + k + 64));
        if (left > 32) _mm256_storeu_si256((__m256i *)(void *)(d + k), a0);
        if (left > 64) _mm256_storeu_si256((__m256i *)(void *)(d + k + 32), a1);
        if (left > 96) _mm256_storeu_si256((__m256i *)(void *)(d + k + 64), a2);
        _mm256_storeu_si256((__m256i *)(void *)(d + n - 32), a3);
    }
}
#endif

/* Streamed rows from this long go four at a time (ST_PAGES). Measured against one at a time
 * (Intel Xeon, 64 MiB padded -> packed float32, cold, 1 and 2 threads): rows of 1 KiB
 * 0.84-0.86x, 2 KiB 0.98-1.01x, 4 KiB 1.15-1.21x, 8 KiB 1.23-1.30x. */
#define ST_PAGE_ROWS_FROM 4096
/* R contiguous rows of n bytes (see st_store_row for `nt`). */
static inline void st_copy_rows(char *d, st_idx dp, const char *s, st_idx sp, st_idx R,
                                size_t n, int nt)
{
    st_idx r;
#if defined(ST_FILL_AVX2)
    if (!(nt & ST_NT) && n >= 32 && n <= ST_ROWS_INLINE_MAX && st_simd >= 2) {
        st_rows_avx2(d, dp, s, sp, R, n);
        return;
    }
#endif
#if ST_HAVE_SSE2
    /* streamed rows shorter than four pages: four rows at once (rows.h, st_stream_lines4),
     * each from its first line boundary; heads, ends and the lines one row has more than the
     * others through st_copy_rounds */
    if ((nt & ST_PAGES) && (nt & ST_NT) && n >= ST_PAGE_ROWS_FROM && n < ST_PAGE_SPAN) {
        for (r = 0; r + 4 <= R; r += 4) {
            char *o[4];
            const char *in[4];
            size_t left[4], lines = n / 64, head;
            int i;
            for (i = 0; i < 4; i++) {
                o[i] = d + (r + i) * dp;
                in[i] = s + (r + i) * sp;
                head = (size_t)(-(uintptr_t)o[i]) & 63;
                st_copy_run(o[i], in[i], head);
                o[i] += head;
                in[i] += head;
                left[i] = n - head;
                if (left[i] / 64 < lines)
                    lines = left[i] / 64;
            }
            st_stream_lines4(o, in, lines);
            for (i = 0; i < 4; i++)
                st_copy_rounds(o[i] + lines * 64, in[i] + lines * 64, left[i] - lines * 64, 1);
        }
        for (; r < R; r++)
            st_store_row(d + r * dp, s + r * sp, n, nt);
        return;
    }
    /* streamed rows that follow each other in the destination (a padded -> packed copy) but
     * are not whole lines, or are whole lines that start inside one (numpy's large arrays
     * start 16 bytes into a line, glibc's header): one run, stitched (rows.h,
     * st_stitch_row), so that the line two rows share is streamed too. Row by row, each
     * row's ends were ordinary stores, each a read for ownership alone between streamed
     * lines: rows of 400-418 bytes streamed took 1.5-1.6x the time of ordinary stores (AMD
     * EPYC Zen 4, 8 MiB, cold), 384 (whole lines) 0.83x. The block's own first and last
     * lines stay ordinary: they may share a line with another thread's block. Rows of 16 KiB
     * and more still read four pages at once inside (ST_PAGES, Intel). */
    if ((nt & ST_NT) && (nt & ST_ROWS_JOIN) && R > 1 && dp == (st_idx)n
            && ((uintptr_t)d | (uintptr_t)n) % 64 != 0) {
        char carry[64];
        int k = 0;
        for (r = 0; r < R; r++)
            st_stitch_row(d + r * dp, s + r * sp, n, carry, &k, (nt & ST_PAGES)
                          | (r == 0 ? ST_FRESH : 0) | (r == R - 1 ? ST_LAST : 0));
        return;
    }
#endif
    for (r = 0; r < R; r++)
        st_store_row(d + r * dp, s + r * sp, n, nt);
}

/* ---- copies of any strides -------------------------------------------------------------- */

#define ST_DEFINE_COPY(T, NAME, RUN)                                                           \
static void NAME(char *dst, st_idx dp, st_idx dq, const char *src, st_idx sp, st_idx sq,      \
                 st_idx R, st_idx C, int nt)                                                  \
{                                                                                             \
    T *d = (T *)dst;                                                                          \
    const T *s = (const T *)src;                                                              \
    st_idx r, c;                                                                              \
    if (dq == 1 && sq == 1) {                                                                 \
        st_copy_rows((char *)d, dp * (st_idx)sizeof(T), (const char *)s,                      \
                     sp * (st_idx)sizeof(T), R, (size_t)C * sizeof(T), nt);                   \
    } else if (dq == 1 && sq == 0) {                                                          \
        if (C * (st_idx)sizeof(T) >= ST_FILL_FROM) {                                          \
            st_fill((char *)d, dp * (st_idx)sizeof(T), (const char *)s,                       \
                    sp * (st_idx)sizeof(T), R, sizeof(T), (size_t)C, nt);                     \
        } else {                                                                              \
            for (r = 0; r < R; r++) {                                                         \
                T v = s[r * sp];                                                              \
                T *o = d + r * dp;                                                            \
                for (c = 0; c < C; c++) o[c] = v;                                             \
            }                                                                                 \
        }                                                                                     \
    } else if (dq == 1) {                                                                     \
        for (r = 0; r < R; r++)                                                               \
            RUN(d + r * dp, 1, s + r * sp, sq, C);                                            \
    } else if (sizeof(T) == 1 && dq == 2 && sq == 2) {                                        \
        for (r = 0; r < R; r++)                                                               \
            st_copy_s2((char *)(d + r * dp), (const char *)(s + r * sp), C);                  \
    } else if (R > 1 && dp == 1 && sp == 1) {                                                 \
        /* the rows are the unit-stride dim on both sides: walk them innermost */            \
        for (c = 0; c < C; c++)                                                               \
            st_memcpy((char *)(d + c * dq), (const char *)(s + c * sq),                      \
                      (size_t)R * sizeof(T));                                                 \
    } else {                                                                                  \
        for (r = 0; r < R; r++)                                                               \
            RUN(d + r * dp, dq, s + r * sp, sq, C);                                           \
    }                                                                                         \
}

ST_DEFINE_COPY(st_t1, st_copy_1, st_strided_run_1)
ST_DEFINE_COPY(st_t2, st_copy_2, st_strided_run_2)
ST_DEFINE_COPY(st_t4, st_copy_4, st_strided_run_4)
ST_DEFINE_COPY(st_t8, st_copy_8, st_strided_run_8)
ST_DEFINE_COPY(st_t16, st_copy_16, st_strided_run_16)

#endif /* STRIDED_KERNELS_BLOCKS_H */
