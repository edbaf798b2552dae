"""Property tests: every predicate and quantity of a Layout agrees with brute-force enumeration.

For small layouts (rank 0-5, sizes 0-5, strides -8..8, offsets -20..20) the oracle lists the
offset of every index (``itertools.product``) and derives each quantity from that list alone.
"""

from __future__ import annotations

import itertools
import math
import pickle

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as hst
from strategies import (
    brute_offsets,
    inverse_permutation,
    layouts,
    ref_packed_strides,
    sizes_st,
)

import strided as st
from strided.formats import CANONICAL


def brute(L):
    return brute_offsets(L.sizes, L.strides, L.offset)


# ---- sizes, spans, buffer sizes ------------------------------------------------------------


@given(layouts())
@example(st.Layout((0, 3), (-5, 2), offset=7))
@example(st.Layout((), (), offset=-3))
def test_size_span_buffer_nbytes(L):
    offs = brute(L)
    assert L.size == len(offs) == math.prod(L.sizes)
    assert L.ndim == len(L.sizes) == len(L.strides)
    if offs:
        lo, hi = min(offs), max(offs)
    else:
        lo, hi = L.offset, L.offset - 1
    assert L.span == (lo, hi)
    for itemsize in range(1, 9):
        for align in (1, 2, 4, 8):
            expected = 0 if not offs else -(-((hi - lo + 1) * itemsize) // align) * align
            assert st.buffer_size(L.sizes, L.strides, itemsize=itemsize, align=align) == expected
    expected4 = 0 if not offs else -(-((hi - lo + 1) * L.itemsize) // 4) * 4
    assert L.buffer_size() == expected4
    assert L.buffer_size(1) == (0 if not offs else (hi - lo + 1) * L.itemsize)
    if not offs:
        assert L.nbytes == 0
    elif lo < 0:
        with pytest.raises(ValueError, match="below offset 0"):
            L.nbytes  # noqa: B018
    else:
        assert L.nbytes == (hi + 1) * L.itemsize
    assert L.byte_strides == tuple(s * L.itemsize for s in L.strides)
    assert L.byte_offset == L.offset * L.itemsize


# ---- exact predicates ----------------------------------------------------------------------


def brute_contiguous(sizes, strides):
    """C order ignoring size-1 dims (numpy's C_CONTIGUOUS rule); empty layouts are contiguous."""
    if 0 in sizes:
        return True
    expected = 1
    for n, s in zip(reversed(sizes), reversed(strides), strict=True):
        if n != 1:
            if s != expected:
                return False
            expected *= n
    return True


@given(layouts())
@example(st.Layout((2, 3), (5, 1)))
@example(st.Layout((2, 3), (0, 1)))
@example(st.Layout((3, 3), (1, 1)))
@example(st.Layout((2, 2, 2), (3, 2, 1)))   # offsets 0..6 with one repeat (2+1 = 3)
@example(st.Layout((3, 2), (1, 1)))
@example(st.Layout((2, 1, 3), (3, 7, 1)))
def test_predicates_match_brute_force(L):
    offs = brute(L)
    distinct = set(offs)
    n = len(offs)
    lo, hi = L.span
    # packed: exactly size distinct consecutive offsets
    packed = n == 0 or (len(distinct) == n and hi - lo + 1 == n)
    assert L.is_packed == packed
    # contiguous: packed in row-major order, equivalently the offsets run lo, lo+1, ...
    assert L.is_contiguous == brute_contiguous(L.sizes, L.strides)
    if n:
        # an independent reading of "row-major packed": the offsets count up by one
        assert L.is_contiguous == (offs == list(range(L.offset, L.offset + n)))
    # broadcast: a dim of size > 1 with stride 0, non-empty
    assert L.is_broadcast == (n > 0 and any(
        size > 1 and s == 0 for size, s in zip(L.sizes, L.strides, strict=True)))
    # padded: the distinct offsets leave a hole in [lo, hi]
    assert L.is_padded == (n > 0 and len(distinct) != hi - lo + 1)
    # overlaps: fewer distinct offsets than elements
    assert L.overlaps == (len(distinct) < n)
    # consistency between the predicates
    if L.is_contiguous:
        assert L.is_packed
    if L.is_packed:
        assert not L.overlaps and not L.is_padded


@given(layouts(max_stride=6, itemsizes=(1, 2, 4, 8)))
def test_contiguous_matches_numpy_flags(L):
    dtype = {1: np.uint8, 2: np.int16, 4: np.int32, 8: np.int64}[L.itemsize]
    lo, hi = L.span
    length = max(hi - lo + 1, 0) + 1
    base = np.zeros(length, dtype=dtype)
    start = L.offset - lo if L.size else 0
    arr = np.lib.stride_tricks.as_strided(base[start:], L.sizes, L.byte_strides)
    assert L.is_contiguous == arr.flags["C_CONTIGUOUS"]


# ---- coalesce ------------------------------------------------------------------------------


@given(layouts())
@example(st.Layout((2, 3, 4), (24, 4, 1)))
@example(st.Layout((1, 1), (3, 5)))
@example(st.Layout((2, 0, 3), (1, 1, 1)))
def test_coalesce_keeps_offset_sequence(L):
    C = L.coalesce()
    assert C.offset == L.offset
    assert C.itemsize == L.itemsize
    assert C.ndim <= max(L.ndim, 1)
    if L.size:
        assert C.ndim <= L.ndim
        assert 1 not in C.sizes
    assert brute(C) == brute(L)
    assert C.size == L.size
    # idempotent and minimal: no neighbours left that merge
    assert C.coalesce() == C
    if L.size:
        for k in range(C.ndim - 1):
            assert C.strides[k] != C.strides[k + 1] * C.sizes[k + 1]


# ---- order and labels ----------------------------------------------------------------------


@given(layouts())
def test_order_is_a_permutation_by_decreasing_abs_stride(L):
    order = L.order
    assert sorted(order) == list(range(L.ndim))
    ranked = [abs(L.strides[a]) for a in order if L.sizes[a] != 1 and L.strides[a] != 0]
    assert ranked == sorted(ranked, reverse=True)


def label_fits(sizes, strides, label):
    letters = CANONICAL[len(sizes)]
    order = tuple(letters.index(ch) for ch in label)
    expected = ref_packed_strides(sizes, order, [s == 0 for s in strides])
    return all(n == 1 or s == e for n, s, e in zip(sizes, strides, expected, strict=True))


@given(layouts(min_rank=2, max_rank=5, max_size=4, min_size=1))
@example(st.Layout((1, 1, 3, 5), (15, 1, 5, 1)))
@example(st.Layout((2, 1, 4, 5), (20, 20, 5, 1)))
@example(st.Layout((2, 3, 4, 5), (20, 0, 5, 1)))
def test_labels_match_brute_force(L):
    labels = L.labels
    letters = CANONICAL[L.ndim]
    assert len(set(labels)) == len(labels)
    for label in labels:
        assert sorted(label) == sorted(letters)
        flags = [s == 0 for s in L.strides]
        expected = st.packed_strides(L.sizes, label, broadcast=flags)
        assert all(n == 1 or s == e for n, s, e in zip(L.sizes, L.strides, expected, strict=True))
    # complete: every label that fits is listed
    fitting = {"".join(p) for p in itertools.permutations(letters)
               if label_fits(L.sizes, L.strides, "".join(p))}
    assert set(labels) == fitting
    assert L.label == (labels[0] if labels else None)
    if letters in fitting:
        assert L.label == letters   # the canonical label is preferred when it fits


@given(layouts(min_rank=2, max_rank=5, max_size=4, max_offset=0, min_size=1))
def test_labels_of_packed_layouts(L):
    letters = CANONICAL[L.ndim]
    for perm in itertools.permutations(letters):
        label = "".join(perm)
        P = st.Layout.packed(L.sizes, label)
        assert label in P.labels, (L.sizes, label, P.strides)
        assert P.is_packed


EMPTY_LABEL_CASES = [
    # (sizes, label): Layout.packed(sizes, label) has strides that fit `label`, and the brute
    # force finds it, but .labels misses it (ties in |stride| from size-0 dims)
    ((0, 3), "WH"),
    ((0, 0), "WH"),
    ((2, 0, 3), "DWH"),
    ((0, 2, 3, 4), "CHWN"),
]


@pytest.mark.parametrize(("sizes", "label"), EMPTY_LABEL_CASES)
def test_labels_of_empty_packed_layouts(sizes, label):
    P = st.Layout.packed(sizes, label)
    assert label_fits(P.sizes, P.strides, label)
    assert label in P.labels


@given(layouts(min_rank=2, max_rank=5, max_size=4))
def test_labels_are_sound_with_empty_layouts(L):
    # every listed label fits (soundness), also for layouts with size-0 dims
    for label in L.labels:
        assert label_fits(L.sizes, L.strides, label)
    assert L.label == (L.labels[0] if L.labels else None)


@given(layouts(max_rank=6))
def test_no_labels_outside_ranks_2_to_5(L):
    if L.ndim not in CANONICAL:
        assert L.labels == ()
        assert L.label is None


# ---- packed strides ------------------------------------------------------------------------


@given(sizes_st(max_rank=5, max_size=5).flatmap(
    lambda sizes: hst.tuples(
        hst.just(sizes),
        hst.permutations(range(len(sizes))),
        hst.lists(hst.booleans(), min_size=len(sizes), max_size=len(sizes)),
    )))
def test_packed_strides_for_every_order(args):
    sizes, perm, flags = args
    perm = tuple(perm)
    strides = st.packed_strides(sizes, perm)
    assert strides == ref_packed_strides(sizes, perm)
    L = st.Layout(sizes, strides)
    assert L.is_packed and not L.overlaps and not L.is_padded
    if L.size:
        assert sorted(brute(L)) == list(range(L.size))
    # negative axes name the same order
    assert st.packed_strides(sizes, tuple(a - len(sizes) for a in perm)) == strides
    # with broadcast flags: broadcast axes get stride 0, the others are packed among themselves
    bstrides = st.packed_strides(sizes, perm, broadcast=flags)
    assert bstrides == ref_packed_strides(sizes, perm, flags)
    assert all(s == 0 for s, f in zip(bstrides, flags, strict=True) if f)
    sub_sizes = tuple(1 if f else n for n, f in zip(sizes, flags, strict=True))
    sub = st.Layout(sub_sizes, bstrides)
    assert sub.is_packed
    if sub.size:
        assert sorted(brute(sub)) == list(range(sub.size))
    B = st.Layout(sizes, bstrides)
    if B.size and any(f and n > 1 for f, n in zip(flags, sizes, strict=True)):
        assert B.is_broadcast and B.overlaps
    assert st.Layout.packed(sizes, perm, broadcast=flags).strides == bstrides


@given(sizes_st(max_rank=6, max_size=5))
def test_packed_strides_c_and_f(sizes):
    c = st.packed_strides(sizes)
    assert c == st.packed_strides(sizes, "C") == st.packed_strides(sizes, None)
    assert c == ref_packed_strides(sizes, tuple(range(len(sizes))))
    f = st.packed_strides(sizes, "F")
    assert f == ref_packed_strides(sizes, tuple(reversed(range(len(sizes)))))
    assert st.Layout(sizes).strides == c
    assert st.Layout(sizes, c).is_contiguous


# ---- element offsets and view algebra ------------------------------------------------------


@given(layouts(min_size=1).flatmap(
    lambda L: hst.tuples(hst.just(L), hst.tuples(*[hst.integers(0, n - 1) for n in L.sizes]))))
def test_offset_of_is_the_dot_product(args):
    L, index = args
    expected = L.offset + sum(i * s for i, s in zip(index, L.strides, strict=True))
    assert L.offset_of(index) == expected
    assert st.offset_of(index, L.strides, L.offset) == expected
    assert st.offset_of(list(index), list(L.strides)) == expected - L.offset
    # the row-major position of this index in the brute-force list
    flat = 0
    for i, n in zip(index, L.sizes, strict=True):
        flat = flat * n + i
    assert brute(L)[flat] == expected


@given(hst.lists(hst.integers(-50, 50), max_size=6).flatmap(
    lambda ix: hst.tuples(hst.just(ix), hst.lists(hst.integers(-50, 50), min_size=len(ix),
                                                  max_size=len(ix)), hst.integers(-99, 99))))
def test_free_offset_of_has_no_bounds(args):
    index, strides, offset = args
    assert st.offset_of(index, strides, offset) == offset + sum(
        i * s for i, s in zip(index, strides, strict=True))


@given(layouts().flatmap(lambda L: hst.tuples(hst.just(L), hst.permutations(range(L.ndim)))))
def test_permute_and_inverse(args):
    L, perm = args
    P = L.permute(perm)
    assert P.sizes == tuple(L.sizes[a] for a in perm)
    assert P.strides == tuple(L.strides[a] for a in perm)
    assert P.offset == L.offset and P.itemsize == L.itemsize
    assert P.permute(inverse_permutation(perm)) == L
    assert P.permute([a - L.ndim for a in inverse_permutation(perm)]) == L
    # the same multiset of offsets, hence the same order-free predicates
    assert sorted(brute(P)) == sorted(brute(L))
    assert (P.is_packed, P.is_padded, P.overlaps, P.is_broadcast, P.span) == \
        (L.is_packed, L.is_padded, L.overlaps, L.is_broadcast, L.span)


@given(layouts())
def test_value_semantics(L):
    same = st.Layout(list(L.sizes), list(L.strides), offset=L.offset, itemsize=L.itemsize)
    assert same == L and hash(same) == hash(L)
    assert pickle.loads(pickle.dumps(L)) == L
    assert eval(repr(L), {"Layout": st.Layout}) == L
    other = st.Layout(L.sizes, L.strides, offset=L.offset + 1, itemsize=L.itemsize)
    assert other != L


@given(layouts(min_rank=0, max_rank=3, max_size=3).flatmap(
    lambda L: hst.tuples(hst.just(L), hst.lists(hst.integers(1, 3), max_size=2))))
def test_broadcast_to_repeats_offsets(args):
    L, lead = args
    target = (*lead, *(3 if n == 1 else n for n in L.sizes))
    B = L.broadcast_to(target)
    assert B.sizes == tuple(target)
    offs = brute(L)
    for index in itertools.product(*map(range, target)):
        src = tuple(0 if n == 1 else i for n, i in zip(L.sizes, index[len(lead):], strict=True))
        flat = 0
        for i, n in zip(src, L.sizes, strict=True):
            flat = flat * n + i
        assert B.offset_of(index) == offs[flat]


@pytest.mark.parametrize(("rank", "max_size", "max_stride"), [(2, 3, 4), (3, 3, 3)])
def test_predicates_on_all_tiny_layouts(rank, max_size, max_stride):
    # exhaustive: every layout of this rank with sizes 0..max_size, |strides| <= max_stride
    for sizes in itertools.product(range(max_size + 1), repeat=rank):
        for strides in itertools.product(range(-max_stride, max_stride + 1), repeat=rank):
            L = st.Layout(sizes, strides)
            offs = brute(L)
            d = set(offs)
            assert L.overlaps == (len(d) < len(offs)), (sizes, strides)
            assert L.is_padded == (bool(offs) and len(d) != max(offs) - min(offs) + 1)
            assert L.is_packed == (not offs or (len(d) == len(offs)
                                                and max(offs) - min(offs) + 1 == len(offs)))


@given(layouts(min_rank=2, max_rank=5, max_size=4, max_stride=40, min_size=2))
@example(st.Layout((2, 2, 2, 2), (3, 5, 7, 15)))    # 3 + 5 + 7 = 15: an equal-subset-sum hit
@example(st.Layout((2, 2, 2, 2), (3, 5, 7, 16)))
@example(st.Layout((3, 3, 3), (10, 15, 6)))         # 10*3 == 15*2 == 6*5 - pairwise ties
@example(st.Layout((4, 4, 4), (12, 20, 30)))
def test_overlap_with_wide_strides_matches_brute_force(L):
    offs = brute(L)
    distinct = set(offs)
    assert L.overlaps == (len(distinct) < len(offs))
    lo, hi = L.span
    assert L.is_padded == (len(distinct) != hi - lo + 1)
    assert L.is_packed == (len(distinct) == len(offs) == hi - lo + 1)
