"""Per-call cost of :class:`strided.Layout` against what numpy and torch users call instead.

``python benchmarks/bench_layout.py`` calls :func:`main`.
For each case (a layout of rank 1 to 8, itemsize 4) and each operation, it times the strided
call and the numpy and torch calls that answer the same question, side by side in one process:
every sample runs a ``timeit`` loop of about 20 ms, the contenders take turns in orders that
change from sample to sample (each follows each other equally often), and the table reports
the median ns per call of each and the
medians of the paired ratios ``numpy / strided`` and ``torch / strided`` (above 1: strided is
faster). The machine may be shared and noisy: medians of paired, alternating samples are what
survive that; single figures do not.

The stand-ins (``V`` is ``np.lib.stride_tricks.as_strided``, ``origin`` the float32 buffer
sliced at the case's offset, ``bstrides`` the strides in bytes, ``T`` is ``torch.as_strided``
and ``flat`` a tensor over the same buffer):

============================= =============================== ===================================
strided                       numpy                           torch
============================= =============================== ===================================
``Layout(...)``               ``V(origin, sizes, bstrides)``  ``T(flat, sizes, strides, offset)``
``Layout(...).span``          ``byte_bounds(V(...))``         none: torch has no span
``Layout(...).is_contiguous`` ``V(...).flags.c_contiguous``   ``T(...).is_contiguous()``
``Layout(...).is_packed``     none                            none
``Layout(...).overlaps``      ``internal_overlap(V(...))``    none
``buffer_size(...)``          ``byte_bounds``: high - low     none
``x.is_contiguous``           ``a.flags.c_contiguous``        ``t.is_contiguous()``
============================= =============================== ===================================

Why these, and what they do not cover:

- numpy has no offset argument: ``origin`` (the buffer sliced at the offset) is made once,
  outside the timed loop, so numpy is not charged for it.
- ``byte_bounds`` is ``numpy.lib.array_utils.byte_bounds``: the bytes ``[low, high)`` the
  array reaches, the span in bytes; with itemsize 4, ``high - low`` is also DirectML's buffer
  size (rounded up to 4), which :func:`strided.buffer_size` computes from sizes and strides.
- ``is_packed`` (packed in *any* dimension order) has no numpy or torch call: ``c_contiguous``,
  ``f_contiguous`` and ``is_contiguous(memory_format=...)`` each test one order. The row-major
  question they do answer is ``is_contiguous``, which is what the numpy and torch columns time;
  ``is_packed`` is timed for strided alone.
- numpy's exact self-overlap test (the one ufuncs use to decide whether an output needs a
  temporary) has no public entry point; ``internal_overlap`` is its test hook,
  ``numpy._core._multiarray_tests.internal_overlap``, timed because it runs the same exact
  algorithm. torch's ``_debug_has_internal_overlap`` is a private heuristic (it answers "too
  hard" for anything neither contiguous nor broadcast): not a stand-in.
- torch has no negative strides: the case with a reversed axis has no torch figures.

Before a case is timed, every stand-in's answers are compared with strided's (the layout
built, span, contiguity, overlap, buffer size); a difference is an ``AssertionError``.

Examples
--------
>>> case = CASES_BY_NAME["NCHW padded W->64"]
>>> answers = stand_in_answers(case)
>>> answers["numpy"]["span"] == answers["strided"]["span"] == (0, 1834999)
True
>>> [op.label for op in OPERATIONS if op.numpy is None]
['construct + .is_packed']
"""

from __future__ import annotations

import gc
import importlib
import statistics
import sys
import timeit
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .report import (
    OneLineParser,
    check_sampling,
    loop_overhead_ns,
    machine_facts,
    optional_module,
    paired_ratio,
    render_table,
    sample_alternating,
)

__all__ = [
    "AIM_NS",
    "CASES",
    "CASES_BY_NAME",
    "CONTENDERS",
    "OPERATIONS",
    "Case",
    "Operation",
    "Result",
    "check_agreement",
    "main",
    "run",
    "stand_in_answers",
]

#: The speed strided aims at: at most this many nanoseconds per call for rank <= 5.
AIM_NS = 2000.0
#: Ranks the aim applies to.
AIM_MAX_RANK = 5
#: Bytes per element of every case (float32).
ITEMSIZE = 4
#: The timed libraries, in table order.
CONTENDERS = ("strided", "numpy", "torch")


# --------------------------------------------------------------------------------------------
# Cases and operations
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """A layout to time: sizes and strides in elements, an offset, itemsize 4."""

    name: str
    sizes: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int = 0

    @property
    def rank(self) -> int:
        """Number of dimensions."""
        return len(self.sizes)


def _packed(sizes: tuple[int, ...], order: tuple[int, ...]) -> tuple[int, ...]:
    """Packed strides of ``sizes`` in a physical order, from the core."""
    from strided import _core

    return tuple(_core.packed_strides(sizes, order))


_NCHW = (8, 64, 56, 56)
#: The timed layouts (itemsize 4 everywhere).
CASES: tuple[Case, ...] = (
    Case("rank-1 packed", (1024,), (1,)),
    Case("rank-2 row-major", (32, 48), (48, 1)),
    Case("NCHW packed", _NCHW, _packed(_NCHW, (0, 1, 2, 3))),
    Case("NHWC packed", _NCHW, _packed(_NCHW, (0, 2, 3, 1))),
    # rows padded from 56 to 64 elements (a 256-byte row pitch)
    Case("NCHW padded W->64", _NCHW, (64 * 56 * 64, 56 * 64, 64, 1)),
    # NCHW[:, ::2, ::-1, 1:-1]: every other channel, rows reversed, one column cut each side
    Case("NCHW sliced, H reversed", (8, 32, 56, 54), (64 * 56 * 56, 2 * 56 * 56, -56, 1),
         offset=55 * 56 + 1),
    # a per-channel bias (C,) broadcast to NCHW
    Case("NCHW broadcast (0,1,0,0)", _NCHW, (0, 1, 0, 0)),
    Case("NCDHW packed", (2, 16, 8, 32, 32), _packed((2, 16, 8, 32, 32), (0, 1, 2, 3, 4))),
    Case("rank-8 packed", (2, 3, 2, 3, 2, 3, 2, 3), _packed((2, 3) * 4, tuple(range(8)))),
)
CASES_BY_NAME = {case.name: case for case in CASES}


@dataclass(frozen=True)
class Operation:
    """One question, as a statement per library (None: the library has no call for it)."""

    label: str
    strided: str
    numpy: str | None
    torch: str | None


_LAYOUT = "L(sizes, strides, offset=offset, itemsize=4)"
_VIEW = "V(origin, sizes, bstrides)"
_TENSOR = "T(flat, sizes, strides, offset)"
#: The operations, timed on every case. The names are bound by :func:`_namespace`.
OPERATIONS: tuple[Operation, ...] = (
    Operation("construct", _LAYOUT, _VIEW, _TENSOR),
    Operation("construct + .span", f"{_LAYOUT}.span", f"byte_bounds({_VIEW})", None),
    Operation("construct + .is_contiguous", f"{_LAYOUT}.is_contiguous",
              f"{_VIEW}.flags.c_contiguous", f"{_TENSOR}.is_contiguous()"),
    Operation("construct + .is_packed", f"{_LAYOUT}.is_packed", None, None),
    Operation("construct + .overlaps", f"{_LAYOUT}.overlaps", f"internal_overlap({_VIEW})",
              None),
    Operation("buffer_size()", "B(sizes, strides, itemsize=4)",
              f"bb = byte_bounds({_VIEW}); bb[1] - bb[0]", None),
    Operation("cached .is_contiguous", "x.is_contiguous", "a.flags.c_contiguous",
              "t.is_contiguous()"),
)


# --------------------------------------------------------------------------------------------
# The stand-ins and their answers
# --------------------------------------------------------------------------------------------


def _internal_overlap() -> Callable[[np.ndarray], bool] | None:
    """numpy's exact self-overlap test (a test hook), or None where this numpy lacks it."""
    try:
        hooks = importlib.import_module("numpy._core._multiarray_tests")
    except ImportError:
        return None
    return getattr(hooks, "internal_overlap", None)


def _torch() -> Any:
    """torch, or None when it is not installed (imported only here, when asked for)."""
    return optional_module("torch")


def _torch_refusal(case: Case) -> str | None:
    """Why torch cannot hold the case's layout, or None."""
    return "torch: no negative strides" if any(s < 0 for s in case.strides) else None


def _namespace(case: Case, torch: Any = None) -> dict[str, Any]:
    """Every name the statements of :data:`OPERATIONS` use, for one case.

    The buffer is float32, one element past the highest offset the layout reaches; ``origin``
    starts at the case's offset. torch's names are bound only when ``torch`` is given and can
    hold the layout.
    """
    from strided import Layout, buffer_size

    x = Layout(case.sizes, case.strides, offset=case.offset, itemsize=ITEMSIZE)
    lo, hi = x.span
    if lo < 0:
        raise ValueError(f"{case.name}: the layout reaches below its buffer (span {x.span})")
    _ = x.is_contiguous  # computed once: the "cached" row reads it
    flat = np.zeros(hi + 1, np.float32)
    ns: dict[str, Any] = {
        "L": Layout, "B": buffer_size, "sizes": case.sizes, "strides": case.strides,
        "offset": case.offset, "x": x,
        "V": np.lib.stride_tricks.as_strided, "byte_bounds": np.lib.array_utils.byte_bounds,
        "internal_overlap": _internal_overlap(), "buffer": flat, "origin": flat[case.offset:],
        "bstrides": tuple(s * ITEMSIZE for s in case.strides),
    }
    ns["a"] = ns["V"](ns["origin"], case.sizes, ns["bstrides"])
    if torch is not None and _torch_refusal(case) is None:
        ns["T"] = torch.as_strided
        ns["flat"] = torch.from_numpy(flat)
        ns["t"] = torch.as_strided(ns["flat"], case.sizes, case.strides, case.offset)
    return ns


def stand_in_answers(case: Case, torch: Any = None) -> dict[str, dict[str, Any]]:
    """What strided and each stand-in answer on ``case``, in strided's units (elements).

    Returns
    -------
    dict
        ``{"strided": {...}, "numpy": {...}, "torch": {...}}`` (torch when given and able to
        hold the layout); each maps a question (``"layout"``, ``"span"``, ``"is_contiguous"``,
        ``"overlaps"``, ``"buffer_size"``) to the answer of that library's call.
    """
    return _answers(_namespace(case, torch))


def _answers(ns: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out = {"strided": _strided_answers(ns), "numpy": _numpy_answers(ns)}
    if "t" in ns:
        out["torch"] = _torch_answers(ns["t"])
    return out


def _strided_answers(ns: dict[str, Any]) -> dict[str, Any]:
    x = ns["x"]
    return {
        "layout": (x.sizes, x.strides, x.offset),
        "span": x.span,
        "is_contiguous": x.is_contiguous,
        "overlaps": x.overlaps,
        "buffer_size": ns["B"](ns["sizes"], ns["strides"], itemsize=ITEMSIZE),
    }


def _numpy_answers(ns: dict[str, Any]) -> dict[str, Any]:
    a, base = ns["a"], ns["buffer"].ctypes.data
    low, high = ns["byte_bounds"](a)
    answers = {
        "layout": (a.shape, tuple(s // ITEMSIZE for s in a.strides),
                   (a.ctypes.data - base) // ITEMSIZE),
        # byte_bounds is [low, high) in bytes from the buffer's start; a span is [lo, hi] in
        # elements; with itemsize 4, high - low is already a multiple of DirectML's 4 bytes
        "span": ((low - base) // ITEMSIZE, (high - base) // ITEMSIZE - 1),
        "is_contiguous": bool(a.flags.c_contiguous),
        "buffer_size": high - low,
    }
    if ns["internal_overlap"] is not None:
        answers["overlaps"] = bool(ns["internal_overlap"](a))
    return answers


def _torch_answers(t: Any) -> dict[str, Any]:
    return {
        "layout": (tuple(t.shape), tuple(t.stride()), t.storage_offset()),
        "is_contiguous": t.is_contiguous(),
    }


def check_agreement(case: Case, torch: Any = None) -> None:
    """Raise AssertionError unless every stand-in answers as strided does on ``case``."""
    _check(case, _answers(_namespace(case, torch)))


def _check(case: Case, answers: dict[str, dict[str, Any]]) -> None:
    ours = answers.pop("strided")
    for library, theirs in answers.items():
        for question, answer in theirs.items():
            if answer != ours[question]:
                raise AssertionError(
                    f"{case.name}: {library} answers {question} = {answer!r}, strided "
                    f"{ours[question]!r}: the comparison would not be honest")


# --------------------------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------------------------


@dataclass
class Result:
    """Timings of one (case, operation) pair: ns per call of each contender that ran."""

    case: Case
    operation: Operation
    times: dict[str, list[float]] = field(default_factory=dict)
    note: str = ""

    def median(self, name: str) -> float | None:
        """Median ns per call of a contender (None when it did not run)."""
        samples = self.times.get(name)
        return statistics.median(samples) if samples else None

    def ratio(self, name: str) -> float | None:
        """Median of the paired ratios ``name / strided`` (above 1: strided is faster)."""
        samples = self.times.get(name)
        return paired_ratio(samples, self.times["strided"]) if samples else None

    @property
    def strided_median(self) -> float:
        """Median ns per call of strided."""
        return statistics.median(self.times["strided"])

    @property
    def aim_applies(self) -> bool:
        """Whether the 2 µs aim applies (rank <= 5)."""
        return self.case.rank <= AIM_MAX_RANK

    @property
    def meets_aim(self) -> bool:
        """Whether the strided median is within the aim."""
        return self.strided_median <= AIM_NS


def _timer(stmt: str, ns: dict[str, Any]) -> timeit.Timer:
    # The setup binds every name to a local of timeit's inner function: no global look-ups.
    setup = "; ".join(f"{name} = _ns[{name!r}]" for name in ns)
    return timeit.Timer(stmt, setup=setup, globals={"_ns": ns})


def _statements(op: Operation, ns: dict[str, Any]) -> tuple[dict[str, str], list[str]]:
    """The statements to time for ``op`` (by contender), and notes on those left out."""
    stmts = {"strided": op.strided}
    notes = []
    if op.numpy is not None:
        if "internal_overlap" in op.numpy and ns["internal_overlap"] is None:
            notes.append("numpy: no internal_overlap hook")
        else:
            stmts["numpy"] = op.numpy
    if op.torch is not None and "T" in ns:
        stmts["torch"] = op.torch
    if op.numpy is None and op.torch is None:
        notes.append("no numpy/torch call")
    return stmts, notes


def run(
    cases: Sequence[Case] = CASES,
    *,
    repeat: int = 15,
    sample_ms: float = 20.0,
    with_torch: bool = True,
    progress: Callable[[str], None] | None = None,
) -> list[Result]:
    """Time every operation on every case: strided, numpy and torch in balanced orders.

    Parameters
    ----------
    cases : sequence of Case
        The layouts.
    repeat : int
        Samples per contender.
    sample_ms : float
        Target duration of one sample (a ``timeit`` loop), in milliseconds.
    with_torch : bool
        Time torch too, when it is installed.
    progress : callable, optional
        Called with a short line before each case (e.g. ``print`` to stderr).

    Returns
    -------
    list of Result
        One per (case, operation), in order.
    """
    if repeat < 1:
        raise ValueError(f"repeat must be >= 1, got {repeat}")
    torch = _torch() if with_torch else None
    results = []
    for case in cases:
        if progress is not None:
            progress(f"  {case.name} ...")
        ns = _namespace(case, torch)
        _check(case, _answers(ns))
        refusal = _torch_refusal(case) if torch is not None else None
        for op in OPERATIONS:
            stmts, notes = _statements(op, ns)
            if refusal and op.torch is not None:
                notes.append(refusal)
            timers = {name: _timer(stmt, ns) for name, stmt in stmts.items()}
            seconds = sample_alternating(timers, repeat=repeat, sample_s=sample_ms / 1000.0)
            times = {name: [s * 1e9 for s in samples] for name, samples in seconds.items()}
            results.append(Result(case, op, times, note="; ".join(notes)))
    return results


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------


def _ns(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def format_table(results: Sequence[Result], *, markdown: bool = False) -> str:
    """The results as a fixed-width table (a pipe table with ``markdown=True``)."""
    header = ["case", "rank", "operation", "strided ns", "numpy ns", "np/strided", "torch ns",
              "torch/strided", "strided min", f"<= {AIM_NS / 1000:g} us", "note"]
    rows = []
    for r in results:
        aim = ("yes" if r.meets_aim else "NO") if r.aim_applies else "-"
        rows.append([r.case.name, str(r.case.rank), r.operation.label,
                     _ns(r.strided_median), _ns(r.median("numpy")), _x(r.ratio("numpy")),
                     _ns(r.median("torch")), _x(r.ratio("torch")),
                     _ns(min(r.times["strided"])), aim, r.note])
    return render_table(header, rows, set(range(3, 9)) | {1}, markdown)


def aim_summary(results: Sequence[Result]) -> str:
    """One line: whether every strided figure for rank <= 5 is within the aim."""
    applies = [r for r in results if r.aim_applies]
    misses = [r for r in applies if not r.meets_aim]
    head = (f"aim (strided <= {AIM_NS:,.0f} ns per call for rank <= {AIM_MAX_RANK}): "
            f"{len(applies) - len(misses)} of {len(applies)} figures meet it")
    if not misses:
        return head + " - MET"
    worst = ", ".join(f"{r.case.name} / {r.operation.label} ({r.strided_median:,.0f} ns)"
                      for r in sorted(misses, key=lambda r: -r.strided_median))
    return head + f" - NOT MET by: {worst}"


def _versions(torch_version: str | None) -> str:
    torch = f"torch {torch_version}" if torch_version else "torch: not installed (- columns)"
    return f"numpy {np.__version__}, {torch}"


def report(results: Sequence[Result], *, repeat: int, sample_ms: float, overhead_ns: float,
           torch_version: str | None = None, markdown: bool = False) -> str:
    """The full report: machine facts, method, table and the aim line."""
    method = (f"{repeat} samples per contender of ~{sample_ms:g} ms each, in balanced orders "
              f"(each follows each other equally often); medians in ns per call (timeit loop "
              f"overhead "
              f"{overhead_ns:.0f} ns per call, not subtracted); np/strided and torch/strided = "
              f"medians of the paired ratios (above 1: strided is faster); strided min = "
              f"fastest strided sample; itemsize 4")
    stand_ins = ("numpy: np.lib.stride_tricks.as_strided, flags.c_contiguous, "
                 "np.lib.array_utils.byte_bounds, the internal_overlap test hook; torch: "
                 "torch.as_strided, is_contiguous(); every answer checked equal to strided's "
                 "before timing; - = no such call (python benchmarks/bench_layout.py --help)")
    facts = [*machine_facts(), _versions(torch_version), method, stand_ins]
    table = format_table(results, markdown=markdown)
    if markdown:
        head = "\n".join(f"- {f}" for f in facts)
    else:
        head = "\n".join(["strided Layout benchmark: strided.Layout vs numpy and torch",
                          *(f"  {f}" for f in facts)])
    return "\n\n".join([head, table, aim_summary(results)])


def main(argv: list[str] | None = None, *, prog: str = "python benchmarks/bench_layout.py"
         ) -> int:
    """Run the benchmark and print the table; return the exit status (0).

    Parameters
    ----------
    argv : list of str, optional
        Command-line arguments (default ``sys.argv[1:]``): ``--quick``, ``--repeat N``,
        ``--sample-ms MS``, ``--no-torch``, ``--markdown``.
    prog : str
        The program name in the usage line and the errors.
    """
    parser = OneLineParser(
        prog=prog,
        description="Per-call cost of strided.Layout (construction, span, is_contiguous, "
                    "is_packed, overlaps, buffer_size) against the numpy and torch calls that "
                    "answer the same questions (np.lib.stride_tricks.as_strided, flags, "
                    "byte_bounds; torch.as_strided, is_contiguous()), paired and alternating "
                    "in one process.",
    )
    parser.add_argument("--quick", action="store_true",
                        help="3 samples of ~2 ms per figure (a smoke run for tests and CI)")
    parser.add_argument("--repeat", type=int, default=None, metavar="N",
                        help="samples per contender and figure (default 15, --quick: 3)")
    parser.add_argument("--sample-ms", type=float, default=None, metavar="MS",
                        help="duration of one sample in ms (default 20, --quick: 2)")
    parser.add_argument("--no-torch", action="store_true", help="leave torch out")
    parser.add_argument("--markdown", action="store_true", help="print a markdown pipe table")
    args = parser.parse_args(argv)
    repeat = args.repeat if args.repeat is not None else (3 if args.quick else 15)
    sample_ms = args.sample_ms if args.sample_ms is not None else (2.0 if args.quick else 20.0)
    check_sampling(parser, repeat, sample_ms)

    torch = None if args.no_torch else _torch()
    gc.collect()
    print(f"timing {len(CASES)} layouts x {len(OPERATIONS)} operations, {repeat} samples of "
          f"~{sample_ms:g} ms per contender ...", file=sys.stderr, flush=True)
    overhead = loop_overhead_ns()
    results = run(CASES, repeat=repeat, sample_ms=sample_ms, with_torch=torch is not None,
                  progress=lambda msg: print(msg, file=sys.stderr, flush=True))
    print(report(results, repeat=repeat, sample_ms=sample_ms, overhead_ns=overhead,
                 torch_version=None if torch is None else str(torch.__version__),
                 markdown=args.markdown))
    return 0
