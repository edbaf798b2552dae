"""Conversion benchmark: ``strided.copyto`` with a dtype change (and ``scale``/``shift``) against
the numpy, torch and OpenCV chains people write, a contiguous cast and a memcpy
(:mod:`harness.bench_convert`).

Usage::

    python benchmarks/bench_convert.py [--cases NAME,...] [--threads N,...] [--repeat N]
                                       [--sample-ms MS] [--quick] [--no-torch] [--no-cv2]
                                       [--markdown] [--json FILE] [--plot FILE] [--note TEXT]

With no options: every case at full size, 1 and 2 threads, 15 samples (~1 minute on 2 cores).
See ``benchmarks/README.md``.
"""

from __future__ import annotations

import sys

from harness.bench_convert import main

if __name__ == "__main__":
    sys.exit(main())
