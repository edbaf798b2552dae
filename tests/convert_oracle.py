"""A numpy reference implementation of the conversion contract (issue 13; DESIGN.md section 1,
"Conversion"), independent of :mod:`strided`: it never imports it.

Every function here works on numpy arrays, element by element in numpy's own vocabulary:

- :func:`cast` is a plain cast: numpy ``astype`` wherever numpy defines the value; float ->
  integer truncates toward zero and saturates out of range (negative -> unsigned included),
  NaN -> 0; bfloat16 rounds as torch does (float32 -> bfloat16 round to nearest even, computed
  here from the bits; float64 and every integer type go through float32 first, two roundings).
- :func:`affine` is ``t = src * scale + shift`` in ``CT = np.result_type(src, float32)``, two
  roundings (numpy never fuses), a missing term not applied; float destinations round to
  nearest even (float64 -> bfloat16 via float32), integer destinations ``rint`` (half to even),
  NaN -> 0, saturate.
- :func:`can_cast` is ``np.can_cast`` with bfloat16 given the contract's rules.
- :func:`assert_converted_equal` compares bit patterns (``-0.0`` is not ``0.0``), except where
  the expected value is a NaN: there any NaN will do.

bfloat16 arrays are numpy arrays of ``ml_dtypes.bfloat16``; nothing here relies on ml_dtypes'
own conversions (its casts go through ``float32``, which is exact for bfloat16 values).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

BF16 = np.dtype(ml_dtypes.bfloat16)

#: The 15 type names of the conversion engine, in the contract's order.
TYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
         "float16", "bfloat16", "float32", "float64", "complex64", "complex128")
INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
FLOATS = ("float16", "bfloat16", "float32", "float64")
COMPLEX = ("complex64", "complex128")

#: numpy's kind order for "same_kind" (b < u < i < f < c)
_KIND_ORDER = {"b": 0, "u": 1, "i": 2, "f": 3, "c": 4}


def np_dtype(name):
    """The numpy dtype of a type name (``"bfloat16"``: ml_dtypes.bfloat16)."""
    return BF16 if name == "bfloat16" else np.dtype(name)


def type_name(dtype):
    dtype = np.dtype(dtype)
    if dtype == BF16:
        return "bfloat16"
    name = dtype.name
    if name not in TYPES:
        raise ValueError(f"not a conversion type: {dtype}")
    return name


def kind(name):
    if name == "bool":
        return "b"
    if name in COMPLEX:
        return "c"
    if name in FLOATS:
        return "f"
    return "u" if name.startswith("uint") else "i"


def uint_of(name):
    """The unsigned integer dtype of the same itemsize (bits of a real element)."""
    size = np_dtype(name).itemsize
    if name in COMPLEX:
        size //= 2
    return np.dtype(f"u{size}")


def can_cast(src, dst, casting):
    """``np.can_cast(src, dst, casting)`` on type names; bfloat16 per the contract: safe from
    bool/int8/uint8 and to float32/float64/complex, same_kind among floats (float16 included);
    complex -> anything not complex is refused whatever the casting (:func:`refused`)."""
    if casting not in ("no", "equiv", "safe", "same_kind", "unsafe"):
        raise ValueError(casting)
    if kind(src) == "c" and kind(dst) != "c":
        return False
    if "bfloat16" not in (src, dst):
        return bool(np.can_cast(np.dtype(src), np.dtype(dst), casting))
    if src == dst:
        return True
    if casting == "unsafe":
        return True
    if casting in ("no", "equiv"):
        return False
    safe = (src in ("bool", "int8", "uint8") if dst == "bfloat16"
            else dst in ("float32", "float64", "complex64", "complex128"))
    if casting == "safe":
        return safe
    return safe or _KIND_ORDER[kind(src)] <= _KIND_ORDER[kind(dst)]


def compute_type(src):
    """CT of an affine conversion: ``np.result_type(src, float32)`` (bfloat16 as float16)."""
    if src in ("int32", "int64", "uint32", "uint64", "float64"):
        return np.dtype(np.float64)
    return np.dtype(np.float32)


# ---- bfloat16 from the bits -----------------------------------------------------------------


def f32_to_bf16(x):
    """float32 -> bfloat16, round to nearest even on the bits (torch's round_to_nearest_even);
    NaN -> the quiet NaN 0x7FC0 with x's sign."""
    shape = np.shape(x)
    x = np.ascontiguousarray(x, dtype=np.float32).reshape(-1)
    b = x.view(np.uint32).astype(np.uint64)
    rounded = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(x)
    rounded[nan] = ((b[nan] >> 16).astype(np.uint16) & 0x8000) | 0x7FC0
    return rounded.view(BF16).reshape(shape)


def _real_source(a):
    """A real array as numpy computes with it: bfloat16 -> float32 (exact)."""
    return a.astype(np.float32) if a.dtype == BF16 else a


# ---- plain casts ----------------------------------------------------------------------------


def _saturate_to_int(t, dst):
    """Integer-valued floats (or NaN/inf) -> integer type ``dst``: NaN -> 0, clip to range."""
    t = np.asarray(t, np.float64)
    info = np.iinfo(dst)
    out = np.zeros(t.shape, dst)
    lo, hi = float(info.min), float(info.max) + 1.0      # exact powers of two in float64
    below = t < lo
    above = t >= hi
    ok = ~(below | above | np.isnan(t))
    out[below] = info.min
    out[above] = info.max
    out[ok] = t[ok].astype(dst)
    return out


def _float_to_float(x, dst):
    """A real float (or integer, bool) array -> float ``dst`` name, numpy's rounding; bfloat16
    through float32."""
    x = _real_source(x)
    if dst == "bfloat16":
        return f32_to_bf16(x.astype(np.float32))
    return x.astype(np.dtype(dst))


def cast(a, dst):
    """The plain conversion of numpy array ``a`` to type name ``dst`` (a new array)."""
    with np.errstate(all="ignore"):
        return _cast(np.asarray(a), dst)


def _cast(a, dst):
    src = type_name(a.dtype)
    if kind(src) == "c" and kind(dst) != "c":
        raise TypeError(f"complex -> {dst}")
    dt = np_dtype(dst)
    if dst == "bool":
        return _real_source(a) != 0                     # NaN != 0: True
    if kind(dst) == "c":
        if kind(src) == "c":
            return a.astype(dt)
        return _real_source(a).astype(dt)
    if kind(dst) == "f":
        if kind(src) in "fb":
            return _float_to_float(a, dst)
        # integers: numpy's cast to float16/32/64; bfloat16 through float32
        if dst == "bfloat16":
            return f32_to_bf16(a.astype(np.float32))
        return a.astype(dt)
    # integer destination
    if kind(src) in "bui":
        return a.astype(dt)                             # wraps modulo 2**bits, as numpy
    return _saturate_to_int(np.trunc(_real_source(a).astype(np.float64)), dt)


# ---- affine ---------------------------------------------------------------------------------


def _per_channel(v, ct, ndim, axis):
    """Scale or shift as an array of CT broadcastable against a rank-``ndim`` array."""
    v = np.asarray(v, ct)
    if v.ndim == 0:
        return v
    shape = [1] * ndim
    shape[axis] = v.shape[0]
    return v.reshape(shape)


def affine(a, dst, scale=None, shift=None, axis=None):
    """``convert(a * scale + shift)`` to type name ``dst`` (see the module docstring)."""
    a = np.asarray(a)
    src = type_name(a.dtype)
    if dst == "bool" or kind(src) == "c" or kind(dst) == "c":
        raise TypeError(f"affine {src} -> {dst}")
    ct = compute_type(src)
    if axis is not None and axis < 0:
        axis += a.ndim
    if axis is None and a.ndim == 1:
        axis = 0
    t = _real_source(a).astype(ct)
    with np.errstate(all="ignore"):
        if scale is not None:
            t = t * _per_channel(scale, ct, a.ndim, axis)
            assert t.dtype == ct
        if shift is not None:
            t = t + _per_channel(shift, ct, a.ndim, axis)
            assert t.dtype == ct
        if kind(dst) == "f":
            return _float_to_float(t, dst)
        return _saturate_to_int(np.rint(t), np.dtype(dst))


def convert(a, dst, scale=None, shift=None, axis=None):
    """Plain cast when scale and shift are both None, else affine."""
    if scale is None and shift is None:
        return cast(a, dst)
    return affine(a, dst, scale, shift, axis)


# ---- comparison -----------------------------------------------------------------------------


def _real_parts(a):
    """(bit patterns, isnan) of every real component of ``a``."""
    name = type_name(a.dtype)
    if kind(name) == "c":
        parts = a.view(np.dtype(f"f{a.dtype.itemsize // 2}")).reshape(*a.shape, 2)
        return parts.view(uint_of(name)), np.isnan(parts)
    bits = a.view(uint_of(name)) if name != "bool" else a.view(np.uint8)
    if kind(name) == "f":
        return bits, np.isnan(_real_source(a))
    return bits, np.zeros(a.shape, bool)


def mismatches(actual, expected):
    """Indices (into the flattened arrays) where ``actual`` is not ``expected`` bit for bit;
    where ``expected`` is a NaN, any NaN matches."""
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    abits, anan = _real_parts(np.ascontiguousarray(actual).reshape(-1))
    ebits, enan = _real_parts(np.ascontiguousarray(expected).reshape(-1))
    bad = np.where(enan, ~anan, abits != ebits)
    if bad.ndim > 1:
        bad = bad.any(axis=-1)
    return np.flatnonzero(bad)


def assert_converted_equal(actual, expected, source=None, what=""):
    """Bitwise equality of two arrays of one conversion type (NaN: any NaN)."""
    bad = mismatches(np.asarray(actual), np.asarray(expected))
    if bad.size:
        i = bad[0]
        src = "" if source is None else f" from {np.asarray(source).ravel()[i]!r}"
        raise AssertionError(
            f"{what}: {bad.size} of {expected.size} elements differ; first at flat index {i}"
            f"{src}: got {np.asarray(actual).ravel()[i]!r}, expected "
            f"{np.asarray(expected).ravel()[i]!r}")


# ---- special values -------------------------------------------------------------------------


def special_values(name):
    """A 1-D array of type ``name`` holding its interesting values: for floats ±0, ±inf, NaNs
    (quiet, signalling, payloads, negative), the smallest and largest subnormals and normals,
    the integer limits of every integer type and their neighbours, rounding ties (±0.5, 1.5,
    2.5, and the ties of float16/bfloat16 precision); for integers the limits, ±1, 0 and the
    values next to the float16/bfloat16/float32 precision edges."""
    if name == "bool":
        return np.array([False, True])
    if kind(name) in "iu":
        info = np.iinfo(name)
        vals = {0, 1, 2, 3, 127, 128, 255, 256, 2**15 - 1, 2**15, 2**16 - 1, 2**16,
                65504, 65519, 65520, 2**24 - 1, 2**24, 2**24 + 1, 2**24 + 3,
                2**24 + 2**16 + 1, 2**31 - 1, 2**31, 2**32 - 1, 2**53 + 1,
                2**63 - 1, 2**63, 2**64 - 1, int(info.max), int(info.max) - 1}
        vals |= {-v for v in vals} | {int(info.min), int(info.min) + 1}
        return np.array(sorted(v for v in vals if info.min <= v <= info.max), name)
    if kind(name) == "c":
        part = "float32" if name == "complex64" else "float64"
        re = special_values(part)
        im = np.roll(re, 3)
        return np.stack([re, im], axis=-1).view(np_dtype(name))[:, 0]   # no arithmetic:
        # 1j * inf would be nan + inf j
    # floats: build in float64, convert exactly where possible, add raw bit patterns
    ties = [0.5, 1.5, 2.5, 3.5, -0.5, -1.5, -2.5, 0.49999997, 0.5000001, 126.5, 127.5, 128.5,
            254.5, 255.5, -127.5, -128.5, -129.5, 32767.5, 65535.5, 1 + 2**-11, 1 + 3 * 2**-11,
            1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-8 + 2**-30, 1 + 2**-11 + 2**-30,
            1 + 2**-24, 1 + 2**-24 + 2**-50, 2049.0, 2051.0, 257.0, 259.0]
    limits = []
    for t in INTS:
        info = np.iinfo(t)
        for v in (int(info.min), int(info.max)):
            limits += [v - 1, v, v + 1, v - 0.5, v + 0.5, v - 0.75, v + 0.75]
    floats = [*ties, *limits, 0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, -np.nan, 0.1,
              -0.1, 1e-3, 7.0,
              -7.9, 65504.0, 65519.99, 65520.0, -65520.0, 3.3895313892515355e38,
              3.4028234663852886e38, 3.4028235677973366e38, 1e39, -1e39, 1e300, 1e-300,
              5.960464477539063e-08, 2.9802322387695312e-08, 2.98023223876953125e-08 * 1.5,
              6.097555160522461e-05, 6.103515625e-05, 1.401298464324817e-45,
              1.1754943508222875e-38,
              9.183549615799121e-41, 5e-324, 2.2250738585072014e-308]
    vals = np.array(floats + [-f for f in floats], np.float64)
    out = cast(vals, name)
    # every exponent's smallest/largest subnormal and normal, NaN payloads, from the bits
    u = uint_of(name)
    bits = {"float16": (10, 5), "bfloat16": (7, 8), "float32": (23, 8), "float64": (52, 11)}
    mant, exp = bits[name]
    total = 1 + mant + exp
    sign = 1 << (total - 1)
    exp_mask = ((1 << exp) - 1) << mant
    patterns = [1, 2, 3, (1 << mant) - 1, 1 << mant, (1 << mant) + 1, exp_mask - 1,
                exp_mask, exp_mask | 1, exp_mask | (1 << (mant - 1)), exp_mask | ((1 << mant) - 1),
                exp_mask | (1 << (mant - 1)) | 1, (1 << (mant - 1)), (1 << (mant - 1)) | 1]
    patterns += [p | sign for p in patterns]
    raw = np.array(patterns, np.uint64).astype(u).view(np_dtype(name))
    return np.concatenate([out, raw])
