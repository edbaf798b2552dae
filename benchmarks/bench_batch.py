"""Batch benchmark: a data loader's batch, N HWC uint8 images -> one normalised float32 NCHW
batch, ``strided.stack`` against torch ops + ``torch.stack``, numpy, albumentations and OpenCV's
``blobFromImages``, a contiguous cast and a memcpy (:mod:`harness.bench_batch`).

Usage::

    python benchmarks/bench_batch.py [--threads N,...] [--repeat N] [--sample-ms MS] [--quick]
                                     [--no-torch] [--no-cv2] [--no-albumentations]
                                     [--markdown] [--json FILE] [--plot FILE] [--note TEXT]

With no options: 64 images of 224x224x3, 1 and 2 threads, 15 samples (~1 minute on 2 cores).
See ``benchmarks/README.md``.
"""

from __future__ import annotations

import sys

from harness.bench_batch import main

if __name__ == "__main__":
    sys.exit(main())
