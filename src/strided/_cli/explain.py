"""Human-readable explanations of layouts: properties, the logical tensor and the memory map.

This is the rendering behind ``python -m strided explain``. The memory map is drawn the way the
DirectML documentation draws it: an ``offset`` row and a ``value`` row, one column per element
offset, the logical elements named ``A, B, C, ...`` in row-major index order, ``x`` for an offset
no element reaches, and ``A/D`` where several elements share an offset (broadcast, overlap).

A layout of 4-bit elements (``Layout(..., bits=4)``) is drawn one column per *byte*, each
showing the element in its low nibble, then ``|``, then the one in its high nibble (low nibble
first: element ``2k`` is in bits 0-3 of byte ``k``, element ``2k + 1`` in bits 4-7).

Every number shown comes from the public :class:`~strided.Layout` API (``offset_of``, ``span``,
``buffer_size``, the predicates); nothing here recomputes stride arithmetic of its own.

Examples
--------
>>> from strided import Layout
>>> print(memory_map(Layout((2, 3), (5, 1))))
offset  0 1 2 3 4 5 6 7 8 9
value   A B C x x D E F x x
offsets 8..9: trailing padding (stride 5 x size 2 = 10 offsets); the DirectML buffer ends at 7.
>>> print(memory_map(Layout((2, 3), (4, 1), bits=4)))
byte      0   1   2   3
lo|hi   A|B C|x D|E F|x
each byte: the element in its low nibble (bits 0-3) | the one in its high nibble (bits 4-7), low
  nibble first.
"""

from __future__ import annotations

import string
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass

from strided._core import TooHardError
from strided.layout import Layout

__all__ = [
    "MapWindow",
    "cell_text",
    "documentation_examples",
    "element_list",
    "element_name",
    "element_names",
    "explain",
    "logical_grid",
    "map_window",
    "memory_map",
    "properties",
    "row_major_indices",
    "walkthrough",
]

#: The memory map shows at most this many offsets.
MAX_OFFSETS = 64
#: The logical grid and the element list are drawn for at most this many elements.
MAX_GRID_ELEMENTS = 256
MAX_LISTED_ELEMENTS = 32
#: At most this many elements are placed on the map (a huge broadcast repeats offsets forever).
MAX_MAP_ELEMENTS = 4096
#: Lines are wrapped to this width.
LINE_WIDTH = 100

_GAP = "x"
#: The note under the map of a layout of 4-bit elements.
NIBBLE_NOTE = ("each byte: the element in its low nibble (bits 0-3) | the one in its high nibble "
               "(bits 4-7), low nibble first.")


def element_name(k: int) -> str:
    """Name of the ``k``-th logical element: ``A`` ... ``Z``, then ``AA``, ``AB``, ...

    Parameters
    ----------
    k : int
        Row-major position of the element (``>= 0``).

    Examples
    --------
    >>> [element_name(k) for k in (0, 1, 25, 26, 27, 701, 702)]
    ['A', 'B', 'Z', 'AA', 'AB', 'ZZ', 'AAA']
    """
    letters = ""
    k += 1
    while k > 0:
        k, r = divmod(k - 1, 26)
        letters = string.ascii_uppercase[r] + letters
    return letters


def _row_major(layout: Layout) -> Layout:
    """The packed row-major layout of the same sizes: its offsets are element positions."""
    return Layout(layout.sizes)


def _name_of(index: tuple[int, ...], positions: Layout) -> str:
    return element_name(positions.offset_of(index))


def _tuple(values: tuple[int, ...]) -> str:
    return str(tuple(values))


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _yes_no(flag: bool | None) -> str:
    return "undecided (too many steps to settle exactly)" if flag is None else (
        "yes" if flag else "no")


def _overlaps_or_none(layout: Layout) -> bool | None:
    """layout.overlaps, or None past its work budget (explain shows a layout, never fails)."""
    try:
        return layout.overlaps
    except TooHardError:
        return None


# ---- the property table ---------------------------------------------------------------------


def _label_line(layout: Layout) -> str:
    if not 2 <= layout.ndim <= 5:
        return "none (named layouts exist for ranks 2 to 5)"
    labels = layout.labels
    if not labels:
        return "none (the strides are not the packed strides of a named layout)"
    if len(labels) == 1:
        return labels[0]
    return (f"{labels[0]} ({len(labels)} labels fit, as size-1 and stride-0 dims can sit "
            f"anywhere: {', '.join(labels)})")


def _is_sub_byte(layout: Layout) -> bool:
    return layout.bits < 8


def _element_line(layout: Layout) -> str:
    return (f"{layout.bits} bits, two per byte, low nibble first: element 2k in bits 0-3 of "
            f"byte k, element 2k+1 in bits 4-7")


def _byte_addressable_line(layout: Layout) -> str:
    error = layout.byte_addressable_error()
    return "yes" if error is None else f"no: {error}"


def _buffer_line(layout: Layout) -> str:
    try:
        aligned, exact = layout.buffer_size(align=4), layout.buffer_size(align=1)
    except OverflowError as exc:
        return f"undefined: {exc}"
    return f"{_plural(aligned, 'byte')} (DirectML, rounded up to 4); exact {_plural(exact, 'byte')}"


def _nbytes_line(layout: Layout) -> str:
    try:
        return str(layout.nbytes)
    except (ValueError, OverflowError) as exc:
        return f"undefined: {exc}"


def _span_line(layout: Layout) -> str:
    if layout.size == 0:
        return "empty: no element is stored"
    lo, hi = layout.span
    return f"offsets {lo}..{hi} ({_plural(hi - lo + 1, 'offset')})"


def _flags_line(layout: Layout) -> str:
    flags = {
        "packed": layout.is_packed,
        "contiguous": layout.is_contiguous,
        "broadcast": layout.is_broadcast,
        "padded": layout.is_padded,
        "overlaps": _overlaps_or_none(layout),
    }
    return ", ".join(f"{name}: {_yes_no(value)}" for name, value in flags.items())


def properties(layout: Layout) -> list[tuple[str, str]]:
    """The ``(name, value)`` rows of the property table of ``layout``.

    Examples
    --------
    >>> dict(properties(Layout((1, 3, 1, 5), (15, 1, 15, 3), itemsize=2)))["buffer size"]
    '32 bytes (DirectML, rounded up to 4); exact 30 bytes'
    >>> rows = dict(properties(Layout((2, 3), (3, 1), bits=4)))
    >>> rows["buffer size"], rows["byte-addressable"][:30]
    ('4 bytes (DirectML, rounded up to 4); exact 3 bytes', 'no: stride 3 of dim 0 is odd: ')
    """
    if _is_sub_byte(layout):
        widths = [("element", _element_line(layout)),
                  ("byte-addressable", _byte_addressable_line(layout))]
    else:
        widths = [("byte strides", f"{_tuple(layout.byte_strides)} (itemsize {layout.itemsize})")]
    return [
        ("sizes", _tuple(layout.sizes)),
        ("strides", f"{_tuple(layout.strides)} elements"),
        *widths,
        ("offset", str(layout.offset)),
        ("label", _label_line(layout)),
        ("order", f"{_tuple(layout.order)} (physical order, outermost first)"),
        ("size", _plural(layout.size, "element")),
        ("span", _span_line(layout)),
        ("buffer size", _buffer_line(layout)),
        ("nbytes", _nbytes_line(layout)),
        ("flags", _flags_line(layout)),
    ]


# ---- the logical tensor ---------------------------------------------------------------------


def _slice_header(prefix: tuple[int, ...]) -> str:
    return "[" + ", ".join([*map(str, prefix), ":", ":"]) + "]"


def _grid_rows(sizes: tuple[int, ...], prefix: tuple[int, ...], positions: Layout,
               width: int) -> list[str]:
    rows, cols = sizes[-2], sizes[-1]
    return [
        " ".join(_name_of((*prefix, r, c), positions).rjust(width) for c in range(cols))
        for r in range(rows)
    ]


def row_major_indices(sizes: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
    """Every index of ``sizes``, in row-major order: the ``k``-th is element ``k``'s.

    Examples
    --------
    >>> list(row_major_indices((2, 2)))
    [(0, 0), (0, 1), (1, 0), (1, 1)]
    """
    if not sizes:
        yield ()
        return
    for head in range(sizes[0]):
        for tail in row_major_indices(sizes[1:]):
            yield (head, *tail)


def logical_grid(layout: Layout) -> str:
    """The logical tensor as a grid of element names; 2-D slices for rank > 2.

    Examples
    --------
    >>> print(logical_grid(Layout((2, 2, 3))))
    [0, :, :]
    A B C
    D E F
    [1, :, :]
    G H I
    J K L
    """
    if layout.size == 0:
        return "(empty: a size is 0)"
    if layout.size > MAX_GRID_ELEMENTS:
        return f"({layout.size} elements: the grid is drawn for at most {MAX_GRID_ELEMENTS})"
    positions = _row_major(layout)
    width = len(element_name(layout.size - 1))
    if layout.ndim == 0:
        return element_name(0)
    if layout.ndim == 1:
        return " ".join(element_name(k).rjust(width) for k in range(layout.size))
    lines: list[str] = []
    for prefix in row_major_indices(layout.sizes[:-2]):
        if layout.ndim > 2:
            lines.append(_slice_header(prefix))
        lines.extend(_grid_rows(layout.sizes, prefix, positions, width))
    return "\n".join(lines)


def element_list(layout: Layout) -> str:
    """Each element's name, index and offset, for small layouts.

    For 4-bit elements each offset is followed by its byte and nibble.

    Examples
    --------
    >>> print(element_list(Layout((2, 2), (0, 1))))
    A (0, 0) -> 0   B (0, 1) -> 1   C (1, 0) -> 0   D (1, 1) -> 1
    >>> print(element_list(Layout((3,), offset=1, bits=4)))
    A (0,) -> 1 (byte 0 hi)   B (1,) -> 2 (byte 1 lo)   C (2,) -> 3 (byte 1 hi)
    """
    if layout.size == 0 or layout.size > MAX_LISTED_ELEMENTS:
        return ""
    positions = _row_major(layout)
    where = _nibble_of if _is_sub_byte(layout) else str
    entries = [
        f"{_name_of(index, positions)} {_tuple(index)} -> {where(layout.offset_of(index))}"
        for index in row_major_indices(layout.sizes)
    ]
    width = max(map(len, entries))
    per_line = max(1, (LINE_WIDTH + 3) // (width + 3))
    lines = [
        "   ".join(entry.ljust(width) for entry in entries[i:i + per_line]).rstrip()
        for i in range(0, len(entries), per_line)
    ]
    return "\n".join(lines)


# ---- the memory map -------------------------------------------------------------------------


def _nibble_of(offset: int) -> str:
    return f"{offset} (byte {offset // 2} {'hi' if offset % 2 else 'lo'})"


def _intersects(layout: Layout, lo: int, hi: int) -> bool:
    low, high = layout.span
    return layout.size > 0 and low <= hi and high >= lo


def _axis_range(layout: Layout, lo: int, hi: int) -> range:
    """Indices along axis 0 whose sub-layout can reach an offset in ``[lo, hi]``.

    The sub-layout at index ``i`` is the one at index 0 shifted by ``i * stride``; its span
    tells which shifts land in the window.
    """
    n, step = layout.sizes[0], layout.strides[0]
    if step == 0:
        return range(n)
    first_lo, first_hi = layout[0].span
    t = abs(step)
    if step > 0:
        start, stop = -((first_hi - lo) // t), (hi - first_lo) // t
    else:
        start, stop = -((hi - first_lo) // t), (first_hi - lo) // t
    return range(max(0, start), min(n - 1, stop) + 1)


def _elements_in(layout: Layout, lo: int, hi: int,
                 prefix: tuple[int, ...] = ()) -> Iterator[tuple[tuple[int, ...], int]]:
    """``(index, offset)`` of every element whose offset is in ``[lo, hi]``, row-major."""
    if layout.ndim == 0:
        if lo <= layout.offset <= hi:
            yield prefix, layout.offset
        return
    for i in _axis_range(layout, lo, hi):
        sub = layout[i]
        if _intersects(sub, lo, hi):
            yield from _elements_in(sub, lo, hi, (*prefix, i))


def _map_end(layout: Layout) -> tuple[int, str]:
    """Last offset drawn, and a note on the offsets drawn after the last element.

    The map ends at the end of the DirectML buffer, or at the end of the outermost stride's
    extent (``abs(stride) * size``) when that is later: a padded image keeps the padding of
    its last row, as the DirectML documentation draws it.

    For 4-bit elements the offsets are still element offsets, but the map ends with a whole
    byte (an odd offset) and the note counts bytes.
    """
    lo, hi = layout.span
    extents = [(abs(s) * n, abs(s), n) for n, s in zip(layout.sizes, layout.strides, strict=True)
               if n > 1]
    extent, step, count = max(extents, default=(0, 0, 0))
    try:
        buffer_bytes = layout.buffer_size(align=4)
    except OverflowError:
        buffer_bytes = 0
    if _is_sub_byte(layout):
        return _sub_byte_map_end(layout, extent, step, count, buffer_bytes)
    buffer_end = lo + buffer_bytes // layout.itemsize - 1
    end = max(hi, lo + extent - 1, buffer_end)
    if end == hi:
        return end, ""
    where = f"offset {end}" if end == hi + 1 else f"offsets {hi + 1}..{end}"
    exact = layout.buffer_size(align=1)
    if lo + extent - 1 == end:
        return end, (f"{where}: trailing padding (stride {step} x size {count} = "
                     f"{extent} offsets); the DirectML buffer ends at {buffer_end}.")
    return end, (f"{where}: DirectML buffer padding ({exact} bytes rounded up to "
                 f"{buffer_bytes}, a multiple of 4).")


def _sub_byte_map_end(layout: Layout, extent: int, step: int, count: int,
                      buffer_bytes: int) -> tuple[int, str]:
    """`_map_end` of a layout of 4-bit elements, in whole bytes (element ``e`` in byte
    ``e // 2``)."""
    lo, hi = layout.span
    first_byte, data_byte = lo // 2, hi // 2
    buffer_byte = first_byte + buffer_bytes - 1 if buffer_bytes else data_byte
    last_byte = max(data_byte, (lo + extent - 1) // 2, buffer_byte)
    end = 2 * last_byte + 1
    if last_byte == data_byte:
        return end, ""
    where = (f"byte {last_byte}" if last_byte == data_byte + 1
             else f"bytes {data_byte + 1}..{last_byte}")
    exact = layout.buffer_size(align=1)
    if (lo + extent - 1) // 2 == last_byte:
        return end, (f"{where}: trailing padding (stride {step} x size {count} = {extent} "
                     f"elements); the DirectML buffer ends at byte {buffer_byte}.")
    return end, (f"{where}: DirectML buffer padding ({exact} bytes rounded up to "
                 f"{buffer_bytes}, a multiple of 4).")


def cell_text(names: list[str]) -> str:
    """What a map cell shows: ``x`` for no element, ``A/D`` for a few, ``A/D+3`` for many.

    Examples
    --------
    >>> cell_text([]), cell_text(["A"]), cell_text(["A", "D", "G"]), cell_text(list("ADGJ"))
    ('x', 'A', 'A/D/G', 'A/D+2')
    """
    if not names:
        return _GAP
    if len(names) <= 3:
        return "/".join(names)
    return f"{names[0]}/{names[1]}+{len(names) - 2}"


def _wrap_rows(offsets: list[str], values: list[str],
               heads: tuple[str, str] = ("offset", "value")) -> list[str]:
    width = max(map(len, offsets + values))
    per_line = max(1, (LINE_WIDTH - 8) // (width + 1))
    top, bottom = (head.ljust(8) for head in heads)
    lines: list[str] = []
    for i in range(0, len(offsets), per_line):
        lines.append(top + " ".join(o.rjust(width) for o in offsets[i:i + per_line]))
        lines.append(bottom + " ".join(v.rjust(width) for v in values[i:i + per_line]))
    return lines


def _names(names: list[str], limit: int = 4) -> str:
    if len(names) <= limit:
        return ", ".join(names)
    return ", ".join(names[:limit]) + f" and {len(names) - limit} more"


def _shared_note(cells: dict[int, list[str]]) -> str:
    shared = [(off, names) for off, names in sorted(cells.items()) if len(names) > 1]
    if not shared:
        return ""
    shown = "; ".join(f"{off}: {_names(names)}" for off, names in shared[:8])
    more = f"; ... ({len(shared) - 8} more offsets)" if len(shared) > 8 else ""
    return f"{_plural(len(shared), 'offset')} shown hold several elements: {shown}{more}."


@dataclass(frozen=True)
class MapWindow:
    """The offsets a memory map draws, and the elements found at each.

    Built by :func:`map_window`; the text map (:func:`memory_map`) and the SVG figure
    (:mod:`strided._cli.svg`) both draw from it, so they always agree.

    Attributes
    ----------
    first, last : int
        The lowest and the highest offset drawn (element offsets; for 4-bit elements the
        window covers whole bytes: ``first`` is even and ``last`` odd).
    end : int
        The last offset of the whole map; ``last < end`` when the window is capped.
    found : dict of int to list of tuple of int
        Offset -> indices of the elements stored there, in row-major index order; an offset in
        ``first..last`` that is missing holds no element (padding).
    capped : bool
        Whether the search stopped after :data:`MAX_MAP_ELEMENTS` elements (a huge broadcast);
        the lists in ``found`` may then be incomplete.
    trailing : str
        A remark on the offsets drawn after the last element, or ``""``.
    nibbles : bool
        The layout's elements are 4-bit (two per byte): the map is drawn in bytes.
    """

    first: int
    last: int
    end: int
    found: dict[int, list[tuple[int, ...]]]
    capped: bool
    trailing: str
    nibbles: bool = False

    def notes(self, names: dict[int, list[str]]) -> list[str]:
        """The remarks printed under a map: trailing offsets, shared offsets, truncation.

        Parameters
        ----------
        names : dict of int to list of str
            Offset -> the names of the elements drawn there.
        """
        notes = [self.trailing, _shared_note(names)]
        if self.last < self.end and self.nibbles:
            first, last, end = self.first // 2, self.last // 2, self.end // 2
            notes.append(f"truncated: bytes {first}..{last} of {first}..{end} shown "
                         f"({end - last} more not shown).")
        elif self.last < self.end:
            notes.append(f"truncated: offsets {self.first}..{self.last} of {self.first}.."
                         f"{self.end} shown ({self.end - self.last} more not shown).")
        if self.capped:
            notes.append(f"truncated: only the first {MAX_MAP_ELEMENTS} elements found are "
                         f"placed (the counts of shared offsets are lower bounds).")
        return [note for note in notes if note]


def map_window(layout: Layout, max_offsets: int = MAX_OFFSETS) -> MapWindow | None:
    """The offsets the memory map of ``layout`` draws and the elements at each.

    Columns run from the lowest offset reached to the end of the buffer (the DirectML buffer
    size, or the outermost stride's extent when that is longer), at most ``max_offsets`` of
    them. Every offset comes from :meth:`Layout.offset_of` and :attr:`Layout.span`.

    Parameters
    ----------
    layout : Layout
        Any layout.
    max_offsets : int, optional
        The most offsets drawn (default :data:`MAX_OFFSETS`).

    Returns
    -------
    MapWindow or None
        None for an empty layout (a size is 0): it has no map.

    Examples
    --------
    >>> window = map_window(Layout((2, 2), (0, 1)))
    >>> window.first, window.last, window.found
    (0, 3, {0: [(0, 0), (1, 0)], 1: [(0, 1), (1, 1)]})
    """
    if layout.size == 0:
        return None
    lo, _ = layout.span
    end, trailing = _map_end(layout)
    if _is_sub_byte(layout):    # whole bytes: from the low nibble of the first one
        lo -= lo % 2
        last = min(end, lo + 2 * max(1, max_offsets // 2) - 1)
    else:
        last = min(end, lo + max(1, max_offsets) - 1)
    found: dict[int, list[tuple[int, ...]]] = {}
    placed = 0
    for index, offset in _elements_in(layout, lo, last):
        found.setdefault(offset, []).append(index)
        placed += 1
        if placed >= MAX_MAP_ELEMENTS:
            break
    return MapWindow(lo, last, end, found, placed >= MAX_MAP_ELEMENTS, trailing,
                     _is_sub_byte(layout))


def memory_map(layout: Layout) -> str:
    """The memory map of ``layout``: an offset row and a value row, as DirectML draws it.

    Columns run from the lowest offset reached to the end of the buffer (the DirectML buffer
    size, or the outermost stride's extent when that is longer, as in a padded image whose last
    row keeps its padding), at most :data:`MAX_OFFSETS` of them. ``x`` marks an offset no
    element reaches; ``A/D`` an offset several elements share. A layout of 4-bit elements has
    one column per byte (``byte`` and ``lo|hi`` rows), at most ``MAX_OFFSETS // 2`` of them:
    the element in the byte's low nibble, ``|``, the one in its high nibble.

    Parameters
    ----------
    layout : Layout
        Any layout; an empty one has no map.

    Returns
    -------
    str
        The map, then one line per remark (trailing offsets, shared offsets, truncation).

    Examples
    --------
    >>> print(memory_map(Layout((2, 3), (0, 1), itemsize=4)))    # a broadcast row
    offset    0   1   2
    value   A/D B/E C/F
    3 offsets shown hold several elements: 0: A, D; 1: B, E; 2: C, F.
    >>> print(memory_map(Layout((2, 3), (1, 2), itemsize=4)))    # column-major
    offset  0 1 2 3 4 5
    value   A D B E C F
    >>> print(memory_map(Layout((2, 3), (1, 2), itemsize=1)))    # 6 bytes: DWORD-aligned to 8
    offset  0 1 2 3 4 5 6 7
    value   A D B E C F x x
    offsets 6..7: DirectML buffer padding (6 bytes rounded up to 8, a multiple of 4).
    """
    window = map_window(layout)
    if window is None:
        return "(empty: a size is 0, no element is stored)"
    names = element_names(layout, window)
    offsets = list(range(window.first, window.last + 1))
    notes = window.notes(names)
    if _is_sub_byte(layout):
        lines = _wrap_rows([str(o // 2) for o in offsets[::2]],
                           [f"{cell_text(names.get(o, []))}|{cell_text(names.get(o + 1, []))}"
                            for o in offsets[::2]], ("byte", "lo|hi"))
        notes.insert(0, NIBBLE_NOTE)
    else:
        lines = _wrap_rows([str(o) for o in offsets],
                           [cell_text(names.get(o, [])) for o in offsets])
    return "\n".join(lines + [textwrap.fill(note, LINE_WIDTH, subsequent_indent="  ")
                              for note in notes])


def element_names(layout: Layout, window: MapWindow) -> dict[int, list[str]]:
    """Offset -> the names of the elements ``window`` found there (row-major order).

    Examples
    --------
    >>> L = Layout((2, 2), (0, 1))
    >>> element_names(L, map_window(L))
    {0: ['A', 'C'], 1: ['B', 'D']}
    """
    positions = _row_major(layout)
    return {offset: [_name_of(index, positions) for index in indices]
            for offset, indices in window.found.items()}


# ---- the whole explanation ------------------------------------------------------------------


def _indent(text: str, prefix: str = "  ") -> str:
    return "\n".join(prefix + line if line else line for line in text.splitlines())


def explain(layout: Layout, *, title: str | None = None) -> str:
    """Explain ``layout``: its properties, the logical tensor and the memory map.

    Parameters
    ----------
    layout : Layout
        The layout to explain.
    title : str, optional
        A heading printed first.

    Returns
    -------
    str
        Several lines of text, without a trailing newline.

    Examples
    --------
    >>> text = explain(Layout((2, 2, 3)), title="2x2x3 DHW")
    >>> print(text.splitlines()[0])
    2x2x3 DHW
    >>> "H (1, 0, 1) -> 7" in text
    True
    >>> print(explain(Layout((3,))))
    sizes         (3,)
    strides       (1,) elements
    byte strides  (1,) (itemsize 1)
    offset        0
    label         none (named layouts exist for ranks 2 to 5)
    order         (0,) (physical order, outermost first)
    size          3 elements
    span          offsets 0..2 (3 offsets)
    buffer size   4 bytes (DirectML, rounded up to 4); exact 3 bytes
    nbytes        3
    flags         packed: yes, contiguous: yes, broadcast: no, padded: no, overlaps: no
    logical tensor:
      A B C
    memory map:
      offset  0 1 2 3
      value   A B C x
      offset 3: DirectML buffer padding (3 bytes rounded up to 4, a multiple of 4).
    elements (index -> offset):
      A (0,) -> 0   B (1,) -> 1   C (2,) -> 2
    """
    rows = properties(layout)
    width = max(len(name) for name, _ in rows) + 2
    lines = [title] if title else []
    lines.extend(
        textwrap.fill(value, LINE_WIDTH, initial_indent=name.ljust(width),
                      subsequent_indent=" " * width, break_on_hyphens=False)
        for name, value in rows
    )
    if layout.size == 0:
        lines.append("memory map: none, the layout is empty (a size is 0)")
        return "\n".join(lines)
    lines += ["logical tensor:", _indent(logical_grid(layout))]
    lines += ["memory map:", _indent(memory_map(layout))]
    listed = element_list(layout)
    if listed:
        lines += ["elements (index -> offset):", _indent(listed)]
    return "\n".join(lines)


def documentation_examples() -> list[tuple[str, Layout]]:
    """The layouts of the DirectML strides documentation, with their titles.

    Examples
    --------
    >>> [layout.strides for _, layout in documentation_examples()]
    [(3, 1), (1, 2), (6, 3, 1), (5, 1), (0, 1), (12, 4, 2, 1), (12, 1, 6, 3), (3, 1)]
    """
    return [
        ("2x3 float32, row-major (HW): the height-stride is the width, 3",
         Layout((2, 3), itemsize=4)),
        ("2x3 float32, column-major (WH): the height-stride is 1, the width-stride 2",
         Layout.packed((2, 3), "WH", itemsize=4)),
        ("2x2x3 float32, DHW: element H = index (1, 0, 1) is at offset "
         "(1, 0, 1) . (6, 3, 1) = 7", Layout((2, 2, 3), itemsize=4)),
        ("2x3 float32, padded: a height-stride of 5 instead of 3 (x = padding)",
         Layout((2, 3), (5, 1), itemsize=4)),
        ("2x3 float32, broadcast row: a height-stride of 0, so D E F repeat the offsets of A B C",
         Layout((2, 3), (0, 1), itemsize=4)),
        ("packed NCHW float16, sizes (1, 3, 2, 2), three channels of 2x2 pixels: strides "
         "(12, 4, 2, 1), each channel a block of four", Layout.packed((1, 3, 2, 2), "NCHW",
                                                                      itemsize=2)),
        ("packed NHWC float16, the same tensor channels-last: strides (12, 1, 6, 3), the three "
         "channels of each pixel side by side", Layout.packed((1, 3, 2, 2), "NHWC", itemsize=2)),
        ("2x3 uint8, row-major: 6 bytes, rounded up to 8 (DirectML buffer sizes are multiples "
         "of 4 bytes)", Layout((2, 3), itemsize=1)),
    ]


def walkthrough() -> str:
    """Explain every example of the DirectML strides documentation, numbered.

    Examples
    --------
    >>> text = walkthrough()
    >>> "value   A B C x x D E F x x" in text
    True
    """
    sections = [
        explain(layout, title=f"== {number}. {title} ==")
        for number, (title, layout) in enumerate(documentation_examples(), start=1)
    ]
    return "\n\n".join(sections)
