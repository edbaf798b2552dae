"""Sphinx configuration of the strided documentation.

The documentation is built against the *installed* package (``pip install ".[docs]"``): the
source tree is not importable, the compiled core lives in the installed wheel. The memory-map
pictures are drawn by the command line, ``python -m strided explain ...``, at build time and
written to ``docs/generated/*.txt`` (git-ignored), which the pages include with
``literalinclude``.
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
release = getattr(strided, "__version__", "0.1.0")
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
    "nhwc": ["NHWC", "--sizes", "1,1,3,5", "--itemsize", "2"],
    "nchw2": ["NCHW", "--sizes", "1,2,2,3"],
    "nhwc2": ["NHWC", "--sizes", "1,2,2,3"],
    "dhw": ["DHW", "--sizes", "2,2,3"],
    "padded": ["--sizes", "2,3", "--strides", "5,1"],
    "broadcast": ["NHWC", "--sizes", "1,3,2,2", "--broadcast", "C"],
    "overlap": ["--sizes", "3,3", "--strides", "1,1"],
    "walkthrough": [],
}


def _explanation(args: list[str]) -> str:
    cmd = [sys.executable, "-m", "strided", "explain", *args]
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


def _generate_memory_maps() -> None:
    GENERATED.mkdir(exist_ok=True)
    for name, args in EXPLAIN_EXAMPLES.items():
        text = _explanation(args)
        path = GENERATED / f"{name}.txt"
        # Rewrite only on change, so that an incremental build does not redo every page.
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")


_generate_memory_maps()
