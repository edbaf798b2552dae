/* The generic conversion path: any pair, any element strides. A chunk of a row is loaded into a
 * small buffer of a wide type (int64, uint64, double, complex double, or the compute type), the
 * affine step applied there, and stored from it: each element is converted once, from its exact
 * wide value. */
#ifndef STRIDED_KERNELS_CVT_WIDE_H
#define STRIDED_KERNELS_CVT_WIDE_H

#include "cvt_values.h"

/* ---- the generic path: a chunk through a wide buffer ----------------------------------------- */
enum { ST_CHUNK = 128 };

typedef union {
    int64_t i[ST_CHUNK];      /* bool, signed integers */
    uint64_t u[ST_CHUNK];     /* unsigned integers */
    double d[ST_CHUNK];       /* real floats (exact), or the float64 compute type */
    float f[ST_CHUNK];        /* the float32 compute type */
    double c[2 * ST_CHUNK];   /* complex: (real, imag) pairs */
} st_wide;

/* The wide kind a type is loaded as by a plain cast: 'i', 'u', 'd' or 'c'. */
static inline char st_kind(int t)
{
    if (t == ST_BOOL || (t >= ST_I8 && t <= ST_I64)) return 'i';
    if (t >= ST_U8 && t <= ST_U64) return 'u';
    if (t >= ST_F16 && t <= ST_F64) return 'd';
    return 'c';
}

#define ST_FOR(n) for (st_idx i = 0; i < (n); i++)

static void st_load_plain(int t, const char *s, st_idx ss, st_idx n, st_wide *w)
{
    const st_idx b = ss * st_type_size[t];
    switch (t) {
    case ST_BOOL: ST_FOR(n) w->i[i] = st_ld_u8(s + i * b) != 0; break;
    case ST_I8: ST_FOR(n) w->i[i] = st_ld_i8(s + i * b); break;
    case ST_I16: ST_FOR(n) w->i[i] = st_ld_i16(s + i * b); break;
    case ST_I32: ST_FOR(n) w->i[i] = st_ld_i32(s + i * b); break;
    case ST_I64: ST_FOR(n) w->i[i] = st_ld_i64(s + i * b); break;
    case ST_U8: ST_FOR(n) w->u[i] = st_ld_u8(s + i * b); break;
    case ST_U16: ST_FOR(n) w->u[i] = st_ld_u16(s + i * b); break;
    case ST_U32: ST_FOR(n) w->u[i] = st_ld_u32(s + i * b); break;
    case ST_U64: ST_FOR(n) w->u[i] = st_ld_u64(s + i * b); break;
    case ST_F16: ST_FOR(n) w->d[i] = st_f16_to_f32(st_ld_u16(s + i * b)); break;
    case ST_BF16: ST_FOR(n) w->d[i] = st_bf16_to_f32(st_ld_u16(s + i * b)); break;
    case ST_F32: ST_FOR(n) w->d[i] = st_ld_f32(s + i * b); break;
    case ST_F64: ST_FOR(n) w->d[i] = st_ld_f64(s + i * b); break;
    case ST_C64:
        ST_FOR(n) {
            w->c[2 * i] = st_ld_f32(s + i * b);
            w->c[2 * i + 1] = st_ld_f32(s + i * b + 4);
        }
        break;
    default:
        ST_FOR(n) {
            w->c[2 * i] = st_ld_f64(s + i * b);
            w->c[2 * i + 1] = st_ld_f64(s + i * b + 8);
        }
        break;
    }
}

/* Store an integer type from a wide buffer of kind k: wrapped from integers, truncated and
 * saturated from floats. */
#define ST_STORE_INT(NAME, T)                                                                 \
    switch (k) {                                                                              \
    case 'i': ST_FOR(n) st_st_##NAME(d + i * b, (T)w->i[i]); break;                           \
    case 'u': ST_FOR(n) st_st_##NAME(d + i * b, (T)w->u[i]); break;                           \
    default: ST_FOR(n) st_st_##NAME(d + i * b, st_trunc_##NAME(w->d[i])); break;              \
    }                                                                                         \
    break

/* Store a real float type: from the wide value with one rounding (to_f: how a double
 * becomes the type; integers are rounded from their exact value by the C cast). */
#define ST_STORE_FLOAT(PUT, FROM_I, FROM_U, FROM_D)                                           \
    switch (k) {                                                                              \
    case 'i': ST_FOR(n) PUT(d + i * b, FROM_I(w->i[i])); break;                               \
    case 'u': ST_FOR(n) PUT(d + i * b, FROM_U(w->u[i])); break;                               \
    default: ST_FOR(n) PUT(d + i * b, FROM_D(w->d[i])); break;                                \
    }                                                                                         \
    break

#define ST_ID(x) (x)
#define ST_TO_F32(x) ((float)(x))
#define ST_TO_F64(x) ((double)(x))
#define ST_I_TO_F16(x) st_f64_to_f16((double)(x))
#define ST_I_TO_BF16(x) st_f32_to_bf16((float)(x))
#define ST_D_TO_BF16(x) st_f32_to_bf16((float)(x))

static void st_store_plain(int t, char k, char *d, st_idx ds, st_idx n, const st_wide *w)
{
    const st_idx b = ds * st_type_size[t];
    switch (t) {
    case ST_BOOL:
        switch (k) {
        case 'i': ST_FOR(n) st_st_u8(d + i * b, w->i[i] != 0); break;
        case 'u': ST_FOR(n) st_st_u8(d + i * b, w->u[i] != 0); break;
        case 'd': ST_FOR(n) st_st_u8(d + i * b, w->d[i] != 0); break;
        default: ST_FOR(n) st_st_u8(d + i * b, w->c[2 * i] != 0 || w->c[2 * i + 1] != 0);
        }
        break;
    case ST_I8: ST_STORE_INT(i8, int8_t);
    case ST_I16: ST_STORE_INT(i16, int16_t);
    case ST_I32: ST_STORE_INT(i32, int32_t);
    case ST_I64: ST_STORE_INT(i64, int64_t);
    case ST_U8: ST_STORE_INT(u8, uint8_t);
    case ST_U16: ST_STORE_INT(u16, uint16_t);
    case ST_U32: ST_STORE_INT(u32, uint32_t);
    case ST_U64: ST_STORE_INT(u64, uint64_t);
    case ST_F16: ST_STORE_FLOAT(st_st_u16, ST_I_TO_F16, ST_I_TO_F16, st_f64_to_f16);
    case ST_BF16: ST_STORE_FLOAT(st_st_u16, ST_I_TO_BF16, ST_I_TO_BF16, ST_D_TO_BF16);
    case ST_F32: ST_STORE_FLOAT(st_st_f32, ST_TO_F32, ST_TO_F32, ST_TO_F32);
    case ST_F64: ST_STORE_FLOAT(st_st_f64, ST_TO_F64, ST_TO_F64, ST_ID);
    case ST_C64:
        if (k == 'c') {
            ST_FOR(n) {
                st_st_f32(d + i * b, (float)w->c[2 * i]);
                st_st_f32(d + i * b + 4, (float)w->c[2 * i + 1]);
            }
        } else {
            ST_FOR(n) {
                float re = k == 'i' ? (float)w->i[i] : k == 'u' ? (float)w->u[i]
                                                                : (float)w->d[i];
                st_st_f32(d + i * b, re);
                st_st_f32(d + i * b + 4, 0.0f);
            }
        }
        break;
    default:
        if (k == 'c') {
            ST_FOR(n) {
                st_st_f64(d + i * b, w->c[2 * i]);
                st_st_f64(d + i * b + 8, w->c[2 * i + 1]);
            }
        } else {
            ST_FOR(n) {
                double re = k == 'i' ? (double)w->i[i] : k == 'u' ? (double)w->u[i] : w->d[i];
                st_st_f64(d + i * b, re);
                st_st_f64(d + i * b + 8, 0.0);
            }
        }
        break;
    }
}

/* The affine step's load: the source's exact value in the compute type (the planner only
 * asks for float32 from types float32 holds exactly, and float64 from the rest). */
static void st_load_ct(int t, int mode, const char *s, st_idx ss, st_idx n, st_wide *w)
{
    const st_idx b = ss * st_type_size[t];
    if (mode != ST_CVT_AFF64) {
        switch (t) {
        case ST_BOOL: ST_FOR(n) w->f[i] = st_ld_u8(s + i * b) != 0; break;
        case ST_I8: ST_FOR(n) w->f[i] = st_ld_i8(s + i * b); break;
        case ST_I16: ST_FOR(n) w->f[i] = st_ld_i16(s + i * b); break;
        case ST_U8: ST_FOR(n) w->f[i] = st_ld_u8(s + i * b); break;
        case ST_U16: ST_FOR(n) w->f[i] = st_ld_u16(s + i * b); break;
        case ST_F16: ST_FOR(n) w->f[i] = st_f16_to_f32(st_ld_u16(s + i * b)); break;
        case ST_BF16: ST_FOR(n) w->f[i] = st_bf16_to_f32(st_ld_u16(s + i * b)); break;
        default: ST_FOR(n) w->f[i] = st_ld_f32(s + i * b); break;
        }
        return;
    }
    switch (t) {
    case ST_I32: ST_FOR(n) w->d[i] = st_ld_i32(s + i * b); break;
    case ST_I64: ST_FOR(n) w->d[i] = (double)st_ld_i64(s + i * b); break;
    case ST_U32: ST_FOR(n) w->d[i] = st_ld_u32(s + i * b); break;
    case ST_U64: ST_FOR(n) w->d[i] = (double)st_ld_u64(s + i * b); break;
    default: ST_FOR(n) w->d[i] = st_ld_f64(s + i * b); break;
    }
}

/* t = t * scale + shift (DIV32: t / scale + shift) in the compute type, two roundings (no fused multiply-add: this
 * header is compiled with -ffp-contract=off). */
static void st_affine_ct(int mode, st_idx n, st_wide *w, const char *scale, const char *shift,
                         st_idx ps)
{
    if (mode == ST_CVT_DIV32) {
        const float *a = (const float *)(const void *)scale, *c = (const float *)(const void *)shift;
        ST_FOR(n) {
            float t = w->f[i] / a[i * ps];
            w->f[i] = t + c[i * ps];
        }
    } else if (mode != ST_CVT_AFF64) {
        const float *a = (const float *)(const void *)scale, *c = (const float *)(const void *)shift;
        ST_FOR(n) {
            float t = w->f[i] * a[i * ps];
            w->f[i] = t + c[i * ps];
        }
    } else {
        const double *a = (const double *)(const void *)scale;
        const double *c = (const double *)(const void *)shift;
        ST_FOR(n) {
            double t = w->d[i] * a[i * ps];
            w->d[i] = t + c[i * ps];
        }
    }
}

/* Store the affine result: float types round to nearest even (bfloat16 from float32, as
 * torch); integer types round half to even, saturate, NaN -> 0. */
#define ST_STORE_ROUNDED(NAME)                                                                \
    if (mode != ST_CVT_AFF64) {                                                               \
        ST_FOR(n) st_st_##NAME(d + i * b, st_trunc_##NAME(rint((double)w->f[i])));            \
    } else {                                                                                  \
        ST_FOR(n) st_st_##NAME(d + i * b, st_trunc_##NAME(rint(w->d[i])));                    \
    }                                                                                         \
    break

static void st_store_ct(int t, int mode, char *d, st_idx ds, st_idx n, const st_wide *w)
{
    const st_idx b = ds * st_type_size[t];
    switch (t) {
    case ST_I8: ST_STORE_ROUNDED(i8);
    case ST_I16: ST_STORE_ROUNDED(i16);
    case ST_I32: ST_STORE_ROUNDED(i32);
    case ST_I64: ST_STORE_ROUNDED(i64);
    case ST_U8: ST_STORE_ROUNDED(u8);
    case ST_U16: ST_STORE_ROUNDED(u16);
    case ST_U32: ST_STORE_ROUNDED(u32);
    case ST_U64: ST_STORE_ROUNDED(u64);
    case ST_F16:
        if (mode != ST_CVT_AFF64) { ST_FOR(n) st_st_u16(d + i * b, st_f32_to_f16(w->f[i])); }
        else { ST_FOR(n) st_st_u16(d + i * b, st_f64_to_f16(w->d[i])); }
        break;
    case ST_BF16:
        if (mode != ST_CVT_AFF64) { ST_FOR(n) st_st_u16(d + i * b, st_f32_to_bf16(w->f[i])); }
        else { ST_FOR(n) st_st_u16(d + i * b, st_f32_to_bf16((float)w->d[i])); }
        break;
    case ST_F32:
        if (mode != ST_CVT_AFF64) { ST_FOR(n) st_st_f32(d + i * b, w->f[i]); }
        else { ST_FOR(n) st_st_f32(d + i * b, (float)w->d[i]); }
        break;
    default:   /* ST_F64 (bool and complex destinations are refused before planning) */
        if (mode != ST_CVT_AFF64) { ST_FOR(n) st_st_f64(d + i * b, (double)w->f[i]); }
        else { ST_FOR(n) st_st_f64(d + i * b, w->d[i]); }
        break;
    }
}

#endif /* STRIDED_KERNELS_CVT_WIDE_H */
