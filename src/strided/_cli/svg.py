"""SVG figures of layouts: the picture behind ``python -m strided explain ... --svg FILE``.

A figure draws what the text explanation (:mod:`strided._cli.explain`) prints, as a picture:

- the **logical tensor**, its elements named ``A, B, C, ...`` in row-major index order, in 2-D
  slices (``n=0, c=1`` for an NCHW tensor);
- the **buffer**, a row of cells (wrapped onto several rows) with each cell's offset underneath,
  from the lowest offset reached to the end of the buffer, at most :data:`MAX_CELLS` cells;
- **padding** (an offset no element reaches) hatched grey with an ``x``;
- a **shared** offset (broadcast, overlap) showing its elements (``A/E/I``), striped with their
  colours and marked by a black corner;
- one colour per **channel** (ranks 4 and 5, whose axis 1 is C) or per **row** of the logical
  tensor (other ranks), the same in the tensor and in the buffer, so that the interleaving of a
  channels-last or a blocked layout reads at a glance;
- for **4-bit elements** (``Layout(..., bits=4)``) one cell per *byte*, split in two: the
  element in its low nibble on the left, the one in its high nibble on the right (low nibble
  first), the byte's number underneath;
- for the **blocked formats** (:func:`blocked_svg`: ``NCHW4``, ``NCHW32``, ``CHWN4``,
  ``nChw16c``, ...) the logical NCHW tensor and the packed physical buffer, a thick bar between
  blocks of ``x`` channel lanes, and the padding channels marked.

The cells come from :func:`strided._cli.explain.map_window`, the text map's own walk: every
offset is the public :class:`~strided.Layout` API's (``offset_of``, ``span``); nothing here
recomputes strides. The SVG text is written by hand (no dependency) and is deterministic: the
same layout gives the same bytes (integer coordinates, no dates, no random ids), so a docs build
that regenerates a figure does not change it.

Examples
--------
>>> import xml.etree.ElementTree as ET
>>> from strided import Layout
>>> svg = layout_svg(Layout((2, 3), (5, 1)), title="2x3, rows 5 elements apart")
>>> root = ET.fromstring(svg)
>>> root.get("viewBox") == f"0 0 {root.get('width')} {root.get('height')}"
True
>>> cells = [g for g in root.iter("{http://www.w3.org/2000/svg}g")
...          if g.get("data-offset") is not None]
>>> " ".join(g.get("data-elements") or "x" for g in cells)
'A B C x x D E F x x'
>>> svg == layout_svg(Layout((2, 3), (5, 1)), title="2x3, rows 5 elements apart")
True
>>> blocked = blocked_svg((1, 3, 1, 2), "NCHW4")       # 3 channels + 1 padding lane per pixel
>>> ET.fromstring(blocked).get("width") is not None, blocked.count('class="cell padding"')
(True, 2)
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape, quoteattr

from strided._cli.explain import (
    MAX_GRID_ELEMENTS,
    MapWindow,
    cell_text,
    element_name,
    element_names,
    map_window,
    row_major_indices,
)
from strided.formats import CANONICAL, BlockedFormat, parse_blocked
from strided.layout import Layout

__all__ = ["MAX_CELLS", "PALETTE", "blocked_svg", "layout_svg"]

#: The buffer row shows at most this many cells (offsets); the figure says when it stops.
MAX_CELLS = 128
#: One fill per channel (or row), cycled; light enough for black letters on top.
PALETTE = ("#9ecae1", "#fdae6b", "#a1d99b", "#f4a6c6", "#c6b3e6", "#f2df7e", "#8fd3cc",
           "#d9b38c")

# Geometry, in SVG user units (pixels). Every coordinate is an integer so that the output does
# not depend on float formatting.
_MARGIN = 16
_CELL_H = 28
_FONT = 12                  # cell letters, headings
_SMALL = 10                 # offsets under the cells, slice headers
_LINE = 16                  # height of a line of text
_GAP = 16                   # between slices, sections, legend items
_ROW_GAP = 22               # below a buffer row: its offsets and some air
_ONE_ROW = 20               # up to this many cells, the buffer is one row (fits a docs page)
_PER_ROW = 16               # otherwise at most this many a row, at least half of it
_MAX_COLS = 24              # the logical grid is drawn for slices up to this wide
_MIN_WIDTH = 560
_MAX_WIDTH = 960
_CHAR = 0.62                # width of a monospace character, in font sizes
_LEGEND_CHANNELS = 16       # the legend lists at most this many channel colours

_INK = "#1a1a1a"
_MUTED = "#555555"
_PAD_INK = "#444444"
_HATCH = "strided-hatch"
_SHARED = "#ffffff"         # the legend swatch of a shared offset, drawn with its corner
_FONTS = "DejaVu Sans Mono, Menlo, Consolas, monospace"


# ---- what is drawn ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Element:
    """One element of the logical tensor."""

    name: str
    index: tuple[int, ...]
    group: int          # colour key: the channel, or the row
    tooltip: str


@dataclass(frozen=True)
class _Slice:
    """A 2-D slice of the logical tensor, with a header such as ``n=0, c=1``."""

    header: str
    rows: tuple[tuple[_Element, ...], ...]


@dataclass(frozen=True)
class _Cell:
    """One offset of the buffer and what it holds."""

    offset: int
    names: tuple[str, ...]      # the elements stored there, row-major; () for padding
    groups: tuple[int, ...]     # their distinct colour keys, in order of appearance
    tooltip: str
    channel: int | None = None  # blocked formats: the channel lane, padding ones included
    caption: str = ""           # blocked formats, first lane of a block: which pixel it holds

    @property
    def kind(self) -> str:
        """``"padding"``, ``"element"`` or ``"shared"`` (several elements)."""
        if not self.names:
            return "padding"
        return "element" if len(self.names) == 1 else "shared"


@dataclass(frozen=True)
class _Figure:
    """Everything a figure shows, before any coordinate is decided."""

    title: str
    subtitle: tuple[str, ...]
    slices: tuple[_Slice, ...]
    grid_note: str              # replaces the grid when it is too large, else ""
    cells: tuple[_Cell, ...]
    more_cells: bool            # the buffer goes on after the last cell drawn
    block: int                  # blocked formats: lanes per block, else 0
    legend: tuple[tuple[str, str], ...]    # (swatch fill, text); fill "": text only
    notes: tuple[str, ...]
    nibbles: bool = False       # 4-bit elements: the cells pair up into bytes, low nibble first


# ---- small helpers ---------------------------------------------------------------------------


def _fill(group: int) -> str:
    return PALETTE[group % len(PALETTE)]


def _text_width(text: str, size: int = _FONT) -> int:
    return math.ceil(len(text) * size * _CHAR)


def _distinct(values: Iterable[int]) -> tuple[int, ...]:
    return tuple(dict.fromkeys(values))


def _listing(entries: Sequence[str], limit: int = 6) -> str:
    shown = ", ".join(entries[:limit])
    return shown if len(entries) <= limit else f"{shown} and {len(entries) - limit} more"


def _has_channels(ndim: int) -> bool:
    """Ranks 4 and 5 are NCHW and NCDHW: axis 1 is the channel."""
    return ndim in (4, 5)


def _group_key(sizes: tuple[int, ...]) -> Callable[[tuple[int, ...]], int]:
    """The colour key of an index: its channel (ranks 4 and 5), else its row-major row."""
    if _has_channels(len(sizes)):
        return lambda index: index[1]
    if len(sizes) <= 1:
        return lambda index: 0
    rows = Layout(sizes[:-1])       # packed row-major: offset_of numbers the rows
    return lambda index: rows.offset_of(index[:-1])


def _slice_header(prefix: tuple[int, ...], ndim: int) -> str:
    letters = CANONICAL.get(ndim)
    if letters is None:
        return "[" + ", ".join([*map(str, prefix), ":", ":"]) + "]"
    return ", ".join(f"{letters[axis].lower()}={i}" for axis, i in enumerate(prefix))


# ---- the logical tensor ----------------------------------------------------------------------


def _logical(sizes: tuple[int, ...],
             element: Callable[[tuple[int, ...], str], _Element]) -> tuple[tuple[_Slice, ...], str]:
    """The slices of the logical tensor of ``sizes``, or a note saying why none is drawn.

    ``element(index, name)`` describes one element; names follow row-major index order.
    """
    size = math.prod(sizes)
    if size == 0:
        return (), "empty: a size is 0, no element is stored"
    if size > MAX_GRID_ELEMENTS:
        return (), f"{size} elements: the logical tensor is drawn for at most {MAX_GRID_ELEMENTS}"
    if len(sizes) >= 2 and sizes[-1] > _MAX_COLS:
        return (), f"rows of {sizes[-1]} elements: the logical tensor is drawn up to {_MAX_COLS}"
    elements = [element(index, element_name(k))
                for k, index in enumerate(row_major_indices(sizes))]
    if len(sizes) <= 1:             # a vector (or a scalar): one slice, wrapped like text
        rows = tuple(tuple(elements[i:i + _PER_ROW]) for i in range(0, len(elements), _PER_ROW))
        return (_Slice("", rows),), ""
    rows_per_slice, cols = sizes[-2], sizes[-1]
    per_slice = rows_per_slice * cols
    slices = []
    for s, prefix in enumerate(row_major_indices(sizes[:-2])):
        chunk = elements[s * per_slice:(s + 1) * per_slice]
        rows = tuple(tuple(chunk[r * cols:(r + 1) * cols]) for r in range(rows_per_slice))
        slices.append(_Slice(_slice_header(prefix, len(sizes)) if prefix else "", rows))
    return tuple(slices), ""


# ---- a strided layout ------------------------------------------------------------------------


def _layout_cells(layout: Layout, window: MapWindow,
                  group: Callable[[tuple[int, ...]], int]) -> tuple[_Cell, ...]:
    found_names = element_names(layout, window)
    cells = []
    for offset in range(window.first, window.last + 1):
        indices = window.found.get(offset, [])
        names = tuple(found_names.get(offset, ()))
        if names:
            listed = [f"{name} {index}" for name, index in zip(names, indices)]
            tooltip = f"offset {offset}: {_listing(listed)}"
        else:
            tooltip = f"offset {offset}: padding, no element is stored here"
        cells.append(_Cell(offset, names, _distinct(map(group, indices)), tooltip))
    return tuple(cells)


def _layout_title(layout: Layout) -> str:
    return f"sizes {layout.sizes}, strides {layout.strides}"


def _labels(layout: Layout) -> str:
    """``label NHWC``, or all that fit: size-1 and stride-0 dims can sit anywhere."""
    labels = layout.labels if 2 <= layout.ndim <= 5 else ()
    if len(labels) <= 1:
        return f"label {labels[0] if labels else 'none'}"
    return f"labels {_listing(labels, 4)} (size-1 and stride-0 dims sit anywhere)"


def _layout_subtitle(layout: Layout, titled: bool) -> tuple[str, ...]:
    """The numbers under the title; the sizes and strides unless the title is them."""
    if layout.bits < 8:
        addressable = "" if layout.is_byte_addressable else ", not byte-addressable"
        width = f"{layout.bits}-bit elements (two per byte, low nibble first){addressable}"
    else:
        width = f"itemsize {layout.itemsize}"
    line = f"offset {layout.offset}, {width}, {_labels(layout)}"
    if layout.size:
        lo, hi = layout.span
        line += f"; {layout.size} elements at offsets {lo}..{hi}"
    return (f"{_layout_title(layout)} elements", line) if titled else (line,)


def _legend(cells: Sequence[_Cell], ndim: int, channels: int,
            padding: str = "padding: no element") -> tuple[tuple[str, str], ...]:
    entries: list[tuple[str, str]] = []
    if _has_channels(ndim):
        shown = min(channels, _LEGEND_CHANNELS)
        entries += [(_fill(c), f"c{c}") for c in range(shown)]
        if channels > shown:
            entries.append(("", f"... {channels} channels, colours repeat"))
    elif ndim >= 2:
        entries.append(("", "one colour per row of the logical tensor"))
    if any(cell.kind == "padding" for cell in cells):
        entries.append((f"url(#{_HATCH})", padding))
    if any(cell.kind == "shared" for cell in cells):
        entries.append((_SHARED, "several elements at one offset"))
    return tuple(entries)


def layout_svg(layout: Layout, *, title: str | None = None) -> str:
    """Draw ``layout``: its logical tensor and its memory map, as an SVG document.

    Parameters
    ----------
    layout : Layout
        Any layout: padded, broadcast, overlapping, negative strides, empty.
    title : str, optional
        The heading (default: the sizes and strides).

    Returns
    -------
    str
        A standalone SVG document (UTF-8 XML, with ``width``, ``height`` and ``viewBox``),
        ending with a newline; the same layout always gives the same text.

    A layout of 4-bit elements (``bits=4``) is drawn one cell per byte, split in two halves:
    the element in the byte's low nibble (bits 0-3) on the left, the one in its high nibble
    (bits 4-7) on the right; the byte's number is written under the cell, and each half
    carries ``data-offset`` (its element offset), ``data-byte`` and ``data-nibble``
    (``low``/``high``).

    Examples
    --------
    >>> from strided import Layout
    >>> svg = layout_svg(Layout.packed((1, 3, 2, 2), "NHWC"))
    >>> svg.count('class="cell element"'), svg.count('class="cell padding"')
    (12, 0)
    >>> import re
    >>> int4 = layout_svg(Layout((2, 3), (4, 1), bits=4))      # 4 bytes, low nibble first
    >>> re.findall(r'data-byte="([0-9]+)" data-nibble="([a-z]+)"', int4)[:3]
    [('0', 'low'), ('0', 'high'), ('1', 'low')]
    >>> " ".join(re.findall(r'class="value"[^>]*>([^<]+)<', int4))
    'A B C x D E F x'

    >>> broadcast = layout_svg(Layout((1, 3, 2, 2), (4, 0, 2, 1)))    # C broadcast
    >>> broadcast.count('class="cell shared"'), '>A/E/I</text>' in broadcast
    (4, True)
    """
    group = _group_key(layout.sizes)
    channels = layout.sizes[1] if _has_channels(layout.ndim) else 0

    def element(index: tuple[int, ...], name: str) -> _Element:
        return _Element(name, index, group(index),
                        f"{name} {index}: offset {layout.offset_of(index)}")

    slices, grid_note = _logical(layout.sizes, element)
    nibbles = layout.bits < 8
    window = map_window(layout, MAX_CELLS)
    cells = () if window is None else _layout_cells(layout, window, group)
    notes: list[str] = []
    if window is not None:
        notes = window.notes({cell.offset: list(cell.names) for cell in cells if cell.names})
    legend = _legend(cells, layout.ndim, channels)
    if nibbles:
        legend += (("", "each byte: low nibble (bits 0-3) left, high nibble (bits 4-7) "
                        "right: low nibble first"),)
    figure = _Figure(
        title=title or _layout_title(layout),
        subtitle=_layout_subtitle(layout, titled=bool(title)),
        slices=slices, grid_note=grid_note, cells=cells,
        more_cells=window is not None and window.last < window.end, block=2 if nibbles else 0,
        legend=legend, notes=tuple(notes), nibbles=nibbles,
    )
    return _render(figure)


# ---- a blocked format ------------------------------------------------------------------------


def _physical_letters(fmt: BlockedFormat) -> str:
    x = fmt.block
    return f"(C/{x}, H, W, N, {x})" if fmt.chwn else f"(N, C/{x}, H, W, {x})"


def _blocked_cells(view: Layout, window: MapWindow, logical: Layout, x: int,
                   chwn: bool) -> tuple[_Cell, ...]:
    """Cells of a blocked buffer, from the strided view ``(N, C/x, x, H, W)`` of the buffer
    whose channels include the padding ones: view index ``[n, c // x, c % x, h, w]`` is channel
    ``c`` (the format's definition); a channel past the logical C is padding."""
    channels = logical.sizes[1]
    cells = []
    for offset in range(window.first, window.last + 1):
        found = window.found.get(offset, [])
        if not found:       # DirectML's rounding of the buffer size, past the last block
            cells.append(_Cell(offset, (), (), f"offset {offset}: padding, no element"))
            continue
        n, block, lane, h, w = found[0]     # a packed buffer: one view element per offset
        c = block * x + lane
        caption = "" if lane else _block_caption(chwn, (n, block, h, w), x)
        if c >= channels:
            tooltip = (f"offset {offset}: padding channel {c} of pixel n={n}, h={h}, w={w} "
                       f"(holds 0)")
            cells.append(_Cell(offset, (), (), tooltip, c, caption))
            continue
        index = (n, c, h, w)
        name = element_name(logical.offset_of(index))
        cells.append(_Cell(offset, (name,), (c,), f"offset {offset}: {name} {index}", c,
                           caption))
    return tuple(cells)


def _block_caption(chwn: bool, where: tuple[int, int, int, int], x: int) -> str:
    """``n0 c4-7 h0 w1``: the pixel and the channels of a block, in physical order."""
    n, block, h, w = where
    lanes = f"c{block * x}" if x == 1 else f"c{block * x}-{block * x + x - 1}"
    return f"{lanes} h{h} w{w} n{n}" if chwn else f"n{n} {lanes} h{h} w{w}"


def _blocked_subtitle(fmt: BlockedFormat, sizes: tuple[int, ...], physical: Layout,
                      padded_channels: int) -> tuple[str, ...]:
    lines = [f"physical packed {_physical_letters(fmt)} = {physical.sizes}, strides "
             f"{physical.strides} elements, itemsize {physical.itemsize}"]
    channels = sizes[1]
    if padded_channels > channels:
        which = (f"channel {channels} is" if padded_channels == channels + 1
                 else f"channels {channels}..{padded_channels - 1} are")
        lines.append(f"{which} padding (zeros): C = {channels} rounded up to a multiple of "
                     f"{fmt.block}")
    return tuple(lines)


def blocked_svg(sizes: Sequence[int], fmt: str | BlockedFormat, *, itemsize: int = 1,
                title: str | None = None) -> str:
    """Draw a blocked channel format: the logical NCHW tensor and its blocked buffer.

    The buffer is :meth:`strided.Layout.blocked`'s packed physical array, e.g.
    ``(N, ceil(C/4), H, W, 4)`` for ``NCHW4``: each run of ``x`` cells (between thick bars) is
    one pixel's block of channels, padding channels hatched.

    Parameters
    ----------
    sizes : sequence of int
        The logical sizes ``(N, C, H, W)``.
    fmt : str or BlockedFormat
        ``"NCHW4"``, ``"NCHW32"``, ``"CHWN4"``, ``"nChw16c"``, ... (see
        :func:`strided.formats.parse_blocked`).
    itemsize : int, optional
        Bytes per element (shown, and used for the DirectML buffer size).
    title : str, optional
        The heading (default: the format and the sizes).

    Returns
    -------
    str
        A standalone SVG document, as :func:`layout_svg` returns.

    Raises
    ------
    ValueError, TypeError, OverflowError
        Sizes that are not ``(N, C, H, W)``, an unknown format, or a buffer beyond int64.

    Examples
    --------
    >>> svg = blocked_svg((2, 3, 1, 1), "CHWN4")       # n=0 lanes, then n=1 lanes
    >>> import re
    >>> re.findall(r'data-elements="(\\w+)"', svg)
    ['A', 'B', 'C', 'D', 'E', 'F']
    >>> re.findall(r'data-channel="(\\d+)"', svg)
    ['0', '1', '2', '3', '0', '1', '2', '3']
    """
    spec = parse_blocked(fmt)
    physical = Layout.blocked(sizes, spec, itemsize=itemsize)
    logical = Layout(sizes)         # validated (N, C, H, W) by Layout.blocked
    n, c, h, w = logical.sizes
    blocks = physical.sizes[0] if spec.chwn else physical.sizes[1]    # C rounded up, in blocks
    padded = blocks * spec.block
    # the padding channels as logical channels of a wider tensor: its 5-D view covers the
    # whole buffer, one offset per element
    view = Layout.blocked_view((n, padded, h, w), spec, itemsize=itemsize)

    def element(index: tuple[int, ...], name: str) -> _Element:
        return _Element(name, index, index[1], f"{name} {index}")

    slices, grid_note = _logical(logical.sizes, element)
    window = map_window(view, MAX_CELLS)
    cells = () if window is None else _blocked_cells(view, window, logical, spec.block,
                                                      spec.chwn)
    notes = [] if window is None else window.notes({})
    figure = _Figure(
        title=title or f"{spec.name}, logical sizes (N, C, H, W) = {logical.sizes}",
        subtitle=_blocked_subtitle(spec, logical.sizes, physical, padded),
        slices=slices, grid_note=grid_note, cells=cells,
        more_cells=window is not None and window.last < window.end, block=spec.block,
        legend=_legend(cells, 4, c, "padding channel (0)"), notes=tuple(notes),
    )
    return _render(figure)


# ---- rendering -------------------------------------------------------------------------------


def _attrs(**attrs: object) -> str:
    """XML attributes in the order given; ``data_offset`` is written ``data-offset``."""
    return "".join(f" {name.rstrip('_').replace('_', '-')}={quoteattr(str(value))}"
                   for name, value in attrs.items() if value is not None)


def _text(x: int, y: int, text: str, *, size: int = _FONT, **attrs: object) -> str:
    return f"<text{_attrs(x=x, y=y, font_size=size, **attrs)}>{escape(text)}</text>"


def _rect(x: int, y: int, width: int, height: int, **attrs: object) -> str:
    return f"<rect{_attrs(x=x, y=y, width=width, height=height, **attrs)}/>"


def _cell_width(texts: Iterable[str], small: Iterable[str] = ()) -> int:
    widest = max([_text_width(t) for t in texts] + [_text_width(t, _SMALL) for t in small]
                 + [0])
    return max(_CELL_H, widest + 12)


def _per_row(count: int, width: int, block: int) -> int:
    """Cells per buffer row: all of them when few; else rows of equal length when some
    length from 16 down to 8 divides the count (24 cells: two rows of 12), a multiple of a
    blocked format's block; never wider than the figure."""
    most = max(1, min(_PER_ROW, (_MAX_WIDTH - 2 * _MARGIN) // width))
    if count <= min(_ONE_ROW, most):
        return count
    if 1 < block <= most:
        most -= most % block
        return next((n for n in range(most, most // 2 - 1, -block) if count % n == 0), most)
    return next((n for n in range(most, most // 2 - 1, -1) if count % n == 0), most)


class _Canvas:
    """SVG elements in drawing order, and the bottom of what is drawn so far."""

    def __init__(self, width: int) -> None:
        self.width = width
        self.y = _MARGIN
        self.parts: list[str] = []

    def add(self, part: str) -> None:
        self.parts.append(part)

    def lines(self, text: str, *, size: int = _FONT, **attrs: object) -> None:
        """``text`` wrapped to the figure's width, one ``<text>`` per line."""
        chars = max(20, int((self.width - 2 * _MARGIN) / (size * _CHAR)))
        for line in textwrap.wrap(text, chars, break_on_hyphens=False) or [""]:
            self.y += _LINE if size <= _FONT else _LINE + 4
            self.add(_text(_MARGIN, self.y - 4, line, size=size, **attrs))

    def document(self, title: str) -> str:
        height = self.y + _MARGIN
        head = (f'<?xml version="1.0" encoding="UTF-8"?>\n'
                f'<svg xmlns="http://www.w3.org/2000/svg"'
                f'{_attrs(width=self.width, height=height, viewBox=f"0 0 {self.width} {height}")}'
                f'{_attrs(font_family=_FONTS, font_size=_FONT, fill=_INK)}>')
        defs = (f'<defs><pattern id="{_HATCH}" width="6" height="6" '
                f'patternUnits="userSpaceOnUse" patternTransform="rotate(45)">'
                f'<rect width="6" height="6" fill="#ececec"/>'
                f'<line x1="0" y1="0" x2="0" y2="6" stroke="#b0b0b0" stroke-width="2"/>'
                f'</pattern></defs>')
        background = _rect(0, 0, self.width, height, fill="#ffffff")
        body = [head, f"<title>{escape(title)}</title>", defs, background, *self.parts, "</svg>"]
        return "\n".join(body) + "\n"


def _element_width(slices: Sequence[_Slice]) -> int:
    return _cell_width(e.name for piece in slices for row in piece.rows for e in row)


def _slice_size(piece: _Slice, width: int) -> tuple[int, int]:
    cols = max(len(row) for row in piece.rows)
    header = _LINE if piece.header else 0
    return (max(cols * width, _text_width(piece.header, _SMALL)),
            header + len(piece.rows) * _CELL_H)


def _draw_element(canvas: _Canvas, x: int, y: int, width: int, element: _Element) -> None:
    attrs = _attrs(class_="element", data_name=element.name,
                   data_index=",".join(map(str, element.index)))
    canvas.add(f"<g{attrs}><title>{escape(element.tooltip)}</title>"
               + _rect(x, y, width, _CELL_H, fill=_fill(element.group), stroke="#444444")
               + _text(x + width // 2, y + _CELL_H // 2 + 4, element.name, text_anchor="middle")
               + "</g>")


def _draw_slices(canvas: _Canvas, slices: Sequence[_Slice], limit: int) -> None:
    """The slices left to right, wrapped at ``limit`` pixels."""
    width = _element_width(slices)
    x, row_height = _MARGIN, 0
    for piece in slices:
        w, h = _slice_size(piece, width)
        if x > _MARGIN and x + w > _MARGIN + limit:
            canvas.y += row_height + _GAP // 2
            x, row_height = _MARGIN, 0
        top = canvas.y
        if piece.header:
            canvas.add(_text(x, top + _LINE - 5, piece.header, size=_SMALL, fill=_MUTED))
            top += _LINE
        for r, row in enumerate(piece.rows):
            for col, element in enumerate(row):
                _draw_element(canvas, x + col * width, top + r * _CELL_H, width, element)
        x += w + _GAP
        row_height = max(row_height, h)
    canvas.y += row_height


def _draw_cell_fill(canvas: _Canvas, x: int, y: int, width: int, cell: _Cell) -> None:
    """The background: hatched for padding, one stripe per colour for a shared cell."""
    if cell.kind == "padding":
        canvas.add(_rect(x, y, width, _CELL_H, fill=f"url(#{_HATCH})"))
        return
    groups = cell.groups[:4]
    for k, group in enumerate(groups):
        left = x + k * width // len(groups)
        right = x + (k + 1) * width // len(groups)
        canvas.add(_rect(left, y, right - left, _CELL_H, fill=_fill(group)))


def _draw_cell(canvas: _Canvas, x: int, y: int, width: int, cell: _Cell,
               nibbles: bool = False) -> None:
    padding = cell.kind == "padding"
    byte = nibble = None
    if nibbles:     # a half of a byte cell; its byte's number goes under the pair
        byte, nibble = cell.offset // 2, "high" if cell.offset % 2 else "low"
    attrs = _attrs(class_=f"cell {cell.kind}", data_offset=cell.offset,
                   data_elements=" ".join(cell.names) or None, data_channel=cell.channel,
                   data_byte=byte, data_nibble=nibble)
    canvas.add(f"<g{attrs}><title>{escape(cell.tooltip)}</title>")
    _draw_cell_fill(canvas, x, y, width, cell)
    stroke_width = 2 if cell.kind == "shared" else 1
    canvas.add(_rect(x, y, width, _CELL_H, fill="none", stroke="#444444",
                     stroke_width=stroke_width))
    if cell.kind == "shared":       # a black corner: visible without colour
        corner = f"{x + width - 9},{y} {x + width},{y} {x + width},{y + 9}"
        canvas.add(f'<polygon points="{corner}" fill="{_INK}"/>')
    label = cell_text(list(cell.names))
    canvas.add(_text(x + width // 2, y + _CELL_H // 2 + 4, label, text_anchor="middle",
                     class_="value", fill=_PAD_INK if padding else None))
    if nibbles and cell.offset % 2 == 0:
        canvas.add(_text(x + width, y + _CELL_H + 12, str(byte), size=_SMALL,
                         text_anchor="middle", class_="byte", fill=_MUTED))
    elif not nibbles:
        canvas.add(_text(x + width // 2, y + _CELL_H + 12, str(cell.offset), size=_SMALL,
                         text_anchor="middle", class_="offset", fill=_MUTED))
    canvas.add("</g>")


def _captions_fit(figure: _Figure, width: int, per_row: int) -> bool:
    """Whether every block caption fits above its cells (else none is drawn)."""
    room = min(figure.block, per_row) * width - 4
    return any(cell.caption for cell in figure.cells) and all(
        _text_width(cell.caption, _SMALL) <= room for cell in figure.cells)


def _draw_buffer(canvas: _Canvas, figure: _Figure, width: int, per_row: int) -> None:
    cells = figure.cells
    captions = _captions_fit(figure, width, per_row)
    for start in range(0, len(cells), per_row):
        if captions:
            canvas.y += _LINE - 2
        y = canvas.y
        row = cells[start:start + per_row]
        for i, cell in enumerate(row):
            if captions and cell.caption:
                canvas.add(_text(_MARGIN + i * width + 2, y - 4, cell.caption, size=_SMALL,
                                 class_="block", fill=_MUTED))
        for i, cell in enumerate(row):
            _draw_cell(canvas, _MARGIN + i * width, y, width, cell, figure.nibbles)
        if figure.block > 1:        # a thick bar where a block of channel lanes starts
            for i, cell in enumerate(row):
                if i and (cell.offset - cells[0].offset) % figure.block == 0:
                    x = _MARGIN + i * width
                    canvas.add(f'<line x1="{x}" y1="{y - 4}" x2="{x}" y2="{y + _CELL_H + 4}" '
                               f'stroke="{_INK}" stroke-width="3"/>')
        if figure.more_cells and start + per_row >= len(cells):
            canvas.add(_text(_MARGIN + len(row) * width + 6, y + _CELL_H // 2 + 4, "...",
                             fill=_MUTED))
        canvas.y += _CELL_H + _ROW_GAP


def _draw_legend(canvas: _Canvas, entries: Sequence[tuple[str, str]]) -> None:
    x, y = _MARGIN, canvas.y
    for fill, text in entries:
        w = (18 if fill else 0) + _text_width(text, _SMALL) + _GAP
        if x > _MARGIN and x + w > canvas.width - _MARGIN:
            x, y = _MARGIN, y + _LINE + 4
        if fill:
            canvas.add(_rect(x, y, 14, 14, fill=fill, stroke="#444444"))
            if fill == _SHARED:     # the black corner, as on the shared cells
                canvas.add(f'<polygon points="{x + 7},{y} {x + 14},{y} {x + 14},{y + 7}" '
                           f'fill="{_INK}"/>')
            x += 18
        canvas.add(_text(x, y + 11, text, size=_SMALL))
        x += _text_width(text, _SMALL) + _GAP
    canvas.y = y + _LINE + 2


def _figure_width(figure: _Figure, cell_width: int, per_row: int) -> int:
    """Wide enough for a buffer row and for the widest slice; the slices then wrap."""
    buffer = min(len(figure.cells), per_row) * cell_width + (30 if figure.more_cells else 0)
    element_width = _element_width(figure.slices)
    slices = [_slice_size(piece, element_width)[0] for piece in figure.slices]
    flowed = sum(slices) + _GAP * max(0, len(slices) - 1)
    content = max(buffer, min(flowed, _MAX_WIDTH - 2 * _MARGIN))
    return max(_MIN_WIDTH, min(_MAX_WIDTH, content + 2 * _MARGIN), max(slices, default=0)
               + 2 * _MARGIN)


def _render(figure: _Figure) -> str:
    """Lay out and write the SVG document of ``figure``."""
    cell_width = _cell_width([cell_text(list(c.names)) for c in figure.cells],
                             [str(c.offset) for c in figure.cells])
    per_row = _per_row(len(figure.cells), cell_width, figure.block)
    canvas = _Canvas(_figure_width(figure, cell_width, per_row))
    canvas.lines(figure.title, size=_FONT + 2, font_weight="bold")
    for line in figure.subtitle:
        canvas.lines(line, fill=_MUTED)
    canvas.y += _GAP // 2
    canvas.lines("logical tensor (elements named in row-major index order)", font_weight="bold")
    if figure.slices:
        canvas.y += 4
        _draw_slices(canvas, figure.slices, canvas.width - 2 * _MARGIN)
    else:
        canvas.lines(f"({figure.grid_note})", fill=_MUTED)
    canvas.y += _GAP
    if figure.cells:
        canvas.lines("buffer (bytes, numbered underneath; each holds two 4-bit elements, low "
                     "nibble first: bits 0-3 left, bits 4-7 right)" if figure.nibbles else
                     "buffer (the offset of each cell underneath)", font_weight="bold")
        canvas.y += 4
        _draw_buffer(canvas, figure, cell_width, per_row)
        _draw_legend(canvas, figure.legend)
    else:
        canvas.lines("buffer: none, no element is stored", fill=_MUTED)
    for note in figure.notes:
        canvas.lines(note, size=_SMALL + 1, fill=_MUTED)
    return canvas.document(figure.title)
