"""Conversion on medium and large tensors (thousands to a million elements), where the
vectorised kernels, their tails, the merged runs of per-channel parameters and the split
between threads take over from the scalar loops that the small cases of ``test_convert.py``
reach: random layouts of up to 60,000 elements (permuted, padded, reversed, broadcast), every
SIMD level, 1 and 2 threads, HWC images with per-channel parameters on the innermost axis, and
large overlapping views of different itemsizes. The oracle is :mod:`convert_oracle`; guard
bytes around every destination must keep their values.
"""

from __future__ import annotations

import numpy as np
import pytest
from convert_oracle import COMPLEX, TYPES, affine, assert_converted_equal, convert, np_dtype
from hypothesis import given, settings
from hypothesis import strategies as hst
from strategies import medium_sizes, permuted_strides
from test_convert import Placed, pool, refused_always, sentinel_bytes

import strided
from strided import _copy

REAL = tuple(t for t in TYPES if t not in COMPLEX)
HOT = [("float32", "float16"), ("float16", "float32"), ("float32", "bfloat16"),
       ("bfloat16", "float32"), ("float64", "float32"), ("float32", "float64"),
       ("uint8", "float32"), ("int8", "float32"), ("float32", "int8"), ("float32", "uint8"),
       ("int32", "float32"), ("float32", "int32"), ("int64", "float64"), ("float64", "int64"),
       ("uint16", "float32"), ("float16", "bfloat16"), ("bfloat16", "int8"),
       ("uint8", "float16"), ("int16", "int8"), ("uint8", "bfloat16")]


def with_simd(level, fn, *args, **kwargs):
    """fn(*args, **kwargs) at SIMD level ``level``, the highest level restored after."""
    try:
        _copy._simd(level)
        return fn(*args, **kwargs)
    finally:
        _copy._simd(-1)


@hst.composite
def medium_cases(draw):
    sizes = draw(medium_sizes(min_rank=1, max_rank=4, max_elements=60_000))
    pair = draw(hst.sampled_from(HOT) | hst.tuples(hst.sampled_from(TYPES),
                                                   hst.sampled_from(TYPES)))
    src, dst = pair
    terms = {}
    if (src in REAL and dst in REAL and dst != "bool" and draw(hst.booleans())):
        axis = draw(hst.integers(-len(sizes), len(sizes) - 1))
        n = sizes[axis]
        vec = hst.lists(hst.sampled_from([0.5, 2.0, 1 / 127, -3.0, 0.1, 255.0, 0.0]),
                        min_size=n, max_size=n).map(np.array)
        num = hst.sampled_from([0.5, 1 / 0.03, -1.25, 7.0])
        scale = draw(hst.none() | num | vec)
        shift = draw(hst.none() | num | vec)
        if scale is None and shift is None:
            shift = 0.5
        terms = dict(scale=scale, shift=shift, axis=axis)
    return (sizes, draw(permuted_strides(sizes)), draw(permuted_strides(sizes, broadcast=True)),
            src, dst, terms)


@settings(max_examples=40)
@given(case=medium_cases(), threads=hst.sampled_from((1, 2)), level=hst.sampled_from((0, 1, 2)),
       seed=hst.integers(0, 2**32 - 1))
def test_medium_layouts_every_level_and_thread_count(case, threads, level, seed):
    sizes, dst_strides, src_strides, src, dst, terms = case
    d = Placed(sizes, dst_strides, dst, extra=3)
    s = Placed(sizes, src_strides, src, rng=np.random.default_rng(seed))
    what = f"{src} -> {dst} {sizes} dst {dst_strides} src {src_strides} {terms} level {level}"
    if refused_always(src, dst):
        with pytest.raises(TypeError):
            strided.copyto(d.view, s.view, casting="unsafe")
        d.assert_untouched(what)
        return
    expected = convert(s.values(), dst, **terms)
    with_simd(level, strided.copyto, d.view, s.view, casting="unsafe", num_threads=threads,
              **terms)
    d.assert_holds(expected, s.values(), what)


IMAGE_PAIRS = [("uint8", "float32"), ("float32", "int8"), ("float32", "uint8"),
               ("int8", "float16"), ("float16", "int8"), ("bfloat16", "uint8"),
               ("uint8", "bfloat16"), ("float32", "float16"), ("int16", "float32"),
               ("float64", "int8"), ("int32", "float32")]


@pytest.mark.parametrize("channels", [1, 2, 3, 4, 5, 8, 16])
def test_hwc_images_with_per_channel_parameters(channels):
    """Per-channel scale/shift along the innermost axis of an HWC image (rows whose parameters
    change every element), and along H and W; every SIMD level, 1 and 2 threads."""
    rng = np.random.default_rng(channels)
    h, w = 37, 61
    for src, dst in IMAGE_PAIRS:
        x = pool(src, h * w * channels, rng).reshape(h, w, channels)
        if src in ("float32", "float64", "float16", "bfloat16"):
            x = convert(rng.uniform(-300, 300, x.shape), src)
        for axis in (-1, 0, 1):
            n = x.shape[axis]
            scale = rng.uniform(-2, 2, n).round(2)
            shift = rng.integers(-50, 50, n).astype(np.float64)
            expected = affine(x, dst, scale=scale, shift=shift, axis=axis)
            for level in (0, 1, 2):
                for threads in (1, 2):
                    out = np.zeros(x.shape, np_dtype(dst))
                    with_simd(level, strided.copyto, out, x, casting="unsafe", scale=scale,
                              shift=shift, axis=axis, num_threads=threads)
                    assert_converted_equal(out, expected, x, f"{src} -> {dst} C={channels} "
                                           f"axis={axis} level={level} threads={threads}")
        # CHW -> HWC while converting (a transposed destination)
        out = np.zeros((h, w, channels), np_dtype(dst))
        scale = rng.uniform(0.5, 2, channels)
        chw = np.ascontiguousarray(x.transpose(2, 0, 1))
        strided.copyto(out.transpose(2, 0, 1), chw, casting="unsafe", scale=scale, axis=0)
        assert_converted_equal(out, affine(x, dst, scale=scale, axis=-1), x,
                               f"CHW -> HWC {src} -> {dst} C={channels}")


@pytest.mark.parametrize("src,dst", [("float32", "float64"), ("float64", "float32"),
                                     ("float32", "uint8"), ("uint8", "float32"),
                                     ("float16", "float64"), ("int64", "int8"),
                                     ("int8", "bfloat16")])
@pytest.mark.parametrize("threads", [1, 2])
def test_large_overlapping_views_of_different_itemsizes(src, dst, threads):
    ks, kd = np_dtype(src).itemsize, np_dtype(dst).itemsize
    n = 300_000
    rng = np.random.default_rng(ks * 10 + kd)
    for delta in (0, 8 * 1000, -8 * 1000, 8 * (n // 2), 8):
        buf = sentinel_bytes(n * 8 * 2 + 2 * 8 * n)
        src_at = 8 * n
        dst_at = src_at + delta
        s = buf[src_at:src_at + n * ks].view(np_dtype(src))
        s[:] = convert(rng.uniform(-200, 200, n), src) if src != "int64" else \
            rng.integers(-2**40, 2**40, n)
        before = buf.copy()
        vals = np.array(s)
        expected = convert(vals, dst)
        for step in (1, -1):
            b = before.copy()
            sv = b[src_at:src_at + n * ks].view(np_dtype(src))
            dv = b[dst_at:dst_at + n * kd].view(np_dtype(dst))[::step]
            strided.copyto(dv, sv, casting="unsafe", num_threads=threads)
            assert_converted_equal(dv, expected, vals,
                                   f"{src} -> {dst} delta={delta} step={step}")
            outside = np.ones(b.size, bool)
            outside[dst_at:dst_at + n * kd] = False
            assert (b[outside] == before[outside]).all()
