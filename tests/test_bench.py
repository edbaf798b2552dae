"""The layout benchmark: its pure-Python reference agrees with strided, and it runs.

The reference (:class:`strided._bench.PyLayout`, :func:`strided._bench.py_buffer_size`) is only
a fair baseline if it computes the same answers as the compiled core, so it is checked against
:class:`strided.Layout` on random and hand-made layouts. Timings are never asserted.
"""

from __future__ import annotations

import random
import re

import pytest

import strided
from strided import Layout, buffer_size
from strided._bench import (
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
