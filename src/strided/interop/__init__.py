"""Zero-copy views across numpy, bytes-like objects, ``__array_interface__`` objects (PIL
images), torch and any DLPack / array-API library.

Every supported array is read into one :class:`MemoryRecord` (pointer, layout, extent, device,
writeable, owner) by the adapter of its library; :func:`view` checks a layout against that
record before it builds anything, then asks the same adapter for an array of base's library.

One dispatch idiom: :func:`describe` recognises an array by its type and hands it to its
library's adapter module; from then on every library question is asked of the record's
adapter (``record.adapter``), which :data:`~strided.interop._record.ADAPTERS`, the one table
from library name to adapter, gives.

Libraries are recognised by type without being imported: a torch tensor can only exist when
torch is in ``sys.modules``, and any other library is reached through ``__dlpack__``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, overload

import numpy as np

from strided.interop import _dlpack, _numpy, _torch
from strided.interop._ndarray import layout_of_array, view_fast
from strided.interop._record import ADAPTERS, MemoryRecord, check_view
from strided.interop._subbyte import (
    SubByteArray,
    SubByteExporter,
    from_dlpack_subbyte,
    to_dlpack_subbyte,
)
from strided.layout import Layout

if TYPE_CHECKING:  # annotations only: torch is never imported here at run time
    from strided._typing import BytesLike, NDArray, Tensor

__all__ = ["MemoryRecord", "SubByteArray", "SubByteExporter", "container_layouts", "describe",
           "from_dlpack_subbyte", "layout_of", "to_dlpack_subbyte", "view"]

_BYTES_LIKE = (bytes, bytearray, memoryview)

# The one table, filled once here with every adapter this module reads arrays with: no record
# exists before, as only these adapters make records.
ADAPTERS.update((adapter.library, adapter)
                for adapter in (_numpy.ADAPTER, _torch.ADAPTER, _dlpack.ADAPTER))


def describe(x: Any) -> MemoryRecord:
    """Read any supported array into a :class:`MemoryRecord`.

    Supported: numpy arrays (and numpy scalars, read-only), ``bytes`` / ``bytearray`` /
    ``memoryview`` and other buffer-protocol objects (``array.array``, ``mmap``, ctypes
    arrays), torch tensors with strided layout on any device, any object with ``__dlpack__``,
    and any object exposing numpy's ``__array_interface__`` (version 3: PIL images).
    Buffer-protocol and ``__array_interface__`` objects are read through numpy without a
    copy: their record is numpy's (``library == "numpy"``), over the object's own memory,
    which it keeps alive; a new array made from one (:func:`strided.relayout`, ...) is a
    numpy array.

    An object is tried as, in this order: a numpy array, a torch tensor, a bytes-like object,
    a numpy scalar, an object with ``__dlpack__``, an object with the buffer protocol, an
    object with ``__array_interface__``. The interface is read once here (a property that
    computes a new dict at every access is asked once), and every field is checked before any
    memory is touched: a ``data`` buffer object must hold every element; an ``(address,
    readonly)`` pair is trusted, as numpy trusts it.

    Raises
    ------
    TypeError
        ``x`` is none of those; a buffer numpy cannot read; an ``__array_interface__`` whose
        ``typestr`` is not a bool / number in native byte order, or that sets ``mask``.
    ValueError
        It is, but has no layout strided can state: byte strides that are not a multiple of
        the itemsize, a sparse or nested tensor, a sub-byte DLPack dtype, a malformed capsule,
        a malformed ``__array_interface__`` (the message names the field and its value), an
        exporter that refuses its buffer.

    Examples
    --------
    >>> import numpy as np
    >>> from strided.interop import describe
    >>> r = describe(np.zeros((2, 3), np.float32)[:, ::2])
    >>> r.layout, r.extent, r.writeable, r.library
    (Layout(sizes=(2, 2), strides=(3, 2), offset=0, itemsize=4), (0, 5), True, 'numpy')
    """
    if isinstance(x, np.ndarray):
        return _numpy.describe(x)
    if _torch.is_tensor(x):
        return _torch.describe(x)
    if isinstance(x, _BYTES_LIKE):
        return _numpy.describe_buffer(x)
    if isinstance(x, np.generic):
        # numpy scalars are immutable and np.asarray copies one: view that copy read-only.
        scalar = np.asarray(x)
        scalar.flags.writeable = False
        return _numpy.describe(scalar)
    if hasattr(type(x), "__dlpack__"):
        return _dlpack.describe(x)
    buffer = _numpy.exported_buffer(x)
    if buffer is not None:
        return _numpy.describe_buffer(x, buffer)
    interface = _numpy.read_interface(x)      # read once: every field comes from this copy
    if interface is not None:
        return _numpy.describe_interface(x, interface)
    raise TypeError(
        f"{type(x).__module__}.{type(x).__qualname__} is not an array strided can read: "
        f"expected a numpy array, a bytes-like or other buffer-protocol object, an object "
        f"with __array_interface__ (a PIL image), a torch tensor or an object with __dlpack__"
    )


def layout_of(x: Any, *, bits: int | None = None) -> Layout:
    """The :class:`~strided.Layout` of an array: offset 0 at its first element, itemsize set.

    Parameters
    ----------
    x : array
        A numpy array, bytes-like or other buffer-protocol object, object with
        ``__array_interface__`` (a PIL image), torch tensor (any device) or DLPack array.
    bits : {None, 4}, optional
        4: ``x`` is a uint8 *container* of 4-bit elements (two a byte, low nibble first):
        the layout of its elements, its dimension of byte stride 1 holding two a byte, the
        other strides doubled (``bits=4``). An array cannot say that it holds 4-bit
        elements, so this is asked for. A container holding an odd count along that
        dimension shows one element more (the last high nibble).

    Returns
    -------
    Layout
        Sizes and *element* strides (numpy's byte strides are divided by the itemsize).

    Raises
    ------
    TypeError
        ``x`` is not a supported array.
    ValueError
        ``x`` has no element layout (see :func:`describe`).

    Examples
    --------
    >>> import numpy as np
    >>> import strided as st
    >>> a = np.zeros((4, 6), dtype=np.int16)
    >>> st.layout_of(a)
    Layout(sizes=(4, 6), strides=(6, 1), offset=0, itemsize=2)
    >>> st.layout_of(a.T[::-1])
    Layout(sizes=(6, 4), strides=(-1, 6), offset=0, itemsize=2)
    >>> st.layout_of(b"abc")
    Layout(sizes=(3,), strides=(1,), offset=0, itemsize=1)
    >>> st.layout_of(np.zeros((2, 3, 32), np.uint8), bits=4)     # NCHW64's last two dims
    Layout(sizes=(2, 3, 64), strides=(192, 64, 1), offset=0, bits=4)
    """
    if bits is not None:
        return container_layouts(_container_record(x, bits))[0]
    # plain ndarrays and CPU tensors are read from their C structs; the rest is described
    layout = layout_of_array(x)
    return describe(x).layout if layout is None else layout


def _container_record(x: Any, bits: Any) -> Layout:
    """The byte layout of a uint8 container of ``bits``-bit elements (4 only)."""
    if type(bits) is not int or bits != 4:
        raise ValueError(f"bits must be None or 4 (int4 / uint4 elements), got {bits!r}")
    record = describe(x)
    if record.dtype != (1, 8, 1):
        raise TypeError(f"x has dtype {record.adapter.dtype_name(x, record)}: a container of "
                        f"4-bit elements is a uint8 array of the packed bytes")
    return record.layout


def container_layouts(layout: Layout) -> list[Layout]:
    """Every layout of 4-bit elements a uint8 container of byte layout ``layout`` may hold,
    the likeliest first: its dimension of byte stride 1 (or, when none has more than one
    byte, one of size 1) holds two elements a byte (or one fewer: an odd count); the other
    strides are doubled. ValueError when no dimension of several bytes is contiguous."""
    sizes, strides = layout.sizes, layout.strides
    if layout.ndim == 0:
        raise ValueError("x is 0-d: a container of 4-bit elements has a dimension of bytes "
                         "holding two elements each")
    candidates = ([d for d in reversed(range(layout.ndim)) if sizes[d] > 1 and strides[d] == 1]
                  + [d for d in reversed(range(layout.ndim))
                     if sizes[d] <= 1 or layout.size == 0])     # (an empty one: any)
    if layout.size and not any(sizes[d] > 1 for d in candidates) and any(n > 1 for n in sizes):
        raise ValueError(f"x has byte strides {strides} for shape {sizes}: a container of "
                         f"4-bit elements needs one dimension of contiguous bytes (stride 1), "
                         f"which holds two elements a byte")
    out = []
    for odd in (False, True):
        for unit in candidates:
            new = list(sizes)
            new[unit] = max(0, 2 * new[unit] - (1 if odd and new[unit] else 0))
            out.append(Layout(tuple(new), tuple(1 if d == unit else 2 * s
                                                for d, s in enumerate(strides)), bits=4))
    return out


# Typed so that the view keeps base's library: torch in, torch out; numpy (or bytes) in, numpy
# out. Other libraries (DLPack / array API) type as Any.
@overload
def view(base: Tensor, layout: Layout, *, copy: bool | None = None) -> Tensor: ...
@overload
def view(base: NDArray[Any] | BytesLike, layout: Layout, *, copy: bool | None = None
         ) -> NDArray[Any]: ...
@overload
def view(base: Any, layout: Layout, *, copy: bool | None = None) -> Any: ...
def view(base: Any, layout: Layout, *, copy: bool | None = None) -> Any:
    """An array of base's own library over base's memory, laid out as ``layout``.

    Offsets in ``layout`` count elements of ``base`` from its first element. The layout is
    checked against base's memory before anything is built: its itemsize must be base's, and
    every element it reaches must lie inside base (for torch, inside base's storage).

    Parameters
    ----------
    base : array
        A numpy array, a bytes-like or other buffer-protocol object, or an object with
        ``__array_interface__`` (the view is an ``np.ndarray``, read-only when base is), a
        torch tensor (a ``torch.as_strided`` view on base's device, in the autograd
        graph), or an array of any library with ``__dlpack__`` and ``__array_namespace__``
        (the view comes from that library's ``from_dlpack``). A view whose elements alias
        each other (``layout.overlaps``: a stride 0, sliding windows) is read-only wherever
        the library can say so (numpy; DLPack's read-only flag), as ``np.broadcast_to``'s
        result is; torch views cannot be flagged.
    layout : Layout
        Sizes, element strides (negative, zero and padded are all fine), offset and itemsize.
    copy : bool or None, optional
        None (default): zero-copy whenever base's library can express the layout, a copy
        otherwise (torch cannot hold negative strides; some DLPack consumers refuse padding,
        broadcast or negative strides). False: never copy, raise ValueError instead. True:
        always an independent copy, writeable even when base is not.

    Returns
    -------
    array
        An array of base's library that shares base's memory (unless copied), keeping base
        alive.

    Raises
    ------
    TypeError
        ``base`` is not a supported array, ``layout`` not a Layout, ``copy`` not a bool/None.
    ValueError
        The itemsizes differ; the layout reaches outside base (the message gives the span and
        the buffer's length); or, with ``copy=False``, the library cannot hold the layout.

    Examples
    --------
    A 2x3 view with a row stride of 4 over a 10-element buffer: a padded layout, no copy.

    >>> import numpy as np
    >>> import strided as st
    >>> buf = np.arange(10, dtype=np.float32)
    >>> v = st.view(buf, st.Layout((2, 3), (4, 1), offset=1, itemsize=4))
    >>> v
    array([[1., 2., 3.],
           [5., 6., 7.]], dtype=float32)
    >>> v[1, 2] = -1
    >>> buf[7]
    np.float32(-1.0)

    Reversed and broadcast strides are views too; reaching outside the buffer is an error.

    >>> st.view(buf, st.Layout((2, 3), (-3, 0), offset=9, itemsize=4))
    array([[9., 9., 9.],
           [6., 6., 6.]], dtype=float32)
    >>> st.view(buf, st.Layout((3, 4), itemsize=4))
    Traceback (most recent call last):
        ...
    ValueError: layout span (0, 11) lies outside base's buffer: it holds 10 elements of 4 bytes, ...
    """
    if copy is not None and not isinstance(copy, bool):
        raise TypeError(f"copy must be None, True or False, got {type(copy).__name__} {copy!r}")
    if copy is not True:        # plain ndarrays, plain CPU tensors, bytes and bytearrays
        fast = view_fast(base, layout)
        if fast is None and type(base) in (bytes, bytearray):   # numpy's uint8 over them,
            fast = view_fast(np.frombuffer(base, np.uint8), layout)   # as describe reads them
        if fast is not None:
            return fast
    if isinstance(layout, Layout) and layout.bits == 4:
        raise ValueError(
            f"layout has 4-bit elements, which no array library holds as strided elements "
            f"(numpy's and torch's smallest is a byte): there is no view of {layout!r}. The "
            f"packed bytes are a uint8 container (its innermost dimension halved; "
            f"relayout(x, order, dtype='int4') makes one); read the values with "
            f"copyto(out, container, src_dtype='int4') or unpack_bits, export them with "
            f"strided.interop.to_dlpack_subbyte")
    record = describe(base)
    check_view(layout, record)
    return record.adapter.view(base, record, layout, copy)
