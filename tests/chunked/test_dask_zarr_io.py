"""strided.dask.from_zarr / to_zarr: zarr arrays read and written chunk by chunk as their stored
bytes where the chunks are plain bytes, through zarr's own indexing everywhere else; zarr-python
is the oracle (values read back, and the stored bytes of every chunk)."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
zarr = pytest.importorskip("zarr")

import strided as st  # noqa: E402
import strided.dask as sd  # noqa: E402
from strided._zarr_io import StoredChunks  # noqa: E402

DTYPES = ["bool", "uint8", "int16", "float32", "float64", "complex64", "uint64"]


def values(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    if dtype.kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


def make(store, shape, chunks, dtype, **kwargs):
    kwargs.setdefault("compressors", None)
    return zarr.create_array(store, shape=shape, chunks=chunks, dtype=dtype, **kwargs)


@pytest.fixture(params=["local", "memory"])
def new_store(request, tmp_path):
    """A function giving a fresh store of the kind under test."""
    names = iter(range(1000))

    def fresh():
        if request.param == "memory":
            return zarr.storage.MemoryStore()
        return zarr.storage.LocalStore(tmp_path / f"a{next(names)}.zarr")
    return fresh


def stored_chunk_bytes(array):
    """Every stored chunk's bytes, by key (zarr's own listing of the store)."""
    store = array.store_path.store
    prefix = array.store_path.path
    keys = sorted(k for k in zarr.core.sync.collect_aiterator(store.list_prefix(prefix))
                  if not k.endswith("zarr.json"))
    proto = zarr.core.buffer.default_buffer_prototype()
    return {k: zarr.core.sync.sync(store.get(k, prototype=proto)).to_bytes() for k in keys}


# --------------------------------------------------------------------------------------------
# from_zarr
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_from_zarr_reads_what_zarr_reads(new_store, dtype):
    a = values((7, 10, 5), dtype)
    z = make(new_store(), a.shape, (3, 4, 5), dtype)      # ragged last chunks on two axes
    z[...] = a
    x = sd.from_zarr(z)
    assert StoredChunks(z).as_bytes
    assert x.chunks == ((3, 3, 1), (4, 4, 2), (5,)) and x.dtype == a.dtype
    got = x.compute(scheduler="threads")
    assert np.array_equal(got, a)
    for block in x.to_delayed().ravel():            # blocks as tasks return them: writable
        assert block.compute().flags.writeable


@pytest.mark.thread_unsafe(reason="patches zarr.Array, which every thread shares")
def test_from_zarr_takes_the_stored_bytes_not_zarr_indexing(tmp_path, monkeypatch):
    a = values((4, 6), "float32")
    z = make(zarr.storage.LocalStore(tmp_path / "a.zarr"), a.shape, (2, 3), "float32")
    z[...] = a

    def refused(self, key):
        raise AssertionError("zarr's indexing was used")
    monkeypatch.setattr(zarr.Array, "__getitem__", refused)
    assert np.array_equal(sd.from_zarr(z).compute(scheduler="sync"), a)


def test_never_written_chunks_read_as_the_fill_value(new_store):
    z = make(new_store(), (5, 6), (2, 4), "int16", fill_value=-7)
    z[2:4, 4:6] = 3
    expected = np.full((5, 6), -7, np.int16)
    expected[2:4, 4:6] = 3
    assert np.array_equal(sd.from_zarr(z).compute(), expected)
    assert np.array_equal(z[...], expected)


@pytest.mark.parametrize("kind", ["zstd", "sharded", "big-endian", "transpose", "v2", "F"])
def test_other_encodings_are_read_through_zarr(new_store, kind):
    a = values((6, 8), "float32")
    options = {
        "zstd": {"compressors": zarr.codecs.ZstdCodec()},
        "sharded": {"shards": (6, 8)},
        "big-endian": {"serializer": zarr.codecs.BytesCodec(endian="big")},
        "transpose": {"filters": [zarr.codecs.TransposeCodec(order=(1, 0))]},
        "v2": {"zarr_format": 2},
        "F": {"config": {"order": "F"}},
    }[kind]
    z = make(new_store(), a.shape, (3, 4), "float32", **options)
    z[...] = a
    assert StoredChunks(z).as_bytes is (kind == "F")    # F only orders the chunks in memory
    assert np.array_equal(sd.from_zarr(z).compute(), a)
    b = values((6, 8), "float32", seed=1)
    sd.to_zarr(da.from_array(b, chunks=z.shards or z.chunks), z)
    assert np.array_equal(z[...], b)


def test_a_stored_chunk_of_the_wrong_size_is_named(tmp_path):
    z = make(zarr.storage.LocalStore(tmp_path / "a.zarr"), (4, 4), (2, 2), "float32")
    z[...] = 1
    with open(tmp_path / "a.zarr" / "c" / "1" / "0", "wb") as file:
        file.write(b"\0" * 12)
    with pytest.raises(ValueError, match=r"holds 12 bytes, not the 16 of a chunk"):
        sd.from_zarr(z).compute(scheduler="sync")


def test_regions_that_are_not_one_chunk_go_through_zarr(new_store):
    a = values((5, 7), "uint8")
    z = make(new_store(), a.shape, (2, 4), "uint8")
    z[...] = a
    chunks = StoredChunks(z)
    for region in [(slice(1, 3), slice(0, 4)), (slice(0, 2), slice(0, 3)),
                   (slice(0, 4), slice(0, 4)), (slice(4, 5), slice(4, 7)),
                   (slice(0, 2, 1), slice(None, 4)), (slice(0, 2, 2), slice(0, 4))]:
        assert np.array_equal(chunks[region], a[region]), region
    chunks[(slice(1, 3), slice(2, 6))] = np.zeros((2, 4), np.uint8)
    a[1:3, 2:6] = 0
    assert np.array_equal(z[...], a)


def test_from_zarr_refuses_what_is_not_a_zarr_array():
    with pytest.raises(TypeError, match=r"array must be a zarr array \(zarr.Array\), got "
                                        r"numpy.ndarray"):
        sd.from_zarr(np.zeros(3))
    with pytest.raises(TypeError, match=r"got dask\.array\.core\.Array"):
        sd.from_zarr(da.zeros(3))


# --------------------------------------------------------------------------------------------
# to_zarr
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_to_zarr_stores_the_bytes_zarr_stores(new_store, dtype):
    a = values((7, 10, 5), dtype)
    ours = make(new_store(), a.shape, (3, 4, 5), dtype)
    theirs = make(new_store(), a.shape, (3, 4, 5), dtype)
    assert sd.to_zarr(da.from_array(a, chunks=(3, 4, 5)), ours) is ours
    theirs[...] = a
    assert np.array_equal(ours[...], a)
    assert stored_chunk_bytes(ours) == stored_chunk_bytes(theirs)


@pytest.mark.thread_unsafe(reason="patches zarr.Array, which every thread shares")
def test_to_zarr_writes_whole_chunks_without_zarr_indexing(new_store, monkeypatch):
    a = values((4, 6), "int16")
    z = make(new_store(), a.shape, (2, 3), "int16")

    def refused(self, key, value):
        raise AssertionError("zarr's indexing was used")
    monkeypatch.setattr(zarr.Array, "__setitem__", refused)
    sd.to_zarr(da.from_array(a, chunks=(2, 3)), z, compute=True)
    monkeypatch.undo()
    assert np.array_equal(z[...], a)


def test_relaid_blocks_are_stored_as_their_physical_order(new_store):
    """Channels-last blocks: stored as a (N, H, W, C) array without a copy (transposed, each
    block is C-contiguous); into an NCHW array (strided copies each block back to C order)."""
    a = values((3, 5, 4, 6), "float32")
    x = da.from_array(a, chunks=(1, 5, 2, 6))
    nhwc = make(new_store(), (3, 4, 6, 5), (1, 2, 6, 5), "float32")
    sd.to_zarr(sd.relayout(x, "NHWC").transpose(0, 2, 3, 1), nhwc)
    assert np.array_equal(nhwc[...], a.transpose(0, 2, 3, 1))
    nchw = make(new_store(), a.shape, (1, 5, 2, 6), "float32")
    sd.to_zarr(sd.relayout(x, "NHWC", scale=2.0), nchw)
    assert np.array_equal(nchw[...], a * 2)


def test_to_blocked_out_zarr_and_back_through_the_stored_bytes(new_store):
    a = values((2, 40, 6, 5), "float32") * 30
    scale = np.linspace(0.5, 2, 40)
    q = make(new_store(), (2, 2, 6, 5, 32), (1, 1, 3, 5, 32), "int8")
    sd.to_blocked(da.from_array(a, chunks=(1, 32, 3, 5)), "NCHW32", dtype=np.int8,
                  scale=scale, out=q)
    expected = st.to_blocked(a, "NCHW32", dtype=np.int8, scale=scale)
    assert np.array_equal(q[...], expected)
    back = sd.from_blocked(sd.from_zarr(q), "NCHW32", channels=40, dtype=np.float32,
                           scale=1 / scale)
    assert np.array_equal(back.compute(), st.from_blocked(expected, "NCHW32", channels=40,
                                                          dtype=np.float32, scale=1 / scale))


def test_to_zarr_compute_false_writes_when_computed(new_store):
    a = values((4, 4), "uint8")
    z = make(new_store(), a.shape, (2, 2), "uint8", fill_value=9)
    delayed = sd.to_zarr(da.from_array(a, chunks=2), z, compute=False)
    assert np.all(z[...] == 9)
    dask.compute(delayed)
    assert np.array_equal(z[...], a)


def test_to_zarr_errors(new_store):
    z = make(new_store(), (4, 6), (2, 3), "float32")
    with pytest.raises(ValueError, match=r"x has shape \(4, 5\) but array has shape \(4, 6\)"):
        sd.to_zarr(da.zeros((4, 5), chunks=2, dtype=np.float32), z)
    with pytest.raises(ValueError, match=r"array is stored in chunks of \(2, 3\) but the "
                                         r"result's axis 1 is chunked \(2, 2, 2\)"):
        sd.to_zarr(da.zeros((4, 6), chunks=(2, 2), dtype=np.float32), z)
    with pytest.raises(TypeError, match="x must be a dask array"):
        sd.to_zarr(np.zeros((4, 6), np.float32), z)
    with pytest.raises(TypeError, match=r"array must be a zarr array \(zarr.Array\), got "
                                        r"numpy.ndarray"):
        sd.to_zarr(da.zeros((4, 6), chunks=2), np.zeros((4, 6)))
    assert not stored_chunk_bytes(z)                   # nothing was written


def test_a_cast_on_the_way_in_goes_through_zarr(new_store):
    """A block of another dtype is zarr's to cast, as da.store would have it."""
    a = values((4, 6), "int16")
    z = make(new_store(), a.shape, (2, 3), "float32")
    sd.to_zarr(da.from_array(a, chunks=(2, 3)), z)
    assert np.array_equal(z[...], a.astype(np.float32))


def test_read_only_store_is_refused_by_the_store(tmp_path):
    path = tmp_path / "a.zarr"
    make(zarr.storage.LocalStore(path), (2, 2), (2, 2), "uint8")
    z = zarr.open_array(zarr.storage.LocalStore(path, read_only=True), mode="r")
    with pytest.raises(ValueError, match="read-only"):
        sd.to_zarr(da.zeros((2, 2), chunks=2, dtype=np.uint8), z)
    assert not os.path.exists(path / "c")


@settings(max_examples=40, deadline=None)
@given(shape=hs.lists(hs.integers(1, 9), min_size=1, max_size=3),
       chunk_seed=hs.integers(0, 2**32 - 1), dtype=hs.sampled_from(DTYPES),
       written=hs.floats(0, 1))
def test_round_trip_property(shape, chunk_seed, dtype, written):
    rng = np.random.default_rng(chunk_seed)
    chunks = tuple(int(rng.integers(1, n + 1)) for n in shape)
    a = values(tuple(shape), dtype, seed=chunk_seed)
    source = make(zarr.storage.MemoryStore(), a.shape, chunks, dtype, fill_value=1)
    part = tuple(slice(0, max(1, int(n * written))) for n in shape)
    source[part] = a[part]                  # some chunks never written: the fill value
    expected = np.ones_like(a)
    expected[part] = a[part]
    x = sd.from_zarr(source)
    assert np.array_equal(x.compute(scheduler="threads"), expected)
    copy = make(zarr.storage.MemoryStore(), a.shape, chunks, dtype)
    sd.to_zarr(x, copy)
    assert np.array_equal(copy[...], expected)
