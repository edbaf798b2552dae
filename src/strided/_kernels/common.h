/* Shared ground of strided's kernels, copy and conversion: element types of alignment 1, the
 * block kinds and store flags, the index type and inline marker, and what the CPU offers, found
 * at run time once per extension module that includes it (st_cpu_init, st_set_simd). Every
 * other header of _kernels/ includes this one; none knows layouts, validation or threads. */
#ifndef STRIDED_KERNELS_COMMON_H
#define STRIDED_KERNELS_COMMON_H

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
 * or the share ends here, so the carries are written out. ST_FETCH / ST_FETCH_DOWN (staged
 * transposes): the next block is the C source columns after this block's / the R rows below
 * it; fetch its source while this block's rows are written out. ST_RUNS (staged copies in
 * cache): source rows that crowd an L1 set are read ST_LB_LINES lines a row (tile.h).
 * ST_PAGES (with ST_NT): streamed runs read four places 4 KiB apart at once (rows.h).
 * ST_SETS8 (with ST_NT): the L1 holds 8 of a micro-tile's source rows in one set (12 ways)
 * before they crowd it (tile.h). ST_DEINT16: pixels of 2 items, or of 4 two-byte items,
 * deinterleave with the 16-byte kernels where the AVX2 ones would not stream (interleave.h).
 * ST_DEINT_ALIAS (with ST_NT): the AVX2 deinterleave streams planes a multiple of 2 KiB apart
 * too (interleave.h, st_deint_lines). ST_PIX32_PLAIN (with ST_NT): streamed 8-bit NCHW32
 * blocks whose planes spread over the L1 sets go through the in-register kernel with ordinary
 * stores instead of the streamed tile (copy_kernels.h). ST_ROWS_JOIN (with ST_NT): rows that
 * follow each other in the destination stream as one run, stitched (blocks.h). Bits
 * ST_AHEAD_SHIFT and up (with ST_NT): how many lines ahead of its micro-tiles a streamed
 * tile's sweep down its source rows fetches each row (0-63; tile.h). */
enum { ST_AHEAD_SHIFT = 16, ST_AHEAD_MAX = 63 };
enum { ST_NT = 1, ST_STITCH = 2, ST_FRESH = 4, ST_LAST = 8, ST_FETCH = 16, ST_FETCH_DOWN = 32,
       ST_RUNS = 64, ST_PAGES = 128, ST_SETS8 = 256, ST_DEINT16 = 512, ST_DEINT_ALIAS = 1024,
       ST_PIX32_PLAIN = 2048, ST_ROWS_JOIN = 4096 };

/* ---- what the CPU offers ------------------------------------------------------------------ */
/* The module is compiled for baseline x86-64 (SSE2); SSSE3 and AVX2 kernels carry target
 * attributes and are called only when st_simd says the CPU has them. st_cpu_init() sets it
 * once, when _copy is imported (before any thread copies); st_set_simd() lowers it, so tests
 * and benchmarks can run every level on one machine. 0: SSE2, 1: + SSSE3, 2: + AVX2. */
static int st_simd = 0, st_simd_found = 0;
/* F16C (float16 <-> float32 in registers), which the conversion kernels use beside AVX2. */
static int st_has_f16c = 0;

static inline int st_cpu_init(void)
{
#if ST_X86_GNU
    __builtin_cpu_init();
    st_simd_found = !__builtin_cpu_supports("ssse3") ? 0 : !__builtin_cpu_supports("avx2") ? 1 : 2;
    st_has_f16c = st_simd_found == 2 && __builtin_cpu_supports("f16c") != 0;
#endif
    st_simd = st_simd_found;
    return st_simd_found;
}

/* Use at most `level` (negative: all the CPU has); returns the level now in use. */
static inline int st_set_simd(int level)
{
    st_simd = level < 0 || level > st_simd_found ? st_simd_found : level;
    return st_simd;
}

static inline int st_get_simd(void) { return st_simd; }
/* The most of n lines `stride` bytes apart that share one of an L1's 64 sets of 64-byte
 * lines (4 KiB a way, on every x86 core): 1 when they spread, n on a multiple of 4 KiB.
 * More than 4 (of 8 ways) and the rows' lines evict each other, and the ones the hardware
 * prefetched, before they are read (strided._copy._crowd_l1_sets is the planner's twin). */
static inline int st_l1_crowd(st_idx stride, int n)
{
    unsigned char count[64] = {0};
    int r, most = 0;
    for (r = 0; r < n; r++) {
        const int set = (int)(((r * stride) % 4096 + 4096) % 4096 / 64);
        if (++count[set] > most)
            most = count[set];
    }
    return most;
}

#endif /* STRIDED_KERNELS_COMMON_H */
