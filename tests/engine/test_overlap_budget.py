"""Exact overlap decisions under a work budget, and copies whose source and destination meet.

Oracles: brute-force enumeration of the bytes each layout reaches, numpy's own copy of the
source taken before the call, and tracemalloc (which sees the core's PyMem_RawMalloc
temporaries) for the memory a copy used.
"""

from __future__ import annotations

import itertools
import random
import tracemalloc
from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs
from isolated import probe_results, run_isolated

import strided as st
from strided import _copy, _core

# One thread (pytest --parallel-threads): the tests lower the process-wide overlap budget and
# shift buffer, and read tracemalloc's process-wide peak.
pytestmark = pytest.mark.thread_unsafe(reason="process-wide overlap budget and tracemalloc")

# ---- brute force ------------------------------------------------------------------------------


def element_offsets(sizes, strides):
    return [sum(i * s for i, s in zip(index, strides))
            for index in itertools.product(*(range(n) for n in sizes))]


def bytes_reached(sizes, strides, itemsize, start):
    return {start + off * itemsize + b for off in element_offsets(sizes, strides)
            for b in range(itemsize)}


def brute_overlaps(sizes, strides):
    offsets = element_offsets(sizes, strides)
    return len(set(offsets)) < len(offsets)


small_dims = hs.lists(hs.tuples(hs.integers(0, 4), hs.integers(-7, 7)), min_size=0, max_size=4)


# ---- the solver -------------------------------------------------------------------------------


@settings(max_examples=400)
@given(a=small_dims, b=small_dims, ka=hs.integers(1, 3), kb=hs.integers(1, 3),
       delta=hs.integers(-40, 40))
def test_shares_memory_matches_brute_force(a, b, ka, kb, delta):
    (asz, ast), (bsz, bst) = (tuple(zip(*a)) or ((), ())), (tuple(zip(*b)) or ((), ()))
    want = bool(bytes_reached(asz, ast, ka, 0) & bytes_reached(bsz, bst, kb, delta))
    assert _core.shares_memory(asz, ast, ka, bsz, bst, kb, delta, max_work=None) == want
    # a zero budget may only make an answer undecided, never wrong
    try:
        assert _core.shares_memory(asz, ast, ka, bsz, bst, kb, delta, max_work=0) == want
    except st.TooHardError:
        pass
    # the Layout method is the same question, with offsets in the same buffer (when B's byte
    # offset is a whole number of its elements)
    if (50 * ka + delta) % kb == 0:
        la = st.Layout(asz, ast, offset=50, itemsize=ka)
        lb = st.Layout(bsz, bst, offset=(50 * ka + delta) // kb, itemsize=kb)
        assert la.shares_memory(lb) == want


@settings(max_examples=300)
@given(dims=hs.lists(hs.tuples(hs.integers(0, 4), hs.integers(-9, 9)), max_size=5))
def test_self_overlap_matches_brute_force_with_any_budget(dims):
    sizes, strides = tuple(zip(*dims)) or ((), ())
    want = brute_overlaps(sizes, strides)
    layout = st.Layout(sizes, strides)
    assert layout.overlaps == want
    assert layout.self_overlaps(max_work=None) == want
    try:
        assert layout.self_overlaps(max_work=0) == want
    except st.TooHardError:
        pass


def test_interleaved_and_shifted_views():
    # the cases of the issue, decided without any search (max_work=0)
    evens, odds = st.Layout((1000,), (2,)), st.Layout((1000,), (2,), offset=1)
    assert not evens.shares_memory(odds, max_work=0)
    row = st.Layout((64, 100), (101, 1))       # a padded 64 x 100 image, row stride 101
    left, right = row[:, 0::2], row[:, 1::2]
    assert not left.shares_memory(right, max_work=0)
    shifted = st.Layout((64, 100), (101, 1), offset=1)
    assert row.shares_memory(shifted, max_work=0)
    assert st.Layout((4, 4), (4, 1)).shares_memory(st.Layout((4, 4), (1, 4)), max_work=0)
    # float32 elements 2 bytes apart share bytes; 4 bytes apart in a stride-2 pattern do not
    f32 = st.Layout((8,), (2,), itemsize=4)
    assert f32.shares_memory(st.Layout((8,), (4,), offset=1, itemsize=2))
    assert not f32.shares_memory(st.Layout((8,), (2,), offset=1, itemsize=4))


def hard_layout(n=30, bits=48, seed=0):
    rng = random.Random(seed)
    return st.Layout([2] * n, [rng.getrandbits(bits) for _ in range(n)])


def test_the_budget_is_enforced_and_reported():
    hard = hard_layout()
    with pytest.raises(st.TooHardError, match=r"needs more than max_work=1000 steps"):
        hard.self_overlaps(max_work=1000)
    with pytest.raises(st.TooHardError):
        hard.shares_memory(st.Layout(hard.sizes, hard.strides, offset=12345), max_work=1000)
    assert issubclass(st.TooHardError, ValueError)
    with pytest.raises(ValueError, match="max_work must be >= 0"):
        hard.self_overlaps(max_work=-1)
    with pytest.raises(TypeError, match="max_work"):
        hard.self_overlaps(max_work=1.5)
    with pytest.raises(TypeError, match="other must be a Layout"):
        hard.shares_memory((2, 3))


def test_every_public_caller_is_bounded():
    # Hostile layouts of rank <= 64 through every public caller, each in a fresh interpreter
    # under a timeout: each call ends (answer, TooHardError or a clear refusal). Unbounded, the
    # first of these searches runs for minutes.
    out = run_isolated("""
        import contextlib, io, random
        import numpy as np
        import strided as st
        from strided._cli import main
        from isolated import probe, report

        def hard(n, bits, seed):
            rng = random.Random(seed)
            return st.Layout([2] * n, [rng.getrandbits(bits) | 1 for _ in range(n)])

        rank64 = hard(62, 56, 2)
        rank64 = st.Layout(rank64.sizes + (1, 1), rank64.strides + (3, 5))
        CASES = [hard(30, 48, 0), hard(36, 56, 5), hard(40, 40, 0), rank64]

        @probe
        def layout_overlaps():
            for layout in CASES:
                try:
                    layout.overlaps
                except st.TooHardError:
                    pass

        @probe
        def copyto_into_a_destination_settled_by_the_search():
            # 24 size-2 dims of 20-bit strides: no pigeonhole, so the bounded search decides
            # (it overlaps); copyto refuses it before writing. (An undecidable destination is
            # test_an_undecided_destination_is_refused_before_writing.)
            rng = random.Random(1)
            small = st.Layout([2] * 24, [rng.getrandbits(20) | 1 for _ in range(24)])
            buf = np.zeros(small.span[1] + 1, np.uint8)
            dst = np.lib.stride_tricks.as_strided(buf, small.sizes, small.strides)
            try:
                st.copyto(dst, np.ones(small.sizes, np.uint8))
            except st.TooHardError:
                raise AssertionError("decided within the budget, yet refused as undecidable")
            except ValueError as exc:
                assert "overlap each other" in str(exc), exc
            else:
                raise AssertionError("a destination that overlaps itself was written")
            assert not buf.any(), "a refused copy writes nothing"

        @probe
        def explain():
            for layout in CASES[:2]:
                with contextlib.redirect_stdout(io.StringIO()) as text:
                    code = main(["explain", "--sizes", ",".join(map(str, layout.sizes)),
                                 "--strides", ",".join(map(str, layout.strides))])
                assert code in (0, None), code
                assert "overlaps: undecided" in text.getvalue(), text.getvalue()[:2000]

        report()
    """, timeout=120)
    assert probe_results(out) == {"layout_overlaps": "ok",
                                  "copyto_into_a_destination_settled_by_the_search": "ok",
                                  "explain": "ok"}


# ---- copies whose memory meets ---------------------------------------------------------------


@contextmanager
def overlap_tuning(shift_buffer_bytes=None, max_work=None):
    old = _copy._tune(shift_buffer_bytes=shift_buffer_bytes, max_work=max_work)
    try:
        yield
    finally:
        _copy._tune(**old)


@contextmanager
def peak_traced():
    tracemalloc.start()
    tracemalloc.reset_peak()
    box = {}
    try:
        yield box
    finally:
        box["peak"] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()


def two_views(buf, sizes, dst_strides, src_strides, dst_offset, src_offset, itemsize):
    """dst and src as numpy views into one byte buffer (byte offsets, element strides)."""
    def at(offset, strides):
        return np.ndarray(sizes, f"u{itemsize}", buffer=buf, offset=offset,
                          strides=[s * itemsize for s in strides])
    return at(dst_offset, dst_strides), at(src_offset, src_strides)


layouts = hs.integers(1, 4).flatmap(lambda nd: hs.tuples(
    hs.lists(hs.integers(1, 6), min_size=nd, max_size=nd),
    hs.permutations(range(nd)),
    hs.lists(hs.sampled_from([1, -1]), min_size=nd, max_size=nd),
    hs.lists(hs.integers(0, 2), min_size=nd, max_size=nd)))


def strides_of(sizes, order, signs, pads):
    """Packed strides in `order` with some padding, each dim's sign flipped or not."""
    strides, step = [0] * len(sizes), 1
    for axis in reversed(order):
        strides[axis] = step
        step *= sizes[axis] + pads[axis]
    return [s * sign for s, sign in zip(strides, signs)]


def span_bytes(sizes, strides, itemsize):
    lo = sum(min(0, s * (n - 1)) for n, s in zip(sizes, strides))
    hi = sum(max(0, s * (n - 1)) for n, s in zip(sizes, strides))
    return lo * itemsize, (hi + 1) * itemsize


@settings(max_examples=250)
@given(spec=layouts, other=layouts, itemsize=hs.sampled_from([1, 2, 4, 8]),
       shift=hs.integers(-40, 40), same=hs.booleans(), buffer_bytes=hs.sampled_from([1, 24, 4096]),
       budget=hs.sampled_from([0, None]))
def test_copies_whose_memory_meets_give_the_source_as_it_was(spec, other, itemsize, shift, same,
                                                             buffer_bytes, budget):
    sizes, order, signs, pads = spec
    dst_strides = strides_of(sizes, order, signs, pads)
    if same:   # a shift: the same strides at another address
        src_strides = dst_strides
    else:      # another layout of the same sizes over the same bytes
        _, order2, signs2, pads2 = other
        order2 = [a for a in order2 if a < len(sizes)] + list(range(len(order2), len(sizes)))
        src_strides = strides_of(sizes, order2[:len(sizes)],
                                 (list(signs2) + [1] * 4)[:len(sizes)],
                                 (list(pads2) + [0] * 4)[:len(sizes)])
    dlo, dhi = span_bytes(sizes, dst_strides, itemsize)
    slo, shi = span_bytes(sizes, src_strides, itemsize)
    base = 64 + max(-dlo, -slo) + abs(shift)
    buf = np.frombuffer(np.random.default_rng(0).bytes(base + max(dhi, shi) + 2 * abs(shift) + 64),
                        np.uint8).copy()
    dst, src = two_views(buf, sizes, dst_strides, src_strides, base, base + shift, itemsize)
    want_dst = src.copy()
    before = buf.copy()
    with overlap_tuning(buffer_bytes, budget if budget is not None else 1 << 22):
        st.copyto(dst, src)
    assert np.array_equal(dst, want_dst)
    # nothing outside dst's elements changed
    touched = np.zeros(buf.size, bool)
    for off in element_offsets(sizes, dst_strides):
        touched[base + off * itemsize: base + (off + 1) * itemsize] = True
    assert np.array_equal(buf[~touched], before[~touched])


def test_misaligned_shift_by_bytes():
    # float32 views of one buffer 1, 2 and 3 bytes apart: elements share some of their bytes
    for delta in (1, 2, 3, -1, -2, -3, 5, -7):
        buf = np.arange(4096 + 16, dtype=np.uint8)
        lo = 8 + min(0, delta)
        dst = np.frombuffer(buf.data, np.float32, 1000, offset=8)
        src = np.frombuffer(buf.data, np.float32, 1000, offset=8 + delta)
        dst.flags.writeable = True
        want = src.copy()
        with overlap_tuning(64):
            st.copyto(dst, src)
        assert dst.tobytes() == want.tobytes(), (delta, lo)


@pytest.mark.parametrize("case", ["shift right", "shift left", "inner-dim shift", "reversed"])
def test_shifts_of_a_big_array_use_a_small_buffer(case):
    def views():
        a = np.arange(16 << 20, dtype=np.uint8)
        m = a.reshape(4096, 4096)
        return {
            "shift right": (a[1:], a[:-1]),
            "shift left": (a[:-3], a[3:]),
            "inner-dim shift": (m[:, 1:], m[:, :-1]),
            "reversed": (a[-2::-1], a[:0:-1]),
        }[case]
    st.copyto(*views())   # warm: plans, lazy imports
    dst, src = views()
    want = src.copy()
    with peak_traced() as traced:
        st.copyto(dst, src)
    assert np.array_equal(dst, want)
    # the buffer (L2 / 2: 256 KiB on a 512 KiB L2, 1 MiB on a 2 MiB one), not a 16 MiB
    # temporary
    buffer = _copy._tune()["shift_buffer_bytes"]
    assert traced["peak"] <= buffer + (64 << 10), (traced, buffer)
    assert traced["peak"] < 2 << 20, traced


def test_interleaved_views_copy_without_a_temporary():
    a = np.arange(8 << 20, dtype=np.uint16)
    want = a[1::2].copy()
    st.copyto(a[0::2], a[1::2])
    a = np.arange(8 << 20, dtype=np.uint16)
    with peak_traced() as traced:
        st.copyto(a[0::2], a[1::2])
    assert np.array_equal(a[0::2], want)
    assert traced["peak"] < 64 << 10, traced
    b = np.arange(16 << 20, dtype=np.uint8)   # bytes: the stride-2 vectors, in place
    want = b[1::2].copy()
    with peak_traced() as traced:
        st.copyto(b[0::2], b[1::2], num_threads=1)
    assert np.array_equal(b[0::2], want)
    assert traced["peak"] < 64 << 10, traced
    rgb = np.arange(3 * 2048 * 2048, dtype=np.uint8).reshape(2048, 2048, 3)
    want = rgb[..., 2].copy()
    with peak_traced() as traced:
        st.copyto(rgb[..., 0], rgb[..., 2])   # one channel into another: no shared byte
    assert np.array_equal(rgb[..., 0], want)
    assert traced["peak"] < 64 << 10, traced


# ---- interleaved slices of one buffer: the stride-2 byte kernel, and the exact decision ----

SIMD_LEVELS = list(range(_copy._simd() + 1))


def numpy_result(buf, make_views):
    """buf after np.copyto between the views make_views(copy of buf) makes: the oracle."""
    out = buf.copy()
    dst, src = make_views(out)
    np.copyto(dst, src)
    return out


def copy_like_numpy(buf, make_views, level, threads):
    """st.copyto between the views of buf at SIMD ``level`` on ``threads`` threads; every
    byte of buf must then equal np.copyto's result on a copy."""
    want = numpy_result(buf, make_views)
    _copy._simd(level)
    try:
        st.copyto(*make_views(buf), num_threads=threads)
    finally:
        _copy._simd(-1)
    assert np.array_equal(buf, want), (level, threads)


@pytest.mark.parametrize("level", SIMD_LEVELS)
@pytest.mark.parametrize("step", [2, 3, 4])
@pytest.mark.parametrize(("do", "so"), [(0, 1), (1, 0), (0, 3), (3, 0), (1, 2), (2, 5),
                                        (0, 33), (0, 2), (2, 0), (0, 4), (4, 8)])
@pytest.mark.parametrize("signs", [(1, 1), (-1, -1), (1, -1)])
def test_interleaved_byte_slices_match_numpy(level, step, do, so, signs):
    """a[do::step] <- a[so::step] (bytes of one buffer), both walked forwards, both backwards,
    or one each way, for lengths around the vectors: offsets whose difference is no multiple
    of the step share no element and copy directly (the stride-2 vectors keep the other lane);
    the others share elements and go through the shift buffer or a staged source. Every
    byte of the buffer must be np.copyto's."""
    rng = np.random.default_rng(step * 100 + do * 10 + so)
    for n in (1, 2, 15, 16, 17, 31, 32, 33, 34, 47, 65, 100, 1000, 4099):
        size = max(do, so) + step * (n - 1) + 1 + 7

        def views(b, n=n):
            d = b[do:do + step * (n - 1) + 1:step]
            s_ = b[so:so + step * (n - 1) + 1:step]
            return d[::signs[0]], s_[::signs[1]]

        for threads in (1, 2):
            buf = rng.integers(0, 256, size, dtype=np.uint8)
            copy_like_numpy(buf, views, level, threads)


@pytest.mark.parametrize("level", SIMD_LEVELS)
def test_interleaved_byte_columns_of_a_matrix_match_numpy(level):
    """2-D: m[:, 0::2] <- m[:, 1::2] and the mirror, rows padded or not, rows reversed, and a
    copy into the other lane of the next row (elements disjoint, rows interleaved)."""
    rng = np.random.default_rng(level)
    lanes = (   # (dst, src) of a matrix m whose rows have e columns of whole pairs
        lambda m, e: (m[:, 0:e:2], m[:, 1:e:2]),
        lambda m, e: (m[:, 1:e:2], m[:, 0:e:2]),
        lambda m, e: (m[::-1, 0:e:2], m[:, 1:e:2]),
        lambda m, e: (m[:-1, 1:e:2], m[1:, 0:e:2]),
    )
    for rows, cols, pad in ((3, 70, 0), (5, 33, 1), (64, 130, 3), (2, 2001, 0)):
        shape, e = (rows, cols + pad), cols // 2 * 2
        for make in lanes:
            for threads in (1, 2):
                base = rng.integers(0, 256, rows * (cols + pad), dtype=np.uint8)

                def views(b, make=make, shape=shape, e=e):
                    return make(b.reshape(shape), e)

                copy_like_numpy(base, views, level, threads)


@settings(max_examples=150)
@given(n=hs.integers(1, 300), dstep=hs.sampled_from([1, 2, 3, 4, -1, -2, -3, -4]),
       sstep=hs.sampled_from([2, -2, 3, 1]), do=hs.integers(0, 12), so=hs.integers(0, 12),
       itemsize=hs.sampled_from([1, 1, 2]), rows=hs.integers(1, 3),
       level=hs.sampled_from(SIMD_LEVELS), threads=hs.sampled_from([1, 2]),
       same_step=hs.booleans())
def test_strided_slices_of_one_buffer_match_numpy(n, dstep, sstep, do, so, itemsize, rows,
                                                  level, threads, same_step):
    """Random strided slices of one buffer, often the same step on both sides (interleaved
    lanes, or coinciding elements), rank 1 or 2: every byte as np.copyto leaves it."""
    if same_step:
        sstep = dstep
    span = max(abs(dstep), abs(sstep)) * (n - 1) + 1 + max(do, so)
    pitch = span + 3
    rng = np.random.default_rng(n * 7 + do)
    buf = rng.integers(0, 256, rows * pitch * itemsize, dtype=np.uint8)

    def lane(m, off, step):
        stop = off + abs(step) * (n - 1) + 1
        v = m[:, off:stop:abs(step)]
        return v[:, ::-1] if step < 0 else v

    def views(b):
        m = b.view(f"u{itemsize}").reshape(rows, pitch)
        return lane(m, do, dstep), lane(m, so, sstep)

    copy_like_numpy(buf, views, level, threads)


@pytest.mark.parametrize(("shape", "axes", "dtype", "pad"), [
    ((9, 9), (0, 1), np.int32, 0),
    ((1024, 1024), (0, 1), np.float32, 0),
    ((1000, 1000), (0, 1), np.uint8, 37),          # padded rows
    ((3, 700, 700), (1, 2), np.uint8, 0),           # a batch of square transposes
    ((300, 3, 300), (0, 2), np.float64, 0),         # the swapped dims are not adjacent
    ((2, 2, 2), (0, 2), np.dtype("V3"), 0),
])
def test_in_place_transposes_go_through_two_tiles(shape, axes, dtype, pad):
    dtype = np.dtype(dtype)
    count = int(np.prod(shape))
    raw = np.frombuffer(np.random.default_rng(1).bytes((count + pad * shape[0]) * dtype.itemsize),
                        dtype).copy()
    m = raw.reshape(shape[0], -1)[:, :count // shape[0]].reshape(shape)
    perm = list(range(len(shape)))
    perm[axes[0]], perm[axes[1]] = perm[axes[1]], perm[axes[0]]
    want = m.transpose(perm).copy()
    with peak_traced() as traced:
        st.copyto(m, m.transpose(perm))
    assert m.tobytes() == want.tobytes()
    assert traced["peak"] < 1 << 20, traced   # two tiles, not a copy of the whole array


def test_in_place_transposes_with_tiny_tiles():
    with overlap_tuning(shift_buffer_bytes=2 * 3 * 3 * 4):   # 3 x 3 tiles of int32
        for n in (1, 2, 3, 4, 7, 10):
            m = np.arange(n * n, dtype=np.int32).reshape(n, n)
            want = m.T.copy()
            st.copyto(m, m.T)
            assert np.array_equal(m, want), n


def test_unrelated_strides_over_the_same_bytes_stage_the_source():
    m = np.arange(512 * 512, dtype=np.float32).reshape(512, 512)
    want = m.T[::-1].copy()
    with peak_traced() as traced:
        st.copyto(m, m.T[::-1])   # a transpose and a flip: no small-buffer order
    assert np.array_equal(m, want)
    assert traced["peak"] >= m.nbytes   # the whole source, staged before any write


def test_an_undecided_destination_is_refused_before_writing():
    # (2, 2, 2) with strides (3, 5, 7) is settled only by the search: with no budget for it,
    # every path refuses with TooHardError and writes nothing; with the default it is copied.
    buf = np.zeros(64, np.uint8)
    dst = np.lib.stride_tricks.as_strided(buf, (2, 2, 2), (3, 5, 7))
    src = np.ones((2, 2, 2), np.uint8)
    with overlap_tuning(max_work=0):
        with pytest.raises(st.TooHardError, match=r"dst cannot be checked.*max_work=0"):
            st.copyto(dst, src)
        with pytest.raises(st.TooHardError, match=r"destination \(dst_strides \(3, 5, 7\)"):
            _copy.copy_memory(buf.ctypes.data, src.ctypes.data, (2, 2, 2), (3, 5, 7),
                              (4, 2, 1), 1)
        with pytest.raises(st.TooHardError):
            _ = st.Layout((2, 2, 2), (3, 5, 7)).overlaps
        assert not st.Layout((2, 2, 2), (3, 5, 7)).self_overlaps(max_work=None)
    assert not buf.any()
    st.copyto(dst, src)
    assert int(buf.sum()) == 8


# ---- converting copies whose memory meets: the same routes, converting as they read -----------

CONVERT_TYPES = ["uint8", "int16", "int32", "float16", "float32", "float64"]


def typed_views(buf, sizes, dst_strides, src_strides, dst_offset, src_offset, dst_type,
                src_type):
    """dst and src as numpy views of two element types into one byte buffer."""
    def at(offset, strides, dtype):
        dtype = np.dtype(dtype)
        return np.ndarray(sizes, dtype, buffer=buf, offset=offset,
                          strides=[s * dtype.itemsize for s in strides])
    return at(dst_offset, dst_strides, dst_type), at(src_offset, src_strides, src_type)


def converted(src, dst_type, scale=None, shift=None, axis=None):
    """The engine's conversion of ``src`` as it is now, into memory of its own (the routes
    without shared memory are checked against numpy in test_convert.py)."""
    out = np.empty(src.shape, dst_type)
    st.copyto(out, src.copy(), casting="unsafe", scale=scale, shift=shift, axis=axis)
    return out


@settings(max_examples=300)
@given(spec=layouts, other=layouts, dst_type=hs.sampled_from(CONVERT_TYPES),
       src_type=hs.sampled_from(CONVERT_TYPES), shift=hs.integers(-40, 40), same=hs.booleans(),
       buffer_bytes=hs.sampled_from([1, 24, 4096]), affine=hs.booleans())
def test_conversions_whose_memory_meets_give_the_source_as_it_was(
        spec, other, dst_type, src_type, shift, same, buffer_bytes, affine):
    sizes, order, signs, pads = spec
    dst_strides = strides_of(sizes, order, signs, pads)
    if same:   # the same element strides at another address (items of two sizes)
        src_strides = dst_strides
    else:
        _, order2, signs2, pads2 = other
        order2 = [a for a in order2 if a < len(sizes)] + list(range(len(order2), len(sizes)))
        src_strides = strides_of(sizes, order2[:len(sizes)],
                                 (list(signs2) + [1] * 4)[:len(sizes)],
                                 (list(pads2) + [0] * 4)[:len(sizes)])
    dk, sk = np.dtype(dst_type).itemsize, np.dtype(src_type).itemsize
    dlo, dhi = span_bytes(sizes, dst_strides, dk)
    slo, shi = span_bytes(sizes, src_strides, sk)
    base = 64 + max(-dlo, -slo) + abs(shift)
    rng = np.random.default_rng(abs(shift))
    buf = np.frombuffer(rng.bytes(base + max(dhi, shi) + 2 * abs(shift) + 64), np.uint8).copy()
    dst, src = typed_views(buf, sizes, dst_strides, src_strides, base, base + shift, dst_type,
                           src_type)
    src[...] = rng.integers(-50, 50, sizes).astype(src_type)   # finite values, any bytes around
    axis = len(sizes) - 1
    scale = rng.uniform(0.5, 2, sizes[axis]).astype(np.float32) if affine else None
    want = converted(src, dst_type, scale, 3.0 if affine else None, axis if affine else None)
    before = buf.copy()
    with overlap_tuning(buffer_bytes):
        st.copyto(dst, src, casting="unsafe", scale=scale, shift=3.0 if affine else None,
                  axis=axis if affine else None)
    assert dst.tobytes() == want.tobytes()
    touched = np.zeros(buf.size, bool)
    for off in element_offsets(sizes, dst_strides):
        touched[base + off * dk: base + (off + 1) * dk] = True
    assert np.array_equal(buf[~touched], before[~touched])


def scratch_bound():
    """The most a conversion in place may allocate: its overlap buffer and two threads' tiles,
    twice over (they follow the L2: 1.25 MiB on a 512 KiB L2, 5 MiB on a 2 MiB one), and at
    least 2 MiB; far under the 16 MiB temporary it must not take."""
    knobs = _copy._tune()
    tiles = knobs["convert_tile_bytes"] + knobs["convert_tiled_bytes"]
    return max(2 << 20, 2 * (knobs["shift_buffer_bytes"] + tiles))


def in_place_cases(count):
    """(name, dst, src) over one buffer: conversions a user does within one allocation."""
    raw = np.empty(count * 8, np.uint8)
    f32 = raw.view(np.float32)
    f32[:] = np.arange(f32.size, dtype=np.float32) % 1000 - 500
    n = int(np.sqrt(count))
    return {
        # the same bytes, another type of the same size
        "float32 -> int32 in place": (raw.view(np.int32), f32),
        # float32 values in the first half of a float64 buffer, widened over all of it
        "float32 -> float64 widening in place": (raw.view(np.float64), f32[:count]),
        # float64 values narrowed into the first half of their own buffer
        "float64 -> float32 narrowing in place": (f32[:count], raw.view(np.float64)),
        # a shift by 4 bytes with a widening
        "int16 -> float32 shifted": (raw[4:4 + 4 * count].view(np.float32),
                                     raw[:2 * count].view(np.int16)),
        # an in-place transpose with a dtype change of the same item size
        "float32 -> int32 transposed in place": (raw[:4 * n * n].view(np.int32).reshape(n, n),
                                                 f32[:n * n].reshape(n, n).T),
    }


@pytest.mark.parametrize("case", list(in_place_cases(16)))
def test_in_place_conversions_use_a_small_buffer(case):
    count = 4 << 20   # 16 MiB of float32
    st.copyto(*in_place_cases(64)[case], casting="unsafe")   # warm: plans, lazy imports
    dst, src = in_place_cases(count)[case]
    want = converted(src, dst.dtype)
    with peak_traced() as traced:
        st.copyto(dst, src, casting="unsafe")
    assert dst.tobytes() == want.tobytes()
    assert traced["peak"] < scratch_bound(), traced   # the buffer and tiles, not a temporary


def test_in_place_normalisation_with_per_channel_vectors():
    # an HWC float32 image normalised in place, its channels' scale and shift per pixel
    img = (np.arange(512 * 512 * 3, dtype=np.float32) % 251).reshape(512, 512, 3)
    scale = np.array([1 / 58.4, 1 / 57.1, 1 / 57.4], np.float32)
    shift = np.array([-2.1, -2.0, -1.8], np.float32)
    want = converted(img, np.float32, scale, shift, axis=2)
    with peak_traced() as traced:
        st.copyto(img, img, scale=scale, shift=shift, axis=2)
    assert img.tobytes() == want.tobytes()
    assert traced["peak"] < scratch_bound(), traced
    # ... and into its own bytes as int16 planes' worth of a narrower type, shifted by a row
    img = (np.arange(256 * 256 * 3, dtype=np.float32) % 251).reshape(256, 256, 3)
    out = img.reshape(-1).view(np.int16)[256 * 3 * 2:256 * 3 * 2 + img.size].reshape(img.shape)
    want = converted(img, np.int16, scale, shift, axis=2)
    st.copyto(out, img, casting="unsafe", scale=scale, shift=shift, axis=2)
    assert out.tobytes() == want.tobytes()


def test_a_conversion_with_no_small_buffer_order_stages_the_whole_source():
    m = (np.arange(512 * 512, dtype=np.float32) % 1000).reshape(512, 512)
    want = converted(m.T[::-1], np.int32)
    with peak_traced() as traced:
        st.copyto(m.view(np.int32), m.T[::-1], casting="unsafe")
    assert m.view(np.int32).tobytes() == want.tobytes()
    assert traced["peak"] >= m.nbytes   # the whole source, staged before any write


@pytest.mark.slow
@pytest.mark.parametrize("case", ["float32 -> int32 in place",
                                  "float32 -> float64 widening in place",
                                  "float32 -> int32 transposed in place"])
def test_in_place_conversions_of_512_mib_stay_bounded(case):
    count = 128 << 20   # 512 MiB of float32
    dst, src = in_place_cases(count)[case]
    want = converted(src, dst.dtype)
    with peak_traced() as traced:
        st.copyto(dst, src, casting="unsafe")
    assert dst.tobytes() == want.tobytes()
    assert traced["peak"] < scratch_bound(), traced
