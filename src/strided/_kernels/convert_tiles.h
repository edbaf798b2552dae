/* Converting transposes in one pass: tile.h's staged transpose with micro-kernels that convert
 * in registers between load and store, for the mixed-precision relayouts (float32 NCHW <->
 * float16 / bfloat16 NHWC).
 *
 * The conversion engine's general transpose converts a block in the source's order into an L2
 * tile and then transposes the tile out with the copy engine's kernels (or the other way
 * round), so every item crosses the cache twice and the destination is written with ordinary
 * stores. These kernels read an 8 x 8 micro-tile of the source, transpose it in AVX2
 * registers, convert it (F16C for float16, integer rounding for bfloat16) and put it in the
 * staging tile, whose rows then leave as whole contiguous runs, streamed for copies far larger
 * than the cache (the planner's flag). Measured at 64 MiB, float32 NCHW -> float16 NHWC
 * (AMD EPYC): see _convert.pyx, _plan.
 *
 * Every kernel gives the bits of the portable conversions of convert.h (st_f32_to_f16,
 * st_f32_to_bf16 ...), which the ragged edges use; there is one kernel per (source,
 * destination) pair, picked by st_cvt_tiled() at the SIMD level in use, or none (the engine
 * then takes its general route). */
#ifndef STRIDED_KERNELS_CONVERT_TILES_H
#define STRIDED_KERNELS_CONVERT_TILES_H

#define ST_COPY_LINE(d, s)                                                                    \
    do {                                                                                      \
        const __m256i *s_ = (const __m256i *)(const void *)(s);                               \
        __m256i *d_ = (__m256i *)(void *)(d);                                                 \
        _mm256_storeu_si256(d_, _mm256_loadu_si256(s_));                                      \
        _mm256_storeu_si256(d_ + 1, _mm256_loadu_si256(s_ + 1));                              \
    } while (0)
#include "tile.h"
#include "convert.h"

/* dst[r * dp + c] = convert(src[r + c * sq]) for r < R, c < C; see ST_DEFINE_TILED. */
typedef void (*st_tiled_fn)(char *dst, st_idx dp, const char *src, st_idx sq, st_idx R,
                            st_idx C, int nt, char *scratch);

/* one item, bits in and bits out (the edges of a block) */
#define ST_CV_F32_F16(x) st_f32_to_f16(st_bits_f32(x))
#define ST_CV_F32_BF16(x) st_f32_to_bf16(st_bits_f32(x))

#if ST_X86_GNU
#define ST_TILE_AVX2 __attribute__((target("avx2")))
#define ST_TILE_F16C __attribute__((target("avx2,f16c")))
#define ST_TILE_INLINE static inline __attribute__((always_inline))

/* 8 floats -> 8 bfloat16 as torch rounds (st_f32_to_bf16): to nearest even, NaN -> 0x7fc0;
 * each in the low half of a 32-bit item */
ST_TILE_AVX2 ST_TILE_INLINE __m256i st_bf16_round(__m256 x)
{
    const __m256i u = _mm256_castps_si256(x);
    const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(odd, _mm256_set1_epi32(0x7fff)));
    r = _mm256_srli_epi32(r, 16);
    return _mm256_blendv_epi8(r, _mm256_set1_epi32(0x7fc0),
                              _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_UNORD_Q)));
}

/* An 8 x 8 micro-tile: eight rows of the source (ss items apart) become eight rows of the
 * destination (ds items apart), converted. LOAD(p) gives 8 floats from the source's 8 items
 * at p; STORE(p, v) writes 8 floats v as the destination's 8 items at p. */
#define ST_DEFINE_CVT_MICRO(NAME, ATTR, TS, TD, LOAD, STORE)                                  \
    ATTR ST_TILE_INLINE void NAME(const char *s, st_idx ss, char *d, st_idx ds)               \
    {                                                                                         \
        __m256 r[8];                                                                          \
        int i;                                                                                \
        for (i = 0; i < 8; i++) r[i] = LOAD(s + i * ss * (st_idx)sizeof(TS));                 \
        st_transpose8_ps(r);                                                                  \
        for (i = 0; i < 8; i++) STORE(d + i * ds * (st_idx)sizeof(TD), r[i]);                 \
    }

#define ST_LD_F32(p) _mm256_loadu_ps((const float *)(const void *)(p))
#define ST_ST_F16(p, v)                                                                       \
    _mm_storeu_si128((__m128i *)(void *)(p),                                                  \
                     _mm256_cvtps_ph((v), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC))

ST_DEFINE_CVT_MICRO(st_micro_f32_f16, ST_TILE_F16C, st_t4, st_t2, ST_LD_F32, ST_ST_F16)

/* bfloat16 rows two at a time: one pack and one permute make both (the rounding is integer
 * work, and at two threads this kernel is bound by it, not by memory) */
ST_TILE_AVX2 ST_TILE_INLINE void st_micro_f32_bf16(const char *s, st_idx ss, char *d, st_idx ds)
{
    __m256 r[8];
    int i;
    for (i = 0; i < 8; i++) r[i] = ST_LD_F32(s + i * ss * 4);
    st_transpose8_ps(r);
    for (i = 0; i < 8; i += 2) {
        /* per 128-bit lane: row i's 4 items, then row i+1's; the permute puts row i first */
        __m256i p = _mm256_packus_epi32(st_bf16_round(r[i]), st_bf16_round(r[i + 1]));
        p = _mm256_permute4x64_epi64(p, 0xD8);
        _mm_storeu_si128((__m128i *)(void *)(d + i * ds * 2), _mm256_castsi256_si128(p));
        _mm_storeu_si128((__m128i *)(void *)(d + (i + 1) * ds * 2),
                         _mm256_extracti128_si256(p, 1));
    }
}

ST_DEFINE_TILED(st_t4, st_t2, 8, st_micro_f32_f16, ST_CV_F32_F16, st_tiled_f32_f16, ST_TILE_F16C)
ST_DEFINE_TILED(st_t4, st_t2, 8, st_micro_f32_bf16, ST_CV_F32_BF16, st_tiled_f32_bf16,
                ST_TILE_AVX2)
#endif

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
