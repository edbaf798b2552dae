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

/* GCC or Clang on x86: target attributes and __builtin_cpu_supports, for run-time dispatch */
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#define ST_X86_GNU 1
#else
#define ST_X86_GNU 0
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

enum { ST_BLOCK_COPY = 0, ST_BLOCK_TRANSPOSE = 1 };  /* and ST_BLOCK_TBUF below */

/* The `nt` argument of the block kernels is a set of flags. ST_NT: write whole destination
 * lines with streaming stores. ST_STITCH (transposes through the staging tile): the block is
 * one of a strip of blocks that write the same destination rows left to right, and a line that
 * straddles two blocks is finished from a per-row carry (st_stitch_row); ST_FRESH: no carry
 * from a previous block (the strip, or this thread's share, starts here); ST_LAST: the strip
 * or the share ends here, so the carries are written out. */
enum { ST_NT = 1, ST_STITCH = 2, ST_FRESH = 4, ST_LAST = 8 };

/* ---- what the CPU offers ------------------------------------------------------------------ */
/* The module is compiled for baseline x86-64 (SSE2); SSSE3 and AVX2 kernels carry target
 * attributes and are called only when st_simd says the CPU has them. st_cpu_init() sets it
 * once, when _core is imported (before any thread copies); st_set_simd() lowers it, so tests
 * and benchmarks can run every level on one machine. 0: SSE2, 1: + SSSE3, 2: + AVX2. */
static int st_simd = 0, st_simd_found = 0;

static int st_cpu_init(void)
{
#if ST_X86_GNU
    __builtin_cpu_init();
    st_simd_found = !__builtin_cpu_supports("ssse3") ? 0 : !__builtin_cpu_supports("avx2") ? 1 : 2;
#endif
    st_simd = st_simd_found;
    return st_simd_found;
}

/* Use at most `level` (negative: all the CPU has); returns the level now in use. */
static int st_set_simd(int level)
{
    st_simd = level < 0 || level > st_simd_found ? st_simd_found : level;
    return st_simd;
}

static int st_get_simd(void) { return st_simd; }

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

#define ST_DEFINE_TRANSPOSE(T, M, MICRO, NAME, ATTR)                                          \
ATTR static void NAME(char *dst, st_idx dp, const char *src, st_idx sq, st_idx R, st_idx C) \
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

ST_DEFINE_TRANSPOSE(st_t1, 16, st_micro_1, st_transpose_1, )
ST_DEFINE_TRANSPOSE(st_t2, 8, st_micro_2, st_transpose_2, )
ST_DEFINE_TRANSPOSE(st_t4, 4, st_micro_4, st_transpose_4, )
ST_DEFINE_TRANSPOSE(st_t8, 2, st_micro_8, st_transpose_8, )
ST_DEFINE_TRANSPOSE(st_t16, 1, st_micro_16, st_transpose_16, )

/* ---- transposed blocks through an L1 staging tile ---------------------------------------- */
/* For blocks of at least one micro-tile each way. The source's rows are consumed whole lines
 * at a time (micro-tiles walk down the source's unit dim), the transposed micro-tiles land in
 * a dense thread-local tile, and the tile's rows are then written out as contiguous runs, in
 * whole lines, streaming when asked. Source rows whose stride aliases in L1 (multiples of
 * ST_ALIAS_BYTES) go through a one-line-per-row buffer first (measured, in C, on 8192^2
 * bytes: 0.44x -> 0.8x memcpy; on an 8256-byte stride, where nothing aliases, the copy costs
 * 0-8%, so only aliasing strides take it). */
#define ST_TILE_BUF 131072
#define ST_LINE 64            /* bytes in a cache line */
#define ST_LINE_OF(T) ((st_idx)(ST_LINE / sizeof(T)))
#ifndef ST_ALIAS_BYTES
#define ST_ALIAS_BYTES 2048   /* row strides that are multiples of this share 1-2 L1 sets */
#endif
#ifndef ST_DIRECT_ROW
#define ST_DIRECT_ROW 16   /* destination rows this short are written in place, in order */
#endif

#define ST_DEFINE_BUFFERED(T, M, MICRO, NAME, ATTR)                                           \
ATTR static void NAME(char *dst, st_idx dp, const char *src, st_idx sq, st_idx R, st_idx C,  \
                      int nt, char *scratch)                                                  \
{                                                                                             \
    T *d = (T *)dst;                                                                          \
    const T *s = (const T *)src;                                                              \
    T *buf = dp == C && C * (st_idx)sizeof(T) <= ST_DIRECT_ROW ? d : (T *)(void *)scratch;     \
    st_idx r0, c0, r, c, rf = R - R % M, cf = C - C % M;                                      \
    if (buf == d) {                                                                           \
        /* one vector per destination row, rows back to back: write them in order */        \
        for (r0 = 0; r0 < rf; r0 += M)                                                        \
            for (c0 = 0; c0 < cf; c0 += M)                                                    \
                MICRO((const char *)(s + r0 + c0 * sq), sq, (char *)(buf + r0 * C + c0), C);  \
    } else if ((sq * (st_idx)sizeof(T)) % ST_ALIAS_BYTES == 0 && rf >= ST_LINE_OF(T)) {       \
        /* Source rows a multiple of 2 KiB apart share one or two L1 sets, so the M lines a    \
         * micro-tile reads evict each other before the next micro-tiles read the rest of      \
         * them: copy M rows of one line each to a dense buffer, and transpose from there.     \
         */                                                                                   \
        T lb[(M) * (ST_LINE / sizeof(T))];                                                    \
        const st_idx L = ST_LINE_OF(T), rl = rf - rf % L;                                     \
        st_idx i, k;                                                                          \
        for (c0 = 0; c0 < cf; c0 += M) {                                                      \
            for (r0 = 0; r0 < rl; r0 += L) {                                                  \
                for (i = 0; i < M; i++)                                                       \
                    memcpy(lb + i * L, s + r0 + (c0 + i) * sq, ST_LINE);                      \
                for (k = 0; k < L; k += M)                                                    \
                    MICRO((const char *)(lb + k), L, (char *)(buf + (r0 + k) * C + c0), C);   \
            }                                                                                 \
            for (; r0 < rf; r0 += M)                                                          \
                MICRO((const char *)(s + r0 + c0 * sq), sq, (char *)(buf + r0 * C + c0), C);  \
        }                                                                                     \
    } else {                                                                                  \
        for (c0 = 0; c0 < cf; c0 += M)                                                        \
            for (r0 = 0; r0 < rf; r0 += M)                                                    \
                MICRO((const char *)(s + r0 + c0 * sq), sq, (char *)(buf + r0 * C + c0), C);  \
    }                                                                                         \
    for (c = 0; c < cf; c++)                                                                  \
        for (r = rf; r < R; r++) buf[r * C + c] = s[r + c * sq];                              \
    for (c = cf; c < C; c++)                                                                  \
        for (r = 0; r < R; r++) buf[r * C + c] = s[r + c * sq];                               \
    if (buf == d)                                                                             \
        return;                                                                               \
    if (nt & ST_STITCH) {                                                                     \
        char *carry = scratch + ST_TILE_BUF;                                                  \
        int *kept = (int *)(void *)(carry + 64 * ST_STITCH_ROWS);                             \
        for (r = 0; r < R; r++)                                                               \
            st_stitch_row((char *)(d + r * dp), (const char *)(buf + r * C),                  \
                          (size_t)C * sizeof(T), carry + 64 * r, kept + r, nt);               \
        return;                                                                               \
    }                                                                                         \
    if (dp == C) {   /* the block is one contiguous run of the destination */                 \
        st_store_row(dst, (const char *)buf, (size_t)(R * C) * sizeof(T), nt);                \
        return;                                                                               \
    }                                                                                         \
    for (r = 0; r < R; r++)                                                                   \
        st_store_row((char *)(d + r * dp), (const char *)(buf + r * C),                       \
                     (size_t)C * sizeof(T), nt);                                              \
}

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
    __m256 r[8], t[8], u[8];
    int i;
    for (i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(f + i * ss);
    for (i = 0; i < 4; i++) {          /* pairs of rows: (0 1) (2 3) (4 5) (6 7) */
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (i = 0; i < 2; i++) {          /* pairs of pairs, within each 128-bit lane */
        u[4 * i] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
        u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
        u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
    }
    for (i = 0; i < 4; i++) {          /* the lanes: rows 0-3 with rows 4-7 */
        _mm256_storeu_ps(o + i * ds, _mm256_permute2f128_ps(u[i], u[i + 4], 0x20));
        _mm256_storeu_ps(o + (i + 4) * ds, _mm256_permute2f128_ps(u[i], u[i + 4], 0x31));
    }
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

/* The AVX2 kernels leave ragged edges (below their M x M tiles) to scalar loops, where the
 * SSE2 ones have half-size tiles: AVX2 only when the edges are a small part of the block. */
#define ST_AVX2_FITS(R, C, M) ((R) >= (M) && (C) >= (M) && ((C) % (M) == 0 || (C) >= 4 * (M)))

ST_DEFINE_TRANSPOSE(st_t4, 8, st_micro_4_avx2, st_transpose_4_avx2, ST_AVX2)
ST_DEFINE_TRANSPOSE(st_t8, 4, st_micro_8_avx2, st_transpose_8_avx2, ST_AVX2)
ST_DEFINE_BUFFERED(st_t4, 8, st_micro_4_avx2, st_tbuf_4_avx2, ST_AVX2)
ST_DEFINE_BUFFERED(st_t8, 4, st_micro_8_avx2, st_tbuf_8_avx2, ST_AVX2)
#else
#define ST_HAVE_AVX2_DISPATCH 0
#endif

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

/* This thread's staging tile: thread-local (a dynamic TLS block, allocated once per thread by
 * the C runtime), so neither small thread stacks nor a malloc per copy are involved. */
#if defined(_MSC_VER)
#define ST_THREAD_LOCAL __declspec(thread)
#else
#define ST_THREAD_LOCAL _Thread_local
#endif
static char *st_scratch(void)
{
    /* the tile, then ST_STITCH_ROWS carries of one line, then their byte counts */
    static ST_THREAD_LOCAL union {
        char b[ST_TILE_BUF + ST_STITCH_ROWS * (64 + sizeof(int))];
        uint64_t align_;
    } tile;
    return tile.b;
}

/* One block of the plan (strides in elements of `itemsize` bytes, itemsize 1/2/4/8/16).
 * ST_BLOCK_TBUF blocks fit the staging tile `scratch` (ST_TILE_BUF bytes, st_scratch()) and
 * span a micro-tile each way; without scratch they are transposed in place, which is correct
 * for any block. */
enum { ST_BLOCK_TBUF = 2 };

static inline void st_copy_block(int kind, int itemsize, char *dst, st_idx dp, st_idx dq,
                                 const char *src, st_idx sp, st_idx sq, st_idx R, st_idx C,
                                 int nt, char *scratch)
{
    if (kind == ST_BLOCK_TBUF && scratch == NULL)
        kind = ST_BLOCK_TRANSPOSE;
    if (kind == ST_BLOCK_TBUF) {
#if ST_HAVE_AVX2_DISPATCH
        if (st_simd >= 2 && itemsize == 4 && ST_AVX2_FITS(R, C, 8)) {
            st_tbuf_4_avx2(dst, dp, src, sq, R, C, nt, scratch);
            return;
        }
        if (st_simd >= 2 && itemsize == 8 && ST_AVX2_FITS(R, C, 4)) {
            st_tbuf_8_avx2(dst, dp, src, sq, R, C, nt, scratch);
            return;
        }
#endif
        switch (itemsize) {
            case 1: st_tbuf_1(dst, dp, src, sq, R, C, nt, scratch); return;
            case 2: st_tbuf_2(dst, dp, src, sq, R, C, nt, scratch); return;
            case 4: st_tbuf_4(dst, dp, src, sq, R, C, nt, scratch); return;
            case 8: st_tbuf_8(dst, dp, src, sq, R, C, nt, scratch); return;
            default: st_tbuf_16(dst, dp, src, sq, R, C, nt, scratch); return;
        }
    }
    if (kind == ST_BLOCK_TRANSPOSE) {
#if ST_HAVE_SSSE3_DISPATCH
        if (itemsize == 1 && sq == R && R >= 2 && R <= 4 && st_has_ssse3()) {
            st_idx done = st_planes_ssse3(dst, dp, src, R, C);
            dst += done;
            src += done * R;
            C -= done;
        }
#endif
        if (itemsize == 1 && dp == C && C >= 2 && C <= 4) {
            st_idx done = st_interleave_bytes(dst, src, sq, R, C);
            dst += done * C;
            src += done;
            R -= done;
        }
#if ST_HAVE_AVX2_DISPATCH
        if (st_simd >= 2 && itemsize == 4 && ST_AVX2_FITS(R, C, 8)) {
            st_transpose_4_avx2(dst, dp, src, sq, R, C);
            return;
        }
        if (st_simd >= 2 && itemsize == 8 && ST_AVX2_FITS(R, C, 4)) {
            st_transpose_8_avx2(dst, dp, src, sq, R, C);
            return;
        }
#endif
        switch (itemsize) {
            case 1: st_transpose_1(dst, dp, src, sq, R, C); return;
            case 2: st_transpose_2(dst, dp, src, sq, R, C); return;
            case 4: st_transpose_4(dst, dp, src, sq, R, C); return;
            case 8: st_transpose_8(dst, dp, src, sq, R, C); return;
            default: st_transpose_16(dst, dp, src, sq, R, C); return;
        }
    }
    switch (itemsize) {
        case 1: st_copy_1(dst, dp, dq, src, sp, sq, R, C, nt); return;
        case 2: st_copy_2(dst, dp, dq, src, sp, sq, R, C, nt); return;
        case 4: st_copy_4(dst, dp, dq, src, sp, sq, R, C, nt); return;
        case 8: st_copy_8(dst, dp, dq, src, sp, sq, R, C, nt); return;
        default: st_copy_16(dst, dp, dq, src, sp, sq, R, C, nt); return;
    }
}

#endif /* STRIDED_COPY_KERNELS_H */
