"""Charts of the benchmarks: ``--plot FILE`` and ``python benchmarks/plot_record.py``.

A live run and a recorded one take the same road. The relayout and conversion benchmarks turn
their results into a **record** (:func:`harness.report.new_record`: the cases, the
contenders, the medians in ms, GB/s, the ratios, the machine and the versions); ``--json FILE``
writes it and ``--plot FILE`` hands it to :func:`draw`. ``python benchmarks/plot_record.py
RECORD.json`` reads a written record back, prints its facts and table (:func:`describe`) and,
with ``--plot FILE``, hands it to the same :func:`draw`: a chart can be redrawn, or restyled,
without timing anything again.

The chart has one group of horizontal bars per row of the table (a case at a dtype, size or
format, and a thread count), one bar per contender: strided, its peers (numpy, torch, OpenCV)
and the references (memcpy, the contiguous cast), in GB/s as the tables count them (bytes read
+ bytes written over the median time per call). strided's bar is labelled with its ratio to the
best peer. The axis is logarithmic when the figures span more than :data:`LOG_SPREAD`, linear
otherwise; the title names the CPU, its core count, the thread counts, the date and versions.

matplotlib is optional (``pip install "strided[plot]"``) and imported only to draw, with the
Agg canvas: no display is needed. ``FILE``'s extension chooses the format (:data:`FORMATS`).

Examples
--------
>>> record = {"title": "relayout", "contenders": {"strided": "strided", "numpy": "peer",
...           "st relayout": "info", "memcpy": "memcpy"},
...           "rows": [{"case": "transpose2d", "config": "uint8", "threads": 2,
...                     "gbps": {"strided": 9.0, "numpy": 1.5, "memcpy": 20.0},
...                     "ratios": {"peer": 6.0}}]}
>>> chart = chart_data(record)
>>> chart.names, chart.labels, chart.ratios, chart.log
(['strided', 'numpy', 'memcpy'], ['transpose2d uint8'], [6.0], False)
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .report import OneLineParser, read_record, render_table, write_record

__all__ = [
    "FORMATS",
    "INSTALL",
    "LOG_SPREAD",
    "Chart",
    "add_options",
    "chart_data",
    "check_outputs",
    "describe",
    "draw",
    "main",
    "matplotlib_missing",
    "row_label",
    "save",
    "title_lines",
]

#: The chart formats, by the extension of ``--plot FILE``.
FORMATS = (".svg", ".png", ".pdf")
#: How to get matplotlib, the optional dependency of ``--plot``.
INSTALL = 'pip install "strided[plot]"'
#: Above this ratio of the largest to the smallest figure, the GB/s axis is logarithmic.
LOG_SPREAD = 20.0

#: Roles drawn, in legend order within a group; ``info`` rows (other strided calls) are not.
_DRAWN_ROLES = ("strided", "peer", "floor", "memcpy")
_STRIDED_COLOR = "#1f5fa8"
_PEER_COLORS = ("#e8871e", "#c0392b", "#8e44ad", "#d35f8d", "#8c6d31", "#2e9e6a", "#17a2b8",
                "#b5a000")
_REFERENCE_COLORS = ("#9a9a9a", "#c8c8c8", "#6e6e6e", "#b0b0b0")
_INCH_PER_BAR = 0.12
_INCH_PER_GROUP = 0.16


# ---- what the chart shows (no matplotlib) ---------------------------------------------------


@dataclass
class Chart:
    """The figures of a chart: a group per record row, a bar per contender present in it."""

    names: list[str]  # the drawn contenders, in legend order
    roles: dict[str, str]  # contender -> role
    labels: list[str]  # one per group (record row)
    values: list[dict[str, float]]  # per group: contender -> GB/s
    ratios: list[float | None]  # per group: strided / best peer
    log: bool  # a logarithmic GB/s axis

    @property
    def bars(self) -> int:
        """Number of bars in the chart."""
        return sum(len(v) for v in self.values)


def _threads(record: Mapping[str, Any]) -> list[int]:
    return sorted({int(row["threads"]) for row in record["rows"]})


def row_label(record: Mapping[str, Any], row: Mapping[str, Any]) -> str:
    """``case config``, and the thread count when the record has several."""
    label = f"{row['case']} {row['config']}".strip()
    return label + (f", {row['threads']} thr" if len(_threads(record)) > 1 else "")


def chart_data(record: Mapping[str, Any]) -> Chart:
    """What :func:`draw` draws for ``record``: the contenders, groups, GB/s and ratios."""
    roles = {name: role for name, role in record["contenders"].items() if role in _DRAWN_ROLES}
    present = {name for row in record["rows"] for name, v in row["gbps"].items() if v}
    order = sorted((name for name in roles if name in present),
                   key=lambda name: _DRAWN_ROLES.index(roles[name]))  # stable: table order
    values = [{name: float(row["gbps"][name]) for name in order if row["gbps"].get(name)}
              for row in record["rows"]]
    figures = [v for group in values for v in group.values() if v > 0]
    log = bool(figures) and max(figures) / min(figures) > LOG_SPREAD
    return Chart(order, {name: roles[name] for name in order},
                 [row_label(record, row) for row in record["rows"]], values,
                 [row.get("ratios", {}).get("peer") for row in record["rows"]], log)


def title_lines(record: Mapping[str, Any]) -> list[str]:
    """The chart's title: what is compared; the machine; the versions and the date."""
    machine, versions = record["machine"], record["versions"]
    threads = _threads(record)
    thread_text = (f"{threads[0]} thread{'s' if threads[0] > 1 else ''}" if len(threads) == 1
                   else f"{', '.join(map(str, threads))} threads")
    where = f"{machine.get('cpu', '?')}, {machine.get('cpus', '?')} CPUs, {thread_text}"
    if machine.get("note"):
        where += f" ({machine['note']})"
    date = str(record.get("date", ""))[:10]
    return [str(record.get("title", "strided benchmark")), where,
            ", ".join(f"{name} {v}" for name, v in versions.items()) + (f"; {date}" if date
                                                                        else "")]


# ---- drawing (matplotlib, imported here only) -----------------------------------------------


def matplotlib_missing() -> str | None:
    """None when matplotlib can be imported, else why not (the error ``--plot`` reports)."""
    try:
        import matplotlib  # type: ignore[import-not-found, unused-ignore]  # noqa: F401
    except ImportError:
        return f"--plot needs matplotlib, which is not installed: {INSTALL}"
    return None


def _colors(chart: Chart) -> dict[str, tuple[str, str]]:
    """(face color, hatch) per contender: strided blue, peers in colors, references grey."""
    out, peers, refs = {}, iter(_PEER_COLORS), iter(_REFERENCE_COLORS)
    for name in chart.names:
        role = chart.roles[name]
        if role == "strided":
            out[name] = (_STRIDED_COLOR, "")
        elif role == "peer":
            out[name] = (next(peers, "#444444"), "")
        else:
            out[name] = (next(refs, "#888888"), "//")
    return out


def draw(record: Mapping[str, Any], path: str | os.PathLike[str]) -> None:
    """Draw ``record``'s chart into ``path`` (.svg, .png or .pdf, from the extension).

    The one drawing function: a live run (``--plot``) and ``plot_record.py RECORD.json`` both call
    it with a record.

    Raises
    ------
    ValueError
        For an extension other than :data:`FORMATS`, or a record without rows.
    ImportError
        When matplotlib is not installed.
    """
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise ValueError(f"{os.fspath(path)!r}: the chart's format comes from the extension, "
                         f"one of {', '.join(FORMATS)}")
    chart = chart_data(record)
    if not chart.bars:
        raise ValueError("the record has no figures to draw")
    import matplotlib  # type: ignore[import-not-found, unused-ignore]
    from matplotlib.backends.backend_agg import (  # type: ignore[import-not-found, unused-ignore]
        FigureCanvasAgg,
    )
    from matplotlib.figure import Figure  # type: ignore[import-not-found, unused-ignore]

    # text stays text in an SVG (searchable, small); fixed ids and no date: redrawing the same
    # record gives the same file
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "strided",
                                "font.size": 8}):
        height = 1.6 + _INCH_PER_BAR * chart.bars + _INCH_PER_GROUP * len(chart.labels)
        fig = Figure(figsize=(9.0, height), layout="constrained")
        FigureCanvasAgg(fig)  # the Agg canvas: no display, whatever the default backend
        _draw_bars(fig.add_subplot(), chart)
        fig.suptitle("\n".join(title_lines(record)), fontsize=9)
        # beside the bars, not above them: an upper legend collides with the title
        fig.legend(handles=_legend(chart), loc="outside right upper", frameon=False)
        metadata = {".svg": {"Date": None}, ".pdf": {"CreationDate": None}}.get(suffix)
        fig.savefig(path, metadata=metadata)


def _legend(chart: Chart) -> list[Any]:
    """One patch per contender, in the chart's order (bars appear group by group)."""
    from matplotlib.patches import Patch  # type: ignore[import-not-found, unused-ignore]

    colors = _colors(chart)
    return [Patch(facecolor=colors[name][0], hatch=colors[name][1], edgecolor="white",
                  label=name) for name in chart.names]


def _draw_bars(ax: Any, chart: Chart) -> None:
    """The grouped horizontal bars, strided's ratio to the best peer at the end of its bar."""
    colors = _colors(chart)
    centers: list[float] = []
    y = 0.0
    for values, ratio in zip(chart.values, chart.ratios, strict=True):
        names = [name for name in chart.names if name in values]
        centers.append(y + (len(names) - 1) / 2)
        for name in names:
            color, hatch = colors[name]
            ax.barh(y, values[name], height=0.85, color=color, hatch=hatch, edgecolor="white",
                    linewidth=0.4)
            if name == "strided" and ratio is not None:
                ax.annotate(f" {ratio:.2f}x", (values[name], y), va="center", fontsize=6.5,
                            color=_STRIDED_COLOR)
            y += 1
        y += 0.8  # the gap between groups
    ax.set_yticks(centers, chart.labels)
    ax.set_ylim(y - 0.4, -0.9)  # first group on top
    ax.tick_params(axis="y", length=0)
    figures = [v for group in chart.values for v in group.values()]
    if chart.log:
        from matplotlib.ticker import (  # type: ignore[import-not-found, unused-ignore]
            FuncFormatter,
            LogLocator,
        )

        ax.set_xscale("log")
        ax.set_xlim(min(figures) / 1.5, max(figures) * 2.5)
        # 0.5, 1, 2, 5, 10, ... GB/s rather than powers of ten
        ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    else:
        ax.set_xlim(0, max(figures) * 1.15)
    ax.set_xlabel("GB/s = (bytes read + bytes written) / median time per call, higher is "
                  f"better ({'log' if chart.log else 'linear'} axis); label: strided / best "
                  "peer")
    ax.grid(axis="x", which="major", alpha=0.35)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


# ---- the options of a live run --------------------------------------------------------------


def add_options(parser: argparse.ArgumentParser) -> None:
    """``--json FILE``, ``--plot FILE`` and ``--note TEXT`` (bench and bench convert)."""
    parser.add_argument("--json", metavar="FILE",
                        help="write the measured results as a record (JSON): python "
                             "benchmarks/plot_record.py FILE redraws its chart later")
    parser.add_argument("--plot", metavar="FILE",
                        help="draw the results as a chart: GB/s per case and contender "
                             f"({', '.join(FORMATS)} from the extension; needs matplotlib: "
                             f"{INSTALL})")
    parser.add_argument("--note", metavar="TEXT",
                        help="a note on the machine for the record and the chart's title "
                             "(e.g. '2-core VM shared with other jobs')")


def check_outputs(parser: argparse.ArgumentParser, *, plot: str | None,
                  json: str | None) -> None:
    """Refuse, before anything is timed, outputs that could not be written afterwards.

    A ``--plot`` extension other than :data:`FORMATS`, ``--plot`` without matplotlib, or a
    file in a directory that does not exist: ``parser.error`` (one line, exit status 2).
    """
    if plot is not None:
        if Path(plot).suffix.lower() not in FORMATS:
            parser.error(f"--plot {plot!r}: the format comes from the extension, one of "
                         f"{', '.join(FORMATS)}")
        missing = matplotlib_missing()
        if missing is not None:
            parser.error(missing)
    for option, path in (("--plot", plot), ("--json", json)):
        if path is not None and not Path(path).resolve().parent.is_dir():
            parser.error(f"{option} {path!r}: the directory {str(Path(path).parent)!r} does "
                         f"not exist")


def save(parser: argparse.ArgumentParser, record: Mapping[str, Any], *, plot: str | None,
         json: str | None) -> None:
    """Write ``record`` to ``json`` and draw it into ``plot`` (each when given); a file that
    cannot be written is ``parser.error``."""
    for path, write, what in ((json, write_record, "record"), (plot, draw, "chart")):
        if path is None:
            continue
        try:
            write(record, path)
        except OSError as exc:
            parser.error(f"cannot write the {what} {path!r}: {exc.strerror or exc}")
        except ValueError as exc:  # a record with nothing to draw
            parser.error(f"{what} {path!r}: {exc}")
        print(f"{what} written to {path}", file=sys.stderr, flush=True)


# ---- python benchmarks/plot_record.py RECORD.json -------------------------------------------


def _gbps(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}" if value < 10 else f"{value:.1f}"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def describe(record: Mapping[str, Any], *, markdown: bool = False) -> str:
    """A record as text: how and where it was measured, its table in GB/s, its summary.

    Examples
    --------
    >>> record = {"title": "relayout", "date": "2025-01-02T03:04:05+00:00",
    ...           "command": "python -m strided bench", "machine": {"cpu": "AMD EPYC",
    ...           "cpus": 2}, "versions": {"strided": "0.1.0"}, "gbps": "bytes / time",
    ...           "contenders": {"strided": "strided", "numpy": "peer"},
    ...           "rows": [{"case": "transpose2d", "config": "uint8", "threads": 2,
    ...                     "gbps": {"strided": 9.0, "numpy": 1.5}, "ratios": {"peer": 6.0},
    ...                     "best_peer": "numpy"}]}
    >>> print(describe(record))  # doctest: +NORMALIZE_WHITESPACE
    relayout
      recorded 2025-01-02T03:04:05+00:00: python -m strided bench
      cpu: AMD EPYC, 2 CPUs, 2 threads
      versions: strided 0.1.0
      GB/s = bytes / time; st/peer = strided / best peer, above 1 strided is faster
    <BLANKLINE>
    case         config  strided  numpy  st/peer  best peer
    -----------  ------  -------  -----  -------  ---------
    transpose2d  uint8      9.00   1.50    6.00x  numpy
    """
    facts = _facts(record)
    table = _table(record, markdown)
    if markdown:
        head = "\n".join(f"- {f}" for f in facts)
    else:  # wrapped: the facts are long (the command, the settings)
        head = "\n".join([str(record.get("title", "")),
                          *(textwrap.fill(f, 100, initial_indent="  ", subsequent_indent="    ",
                                          break_on_hyphens=False, break_long_words=False)
                            for f in facts)])
    parts = [head, table]
    if record.get("summary"):
        parts.append("\n".join(record["summary"]))
    return "\n\n".join(parts)


def _facts(record: Mapping[str, Any]) -> list[str]:
    machine = record["machine"]
    threads = ", ".join(map(str, _threads(record)))
    facts = [f"recorded {record.get('date', '?')}: {record.get('command', '?')}",
             f"cpu: {machine.get('cpu', '?')}, {machine.get('cpus', '?')} CPUs, {threads} "
             f"threads" + (f" ({machine['note']})" if machine.get("note") else "")]
    if machine.get("platform"):
        facts.append(f"platform: {machine['platform']}, python {machine.get('python', '?')}, "
                     f"openmp {machine.get('openmp')}, copy kernels "
                     f"{machine.get('copy_kernels', '?')}")
    facts.append("versions: " + ", ".join(f"{k} {v}" for k, v in record["versions"].items()))
    settings = record.get("settings")
    if settings:
        facts.append("settings: " + "; ".join(f"{k}={_setting(v)}" for k, v in settings.items()))
    if machine.get("others_mean") is not None:
        facts.append(f"other processes used {100 * machine['others_mean']:.0f}% of the CPU on "
                     f"average while the cases were timed")
    others = any(row.get("others") is not None for row in record["rows"])
    facts.append(f"GB/s = {record.get('gbps', '?')}; st/peer = strided / best peer, above 1 "
                 f"strided is faster" + ("; others = the share of the CPU other processes "
                                         "used while the row was timed" if others else ""))
    return facts


def _setting(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value)
    return f"{value:g}" if isinstance(value, float) else str(value)


def _table(record: Mapping[str, Any], markdown: bool) -> str:
    names = [name for name, role in record["contenders"].items() if role != "info"
             and any(row["gbps"].get(name) for row in record["rows"])]
    kinds = [kind for kind in ("floor", "memcpy")
             if any(kind in row.get("ratios", {}) for row in record["rows"])]
    several = len(_threads(record)) > 1
    others = any(row.get("others") is not None for row in record["rows"])
    header = ["case", "config", *(["thr"] if several else []), *names, "st/peer", "best peer",
              *(f"st/{kind}" for kind in kinds), *(["others"] if others else [])]
    rows = []
    for row in record["rows"]:
        ratios = row.get("ratios", {})
        share = row.get("others")
        rows.append([row["case"], str(row["config"]), *([str(row["threads"])] if several else []),
                     *(_gbps(row["gbps"].get(name)) for name in names),
                     _ratio(ratios.get("peer")), row.get("best_peer") or "-",
                     *(_ratio(ratios.get(kind)) for kind in kinds),
                     *([("-" if share is None else f"{100 * share:.0f}%")] if others else [])])
    best = header.index("best peer")
    return render_table(header, rows, set(range(2, len(header))) - {best}, markdown)


def main(argv: Sequence[str] | None = None, *, prog: str = "python benchmarks/plot_record.py"
         ) -> int:
    """Print a recorded run (``--json FILE`` of a benchmark) and, with ``--plot``, draw it.

    Parameters
    ----------
    argv : sequence of str, optional
        ``RECORD.json [--plot FILE] [--markdown]`` (default ``sys.argv[1:]``).
    prog : str
        The program name in the usage line and the errors.

    Returns
    -------
    int
        0; bad arguments, an unreadable record or a missing matplotlib exit with status 2 and
        one line on stderr.
    """
    parser = OneLineParser(
        prog=prog,
        description="Print a recorded benchmark run (written by bench_copy.py --json FILE or "
                    "bench_convert.py --json FILE): the machine, the versions and the "
                    "table in GB/s; with --plot FILE, draw its chart as a live run's --plot "
                    "does, without timing anything.",
    )
    parser.add_argument("record", metavar="RECORD.json", help="a record written by --json")
    parser.add_argument("--plot", metavar="FILE",
                        help=f"draw the chart ({', '.join(FORMATS)} from the extension; needs "
                             f"matplotlib: {INSTALL})")
    parser.add_argument("--markdown", action="store_true", help="print a markdown pipe table")
    args = parser.parse_args(argv)
    check_outputs(parser, plot=args.plot, json=None)
    try:
        record = read_record(args.record)
        text = describe(record, markdown=args.markdown)
    except (ValueError, KeyError, TypeError) as exc:
        parser.error(str(exc) if isinstance(exc, ValueError)
                     else f"{args.record!r}: a malformed record ({exc!r})")
    print(text)
    if args.plot is not None:
        save(parser, record, plot=args.plot, json=None)
    return 0
