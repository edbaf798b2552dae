"""The one record every adapter fills (where an array's memory is and how it is laid out),
and the one set of questions every adapter answers (:class:`Adapter`).

One idiom dispatches every library question: :data:`ADAPTERS` maps a record's ``library`` to
the :class:`Adapter` of that library, and ``record.adapter`` looks it up. An adapter answers
only what its library has to say; every other question gets :class:`Adapter`'s neutral answer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from strided import _core, _dtypes
from strided.layout import Layout

__all__ = ["ADAPTERS", "CPU", "DLPACK_TYPES", "HOST_DEVICES", "Adapter", "MemoryRecord",
           "aliases", "check_view", "device_name", "moved", "type_name"]

CPU = (1, 0)
"""The DLPack device of host memory: ``(kDLCPU, 0)``."""

HOST_DEVICES = frozenset({1, 3, 11})
"""DLPack device types whose memory the CPU addresses directly: CPU, CUDA and ROCm pinned host."""

DLPACK_TYPES = _dtypes.DLPACK_TYPES
"""DLPack's ``(code, bits, lanes)`` of every element type strided converts, by the name numpy,
torch and the conversion engine give it (strided._dtypes, the one table)."""

_NAMES_OF_DLPACK = {dlpack: name for name, dlpack in DLPACK_TYPES.items()}


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    """What strided knows about an array: its memory, its layout, and who owns them.

    Attributes
    ----------
    ptr : int
        Address of the array's first element (index ``(0, ..., 0)``), in the device's address
        space. May be 0 for an empty array.
    layout : Layout
        The array's layout, offset 0 at ``ptr``, itemsize set.
    extent : tuple of int
        ``(lowest, highest)`` element offsets, relative to ``ptr``, of the memory the array's
        owner holds: views must stay inside. For numpy and DLPack arrays this is the array's own
        span; for torch tensors it is the whole storage. ``(0, -1)`` when there is none.
    device : tuple of int
        ``(device_type, device_id)`` with DLPack's device codes (CPU is ``(1, 0)``).
    writeable : bool
        False when the memory must not be written (a read-only numpy array, ``bytes``, a DLPack
        capsule flagged read-only, an ``__array_interface__`` saying readonly or over a
        read-only buffer: a PIL image).
    owner : object
        The object that keeps the memory alive; hold it as long as ``ptr`` is used.
    library : str
        The adapter that read it: ``"numpy"`` (numpy arrays, buffer-protocol objects and
        objects with ``__array_interface__``, read through numpy), ``"torch"`` or ``"dlpack"``.
    dtype : tuple of int or None
        DLPack ``(code, bits, lanes)`` of the elements when the library has an equivalent.
    lazy : str or None
        ``"conj"`` or ``"neg"`` when the memory holds values the array shows conjugated or
        negated (torch's lazy bits): a raw reader of ``ptr`` must resolve or refuse.
    immutable : bool
        True when the array's library declares its arrays immutable (jax) although the memory
        was handed over writeable: nobody may write it, but views for that library's own
        ``from_dlpack`` are still fine.
    """

    ptr: int
    layout: Layout
    extent: tuple[int, int]
    device: tuple[int, int]
    writeable: bool
    owner: Any = field(repr=False)
    library: str
    dtype: tuple[int, int, int] | None = None
    lazy: str | None = None
    immutable: bool = False

    @property
    def in_host_memory(self) -> bool:
        """Whether the CPU may read and write the memory (CPU, or an accelerator's pinned host
        memory): strided's own copies need it."""
        return self.device[0] in HOST_DEVICES

    @property
    def buffer_elements(self) -> int:
        """Number of elements of the owner's memory (``extent`` end minus start, plus one)."""
        return self.extent[1] - self.extent[0] + 1

    @property
    def adapter(self) -> Adapter:
        """The :class:`Adapter` of the library that read the array (``ADAPTERS[library]``):
        whoever holds the record asks it every library question, never the library's name."""
        return ADAPTERS[self.library]


class Adapter:
    """What strided asks of an array's library, with the neutral answers.

    One instance per library (``_numpy.ADAPTER``, ``_torch.ADAPTER``, ``_dlpack.ADAPTER``) is
    listed in :data:`ADAPTERS` under its ``library`` name; a record reaches it as
    ``record.adapter``. Wherever the rules of numpy, torch and DLPack libraries differ (which
    elements a raw byte copy may move, what a destination must not be, how a new array is made
    and handed back, how the library copies memory the CPU cannot reach, how it learns that an
    array was written) :mod:`strided.copy` asks the record's adapter, so it never names a
    library. A library with nothing to say about a question keeps the neutral answer defined
    here (nothing to refuse, nothing to resolve, nothing to tell); the questions every library
    must answer itself (views, dtypes, allocation) raise NotImplementedError here.

    Why a record's adapter rather than module functions that switch on ``record.library``: the
    string switch then lives in one table, and adding a library means one subclass and one
    entry, with no question forgotten (each has its neutral answer).
    """

    __slots__ = ()

    library: str = ""
    """The name records of this library carry in ``MemoryRecord.library``."""

    fast_copy: Callable[..., bool] | None = None
    """A compiled copy that :func:`strided.copyto` tries before anything is described: it takes
    copyto's arguments (dst, src, num_threads, casting, scale, shift, axis), returns True when
    it made the whole copy, and False, having written nothing, for anything it does not handle
    alone. None: the library has no fast path."""

    fast_convert: Callable[..., bool] | None = None
    """The same for a converting copy (dst, src, casting, scale, shift, axis, num_threads), the
    arguments already read into plain values; None: no fast path."""

    def refuse_raw_copy(self, record: MemoryRecord, name: str) -> None:
        """Raise when the array's bytes cannot be copied as they are (named ``name``)."""

    def check_destination(self, record: MemoryRecord, name: str) -> None:
        """Raise when the library forbids writing the array outside its own ops (beyond the
        record's ``writeable``, ``immutable`` and ``lazy``, which copy checks itself)."""

    def resolved(self, record: MemoryRecord) -> MemoryRecord:
        """The record of memory holding the values the array shows: the record itself, or a
        resolved copy's when the memory holds something else (a lazy bit)."""
        return record

    def pinned(self, record: MemoryRecord, name: str) -> int:
        """The address of the record's first element for the engine, read again from the
        array by code that runs none of the caller's Python and checked against the record;
        ValueError naming ``name`` when the array changed since it was read.

        Call it once every check is done, right before the engine: from there to the kernel
        only strided's own code runs. Neutral answer: ``record.ptr`` (memory that cannot
        change under strided, as a consumed DLPack capsule's).
        """
        return record.ptr

    def alike_addresses(self, arrays: tuple[Any, ...], record: MemoryRecord) -> list[int] | None:
        """The address of the first element of every array of ``arrays`` when each is of the
        library's plain kind with the element type, sizes and strides of ``record`` (the
        record of ``arrays[0]``), read by compiled code that runs none of the caller's Python;
        None when one is not, or when the library has no such reader (neutral answer).

        :func:`strided.stack` describes the first image and only locates the others this
        way; it calls this again right before the engine, as :meth:`pinned`, and refuses a
        batch whose addresses changed in between.
        """
        return None

    def written(self, record: MemoryRecord) -> None:
        """Tell the library that the array's memory was written."""

    def same_dtype(self, a: MemoryRecord, b: MemoryRecord) -> bool:
        """Whether two arrays of this library, of one itemsize and without DLPack dtypes to
        compare, have the same element type. Neutral answer: False (nothing to tell by)."""
        return False

    def dtype_name(self, x: Any, record: MemoryRecord) -> str:
        """The dtype of ``x`` as its library writes it, for error messages."""
        dtype = getattr(x, "dtype", None)
        return str(dtype) if dtype is not None else f"DLPack {record.dtype}"

    def device_copier(self, dst: MemoryRecord,
                      src: MemoryRecord) -> Callable[[Any, Any, bool], None] | None:
        """The library's own copy ``(dst, src, share_memory)`` of two of its arrays that the
        CPU does not copy, or None (the CPU copies them, or refuses memory it cannot reach)."""
        return None

    def device_converter(self, dst: MemoryRecord,
                         src: MemoryRecord) -> Callable[..., None] | None:
        """The library's own conversion of two of its arrays that the CPU does not copy (see
        :meth:`device_copier`), or None. It takes ``(dst, src, share_memory)`` followed by the
        arguments of ``strided._convert.convert_memory`` after the addresses, sizes and
        strides, and converts by the same rules."""
        return None

    def graph_copier(self, record: MemoryRecord) -> Callable[[Any, Any], None] | None:
        """The library's own copy ``(dst, src)`` that records dst in src's autograd graph,
        when the array takes part in one; else None."""
        return None

    def resolve_dtype(self, dtype: Any) -> tuple[str, Any]:
        """(engine type name, the library's dtype) of a ``dtype`` argument for a new array of
        the library; TypeError when it is not a dtype strided converts."""
        raise NotImplementedError

    def allocate(self, like: Any, record: MemoryRecord, layout: Layout,
                 order: tuple[int, ...] | None, zero: bool, dtype: Any = None) -> Any:
        """A new array laid out as ``layout``, for a result of like's library and dtype (or
        ``dtype``, as :meth:`resolve_dtype` gives it). ``order``: the layout is packed in that
        physical order (the library's own way of making it is used); ``zero``: fill with
        zeros. ValueError when the library cannot hold the layout."""
        raise NotImplementedError

    def hand_over(self, like: Any, record: MemoryRecord, out: Any, layout: Layout) -> Any:
        """The array :meth:`allocate` made, once written, as an array of like's library."""
        return out

    def view(self, base: Any, record: MemoryRecord, layout: Layout, copy: bool | None) -> Any:
        """An array of base's library over ``record``'s memory laid out as ``layout`` (already
        checked against the record), as :func:`strided.view` describes."""
        raise NotImplementedError


ADAPTERS: dict[str, Adapter] = {}
"""The one dispatch table: library name -> its :class:`Adapter`. Filled by
:mod:`strided.interop` with the adapter of each library it reads, before any record exists."""


def type_name(record: MemoryRecord) -> str | None:
    """The conversion engine's name of the record's element type, or None when strided does
    not convert it (a DLPack dtype it has no kernel for, or a dtype without a DLPack code)."""
    return None if record.dtype is None else _NAMES_OF_DLPACK.get(record.dtype)


def check_view(layout: object, record: MemoryRecord) -> Layout:
    """Check that ``layout`` may be viewed over ``record``'s memory; return it.

    The itemsize must be the array's element size, and every element offset the layout reaches
    must lie inside ``record.extent``. An empty layout reaches no element; its offset may still
    be at most one past the end, like a pointer.

    Raises
    ------
    TypeError
        ``layout`` is not a :class:`~strided.Layout`.
    ValueError
        A different itemsize, or a span outside the memory (the message names both).
    """
    if not isinstance(layout, Layout):
        raise TypeError(
            f"layout must be a strided.Layout, got {type(layout).__name__}; build one with "
            f"strided.Layout(sizes, strides, offset=..., itemsize=...)"
        )
    base = record.layout
    if layout.itemsize != base.itemsize:
        raise ValueError(
            f"layout.itemsize is {layout.itemsize} but base's elements are {base.itemsize} "
            f"bytes: a view keeps base's element type"
        )
    first, last = record.extent
    lo, hi = layout.span
    inside = (first <= layout.offset <= last + 1) if layout.size == 0 else (first <= lo
                                                                           and hi <= last)
    if not inside:
        reach = (f"offset {layout.offset} (an empty layout)" if layout.size == 0
                 else f"span ({lo}, {hi})")
        raise ValueError(
            f"layout {reach} lies outside base's buffer: it holds {record.buffer_elements} "
            f"elements of {base.itemsize} bytes, at element offsets {first}..{last} from "
            f"base's first element"
        )
    return layout


def aliases(layout: Layout) -> bool:
    """Whether two elements of ``layout`` share memory; True when that is too costly to tell
    (a read-only view is the safe answer, a writeable one could corrupt).

    The one rule of every adapter whose library can mark a view read-only (numpy arrays,
    DLPack's read-only flag): a view whose elements alias each other is read-only, as numpy's
    own ``broadcast_to`` and ``sliding_window_view`` are.
    """
    try:
        return layout.overlaps
    except _core.TooHardError:
        return True


def device_name(x: Any, record: MemoryRecord) -> str:
    """The device of ``x`` for an error message: the library's own name and DLPack's code."""
    device = getattr(x, "device", None)
    return f"{device} (DLPack device {record.device})" if device is not None else str(
        record.device)


def moved(name: str) -> ValueError:
    """The error of an array that changed between being read and being copied."""
    return ValueError(
        f"{name} changed while strided was reading the call's other arguments (its memory "
        f"was moved, or its shape or strides changed, by code that ran in between): nothing "
        f"was written; do not resize arrays from the callbacks of a copy's arguments"
    )
