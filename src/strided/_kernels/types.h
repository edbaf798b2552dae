/* The element types of strided's kernels: their codes and sizes, the C side of the one table in
 * strided/_dtypes.py (TYPE_NAMES, ITEMSIZES). The codes are indices into TYPE_NAMES, in the same
 * order; tests/core/test_dtypes.py checks that the compiled engine agrees with the Python
 * table. Also the types of the conversion kernels a plan holds (the kernels themselves are in
 * cvt_*.h and convert_tiles.h; _copy.pxd declares the same signatures to Cython). */
#ifndef STRIDED_KERNELS_TYPES_H
#define STRIDED_KERNELS_TYPES_H

#include "common.h"   /* st_idx */

enum {
    ST_BOOL, ST_I8, ST_I16, ST_I32, ST_I64, ST_U8, ST_U16, ST_U32, ST_U64,
    ST_F16, ST_BF16, ST_F32, ST_F64, ST_C64, ST_C128, ST_NTYPES
};

/* How a row converts: a plain cast, or the affine step in float32 / float64. */
/* How a row converts: a plain cast; t = x * scale + shift in float32 or float64; or
 * t = x / scale + shift in float32 (DIV32: the division of torchvision's Normalize, which
 * strided's torchvision-exact mode reproduces; only the generic rows run it). */
enum { ST_CVT_PLAIN = 0, ST_CVT_AFF32 = 1, ST_CVT_AFF64 = 2, ST_CVT_DIV32 = 3 };

static const int st_type_size[ST_NTYPES] = {1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 2, 4, 8, 8, 16};

/* A unit-stride row, fused (cvt_fused.h): d[i] = convert(s[i]) for i < n, the parameters of
 * element i at scale + i * ps, shift + i * ps (ps 0 or 1). */
typedef void (*st_fused_fn)(char *d, const char *s, st_idx n, const void *scale,
                            const void *shift, st_idx ps);

/* How a row converts (convert.h, st_cvt_row): the pair, the mode, its fused row or NULL. */
typedef struct {
    int stype, dtype, mode;
    st_fused_fn fused;          /* the unit-stride row, or NULL */
} st_cvt_op;

/* Dense pixels of a few channels to planes (cvt_planes.h, st_cvt_planes); `tile`: a scratch
 * tile of tile_bytes (the 32-channel kernels'; the others take none). */
typedef void (*st_planes_fn)(char *d, st_idx dp, const char *s, st_idx n, const void *scale,
                             const void *shift, st_idx pp, char *tile, st_idx tile_bytes);

/* Planes to dense quantized pixels (cvt_planes.h, st_cvt_pixels); `tile` as above. */
typedef void (*st_pixels_fn)(char *d, const char *s, st_idx n, st_idx sp, const void *scale,
                             const void *shift, st_idx pq, char *tile, st_idx tile_bytes);

/* dst[r * dp + c] = convert(src[r + c * sq]) for r < R, c < C, in registers (convert_tiles.h). */
typedef void (*st_tiled_fn)(char *dst, st_idx dp, const char *src, st_idx sq, st_idx R,
                            st_idx C, int nt, char *scratch);

#endif /* STRIDED_KERNELS_TYPES_H */
