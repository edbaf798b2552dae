/* The tiled transpose: a block of a transpose goes through a dense staging tile, so the
 * source is read whole lines at a time and the destination written in whole contiguous runs
 * (streamed when asked). One loop for the copy engine (transpose.h instantiates it with the
 * same item type on both sides) and for the conversion engine (convert_tiles.h instantiates it
 * with a micro-kernel that converts in registers between load and store, and CV, the same
 * conversion of one item for the ragged edges).
 *
 * ST_DEFINE_TILED(TS, TD, M, MICRO, CV, NAME, ATTR) defines
 *
 *     ATTR static void NAME(char *dst, st_idx dp, const char *src, st_idx sq, st_idx R,
 *                           st_idx C, int nt, char *scratch)
 *
 * which writes dst[r * dp + c] = CV(src[r + c * sq]) for r < R, c < C (element strides, items
 * TS and TD of alignment 1); MICRO(s, ss, d, ds) does an M x M micro-tile of that. `scratch`
 * holds R * C items TD (ST_TILE_BUF bytes at most, plus the stitching carries when nt has
 * ST_STITCH); `nt` takes the store flags of common.h. */
#ifndef STRIDED_KERNELS_TILE_H
#define STRIDED_KERNELS_TILE_H

#include "common.h"
#include "rows.h"

#define ST_SAME(x) (x)

/* One line into the alias buffer; a kernel whose micro-tiles load 32 bytes at a time sets this
 * to 32-byte moves, as a load that spans two smaller stores is not forwarded from them. */
#ifndef ST_COPY_LINE
#define ST_COPY_LINE(d, s) memcpy((d), (s), ST_LINE)
#endif

/* For blocks of at least one micro-tile each way. The source's rows are consumed whole lines
 * at a time (micro-tiles walk down the source's unit dim), the transposed micro-tiles land in
 * a dense thread-local tile, and the tile's rows are then written out as contiguous runs, in
 * whole lines, streaming when asked. Source rows whose stride aliases in L1 (multiples of
 * ST_ALIAS_BYTES) go through a one-line-per-row buffer first (measured, in C, on 8192^2
 * bytes: 0.44x -> 0.8x memcpy; on an 8256-byte stride, where nothing aliases, the copy costs
 * 0-8%, so only aliasing strides take it). */
/* The staging buffer: 512 KiB, the most a streamed tile of whole pixel rows from many
 * planes stages (rows_big_bytes, a quarter of a 2 MiB L2); the other tiles use stage_bytes
 * of it (128 KiB at most unless a benchmark sets more). Each thread that copies holds one
 * (st_scratch: thread-local). */
#define ST_TILE_BUF 524288
/* A hint to fetch the line at p; never faults, whatever p. */
#if defined(__GNUC__) || defined(__clang__)
#define ST_PREFETCH(p) __builtin_prefetch((p), 0, 3)
#else
#define ST_PREFETCH(p) ((void)(p))
#endif
/* Before writing out tile row r: row r's share of the next block's source lines, which are
 * runs of `run_` lines, `gap_` bytes apart (one run when the block's source is dense). */
#define ST_PREFETCH_NEXT(r)                                                                   \
    do {                                                                                      \
        st_idx l_ = (r) * per_, e_ = l_ + per_ < lines_ ? l_ + per_ : lines_;                 \
        for (; l_ < e_; l_++)                                                                 \
            ST_PREFETCH(next_ + gap_ * (l_ / run_) + ST_LINE * (l_ % run_));                  \
    } while (0)
#define ST_LINE 64            /* bytes in a cache line */
#define ST_LINE_OF(T) ((st_idx)(ST_LINE / sizeof(T)))
#ifndef ST_ALIAS_BYTES
#define ST_ALIAS_BYTES 2048   /* row strides that are multiples of this share 1-2 L1 sets */
#endif
#ifndef ST_LB_LINES
#define ST_LB_LINES 4         /* lines of each row the crowded-rows buffer holds */
#endif
#ifndef ST_DIRECT_ROW
#define ST_DIRECT_ROW 16   /* destination rows this short are written in place, in order */
#endif

/* Streamed blocks of whole destination rows of one or two micro-tiles, at most a line each
 * (pixels of 16 bytes, 4 or 16 floats, 2 or 8 doubles: NCHW -> NHWC with few channels, NCHW4
 * float32), skip the staging tile: each band of M pixels is transposed into a small buffer in
 * the L1 and streamed out, so the destination's lines are never read for ownership (rows of
 * one vector were written in place with ordinary stores, and the others went through the
 * tile and a second pass). For a 16-byte aligned destination; pixels of two micro-tiles
 * only when their source rows do not crowd an L1 set (there they were level: float32 with 16
 * channels on 1024^2 planes, 512 MiB). Intel Xeon, cold (rotating over 1 GiB), 64 MiB,
 * against before: float32 NCHW4 1.71x (1 thread) / 1.57x (2), uint8 NCHW -> NHWC with 16
 * channels 2.0x / 1.27x, float32 with 16 channels 1.48x / 1.35x (tune_copy, six runs:
 * 1.11-1.33x); 512 MiB, 2 / 1 threads: NCHW4 float32 1.69x / 1.69x, uint8 with 16 channels
 * on 2048^2 planes (4 KiB apart) 1.63x / 1.61x. Two micro-tiles a band is the most: uint8
 * with 64 channels (four, 64 source rows read at once) lost 0.71-0.78x; 128-byte pixels of
 * 32 floats (four) were level on 1 thread and 0.87-0.89x on 2, within that run's noise
 * (rows off the path moved as much): no gain shown, so they keep the tile. */
#if ST_HAVE_SSE2
#define ST_STREAMS_DIRECT(TS, TD, M, C, d, sq, nt)                                            \
    (((nt) & ST_NT) && (C) % (M) == 0 && (C) <= 2 * (M) && (C) * sizeof(TD) <= 64             \
     && ((uintptr_t)(d) & 15) == 0 && (M) * (C) * sizeof(TD) % 16 == 0                        \
     && ((C) == (M) || st_l1_crowd((sq) * (st_idx)sizeof(TS), (int)(C))                       \
                       <= (((nt) & ST_SETS8) ? 8 : 4)))
#define ST_STREAM_DIRECT_ROWS(MICRO, TD, M)                                                   \
    do {                                                                                      \
        __m128i t_[(M) * 64 / 16];                                                            \
        size_t i_, n_ = (size_t)(M) * (size_t)C * sizeof(TD) / 16;                            \
        for (r0 = 0; r0 < rf; r0 += (M)) {                                                    \
            __m128i *o_ = (__m128i *)(void *)(d + r0 * C);                                    \
            for (c0 = 0; c0 < C; c0 += (M))                                                   \
                MICRO((const char *)(s + r0 + c0 * sq), sq,                                   \
                      (char *)(void *)t_ + c0 * sizeof(TD), C);                               \
            for (i_ = 0; i_ < n_; i_++)                                                       \
                _mm_stream_si128(o_ + i_, t_[i_]);                                            \
        }                                                                                     \
    } while (0)
#else
#define ST_STREAMS_DIRECT(TS, TD, M, C, d, sq, nt) 0
#define ST_STREAM_DIRECT_ROWS(MICRO, TD, M) ((void)0)
#endif

#define ST_DEFINE_TILED(TS, TD, M, MICRO, CV, NAME, ATTR)                                     \
ATTR static void NAME(char *dst, st_idx dp, const char *src, st_idx sq, st_idx R, st_idx C,   \
                      int nt, char *scratch)                                                  \
{                                                                                             \
    TD *d = (TD *)dst;                                                                        \
    const TS *s = (const TS *)src;                                                            \
    TD *buf = dp == C && C * (st_idx)sizeof(TD) <= ST_DIRECT_ROW ? d : (TD *)(void *)scratch; \
    st_idx r0, c0, r, c, i, rf = R - R % M, cf = C - C % M;                                   \
    /* the next block of a strip reads the C source columns after these: fetch them while     \
     * this block's rows are written out, when they are one dense run (sq == R: pixels;       \
     * measured, NHWC -> NCHW with 64 floats, 64 MiB, rows not line-aligned: 0.7x -> 0.95x    \
     * the forward copy; DRAM reads otherwise stall the next block's first micro-tiles) or    \
     * when the caller says where the next block is (ST_FETCH*: C runs of R items) */        \
    const char *next_ = (const char *)(sq != R && (nt & ST_FETCH_DOWN) ? s + R : s + C * sq); \
    const st_idx gap_ = sq * (st_idx)sizeof(TS);                                              \
    const st_idx run_ = sq == R ? C * gap_ / ST_LINE + 1                                      \
                                : R * (st_idx)sizeof(TS) / ST_LINE + 2;                       \
    const st_idx lines_ = sq == R ? run_ - 1                                                  \
                          : (nt & (ST_FETCH | ST_FETCH_DOWN)) ? C * run_ : 0;                 \
    const st_idx per_ = lines_ / R + 1;                                                       \
    /* Source rows whose lines crowd an L1 set (a multiple of 2 KiB apart, or any stride      \
     * that puts more than 4 of a micro-tile's rows in one set: planes of 181^2 bytes, 7      \
     * short of 32 KiB) evict each other's lines, and the lines the hardware prefetched,      \
     * before the next micro-tiles read the rest of them: copy lines of M rows to a dense     \
     * buffer, and transpose from there. Staged copies in cache (ST_RUNS) read ST_LB_LINES    \
     * lines a row, and rows of one vector written in place take the buffer too (16-byte      \
     * pixels); paired against one line a row and the direct rows (crowd_runs 0 / 1; AMD      \
     * EPYC Zen 3, 4 MiB, 1 and 2 threads): uint8 NCHW -> NHWC with 16 channels on 128^2      \
     * planes 1.53-1.65x, on 181^2 1.23-1.24x; float32 NCHW32 1.14-1.18x, float64 C = 64 on   \
     * 32^2 planes 1.14x, float32 C = 128 on 32^2 1.05-1.10x, (1024, 1024) float32            \
     * 0.99-1.03x; spread planes 0.98-1.02x. Streamed copies and the conversions read one     \
     * line a row: four cost them 0.92-1.02x (64 MiB copies) and 0.8x (float32 -> float16     \
     * NCHW -> NHWC at 32 and 64 MiB). With ST_SETS8 (a 12-way L1: strided._caches), streamed  \
     * tiles read the source directly up to 8 rows in a set: Intel Xeon, 48 KiB L1d, cold,    \
     * against the buffer, 64 MiB 1 / 2 threads: float32 NCHW -> NHWC with 128 channels       \
     * 1.34 / 1.37x, 32 channels 1.13-1.18 / 1.18x, NCDHW 1.10-1.16 / 1.11x, uint8 (rows,     \
     * 768) column-major 1.16-1.18 / 1.19x, float32 2-D 0.91-1.07 / 0.95x (four runs on 1     \
     * thread), NCHW32 0.95-1.11 / 1.06x, the rest level within the machine's noise; 4 MiB 1  \
     * thread 1.0-1.31x. In cache (1 MiB) it lost up to 0.69x, so only streamed tiles take    \
     * it. */                                                                                 \
    /* Lines ahead that the sweep down the source rows fetches (ST_AHEAD_SHIFT): a block reads \
     * its M rows at a time in runs of a few KiB each, too short for the hardware             \
     * prefetchers to keep the memory busy on one core; see _copy.pyx, sweep_ahead. At most a \
     * quarter of the block's rows ahead (rows of 512 bytes fetch 2 lines ahead, of 2 KiB    \
     * 8): on the Zen 5, against the full distance where rows are four times as long and none \
     * elsewhere, float32 NCHW32 and NCDHW 1.05-1.13x, uint8 column-major 1.04-1.08x, 1 and 2 \
     * threads, float32 NHWC -> NCHW with 64 channels 0.95-1.0x, the rest level. */          \
    const st_idx want_ = (nt & ST_NT) ? ((nt >> ST_AHEAD_SHIFT) & ST_AHEAD_MAX)              \
                                            * ST_LINE_OF(TS) : 0;                              \
    const st_idx quarter_ = rf / 4 / ST_LINE_OF(TS) * ST_LINE_OF(TS);                         \
    const st_idx ahead_ = want_ < quarter_ ? want_ : quarter_;                                \
    const int crowd_ = rf >= ST_LINE_OF(TS) &&                                                \
        ((nt & ST_NT) && (nt & ST_SETS8)                                                      \
             ? st_l1_crowd(sq * (st_idx)sizeof(TS), M) > 8                                    \
             : ((sq * (st_idx)sizeof(TS)) % ST_ALIAS_BYTES == 0 ||                            \
                st_l1_crowd(sq * (st_idx)sizeof(TS), M) > 4));                                \
    if (dp == C && ST_STREAMS_DIRECT(TS, TD, M, C, d, sq, nt)) {                              \
        /* short whole rows, streamed: each band of M rows goes through registers and a     \
         * small buffer in the L1 to streaming stores (the ragged edges below: in place) */   \
        buf = d;                                                                              \
        ST_STREAM_DIRECT_ROWS(MICRO, TD, M);                                                  \
    } else if (buf == d && !(crowd_ && (nt & ST_RUNS))) {                                     \
        /* one vector per destination row, rows back to back: write them in order */          \
        for (r0 = 0; r0 < rf; r0 += M)                                                        \
            for (c0 = 0; c0 < cf; c0 += M)                                                    \
                MICRO((const char *)(s + r0 + c0 * sq), sq, (char *)(buf + r0 * C + c0), C);  \
    } else if (crowd_) {                                                                      \
        TS lb[(M) * ST_LB_LINES * (ST_LINE / sizeof(TS))];                                    \
        const st_idx L = ST_LINE_OF(TS), LW = L * ((nt & ST_RUNS) ? ST_LB_LINES : 1);         \
        const st_idx rw = rf - rf % LW, rl = rf - rf % L;                                     \
        st_idx k, w;                                                                          \
        for (c0 = 0; c0 < cf; c0 += M) {                                                      \
            for (r0 = 0; r0 < rw; r0 += LW) {                                                 \
                for (i = 0; i < M; i++)                                                       \
                    for (w = 0; w < LW / L; w++) {                                            \
                        if (ahead_ && r0 + w * L + ahead_ < rf)                               \
                            ST_PREFETCH(s + r0 + w * L + ahead_ + (c0 + i) * sq);             \
                        ST_COPY_LINE(lb + i * LW + w * L, s + r0 + w * L + (c0 + i) * sq);    \
                    }                                                                         \
                for (k = 0; k < LW; k += M)                                                   \
                    MICRO((const char *)(lb + k), LW, (char *)(buf + (r0 + k) * C + c0), C);  \
            }                                                                                 \
            for (; r0 < rl; r0 += L) {                                                        \
                for (i = 0; i < M; i++)                                                       \
                    ST_COPY_LINE(lb + i * L, s + r0 + (c0 + i) * sq);                         \
                for (k = 0; k < L; k += M)                                                    \
                    MICRO((const char *)(lb + k), L, (char *)(buf + (r0 + k) * C + c0), C);   \
            }                                                                                 \
            for (; r0 < rf; r0 += M)                                                          \
                MICRO((const char *)(s + r0 + c0 * sq), sq, (char *)(buf + r0 * C + c0), C);  \
        }                                                                                     \
    } else if (ahead_) {   /* (the plain loop's twin: a check in every micro-tile cost rows   \
                            * too short to fetch 0.78-0.86x, so those keep the plain one) */  \
        for (c0 = 0; c0 < cf; c0 += M)                                                        \
            for (r0 = 0; r0 < rf; r0 += M) {                                                  \
                if (r0 % ST_LINE_OF(TS) < M && r0 + ahead_ < rf)                              \
                    for (i = 0; i < M; i++)                                                   \
                        ST_PREFETCH(s + r0 + ahead_ + (c0 + i) * sq);                         \
                MICRO((const char *)(s + r0 + c0 * sq), sq, (char *)(buf + r0 * C + c0), C);  \
            }                                                                                 \
    } else {                                                                                  \
        for (c0 = 0; c0 < cf; c0 += M)                                                        \
            for (r0 = 0; r0 < rf; r0 += M)                                                    \
                MICRO((const char *)(s + r0 + c0 * sq), sq, (char *)(buf + r0 * C + c0), C);  \
    }                                                                                         \
    if (R >= M && C >= M) {                                                                   \
        /* ragged edges: one more micro-tile flush with the block's last column or row, over  \
         * items already in the tile (the same values again). An item loop here took 1.5 ns   \
         * an item: NCHW -> NHWC uint8 with 24 or 40 channels (8 of 16 columns left over)     \
         * ran at 0.06x a memcpy. */                                                          \
        if (cf < C)                                                                           \
            for (r0 = 0; r0 < rf; r0 += M)                                                    \
                MICRO((const char *)(s + r0 + (C - M) * sq), sq,                              \
                      (char *)(buf + r0 * C + C - M), C);                                     \
        if (rf < R)                                                                           \
            for (c0 = 0; c0 < C; c0 += M) {                                                   \
                c = c0 + M <= C ? c0 : C - M;                                                 \
                MICRO((const char *)(s + R - M + c * sq), sq,                                 \
                      (char *)(buf + (R - M) * C + c), C);                                    \
            }                                                                                 \
    } else {                                                                                  \
        for (c = 0; c < cf; c++)                                                              \
            for (r = rf; r < R; r++) buf[r * C + c] = CV(s[r + c * sq]);                      \
        for (c = cf; c < C; c++)                                                              \
            for (r = 0; r < R; r++) buf[r * C + c] = CV(s[r + c * sq]);                       \
    }                                                                                         \
    if (buf == d)                                                                             \
        return;                                                                               \
    if (nt & ST_STITCH) {                                                                     \
        char *carry = scratch + ST_TILE_BUF;                                                  \
        int *kept = (int *)(void *)(carry + 64 * ST_STITCH_ROWS);                             \
        for (r = 0; r < R; r++) {                                                             \
            ST_PREFETCH_NEXT(r);                                                              \
            st_stitch_row((char *)(d + r * dp), (const char *)(buf + r * C),                  \
                          (size_t)C * sizeof(TD), carry + 64 * r, kept + r, nt);              \
        }                                                                                     \
        return;                                                                               \
    }                                                                                         \
    if (dp == C) {   /* the block is one contiguous run of the destination */                 \
        st_store_row(dst, (const char *)buf, (size_t)(R * C) * sizeof(TD), nt);               \
        return;                                                                               \
    }                                                                                         \
    for (r = 0; r < R; r++) {                                                                 \
        ST_PREFETCH_NEXT(r);                                                                  \
        st_store_row((char *)(d + r * dp), (const char *)(buf + r * C),                       \
                     (size_t)C * sizeof(TD), nt);                                             \
    }                                                                                         \
}

#include "transpose8.h"   /* st_transpose8_ps: the micro-kernels' register transpose */

#endif /* STRIDED_KERNELS_TILE_H */
