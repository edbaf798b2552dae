"""Layouts of 4-bit elements (``Layout(..., bits=4)``): the arithmetic of DESIGN.md section 1,
"Sub-byte elements".

The oracles enumerate every element offset (``strategies.brute_offsets``) and place element
``e`` in byte ``e // 2`` (low nibble when ``e`` is even), as the contract says; they never ask
strided for a byte count. The byte-addressable oracle is written from the contract's words
(offset even, strides >= 0, every stride but one unit stride even; size-1 dims ignored, an empty
layout byte-addressable), and checked against what the rule is for: every element that starts a
byte pair does start a byte.
"""

from __future__ import annotations

import copy
import itertools
import math
import pickle
import re

import pytest
from hypothesis import example, given
from hypothesis import strategies as hst
from strategies import (
    all_indices,
    basic_keys,
    brute_offsets,
    random_strides,
    sizes_st,
    structured_strides,
)

import strided as st
from strided.layout import _rebuild

INT64_MAX = 2**63 - 1

# ---- oracles --------------------------------------------------------------------------------


def ref_nbytes(sizes, strides, offset):
    """Bytes from byte 0 to the byte holding the highest element; None below offset 0."""
    offs = brute_offsets(sizes, strides, offset)
    if not offs:
        return 0
    if min(offs) < 0:
        return None
    return max(offs) // 2 + 1


def ref_buffer_size(sizes, strides, offset, align):
    """Bytes from the byte of the lowest element to the byte of the highest, rounded up."""
    offs = brute_offsets(sizes, strides, offset)
    if not offs:
        return 0
    exact = len(range(min(offs) // 2, max(offs) // 2 + 1))
    return math.ceil(exact / align) * align


def ref_byte_addressable(sizes, strides, offset):
    """The contract's rule, literally."""
    if 0 in sizes:
        return True
    live = [s for n, s in zip(sizes, strides, strict=True) if n > 1]
    odd = [s for s in live if s % 2]
    return offset % 2 == 0 and all(s >= 0 for s in live) and (
        odd == [] or odd == [1])


def byte_starts(sizes, strides, offset):
    """Offsets of the elements that must start a byte when the layout is byte-addressable: all
    of them, but the odd positions along the unit-stride dim (the high nibbles of a pair)."""
    unit = [d for d, (n, s) in enumerate(zip(sizes, strides, strict=True)) if n > 1 and s == 1]
    for index in all_indices(sizes):
        if unit and index[unit[0]] % 2:
            continue
        yield offset + sum(i * s for i, s in zip(index, strides, strict=True))


@hst.composite
def layout_args(draw, max_rank=4, max_size=5, max_offset=20):
    """(sizes, strides, offset): sizes 0 and 1 included; strides negative, zero, odd, even."""
    sizes = draw(sizes_st(0, max_rank, 0, max_size))
    strides = draw(random_strides(sizes, 9) | structured_strides(sizes))
    offset = draw(hst.integers(-max_offset, max_offset))
    return sizes, strides, offset


@hst.composite
def byte_addressable_args(draw):
    """Arguments of byte-addressable 4-bit layouts, most of them (the rule's True side)."""
    sizes = draw(sizes_st(0, 4, 0, 5))
    unit = draw(hst.integers(-1, len(sizes) - 1))
    strides = tuple(1 if d == unit else 2 * draw(hst.integers(0, 6)) for d in range(len(sizes)))
    offset = 2 * draw(hst.integers(0, 10))
    return sizes, strides, offset


ANY_ARGS = layout_args() | byte_addressable_args()


# ---- the arithmetic against the oracles -----------------------------------------------------


@given(ANY_ARGS, hst.sampled_from([1, 2, 4, 8, 3]))
@example(((0, 3), (1, 1), -7), 4)
@example(((1, 1), (-3, 5), 1), 4)
@example(((5,), (1,), 1), 1)
@example(((3,), (-1,), 5), 4)
def test_byte_counts_against_brute_force(args, align):
    sizes, strides, offset = args
    L = st.Layout(sizes, strides, offset=offset, bits=4)
    assert L.bits == 4
    assert (L.sizes, L.strides, L.offset) == (sizes, strides, offset)
    expected = ref_nbytes(sizes, strides, offset)
    if expected is None:
        with pytest.raises(ValueError, match="below offset 0"):
            _ = L.nbytes
    else:
        assert L.nbytes == expected
    assert L.buffer_size(align) == ref_buffer_size(sizes, strides, offset, align)
    # the module-level function: element 0 at offset 0
    assert st.buffer_size(sizes, strides, bits=4, align=align) == ref_buffer_size(
        sizes, strides, 0, align)
    assert st.buffer_size(sizes, strides, itemsize=1, bits=4, align=align) == ref_buffer_size(
        sizes, strides, 0, align)


@given(ANY_ARGS)
@example(((0,), (3,), 1))
@example(((1, 2), (1, 1), 0))
@example(((2, 2), (1, 1), 0))
@example(((2, 1), (1, 1), 0))
@example(((3, 1), (2, -1), 2))
@example(((3,), (0,), 0))
def test_byte_addressable_against_the_rule(args):
    sizes, strides, offset = args
    L = st.Layout(sizes, strides, offset=offset, bits=4)
    expected = ref_byte_addressable(sizes, strides, offset)
    assert L.is_byte_addressable is expected
    error = L.byte_addressable_error()
    assert (error is None) is expected
    if expected:
        # what the rule promises: every element but the high nibble of a pair starts a byte
        assert all(e % 2 == 0 for e in byte_starts(sizes, strides, offset))
    else:
        assert isinstance(error, str) and error
    # the byte layout of the same arithmetic is always byte-addressable
    assert st.Layout(sizes, strides, offset=offset).is_byte_addressable
    assert st.Layout(sizes, strides, offset=offset).byte_addressable_error() is None


@given(ANY_ARGS)
def test_element_arithmetic_is_the_byte_layouts(args):
    """A 4-bit layout's element arithmetic is that of the same layout of 1-byte elements."""
    sizes, strides, offset = args
    L4 = st.Layout(sizes, strides, offset=offset, bits=4)
    L1 = st.Layout(sizes, strides, offset=offset)
    assert (L4.span, L4.size, L4.ndim, L4.order, L4.labels) == (
        L1.span, L1.size, L1.ndim, L1.order, L1.labels)
    assert (L4.is_packed, L4.is_contiguous, L4.is_broadcast, L4.is_padded) == (
        L1.is_packed, L1.is_contiguous, L1.is_broadcast, L1.is_padded)
    assert L4.overlaps == L1.overlaps
    for index in itertools.islice(all_indices(sizes), 20):
        assert L4.offset_of(index) == L1.offset_of(index)


def _same_but_bits(L4, L1):
    assert L4.bits == 4
    assert (L4.sizes, L4.strides, L4.offset) == (L1.sizes, L1.strides, L1.offset)


@given(ANY_ARGS, hst.data())
def test_derived_layouts_keep_bits(args, data):
    sizes, strides, offset = args
    L4 = st.Layout(sizes, strides, offset=offset, bits=4)
    L1 = st.Layout(sizes, strides, offset=offset)
    axes = data.draw(hst.permutations(range(len(sizes))))
    _same_but_bits(L4.permute(axes), L1.permute(axes))
    key = data.draw(basic_keys(sizes))
    _same_but_bits(L4[key], L1[key])
    _same_but_bits(L4.coalesce(), L1.coalesce())
    target = (2, *sizes)
    _same_but_bits(L4.broadcast_to(target), L1.broadcast_to(target))
    try:
        reshaped = L1.reshape((-1,))
    except ValueError:
        with pytest.raises(ValueError):
            L4.reshape((-1,))
    else:
        _same_but_bits(L4.reshape((-1,)), reshaped)


def test_constructors_take_bits():
    assert st.Layout.packed((1, 64, 2, 2), "NCHW", bits=4).nbytes == 128
    assert st.Layout.packed((1, 3, 2, 2), "NHWC", bits=4).strides == (12, 1, 6, 3)
    assert st.Layout.packed((2, 3), bits=4).bits == 4
    nchw64 = st.Layout.blocked((1, 100, 3, 5), "NCHW64", bits=4)
    assert nchw64.sizes == (1, 2, 3, 5, 64)
    assert nchw64.strides == (2 * 3 * 5 * 64, 3 * 5 * 64, 5 * 64, 64, 1)
    assert nchw64.nbytes == 2 * 3 * 5 * 32 == 960
    assert nchw64.buffer_size() == 960 and nchw64.is_byte_addressable
    view = st.Layout.blocked_view((2, 128, 3, 5), "NCHW64", bits=4)
    assert view.bits == 4 and view.is_byte_addressable
    assert view.strides == st.Layout.blocked_view((2, 128, 3, 5), "NCHW64").strides
    # NCHW4 of int4: 2-byte blocks, byte-addressable too
    assert st.Layout.blocked((1, 6, 2, 2), "NCHW4", bits=4).is_byte_addressable
    assert st.Layout.blocked((1, 6, 2, 2), "NCHW4", bits=4).nbytes == 2 * 2 * 2 * 2


@pytest.mark.parametrize("sizes", [(1, 100, 3, 5), (2, 64, 1, 2), (1, 1, 2, 3), (1, 130, 2, 1)])
def test_nchw64_bytes(sizes):
    """Channel c of pixel (n, h, w): byte (c % 64) // 2 of the pixel's 32-byte block, low
    nibble when c is even (MegEngine NCHW64, CUTLASS NC64HW64)."""
    n_, c_, h_, w_ = sizes
    L = st.Layout.blocked(sizes, "NCHW64", bits=4)
    blocks = -(-c_ // 64)
    for n, c, h, w in all_indices(sizes):
        e = L.offset_of((n, c // 64, h, w, c % 64))
        block = ((n * blocks + c // 64) * h_ + h) * w_ + w
        assert e // 2 == 32 * block + (c % 64) // 2
        assert e % 2 == c % 2       # 0: low nibble
    assert L.nbytes == n_ * blocks * h_ * w_ * 32


def test_empty_and_size_one():
    assert st.Layout((0, 3), bits=4).nbytes == 0
    assert st.Layout((0, 3), bits=4).buffer_size() == 0
    assert st.Layout((3, 0), (-5, 3), offset=-3, bits=4).is_byte_addressable
    assert st.Layout((), bits=4).nbytes == 1            # a scalar: one element, one byte
    assert st.Layout((), offset=1, bits=4).nbytes == 1  # the high nibble of byte 0
    assert not st.Layout((), offset=1, bits=4).is_byte_addressable
    assert st.Layout((1, 1, 4), (-7, 3, 1), offset=4, bits=4).is_byte_addressable
    assert st.buffer_size((0,), bits=4) == 0


# ---- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize("bits", [True, False, 4.0, "4", None.__class__])
def test_bits_of_the_wrong_type(bits):
    with pytest.raises(TypeError, match="bits"):
        st.Layout((2,), bits=bits)


@pytest.mark.parametrize(("bits", "itemsize"), [(0, 1), (-4, 1), (2, 1), (12, 1), (16, 1),
                                                (8, 2), (1, 1), (64, 4)])
def test_bits_of_the_wrong_value(bits, itemsize):
    with pytest.raises(ValueError, match=re.escape(f"got bits={bits}")):
        st.Layout((2,), itemsize=itemsize, bits=bits)
    with pytest.raises(ValueError, match="bits"):
        st.buffer_size((2,), itemsize=itemsize, bits=bits)


@pytest.mark.parametrize("itemsize", [2, 4, 8])
def test_bits_4_with_an_itemsize(itemsize):
    with pytest.raises(ValueError, match=rf"bits=4 with itemsize={itemsize}"):
        st.Layout((2,), itemsize=itemsize, bits=4)
    with pytest.raises(ValueError, match="bits=4 with itemsize"):
        st.Layout.packed((1, 8, 2, 2), "NHWC", itemsize=itemsize, bits=4)
    with pytest.raises(ValueError, match="bits=4 with itemsize"):
        st.Layout.blocked((1, 8, 2, 2), "NCHW4", itemsize=itemsize, bits=4)
    with pytest.raises(ValueError, match="bits=4 with itemsize"):
        st.Layout.blocked_view((1, 8, 2, 2), "NCHW4", itemsize=itemsize, bits=4)
    with pytest.raises(ValueError, match="bits=4 with itemsize"):
        st.buffer_size((2,), itemsize=itemsize, bits=4)


def test_bits_matching_the_itemsize_is_a_byte_layout():
    for itemsize in (1, 2, 4, 8, 3):
        L = st.Layout((2, 3), itemsize=itemsize, bits=8 * itemsize)
        assert L == st.Layout((2, 3), itemsize=itemsize)
        assert hash(L) == hash(st.Layout((2, 3), itemsize=itemsize))
        assert L.bits == 8 * itemsize and L.itemsize == itemsize


@pytest.mark.parametrize("name", ["itemsize", "byte_strides", "byte_offset"])
def test_no_byte_quantities_for_4_bit(name):
    L = st.Layout((2, 3), bits=4)
    with pytest.raises(ValueError, match=name) as info:
        getattr(L, name)
    message = str(info.value)
    for word in ("4-bit", "bits", "nbytes", "is_byte_addressable"):
        assert word in message


def test_buffer_size_arguments():
    with pytest.raises(TypeError, match="itemsize"):
        st.buffer_size((2, 3))
    with pytest.raises(ValueError, match="align"):
        st.buffer_size((2, 3), bits=4, align=0)
    with pytest.raises(ValueError, match="align"):
        st.Layout((2, 3), bits=4).buffer_size(-4)
    with pytest.raises(TypeError, match="align"):
        st.Layout((2, 3), bits=4).buffer_size(4.0)
    with pytest.raises(ValueError, match="strides"):
        st.buffer_size((2, 3), (1,), bits=4)
    with pytest.raises(ValueError, match="sizes"):
        st.buffer_size((-2, 3), bits=4)


def test_error_messages_name_the_stride_or_offset():
    def error(*args, **kwargs):
        return st.Layout(*args, bits=4, **kwargs).byte_addressable_error()

    assert error((4,), offset=3).startswith(
        "offset 3 of 4-bit elements is odd: element 3 starts in the middle of byte 1")
    assert error((2, 3), (3, 1)).startswith("stride 3 of dim 0 is odd")
    assert error((2, 3), (4, 3)).startswith("stride 3 of dim 1 is odd")
    assert error((2, 3), (-4, 1)).startswith("stride -4 of dim 0 is negative")
    assert error((2, 3), (1, 1)).startswith("stride 1 of dim 1 is odd and dim 0 has stride 1")
    assert error((2, 3), (4, 1), offset=2) is None
    assert error((2, 1, 3), (4, 1, 1)) is None      # the size-1 dim's stride 1 is ignored


# ---- overflow -------------------------------------------------------------------------------


def test_huge_layouts_count_bytes_exactly():
    L = st.Layout((INT64_MAX,), bits=4)                 # elements 0 .. 2**63 - 2
    assert L.nbytes == 2**62 and L.buffer_size(align=1) == 2**62
    assert L.buffer_size() == 2**62
    assert st.buffer_size((INT64_MAX,), bits=4, align=1) == 2**62
    with pytest.raises(OverflowError):
        st.Layout((INT64_MAX + 1,), bits=4)
    with pytest.raises(OverflowError):
        st.Layout((2, 2), (2**62, 2**62), bits=4)
    # the widest span there is: 2**63 - 1 offsets, 2**62 bytes, and roundings that still fit
    big = st.Layout((2,), (2**63 - 2,), offset=-(2**62 - 1), bits=4)
    assert big.span == (-(2**62 - 1), 2**62 - 1)
    assert big.buffer_size(align=1) == 2**62
    assert big.buffer_size(align=2**62 - 1) == 2**63 - 2
    assert big.buffer_size(align=INT64_MAX) == INT64_MAX
    with pytest.raises(ValueError, match="below offset 0"):
        _ = big.nbytes


# ---- value semantics ------------------------------------------------------------------------


def test_equality_hash_repr_and_pickling():
    L4 = st.Layout((2, 3), (4, 1), offset=2, bits=4)
    L1 = st.Layout((2, 3), (4, 1), offset=2)
    assert L4 != L1 and L1 != L4
    assert L4 == st.Layout((2, 3), (4, 1), offset=2, itemsize=1, bits=4)
    assert hash(L4) == hash(st.Layout([2, 3], [4, 1], offset=2, bits=4))
    assert len({L4, L1}) == 2
    assert repr(L4) == "Layout(sizes=(2, 3), strides=(4, 1), offset=2, bits=4)"
    assert repr(L1) == "Layout(sizes=(2, 3), strides=(4, 1), offset=2, itemsize=1)"
    assert eval(repr(L4), {"Layout": st.Layout}) == L4
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        back = pickle.loads(pickle.dumps(L4, protocol))
        assert back == L4 and back.bits == 4 and hash(back) == hash(L4)
    assert copy.deepcopy(L4) == L4 and copy.copy(L4) == L4


def test_byte_layouts_pickle_as_before():
    """A byte layout reduces to the four fields it always had (readable by older versions),
    and a four-field pickle of an older version still loads."""
    L = st.Layout((2, 3), (5, 1), offset=1, itemsize=4)
    assert L.__reduce__() == (_rebuild, ((2, 3), (5, 1), 1, 4))
    assert _rebuild((2, 3), (5, 1), 1, 4) == L
    assert st.Layout((2, 3), bits=4).__reduce__()[1][-1] == 4
    assert L.bits == 32 and L.is_byte_addressable


def test_shares_memory_counts_nibbles():
    """4-bit elements share memory when they are the same nibble; a byte element covers both
    nibbles of each of its bytes."""
    def nibbles(L):
        per = 1 if L.bits == 4 else 2 * L.itemsize
        return {per * e + j for e in brute_offsets(L.sizes, L.strides, L.offset)
                for j in range(per)}

    cases = [
        (st.Layout((4,), (2,), bits=4), st.Layout((4,), (2,), offset=1, bits=4)),
        (st.Layout((4,), (2,), bits=4), st.Layout((2,), (3,), offset=1, bits=4)),
        (st.Layout((3,), (2,), offset=1, bits=4), st.Layout((1,), offset=1)),
        (st.Layout((3,), (2,), offset=1, bits=4), st.Layout((1,), offset=3)),
        (st.Layout((2,), offset=1, itemsize=2), st.Layout((3,), (-1,), offset=3, bits=4)),
        (st.Layout((2,), offset=1, itemsize=2), st.Layout((3,), (-1,), offset=7, bits=4)),
    ]
    for a, b in cases:
        expected = bool(nibbles(a) & nibbles(b))
        assert a.shares_memory(b) is expected and b.shares_memory(a) is expected, (a, b)


@given(layout_args(max_rank=3), layout_args(max_rank=3), hst.sampled_from([4, 8, 16]))
def test_shares_memory_against_brute_force(a, b, bits_b):
    def nibbles(L):
        per = L.bits // 4
        return {per * e + j for e in brute_offsets(L.sizes, L.strides, L.offset)
                for j in range(per)}

    La = st.Layout(*a[:2], offset=a[2], bits=4)
    Lb = st.Layout(*b[:2], offset=b[2], itemsize=max(1, bits_b // 8), bits=bits_b)
    assert La.shares_memory(Lb) is bool(nibbles(La) & nibbles(Lb))
