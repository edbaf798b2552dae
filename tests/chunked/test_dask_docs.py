"""The "Larger than memory" page's recipes (``docs/larger_than_memory.rst``): its python blocks,
in order, as one script run in a fresh interpreter under a timeout (the cluster recipe spawns
worker processes, which import the script: it runs as ``__main__``, as a user's would).

Skipped where the page is absent (the installed wheel's test run has no ``docs/``) or dask,
distributed, zarr or xarray is not installed; the cubed recipe is left out where cubed is not.
"""

from __future__ import annotations

import importlib.util
import os
import re
import textwrap
from pathlib import Path

import pytest
from isolated import run_isolated

PAGE = Path(__file__).resolve().parents[2] / "docs" / "larger_than_memory.rst"

pytestmark = [
    pytest.mark.skipif(not PAGE.is_file(), reason="needs the source tree (docs/)"),
    # The cluster recipe gives its workers 512 MiB, which AddressSanitizer's shadow memory and
    # quarantine overrun (the nanny restarts them in a loop); test_dask_distributed.py runs
    # the same strided.dask paths on worker processes under the sanitizer.
    pytest.mark.skipif("libasan" in os.environ.get("LD_PRELOAD", ""),
                       reason="the recipe's 512 MiB workers do not fit AddressSanitizer"),
    pytest.mark.thread_unsafe(reason="starts a cluster of worker processes"),
]


def python_blocks(text: str) -> list[str]:
    """The ``.. code-block:: python`` blocks of a page, dedented."""
    return [textwrap.dedent(block) for block in
            re.findall(r"^\.\. code-block:: python\n\n((?:(?:   .*)?\n)+)", text, re.M)]


def test_the_pages_recipes_run(tmp_path):
    for module in ("dask.array", "distributed", "zarr", "xarray"):
        pytest.importorskip(module)
    blocks = python_blocks(PAGE.read_text(encoding="utf-8"))
    assert len(blocks) == 8           # dask, out=, zarr -> zarr, cluster, xarray, cubed, zarr's two
    if importlib.util.find_spec("cubed") is None:       # the cubed recipe only where it is
        blocks = [block for block in blocks if "import cubed" not in block]
    script = tmp_path / "larger_than_memory.py"
    script.write_text("\n".join(blocks) + '\nprint("recipes: ok")\n', encoding="utf-8")
    out = run_isolated(f"""
import runpy
runpy.run_path({str(script)!r}, run_name="__main__")
""", timeout=300)
    assert out.strip().endswith("recipes: ok")
