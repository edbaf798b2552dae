"""strided.zarr's codecs against zarr-python's own, side by side in one process.

Every contender of a case runs three times to warm up, then the contenders alternate, round after
round (the order reversed every other round); the median of each is printed with its ratio to
zarr-python's (``x faster`` > 1: strided is faster). Each result is checked against zarr's
byte for byte before timing.

**transpose** (order ``(1, 2, 0)``: a planar ``(3, H, W)`` chunk stored channels-last; the
uint8 ``(3, 4096, 4096)`` chunk of issue 26; a float32 chunk of the same bytes; and NCHW
images stored NHWC, order ``(0, 2, 3, 1)``), each measured three ways:

- ``decode``: the codec's decode of one chunk, to a materialised array. zarr-python's decode
  returns a strided view and copies nothing; whoever uses the chunk copies it (zarr's read,
  into its result), so its row is the decode followed by that numpy copy
  (``np.ascontiguousarray``). strided's decode is the materialised chunk. **The target of
  issue 26 (>= 3x) is about this row**: the work of turning a stored chunk into the array.
  Chunk after chunk, as a read decodes them: strided's codecs put results of 32 MiB and more
  on blocks they reuse once the previous result is gone (``strided._buffers``), where numpy's
  arrays of that size are fresh pages the kernel zeroes at first touch.
- ``decode, fresh pages``: the same with strided's block reuse off (``reuse_limit(0)``): every
  result in fresh pages, for both contenders (a process's first chunk; chunks under 32 MiB
  are reused by glibc's heap for both anyway).
- ``encode``: the codec's encode, materialised the same way (zarr's bytes codec ravels the
  view it gets: a numpy copy).
- ``read arr[...]`` / ``write arr[...] = x``: the whole array through zarr from a MemoryStore
  (one chunk, uncompressed), with zarr's defaults against ``strided.zarr.use()`` (strided's
  codec and its NDBuffer: the decoded view is copied once, by strided, into zarr's result),
  and, for reads, ``use(ndbuffer=False)`` (strided's codec alone: it materialises the chunk,
  which zarr then copies into its result with numpy, a second pass); ``read into out=``: the
  same read into a result buffer made once and reused (``get_basic_selection(..., out=)``,
  as a data loader does), where no fresh pages have to be zeroed by the kernel first (about
  half of strided's time in a fresh result, a cost both contenders pay).

**numcodecs.fixedscaleoffset** (float32 -> uint8, offset 0, scale 128: one strided pass a
slab to encode, strided's affine pass to decode; float32 -> int8, offset 0.5, scale 100: two
passes a slab, decoded through the table of the reference's 256 values; float64 -> int16,
the reference's route both ways) and **numcodecs.astype** (float32 <-> float16), encode and
decode of one chunk, against zarr's numcodecs codecs.

    python benchmarks/bench_zarr.py                # the issue's sizes (a minute)
    python benchmarks/bench_zarr.py --rounds 21
    python benchmarks/bench_zarr.py --target       # the issue's uint8 case alone
    python benchmarks/bench_zarr.py --quick        # a smoke run (seconds)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import zarr
from harness.report import cpu_model
from zarr.codecs import TransposeCodec as ZarrTransposeCodec
from zarr.codecs.numcodecs import AsType as ZarrAsType
from zarr.codecs.numcodecs import FixedScaleOffset as ZarrFixedScaleOffset
from zarr.core.array_spec import ArrayConfig, ArraySpec
from zarr.core.buffer import default_buffer_prototype
from zarr.dtype import parse_dtype

import strided
import strided.zarr as szarr
from strided import _buffers

Way = Callable[[], Any]


def measure(ways: dict[str, Way], rounds: int) -> dict[str, float]:
    """Median seconds of each way: three warm-up calls each (the first large allocations of
    a process are slower, whoever makes them), then ``rounds`` rounds, the ways alternating
    (their order reversed every other round)."""
    for _ in range(3):
        for way in ways.values():
            way()
    times: dict[str, list[float]] = {name: [] for name in ways}
    for r in range(rounds):
        for name in (list(ways) if r % 2 == 0 else list(ways)[::-1]):
            start = time.perf_counter()
            ways[name]()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(ts) for name, ts in times.items()}


def row(case: str, what: str, medians: dict[str, float], baseline: str) -> list[str]:
    """Markdown rows: each way's median and its speed-up over ``baseline``."""
    base = medians[baseline]
    return [f"| {case} | {what} | {name} | {t * 1e3:.2f} | {base / t:.2f} |"
            for name, t in medians.items()]


def spec(shape: tuple[int, ...], dtype: Any) -> ArraySpec:
    return ArraySpec(shape=shape, dtype=parse_dtype(np.dtype(dtype), zarr_format=3),
                     fill_value=0, config=ArrayConfig(order="C", write_empty_chunks=True),
                     prototype=default_buffer_prototype())


def nd(array: np.ndarray) -> Any:
    return default_buffer_prototype().nd_buffer.from_numpy_array(array)


def same(a: Any, b: Any) -> None:
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype
    assert np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


# --------------------------------------------------------------------------------------------
# transpose
# --------------------------------------------------------------------------------------------


def transpose_rows(name: str, chunk: np.ndarray, order: tuple[int, ...], rounds: int
                   ) -> tuple[list[str], float]:
    """The transpose case's rows, and the speed-up of strided's materialised decode."""
    ours, theirs = szarr.TransposeCodec(order=order), ZarrTransposeCodec(order=order)
    stored = np.ascontiguousarray(chunk.transpose(order))
    stored_spec = spec(chunk.shape, chunk.dtype)
    decoded_by = {
        "zarr-python (view + numpy copy)": lambda: np.ascontiguousarray(
            theirs._decode_sync(nd(stored), stored_spec).as_ndarray_like()),
        "strided": lambda: ours._decode_sync(nd(stored), stored_spec).as_ndarray_like(),
    }
    encoded_by = {
        "zarr-python (view + numpy copy)": lambda: np.ascontiguousarray(
            theirs._encode_sync(nd(chunk), stored_spec).as_ndarray_like()),
        "strided": lambda: ours._encode_sync(nd(chunk), stored_spec).as_ndarray_like(),
    }
    for ways, expected in ((decoded_by, chunk), (encoded_by, stored)):
        for way in ways.values():
            same(way(), expected)
    rows = row(name, "decode", decode_times := measure(decoded_by, rounds),
               "zarr-python (view + numpy copy)")
    previous = _buffers.reuse_limit(0)
    try:
        rows += row(name, "decode, fresh pages", measure(decoded_by, rounds),
                    "zarr-python (view + numpy copy)")
    finally:
        _buffers.reuse_limit(previous)
    rows += row(name, "encode", measure(encoded_by, rounds), "zarr-python (view + numpy copy)")
    rows += store_rows(name, chunk, theirs, rounds)
    speedup = decode_times["zarr-python (view + numpy copy)"] / decode_times["strided"]
    return rows, speedup


def store_rows(name: str, chunk: np.ndarray, codec: ZarrTransposeCodec, rounds: int
               ) -> list[str]:
    """Whole-array reads and writes through zarr: its defaults against strided's."""
    store = zarr.storage.MemoryStore()
    array = zarr.create_array(store, shape=chunk.shape, chunks=chunk.shape, dtype=chunk.dtype,
                              filters=[codec], compressors=None)
    array[...] = chunk
    zarrs = zarr.open_array(store)
    with szarr.use():
        strideds = zarr.open_array(store)

    def read_strided(ndbuffer: bool) -> Way:
        def read() -> Any:
            with szarr.use(ndbuffer=ndbuffer):
                return strideds[...]
        return read

    def write_strided() -> None:
        with szarr.use():
            strideds[...] = chunk

    reads = {"zarr-python": lambda: zarrs[...], "strided.zarr.use()": read_strided(True),
             "strided codec, zarr's NDBuffer": read_strided(False)}
    for way in reads.values():
        same(way(), chunk)
    # Into a reused result (a data loader's buffer): no fresh pages for the kernel to zero.
    theirs_out = default_buffer_prototype().nd_buffer.from_numpy_array(np.zeros_like(chunk))
    ours_out = szarr.NDBuffer.from_numpy_array(np.zeros_like(chunk))

    def read_into_strided() -> None:
        with szarr.use():
            strideds.get_basic_selection(Ellipsis, out=ours_out)

    reads_into = {"zarr-python": lambda: zarrs.get_basic_selection(Ellipsis, out=theirs_out),
                  "strided.zarr.use()": read_into_strided}
    for way in reads_into.values():
        way()
    same(theirs_out.as_numpy_array(), chunk)
    same(ours_out.as_numpy_array(), chunk)
    writes = {"zarr-python": lambda: zarrs.__setitem__(Ellipsis, chunk),
              "strided.zarr.use()": write_strided}
    rows = row(name, "read arr[...]", measure(reads, rounds), "zarr-python")
    rows += row(name, "read into out=", measure(reads_into, rounds), "zarr-python")
    rows += row(name, "write arr[...] = x", measure(writes, rounds), "zarr-python")
    same(zarrs[...], chunk)
    return rows


# --------------------------------------------------------------------------------------------
# numcodecs.fixedscaleoffset, numcodecs.astype
# --------------------------------------------------------------------------------------------


def filter_rows(name: str, ours: Any, theirs: Any, chunk: np.ndarray, rounds: int) -> list[str]:
    """Encode and decode of one chunk by a filter codec, strided's against zarr's."""
    decoded_spec = spec(chunk.shape, chunk.dtype)

    def encoder(codec: Any) -> Way:
        return lambda: asyncio.run(codec._encode_single(nd(chunk), decoded_spec)
                                   ).as_ndarray_like()

    stored = np.asarray(encoder(theirs)()).reshape(chunk.shape)

    def decoder(codec: Any) -> Way:
        return lambda: asyncio.run(codec._decode_single(nd(stored), decoded_spec)
                                   ).as_ndarray_like()

    rows = []
    for what, make, expected in (("encode", encoder, stored), ("decode", decoder, None)):
        ways = {"zarr-python (numcodecs)": make(theirs), "strided": make(ours)}
        reference = np.asarray(ways["zarr-python (numcodecs)"]()).reshape(chunk.shape)
        same(np.asarray(ways["strided"]()).reshape(chunk.shape),
             reference if expected is None else expected)
        rows += row(name, what, measure(ways, rounds), "zarr-python (numcodecs)")
    return rows


def _asyncio_floor(rounds: int) -> float:
    """The cost of one ``asyncio.run`` (both filter contenders pay it): printed, not removed."""
    async def nothing() -> None:
        return None
    return measure({"asyncio.run": lambda: asyncio.run(nothing())}, rounds)["asyncio.run"]


# --------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=11, help="rounds (medians are printed)")
    parser.add_argument("--quick", action="store_true", help="a smoke run (seconds)")
    parser.add_argument("--target", action="store_true",
                        help="only the issue's case: the uint8 (3, 4096, 4096) transpose")
    args = parser.parse_args(argv)
    rounds = 3 if args.quick else args.rounds
    side = 256 if args.quick else 4096
    rng = np.random.default_rng(0)
    planar_u8 = rng.integers(0, 256, (3, side, side), dtype=np.uint8)

    rows: list[str] = []
    u8_rows, u8_speedup = transpose_rows(f"transpose u8 {planar_u8.shape} (1, 2, 0)",
                                         planar_u8, (1, 2, 0), rounds)
    rows += u8_rows
    if not args.target:
        rows += other_rows(rng, side, rounds, args.quick)
    report(rows, rounds, side, u8_speedup, args.quick)
    return 0


def other_rows(rng: np.random.Generator, side: int, rounds: int, quick: bool) -> list[str]:
    """Every case but the issue's: float32, NCHW -> NHWC, the filter codecs."""
    planar_f32 = rng.random((3, side // 2, side // 2), dtype=np.float32)
    images = rng.integers(0, 256, (4 if quick else 32, 3, side // 8, side // 8),
                          dtype=np.uint8)
    nchw_f32 = rng.random((2 if quick else 8, 64, side // 32, side // 32), dtype=np.float32)
    rows = transpose_rows(f"transpose f32 {planar_f32.shape} (1, 2, 0)", planar_f32,
                          (1, 2, 0), rounds)[0]
    rows += transpose_rows(f"transpose u8 NCHW {images.shape} -> NHWC (0, 2, 3, 1)", images,
                           (0, 2, 3, 1), rounds)[0]
    rows += transpose_rows(f"transpose f32 NCHW {nchw_f32.shape} -> NHWC (0, 2, 3, 1)",
                           nchw_f32, (0, 2, 3, 1), rounds)[0]

    one_pass = {"offset": 0, "scale": 128, "dtype": "<f4", "astype": "|u1"}
    two_passes = {"offset": 0.5, "scale": 100, "dtype": "<f4", "astype": "|i1"}
    wide = {"offset": 1000, "scale": 10, "dtype": "<f8", "astype": "<i2"}
    values = rng.random((3, side // 2, side // 2), dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")       # numcodecs' codecs are not in the v3 spec
        for config, chunk in ((one_pass, values), (two_passes, values),
                              (wide, values.astype(np.float64) * 3000 + 100)):
            name = (f"fixedscaleoffset {config['dtype']} -> {config['astype']} "
                    f"offset {config['offset']} scale {config['scale']} {chunk.shape}")
            rows += filter_rows(name, szarr.FixedScaleOffset(**config),
                                ZarrFixedScaleOffset(**config), chunk, rounds)
        rows += filter_rows(f"astype f32 {values.shape} <-> f2",
                            szarr.AsType(encode_dtype="<f2", decode_dtype="<f4"),
                            ZarrAsType(encode_dtype="<f2", decode_dtype="<f4"), values, rounds)
    return rows


def report(rows: list[str], rounds: int, side: int, speedup: float, quick: bool) -> None:
    """The machine, the table and the target's verdict."""
    floor = _asyncio_floor(rounds)
    threads = os.environ.get("OMP_NUM_THREADS", f"default ({os.cpu_count()} cores)")
    print(f"CPU: {cpu_model()}; {os.cpu_count()} cores; strided {strided.__version__} "
          f"(OpenMP: {strided.openmp_enabled()}, threads: {threads}); zarr {zarr.__version__}, "
          f"numpy {np.__version__}; median of {rounds} rounds, contenders alternating")
    print(f"(the filter rows include one asyncio.run each: {floor * 1e3:.2f} ms)\n")
    print("| case | measured | contender | ms | x faster than zarr-python |")
    print("|---|---|---|--:|--:|")
    print("\n".join(rows))
    met = "met" if speedup >= 3 else "NOT met"
    note = " (tiny --quick sizes: indicative only)" if quick else ""
    print(f"\ntarget: transpose decode of the uint8 (3, {side}, {side}) chunk, order (1, 2, 0), "
          f">= 3x zarr-python: {speedup:.2f}x, {met}{note}")


if __name__ == "__main__":
    raise SystemExit(main())
