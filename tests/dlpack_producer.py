"""A hand-made DLPack producer, built with ``ctypes`` only, for feeding odd capsules to consumers.

It shares no code with ``strided``: the DLPack ABI (``dlpack.h`` v1.1) is spelled out below as
``ctypes`` structures, and :class:`Producer` fills them in field by field, so a test can hand a
consumer capsules that no real library would make (NULL strides or shape, a ``byte_offset``,
an out-of-range ``ndim``, a foreign device, odd dtypes, the read-only flag, legacy or versioned).

Memory management follows the DLPack rules and is observable: every capsule made increments
``Producer.exported``, every call of the managed tensor's deleter increments ``Producer.deleted``.
A consumer renames the capsule (``"used_dltensor"`` / ``"used_dltensor_versioned"``) and
becomes responsible for calling the deleter; the capsule destructor calls it only when the
capsule was dropped without being consumed.

Why the two C callbacks are borrowed from NumPy instead of being ``ctypes`` callbacks
    Consumers routinely release a rejected capsule (or call the deleter) with their own
    exception already set. A ``CFUNCTYPE`` callback cannot run Python code in that state: the
    callback fails with ``SystemError``, ``ctypes`` reports it as unraisable and *clears* the
    consumer's exception, so the consumer raises ``SystemError("... returned NULL without
    setting an exception")`` instead of its own error, and the tensor leaks. So the capsule
    destructor and the deleter stored in the struct are NumPy's own C functions, taken from
    capsules NumPy exports: the destructor is the one ``dlpack.h`` mandates (call the deleter
    unless the capsule was renamed), and the deleter does ``PyMem_Free(self)`` and
    ``Py_XDECREF(self->manager_ctx)``. Here ``manager_ctx`` is a token object whose ``__del__``
    does the bookkeeping; CPython runs ``__del__`` with any pending exception saved and
    restored, so the consumer's exception survives untouched. :func:`_check_trampolines` proves
    at import time that the borrowed functions behave as described. Importing this module
    raises ``ImportError`` with numpy < 2.1, which cannot export versioned capsules.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "DLPACK_FLAG_BITMASK_IS_COPIED",
    "DLPACK_FLAG_BITMASK_READ_ONLY",
    "MAX_PADDED_NDIM",
    "DLDataType",
    "DLDevice",
    "DLManagedTensor",
    "DLManagedTensorVersioned",
    "DLPackVersion",
    "DLTensor",
    "Producer",
    "capsule",
    "capsule_name",
    "describe",
    "kDLBfloat",
    "kDLBool",
    "kDLCPU",
    "kDLCUDA",
    "kDLComplex",
    "kDLFloat",
    "kDLInt",
    "kDLUInt",
    "outstanding",
]

# --- dlpack.h constants ---------------------------------------------------------------------

kDLCPU = 1
kDLCUDA = 2

kDLInt = 0
kDLUInt = 1
kDLFloat = 2
kDLBfloat = 4
kDLComplex = 5
kDLBool = 6

DLPACK_FLAG_BITMASK_READ_ONLY = 1 << 0
DLPACK_FLAG_BITMASK_IS_COPIED = 1 << 1

#: ``shape``/``strides`` arrays are padded (shape with 1, strides with 0) up to an overridden
#: ``ndim`` when ``0 <= ndim <= MAX_PADDED_NDIM``, so a consumer that reads ``ndim`` entries
#: before rejecting the tensor stays inside the allocation.
MAX_PADDED_NDIM = 1024

# Capsule names: the pointers handed to PyCapsule_New must outlive every capsule, so the bytes
# objects live here, at module level, for the life of the process.
_LEGACY_NAME = b"dltensor"
_VERSIONED_NAME = b"dltensor_versioned"


# --- dlpack.h structures --------------------------------------------------------------------


class DLPackVersion(ctypes.Structure):
    """``DLPackVersion``: the ABI version of a versioned managed tensor."""

    _fields_ = (("major", ctypes.c_uint32), ("minor", ctypes.c_uint32))


class DLDevice(ctypes.Structure):
    """``DLDevice``: device type (an int-sized enum) and ordinal."""

    _fields_ = (("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32))


class DLDataType(ctypes.Structure):
    """``DLDataType``: type code, bits per lane, number of lanes."""

    _fields_ = (("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16))


class DLTensor(ctypes.Structure):
    """``DLTensor``: the plain tensor description (strides count elements, not bytes)."""

    _fields_ = (
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    )


class DLManagedTensor(ctypes.Structure):
    """``DLManagedTensor`` (legacy, capsule name ``"dltensor"``); ``deleter`` is a raw pointer."""

    _fields_ = (
        ("dl_tensor", DLTensor),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
    )


class DLManagedTensorVersioned(ctypes.Structure):
    """``DLManagedTensorVersioned`` (capsule name ``"dltensor_versioned"``)."""

    _fields_ = (
        ("version", DLPackVersion),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    )


# --- C API, through prototypes of our own (never mutating ctypes.pythonapi's shared ones) -------


def _api(name: str, restype: Any, *argtypes: Any) -> Any:
    """Bind a Python C-API function, called with the GIL held and its error indicator checked."""
    return ctypes.PYFUNCTYPE(restype, *argtypes)((name, ctypes.pythonapi))


_PyCapsule_New = _api(
    "PyCapsule_New", ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p
)
_PyCapsule_GetName = _api("PyCapsule_GetName", ctypes.c_char_p, ctypes.py_object)
_PyCapsule_GetPointer = _api(
    "PyCapsule_GetPointer", ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p
)
_PyCapsule_GetDestructor = _api("PyCapsule_GetDestructor", ctypes.c_void_p, ctypes.py_object)
_PyMem_Calloc = _api("PyMem_Calloc", ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t)
_PyMem_Free = _api("PyMem_Free", None, ctypes.c_void_p)
_Py_IncRef = _api("Py_IncRef", None, ctypes.py_object)
_Py_DecRef = _api("Py_DecRef", None, ctypes.py_object)


# --- bookkeeping ------------------------------------------------------------------------------


class _Export:
    """What one capsule holds: the registry keeps it until the tensor's deleter runs."""

    __slots__ = ("address", "buffer", "producer", "shape", "strides", "versioned")

    def __init__(self, producer: Producer, address: int, versioned: bool, shape: Any, strides: Any):
        self.producer = producer
        self.buffer = producer.buffer  # the data stays valid even if the producer is dropped
        self.address = address
        self.versioned = versioned
        self.shape = shape
        self.strides = strides


#: struct address -> _Export, for every managed tensor whose deleter has not run yet.
_REGISTRY: dict[int, _Export] = {}
_LOCK = threading.Lock()


class _Token:
    """The object behind ``manager_ctx``; the deleter's ``Py_XDECREF`` runs its ``__del__``."""

    __slots__ = ("entry",)

    def __init__(self, entry: _Export | None):
        self.entry = entry

    def __del__(self) -> None:
        """Drop the export from the registry and count the deletion on its producer."""
        entry = self.entry
        if entry is None:  # disarmed: the export failed before a capsule existed
            return
        with _LOCK:   # (tests run thread-parallel too)
            if _REGISTRY.get(entry.address) is entry:
                del _REGISTRY[entry.address]
            entry.producer.deleted += 1


def outstanding() -> int:
    """Number of managed tensors (from any producer here) whose deleter has not run yet."""
    return len(_REGISTRY)


# --- the borrowed C callbacks -------------------------------------------------------------------


def _numpy_callbacks(versioned: bool) -> tuple[int, int]:
    """NumPy's C capsule destructor and managed-tensor deleter for one capsule kind."""
    probe = np.zeros(1)
    try:
        cap = probe.__dlpack__(max_version=(1, 0)) if versioned else probe.__dlpack__()
    except TypeError as exc:  # numpy < 2.1 exports legacy capsules only
        raise ImportError(
            f"dlpack_producer needs numpy >= 2.1 (versioned DLPack export); found {np.__version__}"
        ) from exc
    name = _VERSIONED_NAME if versioned else _LEGACY_NAME
    if _PyCapsule_GetName(cap) != name:
        raise RuntimeError(f"numpy exported a capsule named {_PyCapsule_GetName(cap)!r}")
    struct_type = DLManagedTensorVersioned if versioned else DLManagedTensor
    managed = struct_type.from_address(_PyCapsule_GetPointer(cap, name))
    destructor, deleter = _PyCapsule_GetDestructor(cap), managed.deleter
    if not destructor or not deleter:
        raise RuntimeError("numpy's DLPack capsule has no destructor or no deleter")
    return destructor, deleter  # `cap` is released unconsumed: numpy frees its own tensor


_CALLBACKS = {versioned: _numpy_callbacks(versioned) for versioned in (False, True)}


# --- the producer -------------------------------------------------------------------------------


def _default_dtype(dtype: np.dtype) -> tuple[int, int, int]:
    """The DLPack ``(code, bits, lanes)`` of a NumPy dtype."""
    codes = {"b": kDLBool, "i": kDLInt, "u": kDLUInt, "f": kDLFloat, "c": kDLComplex}
    if dtype.kind not in codes or not dtype.isnative:
        raise ValueError(f"no default DLPack dtype for {dtype!r}; pass dtype=(code, bits, lanes)")
    return codes[dtype.kind], dtype.itemsize * 8, 1


class Producer:
    """An array-like exposing ``__dlpack__`` / ``__dlpack_device__`` over a NumPy buffer.

    Every field of the exported tensor is taken as given, unchecked, so that odd tensors can
    be made on purpose:

    ``buffer``
        C-contiguous ``numpy.ndarray`` kept alive by the producer and by every export;
        ``data`` is its first byte.
    ``shape``, ``strides``
        Sequences of ints (strides in elements, as DLPack counts them); ``strides=None``
        exports a NULL strides pointer (C-contiguous by the DLPack rules).
    ``byte_offset``
        The ``byte_offset`` field.
    ``dtype``
        ``(code, bits, lanes)``; by default derived from ``buffer.dtype``.
    ``device``
        ``(device_type, device_id)``, also returned by ``__dlpack_device__``.
    ``readonly``, ``is_copied``
        Set the read-only / is-copied flag bits (versioned capsules only: the legacy struct
        has no flags).
    ``versioned``
        ``None`` follows the consumer (versioned if it passed ``max_version`` with a major
        version >= 1, legacy otherwise); ``True`` / ``False`` force the kind.
    ``version``
        ``(major, minor)`` written into a versioned struct.
    ``ndim``
        Overrides the ``ndim`` field (default ``len(shape)``), e.g. ``-1`` or ``100``; see
        :data:`MAX_PADDED_NDIM` for how the arrays are padded.
    ``shape_null``
        Export a NULL shape pointer.

    ``exported`` counts capsules made, ``deleted`` counts deleter calls, and ``requests``
    records the keyword arguments of each ``__dlpack__`` call. ``stream``, ``dl_device`` and
    ``copy`` are recorded but otherwise ignored (a mismatched capsule is the point).
    """

    def __init__(
        self,
        buffer: np.ndarray,
        shape: Sequence[int],
        strides: Sequence[int] | None = None,
        *,
        byte_offset: int = 0,
        dtype: tuple[int, int, int] | None = None,
        device: tuple[int, int] = (kDLCPU, 0),
        readonly: bool = False,
        versioned: bool | None = None,
        version: tuple[int, int] = (1, 1),
        ndim: int | None = None,
        shape_null: bool = False,
        is_copied: bool = False,
    ):
        if not isinstance(buffer, np.ndarray) or not buffer.flags.c_contiguous:
            raise ValueError("buffer must be a C-contiguous numpy.ndarray")
        self.buffer = buffer
        self.shape = tuple(int(n) for n in shape)
        self.strides = None if strides is None else tuple(int(s) for s in strides)
        self.byte_offset = int(byte_offset)
        code, bits, lanes = _default_dtype(buffer.dtype) if dtype is None else dtype
        self.dtype = (int(code), int(bits), int(lanes))
        device_type, device_id = device
        self.device = (int(device_type), int(device_id))
        self.readonly = bool(readonly)
        self.is_copied = bool(is_copied)
        self.versioned = versioned
        major, minor = version
        self.version = (int(major), int(minor))
        self.ndim = len(self.shape) if ndim is None else int(ndim)
        self.shape_null = bool(shape_null)
        self.exported = 0
        self.deleted = 0
        self.requests: list[dict[str, Any]] = []

    def __dlpack_device__(self) -> tuple[int, int]:
        """The ``(device_type, device_id)`` given at construction."""
        return self.device

    def __dlpack__(
        self,
        *,
        stream: Any = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> Any:
        """A fresh capsule (``"dltensor"`` or ``"dltensor_versioned"``) over the buffer."""
        self.requests.append(
            {"stream": stream, "max_version": max_version, "dl_device": dl_device, "copy": copy}
        )
        versioned = self.versioned
        if versioned is None:
            versioned = max_version is not None and max_version[0] >= 1
        return self._export(bool(versioned))

    def _arrays(self) -> tuple[Any, Any]:
        """The ctypes ``int64`` arrays for shape and strides (``None`` for a NULL pointer)."""
        pad_to = self.ndim if 0 <= self.ndim <= MAX_PADDED_NDIM else 0

        def padded(values: tuple[int, ...], fill: int) -> Any:
            values = values + (fill,) * max(0, pad_to - len(values))
            return (ctypes.c_int64 * len(values))(*values)

        shape = None if self.shape_null else padded(self.shape, 1)
        strides = None if self.strides is None else padded(self.strides, 0)
        return shape, strides

    def _export(self, versioned: bool) -> Any:
        """Allocate and fill one managed tensor and wrap it in an unconsumed capsule."""
        struct_type = DLManagedTensorVersioned if versioned else DLManagedTensor
        address = _PyMem_Calloc(1, ctypes.sizeof(struct_type))  # the deleter PyMem_Frees it
        if not address:
            raise MemoryError
        shape, strides = self._arrays()
        entry = _Export(self, address, versioned, shape, strides)
        token = _Token(entry)

        managed = struct_type.from_address(address)
        tensor = managed.dl_tensor
        tensor.data = self.buffer.ctypes.data or None
        tensor.device = DLDevice(*self.device)
        tensor.ndim = self.ndim
        tensor.dtype = DLDataType(*self.dtype)
        if shape is not None:
            tensor.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
        if strides is not None:
            tensor.strides = ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64))
        tensor.byte_offset = self.byte_offset
        if versioned:
            managed.version = DLPackVersion(*self.version)
            managed.flags = (DLPACK_FLAG_BITMASK_READ_ONLY if self.readonly else 0) | (
                DLPACK_FLAG_BITMASK_IS_COPIED if self.is_copied else 0
            )
        destructor, deleter = _CALLBACKS[versioned]
        managed.manager_ctx = id(token)
        managed.deleter = deleter
        del managed, tensor  # views of the C memory: none may outlive it

        name = _VERSIONED_NAME if versioned else _LEGACY_NAME
        try:
            cap = _PyCapsule_New(address, name, destructor)
        except BaseException:
            token.entry = None
            _PyMem_Free(address)
            raise
        with _LOCK:
            _REGISTRY[address] = entry
        _Py_IncRef(token)  # this reference belongs to manager_ctx; the deleter drops it
        self.exported += 1
        return cap


def capsule(
    buffer: np.ndarray,
    shape: Sequence[int],
    strides: Sequence[int] | None = None,
    **kwargs: Any,
) -> Any:
    """A raw capsule from a one-off :class:`Producer` (same arguments).

    ``versioned=None`` (the default) means legacy here, as for a consumer that passes no
    ``max_version``.
    """
    return Producer(buffer, shape, strides, **kwargs).__dlpack__()


def capsule_name(cap: Any) -> str | None:
    """The current name of a capsule (``"used_..."`` once a consumer took it), or ``None``."""
    name = _PyCapsule_GetName(cap)
    return None if name is None else name.decode()


def describe(cap: Any) -> dict[str, Any]:
    """Read back the fields of an *unconsumed* DLPack capsule (from any producer).

    ``shape``/``strides`` are ``None`` for NULL pointers, otherwise tuples of ``ndim`` entries
    (empty when ``ndim`` is outside ``[0, MAX_PADDED_NDIM]``); ``version`` and ``flags`` are
    ``None`` for legacy capsules.
    """
    name = _PyCapsule_GetName(cap)
    if name not in (_LEGACY_NAME, _VERSIONED_NAME):
        raise ValueError(f"not an unconsumed DLPack capsule: {name!r}")
    versioned = name == _VERSIONED_NAME
    struct_type = DLManagedTensorVersioned if versioned else DLManagedTensor
    managed = struct_type.from_address(_PyCapsule_GetPointer(cap, name))
    tensor = managed.dl_tensor
    count = tensor.ndim if 0 <= tensor.ndim <= MAX_PADDED_NDIM else 0

    def read(pointer: Any) -> tuple[int, ...] | None:
        return tuple(pointer[i] for i in range(count)) if pointer else None

    return {
        "name": name.decode(),
        "versioned": versioned,
        "version": (managed.version.major, managed.version.minor) if versioned else None,
        "flags": managed.flags if versioned else None,
        "data": tensor.data,
        "device": (tensor.device.device_type, tensor.device.device_id),
        "ndim": tensor.ndim,
        "dtype": (tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes),
        "shape": read(tensor.shape),
        "strides": read(tensor.strides),
        "byte_offset": tensor.byte_offset,
        "manager_ctx": managed.manager_ctx,
        "deleter": managed.deleter,
    }


def _check_trampolines() -> None:
    """Prove that the borrowed destructor and deleter free an unconsumed capsule as described."""
    for versioned in (False, True):
        producer = Producer(np.zeros(1), (1,), versioned=versioned)
        before = outstanding()
        producer.__dlpack__()  # dropped at once, unconsumed
        if producer.deleted != 1 or outstanding() != before:
            raise RuntimeError(
                "numpy's DLPack capsule destructor/deleter no longer call the deleter and "
                "release manager_ctx; this hand-made producer cannot work with this numpy"
            )


_check_trampolines()
