"""Conversion while copying (issue 13): ``strided.copyto`` with ``casting=``, ``scale=``,
``shift=`` and ``axis=``, checked bit for bit against :mod:`convert_oracle` (numpy's own
``astype`` and arithmetic, torch's bfloat16 rounding).

- The oracle itself is checked first: it must equal numpy's ``astype`` wherever numpy defines
  the value, and torch's ``.to`` for every pair with bfloat16.
- Plain casts: every pair of the 15 types on the special values of the source type (±0, ±inf,
  NaNs, subnormals, type limits and just beyond, rounding ties) and on a fixed set of strided
  layouts (rank 0 to 6, negative, broadcast, padded, permuted strides, size-0 and size-1 dims);
  ``casting="unsafe"`` and the default ``"same_kind"`` (a refused pair is a TypeError and the
  destination keeps every byte); then random layouts and values with hypothesis.
- Affine: scalar and per-channel scale/shift on every axis, only scale, only shift, float and
  integer destinations, CT float32 vs float64, the two roundings (no fused multiply-add).
- Overlapping source and destination of different itemsizes; guard bytes around every
  destination; 1 vs 2 threads; each SIMD level of ``strided._copy._simd``.
- Every refusal leaves the destination untouched.
- Exhaustive sweeps: float16 -> float32 and bfloat16 <-> float32 here; float32 -> float16 over
  all 2**32 patterns in a test marked slow (``STRIDED_SLOW=1``).

Where the result is a NaN, any NaN is accepted; elsewhere the bit patterns must be equal
(``-0.0`` is not ``0.0``). Complex -> bool is treated as complex -> real (refused).
"""

from __future__ import annotations

import itertools
import re
import warnings

import numpy as np
import pytest
from convert_oracle import (
    BF16,
    COMPLEX,
    FLOATS,
    INTS,
    TYPES,
    affine,
    assert_converted_equal,
    can_cast,
    cast,
    convert,
    kind,
    mismatches,
    np_dtype,
    special_values,
    type_name,
    uint_of,
)
from hypothesis import given
from hypothesis import strategies as hst
from numpy.lib.stride_tricks import as_strided
from strategies import copy_sizes, element_span, nonoverlapping_strides, source_strides

import strided
from strided import _copy

try:                                      # torch is optional (the serial CI build has none)
    import torch
except ImportError:                       # pragma: no cover
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")

REAL = tuple(t for t in TYPES if t not in COMPLEX)
AFFINE_SRC = REAL                                  # bool sources are allowed (CT float32)
AFFINE_DST = tuple(t for t in REAL if t != "bool")
PAIRS = list(itertools.product(TYPES, TYPES))
CASTINGS = ("no", "equiv", "safe", "same_kind", "unsafe")
THREADS = (None, 1, 2)
GUARD = 8                                          # guard elements on each side of a layout


def refused_always(src, dst):
    return kind(src) == "c" and kind(dst) != "c"


# ---- values, buffers and layouts -----------------------------------------------------------


def pool(name, n, rng):
    """``n`` values of type ``name``: a mix of its special values, random bit patterns (NaN
    payloads, subnormals, huge values) and small values (integers, half-integer ties)."""
    dt = np_dtype(name)
    if name == "bool":
        return rng.integers(0, 2, n).astype(bool)
    if kind(name) == "c":
        part = "float32" if name == "complex64" else "float64"
        return pool(part, 2 * n, rng).view(dt)
    specials = special_values(name)
    bits = np.frombuffer(rng.bytes(n * dt.itemsize), uint_of(name)).view(dt)
    if kind(name) == "f":
        small = np.where(rng.integers(0, 2, n) == 0, rng.integers(-600, 600, n) / 2,
                         rng.uniform(-300, 300, n))
        small = cast(small.astype(np.float64), name)
    else:
        small = rng.integers(-300, 300, n).astype(dt)
    choice = rng.integers(0, 3, n)
    out = np.where(choice == 0, specials[rng.integers(0, specials.size, n)].view(uint_of(name)),
                   np.where(choice == 1, bits.view(uint_of(name)), small.view(uint_of(name))))
    return out.astype(uint_of(name)).view(dt)


def sentinel_bytes(nbytes, salt=0):
    """A position-dependent byte pattern: a stray write of almost any value changes it."""
    period = ((np.arange(256) * 151 + 89 + salt) % 256).astype(np.uint8)
    return np.tile(period, nbytes // 256 + 1)[:nbytes].copy()


def byte_mask(nbytes, first, sizes, strides, itemsize):
    """Mask of the bytes of an nbytes buffer that an element of the layout (element 0 at byte
    ``first``, strides in elements) covers."""
    mask = np.zeros(nbytes, bool)
    if 0 in sizes:
        return mask
    offsets = np.zeros(1, np.int64)
    for n, stride in zip(sizes, strides, strict=True):
        offsets = (offsets[:, None] + np.arange(n, dtype=np.int64)[None, :] * stride).ravel()
    for b in range(itemsize):
        mask[first + itemsize * offsets + b] = True
    return mask


class Placed:
    """A strided numpy view of type ``name`` over its own byte buffer, GUARD elements (plus
    ``extra`` bytes) of margin on each side. ``values``: fill the buffer with values drawn by
    :func:`pool` (a source); else a sentinel byte pattern (a destination)."""

    def __init__(self, sizes, strides, name, *, rng=None, extra=0):
        self.name = name
        self.dtype = np_dtype(name)
        k = self.dtype.itemsize
        lo, hi = element_span(sizes, strides)
        count = hi - lo + 1 + 2 * GUARD
        if rng is None:
            self.raw = sentinel_bytes(count * k + 2 * extra, salt=len(sizes))
        else:
            pad = sentinel_bytes(extra)
            self.raw = np.concatenate([pad, pool(name, count, rng).view(np.uint8), pad])
        self.first = extra + (GUARD - lo) * k                # byte of element (0, ..., 0)
        self.sizes, self.strides = tuple(sizes), tuple(strides)
        one = self.raw[self.first:self.first + k].view(self.dtype)
        self.view = as_strided(one, shape=self.sizes, strides=tuple(s * k for s in strides))
        self.before = self.raw.copy()

    def values(self):
        return np.array(self.view, copy=True)

    def element_bytes(self):
        """Mask of the bytes that belong to an element of the layout."""
        return byte_mask(self.raw.size, self.first, self.sizes, self.strides,
                         self.dtype.itemsize)

    def assert_untouched(self, what=""):
        bad = np.flatnonzero(self.raw != self.before)
        assert bad.size == 0, f"{what}: {bad.size} bytes written, first at byte {bad[0]}"

    def assert_holds(self, expected, source=None, what=""):
        """The elements hold ``expected`` (bit-exact, NaN: a NaN), no byte outside changed."""
        assert_converted_equal(self.values(), expected, source, what)
        outside = ~self.element_bytes()
        bad = np.flatnonzero((self.raw != self.before) & outside)
        assert bad.size == 0, f"{what}: {bad.size} bytes outside the destination written"


def strided_pair(sizes, dst_strides, src_strides, src, dst, seed, extra=0):
    rng = np.random.default_rng(seed)
    return (Placed(sizes, dst_strides, dst, extra=extra),
            Placed(sizes, src_strides, src, rng=rng))


def call_copyto(dst, src, *, casting=None, threads=None, **kw):
    if casting is not None:
        kw["casting"] = casting
    if threads is not None:
        kw["num_threads"] = threads
    strided.copyto(dst, src, **kw)


def expect_copy(d, s, *, casting=None, threads=None, what="", **affine_kw):
    """Run copyto(d.view, s.view, ...) and check it against the oracle: the converted values,
    or, for a pair the contract refuses, a TypeError with every byte of d unchanged."""
    src_vals = s.values()
    effective = "same_kind" if casting is None else casting
    is_affine = affine_kw.get("scale") is not None or affine_kw.get("shift") is not None
    refuse = (refused_always(s.name, d.name) or not can_cast(s.name, d.name, effective)
              or (is_affine and (d.name == "bool" or "c" in (kind(s.name), kind(d.name)))))
    if refuse:
        with pytest.raises(TypeError):
            call_copyto(d.view, s.view, casting=casting, threads=threads, **affine_kw)
        d.assert_untouched(f"{what} refused")
        return
    expected = convert(src_vals, d.name, **affine_kw)
    call_copyto(d.view, s.view, casting=casting, threads=threads, **affine_kw)
    d.assert_holds(expected, src_vals, what)
    s.assert_untouched(f"{what}: the source changed")


#: (sizes, dst strides, src strides) in elements: every kind of layout the contract names
LAYOUTS = [
    ((), (), ()),                                            # rank 0
    ((7,), (1,), (-1,)),                                     # reversed source
    ((5,), (-2,), (3,)),                                     # negative, padded destination
    ((4, 3), (3, 1), (0, 1)),                                # broadcast source row
    ((4, 3), (1, 4), (0, 0)),                                # broadcast scalar, column-major
    ((2, 3, 4), (1, 2, 6), (12, 4, 1)),                      # permuted
    ((2, 3, 4), (20, 6, 1), (-1, -8, 2)),                    # padded dst, mixed source
    ((3, 0, 2), (2, 6, 1), (2, 1, 1)),                       # size 0
    ((1, 5, 1), (9, 1, -4), (0, -1, 7)),                     # size-1 dims with odd strides
    ((2, 1, 2, 3, 1, 2), (24, 1, 12, 4, 5, 2), (1, 3, -2, 4, 0, 12)),   # rank 6
]

# ---- the oracle against numpy and torch ----------------------------------------------------


def numpy_defines(x, dst):
    """Where numpy (and torch) define the value of a cast: not float NaN/out of range -> int."""
    src = type_name(x.dtype)
    if kind(src) == "f" and kind(dst) in "iu":
        with np.errstate(all="ignore"):
            f = (x.astype(np.float32) if x.dtype == BF16 else x).astype(np.float64)
            t = np.trunc(f)
        info = np.iinfo(dst)
        return ~np.isnan(f) & (t >= info.min) & (t < float(info.max) + 1)
    return np.ones(x.shape, bool)


@pytest.mark.parametrize("src,dst", [p for p in PAIRS if not refused_always(*p)
                                     and "bfloat16" not in p])
def test_oracle_is_numpy_astype_where_numpy_defines_it(src, dst):
    x = special_values(src)
    m = numpy_defines(x, dst)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        ref = x.astype(np.dtype(dst))
    assert_converted_equal(cast(x, dst)[m], ref[m], x[m], f"{src} -> {dst}")


def torch_tensor(a):
    """A CPU torch tensor with the values of numpy array ``a`` (bfloat16 by its bits)."""
    a = np.ascontiguousarray(a)
    if a.dtype == BF16:
        return torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16)
    return torch.from_numpy(a.copy())


def numpy_of(t):
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(BF16).copy()
    return t.numpy().copy()


def torch_dtype(name):
    return getattr(torch, name)


@needs_torch
@pytest.mark.parametrize("src,dst", [p for p in PAIRS if not refused_always(*p)
                                     and "bfloat16" in p])
def test_oracle_is_torch_for_bfloat16_pairs(src, dst):
    x = special_values(src)
    m = numpy_defines(x, dst)
    ref = numpy_of(torch_tensor(x).to(torch_dtype(dst)))
    assert_converted_equal(cast(x, dst)[m], ref[m], x[m], f"{src} -> {dst}")


@needs_torch
def test_oracle_rounds_float32_to_bfloat16_as_torch():
    rng = np.random.default_rng(1)
    bits = np.concatenate([rng.integers(0, 2**32, 1 << 20, dtype=np.uint32),
                           np.arange(0, 2**32, 2**15, dtype=np.uint32) | 0x8000])
    x = bits.view(np.float32)
    ref = numpy_of(torch.from_numpy(x).to(torch.bfloat16))
    assert_converted_equal(cast(x, "bfloat16"), ref, x, "float32 -> bfloat16")


# ---- plain casts: every pair ---------------------------------------------------------------


def dst_like(name, shape):
    return Placed(shape, tuple(int(np.prod(shape[i + 1:])) for i in range(len(shape))), name)


def placed_values(values, sizes=None):
    """A contiguous 1-D Placed source holding exactly ``values`` (reshaped to ``sizes``)."""
    name = type_name(values.dtype)
    sizes = values.shape if sizes is None else sizes
    strides = tuple(int(np.prod(sizes[i + 1:])) for i in range(len(sizes)))
    s = Placed(sizes, strides, name, rng=np.random.default_rng(0))
    s.view[...] = values.reshape(sizes)
    s.before = s.raw.copy()
    return s


@pytest.mark.parametrize("src,dst", PAIRS)
def test_plain_cast_special_values_every_pair(src, dst):
    x = special_values(src)
    for casting in ("unsafe", None):
        s = placed_values(x)
        d = dst_like(dst, x.shape)
        expect_copy(d, s, casting=casting, what=f"{src} -> {dst} casting={casting}")
    # the same values through a reversed, padded 2-D layout
    n = x.size - x.size % 2
    sizes = (2, n // 2)
    s = placed_values(x[:n])
    src_view = s.view.reshape(sizes)[::-1, ::-1]
    d = Placed(sizes, (1, -3), dst)
    if refused_always(src, dst):
        with pytest.raises(TypeError):
            strided.copyto(d.view, src_view, casting="unsafe")
        d.assert_untouched()
        return
    expected = convert(np.array(src_view), dst)
    strided.copyto(d.view, src_view, casting="unsafe")
    d.assert_holds(expected, np.array(src_view), f"{src} -> {dst} reversed")


@pytest.mark.parametrize("src,dst", PAIRS)
def test_plain_cast_every_pair_on_strided_layouts(src, dst):
    for k, (sizes, dst_strides, src_strides) in enumerate(LAYOUTS):
        d, s = strided_pair(sizes, dst_strides, src_strides, src, dst, seed=k, extra=k % 3)
        expect_copy(d, s, casting="unsafe", threads=THREADS[k % 3],
                    what=f"{src} -> {dst} {sizes} dst {dst_strides} src {src_strides}")


@pytest.mark.parametrize("casting", CASTINGS)
def test_casting_rules_are_numpys(casting):
    """Each pair is accepted exactly when np.can_cast (bfloat16: the contract's table) says so;
    a refusal is a TypeError that writes nothing."""
    for src, dst in PAIRS:
        d, s = strided_pair((3,), (1,), (1,), src, dst, seed=5)
        expect_copy(d, s, casting=casting, what=f"{src} -> {dst} casting={casting}")


def test_bfloat16_casting_table():
    """The contract's bfloat16 rules, spelled out (the oracle's can_cast is checked too)."""
    bf = "bfloat16"
    assert [t for t in TYPES if can_cast(t, bf, "safe")] == ["bool", "int8", "uint8", bf]
    assert [t for t in TYPES if can_cast(bf, t, "safe")] == [bf, "float32", "float64",
                                                             "complex64", "complex128"]
    assert can_cast(bf, "float16", "same_kind") and can_cast("float64", bf, "same_kind")
    assert not can_cast(bf, "int8", "same_kind") and not can_cast("int16", bf, "safe")
    x = np.array([1.5, -2.25], np.float32)
    d = np.zeros(2, BF16)
    strided.copyto(d, np.zeros(2, np.float16))                 # same_kind among floats
    strided.copyto(d, x)
    assert d.astype(np.float32).tolist() == [1.5, -2.25]
    for bad in (np.zeros(2, np.int16), np.zeros(2, np.float32)):
        with pytest.raises(TypeError):
            strided.copyto(d, bad, casting="safe")
    assert d.astype(np.float32).tolist() == [1.5, -2.25]
    with pytest.raises(TypeError):
        strided.copyto(np.zeros(2, np.int32), d)                # float -> int: not same_kind


@hst.composite
def plain_cases(draw):
    sizes = draw(copy_sizes())
    return (sizes, draw(nonoverlapping_strides(sizes)), draw(source_strides(sizes)),
            draw(hst.sampled_from(PAIRS)))


@given(case=plain_cases(), casting=hst.sampled_from((None, "unsafe", "same_kind", "safe", "no")),
       threads=hst.sampled_from(THREADS), seed=hst.integers(0, 2**32 - 1),
       extra=hst.integers(0, 3))
def test_plain_cast_random_layouts(case, casting, threads, seed, extra):
    sizes, dst_strides, src_strides, (src, dst) = case
    d, s = strided_pair(sizes, dst_strides, src_strides, src, dst, seed, extra)
    expect_copy(d, s, casting=casting, threads=threads,
                what=f"{src} -> {dst} {sizes} dst {dst_strides} src {src_strides}")


def test_plain_cast_named_values():
    """A few values spelled out (the oracle computes the same; these document the contract)."""
    f = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 127.9, 128.5, -129.0, np.nan, np.inf,
                  -np.inf, 300.0, -1.0], np.float32)
    out = np.zeros(f.size, np.int8)
    strided.copyto(out, f, casting="unsafe")
    assert out.tolist() == [0, 1, 2, 0, -1, -2, 127, 127, -128, 0, 127, -128, 127, -1]
    out = np.zeros(f.size, np.uint8)
    strided.copyto(out, f, casting="unsafe")
    assert out.tolist() == [0, 1, 2, 0, 0, 0, 127, 128, 0, 0, 255, 0, 255, 0]
    b = np.zeros(4, bool)
    strided.copyto(b, np.array([0.0, -0.0, np.nan, 1e-45], np.float32), casting="unsafe")
    assert b.tolist() == [False, False, True, True]
    w = np.zeros(3, np.int8)
    strided.copyto(w, np.array([255, 256, -129], np.int32), casting="unsafe")
    assert w.tolist() == [-1, 0, 127]                            # wraps, as numpy
    h = np.zeros(2, np.float16)
    strided.copyto(h, np.array([1 + 2**-11 + 2**-30, 65520.0]), casting="unsafe")
    assert h.tolist() == [1 + 2**-10, np.inf]                    # one rounding, as numpy
    bf = np.zeros(2, BF16)
    strided.copyto(bf, np.array([1 + 2**-8 + 2**-30, -(1 + 3 * 2**-8)]), casting="unsafe")
    assert bf.astype(np.float64).tolist() == [1.0, -(1 + 2**-6)]  # through float32: two
    strided.copyto(bf, np.array([2**24 + 2**16 + 1, 3], np.int64), casting="unsafe")
    assert bf.astype(np.float64).tolist() == [2.0**24, 3.0]
    c = np.zeros(2, np.complex64)
    strided.copyto(c, np.array([1.5, -0.0], BF16))
    assert c.view(np.uint32).tolist() == [0x3FC00000, 0, 0x80000000, 0]


# ---- affine --------------------------------------------------------------------------------

SCALAR_AFFINES = [
    dict(scale=2.0), dict(shift=0.5), dict(scale=1 / 127, shift=3), dict(scale=-1.5, shift=-0.25),
    dict(scale=0.1, shift=None), dict(scale=None, shift=-128.5), dict(scale=1e-40, shift=0.0),
    dict(scale=np.float32(255.0)), dict(scale=np.float64(1e30), shift=np.array(1.0)),
    dict(scale=3, shift=-7), dict(scale=np.inf), dict(shift=np.nan), dict(scale=-0.0),
]


@pytest.mark.parametrize("src", AFFINE_SRC)
@pytest.mark.parametrize("dst", AFFINE_DST)
def test_affine_special_values(src, dst):
    x = special_values(src)
    for kw in SCALAR_AFFINES:
        s = placed_values(x)
        d = dst_like(dst, x.shape)
        expect_copy(d, s, casting="unsafe", what=f"{src} -> {dst} {kw}", **kw)


def test_affine_rounds_half_to_even_and_saturates():
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 126.5, 127.5, -128.5, -129.5, np.nan,
                  np.inf, -np.inf, 1e10], np.float32)
    out = np.zeros(x.size, np.int8)
    strided.copyto(out, x, casting="unsafe", shift=0.0)
    assert out.tolist() == [0, 2, 2, 0, -2, -2, 126, 127, -128, -128, 0, 127, -128, 127]
    out = np.zeros(x.size, np.uint8)
    strided.copyto(out, x, casting="unsafe", scale=1.0)
    assert out.tolist() == [0, 2, 2, 0, 0, 0, 126, 128, 0, 0, 0, 255, 0, 255]


def test_affine_compute_type_and_two_roundings():
    # float32 source: CT float32, scale rounded to float32 first
    out = np.zeros(1, np.float64)
    strided.copyto(out, np.array([3.0], np.float32), scale=0.1)
    assert out[0] == float(np.float32(3.0) * np.float32(0.1))
    # int32 source: CT float64 (float32 would lose the 1)
    strided.copyto(out, np.array([2**24 + 1], np.int32), scale=1.0)
    assert out[0] == 2**24 + 1
    # int16 source: CT float32
    strided.copyto(out, np.array([3], np.int16), scale=0.1)
    assert out[0] == float(np.float32(3) * np.float32(0.1))
    # no fused multiply-add: x * s rounds to 1 + 2**-11 (a tie to even), + shift is 0;
    # fma would give 2**-24
    x = np.array([1 + 2**-12], np.float32)
    f = np.full(1, 7.0, np.float32)
    strided.copyto(f, x, scale=1 + 2**-12, shift=-(1 + 2**-11))
    assert f[0] == 0.0
    # the same in float64 (an int64 source): (2**52 + 1) * (1 + 2**-52) rounds, then - 2**52
    g = np.zeros(1, np.float64)
    strided.copyto(g, np.array([2**52 + 1], np.int64), scale=1 + 2**-52, shift=-(2.0**52))
    assert g[0] == float(np.float64(2**52 + 1) * np.float64(1 + 2**-52) - 2.0**52)
    # only scale, only shift: the missing term is not applied (-0.0 * 1 stays -0.0; + 0.0
    # would make it +0.0)
    z = np.zeros(1, np.float32)
    strided.copyto(z, np.array([-0.0], np.float32), scale=1.0)
    assert z.view(np.uint32)[0] == 0x80000000
    strided.copyto(z, np.array([-0.0], np.float32), shift=0.0)
    assert z.view(np.uint32)[0] == 0


VECTOR_KINDS = ("list", "float64", "float32", "int", "torch")


def make_vector(values, how):
    values = np.asarray(values, np.float64)
    if how == "list":
        return values.tolist()
    if how == "float32":
        return values.astype(np.float32)
    if how == "int":
        return np.rint(values).astype(np.int64)
    if how == "torch":
        return torch.from_numpy(values.copy()) if torch is not None else values.tolist()
    return values


@pytest.mark.parametrize("axis", [0, 1, 2, 3, -1, -2, -3, -4])
@pytest.mark.parametrize("how", VECTOR_KINDS)
def test_affine_per_channel_every_axis(axis, how):
    sizes = (2, 3, 4, 5)
    rng = np.random.default_rng(axis + 10)
    x = (rng.standard_normal(sizes) * 40).astype(np.float32)
    n = sizes[axis]
    scale = make_vector(rng.uniform(-3, 3, n), how)
    shift = make_vector(rng.uniform(-20, 20, n), how)
    src = as_strided(x, sizes, x.strides)[:, ::-1]           # a strided, reversed source
    for dst in ("int8", "uint8", "float16", "bfloat16", "float32", "int32"):
        for kw in (dict(scale=scale, shift=shift), dict(scale=scale), dict(shift=shift),
                   dict(scale=scale, shift=1.25), dict(scale=0.5, shift=shift)):
            out = np.zeros(sizes, np_dtype(dst))
            strided.copyto(out, src, casting="unsafe", axis=axis, **kw)
            expected = affine(np.array(src), dst, axis=axis, **{
                k: (v.numpy() if torch is not None and isinstance(v, torch.Tensor) else v)
                for k, v in kw.items()})
            assert_converted_equal(out, expected, np.array(src), f"{dst} axis={axis} {kw}")


def test_affine_vector_on_rank_1_needs_no_axis():
    x = np.array([1.0, 2.0, 3.0], np.float32)
    out = np.zeros(3, np.int16)
    strided.copyto(out, x, casting="unsafe", scale=[1.0, 10.0, 100.0], shift=[0.5, 0, -1])
    assert out.tolist() == [2, 20, 299]
    strided.copyto(out, x, casting="unsafe", scale=[2.0, 2.0, 2.0], axis=-1)
    assert out.tolist() == [2, 4, 6]


@hst.composite
def affine_terms(draw, sizes):
    """(scale, shift, axis): scalars or per-channel vectors along a random axis."""
    ndim = len(sizes)
    axis = draw(hst.integers(-ndim, ndim - 1)) if ndim else None
    number = hst.sampled_from([0.5, 2.0, -1.0, 1 / 127, 1 / 255, 3.0, 0.0, 1e-3, 1e30, -7.25,
                               127.5, -0.0]) | hst.floats(-1e3, 1e3, width=32)

    def term():
        kind_ = draw(hst.sampled_from(("none", "scalar", "vector") if ndim else
                                      ("none", "scalar")))
        if kind_ == "none":
            return None
        if kind_ == "scalar":
            value = draw(number)
            return draw(hst.sampled_from((value, np.float32(value), np.float64(value),
                                          np.array(value))))
        n = sizes[axis]
        values = [draw(number) for _ in range(n)]
        return draw(hst.sampled_from((values, np.array(values), np.array(values, np.float32))))

    scale, shift = term(), term()
    if scale is None and shift is None:
        shift = 1.0
    vector = any(isinstance(v, list) or (isinstance(v, np.ndarray) and v.ndim == 1)
                 for v in (scale, shift))
    if not vector or (ndim == 1 and draw(hst.booleans())):
        axis = None
    return scale, shift, axis


@hst.composite
def affine_cases(draw):
    sizes = draw(copy_sizes())
    pair = (draw(hst.sampled_from(AFFINE_SRC)), draw(hst.sampled_from(AFFINE_DST)))
    return (sizes, draw(nonoverlapping_strides(sizes)), draw(source_strides(sizes)), pair,
            draw(affine_terms(sizes)))


@given(case=affine_cases(), threads=hst.sampled_from(THREADS), seed=hst.integers(0, 2**32 - 1),
       extra=hst.integers(0, 3))
def test_affine_random_layouts(case, threads, seed, extra):
    sizes, dst_strides, src_strides, (src, dst), (scale, shift, axis) = case
    d, s = strided_pair(sizes, dst_strides, src_strides, src, dst, seed, extra)
    expect_copy(d, s, casting="unsafe", threads=threads, scale=scale, shift=shift, axis=axis,
                what=f"{src} -> {dst} {sizes} dst {dst_strides} src {src_strides} "
                     f"scale={scale!r} shift={shift!r} axis={axis}")


def test_affine_default_casting_is_numpys():
    """casting= applies to the dtypes whether or not the copy is affine (numpy's ufuncs with
    out= and casting= behave so): float32 -> int8 needs casting="unsafe"."""
    x = np.array([1.0, 2.0], np.float32)
    out = np.full(2, 9, np.int8)
    with pytest.raises(TypeError):
        strided.copyto(out, x, scale=2.0)
    assert out.tolist() == [9, 9]
    f = np.zeros(2, np.float32)
    strided.copyto(f, np.array([1, 2], np.int8), scale=0.5, shift=1.0)   # same_kind: fine
    assert f.tolist() == [1.5, 2.0]


# ---- overlap, guard bytes, threads, SIMD levels --------------------------------------------


@hst.composite
def overlap_cases(draw):
    real = [t for t in REAL if t != "bool"]
    src = draw(hst.sampled_from(real))
    dst = draw(hst.sampled_from([t for t in [*real, "bool"]
                                 if np_dtype(t).itemsize != np_dtype(src).itemsize]))
    sizes = draw(copy_sizes(max_rank=4))
    return (sizes, draw(nonoverlapping_strides(sizes)), draw(source_strides(sizes)), src, dst,
            draw(hst.booleans()))


@given(case=overlap_cases(), seed=hst.integers(0, 2**32 - 1), shift=hst.integers(-40, 40),
       threads=hst.sampled_from(THREADS))
def test_overlapping_views_of_different_itemsizes(case, seed, shift, threads):
    """dst and src view one buffer with different element types: dst gets the converted copy
    of src as it was, and no byte outside dst's elements changes."""
    sizes, dst_strides, src_strides, src, dst, use_affine = case
    ks, kd = np_dtype(src).itemsize, np_dtype(dst).itemsize
    rng = np.random.default_rng(seed)
    s_lo, s_hi = element_span(sizes, src_strides)
    d_lo, d_hi = element_span(sizes, dst_strides)
    # the lowest byte of src at P, of dst at P + shift * kd: both aligned to their itemsize,
    # overlapping whenever the spans meet
    start = 8 * (GUARD + 40)
    sf = start - s_lo * ks
    df = start + shift * kd - d_lo * kd
    nbytes = max(sf + (s_hi + 1) * ks, df + (d_hi + 1) * kd) + 8 * GUARD
    nbytes += -nbytes % 8
    buf = pool(src, nbytes // ks, rng).view(np.uint8).copy()
    s_view = as_strided(buf[sf:sf + ks].view(np_dtype(src)), sizes, [x * ks for x in src_strides])
    d_view = as_strided(buf[df:df + kd].view(np_dtype(dst)), sizes, [x * kd for x in dst_strides])
    kw = dict(scale=0.75, shift=-3.0) if use_affine and dst != "bool" else {}
    src_vals = np.array(s_view)
    expected = convert(src_vals, dst, **kw)
    before = buf.copy()
    call_copyto(d_view, s_view, casting="unsafe", threads=threads, **kw)
    assert_converted_equal(np.array(d_view), expected, src_vals,
                           f"{src} -> {dst} {sizes} src@{sf} {src_strides} dst@{df} "
                           f"{dst_strides}")
    mask = byte_mask(nbytes, df, sizes, dst_strides, kd)
    bad = np.flatnonzero((buf != before) & ~mask)
    assert bad.size == 0, f"{bad.size} bytes outside dst written, first at {bad[0]}"


def test_overlap_float32_and_uint8_views_of_one_buffer():
    buf = np.zeros(4096 + 64, np.uint8)
    f = buf[32:32 + 4096].view(np.float32)
    f[:] = np.arange(1024, dtype=np.float32) % 300 - 20.5
    for start in (32, 33, 1000, 32 + 4095 - 1023, 32 + 2048):
        b = buf.copy()
        src = b[32:32 + 4096].view(np.float32)
        dst = b[start:start + 1024]
        expected = cast(np.array(src), "uint8")
        strided.copyto(dst, src, casting="unsafe")
        assert_converted_equal(dst, expected, None, f"uint8 dst at byte {start}")
        assert (b[:start] == buf[:start]).all() and (b[start + 1024:] == buf[start + 1024:]).all()


def test_overlap_float64_dst_over_float32_src():
    base = sentinel_bytes(8192 + 512)
    src0 = np.random.default_rng(3).standard_normal(512).astype(np.float32)
    # 512 float32 (2048 bytes) at src_at, 512 float64 (4096 bytes) at dst_at
    for src_at, dst_at, step in [(256, 256, 1), (256 + 2048, 256, 1), (256, 256 + 1024, 1),
                                 (264, 256, -1), (256 + 2048, 256, -1), (256 + 4, 256, 1),
                                 (256, 256 + 2040, 1), (4096, 256, 1)]:
        b = base.copy()
        b[src_at:src_at + 2048].view(np.float32)[:] = src0
        before = b.copy()
        src = b[src_at:src_at + 2048].view(np.float32)
        dst = b[dst_at:dst_at + 4096].view(np.float64)[::step]
        strided.copyto(dst, src)
        assert_converted_equal(dst, src0.astype(np.float64), src0, f"{src_at} {dst_at} {step}")
        outside = np.ones(b.size, bool)
        outside[dst_at:dst_at + 4096] = False
        assert (b[outside] == before[outside]).all()
        # and back: float32 dst over the float64 values
        b2 = b.copy()
        src64 = b2[dst_at:dst_at + 4096].view(np.float64)
        vals = np.array(src64)
        dst32 = b2[dst_at + 1000:dst_at + 1000 + 2048].view(np.float32)[::-1]
        strided.copyto(dst32, src64)
        assert_converted_equal(dst32, vals.astype(np.float32), vals)


BIG_CASES = [
    ("float32", "float16", {}), ("float16", "float32", {}), ("float32", "bfloat16", {}),
    ("bfloat16", "float32", {}), ("float64", "float32", {}), ("int32", "float32", {}),
    ("uint8", "float32", dict(scale=1 / 255)), ("float32", "int8", dict(scale=1 / 0.05,
                                                                          shift=3.0)),
    ("float32", "uint8", {}), ("int64", "int8", {}), ("float64", "bfloat16", {}),
    ("int8", "float16", dict(scale=0.5, shift=-1.0)), ("complex64", "complex128", {}),
    ("bool", "float32", {}), ("float32", "bool", {}),
]


def big_source(name, sizes, seed):
    x = pool(name, int(np.prod(sizes)), np.random.default_rng(seed)).reshape(sizes)
    return x.transpose(2, 0, 1)[:, ::-1]


@pytest.mark.parametrize("src,dst,kw", BIG_CASES)
def test_one_and_two_threads_identical(src, dst, kw):
    x = big_source(src, (64, 33, 65), 7)
    expected = convert(np.array(x), dst, **kw)
    results = []
    for threads in (1, 2):
        out = np.zeros((33, 65, 64), np_dtype(dst)).transpose(1, 2, 0)[:, ::-1]
        strided.copyto(out, x, casting="unsafe", num_threads=threads, **kw)
        assert_converted_equal(out, expected, np.array(x), f"{src} -> {dst} threads={threads}")
        results.append(np.array(out).tobytes())
    assert results[0] == results[1]


@pytest.fixture(params=[0, 1, 2])
def simd_level(request):
    try:
        used = _copy._simd(request.param)
        assert used <= request.param
        assert _copy._simd() == used
        yield used
    finally:
        _copy._simd(-1)


SIMD_AFFINE = [("float32", "int8", dict(scale=1 / 0.02, shift=-5.0)),
               ("float32", "uint8", dict(scale=255.0)), ("int8", "float32", dict(scale=0.02)),
               ("uint8", "float32", dict(scale=1 / 255, shift=-0.5)),
               ("float16", "int8", dict(scale=10.0)), ("bfloat16", "int8", dict(scale=10.0)),
               ("int32", "float32", dict(scale=1e-3)), ("float32", "float16", dict(shift=1.0)),
               ("int8", "bfloat16", dict(scale=0.5)), ("float32", "int32", dict(scale=1e5)),
               ("float16", "float32", dict(scale=1 / 3, shift=-2.5)),
               ("bfloat16", "float32", dict(scale=-1e-3, shift=7.0)),
               ("float32", "float16", dict(scale=1e-5, shift=-1.0)),
               ("float32", "bfloat16", dict(scale=3.0, shift=0.1))]


def test_every_simd_level(simd_level):
    """Every pair (plain) and the quantize/dequantize pairs (affine) at this SIMD level, on
    lengths that end in every tail, contiguous and strided."""
    rng = np.random.default_rng(simd_level)
    lengths = [0, 1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 65, 1003]
    for src, dst in PAIRS:
        if refused_always(src, dst):
            continue
        x = pool(src, 1003 * 2, rng)
        for step in (1, 2):
            full = x[::step][:1003]
            expected = cast(full, dst)
            for n in lengths:
                out = np.zeros(n, np_dtype(dst))
                strided.copyto(out, full[:n], casting="unsafe")
                assert_converted_equal(out, expected[:n], full[:n],
                                       f"simd {simd_level}: {src} -> {dst} n={n} step={step}")
    for src, dst, kw in SIMD_AFFINE:
        x = pool(src, 4099, rng)
        for n in lengths:
            out = np.zeros(n, np_dtype(dst))
            strided.copyto(out, x[:n], casting="unsafe", **kw)
            assert_converted_equal(out, affine(x[:n], dst, **kw), x[:n],
                                   f"simd {simd_level}: {src} -> {dst} {kw} n={n}")
        sizes = (3, 17, 5)
        y = pool(src, 255, rng).reshape(sizes)
        vec = np.linspace(-2, 2, 17)
        out = np.zeros(sizes, np_dtype(dst)).transpose(2, 0, 1).transpose(1, 2, 0)
        strided.copyto(out, y, casting="unsafe", scale=vec, shift=vec[::-1].copy(), axis=1)
        assert_converted_equal(out, affine(y, dst, scale=vec, shift=vec[::-1], axis=1), y,
                               f"simd {simd_level}: per channel {src} -> {dst}")
        # one scale and shift per element of a contiguous row (the fused rows' ps = 1)
        out = np.zeros((5, 17), np_dtype(dst))
        z = pool(src, 85, rng).reshape(5, 17)
        strided.copyto(out, z, casting="unsafe", scale=vec, shift=vec[::-1].copy(), axis=1)
        assert_converted_equal(out, affine(z, dst, scale=vec, shift=vec[::-1], axis=1), z,
                               f"simd {simd_level}: per element {src} -> {dst}")


# ---- refusals ------------------------------------------------------------------------------


def refusal_cases():
    f32 = lambda n=6: np.arange(n, dtype=np.float32)          # noqa: E731
    m = np.arange(12, dtype=np.float32).reshape(3, 4)
    return {
        "complex_to_real": (np.zeros(4, np.float32), np.ones(4, np.complex64),
                            dict(casting="unsafe"), TypeError, None),
        "complex_to_bool": (np.zeros(4, bool), np.ones(4, np.complex128),
                            dict(casting="unsafe"), TypeError, None),
        "complex_to_int": (np.zeros(4, np.int32), np.ones(4, np.complex64),
                           dict(casting="unsafe"), TypeError, None),
        "bool_dst_affine": (np.zeros(6, bool), f32(), dict(casting="unsafe", scale=2.0),
                            TypeError, None),
        "bool_dst_shift": (np.zeros(6, bool), f32(), dict(casting="unsafe", shift=1.0),
                           TypeError, None),
        "complex_src_affine": (np.zeros(4, np.complex64), np.ones(4, np.complex64),
                               dict(scale=2.0), TypeError, None),
        "complex_dst_affine": (np.zeros(6, np.complex64), f32(), dict(shift=1.0), TypeError,
                               None),
        "bad_casting_string": (np.zeros(6, np.float64), f32(), dict(casting="sometimes"),
                               ValueError, "casting"),
        "casting_not_a_string": (np.zeros(6, np.float64), f32(), dict(casting=3),
                                 (TypeError, ValueError), "casting"),
        "refused_by_same_kind": (np.zeros(6, np.int32), f32(), {}, TypeError, None),
        "refused_by_safe": (np.zeros(6, np.float16), f32(), dict(casting="safe"), TypeError,
                            None),
        "refused_by_no": (np.zeros(6, np.float64), f32(), dict(casting="no"), TypeError, None),
        "vector_wrong_length": (np.zeros(6, np.float32), f32(), dict(scale=[1.0, 2.0]),
                                ValueError, "scale"),
        "shift_vector_wrong_length": (np.zeros((3, 4), np.float32), m,
                                      dict(shift=[1.0, 2.0, 3.0], axis=1), ValueError, "shift"),
        "vector_without_axis": (np.zeros((3, 4), np.float32), m, dict(scale=[1.0] * 4),
                                ValueError, "axis"),
        "axis_out_of_range": (np.zeros((3, 4), np.float32), m, dict(scale=[1.0] * 4, axis=2),
                              ValueError, "axis"),
        "axis_negative_out_of_range": (np.zeros((3, 4), np.float32), m,
                                       dict(scale=[1.0] * 3, axis=-3), ValueError, "axis"),
        "vector_on_rank_0": (np.zeros((), np.float32), np.float32(1.0) + np.zeros(()),
                             dict(scale=[1.0]), ValueError, None),
        "scale_a_string": (np.zeros(6, np.float32), f32(), dict(scale="2"),
                           (TypeError, ValueError), "scale"),
        "shift_an_object": (np.zeros(6, np.float32), f32(), dict(shift=object()),
                            (TypeError, ValueError), "shift"),
        "scale_2d": (np.zeros((3, 4), np.float32), m, dict(scale=np.ones((3, 4)), axis=0),
                     ValueError, "scale"),
        "scale_complex": (np.zeros(6, np.float32), f32(), dict(scale=1j),
                          (TypeError, ValueError), "scale"),
        "read_only_dst": (np.zeros(6, np.float64), f32(), {}, ValueError, None),
        "mismatched_shapes": (np.zeros(5, np.float64), f32(), {}, ValueError, None),
        "mismatched_shapes_affine": (np.zeros((3, 3), np.int8), m,
                                     dict(casting="unsafe", scale=1.0), ValueError, None),
    }


@pytest.mark.parametrize("name", list(refusal_cases()))
def test_refusals_write_nothing(name):
    dst, src, kw, error, names = refusal_cases()[name]
    dst[...] = 7 if dst.dtype != bool else True
    if name == "read_only_dst":
        dst.flags.writeable = False
    before = dst.copy()
    with pytest.raises(error) as info:
        strided.copyto(dst, src, **kw)
    if names is not None:
        assert re.search(names, str(info.value)), str(info.value)
    assert dst.tobytes() == before.tobytes()


# ---- exhaustive sweeps ---------------------------------------------------------------------


def test_every_float16_to_float32_and_float64():
    h = np.arange(2**16, dtype=np.uint16).view(np.float16)
    for dst in ("float32", "float64", "bfloat16"):
        out = np.zeros(h.size, np_dtype(dst))
        strided.copyto(out, h, casting="unsafe")
        ref = h.astype(np.dtype(dst)) if dst != "bfloat16" else cast(h, dst)
        assert_converted_equal(out, ref, h, f"float16 -> {dst}")


@needs_torch
def test_every_bfloat16_to_float32_and_back_as_torch():
    b = np.arange(2**16, dtype=np.uint16).view(BF16)
    out = np.zeros(b.size, np.float32)
    strided.copyto(out, b)
    ref = numpy_of(torch_tensor(b).to(torch.float32))
    assert_converted_equal(out, ref, b, "bfloat16 -> float32")
    # float32 -> bfloat16: every bfloat16 high half with every kind of low half (zero, ties,
    # just below and above the tie, the largest)
    hi = np.arange(2**16, dtype=np.uint32) << 16
    low = np.array([0, 1, 0x7FFF, 0x8000, 0x8001, 0xC000, 0xFFFF], np.uint32)
    x = (hi[:, None] | low[None, :]).ravel().view(np.float32)
    out = np.zeros(x.size, BF16)
    strided.copyto(out, x)
    ref = numpy_of(torch.from_numpy(x).to(torch.bfloat16))
    assert_converted_equal(out, ref, x, "float32 -> bfloat16")
    # float64 -> bfloat16 rounds through float32, as torch
    rng = np.random.default_rng(11)
    with np.errstate(all="ignore"):
        d = (x[::7].astype(np.float64) * (1 + rng.choice([0, 2**-30, -(2**-30), 2**-40],
                                                          x[::7].size)))
    out = np.zeros(d.size, BF16)
    strided.copyto(out, d)
    ref = numpy_of(torch.from_numpy(d).to(torch.bfloat16))
    assert_converted_equal(out, ref, d, "float64 -> bfloat16")


def test_float32_to_float16_near_every_float16():
    """Every float16 value as float32 plus every kind of rounding offset (the full 2**32 sweep
    is the slow test below)."""
    h = np.arange(2**16, dtype=np.uint16).view(np.float16)
    base = h.astype(np.float32).view(np.uint32)
    offsets = np.array([0, 1, 0xFFF, 0x1000, 0x1001, 0x1FFF], np.uint32)
    x = (base[:, None] + offsets[None, :]).ravel().view(np.float32)
    out = np.zeros(x.size, np.float16)
    strided.copyto(out, x)
    with np.errstate(all="ignore"):
        ref = x.astype(np.float16)
    assert_converted_equal(out, ref, x, "float32 -> float16")


@pytest.mark.slow
def test_every_float32_to_float16():
    """All 2**32 float32 bit patterns, 2**24 at a time: numpy's astype for every non-NaN,
    a NaN for every NaN."""
    chunk = 1 << 24
    out = np.empty(chunk, np.float16)
    bits = np.arange(chunk, dtype=np.uint32)
    for start in range(0, 2**32, chunk):
        x = (bits + np.uint32(start)).view(np.float32)
        strided.copyto(out, x)
        with np.errstate(all="ignore"):
            ref = x.astype(np.float16)
        nan = np.isnan(x)
        assert np.isnan(out[nan]).all(), f"a NaN pattern in chunk {start:#x} gave a number"
        bad = np.flatnonzero((out.view(np.uint16) != ref.view(np.uint16)) & ~nan)
        assert bad.size == 0, (f"{bad.size} float32 patterns in chunk {start:#x} differ; "
                               f"first {int(x.view(np.uint32)[bad[0]]):#010x}: got "
                               f"{int(out.view(np.uint16)[bad[0]]):#06x}, expected "
                               f"{int(ref.view(np.uint16)[bad[0]]):#06x}")


def test_mismatches_helper_sees_sign_of_zero_and_nan():
    """The comparison itself: -0.0 differs from 0.0, any NaN matches a NaN, a number never
    matches a NaN (so the oracle tests above cannot pass vacuously)."""
    a = np.array([0.0, np.nan, 1.0], np.float32)
    assert mismatches(np.array([-0.0, -np.nan, 1.0], np.float32), a).tolist() == [0]
    assert mismatches(np.array([0.0, 5.0, 1.0], np.float32), a).tolist() == [1]
    assert mismatches(a.astype(BF16), np.array([0.0, np.nan, 1.0], BF16)).tolist() == []
    c = np.array([1 + 1j, complex(np.nan, 0)], np.complex64)
    assert mismatches(np.array([1 - 1j, complex(np.nan, 0)], np.complex64), c).tolist() == [0]
    assert FLOATS and INTS


@pytest.mark.parametrize("other", [">f4", ">i2", "f16" if hasattr(np, "float128") else "f8",
                                   "S3", "V2", "M8[s]", "m8[s]", [("a", "<f4")],
                                   "float8_e4m3fn"])
def test_types_outside_the_fifteen_are_refused_untouched(other):
    """A dtype that is not one of the 15 (byte-swapped, extended precision, strings, dates,
    records, float8) is a TypeError as a source or a destination of a conversion, and
    nothing is written; a copy between two arrays of that same dtype still copies."""
    import ml_dtypes
    dt = np.dtype(getattr(ml_dtypes, other) if other == "float8_e4m3fn" else other)
    if dt == np.dtype("f8"):
        pytest.skip("no extended precision on this platform")
    ours = np.full(3, 7, np.float32)
    theirs = np.frombuffer(bytes(range(1, 1 + 3 * dt.itemsize)), dt).copy()
    with pytest.raises(TypeError):
        strided.copyto(ours, theirs, casting="unsafe")
    assert ours.tolist() == [7, 7, 7]
    before = theirs.copy()
    with pytest.raises(TypeError):
        strided.copyto(theirs, np.ones(3, np.float32), casting="unsafe")
    assert theirs.tobytes() == before.tobytes()
    same = np.zeros(3, dt)
    strided.copyto(same, theirs[::-1])
    assert same.tobytes() == theirs[::-1].tobytes()


PARAM_BASE = np.array([0.1, -2.5, 3.0, 1e-3, 7.0, 0.5, 11.0, -1.0, 2.0, 4.0, 5.0, 6.0])
PARAM_VECTORS = {
    "float64": lambda: PARAM_BASE[:6], "float64_swapped": lambda: PARAM_BASE[:6].astype(">f8"),
    "float32": lambda: PARAM_BASE[:6].astype("f4"), "float16": lambda: PARAM_BASE[:6].astype("f2"),
    "bfloat16": lambda: PARAM_BASE[:6].astype(BF16), "int8": lambda: np.arange(-3, 3, dtype="i1"),
    "int64_big": lambda: np.array([1, 2, 3, 4, 5, 2**62 + 1]),
    "uint64_big": lambda: np.array([1, 2, 3, 4, 5, 2**63 + 2**40], "u8"),
    "int32_swapped": lambda: np.arange(6).astype(">i4"), "step_2": lambda: PARAM_BASE[::2],
    "reversed": lambda: PARAM_BASE[:6][::-1],
    "column_of_2d": lambda: PARAM_BASE.reshape(6, 2)[:, 0],
    "read_only_broadcast": lambda: np.broadcast_to(np.float64(2.0), (6,)),
    "tuple": lambda: tuple(PARAM_BASE[:6].tolist()),
    "object": lambda: PARAM_BASE[:6].astype(object),
}


@pytest.mark.parametrize("name", list(PARAM_VECTORS))
def test_parameter_vectors_of_any_real_dtype_and_layout(name):
    """A per-channel vector is read by value, whatever its dtype, byte order or strides
    (np.asarray(v, CT) of the contract)."""
    x = np.arange(24, dtype=np.float32).reshape(4, 6) - 7.25
    xi = np.arange(24, dtype=np.int32).reshape(4, 6) * 1000 - 7
    for src, dst in ((x, "float32"), (x, "int8"), (xi, "float64"), (x, "bfloat16")):
        v = PARAM_VECTORS[name]()
        out = np.zeros((4, 6), np_dtype(dst))
        strided.copyto(out, src, casting="unsafe", scale=v, shift=v, axis=1)
        assert_converted_equal(out, affine(src, dst, scale=v, shift=v, axis=1), src,
                               f"{name} vector, {src.dtype} -> {dst}")


@pytest.mark.parametrize("value", [np.array(0.1, ">f8"), np.array(0.1, "f2"), np.float16(0.1),
                                   np.array(0.1, BF16), np.array(2**62 + 1), np.uint64(2**64 - 1),
                                   2**64 + 1, np.float32(1 / 3), np.array([0.3])[0]],
                         ids=repr)
def test_parameter_scalars_of_any_type(value):
    for src, dst in ((np.arange(-5, 7, dtype=np.float32) / 3, "float32"),
                     (np.arange(-5, 7, dtype=np.int64) * 2**40, "float64")):
        out = np.zeros(src.shape, np_dtype(dst))
        strided.copyto(out, src, scale=value, shift=value)
        assert_converted_equal(out, affine(src, dst, scale=value, shift=value), src,
                               f"{value!r}: {src.dtype} -> {dst}")


_REALS = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float32", "float64"]


def _edge_values(src):
    """Values of type ``src`` at the edges of every real type's range (and NaN, infinities,
    halves and ties for float sources), then random ones."""
    rng = np.random.default_rng(3)
    if src == "bool":
        return rng.integers(0, 2, 240).astype(bool)
    if np.dtype(src).kind == "f":
        edges = [np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 0.99, -0.99, 1.5, -1.5, 127.5,
                 128.0, -128.0, -128.5, -129.0, 255.5, 256.0, 32767.5, 32768.0, -32769.0,
                 65535.5, 65536.0, 2.0**31, -2.0**31, -2.0**31 - 1, 2.0**32, 2.0**63, -2.0**63,
                 2.0**64, 1e30, -1e30]
        random = rng.standard_normal(200) * 10.0 ** rng.integers(0, 12, 200)
        return np.concatenate([edges, random]).astype(src)
    info = np.iinfo(src)
    edges = np.array([info.min, info.max, 0, 1, -1 if info.min else 2, info.max // 3,
                      info.min // 3], dtype=object).astype(src)
    return np.concatenate([edges, rng.integers(info.min, info.max, 200, dtype=src,
                                               endpoint=True)])


@pytest.mark.parametrize("level", [0, 1, 2])
@pytest.mark.parametrize("src", _REALS)
@pytest.mark.parametrize("dst", _REALS)
def test_real_casts_of_every_pair_are_the_oracles_at_every_simd_level(level, src, dst):
    """Plain casts between the real types: the unit-stride rows of every pair (and the
    copies of same-width integer pairs) give the oracle's values (numpy's astype where numpy
    defines them; truncation, saturation and NaN -> 0 for floats out of an integer's range),
    at every SIMD level, on rows of every length up to 70 at odd byte offsets (vector tails)
    and on strided rows."""
    values = _edge_values(src)
    raw = np.zeros(values.nbytes + 16, np.uint8)
    x = raw[1:1 + values.nbytes].view(src)          # at an odd address
    x[...] = values
    want = cast(x, dst)
    old = _copy._simd(level)
    try:
        for n in (*range(71), len(values)):
            out = np.zeros(n + 2, dst)
            out[0] = out[-1] = 1
            strided.copyto(out[1:n + 1], x[:n], casting="unsafe")
            assert np.array_equal(out[1:n + 1], want[:n], equal_nan=dst.startswith("f")), \
                (n, old)
            assert out[0] == 1 and out[n + 1] == 1
        spaced = np.zeros(100, dst)
        strided.copyto(spaced[::2], x[:100:2], casting="unsafe")
        assert np.array_equal(spaced[::2], want[:100:2], equal_nan=dst.startswith("f"))
    finally:
        _copy._simd(-1)
