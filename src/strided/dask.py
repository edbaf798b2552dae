"""strided on dask arrays (optional extra ``strided[dask]``): relayout, convert and quantize
arrays larger than memory, or spread over a cluster, block by block.

The four calls mirror :mod:`strided.copy` (same arguments, same meaning, same errors) and
return dask arrays: nothing is computed until the caller computes. Each block goes through the
strided call of the same name, on the worker that holds it (threads, or the processes of
``dask.distributed``). What a user would otherwise get wrong by hand is done here:

- per-channel vectors (``scale``/``shift``, ``mean``/``std``/``max_value``) are cut to each
  block's channels (from the block's array-location);
- blocked formats (NCHWx): the channel axis is rechunked to whole blocks of ``x`` channels when
  it is not (one :class:`dask.array.PerformanceWarning` says so), and the padding channels of
  the last block hold the quantized zero ``st.to_blocked`` gives the whole array;
- arguments are checked when the graph is built, by the strided call itself on a one-pixel
  probe of the array (its errors, its wording), so a bad ``scale`` fails at once, not on a
  worker an hour later.

dask assembles a computed array with ``np.concatenate`` (a single block too): the result of
``compute()`` is row-major whatever layout the blocks had. The layout is kept where it matters:

- ``out=``: computes at once, each block written through strided into its region of ``out``
  (a numpy array, e.g. ``st.relayout``'s allocation, or a zarr array);
- blocks consumed one by one (:func:`to_zarr`, ``da.store``) keep it: to write channels-last
  to a zarr array of shape ``(N, H, W, C)``, ``relayout(x, "NHWC").transpose(0, 2, 3, 1)``:
  every block of it is then C-contiguous, and :func:`to_zarr` stores its bytes as they are.

:func:`from_zarr` and :func:`to_zarr` read and write a zarr array's whole chunks as the bytes
they are stored as (where they are plain bytes), without zarr-python's copies in between.

cubed arrays (`cubed <https://cubed-dev.github.io/cubed/>`_, bounded-memory, its intermediate
arrays in zarr) go through the four calls too and come back as cubed arrays, each block through
the same strided call (cubed's ``map_blocks`` tells a block only its ``block_id``: its channels
are found from the array's chunks). cubed is never imported here: a cubed array means it is
loaded. What cubed cannot take is refused when the call is made (:class:`TypeError`, saying
what to do instead): ``out=`` (cubed's tasks write to its own storage: compute the result, or
``cubed.store`` it), :func:`to_zarr` (``cubed.store``/``cubed.to_zarr``), a bfloat16 result
(zarr has no such data type), a backend array API other than numpy. cubed stores every block
in zarr, so only the values of a block survive, never its layout: :func:`relayout` of a cubed
array converts (dtype, scale, ...) as strided does, bit for bit, and its layout changes nothing
cubed keeps.

Examples
--------
>>> import numpy as np
>>> import dask.array as da
>>> import strided as st
>>> import strided.dask as sd
>>> x = da.arange(2 * 6 * 3 * 4, dtype=np.float32).reshape(2, 6, 3, 4).rechunk((1, 4, 3, 4))
>>> y = sd.relayout(x, "NHWC", dtype=np.float16, scale=np.arange(6), axis=1)
>>> y.dtype, y.chunks[1]
(dtype('float16'), (4, 2))
>>> ref = st.relayout(x.compute(), "NHWC", dtype=np.float16, scale=np.arange(6), axis=1)
>>> bool(np.array_equal(y.compute(), ref))
True
>>> q = sd.to_blocked(x, "NCHW4", dtype=np.int8, scale=0.5)
>>> q.shape, q.chunks[1]
((2, 2, 3, 4, 4), (1, 1))
>>> bool(np.array_equal(q.compute(), st.to_blocked(x.compute(), "NCHW4", dtype=np.int8,
...                                                scale=0.5)))
True
"""

from __future__ import annotations

import functools
import importlib
import inspect
import itertools
import math
import sys
import uuid
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

try:
    import dask
    import dask.array as da
    from dask.array.core import PerformanceWarning
except ImportError:  # the optional extra is not installed
    # (no `as` name: it would be a module attribute to type checkers and stubtest, deleted
    # at run time)
    raise ModuleNotFoundError(
        f"strided.dask needs dask.array ({sys.exc_info()[1]}): pip install strided[dask]",
        name=getattr(sys.exc_info()[1], "name", None) or "dask",
    ) from sys.exc_info()[1]

import strided as st
from strided import _core
from strided.formats import BlockedFormat, parse_blocked, physical_order

__all__ = ["astype", "from_blocked", "from_zarr", "relayout", "to_blocked", "to_zarr"]

# The per-channel arguments of the converting calls, cut per block when they are vectors.
_VECTORS = ("scale", "shift", "mean", "std", "max_value")

# Threads per block when the caller gives none. dask already runs one task per core (threads
# or worker processes), so one strided thread per task fills the machine; strided's own team
# would add threads that compete with dask's. benchmarks/bench_dask.py measures it.
_BLOCK_THREADS = 1


# --------------------------------------------------------------------------------------------
# Public calls
# --------------------------------------------------------------------------------------------


def relayout(x: Any, layout: str | Sequence[int], *, dtype: Any = None, scale: Any = None,
             shift: Any = None, axis: int | None = None, num_threads: int | None = None,
             mean: Any = None, std: Any = None, max_value: Any = None, rounding: str = "fused",
             out: Any = None) -> Any:
    """:func:`strided.relayout` of every block of a dask array: a dask array of x's shape
    whose blocks are laid out as ``layout`` (converted to ``dtype``, through ``scale``/
    ``shift`` or the image form, when given).

    Parameters
    ----------
    x : dask.array.Array or cubed.Array
        numpy-backed, any chunks.
    layout : str or tuple of int
        The physical order of every block: a label (``"NHWC"``, ``"F"``, ...) or the axes in
        physical order, outermost first. A :class:`strided.Layout` is refused: it gives the
        strides of one whole array, not of blocks.
    dtype, scale, shift, axis, mean, std, max_value, rounding :
        As :func:`strided.relayout`; vectors are per channel along ``axis`` and are cut to
        each block's channels.
    num_threads : int, optional
        Threads of each block's copy. Default 1: dask already runs one block per core.
    out : array, optional
        Compute now, straight into ``out`` (x's shape, the result's dtype), and return it.
        A numpy array must be laid out as ``layout`` asks (``st.relayout``'s allocation is);
        each block is written into its region by strided. A zarr array is written as
        :func:`to_zarr` writes (whole chunks as their stored bytes), any other array that
        takes region assignment with ``da.store``; its chunks (shards, when it has them) must
        not be cut by the blocks, which write concurrently. Not for a cubed ``x``
        (:class:`TypeError`): compute the result, or ``cubed.store`` it.

    Returns
    -------
    dask.array.Array or cubed.Array or array
        Lazy, of x's shape and chunks and the result's dtype, of x's kind; ``out`` when given.
        A computed result is row-major (dask concatenates blocks; cubed stores them in zarr);
        each block of a dask result is ``layout``.

    Raises
    ------
    TypeError
        ``x`` is not a numpy-backed dask or cubed array; ``out`` or a bfloat16 ``dtype`` for a
        cubed ``x``; the errors of :func:`strided.relayout`.
    ValueError
        ``layout`` is a Layout, a 4-bit ``dtype`` (its containers change the shape: use
        :func:`to_blocked`), ``out`` does not fit; the errors of :func:`strided.relayout`.

    Examples
    --------
    >>> import numpy as np
    >>> import dask.array as da
    >>> import strided as st
    >>> import strided.dask as sd
    >>> x = da.random.default_rng(0).random((2, 3, 4, 5), chunks=(1, 3, 2, 5))
    >>> y = sd.relayout(x, "NHWC", dtype=np.float32)
    >>> block = y.to_delayed()[0, 0, 0, 0].compute()     # one block, as a task returns it
    >>> st.layout_of(block).label, block.shape
    ('NHWC', (1, 3, 2, 5))

    Straight into a channels-last numpy array:

    >>> out = np.empty((2, 4, 5, 3), np.float32).transpose(0, 3, 1, 2)
    >>> _ = sd.relayout(x, "NHWC", dtype=np.float32, out=out)
    >>> bool(np.array_equal(out, x.compute().astype(np.float32)))
    True
    """
    _check_input(x, "x", out)
    if isinstance(layout, st.Layout):
        raise ValueError(f"layout must be a label or an order for a dask array, got {layout!r}: "
                         f"a Layout gives the strides of one whole array, not of its blocks")
    _refuse_4bit(dtype, "relayout")
    params = _Params.of(scale=scale, shift=shift, mean=mean, std=std, max_value=max_value)
    checked = functools.partial(st.relayout, layout=layout, dtype=dtype, rounding=rounding,
                                num_threads=num_threads)
    axis = _channel_axis(axis, x.ndim, params)
    probe = _probe(lambda p, **v: checked(p, axis=axis, **v), x, axis, params)
    # each block: st.relayout's allocation and copy, its Python steps done once, here
    call = functools.partial(_convert_block, order=physical_order(layout, x.ndim),
                             dtype=probe.dtype, casting="unsafe", rounding=rounding,
                             num_threads=num_threads)
    block = functools.partial(_relayout_block, call=call, axis=axis, params=params)
    result = _map_blocks(x, _lazy(block), dtype=probe.dtype, token="strided-relayout")
    if out is None:
        return result
    target = _numpy_out(out, x.shape, probe.dtype)
    if target is not None:
        _check_out_layout(target, st.packed_strides(x.shape, layout), layout)
    return _compute_into(result, out, x, block)


def astype(x: Any, dtype: Any, *, scale: Any = None, shift: Any = None, axis: int | None = None,
           mean: Any = None, std: Any = None, max_value: Any = None, rounding: str = "fused",
           casting: str = "unsafe", num_threads: int | None = None, out: Any = None) -> Any:
    """``x.astype(dtype)`` through :func:`strided.copyto`, block by block: numpy's values
    (float -> int truncates; NaN and out-of-range saturate), with the affine step
    (``scale``/``shift``) or the image form (``mean``/``std``/``max_value``) in the same pass.

    Parameters
    ----------
    x : dask.array.Array or cubed.Array
        numpy-backed, any chunks.
    dtype : dtype
        The result's dtype (numpy's, or ``"bfloat16"`` through ml_dtypes: not for a cubed
        ``x``, whose blocks zarr stores).
    scale, shift, axis, mean, std, max_value, rounding :
        As :func:`strided.copyto`; vectors are per channel along ``axis``, cut per block.
    casting : {"no", "equiv", "safe", "same_kind", "unsafe"}
        As ``np.ndarray.astype`` (default ``"unsafe"``), checked when the graph is built.
    num_threads : int, optional
        Threads of each block's copy. Default 1: dask already runs one block per core.
    out : array, optional
        Compute now, straight into ``out`` (any strides for a numpy array), as
        :func:`relayout`'s ``out`` (not for a cubed ``x``).

    Returns
    -------
    dask.array.Array or cubed.Array or array
        Lazy, of x's kind, shape and chunks, C-ordered blocks of ``dtype``; ``out`` when
        given.

    Examples
    --------
    >>> import numpy as np
    >>> import dask.array as da
    >>> import strided.dask as sd
    >>> img = da.from_array(np.full((2, 3, 2, 2), 255, np.uint8), chunks=(1, 2, 2, 2))
    >>> sd.astype(img, np.float32, mean=[0.5, 0.5, 0.5], std=[0.5, 0.25, 1.0],
    ...           axis=1).compute()[0, :, 0, 0]
    array([1. , 2. , 0.5], dtype=float32)
    >>> sd.astype(img.astype(np.float64), np.int8, casting="same_kind")
    Traceback (most recent call last):
        ...
    TypeError: cannot copy src of dtype float64 into dst of dtype int8 with casting='same_kind' ...
    """
    _check_input(x, "x", out)
    _refuse_4bit(dtype, "astype")
    params = _Params.of(scale=scale, shift=shift, mean=mean, std=std, max_value=max_value)
    new_dtype = _resolved_dtype(x.dtype, dtype)
    call = functools.partial(_convert_block, order=tuple(range(x.ndim)), dtype=new_dtype,
                             casting=casting, rounding=rounding, num_threads=num_threads)
    axis = _channel_axis(axis, x.ndim, params)
    probe = _probe(lambda p, **v: call(p, axis=axis, **v), x, axis, params)
    block = functools.partial(_relayout_block, call=call, axis=axis, params=params)
    result = _map_blocks(x, _lazy(block), dtype=probe.dtype, token="strided-astype")
    if out is None:
        return result
    _numpy_out(out, x.shape, probe.dtype)
    return _compute_into(result, out, x, block)


def to_blocked(x: Any, fmt: str | BlockedFormat, *, dtype: Any = None, scale: Any = None,
               shift: Any = None, num_threads: int | None = None, mean: Any = None,
               std: Any = None, max_value: Any = None, rounding: str = "fused",
               out: Any = None) -> Any:
    """:func:`strided.to_blocked` of a dask array ``(N, C, H, W)``: a dask array of the
    blocked physical shape, ``(N, ceil(C/x), H, W, x)`` for NCHWx.

    The channel axis must be chunked in whole blocks of ``x`` channels (the last chunk
    excepted): when it is not, it is rechunked to the nearest multiple of ``x`` (at least
    ``x``) and a :class:`dask.array.PerformanceWarning` says so. Each chunk of ``c`` channels
    becomes a chunk of ``ceil(c / x)`` blocks; the last holds the padding channels, with the
    quantized zero :func:`strided.to_blocked` gives the whole array.

    Parameters
    ----------
    x : dask.array.Array or cubed.Array
        numpy-backed, rank 4 ``(N, C, H, W)``, any chunks.
    fmt : str or BlockedFormat
        ``"NCHWx"``, ``"nChw{x}c"`` or ``"CHWN4"`` (see :func:`strided.to_blocked`).
    dtype, scale, shift, mean, std, max_value, rounding :
        As :func:`strided.to_blocked` (``"int4"``/``"uint4"`` included: uint8 containers whose
        last axis is ``x / 2``); vectors hold C values, cut per block.
    num_threads : int, optional
        Threads of each block's copy. Default 1: dask already runs one block per core.
    out : array, optional
        Compute now, straight into ``out`` (the physical shape and the result's dtype, any
        strides for a numpy array), as :func:`relayout`'s ``out`` (not for a cubed ``x``).

    Returns
    -------
    dask.array.Array or cubed.Array or array
        Lazy, of x's kind and the physical shape; ``out`` when given.

    Examples
    --------
    >>> import numpy as np
    >>> import dask.array as da
    >>> import strided.dask as sd
    >>> x = da.ones((1, 6, 2, 2), dtype=np.float32, chunks=(1, 3, 2, 2))
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as said:
    ...     warnings.simplefilter("always")
    ...     y = sd.to_blocked(x, "NCHW4", dtype=np.int8, scale=10.0, shift=-2.0)
    >>> len(said), y.chunks[1]
    (1, (1, 1))
    >>> y.compute()[0, :, 0, 0]
    array([[ 8,  8,  8,  8],
           [ 8,  8, -2, -2]], dtype=int8)
    """
    _check_input(x, "x", out)
    spec = parse_blocked(fmt)
    _check_rank(x, 4, "x", f"blocked format {spec.name!r} packs a rank-4 (N, C, H, W) array")
    params = _Params.of(scale=scale, shift=shift, mean=mean, std=std, max_value=max_value)
    call = functools.partial(st.to_blocked, fmt=spec, dtype=dtype, rounding=rounding,
                             num_threads=num_threads)
    probe = _probe(call, x, 1, params)
    x = _whole_blocks(x, spec.block)
    lanes = probe.shape[-1]
    pad = _Padding.of(probe, spec, x.shape[1], four_bit=lanes != spec.block)
    block = functools.partial(_to_blocked_block, call=call, spec=spec, params=params, pad=pad)
    chunks = (x.chunks[0], tuple(-(-c // spec.block) for c in x.chunks[1]), *x.chunks[2:],
              (lanes,))
    result = _map_blocks(x, block, dtype=probe.dtype, chunks=chunks, new_axis=4,
                         token="strided-to-blocked")
    if out is None:
        return _physical(result, spec)
    _numpy_out(out, _blocked_shape(spec, x.shape, lanes), probe.dtype)
    return _compute_into(result, out, x, block, spec=spec)


def from_blocked(y: Any, fmt: str | BlockedFormat, *, channels: int, dtype: Any = None,
                 scale: Any = None, shift: Any = None, num_threads: int | None = None,
                 src_dtype: Any = None, mean: Any = None, std: Any = None,
                 max_value: Any = None, rounding: str = "fused", out: Any = None) -> Any:
    """:func:`strided.from_blocked` of a dask array of a blocked physical shape: a dask array
    ``(N, channels, H, W)``.

    The last axis (the ``x`` lanes of a block) must be one chunk; it is rechunked when it is
    not (a :class:`dask.array.PerformanceWarning` says so). Each chunk of ``b`` blocks becomes
    a chunk of ``b * x`` channels, the last trimmed to ``channels``.

    Parameters
    ----------
    y : dask.array.Array or cubed.Array
        numpy-backed, rank 5, of ``fmt``'s physical shape, any chunks.
    fmt : str or BlockedFormat
        As :func:`to_blocked`.
    channels : int
        ``C``, the number of logical channels.
    dtype, scale, shift, src_dtype, mean, std, max_value, rounding :
        As :func:`strided.from_blocked`; vectors hold C values, cut per block.
    num_threads : int, optional
        Threads of each block's copy. Default 1: dask already runs one block per core.
    out : array, optional
        Compute now, straight into ``out`` (``(N, channels, H, W)``, any strides for a numpy
        array), as :func:`relayout`'s ``out`` (not for a cubed ``y``).

    Returns
    -------
    dask.array.Array or cubed.Array or array
        Lazy, of y's kind and shape ``(N, channels, H, W)``, row-major blocks; ``out`` when
        given.

    Examples
    --------
    >>> import numpy as np
    >>> import dask.array as da
    >>> import strided.dask as sd
    >>> q = da.full((1, 2, 2, 2, 4), 8, np.int8, chunks=(1, 1, 2, 2, 4))
    >>> x = sd.from_blocked(q, "NCHW4", channels=6, dtype=np.float32, scale=0.1, shift=-0.8)
    >>> x.shape, x.chunks[1]
    ((1, 6, 2, 2), (4, 2))
    >>> x.compute()[0, :, 0, 0]
    array([0., 0., 0., 0., 0., 0.], dtype=float32)
    """
    _check_input(y, "y", out)
    spec = parse_blocked(fmt)
    _check_rank(y, 5, "y", f"{spec.name!r} is a rank-5 array of its physical shape")
    channels = _channel_count(channels)
    params = _Params.of(scale=scale, shift=shift, mean=mean, std=std, max_value=max_value)
    call = functools.partial(st.from_blocked, fmt=spec, dtype=dtype, rounding=rounding,
                             num_threads=num_threads, src_dtype=src_dtype)
    y = _in_nchwx_order(y, spec)        # CHWN4: a blockwise transpose, no copy
    y = _one_lane_chunk(y)
    probe = _probe(lambda p, **v: call(_physical_block(p, spec), channels=channels, **v),
                   y, 1, params, spec=spec)
    block = functools.partial(_from_blocked_block, call=call, spec=spec, params=params,
                              channels=channels)
    chunks = (y.chunks[0], _unblocked_chunks(y.chunks[1], spec.block, channels), *y.chunks[2:4])
    result = _map_blocks(y, block, dtype=probe.dtype, chunks=chunks, drop_axis=4,
                         token="strided-from-blocked")
    if out is None:
        return result
    _numpy_out(out, (y.shape[0], channels, *y.shape[2:4]), probe.dtype)
    return _compute_into(result, out, y, block)


def from_zarr(array: Any) -> Any:
    """A dask array of a zarr array, one block per stored chunk, each read as the bytes it is
    stored as: ``dask.array.from_zarr`` without zarr-python's copies.

    Where a chunk's only codec is ``bytes`` in this machine's byte order (no compressor, no
    filter, no sharding: zarr v3 arrays created with ``compressors=None``) the block *is* the
    stored bytes: a local file is read straight into the block's array, another store's value
    is taken as it is; zarr-python would decode it into a chunk buffer and copy that into the
    result. Every other array is read through zarr's own indexing, chunk by chunk, as
    ``dask.array.from_zarr`` reads it. Chunks never written read as the fill value.

    Parameters
    ----------
    array : zarr.Array
        A zarr-python array (format 2 or 3), opened on any store.

    Returns
    -------
    dask.array.Array
        Lazy, of the array's shape, dtype and chunks; numpy blocks, writable, C-ordered. (A
        cubed array of a zarr array is ``cubed.from_zarr``'s.)

    Raises
    ------
    TypeError
        ``array`` is not a zarr array (a dask array needs no reading: pass it to the other
        calls as it is).

    Examples
    --------
    >>> import numpy as np
    >>> import zarr
    >>> import strided.dask as sd
    >>> z = zarr.create_array(zarr.storage.MemoryStore(), shape=(4, 6), chunks=(2, 3),
    ...                       dtype="uint8", compressors=None)
    >>> z[...] = np.arange(24).reshape(4, 6)
    >>> x = sd.from_zarr(z)
    >>> x.chunks
    ((2, 2), (3, 3))
    >>> bool(np.array_equal(x.compute(), z[...]))
    True
    """
    chunks = _stored_chunks(array, "array")
    meta = np.empty((0,) * chunks.ndim, chunks.dtype)
    # name=False: a fresh key each call (the store's bytes may change between calls, which a
    # token of the array's metadata would not see)
    return da.from_array(chunks, chunks=chunks.chunks, meta=meta, asarray=False,
                         inline_array=True, name=False)


def to_zarr(x: Any, array: Any, *, compute: bool = True) -> Any:
    """Store a dask array into a zarr array, each block that is one whole stored chunk written
    as the chunk's bytes: ``dask.array.store`` (``to_zarr``) without zarr-python's copies.

    Where the array's chunks are stored as plain bytes (only the ``bytes`` codec, this
    machine's byte order: zarr v3 with ``compressors=None``), a block covering one whole chunk
    is handed to the store as it is (C-contiguous blocks, as strided's relayouts give after
    their transpose to the physical shape) or after one strided copy; zarr-python would copy
    it into a chunk buffer and again into bytes. Blocks at the array's edge, and every other
    array, are written through zarr's own indexing.

    Parameters
    ----------
    x : dask.array.Array
        numpy-backed, of the array's shape. Its blocks must not cut a stored chunk (or shard):
        blocks are written concurrently and each write replaces whole chunks.
    array : zarr.Array
        The destination, opened for writing.
    compute : bool
        Write now (default) and return ``array``; or return the ``dask.delayed.Delayed`` of the
        writes, for ``dask.compute`` with other work.

    Returns
    -------
    zarr.Array or dask.delayed.Delayed

    Raises
    ------
    TypeError
        ``x`` is not a numpy-backed dask array (a cubed array: write it with
        ``cubed.store(x, array)``), ``array`` not a zarr array.
    ValueError
        Shapes differ, or a block cuts a stored chunk.

    Notes
    -----
    A chunk written as bytes is stored even when it holds only the fill value (zarr-python
    leaves such chunks out by default); reads give the same values either way.

    Examples
    --------
    Write channels-last: the relaid blocks, transposed to the physical shape, are the stored
    chunks' bytes.

    >>> import numpy as np
    >>> import dask.array as da
    >>> import zarr
    >>> import strided.dask as sd
    >>> x = da.from_array(np.arange(2 * 3 * 4 * 4, dtype=np.float32).reshape(2, 3, 4, 4),
    ...                   chunks=(1, 3, 4, 4))
    >>> nhwc = zarr.create_array(zarr.storage.MemoryStore(), shape=(2, 4, 4, 3),
    ...                          chunks=(1, 4, 4, 3), dtype="float32", compressors=None)
    >>> _ = sd.to_zarr(sd.relayout(x, "NHWC").transpose(0, 2, 3, 1), nhwc)
    >>> bool(np.array_equal(nhwc[...], x.compute().transpose(0, 2, 3, 1)))
    True
    """
    if _is_cubed(x):
        raise TypeError("x is a cubed array: strided.dask.to_zarr writes the blocks of a dask "
                        "array; write a cubed array with cubed.store(x, array) (or "
                        "cubed.to_zarr(x, store))")
    _check_dask(x, "x")
    chunks = _stored_chunks(array, "array")
    if tuple(x.shape) != chunks.shape:
        raise ValueError(f"x has shape {tuple(x.shape)} but array has shape {chunks.shape}")
    _check_aligned(x, array, "array")
    stored = da.store(x, chunks, lock=False, compute=compute)
    return array if compute else stored


def _stored_chunks(array: Any, name: str) -> Any:
    """The zarr array's chunks as :class:`strided._zarr_io.StoredChunks`."""
    if not _is_zarr(array):     # (a zarr array means zarr is loaded: no import otherwise)
        raise TypeError(f"{name} must be a zarr array (zarr.Array), got "
                        f"{type(array).__module__}.{type(array).__qualname__}")
    from strided import _zarr_io

    return _zarr_io.StoredChunks(array)


def _blocked_shape(spec: BlockedFormat, sizes: tuple[int, ...], lanes: int) -> tuple[int, ...]:
    """The physical shape of ``to_blocked`` for logical ``sizes`` with ``lanes`` elements in
    the last axis (``x``, or ``x / 2`` bytes for 4-bit elements)."""
    return (*spec.physical_shape(sizes)[:4], lanes)


# --------------------------------------------------------------------------------------------
# Per-channel parameters
# --------------------------------------------------------------------------------------------


class _Params:
    """The converting arguments of one call: scalars (or None) as given, 1-D vectors as numpy
    arrays cut per block by :meth:`cut`. Small, and picklable (it travels in every task)."""

    __slots__ = ("scalars", "vectors")

    def __init__(self, scalars: dict[str, Any], vectors: dict[str, np.ndarray]) -> None:
        self.scalars = scalars
        self.vectors = vectors

    @classmethod
    def of(cls, **given: Any) -> _Params:
        scalars, vectors = {}, {}
        for name, value in given.items():
            if value is not None and np.ndim(value) == 1:
                vectors[name] = np.asarray(value)
            else:
                scalars[name] = value      # None, a number or anything strided refuses
        return cls(scalars, vectors)

    def cut(self, start: int, stop: int) -> dict[str, Any]:
        """The keyword arguments of the strided call on channels ``start:stop``."""
        return {**self.scalars, **{k: v[start:stop] for k, v in self.vectors.items()}}

    def whole(self) -> dict[str, Any]:
        return {**self.scalars, **self.vectors}

    def __dask_tokenize__(self) -> Any:    # a deterministic graph name for equal arguments
        return (sorted(self.scalars.items(), key=repr), sorted(self.vectors.items()))


def _channel_axis(axis: Any, ndim: int, params: _Params) -> int | None:
    """The axis vectors are cut along: ``axis`` (negative counts from the end; strided checks
    it), or 0 for vectors on a 1-D array, as strided does; None when there are no vectors."""
    if isinstance(axis, (int, np.integer)) and not isinstance(axis, (bool, np.bool_)):
        return int(axis) + ndim if -ndim <= axis < 0 else int(axis)
    if axis is None and params.vectors and ndim == 1:
        return 0
    return axis


def _probe(call: Callable[..., Any], x: Any, axis: int | None, params: _Params,
           spec: BlockedFormat | None = None) -> np.ndarray:
    """The strided call on a probe of x: one element along every axis but ``axis`` (all of
    its channels), so that every argument is checked, with strided's own errors, before the
    graph exists; its result gives the result's dtype (and the padding of blocked formats).

    A message naming the probe's shape names x's instead."""
    shape = tuple(size if i == axis or (spec is not None and i == 4) else min(size, 1)
                  for i, size in enumerate(x.shape))
    probe = np.zeros(shape, x.dtype)
    try:
        return call(probe, **params.whole())
    except (TypeError, ValueError) as exc:
        message = str(exc)
        if spec is not None:    # (from_blocked) the probe went in physically, as y came
            shape = _physical_shape(shape, spec)
            real = _physical_shape(x.shape, spec)
        else:
            real = x.shape
        if str(shape) in message:
            raise type(exc)(message.replace(str(shape), str(real))) from None
        raise


def _resolved_dtype(own: np.dtype, dtype: Any) -> np.dtype:
    """``dtype`` as strided resolves it for a numpy array (bfloat16 names included): the
    dtype of a one-element relayout."""
    return st.relayout(np.zeros(1, own), "C", dtype=dtype).dtype


def _channel_count(channels: Any) -> int:
    """from_blocked's ``channels``: an int (strided's own check and wording)."""
    return int(_core.as_int(channels, "channels"))


# --------------------------------------------------------------------------------------------
# Block functions (module level, partials of plain values: they pickle to worker processes)
# --------------------------------------------------------------------------------------------


def _block_threads(call: functools.partial) -> dict[str, Any]:
    """num_threads for one block's call: the caller's, else one thread (see _BLOCK_THREADS)."""
    given = call.keywords.get("num_threads")
    return {"num_threads": _BLOCK_THREADS if given is None else given}


def _convert_block(block: np.ndarray, *, order: tuple[int, ...], dtype: np.dtype, casting: str,
                   out: Any = None, **kwargs: Any) -> np.ndarray:
    """A copy of ``block`` packed in physical ``order`` (outermost first), converted by
    st.copyto (into ``out`` when given): what st.relayout does, its checks and its reading of
    the layout done once for every block when the graph was built (they cost a 4 MiB block's
    copy 15 %)."""
    if out is None:
        out = np.empty(tuple(block.shape[axis] for axis in order), dtype)
        if order != tuple(range(len(order))):       # (a transposed view is a slower dst)
            out = out.transpose(tuple(order.index(axis) for axis in range(len(order))))
    st.copyto(out, block, casting=casting, **kwargs)
    return out


def _relayout_block(block: np.ndarray, *, call: functools.partial, axis: int | None,
                    params: _Params, block_info: dict[Any, Any] | None = None,
                    target: Any = None) -> np.ndarray:
    """One block of relayout/astype: the vectors cut to its channels along ``axis``."""
    where = _location(block_info, block)
    kwargs = params.whole()
    if params.vectors and axis is not None:
        kwargs = params.cut(*where[axis])
    kwargs.update(_block_threads(call))
    if target is None:
        return call(block, axis=axis, **kwargs)
    _write(call, block, target[_slices(where)], axis=axis, **kwargs)
    return _written(block.ndim)


def _same_for_every_block(block: np.ndarray, *, call: functools.partial, axis: int | None,
                          params: _Params) -> np.ndarray:
    """One block of relayout/astype without vectors: no block_info (dask builds one for every
    task of a function that asks for it)."""
    return call(block, axis=axis, **params.whole(), **_block_threads(call))


def _lazy(block: functools.partial) -> functools.partial:
    """The block function of a lazy relayout/astype: without block_info when nothing is cut
    per block."""
    if block.keywords["params"].vectors:
        return block
    return functools.partial(_same_for_every_block, **block.keywords)


def _write(call: functools.partial, block: np.ndarray, region: np.ndarray,
           **kwargs: Any) -> None:
    """relayout/astype into a region of a numpy ``out`` (out's strides, whatever they are)."""
    call(block, out=region, **kwargs)


def _to_blocked_block(block: np.ndarray, *, call: functools.partial, spec: BlockedFormat,
                      params: _Params, pad: _Padding | None,
                      block_info: dict[Any, Any] | None = None, target: Any = None) -> Any:
    """One block of to_blocked (channels ``start:stop``, a whole number of blocks from
    ``start``), returned in NCHWx order (a view of a CHWN4 block)."""
    where = _location(block_info, block)
    start, stop = where[1]
    kwargs = {**params.cut(start, stop), **_block_threads(call)}
    if target is None:
        packed = _nchwx_view(call(block, **kwargs), spec)
    else:
        region = target[_slices(_blocked_region(where, spec.block))]
        call(block, out=_physical_block(region, spec), **kwargs)
        packed = region
    if pad is not None and stop == pad.channels:
        pad.fill(packed)
    return packed if target is None else _written(5)


def _from_blocked_block(block: np.ndarray, *, call: functools.partial, spec: BlockedFormat,
                        params: _Params, channels: int,
                        block_info: dict[Any, Any] | None = None, target: Any = None) -> Any:
    """One block of from_blocked: blocks ``b0:b1`` of y, channels ``b0 * x`` up to
    ``min(b1 * x, channels)``."""
    where = _location(block_info, block)
    start, stop = (min(b * spec.block, channels) for b in where[1])
    kwargs = {**params.cut(start, stop), **_block_threads(call)}
    physical = _physical_block(block, spec)
    if target is None:
        return call(physical, channels=stop - start, **kwargs)
    region = target[_slices(_unblocked_region(where, spec.block, channels))]
    call(physical, channels=stop - start, out=region, **kwargs)
    return _written(4)


def _location(block_info: dict[Any, Any] | None, block: np.ndarray) -> list[tuple[int, int]]:
    """The block's place in its dask array (array-location), as dask tells the function; the
    whole block when called without (directly, on one array)."""
    if block_info is None:
        return [(0, size) for size in block.shape]
    return list(block_info[0]["array-location"])


def _written(ndim: int) -> np.ndarray:
    """The one-element block an ``out=`` task returns (its data went into out)."""
    return np.ones((1,) * ndim, bool)


class _Padding:
    """The padding lanes of to_blocked's last block as strided fills them for the whole
    array: the quantized zero of the whole call (with a shift per channel: when every
    channel's is the same one), not of the last block's channels alone."""

    __slots__ = ("channels", "four_bit", "lanes", "tail")

    def __init__(self, channels: int, lanes: np.ndarray, tail: int, four_bit: bool) -> None:
        self.channels, self.lanes, self.tail, self.four_bit = channels, lanes, tail, four_bit

    @classmethod
    def of(cls, probe: np.ndarray, spec: BlockedFormat, channels: int,
           four_bit: bool) -> _Padding | None:
        tail = channels % spec.block
        if not tail:
            return None
        lanes = _nchwx_view(probe, spec)[0, -1, 0, 0].copy()
        return cls(channels, lanes, tail, four_bit)

    def __dask_tokenize__(self) -> Any:
        return (self.channels, self.lanes, self.tail, self.four_bit)

    def fill(self, packed: np.ndarray) -> None:
        """Set the padding lanes of the last block of ``packed`` (NCHWx order)."""
        last = packed[:, -1]
        if not self.four_bit:
            last[..., self.tail:] = self.lanes[self.tail:]
            return
        first = -(-self.tail // 2)        # the first byte of padding only
        last[..., first:] = self.lanes[first:]
        if self.tail % 2:                 # a byte of a channel (low nibble) and padding (high)
            shared = last[..., self.tail // 2]
            shared[...] = (shared & 0x0F) | (self.lanes[self.tail // 2] & 0xF0)


# --------------------------------------------------------------------------------------------
# Chunks, regions and the CHWN4 order
# --------------------------------------------------------------------------------------------


def _whole_blocks(x: Any, block: int) -> Any:
    """x with its channel chunks whole multiples of ``block`` (the last excepted), rechunked
    (and said so, once) when they are not."""
    chunks = x.chunks[1]
    if all(c % block == 0 for c in chunks[:-1]):
        return x
    size = block * max(1, round(max(chunks) / block))
    warnings.warn(
        f"x's channel axis is chunked {chunks}, not in whole blocks of {block} channels: "
        f"rechunked to {size} channels a chunk (rechunk x yourself, to multiples of "
        f"{block}, to choose)", PerformanceWarning, stacklevel=3)
    return x.rechunk({1: size})


def _one_lane_chunk(y: Any) -> Any:
    """y with its last axis (a block's lanes) in one chunk, rechunked (and said so) if not."""
    if len(y.chunks[4]) <= 1:
        return y
    warnings.warn(
        f"y's last axis (the lanes of a block) is chunked {y.chunks[4]}: rechunked to one "
        f"chunk of {y.shape[4]} (a block is unpacked whole)", PerformanceWarning, stacklevel=3)
    return y.rechunk({4: -1})


def _unblocked_chunks(block_chunks: tuple[int, ...], x: int, channels: int) -> tuple[int, ...]:
    """Channel chunks of from_blocked's result: ``b * x`` per chunk of ``b`` blocks, the last
    trimmed to ``channels``."""
    ends = [min(e * x, channels) for e in itertools.accumulate(block_chunks)]
    return tuple(b - a for a, b in zip([0, *ends], ends))


def _blocked_region(where: Sequence[tuple[int, int]], x: int) -> list[tuple[int, int]]:
    """The region (NCHWx order) of to_blocked's result that channels ``where[1]`` fill."""
    (c0, c1) = where[1]
    return [where[0], (c0 // x, -(-c1 // x)), where[2], where[3], (0, None)]  # type: ignore


def _unblocked_region(where: Sequence[tuple[int, int]], x: int,
                      channels: int) -> list[tuple[int, int]]:
    """The region of from_blocked's result that blocks ``where[1]`` fill."""
    (b0, b1) = where[1]
    return [where[0], (min(b0 * x, channels), min(b1 * x, channels)), where[2], where[3]]


def _slices(where: Sequence[tuple[int, int | None]]) -> tuple[slice, ...]:
    return tuple(slice(a, b) for a, b in where)


# CHWN4's physical axes (blocks, H, W, N, x) seen in NCHWx order (N, blocks, H, W, x)
_CHWN_AS_NCHWX = (3, 0, 1, 2, 4)
_NCHWX_AS_CHWN = (1, 2, 3, 0, 4)


def _nchwx_view(physical: np.ndarray, spec: BlockedFormat) -> np.ndarray:
    """A physical blocked array seen in NCHWx order (a view for CHWN4, itself otherwise)."""
    return physical.transpose(_CHWN_AS_NCHWX) if spec.chwn else physical


def _physical_block(nchwx: np.ndarray, spec: BlockedFormat) -> np.ndarray:
    """The inverse of _nchwx_view."""
    return nchwx.transpose(_NCHWX_AS_CHWN) if spec.chwn else nchwx


def _physical_shape(shape: tuple[int, ...], spec: BlockedFormat) -> tuple[int, ...]:
    return tuple(shape[i] for i in _NCHWX_AS_CHWN) if spec.chwn else shape


def _physical(result: Any, spec: BlockedFormat) -> Any:
    """to_blocked's dask result in its physical order: CHWN4 blocks were built physically and
    handed over as NCHWx-order views, so this transpose gives every block back contiguous."""
    return _transpose(result, _NCHWX_AS_CHWN) if spec.chwn else result


def _in_nchwx_order(y: Any, spec: BlockedFormat) -> Any:
    return _transpose(y, _CHWN_AS_NCHWX) if spec.chwn else y


# --------------------------------------------------------------------------------------------
# Engines: dask and cubed
# --------------------------------------------------------------------------------------------


def _is_cubed(value: Any) -> bool:
    """Whether ``value`` is a cubed array (cubed is loaded where one exists: never imported
    here)."""
    return "cubed" in sys.modules and isinstance(value, sys.modules["cubed"].Array)


def _map_blocks(x: Any, func: Callable[..., Any], *, dtype: np.dtype, token: str,
                **axes: Any) -> Any:
    """``func`` over every block of x, on x's engine (``chunks``/``new_axis``/``drop_axis``
    in ``axes``, as both engines take them).

    dask: with its meta (an empty numpy array of the result's rank) and a deterministic token.
    cubed: its map_blocks tells a function its block's place by ``block_id`` only (no
    ``block_info``), so a block function that reads dask's array-location gets it from x's
    chunks through :func:`_at_block_id`. cubed writes every block to zarr storage: a result
    dtype zarr has no data type for (bfloat16) would fail only when computed, so it is
    refused here."""
    if not _is_cubed(x):
        rank = x.ndim + ("new_axis" in axes) - ("drop_axis" in axes)
        meta = np.empty((0,) * rank, dtype)
        return x.map_blocks(func, dtype=dtype, meta=meta, token=token, **axes)
    if dtype.type.__module__.startswith("ml_dtypes"):
        raise TypeError(
            f"dtype={dtype.name!r} cannot be the result's dtype for a cubed array: cubed stores "
            f"every block in zarr, which has no {dtype.name} data type; convert a cubed array "
            f"to a numpy dtype (float16, float32, int8, ...), or use a dask array")
    if "block_info" in inspect.signature(func).parameters:
        offsets = tuple(tuple(itertools.accumulate(c, initial=0)) for c in x.chunks)
        func = functools.partial(_at_block_id, func=func, offsets=offsets)
    return sys.modules["cubed"].map_blocks(func, x, dtype=dtype, **axes)


def _at_block_id(block: np.ndarray, *, func: Callable[..., Any],
                 offsets: tuple[tuple[int, ...], ...],
                 block_id: tuple[int, ...] | None = None) -> Any:
    """A block function of dask's ``block_info`` called by cubed, which gives ``block_id``:
    the array-location of the input block ``block_id`` (``offsets``: the chunk boundaries of
    each axis of the input). The whole block when called without (directly)."""
    if block_id is None:
        return func(block)
    location = [(o[i], o[i + 1]) for o, i in zip(offsets, block_id)]
    return func(block, block_info={0: {"array-location": location}})


def _transpose(a: Any, axes: tuple[int, ...]) -> Any:
    """``a.transpose(axes)``: dask's method, cubed's ``permute_dims`` (its arrays have no
    transpose method)."""
    if _is_cubed(a):
        return sys.modules["cubed"].permute_dims(a, axes)
    return a.transpose(axes)


def _check_input(x: Any, name: str, out: Any) -> None:
    """x must be a dask array or a cubed array of numpy blocks; ``out=`` a dask array's only."""
    if not _is_cubed(x):
        _check_dask(x, name)
        return
    if out is not None:
        raise TypeError(
            f"out= cannot be given for a cubed array (got out of type "
            f"{type(out).__module__}.{type(out).__qualname__}): cubed writes every block to "
            f"its own storage, in tasks that cannot reach out; leave out=None and compute the "
            f"result (result.compute()), or write it with cubed.store(result, out) "
            f"(cubed.to_zarr(result, store) for a zarr store)")
    namespace = importlib.import_module("cubed.backend_array_api").namespace
    kind = type(namespace.empty(0))
    if kind is not np.ndarray:
        raise TypeError(
            f"{name} is a cubed array of {kind.__module__}.{kind.__qualname__} blocks (cubed's "
            f"backend array API is {namespace.__name__}): strided.dask converts numpy blocks "
            f"(leave CUBED_BACKEND_ARRAY_API_MODULE unset, or set it to numpy)")


# --------------------------------------------------------------------------------------------
# Checks and out=
# --------------------------------------------------------------------------------------------


def _check_dask(x: Any, name: str) -> None:
    """x must be a dask array of numpy blocks: strided reads host memory, and a cupy or torch
    block would reach it only through a copy the caller did not ask for."""
    if not isinstance(x, da.Array):
        kind = f"{type(x).__module__}.{type(x).__qualname__}"
        raise TypeError(
            f"{name} must be a dask array (dask.array.Array), got {kind}: for an array in "
            f"memory call strided.{'relayout'} and friends, or wrap it with "
            f"dask.array.from_array(...); a cubed array (cubed.Array) is accepted too")
    if any(math.isnan(size) for size in x.shape):
        raise ValueError(f"{name} has unknown chunk sizes (shape {x.shape}): call "
                         f"{name}.compute_chunk_sizes() first (the blocks' places are needed)")
    meta = x._meta
    if type(meta) is not np.ndarray:
        kind = f"{type(meta).__module__}.{type(meta).__qualname__}"
        raise TypeError(
            f"{name} is a dask array of {kind} blocks: strided.dask converts dask arrays of "
            f"numpy blocks (x.map_blocks(numpy.asarray) moves them to host memory first)")


def _check_rank(x: Any, rank: int, name: str, rule: str) -> None:
    if x.ndim != rank:
        raise ValueError(f"{name} has shape {x.shape}: {rule}")


def _refuse_4bit(dtype: Any, what: str) -> None:
    key = getattr(dtype, "name", dtype)
    if isinstance(key, str) and key in ("int4", "uint4"):
        raise ValueError(f"dtype={key!r}: strided.dask.{what} makes byte-sized elements only "
                         f"(4-bit containers change the shape); use strided.dask.to_blocked "
                         f"(NCHW64) for 4-bit elements")


def _numpy_out(out: Any, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray | None:
    """Check ``out``'s shape and dtype; return it when it is a numpy array (written through
    strided), None when it is another array (written by da.store)."""
    out_shape = tuple(getattr(out, "shape", ()))
    if out_shape != tuple(shape):
        raise ValueError(f"out has shape {out_shape} but the result has shape {tuple(shape)}")
    if np.dtype(out.dtype) != dtype:
        raise ValueError(f"out has dtype {out.dtype} but the result's is {dtype}: give an out "
                         f"of the result's dtype (or dtype=...)")
    if isinstance(out, np.ndarray):
        if not out.flags.writeable:
            raise ValueError("out is read-only")
        return out
    if not hasattr(out, "__setitem__"):
        raise TypeError(f"out must be a numpy array or an array that takes region assignment "
                        f"(out[region] = block, as a zarr array), got {type(out).__name__}")
    return None


def _check_out_layout(out: np.ndarray, strides: tuple[int, ...], layout: Any) -> None:
    """A numpy ``out`` of relayout must be laid out as ``layout`` asks (strides of size-1 and
    of empty arrays aside), as st.relayout's ``out`` must."""
    own = st.layout_of(out)
    if out.size and any(a != b and n != 1 for n, a, b in zip(out.shape, own.strides, strides)):
        raise ValueError(f"out has element strides {own.strides} but layout {layout!r} lays "
                         f"its shape {out.shape} out with strides {strides}: pass an out of "
                         f"that layout (or call strided.dask.astype(..., out=out))")


def _compute_into(result: Any, out: Any, x: Any, block: functools.partial, *,
                  spec: BlockedFormat | None = None) -> Any:
    """Compute now into ``out``, and return it.

    numpy ``out`` on a scheduler sharing this process's memory (threads, synchronous): each
    task writes its block through strided straight into its region. On worker processes
    (dask.distributed, the multiprocessing scheduler) a task cannot reach ``out``: the blocks
    come back as they are done and are copied in by strided here. Any other ``out`` (a zarr
    array): ``da.store`` writes each block into its region where it is computed.
    """
    if not isinstance(out, np.ndarray):
        stored = _physical(result, spec) if spec is not None else result
        _check_aligned(stored, out)
        # a zarr array: whole chunks written as their bytes (to_zarr); any other, by region
        target = _stored_chunks(out, "out") if _is_zarr(out) else out
        da.store(stored, target, lock=False)
        return out
    target = _nchwx_view(out, spec) if spec is not None else out
    if _shares_memory():
        chunks = tuple((1,) * len(c) for c in result.chunks)
        drop = {"drop_axis": 4} if result.ndim < x.ndim else {}
        new = {"new_axis": 4} if result.ndim > x.ndim else {}
        done = x.map_blocks(functools.partial(block, target=target), dtype=bool,
                            meta=np.empty((0,) * result.ndim, bool), chunks=chunks,
                            name=f"strided-into-{uuid.uuid4().hex}",   # never hash out
                            **drop, **new)
        done.compute()
        return out
    _gather_into(result, target)
    return out


def _is_zarr(value: Any) -> bool:
    """Whether ``value`` is a zarr array (without importing zarr where it is not loaded)."""
    return "zarr" in sys.modules and isinstance(value, sys.modules["zarr"].Array)


def _shares_memory() -> bool:
    """Whether dask's current scheduler runs tasks in this process (threads or synchronous)."""
    scheduler = dask.base.get_scheduler()
    return scheduler is None or scheduler in (dask.threaded.get, dask.local.get_sync)


def _gather_into(result: Any, target: np.ndarray) -> None:
    """Compute ``result`` on worker processes, copying each block into its region of
    ``target``: on dask.distributed as each arrives (one block at a time held here), on dask's
    process pool all at once (the blocks, as large as ``target``, then copied)."""
    offsets = [tuple(itertools.accumulate(c, initial=0)) for c in result.chunks]
    blocks = result.to_delayed()
    keys = list(np.ndindex(*blocks.shape))
    regions = {k: tuple(slice(o[i], o[i + 1]) for o, i in zip(offsets, k)) for k in keys}
    client = _distributed_client()
    if client is None:      # dask's process pool: one compute (a pool each), then copies
        for key, value in zip(keys, dask.compute(*(blocks[k] for k in keys))):
            st.copyto(target[regions[key]], value)
        return
    from distributed import as_completed

    futures = dict(zip(client.compute([blocks[k] for k in keys]), keys))
    for future, value in as_completed(futures, with_results=True):
        st.copyto(target[regions[futures[future]]], value)
        future.release()


def _distributed_client() -> Any:
    try:
        from distributed import default_client
        return default_client()
    except (ImportError, ValueError):
        return None


def _check_aligned(result: Any, out: Any, name: str = "out") -> None:
    """Blocks written concurrently into a chunked store (zarr) must not share a stored chunk
    (a shard, when the store has them): each write rewrites the whole chunk."""
    grid = getattr(out, "shards", None) or getattr(out, "chunks", None)
    if not grid or len(grid) != result.ndim:
        return
    for axis, (chunks, size) in enumerate(zip(result.chunks, grid)):
        ends = list(itertools.accumulate(chunks))[:-1]
        if any(e % size for e in ends):
            raise ValueError(
                f"{name} is stored in chunks of {tuple(grid)} but the result's axis {axis} is "
                f"chunked {chunks}: blocks would share a stored chunk and overwrite each "
                f"other; rechunk x to multiples of {size} along axis {axis}")


