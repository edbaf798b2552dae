"""Per-call cost of :class:`strided.Layout` against a pure-Python version of the same formulas.

``python -m strided bench layout`` and ``python benchmarks/bench_layout.py`` call :func:`main`.
For each case (a layout of rank 1 to 8) and each operation (construction, construction + ``span``,
``is_packed``, ``overlaps``, :func:`strided.buffer_size`, a cached property read) it times the
compiled :class:`strided.Layout` and :class:`PyLayout`, the pure-Python reference below, side by
side in one process: every sample runs a ``timeit`` loop of about 20 ms, the two sides alternate
(strided first on even samples, Python first on odd ones), and the table reports the median ns
per call of each side and the median of the paired ratios ``python / strided`` (above 1: strided
is faster). The machine may be shared and noisy: medians of paired, alternating samples are what
survive that; single figures do not.

:class:`PyLayout` and :func:`py_buffer_size` are an honest reference, not a straw man: they
validate the same things (integers, not bools; sizes >= 0; matching lengths; rank <= 64; every
quantity inside int64), compute the size and span eagerly as ``Layout`` does, and cache the
predicates. They agree with ``strided`` on every layout (``tests/test_bench.py`` checks it).

Examples
--------
>>> PyLayout((2, 3), (5, 1)).span, PyLayout((2, 3), (5, 1)).is_packed
((0, 7), False)
>>> PyLayout((3, 3), (2, 3)).overlaps, PyLayout((3, 3), (1, 1)).overlaps
(False, True)
>>> py_buffer_size((1, 1, 3, 5), itemsize=2)      # DirectML: 30 bytes, DWORD-aligned
32
"""

from __future__ import annotations

import argparse
import gc
import math
import operator
import statistics
import sys
import timeit
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from strided._cli._report import calibrate, loop_overhead_ns, machine_facts, render_table

__all__ = [
    "AIM_NS",
    "CASES",
    "OPERATIONS",
    "Case",
    "PyLayout",
    "Result",
    "main",
    "overlap_decision",
    "py_buffer_size",
    "run",
]

#: The aim of the issue: at most this many nanoseconds per call for rank <= 5.
AIM_NS = 2000.0
#: Ranks the aim applies to.
AIM_MAX_RANK = 5

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1
_MAX_NDIM = 64


# --------------------------------------------------------------------------------------------
# The pure-Python reference
# --------------------------------------------------------------------------------------------


def _as_int64(value: Any, name: str, i: int | None = None) -> int:
    """``value`` as a Python int in the int64 range; bools and non-integers are TypeError."""
    if type(value) is not int:
        what = name if i is None else f"{name}[{i}]"
        if isinstance(value, bool) or type(value).__name__ in ("bool", "bool_"):
            raise TypeError(f"{what} must be an integer, not a bool ({value!r})")
        try:
            value = operator.index(value)
        except TypeError:
            raise TypeError(
                f"{what} must be an integer, got {type(value).__name__} {value!r}"
            ) from None
    if not _INT64_MIN <= value <= _INT64_MAX:
        what = name if i is None else f"{name}[{i}]"
        raise OverflowError(f"{what} = {value} does not fit in a signed 64-bit integer")
    return value


def _load(obj: Any, name: str, nonnegative: bool) -> tuple[int, ...]:
    """A sequence of integers (or one integer, meaning one dim) as a validated tuple."""
    if type(obj) is tuple or type(obj) is list:
        seq = obj
    elif obj is None or isinstance(obj, (str, bytes, bytearray, float, complex)):
        raise TypeError(f"{name} must be a sequence of integers, got {type(obj).__name__} {obj!r}")
    elif hasattr(type(obj), "__index__") and not hasattr(type(obj), "__len__"):
        seq = (obj,)
    else:
        try:
            seq = tuple(obj)
        except TypeError:
            raise TypeError(f"{name} must be a sequence of integers, got {type(obj).__name__}") \
                from None
    if len(seq) > _MAX_NDIM:
        raise ValueError(f"{name} has {len(seq)} entries: a layout has at most {_MAX_NDIM} "
                         f"dimensions")
    out = []
    for i, v in enumerate(seq):
        v = _as_int64(v, name, i)
        if nonnegative and v < 0:
            raise ValueError(f"{name}[{i}] must be >= 0, got {v}")
        out.append(v)
    return tuple(out)


def _load_pair(
    sizes: Any, strides: Any
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Validated sizes and strides (``None``: packed row-major) of equal length."""
    sizes = _load(sizes, "sizes", True)
    if strides is None:
        acc = 1
        out = []
        for n in reversed(sizes):
            out.append(acc)
            if n > 1:
                acc *= n
        if acc > _INT64_MAX:
            raise OverflowError(f"the packed strides of sizes {sizes!r} leave int64")
        return sizes, tuple(reversed(out))
    strides = _load(strides, "strides", False)
    if len(strides) != len(sizes):
        raise ValueError(
            f"strides has {len(strides)} entries but sizes has {len(sizes)}: they must match"
        )
    return sizes, strides


def _span(sizes: tuple[int, ...], strides: tuple[int, ...], offset: int) -> tuple[int, int]:
    """``(lowest, highest)`` offset reached; ``(offset, offset - 1)`` when empty."""
    if 0 in sizes:
        return offset, offset - 1
    lo = hi = offset
    for n, s in zip(sizes, strides, strict=True):
        ext = (n - 1) * s
        if ext >= 0:
            hi += ext
        else:
            lo += ext
    if not (_INT64_MIN <= lo and hi <= _INT64_MAX and hi - lo <= _INT64_MAX):
        raise OverflowError(
            f"the span of the layout with sizes {sizes!r} and strides {strides!r} leaves the "
            f"signed 64-bit range"
        )
    return lo, hi


def overlap_decision(sizes: Sequence[int], strides: Sequence[int]) -> tuple[bool, str]:
    """Whether two distinct indices reach the same offset, and which test decided it.

    The pure-Python algorithm: a size-0 layout never overlaps; a stride 0 on a dim of size > 1
    always does; otherwise sort the dims of size > 1 by ``|stride|`` and apply the *sufficient
    test* (every stride exceeds the reach ``sum(|s| * (n - 1))`` of the smaller dims: no
    overlap). When that test is inconclusive, count: more indices than offsets in the span
    overlap (pigeonhole), else *enumerate* the offsets dim by dim into a set and stop at the
    first repeat. Exact, like :func:`strided._core.overlaps` (which replaces the enumeration by
    pairwise gcd tests, merging and a bounded search).

    Returns
    -------
    (bool, str)
        The answer and the deciding test: ``"empty"``, ``"stride 0"``, ``"sufficient test"``,
        ``"pigeonhole"`` or ``"enumeration"``.

    Examples
    --------
    >>> overlap_decision((2, 3, 4, 5), (60, 1, 15, 3))
    (False, 'sufficient test')
    >>> overlap_decision((3, 3), (2, 3))
    (False, 'enumeration')
    """
    if 0 in sizes:
        return False, "empty"
    dims = []
    for n, s in zip(sizes, strides, strict=True):
        if n > 1:
            if s == 0:
                return True, "stride 0"
            dims.append((s if s >= 0 else -s, n))
    dims.sort()
    reach = 0
    for s, n in dims:
        if s <= reach:
            break
        reach += s * (n - 1)
    else:
        return False, "sufficient test"
    count = 1
    for _, n in dims:
        count *= n
    width = 1 + sum(s * (n - 1) for s, n in dims)
    if count > width:
        return True, "pigeonhole"
    offsets = {0}
    for s, n in dims:
        grown = {o + k * s for o in offsets for k in range(n)}
        if len(grown) < len(offsets) * n:
            return True, "enumeration"
        offsets = grown
    return False, "enumeration"


class PyLayout:
    """Pure-Python reference of :class:`strided.Layout` (construction, span, predicates).

    The same validation and formulas, in plain Python: the baseline the benchmark compares the
    compiled core against. Not part of the public API.

    Parameters
    ----------
    sizes : sequence of int
        Elements along each dimension (>= 0), at most 64 dimensions.
    strides : sequence of int, optional
        Element strides (any int64); default packed row-major.
    offset : int, optional
        Element offset of index ``(0, ..., 0)``.
    itemsize : int, optional
        Bytes per element (>= 1).

    Examples
    --------
    >>> L = PyLayout((2, 3), (-3, 1), offset=3)
    >>> L.span, L.is_packed, L.overlaps
    ((0, 5), True, False)
    """

    __slots__ = ("_overlaps", "_packed", "hi", "itemsize", "lo", "offset", "size", "sizes",
                 "strides")

    def __init__(
        self,
        sizes: Sequence[int],
        strides: Sequence[int] | None = None,
        *,
        offset: int = 0,
        itemsize: int = 1,
    ) -> None:
        sizes, strides = _load_pair(sizes, strides)
        offset = _as_int64(offset, "offset")
        itemsize = _as_int64(itemsize, "itemsize")
        if itemsize <= 0:
            raise ValueError(f"itemsize must be >= 1 byte, got {itemsize}")
        size = 0 if 0 in sizes else math.prod(sizes)
        if size > _INT64_MAX:
            raise OverflowError(f"the number of elements of sizes {sizes!r} leaves int64")
        lo, hi = _span(sizes, strides, offset)
        for i, s in enumerate(strides):
            if not _INT64_MIN <= s * itemsize <= _INT64_MAX:
                raise OverflowError(
                    f"strides[{i}] = {s} times itemsize {itemsize} leaves the signed 64-bit range"
                )
        if not (_INT64_MIN <= offset * itemsize <= _INT64_MAX
                and _INT64_MIN <= lo * itemsize and (hi + 1) * itemsize <= _INT64_MAX):
            raise OverflowError(
                f"the byte offsets of the layout (offset {offset}, span {lo}..{hi}, itemsize "
                f"{itemsize}) leave the signed 64-bit range"
            )
        self.sizes = sizes
        self.strides = strides
        self.offset = offset
        self.itemsize = itemsize
        self.size = size
        self.lo = lo
        self.hi = hi
        self._packed: bool | None = None
        self._overlaps: bool | None = None

    @property
    def span(self) -> tuple[int, int]:
        """``(lowest, highest)`` element offset reached, offset included."""
        return (self.lo, self.hi)

    @property
    def is_packed(self) -> bool:
        """Sorted ``|strides|`` of the dims of size > 1 are 1, n0, n0*n1, ... (cached)."""
        if self._packed is None:
            if self.size == 0:
                self._packed = True
            else:
                dims = sorted((s if s >= 0 else -s, n)
                              for n, s in zip(self.sizes, self.strides, strict=True) if n > 1)
                expected = 1
                packed = True
                for s, n in dims:
                    if s != expected:
                        packed = False
                        break
                    expected *= n
                self._packed = packed
        return self._packed

    @property
    def overlaps(self) -> bool:
        """Two distinct indices reach the same offset (exact; cached). See `overlap_decision`."""
        if self._overlaps is None:
            self._overlaps = overlap_decision(self.sizes, self.strides)[0]
        return self._overlaps

    def buffer_size(self, align: int = 4) -> int:
        """Bytes from the lowest to the highest element, rounded up to ``align``."""
        return py_buffer_size(self.sizes, self.strides, itemsize=self.itemsize, align=align)


def py_buffer_size(
    sizes: Sequence[int], strides: Sequence[int] | None = None, *, itemsize: int, align: int = 4
) -> int:
    """Pure-Python :func:`strided.buffer_size` (DirectML's ``DMLCalcBufferTensorSize``, exact).

    ``(highest - lowest offset + 1) * itemsize`` rounded up to a multiple of ``align``; 0 when
    empty.

    Examples
    --------
    >>> py_buffer_size((2, 3), (5, 1), itemsize=1, align=1)
    8
    >>> py_buffer_size((4,), (-1,), itemsize=4, align=1)
    16
    """
    sizes, strides = _load_pair(sizes, strides)
    itemsize = _as_int64(itemsize, "itemsize")
    if itemsize <= 0:
        raise ValueError(f"itemsize must be >= 1 byte, got {itemsize}")
    align = _as_int64(align, "align")
    if align <= 0:
        raise ValueError(f"align must be >= 1 byte, got {align}")
    lo, hi = _span(sizes, strides, 0)
    if hi < lo:
        return 0
    nbytes = (hi - lo + 1) * itemsize
    nbytes += -nbytes % align
    if nbytes > _INT64_MAX:
        raise OverflowError(f"the buffer size ({nbytes} bytes) leaves int64")
    return nbytes


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
    """Packed strides of ``sizes`` in a physical order (the core's rule; cases only)."""
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

#: (label, statement); ``L`` is the class under test, ``B`` its buffer_size function, ``x`` an
#: existing layout whose ``is_packed`` is already cached.
OPERATIONS: tuple[tuple[str, str], ...] = (
    ("construct", "L(sizes, strides, offset=offset, itemsize=4)"),
    ("construct + .span", "L(sizes, strides, offset=offset, itemsize=4).span"),
    ("construct + .is_packed", "L(sizes, strides, offset=offset, itemsize=4).is_packed"),
    ("construct + .overlaps", "L(sizes, strides, offset=offset, itemsize=4).overlaps"),
    ("buffer_size()", "B(sizes, strides, itemsize=4)"),
    ("cached .is_packed", "x.is_packed"),
)

_SETUP = (
    "L = _ns['L']; B = _ns['B']; sizes = _ns['sizes']; strides = _ns['strides']; "
    "offset = _ns['offset']; x = _ns['x']"
)


@dataclass
class Result:
    """Timings of one (case, operation) pair: ns per call of each side and paired ratios."""

    case: Case
    operation: str
    strided_ns: list[float] = field(default_factory=list)
    python_ns: list[float] = field(default_factory=list)
    note: str = ""

    @property
    def strided_median(self) -> float:
        """Median ns per call of strided."""
        return statistics.median(self.strided_ns)

    @property
    def python_median(self) -> float:
        """Median ns per call of the pure-Python reference."""
        return statistics.median(self.python_ns)

    @property
    def ratio(self) -> float:
        """Median of the paired ratios python / strided (above 1: strided is faster)."""
        pairs = zip(self.python_ns, self.strided_ns, strict=True)
        return statistics.median(p / s for p, s in pairs)

    @property
    def aim_applies(self) -> bool:
        """Whether the 2 µs aim applies (rank <= 5)."""
        return self.case.rank <= AIM_MAX_RANK

    @property
    def meets_aim(self) -> bool:
        """Whether the strided median is within the aim."""
        return self.strided_median <= AIM_NS


def _timer(cls: Any, bsize: Callable[..., int], case: Case, stmt: str) -> timeit.Timer:
    x = cls(case.sizes, case.strides, offset=case.offset, itemsize=4)
    _ = x.is_packed
    ns = {"L": cls, "B": bsize, "sizes": case.sizes, "strides": case.strides,
          "offset": case.offset, "x": x}
    # The setup binds everything to locals of timeit's inner function: no global look-ups.
    return timeit.Timer(stmt, setup=_SETUP, globals={"_ns": ns})


def _check_agreement(case: Case) -> str:
    """Both implementations give the same answers on the case; return the overlap path."""
    from strided import Layout, buffer_size

    a = Layout(case.sizes, case.strides, offset=case.offset, itemsize=4)
    b = PyLayout(case.sizes, case.strides, offset=case.offset, itemsize=4)
    got = (a.span, a.is_packed, a.overlaps, buffer_size(case.sizes, case.strides, itemsize=4))
    want = (b.span, b.is_packed, b.overlaps, py_buffer_size(case.sizes, case.strides, itemsize=4))
    if got != want:
        raise AssertionError(f"{case.name}: strided gives {got}, the reference {want}")
    return overlap_decision(case.sizes, case.strides)[1]


def run(
    cases: Sequence[Case] = CASES,
    *,
    repeat: int = 15,
    sample_ms: float = 20.0,
    progress: Callable[[str], None] | None = None,
) -> list[Result]:
    """Time every operation on every case, strided and pure Python in alternation.

    Parameters
    ----------
    cases : sequence of Case
        The layouts.
    repeat : int
        Samples per side; sample ``k`` runs strided first when ``k`` is even.
    sample_ms : float
        Target duration of one sample (a ``timeit`` loop), in milliseconds.
    progress : callable, optional
        Called with a short line before each case (e.g. ``print`` to stderr).

    Returns
    -------
    list of Result
        One per (case, operation), in order.
    """
    from strided import Layout, buffer_size

    if repeat < 1:
        raise ValueError(f"repeat must be >= 1, got {repeat}")
    sample_s = sample_ms / 1000.0
    results = []
    for case in cases:
        if progress is not None:
            progress(f"  {case.name} ...")
        path = _check_agreement(case)
        for label, stmt in OPERATIONS:
            st = _timer(Layout, buffer_size, case, stmt)
            py = _timer(PyLayout, py_buffer_size, case, stmt)
            n_st = calibrate(st, sample_s)
            n_py = calibrate(py, sample_s)
            res = Result(case, label, note=f"python: {path}" if "overlaps" in label else "")
            for k in range(repeat):
                pair = [(st, n_st, res.strided_ns), (py, n_py, res.python_ns)]
                for timer, number, out in pair if k % 2 == 0 else pair[::-1]:
                    out.append(timer.timeit(number) / number * 1e9)
            results.append(res)
    return results


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------


def format_table(results: Sequence[Result], *, markdown: bool = False) -> str:
    """The results as a fixed-width table (a pipe table with ``markdown=True``)."""
    header = ["case", "rank", "operation", "strided ns", "python ns", "py/strided",
              "strided min", f"<= {AIM_NS / 1000:g} us", "note"]
    rows = []
    for r in results:
        aim = ("yes" if r.meets_aim else "NO") if r.aim_applies else "-"
        rows.append([r.case.name, str(r.case.rank), r.operation, f"{r.strided_median:,.0f}",
                     f"{r.python_median:,.0f}", f"{r.ratio:.2f}x", f"{min(r.strided_ns):,.0f}",
                     aim, r.note])
    return render_table(header, rows, {1, 3, 4, 5, 6}, markdown)


def aim_summary(results: Sequence[Result]) -> str:
    """One line: whether every strided figure for rank <= 5 is within the aim."""
    applies = [r for r in results if r.aim_applies]
    misses = [r for r in applies if not r.meets_aim]
    head = (f"aim (strided <= {AIM_NS:,.0f} ns per call for rank <= {AIM_MAX_RANK}): "
            f"{len(applies) - len(misses)} of {len(applies)} figures meet it")
    if not misses:
        return head + " - MET"
    worst = ", ".join(f"{r.case.name} / {r.operation} ({r.strided_median:,.0f} ns)"
                      for r in sorted(misses, key=lambda r: -r.strided_median))
    return head + f" - NOT MET by: {worst}"


def report(results: Sequence[Result], *, repeat: int, sample_ms: float, overhead_ns: float,
           markdown: bool = False) -> str:
    """The full report: machine facts, method, table and the aim line."""
    method = (f"{repeat} paired samples per side of ~{sample_ms:g} ms each, alternating "
              f"strided/python; medians in ns per call (timeit loop overhead "
              f"{overhead_ns:.0f} ns per call, not subtracted); py/strided = median of the "
              f"paired ratios (above 1: strided is faster); strided min = fastest sample; "
              f"itemsize 4")
    facts = [*machine_facts(), method]
    if markdown:
        head = "\n".join(f"- {f}" for f in facts)
        return "\n\n".join([head, format_table(results, markdown=True), aim_summary(results)])
    head = "\n".join(["strided Layout benchmark: compiled core vs the pure-Python reference",
                      *(f"  {f}" for f in facts)])
    return "\n\n".join([head, format_table(results), aim_summary(results)])


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the table; return the exit status (0).

    Parameters
    ----------
    argv : list of str, optional
        Command-line arguments (default ``sys.argv[1:]``): ``--quick``, ``--repeat N``,
        ``--sample-ms MS``, ``--markdown``.
    """
    parser = argparse.ArgumentParser(
        prog="python -m strided bench layout",
        description="Per-call cost of strided.Layout (construction, span, is_packed, overlaps, "
                    "buffer_size) against a pure-Python implementation of the same formulas.",
    )
    parser.add_argument("--quick", action="store_true",
                        help="3 samples of ~2 ms per figure (a smoke run for tests and CI)")
    parser.add_argument("--repeat", type=int, default=None, metavar="N",
                        help="paired samples per figure (default 15, --quick: 3)")
    parser.add_argument("--sample-ms", type=float, default=None, metavar="MS",
                        help="duration of one sample in ms (default 20, --quick: 2)")
    parser.add_argument("--markdown", action="store_true", help="print a markdown pipe table")
    args = parser.parse_args(argv)
    repeat = args.repeat if args.repeat is not None else (3 if args.quick else 15)
    sample_ms = args.sample_ms if args.sample_ms is not None else (2.0 if args.quick else 20.0)
    if repeat < 1:
        parser.error(f"--repeat must be >= 1, got {repeat}")
    if sample_ms <= 0:
        parser.error(f"--sample-ms must be > 0, got {sample_ms}")

    gc.collect()
    print(f"timing {len(CASES)} layouts x {len(OPERATIONS)} operations, {repeat} samples of "
          f"~{sample_ms:g} ms per side ...", file=sys.stderr, flush=True)
    overhead = loop_overhead_ns()
    results = run(CASES, repeat=repeat, sample_ms=sample_ms,
                  progress=lambda msg: print(msg, file=sys.stderr, flush=True))
    print(report(results, repeat=repeat, sample_ms=sample_ms, overhead_ns=overhead,
                 markdown=args.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
