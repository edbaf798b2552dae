"""The torch fast path of strided's adapters: tensors read through DLPack's C exchange API.

torch publishes DLPack 1.3's C exchange API on ``torch.Tensor`` (the capsule
``__dlpack_c_exchange_api__``): one C call fills a ``DLTensor`` (pointer, device, dtype, sizes,
element strides) without creating a capsule or any Python object. Reading a tensor through its
Python attributes (``shape``, ``stride()``, ``untyped_storage()``, ...) costs microseconds; this
costs tens of nanoseconds, so a copy between two small tensors costs what torch's own
``copy_`` does.

Only the common case is taken here: two plain ``torch.Tensor`` objects (no subclass, which may
define its own semantics) on the CPU, of one dtype and shape, a destination that does not
require grad, neither showing lazily negated or conjugated values. Everything else, and any
tensor the exchange call refuses (sparse, nested, quantized, meta), returns "not done" and goes
to the checked path (``strided.interop._torch``), which decides it and explains a refusal.

torch is never imported: its type is taken from ``sys.modules`` once torch is loaded (no
tensor exists before). The element strides and the copy are ``_core``'s and ``_copy``'s.
"""
cimport cython
from cpython.exc cimport PyErr_Clear
from cpython.pycapsule cimport PyCapsule_GetPointer, PyCapsule_IsValid
from libc.stdint cimport int64_t

from strided._core cimport STATUS_OK, MAX_NDIM, c_packed_strides, c_size, c_span, normalized
from strided._copy cimport copy_elements
from strided.interop._capsule cimport DLPackExchangeAPI, DLTensor
from strided.interop._slots cimport LayoutSlots, layout_slots, slot

import sys

from strided.layout import Layout

cdef enum:
    _KDL_CPU = 1
    _KDL_COMPLEX = 5
    _EXCHANGE_MINOR = 3    # the first DLPack version with dltensor_from_py_object_no_sync

# What the fast path needs of torch, found once torch is loaded: (torch.Tensor,
# torch._C._increment_version, Tensor.is_neg, Tensor.is_conj, torch.as_strided), or False
# when torch offers no
# usable exchange API; None until then. Written once and read on every call, both under a
# critical section on _GUARD (nothing with the GIL; a per-object lock under free-threaded
# Python), so that no thread sees a half-made state.
cdef object _GUARD = object()
cdef object _state = None
cdef const DLPackExchangeAPI* _api = NULL
# Where a Layout keeps its fields (_slots.pxd); set once, here, at import.
cdef LayoutSlots _LAYOUT = layout_slots(Layout)


cdef object _find_torch():
    """torch's state for the fast path, or False (unusable), or None (torch not loaded yet:
    no tensor exists; ask again next time). Called under the critical section."""
    global _api
    cdef const DLPackExchangeAPI* api
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    try:
        tensor = torch.Tensor
        capsule = type.__getattribute__(tensor, "__dlpack_c_exchange_api__")
        increment_version = torch._C._increment_version
    except AttributeError:
        return False
    if not PyCapsule_IsValid(capsule, b"dlpack_exchange_api"):
        return False
    api = <const DLPackExchangeAPI*>PyCapsule_GetPointer(capsule, b"dlpack_exchange_api")
    if (api.header.version.major != 1 or api.header.version.minor < _EXCHANGE_MINOR
            or api.dltensor_from_py_object_no_sync == NULL):
        return False
    # The capsule lives as long as the type, which lives as long as torch: keep both.
    _api = api
    return (tensor, increment_version, tensor.is_neg, tensor.is_conj, torch.as_strided)


cdef object _torch_state(const DLPackExchangeAPI** api):
    """torch's state (see _state) and its exchange API, or None when the fast path is not
    usable (torch not loaded, or without the API)."""
    global _state
    cdef object state
    with cython.critical_section(_GUARD):
        if _state is None:
            _state = _find_torch()
        state = _state
        api[0] = _api
    return state if state is not False else None


cdef bint _read(const DLPackExchangeAPI* api, object t, DLTensor* out) except -1:
    """Fill ``out`` from a CPU tensor; False (no exception) when the exchange call refuses it
    or the tensor is not on the CPU or has too many dims. ``out`` points into the tensor: read
    it before calling into torch again."""
    if api.dltensor_from_py_object_no_sync(<void*>t, out) != 0:
        PyErr_Clear()       # the checked path raises torch's refusal in strided's words
        return False
    return out.device.device_type == _KDL_CPU and 0 <= out.ndim <= MAX_NDIM


cdef int64_t _itemsize(const DLTensor* t) noexcept:
    """Bytes per element, or 0 for a sub-byte dtype (left to the checked path)."""
    cdef int64_t bits = <int64_t>t.dtype.bits * t.dtype.lanes
    return bits // 8 if bits % 8 == 0 and bits > 0 else 0


cdef bint _take_layout(const DLTensor* t, int64_t* sizes, int64_t* strides) noexcept:
    """Copy the sizes and element strides of ``t`` (packed row-major when it gives none)."""
    cdef int i
    cdef int order[MAX_NDIM]
    for i in range(t.ndim):
        sizes[i] = t.shape[i]
        if sizes[i] < 0:
            return False
    if t.strides == NULL:
        for i in range(t.ndim):
            order[i] = i
        return c_packed_strides(t.ndim, sizes, order, NULL, strides) == 0
    for i in range(t.ndim):
        strides[i] = t.strides[i]
    return True


cdef bint _lazy(tuple state, object t, bint complex_dtype) except -1:
    """Whether t shows its memory negated or conjugated (torch's lazy bits). Only complex
    tensors carry a conjugate bit: asking the others costs a call into torch for nothing."""
    return state[2](t) or (complex_dtype and state[3](t))


def copyto_tensors(dst, src, int nthreads):
    """Copy ``src`` into ``dst`` when both are plain CPU tensors torch lets strided read.

    The torch fast path of :func:`strided.copyto` (``nthreads``: the engine's thread argument,
    0 for the default). Returns True when it did the whole copy (and bumped dst's version
    counter, as torch's in-place ops do), and False, having written nothing, whenever the
    checked path must decide.
    """
    return copy_tensors(dst, src, nthreads)


cdef bint copy_tensors(object dst, object src, int nthreads) except -1:
    cdef DLTensor d, s
    cdef int i, nd
    cdef int64_t itemsize, count
    cdef int64_t sizes[MAX_NDIM]
    cdef int64_t src_sizes[MAX_NDIM]
    cdef int64_t dst_strides[MAX_NDIM]
    cdef int64_t src_strides[MAX_NDIM]
    cdef char* dst_data
    cdef const char* src_data
    cdef const DLPackExchangeAPI* api
    state = _torch_state(&api)
    if state is None or type(dst) is not state[0] or type(src) is not state[0]:
        return False
    # torch's rules first (Python calls into torch), then the exchange reads, used at once.
    # The first read only gives the dtype: an exchange read costs less than an is_conj call,
    # so reading dst twice is the cheaper way to skip is_conj on real tensors (measured).
    if dst.requires_grad or not _read(api, dst, &d):
        return False
    if (_lazy(state, dst, d.dtype.code == _KDL_COMPLEX)
            or _lazy(state, src, d.dtype.code == _KDL_COMPLEX)):
        return False
    if not (_read(api, dst, &d) and _read(api, src, &s)):
        return False
    nd = d.ndim
    itemsize = _itemsize(&d)
    if (nd != s.ndim or itemsize == 0 or d.dtype.code != s.dtype.code
            or d.dtype.bits != s.dtype.bits or d.dtype.lanes != s.dtype.lanes):
        return False
    if not (_take_layout(&d, sizes, dst_strides) and _take_layout(&s, src_sizes, src_strides)):
        return False
    for i in range(nd):
        if sizes[i] != src_sizes[i]:
            return False        # no broadcasting; the checked path names the two shapes
    if c_size(nd, sizes, &count):
        return False
    if count == 0:
        return True             # nothing to write (the checked path does not bump either)
    dst_data = <char*>d.data + d.byte_offset
    src_data = <const char*>s.data + s.byte_offset
    if copy_elements(dst_data, src_data, nd, sizes, dst_strides, src_strides, itemsize, count,
                     nthreads):
        return False
    state[1]((dst,))
    return True


def layout_of_tensor(t):
    """The :class:`~strided.Layout` of a plain CPU tensor, or None for the checked path."""
    cdef DLTensor d
    cdef int64_t itemsize
    cdef int64_t sizes[MAX_NDIM]
    cdef int64_t strides[MAX_NDIM]
    cdef const DLPackExchangeAPI* api
    state = _torch_state(&api)
    if state is None or type(t) is not state[0] or not _read(api, t, &d):
        return None
    itemsize = _itemsize(&d)
    if itemsize == 0 or not _take_layout(&d, sizes, strides):
        return None
    return Layout._from_normalized(normalized(d.ndim, sizes, strides, 0, itemsize))


def view_tensor(base, layout):
    """The torch fast path of :func:`strided.view` (``copy`` None or False):
    ``torch.as_strided`` of a plain CPU tensor as a :class:`~strided.Layout` of its itemsize,
    without negative strides, whose elements all lie in base's own span; None for the checked
    path (``strided.interop._torch.view``), which decides everything else (the rest of base's
    storage, negative strides, subclasses, views inside an autograd graph, other devices) and
    explains every refusal.

    Base's sizes and strides come through the exchange API; the only calls into torch are
    ``requires_grad`` (``_base`` too when it is set), ``storage_offset()`` (when the layout
    has an offset) and the ``as_strided`` that makes the view, the checked path's own call.
    """
    return tensor_view(base, layout)


cdef object tensor_view(object base, object layout):
    cdef DLTensor d
    cdef int64_t itemsize, lo, hi, offset
    cdef int64_t sizes[MAX_NDIM]
    cdef int64_t strides[MAX_NDIM]
    cdef const DLPackExchangeAPI* api
    cdef tuple lstrides
    cdef Py_ssize_t i
    if type(layout) is not Layout:
        return None
    state = _torch_state(&api)
    if state is None or type(base) is not state[0] or not _read(api, base, &d):
        return None
    itemsize = _itemsize(&d)
    # Layout's fields as C integers: a comparison of a Python int with a C one would box the
    # C one, an allocation each
    if (itemsize == 0 or <int64_t>slot(layout, _LAYOUT.bits, "_bits") != 8 * itemsize
            or <int64_t>slot(layout, _LAYOUT.itemsize, "_itemsize") != itemsize
            or <int64_t>slot(layout, _LAYOUT.size, "_size") == 0
            or not _take_layout(&d, sizes, strides)):
        return None
    # base's span, from its first element (empty: hi < lo): the memory a view may use
    if (c_span(d.ndim, sizes, strides, 0, &lo, &hi) != STATUS_OK
            or <int64_t>slot(layout, _LAYOUT.lo, "_lo") < lo
            or <int64_t>slot(layout, _LAYOUT.hi, "_hi") > hi):
        return None
    lstrides = slot(layout, _LAYOUT.strides, "_strides")
    for i in range(len(lstrides)):
        if <int64_t>lstrides[i] < 0:    # torch has none: the checked path flips or refuses
            return None
    if base.requires_grad and base._base is not None:   # its root's graph: the checked path
        return None
    offset = slot(layout, _LAYOUT.offset, "_offset")
    if offset == 0:
        # base's own storage offset, which as_strided keeps when given none: no call for it,
        # and no optional argument for torch's parser (1.30 us a call against 1.65 us)
        return state[4](base, slot(layout, _LAYOUT.sizes, "_sizes"), lstrides)
    return state[4](base, slot(layout, _LAYOUT.sizes, "_sizes"), lstrides,
                    base.storage_offset() + offset)


def current_address(t, sizes, strides):
    """The address of a CPU tensor's first element, read through DLPack's exchange API (C++:
    no Python code runs, neither a subclass's ``__torch_function__`` nor a torch function
    mode), when its sizes and element strides are still ``sizes`` and ``strides``; -1 when they
    are not; None when the exchange API cannot read it (torch too old, not on the CPU): the
    caller then asks torch's methods.

    The copy functions read a tensor's address again with this right before the kernel (see
    ``strided.interop._ndarray.current_address``): ``resize_`` or ``set_`` may have moved it.
    """
    cdef DLTensor d
    cdef int i
    cdef int64_t sz[MAX_NDIM]
    cdef int64_t st[MAX_NDIM]
    cdef const DLPackExchangeAPI* api
    state = _torch_state(&api)
    if state is None or not isinstance(t, state[0]) or not _read(api, t, &d):
        return None
    if type(sizes) is not tuple or type(strides) is not tuple or not _take_layout(&d, sz, st):
        return None
    if d.ndim != len(sizes) or d.ndim != len(strides):
        return -1
    for i in range(d.ndim):
        if sz[i] != sizes[i] or (sz[i] > 1 and st[i] != strides[i]):
            return -1
    return <size_t>(<char*>d.data + d.byte_offset)
