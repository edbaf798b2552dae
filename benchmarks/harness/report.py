"""What every benchmark of the harness shares: the one-line-error parser,
sampling, machine facts, tables and the records that ``--json FILE`` writes.

The parser and the timing method (calibrated ``timeit`` samples, contenders alternating in a
balanced orders, medians of paired ratios) come from :mod:`strided._cli._common`, and are
re-exported here. A **record**
(:func:`new_record`, :func:`write_record`, :func:`read_record`) keeps a run's figures as JSON
text: the rows (:func:`record_row`: medians in ms and GB/s by contender, the ratios), the
contenders and their roles, the machine, the versions, the settings and the date;
:mod:`harness.plot` draws a record, live or read back.

Examples
--------
>>> print(render_table(["case", "ns"], [["a", "12"], ["bb", "3"]], right={1}, markdown=False))
case  ns
----  --
a     12
bb     3
"""

from __future__ import annotations

import datetime
import importlib
import importlib.util
import json
import os
import platform
import statistics
import timeit
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, TypeVar

from strided._cli._common import (
    OneLineParser,
    calibrate,
    check_sampling,
    cpu_model,
    paired_ratio,
    sample_alternating,
)

__all__ = [
    "OneLineParser",
    "calibrate",
    "check_sampling",
    "cpu_model",
    "loop_overhead_ns",
    "machine",
    "machine_facts",
    "new_record",
    "optional_module",
    "paired_ratio",
    "read_record",
    "record_row",
    "render_table",
    "sample_alternating",
    "select_by_name",
    "write_record",
]

#: The copy kernels' SIMD levels (strided._copy._simd()).
_SIMD_NAMES = {0: "baseline (SSE2 on x86-64)", 1: "SSSE3", 2: "SSSE3 and AVX2"}


# ---- options and contenders ------------------------------------------------------------------


def optional_module(name: str) -> Any:
    """The module ``name`` (torch, jax.numpy, ...), imported only when asked for; None when its
    package is not installed."""
    if importlib.util.find_spec(name.split(".")[0]) is None:
        return None
    return importlib.import_module(name)


# ---- sampling -------------------------------------------------------------------------------


def loop_overhead_ns() -> float:
    """ns per iteration of an empty ``timeit`` loop (reported, never subtracted)."""
    t = timeit.Timer("pass")
    return statistics.median(t.timeit(200_000) / 200_000 * 1e9 for _ in range(5))


# ---- facts ----------------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    """The interpreter, the build and the machine, as a record stores them (JSON values)."""
    import strided
    from strided import _copy

    try:
        load: list[float] | None = [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        load = None
    return {
        "cpu": cpu_model(),
        "cpus": os.cpu_count(),
        "platform": f"{platform.platform()}, {platform.machine()}",
        "python": f"{platform.python_version()} ({platform.python_implementation()})",
        "strided": strided.__version__,
        "openmp": strided.openmp_enabled(),
        "copy_kernels": _SIMD_NAMES.get(_copy._simd(), "?"),
        "caches": _copy.CACHES.describe(),
        "load_average": load,
    }


def machine_facts() -> list[str]:
    """Lines describing the interpreter, the build and the machine."""
    facts = machine()
    load = facts["load_average"]
    load_text = "" if load is None else ", load average {:.2f} {:.2f} {:.2f}".format(*load)
    return [
        f"python {facts['python']}, strided {facts['strided']}",
        f"strided.openmp_enabled() = {facts['openmp']}, copy kernels: {facts['copy_kernels']}",
        f"cpu: {facts['cpu']}; caches: {facts['caches']}",
        f"platform: {facts['platform']}, {facts['cpus']} CPUs{load_text}",
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


# ---- records --------------------------------------------------------------------------------

#: The ``format`` and ``version`` of a record (``--json FILE``); a reader refuses any other.
RECORD_FORMAT = "strided-bench-record"
RECORD_VERSION = 1
#: What every record's GB/s means (the benchmarks' tables use the same definition).
GBPS_DEFINITION = "bytes read + bytes written / median time per call, 1 GB = 1e9 bytes"


def _significant(value: float, digits: int = 4) -> float:
    """``value`` rounded to ``digits`` significant digits: a record is read by people too."""
    return float(f"{value:.{digits}g}")


def record_row(case: str, config: str, threads: int, nbytes: int,
               times: Mapping[str, Sequence[float]], *, ratios: Mapping[str, float | None],
               best_peer: str | None, others: float | None,
               extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One row of a record: the medians (ms) and GB/s of every contender that ran.

    Parameters
    ----------
    case, config : str
        The case's name and what distinguishes this row of it (dtype, size, format).
    threads : int
        strided's ``num_threads`` (and the peers' matched thread counts) for this row.
    nbytes : int
        Bytes read + bytes written by one call: GB/s = ``nbytes / median / 1e9``.
    times : mapping of str to sequence of float
        Seconds per call of every contender, by its display name (empty: did not run).
    ratios : mapping of str to float or None
        strided against a kind of contender (``"peer"``, ``"memcpy"``, ``"floor"``): medians
        of the paired ratios ``time(other) / time(strided)``; None is left out.
    best_peer : str or None
        The fastest peer by median.
    others : float or None
        Share of the CPU other processes used while the row was timed.
    extra : mapping, optional
        More facts about the row (its size in MiB, its shape, ...), stored as given.

    Examples
    --------
    >>> row = record_row("transpose2d", "float32", 2, 2_000_000, {"strided": [1e-3, 2e-3, 3e-3]},
    ...                  ratios={"peer": 2.0, "memcpy": None}, best_peer="numpy", others=0.01)
    >>> row["median_ms"], row["gbps"], row["ratios"]
    ({'strided': 2.0}, {'strided': 1.0}, {'peer': 2.0})
    """
    medians = {name: statistics.median(samples) for name, samples in times.items() if samples}
    return {
        "case": case,
        "config": config,
        "threads": threads,
        "bytes": nbytes,
        "median_ms": {name: _significant(t * 1e3) for name, t in medians.items()},
        "gbps": {name: _significant(nbytes / t / 1e9) for name, t in medians.items()},
        "ratios": {kind: round(r, 3) for kind, r in ratios.items() if r is not None},
        "best_peer": best_peer,
        "others": None if others is None else round(others, 3),
        **(extra or {}),
    }


def new_record(benchmark: str, title: str, *, contenders: Mapping[str, str],
               rows: Sequence[Mapping[str, Any]], settings: Mapping[str, Any],
               versions: Mapping[str, str | None], command: str, note: str | None = None,
               summary: Sequence[str] = ()) -> dict[str, Any]:
    """A record of a benchmark run (``--json FILE``): what ran, where, and what it measured.

    Parameters
    ----------
    benchmark : str
        ``"copy"`` (``bench_copy.py``) or ``"convert"`` (``bench_convert.py``).
    title : str
        What the benchmark compares, for the chart's title.
    contenders : mapping of str to str
        Every contender's display name and role, in table order: ``"strided"``, ``"peer"``
        (what strided is compared with), ``"memcpy"`` or ``"floor"`` (references), ``"info"``
        (other strided calls; not charted).
    rows : sequence of dict
        :func:`record_row` results.
    settings : mapping
        The options the run used (sizes, dtypes, cases, threads, repeat, sample_ms, ...).
    versions : mapping of str to str or None
        The peers' versions (torch, cv2, ...): None for a library left out; numpy and strided
        are added here.
    command : str
        The command line that made the run.
    note : str, optional
        Free text about the machine (``--note``), such as "2-core VM shared with other jobs".
    summary : sequence of str
        The report's target lines, kept as printed.
    """
    import numpy as np

    import strided

    facts = machine()
    facts["note"] = note
    shares = [row["others"] for row in rows if row.get("others") is not None]
    facts["others_mean"] = round(statistics.fmean(shares), 3) if shares else None
    return {
        "format": RECORD_FORMAT,
        "version": RECORD_VERSION,
        "benchmark": benchmark,
        "title": title,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": command,
        "machine": facts,
        "versions": {"strided": strided.__version__, "numpy": np.__version__,
                     **{name: v for name, v in versions.items() if v is not None}},
        "settings": dict(settings),
        "gbps": GBPS_DEFINITION,
        "contenders": dict(contenders),
        "rows": [dict(row) for row in rows],
        "summary": list(summary),
    }


def write_record(record: Mapping[str, Any], path: str | os.PathLike[str]) -> None:
    """Write a record as JSON text (one key per line, stable for a diff)."""
    with open(path, "w", encoding="utf-8") as out:
        json.dump(record, out, indent=1, ensure_ascii=False)
        out.write("\n")


def read_record(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A record written by :func:`write_record`, checked; a ValueError (one line) otherwise."""
    try:
        with open(path, encoding="utf-8") as source:
            record = json.load(source)
    except OSError as exc:
        raise ValueError(f"cannot read {os.fspath(path)!r}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{os.fspath(path)!r} is not JSON: {exc}") from None
    if not isinstance(record, dict) or record.get("format") != RECORD_FORMAT:
        raise ValueError(f"{os.fspath(path)!r} is not a benchmark record (written by "
                         f"benchmarks/bench_copy.py --json FILE)")
    if record.get("version") != RECORD_VERSION:
        raise ValueError(f"{os.fspath(path)!r}: record version {record.get('version')!r}, this "
                         f"harness reads version {RECORD_VERSION}")
    for key, kind in (("contenders", dict), ("rows", list), ("machine", dict),
                      ("versions", dict)):
        if not isinstance(record.get(key), kind):
            raise ValueError(f"{os.fspath(path)!r}: the record has no valid {key!r}")
    for row in record["rows"]:
        if not isinstance(row, dict) or not isinstance(row.get("gbps"), dict) or not all(
                key in row for key in ("case", "config", "threads")):
            raise ValueError(f"{os.fspath(path)!r}: a row lacks case, config, threads or gbps")
    return record
