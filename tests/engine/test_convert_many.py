"""The engine's batch entry (``_convert.convert_many``: one plan on many address pairs, one team
claiming blocks across them) and its division mode (``divide=True``, the torchvision form's
``t / scale + shift``), against independent oracles: the single-pair entry, numpy, and
guard pages at every SIMD level."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st_
from isolated import probe_results, run_isolated

from strided import _convert

PAIRS = [("float32", "uint8"), ("uint8", "uint8"), ("float16", "uint8"), ("int8", "float32"),
         ("float32", "float32"), ("bfloat16", "float32"), ("float64", "int16")]


def _np(name):
    if name == "bfloat16":
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def _images(rng, n, shape, src_type, perm, flip):
    """n source arrays of logical ``shape``, in memory order ``perm``, axis 0 flipped if
    ``flip``: separate buffers, as decoded images are."""
    out = []
    for _ in range(n):
        phys = tuple(shape[p] for p in perm)
        if np.dtype(_np(src_type)).kind == "f":
            a = (rng.standard_normal(phys) * 50).astype(_np(src_type))
        else:
            a = rng.integers(0, 100, phys).astype(_np(src_type))
        a = a.transpose(np.argsort(perm))
        out.append(a[::-1] if flip else a)
    return out


def _strides(a):
    return tuple(s // a.itemsize for s in a.strides)


@settings(max_examples=40, deadline=None)
@given(seed=st_.integers(0, 2**31), n=st_.integers(0, 6),
       shape=st_.tuples(st_.integers(0, 4), st_.integers(1, 9), st_.integers(1, 17)),
       perm=st_.permutations((0, 1, 2)), flip=st_.booleans(), pair=st_.sampled_from(PAIRS),
       affine=st_.booleans(), threads=st_.sampled_from([1, 2]))
def test_many_equals_one_at_a_time(seed, n, shape, perm, flip, pair, affine, threads):
    rng = np.random.default_rng(seed)
    dst_type, src_type = pair
    srcs = _images(rng, n, shape, src_type, list(perm), flip)
    c = shape[0]
    scale = tuple(float(v) for v in rng.uniform(0.5, 2, c)) if affine and c else None
    shift = 1.5 if affine else None
    par = (1, 0, 0) if scale is not None else None
    batch = np.zeros((n, *shape), _np(dst_type))
    ref = np.zeros_like(batch)
    common = dict(scale=scale, shift=shift, param_strides=par, param_length=max(c, 1))
    if not affine and dst_type != src_type:
        common = {}
    dstr = (shape[1] * shape[2], shape[2], 1)
    sstr = _strides(srcs[0]) if srcs else (1, 1, 1)
    _convert.convert_many([batch[k].ctypes.data for k in range(n)],
                          [s.ctypes.data + 0 for s in srcs], shape, dstr, sstr, dst_type,
                          src_type, num_threads=threads, **common)
    for k in range(n):
        _convert.convert_memory(ref[k].ctypes.data, srcs[k].ctypes.data, shape, dstr, sstr,
                                dst_type, src_type, num_threads=1, **common)
    assert batch.tobytes() == ref.tobytes()


def test_many_large_batch_on_a_team():
    """Enough work for a team: every pair written, each exactly."""
    rng = np.random.default_rng(3)
    srcs = [rng.integers(0, 256, (64, 80, 3), dtype=np.uint8) for _ in range(40)]
    batch = np.empty((40, 3, 64, 80), np.float32)
    scale, shift = (0.1, 0.2, 0.3), (-1.0, -2.0, -3.0)
    _convert.convert_many([batch[k].ctypes.data for k in range(40)],
                          [s.ctypes.data for s in srcs], (3, 64, 80), (5120, 80, 1),
                          (1, 240, 3), "float32", "uint8", scale=scale, shift=shift,
                          param_strides=(1, 0, 0), param_length=3, num_threads=2)
    a = np.float32(scale)[:, None, None]
    b = np.float32(shift)[:, None, None]
    ref = np.stack([s.transpose(2, 0, 1).astype(np.float32) * a + b for s in srcs])
    assert np.array_equal(batch, ref)


def test_many_from_several_threads_at_once():
    """Python threads calling convert_many together: each gets its exact result."""
    rng = np.random.default_rng(4)
    srcs = [rng.integers(0, 256, (32, 48, 3), dtype=np.uint8) for _ in range(8)]
    ref = np.stack([s.transpose(2, 0, 1).astype(np.float32) * np.float32(0.5) for s in srcs])
    errors = []

    def work():
        for _ in range(10):
            out = np.empty((8, 3, 32, 48), np.float32)
            _convert.convert_many([out[k].ctypes.data for k in range(8)],
                                  [s.ctypes.data for s in srcs], (3, 32, 48), (1536, 48, 1),
                                  (1, 144, 3), "float32", "uint8", scale=0.5, num_threads=2)
            if not np.array_equal(out, ref):
                errors.append("wrong")

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_shared_pairs_are_refused_before_writing():
    a = np.arange(60, dtype=np.float32)
    before = a.copy()
    with pytest.raises(ValueError, match=r"src_addresses\[1\] shares memory with "
                                         r"dst_addresses\[1\]"):
        _convert.convert_many([a.ctypes.data, a.ctypes.data + 120],
                              [a.ctypes.data + 200, a.ctypes.data + 100],
                              (10,), (1,), (1,), "float32", "float32", scale=2.0)
    with pytest.raises(ValueError, match=r"dst_addresses\[0\] and dst_addresses\[1\] share"):
        _convert.convert_many([a.ctypes.data, a.ctypes.data + 8], [1, 2],
                              (10,), (1,), (1,), "float32", "float32")
    assert np.array_equal(a, before)


@pytest.mark.parametrize("call, error, match", [
    (dict(dst_addresses=[1, 2], src_addresses=[3]), ValueError, "2 dst_addresses but 1"),
    (dict(dst_addresses=[0], src_addresses=[4096]), ValueError, r"dst_addresses\[0\] is NULL"),
    (dict(dst_addresses=["x"], src_addresses=[4096]), TypeError, r"dst_addresses\[0\]"),
    (dict(dst_type="int4"), TypeError, "byte-sized types, not int4"),
    (dict(dst_type="float64", divide=True, scale=2.0, src_type="float64"), TypeError,
     "divide computes in float32"),
    (dict(divide=True), ValueError, "give a scale"),
    (dict(divide=1, scale=2.0), TypeError, "divide must be True or False"),
])
def test_errors(call, error, match):
    args = dict(dst_addresses=[4096], src_addresses=[8192], sizes=(4,), dst_strides=(1,),
                src_strides=(1,), dst_type="float32", src_type="float32")
    args.update(call)
    with pytest.raises(error, match=match):
        _convert.convert_many(**args)


@pytest.mark.thread_unsafe(reason="counts the reads of one shared class")
def test_addresses_read_once():
    """A sequence whose items change while it is read is read once, as it was."""
    src = np.arange(8, dtype=np.float32)
    dst = np.zeros((2, 8), np.float32)

    class Shifty(list):
        reads = 0

        def __iter__(self):
            Shifty.reads += 1
            return super().__iter__()

    _convert.convert_many(Shifty([dst[0].ctypes.data, dst[1].ctypes.data]),
                          [src.ctypes.data, src.ctypes.data], (8,), (1,), (1,), "float32",
                          "float32", scale=3.0)
    assert Shifty.reads == 1
    assert np.array_equal(dst, np.stack([src * 3] * 2))


@pytest.mark.parametrize("in_place", [False, True])
@pytest.mark.parametrize("vector", [False, True])
def test_divide_is_float32_division(in_place, vector):
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((3, 37, 5)) * 3).astype(np.float32)
    x[0, 0, 0] = -0.0
    x[1, 2, 3] = np.inf
    s = (0.229, 0.224, 0.225) if vector else 0.3
    want = x / (np.float32(s)[:, None, None] if vector else np.float32(s))
    y = x if in_place else np.empty_like(x)
    _convert.convert_memory(y.ctypes.data, x.ctypes.data, x.shape, (185, 5, 1), (185, 5, 1),
                            "float32", "float32", scale=s,
                            param_strides=(1, 0, 0) if vector else None,
                            param_length=3 if vector else 1, divide=True)
    assert y.tobytes() == want.tobytes()


def test_divide_strided_rows_and_uint8_source():
    """The generic rows divide too (non-unit strides, another source type)."""
    x = np.arange(60, dtype=np.uint8).reshape(6, 10)
    y = np.empty((10, 6), np.float32).T
    _convert.convert_memory(y.ctypes.data, x.ctypes.data, (6, 10), (1, 6), (10, 1), "float32",
                            "uint8", scale=7.0, shift=0.5, divide=True)
    assert y.tobytes() == (x.astype(np.float32) / np.float32(7) + np.float32(0.5)).tobytes()


def test_guard_pages_every_simd_level():
    """convert_many and the division touch no byte outside their operands at any SIMD level:
    each operand ends at a PROT_NONE page (a stray access kills the subprocess)."""
    out = run_isolated('''
        import numpy as np
        from guarded import arena
        from isolated import probe, report
        from strided import _convert, _copy

        def check(level, dst_type, ssz):
            _copy._simd(level)
            n, shape = 5, (3, 7, 11)
            count = 3 * 7 * 11
            srcs = []
            for k in range(n):
                a = arena(f"src{k}", count * ssz)
                first = a.size - count * ssz - (k % 2)     # last byte right before the guard
                view = a.view(first, (7, 11, 3), (33, 3, 1), "uint8" if ssz == 1 else "float32")
                view[...] = np.arange(count).reshape(7, 11, 3) % 200
                srcs.append((a.start + first, view))
            dsz = 4 if dst_type == "float32" else 1
            d = arena("dst", n * count * dsz)
            first = d.size - n * count * dsz
            batch = d.view(first, (n, *shape), (count, 77, 11, 1), dst_type)
            _convert.convert_many([d.start + first + k * count * dsz for k in range(n)],
                                  [s for s, _ in srcs], shape, (77, 11, 1), (1, 33, 3),
                                  dst_type, "uint8" if ssz == 1 else "float32",
                                  scale=(0.5, 0.25, 2.0), shift=-1.0,
                                  param_strides=(1, 0, 0), param_length=3, num_threads=2)
            want = np.stack([v.transpose(2, 0, 1).astype(np.float32)
                             * np.float32([0.5, 0.25, 2.0])[:, None, None] + np.float32(-1)
                             for _, v in srcs])
            if dst_type == "float32":
                assert np.array_equal(batch, want)
                _convert.convert_memory(d.start + first, d.start + first, (n, *shape),
                                        (count, 77, 11, 1), (count, 77, 11, 1), "float32",
                                        "float32", scale=(3.0, 5.0, 7.0),
                                        param_strides=(0, 1, 0, 0), param_length=3,
                                        divide=True)
                assert np.array_equal(batch, want / np.float32([3, 5, 7])[:, None, None])
            _copy._simd(-1)     # back to all the CPU has

        def register(level, dst_type, ssz):
            def run():
                check(level, dst_type, ssz)
            run.__name__ = f"level{level}_{dst_type}_from_{ssz}byte"
            probe(run)

        for level in range(_copy._simd() + 1):
            for dst_type, ssz in (("float32", 1), ("uint8", 1), ("float32", 4)):
                register(level, dst_type, ssz)
        report()
    ''', timeout=600)
    results = probe_results(out)
    assert results and all(v == "ok" for v in results.values()), results
