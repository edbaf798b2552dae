"""Shared pytest configuration: hypothesis profiles, the shared helpers and the benchmark
harness on ``sys.path``.

Select a profile with the ``HYPOTHESIS_PROFILE`` environment variable:

``dev`` (default)
    100 examples per property, no deadline: quick local runs.
``ci``
    200 examples per property, no deadline (CI machines are slow and shared, and no test here
    asserts timing), the reproduction blob printed on failure.

Tests marked ``@pytest.mark.slow`` (exhaustive sweeps, seconds to minutes) are skipped unless
the environment variable ``STRIDED_SLOW`` is ``1``; ``.ci/run`` sets it for its main test run.

The tests live in folders that mirror the package (``tests/README.md``): ``core/``, ``engine/``,
``interop/``, ``cli/`` and ``package/``. The helpers they share stay at the top of ``tests/``
as plain top-level modules (``strategies``, ``isolated``, ``guarded``, ``convert_oracle``,
``dlpack_producer``, ``interop_backends``; ``c/`` and ``typing/`` beside them), imported as
``from strategies import ...``: ``tests/`` is on ``sys.path`` (pytest's import mode puts this
conftest's folder there; this module makes sure of it), so they import from any folder, in a
checkout and in a copy of ``tests/`` run against the installed wheel alike. The folders of
tests are not packages (no ``__init__.py``): pytest's default "prepend" import mode
(``pyproject.toml`` sets no other) puts each test's folder on ``sys.path`` and imports the test
by its basename, so basenames must stay unique across folders, and a test may import another of
its folder by name (``from test_copy_engine import ...``). :func:`isolated.run_isolated`'s
subprocesses get ``tests/`` and every folder of tests on their ``PYTHONPATH`` for the same
imports.

The benchmark harness (``benchmarks/harness``) is not installed: in a checkout, the tests of the
harness (``cli/test_bench.py``, ``cli/test_plot.py``) import it from ``benchmarks/``, put first
on ``sys.path`` here. Where there is no checkout (the installed wheel is tested from a copy of
``tests/``), those tests are not collected: they test the repository, not the package.
"""

from __future__ import annotations

import ast
import functools
import os
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=200,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=100, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


def _serialize_ast_parse():
    """Let one thread at a time run :func:`ast.parse` (CPython before 3.13).

    CPython 3.11 and 3.12 count the AST constructor's recursion in one counter per interpreter
    (cpython#106905): two threads converting trees at once (a garbage collection inside one
    conversion can switch threads) raise ``SystemError: AST constructor recursion depth
    mismatch``. The thread-parallel run (``.ci/run``, 4 threads a test) reaches ``ast.parse``
    through hypothesis: ``st.permutations(range(0))`` builds ``list``, whose signature
    :mod:`inspect` parses from text; ``.filter`` lambdas and the constants hypothesis reads from
    the tests' sources are parsed too. A CI run failed on it once; a stress of 3 threads parsing
    beside a thread making cyclic garbage reproduces it within 20 s, and none with this lock.
    Not strided's code: its tests' own tooling.
    """
    if sys.version_info >= (3, 13):
        return
    parse = ast.parse
    lock = threading.Lock()

    @functools.wraps(parse)
    def parse_alone(*args, **kwargs):
        with lock:
            return parse(*args, **kwargs)

    ast.parse = parse_alone


_serialize_ast_parse()

TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

BENCHMARKS = TESTS.parent / "benchmarks"
#: The test modules that import the harness (benchmarks/harness), relative to tests/.
HARNESS_TESTS = ["cli/test_bench.py", "cli/test_plot.py"]
if (BENCHMARKS / "harness" / "__init__.py").is_file():
    sys.path.insert(0, str(BENCHMARKS))
    collect_ignore: list[str] = []
else:
    collect_ignore = HARNESS_TESTS


def pytest_collection_modifyitems(config, items):
    """Skip the tests marked ``slow`` unless ``STRIDED_SLOW=1``."""
    if os.environ.get("STRIDED_SLOW") == "1":
        return
    skip = pytest.mark.skip(reason="slow: set STRIDED_SLOW=1 to run it")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
