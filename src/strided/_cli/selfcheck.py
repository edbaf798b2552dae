"""``python -m strided bench``: a self-check of this machine, in a few seconds.

A handful of copies (a contiguous one, a 2-D transpose, NCHW to NHWC and a 16-element copy) are
made three ways on the same arrays: :func:`strided.copyto`, ``np.copyto`` and a memcpy of the
same number of bytes between two contiguous buffers (``ctypes.memmove``, the bandwidth a copy
that needs no relayout gets). strided's bytes are checked against numpy's first; then the three
take turns, in balanced orders, and the report gives the median time per call of each and the
medians of the paired ratios (the method of :mod:`strided._cli._common`).

It tells whether this build and this machine behave as expected (OpenMP on, the relayouts well
ahead of numpy's, a small copy cheap); it is no benchmark. The side-by-side harness (torch,
OpenCV, every case and size, JSON records and charts) lives in the repository's
``benchmarks/`` folder and is not installed.

Examples
--------
>>> [case.name for case in CASES]  # doctest: +NORMALIZE_WHITESPACE
['contiguous float32', 'transpose2d float32', 'NCHW->NHWC uint8 C=3',
 'small copy 16 x float32']
>>> src, dst = CASES[1].build()
>>> src.shape == dst.shape, src.flags.c_contiguous, dst.flags.c_contiguous
(True, False, True)
"""

from __future__ import annotations

import ctypes
import os
import platform
import sys
import timeit
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

import strided
from strided import _copy
from strided._cli._common import (
    OneLineParser,
    check_sampling,
    cpu_model,
    paired_ratio,
    sample_alternating,
)

__all__ = ["CASES", "Case", "Measured", "main", "measure", "report"]

#: The scripts of the full benchmarks, by the word that used to select them after ``bench``.
HARNESS_SCRIPTS = {
    "copy": "benchmarks/bench_copy.py",
    "convert": "benchmarks/bench_convert.py",
    "layout": "benchmarks/bench_layout.py",
    "plot": "benchmarks/plot_record.py",
}
CONTENDERS = ("strided", "numpy", "memcpy")


@dataclass(frozen=True)
class Case:
    """A copy to check: its name and how to build its (source view, destination view)."""

    name: str
    build: Callable[[], tuple[np.ndarray, np.ndarray]]


def _contiguous() -> tuple[np.ndarray, np.ndarray]:
    src = np.arange(1 << 20, dtype=np.float32)  # 4 MiB
    return src, np.empty_like(src)


def _transpose2d() -> tuple[np.ndarray, np.ndarray]:
    base = np.arange(1 << 20, dtype=np.float32).reshape(1024, 1024)
    return base.T, np.empty_like(base)


def _nchw_to_nhwc() -> tuple[np.ndarray, np.ndarray]:
    # the data loader's copy: 3 channels moved innermost, 3 MiB of uint8
    shape = (4, 3, 512, 512)
    src = (np.arange(np.prod(shape), dtype=np.int64) % 251).astype(np.uint8).reshape(shape)
    dst = np.empty((4, 512, 512, 3), np.uint8).transpose(0, 3, 1, 2)
    return src, dst


def _small() -> tuple[np.ndarray, np.ndarray]:
    src = np.arange(16, dtype=np.float32)
    return src, np.empty_like(src)


#: The cases, in report order: bandwidth first, then the per-call cost of a tiny copy.
CASES = (
    Case("contiguous float32", _contiguous),
    Case("transpose2d float32", _transpose2d),
    Case("NCHW->NHWC uint8 C=3", _nchw_to_nhwc),
    Case("small copy 16 x float32", _small),
)


@dataclass
class Measured:
    """The samples of one case: seconds per call of each contender, paired by position."""

    case: Case
    nbytes: int
    times: dict[str, list[float]]

    def median(self, name: str) -> float:
        """Median seconds per call of a contender."""
        return float(np.median(self.times[name]))

    def ratio(self, name: str) -> float:
        """Median of the paired ``time(name) / time(strided)``: above 1, strided is faster."""
        return paired_ratio(self.times[name], self.times["strided"])


def _contenders(src: np.ndarray, dst: np.ndarray, scratch: np.ndarray,
                threads: int | None) -> dict[str, Callable[[], object]]:
    copyto, memmove = strided.copyto, ctypes.memmove
    # Every case's dst covers a packed buffer that starts at its first element: memcpy reads
    # those nbytes into scratch, the same bytes the copies write.
    target, source, nbytes = scratch.ctypes.data, dst.ctypes.data, scratch.nbytes
    return {
        "strided": lambda: copyto(dst, src, num_threads=threads),
        "numpy": lambda: np.copyto(dst, src),
        "memcpy": lambda: memmove(target, source, nbytes),
    }


def measure(case: Case, *, repeat: int, sample_ms: float, threads: int | None) -> Measured:
    """Build ``case``, check strided's bytes against numpy's, then time the contenders.

    Raises
    ------
    AssertionError
        When ``strided.copyto`` wrote other values than ``np.copyto``.
    """
    src, dst = case.build()
    scratch = np.empty(dst.nbytes, np.uint8)
    calls = _contenders(src, dst, scratch, threads)
    calls["numpy"]()
    expected = dst.copy()
    dst[...] = 0
    calls["strided"]()  # the check is also the warm-up of the first calls
    if not np.array_equal(dst, expected):
        raise AssertionError(f"{case.name}: strided.copyto wrote other values than np.copyto")
    timers = {name: timeit.Timer(call) for name, call in calls.items()}
    times = sample_alternating(timers, repeat=repeat, sample_s=sample_ms / 1000)
    return Measured(case, dst.nbytes, times)


def _per_call(seconds: float) -> str:
    if seconds < 1e-6:
        return f"{seconds * 1e9:,.0f} ns"
    if seconds < 1e-3:
        return f"{seconds * 1e6:,.1f} us"
    return f"{seconds * 1e3:,.2f} ms"


def _facts(repeat: int, sample_ms: float, threads: int | None) -> list[str]:
    return [
        f"cpu: {cpu_model()}, {os.cpu_count()} CPUs; {platform.system()} {platform.machine()}; "
        f"caches: {_copy.CACHES.describe()}",
        f"python {platform.python_version()}, numpy {np.__version__}, strided "
        f"{strided.__version__}, strided.openmp_enabled() = {strided.openmp_enabled()}",
        f"{repeat} samples per contender of ~{sample_ms:g} ms, taking turns in balanced orders; "
        f"strided num_threads={'default' if threads is None else threads}, np.copyto and "
        f"memcpy (ctypes.memmove of the same bytes, contiguous) on one thread",
        "ratios: medians of the paired time(other) / time(strided), above 1 strided is faster",
    ]


def report(results: Sequence[Measured], *, repeat: int, sample_ms: float,
           threads: int | None) -> str:
    """The self-check's text: the machine, the method, one line per case."""
    header = (f"{'case':<24} {'bytes':>9} {'strided':>10} {'np.copyto':>10} {'memcpy':>10} "
              f"{'numpy/strided':>14} {'memcpy/strided':>15}")
    lines = [f"{r.case.name:<24} {r.nbytes:>9,} "
             + " ".join(f"{_per_call(r.median(name)):>10}" for name in CONTENDERS)
             + f" {r.ratio('numpy'):>13.2f}x {r.ratio('memcpy'):>14.2f}x" for r in results]
    return "\n".join([
        "strided bench: a self-check of this machine (median time per call)",
        *(f"  {fact}" for fact in _facts(repeat, sample_ms, threads)),
        "", header, "-" * len(header), *lines, "",
        "The full benchmarks (torch, OpenCV, every case and size, records, charts) are "
        "scripts in the repository: python benchmarks/bench_copy.py --help",
    ])


def _parser(prog: str) -> OneLineParser:
    parser = OneLineParser(
        prog=prog,
        description="A self-check of this machine, in seconds: strided.copyto against np.copyto "
                    "and a memcpy of the same bytes on a few copies (contiguous, 2-D transpose, "
                    "NCHW to NHWC, 16 elements), alternating in one process; prints the CPU, "
                    "the median time per call and the ratios. The full benchmarks are the "
                    "scripts of the repository's benchmarks/ folder (not installed).",
    )
    parser.add_argument("--repeat", type=int, default=5, metavar="N",
                        help="samples per contender (default 5)")
    parser.add_argument("--sample-ms", type=float, default=20.0, metavar="MS",
                        help="duration of one sample (default 20)")
    parser.add_argument("--threads", type=int, metavar="N",
                        help="strided's num_threads (default: strided's default)")
    return parser


def main(argv: Sequence[str] | None = None, *, prog: str = "python -m strided bench") -> int:
    """Run the self-check and print its report.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments after ``bench`` (default ``sys.argv[1:]``).
    prog : str
        The program name in the usage line and the errors.

    Returns
    -------
    int
        0; bad arguments exit with status 2 and one line on stderr (so does a former
        sub-command of ``bench``, naming the script that runs it now), values that differ
        from numpy's with status 1.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = _parser(prog)
    if argv[:1] and argv[0] in HARNESS_SCRIPTS:
        parser.error(f"'{argv[0]}' is a benchmark of the repository, not of the installed "
                     f"package: run python {HARNESS_SCRIPTS[argv[0]]} from a checkout")
    args = parser.parse_args(argv)
    check_sampling(parser, args.repeat, args.sample_ms)
    if args.threads is not None and args.threads < 1:
        parser.error(f"--threads must be >= 1, got {args.threads}")
    try:
        results = [measure(case, repeat=args.repeat, sample_ms=args.sample_ms,
                           threads=args.threads) for case in CASES]
    except AssertionError as exc:
        parser.exit(1, f"{prog}: error: {exc}\n")
    print(report(results, repeat=args.repeat, sample_ms=args.sample_ms, threads=args.threads))
    return 0
