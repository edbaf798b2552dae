"""Image names (DESIGN.md section 1, "Image names"): rank 3 also takes the letters ``CHW``.

Sizes are given as ``(C, H, W)``; ``"CHW"`` is planar (row-major), ``"HWC"`` channels-last, and
any permutation of ``C``, ``H``, ``W`` is a label, the same order as the ``DHW`` label with
``D`` in place of ``C``. ``"C"`` alone stays C (row-major) order.

The oracle is written from the definition, without strides: the buffer of a tensor stored in
the physical order a label names is ``np.arange`` reshaped to the sizes in that order
(outermost first), so the logical element ``index`` holds its own element offset; the strides
of a label must reach exactly those offsets. The copies are checked against numpy and torch
(values equal, the result's strides those of the label).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as hst
from strategies import all_indices, ref_packed_strides

import strided as st
from strided.formats import CANONICAL, LABEL_LETTERS, label_order, physical_order

IMAGE_LABELS = ["".join(p) for p in itertools.permutations("CHW")]


def dhw(label):
    """The ``DHW`` label of the same order: ``D`` is the first axis, as ``C`` is."""
    return label.replace("C", "D")


def arange_offsets(sizes, label):
    """The element offset of every logical index of ``sizes`` stored as ``label``, by
    construction: ``np.arange`` in the physical shape, its axes put back in logical order."""
    order = ["CHW".index(letter) for letter in label]           # logical axis of each letter
    physical = np.arange(math.prod(sizes)).reshape([sizes[a] for a in order])
    return physical.transpose(np.argsort(order))                 # logical axis a <- its position


def oracle_strides(sizes, label):
    """Strides read off the arange buffer: the offset step along each axis of size > 1 (None
    where there is no step to read: a size-1 axis, or no element at all)."""
    logical = arange_offsets(sizes, label)
    strides = []
    for axis, n in enumerate(sizes):
        if n > 1 and logical.size:
            step = [0] * len(sizes)
            step[axis] = 1
            strides.append(int(logical[tuple(step)]))
        else:
            strides.append(None)     # no second index: any stride reaches the same offsets
    return strides


def assert_reaches_arange(sizes, strides, label):
    logical = arange_offsets(sizes, label)
    for index in all_indices(sizes):
        assert st.offset_of(index, strides) == logical[index], (sizes, label, index)


# ---- labels -> strides -----------------------------------------------------------------------


def test_the_letters_of_rank_3():
    assert LABEL_LETTERS[3] == ("DHW", "CHW")
    assert CANONICAL[3] == "DHW"         # labels are still reported in the canonical letters
    assert len(IMAGE_LABELS) == 6


def test_the_issue_examples():
    assert st.packed_strides((3, 4, 5), "HWC") == (1, 15, 3)
    assert st.packed_strides((3, 4, 5), "CHW") == (20, 5, 1)
    assert st.Layout.packed((3, 4, 5), "HWC").strides == (1, 15, 3)
    assert st.Layout.packed((3, 4, 5), "CHW").is_contiguous
    assert label_order("HWC", 3) == (1, 2, 0)
    assert label_order("CHW", 3) == (0, 1, 2)
    # "C" alone is C (row-major) order at every rank, never "channels"
    assert st.packed_strides((3, 4, 5), "C") == st.packed_strides((3, 4, 5), "CHW")
    assert st.packed_strides((4, 5), "C") == (5, 1)
    assert st.packed_strides((5,), "C") == (1,)


@pytest.mark.parametrize("label", IMAGE_LABELS)
def test_every_image_label_against_the_arange_oracle(label):
    for sizes in [(2, 3, 4), (3, 4, 5), (4, 3, 2), (5, 2, 3)]:
        strides = st.packed_strides(sizes, label)
        assert_reaches_arange(sizes, strides, label)
        assert list(strides) == oracle_strides(sizes, label)
        # the DHW label of the same order gives the same strides, order and layout
        assert strides == st.packed_strides(sizes, dhw(label))
        assert label_order(label, 3) == label_order(dhw(label), 3)
        assert physical_order(label, 3) == physical_order(dhw(label), 3)
        P = st.Layout.packed(sizes, label, itemsize=4)
        assert P == st.Layout.packed(sizes, dhw(label), itemsize=4)
        assert P.is_packed and P.is_contiguous == (label == "CHW")
        # reported in the canonical letters: the DHW spelling, one letter apart
        assert P.label == dhw(label)
        assert P.labels == (dhw(label),)
        assert P.label.replace("D", "C") == label
        # numpy's strides of the same buffer
        logical = arange_offsets(sizes, label)
        assert tuple(s // logical.itemsize for s in logical.strides) == strides


@given(hst.sampled_from(IMAGE_LABELS), hst.lists(hst.integers(0, 5), min_size=3, max_size=3))
def test_image_labels_with_sizes_0_and_1(label, sizes):
    strides = st.packed_strides(sizes, label)
    order = label_order(label, 3)
    # from the definition: a size-0 dim counts as 1, as numpy and torch do
    assert strides == ref_packed_strides(sizes, order)
    assert strides == st.packed_strides(sizes, dhw(label))
    assert_reaches_arange(sizes, strides, label)
    expected = oracle_strides(sizes, label)
    assert all(e is None or s == e for s, e in zip(strides, expected, strict=True))
    P = st.Layout.packed(sizes, label)
    assert P.is_packed
    if 0 not in sizes:
        assert P.span == (0, math.prod(sizes) - 1)
    assert dhw(label) in P.labels
    assert P.label == P.labels[0]


@given(hst.sampled_from(IMAGE_LABELS), hst.lists(hst.integers(0, 5), min_size=3, max_size=3),
       hst.lists(hst.booleans(), min_size=3, max_size=3))
def test_broadcast_flags_in_canonical_order(label, sizes, flags):
    # the flags follow sizes, (C, H, W): a broadcast axis gets stride 0 and counts as size 1
    got = st.packed_strides(sizes, label, broadcast=flags)
    assert got == ref_packed_strides(sizes, label_order(label, 3), flags)
    assert got == st.packed_strides(sizes, dhw(label), broadcast=flags)
    assert got == st.Layout.packed(sizes, label, broadcast=flags).strides


def test_broadcast_channels_of_an_hwc_image():
    # one channel value repeated over C: numpy's broadcast of a (1, H, W) plane
    sizes = (3, 4, 5)
    got = st.packed_strides(sizes, "HWC", broadcast=(True, False, False))
    assert got == (0, 5, 1)
    plane = np.empty((4, 5, 1), dtype=np.uint8).transpose(2, 0, 1)
    assert np.broadcast_to(plane, sizes).strides == got


# ---- relayout ---------------------------------------------------------------------------------


def test_relayout_numpy_hwc_image_to_planar_and_back():
    rng = np.random.default_rng(25)
    img = rng.integers(0, 256, size=(4, 5, 3), dtype=np.uint8)     # H, W, C as decoders give
    planar = st.relayout(img.transpose(2, 0, 1), "CHW")
    assert planar.shape == (3, 4, 5)
    assert planar.strides == (20, 5, 1)
    assert planar.flags.c_contiguous
    np.testing.assert_array_equal(planar, img.transpose(2, 0, 1))
    last = st.relayout(planar, "HWC")
    assert last.shape == (3, 4, 5)
    assert last.strides == (1, 15, 3)
    np.testing.assert_array_equal(last, planar)
    np.testing.assert_array_equal(last.transpose(1, 2, 0), img)
    assert last.transpose(1, 2, 0).flags.c_contiguous


@pytest.mark.parametrize("label", IMAGE_LABELS)
@pytest.mark.parametrize("dtype", [np.uint8, np.float32, np.float64])
def test_relayout_numpy_every_image_label(label, dtype):
    sizes = (3, 4, 5)
    x = np.arange(60, dtype=dtype).reshape(sizes)[:, ::-1]          # a strided source
    out = st.relayout(x, label)
    np.testing.assert_array_equal(out, x)
    itemsize = np.dtype(dtype).itemsize
    assert out.strides == tuple(s * itemsize for s in st.packed_strides(sizes, label))
    assert st.layout_of(out).label == dhw(label)
    assert st.layout_of(st.relayout(x, dhw(label))) == st.layout_of(out)


@given(hst.sampled_from(IMAGE_LABELS), hst.lists(hst.integers(0, 4), min_size=3, max_size=3))
def test_relayout_numpy_sizes_0_and_1(label, sizes):
    x = np.arange(math.prod(sizes), dtype=np.int16).reshape(sizes)
    out = st.relayout(x, label)
    assert out.shape == tuple(sizes)
    np.testing.assert_array_equal(out, x)
    layout = st.layout_of(out)
    assert layout.is_packed
    if out.size:          # numpy 2 may give an empty array any strides (zeroes them)
        expected = st.packed_strides(sizes, label)
        assert all(n == 1 or s == e
                   for n, s, e in zip(sizes, layout.strides, expected, strict=True))


def test_relayout_torch_image_names():
    torch = pytest.importorskip("torch")
    hwc = torch.arange(60, dtype=torch.float32).reshape(4, 5, 3)    # H, W, C
    chw_view = hwc.permute(2, 0, 1)
    assert chw_view.stride() == (1, 15, 3)                           # an HWC image viewed as CHW
    planar = st.relayout(chw_view, "CHW")
    assert isinstance(planar, torch.Tensor)
    assert planar.shape == (3, 4, 5)
    assert planar.stride() == (20, 5, 1)
    assert planar.is_contiguous()
    assert torch.equal(planar, chw_view)
    last = st.relayout(planar, "HWC")
    assert last.stride() == (1, 15, 3)
    # torch's own channels-last of a CHW tensor: the HWC buffer, permuted back
    assert last.stride() == planar.permute(1, 2, 0).contiguous().permute(2, 0, 1).stride()
    assert last.permute(1, 2, 0).is_contiguous()
    assert torch.equal(last, planar)
    assert torch.equal(last.permute(1, 2, 0), hwc)
    for label in IMAGE_LABELS:
        out = st.relayout(chw_view, label)
        assert out.stride() == st.packed_strides((3, 4, 5), label)
        assert torch.equal(out, chw_view)


def test_relayout_torch_with_size_1_and_0_dims():
    torch = pytest.importorskip("torch")
    for sizes in [(1, 4, 5), (3, 1, 5), (3, 4, 1), (1, 1, 1), (0, 4, 5), (3, 0, 2)]:
        x = torch.arange(math.prod(sizes), dtype=torch.int32).reshape(sizes)
        for label in ("CHW", "HWC"):
            out = st.relayout(x, label)
            assert out.shape == sizes
            assert torch.equal(out, x)
            assert st.layout_of(out).is_packed
            # exactly the label's strides, size-1 and size-0 dims included (torch keeps the
            # strides of empty tensors; a size-0 dim counts as 1)
            assert out.stride() == st.packed_strides(sizes, label)


# ---- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize("label", ["CHD", "DCW", "WDC", "CDH"])
def test_mixed_letter_sets_are_refused_with_the_allowed_sets(label):
    with pytest.raises(ValueError) as info:
        st.packed_strides((3, 4, 5), label)
    message = str(info.value)
    assert f"layout {label!r} is not a label for rank 3" in message
    assert "it mixes the letters of 'DHW' and 'CHW'" in message
    assert "a rank-3 label is a permutation of 'DHW' or of 'CHW'" in message
    with pytest.raises(ValueError, match="permutation of 'DHW' or of 'CHW'"):
        st.Layout.packed((3, 4, 5), label)


@pytest.mark.parametrize(
    ("sizes", "label", "fragments"),
    [
        ((3, 4, 5), "hwc", ("'hwc'", "upper case: 'HWC'")),
        ((3, 4, 5), "CCH", ("'CCH'", "rank 3", "'DHW' or of 'CHW'")),
        ((3, 4, 5), "CHWN", ("'CHWN'", "rank-4 label")),
        ((3, 4), "CHW", ("'CHW'", "rank 2", "rank-3 label")),
        ((1, 3, 4, 5), "HWC", ("'HWC'", "rank 4", "rank-3 label", "'NCHW'")),
        ((1, 3, 4, 5, 6), "CHW", ("'CHW'", "rank 5", "rank-3 label")),
    ],
)
def test_other_bad_image_labels(sizes, label, fragments):
    with pytest.raises(ValueError) as info:
        st.packed_strides(sizes, label)
    for fragment in fragments:
        assert fragment in str(info.value)
    assert "mixes" not in str(info.value)


def test_every_rank_lists_its_letter_sets():
    with pytest.raises(ValueError) as info:
        st.packed_strides((1, 2, 3, 4), "NHWX")
    assert "rank 3: 'DHW' or 'CHW'" in str(info.value)


# ---- the command line -------------------------------------------------------------------------


def test_explain_an_image_label(capsys):
    from strided._cli import main

    assert main(["explain", "HWC", "--sizes", "3,4,5"]) == 0
    out = capsys.readouterr().out
    assert "HWC, sizes (3, 4, 5)" in out
    assert "(1, 15, 3)" in out
    assert main(["explain", "CHW", "--sizes", "2,2,3"]) == 0
    assert "(6, 3, 1)" in capsys.readouterr().out
