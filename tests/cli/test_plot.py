"""Benchmark records and charts: ``--json FILE``, ``--plot FILE`` and ``plot_record.py RECORD``.

A tiny run of each benchmark writes a record; the record holds what the tables show (medians,
GB/s with the tables' definition, ratios, the machine, the versions) and reads back; a chart
drawn from it, live or from the file, is a valid SVG / PNG / PDF naming the cases. Without
matplotlib, ``--plot`` is a one-line error before anything is timed. Timings are never asserted.
The harness lives in the repository's ``benchmarks/`` (not installed): ``conftest.py`` puts that
folder on ``sys.path``.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from harness import bench_convert, bench_copy, plot
from harness.report import RECORD_FORMAT, RECORD_VERSION, read_record, write_record

import strided

HAS_TORCH = importlib.util.find_spec("torch") is not None
#: The quickest settings each benchmark has: one tiny case, one sample of ~0.2 ms.
TINY_COPY = ["--sizes", "0.25", "--quick", "--repeat", "1", "--sample-ms", "0.2", "--cases",
             "transpose2d,HWC->CHW/224", "--dtypes", "uint8", "--threads", "2", "--no-small"]
TINY_CONVERT = ["--quick", "--repeat", "1", "--sample-ms", "0.2", "--cases", "quantize",
                "--threads", "1,2"]
ROW_KEYS = {"case", "config", "threads", "bytes", "median_ms", "gbps", "ratios", "best_peer",
            "others"}


@pytest.fixture(scope="module")
def copy_record(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("records") / "copy.json"
    assert bench_copy.main([*TINY_COPY, "--json", str(path), "--note", "a test"]) == 0
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def convert_record(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("records") / "convert.json"
    assert bench_convert.main([*TINY_CONVERT, "--json", str(path)]) == 0
    return json.loads(path.read_text(encoding="utf-8"))


# ---- records --------------------------------------------------------------------------------


def _check_row(row: dict[str, Any]) -> None:
    assert ROW_KEYS <= set(row)
    assert row["gbps"]["strided"] > 0 and set(row["gbps"]) == set(row["median_ms"])
    for name, ms in row["median_ms"].items():  # GB/s = bytes / median, as the tables count
        assert row["gbps"][name] == pytest.approx(row["bytes"] / (ms / 1e3) / 1e9, rel=2e-3)
    assert row["ratios"]["peer"] > 0 and row["best_peer"] in row["gbps"]


def test_copy_record_holds_the_run(copy_record: dict[str, Any]) -> None:
    r = copy_record
    assert (r["format"], r["version"], r["benchmark"]) == (RECORD_FORMAT, RECORD_VERSION, "copy")
    assert {"title", "date", "command", "machine", "versions", "settings", "gbps", "contenders",
            "rows", "summary"} <= set(r)
    assert r["command"].startswith("python benchmarks/bench_copy.py --sizes 0.25 --quick")
    assert r["date"][:2] == "20" and "T" in r["date"]
    machine = r["machine"]
    assert machine["cpus"] >= 1 and machine["cpu"] and machine["note"] == "a test"
    assert machine["openmp"] == strided.openmp_enabled()
    assert r["versions"]["strided"] == strided.__version__ and "numpy" in r["versions"]
    assert ("torch" in r["versions"]) == HAS_TORCH
    assert r["settings"]["threads"] == [2] and r["settings"]["dtypes"] == ["uint8"]
    assert r["contenders"]["strided"] == "strided" and r["contenders"]["numpy"] == "peer"
    assert r["contenders"]["memcpy x2"] == "memcpy"
    assert [(row["case"], row["config"]) for row in r["rows"]] == [
        ("transpose2d", "uint8"), ("HWC->CHW/224x224x3", "uint8")]
    for row in r["rows"]:
        _check_row(row)
        assert row["threads"] == 2  # bytes read + written: twice the logical tensor's
        assert row["bytes"] == pytest.approx(2 * row["mib"] * 2**20, rel=1e-2)
        assert "memcpy" in row["ratios"] and "memcpy x2" in row["gbps"]
    assert any(line.startswith("copy targets at") for line in r["summary"])


def test_convert_record_holds_the_run(convert_record: dict[str, Any]) -> None:
    r = convert_record
    assert r["benchmark"] == "convert" and r["settings"]["threads"] == [1, 2]
    roles = r["contenders"]
    assert roles["strided"] == "strided" and roles["numpy"] == "peer"
    assert roles["st to_blocked"] == "info" and roles["cast np"] == "floor"
    labels = [lazy.label for lazy in bench_convert.CASES_BY_NAME["quantize"].configs(True)]
    assert [(row["config"], row["threads"]) for row in r["rows"]] == [
        (label, t) for label in labels for t in (1, 2)]
    for row in r["rows"]:
        _check_row(row)
        assert row["case"] == "quantize" and "floor" in row["ratios"]


def test_a_record_reads_back_and_a_bad_one_is_refused(copy_record: dict[str, Any],
                                                      tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    write_record(copy_record, path)
    assert read_record(path) == copy_record
    for text, message in (("{", "is not JSON"), ("[]", "is not a benchmark record"),
                          ('{"format": "x"}', "is not a benchmark record"),
                          (json.dumps({**copy_record, "version": 99}), "record version 99"),
                          (json.dumps({**copy_record, "rows": [{"case": "a"}]}),
                           "a row lacks")):
        path.write_text(text, encoding="utf-8")
        with pytest.raises(ValueError, match=message):
            read_record(path)
    with pytest.raises(ValueError, match="cannot read"):
        read_record(tmp_path / "missing.json")


# ---- what a chart shows (no matplotlib needed) ----------------------------------------------


def test_chart_data_draws_strided_peers_and_references(convert_record: dict[str, Any]) -> None:
    chart = plot.chart_data(convert_record)
    assert chart.names[0] == "strided" and "st to_blocked" not in chart.names  # info: not drawn
    roles = [chart.roles[name] for name in chart.names]
    assert roles == sorted(roles, key=("strided", "peer", "floor", "memcpy").index)
    assert chart.labels[:2] == ["quantize ->NCHW4, 1 thr", "quantize ->NCHW4, 2 thr"]
    assert len(chart.values) == len(chart.ratios) == len(convert_record["rows"])
    assert all(v > 0 for group in chart.values for v in group.values())


def test_the_axis_is_logarithmic_for_spread_figures() -> None:
    def record(*gbps: float) -> dict[str, Any]:
        return {"contenders": {"strided": "strided", "numpy": "peer"},
                "rows": [{"case": "c", "config": str(i), "threads": 1,
                          "gbps": {"strided": g, "numpy": 1.0}} for i, g in enumerate(gbps)]}

    assert not plot.chart_data(record(2.0, 15.0)).log
    assert plot.chart_data(record(2.0, 50.0)).log
    assert plot.chart_data(record(2.0)).labels == ["c 0"]  # one thread count: not in labels


def test_describe_prints_the_machine_and_the_table(copy_record: dict[str, Any]) -> None:
    text = plot.describe(copy_record)
    assert text.startswith(copy_record["title"])
    assert f"cpu: {copy_record['machine']['cpu']}, " in text and "2 threads (a test)" in text
    assert f"strided {strided.__version__}" in text and "GB/s = bytes read + bytes" in text
    rows = [line for line in text.splitlines() if line.startswith(("transpose2d ", "HWC->"))]
    assert len(rows) == 2
    for line in rows:  # ... st/peer, best peer, st/memcpy[, others: none when no tick passed]
        assert re.search(r"\s\d+\.\d\dx\s+(numpy|torch|cv2)\s+\d+\.\d\dx(\s+(\d+%|-))?$",
                         line), line
    markdown = plot.describe(copy_record, markdown=True)
    assert "| transpose2d " in markdown and markdown.startswith("- recorded ")


# ---- charts (matplotlib) --------------------------------------------------------------------


def _svg_text(path: Path) -> str:
    root = ET.parse(path).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    return " ".join(t for t in root.itertext() if t.strip())


def test_a_record_draws_as_svg_png_and_pdf(copy_record: dict[str, Any], tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    plot.draw(copy_record, tmp_path / "chart.svg")
    text = _svg_text(tmp_path / "chart.svg")
    for name in ("transpose2d uint8", "HWC->CHW/224x224x3 uint8", "strided", "numpy",
                 "memcpy x2", copy_record["machine"]["cpu"], "GB/s"):
        assert name in text, name
    plot.draw(copy_record, tmp_path / "chart.svg")  # the same record, the same file: no date
    first = (tmp_path / "chart.svg").read_bytes()
    plot.draw(copy_record, tmp_path / "again.svg")
    assert (tmp_path / "again.svg").read_bytes() == first
    plot.draw(copy_record, tmp_path / "chart.png")
    assert (tmp_path / "chart.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    plot.draw(copy_record, tmp_path / "chart.PDF")
    assert (tmp_path / "chart.PDF").read_bytes()[:5] == b"%PDF-"
    with pytest.raises(ValueError, match=r"one of \.svg, \.png, \.pdf"):
        plot.draw(copy_record, tmp_path / "chart.gif")


def test_a_live_run_and_its_record_draw_the_same_chart(tmp_path: Path) -> None:
    """--plot on a live run and bench plot on its --json record go through the same draw."""
    pytest.importorskip("matplotlib")
    live, record, redrawn = tmp_path / "live.svg", tmp_path / "r.json", tmp_path / "redrawn.svg"
    argv = [*TINY_CONVERT, "--threads", "1", "--json", str(record), "--plot", str(live)]
    assert bench_convert.main(argv) == 0
    assert plot.main([str(record), "--plot", str(redrawn)]) == 0
    assert redrawn.read_bytes() == live.read_bytes()
    assert "quantize ->NCHW32" in _svg_text(live)


def test_bench_plot_prints_the_record(copy_record: dict[str, Any], tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "r.json"
    write_record(copy_record, path)
    assert plot.main([str(path), "--markdown"]) == 0
    out, err = capsys.readouterr()
    assert "| transpose2d " in out and "- cpu: " in out and err == ""


# ---- without matplotlib ---------------------------------------------------------------------

# runs the script named by its first argument, as python would, with matplotlib unimportable
_WITHOUT_MATPLOTLIB = """
import os, runpy, sys
sys.modules["matplotlib"] = None  # import matplotlib now raises ImportError
script = sys.argv.pop(1)
sys.path.insert(0, os.path.dirname(script))
runpy.run_path(script, run_name="__main__")
"""
BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.mark.parametrize("command", [["bench_copy.py"], ["bench_convert.py"],
                                     ["plot_record.py", "R"]])
def test_plot_without_matplotlib_is_a_one_line_error(command: list[str], tmp_path: Path,
                                                     copy_record: dict[str, Any]) -> None:
    write_record(copy_record, tmp_path / "r.json")
    argv = [str(tmp_path / "r.json") if arg == "R" else arg for arg in command[1:]]
    result = subprocess.run(
        [sys.executable, "-c", _WITHOUT_MATPLOTLIB, str(BENCHMARKS / command[0]), *argv,
         "--plot", str(tmp_path / "c.svg")],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1, result.stderr  # nothing was timed: no progress
    assert result.stderr.startswith(f"python benchmarks/{command[0]}: error: --plot "
                                    "needs matplotlib")
    assert result.stderr.rstrip().endswith('pip install "strided[plot]"')
    assert not (tmp_path / "c.svg").exists()
