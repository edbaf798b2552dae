"""strided.dask on cubed arrays (cubed's default executor, in this process): the four calls
take a cubed array and give a cubed array, computed bit for bit as strided's own call on the
whole numpy array, over layouts, conversions, per-channel vectors on a chunked channel axis
(ragged last chunks), blocked formats there and back, size-1 chunks; what cubed cannot do is
refused at once, naming the argument; and ``import strided.dask`` never imports cubed.

cubed's arrays have regular chunks (all equal but the last), stored in zarr between steps.
"""

from __future__ import annotations

import subprocess
import sys
import types
import warnings

import numpy as np
import pytest

cubed = pytest.importorskip("cubed")
da = pytest.importorskip("dask.array")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as hs  # noqa: E402
from isolated import run_on_third_party_workers  # noqa: E402

import strided as st  # noqa: E402
import strided.dask as sd  # noqa: E402

pytestmark = pytest.mark.thread_unsafe(reason="cubed's plans share the module's spec")

RNG = np.random.default_rng(2026)
FEW = settings(max_examples=25, deadline=None,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def spec(tmp_path_factory):
    return cubed.Spec(work_dir=str(tmp_path_factory.mktemp("cubed")), allowed_mem="200MB")


def cubed_of(a, chunks, spec):
    x = cubed.from_array(a, chunks=chunks, spec=spec)
    assert x.chunks == tuple(normal(chunks, a.shape))
    return x


def normal(chunks, shape):
    """cubed's chunks of a chunk size: equal chunks, the last the rest."""
    for c, n in zip(chunks, shape):
        yield (c,) * (n // c) + ((n % c,) if n % c else ())


def values(shape, dtype=np.float32, rng=RNG):
    """Values that saturate int8 after a scale of ~20, with NaN, infinities and -0.0."""
    a = (rng.standard_normal(shape) * 4).astype(dtype)
    if a.size > 3 and np.dtype(dtype).kind == "f":
        a.flat[[0, 1, 2, 3]] = [np.nan, np.inf, -np.inf, -0.0]
    return a


def assert_same_bits(result, expected):
    """A computed cubed result: a cubed array's values, bit for bit strided's own."""
    assert isinstance(result, cubed.Array)
    actual = result.compute()
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    assert np.array_equal(np.ascontiguousarray(actual).view(np.uint8),
                          np.ascontiguousarray(expected).view(np.uint8))


def quiet(fn, *args, **kwargs):
    """Call ``fn`` with the rechunk notice (dask's PerformanceWarning) silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", da.PerformanceWarning)
        return fn(*args, **kwargs)


# --------------------------------------------------------------------------------------------
# The four calls, bit for bit
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", ["NHWC", "NCHW", "F", (3, 1, 0, 2)])
@pytest.mark.parametrize("dtype", [None, np.float16, np.int8])
def test_relayout(spec, layout, dtype):
    a = values((3, 5, 4, 3))
    x = cubed_of(a, (2, 2, 3, 1), spec)
    y = sd.relayout(x, layout, dtype=dtype)
    assert y.shape == a.shape and y.chunks == x.chunks
    assert_same_bits(y, st.relayout(a, layout, dtype=dtype))


@pytest.mark.parametrize("dtype", [np.float16, np.int8, np.uint8])
def test_scale_and_shift_per_channel_on_a_chunked_channel_axis(spec, dtype):
    a = values((2, 11, 3, 4))
    scale, shift = np.linspace(0.5, 30, 11), np.linspace(-5, 7, 11)
    x = cubed_of(a, (1, 4, 2, 4), spec)                   # channels (4, 4, 3): ragged last
    assert_same_bits(sd.relayout(x, "NHWC", dtype=dtype, scale=scale, shift=shift, axis=1),
                     st.relayout(a, "NHWC", dtype=dtype, scale=scale, shift=shift, axis=1))
    assert_same_bits(sd.astype(x, dtype, scale=scale, shift=shift, axis=-3),
                     st.relayout(a, "C", dtype=dtype, scale=scale, shift=shift, axis=1))


def test_scalar_scale_and_the_image_form(spec):
    img = RNG.integers(0, 256, (2, 3, 5, 4), dtype=np.uint8)
    x = cubed_of(img, (1, 2, 5, 3), spec)
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    assert_same_bits(sd.astype(x, np.float32, mean=mean, std=std, max_value=255.0, axis=1),
                     st.relayout(img, "C", dtype=np.float32, mean=mean, std=std,
                                 max_value=255.0, axis=1))
    assert_same_bits(sd.astype(x, np.float16, scale=1 / 255),
                     st.relayout(img, "C", dtype=np.float16, scale=1 / 255))
    assert_same_bits(sd.astype(x, np.int8, casting="unsafe"), img.astype(np.int8))


@pytest.mark.parametrize("fmt", ["NCHW4", "NCHW32", "CHWN4", "nChw16c"])
@pytest.mark.parametrize("channel_chunk", [1, 4, 8])
def test_to_blocked_and_back(spec, fmt, channel_chunk):
    a = values((3, 10, 2, 3))
    scale, shift = np.linspace(2, 25, 10), np.full(10, 3.0)   # one quantized zero: the padding
    x = cubed_of(a, (2, channel_chunk, 1, 3), spec)
    q = quiet(sd.to_blocked, x, fmt, dtype=np.int8, scale=scale, shift=shift)
    ref = st.to_blocked(a, fmt, dtype=np.int8, scale=scale, shift=shift)
    assert q.shape == ref.shape and q.dtype == np.int8
    assert_same_bits(q, ref)
    back = sd.from_blocked(q, fmt, channels=10, dtype=np.float32, scale=1 / scale,
                           shift=-shift / scale)
    assert back.shape == a.shape
    assert_same_bits(back, st.from_blocked(ref, fmt, channels=10, dtype=np.float32,
                                           scale=1 / scale, shift=-shift / scale))


def test_from_blocked_of_a_cubed_array_of_blocks(spec):
    """y chunked anywhere but its lanes: its block chunks give channel chunks, the last
    trimmed."""
    y = RNG.integers(-128, 128, (2, 3, 4, 3, 4), dtype=np.int8)
    q = cubed_of(y, (1, 2, 3, 3, 4), spec)
    x = sd.from_blocked(q, "NCHW4", channels=10, dtype=np.float16, scale=np.arange(10) / 8)
    assert x.chunks[1] == (8, 2)
    assert_same_bits(x, st.from_blocked(y, "NCHW4", channels=10, dtype=np.float16,
                                        scale=np.arange(10) / 8))
    lanes = cubed_of(y, (2, 3, 4, 3, 2), spec)           # lanes cut: rechunked, and said so
    with pytest.warns(da.PerformanceWarning, match="lanes of a block"):
        x = sd.from_blocked(lanes, "NCHW4", channels=12)
    assert_same_bits(x, st.from_blocked(y, "NCHW4", channels=12))


def test_four_bit_elements(spec):
    a = values((2, 70, 2, 2))
    scale = np.linspace(1, 3, 70)
    x = cubed_of(a, (1, 64, 2, 1), spec)
    q = sd.to_blocked(x, "NCHW64", dtype="int4", scale=scale, shift=1.0)
    ref = st.to_blocked(a, "NCHW64", dtype="int4", scale=scale, shift=1.0)
    assert_same_bits(q, ref)
    assert_same_bits(sd.from_blocked(q, "NCHW64", channels=70, src_dtype="int4",
                                     dtype=np.float32),
                     st.from_blocked(ref, "NCHW64", channels=70, src_dtype="int4",
                                     dtype=np.float32))


def test_size_one_chunks_and_the_rechunk_notice(spec):
    a = values((2, 6, 2, 2))
    x = cubed_of(a, (1, 1, 1, 1), spec)
    assert_same_bits(sd.relayout(x, "NHWC", dtype=np.int8, scale=np.arange(6.0), axis=1),
                     st.relayout(a, "NHWC", dtype=np.int8, scale=np.arange(6.0), axis=1))
    with pytest.warns(da.PerformanceWarning, match=r"rechunked to 4 channels a chunk"):
        q = sd.to_blocked(x, "NCHW4", dtype=np.float16)
    assert q.chunks[1] == (1, 1)
    assert_same_bits(q, st.to_blocked(a, "NCHW4", dtype=np.float16))


def test_on_worker_processes(tmp_path):
    """cubed's processes executor: the block functions (module-level partials) travel to
    worker processes pickled, and the blocks come back bit for bit strided's own. In a fresh
    interpreter under a deadline (the executor has no timeout of its own, and it sets
    OMP_NUM_THREADS=1 in its caller's environment, which would leak into later tests)."""
    out = run_on_third_party_workers(f"""
        import numpy as np, cubed
        import strided as st, strided.dask as sd
        from test_cubed import assert_same_bits, cubed_of, values
        procs = cubed.Spec(work_dir={str(tmp_path)!r}, allowed_mem="200MB",
                           executor_name="processes")
        a = values((2, 10, 3, 5))
        scale = np.linspace(1, 30, 10)
        x = cubed_of(a, (1, 4, 2, 5), procs)
        assert_same_bits(sd.to_blocked(x, "NCHW4", dtype=np.int8, scale=scale, shift=2.0),
                         st.to_blocked(a, "NCHW4", dtype=np.int8, scale=scale, shift=2.0))
        print("same bits")
    """)
    assert out.strip() == "same bits"


def test_nothing_is_computed_until_asked(spec):
    """Graph building touches no block: a block function that would fail shows only at
    compute (here: a scale strided checks, on the probe, is fine; the values never read)."""
    x = cubed.map_blocks(_explode, cubed_of(np.ones((2, 4), np.float32), (1, 2), spec),
                         dtype=np.float32)
    y = sd.astype(x, np.float16, scale=[1.0, 2.0, 3.0, 4.0], axis=1)
    assert isinstance(y, cubed.Array) and y.dtype == np.float16 and y.chunks == x.chunks
    with pytest.raises(RuntimeError, match="computed"):
        y.compute()


def _explode(block):
    raise RuntimeError("computed")


# --------------------------------------------------------------------------------------------
# Shapes and chunkings
# --------------------------------------------------------------------------------------------


@hs.composite
def chunked_nchw(draw):
    shape = tuple(draw(hs.integers(1, n)) for n in (3, 12, 4, 5))
    # at most 3 chunks an axis (a task a chunk keeps an example fast; size-1 chunks everywhere
    # are test_size_one_chunks_and_the_rechunk_notice's)
    chunks = tuple(draw(hs.integers(-(-n // 3), n)) for n in shape)
    a = values(shape, rng=np.random.default_rng(draw(hs.integers(0, 2**32 - 1))))
    return a, chunks


@FEW
@given(case=chunked_nchw(), fmt=hs.sampled_from(["NCHW4", "CHWN4", "nChw8c"]),
       shift=hs.sampled_from([None, 2.0, "vector"]))
def test_any_shape_and_chunking(spec, case, fmt, shift):
    a, chunks = case
    c = a.shape[1]
    x = cubed_of(a, chunks, spec)
    scale = np.linspace(1, 20, c)
    shift = np.linspace(-3, 3, c) if shift == "vector" else shift
    assert_same_bits(sd.relayout(x, "NHWC", dtype=np.int8, scale=scale, shift=shift, axis=1),
                     st.relayout(a, "NHWC", dtype=np.int8, scale=scale, shift=shift, axis=1))
    q = quiet(sd.to_blocked, x, fmt, dtype=np.int8, scale=scale, shift=shift)
    ref = st.to_blocked(a, fmt, dtype=np.int8, scale=scale, shift=shift)
    back = sd.from_blocked(q, fmt, channels=c, dtype=np.float32, scale=1 / scale)
    assert_same_bits(back, st.from_blocked(ref, fmt, channels=c, dtype=np.float32,
                                           scale=1 / scale))


# --------------------------------------------------------------------------------------------
# What cubed cannot do: refused at once, naming the argument
# --------------------------------------------------------------------------------------------


def test_out_is_refused(spec):
    a = values((2, 4, 2, 2))
    x = cubed_of(a, (1, 4, 2, 2), spec)
    with pytest.raises(TypeError, match=r"out= cannot be given for a cubed array \(got out of "
                                        r"type numpy\.ndarray\).*cubed\.store"):
        sd.relayout(x, "NHWC", out=np.empty(a.shape, np.float32))
    with pytest.raises(TypeError, match="out= cannot be given for a cubed array"):
        sd.astype(x, np.float16, out=np.empty(a.shape, np.float16))
    with pytest.raises(TypeError, match="out= cannot be given for a cubed array"):
        sd.to_blocked(x, "NCHW4", out=np.empty((2, 1, 2, 2, 4), np.float32))
    q = cubed_of(np.zeros((2, 1, 2, 2, 4), np.int8), (1, 1, 2, 2, 4), spec)
    with pytest.raises(TypeError, match="out= cannot be given for a cubed array"):
        sd.from_blocked(q, "NCHW4", channels=4, out=np.empty((2, 4, 2, 2), np.int8))


def test_to_zarr_and_bfloat16_are_refused(spec):
    x = cubed_of(values((2, 4)), (1, 4), spec)
    with pytest.raises(TypeError, match=r"x is a cubed array: .* cubed\.store\(x, array\)"):
        sd.to_zarr(x, object())
    pytest.importorskip("ml_dtypes")
    with pytest.raises(TypeError, match=r"dtype='bfloat16' cannot be the result's dtype for a "
                                        r"cubed array: .*zarr"):
        sd.astype(x, "bfloat16")


def test_strideds_own_errors_at_graph_time(spec):
    x = cubed_of(values((2, 3, 4, 4)), (1, 2, 4, 4), spec)
    with pytest.raises(ValueError, match=r"scale has 2 values but axis 1 has 3 elements"):
        sd.relayout(x, "NHWC", scale=[1.0, 2.0], axis=1)
    with pytest.raises(ValueError, match=r"x has shape \(2, 3, 4\): blocked format"):
        sd.to_blocked(cubed_of(values((2, 3, 4)), (1, 3, 4), spec), "NCHW4")
    with pytest.raises(TypeError, match="casting='safe'"):
        sd.astype(x, np.int8, casting="safe")


def test_a_backend_other_than_numpy_is_refused(spec, monkeypatch):
    backend = sys.modules["cubed.backend_array_api"]
    fake = types.SimpleNamespace(__name__="fake.xp", empty=lambda n: memoryview(b""))
    monkeypatch.setattr(backend, "namespace", fake)
    x = cubed_of(values((2, 3)), (1, 3), spec)
    with pytest.raises(TypeError, match=r"x is a cubed array of builtins\.memoryview blocks "
                                        r"\(cubed's backend array API is fake\.xp\)"):
        sd.astype(x, np.float16)


def test_the_unknown_type_error_names_cubed():
    with pytest.raises(TypeError, match=r"x must be a dask array \(dask\.array\.Array\), got "
                                        r"builtins\.list: .*cubed\.Array\) is accepted too"):
        sd.relayout([1.0], "C")


def test_importing_strided_dask_does_not_import_cubed():
    code = "import strided, strided.dask, sys; assert 'cubed' not in sys.modules, 'cubed'"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
