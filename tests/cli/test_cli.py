"""The command line: ``python -m strided explain`` and ``python -m strided bench``, the
self-check of this machine."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest

import strided
from strided import Layout
from strided._cli import main, selfcheck
from strided._cli.explain import element_name, explain, memory_map


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def value_row(text: str) -> str:
    """The value row of the first memory map in ``text``, without its heading."""
    line = next(line for line in text.splitlines() if line.startswith("  value "))
    return line.removeprefix("  value ").strip()


def offset_row(text: str) -> list[int]:
    """The offset row of the first memory map in ``text`` (map rows are indented)."""
    line = next(line for line in text.splitlines() if line.startswith("  offset "))
    return [int(o) for o in line.split()[1:]]


def property_line(text: str, name: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(name + " "))


# ---- explain with arguments -----------------------------------------------------------------


def test_nhwc_strides_and_directml_buffer_size(capsys: pytest.CaptureFixture[str]) -> None:
    # a row of five 3-channel pixels: with C > 1, channels-last differs from NCHW
    status, out, err = run(capsys, "explain", "NHWC", "--sizes", "1,3,1,5", "--itemsize", "2")
    assert (status, err) == (0, "")
    assert "(15, 1, 15, 3) elements" in property_line(out, "strides")
    assert "(30, 2, 30, 6)" in property_line(out, "byte strides")
    # 15 elements x 2 bytes = 30 bytes, rounded up to a multiple of 4
    assert property_line(out, "buffer size").split()[2:] == [
        "32", "bytes", "(DirectML,", "rounded", "up", "to", "4);", "exact", "30", "bytes"
    ]
    assert "NHWC" in property_line(out, "label")
    # the three channels of each pixel side by side: A F K are pixel 0's
    assert value_row(out).split() == [*"AFKBGLCHMDINEJO", "x"]


def test_padded_height_stride(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "explain", "--sizes", "2,3", "--strides", "5,1")
    assert status == 0
    assert value_row(out) == "A B C x x D E F x x"
    assert offset_row(out) == list(range(10))
    assert "padded: yes" in property_line(out, "flags")
    assert "packed: no" in property_line(out, "flags")
    assert "8 bytes (DirectML, rounded up to 4); exact 8 bytes" in out


def test_broadcast_row_repeats_offsets(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "explain", "--sizes", "2,3", "--strides", "0,1",
                         "--itemsize", "4")
    assert status == 0
    assert offset_row(out) == [0, 1, 2]
    assert value_row(out).split() == ["A/D", "B/E", "C/F"]
    assert "0: A, D; 1: B, E; 2: C, F" in out
    assert "D (1, 0) -> 0" in out and "F (1, 2) -> 2" in out
    assert "broadcast: yes" in out and "overlaps: yes" in out


def test_broadcast_letters_and_flags_agree(capsys: pytest.CaptureFixture[str]) -> None:
    _, by_letter, _ = run(capsys, "explain", "NHWC", "--sizes", "2,3,4,5", "--broadcast", "C")
    _, by_flags, _ = run(capsys, "explain", "NHWC", "--sizes", "2,3,4,5",
                         "--broadcast", "0,1,0,0")
    assert "(20, 0, 5, 1) elements" in property_line(by_letter, "strides")
    assert by_letter.splitlines()[1:] == by_flags.splitlines()[1:]


def test_dhw_element_h_at_offset_7(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "explain", "DHW", "--sizes", "2,2,3")
    assert status == 0
    assert "H (1, 0, 1) -> 7" in out
    assert "[1, :, :]" in out


def test_negative_strides_and_offset(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "explain", "--sizes", "2,3", "--strides", "-3,1",
                         "--offset", "3", "--itemsize", "4")
    assert status == 0
    assert value_row(out) == "D E F A B C"
    assert "offsets 0..5" in property_line(out, "span")


def test_nbytes_undefined_below_offset_zero(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "explain", "--sizes", "4", "--offset=-2", "--itemsize", "4")
    assert status == 0
    assert "undefined" in property_line(out, "nbytes")
    assert offset_row(out) == [-2, -1, 0, 1]


def test_label_and_consistent_strides(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "explain", "NHWC", "--sizes", "1,2,3,4",
                         "--strides", "24,1,8,2")
    assert status == 0
    assert "(24, 1, 8, 2) elements" in out


def test_sizes_accept_x_separator(capsys: pytest.CaptureFixture[str]) -> None:
    _, with_commas, _ = run(capsys, "explain", "--sizes", "1,3,2,2")
    _, with_x, _ = run(capsys, "explain", "--sizes", "1x3x2x2")
    assert with_commas == with_x


def test_empty_layout_has_no_map(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "explain", "--sizes", "0,3")
    assert status == 0
    assert "memory map: none, the layout is empty" in out
    assert "value" not in out
    assert "0 bytes (DirectML" in out


def test_large_layout_map_is_truncated(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "explain", "--sizes", "100,100,100", "--itemsize", "8")
    assert status == 0
    assert "truncated: offsets 0..63 of 0..999999 shown" in out
    assert "grid is drawn for at most" in out


def test_huge_broadcast_terminates(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "explain", "--sizes", "1000000000,1000000000",
                         "--strides", "0,1")
    assert status == 0
    assert "truncated" in out


def test_huge_stride_map_shows_the_first_offsets(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "explain", "--sizes", "2,3", "--strides", f"{2**62},1")
    assert status == 0
    assert value_row(out).split()[:4] == ["A", "B", "C", "x"]
    assert f"D (1, 0) -> {2**62}" in out
    assert "truncated: offsets 0..63" in out


# ---- explain without arguments: the documentation's examples --------------------------------


@pytest.mark.parametrize("argv", [[], ["explain"]], ids=["no command", "explain"])
def test_no_arguments_walk_through_the_documentation(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    status, out, err = run(capsys, *argv)
    assert (status, err) == (0, "")
    sections = out.split("\n\n")
    assert len(sections) == 8
    expected = [
        ("(3, 1)", "A B C D E F"),  # row-major
        ("(1, 2)", "A D B E C F"),  # column-major
        ("(6, 3, 1)", "A B C D E F G H I J K L"),  # DHW
        ("(5, 1)", "A B C x x D E F x x"),  # padded
        ("(0, 1)", "A/D B/E C/F"),  # broadcast row
        ("(12, 4, 2, 1)", "A B C D E F G H I J K L"),  # packed NCHW, 3 channels
        ("(12, 1, 6, 3)", "A E I B F J C G K D H L"),  # packed NHWC: channels interleave
        ("(3, 1)", "A B C D E F x x"),  # 6 bytes, DWORD-aligned to 8
    ]
    for section, (strides, values) in zip(sections, expected, strict=True):
        assert f"{strides} elements" in property_line(section, "strides")
        assert " ".join(value_row(section).split()) == values
    assert "H (1, 0, 1) -> 7" in sections[2]
    assert "24 bytes (DirectML, rounded up to 4); exact 24 bytes" in sections[6]
    assert "8 bytes (DirectML, rounded up to 4); exact 6 bytes" in sections[7]


def test_walkthrough_channels_last_example_has_several_channels() -> None:
    """With C = 1, NHWC stores exactly what NCHW stores: an example would show nothing."""
    from strided._cli.explain import documentation_examples

    for title, layout in documentation_examples():
        if "NHWC" in title or "channels-last" in title:
            assert layout.ndim == 4 and layout.sizes[1] > 1, title
            assert layout.strides[1] == 1 and layout.label == "NHWC", title


def test_subprocess_draws_the_map() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "strided", "explain", "--sizes", "2,3", "--strides", "5,1"],
        capture_output=True, text=True, check=False, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert value_row(result.stdout) == "A B C x x D E F x x"


def test_subprocess_error_is_one_line() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "strided", "explain", "NHWC", "--sizes", "2,3"],
        capture_output=True, text=True, check=False, timeout=120,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith("strided explain: error: ")
    assert result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr


# ---- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "pattern"),
    [
        (["--sizes", "-1,3"], r"sizes\[0\] must be >= 0, got -1"),
        (["XY", "--sizes", "2,3"], r"layout 'XY' is not a label for rank 2"),
        (["NHWC", "--sizes", "2,3"], r"it is a rank-4 label"),
        (["--sizes", "2,a"], r"'a' in '2,a' is not an integer"),
        (["--sizes", "2.5"], r"is not an integer"),
        (["--sizes", "2,3", "--strides", "1"], r"strides has 1 entry but sizes has 2 entries"),
        (["--sizes", "99999999999,99999999999,99999999999"], r"leave int64"),
        (["--sizes", "100000000000000000000000"], r"does not fit in a signed 64-bit"),
        (["--sizes", "2,3", "--strides", "4611686018427387904,1", "--itemsize", "4"],
         r"leaves the signed 64-bit range"),
        (["--foo"], r"unrecognized arguments: --foo"),
        (["HW", "--sizes", "2,3", "extra"], r"unrecognized arguments: extra"),
        (["NHWC"], r"--sizes is required"),
        (["--sizes", "2,3", "--itemsize", "0"], r"itemsize must be >= 1"),
        (["--sizes", "2,3", "--itemsize", "two"], r"'two' is not an integer"),
        (["--sizes", "2,3", "--broadcast", "C"], r"'C' is not an axis of rank 2"),
        (["--sizes", "2,3,4,5", "--broadcast", "1,0"], r"broadcast has 2 entries"),
        (["--sizes", "7", "--broadcast", "H"], r"ranks 2 to 5 only"),
        (["--sizes", "2,3", "--strides", "3,1", "--broadcast", "0,1"], r"stride of 0"),
        (["NHWC", "--sizes", "1,2,3,4", "--strides", "1,2,3,4"], r"disagree"),
        (["NCHW4", "--sizes", "1,8,2,2"], r"'NCHW4' is a blocked format.*with --svg FILE"),
        (["CHWN4", "--sizes", "2,8,2,2"], r"'CHWN4' is a blocked format.*with --svg FILE"),
        (["nChw16c", "--sizes", "1,8,2,2", "--itemsize", "2"], r"blocked format.*--svg FILE"),
    ],
)
def test_errors_are_one_line(
    capsys: pytest.CaptureFixture[str], argv: list[str], pattern: str
) -> None:
    status, out, err = run(capsys, "explain", *argv)
    assert status == 2
    assert out == ""
    assert err.startswith("strided explain: error: ")
    assert err.count("\n") == 1, err
    assert "Traceback" not in err
    assert re.search(pattern, err), err


def test_unknown_command(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "frobnicate")
    assert (status, out) == (2, "")
    assert err.startswith("strided: error: ") and err.count("\n") == 1
    assert "explain" in err and "bench" in err


@pytest.mark.parametrize("argv", [["--help"], ["explain", "--help"]])
def test_help(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    status, out, _ = run(capsys, *argv)
    assert status == 0
    assert "explain" in out
    if argv[0] == "explain":
        assert "--broadcast" in out and "--itemsize" in out and "LABEL" in out
        assert "--svg FILE" in out and "NCHW4" in out


# ---- bench: the self-check -------------------------------------------------------------------

QUICK_CHECK = ("--repeat", "1", "--sample-ms", "0.5")


def test_bench_is_the_self_check(capsys: pytest.CaptureFixture[str]) -> None:
    """``bench`` checks this machine in seconds: strided, np.copyto and a memcpy on every case,
    the CPU, and the ratios (timings are printed, never asserted)."""
    status, out, err = run(capsys, "bench", *QUICK_CHECK, "--threads", "1")
    assert (status, err) == (0, "")
    assert re.search(r"^  cpu: \S.*\d+ CPUs", out, re.MULTILINE)
    assert f"strided.openmp_enabled() = {strided.openmp_enabled()}" in out
    assert "strided num_threads=1" in out
    header = next(line for line in out.splitlines() if line.startswith("case"))
    for column in ("strided", "np.copyto", "memcpy", "numpy/strided", "memcpy/strided"):
        assert column in header
    for case in selfcheck.CASES:
        row = re.compile(rf"^{re.escape(case.name)}\s+[\d,]+(\s+[\d,.]+ (ns|us|ms)){{3}}"
                         r"\s+\d+\.\d\dx\s+\d+\.\d\dx$", re.MULTILINE)
        assert row.search(out), (case.name, out)
    assert "python benchmarks/bench_copy.py" in out


def test_bench_self_check_refuses_wrong_bytes(monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    def wrong_copy(dst: object, src: object, **kwargs: object) -> None:
        np.copyto(dst, src)
        dst.reshape(-1)[0] += 1  # type: ignore[attr-defined]

    monkeypatch.setattr(strided, "copyto", wrong_copy)
    status, out, err = run(capsys, "bench", *QUICK_CHECK)
    assert (status, out) == (1, "")
    assert err == ("python -m strided bench: error: contiguous float32: strided.copyto wrote "
                   "other values than np.copyto\n")


@pytest.mark.parametrize(("argv", "message"), [
    (["--repeat", "0"], "--repeat must be >= 1, got 0"),
    (["--sample-ms", "0"], "--sample-ms must be > 0, got 0"),
    (["--threads", "0"], "--threads must be >= 1, got 0"),
    (["--threads", "x"], "argument --threads: invalid int value: 'x'"),
    (["--sizes", "4"], "unrecognized arguments: --sizes 4"),
    (["convert", "--quick"], "run python benchmarks/bench_convert.py from a checkout"),
    (["copy"], "run python benchmarks/bench_copy.py from a checkout"),
    (["layout"], "run python benchmarks/bench_layout.py from a checkout"),
    (["plot", "r.json"], "run python benchmarks/plot_record.py from a checkout"),
])
def test_bench_errors_are_one_line(capsys: pytest.CaptureFixture[str], argv: list[str],
                                   message: str) -> None:
    status, out, err = run(capsys, "bench", *argv)
    assert (status, out) == (2, "")
    assert err.startswith("python -m strided bench: error: ") and err.count("\n") == 1, err
    assert message in err, err


def test_bench_help(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "bench", "--help")
    assert status == 0
    assert "python -m strided bench" in out and "--repeat" in out and "--threads" in out
    assert "benchmarks/ folder" in out
    status, out, _ = run(capsys, "--help")
    assert status == 0 and "a self-check of this machine" in " ".join(out.split())


# ---- the rendering functions ----------------------------------------------------------------


def test_element_names_are_bijective_base_26() -> None:
    names = [element_name(k) for k in range(26 * 27 + 1)]
    assert len(set(names)) == len(names)
    assert names[:3] == ["A", "B", "C"] and names[26:28] == ["AA", "AB"]


def test_memory_map_columns_are_aligned() -> None:
    text = memory_map(Layout((3, 10), itemsize=4))
    offsets, values = text.splitlines()[:2]
    assert len(offsets) == len(values)
    assert values.split()[-1] == "AD"


def test_title_comes_first() -> None:
    assert explain(Layout((2, 3)), title="demo").splitlines()[0] == "demo"


@pytest.mark.parametrize("command", [["explain"], ["explain", "NHWC", "--sizes", "2,3,4,5"],
                                     ["bench", *QUICK_CHECK]],
                         ids=["walkthrough", "layout", "bench"])
def test_a_closed_pipe_ends_quietly(command: list[str]) -> None:
    """`python -m strided explain | head`: when the reader has gone, the command stops with
    status 1 and no traceback. The pipe's read end is closed before the child starts, so every
    write fails (EPIPE), deterministically."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = subprocess.run([sys.executable, "-m", "strided", *command], stdout=write_end,
                                stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write_end)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr and "BrokenPipe" not in result.stderr, result.stderr
