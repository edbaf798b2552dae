"""Test code run in a fresh interpreter, so that a crash fails a test instead of pytest.

:func:`run_isolated` runs a script in a subprocess with ``tests/`` (and its folders of tests)
on ``sys.path`` and returns its stdout. A script that checks many inputs registers each check
with :func:`probe` and ends with :func:`report`, which runs them all and prints ``name: ok``, or
``name:`` and the error (or the string the check returned); the test reads the lines back with
:func:`probe_results`::

    out = run_isolated('''
        from isolated import probe, report

        @probe
        def negative_strides():
            ...

        report()
    ''')
    assert probe_results(out)["negative_strides"] == "ok"
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

TESTS_DIR = Path(__file__).resolve().parent
#: The folders of test modules (tests/core, tests/engine, ...). A script may import a test module
#: by its name (``from test_copy_engine import ...``), as the tests do among themselves under
#: pytest's "prepend" import mode (conftest.py).
TEST_FOLDERS = sorted(p for p in TESTS_DIR.iterdir() if p.is_dir() and any(p.glob("test_*.py")))

PROBES: dict[str, Callable[[], Any]] = {}


def probe(fn: Callable[[], Any]) -> Callable[[], Any]:
    """Register a check for :func:`report` (usable as a decorator)."""
    PROBES[fn.__name__] = fn
    return fn


def report() -> None:
    """Run every registered check once; print ``name: outcome``, one line each."""
    for name, fn in PROBES.items():
        try:
            outcome = fn() or "ok"
        except Exception as exc:
            outcome = f"{type(exc).__name__}: {exc}"
        print(f"{name}: {outcome}".replace("\n", " "))


def probe_results(out: str) -> dict[str, str]:
    """{check name: "ok" or what went wrong}, from :func:`report`'s lines."""
    return dict(line.split(": ", 1) for line in out.splitlines())


def run_isolated(code: str, *, timeout: float = 300, **env_vars: str) -> str:
    """Run ``code`` in a fresh interpreter (tests/ and its folders of tests on sys.path, extra
    environment variables from ``env_vars``); return its stdout. Asserts a zero exit status: a
    crash (torch aborting, a segfault) fails the test instead of taking pytest down with it."""
    env = dict(os.environ, **env_vars)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(TESTS_DIR), *map(str, TEST_FOLDERS), env.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, env=env, cwd=TESTS_DIR, check=False)
    assert proc.returncode == 0, (f"subprocess exited with {proc.returncode}\n"
                                  f"--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}")
    return proc.stdout


def run_on_third_party_workers(code: str, *, deadline: int = 150) -> str:
    """Run ``code``, which waits on a third-party process pool with no timeout of its own
    (cubed's processes executor, dask's multiprocessing scheduler), in a fresh interpreter that
    dumps every thread's stack and exits if it is not done in ``deadline`` seconds; return its
    stdout.

    A run that hangs is tried once more, and its stacks are reported as a warning: a CI run once
    hung in such a pool for over an hour, never seen again in hundreds of runs here, and a hang
    there is not strided's to fix. A wrong result or a second hang fails the test.
    """
    import warnings

    script = (f"import faulthandler\nfaulthandler.dump_traceback_later({deadline}, exit=True)\n"
              + textwrap.dedent(code))
    try:
        return run_isolated(script, timeout=deadline + 60)
    except AssertionError as exc:
        if "Timeout (0:" not in str(exc):  # faulthandler's "Timeout (0:02:30)!"
            raise
        warnings.warn(f"a third-party process pool hung once; its stacks:\n{exc}", stacklevel=2)
        return run_isolated(script, timeout=deadline + 60)
