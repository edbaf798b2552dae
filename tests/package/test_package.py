"""Package-level contract: what `import strided` does and does not load, the build's flags."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

import strided
from strided import _copy


def test_import_loads_no_array_backend_but_numpy():
    code = (
        "import sys, strided; "
        "bad = [m for m in ('torch', 'jax', 'cupy', 'array_api_strict', 'array_api_compat', "
        "'dask', 'distributed', 'zarr', 'xarray') if m in sys.modules]; print(bad)"
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
    """explain and the bench self-check are installed under strided/_cli; __main__.py only
    calls _cli.main."""
    package = Path(strided.__file__).parent
    for name in ("__main__.py", "_cli/__init__.py", "_cli/_common.py", "_cli/explain.py",
                 "_cli/svg.py", "_cli/selfcheck.py"):
        assert (package / name).is_file(), name
    # _typing.py holds annotation names only (imported by type checkers, never at run time);
    # _dtypes.py is the element-type table the engine, the adapters and the CLI read;
    # _normalize.py turns the image form (mean, std, max_value) into the affine step;
    # _zarr_io.py reads and writes zarr chunks as bytes for strided.dask (imported with zarr);
    # _caches.py reads the machine's cache sizes, which the engine's tuning follows;
    # _buffers.py hands out the zarr codecs' large results on reused blocks
    assert {p.name for p in package.glob("_*.py")} == {"__init__.py", "__main__.py", "_typing.py",
                                                      "_dtypes.py", "_normalize.py",
                                                      "_zarr_io.py", "_caches.py", "_buffers.py"}
    code = "import sys, strided; print(sorted(m for m in sys.modules if '_cli' in m))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_benchmark_harness_is_not_installed():
    """The side-by-side harness (peers, records, charts) lives in the repository's benchmarks/:
    no module of it, and no file of its names, is in the installed package."""
    for name in ("strided._cli.bench_copy", "strided._cli.bench_convert",
                 "strided._cli.bench_layout", "strided._cli.plot", "strided._cli._report"):
        assert importlib.util.find_spec(name) is None, name
    package = Path(strided.__file__).parent
    harness_files = [p for p in package.rglob("*.py")
                     if p.name.startswith("bench_") or p.name in ("plot.py", "_report.py")]
    assert harness_files == []
    assert sorted(p.name for p in (package / "_cli").glob("*.py")) == [
        "__init__.py", "_common.py", "explain.py", "selfcheck.py", "svg.py"]


def test_typing_names_are_for_type_checkers_only():
    """The overloads' array types (strided._typing) are imported under TYPE_CHECKING: using
    relayout and view imports neither that module nor torch."""
    code = ("import sys, numpy as np, strided as st; st.relayout(np.zeros((2, 3)), 'F'); "
            "st.view(np.zeros(4), st.Layout((2,), itemsize=8)); "
            "print('strided._typing' in sys.modules, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_version_and_license_come_with_the_metadata():
    """One version, written in __init__.py: the installed metadata carries the same string
    (meson.build reads it through tools/version.py), and the license travels with the package
    (PEP 639: License-Expression, and the LICENSE text in the dist-info)."""
    import importlib.metadata as md

    assert md.version("strided") == strided.__version__
    meta = md.metadata("strided")
    assert meta["License-Expression"] == "BSD-3-Clause"
    assert "LICENSE" in meta.get_all("License-File", [])
    licenses = [f for f in md.files("strided") or [] if f.name == "LICENSE"]
    assert licenses and "BSD 3-Clause" in licenses[0].read_text(encoding="utf-8")
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL", []))
    assert {"Homepage", "Documentation", "Issues", "Changelog"} <= urls.keys()
    versions = {c.rsplit(" :: ", 1)[1] for c in meta.get_all("Classifier", [])
                if c.startswith("Programming Language :: Python :: 3.")}
    assert versions == {"3.10", "3.11", "3.12", "3.13", "3.14"}


def test_the_build_reads_the_version_from_init():
    """tools/version.py (run by meson.build) parses __version__ out of __init__.py; checked in
    the source tree only (an installed wheel has no tools/)."""
    script = Path(__file__).resolve().parents[2] / "tools" / "version.py"
    init = Path(__file__).resolve().parents[2] / "src" / "strided" / "__init__.py"
    if not script.is_file() or not init.is_file():
        pytest.skip("needs the source tree (tools/version.py, src/strided/__init__.py)")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == strided.__version__


def test_public_names():
    for name in strided.__all__:
        assert hasattr(strided, name), name
    assert issubclass(strided.LayoutIndexError, IndexError)
    assert issubclass(strided.LayoutIndexError, ValueError)
    assert strided.MAX_RANK == 64
