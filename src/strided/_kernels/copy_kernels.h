/* Block kernels of strided's copy engine: the innermost two loops of a strided copy.
 *
 * The planner in _copy.pyx reduces every copy to an outer loop over blocks of a 2-D problem
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

/* One header per family; this one only dispatches a block to them. */
#include "common.h"
#include "blocks.h"
#include "transpose.h"
#include "interleave.h"

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
#if ST_HAVE_AVX2_DISPATCH
    /* 32 byte planes into 32-byte pixels (8-bit NCHW32), in registers, unless streamed; with
     * ST_PIX32_PLAIN streamed ones too where the planes spread over the L1 sets (on an AMD
     * EPYC Zen 5, 64 MiB NCHW32 over 362^2-724^2 planes: the streamed tile took 1.0-2.9x
     * the time, 1 and 2 threads; planes that crowd a set, 256^2 and 512^2, 0.67-1.03x:
     * they keep it) */
    if ((kind == ST_BLOCK_TRANSPOSE || (kind == ST_BLOCK_TBUF && (!(nt & ST_NT) ||
            ((nt & ST_PIX32_PLAIN) && st_l1_crowd(sq, 32) <= 4))))
            && itemsize == 1 && C == 32 && dp == 32 && st_simd >= 2) {
        st_idx done = st_pixels32_bytes_avx2(dst, src, sq, R);
        dst += done * 32;
        src += done;
        R -= done;
        if (R == 0)
            return;
    }
#endif
    if (kind == ST_BLOCK_TBUF) {
#if ST_HAVE_AVX2_DISPATCH
        /* 16 x 16 tiles of 2-byte items, unless the block streams pixels of 16 items or less:
         * there the tile reads 16 planes at once where the SSE2 one reads 8, and ran slower
         * (64 MiB NCHW -> NHWC C = 16, AMD EPYC: 0.68-0.86x against 0.83-1.01x a memcpy;
         * elsewhere, 4 MiB, 1 thread, paired: 0.94-1.65x the SSE2 tiles, level on 2-D
         * transposes and C = 16, ahead on C = 64, 256, NCHW32 and 768-column matrices) */
        if (st_simd >= 2 && itemsize == 2 && ST_AVX2_FITS(R, C, 16)
                && !((nt & ST_NT) && C <= 16)) {
            st_tbuf_2_avx2(dst, dp, src, sq, R, C, nt, scratch);
            return;
        }
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
        if (R >= 2 && R * itemsize < 16 && sq <= ST_DEINT_MAX) {
            /* a few planes out of dense pixels (HWC -> CHW): all of C, or none when short */
            if (st_deinterleave(itemsize, dst, dp, src, sq, R, C, nt))
                return;
        }
        if ((itemsize <= 2 || (itemsize == 4 && C == 2)) && dp == C && C >= 2 && C <= 4) {
            /* a few planes into dense pixels (CHW -> HWC) */
            st_idx done = st_interleave(dst, src, sq, R, C, itemsize, nt);
            dst += done * C * itemsize;
            src += done * itemsize;
            R -= done;
        }
        if (st_narrow_transpose(itemsize, dst, dp, src, sq, R, C))
            return;
#if ST_HAVE_AVX2_DISPATCH
        if (itemsize == 4 && 4 < C && C < 8 && R >= 8 && st_simd >= 2) {
            st_narrow_into_4_avx2(dst, dp, src, sq, R, (int)C);
            return;
        }
        if (itemsize == 4 && dp == 3 && C == 3 && st_simd >= 2) {
            st_idx done = st_rgb_4_avx2(dst, src, sq, R, nt & ST_NT);
            dst += done * 12;
            src += done * 4;
            R -= done;
        }
        /* bytes: 32 x 32 tiles in place only. Paired against the SSE2 tiles (AMD EPYC Zen 3,
         * 8 pairs a case, median speedup, warm): 4 MiB 1 thread (rows, 768) column-major
         * 1.16-1.32, NCHW -> NHWC C = 256 1.10-1.16, NHWC -> NCHW C = 64 1.10-1.13, C = 256
         * 1.22-1.25; 16 MiB 1 and 2 threads 1.07-1.31 on the last three, column-major
         * 0.94-1.11; 2-D transposes level. With an 8 MiB memcpy before each call: 0.91-1.37
         * (the 2-D transpose 0.91-0.98). The staged and streamed blocks keep the SSE2 tiles:
         * there the 32-row tile was behind (64 MiB NCHW -> NHWC C = 64 0.83-0.99, NCHW32
         * 0.85-0.90; 4 MiB staged C = 64 0.81-1.04). */
        if (st_simd >= 2 && itemsize == 1 && ST_AVX2_TILES(R, C, 32)) {
            st_transpose_1_avx2(dst, dp, src, sq, R, C);
            return;
        }
        if (st_simd >= 2 && itemsize == 2 && ST_AVX2_TILES(R, C, 16)) {
            st_transpose_2_avx2(dst, dp, src, sq, R, C);
            return;
        }
        if (st_simd >= 2 && itemsize == 4 && ST_AVX2_TILES(R, C, 8)) {
            st_transpose_4_avx2(dst, dp, src, sq, R, C);
            return;
        }
        if (st_simd >= 2 && itemsize == 8 && ST_AVX2_TILES(R, C, 4)) {
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
