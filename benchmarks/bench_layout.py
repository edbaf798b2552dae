"""Per-call cost of ``strided.Layout`` against the numpy and torch calls that answer alike
(:mod:`harness.bench_layout`).

Usage::

    python benchmarks/bench_layout.py [--quick] [--repeat N] [--sample-ms MS] [--no-torch]
                                      [--markdown]

See ``benchmarks/README.md``.
"""

from __future__ import annotations

import sys

from harness.bench_layout import main

if __name__ == "__main__":
    sys.exit(main())
