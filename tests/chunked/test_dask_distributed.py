"""strided.dask on a real ``dask.distributed.LocalCluster`` of worker processes (spawned, as
distributed starts them by default; forked too): strided runs inside the workers, everything in
the graph pickles, results are bit-exact; a zarr v3 store on local disk written by the workers;
and (``slow``) a 4 GiB float32 array through workers limited to 512 MiB each, quantized into
int8 NCHW32 and read back, and a worker killed mid-computation.

Every wait has a timeout, so a cluster that cannot start or hangs fails the test, not CI.
"""

from __future__ import annotations

import logging
import os
import sys
import time

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")

import cloudpickle  # noqa: E402  (distributed's own dependency)
from isolated import run_on_third_party_workers  # noqa: E402

import strided as st  # noqa: E402
import strided.dask as sd  # noqa: E402

# The block formulas below are this module's functions: the workers cannot import a test
# module, so they travel by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

pytestmark = pytest.mark.thread_unsafe(reason="starts and shares a cluster of processes")

WAIT = 120            # seconds: the longest any start, compute or close may take here
MEMORY_LIMIT = 512 * 2**20


def start_cluster(method: str = "spawn", memory_limit: int = MEMORY_LIMIT):
    """A 2-worker LocalCluster (processes, one thread each) and its client, quiet."""
    with dask.config.set({"distributed.worker.multiprocessing-method": method,
                          "distributed.admin.tick.limit": "30s"}):
        cluster = distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, memory_limit=memory_limit,
            dashboard_address=":0", silence_logs=logging.ERROR, timeout=WAIT,
            worker_dashboard_address=None)
        client = distributed.Client(cluster, timeout=WAIT)
    return cluster, client


def close(cluster, client):
    client.close(timeout=WAIT)
    cluster.close(timeout=WAIT)


@pytest.fixture(scope="module")
def client():
    cluster, client = start_cluster()
    try:
        yield client
    finally:
        close(cluster, client)


def compute(client, *arrays):
    return client.compute(list(arrays), sync=False)


def gather(client, *arrays):
    return [f.result(timeout=WAIT) for f in client.compute(list(arrays))]


def values(shape, dtype=np.float32, seed=0):
    return (np.random.default_rng(seed).standard_normal(shape) * 50).astype(dtype)


# --------------------------------------------------------------------------------------------
# Bit-exact on worker processes
# --------------------------------------------------------------------------------------------


def _imported_in_worker():
    return "strided._copy" in sys.modules and "strided.dask" in sys.modules


def test_every_call_on_spawned_workers(client):
    a = values((4, 10, 6, 5))
    x = da.from_array(a, chunks=(2, 4, 4, 5))
    scale, shift = np.linspace(0.5, 2, 10), np.round(np.linspace(-3, 3, 10))
    q_ref = st.to_blocked(a, "NCHW4", dtype=np.int8, scale=scale, shift=shift)
    relaid, cast, blocked, back = gather(
        client,
        sd.relayout(x, "NHWC", dtype=np.float16, scale=scale, axis=1),
        sd.astype(x, np.uint8, mean=0.1, std=scale, axis=1),
        sd.to_blocked(x, "NCHW4", dtype=np.int8, scale=scale, shift=shift),
        sd.from_blocked(da.from_array(q_ref, chunks=(1, 2, 3, 5, 4)), "NCHW4", channels=10,
                        dtype=np.float32, scale=1 / scale, shift=-shift / scale))
    assert np.array_equal(relaid, st.relayout(a, "NHWC", dtype=np.float16, scale=scale, axis=1))
    assert np.array_equal(cast, st.relayout(a, "C", dtype=np.uint8, mean=0.1, std=scale,
                                            axis=1))
    assert np.array_equal(blocked, q_ref)
    assert np.array_equal(back, st.from_blocked(q_ref, "NCHW4", channels=10, dtype=np.float32,
                                                scale=1 / scale, shift=-shift / scale))
    assert all(client.run(_imported_in_worker, workers=None).values())
    assert "strided.dask" in sys.modules   # (and here: the client built the graph)


def test_out_numpy_is_filled_from_workers(client):
    """On worker processes a task cannot reach the caller's array: the blocks come back and
    strided copies each into its region."""
    a = values((3, 6, 8, 8))
    x = da.from_array(a, chunks=(1, 3, 4, 8))
    out = st.relayout(np.empty_like(a), "NHWC")
    assert sd.relayout(x, "NHWC", scale=2.0, out=out) is out
    assert np.array_equal(out, st.relayout(a, "NHWC", scale=2.0))
    q = np.empty((3, 1, 8, 8, 8), np.int8)
    sd.to_blocked(x.rechunk({1: 6}), "NCHW8", dtype=np.int8, out=q)
    assert np.array_equal(q, st.to_blocked(a, "NCHW8", dtype=np.int8))


def test_zarr_store_written_by_the_workers(client, tmp_path):
    zarr = pytest.importorskip("zarr")
    a = values((4, 32, 16, 16))
    x = da.from_array(a, chunks=(2, 32, 8, 16))
    scale = np.linspace(0.2, 2, 32)
    store = zarr.open_array(zarr.storage.LocalStore(tmp_path / "q.zarr"), mode="w",
                            shape=(4, 1, 16, 16, 32), chunks=(2, 1, 8, 16, 32), dtype="int8")
    sd.to_blocked(x, "NCHW32", dtype=np.int8, scale=scale, out=store)
    expected = st.to_blocked(a, "NCHW32", dtype=np.int8, scale=scale)
    assert np.array_equal(store[...], expected)
    back = sd.from_blocked(da.from_zarr(store), "NCHW32", channels=32, dtype=np.float32,
                           scale=1 / scale)
    (got,) = gather(client, back)
    assert np.array_equal(got, st.from_blocked(expected, "NCHW32", channels=32,
                                               dtype=np.float32, scale=1 / scale))


def test_zarr_to_zarr_through_the_stored_bytes_on_workers(client, tmp_path):
    """sd.from_zarr -> relayout -> sd.to_zarr: the workers read and write the chunk files."""
    zarr = pytest.importorskip("zarr")
    a = values((4, 8, 16, 12))
    source = zarr.create_array(zarr.storage.LocalStore(tmp_path / "s.zarr"), shape=a.shape,
                               chunks=(1, 8, 8, 12), dtype="float32", compressors=None)
    source[...] = a
    nhwc = zarr.create_array(zarr.storage.LocalStore(tmp_path / "d.zarr"), shape=(4, 16, 12, 8),
                             chunks=(1, 8, 12, 8), dtype="float16", compressors=None)
    relaid = sd.relayout(sd.from_zarr(source), "NHWC", dtype=np.float16, scale=0.5)
    gather(client, sd.to_zarr(relaid.transpose(0, 2, 3, 1), nhwc, compute=False))
    assert np.array_equal(nhwc[...], (a * 0.5).astype(np.float16).transpose(0, 2, 3, 1))


def test_out_numpy_on_the_multiprocessing_scheduler():
    """dask's own process pool (no distributed): the blocks come back one by one into out. In
    a fresh interpreter under a deadline: that pool waits with no timeout of its own."""
    out = run_on_third_party_workers("""
        import dask, numpy as np
        import dask.array as da
        import strided as st, strided.dask as sd
        from test_dask_distributed import values
        a = values((2, 8, 6, 6))
        x = da.from_array(a, chunks=(1, 4, 6, 6))
        out = np.empty((2, 8, 6, 6), np.float16, order="F")
        with dask.config.set(scheduler="processes", num_workers=2):
            sd.astype(x, np.float16, scale=np.linspace(1, 2, 8), axis=1, out=out)
        assert np.array_equal(out, st.relayout(a, "C", dtype=np.float16,
                                               scale=np.linspace(1, 2, 8), axis=1))
        print("same values")
    """)
    assert out.strip() == "same values"


@pytest.mark.skipif(sys.platform != "linux", reason="fork: Linux only")
def test_forked_workers():
    cluster, client = start_cluster("fork")
    try:
        a = values((2, 8, 6, 6), np.uint8)
        x = da.from_array(a, chunks=(1, 8, 3, 6))
        (got,) = gather(client, sd.to_blocked(x, "NCHW8", dtype=np.float32, mean=0.5,
                                              std=np.linspace(0.1, 1, 8)))
        assert np.array_equal(got, st.to_blocked(a, "NCHW8", dtype=np.float32, mean=0.5,
                                                 std=np.linspace(0.1, 1, 8)))
    finally:
        close(cluster, client)


# --------------------------------------------------------------------------------------------
# Out of core (slow): 4 GiB through two workers of 512 MiB
# --------------------------------------------------------------------------------------------

# (N, C, H, W) float32 of 4 GiB, in chunks of 32 MiB (one image a chunk: C whole, H halved)
BIG = (64, 64, 512, 512)
BIG_CHUNKS = (1, 64, 256, 512)
SCALE = np.linspace(0.5, 1.5, 64)
SHIFT = np.round(np.linspace(-4, 4, 64))


def formula(block_info=None):
    """The source, never materialised: a cheap deterministic function of the index."""
    where = block_info[None]["array-location"]
    n, c, h, w = (np.arange(a, b, dtype=np.int32) for a, b in where)
    n, c, h, w = np.ix_(n, c, h, w)
    return (((n * 7 + c * 13 + h * 3 + w) % 251).astype(np.float32) - 125) * np.float32(0.37)


def source(shape=BIG, chunks=BIG_CHUNKS):
    return da.map_blocks(formula, chunks=da.core.normalize_chunks(chunks, shape),
                         dtype=np.float32, meta=np.empty((0,) * 4, np.float32))


def quantized_by_numpy(block, scale, shift):
    """int8 NCHW32 of a float32 NCHW block, by numpy alone (C a multiple of 32 here)."""
    t = block * scale[None, :, None, None].astype(np.float32)
    t = t + shift[None, :, None, None].astype(np.float32)
    q = np.clip(np.rint(t), -128, 127).astype(np.int8)
    n, c, h, w = q.shape
    return q.reshape(n, c // 32, 32, h, w).transpose(0, 1, 3, 4, 2)


def mismatches(stored, block_info=None):
    """Elements of a stored int8 NCHW32 block that are not the numpy formula's."""
    (n0, n1), (b0, b1), (h0, h1), (w0, w1), _ = block_info[0]["array-location"]
    info = {None: {"array-location": [(n0, n1), (b0 * 32, b1 * 32), (h0, h1), (w0, w1)]}}
    expected = quantized_by_numpy(formula(info), SCALE[b0 * 32:b1 * 32],
                                  SHIFT[b0 * 32:b1 * 32])
    return np.array([[[[[np.count_nonzero(stored != expected)]]]]])


def dequantize_mismatches(restored, block_info=None):
    """Elements of a dequantized float32 NCHW block that are not ``(q - shift) / scale``."""
    where = block_info[0]["array-location"]
    c0, c1 = where[1]
    q = quantized_by_numpy(formula({None: {"array-location": where}}), SCALE[c0:c1],
                           SHIFT[c0:c1])
    n, b, h, w, x = q.shape
    q = q.transpose(0, 1, 4, 2, 3).reshape(n, b * x, h, w)
    scale = (1 / SCALE[c0:c1]).astype(np.float32)[None, :, None, None]
    shift = (-SHIFT[c0:c1] / SCALE[c0:c1]).astype(np.float32)[None, :, None, None]
    expected = q.astype(np.float32) * scale + shift
    return np.array([[[[np.count_nonzero(restored != expected)]]]])


def worker_memory(dask_worker):
    """(peak RSS sampled by the worker's monitor, bytes spilled to disk) of one worker."""
    peak = max(dask_worker.monitor.quantities["memory"], default=0)
    spilled = getattr(dask_worker.data, "spilled_total", None)
    return peak, (spilled.disk if spilled is not None else 0)


@pytest.mark.slow
def test_four_gib_through_512_mib_workers(tmp_path):
    zarr = pytest.importorskip("zarr")
    cluster, client = start_cluster()
    try:
        workers = set(client.scheduler_info()["workers"])
        x = source()
        assert x.nbytes == 4 * 2**30 and x.nbytes > 4 * MEMORY_LIMIT
        store = zarr.create_array(zarr.storage.LocalStore(tmp_path / "q.zarr"),
                                  shape=(64, 2, 512, 512, 32), chunks=(1, 2, 256, 512, 32),
                                  dtype="int8", compressors=None)
        t0 = time.perf_counter()
        sd.to_blocked(x, "NCHW32", dtype=np.int8, scale=SCALE, shift=SHIFT, out=store)
        written = time.perf_counter() - t0
        stored = da.from_zarr(store)
        bad = stored.map_blocks(mismatches, chunks=((1,) * 64, (1,), (1, 1), (1,), (1,)),
                                dtype=np.int64)
        restored = sd.from_blocked(stored, "NCHW32", channels=64, dtype=np.float32,
                                   scale=1 / SCALE, shift=-SHIFT / SCALE)
        bad_back = restored.map_blocks(dequantize_mismatches, dtype=np.int64,
                                       chunks=((1,) * 64, (1,), (1, 1), (1,)))
        counts = gather(client, bad.sum(), bad_back.sum())
        assert counts == [0, 0]
        assert set(client.scheduler_info()["workers"]) == workers      # none killed
        memory = client.run(worker_memory)
        print(f"\n4 GiB -> int8 NCHW32 zarr in {written:.1f} s; per worker (peak RSS, "
              f"spilled bytes): {memory}")
        for peak, spilled in memory.values():
            assert spilled == 0
            assert peak < MEMORY_LIMIT
    finally:
        close(cluster, client)


# --------------------------------------------------------------------------------------------
# A worker killed mid-computation (slow: a worker restarts)
# --------------------------------------------------------------------------------------------


def dying_once(marker, block_info=None):
    """The source's formula, except that the first worker to compute block (1, 0, 0, 0) dies
    (once: a marker file remembers it)."""
    if block_info[None]["chunk-location"] == (1, 0, 0, 0) and not os.path.exists(marker):
        open(marker, "w").close()
        os._exit(1)
    return formula(block_info)


@pytest.mark.slow
def test_a_killed_worker_is_retried_with_the_same_bytes(tmp_path):
    zarr = pytest.importorskip("zarr")
    shape, chunks = (4, 64, 128, 128), (1, 64, 64, 128)
    marker = str(tmp_path / "died")
    x = da.map_blocks(dying_once, marker, chunks=da.core.normalize_chunks(chunks, shape),
                      dtype=np.float32, meta=np.empty((0,) * 4, np.float32))
    expected = st.to_blocked(source(shape, chunks).compute(scheduler="threads"), "NCHW32",
                             dtype=np.int8, scale=SCALE, shift=SHIFT)
    cluster, client = start_cluster()
    try:
        store = zarr.create_array(zarr.storage.LocalStore(tmp_path / "q.zarr"),
                                  shape=expected.shape, chunks=(1, 2, 64, 128, 32),
                                  dtype="int8", compressors=None)
        sd.to_blocked(x, "NCHW32", dtype=np.int8, scale=SCALE, shift=SHIFT, out=store)
        assert os.path.exists(marker)            # a worker did die
        assert np.array_equal(store[...], expected)
    finally:
        close(cluster, client)
