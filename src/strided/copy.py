"""Copies between any two layouts, converting on the way: ``copyto``, ``relayout`` and the
blocked channel formats.

Every copy here ends in the compiled copy engine (:mod:`strided._copy`), or, when the dtype
changes or a scale/shift is given, the conversion engine (:mod:`strided._convert`): they plan
the loops for both layouts (merging, reordering and tiling dimensions) and run them without
the GIL, on several threads when OpenMP is available. This module decides *whether* a copy may
happen: it reads both arrays through :mod:`strided.interop`, refuses what cannot be copied
exactly (before a single byte is written), and allocates results in the input's own library.
Whatever depends on an array's library is asked of the adapter that read it (``record.adapter``,
:class:`strided.interop._record.Adapter`), so this module never names a library.

torch tensors that are not on the CPU are copied and converted by torch itself.

Examples
--------
>>> import numpy as np
>>> import strided as st
>>> x = np.arange(6, dtype=np.float32).reshape(1, 3, 1, 2)
>>> y = st.relayout(x, "NHWC")
>>> y.strides, np.array_equal(x, y)
((24, 4, 24, 12), True)
>>> st.to_blocked(x, "NCHW4")[0, 0, 0]
array([[0., 2., 4., 0.],
       [1., 3., 5., 0.]], dtype=float32)
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, overload

from strided import _convert, _copy, _core, _dtypes
from strided._normalize import ImageForm
from strided.formats import BlockedFormat, parse_blocked, physical_order
from strided.interop import _library as library
from strided.interop import container_layouts, describe, view
from strided.interop._record import MemoryRecord, check_view, device_name, type_name
from strided.layout import Layout

if TYPE_CHECKING:  # annotations only: the array types of the libraries, torch never imported
    from strided._typing import BytesLike, NDArray, ScalarT, Tensor

# A library's own copy of two arrays the CPU cannot reach: (dst, src, share_memory).
LibraryCopy = Callable[[Any, Any, bool], None]

# copyto's compiled fast paths, as their adapter gives them (strided.interop._library), bound
# here once: a 16-element copy pays for every lookup.
_fast_copy = library.fast_copy
_fast_convert = library.fast_convert

__all__ = ["copyto", "from_blocked", "relayout", "to_blocked"]

# The overloads of relayout, to_blocked and from_blocked tell type checkers what the docstrings
# say: a result is of its input's library (numpy in, numpy out; torch in, torch out), of the
# input's dtype when no dtype is given. Other libraries (DLPack / array API) type as Any.
_LayoutArg = str | Sequence[int] | Layout


# --------------------------------------------------------------------------------------------
# copyto
# --------------------------------------------------------------------------------------------


def _copyto_rest(dst: Any, src: Any, casting: Any, scale: Any, shift: Any, axis: Any,
                 num_threads: Any, image: ImageForm | None) -> None:
    """copyto past its plain fast copy (tried already, or declined: ``image``), for dtypes of
    whole bytes: the arguments read into plain values, the conversion's fast path, then the
    checked path."""
    conversion = Conversion(casting, scale, shift, axis, image)
    plain = casting is _SAME_KIND and (num_threads is None or type(num_threads) is int)
    num_threads = _copy.threads_argument(num_threads)
    if (not plain and not conversion.affine and conversion.axis is None
            and _fast_copy(dst, src, num_threads)):
        return
    if image is None and _fast_convert(dst, src, conversion.casting, conversion.scale,
                                       conversion.shift, conversion.axis, num_threads):
        return
    _copyto_checked(dst, src, num_threads, conversion)


@_copy.copyto_entry(_fast_copy, _copyto_rest)
def copyto(dst: Any, src: Any, *, casting: str = "same_kind", scale: Any = None,
           shift: Any = None, axis: int | None = None, num_threads: int | None = None,
           dst_dtype: Any = None, src_dtype: Any = None, mean: Any = None, std: Any = None,
           max_value: Any = None, rounding: str = "fused") -> None:
    """Copy the values of ``src`` into ``dst``, converting them to dst's dtype: same sizes,
    any strides on both sides.

    Element ``index`` of ``src`` is written to element ``index`` of ``dst``, whatever the two
    layouts are (padded, permuted, reversed, broadcast source). When the two share memory the
    result is still exactly a copy of ``src`` as it was before the call. When the dtypes
    differ, or ``scale``/``shift`` are given, each element is converted in the same pass
    (the rules are under "Conversion" in the documentation's concepts page):
    ``dst = convert(src * scale + shift)``.

    Parameters
    ----------
    dst : array
        Writeable destination: a numpy array, a writeable buffer-protocol object
        (``bytearray``, ...), a torch tensor or a DLPack / array-API array, in host memory.
        Its elements must not overlap each other.
    src : array
        Source of the same sizes, of any supported library (numpy, bytes-like, torch, DLPack):
        mixing libraries is fine.
    casting : {"no", "equiv", "safe", "same_kind", "unsafe"}
        Which dtype conversions are allowed, as in ``np.copyto``: the default ``"same_kind"``
        allows safe casts and casts within a kind (float64 -> float32, int64 -> int8), not
        float -> int; ``"unsafe"`` allows any (complex -> real excepted: never).
    scale, shift : number or 1-D array-like, optional
        The affine step ``t = src * scale + shift``, computed in ``np.result_type(src.dtype,
        np.float32)`` (float32 for 8- and 16-bit sources and float32, float64 for wider ones)
        with two roundings, a missing term not applied. A float ``dst`` gets ``t`` rounded to
        nearest even; an integer ``dst`` gets ``t`` rounded half to even, saturated to its
        range, NaN as 0. A 1-D vector gives one value per channel along ``axis``.
    axis : int, optional
        The channel axis of vector ``scale``/``shift`` (negative counts from the end); needed
        when a vector is given and the arrays have more than one dimension.
    num_threads : int, optional
        Threads of the copy kernel (>= 1). Default: ``OMP_NUM_THREADS`` if set, else the
        number of cores; small copies run on one thread whatever this says. Always 1 in a
        build without OpenMP.
    mean, std, max_value : number or 1-D array-like, optional
        The *image form* of the affine step, in the words of image pipelines:
        ``dst = (src / max_value - mean) / std`` per channel along ``axis``, carried out as
        ``scale = 1 / (max_value * std)``, ``shift = -mean / std`` (each computed in float64
        and rounded once to the compute type, then the two roundings above). ``max_value`` is
        the input scale (albumentations' ``max_pixel_value``): by default the largest value
        of an integer source's dtype (255 for uint8, as torchvision's ``ToDtype(scale=True)``)
        and 1 for a float source. Not together with ``scale``/``shift``.
    rounding : {"fused", "torchvision"}
        ``"fused"`` (default): the image form as the two-rounding affine step above.
        ``"torchvision"``: bit for bit torchvision's ``ToDtype(float32, scale=True)`` then
        ``Normalize(mean, std)``, three float32 roundings in their order,
        ``((src * float32(1 / max_value)) - mean) / std`` (an integer source only is scaled,
        as ``ToDtype`` does); a float32 ``dst`` and a source of a float32 compute type
        only. It makes a second pass over ``dst`` (the division).
    dst_dtype, src_dtype : {"int4", "uint4"}, optional
        The array is a *container* of 4-bit elements: a uint8 array of the packed bytes (two
        elements a byte, element 2k in the low nibble of byte k), whose innermost physical
        dimension (the one of byte stride 1) of ``b`` bytes holds ``2b`` elements, or
        ``2b - 1`` when the other side has that many (the last high nibble is then left as
        it was). Its other dimensions are the container's. Values written to a 4-bit
        destination saturate to its range with ``scale``/``shift`` (as for any integer) and
        wrap (keep the low 4 bits, as ml_dtypes' ``astype``) in a plain cast. The
        destination's casting is checked as its carrier's (int8 for int4, uint8 for uint4).

    Raises
    ------
    TypeError
        ``dst`` or ``src`` is not an array; ``casting`` refuses the pair of dtypes; a dtype
        strided does not convert (anything but bool, int8..int64, uint8..uint64, float16,
        bfloat16, float32, float64, complex64, complex128), complex -> real, scale/shift with
        a complex side or a bool ``dst``; either holds Python objects (numpy dtype
        ``object``: copying references without their reference counts would corrupt
        memory); ``num_threads`` is not an int.
    ValueError
        The sizes differ (no broadcasting: broadcast ``src`` first, e.g. with
        ``np.broadcast_to``); ``dst`` is read-only, has a lazy torch conjugate / negative bit,
        requires grad, or has elements that overlap each other; either array is not in host
        memory (except for two torch tensors, which torch copies); a bad ``casting``,
        ``axis`` or vector length; ``num_threads < 1``.

    Notes
    -----
    Plain casts give numpy's ``astype`` value wherever numpy defines one (int -> int wraps,
    float -> int truncates toward zero); where numpy's value is undefined (NaN, or a float
    outside the integer type's range) strided saturates to the range and maps NaN to 0.
    bfloat16 rounds as torch does (from float32, to nearest even).

    A torch tensor that ``src`` shows conjugated or negated lazily is resolved first (a
    copy). A torch ``dst`` has its autograd version counter bumped, as any in-place torch op.
    Two torch tensors of which one is not on the CPU are copied by ``dst.copy_(src)``, and
    converted by torch ops on their device with the same rules.

    Examples
    --------
    >>> import numpy as np
    >>> import strided as st
    >>> a = np.arange(6, dtype=np.int32).reshape(2, 3)
    >>> b = np.zeros((3, 2), dtype=np.int32).T       # column-major destination
    >>> st.copyto(b, a)
    >>> b
    array([[0, 1, 2],
           [3, 4, 5]], dtype=int32)

    The source and the destination may overlap; the result is a copy of the source as it was:

    >>> r = np.arange(5)
    >>> st.copyto(r[1:], r[:-1])
    >>> r
    array([0, 0, 1, 2, 3])

    Converting while copying: an HWC uint8 image into a CHW float32 buffer, scaled to [0, 1]
    and normalised per channel, in one pass:

    >>> img = np.array([[[0, 128, 255], [255, 0, 64]]], dtype=np.uint8)   # H=1, W=2, C=3
    >>> chw = np.empty((3, 1, 2), np.float32)
    >>> mean, std = np.array([0.5, 0.5, 0.5]), np.array([0.25, 0.5, 0.5])
    >>> st.copyto(chw.transpose(1, 2, 0), img, scale=1 / (255 * std), shift=-mean / std,
    ...           axis=2)
    >>> chw[:, 0]
    array([[-2.        ,  2.        ],
           [ 0.00392163, -1.        ],
           [ 1.        , -0.4980392 ]], dtype=float32)

    (``0.00392163``, not ``1/255``: ``128 * float32(1 / 127.5) + float32(-1)``, rounded in
    float32 twice, exactly as numpy computes it.)

    Everything is checked before anything is written:

    >>> st.copyto(np.zeros((2, 3), np.int8), np.ones((2, 3)))
    Traceback (most recent call last):
        ...
    TypeError: cannot copy src of dtype float64 into dst of dtype int8 with casting='same_kind' ...
    >>> st.copyto(np.zeros((3, 2), np.int32), a)
    Traceback (most recent call last):
        ...
    ValueError: dst has shape (3, 2) but src has shape (2, 3): copyto needs the same sizes ...
    """
    # The fast paths first and alone: arrays of one dtype they copy by themselves, then plain
    # numpy arrays they convert; anything else (and every refusal) is the checked path's.
    # Every argument but the two arrays is read before either: reading them may run the
    # caller's code (__index__, __float__, __len__, __eq__), which could resize or free an array
    # whose address had already been taken. Plain arguments run none: the fast path declines
    # any others before reading them. (Calls come through _copy.copyto_entry, which takes the
    # plain ones without running this body; this is the whole copy for every other call.)
    image = None
    if mean is not None or std is not None or max_value is not None or rounding != "fused":
        image = ImageForm(mean, std, max_value, rounding)
    if dst_dtype is None and src_dtype is None:
        if image is None and _fast_copy(dst, src, num_threads, casting, scale, shift, axis):
            return
        _copyto_rest(dst, src, casting, scale, shift, axis, num_threads, image)
        return
    dst_sub = None if dst_dtype is None else _dtypes.sub_byte(dst_dtype, "dst_dtype")
    src_sub = None if src_dtype is None else _dtypes.sub_byte(src_dtype, "src_dtype")
    conversion = Conversion(casting, scale, shift, axis, image)
    _copyto_4bit(dst, src, dst_sub, src_sub, conversion, _copy.threads_argument(num_threads))


class Conversion:
    """What copyto was asked to do to the values: the casting rule and the affine step, read
    into plain values (a casting name of strided's own, None, floats or tuples of floats, an
    int axis) when it is made, so that nothing read later runs the caller's code."""

    __slots__ = ("affine", "axis", "casting", "divisor", "image", "names", "scale", "shift")

    def __init__(self, casting: Any = "same_kind", scale: Any = None, shift: Any = None,
                 axis: Any = None, image: ImageForm | None = None) -> None:
        # (a converting copy's fixed cost: no call where a lookup does)
        name = _CASTINGS.get(casting) if type(casting) is str else None
        self.casting = _casting_name(casting) if name is None else name
        self.scale = scale = _core.load_parameter(scale, "scale")
        self.shift = shift = _core.load_parameter(shift, "shift")
        self.axis = None if axis is None else _core.as_int(axis, "axis")
        if image is not None and (scale is not None or shift is not None):
            raise ValueError("give either scale/shift or the image form (mean, std, "
                             "max_value, rounding), not both: the image form is turned into "
                             "a scale and a shift")
        self.image = image         # mean/std/max_value, turned into scale/shift by resolved()
        self.names = ("scale", "shift")    # what the caller called them, for error messages
        self.divisor: Any = None   # the torchvision form's second pass: t / divisor
        self.affine = scale is not None or shift is not None or image is not None

    def resolved(self, src_type: str, dst_type: str) -> Conversion:
        """This conversion with its image form turned into the engine's scale, shift and
        divisor for a source of engine type ``src_type`` (itself when it has none)."""
        if self.image is None:
            return self
        done = Conversion(self.casting, axis=self.axis)
        done.scale, done.shift, done.divisor = self.image.affine(src_type, dst_type)
        done.affine = True
        # which argument a vector's length came from, for the error of a wrong length
        from_std = isinstance(self.image.std, tuple)
        from_mean = isinstance(self.image.mean, tuple)
        done.names = (("std" if from_std else "mean", "mean")
                      if self.image.rounding == "fused" else
                      ("max_value", "mean" if from_mean else "std"))
        return done


def _conversion(casting: Any, scale: Any, shift: Any, axis: Any, mean: Any, std: Any,
                max_value: Any, rounding: Any) -> Conversion:
    """The Conversion of a converting call's arguments, the image form included."""
    return Conversion(casting, scale, shift, axis, ImageForm.of(mean, std, max_value, rounding))


def _casting_name(casting: Any) -> str:
    """``casting`` as one of strided's own strings (a str subclass is read once, here)."""
    if type(casting) is not str:
        casting_str = str.__str__(casting) if isinstance(casting, str) else None
        name = _CASTINGS.get(casting_str) if casting_str is not None else None
    else:
        name = _CASTINGS.get(casting)
    if name is None:
        raise ValueError(f"casting must be one of {', '.join(map(repr, _dtypes.CASTINGS))}, "
                         f"got {casting!r}")
    return name


_CASTINGS = {name: name for name in _dtypes.CASTINGS}
_SAME_KIND = "same_kind"    # copyto's default (the same interned str: `is` tells it)
_PLAIN = Conversion()


def _copyto_checked(dst: Any, src: Any, num_threads: int | None,
                    conversion: Conversion = _PLAIN,
                    src_record: MemoryRecord | None = None) -> None:
    """copyto through the interop layer: every check, then the core, or the library's own copy
    for a pair the CPU cannot reach (two torch tensors on an accelerator). The same rules hold
    on every path. ``num_threads`` and ``conversion`` are plain values already; ``src_record``:
    src as the caller described it already (relayout), so that src is read once."""
    dst_record = _describe(dst, "dst")
    if src_record is None:
        src_record = _describe(src, "src")
    library_copy = library.device_copier(dst_record, src_record)
    if library_copy is None:
        _check_host(dst_record, dst, "dst")
        _check_host(src_record, src, "src")
    _check_writeable(dst_record, dst, "dst")
    _check_same_sizes(dst_record, src_record)
    layout = dst_record.layout
    axis = _checked_axis(conversion.axis, layout.ndim)
    converting = conversion.affine or not library.same_dtype(dst_record, src_record)
    types = params = None
    if converting:
        types = _conversion_types(dst_record, dst, src_record, src, conversion)
        conversion = conversion.resolved(types[1], types[0])
        params = _channel_params(conversion, layout.sizes, axis)
    _check_no_self_overlap(layout, "dst")
    if layout.size == 0:
        return
    shared = False
    if library_copy is not None:
        shared = _may_share_memory(dst_record, src_record)
    else:
        src_record = src_record.adapter.resolved(src_record)
    runs: list[_Piece] = [(None, None, params)]
    _run((dst, dst_record), (src, src_record), runs, num_threads, library_copy, types,
         shared=shared)
    if conversion.divisor is not None:
        _divide((dst, dst_record), runs, conversion, layout.sizes, axis, num_threads,
                library_copy)


# (dst layout, src layout, parameters) of one run of _run: None for the whole array; the
# parameters (scale, shift, param_strides, param_length) of a conversion, else None.
_Params = tuple[Any, Any, tuple[int, ...] | None, int]
_Piece = tuple[Layout | None, Layout | None, _Params | None]


def _run(dst: tuple[Any, MemoryRecord], src: tuple[Any, MemoryRecord], runs: list[_Piece],
         num_threads: int | None, library_copy: LibraryCopy | None,
         types: tuple[str, str] | None, *, shared: bool = False, src_name: str = "src") -> None:
    """What every copy does once its checks have passed: each run copied, or converted from
    the engine's type names ``types`` with the run's parameters.

    When the CPU cannot reach the memory, ``library_copy`` (or the library's own converter)
    copies between the arrays or views of the runs' layouts, ``shared`` telling whether src
    may share dst's memory. Otherwise both addresses are pinned once, by the records'
    adapters, and only engine calls follow; then dst's library is told that its memory was
    written. ``src`` is resolved (no lazy bit) already.
    """
    (dst_array, dst_record), (src_array, src_record) = dst, src
    if library_copy is not None:
        converter = None if types is None else library.device_converter(dst_record, src_record)
        for dst_piece, src_piece, params in runs:
            dst_view = dst_array if dst_piece is None else view(dst_array, dst_piece, copy=False)
            src_view = src_array if src_piece is None else view(src_array, src_piece)
            if converter is not None and types is not None and params is not None:
                converter(dst_view, src_view, shared, *types, *params)
            else:
                library_copy(dst_view, src_view, shared)
        return
    # The addresses, read again from the arrays by code that runs none of the caller's, and
    # checked against the records: whatever ran since they were described (a DLPack producer,
    # a subclass's attributes, a torch function mode) cannot have moved the memory under them.
    dst_base = dst_record.adapter.pinned(dst_record, "dst")
    src_base = src_record.adapter.pinned(src_record, src_name)
    dsize, ssize = dst_record.layout.itemsize, src_record.layout.itemsize
    for dst_piece, src_piece, params in runs:
        dst_layout = dst_record.layout if dst_piece is None else dst_piece
        src_layout = src_record.layout if src_piece is None else src_piece
        dst_ptr = dst_base + dst_layout.offset * dsize
        src_ptr = src_base + src_layout.offset * ssize
        if types is None or params is None:
            _copy.copy_memory(dst_ptr, src_ptr, dst_layout.sizes, dst_layout.strides,
                              src_layout.strides, dsize, num_threads)
        else:
            _convert.convert_memory(dst_ptr, src_ptr, dst_layout.sizes, dst_layout.strides,
                                    src_layout.strides, *types, *params,
                                    num_threads=num_threads)
    dst_record.adapter.written(dst_record)


def _divide(dst: tuple[Any, MemoryRecord], runs: list[_Piece], conversion: Conversion,
            sizes: tuple[int, ...], axis: int | None, num_threads: int | None,
            library_copy: LibraryCopy | None) -> None:
    """The torchvision form's second pass: each run of dst divided in place by
    ``conversion.divisor`` (the engine's DIV32 rows, three float32 roundings in all), its
    vector sliced as the run's parameters are (``sizes``/``axis``: the channel axis of the
    whole arrays)."""
    if library_copy is not None:
        raise ValueError("rounding='torchvision' converts in host memory: move the tensors "
                         "to the CPU first")
    divisor = Conversion("unsafe", conversion.divisor, None, axis)
    divisor.names = ("std", "std")
    scale, _, strides, length = _channel_params(divisor, sizes, axis)
    _, dst_record = dst
    base = dst_record.adapter.pinned(dst_record, "dst")
    size = dst_record.layout.itemsize
    for dst_piece, _, params in runs:
        layout = dst_record.layout if dst_piece is None else dst_piece
        first = 0 if params is None or strides is None else length - params[3]
        piece_strides = strides if params is None or strides is None else params[2]
        address = base + layout.offset * size
        _convert.convert_memory(address, address, layout.sizes, layout.strides, layout.strides,
                                "float32", "float32",
                                scale[first:] if type(scale) is tuple else scale, None,
                                piece_strides, length - first, num_threads=num_threads,
                                divide=True)
    dst_record.adapter.written(dst_record)


def _conversion_types(dst_record: MemoryRecord, dst: Any, src_record: MemoryRecord, src: Any,
                      conversion: Conversion) -> tuple[str, str]:
    """The engine's (dst, src) type names, the pair allowed by ``casting`` and converted by
    the engine; TypeError naming both dtypes otherwise."""
    names = []
    for record, x, name in ((dst_record, dst, "dst"), (src_record, src, "src")):
        engine_name = type_name(record)
        if engine_name is None:
            dtype = record.adapter.dtype_name(x, record)
            raise TypeError(
                f"{name} has dtype {dtype}, which strided does not "
                f"convert: it converts between {', '.join(_dtypes.TYPE_NAMES)} (native byte "
                f"order); for other dtypes dst and src must have the same dtype"
            )
        names.append(engine_name)
    dst_type, src_type = names
    _dtypes.check_pair(dst_type, src_type, conversion.affine)
    if not _dtypes.can_cast(src_type, dst_type, conversion.casting):
        src_dtype = src_record.adapter.dtype_name(src, src_record)
        dst_dtype = dst_record.adapter.dtype_name(dst, dst_record)
        raise TypeError(
            f"cannot copy src of dtype {src_dtype} into dst of dtype "
            f"{dst_dtype} with casting={conversion.casting!r} "
            f"(numpy's rule); pass casting='unsafe' to convert anyway"
        )
    return dst_type, src_type


def _checked_axis(axis: int | None, ndim: int) -> int | None:
    """``axis`` (an int already) checked against the arrays' rank, made non-negative."""
    if axis is None:
        return None
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of range for arrays of {ndim} dimensions")
    return axis % ndim


def _channel_params(conversion: Conversion, sizes: tuple[int, ...], axis: int | None
                    ) -> tuple[Any, Any, tuple[int, ...] | None, int]:
    """(scale, shift, param_strides, param_length) for the engine: numbers as they are,
    vectors (tuples of floats) checked against the channel axis ``axis`` (checked by
    :func:`_checked_axis`)."""
    scale, shift = conversion.scale, conversion.shift
    if type(scale) is not tuple and type(shift) is not tuple:
        return scale, shift, None, 1
    if axis is None:
        if len(sizes) != 1:
            raise ValueError(f"scale/shift are vectors (per channel) but axis is None: give "
                             f"the channel axis (the arrays have {len(sizes)} dimensions)")
        axis = 0
    for value, name in zip((scale, shift), conversion.names):
        if type(value) is tuple and len(value) != sizes[axis]:
            raise ValueError(f"{name} has {len(value)} values but axis {axis} has "
                             f"{sizes[axis]} elements: give one value per channel")
    strides = tuple(int(i == axis) for i in range(len(sizes)))
    return scale, shift, strides, sizes[axis]


def _may_share_memory(a: MemoryRecord, b: MemoryRecord) -> bool:
    """Whether two arrays of one device may share a byte: exact within the work budget, True
    past it (the caller then copies the source first, which is always correct)."""
    if a.device != b.device:
        return False
    la, lb = a.layout, b.layout
    try:
        return _core.shares_memory(la.sizes, la.strides, la.itemsize, lb.sizes, lb.strides,
                                   lb.itemsize, b.ptr - a.ptr)
    except (_core.TooHardError, OverflowError):
        return True


# ---- reading and checking both arrays --------------------------------------------------------


def _describe(x: Any, name: str) -> MemoryRecord:
    """describe(x), its errors naming the argument; arrays whose bytes cannot be copied raw
    (Python objects, quantized values) are refused."""
    try:
        record = describe(x)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{name}: {exc}") from None
    record.adapter.refuse_raw_copy(record, name)
    return record


def _check_host(record: MemoryRecord, x: Any, name: str) -> None:
    if not record.in_host_memory:
        raise ValueError(
            f"{name} is on device {device_name(x, record)}, not in host memory: strided "
            f"copies on the CPU (two torch tensors are copied by torch on any device); move "
            f"it to the CPU first"
        )


def _source(x: Any, name: str) -> tuple[MemoryRecord, LibraryCopy | None]:
    """The record of an array copied into a new array of its library, and the library's own
    copy when the CPU cannot reach it (None: the CPU copies it, from resolved values)."""
    record = _describe(x, name)
    library_copy = library.device_copier(record, record)
    if library_copy is None:
        _check_host(record, x, name)
        record = record.adapter.resolved(record)
    return record, library_copy


def _check_writeable(record: MemoryRecord, x: Any, name: str) -> None:
    """A destination must be writeable, mutable by its library's rules, and hold its values
    as they are (no lazy bit), outside autograd."""
    if not record.writeable:
        raise ValueError(f"{name} is read-only ({type(x).__name__}): copyto cannot write to it")
    if record.immutable:
        raise ValueError(
            f"{name} is an immutable {type(x).__module__.split('.')[0]} array "
            f"({type(x).__name__}): its library promises that it never changes, so copyto "
            f"will not write into it; build a new array from the values instead"
        )
    if record.lazy is not None:
        raise ValueError(
            f"{name} is a torch tensor with the lazy {record.lazy} bit set: its memory holds "
            f"the {'conjugate' if record.lazy == 'conj' else 'negation'} of what it shows, so "
            f"copying into it raw would store wrong values; write into a resolved tensor "
            f"({name}.resolve_{record.lazy}()) instead"
        )
    record.adapter.check_destination(record, name)


def _check_same_sizes(dst_record: MemoryRecord, src_record: MemoryRecord) -> None:
    dst_sizes, src_sizes = dst_record.layout.sizes, src_record.layout.sizes
    if dst_sizes != src_sizes:
        raise ValueError(
            f"dst has shape {dst_sizes} but src has shape {src_sizes}: copyto needs the same "
            f"sizes (it does not broadcast)"
        )


def _check_no_self_overlap(layout: Layout, name: str) -> None:
    try:
        overlapping = layout.overlaps
    except _core.TooHardError as exc:
        # A guess either way could write one element twice: refuse, saying why.
        raise _core.TooHardError(
            f"{name} cannot be checked for elements that overlap each other: {exc}; copy into "
            f"a destination whose strides come from slicing, permuting or reshaping a buffer"
        ) from None
    if overlapping:
        raise ValueError(
            f"{name} has elements that overlap each other (sizes {layout.sizes}, element "
            f"strides {layout.strides}): a copy into it would write some elements twice"
        )


# --------------------------------------------------------------------------------------------
# relayout
# --------------------------------------------------------------------------------------------


@overload
def relayout(x: Tensor, layout: _LayoutArg, *, dtype: Any = None, scale: Any = None,
             shift: Any = None, axis: int | None = None, num_threads: int | None = None,
             mean: Any = None, std: Any = None, max_value: Any = None,
             rounding: str = "fused", out: Any = None) -> Tensor: ...
@overload
def relayout(x: NDArray[ScalarT], layout: _LayoutArg, *, dtype: None = None,
             scale: Any = None, shift: Any = None, axis: int | None = None,
             num_threads: int | None = None, mean: None = None, std: None = None,
             max_value: None = None, rounding: str = "fused",
             out: NDArray[ScalarT] | None = None) -> NDArray[ScalarT]: ...
@overload
def relayout(x: NDArray[Any] | BytesLike, layout: _LayoutArg, *, dtype: Any = None,
             scale: Any = None, shift: Any = None, axis: int | None = None,
             num_threads: int | None = None, mean: Any = None, std: Any = None,
             max_value: Any = None, rounding: str = "fused",
             out: Any = None) -> NDArray[Any]: ...
@overload
def relayout(x: Any, layout: _LayoutArg, *, dtype: Any = None, scale: Any = None,
             shift: Any = None, axis: int | None = None, num_threads: int | None = None,
             mean: Any = None, std: Any = None, max_value: Any = None,
             rounding: str = "fused", out: Any = None) -> Any: ...
def relayout(x: Any, layout: _LayoutArg, *, dtype: Any = None,
             scale: Any = None, shift: Any = None, axis: int | None = None,
             num_threads: int | None = None, mean: Any = None, std: Any = None,
             max_value: Any = None, rounding: str = "fused", out: Any = None) -> Any:
    """A copy of ``x`` in another physical layout: same library, sizes and values (converted
    to ``dtype``, through ``scale``/``shift``, when given).

    Parameters
    ----------
    x : array
        A numpy array (or bytes-like object: the result is a numpy array), a torch tensor on
        any device, or a host DLPack / array-API array.
    layout : str, tuple of int or Layout
        The new physical order, packed: ``"C"`` (row-major), ``"F"`` (column-major), a label
        such as ``"NHWC"`` or ``"CHWN"`` (sizes stay in canonical order, see
        :func:`strided.packed_strides`), or the axes in physical order, outermost first.
        Or a :class:`~strided.Layout` with x's sizes and itemsize: its strides and offset are
        used as they are (padding included; the gaps are zero), in a buffer of
        ``layout.nbytes`` bytes (its itemsize is the result's).
    dtype : dtype, optional
        The result's dtype, of x's library (numpy dtypes for numpy and DLPack libraries,
        ``"bfloat16"`` through ml_dtypes; torch dtypes, or their numpy names, for torch).
        Converted as ``astype`` does (any cast but complex -> real; see :func:`copyto` for
        the values). Default: x's dtype. ``"int4"`` / ``"uint4"`` (or ml_dtypes' types of
        those names) packs the values two a byte into a uint8 *container* (see
        :func:`copyto`'s ``dst_dtype``): the innermost dimension of ``layout`` of ``n``
        elements becomes ``ceil(n / 2)`` bytes (an odd ``n`` leaves the last high nibble 0),
        the other dimensions keep their sizes; ``layout`` must then be a label or an order.
    scale, shift, axis :
        The affine step of :func:`copyto`, applied in the same pass: per channel along
        ``axis`` when vectors.
    num_threads : int, optional
        Threads of the copy (see :func:`copyto`).
    mean, std, max_value, rounding :
        The image form of the affine step (see :func:`copyto`): ``(x / max_value - mean) /
        std`` per channel along ``axis``; with any of them and no ``dtype``, the result is
        float32.
    out : array, optional
        The result, written in place and returned: x's sizes, laid out as ``layout`` asks
        (strides of size-1 dims aside), writeable, in host memory or of x's device; its
        dtype is the result's (``dtype``, when given too, must agree). Checked as
        :func:`copyto` checks its destination. It may share memory with ``x``: the result
        is then still the values of ``x`` as they were.

    Returns
    -------
    array
        ``out`` when given, else a new array of x's library. numpy: an array of the
        physical shape, transposed. torch:
        a tensor on x's device with torch's own strides (``"NHWC"`` is
        ``torch.channels_last``, ``"NDHWC"`` ``channels_last_3d``), in the autograd graph
        when x requires grad. Other libraries: built on the host and handed over with the
        library's ``from_dlpack``.

    Raises
    ------
    TypeError
        ``x`` is not an array, ``layout`` not a label, tuple or Layout, or ``x`` holds Python
        objects.
    ValueError
        A label of the wrong rank or a tuple that is not a permutation; a Layout whose sizes or
        itemsize are not x's, whose elements overlap, or that reaches below offset 0; a layout
        x's library cannot hold (torch: negative strides; some DLPack libraries keep only
        their own strides); a Layout whose buffer (offset included) is larger than the
        machine's memory, refused before any allocation.

    Examples
    --------
    >>> import numpy as np
    >>> import strided as st
    >>> x = np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4)
    >>> y = st.relayout(x, "NHWC")
    >>> st.layout_of(y).label, np.array_equal(x, y)
    ('NHWC', True)
    >>> st.relayout(np.arange(6).reshape(2, 3), "F").strides
    (8, 16)

    A Layout gives any strides, padding included:

    >>> padded = st.Layout((2, 3), (4, 1), itemsize=8)
    >>> z = st.relayout(np.arange(6).reshape(2, 3), padded)
    >>> st.layout_of(z) == padded, z.tolist()
    (True, [[0, 1, 2], [3, 4, 5]])

    Converting on the way: torchvision's ``ToTensor()`` + ``Normalize(mean, std)`` of an HWC
    uint8 image is one call (the same values as ``(img / 255 - mean) / std`` up to float32
    rounding; exactly ``img * scale + shift`` in float32):

    >>> img = np.arange(12, dtype=np.uint8).reshape(2, 2, 3) * 20          # H, W, C
    >>> mean, std = np.array([0.485, 0.456, 0.406]), np.array([0.229, 0.224, 0.225])
    >>> chw = st.relayout(img.transpose(2, 0, 1), "C", dtype=np.float32,
    ...                   scale=1 / (255 * std), shift=-mean / std, axis=0)
    >>> chw.shape, chw.dtype, chw.flags.c_contiguous
    ((3, 2, 2), dtype('float32'), True)
    >>> ref = (img.transpose(2, 0, 1) / 255 - mean[:, None, None]) / std[:, None, None]
    >>> bool(np.allclose(chw, ref, atol=1e-5))
    True
    """
    # the arguments' own code runs before any array is read (see copyto)
    conversion = _conversion("unsafe", scale, shift, axis, mean, std, max_value, rounding)
    num_threads = _copy.threads_argument(num_threads)
    sub = _sub_byte(dtype)
    record = _describe(x, "x")
    if sub is not None:
        if out is not None:
            raise ValueError("relayout into 4-bit elements makes its container: out= is for "
                             "byte-sized results (fill a container with copyto(..., "
                             "dst_dtype=...))")
        return _relayout_4bit(x, record, layout, sub, conversion, num_threads)
    if dtype is None and conversion.image is not None:
        dtype = "float32"      # the image form's result, as torchvision's
    if out is not None:
        return _relayout_into(out, x, record, layout, dtype, conversion, num_threads)
    new_dtype, itemsize = None, record.layout.itemsize
    if dtype is not None:
        _, new_dtype = record.adapter.resolve_dtype(dtype)
        itemsize = new_dtype.itemsize
    target, order = _relayout_target(layout, record, itemsize)
    converting = dtype is not None or conversion.affine
    graph_copy = record.adapter.graph_copier(record)
    if graph_copy is not None and conversion.affine:
        raise ValueError("x requires grad: relayout with scale/shift would leave the autograd "
                         "graph; compute x * scale + shift with torch, or detach() x first")
    out = _allocate(x, record, target, order, zero=_has_gaps(target),
                    blame=f"layout {layout!r}" if isinstance(layout, Layout) else "x",
                    dtype=new_dtype)
    if graph_copy is not None:
        graph_copy(out, x)      # the library's own copy keeps the result in the autograd graph
    else:
        _fill_from(out, x, record, num_threads, conversion if converting else None)
    return record.adapter.hand_over(x, record, out, target)


def _relayout_into(out: Any, x: Any, record: MemoryRecord, layout: Any, dtype: Any,
                   conversion: Conversion, num_threads: int | None) -> Any:
    """relayout(x, layout, out=out): out checked against what relayout would have made (the
    sizes, the layout, the dtype), then filled as copyto fills a destination."""
    out_record = _describe(out, "out")
    if out_record.layout.sizes != record.layout.sizes:
        raise ValueError(f"out has shape {out_record.layout.sizes} but x has shape "
                         f"{record.layout.sizes}: relayout keeps the sizes")
    _check_out_dtype(out, out_record, record, dtype)
    target, _ = _relayout_target(layout, record, out_record.layout.itemsize)
    if not _same_layout(out_record.layout, target):
        raise ValueError(f"out has element strides {out_record.layout.strides} but layout "
                         f"{layout!r} lays x's sizes {record.layout.sizes} out with strides "
                         f"{target.strides}: pass an out of that layout")
    converting = dtype is not None or conversion.affine or not library.same_dtype(
        out_record, record)
    _fill_from(out, x, record, num_threads, conversion if converting else None)
    return out


def _fill_from(out: Any, x: Any, record: MemoryRecord, num_threads: int | None,
               conversion: Conversion | None) -> None:
    """relayout's copy of x (``record``, described once) into its result: converting, or a
    plain copy by copyto's compiled fast path where it applies."""
    if conversion is not None:
        _copyto_checked(out, x, num_threads, conversion, src_record=record)
    elif not _fast_copy(out, x, num_threads):
        _copyto_checked(out, x, num_threads, src_record=record)


def _check_out_dtype(out: Any, out_record: MemoryRecord, record: MemoryRecord,
                    dtype: Any) -> None:
    """An ``out=`` whose dtype is not the ``dtype`` also asked for (of x's library, as
    ``record`` reads it) is a ValueError: out's dtype is the result's."""
    if dtype is None:
        return
    name, _ = record.adapter.resolve_dtype(dtype)
    if name != type_name(out_record):
        raise ValueError(f"dtype is {name} but out has dtype "
                         f"{out_record.adapter.dtype_name(out, out_record)}: give one "
                         f"(out's dtype is the result's)")


def _same_layout(a: Layout, b: Layout) -> bool:
    """Whether two layouts of the same sizes place every element at the same offset (the
    strides of size-1 dims do not matter; an empty layout places none)."""
    if a.size == 0:
        return True
    return all(sa == sb or n == 1 for n, sa, sb in zip(a.sizes, a.strides, b.strides))


def _relayout_target(layout: Any, record: MemoryRecord,
                     itemsize: int) -> tuple[Layout, tuple[int, ...] | None]:
    """The layout of relayout's result (elements of ``itemsize`` bytes) and, when it is
    packed, its physical order."""
    own = record.layout
    if not isinstance(layout, Layout):
        order = physical_order(layout, own.ndim)
        return Layout.packed(own.sizes, order, itemsize=itemsize), order
    if layout.sizes != own.sizes:
        raise ValueError(f"layout has sizes {layout.sizes} but x has shape {own.sizes}: "
                         f"relayout keeps the sizes")
    if layout.itemsize != itemsize:
        raise ValueError(
            f"layout.itemsize is {layout.itemsize} but the result's elements are {itemsize} "
            f"bytes; build the layout with itemsize={itemsize}"
        )
    _check_no_self_overlap(layout, "layout")
    if layout.size and layout.span[0] < 0:
        raise ValueError(
            f"layout reaches element offset {layout.span[0]}, below offset 0 (span "
            f"{layout.span}): raise its offset so that every element is at offset 0 or above"
        )
    return layout, None


def _has_gaps(layout: Layout) -> bool:
    """The buffer of ``layout`` (offsets 0 to its last element) holds memory no element uses."""
    return layout.size > 0 and layout.nbytes != layout.size * layout.itemsize


def _host_memory() -> int | None:
    """Bytes of physical memory of this machine, where the OS tells (POSIX); else None."""
    if not _HOST_MEMORY:
        try:
            _HOST_MEMORY.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
        except (AttributeError, ValueError, OSError):
            _HOST_MEMORY.append(None)
    return _HOST_MEMORY[0]


# _host_memory's answer, asked once (a plain list rather than functools.cache, whose wrapper's
# (*args, **kwargs) signature is not the function's).
_HOST_MEMORY: list[int | None] = []


def _check_fits(layout: Layout, blame: str) -> None:
    """Refuse a host allocation larger than the machine's memory before asking for it.

    A huge block size or offset asks for terabytes: numpy's MemoryError (or, with memory
    overcommit, an array that cannot be filled) says nothing of which argument did it.
    """
    memory = _host_memory()
    if memory is not None and layout.nbytes > memory:
        raise ValueError(
            f"{blame}: the new array would need {layout.nbytes} bytes "
            f"({layout.nbytes / 2**30:.1f} GiB), more than this machine's memory "
            f"({memory / 2**30:.1f} GiB)"
        )


def _allocate(x: Any, record: MemoryRecord, layout: Layout, order: tuple[int, ...] | None, *,
              zero: bool, blame: str, dtype: Any = None) -> Any:
    """A new array laid out as ``layout``, made by x's library (see
    :meth:`strided.interop._record.Adapter.allocate`) once it is known to fit in host memory.

    ``blame`` names the argument that decided the size, for the error raised when the array
    would not fit.
    """
    if record.in_host_memory:
        _check_fits(layout, blame)
    return record.adapter.allocate(x, record, layout, order, zero, dtype)


# --------------------------------------------------------------------------------------------
# Blocked channel formats
# --------------------------------------------------------------------------------------------


@overload
def to_blocked(x: Tensor, fmt: str | BlockedFormat, *, dtype: Any = None,
               scale: Any = None, shift: Any = None,
               num_threads: int | None = None, mean: Any = None, std: Any = None,
               max_value: Any = None, rounding: str = "fused", out: Any = None) -> Tensor: ...
@overload
def to_blocked(x: NDArray[ScalarT], fmt: str | BlockedFormat, *, dtype: None = None,
               scale: Any = None, shift: Any = None,
               num_threads: int | None = None, mean: None = None, std: None = None,
               max_value: None = None, rounding: str = "fused",
               out: None = None) -> NDArray[ScalarT]: ...
@overload
def to_blocked(x: NDArray[Any], fmt: str | BlockedFormat, *, dtype: Any = None,
               scale: Any = None, shift: Any = None,
               num_threads: int | None = None, mean: Any = None, std: Any = None,
               max_value: Any = None, rounding: str = "fused",
               out: Any = None) -> NDArray[Any]: ...
@overload
def to_blocked(x: Any, fmt: str | BlockedFormat, *, dtype: Any = None, scale: Any = None,
               shift: Any = None, num_threads: int | None = None, mean: Any = None,
               std: Any = None, max_value: Any = None, rounding: str = "fused",
               out: Any = None) -> Any: ...
def to_blocked(x: Any, fmt: str | BlockedFormat, *, dtype: Any = None, scale: Any = None,
               shift: Any = None, num_threads: int | None = None, mean: Any = None,
               std: Any = None, max_value: Any = None, rounding: str = "fused",
               out: Any = None) -> Any:
    """Pack a logical ``(N, C, H, W)`` array into a blocked channel format.

    Parameters
    ----------
    x : array
        Rank 4, logical sizes ``(N, C, H, W)``, any strides, of any supported library.
    fmt : str or BlockedFormat
        ``"NCHWx"`` for any block ``x >= 1`` (``"NCHW4"``, ``"NCHW32"``, ...), oneDNN's
        ``"nChw{x}c"`` (``"nChw8c"``, ``"nChw16c"``: the same layout as NCHWx), or
        ``"CHWN4"``; see :func:`strided.formats.parse_blocked`.
    dtype : dtype, optional
        The result's dtype (as for :func:`relayout`): packing float32 into ``np.int8``
        quantizes, with ``scale``/``shift``. ``"int4"`` / ``"uint4"`` (or ml_dtypes' types)
        quantizes into 4-bit elements packed two a byte, element 2k of a block in the low
        nibble of its byte k: the result is a uint8 *container* of the physical shape with
        its last dimension halved (``(N, ceil(C/64), H, W, 32)`` for NCHW64, byte for byte
        MegEngine's NCHW64 and CUTLASS's NC64HW64); the block must be even.
    scale, shift : number or 1-D array-like of C values, optional
        The affine step of :func:`copyto`, per channel when vectors (the channel axis is C):
        ``y = saturate(round_half_even(x * scale + shift))`` for an integer dtype. The
        padding channels of an integer result hold the *quantized zero*,
        ``saturate(round_half_even(shift))``, so that they dequantize to 0 (with a shift per
        channel: when every channel's gives the same one, else 0).
    num_threads : int, optional
        Threads of the copy (see :func:`copyto`).
    mean, std, max_value, rounding :
        The image form of the affine step (see :func:`copyto`), per channel along C; with
        any of them and no ``dtype``, the result is float32.
    out : array, optional
        The result, written in place and returned: of the physical shape and the result's
        dtype (``dtype``, when given too, must agree), any strides, writeable; its padding
        channels are written too. Checked as :func:`copyto` checks its destination; it may
        share memory with ``x``. For ``dtype="int4"``/``"uint4"``: a uint8 container of
        the physical shape with the last dimension halved.

    Returns
    -------
    array
        ``out`` when given, else a new packed rank-5 array of x's library and dtype (or
        ``dtype``), of the physical shape
        :func:`strided.formats.blocked_shape` gives: ``(N, ceil(C/x), H, W, x)`` for NCHWx,
        ``(ceil(C/4), H, W, N, 4)`` for CHWN4. Channel ``c`` of x is
        ``[n, c // x, h, w, c % x]`` (NCHWx); the channels after the last one, up to a
        multiple of x, are zeros (the quantized zero of an integer result).

    Raises
    ------
    TypeError
        ``x`` is not an array or ``fmt`` not a string.
    ValueError
        ``x`` is not rank 4, or ``fmt`` is not a blocked format, or its block makes the
        result larger than the machine's memory (refused before any allocation).

    Examples
    --------
    Six channels in blocks of four: the second block holds two channels and two zero lanes.

    >>> import numpy as np
    >>> import strided as st
    >>> x = np.arange(6, dtype=np.int16).reshape(1, 6, 1, 1)
    >>> y = st.to_blocked(x, "NCHW4")
    >>> y.shape
    (1, 2, 1, 1, 4)
    >>> y.ravel()
    array([0, 1, 2, 3, 4, 5, 0, 0], dtype=int16)
    >>> np.array_equal(st.from_blocked(y, "NCHW4", channels=6), x)
    True

    Quantizing float32 into int8 NCHW4 in the same pass (the padding lanes stay 0):

    >>> f = np.array([0.5, -1.2, 3.0, 100.0, 2.5], np.float32).reshape(1, 5, 1, 1)
    >>> st.to_blocked(f, "NCHW4", dtype=np.int8, scale=10.0).ravel()
    array([   5,  -12,   30,  127,   25,    0,    0,    0], dtype=int8)

    ... and into 4-bit NCHW64, asymmetric uint4 (zero point 8: the padding holds 8):

    >>> q = st.to_blocked(f, "NCHW64", dtype="uint4", scale=2.0, shift=8.0)
    >>> q.shape, q.dtype
    ((1, 1, 1, 1, 32), dtype('uint8'))
    >>> [hex(b) for b in q.ravel()[:4]]                   # 9, 6 | 14, 15 | 13, 8 | 8, 8
    ['0x69', '0xfe', '0x8d', '0x88']
    >>> st.from_blocked(q, "NCHW64", channels=5, src_dtype="uint4", dtype=np.float32,
    ...                 scale=0.5, shift=-4.0).ravel()
    array([ 0.5, -1. ,  3. ,  3.5,  2.5], dtype=float32)
    """
    spec = parse_blocked(fmt)
    # before any array is read
    params = _conversion("unsafe", scale, shift, 1, mean, std, max_value, rounding)
    num_threads = _copy.threads_argument(num_threads)
    sub = _sub_byte(dtype)
    record, library_copy = _source(x, "x")
    n, c, h, w = _logical_sizes(record.layout, spec)
    if sub is not None:
        return _to_blocked_4bit(x, record, spec, sub, params, num_threads, out)
    if dtype is None and params.image is not None:
        dtype = "float32"      # the image form's result, as torchvision's
    conversion, new_dtype, itemsize = _blocked_conversion(record, dtype, params)
    physical = spec.physical_shape((n, c, h, w))
    given = out is not None
    if out is None:
        out = _allocate(x, record, Layout(physical, itemsize=itemsize), order=tuple(range(5)),
                        zero=c % spec.block != 0, blame=f"fmt {spec.name!r} (block "
                        f"{spec.block}) for x of shape {(n, c, h, w)}", dtype=new_dtype)
        out_record = describe(out)
    else:
        out_record, record, x, conversion = _given_out(out, physical, (x, record), dtype,
                                                       library_copy, conversion, params)
    conversion = _resolved(conversion, (out, out_record), (x, record))
    pieces = _blocked_pieces(record.layout, out_record.layout, spec)
    _copy_pieces((out, out_record), (x, record),
                 [(blocked, logical) for logical, blocked in pieces], num_threads, library_copy,
                 conversion, _channel_pieces(record.layout, out_record.layout, spec))
    zero = _padding_zero(conversion, type_name(out_record),
                         type_name(record) if conversion is not None else None)
    if (zero or given) and c % spec.block and n * h * w:
        padding = _padding_piece(out_record.layout, spec, c)
        view(out, padding, copy=False)[...] = zero
        out_record.adapter.written(out_record)
    if given:
        return out
    return record.adapter.hand_over(x, record, out, out_record.layout)


@overload
def from_blocked(y: Tensor, fmt: str | BlockedFormat, *, channels: int,
                 dtype: Any = None, scale: Any = None, shift: Any = None,
                 num_threads: int | None = None, src_dtype: Any = None, mean: Any = None,
                 std: Any = None, max_value: Any = None, rounding: str = "fused",
                 out: Any = None) -> Tensor: ...
@overload
def from_blocked(y: NDArray[ScalarT], fmt: str | BlockedFormat, *, channels: int,
                 dtype: None = None, scale: Any = None, shift: Any = None,
                 num_threads: int | None = None, src_dtype: None = None) -> NDArray[ScalarT]: ...
@overload
def from_blocked(y: NDArray[Any], fmt: str | BlockedFormat, *, channels: int,
                 dtype: Any = None, scale: Any = None, shift: Any = None,
                 num_threads: int | None = None, src_dtype: Any = None, mean: Any = None,
                 std: Any = None, max_value: Any = None, rounding: str = "fused",
                 out: Any = None) -> NDArray[Any]: ...
@overload
def from_blocked(y: Any, fmt: str | BlockedFormat, *, channels: int, dtype: Any = None,
                 scale: Any = None, shift: Any = None, num_threads: int | None = None,
                 src_dtype: Any = None, mean: Any = None,
                 std: Any = None, max_value: Any = None, rounding: str = "fused",
                 out: Any = None) -> Any: ...
def from_blocked(y: Any, fmt: str | BlockedFormat, *, channels: int, dtype: Any = None,
                 scale: Any = None, shift: Any = None, num_threads: int | None = None,
                 src_dtype: Any = None, mean: Any = None,
                 std: Any = None, max_value: Any = None, rounding: str = "fused",
                 out: Any = None) -> Any:
    """Unpack a blocked channel format into a packed row-major ``(N, C, H, W)`` array.

    The inverse of :func:`to_blocked`: the padding channels are dropped.

    Parameters
    ----------
    y : array
        Rank 5, exactly the physical shape of ``fmt`` (``(N, blocks, H, W, x)`` for NCHWx,
        ``(blocks, H, W, N, 4)`` for CHWN4), any strides, of any supported library.
    fmt : str or BlockedFormat
        The blocked format, as for :func:`to_blocked`.
    channels : int
        ``C``, the number of logical channels: ``(blocks - 1) * x < C <= blocks * x``
        (``C = 0`` when there are no blocks).
    dtype : dtype, optional
        The result's dtype (default: y's; the carrier for 4-bit elements, ``int8`` for
        int4 and ``uint8`` for uint4).
    scale, shift : number or 1-D array-like of C values, optional
        The affine step of :func:`copyto` (dequantizing: ``x = y * scale + shift``).
    num_threads : int, optional
        Threads of the copy (see :func:`copyto`).
    src_dtype : {"int4", "uint4"}, optional
        y is a uint8 container of 4-bit elements, as :func:`to_blocked` makes them: its last
        dimension holds the block in ``x / 2`` contiguous bytes.
    mean, std, max_value, rounding :
        The image form of the affine step (see :func:`copyto`), per channel along C; with
        any of them and no ``dtype``, the result is float32.
    out : array, optional
        The result, written in place and returned: sizes ``(N, C, H, W)``, any strides,
        writeable, of the result's dtype (``dtype``, when given too, must agree). Checked as
        :func:`copyto` checks its destination; it may share memory with ``y``.

    Returns
    -------
    array
        ``out`` when given, else a new packed row-major array of y's library and dtype, of
        sizes ``(N, C, H, W)``.

    Raises
    ------
    TypeError
        ``y`` is not an array, ``fmt`` not a string, ``channels`` not an int.
    ValueError
        ``y`` is not rank 5, its last dimension is not the block, or ``channels`` does not fit
        its number of blocks.

    Examples
    --------
    >>> import numpy as np
    >>> import strided as st
    >>> y = np.arange(16, dtype=np.float32).reshape(1, 2, 1, 2, 4)   # NCHW4, 2 blocks
    >>> st.from_blocked(y, "NCHW4", channels=5)[0, :, 0]
    array([[ 0.,  4.],
           [ 1.,  5.],
           [ 2.,  6.],
           [ 3.,  7.],
           [ 8., 12.]], dtype=float32)
    >>> st.from_blocked(y, "NCHW4", channels=9)
    Traceback (most recent call last):
        ...
    ValueError: channels is 9 but y of shape (1, 2, 1, 2, 4) holds 2 blocks of 4 channels: ...
    """
    spec = parse_blocked(fmt)
    # before any array is read
    params = _conversion("unsafe", scale, shift, 1, mean, std, max_value, rounding)
    channels = _core.as_int(channels, "channels")           # (bools refused)
    num_threads = _copy.threads_argument(num_threads)
    sub = None if src_dtype is None else _dtypes.sub_byte(src_dtype, "src_dtype")
    record, library_copy = _source(y, "y")
    if dtype is None and params.image is not None:
        dtype = "float32"      # the image form's result, as torchvision's
    if sub is not None:
        return _from_blocked_4bit(y, record, spec, sub, channels, dtype, params, num_threads,
                                  out)
    sizes = _unblocked_sizes(record.layout, spec, channels)
    conversion, new_dtype, itemsize = _blocked_conversion(record, dtype, params)
    given = out is not None
    if out is None:
        out = _allocate(y, record, Layout(sizes, itemsize=itemsize), order=tuple(range(4)),
                        zero=False, blame=f"channels={channels!r}", dtype=new_dtype)
        out_record = describe(out)
    else:
        out_record, record, y, conversion = _given_out(out, sizes, (y, record), dtype,
                                                       library_copy, conversion, params)
    conversion = _resolved(conversion, (out, out_record), (y, record))
    pieces = _blocked_pieces(out_record.layout, record.layout, spec)
    _copy_pieces((out, out_record), (y, record), pieces, num_threads, library_copy, conversion,
                 _channel_pieces(out_record.layout, record.layout, spec), src_name="y")
    if given:
        return out
    return record.adapter.hand_over(y, record, out, out_record.layout)


def _resolved(conversion: Conversion | None, dst: tuple[Any, MemoryRecord],
              src: tuple[Any, MemoryRecord]) -> Conversion | None:
    """A blocked call's conversion with its image form turned into scale/shift (the types
    checked as _copy_pieces checks them)."""
    if conversion is None or conversion.image is None:
        return conversion
    types = _conversion_types(dst[1], dst[0], src[1], src[0], conversion)
    return conversion.resolved(types[1], types[0])


def _given_out(out: Any, sizes: tuple[int, ...], src: tuple[Any, MemoryRecord], dtype: Any,
               library_copy: LibraryCopy | None, conversion: Conversion | None,
               params: Conversion) -> tuple[MemoryRecord, MemoryRecord, Any, Conversion | None]:
    """A blocked call's ``out=``: (its record, the source's record and array, unshared from
    out, the conversion: ``params`` when out's dtype differs from the source's)."""
    x, record = src
    out_record = _blocked_out(out, sizes, record, dtype, library_copy)
    record, x = _unshared(out_record, record, x)
    if conversion is None and not library.same_dtype(out_record, record):
        conversion = params
    return out_record, record, x, conversion


def _blocked_out(out: Any, sizes: tuple[int, ...], record: MemoryRecord, dtype: Any,
                 library_copy: LibraryCopy | None) -> MemoryRecord:
    """The record of a blocked call's ``out``, checked as copyto checks a destination: the
    sizes the call makes, writeable, on the host (or where the library copies), its dtype
    the one asked for, no element overlapping another."""
    out_record = _describe(out, "out")
    if library_copy is None:
        _check_host(out_record, out, "out")
    _check_writeable(out_record, out, "out")
    if out_record.layout.sizes != tuple(sizes):
        raise ValueError(f"out has shape {out_record.layout.sizes} but the result has shape "
                         f"{tuple(sizes)}")
    _check_out_dtype(out, out_record, record, dtype)
    _check_no_self_overlap(out_record.layout, "out")
    return out_record


def _unshared(out_record: MemoryRecord, record: MemoryRecord, x: Any) -> tuple[MemoryRecord, Any]:
    """(record, array) of a source that shares no memory with ``out``: x itself, or a copy
    of it when the two may share a byte (a blocked call writes in several pieces, and one
    piece must not overwrite what a later one reads)."""
    if not _may_share_memory(out_record, record):
        return record, x
    copy = relayout(x, tuple(range(record.layout.ndim)))
    return _source(copy, "x")[0], copy


def _blocked_conversion(record: MemoryRecord, dtype: Any,
                        params: Conversion) -> tuple[Conversion | None, Any, int]:
    """(the conversion or None for a plain copy, the result's library dtype or None for
    x's, the result's itemsize) of to_blocked's / from_blocked's arguments (``params``: their
    scale and shift, already read)."""
    if dtype is None and not params.affine:
        return None, None, record.layout.itemsize
    new_dtype, itemsize = None, record.layout.itemsize
    if dtype is not None:
        _, new_dtype = record.adapter.resolve_dtype(dtype)
        itemsize = new_dtype.itemsize
    return params, new_dtype, itemsize


def _channel_pieces(logical: Layout, blocked: Layout, spec: BlockedFormat) -> list[Layout]:
    """For each piece of :func:`_blocked_pieces`, the layout of its logical side over the
    per-channel parameters: a vector of C values seen as ``(N, C, H, W)`` with strides
    ``(0, 1, 0, 0)``, cut exactly as the logical layout is (its offset is the first channel)."""
    channels = Layout(logical.sizes, (0, 1, 0, 0))
    return [piece for piece, _ in _blocked_pieces(channels, blocked, spec)]


def _logical_sizes(layout: Layout, spec: BlockedFormat) -> tuple[int, int, int, int]:
    if layout.ndim != 4:
        raise ValueError(f"x has shape {layout.sizes}: blocked format {spec.name!r} packs a "
                         f"rank-4 (N, C, H, W) array")
    n, c, h, w = layout.sizes
    return n, c, h, w


def _unblocked_sizes(layout: Layout, spec: BlockedFormat,
                     channels: Any) -> tuple[int, int, int, int]:
    """(N, C, H, W) of a blocked array of physical sizes ``layout.sizes``, checked."""
    form = "(blocks, H, W, N, x)" if spec.chwn else "(N, blocks, H, W, x)"
    x = spec.block
    sizes = layout.sizes
    if layout.ndim != 5 or sizes[4] != x:
        raise ValueError(f"y has shape {sizes}, but {spec.name!r} is a rank-5 array of shape "
                         f"{form} with x = {x}")
    c = _core.as_int(channels, "channels")     # bools (a 0-d bool tensor too) are refused
    if spec.chwn:
        blocks, h, w, n, _ = sizes
    else:
        n, blocks, h, w, _ = sizes
    lowest = (blocks - 1) * x + 1 if blocks else 0
    if not lowest <= c <= blocks * x:
        allowed = f"in {lowest}..{blocks * x}" if blocks else "0"
        raise ValueError(
            f"channels is {c} but y of shape {sizes} holds {blocks} blocks of {x} channels: "
            f"channels must be {allowed}"
        )
    return n, c, h, w


def _blocked_axes(spec: BlockedFormat) -> tuple[int, ...]:
    """The axes of the physical array, in the order (N, blocks, x, H, W)."""
    return (3, 0, 4, 1, 2) if spec.chwn else (0, 1, 4, 2, 3)


def _blocked_pieces(logical: Layout, blocked: Layout,
                    spec: BlockedFormat) -> list[tuple[Layout, Layout]]:
    """(logical, blocked) layout pairs that together map every channel to its blocked place.

    Channel ``c`` lives in block ``c // x``, lane ``c % x``: not a linear function of ``c``,
    so no single strided copy does it. The full blocks are one rank-5 copy (the logical
    channels split into ``(blocks, x)``), the last, partial block another. Empty pieces are
    left out.
    """
    if logical.size == 0:
        return []
    n, c, h, w = logical.sizes
    x = spec.block
    full, tail = divmod(c, x)
    by_block = blocked.permute(_blocked_axes(spec))          # (N, blocks, x, H, W)
    pieces = []
    if full:
        pieces.append((logical[:, :full * x].reshape((n, full, x, h, w)), by_block[:, :full]))
    if tail:
        pieces.append((logical[:, full * x:], by_block[:, full, :tail]))
    return pieces


def _copy_pieces(dst: tuple[Any, MemoryRecord], src: tuple[Any, MemoryRecord],
                 pieces: list[tuple[Layout, Layout]], num_threads: int | None,
                 library_copy: LibraryCopy | None, conversion: Conversion | None = None,
                 channels: list[Layout] | None = None, src_name: str = "x") -> None:
    """Copy each (dst layout, src layout) piece between two (array, record) pairs: by the core,
    or by the library's own copy (between views) when the CPU cannot reach the memory (the
    same tail as copyto's, :func:`_run`).

    With a ``conversion``, each piece is converted instead, its per-channel parameters
    addressed by the matching layout of ``channels`` (strides into the vectors, offset = the
    piece's first channel). Each layout is checked against its record first: a piece reaching
    outside the memory is an error, never a stray write. dst is a new array: it shares no
    memory with src.
    """
    (dst_array, dst_record), (src_array, src_record) = dst, src
    types = params = None
    if conversion is not None:
        types = _conversion_types(dst_record, dst_array, src_record, src_array, conversion)
        sizes = (dst_record.layout.sizes if dst_record.layout.ndim == 4 else
                 src_record.layout.sizes)
        params = _channel_params(conversion, sizes, 1)
    runs: list[_Piece] = []
    for k, (dst_piece, src_piece) in enumerate(pieces):
        check_view(dst_piece, dst_record)
        check_view(src_piece, src_record)
        piece_params = None
        if types is not None and params is not None and channels is not None:
            scale, shift, strides, length = params
            first = channels[k].offset
            piece_params = (scale[first:] if type(scale) is tuple else scale,
                            shift[first:] if type(shift) is tuple else shift,
                            channels[k].strides if strides is not None else None,
                            length - first if strides is not None else 1)
        runs.append((dst_piece, src_piece, piece_params))
    _run(dst, src, runs, num_threads, library_copy, types, src_name=src_name)
    if conversion is not None and conversion.divisor is not None:
        sizes = (dst_record.layout.sizes if dst_record.layout.ndim == 4 else
                 src_record.layout.sizes)
        _divide(dst, runs, conversion, sizes, 1, num_threads, library_copy)


# --------------------------------------------------------------------------------------------
# Padding channels and 4-bit elements
# --------------------------------------------------------------------------------------------

# The values each integer type holds, for the quantized zero of its padding channels
_INT_RANGES = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767),
               "uint16": (0, 65535), "int32": (-2**31, 2**31 - 1), "uint32": (0, 2**32 - 1),
               "int64": (-2**63, 2**63 - 1), "uint64": (0, 2**64 - 1),
               "int4": (-8, 7), "uint4": (0, 15)}


def _padding_zero(conversion: Conversion | None, dst_type: str | None,
                  src_type: str | None = None) -> int:
    """The quantized zero that a blocked format's padding channels hold: what ``x = 0``
    quantizes to, ``saturate(rint(shift))`` (MegEngine's relayout does the same), so that
    padding dequantizes to 0 with the same parameters. 0 for anything but an integer
    destination with a shift; with a shift per channel, the padding channels have none of
    their own: 0 unless every channel's shift gives the same zero."""
    if conversion is None or conversion.shift is None or dst_type not in _INT_RANGES:
        return 0
    shift = conversion.shift
    shifts: tuple[float, ...] = shift if isinstance(shift, tuple) else (shift,)
    wide = src_type is not None and _dtypes.compute_type(src_type) == "float64"
    zeros = {_quantized(value, wide, *_INT_RANGES[dst_type]) for value in shifts}
    return zeros.pop() if len(zeros) == 1 else 0


def _quantized(value: float, wide: bool, lo: int, hi: int) -> int:
    """saturate(rint(value)) in the compute type (float32 unless ``wide``); NaN -> 0."""
    v = value if wide else ctypes.c_float(value).value    # (rounded to float32, as the engine)
    if v != v:
        return 0
    return int(min(max(round(v), lo), hi))    # (round: half to even, as rint)


def _padding_piece(blocked: Layout, spec: BlockedFormat, c: int) -> Layout:
    """The padding lanes of the last block, ``(N, x - C % x, H, W)`` of the physical layout."""
    by_block = blocked.permute(_blocked_axes(spec))          # (N, blocks, x, H, W)
    return by_block[:, c // spec.block, c % spec.block:]


def _sub_byte(dtype: Any) -> _dtypes.SubByteType | None:
    """The 4-bit type a dtype argument names (``"int4"``, ``"uint4"``, ml_dtypes' int4 /
    uint4 types or dtypes, torch's placeholders of the same name), or None."""
    if isinstance(dtype, str):
        name: Any = dtype
    elif type(dtype).__module__ == "torch":
        name = str(dtype).removeprefix("torch.")
    else:
        name = getattr(dtype, "__name__", None) or getattr(dtype, "name", None)
    return _dtypes.SUB_BYTE.get(name) if isinstance(name, str) else None


def _check_host_4bit(record: MemoryRecord, x: Any, name: str) -> None:
    if not record.in_host_memory:
        raise ValueError(f"{name} is on {device_name(x, record)}: 4-bit elements are packed "
                         f"and unpacked on the CPU only; copy {name} to the host first")


def _to_blocked_4bit(x: Any, record: MemoryRecord, spec: BlockedFormat,
                     sub: _dtypes.SubByteType, params: Conversion,
                     num_threads: int | None, out: Any = None) -> Any:
    """to_blocked into 4-bit elements: a uint8 container of the physical shape with its
    innermost dimension (the block) halved, every byte two channels, low nibble first."""
    _check_host_4bit(record, x, "x")
    n, c, h, w = record.layout.sizes
    if spec.block % 2:
        raise ValueError(f"fmt {spec.name!r} has blocks of {spec.block} channels: with 4-bit "
                         f"elements a block of an odd number of channels is not whole bytes "
                         f"(two pixels would share one); use an even block such as NCHW64")
    src_type = _engine_type(record, x, "x")
    _dtypes.check_pair(sub.carrier, src_type, params.affine)
    params = params.resolved(src_type, sub.name)
    physical = spec.physical_shape((n, c, h, w))
    container = (*physical[:-1], physical[-1] // 2)
    given = out is not None
    if out is None:
        out = _allocate(x, record, Layout(container), order=tuple(range(5)), zero=False,
                        blame=f"fmt {spec.name!r} (block {spec.block}) for x of shape "
                              f"{(n, c, h, w)}", dtype=record.adapter.resolve_dtype("uint8")[1])
        out_record = describe(out)
    else:
        out_record = _blocked_out(out, container, record, "uint8", None)
        record, x = _unshared(out_record, record, x)
    nibbles = _nibbles_of(out_record.layout, physical, spec)   # the container's elements
    pieces = _blocked_pieces(record.layout, nibbles, spec)
    params_of = _channel_params(params, (n, c, h, w), 1)
    channels = _channel_pieces(record.layout, nibbles, spec)
    runs = [(blocked, logical, _piece_params(params_of, channels[k]))
            for k, (logical, blocked) in enumerate(pieces)]
    _convert_4bit((out, out_record, sub.name), (x, record, src_type), runs, num_threads)
    if c % spec.block and n * h * w:
        _fill_4bit(out, out_record, sub, _padding_piece(nibbles, spec, c),
                   _padding_zero(params, sub.name, src_type))
    if given:
        return out
    return record.adapter.hand_over(x, record, out, out_record.layout)


def _nibbles_of(container: Layout, physical: tuple[int, ...], spec: BlockedFormat) -> Layout:
    """The 4-bit elements of a uint8 container of a blocked format (the physical shape
    ``physical``, its block's bytes contiguous): strides doubled, the block unit-stride."""
    if spec.block > 2 and container.size and container.strides[4] != 1:
        raise ValueError(f"out's last dimension has stride {container.strides[4]} bytes: the "
                         f"bytes of a block of 4-bit channels must be contiguous (stride 1)")
    return Layout(physical, (*(2 * s for s in container.strides[:4]), 1), bits=4)


def _piece_params(params: _Params, channels: Layout) -> _Params:
    """A piece's parameters: the vectors from the piece's first channel on."""
    scale, shift, strides, length = params
    if strides is None:
        return params
    first = channels.offset
    return (scale[first:] if type(scale) is tuple else scale,
            shift[first:] if type(shift) is tuple else shift, channels.strides, length - first)


def _convert_4bit(dst: tuple[Any, MemoryRecord, str], src: tuple[Any, MemoryRecord, str],
                  runs: Sequence[tuple[Layout, Layout, _Params | None]],
                  num_threads: int | None) -> None:
    """Convert each (dst layout, src layout, parameters) run between two host arrays of the
    engine's type names (``"int4"`` / ``"uint4"``: a uint8 container, the layout counting
    nibbles from its first byte). The layouts are checked against the arrays' memory (in
    bytes) first; then the addresses are pinned and only engine calls follow."""
    (_, dst_record, dst_type), (_, src_record, src_type) = dst, src
    for dst_layout, src_layout, _ in runs:
        _check_inside(dst_layout, dst_record, dst_type, "dst")
        _check_inside(src_layout, src_record, src_type, "src")
    dst_base = dst_record.adapter.pinned(dst_record, "dst")
    src_base = src_record.adapter.pinned(src_record, "src")
    for dst_layout, src_layout, params in runs:
        scale, shift, strides, length = params if params is not None else (None, None, None, 1)
        dst_4, src_4 = dst_type in _dtypes.SUB_BYTE, src_type in _dtypes.SUB_BYTE
        _convert.convert_memory(
            dst_base + (0 if dst_4 else dst_layout.offset * dst_record.layout.itemsize),
            src_base + (0 if src_4 else src_layout.offset * src_record.layout.itemsize),
            dst_layout.sizes, dst_layout.strides, src_layout.strides, dst_type, src_type,
            scale, shift, strides, length, num_threads=num_threads,
            dst_first=dst_layout.offset if dst_4 else 0,
            src_first=src_layout.offset if src_4 else 0)
    dst_record.adapter.written(dst_record)


def _check_inside(layout: Layout, record: MemoryRecord, type_name_: str, name: str) -> None:
    """A run's layout reaches only the array's memory: its elements (nibbles of a 4-bit
    side: bytes ``offset // 2``) within the record's extent."""
    if type_name_ not in _dtypes.SUB_BYTE:
        check_view(layout, record)
        return
    if layout.size == 0:
        return
    lo, hi = layout.span
    first, last = record.extent
    if lo // 2 < first or hi // 2 > last:
        raise ValueError(f"{name}: the 4-bit elements reach bytes {lo // 2}..{hi // 2} of a "
                         f"container holding bytes {first}..{last}")


def _fill_4bit(out: Any, record: MemoryRecord, sub: _dtypes.SubByteType, layout: Layout,
               value: int) -> None:
    """Write ``value`` into every 4-bit element of ``layout`` (nibbles of container ``out``)."""
    one = bytes([value & 0xFF])          # the carrier's byte (two's complement for int4)
    _convert_4bit((out, record, sub.name), (one, describe(one), sub.carrier),
                  [(layout, Layout(layout.sizes, (0,) * layout.ndim), None)], 1)


def _engine_type(record: MemoryRecord, x: Any, name: str) -> str:
    engine_name = type_name(record)
    if engine_name is None:
        raise TypeError(f"{name} has dtype {record.adapter.dtype_name(x, record)}, which "
                        f"strided does not convert")
    return engine_name


def _from_blocked_4bit(y: Any, record: MemoryRecord, spec: BlockedFormat,
                       sub: _dtypes.SubByteType, channels: int, dtype: Any,
                       params: Conversion, num_threads: int | None, out: Any = None) -> Any:
    """from_blocked of a uint8 container of 4-bit elements (see :func:`_to_blocked_4bit`),
    into a new array or into ``out`` (checked as copyto checks a destination)."""
    _check_host_4bit(record, y, "y")
    if _engine_type(record, y, "y") != "uint8":
        raise TypeError(f"y has dtype {record.adapter.dtype_name(y, record)}: a container of "
                        f"4-bit elements (src_dtype={sub.name!r}) is a uint8 array of the "
                        f"packed bytes")
    layout = record.layout
    half = spec.block // 2
    if spec.block % 2 or layout.ndim != 5 or layout.sizes[4] != half:
        raise ValueError(f"y has shape {layout.sizes}, but {spec.name!r} of 4-bit elements is "
                         f"a uint8 container of rank 5 whose last dimension holds the block "
                         f"of {spec.block} channels in {spec.block / 2:g} bytes")
    if half > 1 and layout.size and layout.strides[4] != 1:
        raise ValueError(f"y's last dimension has stride {layout.strides[4]} bytes: the bytes "
                         f"of a block of 4-bit channels must be contiguous (stride 1)")
    nibbles = Layout((*layout.sizes[:4], spec.block),
                     (*tuple(2 * s for s in layout.strides[:4]), 1))
    sizes = _unblocked_sizes(nibbles, spec, channels)
    given = out is not None
    if out is None:
        new_dtype = record.adapter.resolve_dtype(sub.carrier if dtype is None else dtype)[1]
        out = _allocate(y, record, Layout(sizes, itemsize=new_dtype.itemsize),
                        order=tuple(range(4)), zero=False, blame=f"channels={channels!r}",
                        dtype=new_dtype)
        out_record = describe(out)
    else:
        out_record = _blocked_out(out, sizes, record, dtype, None)
        # the container is read in several runs: none may read a byte an earlier one wrote
        record, y = _unshared(out_record, record, y)
    dst_type = _engine_type(out_record, out, "out")
    params = params.resolved(sub.name, dst_type)
    _dtypes.check_pair(dst_type, sub.carrier, params.affine)
    params_of = _channel_params(params, sizes, 1)
    channels_of = _channel_pieces(out_record.layout, nibbles, spec)
    runs = [(logical, blocked, _piece_params(params_of, channels_of[k]))
            for k, (logical, blocked) in enumerate(
                _blocked_pieces(out_record.layout, nibbles, spec))]
    _convert_4bit((out, out_record, dst_type), (y, record, sub.name), runs, num_threads)
    if given:
        return out
    return record.adapter.hand_over(y, record, out, out_record.layout)


def _container_4bit(record: MemoryRecord, x: Any, name: str, sub: _dtypes.SubByteType,
                    other: tuple[int, ...] | None = None) -> Layout:
    """The layout of the 4-bit elements of a uint8 container (nibbles from its first byte):
    its dimension of byte stride 1 (the innermost) holds two elements a byte, ``2b - 1`` of
    ``b`` bytes when ``other`` (the other side's sizes) says so; the other dimensions are the
    container's, their strides doubled. A size-1 dimension may be that dimension too (its
    stride says nothing): the one ``other`` agrees with is taken."""
    layouts = _containers_4bit(record, x, name, sub)
    return next((c for c in layouts if other is not None and c.sizes == tuple(other)),
                layouts[0])


def _containers_4bit(record: MemoryRecord, x: Any, name: str,
                     sub: _dtypes.SubByteType) -> list[Layout]:
    """Every 4-bit layout a container may hold (see :func:`_container_4bit`), the likeliest
    first."""
    _check_host_4bit(record, x, name)
    if _engine_type(record, x, name) != "uint8":
        raise TypeError(f"{name} has dtype {record.adapter.dtype_name(x, record)}: a container "
                        f"of 4-bit elements ({name}_dtype={sub.name!r}) is a uint8 array of "
                        f"the packed bytes")
    try:
        return container_layouts(record.layout)
    except ValueError as e:
        raise ValueError(f"{name}{str(e).removeprefix('x')}") from None


def _copyto_4bit(dst: Any, src: Any, dst_sub: _dtypes.SubByteType | None,
                 src_sub: _dtypes.SubByteType | None, conversion: Conversion,
                 num_threads: int | None) -> None:
    """copyto with a 4-bit side (``*_dtype``): the checks of copyto, on the host."""
    dst_record = _describe(dst, "dst")
    src_record = _describe(src, "src")
    _check_writeable(dst_record, dst, "dst")
    src_sizes = src_record.layout.sizes if src_sub is None else None
    if dst_sub is not None:
        dst_layout = _container_4bit(dst_record, dst, "dst", dst_sub, src_sizes)
        dst_type = dst_sub.name
    else:
        _check_host(dst_record, dst, "dst")
        dst_layout, dst_type = dst_record.layout, _engine_type(dst_record, dst, "dst")
    if src_sub is not None and dst_sub is not None:     # two containers: the layouts they agree on
        dsts = _containers_4bit(dst_record, dst, "dst", dst_sub)
        srcs = _containers_4bit(src_record, src, "src", src_sub)
        dst_layout, src_layout = next(((d, c) for d in dsts for c in srcs if d.sizes == c.sizes),
                                      (dsts[0], srcs[0]))
        src_type = src_sub.name
    elif src_sub is not None:
        src_layout = _container_4bit(src_record, src, "src", src_sub, dst_layout.sizes)
        src_type = src_sub.name
    else:
        _check_host(src_record, src, "src")
        src_layout, src_type = src_record.layout, _engine_type(src_record, src, "src")
        src_record = src_record.adapter.resolved(src_record)
    if dst_layout.sizes != src_layout.sizes:
        what = ("dst holds 4-bit elements of shape" if dst_sub is not None else
                "dst has shape", "src holds 4-bit elements of shape" if src_sub is not None
                else "src has shape")
        raise ValueError(f"{what[0]} {dst_layout.sizes} but {what[1]} {src_layout.sizes}: "
                         f"copyto needs the same sizes (a container's byte dimension holds "
                         f"two elements a byte)")
    carriers = (dst_sub.carrier if dst_sub else dst_type, src_sub.carrier if src_sub else src_type)
    _dtypes.check_pair(*carriers, conversion.affine)
    if not _dtypes.can_cast(carriers[1], carriers[0], conversion.casting):
        raise TypeError(f"cannot copy src of dtype {src_type} into dst of dtype {dst_type} "
                        f"with casting={conversion.casting!r} (numpy's rule on int8 / uint8 "
                        f"for 4-bit types); pass casting='unsafe' to convert anyway")
    conversion = conversion.resolved(src_type, dst_type)
    params = _channel_params(conversion, dst_layout.sizes,
                             _checked_axis(conversion.axis, dst_layout.ndim))
    _check_no_self_overlap(dst_layout, "dst")
    if dst_layout.size:
        _convert_4bit((dst, dst_record, dst_type), (src, src_record, src_type),
                      [(dst_layout, src_layout, params)], num_threads)


def _relayout_4bit(x: Any, record: MemoryRecord, layout: Any, sub: _dtypes.SubByteType,
                   conversion: Conversion, num_threads: int | None) -> Any:
    """relayout into a new container of 4-bit elements packed in ``layout``'s order."""
    if isinstance(layout, Layout):
        raise ValueError("relayout into 4-bit elements takes a label or an order: a container "
                         "for a Layout of your own is made by hand, then filled by "
                         "copyto(container, x, dst_dtype=...)")
    _check_host_4bit(record, x, "x")
    sizes = record.layout.sizes
    if not sizes:
        raise ValueError("x is 0-d: 4-bit elements are packed two a byte along a dimension")
    order = physical_order(layout, len(sizes))
    unit = order[-1]
    container = list(sizes)
    container[unit] = (sizes[unit] + 1) // 2
    out = _allocate(x, record, Layout.packed(tuple(container), order), order,
                    zero=sizes[unit] % 2 == 1, blame="x",
                    dtype=record.adapter.resolve_dtype("uint8")[1])
    copyto(out, x, casting="unsafe", scale=conversion.scale, shift=conversion.shift,
           axis=conversion.axis, num_threads=num_threads, dst_dtype=sub.name)
    return record.adapter.hand_over(x, record, out, describe(out).layout)
