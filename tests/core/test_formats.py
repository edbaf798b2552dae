"""Layout labels: parsing, physical orders and packed strides, checked against numpy.

numpy is the oracle: a tensor stored in physical order ``order`` is
``np.empty([sizes[a] for a in order]).transpose(inverse(order))``; its strides divided by the
itemsize are the packed strides of that label.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as hst
from strategies import inverse_permutation, ref_packed_strides

import strided as st
from strided.formats import CANONICAL, LABEL_LETTERS, label_order, physical_order

ALL_LABELS = [(rank, "".join(p)) for rank, letters in CANONICAL.items()
              for p in itertools.permutations(letters)]
# the image letters of rank 3 (sizes (C, H, W)): the same orders, reported in DHW letters
IMAGE_LABELS = [(3, "".join(p)) for p in itertools.permutations("CHW")]


def numpy_packed_strides(sizes, order, itemsize=8):
    """Element strides of a packed numpy array stored in `order` (outermost first)."""
    dtype = {1: np.uint8, 2: np.int16, 4: np.int32, 8: np.float64}[itemsize]
    phys = np.empty([sizes[a] for a in order], dtype=dtype)
    logical = phys.transpose(inverse_permutation(order))
    assert logical.shape == tuple(sizes)
    return tuple(s // itemsize for s in logical.strides)


def test_canonical_letters():
    assert CANONICAL == {2: "HW", 3: "DHW", 4: "NCHW", 5: "NCDHW"}
    assert len(ALL_LABELS) == 2 + 6 + 24 + 120


def test_label_letters():
    # every letter set of each rank, the canonical one first; rank 3 also takes CHW
    assert LABEL_LETTERS == {2: ("HW",), 3: ("DHW", "CHW"), 4: ("NCHW",), 5: ("NCDHW",)}
    assert {rank: sets[0] for rank, sets in LABEL_LETTERS.items()} == CANONICAL


@pytest.mark.parametrize(("rank", "label"), IMAGE_LABELS)
def test_every_image_label_of_rank_3(rank, label):
    order = label_order(label, rank)
    assert tuple("CHW".index(ch) for ch in label) == order
    assert physical_order(label, rank) == order
    # the DHW label of the same order, D read as C
    twin = label.replace("C", "D")
    assert order == label_order(twin, rank)
    for sizes in [(2, 3, 4), (1, 3, 1), (3, 0, 2)]:
        assert st.packed_strides(sizes, label) == st.packed_strides(sizes, twin)
        assert st.packed_strides(sizes, label) == ref_packed_strides(sizes, order)
    for itemsize in (1, 8):
        assert st.packed_strides((2, 3, 4), label) == numpy_packed_strides((2, 3, 4), order,
                                                                          itemsize)
    # reported in the canonical letters (Layout.label/labels keep their answers)
    P = st.Layout.packed((2, 3, 4), label)
    assert (P.label, P.labels) == (twin, (twin,))
    assert P.is_contiguous == (label == "CHW")


@pytest.mark.parametrize(("rank", "label"), ALL_LABELS)
def test_every_label_of_ranks_2_to_5(rank, label):
    letters = CANONICAL[rank]
    order = label_order(label, rank)
    # a permutation, read letter by letter from the label
    assert sorted(order) == list(range(rank))
    assert tuple(letters.index(ch) for ch in label) == order
    assert physical_order(label, rank) == order
    # packed strides agree with numpy (sizes all > 1 and distinct, then with 1s and a 0)
    sizes = (2, 3, 4, 5, 6)[:rank]
    for itemsize in (1, 8):
        assert st.packed_strides(sizes, label) == numpy_packed_strides(sizes, order, itemsize)
    sizes1 = (1, 3, 1, 5, 2)[:rank]
    assert st.packed_strides(sizes1, label) == numpy_packed_strides(sizes1, order)
    sizes0 = (3, 0, 2, 4, 2)[:rank]   # a size-0 dim counts as 1 (numpy 2 zeroes empty strides)
    assert st.packed_strides(sizes0, label) == ref_packed_strides(sizes0, order)
    # the label names a tuple order
    assert st.packed_strides(sizes, label) == st.packed_strides(sizes, order)
    # the innermost letter has stride 1, the outermost the product of the others
    strides = st.packed_strides(sizes, label)
    assert strides[order[-1]] == 1
    assert strides[order[0]] * sizes[order[0]] == np.prod(sizes)
    # round trip: a packed layout with all dims > 1 has exactly this label
    P = st.Layout.packed(sizes, label, itemsize=4)
    assert P.label == label
    assert P.labels == (label,)
    assert P.order == order
    assert P.is_packed
    assert P.is_contiguous == (label == letters)
    assert P.strides == numpy_packed_strides(sizes, order, 4)
    assert P.byte_strides == tuple(s * 4 for s in strides)


@given(hst.sampled_from(ALL_LABELS).flatmap(lambda rl: hst.tuples(
    hst.just(rl), hst.lists(hst.integers(2, 6), min_size=rl[0], max_size=rl[0]))))
def test_label_round_trip_random_sizes(args):
    (rank, label), sizes = args
    order = label_order(label, rank)
    P = st.Layout.packed(sizes, label)
    assert P.strides == numpy_packed_strides(sizes, order)
    assert P.label == label
    assert P.labels == (label,)


@given(hst.sampled_from(ALL_LABELS).flatmap(lambda rl: hst.tuples(
    hst.just(rl), hst.lists(hst.integers(1, 4), min_size=rl[0], max_size=rl[0]))))
def test_label_with_size_1_dims_is_among_labels(args):
    (rank, label), sizes = args
    P = st.Layout.packed(sizes, label)
    assert P.strides == numpy_packed_strides(sizes, label_order(label, rank))
    assert label in P.labels
    assert P.label == P.labels[0]
    if CANONICAL[rank] in P.labels:
        assert P.label == CANONICAL[rank]


@pytest.mark.parametrize("rank", range(7))
def test_c_and_f_for_ranks_0_to_6(rank):
    for sizes in [(2, 3, 4, 5, 6, 7)[:rank], (1, 3, 1, 2, 1, 4)[:rank], (4,) * rank]:
        for itemsize, dtype in ((1, np.uint8), (8, np.float64)):
            c = np.empty(sizes, dtype=dtype, order="C").strides
            f = np.empty(sizes, dtype=dtype, order="F").strides
            assert st.packed_strides(sizes, "C") == tuple(s // itemsize for s in c)
            assert st.packed_strides(sizes) == tuple(s // itemsize for s in c)
            assert st.packed_strides(sizes, None) == tuple(s // itemsize for s in c)
            assert st.packed_strides(sizes, "F") == tuple(s // itemsize for s in f)
            assert st.Layout.packed(sizes, "F", itemsize=itemsize).byte_strides == f
            assert st.Layout.packed(sizes, "C", itemsize=itemsize).byte_strides == c
        assert physical_order("C", rank) == tuple(range(rank))
        assert physical_order("F", rank) == tuple(reversed(range(rank)))


@pytest.mark.parametrize("rank", range(6))
def test_every_tuple_order(rank):
    sizes = (2, 3, 4, 5, 6)[:rank]
    for order in itertools.permutations(range(rank)):
        expected = numpy_packed_strides(sizes, order)
        assert st.packed_strides(sizes, order) == expected
        assert st.packed_strides(sizes, list(order)) == expected
        assert st.packed_strides(sizes, tuple(a - rank for a in order)) == expected
        assert physical_order(tuple(a - rank for a in order), rank) == order
        assert st.Layout.packed(sizes, order).order == order


def test_f_and_c_labels_are_the_named_row_and_column_major():
    assert st.packed_strides((2, 3), "F") == st.packed_strides((2, 3), "WH")
    assert st.packed_strides((2, 3, 4), "F") == st.packed_strides((2, 3, 4), "WHD")
    assert st.packed_strides((2, 3, 4, 5), "C") == st.packed_strides((2, 3, 4, 5), "NCHW")
    assert st.packed_strides((2, 3, 4, 5, 6), "F") == st.packed_strides((2, 3, 4, 5, 6), "WHDCN")


def test_label_order_examples():
    assert label_order("NHWC", 4) == (0, 2, 3, 1)
    assert label_order("CHWN", 4) == (1, 2, 3, 0)
    assert label_order("NDHWC", 5) == (0, 2, 3, 4, 1)
    assert label_order("WH", 2) == (1, 0)
    assert label_order("HWD", 3) == (1, 2, 0)
    assert label_order("HWC", 3) == (1, 2, 0)
    assert label_order("CHW", 3) == (0, 1, 2)
    assert label_order("WCH", 3) == (2, 0, 1)


def test_image_label_examples():
    # DESIGN.md "Image names": sizes (C, H, W); "CHW" planar, "HWC" channels-last
    assert st.packed_strides((3, 4, 5), "HWC") == (1, 15, 3)
    assert st.packed_strides((3, 4, 5), "CHW") == (20, 5, 1) == st.packed_strides((3, 4, 5))
    assert st.Layout.packed((3, 4, 5), "HWC").strides == (1, 15, 3)
    # "C" alone is C (row-major) order, never "channels", at every rank
    assert st.packed_strides((3, 4, 5), "C") == (20, 5, 1)


def test_broadcast_flags_with_labels_match_numpy_broadcasting():
    # a broadcast axis is stored as size 1: numpy's strides of the packed array of the
    # non-broadcast sizes, broadcast to the full sizes
    for sizes, label in [((2, 3, 4, 5), "NCHW"), ((2, 3, 4, 5), "NHWC"), ((2, 3, 4, 5), "CHWN"),
                         ((3, 4, 5), "HWC"), ((3, 4, 5), "WCH"), ((3, 4, 5), "HWD")]:
        order = label_order(label, len(sizes))
        for flags in itertools.product((False, True), repeat=len(sizes)):
            small = tuple(1 if f else n for n, f in zip(sizes, flags, strict=True))
            phys = np.empty([small[a] for a in order], dtype=np.uint8)
            arr = np.broadcast_to(phys.transpose(inverse_permutation(order)), sizes)
            got = st.packed_strides(sizes, label, broadcast=flags)
            assert all(f or n == 1 or g == s
                       for g, s, n, f in zip(got, arr.strides, sizes, flags, strict=True))
            assert all(g == 0 for g, f in zip(got, flags, strict=True) if f)
