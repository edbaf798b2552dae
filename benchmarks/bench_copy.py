"""Relayout benchmark: ``strided.copyto`` against ``np.copyto``, torch's ``copy_`` and a memcpy.

Usage::

    python benchmarks/bench_copy.py [--sizes MIB,...] [--dtypes DTYPE,...] [--cases NAME,...]
                                    [--threads N] [--repeat N] [--quick] [--markdown]

With no options: every case, float32 and uint8, at 4, 64 and 512 MiB (several minutes, ~1.5 GiB
of memory at 512 MiB). A thin wrapper: the benchmark lives in the installed package
(:mod:`strided._cli.bench_copy`), so that ``python -m strided bench`` runs the same code (with a
small default). See ``benchmarks/README.md``.
"""

from __future__ import annotations

import sys

from strided._cli.bench_copy import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], prog="python benchmarks/bench_copy.py"))
