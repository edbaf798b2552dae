"""DLPack capsules (the dlpack.h v1.x ABI): consuming one, and producing one over given memory.

The C structs of DLPack and the capsule protocol live here, next to the adapters that use them
(:mod:`strided.interop._dlpack`, :mod:`strided.interop._numpy`); the shape and stride arithmetic
is ``strided._core``'s.
"""
from cpython.exc cimport PyErr_Fetch, PyErr_Restore
from cpython.long cimport PyLong_AsVoidPtr
from cpython.pycapsule cimport (
    PyCapsule_CheckExact, PyCapsule_GetName, PyCapsule_GetPointer, PyCapsule_IsValid,
    PyCapsule_New, PyCapsule_SetName,
)
from cpython.ref cimport PyObject, Py_INCREF, Py_XDECREF
from libc.stdint cimport int64_t
from libc.stdlib cimport free, malloc

from strided._core cimport MAX_NDIM, c_size, tuple_of, load_pair

DLPACK_VERSION = (DLPACK_MAJOR, DLPACK_MINOR)
"""The newest DLPack version this core reads and writes."""

cdef const char* _LEGACY = b"dltensor"
cdef const char* _LEGACY_USED = b"used_dltensor"
cdef const char* _VERSIONED = b"dltensor_versioned"
cdef const char* _VERSIONED_USED = b"used_dltensor_versioned"


cdef class DLPackTensor:
    """A consumed DLPack capsule: what it describes, and ownership of its memory.

    Made by :func:`consume_dlpack`. The producer's deleter runs when this object is garbage
    collected, so holding it keeps the producer's memory alive. Attributes, read once at
    consumption: ``data`` (the pointer, without ``byte_offset``), ``byte_offset``, ``shape``,
    ``strides`` (element strides, or None when the producer gave a NULL pointer: packed
    row-major), ``device`` ``(device_type, device_id)``, ``dtype`` ``(code, bits, lanes)``,
    ``readonly``, ``version`` (``(major, minor)``, or None for a legacy capsule), ``flags``
    (the versioned struct's flag bits, 0 for a legacy capsule: read-only, is-copied, and
    DLPack 1.1's sub-byte padded flag).
    """

    cdef void* _managed
    cdef bint _versioned
    cdef readonly object data, byte_offset, shape, strides, device, dtype, readonly, version
    cdef readonly object flags

    def __cinit__(self):
        self._managed = NULL

    def __dealloc__(self):
        self._release()

    cdef void _release(self) noexcept:
        cdef DLManagedTensor* legacy
        cdef DLManagedTensorVersioned* versioned
        cdef void* managed = self._managed
        self._managed = NULL
        if managed == NULL:
            return
        if self._versioned:
            versioned = <DLManagedTensorVersioned*>managed
            if versioned.deleter != NULL:
                versioned.deleter(versioned)
        else:
            legacy = <DLManagedTensor*>managed
            if legacy.deleter != NULL:
                legacy.deleter(legacy)

    def __repr__(self):
        kind = "legacy" if self.version is None else f"v{self.version[0]}.{self.version[1]}"
        return (f"<DLPackTensor {kind} shape={self.shape} strides={self.strides} "
                f"dtype={self.dtype} device={self.device} readonly={self.readonly}>")


cdef DLTensor* _take(object capsule, DLPackTensor handle) except NULL:
    """Consume ``capsule`` into ``handle``: rename it as used, so the deleter is ours to call."""
    cdef DLManagedTensorVersioned* versioned
    cdef DLManagedTensor* legacy
    if PyCapsule_IsValid(capsule, _VERSIONED):
        versioned = <DLManagedTensorVersioned*>PyCapsule_GetPointer(capsule, _VERSIONED)
        if versioned.version.major != DLPACK_MAJOR:
            # Not consumed: the producer's capsule destructor still frees it.
            raise ValueError(
                f"DLPack capsule has version {versioned.version.major}."
                f"{versioned.version.minor}; strided reads major version {DLPACK_MAJOR}"
            )
        PyCapsule_SetName(capsule, _VERSIONED_USED)
        handle._managed = versioned
        handle._versioned = True
        handle.version = (versioned.version.major, versioned.version.minor)
        handle.readonly = bool(versioned.flags & DLPACK_FLAG_READ_ONLY)
        handle.flags = versioned.flags
        return &versioned.dl_tensor
    if PyCapsule_IsValid(capsule, _LEGACY):
        legacy = <DLManagedTensor*>PyCapsule_GetPointer(capsule, _LEGACY)
        PyCapsule_SetName(capsule, _LEGACY_USED)
        handle._managed = legacy
        handle._versioned = False
        handle.version = None
        handle.readonly = False
        handle.flags = 0
        return &legacy.dl_tensor
    if PyCapsule_IsValid(capsule, _VERSIONED_USED) or PyCapsule_IsValid(capsule, _LEGACY_USED):
        raise ValueError("this DLPack capsule has already been consumed: a capsule is read once")
    if PyCapsule_CheckExact(capsule):
        name = PyCapsule_GetName(capsule)
        raise TypeError(
            f"expected a DLPack capsule named 'dltensor' or 'dltensor_versioned', "
            f"got a capsule named {None if name == NULL else name.decode('ascii', 'replace')!r}"
        )
    raise TypeError(f"expected a DLPack capsule, got {type(capsule).__name__}")


def consume_dlpack(capsule):
    """Consume a DLPack capsule (versioned or legacy) and return a :class:`DLPackTensor`.

    The capsule is renamed ``used_dltensor[_versioned]`` as the protocol requires; the returned
    object owns the memory from then on. Every field is validated before it is trusted: a
    negative or too large ``ndim``, a NULL ``shape``, a negative size, a NULL ``data`` for a
    non-empty tensor or a zero-width dtype is ValueError (the memory is still released).
    """
    cdef DLPackTensor handle = DLPackTensor.__new__(DLPackTensor)
    cdef DLTensor* t = _take(capsule, handle)
    cdef int i, nd = t.ndim
    cdef int64_t n = 1
    if nd < 0 or nd > MAX_NDIM:
        raise ValueError(f"DLPack tensor has ndim {nd}: it must be between 0 and {MAX_NDIM}")
    if nd > 0 and t.shape == NULL:
        raise ValueError(f"DLPack tensor of ndim {nd} has a NULL shape pointer")
    for i in range(nd):
        if t.shape[i] < 0:
            raise ValueError(f"DLPack tensor has shape[{i}] = {t.shape[i]}: sizes must be >= 0")
    if c_size(nd, t.shape, &n):
        raise OverflowError(f"DLPack tensor shape {tuple_of(nd, t.shape)} has more than 2**63 "
                            f"elements")
    if t.dtype.bits == 0 or t.dtype.lanes == 0:
        raise ValueError(f"DLPack tensor has a zero-width dtype (code {t.dtype.code}, "
                         f"bits {t.dtype.bits}, lanes {t.dtype.lanes})")
    if t.data == NULL and n > 0:
        raise ValueError(f"DLPack tensor of {n} elements has a NULL data pointer")
    handle.data = <size_t>t.data
    handle.byte_offset = t.byte_offset
    handle.shape = tuple_of(nd, t.shape)
    handle.strides = None if t.strides == NULL else tuple_of(nd, t.strides)
    handle.device = (t.device.device_type, t.device.device_id)
    handle.dtype = (t.dtype.code, t.dtype.bits, t.dtype.lanes)
    return handle


cdef extern from "Python.h":
    int Py_IsInitialized() nogil   # safe to call without the GIL (it reads a flag)


cdef void _decref_context(void* context) noexcept nogil:
    """Release the Python object a produced capsule keeps alive (from any thread).

    Consumers may call the deleter, or drop a capsule they refused, with their exception
    already set: the error state is put aside while the owner is released, so it survives.
    """
    cdef PyObject *kind
    cdef PyObject *value
    cdef PyObject *trace
    if context != NULL and Py_IsInitialized():
        with gil:
            PyErr_Fetch(&kind, &value, &trace)
            Py_XDECREF(<PyObject*>context)
            PyErr_Restore(kind, value, trace)


cdef void _delete_legacy(DLManagedTensor* self) noexcept nogil:
    _decref_context(self.manager_ctx)
    free(self)


cdef void _delete_versioned(DLManagedTensorVersioned* self) noexcept nogil:
    _decref_context(self.manager_ctx)
    free(self)


cdef void _legacy_capsule_destructor(object capsule) noexcept:
    """Free a produced capsule that no consumer took (its name is still 'dltensor')."""
    cdef DLManagedTensor* managed
    if PyCapsule_IsValid(capsule, _LEGACY):
        managed = <DLManagedTensor*>PyCapsule_GetPointer(capsule, _LEGACY)
        managed.deleter(managed)


cdef void _versioned_capsule_destructor(object capsule) noexcept:
    cdef DLManagedTensorVersioned* managed
    if PyCapsule_IsValid(capsule, _VERSIONED):
        managed = <DLManagedTensorVersioned*>PyCapsule_GetPointer(capsule, _VERSIONED)
        managed.deleter(managed)


cdef int _fill_tensor(DLTensor* t, int nd, int64_t* dims, object data, object byte_offset,
                      const int64_t* sz, const int64_t* st, object device,
                      object dtype) except -1:
    """Fill a DLTensor; ``dims`` has room for 2 * nd int64 (shape then strides)."""
    cdef int i
    t.data = PyLong_AsVoidPtr(data)
    t.byte_offset = byte_offset
    t.ndim = nd
    t.shape = dims
    t.strides = dims + nd
    for i in range(nd):
        t.shape[i] = sz[i]
        t.strides[i] = st[i]
    t.device.device_type, t.device.device_id = device
    t.dtype.code, t.dtype.bits, t.dtype.lanes = dtype
    return 0


def make_dlpack_capsule(owner, data, byte_offset, sizes, strides, device, dtype, *,
                        readonly=False, version=None):
    """A new DLPack capsule over existing memory; its deleter releases ``owner``.

    ``data`` is the address (an int) and ``byte_offset`` the bytes from it to element
    ``(0, ..., 0)``; ``sizes`` / ``strides`` are in elements. ``version=None`` makes a legacy
    ``dltensor`` capsule, which cannot say read-only (``readonly=True`` is then ValueError);
    ``(1, minor)`` makes a versioned one. ``owner`` stays alive until the consumer calls the
    deleter, or until the capsule is collected unconsumed.
    """
    cdef int64_t sz[MAX_NDIM]
    cdef int64_t st[MAX_NDIM]
    cdef int nd = load_pair(sizes, strides, sz, st)
    cdef size_t header
    cdef void* block
    cdef DLManagedTensor* legacy
    cdef DLManagedTensorVersioned* versioned
    if version is None and readonly:
        raise ValueError("a legacy DLPack capsule cannot mark memory read-only")
    if byte_offset < 0:
        raise ValueError(f"byte_offset must be >= 0, got {byte_offset}")
    header = sizeof(DLManagedTensor) if version is None else sizeof(DLManagedTensorVersioned)
    header = (header + 7) & ~(<size_t>7)     # the int64 arrays that follow stay aligned
    block = malloc(header + 2 * <size_t>max(nd, 1) * sizeof(int64_t))
    if block == NULL:
        raise MemoryError("cannot allocate a DLPack tensor")
    try:
        if version is None:
            legacy = <DLManagedTensor*>block
            _fill_tensor(&legacy.dl_tensor, nd, <int64_t*>(<char*>block + header), data,
                         byte_offset, sz, st, device, dtype)
            legacy.deleter = _delete_legacy
            legacy.manager_ctx = NULL
        else:
            versioned = <DLManagedTensorVersioned*>block
            _fill_tensor(&versioned.dl_tensor, nd, <int64_t*>(<char*>block + header), data,
                         byte_offset, sz, st, device, dtype)
            versioned.version.major, versioned.version.minor = version
            versioned.flags = DLPACK_FLAG_READ_ONLY if readonly else 0
            versioned.deleter = _delete_versioned
            versioned.manager_ctx = NULL
        if version is None:
            capsule = PyCapsule_New(block, _LEGACY, _legacy_capsule_destructor)
        else:
            capsule = PyCapsule_New(block, _VERSIONED, _versioned_capsule_destructor)
    except BaseException:
        free(block)
        raise
    # Only now does the capsule own the block: keep owner alive until the deleter runs.
    Py_INCREF(owner)
    if version is None:
        legacy.manager_ctx = <PyObject*>owner
    else:
        versioned.manager_ctx = <PyObject*>owner
    return capsule
