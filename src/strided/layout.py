"""The `Layout` descriptor: sizes + element strides + offset + itemsize, validated and immutable.

Every computation is delegated to the compiled core (:mod:`strided._core`), which does it in
checked 64-bit arithmetic; this module validates, caches and presents. A layout of 4-bit
elements (``bits=4``) is element arithmetic like any other (the core's, with an element of one
unit); only its byte counts differ, computed here from its element offsets: element ``e`` is in
byte ``e // 2``, low nibble when ``e`` is even (the documentation's concepts page, "Sub-byte
elements").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from strided import _core
from strided.formats import (
    BlockedFormat,
    LayoutSpec,
    blocked_view_strides,
    matching_labels,
    parse_blocked,
    preferred_label,
)
from strided.formats import packed_strides as _packed_strides

__all__ = ["Layout", "buffer_size", "offset_of"]

_PACKED, _CONTIGUOUS, _BROADCAST, _PADDED, _EMPTY = _core.FLAG_BITS

#: The element widths narrower than a byte that a Layout describes (two elements per byte).
SUB_BYTE_BITS = (4,)
_INT64_MAX = 2**63 - 1


def _element_width(itemsize: int, bits: int | None) -> tuple[int, int]:
    """``(itemsize for the element arithmetic, bits per element)`` of the arguments.

    A 4-bit layout does its element arithmetic with an element of one unit (itemsize 1); its
    byte counts are computed from element offsets by the callers.
    """
    isz = _core.as_int(itemsize, "itemsize")
    if isz < 1:
        raise ValueError(f"itemsize must be >= 1 byte, got {isz}")
    if bits is None:
        return isz, 8 * isz
    nbits = _core.as_int(bits, "bits")
    if nbits in SUB_BYTE_BITS:
        if isz != 1:
            raise ValueError(
                f"bits={nbits} with itemsize={isz}: {nbits}-bit elements have no byte itemsize; "
                f"give bits={nbits} alone, or itemsize={isz} alone for {8 * isz}-bit elements"
            )
        return 1, nbits
    if nbits != 8 * isz:
        raise ValueError(
            f"bits must be None, 4 (two elements per byte) or 8 * itemsize = {8 * isz}, "
            f"got bits={nbits}"
        )
    return isz, nbits


def _check_align(align: int) -> int:
    al = _core.as_int(align, "align")
    if al <= 0:
        raise ValueError(f"align must be >= 1 byte, got {al}")
    return al


def _sub_byte_buffer_size(lo: int, hi: int, bits: int, align: int) -> int:
    """Bytes from the byte holding element offset ``lo`` to the byte holding ``hi``, rounded up
    to ``align`` (``lo > hi``: empty, 0 bytes)."""
    if hi < lo:
        return 0
    per_byte = 8 // bits
    nbytes = hi // per_byte - lo // per_byte + 1
    rounded = -(-nbytes // align) * align
    if rounded > _INT64_MAX:
        raise OverflowError(f"rounding {nbytes} bytes up to a multiple of {align} leaves int64")
    return rounded


class Layout:
    """An exact description of where each element of a tensor lives in a linear buffer.

    The element at ``index`` lives at element offset ``dot(index, strides) + offset``.
    Strides and offsets count *elements*; the byte equivalents are :attr:`byte_strides` and
    :attr:`byte_offset`. A Layout is immutable and hashable, validated on construction.

    Parameters
    ----------
    sizes : sequence of int, or int
        Number of elements along each dimension (>= 0); at most 64 dimensions.
    strides : sequence of int, or int, optional
        Elements to skip to reach the next element along each dimension; any int64, negative
        and zero included. Default: packed row-major.
    offset : int, optional
        Element offset of the element at index ``(0, ..., 0)``.
    itemsize : int, optional
        Bytes per element (>= 1).
    bits : int, optional
        Bits per element: ``None`` (the default: ``8 * itemsize``), ``8 * itemsize``, or ``4``
        for 4-bit elements (``int4``, ``uint4``), two per byte. With ``bits=4`` the sizes,
        strides and offset count 4-bit elements, element ``e`` is in byte ``e // 2`` (bits
        0-3 when ``e`` is even, bits 4-7 when odd: low nibble first), and the byte quantities
        (:attr:`nbytes`, :meth:`buffer_size`) round up to whole bytes; :attr:`itemsize`,
        :attr:`byte_strides` and :attr:`byte_offset` do not exist (see
        :attr:`is_byte_addressable`).

    Notes
    -----
    A *sequence of int* is a tuple, a list, a ``range``, a ``torch.Size``, a 1-D integer
    array of numpy, torch or any array-API library, or any other sized sequence whose items
    have ``__index__`` (numpy and torch integer scalars, 0-d integer arrays). One integer
    means one dimension, as numpy reads ``np.empty(5)``: ``Layout(5)`` is ``Layout((5,))``.
    Whatever was given, :attr:`sizes` and :attr:`strides` are tuples of Python ints, and the
    argument is read once, into a tuple, before any item is converted. Refused with a
    ``TypeError`` naming the argument: bools (``True``, ``np.True_``, a 0-d bool tensor),
    floats, strings, sets, mappings, and generators or other iterators (they can be read only
    once). The same holds for every sequence argument of the package (indices, axes, orders,
    broadcast flags).

    Raises
    ------
    TypeError
        A non-integer (or a bool) where an integer is needed, or a sequence argument of a
        refused kind.
    ValueError
        A negative size, strides of another length than sizes, itemsize < 1, rank > 64,
        ``bits`` other than None, 4 and ``8 * itemsize``, or ``bits=4`` with an itemsize
        other than 1.
    OverflowError
        When the number of elements, a span end, the number of offsets from the lowest to the
        highest element, or a byte quantity leaves int64.

    Examples
    --------
    >>> L = Layout((2, 3), (5, 1))          # a 2x3 tensor with a height-stride of 5
    >>> L.offset_of((1, 2)), L.span, L.is_padded, L.is_packed
    (7, (0, 7), True, False)
    >>> Layout((2, 5), itemsize=4).byte_strides   # int32: numpy's byte strides
    (20, 4)
    >>> Layout.packed((1, 3, 2, 2), "NHWC").strides
    (12, 1, 6, 3)
    >>> Layout(range(2, 4)) == Layout([2, 3]) == Layout((2, 3))
    True
    >>> Layout(5).sizes
    (5,)
    >>> L4 = Layout((3, 5), (6, 1), bits=4)      # int4 rows of 5, padded to 6 (3 bytes)
    >>> L4.bits, L4.nbytes, L4.is_byte_addressable
    (4, 9, True)
    >>> L4
    Layout(sizes=(3, 5), strides=(6, 1), offset=0, bits=4)
    """

    __slots__ = ("_bits", "_flags", "_hi", "_itemsize", "_lo", "_offset", "_overlaps", "_size",
                 "_sizes", "_strides")

    _sizes: tuple[int, ...]
    _strides: tuple[int, ...]
    _offset: int
    _itemsize: int      # 1 for a sub-byte layout: its element arithmetic counts elements
    _bits: int          # 8 * itemsize, or 4
    _size: int
    _lo: int
    _hi: int
    _flags: int
    _overlaps: bool | None

    def __init__(
        self,
        sizes: Sequence[int],
        strides: Sequence[int] | None = None,
        *,
        offset: int = 0,
        itemsize: int = 1,
        bits: int | None = None,
    ) -> None:
        if bits is None:    # the common case: no second look at itemsize
            (self._sizes, self._strides, self._offset, self._itemsize, self._size, self._lo,
             self._hi, self._flags) = _core.normalize(sizes, strides, offset, itemsize)
            self._bits = 8 * self._itemsize
        else:
            isz, self._bits = _element_width(itemsize, bits)
            (self._sizes, self._strides, self._offset, self._itemsize, self._size, self._lo,
             self._hi, self._flags) = _core.normalize(sizes, strides, offset, isz)
        self._overlaps = None

    @classmethod
    def _from_normalized(cls, fields: tuple[Any, ...]) -> Layout:
        """A Layout from ``_core.normalize``'s result, for compiled adapters that read sizes
        and strides from an array's C struct (nothing is validated twice)."""
        self = object.__new__(cls)
        (self._sizes, self._strides, self._offset, self._itemsize, self._size, self._lo,
         self._hi, self._flags) = fields
        self._bits = 8 * self._itemsize
        self._overlaps = None
        return self

    @classmethod
    def packed(
        cls,
        sizes: Sequence[int],
        layout: LayoutSpec = None,
        *,
        itemsize: int = 1,
        broadcast: Sequence[bool] | None = None,
        bits: int | None = None,
    ) -> Layout:
        """A packed layout of ``sizes`` in a named or given physical order.

        Parameters
        ----------
        sizes : sequence of int
            Logical sizes in canonical order (``NCHW`` for rank 4, ``NCDHW`` for rank 5,
            ``DHW`` for rank 3, or ``(C, H, W)`` with an image label such as ``"HWC"``, ...).
        layout : None, str or sequence of int, optional
            ``None``/``"C"`` (C, row-major, order), ``"F"`` (Fortran, column-major, order), a
            label such as ``"NHWC"``, ``"CHW"`` or ``"HWC"``, or axes outermost first.
        itemsize : int, optional
            Bytes per element.
        broadcast : sequence of bool, optional
            DirectML broadcast flags: those axes get stride 0 and count as size 1.
        bits : int, optional
            ``4`` for 4-bit elements (see :class:`Layout`); the strides are the same, in
            elements.

        Examples
        --------
        >>> Layout.packed((2, 3, 4, 5), "NHWC").strides
        (60, 1, 15, 3)
        >>> Layout.packed((2, 3), "F").label
        'WH'
        >>> Layout.packed((3, 4, 5), "HWC").strides               # image (C, H, W), channels-last
        (1, 15, 3)
        >>> Layout.packed((1, 64, 2, 2), "NCHW", bits=4).nbytes     # 256 int4: 128 bytes
        128
        """
        sizes = _core.as_sizes(sizes)     # read once: the caller's object may change
        return cls(sizes, _packed_strides(sizes, layout, broadcast=broadcast), itemsize=itemsize,
                   bits=bits)

    @classmethod
    def blocked(cls, sizes: Sequence[int], fmt: str | BlockedFormat, *,
                itemsize: int = 1, bits: int | None = None) -> Layout:
        """The packed physical layout (rank 5) of a blocked format of logical ``(N, C, H, W)``.

        The channels are padded up to a multiple of the block; see
        :func:`strided.formats.blocked_shape` for the physical shape. ``bits=4`` gives the
        layout of 4-bit elements (NCHW64 of int4: MegEngine's NCHW64, CUTLASS's NC64HW64).

        Examples
        --------
        >>> Layout.blocked((1, 8, 2, 2), "NCHW4").strides
        (32, 16, 8, 4, 1)
        >>> Layout.blocked((2, 5, 3, 3), "CHWN4").sizes
        (2, 3, 3, 2, 4)
        >>> L = Layout.blocked((1, 100, 3, 5), "NCHW64", bits=4)   # 32 bytes per pixel block
        >>> L.sizes, L.strides, L.nbytes
        ((1, 2, 3, 5, 64), (1920, 960, 320, 64, 1), 960)
        """
        return cls(parse_blocked(fmt).physical_shape(sizes), itemsize=itemsize, bits=bits)

    @classmethod
    def blocked_view(cls, sizes: Sequence[int], fmt: str | BlockedFormat, *,
                     itemsize: int = 1, bits: int | None = None) -> Layout:
        """The rank-5 strided view ``(N, C/x, x, H, W)`` of a blocked buffer, when ``C % x == 0``.

        Channel ``c`` of the logical tensor is ``[n, c // x, c % x, h, w]`` of the view. No
        rank-4 view exists: the offset of channel ``c`` is not linear in ``c``.

        Raises
        ------
        ValueError
            If ``C`` is not a multiple of the block (the padding channels have no logical
            index).

        Examples
        --------
        >>> Layout.blocked_view((2, 8, 3, 3), "NCHW4").strides
        (72, 36, 1, 12, 4)
        >>> Layout.blocked_view((1, 128, 2, 2), "NCHW64", bits=4).is_byte_addressable
        True
        """
        view_sizes, view_strides = blocked_view_strides(sizes, fmt)
        return cls(view_sizes, view_strides, itemsize=itemsize, bits=bits)

    # ---- basic attributes -------------------------------------------------------------------

    @property
    def sizes(self) -> tuple[int, ...]:
        """Number of elements along each dimension."""
        return self._sizes

    @property
    def strides(self) -> tuple[int, ...]:
        """Element strides, one per dimension."""
        return self._strides

    @property
    def offset(self) -> int:
        """Element offset of index ``(0, ..., 0)``."""
        return self._offset

    @property
    def itemsize(self) -> int:
        """Bytes per element.

        Raises
        ------
        ValueError
            For a layout of 4-bit elements (``bits=4``): they have no byte itemsize.
        """
        if self._bits < 8:
            raise self._no_bytes("itemsize")
        return self._itemsize

    @property
    def bits(self) -> int:
        """Bits per element: ``8 * itemsize``, or 4 for a layout of 4-bit elements.

        >>> Layout((2, 3), itemsize=4).bits, Layout((2, 3), bits=4).bits
        (32, 4)
        """
        return self._bits

    def _no_bytes(self, name: str) -> ValueError:
        return ValueError(
            f"{name} is undefined for a layout of {self._bits}-bit elements: they have no byte "
            f"itemsize ({8 // self._bits} elements share a byte, element e in byte "
            f"e // {8 // self._bits}). Use bits, the strides and offset in elements, nbytes / "
            f"buffer_size() for byte counts, and is_byte_addressable to know whether every "
            f"element row starts on a byte"
        )

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self._sizes)

    @property
    def size(self) -> int:
        """Number of logical elements (product of the sizes)."""
        return self._size

    @property
    def byte_strides(self) -> tuple[int, ...]:
        """Strides in bytes (numpy's unit).

        Raises
        ------
        ValueError
            For a layout of 4-bit elements (``bits=4``), whose strides count half bytes.

        Examples
        --------
        >>> Layout((2, 3), itemsize=8).byte_strides
        (24, 8)
        """
        if self._bits < 8:
            raise self._no_bytes("byte_strides")
        return _core.byte_strides(self._strides, self._itemsize)

    @property
    def byte_offset(self) -> int:
        """Offset in bytes.

        Raises
        ------
        ValueError
            For a layout of 4-bit elements (``bits=4``).
        """
        if self._bits < 8:
            raise self._no_bytes("byte_offset")
        return self._offset * self._itemsize

    @property
    def span(self) -> tuple[int, int]:
        """``(lowest, highest)`` element offset reached, offset included.

        An empty layout reaches nothing: its span is ``(offset, offset - 1)``, so that
        ``highest - lowest + 1`` is always the number of offsets from first to last.

        >>> Layout((2, 3), (-3, 1), offset=3).span
        (0, 5)
        >>> Layout((0, 3)).span
        (0, -1)
        """
        return (self._lo, self._hi)

    @property
    def nbytes(self) -> int:
        """Bytes from offset 0 to the end of the last element; 0 when empty.

        This is the size of a buffer that starts at offset 0 and holds every element. For 4-bit
        elements it is ``ceil((highest element offset + 1) * 4 / 8)``: the byte holding the
        last element counts whole.

        Raises
        ------
        ValueError
            If the span reaches below offset 0 (negative strides or offset): no buffer starting
            at offset 0 holds the layout.

        Examples
        --------
        >>> Layout((2, 3), (5, 1), itemsize=4).nbytes
        32
        >>> Layout((2, 3), (5, 1), bits=4).nbytes       # elements 0..7: bytes 0..3
        4
        >>> Layout((3,), offset=2, bits=4).nbytes       # elements 2..4: byte 2's low nibble
        3
        """
        if self._size == 0:
            return 0
        if self._lo < 0:
            raise ValueError(
                f"the layout reaches element offset {self._lo}, below offset 0 "
                f"(span {self.span}), so no buffer starting at offset 0 holds it"
            )
        if self._bits < 8:
            per_byte = 8 // self._bits
            return self._hi // per_byte + 1
        return (self._hi + 1) * self._itemsize

    def buffer_size(self, align: int = 4) -> int:
        """Bytes from the lowest to the highest element, rounded up to ``align``.

        See :func:`strided.buffer_size`. For 4-bit elements: the bytes from the byte holding
        the lowest element to the byte holding the highest (the offset counts: an odd lowest
        element starts in the high nibble of its byte), rounded up to ``align`` as for any
        element.

        Examples
        --------
        >>> Layout.packed((1, 1, 3, 5), "NHWC", itemsize=2).buffer_size()
        32
        >>> L = Layout((5,), offset=1, bits=4)             # elements 1..5: bytes 0..2
        >>> L.buffer_size(align=1), L.buffer_size()
        (3, 4)
        """
        if self._bits < 8:
            return _sub_byte_buffer_size(self._lo, self._hi, self._bits, _check_align(align))
        return _core.buffer_size(self._sizes, self._strides, self._itemsize, align)

    @property
    def is_byte_addressable(self) -> bool:
        """Every element row starts on a byte: true of every layout of byte-sized elements.

        A layout of 4-bit elements is byte-addressable when its offset is even, its strides
        are >= 0, and every stride but one unit stride (stride 1) is even: then each
        element's byte is ``e // 2`` with the pairs of elements of the unit-stride dimension
        sharing bytes in order, low nibble first. This is what views, DLPack exports and
        threaded kernels need; other 4-bit layouts are reachable only by a copy.

        Size-0 and size-1 dimensions: a dimension of size 1 never applies its stride, so its
        stride is not looked at (it may be odd or negative, and a second stride 1 of a
        size-1 dimension is allowed). A layout with a size-0 dimension holds no element and
        is byte-addressable whatever its offset and strides. Stride 0 (broadcast) is even.

        Examples
        --------
        >>> Layout((4, 6), bits=4).is_byte_addressable
        True
        >>> Layout((4, 6), bits=4)[:, 1:].is_byte_addressable      # offset 1: a high nibble
        False
        >>> Layout((4, 5), bits=4).is_byte_addressable             # rows 5 apart: odd
        False
        >>> Layout((4, 1), (6, 3), bits=4).is_byte_addressable     # a size-1 dim's stride
        True

        See Also
        --------
        byte_addressable_error : why a layout is not byte-addressable, in words.
        """
        return self.byte_addressable_error() is None

    def byte_addressable_error(self) -> str | None:
        """Why this layout is not byte-addressable (see :attr:`is_byte_addressable`), or None.

        The message names the first offending quantity (the offset, then the strides in
        dimension order) with its value, for the error messages of the modules that need
        byte-addressable layouts; it is always None for byte-sized elements.

        Examples
        --------
        >>> import textwrap
        >>> def show(layout):
        ...     print(textwrap.fill(layout.byte_addressable_error(), 72))
        >>> show(Layout((4,), offset=3, bits=4))
        offset 3 of 4-bit elements is odd: element 3 starts in the middle of
        byte 1 (its high nibble)
        >>> show(Layout((2, 3), (3, 1), bits=4))
        stride 3 of dim 0 is odd: index 1 along dim 0 is element 3, in the
        middle of byte 1 (its high nibble); only one dimension may have an odd
        stride, and it must be 1
        >>> show(Layout((2, 3), (1, 1), bits=4))
        stride 1 of dim 1 is odd and dim 0 has stride 1 too: only one dimension
        may have an odd (unit) stride
        >>> Layout((2, 3), (4, 1), bits=4).byte_addressable_error() is None
        True
        """
        if self._bits >= 8 or self._size == 0:
            return None
        per_byte = 8 // self._bits
        off = self._offset
        if off % per_byte:
            return (f"offset {off} of {self._bits}-bit elements is odd: element {off} starts "
                    f"in the middle of byte {off // per_byte} (its high nibble)")
        unit: int | None = None
        for dim, (n, s) in enumerate(zip(self._sizes, self._strides, strict=True)):
            if n == 1:
                continue
            if s < 0:
                return (f"stride {s} of dim {dim} is negative: a byte-addressable layout of "
                        f"{self._bits}-bit elements runs forward in memory (element pairs "
                        f"share a byte low nibble first)")
            if s % per_byte == 0:
                continue
            if s != 1:
                return (f"stride {s} of dim {dim} is odd: index 1 along dim {dim} is element "
                        f"{off + s}, in the middle of byte {(off + s) // per_byte} (its high "
                        f"nibble); only one dimension may have an odd stride, and it must be 1")
            if unit is not None:
                return (f"stride 1 of dim {dim} is odd and dim {unit} has stride 1 too: only "
                        f"one dimension may have an odd (unit) stride")
            unit = dim
        return None

    # ---- exact predicates (cached) -----------------------------------------------------------

    @property
    def is_packed(self) -> bool:
        """The elements occupy exactly ``size`` distinct consecutive offsets, in any order.

        >>> Layout.packed((2, 3, 4, 5), "NHWC").is_packed, Layout((2, 3), (5, 1)).is_packed
        (True, False)
        """
        return self._flags & _PACKED != 0

    @property
    def is_contiguous(self) -> bool:
        """Packed in row-major (C) order; strides of size-1 dims are ignored.

        >>> Layout((1, 3), (99, 1)).is_contiguous
        True
        """
        return self._flags & _CONTIGUOUS != 0

    @property
    def is_broadcast(self) -> bool:
        """Some dimension of size > 1 has stride 0 (and the layout is not empty).

        >>> Layout((2, 3), (0, 1)).is_broadcast
        True
        """
        return self._flags & _BROADCAST != 0

    @property
    def is_padded(self) -> bool:
        """Some offset between the lowest and the highest element is reached by no element.

        >>> Layout((2, 3), (5, 1)).is_padded
        True
        """
        return self._flags & _PADDED != 0

    @property
    def overlaps(self) -> bool:
        """Two distinct indices reach the same offset (exact, not a heuristic).

        Decided within the default work budget (:meth:`self_overlaps` with its default
        ``max_work``, a fraction of a second); past it this raises :class:`TooHardError`
        rather than guess.

        Notes
        -----
        Deciding this is NP-complete in general (with every size 2 it is equal subset sum).
        Layouts obtained by slicing, permuting, broadcasting or reshaping a non-overlapping
        buffer, and sliding windows, are settled by exact O(ndim**2) tests; the rest go to a
        search whose worst case is exponential in the number of dimensions with unrelated
        strides. Only hand-made strides with no common structure (say, 30 dimensions of
        size 2 with random 48-bit strides) exhaust the budget.

        Examples
        --------
        >>> Layout((3, 3), (1, 1)).overlaps, Layout((3, 3), (2, 3)).overlaps
        (True, False)
        """
        if self._overlaps is None:
            flags = self._flags
            if flags & (_PACKED | _EMPTY):
                self._overlaps = False   # one offset per element, by definition
            elif flags & _BROADCAST:
                self._overlaps = True
            else:
                self._overlaps = _core.overlaps(self._sizes, self._strides)
        return self._overlaps

    def self_overlaps(self, *, max_work: int | None = _core.DEFAULT_MAX_WORK) -> bool:
        """Whether two distinct indices reach the same offset, with an explicit work budget.

        Parameters
        ----------
        max_work : int or None, optional
            Steps the exact search may take (numpy's ``max_work`` of
            :func:`numpy.shares_memory`); ``None`` means no bound: the answer is exact however
            long it takes (the search runs without the GIL and stops on Ctrl-C). The default
            is the budget of :attr:`overlaps`.

        Raises
        ------
        TooHardError
            The answer needs more than ``max_work`` steps (a ``ValueError``).

        Examples
        --------
        >>> import random
        >>> rng = random.Random(0)
        >>> hard = Layout([2] * 30, [rng.getrandbits(48) for _ in range(30)])
        >>> hard.self_overlaps(max_work=1000)
        Traceback (most recent call last):
            ...
        strided.TooHardError: deciding whether the layout ... needs more than max_work=1000 ...
        >>> Layout((4, 4), (4, 1)).self_overlaps(max_work=0)   # settled without any search
        False
        """
        if max_work == _core.DEFAULT_MAX_WORK and self._overlaps is not None:
            return self._overlaps
        return _core.overlaps(self._sizes, self._strides, max_work)

    def shares_memory(self, other: Layout, *,
                      max_work: int | None = _core.DEFAULT_MAX_WORK) -> bool:
        """Whether this layout and ``other``, in one buffer, reach a common byte (exact).

        Both offsets count from the start of the same buffer, each in elements of its own
        itemsize; elements of different itemsizes share memory when their bytes meet. For
        4-bit elements the unit is the half byte: two 4-bit layouts share memory when they
        reach a common element (nibble); the two nibbles of one byte are distinct memory here,
        though writing one of them is a read-modify-write of the whole byte. This is
        numpy's :func:`numpy.shares_memory` for layouts; :func:`strided.copyto` uses it to copy
        views that interleave without sharing an element directly, with no temporary.

        Parameters
        ----------
        other : Layout
            The other layout.
        max_work : int or None, optional
            As in :meth:`self_overlaps`.

        Raises
        ------
        TooHardError
            The answer needs more than ``max_work`` steps.

        Examples
        --------
        >>> evens, odds = Layout((5,), (2,)), Layout((5,), (2,), offset=1)
        >>> evens.shares_memory(odds), evens.shares_memory(Layout((3,), (3,)))
        (False, True)
        >>> Layout((2,), itemsize=4).shares_memory(Layout((1,), offset=7, itemsize=1))
        True
        >>> evens4, odds4 = Layout((4,), (2,), bits=4), Layout((4,), (2,), offset=1, bits=4)
        >>> evens4.shares_memory(odds4), evens4.shares_memory(Layout((1,), offset=3))
        (False, True)
        """
        if not isinstance(other, Layout):
            raise TypeError(f"other must be a Layout, got {type(other).__name__}")
        if self._bits < 8 or other._bits < 8:
            # In units of 4 bits: a 4-bit element is one unit, a byte two.
            units_a, units_b = self._units(), other._units()
            delta = other._offset * units_b - self._offset * units_a
            return _core.shares_memory(self._sizes, self._strides, units_a, other._sizes,
                                       other._strides, units_b, delta, max_work)
        delta = other._offset * other._itemsize - self._offset * self._itemsize
        return _core.shares_memory(self._sizes, self._strides, self._itemsize, other._sizes,
                                   other._strides, other._itemsize, delta, max_work)

    def _units(self) -> int:
        """Size of one element in units of 4 bits."""
        return 1 if self._bits == 4 else 2 * self._itemsize

    @property
    def order(self) -> tuple[int, ...]:
        """Physical dimension order, outermost first, inferred from the strides.

        Dimensions are sorted by ``abs(stride)``, largest first. Size-1 and stride-0
        dimensions could sit anywhere; they are placed so that the canonical order is returned
        whenever it fits.

        >>> Layout.packed((2, 3, 4, 5), "NHWC").order
        (0, 2, 3, 1)
        """
        return _core.physical_order(self._sizes, self._strides)

    @property
    def label(self) -> str | None:
        """The named layout (ranks 2-5) whose packed strides these are, else None.

        Size-1 dimensions are ignored and stride-0 dimensions match as broadcast, so several
        labels may fit: the canonical one is preferred (see :attr:`labels`). The label is
        spelled in the canonical letters of the rank (:data:`strided.formats.CANONICAL`): at
        rank 3 in ``DHW`` letters, so an image packed as ``"HWC"`` (sizes ``(C, H, W)``) reads
        ``"HWD"``, the same order; ``label.replace("D", "C")`` spells it in image letters.

        >>> Layout((2, 3, 4, 5), (60, 1, 15, 3)).label
        'NHWC'
        >>> Layout((1, 1, 3, 5), (15, 1, 5, 1)).label
        'NCHW'
        >>> Layout.packed((3, 4, 5), "HWC").label
        'HWD'
        """
        return preferred_label(self._sizes, self._strides)

    @property
    def labels(self) -> tuple[str, ...]:
        """Every named layout that fits, the preferred one first, in the canonical letters
        (at rank 3 ``DHW``, as :attr:`label`: each also names the ``CHW``-letter label with
        ``C`` for ``D``).

        >>> Layout((2, 1, 4, 5), (20, 20, 5, 1)).labels
        ('NCHW', 'NHCW', 'NHWC', 'CNHW')
        """
        return matching_labels(self._sizes, self._strides)

    # ---- element offsets and view algebra ----------------------------------------------------

    def offset_of(self, index: Sequence[int]) -> int:
        """Element offset of ``index``: ``dot(index, strides) + offset``.

        Raises
        ------
        LayoutIndexError
            If an index is outside ``[0, size)`` of its axis.

        Examples
        --------
        >>> Layout((2, 2, 3)).offset_of((1, 0, 1))
        7
        """
        return _core.offset_of(index, self._strides, self._offset, self._sizes)

    def _derive(self, sizes: tuple[int, ...], strides: tuple[int, ...],
                offset: int | None = None) -> Layout:
        return Layout(sizes, strides, offset=self._offset if offset is None else offset,
                      itemsize=self._itemsize, bits=None if self._bits >= 8 else self._bits)

    def permute(self, axes: Sequence[int]) -> Layout:
        """The same elements with the axes reordered: new axis ``k`` is old axis ``axes[k]``.

        >>> Layout((2, 3, 4)).permute((2, 0, 1)).strides
        (1, 12, 4)
        """
        sizes, strides = _core.permute(self._sizes, self._strides, axes)
        return self._derive(sizes, strides)

    def __getitem__(self, key: Any) -> Layout:
        """numpy basic indexing: integers, slices with any step, ``None`` and ``...``.

        >>> L = Layout((4, 6))
        >>> L[1:, ::-2]
        Layout(sizes=(3, 3), strides=(6, -2), offset=11, itemsize=1)
        >>> L[..., None, 2].sizes
        (4, 1)
        """
        sizes, strides, offset = _core.index(self._sizes, self._strides, self._offset, key)
        return self._derive(sizes, strides, offset)

    def broadcast_to(self, sizes: Sequence[int]) -> Layout:
        """Broadcast with numpy's rules: size-1 axes stretch (stride 0), new axes lead.

        >>> Layout((3,)).broadcast_to((2, 3)).strides
        (0, 1)
        """
        sizes = _core.as_sizes(sizes)
        return self._derive(sizes, _core.broadcast_strides(self._sizes, self._strides, sizes))

    def coalesce(self) -> Layout:
        """Merge dimensions that are contiguous with each other and drop size-1 dimensions.

        The result reaches the same offsets in the same (row-major) order with fewer
        dimensions.

        >>> Layout((2, 3, 4)).coalesce()
        Layout(sizes=(24,), strides=(1,), offset=0, itemsize=1)
        >>> Layout((2, 3, 4), (24, 4, 1)).coalesce().sizes
        (2, 12)
        """
        sizes, strides = _core.coalesce(self._sizes, self._strides)
        return self._derive(sizes, strides)

    def reshape(self, sizes: Sequence[int]) -> Layout:
        """A view of the same elements (row-major order) with new sizes; one size may be -1.

        Raises
        ------
        ValueError
            If the element counts differ, or no strides give a view; the message names the
            axes whose strides block it.

        Examples
        --------
        >>> Layout((2, 3, 4)).reshape((6, -1)).strides
        (4, 1)
        >>> Layout((3, 4)).permute((1, 0)).reshape((12,))
        Traceback (most recent call last):
            ...
        ValueError: no view reshapes sizes (4, 3) with strides (1, 4) to (12,): ...
        """
        new_sizes = _core.resolve_sizes(sizes, self._size)
        return self._derive(new_sizes,
                            _core.reshape_strides(self._sizes, self._strides, new_sizes))

    # ---- value semantics ---------------------------------------------------------------------

    def _key(self) -> tuple[Any, ...]:
        return (self._sizes, self._strides, self._offset, self._itemsize, self._bits)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Layout):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        width = f"bits={self._bits}" if self._bits < 8 else f"itemsize={self._itemsize}"
        return (f"Layout(sizes={self._sizes!r}, strides={self._strides!r}, "
                f"offset={self._offset}, {width})")

    def __reduce__(self) -> tuple[Any, ...]:
        fields = (self._sizes, self._strides, self._offset, self._itemsize)
        # byte layouts pickle as they always did (loadable by versions without bits)
        return (_rebuild, (*fields, self._bits) if self._bits < 8 else fields)


def _rebuild(sizes: tuple[int, ...], strides: tuple[int, ...], offset: int,
             itemsize: int, bits: int | None = None) -> Layout:
    return Layout(sizes, strides, offset=offset, itemsize=itemsize, bits=bits)


def buffer_size(
    sizes: Sequence[int], strides: Sequence[int] | None = None, *, itemsize: int | None = None,
    align: int = 4, bits: int | None = None,
) -> int:
    """Bytes of the smallest buffer holding every element, rounded up to ``align``.

    ``(highest - lowest offset + 1) * itemsize`` rounded up to a multiple of ``align``; 0 for an
    empty tensor. With non-negative strides and ``align=4`` this is DirectML's
    ``DMLCalcBufferTensorSize``, computed exactly in 64 bits instead of wrapping at 32. For
    4-bit elements (``bits=4``, element 0 at the start of byte 0): the bytes from the one
    holding the lowest element to the one holding the highest, ``hi // 2 - lo // 2 + 1``,
    rounded up to ``align`` as for any element.

    Parameters
    ----------
    sizes : sequence of int
        Logical sizes.
    strides : sequence of int, optional
        Element strides (default packed row-major); negative strides are allowed.
    itemsize : int
        Bytes per element; required unless ``bits=4`` is given (then it may only be 1).
    align : int, optional
        Round up to a multiple of this many bytes (DirectML: 4; 1 means no rounding).
    bits : int, optional
        Bits per element: ``None`` (``8 * itemsize``), ``8 * itemsize``, or ``4``.

    Examples
    --------
    >>> buffer_size((1, 1, 3, 5), itemsize=2)           # 30 bytes, DWORD-aligned
    32
    >>> buffer_size((2, 3), (5, 1), itemsize=1, align=1)
    8
    >>> buffer_size((4,), (-1,), itemsize=4, align=1)   # negative strides: the span counts
    16
    >>> buffer_size((1, 1, 3, 5), bits=4), buffer_size((1, 1, 3, 5), bits=4, align=1)
    (8, 8)
    >>> buffer_size((3,), (3,), bits=4, align=1)        # elements 0, 3, 6: bytes 0..3
    4
    """
    if bits is None:
        if itemsize is None:
            raise TypeError("buffer_size() needs itemsize= (bytes per element), or bits=4 for "
                            "4-bit elements")
        return _core.buffer_size(sizes, strides, itemsize, align)
    isz, nbits = _element_width(1 if itemsize is None else itemsize, bits)
    if nbits >= 8:
        return _core.buffer_size(sizes, strides, isz, align)
    al = _check_align(align)
    _, _, _, _, _, lo, hi, _ = _core.normalize(sizes, strides, 0, 1)
    return _sub_byte_buffer_size(lo, hi, nbits, al)


def offset_of(index: Sequence[int], strides: Sequence[int], offset: int = 0) -> int:
    """``dot(index, strides) + offset`` in checked 64-bit arithmetic.

    Examples
    --------
    >>> offset_of((1, 0, 1), (6, 3, 1))    # element H of a 2x2x3 DHW tensor
    7
    """
    return _core.offset_of(index, strides, offset)
