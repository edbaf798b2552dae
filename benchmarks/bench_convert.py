"""Conversion benchmark: ``strided.copyto`` with a dtype change (and ``scale``/``shift``) against
the numpy, torch and OpenCV chains people write, a contiguous cast and a memcpy (issue 13 §4).

Usage::

    python benchmarks/bench_convert.py [--cases NAME,...] [--threads N,...] [--repeat N]
                                       [--sample-ms MS] [--quick] [--no-torch] [--no-cv2]
                                       [--markdown]

With no options: every case at full size, 1 and 2 threads, 15 samples (~1 minute on 2 cores).
A thin wrapper: the benchmark lives in the installed package (:mod:`strided._cli.bench_convert`),
so that ``python -m strided bench convert`` runs the same code. See ``benchmarks/README.md``.
"""

from __future__ import annotations

import sys

from strided._cli.bench_convert import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], prog="python benchmarks/bench_convert.py"))
