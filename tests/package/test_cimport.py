"""The installed ``.pxd`` files let other Cython code ``cimport`` strided's C routines: the
arithmetic of ``_core.pxd``, the copy engine of ``_copy.pxd``, the DLPack structs of
``interop/_capsule.pxd`` and the torch fast path of ``interop/_tensor.pxd``."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

# Cython and setuptools (for pyximport) are in the test extra: a missing one fails, never skips.
import Cython  # noqa: F401
import pytest
import pyximport  # noqa: F401

import strided


def _c_compiler() -> str | None:
    """The C compiler setuptools would call (CC, else the one Python was built with), if it is
    on PATH: .ci/run tests the installed wheel where none is, on purpose."""
    command = shlex.split(sysconfig.get_config_var("CC") or "cc")
    cc = shlex.split(os.environ.get("CC", "")) or command
    return shutil.which(cc[0]) if cc else None


USER_MODULE = """
# cython: language_level=3
from libc.stdint cimport int64_t
from strided._core cimport MAX_NDIM, STATUS_OK, c_overlaps, c_span
from strided._copy cimport copy_elements, copy_threads
from strided.interop._capsule cimport DLTensor
from strided.interop._tensor cimport copy_tensors


def dltensor_fields():
    # the DLPack struct of _capsule.pxd, filled by hand
    cdef int64_t shape[2]
    cdef DLTensor t
    shape[0] = 2
    shape[1] = 3
    t.ndim = 2
    t.shape = shape
    t.strides = NULL
    t.byte_offset = 0
    t.dtype.bits = 32
    return t.ndim, t.shape[1], t.dtype.bits


def copy_two_tensors(dst, src):
    return copy_tensors(dst, src, 1)


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


def transpose_bytes(bytearray dst, bytes src, int rows, int cols):
    # dst (cols x rows, row-major) = the transpose of src (rows x cols), by the engine
    cdef int64_t sz[2]
    cdef int64_t dst_strides[2]
    cdef int64_t src_strides[2]
    sz[0] = rows
    sz[1] = cols
    dst_strides[0] = 1
    dst_strides[1] = rows
    src_strides[0] = cols
    src_strides[1] = 1
    return copy_elements(dst, src, 2, sz, dst_strides, src_strides, 1, rows * cols,
                         copy_threads(None))
"""

DRIVER = """
import sys
import pyximport
sys.path.insert(0, {include!r})  # where strided/_core.pxd is found (site-packages or src)
pyximport.install(language_level=3, build_dir={build!r})
import use_core
print(use_core.span_and_overlap((2, 3), (-5, 1)), use_core.span_and_overlap((3, 3), (1, 1)))
dst = bytearray(6)
print(use_core.transpose_bytes(dst, bytes(range(6)), 2, 3), list(dst))
print(use_core.dltensor_fields(), use_core.copy_two_tensors(dst, dst))  # not tensors: declined
"""


def test_cimport_from_another_cython_module(tmp_path):
    if _c_compiler() is None:
        pytest.skip("needs a C compiler on PATH (an installed wheel is tested without one)")
    package_dir = Path(strided.__file__).parent
    assert (package_dir / "_core.pxd").is_file()
    assert (package_dir / "_copy.pxd").is_file()
    (tmp_path / "use_core.pyx").write_text(textwrap.dedent(USER_MODULE))
    driver = DRIVER.format(include=str(package_dir.parent), build=str(tmp_path / "build"))
    result = subprocess.run(
        [sys.executable, "-c", driver], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split("\n")[0] == "(-5, 2, 0) (0, 4, 1)"
    assert result.stdout.split("\n")[1] == "0 [0, 3, 1, 4, 2, 5]"     # 0: copied
    assert result.stdout.split("\n")[2] == "(2, 3, 32) False"
