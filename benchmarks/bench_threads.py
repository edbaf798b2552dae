"""Several Python threads copying at once: strided's shared budget of cores.

Two copies of a float32 NCHW -> NHWC relayout (64 MiB each by default), each from its own
source into its own destination, done four ways, in one process, the ways alternating round
after round (the median of each is printed, with its ratio to the first):

- ``one caller, both``: one Python thread runs the two copies one after the other, each with
  the default thread count (a team of all the cores);
- ``two callers, default``: two Python threads, each running one copy with the default thread
  count: the teams share the cores (strided._copy.team_enter), so on 2 cores each runs one
  thread;
- ``two callers, all cores each``: two Python threads, each asking for a team of all the cores
  (``num_threads=cores``): what the default did before the budget, twice the threads of the
  cores;
- ``two callers, 1 thread each``: two Python threads with ``num_threads=1``, the hand-made
  split.

With torch installed, torch's own copy (``dst.copy_(src)`` into a channels_last tensor) is
timed the same two ways (one caller, two callers), with torch's default intra-op threads.

    python benchmarks/bench_threads.py                # 64 MiB a copy, 15 rounds
    python benchmarks/bench_threads.py --mib 16 --rounds 9
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from collections.abc import Callable

import numpy as np
from harness.report import cpu_model

import strided as st
from strided import _copy


def _shape(mib: int) -> tuple[int, int, int, int]:
    """An NCHW float32 shape of ``mib`` MiB with 64 channels."""
    n = 8
    hw = (mib << 20) // (4 * n * 64)
    w = 256
    return n, 64, hw // w, w


class _Callers:
    """Python threads that live through the whole benchmark: each round, all run their work
    at once, released together by a barrier, so that starting a thread (about 100 us) is not
    timed."""

    def __init__(self, n: int) -> None:
        self.work: Callable[[int], None] = lambda i: None
        self.start = threading.Barrier(n + 1)
        self.done = threading.Barrier(n + 1)
        self.stop = False
        self.threads = [threading.Thread(target=self._run, args=(i,), daemon=True)
                        for i in range(n)]
        for t in self.threads:
            t.start()

    def _run(self, i: int) -> None:
        while True:
            self.start.wait()
            if self.stop:
                return
            self.work(i)
            self.done.wait()

    def time(self, work: Callable[[int], None]) -> float:
        """Seconds from releasing the threads to all being done with ``work``."""
        self.work = work
        t0 = time.perf_counter()
        self.start.wait()
        self.done.wait()
        return time.perf_counter() - t0

    def close(self) -> None:
        self.stop = True
        self.start.wait()
        for t in self.threads:
            t.join()


def _one_caller(work: Callable[[int], None], n: int) -> float:
    start = time.perf_counter()
    for i in range(n):
        work(i)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=64, help="MiB of each copy's source")
    parser.add_argument("--rounds", type=int, default=15, help="rounds (medians are printed)")
    parser.add_argument("--callers", type=int, default=2, help="Python threads (default 2)")
    args = parser.parse_args(argv)
    k = args.callers
    cores = _copy._cores()
    shape = _shape(args.mib)
    rng = np.random.default_rng(0)
    srcs = [rng.random(shape, dtype=np.float32) for _ in range(k)]
    dsts = [np.empty((shape[0], shape[2], shape[3], shape[1]), np.float32).transpose(0, 3, 1, 2)
            for _ in range(k)]

    def copy(num_threads: int | None) -> Callable[[int], None]:
        return lambda i: st.copyto(dsts[i], srcs[i], num_threads=num_threads)

    callers = _Callers(k)
    ways: dict[str, Callable[[], float]] = {
        f"strided, one caller, all {k} (default threads)": lambda: _one_caller(copy(None), k),
        f"strided, {k} callers, default threads": lambda: callers.time(copy(None)),
        f"strided, {k} callers, {cores} threads each": lambda: callers.time(copy(cores)),
        f"strided, {k} callers, 1 thread each": lambda: callers.time(copy(1)),
    }
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        tsrcs = [torch.from_numpy(s) for s in srcs]
        tdsts = [torch.empty(shape, dtype=torch.float32, memory_format=torch.channels_last)
                 for _ in range(k)]

        def torch_copy(i: int) -> None:
            tdsts[i].copy_(tsrcs[i])

        ways[f"torch copy_, one caller, all {k}"] = lambda: _one_caller(torch_copy, k)
        ways[f"torch copy_, {k} callers"] = lambda: callers.time(torch_copy)
    for way in ways.values():       # first touch of every page, lazy imports
        way()
    times: dict[str, list[float]] = {name: [] for name in ways}
    for r in range(args.rounds):
        names = list(ways) if r % 2 == 0 else list(ways)[::-1]
        for name in names:
            times[name].append(ways[name]())
    callers.close()
    for i in range(k):
        assert np.array_equal(dsts[i], srcs[i])
    threads_note = f", torch {torch.get_num_threads()} intra-op threads" if torch else ""
    print(f"CPU: {cpu_model()}; {cores} cores; {k} copies of float32 NCHW -> NHWC {shape} "
          f"({args.mib} MiB each); median of {args.rounds} rounds{threads_note}\n")
    print(f"| way | ms (all {k} copies) | vs one caller |")
    print("|---|--:|--:|")
    base = statistics.median(times[next(iter(ways))])
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"| {name} | {med * 1e3:.1f} | {med / base:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
