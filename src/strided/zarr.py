"""zarr v3 codecs on strided's kernels (the optional extra ``strided[zarr]``).

Three array-to-array codecs that replace zarr-python's own under the *same* names and the same
JSON metadata, so that a store written with them is read by any zarr v3 implementation, and the
other way round; only the work on each chunk changes:

``transpose`` (:class:`TransposeCodec`, the zarr v3 core codec)
    zarr-python decodes it into a strided numpy view that a later numpy copy materialises;
    strided's copy materialises the permuted chunk in one pass instead (tiled, threaded), and
    with strided's :class:`NDBuffer` selected, straight into the result of a read.
``numcodecs.fixedscaleoffset`` (:class:`FixedScaleOffset`)
    ``around((x - offset) * scale)`` stored as a narrower type: float32 -> 8-bit encodings by
    strided's converting copy, slab by slab (rounding and cast included); 1-byte encodings
    decoded by strided's affine copy where it was checked exact on all 256 patterns, else
    through a table of the reference's own 256 values.
``numcodecs.astype`` (:class:`AsType`)
    the casts strided's kernels do faster than numpy (float16 <-> float32, 8-bit -> float).

Each takes zarr-python's own route where strided would not give the reference's bytes, or would
not be faster (the class docstrings say when), so stores and values are always zarr-python's,
bit for bit. zarr finds the classes through the package's entry points (importing this module
registers them too) and keeps its defaults until a configuration selects them: :func:`use`
does, globally or in a ``with`` block.

Examples
--------
>>> import numpy as np
>>> import zarr
>>> import strided.zarr
>>> with strided.zarr.use():
...     z = zarr.create_array(zarr.storage.MemoryStore(), shape=(2, 3, 4), dtype="uint8",
...                           chunks=(2, 3, 4), filters=[strided.zarr.TransposeCodec(
...                               order=(1, 2, 0))])
...     z[...] = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
...     z[0, :, 0]
array([0, 4, 8], dtype=uint8)
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

try:
    import zarr
    from zarr.codecs import TransposeCodec as _ZarrTransposeCodec
    from zarr.codecs.numcodecs import AsType as _ZarrAsType
    from zarr.codecs.numcodecs import FixedScaleOffset as _ZarrFixedScaleOffset
    from zarr.core.buffer import cpu as _zarr_cpu
    from zarr.registry import register_codec, register_ndbuffer
except ImportError:  # pragma: no cover - exercised where zarr is absent
    # (no `as` name: it would be a module attribute to type checkers and stubtest, deleted
    # at run time; the ImportError is this one's __context__ and __cause__)
    raise ModuleNotFoundError(
        "strided.zarr needs zarr >= 3.1.3 (and its numcodecs): pip install strided[zarr]",
        name="zarr",
    ) from sys.exc_info()[1]

from strided import _buffers
from strided.copy import copyto

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from zarr.core.array_spec import ArraySpec
    from zarr.core.buffer import NDBuffer as AnyNDBuffer

__all__ = ["CODECS", "AsType", "FixedScaleOffset", "NDBuffer", "TransposeCodec", "reuse_limit",
           "use"]


# --------------------------------------------------------------------------------------------
# transpose
# --------------------------------------------------------------------------------------------


def _checked_order(order: Any) -> tuple[int, ...]:
    """``order`` as a tuple of ints, refused unless it is a permutation of 0..n-1."""
    if isinstance(order, (str, bytes)) or not isinstance(order, Iterable):
        raise TypeError(f"order must be a sequence of ints, got {order!r}")
    values = tuple(order)
    if not all(isinstance(axis, (int, np.integer)) and not isinstance(axis, (bool, np.bool_))
               for axis in values):
        raise TypeError(f"order must be a sequence of ints, got {order!r}")
    axes = tuple(int(axis) for axis in values)
    if sorted(axes) != list(range(len(axes))):
        raise ValueError(f"order must be a permutation of 0..{len(axes) - 1} (each axis once), "
                         f"got {order!r}")
    return axes


def _inverse(order: tuple[int, ...]) -> tuple[int, ...]:
    """The permutation that undoes ``order``: ``inverse[order[i]] = i``."""
    inverse = [0] * len(order)
    for position, axis in enumerate(order):
        inverse[axis] = position
    return tuple(inverse)


#: Unsigned carriers of the same item size: a transpose moves bytes, never values, so a chunk of
#: any fixed-size dtype (datetimes, byte-swapped numbers, fixed strings) is copied as these.
#: 16-byte items travel as complex128, which strided's plain copy moves bit for bit.
_CARRIERS: dict[int, np.dtype[Any]] = {
    1: np.dtype(np.uint8), 2: np.dtype(np.uint16), 4: np.dtype(np.uint32),
    8: np.dtype(np.uint64), 16: np.dtype(np.complex128)}


def _carrier_view(array: np.ndarray) -> np.ndarray | None:
    """``array``'s bytes as an array strided copies (an extra last axis of words for item
    sizes without a carrier of their own); None when there is none (objects, or an odd item
    size in memory that is not C-contiguous)."""
    dtype = array.dtype
    if dtype.hasobject or dtype.kind not in "biufcmMSUV" or dtype.itemsize == 0:
        return None
    carrier = _CARRIERS.get(dtype.itemsize)
    if carrier is not None:
        return array.view(carrier)
    if not array.flags.c_contiguous:
        return None
    word = next(size for size in (8, 4, 2, 1) if dtype.itemsize % size == 0)
    return array.view(_CARRIERS[word]).reshape(*array.shape, dtype.itemsize // word)


def _copy_bytes(dst: np.ndarray, src: np.ndarray) -> bool:
    """Copy ``src`` into ``dst`` (same shape and dtype) by strided's copy, moving bytes as
    their carrier; False, with nothing written, where strided cannot move this dtype."""
    source, target = _carrier_view(src), _carrier_view(dst)
    if source is None or target is None or source.ndim != target.ndim:
        return False
    copyto(target, source)
    return True


def _permuted(array: np.ndarray, axes: tuple[int, ...]) -> np.ndarray | None:
    """A fresh C-contiguous array holding ``array.transpose(axes)``, copied by strided; None
    when strided cannot move this dtype's bytes (the caller then takes numpy's route)."""
    source = _carrier_view(array)
    if source is None:
        return None
    out = _buffers.empty(tuple(array.shape[axis] for axis in axes), array.dtype)
    target = _carrier_view(out)
    assert target is not None  # a fresh C-contiguous array of a carriable dtype
    # A word axis, when the item size needed one, is the last of both and stays last.
    copyto(target, source.transpose(axes + tuple(range(array.ndim, source.ndim))))
    return out


def _transposed(chunk: AnyNDBuffer, axes: tuple[int, ...], consumer: type) -> AnyNDBuffer:
    """``chunk`` permuted by ``axes``: materialised by strided in the same NDBuffer class, or
    left a view when ``consumer`` (the pipeline's NDBuffer class) is strided's :class:`NDBuffer`,
    whose assignment into the result then materialises it by strided, in one pass instead of
    two; zarr-python's own lazy view for what strided does not copy (device arrays, objects)."""
    data = chunk.as_ndarray_like()
    if type(data) is np.ndarray and _carrier_view(data) is not None:
        if issubclass(consumer, NDBuffer):
            return NDBuffer(data.transpose(axes))
        out = _permuted(data, axes)
        if out is not None:
            return type(chunk).from_ndarray_like(out)
    return chunk.transpose(axes)


class NDBuffer(_zarr_cpu.NDBuffer):
    """zarr's host-memory ``NDBuffer`` whose assignments of arrays copy by strided.

    zarr reads a selection by assigning each decoded chunk into the result
    (``out[out_selection] = chunk``), and numpy's assignment of a strided view (a transposed
    chunk) runs numpy's generic strided loop. With this class selected (:func:`use` does)
    those assignments, and the merges of partial writes, are strided's copy: tiled for
    transposes, threaded for large chunks. Anything else (fancy indexing, broadcasting,
    dtype changes, objects) is numpy's assignment, as in zarr's class.

    Examples
    --------
    >>> import numpy as np
    >>> from strided.zarr import NDBuffer
    >>> out = NDBuffer.from_numpy_array(np.zeros((2, 3), np.int16))
    >>> out[...] = NDBuffer.from_numpy_array(np.arange(6, dtype=np.int16).reshape(3, 2).T)
    >>> out.as_numpy_array()
    array([[0, 2, 4],
           [1, 3, 5]], dtype=int16)
    """

    def __setitem__(self, key: Any, value: Any) -> None:
        source = value._data if isinstance(value, _zarr_cpu.NDBuffer) else value
        if (type(source) is np.ndarray and type(self._data) is np.ndarray
                and _is_basic_index(key)):
            target = self._data[key]
            if (type(target) is np.ndarray and target.shape == source.shape
                    and target.dtype == source.dtype and _copy_bytes(target, source)):
                return
        super().__setitem__(key, value)


def _is_basic_index(key: Any) -> bool:
    """Whether ``array[key]`` is a view (slices, integers, ellipsis, newaxis), not a copy."""
    parts = key if isinstance(key, tuple) else (key,)
    return all(part is Ellipsis or part is None
               or (isinstance(part, (slice, int, np.integer))
                   and not isinstance(part, (bool, np.bool_)))
               for part in parts)


class TransposeCodec(_ZarrTransposeCodec):
    """The zarr v3 ``transpose`` codec, materialised by strided's copy.

    The same codec as zarr-python's :class:`zarr.codecs.TransposeCodec` (name ``"transpose"``,
    configuration ``{"order": [...]}``, the same validation), so stores are interchangeable
    with every zarr v3 implementation. As the specification says, encoding a chunk of shape
    ``s`` stores ``chunk.transpose(order)`` (shape ``[s[order[i]] for i ...]``) and decoding
    applies the inverse permutation; the two differ whenever ``order`` is not its own inverse
    (``(1, 2, 0)`` and ``(2, 0, 1)``).

    zarr-python returns a strided numpy view of the chunk, which the next step (the bytes
    codec on write, the copy into the result on read) materialises with numpy's generic
    strided loop; this class returns a fresh C-contiguous chunk copied by strided (tiled
    transposes, threads as strided decides), bit for bit the same bytes. Where the read's
    buffers are strided's :class:`NDBuffer` (:func:`use` selects it), decoding leaves the
    view, and that buffer's assignment copies it, by strided, straight into the result: one
    pass instead of two. Chunks strided does not copy (objects such as variable-length
    strings, arrays that are not numpy's) take zarr-python's route unchanged.

    Parameters
    ----------
    order : sequence of int
        A permutation of ``0..ndim-1``: the chunk's axis stored at each position.

    Raises
    ------
    TypeError
        ``order`` is not a sequence of ints.
    ValueError
        ``order`` is not a permutation (a repeated or missing axis); it does not have the
        array's rank (when the array is created or opened).

    Examples
    --------
    >>> import numpy as np
    >>> from strided.zarr import TransposeCodec
    >>> TransposeCodec(order=[1, 2, 0]).to_dict()
    {'name': 'transpose', 'configuration': {'order': (1, 2, 0)}}
    >>> TransposeCodec(order=[0, 0, 1])
    Traceback (most recent call last):
        ...
    ValueError: order must be a permutation of 0..2 (each axis once), got [0, 0, 1]
    """

    def __init__(self, *, order: Iterable[int]) -> None:
        super().__init__(order=_checked_order(order))

    def _decode_sync(self, chunk_array: AnyNDBuffer, chunk_spec: ArraySpec) -> AnyNDBuffer:
        return _transposed(chunk_array, _inverse(self.order), chunk_spec.prototype.nd_buffer)

    def _encode_sync(self, chunk_array: AnyNDBuffer, _chunk_spec: ArraySpec) -> AnyNDBuffer | None:
        # Encoding always materialises: the bytes codec would copy a view with numpy.
        return _transposed(chunk_array, self.order, _zarr_cpu.NDBuffer)


# --------------------------------------------------------------------------------------------
# numcodecs.fixedscaleoffset and numcodecs.astype
# --------------------------------------------------------------------------------------------

#: What the reference computes an encoding's ``(x - offset) * scale`` in when ``x`` is a float
#: array and the parameters Python numbers (numpy's weak scalars, NEP 50): x's own dtype, which
#: is strided's compute type for float32 and float64 sources too. Integers larger than these
#: bounds would reach each side by different roundings, so they keep the reference's route.
_EXACT_INTS = {np.dtype(np.float32): 2**24, np.dtype(np.float64): 2**53}


#: The encodings strided's affine kernels vectorise (float32 into 8-bit integers: the quantized
#: stores of inference, and measured 2-3x faster than numpy per pass); others run strided's
#: scalar loop, slower than numpy's four vectorised passes, so they keep the reference's route.
#: (_scale_offset is exact for every float32/float64 -> integer pair: the tests check them all.)
_FAST_SCALE_OFFSET = {(np.dtype(np.float32), np.dtype(t)) for t in (np.int8, np.uint8)}

#: The casts where strided's kernels beat numpy's ``astype`` (measured, one thread, 1 Mi
#: elements): float16 <-> float32 (6x, 29x) and 8-bit integers -> float32 / float16. numpy's
#: other contiguous casts are vectorised loops strided does not outrun, so they stay numpy's
#: (_strided_cast is exact for every pair but complex -> real: the tests check them all).
_FAST_CASTS = {(np.dtype(a), np.dtype(b)) for a, b in [
    (np.float32, np.float16), (np.float16, np.float32), (np.uint8, np.float32),
    (np.int8, np.float32), (np.uint8, np.float16), (np.int8, np.float16)]}


def _native(dtype: np.dtype) -> bool:
    return dtype.isnative and dtype.kind in "biufc"


def _evolved_as(codec: Any, evolved: Any) -> Any:
    """``evolved`` (what zarr's class made of ``codec`` for an array) as ``codec``'s class:
    zarr's numcodecs classes rebuild themselves by name (their own class, not a subclass)
    when they fill in a dtype from the array."""
    if type(evolved) is type(codec):
        return evolved
    return type(codec)(**evolved.codec_config)


def _exact_parameter(value: Any, compute: np.dtype) -> bool:
    """Whether strided reads ``value`` as the reference does: a real Python number that
    rounds once, to a finite number, in the compute type."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if isinstance(value, int) and abs(value) > _EXACT_INTS[compute]:
        return False
    with np.errstate(over="ignore"):
        return bool(np.isfinite(compute.type(value)))


class FixedScaleOffset(_ZarrFixedScaleOffset):
    """numcodecs' ``fixedscaleoffset`` filter (zarr name ``numcodecs.fixedscaleoffset``) on
    strided's converting copy.

    The same codec, metadata and values as :class:`zarr.codecs.numcodecs.FixedScaleOffset`:
    encoding stores ``around((x - offset) * scale)`` as ``astype``, decoding returns
    ``x / scale + offset`` as ``dtype``; it is built the same way (``offset``, ``scale``,
    ``dtype``, ``astype`` keywords) and warns, as zarr does, that numcodecs' codecs are not in
    the zarr v3 specification.

    Encoding a float32 chunk into an 8-bit integer type (the quantized stores of inference:
    where strided's affine kernels are vectorised), with ``offset`` and ``scale`` Python
    numbers, is strided's, in the reference's roundings and their order: ``x - offset``
    and the product each rounded in x's dtype, then rounded half to even and cast. It runs
    over slabs of the chunk small enough to stay in the caches: for each, the range check
    below (numpy's minimum and maximum), then one strided pass (``x * scale`` or
    ``x - offset``, rounded and cast) when ``offset`` is 0 or ``scale`` is 1, two otherwise
    (``x - offset`` into a float scratch slab, then the scaling, rounding and cast), so the
    chunk crosses memory once where numpy's formula makes four temporaries. Decoding a chunk
    of a 1-byte type is exact by construction: the codec computes the reference's own results
    for the 256 bit patterns once; where strided's one-pass affine decoding into float32
    (``x * (1 / scale) + offset``) gives those very bytes for all 256 (power-of-two scales,
    or an offset that dominates, often do), it decodes with it, else it gathers from that
    table.
    Everything else (float64, integer or float16 sources, float or wider encodings, device
    arrays) takes the reference's numpy route.

    A chunk holding NaN, or a value whose rounded encoding falls outside ``astype``'s range,
    is encoded by the reference too: numpy's cast has no defined value there (it warns
    ``invalid value encountered in cast`` and gives what the platform's conversion gives,
    wrapped on x86-64) and strided would saturate, so the stored bytes would differ. Such
    values are common: the padding of a ragged edge chunk holds the fill value, often far
    outside the quantized range. The encodings are monotonic in the values, so each slab's
    minimum and maximum decide it.

    Unlike zarr-python 3.1.6's class, a chunk in Fortran order (an array with
    ``config={"order": "F"}`` written in part) is stored in C order, as the specification
    says; zarr's numcodecs wrapper stores it in memory order, which reads back transposed.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from strided.zarr import FixedScaleOffset
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")      # "not in the Zarr version 3 specification"
    ...     codec = FixedScaleOffset(offset=1000, scale=10, dtype="<f8", astype="|u1")
    >>> codec.to_dict()["name"]
    'numcodecs.fixedscaleoffset'
    """

    def evolve_from_array_spec(self, array_spec: ArraySpec) -> FixedScaleOffset:
        return _evolved_as(self, super().evolve_from_array_spec(array_spec))

    @cached_property
    def _encode_plan(self) -> tuple[np.dtype, np.dtype, Any, Any] | None:
        """(dtype, astype, offset, scale) when strided encodes exactly, else None."""
        config = self.codec_config
        dtype = np.dtype(config["dtype"])  # type: ignore[arg-type]
        astype = np.dtype(config.get("astype") or dtype)  # type: ignore[arg-type]
        offset, scale = config.get("offset"), config.get("scale")
        if (dtype, astype) not in _FAST_SCALE_OFFSET:
            return None
        if not (_exact_parameter(offset, dtype) and _exact_parameter(scale, dtype)):
            return None
        return dtype, astype, offset, scale

    @cached_property
    def _decode_table(self) -> np.ndarray | None:
        """The reference's decoding of every bit pattern of a 1-byte ``astype``. (A 2-byte
        table, 65536 entries, outgrows the L2 cache: gathering from it is slower than
        numpy's two vectorised passes.)"""
        astype = np.dtype(self.codec_config.get("astype") or self.codec_config["dtype"])  # type: ignore[arg-type]
        if astype.itemsize != 1 or astype.hasobject:
            return None
        patterns = np.arange(256**astype.itemsize, dtype=_CARRIERS[astype.itemsize])
        with np.errstate(all="ignore"):
            return np.asarray(self._codec.decode(patterns.view(astype)))

    async def _encode_single(self, chunk_data: AnyNDBuffer, chunk_spec: ArraySpec) -> AnyNDBuffer:
        chunk = chunk_data.as_ndarray_like()
        plan = self._encode_plan
        if type(chunk) is np.ndarray and plan is not None and chunk.dtype == plan[0]:
            encoded = _scale_offset(chunk, *plan)
            if encoded is not None:
                return chunk_spec.prototype.nd_buffer.from_ndarray_like(encoded)
        if type(chunk) is np.ndarray and not chunk.flags.c_contiguous:
            # numcodecs flattens in memory order (reshape(-1, order="A")): a Fortran-ordered
            # chunk (zarr's config order "F") would be stored transposed. The specification
            # stores C order, so that is what the reference gets.
            chunk_data = type(chunk_data).from_ndarray_like(np.ascontiguousarray(chunk))
        return await super()._encode_single(chunk_data, chunk_spec)

    @cached_property
    def _decode_affine(self) -> tuple[float, float] | None:
        """(scale, shift) of strided's one-pass affine decoding, ``x * (1 / scale) +
        offset`` in float32, when it gives the reference's bytes for every one of the 256
        patterns of a 1-byte encoding into float32, hence for every chunk (decoding is
        elementwise): a power-of-two scale, or an offset that dominates, often do; else None.
        """
        table = self._decode_table
        config = self.codec_config
        scale, offset = config.get("scale"), config.get("offset")
        if (table is None or table.dtype != np.float32 or not table.dtype.isnative
                or not all(_exact_parameter(v, table.dtype) for v in (scale, offset))
                or scale == 0):
            return None
        astype = np.dtype(config.get("astype") or config["dtype"])  # type: ignore[arg-type]
        if not _native(astype):
            return None
        affine = (1 / scale, float(offset))  # type: ignore[operator, arg-type]
        candidate = np.empty(256, np.float32)
        copyto(candidate, np.arange(256, dtype=np.uint8).view(astype), scale=affine[0],
               shift=affine[1])
        return affine if candidate.tobytes() == table.tobytes() else None

    async def _decode_single(self, chunk_data: AnyNDBuffer, chunk_spec: ArraySpec) -> AnyNDBuffer:
        chunk = chunk_data.as_ndarray_like()
        table = self._decode_table
        if type(chunk) is np.ndarray and table is not None:
            astype = np.dtype(self.codec_config.get("astype") or self.codec_config["dtype"])  # type: ignore[arg-type]
            if chunk.dtype == astype:
                return chunk_spec.prototype.nd_buffer.from_ndarray_like(
                    self._decode_bytes(chunk).reshape(chunk_spec.shape))
        return await super()._decode_single(chunk_data, chunk_spec)

    def _decode_bytes(self, chunk: np.ndarray) -> np.ndarray:
        """A chunk of a 1-byte encoding decoded: by strided's affine pass where it was checked
        exact on every pattern, else by gathering from the table of the reference's values."""
        affine, table = self._decode_affine, self._decode_table
        assert table is not None
        if affine is None:
            return np.take(table, chunk.view(np.uint8))
        out = _buffers.empty(chunk.shape, np.float32)
        copyto(out, chunk, scale=affine[0], shift=affine[1])
        return out


def _encodes_in_range(x: np.ndarray, dtype: np.dtype, astype: np.dtype, offset: Any,
                      scale: Any) -> bool:
    """Whether every ``around((x - offset) * scale)`` is a number in ``astype``'s range: each
    step is monotonic in x (each rounding is), so the encodings of x's extremes bound all of
    them; NaN (which the extremes propagate) is not in range."""
    if x.size == 0:
        return True
    extremes = np.array([x.min(), x.max()], dtype)
    with np.errstate(all="ignore"):
        encoded = np.around((extremes - offset) * scale)
    low, high = float(encoded.min()), float(encoded.max())
    info = np.iinfo(astype)
    # Python compares floats with ints exactly (a float64 bound of a 64-bit range would not).
    return bool(math.isfinite(low) and math.isfinite(high) and info.min <= low
                and high <= info.max)


#: Elements per slab of an encoding: 64 Ki, so that a slab of the source, its float scratch
#: and its encoding (at most 1.1 MiB of float64, int64) stay in the caches between passes.
_SLAB = 1 << 16


def _scale_offset(x: np.ndarray, dtype: np.dtype, astype: np.dtype, offset: Any,
                  scale: Any) -> np.ndarray | None:
    """``around((x - offset) * scale).astype(astype)`` by strided, slab by slab, in the
    reference's roundings: the subtraction and the product each rounded in ``dtype``
    (``x + (-offset)`` is ``x - offset`` exactly), then rounded half to even and cast. None
    when some value is NaN or encodes out of ``astype``'s range (the reference's route then)."""
    out = _buffers.empty(x.shape, astype)
    if not x.flags.c_contiguous:
        # Rare (zarr hands over a view of the caller's array): one slab, any strides.
        return out if _encode_slab(out, x, offset, scale, None) else None
    flat, flat_out = x.reshape(-1), out.reshape(-1)
    scratch = np.empty(min(flat.size, _SLAB), dtype)
    for start in range(0, flat.size, _SLAB):
        stop = min(start + _SLAB, flat.size)
        if not _encode_slab(flat_out[start:stop], flat[start:stop], offset, scale,
                            scratch[:stop - start]):
            return None
    return out


def _encode_slab(out: np.ndarray, x: np.ndarray, offset: Any, scale: Any,
                 scratch: np.ndarray | None) -> bool:
    """Encode ``x`` into ``out`` (False, nothing promised written, when it is not in range)."""
    if not _encodes_in_range(x, x.dtype, out.dtype, offset, scale):
        return False
    # One thread: a slab is a few hundred microseconds of work, less than waking a team costs
    # (far less than waiting for a busy core); zarr and dask run chunks side by side already.
    threads = 1 if scratch is not None else None
    if offset == 0:
        copyto(out, x, scale=scale, casting="unsafe", num_threads=threads)
    elif scale == 1:
        copyto(out, x, shift=-offset, casting="unsafe", num_threads=threads)
    else:
        shifted = np.empty(x.shape, x.dtype) if scratch is None else scratch
        copyto(shifted, x, shift=-offset, num_threads=threads)
        copyto(out, shifted, scale=scale, casting="unsafe", num_threads=threads)
    return True


def _casts_in_range(x: np.ndarray, integer: np.dtype) -> bool:
    """Whether every value of the float array ``x`` truncates into ``integer``'s range (its
    extremes decide; NaN, which they propagate, does not)."""
    if x.size == 0:
        return True
    low, high = float(np.trunc(x.min())), float(np.trunc(x.max()))
    info = np.iinfo(integer)
    # Python compares floats with ints exactly (a float64 bound of a 64-bit range would not).
    return bool(math.isfinite(low) and math.isfinite(high) and info.min <= low
                and high <= info.max)


def _strided_cast(x: np.ndarray, dtype: np.dtype) -> np.ndarray | None:
    """``x.astype(dtype)`` (numpy's unsafe cast, its values) by strided's copy; None where
    strided would not give numpy's bytes: non-native or non-numeric types, complex to real
    (numpy drops the imaginary part, strided refuses), a float chunk holding NaN or values
    outside an integer type's range (numpy's value there is the platform's, strided's
    saturated; the chunk's extremes decide)."""
    src = x.dtype
    if (not (_native(src) and _native(dtype)) or (src.kind == "c" and dtype.kind != "c")
            or (src.kind == "f" and dtype.kind in "iu" and not _casts_in_range(x, dtype))):
        return None
    out = _buffers.empty(x.shape, dtype)
    copyto(out, x, casting="unsafe")
    return out


class AsType(_ZarrAsType):
    """numcodecs' ``astype`` filter (zarr name ``numcodecs.astype``) on strided's converting
    copy.

    The same codec, metadata and values as :class:`zarr.codecs.numcodecs.AsType`: encoding
    stores ``x.astype(encode_dtype)``, decoding returns ``x.astype(decode_dtype)`` (numpy's
    unsafe casts). Each is one strided pass where strided's kernels outrun numpy's (float16
    <-> float32, 8-bit integers -> float32 or float16: the casts of half-precision and
    quantized stores); every other pair is numpy's vectorised ``astype`` already, and takes
    the reference's route. The bytes are always the reference's.

    Examples
    --------
    >>> import warnings
    >>> from strided.zarr import AsType
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")      # "not in the Zarr version 3 specification"
    ...     codec = AsType(encode_dtype="<f2", decode_dtype="<f4")
    >>> codec.to_dict()["configuration"]["encode_dtype"]
    '<f2'
    """

    def evolve_from_array_spec(self, array_spec: ArraySpec) -> AsType:
        return _evolved_as(self, super().evolve_from_array_spec(array_spec))

    def _cast(self, chunk: Any, source: str, target: str) -> np.ndarray | None:
        """``chunk`` cast by strided from the config's ``source`` to its ``target`` dtype;
        None where the reference's route must be taken."""
        if type(chunk) is not np.ndarray:
            return None
        src = np.dtype(self.codec_config[source])  # type: ignore[arg-type]
        dst = np.dtype(self.codec_config[target])  # type: ignore[arg-type]
        if chunk.dtype != src or (src, dst) not in _FAST_CASTS:
            return None
        return _strided_cast(chunk, dst)

    async def _encode_single(self, chunk_data: AnyNDBuffer, chunk_spec: ArraySpec) -> AnyNDBuffer:
        out = self._cast(chunk_data.as_ndarray_like(), "decode_dtype", "encode_dtype")
        if out is None:
            return await super()._encode_single(chunk_data, chunk_spec)
        return chunk_spec.prototype.nd_buffer.from_ndarray_like(out)  # type: ignore[arg-type]

    async def _decode_single(self, chunk_data: AnyNDBuffer, chunk_spec: ArraySpec) -> AnyNDBuffer:
        out = self._cast(chunk_data.as_ndarray_like(), "encode_dtype", "decode_dtype")
        if out is None:
            return await super()._decode_single(chunk_data, chunk_spec)
        shaped = out.reshape(chunk_spec.shape)
        return chunk_spec.prototype.nd_buffer.from_ndarray_like(shaped)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# registration and selection
# --------------------------------------------------------------------------------------------

#: zarr's codec names and the strided classes that implement them.
CODECS: dict[str, type] = {
    "transpose": TransposeCodec,
    "numcodecs.fixedscaleoffset": FixedScaleOffset,
    "numcodecs.astype": AsType,
}


def _qualname(cls: type) -> str:
    """The key zarr's registry files a class under (``zarr.registry.fully_qualified_name``)."""
    return f"{cls.__module__}.{cls.__qualname__}"


# The entry points (pyproject.toml) make zarr find the codecs without this import; importing
# registers them too, so that use() works where the package metadata is stale. zarr's config
# names zarr's own class for each of these names by default, so having a second class
# registered changes nothing (and warns nothing) until a configuration selects it. The NDBuffer
# has no entry point: zarr would import this module for every array it opens.
for _name, _cls in CODECS.items():
    register_codec(_name, _cls)
register_ndbuffer(NDBuffer)


def use(*names: str, ndbuffer: bool = True) -> AbstractContextManager[Any]:
    """Select strided's codecs (and its :class:`NDBuffer`) in zarr's configuration.

    Parameters
    ----------
    *names : str
        zarr codec names among ``"transpose"``, ``"numcodecs.fixedscaleoffset"`` and
        ``"numcodecs.astype"``; none: all three.
    ndbuffer : bool
        Also select :class:`NDBuffer` as zarr's host-memory ``ndbuffer`` (default), so that
        zarr's copies of decoded chunks into a read's result are strided's too: a transposed
        chunk is then copied once, straight into the result, instead of materialised and
        copied again.

    Returns
    -------
    donfig.config_obj.ConfigSet
        What ``zarr.config.set`` returns: the selection holds from the call on, or, used as a
        context manager, within the ``with`` block only (zarr's previous choice is restored on
        leaving it).

    Raises
    ------
    ValueError
        A name that is not one of strided's codecs.

    Notes
    -----
    zarr's configuration keys are dotted paths, so ``"numcodecs.fixedscaleoffset"`` cannot be
    set as ``zarr.config.set({"codecs.numcodecs.fixedscaleoffset": ...})``; this function sets
    the whole ``codecs`` table, zarr's other entries unchanged. For ``transpose`` alone,
    ``zarr.config.set({"codecs.transpose": "strided.zarr.TransposeCodec"})`` does the same.

    Examples
    --------
    >>> import zarr
    >>> import strided.zarr
    >>> with strided.zarr.use("transpose"):
    ...     zarr.config.get("codecs.transpose"), zarr.config.get("ndbuffer")
    ('strided.zarr.TransposeCodec', 'strided.zarr.NDBuffer')
    >>> zarr.config.get("codecs.transpose")
    'zarr.codecs.transpose.TransposeCodec'
    """
    unknown = [name for name in names if name not in CODECS]
    if unknown:
        raise ValueError(f"names must be among {sorted(CODECS)}, got {unknown[0]!r}")
    if not isinstance(ndbuffer, bool):
        raise TypeError(f"ndbuffer must be True or False, got {ndbuffer!r}")
    table = dict(zarr.config.get("codecs", {}))
    table.update({name: _qualname(CODECS[name]) for name in names or CODECS})
    settings: dict[str, Any] = {"codecs": table}
    if ndbuffer:
        settings["ndbuffer"] = _qualname(NDBuffer)
    return zarr.config.set(settings)


def reuse_limit(nbytes: int | None = None) -> int:
    """The bytes of unused result blocks strided's codecs keep for reuse; with ``nbytes``, set
    that bound and return the previous one.

    A chunk's decoded (or encoded) array of 32 MiB or more lives on a block that strided's
    codecs give out again once the array is gone, because glibc returns allocations that large
    to the kernel, whose fresh pages it zeroes at the first touch: for a (3, 4096, 4096) uint8
    chunk that zeroing cost more than the transpose (a decode of 7.9 ms in fresh pages, 3.3 ms
    on a reused block). Smaller results are numpy's arrays, which glibc's heap reuses anyway.
    Up to ``nbytes`` of blocks no array uses any more stay allocated (the oldest are freed
    first); ``0`` keeps none, and frees those kept.

    Parameters
    ----------
    nbytes : int, optional
        The new bound (default 128 MiB: two 48 MiB chunks, as a read decoding chunk after
        chunk, or two at once, needs). None: only return the current bound.

    Returns
    -------
    int
        The bound before the call.

    Raises
    ------
    TypeError
        ``nbytes`` is not an int.
    ValueError
        ``nbytes`` is negative.

    Notes
    -----
    An array on a reused block does not own its memory (its ``base`` holds the block), so
    ``resize`` in place refuses it, as for any view. A forked child starts with no block kept.

    Examples
    --------
    >>> import strided.zarr
    >>> previous = strided.zarr.reuse_limit(0)       # every result in fresh memory
    >>> strided.zarr.reuse_limit(previous)
    0
    >>> strided.zarr.reuse_limit() == previous
    True
    """
    return _buffers.reuse_limit(nbytes)
