"""strided.zarr.FixedScaleOffset and AsType against zarr-python's numcodecs codecs of the same
names (the reference: numcodecs' numpy formulas), bit for bit, both ways through stores.

The one documented difference: values whose encoding falls outside the integer type (and NaN),
for which numpy's cast is undefined, saturate in strided (NaN as 0); the tests check strided's
values there against that rule, and everything in range against the reference.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st_

zarr = pytest.importorskip("zarr")
szarr = pytest.importorskip("strided.zarr")

from zarr.codecs.numcodecs import AsType as ZarrAsType  # noqa: E402
from zarr.codecs.numcodecs import FixedScaleOffset as ZarrFixedScaleOffset  # noqa: E402
from zarr.core.buffer import default_buffer_prototype  # noqa: E402
from zarr.storage import MemoryStore  # noqa: E402

# Both classes warn, as zarr's do, that numcodecs' codecs are not in the v3 specification.
pytestmark = pytest.mark.filterwarnings(
    "ignore:Numcodecs codecs are not in the Zarr version 3 specification")
config_changing = pytest.mark.thread_unsafe(reason="changes zarr's process-wide config")

FLOATS = ["<f4", "<f8"]
INTS = ["|i1", "|u1", "<i2", "<u2", "<i4", "<u4", "<i8", "<u8"]


def spec(shape, dtype):
    from zarr.core.array_spec import ArrayConfig, ArraySpec
    from zarr.dtype import parse_dtype

    return ArraySpec(shape=shape, dtype=parse_dtype(np.dtype(dtype), zarr_format=3),
                     fill_value=0, config=ArrayConfig(order="C", write_empty_chunks=True),
                     prototype=default_buffer_prototype())


def encode(codec, x: np.ndarray) -> np.ndarray:
    nd = default_buffer_prototype().nd_buffer.from_numpy_array(x)
    out = asyncio.run(codec.encode([(nd, spec(x.shape, x.dtype))]))
    return np.asarray(next(iter(out)).as_numpy_array()).reshape(x.shape)


def decode(codec, y: np.ndarray, dtype) -> np.ndarray:
    nd = default_buffer_prototype().nd_buffer.from_numpy_array(y)
    out = asyncio.run(codec.decode([(nd, spec(y.shape, dtype))]))
    return next(iter(out)).as_numpy_array()


def pair(cls_ours, cls_theirs, **config):
    return cls_ours(**config), cls_theirs(**config)


def bits(a: np.ndarray) -> np.ndarray:
    """The bytes of each element (so that NaN == NaN and -0.0 != 0.0)."""
    return np.ascontiguousarray(a).view(np.uint8)


# --------------------------------------------------------------------------------------------
# numcodecs.fixedscaleoffset
# --------------------------------------------------------------------------------------------

parameter = st_.one_of(st_.integers(-1000, 1000), st_.floats(-1e4, 1e4, width=32),
                       st_.sampled_from([0, 1, 0.0, 1.0, 0.1, 1 / 3, 2.5, -7.25]))
value = st_.one_of(st_.floats(-1e6, 1e6), st_.integers(-600, 600).map(lambda k: k / 2))


@settings(max_examples=150)
@given(dtype=st_.sampled_from(FLOATS), astype=st_.sampled_from(["|i1", "|u1", *INTS]),
       offset=parameter,
       scale=parameter, values=st_.lists(value, min_size=1, max_size=40))
def test_encode_in_range_is_the_reference(dtype, astype, offset, scale, values):
    """In-range values (ties included): strided's bytes are the reference's."""
    ours, theirs = pair(szarr.FixedScaleOffset, ZarrFixedScaleOffset, offset=offset,
                        scale=scale, dtype=dtype, astype=astype)
    x = np.array(values, dtype)
    with np.errstate(all="ignore"):
        exact = np.around((x - offset) * scale)
    info = np.iinfo(astype)
    x = np.where((exact >= info.min) & (exact <= info.max), x, np.asarray(offset, dtype))
    assume(np.isfinite(x).all())
    expected = encode(theirs, x)
    np.testing.assert_array_equal(bits(encode(ours, x)), bits(expected))
    # strided's encoding itself, for every float -> integer pair (the codec routes the
    # vectorised ones to it): the reference's bytes, or None where it declines.
    if all(szarr._exact_parameter(p, np.dtype(dtype)) for p in (offset, scale)):
        direct = szarr._scale_offset(x, np.dtype(dtype), np.dtype(astype), offset, scale)
        assert direct is not None
        np.testing.assert_array_equal(bits(direct), bits(expected))


@pytest.mark.parametrize("astype", INTS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_encode_out_of_range_is_the_reference(dtype, astype):
    """NaN, infinities and values out of range (numpy's cast is undefined there): the chunk
    takes the reference's route, so its bytes are the reference's on this platform."""
    info = np.iinfo(astype)
    x = np.array([np.nan, np.inf, -np.inf, 1e30, -1e30, float(info.max) * 4,
                  float(info.min) * 4 - 8, 3.0], dtype)
    for one in [x[[i, -1]] for i in range(len(x) - 1)]:
        ours, theirs = pair(szarr.FixedScaleOffset, ZarrFixedScaleOffset, offset=1.5,
                            scale=2.0, dtype=dtype, astype=astype)
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(bits(encode(ours, one)), bits(encode(theirs, one)))


@pytest.mark.parametrize("astype", ["|u1", "|i1", "<i8", "<u8"])
def test_encode_range_edges(astype):
    """Values whose encodings are the integer type's extremes and just beyond them."""
    info = np.iinfo(astype)
    for edge in (info.min, info.max):
        for delta in (-1.0, -0.5, 0.0, 0.5, 1.0):
            x = np.array([float(edge) + delta, 0.0])
            ours, theirs = pair(szarr.FixedScaleOffset, ZarrFixedScaleOffset, offset=0,
                                scale=1, dtype="<f8", astype=astype)
            with np.errstate(all="ignore"):
                np.testing.assert_array_equal(bits(encode(ours, x)), bits(encode(theirs, x)))


@pytest.mark.parametrize("bad", [None, np.nan, 1e9], ids=["in-range", "nan", "out-of-range"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_encode_many_slabs(dtype, bad):
    """A chunk of several slabs (strided encodes slab by slab): in range, it is the
    reference's; one bad value in a middle slab sends the whole chunk the reference's way."""
    n = 3 * szarr._SLAB + 123                    # 3 * 65659 elements: 4 slabs
    x = np.random.default_rng(4).uniform(-1.0, 1.2, n).astype(dtype).reshape(-1, 3)
    if bad is not None:
        x.reshape(-1)[2 * szarr._SLAB + 7] = bad
    ours, theirs = pair(szarr.FixedScaleOffset, ZarrFixedScaleOffset, offset=0.25,
                        scale=100.0, dtype=dtype, astype="|i1")
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(bits(encode(ours, x)), bits(encode(theirs, x)))
        # the same values through a view that is not C-contiguous (one slab, any strides)
        view = np.asfortranarray(x)
        np.testing.assert_array_equal(bits(encode(ours, view)), bits(encode(theirs, x)))
        for chunk in (x, view):      # strided's own encoding (the codec's route for float32)
            direct = szarr._scale_offset(chunk, np.dtype(dtype), np.dtype("i1"), 0.25, 100.0)
            if bad is None:
                np.testing.assert_array_equal(bits(direct), bits(encode(theirs, x)))
            else:
                assert direct is None


@settings(max_examples=60)
@given(dtype=st_.sampled_from(FLOATS),
       astype=st_.sampled_from(["|i1", "|u1", "<i2", "<u2", "<f2", ">i2"]),
       offset=parameter, scale=parameter.filter(lambda s: s != 0))
def test_decode_table_is_the_reference(dtype, astype, offset, scale):
    """Every bit pattern of a 1- or 2-byte encoding decodes to the reference's value."""
    ours, theirs = pair(szarr.FixedScaleOffset, ZarrFixedScaleOffset, offset=offset,
                        scale=scale, dtype=dtype, astype=astype)
    size = np.dtype(astype).itemsize
    y = np.arange(256**size, dtype=f"u{size}").view(astype).reshape(-1, 64)
    with np.errstate(all="ignore"):
        expected = decode(theirs, y, dtype)
        got = decode(ours, y, dtype)
    assert got.dtype == expected.dtype and got.shape == y.shape
    np.testing.assert_array_equal(bits(got), bits(expected))


@pytest.mark.parametrize("astype", ["|u1", "|i1"])
@pytest.mark.parametrize("scale, offset, affine", [
    (128, 0, True), (2, 0.25, True), (10, 1000, True), (256, -0.5, True),
    (255, 0, False), (100, 0.5, False), (127, 0, False)])
def test_decode_routes(astype, scale, offset, affine):
    """1-byte decoding: strided's affine pass where it matched the reference on all 256
    patterns, the table otherwise; a large random chunk is the reference's either way."""
    ours, theirs = pair(szarr.FixedScaleOffset, ZarrFixedScaleOffset, offset=offset,
                        scale=scale, dtype="<f4", astype=astype)
    assert (ours._decode_affine is not None) == affine
    y = np.random.default_rng(2).integers(0, 256, (37, 61, 3), dtype=np.uint8).view(astype)
    np.testing.assert_array_equal(bits(decode(ours, y, "<f4")), bits(decode(theirs, y, "<f4")))


@pytest.mark.parametrize("config", [
    {"offset": 3, "scale": 2, "dtype": "<i2", "astype": "|i1"},           # integer arithmetic
    {"offset": 0.5, "scale": 4.0, "dtype": "<f2", "astype": "|u1"},       # float16 arithmetic
    {"offset": 1000.0, "scale": 10.0, "dtype": "<f8", "astype": "<f4"},   # a float encoding
    {"offset": 1000.0, "scale": 10.0, "dtype": "<f8"},                    # no astype
    {"offset": 2**60, "scale": 1, "dtype": "<f8", "astype": "<i8"},       # inexact int
    {"offset": 0.25, "scale": 8, "dtype": "<f4", "astype": "<i4"},        # 4-byte decode
])
def test_other_configurations_take_the_reference_route(config):
    ours, theirs = pair(szarr.FixedScaleOffset, ZarrFixedScaleOffset, **config)
    x = (np.arange(-20, 20) * 1.75 + float(config["offset"]) % 7).astype(config["dtype"])
    y = encode(theirs, x)
    np.testing.assert_array_equal(bits(encode(ours, x)), bits(y))
    np.testing.assert_array_equal(bits(decode(ours, y, config["dtype"])),
                                  bits(decode(theirs, y, config["dtype"])))


@config_changing
@pytest.mark.parametrize("dtype, astype", [("<f4", "|u1"), ("<f8", "<i2"), ("<f8", "|i1")])
def test_stores_both_ways(dtype, astype):
    """A quantized store written with either class: the same chunk files, and each read back
    by either class to the same values."""
    rng = np.random.default_rng(1)
    data = (rng.random((9, 10, 3)) * 12 + 1000).astype(dtype)
    codec = {"offset": 1000, "scale": 10, "dtype": dtype, "astype": astype}
    stores = {}
    for name, cls in [("zarr", ZarrFixedScaleOffset), ("strided", szarr.FixedScaleOffset)]:
        stores[name] = MemoryStore()
        array = zarr.create_array(stores[name], shape=data.shape, chunks=(4, 4, 3),
                                  dtype=dtype, filters=[cls(**codec)], compressors=None)
        array[...] = data
    assert _chunks(stores["zarr"]) == _chunks(stores["strided"])
    reads = []
    for written, strided_reads in itertools.product(stores, [False, True]):
        if strided_reads:
            with szarr.use():
                array = zarr.open_array(stores[written], mode="r")
                assert type(array.metadata.codecs[0]) is szarr.FixedScaleOffset
                reads.append(array[...])
        else:
            reads.append(zarr.open_array(stores[written], mode="r")[...])
    for read in reads[1:]:
        np.testing.assert_array_equal(bits(read), bits(reads[0]))
    np.testing.assert_allclose(reads[0], data, atol=0.051)


@config_changing
def test_fortran_ordered_chunks_are_stored_in_c_order():
    """zarr's ``config={"order": "F"}`` makes the chunks of partial writes Fortran-ordered;
    the stored bytes must still be C order (zarr-python 3.1.6's numcodecs wrapper stores them
    in memory order and reads them back transposed; strided's class does not, on either
    route: in range, and with a NaN that sends the chunk the reference's way)."""
    for nan in (False, True):
        x = np.arange(12, dtype="<f8").reshape(3, 4)
        if nan:
            x[2, 3] = np.nan
        store = MemoryStore()
        array = zarr.create_array(store, shape=x.shape, chunks=x.shape, dtype="<f8",
                                  filters=[szarr.FixedScaleOffset(offset=0, scale=1,
                                                                  dtype="<f8", astype="<i2")],
                                  compressors=None, config={"order": "F"})
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            array[0:2, :] = x[0:2]
            array[2, :] = x[2]
        stored = np.frombuffer(_chunks(store)["c/0/0"], "<i2").reshape(3, 4)
        np.testing.assert_array_equal(stored[:, :3], x[:, :3].astype("<i2"))
        np.testing.assert_array_equal(stored[:2], x[:2].astype("<i2"))


def _chunks(store) -> dict[str, bytes]:
    async def collect():
        keys = [key async for key in store.list() if key != "zarr.json"]
        return {k: (await store.get(k, default_buffer_prototype())).to_bytes() for k in keys}
    return asyncio.run(collect())


def test_codecs_stay_strideds_when_zarr_fills_in_the_dtype():
    """zarr's numcodecs classes rebuild themselves by name when they take a missing dtype from
    the array; strided's stay strided's (and the array works)."""
    data = np.linspace(0, 1, 24, dtype=np.float32).reshape(4, 6)
    for codec in (szarr.FixedScaleOffset(offset=0, scale=100, astype="|u1"),
                  szarr.AsType(encode_dtype="<f2")):
        array = zarr.create_array(MemoryStore(), shape=data.shape, dtype="<f4",
                                  filters=[codec], compressors=None)
        assert type(array.metadata.codecs[0]) is type(codec)
        array[...] = data
        np.testing.assert_allclose(array[...], data, atol=0.006)


def test_same_metadata_as_zarr():
    ours, theirs = pair(szarr.FixedScaleOffset, ZarrFixedScaleOffset, offset=1000, scale=10,
                        dtype="<f8", astype="|u1")
    assert ours.to_dict() == theirs.to_dict()
    assert ours.resolve_metadata(spec((4,), "<f8")).dtype == theirs.resolve_metadata(
        spec((4,), "<f8")).dtype


def test_decode_table_made_once_under_threads():
    codec = szarr.FixedScaleOffset(offset=1.5, scale=3.0, dtype="<f4", astype="<i2")
    y = np.arange(-3000, 3000, dtype=np.int16).reshape(60, 100)
    expected = decode(ZarrFixedScaleOffset(**codec.codec_config), y, "<f4")
    results = []

    def run():
        results.append(decode(codec, y, "<f4"))

    threads = [threading.Thread(target=run) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(results) == 4
    for result in results:
        np.testing.assert_array_equal(bits(result), bits(expected))


# --------------------------------------------------------------------------------------------
# numcodecs.astype
# --------------------------------------------------------------------------------------------

NUMERIC = ["|b1", "|i1", "|u1", "<i2", "<u2", "<i4", "<u4", "<i8", "<u8", "<f2", "<f4", "<f8",
           "<c8", "<c16"]


def values_for(source: str, target: str, rng) -> np.ndarray:
    """Random values of ``source`` whose cast to ``target`` numpy defines (floats into an
    integer type: within its range, NaN left out)."""
    src, dst = np.dtype(source), np.dtype(target)
    if src.kind == "b":
        return rng.integers(0, 2, 64).astype(src)
    if src.kind in "iu":
        info = np.iinfo(src)
        return rng.integers(info.min, info.max, 64, dtype=src, endpoint=True)
    x = rng.standard_normal(64) * 10.0 ** rng.integers(-3, 6, 64)
    if src.itemsize == 2:
        x = np.clip(x, -60000, 60000)              # float16's finite range
    x = x.astype(src)
    if src.kind == "c":
        x = x + 1j * x[::-1]
    if dst.kind in "iu":
        info = np.iinfo(dst)
        real = x.real.astype(np.float64)
        inside = (real > info.min - 1) & (real < info.max + 1)
        x = np.where(inside, x, np.zeros_like(x))
    return x


@pytest.mark.parametrize("source, target", [
    (s, t) for s, t in itertools.product(NUMERIC, NUMERIC)
    if s != t and not (np.dtype(s).kind == "c" and np.dtype(t).kind != "c")])
def test_astype_is_the_reference(source, target):
    """Both directions of every pair of numeric dtypes: strided's cast is numpy's."""
    ours, theirs = pair(szarr.AsType, ZarrAsType, encode_dtype=target, decode_dtype=source)
    x = values_for(source, target, np.random.default_rng(len(source + target)))
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        expected = encode(theirs, x)
        np.testing.assert_array_equal(bits(encode(ours, x)), bits(expected))
        np.testing.assert_array_equal(bits(decode(ours, expected, source)),
                                      bits(decode(theirs, expected, source)))
        # strided's cast itself, for every pair (the codec routes the fast ones to it)
        direct = szarr._strided_cast(x, np.dtype(target))
        assert direct is not None
        np.testing.assert_array_equal(bits(direct), bits(expected))


def test_astype_complex_to_real_takes_the_reference_route():
    ours, theirs = pair(szarr.AsType, ZarrAsType, encode_dtype="<f4", decode_dtype="<c8")
    x = np.array([1 + 2j, -3.5 - 1j], np.complex64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        np.testing.assert_array_equal(encode(ours, x), encode(theirs, x))


@pytest.mark.parametrize("target", ["|u1", "|i1", "<i4", "<u8"])
def test_astype_float_out_of_range_is_the_reference(target):
    ours, theirs = pair(szarr.AsType, ZarrAsType, encode_dtype=target, decode_dtype="<f8")
    info = np.iinfo(target)
    for bad in [np.nan, -np.inf, float(info.max) + 1e3, float(info.min) - 1e3, -1.5]:
        x = np.array([bad, 7.9, float(info.max) * 0.5])
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            np.testing.assert_array_equal(bits(encode(ours, x)), bits(encode(theirs, x)))


@config_changing
def test_astype_store_both_ways():
    data = np.linspace(-3, 3, 60).reshape(6, 10)
    stores = {}
    for name, cls in [("zarr", ZarrAsType), ("strided", szarr.AsType)]:
        stores[name] = MemoryStore()
        array = zarr.create_array(stores[name], shape=data.shape, chunks=(4, 4), dtype="<f8",
                                  filters=[cls(encode_dtype="<f2", decode_dtype="<f8")],
                                  compressors=None)
        array[...] = data
    assert _chunks(stores["zarr"]) == _chunks(stores["strided"])
    with szarr.use("numcodecs.astype"):
        got = zarr.open_array(stores["zarr"], mode="r")[...]
    np.testing.assert_array_equal(got, data.astype(np.float16).astype(np.float64))


@pytest.mark.thread_unsafe(reason="swaps strided._buffers' pool")
def test_filter_results_on_reused_blocks_are_the_reference(monkeypatch):
    """Encodings, affine decodings and casts whose results come from strided._buffers' pool
    (its threshold lowered), chunk after chunk: the reference's bytes every time."""
    from strided import _buffers

    monkeypatch.setattr(_buffers, "POOLED_FROM", 256)
    monkeypatch.setattr(_buffers, "_POOL", _buffers._Pool(1 << 20))
    rng = np.random.default_rng(5)
    scale_offset = pair(szarr.FixedScaleOffset, ZarrFixedScaleOffset, offset=0, scale=128,
                        dtype="<f4", astype="|u1")
    astype = pair(szarr.AsType, ZarrAsType, encode_dtype="<f2", decode_dtype="<f4")
    for _ in range(3):
        x = rng.random((17, 33), dtype=np.float32)
        for ours, theirs in (scale_offset, astype):
            stored = encode(theirs, x)
            np.testing.assert_array_equal(bits(encode(ours, x)), bits(stored))
            np.testing.assert_array_equal(bits(decode(ours, stored, "<f4")),
                                          bits(decode(theirs, stored, "<f4")))
    assert _buffers._POOL.free
