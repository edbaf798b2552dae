"""The view algebra of Layout (indexing, permute, broadcast_to, reshape) agrees with numpy.

Each test builds a real numpy buffer (``np.arange``), a numpy strided view of it described by a
Layout (``as_strided`` with the Layout's byte strides, starting at its offset), applies the same
operation to both, and checks that the Layout describes the numpy result exactly: sizes ==
shape, strides * itemsize == numpy strides, offset == the data pointer's distance from the
buffer's start (non-empty results), and gathering the buffer through the Layout's offsets gives
numpy's values.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as hst
from strategies import basic_keys, brute_offsets, layouts

import strided as st

DTYPES = {1: np.uint8, 2: np.int16, 4: np.int32, 8: np.int64}


def numpy_view(L):
    """(buffer, array): a buffer of distinct values and the numpy view L describes into it.

    L's offset is an element offset from the start of the buffer; the buffer is just large
    enough for L's span (plus one element, so that it is never empty).
    """
    lo, hi = L.span
    assert lo >= 0 or L.size == 0
    length = max(hi, L.offset, 0) + 2
    buf = np.arange(length, dtype=DTYPES[L.itemsize])
    start = L.offset if L.size else 0
    arr = np.lib.stride_tricks.as_strided(buf[start:], L.sizes, L.byte_strides)
    return buf, arr


def shifted(L):
    """L moved so that its span starts at a non-negative offset (a few elements in)."""
    lo, _ = L.span
    return st.Layout(L.sizes, L.strides, offset=L.offset - lo + 3, itemsize=L.itemsize)


def gather(buf, L):
    """The values of buf at L's offsets, shaped like L (the brute-force reading of a layout)."""
    offs = brute_offsets(L.sizes, L.strides, L.offset)
    return np.array([buf[o] for o in offs], dtype=buf.dtype).reshape(L.sizes)


def data_offset(buf, arr):
    """Element offset of arr's data pointer from buf's start."""
    delta = arr.__array_interface__["data"][0] - buf.__array_interface__["data"][0]
    assert delta % buf.itemsize == 0
    return delta // buf.itemsize


def np_index(arr, key):
    """numpy basic indexing that always returns a view (an all-integer key gives a 0-d view
    instead of a scalar: a trailing Ellipsis changes nothing else)."""
    items = key if isinstance(key, tuple) else (key,)
    if not any(item is Ellipsis for item in items):
        items = (*items, Ellipsis)
    out = arr[items]
    assert isinstance(out, np.ndarray)
    return out


def assert_describes(L, buf, arr, *, size1_strides=True):
    """L is exactly the numpy view arr of buf."""
    assert L.sizes == arr.shape
    assert L.itemsize == arr.itemsize
    if arr.size:
        if size1_strides:
            assert L.byte_strides == arr.strides
        else:
            assert all(n == 1 or s == a
                       for n, s, a in zip(L.sizes, L.byte_strides, arr.strides, strict=True))
        assert L.offset == data_offset(buf, arr)
        assert np.shares_memory(arr, buf)
    np.testing.assert_array_equal(gather(buf, L), arr)


view_layouts = layouts(max_rank=4, max_size=5, max_stride=6, max_offset=10).map(shifted)


@given(view_layouts)
def test_numpy_view_helper_is_faithful(L):
    buf, arr = numpy_view(L)
    assert_describes(L, buf, arr)


# ---- indexing ------------------------------------------------------------------------------


FIXED_KEYS = [
    0, -1, 1, slice(None), slice(1, None), slice(None, None, -1), slice(None, None, 2),
    slice(None, None, -2), slice(-2, None), slice(3, 0, -1), slice(0, 0), slice(5, 1),
    (0, 0), (-1, -2), (Ellipsis, 0), (0, Ellipsis), (Ellipsis,), (), None, (None, 0),
    (0, None, Ellipsis, None), (slice(None, None, -1), None, 1), (Ellipsis, slice(1, -1, 2)),
    (1, slice(None, None, -3), Ellipsis, None), (None, None, Ellipsis, None),
    (slice(100, -100, -7),), (slice(-100, 100, 3), -1),
]


@pytest.mark.parametrize("itemsize", [1, 2, 4, 8])
@pytest.mark.parametrize("key", FIXED_KEYS, ids=repr)
def test_fixed_keys(key, itemsize):
    L = st.Layout((4, 3, 5), (-15, 5, 1), offset=50, itemsize=itemsize)
    for base in (L, L.permute((2, 0, 1)), st.Layout((4, 3, 5), (2, 40, 8), itemsize=itemsize)):
        buf, arr = numpy_view(base)
        assert_describes(base[key], buf, np_index(arr, key))


@given(view_layouts.flatmap(lambda L: hst.tuples(hst.just(L), basic_keys(L.sizes))))
@example((st.Layout((3, 0, 2), (2, 1, -1), offset=4), (slice(2, 0, -1), Ellipsis, 1)))
def test_indexing_matches_numpy(args):
    L, key = args
    buf, arr = numpy_view(L)
    assert_describes(L[key], buf, np_index(arr, key))


@given(view_layouts.flatmap(lambda L: hst.tuples(hst.just(L), basic_keys(L.sizes),
                                                   basic_keys(L.sizes))))
def test_chained_indexing_matches_numpy(args):
    L, key1, key2 = args
    buf, arr = numpy_view(L)
    M, marr = L[key1], np_index(arr, key1)
    # the second key must fit the new rank; build it again for M's sizes when it does not
    n_items = sum(1 for k in (key2 if isinstance(key2, tuple) else (key2,))
                  if k is not None and k is not Ellipsis)
    if n_items > M.ndim:
        key2 = (Ellipsis,)
    try:
        expected = np_index(marr, key2)
    except IndexError:
        with pytest.raises(IndexError):
            M[key2]
        return
    assert_describes(M[key2], buf, expected)


@given(view_layouts, hst.data())
def test_out_of_range_and_bad_keys_raise_like_numpy(L, data):
    _, arr = numpy_view(L)
    if L.ndim == 0:
        key = data.draw(hst.sampled_from([0, (0,), (Ellipsis, Ellipsis)]))
    else:
        axis = data.draw(hst.integers(0, L.ndim - 1))
        bad = data.draw(hst.sampled_from([L.sizes[axis], -L.sizes[axis] - 1, 10**6]))
        key = (*(slice(None),) * axis, bad)
    with pytest.raises(IndexError):
        arr[key]
    with pytest.raises(st.LayoutIndexError):
        L[key]


# ---- permute -------------------------------------------------------------------------------


@given(view_layouts.flatmap(
    lambda L: hst.tuples(hst.just(L), hst.permutations(range(L.ndim)), hst.booleans())))
def test_permute_matches_numpy_transpose(args):
    L, perm, negative = args
    buf, arr = numpy_view(L)
    axes = [a - L.ndim for a in perm] if negative else list(perm)
    assert_describes(L.permute(axes), buf, arr.transpose(axes))


# ---- broadcast_to --------------------------------------------------------------------------


@given(view_layouts.flatmap(lambda L: hst.tuples(
    hst.just(L),
    hst.lists(hst.integers(0, 3), max_size=2),
    hst.lists(hst.integers(0, 4), min_size=L.ndim, max_size=L.ndim),
)))
def test_broadcast_to_matches_numpy(args):
    L, lead, stretch = args
    buf, arr = numpy_view(L)
    target = (*lead, *(m if n == 1 else n for n, m in zip(L.sizes, stretch, strict=True)))
    expected = np.broadcast_to(arr, target)
    # numpy gives stretched and kept size-1 axes stride 0; any stride fits a size-1 axis
    assert_describes(L.broadcast_to(target), buf, expected, size1_strides=False)


@given(view_layouts.flatmap(lambda L: hst.tuples(
    hst.just(L), hst.lists(hst.integers(0, 6), min_size=0, max_size=5))))
def test_broadcast_to_any_target_agrees_with_numpy(args):
    L, target = args
    buf, arr = numpy_view(L)
    try:
        expected = np.broadcast_to(arr, target)
    except ValueError:
        with pytest.raises(ValueError):
            L.broadcast_to(target)
        return
    assert_describes(L.broadcast_to(target), buf, expected, size1_strides=False)


# ---- reshape -------------------------------------------------------------------------------


def factorizations(n, max_rank):
    """Some shapes with n elements (n > 0), up to max_rank dims, 1s included."""
    out = [(n,)] if n else [(0,), (0, 3), (2, 0)]
    if n:
        for a in range(1, n + 1):
            if n % a == 0:
                out.append((a, n // a))
                for b in range(1, n // a + 1):
                    if (n // a) % b == 0:
                        out.append((a, b, n // a // b))
    out += [(1, *s) for s in out[:4]] + [(*s, 1) for s in out[:4]]
    if n == 1:
        out.append(())
    return [s for s in out if len(s) <= max_rank]


def brute_view_exists(L, new_sizes):
    """Brute force: is there a strided layout of new_sizes reaching L's offsets in C order?

    The stride of a new dim of size > 1 is forced: the offset difference between its index 1
    and index 0; a view exists iff those strides reproduce every offset.
    """
    offs = brute_offsets(L.sizes, L.strides, L.offset)
    if not offs:
        return True
    strides = []
    for k, n in enumerate(new_sizes):
        if n > 1:
            step = 1
            for m in new_sizes[k + 1:]:
                step *= m
            strides.append(offs[step] - offs[0])
        else:
            strides.append(0)
    return brute_offsets(new_sizes, strides, offs[0]) == offs


def numpy_view_reshape(arr, new_sizes):
    """numpy's no-copy reshape, or None when numpy would have to copy."""
    try:
        out = np.reshape(arr, new_sizes, copy=False)
    except ValueError:
        return None
    # must be a view, not a copy
    assert out.size == 0 or np.shares_memory(out, arr)
    return out


def numpy_view_reshape_legacy(arr, new_sizes):
    """The same through setting .shape on a view (raises when a copy would be needed)."""
    v = arr.view()
    try:
        v.shape = new_sizes
    except (AttributeError, ValueError):
        return None
    return v


reshape_cases = view_layouts.flatmap(lambda L: hst.tuples(
    hst.just(L), hst.sampled_from(factorizations(L.size, 5))))


@given(reshape_cases)
@example((st.Layout((3, 4), (1, 3), offset=3), (12,)))
@example((st.Layout((3, 4), (1, 3), offset=3), (3, 4)))
@example((st.Layout((2, 3, 4), (12, 4, 1), offset=3), (6, 4)))
@example((st.Layout((2, 3, 4), (24, 4, 1), offset=3), (6, 4)))
@example((st.Layout((2, 3, 4), (24, 4, 1), offset=3), (2, 12)))
@example((st.Layout((2, 1, 3), (3, 7, 1), offset=3), (6,)))
@example((st.Layout((2, 3), (0, 1), offset=3), (6,)))
@example((st.Layout((2, 3), (0, 0), offset=3), (6,)))
@example((st.Layout((4,), (-1,), offset=5), (2, 2)))
def test_reshape_matches_numpy(args):
    L, new_sizes = args
    buf, arr = numpy_view(L)
    expected = numpy_view_reshape(arr, new_sizes)
    legacy = numpy_view_reshape_legacy(arr, new_sizes)
    assert (expected is None) == (legacy is None)
    exists = brute_view_exists(L, new_sizes)
    if expected is None:
        assert not exists, "numpy copies although a view exists"
        with pytest.raises(ValueError, match="blocking axes"):
            L.reshape(new_sizes)
        return
    assert exists
    R = L.reshape(new_sizes)
    assert_describes(R, buf, expected, size1_strides=False)
    if L.size:
        assert brute_offsets(R.sizes, R.strides, R.offset) == \
            brute_offsets(L.sizes, L.strides, L.offset)
    # the same with one size given as -1
    if new_sizes and L.size:
        k = len(new_sizes) // 2
        auto = (*new_sizes[:k], -1, *new_sizes[k + 1:])
        assert L.reshape(auto) == R


@pytest.mark.parametrize("itemsize", [1, 2, 4, 8])
def test_reshape_exhaustive_small(itemsize):
    # every (sizes, strides) of rank 2 with sizes 1..4 and strides -3..3 against numpy
    for sizes in itertools.product(range(1, 5), repeat=2):
        for strides in itertools.product(range(-3, 4), repeat=2):
            L = shifted(st.Layout(sizes, strides, itemsize=itemsize))
            buf, arr = numpy_view(L)
            for new_sizes in factorizations(L.size, 3):
                expected = numpy_view_reshape(arr, new_sizes)
                if expected is None:
                    with pytest.raises(ValueError):
                        L.reshape(new_sizes)
                else:
                    assert_describes(L.reshape(new_sizes), buf, expected, size1_strides=False)
