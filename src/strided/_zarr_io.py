"""A zarr v3 array's chunks read and written as the bytes they are stored as, for
:func:`strided.dask.from_zarr` and :func:`strided.dask.to_zarr`.

A chunk whose only codec is ``bytes`` in this machine's byte order (no compressor, no filter,
no sharding) is stored as the C-ordered bytes of its elements. zarr-python still runs its
codec pipeline over such a chunk and copies it twice on each side (decoded into a chunk buffer,
then into the read's result; the value into a chunk buffer, then into bytes for the store).
Here a read takes the stored bytes as the block (a local file is read straight into a fresh
array) and a write hands the block's own bytes to the store (after one strided copy when the
block is not C-contiguous): the same bytes zarr-python reads and writes, with no copy between
the store and the array. Any other array, and any region that is not one whole chunk, goes
through zarr's own indexing.

This module imports zarr; :mod:`strided.dask` imports it only when given a zarr array.
"""

from __future__ import annotations

import math
import os
import sys
from typing import Any

import numpy as np
import zarr
from zarr.codecs import BytesCodec
from zarr.core.buffer import cpu as _cpu
from zarr.core.buffer import default_buffer_prototype
from zarr.core.sync import sync

from strided.copy import copyto

__all__ = ["StoredChunks"]

# Element kinds stored as plain bytes by zarr's ``bytes`` codec: bool, integers, floats,
# complex. (Strings, structured and time types have encodings of their own.)
_PLAIN_KINDS = "biufc"


def _stored_as_bytes(array: zarr.Array) -> bool:
    """Whether each chunk of ``array`` is stored as the C-ordered native bytes of its elements."""
    metadata = array.metadata
    if metadata.zarr_format != 3 or array.shards is not None:
        return False
    codecs = tuple(metadata.codecs)
    if len(codecs) != 1 or type(codecs[0]) is not BytesCodec:
        return False
    dtype = array.dtype
    if not isinstance(dtype, np.dtype) or dtype.kind not in _PLAIN_KINDS or not dtype.isnative:
        return False
    endian = codecs[0].endian
    return dtype.itemsize == 1 or (endian is not None and endian.value == sys.byteorder)


class StoredChunks:
    """A zarr array whose whole chunks are read and written as their stored bytes.

    ``chunks[region]`` and ``chunks[region] = block`` take the stored bytes of the chunk when
    ``region`` is exactly one chunk (cut at the array's edge when reading) and the array's
    chunks are stored as plain bytes; zarr's own indexing otherwise. It pickles (the zarr array
    does), so a dask graph carries it to worker processes.

    Parameters
    ----------
    array : zarr.Array
        Any zarr-python array; the byte path is taken for zarr v3 arrays whose only codec is
        ``bytes`` in this machine's byte order, of bool, integer, float or complex elements.

    Notes
    -----
    A chunk written here is stored even when it holds only the fill value (zarr-python leaves
    such chunks out by default); reads give the same values either way.
    """

    def __init__(self, array: zarr.Array) -> None:
        self.array = array
        self.shape: tuple[int, ...] = tuple(array.shape)
        self.dtype: np.dtype[Any] = np.dtype(array.dtype)
        self.ndim: int = len(self.shape)
        self.chunks: tuple[int, ...] = tuple(array.chunks)
        #: whether whole chunks move as their stored bytes
        self.as_bytes: bool = _stored_as_bytes(array)

    def __getitem__(self, region: Any) -> np.ndarray:
        coords = self._whole_chunk(region, cut_at_edge=True)
        if coords is None:
            return np.asarray(self.array[region])
        inside = tuple(min(chunk, size - c * chunk)
                       for c, chunk, size in zip(coords, self.chunks, self.shape))
        stored = self._read(coords)
        if stored is None:          # never written: the fill value, as zarr reads it
            return np.full(inside, self.array.fill_value, self.dtype)
        return stored if inside == self.chunks else stored[tuple(map(slice, inside))]

    def __setitem__(self, region: Any, block: Any) -> None:
        coords = self._whole_chunk(region, cut_at_edge=False)
        block = np.asarray(block)
        if coords is None or block.dtype != self.dtype or block.shape != self.chunks:
            self.array[region] = block
            return
        if not block.flags.c_contiguous:
            packed = np.empty(block.shape, block.dtype)
            copyto(packed, block, num_threads=1)
            block = packed
        buffer = _cpu.Buffer.from_array_like(block.reshape(-1).view(np.uint8))
        sync(self._path(coords).set(buffer))

    def _whole_chunk(self, region: Any, *, cut_at_edge: bool) -> tuple[int, ...] | None:
        """The chunk coordinates ``region`` covers exactly (up to the array's edge when
        ``cut_at_edge``), or None when it is not one whole chunk or bytes are not the way."""
        if not self.as_bytes or not isinstance(region, tuple) or len(region) != self.ndim:
            return None
        coords = []
        for item, size, chunk in zip(region, self.shape, self.chunks):
            if not isinstance(item, slice) or item.step not in (None, 1):
                return None
            start, stop = item.start or 0, size if item.stop is None else item.stop
            end = min(start + chunk, size) if cut_at_edge else start + chunk
            if start % chunk or stop != end or stop > size:
                return None
            coords.append(start // chunk)
        return tuple(coords)

    def _path(self, coords: tuple[int, ...]) -> Any:
        return self.array.store_path / self.array.metadata.encode_chunk_key(coords)

    def _read(self, coords: tuple[int, ...]) -> np.ndarray | None:
        """The stored chunk, writable, of the full chunk shape; None when it is not stored."""
        path = self._path(coords)
        store = path.store
        if type(store) is zarr.storage.LocalStore:
            return self._read_file(os.path.join(store.root, path.path))
        stored = sync(path.get(prototype=default_buffer_prototype()))
        if stored is None:
            return None
        flat = stored.as_numpy_array().view(self.dtype)
        if flat.size != math.prod(self.chunks):
            raise ValueError(f"the stored chunk {path.path!r} holds {stored.nbytes} bytes, not "
                             f"the {math.prod(self.chunks) * self.dtype.itemsize} of a chunk "
                             f"of shape {self.chunks} and dtype {self.dtype}")
        chunk = flat.reshape(self.chunks)
        return chunk if chunk.flags.writeable else chunk.copy()

    def _read_file(self, name: str) -> np.ndarray | None:
        """A local chunk file read straight into a fresh array (no bytes object between)."""
        chunk = np.empty(self.chunks, self.dtype)
        try:
            with open(name, "rb", buffering=0) as file:
                size = os.fstat(file.fileno()).st_size
                if size == chunk.nbytes:
                    view = chunk.reshape(-1).view(np.uint8).data
                    done = 0
                    while done < size:
                        got = file.readinto(view[done:])
                        if not got:
                            break
                        done += got
                    size = done
        except FileNotFoundError:
            return None
        if size != chunk.nbytes:
            raise ValueError(f"the stored chunk {name!r} holds {size} bytes, not the "
                             f"{chunk.nbytes} of a chunk of shape {self.chunks} and dtype "
                             f"{self.dtype}")
        return chunk

