"""The one record every adapter fills: where an array's memory is and how it is laid out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from strided import _core, _dtypes
from strided.layout import Layout

__all__ = ["CPU", "DLPACK_TYPES", "HOST_DEVICES", "MemoryRecord", "aliases", "check_view",
           "device_name", "moved", "type_name"]

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
        capsule flagged read-only).
    owner : object
        The object that keeps the memory alive; hold it as long as ``ptr`` is used.
    library : str
        The adapter that read it: ``"numpy"`` (numpy arrays and buffer-protocol objects),
        ``"torch"`` or ``"dlpack"``.
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
