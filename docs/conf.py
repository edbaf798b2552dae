"""Sphinx configuration of the strided documentation.

The documentation is built against the *installed* package (``pip install ".[docs]"``): the
source tree is not importable, the compiled core lives in the installed wheel. The memory-map
pictures are drawn by the command line at build time, into ``docs/generated`` (git-ignored):
the text ones by ``python -m strided explain ...`` (``*.txt``, included with
``literalinclude``), the figures by ``python -m strided explain ... --svg FILE`` (``*.svg``,
shown with ``figure``). A file is rewritten only when its content changes, so an incremental
build does not redo every page; the figures are deterministic, so it rarely does.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import strided

HERE = Path(__file__).resolve().parent
GENERATED = HERE / "generated"

# -- Project --------------------------------------------------------------------------------------

project = "strided"
author = "The strided developers"
copyright = "the strided developers"
release = strided.__version__  # the one source of the version (src/strided/__init__.py)
version = release

# -- General --------------------------------------------------------------------------------------

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
]
exclude_patterns = ["_build", "generated"]
templates_path: list[str] = []
autosummary_generate = False
autodoc_typehints = "none"
autodoc_member_order = "bysource"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = False
# Render ``>>>`` blocks without doctest flags such as ``# doctest: +ELLIPSIS``.
trim_doctest_flags = True

# -- HTML -----------------------------------------------------------------------------------------

html_theme = "alabaster"
html_title = f"strided {release}"
html_static_path: list[str] = []

# -- Memory maps drawn by the command line --------------------------------------------------------

# name of the generated file -> arguments of ``python -m strided explain``
EXPLAIN_EXAMPLES: dict[str, list[str]] = {
    "nhwc": ["NHWC", "--sizes", "1,3,2,2", "--itemsize", "2"],
    "nchw2": ["NCHW", "--sizes", "1,2,2,3"],
    "nhwc2": ["NHWC", "--sizes", "1,2,2,3"],
    "dhw": ["DHW", "--sizes", "2,2,3"],
    "padded": ["--sizes", "2,3", "--strides", "5,1"],
    "broadcast": ["NHWC", "--sizes", "1,3,2,2", "--broadcast", "C"],
    "overlap": ["--sizes", "3,3", "--strides", "1,1"],
    "walkthrough": [],
}

# name of the generated figure -> arguments of ``python -m strided explain ... --svg FILE``.
# The four layouts of one tensor (N = 2, so that CHWN4 differs from NCHW4; C = 3, so that the
# blocked formats show a padding channel), then two blocks of NCHW4 and the DirectML examples.
SVG_EXAMPLES: dict[str, list[str]] = {
    "fig-nchw": ["NCHW", "--sizes", "2,3,2,2"],
    "fig-nhwc": ["NHWC", "--sizes", "2,3,2,2"],
    "fig-nchw4": ["NCHW4", "--sizes", "2,3,2,2"],
    "fig-chwn4": ["CHWN4", "--sizes", "2,3,2,2"],
    "fig-nchw4-c6": ["NCHW4", "--sizes", "1,6,2,2"],
    "fig-padded": ["--sizes", "2,3", "--strides", "5,1"],
    "fig-broadcast": ["NHWC", "--sizes", "1,3,2,2", "--broadcast", "C"],
}


def _strided(args: list[str]) -> str:
    """The output of ``python -m strided ARGS``; a failure stops the build, saying why."""
    cmd = [sys.executable, "-m", "strided", *args]
    env = dict(os.environ, COLUMNS="100", NO_COLOR="1", PYTHONIOENCODING="utf-8")
    proc = subprocess.run(
        cmd, cwd=HERE, env=env, capture_output=True, text=True, encoding="utf-8", check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"{' '.join(cmd[1:])} failed with exit status {proc.returncode}:\n"
            f"{proc.stdout}\n{proc.stderr}"
        )
    return proc.stdout


def _write_if_changed(path: Path, data: bytes) -> None:
    # Rewrite only on change, so that an incremental build does not redo every page.
    if not path.is_file() or path.read_bytes() != data:
        path.write_bytes(data)


def _drawn(name: str, args: list[str]) -> bytes:
    """The figure of ``python -m strided ARGS FILE``, ARGS ending with the option that names
    the file it is drawn into: a scratch file next to generated/NAME.svg (which
    _write_if_changed then updates only on change)."""
    scratch = GENERATED / f".{name}.new.svg"
    try:
        _strided([*args, str(scratch)])
        return scratch.read_bytes()
    finally:
        scratch.unlink(missing_ok=True)


def _generate_memory_maps() -> None:
    GENERATED.mkdir(exist_ok=True)
    for name, args in EXPLAIN_EXAMPLES.items():
        _write_if_changed(GENERATED / f"{name}.txt", _strided(["explain", *args]).encode("utf-8"))
    for name, args in SVG_EXAMPLES.items():
        _write_if_changed(GENERATED / f"{name}.svg", _drawn(name, ["explain", *args, "--svg"]))


_generate_memory_maps()


# == performance.rst: the recorded benchmark runs (this block only) ==============================
# Each record committed under benchmarks/results/ (JSON text) is printed into
# generated/perf-NAME.txt (the machine, the versions, the table) and, where matplotlib is
# installed, drawn into generated/perf-NAME.svg, by the benchmark harness's own code
# (benchmarks/harness/plot.py, what ``python benchmarks/plot_record.py RECORD --plot FILE``
# runs). The harness is not installed: benchmarks/ goes on sys.path for it. generated/perf-NAME.rst
# holds the image, or a note saying how to draw it, so that a build without matplotlib passes too.

BENCHMARKS = HERE.parent / "benchmarks"
PERFORMANCE_RECORDS = ("relayout", "convert", "batch")


def _chart(plot, record: dict, name: str) -> bytes:
    """The chart of ``record`` as SVG bytes, drawn into a scratch file next to its target."""
    scratch = GENERATED / f".{name}.new.svg"  # .svg: draw takes the format from it
    try:
        plot.draw(record, scratch)
        return scratch.read_bytes()
    finally:
        scratch.unlink(missing_ok=True)


def _generate_performance() -> None:
    from importlib.util import find_spec

    if str(BENCHMARKS) not in sys.path:  # the harness is not installed: this checkout's
        sys.path.insert(0, str(BENCHMARKS))
    from harness import plot
    from harness.report import read_record

    GENERATED.mkdir(exist_ok=True)
    drawable = find_spec("matplotlib") is not None
    for name in PERFORMANCE_RECORDS:
        record_path = Path("benchmarks", "results", f"{name}.json")  # from the repository root
        record = read_record(HERE.parent / record_path)
        _write_if_changed(GENERATED / f"perf-{name}.txt",
                          (plot.describe(record) + "\n").encode("utf-8"))
        if drawable:
            _write_if_changed(GENERATED / f"perf-{name}.svg", _chart(plot, record, f"perf-{name}"))
            figure = (f".. image:: /generated/perf-{name}.svg\n   :width: 100%\n"
                      f"   :alt: GB/s per case and contender, from {record_path.as_posix()}\n")
        else:
            figure = (f".. note::\n\n   The chart is drawn when the documentation is built, with "
                      f"matplotlib, which was not installed for this build: "
                      f"``python benchmarks/plot_record.py {record_path.as_posix()} --plot "
                      f"{name}.svg`` draws it (``pip install \"strided[plot]\"``).\n")
        _write_if_changed(GENERATED / f"perf-{name}.rst", figure.encode("utf-8"))


_generate_performance()
# == end of the performance.rst block ============================================================
