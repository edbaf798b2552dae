"""``python -m strided explain --bits 4``: layouts of 4-bit elements, in text and as a figure.

The memory map of a 4-bit layout has one column per byte, ``lo|hi``: the element in the low
nibble (bits 0-3), then the one in the high nibble (bits 4-7). The oracle places element offset
``e`` in byte ``e // 2``, nibble ``e % 2``, by brute force (``strategies.brute_offsets``).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest
from hypothesis import given
from hypothesis import strategies as hst
from strategies import brute_offsets, random_strides, sizes_st

from strided import Layout
from strided._cli import main
from strided._cli.explain import MAX_OFFSETS, element_name, explain, memory_map
from strided._cli.svg import layout_svg

SVG = "{http://www.w3.org/2000/svg}"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def oracle_bytes(sizes, strides, offset):
    """Byte -> [names in the low nibble, names in the high nibble]."""
    table: dict[int, list[list[str]]] = {}
    for k, e in enumerate(brute_offsets(sizes, strides, offset)):
        table.setdefault(e // 2, [[], []])[e % 2].append(element_name(k))
    return table


def cell(names: list[str]) -> str:
    if not names:
        return "x"
    return "/".join(names) if len(names) <= 3 else f"{names[0]}/{names[1]}+{len(names) - 2}"


def map_rows(text: str) -> tuple[list[int], list[str]]:
    """The byte numbers and the lo|hi cells of a memory map (all its wrapped lines)."""
    numbers: list[int] = []
    cells: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if re.fullmatch(r"byte(\s+-?[0-9]+)+", line):       # not a note about a byte
            numbers += [int(v) for v in line.split()[1:]]
        elif line.startswith("lo|hi "):
            cells += line.split()[1:]
    return numbers, cells


# ---- the text -------------------------------------------------------------------------------


def test_explain_bits_4(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "explain", "--sizes", "2,3", "--strides", "4,1", "--bits", "4")
    assert (status, err) == (0, "")
    assert "byte strides" not in out
    assert "low nibble first" in out
    assert "byte-addressable  yes" in out
    assert "nbytes            4" in out
    assert map_rows(out) == ([0, 1, 2, 3], ["A|B", "C|x", "D|E", "F|x"])
    assert "F (1, 2) -> 6 (byte 3 lo)" in out


def test_explain_bits_4_not_byte_addressable(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "explain", "--sizes", "2,3", "--strides", "6,1", "--offset",
                         "1", "--bits", "4")
    assert status == 0
    assert "byte-addressable  no: offset 1 of 4-bit elements is odd" in out
    numbers, cells = map_rows(out)
    assert numbers == list(range(8))       # 5 bytes, DirectML-rounded to 8
    assert cells[:5] == ["x|A", "B|C", "x|x", "x|D", "E|F"]
    assert "bytes 5..7: DirectML buffer padding (5 bytes rounded up to 8" in out


def test_explain_labels_and_negative_strides_with_bits(
        capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "explain", "NHWC", "--sizes", "1,3,1,2", "--bits", "4")
    assert status == 0 and "NHWC" in out
    assert map_rows(out) == ([0, 1, 2, 3], ["A|C", "E|B", "D|F", "x|x"])
    status, out, _ = run(capsys, "explain", "--sizes", "3", "--strides", "-1", "--offset", "2",
                         "--bits", "4")
    assert status == 0
    assert map_rows(out)[1][:2] == ["C|B", "A|x"]
    assert "stride -1 of dim 0 is negative" in out


@pytest.mark.parametrize(("argv", "message"), [
    (["--bits", "5"], "bits=5"),
    (["--bits", "4", "--itemsize", "2"], "bits=4 with itemsize=2"),
    (["--bits", "x"], "--bits"),
])
def test_bad_bits(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    status, out, err = run(capsys, "explain", "--sizes", "2,3", *argv)
    assert status == 2 and out == ""
    assert err.startswith("strided explain: error:") and message in err
    assert err.count("\n") == 1


def test_bits_needs_sizes(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, "explain", "--bits", "4")
    assert status == 2 and "--sizes is required" in err


def test_bits_8_is_the_byte_explanation(capsys: pytest.CaptureFixture[str]) -> None:
    _, with_bits, _ = run(capsys, "explain", "NHWC", "--sizes", "1,3,2,2", "--bits", "8")
    _, without, _ = run(capsys, "explain", "NHWC", "--sizes", "1,3,2,2")
    assert with_bits == without


def test_blocked_format_with_bits_points_to_the_physical_layout(
        tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, "explain", "NCHW64", "--sizes", "1,3,2,2", "--bits", "4",
                         "--svg", str(tmp_path / "f.svg"))
    assert status == 2 and "--sizes 1,1,2,2,64 --bits 4" in err


@given(hst.data())
def test_text_map_matches_the_brute_force_bytes(data) -> None:
    sizes = data.draw(sizes_st(1, 3, 1, 4))
    strides = data.draw(random_strides(sizes, 5))
    offsets = brute_offsets(sizes, strides)
    offset = data.draw(hst.integers(-min(offsets), -min(offsets) + 3))
    L = Layout(sizes, strides, offset=offset, bits=4)
    numbers, cells = map_rows(memory_map(L))
    table = oracle_bytes(sizes, strides, offset)
    lo_byte = min(table)
    assert numbers[0] == lo_byte and numbers == list(range(lo_byte, lo_byte + len(numbers)))
    assert len(numbers) <= MAX_OFFSETS // 2
    for byte, text in zip(numbers, cells, strict=True):
        low, high = table.get(byte, [[], []])
        assert text == f"{cell(low)}|{cell(high)}", (byte, text)
    if len(numbers) < MAX_OFFSETS // 2:     # not truncated: every byte of the data is drawn
        assert max(table) <= numbers[-1]
        assert len(numbers) >= L.buffer_size(align=4)


def test_byte_layouts_are_unchanged() -> None:
    text = explain(Layout((2, 3), (5, 1)))
    assert "byte strides  (5, 1) (itemsize 1)" in text
    assert "value   A B C x x D E F x x" in text
    assert "nibble" not in text and "byte-addressable" not in text


# ---- the figure -----------------------------------------------------------------------------


def nibble_cells(svg: str) -> list[ET.Element]:
    root = ET.fromstring(svg)
    return [g for g in root.iter(f"{SVG}g") if g.get("data-nibble") is not None]


def test_figure_draws_two_elements_per_byte() -> None:
    svg = layout_svg(Layout((2, 3), (4, 1), bits=4))
    cells = nibble_cells(svg)
    assert [(g.get("data-byte"), g.get("data-nibble"), g.get("data-elements")) for g in cells] == [
        ("0", "low", "A"), ("0", "high", "B"), ("1", "low", "C"), ("1", "high", None),
        ("2", "low", "D"), ("2", "high", "E"), ("3", "low", "F"), ("3", "high", None)]
    assert "low nibble first" in svg
    assert "4-bit elements" in svg
    root = ET.fromstring(svg)
    numbers = [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "byte"]
    assert numbers == ["0", "1", "2", "3"]
    assert svg == layout_svg(Layout((2, 3), (4, 1), bits=4))      # deterministic


@given(hst.data())
def test_figure_matches_the_brute_force_bytes(data) -> None:
    sizes = data.draw(sizes_st(1, 3, 1, 4))
    strides = data.draw(random_strides(sizes, 5))
    offsets = brute_offsets(sizes, strides)
    offset = data.draw(hst.integers(-min(offsets), -min(offsets) + 3))
    table = oracle_bytes(sizes, strides, offset)
    cells = nibble_cells(layout_svg(Layout(sizes, strides, offset=offset, bits=4)))
    assert len(cells) % 2 == 0 and cells[0].get("data-nibble") == "low"
    for g in cells:
        e = int(g.get("data-offset"))
        assert int(g.get("data-byte")) == e // 2
        assert g.get("data-nibble") == ("high" if e % 2 else "low")
        names = table.get(e // 2, [[], []])[e % 2]
        assert (g.get("data-elements") or "").split() == names


def test_cli_writes_the_4_bit_figure(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "int4.svg"
    status, out, _ = run(capsys, "explain", "NHWC", "--sizes", "1,3,2,2", "--bits", "4",
                         "--svg", str(path))
    assert status == 0 and out == f"wrote {path}\n"
    svg = path.read_text()
    assert svg == layout_svg(Layout.packed((1, 3, 2, 2), "NHWC", bits=4),
                             title="NHWC, sizes (1, 3, 2, 2)")
    cells = nibble_cells(svg)      # 12 elements in 6 bytes, DirectML-rounded to 8
    assert len(cells) == 16 and sum(g.get("data-elements") is not None for g in cells) == 12


def test_empty_and_broadcast_4_bit_layouts() -> None:
    assert "none, no element is stored" in layout_svg(Layout((0, 3), bits=4))
    assert memory_map(Layout((0, 3), bits=4)).startswith("(empty")
    _, cells = map_rows(memory_map(Layout((2, 2), (0, 1), offset=1, bits=4)))
    assert cells[:2] == ["x|A/C", "B/D|x"]
