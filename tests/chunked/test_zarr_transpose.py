"""strided.zarr.TransposeCodec against zarr-python's own transpose codec, both ways.

The order semantics are the zarr v3 specification's: encoding stores ``chunk.transpose(order)``,
decoding applies the inverse permutation. Orders that are not their own inverse ((1, 2, 0) and
(2, 0, 1)) are where implementations have gone wrong, so the conformance vectors
(``zarr_vectors/transpose.json``, written by a pure-Python loop over indices, independent of
numpy's transpose and of both codecs) hold several, and every test here checks the two codecs
against each other in both directions: a store written with one is read with the other, the
chunk files are byte for byte the same, the decoded arrays the same.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st_

zarr = pytest.importorskip("zarr")
szarr = pytest.importorskip("strided.zarr")

from zarr.codecs import TransposeCodec as ZarrTransposeCodec  # noqa: E402
from zarr.core.buffer import default_buffer_prototype  # noqa: E402
from zarr.storage import LocalStore, MemoryStore  # noqa: E402

VECTORS = Path(__file__).resolve().parent / "zarr_vectors" / "transpose.json"
CODEC_CLASSES = {"zarr": ZarrTransposeCodec, "strided": szarr.TransposeCodec}

# zarr stores the fixed-size strings and raw bytes of the dtype tests, warning that their
# representation is not in the v3 specification yet: said once here.
pytestmark = pytest.mark.filterwarnings(
    "ignore:The data type .* does not have a Zarr V3 specification")

# Tests that select codecs change zarr's process-wide configuration.
config_changing = pytest.mark.thread_unsafe(reason="changes zarr's process-wide config")


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def reference_encode(values: list, shape: tuple[int, ...], order: tuple[int, ...]) -> list:
    """The specification's encoding by a loop over indices: element ``j`` of the stored chunk
    (C order, shape ``shape[order[k]]``) is element ``i`` of the chunk with
    ``i[order[k]] = j[k]``."""
    encoded = []
    for j in itertools.product(*(range(shape[axis]) for axis in order)):
        index = [0] * len(shape)
        for k, axis in enumerate(order):
            index[axis] = j[k]
        encoded.append(values[int(np.ravel_multi_index(index, shape))])
    return encoded


def vectors_document() -> dict:
    """The conformance vectors, as zarr_vectors/transpose.json holds them."""
    cases = [((3, 4), (1, 0)), ((2, 3, 4), (1, 2, 0)), ((2, 3, 4), (2, 0, 1)),
             ((2, 3, 4), (0, 2, 1)), ((2, 3, 1, 4), (0, 2, 3, 1)), ((2, 3, 2, 4), (0, 3, 1, 2)),
             ((2, 3, 4, 5), (3, 0, 1, 2)), ((2, 1, 3, 2, 2), (4, 0, 3, 1, 2)),
             ((2, 3, 2, 2, 3), (1, 2, 3, 4, 0))]
    vectors = []
    for shape, order in cases:
        values = list(range(int(np.prod(shape))))
        vectors.append({"shape": list(shape), "order": list(order), "dtype": "uint8",
                        "decoded": values, "encoded_shape": [shape[a] for a in order],
                        "encoded": reference_encode(values, shape, order)})
    return {"description": json.loads(VECTORS.read_text())["description"], "vectors": vectors}


def create(store, data: np.ndarray, chunks, codec_class, order, **kwargs):
    """A zarr v3 array over ``store`` holding ``data``, its chunks transposed by ``order``
    with ``codec_class``, uncompressed (the chunk files are the encoded bytes)."""
    array = zarr.create_array(store, shape=data.shape, chunks=chunks, dtype=data.dtype,
                              filters=[codec_class(order=order)], compressors=None, **kwargs)
    array[...] = data
    return array


def chunk_files(store) -> dict[str, bytes]:
    """Every chunk file of an array at the root of ``store``, by key."""
    async def collect():
        keys = [key async for key in store.list() if key != "zarr.json"]
        prototype = default_buffer_prototype()
        return {key: (await store.get(key, prototype)).to_bytes() for key in keys}
    return asyncio.run(collect())


def read_with(store, which: str, ndbuffer: bool = True) -> np.ndarray:
    """The whole array at ``store``, decoded by zarr's codec or by strided's (selected by
    configuration, as a user would)."""
    if which == "zarr":
        array = zarr.open_array(store, mode="r")
        assert type(transpose_codec(array)) is ZarrTransposeCodec
        return array[...]
    with szarr.use("transpose", ndbuffer=ndbuffer):
        array = zarr.open_array(store, mode="r")
        assert type(transpose_codec(array)) is szarr.TransposeCodec
        return array[...]


def transpose_codec(array):
    """The array's transpose codec, at the top of its pipeline or in its shards'."""
    codec = array.metadata.codecs[0]
    return getattr(codec, "codecs", [codec])[0]


def check_both_ways(data: np.ndarray, chunks, order, ndbuffer: bool = True) -> None:
    """Stores written with either codec have the same chunk files, and each reads back as
    ``data`` with either codec."""
    stores = {}
    for name, codec_class in CODEC_CLASSES.items():
        stores[name] = MemoryStore()
        create(stores[name], data, chunks, codec_class, order)
    assert chunk_files(stores["zarr"]) == chunk_files(stores["strided"])
    for written, read in itertools.product(CODEC_CLASSES, CODEC_CLASSES):
        np.testing.assert_array_equal(read_with(stores[written], read, ndbuffer), data,
                                      err_msg=f"written by {written}, read by {read}")


def sample(shape, dtype, seed: int = 0) -> np.ndarray:
    """Random values of any dtype: random bytes, so that NaN payloads, negative zeros and
    every bit pattern travel through the copy (valid ones for bools and strings)."""
    dtype, rng = np.dtype(dtype), np.random.default_rng(seed)
    count = int(np.prod(shape))
    if dtype.kind == "U":                          # code points of letters
        letters = rng.integers(ord("a"), ord("z") + 1, count * dtype.itemsize // 4)
        return letters.astype(np.uint32).view(dtype).reshape(shape)
    raw = rng.integers(0, 256, count * dtype.itemsize, dtype=np.uint8)
    if dtype.kind == "b":
        raw %= 2
    elif dtype.kind == "S":
        raw = raw % 26 + ord("a")
    return raw.view(dtype).reshape(shape)


# --------------------------------------------------------------------------------------------
# conformance vectors
# --------------------------------------------------------------------------------------------


def test_vectors_file_is_the_definition():
    assert json.loads(VECTORS.read_text()) == vectors_document()


@config_changing
@pytest.mark.parametrize("vector", json.loads(VECTORS.read_text())["vectors"],
                         ids=lambda v: f"{v['shape']}-order{v['order']}")
@pytest.mark.parametrize("writer", list(CODEC_CLASSES))
def test_vectors_on_disk(tmp_path, vector, writer):
    """The chunk file a codec writes to a LocalStore is the vector's encoding, and both codecs
    decode the vector's file (written by hand) back to the chunk."""
    shape, order = tuple(vector["shape"]), tuple(vector["order"])
    decoded = np.array(vector["decoded"], np.uint8).reshape(shape)
    encoded = bytes(vector["encoded"])
    store = LocalStore(tmp_path / "written")
    create(store, decoded, shape, CODEC_CLASSES[writer], order)
    chunk = tmp_path / "written" / "c" / "/".join("0" * len(shape))
    assert chunk.read_bytes() == encoded
    # The same array, its chunk file replaced by the vector's bytes, read by both codecs.
    chunk.write_bytes(encoded)
    for reader in CODEC_CLASSES:
        np.testing.assert_array_equal(read_with(LocalStore(tmp_path / "written"), reader),
                                      decoded)


@pytest.mark.parametrize("vector", json.loads(VECTORS.read_text())["vectors"],
                         ids=lambda v: f"{v['shape']}-order{v['order']}")
def test_vectors_codec_calls(vector):
    """The codec's own encode and decode (no store), with the materialising route."""
    shape, order = tuple(vector["shape"]), tuple(vector["order"])
    decoded = np.array(vector["decoded"], np.uint8).reshape(shape)
    encoded = np.array(vector["encoded"], np.uint8).reshape(vector["encoded_shape"])
    codec = szarr.TransposeCodec(order=order)
    nd = default_buffer_prototype().nd_buffer
    stored = codec._encode_sync(nd.from_numpy_array(decoded), None)
    assert stored.as_numpy_array().flags.c_contiguous
    np.testing.assert_array_equal(stored.as_numpy_array(), encoded)
    spec = _spec(shape, np.uint8)
    back = codec._decode_sync(nd.from_numpy_array(encoded), spec).as_numpy_array()
    assert back.flags.c_contiguous
    np.testing.assert_array_equal(back, decoded)


def _spec(shape, dtype, prototype=None):
    from zarr.core.array_spec import ArrayConfig, ArraySpec
    from zarr.dtype import parse_dtype

    return ArraySpec(shape=shape, dtype=parse_dtype(np.dtype(dtype), zarr_format=3),
                     fill_value=0, config=ArrayConfig(order="C", write_empty_chunks=True),
                     prototype=prototype or default_buffer_prototype())


# --------------------------------------------------------------------------------------------
# both ways: every permutation of rank 3 and 4, ranks 2-5, dtypes, ragged chunks
# --------------------------------------------------------------------------------------------


@config_changing
@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
def test_every_rank3_order_ragged(order):
    check_both_ways(sample((5, 7, 3), np.uint16), (2, 3, 2), order)


@config_changing
@pytest.mark.parametrize("order", list(itertools.permutations(range(4))))
def test_every_rank4_order_ragged(order):
    check_both_ways(sample((3, 5, 4, 2), np.float32, seed=sum(order)), (2, 2, 3, 2), order)


@pytest.mark.slow
@config_changing
@pytest.mark.parametrize("dtype", ["uint8", "float64", "S3"])
def test_every_rank5_order(dtype):
    """All 120 orders of rank 5, ragged chunks, both ways (exhaustive: STRIDED_SLOW=1)."""
    data = sample((3, 2, 4, 3, 2), dtype, seed=13)
    for order in itertools.permutations(range(5)):
        check_both_ways(data, (2, 2, 3, 2, 1), order, ndbuffer=sum(order[:2]) % 2 == 0)


@config_changing
@pytest.mark.parametrize("shape, chunks, order", [
    ((9, 4), (4, 3), (1, 0)),
    ((1, 6, 1), (1, 4, 1), (2, 0, 1)),            # size-1 dims
    ((2, 3, 5, 7), (1, 3, 4, 4), (0, 2, 3, 1)),   # NCHW -> NHWC
    ((2, 5, 7, 3), (2, 4, 5, 3), (0, 3, 1, 2)),   # NHWC -> NCHW
    ((3, 2, 4, 5, 2), (2, 2, 3, 2, 2), (4, 0, 3, 1, 2)),
    ((2, 3, 4, 3, 2), (2, 2, 4, 2, 1), (1, 2, 3, 4, 0)),
])
def test_ranks_2_to_5(shape, chunks, order):
    check_both_ways(sample(shape, np.int32, seed=len(shape)), chunks, order)


NUMERIC_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                  "uint64", "float16", "float32", "float64", "complex64", "complex128"]
OTHER_DTYPES = [">i4", ">f8", "datetime64[s]", "timedelta64[ms]", "S3", "U2", "V6"]


@config_changing
@pytest.mark.parametrize("dtype", NUMERIC_DTYPES + OTHER_DTYPES)
@pytest.mark.parametrize("ndbuffer", [True, False], ids=["ndbuffer", "materialised"])
def test_dtypes(dtype, ndbuffer):
    """Every dtype zarr stores with a fixed size: the bytes move, whatever they mean (random
    bit patterns: NaN payloads and negative zeros included)."""
    data = sample((4, 5, 6), dtype, seed=3)
    check_both_ways(data, (3, 5, 4), (1, 2, 0), ndbuffer=ndbuffer)


@config_changing
def test_object_strings_take_zarrs_route():
    """Variable-length strings are not fixed-size items: strided does not copy them, zarr's
    route does, with zarr's results. (zarr-python 3.1.6's own transpose does not round-trip
    them: the values come back in another order; strided's codec gives the same bytes and
    values as zarr's, neither better nor worse.)"""
    data = np.array([["a", "bc", "def"], ["", "xyz", "q"]], dtype=object)
    stores = {}
    for name, codec_class in CODEC_CLASSES.items():
        stores[name] = MemoryStore()
        array = zarr.create_array(stores[name], shape=data.shape, chunks=(2, 2), dtype=str,
                                  filters=[codec_class(order=(1, 0))], compressors=None)
        array[...] = data
    assert chunk_files(stores["zarr"]) == chunk_files(stores["strided"])
    zarrs = read_with(stores["zarr"], "zarr").tolist()
    for written, read in itertools.product(CODEC_CLASSES, CODEC_CLASSES):
        assert read_with(stores[written], read).tolist() == zarrs


def test_non_numpy_chunk_takes_zarrs_route():
    """A chunk that is not a numpy array (a device array in real use) is zarr's lazy view."""
    class Wrapped(np.ndarray):
        pass

    nd = default_buffer_prototype().nd_buffer
    chunk = nd.from_ndarray_like(np.arange(6).reshape(2, 3).view(Wrapped))
    out = szarr.TransposeCodec(order=(1, 0))._encode_sync(chunk, None)
    assert type(out.as_ndarray_like()) is Wrapped
    np.testing.assert_array_equal(out.as_ndarray_like(), np.arange(6).reshape(2, 3).T)


@config_changing
@settings(max_examples=40)
@given(data=st_.data())
def test_both_ways_property(data):
    rank = data.draw(st_.integers(1, 5), label="rank")
    shape = tuple(data.draw(st_.lists(st_.integers(1, 6), min_size=rank, max_size=rank),
                            label="shape"))
    chunks = tuple(data.draw(st_.integers(1, n), label=f"chunk{axis}")
                   for axis, n in enumerate(shape))
    order = tuple(data.draw(st_.permutations(range(rank)), label="order"))
    dtype = data.draw(st_.sampled_from([*NUMERIC_DTYPES, "S3", ">u2"]), label="dtype")
    check_both_ways(sample(shape, dtype, seed=rank), chunks, order,
                    ndbuffer=data.draw(st_.booleans(), label="ndbuffer"))


@config_changing
def test_sharded_inner_chunks():
    """Inside sharding (the codec in a shard's inner pipeline), both ways."""
    data = sample((8, 6, 4), np.uint8, seed=5)
    stores = {}
    for name, codec_class in CODEC_CLASSES.items():
        stores[name] = MemoryStore()
        array = zarr.create_array(stores[name], shape=data.shape, chunks=(2, 3, 4),
                                  shards=(4, 6, 4), dtype=data.dtype,
                                  filters=[codec_class(order=(2, 0, 1))], compressors=None)
        array[...] = data
    assert chunk_files(stores["zarr"]) == chunk_files(stores["strided"])
    for written, read in itertools.product(CODEC_CLASSES, CODEC_CLASSES):
        np.testing.assert_array_equal(read_with(stores[written], read), data)


@config_changing
def test_partial_reads_and_writes():
    """Selections that cut chunks, and writes that merge into stored chunks."""
    data = sample((7, 9, 5), np.int16, seed=7)
    expected = data.copy()
    stores = {name: MemoryStore() for name in CODEC_CLASSES}
    for name, codec_class in CODEC_CLASSES.items():
        create(stores[name], data, (3, 4, 2), codec_class, (1, 2, 0))
    patch = sample((3, 4, 2), np.int16, seed=8)
    expected[2:5, 3:7, 1:3] = patch
    zarr.open_array(stores["zarr"])[2:5, 3:7, 1:3] = patch
    with szarr.use():
        zarr.open_array(stores["strided"])[2:5, 3:7, 1:3] = patch
        selected = zarr.open_array(stores["strided"])[1:6, ::2, 4]
    assert chunk_files(stores["zarr"]) == chunk_files(stores["strided"])
    np.testing.assert_array_equal(selected, expected[1:6, ::2, 4])
    np.testing.assert_array_equal(read_with(stores["strided"], "zarr"), expected)


@config_changing
@pytest.mark.parametrize("dtype", ["uint8", "S3"])
def test_fortran_ordered_arrays(dtype):
    """``config={"order": "F"}``: zarr's chunk buffers and results are Fortran-ordered (partial
    writes merge into them, reads assemble into them); the files and values are the same."""
    data = sample((5, 6, 4), dtype, seed=9)
    stores = {name: MemoryStore() for name in CODEC_CLASSES}
    for name, codec_class in CODEC_CLASSES.items():
        array = zarr.create_array(stores[name], shape=data.shape, chunks=(3, 4, 4),
                                  dtype=data.dtype, filters=[codec_class(order=(2, 0, 1))],
                                  compressors=None, config={"order": "F"})
        with szarr.use() if name == "strided" else contextlib.nullcontext():
            array[1:4, 2:5] = data[1:4, 2:5]
            array[...] = data
            array[0, :, 1:3] = data[0, :, 1:3]
    assert chunk_files(stores["zarr"]) == chunk_files(stores["strided"])
    with szarr.use():
        got = zarr.open_array(stores["zarr"], config={"order": "F"})[...]
    np.testing.assert_array_equal(got, data)


# --------------------------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("order", ["012", None, 3, [0, 1.0], [True, False], [0, "1"]])
def test_order_not_ints(order):
    with pytest.raises(TypeError, match=r"order must be a sequence of ints, got"):
        szarr.TransposeCodec(order=order)


@pytest.mark.parametrize("order", [[0, 0, 1], [1, 2], [-1, 0], [0, 2, 3, 1, 1]])
def test_order_not_a_permutation(order):
    with pytest.raises(ValueError, match=r"order must be a permutation of 0\.\.\d+ .*got "
                                         + repr(order).replace("[", r"\[").replace("]", r"\]")):
        szarr.TransposeCodec(order=order)


def test_order_of_another_rank():
    with pytest.raises(ValueError, match="order"):
        zarr.create_array(MemoryStore(), shape=(2, 3, 4), dtype="uint8",
                          filters=[szarr.TransposeCodec(order=(1, 0))])


def test_same_metadata_as_zarr():
    ours, theirs = szarr.TransposeCodec(order=[2, 0, 1]), ZarrTransposeCodec(order=[2, 0, 1])
    assert ours.to_dict() == theirs.to_dict()
    assert szarr.TransposeCodec.from_dict(theirs.to_dict()).order == (2, 0, 1)
    assert ours.resolve_metadata(_spec((2, 3, 4), np.uint8)).shape == (4, 2, 3)


# --------------------------------------------------------------------------------------------
# concurrency
# --------------------------------------------------------------------------------------------


@config_changing
def test_concurrent_multi_chunk_reads():
    """Many chunks decoded concurrently (zarr's async concurrency), from several threads at
    once (each a read of the whole array through zarr's one event loop)."""
    data = sample((24, 20, 3), np.uint8, seed=11)
    store = MemoryStore()
    create(store, data, (5, 6, 3), ZarrTransposeCodec, (1, 2, 0))
    results, errors = [], []

    def read():
        try:
            results.append(zarr.open_array(store, mode="r")[...])
        except Exception as error:  # reported below
            errors.append(error)

    with szarr.use(), zarr.config.set({"async.concurrency": 16}):
        threads = [threading.Thread(target=read) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    assert not errors and len(results) == 6
    for result in results:
        np.testing.assert_array_equal(result, data)


def test_codec_from_many_event_loops():
    """The codec's decode run at once from several threads, each with its own event loop (as
    zarr's async API allows), on large chunks (strided's threaded copy)."""
    codec = szarr.TransposeCodec(order=(1, 2, 0))
    chunks = [sample((3, 96, 128), np.uint8, seed=seed) for seed in range(4)]
    nd = default_buffer_prototype().nd_buffer
    encoded = [codec._encode_sync(nd.from_numpy_array(chunk), None) for chunk in chunks]
    spec = _spec((3, 96, 128), np.uint8)
    failures = []

    def decode_all(index):
        async def run():
            return await codec.decode([(encoded[index], spec)] * 8)
        for decoded in asyncio.run(run()):
            if not np.array_equal(decoded.as_numpy_array(), chunks[index]):
                failures.append(index)

    threads = [threading.Thread(target=decode_all, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not failures


# --------------------------------------------------------------------------------------------
# strided.zarr.NDBuffer
# --------------------------------------------------------------------------------------------


@settings(max_examples=60)
@given(data=st_.data())
def test_ndbuffer_assignment_is_numpys(data):
    shape = tuple(data.draw(st_.lists(st_.integers(1, 5), min_size=1, max_size=4)))
    dtype = data.draw(st_.sampled_from(["uint8", "float64", "complex128", "S3", ">i2"]))
    key = tuple(slice(data.draw(st_.integers(0, n - 1)), None,
                      data.draw(st_.integers(1, 2))) for n in shape)
    order = data.draw(st_.permutations(range(len(shape))))
    expected = np.zeros(shape, dtype)
    view_shape = expected[key].shape
    value = sample(tuple(view_shape[a] for a in np.argsort(order)), dtype).transpose(order)
    expected[key] = value
    out = szarr.NDBuffer.from_numpy_array(np.zeros(shape, dtype))
    out[key] = szarr.NDBuffer.from_numpy_array(value)
    np.testing.assert_array_equal(out.as_numpy_array(), expected)


def test_ndbuffer_falls_back_to_numpy():
    out = szarr.NDBuffer.from_numpy_array(np.zeros((3, 4), np.float32))
    out[[0, 2]] = np.ones((2, 4))                 # fancy index, another dtype
    out[1] = 7                                    # broadcast scalar
    out[np.array([False, True, False])] = 5       # boolean mask
    np.testing.assert_array_equal(out.as_numpy_array()[:, 0], [1, 5, 1])


# --------------------------------------------------------------------------------------------
# registration and selection
# --------------------------------------------------------------------------------------------


@config_changing
def test_zarrs_default_without_configuration_and_no_warning():
    """Installing strided registers a second ``transpose`` class; zarr keeps its own, and
    says nothing, until a configuration selects strided's."""
    from zarr.registry import get_codec_class

    data = sample((4, 5), np.uint8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in szarr.CODECS:
            assert get_codec_class(name).__module__.startswith("zarr.")
        store = MemoryStore()
        create(store, data, (2, 2), ZarrTransposeCodec, (1, 0))
        array = zarr.open_array(store)
        assert type(array.metadata.codecs[0]) is ZarrTransposeCodec
        np.testing.assert_array_equal(array[...], data)
    with zarr.config.set({"codecs.transpose": "strided.zarr.TransposeCodec"}):
        assert get_codec_class("transpose") is szarr.TransposeCodec
    with szarr.use():
        for name, cls in szarr.CODECS.items():
            assert get_codec_class(name) is cls
        assert zarr.config.get("ndbuffer") == "strided.zarr.NDBuffer"
        assert zarr.config.get("codecs.bytes") == "zarr.codecs.bytes.BytesCodec"
    assert get_codec_class("transpose") is ZarrTransposeCodec
    assert zarr.config.get("ndbuffer") == "zarr.buffer.cpu.NDBuffer"


def test_use_refuses_unknown_names():
    with pytest.raises(ValueError, match=r"names must be among .* got 'blosc'"):
        szarr.use("transpose", "blosc")
    with pytest.raises(TypeError, match=r"ndbuffer must be True or False, got 1"):
        szarr.use(ndbuffer=1)


def test_entry_points_find_strided_without_importing_it():
    """In a fresh interpreter, zarr finds strided's class through the package's entry points
    (no import of strided.zarr by the user) and uses it only when configured."""
    from importlib.metadata import entry_points

    if not any(e.value == "strided.zarr:TransposeCodec"
               for e in entry_points(group="zarr.codecs.transpose")):
        pytest.skip("the installed package metadata has no zarr entry points (stale install)")
    from isolated import run_isolated

    out = run_isolated("""
        import sys, warnings
        warnings.simplefilter("error")
        import zarr
        from zarr.registry import get_codec_class
        print(get_codec_class("transpose").__module__)
        with zarr.config.set({"codecs.transpose": "strided.zarr.TransposeCodec"}):
            print(get_codec_class("transpose").__module__)
        print(get_codec_class("numcodecs.astype").__module__)
    """, timeout=120)
    assert out.split() == ["zarr.codecs.transpose", "strided.zarr", "zarr.codecs.numcodecs._codecs"]


def test_missing_zarr_names_the_extra():
    """Without zarr, importing strided.zarr says which extra to install (and ``import
    strided`` alone never needs zarr)."""
    from isolated import run_isolated

    out = run_isolated("""
        import sys
        sys.modules["zarr"] = None            # as if zarr were not installed
        import strided
        import strided.copy
        try:
            import strided.zarr
        except ModuleNotFoundError as error:
            print(type(error).__name__, error.name, "|", error)
    """, timeout=120)
    assert out.strip() == ("ModuleNotFoundError zarr | strided.zarr needs zarr >= 3.1.3 (and its "
                           "numcodecs): pip install strided[zarr]")


# --------------------------------------------------------------------------------------------
# results on reused blocks (strided._buffers; its threshold lowered so small chunks use it)
# --------------------------------------------------------------------------------------------


@pytest.fixture
def pooled(monkeypatch):
    from strided import _buffers

    monkeypatch.setattr(_buffers, "POOLED_FROM", 256)
    monkeypatch.setattr(_buffers, "_POOL", _buffers._Pool(1 << 20))
    return _buffers._POOL


@config_changing
@pytest.mark.parametrize("order", [(1, 2, 0), (2, 0, 1), (0, 2, 1)])
def test_pooled_results_both_ways(pooled, order):
    """Chunk after chunk decoded and encoded onto reused blocks: the same stores and values."""
    check_both_ways(sample((9, 11, 5), np.float32, seed=7), (4, 6, 5), order, ndbuffer=False)
    assert pooled.free                                 # the blocks were given back


@config_changing
def test_a_pooled_decode_leaves_a_live_result_alone(pooled):
    codec = szarr.TransposeCodec(order=(1, 2, 0))
    first_chunk, second_chunk = sample((3, 16, 16), np.uint8, 1), sample((3, 16, 16), np.uint8, 2)
    spec = _spec((3, 16, 16), np.uint8)
    nd = default_buffer_prototype().nd_buffer.from_numpy_array

    def decoded(chunk):
        stored = np.ascontiguousarray(chunk.transpose(1, 2, 0))
        return codec._decode_sync(nd(stored), spec).as_ndarray_like()

    first = decoded(first_chunk)
    second = decoded(second_chunk)                      # first is alive: another block
    assert not np.shares_memory(first, second)
    np.testing.assert_array_equal(first, first_chunk)
    np.testing.assert_array_equal(second, second_chunk)
    where = first.ctypes.data
    del first
    third = decoded(first_chunk)                        # first's block, reused
    assert third.ctypes.data == where
    np.testing.assert_array_equal(third, first_chunk)
    np.testing.assert_array_equal(second, second_chunk)
