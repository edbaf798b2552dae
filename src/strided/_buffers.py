"""Fresh arrays for transient results, with large blocks reused instead of faulted in anew.

A codec's decoded chunk lives only until the read that asked for it has copied it into its
result. glibc serves allocations above its mmap threshold (at most 32 MiB on 64-bit Linux)
straight from the kernel and returns them at ``free``, so every such chunk lands in fresh pages,
which the kernel zeroes at the first touch: on the development machine (AMD EPYC Zen 3) a fresh
48 MiB array costs 2.6x a fill of a reused one (7.2 ms against 2.8), and the zeroing took twice
the cycles of the transpose that filled it. Below the threshold glibc's heap already reuses
freed memory, so only larger arrays come from here.

:func:`empty` hands out a C-contiguous array whose memory is a block the pool owns; the array's
``base`` is a lease on the block, and when the last array or view of it is gone the lease gives
the block back, to be handed out again instead of a fresh allocation. At most
:func:`reuse_limit` bytes of unused blocks are kept (the oldest dropped first); ``0`` keeps
none. The pool is thread-safe (one lock around its list, held for a few list operations only)
and starts empty in a forked child.

Examples
--------
>>> import numpy as np
>>> from strided import _buffers
>>> a = _buffers.empty((64, 1024, 1024), np.uint8)     # 64 MiB: above the threshold
>>> a.shape, a.dtype, a.flags.c_contiguous, a.flags.writeable
((64, 1024, 1024), dtype('uint8'), True, True)
>>> address = a.ctypes.data
>>> del a                                               # the block goes back to the pool
>>> b = _buffers.empty((16, 1024, 1024), np.float32)    # 64 MiB again: the same block
>>> b.ctypes.data == address
True
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

MiB = 1 << 20

#: glibc's largest mmap threshold on 64-bit (DEFAULT_MMAP_THRESHOLD_MAX): its heap reuses freed
#: memory below it, so the pool only takes arrays at least this large.
POOLED_FROM = 32 * MiB

#: The default bound on the unused bytes kept: two chunks of the issue's 48 MiB (3, 4096, 4096)
#: uint8, or one of 96 MiB, so that a read decoding chunk after chunk, or two decodes at once,
#: reuses its blocks, while an idle process keeps little.
DEFAULT_LIMIT = 128 * MiB

#: Blocks start on a cache line (numpy's allocator gives 16 bytes).
_ALIGN = 64

#: A free block is handed out for a request of at least this fraction of its size, so that a
#: small request does not pin a much larger block (ragged last chunks fit their full ones).
_FIT = 0.75


class _Pool:
    """Unused blocks (1-D uint8 arrays), most recently returned last, and their bound."""

    def __init__(self, limit: int) -> None:
        self.lock = threading.Lock()
        self.holder: int | None = None   # the thread holding the lock
        self.free: list[np.ndarray] = []
        self.limit = limit

    @contextmanager
    def held(self) -> Iterator[None]:
        with self.lock:
            self.holder = threading.get_ident()
            try:
                yield
            finally:
                self.holder = None

    def take(self, nbytes: int) -> np.ndarray | None:
        """The smallest unused block that holds ``nbytes`` and is not much larger, removed."""
        with self.held():
            fits = [i for i, block in enumerate(self.free)
                    if _FIT * (block.nbytes - _ALIGN) <= nbytes <= block.nbytes - _ALIGN]
            if not fits:
                return None
            best = min(fits, key=lambda i: self.free[i].nbytes)
            return self.free.pop(best)

    def give_back(self, block: np.ndarray) -> None:
        """Keep ``block`` for reuse, dropping the oldest blocks beyond the limit."""
        if self.holder == threading.get_ident():
            # A garbage collection inside this thread's own take or trim ended a lease: the
            # lock is ours already, so the block is simply freed (waiting would deadlock).
            return
        with self.held():
            if block.nbytes > self.limit:
                return
            self.free.append(block)
            self.trim()

    def trim(self) -> None:
        """Drop the oldest blocks beyond the limit (the caller holds the lock)."""
        held = sum(block.nbytes for block in self.free)
        while self.free and held > self.limit:
            held -= self.free.pop(0).nbytes


_POOL = _Pool(DEFAULT_LIMIT)


def _fresh_pool_in_child() -> None:
    # A fork can happen while another thread holds the lock: the child gets a new pool (its
    # copies of the parent's blocks would be copied page by page at the first write anyway).
    global _POOL
    _POOL = _Pool(_POOL.limit)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_fresh_pool_in_child)


class _Lease:
    """The ``base`` of a pooled array: exposes ``nbytes`` bytes of ``block`` from its first
    64-byte boundary to numpy, and gives the block back to its pool when no array refers to it
    any more (unless that pool was replaced since: a forked child's arrays from before the
    fork, whose pool's lock another thread of the parent may have held, are simply freed)."""

    __slots__ = ("__array_interface__", "block", "pool")

    def __init__(self, block: np.ndarray, pool: _Pool, nbytes: int) -> None:
        self.block = block
        self.pool = pool
        address = block.ctypes.data
        start = -address % _ALIGN
        self.__array_interface__ = {"shape": (nbytes,), "typestr": "|u1",
                                    "data": (address + start, False), "version": 3}

    def __del__(self) -> None:
        try:
            if self.pool is _POOL:
                self.pool.give_back(self.block)
        except Exception:  # interpreter shutdown: the block is simply freed
            pass


def empty(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """A new C-contiguous array of ``shape`` and ``dtype`` (uninitialised, like ``np.empty``),
    on a reused block when it is large and the pool has one.

    Parameters
    ----------
    shape : tuple of int
        The array's shape (non-negative sizes; a product that overflows raises as numpy does).
    dtype : dtype-like
        Its dtype; object dtypes, and arrays under :data:`POOLED_FROM` bytes, come from
        ``np.empty``.

    Returns
    -------
    numpy.ndarray
        Writable and C-contiguous. A pooled array does not own its memory (``base`` is the
        lease that gives the block back), so it cannot be resized in place.

    Examples
    --------
    >>> empty((2, 3), np.int16).shape
    (2, 3)
    """
    dtype = np.dtype(dtype)
    shape = tuple(shape)
    nbytes = math.prod(shape) * dtype.itemsize
    pool = _POOL
    if nbytes < POOLED_FROM or nbytes + _ALIGN > pool.limit or dtype.hasobject:
        return np.empty(shape, dtype)
    block = pool.take(nbytes)
    if block is None:
        block = np.empty(nbytes + _ALIGN, np.uint8)
    return np.asarray(_Lease(block, pool, nbytes)).view(dtype).reshape(shape)


def reuse_limit(nbytes: int | None = None) -> int:
    """The bound on the unused bytes the pool keeps; with ``nbytes``, set it (``0``: keep
    nothing, and free what is kept) and return the previous bound.

    Examples
    --------
    >>> previous = reuse_limit(0)
    >>> reuse_limit(previous)
    0
    """
    pool = _POOL
    previous = pool.limit
    if nbytes is None:
        return previous
    if isinstance(nbytes, bool) or not isinstance(nbytes, int):
        raise TypeError(f"nbytes must be an int, got {nbytes!r}")
    if nbytes < 0:
        raise ValueError(f"nbytes must be >= 0, got {nbytes}")
    with pool.held():
        pool.limit = nbytes
        pool.trim()
    return previous
