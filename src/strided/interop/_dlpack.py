"""Any array with ``__dlpack__``: read through a consumed capsule, viewed through a new one."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from strided.formats import strides_agree
from strided.interop import _capsule
from strided.interop._numpy import ndarray_at, new_array, numpy_dtype
from strided.interop._numpy import resolve_dtype as resolve_numpy_dtype
from strided.interop._record import Adapter, MemoryRecord, aliases, device_name
from strided.layout import Layout

__all__ = ["ADAPTER", "Exporter", "allocate_on_host", "describe", "from_host", "hand_over",
           "resolve_dtype", "view"]

# Devices whose data pointers are plain addresses, so an offset may be folded into the pointer.
_ADDRESSABLE = {1, 2, 3, 10, 11, 13}     # CPU, CUDA, CUDA host, ROCm, ROCm host, CUDA managed


def _request_capsule(x: Any) -> Any:
    """Ask ``x`` for a capsule: versioned when it understands ``max_version``, else legacy."""
    try:
        return x.__dlpack__(max_version=_capsule.DLPACK_VERSION)
    except TypeError:           # a producer from before DLPack 1.0 knows no max_version
        return x.__dlpack__()


def describe(x: Any) -> MemoryRecord:
    """Consume a capsule of ``x``; the record's owner keeps the producer's memory alive."""
    tensor = _capsule.consume_dlpack(_request_capsule(x))
    code, bits, lanes = tensor.dtype
    if (bits * lanes) % 8:
        raise ValueError(
            f"DLPack dtype (code {code}, {bits} bits, {lanes} lanes) packs several elements "
            f"per byte: strided describes whole-byte elements only"
        )
    itemsize = bits * lanes // 8
    layout = Layout(tensor.shape, tensor.strides, itemsize=itemsize)
    lo, hi = layout.span
    return MemoryRecord(
        ptr=tensor.data + tensor.byte_offset, layout=layout, extent=(lo, hi),
        device=tensor.device, writeable=not tensor.readonly, owner=tensor, library="dlpack",
        dtype=tensor.dtype, immutable=_declared_immutable(x),
    )


def _declared_immutable(x: Any) -> bool:
    """Whether x's library forbids writing its arrays (jax), whatever its capsule says.

    jax exports writeable capsules (legacy DLPack has no read-only flag) of arrays that its
    users rely on never changing; array-api-compat knows which libraries promise that.
    """
    # array-api-compat imports no library; is_writeable_array is False for any object it does
    # not know as an array, so ask only of the arrays it knows
    from array_api_compat import is_array_api_obj, is_writeable_array

    return is_array_api_obj(x) and not is_writeable_array(x)


class Exporter:
    """An object ``from_dlpack`` accepts: ``layout`` over ``record``'s memory, kept alive."""

    __slots__ = ("_base", "_layout", "_record")

    def __init__(self, base: Any, record: MemoryRecord, layout: Layout) -> None:
        self._base = base
        self._record = record
        self._layout = layout

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._record.device

    def __dlpack__(self, *, stream: Any = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
        record, layout = self._record, self._layout
        if dl_device is not None and tuple(dl_device) != tuple(record.device):
            raise BufferError(f"this memory is on device {record.device}, not {dl_device}")
        if copy:
            raise BufferError("strided exports views: it does not copy inside __dlpack__")
        version = None
        if max_version is not None and max_version[0] >= 1:
            major, minor = _capsule.DLPACK_VERSION
            version = (major, min(minor, max_version[1]) if max_version[0] == major else minor)
        elif not record.writeable:
            raise BufferError("read-only memory cannot be exported as a legacy DLPack capsule, "
                              "which has no read-only flag")
        tensor = record.owner
        data, byte_offset = tensor.data, tensor.byte_offset + layout.byte_offset
        if record.device[0] in _ADDRESSABLE:
            # A plain address: fold the offset into the pointer. Some consumers (torch 2.13)
            # refuse any non-zero byte_offset, and it cannot be negative.
            data, byte_offset = data + byte_offset, 0
        elif byte_offset < 0:
            raise BufferError(f"cannot offset a pointer on device {record.device} by "
                              f"{byte_offset} bytes")
        return _capsule.make_dlpack_capsule(
            (self._base, tensor), data, byte_offset, layout.sizes, layout.strides,
            record.device, tensor.dtype, readonly=not record.writeable, version=version,
        )


def _namespace(base: Any) -> Any:
    get = getattr(base, "__array_namespace__", None)
    if get is None:
        raise TypeError(
            f"{type(base).__name__} has __dlpack__ but no __array_namespace__: strided cannot "
            f"tell which library's from_dlpack builds the view"
        )
    return get()


def _host_copy(record: MemoryRecord, layout: Layout) -> np.ndarray:
    """A packed host copy of ``layout`` over the record's memory, as a numpy array."""
    if not record.in_host_memory:
        raise ValueError(f"cannot copy memory on device {record.device} from the host")
    arr = ndarray_at(record.ptr, layout, numpy_dtype(record.dtype), readonly=True,
                     owner=record.owner)
    return arr.copy(order="K")


def view(base: Any, record: MemoryRecord, layout: Layout, copy: bool | None) -> Any:
    """An array of base's own library, built by its ``from_dlpack`` over a new capsule.

    When the library refuses the layout (some accept only certain strides) or cannot hold it
    (torch: negative strides), ``copy=None`` gives a packed copy, ``copy=False`` ValueError.
    A layout whose elements alias each other is exported with DLPack's read-only flag; a
    consumer that asks only for legacy capsules (no flag) then gets a copy, as for read-only
    memory.
    """
    xp = _namespace(base)
    if record.writeable and aliases(layout):
        # elements that alias each other: the capsule says read-only, as a numpy view would
        record = replace(record, writeable=False)
    torch_like = "torch" in getattr(xp, "__name__", "")
    refusal = None
    if not (torch_like and any(s < 0 for s in layout.strides)):  # torch aborts on those
        try:
            out = xp.from_dlpack(Exporter(base, record, layout))
        except (BufferError, ValueError, TypeError, RuntimeError, NotImplementedError) as exc:
            refusal = f"{xp.__name__}.from_dlpack refused it ({exc})"
        else:
            return xp.asarray(out, copy=True) if copy else out
    else:
        refusal = "torch cannot hold negative strides"
    if copy is False:
        raise ValueError(f"{xp.__name__} cannot take this view without a copy: {refusal}; "
                         f"pass copy=None to copy")
    return xp.from_dlpack(_host_copy(record, layout))


def from_host(like: Any, arr: np.ndarray) -> Any:
    """``arr`` handed to like's library through its ``from_dlpack`` (which may copy it).

    Raises
    ------
    ValueError
        The library refuses the array (the message gives its reason).
    """
    xp = _namespace(like)
    try:
        return xp.from_dlpack(arr)
    except (BufferError, ValueError, TypeError, RuntimeError, NotImplementedError) as exc:
        raise ValueError(
            f"{xp.__name__}.from_dlpack refused a host array of shape {arr.shape} and byte "
            f"strides {arr.strides} ({exc})"
        ) from None


def resolve_dtype(dtype: Any) -> tuple[str, np.dtype]:
    """(engine type name, numpy dtype) of a ``dtype`` argument for a new array of a DLPack
    library: its dtype objects (jax's are numpy's; array-api-strict's wrap one) or any numpy
    dtype-like. bfloat16 is refused: numpy cannot hand it over DLPack."""
    name, resolved = resolve_numpy_dtype(getattr(dtype, "_np_dtype", dtype))
    if name == "bfloat16":
        raise TypeError("bfloat16 results are not supported for DLPack libraries other than "
                        "torch: strided builds them in numpy, which cannot hand bfloat16 over "
                        "DLPack; convert to float32, or use torch")
    return name, resolved


def allocate_on_host(like: Any, record: MemoryRecord, layout: Layout,
                     order: tuple[int, ...] | None, zero: bool,
                     dtype: np.dtype | None = None) -> np.ndarray:
    """A host numpy array of like's dtype (or ``dtype``) laid out as ``layout``, for
    :func:`hand_over`.

    Raises
    ------
    ValueError
        ``like`` is not in host memory (strided does not allocate on other devices), or numpy
        has no dtype for its DLPack dtype.
    """
    if not record.in_host_memory:
        raise ValueError(f"x is on device {device_name(like, record)}: strided builds new "
                         f"arrays of this library on the host only")
    return new_array(numpy_dtype(record.dtype) if dtype is None else dtype, layout, order, zero)


def hand_over(like: Any, arr: np.ndarray, layout: Layout) -> Any:
    """``arr`` given to like's library (:func:`from_host`), refused unless it keeps ``layout``.

    Raises
    ------
    ValueError
        The library refuses the array, or its ``from_dlpack`` gives other strides.
    """
    out = from_host(like, arr)
    got = describe(out).layout
    same = got.sizes == layout.sizes and (
        layout.size == 0 or strides_agree(layout.sizes, layout.strides, got.strides))
    if not same:
        raise ValueError(
            f"{_namespace(like).__name__} cannot hold the layout asked for (sizes "
            f"{layout.sizes}, strides {layout.strides}): its from_dlpack gave strides "
            f"{got.strides}"
        )
    return out


class DLPackAdapter(Adapter):
    """The answers for any other library, reached through ``__dlpack__``
    (:class:`~strided.interop._record.Adapter`): new arrays are built in host numpy memory and
    handed over with the library's ``from_dlpack``; every other question keeps its neutral
    answer (a consumed capsule's memory cannot change under strided: ``pinned`` is its
    ``ptr``)."""

    __slots__ = ()

    library = "dlpack"

    def resolve_dtype(self, dtype: Any) -> tuple[str, np.dtype]:
        return resolve_dtype(dtype)

    def allocate(self, like: Any, record: MemoryRecord, layout: Layout,
                 order: tuple[int, ...] | None, zero: bool, dtype: Any = None) -> np.ndarray:
        return allocate_on_host(like, record, layout, order, zero, dtype)

    def hand_over(self, like: Any, record: MemoryRecord, out: Any, layout: Layout) -> Any:
        return hand_over(like, out, layout)

    def view(self, base: Any, record: MemoryRecord, layout: Layout, copy: bool | None) -> Any:
        return view(base, record, layout, copy)


ADAPTER = DLPackAdapter()
"""The adapter of every other library: ``ADAPTERS["dlpack"]``."""
