"""The compiled copy engine: ``_copy.copy_memory``, ``resolve_threads``, and the buffer fast path
``_ndarray.copyto_buffers``.

Every copy here runs between raw byte buffers (numpy ``uint8`` arrays) holding the source and
destination layouts with guard bytes around them. The destination buffer is filled with a
position-dependent sentinel pattern before the copy; afterwards the *whole* buffer is compared
with an oracle -- a per-index brute-force loop (small cases) or ``np.copyto`` between views of
the same layouts over a separate copy of the buffers (large cases) -- so a byte written outside
the destination's elements fails the test as surely as a wrong element does.

Large cases exercise the tiled, short-inner-extent and parallel kernels (2-D transposes of
1000 x 1000, uint8 NCHW -> NHWC with C = 3 and 4, blocked NCHWx views, odd itemsizes, shapes
that are multiples of no tile size); each runs with 1, 2 and the default number of threads, and
all must give the same bytes. Nothing asserts a time, and nothing assumes an OpenMP build.

Inputs that could crash the process if a check were missing (int64 overflow of the byte
offsets, unaligned and partially overlapping elements) run in a subprocess.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst
from isolated import TESTS_DIR, probe_results, run_isolated
from numpy.lib.stride_tricks import as_strided
from strategies import (
    COPY_ITEMSIZES,
    brute_copy_bytes,
    copy_cases,
    element_span,
    medium_sizes,
    permuted_strides,
    ref_packed_strides,
)

import strided
from strided import _copy
from strided.interop import _ndarray

GUARD = 64           # guard bytes on each side of every layout (a multiple of 16: alignment)
THREADS = [None, 1, 2]

# ---- buffers and oracles -------------------------------------------------------------------


def sentinel(nbytes, salt=0):
    """A position-dependent byte pattern: a stray write of almost any value changes it."""
    period = ((np.arange(256) * 151 + 89 + salt) % 256).astype(np.uint8)
    return np.tile(period, nbytes // 256 + 1)[:nbytes].copy()


def random_bytes(nbytes, seed):
    return np.frombuffer(np.random.default_rng(seed).bytes(nbytes), np.uint8).copy()


def placed(sizes, strides, itemsize, *, fill, extra=0):
    """A byte buffer holding a layout with GUARD bytes (plus ``extra``) on each side, and the
    byte position of element (0, ..., 0) in it."""
    lo, hi = element_span(sizes, strides)
    nbytes = (hi - lo + 1) * itemsize + 2 * (GUARD + extra)
    buf = fill(nbytes)
    return buf, GUARD + extra - lo * itemsize


def address(buf, first=0):
    return buf.ctypes.data + first


def oracle_dtype(itemsize):
    return np.dtype({1: "u1", 2: "u2", 4: "u4", 8: "u8"}.get(itemsize, f"V{itemsize}"))


def view_over(buf, first, sizes, strides, itemsize, dtype=None):
    """A numpy view of the layout over ``buf`` (element 0 at byte ``first``), for the oracle."""
    dtype = oracle_dtype(itemsize) if dtype is None else np.dtype(dtype)
    one = buf[first:first + itemsize].view(dtype)
    return as_strided(one, shape=sizes, strides=tuple(s * itemsize for s in strides))


def numpy_copy_bytes(dst_buf, dst_first, dst_strides, src_buf, src_first, src_strides, sizes,
                     itemsize):
    """np.copyto between the same layouts over copies of both buffers: the bytes expected."""
    out = dst_buf.copy()
    src = src_buf.copy()
    if 0 not in sizes:
        np.copyto(view_over(out, dst_first, sizes, dst_strides, itemsize),
                  view_over(src, src_first, sizes, src_strides, itemsize))
    return out


def assert_same_bytes(actual, expected, what=""):
    actual = np.frombuffer(bytes(actual), np.uint8) if not isinstance(actual, np.ndarray) \
        else actual
    expected = np.frombuffer(bytes(expected), np.uint8) if not isinstance(
        expected, np.ndarray) else expected
    assert actual.shape == expected.shape
    bad = np.flatnonzero(actual != expected)
    assert bad.size == 0, (f"{what}: {bad.size} bytes differ, first at byte {bad[0]} "
                           f"(got {actual[bad[0]]}, expected {expected[bad[0]]})")


def assert_each_thread_count_copies(dst0, df, src, sf, sizes, dst_strides, src_strides, k,
                                    expected, threads=THREADS, what=""):
    """Copy into a fresh copy of ``dst0`` on each thread count and compare every byte with
    ``expected``; 1 and 2 threads must also agree with each other. ``src`` None: the source
    lies in the destination's own buffer (an overlapping copy)."""
    results = {}
    for t in threads:
        dst = dst0.copy()
        source = dst if src is None else src
        _copy.copy_memory(address(dst, df), address(source, sf), sizes, dst_strides,
                          src_strides, k, t)
        assert_same_bytes(dst, expected, f"{what} num_threads={t}")
        results[t] = dst
    if 1 in results and 2 in results:
        assert results[1].tobytes() == results[2].tobytes()


# ---- property tests against the brute-force and numpy oracles ------------------------------


@given(case=copy_cases(), threads=hst.sampled_from(THREADS), seed=hst.integers(0, 2**32 - 1),
       extra=hst.integers(0, 5))
def test_copy_memory_matches_brute_force_and_numpy(case, threads, seed, extra):
    sizes, dst_strides, src_strides, k = case
    src_buf, src_first = placed(sizes, src_strides, k, fill=lambda n: random_bytes(n, seed))
    dst_buf, dst_first = placed(sizes, dst_strides, k, fill=sentinel, extra=extra)
    src_before = src_buf.copy()
    expected = brute_copy_bytes(dst_buf, dst_first, dst_strides, src_buf, src_first,
                                src_strides, sizes, k)
    assert_same_bytes(numpy_copy_bytes(dst_buf, dst_first, dst_strides, src_buf, src_first,
                                       src_strides, sizes, k), expected, "numpy vs brute force")
    _copy.copy_memory(address(dst_buf, dst_first), address(src_buf, src_first), sizes,
                      dst_strides, src_strides, k, threads)
    assert_same_bytes(dst_buf, expected, f"dst {case}")
    assert_same_bytes(src_buf, src_before, "the source changed")


def shared_placement(sizes, dst_strides, src_strides, k, seed, data):
    """(buf, dst_first, src_first): random bytes with guards, holding both layouts anywhere
    inside, overlapping each other or not (``data`` draws where)."""
    dlo, dhi = element_span(sizes, dst_strides)
    slo, shi = element_span(sizes, src_strides)
    n = max(dhi - dlo, shi - slo) + 1 + data.draw(hst.integers(0, 3))
    buf = random_bytes(n * k + 2 * GUARD, seed)
    dst_first = GUARD + k * (data.draw(hst.integers(0, n - 1 - (dhi - dlo))) - dlo)
    src_first = GUARD + k * (data.draw(hst.integers(0, n - 1 - (shi - slo))) - slo)
    return buf, dst_first, src_first


@given(case=copy_cases(), threads=hst.sampled_from(THREADS), seed=hst.integers(0, 2**32 - 1),
       data=hst.data())
def test_copy_memory_between_overlapping_layouts_of_one_buffer(case, threads, seed, data):
    """Source and destination anywhere in one buffer: the result is a copy of the source as it
    was before the call, and no other byte changes."""
    sizes, dst_strides, src_strides, k = case
    buf, dst_first, src_first = shared_placement(sizes, dst_strides, src_strides, k, seed, data)
    expected = brute_copy_bytes(buf, dst_first, dst_strides, buf, src_first, src_strides,
                                sizes, k)
    _copy.copy_memory(address(buf, dst_first), address(buf, src_first), sizes, dst_strides,
                      src_strides, k, threads)
    assert_same_bytes(buf, expected, f"{case} dst at {dst_first}, src at {src_first}")


@pytest.mark.parametrize("itemsize", [1, 2, 3, 4, 6, 8, 12, 16])
def test_copy_memory_rank0_and_size1(itemsize):
    for sizes, dst_strides, src_strides in [((), (), ()), ((1,), (5,), (-3,)),
                                            ((1, 1, 1), (0, -7, 9), (4, 0, -1))]:
        src = random_bytes(itemsize + 2 * GUARD, itemsize)
        dst = sentinel(itemsize + 2 * GUARD)
        expected = dst.copy()
        expected[GUARD:GUARD + itemsize] = src[GUARD:GUARD + itemsize]
        _copy.copy_memory(address(dst, GUARD), address(src, GUARD), sizes, dst_strides,
                          src_strides, itemsize)
        assert_same_bytes(dst, expected, str(sizes))


@pytest.mark.parametrize("sizes", [(0,), (0, 5), (5, 0, 3), (3, 4, 0)])
def test_copy_memory_size0_touches_nothing(sizes):
    strides = ref_packed_strides(sizes, tuple(range(len(sizes))))
    _copy.copy_memory(0, 0, sizes, strides, strides, 4)                 # null addresses
    _copy.copy_memory(0, 0, sizes, (0,) * len(sizes), strides, 4)       # stride 0 is fine
    dst = sentinel(2 * GUARD)
    _copy.copy_memory(address(dst, GUARD), address(dst, GUARD + 4), sizes, strides, strides, 8)
    assert_same_bytes(dst, sentinel(2 * GUARD))


def test_copy_memory_nonoverlapping_interleaved_destination():
    """Strides (3, 2) on sizes (2, 2) reach 0, 2, 3, 5: interleaved, yet no element twice."""
    src = random_bytes(4 * 4 + 2 * GUARD, 7)
    dst = sentinel(6 * 4 + 2 * GUARD)
    expected = brute_copy_bytes(dst, GUARD, (3, 2), src, GUARD, (2, 1), (2, 2), 4)
    _copy.copy_memory(address(dst, GUARD), address(src, GUARD), (2, 2), (3, 2), (2, 1), 4)
    assert_same_bytes(dst, expected)


def test_repeated_copies_reuse_no_stale_plan():
    """Plans are cached by (sizes, strides, itemsize): alternate configurations that differ in
    one of them only, with fresh buffers at new addresses every time."""
    configs = [
        ((4, 4), (4, 1), (1, 4), 4),
        ((4, 4), (4, 1), (1, 4), 2),
        ((4, 4), (4, 1), (1, 4), 3),
        ((4, 4), (1, 4), (4, 1), 4),
        ((4, 4), (4, 1), (4, 1), 4),
        ((4, 4), (4, 1), (0, 1), 4),
        ((4, 4), (4, 1), (-4, 1), 4),
        ((4, 4), (5, 1), (1, 4), 4),
        ((4, 5), (5, 1), (1, 4), 4),
        ((5, 4), (4, 1), (1, 5), 4),
        ((2, 3, 4), (12, 4, 1), (1, 2, 6), 8),
        ((2, 3, 4), (12, 1, 3), (1, 2, 6), 8),
    ]
    for round_ in range(3):
        for n, (sizes, dst_strides, src_strides, k) in enumerate(configs):
            seed = 100 * round_ + n
            src, sf = placed(sizes, src_strides, k, fill=lambda m, s=seed: random_bytes(m, s))
            dst, df = placed(sizes, dst_strides, k, fill=sentinel, extra=round_)
            expected = brute_copy_bytes(dst, df, dst_strides, src, sf, src_strides, sizes, k)
            _copy.copy_memory(address(dst, df), address(src, sf), sizes, dst_strides,
                              src_strides, k, THREADS[round_])
            assert_same_bytes(dst, expected, f"round {round_}, config {n}")


# ---- large cases: tiled, short-inner and parallel kernels ----------------------------------


def packed(sizes, order=None):
    """Packed strides of ``sizes`` in a physical order (outermost first; default row-major)."""
    return ref_packed_strides(sizes, tuple(range(len(sizes))) if order is None else order)


def blocked_pair(n, c, h, w, x):
    """NCHW -> NCHWx as a copy between two 5-D views (N, C/x, x, H, W): (sizes, dst, src)."""
    cb = c // x
    sizes = (n, cb, x, h, w)
    src = (c * h * w, x * h * w, h * w, w, 1)
    dst = (cb * h * w * x, h * w * x, 1, w * x, x)
    return sizes, dst, src


def _big_cases():
    c = []

    def add(name, sizes, dst, src, k):
        c.append(pytest.param(sizes, dst, src, k, id=name))

    for k, (r, s) in [(4, (1000, 1000)), (1, (1000, 1000)), (1, (1001, 999)), (2, (777, 1025)),
                      (8, (513, 259)), (16, (300, 301)), (3, (300, 301)), (6, (257, 255)),
                      (12, (130, 129))]:
        add(f"transpose-{r}x{s}-i{k}", (r, s), packed((r, s)), packed((r, s), (1, 0)), k)
    for k, n, ch, h, w in [(1, 2, 3, 257, 259), (1, 2, 4, 257, 259), (4, 1, 3, 255, 257),
                           (4, 2, 16, 33, 35), (2, 3, 5, 67, 65), (3, 2, 3, 64, 65)]:
        nchw = (n, ch, h, w)
        add(f"nchw-nhwc-{nchw}-i{k}", nchw, packed(nchw, (0, 2, 3, 1)), packed(nchw), k)
        add(f"nhwc-nchw-{nchw}-i{k}", nchw, packed(nchw), packed(nchw, (0, 2, 3, 1)), k)
    s5 = (2, 5, 9, 17, 19)
    add("ncdhw-ndhwc-i4", s5, packed(s5, (0, 2, 3, 4, 1)), packed(s5), 4)
    for k, (n, ch, h, w, x) in [(1, (2, 64, 17, 19, 32)), (4, (3, 20, 31, 33, 4)),
                                (1, (1, 64, 9, 13, 64)), (2, (2, 16, 21, 23, 8))]:
        sizes, dst, src = blocked_pair(n, ch, h, w, x)
        add(f"nchw-nchw{x}-{(n, ch, h, w)}-i{k}", sizes, dst, src, k)
        add(f"nchw{x}-nchw-{(n, ch, h, w)}-i{k}", sizes, src, dst, k)
    add("padded-to-packed-i4", (999, 1000), packed((999, 1000)), (1024, 1), 4)
    add("packed-to-padded-i1", (1000, 1000), (1003, 1), packed((1000, 1000)), 1)
    add("transpose-to-padded-i4", (700, 600), (613, 1), (1, 700), 4)
    add("broadcast-row-i4", (1000, 1000), packed((1000, 1000)), (0, 1), 4)
    add("broadcast-column-i1", (1000, 1000), packed((1000, 1000)), (1, 0), 1)
    add("broadcast-scalar-i16", (700, 300), packed((700, 300)), (0, 0), 16)
    add("broadcast-inner-i3", (300, 301, 2), packed((300, 301, 2)), (301, 1, 0), 3)
    add("broadcast-to-transposed-i2", (500, 400), packed((500, 400), (1, 0)), (0, 1), 2)
    add("reversed-source-i4", (1000, 1000), packed((1000, 1000)), (-1000, -1), 4)
    add("reversed-dst-rows-i1", (1000, 1000), (-1000, 1), packed((1000, 1000)), 1)
    add("reversed-transpose-i8", (300, 500), (-500, 1), (1, -300), 8)
    add("contiguous-1d-i1", (3_000_001,), (1,), (1,), 1)
    add("strided-1d-i8", (400_000,), (1,), (3,), 8)
    add("gather-1d-i6", (100_003,), (2,), (-1,), 6)
    s4 = (3, 37, 41, 43)
    add("permute-4d-i8", s4, packed(s4), packed(s4, (0, 3, 1, 2)), 8)
    s6 = (5, 6, 7, 8, 9, 2)
    add("permute-6d-i2", s6, packed(s6, (1, 0, 3, 2, 5, 4)), packed(s6, (5, 4, 3, 2, 1, 0)), 2)
    add("batched-transpose-i4", (8, 300, 301), packed((8, 300, 301)),
        packed((8, 300, 301), (0, 2, 1)), 4)
    add("size1-dims-i4", (1, 1000, 1, 999), (7, 999, -5, 1), (0, 1, 3, 1000), 4)
    add("small-transpose-i4", (3, 5), (5, 1), (1, 3), 4)
    add("sixteen-elements-i4", (16,), (1,), (1,), 4)
    return c


@pytest.mark.parametrize(("sizes", "dst_strides", "src_strides", "k"), _big_cases())
def test_large_copies_with_guards_and_any_thread_count(sizes, dst_strides, src_strides, k):
    src, sf = placed(sizes, src_strides, k, fill=lambda n: random_bytes(n, len(sizes) + k))
    dst0, df = placed(sizes, dst_strides, k, fill=sentinel)
    expected = numpy_copy_bytes(dst0, df, dst_strides, src, sf, src_strides, sizes, k)
    assert_each_thread_count_copies(dst0, df, src, sf, sizes, dst_strides, src_strides, k,
                                    expected)


def _overlap_cases():
    c = []

    def add(name, n_bytes, sizes, dst_first, dst, src_first, src, k):
        c.append(pytest.param(n_bytes, sizes, dst_first, dst, src_first, src, k, id=name))

    add("self-transpose-f32", 1000 * 1000 * 4, (1000, 1000), 0, (1000, 1), 0, (1, 1000), 4)
    add("self-transpose-u8-odd", 999 * 999, (999, 999), 0, (999, 1), 0, (1, 999), 1)
    add("self-transpose-c128", 200 * 200 * 16, (200, 200), 0, (200, 1), 0, (1, 200), 16)
    add("self-transpose-v3", 301 * 301 * 3, (301, 301), 0, (301, 1), 0, (1, 301), 3)
    add("shift-forward-u8", 1_000_001, (1_000_000,), 1, (1,), 0, (1,), 1)
    add("shift-backward-u8", 1_000_001, (1_000_000,), 0, (1,), 1, (1,), 1)
    add("shift-forward-f32", 4 * 1_000_003, (1_000_000,), 12, (1,), 0, (1,), 4)
    add("shift-backward-2d-f64", 8 * 501 * 501, (500, 500), 0, (501, 1), 8 * 501, (501, 1), 8)
    add("reverse-in-place-f64", 8 * 500_000, (500_000,), 0, (1,), 8 * 499_999, (-1,), 8)
    add("reverse-rows-in-place-u8", 1000 * 1000, (1000, 1000), 0, (1000, 1), 999 * 1000,
        (-1000, 1), 1)
    nchw = (2, 3, 257, 259)
    add("nchw-to-nhwc-in-place-u8", 2 * 3 * 257 * 259, nchw, 0, packed(nchw, (0, 2, 3, 1)), 0,
        packed(nchw), 1)
    add("transpose-into-lower-rows-f32", 4 * 1100 * 1000, (1000, 1000), 4 * 100 * 1000,
        (1000, 1), 0, (1, 1000), 4)
    add("broadcast-row-over-itself-i4", 4 * 1000 * 1000, (1000, 1000), 0, (1000, 1), 4 * 1000,
        (0, 1), 4)
    return c


@pytest.mark.parametrize(("n_bytes", "sizes", "dst_first", "dst_strides", "src_first",
                          "src_strides", "k"), _overlap_cases())
def test_large_overlapping_copies(n_bytes, sizes, dst_first, dst_strides, src_first,
                                  src_strides, k):
    original = random_bytes(n_bytes + 2 * GUARD, n_bytes)
    df, sf = GUARD + dst_first, GUARD + src_first
    expected = numpy_copy_bytes(original, df, dst_strides, original, sf, src_strides, sizes, k)
    assert_each_thread_count_copies(original, df, None, sf, sizes, dst_strides, src_strides, k,
                                    expected)


# ---- medium random layouts; the engine's tuning forced to its extremes ---------------------


@contextlib.contextmanager
def tuned(**kwargs):
    """Run with the copy engine's tuning constants changed (plans are re-made), then restore."""
    old = _copy._tune(**kwargs)
    try:
        yield
    finally:
        _copy._tune(**old)


#: every copy streamed, fills too (which on AMD with a 48 KiB L1d stream from the L3 otherwise)
STREAMED = {"nt_bytes": 0, "fill_nt_bytes": -1}
TINY = {"tile_row_bytes": 16, "tile_area_bytes": 16, "block_bytes": 16, "thread_bytes": 1,
        **STREAMED}

#: the engine's own tuning, as this module found it at import: the tests of the planner's
#: choices run with it, whatever an earlier test left set (tuned() restores what it found, and
#: under pytest-run-parallel four threads entering it at once can restore each other's values)
ENGINE_TUNING = _copy._tune()


@settings(max_examples=40)
@given(sizes=medium_sizes(), data=hst.data())
def test_copy_memory_medium_random_layouts(sizes, data):
    """Thousands of elements, random physical orders, padding, flips, broadcast sources: the
    tiled transposes, short-inner kernels and block splits on shapes of no particular tile
    multiple; 1 and 2 threads, and again with streaming stores forced on."""
    dst_strides = data.draw(permuted_strides(sizes))
    src_strides = data.draw(permuted_strides(sizes, broadcast=True))
    k = data.draw(hst.sampled_from(COPY_ITEMSIZES))
    src, sf = placed(sizes, src_strides, k, fill=lambda n: random_bytes(n, n))
    dst0, df = placed(sizes, dst_strides, k, fill=sentinel, extra=data.draw(hst.integers(0, 9)))
    expected = numpy_copy_bytes(dst0, df, dst_strides, src, sf, src_strides, sizes, k)
    for threads, tuning in [(1, {}), (2, {}), (2, STREAMED)]:
        dst = dst0.copy()
        with tuned(**tuning):
            _copy.copy_memory(address(dst, df), address(src, sf), sizes, dst_strides,
                              src_strides, k, threads)
        assert_same_bytes(dst, expected, f"num_threads={threads} {tuning}")


@given(case=copy_cases(), threads=hst.sampled_from([1, 2, 3]), shared=hst.booleans(),
       seed=hst.integers(0, 2**32 - 1), data=hst.data())
def test_copy_memory_with_tiny_blocks_and_forced_threads(case, threads, shared, seed, data):
    """Blocks and tiles of 16 bytes, a thread for every byte of work, streaming stores on every
    copy: small cases then run through many blocks, odometer steps and thread shares."""
    sizes, dst_strides, src_strides, k = case
    if shared:
        src, df, sf = shared_placement(sizes, dst_strides, src_strides, k, seed, data)
        dst = src
    else:
        src, sf = placed(sizes, src_strides, k, fill=lambda n: random_bytes(n, seed))
        dst, df = placed(sizes, dst_strides, k, fill=sentinel)
    expected = brute_copy_bytes(dst, df, dst_strides, src, sf, src_strides, sizes, k)
    with tuned(**TINY):
        _copy.copy_memory(address(dst, df), address(src, sf), sizes, dst_strides, src_strides,
                          k, threads)
    assert_same_bytes(dst, expected, f"{case} shared={shared}")


@pytest.mark.parametrize(("name", "sizes", "dst_strides", "src_strides", "k", "dst_shift"), [
    ("contiguous-40MB-unaligned", (40 * 2**20 + 3,), (1,), (1,), 1, 5),
    ("transpose-3000-f32", (3000, 3000), (3000, 1), (1, 3000), 4, 0),
    ("transpose-3000-f32-unaligned", (3000, 2999), (2999, 1), (1, 3000), 4, 12),
    ("nchw-nhwc-u8-c3", (12, 3, 1000, 1001), packed((12, 3, 1000, 1001), (0, 2, 3, 1)),
     packed((12, 3, 1000, 1001)), 1, 1),
])
def test_copies_large_enough_for_streaming_stores(name, sizes, dst_strides, src_strides, k,
                                                  dst_shift):
    """Copies of more than 32 MiB (the default threshold of non-temporal stores)."""
    src, sf = placed(sizes, src_strides, k, fill=lambda n: random_bytes(n, 9))
    dst0, df = placed(sizes, dst_strides, k, fill=sentinel, extra=dst_shift)
    df += dst_shift
    dst0 = np.concatenate([dst0, sentinel(dst_shift, 7)])
    expected = numpy_copy_bytes(dst0, df, dst_strides, src, sf, src_strides, sizes, k)
    assert_each_thread_count_copies(dst0, df, src, sf, sizes, dst_strides, src_strides, k,
                                    expected, threads=(1, 2))


# ---- every SIMD level, streamed transposes, long fills ---------------------------------------

#: The levels this CPU can run (0: SSE2, 1: + SSSE3, 2: + AVX2); each is tested here.
SIMD_LEVELS = list(range(_copy._simd() + 1))


@contextlib.contextmanager
def simd(level):
    """Run with the copy kernels limited to ``level``, then give them back all the CPU has."""
    _copy._simd(level)
    try:
        yield
    finally:
        _copy._simd(-1)


def aligned_placed(sizes, strides, k, line_offset, *, fill):
    """placed(), with element 0 at ``line_offset`` bytes past a 64-byte boundary."""
    buf, first = placed(sizes, strides, k, fill=fill, extra=64)
    first += (line_offset - address(buf, first)) % 64
    return buf, first


def assert_copies_like_numpy(sizes, dst_strides, src_strides, k, *, line_offset=0,
                             threads=(1, 2), what=""):
    """Copy between the layouts on each thread count; compare every byte with np.copyto's."""
    src, sf = placed(sizes, src_strides, k, fill=lambda n: random_bytes(n, n + k))
    dst0, df = aligned_placed(sizes, dst_strides, k, line_offset, fill=sentinel)
    expected = numpy_copy_bytes(dst0, df, dst_strides, src, sf, src_strides, sizes, k)
    assert_each_thread_count_copies(dst0, df, src, sf, sizes, dst_strides, src_strides, k,
                                    expected, threads=threads, what=what)


# (R, C) of a transpose: the AVX2 tiles (8 x 8 floats, 4 x 4 doubles) and their
# edges, blocks narrower than a tile, the interleave extents, one-vector rows
TRANSPOSE_SHAPES = [(8, 8), (4, 64), (64, 4), (5, 7), (12, 20), (33, 65), (100, 37),
                    (37, 100), (256, 130), (3, 200), (200, 3), (16, 16), (1000, 8), (64, 48),
                    (130, 40), (32, 16), (1000, 16), (45, 128), (70, 96)]


@pytest.mark.parametrize("level", SIMD_LEVELS)
@pytest.mark.parametrize("k", [1, 2, 4, 8, 16, 12])
@pytest.mark.parametrize("tuning", [{}, {"staged": 0}, {"staged": 1}, STREAMED],
                         ids=["planner", "in-place", "staged", "streamed"])
def test_transposes_at_every_simd_level(level, k, tuning):
    """Each kernel family (SSE2, SSSE3, AVX2 micro-tiles) on the shapes whose edges differ
    between them, tiled in place, staged, and staged with streaming stores."""
    with simd(level), tuned(**tuning):
        for rows, cols in TRANSPOSE_SHAPES:
            sizes = (rows, cols)
            assert_copies_like_numpy(sizes, packed(sizes), packed(sizes, (1, 0)), k,
                                     line_offset=4 * k % 64, what=f"{sizes} k={k}")


@pytest.mark.parametrize("level", SIMD_LEVELS)
@pytest.mark.parametrize("k", [1, 2, 4, 8, 16, 12])
def test_staged_transposes_of_aliasing_source_strides(level, k):
    """Source rows 2 or 4 KiB apart (or 6 KiB: k = 12) go through the one-line-per-row buffer
    of the staging kernel: whole lines, a ragged last line (R not a multiple of a line) and a
    ragged last micro-tile, staged and streamed; 64 and 96 columns reach the AVX2 tiles of
    every item size (16 x 16 of 2-byte items)."""
    with simd(level):
        for tuning in ({"staged": 1}, STREAMED):
            with tuned(**tuning):
                for pitch_bytes, rows, cols in ((4096, None, 40), (2048, -5, 24),
                                                (2048, -70, 9), (4096, -3, 64),
                                                (2048, -40, 96)):
                    pitch = pitch_bytes // min(k, 8) if k != 12 else 512
                    n_rows = pitch if rows is None else pitch + rows
                    sizes = (n_rows, cols)
                    assert_copies_like_numpy(sizes, packed(sizes), (1, pitch), k,
                                             what=f"{sizes} pitch={pitch} {tuning}")


@pytest.mark.thread_unsafe(reason="sets the engine's process-wide knobs")
@pytest.mark.parametrize("k", [1, 4, 8])
def test_the_planner_stages_source_rows_4_kib_apart(k):
    """Below the streaming threshold, long destination rows are tiled in place, except where
    the source's rows are a multiple of 4 KiB apart (one L1 set): those go through the staging
    tile (2-byte items keep their AVX2 tiles in place; 2 KiB apart is not enough). The staged
    copies of those layouts match numpy, through the planner's own choice. With
    ``crowd_staged`` off (AMD's 12-way L1) the source side's rule is gone and those copies tile
    in place; the destination side's rule for bytes stays. (The streaming threshold is held
    above these copies of up to 3 MiB: on a 1 MiB L2 they would stream, through the tile.)"""
    pitch = 4096 // k
    cases = [((256, pitch), (pitch, 1), (1, pitch), "staged"),          # 2-D transpose
             ((3, 256, pitch), (256 * pitch, pitch, 1), (256 * pitch, 1, 2 * pitch),
              "staged"),                                               # padded source rows
             ((256, pitch), (pitch, 1), (1, pitch + 1),                  # off by one item
              "staged" if k == 1 else "transpose"),     # (bytes: the destination's rows)
             ((256, 2048 // k), (2048 // k, 1), (1, 2048 // k), "transpose")]
    for crowd_staged in (1, 0):
        with tuned(**{**ENGINE_TUNING, "crowd_staged": crowd_staged, "nt_bytes": 64 << 20}):
            for sizes, dst_strides, src_strides, kind in cases:
                if not crowd_staged and src_strides[-1] % pitch == 0 and k != 1:
                    # the source's rows in one L1 set, now in place (bytes: the destination's
                    # rows are 4 KiB apart too, which stages them still)
                    kind = "transpose"
                assert _copy._block_kind(sizes, dst_strides, src_strides, k) == kind, \
                    (sizes, k, crowd_staged)
                assert_copies_like_numpy(sizes, dst_strides, src_strides, k, threads=(1, 2),
                                         what=f"{sizes} {src_strides} k={k} {crowd_staged=}")
            assert _copy._block_kind((256, 2048), (2048, 1), (1, 2048), 2) == "transpose"
            with tuned(staged=0):
                assert _copy._block_kind((256, pitch), (pitch, 1), (1, pitch), k) == \
                    "transpose"


@pytest.mark.thread_unsafe(reason="sets the engine's process-wide knobs")
@pytest.mark.parametrize("k, channels", [(4, 24), (4, 64), (8, 16), (2, 48), (1, 100)])
def test_the_planner_tiles_in_place_what_fits_an_eighth_of_the_llc(k, channels):
    """NCHW -> NHWC with destination rows of 65-256 bytes (4- and 8-byte items) or 17-128
    bytes (1 and 2): tiled in place while the copy is at most an eighth of the
    last-level cache (llc_bytes), staged beyond it; rows of one vector are staged at any
    size. The bytes match numpy's either way."""
    pixels = 1001                       # planes 1001 items apart: no L1-set crowding
    sizes, dst_strides, src_strides = (pixels, channels), (channels, 1), (1, pixels)
    copy_bytes = pixels * channels * k
    with tuned(**ENGINE_TUNING):
        with tuned(llc_bytes=8 * copy_bytes):
            assert _copy._block_kind(sizes, dst_strides, src_strides, k) == "transpose"
            assert_copies_like_numpy(sizes, dst_strides, src_strides, k, threads=(1, 2),
                                     what=f"in place, {channels} channels k={k}")
        with tuned(llc_bytes=8 * copy_bytes - 1):
            assert _copy._block_kind(sizes, dst_strides, src_strides, k) == "staged"
            assert_copies_like_numpy(sizes, dst_strides, src_strides, k, threads=(1, 2),
                                     what=f"staged, {channels} channels k={k}")
        one_vector = (pixels, 16 // k)
        assert _copy._block_kind(one_vector, (16 // k, 1), (1, pixels), k) == "staged"


@pytest.mark.thread_unsafe(reason="sets the engine's process-wide knobs")
@pytest.mark.parametrize("k, small, mib1, large", [(1, 256, 256, 256), (2, 128, 128, 176),
                                                   (4, 64, 64, 128), (8, 32, 44, 90)])
def test_in_place_tiles_grow_to_the_tile_area_when_a_copy_leaves_64_of_them(k, small, mib1,
                                                                            large):
    """An in-place transpose tile has rows of tile_row_bytes (256: 256 bytes, 64 floats, 32
    doubles a side), and grows to tile_area_bytes of each operand (64 KiB: 181 -> 176 uint16
    items, 128 floats, 90 doubles a side, a multiple of the micro-tile) where the copy still
    leaves 64 tiles of that size: a 1 MiB copy has a 16 KiB area (the row's tile but for
    doubles: 44^2 of them), a 4 MiB one the whole 64 KiB. The grown tiles, ragged edges and
    all, copy like numpy."""
    def transpose(nbytes):      # rows 5 items longer than the side: nothing aliases in L1
        side = int((nbytes // k) ** 0.5)
        return (side, side + 3), (side + 3, 1), (1, side + 5)

    with tuned(**ENGINE_TUNING), tuned(nt_bytes=1 << 40, tile_area_bytes=65536):
        assert _copy._block_plan(*transpose(1 << 20), k) == ("transpose", mib1, mib1)
        sizes, dst_strides, src_strides = transpose(4 << 20)
        assert _copy._block_plan(sizes, dst_strides, src_strides, k) == \
            ("transpose", large, large)
        assert_copies_like_numpy(sizes, dst_strides, src_strides, k, threads=(1, 2),
                                 what=f"{large}^2 tiles, k={k}")
        with tuned(tile_area_bytes=16):          # the rows alone
            assert _copy._block_plan(sizes, dst_strides, src_strides, k) == \
                ("transpose", small, small)


@pytest.mark.thread_unsafe(reason="sets the engine's process-wide knobs")
@pytest.mark.parametrize("k", [1, 4])
def test_the_planner_stages_long_rows_both_ways_from_15_mib(k):
    """Column-major to row-major, destination rows of 768 items and source rows of thousands:
    tiled in place under 15 MiB (in cache: nothing streams here), staged from 15 MiB on,
    whatever the cache's size; pixels into planes (source rows of 256 items, short) stay in
    place at any size. The bytes match numpy's either way."""
    def column_major(rows):
        return (rows, 768), (768, 1), (1, rows)

    threshold = (15 << 20) // (768 * k)                 # rows of a 15 MiB copy
    with tuned(**ENGINE_TUNING), tuned(nt_bytes=1 << 40):
        for rows, kind in ((threshold - 1, "transpose"), (threshold, "staged")):
            sizes, dst_strides, src_strides = column_major(rows)
            assert _copy._block_kind(sizes, dst_strides, src_strides, k) == kind, (rows, k)
            assert_copies_like_numpy(sizes, dst_strides, src_strides, k, threads=(1, 2),
                                     what=f"column-major, {rows} rows, k={k}")
        planes = (16 << 20) // (256 * k) + 7            # planes not 4 KiB apart
        assert _copy._block_kind((256, planes), (planes, 1), (1, 256), k) == "transpose"


@pytest.mark.thread_unsafe(reason="sets the engine's process-wide knobs")
@pytest.mark.parametrize("hw, kind", [(64, "staged"), (181, "staged"), (512, "staged"),
                                      (45, "transpose"), (100, "transpose"),
                                      (160, "transpose")])
def test_the_planner_stages_16_byte_planes_that_crowd_l1_sets(hw, kind):
    """NHWC -> NCHW of 16 byte channels: the 16 destination planes are written 16 bytes at a
    time in place, unless more than 4 of the 16 planes' lines share an L1 set (planes a
    multiple of 4 KiB apart, or 32761 bytes: 7 short of 32 KiB), which go through the staging
    tile; either way the bytes match numpy's."""
    sizes = (2, 16, hw * hw)
    dst_strides = (16 * hw * hw, hw * hw, 1)
    src_strides = (16 * hw * hw, 1, 16)
    with tuned(**ENGINE_TUNING):
        assert _copy._block_kind(sizes, dst_strides, src_strides, 1) == kind
        with tuned(nt_bytes=1 << 40):   # (2-byte items of 512^2 planes: 32 MiB moved, streamed)
            assert _copy._block_kind(sizes, dst_strides, src_strides, 2) == "transpose"
        assert_copies_like_numpy(sizes, dst_strides, src_strides, 1, threads=(1, 2),
                                 what=f"{hw}^2 planes")


@pytest.mark.thread_unsafe(reason="sets the engine's process-wide knobs")
@pytest.mark.parametrize("channels, hw, rows", [(16, 181, 1024), (16, 64, 1024), (32, 64, 512),
                                                (64, 128, 256), (128, 128, 128)])
def test_staged_tiles_of_few_planes_give_their_room_to_longer_rows(channels, hw, rows):
    """A staged tile in cache (16 KiB of room) is square, 128 x 128 bytes, unless the copy has
    fewer destination rows than that (NHWC -> NCHW with 16-64 byte channels): then the room
    goes to longer rows, 16 KiB / channels bytes of each plane. Copies of 8 MiB and more keep
    the square tile of their 128 KiB room. The long rows, ragged ends included (181^2 is no
    multiple of them), copy like numpy."""
    sizes = (16384 // channels * 128 // hw ** 2 + 1, channels, hw * hw)   # 2-3 MiB
    dst_strides = (channels * hw * hw, hw * hw, 1)
    src_strides = (channels * hw * hw, 1, channels)
    with tuned(**ENGINE_TUNING), tuned(stage_bytes=131072, stage_big_from=8 << 20,
                                       staged=1, nt_bytes=1 << 40):
        assert _copy._block_plan(sizes, dst_strides, src_strides, 1) == \
            ("staged", channels, rows)
        assert_copies_like_numpy(sizes, dst_strides, src_strides, 1, threads=(1, 2),
                                 what=f"{channels} channels, {hw}^2 planes")
        large = (8 << 20) // (channels * hw * hw) + 1
        assert _copy._block_plan((large, *sizes[1:]), dst_strides, src_strides, 1) == \
            ("staged", channels, 352)                   # sqrt(128 KiB), a multiple of 16


@pytest.mark.thread_unsafe(reason="sets the engine's process-wide knobs")
@pytest.mark.parametrize("k", [1, 4, 8])
def test_copies_stream_once_they_move_as_much_as_the_last_level_cache(k):
    """A copy streams its destination once the bytes it reads and writes together reach
    nt_bytes (the last-level cache), not once it writes that much: a packed or a padded
    copy writing half of it streams, a slightly smaller one does not; a fill from one row
    (which reads 1/rows of what it writes) streams only once it writes that much itself
    (fill_nt_bytes -1: fills by nt_bytes too; test_fills_stream_from_their_own_threshold).
    The streamed copies match numpy's bytes on 1 and 2 threads."""
    nt = 1 << 17
    half = nt // 2 // k                                    # items writing nt / 2 bytes
    rows, cols = 64, half // 64
    with tuned(**ENGINE_TUNING), tuned(nt_bytes=nt, fill_nt_bytes=-1):
        assert _copy._block_streams((half,), (1,), (1,), k)
        assert not _copy._block_streams((half - 64,), (1,), (1,), k)
        assert _copy._block_streams((rows, cols), (cols, 1), (cols + 3, 1), k)   # padded
        assert not _copy._block_streams((rows - 1, cols), (cols, 1), (cols + 3, 1), k)
        assert not _copy._block_streams((rows, cols), (cols, 1), (0, 1), k)      # a fill
        assert _copy._block_streams((2 * rows, cols), (cols, 1), (0, 1), k)
        assert not _copy._block_streams((2 * rows - 2, cols), (cols, 1), (0, 1), k)
        for sizes, dst_strides, src_strides in (((half,), (1,), (1,)),
                                                ((rows, cols), (cols, 1), (cols + 3, 1)),
                                                ((2 * rows, cols), (cols, 1), (0, 1))):
            assert_copies_like_numpy(sizes, dst_strides, src_strides, k, threads=(1, 2),
                                     what=f"streamed {sizes}, k={k}")


@pytest.mark.thread_unsafe(reason="sets the engine's process-wide knobs")
@pytest.mark.parametrize("k, channels", [(1, 3), (1, 4), (2, 3), (2, 4), (4, 3)])
def test_images_stream_from_their_own_threshold(k, channels):
    """HWC <-> CHW (the interleave and deinterleave kernels: pixels of fewer items than a
    micro-tile's side) stream from pixels_nt_bytes when that is set and below nt_bytes, by
    the footprint (bytes read + written), as every copy does from nt_bytes; -1 leaves them
    to nt_bytes, and nt_bytes -1 (never) wins. A 2-D transpose of as many bytes (both sides
    a micro-tile or more) keeps nt_bytes. Streamed and not, split and merge match
    numpy's bytes on 1 and 2 threads, planes whose lines agree (blocks start on their lines,
    after a first block up to the first line boundary when the destination starts inside a
    line) and planes that do not (2 pixels short of it)."""
    h, w = 61, 128
    for width in (w, w - 2):
        hw = h * width
        footprint = 2 * hw * channels * k
        split = ((channels, hw), (hw, 1), (1, channels))   # HWC -> CHW
        merge = ((hw, channels), (channels, 1), (1, hw))   # CHW -> HWC
        square = ((hw // 16, 16 * channels), (1, hw // 16), (16 * channels, 1))
        for pixels_nt, nt, want in ((footprint, 1 << 40, True), (footprint + 1, 1 << 40, False),
                                    (-1, 1 << 40, False), (-1, footprint, True),
                                    (0, -1, False), (1 << 40, footprint, True)):
            with tuned(**ENGINE_TUNING), tuned(nt_bytes=nt, pixels_nt_bytes=pixels_nt):
                for sizes, dst_strides, src_strides in (split, merge):
                    assert _copy._block_streams(sizes, dst_strides, src_strides, k) == want, \
                        (pixels_nt, nt, sizes)
                    for line_offset in (0, 16, 4 * k):   # a first block before the lines
                        assert_copies_like_numpy(
                            sizes, dst_strides, src_strides, k, line_offset=line_offset,
                            threads=(1, 2),
                            what=f"{sizes} of {k} bytes, {pixels_nt}, {nt}, +{line_offset}")
                assert _copy._block_streams(*square, k) == (0 <= nt <= 2 * (hw // 16) * 16
                                                            * channels * k)


@pytest.mark.thread_unsafe(reason="sets the engine's process-wide knobs")
@pytest.mark.parametrize("k", [1, 4, 8])
def test_fills_stream_from_their_own_threshold(k):
    """Fills, copies that read at most an eighth of the bytes they write (a broadcast row, a
    broadcast value), stream from fill_nt_bytes when that is set and above nt_bytes, by the
    footprint; -1 leaves them to nt_bytes, and nt_bytes -1 (never) wins. A copy reading more
    (a source broadcast over 4) and a plain copy keep nt_bytes. Streamed and not, the bytes
    match numpy's on 1 and 2 threads."""
    n, row = 8, 1000                            # 8 rows of 1000 items
    nbytes = n * row * k                        # written; a fill's footprint is a little more
    fills = [((n, row), (row, 1), (0, 1)),      # one row read, 8 written
             ((n, row), (row, 1), (0, 0))]      # one value
    copies = [((4, 2, row), (2 * row, row, 1), (0, row, 1)),   # a quarter read: footprint 1.25x
              ((n, row), (row, 1), (row, 1))]                  # footprint 2x
    for nt, fill_nt, fills_stream, copies_stream in (
            (0, -1, True, True), (0, nbytes, True, True),
            (0, nbytes + row * k + 1, False, True), (0, 1 << 40, False, True),
            (4 * nbytes, 0, False, False), (-1, 0, False, False),
            (nbytes + nbytes // 4, nbytes, False, True)):
        with tuned(**ENGINE_TUNING), tuned(nt_bytes=nt, fill_nt_bytes=fill_nt):
            for layouts, want in ([(f, fills_stream) for f in fills]
                                  + [(c, copies_stream) for c in copies]):
                assert _copy._block_streams(*layouts, k) == want, (nt, fill_nt, layouts)
                assert_copies_like_numpy(*layouts, k, threads=(1, 2),
                                         what=f"{layouts} k={k} {nt} {fill_nt}")


@pytest.mark.thread_unsafe(reason="sets the engine's process-wide knobs")
@pytest.mark.parametrize("k, channels, planes, streamed",
                         [(1, 16, 1603, False), (2, 8, 1603, False), (4, 4, 1603, False),
                          (8, 2, 1603, False), (1, 32, 1603, True), (2, 16, 1603, True),
                          (4, 8, 1603, True), (1, 16, 4096, True)])
def test_streamed_transposes_whose_source_rows_are_one_vector_stay_in_place(k, channels,
                                                                         planes, streamed):
    """NHWC -> NCHW where a pixel is one 16-byte vector (16 bytes, 8 uint16, 4 floats, 2
    doubles) is tiled in place with long destination rows even when the copy streams, for
    item sizes in the vector_rows_in_place mask (the Zen 3: all; Intel: none; the Zen 5:
    doubles), else streamed; pixels
    of two vectors, and byte planes 4 KiB apart (which would be staged in cache, not tiled in
    place), go through the streamed staging tile. Either way the bytes match numpy's, ragged
    rows included."""
    sizes = (3, channels, planes)
    dst_strides = (channels * planes, planes, 1)
    src_strides = (channels * planes, 1, channels)
    for limit in (31, k, 31 & ~k, 0):   # vector_rows_in_place: the sizes that tile in place
        with tuned(**ENGINE_TUNING), tuned(nt_bytes=0, vector_rows_in_place=limit):
            streams = streamed or not k & limit
            kind, rows, _ = _copy._block_plan(sizes, dst_strides, src_strides, k)
            assert _copy._block_streams(sizes, dst_strides, src_strides, k) == streams
            assert (kind, rows) == (("staged", channels) if streams else ("transpose", channels))
            assert_copies_like_numpy(sizes, dst_strides, src_strides, k, threads=(1, 2),
                                     what=f"{channels} channels of {k} bytes, limit {limit}")


@pytest.mark.thread_unsafe(reason="sets the engine's process-wide knobs")
@pytest.mark.parametrize("k", [1, 2, 4, 8])
@pytest.mark.parametrize("row_bytes", [16, 32, 64])
def test_streamed_short_pixels_match_numpy(k, row_bytes):
    """Planes into dense pixels of 16, 32 or 64 bytes (NCHW -> NHWC with 16 bytes, 4 floats,
    16 floats, 2 doubles a pixel; NCHW -> NCHW4 float32): a streamed copy stages them, and
    the tile writes pixels of one or two micro-tiles (up to a line) in place, through
    streaming stores when the destination is 16-byte aligned. The bytes match numpy's: pixel
    counts around one and two micro-tiles, destinations 0 to 15 bytes into a line, padded
    planes, 1-3 threads, every SIMD level (whose micro-tiles differ in size); unstreamed the
    same copies match too."""
    c = row_bytes // k
    for hw in sorted({1, c - 1, c, c + 1, 2 * c + 3, 64, 101}):
        sizes = (3, c, hw)                       # N, C, pixels: written as N, pixels, C
        dst_strides = (c * hw, 1, c)
        src_strides = (c * (hw + 3), hw + 3, 1)
        with tuned(**ENGINE_TUNING), tuned(**STREAMED):
            if hw >= c:
                assert _copy._block_plan(sizes, dst_strides, src_strides, k)[::2] == \
                    ("staged", c)
                assert _copy._block_streams(sizes, dst_strides, src_strides, k)
            for level in range(_copy._simd() + 1):
                _copy._simd(level)
                try:
                    for line_offset in range(0, 16, k):
                        assert_copies_like_numpy(sizes, dst_strides, src_strides, k,
                                                 line_offset=line_offset, threads=(1, 2, 3),
                                                 what=f"{hw} pixels, level {level}")
                finally:
                    _copy._simd(-1)
        with tuned(**ENGINE_TUNING), tuned(nt_bytes=2**40):
            assert not _copy._block_streams(sizes, dst_strides, src_strides, k)
            assert_copies_like_numpy(sizes, dst_strides, src_strides, k, threads=(1, 2),
                                     what=f"{hw} pixels in cache")


@pytest.mark.thread_unsafe(reason="sets the engine's process-wide knobs")
@pytest.mark.parametrize(("stitch_rows", "nt_pages"), [(1, 0), (0, 0), (1, 1)],
                         ids=["joined", "row-by-row", "joined-pages"])
@pytest.mark.parametrize("k", [1, 4])
@pytest.mark.parametrize("row_bytes", [1, 12, 63, 64, 65, 100, 130, 418, 1000, 1024, 4100,
                                       16500])
def test_streamed_padded_rows_stitch_into_a_dense_destination(k, row_bytes, stitch_rows,
                                                              nt_pages):
    """A streamed padded -> packed copy: rows that follow each other in the destination but
    are not whole lines, or whole lines that start inside one, are streamed as one run
    (blocks.h st_copy_rows, rows.h st_stitch_row), each line two rows share completed from a
    carry. The bytes match numpy's and nothing outside the destination is written
    (sentinels): rows shorter than a line, around one and two lines, long rows; destinations
    0-63 bytes into a line; blocks of about three rows split between 1-3 threads, so shares
    start and end inside lines; every SIMD level. (stitch_rows 0: each row alone, its ends
    ordinary stores; nt_pages 1: rows of 16 KiB and more read four pages at once inside the
    joined run, as on Intel.)"""
    w = max(1, row_bytes // k)
    for rows in (1, 2, 7, 40):
        sizes = (rows, w)
        dst_strides, src_strides = (w, 1), (w + 5, 1)
        # blocks of whole rows (a block splits no row), about three rows each
        block = max(256, 3 * w * k)
        with tuned(**ENGINE_TUNING), tuned(**STREAMED, block_bytes=block, thread_bytes=1,
                                           stitch_rows=stitch_rows, nt_pages=nt_pages):
            assert _copy._block_streams(sizes, dst_strides, src_strides, k)
            for level in range(_copy._simd() + 1):
                with simd(level):
                    for line_offset in sorted({0, k, 17 * k % 64, 64 - k}):
                        assert_copies_like_numpy(sizes, dst_strides, src_strides, k,
                                                 line_offset=line_offset, threads=(1, 2, 3),
                                                 what=f"{rows} rows, level {level}")


@pytest.mark.thread_unsafe(reason="sets the engine's process-wide knobs")
@pytest.mark.parametrize("k", [1, 2, 4, 8, 16])
def test_streamed_transposes_fetch_the_next_block_for_items_up_to_fetch_next(k):
    """A streamed 2-D transpose prefetches its next block's source when its items are at most
    fetch_next bytes (16: every size, AMD's setting; 1: bytes only, Intel's; 0: none); the
    bytes match numpy's whichever, ragged blocks included, on 1 and 2 threads."""
    sizes = (301, 517)
    dst_strides, src_strides = (517, 1), (1, 301)
    for limit in (16, 1, 0):
        with tuned(**ENGINE_TUNING), tuned(nt_bytes=0, fetch_next=limit):
            assert _copy._block_kind(sizes, dst_strides, src_strides, k) == "staged"
            assert _copy._block_fetches(sizes, dst_strides, src_strides, k) == (k <= limit)
            assert_copies_like_numpy(sizes, dst_strides, src_strides, k, threads=(1, 2),
                                     what=f"fetch_next={limit}, k={k}")


@pytest.mark.thread_unsafe(reason="sets the engine's process-wide knobs")
@pytest.mark.parametrize("k", [1, 2, 4, 8, 16])
def test_streamed_copies_of_any_size_may_stage_through_the_large_tile(k):
    """With stage_big_from = 1 every streamed transpose stages through the large tile
    (stage_bytes), as the streamed copies from half nt_bytes do on Intel (2 MiB there): a
    ragged 2-D transpose, NCHW -> NHWC and NHWC -> NCHW with 3 and 24 channels, and a
    column-major copy match numpy on 1 and 2 threads, guard bytes included."""
    shapes = [((301, 517), (517, 1), (1, 301)),
              ((2, 24, 37 * 41), (24 * 37 * 41, 1, 24), (24 * 37 * 41, 37 * 41, 1)),
              ((2, 24, 37 * 41), (24 * 37 * 41, 37 * 41, 1), (24 * 37 * 41, 1, 24)),
              ((2, 3, 301), (903, 1, 3), (903, 301, 1)),
              ((1001, 77), (77, 1), (1, 1001))]
    with tuned(**ENGINE_TUNING), tuned(nt_bytes=0, stage_big_from=1, stage_bytes=131072):
        kind, rows, columns = _copy._block_plan(*shapes[0], k)
        assert kind == "staged" and rows * columns * k > 16384   # more than the small tile
        for sizes, dst_strides, src_strides in shapes:
            assert_copies_like_numpy(sizes, dst_strides, src_strides, k, threads=(1, 2),
                                     what=f"large tile {sizes}, k={k}")


@pytest.mark.thread_unsafe(reason="sets the engine's process-wide knobs")
@pytest.mark.parametrize("k", [1, 2, 4, 8, 16])
def test_streamed_whole_rows_stage_in_the_small_tile_where_runs_stay_long(k):
    """Streamed NCHW -> NHWC into whole pixel rows longer than a line stage rows_tile_bytes
    (an L1-sized tile) when each source plane still gives a block 1 KiB, the staging tile
    otherwise; pixel rows of at most a line keep the staging tile's blocks. The bytes match
    numpy's with and without the small tile, ragged pixel counts, 1-3 threads."""
    small, big = 32768, 131072
    with tuned(**ENGINE_TUNING), tuned(nt_bytes=0, stage_big_from=1, stage_bytes=big,
                                       rows_big_bytes=0):
        for pixel_bytes in (64, 128, 256, 512):
            c = pixel_bytes // k
            if c < 2:
                continue
            sizes = (2, c, 37, 41)   # NCHW, written as NHWC
            dst_strides = (37 * 41 * c, 1, 41 * c, c)
            src_strides = (c * 37 * 41, 37 * 41, 41, 1)
            run = small // pixel_bytes * k   # a block's bytes of each source plane
            with tuned(rows_tile_bytes=0):
                before = _copy._block_plan(sizes, dst_strides, src_strides, k)
            for tile in (0, small):
                with tuned(rows_tile_bytes=tile):
                    kind, rows, columns = _copy._block_plan(sizes, dst_strides, src_strides, k)
                    assert kind == "staged", kind
                    if before[2] != c:   # rows longer than the streamed runs: not whole rows
                        assert (kind, rows, columns) == before
                    else:
                        takes_small = tile and pixel_bytes > 64 and run >= 1024
                        want = min(37 * 41, (small if takes_small else big) // pixel_bytes)
                        assert columns == c and rows == want, (pixel_bytes, tile, rows)
                    assert_copies_like_numpy(sizes, dst_strides, src_strides, k,
                                             threads=(1, 2, 3),
                                             what=f"C={c} rows_tile_bytes={tile}")


@pytest.mark.thread_unsafe(reason="sets the engine's process-wide knobs")
@pytest.mark.parametrize("k", [1, 2, 4, 8])
@pytest.mark.parametrize("big", [0, 262144, 524288])
def test_streamed_whole_rows_from_many_source_rows_stage_in_the_big_tile(k, big):
    """Streamed NCHW -> NHWC into whole pixel rows from 64 or more planes stage
    rows_big_bytes (up to the whole 512 KiB buffer) when it is more than the staging tile;
    fewer planes, and rows longer than the streamed runs (not whole rows), plan as without
    it. The bytes match numpy's, several blocks a plane and a ragged last one, 1-3 threads."""
    room = 131072
    with tuned(**ENGINE_TUNING), tuned(nt_bytes=0, stage_big_from=1, stage_bytes=room,
                                       rows_tile_bytes=0):
        for c in (32, 64, 128, 256):
            if c * k > 512:
                continue
            hw = (97, 101)   # 9797 pixels: 2-20 blocks of the big tile, the last one ragged
            sizes = (2, c, *hw)   # NCHW, written as NHWC
            dst_strides = (hw[0] * hw[1] * c, 1, hw[1] * c, c)
            src_strides = (c * hw[0] * hw[1], hw[0] * hw[1], hw[1], 1)
            with tuned(rows_big_bytes=0):
                before = _copy._block_plan(sizes, dst_strides, src_strides, k)
            with tuned(rows_big_bytes=big):
                kind, rows, columns = _copy._block_plan(sizes, dst_strides, src_strides, k)
                assert kind == before[0] == "staged"
                if columns == c and c >= 64 and big > room:   # whole rows from many planes
                    assert rows == big // (c * k), (c, rows)
                else:
                    assert (kind, rows, columns) == before
                assert_copies_like_numpy(sizes, dst_strides, src_strides, k,
                                         threads=(1, 2, 3),
                                         what=f"C={c} rows_big_bytes={big}")


@pytest.mark.thread_unsafe(reason="sets the engine's process-wide knobs")
@pytest.mark.parametrize("plain", [0, 1])
def test_streamed_byte_nchw32_matches_numpy_through_either_kernel(plain):
    """8-bit NCHW -> NCHW32 streamed (nt_bytes 0) through many blocks of a 16 KiB tile (512
    pixels a block, a ragged last one), planes that spread over the L1 sets (10007 and 4133
    pixels: with pix32_plain the in-register kernel writes them with ordinary stores, the
    tile streams the pixels its groups leave) and planes that crowd one set (4096: the
    streamed tile either way), destinations 0, 16 and 40 bytes into a line, every SIMD
    level: the bytes match numpy's on 1 and 2 threads."""
    level = _copy._simd()
    try:
        with tuned(**ENGINE_TUNING), tuned(nt_bytes=0, stage_bytes=16384, pix32_plain=plain):
            for lv in range(level + 1):
                _copy._simd(lv)
                for pixels in (10007, 4133, 4096):
                    sizes = (2, 32, pixels)   # N x 32 planes -> N x pixels x 32 bytes
                    dst_strides, src_strides = (32 * pixels, 1, 32), (32 * pixels, pixels, 1)
                    assert _copy._block_plan(sizes, dst_strides, src_strides, 1) == \
                        ("staged", 512, 32)
                    assert _copy._block_streams(sizes, dst_strides, src_strides, 1)
                    for offset in (0, 16, 40):
                        assert_copies_like_numpy(
                            sizes, dst_strides, src_strides, 1, line_offset=offset,
                            what=f"{pixels} pixels, {offset} into a line, level {lv}")
    finally:
        _copy._simd(level)


@pytest.mark.thread_unsafe(reason="sets the engine's process-wide knobs")
@pytest.mark.parametrize("narrow", [0, 1])
@pytest.mark.parametrize("k", [1, 2, 4])
def test_deinterleaves_match_numpy_through_either_kernel(k, narrow):
    """HWC -> CHW with 2, 3 and 4 channels (and 2 of 4), items of 1, 2 and 4 bytes, through
    the AVX2 or (deint_narrow) the 16-byte deinterleave kernels at every SIMD level, streamed
    and not, planes a whole number of lines apart (2112 items: the AVX2 kernels stream), a
    multiple of 2 KiB apart (2048 items: they stream with deint_alias_nt) and neither (2037),
    a ragged pixel count: the bytes match numpy's on 1 and 2 threads."""
    level = _copy._simd()
    try:
        with tuned(**ENGINE_TUNING), tuned(deint_narrow=narrow, deint_alias_nt=narrow):
            for lv in range(level + 1):
                _copy._simd(lv)
                for stream in (False, True):
                    with tuned(nt_bytes=0 if stream else 1 << 40):
                        for s, r in ((2, 2), (3, 3), (4, 4), (4, 2)):
                            for n in (2112, 2048, 2037):
                                sizes = (r, n)   # planes of n pixels out of pixels of s items
                                assert_copies_like_numpy(
                                    sizes, (n, 1), (1, s), k, threads=(1, 2),
                                    what=f"S={s} R={r} n={n} level={lv} nt={stream}")
    finally:
        _copy._simd(level)


@pytest.mark.thread_unsafe(reason="sets the engine's process-wide knobs")
@pytest.mark.parametrize("pitch, kind", [(4096, "staged"), (8192, "staged"),
                                         (4096 + 64, "transpose"), (2048, "transpose")])
def test_the_planner_stages_byte_rows_4_kib_apart_in_the_destination(pitch, kind):
    """NHWC -> NCHW of 64 byte channels onto planes ``pitch`` bytes apart: staged when the
    planes are a multiple of 4 KiB apart (their lines in one L1 set), in place otherwise; the
    same planes of 2-byte items stay in place. The bytes match numpy's either way."""
    sizes = (64, pitch - 7)
    dst_strides, src_strides = (pitch, 1), (1, 64)
    with tuned(**ENGINE_TUNING):
        assert _copy._block_kind(sizes, dst_strides, src_strides, 1) == kind
        assert _copy._block_kind(sizes, dst_strides, src_strides, 2) == "transpose"
        assert_copies_like_numpy(sizes, dst_strides, src_strides, 1, threads=(1, 2),
                                 what=f"planes {pitch} B apart")


def test_block_kind_names_its_arguments():
    with pytest.raises(ValueError, match="non-empty"):
        _copy._block_kind((0, 3), (3, 1), (1, 3), 4)
    with pytest.raises(ValueError, match="itemsize"):
        _copy._block_kind((2, 3), (3, 1), (1, 3), 0)
    with pytest.raises(ValueError, match="dst_strides"):
        _copy._block_kind((2, 3), (3,), (1, 3), 4)
    assert _copy._block_kind((2, 3), (0, 1), (3, 1), 4) == "overlapping"
    assert _copy._block_kind((2, 3), (3, 1), (3, 1), 4) == "copy"
    with pytest.raises(ValueError, match="non-empty"):
        _copy._block_plan((0, 3), (3, 1), (1, 3), 4)
    assert _copy._block_plan((2, 3), (0, 1), (3, 1), 4) == ("overlapping", 0, 0)
    assert _copy._block_plan((2, 3), (3, 1), (3, 1), 4)[0] == "copy"


@pytest.mark.parametrize("k", [1, 2, 4, 8])
@pytest.mark.parametrize("cols", [20, 40, 100, 300])
def test_streamed_transposes_stitch_lines_across_blocks(k, cols):
    """Streamed transposes write every destination line whole, finishing the lines that
    straddle two blocks from a per-row carry: every offset of the destination within a line;
    rows padded to whole lines, to whole lines plus one item (each row at another offset in
    its line) and packed (short rows: whole-row tiles); an outer dim; 1, 2 and 3 threads,
    whose shares start and end inside a strip of blocks."""
    rows = 70
    with tuned(**STREAMED):
        for pitch in (-(-cols * k // 64) * 64 // k, -(-cols * k // 64) * 64 // k + 1, cols):
            sizes = (3, rows, cols)
            dst_strides = (rows * pitch + 64 // k, pitch, 1)
            src_strides = (rows * cols, 1, rows)
            for line_offset in range(0, 64, k if k < 8 else 8):
                assert_copies_like_numpy(sizes, dst_strides, src_strides, k,
                                         line_offset=line_offset, threads=(1, 2, 3),
                                         what=f"pitch={pitch} offset={line_offset}")
            assert_copies_like_numpy(sizes, dst_strides, src_strides, k, line_offset=1,
                                     what=f"pitch={pitch} misaligned")


@pytest.mark.thread_unsafe(reason="sets the engine's process-wide knobs")
@pytest.mark.parametrize("k", [1, 2, 4, 8])
def test_stitched_tiles_take_at_most_stitch_tile_rows(k):
    """A stitched streamed tile (destination rows at another offset in their lines each) has
    the staging room's rows up to ``stitch_tile_rows``; a tile of line-aligned runs keeps the
    room's. Copies through strips of 16, 48 and 128 rows, ragged last strips among them, stay
    exact on 1-3 threads at every destination offset within a line."""
    sizes, src_strides = (600, 200), (1, 600)
    big = dict(STREAMED, stage_big_from=0, stage_bytes=131072, nt_stitch_bytes=512)
    room_rows = 131072 // 512 if k > 1 else 131072 // 256   # bytes' runs are half as long
    for cap in (16, 48, 128, 1024):
        with tuned(**big, stitch_tile_rows=cap):
            kind, rows, _ = _copy._block_plan(sizes, (201, 1), src_strides, k)
            assert (kind, rows) == ("staged", min(cap, room_rows)), cap
            assert _copy._block_plan(sizes, (256, 1), src_strides, k)[1] == 512
    # the runs: nt_stitch_bytes a row, half of it for bytes but never shorter than nt_run_bytes
    for stitch, run, want in ((512, 256, 256 if k == 1 else 512), (256, 256, 256),
                              (64, 64, 64), (1024, 128, 512 if k == 1 else 1024)):
        with tuned(**{**big, "nt_stitch_bytes": stitch, "nt_run_bytes": run}):
            assert _copy._block_plan(sizes, (201, 1), src_strides, k)[2] == want // k, stitch
    for cap in (16, 48, 128):
        with tuned(**big, stitch_tile_rows=cap):
            for line_offset in (0, k, 40):
                assert_copies_like_numpy(sizes, (201, 1), src_strides, k,
                                         line_offset=line_offset, threads=(1, 2, 3),
                                         what=f"rows={cap} offset={line_offset}")


@pytest.mark.thread_unsafe(reason="sets the engine's process-wide knobs")
@pytest.mark.parametrize("k", [1, 2, 4, 8])
def test_large_streamed_tiles_of_aligned_rows_write_half_runs(k):
    """A streamed tile of line-aligned destination rows writes runs of nt_run_bytes a row, and
    of half that in copies of nt_short_runs_from bytes or more (-1: never); the rows stay
    the room's. Copies with the half runs (128 bytes: two lines, a line for 2-byte items'
    64-item tiles) are exact on 1-3 threads, destination on a line and inside one."""
    sizes, dst_strides, src_strides = (300, 1000), (1024, 1), (1, 300)
    nbytes = 300 * 1000 * k
    with tuned(**STREAMED, stage_big_from=0, stage_bytes=131072, nt_run_bytes=256):
        for start, runs in ((-1, 256), (0, 128), (nbytes, 128), (nbytes + 1, 256)):
            with tuned(nt_short_runs_from=start):
                assert _copy._block_plan(sizes, dst_strides, src_strides, k) == \
                    ("staged", 300, runs // k), start
        with tuned(nt_run_bytes=192, nt_short_runs_from=0):   # half: one whole line
            assert _copy._block_plan(sizes, dst_strides, src_strides, k) == ("staged", 300, 64 // k)
        with tuned(nt_short_runs_from=0):
            for line_offset in (0, k, 40):
                assert_copies_like_numpy(sizes, dst_strides, src_strides, k,
                                         line_offset=line_offset, threads=(1, 2, 3),
                                         what=f"offset={line_offset}")


@pytest.mark.parametrize("chunks", [1, 3, 10**9])
@pytest.mark.parametrize("k", [1, 4, 12])
def test_teams_claim_blocks_in_chunks_of_any_size(k, chunks):
    """A team claims its blocks in chunks from a shared counter: one fixed share per thread
    (chunks=1), a few, or one block a claim (10**9). Stitched streamed strips, in-place tiles
    and fills must come out whole whichever thread takes which chunk."""
    with tuned(thread_bytes=1, chunks_per_thread=chunks):
        for nt_bytes in (0, -1):
            with tuned(nt_bytes=nt_bytes, nt_run_bytes=64, nt_stitch_bytes=64):
                for sizes, dst_strides, src_strides in [
                    ((40, 50), (53, 1), (1, 40)),             # transpose, odd pitch
                    ((3, 30, 20), (700, 23, 1), (600, 1, 30)),
                    ((6, 7, 300), (2100, 300, 1), (1, 0, 0)),  # broadcast: fills
                ]:
                    assert_copies_like_numpy(sizes, dst_strides, src_strides, k,
                                             line_offset=k, threads=(1, 2, 3, 5),
                                             what=f"nt_bytes={nt_bytes} {sizes}")


@pytest.mark.parametrize("k", [1, 4, 8])
def test_streamed_transposes_with_tiny_strips(k):
    """Blocks of 16 bytes and a thread per byte of work: strips of many narrow blocks, shares
    of a few blocks each, carries handed on and flushed at every kind of boundary."""
    with tuned(nt_bytes=0, thread_bytes=1, nt_run_bytes=64, nt_stitch_bytes=64):
        for rows, cols, pitch in ((40, 50, 53), (17, 100, 100), (64, 33, 40)):
            sizes = (rows, cols)
            for line_offset in (0, k, 24):
                assert_copies_like_numpy(sizes, (pitch, 1), (1, rows), k,
                                         line_offset=line_offset, threads=(1, 2, 3, 5),
                                         what=f"{sizes} pitch={pitch}")


@pytest.mark.parametrize("k", [1, 2, 4, 8, 16])
def test_streamed_pixels_around_the_whole_row_limit(k):
    """Streamed NCHW -> NHWC with the default runs: pixel rows up to two runs (one for bytes)
    are staged whole, longer ones in runs aligned on the lines; rows just under, at and over
    each limit, line-aligned and not, on 1-3 threads."""
    run = _copy._tune()["nt_run_bytes"]
    with tuned(**STREAMED):
        for row_bytes in (run - 64, run, run + 64, 2 * run - 64, 2 * run, 2 * run + 64):
            c = max(1, row_bytes // k)
            sizes = (2, c, 5, 41)   # NCHW, written as NHWC
            dst_strides = (5 * 41 * c, 1, 41 * c, c)
            src_strides = (c * 5 * 41, 5 * 41, 41, 1)
            for line_offset in (0, min(k, 8)):
                assert_copies_like_numpy(sizes, dst_strides, src_strides, k,
                                         line_offset=line_offset, threads=(1, 2, 3),
                                         what=f"C={c} offset={line_offset}")


@pytest.mark.parametrize("tuning", [
    {"nt_run_bytes": 2**40, "nt_stitch_bytes": 2**40},
    {"nt_run_bytes": 0, "nt_stitch_bytes": -5, "stage_bytes": 0},
    {"nt_run_bytes": 2**40, "nt_stitch_bytes": 2**40, "stage_bytes": 0},
], ids=["huge-runs", "tiny-runs", "huge-runs-tiny-tile"])
def test_streamed_tuning_extremes_stay_inside_the_tile(tuning):
    """_tune clamps the streamed runs so that every tile still fits the staging buffer: copies
    with absurd settings stay exact (the guard bytes and a subprocess would show an overflow)."""
    code = f"""
    from test_copy_engine import assert_copies_like_numpy, packed, tuned
    with tuned(nt_bytes=0, **{tuning!r}):
        for k in (1, 4, 8, 16):
            for rows, cols, pitch in ((300, 5000, 5000), (257, 3000, 3001), (64, 64, 64),
                                      (20, 40000, 40000), (20, 40000, 40001)):
                sizes = (rows, cols)
                assert_copies_like_numpy(sizes, (pitch, 1), (1, rows), k, line_offset=8)
    print("ok")
    """
    assert run_isolated(code).strip().endswith("ok")


@pytest.mark.parametrize("level", SIMD_LEVELS)
@pytest.mark.parametrize("k", [1, 2, 3, 4, 8, 16])
def test_long_fills_at_every_simd_level(level, k):
    """A broadcast source filling rows of 256 bytes and more (the vector fill, every
    destination offset in a line) and shorter ones (the element loop)."""
    with simd(level):
        for cols in (5, 255 // k + 1, 1000):
            sizes = (6, cols)
            for line_offset in (0, k, 17 * k % 64, 60 // k * k):
                assert_copies_like_numpy(sizes, packed(sizes), (1, 0), k,
                                         line_offset=line_offset, what=f"cols={cols}")


@pytest.mark.parametrize("level", SIMD_LEVELS)
@pytest.mark.parametrize("k", [1, 2, 3, 4, 8, 12, 16])
@pytest.mark.parametrize("streamed", [False, True], ids=["stored", "streamed"])
def test_fills_around_the_vector_widths_at_odd_addresses(level, k, streamed):
    """The broadcast fill (one register stored over the row): rows just below, at and above
    one and four vectors of 16 and 32 bytes and 256 bytes (where streaming starts), padded rows
    (gaps between them), destinations at every kind of offset in a line (inside an element
    too), with ordinary stores and with streaming stores forced on."""
    with simd(level), tuned(**(STREAMED if streamed else {})):
        for row_bytes in (15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257,
                          300, 1000, 4099):
            cols = max(1, row_bytes // k)
            for pad in (0, 3):
                sizes = (5, cols)
                for line_offset in (0, 1, k, 31, 33, 63):
                    assert_copies_like_numpy(sizes, (cols + pad, 1), (1, 0), k,
                                             line_offset=line_offset,
                                             what=f"cols={cols} pad={pad} at {line_offset}")


@settings(max_examples=60)
@given(k=hst.sampled_from(COPY_ITEMSIZES), rows=hst.integers(1, 6), cols=hst.integers(1, 700),
       pad=hst.integers(0, 9), line_offset=hst.integers(0, 63),
       level=hst.sampled_from(SIMD_LEVELS), streamed=hst.booleans(),
       row_stride=hst.sampled_from([0, 1, 2]))
def test_fills_of_random_rows_match_numpy(k, rows, cols, pad, line_offset, level, streamed,
                                          row_stride):
    """A source repeating along the rows (stride 0: the fill) into padded rows at any offset,
    at a random SIMD level, with or without streaming stores, on 1 and 2 threads: the same
    bytes as np.copyto, gaps and guards untouched."""
    sizes = (rows, cols)
    with simd(level), tuned(**(STREAMED if streamed else {})):
        assert_copies_like_numpy(sizes, (cols + pad, 1), (row_stride, 0), k,
                                 line_offset=line_offset)


@pytest.mark.parametrize("k", [1, 4])
def test_a_channel_bias_broadcast_to_nchw(k):
    """The benchmark's broadcast->packed case, small: a (1, C, 1, 1) bias into packed NCHW
    (rows of H * W equal elements per channel), and into a channels-last destination."""
    sizes = (3, 16, 9, 11)
    for dst_strides in (packed(sizes), packed(sizes, (0, 2, 3, 1))):
        for streamed in (False, True):
            with tuned(**(STREAMED if streamed else {})):
                assert_copies_like_numpy(sizes, dst_strides, (0, 1, 0, 0), k, line_offset=4)


@pytest.mark.parametrize("defines", [["-U__SSE2__"], []], ids=["portable", "native"])
def test_portable_kernels_without_sse2(tmp_path, defines):
    """The block kernels compiled as on a CPU without SSE2 (the plain-C micro-tiles, copies and
    fills a non-x86 build runs), and natively, checked by tests/c/portable_kernels.c against a
    plain loop with guard bytes: every block kind, itemsize and flag set, ragged shapes."""
    header_dir = TESTS_DIR.parent / "src" / "strided" / "_kernels"
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if compiler is None or not (header_dir / "copy_kernels.h").exists():
        pytest.skip("needs a C compiler and the source tree")
    exe = tmp_path / "portable_kernels"
    subprocess.run([compiler, "-std=c11", "-O1", *defines, "-I", str(header_dir),
                    str(TESTS_DIR / "c" / "portable_kernels.c"), "-o", str(exe)],
                   check=True, capture_output=True, timeout=120)
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stdout + run.stderr


def test_simd_levels_clamp_to_the_cpu():
    """_simd never enables what the CPU lacks; -1 and too-high levels mean all it has."""
    top = _copy._simd()
    try:
        assert _copy._simd(top + 5) == top
        assert _copy._simd(0) == 0
        assert _copy._simd() == 0
    finally:
        assert _copy._simd(-1) == top


@pytest.mark.parametrize("rank", [7, 8, 9, 12, 33, 64])
def test_copy_memory_high_ranks(rank):
    """Ranks past the plan cache's (8) and up to MAX_RANK, size-1 dims with odd strides."""
    rng = np.random.default_rng(rank)
    for trial in range(4):
        sizes = [1] * rank
        for axis in rng.choice(rank, size=min(rank, 10), replace=False):
            sizes[axis] = 2
        sizes = tuple(sizes)
        dst_strides = list(packed(sizes, tuple(rng.permutation(rank))))
        src_strides = list(packed(sizes, tuple(rng.permutation(rank))))
        for axis in range(rank):
            if sizes[axis] == 1:
                dst_strides[axis] = int(rng.integers(-5, 6))
                src_strides[axis] = int(rng.integers(-5, 6))
            elif rng.integers(0, 3) == 0:
                src_strides[axis] = -src_strides[axis]
        k = int(rng.choice(COPY_ITEMSIZES))
        src, sf = placed(sizes, src_strides, k, fill=lambda n, t=trial: random_bytes(n, t))
        dst, df = placed(sizes, dst_strides, k, fill=sentinel)
        expected = brute_copy_bytes(dst, df, dst_strides, src, sf, src_strides, sizes, k)
        for threads in THREADS:
            _copy.copy_memory(address(dst, df), address(src, sf), sizes, dst_strides,
                              src_strides, k, threads)
            assert_same_bytes(dst, expected, f"rank {rank}, trial {trial}")


@pytest.mark.parametrize("tuning", [{}, STREAMED], ids=["default", "streamed"])
def test_concurrent_copies_from_python_threads(tuning):
    """Copies release the GIL: several Python threads copying at once (sharing the plan cache,
    each also asking for 2 threads) must each get their own exact result; streamed, the
    transposes with odd rows stitch lines through each thread's own carries."""
    configs = [
        ((300, 301), packed((300, 301)), packed((300, 301), (1, 0)), 4),
        ((2, 3, 67, 65), packed((2, 3, 67, 65), (0, 2, 3, 1)), packed((2, 3, 67, 65)), 1),
        ((301, 300), (300, 1), (1, 301), 8),
        ((4, 4), (4, 1), (1, 4), 4),
        ((4, 4), (4, 1), (1, 4), 2),
        ((5000,), (1,), (-1,), 3),
        ((200, 200), (200, 1), (0, 1), 16),
    ]
    prepared = []
    for n, (sizes, dst_strides, src_strides, k) in enumerate(configs):
        src, sf = placed(sizes, src_strides, k, fill=lambda m, n=n: random_bytes(m, n))
        dst0, df = placed(sizes, dst_strides, k, fill=sentinel)
        expected = numpy_copy_bytes(dst0, df, dst_strides, src, sf, src_strides, sizes, k)
        prepared.append((sizes, dst_strides, src_strides, k, src, sf, dst0, df, expected))

    def work(worker):
        bad = []
        for rep in range(30):
            sizes, dst_strides, src_strides, k, src, sf, dst0, df, expected = prepared[
                (worker + rep) % len(prepared)]
            dst = dst0.copy()
            _copy.copy_memory(address(dst, df), address(src, sf), sizes, dst_strides,
                              src_strides, k, 1 + rep % 2)
            if dst.tobytes() != expected.tobytes():
                bad.append((worker, rep, sizes))
        return bad

    with tuned(**tuning), ThreadPoolExecutor(max_workers=4) as pool:
        failures = [b for result in pool.map(work, range(4)) for b in result]
    assert failures == []


def test_extreme_strides_on_empty_and_size1_dims():
    """A stride matters only on a dim of more than one element: huge ones elsewhere are fine."""
    _copy.copy_memory(0, 0, (0, 3), (2**62, 2**62), (1, 1), 8)
    _copy.copy_memory(0, 0, (3, 0), (2**62, 1), (-(2**62), 1), 16)
    for k in (1, 3, 16):
        src = random_bytes(3 * k + 2 * GUARD, k)
        dst = sentinel(3 * k + 2 * GUARD)
        expected = dst.copy()
        expected[GUARD:GUARD + 3 * k] = src[GUARD:GUARD + 3 * k]
        _copy.copy_memory(address(dst, GUARD), address(src, GUARD), (1, 3, 1),
                          (2**62, 1, -(2**62)), (2**61, 1, 7), k)
        assert_same_bytes(dst, expected, f"itemsize {k}")


def test_null_address_of_a_non_empty_copy_is_refused():
    dst = sentinel(64)
    with pytest.raises(ValueError, match="NULL"):
        _copy.copy_memory(address(dst), 0, (4,), (1,), (1,), 4)
    with pytest.raises(ValueError, match="NULL"):
        _copy.copy_memory(0, address(dst), (4,), (1,), (1,), 4)
    assert_same_bytes(dst, sentinel(64))


# ---- argument validation ------------------------------------------------------------------


def test_resolve_threads():
    default = _copy.resolve_threads(None)
    assert 1 <= default <= _copy.max_threads()               # OpenMP's default...
    assert default <= (os.cpu_count() or 1)                  # ...but no more than the cores
    if not strided.openmp_enabled():
        assert default == 1
    assert _copy.resolve_threads(1) == 1
    assert 1 <= _copy.resolve_threads(2) <= 2
    assert _copy.resolve_threads(1000) >= 1


BAD_THREADS = [(0, ValueError), (-1, ValueError), (-(2**70), (ValueError, OverflowError)),
               (1.5, TypeError), (2.0, TypeError), (True, TypeError), (False, TypeError),
               ("2", TypeError), ([2], TypeError)]


@pytest.mark.parametrize(("bad", "error"), BAD_THREADS)
def test_bad_num_threads_is_refused_before_any_write(bad, error):
    with pytest.raises(error):
        _copy.resolve_threads(bad)
    src = random_bytes(64 + 2 * GUARD, 1)
    dst = sentinel(64 + 2 * GUARD)
    with pytest.raises(error):
        _copy.copy_memory(address(dst, GUARD), address(src, GUARD), (8, 8), (8, 1), (1, 8), 1,
                          bad)
    with pytest.raises(error):
        _copy.copy_memory(address(dst, GUARD), address(src, GUARD), (8, 8), (8, 1), (1, 8), 1,
                          num_threads=bad)
    assert_same_bytes(dst, sentinel(64 + 2 * GUARD))
    d = np.zeros((8, 8), np.uint8)
    s = np.arange(64, dtype=np.uint8).reshape(8, 8).T
    with pytest.raises(error):
        _ndarray.copyto_buffers(d, s, bad)
    with pytest.raises(error):
        _ndarray.copyto_buffers(d, s, num_threads=bad)
    assert not d.any()


@pytest.mark.parametrize("threads", [1, 2, 3, 64])
def test_any_positive_thread_count_gives_the_same_bytes(threads):
    sizes = (300, 301)
    src = random_bytes(300 * 301 * 4, 5)
    dst = sentinel(300 * 301 * 4 + 2 * GUARD)
    expected = numpy_copy_bytes(dst, GUARD, (301, 1), src, 0, (1, 300), sizes, 4)
    _copy.copy_memory(address(dst, GUARD), address(src), sizes, (301, 1), (1, 300), 4, threads)
    assert_same_bytes(dst, expected)


@pytest.mark.parametrize(
    ("sizes", "dst_strides", "src_strides", "itemsize", "error"),
    [
        ((-1,), (1,), (1,), 4, ValueError),
        ((2, -3), (3, 1), (3, 1), 4, ValueError),
        ((2,), (1, 1), (1,), 4, ValueError),
        ((2,), (1,), (1, 1), 4, ValueError),
        ((2, 2), (2, 1), (2,), 4, ValueError),
        ((1,) * 65, (1,) * 65, (1,) * 65, 4, ValueError),
        ((2,), (1,), (1,), 0, ValueError),
        ((2,), (1,), (1,), -4, ValueError),
        ((2,), (1,), (1,), 1.5, TypeError),
        ((2,), (1,), (1,), "4", TypeError),
        ("ab", (1,), (1,), 4, TypeError),
        (None, (1,), (1,), 4, TypeError),
        ((2,), (1.5,), (1,), 4, TypeError),
        ((2,), (1,), ("1",), 4, TypeError),
        ((2.0,), (1,), (1,), 4, TypeError),
    ],
)
def test_copy_memory_validates_its_arguments(sizes, dst_strides, src_strides, itemsize, error):
    src = random_bytes(256, 2)
    dst = sentinel(256)
    with pytest.raises(error):
        _copy.copy_memory(address(dst, 128), address(src, 128), sizes, dst_strides, src_strides,
                          itemsize)
    assert_same_bytes(dst, sentinel(256))


@pytest.mark.parametrize("bad", ["0", 1.5, None, [0], 0.0, False, True])
def test_copy_memory_refuses_non_integer_addresses(bad):
    src = random_bytes(64, 3)
    dst = sentinel(64)
    with pytest.raises(TypeError):
        _copy.copy_memory(bad, address(src), (4,), (1,), (1,), 4)
    with pytest.raises(TypeError):
        _copy.copy_memory(address(dst), bad, (4,), (1,), (1,), 4)
    with pytest.raises(TypeError):
        _copy.copy_memory(bad, address(src), (0,), (1,), (1,), 4)       # even for no elements
    assert_same_bytes(dst, sentinel(64))


@pytest.mark.parametrize(
    ("sizes", "dst_strides"),
    [
        ((3, 4), (0, 1)),            # broadcast rows
        ((4, 3), (1, 1)),            # sliding window
        ((5,), (0,)),
        ((2, 2, 2), (4, 6, 10)),     # 4 + 6 == 10: only a three-way sum collides
        ((3, 3), (-1, 1)),           # anti-diagonals
        ((2, 1000, 1000), (1, 1000, 1)),
    ],
)
def test_self_overlapping_destination_is_refused_before_any_write(sizes, dst_strides):
    src_strides = packed(sizes)
    src, sf = placed(sizes, src_strides, 4, fill=lambda n: random_bytes(n, 4))
    dst, df = placed(sizes, dst_strides, 4, fill=sentinel)
    before = dst.copy()
    for threads in THREADS:
        with pytest.raises(ValueError, match=r"(?s)(dst.*overlap|overlap.*dst)"):
            _copy.copy_memory(address(dst, df), address(src, sf), sizes, dst_strides,
                              src_strides, 4, threads)
    assert_same_bytes(dst, before)


def test_self_overlapping_destination_of_one_element_or_none_is_fine():
    src = random_bytes(2 * GUARD + 4, 8)
    dst = sentinel(2 * GUARD + 4)
    expected = dst.copy()
    expected[GUARD:GUARD + 4] = src[GUARD:GUARD + 4]
    _copy.copy_memory(address(dst, GUARD), address(src, GUARD), (1, 1), (0, 0), (0, 0), 4)
    assert_same_bytes(dst, expected)
    _copy.copy_memory(address(dst, GUARD), address(src, GUARD), (0, 5), (0, 0), (1, 1), 4)
    assert_same_bytes(dst, expected)


# ---- copyto_buffers: the buffer-protocol fast path ----------------------------------------


def _f4(shape, start=0):
    return np.arange(start, start + int(np.prod(shape)), dtype=np.float32).reshape(shape)


def _writeable_broadcast():
    base = np.zeros(4, np.float32)
    return as_strided(base, shape=(3, 4), strides=(0, 4), writeable=True)


FAST_PAIRS = {
    "same-layout": lambda: (np.zeros((3, 4), np.float32), _f4((3, 4), 1)),
    "transposed-src": lambda: (np.zeros((3, 4), np.float32), _f4((4, 3), 1).T),
    "transposed-dst": lambda: (np.zeros((4, 3), np.float32).T, _f4((3, 4), 1)),
    "reversed-src": lambda: (np.zeros((3, 4), np.int16), np.arange(12, dtype=np.int16)
                             .reshape(3, 4)[::-1, ::-1]),
    "reversed-dst": lambda: (np.zeros((3, 4), np.int64)[::-1], np.arange(12).reshape(3, 4)),
    "broadcast-src": lambda: (np.zeros((3, 4), np.float32),
                              np.broadcast_to(_f4((4,), 1), (3, 4))),
    "padded-src": lambda: (np.zeros((3, 4), np.complex128),
                           (np.arange(30) * (1 + 1j)).reshape(3, 10)[:, 2:6]),
    "rank0": lambda: (np.zeros((), np.float64), np.array(3.5)),
    "empty": lambda: (np.zeros((0, 3), np.float32), np.zeros((0, 3), np.float32)),
    "bool": lambda: (np.zeros(5, bool), np.array([1, 0, 1, 1, 0], bool)[::-1]),
    "bytearray": lambda: (bytearray(6), np.arange(1, 7, dtype=np.uint8)),
    "bytearray-from-bytes": lambda: (bytearray(6), b"abcdef"),
    "memoryview-strided": lambda: (memoryview(bytearray(12))[::2],
                                   memoryview(b"abcdefghijkl")[1::2]),
    "memoryview-2d": lambda: (memoryview(bytearray(6)).cast("B", (2, 3)),
                              np.arange(1, 7, dtype=np.uint8).reshape(3, 2).T),
    "big-transpose": lambda: (np.zeros((500, 700), np.float32), _f4((700, 500)).T),
}


# The two fast paths of copyto: numpy's struct read directly, and any buffer. The first hands
# what it does not take to the second, so both must copy and decline alike.
FAST_PATHS = {"copyto_arrays": _ndarray.copyto_arrays, "copyto_buffers": _ndarray.copyto_buffers}


def as_numpy(x):
    return np.asarray(x) if not isinstance(x, (bytes, bytearray, memoryview)) else \
        np.array(memoryview(x))


@pytest.mark.parametrize("threads", [None, 1, 2])
@pytest.mark.parametrize("name", list(FAST_PAIRS))
@pytest.mark.parametrize("path", list(FAST_PATHS))
def test_fast_paths_copy_numpy_and_buffers(path, name, threads):
    dst, src = FAST_PAIRS[name]()
    expected = as_numpy(dst).copy()
    np.copyto(expected, as_numpy(src))
    assert FAST_PATHS[path](dst, src, threads) is True
    np.testing.assert_array_equal(as_numpy(dst), expected)


NUMPY_DTYPES = ["?", "i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "e", "f4", "f8", "g",
                "F", "D", "G", ">i4", ">f8", "<c8"]


@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
@pytest.mark.parametrize("path", list(FAST_PATHS))
def test_fast_paths_copy_every_numeric_dtype(path, dtype):
    rng = np.random.default_rng(7)
    raw = rng.integers(0, 256, 5 * 7 * 3 * np.dtype(dtype).itemsize, dtype=np.uint8)
    src = raw.view(dtype).reshape(5, 7, 3)[::-1, :, ::2].transpose(2, 0, 1)
    dst = np.zeros((5, 5, 7), dtype)[::4]          # padded: every 4th plane
    assert FAST_PATHS[path](dst, src) is True
    # compare bytes: random bits make NaNs, which compare unequal as values
    assert np.ascontiguousarray(dst).tobytes() == np.ascontiguousarray(src).tobytes()


@pytest.mark.parametrize("path", list(FAST_PATHS))
def test_fast_paths_overlapping_views_of_one_array(path):
    copy = FAST_PATHS[path]
    a = np.arange(100 * 100, dtype=np.float64).reshape(100, 100)
    expected = a.T.copy()
    assert copy(a, a.T) is True
    np.testing.assert_array_equal(a, expected)
    b = np.arange(1000, dtype=np.int32)
    expected = b[:-3].copy()
    assert copy(b[3:], b[:-3]) is True
    np.testing.assert_array_equal(b[3:], expected)
    c = np.arange(1001, dtype=np.uint8)
    expected = c[::-1].copy()
    assert copy(c, c[::-1]) is True
    np.testing.assert_array_equal(c, expected)


class _Tagged(np.ndarray):
    """A subclass: the numpy fast path leaves it to the buffer path (it may be special)."""


@pytest.mark.parametrize("which", ["dst", "src"])
def test_copyto_arrays_hands_subclasses_to_the_buffer_path(which):
    dst, src = np.zeros((3, 4), np.float32), _f4((4, 3), 1).T
    if which == "dst":
        dst = dst.view(_Tagged)
    else:
        src = src.view(_Tagged)
    assert _ndarray.copyto_arrays(dst, src) is True
    np.testing.assert_array_equal(np.asarray(dst), np.asarray(src))


def test_copyto_arrays_validates_num_threads_first():
    dst = np.zeros(3)
    with pytest.raises(ValueError, match="num_threads must be >= 1"):
        _ndarray.copyto_arrays(dst, np.ones(3), 0)
    # a num_threads that is not an int is not a plain copy's: declined unread (it could run the
    # caller's code), and the checked path names it
    assert _ndarray.copyto_arrays(dst, np.ones(3), 1.5) is False
    with pytest.raises(TypeError, match="num_threads"):
        strided.copyto(dst, np.ones(3), num_threads=1.5)
    assert (dst == 0).all()


def _readonly():
    a = np.zeros((3, 4), np.float32)
    a.flags.writeable = False
    return a


DECLINED = {
    "readonly-dst": lambda: (_readonly(), _f4((3, 4))),
    "bytes-dst": lambda: (b"\0\0\0", bytearray(b"xyz")),
    "readonly-memoryview-dst": lambda: (memoryview(b"\0\0\0"), b"xyz"),
    "broadcast_to-dst": lambda: (np.broadcast_to(np.zeros(4, np.float32), (3, 4)), _f4((3, 4))),
    "self-overlapping-dst": lambda: (_writeable_broadcast(), _f4((3, 4), 1)),
    "float-vs-int": lambda: (np.zeros(4, np.float32), np.arange(1, 5, dtype=np.int32)),
    "float32-vs-float64": lambda: (np.zeros(4, np.float32), np.arange(1.0, 5.0)),
    "byte-order": lambda: (np.zeros(4, ">i4"), np.arange(1, 5, dtype="<i4")),
    "bool-vs-uint8": lambda: (np.zeros(4, bool), np.arange(1, 5, dtype=np.uint8)),
    "S3-vs-V3": lambda: (np.zeros(2, "S3"), np.array([b"abc", b"def"], "S3").view("V3")),
    "shape": lambda: (np.zeros((3, 4), np.float32), _f4((4, 3), 1)),
    "size": lambda: (np.zeros((3, 4), np.float32), _f4((3, 5), 1)),
    "rank": lambda: (np.zeros(12, np.float32), _f4((3, 4), 1)),
    "rank-size1": lambda: (np.zeros((1, 3, 4), np.float32), _f4((3, 4), 1)),
    "broadcastable": lambda: (np.zeros((3, 4), np.float32), _f4((1, 4), 1)),
    "object": lambda: (np.array([None, None], object), np.array([1, "x"], object)),
    "object-dst": lambda: (np.array([None, None], object), np.arange(2)),
    "list-src": lambda: (np.zeros(3), [1.0, 2.0, 3.0]),
    "list-dst": lambda: ([0.0, 0.0, 0.0], np.arange(1.0, 4.0)),
    "none-src": lambda: (np.zeros(3), None),
    "int-src": lambda: (np.zeros(()), 3),
    "str-src": lambda: (bytearray(3), "abc"),
    "datetime64-no-buffer": lambda: (np.zeros(3, "M8[s]"), np.arange(1, 4).astype("M8[s]")),
    "stride-not-whole-items": lambda: (np.zeros(3, np.float32),
                                       as_strided(np.arange(4.0, dtype=np.float32)
                                                  .view(np.uint8)[1:13].view(np.float32),
                                                  (3,), (3,))),
}


def snapshot(x):
    if isinstance(x, list):
        return list(x)
    a = as_numpy(x)
    return a.copy() if a.dtype != object else list(a.reshape(-1))


@pytest.mark.parametrize("name", list(DECLINED))
@pytest.mark.parametrize("path", list(FAST_PATHS))
def test_fast_paths_decline_and_write_nothing(path, name):
    dst, src = DECLINED[name]()
    before = snapshot(dst)
    assert FAST_PATHS[path](dst, src) is False
    after = snapshot(dst)
    if isinstance(before, list):
        assert after == before
    else:
        assert after.tobytes() == before.tobytes()


@pytest.mark.parametrize(
    "make",
    [
        lambda: (np.zeros(4, np.int64), np.arange(1, 5, dtype=np.longlong)),     # 'l' vs 'q'
        lambda: (np.zeros(3, "V3"), np.frombuffer(b"abcdefghi", "V3")[::-1]),
        lambda: (np.zeros(3, "S3"), np.array([b"abc", b"de", b"f"])[::-1]),
        lambda: (np.zeros(3, [("a", "u1"), ("b", "<u2")]),
                 np.array([(1, 2), (3, 4), (5, 6)], [("a", "u1"), ("b", "<u2")])[::-1]),
        lambda: (np.zeros((2, 3), ">f8"), np.arange(6, dtype=">f8").reshape(3, 2).T),
        lambda: (np.zeros(4, "U2"), np.array(["ab", "c", "", "zz"])),
    ],
)
@pytest.mark.parametrize("path", list(FAST_PATHS))
def test_fast_paths_on_unusual_formats_copy_right_or_decline(path, make):
    dst, src = make()
    before = dst.copy()
    done = FAST_PATHS[path](dst, src)
    assert done in (True, False)
    if done:
        assert dst.tobytes() == np.ascontiguousarray(src).tobytes()
    else:
        assert dst.tobytes() == before.tobytes()


# ---- inputs that would crash the process if a check were missing: in a subprocess ----------

RISKY_SCRIPT = """
import numpy as np
from numpy.lib.stride_tricks import as_strided
import strided
from strided import _copy, _core

from isolated import probe, report


def refused(sizes, dst_strides, src_strides, itemsize, errors=(OverflowError, ValueError)):
    dst = np.full(256, 7, np.uint8)
    src = np.arange(256, dtype=np.uint8)
    try:
        _copy.copy_memory(dst.ctypes.data + 128, src.ctypes.data + 128, sizes, dst_strides,
                          src_strides, itemsize)
    except errors:
        assert (dst == 7).all(), "written before the error"
        return "ok"
    return f"accepted {sizes} {dst_strides} {src_strides} {itemsize}"


def overflow_byte_offset():
    return refused((2,), (2**62,), (1,), 8)


def overflow_src_byte_offset():
    return refused((2,), (1,), (2**61,), 16)


def overflow_stride_value():
    return refused((2,), (2**63,), (1,), 4)


def overflow_negative_stride_value():
    return refused((2,), (1,), (-(2**63) - 1,), 4)


def overflow_size_value():
    return refused((2**63,), (1,), (1,), 1)


def overflow_element_count():
    return refused((2**32, 2**32), (2**32, 1), (2**32, 1), 1)


def overflow_span():
    return refused((3, 2**62), (2**62, 1), (0, 1), 1)


def _huge(base, shape, strides):
    return as_strided(base, shape, strides)


def fast_paths_refuse_offsets_leaving_int64():
    # made-up strides: the third element would lie 2**63 bytes away; nothing may be read
    from strided.interop import _ndarray
    for copy in (_ndarray.copyto_arrays, _ndarray.copyto_buffers):
        src = _huge(np.zeros(1), (3,), (2**62,))
        dst = np.full(3, 7.0)
        assert copy(dst, src) is False, copy
        assert (dst == 7).all()
        huge_dst = _huge(np.zeros(1), (4,), (-(2**62),))
        assert copy(huge_dst, np.zeros(4)) is False, copy
    # and copyto's slow path names the problem
    for dst, src in [(np.zeros(3), _huge(np.zeros(1), (3,), (2**62,))),
                     (_huge(np.zeros(1), (4,), (-(2**62),)), np.zeros(4))]:
        try:
            strided.copyto(dst, src)
        except OverflowError as e:
            assert "leave the signed 64-bit range" in str(e), e
        else:
            return "copyto accepted made-up strides"
    return "ok"


def _unaligned(k, sizes, dst_order, src_order, shift_dst, shift_src, threads):
    def packed(sizes, order):
        strides = [0] * len(sizes)
        acc = 1
        for axis in reversed(order):
            strides[axis] = acc
            acc *= sizes[axis]
        return tuple(strides)
    n = int(np.prod(sizes))
    ds, ss = packed(sizes, dst_order), packed(sizes, src_order)
    rng = np.random.default_rng(k)
    src = rng.integers(0, 256, n * k + 64, dtype=np.uint8)
    dst = np.full(n * k + 64, 0xA5, np.uint8)
    expected = dst.copy()
    dtype = np.dtype(f"V{k}")
    view = lambda b, first, s: as_strided(b[first:first + k].view(dtype), sizes,
                                          [x * k for x in s])
    np.copyto(view(expected, 8 + shift_dst, ds), view(src, 8 + shift_src, ss))
    _copy.copy_memory(dst.ctypes.data + 8 + shift_dst, src.ctypes.data + 8 + shift_src, sizes,
                      ds, ss, k, threads)
    bad = np.flatnonzero(dst != expected)
    assert bad.size == 0, f"{bad.size} bytes differ"


def unaligned_transposes():
    for k in (2, 4, 8, 16):
        for shift_dst, shift_src in ((1, 3), (k - 1, 0), (0, 1)):
            for threads in (1, 2):
                _unaligned(k, (301, 257), (0, 1), (1, 0), shift_dst, shift_src, threads)
                _unaligned(k, (2, 3, 67, 65), (0, 2, 3, 1), (0, 1, 2, 3), shift_dst,
                           shift_src, threads)
                _unaligned(k, (100_001,), (0,), (0,), shift_dst, shift_src, threads)


def partial_element_overlap():
    # src and dst in one buffer, one byte apart: elements overlap partly
    for k, sizes, ds, ss in [(4, (100_000,), (1,), (1,)), (8, (300, 300), (300, 1), (1, 300)),
                             (4, (300, 300), (300, 1), (1, 300)), (16, (50_000,), (1,), (-1,)),
                             (3, (500, 501), (501, 1), (1, 500))]:
        for delta in (1, -1, 2):
            for threads in (1, 2):
                n = int(np.prod(sizes))
                buf = np.random.default_rng(k).integers(0, 256, n * k + 64, dtype=np.uint8)
                snap = buf.copy()
                expected = buf.copy()
                d0, s0 = 32, 32 + delta
                if ss[0] < 0:
                    s0 += (sizes[0] - 1) * k
                dtype = np.dtype(f"V{k}")
                view = lambda b, first, s: as_strided(b[first:first + k].view(dtype), sizes,
                                                      [x * k for x in s])
                np.copyto(view(expected, d0, ds), view(snap, s0, ss))
                _copy.copy_memory(buf.ctypes.data + d0, buf.ctypes.data + s0, sizes, ds, ss, k,
                                  threads)
                bad = np.flatnonzero(buf != expected)
                assert bad.size == 0, f"k={k} {sizes} delta={delta}: {bad.size} bytes differ"


def default_threads_respect_omp_num_threads():
    # this subprocess runs with OMP_NUM_THREADS=1
    assert _copy.resolve_threads(None) == 1, _copy.resolve_threads(None)
    assert _copy.resolve_threads(2) in (1, 2)


for fn in [default_threads_respect_omp_num_threads, overflow_byte_offset,
           overflow_src_byte_offset, overflow_stride_value, overflow_negative_stride_value,
           overflow_size_value, overflow_element_count, overflow_span, unaligned_transposes,
           partial_element_overlap, fast_paths_refuse_offsets_leaving_int64]:
    probe(fn)
report()
"""

RISKY = ["default_threads_respect_omp_num_threads", "overflow_byte_offset",
         "overflow_src_byte_offset", "overflow_stride_value", "overflow_negative_stride_value",
         "overflow_size_value", "overflow_element_count", "overflow_span", "unaligned_transposes",
         "partial_element_overlap", "fast_paths_refuse_offsets_leaving_int64"]


@pytest.fixture(scope="module")
def risky_results():
    return probe_results(run_isolated(RISKY_SCRIPT, OMP_NUM_THREADS="1"))


@pytest.mark.parametrize("name", RISKY)
def test_risky_inputs_in_subprocess(risky_results, name):
    assert risky_results[name] == "ok"


def test_transposes_on_threads_with_small_stacks():
    """The staging tile is not on the stack: a 64 KiB thread stack copies big transposes fine.

    (A 64 KiB stack buffer here would overflow such a thread and kill the process, so this runs
    in a subprocess.)
    """
    out = run_isolated("""
        import threading
        import numpy as np
        import strided

        results = []

        def work():
            for dtype in (np.uint8, np.float32, np.float64):
                src = np.arange(600 * 700, dtype=dtype).reshape(600, 700)
                dst = np.empty((700, 600), dtype)
                strided.copyto(dst, src.T, num_threads=1)
                results.append(bool(np.array_equal(dst, src.T)))

        threading.stack_size(64 * 1024)
        thread = threading.Thread(target=work)
        thread.start()
        thread.join()
        print(results)
    """)
    assert out.strip() == "[True, True, True]"


# ---- long rows at a short distance modulo 4096 ------------------------------------------------


def _at_distance(n, gap, dtype=np.uint8):
    """(src, dst, buffer): a fresh source of n items and a destination view into a larger
    buffer whose first byte is ``gap`` bytes past the source's, modulo 4096."""
    src = np.arange(n, dtype=np.int64).astype(dtype)
    buffer = np.full(n * np.dtype(dtype).itemsize + 3 * 4096, 0xA5, np.uint8)
    offset = (src.ctypes.data + gap - buffer.ctypes.data - 4096) % 4096 + 4096
    dst = buffer[offset:offset + src.nbytes].view(dtype)
    assert (dst.ctypes.data - src.ctypes.data) % 4096 == gap
    return src, dst, buffer, offset


@pytest.mark.parametrize("gap", [0, 1, 8, 15, 16, 17, 31, 32, 48, 63, 64, 4095])
@pytest.mark.parametrize("n", [64, 65, 513, 1000, 4097, 70001])
def test_long_rows_at_every_short_distance_modulo_4096(gap, n):
    """Rows over 512 bytes go to memcpy, except a destination 1-63 bytes past the source
    modulo 4096 (where glibc's rep movsb crawls on AMD): those take the engine's own vector
    rounds and tail. Same bytes, nothing written around the destination."""
    src, dst, buffer, offset = _at_distance(n, gap)
    strided.copyto(dst, src, num_threads=1)
    assert np.array_equal(dst, src)
    assert (buffer[:offset] == 0xA5).all() and (buffer[offset + n:] == 0xA5).all()
    # the same rows as the columns of a 2-D copy (blocks.h's row walk) and as a cast
    src2, dst2, buffer2, offset2 = _at_distance(2 * n, gap, np.int16)
    strided.copyto(dst2.reshape(2, n), src2.reshape(2, n), num_threads=1)
    assert np.array_equal(dst2, src2)
    assert (buffer2[:offset2] == 0xA5).all() and (buffer2[offset2 + 4 * n:] == 0xA5).all()
    dst[...] = 0
    strided.copyto(dst, src.view(np.int8), casting="unsafe", num_threads=1)
    assert np.array_equal(dst, src.view(np.int8).astype(np.uint8))
