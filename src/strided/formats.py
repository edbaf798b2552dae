"""Named and blocked layout labels: physical orders, strides and physical shapes.

Sizes are always given in the canonical logical order of their rank (2D ``HW``, 3D ``DHW``,
4D ``NCHW``, 5D ``NCDHW``). A *label* lists the same letters from the outermost to the innermost
dimension in memory: ``"NHWC"`` is channels-last, ``"WH"`` column-major. Rank 3 also takes the
image letters ``CHW`` (sizes ``(C, H, W)``): ``"CHW"`` is planar, ``"HWC"`` channels-last.
``"C"`` alone is C (row-major) order, never "channels", and ``"F"`` Fortran (column-major)
order, for any rank; a tuple of axes gives any physical order.

A *blocked* format (``"NCHW4"``, ``"NCHW32"``, ``"CHWN4"``, oneDNN's ``"nChw8c"``) stores a
logical ``(N, C, H, W)`` tensor as a packed array of a different physical shape, the channels
split into blocks of ``x`` and zero-padded up to a multiple of ``x``.

Examples
--------
>>> from strided.formats import packed_strides, blocked_shape
>>> packed_strides((1, 3, 2, 2), "NHWC")
(12, 1, 6, 3)
>>> packed_strides((3, 4, 5), "HWC")          # sizes (C, H, W), channels-last
(1, 15, 3)
>>> packed_strides((2, 3, 4, 5), "NHWC", broadcast=(False, True, False, False))
(20, 0, 5, 1)
>>> blocked_shape((2, 6, 3, 3), "NCHW4")
(2, 2, 3, 3, 4)
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast

from strided import _core

__all__ = [
    "CANONICAL",
    "LABEL_LETTERS",
    "BlockedFormat",
    "blocked_shape",
    "blocked_view_strides",
    "label_order",
    "matching_labels",
    "packed_strides",
    "parse_blocked",
    "physical_order",
    "preferred_label",
]

#: Canonical letters of each rank that has named layouts: the letters in which
#: :func:`matching_labels`, :func:`preferred_label` and :attr:`strided.Layout.label` answer.
CANONICAL: dict[int, str] = {2: "HW", 3: "DHW", 4: "NCHW", 5: "NCDHW"}

#: Every set of letters a label of each rank may be spelled in, the canonical one first: rank 3
#: also takes the image letters ``CHW`` (sizes ``(C, H, W)``: ``"CHW"`` planar, ``"HWC"``
#: channels-last), the same orders as ``DHW`` with ``C`` in place of ``D``.
LABEL_LETTERS: dict[int, tuple[str, ...]] = {
    2: ("HW",), 3: ("DHW", "CHW"), 4: ("NCHW",), 5: ("NCDHW",)}

LayoutSpec = str | Sequence[int] | None


def _letter_sets(rank: int, joiner: str = " or ") -> str:
    """``'DHW' or 'CHW'``: the letter sets of a rank, for messages."""
    return joiner.join(repr(letters) for letters in LABEL_LETTERS[rank])


def _ranks_help() -> str:
    return ", ".join(f"rank {r}: {_letter_sets(r)}" for r in LABEL_LETTERS)


def _letters_of(label: str, rank: int) -> str | None:
    """The letter set of ``rank`` that ``label`` is a permutation of, else None."""
    if len(label) != rank:
        return None
    return next((letters for letters in LABEL_LETTERS.get(rank, ())
                 if sorted(label) == sorted(letters)), None)


def _rank(ndim: int) -> int:
    """``ndim`` validated: an integer (not a bool, not a float) in ``0..MAX_RANK``."""
    rank = _core.as_int(ndim, "ndim")
    if not 0 <= rank <= _core.MAX_RANK:
        raise ValueError(f"ndim must be in 0..{_core.MAX_RANK}, got {rank}")
    return rank


def label_order(label: str, ndim: int) -> tuple[int, ...]:
    """Physical order (axes, outermost first) named by a layout label.

    Parameters
    ----------
    label : str
        A permutation of the canonical letters of rank ``ndim`` (or, at rank 3, of the image
        letters ``CHW``, sizes given as ``(C, H, W)``: see :data:`LABEL_LETTERS`).
    ndim : int
        Rank of the sizes the label applies to.

    Returns
    -------
    tuple of int
        ``order[k]`` is the logical axis stored ``k``-th from the outside.

    Raises
    ------
    ValueError
        If the label is not a permutation of one letter set of that rank (a rank-3 label
        mixing ``DHW`` and ``CHW`` letters, such as ``"CHD"``, included).

    Examples
    --------
    >>> label_order("NHWC", 4)
    (0, 2, 3, 1)
    >>> label_order("WH", 2)
    (1, 0)
    >>> label_order("HWC", 3), label_order("HWD", 3)
    ((1, 2, 0), (1, 2, 0))
    """
    if not isinstance(label, str):
        raise TypeError(f"label must be a str such as 'NHWC', got {type(label).__name__}")
    ndim = _rank(ndim)
    if ndim not in LABEL_LETTERS:
        raise ValueError(
            f"layout {label!r}: named layouts exist for ranks 2 to 5, but sizes has rank {ndim}; "
            f"use 'C' (row-major), 'F' (column-major) or a tuple of axes"
        )
    letters = _letters_of(label, ndim)
    if letters is None:
        sets = LABEL_LETTERS[ndim]
        if _letters_of(label.upper(), ndim) is not None:
            hint = f" (labels are upper case: {label.upper()!r})"
        elif len(label) != ndim and _letters_of(label, len(label)) is not None:
            hint = f": it is a rank-{len(label)} label"
        elif (len(sets) > 1 and len(label) == ndim and len(set(label)) == ndim
              and set(label) <= set().union(*sets)):
            hint = f": it mixes the letters of {_letter_sets(ndim, ' and ')}"
        else:
            hint = ""
        raise ValueError(
            f"layout {label!r} is not a label for rank {ndim}{hint}; a rank-{ndim} label is a "
            f"permutation of {_letter_sets(ndim, ' or of ')} ({_ranks_help()})"
        )
    return tuple(letters.index(letter) for letter in label)


def physical_order(layout: LayoutSpec, ndim: int) -> tuple[int, ...]:
    """Physical order (axes, outermost first) for a layout specification.

    Parameters
    ----------
    layout : None, str or sequence of int
        ``None`` or ``"C"``: C (row-major) order; ``"F"``: Fortran (column-major) order; a
        label such as ``"NHWC"`` or, at rank 3, ``"HWC"``; or the axes themselves, outermost
        first.
    ndim : int
        Rank of the sizes.

    Examples
    --------
    >>> physical_order(None, 3), physical_order("F", 3), physical_order((2, 0, 1), 3)
    ((0, 1, 2), (2, 1, 0), (2, 0, 1))
    """
    ndim = _rank(ndim)
    if layout is None:
        return tuple(range(ndim))
    if isinstance(layout, str):      # before any ==: an array's == compares element-wise
        if layout in ("C", "F"):
            return tuple(range(ndim)) if layout == "C" else tuple(range(ndim - 1, -1, -1))
        return label_order(layout, ndim)
    kind = type(layout)
    # a sequence of axes: a tuple, list, range or 1-D integer array (numpy's are no Sequence,
    # array-API arrays need not have a __len__)
    sequence = hasattr(kind, "__len__") and hasattr(kind, "__getitem__")
    if isinstance(layout, (bytes, bytearray, Mapping)) or not (
            sequence or getattr(layout, "ndim", None) == 1):
        raise TypeError(
            "layout must be None, 'C' (row-major), 'F' (column-major), a label such as 'NHWC' "
            "or a tuple of axes, "
            f"got {type(layout).__name__} {layout!r}"
        )
    return _core.as_permutation(cast("Sequence[int]", layout), ndim, "layout")


def packed_strides(
    sizes: Sequence[int], layout: LayoutSpec = None, *, broadcast: Sequence[bool] | None = None
) -> tuple[int, ...]:
    """Element strides of a packed tensor of ``sizes`` stored in a given physical order.

    Parameters
    ----------
    sizes : sequence of int
        Logical sizes in canonical order (``NCHW`` for rank 4, ``DHW`` for rank 3, or
        ``(C, H, W)`` with a ``CHW``-letter label such as ``"HWC"``, ...).
    layout : None, str or sequence of int, optional
        ``None``/``"C"`` C (row-major) order, ``"F"`` Fortran (column-major) order, a label
        such as ``"NHWC"`` or ``"HWC"``, or the axes in physical order, outermost first.
    broadcast : sequence of bool, optional
        One flag per axis, in canonical order, the order of ``sizes`` (DirectML's
        ``CalculateStrides``): a broadcast axis gets stride 0 and counts as size 1 when the
        other strides are computed.

    Returns
    -------
    tuple of int
        Strides in elements, in the canonical axis order. A size-0 axis counts as size 1, as in
        numpy and torch, so no stride collapses to 0.

    Raises
    ------
    ValueError
        Bad sizes, a label of the wrong rank, a tuple that is not a permutation, or a broadcast
        list of the wrong length.
    OverflowError
        If a stride leaves the signed 64-bit range.

    Examples
    --------
    >>> packed_strides((2, 2, 3))
    (6, 3, 1)
    >>> packed_strides((1, 3, 2, 2), "NHWC")
    (12, 1, 6, 3)
    >>> packed_strides((2, 3), "F")
    (1, 2)
    >>> packed_strides((3, 4, 5), "HWC")         # an image, sizes (C, H, W), channels-last
    (1, 15, 3)
    >>> packed_strides((2, 3, 4, 5), "NHWC", broadcast=(False, True, False, False))
    (20, 0, 5, 1)
    """
    sizes = _core.as_sizes(sizes)
    return _core.packed_strides(sizes, physical_order(layout, len(sizes)), broadcast)


def strides_agree(sizes: Sequence[int], strides: Sequence[int], other: Sequence[int]) -> bool:
    """Whether two stride tuples of ``sizes`` place every element alike: equal wherever the
    dim has more than one element (a size-1 dim's stride is never multiplied by anything).

    Examples
    --------
    >>> strides_agree((1, 3, 4), (99, 4, 1), (12, 4, 1))
    True
    >>> strides_agree((2, 3), (3, 1), (1, 2))
    False

    Raises
    ------
    TypeError, ValueError
        Arguments that are not a layout's sizes and strides (see :class:`strided.Layout`), or
        stride tuples of another length than ``sizes``.
    """
    sizes, strides = _core.as_pair(sizes, strides)
    other = _core.as_pair(sizes, other, "other")[1]
    return all(n == 1 or a == b for n, a, b in zip(sizes, strides, other))


def matching_labels(sizes: Sequence[int], strides: Sequence[int]) -> tuple[str, ...]:
    """Every named layout whose packed strides equal ``strides`` (dims of size 1 ignored).

    A stride-0 dimension matches as a broadcast dimension. The preferred label (canonical
    whenever the canonical order fits) comes first. Labels are spelled in the canonical
    letters (:data:`CANONICAL`): at rank 3 ``DHW``, so an image's ``"HWC"`` is reported as
    ``"HWD"``, the same order (``label.replace("D", "C")`` spells it in image letters).

    Examples
    --------
    >>> matching_labels((2, 3, 4, 5), (60, 1, 15, 3))
    ('NHWC',)
    >>> labels = matching_labels((1, 1, 3, 5), (15, 1, 5, 1))  # N and C have size 1
    >>> labels[0], len(labels), "NHWC" in labels
    ('NCHW', 12, True)
    """
    sizes, strides = _core.as_pair(sizes, strides)
    letters = CANONICAL.get(len(sizes))
    if letters is None:
        return ()
    broadcast = tuple(s == 0 for s in strides)
    fits = []
    # itertools yields the canonical order first and then lexicographic orders, so the first
    # fit is the preferred label (the one Layout.label reports).
    for perm in itertools.permutations(range(len(sizes))):
        expected = _core.packed_strides(sizes, perm, broadcast)
        if strides_agree(sizes, strides, expected):
            fits.append("".join(letters[ax] for ax in perm))
    return tuple(fits)


def preferred_label(sizes: Sequence[int], strides: Sequence[int]) -> str | None:
    """The named layout of ``strides``, canonical when several fit; None when none does.

    Spelled in the canonical letters, as :func:`matching_labels` (rank 3: ``"HWD"`` for an
    image's ``"HWC"``).

    Examples
    --------
    >>> preferred_label((1, 1, 3, 5), (15, 1, 5, 1))
    'NCHW'
    >>> preferred_label((2, 3), (1, 2))
    'WH'
    >>> preferred_label((2, 3), (5, 1)) is None
    True
    """
    sizes, strides = _core.as_pair(sizes, strides)
    letters = CANONICAL.get(len(sizes))
    if letters is None:
        return None
    if 0 in sizes:
        # a size-0 dim counts as size 1, so strides tie and the order is ambiguous: try all
        labels = matching_labels(sizes, strides)
        return labels[0] if labels else None
    order = _core.named_order(sizes, strides)
    return None if order is None else "".join(letters[ax] for ax in order)


# --------------------------------------------------------------------------------------------
# Blocked channel formats
# --------------------------------------------------------------------------------------------

# ASCII digits without leading zeros: one spelling per block size (\d would take '٤' too)
_NCHWX = re.compile(r"NCHW([1-9][0-9]*)")
_ONEDNN = re.compile(r"nChw([1-9][0-9]*)c")
_INT64_MAX = 2**63 - 1


@dataclass(frozen=True)
class BlockedFormat:
    """A blocked channel format of a logical ``(N, C, H, W)`` tensor.

    Attributes
    ----------
    name : str
        The name as given (``"NCHW4"``, ``"nChw16c"``, ``"CHWN4"``).
    block : int
        Channels per block (``x``).
    chwn : bool
        ``False`` for NCHWx (physical ``(N, C/x, H, W, x)``), ``True`` for CHWN4
        (physical ``(C/x, H, W, N, x)``).
    """

    name: str
    block: int
    chwn: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise TypeError(f"name must be a str, got {type(self.name).__name__}")
        if not isinstance(self.chwn, bool):
            raise TypeError(f"chwn must be a bool, got {type(self.chwn).__name__}")
        block = _core.as_int(self.block, "block")
        if block < 1:
            raise ValueError(f"block must be >= 1 channel, got {block}")
        object.__setattr__(self, "block", block)      # a numpy integer becomes an int

    def physical_shape(self, sizes: Sequence[int]) -> tuple[int, ...]:
        """Physical packed shape for logical sizes ``(N, C, H, W)``."""
        n, c, h, w = _nchw(sizes, self.name)
        blocks = -(-c // self.block)
        if self.chwn:
            return (blocks, h, w, n, self.block)
        return (n, blocks, h, w, self.block)


def parse_blocked(fmt: str | BlockedFormat) -> BlockedFormat:
    """Parse a blocked format name.

    Accepts ``NCHWx`` for any block ``x >= 1`` (``NCHW4``, ``NCHW32``, ``NCHW64``...),
    ``CHWN4``, and oneDNN's ``nChw{x}c`` (``nChw8c``, ``nChw16c``).

    Examples
    --------
    >>> parse_blocked("nChw16c")
    BlockedFormat(name='nChw16c', block=16, chwn=False)
    >>> parse_blocked("CHWN4").chwn
    True
    """
    if isinstance(fmt, BlockedFormat):
        return fmt
    if not isinstance(fmt, str):
        raise TypeError(f"fmt must be a blocked format name such as 'NCHW4', got {fmt!r}")
    if fmt == "CHWN4":
        return BlockedFormat(fmt, 4, True)
    match = _NCHWX.fullmatch(fmt) or _ONEDNN.fullmatch(fmt)
    if match is None:
        raise ValueError(
            f"fmt {fmt!r} is not a blocked format: expected NCHWx (x >= 1 in ASCII digits, no "
            f"leading zero, e.g. 'NCHW4', 'NCHW32'), 'CHWN4', or oneDNN's nChw<x>c (e.g. 'nChw8c')"
        )
    digits = match.group(1)
    if len(digits) > 19 or int(digits) > _INT64_MAX:
        raise ValueError(f"fmt {fmt!r}: the block {digits} does not fit in a signed 64-bit integer")
    return BlockedFormat(fmt, int(digits), False)


def _nchw(sizes: Sequence[int], fmt: str) -> tuple[int, int, int, int]:
    sizes = _core.as_sizes(sizes)
    if len(sizes) != 4:
        raise ValueError(
            f"blocked format {fmt!r} needs logical sizes (N, C, H, W), got rank {len(sizes)}: "
            f"{sizes!r}"
        )
    n, c, h, w = sizes
    return n, c, h, w


def blocked_shape(sizes: Sequence[int], fmt: str | BlockedFormat) -> tuple[int, ...]:
    """Physical packed shape of a blocked format; the channels are padded to a multiple of x.

    Examples
    --------
    >>> blocked_shape((1, 3, 2, 2), "NCHW4")
    (1, 1, 2, 2, 4)
    >>> blocked_shape((2, 5, 3, 3), "CHWN4")
    (2, 3, 3, 2, 4)
    """
    return parse_blocked(fmt).physical_shape(sizes)


def blocked_view_strides(sizes: Sequence[int],
                         fmt: str | BlockedFormat) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Sizes and element strides of the rank-5 view ``(N, C/x, x, H, W)`` of a packed blocked
    buffer, when ``C % x == 0``: the arithmetic of :meth:`strided.Layout.blocked_view`.

    Raises
    ------
    ValueError
        If ``C`` is not a multiple of the block (the padding channels have no logical index).

    Examples
    --------
    >>> blocked_view_strides((2, 8, 3, 3), "NCHW4")
    ((2, 2, 4, 3, 3), (72, 36, 1, 12, 4))
    """
    spec = parse_blocked(fmt)
    sizes = _nchw(sizes, spec.name)          # read once: the caller's object may change
    n, c, h, w = sizes
    x = spec.block
    if c % x:
        raise ValueError(
            f"no strided view of {spec.name!r} for C = {c}: C must be a multiple of {x} "
            f"(the buffer holds {x - c % x} padding channels)"
        )
    physical = _core.packed_strides(spec.physical_shape(sizes))
    if spec.chwn:
        s_cb, s_h, s_w, s_n, s_x = physical
    else:
        s_n, s_cb, s_h, s_w, s_x = physical
    return (n, c // x, x, h, w), (s_n, s_cb, s_x, s_h, s_w)
