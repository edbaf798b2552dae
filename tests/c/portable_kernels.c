/* The block kernels of _copy_kernels.h built without SSE2 (-U__SSE2__, as on a non-x86 CPU),
 * checked against a plain loop: every block kind, itemsize and flag set on shapes with ragged
 * edges, destinations at every offset in a line, guard bytes around them. Compiled and run by
 * tests/engine/test_copy_engine.py::test_portable_kernels_without_sse2; prints the first
 * mismatch and exits 1, or exits 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "copy_kernels.h"

#define GUARD 64
static unsigned char src[1 << 20], dst[1 << 20], ref[1 << 20];

static int check(int kind, int size, st_idx R, st_idx C, st_idx dp, st_idx dq, st_idx sp,
                 st_idx sq, int flags, int offset)
{
    st_idx r, c, span = 0, n;
    unsigned char *d = dst + GUARD + offset;
    char *scratch = kind == ST_BLOCK_TBUF ? st_scratch() : NULL;
    for (r = 0; r < R; r++)
        for (c = 0; c < C; c++)
            if ((r * dp + c * dq + 1) * size > span) span = (r * dp + c * dq + 1) * size;
    n = span + 2 * GUARD + 64;
    for (r = 0; r < n; r++) dst[r] = ref[r] = (unsigned char)(r * 151 + 89);
    for (r = 0; r < R; r++)
        for (c = 0; c < C; c++)
            memcpy(ref + GUARD + offset + (r * dp + c * dq) * size, src + (r * sp + c * sq) * size,
                   (size_t)size);
    st_copy_block(kind, size, (char *)d, dp, dq, (const char *)src, sp, sq, R, C, flags,
                  scratch);
    for (r = 0; r < n; r++)
        if (dst[r] != ref[r]) {
            printf("kind %d size %d R %ld C %ld dp %ld sq %ld flags %d offset %d: byte %ld\n",
                   kind, size, (long)R, (long)C, (long)dp, (long)sq, flags, offset, (long)r);
            return 1;
        }
    return 0;
}

/* The stride-2 byte copy within one buffer (a[do::2] <- a[so::2], do - so odd: no shared
 * element), against a plain loop on a copy; and the rule of its vectors (st_s2_vector_range):
 * every vector it allows lies inside both layouts and every gap of the destination it rewrites
 * is a byte of the source. */
static unsigned char one[1 << 16], want[1 << 16];

static int check_s2(st_idx n, st_idx delta, int offset)
{
    const st_idx base = 128 + offset, widths[2] = {16, 32};
    st_idx k, m = base + 2 * n + 256, lo, hi, w, j;
    for (k = 0; k < m; k++) one[k] = want[k] = (unsigned char)(k * 151 + 89);
    for (k = 0; k < n; k++) want[base + 2 * k] = want[base + delta + 2 * k];
    st_copy_block(ST_BLOCK_COPY, 1, (char *)one + base, 0, 2, (const char *)one + base + delta,
                  0, 2, 1, n, 0, NULL);
    for (k = 0; k < m; k++)
        if (one[k] != want[k]) {
            printf("stride-2 bytes n %ld delta %ld offset %d: byte %ld\n", (long)n, (long)delta,
                   offset, (long)k);
            return 1;
        }
    for (w = 0; w < 2; w++) {
        st_s2_vector_range((const char *)one + base, (const char *)one + base + delta, n,
                           widths[w], &lo, &hi);
        for (k = lo; k < hi; k++) {
            int bad = 2 * k + widths[w] - 1 > 2 * (n - 1);
            for (j = 2 * k + 1; j < 2 * k + widths[w]; j += 2)
                bad |= j < delta || j > delta + 2 * (n - 1) || (j - delta) % 2 != 0;
            if (bad) {
                printf("stride-2 vector at %ld of %ld, delta %ld, width %ld\n", (long)k,
                       (long)n, (long)delta, (long)widths[w]);
                return 1;
            }
        }
    }
    return 0;
}

int main(void)
{
    static const int sizes[] = {1, 2, 4, 8, 16};
    static const st_idx extents[] = {1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 33, 64, 100};
    static const int flag_sets[] = {0, ST_NT, ST_NT | ST_STITCH | ST_FRESH | ST_LAST};
    int i, a, b, f, o, fails = 0;
    size_t k;
    for (k = 0; k < sizeof src; k++) src[k] = (unsigned char)(k * 7 + k / 251);
    st_cpu_init();
    for (i = 0; i < 5; i++)
        for (a = 0; a < 13; a++)
            for (b = 0; b < 13; b++)
                for (f = 0; f < 3; f++)
                    for (o = 0; o < 64; o += 24) {
                        int z = sizes[i];
                        st_idx R = extents[a], C = extents[b];
                        /* transposes: dst rows of C (padded to C + 3), source columns */
                        fails += check(ST_BLOCK_TRANSPOSE, z, R, C, C + 3, 1, 1, R, 0, o);
                        fails += check(ST_BLOCK_TBUF, z, R, C, C + 3, 1, 1, R, flag_sets[f], o);
                        fails += check(ST_BLOCK_TBUF, z, R, C, C, 1, 1, R + 2, flag_sets[f], o);
                        /* copies: rows, fills, gathers and scatters */
                        fails += check(ST_BLOCK_COPY, z, R, C, C + 1, 1, C + 5, 1, f & 1, o);
                        fails += check(ST_BLOCK_COPY, z, R, C, C, 1, 1, 0, f & 1, o);
                        fails += check(ST_BLOCK_COPY, z, R, C, C, 1, 2 * C, 2, 0, o);
                        fails += check(ST_BLOCK_COPY, z, R, C, 1, R + 1, C, 1, 0, o);
                        fails += check(ST_BLOCK_COPY, z, R, C, 2 * C + 1, 2, 2 * C + 3, 2, 0, o);
                        if (fails) return 1;
                    }
    for (a = 1; a < 100; a++)
        for (b = -69; b < 70; b += 2)
            for (o = 0; o < 2; o++)
                if (check_s2(a, b, o)) return 1;
    printf("ok\n");
    return 0;
}
