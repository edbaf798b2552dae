"""What copying asks of an array's library, answered by the adapter that read the array.

:mod:`strided.copy` works on :class:`MemoryRecord` objects and never names a library: wherever
the rules of numpy, torch and DLPack libraries differ (which elements a raw byte copy may
move, what a destination must not be, how a new array is made and handed back, how the
library copies memory the CPU cannot reach, how it learns that a tensor was written), it asks
here, and each question is answered by the record's adapter (``_numpy``, ``_torch``,
``_dlpack``).

Every function dispatches on ``record.library``; a library with nothing to say about a
question gets the neutral answer (nothing to refuse, nothing to resolve, nothing to tell).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from strided.interop import _dlpack, _numpy, _torch
from strided.interop._record import MemoryRecord, type_name
from strided.layout import Layout

__all__ = [
    "allocate",
    "check_destination",
    "device_converter",
    "device_copier",
    "dtype_name",
    "graph_copier",
    "hand_over",
    "pinned",
    "refuse_raw_copy",
    "resolve_dtype",
    "resolved",
    "same_dtype",
    "type_name",
    "written",
]


def refuse_raw_copy(record: MemoryRecord, name: str) -> None:
    """Raise when the array's bytes cannot be copied as they are.

    numpy arrays of Python objects (references need their reference counts): TypeError.
    Quantized torch tensors (the bytes mean nothing without the quantizer): ValueError.
    """
    if record.library == "numpy":
        _numpy.refuse_raw_copy(record, name)
    elif record.library == "torch":
        _torch.refuse_raw_copy(record, name)


def check_destination(record: MemoryRecord, name: str) -> None:
    """Raise when the library forbids writing the array outside its own ops (beyond the
    record's ``writeable``, ``immutable`` and ``lazy``, which copy checks itself): a torch
    tensor that requires grad."""
    if record.library == "torch":
        _torch.check_destination(record, name)


def resolved(record: MemoryRecord) -> MemoryRecord:
    """The record of memory holding the values the array shows: for a torch tensor with a lazy
    conjugate or negative bit, a resolved copy; otherwise the record itself."""
    if record.library == "torch":
        return _torch.resolved(record)
    return record


def pinned(record: MemoryRecord, name: str) -> int:
    """The address of the record's first element for the engine, read again from the array
    by code that runs none of the caller's Python, and checked against the record (address,
    sizes, strides): ValueError naming ``name`` when the array changed since it was read.

    Call it once every check is done, right before the engine: from there to the kernel only
    strided's own code runs, so the memory cannot be resized or freed under the copy. A DLPack
    record needs no second read: the consumed capsule is strided's own, and its producer must
    keep the memory as it was until strided lets it go.
    """
    if record.library == "numpy":
        return _numpy.pinned(record, name)
    if record.library == "torch":
        return _torch.pinned(record, name)
    return record.ptr


def written(record: MemoryRecord) -> None:
    """Tell the library that the array's memory was written (torch: the version counter that
    autograd checks, as its own in-place ops bump)."""
    if record.library == "torch":
        _torch.written(record)


def same_dtype(a: MemoryRecord, b: MemoryRecord) -> bool:
    """Same element type: the DLPack dtypes when both have one, else the library's own dtypes.

    A dtype without a DLPack equivalent (numpy's byte-swapped, structured, string or datetime
    types; torch's float8 or quantized types) only matches the same dtype of the same library.
    """
    if a.layout.itemsize != b.layout.itemsize:
        return False
    if a.dtype is not None and b.dtype is not None:
        return a.dtype == b.dtype
    if a.library != b.library or a.library == "dlpack":
        return False
    return bool(a.owner.dtype == b.owner.dtype)


def dtype_name(x: Any, record: MemoryRecord) -> str:
    """The dtype of ``x`` as its library writes it, for error messages."""
    if record.library == "numpy":
        return str(record.owner.dtype)     # a bytes-like object too: the dtype numpy reads
    dtype = getattr(x, "dtype", None)
    return str(dtype) if dtype is not None else f"DLPack {record.dtype}"


def device_copier(dst: MemoryRecord, src: MemoryRecord) -> Callable[[Any, Any, bool], None] | None:
    """The library's own copy for a pair the CPU does not copy, or None for a host pair.

    Two torch tensors of which one is off the CPU are copied by torch: the callable takes
    ``(dst, src, share_memory)`` and copies after the caller's checks, outside autograd. Any
    other pair is the CPU's (or refused, when an array is not in host memory).
    """
    if dst.library == src.library == "torch" and _torch.copies_itself(dst, src):
        return _torch.device_copy
    return None


def device_converter(dst: MemoryRecord, src: MemoryRecord) -> Callable[..., None] | None:
    """The library's own conversion for a pair the CPU does not copy (see
    :func:`device_copier`), or None for a host pair. It takes ``(dst, src, share_memory)``
    followed by the arguments of ``strided._convert.convert_memory`` after the addresses,
    sizes and strides, and converts by the same rules."""
    if dst.library == src.library == "torch" and _torch.copies_itself(dst, src):
        return _torch.device_convert
    return None


def graph_copier(record: MemoryRecord) -> Callable[[Any, Any], None] | None:
    """The library's own copy ``(dst, src)`` that records dst in src's autograd graph, when the
    array takes part in one (a torch tensor that requires grad); else None."""
    if record.library == "torch":
        return _torch.graph_copier(record)
    return None


def resolve_dtype(record: MemoryRecord, dtype: Any) -> tuple[str, Any]:
    """(engine type name, the library's dtype) of a ``dtype`` argument for a new array of the
    record's library: a numpy dtype-like for numpy and host DLPack libraries (their arrays are
    built in numpy and handed over), a torch dtype or its numpy name for torch.

    Raises
    ------
    TypeError
        Not a dtype, one strided does not convert, or bfloat16 for a DLPack library (numpy
        cannot hand bfloat16 over DLPack).
    """
    if record.library == "torch":
        return _torch.resolve_dtype(dtype)
    if record.library == "numpy":
        return _numpy.resolve_dtype(dtype)
    return _dlpack.resolve_dtype(dtype)


def allocate(like: Any, record: MemoryRecord, layout: Layout, order: tuple[int, ...] | None,
             zero: bool, dtype: Any = None) -> Any:
    """A new array laid out as ``layout``, for a result of like's library and dtype (or
    ``dtype``, as :func:`resolve_dtype` gives it).

    numpy and torch make their own (torch on like's device); for any other library the array
    is a host numpy array, given to the library by :func:`hand_over` once written. ``order``:
    the layout is packed in that physical order (the library's own way of making it is used);
    ``zero``: fill with zeros.

    Raises
    ------
    ValueError
        The library cannot hold the layout (torch: negative strides), or like is a DLPack array
        off the host.
    """
    if record.library == "torch":
        return _torch.allocate(like, layout, order, zero, dtype)
    if record.library == "numpy":
        return _numpy.new_array(record.owner.dtype if dtype is None else dtype, layout, order,
                                zero)
    return _dlpack.allocate_on_host(like, record, layout, order, zero, dtype)


def hand_over(like: Any, record: MemoryRecord, out: Any, layout: Layout) -> Any:
    """The array :func:`allocate` made, once written, as an array of like's library."""
    if record.library == "dlpack":
        return _dlpack.hand_over(like, out, layout)
    return out
