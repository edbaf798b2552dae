"""The public copy API: ``strided.copyto`` and ``strided.relayout``.

``copyto(dst, src)`` is checked on numpy arrays of every kind of dtype (odd itemsizes, structured,
non-native byte order, strings), CPU torch tensors, array-api-strict arrays and bytes-like objects,
against a brute-force per-index oracle (or ``np.copyto`` / torch's ``copy_`` on an identical copy
of the buffers) that also proves no byte outside the destination's elements is written. Then the
overlapping source/destination cases, 1 vs 2 threads, and every refusal, each checked to write
nothing. ``relayout`` results must carry exactly the requested strides (channels_last for torch
"NHWC") and the same values.

torch never sees a negative stride in this process: those cases, meta tensors, and anything else
that could abort the interpreter run in a subprocess. Every torch / array-api-strict test skips
when the library is not installed (the serial CI build has neither OpenMP nor torch).
"""

from __future__ import annotations

import ctypes
import importlib.util

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as hst
from isolated import probe_results, run_isolated
from numpy.lib.stride_tricks import as_strided
from strategies import (
    brute_copy_bytes,
    copy_sizes,
    element_span,
    nonoverlapping_strides,
    ref_packed_strides,
    source_strides,
)
from test_copy_engine import (
    THREADS,
    assert_same_bytes,
    blocked_pair,
    packed,
    placed,
    random_bytes,
    sentinel,
    shared_placement,
    view_over,
)

import strided

HAVE_TORCH = importlib.util.find_spec("torch") is not None
HAVE_XP = importlib.util.find_spec("array_api_strict") is not None
if HAVE_TORCH:
    import torch
if HAVE_XP:
    import array_api_strict as xp

needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="torch is not installed")
needs_xp = pytest.mark.skipif(not HAVE_XP, reason="array-api-strict is not installed")


def cuda_available():
    return HAVE_TORCH and torch.cuda.is_available()


needs_cuda = pytest.mark.skipif(not cuda_available(), reason="no CUDA device for torch")

STRUCT3 = np.dtype([("a", "u1"), ("b", "<u2")])              # packed: itemsize 3
STRUCT16 = np.dtype([("x", "<f8"), ("y", "<i4"), ("z", "V4")])
DTYPES = [np.dtype(d) for d in (
    "?", "u1", "i1", "<i2", "<f2", "<u4", "<f4", "<i8", "<f8", "<c8", "<c16", "V3", "S3", "V6",
    "V12", ">i4", ">f8", "<U1", "S5", "V16",
)] + [STRUCT3, STRUCT16]


def same_values(a, b):
    """Bitwise equality of two numpy arrays of one dtype (NaN payloads, padding bytes, ...)."""
    assert a.shape == b.shape and a.dtype == b.dtype
    return np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


# ---- numpy: property tests -----------------------------------------------------------------


@hst.composite
def typed_cases(draw):
    dtype = draw(hst.sampled_from(DTYPES))
    sizes = draw(copy_sizes())
    return dtype, sizes, draw(nonoverlapping_strides(sizes)), draw(source_strides(sizes))


@given(case=typed_cases(), threads=hst.sampled_from(THREADS), seed=hst.integers(0, 2**32 - 1),
       extra=hst.integers(0, 4), readonly_src=hst.booleans())
def test_copyto_numpy_matches_brute_force(case, threads, seed, extra, readonly_src):
    dtype, sizes, dst_strides, src_strides = case
    k = dtype.itemsize
    src_buf, sf = placed(sizes, src_strides, k, fill=lambda n: random_bytes(n, seed))
    dst_buf, df = placed(sizes, dst_strides, k, fill=sentinel, extra=extra)
    src = view_over(src_buf, sf, sizes, src_strides, k, dtype)
    dst = view_over(dst_buf, df, sizes, dst_strides, k, dtype)
    if readonly_src:
        src.flags.writeable = False
    expected = brute_copy_bytes(dst_buf, df, dst_strides, src_buf, sf, src_strides, sizes, k)
    src_before = src_buf.copy()
    if threads is None:
        strided.copyto(dst, src)
    else:
        strided.copyto(dst, src, num_threads=threads)
    assert_same_bytes(dst_buf, expected, f"{dtype} {sizes} dst {dst_strides} src {src_strides}")
    assert_same_bytes(src_buf, src_before, "the source changed")


@given(case=typed_cases(), seed=hst.integers(0, 2**32 - 1), data=hst.data())
def test_copyto_numpy_views_of_one_buffer(case, seed, data):
    """dst and src are views of the same buffer: the result is a copy of the original source."""
    dtype, sizes, dst_strides, src_strides = case
    k = dtype.itemsize
    buf, df, sf = shared_placement(sizes, dst_strides, src_strides, k, seed, data)
    expected = brute_copy_bytes(buf, df, dst_strides, buf, sf, src_strides, sizes, k)
    strided.copyto(view_over(buf, df, sizes, dst_strides, k, dtype),
                   view_over(buf, sf, sizes, src_strides, k, dtype))
    assert_same_bytes(buf, expected)


# ---- numpy: explicit cases -----------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["<f4", "u1", "V3", "<c16"])
@pytest.mark.parametrize("n", [1, 7, 64, 333])
def test_copyto_square_matrix_onto_its_own_transpose(dtype, n):
    a = np.frombuffer(random_bytes(n * n * np.dtype(dtype).itemsize, n), dtype).reshape(n, n)
    a = a.copy()
    expected = a.T.copy()
    strided.copyto(a, a.T)
    assert same_values(a, expected)


def test_copyto_shifted_and_reversed_views_of_one_array():
    for k, dtype in [(1, "u1"), (4, "<f4"), (3, "V3"), (16, "<c16")]:
        base = np.frombuffer(random_bytes(10_008 * k, k), dtype).copy()
        for dst, src in [(slice(1, None), slice(None, -1)), (slice(None, -1), slice(1, None)),
                         (slice(5, None), slice(None, -5)), (slice(None), slice(None, None, -1)),
                         (slice(None, None, 2), slice(1, None, 2)),
                         (slice(None, None, -2), slice(None, 5004))]:
            b = base.copy()
            expected = b.copy()
            expected[dst] = b[src].copy()
            strided.copyto(b[dst], b[src])
            assert same_values(b, expected), (dtype, dst, src)


def test_copyto_rank0_and_numpy_scalars():
    d = np.zeros((), np.float64)
    strided.copyto(d, np.array(2.5))
    assert d[()] == 2.5
    strided.copyto(d, np.float64(-1.25))             # a numpy scalar is a read-only source
    assert d[()] == -1.25
    e = np.zeros((0, 4), np.int8)
    strided.copyto(e, np.zeros((0, 4), np.int8)[::-1])
    assert e.shape == (0, 4)


def test_copyto_equivalent_dtypes_and_non_native_order():
    d = np.zeros(5, np.int64)
    strided.copyto(d, np.arange(5, dtype=np.longlong)[::-1])        # 'q' and 'l': one dtype
    np.testing.assert_array_equal(d, [4, 3, 2, 1, 0])
    d = np.zeros((3, 2), ">f8")
    strided.copyto(d, np.arange(6, dtype=">f8").reshape(2, 3).T)
    np.testing.assert_array_equal(d, np.arange(6.0).reshape(2, 3).T)


def test_copyto_dtypes_without_buffer_protocol():
    """numpy exports no buffer of datetime64 / timedelta64: the slow path copies them."""
    src = np.arange(12).astype("M8[s]").reshape(3, 4)
    d = np.zeros((4, 3), "M8[s]")
    strided.copyto(d, src.T)
    np.testing.assert_array_equal(d, src.T)
    t = np.zeros(5, "m8[ms]")
    strided.copyto(t, np.arange(5).astype("m8[ms]")[::-1])
    np.testing.assert_array_equal(t.astype(np.int64), [4, 3, 2, 1, 0])


def test_copyto_unaligned_byte_strides_copies_right_or_refuses():
    """A field of a packed structured array has byte strides that are no multiple of its
    itemsize: strided copies it exactly or refuses with ValueError, never writes wrong data."""
    rec = np.zeros(7, [("a", "u1"), ("b", "<f4")])
    rec["a"] = np.arange(7)
    rec["b"] = np.arange(7) + 0.5
    d = np.zeros(7, np.float32)
    try:
        strided.copyto(d, rec["b"])
    except ValueError:
        assert not d.any()
    else:
        np.testing.assert_array_equal(d, np.arange(7) + 0.5)
    try:
        strided.copyto(rec["b"], np.full(7, -2.0, np.float32))
    except ValueError:
        np.testing.assert_array_equal(rec["b"], np.arange(7) + 0.5)
    else:
        np.testing.assert_array_equal(rec["b"], np.full(7, -2.0))
    np.testing.assert_array_equal(rec["a"], np.arange(7))          # the other field untouched


# ---- numpy: large cases, guards, threads ---------------------------------------------------


def _large_numpy_cases():
    c = []
    nchw = (2, 3, 257, 259)
    c.append(pytest.param((1000, 1000), packed((1000, 1000)), packed((1000, 1000), (1, 0)),
                          "<f4", id="transpose-f32"))
    c.append(pytest.param((999, 1001), packed((999, 1001)), packed((999, 1001), (1, 0)), "u1",
                          id="transpose-u8"))
    c.append(pytest.param(nchw, packed(nchw, (0, 2, 3, 1)), packed(nchw), "u1",
                          id="nchw-nhwc-u8-c3"))
    c.append(pytest.param((2, 4, 257, 259), packed((2, 4, 257, 259), (0, 2, 3, 1)),
                          packed((2, 4, 257, 259)), "u1", id="nchw-nhwc-u8-c4"))
    c.append(pytest.param(*blocked_pair(2, 64, 17, 19, 32), "u1", id="nchw-nchw32-u8"))
    c.append(pytest.param(*blocked_pair(2, 16, 31, 33, 4), "<f4", id="nchw-nchw4-f32"))
    c.append(pytest.param((301, 299), (311, 1), packed((301, 299), (1, 0)), "V3",
                          id="transpose-padded-v3"))
    c.append(pytest.param((500, 600), packed((500, 600)), (0, 1), STRUCT3, id="broadcast-rows"))
    c.append(pytest.param((700, 500), packed((700, 500)), (-1, -700), "<c16",
                          id="reversed-transpose-c16"))
    return c


@pytest.mark.parametrize(("sizes", "dst_strides", "src_strides", "dtype"), _large_numpy_cases())
def test_copyto_large_numpy_with_guards_and_threads(sizes, dst_strides, src_strides, dtype):
    dtype = np.dtype(dtype)
    k = dtype.itemsize
    src_buf, sf = placed(sizes, src_strides, k, fill=lambda n: random_bytes(n, 11))
    dst0, df = placed(sizes, dst_strides, k, fill=sentinel)
    src = view_over(src_buf, sf, sizes, src_strides, k, dtype)
    expected = dst0.copy()
    np.copyto(view_over(expected, df, sizes, dst_strides, k, dtype), src)
    results = {}
    for threads in THREADS:
        buf = dst0.copy()
        strided.copyto(view_over(buf, df, sizes, dst_strides, k, dtype), src,
                       num_threads=threads)
        assert_same_bytes(buf, expected, f"num_threads={threads}")
        results[threads] = buf
    assert results[1].tobytes() == results[2].tobytes()


# ---- bytes-like objects ---------------------------------------------------------------------


def test_copyto_bytearray_and_memoryview():
    b = bytearray(6)
    strided.copyto(b, b"abcdef")
    assert b == b"abcdef"
    strided.copyto(memoryview(b)[::2], b"XYZ")
    assert b == b"XbYdZf"
    strided.copyto(b, memoryview(b)[::-1])                          # overlapping, reversed
    assert b == b"fZdYbX"
    m = memoryview(bytearray(6)).cast("B", (2, 3))
    strided.copyto(m, np.arange(1, 7, dtype=np.uint8).reshape(3, 2).T)
    assert m.tolist() == [[1, 3, 5], [2, 4, 6]]
    g = bytearray(b"\xee" * 10)
    strided.copyto(memoryview(g)[2:8], np.arange(6, dtype=np.uint8)[::-1])
    assert g == b"\xee\xee" + bytes([5, 4, 3, 2, 1, 0]) + b"\xee\xee"
    d = memoryview(bytearray(16)).cast("d")
    strided.copyto(d, np.array([1.5, -2.0]))
    assert d.tolist() == [1.5, -2.0]


# ---- refusals: the error, and nothing written ----------------------------------------------


def _readonly(a):
    a.flags.writeable = False
    return a


def _writeable_overlap(shape, strides):
    base = np.zeros(16, np.float32)
    return as_strided(base, shape=shape, strides=strides, writeable=True)


def _f4(shape, start=1):
    return np.arange(start, start + int(np.prod(shape)), dtype=np.float32).reshape(shape)


REFUSALS = {
    # read-only destinations
    "readonly-numpy": (lambda: (_readonly(np.zeros((3, 4), np.float32)), _f4((3, 4))),
                       ValueError),
    "readonly-numpy-view": (lambda: (_readonly(np.zeros((4, 3), np.float32)).T, _f4((3, 4))),
                            ValueError),
    "bytes": (lambda: (b"\0\0\0", bytearray(b"xyz")), ValueError),
    "readonly-memoryview": (lambda: (memoryview(b"\0\0\0"), b"xyz"), ValueError),
    "numpy-scalar-dst": (lambda: (np.float64(0.0), np.array(1.0)), ValueError),
    # destinations whose elements overlap
    "broadcast_to": (lambda: (np.broadcast_to(np.zeros(4, np.float32), (3, 4)), _f4((3, 4))),
                     ValueError),
    "stride0-writeable": (lambda: (_writeable_overlap((3, 4), (0, 4)), _f4((3, 4))),
                          ValueError),
    "sliding-window": (lambda: (_writeable_overlap((4, 3), (4, 4)), _f4((4, 3))), ValueError),
    # sizes
    "shape-swapped": (lambda: (np.zeros((3, 4), np.float32), _f4((4, 3))), ValueError),
    "size": (lambda: (np.zeros((3, 4), np.float32), _f4((3, 5))), ValueError),
    "rank": (lambda: (np.zeros(12, np.float32), _f4((3, 4))), ValueError),
    "rank-extra-size1": (lambda: (np.zeros((1, 3, 4), np.float32), _f4((3, 4))), ValueError),
    "rank-fewer": (lambda: (np.zeros((3, 4), np.float32), _f4((1, 3, 4))), ValueError),
    "broadcastable-src": (lambda: (np.zeros((3, 4), np.float32), _f4((1, 4))), ValueError),
    "scalar-into-array": (lambda: (np.zeros(3, np.float32), np.array(1.0, np.float32)),
                          ValueError),
    "bytearray-length": (lambda: (bytearray(4), b"abc"), ValueError),
    # dtypes
    # (casting="same_kind" refuses float -> int; complex -> real is never converted)
    "float-into-int": (lambda: (np.zeros(4, np.int32), np.arange(4, dtype=np.float32)),
                       TypeError),
    "complex-into-float": (lambda: (np.zeros(4, np.float64), np.ones(4, np.complex64)),
                           TypeError),
    "byte-order": (lambda: (np.zeros(4, ">i4"), np.arange(1, 5, dtype="<i4")),
                   (TypeError, ValueError)),
    "bool-vs-uint8": (lambda: (np.zeros(4, bool), np.ones(4, np.uint8)),
                      (TypeError, ValueError)),
    "S3-vs-V3": (lambda: (np.zeros(2, "S3"), np.array([b"abc", b"def"], "S3").view("V3")),
                 (TypeError, ValueError)),
    "struct-vs-V3": (lambda: (np.zeros(2, STRUCT3), np.zeros(2, "V3")), (TypeError, ValueError)),
    "bytearray-vs-int32": (lambda: (bytearray(8), np.arange(2, dtype=np.int32)),
                           (TypeError, ValueError)),
    # objects strided cannot copy
    "object-both": (lambda: (np.array([None, None], object), np.array([1, "x"], object)),
                    TypeError),
    "object-dst": (lambda: (np.array([None, None], object), np.arange(2)), TypeError),
    "object-src": (lambda: (np.zeros(2, np.int64), np.array([1, 2], object)), TypeError),
    "object-field": (lambda: (np.zeros(2, [("a", "<i8"), ("o", "O")]),
                              np.zeros(2, [("a", "<i8"), ("o", "O")])), TypeError),
    "list-src": (lambda: (np.zeros(3), [1.0, 2.0, 3.0]), TypeError),
    "list-dst": (lambda: ([0.0, 0.0, 0.0], np.arange(3.0)), TypeError),
    "none-src": (lambda: (np.zeros(3), None), TypeError),
    "none-dst": (lambda: (None, np.zeros(3)), TypeError),
    "int-src": (lambda: (np.zeros(()), 3), TypeError),
    "str-src": (lambda: (bytearray(3), "abc"), TypeError),
    "dict-dst": (lambda: ({}, np.zeros(3)), TypeError),
}


def snapshot(x):
    if isinstance(x, (list, dict)) or x is None:
        return repr(x)
    a = np.asarray(x) if not isinstance(x, (bytes, bytearray, memoryview)) else \
        np.array(memoryview(x))
    return repr(a.tolist()) if a.dtype == object else a.tobytes()


@pytest.mark.parametrize("name", list(REFUSALS))
def test_copyto_refusals_write_nothing(name):
    make, error = REFUSALS[name]
    dst, src = make()
    before = snapshot(dst)
    with pytest.raises(error):
        strided.copyto(dst, src)
    assert snapshot(dst) == before


def test_copyto_zero_itemsize_is_refused():
    # Elements of no bytes have no layout; the refusal names the argument and the dtype.
    d = np.zeros(3, "V0")
    with pytest.raises(ValueError, match=r"dst: numpy dtype \|V0 has no bytes per element"):
        strided.copyto(d, np.zeros(3, "V0"))


def test_copyto_overlapping_destination_message():
    with pytest.raises(ValueError, match="overlap"):
        strided.copyto(_writeable_overlap((3, 4), (0, 4)), _f4((3, 4)))


@pytest.mark.parametrize(("bad", "error"), [(0, ValueError), (-1, ValueError), (1.5, TypeError),
                                            (2.0, TypeError), (True, TypeError),
                                            (False, TypeError), ("2", TypeError),
                                            ([2], TypeError)])
def test_copyto_bad_num_threads_writes_nothing(bad, error):
    for dst, src in [(np.zeros((50, 40), np.float32), _f4((40, 50)).T),
                     (np.zeros((3, 4), np.float32), _f4((3, 4))),
                     (bytearray(3), b"abc")]:
        before = snapshot(dst)
        with pytest.raises(error):
            strided.copyto(dst, src, num_threads=bad)
        assert snapshot(dst) == before


NUM_THREADS_CALLS = {
    "relayout": lambda nt: strided.relayout(np.zeros((2, 3)), "F", num_threads=nt),
    "relayout-empty": lambda nt: strided.relayout(np.zeros((0, 3)), "F", num_threads=nt),
    "to_blocked": lambda nt: strided.to_blocked(np.zeros((1, 3, 2, 2)), "NCHW4",
                                                num_threads=nt),
    "to_blocked-empty": lambda nt: strided.to_blocked(np.zeros((0, 3, 2, 2)), "NCHW4",
                                                      num_threads=nt),
    "from_blocked": lambda nt: strided.from_blocked(np.zeros((1, 1, 2, 2, 4)), "NCHW4",
                                                    channels=3, num_threads=nt),
    "from_blocked-empty": lambda nt: strided.from_blocked(np.zeros((0, 1, 2, 2, 4)), "NCHW4",
                                                          channels=3, num_threads=nt),
    "copyto-empty": lambda nt: strided.copyto(np.zeros((0, 3)), np.zeros((0, 3)),
                                              num_threads=nt),
}


@pytest.mark.parametrize(("bad", "error"), [(0, ValueError), (1.5, TypeError), (True, TypeError)])
@pytest.mark.parametrize("call", list(NUM_THREADS_CALLS))
def test_bad_num_threads_is_an_error_even_without_a_copy(call, bad, error):
    with pytest.raises(error):
        NUM_THREADS_CALLS[call](bad)


@needs_torch
def test_relayout_of_a_tensor_requiring_grad_checks_num_threads():
    with pytest.raises(ValueError):
        strided.relayout(torch.zeros(1, 2, 3, 4, requires_grad=True), "NHWC", num_threads=0)


def test_copyto_num_threads_is_keyword_only():
    with pytest.raises(TypeError):
        strided.copyto(np.zeros(3), np.ones(3), 1)


# ---- torch (CPU) --------------------------------------------------------------------------

TORCH_DTYPES = ["float32", "float64", "float16", "bfloat16", "int8", "uint8", "int16", "int32",
                "int64", "bool", "complex64", "complex128"]


def torch_base(n, dtype, fill):
    """A 1-D tensor of n elements of ``dtype`` whose bytes are ``fill(nbytes)``."""
    tdtype = getattr(torch, dtype)
    k = torch.empty((), dtype=tdtype).element_size()
    raw = fill(n * k)
    if dtype == "bool":
        raw = raw & 1
    return torch.from_numpy(raw.copy()).view(tdtype)


def torch_bytes(t):
    return t.contiguous().view(torch.uint8).numpy().tobytes()


TORCH_CASES = {
    # name: (sizes, dst strides, dst offset, src maker(base tensor of the dtype) -> tensor)
    "transposed-src": ((37, 41), (41, 1), 5, lambda s: s[:41 * 37].view(41, 37).t()),
    "into-channels-last": ((2, 3, 17, 19), packed((2, 3, 17, 19), (0, 2, 3, 1)), 7,
                           lambda s: s[:2 * 3 * 17 * 19].view(2, 3, 17, 19)),
    "from-channels-last": ((2, 3, 17, 19), packed((2, 3, 17, 19)), 3,
                           lambda s: s[:2 * 3 * 17 * 19].view(2, 17, 19, 3).permute(0, 3, 1, 2)),
    "padded-dst": ((30, 40), (45, 1), 3, lambda s: s[:30 * 40].view(30, 40)),
    "expanded-src": ((30, 40), (40, 1), 1, lambda s: s[:40].expand(30, 40)),
    "stepped-src": ((10, 10), (1, 10), 2, lambda s: s[:30 * 40].view(30, 40)[::3, 3::4]),
    "permuted-3d": ((5, 6, 7), packed((5, 6, 7), (2, 0, 1)), 0,
                    lambda s: s[:210].view(7, 6, 5).permute(2, 1, 0)),
    "rank0": ((), (), 4, lambda s: s[3]),
    "empty": ((0, 5), (5, 1), 0, lambda s: s[:0].view(0, 5)),
    "big-transpose": ((1000, 1000), (1000, 1), 16, lambda s: s[:10**6].view(1000, 1000).t()),
    "big-nchw-nhwc": ((2, 3, 257, 259), packed((2, 3, 257, 259), (0, 2, 3, 1)), 1,
                      lambda s: s[:2 * 3 * 257 * 259].view(2, 3, 257, 259)),
}


@needs_torch
@pytest.mark.parametrize(("name", "dtype"), [
    (name, dtype) for name in TORCH_CASES for dtype in TORCH_DTYPES
    if not name.startswith("big") or dtype in ("float32", "uint8", "complex128")])
def test_copyto_torch_matches_torch_copy(name, dtype):
    sizes, dst_strides, offset, make_src = TORCH_CASES[name]
    _, hi = element_span(sizes, dst_strides)
    n = offset + hi + 1 + 9
    src = make_src(torch_base(max(10**6, 2 * 3 * 257 * 259) if name.startswith("big") else 2000,
                              dtype, lambda m: random_bytes(m, 3)))
    assert tuple(src.shape) == sizes
    base = torch_base(n, dtype, sentinel)
    expected_base = base.clone()
    torch.as_strided(expected_base, sizes, dst_strides, offset).copy_(src)
    results = []
    for threads in THREADS:
        b = base.clone()
        strided.copyto(torch.as_strided(b, sizes, dst_strides, offset), src, num_threads=threads)
        assert torch_bytes(b) == torch_bytes(expected_base), f"num_threads={threads}"
        results.append(torch_bytes(b))
    assert results[1] == results[2]


@needs_torch
def test_copyto_torch_onto_its_own_transpose_and_shifted():
    for n in (5, 64, 1000):
        t = torch.arange(n * n, dtype=torch.float32).view(n, n)
        expected = t.t().clone()
        strided.copyto(t, t.t())
        assert torch.equal(t, expected)
    u = torch.arange(10_000, dtype=torch.int16)
    expected = u[:-3].clone()
    strided.copyto(u[3:], u[:-3])
    assert torch.equal(u[3:], expected)
    expected = u[7:].clone()
    strided.copyto(u[:-7], u[7:])
    assert torch.equal(u[:-7], expected)


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "int64", "complex64", "bool", "uint8"])
def test_copyto_between_numpy_and_torch(dtype):
    np_dtype = np.dtype(dtype if dtype != "bool" else "?")
    src_np = (np.arange(60) % 7).astype(np_dtype).reshape(3, 4, 5)
    src_t = torch.from_numpy(src_np.copy())
    d = np.zeros((5, 4, 3), np_dtype)
    strided.copyto(d.transpose(2, 1, 0), src_t)
    np.testing.assert_array_equal(d.transpose(2, 1, 0), src_np)
    t = torch.zeros(5, 4, 3, dtype=getattr(torch, dtype))
    strided.copyto(t.permute(2, 1, 0), src_np)
    np.testing.assert_array_equal(t.permute(2, 1, 0).numpy(), src_np)
    t2 = torch.zeros(3, 4, 5, dtype=getattr(torch, dtype))
    strided.copyto(t2, np.broadcast_to(src_np[:1], (3, 4, 5)))
    np.testing.assert_array_equal(t2.numpy(), np.broadcast_to(src_np[:1], (3, 4, 5)))


@needs_torch
@pytest.mark.parametrize(
    "make",
    [
        # pairs numpy's casting="same_kind" refuses, and complex -> real (never converted)
        lambda: (torch.zeros(4, dtype=torch.int32), torch.arange(4.0)),
        lambda: (torch.zeros(4, dtype=torch.int32), np.arange(4, dtype=np.float32)),
        lambda: (np.zeros(4, np.int32), torch.arange(4.0)),
        lambda: (torch.zeros(4, dtype=torch.bool), np.ones(4, np.uint8)),
        lambda: (torch.zeros(4, dtype=torch.int16), torch.ones(4, dtype=torch.bfloat16)),
        lambda: (torch.zeros(4, dtype=torch.uint8), torch.ones(4, dtype=torch.int8)),
        lambda: (torch.zeros(2, dtype=torch.float64), torch.ones(2, dtype=torch.complex64)),
    ],
)
def test_copyto_torch_dtype_mismatch_writes_nothing(make):
    dst, src = make()
    before = dst.clone() if isinstance(dst, torch.Tensor) else dst.copy()
    with pytest.raises(TypeError, match=r"casting|imaginary"):
        strided.copyto(dst, src)
    if isinstance(dst, torch.Tensor):
        assert torch.equal(dst, before)
    else:
        np.testing.assert_array_equal(dst, before)


@needs_torch
def test_copyto_torch_size_mismatch_writes_nothing():
    dst = torch.zeros(3, 4)
    for src in (torch.ones(4, 3), torch.ones(12), torch.ones(1, 4), np.ones((3, 5), np.float32)):
        with pytest.raises(ValueError):
            strided.copyto(dst, src)
        assert not dst.any()


@needs_torch
def test_copyto_lazy_conj_and_neg_sources_copy_resolved_values():
    vals = np.arange(12) * (1 + 2j) + 3
    z = torch.from_numpy(vals.astype(np.complex64)).conj()
    assert z.is_conj()
    d = np.zeros(12, np.complex64)
    strided.copyto(d, z)
    np.testing.assert_array_equal(d, np.conj(vals).astype(np.complex64))
    t = torch.zeros(4, 3, dtype=torch.complex64)
    strided.copyto(t, z.view(3, 4).t())
    np.testing.assert_array_equal(t.numpy(), np.conj(vals).astype(np.complex64).reshape(3, 4).T)
    neg = z.imag                                    # the imaginary part of a conj view: neg bit
    assert neg.is_neg()
    f = np.zeros(12, np.float32)
    strided.copyto(f, neg)
    np.testing.assert_array_equal(f, -2.0 * np.arange(12, dtype=np.float32))
    g = torch.zeros(12)
    strided.copyto(g, neg)
    np.testing.assert_array_equal(g.numpy(), -2.0 * np.arange(12, dtype=np.float32))


@needs_torch
def test_copyto_lazy_conj_destination_is_refused_and_untouched():
    storage = torch.zeros(6, dtype=torch.complex64)
    dst = storage.conj()
    assert dst.is_conj()
    with pytest.raises(ValueError):
        strided.copyto(dst, torch.ones(6, dtype=torch.complex64) * (1 + 1j))
    assert not storage.resolve_conj().any()


@needs_torch
def test_copyto_lazy_neg_destination_is_refused_or_right():
    storage = torch.zeros(6, dtype=torch.complex64)
    dst = storage.conj().imag                       # writes through it land negated
    assert dst.is_neg()
    src = torch.arange(1.0, 7.0)
    try:
        strided.copyto(dst, src)
    except ValueError:
        assert not storage.resolve_conj().any()
    else:
        np.testing.assert_array_equal(dst.resolve_neg().numpy(), src.numpy())


@needs_torch
def test_copyto_destination_requiring_grad_is_refused_and_untouched():
    leaf = torch.zeros(3, 4, requires_grad=True)
    for dst in (leaf, leaf[1:], leaf * 1):
        with pytest.raises(ValueError, match="grad"):
            strided.copyto(dst, torch.ones(dst.shape))
    assert not leaf.detach().any()
    d = leaf.detach()
    strided.copyto(d, torch.ones(3, 4))         # a detached view of it may be written
    assert leaf.detach().eq(1).all()


@needs_torch
def test_copyto_into_torch_bumps_the_version_counter():
    """autograd must notice the write, as it notices torch's own in-place ops."""
    a = torch.ones(3, requires_grad=True)
    b = torch.zeros(3)
    c = a * b                                   # saves b for the backward pass
    before = b._version
    strided.copyto(b, torch.arange(3.0))
    assert b._version > before
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        c.sum().backward()


@needs_torch
def test_copyto_between_numpy_and_torch_sharing_memory():
    """A numpy view of a tensor's memory as the source: the overlap is seen across libraries."""
    t = torch.arange(1000, dtype=torch.float32)
    a = t.numpy()
    strided.copyto(t[1:], a[:-1])
    np.testing.assert_array_equal(t.numpy(), np.r_[0, np.arange(999)])
    m = torch.arange(64 * 64, dtype=torch.int64).view(64, 64)
    expected = m.t().clone()
    strided.copyto(m.numpy(), m.t())
    assert torch.equal(m, expected)


@needs_torch
def test_relayout_torch_keeps_autograd():
    x = torch.arange(120.0).view(2, 3, 4, 5).requires_grad_()
    r = strided.relayout(x, "NHWC")
    assert r.requires_grad and r.is_contiguous(memory_format=torch.channels_last)
    w = torch.arange(120.0).view(2, 3, 4, 5) + 1
    (r * w).sum().backward()
    assert torch.equal(x.grad, w)


@needs_torch
def test_copyto_torch_float8_and_sources_requiring_grad():
    f = torch.arange(6.0).to(torch.float8_e4m3fn).view(2, 3)
    g = torch.zeros(3, 2).to(torch.float8_e4m3fn)
    strided.copyto(g, f.t())
    assert g.float().tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    with pytest.raises((TypeError, ValueError)):
        strided.copyto(np.zeros((3, 2), np.uint8), f.t())        # float8 is not uint8
    with pytest.raises((TypeError, ValueError)):
        strided.copyto(torch.zeros(3, 2).to(torch.float8_e5m2), f.t())
    d = np.zeros(3, np.float32)
    strided.copyto(d, torch.arange(3.0, requires_grad=True))      # reading is fine
    np.testing.assert_array_equal(d, [0.0, 1.0, 2.0])


def _quantized(values, scale):
    if not hasattr(torch, "quantize_per_tensor"):
        pytest.skip("this torch has no quantized tensors")
    return torch.quantize_per_tensor(torch.tensor(values), scale=scale, zero_point=0,
                                     dtype=torch.qint8)


@needs_torch
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_copyto_quantized_tensors_refused_or_right():
    """qint8 elements mean int8 * scale: raw bytes copied between tensors of different scales
    would silently give other values."""
    a = _quantized([1.0, 2.0, 3.0], 0.1)
    b = _quantized([0.0, 0.0, 0.0], 1.0)
    try:
        strided.copyto(b, a)
    except (TypeError, ValueError):
        assert b.dequantize().tolist() == [0.0, 0.0, 0.0]
    else:
        assert b.dequantize().tolist() == a.dequantize().tolist()


@needs_torch
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_relayout_and_to_blocked_of_quantized_tensors_refused_or_right():
    a = _quantized([float(v) for v in range(24)], 0.5).reshape(1, 2, 3, 4)
    for call in (lambda: strided.relayout(a, "NHWC"),
                 lambda: strided.to_blocked(a, "NCHW4")[:, :, :, :, :2]
                 .permute(0, 1, 4, 2, 3).reshape(1, 2, 3, 4)):
        try:
            r = call()
        except (TypeError, ValueError):
            continue
        assert r.is_quantized and r.q_scale() == a.q_scale()
        assert torch.equal(r.dequantize(), a.dequantize())


@needs_torch
@pytest.mark.parametrize(("bad", "error"), [(0, ValueError), (-1, ValueError), (1.5, TypeError),
                                            (True, TypeError), ("2", TypeError)])
def test_copyto_torch_bad_num_threads(bad, error):
    dst = torch.zeros(40, 50)
    with pytest.raises(error):
        strided.copyto(dst, torch.ones(50, 40).t(), num_threads=bad)
    assert not dst.any()


# ---- array-api-strict (DLPack) ------------------------------------------------------------


@needs_xp
def test_copyto_array_api_strict():
    src_np = np.arange(20.0).reshape(4, 5)
    dst = xp.zeros((5, 4), dtype=xp.float64)
    strided.copyto(dst, xp.permute_dims(xp.asarray(src_np), (1, 0)))
    np.testing.assert_array_equal(np.from_dlpack(dst), src_np.T)
    d = np.zeros((4, 5))
    strided.copyto(d, xp.asarray(src_np))
    np.testing.assert_array_equal(d, src_np)
    e = xp.zeros((4, 5), dtype=xp.float64)
    strided.copyto(e, src_np[::-1])
    np.testing.assert_array_equal(np.from_dlpack(e), src_np[::-1])


@needs_xp
def test_copyto_array_api_strict_refusals_write_nothing():
    dst = xp.zeros((4, 5), dtype=xp.float64)
    with pytest.raises(TypeError, match="imaginary"):
        strided.copyto(dst, np.ones((4, 5), np.complex64))
    with pytest.raises(ValueError):
        strided.copyto(dst, np.ones((5, 4)))
    assert not np.from_dlpack(dst).any()


# ---- DLPack through a hand-made producer -----------------------------------------------------


def test_copyto_dlpack_producer_destination_with_strides_and_byte_offset():
    import dlpack_producer as dp

    buf = np.full(40, -1.0, np.float32)
    p = dp.Producer(buf, (3, 4), (1, 3), byte_offset=8)          # column-major, at element 2
    src = np.arange(12, dtype=np.float32).reshape(3, 4)
    strided.copyto(p, src[::-1])
    expected = np.full(40, -1.0, np.float32)
    expected[2:14] = src[::-1].T.reshape(-1)
    np.testing.assert_array_equal(buf, expected)
    d = np.zeros((3, 4), np.float32)
    strided.copyto(d, dp.Producer(buf, (3, 4), (1, 3), byte_offset=8))
    np.testing.assert_array_equal(d, src[::-1])


@pytest.mark.parametrize(("kwargs", "src", "error"), [
    ({"readonly": True, "versioned": True}, np.ones((3, 4), np.float32), ValueError),
    ({"device": (2, 0)}, np.ones((3, 4), np.float32), ValueError),          # CUDA memory
    ({"dtype": (4, 32, 1)}, np.ones((3, 4), np.float32), (TypeError, ValueError)),  # code
    ({}, np.ones((3, 4), np.complex64), TypeError),          # complex -> real
    ({}, np.ones((4, 3), np.float32), ValueError),
    ({"strides": (0, 1)}, np.ones((3, 4), np.float32), ValueError),         # self-overlap
])
def test_copyto_dlpack_producer_refusals_write_nothing(kwargs, src, error):
    import dlpack_producer as dp

    buf = np.full(12, -1.0, np.float32)
    kwargs = dict(kwargs)
    strides = kwargs.pop("strides", None)
    p = dp.Producer(buf, (3, 4), strides, **kwargs)
    with pytest.raises(error):
        strided.copyto(p, src)
    assert (buf == -1.0).all()


def test_copyto_from_dlpack_producer_on_a_device_is_refused():
    import dlpack_producer as dp

    d = np.zeros(12, np.float32)
    with pytest.raises(ValueError):
        strided.copyto(d, dp.Producer(np.ones(12, np.float32), (12,), device=(2, 0)))
    assert not d.any()


# ---- relayout -----------------------------------------------------------------------------

LETTERS = {2: "HW", 3: "DHW", 4: "NCHW", 5: "NCDHW"}


def order_of(layout, ndim):
    """Physical order (outermost first) of a layout spec, written from the definitions."""
    if layout == "C":
        return tuple(range(ndim))
    if layout == "F":
        return tuple(reversed(range(ndim)))
    if isinstance(layout, str):
        return tuple(LETTERS[ndim].index(ch) for ch in layout)
    return tuple(layout)


def strides_match(actual, expected, sizes):
    """Equal on every dim of more than one element (the stride of a size-1 dim is free);
    anything goes for an empty array."""
    if 0 in sizes:
        return True
    return all(a == e for a, e, n in zip(actual, expected, sizes) if n > 1)


RELAYOUTS = [
    ((2, 3, 4, 5), "NCHW"), ((2, 3, 4, 5), "NHWC"), ((2, 3, 4, 5), "CHWN"),
    ((2, 3, 4, 5), "WHCN"), ((3, 4), "HW"), ((3, 4), "WH"), ((2, 3, 4), "DHW"),
    ((2, 3, 4), "WHD"), ((2, 3, 4, 5, 6), "NDHWC"), ((2, 3, 4, 5, 6), "CDHWN"),
    ((2, 3, 4, 5), "C"), ((2, 3, 4, 5), "F"), ((), "C"), ((), "F"), ((7,), "F"),
    ((2, 3, 2, 3, 2, 3), "F"), ((2, 3, 4, 5), (3, 1, 0, 2)),
    ((2, 3, 2, 3, 2, 3), (5, 0, 4, 1, 3, 2)),
    ((1, 3, 1, 5), "NHWC"), ((2, 0, 3, 4), "NHWC"), ((4,), (0,)),
]


def numpy_inputs(sizes, dtype):
    n = int(np.prod(sizes))
    a = (np.arange(n) % 251).astype(dtype).reshape(sizes)
    yield a
    yield np.ascontiguousarray(a.T).T                              # column-major
    if a.ndim:                                  # (indexing a 0-d array gives a scalar)
        yield a[(slice(None, None, -1),) * a.ndim]                  # every stride negative
        yield np.broadcast_to(a[:1], sizes)                         # a broadcast source
        big = np.zeros(tuple(2 * s + 1 for s in sizes), dtype)
        big[tuple(slice(1, None, 2) for _ in sizes)] = a
        yield big[tuple(slice(1, None, 2) for _ in sizes)]          # padded/stepped


@pytest.mark.parametrize("dtype", ["<f4", "u1", "<c16", "V3"])
@pytest.mark.parametrize(("sizes", "layout"), RELAYOUTS)
def test_relayout_numpy_has_the_requested_strides(sizes, layout, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "V":
        dt = dtype

        def gen(sizes, _):
            n = int(np.prod(sizes))
            a = np.frombuffer(random_bytes(3 * n, n), dt).reshape(sizes)
            yield a.copy()
            if a.ndim:
                yield a[(slice(None, None, -1),) * a.ndim]
        inputs = gen(sizes, dt)
    else:
        inputs = numpy_inputs(sizes, dtype)
    expected = tuple(s * dtype.itemsize
                     for s in ref_packed_strides(sizes, order_of(layout, len(sizes))))
    for x in inputs:
        before = x.copy()
        r = strided.relayout(x, layout)
        assert type(r) is np.ndarray
        assert r.dtype == x.dtype and r.shape == x.shape
        assert strides_match(r.strides, expected, sizes), (r.strides, expected, x.strides)
        assert same_values(r, x)
        assert same_values(x, before)                                # the input is unchanged
        assert r.flags.writeable


@pytest.mark.parametrize("itemsize_dtype", ["<f4", "u1", "<i8"])
def test_relayout_numpy_to_layout_objects(itemsize_dtype):
    dtype = np.dtype(itemsize_dtype)
    k = dtype.itemsize
    x = (np.arange(12) + 1).astype(dtype).reshape(3, 4)
    for L in [strided.Layout((3, 4), (6, 1), itemsize=k),              # padded rows
              strided.Layout((3, 4), (1, 5), itemsize=k),              # padded, column-major
              strided.Layout((3, 4), (4, 1), itemsize=k),
              strided.Layout.packed((3, 4), "WH", itemsize=k)]:
        r = strided.relayout(np.asfortranarray(x), L)
        assert type(r) is np.ndarray and r.dtype == dtype
        assert r.strides == L.byte_strides
        np.testing.assert_array_equal(r, x)
    y = np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5)
    L = strided.Layout.packed((2, 3, 4, 5), "NHWC", itemsize=4)
    r = strided.relayout(y, L)
    assert r.strides == L.byte_strides == (240, 4, 60, 12)
    np.testing.assert_array_equal(r, y)


def buffer_bytes(r, L):
    """The bytes of the buffer a relayout result lives in: offset 0 to the end of L's span."""
    start = r.__array_interface__["data"][0] - L.byte_offset
    return np.ctypeslib.as_array((ctypes.c_uint8 * L.nbytes).from_address(start)).copy()


@pytest.mark.parametrize("dtype", ["<f4", "u1", "<c16", "V3"])
@pytest.mark.parametrize("layout", [
    ((3, 4), (6, 1), 0), ((3, 4), (1, 5), 0), ((3, 4), (4, 1), 5), ((3, 4), (-4, 1), 8),
    ((3, 4), (1, -3), 9), ((3, 4), (-9, -2), 30), ((2, 3, 4, 5), (80, 1, 20, 4), 0),
    ((2, 3, 4, 5), (3, 61, 183, 732), 2),
], ids=str)
def test_relayout_numpy_padded_and_offset_layouts_zero_their_gaps(layout, dtype):
    dtype = np.dtype(dtype)
    sizes, strides, offset = layout
    L = strided.Layout(sizes, strides, offset=offset, itemsize=dtype.itemsize)
    n = int(np.prod(sizes))
    x = np.frombuffer(random_bytes(n * dtype.itemsize, n) | 1, dtype).reshape(sizes)
    dirty = np.full(L.nbytes + 64, 0xFF, np.uint8)               # hand back dirty memory
    del dirty
    r = strided.relayout(x, L)
    assert type(r) is np.ndarray and r.dtype == dtype
    assert r.strides == L.byte_strides
    assert same_values(r, x)
    raw = buffer_bytes(r, L)
    used = np.zeros(L.nbytes, bool)
    for index in np.ndindex(*sizes):
        o = L.offset_of(index) * dtype.itemsize
        used[o:o + dtype.itemsize] = True
    assert not raw[~used].any(), "the gaps of a padded relayout are not zero"


@pytest.mark.parametrize(("layout", "message"), [
    (strided.Layout((3, 4), (-4, 1), itemsize=4), "offset"),          # reaches below offset 0
    (strided.Layout((3, 4), (4, 1), itemsize=8), "itemsize"),
    (strided.Layout((3, 4), (4, 1)), "itemsize"),                     # itemsize 1, not 4
    (strided.Layout((3, 4), (1, 2), itemsize=4), "overlap"),
])
def test_relayout_refuses_layouts_it_cannot_fill(layout, message):
    with pytest.raises(ValueError, match=message):
        strided.relayout(np.zeros((3, 4), np.float32), layout)


@given(data=hst.data())
def test_relayout_numpy_random_permutations(data):
    sizes = data.draw(copy_sizes())
    perm = tuple(data.draw(hst.permutations(range(len(sizes)))))
    src_strides = data.draw(source_strides(sizes))
    dtype = np.dtype(data.draw(hst.sampled_from(["u1", "<i2", "<f4", "V3", "<c16"])))
    k = dtype.itemsize
    buf, first = placed(sizes, src_strides, k, fill=lambda n: random_bytes(n, len(sizes)))
    x = view_over(buf, first, sizes, src_strides, k, dtype)
    r = strided.relayout(x, perm)
    expected = tuple(s * k for s in ref_packed_strides(sizes, perm))
    assert strides_match(r.strides, expected, sizes)
    assert same_values(r, x)


@pytest.mark.parametrize(
    ("layout", "error"),
    [
        ("NHWX", ValueError), ("nhwc", ValueError), ("NHW", ValueError), ("NCDHW", ValueError),
        ("HW", ValueError), ("NNHW", ValueError), ("", ValueError), ((0, 1, 2), ValueError),
        ((0, 0, 1, 2), ValueError), ((0, 1, 2, 4), ValueError), ((0, 1, 2, 3, 4), ValueError),
        (5, TypeError), (b"NHWC", TypeError), (1.5, TypeError),
        (strided.Layout((2, 3, 4)), ValueError),                       # wrong rank
        (strided.Layout((2, 3, 4, 6), itemsize=4), ValueError),        # wrong sizes
        (strided.Layout((2, 3, 4, 5), (0, 20, 5, 1), itemsize=4), ValueError),  # overlapping
    ],
)
def test_relayout_refuses_bad_layouts(layout, error):
    x = np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5)
    with pytest.raises(error):
        strided.relayout(x, layout)


@pytest.mark.parametrize("bad", [[1, 2, 3], None, 3, "abc", np.array([None, 1], object)])
def test_relayout_refuses_non_arrays(bad):
    with pytest.raises(TypeError):
        strided.relayout(bad, "C")


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "uint8", "bfloat16", "complex64", "bool"])
def test_relayout_torch_gives_torch_strides(dtype):
    tdtype = getattr(torch, dtype)
    t = (torch.arange(2 * 3 * 4 * 5) % 7).to(tdtype).view(2, 3, 4, 5)
    for x in (t, t.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2),
              t.transpose(0, 1).contiguous().transpose(0, 1), t[:1].expand(2, 3, 4, 5)):
        r = strided.relayout(x, "NHWC")
        assert isinstance(r, torch.Tensor) and r.dtype == tdtype and r.device == x.device
        assert r.is_contiguous(memory_format=torch.channels_last)
        assert r.stride() == (60, 1, 15, 3)
        assert torch.equal(r, x)
        r = strided.relayout(x, "C")
        assert r.is_contiguous() and torch.equal(r, x)
        r = strided.relayout(x, "F")
        assert r.stride() == (1, 2, 6, 24) and torch.equal(r, x)
        r = strided.relayout(x, (1, 3, 0, 2))
        assert r.stride() == ref_packed_strides((2, 3, 4, 5), (1, 3, 0, 2))
        assert torch.equal(r, x)
        L = strided.Layout((2, 3, 4, 5), (80, 1, 20, 4), itemsize=r.element_size())  # padded
        r = strided.relayout(x, L)
        assert r.stride() == (80, 1, 20, 4) and torch.equal(r, x)
    v = (torch.arange(2 * 3 * 4 * 5 * 6) % 7).to(tdtype).view(2, 3, 4, 5, 6)
    r = strided.relayout(v, "NDHWC")
    assert r.is_contiguous(memory_format=torch.channels_last_3d) and torch.equal(r, v)


@needs_torch
def test_relayout_torch_to_a_padded_layout_with_an_offset():
    x = torch.arange(1.0, 13.0).view(3, 4)
    L = strided.Layout((3, 4), (1, 5), offset=2, itemsize=4)
    junk = torch.full((L.nbytes // 4 + 16,), -1.0)          # hand back dirty memory
    del junk
    r = strided.relayout(x, L)
    assert r.stride() == (1, 5) and r.storage_offset() == 2 and torch.equal(r, x)
    storage = torch.tensor([], dtype=r.dtype).set_(r.untyped_storage())
    used = {L.offset_of(i) for i in np.ndindex(3, 4)}
    gaps = [storage[o].item() for o in range(L.nbytes // 4) if o not in used]
    assert gaps and all(g == 0 for g in gaps), gaps


def test_relayout_bytes_like_gives_numpy():
    r = strided.relayout(memoryview(bytearray(b"abcdef")).cast("B", (2, 3)), "F")
    assert type(r) is np.ndarray and r.dtype == np.uint8 and r.strides == (1, 2)
    assert r.tobytes(order="C") == b"abcdef"


@needs_torch
def test_relayout_torch_refusals():
    t = torch.zeros(2, 3, 4, 5)
    for layout, error in [("NHWX", ValueError), ("HW", ValueError), ((0, 1), ValueError),
                          (5, TypeError),
                          (strided.Layout((2, 3, 4, 6), itemsize=4), ValueError),
                          (strided.Layout((2, 3, 4, 5), (0, 20, 5, 1), itemsize=4),
                           ValueError)]:
        with pytest.raises(error):
            strided.relayout(t, layout)


@needs_xp
def test_relayout_array_api_strict():
    x = xp.asarray(np.arange(24.0).reshape(2, 3, 4))
    r = strided.relayout(x, "F")
    assert type(r) is type(x)
    a = np.from_dlpack(r)
    assert a.strides == (8, 16, 48)
    np.testing.assert_array_equal(a, np.arange(24.0).reshape(2, 3, 4))


# ---- torch in a subprocess: negative strides, meta, CUDA-free devices ----------------------

TORCH_SCRIPT = """
import warnings

import numpy as np
import torch

import strided

from isolated import probe, report

warnings.simplefilter("ignore")


def torch_dst_numpy_negative_src():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = torch.zeros(3, 4)
    strided.copyto(t, a[::-1, ::-1])
    np.testing.assert_array_equal(t.numpy(), a[::-1, ::-1])
    c = torch.zeros(2, 3, 4, 5).to(memory_format=torch.channels_last)
    b = np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5)[:, ::-1, :, ::-1]
    strided.copyto(c, b)
    np.testing.assert_array_equal(c.numpy(), b)


def numpy_negative_dst_torch_src():
    t = torch.arange(12, dtype=torch.int32).view(4, 3).t()
    d = np.zeros((3, 4), np.int32)
    strided.copyto(d[::-1, ::-1], t)
    np.testing.assert_array_equal(d[::-1, ::-1], t.numpy())


def relayout_torch_negative_layout_refused():
    t = torch.arange(6.0).view(2, 3)
    try:
        strided.relayout(t, strided.Layout((2, 3), (-3, 1), offset=3, itemsize=4))
    except ValueError:
        return "ok"
    return "accepted a negative-stride layout for a torch result"


def _torch_copies(dst, src):
    # two torch tensors, one not on the CPU: strided hands them to torch's own copy_
    out = strided.copyto(dst, src)
    assert out is None and dst.is_meta
    return "ok"


def _refused_before_writing(dst, src, errors, match):
    before = np.array(dst).copy()
    try:
        strided.copyto(dst, src)
    except errors as e:
        assert match in str(e), e
        assert (np.array(dst) == before).all(), "written before the error"
        return "ok"
    return "copied out of a meta tensor"


def meta_to_meta():
    return _torch_copies(torch.empty(3, 4, device="meta"), torch.empty(4, 3, device="meta").t())


def cpu_to_meta():
    return _torch_copies(torch.empty(3, 4, device="meta"), torch.ones(3, 4))


def meta_to_cpu():
    # torch's copy_ refuses: a meta tensor has no data
    return _refused_before_writing(torch.zeros(3, 4), torch.empty(3, 4, device="meta"),
                                   NotImplementedError, "meta")


def meta_to_numpy():
    return _refused_before_writing(np.zeros((3, 4), np.float32),
                                   torch.empty(3, 4, device="meta"), ValueError,
                                   "src is on device meta")


def numpy_to_meta():
    try:
        strided.copyto(torch.empty(3, 4, device="meta"), np.ones((3, 4), np.float32))
    except ValueError as e:
        assert "dst is on device meta" in str(e), e
        return "ok"
    return "copied into a meta tensor from numpy"


def relayout_meta():
    m = torch.empty(2, 3, 4, 5, device="meta")
    try:
        r = strided.relayout(m, "NHWC")
    except ValueError:
        return "ok"
    assert r.is_meta and r.stride() == (60, 1, 15, 3), r
    return "ok"


for fn in [torch_dst_numpy_negative_src, numpy_negative_dst_torch_src,
           relayout_torch_negative_layout_refused, meta_to_meta, cpu_to_meta, meta_to_cpu,
           meta_to_numpy, numpy_to_meta, relayout_meta]:
    probe(fn)
report()
"""

TORCH_PROBES = ["torch_dst_numpy_negative_src", "numpy_negative_dst_torch_src",
                "relayout_torch_negative_layout_refused", "meta_to_meta", "cpu_to_meta",
                "meta_to_cpu", "meta_to_numpy", "numpy_to_meta", "relayout_meta"]


@pytest.fixture(scope="module")
def torch_probes():
    if not HAVE_TORCH:
        pytest.skip("torch is not installed")
    return probe_results(run_isolated(TORCH_SCRIPT))


@pytest.mark.parametrize("name", TORCH_PROBES)
def test_torch_in_subprocess(torch_probes, name):
    assert torch_probes[name] == "ok"


# ---- CUDA (skipped without a device) -------------------------------------------------------


@needs_cuda
def test_copyto_cuda_pair_is_delegated():
    src = torch.arange(1000 * 999, dtype=torch.float32, device="cuda").view(999, 1000)
    dst = torch.zeros(1000, 999, device="cuda")
    strided.copyto(dst, src.t())
    assert torch.equal(dst, src.t())


@needs_cuda
def test_copyto_cuda_and_cpu_mixed_is_delegated_or_refused():
    dst = torch.zeros(3, 4, device="cuda")
    try:
        strided.copyto(dst, torch.ones(4, 3).t())
    except (ValueError, TypeError):
        assert not dst.any()
    else:
        assert torch.equal(dst.cpu(), torch.ones(3, 4))
    d = np.zeros((3, 4), np.float32)
    try:
        strided.copyto(d, torch.ones(3, 4, device="cuda"))
    except (ValueError, TypeError):
        assert not d.any()
    else:
        assert (d == 1).all()


@needs_cuda
def test_relayout_cuda_channels_last():
    t = torch.arange(120.0, device="cuda").view(2, 3, 4, 5)
    r = strided.relayout(t, "NHWC")
    assert r.is_cuda and r.is_contiguous(memory_format=torch.channels_last)
    assert torch.equal(r, t)
