"""Backends, layout cases and brute-force oracles for tests/interop/test_interop.py.

A :class:`Backend` turns a 1-D numpy array of values into a base object of one library (numpy,
read-only numpy, bytes, bytearray, memoryview, array.array, torch, array-api-strict) and reads
any result of :func:`strided.view` back as numpy values, independently of strided. The module is
also imported by the subprocess checks of test_interop.py (it imports torch only when a torch
backend is used).

The oracle never calls strided: the value at index ``i`` of a layout over a 1-D base is
``base_values[dot(i, strides) + offset]``, with every index enumerated.
"""

from __future__ import annotations

import array
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as hst
from strategies import all_indices, brute_offsets, random_strides, sizes_st, structured_strides

import strided

# ---- oracles -------------------------------------------------------------------------------


def expected_values(values, sizes, strides, offset):
    """Brute force: the array a layout shows over the 1-D buffer ``values``."""
    offs = brute_offsets(sizes, strides, offset)
    out = np.empty(len(offs), dtype=values.dtype)
    for k, o in enumerate(offs):
        assert 0 <= o < len(values), f"oracle: offset {o} outside a buffer of {len(values)}"
        out[k] = values[o]
    return out.reshape(sizes)


def reach_counts(n, sizes, strides, offset, weights=None):
    """Brute force: for each of ``n`` buffer elements, the sum of ``weights`` (default 1) over
    the indices that reach it -- the gradient of ``(view * weights).sum()``."""
    grad = np.zeros(n)
    for k, index in enumerate(all_indices(sizes)):
        o = offset + sum(i * s for i, s in zip(index, strides))
        grad[o] += 1.0 if weights is None else weights.reshape(-1)[k]
    return grad


def brute_span(sizes, strides):
    """(lowest, highest) offset reached at offset 0, or None for an empty layout."""
    offs = brute_offsets(sizes, strides)
    return (min(offs), max(offs)) if offs else None


def with_itemsize(L, itemsize):
    return strided.Layout(L.sizes, L.strides, offset=L.offset, itemsize=itemsize)


def buffer_values(n, dtype):
    """``n`` distinct values (uint8: distinct for n <= 251), none equal to GUARD[dtype]."""
    dtype = np.dtype(dtype)
    k = np.arange(n)
    if dtype == np.uint8:
        return ((k * 37 + 11) % 251).astype(np.uint8)
    if dtype.kind == "c":
        return (k + 1 + 1j * (2 * k + 3)).astype(dtype)
    if dtype.kind == "f":
        return (k + 0.5).astype(dtype)
    return (3 * k + 1).astype(dtype)


def guard_value(dtype):
    return np.dtype(dtype).type(255 if np.dtype(dtype) == np.uint8 else -999)


# ---- backends ------------------------------------------------------------------------------


def _torch():
    return importlib.import_module("torch")


def _numpy_values(x):
    return np.array(x, copy=True)


def _buffer_values(dtype):
    return lambda x: np.frombuffer(x, dtype=dtype).copy()


def _torch_values(x):
    return x.detach().resolve_conj().resolve_neg().cpu().numpy().copy()


def _xp_values(x):
    return np.from_dlpack(x).copy()


def _numpy_write(x, index, value):
    x[index] = value


def _torch_write(x, index, value):
    with _torch().no_grad():
        x[index] = value.item() if isinstance(value, np.generic) else value


def _numpy_address(x):
    if isinstance(x, np.ndarray):
        return x.__array_interface__["data"][0]
    return np.frombuffer(x, dtype=np.uint8).__array_interface__["data"][0]


def _torch_address(x):
    return x.data_ptr()


def _xp_address(x):
    return np.from_dlpack(x).__array_interface__["data"][0]


def _numpy_shares(result, base):
    other = base if isinstance(base, np.ndarray) else np.frombuffer(base, dtype=np.uint8)
    return np.shares_memory(result, other)


def _torch_shares(result, base):
    return result.untyped_storage().data_ptr() == base.untyped_storage().data_ptr()


def _xp_shares(result, base):
    return np.shares_memory(np.from_dlpack(result), np.from_dlpack(base))


def _padded(values, guard):
    """values with ``guard`` guard elements on each side, and the slice that is values."""
    g = np.full(guard, guard_value(values.dtype), dtype=values.dtype)
    return np.concatenate([g, values, g]), slice(guard, guard + len(values))


def _make_numpy(values, guard):
    big, inner = _padded(values, guard)
    return big[inner]


def _make_numpy_readonly(values, guard):
    base = _make_numpy(values, guard)
    base.flags.writeable = False
    return base


def _make_bytes(values, guard):
    return bytes(values.tobytes())              # a bytes object is never a window: no guards


def _make_bytearray(values, guard):
    return bytearray(values.tobytes())


def _make_memoryview(values, guard):
    big, inner = _padded(values, guard)
    return memoryview(bytearray(big.tobytes()))[inner]


def _make_memoryview_readonly(values, guard):
    big, inner = _padded(values, guard)
    return memoryview(bytes(big.tobytes()))[inner]


def _make_memoryview_numpy(values, guard):
    big, inner = _padded(values, guard)
    return memoryview(big)[inner]


def _make_array(values, guard):
    return array.array("i", values.tolist())


def _make_torch(values, guard, device="cpu"):
    big, inner = _padded(values, guard)
    return _torch().from_numpy(big).to(device)[inner]


def _make_torch_cuda(values, guard):
    return _make_torch(values, guard, "cuda")


def _make_xp(values, guard):
    xp = importlib.import_module("array_api_strict")
    big, inner = _padded(values, guard)
    return xp.asarray(big)[inner]


@dataclass(frozen=True)
class Backend:
    """How to build a base of one library and read strided's results back.

    ``make(values, guard)`` builds a 1-D base holding ``values`` (a numpy array of ``dtype``);
    where the library allows, base is a window of a bigger buffer with ``guard`` guard elements
    (GUARD value) on each side. ``storage_wide``: the memory a view may use is the whole
    buffer (torch), so the guards are reachable; otherwise only base itself.
    """

    name: str
    dtype: Any
    library: str                  # describe(base).library
    result: str                   # "numpy", "torch" or "xp": the type view() returns
    writeable: bool
    make_: Callable[[np.ndarray, int], Any]
    values: Callable[[Any], np.ndarray]
    write_: Callable[[Any, Any, Any], None]
    address: Callable[[Any], int]
    shares: Callable[[Any, Any], bool]
    read_base: Callable[[Any], np.ndarray]
    guards: bool = True           # make() can place guard elements around base
    storage_wide: bool = False
    device: tuple[int, int] = (1, 0)
    dlpack_dtype: tuple[int, int, int] | None = None

    def __repr__(self):
        return self.name

    @property
    def itemsize(self):
        return np.dtype(self.dtype).itemsize

    @property
    def is_torch(self):
        return self.result == "torch"

    def make(self, values, guard=0):
        values = np.asarray(values, dtype=self.dtype)
        assert values.ndim == 1
        return self.make_(values, guard)

    def write(self, result, index, value):
        self.write_(result, index, value)

    def layout(self, sizes, strides=None, offset=0):
        return strided.Layout(sizes, strides, offset=offset, itemsize=self.itemsize)

    def extent(self, n, guard):
        """(first, last) element offsets a view of ``make(values_of_n, guard)`` may reach."""
        if self.storage_wide:
            return (-guard, n - 1 + guard)
        return (0, n - 1)


def _numpy_like(name, dtype, make, *, writeable=True, guards=True, read_base=None, code=None):
    return Backend(
        name=name, dtype=dtype, library="numpy", result="numpy", writeable=writeable,
        make_=make, values=_numpy_values, write_=_numpy_write, address=_numpy_address,
        shares=_numpy_shares, read_base=read_base or _numpy_values, guards=guards,
        dlpack_dtype=code,
    )


NUMPY = _numpy_like("numpy", np.int32, _make_numpy, code=(0, 32, 1))
NUMPY_RO = _numpy_like("numpy-readonly", np.float64, _make_numpy_readonly, writeable=False,
                       code=(2, 64, 1))
BYTES = _numpy_like("bytes", np.uint8, _make_bytes, writeable=False, guards=False,
                    read_base=_buffer_values(np.uint8), code=(1, 8, 1))
BYTEARRAY = _numpy_like("bytearray", np.uint8, _make_bytearray, guards=False,
                        read_base=_buffer_values(np.uint8), code=(1, 8, 1))
MEMORYVIEW = _numpy_like("memoryview", np.uint8, _make_memoryview,
                         read_base=_buffer_values(np.uint8), code=(1, 8, 1))
MEMORYVIEW_RO = _numpy_like("memoryview-readonly", np.uint8, _make_memoryview_readonly,
                            writeable=False, read_base=_buffer_values(np.uint8),
                            code=(1, 8, 1))
MEMORYVIEW_F32 = _numpy_like("memoryview-float32", np.float32, _make_memoryview_numpy,
                             read_base=_buffer_values(np.float32), code=(2, 32, 1))
ARRAY_I = _numpy_like("array.array-i", np.dtype("i"), _make_array, guards=False,
                      read_base=_buffer_values(np.dtype("i")), code=(0, 32, 1))
TORCH = Backend(
    name="torch", dtype=np.float32, library="torch", result="torch", writeable=True,
    make_=_make_torch, values=_torch_values, write_=_torch_write, address=_torch_address,
    shares=_torch_shares, read_base=_torch_values, storage_wide=True, dlpack_dtype=(2, 32, 1),
)
TORCH_CUDA = Backend(
    name="torch-cuda", dtype=np.float32, library="torch", result="torch", writeable=True,
    make_=_make_torch_cuda, values=_torch_values, write_=_torch_write, address=_torch_address,
    shares=_torch_shares, read_base=_torch_values, storage_wide=True, device=(2, 0),
    dlpack_dtype=(2, 32, 1),
)
XP = Backend(
    name="array-api-strict", dtype=np.float64, library="dlpack", result="xp", writeable=True,
    make_=_make_xp, values=_xp_values, write_=_numpy_write, address=_xp_address,
    shares=_xp_shares, read_base=_xp_values, dlpack_dtype=(2, 64, 1),
)

BACKENDS = [NUMPY, NUMPY_RO, BYTES, BYTEARRAY, MEMORYVIEW, MEMORYVIEW_RO, MEMORYVIEW_F32,
            ARRAY_I, TORCH, XP, TORCH_CUDA]
BY_NAME = {b.name: b for b in BACKENDS}


def cuda_available():
    try:
        return bool(_torch().cuda.is_available())
    except ImportError:
        return False


# ---- layout cases --------------------------------------------------------------------------

L_ = strided.Layout

# (id, buffer length n, layout with itemsize 1): every layout lies inside [0, n).
CASES = [
    ("packed", 6, L_((2, 3), (3, 1))),
    ("padded", 10, L_((2, 3), (5, 1), offset=1)),
    ("padded-both-dims", 40, L_((3, 2, 2), (13, 5, 2), offset=3)),
    ("permuted-nhwc", 24, L_((2, 3, 2, 2), (12, 1, 6, 3))),
    ("permuted-3d", 24, L_((2, 3, 4)).permute((2, 0, 1))),
    ("column-major", 12, L_((3, 4), (1, 3))),
    ("sliced", 16, L_((4, 4))[1:3, ::2]),
    ("sliced-steps", 30, L_((5, 6))[1::2, 1:5:3]),
    ("broadcast-row", 8, L_((3, 4), (0, 1), offset=2)),
    ("broadcast-all", 6, L_((2, 3), (0, 0), offset=5)),
    ("broadcast-inner", 12, L_((3, 4, 2), (4, 1, 0))),
    ("negative-rows", 12, L_((3, 4), (-4, 1), offset=8)),
    ("negative-both", 12, L_((3, 4), (-4, -1), offset=11)),
    ("negative-1d", 5, L_((5,), (-1,), offset=4)),
    ("negative-padded-mixed", 11, L_((2, 3), (-5, 2), offset=6)),
    ("negative-broadcast", 7, L_((3, 2), (-3, 0), offset=6)),
    ("negative-sliced", 30, L_((5, 6))[::-2, 4:0:-2]),
    ("size0-first", 4, L_((0, 3), (3, 1))),
    ("size0-middle-negative", 6, L_((2, 0, 3), (5, 7, -1), offset=6)),
    ("size0-offset-one-past-end", 6, L_((0,), (1,), offset=6)),
    ("size0-offset-start", 1, L_((3, 0), (1, 1))),
    ("size1-odd-strides", 6, L_((1, 3, 1), (97, 2, 13), offset=1)),
    ("size1-negative-stride", 6, L_((1, 3), (-7, 2), offset=1)),
    ("size1-all", 5, L_((1, 1, 1), (-3, 1000, 0), offset=2)),
    ("rank0", 5, L_((), (), offset=3)),
    ("rank0-last", 5, L_((), (), offset=4)),
    ("rank0-first", 1, L_(())),
    ("sliding-window", 6, L_((4, 3), (1, 1))),
    ("sliding-window-2d", 16, L_((3, 3, 2, 2), (4, 1, 4, 1))),
    ("overlap-reversed-window", 6, L_((4, 3), (1, -1), offset=2)),
    ("last-element", 9, L_((1,), (1,), offset=8)),
    ("large-stride", 10, L_((2,), (9,))),
    ("whole-buffer", 7, L_((7,))),
]


def has_negative(L):
    return any(s < 0 for s in L.strides)


# ---- hypothesis ----------------------------------------------------------------------------


@hst.composite
def buffer_layouts(draw, max_rank=4, max_size=4, max_stride=6, max_extra=3,
                   nonnegative=False, negative=False):
    """(n, sizes, strides, offset): a layout lying inside a 1-D buffer of n elements.

    Strides are random in [-max_stride, max_stride] or structured (packed in some order,
    maybe padded, flipped or broadcast). ``nonnegative``: every stride >= 0; ``negative``:
    some stride of a dimension of size > 1 is negative (a non-empty layout).
    """
    sizes = draw(sizes_st(0, max_rank, 1 if negative else 0, max_size))
    if draw(hst.booleans()):
        strides = draw(random_strides(sizes, max_stride))
    else:
        strides = draw(structured_strides(sizes))
    if nonnegative:
        strides = tuple(abs(s) for s in strides)
    if negative:
        axes = [d for d, n in enumerate(sizes) if n > 1]
        if not axes:
            sizes = (*sizes, 2)
            strides = (*strides, -1)
            axes = [len(sizes) - 1]
        if all(strides[d] >= 0 for d in axes):
            d = draw(hst.sampled_from(axes))
            strides = tuple((-abs(s) or -1) if k == d else s for k, s in enumerate(strides))
    span = brute_span(sizes, strides)
    extra = draw(hst.integers(0, max_extra))
    if span is None:
        n = extra
        offset = draw(hst.integers(0, n))
    else:
        lo, hi = span
        n = hi - lo + 1 + extra
        offset = -lo + draw(hst.integers(0, extra))
    return n, tuple(sizes), tuple(strides), offset
