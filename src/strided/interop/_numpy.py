"""numpy arrays and the objects read through numpy without a copy: buffer-protocol objects
(bytes, bytearray, memoryview, array.array, mmap, ctypes arrays) and objects exposing numpy's
``__array_interface__`` (protocol version 3: PIL images, ...)."""

from __future__ import annotations

import operator
import re
import reprlib
import sys
from typing import Any

import numpy as np

from strided import _core
from strided.interop import _ndarray
from strided.interop._record import CPU, DLPACK_TYPES, Adapter, MemoryRecord, aliases, moved
from strided.layout import Layout

__all__ = ["ADAPTER", "bfloat16", "describe", "describe_buffer", "describe_interface",
           "exported_buffer", "ndarray_at", "new_array", "numpy_dtype", "pinned",
           "read_interface", "refuse_raw_copy", "resolve_dtype", "type_name_of", "view"]

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


def exported_buffer(x: Any) -> memoryview | None:
    """``x``'s buffer (PEP 3118) as a memoryview, or None when ``x`` exports none.

    Raises
    ------
    ValueError
        ``x`` has the buffer protocol but refused to export (a released memoryview, an
        exporter raising BufferError).
    """
    try:
        return memoryview(x)
    except TypeError:
        return None
    except BufferError as exc:
        raise ValueError(f"{type(x).__name__} has the buffer protocol but refused to export "
                         f"its buffer: {_said(exc)}") from None


def describe_buffer(x: Any, buffer: memoryview | None = None) -> MemoryRecord:
    """The record of a buffer-protocol object, read through numpy without a copy.

    ``buffer``: ``x``'s memoryview when the caller has it (:func:`exported_buffer`) already.
    Its shape, strides and format are numpy's reading of the buffer: a sliced memoryview keeps
    its strides, a cast one its item size, a ctypes array its type.

    Raises
    ------
    TypeError
        ``x`` exports no buffer, or one numpy cannot read without converting (a PEP 3118
        format numpy does not parse, such as ctypes' pointer arrays ``'&<i'`` / ``'<P'``).
    ValueError
        The exporter refused (:func:`exported_buffer`).
    """
    mv = exported_buffer(x) if buffer is None else buffer
    if mv is None:
        raise TypeError(f"{type(x).__name__} has no buffer protocol")
    try:
        arr = np.asarray(mv)
    except (TypeError, ValueError, NotImplementedError, BufferError) as exc:
        raise TypeError(
            f"numpy cannot read the buffer of {type(x).__name__} (format {mv.format!r}, "
            f"{mv.itemsize}-byte items): {_said(exc)}"
        ) from None
    if arr.dtype.itemsize != mv.itemsize or arr.shape != mv.shape:
        raise TypeError(
            f"numpy cannot read the buffer format {mv.format!r} of {type(x).__name__} "
            f"({mv.itemsize}-byte items) without converting it"
        )
    return describe(arr)


# ---- numpy's __array_interface__ (protocol version 3) ---------------------------------------

_INTERFACE = "__array_interface__"
_FIELD = "__array_interface__[{!r}]"
_MISSING = object()
# <byte order><kind><bytes>: the element types strided reads (bool, ints, floats, complexes)
_TYPESTR = re.compile(r"([<>|=])([biufc])([0-9]{1,3})")
_NATIVE_ORDER = "<" if sys.byteorder == "little" else ">"
_INT64_LIMIT = 1 << 63        # byte spans and offsets stay below it
_ADDRESS_LIMIT = 1 << 64      # addresses are below it
_MAX_NDIM = 64


_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 60


def _shown(value: Any) -> str:
    """A caller's value in an error message: its repr, cut short; its type when that fails."""
    try:
        return _REPR.repr(value)
    except Exception:
        return f"<{type(value).__name__} object>"


def _said(exc: BaseException) -> str:
    """What an exception raised by the caller's code says, cut short (its ``__str__`` may fail)."""
    try:
        return _REPR.repr(str(exc))[1:-1]
    except Exception:
        return "(its message could not be read)"


def read_interface(x: Any) -> dict[Any, Any] | None:
    """``x.__array_interface__``, read once and copied into a plain dict that nothing else can
    change; None when ``x`` does not have one (its type defines none, nor does the object).

    Raises
    ------
    ValueError
        The interface is not a dict, or reading it raised (the exception is the cause).
    """
    if isinstance(x, type):
        return None         # a class, not an instance: its property is no interface
    if hasattr(type(x), _INTERFACE):
        # The type claims the protocol (a property, a slot, a class attribute): whatever
        # reading it raises is a broken interface, said so.
        try:
            interface = getattr(x, _INTERFACE)
        except Exception as exc:
            raise ValueError(f"reading {type(x).__name__}.{_INTERFACE} raised "
                             f"{type(exc).__name__}: {_said(exc)}") from exc
    else:
        try:                # an instance attribute
            interface = getattr(x, _INTERFACE, _MISSING)
        except Exception:
            return None
        if interface is _MISSING:
            return None
    if not isinstance(interface, dict):
        raise ValueError(f"{type(x).__name__}.{_INTERFACE} must be a dict (numpy's array "
                         f"interface, version 3), got {type(interface).__name__}")
    # dict.copy reads a dict subclass's own table, calling none of its methods
    return dict.copy(interface)


def _index(value: Any, field: str, *, low: int = 0, high: int = _INT64_LIMIT) -> int:
    """An int field (or entry of one) of the interface, read once: ``low <= value < high``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{field} must be an int, got {type(value).__name__} {_shown(value)}")
    number = operator.index(value)
    if not low <= number < high:
        raise ValueError(f"{field} must be in [{_power(low)}, {_power(high)}), got {number}")
    return number


def _power(bound: int) -> str:
    """A bound of :func:`_index` as written in its error: ``2**63``, ``-2**63 + 1``, ``0``."""
    for exponent in (63, 64):
        for sign, text in ((1, f"2**{exponent}"), (-1, f"-2**{exponent}")):
            if bound == sign * (1 << exponent):
                return text
            if bound == sign * (1 << exponent) + 1:
                return f"{text} + 1"
    return str(bound)


def _ints(value: Any, field: str, *, low: int) -> tuple[int, ...]:
    """A tuple-of-ints field (``shape``, ``strides``), read once."""
    if not isinstance(value, (tuple, list)):
        raise ValueError(f"{_FIELD.format(field)} must be a tuple of ints, got "
                         f"{type(value).__name__} {_shown(value)}")
    entries = tuple(value)          # one snapshot; each entry is read once
    if len(entries) > _MAX_NDIM:
        raise ValueError(f"{_FIELD.format(field)} has {len(entries)} entries: at most "
                         f"{_MAX_NDIM} dimensions")
    return tuple(_index(v, f"{_FIELD.format(field)}[{i}]", low=low, high=_INT64_LIMIT)
                 for i, v in enumerate(entries))


def _interface_dtype(typestr: Any) -> np.dtype:
    """The native numpy dtype of a ``typestr``; TypeError for a type strided does not read
    (not bool / int / uint / float / complex, or not in native byte order)."""
    if not isinstance(typestr, str):
        raise ValueError(f"{_FIELD.format('typestr')} must be a str such as '<f4', got "
                         f"{type(typestr).__name__} {_shown(typestr)}")
    match = _TYPESTR.fullmatch(typestr)
    order, kind, size = match.groups() if match else ("", "", "0")
    try:
        dtype = np.dtype(f"{kind}{size}") if match else None
    except TypeError:
        dtype = None
    if dtype is None or dtype.itemsize != int(size):
        raise TypeError(
            f"{_FIELD.format('typestr')} is {_shown(typestr)}: strided reads bool, integer, "
            f"float and complex elements ('|b1', '<u1', '<i4', '<f4', '<c8', ...), as "
            f"<byte order><kind><bytes>"
        )
    if dtype.itemsize > 1 and order not in (_NATIVE_ORDER, "="):
        what = "'|' (byte order not applicable)" if order == "|" else (
            "big-endian" if order == ">" else "little-endian")
        raise TypeError(
            f"{_FIELD.format('typestr')} is {_shown(typestr)}, {what}: strided reads elements "
            f"of more than one byte in this machine's byte order only ({_NATIVE_ORDER!r}); "
            f"byte-swap the data first (numpy: np.asarray(x).astype({dtype.str!r}))"
        )
    return dtype


def _check_descr(descr: Any, dtype: np.dtype) -> None:
    """``descr`` is ignored when it says what ``typestr`` says: one unnamed field of that type."""
    entry = descr[0] if isinstance(descr, list) and len(descr) == 1 else None
    if (isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[0], str)
            and entry[0] == "" and isinstance(entry[1], str)):
        try:
            if np.dtype(entry[1]) == dtype:
                return
        except TypeError:
            pass
    raise ValueError(
        f"{_FIELD.format('descr')} is {_shown(descr)}, which disagrees with typestr "
        f"{dtype.str!r}: strided reads plain elements (descr [('', typestr)] or none), not "
        f"structured ones"
    )


def _byte_reach(shape: tuple[int, ...], strides: tuple[int, ...],
                itemsize: int) -> tuple[int, int]:
    """Bytes reached below and above the first element's address: ``(lo <= 0, hi > 0)``, hi
    one past the last byte of the highest element (for a non-empty array)."""
    lo = sum((n - 1) * s for n, s in zip(shape, strides) if s < 0 and n > 0)
    hi = sum((n - 1) * s for n, s in zip(shape, strides) if s > 0 and n > 0) + itemsize
    return lo, hi


def describe_interface(x: Any, interface: dict[Any, Any]) -> MemoryRecord:
    """The record of an object exposing numpy's ``__array_interface__`` (version 3), read from
    ``interface`` (what :func:`read_interface` gave: every field is read once, here).

    The memory is the object's, not copied: ``data`` is either an ``(address, readonly)``
    tuple, trusted as numpy trusts it (an address cannot be bounds-checked; address 0 is
    refused for a non-empty array), or an object with the buffer protocol (``None``: ``x``
    itself), whose contiguous bytes, from ``offset`` on, must hold every element. The record's
    owner is an ndarray over that memory which keeps ``x`` (and a buffer export of ``data``)
    alive: a bytearray cannot be resized under it.

    Raises
    ------
    TypeError
        A ``typestr`` strided does not read (not native byte order, not a number or bool), or
        a ``mask`` (strided reads every element).
    ValueError
        A field is missing, of the wrong type or out of range (named, with its value); strides
        that are not whole elements; elements outside the ``data`` buffer.
    """
    field = _FIELD.format
    version = interface.get("version", _MISSING)
    if (isinstance(version, (bool, np.bool_)) or not isinstance(version, (int, np.integer))
            or operator.index(version) != 3):
        got = "none" if version is _MISSING else f"{type(version).__name__} {_shown(version)}"
        raise ValueError(f"{field('version')} must be 3 (numpy's array interface protocol, "
                         f"version 3), got {got}")
    if interface.get("mask") is not None:
        raise TypeError(f"{field('mask')} is set: strided reads every element and cannot "
                        f"honour a mask; fill the masked elements first "
                        f"(numpy.ma: x.filled())")
    if "shape" not in interface or "typestr" not in interface:
        missing = "shape" if "shape" not in interface else "typestr"
        raise ValueError(f"{type(x).__name__}.{_INTERFACE} has no {missing!r}: the protocol "
                         f"requires 'shape' and 'typestr'")
    dtype = _interface_dtype(interface["typestr"])
    descr = interface.get("descr")
    if descr is not None:
        _check_descr(descr, dtype)
    shape = _ints(interface["shape"], "shape", low=0)
    itemsize = dtype.itemsize
    strides_value = interface.get("strides")
    if strides_value is None:           # C order
        strides, step = [], itemsize
        for n in reversed(shape):
            strides.append(step)
            step *= max(n, 1)
        byte_strides = tuple(reversed(strides))
    else:
        byte_strides = _ints(strides_value, "strides", low=-_INT64_LIMIT + 1)
        if len(byte_strides) != len(shape):
            raise ValueError(f"{field('strides')} {byte_strides} has {len(byte_strides)} "
                             f"entries but shape {shape} has {len(shape)}")
    for axis, (n, s) in enumerate(zip(shape, byte_strides)):
        if n > 1 and s % itemsize:
            raise ValueError(f"{field('strides')} {byte_strides}: byte stride {s} of axis "
                             f"{axis} is not a multiple of the itemsize {itemsize} (typestr "
                             f"{dtype.str!r}): the array cannot be described in whole elements")
    size = 1
    for n in shape:
        size *= n
    lo, hi = _byte_reach(shape, byte_strides, itemsize)
    if size and (-lo >= _INT64_LIMIT or hi >= _INT64_LIMIT):
        raise ValueError(f"{field('strides')} {byte_strides} with shape {shape} reach "
                         f"{lo}..{hi} bytes from the first element: outside int64")
    data = interface.get("data")
    offset_value = interface.get("offset")
    if isinstance(data, tuple):
        data = tuple(data)          # one snapshot of a tuple subclass
        if offset_value is not None and _index(offset_value, field("offset")) != 0:
            raise ValueError(f"{field('offset')} is {_shown(offset_value)} but 'data' is an "
                             f"(address, readonly) tuple: the protocol allows an offset only "
                             f"into a buffer object (the address points at the first element)")
        if len(data) != 2:
            raise ValueError(f"{field('data')} must be an (address, readonly) pair or an "
                             f"object with the buffer protocol, got a tuple of {len(data)}")
        address = _index(data[0], f"{field('data')}[0] (the address)", high=_ADDRESS_LIMIT)
        readonly_value = data[1]
        if isinstance(readonly_value, (bool, np.bool_)) or (
                type(readonly_value) is int and 0 <= readonly_value <= 1):
            readonly = bool(readonly_value)
        else:
            raise ValueError(f"{field('data')}[1] (readonly) must be a bool, got "
                             f"{type(readonly_value).__name__} {_shown(readonly_value)}")
        if size and address == 0:
            raise ValueError(f"{field('data')} has address 0 (NULL) for shape {shape}: no "
                             f"element can be there")
        if size and not (0 <= address + lo and address + hi <= _ADDRESS_LIMIT):
            raise ValueError(f"{field('data')} address {address:#x} with strides "
                             f"{byte_strides} reaches outside the address space")
        keep: Any = x
    else:
        offset = 0 if offset_value is None else _index(offset_value, field("offset"))
        source = x if data is None else data
        try:
            raw = np.frombuffer(source, np.uint8)
        except TypeError:
            what = ("is None (the object's own buffer), but the object" if data is None
                    else f"is a {type(data).__name__}, which")
            raise ValueError(f"{field('data')} {what} has no buffer protocol: 'data' must be "
                             f"an (address, readonly) tuple or an object with the buffer "
                             f"protocol") from None
        except (ValueError, BufferError) as exc:
            raise ValueError(f"{field('data')} ({type(source).__name__}) exports no "
                             f"contiguous buffer: {_said(exc)}") from None
        length = raw.nbytes
        if size and not (0 <= offset + lo and offset + hi <= length):
            raise ValueError(
                f"{field('shape')} {shape} with byte strides {byte_strides} and offset {offset} "
                f"reaches bytes {offset + lo}..{offset + hi - 1} of 'data', which holds "
                f"{length} bytes ({type(source).__name__})")
        if not size and offset > length:
            raise ValueError(f"{field('offset')} {offset} lies past the end of 'data' "
                             f"({length} bytes)")
        readonly = not raw.flags.writeable
        address = raw.ctypes.data + offset
        keep = (x, raw)             # raw holds the buffer export: the memory stays put
    # a stride that cannot matter (a dim of at most one element, an empty array) is 0, as
    # numpy's strides of an empty array are
    strides_in_elements = tuple(s // itemsize if n > 1 and size else 0
                                for n, s in zip(shape, byte_strides))
    layout = Layout(shape, strides_in_elements, itemsize=itemsize)
    if not size:    # no element is read: no address of the caller's is handed to numpy
        empty = np.empty(1, dtype)
        address, keep = empty.ctypes.data, (x, empty)
    return describe(ndarray_at(address, layout, dtype, readonly=readonly, owner=keep))


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
    owner = record.owner            # always an ndarray here: buffers and interfaces are wrapped
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

    def alike_addresses(self, arrays: tuple[Any, ...], record: MemoryRecord) -> list[int] | None:
        if not arrays or arrays[0] is not record.owner:     # a buffer, read through numpy
            return None
        return _ndarray.alike_addresses(arrays, record.owner)

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
