/* The element types of strided's kernels: their codes and sizes, the C side of the one table in
 * strided/_dtypes.py (TYPE_NAMES, ITEMSIZES). The codes are indices into TYPE_NAMES, in the same
 * order; tests/core/test_dtypes.py checks that the compiled engine agrees with the Python table. */
#ifndef STRIDED_KERNELS_TYPES_H
#define STRIDED_KERNELS_TYPES_H

enum {
    ST_BOOL, ST_I8, ST_I16, ST_I32, ST_I64, ST_U8, ST_U16, ST_U32, ST_U64,
    ST_F16, ST_BF16, ST_F32, ST_F64, ST_C64, ST_C128, ST_NTYPES
};

/* How a row converts: a plain cast, or the affine step in float32 / float64. */
enum { ST_CVT_PLAIN = 0, ST_CVT_AFF32 = 1, ST_CVT_AFF64 = 2 };

static const int st_type_size[ST_NTYPES] = {1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 2, 4, 8, 8, 16};

#endif /* STRIDED_KERNELS_TYPES_H */
