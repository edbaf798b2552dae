"""DLPack for 4-bit elements: exporting a packed ``int4``/``uint4`` layout over a byte
container, and reading a producer's 4-bit tensor.

DLPack describes a 4-bit tensor with dtype ``(kDLInt or kDLUInt, bits=4, lanes=1)``; its shape,
strides and ``byte_offset`` are as for any tensor, strides counted in (4-bit) elements, and by
default the elements are *packed*: element ``e`` (the element offset ``dot(index, strides)``)
lies in byte ``data + byte_offset + e // 2``, low nibble when ``e`` is even. That is exactly
strided's own 4-bit layout (``Layout(..., bits=4)``; the documentation's concepts page,
"Sub-byte elements"). DLPack 1.1's flag ``DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED``
(``1 << 2``) says instead that each element fills a whole byte (one value per byte, in its low
bits).

Since ``data + byte_offset`` is a byte address, element ``(0, ..., 0)`` always starts a byte:
a layout whose first element is a high nibble (an odd offset) has no DLPack form, and neither
has any layout that is not byte-addressable (an odd stride other than one unit stride, a
negative stride): exporting one is a ValueError naming the offset or stride.

Examples
--------
>>> import numpy as np
>>> import strided as st
>>> from strided.interop import from_dlpack_subbyte, to_dlpack_subbyte
>>> container = st.pack_bits(np.array([[1, -2, 3, 4], [5, 6, -7, -8]], dtype=np.int8))
>>> exported = to_dlpack_subbyte(container, st.Layout((2, 4), bits=4), dtype="int4")
>>> data, layout, dtype, padded = from_dlpack_subbyte(exported)
>>> layout, dtype, padded
(Layout(sizes=(2, 4), strides=(4, 1), offset=0, bits=4), 'int4', False)
>>> np.shares_memory(data, container), st.unpack_bits(data)
(True, array([[ 1, -2,  3,  4],
       [ 5,  6, -7, -8]], dtype=int8))
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from strided import _dtypes
from strided.formats import strides_agree
from strided.interop import _capsule
from strided.interop._dlpack import _request_capsule
from strided.interop._numpy import ndarray_at
from strided.interop._record import HOST_DEVICES, MemoryRecord, aliases
from strided.layout import Layout

__all__ = ["DLPACK_FLAG_IS_SUBBYTE_TYPE_PADDED", "SubByteArray", "SubByteExporter",
           "from_dlpack_subbyte", "to_dlpack_subbyte"]

DLPACK_FLAG_IS_SUBBYTE_TYPE_PADDED = 1 << 2
"""DLPack 1.1's flag (versioned capsules only): each sub-byte element fills a whole byte."""

# Devices whose data pointers are plain addresses (the byte offset is folded into the pointer,
# as strided's other exports do: some consumers refuse a non-zero byte_offset).
_ADDRESSABLE = {1, 2, 3, 10, 11, 13}     # CPU, CUDA, CUDA host, ROCm, ROCm host, CUDA managed
_BYTE_TYPES = {(0, 8, 1), (1, 8, 1)}      # int8, uint8: a container's element types
_NAMES = {sub.dlpack: sub.name for sub in _dtypes.SUB_BYTE.values()}


def _describe(x: Any) -> MemoryRecord:
    from strided.interop import describe

    return describe(x)


class SubByteExporter:
    """A 4-bit layout over a byte container, as an object any ``from_dlpack`` accepts.

    Made by :func:`to_dlpack_subbyte`, which checks everything once; ``__dlpack__`` then makes
    a fresh capsule per call (versioned when the consumer passes ``max_version`` with major
    version 1 or more, legacy otherwise), and each capsule keeps the container alive until its
    consumer calls the deleter.
    """

    __slots__ = ("_container", "_data", "_dtype", "_layout", "_readonly", "_record")

    def __init__(self, container: Any, record: MemoryRecord, layout: Layout, dtype: str,
                 readonly: bool) -> None:
        self._container = container
        self._record = record
        self._layout = layout
        self._dtype = dtype
        self._readonly = readonly
        # element (0, ..., 0) is at byte offset // 2 of the container (the offset is even)
        self._data = record.ptr + layout.offset // 2

    @property
    def layout(self) -> Layout:
        """The 4-bit layout exported (offsets from the container's first byte)."""
        return self._layout

    @property
    def dtype(self) -> str:
        """``"int4"`` or ``"uint4"``."""
        return self._dtype

    def __repr__(self) -> str:
        return (f"<SubByteExporter {self._dtype} sizes={self._layout.sizes} "
                f"strides={self._layout.strides} device={self._record.device} "
                f"readonly={self._readonly}>")

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._record.device

    def __dlpack__(self, *, stream: Any = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
        """A new DLPack capsule: dtype ``(kDLInt/kDLUInt, 4, 1)``, element strides, packed.

        Raises
        ------
        BufferError
            ``dl_device`` is another device, ``copy=True`` (strided exports views only), or
            the memory is read-only and the consumer asks for a legacy capsule (which cannot
            say read-only).
        """
        record = self._record
        if dl_device is not None and tuple(dl_device) != tuple(record.device):
            raise BufferError(f"this memory is on device {record.device}, not {dl_device}")
        if copy:
            raise BufferError("strided exports views: it does not copy inside __dlpack__")
        version = None
        if max_version is not None and max_version[0] >= 1:
            major, minor = _capsule.DLPACK_VERSION
            version = (major, min(minor, max_version[1]) if max_version[0] == major else minor)
        elif self._readonly:
            raise BufferError("read-only memory cannot be exported as a legacy DLPack capsule, "
                              "which has no read-only flag")
        layout = self._layout
        return _capsule.make_dlpack_capsule(
            (self._container, record.owner), self._data, 0, layout.sizes, layout.strides,
            record.device, _dtypes.SUB_BYTE[self._dtype].dlpack, readonly=self._readonly,
            version=version,
        )


def to_dlpack_subbyte(container: Any, layout: Layout, dtype: str = "int4") -> SubByteExporter:
    """Export a 4-bit layout over a byte container through DLPack.

    The container holds packed bytes (element ``e`` of the layout in byte ``e // 2``, low
    nibble first: strided's contract, :func:`strided.pack_bits`'s output). The result is an
    object with ``__dlpack__`` / ``__dlpack_device__``: pass it to a consumer's
    ``from_dlpack``, or call its ``__dlpack__()`` for a capsule. The tensor it describes has
    dtype ``(kDLInt, 4, 1)`` for ``int4`` or ``(kDLUInt, 4, 1)`` for ``uint4``, the layout's
    sizes and element strides, and its data pointer at the byte of element ``(0, ..., 0)``
    (``byte_offset`` 0: the offset is folded into the pointer, as strided's other exports do).
    No copy is made: the consumer sees the container's memory, which each capsule keeps alive.

    Parameters
    ----------
    container : array
        The bytes: a uint8 (or int8) numpy array, bytes-like object, torch tensor (any device
        with plain addresses: CPU, CUDA, ROCm) or DLPack array. Offsets of ``layout`` count
        4-bit elements from its first byte.
    layout : Layout
        A :class:`~strided.Layout` with ``bits=4`` that is byte-addressable (offset even,
        strides >= 0, every stride but one unit stride even; see
        :attr:`~strided.Layout.is_byte_addressable`).
    dtype : {"int4", "uint4"}, optional
        The element type the consumer sees (default ``"int4"``).

    Returns
    -------
    SubByteExporter
        Read-only (DLPack's flag) when the container is read-only or its library declares its
        arrays immutable, or when the layout's elements alias each other (a stride 0).

    Raises
    ------
    TypeError
        ``layout`` is not a Layout, ``dtype`` not int4/uint4, or ``container`` not an array of
        bytes.
    ValueError
        ``layout`` is not of 4-bit elements, is not byte-addressable (the message names the odd
        offset or the odd or negative stride), or reaches outside the container's bytes; or
        the container is on a device without plain addresses.

    Examples
    --------
    >>> import numpy as np
    >>> import strided as st
    >>> from strided.interop import to_dlpack_subbyte
    >>> container = np.zeros((4, 3), dtype=np.uint8)          # 4 rows of 6 int4 elements
    >>> e = to_dlpack_subbyte(container, st.Layout((4, 4), (6, 1), offset=2, bits=4))
    >>> e
    <SubByteExporter int4 sizes=(4, 4) strides=(6, 1) device=(1, 0) readonly=False>
    >>> to_dlpack_subbyte(container, st.Layout((4, 5), (6, 1), offset=1, bits=4))
    Traceback (most recent call last):
        ...
    ValueError: layout cannot be exported through DLPack: offset 1 of 4-bit elements is odd: ...
    """
    name = _dtypes.sub_byte(dtype, "dtype").name
    if not isinstance(layout, Layout):
        raise TypeError(f"layout must be a strided.Layout with bits=4, got "
                        f"{type(layout).__name__}; build one with strided.Layout(sizes, "
                        f"strides, offset=..., bits=4)")
    if layout.bits != 4:
        raise ValueError(f"layout must be of 4-bit elements (Layout(..., bits=4)), got a layout "
                         f"of {layout.bits}-bit elements")
    why = layout.byte_addressable_error()
    if why is not None:
        raise ValueError(f"layout cannot be exported through DLPack: {why}. DLPack points at "
                         f"the byte of element (0, ..., 0) and packs the elements from there, "
                         f"so only byte-addressable layouts have a DLPack form; copy into one "
                         f"first")
    record = _describe(container)
    if record.dtype not in _BYTE_TYPES:
        raise TypeError(f"container must be an array of bytes (uint8 or int8) holding the "
                        f"packed elements, got elements of DLPack type {record.dtype}")
    if record.device[0] not in _ADDRESSABLE:
        raise ValueError(f"container is on device {record.device}, whose memory has no plain "
                         f"addresses: strided cannot point a DLPack tensor into it")
    first, last = record.extent
    lo, hi = layout.span
    if layout.size == 0:
        inside = first <= layout.offset // 2 <= last + 1
    else:
        inside = first <= lo // 2 and hi // 2 <= last
    if not inside:
        reach = (f"offset {layout.offset} (an empty layout, byte {layout.offset // 2})"
                 if layout.size == 0 else f"elements {lo}..{hi} (bytes {lo // 2}..{hi // 2})")
        raise ValueError(f"layout reaches {reach}, outside the container: it holds "
                         f"{record.buffer_elements} bytes, at byte offsets {first}..{last} from "
                         f"its first byte")
    readonly = not record.writeable or record.immutable or aliases(layout)
    return SubByteExporter(container, record, layout, name, readonly)


class SubByteArray(NamedTuple):
    """What :func:`from_dlpack_subbyte` returns."""

    data: np.ndarray
    """Packed: a uint8 array over the producer's bytes (no copy). Padded: a new int8 / uint8
    array of the values, one per byte."""
    layout: Layout
    """Packed: the tensor's 4-bit layout over ``data``'s bytes (``bits=4``; offsets count
    4-bit elements from ``data``'s first byte). Padded: ``data``'s own layout (itemsize 1)."""
    dtype: str
    """``"int4"`` or ``"uint4"``."""
    padded: bool
    """Whether the producer set DLPack's sub-byte padded flag (one element per byte)."""


def from_dlpack_subbyte(obj: Any) -> SubByteArray:
    """Read a producer's 4-bit DLPack tensor (``int4`` / ``uint4``) into numpy.

    Parameters
    ----------
    obj : object with ``__dlpack__``, or a DLPack capsule
        The producer (asked for a versioned capsule, or a legacy one when it knows no
        ``max_version``), or a capsule (versioned or legacy), which is consumed. Its dtype must
        be ``(kDLInt or kDLUInt, 4 bits, 1 lane)`` and its memory host memory (CPU or pinned).

    Returns
    -------
    SubByteArray
        A named tuple ``(data, layout, dtype, padded)``:

        - packed elements (the DLPack default): ``data`` is a uint8 numpy array over the
          producer's bytes, zero-copy, holding the producer alive and read-only when the
          capsule says so; ``layout`` is a :class:`~strided.Layout` with ``bits=4`` whose
          offsets count 4-bit elements from ``data``'s first byte, with the producer's sizes
          and element strides (any strides, byte-addressable or not). When the tensor is packed
          row-major with an even innermost size, ``data`` has the tensor's shape with the
          innermost dimension halved (the usual container, :func:`strided.unpack_bits` reads
          it); otherwise ``data`` is 1-D, the bytes from the lowest to the highest element.
        - padded elements (the producer set ``DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED``,
          each element a byte, the value in its low 4 bits): ``data`` is a **new** C-contiguous
          int8 (int4: sign-extended from bit 3) or uint8 (uint4: the low 4 bits) array of the
          tensor's shape, whatever the producer left in the high bits; ``layout`` is its
          layout (itemsize 1).

        ``dtype`` is ``"int4"`` or ``"uint4"``; ``padded`` tells which case it was.

    Raises
    ------
    TypeError
        ``obj`` is neither a producer nor a capsule.
    ValueError
        The dtype is not int4/uint4 (the message gives DLPack's code, bits and lanes), the
        memory is not host memory, or the capsule is malformed (consumed already, NULL data,
        negative sizes, ...).

    Examples
    --------
    >>> import numpy as np
    >>> import strided as st
    >>> from strided.interop import from_dlpack_subbyte, to_dlpack_subbyte
    >>> packed = np.array([0x21, 0x43, 0x65], dtype=np.uint8)
    >>> got = from_dlpack_subbyte(to_dlpack_subbyte(packed, st.Layout(6, bits=4), "uint4"))
    >>> got.data
    array([ 33,  67, 101], dtype=uint8)
    >>> got.layout, got.dtype
    (Layout(sizes=(6,), strides=(1,), offset=0, bits=4), 'uint4')
    >>> st.unpack_bits(got.data, dtype="uint8")
    array([1, 2, 3, 4, 5, 6], dtype=uint8)
    """
    capsule = _request_capsule(obj) if hasattr(type(obj), "__dlpack__") else obj
    tensor = _capsule.consume_dlpack(capsule)   # owns the memory from here on
    dtype = tensor.dtype
    if dtype not in _NAMES:
        code, bits, lanes = dtype
        what = ("whole-byte elements: read it with strided.layout_of / np.from_dlpack"
                if (bits * lanes) % 8 == 0 else "a sub-byte type strided does not read")
        raise ValueError(f"DLPack dtype (code {code}, {bits} bits, {lanes} lanes) is {what}; "
                         f"from_dlpack_subbyte reads int4 (code 0, 4 bits, 1 lane) and uint4 "
                         f"(code 1, 4 bits, 1 lane)")
    name = _NAMES[dtype]
    if tensor.device[0] not in HOST_DEVICES:
        raise ValueError(f"the DLPack tensor is on device {tensor.device}: from_dlpack_subbyte "
                         f"reads host memory only (CPU or pinned host memory)")
    base = tensor.data + tensor.byte_offset
    readonly = bool(tensor.readonly)
    if tensor.flags & DLPACK_FLAG_IS_SUBBYTE_TYPE_PADDED:
        return _padded(tensor, base, name)
    layout = Layout(tensor.shape, tensor.strides, bits=4)
    if layout.size == 0:
        empty = np.empty(0, dtype=np.uint8)
        empty.flags.writeable = not readonly
        return SubByteArray(empty, layout, name, False)
    lo, hi = layout.span
    first, last = lo // 2, hi // 2            # the bytes holding the lowest and highest element
    sizes = layout.sizes
    if (layout.ndim and sizes[-1] % 2 == 0 and lo == 0
            and strides_agree(sizes, layout.strides, Layout(sizes, bits=4).strides)):
        shape = (*sizes[:-1], sizes[-1] // 2)   # the usual container: innermost dim halved
    else:
        shape = (last - first + 1,)
    data = ndarray_at(base + first, Layout(shape, itemsize=1), np.dtype(np.uint8),
                      readonly=readonly, owner=tensor)
    return SubByteArray(data, Layout(sizes, layout.strides, offset=-2 * first, bits=4), name,
                        False)


def _padded(tensor: Any, base: int, name: str) -> SubByteArray:
    """One element per byte: a new int8/uint8 array of the values (the low 4 bits)."""
    src = ndarray_at(base, Layout(tensor.shape, tensor.strides, itemsize=1),
                     np.dtype(np.uint8), readonly=True, owner=tensor)
    if name == "int4":
        out = np.empty(src.shape, dtype=np.int8)
        np.right_shift(np.left_shift(src, 4).view(np.int8), 4, out=out)  # sign-extend bit 3
    else:
        out = np.bitwise_and(src, 0x0F, out=np.empty(src.shape, dtype=np.uint8))
    return SubByteArray(out, Layout(out.shape, itemsize=1), name, True)
