"""The benchmarks: their stand-ins answer as strided does; they run and print tables.

A comparison is only honest if both sides answer the same question, so the layout benchmark's
numpy and torch stand-ins (:mod:`harness.bench_layout`) are checked against
:class:`strided.Layout` on every timed case and on hand-made layouts. The relayout benchmark
(:mod:`harness.bench_copy`) is smoke-tested on tiny sizes, with and without torch, and its
cases and byte check are tested. Timings are never asserted. The harness lives in the
repository's ``benchmarks/`` (not installed): ``conftest.py`` puts that folder on ``sys.path``.
"""

from __future__ import annotations

import importlib.util
import itertools
import math
import re
import subprocess
import sys
import timeit
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from harness import bench_batch, bench_convert, bench_copy, bench_layout, plot
from harness.bench_layout import (
    CASES,
    OPERATIONS,
    Case,
    check_agreement,
    main,
    run,
    stand_in_answers,
)

import strided
from strided import Layout
from strided._cli import _common


def run_benchmark_script(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``benchmarks/NAME`` of the checkout with ``args`` (skip the test where there is no
    checkout: an installed wheel is tested without its benchmarks/); check it succeeded."""
    script = Path(__file__).resolve().parents[2] / "benchmarks" / name
    if not script.is_file():
        pytest.skip("no checkout: benchmarks/ is absent")
    result = subprocess.run([sys.executable, str(script), *args], capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return result

HAS_TORCH = importlib.util.find_spec("torch") is not None
QUESTIONS = {"layout", "span", "is_contiguous", "overlaps", "buffer_size"}


@pytest.fixture(scope="module")
def torch() -> object:
    return pytest.importorskip("torch")


# ---- the layout benchmark (harness.bench_layout) --------------------------------------------

#: Layouts beyond the timed cases, chosen to make the stand-ins disagree if they could.
EXTRA_CASES = (
    Case("column-major", (3, 4), (1, 3)),
    Case("size-1 dims with odd strides", (1, 3, 1), (99, 1, 7)),
    # (numpy keeps no offset for an empty view: where it "starts" is not an answer to compare)
    Case("empty", (0, 3), (3, 1)),
    Case("scalar", (), (), offset=5),
    Case("sliding window", (3, 3), (1, 1)),
    Case("interleaved, no overlap", (3, 3), (2, 3)),
    Case("reversed rows", (2, 3), (-3, 1), offset=3),
    Case("padded rows", (2, 3), (5, 1)),
)


@pytest.mark.parametrize("case", CASES + EXTRA_CASES, ids=lambda c: c.name)
def test_numpy_stand_ins_answer_as_strided(case: Case) -> None:
    answers = stand_in_answers(case)
    assert set(answers) == {"strided", "numpy"}
    assert set(answers["numpy"]) == QUESTIONS
    for question in QUESTIONS:
        assert answers["numpy"][question] == answers["strided"][question], question
    check_agreement(case)


@pytest.mark.parametrize("case", CASES + EXTRA_CASES, ids=lambda c: c.name)
def test_torch_stand_ins_answer_as_strided(case: Case, torch: object) -> None:
    answers = stand_in_answers(case, torch)
    if any(s < 0 for s in case.strides):  # torch has no negative strides
        assert "torch" not in answers
        return
    assert set(answers["torch"]) == {"layout", "is_contiguous"}
    for question, answer in answers["torch"].items():
        assert answer == answers["strided"][question], question
    check_agreement(case, torch)


def test_c_contiguous_is_is_packed_in_row_major_order() -> None:
    """numpy's c_contiguous, the stand-in for strided's contiguity, also decides is_packed for
    layouts in row-major order with no negative stride (and only there: a packed NHWC layout,
    or one with its rows reversed, is packed but not c_contiguous)."""
    row_major = 0
    for case in CASES + EXTRA_CASES:
        layout = Layout(case.sizes, case.strides, offset=case.offset, itemsize=4)
        c_contiguous = stand_in_answers(case)["numpy"]["is_contiguous"]
        forward = all(s >= 0 for s in layout.strides)
        if layout.order == tuple(range(layout.ndim)) and forward and not layout.is_broadcast:
            row_major += 1
            assert c_contiguous == layout.is_packed, case.name
        elif c_contiguous:
            assert layout.is_packed, case.name
    assert row_major >= 5
    nhwc = bench_layout.CASES_BY_NAME["NHWC packed"]
    assert Layout(nhwc.sizes, nhwc.strides).is_packed
    assert not stand_in_answers(nhwc)["numpy"]["is_contiguous"]


def test_the_check_catches_a_wrong_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(np.lib.array_utils, "byte_bounds", lambda a: (0, 4))
    with pytest.raises(AssertionError, match=r"rank-1 packed: numpy answers span"):
        check_agreement(CASES[0])


def test_operations_name_their_stand_ins() -> None:
    labels = [op.label for op in OPERATIONS]
    assert labels[0] == "construct" and "buffer_size()" in labels
    by_label = {op.label: op for op in OPERATIONS}
    assert "as_strided" not in by_label["construct"].numpy  # bound to V in the namespace
    assert by_label["construct + .is_packed"].numpy is None
    assert by_label["construct + .is_packed"].torch is None
    assert "c_contiguous" in by_label["construct + .is_contiguous"].numpy
    assert by_label["construct + .is_contiguous"].torch.endswith(".is_contiguous()")
    assert {case.rank for case in CASES} >= {1, 2, 4, 5, 8}


def test_run_times_every_contender_that_has_a_call() -> None:
    results = run(CASES[:2], repeat=2, sample_ms=0.2)
    assert len(results) == 2 * len(OPERATIONS)
    for r in results:
        expected = {"strided"}
        if r.operation.numpy is not None:
            expected.add("numpy")
        if r.operation.torch is not None and HAS_TORCH:
            expected.add("torch")
        assert set(r.times) == expected, r.operation.label
        assert all(len(samples) == 2 for samples in r.times.values())
        for name in expected - {"strided"}:
            assert r.ratio(name) > 0
        assert r.strided_median > 0 and r.ratio("missing") is None


def _table_rows(out: str) -> list[str]:
    names = tuple(case.name for case in CASES)
    return [line for line in out.splitlines() if line.startswith(names)]


def test_main_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--quick", "--repeat", "2", "--sample-ms", "0.3"]) == 0
    out = capsys.readouterr().out
    assert f"strided.openmp_enabled() = {strided.openmp_enabled()}" in out
    assert "python 3." in out and re.search(r"^  cpu: \S", out, re.MULTILINE)
    assert f"numpy {np.__version__}" in out
    header = next(line for line in out.splitlines() if line.startswith("case"))
    for column in ("rank", "operation", "strided ns", "numpy ns", "np/strided", "torch ns",
                   "torch/strided", "strided min"):
        assert column in header
    assert len(_table_rows(out)) == len(CASES) * len(OPERATIONS)
    number, ratio = r"[\d,]+", r"[\d.]+x"
    for case in CASES:
        row = re.compile(rf"^{re.escape(case.name)}\s+{case.rank}\s+construct\s+{number}\s+"
                         rf"{number}\s+{ratio}\s", re.MULTILINE)
        assert row.search(out), case.name
    assert re.search(r"construct \+ \.is_packed\s+[\d,]+\s+-\s+-\s+-\s+-\s+.*no numpy/torch call",
                     out)
    if HAS_TORCH:
        assert "torch 2." in out and "torch: no negative strides" in out
    n_aim = sum(case.rank <= 5 for case in CASES) * len(OPERATIONS)
    assert re.search(rf"^aim \(strided <= 2,000 ns per call for rank <= 5\): \d+ of {n_aim} "
                     r"figures meet it - (MET|NOT MET by: )", out, re.MULTILINE)


def test_main_markdown_without_torch(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--markdown", "--no-torch", "--repeat", "1", "--sample-ms", "0.2"]) == 0
    out = capsys.readouterr().out
    assert "torch: not installed (- columns)" in out
    table = [line for line in out.splitlines() if line.startswith("|")]
    assert len(table) == 2 + len(CASES) * len(OPERATIONS)
    assert re.fullmatch(r"\|[-:|]+\|", table[1])
    for row in table[2:]:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert len(cells) == 11
        assert cells[6] == cells[7] == "-"


def test_main_rejects_bad_options() -> None:
    for argv in (["--repeat", "0"], ["--sample-ms", "0"], ["--no-such-option"]):
        with pytest.raises(SystemExit):
            main(argv)


def test_interop_benchmark_script_runs() -> None:
    """benchmarks/bench_interop.py runs end to end (its rows' results agree, else it fails) and
    prints the rows of every installed library, a note for each missing one."""
    result = run_benchmark_script("bench_interop.py", "--repeat", "1", "--sample-ms", "0.2",
                                  "--markdown")
    rows = [line for line in result.stdout.splitlines()
            if line.startswith(("| view(", "| layout_of(", "| copyto("))]
    calls = [row.strip("|").split("|")[0].strip() for row in rows]
    assert {"view(ndarray, padded)", "layout_of(ndarray)", "copyto(ndarray, 16 float32)"} \
        <= set(calls), result.stdout
    for library, call in (("torch", "copyto(tensor, 16 float32)"), ("jax", "layout_of(jax)"),
                          ("array_api_strict", "view(array_api_strict, padded)")):
        if importlib.util.find_spec(library) is None:
            assert f"{library}: not installed, its rows are skipped" in result.stdout
        else:
            assert call in calls, (library, result.stdout)
    for row in rows:
        ratio = row.rstrip(" |").rsplit("|", 1)[1].strip()
        assert ratio.endswith("x") and float(ratio[:-1]) > 0


# ---- the relayout benchmark (harness.bench_copy) --------------------------------------------

TINY = ["--sizes", "0.25", "--quick"]


@pytest.mark.parametrize("dtype", ["float32", "uint8"])
@pytest.mark.parametrize("case", bench_copy.CASES, ids=lambda c: c.name)
def test_copy_cases_are_the_relayouts_they_name(case: bench_copy.Case, dtype: str) -> None:
    built = case.build(0.25, np.dtype(dtype))
    src, dst = built.src, built.dst
    assert np.shares_memory(src, built.src_base) and np.shares_memory(dst, built.dst_base)
    assert built.dst_base.flags.c_contiguous and built.src_base.flags.c_contiguous
    assert dst.size == built.dst_base.size == math.prod(built.shape)
    if case.fixed:  # an image of its own shape, whatever the size asked for
        assert built.shape == case.build(64, np.dtype(dtype)).shape and built.shape[0] == 3
    else:
        assert 0.2 < built.nbytes / bench_copy.MiB < 0.3
    np.copyto(dst, src)
    logical = src.reshape(built.shape)  # canonical order (NCHW, ...) or the matrix
    name = case.name
    if name.startswith("NCHW->NHWC"):
        expected = logical.transpose(0, 2, 3, 1)
    elif name.startswith("CHW->HWC"):
        expected = logical.transpose(1, 2, 0)
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
    if case.inverse_of is not None:  # the same shape, the layouts swapped
        forward = bench_copy.CASES_BY_NAME[case.inverse_of].build(0.25, np.dtype(dtype))
        assert forward.shape == built.shape
        assert forward.src.strides == dst.strides and forward.dst.strides == src.strides


@pytest.mark.parametrize("case", bench_copy.CASES, ids=lambda c: c.name)
def test_hptt_arguments_are_the_copy_as_a_transpose(case: bench_copy.Case) -> None:
    """HPTT's view of a case, B = A.transpose(perm) with A packed or a padded sub-block of
    the packed array ``outer``: checked with numpy, so it holds without HPTT built."""
    built = case.build(0.25, np.dtype(np.float32))
    args = bench_copy.hptt_arguments(built)
    if case.name.startswith("broadcast"):
        assert args is None          # a stride 0: no transpose reads it
        return
    assert args is not None
    a, b, perm, outer = args
    assert np.shares_memory(a, built.src_base) and b.flags.c_contiguous
    assert np.shares_memory(b, built.dst_base) and b.size == built.dst_base.size
    itemsize = a.itemsize
    if outer is None:
        assert a.flags.c_contiguous
    else:   # a's strides are those of the packed array of sizes outer
        packed = [math.prod(outer[k + 1:]) * itemsize for k in range(len(outer))]
        assert list(a.strides) == packed and all(o >= n for o, n in zip(outer, a.shape))
        assert outer != a.shape
    np.copyto(built.dst, built.src)
    assert np.array_equal(b, a.transpose(perm))
    assert (case.name == "padded->packed") == (outer is not None)


@pytest.fixture(autouse=True)
def _no_built_hptt(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
                   ) -> None:
    """The harness's tests run the same whether or not HPTT was built on this machine."""
    monkeypatch.setenv("STRIDED_HPTT_DIR", str(tmp_path_factory.mktemp("no-hptt")))


class FakeHptt:
    """HPTT's loader interface (supports, plan, close), transposing with numpy."""

    def __init__(self, wrong: bool = False) -> None:
        self.wrong, self.plans, self.closed = wrong, [], 0

    @staticmethod
    def supports(dtype: object) -> bool:
        return np.dtype(dtype) in (np.float32, np.float64)

    def plan(self, a, b, perm, nthreads, outer=None):
        self.plans.append((perm, nthreads, outer))
        if self.wrong:
            return lambda: b.fill(0)
        return lambda: np.copyto(b, a.transpose(perm))

    def close(self) -> None:
        self.closed += 1


def test_hptt_contender_is_checked_timed_and_freed() -> None:
    case = bench_copy.CASES_BY_NAME["padded->packed"]
    fake = FakeHptt()
    result = bench_copy.run_case(case, "float32", 0.25, threads=2, repeat=1, sample_ms=0.2,
                                 hptt=fake)
    assert result.times["hptt"] and fake.closed == 1
    perm, threads, outer = fake.plans[0]
    assert perm == (0, 1, 2, 3) and threads == 2 and outer is not None
    assert "hptt" in bench_copy.format_table([result]).splitlines()[0]
    bench_copy.run_case(case, "uint8", 0.25, threads=1, repeat=1, sample_ms=0.2, hptt=fake)
    assert len(fake.plans) == 1                 # uint8: nothing HPTT can run
    with pytest.raises(AssertionError, match="hptt wrote other bytes"):
        bench_copy.run_case(bench_copy.CASES_BY_NAME["NCHW->NHWC/C16"], "float32", 0.25,
                            threads=1, repeat=1, sample_ms=0.2, hptt=FakeHptt(wrong=True))


def test_hptt_is_left_out_where_its_loader_is_absent(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("STRIDED_HPTT_DIR", str(tmp_path))
    assert bench_copy.load_hptt() is None


def test_cold_mode_rotates_over_copies_three_times_the_cache() -> None:
    built = bench_copy.CASES_BY_NAME["NCHW->NHWC/C16"].build(0.25, np.dtype(np.float32))
    footprint = 3 * built.nbytes        # source, destination and memcpy's scratch
    assert bench_copy.cold_rounds(built, cache_bytes=footprint) == 3
    assert bench_copy.cold_rounds(built, cache_bytes=footprint // 3) == 1
    cache = 32 * bench_copy.MiB
    assert bench_copy.cold_rounds(built, cache_bytes=cache) == math.ceil(cache / built.nbytes)
    assert bench_copy.last_level_cache_bytes() >= 1 << 16
    calls: list[tuple[str, int]] = []
    each = [{name: (lambda name=name, copy=copy: calls.append((name, copy)))
             for name in ("strided", "cv2")} for copy in range(3)]
    turn = bench_copy._rotating(each)
    names = ("strided", "strided", "cv2", "strided", "cv2", "cv2", "strided")
    for name in names:
        turn[name]()
    # one turn for all, through every copy in a fixed order: every call takes the copy after
    # the last one taken, by anyone
    assert [name for name, _ in calls] == list(names)
    order = [copy for _, copy in calls]
    assert sorted(order[:3]) == [0, 1, 2] and order[3:6] == order[:3] and order[6] == order[0]
    assert bench_copy._rotating(each[:1]) == each[0]   # warm: the calls themselves
    many = [{"strided": (lambda copy=copy: calls.append(("strided", copy)))}
            for copy in range(64)]
    calls.clear()
    turn = bench_copy._rotating(many)
    for _ in range(64):
        turn["strided"]()
    order = [copy for _, copy in calls]
    assert sorted(order) == list(range(64))
    # shuffled: consecutive calls mostly on copies that are not neighbours in memory
    assert sum(abs(a - b) == 1 for a, b in itertools.pairwise(order)) < 16


def test_cold_run_checks_every_contender_and_says_so() -> None:
    case = bench_copy.CASES_BY_NAME["NCHW->NHWC/C16"]
    result = bench_copy.run_case(case, "float32", 0.25, threads=1, repeat=1, sample_ms=0.2,
                                 cold=True)
    assert result.rounds == bench_copy.cold_rounds(case.build(0.25, np.dtype(np.float32)))
    assert result.rounds > 1 and result.times["strided"] and result.times["numpy"]
    assert "caches: cold" in bench_copy.cache_fact([result])
    warm = bench_copy.run_case(case, "float32", 0.25, threads=1, repeat=1, sample_ms=0.2)
    assert warm.rounds == 1 and "caches: warm" in bench_copy.cache_fact([warm])


def test_copy_case_selection() -> None:
    assert [c.name for c in bench_copy.select_cases(["transpose2d"])] == ["transpose2d"]
    names = [c.name for c in bench_copy.select_cases(["NCHW->NCHW4", "pad"])]
    assert names == ["NCHW->NCHW4", "padded->packed"]
    assert len(bench_copy.select_cases(["nhwc"])) == 8
    assert len(bench_copy.select_cases(["nhwc->nchw"])) == 4
    assert [c.name for c in bench_copy.select_cases(["hwc->chw"])] == [
        "HWC->CHW/224x224x3", "HWC->CHW/1080x1920x3"]
    assert len(bench_copy.select_cases(None)) == len(bench_copy.CASES) == 19
    with pytest.raises(ValueError, match="no case matches 'nope'"):
        bench_copy.select_cases(["nope"])


def _copy_rows(out: str) -> list[str]:
    return [line for line in out.splitlines()
            if line.strip("| ").split(" ", 1)[0] in bench_copy.CASES_BY_NAME]


def test_copy_main_prints_every_case_and_the_targets(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_copy.main([*TINY, "--threads", "2"]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.startswith("case"))
    with_cv2 = importlib.util.find_spec("cv2") is not None
    assert header.split() == ["case", "dtype", "MiB", "shape", "strided", "numpy", "torch",
                              *(["cv2"] if with_cv2 else []), "memcpy", "memcpy", "x2",
                              "st/peer", "best", "peer", "st/memcpy", "others"]
    rows = _copy_rows(out)
    assert len(rows) == len(bench_copy.CASES) * 2
    number = r"\d+\.\d"
    torch_cell = number if importlib.util.find_spec("torch") else "-"
    for case in bench_copy.CASES:
        mib = r"[\d.]+" if case.fixed else r"0\.\d+"
        cv2_cell = ((number if case.cv2 is not None else "-") + r"\s+") if with_cv2 else ""
        for dtype in ("float32", "uint8"):
            row = re.compile(
                rf"^{re.escape(case.name)}\s+{dtype}\s+{mib}\s+[\dx]+\s+{number}\s+{number}\s+"
                rf"{torch_cell}\s+{cv2_cell}{number}\s+{number}\s+{number}\dx\s+"
                rf"(numpy|torch|cv2)\s+{number}\dx\s+(\d+%|-)$", re.MULTILINE)
            assert row.search(out), (case.name, dtype)
    assert "identical bytes: strided" in out and "on every case (checked before timing)" in out
    assert re.search(r"^small copy \(16 x float32.*numpy/strided = [\d.]+x$", out, re.MULTILINE)
    assert "copy targets at 0.25 MiB, 2 threads" in out
    assert "indicative only" in out
    transposing = sum(case.transposing for case in bench_copy.CASES)
    inverse = sum(case.inverse_of is not None for case in bench_copy.CASES)
    for target in (rf"every case >= 1\.0x best peer: \d+ of {2 * len(bench_copy.CASES)}",
                   rf"transposing cases >= 2x best peer \(geometric mean of {2 * transposing}\): "
                   r"[\d.]+x",
                   rf"multi-byte transposing cases >= 0\.8x memcpy: \d+ of {transposing}",
                   rf"uint8 transposing cases >= 0\.5x memcpy: \d+ of {transposing}",
                   rf"inverse cases >= 2x best peer: \d+ of {2 * inverse}",
                   rf"inverse cases >= 0\.8x the forward case's speed: \d+ of {2 * inverse}",
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


def test_copy_target_summary_holds_the_inverse_direction_to_its_targets() -> None:
    """NHWC -> NCHW and HWC -> CHW: 2x their best peer, 0.8x their forward case's speed (the
    same dtype and size); the image cases count whatever the size of the run."""
    results = [
        _result("NCHW->NHWC/C64", "float32", 1.0, 3.0, 1.0),
        _result("NHWC->NCHW/C64", "float32", 1.1, 3.3, 1.0),   # 3x numpy, 1/1.1 forward
        _result("NCHW->NHWC/C3", "float32", 1.0, 3.0, 1.0),
        _result("NHWC->NCHW/C3", "float32", 2.0, 3.0, 1.0),    # 1.5x numpy, 0.5x forward
        _result("CHW->HWC/224x224x3", "uint8", 1.0, 4.0, 1.0, size=4.0),
        _result("HWC->CHW/224x224x3", "uint8", 1.0, 4.0, 1.0, size=4.0),   # its own shape
        _result("NHWC->NCHW/C16", "uint8", 1.0, 4.0, 1.0),     # no forward row: left out
    ]
    text = bench_copy.target_summary(results)
    assert "inverse cases >= 2x best peer: 3 of 4 - MISSED by NHWC->NCHW/C3 float32 (1.50x)" \
        in text
    assert "inverse cases >= 0.8x the forward case's speed: 2 of 3 - MISSED by " \
        "NHWC->NCHW/C3 float32 (0.50x)" in text
    assert "every case >= 1.0x best peer: 7 of 7 - met" in text


def _limit_result(name: str, dtype: str, size: float, strided_s: float, numpy_s: float,
                  memcpy_s: float, threads: int) -> bench_copy.Result:
    times = {"strided": [strided_s], "numpy": [numpy_s], "memcpy": [memcpy_s]}
    return bench_copy.Result(bench_copy.CASES_BY_NAME[name], dtype, size, 64 * 2**20, (1,),
                             threads, times)


def test_copy_limit_summary_checks_every_size_and_the_thread_count() -> None:
    """1.1x the best peer on every row; transposes at 4 MiB >= 0.7x memcpy (not the images);
    on one thread at 64/512 MiB >= 0.8x memcpy; at 512 MiB >= 0.8x strided's padded->packed."""
    one = [
        _limit_result("transpose2d", "float32", 4.0, 1.0, 2.0, 0.6, 1),   # 0.6x memcpy
        _limit_result("transpose2d", "uint8", 4.0, 1.0, 1.05, 0.8, 1),    # 1.05x peer
        _limit_result("HWC->CHW/224x224x3", "uint8", 4.0, 1.0, 2.0, 0.1, 1),  # an image
        _limit_result("transpose2d", "float32", 64.0, 1.0, 3.0, 0.9, 1),
        _limit_result("CHW->HWC/224x224x3", "uint8", 64.0, 1.0, 2.0, 0.1, 1),  # its own size
        _limit_result("NCHW->NHWC/C64", "float32", 512.0, 1.0, 3.0, 0.7, 1),  # 0.7x memcpy
        _limit_result("padded->packed", "float32", 512.0, 0.5, 1.0, 0.5, 1),  # S: 2x C64's
        _limit_result("HWC->CHW/1080x1920x3", "float32", 512.0, 1.0, 2.0, 1.0, 1),  # own size
    ]
    assert bench_copy.limit_summary(one).splitlines() == [
        "limit targets, 1 threads, 4/64/512 MiB (every size of the run):",
        "  every case >= 1.1x best peer: 7 of 8 - MISSED by transpose2d uint8 (1.05x)",
        "  transposing cases at 4 MiB >= 0.7x memcpy: 1 of 2 - MISSED by transpose2d float32 "
        "(0.60x)",
        "  transposing cases at 64/512 MiB, 1 thread >= 0.8x memcpy: 1 of 2 - MISSED by "
        "NCHW->NHWC/C64 float32 (0.70x)",
        "  transposing cases at 512 MiB >= 0.8x S (strided's padded->packed): 0 of 1 - MISSED "
        "by NCHW->NHWC/C64 float32 (0.50x)",
    ]
    two = [_limit_result("transpose2d", "float32", 64.0, 1.0, 3.0, 0.1, 2)]
    assert bench_copy.limit_summary(two).splitlines() == [
        "limit targets, 2 threads, 64 MiB (every size of the run):",
        "  every case >= 1.1x best peer: 1 of 1 - met",
    ]
    assert bench_copy.limit_summary([]) == "limit targets: none in this run"


def test_copy_main_rejects_bad_options() -> None:
    for argv in (["--sizes", "0"], ["--sizes", "a"], ["--cases", "nope"], ["--threads", "0"],
                 ["--repeat", "0"], ["--dtypes", "complex64"], ["--dtypes", "nope"]):
        with pytest.raises(SystemExit):
            bench_copy.main(argv)


def test_copy_benchmark_script_runs() -> None:
    """benchmarks/bench_copy.py runs end to end (one case, one dtype, a tiny size)."""
    result = run_benchmark_script("bench_copy.py", *TINY, "--cases", "NCHW->NCHW32",
                                  "--dtypes", "float32", "--no-small", "--markdown")
    rows = [line for line in result.stdout.splitlines() if line.startswith("| NCHW->NCHW32 ")]
    assert len(rows) == 1, result.stdout


@pytest.mark.parametrize("count", range(1, 9))
def test_balanced_orders_put_every_contender_behind_every_other_equally(count: int) -> None:
    orders = _common.balanced_orders(count)
    assert len(orders) == (count if count % 2 == 0 else 2 * count)
    assert all(sorted(order) == list(range(count)) for order in orders)
    leads = Counter(order[0] for order in orders)
    follows = Counter((a, b) for order in orders for a, b in itertools.pairwise(order))
    assert set(leads.values()) == {len(orders) // count}
    pairs = [(a, b) for a in range(count) for b in range(count) if a != b]
    assert sorted(follows) == pairs
    assert len(set(follows.values())) <= 1   # each ordered pair equally often


def test_balanced_orders_refuse_no_contenders() -> None:
    with pytest.raises(ValueError, match="count >= 1, got 0"):
        _common.balanced_orders(0)


def test_sampling_runs_the_contenders_in_the_balanced_orders(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_common, "calibrate", lambda timer, sample_s: 1)   # one call a sample
    ran: list[str] = []
    timers = {name: timeit.Timer(lambda name=name: ran.append(name)) for name in "abc"}
    times = _common.sample_alternating(timers, repeat=8, sample_s=1.0)
    orders = _common.balanced_orders(3)
    assert ran == ["abc"[i] for k in range(8) for i in orders[k % len(orders)]]
    assert {name: len(samples) for name, samples in times.items()} == dict.fromkeys("abc", 8)


def test_copy_others_share_of_the_cpu() -> None:
    # 10 s of machine CPU time, 5 s busy of which 2 s are this process's: others used 30%
    assert bench_copy._others_share((0.0, 0.0, 0.0), (10.0, 5.0, 2.0)) == pytest.approx(0.3)
    assert bench_copy._others_share(None, (10.0, 5.0, 2.0)) is None
    assert bench_copy._others_share((0.0, 0.0, 0.0), (10.0, 1.0, 2.0)) == 0.0
    snapshot = bench_copy._cpu_seconds()
    if snapshot is not None:
        assert snapshot[0] >= snapshot[1] >= 0 and snapshot[2] > 0


# ---- the conversion benchmark (harness.bench_convert) ---------------------------------------

QUICK = ["--quick", "--repeat", "1", "--sample-ms", "0.2"]
CONVERTS = bench_convert.strided_converts()
HAS_CV2 = importlib.util.find_spec("cv2") is not None
HAS_ML_DTYPES = importlib.util.find_spec("ml_dtypes") is not None


def _tables(out: str) -> dict[str, list[list[str]]]:
    """The rows (cells) of each case's fixed-width table, keyed by the case's name."""
    tables: dict[str, list[list[str]]] = {}
    lines = out.splitlines()
    for case in bench_convert.CASES:
        start = lines.index(case.title) + 2
        header = lines[start]
        dashes = lines[start + 1]
        spans = [m.span() for m in re.finditer(r"-+", dashes)]
        rows = []
        for line in [header, *lines[start + 2:]]:
            if not line.strip():
                break
            padded = line.ljust(len(dashes))
            rows.append([padded[a:b].strip() for a, b in spans])
        tables[case.name] = rows
    return tables


def test_convert_case_selection() -> None:
    assert [c.name for c in bench_convert.select_cases(None)] == \
        ["normalize", "to-uint8", "quantize", "half", "quantize4", "affine16"]
    assert [c.name for c in bench_convert.select_cases(["HALF", "quant"])] == \
        ["quantize", "half", "quantize4"]
    with pytest.raises(ValueError, match="no case matches 'nope'"):
        bench_convert.select_cases(["nope"])


def test_convert_quick_configs_are_tiny_and_full_ones_are_the_issues() -> None:
    full = {c.name: [lazy.label for lazy in c.configs()] for c in bench_convert.CASES}
    assert full == {"normalize": ["224x224", "1080x1920", "64x224x224"],
                    "to-uint8": ["224x224", "1080x1920"],
                    "quantize": ["->NCHW4", "->NCHW32", "<-NCHW4", "<-NCHW32"],
                    "half": ["float16", "bfloat16"],
                    "quantize4": ["->NCHW64", "<-NCHW64"],
                    "affine16": ["float16", "bfloat16"]}
    libs = bench_convert.libraries()
    for case in bench_convert.CASES:
        for lazy in case.configs(quick=True):
            config = lazy.build(libs)
            assert config is not None and config.nbytes < 2**20, (case.name, lazy.label)


def test_convert_targets_are_the_limits_on_both_thread_counts() -> None:
    """Half precision >= 0.8x memcpy on 1 and 2 threads; dequantizing (from NCHW4/32) >= 0.7x
    its contiguous cast floor, quantizing held to its peers only."""
    libs = bench_convert.libraries(with_torch=False, with_cv2=False)
    targets = {(case.name, lazy.label): lazy.build(libs).targets
               for case in bench_convert.CASES if case.name in ("half", "quantize")
               for lazy in case.configs(quick=True)}
    memcpy = bench_convert.Target("memcpy", 0.8, (1, 2))
    assert targets[("half", "float16")] == (memcpy,)
    for label in ("<-NCHW4", "<-NCHW32"):
        assert bench_convert.Target("floor", 0.7, (1, 2)) in targets[("quantize", label)]
    for label in ("->NCHW4", "->NCHW32"):
        assert [t.metric for t in targets[("quantize", label)]] == ["peer"]


def test_convert_references_follow_the_formulas() -> None:
    """The reference each contender is checked against is the conversion the case names."""
    libs = bench_convert.libraries(with_torch=False, with_cv2=False)
    by = {c.name: c for c in bench_convert.CASES}
    config = by["normalize"].configs(quick=True)[0].build(libs)
    img = config.source.astype(np.float64)
    expected = (img / 255 - bench_convert.MEAN) / bench_convert.STD
    assert config.reference.dtype == np.float32
    assert np.allclose(config.reference, expected.transpose(2, 0, 1), rtol=0, atol=1e-5)
    config = by["to-uint8"].configs(quick=True)[0].build(libs)
    x = config.source.astype(np.float64)
    assert np.array_equal(config.reference,
                          np.clip(np.rint(x * 255), 0, 255).astype(np.uint8).transpose(1, 2, 0))
    assert config.reference.max() == 255  # some values saturate
    to4, _, back4, _ = (lazy.build(libs) for lazy in by["quantize"].configs(quick=True))
    s, z = bench_convert.QUANT_SCALE, bench_convert.QUANT_ZERO
    n, c, h, w = to4.source.shape
    q = to4.reference.transpose(0, 1, 4, 2, 3).reshape(n, c, h, w).astype(np.float64)
    inside = np.abs(to4.source / s + z) < 127
    assert np.all(np.abs((q - z) * s - to4.source)[inside] <= s / 2 + 1e-6)
    assert to4.reference.min() == -128 and to4.reference.max() == 127
    y = back4.source.transpose(0, 1, 4, 2, 3).reshape(n, c, h, w).astype(np.float64)
    assert np.allclose(back4.reference, (y - z) * s, rtol=0, atol=1e-5)
    for lazy in by["half"].configs(quick=True):
        config = lazy.build(libs)
        if config is None:
            assert lazy.label == "bfloat16" and not HAS_ML_DTYPES
            continue
        assert config.reference.dtype == np.uint16  # the bits
        assert config.reference.shape == tuple(config.source.shape[i] for i in (0, 2, 3, 1))
    to64, back64 = (lazy.build(libs) for lazy in by["quantize4"].configs(quick=True))
    x = to64.source
    n, c, h, w = x.shape
    s4 = np.float32(bench_convert.QUANT_SCALE / 16)
    q = np.clip(np.rint(x * (1 / s4)), -8, 7).astype(np.int64)    # one rounding: within 1
    packed = to64.reference.reshape(n, c // 64, h, w, 32).astype(np.int64)
    lo = ((packed & 15) ^ 8) - 8                                   # the nibbles, brute force
    hi = ((packed >> 4) ^ 8) - 8
    values = np.stack([lo, hi], axis=-1).reshape(n, c // 64, h, w, 64)
    values = values.transpose(0, 1, 4, 2, 3).reshape(n, c, h, w)
    assert np.abs(values - q).max() <= 1 and values.min() == -8 and values.max() == 7
    assert np.array_equal(back64.source, to64.reference)
    assert np.allclose(back64.reference, values * s4, rtol=0, atol=1e-6)


def test_convert_main_prints_a_table_per_case(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_convert.main(QUICK) == 0
    out = capsys.readouterr().out
    assert re.search(r"^  cpu: \S", out, re.MULTILINE) and f"numpy {np.__version__}" in out
    assert ("strided: no conversion engine" in out) == (not CONVERTS)
    tables = _tables(out)
    for case in bench_convert.CASES:
        header, *rows = tables[case.name]
        assert header[:2] == ["config", "thr"]
        assert header[-2:] == ["target", "others"]
        # (quantize4's floor is strided's own int8 NCHW32 of the same tensor, not a cast)
        floor = "st int8 NCHW32 ms" if case.name == "quantize4" else "cast np ms"
        for column in ("numpy ms", floor, "st GB/s", "st/peer", "best peer", "st/floor"):
            assert column in header, (case.name, column)
        assert ("strided ms" in header) == CONVERTS
        assert ("memcpy ms" in header) == (case.name == "half")
        assert ("cv2 ms" in header) == (HAS_CV2 and case.name in ("normalize", "to-uint8"))
        labels = [lazy.label for lazy in case.configs(quick=True)]
        if case.name == "half" and not (HAS_ML_DTYPES or HAS_TORCH):
            labels.remove("bfloat16")
        if case.name == "affine16" and not HAS_ML_DTYPES:
            labels.remove("bfloat16")
        assert [(r[0], r[1]) for r in rows] == [(lb, t) for lb in labels for t in ("1", "2")]
        cells = {name: [dict(zip(header, r, strict=True))[name] for r in rows]
                 for name in header}
        assert all(re.fullmatch(r"\d+\.\d+", v) for v in cells["numpy ms"])
        if CONVERTS:
            assert all(re.fullmatch(r"\d+\.\d+", v) for v in cells["st GB/s"])
            assert all(re.fullmatch(r"\d+\.\d\dx", v) for v in cells["st/peer"])
            assert all(re.fullmatch(r"\d+\.\d\dx", v) for v in cells["st/floor"])
        else:
            assert set(cells["st/peer"]) == {"-"}
    for target in (r"normalize 32x32 1 thr: strided >=3x peer", r"quantize ->NCHW32 2 thr: "
                   r"strided >=8x peer", r"half float16 2 thr: strided >=0.8x memcpy"):
        assert re.search(rf"^  (met|MISSED): {target} -> [\d.]+x$", out, re.MULTILINE) or \
            not CONVERTS, target
    summary = r"conversion targets: \d+ of (\d+) met \(tiny --quick sizes: indicative only\)"
    found = re.search(summary, out)
    assert found, out
    assert "checked against the reference before timing, every row:" in out
    assert re.search(r"^  numpy: equal$", out, re.MULTILINE)
    if CONVERTS:
        assert re.search(r"^  strided: equal$", out, re.MULTILINE)
    if HAS_TORCH:
        assert re.search(r"^  torch ops: equal$", out, re.MULTILINE)
        assert re.search(r"^  torch chain: (equal|close: [\d,]+ elements differ, by at most "
                         r"[\d.e-]+) \[", out, re.MULTILINE)


def test_convert_main_without_torch_and_cv2(capsys: pytest.CaptureFixture[str]) -> None:
    argv = [*QUICK, "--no-torch", "--no-cv2", "--threads", "1", "--cases", "normalize,half",
            "--markdown"]
    assert bench_convert.main(argv) == 0
    out = capsys.readouterr().out
    assert "torch: left out or not installed (its columns show -)" in out
    assert "cv2 (OpenCV): left out or not installed" in out
    tables = [line for line in out.splitlines() if line.startswith("|")]
    headers = [line for line in tables if line.startswith("| config ")]
    assert len(headers) == 2
    assert "torch" not in " ".join(headers) and "cv2" not in " ".join(headers)
    rows = [line for line in tables if re.match(r"\| \S+ +\| +1 \|", line)]
    assert len(rows) == 3 + (2 if HAS_ML_DTYPES else 1)


def test_convert_check_catches_a_wrong_result() -> None:
    libs = bench_convert.libraries(with_torch=False, with_cv2=False)
    case = bench_convert.CASES_BY_NAME["to-uint8"]
    config = case.configs(quick=True)[0].build(libs)
    out = np.empty_like(config.reference)

    def wrong() -> None:
        np.copyto(out, config.reference)
        out[1, 2, 0] += 1

    contenders = {"strided": bench_convert.Contender(wrong, "strided", lambda _: out, out)}
    with pytest.raises(AssertionError, match=r"to-uint8 32x32, 2 threads: strided differs from "
                                             r"the reference in 1 elements \(at \(1, 2, 0\).*"
                                             r"reproduce: strided\.copyto\(u8_hwc"):
        bench_convert.check_contenders(config, contenders, case, 2)
    # a contender with a tolerance passes within it, and reports the difference
    contenders = {"peer": bench_convert.Contender(wrong, "peer", lambda _: out, out, tol=1)}
    checks = bench_convert.check_contenders(config, contenders, case, 1)
    assert checks["peer"].text() == "close (1 elements differ, by at most 1)"
    contenders = {"peer": bench_convert.Contender(wrong, "peer", lambda _: out, out, tol=0.5)}
    with pytest.raises(AssertionError, match="peer differs"):
        bench_convert.check_contenders(config, contenders, case, 1)


@pytest.mark.skipif(not CONVERTS, reason="strided has no conversion engine")
def test_convert_check_catches_a_wrong_strided(monkeypatch: pytest.MonkeyPatch) -> None:
    real = strided.copyto

    def wrong(dst: object, src: object, **kwargs: object) -> None:
        real(dst, src, **kwargs)
        if kwargs.get("scale") is not None:
            view = np.asarray(dst)
            view[(-1,) * view.ndim] += 1

    monkeypatch.setattr(strided, "copyto", wrong)
    with pytest.raises(AssertionError, match=r"normalize 32x32, 1 threads: strided differs"):
        bench_convert.main([*QUICK, "--cases", "normalize", "--threads", "1"])


def _convert_result(label: str, threads: int, times: dict[str, float],
                    targets: tuple[bench_convert.Target, ...]) -> bench_convert.Result:
    roles = {"strided": "strided", "numpy": "peer", "torch ops": "peer", "cast np": "floor",
             "memcpy": "memcpy"}
    return bench_convert.Result(bench_convert.CASES_BY_NAME["normalize"], label, threads,
                                10**9, {n: roles[n] for n in times},
                                {n: [t] for n, t in times.items()}, {}, {}, targets)


def test_convert_targets_are_marked_met_and_missed() -> None:
    peer4, floor = bench_convert.Target("peer", 4.0), bench_convert.Target("floor", 0.7)
    results = [
        _convert_result("1080x1920", 1, {"strided": 1.0, "numpy": 5.0, "torch ops": 4.5,
                                         "cast np": 0.8}, (peer4, floor)),
        _convert_result("1080x1920", 2, {"strided": 1.0, "numpy": 5.0, "torch ops": 3.0,
                                         "cast np": 0.5}, (peer4, floor)),
        _convert_result("224x224", 2, {"strided": 1.0, "numpy": 5.0},
                        (bench_convert.Target("peer", 3.0, (1,)),)),
    ]
    assert results[0].best("peer") == "torch ops" and results[0].ratio("peer") == 4.5
    assert results[0].ratio("floor") == pytest.approx(0.8)
    assert results[0].gbps("strided") == 1.0
    assert results[2].verdicts() == [] and results[2].ratio("memcpy") is None
    text = bench_convert.target_summary(results)
    assert text.splitlines() == [
        "conversion targets: 2 of 4 met",
        "  MISSED: normalize 1080x1920 2 thr: strided >=4x peer -> 3.00x",
        "  MISSED: normalize 1080x1920 2 thr: strided >=0.7x floor -> 0.50x",
        "  met: normalize 1080x1920 1 thr: strided >=4x peer -> 4.50x",
        "  met: normalize 1080x1920 1 thr: strided >=0.7x floor -> 0.80x",
    ]
    table = bench_convert.format_table(bench_convert.CASES_BY_NAME["normalize"], results)
    assert ">=4x peer MISSED, >=0.7x floor MISSED" in table
    assert ">=4x peer met, >=0.7x floor met" in table
    assert bench_convert.target_summary([]) == "conversion targets: none in this run"


def test_convert_main_rejects_bad_options() -> None:
    for argv in (["--cases", "nope"], ["--threads", "0"], ["--threads", "a"],
                 ["--repeat", "0"], ["--sample-ms", "0"]):
        with pytest.raises(SystemExit):
            bench_convert.main(argv)


def test_benchmarks_are_scripts_of_the_repository(capsys: pytest.CaptureFixture[str]) -> None:
    """The harness runs as scripts, not through ``python -m strided bench`` (the self-check),
    which names the script of a former sub-command; each script's errors name the script."""
    from strided._cli import main as cli_main

    assert cli_main(["bench", "convert", "--quick", "--cases", "half"]) == 2
    assert "run python benchmarks/bench_convert.py" in capsys.readouterr().err
    assert cli_main(["bench", "--help"]) == 0
    assert "benchmarks/ folder" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        bench_copy.main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "python benchmarks/bench_copy.py" in out and "--small" in out
    with pytest.raises(SystemExit) as exc:
        bench_convert.main(["--threads", "0"])
    assert exc.value.code == 2
    assert "thread counts must be >= 1" in capsys.readouterr().err


def test_copy_small_runs_the_subset(capsys: pytest.CaptureFixture[str]) -> None:
    """``--small`` (the former default of ``python -m strided bench``): its ten cases at 4 MiB,
    unless --cases or --sizes say otherwise."""
    assert bench_copy.main(["--small", "--quick", "--repeat", "1", "--sample-ms", "0.2",
                            "--sizes", "0.25", "--dtypes", "uint8", "--no-small"]) == 0
    out = capsys.readouterr().out
    for name in bench_copy.SMALL_CASES:
        assert re.search(rf"^{re.escape(name)}\s+uint8\s", out, re.MULTILINE), name
    assert not re.search(r"^NCDHW->NDHWC\s", out, re.MULTILINE)


def test_convert_benchmark_script_runs() -> None:
    """benchmarks/bench_convert.py runs end to end (one case, one thread count, tiny sizes)."""
    result = run_benchmark_script("bench_convert.py", *QUICK, "--cases", "quantize",
                                  "--threads", "1", "--markdown")
    rows = [line for line in result.stdout.splitlines() if re.match(r"\| [<-]", line)]
    assert len(rows) == 4, result.stdout


# ---- the batch benchmark (harness.bench_batch) -----------------------------------------------

BATCH_QUICK = ["--quick", "--repeat", "1", "--sample-ms", "0.2"]
HAS_STACK = hasattr(strided, "stack")
HAS_ALBUMENTATIONS = importlib.util.find_spec("albumentations") is not None


def _batch_table(out: str) -> list[dict[str, str]]:
    """The rows of the batch table (fixed width), as dicts by column header."""
    lines = out.splitlines()
    start = lines.index(bench_batch.TITLE) + 2
    spans = [m.span() for m in re.finditer(r"-+", lines[start + 1])]
    header = [lines[start].ljust(len(lines[start + 1]))[a:b].strip() for a, b in spans]
    rows = []
    for line in lines[start + 2:]:
        if not line.strip():
            break
        padded = line.ljust(len(lines[start + 1]))
        rows.append(dict(zip(header, [padded[a:b].strip() for a, b in spans], strict=True)))
    return [dict.fromkeys(header, ""), *rows]  # the first item: the header's names


def test_batch_configs_images_and_crops() -> None:
    """The full config is the data loader's batch, the quick one tiny; the images are separate
    arrays; the crops hold the same pixels, as non-contiguous windows at varying offsets."""
    full = bench_batch.configs()
    assert [(s.label, s.n, s.shape, s.crop_from) for s in full] == [
        ("64x224x224", 64, (224, 224, 3), (256, 320, 3))]
    (spec,) = bench_batch.configs(quick=True)
    config = bench_batch.build(spec)
    n, (h, w, c), (_, big_w, _) = spec.n, spec.shape, spec.crop_from
    assert config.out_shape == (n, c, h, w) and config.nbytes == 5 * n * h * w * c
    offsets = set()
    for img, crop in zip(config.images, config.crops, strict=True):
        assert img.flags.c_contiguous and img.dtype == np.uint8 and img.shape == spec.shape
        assert crop.strides == (big_w * 3, 3, 1) and not crop.flags.c_contiguous
        assert np.array_equal(img, crop) and not np.shares_memory(img, crop)
        offsets.add(crop.ctypes.data - crop.base.ctypes.data)
    assert len(offsets) == n  # each crop at its own offset
    assert len({img.ctypes.data for img in config.images}) == n
    mean, std = np.asarray(bench_batch.MEAN), np.asarray(bench_batch.STD)
    expected = ((np.stack(config.images) / 255 - mean) / std).transpose(0, 3, 1, 2)
    assert config.reference.dtype == np.float64 and config.reference.flags.c_contiguous
    assert np.allclose(config.reference, expected, rtol=0, atol=1e-12)


def test_batch_contenders_give_the_batch() -> None:
    """Every contender that runs gives the reference within the tolerance (the floors give
    nothing to compare); the libraries not installed are named with the reason."""
    libs = bench_batch.libraries()
    config = bench_batch.build(bench_batch.configs(quick=True)[0])
    cons = bench_batch.contenders(config, libs, 1)
    expected = {"numpy", "cast st", "memcpy"}
    if HAS_STACK:
        expected |= {"strided", "st out=", "st crops"}
    if HAS_TORCH:
        expected.add("torch ops")
        if HAS_ALBUMENTATIONS:
            expected.add("albumentations")
    if libs.cv2 is not None:
        expected.add("cv2")
    assert set(cons) == expected
    assert set(libs.skipped) == {name for name, _ in bench_batch.COLUMNS
                                 if name in ("strided", "torch ops", "albumentations", "cv2")
                                 and name not in cons}
    checks = bench_batch.check_contenders(config, cons, 1)
    assert set(checks) == expected - {"cast st", "memcpy"}
    assert all(0 <= worst <= bench_batch.TOLERANCE for worst in checks.values())


def test_batch_main_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_batch.main(BATCH_QUICK) == 0
    out = capsys.readouterr().out
    assert re.search(r"^  cpu: \S", out, re.MULTILINE) and f"numpy {np.__version__}" in out
    header, *rows = _batch_table(out)
    columns = list(header)
    assert columns[:2] == ["config", "thr"] and columns[-2:] == ["target", "others"]
    for column in ("numpy ms", "cast st ms", "memcpy ms", "st GB/s", "best peer", "st/peer",
                   "st/floor", "out=/floor", "crops/contig", "st/memcpy"):
        assert column in columns, column
    for name in ("strided", "st out=", "st crops"):
        assert (f"{name} ms" in columns) == HAS_STACK, name
    assert ("torch ops ms" in columns) == HAS_TORCH
    assert ("albumentations ms" in columns) == (HAS_TORCH and HAS_ALBUMENTATIONS)
    assert ("strided.stack is missing" in out) == (not HAS_STACK)
    if not HAS_TORCH:        # (albumentations is not imported: its half of the chain is torch)
        assert "albumentations: skipped, its ToTensorV2 and the collate need torch" in out
    elif not HAS_ALBUMENTATIONS:
        assert "albumentations: not installed (pip install albumentations)" in out
    assert [(r["config"], r["thr"]) for r in rows] == [("4x32x32", "1"), ("4x32x32", "2")]
    for row in rows:
        for column in columns:
            if column.endswith(" ms"):
                assert re.fullmatch(r"\d+\.\d+", row[column]), (column, row[column])
        for column in ("st/peer", "st/floor", "out=/floor", "crops/contig", "st/memcpy"):
            assert re.fullmatch(r"\d+\.\d\dx" if HAS_STACK else "-", row[column]), column
        assert row["best peer"] in {"torch ops", "numpy", "albumentations", "cv2"}
    assert "checked against a float64 reference before timing" in out
    assert re.search(r"^  numpy: within 1e-05 \(largest \|difference\| [\d.e-]+\)$", out,
                     re.MULTILINE)
    found = re.search(r"^targets: (\d+) of 6 met \(tiny --quick sizes: indicative only\)$",
                      out, re.MULTILINE)
    assert found, out
    if HAS_STACK:
        for target in (r">=4x peer", r">=0\.8x floor", r"<=1\.2x crops/contig"):
            assert re.search(rf"^  (met|MISSED): 4x32x32 [12] thr: {target} -> [\d.]+x$", out,
                             re.MULTILINE), target
    else:
        assert "  n/a: 6 (no strided figure: strided.stack is missing)" in out


def test_batch_main_without_the_peers(capsys: pytest.CaptureFixture[str]) -> None:
    argv = [*BATCH_QUICK, "--no-torch", "--no-cv2", "--threads", "1", "--markdown"]
    assert bench_batch.main(argv) == 0
    out = capsys.readouterr().out
    assert "- torch: left out (--no-torch)" in out
    assert "- cv2 (OpenCV): left out (--no-cv2)" in out
    assert "- albumentations: skipped, its ToTensorV2 and the collate need torch" in out
    table = [line for line in out.splitlines() if line.startswith("|")]
    assert len(table) == 3 and re.fullmatch(r"\|[-:|]+\|", table[1])
    assert "torch" not in table[0] and "cv2" not in table[0] and "albu" not in table[0]
    cells = [cell.strip() for cell in table[2].strip("|").split("|")]
    assert cells[:2] == ["4x32x32", "1"] and "numpy" in cells


def test_batch_check_catches_a_wrong_result() -> None:
    config = bench_batch.build(bench_batch.configs(quick=True)[0])
    good = config.reference.astype(np.float32)
    bad = good.copy()
    bad[1, 2, 3, 4] += 1e-4

    def check(result: np.ndarray, role: str = "peer") -> dict[str, float]:
        cons = {"peer": bench_batch.Contender(lambda: result, role, np.asarray)}
        return bench_batch.check_contenders(config, cons, 2)

    assert 0 <= check(good)["peer"] < 1e-6
    with pytest.raises(AssertionError, match=r"^4x32x32, 2 threads: peer differs from the "
                                             r"reference by 0\.0001 at \(1, 2, 3, 4\).*1 "
                                             r"elements beyond 1e-05\)$"):
        check(bad)
    with pytest.raises(AssertionError, match=r"reproduce: images = \[np\.random"):
        check(bad, role="strided")
    for wrong in (good.transpose(0, 1, 3, 2), good.astype(np.float64), good[:, :2]):
        with pytest.raises(AssertionError, match="expected a C-contiguous float32 batch of "
                                                 r"shape \(4, 3, 32, 32\)"):
            check(wrong)
    nan = good.copy()
    nan[0, 0, 0, 0] = np.nan
    with pytest.raises(AssertionError, match=r"differs from the reference by inf at \(0, 0"):
        check(nan)


@pytest.mark.skipif(not HAS_STACK, reason="strided.stack is missing in this build")
def test_batch_check_catches_a_wrong_strided(monkeypatch: pytest.MonkeyPatch) -> None:
    real = strided.stack

    def wrong(images: object, *args: object, **kwargs: object) -> object:
        batch = real(images, *args, **kwargs)
        np.asarray(batch)[-1, -1, -1, -1] += 1
        return batch

    monkeypatch.setattr(strided, "stack", wrong)
    with pytest.raises(AssertionError, match=r"4x32x32, 1 threads: strided differs"):
        bench_batch.main([*BATCH_QUICK, "--threads", "1"])


def _batch_result(threads: int, times: dict[str, float]) -> bench_batch.Result:
    roles = {"strided": "strided", "st out=": "info", "st crops": "info", "numpy": "peer",
             "torch ops": "peer", "cast st": "floor", "memcpy": "memcpy"}
    return bench_batch.Result("64x224x224", threads, 10**9, {n: roles[n] for n in times},
                              {n: [t] for n, t in times.items()}, {}, {}, bench_batch.TARGETS)


def test_batch_targets_are_marked_met_and_missed() -> None:
    results = [
        _batch_result(1, {"strided": 1.0, "st out=": 0.5, "st crops": 0.55, "numpy": 5.0,
                          "torch ops": 4.5, "cast st": 0.45, "memcpy": 0.2}),
        _batch_result(2, {"strided": 1.0, "st out=": 0.5, "st crops": 0.7, "numpy": 3.0,
                          "cast st": 0.3}),
    ]
    r = results[0]
    assert r.best("peer") == "torch ops" and r.ratio("peer") == 4.5
    assert r.ratio("floor") == pytest.approx(0.45) and r.ratio("floor out=") == pytest.approx(0.9)
    assert r.ratio("crops") == pytest.approx(1.1) and r.ratio("memcpy") == pytest.approx(0.2)
    assert results[1].ratio("memcpy") is None and r.gbps("strided") == 1.0
    assert bench_batch.target_summary(results).splitlines() == [
        "targets: 3 of 6 met",
        "  MISSED: 64x224x224 2 thr: >=4x peer -> 3.00x",
        "  MISSED: 64x224x224 2 thr: >=0.8x floor -> 0.60x",
        "  MISSED: 64x224x224 2 thr: <=1.2x crops/contig -> 1.40x",
        "  met: 64x224x224 1 thr: >=4x peer -> 4.50x",
        "  met: 64x224x224 1 thr: >=0.8x floor -> 0.90x",
        "  met: 64x224x224 1 thr: <=1.2x crops/contig -> 1.10x",
    ]
    table = bench_batch.format_table(results)
    assert ">=4x peer met, >=0.8x floor met, <=1.2x crops/contig met" in table
    assert ">=4x peer MISSED, >=0.8x floor MISSED, <=1.2x crops/contig MISSED" in table
    assert bench_batch.target_summary([]) == "targets: none in this run"


def test_batch_writes_a_record(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "batch.json"
    assert bench_batch.main([*BATCH_QUICK, "--threads", "1", "--json", str(path)]) == 0
    capsys.readouterr()
    from harness.report import read_record

    record = read_record(path)
    assert record["benchmark"] == "batch" and record["settings"]["configs"] == ["4x32x32"]
    (row,) = record["rows"]
    assert (row["case"], row["config"], row["threads"]) == ("batch", "4x32x32", 1)
    assert row["bytes"] == 5 * 4 * 32 * 32 * 3 and "numpy" in row["gbps"]
    assert record["contenders"]["cast st"] == "floor"
    assert ("crops" in row["ratios"]) == HAS_STACK
    assert re.search(r"^batch\s+4x32x32\s", plot.describe(record), re.MULTILINE)


def test_batch_benchmark_script_runs() -> None:
    """benchmarks/bench_batch.py runs end to end (the tiny config, one thread count)."""
    result = run_benchmark_script("bench_batch.py", *BATCH_QUICK, "--threads", "1",
                                  "--no-albumentations", "--markdown")
    rows = [line for line in result.stdout.splitlines() if line.startswith("| 4x32x32 ")]
    assert len(rows) == 1, result.stdout
    assert "albumentations: left out (--no-albumentations)" in result.stdout


# ---- bad arguments: one line, exit status 2, for every bench sub-command ---------------------


@pytest.mark.parametrize("script, argv, message", [
    ("bench_copy", ["--no-such-option"], "unrecognized arguments: --no-such-option"),
    ("bench_copy", ["--sizes", "0"], "sizes must be positive MiB"),
    ("bench_copy", ["--repeat"], "argument --repeat: expected one argument"),
    ("bench_copy", ["--plot", "chart.gif"], "the format comes from the extension"),
    ("bench_copy", ["--json", "/no/such/dir/r.json"], "'/no/such/dir' does not exist"),
    ("bench_convert", ["--threads", "x"], "expected thread counts"),
    ("bench_convert", ["--cases", "nope"], "no case matches 'nope'"),
    ("bench_convert", ["--plot", "c.txt"], "one of .svg, .png, .pdf"),
    ("bench_batch", ["--threads", "0"], "thread counts must be >= 1"),
    ("bench_batch", ["--no-such-option"], "unrecognized arguments: --no-such-option"),
    ("bench_batch", ["--json", "/no/such/dir/r.json"], "'/no/such/dir' does not exist"),
    ("bench_layout", ["--repeat", "0"], "--repeat must be >= 1"),
    ("bench_layout", ["--sample-ms", "x"], "invalid float value: 'x'"),
    ("plot_record", [], "the following arguments are required: RECORD.json"),
    ("plot_record", ["/no/such/record.json"], "cannot read"),
    ("plot_record", ["r.json", "--plot", "c.jpg"], "from the extension"),
])
def test_bench_commands_report_bad_arguments_in_one_line(
        script: str, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    main_function = {"bench_copy": bench_copy.main, "bench_convert": bench_convert.main,
                     "bench_batch": bench_batch.main, "bench_layout": bench_layout.main,
                     "plot_record": plot.main}[script]
    with pytest.raises(SystemExit) as exc:
        main_function(argv)
    assert exc.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1, err
    assert err.startswith(f"python benchmarks/{script}.py: error: ") and message in err, err


def test_benchmark_scripts_report_bad_arguments_in_one_line(
        capsys: pytest.CaptureFixture[str]) -> None:
    for main_function in (bench_copy.main, bench_convert.main, bench_batch.main, main):
        with pytest.raises(SystemExit) as exc:
            main_function(["--repeat", "0"])
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and ": error: --repeat must be >= 1" in err, err
