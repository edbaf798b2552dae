/* The 8 x 8 transpose of 32-bit items in AVX2 registers: the float micro-kernels of the tiled
 * transposes (tile.h, transpose.h, convert_tiles.h) and the 32-channel pixels -> planes
 * conversion (cvt_planes.h) share it. Header-only; x86 with GNU C only. */
#ifndef STRIDED_KERNELS_TRANSPOSE8_H
#define STRIDED_KERNELS_TRANSPOSE8_H

#include "common.h"

#if ST_X86_GNU
#include <immintrin.h>
/* r[i] (row i of 8 floats) becomes column i, in place: 24 shuffles. */
__attribute__((target("avx2"))) static inline __attribute__((always_inline))
void st_transpose8_ps(__m256 r[8])
{
    __m256 t[8], u[8];
    int i;
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
        r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
        r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
    }
}
#endif

#endif /* STRIDED_KERNELS_TRANSPOSE8_H */
