"""strided.view / strided.layout_of / strided.interop.describe across libraries.

Every backend of tests/interop_backends.py (numpy, read-only numpy, bytes, bytearray,
memoryview, array.array, torch, array-api-strict, torch on CUDA when there is one) builds a 1-D
base from known values; each result of :func:`strided.view` is read back independently of
strided and compared with a brute-force oracle: the value at index ``i`` is
``values[dot(i, strides) + offset]``.

torch must never see a negative stride in this process (torch can abort the whole process on
some negative-stride inputs), so every torch case with a negative stride, and every odd torch
input, runs in a subprocess (:func:`run_isolated`) that reuses the same backends and oracles.
"""

from __future__ import annotations

import gc
import importlib.util
import itertools
import weakref

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as hst
from interop_backends import (
    BACKENDS,
    CASES,
    TORCH_CUDA,
    XP,
    buffer_layouts,
    buffer_values,
    cuda_available,
    expected_values,
    guard_value,
    has_negative,
    reach_counts,
    with_itemsize,
)
from isolated import probe_results, run_isolated
from strategies import brute_offsets

import strided
from strided.interop import MemoryRecord, describe

HAVE_TORCH = importlib.util.find_spec("torch") is not None
HAVE_XP = importlib.util.find_spec("array_api_strict") is not None
HAVE_CUDA = HAVE_TORCH and cuda_available()

if HAVE_TORCH:
    import torch
if HAVE_XP:
    import array_api_strict as xp

needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="torch is not installed")
needs_xp = pytest.mark.skipif(not HAVE_XP, reason="array-api-strict is not installed")


def backend_marks(b):
    if b is TORCH_CUDA:
        return [pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA device for torch")]
    if b.is_torch:
        return [needs_torch]
    if b is XP:
        return [needs_xp]
    return []


def backends(select=lambda b: True):
    return [pytest.param(b, id=b.name, marks=backend_marks(b)) for b in BACKENDS if select(b)]


def backend_cases(select=lambda b: True, case=lambda name, n, L: True):
    """(backend, case name, n, layout) params; torch never gets a negative stride here."""
    return [
        pytest.param(b, name, n, L, id=f"{b.name}-{name}", marks=backend_marks(b))
        for b in BACKENDS if select(b)
        for name, n, L in CASES
        if case(name, n, L) and not (b.is_torch and has_negative(L))
    ]


ALL = backends()
GUARD = 3


def result_type_ok(b, v):
    if b.result == "numpy":
        return type(v) is np.ndarray
    if b.result == "torch":
        return isinstance(v, torch.Tensor)
    return isinstance(v, xp.asarray(0).__class__)


def sentinel(b, k=0):
    """A value no buffer element holds (uint8 buffers hold 0..250, guards are 255)."""
    dtype = np.dtype(b.dtype)
    return dtype.type(251 + k) if dtype == np.uint8 else dtype.type(4321 + k)


def make_case(b, n, L, guard=GUARD):
    values = buffer_values(n, b.dtype)
    base = b.make(values, guard)
    return values, base, with_itemsize(L, b.itemsize)


def strides_that_matter(L):
    """L's strides where they place an element: none in an empty layout, and not those of
    size-1 dims. (numpy 2.2's DLPack export, under array-api-strict, normalizes the others.)"""
    if 0 in L.sizes:
        return ()
    return tuple(s if n > 1 else None for n, s in zip(L.sizes, L.strides))


def assert_round_trip(b, v, L):
    """layout_of(view) has L's sizes and strides (torch: no negative strides reach here)."""
    R = strided.layout_of(v)
    assert R.sizes == L.sizes
    if b.name == "array-api-strict":
        assert strides_that_matter(R) == strides_that_matter(L)
    else:
        assert R.strides == L.strides
    assert R.offset == 0
    assert R.itemsize == L.itemsize


def assert_zero_copy(b, base, values, v, L):
    """v is a view of base: it shares memory, its first element is at base + offset, and a
    write through it lands at the right offsets of base (all aliases of an overlap see it)."""
    assert b.shares(v, base)
    assert b.address(v) == b.address(base) + L.offset * L.itemsize
    if not b.writeable:
        return
    if not b.is_torch and L.overlaps:
        # views whose elements alias each other are read-only, as np.broadcast_to's, wherever
        # the library can say so: numpy, and array-api-strict through DLPack's read-only flag
        with pytest.raises(ValueError, match="read-only"):
            b.write(v, (0,) * L.ndim, sentinel(b, 0))
        np.testing.assert_array_equal(b.read_base(base), values)
        return
    current = values.copy()
    first, last = (0,) * L.ndim, tuple(n - 1 for n in L.sizes)
    for k, index in enumerate(dict.fromkeys([first, last])):
        value = sentinel(b, k)
        b.write(v, index, value)
        current[L.offset_of(index)] = value
        np.testing.assert_array_equal(b.read_base(base), current)
        np.testing.assert_array_equal(b.values(v), expected_values(current, L.sizes, L.strides,
                                                                   L.offset))


# ---- describe ------------------------------------------------------------------------------


@pytest.mark.parametrize("b", ALL)
def test_describe_fields(b):
    n = 7
    values = buffer_values(n, b.dtype)
    base = b.make(values, GUARD)
    r = describe(base)
    assert isinstance(r, MemoryRecord)
    assert r.library == b.library
    assert r.layout == strided.Layout((n,), (1,), itemsize=b.itemsize)
    assert strided.layout_of(base) == r.layout
    assert r.ptr == b.address(base)
    assert r.extent == b.extent(n, GUARD if b.guards else 0)
    assert r.buffer_elements == r.extent[1] - r.extent[0] + 1
    assert r.device == b.device
    assert r.writeable is b.writeable
    assert r.dtype == b.dlpack_dtype
    assert r.lazy is None
    assert r.owner is not None
    np.testing.assert_array_equal(b.read_base(base), values)


# ---- values against the oracle --------------------------------------------------------------


@pytest.mark.parametrize(("b", "name", "n", "L"), backend_cases())
def test_case_matches_oracle(b, name, n, L):
    values, base, L = make_case(b, n, L)
    v = strided.view(base, L)
    assert result_type_ok(b, v)
    assert tuple(v.shape) == L.sizes
    np.testing.assert_array_equal(b.values(v), expected_values(values, L.sizes, L.strides,
                                                               L.offset))
    assert_round_trip(b, v, L)
    # base itself is untouched
    np.testing.assert_array_equal(b.read_base(base), values)


@pytest.mark.parametrize("b", ALL)
@given(data=hst.data())
def test_random_layouts_match_oracle(b, data):
    n, sizes, strides, offset = data.draw(buffer_layouts(nonnegative=b.is_torch), label="case")
    guard = data.draw(hst.integers(0, 2), label="guard")
    values = buffer_values(n, b.dtype)
    base = b.make(values, guard)
    L = b.layout(sizes, strides, offset)
    v = strided.view(base, L)
    assert result_type_ok(b, v)
    np.testing.assert_array_equal(b.values(v), expected_values(values, sizes, strides, offset))
    assert_round_trip(b, v, L)
    if L.size:
        assert b.shares(v, base)
        assert b.address(v) == b.address(base) + offset * b.itemsize


# ---- zero copy -----------------------------------------------------------------------------


def zero_copy_case(name, n, L):
    return L.size > 0


@pytest.mark.parametrize(("b", "name", "n", "L"), backend_cases(case=zero_copy_case))
@pytest.mark.parametrize("copy", [None, False])
def test_view_is_zero_copy(b, name, n, L, copy):
    values, base, L = make_case(b, n, L)
    v = strided.view(base, L, copy=copy)
    assert_zero_copy(b, base, values, v, L)


@pytest.mark.parametrize(("b", "name", "n", "L"), backend_cases(
    select=lambda b: not b.writeable, case=zero_copy_case))
def test_readonly_base_gives_readonly_view(b, name, n, L):
    values, base, L = make_case(b, n, L)
    v = strided.view(base, L)
    assert v.flags.writeable is False
    with pytest.raises(ValueError, match="read-only"):
        v[(0,) * L.ndim] = 1
    np.testing.assert_array_equal(b.read_base(base), values)


@pytest.mark.parametrize("b", backends(lambda b: b.result == "numpy" and b.writeable))
def test_empty_and_writeable_flags_follow_base(b):
    _, base, L = make_case(b, 4, strided.Layout((0, 3), (3, 1)))
    v = strided.view(base, L)
    assert v.flags.writeable is True
    assert v.shape == (0, 3)


def test_readonly_memoryview_of_bytearray_gives_readonly_view():
    ba = bytearray(range(8))
    v = strided.view(memoryview(ba).toreadonly(), strided.Layout((2, 2), (4, 1)))
    assert v.flags.writeable is False
    assert describe(memoryview(ba).toreadonly()).writeable is False
    ba[5] = 99                     # the memory is still shared with the writable owner
    np.testing.assert_array_equal(v, [[0, 1], [4, 99]])


# ---- bounds --------------------------------------------------------------------------------


def oob_layouts(first, last):
    """(id, sizes, strides, offset) reaching outside [first, last], all strides >= 0."""
    width = last - first + 1
    return [
        ("above-end", (width + 1,), (1,), first),
        ("one-past-end", (1,), (1,), last + 1),
        ("far-past-end", (2,), (1,), last + 10),
        ("rank0-past-end", (), (), last + 1),
        ("rank0-below-start", (), (), first - 1),
        ("below-start", (2,), (1,), first - 1),
        ("padded-over", (2, 3), (width - 2, 1), first),
        ("broadcast-over", (5, 2), (0, 1), last),
        ("stride-over", (2,), (width,), first),
        ("empty-two-past-end", (0,), (1,), last + 2),
        ("empty-below-start", (2, 0), (1, 1), first - 1),
        ("huge-stride", (2,), (2**40,), first),
        ("huge-negative-offset", (), (), -(2**50)),
    ]


def oob_negative_layouts(first, last):
    """Out-of-bounds layouts with negative strides (torch: only in a subprocess)."""
    return [
        ("negative-below-start", (3,), (-1,), first + 1),
        ("negative-2d-below", (2, 2), (-3, 1), first + 2),
        ("negative-above", (2,), (-1,), last + 1),
        ("negative-huge", (2, 2), (-(2**40), 1), last),
    ]


OOB_IDS = [c[0] for c in oob_layouts(0, 5)]
OOB_NEG_IDS = [c[0] for c in oob_negative_layouts(0, 5)]


def assert_out_of_bounds(base, L, n_elements):
    with pytest.raises(ValueError, match="outside base's buffer") as info:
        strided.view(base, L)
    msg = str(info.value)
    assert f"holds {n_elements} elements" in msg
    assert ("span" in msg) if L.size else ("offset" in msg)
    for copy in (True, False):
        with pytest.raises(ValueError, match="outside base's buffer"):
            strided.view(base, L, copy=copy)


@pytest.fixture
def nothing_built(monkeypatch):
    """Make the constructors of torch and array-api-strict views fail loudly: an
    out-of-bounds layout must be refused before any of them is called."""
    def forbid(*args, **kwargs):
        raise AssertionError("a view was built for a layout that should have been refused")
    if HAVE_TORCH:
        monkeypatch.setattr(torch, "as_strided", forbid)
    if HAVE_XP:
        monkeypatch.setattr(xp, "from_dlpack", forbid)


@pytest.mark.parametrize("case", OOB_IDS)
@pytest.mark.parametrize("b", ALL)
def test_out_of_bounds(b, case, nothing_built):
    n = 6
    values = buffer_values(n, b.dtype)
    base = b.make(values, GUARD)
    first, last = b.extent(n, GUARD if b.guards else 0)
    _, sizes, strides, offset = next(c for c in oob_layouts(first, last) if c[0] == case)
    assert_out_of_bounds(base, b.layout(sizes, strides, offset), last - first + 1)


@pytest.mark.parametrize("case", OOB_NEG_IDS)
@pytest.mark.parametrize("b", backends(lambda b: not b.is_torch))
def test_out_of_bounds_negative_strides(b, case, nothing_built):
    n = 6
    base = b.make(buffer_values(n, b.dtype), GUARD)
    first, last = b.extent(n, GUARD if b.guards else 0)
    _, sizes, strides, offset = next(c for c in oob_negative_layouts(first, last)
                                     if c[0] == case)
    assert_out_of_bounds(base, b.layout(sizes, strides, offset), last - first + 1)


def guarded_base(b, n):
    """Base of n values with guard elements around it (where the backend has room for them):
    (base, guard count, first and last offset of base's memory, the values guards included)."""
    values = buffer_values(n, b.dtype)
    base = b.make(values, GUARD)
    guard = GUARD if b.guards else 0
    first, last = b.extent(n, guard)
    fence = np.full(guard, guard_value(b.dtype), b.dtype)
    return base, guard, first, last, np.concatenate([fence, values, fence])


@pytest.mark.parametrize("b", ALL)
def test_bounds_exact_fit_is_allowed(b):
    """The layouts that just fit base's memory are views; for torch that memory is the whole
    storage, guards included."""
    n = 6
    base, guard, first, last, full = guarded_base(b, n)
    for sizes, strides, offset in [((last - first + 1,), (1,), first), ((), (), first),
                                   ((), (), last), ((0,), (1,), last + 1),
                                   ((2, 2), (0, last - first), first)]:
        v = strided.view(base, b.layout(sizes, strides, offset))
        expect = expected_values(full, sizes, strides, offset + guard)
        np.testing.assert_array_equal(b.values(v), expect)
    if not b.storage_wide:
        assert first == 0
        assert last == n - 1


@pytest.mark.parametrize("b", ALL)
def test_bounds_exhaustive_small_layouts(b):
    """Every small rank-1 and rank-2 layout near the ends of the buffer: a view exactly when
    the oracle says every element is inside base's memory, and then with the oracle's values;
    the guard elements around base are never shown (except torch's, which are storage)."""
    n = 4
    base, guard, first, last, full = guarded_base(b, n)
    stride_range = range(0, 4) if b.is_torch else range(-2, 3)
    shapes = [(k,) for k in range(6)] + list(itertools.product(range(4), repeat=2))
    checked = refused = 0
    for sizes in shapes:
        for strides in itertools.product(stride_range, repeat=len(sizes)):
            for offset in range(first - 3, last + 4):
                offs = brute_offsets(sizes, strides, offset)
                inside = (all(first <= o <= last for o in offs) if offs
                          else first <= offset <= last + 1)
                L = b.layout(sizes, strides, offset)
                if not inside:
                    with pytest.raises(ValueError, match="outside base's buffer"):
                        strided.view(base, L)
                    refused += 1
                    continue
                v = strided.view(base, L)
                got = b.values(v)
                np.testing.assert_array_equal(
                    got, expected_values(full, sizes, strides, offset + guard),
                    err_msg=f"{L}")
                if not b.storage_wide and got.size:
                    assert not np.any(got == guard_value(b.dtype)), f"{L} shows a guard"
                checked += 1
    assert checked > 500
    assert refused > 500


@pytest.mark.parametrize("b", ALL)
def test_itemsize_mismatch(b, nothing_built):
    base = b.make(buffer_values(8, b.dtype), GUARD)
    for itemsize in {1, 2, 4, 8, 3, 16} - {b.itemsize}:
        L = strided.Layout((1,), itemsize=itemsize)
        with pytest.raises(ValueError, match="itemsize"):
            strided.view(base, L)
        with pytest.raises(ValueError, match="itemsize"):
            strided.view(base, L, copy=True)


@pytest.mark.parametrize("b", ALL)
def test_empty_base(b, nothing_built):
    base = b.make(np.empty(0, b.dtype), 0)
    assert describe(base).extent == (0, -1)
    for sizes, strides, offset in [((1,), (1,), 0), ((), (), 0), ((2, 3), (0, 0), 0),
                                   ((0,), (1,), 1), ((0,), (1,), -1)]:
        with pytest.raises(ValueError, match=r"outside base's buffer.*holds 0 elements"):
            strided.view(base, b.layout(sizes, strides, offset))


@pytest.mark.parametrize("b", ALL)
def test_empty_base_empty_layout(b):
    base = b.make(np.empty(0, b.dtype), 0)
    for sizes, strides in [((0,), (1,)), ((3, 0), (5, 1)), ((0, 0, 2), (0, 4, 9))]:
        v = strided.view(base, b.layout(sizes, strides, 0))
        assert result_type_ok(b, v)
        assert tuple(v.shape) == sizes
        assert b.values(v).size == 0


def test_numpy_window_of_bigger_buffer_is_bounded_by_the_window():
    big = np.arange(20, dtype=np.int16)
    base = big[5:15]
    v = strided.view(base, strided.Layout((2, 5), (5, 1), itemsize=2))
    np.testing.assert_array_equal(v, big[5:15].reshape(2, 5))
    for offset in (-1, 10, 100):
        with pytest.raises(ValueError, match="holds 10 elements"):
            strided.view(base, strided.Layout((1,), offset=offset, itemsize=2))


def test_numpy_reversed_base_offsets_count_memory_from_first_element():
    """base = buf[::-1]: its first element is buf[-1], its memory is the n elements below."""
    buf = np.arange(6, dtype=np.int64)
    base = buf[::-1]
    r = describe(base)
    assert r.layout.strides == (-1,)
    assert r.extent == (-5, 0)
    v = strided.view(base, strided.Layout((6,), (1,), offset=-5, itemsize=8))
    np.testing.assert_array_equal(v, buf)
    assert np.shares_memory(v, buf)
    np.testing.assert_array_equal(strided.view(base, strided.Layout((2,), (-2,), offset=0,
                                                                   itemsize=8)), [5, 3])
    for L in (strided.Layout((1,), offset=1, itemsize=8),
              strided.Layout((6,), offset=-6, itemsize=8)):
        with pytest.raises(ValueError, match="outside base's buffer"):
            strided.view(base, L)


def test_numpy_broadcast_base_memory_is_one_element():
    base = np.broadcast_to(np.arange(3.0)[1:2], (5,))
    assert describe(base).extent == (0, 0)
    v = strided.view(base, strided.Layout((2, 2), (0, 0), itemsize=8))
    np.testing.assert_array_equal(v, np.ones((2, 2)))
    assert v.flags.writeable is False           # broadcast_to gives a read-only array
    with pytest.raises(ValueError, match="holds 1 elements"):
        strided.view(base, strided.Layout((2,), itemsize=8))


def test_strided_memoryview_memory_is_its_span():
    """A strided base's memory is its span, gaps included."""
    raw = bytes(range(10))
    mv = memoryview(raw)[1::3]             # 1, 4, 7
    assert strided.layout_of(mv) == strided.Layout((3,), (3,))
    assert describe(mv).extent == (0, 6)
    np.testing.assert_array_equal(strided.view(mv, strided.Layout((7,))), list(range(1, 8)))
    with pytest.raises(ValueError, match="holds 7 elements"):
        strided.view(mv, strided.Layout((8,)))


# ---- layout_of on native arrays ------------------------------------------------------------


def _as_strided(shape, byte_strides, dtype=np.int32, n=64):
    return np.lib.stride_tricks.as_strided(np.zeros(n, dtype), shape, byte_strides)


NUMPY_NATIVE = [
    ("c-order", lambda: np.zeros((2, 3, 4), np.int16), (2, 3, 4), (12, 4, 1), 2),
    ("f-order", lambda: np.zeros((2, 3, 4), np.float64, order="F"), (2, 3, 4), (1, 2, 6), 8),
    ("transposed", lambda: np.zeros((2, 3, 4), np.float32).transpose(1, 2, 0), (3, 4, 2),
     (4, 1, 12), 4),
    ("sliced-steps", lambda: np.zeros((6, 8), np.int32)[1::2, ::3], (3, 3), (16, 3), 4),
    ("negative-steps", lambda: np.zeros((4, 5))[::-1, ::-2], (4, 3), (-5, -2), 8),
    ("broadcast-to", lambda: np.broadcast_to(np.arange(3, dtype=np.int8), (4, 3)), (4, 3),
     (0, 1), 1),
    ("structured", lambda: np.zeros((2, 3), dtype=[("a", "i1"), ("b", "<i4")]), (2, 3),
     (3, 1), 5),
    ("structured-sliced", lambda: np.zeros(6, dtype=[("a", "i1"), ("b", "<i4")])[::2], (3,),
     (2,), 5),
    ("rank0", lambda: np.array(5.0), (), (), 8),
    ("complex", lambda: np.zeros((2, 2), np.complex128)[:, ::-1], (2, 2), (2, -1), 16),
    ("size1-odd-byte-stride", lambda: _as_strided((3, 1), (8, 7)), (3, 1), None, 4),
    ("size0-odd-byte-stride", lambda: _as_strided((0, 3), (7, 4)), (0, 3), None, 4),
    ("real-part", lambda: np.zeros(4, np.complex64).real, (4,), (2,), 4),
]


@pytest.mark.parametrize(("make", "sizes", "strides", "itemsize"),
                         [pytest.param(*c[1:], id=c[0]) for c in NUMPY_NATIVE])
def test_layout_of_numpy(make, sizes, strides, itemsize):
    x = make()
    L = strided.layout_of(x)
    assert L.sizes == sizes
    assert L.itemsize == itemsize
    assert L.offset == 0
    if strides is not None:
        assert L.strides == strides
        assert L.byte_strides == x.strides
    else:   # any stride fits a size-1 axis; the others are exact
        assert all(n <= 1 or L.byte_strides[d] == x.strides[d] for d, n in enumerate(sizes))
    r = describe(x)
    assert r.ptr == x.__array_interface__["data"][0]
    assert r.extent == (L.span if L.size else (0, -1))
    assert r.library == "numpy"
    # viewing x over itself reproduces x
    if x.size:
        np.testing.assert_array_equal(strided.view(x, L), x)


@pytest.mark.parametrize(("make", "axis"), [
    pytest.param(lambda: np.zeros(4, dtype=[("a", "i1"), ("b", "<i4")])["b"], 0,
                 id="packed-struct-field"),
    pytest.param(lambda: _as_strided((2, 3), (16, 6)), 1, id="axis1-byte-stride-6"),
    pytest.param(lambda: _as_strided((3, 2), (-10, 4)), 0, id="negative-byte-stride"),
])
def test_layout_of_numpy_byte_strides_not_multiple_of_itemsize(make, axis):
    x = make()
    with pytest.raises(ValueError, match=rf"axis {axis}\b.*not a multiple of the itemsize"):
        strided.layout_of(x)
    with pytest.raises(ValueError, match=rf"axis {axis}\b"):
        strided.view(x, strided.Layout((1,), itemsize=x.itemsize))


def test_layout_of_numpy_scalar_and_view_of_it():
    assert strided.layout_of(np.float32(2.5)) == strided.Layout((), itemsize=4)
    np.testing.assert_array_equal(strided.view(np.int16(7), strided.Layout((2,), (0,),
                                                                           itemsize=2)), [7, 7])


def test_numpy_scalar_is_read_only():
    """numpy scalars are immutable: their view must not pretend to be writable."""
    s = np.float32(2.5)
    assert describe(s).writeable is False
    v = strided.view(s, strided.Layout((), itemsize=4))
    assert v.flags.writeable is False
    with pytest.raises(ValueError, match="read-only"):
        v[()] = 1


def test_describe_numpy_dtype_codes():
    for dtype, code in [(np.float16, (2, 16, 1)), (np.int64, (0, 64, 1)), (np.uint16, (1, 16, 1)),
                        (np.complex64, (5, 64, 1)), (np.bool_, (6, 8, 1)),
                        (np.dtype("V3"), None), (np.dtype("M8[s]"), None)]:
        assert describe(np.zeros(2, dtype)).dtype == code, dtype


def test_describe_numpy_non_native_byte_order_has_no_dlpack_dtype():
    swapped = np.zeros(3, np.dtype(np.int32).newbyteorder())
    assert describe(swapped).dtype is None


BUFFER_NATIVE = [
    ("bytes", lambda: b"abcd", (4,), (1,), 1, False),
    ("bytearray", lambda: bytearray(5), (5,), (1,), 1, True),
    ("memoryview-step", lambda: memoryview(b"abcdef")[::2], (3,), (2,), 1, False),
    ("memoryview-reversed", lambda: memoryview(bytearray(b"abcdef"))[::-1], (6,), (-1,), 1,
     True),
    ("memoryview-2d", lambda: memoryview(np.zeros((2, 3), np.int16)), (2, 3), (3, 1), 2, True),
    ("memoryview-2d-transposed", lambda: memoryview(np.zeros((2, 3), np.int16).T), (3, 2),
     (1, 3), 2, True),
    ("memoryview-cast", lambda: memoryview(bytearray(16)).cast("d"), (2,), (1,), 8, True),
    ("array-d", lambda: __import__("array").array("d", [1.0, 2.0, 3.0]), (3,), (1,), 8, True),
]


@pytest.mark.parametrize(("make", "sizes", "strides", "itemsize", "writeable"),
                         [pytest.param(*c[1:], id=c[0]) for c in BUFFER_NATIVE])
def test_layout_of_buffers(make, sizes, strides, itemsize, writeable):
    x = make()
    assert strided.layout_of(x) == strided.Layout(sizes, strides, itemsize=itemsize)
    r = describe(x)
    assert r.library == "numpy"
    assert r.writeable is writeable
    expect = np.asarray(memoryview(x))
    np.testing.assert_array_equal(
        strided.view(x, strided.Layout(sizes, strides, itemsize=itemsize)), expect)


@needs_torch
@pytest.mark.parametrize(("make", "sizes", "strides", "extent"), [
    pytest.param(lambda: torch.zeros(2, 3, 4), (2, 3, 4), (12, 4, 1), (0, 23), id="contiguous"),
    pytest.param(lambda: torch.zeros(2, 3, 4).transpose(0, 2), (4, 3, 2), (1, 4, 12), (0, 23),
                 id="transposed"),
    pytest.param(lambda: torch.zeros(2, 3, 4, 5).to(memory_format=torch.channels_last),
                 (2, 3, 4, 5), (60, 1, 15, 3), (0, 119), id="channels-last"),
    pytest.param(lambda: torch.arange(3.0).expand(4, 3), (4, 3), (0, 1), (0, 2), id="expand"),
    pytest.param(lambda: torch.zeros(4, 6)[1:, ::2], (3, 3), (6, 2), (-6, 17),
                 id="sliced-storage-offset"),
    pytest.param(lambda: torch.zeros(10)[7:9], (2,), (1,), (-7, 2), id="tail-slice"),
    pytest.param(lambda: torch.zeros(0, 3), (0, 3), (3, 1), (0, -1), id="empty"),
    pytest.param(lambda: torch.tensor(3.0), (), (), (0, 0), id="rank0"),
    pytest.param(lambda: torch.zeros(4, 2, dtype=torch.complex64).conj()[1:], (3, 2), (2, 1),
                 (-2, 5), id="conj"),
])
def test_layout_of_torch(make, sizes, strides, extent):
    t = make()
    L = strided.layout_of(t)
    assert L == strided.Layout(sizes, strides, itemsize=t.element_size())
    r = describe(t)
    assert r.library == "torch"
    assert r.extent == extent
    assert r.device == (1, 0)
    assert r.lazy == ("conj" if t.is_conj() else None)
    if t.numel():
        assert r.ptr == t.data_ptr()


@needs_torch
def test_describe_torch_lazy_bits_and_dtypes():
    z = torch.tensor([1 + 2j, 3 - 4j], dtype=torch.complex64)
    assert describe(z).lazy is None
    assert describe(z.conj()).lazy == "conj"
    neg = z.conj().imag                 # torch gives the imaginary part of a conj a neg bit
    assert neg.is_neg()
    r = describe(neg)
    assert r.lazy == "neg"
    assert r.layout == strided.Layout((2,), (2,), itemsize=4)
    for dtype, code in [(torch.float32, (2, 32, 1)), (torch.bfloat16, (4, 16, 1)),
                        (torch.bool, (6, 8, 1)), (torch.int8, (0, 8, 1)),
                        (torch.uint8, (1, 8, 1)), (torch.complex128, (5, 128, 1))]:
        assert describe(torch.zeros(2, dtype=dtype)).dtype == code


@needs_xp
@pytest.mark.parametrize(("make", "sizes", "strides"), [
    pytest.param(lambda: xp.zeros((3, 4)), (3, 4), (4, 1), id="contiguous"),
    pytest.param(lambda: xp.zeros((3, 4))[::2, ::-1], (2, 4), (8, -1), id="sliced"),
    pytest.param(lambda: xp.permute_dims(xp.zeros((3, 4)), (1, 0)), (4, 3), (1, 4),
                 id="transposed"),
    pytest.param(lambda: xp.broadcast_to(xp.zeros((1, 4)), (3, 4)), (3, 4), (0, 1),
                 id="broadcast"),
    pytest.param(lambda: xp.asarray(2.0), (), (), id="rank0"),
])
def test_layout_of_array_api_strict(make, sizes, strides):
    a = make()
    assert strided.layout_of(a) == strided.Layout(sizes, strides, itemsize=8)
    r = describe(a)
    assert r.library == "dlpack"
    assert r.dtype == (2, 64, 1)
    assert r.ptr == XP.address(a)


@pytest.mark.parametrize("obj", [[1, 2, 3], {"a": 1}, None, 3, 2.5, "abc", object(), (1, 2)],
                         ids=lambda o: type(o).__name__)
def test_unsupported_objects_are_type_errors(obj):
    with pytest.raises(TypeError, match="not an array strided can read"):
        strided.layout_of(obj)
    with pytest.raises(TypeError):
        describe(obj)
    with pytest.raises(TypeError):
        strided.view(obj, strided.Layout((1,)))


@pytest.mark.parametrize("b", ALL)
@pytest.mark.parametrize("layout", [None, (2, 3), [1], "NCHW", {"sizes": (1,)}],
                         ids=lambda o: type(o).__name__)
def test_layout_must_be_a_layout(b, layout):
    base = b.make(buffer_values(6, b.dtype), 0)
    with pytest.raises(TypeError, match=r"strided\.Layout"):
        strided.view(base, layout)


@pytest.mark.parametrize("b", ALL)
@pytest.mark.parametrize("copy", [0, 1, "", "yes", [], 1.0])
def test_copy_must_be_bool_or_none(b, copy):
    base = b.make(buffer_values(6, b.dtype), 0)
    with pytest.raises(TypeError, match="copy"):
        strided.view(base, b.layout((2,)), copy=copy)


# ---- copy semantics ------------------------------------------------------------------------


@pytest.mark.parametrize(("b", "name", "n", "L"), backend_cases())
def test_copy_true_is_independent(b, name, n, L):
    values, base, L = make_case(b, n, L)
    c = strided.view(base, L, copy=True)
    assert result_type_ok(b, c)
    expect = expected_values(values, L.sizes, L.strides, L.offset)
    np.testing.assert_array_equal(b.values(c), expect)
    if L.size == 0:
        return
    assert not b.shares(c, base)
    if b.result == "numpy" and not c.flags.writeable:
        return
    b.write(c, (0,) * L.ndim, sentinel(b))      # the copy is writable and on its own
    np.testing.assert_array_equal(b.read_base(base), values)
    if b.writeable:                              # and base's writes do not reach the copy
        if not b.is_torch and L.overlaps:       # an aliasing view is read-only:
            first = strided.Layout((), (), offset=L.offset, itemsize=L.itemsize)
            b.write(strided.view(base, first), (), sentinel(b, 1))   # write its first element
        else:
            b.write(strided.view(base, L), (0,) * L.ndim, sentinel(b, 1))
        assert b.values(c).reshape(-1)[0] == sentinel(b)


# ---- torch specifics (no negative strides in this process) ---------------------------------

TORCH_NONNEG = [pytest.param(n, L, id=name) for name, n, L in CASES if not has_negative(L)]


@needs_torch
@pytest.mark.parametrize(("n", "L"), TORCH_NONNEG)
def test_torch_autograd_counts_every_reach(n, L):
    leaf = torch.tensor(buffer_values(n, np.float64), requires_grad=True)
    L = with_itemsize(L, 8)
    v = strided.view(leaf, L)
    assert v.requires_grad
    weights = np.arange(1, L.size + 1, dtype=np.float64).reshape(L.sizes)
    (v * torch.from_numpy(weights)).sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(),
                                  reach_counts(n, L.sizes, L.strides, L.offset, weights))
    leaf.grad = None
    strided.view(leaf, L).sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), reach_counts(n, L.sizes, L.strides,
                                                                  L.offset))


@needs_torch
def test_torch_autograd_through_a_slice_base_inside_it():
    leaf = torch.arange(10.0, dtype=torch.float64, requires_grad=True)
    v = strided.view(leaf[2:], strided.Layout((3, 2), (2, 1), offset=1, itemsize=8))
    np.testing.assert_array_equal(v.detach().numpy(), [[3, 4], [5, 6], [7, 8]])
    v.sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), [0, 0, 0, 1, 1, 1, 1, 1, 1, 0])


@needs_torch
def test_torch_autograd_reaching_before_the_slice_base():
    """A view of t[2:] may reach t[0] (storage-wide extent): its gradient must reach it too."""
    leaf = torch.arange(10.0, dtype=torch.float64, requires_grad=True)
    v = strided.view(leaf[2:], strided.Layout((4,), (1,), offset=-2, itemsize=8))
    np.testing.assert_array_equal(v.detach().numpy(), [0, 1, 2, 3])
    v.sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), [1, 1, 1, 1, 0, 0, 0, 0, 0, 0])


@needs_torch
def test_torch_autograd_reaching_outside_a_slice_of_a_non_leaf():
    leaf = torch.arange(10.0, dtype=torch.float64, requires_grad=True)
    y = leaf * 3
    v = strided.view(y[4:], strided.Layout((2, 2), (0, 3), offset=-3, itemsize=8))
    np.testing.assert_array_equal(v.detach().numpy(), [[3, 12], [3, 12]])
    (v * torch.tensor([[1.0, 2.0], [4.0, 8.0]], dtype=torch.float64)).sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), [0, 15, 0, 0, 30, 0, 0, 0, 0, 0])


BASES_SHOWING_OTHER_VALUES = {
    # base, a layout inside base's span, the same elements by torch's own indexing
    "conj": (lambda leaf: leaf.conj()[2:], strided.Layout((2,), (2,), itemsize=16),
             lambda base: base[::2]),
    "view_as_real": (lambda leaf: torch.view_as_real(leaf)[2:],
                     strided.Layout((2,), (5,), itemsize=8),
                     lambda base: base.reshape(-1)[::5]),
}


@needs_torch
@pytest.mark.parametrize("kind", sorted(BASES_SHOWING_OTHER_VALUES))
def test_torch_autograd_base_whose_root_shows_other_values(kind):
    """When base's root holds other values: a conj bit is re-applied to a view of the root, so
    a view reaching outside base's own span still carries gradients to the root; another dtype
    cannot stand in for base, so such a view is ValueError, never a silent zero grad. Inside
    the span, values and gradients are torch's own."""
    make, inside, native = BASES_SHOWING_OTHER_VALUES[kind]

    def loss(x):   # uses the imaginary part too: a lost conj bit changes its sign
        return (x.imag * 3 + x.real).sum() if x.is_complex() else (x * torch.tensor(
            [1.0, 5.0], dtype=x.dtype)).sum()

    leaf = torch.tensor(buffer_values(6, np.complex128), requires_grad=True)
    base = make(leaf)
    v = strided.view(base, inside)
    np.testing.assert_array_equal(v.detach().resolve_conj().numpy(),
                                  native(base).detach().resolve_conj().numpy())
    loss(v).backward()
    got = leaf.grad.resolve_conj().numpy().copy()
    leaf.grad = None
    loss(native(make(leaf))).backward()
    np.testing.assert_array_equal(got, leaf.grad.resolve_conj().numpy())
    assert np.count_nonzero(got) == 2
    outside = strided.Layout((2,), (1,), offset=-1, itemsize=inside.itemsize)
    assert describe(base).extent[0] < 0                # inside the storage...
    if kind == "conj":                                 # ...reached through the root
        leaf.grad = None
        w = strided.view(base, outside)
        assert w.is_conj()
        loss(w).backward()
        got = leaf.grad.resolve_conj().numpy().copy()
        leaf.grad = None
        loss(leaf.conj()[1:3]).backward()
        np.testing.assert_array_equal(got, leaf.grad.resolve_conj().numpy())
    else:                                              # ...but not inside base's geometry
        with pytest.raises(ValueError, match="gradient would be lost"):
            strided.view(base, outside)
    vals = buffer_values(6, np.complex128)            # without grad, no restriction
    expect = np.conj(vals[1:3]) if kind == "conj" else [vals[1].imag, vals[2].real]
    np.testing.assert_array_equal(
        strided.view(make(leaf.detach()), outside).resolve_conj().numpy(), expect)


@needs_torch
def test_torch_autograd_padded_conj_base_inside_its_own_elements():
    leaf = torch.tensor(buffer_values(6, np.complex128), requires_grad=True)
    base = leaf.conj()[::2]                              # storage elements 0, 2, 4
    v = strided.view(base, strided.Layout((2,), (2,), itemsize=16))   # elements 0 and 2
    np.testing.assert_array_equal(v.detach().resolve_conj().numpy(),
                                  base[:2].detach().resolve_conj().numpy())
    v.imag.sum().backward()
    got = leaf.grad.resolve_conj().numpy().copy()
    leaf.grad = None
    leaf.conj()[::2][:2].imag.sum().backward()
    np.testing.assert_array_equal(got, leaf.grad.resolve_conj().numpy())


@needs_torch
def test_torch_autograd_leaf_view_of_a_plain_tensor():
    root = torch.zeros(10, dtype=torch.float64)
    base = root[2:].requires_grad_()
    assert base.is_leaf and base._base is root
    v = strided.view(base, strided.Layout((3,), (2,), offset=1, itemsize=8))
    assert v.requires_grad
    v.sum().backward()
    np.testing.assert_array_equal(base.grad.numpy(), [0, 1, 0, 1, 0, 1, 0, 0])


@needs_torch
def test_torch_slice_base_reaches_back_to_storage_start():
    t = torch.arange(10, dtype=torch.float32)
    base = t[2:]
    v = strided.view(base, strided.Layout((3,), (1,), offset=-2, itemsize=4))
    np.testing.assert_array_equal(v.numpy(), [0, 1, 2])
    assert v.data_ptr() == t.data_ptr()
    v[0] = -5
    assert t[0].item() == -5
    with pytest.raises(ValueError, match="outside base's buffer"):
        strided.view(base, strided.Layout((3,), (1,), offset=-3, itemsize=4))
    with pytest.raises(ValueError, match="outside base's buffer"):
        strided.view(base, strided.Layout((1,), (1,), offset=8, itemsize=4))
    assert strided.view(base, strided.Layout((0,), (1,), offset=8, itemsize=4)).shape == (0,)


@needs_torch
def test_torch_views_of_views_count_from_the_given_base():
    t = torch.arange(24, dtype=torch.float32)
    b = t[5:]
    v1 = strided.view(b, strided.Layout((3, 4), (5, 1), offset=2, itemsize=4))
    assert v1.storage_offset() == 7
    v2 = strided.view(v1, strided.Layout((2, 2), (5, 2), offset=1, itemsize=4))
    np.testing.assert_array_equal(v2.numpy(), [[8, 10], [13, 15]])
    v3 = strided.view(v1, strided.Layout((2,), (1,), offset=-7, itemsize=4))  # storage start
    np.testing.assert_array_equal(v3.numpy(), [0, 1])
    v4 = strided.view(v1, strided.Layout((), offset=16, itemsize=4))          # storage end
    assert v4.item() == 23
    with pytest.raises(ValueError, match="outside base's buffer"):
        strided.view(v1, strided.Layout((1,), (1,), offset=-8, itemsize=4))
    with pytest.raises(ValueError, match="outside base's buffer"):
        strided.view(v1, strided.Layout((1,), (1,), offset=17, itemsize=4))


def test_numpy_views_of_views_count_from_the_given_base():
    base = np.arange(20, dtype=np.int32)
    v1 = strided.view(base, strided.Layout((3, 4), (5, 1), offset=2, itemsize=4))
    assert describe(v1).extent == (0, 13)
    v2 = strided.view(v1, strided.Layout((2, 2), (5, 2), offset=1, itemsize=4))
    np.testing.assert_array_equal(v2, [[3, 5], [8, 10]])
    assert np.shares_memory(v2, base)
    for offset in (-1, 14):    # inside base, but outside v1's own span
        with pytest.raises(ValueError, match="holds 14 elements"):
            strided.view(v1, strided.Layout((1,), offset=offset, itemsize=4))


@needs_torch
@pytest.mark.parametrize(("n", "L"), TORCH_NONNEG)
def test_torch_conj_tensor_view_shows_conjugated_values(n, L):
    values = buffer_values(n, np.complex64)
    z = torch.from_numpy(values.copy()).conj()
    assert describe(z).lazy == "conj"
    L = with_itemsize(L, 8)
    v = strided.view(z, L)
    np.testing.assert_array_equal(v.resolve_conj().numpy(),
                                  expected_values(np.conj(values), L.sizes, L.strides,
                                                  L.offset))
    np.testing.assert_array_equal(
        strided.view(z, L, copy=True).resolve_conj().numpy(),
        expected_values(z.resolve_conj().numpy(), L.sizes, L.strides, L.offset))


@needs_torch
def test_torch_copy_true_has_its_own_storage():
    t = torch.arange(12, dtype=torch.float32)
    L = strided.Layout((3, 2), (4, 1), offset=1, itemsize=4)
    c = strided.view(t, L, copy=True)
    assert c.untyped_storage().data_ptr() != t.untyped_storage().data_ptr()
    np.testing.assert_array_equal(c.numpy(), [[1, 2], [5, 6], [9, 10]])
    c.zero_()
    assert t.tolist() == list(range(12))
    v = strided.view(t, L, copy=False)
    assert v.untyped_storage().data_ptr() == t.untyped_storage().data_ptr()
    assert v.storage_offset() == 1


@needs_torch
def test_torch_view_is_in_the_autograd_graph_and_on_base_device():
    leaf = torch.ones(6, requires_grad=True)
    v = strided.view(leaf, strided.Layout((2, 2), (0, 1), offset=3, itemsize=4))
    assert v.grad_fn is not None
    assert v.device == leaf.device
    assert v.dtype == leaf.dtype


# ---- torch in a subprocess: negative strides and odd inputs ---------------------------------

TORCH_NEGATIVE_SCRIPT = """
import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as hst

import conftest  # noqa: F401  (the hypothesis profiles)
import strided
from interop_backends import (BY_NAME, CASES, buffer_layouts, buffer_values, expected_values,
                              has_negative, reach_counts)

B = BY_NAME[{name!r}]
checked = {{"flip": 0, "noflip": 0}}


def check(n, sizes, strides, offset, guard):
    values = buffer_values(n, B.dtype)
    base = B.make(values, guard)
    L = B.layout(sizes, strides, offset)
    expect = expected_values(values, sizes, strides, offset)
    flips = L.size > 0 and any(s < 0 and k > 1 for k, s in zip(sizes, strides))
    v = strided.view(base, L)
    assert isinstance(v, torch.Tensor) and v.device == base.device, v
    np.testing.assert_array_equal(B.values(v), expect, err_msg=str(L))
    R = strided.layout_of(v)
    assert R.sizes == L.sizes, (R, L)
    if flips:
        checked["flip"] += 1
        try:
            strided.view(base, L, copy=False)
        except ValueError as exc:
            assert "negative strides" in str(exc), exc
        else:
            raise AssertionError(f"copy=False gave a view of {{L}}")
    else:
        # a negative stride on a size-1 dim (or in an empty layout) is a view, sign dropped
        checked["noflip"] += 1
        assert R.strides == tuple(abs(s) for s in strides), (R, L)
        v2 = strided.view(base, L, copy=False)
        np.testing.assert_array_equal(B.values(v2), expect)
        if L.size:
            assert B.shares(v, base) and B.shares(v2, base)
            assert v2.data_ptr() == base.data_ptr() + offset * B.itemsize
            B.write(v2, (0,) * L.ndim, -4321)
            assert B.read_base(base)[offset] == -4321
            values = values.copy()
            values[offset] = -4321
            expect = expected_values(values, sizes, strides, offset)
    c = strided.view(base, L, copy=True)
    np.testing.assert_array_equal(B.values(c), expect)
    if L.size:
        assert not B.shares(c, base)
    # autograd, through the flip copy as well
    leaf = torch.tensor(buffer_values(n, np.float64), requires_grad=True, device=base.device)
    L8 = strided.Layout(sizes, strides, offset=offset, itemsize=8)
    w = np.arange(1, L.size + 1, dtype=np.float64).reshape(sizes)
    out = strided.view(leaf, L8)
    assert out.requires_grad
    (out * torch.from_numpy(w).to(base.device)).sum().backward()
    np.testing.assert_array_equal(leaf.grad.cpu().numpy(),
                                  reach_counts(n, sizes, strides, offset, w))


for name, n, L in CASES:
    if has_negative(L):
        check(n, L.sizes, L.strides, L.offset, 2)
print("cases ok")


@settings(database=None)
@given(buffer_layouts(negative=True), hst.integers(0, 2))
def flipped(case, guard):
    check(*case, guard)


@settings(database=None)
@given(buffer_layouts(), hst.integers(0, 2))
def anything(case, guard):
    check(*case, guard)


flipped()
anything()
print("random ok", checked["flip"] > 50, checked["noflip"] > 50)

# conjugated values through the flip
vals = buffer_values(12, np.complex64)
device = B.make(buffer_values(1, B.dtype), 0).device
z = torch.from_numpy(vals.copy()).to(device).conj()
L = strided.Layout((2, 3), (-4, 2), offset=5, itemsize=8)
v = strided.view(z, L)
np.testing.assert_array_equal(v.resolve_conj().cpu().numpy(),
                              expected_values(np.conj(vals), L.sizes, L.strides, L.offset))
print("conj ok")

# out of bounds with negative strides, before torch builds anything
t = B.make(buffer_values(6, B.dtype), 2)
torch.as_strided = None
for sizes, strides, offset in [((3,), (-1,), -1), ((2, 2), (-3, 1), 0), ((2,), (-1,), 8),
                               ((2, 2), (-(2**40), 1), 7), ((4,), (-3,), 8)]:
    try:
        strided.view(t, strided.Layout(sizes, strides, offset=offset, itemsize=B.itemsize))
    except ValueError as exc:
        assert "outside base's buffer" in str(exc) and "holds 10 elements" in str(exc), exc
    else:
        raise AssertionError((sizes, strides, offset))
print("bounds ok")
"""


@pytest.mark.parametrize("b", backends(lambda b: b.is_torch))
def test_torch_negative_strides_in_subprocess(b):
    out = run_isolated(TORCH_NEGATIVE_SCRIPT.format(name=b.name))
    assert out.split("\n") == ["cases ok", "random ok True True", "conj ok", "bounds ok", ""]


TORCH_PROBES_SCRIPT = """
import warnings

import numpy as np
import torch

import strided
from strided.interop import describe

from isolated import probe, report

warnings.simplefilter("ignore")


def refused(x, what):
    L = strided.Layout((2,), (1,), itemsize=4)
    for fn in (strided.layout_of, describe, lambda x: strided.view(x, L)):
        try:
            fn(x)
        except ValueError as exc:
            assert what in str(exc), exc
        else:
            raise AssertionError(f"{fn} accepted {x.layout}")


@probe
def sparse_coo():
    refused(torch.sparse_coo_tensor([[0, 2]], [1.0, 2.0], (3,)), "sparse_coo")


@probe
def sparse_csr():
    refused(torch.eye(3).to_sparse_csr(), "sparse_csr")


@probe
def nested():
    refused(torch.nested.nested_tensor([torch.ones(2), torch.ones(3)]), "nested")


@probe
def meta():
    m = torch.empty(3, 4, device="meta")
    r = describe(m)
    assert r.device == (-1, 0) and r.extent == (0, 11), r
    v = strided.view(m, strided.Layout((2, 2), (4, 1), offset=5, itemsize=4))
    assert v.is_meta and tuple(v.shape) == (2, 2) and v.stride() == (4, 1), v
    assert v.storage_offset() == 5
    try:
        strided.view(m, strided.Layout((2, 2), (4, 1), offset=8, itemsize=4))
    except ValueError as exc:
        assert "outside base's buffer" in str(exc)
    else:
        raise AssertionError("meta view out of bounds")


@probe
def float8():
    f8 = torch.arange(4.0).to(torch.float8_e4m3fn)
    assert describe(f8).dtype is None
    v = strided.view(f8, strided.Layout((2,), (2,), offset=1, itemsize=1))
    assert v.dtype == torch.float8_e4m3fn and v.float().tolist() == [1.0, 3.0], v


@probe
def retyped():
    t = torch.arange(6.0)[1:].view(torch.int32)   # int32 view of float storage
    assert describe(t).extent == (-1, 4)
    v = strided.view(t, strided.Layout((2,), (5,), offset=-1, itemsize=4))
    assert v.view(torch.float32).tolist() == [0.0, 5.0], v


@probe
def flip_with_negative_size1_stride():
    t = torch.arange(4.0)
    v = strided.view(t, strided.Layout((2, 1), (-1, -1), offset=1, itemsize=4))
    assert v.tolist() == [[1.0], [0.0]], v
    v = strided.view(t, strided.Layout((1, 2, 1), (7, -2, -3), offset=3, itemsize=4))
    assert v.tolist() == [[[3.0], [1.0]]], v


@probe
def float8_negative_strides():
    f8 = torch.arange(4.0).to(torch.float8_e4m3fn)   # torch.flip has no float8 kernel
    v = strided.view(f8, strided.Layout((2,), (-2,), offset=3, itemsize=1))
    assert v.dtype == torch.float8_e4m3fn and v.float().tolist() == [3.0, 1.0], v


report()
"""


@pytest.fixture(scope="module")
def torch_probes():
    """Run every odd torch input once, in one subprocess: {probe name: "ok" or the error}."""
    if not HAVE_TORCH:
        pytest.skip("torch is not installed")
    return probe_results(run_isolated(TORCH_PROBES_SCRIPT))


@pytest.mark.parametrize("name", ["sparse_coo", "sparse_csr", "nested", "meta", "float8",
                                  "retyped"])
def test_torch_odd_inputs_in_subprocess(torch_probes, name):
    assert torch_probes[name] == "ok"


def test_torch_flip_with_negative_size1_stride_in_subprocess(torch_probes):
    assert torch_probes["flip_with_negative_size1_stride"] == "ok"


def test_torch_negative_strides_float8_in_subprocess(torch_probes):
    assert torch_probes["float8_negative_strides"] == "ok"


# ---- DLPack through a library strided does not know ----------------------------------------


class FakeNamespace:
    """A minimal array library over numpy that only speaks DLPack; it may refuse views."""

    __name__ = "fakelib"

    def __init__(self, refuse=False):
        self.refuse = refuse
        self.calls = 0

    def from_dlpack(self, x, /, *, device=None, copy=None):
        self.calls += 1
        if self.refuse and not isinstance(x, np.ndarray):
            raise BufferError("fakelib only takes numpy arrays")
        return FakeArray(np.from_dlpack(x), self)

    def asarray(self, x, /, *, copy=None):
        return FakeArray(np.array(x.data, copy=copy), self)


class FakeArray:
    def __init__(self, data, ns):
        self.data = data
        self.ns = ns

    def __dlpack__(self, **kwargs):
        return self.data.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.data.__dlpack_device__()

    def __array_namespace__(self, api_version=None):
        return self.ns


class DLPackOnly:
    """Has __dlpack__ but no __array_namespace__."""

    def __init__(self, data):
        self.data = data

    def __dlpack__(self, **kwargs):
        return self.data.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.data.__dlpack_device__()


def test_dlpack_unknown_library_zero_copy():
    data = np.arange(12, dtype=np.int16)
    base = FakeArray(data, FakeNamespace())
    assert describe(base).library == "dlpack"
    L = strided.Layout((3, 2), (-4, 2), offset=9, itemsize=2)
    v = strided.view(base, L)
    assert isinstance(v, FakeArray)
    np.testing.assert_array_equal(v.data, [[9, 11], [5, 7], [1, 3]])
    v.data[0, 0] = -1
    assert data[9] == -1
    c = strided.view(base, L, copy=True)
    assert not np.shares_memory(c.data, data)
    np.testing.assert_array_equal(c.data, [[-1, 11], [5, 7], [1, 3]])


def test_dlpack_library_that_refuses_gets_a_copy_or_an_error():
    data = np.arange(12, dtype=np.float32)
    ns = FakeNamespace(refuse=True)
    base = FakeArray(data, ns)
    L = strided.Layout((2, 3), (0, -3), offset=7, itemsize=4)
    c = strided.view(base, L)
    np.testing.assert_array_equal(c.data, [[7, 4, 1], [7, 4, 1]])
    assert c.data.dtype == np.float32
    assert not np.shares_memory(c.data, data)
    with pytest.raises(ValueError, match="copy=None"):
        strided.view(base, L, copy=False)
    calls = ns.calls
    with pytest.raises(ValueError, match="outside base's buffer"):
        strided.view(base, strided.Layout((2,), (-1,), offset=0, itemsize=4))
    assert ns.calls == calls          # refused before the library was asked


def test_dlpack_read_only_producer_gives_read_only_view():
    data = np.arange(6, dtype=np.float64)
    data.flags.writeable = False
    base = FakeArray(data, FakeNamespace())
    assert describe(base).writeable is False
    v = strided.view(base, strided.Layout((3,), (2,), itemsize=8))
    np.testing.assert_array_equal(v.data, [0, 2, 4])
    assert v.data.flags.writeable is False


def test_dlpack_without_namespace():
    obj = DLPackOnly(np.arange(4, dtype=np.int32))
    assert strided.layout_of(obj) == strided.Layout((4,), itemsize=4)
    with pytest.raises(TypeError, match="__array_namespace__"):
        strided.view(obj, strided.Layout((2,), itemsize=4))


@needs_xp
def test_array_api_strict_view_is_zero_copy_both_ways():
    a = xp.asarray(np.arange(10, dtype=np.float64))
    v = strided.view(a, strided.Layout((2, 3), (4, -1), offset=2, itemsize=8))
    np.testing.assert_array_equal(np.from_dlpack(v), [[2, 1, 0], [6, 5, 4]])
    v[1, 0] = -1.0                     # view -> base
    assert float(a[6]) == -1.0
    a[0] = 100.0                       # base -> view
    assert float(v[0, 2]) == 100.0


# ---- lifetime ------------------------------------------------------------------------------

LIFE = strided.Layout((3, 2), (-2, 1), offset=4)


def _view_of_fresh(make, itemsize):
    base = make()
    ref = weakref.ref(base) if type(base) is np.ndarray else None
    return strided.view(base, with_itemsize(LIFE, itemsize)), ref


def _churn():
    gc.collect()
    junk = [np.full(64, 7.0) for _ in range(200)]   # reuse freed memory if there is any
    del junk


def test_lifetime_numpy():
    v, ref = _view_of_fresh(lambda: np.arange(10, dtype=np.float64), 8)
    _churn()
    assert ref() is not None
    np.testing.assert_array_equal(v, [[4, 5], [2, 3], [0, 1]])
    del v
    gc.collect()
    assert ref() is None, "the view leaked its base"


@pytest.mark.parametrize("kind", ["bytearray", "bytes", "array", "memoryview"])
def test_lifetime_buffers(kind):
    makers = {
        "bytearray": lambda: bytearray(range(10)),
        "bytes": lambda: bytes(range(10)),
        "array": lambda: __import__("array").array("B", range(10)),
        "memoryview": lambda: memoryview(bytearray(range(12)))[1:11],
    }
    v, _ = _view_of_fresh(makers[kind], 1)
    _churn()
    expect = [[4, 5], [2, 3], [0, 1]] if kind != "memoryview" else [[5, 6], [3, 4], [1, 2]]
    np.testing.assert_array_equal(v, expect)


def test_bytearray_cannot_be_resized_under_a_view():
    ba = bytearray(range(8))
    v = strided.view(ba, strided.Layout((2, 2), (4, 1)))
    with pytest.raises(BufferError):
        ba.extend(b"more")
    np.testing.assert_array_equal(v, [[0, 1], [4, 5]])
    del v
    gc.collect()
    ba.extend(b"more")                 # the export is released with the view
    assert len(ba) == 12


@needs_torch
def test_lifetime_torch():
    def fresh():
        t = torch.arange(10, dtype=torch.float32)
        return strided.view(t, strided.Layout((3, 2), (2, 1), offset=4, itemsize=4))
    v = fresh()
    _churn()
    np.testing.assert_array_equal(v.numpy(), [[4, 5], [6, 7], [8, 9]])
    v2 = strided.view(fresh(), strided.Layout((2,), (0,), offset=-4, itemsize=4))
    _churn()
    np.testing.assert_array_equal(v2.numpy(), [0, 0])


@needs_xp
def test_lifetime_array_api_strict():
    def fresh():
        a = xp.asarray(np.arange(10, dtype=np.float64))
        inner = getattr(a, "_array", None)
        if inner is None:
            pytest.skip("array-api-strict does not expose its numpy array as _array")
        return strided.view(a, with_itemsize(LIFE, 8)), weakref.ref(inner)
    v, ref = fresh()
    _churn()
    assert ref() is not None, "the producer's memory died under a live view"
    np.testing.assert_array_equal(np.from_dlpack(v), [[4, 5], [2, 3], [0, 1]])
    del v
    _churn()
    assert ref() is None, "the producer's memory outlived the view (a leaked capsule)"


@needs_xp
def test_describe_does_not_leak_the_producer():
    a = xp.asarray(np.arange(4, dtype=np.float64))
    ref = weakref.ref(a._array)
    r = describe(a)
    assert r.owner is not None
    del a
    gc.collect()
    assert ref() is not None          # the record keeps it alive
    del r
    gc.collect()
    assert ref() is None


# ---- import isolation ----------------------------------------------------------------------


def test_numpy_and_bytes_never_import_torch():
    out = run_isolated("""
        import sys
        import numpy as np
        import strided
        from strided.interop import describe
        assert "torch" not in sys.modules
        buf = np.arange(12, dtype=np.float32)
        v = strided.view(buf, strided.Layout((2, 3), (-4, 0), offset=9, itemsize=4))
        strided.layout_of(v)
        strided.view(buf, strided.Layout((2,), itemsize=4), copy=True)
        strided.layout_of(b"abc")
        strided.view(b"abcd", strided.Layout((2,), (2,)))
        strided.view(bytearray(4), strided.Layout((2,), (-2,), offset=3))
        describe(memoryview(bytearray(8)).cast("i"))
        for bad in ([1, 2], None, 3):
            try:
                strided.view(bad, strided.Layout((1,)))
            except TypeError:
                pass
        try:
            strided.view(buf, strided.Layout((20,), itemsize=4))
        except ValueError:
            pass
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in
                        ("torch", "array_api_strict", "jax", "cupy", "hypothesis"))
        print(loaded)
    """)
    assert out == "[]\n"
