"""Zero-copy views across numpy, bytes-like objects, torch and any DLPack / array-API library.

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
from strided.interop._ndarray import layout_of_array
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

__all__ = ["MemoryRecord", "SubByteArray", "SubByteExporter", "describe", "from_dlpack_subbyte",
           "layout_of", "to_dlpack_subbyte", "view"]

_BYTES_LIKE = (bytes, bytearray, memoryview)

# The one table, filled once here with every adapter this module reads arrays with: no record
# exists before, as only these adapters make records.
ADAPTERS.update((adapter.library, adapter)
                for adapter in (_numpy.ADAPTER, _torch.ADAPTER, _dlpack.ADAPTER))


def describe(x: Any) -> MemoryRecord:
    """Read any supported array into a :class:`MemoryRecord`.

    Supported: numpy arrays (and numpy scalars, read-only), ``bytes`` / ``bytearray`` /
    ``memoryview`` and other buffer-protocol objects, torch tensors with strided layout on any
    device, and any object with ``__dlpack__``.

    Raises
    ------
    TypeError
        ``x`` is none of those.
    ValueError
        It is, but has no layout strided can state: byte strides that are not a multiple of
        the itemsize, a sparse or nested tensor, a sub-byte DLPack dtype, a malformed capsule.

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
    try:
        return _numpy.describe_buffer(x)
    except TypeError:
        pass
    raise TypeError(
        f"{type(x).__module__}.{type(x).__qualname__} is not an array strided can read: "
        f"expected a numpy array, a bytes-like object, a torch tensor or an object with "
        f"__dlpack__"
    )


def layout_of(x: Any) -> Layout:
    """The :class:`~strided.Layout` of an array: offset 0 at its first element, itemsize set.

    Parameters
    ----------
    x : array
        A numpy array, bytes-like object, torch tensor (any device) or DLPack array.

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
    """
    # plain ndarrays and CPU tensors are read from their C structs; the rest is described
    layout = layout_of_array(x)
    return describe(x).layout if layout is None else layout


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
        A numpy array or bytes-like object (the view is an ``np.ndarray``, read-only when base
        is), a torch tensor (a ``torch.as_strided`` view on base's device, in the autograd
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
    record = describe(base)
    check_view(layout, record)
    return record.adapter.view(base, record, layout, copy)
