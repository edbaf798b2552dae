"""4-bit elements (int4, uint4) in the conversion engine: bit-exact against oracles that know
nothing of strided.

The oracles: :func:`pack_brute` / :func:`unpack_brute` walk every element of a layout and put
its nibble where the contract (DESIGN.md §1, "Sub-byte elements") says, element 2k in bits 0-3
of byte k, element 2k+1 in bits 4-7; ONNX's rule ``pack(x, y) = (y << 4) | (x & 0x0F)``;
ml_dtypes' int4/uint4 (one value per byte) for the values; :mod:`convert_oracle` for the affine
step, saturated to 4 bits (its saturate to int16 first is exact: the result is then clipped).
Every byte outside the destination's elements (holes of padded layouts, the other nibble of a
byte half written) must keep what it held.
"""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest
from convert_oracle import affine, cast, np_dtype
from hypothesis import given, settings
from hypothesis import strategies as st_
from isolated import probe_results, run_isolated

import strided as st
from strided import _convert, _copy

RANGES = {"int4": (-8, 7), "uint4": (0, 15)}
ML = {"int4": ml_dtypes.int4, "uint4": ml_dtypes.uint4}
SOURCES = ("float32", "float16", "bfloat16", "float64", "int8", "uint8", "int16", "int32")


# ---- oracles ---------------------------------------------------------------------------------

def offsets(sizes, strides, first=0):
    """Nibble offset of every element, in C order of the index."""
    return [first + sum(i * s for i, s in zip(idx, strides))
            for idx in itertools.product(*map(range, sizes))]


def pack_brute(buf, sizes, strides, first, values):
    """``buf`` (uint8) with ``values`` (C order, ints) put in the elements' nibbles."""
    out = buf.copy()
    for at, v in zip(offsets(sizes, strides, first), np.asarray(values).ravel()):
        nib = int(v) & 0x0F
        byte = int(out[at // 2])
        out[at // 2] = (byte & 0xF0) | nib if at % 2 == 0 else (byte & 0x0F) | (nib << 4)
    return out


def unpack_brute(buf, sizes, strides, first, dst_type):
    lo, _ = RANGES[dst_type]
    vals = []
    for at in offsets(sizes, strides, first):
        nib = (int(buf[at // 2]) >> (4 * (at % 2))) & 0x0F
        vals.append(nib - 16 if lo < 0 and nib >= 8 else nib)
    return np.array(vals, dtype=np.int64).reshape(sizes)


def onnx_pack(values):
    """ONNX's packing of a flat sequence (odd lengths padded with 0)."""
    v = [int(x) for x in np.asarray(values).ravel()] + [0]
    return np.array([((v[2 * k + 1] << 4) | (v[2 * k] & 0x0F)) & 0xFF
                     for k in range((len(v) - 1 + 1) // 2)], dtype=np.uint8)


def quantize4(x, dst_type, scale=None, shift=None, axis=None):
    """saturate_4bit(rint(x * scale + shift)) (NaN -> 0), or the plain cast: the carrier's
    cast (convert_oracle.cast to int8 / uint8), wrapped to 4 bits."""
    lo, hi = RANGES[dst_type]
    if scale is None and shift is None:
        carrier = cast(x, "int8" if lo < 0 else "uint8").astype(np.int64) & 0x0F
        return np.where(carrier > hi, carrier - 16, carrier)
    wide = affine(x, "int16", scale, shift, axis).astype(np.int64)
    return np.clip(wide, lo, hi)


def strides_of(sizes, order, pads=None, first_pad=0):
    """Packed strides of ``sizes`` in physical ``order`` (outermost first), dim k of the
    order padded by ``pads[k]`` elements."""
    strides = [0] * len(sizes)
    acc = 1
    for k, d in reversed(list(enumerate(order))):
        strides[d] = acc
        acc *= max(sizes[d], 1) + (pads[k] if pads else 0)
    return tuple(strides)


def flipped(strides, sizes, flips):
    """(strides, base): the dims of ``flips`` walked backwards (negative strides on the 4-bit
    side), ``base`` the offset of element 0 that keeps every element at offset >= 0."""
    strides, base = list(strides), 0
    for d, flip in enumerate(flips):
        if flip and sizes[d] > 1:
            base += strides[d] * (sizes[d] - 1)
            strides[d] = -strides[d]
    return strides, base


def src_array(rng, src_type, sizes):
    if src_type.startswith(("float", "bfloat")):
        a = rng.normal(0, 6, sizes)
        a.ravel()[: min(a.size, 3)] = [np.nan, 7.5, -8.5][: min(a.size, 3)]
    else:
        info = np.iinfo(src_type)
        a = rng.integers(max(info.min, -40), min(info.max, 40), sizes)
    return np.asarray(a).astype(np_dtype(src_type))


def quantize_call(rng, sizes, dst_strides, first, dst_type, src, scale, shift, axis,
                  threads=None):
    """(buffer after, buffer before) of convert_memory into the layout over a random buffer."""
    nib = offsets(sizes, dst_strides, first) or [first]
    lo, hi = min(nib), max(nib)
    shift_bytes = (-lo + 1) // 2 * 2 if lo < 0 else 0     # keep every nibble inside the buffer
    first += shift_bytes
    buf = rng.integers(0, 256, (hi + shift_bytes) // 2 + 2, dtype=np.uint8)
    before = buf.copy()
    par = None
    length = 1
    if axis is not None and isinstance(scale, tuple):
        par = tuple(int(i == axis) for i in range(len(sizes)))
        length = sizes[axis]
    _convert.convert_memory(buf.ctypes.data, src.ctypes.data, sizes, dst_strides,
                            tuple(s // src.itemsize for s in src.strides), dst_type,
                            src.dtype.name if src.dtype != np_dtype("bfloat16") else "bfloat16",
                            scale, shift, par, length, num_threads=threads, dst_first=first)
    return buf, before, first


# ---- the engine's raw entry --------------------------------------------------------------------

layouts = st_.integers(1, 3).flatmap(lambda nd: st_.tuples(
    st_.lists(st_.integers(0, 6), min_size=nd, max_size=nd),
    st_.permutations(range(nd)),
    st_.lists(st_.integers(0, 3), min_size=nd, max_size=nd),
    st_.lists(st_.booleans(), min_size=nd, max_size=nd),
    st_.integers(0, 3)))


@settings(max_examples=150)
@given(layout=layouts, dst_type=st_.sampled_from(["int4", "uint4"]),
       src_type=st_.sampled_from(SOURCES), params=st_.integers(0, 3), seed=st_.integers(0, 2**16),
       threads=st_.sampled_from([1, 2]))
def test_quantize_into_any_layout_matches_the_brute_force_packer(layout, dst_type, src_type,
                                                                 params, seed, threads):
    sizes, order, pads, flips, first = layout
    sizes = tuple(sizes)
    rng = np.random.default_rng(seed)
    strides, base = flipped(strides_of(sizes, order, pads), sizes, flips)
    x = src_array(rng, src_type, sizes)
    x = x[tuple(slice(None, None, -1) if f else slice(None) for f in flips[::-1])] \
        if len(flips) == x.ndim else x       # negative strides on the source
    axis = int(rng.integers(0, len(sizes)))
    if params == 2 and sizes[axis] == 0:
        params = 1          # (no vector of 0 values: the raw entry wants param_length >= 1)
    scale = shift = None
    if params == 1:
        scale, shift = 0.5, 1.25
    elif params == 2:
        scale = tuple(float(v) for v in rng.uniform(0.1, 2, sizes[axis]))
        shift = tuple(float(v) for v in rng.uniform(-3, 3, sizes[axis]))
    elif params == 3:
        shift = -2.5
    old = _copy._tune(nibble_box_bytes=int(rng.choice([2, 7, 64, 4096])), thread_bytes=1,
                      nogil_bytes=1)
    try:
        buf, before, at = quantize_call(rng, sizes, tuple(strides), first + base, dst_type, x,
                                        scale, shift, axis if params == 2 else None, threads)
    finally:
        _copy._tune(**old)
    expected = pack_brute(before, sizes, strides, at,
                          quantize4(x, dst_type, scale, shift, axis if params == 2 else None))
    assert np.array_equal(buf, expected)


@settings(max_examples=150)
@given(layout=layouts, src4=st_.sampled_from(["int4", "uint4"]),
       dst_type=st_.sampled_from(["float32", "float16", "bfloat16", "int8", "int32", "uint8"]),
       affine_=st_.booleans(), seed=st_.integers(0, 2**16), threads=st_.sampled_from([1, 2]))
def test_dequantize_from_any_layout_matches_the_brute_force_unpacker(layout, src4, dst_type,
                                                                     affine_, seed, threads):
    sizes, order, pads, flips, first = layout
    sizes = tuple(sizes)
    rng = np.random.default_rng(seed)
    strides, base = flipped(strides_of(sizes, order, pads), sizes, flips)
    nib = offsets(sizes, strides, first + base) or [0]
    buf = rng.integers(0, 256, max(nib) // 2 + 2, dtype=np.uint8)
    before = buf.copy()
    out = np.full(sizes, 99, np_dtype(dst_type))
    scale, shift = (0.25, -1.5) if affine_ else (None, None)
    old = _copy._tune(nibble_box_bytes=int(rng.choice([2, 5, 64, 4096])), thread_bytes=1,
                      nogil_bytes=1)
    try:
        _convert.convert_memory(out.ctypes.data, buf.ctypes.data, sizes,
                                tuple(s // out.itemsize for s in out.strides), tuple(strides),
                                dst_type, src4, scale, shift, num_threads=threads,
                                src_first=first + base)
    finally:
        _copy._tune(**old)
    assert np.array_equal(buf, before)
    values = unpack_brute(buf, sizes, strides, first + base, src4)
    carrier = values.astype("int8" if src4 == "int4" else "uint8")
    expected = (affine(carrier, dst_type, scale, shift) if affine_
                else cast(carrier, dst_type))
    assert out.dtype == expected.dtype
    assert np.array_equal(out.view(np.uint8), expected.view(np.uint8))


@settings(max_examples=80)
@given(layout=layouts, layout2=st_.tuples(st_.permutations(range(3)),
                                          st_.lists(st_.integers(0, 2), min_size=3, max_size=3)),
       types=st_.sampled_from([("int4", "int4"), ("uint4", "uint4"), ("int4", "uint4"),
                               ("uint4", "int4")]),
       seed=st_.integers(0, 2**16))
def test_4bit_to_4bit_between_any_layouts(layout, layout2, types, seed):
    sizes, order, pads, _, first = layout
    sizes = tuple(sizes)
    nd = len(sizes)
    order2 = [d for d in layout2[0] if d < nd]
    dst_strides = strides_of(sizes, order2, layout2[1][:nd])
    src_strides = strides_of(sizes, order, pads)
    rng = np.random.default_rng(seed)
    src = rng.integers(0, 256, max(offsets(sizes, src_strides, first) or [0]) // 2 + 2,
                       dtype=np.uint8)
    dst = rng.integers(0, 256, max(offsets(sizes, dst_strides, 1) or [0]) // 2 + 2,
                       dtype=np.uint8)
    before = dst.copy()
    dst_type, src_type = types
    _convert.convert_memory(dst.ctypes.data, src.ctypes.data, sizes, dst_strides, src_strides,
                            dst_type, src_type, dst_first=1, src_first=first)
    values = unpack_brute(src, sizes, src_strides, first, src_type)
    assert np.array_equal(dst, pack_brute(before, sizes, dst_strides, 1, values & 0x0F))


def test_a_source_sharing_bytes_with_the_destination_is_read_as_it_was():
    rng = np.random.default_rng(5)
    buf = rng.integers(0, 256, 64, dtype=np.uint8)
    before = buf.copy()
    # elements 0..99 at nibbles 1..100 <- the same elements at nibbles 0..99 (a shift by one)
    _convert.convert_memory(buf.ctypes.data, buf.ctypes.data, (100,), (1,), (1,), "int4",
                            "int4", dst_first=1, src_first=0)
    values = unpack_brute(before, (100,), (1,), 0, "int4")
    assert np.array_equal(buf, pack_brute(before, (100,), (1,), 1, values))


def test_odd_starts_and_ends_keep_the_other_nibble_of_their_byte():
    buf = np.full(4, 0xAB, np.uint8)
    x = np.array([1, 2, 3], np.int8)
    _convert.convert_memory(buf.ctypes.data, x.ctypes.data, (3,), (1,), (1,), "int4", "int8",
                            dst_first=1)
    assert buf.tolist() == [0x1B, 0x32, 0xAB, 0xAB]   # nibbles 1..3: 1, 2, 3
    assert onnx_pack([0xB, 1, 2, 3]).tolist() == [0x1B, 0x32]


@pytest.mark.parametrize("dst_type", ["int4", "uint4"])
def test_the_contract_is_onnx_packing_and_ml_dtypes_values(dst_type):
    rng = np.random.default_rng(3)
    x = rng.normal(0, 10, 999).astype(np.float32)
    buf = np.zeros(500, np.uint8)
    _convert.convert_memory(buf.ctypes.data, x.ctypes.data, (999,), (1,), (1,), dst_type,
                            "float32", 1.0, 0.0)
    lo, hi = RANGES[dst_type]
    q = np.clip(np.rint(x), lo, hi)
    assert np.array_equal(buf, onnx_pack(q.astype(ML[dst_type]).astype(np.int64)))
    # and back through ml_dtypes: the values round trip
    back = np.empty(999, np.float32)
    _convert.convert_memory(back.ctypes.data, buf.ctypes.data, (999,), (1,), (1,), "float32",
                            dst_type)
    assert np.array_equal(back, q.astype(ML[dst_type]).astype(np.float32))


def test_plain_integer_casts_wrap_as_ml_dtypes_does():
    x = np.arange(-128, 128, dtype=np.int16).astype(np.int8)
    buf = np.zeros(128, np.uint8)
    _convert.convert_memory(buf.ctypes.data, x.ctypes.data, (256,), (1,), (1,), "int4", "int8")
    assert np.array_equal(unpack_brute(buf, (256,), (1,), 0, "int4"),
                          x.astype(ml_dtypes.int4).astype(np.int64))


def test_parameters_outside_their_vectors_are_refused_before_writing():
    x = np.ones((2, 3), np.float32)
    buf = np.zeros(4, np.uint8)
    with pytest.raises(ValueError, match="param_strides"):
        _convert.convert_memory(buf.ctypes.data, x.ctypes.data, (2, 3), (3, 1), (3, 1), "int4",
                                "float32", (1.0, 2.0), None, (0, 1), 2)
    assert not buf.any()


def test_a_first_nibble_for_a_byte_sized_side_is_refused():
    x = np.ones(4, np.float32)
    y = np.ones(4, np.float32)
    with pytest.raises(ValueError, match="src_first is 1"):
        _convert.convert_memory(y.ctypes.data, x.ctypes.data, (4,), (1,), (1,), "float32",
                                "float32", src_first=1)


# ---- threads: boxes start on whole bytes ------------------------------------------------------

@settings(max_examples=100)
@given(layout=layouts, box=st_.sampled_from([2, 3, 8, 33, 200]))
def test_no_two_threads_write_the_same_byte(layout, box):
    sizes, order, pads, _, first = layout
    sizes = tuple(sizes)
    strides = strides_of(sizes, order, [2 * (p // 2) for p in pads])
    first = 2 * (first // 2)
    old = _copy._tune(nibble_box_bytes=box, thread_bytes=1, nogil_bytes=1)
    try:
        threads, boxes = _convert._nibble_boxes(sizes, strides, strides, dst_first=first,
                                                num_threads=2)
    finally:
        _copy._tune(**old)
    every = sorted(o for b in boxes for o in b)
    assert every == sorted(offsets(sizes, strides, first)) if 0 not in sizes else every == []
    layout_ = st.Layout(sizes, strides, offset=first) if sizes else None
    byte_addressable = all(s % 2 == 0 or s == 1 for s, n in zip(strides, sizes) if n > 1) and \
        sum(1 for s, n in zip(strides, sizes) if n > 1 and s % 2) <= 1
    if boxes and byte_addressable and layout_ is not None and layout_.size > 1:
        assert threads == 2 or len(boxes) == 1 or _copy.openmp_enabled() is False
    if threads > 1:
        owner = {}
        for k, b in enumerate(boxes):
            for o in b:
                assert owner.setdefault(o // 2, k) == k, f"byte {o // 2}: {owner[o // 2]}, {k}"


def test_an_odd_stride_destination_runs_on_one_thread():
    old = _copy._tune(nibble_box_bytes=2, thread_bytes=1, nogil_bytes=1)
    try:
        threads, boxes = _convert._nibble_boxes((5, 3), (3, 1), (3, 1), num_threads=2)
    finally:
        _copy._tune(**old)
    assert threads == 1 and len(boxes) > 1


@pytest.mark.parametrize("threads", [1, 2])
def test_many_threads_many_times_exact(threads):
    rng = np.random.default_rng(11)
    x = rng.normal(0, 5, (4, 130, 3, 7)).astype(np.float32)
    old = _copy._tune(nibble_box_bytes=64, thread_bytes=1, nogil_bytes=1)
    try:
        first = st.to_blocked(x, "NCHW64", dtype="int4", scale=1.0, num_threads=threads)
        for _ in range(30):
            again = st.to_blocked(x, "NCHW64", dtype="int4", scale=1.0, num_threads=threads)
            assert np.array_equal(again, first)
    finally:
        _copy._tune(**old)
    assert np.array_equal(first, nchw64_oracle(x, "int4", 1.0, None))


# ---- to_blocked / from_blocked --------------------------------------------------------------

def nchw64_oracle(x, dst_type, scale, shift, block=64, axis=1):
    """MegEngine's NCHW64 of 4-bit values: (N, ceil(C/64), H, W, 64) nibbles, padding
    channels holding saturate(rint(shift)), packed low nibble first (numpy only)."""
    n, c, h, w = x.shape
    q = quantize4(x, dst_type, scale, shift, axis if isinstance(scale, tuple)
                  or isinstance(shift, tuple) else None)
    blocks = -(-c // block)
    lo, hi = RANGES[dst_type]
    # the quantized zero; with a shift per channel only when they all give the same one
    zeros = {int(np.clip(np.rint(np.float32(v)), lo, hi))
             for v in (shift if isinstance(shift, tuple) else (shift or 0.0,))}
    zero = zeros.pop() if len(zeros) == 1 else 0
    full = np.full((n, blocks * block, h, w), zero, np.int64)
    full[:, :c] = q
    phys = full.reshape(n, blocks, block, h, w).transpose(0, 1, 3, 4, 2) & 0x0F
    return (phys[..., 0::2] | (phys[..., 1::2] << 4)).astype(np.uint8)


@settings(max_examples=60)
@given(sizes=st_.tuples(st_.integers(0, 2), st_.integers(1, 140), st_.integers(0, 3),
                        st_.integers(1, 5)),
       dst_type=st_.sampled_from(["int4", "uint4"]),
       src_type=st_.sampled_from(["float32", "float16", "bfloat16", "int8", "uint8"]),
       params=st_.integers(0, 2), flip=st_.booleans(), seed=st_.integers(0, 2**16))
def test_to_blocked_nchw64_matches_megengine_semantics(sizes, dst_type, src_type, params, flip,
                                                       seed):
    rng = np.random.default_rng(seed)
    x = src_array(rng, src_type, sizes)
    if flip:
        x = x[:, ::-1, :, ::-1]           # negative strides on the float side
    elif sizes[3] > 1:
        x = np.ascontiguousarray(np.swapaxes(x, 1, 3)).swapaxes(1, 3)    # channels-last
    c = sizes[1]
    scale, shift = {0: (None, None), 1: (0.5, 3.0),
                    2: (tuple(float(v) for v in rng.uniform(0.2, 2, c)),
                        tuple(float(v) for v in rng.uniform(-2, 2, c)))}[params]
    y = st.to_blocked(x, "NCHW64", dtype=dst_type, scale=scale, shift=shift)
    assert y.dtype == np.uint8 and y.shape == (sizes[0], -(-c // 64), sizes[2], sizes[3], 32)
    expected = nchw64_oracle(x, dst_type, scale, shift)
    assert np.array_equal(y, expected)
    back = st.from_blocked(y, "NCHW64", channels=c, src_dtype=dst_type)
    assert back.dtype == np.dtype("int8" if dst_type == "int4" else "uint8")
    q = quantize4(x, dst_type, scale, shift, 1 if params == 2 else None)
    assert np.array_equal(back, q)


@pytest.mark.parametrize("fmt,block", [("NCHW4", 4), ("NCHW32", 32), ("nChw16c", 16),
                                       ("CHWN4", 4), ("NCHW64", 64)])
def test_every_even_block_of_4bit_elements_round_trips(fmt, block):
    rng = np.random.default_rng(block)
    x = rng.normal(0, 3, (3, 37, 4, 5)).astype(np.float32)
    y = st.to_blocked(x, fmt, dtype="uint4", scale=1.0, shift=8.0)
    ref = st.to_blocked(quantize4(x, "uint4", 1.0, 8.0).astype(np.uint8), fmt)
    phys = ref.astype(np.int64)
    pad = -(-37 // block) * block - 37
    if pad:   # padding lanes hold the quantized zero, 8
        last = phys[:, -1] if fmt != "CHWN4" else phys[-1]
        last[..., block - pad:] = 8
    packed = (phys[..., 0::2] & 15) | ((phys[..., 1::2] & 15) << 4)
    assert np.array_equal(y, packed.astype(np.uint8))
    back = st.from_blocked(y, fmt, channels=37, src_dtype="uint4", dtype=np.float32,
                           scale=1.0, shift=-8.0)
    assert np.array_equal(back, quantize4(x, "uint4", 1.0, 8.0).astype(np.float32) - 8)


def test_dequantize_nchw64_per_channel_against_numpy():
    rng = np.random.default_rng(2)
    x = rng.normal(0, 3, (2, 100, 3, 3)).astype(np.float32)
    scale = tuple(float(v) for v in rng.uniform(0.5, 2, 100))
    y = st.to_blocked(x, "NCHW64", dtype="int4", scale=scale)
    s = np.array(scale, np.float32)
    out = st.from_blocked(y, "NCHW64", channels=100, src_dtype="int4", dtype=np.float32,
                          scale=tuple(float(v) for v in 1 / s))
    q = quantize4(x, "int4", scale, None, 1)
    assert np.array_equal(out, (q.astype(np.float32) * (1 / s)[:, None, None]).astype(np.float32))


@pytest.mark.parametrize("order", [(0, 1, 2, 3), (0, 2, 3, 1), (3, 1, 0, 2)])
@pytest.mark.parametrize(("src4", "dtype"), [("int4", np.float32), ("uint4", np.float32),
                                             ("int4", np.int8), ("uint4", np.int16)])
def test_from_blocked_4bit_into_out_of_any_strides(order, src4, dtype):
    rng = np.random.default_rng(7)
    x = rng.normal(0, 6, (2, 70, 3, 5)).astype(np.float32)
    y = st.to_blocked(x, "NCHW64", dtype=src4, shift=0 if src4 == "int4" else 8)
    kw = {"scale": 0.5, "shift": -1.0} if np.dtype(dtype).kind == "f" else {}
    expected = st.from_blocked(y, "NCHW64", channels=70, src_dtype=src4, dtype=dtype, **kw)
    # physically in `order`, its innermost dimension padded by one element
    physical = [x.shape[k] for k in order]
    base = np.full((*physical[:-1], physical[-1] + 1), 99, dtype)
    out = base[..., :-1].transpose(np.argsort(order))
    got = st.from_blocked(y, "NCHW64", channels=70, src_dtype=src4, out=out, **kw)
    assert got is out
    assert np.array_equal(out, expected) and out.dtype == expected.dtype
    assert np.sum(base == 99) == base.size - x.size      # nothing outside out written


def test_from_blocked_4bit_into_out_sharing_the_containers_bytes():
    rng = np.random.default_rng(8)
    x = rng.normal(0, 6, (1, 64, 4, 4)).astype(np.float32)
    y = st.to_blocked(x, "NCHW64", dtype="int4")
    expected = st.from_blocked(y, "NCHW64", channels=64, src_dtype="int4", dtype=np.int8)
    # the int8 result (1024 bytes) over a buffer whose first 512 bytes hold the container
    buf = np.zeros(1024, np.uint8)
    buf[:y.size] = y.reshape(-1)
    shared = buf[:y.size].reshape(y.shape)
    out = buf.view(np.int8).reshape(1, 64, 4, 4)
    st.from_blocked(shared, "NCHW64", channels=64, src_dtype="int4", out=out)
    assert np.array_equal(out, expected)


def test_from_blocked_4bit_out_errors_write_nothing():
    y = st.to_blocked(np.ones((1, 5, 2, 2), np.float32), "NCHW64", dtype="int4")
    out = np.full((1, 5, 2, 2), 7, np.float32)
    with pytest.raises(ValueError, match=r"out has shape \(1, 5, 2, 3\)"):
        st.from_blocked(y, "NCHW64", channels=5, src_dtype="int4",
                        out=np.zeros((1, 5, 2, 3), np.float32))
    with pytest.raises(ValueError, match="dtype is float64 but out has dtype float32"):
        st.from_blocked(y, "NCHW64", channels=5, src_dtype="int4", dtype=np.float64, out=out)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="out"):
        st.from_blocked(y, "NCHW64", channels=5, src_dtype="int4", out=out)
    assert (out == 7).all()


@pytest.mark.thread_unsafe(reason="switches the engine's process-wide route knob")
@pytest.mark.parametrize("level", [0, 1, 2])
@pytest.mark.parametrize("dst_type", ["int4", "uint4"])
def test_one_pass_planes_route_equals_the_carrier_route(level, dst_type):
    """NCHW64 quantize (float32 planes straight to packed pairs) and dequantize (pairs through
    16-entry tables straight to float32 planes) give the bytes and the floats of the carrier
    route (convert to int8/uint8 rows, pack, unpack, convert) bit for bit: NaN, infinities,
    ties, out-of-range values, per-channel and scalar parameters, widths that leave vector
    tails, channels not a multiple of 64, every SIMD level; the dequantize's planes also
    streamed (nt_bytes=0: the aligned runs by streaming stores, the heads by plain ones)."""
    rng = np.random.default_rng(level)
    x = (rng.standard_normal((2, 100, 3, 19)) * 9).astype(np.float32)
    flat = x.reshape(-1)
    flat[::41], flat[5::43], flat[7::47] = np.nan, np.inf, -np.inf
    flat[9::53], flat[11::59] = 2.5, -7.5          # ties, round half to even
    per_channel = (tuple(float(v) for v in rng.uniform(0.3, 2, 100)),
                   tuple(float(v) for v in rng.uniform(-3, 3, 100)))
    results = []
    old = _copy._tune()
    try:
        for fused, nt_bytes in ((True, old["nt_bytes"]), (True, 0), (False, old["nt_bytes"])):
            _copy._simd(level)
            _copy._tune(nibble_fused=fused, nt_bytes=nt_bytes)
            got = []
            for scale, shift in (per_channel, (0.75, 1.5), (1.0, None)):
                q = st.to_blocked(x, "NCHW64", dtype=dst_type, scale=scale, shift=shift)
                got.append(q)
                back = st.from_blocked(q, "NCHW64", channels=100, src_dtype=dst_type,
                                       dtype=np.float32, scale=scale, shift=shift)
                got.append(back.view(np.uint32))
            results.append(got)
    finally:
        _copy._tune(**old)
        _copy._simd(-1)
    one_pass, streamed, carriers = results
    for a, b, c in zip(one_pass, streamed, carriers):
        assert np.array_equal(a, c) and np.array_equal(b, c)


def test_to_blocked_4bit_accepts_ml_dtypes_and_torch_names():
    x = np.arange(8, dtype=np.float32).reshape(1, 8, 1, 1)
    a = st.to_blocked(x, "NCHW64", dtype=ml_dtypes.int4)
    b = st.to_blocked(x, "NCHW64", dtype=np.dtype(ml_dtypes.int4))
    c = st.to_blocked(x, "NCHW64", dtype="int4")
    assert np.array_equal(a, b) and np.array_equal(a, c)
    assert a[0, 0, 0, 0, :4].tolist() == [0x10, 0x32, 0x54, 0x76]


def test_padding_of_int8_and_uint8_blocked_outputs_is_the_quantized_zero():
    x = np.zeros((1, 5, 2, 2), np.float32)
    y = st.to_blocked(x, "NCHW4", dtype=np.uint8, scale=2.0, shift=128.0)
    assert (y == 128).all()                       # the padding dequantizes to 0 too
    y = st.to_blocked(x, "NCHW4", dtype=np.int8, shift=-3.6)
    assert (y == -4).all()
    y = st.to_blocked(x, "NCHW4", dtype=np.int8, shift=300.0)
    assert (y == 127).all()                       # saturated, as the values are
    y = st.to_blocked(x, "NCHW4", dtype=np.float32, shift=1.5)
    assert y[0, 1, ..., 1:].tolist() == [[[0.0] * 3] * 2] * 2   # float padding stays 0


def test_4bit_blocked_errors_name_the_argument():
    x = np.zeros((1, 5, 2, 2), np.float32)
    with pytest.raises(ValueError, match="odd number of channels"):
        st.to_blocked(x, "NCHW3", dtype="int4")
    y = st.to_blocked(x, "NCHW64", dtype="int4")
    with pytest.raises(TypeError, match="uint8 array of the packed bytes"):
        st.from_blocked(y.astype(np.int16), "NCHW64", channels=5, src_dtype="int4")
    with pytest.raises(ValueError, match="last dimension holds the block"):
        st.from_blocked(y[..., :16], "NCHW64", channels=5, src_dtype="int4")
    wide = np.zeros((1, 1, 2, 2, 64), np.uint8)[..., ::2]
    with pytest.raises(ValueError, match="stride 2 bytes"):
        st.from_blocked(wide, "NCHW64", channels=5, src_dtype="int4")
    with pytest.raises(TypeError, match="src_dtype must be one of int4, uint4"):
        st.from_blocked(y, "NCHW64", channels=5, src_dtype="int3")
    with pytest.raises(ValueError, match="channels is 65"):
        st.from_blocked(y, "NCHW64", channels=65, src_dtype="int4")


def test_4bit_kernels_stay_inside_guard_pages():
    out = run_isolated("""
        import numpy as np
        from guarded import arena
        from isolated import probe, report
        from strided import _convert, _copy

        def place(role, nbytes, at_end):
            a = arena(role, nbytes)
            start = a.size - nbytes if at_end else 0
            return a, a.start + start

        @probe
        def every_level_and_end():
            for level in range(3):
                _copy._simd(level)
                for n in (1, 2, 31, 32, 33, 63, 64, 65, 200):
                    for first in (0, 1):
                        for at_end in (False, True):
                            x = np.arange(n, dtype=np.float32) % 16 - 8
                            nbytes = (first + n + 1) // 2
                            a, addr = place("dst", nbytes, at_end)
                            _convert.convert_memory(addr, x.ctypes.data, (n,), (1,), (1,),
                                                    "int4", "float32", 1.0, None,
                                                    dst_first=first)
                            s, saddr = place("src", nbytes, at_end)
                            s.bytes[s.size - nbytes if at_end else 0:][:nbytes] = \\
                                a.bytes[a.size - nbytes if at_end else 0:][:nbytes]
                            back = np.empty(n, np.float32)
                            _convert.convert_memory(back.ctypes.data, saddr, (n,), (1,), (1,),
                                                    "float32", "int4", src_first=first)
                            if not np.array_equal(back, x):
                                return f"n={n} first={first} end={at_end}: {back} != {x}"
            _copy._simd(99)
            return "ok"

        @probe
        def planes_route_at_every_level():
            # P pixels x 64 channels: float32 planes <-> dense int4 pixel blocks (NCHW64's
            # box), per-channel parameters (the fused quantize and the dequantize's tables):
            # every operand, packed bytes and float planes, ending right before a guard page
            # and starting right after one
            rng = np.random.default_rng(5)
            scale = rng.uniform(0.5, 2.0, 64).astype(np.float32)
            shift = rng.uniform(-2.0, 2.0, 64).astype(np.float32)
            for level in range(3):
                _copy._simd(level)
                for pixels in (1, 3, 7, 8, 9, 15, 16, 17, 24, 40):
                    x = (np.arange(64 * pixels, dtype=np.float32) % 16 - 8).reshape(64, pixels)
                    q = np.clip(np.rint(x * scale[:, None] + shift[:, None]), -8, 7)
                    nbytes, fbytes = 32 * pixels, x.nbytes
                    for at_end in (False, True):
                        f, faddr = place("fsrc", fbytes, at_end)
                        flo = faddr - f.start
                        f.bytes[flo:flo + fbytes] = x.view(np.uint8).ravel()
                        a, addr = place("dst", nbytes, at_end)
                        _convert.convert_memory(addr, faddr, (pixels, 64), (64, 1),
                                                (1, pixels), "int4", "float32",
                                                tuple(scale.tolist()), tuple(shift.tolist()),
                                                param_strides=(0, 1), param_length=64)
                        s, saddr = place("src", nbytes, at_end)
                        lo = s.size - nbytes if at_end else 0
                        s.bytes[lo:lo + nbytes] = a.bytes[a.size - nbytes if at_end else 0:][
                            :nbytes]
                        b, baddr = place("fdst", fbytes, at_end)
                        _convert.convert_memory(baddr, saddr, (pixels, 64), (1, pixels),
                                                (64, 1), "float32", "int4")
                        blo = baddr - b.start
                        back = b.bytes[blo:blo + fbytes].view(np.float32).reshape(64, pixels)
                        if not np.array_equal(back, q):
                            return f"pixels={pixels} end={at_end} level={level}"
            _copy._simd(99)
            return "ok"

        report()
    """, timeout=300)
    results = probe_results(out)
    assert results["every_level_and_end"] == "ok"
    assert results["planes_route_at_every_level"] == "ok"


# ---- copyto / relayout with containers ---------------------------------------------------------

def container_oracle(q, order):
    """The uint8 container relayout(..., order, dtype=4-bit) makes of values ``q``: the
    physical order's innermost dim packed two a byte (an odd count: a last high nibble of 0),
    the container's dims in logical order."""
    unit = order[-1]
    v = np.moveaxis(np.asarray(q, np.int64) & 0x0F, unit, -1)
    if v.shape[-1] % 2:
        v = np.concatenate([v, np.zeros((*v.shape[:-1], 1), np.int64)], axis=-1)
    return np.moveaxis((v[..., 0::2] | (v[..., 1::2] << 4)).astype(np.uint8), -1, unit)


@settings(max_examples=60)
@given(sizes=st_.lists(st_.integers(0, 5), min_size=1, max_size=3),
       data=st_.data(), dst_type=st_.sampled_from(["int4", "uint4"]),
       seed=st_.integers(0, 2**16))
def test_relayout_into_4bit_and_copyto_back(sizes, data, dst_type, seed):
    sizes = tuple(sizes)
    order = tuple(data.draw(st_.permutations(range(len(sizes)))))
    rng = np.random.default_rng(seed)
    x = rng.normal(0, 5, sizes).astype(np.float32)
    y = st.relayout(x, order, dtype=dst_type, scale=1.0, shift=0.5)
    q = quantize4(x, dst_type, 1.0, 0.5)
    expected = container_oracle(q, order)
    assert y.dtype == np.uint8 and y.shape == expected.shape
    assert np.array_equal(y, expected)
    if y.size:
        assert st.layout_of(y) == st.Layout.packed(y.shape, order)    # packed in that order
    back = np.full(sizes, np.nan, np.float32)
    st.copyto(back, y, src_dtype=dst_type, scale=2.0)
    assert np.array_equal(back, (2 * q).astype(np.float32))
    # 4-bit -> 4-bit, into a container of another order
    other = tuple(reversed(order))
    z = st.relayout(np.full(sizes, 3, np.float32), other, dtype=dst_type)   # its container
    if x.size:
        st.copyto(z, y, dst_dtype=dst_type, src_dtype=dst_type)
        assert np.array_equal(z, container_oracle(q, other))


def test_relayout_into_4bit_keeps_torch_and_mixes_libraries():
    torch = pytest.importorskip("torch")
    x = torch.arange(-8, 8, dtype=torch.float32).reshape(2, 8)
    y = st.relayout(x, "C", dtype="int4")
    assert isinstance(y, torch.Tensor) and y.dtype == torch.uint8 and tuple(y.shape) == (2, 4)
    assert y[0].tolist() == [0x98, 0xBA, 0xDC, 0xFE] and y[1].tolist() == [0x10, 0x32, 0x54, 0x76]
    out = np.empty((2, 8), np.int16)
    st.copyto(out, y, src_dtype="int4")
    assert out.ravel().tolist() == list(range(-8, 8))


def test_copyto_4bit_errors_name_the_argument_and_write_nothing():
    x = np.ones((2, 4), np.float32)
    box = np.zeros((2, 2), np.uint8)
    with pytest.raises(TypeError, match="casting='same_kind'"):
        st.copyto(box, x, dst_dtype="int4")
    with pytest.raises(TypeError, match="dst_dtype must be one of int4, uint4"):
        st.copyto(box, x, dst_dtype="int8")
    with pytest.raises(TypeError, match="a uint8 array of the packed bytes"):
        st.copyto(box.astype(np.int8), x, dst_dtype="int4", casting="unsafe")
    with pytest.raises(ValueError, match="same sizes"):
        st.copyto(np.zeros((2, 3), np.uint8), x, dst_dtype="int4", casting="unsafe")
    with pytest.raises(ValueError, match="contiguous bytes"):
        st.copyto(np.zeros((2, 4), np.uint8)[:, ::2], x, dst_dtype="int4", casting="unsafe")
    read_only = np.zeros((2, 2), np.uint8)
    read_only.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        st.copyto(read_only, x, dst_dtype="int4", casting="unsafe")
    with pytest.raises(ValueError, match="a label or an order"):
        st.relayout(x, st.Layout((2, 4)), dtype="int4")
    assert not box.any()


def test_an_odd_count_leaves_the_last_high_nibble_as_it_was():
    box = np.full((2, 2), 0xF0, np.uint8)
    st.copyto(box, np.array([[1, 2, 3], [4, 5, 6]], np.int8), dst_dtype="int4")
    assert box.tolist() == [[0x21, 0xF3], [0x54, 0xF6]]
    assert onnx_pack([1, 2, 3]).tolist() == [0x21, 0x03]
