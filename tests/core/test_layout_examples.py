"""Every example of the layout documentation (DirectML, MegEngine; DESIGN.md section 1) as a test.

The expected values are written out by hand from the documentation, or computed by a direct
transcription of the documentation's reference code (DirectML's ``CalculateStrides`` and
``DMLCalcBufferTensorSize``), never by strided itself.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as hst

import strided as st
from strided.formats import blocked_shape, parse_blocked

# ---- element offsets -----------------------------------------------------------------------


def test_offset_of_element_h_dhw():
    # sizes (2, 2, 3) in DHW order: A..L, strides (6, 3, 1); H is index (1, 0, 1).
    assert st.packed_strides((2, 2, 3)) == (6, 3, 1)
    assert st.packed_strides((2, 2, 3), "DHW") == (6, 3, 1)
    assert st.offset_of((1, 0, 1), (6, 3, 1)) == 7
    L = st.Layout((2, 2, 3), (6, 3, 1))
    assert L.offset_of((1, 0, 1)) == 7
    letters = "ABCDEFGHIJKL"
    table = {L.offset_of(ix): letters[k] for k, ix in enumerate(itertools.product(
        range(2), range(2), range(3)))}
    assert table[7] == "H"
    assert sorted(table) == list(range(12))


def test_offset_of_with_offset():
    assert st.offset_of((1, 0, 1), (6, 3, 1), 10) == 17
    assert st.Layout((2, 2, 3), offset=10).offset_of((1, 0, 1)) == 17
    assert st.offset_of((), ()) == 0
    assert st.offset_of((), (), 5) == 5


# ---- named layouts -------------------------------------------------------------------------


def test_nhwc_and_nchw_strides_of_1_1_3_5():
    assert st.packed_strides((1, 1, 3, 5), "NHWC") == (15, 1, 5, 1)
    assert st.packed_strides((1, 1, 3, 5), "NCHW") == (15, 15, 5, 1)
    assert st.packed_strides((1, 1, 3, 5)) == (15, 15, 5, 1)
    assert st.Layout.packed((1, 1, 3, 5), "NHWC").strides == (15, 1, 5, 1)


def test_row_and_column_major_2x3():
    assert st.packed_strides((2, 3)) == (3, 1)
    assert st.packed_strides((2, 3), "HW") == (3, 1)
    assert st.packed_strides((2, 3), "C") == (3, 1)
    assert st.packed_strides((2, 3), "WH") == (1, 2)
    assert st.packed_strides((2, 3), "F") == (1, 2)
    row, col = st.Layout((2, 3), (3, 1)), st.Layout((2, 3), (1, 2))
    assert row.label == "HW" and col.label == "WH"
    assert row.is_contiguous and not col.is_contiguous
    assert row.is_packed and col.is_packed
    # element (1, 0) ("D") is at offset 3 row-major, 1 column-major
    assert row.offset_of((1, 0)) == 3 and col.offset_of((1, 0)) == 1


def test_other_named_layouts_by_hand():
    sizes4 = (2, 3, 4, 5)   # N C H W
    assert st.packed_strides(sizes4, "NCHW") == (60, 20, 5, 1)
    assert st.packed_strides(sizes4, "NHWC") == (60, 1, 15, 3)
    assert st.packed_strides(sizes4, "CHWN") == (1, 40, 10, 2)
    assert st.packed_strides(sizes4, "CNHW") == (20, 40, 5, 1)
    sizes5 = (2, 3, 4, 5, 6)   # N C D H W
    assert st.packed_strides(sizes5, "NCDHW") == (360, 120, 30, 6, 1)
    assert st.packed_strides(sizes5, "NDHWC") == (360, 1, 90, 18, 3)
    assert st.packed_strides((2, 3, 4), "WHD") == (1, 2, 6)
    assert st.packed_strides((2, 3, 4), "DHW") == (12, 4, 1)


# ---- padding -------------------------------------------------------------------------------


def test_height_stride_5_padding():
    # A B C x x D E F x x: a 2x3 tensor with a height-stride of 5.
    L = st.Layout((2, 3), (5, 1))
    assert L.is_padded
    assert not L.is_packed
    assert not L.is_contiguous
    assert not L.overlaps
    assert not L.is_broadcast
    offsets = {name: L.offset_of(ix) for name, ix in zip(
        "ABCDEF", itertools.product(range(2), range(3)), strict=True)}
    assert offsets == {"A": 0, "B": 1, "C": 2, "D": 5, "E": 6, "F": 7}
    assert L.span == (0, 7)
    # the smallest buffer holds 8 elements; the docs' drawing (10 elements) holds it too
    assert st.buffer_size((2, 3), (5, 1), itemsize=1, align=1) == 8
    assert L.buffer_size(align=1) == 8
    assert L.nbytes == 8
    assert st.Layout((2, 3), (5, 1), itemsize=4).nbytes == 32
    docs_buffer = list("ABCxxDEFxx")
    assert [docs_buffer[L.offset_of(ix)] for ix in itertools.product(range(2), range(3))] == \
        list("ABCDEF")


# ---- broadcasting --------------------------------------------------------------------------


def test_stride_0_broadcast():
    L = st.Layout((2, 3), (0, 1))
    assert L.is_broadcast
    assert L.overlaps
    assert not L.is_packed
    assert not L.is_padded   # the distinct offsets 0, 1, 2 fill the span
    assert [L.offset_of((i, j)) for i in range(2) for j in range(3)] == [0, 1, 2, 0, 1, 2]
    assert L.span == (0, 2)
    assert L.buffer_size(align=1) == 3
    assert st.Layout((3,)).broadcast_to((2, 3)) == L


def directml_calculate_strides(layout, sizes, broadcast):
    """Direct transcription of DirectML's ``CalculateStrides`` helper (docs, "Broadcasting")."""
    N, C, H, W = range(4)
    n = 1 if broadcast[N] else sizes[N]  # noqa: F841 (unused by the reference too)
    c = 1 if broadcast[C] else sizes[C]
    h = 1 if broadcast[H] else sizes[H]
    w = 1 if broadcast[W] else sizes[W]
    if layout == "NCHW":
        n_stride = 0 if broadcast[N] else c * h * w
        c_stride = 0 if broadcast[C] else h * w
        h_stride = 0 if broadcast[H] else w
        w_stride = 0 if broadcast[W] else 1
    else:   # NHWC
        n_stride = 0 if broadcast[N] else h * w * c
        h_stride = 0 if broadcast[H] else w * c
        w_stride = 0 if broadcast[W] else c
        c_stride = 0 if broadcast[C] else 1
    return (n_stride, c_stride, h_stride, w_stride)


def test_calculate_strides_docs_example():
    flags = (False, True, False, False)
    assert st.packed_strides((2, 3, 4, 5), "NHWC", broadcast=flags) == (20, 0, 5, 1)
    assert st.Layout.packed((2, 3, 4, 5), "NHWC", broadcast=flags).strides == (20, 0, 5, 1)


@pytest.mark.parametrize(
    ("label", "flags", "expected"),
    [
        # worked out by hand for sizes (2, 3, 4, 5)
        ("NCHW", (False, True, False, False), (20, 0, 5, 1)),
        ("NCHW", (True, False, False, False), (0, 20, 5, 1)),
        ("NCHW", (False, False, True, False), (15, 5, 0, 1)),
        ("NCHW", (False, False, False, True), (12, 4, 1, 0)),
        ("NCHW", (True, True, True, True), (0, 0, 0, 0)),
        ("NCHW", (False, False, False, False), (60, 20, 5, 1)),
        ("NHWC", (False, False, False, False), (60, 1, 15, 3)),
        ("NHWC", (False, False, True, False), (15, 1, 0, 3)),
        ("NHWC", (True, False, False, True), (0, 1, 3, 0)),
        ("NHWC", (False, True, True, False), (5, 0, 0, 1)),
    ],
)
def test_calculate_strides_by_hand(label, flags, expected):
    assert st.packed_strides((2, 3, 4, 5), label, broadcast=flags) == expected
    assert directml_calculate_strides(label, (2, 3, 4, 5), flags) == expected


@given(
    hst.sampled_from(["NCHW", "NHWC"]),
    hst.tuples(*[hst.integers(1, 7)] * 4),
    hst.tuples(*[hst.booleans()] * 4),
)
def test_calculate_strides_matches_directml_reference(label, sizes, flags):
    assert st.packed_strides(sizes, label, broadcast=flags) == \
        directml_calculate_strides(label, sizes, flags)


def test_broadcast_flags_accept_numpy_bools():
    flags = np.array([False, True, False, False])
    assert st.packed_strides((2, 3, 4, 5), "NHWC", broadcast=list(flags)) == (20, 0, 5, 1)


# ---- buffer sizes (DMLCalcBufferTensorSize) --------------------------------------------------


UINT = 2**32      # C's unsigned int (UINT) wraps modulo 2**32 ...
UINT64 = 2**64    # ... and UINT64 modulo 2**64


def dml_calc_buffer_tensor_size(element_size, sizes, strides=None):
    """Direct transcription of DirectML's published ``DMLCalcBufferTensorSize``, with C's types.

    ``minimumImpliedSizeInBytes`` is a UINT64: the packed product (sizes[0], then ``*=`` UINT
    sizes and the element size) is 64-bit. With strides, every operand is a UINT:
    ``indexOfLastElement += (sizes[i] - 1) * strides[i]`` and
    ``(indexOfLastElement + 1) * elementSizeInBytes`` are evaluated in 32 bits, and only their
    result is widened. The rounding ``(x + 3) & ~3`` is 64-bit.
    """
    if strides is None:
        total = sizes[0] % UINT64
        for n in sizes[1:]:
            total = total * n % UINT64
        total = total * element_size % UINT64
    else:
        last = 0
        for n, s in zip(sizes, strides, strict=True):
            last = (last + (n - 1) % UINT * s) % UINT
        total = (last + 1) * element_size % UINT
    return (total + 3) % UINT64 & ~3 % UINT64


def test_buffer_size_docs_examples():
    # NHWC (1, 1, 3, 5), 16-bit elements: last index 14, 30 bytes, rounded up to 32
    assert st.buffer_size((1, 1, 3, 5), (15, 1, 5, 1), itemsize=2) == 32
    assert st.Layout.packed((1, 1, 3, 5), "NHWC", itemsize=2).buffer_size() == 32
    assert st.buffer_size((1, 1, 3, 5), (15, 1, 5, 1), itemsize=2, align=1) == 30
    assert dml_calc_buffer_tensor_size(2, (1, 1, 3, 5), (15, 1, 5, 1)) == 32
    # odd sizes with 1-byte elements: 3 * 5 * 7 = 105 -> 108
    assert st.buffer_size((3, 5, 7), itemsize=1) == 108
    assert st.buffer_size((3, 5, 7), itemsize=1, align=1) == 105
    assert st.buffer_size((1,), itemsize=1) == 4
    assert st.buffer_size((1,), itemsize=1, align=1) == 1
    assert st.buffer_size((5,), (2,), itemsize=1) == 12   # last index 8 -> 9 bytes -> 12
    assert st.buffer_size((2, 3), (5, 1), itemsize=1) == 8
    assert st.buffer_size((2, 3), (5, 1), itemsize=4, align=1) == 32
    # align other than 1 and 4
    assert st.buffer_size((3, 5, 7), itemsize=1, align=64) == 128
    assert st.buffer_size((3, 5, 7), itemsize=1, align=3) == 105
    # empty tensors and scalars
    assert st.buffer_size((0, 3), itemsize=4) == 0
    assert st.buffer_size((), itemsize=2) == 4
    assert st.buffer_size((), itemsize=2, align=1) == 2
    # negative strides: the span counts, not the offset of the last element
    assert st.buffer_size((4,), (-1,), itemsize=4, align=1) == 16
    assert st.buffer_size((3, 2), (-2, 1), itemsize=1) == 8   # span -4..1: 6 -> 8


@given(
    hst.lists(hst.integers(1, 6), min_size=1, max_size=5).flatmap(
        lambda sizes: hst.tuples(
            hst.just(tuple(sizes)),
            hst.tuples(*[hst.integers(0, 40)] * len(sizes)),
            hst.sampled_from([1, 2, 4, 8]),
        )
    )
)
def test_buffer_size_matches_directml_reference(args):
    sizes, strides, itemsize = args
    expected = dml_calc_buffer_tensor_size(itemsize, sizes, strides)
    assert st.buffer_size(sizes, strides, itemsize=itemsize) == expected
    assert st.Layout(sizes, strides, itemsize=itemsize).buffer_size() == expected
    assert st.Layout(sizes, strides, itemsize=itemsize).buffer_size(4) == expected
    packed = dml_calc_buffer_tensor_size(itemsize, sizes)
    assert st.buffer_size(sizes, itemsize=itemsize) == packed
    assert st.buffer_size(sizes, None, itemsize=itemsize) == packed


def test_buffer_size_does_not_wrap_at_32_bits():
    # DirectML's UINT index sum wraps here; strided is exact. Sizes (3, 2**31), packed strides
    # (2**31, 1): the last element is at 2 * 2**31 + 2**31 - 1 = 3 * 2**31 - 1, but
    # (3 - 1) * 2**31 is 2**32, which a UINT holds as 0.
    sizes, strides = (3, 2**31), (2**31, 1)
    exact = 3 * 2**31
    assert st.buffer_size(sizes, strides, itemsize=1) == exact
    assert st.buffer_size(sizes, itemsize=1) == exact
    assert dml_calc_buffer_tensor_size(1, sizes, strides) == 2**31      # the wrapped index + 1
    # without strides the reference multiplies in 64 bits, and agrees
    assert dml_calc_buffer_tensor_size(1, sizes) == exact
    # with 4-byte elements the byte count wraps too: (2**31 - 1 + 1) * 4 = 2**33 = 0 as a UINT
    assert st.buffer_size(sizes, strides, itemsize=4) == 4 * exact
    assert dml_calc_buffer_tensor_size(4, sizes, strides) == 0
    # (2, 2**31): no index wrap (2**32 - 1 fits a UINT), but the byte count does
    assert dml_calc_buffer_tensor_size(4, (2, 2**31), (2**31, 1)) == 0
    assert st.buffer_size((2, 2**31), (2**31, 1), itemsize=4) == 2**34


def test_directml_reference_is_exact_below_the_wrap():
    # where nothing wraps, the reference and strided agree with strides and without
    for sizes, strides, itemsize in [((1, 2**15, 2**15), (2**30, 2**15, 1), 2),
                                     ((7, 3, 5), (1, 70, 14), 8), ((2**20, 2**10), None, 8)]:
        expected = st.buffer_size(sizes, strides, itemsize=itemsize)
        assert dml_calc_buffer_tensor_size(itemsize, sizes, strides) == expected


# ---- MegEngine: byte strides ---------------------------------------------------------------


def test_megengine_int32_byte_strides():
    L = st.Layout((2, 5), itemsize=4)
    assert L.strides == (5, 1)
    assert L.byte_strides == (20, 4)
    assert L.byte_strides == np.empty((2, 5), dtype=np.int32).strides
    assert L.nbytes == 40 == np.empty((2, 5), dtype=np.int32).nbytes
    assert st.Layout((2, 5), offset=3, itemsize=4).byte_offset == 12


# ---- labels with size-1 dims ---------------------------------------------------------------


def test_labels_with_size_1_dims():
    L = st.Layout((1, 1, 3, 5), (15, 1, 5, 1))
    assert L.label == "NCHW"   # N and C have size 1: the canonical order fits
    assert "NHWC" in L.labels
    assert "NCHW" in L.labels
    assert L.labels[0] == "NCHW"
    assert "NCWH" not in L.labels   # H outside W is fixed by the strides
    # H, W fixed in that order, N and C anywhere: 4! / 2 = 12 labels
    assert len(L.labels) == 12
    assert len(set(L.labels)) == 12
    assert all(lab.index("H") < lab.index("W") for lab in L.labels)


def test_labels_without_size_1_dims():
    L = st.Layout.packed((2, 3, 4, 5), "NHWC")
    assert L.label == "NHWC"
    assert L.labels == ("NHWC",)
    assert st.Layout((2, 3), (5, 1)).label is None   # padded
    assert st.Layout((2, 3), (5, 1)).labels == ()
    assert st.Layout((2, 3, 4, 5, 6, 7)).label is None   # rank 6 has no names
    assert st.Layout((6,)).label is None
    assert st.Layout(()).labels == ()


def test_label_of_broadcast_layout():
    L = st.Layout((2, 3, 4, 5), (20, 0, 5, 1))
    assert "NHWC" in L.labels
    assert "NCHW" in L.labels
    assert L.is_broadcast


def test_order_examples():
    assert st.Layout.packed((2, 3, 4, 5), "NHWC").order == (0, 2, 3, 1)
    assert st.Layout((2, 3), (1, 2)).order == (1, 0)
    assert st.Layout((2, 3, 4)).order == (0, 1, 2)


# ---- blocked formats -----------------------------------------------------------------------


def test_blocked_shapes():
    assert blocked_shape((2, 6, 3, 3), "NCHW4") == (2, 2, 3, 3, 4)
    assert blocked_shape((2, 8, 3, 3), "NCHW4") == (2, 2, 3, 3, 4)
    assert blocked_shape((1, 3, 2, 2), "NCHW4") == (1, 1, 2, 2, 4)
    assert blocked_shape((2, 5, 3, 7), "CHWN4") == (2, 3, 7, 2, 4)
    assert blocked_shape((2, 17, 3, 3), "nChw16c") == (2, 2, 3, 3, 16)
    assert blocked_shape((2, 16, 3, 3), "nChw16c") == (2, 1, 3, 3, 16)
    assert blocked_shape((1, 33, 1, 1), "NCHW32") == (1, 2, 1, 1, 32)
    assert blocked_shape((1, 0, 1, 1), "NCHW4") == (1, 0, 1, 1, 4)
    assert st.Layout.blocked((1, 8, 2, 2), "NCHW4").strides == (32, 16, 8, 4, 1)
    assert st.Layout.blocked((1, 8, 2, 2), "NCHW4", itemsize=2).byte_strides == (64, 32, 16, 8, 2)
    assert parse_blocked("nChw16c").block == 16
    assert parse_blocked("CHWN4").chwn


@pytest.mark.parametrize(
    ("sizes", "fmt"),
    [
        ((2, 8, 3, 3), "NCHW4"),
        ((1, 4, 1, 1), "NCHW4"),
        ((3, 12, 2, 5), "NCHW4"),
        ((2, 16, 2, 3), "nChw16c"),
        ((2, 32, 2, 2), "nChw8c"),
        ((2, 64, 1, 2), "NCHW32"),
        ((3, 8, 2, 5), "CHWN4"),
        ((1, 4, 3, 2), "CHWN4"),
    ],
)
def test_blocked_view_matches_numpy(sizes, fmt):
    n, c, h, w = sizes
    spec = parse_blocked(fmt)
    x = spec.block
    chwn = spec.chwn
    phys_shape = (c // x, h, w, n, x) if chwn else (n, c // x, h, w, x)
    assert blocked_shape(sizes, fmt) == phys_shape
    phys = np.arange(math.prod(phys_shape)).reshape(phys_shape)
    for itemsize in (1, 4):
        V = st.Layout.blocked_view(sizes, fmt, itemsize=itemsize)
        assert V.sizes == (n, c // x, x, h, w)
        assert V.itemsize == itemsize
        assert V.is_packed
        assert not V.overlaps
        for ni, ci, hi, wi in itertools.product(range(n), range(c), range(h), range(w)):
            phys_index = (ci // x, hi, wi, ni, ci % x) if chwn else (ni, ci // x, hi, wi, ci % x)
            assert V.offset_of((ni, ci // x, ci % x, hi, wi)) == phys[phys_index]
    # the same through numpy: a strided view of phys equals phys transposed
    V = st.Layout.blocked_view(sizes, fmt, itemsize=phys.itemsize)
    view = np.lib.stride_tricks.as_strided(phys, V.sizes, V.byte_strides)
    axes = (3, 0, 4, 1, 2) if chwn else (0, 1, 4, 2, 3)
    np.testing.assert_array_equal(view, phys.transpose(axes))
    # and reading channel c of the logical tensor
    logical = view.reshape(n, c, h, w)
    for ci in range(c):
        ref = phys[ci // x, :, :, :, ci % x].transpose(2, 0, 1) if chwn else \
            phys[:, ci // x, :, :, ci % x]
        np.testing.assert_array_equal(logical[:, ci], ref)


@pytest.mark.parametrize(
    ("sizes", "fmt"),
    [((2, 6, 3, 3), "NCHW4"), ((1, 3, 2, 2), "NCHW4"), ((1, 17, 1, 1), "nChw16c"),
     ((2, 5, 1, 1), "CHWN4")],
)
def test_blocked_view_needs_whole_blocks(sizes, fmt):
    with pytest.raises(ValueError, match=f"C = {sizes[1]}"):
        st.Layout.blocked_view(sizes, fmt)


def test_blocked_view_physical_layout_offsets_cover_buffer():
    # C % x == 0: the view reaches every element of the physical buffer exactly once
    V = st.Layout.blocked_view((2, 8, 3, 3), "NCHW4")
    phys = st.Layout.blocked((2, 8, 3, 3), "NCHW4")
    offs = sorted(V.offset_of(ix) for ix in itertools.product(*map(range, V.sizes)))
    assert offs == list(range(phys.size))
