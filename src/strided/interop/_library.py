"""What copying asks about a pair of arrays, and the compiled fast paths of ``copyto``.

:mod:`strided.copy` never names a library. It asks each array's own questions (may its bytes
be copied raw, may it be written, where is it pinned, how is a new one made) of the record's
adapter, ``record.adapter`` (:class:`~strided.interop._record.Adapter`, looked up in the one
table :data:`~strided.interop._record.ADAPTERS`). What is asked of two arrays at once is
answered here, by their adapter when both are of one library, else neutrally: a library only
copies, converts or compares dtypes of its own arrays.

The fast paths are the table's too: they are tried before any array is described (a lookup per
call is a measurable share of a 16-element copy), so they are read from their adapter once,
here, at import. Each declines (False, nothing written) any pair it does not handle alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from strided.interop._record import ADAPTERS, MemoryRecord, type_name

__all__ = ["device_converter", "device_copier", "fast_convert", "fast_copy", "same_dtype",
           "type_name"]


def _fast_path(name: str) -> Callable[..., bool]:
    """The one adapter's compiled fast path ``name`` (numpy's: plain ndarrays, CPU tensors and
    buffers, read from their C structs); a library without one has None."""
    found = [path for adapter in ADAPTERS.values()
             if (path := getattr(adapter, name)) is not None]
    if len(found) != 1:
        raise ImportError(f"strided.interop has {len(found)} adapters with a {name}: copyto "
                          f"calls exactly one, first")
    return found[0]


fast_copy = _fast_path("fast_copy")
"""copyto's fast path for a plain copy: ``(dst, src, num_threads, casting, scale, shift,
axis) -> bool``, True when it made the whole copy."""

fast_convert = _fast_path("fast_convert")
"""copyto's fast path for a conversion: ``(dst, src, casting, scale, shift, axis,
num_threads) -> bool``, the arguments already plain values."""


def same_dtype(a: MemoryRecord, b: MemoryRecord) -> bool:
    """Same element type: the DLPack dtypes when both have one, else the library's own dtypes.

    A dtype without a DLPack equivalent (numpy's byte-swapped, structured, string or datetime
    types; torch's float8 or quantized types) only matches the same dtype of the same library.
    """
    if a.layout.itemsize != b.layout.itemsize:
        return False
    if a.dtype is not None and b.dtype is not None:
        return a.dtype == b.dtype
    adapter = a.adapter
    return adapter is b.adapter and adapter.same_dtype(a, b)


def device_copier(dst: MemoryRecord, src: MemoryRecord) -> Callable[[Any, Any, bool], None] | None:
    """The library's own copy for a pair the CPU does not copy, or None for a host pair.

    Two torch tensors of which one is off the CPU are copied by torch: the callable takes
    ``(dst, src, share_memory)`` and copies after the caller's checks, outside autograd. Any
    other pair is the CPU's (or refused, when an array is not in host memory).
    """
    adapter = dst.adapter
    return adapter.device_copier(dst, src) if adapter is src.adapter else None


def device_converter(dst: MemoryRecord, src: MemoryRecord) -> Callable[..., None] | None:
    """The library's own conversion for a pair the CPU does not copy (see
    :func:`device_copier`), or None for a host pair. It takes ``(dst, src, share_memory)``
    followed by the arguments of ``strided._convert.convert_memory`` after the addresses,
    sizes and strides, and converts by the same rules."""
    adapter = dst.adapter
    return adapter.device_converter(dst, src) if adapter is src.adapter else None
