"""strided.dask on the threaded (and synchronous) scheduler: every call bit-exact against the
numpy oracle of the conversion contract (convert_oracle, independent of strided) and against
strided's own call on the whole array, over shapes, chunkings (ragged last chunks, the channel
axis cut anywhere), layouts and parameters; the errors, the rechunk warning, laziness, meta,
out=, the xarray recipe and the benchmark's smoke run.

The cluster (worker processes) is tested in test_dask_distributed.py.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

import convert_oracle as oracle  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as hs  # noqa: E402

import strided as st  # noqa: E402
import strided.dask as sd  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks" / "bench_dask.py"
RNG = np.random.default_rng(2026)

# Graph building and computing costs milliseconds an example: modest example counts.
FEW = settings(max_examples=30, deadline=None,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# --------------------------------------------------------------------------------------------
# Oracles (numpy only)
# --------------------------------------------------------------------------------------------


def oracle_relayout(a, dtype=None, scale=None, shift=None, axis=None):
    """The logical values of relayout/astype: the contract's conversion, element by element."""
    if dtype is None and scale is None and shift is None:
        return a.copy()
    return oracle.convert(a, oracle.type_name(np.dtype(dtype or a.dtype)), scale, shift, axis)


def quantized_zero(a, dtype, shift):
    """The padding of a blocked integer result: saturate(rint(shift)) when every channel's
    shift gives the same one, else 0 (0 for floats and without a shift)."""
    if shift is None or np.dtype(dtype).kind not in "iu":
        return 0
    shifts = np.atleast_1d(np.asarray(shift, np.float64))
    zero_input = np.zeros(shifts.shape, a.dtype)       # what x = 0 quantizes to, per channel
    zeros = set(oracle.affine(zero_input, np.dtype(dtype).name, shift=shifts).tolist())
    return zeros.pop() if len(zeros) == 1 else 0


def oracle_to_blocked(a, x, chwn=False, dtype=None, scale=None, shift=None):
    n, c, h, w = a.shape
    dtype = np.dtype(dtype or a.dtype)
    values = oracle_relayout(a, dtype, scale, shift, axis=1)
    blocks = -(-c // x)
    padded = np.full((n, blocks * x, h, w), quantized_zero(a, dtype, shift), dtype)
    padded[:, :c] = values
    nchwx = padded.reshape(n, blocks, x, h, w).transpose(0, 1, 3, 4, 2)
    return np.ascontiguousarray(nchwx.transpose(1, 2, 3, 0, 4) if chwn else nchwx)


def oracle_from_blocked(y, x, channels, chwn=False, dtype=None, scale=None, shift=None):
    nchwx = y.transpose(3, 0, 1, 2, 4) if chwn else y
    n, blocks, h, w, _ = nchwx.shape
    logical = nchwx.transpose(0, 1, 4, 2, 3).reshape(n, blocks * x, h, w)[:, :channels]
    return oracle_relayout(np.ascontiguousarray(logical), dtype, scale, shift, axis=1)


def assert_bits_equal(actual, expected):
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    oracle.assert_converted_equal(np.asarray(actual), expected)


def quiet(fn, *args, **kwargs):
    """Call ``fn`` with dask's PerformanceWarning (the rechunk notice) silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", da.PerformanceWarning)
        return fn(*args, **kwargs)


# --------------------------------------------------------------------------------------------
# Strategies: shapes and chunkings
# --------------------------------------------------------------------------------------------


@hs.composite
def chunking(draw, size):
    """A chunking of an axis of ``size``: regular, ragged last chunk, or arbitrary cuts."""
    if size == 0:
        return (0,)
    cuts = sorted(draw(hs.sets(hs.integers(1, size - 1), max_size=3))) if size > 1 else []
    return tuple(b - a for a, b in zip([0, *cuts], [*cuts, size]))


@hs.composite
def nchw_arrays(draw, dtype=np.float32, max_c=11):
    shape = (draw(hs.integers(1, 3)), draw(hs.integers(1, max_c)), draw(hs.integers(1, 4)),
             draw(hs.integers(1, 5)))
    chunks = tuple(draw(chunking(s)) for s in shape)
    seed = draw(hs.integers(0, 2**32 - 1))
    a = values(shape, dtype, np.random.default_rng(seed))
    return a, da.from_array(a, chunks=chunks)


def values(shape, dtype, rng=RNG):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return (rng.standard_normal(shape) * 60).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, int(info.max) + 1, shape, dtype=dtype)


@hs.composite
def params(draw, channels):
    """scale/shift: none, scalars or per-channel vectors."""
    def one():
        return hs.one_of(hs.none(), hs.floats(-4, 4, width=32),
                         hs.lists(hs.floats(-4, 4, width=32), min_size=channels,
                                  max_size=channels).map(np.array))
    return draw(one()), draw(one())


LAYOUTS = ["NCHW", "NHWC", "CHWN", "WHCN", "F", (3, 1, 0, 2)]
BLOCKED = ["NCHW4", "NCHW8", "nChw16c", "NCHW1", "CHWN4", "NCHW32"]


# --------------------------------------------------------------------------------------------
# Bit-exact: relayout, astype, to_blocked, from_blocked
# --------------------------------------------------------------------------------------------


@FEW
@given(case=nchw_arrays(), layout=hs.sampled_from(LAYOUTS), data=hs.data(),
       dtype=hs.sampled_from([None, np.int8, np.uint8, np.float16, np.int32]))
def test_relayout_is_the_oracle_block_by_block(case, layout, data, dtype):
    a, x = case
    scale, shift = data.draw(params(a.shape[1]))
    y = sd.relayout(x, layout, dtype=dtype, scale=scale, shift=shift, axis=1)
    assert y.chunks == x.chunks and y.dtype == (dtype or a.dtype)
    expected = oracle_relayout(a, dtype, scale, shift, axis=1)
    assert_bits_equal(y.compute(), expected)
    # every block is laid out as asked
    block = y.to_delayed().ravel()[-1].compute()
    assert st.layout_of(block).strides == st.packed_strides(block.shape, layout)


@FEW
@given(case=nchw_arrays(dtype=np.int16), data=hs.data(), axis=hs.sampled_from([0, 1, 2, -1]),
       dtype=hs.sampled_from([np.int8, np.uint8, np.float32, np.float16]))
def test_astype_is_the_oracle_along_any_axis(case, data, axis, dtype):
    a, x = case
    scale, shift = data.draw(params(a.shape[axis]))
    y = sd.astype(x, dtype, scale=scale, shift=shift, axis=axis)
    assert_bits_equal(y.compute(), oracle_relayout(a, dtype, scale, shift, axis=axis))


@FEW
@given(case=nchw_arrays(max_c=40), fmt=hs.sampled_from(BLOCKED), data=hs.data(),
       dtype=hs.sampled_from([None, np.int8, np.uint8, np.float16]))
def test_to_blocked_is_the_oracle_for_any_channel_chunks(case, fmt, data, dtype):
    a, x = case
    spec = st.formats.parse_blocked(fmt)
    scale, shift = data.draw(params(a.shape[1]))
    y = quiet(sd.to_blocked, x, fmt, dtype=dtype, scale=scale, shift=shift)
    expected = oracle_to_blocked(a, spec.block, spec.chwn, dtype, scale, shift)
    assert y.shape == expected.shape
    assert_bits_equal(y.compute(), expected)


@FEW
@given(case=nchw_arrays(max_c=40), fmt=hs.sampled_from(BLOCKED), data=hs.data(),
       dtype=hs.sampled_from([None, np.float32, np.int16]))
def test_from_blocked_is_the_oracle_for_any_chunks(case, fmt, data, dtype):
    a, _ = case
    spec = st.formats.parse_blocked(fmt)
    c = a.shape[1]
    q = oracle_to_blocked(a.astype(np.int8), spec.block, spec.chwn)
    chunks = tuple(data.draw(chunking(s)) for s in q.shape)
    scale, shift = data.draw(params(c))
    y = quiet(sd.from_blocked, da.from_array(q, chunks=chunks), fmt, channels=c, dtype=dtype,
              scale=scale, shift=shift)
    assert y.shape == a.shape
    expected = oracle_from_blocked(q, spec.block, c, spec.chwn, dtype, scale, shift)
    assert_bits_equal(y.compute(), expected)


@pytest.mark.parametrize("fmt", ["NCHW4", "CHWN4", "NCHW32"])
def test_every_channel_chunking_of_a_small_array(fmt):
    """Every way to cut 10 channels into chunks (512 chunkings), to_blocked then from_blocked,
    with per-channel scale and shift: the oracle, and st's call on the whole array."""
    a = values((2, 10, 3, 2), np.float32)
    scale, shift = RNG.random(10) + 0.1, np.round(RNG.standard_normal(10) * 3)
    expected = oracle_to_blocked(a, 4 if fmt != "NCHW32" else 32, fmt == "CHWN4", np.int8,
                                 scale, shift)
    assert np.array_equal(expected, st.to_blocked(a, fmt, dtype=np.int8, scale=scale,
                                                  shift=shift))
    outs, backs = [], []
    for mask in range(0, 512, 7):       # a spread of the 2**9 cut sets
        cuts = [i + 1 for i in range(9) if mask >> i & 1]
        chunks = tuple(b - e for e, b in zip([0, *cuts], [*cuts, 10]))
        x = da.from_array(a, chunks=(1, chunks, 2, 2))
        outs.append(quiet(sd.to_blocked, x, fmt, dtype=np.int8, scale=scale, shift=shift))
        q = da.from_array(expected, chunks=1)
        backs.append(quiet(sd.from_blocked, q, fmt, channels=10, dtype=np.float32,
                           scale=1 / scale, shift=-shift / scale))
    for y in dask.compute(*outs):
        assert_bits_equal(y, expected)
    back = st.from_blocked(expected, fmt, channels=10, dtype=np.float32, scale=1 / scale,
                           shift=-shift / scale)
    for z in dask.compute(*backs):
        assert_bits_equal(z, back)


def test_padding_is_the_whole_arrays_quantized_zero():
    """The shifts differ across channels (padding 0 for the whole array) but are the same in
    the last chunk's channels: the last block's padding still holds the whole array's 0."""
    a = values((1, 6, 2, 2), np.float32)
    shift = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 5.0])
    x = da.from_array(a, chunks=(1, 4, 2, 2))
    y = sd.to_blocked(x, "NCHW4", dtype=np.int8, shift=shift).compute()
    assert y[0, 1, :, :, 2:].tolist() == [[[0, 0]] * 2] * 2
    assert_bits_equal(y, oracle_to_blocked(a, 4, dtype=np.int8, shift=shift))
    same = sd.to_blocked(x, "NCHW4", dtype=np.int8, shift=np.full(6, -3.0)).compute()
    assert (same[0, 1, :, :, 2:] == -3).all()


@pytest.mark.parametrize("dtype", ["int4", "uint4"])
@pytest.mark.parametrize("channels", [64, 70, 127])
def test_four_bit_containers(dtype, channels):
    a = values((2, channels, 3, 2), np.float32)
    shift = np.r_[np.zeros(channels - 3), [3.0, 3.0, 3.0]]      # same zero in the last chunk
    x = da.from_array(a, chunks=(1, 64, 2, 1))
    y = sd.to_blocked(x, "NCHW64", dtype=dtype, scale=0.1, shift=shift)
    expected = st.to_blocked(a, "NCHW64", dtype=dtype, scale=0.1, shift=shift)
    assert y.shape == expected.shape and y.dtype == np.uint8
    assert np.array_equal(y.compute(), expected)
    back = sd.from_blocked(da.from_array(expected, chunks=(1, 1, 2, 2, 32)), "NCHW64",
                           channels=channels, src_dtype=dtype, dtype=np.float32, scale=10.0)
    assert np.array_equal(back.compute(), st.from_blocked(
        expected, "NCHW64", channels=channels, src_dtype=dtype, dtype=np.float32, scale=10.0))


@pytest.mark.parametrize("rounding", ["fused", "torchvision"])
def test_image_form_vectors_are_cut_per_block(rounding):
    img = values((3, 3, 5, 4), np.uint8)
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    x = da.from_array(img, chunks=(2, 1, 3, 4))
    kwargs = {"mean": mean, "std": std, "rounding": rounding}
    expected = st.relayout(img, "NHWC", axis=1, **kwargs)
    assert_bits_equal(sd.relayout(x, "NHWC", axis=1, **kwargs).compute(), expected)
    assert_bits_equal(sd.astype(x, np.float32, axis=1, **kwargs).compute(), expected)
    blocked = st.to_blocked(img, "NCHW4", **kwargs)
    assert_bits_equal(quiet(sd.to_blocked, x, "NCHW4", **kwargs).compute(), blocked)


def test_max_value_and_bfloat16():
    a = values((2, 4, 3, 3), np.uint16)
    x = da.from_array(a, chunks=(1, 3, 2, 3))
    kwargs = {"max_value": 4095, "std": [1, 2, 3, 4], "mean": 0.5, "axis": 1}
    got = sd.relayout(x, "NHWC", dtype="bfloat16", **kwargs).compute()
    expected = st.relayout(a, "NHWC", dtype="bfloat16", **kwargs)
    assert got.dtype == expected.dtype
    assert np.array_equal(got.view(np.uint16), expected.view(np.uint16))


def test_synchronous_scheduler_and_empty_arrays():
    a = values((2, 0, 3, 3), np.float32)
    with dask.config.set(scheduler="synchronous"):
        assert sd.relayout(da.from_array(a), "NHWC").compute().shape == a.shape
        assert sd.to_blocked(da.from_array(a), "NCHW4").compute().shape == (2, 0, 3, 3, 4)
        b = values((3, 5, 2, 2), np.float32)
        y = sd.to_blocked(da.from_array(b, chunks=(1, 4, 1, 2)), "NCHW4", dtype=np.int8)
        assert_bits_equal(y.compute(), oracle_to_blocked(b, 4, dtype=np.int8))


# --------------------------------------------------------------------------------------------
# Laziness, meta, warnings, pickling
# --------------------------------------------------------------------------------------------


def _refuse_to_run(block):
    raise AssertionError("a block was computed while the graph was built")


def test_nothing_is_computed_until_compute():
    x = da.zeros((2, 8, 4, 4), dtype=np.float32, chunks=(1, 8, 4, 4)).map_blocks(
        _refuse_to_run, meta=np.empty((0,) * 4, np.float32))
    sd.relayout(x, "NHWC", dtype=np.int8, scale=np.ones(8), axis=1)
    sd.astype(x, np.float16)
    y = sd.to_blocked(x, "NCHW8", dtype=np.int8, scale=np.ones(8))
    sd.from_blocked(y, "NCHW8", channels=8, dtype=np.float32)


def test_meta_and_names_are_deterministic():
    x = da.ones((2, 8, 4, 4), dtype=np.float32, chunks=(1, 8, 4, 4))
    y = sd.to_blocked(x, "NCHW8", dtype=np.int8, scale=np.arange(8.0))
    assert type(y._meta) is np.ndarray and y._meta.dtype == np.int8 and y._meta.ndim == 5
    assert y.name == sd.to_blocked(x, "NCHW8", dtype=np.int8, scale=np.arange(8.0)).name
    assert y.name != sd.to_blocked(x, "NCHW8", dtype=np.int8, scale=np.arange(1.0, 9.0)).name
    z = sd.relayout(x, "NHWC", dtype="bfloat16")
    assert z._meta.dtype == np.dtype("bfloat16") and z.dtype == z._meta.dtype


@pytest.mark.thread_unsafe(reason="records warnings (process-wide filters)")
def test_rechunk_is_said_once_per_call():
    x = da.ones((1, 10, 2, 2), dtype=np.float32, chunks=(1, 3, 2, 2))
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        y = sd.to_blocked(x, "NCHW4")
    assert len(said) == 1 and issubclass(said[0].category, da.PerformanceWarning)
    assert "whole blocks of 4 channels" in str(said[0].message)
    assert said[0].filename == __file__           # blamed on the caller's line
    assert y.chunks[1] == (1, 1, 1)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        sd.to_blocked(x.rechunk({1: 8}), "NCHW4")     # whole blocks: nothing to say
        z = sd.from_blocked(y.rechunk({4: 2}), "NCHW4", channels=10)
    assert len(said) == 1 and "lanes of a block" in str(said[0].message)
    assert z.chunks[1] == (4, 4, 2)


def test_the_graph_pickles():
    """Worker processes receive the tasks pickled: module-level functions, partials, plain
    values and small numpy vectors only."""
    x = da.ones((2, 6, 4, 4), dtype=np.float32, chunks=(1, 3, 4, 4))
    for y in (sd.relayout(x, "NHWC", scale=np.arange(6.0), axis=1),
              quiet(sd.to_blocked, x, "NCHW4", dtype=np.int8, shift=np.arange(6.0)),
              sd.astype(x, np.int8, mean=0.5, std=[1, 2, 3, 4, 5, 6], axis=1)):
        graph = dict(y.__dask_graph__())
        restored = pickle.loads(pickle.dumps(graph))
        assert np.array_equal(dask.get(restored, y.__dask_keys__()[0][0][0][0]),
                              dask.get(graph, y.__dask_keys__()[0][0][0][0]))


# --------------------------------------------------------------------------------------------
# out=
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("scheduler", ["threads", "synchronous"])
def test_out_numpy_keeps_the_layout(scheduler):
    a = values((3, 5, 4, 6), np.float32)
    x = da.from_array(a, chunks=(2, 3, 3, 4))
    scale = RNG.random(5)
    with dask.config.set(scheduler=scheduler):
        out = st.relayout(np.empty_like(a), "NHWC", dtype=np.int8)       # an allocation
        assert sd.relayout(x, "NHWC", dtype=np.int8, scale=scale, axis=1, out=out) is out
        assert st.layout_of(out).label == "NHWC"
        assert_bits_equal(out, oracle_relayout(a, np.int8, scale, axis=1))
        f_out = np.empty(a.shape, np.float16, order="F")
        sd.astype(x, np.float16, shift=scale, axis=1, out=f_out)
        assert_bits_equal(f_out, oracle_relayout(a, np.float16, shift=scale, axis=1))
        q = np.full((6, 2, 4, 6, 4), 99, np.int8)[::2]             # strided out, padding too
        quiet(sd.to_blocked, x, "NCHW4", dtype=np.int8, scale=scale, out=q)
        assert_bits_equal(q, oracle_to_blocked(a, 4, dtype=np.int8, scale=scale))
        chwn = np.empty((2, 4, 6, 3, 4), np.int8)
        quiet(sd.to_blocked, x, "CHWN4", dtype=np.int8, scale=scale, out=chwn)
        assert_bits_equal(chwn, oracle_to_blocked(a, 4, True, np.int8, scale))
        back = np.empty(a.shape, np.float32)
        y = da.from_array(chwn, chunks=(1, 2, 6, 2, 4))
        sd.from_blocked(y, "CHWN4", channels=5, dtype=np.float32, scale=2.0, out=back)
        assert_bits_equal(back, oracle_from_blocked(chwn, 4, 5, True, np.float32, 2.0))


def test_out_is_checked_before_anything_is_computed():
    x = da.ones((2, 3, 4, 4), dtype=np.float32, chunks=(1, 3, 4, 4))
    with pytest.raises(ValueError, match=r"out has shape \(2, 3, 4\)"):
        sd.relayout(x, "NHWC", out=np.empty((2, 3, 4), np.float32))
    with pytest.raises(ValueError, match="out has dtype float64"):
        sd.relayout(x, "NHWC", out=np.empty((2, 3, 4, 4)))
    with pytest.raises(ValueError, match="out has element strides"):
        sd.relayout(x, "NHWC", out=np.empty((2, 3, 4, 4), np.float32))
    with pytest.raises(ValueError, match="read-only"):
        ro = np.empty((2, 3, 4, 4), np.float32)
        ro.flags.writeable = False
        sd.astype(x, np.float32, out=ro)
    with pytest.raises(TypeError, match="region assignment"):
        sd.astype(x, np.float32, out=type("Shaped", (), {"shape": (2, 3, 4, 4),
                                                        "dtype": np.float32})())


def test_out_zarr_array(tmp_path):
    zarr = pytest.importorskip("zarr")
    a = values((4, 6, 8, 8), np.float32)
    x = da.from_array(a, chunks=(2, 6, 4, 8))
    store = zarr.open_array(zarr.storage.LocalStore(tmp_path / "q.zarr"), mode="w",
                            shape=(4, 2, 8, 8, 4), chunks=(2, 1, 4, 8, 4), dtype="int8")
    sd.to_blocked(x.rechunk({1: 4}), "NCHW4", dtype=np.int8, scale=0.5, out=store)
    assert_bits_equal(store[...], oracle_to_blocked(a, 4, dtype=np.int8, scale=0.5))
    # channels-last into an (N, H, W, C) store: the transpose trick, every block contiguous
    nhwc = zarr.open_array(zarr.storage.LocalStore(tmp_path / "nhwc.zarr"), mode="w",
                           shape=(4, 8, 8, 6), chunks=(2, 4, 8, 6), dtype="float16")
    y = sd.relayout(x, "NHWC", dtype=np.float16).transpose(0, 2, 3, 1)
    assert all(b.compute().flags.c_contiguous for b in y.to_delayed().ravel())
    da.store(y, nhwc, lock=False)
    assert_bits_equal(nhwc[...], oracle_relayout(a, np.float16).transpose(0, 2, 3, 1))
    with pytest.raises(ValueError, match="share a stored chunk"):
        sd.to_blocked(x.rechunk({0: 1, 1: 4}), "NCHW4", dtype=np.int8, out=store)


# --------------------------------------------------------------------------------------------
# Errors (graph-build time, strided's wording)
# --------------------------------------------------------------------------------------------


def test_errors_name_the_argument_and_the_value():
    x = da.ones((2, 3, 4, 4), dtype=np.float32, chunks=(1, 2, 4, 4))
    with pytest.raises(TypeError, match=r"x must be a dask array .* numpy\.ndarray"):
        sd.relayout(np.ones((2, 3)), "F")
    with pytest.raises(TypeError, match=r"y must be a dask array"):
        sd.from_blocked([1, 2], "NCHW4", channels=2)
    masked = x.map_blocks(np.ma.masked_invalid, meta=np.ma.masked_array(np.empty((0,) * 4)))
    with pytest.raises(TypeError, match="MaskedArray blocks"):
        sd.astype(masked, np.float16)
    with pytest.raises(ValueError, match="scale has 2 values but axis 1 has 3 elements"):
        sd.relayout(x, "NHWC", scale=[1, 2], axis=1)
    with pytest.raises(ValueError, match="scale has 2 values but axis 1 has 3 elements"):
        sd.to_blocked(x, "NCHW4", dtype=np.int8, scale=[1, 2])
    with pytest.raises(ValueError, match="axis is None"):
        sd.astype(x, np.int8, shift=[1, 2, 3])
    with pytest.raises(TypeError, match="casting='safe'"):
        sd.astype(x, np.int8, casting="safe")
    with pytest.raises(ValueError, match="casting must be one of"):
        sd.astype(x, np.int8, casting="sometimes")
    with pytest.raises(ValueError, match="a Layout gives the strides of one whole array"):
        sd.relayout(x, st.Layout.packed((2, 3, 4, 4), "NHWC", itemsize=4))
    with pytest.raises(ValueError, match=r"label|layout"):
        sd.relayout(x, "NHW")
    with pytest.raises(ValueError, match=r"x has shape \(3, 4, 4\): blocked format"):
        sd.to_blocked(x[0], "NCHW4")
    with pytest.raises(ValueError, match="is not a blocked format"):
        sd.to_blocked(x, "NCHW")
    with pytest.raises(ValueError, match=r"4-bit|int4"):
        sd.relayout(x, "NHWC", dtype="int4")
    y = da.ones((2, 2, 4, 4, 4), dtype=np.int8, chunks=(1, 1, 4, 4, 4))
    with pytest.raises(ValueError, match=r"channels is 9 but y of shape \(2, 2, 4, 4, 4\)"):
        sd.from_blocked(y, "NCHW4", channels=9)
    with pytest.raises(TypeError, match="channels"):
        sd.from_blocked(y, "NCHW4", channels=True)
    with pytest.raises(ValueError, match=r"y has shape \(2, 2, 4, 4\)"):
        sd.from_blocked(y[..., 0], "NCHW4", channels=8)
    with pytest.raises(ValueError, match="num_threads"):
        sd.relayout(x, "NHWC", num_threads=0)
    unknown = da.from_array(np.arange(6.0), chunks=3)
    with pytest.raises(ValueError, match="unknown chunk sizes"):
        sd.astype(unknown[unknown > 2], np.float32)
    with pytest.raises(ValueError, match="scale/shift or the image form"):
        sd.astype(x, np.float32, scale=2.0, mean=0.5)


def test_errors_of_strided_are_its_own_words():
    """What strided says about an argument, strided.dask says too, x's shape in it."""
    a = np.ones((2, 3, 4, 4), np.float32)
    x = da.from_array(a, chunks=(1, 2, 4, 4))
    for call, on_dask in [
        (lambda: st.to_blocked(a, "NCHW4", scale=np.ones(5)),
         lambda: sd.to_blocked(x, "NCHW4", scale=np.ones(5))),
        (lambda: st.relayout(a, "NHWC", scale=np.ones(5), axis=-3),
         lambda: sd.relayout(x, "NHWC", scale=np.ones(5), axis=-3)),
        (lambda: st.relayout(a, "NHWC", dtype=object), lambda: sd.relayout(x, "NHWC",
                                                                            dtype=object)),
        (lambda: st.relayout(a, "C", max_value=[1, 2, 3], axis=1),
         lambda: sd.relayout(x, "C", max_value=[1, 2, 3], axis=1)),
        (lambda: st.relayout(a, "NHWC", scale=1.0, axis=7),
         lambda: sd.relayout(x, "NHWC", scale=1.0, axis=7)),
    ]:
        with pytest.raises((TypeError, ValueError)) as mine:
            on_dask()
        with pytest.raises(type(mine.value)) as theirs:
            call()
        assert str(mine.value) == str(theirs.value)


def test_other_array_types_are_refused_clearly():
    """An array that is neither a dask nor a cubed array is refused, naming its type and what
    is accepted (cubed arrays themselves: tests/chunked/test_cubed.py)."""
    class NotDask:
        shape, dtype, ndim = (2, 3), np.dtype(np.float32), 2

    with pytest.raises(TypeError, match=r"x must be a dask array \(dask\.array\.Array\), got "
                                        r".*NotDask"):
        sd.relayout(NotDask(), "F")


# --------------------------------------------------------------------------------------------
# xarray recipe, import hygiene, benchmark smoke run
# --------------------------------------------------------------------------------------------


def test_xarray_apply_ufunc_recipe():
    """The page's recipe: xarray's dimension names give the channel axis; the blocks go
    through strided.dask (dask="allowed": the function receives the dask array)."""
    xr = pytest.importorskip("xarray")
    a = values((2, 3, 4, 5), np.uint8)
    mean, std = np.array([0.485, 0.456, 0.406]), np.array([0.229, 0.224, 0.225])
    arr = xr.DataArray(a, dims=("n", "c", "y", "x")).chunk({"n": 1, "c": 2})

    def normalise(data, axis):
        return sd.astype(data, np.float32, mean=mean, std=std, axis=axis)

    out = xr.apply_ufunc(normalise, arr, kwargs={"axis": arr.get_axis_num("c")},
                         dask="allowed")
    assert out.dims == arr.dims and out.chunks == arr.chunks
    assert_bits_equal(out.compute().values, st.relayout(a, "C", mean=mean, std=std, axis=1))
    # dask="parallelized": one numpy block at a time, through strided's own call
    per_block = xr.apply_ufunc(st.relayout, arr.chunk({"c": -1}), kwargs={"layout": "C",
                               "dtype": np.float32, "scale": 1 / 255, "axis": 1},
                               dask="parallelized", output_dtypes=[np.float32])
    assert_bits_equal(per_block.compute().values, st.relayout(a, "C", dtype=np.float32,
                                                              scale=1 / 255))


def test_import_strided_imports_no_dask():
    code = ("import sys, strided, strided.copy, strided.batch; "
            "print([m for m in ('dask', 'distributed', 'zarr', 'xarray') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True)
    assert out.stdout.strip() == "[]"


def test_missing_dask_says_which_extra():
    code = ("import sys; sys.modules['dask'] = None\n"
            "try:\n    import strided.dask\nexcept ModuleNotFoundError as e:\n"
            "    print(e.name, '|', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True)
    name, message = out.stdout.split("|")
    assert name.strip() == "dask" and "pip install strided[dask]" in message


@pytest.mark.thread_unsafe(reason="runs a benchmark process on the machine's cores")
@pytest.mark.skipif(not BENCH.is_file(), reason="needs the checkout's benchmarks/")
def test_benchmark_quick_smoke_run():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT / "benchmarks"), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, str(BENCH), "--quick"], capture_output=True,
                         text=True, timeout=300, env=env, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "relayout" in out.stdout and "ratio" in out.stdout
