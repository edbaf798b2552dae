"""Packing 4-bit elements two per byte, and unpacking them: ``pack_bits`` and ``unpack_bits``.

strided's sub-byte contract (MegEngine, CUTLASS, oneDNN, ONNX and DLPack agree): ``int4`` is
two's complement in [-8, 7], ``uint4`` is [0, 15]; along the packed axis, element ``2k`` is in
bits 0-3 of byte ``k`` and element ``2k+1`` in bits 4-7 (``order="low_first"``). A container
is a ``uint8`` array of the packed bytes whose packed axis is halved (rounded up: the spare
nibble of an odd size is 0). XLA's host packer puts element ``2k`` in the high nibble instead:
``order="high_first"`` reads and writes that order.

"One value per byte" is what these functions convert from and to: int8/uint8 arrays (sign- or
zero-extended values), or ml_dtypes ``int4``/``uint4`` arrays, whose memory holds one value per
byte in its low nibble. Both directions are vectorized numpy (a few passes over the data, no
Python loop per element); the result is always a new C-contiguous array.

Examples
--------
>>> import numpy as np
>>> import strided as st
>>> p = st.pack_bits(np.array([1, -2, 3], dtype=np.int8))
>>> p, [hex(b) for b in p]
(array([225,   3], dtype=uint8), ['0xe1', '0x3'])
>>> st.unpack_bits(p, count=3)
array([ 1, -2,  3], dtype=int8)
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any, overload

import numpy as np

from strided import _dtypes

if TYPE_CHECKING:
    from strided._typing import BytesLike, NDArray, Tensor

__all__ = ["ORDERS", "pack_bits", "unpack_bits"]

ORDERS: tuple[str, ...] = ("low_first", "high_first")
"""The nibble orders: ``"low_first"`` (element 2k in bits 0-3, strided's contract) and
``"high_first"`` (element 2k in bits 4-7, XLA's host packer)."""

# The byte types one value per byte may come in or go out as, besides ml_dtypes' int4/uint4.
_CARRIERS = {"int8": True, "uint8": False}     # name -> signed


def _check_bits(bits: object) -> None:
    if isinstance(bits, bool) or not isinstance(bits, (int, np.integer)):
        raise TypeError(f"bits must be an int, got {type(bits).__name__} {bits!r}")
    if bits != 4:
        raise ValueError(f"bits must be 4 (only 4-bit elements are supported), got {bits}")


def _check_order(order: object) -> str:
    if not isinstance(order, str) or order not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(map(repr, ORDERS))}, got {order!r}")
    return order


def _check_signed(signed: object) -> bool | None:
    if signed is not None and not isinstance(signed, (bool, np.bool_)):
        raise TypeError(f"signed must be None, True or False, got {type(signed).__name__} "
                        f"{signed!r}")
    return None if signed is None else bool(signed)


def _axis(axis: object, ndim: int, what: str) -> int:
    """``axis`` normalised to [0, ndim); AxisError (a ValueError) naming ``what``."""
    if isinstance(axis, bool):
        raise TypeError(f"axis must be an int, got bool {axis!r}")
    try:
        ax = operator.index(axis)    # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"axis must be an int, got {type(axis).__name__} {axis!r}") from None
    if not -ndim <= ax < ndim:
        raise np.exceptions.AxisError(
            f"axis {ax} is out of bounds for {what} of {ndim} dimension"
            f"{'' if ndim == 1 else 's'}" + (" (a 0-d array has no axis to pack)" if ndim == 0
                                              else ""))
    return ax % ndim


def _is_torch(x: object) -> bool:
    # never imports torch: a tensor exists only once torch is imported
    from strided.interop._torch import is_tensor

    return is_tensor(x)


def _torch_to_numpy(x: Any, what: str) -> np.ndarray:
    """A CPU torch tensor's numpy view (shared memory); ValueError for other devices."""
    if x.device.type != "cpu":
        raise ValueError(f"{what} is on device {x.device}: pack_bits and unpack_bits work on "
                         f"CPU tensors (move it with .cpu())")
    if x.is_conj() or x.is_neg():
        x = x.resolve_conj().resolve_neg()
    return x.detach().numpy()


def _as_array(x: object, what: str) -> tuple[np.ndarray, bool]:
    """(a numpy array of x's memory, whether x was a torch tensor)."""
    if isinstance(x, np.ndarray):
        return x, False
    if _is_torch(x):
        return _torch_to_numpy(x, what), True
    if isinstance(x, (bytes, bytearray, memoryview)):
        return np.frombuffer(x, dtype=np.uint8), False
    try:
        return np.asarray(x), False
    except Exception as exc:
        raise TypeError(f"{what} must be an array (numpy, ml_dtypes, torch) of one value per "
                        f"byte, got {type(x).__name__}: {exc}") from None


def _sub_byte_name(dtype: np.dtype) -> str | None:
    """"int4" / "uint4" for ml_dtypes' 4-bit dtypes (one value per byte), else None."""
    name = dtype.name
    return name if name in _dtypes.SUB_BYTE and dtype.itemsize == 1 else None


def _first_outside(x: np.ndarray, lo: int, hi: int) -> tuple[int, tuple[int, ...]] | None:
    """The first value of x (C order) outside [lo, hi] and its index, or None."""
    if x.size == 0 or (int(x.min()) >= lo and int(x.max()) <= hi):
        return None
    flat = int(np.argmax((x < lo) | (x > hi)))
    index = tuple(int(i) for i in np.unravel_index(flat, x.shape))
    return int(x[index]), index


@overload
def pack_bits(x: Tensor, bits: int = 4, axis: int = -1, *, order: str = "low_first",
              signed: bool | None = None) -> Tensor: ...
@overload
def pack_bits(x: Any, bits: int = 4, axis: int = -1, *, order: str = "low_first",
              signed: bool | None = None) -> NDArray[np.uint8]: ...
def pack_bits(x: Any, bits: int = 4, axis: int = -1, *, order: str = "low_first",
              signed: bool | None = None) -> Any:
    """Pack 4-bit values, one per byte, two per byte along ``axis``.

    Element ``2k`` of the axis goes to bits 0-3 of byte ``k`` and element ``2k+1`` to bits 4-7
    (``order="low_first"``, strided's contract, as MegEngine, CUTLASS, ONNX and DLPack store
    int4); negative values are stored in two's complement (``-1`` is ``0xF``). An odd axis
    length leaves the spare nibble of the last byte 0.

    Parameters
    ----------
    x : array
        One value per byte: an ml_dtypes ``int4`` / ``uint4`` numpy array, an integer numpy
        array (int8 and uint8 are the usual; wider integers are accepted too) or a CPU torch
        tensor of an integer dtype; any shape (at least 1-D) and any strides (negative,
        sliced). Bytes-like objects are read as uint8.
    bits : int, optional
        Bits per element: only 4 is supported.
    axis : int, optional
        The axis whose elements are paired (default the last).
    order : {"low_first", "high_first"}, optional
        ``"low_first"`` (default): element 2k in the low nibble. ``"high_first"``: element 2k
        in the high nibble (XLA's host packer; the spare nibble of an odd length is then the
        low one).
    signed : bool or None, optional
        Whether the values are int4 ([-8, 7]) or uint4 ([0, 15]). None (default): from the
        dtype (ml_dtypes int4 and signed integers: signed; uint4 and unsigned integers:
        unsigned). Give it to pack, say, uint4 values held in an int8 array.

    Returns
    -------
    numpy.ndarray or torch.Tensor
        A new C-contiguous uint8 array (a torch tensor for a torch input) of x's shape with
        ``axis`` halved, rounded up.

    Raises
    ------
    TypeError
        ``x`` is not an integer array (bool, float, complex, other ml_dtypes types), or an
        argument has the wrong type.
    ValueError
        A value lies outside the 4-bit range (the message gives the first one, in C order, and
        its index); ``bits`` is not 4; ``order`` is unknown; ``signed`` contradicts an ml_dtypes
        dtype; ``axis`` is out of bounds (numpy's ``AxisError``, a ValueError); a torch tensor
        is not on the CPU.

    See Also
    --------
    unpack_bits : the inverse.

    Examples
    --------
    >>> import numpy as np
    >>> import strided as st
    >>> x = np.array([[1, 2, 3, 4], [-1, -8, 7, 0]], dtype=np.int8)
    >>> p = st.pack_bits(x)
    >>> p
    array([[ 33,  67],
           [143,   7]], dtype=uint8)
    >>> [hex(b) for b in p[1]]          # -1 is 0xF (low nibble), -8 is 0x8 (high nibble)
    ['0x8f', '0x7']
    >>> st.pack_bits(x, order="high_first")[0]       # XLA's order: element 0 in bits 4-7
    array([18, 52], dtype=uint8)
    >>> st.pack_bits(x, axis=0).shape
    (1, 4)
    >>> st.pack_bits(np.array([9, 1], dtype=np.int8))
    Traceback (most recent call last):
        ...
    ValueError: x holds 9 at index (0,): int4 values lie in [-8, 7] (pass signed=False ...
    """
    _check_bits(bits)
    order = _check_order(order)
    signed = _check_signed(signed)
    arr, torch_in = _as_array(x, "x")
    sub = _sub_byte_name(arr.dtype)
    if sub is not None:
        dtype_signed = sub == "int4"
        if signed is not None and signed != dtype_signed:
            raise ValueError(f"signed={signed} contradicts x's dtype {sub}")
        # ml_dtypes keeps the value in the low nibble of each byte: no range to check
        u = arr.view(np.uint8)
    elif arr.dtype.kind in "iu":
        if signed is None:
            signed = arr.dtype.kind == "i"
        kind = "int4" if signed else "uint4"
        lo, hi = _dtypes.SUB_BYTE[kind].lo, _dtypes.SUB_BYTE[kind].hi
        bad = _first_outside(arr, lo, hi)
        if bad is not None:
            hint = (" (pass signed=False for uint4 values in [0, 15])" if signed
                    else " (pass signed=True for int4 values in [-8, 7])")
            raise ValueError(f"x holds {bad[0]} at index {bad[1]}: {kind} values lie in "
                             f"[{lo}, {hi}]{hint}")
        # the low byte holds the nibble (two's complement): wider integers wrap to it
        u = arr.view(np.uint8) if arr.dtype.itemsize == 1 else arr.astype(np.uint8)
    else:
        raise TypeError(f"x must hold integers (int8, uint8, ml_dtypes int4/uint4, ...), got "
                        f"dtype {arr.dtype}")
    ax = _axis(axis, arr.ndim, "x")
    n = arr.shape[ax]
    shape = (*arr.shape[:ax], (n + 1) // 2, *arr.shape[ax + 1:])
    out = np.empty(shape, dtype=np.uint8)
    _pack(np.moveaxis(u, ax, -1), np.moveaxis(out, ax, -1), n, order)
    return _torch_from(out) if torch_in else out


def _pack(u: np.ndarray, out: np.ndarray, n: int, order: str) -> None:
    """Pack u (uint8, nibble in the low bits, axis last) into out (axis last)."""
    half = n // 2
    if out.size == 0:
        return
    # three passes (measured faster than pairing bytes as uint16 words)
    first, second = u[..., 0::2], u[..., 1::2]
    if order == "low_first":
        np.bitwise_and(first, 0x0F, out=out)
        if half:
            out[..., :half] |= np.left_shift(second, 4)    # uint8: bits 4-7 only
    else:
        np.left_shift(first, 4, out=out)
        if half:
            out[..., :half] |= second & 0x0F


def _torch_from(arr: np.ndarray) -> Any:
    import torch

    return torch.from_numpy(arr)


def _result_type(dtype: object) -> str | None:
    """The name ("int4", "uint4", "int8", "uint8") of unpack_bits' ``dtype``, or None."""
    if dtype is None:
        return None
    if isinstance(dtype, str):
        name = dtype
    elif type(dtype).__module__ == "torch" and type(dtype).__name__ == "dtype":
        name = str(dtype).removeprefix("torch.")
    else:
        try:
            name = np.dtype(dtype).name     # type: ignore[call-overload]
        except TypeError:
            name = repr(dtype)
    if name not in _dtypes.SUB_BYTE and name not in _CARRIERS:
        raise TypeError(f"dtype must be one of 'int4', 'uint4', 'int8', 'uint8' (or None), got "
                        f"{dtype!r}")
    return name


def _ml_dtype(name: str) -> np.dtype:
    try:
        import ml_dtypes
    except ImportError:
        raise ImportError(f"dtype={name!r} makes an ml_dtypes {name} array, and ml_dtypes is not "
                          f"installed (pip install ml-dtypes); dtype='int8' or 'uint8' gives "
                          f"the values one per byte without it") from None
    return np.dtype(getattr(ml_dtypes, name))


@overload
def unpack_bits(p: Tensor, bits: int = 4, axis: int = -1, *, order: str = "low_first",
                dtype: Any = None, signed: bool | None = None, count: int | None = None
                ) -> Tensor: ...
@overload
def unpack_bits(p: NDArray[Any] | BytesLike, bits: int = 4, axis: int = -1, *,
                order: str = "low_first", dtype: Any = None, signed: bool | None = None,
                count: int | None = None) -> NDArray[Any]: ...
@overload
def unpack_bits(p: Any, bits: int = 4, axis: int = -1, *, order: str = "low_first",
                dtype: Any = None, signed: bool | None = None, count: int | None = None
                ) -> Any: ...
def unpack_bits(p: Any, bits: int = 4, axis: int = -1, *, order: str = "low_first",
                dtype: Any = None, signed: bool | None = None, count: int | None = None
                ) -> Any:
    """Unpack bytes of two 4-bit values each into one value per byte, along ``axis``.

    The inverse of :func:`pack_bits`: element ``2k`` of the result's axis is read from bits 0-3
    of byte ``k`` and element ``2k+1`` from bits 4-7 (``order="low_first"``).

    Parameters
    ----------
    p : array
        The packed container: a uint8 (or int8, read as its bytes) numpy array, bytes-like
        object or CPU torch tensor, any shape (at least 1-D) and strides.
    bits : int, optional
        Bits per element: only 4 is supported.
    axis : int, optional
        The packed axis (default the last).
    order : {"low_first", "high_first"}, optional
        As for :func:`pack_bits`.
    dtype : str, numpy / ml_dtypes / torch dtype, or None, optional
        The result's type: ``"int8"`` / ``"uint8"`` (the values sign- or zero-extended to a
        byte), or ``"int4"`` / ``"uint4"`` (an ml_dtypes array; ml_dtypes must be installed,
        and the input must not be a torch tensor, as torch has no such dtype). None: int8 when
        ``signed`` (the default), uint8 otherwise.
    signed : bool or None, optional
        Whether the nibbles are int4 (two's complement) or uint4. None: from ``dtype``
        (int4/int8 signed, uint4/uint8 unsigned), signed when dtype is None too.
    count : int or None, optional
        The logical length of the axis: ``2 * p.shape[axis]`` (default) or one less, which
        drops the spare nibble of an odd length.

    Returns
    -------
    numpy.ndarray or torch.Tensor
        A new C-contiguous array of p's shape with ``axis`` of length ``count``; a torch
        tensor for a torch input.

    Raises
    ------
    TypeError
        ``p`` is not an array of bytes; ``dtype`` is not one of the four types.
    ValueError
        ``bits`` is not 4, ``order`` is unknown, ``signed`` contradicts ``dtype``, ``count``
        does not fit the axis, ``axis`` is out of bounds (``AxisError``), or a torch tensor is
        not on the CPU.
    ImportError
        ``dtype`` is int4/uint4 and ml_dtypes is not installed.

    See Also
    --------
    pack_bits : the inverse.

    Examples
    --------
    >>> import numpy as np
    >>> import strided as st
    >>> p = np.array([0x21, 0xF8, 0x07], dtype=np.uint8)
    >>> st.unpack_bits(p)
    array([ 1,  2, -8, -1,  7,  0], dtype=int8)
    >>> st.unpack_bits(p, dtype="uint8", count=5)
    array([ 1,  2,  8, 15,  7], dtype=uint8)
    >>> st.unpack_bits(p, order="high_first", count=5)
    array([ 2,  1, -1, -8,  0], dtype=int8)
    >>> q = st.unpack_bits(p, dtype="int4")              # an ml_dtypes array
    >>> q.dtype.name, q.tolist()
    ('int4', [1, 2, -8, -1, 7, 0])
    """
    _check_bits(bits)
    order = _check_order(order)
    signed = _check_signed(signed)
    name = _result_type(dtype)
    if name is not None:
        implied = name in ("int4", "int8")
        if signed is not None and signed != implied:
            raise ValueError(f"signed={signed} contradicts dtype {name!r}")
        signed = implied
    elif signed is None:
        signed = True
    if name is None:
        name = "int8" if signed else "uint8"
    arr, torch_in = _as_array(p, "p")
    if arr.dtype.kind not in "iu" or arr.dtype.itemsize != 1 or _sub_byte_name(arr.dtype):
        raise TypeError(f"p must be an array of packed bytes (uint8 or int8), got dtype "
                        f"{arr.dtype}")
    if torch_in and name in _dtypes.SUB_BYTE:
        raise TypeError(f"dtype={name!r} makes an ml_dtypes array, which torch cannot hold; "
                        f"ask for dtype='int8' or 'uint8' (or pass p.numpy())")
    result_dtype = _ml_dtype(name) if name in _dtypes.SUB_BYTE else np.dtype(name)
    ax = _axis(axis, arr.ndim, "p")
    m = arr.shape[ax]
    if count is None:
        n = 2 * m
    else:
        if isinstance(count, bool):
            raise TypeError(f"count must be an int or None, got bool {count!r}")
        try:
            n = operator.index(count)
        except TypeError:
            raise TypeError(f"count must be an int or None, got {type(count).__name__} "
                            f"{count!r}") from None
        if (n + 1) // 2 != m or n < 0:
            raise ValueError(f"count must be {2 * m - 1} or {2 * m} for an axis of {m} bytes "
                             f"(two elements a byte), got {n}" if m else
                             f"count must be 0 for an axis of 0 bytes, got {n}")
    shape = (*arr.shape[:ax], n, *arr.shape[ax + 1:])
    # ml_dtypes' int4/uint4 keep the value in the low nibble, high nibble 0: unpack unsigned
    extend = signed and name == "int8"
    out = np.empty(shape, dtype=np.int8 if extend else np.uint8)
    _unpack(np.moveaxis(arr.view(np.uint8), ax, -1), np.moveaxis(out, ax, -1), n, order,
            extend)
    if out.dtype != result_dtype:
        out = out.view(result_dtype)
    return _torch_from(out) if torch_in else out


def _unpack(u: np.ndarray, out: np.ndarray, n: int, order: str, extend: bool) -> None:
    """Unpack u (uint8, axis last) into out (axis last, n long; int8 when ``extend``)."""
    if out.size == 0:
        return
    half = n // 2
    first, second = out[..., 0::2], out[..., 1::2]
    low_to, high_to = (first, second) if order == "low_first" else (second, first)
    low_from = u if low_to is first else u[..., :half]
    high_from = u if high_to is first else u[..., :half]
    if extend:
        # arithmetic shifts of int8 sign-extend: the high nibble directly, the low one after
        # moving it up
        np.right_shift(np.left_shift(low_from, 4).view(np.int8), 4, out=low_to)
        np.right_shift(high_from.view(np.int8), 4, out=high_to)
    else:
        np.bitwise_and(low_from, 0x0F, out=low_to)
        np.right_shift(high_from, 4, out=high_to)
