"""Compare copy-engine tunings on the transposing cases and three plain copies (packed,
padded -> packed, a broadcast row), each paired with a memcpy.

A working tool for whoever tunes the copy kernel, not a benchmark of record: it calls the
private ``strided._copy._tune`` hook, runs only strided and a single-call memcpy, alternating
(nothing else runs between the two), and prints ``memcpy time / strided time`` for every case
and configuration; the configurations take turns within each sample, in balanced orders (run
one after another, the first of them ran up to 1.2x faster than an identical second, on the
same code), each starting from the engine's own tuning. Configurations are ``_tune`` keyword
sets, given as a JSON list::

    python benchmarks/tune_copy.py
    python benchmarks/tune_copy.py --configs '[{"staged": 0}, {"staged": 1, "stage_bytes": 16384}]'
    python benchmarks/tune_copy.py --mib 4 --cases packed,NCHW32 --configs '[{}, {"nt_bytes": 1}]'
    python benchmarks/tune_copy.py --mib 64 --cold 1024 --configs '[{}, {"nt_bytes": -1}]'

``--cold MIB`` gives each configuration its own rotation of fresh operands (a warm loop on a
large last-level cache keeps a non-streaming configuration's arrays in it: on a 480 MiB Xeon
L3 warm and cold disagreed on every streaming decision).

``--bench-cases`` takes the cases of the relayout benchmark instead (``bench_copy``'s names or
substrings: the images at their own shapes, the padded rows of its ``padded->packed``), and
``--to DTYPE`` turns every case into a conversion: the destination holds DTYPE in the same
layout and the call is ``strided.copyto(dst, src, casting="unsafe")`` (the memcpy still moves
the destination's bytes)::

    python benchmarks/tune_copy.py --mib 4 --cold 1536 --bench-cases "HWC->CHW,padded" \
        --configs '[{}, {"pixels_nt_bytes": 262144}]'
    python benchmarks/tune_copy.py --mib 16 --cold 1536 --cases NCHW->NHWC --to float16 \
        --configs '[{}, {"sweep_ahead": 8}]'

``staged``: -1 lets the planner choose (the default), 0 tiles transposes in place, 1 always
stages them; ``stage_bytes`` is the staging tile for copies of 8 MiB and more;
``tile_row_bytes`` the in-place tile row, ``tile_area_bytes`` the most of each operand that
tile grows to in large copies; ``nt_bytes`` the streaming-store threshold (-1: never);
``nt_run_bytes`` a streamed transpose's destination run per tile row (rows of up to two
runs, one for bytes, are staged whole) and ``nt_stitch_bytes`` the same for rows that
do not share a line alignment (halved for bytes, at least ``nt_run_bytes``),
``stitch_tile_rows`` the most rows of such a stitched tile, ``nt_short_runs_from`` the copy
size from which line-aligned runs are halved; ``chunks_per_thread`` the chunks a team's
blocks are claimed in, per thread (0: one fixed share each); ``fetch_next`` (0-16) the
largest item size whose streamed transposes fetch the next block's source while each block
writes its own out.
Any other knob of ``_copy._tune`` works too. A configuration may also hold ``"simd"``: the
kernels' SIMD level (0: SSE2, 1: + SSSE3, 2: + AVX2), for comparing the kernel families on one
machine.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import time
from collections.abc import Callable, Iterator

import numpy as np

import strided
from strided import _copy
from strided._cli._common import balanced_orders
from strided.interop import _ndarray

Case = tuple[str, Callable[[], tuple[np.ndarray, np.ndarray]]]


def cases(dtype: type, nbytes: int) -> Iterator[Case]:
    """(name, make) pairs; make() returns (dst, src) views of nbytes-sized tensors."""
    n = nbytes // np.dtype(dtype).itemsize
    side = int(n**0.5)
    yield "packed", lambda: (np.empty(n, dtype), np.ones(n, dtype))
    yield "padded->packed", lambda: (np.empty((side, side - 16), dtype),
                                     np.ones((side, side), dtype)[:, :side - 16])
    yield "broadcast row", lambda: (np.empty((side, side), dtype),
                                    np.broadcast_to(np.ones(side, dtype), (side, side)))
    yield "transpose2d", lambda: (np.empty((side, side), dtype), np.ones((side, side), dtype).T)
    yield "colmajor x768", lambda: (np.empty((n // 768, 768), dtype),
                                    np.ones((768, n // 768), dtype).T)
    for c in (16, 64, 256):
        hw = int((n // (8 * c)) ** 0.5)
        yield f"NCHW->NHWC C{c}", lambda c=c, hw=hw: (
            np.empty((8, hw, hw, c), dtype).transpose(0, 3, 1, 2), np.ones((8, c, hw, hw), dtype))
    for c in (16, 64, 256):
        hw = int((n // (8 * c)) ** 0.5)
        yield f"NHWC->NCHW C{c}", lambda c=c, hw=hw: (
            np.empty((8, c, hw, hw), dtype), np.ones((8, hw, hw, c), dtype).transpose(0, 3, 1, 2))
    hw = int((n // (8 * 128)) ** 0.5)
    for block in (4, 32):
        yield f"NCHW->NCHW{block}", lambda b=block, hw=hw: (
            np.empty((8, 128 // b, hw, hw, b), dtype).transpose(0, 1, 4, 2, 3),
            np.ones((8, 128, hw, hw), dtype).reshape(8, 128 // b, b, hw, hw))
    hw = int((n // (2 * 32 * 16)) ** 0.5)
    yield "NCDHW->NDHWC", lambda: (
        np.empty((2, 16, hw, hw, 32), dtype).transpose(0, 4, 1, 2, 3),
        np.ones((2, 32, 16, hw, hw), dtype))


def bench_cases(patterns: list[str], dtype: type, nbytes: int) -> Iterator[Case]:
    """The relayout benchmark's cases named by ``patterns`` (``harness.bench_copy``), as
    (name, make) pairs for a logical tensor of ``nbytes``."""
    from harness.bench_copy import select_cases  # benchmarks/ is this script's directory

    for case in select_cases(patterns):
        def make(case=case) -> tuple[np.ndarray, np.ndarray]:
            built = case.build(nbytes / 2**20, np.dtype(dtype))
            return built.dst, built.src
        yield case.name, make


def converting(make: Callable[[], tuple[np.ndarray, np.ndarray]], dtype: np.dtype
               ) -> Callable[[], tuple[np.ndarray, np.ndarray]]:
    """``make`` with a packed destination of ``dtype`` whose axes lie in memory in the order
    of its own (``np.empty_like``'s order "K")."""
    def make_converting() -> tuple[np.ndarray, np.ndarray]:
        dst, src = make()
        return np.empty_like(dst, dtype=dtype), src
    return make_converting


#: the engine's own tuning, which every configuration starts from (a knob one configuration
#: sets must not carry over into the next)
_BASE = _copy._tune()


def _apply(config: dict) -> None:
    config = dict(config)
    _copy._simd(config.pop("simd", -1))
    _copy._tune(**{**_BASE, **config})


def tune_case(make: Callable[[], tuple[np.ndarray, np.ndarray]], configs: list[dict],
              scratch: np.ndarray, threads: int, repeat: int, cold_bytes: int = 0) -> list[float]:
    """The paired ratio of one case under every configuration: each sample runs every
    configuration once, in balanced orders (a configuration leads and follows each other one
    equally often), each call followed by a memcpy of the same bytes; per configuration, the
    median memcpy time over the median strided time.

    With ``cold_bytes``, each configuration rotates over its own copies of the case, at least
    ``cold_bytes`` of them together, so that no call finds its operands in the caches (the
    memcpy stays on its warm scratch: compare the configurations' columns, not the ratio to
    memcpy)."""
    dst, src = make()
    nbytes = dst.nbytes
    if scratch.nbytes < 2 * nbytes:   # a case of its own shape (an image) may be larger
        scratch = np.ones(2 * nbytes, np.uint8)
    a, b = scratch[:nbytes], scratch[nbytes:2 * nbytes]
    rounds = -(-cold_bytes // (dst.nbytes + src.nbytes)) if cold_bytes else 1
    # warm: every configuration on the case's one pair; cold: each on its own fresh pairs,
    # allocated in turns (a configuration whose pairs were all allocated first ran up to 6%
    # slower than identical ones: Intel Xeon, 4 MiB, 2 threads)
    pools: list[list[tuple[np.ndarray, np.ndarray]]] = [[] for _ in configs]
    for _ in range(rounds):
        for pool in pools:
            pool.append((dst, src) if rounds == 1 else make())
    turn = [0] * len(configs)

    def memcpy() -> None:
        ctypes.memmove(b.ctypes.data, a.ctypes.data, nbytes)

    def copy(i: int) -> None:
        d, s = pools[i][turn[i] % rounds]
        turn[i] += 1
        if d.dtype == s.dtype:
            _ndarray.copyto_buffers(d, s, threads)
        else:
            strided.copyto(d, s, casting="unsafe", num_threads=threads)

    ours: list[list[float]] = [[] for _ in configs]
    theirs: list[list[float]] = [[] for _ in configs]
    for i, config in enumerate(configs):   # warm every plan and page once
        _apply(config)
        for _ in range(rounds):
            copy(i)
    memcpy()
    orders = balanced_orders(len(configs))
    for k in range(repeat * len(orders) * rounds):
        for i in orders[k % len(orders)]:
            _apply(configs[i])
            start = time.perf_counter()
            copy(i)
            ours[i].append(time.perf_counter() - start)
            start = time.perf_counter()
            memcpy()
            theirs[i].append(time.perf_counter() - start)
    return [float(np.median(t) / np.median(o)) for o, t in zip(ours, theirs)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", default='[{"staged": -1}, {"staged": 0}, {"staged": 1}]')
    parser.add_argument("--mib", type=float, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=5,
                        help="rounds of the balanced orders (samples per configuration: "
                             "this times the orders)")
    parser.add_argument("--cold", type=float, default=0, metavar="MIB",
                        help="each configuration rotates over copies of the case totalling "
                             "this many MiB (e.g. 3x the last-level cache): cold operands")
    parser.add_argument("--cases", default="",
                        help="comma-separated substrings: only the cases whose name holds one")
    parser.add_argument("--bench-cases", default="",
                        help="comma-separated names or substrings of bench_copy's cases, "
                             "instead of this script's own")
    parser.add_argument("--dtypes", default="float32,uint8",
                        help="comma-separated numpy dtype names (default: float32,uint8)")
    parser.add_argument("--to", default="",
                        help="a destination dtype: every case converts into it")
    args = parser.parse_args()
    dtypes = [np.dtype(name).type for name in args.dtypes.split(",")]
    configs = json.loads(args.configs)
    wanted = [w for w in args.cases.split(",") if w]
    nbytes = int(args.mib * 2**20)
    scratch = np.ones(4 * nbytes, np.uint8)
    cold = f", cold (rotating over {args.cold:g} MiB a configuration)" if args.cold else ""
    print(f"memcpy time / strided time, {args.mib:g} MiB, {args.threads} threads{cold}; "
          "columns:")
    for i, config in enumerate(configs):
        print(f"  [{i}] {config}")
    try:
        for dtype in dtypes:
            chosen = (bench_cases(args.bench_cases.split(","), dtype, nbytes)
                      if args.bench_cases else cases(dtype, nbytes))
            for name, make in chosen:
                if wanted and not any(w in name for w in wanted):
                    continue
                if args.to:
                    make = converting(make, np.dtype(args.to))
                row = tune_case(make, configs, scratch, args.threads, args.repeat,
                                int(args.cold * 2**20))
                cells = "  ".join(f"{r:5.2f}" for r in row)
                print(f"{np.dtype(dtype).name:8s} {name:16s} {cells}", flush=True)
    finally:
        _copy._tune(**_BASE)
        _copy._simd(-1)


if __name__ == "__main__":
    main()
