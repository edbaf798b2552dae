"""Print a recorded benchmark run (``--json FILE`` of ``bench_copy.py`` or ``bench_convert.py``)
and, with ``--plot FILE``, draw its chart, without timing anything (:mod:`harness.plot`).

Usage::

    python benchmarks/plot_record.py RECORD.json [--plot FILE] [--markdown]

``docs/conf.py`` prints and draws the records of ``benchmarks/results/`` with the same code.
"""

from __future__ import annotations

import sys

from harness.plot import main

if __name__ == "__main__":
    sys.exit(main())
