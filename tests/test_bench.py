"""The benchmarks: the layout one's reference agrees with strided; both run and print tables.

The reference (:class:`strided._bench.PyLayout`, :func:`strided._bench.py_buffer_size`) is only
a fair baseline if it computes the same answers as the compiled core, so it is checked against
:class:`strided.Layout` on random and hand-made layouts. The relayout benchmark
(:mod:`strided._bench_copy`) is smoke-tested on tiny sizes, with and without torch, and its
cases and byte check are tested. Timings are never asserted.
"""

from __future__ import annotations

import importlib.util
import math
import random
import re

import numpy as np
import pytest

import strided
import strided._cli.bench_copy as bench_copy
from strided import Layout, buffer_size
from strided._cli.bench_layout import (
    CASES,
    OPERATIONS,
    PyLayout,
    main,
    overlap_decision,
    py_buffer_size,
    run,
)


def _random_layouts(seed: int, count: int) -> list[tuple[tuple[int, ...], tuple[int, ...], int]]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        rank = rng.randint(0, 5)
        sizes = tuple(rng.randint(0, 4) for _ in range(rank))
        strides = tuple(rng.randint(-6, 6) for _ in range(rank))
        out.append((sizes, strides, rng.randint(-5, 40)))
    return out


def _brute_overlaps(sizes: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    offsets: list[int] = [0]
    for n, s in zip(sizes, strides, strict=True):
        offsets = [o + k * s for o in offsets for k in range(n)]
    return len(set(offsets)) != len(offsets)


def _assert_same(sizes: tuple[int, ...], strides: tuple[int, ...] | None, offset: int = 0,
                 itemsize: int = 4) -> None:
    ref = PyLayout(sizes, strides, offset=offset, itemsize=itemsize)
    lay = Layout(sizes, strides, offset=offset, itemsize=itemsize)
    where = f"sizes={sizes} strides={strides} offset={offset} itemsize={itemsize}"
    assert ref.sizes == lay.sizes, where
    assert ref.strides == lay.strides, where
    assert ref.size == lay.size, where
    assert ref.span == lay.span, where
    assert ref.is_packed == lay.is_packed, where
    assert ref.overlaps == lay.overlaps, where
    for align in (1, 4, 16):
        assert ref.buffer_size(align) == lay.buffer_size(align), (where, align)
        assert py_buffer_size(sizes, strides, itemsize=itemsize, align=align) == buffer_size(
            sizes, strides, itemsize=itemsize, align=align
        ), (where, align)


@pytest.mark.parametrize("seed", range(4))
def test_reference_agrees_with_layout_on_random_layouts(seed: int) -> None:
    for sizes, strides, offset in _random_layouts(seed, 150):
        for itemsize in (1, 4):
            _assert_same(sizes, strides, offset, itemsize)


def test_reference_overlaps_is_exact() -> None:
    # every path of overlap_decision is taken, and each answer matches brute force
    paths = set()
    for sizes, strides, _ in _random_layouts(99, 600):
        got, path = overlap_decision(sizes, strides)
        paths.add(path)
        assert got == _brute_overlaps(sizes, strides), (sizes, strides, path)
    assert paths == {"empty", "stride 0", "sufficient test", "pigeonhole", "enumeration"}


@pytest.mark.parametrize(
    ("sizes", "strides", "itemsize", "align", "expected"),
    [
        # DirectML DMLCalcBufferTensorSize: (dot(sizes - 1, strides) + 1) * itemsize, DWORD-aligned
        ((1, 1, 3, 5), (15, 15, 5, 1), 2, 4, 32),     # NCHW, 30 bytes -> 32
        ((1, 1, 3, 5), (15, 1, 5, 1), 2, 4, 32),      # NHWC
        ((2, 3), (5, 1), 1, 1, 8),                    # A B C x x D E F
        ((2, 3, 4, 5), (20, 0, 5, 1), 4, 4, 160),     # NHWC, broadcast C
        ((2, 2, 3), (6, 3, 1), 4, 4, 48),             # DHW
        ((4,), (-1,), 4, 1, 16),                      # negative stride: the span counts
        ((0, 3), (3, 1), 4, 4, 0),                    # empty
        ((), (), 2, 4, 4),                            # a scalar: 2 bytes -> 4
    ],
)
def test_reference_buffer_size_directml_examples(
    sizes: tuple[int, ...], strides: tuple[int, ...], itemsize: int, align: int, expected: int
) -> None:
    assert py_buffer_size(sizes, strides, itemsize=itemsize, align=align) == expected
    assert buffer_size(sizes, strides, itemsize=itemsize, align=align) == expected


@pytest.mark.parametrize(
    ("sizes", "strides", "offset", "span", "packed", "overlaps"),
    [
        ((2, 2, 3), (6, 3, 1), 0, (0, 11), True, False),          # DHW
        ((1, 1, 3, 5), (15, 1, 5, 1), 0, (0, 14), True, False),   # NHWC, N = C = 1
        ((2, 3), (5, 1), 0, (0, 7), False, False),                # padded rows
        ((2, 3), (-3, 1), 3, (0, 5), True, False),                # rows reversed
        ((2, 3, 4, 5), (20, 0, 5, 1), 0, (0, 39), False, True),   # broadcast C
        ((3, 3), (1, 1), 0, (0, 4), False, True),                 # sliding window
        ((3, 3), (2, 3), 0, (0, 10), False, False),               # needs the enumeration
        ((0, 4), (4, 1), 2, (2, 1), True, False),                 # empty
    ],
)
def test_reference_hand_cases(
    sizes: tuple[int, ...], strides: tuple[int, ...], offset: int, span: tuple[int, int],
    packed: bool, overlaps: bool,
) -> None:
    ref = PyLayout(sizes, strides, offset=offset)
    assert (ref.span, ref.is_packed, ref.overlaps) == (span, packed, overlaps)
    _assert_same(sizes, strides, offset)


def test_reference_default_strides_are_packed_row_major() -> None:
    assert PyLayout((2, 3, 4)).strides == Layout((2, 3, 4)).strides == (12, 4, 1)
    assert PyLayout((2, 0, 4)).strides == Layout((2, 0, 4)).strides


@pytest.mark.parametrize(
    ("sizes", "strides", "kwargs"),
    [
        ((2, -1), None, {}),
        ((2, 3), (1,), {}),
        ((2, True), None, {}),
        ((2, 3.0), None, {}),
        ("23", None, {}),
        (None, None, {}),
        ((2, 3), None, {"itemsize": 0}),
        ((2, 3), (1 << 63, 1), {}),
        ((2,) * 65, None, {}),
        ((1 << 40, 1 << 40), None, {}),
        ((3,), (1 << 62,), {}),
    ],
)
def test_reference_validates_like_layout(
    sizes: object, strides: object, kwargs: dict[str, int]
) -> None:
    with pytest.raises((TypeError, ValueError, OverflowError)) as core:
        Layout(sizes, strides, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(core.type):
        PyLayout(sizes, strides, **kwargs)  # type: ignore[arg-type]


def test_cases_agree_and_cover_the_ranks() -> None:
    ranks = {case.rank for case in CASES}
    assert {1, 2, 4, 5, 8} <= ranks
    for case in CASES:
        _assert_same(case.sizes, case.strides, case.offset)


def test_run_returns_one_result_per_case_and_operation() -> None:
    results = run(CASES[:2], repeat=2, sample_ms=0.2)
    assert len(results) == 2 * len(OPERATIONS)
    for r in results:
        assert len(r.strided_ns) == len(r.python_ns) == 2
        assert r.strided_median > 0 and r.python_median > 0 and r.ratio > 0


def test_main_quick_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert f"strided.openmp_enabled() = {strided.openmp_enabled()}" in out
    assert "python 3." in out
    header = next(line for line in out.splitlines() if line.startswith("case"))
    for column in ("rank", "operation", "strided ns", "python ns", "py/strided"):
        assert column in header
    for case in CASES:
        for label, _ in OPERATIONS:
            row = re.compile(rf"^{re.escape(case.name)}\s+{case.rank}\s+{re.escape(label)}\s+"
                             rf"[\d,]+\s+[\d,]+\s+[\d.]+x", re.MULTILINE)
            assert row.search(out), (case.name, label)
    assert "python: sufficient test" in out
    assert "python: stride 0" in out
    n_aim = sum(case.rank <= 5 for case in CASES) * len(OPERATIONS)
    assert re.search(rf"^aim \(strided <= 2,000 ns per call for rank <= 5\): \d+ of {n_aim} "
                     r"figures meet it - (MET|NOT MET by: )", out, re.MULTILINE)


def test_main_markdown(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--quick", "--markdown", "--repeat", "1", "--sample-ms", "0.2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    table = [line for line in lines if line.startswith("|")]
    assert len(table) == 2 + len(CASES) * len(OPERATIONS)
    assert re.fullmatch(r"\|[-:|]+\|", table[1])
    assert {line.count("|") for line in table} == {10}


def test_main_rejects_bad_options() -> None:
    with pytest.raises(SystemExit):
        main(["--repeat", "0"])
    with pytest.raises(SystemExit):
        main(["--no-such-option"])


def test_interop_benchmark_script_runs() -> None:
    """benchmarks/bench_interop.py runs end to end and prints one row per installed library."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_interop.py"
    if not script.is_file():
        pytest.skip("no checkout: benchmarks/ is absent")
    result = subprocess.run(
        [sys.executable, str(script), "--repeat", "1", "--sample-ms", "0.2", "--markdown"],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if line.startswith("| view(")]
    assert any("ndarray" in row for row in rows), result.stdout
    for row in rows:
        ratio = row.rstrip(" |").rsplit("|", 1)[1].strip()
        assert ratio.endswith("x") and float(ratio[:-1]) > 0


# ---- the relayout benchmark (strided._bench_copy) -------------------------------------------

TINY = ["--sizes", "0.25", "--quick"]


@pytest.mark.parametrize("dtype", ["float32", "uint8"])
@pytest.mark.parametrize("case", bench_copy.CASES, ids=lambda c: c.name)
def test_copy_cases_are_the_relayouts_they_name(case: bench_copy.Case, dtype: str) -> None:
    built = case.build(0.25, np.dtype(dtype))
    src, dst = built.src, built.dst
    assert np.shares_memory(src, built.src_base) and np.shares_memory(dst, built.dst_base)
    assert built.dst_base.flags.c_contiguous and built.src_base.flags.c_contiguous
    assert dst.size == built.dst_base.size == math.prod(built.shape)
    assert 0.2 < built.nbytes / bench_copy.MiB < 0.3
    np.copyto(dst, src)
    logical = src.reshape(built.shape)  # canonical order (NCHW, ...) or the matrix
    name = case.name
    if name.startswith("NCHW->NHWC"):
        expected = logical.transpose(0, 2, 3, 1)
    elif name == "NCDHW->NDHWC":
        expected = logical.transpose(0, 2, 3, 4, 1)
    elif name.startswith("NCHW->NCHW"):
        n, c, h, w = built.shape
        x = int(name.removeprefix("NCHW->NCHW"))
        expected = logical.reshape(n, c // x, x, h, w).transpose(0, 1, 3, 4, 2)
    else:
        expected = logical
    assert np.array_equal(built.dst_base, expected)
    unit_src = [ax for ax, st in enumerate(src.strides) if st == src.itemsize]
    unit_dst = [ax for ax, st in enumerate(dst.strides) if st == dst.itemsize]
    broadcast = 0 in src.strides
    assert broadcast == (name == "broadcast->packed")
    assert case.transposing == (not broadcast and unit_src != unit_dst)
    if name == "padded->packed":
        assert src.strides[-2] % 64 == 0 and src.strides[-2] > src.shape[-1] * src.itemsize


def test_copy_case_selection() -> None:
    assert [c.name for c in bench_copy.select_cases(["transpose2d"])] == ["transpose2d"]
    names = [c.name for c in bench_copy.select_cases(["NCHW->NCHW4", "pad"])]
    assert names == ["NCHW->NCHW4", "padded->packed"]
    assert len(bench_copy.select_cases(["nhwc"])) == 4
    assert len(bench_copy.select_cases(None)) == len(bench_copy.CASES) == 11
    with pytest.raises(ValueError, match="no case matches 'nope'"):
        bench_copy.select_cases(["nope"])


def _copy_rows(out: str) -> list[str]:
    return [line for line in out.splitlines()
            if line.strip("| ").split(" ", 1)[0] in bench_copy.CASES_BY_NAME]


def test_copy_main_prints_every_case_and_the_targets(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_copy.main([*TINY, "--threads", "2"]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.startswith("case"))
    assert header.split() == ["case", "dtype", "MiB", "shape", "strided", "numpy", "torch",
                              "memcpy", "memcpy", "x2", "st/peer", "best", "peer", "st/memcpy",
                              "others"]
    rows = _copy_rows(out)
    assert len(rows) == len(bench_copy.CASES) * 2
    number = r"\d+\.\d"
    torch_cell = number if importlib.util.find_spec("torch") else "-"
    for case in bench_copy.CASES:
        for dtype in ("float32", "uint8"):
            row = re.compile(
                rf"^{re.escape(case.name)}\s+{dtype}\s+0\.\d+\s+[\dx]+\s+{number}\s+{number}\s+"
                rf"{torch_cell}\s+{number}\s+{number}\s+{number}\dx\s+(numpy|torch)\s+"
                rf"{number}\dx\s+(\d+%|-)$", re.MULTILINE)
            assert row.search(out), (case.name, dtype)
    assert "identical bytes: strided" in out and "on every case (checked before timing)" in out
    assert re.search(r"^small copy \(16 x float32.*numpy/strided = [\d.]+x$", out, re.MULTILINE)
    assert "targets (issue 4 §3) at 0.25 MiB, 2 threads" in out
    assert "indicative only" in out
    for target in (r"every case >= 1\.0x best peer: \d+ of 22",
                   r"transposing cases >= 2x best peer \(geometric mean of 18\): [\d.]+x",
                   r"multi-byte transposing cases >= 0\.8x memcpy: \d+ of 9",
                   r"uint8 transposing cases >= 0\.5x memcpy: \d+ of 9",
                   r"16-element float32 copy <= np\.copyto: [\d,]+ ns vs [\d,]+ ns"):
        assert re.search(rf"^  {target}.* - (met|MISSED)", out, re.MULTILINE), target


def test_copy_main_without_torch(capsys: pytest.CaptureFixture[str],
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench_copy, "_torch", lambda: None)
    argv = [*TINY, "--cases", "transpose2d,broadcast", "--dtypes", "uint8", "--threads", "1",
            "--no-small", "--markdown"]
    assert bench_copy.main(argv) == 0
    out = capsys.readouterr().out
    assert "torch: not installed (its column shows -)" in out
    table = [line for line in out.splitlines() if line.startswith("|")]
    assert len(table) == 2 + 2
    assert re.fullmatch(r"\|[-:|]+\|", table[1])
    for row in table[2:]:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert len(cells) == 12  # no parallel memcpy column on 1 thread
        assert cells[6] == "-" and cells[9] == "numpy"
    assert "identical bytes: strided and np.copyto" in out
    assert "1 threads, peers numpy;" in out
    assert "; the targets are set for 2 threads; torch absent:" in out
    assert "small copy" not in out


def test_copy_check_catches_wrong_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    def wrong(dst: np.ndarray, src: np.ndarray, *, num_threads: int | None = None) -> None:
        np.copyto(dst, src)
        dst[(0,) * dst.ndim] += 1

    monkeypatch.setattr(strided, "copyto", wrong, raising=False)
    with pytest.raises(AssertionError, match=r"NCHW->NHWC/C3 uint8 0\.25 MiB: strided wrote other"):
        bench_copy.run_case(bench_copy.CASES_BY_NAME["NCHW->NHWC/C3"], "uint8", 0.25,
                            threads=1, repeat=1, sample_ms=0.1)


def _result(name: str, dtype: str, strided_s: float, numpy_s: float, memcpy_s: float,
            size: float = 64.0) -> bench_copy.Result:
    times = {"strided": [strided_s], "numpy": [numpy_s], "memcpy": [memcpy_s]}
    return bench_copy.Result(bench_copy.CASES_BY_NAME[name], dtype, size, 64 * 2**20,
                             (1,), 2, times)


def test_copy_target_summary_marks_met_and_missed() -> None:
    results = [
        _result("transpose2d", "float32", 1.0, 4.0, 0.9),   # 4x numpy, 0.9x memcpy
        _result("transpose2d", "uint8", 1.0, 1.0, 0.4),     # 1x numpy, 0.4x memcpy
        _result("padded->packed", "float32", 2.0, 1.0, 1.0),  # 0.5x numpy
        _result("padded->packed", "float32", 9.0, 1.0, 1.0, size=4.0),  # not at 64 MiB
    ]
    small = bench_copy.SmallCopy({"strided": 100.0, "numpy": 120.0}, 1.2)
    text = bench_copy.target_summary(results, small)
    assert "at 64 MiB, 2 threads, peers numpy; torch absent:" in text
    assert "every case >= 1.0x best peer: 2 of 3 - MISSED by padded->packed float32 (0.50x)" \
        in text
    assert "(geometric mean of 2): 2.00x - met" in text
    assert "multi-byte transposing cases >= 0.8x memcpy: 1 of 1 - met" in text
    assert "uint8 transposing cases >= 0.5x memcpy: 0 of 1 - MISSED by transpose2d uint8 " \
        "(0.40x)" in text
    assert "16-element float32 copy <= np.copyto: 100 ns vs 120 ns (1.20x) - met" in text
    assert results[0].gbps("strided") == pytest.approx(2 * 64 * 2**20 / 1e9)
    assert results[0].gbps("torch") is None


def test_copy_main_rejects_bad_options() -> None:
    for argv in (["--sizes", "0"], ["--sizes", "a"], ["--cases", "nope"], ["--threads", "0"],
                 ["--repeat", "0"], ["--dtypes", "complex64"], ["--dtypes", "nope"]):
        with pytest.raises(SystemExit):
            bench_copy.main(argv)


def test_copy_benchmark_script_runs() -> None:
    """benchmarks/bench_copy.py runs end to end (one case, one dtype, a tiny size)."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_copy.py"
    if not script.is_file():
        pytest.skip("no checkout: benchmarks/ is absent")
    result = subprocess.run(
        [sys.executable, str(script), *TINY, "--cases", "NCHW->NCHW32", "--dtypes", "float32",
         "--no-small", "--markdown"],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if line.startswith("| NCHW->NCHW32 ")]
    assert len(rows) == 1, result.stdout


def test_copy_others_share_of_the_cpu() -> None:
    # 10 s of machine CPU time, 5 s busy of which 2 s are this process's: others used 30%
    assert bench_copy._others_share((0.0, 0.0, 0.0), (10.0, 5.0, 2.0)) == pytest.approx(0.3)
    assert bench_copy._others_share(None, (10.0, 5.0, 2.0)) is None
    assert bench_copy._others_share((0.0, 0.0, 0.0), (10.0, 1.0, 2.0)) == 0.0
    snapshot = bench_copy._cpu_seconds()
    if snapshot is not None:
        assert snapshot[0] >= snapshot[1] >= 0 and snapshot[2] > 0
