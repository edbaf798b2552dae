"""benchmarks/bench_zarr.py runs (its ``--quick`` smoke mode, seconds) and prints its table:
a checkout's test (benchmarks/ is not installed; skipped where it is absent)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("zarr")

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_zarr.py"


@pytest.mark.skipif(not BENCH.is_file(), reason="no benchmarks/ (the installed-wheel run)")
def test_bench_zarr_quick():
    done = subprocess.run([sys.executable, str(BENCH), "--quick"], capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "| case | measured | contender | ms | x faster than zarr-python |" in done.stdout
    assert "target: transpose decode of the uint8 (3, 256, 256) chunk" in done.stdout
    assert done.stdout.count("| strided |") >= 14
