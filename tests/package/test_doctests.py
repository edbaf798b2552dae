"""Run the documentation's examples as tests.

(a) the ``>>>`` examples in the docstrings of every module of the installed package, and
(b) the ``>>>`` examples in ``README.md`` and ``docs/*.rst`` (located from this file, so the
    repository root does not need to be importable: the tests use the installed package).
"""

from __future__ import annotations

import ast
import doctest
import importlib
import importlib.util
import pkgutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# The modules whose docstrings must be tested. A module that does not import is reported as a
# failure, not silently skipped: it is part of the package.
REQUIRED_MODULES = [
    "strided",
    "strided.layout",
    "strided.formats",
    "strided._core",
    "strided._cli",
    "strided._cli.explain",
]


def _package_modules() -> list[str]:
    """The required modules, then every other module found in the installed package."""
    names = list(REQUIRED_MODULES)
    try:
        import strided
    except Exception:  # reported by the test of the "strided" module itself
        return names
    for info in pkgutil.walk_packages(strided.__path__, prefix="strided.", onerror=lambda _: None):
        if info.name not in names:
            names.append(info.name)
    return names


MODULES = _package_modules()

#: The benchmark harness of the checkout (benchmarks/harness, not installed; conftest.py puts
#: benchmarks/ on sys.path): its examples are tested too, where there is a checkout.
HARNESS = ROOT / "benchmarks" / "harness"
HARNESS_MODULES = sorted("harness" if p.stem == "__init__" else f"harness.{p.stem}"
                         for p in HARNESS.glob("*.py"))

# Modules whose docstrings must hold at least one example, so that this test cannot pass
# vacuously when the examples are lost.
MUST_HAVE_EXAMPLES = {"strided.layout", "strided.formats"}

MODULE_FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
# Documentation files may show an exception with its public name (``strided.LayoutIndexError``)
# and a shortened message; the type is still checked.
FILE_FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE | doctest.IGNORE_EXCEPTION_DETAIL


def _doc_files() -> list[Path]:
    files = [ROOT / "README.md"]
    docs = ROOT / "docs"
    if docs.is_dir():
        files.extend(sorted(docs.glob("*.rst")))
    return files


@pytest.mark.parametrize("name", MODULES + HARNESS_MODULES)
def test_module_docstring_examples(name: str) -> None:
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        # A module found in the package that needs an optional backend (torch, ...) that is not
        # installed; the required modules never skip.
        missing = exc.name or ""
        if name in REQUIRED_MODULES or missing == "strided" or missing.startswith("strided."):
            raise
        pytest.skip(f"{name} needs {missing}, which is not installed")
    result = doctest.testmod(
        module,
        optionflags=MODULE_FLAGS,
        report=True,
        verbose=False,
    )
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"
    if name in MUST_HAVE_EXAMPLES:
        assert result.attempted > 0, f"{name} has no docstring examples"


def _names(source: str) -> tuple[set[str], set[str]]:
    """(names an example binds, names it reads); both empty when it does not parse."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set(), set()
    bound, read = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
    return bound, read


def skip_examples_needing(test: doctest.DocTest, module: str) -> int:
    """Mark SKIP every example that uses ``module``, or a name an earlier such example bound.

    torch is optional: the documentation's torch examples run where it is installed (CI's main
    run) and are skipped, not failed, where it is not (the serial build's run). Returns the
    number of examples skipped.
    """
    tainted = {module}
    skipped = 0
    for example in test.examples:
        bound, read = _names(example.source)
        if module in example.source or read & tainted:
            example.options[doctest.SKIP] = True
            tainted |= bound
            skipped += 1
    return skipped


@pytest.mark.parametrize("path", _doc_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_documentation_examples(path: Path) -> None:
    if not path.is_file():
        pytest.skip(f"{path.relative_to(ROOT)} is absent")
    test = doctest.DocTestParser().get_doctest(
        path.read_text(encoding="utf-8"), {"__name__": "__main__"}, path.name, str(path), 0
    )
    if importlib.util.find_spec("torch") is None:
        skip_examples_needing(test, "torch")
    runner = doctest.DocTestRunner(optionflags=FILE_FLAGS, verbose=False)
    runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} example(s) failed in {path.relative_to(ROOT)}"


def test_torch_examples_are_found_and_followed() -> None:
    """The skipping rule catches torch examples and the examples that use their results."""
    text = """
>>> import numpy as np
>>> import torch
>>> t = torch.zeros(3)
>>> u = t + 1
>>> a = np.zeros(2)
>>> a.sum()
np.float64(0.0)
>>> u.sum()
tensor(3.)
"""
    test = doctest.DocTestParser().get_doctest(text, {}, "t", "t", 0)
    assert skip_examples_needing(test, "torch") == 4
    skipped = [bool(e.options.get(doctest.SKIP)) for e in test.examples]
    assert skipped == [False, True, True, True, False, False, True]


def test_readme_has_examples() -> None:
    readme = ROOT / "README.md"
    if not readme.is_file():
        pytest.skip("README.md is absent")
    parser = doctest.DocTestParser()
    examples = parser.get_examples(readme.read_text(encoding="utf-8"))
    assert len(examples) > 0, "README.md has no >>> examples"
