"""The benchmark harness of strided: side-by-side timings, records and charts (not installed).

The scripts beside this package run it: ``python benchmarks/bench_copy.py`` (relayouts against
numpy, torch, OpenCV and a memcpy), ``bench_convert.py`` (converting copies), ``bench_batch.py``
(a data loader's batch, ``strided.stack``), ``bench_layout.py`` (the per-call cost of ``Layout``)
and ``plot_record.py`` (a recorded run, printed and drawn again). A script puts ``benchmarks/``
first on ``sys.path``, so ``import harness`` finds this package; the tests and ``docs/conf.py``
insert that folder themselves.

- :mod:`harness.report`: what the benchmarks share: machine facts, tables, case selection and
  the JSON records (the parser and the timing method come from the installed
  :mod:`strided._cli._common`, which the self-check ``python -m strided bench`` uses too);
- :mod:`harness.plot`: the charts of a record, live or read back;
- :mod:`harness.bench_copy`, :mod:`harness.bench_convert`, :mod:`harness.bench_batch`,
  :mod:`harness.bench_layout`: the benchmarks.
"""
