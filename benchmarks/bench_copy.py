"""Relayout benchmark: ``strided.copyto`` against ``np.copyto``, torch's ``copy_``, OpenCV and a
memcpy (:mod:`harness.bench_copy`).

Usage::

    python benchmarks/bench_copy.py [--sizes MIB,...] [--dtypes DTYPE,...] [--cases NAME,...]
                                    [--threads N] [--repeat N] [--quick] [--small] [--markdown]
                                    [--json FILE] [--plot FILE] [--note TEXT]

With no options: every case, float32 and uint8, at 4, 64 and 512 MiB (several minutes, ~1.5 GiB
of memory at 512 MiB); ``--small`` runs ten cases at 4 MiB in seconds. See
``benchmarks/README.md``.
"""

from __future__ import annotations

import sys

from harness.bench_copy import main

if __name__ == "__main__":
    sys.exit(main())
