"""pack_bits / unpack_bits against independent oracles.

The oracles share no code with strided.bits: a brute-force Python packer written from the
contract (byte k = element 2k | element 2k+1 << 4, one element at a time), ONNX's rule
``pack(x, y) = (y << 4) | (x & 0x0F)``, XLA's host packer (element 2k in the high nibble, over
the flattened buffer) and ml_dtypes' int4/uint4 arrays (one value per byte, their own casts).
"""

from __future__ import annotations

import itertools
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st_h

import strided as st

ml_dtypes = pytest.importorskip("ml_dtypes")

RANGES = {True: (-8, 7), False: (0, 15)}


# ---- oracles -----------------------------------------------------------------------------------

def brute_pack_1d(values, order="low_first"):
    """The contract, element by element: a list of byte values."""
    out = [0] * ((len(values) + 1) // 2)
    for i, v in enumerate(values):
        nibble = int(v) & 0xF
        shift = 4 * (i % 2) if order == "low_first" else 4 * (1 - i % 2)
        out[i // 2] |= nibble << shift
    return out


def brute_pack(x, axis, order="low_first"):
    """The brute-force packer applied to every line of x along axis (index by index)."""
    moved = np.moveaxis(np.asarray(x), axis, -1)
    n = moved.shape[-1]
    out = np.zeros((*moved.shape[:-1], (n + 1) // 2), dtype=np.uint8)
    for index in itertools.product(*map(range, moved.shape[:-1])):
        line = [int(moved[(*index, i)]) for i in range(n)]
        for k, b in enumerate(brute_pack_1d(line, order)):
            out[(*index, k)] = b
    return np.moveaxis(out, -1, axis)


def brute_unpack_1d(data, count, signed, order="low_first"):
    values = []
    for i in range(count):
        byte = int(data[i // 2])
        shift = 4 * (i % 2) if order == "low_first" else 4 * (1 - i % 2)
        nibble = (byte >> shift) & 0xF
        values.append(nibble - 16 if signed and nibble >= 8 else nibble)
    return values


def onnx_pack(x, y):
    """ONNX's int4 packing of a pair (docs/docsgen/source/technical/int4.md)."""
    return ((y << 4) | (x & 0x0F)) & 0xFF


def xla_pack(values):
    """XLA's host packer (xla/util.h PackIntN<4>): element 2k in the high nibble, over the
    flattened input; an odd tail's element in the high nibble, the low one 0."""
    out = []
    for k in range(0, len(values), 2):
        byte = (int(values[k]) & 0xF) << 4
        if k + 1 < len(values):
            byte |= int(values[k + 1]) & 0xF
        out.append(byte)
    return out


# ---- strategies --------------------------------------------------------------------------------

@st_h.composite
def strided_arrays(draw, dtype=np.int8, signed=True, max_rank=4):
    """An integer array of 4-bit values, shape with 0/1/odd sizes, as a view with any strides
    (sliced with steps, some negative, some axes transposed) of a bigger array."""
    rank = draw(st_h.integers(1, max_rank))
    sizes = draw(st_h.lists(st_h.integers(0, 7), min_size=rank, max_size=rank))
    steps = draw(st_h.lists(st_h.sampled_from([1, 1, 2, 3, -1, -2]), min_size=rank,
                            max_size=rank))
    lo, hi = RANGES[signed]
    base_shape = [max(1, n * abs(s)) + draw(st_h.integers(0, 2)) for n, s in zip(sizes, steps)]
    seed = draw(st_h.integers(0, 2**32 - 1))
    base = np.random.default_rng(seed).integers(lo, hi + 1, size=base_shape).astype(dtype)
    key = []
    for n, s in zip(sizes, steps):
        if s > 0:
            key.append(slice(0, n * s, s))
        else:
            start = base_shape[len(key)] - 1
            stop = start + n * s
            key.append(slice(start, stop if stop >= 0 else None, s))
    x = base[tuple(key)]
    assert x.shape == tuple(sizes), (x.shape, sizes, steps, base_shape)
    if rank > 1 and draw(st_h.booleans()):
        x = np.transpose(x, draw(st_h.permutations(range(rank))))
    return x


# ---- the contract ------------------------------------------------------------------------------

def test_contract_by_hand():
    x = np.array([1, 2, 3, 4, 5], dtype=np.uint8)
    assert st.pack_bits(x).tolist() == [0x21, 0x43, 0x05]
    assert st.pack_bits(x, order="high_first").tolist() == [0x12, 0x34, 0x50]
    s = np.array([-1, -8, 7, 0], dtype=np.int8)
    assert st.pack_bits(s).tolist() == [0x8F, 0x07]


@given(strided_arrays(), st_h.data(), st_h.sampled_from(["low_first", "high_first"]))
def test_pack_matches_brute_force(x, data, order):
    axis = data.draw(st_h.integers(-x.ndim, x.ndim - 1))
    got = st.pack_bits(x, axis=axis, order=order)
    want = brute_pack(x, axis, order)
    assert got.dtype == np.uint8 and got.flags.c_contiguous
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@given(strided_arrays(dtype=np.uint8, signed=False), st_h.data(),
       st_h.sampled_from(["low_first", "high_first"]))
def test_unsigned_round_trip(x, data, order):
    axis = data.draw(st_h.integers(-x.ndim, x.ndim - 1))
    p = st.pack_bits(x, axis=axis, order=order)
    np.testing.assert_array_equal(p, brute_pack(x, axis, order))
    back = st.unpack_bits(p, axis=axis, order=order, dtype=np.uint8, count=x.shape[axis])
    assert back.dtype == np.uint8 and back.flags.c_contiguous
    np.testing.assert_array_equal(back, x)


@given(strided_arrays(), st_h.data(), st_h.sampled_from(["low_first", "high_first"]))
def test_signed_round_trip(x, data, order):
    axis = data.draw(st_h.integers(-x.ndim, x.ndim - 1))
    p = st.pack_bits(x, axis=axis, order=order)
    back = st.unpack_bits(p, axis=axis, order=order, count=x.shape[axis])
    assert back.dtype == np.int8
    np.testing.assert_array_equal(back, x)


@given(st_h.lists(st_h.integers(0, 255), min_size=0, max_size=40), st_h.booleans(),
       st_h.sampled_from(["low_first", "high_first"]), st_h.integers(-1, 4), st_h.booleans())
def test_unpack_matches_brute_force(raw, signed, order, step, odd):
    step = step or 1
    base = np.array(raw, dtype=np.uint8)
    p = base[::step]
    count = 2 * len(p) - (1 if odd and len(p) else 0)
    got = st.unpack_bits(p, order=order, signed=signed, count=count)
    assert got.dtype == (np.int8 if signed else np.uint8)
    assert got.tolist() == brute_unpack_1d(p, count, signed, order)


def test_onnx_rule():
    rng = np.random.default_rng(0)
    for signed in (True, False):
        lo, hi = RANGES[signed]
        x = rng.integers(lo, hi + 1, size=(5, 64)).astype(np.int8 if signed else np.uint8)
        want = [[onnx_pack(int(a), int(b)) for a, b in zip(row[0::2], row[1::2])] for row in x]
        assert st.pack_bits(x).tolist() == want


def test_xla_high_first():
    rng = np.random.default_rng(1)
    for n in (0, 1, 2, 7, 64, 65):
        x = rng.integers(-8, 8, size=n).astype(np.int8)
        assert st.pack_bits(x, order="high_first").tolist() == xla_pack(x.tolist())
    # rows of even length: XLA's flattened packing is the per-row packing
    x = rng.integers(-8, 8, size=(3, 10)).astype(np.int8)
    assert st.pack_bits(x, order="high_first").ravel().tolist() == xla_pack(x.ravel().tolist())


# ---- ml_dtypes ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["int4", "uint4"])
def test_ml_dtypes_round_trip(name):
    signed = name == "int4"
    lo, hi = RANGES[signed]
    dtype = np.dtype(getattr(ml_dtypes, name))
    values = np.arange(lo, hi + 1).repeat(3)[:47]          # odd length, every value
    x = values.astype(dtype)
    p = st.pack_bits(x)
    assert p.tolist() == brute_pack_1d(values.tolist())
    back = st.unpack_bits(p, dtype=name, count=len(values))
    assert back.dtype == dtype
    np.testing.assert_array_equal(back.astype(np.int16), values)
    assert back.view(np.uint8).tolist() == x.view(np.uint8).tolist()    # ml_dtypes' own bytes
    carrier = st.unpack_bits(p, dtype=dtype, count=len(values))        # the dtype object
    assert carrier.dtype == dtype
    wide = st.unpack_bits(p, signed=signed, count=len(values))
    np.testing.assert_array_equal(wide, values)


@given(strided_arrays(), st_h.data())
def test_ml_dtypes_int4_strided(x, data):
    axis = data.draw(st_h.integers(-x.ndim, x.ndim - 1))
    x4 = x.astype(ml_dtypes.int4)
    # a strided view of an int4 array (not its contiguous copy)
    base = np.zeros(tuple(2 * n + 1 for n in x.shape), dtype=ml_dtypes.int4)
    view = base[tuple(slice(None, 2 * n, 2) for n in x.shape)][(slice(None, None, -1),)]
    view[...] = x4
    np.testing.assert_array_equal(view.astype(np.int8), x)
    p = st.pack_bits(view, axis=axis)
    np.testing.assert_array_equal(p, brute_pack(x, axis))
    back = st.unpack_bits(p, axis=axis, dtype="int4", count=x.shape[axis])
    np.testing.assert_array_equal(back.astype(np.int8), x)


def test_ml_dtypes_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)
    with pytest.raises(ImportError, match="ml_dtypes is not installed"):
        st.unpack_bits(np.zeros(2, np.uint8), dtype="int4")
    # the byte types need no ml_dtypes
    assert st.unpack_bits(np.zeros(2, np.uint8), dtype="uint8").tolist() == [0, 0, 0, 0]


# ---- shapes, strides, inputs -------------------------------------------------------------------

@pytest.mark.parametrize("shape,axis", [((0,), 0), ((1,), 0), ((3, 0, 5), 1), ((3, 0, 5), 2),
                                        ((0, 4), 0), ((2, 1, 3), 1), ((4, 6, 2), 0)])
def test_edge_shapes(shape, axis):
    x = (np.arange(int(np.prod(shape))) % 16 - 8).astype(np.int8).reshape(shape)
    p = st.pack_bits(x, axis=axis)
    expect = list(shape)
    expect[axis] = (shape[axis] + 1) // 2
    assert p.shape == tuple(expect) and p.flags.c_contiguous
    np.testing.assert_array_equal(p, brute_pack(x, axis))
    np.testing.assert_array_equal(st.unpack_bits(p, axis=axis, count=shape[axis]), x)


def test_odd_size_spare_nibble_is_zero():
    x = np.full((2, 3), -1, dtype=np.int8)
    p = st.pack_bits(x)
    assert p[:, 1].tolist() == [0x0F, 0x0F]            # high nibble 0
    assert st.pack_bits(x, order="high_first")[:, 1].tolist() == [0xF0, 0xF0]


def test_wider_integers_and_lists():
    assert st.pack_bits([1, -2, 3]).tolist() == [0xE1, 0x03]
    x = np.array([[15, 0], [3, 9]], dtype=np.uint64)
    assert st.pack_bits(x).tolist() == [[0x0F], [0x93]]
    assert st.pack_bits(x.astype(np.int32), signed=False).tolist() == [[0x0F], [0x93]]
    assert st.pack_bits(np.array([9, 1], np.int8), signed=False).tolist() == [0x19]


def test_bytes_input_to_unpack():
    assert st.unpack_bits(b"\x21\xf8", signed=False).tolist() == [1, 2, 8, 15]
    assert st.unpack_bits(np.array([0x21], np.int8)).tolist() == [1, 2]   # int8 as bytes


def test_memory_orders_agree():
    rng = np.random.default_rng(3)
    x = rng.integers(-8, 8, size=(7, 64)).astype(np.int8)
    for order in ("low_first", "high_first"):
        contiguous = st.pack_bits(x, order=order)
        general = st.pack_bits(np.asfortranarray(x), order=order)
        np.testing.assert_array_equal(contiguous, general)
        np.testing.assert_array_equal(contiguous, brute_pack(x, -1, order))


def test_large_is_vectorized():
    # a few million elements in well under a second (no Python loop per element)
    x = np.random.default_rng(4).integers(-8, 8, size=(1024, 4096)).astype(np.int8)
    p = st.pack_bits(x)
    assert p.shape == (1024, 2048)
    np.testing.assert_array_equal(st.unpack_bits(p), x)
    np.testing.assert_array_equal(p[5, :8], brute_pack_1d(x[5, :16].tolist()))


def test_torch_tensors():
    torch = pytest.importorskip("torch")
    t = torch.tensor([[1, -2, 3], [4, 5, -8]], dtype=torch.int8)
    p = st.pack_bits(t.flip(1))
    assert isinstance(p, torch.Tensor) and p.dtype == torch.uint8
    assert p.tolist() == brute_pack(t.flip(1).numpy(), -1).tolist()
    back = st.unpack_bits(p, count=3)
    assert isinstance(back, torch.Tensor) and back.dtype == torch.int8
    assert torch.equal(back, t.flip(1))
    u = st.unpack_bits(p, dtype=torch.uint8, count=3)
    assert u.dtype == torch.uint8
    tt = torch.tensor([1, 2], dtype=torch.uint8).t()
    assert st.pack_bits(tt).tolist() == [0x21]
    with pytest.raises(TypeError, match="torch cannot hold"):
        st.unpack_bits(p, dtype="int4")
    with pytest.raises(ValueError, match="device meta"):
        st.pack_bits(torch.zeros(4, dtype=torch.int8, device="meta"))


# ---- errors ------------------------------------------------------------------------------------

def test_out_of_range_names_value_and_index():
    x = np.zeros((2, 3), dtype=np.int8)
    x[1, 2] = 9
    x[1, 1] = -9
    with pytest.raises(ValueError, match=r"x holds -9 at index \(1, 1\): int4 values lie in "
                                         r"\[-8, 7\]"):
        st.pack_bits(x)
    with pytest.raises(ValueError, match=r"x holds 16 at index \(0,\): uint4 .*\[0, 15\]"):
        st.pack_bits(np.array([16, 0], dtype=np.uint8))
    with pytest.raises(ValueError, match=r"x holds -1 at index \(1,\): uint4"):
        st.pack_bits(np.array([0, -1], dtype=np.int8), signed=False)
    # the index is the logical one, also for a strided view
    y = np.zeros(10, dtype=np.int8)
    y[3] = 100
    with pytest.raises(ValueError, match=r"100 at index \(3,\)"):
        st.pack_bits(y[::-1][::2])           # y[9], y[7], y[5], y[3], y[1]


@pytest.mark.parametrize("bits", [1, 2, 3, 8, 0, -4])
def test_only_four_bits(bits):
    with pytest.raises(ValueError, match="only 4-bit"):
        st.pack_bits(np.zeros(2, np.int8), bits=bits)
    with pytest.raises(ValueError, match="only 4-bit"):
        st.unpack_bits(np.zeros(2, np.uint8), bits=bits)


def test_argument_errors():
    x = np.zeros(4, np.int8)
    p = np.zeros(2, np.uint8)
    with pytest.raises(TypeError, match="bits must be an int"):
        st.pack_bits(x, bits=4.0)
    with pytest.raises(TypeError, match="bits must be an int"):
        st.pack_bits(x, bits=True)
    with pytest.raises(ValueError, match="order must be one of"):
        st.pack_bits(x, order="little")
    with pytest.raises(ValueError, match="order must be one of"):
        st.unpack_bits(p, order="big")
    with pytest.raises(np.exceptions.AxisError, match="axis 1 is out of bounds for x"):
        st.pack_bits(x, axis=1)
    with pytest.raises(ValueError, match="axis -2 is out of bounds for p"):
        st.unpack_bits(p, axis=-2)
    with pytest.raises(ValueError, match="0-d array"):
        st.pack_bits(np.int8(3))
    with pytest.raises(TypeError, match="axis must be an int"):
        st.pack_bits(x, axis=0.5)
    with pytest.raises(TypeError, match="x must hold integers"):
        st.pack_bits(np.zeros(2, np.float32))
    with pytest.raises(TypeError, match="x must hold integers"):
        st.pack_bits(np.zeros(2, bool))
    with pytest.raises(TypeError, match="x must hold integers"):
        st.pack_bits(np.zeros(2, ml_dtypes.bfloat16))
    with pytest.raises(ValueError, match="contradicts x's dtype int4"):
        st.pack_bits(np.zeros(2, ml_dtypes.int4), signed=False)
    with pytest.raises(TypeError, match="signed must be None, True or False"):
        st.pack_bits(x, signed=1)
    with pytest.raises(TypeError, match=r"p must be an array of packed bytes .* int16"):
        st.unpack_bits(np.zeros(2, np.int16))
    with pytest.raises(TypeError, match=r"p must be an array of packed bytes .* int4"):
        st.unpack_bits(np.zeros(2, ml_dtypes.int4))
    with pytest.raises(TypeError, match="dtype must be one of"):
        st.unpack_bits(p, dtype=np.int16)
    with pytest.raises(TypeError, match="dtype must be one of"):
        st.unpack_bits(p, dtype="float32")
    with pytest.raises(ValueError, match=r"signed=False contradicts dtype 'int8'"):
        st.unpack_bits(p, dtype=np.int8, signed=False)
    with pytest.raises(ValueError, match=r"count must be 3 or 4 for an axis of 2 bytes "
                                         r"\(two elements a byte\), got 2"):
        st.unpack_bits(p, count=2)
    with pytest.raises(ValueError, match="count must be 3 or 4"):
        st.unpack_bits(p, count=5)
    with pytest.raises(ValueError, match="count must be 0 for an axis of 0 bytes"):
        st.unpack_bits(np.zeros(0, np.uint8), count=1)
    with pytest.raises(TypeError, match="count must be an int"):
        st.unpack_bits(p, count=3.0)


def test_defaults_and_keywords():
    p = np.array([0xF8], np.uint8)
    assert st.unpack_bits(p).tolist() == [-8, -1]                  # signed by default
    assert st.unpack_bits(p, signed=False).tolist() == [8, 15]
    assert st.unpack_bits(p, dtype="uint8").tolist() == [8, 15]
    assert st.unpack_bits(p, dtype="int4").dtype == np.dtype(ml_dtypes.int4)
    assert st.unpack_bits(p, dtype="uint4").astype(np.uint8).tolist() == [8, 15]
    with pytest.raises(TypeError):
        st.pack_bits(np.zeros(2, np.int8), 4, -1, "high_first")    # order is keyword-only
