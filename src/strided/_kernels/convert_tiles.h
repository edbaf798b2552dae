/* Converting transposes in one pass: tile.h's staged transpose with micro-kernels that convert
 * in registers between load and store, for the mixed-precision relayouts (float32 NCHW ->
 * float16 / bfloat16 NHWC).
 *
 * The conversion engine's general transpose converts a block in the source's order into an L2
 * tile and then transposes the tile out with the copy engine's kernels, so every item crosses
 * the cache twice and the destination is written with ordinary stores. These kernels read an
 * 8 x 8 micro-tile of the source, convert and transpose it in AVX2 registers (F16C for
 * float16, torch's integer rounding for bfloat16) and put it in the staging tile, whose rows
 * then leave as whole contiguous runs, streamed for destinations far larger than the cache
 * (the planner's flag). Measured: see _convert.pyx, _plan.
 *
 * Every kernel gives the bits of the portable conversions of convert.h (st_f32_to_f16,
 * st_f32_to_bf16), which the ragged edges use; there is one kernel per (source, destination)
 * pair, picked by st_cvt_tiled() at the SIMD level in use, or none (the engine then takes its
 * general route). */
#ifndef STRIDED_KERNELS_CONVERT_TILES_H
#define STRIDED_KERNELS_CONVERT_TILES_H

/* tile.h's line copy for source rows that alias in L1: 32-byte moves, the width the
 * micro-kernels load (a load spanning two narrower stores is not forwarded from them: with
 * memcpy's 16-byte moves the float16 kernel took 1.5x the time, in cache). Expanded only in
 * the AVX2 instances below. */
#define ST_COPY_LINE(d, s)                                                                    \
    do {                                                                                      \
        const __m256i *s_ = (const __m256i *)(const void *)(s);                               \
        __m256i *d_ = (__m256i *)(void *)(d);                                                 \
        _mm256_storeu_si256(d_, _mm256_loadu_si256(s_));                                      \
        _mm256_storeu_si256(d_ + 1, _mm256_loadu_si256(s_ + 1));                              \
    } while (0)
#include "tile.h"
#include "convert.h"

/* The kernels are st_tiled_fn (types.h); see ST_DEFINE_TILED. */

/* one item, bits in and bits out (the edges of a block) */
#define ST_CV_F32_F16(x) st_f32_to_f16(st_bits_f32(x))
#define ST_CV_F32_BF16(x) st_f32_to_bf16(st_bits_f32(x))

#if ST_X86_GNU
#define ST_TILE_AVX2 __attribute__((target("avx2")))
#define ST_TILE_F16C __attribute__((target("avx2,f16c")))
#define ST_TILE_INLINE static inline __attribute__((always_inline))

#define ST_LD_F32(p) _mm256_loadu_ps((const float *)(const void *)(p))

/* float16, an 8 x 8 micro-tile: each of the eight source rows (channel i, 8 pixels, ss
 * items apart) rounded by F16C into 8 halves first, channels i and i + 4 side by side in one
 * register's lanes, then transposed as 16-bit items: two rounds of unpacks within the lanes
 * and one qword permute give two pixels' 8 channels a register (16 shuffles, against 24 for
 * the float transpose before the rounding; ds apart). On the AMD EPYC Zen 5 (two shuffle
 * ports) level with the float transpose in cache and streamed, 1 and 2 threads; it spares
 * a third of the shuffles where one port takes them all (Intel; unmeasured). */
ST_TILE_F16C ST_TILE_INLINE void st_micro_f32_f16(const char *s, st_idx ss, char *d, st_idx ds)
{
    const int rn = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    __m256i a[4], b[4];
    int k;
    for (k = 0; k < 4; k++)
        a[k] = _mm256_inserti128_si256(
            _mm256_castsi128_si256(_mm256_cvtps_ph(ST_LD_F32(s + k * ss * 4), rn)),
            _mm256_cvtps_ph(ST_LD_F32(s + (k + 4) * ss * 4), rn), 1);
    b[0] = _mm256_unpacklo_epi16(a[0], a[1]);   /* channels 0, 1 (4, 5) of pixels 0-3 */
    b[1] = _mm256_unpackhi_epi16(a[0], a[1]);   /* ... of pixels 4-7 */
    b[2] = _mm256_unpacklo_epi16(a[2], a[3]);   /* channels 2, 3 (6, 7) of pixels 0-3 */
    b[3] = _mm256_unpackhi_epi16(a[2], a[3]);
    for (k = 0; k < 4; k++) {
        /* pixels 2k and 2k + 1: channels 0-3 in the low lane, 4-7 in the high one */
        const __m256i q = k & 1 ? _mm256_unpackhi_epi32(b[k >> 1], b[(k >> 1) + 2])
                                : _mm256_unpacklo_epi32(b[k >> 1], b[(k >> 1) + 2]);
        const __m256i p = _mm256_permute4x64_epi64(q, 0xD8);
        _mm_storeu_si128((__m128i *)(void *)(d + 2 * k * ds * 2), _mm256_castsi256_si128(p));
        _mm_storeu_si128((__m128i *)(void *)(d + (2 * k + 1) * ds * 2),
                         _mm256_extracti128_si256(p, 1));
    }
}

/* bfloat16: the integer rounding is most of the work (7 instructions for 8 values, where F16C
 * takes one), so the rest is cut down: the tile is rounded in the source's order (row i:
 * channel i of 8 pixels), two channels' results are put side by side in 32-bit items by one
 * 16-bit blend (channels 2k, 2k+1 of each pixel), and four such rows make a 4 x 4 transpose
 * of 32-bit items per 128-bit lane, whose rows are each a pixel's 8 channels: 80 instructions
 * a micro-tile (counted) against 104 for the float transpose then the rounding; measured at
 * 64 MiB on 2 threads, 4.4 -> 3.4 ms. */
ST_TILE_AVX2 ST_TILE_INLINE void st_micro_f32_bf16(const char *s, st_idx ss, char *d, st_idx ds)
{
    __m256i p[4], t[4], q[4];
    int k;
    for (k = 0; k < 4; k++) {
        const __m256i a = st_bf16_high(ST_LD_F32(s + 2 * k * ss * 4));
        const __m256i b = st_bf16_high(ST_LD_F32(s + (2 * k + 1) * ss * 4));
        p[k] = _mm256_blend_epi16(_mm256_srli_epi32(a, 16), b, 0xAA);
    }
    t[0] = _mm256_unpacklo_epi32(p[0], p[1]);
    t[1] = _mm256_unpackhi_epi32(p[0], p[1]);
    t[2] = _mm256_unpacklo_epi32(p[2], p[3]);
    t[3] = _mm256_unpackhi_epi32(p[2], p[3]);
    q[0] = _mm256_unpacklo_epi64(t[0], t[2]);   /* pixel 0 (low lane), pixel 4 (high lane) */
    q[1] = _mm256_unpackhi_epi64(t[0], t[2]);   /* pixels 1 and 5 */
    q[2] = _mm256_unpacklo_epi64(t[1], t[3]);   /* pixels 2 and 6 */
    q[3] = _mm256_unpackhi_epi64(t[1], t[3]);   /* pixels 3 and 7 */
    for (k = 0; k < 4; k++) {
        _mm_storeu_si128((__m128i *)(void *)(d + k * ds * 2), _mm256_castsi256_si128(q[k]));
        _mm_storeu_si128((__m128i *)(void *)(d + (k + 4) * ds * 2),
                         _mm256_extracti128_si256(q[k], 1));
    }
}

ST_DEFINE_TILED(st_t4, st_t2, 8, st_micro_f32_f16, ST_CV_F32_F16, st_tiled_f32_f16, ST_TILE_F16C)
ST_DEFINE_TILED(st_t4, st_t2, 8, st_micro_f32_bf16, ST_CV_F32_BF16, st_tiled_f32_bf16,
                ST_TILE_AVX2)
#endif

/* Dense rows converted through a buffer in the L1 whose lines then leave with streaming
 * stores: a destination far larger than the caches is written without its lines being read
 * for ownership first (a contiguous cast moves (ssz + dsz) n bytes instead of (ssz + 2 dsz) n).
 * R rows of n items each that follow each other in the destination (row r at d + r * n * dsz;
 * source rows `sp` bytes apart, row r's parameters at scale + r * pp and shift + r * pp bytes)
 * stream as one run: each row is converted in pieces into the buffer and the pieces are
 * stitched (rows.h, st_stitch_row), so no line is written in two parts, not even one two rows
 * share (row by row, each row's ends were ordinary stores, each a read for ownership; the
 * copy's joined rows: blocks.h). Only the first and last lines of the whole run are ordinary
 * stores: they may share a line with another thread's rows. The caller fences. */
#define ST_CVT_STREAM_BUF 4096
static void st_cvt_stream_rows(const st_cvt_op *op, char *d, const char *s, st_idx sp,
                               st_idx R, st_idx n, const char *scale, const char *shift,
                               st_idx pp)
{
#if ST_HAVE_SSE2
    char buf[ST_CVT_STREAM_BUF] __attribute__((aligned(64)));
    char carry[64];
    int k = 0;
    const st_idx dsz = st_type_size[op->dtype], ssz = st_type_size[op->stype];
    const st_idx per = ST_CVT_STREAM_BUF / dsz;
    for (st_idx r = 0; r < R; r++)
        for (st_idx i = 0, m; i < n; i += m) {
            m = n - i < per ? n - i : per;
            st_cvt_row(op, buf, 1, s + r * sp + i * ssz, 1, m, scale + r * pp, shift + r * pp,
                       0);
            st_stitch_row(d + (r * n + i) * dsz, buf, (size_t)(m * dsz), carry, &k,
                          (r == 0 && i == 0 ? ST_FRESH : 0)
                          | (r == R - 1 && i + m == n ? ST_LAST : 0));
        }
#else
    for (st_idx r = 0; r < R; r++)
        st_cvt_row(op, d + r * n * st_type_size[op->dtype], 1, s + r * sp, 1, n,
                   scale + r * pp, shift + r * pp, 0);
#endif
}

/* One dense run of n items with one set of parameters (ps 0): the rows above, one row. */
static void st_cvt_stream_run(const st_cvt_op *op, char *d, const char *s, st_idx n,
                              const char *scale, const char *shift)
{
    st_cvt_stream_rows(op, d, s, 0, 1, n, scale, shift, 0);
}

/* The one-pass converting transpose of a plain conversion (no scale or shift) from stype to
 * dtype at SIMD level `simd` (2: AVX2, with F16C for float16), or NULL. */
static st_tiled_fn st_cvt_tiled(int stype, int dtype, int mode, int simd)
{
#if ST_X86_GNU
    if (mode != ST_CVT_PLAIN || simd < 2 || !st_cvt_has_avx2)
        return NULL;
    if (stype == ST_F32 && dtype == ST_BF16) return st_tiled_f32_bf16;
    if (st_cvt_has_f16c && stype == ST_F32 && dtype == ST_F16) return st_tiled_f32_f16;
#else
    (void)stype; (void)dtype; (void)mode; (void)simd;
#endif
    return NULL;
}

#endif /* STRIDED_KERNELS_CONVERT_TILES_H */
