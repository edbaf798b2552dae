"""torch tensors, on any device, read and viewed without importing torch.

torch is only ever taken from ``sys.modules``: when it is not loaded, no object can be a tensor,
and ``import strided`` stays free of it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from strided import _dtypes
from strided.interop import _tensor
from strided.interop._record import CPU, DLPACK_TYPES, Adapter, MemoryRecord, moved
from strided.layout import Layout

__all__ = ["ADAPTER", "allocate", "check_destination", "copies_itself", "describe",
           "device_convert", "device_copy", "graph_copier", "is_tensor", "pinned",
           "refuse_raw_copy", "resolve_dtype", "resolved", "view", "written"]

NO_DLPACK_DEVICE = (-1, 0)
"""The device of tensors DLPack has no code for (torch's ``meta`` device)."""

# torch dtype name -> DLPack (code, bits, lanes): torch names its dtypes as numpy does.
_DLPACK_DTYPES = DLPACK_TYPES


def is_tensor(x: object) -> bool:
    """True when ``x`` is a torch tensor; never imports torch."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def copies_itself(dst: MemoryRecord, src: MemoryRecord) -> bool:
    """Whether torch, not the CPU, copies this pair of tensors: one of them is off the CPU.

    (Tests replace this predicate to run the device path on CPU tensors.)
    """
    return dst.device != CPU or src.device != CPU


def device_copy(dst: Any, src: Any, share_memory: bool) -> None:
    """``dst.copy_(src)`` on the tensors' devices, giving src's values as they were.

    copyto has checked the pair as on the host (sizes, dtype, a writeable destination without
    a lazy bit or grad, no self-overlap). torch refuses a source that shares memory with the
    destination, so such a source is cloned first (on its own device).

    The copy runs under ``torch.no_grad()``: like the host path, copyto writes ``dst`` outside
    autograd, so a ``src`` that requires grad does not turn ``dst`` into a node of its graph
    (``copy_`` alone would). ``copy_`` bumps dst's version counter, as the host path does.
    """
    with sys.modules["torch"].no_grad():
        if share_memory:
            src = src.clone()
        dst.copy_(src)


_INTEGERS = frozenset(name for name in DLPACK_TYPES if "int" in name)


def device_convert(dst: Any, src: Any, share_memory: bool, dst_type: str, src_type: str,
                   scale: Any, shift: Any, param_strides: Any, param_length: int) -> None:
    """The conversion of the host path (``strided._convert.convert_memory``, the same
    arguments after the tensors) done with torch ops on the tensors' device, by the same rules:
    the affine step in float32/float64 as two ops (no fused multiply-add), integers rounded
    half to even (or truncated by a plain cast), saturated, NaN as 0; anything else is torch's
    own cast, which rounds floats to nearest even as the host path does.

    copyto has checked the pair as on the host; dst is written outside autograd, and a source
    sharing memory with it is cloned first.
    """
    torch = sys.modules["torch"]
    with torch.no_grad():
        if share_memory:
            src = src.clone()
        affine = scale is not None or shift is not None
        integer_dst = dst_type in _INTEGERS
        if affine:
            ct = getattr(torch, _dtypes.compute_type(src_type))   # the host path's rule
            t = src.to(ct)
            if scale is not None:
                t = t * _parameter(torch, scale, ct, src, param_strides)
            if shift is not None:
                t = t + _parameter(torch, shift, ct, src, param_strides)
            if integer_dst:
                t = t.round()                   # half to even
        elif integer_dst and src.is_floating_point():
            t = src.to(torch.float64).trunc()   # exact for every float type
        elif dst_type == "float16" and src.dtype == torch.float64:
            t = src
        else:
            dst.copy_(src)
            return
        if integer_dst:
            t = _saturated(torch, t.to(torch.float64), getattr(torch, dst_type))
        elif dst_type == "float16" and t.dtype == torch.float64:
            t = _rounded_to_odd_float32(torch, t)   # torch's float64 -> float16 rounds twice
        dst.copy_(t)


def _rounded_to_odd_float32(torch: Any, t: Any) -> Any:
    """float64 values as float32 rounded to odd: exact values stay, inexact ones take the
    neighbour whose last bit is 1. float32 keeps more than float16's 11 bits + 2, so rounding
    that to float16 (to nearest even, as torch does) gives the float64 value rounded once, as
    numpy and the host path do."""
    f = t.to(torch.float32)
    inexact = f.to(torch.float64) != t
    even = (f.view(torch.int32) & 1) == 0
    toward = torch.where(f.to(torch.float64) < t, float("inf"), float("-inf")).to(torch.float32)
    return torch.where(inexact & even, torch.nextafter(f, toward), f)


def _parameter(torch: Any, value: Any, ct: Any, like: Any, strides: Any) -> Any:
    """A scale or shift as a tensor of the compute type on like's device: 0-d for a number,
    else the vector laid over like's sizes with ``strides`` (its channel axis)."""
    if type(value) is not tuple:
        return torch.tensor(value, dtype=ct, device=like.device)
    vector = torch.tensor(value, dtype=ct, device=like.device)
    return torch.as_strided(vector, like.shape, strides)


#: The largest double below 2^63, so that a clamped value converts to int64 without overflow.
_BELOW_2_63 = float(2**63 - 1024)


def _saturated(torch: Any, t: Any, dtype: Any) -> Any:
    """Integral float64 values as ``dtype``: NaN as 0, the rest clamped to its range (the
    bounds of 64-bit types are not doubles: values at 2^63 / 2^64 and beyond take the max).

    Only operations every device has for every integer type: float64 and int64 arithmetic,
    then one cast or a reinterpretation (CUDA's ``where`` has no uint16/32/64 kernels)."""
    info = torch.iinfo(dtype)
    t = torch.nan_to_num(t, nan=0.0, posinf=float(info.max), neginf=float(info.min))
    if info.bits < 64:
        # The bounds of 8- to 32-bit types are doubles: clamping saturates exactly.
        return t.clamp(float(info.min), float(info.max)).to(dtype)
    if dtype == torch.int64:
        out = t.clamp(float(info.min), _BELOW_2_63).to(torch.int64)
        return out.masked_fill(t >= 2.0**63, 2**63 - 1)
    # uint64 through int64 bits: v >= 2^63 is v - 2^64 in two's complement, that is
    # (v - 2^63) + int64's minimum, and 2^64 and beyond is all ones (the maximum).
    high = t >= 2.0**63
    low = torch.where(high, t - 2.0**63, t).clamp(0.0, _BELOW_2_63).to(torch.int64)
    bits = torch.where(high, low + torch.iinfo(torch.int64).min, low)
    return bits.masked_fill(t >= 2.0**64, -1).view(torch.uint64)


def _copy_in_graph(dst: Any, src: Any) -> None:
    dst.copy_(src)


def graph_copier(record: MemoryRecord) -> Any:
    """torch's ``copy_``, which keeps the result in the autograd graph, for a tensor that
    requires grad; None for any other (strided copies it)."""
    return _copy_in_graph if record.owner.requires_grad else None


def refuse_raw_copy(record: MemoryRecord, name: str) -> None:
    """Refuse quantized tensors: their bytes mean nothing without the quantizer (scale, zero
    point), which a byte copy neither compares nor carries over to a new tensor."""
    t = record.owner
    if t.is_quantized:
        raise ValueError(
            f"{name} is a quantized torch tensor ({t.dtype}): strided copies raw elements and "
            f"cannot carry its quantizer; dequantize it first ({name}.dequantize())"
        )


def check_destination(record: MemoryRecord, name: str) -> None:
    """Refuse a destination that requires grad: a raw write would bypass autograd."""
    if record.owner.requires_grad:
        raise ValueError(
            f"{name} requires grad: copyto writes its memory outside autograd; use "
            f"{name}.copy_(src), which autograd records, or copy into {name}.detach()"
        )


def resolved(record: MemoryRecord) -> MemoryRecord:
    """The record of a resolved copy of a tensor shown conjugated or negated (its memory holds
    other values than it shows); the record itself when it has no lazy bit."""
    if record.lazy is None:
        return record
    return describe(record.owner.resolve_conj().resolve_neg())


def pinned(record: MemoryRecord, name: str) -> int:
    """The address of a CPU tensor's first element, read again through DLPack's exchange API
    (no Python code runs), after checking that the tensor still has the record's address,
    sizes and strides. ValueError otherwise: the caller's code moved or reshaped it
    (``resize_``, ``set_``) since it was read.

    Without the exchange API (torch before 2.9) the address is asked of torch's own methods,
    called as ``torch.Tensor``'s so that a subclass's overrides do not run."""
    layout = record.layout
    t = record.owner
    address = _tensor.current_address(t, layout.sizes, layout.strides)
    if address is None:
        torch = sys.modules["torch"]
        with torch._C.DisableTorchFunction():
            same = (tuple(torch.Tensor.size(t)) == layout.sizes
                    and all(n <= 1 or s == e for n, s, e in zip(
                        layout.sizes, torch.Tensor.stride(t), layout.strides)))
            address = torch.Tensor.data_ptr(t) if same else -1
    if address != record.ptr:
        raise moved(name)
    return address


def written(record: MemoryRecord) -> None:
    """Bump the tensor's version counter, as torch's in-place ops do (autograd checks it)."""
    sys.modules["torch"].autograd.graph.increment_version(record.owner)


def _refuse_unstrided(t: Any) -> None:
    torch = sys.modules["torch"]
    if t.is_nested:
        raise ValueError(
            "a nested torch tensor has no single memory layout: read its components "
            "(.unbind()) one by one"
        )
    if t.layout is not torch.strided:
        raise ValueError(
            f"a torch tensor with layout {t.layout} has no strides, so no memory layout: "
            f"convert it with .to_dense() first"
        )


_DEVICES: dict[Any, tuple[int, int]] = {}


def _device(t: Any) -> tuple[int, int]:
    """DLPack's ``(device_type, device_id)`` of t, asked of torch once per device."""
    device = t.device
    found = _DEVICES.get(device)
    if found is None:
        try:
            kind, index = t.__dlpack_device__()        # ~2 us: worth caching
            found = (int(kind), int(index))
        except (ValueError, RuntimeError, TypeError):
            found = NO_DLPACK_DEVICE
        _DEVICES[device] = found
    return found


def describe(t: Any) -> MemoryRecord:
    """The record of a tensor: the extent is its whole storage, from the storage's first byte."""
    _refuse_unstrided(t)
    itemsize = t.element_size()
    layout = Layout(tuple(t.shape), t.stride(), itemsize=itemsize)
    storage = t.untyped_storage()
    first = t.storage_offset()                   # element offset of t[0, ..., 0] in the storage
    last = storage.nbytes() // itemsize - 1 - first
    lazy = "conj" if t.is_conj() else "neg" if t.is_neg() else None
    return MemoryRecord(
        ptr=storage.data_ptr() + first * itemsize, layout=layout, extent=(-first, last),
        device=_device(t), writeable=True, owner=t, library="torch",
        dtype=_DLPACK_DTYPES.get(str(t.dtype).removeprefix("torch.")), lazy=lazy,
    )


def _negative_axes(layout: Layout) -> list[int]:
    """Axes a torch tensor cannot hold: a negative stride on more than one element."""
    if layout.size == 0:
        return []
    return [d for d, (n, s) in enumerate(zip(layout.sizes, layout.strides)) if s < 0 and n > 1]


def _graph_source(base: Any, own: Layout, layout: Layout) -> tuple[Any, bool, bool]:
    """The tensor to call ``as_strided`` on so that gradients reach every element viewed.

    ``as_strided``'s backward drops the gradient of any element outside its input's own
    geometry, and the extent of a view is base's whole storage. So when base is a view whose
    root (``_base``) requires grad, the view is taken from the root, at the same storage
    offsets; returned with it: whether the conj and neg bits must be toggled to show base's
    values. A root of another dtype (``view_as_real``, ``.view(dtype)``) cannot stand in for
    base: then the layout must stay within base's own span, which base must fill (unpadded),
    so that every element viewed is one of base's.
    """
    root = base._base
    if root is None or not base.requires_grad or not root.requires_grad:
        return base, False, False
    if root.dtype == base.dtype:
        return root, base.is_conj() != root.is_conj(), base.is_neg() != root.is_neg()
    lo, hi = own.span
    if layout.size and (own.is_padded or layout.span[0] < lo or layout.span[1] > hi):
        raise ValueError(
            f"base is a {base.dtype} view, requiring grad, of a {root.dtype} tensor, and the "
            f"layout (span {layout.span}) may reach storage that is not one of base's "
            f"elements (base's span is {own.span}{', with gaps' if own.is_padded else ''}): "
            f"its gradient would be lost; view the root tensor, or base.detach()"
        )
    return base, False, False


def _reinterpretable(torch: Any, itemsize: int) -> Any:
    """The integer dtype of ``itemsize`` bytes, to move elements of any dtype bit for bit."""
    return {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}.get(itemsize)


def _flip(torch: Any, t: Any, axes: list[int]) -> Any:
    """``t.flip(axes)``; for dtypes torch cannot flip (float8, ...), flip their bits instead."""
    try:
        return t.flip(axes)
    except (NotImplementedError, RuntimeError):
        bits = _reinterpretable(torch, t.element_size())
        if bits is None or t.requires_grad:
            raise ValueError(
                f"torch cannot flip {t.dtype} tensors{' that require grad' * t.requires_grad}, "
                f"so it cannot copy this negative-stride layout"
            ) from None
        return t.view(bits).flip(axes).view(t.dtype)


def view(base: Any, record: MemoryRecord, layout: Layout, copy: bool | None) -> Any:
    """``torch.as_strided`` over base's storage (no data touched: works on every device).

    torch refuses negative strides. Where they span more than one element, the layout is read
    with those axes reversed (positive strides) and flipped back by ``torch.flip``, which
    copies; ``copy=False`` refuses instead. A negative stride on a dim of one element (or in an
    empty layout) reaches the same memory with its sign dropped, so that needs no copy.
    """
    torch = sys.modules["torch"]
    start = base.storage_offset()       # storage offsets are the same from base and its root
    source, conj, neg = _graph_source(base, record.layout, layout)
    flip = _negative_axes(layout)
    if flip and copy is False:
        raise ValueError(
            f"torch tensors cannot have negative strides, and the layout has strides "
            f"{layout.strides} (axes {flip}): a torch view would need a copy; pass "
            f"copy=None to get one"
        )
    if flip:
        layout = layout[tuple(slice(None, None, -1) if d in flip else slice(None)
                              for d in range(layout.ndim))]
    # What is left negative is on dims of one element (or the layout is empty): drop the sign.
    strides = tuple(abs(s) for s in layout.strides)
    out = torch.as_strided(source, layout.sizes, strides, start + layout.offset)
    if conj:
        out = out.conj()
    if neg:
        out = torch._neg_view(out)
    if flip:
        return _flip(torch, out, flip)
    return out.clone() if copy else out


def _memory_format(torch: Any, order: tuple[int, ...]) -> Any:
    """torch's memory format for a packed physical order, when it has one."""
    if order == tuple(range(len(order))):
        return torch.contiguous_format
    return {(0, 2, 3, 1): torch.channels_last,
            (0, 2, 3, 4, 1): torch.channels_last_3d}.get(order)


def resolve_dtype(dtype: Any) -> tuple[str, Any]:
    """(engine type name, torch dtype) of a ``dtype`` argument: a torch dtype, or a numpy
    dtype-like naming one of the types strided converts (``np.float16``, ``"bfloat16"``).

    Raises
    ------
    TypeError
        Not a dtype, or one strided does not convert.
    """
    torch = sys.modules["torch"]
    if isinstance(dtype, torch.dtype):
        name = str(dtype).removeprefix("torch.")
    else:
        name = _dtype_name(dtype)
    if name not in DLPACK_TYPES:
        raise TypeError(f"dtype {dtype!r} is not one of the types strided converts "
                        f"({', '.join(DLPACK_TYPES)})")
    return name, getattr(torch, name)


def _dtype_name(dtype: Any) -> str:
    """numpy's name of a dtype-like, without importing anything numpy does not need."""
    import numpy as np

    if dtype == "bfloat16" or getattr(dtype, "__name__", None) == "bfloat16":
        return "bfloat16"
    try:
        return np.dtype(dtype).name
    except TypeError:
        raise TypeError(f"dtype {dtype!r} is not a dtype") from None


def allocate(like: Any, layout: Layout, order: tuple[int, ...] | None, zero: bool,
             dtype: Any = None) -> Any:
    """A new tensor of like's dtype (or ``dtype``, a torch dtype) and device laid out as
    ``layout``.

    With ``order`` (the layout is packed in that physical order) the tensor is made the way
    torch makes its own: ``memory_format=torch.channels_last`` for NHWC, ``channels_last_3d``
    for NDHWC, contiguous for row-major, ``empty_strided`` for any other order. Without, the
    layout (offset and gaps included; no negative strides) is taken from a storage of
    ``layout.nbytes`` bytes with ``as_strided``. ``zero``: fill with zeros.

    Raises
    ------
    ValueError
        The layout has a negative stride on an axis of more than one element.
    """
    torch = sys.modules["torch"]
    options = {"dtype": like.dtype if dtype is None else dtype, "device": like.device}
    if order is not None:
        memory_format = _memory_format(torch, order)
        out = None
        if memory_format is not None:
            out = torch.empty(layout.sizes, memory_format=memory_format, **options)
        # torch strides an empty tensor its own way; any other difference means torch's
        # format is not the layout asked for, so the strides are given explicitly.
        if out is None or (out.numel() and out.stride() != layout.strides):
            out = torch.empty_strided(layout.sizes, layout.strides, **options)
        return out.zero_() if zero else out
    negative = _negative_axes(layout)
    if negative:
        raise ValueError(f"torch tensors cannot have negative strides, and layout has "
                         f"strides {layout.strides} (axes {negative})")
    make = torch.zeros if zero else torch.empty
    storage = make(layout.nbytes // layout.itemsize, **options)
    return torch.as_strided(storage, layout.sizes, layout.strides, layout.offset)


class TorchAdapter(Adapter):
    """torch's answers to strided's questions (:class:`~strided.interop._record.Adapter`).

    Each answer calls this module's function of the same purpose, looked up when asked (tests
    replace ``copies_itself`` and ``device_copy`` to run the device path on CPU tensors).
    """

    __slots__ = ()

    library = "torch"

    def refuse_raw_copy(self, record: MemoryRecord, name: str) -> None:
        refuse_raw_copy(record, name)

    def check_destination(self, record: MemoryRecord, name: str) -> None:
        check_destination(record, name)

    def resolved(self, record: MemoryRecord) -> MemoryRecord:
        return resolved(record)

    def pinned(self, record: MemoryRecord, name: str) -> int:
        return pinned(record, name)

    def written(self, record: MemoryRecord) -> None:
        written(record)

    def same_dtype(self, a: MemoryRecord, b: MemoryRecord) -> bool:
        return bool(a.owner.dtype == b.owner.dtype)

    def device_copier(self, dst: MemoryRecord,
                      src: MemoryRecord) -> Callable[[Any, Any, bool], None] | None:
        return device_copy if copies_itself(dst, src) else None

    def device_converter(self, dst: MemoryRecord,
                         src: MemoryRecord) -> Callable[..., None] | None:
        return device_convert if copies_itself(dst, src) else None

    def graph_copier(self, record: MemoryRecord) -> Callable[[Any, Any], None] | None:
        return graph_copier(record)

    def resolve_dtype(self, dtype: Any) -> tuple[str, Any]:
        return resolve_dtype(dtype)

    def allocate(self, like: Any, record: MemoryRecord, layout: Layout,
                 order: tuple[int, ...] | None, zero: bool, dtype: Any = None) -> Any:
        return allocate(like, layout, order, zero, dtype)

    def view(self, base: Any, record: MemoryRecord, layout: Layout, copy: bool | None) -> Any:
        return view(base, record, layout, copy)


ADAPTER = TorchAdapter()
"""The torch adapter: ``ADAPTERS["torch"]``."""
