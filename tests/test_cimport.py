"""The installed ``_core.pxd`` lets other Cython code ``cimport`` the core's C routines."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

# Cython and setuptools (for pyximport) are in the test extra: a missing one fails, never skips.
import Cython  # noqa: F401
import pyximport  # noqa: F401

import strided

USER_MODULE = """
# cython: language_level=3
from libc.stdint cimport int64_t
from strided._core cimport MAX_NDIM, STATUS_OK, c_overlaps, c_span


def span_and_overlap(sizes, strides):
    cdef int64_t sz[MAX_NDIM]
    cdef int64_t st[MAX_NDIM]
    cdef int64_t lo, hi
    cdef int i, nd = len(sizes)
    for i in range(nd):
        sz[i] = sizes[i]
        st[i] = strides[i]
    if c_span(nd, sz, st, 0, &lo, &hi) != STATUS_OK:
        raise OverflowError("span")
    return lo, hi, c_overlaps(nd, sz, st, -1)
"""

DRIVER = """
import sys
import pyximport
sys.path.insert(0, {include!r})  # where strided/_core.pxd is found (site-packages or src)
pyximport.install(language_level=3, build_dir={build!r})
import use_core
print(use_core.span_and_overlap((2, 3), (-5, 1)), use_core.span_and_overlap((3, 3), (1, 1)))
"""


def test_cimport_from_another_cython_module(tmp_path):
    package_dir = Path(strided.__file__).parent
    assert (package_dir / "_core.pxd").is_file()
    (tmp_path / "use_core.pyx").write_text(textwrap.dedent(USER_MODULE))
    driver = DRIVER.format(include=str(package_dir.parent), build=str(tmp_path / "build"))
    result = subprocess.run(
        [sys.executable, "-c", driver], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "(-5, 2, 0) (0, 4, 1)"
