"""Per-call cost of strided's interop (``layout_of``, ``view``) next to each library's own call.

Usage::

    python benchmarks/bench_interop.py [--repeat N] [--sample-ms MS] [--markdown]

Each row times one strided call and the closest call of the array's own library, paired and
alternating in one process (sample A, sample B, A, B, ...), and reports the medians in
microseconds and their ratio. strided does more than the baseline on every row: it validates
the layout exactly and bounds-checks it against base's memory before building anything, so the
ratio is the price of that check, not a speed contest. Libraries that are not installed are
skipped. See ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import timeit
from collections.abc import Callable

import numpy as np

import strided as st
from strided._cli._report import calibrate, machine_facts

Row = tuple[str, Callable[[], object], str, Callable[[], object]]


def _numpy_rows() -> list[Row]:
    a = np.zeros((64, 64), np.float32)
    layout = st.Layout((32, 32), (128, 2), offset=1, itemsize=4)
    as_strided = np.lib.stride_tricks.as_strided
    negative = st.Layout((32, 32), (-128, 2), offset=64 * 63, itemsize=4)
    return [
        ("layout_of(ndarray)", lambda: st.layout_of(a), "(a.shape, a.strides)",
         lambda: (a.shape, a.strides)),
        ("view(ndarray, padded)", lambda: st.view(a, layout), "np as_strided",
         lambda: as_strided(a[0:, 1:], (32, 32), (512, 8))),
        ("view(ndarray, negative)", lambda: st.view(a, negative), "np as_strided",
         lambda: as_strided(a[::-1, :], (32, 32), (-512, 8))),
        ("view(bytearray)", lambda: st.view(bytearray(64), st.Layout((8, 4), (8, 2))),
         "np.frombuffer + as_strided",
         lambda: as_strided(np.frombuffer(bytearray(64), np.uint8), (8, 4), (8, 2))),
    ]


def _torch_rows() -> list[Row]:
    if importlib.util.find_spec("torch") is None:
        return []
    import torch

    t = torch.zeros(64, 64)
    layout = st.Layout((32, 32), (128, 2), offset=1, itemsize=4)
    return [
        ("layout_of(tensor)", lambda: st.layout_of(t), "(t.shape, t.stride())",
         lambda: (t.shape, t.stride())),
        ("view(tensor, padded)", lambda: st.view(t, layout), "torch.as_strided",
         lambda: torch.as_strided(t, (32, 32), (128, 2), 1)),
    ]


def _dlpack_rows() -> list[Row]:
    if importlib.util.find_spec("array_api_strict") is None:
        return []
    import array_api_strict as xp

    x = xp.zeros((64, 64), dtype=xp.float32)
    layout = st.Layout((32, 32), (128, 2), offset=1, itemsize=4)
    host = np.zeros((64, 64), np.float32)
    return [
        ("layout_of(array_api_strict)", lambda: st.layout_of(x), "xp.from_dlpack(ndarray)",
         lambda: xp.from_dlpack(host)),
        ("view(array_api_strict)", lambda: st.view(x, layout), "xp.from_dlpack(ndarray)",
         lambda: xp.from_dlpack(host)),
    ]


def _paired_medians(a: Callable[[], object], b: Callable[[], object], repeat: int,
                    sample_s: float) -> tuple[float, float]:
    """Median seconds per call of a and b, sampled alternately."""
    a(), b()                # first calls may import or cache things: keep them out
    timers = [timeit.Timer(a), timeit.Timer(b)]
    numbers = [calibrate(timer, sample_s) for timer in timers]
    samples: list[list[float]] = [[], []]
    for _ in range(repeat):
        for k in (0, 1):
            samples[k].append(timers[k].timeit(numbers[k]) / numbers[k])
    return statistics.median(samples[0]), statistics.median(samples[1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15, help="paired samples (default 15)")
    parser.add_argument("--sample-ms", type=float, default=20.0, help="ms per sample")
    parser.add_argument("--markdown", action="store_true", help="print a pipe table")
    args = parser.parse_args(argv)
    rows = _numpy_rows() + _torch_rows() + _dlpack_rows()
    lines = []
    for name, ours, base_name, theirs in rows:
        s, b = _paired_medians(ours, theirs, args.repeat, args.sample_ms / 1000)
        lines.append((name, f"{s * 1e6:.2f}", base_name, f"{b * 1e6:.2f}", f"{s / b:.2f}x"))
        print(f"  {name}", file=sys.stderr)
    header = ("strided call", "strided us", "library's own call", "library us", "ratio")
    widths = [max(len(r[i]) for r in [header, *lines]) for i in range(5)]
    sep = " | " if args.markdown else "  "
    edge = "| " if args.markdown else ""
    print("\n".join(machine_facts()))
    print(f"{args.repeat} paired samples of ~{args.sample_ms:g} ms; medians per call")
    for k, row in enumerate([header, *lines]):
        print(edge + sep.join(c.ljust(w) for c, w in zip(row, widths))
              + (" |" if args.markdown else ""))
        if k == 0 and args.markdown:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
