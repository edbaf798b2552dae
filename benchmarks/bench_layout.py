"""Per-call cost of ``strided.Layout`` against the numpy and torch calls that answer alike.

Usage::

    python benchmarks/bench_layout.py [--quick] [--repeat N] [--sample-ms MS] [--no-torch]
                                      [--markdown]

A thin wrapper: the benchmark lives in the installed package (:mod:`strided._cli.bench_layout`),
so that ``python -m strided bench layout`` runs the same code. See ``benchmarks/README.md``.
"""

from __future__ import annotations

import sys

from strided._cli.bench_layout import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
