"""What the commands of ``python -m strided`` share: the one-line-error parser and the timing
method.

The method is the same in the self-check (``python -m strided bench``) and in the benchmark
harness of the repository (``benchmarks/``, not installed), which imports it from here: the
contenders run side by side in one process, each sample is a ``timeit`` loop calibrated to a
target duration, the contenders take turns in an order that changes from one sample to the next
(so slow phases of a shared, noisy machine hit every contender alike, and every contender
follows every other one equally often: what one leaves in the caches or on the cores is not
always met by the same next one), and the reports give medians and medians of paired ratios.

Examples
--------
>>> paired_ratio([4.0, 6.0, 9.0], [2.0, 2.0, 3.0])   # other / base, sample by sample
3.0
"""

from __future__ import annotations

import argparse
import platform
import statistics
import timeit
from collections.abc import Mapping, Sequence
from typing import NoReturn

__all__ = [
    "OneLineParser",
    "balanced_orders",
    "calibrate",
    "check_sampling",
    "cpu_model",
    "paired_ratio",
    "sample_alternating",
]


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line, ``PROG: error: MESSAGE``, and exit status 2.

    argparse's own ``error`` prints the whole usage first; every command of ``python -m
    strided`` (explain and bench) and every script of the benchmark harness promises a single
    line instead.

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


def calibrate(timer: timeit.Timer, sample_s: float) -> int:
    """Loop count so that one sample of ``timer`` takes about ``sample_s`` seconds."""
    number = 1
    while True:
        elapsed = timer.timeit(number)
        if elapsed >= sample_s / 10:
            return max(1, round(number * sample_s / elapsed))
        number *= 10


def balanced_orders(count: int) -> list[list[int]]:
    """Orders of ``count`` contenders in which each one directly follows each other one equally
    often (a Williams design: ``count`` orders when it is even, ``2 * count`` when odd).

    A fixed cyclic order - rotating only its start - puts every contender behind the same
    predecessor in every sample, so one that evicts the caches (a memcpy of a scratch buffer)
    or leaves its threads spinning on the cores slows the same next contender each time.

    Parameters
    ----------
    count : int
        Number of contenders (>= 1).

    Returns
    -------
    list of list of int
        Permutations of ``range(count)``, first the identity-led one.

    Examples
    --------
    >>> balanced_orders(4)
    [[0, 1, 3, 2], [1, 2, 0, 3], [2, 3, 1, 0], [3, 0, 2, 1]]
    >>> balanced_orders(3)
    [[0, 1, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0], [0, 2, 1], [1, 0, 2]]
    """
    if count < 1:
        raise ValueError(f"balanced_orders() needs count >= 1, got {count}")
    # 0, 1, n-1, 2, n-2, ...: the differences of consecutive entries take every nonzero value
    # mod n once, so shifting it by k = 0 .. n-1 makes every ordered pair adjacent once
    lead = [0] + [(j + 1) // 2 if j % 2 else count - j // 2 for j in range(1, count)]
    orders = [[(x + k) % count for x in lead] for k in range(count)]
    if count % 2:   # odd: the differences repeat in pairs; the mirrored orders even them out
        orders += [order[::-1] for order in orders]
    return orders


def sample_alternating(timers: Mapping[str, timeit.Timer], *, repeat: int,
                       sample_s: float) -> dict[str, list[float]]:
    """Seconds per call of every timer: ``repeat`` samples each, in changing orders.

    Sample ``k`` runs the timers in the ``k``-th of :func:`balanced_orders` (cyclically): each
    contender leads equally often and follows each other contender equally often, so what a
    contender leaves behind (evicted caches, threads still spinning) is spread over the others
    instead of always falling on the same one.

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
    orders = balanced_orders(len(names))
    times: dict[str, list[float]] = {name: [] for name in names}
    for k in range(repeat):
        for index in orders[k % len(orders)]:
            name = names[index]
            times[name].append(timers[name].timeit(numbers[name]) / numbers[name])
    return times


def paired_ratio(other: Sequence[float], base: Sequence[float]) -> float:
    """Median over the paired samples of ``other / base`` (above 1: ``base`` is faster)."""
    return statistics.median(o / b for o, b in zip(other, base, strict=True))


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
