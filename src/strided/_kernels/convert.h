/* Conversion kernels of strided: one row of elements read as one dtype, written as another,
 * optionally through an affine step t = x * scale + shift (the rules: docs/copy.rst,
 * "Converting while copying").
 *
 * The planner in _convert.pyx reduces a conversion to rows (and, for transposes, to tiles it
 * stages in cache and hands to the copy engine's transpose kernels); this header only converts
 * a row:
 *
 *     dst[i * ds] = convert(src[i * ss])                       (plain cast)
 *     dst[i * ds] = store(load(src[i * ss]) * scale[i * ps] + shift[i * ps])   (affine)
 *
 * element strides, any sign. The affine step is computed in the compute type CT (float32 or
 * float64: numpy's result_type(src, float32)) with two roundings: this file is compiled with
 * -ffp-contract=off, so no multiply-add is ever fused. A missing scale is 1 and a missing
 * shift is -0.0, which give bit for bit the value of not applying them (x * 1 == x, and
 * y + (-0.0) == y for every y, -0.0 included).
 *
 * Two paths:
 *   - fused rows: both sides unit-stride, a pair the pipelines use (u8/i8 -> f32 affine,
 *     f32 -> u8/i8 affine, f32 <-> f16, f32 <-> bf16), written so that the compiler
 *     vectorises them, compiled twice (baseline and AVX2 + F16C) and chosen at run time;
 *   - every other pair and stride: a chunk of the row is loaded into a small buffer of a wide
 *     type (int64, uint64, double, complex double; or CT), then stored from it. Each element
 *     is converted once from its exact wide value, so the result is the single rounding numpy
 *     gives (bfloat16 excepted: it rounds from float32, as torch does).
 *
 * Rounding and range (numpy's astype where numpy defines the value):
 *   int -> int wraps modulo 2^bits; float -> int truncates toward zero and, where numpy's
 *   result is undefined, saturates to the type's range with NaN -> 0; affine results stored
 *   to an integer type round half to even, saturate, NaN -> 0; float -> float rounds to
 *   nearest even; anything -> bool is x != 0 (NaN -> true).
 */
#ifndef STRIDED_KERNELS_CONVERT_H
#define STRIDED_KERNELS_CONVERT_H

/* The families, each on cvt_values.h (and it on common.h); this header picks among them. */
#include "cvt_values.h"
#include "cvt_wide.h"
#include "cvt_fused.h"
#include "cvt_planes.h"

/* The pixels kernel for R channels of a (src, dst, mode) triple at a SIMD level (AVX2 only;
 * below it the tiles do the work), or NULL. */
static st_pixels_fn st_cvt_pixels(int stype, int dtype, int mode, int R, int simd)
{
#if ST_X86_GNU
    if (stype != ST_F32 || mode != ST_CVT_AFF32 || (R != 3 && R != 4 && R != 32) || simd < 2
            || !st_cvt_has_avx2)
        return NULL;
    if (dtype == ST_U8)
        return R == 3 ? st_pixels3_u8_avx2 : R == 4 ? st_pixels4_u8_avx2 : st_pixels32_u8_avx2;
    if (dtype == ST_I8)
        return R == 3 ? st_pixels3_i8_avx2 : R == 4 ? st_pixels4_i8_avx2 : st_pixels32_i8_avx2;
#endif
    (void)stype; (void)dtype; (void)mode; (void)R; (void)simd;
    return NULL;
}

/* The kernel of float32 planes -> 64-channel 4-bit pixels (int4 / uint4 NCHW64), affine in
 * float32 (AVX2 only; below it the 4-bit route's pairs and transpose), or NULL. */
static st_pixels_fn st_cvt_pixels_nib(int stype, int mode, int sign, int simd)
{
#if ST_X86_GNU
    if (stype == ST_F32 && mode == ST_CVT_AFF32 && simd >= 2 && st_cvt_has_avx2)
        return sign ? st_pixels64_i4_avx2 : st_pixels64_u4_avx2;
#endif
    (void)stype; (void)mode; (void)sign; (void)simd;
    return NULL;
}

/* The planes kernel for R planes of a (src, dst, mode) triple, or NULL; `stream`: the
 * destination is far larger than the caches (the 32-plane kernel then streams its stores). */
static st_planes_fn st_cvt_planes(int stype, int dtype, int mode, int R, int simd, int stream)
{
    int wide = 0;
    if ((stype != ST_U8 && stype != ST_I8) || dtype != ST_F32 || mode == ST_CVT_AFF64
            || mode == ST_CVT_DIV32 || (R != 3 && R != 4 && R != 32))
        return NULL;
#if ST_X86_GNU
    wide = simd >= 2 && st_cvt_has_avx2;
    if (R == 32 && stream)   /* AVX2 only: below it, the staged route */
        return !wide ? NULL : stype == ST_U8 ? st_planes32_u8_nt_avx2 : st_planes32_i8_nt_avx2;
    if (R == 32)
        return !wide ? NULL : stype == ST_U8 ? st_planes32_u8_avx2 : st_planes32_i8_avx2;
    if (wide && stype == ST_U8) return R == 3 ? st_planes3_u8_avx2 : st_planes4_u8_avx2;
    if (wide) return R == 3 ? st_planes3_i8_avx2 : st_planes4_i8_avx2;
#endif
    (void)simd; (void)wide; (void)stream;
    if (R == 32)
        return NULL;
    if (stype == ST_U8) return R == 3 ? st_planes3_u8_base : st_planes4_u8_base;
    return R == 3 ? st_planes3_i8_base : st_planes4_i8_base;
}

/* The fused row for a (src, dst, mode) triple at a SIMD level (2: AVX2 and F16C where the CPU
 * has them), or NULL: the generic path then converts. */
static st_fused_fn st_cvt_fused(int stype, int dtype, int mode, int simd)
{
    int wide = 0;
#if ST_X86_GNU
    wide = simd >= 2 && st_cvt_has_avx2;
#define ST_PICK(NAME) return wide ? NAME##_avx2 : NAME##_base
#else
#define ST_PICK(NAME) return NAME##_base
#endif
    (void)simd;
    if (mode == ST_CVT_DIV32) {
        if (stype == ST_F32 && dtype == ST_F32) ST_PICK(st_f32_f32_div);
        return NULL;
    }
    if (mode == ST_CVT_AFF32) {
        if (stype == ST_U8 && dtype == ST_F32) ST_PICK(st_u8_f32);
        if (stype == ST_I8 && dtype == ST_F32) ST_PICK(st_i8_f32);
        if (stype == ST_F32 && dtype == ST_U8) ST_PICK(st_f32_u8);
        if (stype == ST_F32 && dtype == ST_I8) ST_PICK(st_f32_i8);
        if (stype == ST_F32 && dtype == ST_F32) ST_PICK(st_f32_f32);
        if (stype == ST_BF16 && dtype == ST_F32) ST_PICK(st_a_bf16_f32);
#if ST_X86_GNU
        if (stype == ST_F32 && dtype == ST_BF16) ST_PICK(st_a_f32_bf16);
        if (stype == ST_F16 && dtype == ST_F32)
            return wide && st_cvt_has_f16c ? st_a_f16_f32_f16c : st_a_f16_f32_base;
        if (stype == ST_F32 && dtype == ST_F16)
            return wide && st_cvt_has_f16c ? st_a_f32_f16_f16c : st_a_f32_f16_base;
#else
        if (stype == ST_F32 && dtype == ST_BF16) return st_a_f32_bf16_base;
        if (stype == ST_F16 && dtype == ST_F32) return st_a_f16_f32_base;
        if (stype == ST_F32 && dtype == ST_F16) return st_a_f32_f16_base;
#endif
        return NULL;
    }
    if (mode != ST_CVT_PLAIN) return NULL;
    if (stype == ST_F32 && dtype == ST_U8) ST_PICK(st_p_f32_u8);
    if (stype == ST_F32 && dtype == ST_I8) ST_PICK(st_p_f32_i8);
    if (stype == ST_F32 && dtype == ST_BF16) ST_PICK(st_f32_bf16);
    if (stype == ST_BF16 && dtype == ST_F32) ST_PICK(st_bf16_f32);
#if ST_X86_GNU
    if (stype == ST_F32 && dtype == ST_F16) return wide && st_cvt_has_f16c ? st_f32_f16_f16c
                                                                           : st_f32_f16_base;
    if (stype == ST_F16 && dtype == ST_F32) return wide && st_cvt_has_f16c ? st_f16_f32_f16c
                                                                           : st_f16_f32_base;
#else
    if (stype == ST_F32 && dtype == ST_F16) return st_f32_f16_base;
    if (stype == ST_F16 && dtype == ST_F32) return st_f16_f32_base;
#endif
#undef ST_PICK
    if (stype < ST_NTYPES && dtype < ST_NTYPES)
        return st_real_rows[wide][stype][dtype];   /* every other real pair, or NULL */
    return NULL;
}

/* ---- one row (st_cvt_op, in types.h, says how) --------------------------------------------- */

/* dst[i * ds] = convert(src[i * ss]) for i < n (element strides); the affine parameters of
 * element i at scale + i * ps, shift + i * ps (compute-type elements; unused when plain). */
static void st_cvt_row(const st_cvt_op *op, char *dst, st_idx ds, const char *src, st_idx ss,
                       st_idx n, const char *scale, const char *shift, st_idx ps)
{
    st_wide w;
    const int ct = op->mode == ST_CVT_AFF64 ? 8 : 4;
    const int dsz = st_type_size[op->dtype], ssz = st_type_size[op->stype];
    if (op->fused != NULL && ds == 1 && ss == 1 && (ps == 0 || ps == 1)) {
        op->fused(dst, src, n, scale, shift, ps);
        return;
    }
    while (n > 0) {
        st_idx k = n < ST_CHUNK ? n : ST_CHUNK;
        if (op->mode == ST_CVT_PLAIN) {
            st_load_plain(op->stype, src, ss, k, &w);
            st_store_plain(op->dtype, st_kind(op->stype), dst, ds, k, &w);
        } else {
            st_load_ct(op->stype, op->mode, src, ss, k, &w);
            st_affine_ct(op->mode, k, &w, scale, shift, ps);
            st_store_ct(op->dtype, op->mode, dst, ds, k, &w);
            scale += k * ps * ct;
            shift += k * ps * ct;
        }
        dst += k * ds * dsz;
        src += k * ss * ssz;
        n -= k;
    }
}

#endif /* STRIDED_KERNELS_CONVERT_H */
