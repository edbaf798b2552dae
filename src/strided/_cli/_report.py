"""What every benchmark of ``python -m strided bench`` shares: sampling, machine facts, tables.

The method is the same everywhere: the contenders run side by side in one process, each sample
is a ``timeit`` loop calibrated to a target duration, the contenders take turns in an order
that rotates from one sample to the next (so slow phases of a shared, noisy machine hit every
contender alike), and the reports give medians and medians of paired ratios.

Examples
--------
>>> print(render_table(["case", "ns"], [["a", "12"], ["bb", "3"]], right={1}, markdown=False))
case  ns
----  --
a     12
bb     3
>>> paired_ratio([4.0, 6.0, 9.0], [2.0, 2.0, 3.0])   # other / base, sample by sample
3.0
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import platform
import statistics
import timeit
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn, Protocol, TypeVar

__all__ = [
    "OneLineParser",
    "calibrate",
    "check_sampling",
    "cpu_model",
    "loop_overhead_ns",
    "machine_facts",
    "optional_module",
    "paired_ratio",
    "render_table",
    "sample_alternating",
    "select_by_name",
]

#: The copy kernels' SIMD levels (strided._copy._simd()).
_SIMD_NAMES = {0: "baseline (SSE2 on x86-64)", 1: "SSSE3", 2: "SSSE3 and AVX2"}


# ---- options and contenders ------------------------------------------------------------------


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line, ``PROG: error: MESSAGE``, and exit status 2.

    argparse's own ``error`` prints the whole usage first; every command of ``python -m
    strided`` (explain and each benchmark) promises a single line instead.

    Examples
    --------
    >>> import contextlib, io
    >>> parser = OneLineParser(prog="strided bench")
    >>> _ = parser.add_argument("--repeat", type=int)
    >>> err = io.StringIO()
    >>> with contextlib.redirect_stderr(err):
    ...     try:
    ...         parser.parse_args(["--repeat", "x"])
    ...     except SystemExit as exc:
    ...         print(exc.code)
    2
    >>> print(err.getvalue(), end="")
    strided bench: error: argument --repeat: invalid int value: 'x'
    """

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())}\n")


def check_sampling(parser: argparse.ArgumentParser, repeat: int, sample_ms: float) -> None:
    """Refuse (``parser.error``: exit status 2) a sample count below 1 or a duration <= 0."""
    if repeat < 1:
        parser.error(f"--repeat must be >= 1, got {repeat}")
    if not sample_ms > 0:
        parser.error(f"--sample-ms must be > 0, got {sample_ms}")


def optional_module(name: str) -> Any:
    """The module ``name`` (torch, jax.numpy, ...), imported only when asked for; None when its
    package is not installed."""
    if importlib.util.find_spec(name.split(".")[0]) is None:
        return None
    return importlib.import_module(name)


# ---- sampling -------------------------------------------------------------------------------


def calibrate(timer: timeit.Timer, sample_s: float) -> int:
    """Loop count so that one sample of ``timer`` takes about ``sample_s`` seconds."""
    number = 1
    while True:
        elapsed = timer.timeit(number)
        if elapsed >= sample_s / 10:
            return max(1, round(number * sample_s / elapsed))
        number *= 10


def sample_alternating(timers: Mapping[str, timeit.Timer], *, repeat: int,
                       sample_s: float) -> dict[str, list[float]]:
    """Seconds per call of every timer: ``repeat`` samples each, in a rotating order.

    Sample ``k`` runs the timers starting from the ``k % len(timers)``-th, so with two
    contenders the first one leads on even samples and the second on odd ones.

    Parameters
    ----------
    timers : mapping of str to timeit.Timer
        The contenders, by name; each is calibrated to ``sample_s`` first.
    repeat : int
        Samples per contender (>= 1).
    sample_s : float
        Target duration of one sample, in seconds.

    Returns
    -------
    dict of str to list of float
        The samples of each contender, in seconds per call, paired by position.
    """
    numbers = {name: calibrate(timer, sample_s) for name, timer in timers.items()}
    names = list(timers)
    times: dict[str, list[float]] = {name: [] for name in names}
    for k in range(repeat):
        shift = k % len(names)
        for name in names[shift:] + names[:shift]:
            times[name].append(timers[name].timeit(numbers[name]) / numbers[name])
    return times


def paired_ratio(other: Sequence[float], base: Sequence[float]) -> float:
    """Median over the paired samples of ``other / base`` (above 1: ``base`` is faster)."""
    return statistics.median(o / b for o, b in zip(other, base, strict=True))


def loop_overhead_ns() -> float:
    """ns per iteration of an empty ``timeit`` loop (reported, never subtracted)."""
    t = timeit.Timer("pass")
    return statistics.median(t.timeit(200_000) / 200_000 * 1e9 for _ in range(5))


# ---- facts ----------------------------------------------------------------------------------


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo`` on Linux), else what ``platform`` knows."""
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_facts() -> list[str]:
    """Lines describing the interpreter, the build and the machine."""
    import strided
    from strided import _copy

    try:
        load = ", load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    except (AttributeError, OSError):
        load = ""
    return [
        f"python {platform.python_version()} ({platform.python_implementation()}), "
        f"strided {strided.__version__}",
        f"strided.openmp_enabled() = {strided.openmp_enabled()}, copy kernels: "
        f"{_SIMD_NAMES.get(_copy._simd(), '?')}",
        f"cpu: {cpu_model()}",
        f"platform: {platform.platform()}, {platform.machine()}, {os.cpu_count()} CPUs{load}",
    ]


# ---- tables ---------------------------------------------------------------------------------


def render_table(header: Sequence[str], rows: Sequence[Sequence[str]], right: set[int],
                 markdown: bool) -> str:
    """A fixed-width table (a pipe table with ``markdown``), columns in ``right`` right-aligned."""
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        padded = [c.rjust(w) if i in right else c.ljust(w)
                  for i, (c, w) in enumerate(zip(cells, widths, strict=True))]
        if markdown:
            return ("| " + " | ".join(padded) + " |").rstrip()
        return "  ".join(padded).rstrip()

    out = [line(header)]
    if markdown:
        out.append("|" + "|".join(("-" * (w + 1) + ":") if i in right else "-" * (w + 2)
                                  for i, w in enumerate(widths)) + "|")
    else:
        out.append("  ".join("-" * w for w in widths))
    out.extend(line(row) for row in rows)
    return "\n".join(out)


class _Named(Protocol):
    @property
    def name(self) -> str: ...


_C = TypeVar("_C", bound=_Named)


def select_by_name(cases: Sequence[_C], patterns: Sequence[str] | None) -> list[_C]:
    """The cases named by ``patterns`` (exact names or case-insensitive substrings), in the
    order of ``cases``: every benchmark's ``--cases``.

    ``None`` or an empty list selects every case. A pattern matching nothing is a ValueError.
    """
    if not patterns:
        return list(cases)
    names = [case.name for case in cases]
    chosen: set[str] = set()
    for pattern in patterns:
        if pattern in names:
            chosen.add(pattern)
            continue
        hits = {name for name in names if pattern.lower() in name.lower()}
        if not hits:
            raise ValueError(f"no case matches {pattern!r}; the cases are {', '.join(names)}")
        chosen |= hits
    return [case for case in cases if case.name in chosen]
