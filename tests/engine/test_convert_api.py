"""Conversion through ``relayout``, ``to_blocked`` and ``from_blocked`` (``dtype=``, ``scale=``,
``shift=``, ``axis=``), and ``copyto`` between libraries (numpy <-> torch), against
:mod:`convert_oracle`, bit for bit.

- ``relayout(x, layout, dtype=...)`` returns an array of x's library, of the requested layout
  (torch: ``"NHWC"`` is channels_last), holding ``astype``'s values (an unsafe cast), or the
  affine values with ``scale``/``shift`` per channel along ``axis``.
- ``to_blocked(x, fmt, dtype=np.int8, scale=1/s, shift=z)`` quantizes per channel (vectors of
  length C along the logical C axis) and the padding channels hold the quantized zero,
  ``saturate(rint(shift))`` (0 without a shift; with a shift per channel, the one they share);
  ``from_blocked(y, fmt, channels=C, dtype=np.float32, scale=s, shift=...)`` dequantizes and
  ignores whatever the padding lanes hold.
- ``copyto`` from numpy into torch and back converts like numpy -> numpy (bfloat16 on both
  sides: ml_dtypes arrays and torch tensors), and writes nothing outside the destination.
- The refusals of these functions leave everything untouched.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from convert_oracle import (
    BF16,
    TYPES,
    affine,
    assert_converted_equal,
    cast,
    convert,
    kind,
    np_dtype,
    special_values,
    type_name,
)

import strided

try:                                      # torch is optional (the serial CI build has none)
    import torch
except ImportError:                       # pragma: no cover
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")

FORMATS = ["NCHW4", "NCHW32", "CHWN4", "nChw8c"]


def ramp(sizes, dtype=np.float32, seed=0, lo=-50.0, hi=50.0):
    """Random values including exact halves (rounding ties) of the given dtype."""
    rng = np.random.default_rng(seed)
    n = math.prod(sizes)
    v = np.where(rng.integers(0, 3, n) == 0, rng.integers(int(2 * lo), int(2 * hi), n) / 2,
                 rng.uniform(lo, hi, n))
    return cast(v, type_name(np.dtype(dtype))).reshape(sizes)


def nhwc_view(x):
    """x's values in a channels-last, strided numpy array (a different source layout)."""
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)


def to_numpy(t):
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(BF16).copy()
    return t.numpy().copy()


def to_torch(a):
    a = np.ascontiguousarray(a)
    if a.dtype == BF16:
        return torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16)
    return torch.from_numpy(a.copy())


# ---- relayout ------------------------------------------------------------------------------

DTYPES = ["float16", "bfloat16", "float32", "float64", "int8", "uint8", "int32", "bool",
          "complex64"]


@pytest.mark.parametrize("layout", ["NHWC", "NCHW", "CHWN", (3, 1, 0, 2)])
@pytest.mark.parametrize("dst", DTYPES)
def test_relayout_numpy_with_dtype(layout, dst):
    x = nhwc_view(ramp((2, 3, 4, 5), seed=1, lo=-300, hi=300))
    y = strided.relayout(x, layout, dtype=np_dtype(dst))
    assert isinstance(y, np.ndarray) and y.dtype == np_dtype(dst) and y.shape == x.shape
    assert strided.layout_of(y).strides == strided.packed_strides(x.shape, layout)
    assert_converted_equal(y, cast(x, dst), x, f"relayout {layout} dtype={dst}")


@pytest.mark.parametrize("src", ["float32", "float64", "bfloat16", "float16", "int32", "uint8"])
def test_relayout_numpy_from_every_kind_of_source(src):
    x = ramp((2, 3, 4, 5), np_dtype(src), seed=2, lo=0, hi=200)[:, :, ::-1]
    for dst in ("int8", "float16", "bfloat16", "float32"):
        y = strided.relayout(x, "NHWC", dtype=np_dtype(dst))
        assert_converted_equal(y, cast(np.array(x), dst), np.array(x), f"{src} -> {dst}")


@pytest.mark.parametrize("axis", [1, -3])
def test_relayout_numpy_quantizes_per_channel(axis):
    x = ramp((2, 3, 4, 5), seed=3)
    s = np.array([0.1, 0.25, 0.5])
    z = np.array([0.0, -3.0, 7.0])
    y = strided.relayout(x, "NHWC", dtype=np.int8, scale=1 / s, shift=z, axis=axis)
    assert y.dtype == np.int8 and strided.layout_of(y).label == "NHWC"
    assert_converted_equal(y, affine(x, "int8", scale=1 / s, shift=z, axis=axis), x)
    back = strided.relayout(y, "NCHW", dtype=np.float32, scale=s, shift=-z * s, axis=axis)
    assert back.dtype == np.float32
    assert_converted_equal(back, affine(y, "float32", scale=s, shift=-z * s, axis=axis), y)


def test_relayout_numpy_affine_keeps_the_dtype_without_dtype():
    x = ramp((2, 3, 4, 5), seed=4)
    y = strided.relayout(x, "NHWC", scale=0.5, shift=1.0)
    assert y.dtype == np.float32
    assert_converted_equal(y, affine(x, "float32", scale=0.5, shift=1.0), x)
    i = ramp((2, 3, 4, 5), np.int16, seed=4)
    y = strided.relayout(i, "CHWN", scale=[2.0, 3.0, -1.5], axis=1)
    assert y.dtype == np.int16
    assert_converted_equal(y, affine(i, "int16", scale=[2.0, 3.0, -1.5], axis=1), i)


def test_relayout_refusals():
    x = ramp((2, 3, 4, 5), seed=5)
    with pytest.raises(TypeError):
        strided.relayout(x.astype(np.complex64), "NHWC", dtype=np.float32)
    with pytest.raises(TypeError):
        strided.relayout(x, "NHWC", dtype=np.bool_, scale=2.0)
    with pytest.raises(TypeError):
        strided.relayout(x, "NHWC", dtype=np.complex64, shift=1.0)
    with pytest.raises(ValueError, match="axis"):
        strided.relayout(x, "NHWC", dtype=np.int8, scale=[1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="scale"):
        strided.relayout(x, "NHWC", dtype=np.int8, scale=[1.0, 2.0], axis=1)
    with pytest.raises(ValueError, match="axis"):
        strided.relayout(x, "NHWC", dtype=np.int8, scale=[1.0, 2.0, 3.0], axis=4)


@needs_torch
@pytest.mark.parametrize("dst", ["bfloat16", "float16", "float64", "int8", "uint8", "int32"])
def test_relayout_torch_channels_last_with_dtype(dst):
    x = ramp((2, 3, 4, 5), seed=6, lo=0, hi=120)
    t = to_torch(x)
    y = strided.relayout(t, "NHWC", dtype=getattr(torch, dst))
    assert isinstance(y, torch.Tensor) and y.dtype == getattr(torch, dst)
    assert y.shape == t.shape and y.is_contiguous(memory_format=torch.channels_last)
    assert_converted_equal(to_numpy(y), cast(x, dst), x, f"torch NHWC {dst}")
    if dst in ("bfloat16", "float16", "float64"):              # torch's own cast agrees
        assert_converted_equal(to_numpy(y), to_numpy(t.to(getattr(torch, dst))), x)


@needs_torch
def test_relayout_torch_bfloat16_source_and_affine():
    x = ramp((2, 3, 4, 5), seed=7)
    t = to_torch(x).to(torch.bfloat16).contiguous(memory_format=torch.channels_last)
    xb = to_numpy(t)
    y = strided.relayout(t, "NCHW", dtype=torch.float32)
    assert y.dtype == torch.float32 and y.is_contiguous()
    assert_converted_equal(to_numpy(y), cast(xb, "float32"), xb)
    s = torch.tensor([0.5, 0.25, 2.0])
    q = strided.relayout(t, "NHWC", dtype=torch.int8, scale=s, shift=1.0, axis=1)
    assert q.dtype == torch.int8 and q.is_contiguous(memory_format=torch.channels_last)
    assert_converted_equal(to_numpy(q), affine(xb, "int8", scale=s.numpy(), shift=1.0, axis=1),
                           xb)


# ---- to_blocked / from_blocked -------------------------------------------------------------


def block_of(fmt):
    if fmt == "CHWN4":
        return 4
    if fmt.startswith("nChw"):
        return int(fmt[4:-1])
    return int(fmt[4:])


def blocked(q, fmt, pad=0):
    """The physical blocked array of a logical (N, C, H, W) array, padding channels ``pad``."""
    x = block_of(fmt)
    n, c, h, w = q.shape
    nb = -(-c // x)
    padded = np.full((n, nb * x, h, w), pad, q.dtype)
    padded[:, :c] = q
    five = padded.reshape(n, nb, x, h, w)
    if fmt == "CHWN4":
        return np.ascontiguousarray(five.transpose(1, 3, 4, 0, 2))
    return np.ascontiguousarray(five.transpose(0, 1, 3, 4, 2))


def unblocked(y, fmt, c):
    """The logical (N, C, H, W) array of a physical blocked array."""
    five = y.transpose(3, 0, 4, 1, 2) if fmt == "CHWN4" else y.transpose(0, 1, 4, 2, 3)
    n, nb, x, h, w = five.shape
    return np.ascontiguousarray(five.reshape(n, nb * x, h, w)[:, :c])


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("c", [3, 8, 33])
@pytest.mark.parametrize("dst", ["int8", "uint8"])
def test_to_blocked_quantizes_per_channel(fmt, c, dst):
    rng = np.random.default_rng(c)
    x = nhwc_view(ramp((2, c, 3, 5), seed=c, lo=-4, hi=4))
    s = rng.uniform(0.01, 0.1, c)
    z = rng.integers(-20, 20, c).astype(np.float64) + (128 if dst == "uint8" else 0)
    for kw in (dict(scale=1 / s, shift=z), dict(scale=1 / s), dict(shift=z),
               dict(scale=1 / 0.05, shift=3.0), dict(scale=(1 / s).tolist(), shift=7)):
        y = strided.to_blocked(x, fmt, dtype=np_dtype(dst), **kw)
        q = affine(x, dst, axis=1, **kw)
        assert isinstance(y, np.ndarray) and y.dtype == np_dtype(dst)
        assert_converted_equal(y, blocked(q, fmt, quantized_zero(dst, kw.get("shift"))), None,
                               f"{fmt} C={c} {dst} {list(kw)}")


def quantized_zero(dst, shift):
    """What an integer blocked result's padding channels hold (MegEngine's rule): x = 0
    quantized, saturate(rint(shift)) in float32 (the compute type of float32 sources); with a
    shift per channel, that value when every channel gives the same one, else 0."""
    if shift is None:
        return 0
    info = np.iinfo(dst)
    zeros = {int(np.clip(np.rint(np.float32(v)), info.min, info.max))
             for v in np.atleast_1d(np.asarray(shift, np.float64))}
    return zeros.pop() if len(zeros) == 1 else 0


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("c", [3, 8, 33])
def test_from_blocked_dequantizes_per_channel(fmt, c):
    rng = np.random.default_rng(c + 100)
    x = block_of(fmt)
    shape = ((-(-c // 4), 3, 5, 2, 4) if fmt == "CHWN4"
             else (2, -(-c // x), 3, 5, x))
    y = rng.integers(-128, 128, shape).astype(np.int8)          # padding lanes: garbage
    s = rng.uniform(0.01, 0.1, c)
    z = rng.integers(-20, 20, c).astype(np.float64)
    q = unblocked(y, fmt, c)
    for dst in ("float32", "float16", "bfloat16"):
        for kw in (dict(scale=s, shift=-z * s), dict(scale=s), dict(shift=-z),
                   dict(scale=0.5, shift=(-z).tolist())):
            out = strided.from_blocked(y, fmt, channels=c, dtype=np_dtype(dst), **kw)
            assert out.shape == q.shape and out.dtype == np_dtype(dst)
            assert_converted_equal(out, affine(q, dst, axis=1, **kw), q,
                                   f"{fmt} C={c} {dst} {list(kw)}")


@pytest.mark.parametrize("fmt", FORMATS)
def test_blocked_plain_dtype_conversion(fmt):
    x = nhwc_view(ramp((2, 5, 3, 4), seed=9, lo=-1000, hi=1000))
    for dst in ("float16", "bfloat16", "int8", "float64"):
        y = strided.to_blocked(x, fmt, dtype=np_dtype(dst))
        assert_converted_equal(y, blocked(cast(x, dst), fmt), None, f"{fmt} {dst}")
        back = strided.from_blocked(y, fmt, channels=5, dtype=np.float32)
        assert_converted_equal(back, cast(cast(x, dst), "float32"), None, f"{fmt} {dst} back")


def test_to_blocked_padding_is_the_quantized_zero_of_integers_and_zero_of_floats():
    x = np.zeros((1, 5, 1, 1), np.float32)
    y = strided.to_blocked(x, "NCHW4", dtype=np.int8, shift=9.0)
    assert y.ravel().tolist() == [9, 9, 9, 9, 9, 9, 9, 9]      # the padding dequantizes to 0
    y = strided.to_blocked(x, "NCHW4", dtype=np.int8, shift=[1, 2, 3, 4, 5])
    assert y.ravel().tolist() == [1, 2, 3, 4, 5, 0, 0, 0]      # no zero of its own: 0
    y = strided.to_blocked(x, "NCHW4", dtype=np.float32, scale=2.0, shift=[1, 2, 3, 4, 5])
    assert y.ravel().tolist() == [1, 2, 3, 4, 5, 0, 0, 0]
    assert y.view(np.uint32)[0, 1, 0, 0, 1:].tolist() == [0, 0, 0]     # +0.0


def test_blocked_refusals():
    x = ramp((2, 5, 3, 4), seed=10)
    with pytest.raises(ValueError, match="scale"):
        strided.to_blocked(x, "NCHW4", dtype=np.int8, scale=np.ones(8))   # padded C, not C
    with pytest.raises(ValueError, match="shift"):
        strided.to_blocked(x, "NCHW4", dtype=np.int8, shift=[1.0, 2.0])
    with pytest.raises(TypeError):
        strided.to_blocked(x, "NCHW4", dtype=np.bool_, scale=2.0)
    with pytest.raises(TypeError):
        strided.to_blocked(x.astype(np.complex64), "NCHW4", dtype=np.float32)
    y = strided.to_blocked(x, "NCHW4", dtype=np.int8)
    with pytest.raises(ValueError, match="scale"):
        strided.from_blocked(y, "NCHW4", channels=5, dtype=np.float32, scale=np.ones(4))
    with pytest.raises(TypeError):
        strided.from_blocked(y, "NCHW4", channels=5, dtype=np.complex64, scale=2.0)


@needs_torch
@pytest.mark.parametrize("fmt", FORMATS)
def test_blocked_torch_quantize_and_dequantize(fmt):
    c = 6
    x = ramp((2, c, 3, 4), seed=11, lo=-3, hi=3)
    t = to_torch(x).contiguous(memory_format=torch.channels_last)
    s = torch.linspace(0.02, 0.07, c, dtype=torch.float64)
    z = torch.arange(c, dtype=torch.float32) - 3
    y = strided.to_blocked(t, fmt, dtype=torch.int8, scale=1 / s, shift=z)
    assert isinstance(y, torch.Tensor) and y.dtype == torch.int8
    q = affine(x, "int8", scale=(1 / s).numpy(), shift=z.numpy(), axis=1)
    assert_converted_equal(to_numpy(y), blocked(q, fmt), None, fmt)
    back = strided.from_blocked(y, fmt, channels=c, dtype=torch.bfloat16, scale=s,
                                shift=-z * s.to(torch.float32))
    assert back.dtype == torch.bfloat16 and tuple(back.shape) == x.shape
    expected = affine(q, "bfloat16", scale=s.numpy(), shift=(-z * s.to(torch.float32)).numpy(),
                      axis=1)
    assert_converted_equal(to_numpy(back), expected, q, f"{fmt} back")


# ---- copyto across libraries ---------------------------------------------------------------

MIXED = [("float32", "bfloat16"), ("float64", "bfloat16"), ("bfloat16", "float32"),
         ("float32", "float16"), ("int64", "float32"), ("float32", "int8"), ("uint8", "float64"),
         ("bool", "float32"), ("complex64", "complex128"), ("bfloat16", "float16")]


@needs_torch
@pytest.mark.parametrize("src,dst", MIXED)
def test_copyto_numpy_into_torch_and_back(src, dst):
    x = ramp((6, 4), np_dtype(src), seed=12, lo=-100, hi=100)[::-1, ::-1]  # negative strides
    # numpy -> torch: into the middle of a bigger tensor (a transposed, strided view)
    base = torch.full((8, 10), 3, dtype=getattr(torch, dst))
    before = to_numpy(base)
    view = base[1:5, 2:8].t()                                    # (6, 4), strides (1, 10)
    strided.copyto(view, x, casting="unsafe")
    after = to_numpy(base)
    assert_converted_equal(after[1:5, 2:8].T, cast(np.array(x), dst), np.array(x),
                           f"numpy {src} -> torch {dst}")
    outside = np.ones(after.shape, bool)
    outside[1:5, 2:8] = False
    assert after[outside].tobytes() == before[outside].tobytes()
    # torch -> numpy: a torch source (transposed) into a strided numpy destination
    ts = to_torch(np.ascontiguousarray(np.array(x).T)).t()
    out = np.zeros((12, 8), np_dtype(dst))
    strided.copyto(out[::2, 1::2], ts, casting="unsafe")
    assert_converted_equal(out[::2, 1::2], cast(np.array(x), dst), np.array(x),
                           f"torch {src} -> numpy {dst}")
    untouched = np.ones(out.shape, bool)
    untouched[::2, 1::2] = False
    assert not np.ascontiguousarray(out[untouched]).view(np.uint8).any()


@needs_torch
def test_copyto_torch_affine_with_torch_vectors():
    x = ramp((2, 3, 4), seed=13)
    t = to_torch(x)
    out = torch.zeros(2, 3, 4, dtype=torch.int8)
    s = torch.tensor([10.0, 20.0, 40.0])
    strided.copyto(out, t, casting="unsafe", scale=s, shift=torch.tensor([0.5, 0.0, -1.0]),
                   axis=1)
    assert_converted_equal(to_numpy(out), affine(x, "int8", scale=s.numpy(),
                                                 shift=[0.5, 0.0, -1.0], axis=1), x)
    # a numpy destination, a torch source, numpy vectors along the last axis
    out = np.zeros((2, 3, 4), np.float16)
    strided.copyto(out, t, scale=np.arange(4.0), shift=np.float32(0.25), axis=-1)
    assert_converted_equal(out, affine(x, "float16", scale=np.arange(4.0), shift=0.25,
                                       axis=-1), x)


@needs_torch
def test_copyto_torch_refusals_write_nothing():
    dst = torch.full((4,), 5.0)
    for kw, src, error in [
        (dict(casting="unsafe"), torch.ones(4, dtype=torch.complex64), TypeError),
        ({}, torch.ones(4, dtype=torch.float64), None),                       # same_kind: ok
        ({}, np.ones(4, np.int64), None),                                     # same_kind
        (dict(casting="safe"), np.ones(4, np.float64), TypeError),
        (dict(scale=[1.0, 2.0]), torch.ones(4), ValueError),
        (dict(scale=torch.ones(2, 2), axis=0), torch.ones(4), ValueError),
    ]:
        dst.fill_(5.0)
        if error is None:
            strided.copyto(dst, src, **kw)
            assert dst.tolist() == [1.0] * 4
            continue
        with pytest.raises(error):
            strided.copyto(dst, src, **kw)
        assert dst.tolist() == [5.0] * 4, kw
    b = torch.zeros(4, dtype=torch.bool)
    with pytest.raises(TypeError):
        strided.copyto(b, torch.ones(4), casting="unsafe", scale=2.0)
    assert not b.any()


def test_copyto_numpy_scalar_and_0d_sources_convert():
    out = np.zeros((), np.int8)
    strided.copyto(out, np.float64(-3.7), casting="unsafe")
    assert out == -3
    strided.copyto(out, np.array(2.5, np.float32), casting="unsafe", scale=1.0)
    assert out == 2
    bf = np.zeros(3, BF16)
    strided.copyto(bf, np.broadcast_to(np.float32(1 + 2**-8), (3,)))
    assert bf.view(np.uint16).tolist() == [0x3F80] * 3                       # tie to even
    assert_converted_equal(bf, convert(np.full(3, 1 + 2**-8, np.float32), "bfloat16"))


# ---- torch's own path (tensors off the CPU) ------------------------------------------------


def cuda_available():
    return torch is not None and torch.cuda.is_available()


@pytest.fixture(params=["forced", "cuda"])
def torch_path(request, monkeypatch):
    """"forced": the path of tensors off the CPU (torch converts) run on CPU tensors by
    replacing its predicate; "cuda": the real thing, where there is a GPU. Yields the device."""
    if torch is None:
        pytest.skip("torch is not installed")
    if request.param == "cuda":
        if not cuda_available():
            pytest.skip("no CUDA device for torch")
        return "cuda"
    from strided.interop import _torch as torch_adapter
    monkeypatch.setattr(torch_adapter, "copies_itself", lambda dst, src: True)
    return "cpu"


TORCH_AFFINES = [dict(scale=2.0), dict(shift=-0.5), dict(scale=1 / 127, shift=3.0),
                 dict(scale=np.inf), dict(scale=-1.5, shift=np.float32(0.25))]


@pytest.mark.parametrize("src", TYPES)
def test_torch_path_converts_like_the_oracle(src, torch_path):
    """Every pair on the special values of the source, plain and affine, through the path
    where torch converts: the same values as the host engine's contract."""
    x = special_values(src)
    t = to_torch(x).to(torch_path)
    strided_t = to_torch(np.ascontiguousarray(np.stack([x, x[::-1]]))).to(torch_path).t()
    sx = np.stack([x, x[::-1]]).T
    for dst in TYPES:
        out = torch.zeros(x.size, dtype=getattr(torch, dst), device=torch_path)
        if kind(src) == "c" and kind(dst) != "c":
            with pytest.raises(TypeError):
                strided.copyto(out, t, casting="unsafe")
            assert not out.cpu().to(torch.float64).any() if dst != "bool" else not out.any()
            continue
        strided.copyto(out, t, casting="unsafe")
        assert_converted_equal(to_numpy(out), cast(x, dst), x, f"{src} -> {dst} {torch_path}")
        out2 = torch.zeros(2, x.size, dtype=getattr(torch, dst), device=torch_path).t()
        strided.copyto(out2, strided_t, casting="unsafe")
        assert_converted_equal(to_numpy(out2), cast(sx, dst), sx, f"{src} -> {dst} strided")
        if "c" in (kind(src), kind(dst)) or dst == "bool":
            continue
        for kw in TORCH_AFFINES:
            strided.copyto(out, t, casting="unsafe", **kw)
            assert_converted_equal(to_numpy(out), affine(x, dst, **kw), x,
                                   f"{src} -> {dst} {kw} {torch_path}")
        vec = torch.linspace(-2, 2, x.size, dtype=torch.float64)
        strided.copyto(out2, strided_t, casting="unsafe", scale=vec, shift=1.0, axis=0)
        assert_converted_equal(to_numpy(out2), affine(sx, dst, scale=vec.numpy(), shift=1.0,
                                                      axis=0), sx, f"{src} -> {dst} vector")


def test_torch_path_relayout_and_blocked(torch_path):
    x = ramp((2, 6, 3, 4), seed=14, lo=-3, hi=3)
    t = to_torch(x).to(torch_path)
    y = strided.relayout(t, "NHWC", dtype=torch.bfloat16)
    assert y.device.type == torch_path and y.dtype == torch.bfloat16
    assert y.is_contiguous(memory_format=torch.channels_last)
    assert_converted_equal(to_numpy(y), cast(x, "bfloat16"), x)
    s = torch.linspace(0.02, 0.07, 6, dtype=torch.float64)
    q = strided.to_blocked(t, "NCHW4", dtype=torch.int8, scale=1 / s, shift=5.0)
    expected_q = affine(x, "int8", scale=(1 / s).numpy(), shift=5.0, axis=1)
    assert_converted_equal(to_numpy(q), blocked(expected_q, "NCHW4", 5), None, "to_blocked")
    back = strided.from_blocked(q, "NCHW4", channels=6, dtype=torch.float32, scale=s,
                                shift=-5 * s)
    assert_converted_equal(to_numpy(back), affine(expected_q, "float32", scale=s.numpy(),
                                                  shift=(-5 * s).numpy(), axis=1), expected_q)


# ---- DLPack --------------------------------------------------------------------------------


def test_dlpack_sources_and_destinations_convert():
    dp = pytest.importorskip("dlpack_producer")
    x = special_values("bfloat16")
    src = dp.Producer(x.view(np.uint16).copy(), (x.size,), None, dtype=(dp.kDLBfloat, 16, 1))
    out = np.zeros(x.size, np.float32)
    strided.copyto(out, src)
    assert_converted_equal(out, cast(x, "float32"), x, "DLPack bfloat16 -> float32")
    f = special_values("float64")
    buf = np.full(f.size + 8, 0x5A5A, np.uint16)
    dst = dp.Producer(buf, (f.size,), (-1,), byte_offset=2 * (f.size + 3),
                      dtype=(dp.kDLBfloat, 16, 1))                    # reversed, in the middle
    strided.copyto(dst, f, casting="unsafe")
    assert_converted_equal(buf[4:f.size + 4][::-1].view(BF16), cast(f, "bfloat16"), f,
                           "float64 -> DLPack bfloat16")
    assert buf[:4].tolist() == [0x5A5A] * 4 and buf[f.size + 4:].tolist() == [0x5A5A] * 4
    q = dp.Producer(np.arange(-6, 6, dtype=np.int8), (3, 4), (1, 3))   # column-major int8
    out = np.zeros((3, 4), np.float16)
    strided.copyto(out, q, scale=0.5, shift=[1, 2, 3, 4], axis=1)
    vals = np.arange(-6, 6, dtype=np.int8).reshape(4, 3).T
    assert_converted_equal(out, affine(vals, "float16", scale=0.5, shift=[1, 2, 3, 4], axis=1),
                           vals)
