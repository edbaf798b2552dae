"""strided.dask against the same work written with dask's own operations.

Two parts, each timed side by side in one process, the contenders alternating round after
round (the median of each is printed, with its ratio to the dask-only pipeline):

1. **Engine overhead** (threaded scheduler, in-memory chunks persisted first, each result
   persisted, not concatenated): ``sd.relayout(x, "NCHW")`` of chunks already in that layout
   (a plain copy of every block: what strided.dask adds over dask's own per-block call, target
   <= 5 % over ``x.map_blocks(np.copy)``), and NCHW -> NHWC, ``sd.relayout(x, "NHWC")`` against
   ``x.transpose(0, 2, 3, 1).map_blocks(np.ascontiguousarray)``; the NHWC relayout with each
   block's copy on 2 strided threads too (``num_threads=2``: the default is 1, as dask runs a
   block per core already).
2. **End to end on a 2-worker LocalCluster** (processes, one thread each): a float32 NCHW zarr
   array of ``--size`` GiB (written first, not timed; uncompressed stores, so that the disk
   and the copies are timed, not zstd) -> NHWC written to a zarr array ``(N, H, W, C)``, and
   -> int8 NCHW32 (per-channel scale and shift) written to a zarr array, strided vs the same
   pipeline in dask's ``transpose``/arithmetic/``astype``/``map_blocks(numpy)`` (target >= 2x):
   strided's kernels inside dask's zarr I/O (``da.from_zarr``/``da.store``), and strided end
   to end (``sd.from_zarr``/``sd.to_zarr``: whole chunks read and written as their stored
   bytes). The stores are compared value for value once; the I/O floors (the source copied to
   a zarr array of its own layout, nothing relaid, through either I/O) are timed beside them.
   Peak RSS per worker is sampled by each worker's own memory monitor (distributed's
   SystemMonitor) during each run, and printed in chunks of the source (target <= 4 chunks
   above the idle worker).

    python benchmarks/bench_dask.py                    # 4 GiB end to end (minutes)
    python benchmarks/bench_dask.py --size 1 --rounds 3
    python benchmarks/bench_dask.py --quick            # a smoke run (seconds)
"""

from __future__ import annotations

import argparse
import logging
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import dask
import dask.array as da
import numpy as np
from harness.report import cpu_model

import strided.dask as sd

# --------------------------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------------------------


def paired(contenders: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    """Median seconds of each contender, run alternately (the order rotating each round)."""
    times: dict[str, list[float]] = {name: [] for name in contenders}
    names = list(contenders)
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            t0 = time.perf_counter()
            contenders[name]()
            times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(t) for name, t in times.items()}


def table(title: str, medians: dict[str, float], baseline: str, nbytes: int,
          extra: dict[str, str] | None = None) -> str:
    lines = [title, f"  {'contender':<54} {'median ms':>10} {'GB/s':>7} {'ratio':>7}"]
    for name, t in medians.items():
        ratio = medians[baseline] / t
        note = f"  {extra[name]}" if extra and name in extra else ""
        lines.append(f"  {name:<54} {t * 1e3:>10.1f} {nbytes / t / 1e9:>7.2f} "
                     f"{ratio:>6.2f}x{note}")
    lines.append(f"  (ratio: {baseline!r} time / contender time; > 1 is faster)")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Part 1: engine overhead, threaded scheduler
# --------------------------------------------------------------------------------------------


def overhead(mib: int, rounds: int) -> str:
    n = max(1, (mib << 20) // (4 * 64 * 128 * 128))
    a = np.random.default_rng(0).standard_normal((n, 64, 128, 128)).astype(np.float32)
    with dask.config.set(scheduler="threads"):
        x = da.from_array(a, chunks=(1, 64, 128, 128)).persist()   # chunks of 4 MiB in memory

        def run(y: da.Array) -> Callable[[], object]:
            return y.persist

        copies = {
            "dask: x.map_blocks(np.copy)": run(x.map_blocks(np.copy)),
            "strided: sd.relayout(x, 'NCHW') (same layout)": run(sd.relayout(x, "NCHW")),
        }
        same = paired(copies, rounds)
        transposes = {
            "dask: transpose + map_blocks(np.ascontiguousarray)":
                run(x.transpose(0, 2, 3, 1).map_blocks(np.ascontiguousarray)),
            "strided: sd.relayout(x, 'NHWC')": run(sd.relayout(x, "NHWC")),
            "strided: sd.relayout(x, 'NHWC', num_threads=2)":
                run(sd.relayout(x, "NHWC", num_threads=2)),
        }
        nhwc = paired(transposes, rounds)
    chunks = f"{n} chunks of 4 MiB, float32 (N, 64, 128, 128), threaded scheduler"
    overhead_pct = (same["strided: sd.relayout(x, 'NCHW') (same layout)"]
                    / same["dask: x.map_blocks(np.copy)"] - 1) * 100
    return "\n\n".join([
        table(f"1a. copy of in-memory chunks ({chunks})", same,
              "dask: x.map_blocks(np.copy)", a.nbytes)
        + f"\n  strided.dask overhead over map_blocks(np.copy): {overhead_pct:+.1f} % "
          f"(target <= 5 %)",
        table(f"1b. NCHW -> NHWC of in-memory chunks ({chunks})", nhwc,
              "dask: transpose + map_blocks(np.ascontiguousarray)", a.nbytes),
    ])


# --------------------------------------------------------------------------------------------
# Part 2: end to end on a LocalCluster, zarr to zarr
# --------------------------------------------------------------------------------------------

CHANNELS = 64


def _formula(block_info=None):
    """A cheap deterministic source block (the source store's content)."""
    where = block_info[None]["array-location"]
    n, c, h, w = np.ix_(*(np.arange(a, b, dtype=np.int32) for a, b in where))
    return (((n * 7 + c * 13 + h * 3 + w) % 251).astype(np.float32) - 125) * np.float32(0.37)


def _numpy_quantize(block: np.ndarray, scale: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """int8 of ``rint(x * scale + shift)`` in float32, saturated: numpy, one block."""
    t = block * scale[None, :, None, None]
    t += shift[None, :, None, None]
    np.rint(t, out=t)
    np.clip(t, -128, 127, out=t)
    return t.astype(np.int8)


def _memory_now(dask_worker) -> tuple[float, int]:
    """(the worker's clock, its RSS now)."""
    return time.time(), dask_worker.monitor.get_process_memory()


def _peak_memory(dask_worker, since: float) -> int:
    """The largest RSS the worker's monitor sampled after ``since`` (its own clock)."""
    q = dask_worker.monitor.quantities
    return max((m for t, m in zip(q["time"], q["memory"]) if t >= since), default=0)


def end_to_end(size_gib: float, rounds: int, folder: Path, side: int = 512) -> str:
    import zarr
    from distributed import Client, LocalCluster

    image = 4 * CHANNELS * side * side                 # 64 MiB at 512 x 512
    n = max(1, round(size_gib * 2**30 / image))
    shape, chunks = (n, CHANNELS, side, side), (1, CHANNELS, side // 2, side)   # half images
    chunk_bytes = image // 2
    scale = np.linspace(0.5, 1.5, CHANNELS).astype(np.float32)
    shift = np.round(np.linspace(-4, 4, CHANNELS)).astype(np.float32)
    with dask.config.set({"distributed.admin.system-monitor.interval": "50ms"}):
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                               memory_limit="4GiB", dashboard_address=":0",
                               silence_logs=logging.ERROR)
    client = Client(cluster)
    try:
        def store(name: str, shape: tuple[int, ...], chunks: tuple[int, ...], dtype: str):
            return zarr.create_array(zarr.storage.LocalStore(folder / name), shape=shape,
                                     chunks=chunks, dtype=dtype, compressors=None,
                                     overwrite=True)

        source = store("source.zarr", shape, chunks, "float32")
        da.store(da.map_blocks(_formula, chunks=da.core.normalize_chunks(chunks, shape),
                               dtype=np.float32, meta=np.empty((0,) * 4, np.float32)),
                 source, lock=False)
        x = da.from_zarr(source)
        nhwc_shape, nhwc_chunks = (n, side, side, CHANNELS), (1, side // 2, side, CHANNELS)
        q_shape = (n, CHANNELS // 32, side, side, 32)
        q_chunks = (1, CHANNELS // 32, side // 2, side, 32)

        def to_nhwc_dask() -> None:
            da.store(x.transpose(0, 2, 3, 1).map_blocks(np.ascontiguousarray),
                     store("nhwc_d.zarr", nhwc_shape, nhwc_chunks, "float32"), lock=False)

        def to_nhwc_strided_in_dask_io() -> None:
            da.store(sd.relayout(x, "NHWC").transpose(0, 2, 3, 1),
                     store("nhwc_k.zarr", nhwc_shape, nhwc_chunks, "float32"), lock=False)

        def to_nhwc_strided() -> None:
            sd.to_zarr(sd.relayout(sd.from_zarr(source), "NHWC").transpose(0, 2, 3, 1),
                       store("nhwc_s.zarr", nhwc_shape, nhwc_chunks, "float32"))

        def copy_only() -> None:     # the floor: the same bytes read and written, no relayout
            da.store(x, store("copy.zarr", shape, chunks, "float32"), lock=False)

        def copy_only_strided_io() -> None:
            sd.to_zarr(sd.from_zarr(source), store("copy_s.zarr", shape, chunks, "float32"))

        def to_q_dask() -> None:
            q = x.map_blocks(_numpy_quantize, scale, shift, dtype=np.int8)
            blocked = q.reshape(n, CHANNELS // 32, 32, side, side, merge_chunks=False)
            da.store(blocked.transpose(0, 1, 3, 4, 2).map_blocks(np.ascontiguousarray),
                     store("q_d.zarr", q_shape, q_chunks, "int8"), lock=False)

        def to_q_strided_in_dask_io() -> None:
            da.store(sd.to_blocked(x, "NCHW32", dtype=np.int8, scale=scale, shift=shift),
                     store("q_k.zarr", q_shape, q_chunks, "int8"), lock=False)

        def to_q_strided() -> None:
            sd.to_blocked(sd.from_zarr(source), "NCHW32", dtype=np.int8, scale=scale,
                          shift=shift, out=store("q_s.zarr", q_shape, q_chunks, "int8"))

        peaks: dict[str, list[int]] = {}
        idle = max(m for _, m in client.run(_memory_now).values())

        def sampled(name: str, fn: Callable[[], None], out: str) -> Callable[[], None]:
            """fn timed with its workers' peak memory; its store deleted after each run, so
            that the stores on disk stay within the page cache (the source and one output)."""
            def run() -> None:
                since = min(t for t, _ in client.run(_memory_now).values())
                fn()
                peak = max(client.run(_peak_memory, since=since).values())
                peaks.setdefault(name, []).append(peak)
                shutil.rmtree(folder / out)
            return run

        def same_values(contenders: dict[str, tuple[Callable[[], None], str, str]]) -> bool:
            """Run each contender once (untimed, the warm-up too) and compare its store with
            the one it must equal, value for value; delete them."""
            ok = True
            references = {like for _, _, like in contenders.values()}
            for fn, out, like in contenders.values():     # (each reference comes first)
                fn()
                ok &= bool((da.from_zarr(store_path(folder, out))
                            == da.from_zarr(store_path(folder, like))).all().compute())
                if out not in references:      # one store beside the references at a time
                    shutil.rmtree(folder / out)
            for out in references - {"source.zarr"}:
                shutil.rmtree(folder / out)
            return ok

        # name: (run, its store, the store it must equal)
        nhwc = {NHWC_DASK: (to_nhwc_dask, "nhwc_d.zarr", "nhwc_d.zarr"),
                "strided kernel, dask's zarr I/O (da.from_zarr/store)":
                    (to_nhwc_strided_in_dask_io, "nhwc_k.zarr", "nhwc_d.zarr"),
                "strided: sd.from_zarr -> relayout -> sd.to_zarr":
                    (to_nhwc_strided, "nhwc_s.zarr", "nhwc_d.zarr"),
                "floor: no relayout, da.from_zarr -> da.store":
                    (copy_only, "copy.zarr", "source.zarr"),
                "floor: no relayout, sd.from_zarr -> sd.to_zarr":
                    (copy_only_strided_io, "copy_s.zarr", "source.zarr")}
        quant = {Q_DASK: (to_q_dask, "q_d.zarr", "q_d.zarr"),
                 "strided kernel, dask's zarr I/O (da.from_zarr/store)":
                     (to_q_strided_in_dask_io, "q_k.zarr", "q_d.zarr"),
                 "strided: to_blocked(sd.from_zarr(z), out=zarr)":
                     (to_q_strided, "q_s.zarr", "q_d.zarr")}
        same = [same_values(nhwc), same_values(quant)]
        t_nhwc = paired({k: sampled(k, f, o) for k, (f, o, _) in nhwc.items()}, rounds)
        t_quant = paired({k: sampled(k, f, o) for k, (f, o, _) in quant.items()}, rounds)
    finally:
        client.close()
        cluster.close()

    def memory(name: str) -> str:
        peak = max(peaks[name])
        return (f"peak RSS/worker {peak / 2**20:.0f} MiB = idle + "
                f"{(peak - idle) / chunk_bytes:.1f} chunks")

    nbytes = 4 * int(np.prod(shape))
    where = (f"{nbytes / 2**30:.2f} GiB float32 {shape} in zarr chunks of "
             f"{chunk_bytes >> 20} MiB, 2 worker processes x 1 thread, uncompressed stores; "
             f"idle worker RSS {idle / 2**20:.0f} MiB")
    return "\n\n".join([
        table(f"2a. zarr NCHW -> zarr NHWC (N, H, W, C) ({where})", t_nhwc,
              NHWC_DASK, nbytes, {k: memory(k) for k in nhwc})
        + f"\n  same values in every store: {same[0]}",
        table(f"2b. zarr NCHW float32 -> zarr int8 NCHW32, per-channel scale/shift ({where})",
              t_quant, Q_DASK, nbytes, {k: memory(k) for k in quant})
        + f"\n  same values in every store: {same[1]}",
    ])


NHWC_DASK = "dask: transpose + map_blocks(np.ascontiguousarray)"
Q_DASK = "dask: map_blocks(numpy quantize) + reshape/transpose"


def store_path(folder: Path, name: str):
    import zarr

    return zarr.open_array(zarr.storage.LocalStore(folder / name), mode="r")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=float, default=4.0,
                        help="GiB of the end-to-end source array (default 4)")
    parser.add_argument("--mib", type=int, default=256,
                        help="MiB of the in-memory overhead array (default 256)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds of the end-to-end part (default 3)")
    parser.add_argument("--overhead-rounds", type=int, default=15)
    parser.add_argument("--dir", type=Path, default=None,
                        help="folder for the zarr stores (default: a temporary one, deleted)")
    parser.add_argument("--quick", action="store_true", help="a smoke run (seconds)")
    parser.add_argument("--skip-cluster", action="store_true", help="part 1 only")
    args = parser.parse_args(argv)
    if args.quick:
        args.size, args.mib, args.rounds, args.overhead_rounds = 1 / 128, 8, 1, 3
    print(f"CPU: {cpu_model()}; dask {dask.__version__}")
    print(overhead(args.mib, args.overhead_rounds))
    if args.skip_cluster:
        return 0
    folder = Path(tempfile.mkdtemp(prefix="bench_dask_", dir=args.dir))
    try:
        print()
        print(end_to_end(args.size, args.rounds, folder, side=128 if args.quick else 512))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
