"""Package-level contract: what `import strided` does and does not load, the build's flags."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import strided
from strided import _copy


def test_import_loads_no_array_backend_but_numpy():
    code = (
        "import sys, strided; "
        "bad = [m for m in ('torch', 'jax', 'cupy', 'array_api_strict', 'array_api_compat') "
        "if m in sys.modules]; print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_import_is_light_and_interop_loads_on_first_use():
    code = (
        "import sys, strided; before = 'numpy' in sys.modules; "
        "import numpy as np; v = strided.view(np.arange(4), strided.layout_of(np.arange(4))); "
        "print(before, strided.interop.describe(v).library, 'interop' in dir(strided))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "numpy", "True"]
    with pytest.raises(AttributeError, match="no_such_name"):
        strided.no_such_name  # noqa: B018


def test_openmp_flag_is_a_bool_and_matches_the_core():
    assert strided.openmp_enabled() in (True, False)
    assert _copy.max_threads() >= 1
    if not strided.openmp_enabled():
        assert _copy.max_threads() == 1


def test_typing_and_cython_files_are_installed():
    package = Path(strided.__file__).parent
    for name in ("py.typed", "_core.pyi", "_core.pxd", "_copy.pyi", "_copy.pxd", "_openmp.pxd",
                 "interop/_capsule.pyi", "interop/_capsule.pxd", "interop/_ndarray.pyi",
                 "interop/_tensor.pyi", "interop/_tensor.pxd"):
        assert (package / name).is_file(), name


def test_every_compiled_module_has_a_stub():
    """A .pyi next to each extension module: the built ones of an installed package, or the
    .pyx sources of an editable one."""
    package = Path(strided.__file__).parent
    compiled = [*package.rglob("*.so"), *package.rglob("*.pyd"), *package.rglob("*.pyx")]
    assert compiled
    for module in compiled:
        stub = module.with_name(module.name.split(".")[0] + ".pyi")
        assert stub.is_file(), module


def test_command_line_lives_in_its_subpackage():
    """explain and bench are installed under strided/_cli; __main__.py only calls _cli.main."""
    package = Path(strided.__file__).parent
    for name in ("__main__.py", "_cli/__init__.py", "_cli/_report.py", "_cli/explain.py",
                 "_cli/bench_layout.py", "_cli/bench_copy.py"):
        assert (package / name).is_file(), name
    assert {p.name for p in package.glob("_*.py")} == {"__init__.py", "__main__.py"}
    code = "import sys, strided; print(sorted(m for m in sys.modules if '_cli' in m))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_public_names():
    for name in strided.__all__:
        assert hasattr(strided, name), name
    assert issubclass(strided.LayoutIndexError, IndexError)
    assert issubclass(strided.LayoutIndexError, ValueError)
    assert strided.MAX_RANK == 64
