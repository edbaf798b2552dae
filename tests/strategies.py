"""Hypothesis strategies and brute-force oracles shared by the tests.

The oracles here are deliberately naive: they enumerate every index with ``itertools.product``
and never call into :mod:`strided`, so that they are independent of the implementation.
"""

from __future__ import annotations

import itertools
import math

from hypothesis import strategies as st

import strided

# ---- brute-force oracles -------------------------------------------------------------------


def all_indices(sizes):
    """Every index of ``sizes`` in row-major (C) order."""
    return itertools.product(*(range(n) for n in sizes))


def brute_offsets(sizes, strides, offset=0):
    """Element offsets of every index, in row-major order."""
    return [offset + sum(i * s for i, s in zip(index, strides, strict=True))
            for index in all_indices(sizes)]


def ref_packed_strides(sizes, order, broadcast=None):
    """Packed strides for a physical order (outermost first), written from the definition.

    The stride of a dimension is the product of the sizes of the dimensions stored inside it;
    a broadcast dimension gets stride 0 and counts as size 1; a size-0 dimension counts as 1.
    """
    ndim = len(sizes)
    broadcast = broadcast or [False] * ndim
    eff = [1 if broadcast[a] else max(sizes[a], 1) for a in range(ndim)]
    out = [0] * ndim
    for pos, axis in enumerate(order):
        out[axis] = 0 if broadcast[axis] else math.prod(eff[a] for a in order[pos + 1:])
    return tuple(out)


def inverse_permutation(perm):
    inv = [0] * len(perm)
    for k, a in enumerate(perm):
        inv[a] = k
    return tuple(inv)


# ---- strategies ----------------------------------------------------------------------------

MAX_RANK = 5
MAX_SIZE = 5
MAX_STRIDE = 8
MAX_OFFSET = 20


def sizes_st(min_rank=0, max_rank=MAX_RANK, min_size=0, max_size=MAX_SIZE):
    return st.lists(
        st.integers(min_size, max_size), min_size=min_rank, max_size=max_rank
    ).map(tuple)


@st.composite
def random_strides(draw, sizes, max_stride=MAX_STRIDE):
    return tuple(draw(st.integers(-max_stride, max_stride)) for _ in sizes)


@st.composite
def structured_strides(draw, sizes):
    """Strides that are packed in some order, then maybe sign-flipped, scaled, broadcast or
    padded: these hit the interesting cases (packed, contiguous, labelled, coalescable) that
    random strides rarely reach."""
    ndim = len(sizes)
    order = draw(st.permutations(range(ndim)))
    broadcast = [draw(st.booleans()) if draw(st.integers(0, 3)) == 0 else False
                 for _ in range(ndim)]
    strides = list(ref_packed_strides(sizes, order, broadcast))
    if draw(st.booleans()):   # pad: scale the outer part of the order
        if ndim:
            cut = draw(st.integers(0, ndim - 1))
            factor = draw(st.integers(1, 3))
            for axis in order[:cut]:
                strides[axis] *= factor
    if draw(st.integers(0, 2)) == 0:   # flip some signs
        strides = [-s if draw(st.booleans()) else s for s in strides]
    if draw(st.integers(0, 3)) == 0:   # a global step
        step = draw(st.integers(1, 2))
        strides = [s * step for s in strides]
    return tuple(strides)


@st.composite
def layouts(draw, min_rank=0, max_rank=MAX_RANK, max_size=MAX_SIZE, max_stride=MAX_STRIDE,
            max_offset=MAX_OFFSET, itemsizes=(1, 2, 4, 8), min_size=0):
    """A strided.Layout with small sizes, random or structured strides, any offset."""
    sizes = draw(sizes_st(min_rank, max_rank, min_size, max_size))
    if draw(st.booleans()):
        strides = draw(random_strides(sizes, max_stride))
    else:
        strides = draw(structured_strides(sizes))
    offset = draw(st.integers(-max_offset, max_offset))
    itemsize = draw(st.sampled_from(itemsizes))
    return strided.Layout(sizes, strides, offset=offset, itemsize=itemsize)


def index_item(size):
    """One item of a basic-indexing key for an axis of ``size`` (int, slice)."""
    bound = size + 2
    ints = st.integers(-size, size - 1) if size else st.nothing()
    slices = st.builds(
        slice,
        st.none() | st.integers(-bound, bound),
        st.none() | st.integers(-bound, bound),
        st.none() | st.integers(-4, 4).filter(bool),
    )
    return ints | slices


@st.composite
def basic_keys(draw, sizes):
    """A numpy basic-indexing key for ``sizes``: ints, slices, None and at most one Ellipsis."""
    n_index = draw(st.integers(0, len(sizes)))
    ellipsis = draw(st.booleans())
    items = [draw(index_item(n)) for n in sizes[:n_index]]
    if ellipsis:
        # the Ellipsis stands for the axes between the leading items and trailing ones
        n_tail = draw(st.integers(0, len(sizes) - n_index))
        tail = [draw(index_item(n)) for n in sizes[len(sizes) - n_tail:]] if n_tail else []
        items = [*items, Ellipsis, *tail]
    # sprinkle None (new axes)
    for _ in range(draw(st.integers(0, 2))):
        items.insert(draw(st.integers(0, len(items))), None)
    if len(items) == 1 and draw(st.booleans()):
        return items[0]
    return tuple(items)


# ---- copy engine: strided pairs over raw byte buffers --------------------------------------

#: Element sizes the copy tests draw: the typed paths (1, 2, 4, 8, 16) and odd generic ones.
COPY_ITEMSIZES = (1, 2, 3, 4, 6, 8, 12, 16)


@st.composite
def copy_sizes(draw, max_rank=6):
    """Sizes of rank 0..max_rank, small enough for a per-index oracle (at most 6**3 or 3**6);
    about one case in eight is empty (a size-0 dimension somewhere)."""
    rank = draw(st.integers(0, max_rank))
    top = 6 if rank <= 3 else 4 if rank == 4 else 3
    sizes = [draw(st.integers(1, top)) for _ in range(rank)]
    if rank and draw(st.integers(0, 7)) == 0:
        sizes[draw(st.integers(0, rank - 1))] = 0
    return tuple(sizes)


def is_nonoverlapping(sizes, strides):
    """Brute force: no two indices of ``sizes`` reach the same offset."""
    offs = brute_offsets(sizes, strides)
    return len(set(offs)) == len(offs)


@st.composite
def nonoverlapping_strides(draw, sizes, max_pad=3):
    """Strides of a destination: no two elements share an offset.

    Packed in a random order, each dimension stepping over the whole inner block plus a
    random gap (padding), signs flipped at random; size-0 and size-1 dimensions get any
    stride, 0 included. Sometimes random strides that happen not to overlap (interleavings
    such as sizes (2, 2), strides (3, 2)).
    """
    ndim = len(sizes)
    if draw(st.integers(0, 3)) == 0:
        strides = draw(random_strides(sizes, 7))
        if is_nonoverlapping(sizes, strides):
            return strides
    order = draw(st.permutations(range(ndim)))
    strides = [0] * ndim
    acc = draw(st.integers(1, 2))
    for axis in reversed(order):
        n = sizes[axis]
        if n <= 1:
            strides[axis] = draw(st.integers(-9, 9))
            continue
        strides[axis] = acc
        acc = acc * n + (draw(st.integers(0, max_pad)) if draw(st.booleans()) else 0)
    if draw(st.booleans()):
        strides = [-s if draw(st.booleans()) else s for s in strides]
    return tuple(strides)


def source_strides(sizes):
    """Strides of a source: anything (random, packed-permuted, padded, flipped, broadcast)."""
    return random_strides(sizes, 8) | structured_strides(sizes)


@st.composite
def copy_cases(draw, itemsizes=COPY_ITEMSIZES, max_rank=6):
    """(sizes, dst_strides, src_strides, itemsize): a legal strided copy, strides in elements."""
    sizes = draw(copy_sizes(max_rank))
    return (sizes, draw(nonoverlapping_strides(sizes)), draw(source_strides(sizes)),
            draw(st.sampled_from(itemsizes)))


def element_span(sizes, strides):
    """(lowest, highest) element offset reached from element (0, ..., 0); (0, 0) when empty."""
    if 0 in sizes:
        return (0, 0)
    lo = sum(min(0, (n - 1) * s) for n, s in zip(sizes, strides))
    hi = sum(max(0, (n - 1) * s) for n, s in zip(sizes, strides))
    return (lo, hi)


def brute_copy_bytes(dst_buf, dst_first, dst_strides, src_buf, src_first, src_strides, sizes,
                     itemsize):
    """The bytes of ``dst_buf`` after copying, index by index, the elements of a layout over
    ``src_buf`` (element 0 at byte ``src_first``) to one over ``dst_buf``. Reads the source as
    it is on entry, so ``src_buf is dst_buf`` gives the copy-of-the-original result."""
    out = bytearray(bytes(dst_buf))
    src = bytes(src_buf)
    for index in all_indices(sizes):
        d = dst_first + itemsize * sum(i * s for i, s in zip(index, dst_strides))
        s = src_first + itemsize * sum(i * s for i, s in zip(index, src_strides))
        out[d:d + itemsize] = src[s:s + itemsize]
    return bytes(out)


@st.composite
def medium_sizes(draw, min_rank=2, max_rank=4, max_elements=60_000):
    """Sizes of a few thousand elements or more (tile edges, block splits, thread shares):
    extents near multiples of 16 and odd ones."""
    rank = draw(st.integers(min_rank, max_rank))
    sizes = []
    room = max_elements
    for _ in range(rank):
        top = max(1, min(80, room))
        n = draw(st.sampled_from([v for v in (1, 2, 3, 4, 5, 15, 16, 17, 31, 32, 33, 63, 64, 65)
                                  if v <= top]) | st.integers(1, top))
        sizes.append(n)
        room //= n
    return tuple(draw(st.permutations(sizes)))


@st.composite
def permuted_strides(draw, sizes, broadcast=False):
    """Packed in a random physical order, then padded and sign-flipped at random; with
    ``broadcast``, some dimensions get stride 0. Never overlapping unless broadcast."""
    ndim = len(sizes)
    order = draw(st.permutations(range(ndim)))
    strides = [0] * ndim
    acc = 1
    for axis in reversed(order):
        if broadcast and draw(st.integers(0, 4)) == 0:
            continue
        strides[axis] = acc
        acc = acc * sizes[axis] + (draw(st.integers(1, 5)) if draw(st.integers(0, 2)) == 0
                                   else 0)
    if draw(st.booleans()):
        strides = [-s if draw(st.booleans()) else s for s in strides]
    return tuple(strides)
