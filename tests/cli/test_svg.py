"""The SVG figures of ``python -m strided explain ... --svg FILE`` (``strided._cli.svg``).

Every figure is parsed as XML and checked against brute-force oracles that never call into
strided: the offset of each element is ``dot(index, strides) + offset`` over every index of
``itertools.product``, and the blocked buffers are numpy's reshape/transpose of the logical
tensor (``NCHW4`` physical = ``x.reshape(N, C/4, 4, H, W).transpose(0, 1, 3, 4, 2)``).
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from strategies import all_indices, brute_offsets, layouts

from strided import Layout
from strided._cli import main
from strided._cli.svg import MAX_CELLS, PALETTE, blocked_svg, layout_svg

NS = "{http://www.w3.org/2000/svg}"


# ---- reading a figure -----------------------------------------------------------------------


def parse(svg: str) -> ET.Element:
    """The root of ``svg``, checked to be a standalone SVG document with a consistent size."""
    assert svg.startswith('<?xml version="1.0" encoding="UTF-8"?>\n')
    assert svg.endswith("</svg>\n")
    root = ET.fromstring(svg)
    assert root.tag == f"{NS}svg"
    width, height = int(root.get("width", "")), int(root.get("height", ""))
    assert width > 0 and height > 0
    assert root.get("viewBox") == f"0 0 {width} {height}"
    return root


def groups(root: ET.Element, kind: str) -> list[ET.Element]:
    """The ``<g>`` of a kind: ``cell`` (buffer, class ``cell KIND``) or ``element`` (tensor)."""
    return [g for g in root.iter(f"{NS}g") if (g.get("class") or "").split()[:1] == [kind]]


def buffer_cells(root: ET.Element) -> dict[int, ET.Element]:
    cells = {int(g.get("data-offset", "")): g for g in groups(root, "cell")}
    assert len(cells) == len(groups(root, "cell")), "an offset is drawn twice"
    return cells


def text_of(g: ET.Element, cls: str) -> str:
    found = [t.text for t in g.iter(f"{NS}text") if t.get("class") == cls]
    assert len(found) == 1
    return found[0] or ""


def fill_of(g: ET.Element) -> str:
    return next(g.iter(f"{NS}rect")).get("fill", "")


def all_text(root: ET.Element) -> str:
    return " ".join(" ".join(t.itertext()) for t in root.iter(f"{NS}text"))


# ---- the oracles ----------------------------------------------------------------------------


def letters(k: int) -> str:
    """Bijective base 26: 0 -> A, 25 -> Z, 26 -> AA."""
    name = ""
    k += 1
    while k:
        k, r = divmod(k - 1, 26)
        name = chr(ord("A") + r) + name
    return name


def oracle_map(sizes: tuple[int, ...], strides: tuple[int, ...],
               offset: int) -> dict[int, list[str]]:
    """Offset -> names of the elements stored there, row-major."""
    table: dict[int, list[str]] = {}
    for k, off in enumerate(brute_offsets(sizes, strides, offset)):
        table.setdefault(off, []).append(letters(k))
    return table


def expected_label(names: list[str]) -> str:
    if not names:
        return "x"
    if len(names) <= 3:
        return "/".join(names)
    return f"{names[0]}/{names[1]}+{len(names) - 2}"


def check_buffer(root: ET.Element, table: dict[int, list[str]]) -> dict[int, ET.Element]:
    """Every cell drawn holds what the oracle puts at its offset, padding exactly where no
    element lands; the cells run from the lowest offset without a gap."""
    cells = buffer_cells(root)
    lo, hi = min(table), max(table)
    drawn = sorted(cells)
    assert drawn == list(range(lo, lo + len(drawn)))
    assert min(hi - lo + 1, MAX_CELLS) <= len(drawn) <= MAX_CELLS
    for off, g in cells.items():
        names = table.get(off, [])
        kind = "padding" if not names else "element" if len(names) == 1 else "shared"
        assert g.get("class") == f"cell {kind}", off
        assert text_of(g, "value") == expected_label(names), off
        assert text_of(g, "offset") == str(off)
        assert (g.get("data-elements") or "").split() == names, off
        if kind == "padding":
            assert fill_of(g) == "url(#strided-hatch)"
    return cells


def check_logical(root: ET.Element, sizes: tuple[int, ...]) -> dict[str, ET.Element]:
    """The logical tensor names element ``k`` of row-major order ``letters(k)``."""
    elements = groups(root, "element")
    expected = {letters(k): ",".join(map(str, index))
                for k, index in enumerate(all_indices(sizes))}
    found = {g.get("data-name", ""): g.get("data-index", "") for g in elements}
    assert found == expected
    for g in elements:
        assert next(g.iter(f"{NS}text")).text == g.get("data-name")
    return {g.get("data-name", ""): g for g in elements}


def check_inside(root: ET.Element) -> None:
    """Nothing is drawn outside the figure."""
    width, height = int(root.get("width", "")), int(root.get("height", ""))
    for rect in root.iter(f"{NS}rect"):
        if rect.get("x") is None:       # the hatch pattern's tile
            continue
        x, y = int(rect.get("x", "")), int(rect.get("y", ""))
        assert 0 <= x and x + int(rect.get("width", "")) <= width
        assert 0 <= y and y + int(rect.get("height", "")) <= height
    for text in root.iter(f"{NS}text"):
        assert 0 <= int(text.get("x", "")) < width and 0 < int(text.get("y", "")) <= height


# ---- strided layouts ------------------------------------------------------------------------

LAYOUTS = {
    "padded": Layout((2, 3), (5, 1)),
    "column-major": Layout((2, 3), (1, 2), itemsize=4),
    "nhwc": Layout.packed((2, 3, 2, 2), "NHWC"),
    "broadcast C": Layout((1, 3, 2, 2), (4, 0, 2, 1)),
    "broadcast row": Layout((2, 3), (0, 1), itemsize=4),
    "sliding window": Layout((3, 3), (1, 1)),
    "negative strides": Layout((2, 3), (-3, 1), offset=3, itemsize=4),
    "both negative": Layout((3, 4), (-4, -1), offset=11),
    "below zero": Layout((4,), offset=-2, itemsize=4),
    "scalar": Layout((), offset=7),
    "rank 5": Layout.packed((1, 2, 2, 2, 3), "NDHWC"),
    "rank 6": Layout((2, 1, 2, 1, 2, 2)),
    "many names": Layout((2, 20), (40, 2)),
}


@pytest.mark.parametrize("layout", LAYOUTS.values(), ids=LAYOUTS.keys())
def test_figure_matches_the_brute_force_map(layout: Layout) -> None:
    root = parse(layout_svg(layout))
    table = oracle_map(layout.sizes, layout.strides, layout.offset)
    cells = check_buffer(root, table)
    elements = check_logical(root, layout.sizes)
    for g in cells.values():     # an element has its colour in the tensor and in the buffer
        names = (g.get("data-elements") or "").split()
        if names:
            assert fill_of(g) == fill_of(elements[names[0]])
    check_inside(root)


@settings(max_examples=60)
@given(layouts(max_rank=4, max_size=4))
def test_any_small_layout_matches_the_brute_force_map(layout: Layout) -> None:
    root = parse(layout_svg(layout))
    if layout.size == 0:
        assert not buffer_cells(root) and not groups(root, "element")
        return
    check_buffer(root, oracle_map(layout.sizes, layout.strides, layout.offset))
    check_logical(root, layout.sizes)
    check_inside(root)


def test_padded_rows_as_directml_draws_them() -> None:
    root = parse(layout_svg(Layout((2, 3), (5, 1))))
    cells = buffer_cells(root)
    assert [text_of(cells[o], "value") for o in sorted(cells)] == list("ABCxxDEFxx")
    assert "trailing padding" in all_text(root)


def test_channels_have_one_colour_each() -> None:
    """NHWC: the buffer interleaves the channel colours c0 c1 c2 c0 c1 c2 ..."""
    root = parse(layout_svg(Layout.packed((1, 3, 2, 2), "NHWC")))
    cells = buffer_cells(root)
    assert [fill_of(cells[o]) for o in range(12)] == [PALETTE[c] for c in (0, 1, 2) * 4]
    legend = all_text(root)
    assert "c0" in legend and "c2" in legend and "c3" not in legend


def test_rows_have_one_colour_each() -> None:
    root = parse(layout_svg(Layout((2, 3), (1, 2))))      # column-major: A D B E C F
    cells = buffer_cells(root)
    assert [fill_of(cells[o]) for o in range(6)] == [PALETTE[r] for r in (0, 1) * 3]


def test_shared_offsets_are_marked_and_striped() -> None:
    root = parse(layout_svg(Layout((1, 3, 2, 2), (4, 0, 2, 1))))   # NHWC, broadcast C
    cells = buffer_cells(root)
    assert len(cells) == 4
    for off, first in enumerate("ABCD"):
        g = cells[off]
        names = [first, letters(4 + off), letters(8 + off)]
        assert (g.get("data-elements") or "").split() == names
        assert text_of(g, "value") == "/".join(names)
        assert len(list(g.iter(f"{NS}polygon"))) == 1           # the black corner
        fills = [r.get("fill") for r in g.iter(f"{NS}rect")][:3]
        assert fills == list(PALETTE[:3])                        # one stripe per channel
    assert "several elements at one offset" in all_text(root)


def test_negative_strides_start_at_the_lowest_offset() -> None:
    root = parse(layout_svg(Layout((2, 3), (-3, 1), offset=3)))
    cells = buffer_cells(root)
    assert [text_of(cells[o], "value") for o in range(6)] == list("DEFABC")
    assert min(cells) == 0


def test_empty_layout_has_no_cells() -> None:
    for sizes in ((0, 3), (2, 0, 3), (0,)):
        root = parse(layout_svg(Layout(sizes)))
        assert not buffer_cells(root) and not groups(root, "element")
        assert "empty: a size is 0" in all_text(root)
        assert "no element is stored" in all_text(root)


def test_huge_broadcast_is_capped_and_says_so() -> None:
    root = parse(layout_svg(Layout((10**9, 10**9), (0, 1))))
    cells = buffer_cells(root)
    assert sorted(cells) == list(range(MAX_CELLS))
    text = all_text(root)
    assert f"truncated: offsets 0..{MAX_CELLS - 1} of 0..999999999" in text
    assert "only the first 4096 elements" in text
    assert "the logical tensor is drawn for at most" in text
    assert "..." in text
    # the first elements of the first rows, in row-major order
    assert (cells[0].get("data-elements") or "").split()[:2] == ["A", letters(10**9)]
    check_inside(root)


def test_long_buffer_wraps_onto_rows() -> None:
    root = parse(layout_svg(Layout((6, 10))))
    cells = buffer_cells(root)
    rows = sorted({int(next(g.iter(f"{NS}rect")).get("y", "")) for g in cells.values()})
    assert len(rows) == 4                           # 60 cells, 16 per row
    assert "the logical tensor is drawn up to" not in all_text(root)


def test_wide_rows_are_not_drawn_as_a_grid() -> None:
    root = parse(layout_svg(Layout((2, 100))))
    assert not groups(root, "element")
    assert "rows of 100 elements" in all_text(root)


def test_title_is_escaped() -> None:
    title = 'a <b> & "c"'
    root = parse(layout_svg(Layout((2, 3)), title=title))
    assert root.find(f"{NS}title") is not None
    assert root.find(f"{NS}title").text == title               # type: ignore[union-attr]
    assert title in all_text(root)


def test_figures_are_deterministic() -> None:
    for layout in LAYOUTS.values():
        assert layout_svg(layout) == layout_svg(layout)
    assert blocked_svg((2, 5, 2, 2), "NCHW4") == blocked_svg((2, 5, 2, 2), "NCHW4")


# ---- blocked formats ------------------------------------------------------------------------


def numpy_blocked(sizes: tuple[int, int, int, int], block: int,
                  chwn: bool) -> tuple[np.ndarray, np.ndarray]:
    """The blocked buffer of a tensor whose elements are their row-major positions, padding
    channels -1, and the channel of every lane: numpy's reshape/transpose of the tensor."""
    n, c, h, w = sizes
    padded = -(-c // block) * block
    x = np.full((n, padded, h, w), -1, dtype=np.int64)
    x[:, :c] = np.arange(n * c * h * w).reshape(n, c, h, w)
    channel = np.broadcast_to(np.arange(padded)[None, :, None, None], x.shape)
    axes = (1, 3, 4, 0, 2) if chwn else (0, 1, 3, 4, 2)
    blocks = (n, padded // block, block, h, w)
    return (x.reshape(blocks).transpose(axes).ravel(),
            channel.reshape(blocks).transpose(axes).ravel())


BLOCKED = [
    ((1, 8, 2, 2), "NCHW4", 4, False),       # no padding
    ((2, 5, 2, 3), "NCHW4", 4, False),       # three padding lanes in the second block
    ((2, 3, 2, 2), "CHWN4", 4, True),        # N innermost but one: n0 lanes, then n1 lanes
    ((3, 6, 1, 2), "CHWN4", 4, True),
    ((1, 3, 2, 2), "nChw16c", 16, False),
    ((1, 40, 1, 1), "NCHW32", 32, False),
    ((2, 3, 1, 2), "NCHW1", 1, False),       # 12 elements: no padding at all
    ((1, 3, 1, 1), "NCHW1", 1, False),       # 3 bytes: DirectML rounds the buffer to 4
]


@pytest.mark.parametrize(("sizes", "fmt", "block", "chwn"), BLOCKED,
                         ids=[f"{fmt}-{'x'.join(map(str, s))}" for s, fmt, _, _ in BLOCKED])
def test_blocked_storage_order_matches_numpy(sizes: tuple[int, int, int, int], fmt: str,
                                             block: int, chwn: bool) -> None:
    root = parse(blocked_svg(sizes, fmt))
    stored, channel = numpy_blocked(sizes, block, chwn)
    cells = buffer_cells(root)
    assert sorted(cells) == list(range(len(cells)))
    assert len(cells) == min(MAX_CELLS, max(len(stored), len(cells)))
    for off, g in cells.items():
        if off >= len(stored):          # past the physical buffer: DirectML's rounding
            assert g.get("class") == "cell padding" and g.get("data-channel") is None
            continue
        assert g.get("data-channel") == str(channel[off]), off
        if stored[off] < 0:
            assert g.get("class") == "cell padding", off
            assert text_of(g, "value") == "x"
            assert fill_of(g) == "url(#strided-hatch)"
        else:
            name = letters(int(stored[off]))
            assert g.get("class") == "cell element", off
            assert g.get("data-elements") == name and text_of(g, "value") == name
            assert fill_of(g) == PALETTE[channel[off] % len(PALETTE)]
    check_logical(root, sizes)
    check_inside(root)


def test_blocked_padding_channels_are_named() -> None:
    text = all_text(parse(blocked_svg((1, 5, 1, 1), "NCHW4")))
    assert "channels 5..7 are padding (zeros): C = 5 rounded up to a multiple of 4" in text
    assert "padding channel (0)" in text
    assert "(N, C/4, H, W, 4) = (1, 2, 1, 1, 4)" in text
    text = all_text(parse(blocked_svg((1, 3, 1, 1), "CHWN4")))
    assert "channel 3 is padding" in text and "(C/4, H, W, N, 4)" in text


def test_blocked_block_captions_follow_the_physical_order() -> None:
    root = parse(blocked_svg((2, 3, 1, 2), "CHWN4"))
    captions = [t.text for t in root.iter(f"{NS}text") if t.get("class") == "block"]
    assert captions == ["c0-3 h0 w0 n0", "c0-3 h0 w0 n1", "c0-3 h0 w1 n0", "c0-3 h0 w1 n1"]
    root = parse(blocked_svg((1, 6, 1, 2), "NCHW4"))
    captions = [t.text for t in root.iter(f"{NS}text") if t.get("class") == "block"]
    assert captions == ["n0 c0-3 h0 w0", "n0 c0-3 h0 w1", "n0 c4-7 h0 w0", "n0 c4-7 h0 w1"]


def test_blocked_huge_and_empty() -> None:
    root = parse(blocked_svg((1000, 1000, 1000, 1000), "NCHW4"))
    assert sorted(buffer_cells(root)) == list(range(MAX_CELLS))
    assert "truncated: offsets 0..127" in all_text(root)
    root = parse(blocked_svg((2, 0, 3, 3), "NCHW4"))
    assert not buffer_cells(root) and "empty" in all_text(root)


@pytest.mark.parametrize(("sizes", "fmt", "error"), [
    ((1, 8, 2), "NCHW4", ValueError),
    ((1, 8, 2, 2), "NCHW", ValueError),
    ((1, 8, 2, 2), 4, TypeError),
    ((2**40, 2**40, 2**40, 1), "NCHW4", OverflowError),
])
def test_blocked_bad_arguments(sizes: tuple[int, ...], fmt: object, error: type) -> None:
    with pytest.raises(error):
        blocked_svg(sizes, fmt)  # type: ignore[arg-type]


# ---- the command line -----------------------------------------------------------------------


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_cli_writes_the_figure(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "nhwc.svg"
    status, out, err = run(capsys, "explain", "NHWC", "--sizes", "1,3,2,2", "--svg", str(path))
    assert (status, out, err) == (0, f"wrote {path}\n", "")      # no text explanation
    svg = path.read_bytes().decode("utf-8")
    layout = Layout.packed((1, 3, 2, 2), "NHWC")
    assert svg == layout_svg(layout, title="NHWC, sizes (1, 3, 2, 2)")
    root = parse(svg)
    check_buffer(root, oracle_map(layout.sizes, layout.strides, 0))
    assert b"\r" not in path.read_bytes()


def test_cli_strides_offset_and_broadcast(capsys: pytest.CaptureFixture[str],
                                          tmp_path: Path) -> None:
    path = tmp_path / "neg.svg"
    status, _, _ = run(capsys, "explain", "--sizes", "2,3", "--strides", "-3,1", "--offset", "3",
                       "--svg", str(path))
    assert status == 0
    check_buffer(parse(path.read_text()), oracle_map((2, 3), (-3, 1), 3))
    status, _, _ = run(capsys, "explain", "NHWC", "--sizes", "1,3,2,2", "--broadcast", "C",
                       "--svg", str(path))
    assert status == 0
    check_buffer(parse(path.read_text()), oracle_map((1, 3, 2, 2), (4, 0, 2, 1), 0))


def test_cli_draws_blocked_formats(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "nchw4.svg"
    status, out, err = run(capsys, "explain", "NCHW4", "--sizes", "1,6,2,2", "--itemsize", "2",
                           "--svg", str(path))
    assert (status, out, err) == (0, f"wrote {path}\n", "")
    root = parse(path.read_text())
    assert "NCHW4, logical sizes (N, C, H, W) = (1, 6, 2, 2)" in all_text(root)
    assert "itemsize 2" in all_text(root)
    stored, _ = numpy_blocked((1, 6, 2, 2), 4, False)
    cells = buffer_cells(root)
    assert [(g.get("data-elements") or "x") for _, g in sorted(cells.items())] == [
        letters(int(v)) if v >= 0 else "x" for v in stored]


def test_cli_figure_is_byte_identical_across_processes(tmp_path: Path) -> None:
    """Two interpreters (different hash seeds) write the same bytes: the docs do not churn."""
    outputs = []
    for seed in ("1", "2"):
        path = tmp_path / f"chwn4-{seed}.svg"
        env = dict(os.environ, PYTHONHASHSEED=seed)
        result = subprocess.run(
            [sys.executable, "-m", "strided", "explain", "CHWN4", "--sizes", "2,3,2,2",
             "--svg", str(path)],
            capture_output=True, text=True, check=False, timeout=120, env=env,
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout == f"wrote {path}\n"
        outputs.append(path.read_bytes())
    assert outputs[0] == outputs[1]


@pytest.mark.parametrize(
    ("argv", "pattern"),
    [
        (["NCHW4", "--sizes", "1,8,2,2"],
         r"'NCHW4' is a blocked format, which the text explanation cannot show .*--svg FILE"),
        (["NCHW4", "--sizes", "1,8,2,2", "--strides", "1,1,1,1", "--svg", "{tmp}/f.svg"],
         r"always packed: --strides, --broadcast and --offset do not apply"),
        (["CHWN4", "--sizes", "1,8,2,2", "--offset", "1", "--svg", "{tmp}/f.svg"],
         r"do not apply"),
        (["NCHW4", "--sizes", "1,8,2", "--svg", "{tmp}/f.svg"], r"needs logical sizes"),
        (["NCHW4", "--sizes", "99999999999,99999999999,99999999999,4", "--svg", "{tmp}/f.svg"],
         r"leave int64"),
        (["--svg", "{tmp}/f.svg"], r"--sizes is required"),
        (["--sizes", "2,3", "--svg", "{tmp}/missing/f.svg"],
         r"--svg '.*missing/f.svg': cannot write the figure: No such file or directory"),
        (["--sizes", "2,3", "--svg", "{tmp}/dir.svg"], r"cannot write the figure"),
        (["NHWC", "--sizes", "2,3", "--svg", "{tmp}/f.svg"], r"it is a rank-4 label"),
    ],
)
def test_cli_errors_are_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                 argv: list[str], pattern: str) -> None:
    import re

    argv = [arg.replace("{tmp}", str(tmp_path)) for arg in argv]
    (tmp_path / "dir.svg").mkdir()  # a directory whose name ends in .svg: it cannot be written
    status, out, err = run(capsys, "explain", *argv)
    assert status == 2
    assert out == ""
    assert err.startswith("strided explain: error: ")
    assert err.count("\n") == 1, err
    assert re.search(pattern, err), err
    assert not (tmp_path / "f.svg").exists()


@pytest.mark.parametrize("name", ["a.png", "a.PDF", "a", "a.svg.png", "svg", ".svg", "a.svgz"])
@pytest.mark.parametrize("argv", [
    ["NHWC", "--sizes", "1,3,2,2"],
    ["NCHW4", "--sizes", "1,6,2,2"],     # a blocked format's figure
    ["--sizes", "2,3", "--bits", "4"],
    ["NHWC"],                            # refused for the name before --sizes is missed
])
def test_cli_refuses_a_file_name_not_ending_in_svg(capsys: pytest.CaptureFixture[str],
                                                   tmp_path: Path, name: str,
                                                   argv: list[str]) -> None:
    """Only SVG is written: a FILE named for another format (or none) is refused up front, in
    one line naming it, and nothing is created."""
    path = tmp_path / name
    status, out, err = run(capsys, "explain", *argv, "--svg", str(path))
    assert (status, out) == (2, "")
    assert err == (f"strided explain: error: --svg {str(path)!r}: the figure is written as SVG "
                   f"only; give a FILE whose name ends in .svg\n")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["a.SVG", "a.Svg", "a.png.svg"])
def test_cli_accepts_svg_in_any_case(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                     name: str) -> None:
    path = tmp_path / name
    status, out, err = run(capsys, "explain", "NHWC", "--sizes", "1,3,2,2", "--svg", str(path))
    assert (status, out, err) == (0, f"wrote {path}\n", "")
    assert path.read_text() == layout_svg(Layout.packed((1, 3, 2, 2), "NHWC"),
                                          title="NHWC, sizes (1, 3, 2, 2)")


def test_cli_refuses_a_png_name_from_the_shell(tmp_path: Path) -> None:
    """``python -m strided explain ... --svg a.png``, as a user types it: status 2, no file."""
    result = subprocess.run(
        [sys.executable, "-m", "strided", "explain", "NHWC", "--sizes", "1,3,2,2",
         "--svg", "a.png"],
        capture_output=True, text=True, check=False, timeout=120, cwd=tmp_path,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == ("strided explain: error: --svg 'a.png': the figure is written as "
                             "SVG only; give a FILE whose name ends in .svg\n")
    assert list(tmp_path.iterdir()) == []


def test_cli_help_documents_svg(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "explain", "--help")
    assert status == 0
    assert "--svg FILE" in out and "blocked" in out


def test_every_index_is_drawn_once() -> None:
    """A packed layout: the buffer is a permutation of the elements (itertools oracle)."""
    for label in ("NCHW", "NHWC", "CHWN", "HWCN"):
        layout = Layout.packed((2, 3, 2, 2), label)
        cells = buffer_cells(parse(layout_svg(layout)))
        names = sorted(g.get("data-elements") or "" for g in cells.values())
        expected = sorted(letters(k) for k, _ in enumerate(itertools.product(
            range(2), range(3), range(2), range(2))))
        assert names == expected, label
