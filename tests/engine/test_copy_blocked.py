"""Blocked channel formats: ``strided.to_blocked`` and ``strided.from_blocked``.

The oracle is plain numpy, written from the definition (DESIGN.md section 1): NCHWx stores a
logical (N, C, H, W) tensor as the packed array (N, ceil(C/x), H, W, x), channels zero-padded to a
multiple of x (``np.pad``, then reshape/transpose); CHWN4 stores (ceil(C/4), H, W, N, 4). Every
format (NCHW4/8/16/32/64, odd blocks, oneDNN's nChw8c/nChw16c, CHWN4) is checked with C a multiple
of the block and not (C = 1, 3, 5, 17, 33), N/H/W of 1 and 0, strided inputs (NHWC, sliced,
reversed, broadcast), several dtypes (odd itemsizes too), numpy and torch; padded channels must be
exactly zero even when the allocator hands back dirty memory; from_blocked must ignore whatever
the padding holds.
"""

from __future__ import annotations

import importlib.util
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as hst
from strategies import source_strides
from test_copy_engine import placed, random_bytes, view_over

import strided

HAVE_TORCH = importlib.util.find_spec("torch") is not None
if HAVE_TORCH:
    import torch

needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="torch is not installed")

FORMATS = ["NCHW4", "NCHW8", "NCHW16", "NCHW32", "NCHW64", "nChw8c", "nChw16c", "CHWN4"]
ODD_FORMATS = ["NCHW1", "NCHW2", "NCHW3", "NCHW5", "NCHW7", "NCHW24", "nChw4c"]
NHW = [(2, 3, 5), (1, 1, 1), (3, 1, 2), (0, 2, 3), (2, 0, 3), (2, 3, 0)]

# ---- oracle ---------------------------------------------------------------------------------


def block_of(fmt):
    """(block, chwn) of a format name, parsed here independently of strided."""
    if fmt == "CHWN4":
        return 4, True
    m = re.fullmatch(r"NCHW(\d+)|nChw(\d+)c", fmt)
    return int(m.group(1) or m.group(2)), False


def ref_to_blocked(x, fmt):
    """The blocked physical array of a numpy (N, C, H, W) array."""
    block, chwn = block_of(fmt)
    n, c, h, w = x.shape
    cb = -(-c // block)
    if x.dtype.kind in "biufc":
        padded = np.pad(x, ((0, 0), (0, cb * block - c), (0, 0), (0, 0)))
    else:                                               # np.pad has no zero for void/bytes
        padded = np.zeros((n, cb * block, h, w), x.dtype)
        padded[:, :c] = x
    r = padded.reshape(n, cb, block, h, w)
    return np.ascontiguousarray(r.transpose(1, 3, 4, 0, 2) if chwn else r.transpose(0, 1, 3, 4, 2))


def ref_from_blocked(y, fmt, channels):
    block, chwn = block_of(fmt)
    r = y.transpose(3, 0, 4, 1, 2) if chwn else y.transpose(0, 1, 4, 2, 3)   # (N, Cb, x, H, W)
    n, cb, _, h, w = r.shape
    return r.reshape(n, cb * block, h, w)[:, :channels]


def logical(n, c, h, w, dtype="<f4", seed=0):
    """A C-contiguous (N, C, H, W) array of distinct nonzero values (random bytes for void)."""
    dtype = np.dtype(dtype)
    size = n * c * h * w
    if dtype.kind in "VS":
        raw = random_bytes(size * dtype.itemsize, seed) | 1            # no all-zero element
        return np.frombuffer(raw.tobytes(), dtype).reshape(n, c, h, w).copy()
    if dtype.kind == "b":
        return np.ones((n, c, h, w), bool)
    v = np.arange(1, size + 1) % (251 if dtype.itemsize == 1 else 2**15 - 1)
    if dtype.kind == "c":
        return (v + 1j * (v + 1)).astype(dtype).reshape(n, c, h, w)
    return (v % 250 + 1 if dtype.itemsize == 1 else v).astype(dtype).reshape(n, c, h, w)


def bitwise_equal(a, b):
    return (a.shape == b.shape and a.dtype == b.dtype
            and np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes())


def dirty_heap(nbytes):
    """Allocate, fill with 0xFF and free blocks of about nbytes: the next allocation of that
    size likely gets this dirty memory back, so padding that is not written shows up."""
    for size in {max(nbytes, 1), max(nbytes, 1) + 64}:
        junk = np.full(size, 0xFF, np.uint8)
        del junk


def padding_of(y, fmt, c):
    """The padded channel slots of a blocked array (empty when C is a multiple of the block)."""
    block, chwn = block_of(fmt)
    if c % block == 0 or y.size == 0:
        return y[..., :0]
    return y[-1, :, :, :, c % block:] if chwn else y[:, -1, :, :, c % block:]


def check_to_blocked(x, fmt, c=None):
    c = x.shape[1] if c is None else c
    expected = ref_to_blocked(np.asarray(x), fmt)
    dirty_heap(expected.nbytes)
    y = strided.to_blocked(x, fmt)
    assert type(y) is np.ndarray
    assert y.shape == expected.shape and y.dtype == x.dtype
    assert y.flags.c_contiguous
    pad = np.ascontiguousarray(padding_of(y, fmt, c))
    assert not pad.view(np.uint8).any(), "padding channels are not zero"
    assert bitwise_equal(y, expected), fmt
    return y


# ---- round trips ----------------------------------------------------------------------------


def channel_counts(fmt):
    block, _ = block_of(fmt)
    return sorted({1, 3, 5, 17, 33, block, 2 * block})


@pytest.mark.parametrize(("fmt", "c"), [(f, c) for f in FORMATS for c in channel_counts(f)])
def test_round_trip_numpy(fmt, c):
    for n, h, w in NHW:
        x = logical(n, c, h, w)
        y = check_to_blocked(x, fmt)
        back = strided.from_blocked(y, fmt, channels=c)
        assert type(back) is np.ndarray
        assert back.shape == x.shape and back.dtype == x.dtype
        np.testing.assert_array_equal(back, x)


@pytest.mark.parametrize("fmt", ODD_FORMATS)
@pytest.mark.parametrize("c", [1, 2, 3, 5, 6, 17, 33])
def test_round_trip_odd_blocks(fmt, c):
    x = logical(2, c, 3, 4, "<i4")
    y = check_to_blocked(x, fmt)
    np.testing.assert_array_equal(strided.from_blocked(y, fmt, channels=c), x)


@pytest.mark.parametrize("dtype", ["u1", "?", "<i2", "<f2", "<f8", "<c16", "V3", "S3", "V6",
                                   "V12", ">i4"])
@pytest.mark.parametrize("fmt", ["NCHW4", "NCHW32", "nChw16c", "CHWN4"])
def test_round_trip_dtypes(fmt, dtype):
    for c in (3, 4, 17, 32):
        x = logical(2, c, 3, 5, dtype, seed=c)
        y = check_to_blocked(x, fmt)
        back = strided.from_blocked(y, fmt, channels=c)
        assert bitwise_equal(back, x)


def test_channels_zero():
    x = np.zeros((2, 0, 3, 4), np.float32)
    y = strided.to_blocked(x, "NCHW4")
    assert y.shape == (2, 0, 3, 4, 4)
    assert strided.from_blocked(y, "NCHW4", channels=0).shape == (2, 0, 3, 4)
    assert strided.to_blocked(x, "CHWN4").shape == (0, 3, 4, 2, 4)


# ---- strided inputs -------------------------------------------------------------------------


def strided_inputs(x):
    """The same logical values as x, laid out in other ways."""
    yield "nhwc", np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    yield "chwn", np.ascontiguousarray(x.transpose(1, 2, 3, 0)).transpose(3, 0, 1, 2)
    big = np.zeros((x.shape[0], x.shape[1], 2 * x.shape[2] + 1, 3 * x.shape[3] + 2), x.dtype)
    big[:, :, 1::2, 2::3] = x
    yield "sliced", big[:, :, 1::2, 2::3]
    rev = np.ascontiguousarray(x[:, ::-1, :, ::-1])
    yield "reversed", rev[:, ::-1, :, ::-1]
    yield "fortran", np.asfortranarray(x)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("c", [3, 8, 17])
def test_to_blocked_strided_inputs(fmt, c):
    x = logical(2, c, 5, 7, "<f4")
    expected = ref_to_blocked(x, fmt)
    for name, v in strided_inputs(x):
        np.testing.assert_array_equal(v, x)
        y = strided.to_blocked(v, fmt)
        assert bitwise_equal(y, expected), name
        np.testing.assert_array_equal(strided.from_blocked(y, fmt, channels=c), x)
    ro = x.copy()
    ro.flags.writeable = False
    assert bitwise_equal(strided.to_blocked(ro, fmt), expected)


@pytest.mark.parametrize("fmt", ["NCHW4", "nChw8c", "CHWN4"])
def test_to_blocked_broadcast_input(fmt):
    row = logical(1, 5, 1, 7, "u1")
    x = np.broadcast_to(row, (3, 5, 4, 7))
    y = strided.to_blocked(x, fmt)
    assert bitwise_equal(y, ref_to_blocked(np.ascontiguousarray(x), fmt))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("c", [3, 16])
def test_from_blocked_ignores_padding_and_takes_strided_inputs(fmt, c):
    block, _ = block_of(fmt)
    x = logical(2, c, 3, 4, "<i8")
    y = ref_to_blocked(x, fmt)
    dirty = y.copy()
    pad = padding_of(dirty, fmt, c)
    pad[...] = -7                                         # garbage where padding should be
    np.testing.assert_array_equal(strided.from_blocked(dirty, fmt, channels=c), x)
    big = np.full((*y.shape[:-1], block + 3), -9, y.dtype)
    big[..., 1:block + 1] = y
    np.testing.assert_array_equal(strided.from_blocked(big[..., 1:block + 1], fmt, channels=c), x)
    rev = np.ascontiguousarray(y[:, ::-1, ::-1])
    np.testing.assert_array_equal(strided.from_blocked(rev[:, ::-1, ::-1], fmt, channels=c), x)
    ro = y.copy()
    ro.flags.writeable = False
    np.testing.assert_array_equal(strided.from_blocked(ro, fmt, channels=c), x)


@pytest.mark.parametrize(("fmt", "n", "c", "h", "w", "dtype"), [
    ("NCHW32", 2, 67, 65, 63, "u1"),
    ("NCHW4", 2, 3, 257, 259, "u1"),
    ("NCHW4", 2, 4, 255, 253, "<f4"),
    ("nChw16c", 2, 33, 31, 29, "<f4"),
    ("NCHW64", 1, 130, 33, 35, "<f2"),
    ("CHWN4", 3, 5, 101, 99, "<f4"),
    ("nChw8c", 2, 13, 61, 67, "V3"),
])
def test_large_blocked_round_trips(fmt, n, c, h, w, dtype):
    x = logical(n, c, h, w, dtype, seed=c)
    y = check_to_blocked(x, fmt)
    assert bitwise_equal(strided.from_blocked(y, fmt, channels=c), x)
    nhwc = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    assert bitwise_equal(strided.to_blocked(nhwc, fmt), y)


@pytest.mark.parametrize("fmt", ["NCHW4", "NCHW8", "NCHW32", "nChw16c"])
def test_blocked_buffer_read_through_the_5d_view(fmt):
    """DESIGN section 1: with C % x == 0 the buffer is the strided view (N, C/x, x, H, W)."""
    block, _ = block_of(fmt)
    x = logical(2, 2 * block, 3, 5, "<f4")
    y = strided.to_blocked(x, fmt)
    v = strided.view(y.reshape(-1), strided.Layout.blocked_view(x.shape, fmt, itemsize=4))
    np.testing.assert_array_equal(v, x.reshape(2, 2, block, 3, 5))


@given(data=hst.data())
def test_blocked_random(data):
    fmt = data.draw(hst.sampled_from(FORMATS + ODD_FORMATS))
    n, c, h, w = (data.draw(hst.integers(0, 3)), data.draw(hst.integers(1, 40)),
                  data.draw(hst.integers(0, 4)), data.draw(hst.integers(0, 4)))
    dtype = np.dtype(data.draw(hst.sampled_from(["u1", "<i2", "<f4", "V3", "<c16"])))
    strides = data.draw(source_strides((n, c, h, w)))
    k = dtype.itemsize
    seed = data.draw(hst.integers(0, 99))
    buf, first = placed((n, c, h, w), strides, k, fill=lambda m: random_bytes(m, seed))
    x = view_over(buf, first, (n, c, h, w), strides, k, dtype)
    y = check_to_blocked(x, fmt, c)
    assert bitwise_equal(strided.from_blocked(y, fmt, channels=c), np.ascontiguousarray(x))


# ---- torch ---------------------------------------------------------------------------------


def as_np(u):
    """A torch tensor's values as numpy (bfloat16, which numpy lacks, as its int16 bits)."""
    return u.view(torch.int16).numpy() if u.dtype == torch.bfloat16 else u.numpy()


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "uint8", "bfloat16", "int64", "complex64"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_blocked_torch(fmt, dtype):
    tdtype = getattr(torch, dtype)
    for c in (3, 16, 17):
        t = (torch.arange(2 * c * 5 * 7) % 97 + 1).to(tdtype).view(2, c, 5, 7)
        expected = ref_to_blocked(as_np(t), fmt)
        for x in (t, t.contiguous(memory_format=torch.channels_last), t[:, :, 1:, ::2]):
            exp = expected if x.shape == t.shape else ref_to_blocked(
                as_np(x.contiguous()), fmt)
            y = strided.to_blocked(x, fmt)
            assert isinstance(y, torch.Tensor) and y.dtype == tdtype and y.device == x.device
            assert y.is_contiguous()
            assert bitwise_equal(as_np(y), exp)
            back = strided.from_blocked(y, fmt, channels=c)
            assert isinstance(back, torch.Tensor) and back.dtype == tdtype
            assert torch.equal(back, x)


@needs_torch
def test_blocked_torch_lazy_conj_input():
    z = (torch.arange(2 * 5 * 3 * 4) * (1 + 2j)).to(torch.complex64).view(2, 5, 3, 4).conj()
    assert z.is_conj()
    y = strided.to_blocked(z, "NCHW4")
    assert not y.is_conj()
    assert bitwise_equal(y.numpy(), ref_to_blocked(z.resolve_conj().numpy(), "NCHW4"))
    back = strided.from_blocked(y.conj(), "NCHW4", channels=5)      # a conj blocked input
    assert torch.equal(back.resolve_conj(), z.resolve_conj().conj().resolve_conj())


@pytest.mark.skipif(importlib.util.find_spec("array_api_strict") is None,
                    reason="array-api-strict is not installed")
def test_blocked_array_api_strict():
    import array_api_strict as xp

    x = logical(2, 5, 3, 4, "<f8")
    y = strided.to_blocked(xp.asarray(x), "nChw8c")
    assert type(y) is type(xp.asarray(x))
    assert bitwise_equal(np.from_dlpack(y), ref_to_blocked(x, "nChw8c"))
    back = strided.from_blocked(y, "nChw8c", channels=5)
    assert type(back) is type(y)
    np.testing.assert_array_equal(np.from_dlpack(back), x)


@pytest.mark.skipif(not (HAVE_TORCH and torch.cuda.is_available()), reason="no CUDA device")
def test_blocked_torch_cuda():
    t = torch.arange(2 * 5 * 3 * 4, dtype=torch.float32, device="cuda").view(2, 5, 3, 4)
    y = strided.to_blocked(t, "NCHW4")
    assert y.is_cuda
    assert bitwise_equal(y.cpu().numpy(), ref_to_blocked(t.cpu().numpy(), "NCHW4"))
    assert torch.equal(strided.from_blocked(y, "NCHW4", channels=5), t)


# ---- errors --------------------------------------------------------------------------------

X = np.zeros((2, 5, 3, 4), np.float32)


@pytest.mark.parametrize(("x", "fmt", "error"), [
    (np.zeros((5, 3, 4), np.float32), "NCHW4", ValueError),
    (np.zeros((2, 5, 3, 4, 1), np.float32), "NCHW4", ValueError),
    (np.zeros((), np.float32), "NCHW4", ValueError),
    (X, "NCHW", ValueError), (X, "NCHW0", ValueError), (X, "NHWC4", ValueError),
    (X, "CHWN8", ValueError), (X, "nchw4", ValueError), (X, "nChw8", ValueError),
    (X, "", ValueError), (X, "NCHW-4", ValueError),
    (X, 4, TypeError), (X, None, TypeError), (X, b"NCHW4", TypeError),
    ([[[[1.0]]]], "NCHW4", TypeError), (None, "NCHW4", TypeError),
    (np.zeros((1, 1, 1, 1), object), "NCHW4", TypeError),
])
def test_to_blocked_errors(x, fmt, error):
    with pytest.raises(error):
        strided.to_blocked(x, fmt)


Y4 = ref_to_blocked(logical(2, 5, 3, 4), "NCHW4")           # (2, 2, 3, 4, 4)
YC = ref_to_blocked(logical(2, 5, 3, 4), "CHWN4")           # (2, 3, 4, 2, 4)


@pytest.mark.parametrize(("y", "fmt", "kwargs", "error"), [
    (Y4, "NCHW4", {"channels": 9}, ValueError),            # more than the buffer holds
    (Y4, "NCHW4", {"channels": 4}, ValueError),            # a whole block of padding
    (Y4, "NCHW4", {"channels": -1}, ValueError),
    (Y4, "NCHW4", {"channels": 1.5}, TypeError),
    (Y4, "NCHW4", {"channels": "5"}, TypeError),
    (Y4, "NCHW4", {"channels": None}, TypeError),
    (Y4, "NCHW4", {}, TypeError),                          # channels is required
    (Y4, "NCHW8", {"channels": 5}, ValueError),            # last dim is not the block
    (Y4, "CHWN4", {"channels": 13}, ValueError),
    (YC, "CHWN4", {"channels": 4}, ValueError),
    (YC, "CHWN4", {"channels": 13}, ValueError),
    (Y4[0], "NCHW4", {"channels": 5}, ValueError),         # rank 4
    (Y4[..., None], "NCHW4", {"channels": 5}, ValueError),  # rank 6
    (Y4, "NCHW", {"channels": 5}, ValueError),
    (Y4, 4, {"channels": 5}, TypeError),
    ([1, 2], "NCHW4", {"channels": 1}, TypeError),
])
def test_from_blocked_errors(y, fmt, kwargs, error):
    with pytest.raises(error):
        strided.from_blocked(y, fmt, **kwargs)


def test_from_blocked_channels_is_keyword_only():
    with pytest.raises(TypeError):
        strided.from_blocked(Y4, "NCHW4", 5)
