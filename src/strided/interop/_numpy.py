"""numpy arrays and buffer-protocol objects (bytes, bytearray, memoryview, array.array, mmap)."""

from __future__ import annotations

from typing import Any

import numpy as np

from strided import _core
from strided.interop import _ndarray
from strided.interop._record import CPU, DLPACK_TYPES, Adapter, MemoryRecord, aliases, moved
from strided.layout import Layout

__all__ = ["ADAPTER", "bfloat16", "describe", "describe_buffer", "ndarray_at", "new_array",
           "numpy_dtype", "pinned", "refuse_raw_copy", "resolve_dtype", "type_name_of", "view"]

# DLPack dtype codes of numpy's kinds: int, uint, float, complex, bool.
_DLPACK_CODES = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}


_NUMPY_KINDS = {code: kind for kind, code in _DLPACK_CODES.items()}


def _dlpack_dtype(dtype: np.dtype) -> tuple[int, int, int] | None:
    """DLPack's (code, bits, lanes) for numpy's dtype; DLPack types are native-endian.
    ml_dtypes' bfloat16 is DLPack's bfloat16."""
    if dtype.kind == "V" and dtype.itemsize == 2 and dtype.type.__module__ == "ml_dtypes" \
            and dtype.name == "bfloat16":
        return DLPACK_TYPES["bfloat16"]
    code = _DLPACK_CODES.get(dtype.kind) if dtype.isnative else None
    return None if code is None else (code, 8 * dtype.itemsize, 1)


def bfloat16() -> np.dtype:
    """numpy's bfloat16, from ml_dtypes. TypeError when ml_dtypes is not installed."""
    try:
        import ml_dtypes
    except ImportError:
        raise TypeError("numpy has no bfloat16 of its own: install ml_dtypes "
                        "(pip install ml-dtypes) for numpy arrays of bfloat16") from None
    return np.dtype(ml_dtypes.bfloat16)


def resolve_dtype(dtype: Any) -> tuple[str, np.dtype]:
    """(engine type name, numpy dtype) of a ``dtype`` argument: anything ``np.dtype`` takes,
    ``"bfloat16"`` (ml_dtypes), or a torch dtype of the same name.

    Raises
    ------
    TypeError
        Not a dtype, or one strided does not convert (byte-swapped, structured, ...).
    """
    if type(dtype).__module__ == "torch":
        dtype = str(dtype).removeprefix("torch.")
    if dtype == "bfloat16":
        resolved = bfloat16()
    else:
        try:
            resolved = np.dtype(dtype)
        except TypeError:
            raise TypeError(f"dtype {dtype!r} is not a numpy dtype") from None
    name = type_name_of(resolved)
    if name is None:
        raise TypeError(f"dtype {resolved} is not one of the types strided converts "
                        f"({', '.join(DLPACK_TYPES)})")
    return name, resolved


def type_name_of(dtype: np.dtype) -> str | None:
    """The engine's name of a numpy dtype, or None when strided does not convert it."""
    dlpack = _dlpack_dtype(dtype)
    return next((name for name, code in DLPACK_TYPES.items() if code == dlpack), None)


def numpy_dtype(dlpack_dtype: tuple[int, int, int] | None) -> np.dtype:
    """numpy's dtype for DLPack's (code, bits, lanes); ValueError when numpy has none."""
    code, bits, lanes = dlpack_dtype or (-1, 0, 0)
    if (code, bits, lanes) == DLPACK_TYPES["bfloat16"]:
        return bfloat16()
    kind = _NUMPY_KINDS.get(code) if lanes == 1 and bits % 8 == 0 else None
    if kind is None:
        raise ValueError(f"numpy has no dtype for DLPack dtype code {code}, {bits} bits, "
                         f"{lanes} lanes")
    return np.dtype(f"{kind}{bits // 8}")


def describe(x: np.ndarray) -> MemoryRecord:
    """The record of a numpy array: its own span is the memory a view may use."""
    itemsize = x.dtype.itemsize
    if itemsize == 0:
        raise ValueError(f"numpy dtype {x.dtype} has no bytes per element: it has no layout")
    strides = _core.element_strides(x.strides, x.shape, itemsize)
    sizes = x.shape
    try:                        # the buffer protocol gives the address in one C call...
        ptr, readonly = _ndarray.buffer_address(x)
    except (BufferError, ValueError, TypeError, NotImplementedError):
        # ...but numpy exports no buffer of some dtypes (datetime64, timedelta64).
        ptr, readonly = x.__array_interface__["data"]
    layout = Layout(sizes, strides, itemsize=itemsize)
    lo, hi = layout.span
    return MemoryRecord(
        ptr=ptr, layout=layout, extent=(lo, hi), device=CPU, writeable=not readonly,
        owner=x, library="numpy", dtype=_dlpack_dtype(x.dtype),
    )


def describe_buffer(x: Any) -> MemoryRecord:
    """The record of a buffer-protocol object, read through numpy without a copy."""
    mv = memoryview(x)
    arr = np.asarray(mv)
    if arr.dtype.itemsize != mv.itemsize or arr.shape != mv.shape:
        raise TypeError(
            f"numpy cannot read the buffer format {mv.format!r} of {type(x).__name__} "
            f"({mv.itemsize}-byte items) without converting it"
        )
    return describe(arr)


def pinned(record: MemoryRecord, name: str) -> int:
    """The address of the array's first element, read again from numpy's array struct (no
    Python code runs), after checking that the array still has the record's address, shape and
    strides. ValueError otherwise: the caller's code moved or reshaped it since it was read."""
    layout = record.layout
    address = _ndarray.current_address(record.owner, layout.sizes, layout.strides)
    if address != record.ptr:
        raise moved(name)
    return address


def refuse_raw_copy(record: MemoryRecord, name: str) -> None:
    """Refuse arrays of Python objects: a raw copy would duplicate references without their
    reference counts."""
    if record.owner.dtype.hasobject:
        raise TypeError(
            f"{name} holds Python objects (numpy dtype {record.owner.dtype}): strided copies "
            f"raw memory, and copying references without their reference counts would corrupt "
            f"it; use numpy's own copy (np.copyto) for object arrays"
        )


class _Interface:
    """Hands numpy an ``__array_interface__``; numpy keeps it (and so ``owner``) as ``.base``."""

    __slots__ = ("__array_interface__", "owner")

    def __init__(self, interface: dict[str, Any], owner: Any) -> None:
        self.__array_interface__ = interface
        self.owner = owner


def ndarray_at(ptr: int, layout: Layout, dtype: np.dtype, *, readonly: bool,
               owner: Any) -> np.ndarray:
    """An ndarray over host memory: element ``(0, ..., 0)`` at ``ptr + layout.byte_offset``.

    The caller has checked that every element lies in memory ``owner`` keeps alive.
    """
    interface = {
        "version": 3,
        "shape": layout.sizes,
        "strides": layout.byte_strides,
        "typestr": dtype.str,
        "descr": dtype.descr,
        "data": (ptr + layout.byte_offset, readonly),
    }
    arr = np.asarray(_Interface(interface, owner))
    if arr.dtype != dtype:          # structured or subarray dtypes lose detail in typestr
        arr = arr.view(dtype)
    return arr


def view(base: Any, record: MemoryRecord, layout: Layout, copy: bool | None) -> np.ndarray:
    """A numpy array over ``record``'s memory, laid out as ``layout`` (already checked).

    Read-only when base is, and when the layout's elements alias each other (a stride 0, or
    strides that reach one offset twice), as numpy's own ``broadcast_to`` and
    ``sliding_window_view`` are: a write through one element would change others.
    """
    owner = record.owner            # always an ndarray here: describe_buffer wraps buffers
    if copy:
        return ndarray_at(record.ptr, layout, owner.dtype, readonly=True,
                          owner=owner).copy(order="K")
    readonly = not record.writeable or aliases(layout)
    return ndarray_at(record.ptr, layout, owner.dtype, readonly=readonly, owner=owner)


def new_array(dtype: np.dtype, layout: Layout, order: tuple[int, ...] | None,
              zero: bool) -> np.ndarray:
    """A new writeable array of ``dtype`` laid out as ``layout`` (an array of its own memory).

    With ``order`` (the layout is packed in that physical order, outermost first) it is a plain
    array of the physical shape, transposed: numpy then reports exactly the layout's strides.
    Without, a buffer of ``layout.nbytes`` bytes holds the layout's elements at its offsets.
    ``zero``: fill with zeros (padding that must not hold stale memory), else uninitialised.
    """
    make = np.zeros if zero else np.empty
    if order is not None:
        physical = make(tuple(layout.sizes[axis] for axis in order), dtype)
        return physical.transpose(tuple(order.index(axis) for axis in range(len(order))))
    buffer = make(layout.nbytes // dtype.itemsize, dtype)
    return ndarray_at(buffer.ctypes.data, layout, dtype, readonly=False, owner=buffer)


class NumpyAdapter(Adapter):
    """numpy's answers to strided's questions (:class:`~strided.interop._record.Adapter`),
    for numpy arrays and the buffer-protocol objects read through numpy.

    Its ``fast_copy`` and ``fast_convert`` are the compiled fast paths of
    :func:`strided.copyto` (``_ndarray.copyto_arrays`` and ``convert_arrays``): they read plain
    ndarrays (and, for a plain copy, plain CPU torch tensors and buffer-protocol objects) from
    their C structs, and decline anything else, having written nothing.
    """

    __slots__ = ()

    library = "numpy"
    fast_copy = staticmethod(_ndarray.copyto_arrays)
    fast_convert = staticmethod(_ndarray.convert_arrays)

    def refuse_raw_copy(self, record: MemoryRecord, name: str) -> None:
        refuse_raw_copy(record, name)

    def pinned(self, record: MemoryRecord, name: str) -> int:
        return pinned(record, name)

    def same_dtype(self, a: MemoryRecord, b: MemoryRecord) -> bool:
        return bool(a.owner.dtype == b.owner.dtype)

    def dtype_name(self, x: Any, record: MemoryRecord) -> str:
        return str(record.owner.dtype)     # a bytes-like object too: the dtype numpy reads

    def resolve_dtype(self, dtype: Any) -> tuple[str, np.dtype]:
        return resolve_dtype(dtype)

    def allocate(self, like: Any, record: MemoryRecord, layout: Layout,
                 order: tuple[int, ...] | None, zero: bool, dtype: Any = None) -> np.ndarray:
        return new_array(record.owner.dtype if dtype is None else dtype, layout, order, zero)

    def view(self, base: Any, record: MemoryRecord, layout: Layout,
             copy: bool | None) -> np.ndarray:
        return view(base, record, layout, copy)


ADAPTER = NumpyAdapter()
"""The numpy adapter: ``ADAPTERS["numpy"]``."""
