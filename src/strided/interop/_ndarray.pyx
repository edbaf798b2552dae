"""The numpy fast path of :func:`strided.copyto`: two ndarrays, read from numpy's C struct.

A buffer-protocol export of a numpy array builds a format string and allocates on every call
(about 80 ns each, measured with ``perf``), which is most of the cost of a 16-element copy. Plain
ndarrays of one numeric dtype are read here straight from the array struct through numpy's C
API, and handed to the core's copy engine. Everything else goes on to the buffer path,
:func:`copyto_buffers` (any two buffer-protocol objects: memoryviews, bytearrays, arrays of
other libraries), also here: the engine itself takes addresses, never Python objects.

This module only translates: the element strides are ``_core``'s, the copy ``_copy``'s.
"""
from cpython.buffer cimport PyBUF_RECORDS_RO, PyBuffer_Release, PyObject_GetBuffer
from libc.stdint cimport int64_t
from libc.string cimport strchr, strcmp

from strided._core cimport (
    FLAG_PACKED, MAX_NDIM, STATUS_OK, byte_span_leaves_int64, c_element_strides, c_flags,
    c_overlaps, c_packed_strides, c_span,
    default_max_work, normalized,
)
from strided._convert cimport Params, convert_elements, free_params, load_params
from strided._copy cimport copy_elements, copy_threads
from strided.interop._slots cimport LayoutSlots, layout_slots, slot
from strided.interop._tensor cimport copy_tensors, tensor_view

# Private aliases: the module's public names are those of its stub (_ndarray.pyi).
from strided._dtypes import CASTINGS as _CASTINGS, TYPE_NAMES as _TYPE_NAMES
from strided._dtypes import can_cast, check_pair

import sys
from strided.interop._record import aliases
from strided.interop._tensor import layout_of_tensor
from strided.layout import Layout

cdef extern from *:
    """
    #define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
    /* the oldest numpy that strided supports at run time (pyproject.toml) */
    #define NPY_TARGET_VERSION NPY_2_2_API_VERSION
    #include <numpy/arrayobject.h>

    #include "_kernels/types.h"   /* the engine's type codes (strided._dtypes.TYPE_NAMES) */

    static int st_numpy_import(void) { return PyArray_ImportNumPyAPI(); }

    /* 1 when d and s are plain ndarrays (no subclass, which may define its own assignment)
     * of one and the same dtype object, of bool or number type (elements are plain bytes: no
     * references, nothing the buffer path would describe differently), of one rank, and d is
     * writeable (the shapes are compared where they are read). Other pairs take the buffer
     * path, which decides them as before. */
    static int st_plain_pair(PyObject *d, PyObject *s)
    {
        PyArrayObject *a, *b;
        PyArray_Descr *t;
        if (!PyArray_CheckExact(d) || !PyArray_CheckExact(s)) return 0;
        a = (PyArrayObject *)d;
        b = (PyArrayObject *)s;
        t = PyArray_DESCR(a);
        if (t != PyArray_DESCR(b) || !PyTypeNum_ISNUMBER(t->type_num)) return 0;
        return PyArray_ISWRITEABLE(a) && PyArray_NDIM(a) == PyArray_NDIM(b);
    }
    static int st_exact_array(PyObject *a) { return PyArray_CheckExact(a); }
    /* 1 when b is a plain ndarray of a's dtype object, rank, shape and byte strides */
    static int st_alike(PyObject *a, PyObject *b)
    {
        PyArrayObject *x = (PyArrayObject *)a, *y = (PyArrayObject *)b;
        int i, nd = PyArray_NDIM(x);
        if (!PyArray_CheckExact(b) || PyArray_DESCR(y) != PyArray_DESCR(x)
                || PyArray_NDIM(y) != nd) return 0;
        for (i = 0; i < nd; i++)
            if (PyArray_DIMS(y)[i] != PyArray_DIMS(x)[i]
                    || PyArray_STRIDES(y)[i] != PyArray_STRIDES(x)[i]) return 0;
        return 1;
    }
    static int st_any_array(PyObject *a) { return PyArray_Check(a); }

    /* The conversion engine's type code (strided._dtypes.TYPE_NAMES) of a plain ndarray's
     * dtype, or -1: byte-swapped, not a number, or a type the engine has no code for. */
    static int st_type_code(PyObject *a)
    {
        PyArray_Descr *d = PyArray_DESCR((PyArrayObject *)a);
        int n = d->type_num, size = (int)PyDataType_ELSIZE(d);
        if (!PyArray_ISNBO(d->byteorder)) return -1;
        switch (n) {
            case NPY_BOOL: return ST_BOOL;
            case NPY_HALF: return ST_F16;
            case NPY_FLOAT: return ST_F32;
            case NPY_DOUBLE: return ST_F64;
            case NPY_CFLOAT: return ST_C64;
            case NPY_CDOUBLE: return ST_C128;
        }
        /* ml_dtypes' bfloat16 (a user type: its number is given at registration), told as
         * strided.interop._numpy's _dlpack_dtype tells it, by its type's full name */
        if (n >= NPY_USERDEF && size == 2 && d->kind == 'V'
                && strcmp(d->typeobj->tp_name, "ml_dtypes.bfloat16") == 0)
            return ST_BF16;
        if (PyTypeNum_ISSIGNED(n))
            return size == 1 ? ST_I8 : size == 2 ? ST_I16 : size == 4 ? ST_I32
                 : size == 8 ? ST_I64 : -1;
        if (PyTypeNum_ISUNSIGNED(n))
            return size == 1 ? ST_U8 : size == 2 ? ST_U16 : size == 4 ? ST_U32
                 : size == 8 ? ST_U64 : -1;
        return -1;
    }
    /* A new ndarray over plain ndarray base's memory: base's dtype, nd dims of dims and byte
     * strides, element 0 at data, writeable when asked, base kept alive as its .base. NULL
     * with an exception set when numpy fails. */
    static PyObject *st_view_of(PyObject *base, int nd, npy_intp *dims, npy_intp *strides,
                                char *data, int writeable)
    {
        PyArray_Descr *descr = PyArray_DESCR((PyArrayObject *)base);
        PyObject *v;
        Py_INCREF(descr);                       /* PyArray_NewFromDescr steals it */
        v = PyArray_NewFromDescr(&PyArray_Type, descr, nd, dims, strides, data,
                                 writeable ? NPY_ARRAY_WRITEABLE : 0, NULL);
        if (v == NULL) return NULL;
        Py_INCREF(base);                        /* PyArray_SetBaseObject steals it */
        if (PyArray_SetBaseObject((PyArrayObject *)v, base) < 0) {
            Py_DECREF(v);
            return NULL;
        }
        return v;
    }
    static int st_writeable(PyObject *a) { return PyArray_ISWRITEABLE((PyArrayObject *)a); }
    static int st_ndim(PyObject *a) { return PyArray_NDIM((PyArrayObject *)a); }
    static char *st_data(PyObject *a) { return PyArray_BYTES((PyArrayObject *)a); }
    static npy_intp *st_dims(PyObject *a) { return PyArray_DIMS((PyArrayObject *)a); }
    static npy_intp *st_strides(PyObject *a) { return PyArray_STRIDES((PyArrayObject *)a); }
    static npy_intp st_itemsize(PyObject *a) { return PyArray_ITEMSIZE((PyArrayObject *)a); }
    """
    ctypedef Py_ssize_t npy_intp
    int st_numpy_import() except -1
    bint st_plain_pair(object d, object s)
    bint st_exact_array(object a)
    bint st_alike(object a, object b)
    bint st_any_array(object a)
    int st_type_code(object a)
    object st_view_of(object base, int nd, npy_intp* dims, npy_intp* strides, char* data,
                      bint writeable)
    bint st_writeable(object a)
    int st_ndim(object a)
    char* st_data(object a)
    npy_intp* st_dims(object a)
    npy_intp* st_strides(object a)
    npy_intp st_itemsize(object a)

st_numpy_import()

# copyto's default casting: the one interned str (identifier-like literals are interned), so
# `is` tells it; an equal str that is another object just takes the slow path
cdef object _SAME_KIND = sys.intern("same_kind")


cdef inline bint _elements(x, int nd, int64_t* sizes, int64_t* strides,
                           int64_t* count) noexcept:
    """Read the ``nd`` dims (at most MAX_NDIM) of ndarray ``x`` from numpy's array struct:
    its shape into ``sizes``, its byte strides as element strides into ``strides``, its
    element count into ``count``. False when a byte stride is not a whole number of items or
    the itemsize is 0 (the checked path explains). Runs no Python code."""
    cdef int i
    cdef int64_t itemsize = st_itemsize(x)
    cdef npy_intp* dims = st_dims(x)
    cdef npy_intp* byte_strides = st_strides(x)
    count[0] = 1
    for i in range(nd):
        # numpy keeps an array's element count inside npy_intp: no overflow here
        sizes[i] = dims[i]
        count[0] *= dims[i]
        strides[i] = byte_strides[i]
    return itemsize >= 1 and not c_element_strides(nd, sizes, strides, itemsize, count[0])


cdef inline bint _same_sizes(int nd, const int64_t* a, const int64_t* b) noexcept:
    cdef int i
    for i in range(nd):
        if a[i] != b[i]:
            return False
    return True


def copyto_arrays(dst, src, num_threads=None, casting="same_kind", scale=None, shift=None,
                  axis=None):
    """Copy ``src`` into ``dst`` when both are plain numpy arrays, plain CPU torch tensors
    (``_tensor``) or buffer-protocol objects, and the other arguments are those of a plain
    copy: :func:`strided.copyto`'s defaults, or an int ``num_threads``.

    The fast path of :func:`strided.copyto`. Returns True when it did the whole copy, and
    False, having written nothing, whenever it cannot decide alone (see
    :func:`copyto_buffers`): the caller then takes the slow path, which explains the refusal.
    Only a bad ``num_threads`` raises here. No argument it takes runs the caller's code (any
    other than these plain ones is declined before it is read).

    The arrays stay referenced by the caller during the copy, so numpy refuses to resize them
    (``ndarray.resize`` checks references) while the core runs without the GIL.
    """
    cdef int nthreads
    cdef int nd
    cdef int64_t count, src_count
    cdef int64_t sizes[MAX_NDIM]
    cdef int64_t src_sizes[MAX_NDIM]
    cdef int64_t dst_strides[MAX_NDIM]
    cdef int64_t src_strides[MAX_NDIM]
    if not (casting is _SAME_KIND and scale is None and shift is None and axis is None
            and (num_threads is None or type(num_threads) is int)):
        return False
    nthreads = copy_threads(num_threads)
    if not st_plain_pair(dst, src) or st_ndim(dst) > MAX_NDIM:
        if copy_tensors(dst, src, nthreads):
            return True
        return copyto_buffers(dst, src, num_threads)
    nd = st_ndim(dst)
    if not (_elements(dst, nd, sizes, dst_strides, &count)
            and _elements(src, nd, src_sizes, src_strides, &src_count)
            and _same_sizes(nd, sizes, src_sizes)):
        return False    # no broadcasting, or strides of part items: the slow path explains
    return copy_elements(st_data(dst), st_data(src), nd, sizes, dst_strides, src_strides,
                         st_itemsize(dst), count, nthreads) == 0


# (dst code, src code, casting, affine) of the conversions the one table (strided._dtypes)
# allows: the fast path asks on every call, its rules run once per key. Only allowed keys are
# kept (a refusal goes to the checked path, which explains it); each is written once, True.
cdef dict _ALLOWED = {}


cdef bint _allowed(int dst_code, int src_code, object casting, bint affine) except -1:
    """Whether casting allows the conversion and the engine converts the pair."""
    cdef tuple key
    if type(casting) is not str:
        return False
    key = (dst_code, src_code, casting, affine)
    if key in _ALLOWED:
        return True
    dst_type, src_type = _TYPE_NAMES[dst_code], _TYPE_NAMES[src_code]
    if casting not in _CASTINGS or not can_cast(src_type, dst_type, casting):
        return False
    try:
        check_pair(dst_type, src_type, affine)
    except TypeError:
        return False
    _ALLOWED[key] = True
    return True


def convert_arrays(dst, src, casting, scale, shift, axis, num_threads=None):
    """Convert ``src`` into ``dst`` when both are plain numpy arrays the conversion engine
    takes as they are: the fast path of a converting :func:`strided.copyto`.

    ``casting``, ``scale``, ``shift``, ``axis`` and ``num_threads`` are plain values already
    (a casting name, None / float / tuple of floats from ``strided._core.load_parameter``, an
    int or None): reading them here runs no Python code, so none runs between reading the
    arrays' addresses and the kernel.

    Returns True when it did the whole conversion, and False, having written nothing,
    whenever the checked path must decide (it then explains any refusal): not two plain
    ndarrays of numeric native dtypes, a read-only destination, other shapes, a cast
    ``casting`` refuses, vectors that are not one value per channel along ``axis``, a
    destination that might overlap itself.
    """
    cdef int nthreads = copy_threads(num_threads)
    cdef int i, nd, dst_code, src_code
    cdef int64_t count, src_count, length = 1, lo, hi
    cdef int64_t sizes[MAX_NDIM]
    cdef int64_t src_sizes[MAX_NDIM]
    cdef int64_t dst_strides[MAX_NDIM]
    cdef int64_t src_strides[MAX_NDIM]
    cdef int64_t par[MAX_NDIM]
    cdef Params params
    if not (st_exact_array(dst) and st_exact_array(src)) or not st_writeable(dst):
        return False
    if not (_loaded(scale) and _loaded(shift)):
        return False      # not read by load_parameter: the checked path reads it first
    nd = st_ndim(dst)
    dst_code = st_type_code(dst)
    src_code = st_type_code(src)
    if nd != st_ndim(src) or nd > MAX_NDIM or dst_code < 0 or src_code < 0:
        return False
    if not _allowed(dst_code, src_code, casting, scale is not None or shift is not None):
        return False
    if not (_elements(dst, nd, sizes, dst_strides, &count)
            and _elements(src, nd, src_sizes, src_strides, &src_count)
            and _same_sizes(nd, sizes, src_sizes)):
        return False
    for i in range(nd):
        par[i] = 0
    if (byte_span_leaves_int64(nd, sizes, dst_strides, st_itemsize(dst), &lo, &hi)
            or byte_span_leaves_int64(nd, sizes, src_strides, st_itemsize(src), &lo, &hi)):
        return False
    if (count and not c_flags(nd, sizes, dst_strides) & FLAG_PACKED
            and c_overlaps(nd, sizes, dst_strides, default_max_work()) != 0):
        return False      # overlapping or undecided: the checked path explains
    if type(scale) is tuple or type(shift) is tuple:
        if axis is None and nd == 1:
            axis = 0
        if type(axis) is not int or not -nd <= axis < nd:
            return False
        axis %= nd
        length = sizes[axis]
        if _length(scale, length) or _length(shift, length):
            return False
        par[axis] = 1
    elif axis is not None:
        return False      # the checked path validates a useless axis too
    load_params(&params, scale, shift, length, src_code)
    try:
        convert_elements(st_data(dst), st_data(src), nd, sizes, dst_strides, src_strides,
                         dst_code, src_code, &params, par, count, nthreads)
    finally:
        free_params(&params)
    return True


cdef inline bint _loaded(object value):
    """A parameter as ``strided._core.load_parameter`` gives it: None, a float or a tuple."""
    return value is None or type(value) is float or type(value) is tuple


cdef bint _length(object value, int64_t length):
    """Whether a vector argument has a length other than the channel axis's."""
    return type(value) is tuple and len(<tuple>value) != length


def buffer_address(obj):
    """``(address, readonly)`` of an object's buffer (PEP 3118), strided buffers included.

    The address is that of the first element. The buffer is released before returning: the
    caller keeps ``obj`` alive while it uses the address. Only the address is taken: exporters
    may report normalised strides for dims of size 1 or empty buffers (numpy does), so the
    layout is read from the object itself. Raises what the exporter raises (BufferError,
    ValueError, TypeError) when ``obj`` has no buffer or refuses a strided one.
    """
    cdef Py_buffer view
    PyObject_GetBuffer(obj, &view, PyBUF_RECORDS_RO)
    address, readonly = <size_t>view.buf, bool(view.readonly)
    PyBuffer_Release(&view)
    return address, readonly


def layout_of_array(x):
    """The :class:`~strided.Layout` of a plain ndarray or CPU tensor, or None for the checked
    path (:func:`strided.interop.describe`), which reads everything else and explains refusals.

    The fast path of :func:`strided.layout_of`: the sizes and byte strides come from numpy's
    array struct, as in :func:`copyto_arrays`.
    """
    cdef int nd
    cdef int64_t count
    cdef int64_t sizes[MAX_NDIM]
    cdef int64_t strides[MAX_NDIM]
    if not st_exact_array(x):
        return layout_of_tensor(x)
    nd = st_ndim(x)
    if nd > MAX_NDIM or not _elements(x, nd, sizes, strides, &count):
        return None
    return Layout._from_normalized(normalized(nd, sizes, strides, 0, st_itemsize(x)))


def view_array(base, layout):
    """The fast path of :func:`strided.view` (``copy`` None or False): the view of a plain
    ndarray of numbers as a :class:`~strided.Layout` of its itemsize whose elements all lie in
    base's own span, or None for the checked path, which reads everything else and explains
    every refusal.

    Reads base from numpy's array struct and makes the view with numpy's C API (base is the
    view's ``.base``): no Python code runs. The view is read-only when base is and when its
    elements alias each other, as the checked path's is.
    """
    return array_view(base, layout)


def view_fast(base, layout):
    """:func:`strided.view`'s fast paths in one call: :func:`view_array` for a plain ndarray,
    ``strided.interop._tensor.view_tensor`` for anything else (a plain CPU tensor); None for
    the checked path."""
    if st_exact_array(base):
        return array_view(base, layout)
    return tensor_view(base, layout)


# Where a Layout keeps its fields (_slots.pxd); set once, here, at import.
cdef LayoutSlots _LAYOUT = layout_slots(Layout)


cdef object array_view(object base, object layout):
    cdef int nd, lnd, i
    cdef int64_t count, itemsize, lo, hi, offset
    cdef int64_t sizes[MAX_NDIM]
    cdef int64_t strides[MAX_NDIM]
    cdef npy_intp dims[MAX_NDIM]
    cdef npy_intp byte_strides[MAX_NDIM]
    cdef tuple lsizes, lstrides
    if type(layout) is not Layout or not st_exact_array(base) or st_type_code(base) < 0:
        return None
    nd = st_ndim(base)
    if nd > MAX_NDIM or not _elements(base, nd, sizes, strides, &count) or count == 0:
        return None
    itemsize = st_itemsize(base)
    # Layout's fields as C integers: comparing a Python int with a C one boxes the C one
    if (<int64_t>slot(layout, _LAYOUT.bits, "_bits") != 8 * itemsize
            or <int64_t>slot(layout, _LAYOUT.itemsize, "_itemsize") != itemsize
            or <int64_t>slot(layout, _LAYOUT.size, "_size") == 0):
        return None
    # base's span, from its first element: the memory a view may use
    if (c_span(nd, sizes, strides, 0, &lo, &hi) != STATUS_OK
            or <int64_t>slot(layout, _LAYOUT.lo, "_lo") < lo
            or <int64_t>slot(layout, _LAYOUT.hi, "_hi") > hi):
        return None
    lsizes = slot(layout, _LAYOUT.sizes, "_sizes")
    lstrides = slot(layout, _LAYOUT.strides, "_strides")
    lnd = len(lsizes)
    if lnd > MAX_NDIM or len(lstrides) != lnd:
        return None
    for i in range(lnd):        # within base's span: every byte stride fits npy_intp
        dims[i] = lsizes[i]
        byte_strides[i] = lstrides[i] * itemsize
    offset = slot(layout, _LAYOUT.offset, "_offset")
    writeable = st_writeable(base) and not aliases(layout)
    # base's data pointer last: nothing that could run Python code comes after it
    return st_view_of(base, lnd, dims, byte_strides, st_data(base) + offset * itemsize,
                      writeable)


def current_address(x, sizes, strides):
    """The address of an ndarray's first element, read from numpy's array struct (no Python
    code runs, not even a subclass's), when its shape and element strides are still ``sizes``
    and ``strides`` (as :func:`strided._core.element_strides` gives them); -1 when they are
    not, or when ``x`` is not an ndarray.

    The copy functions read an array's address again with this right before the kernel: the
    caller's code that ran since the array was described (a DLPack producer, a subclass's
    attributes) may have resized it (``ndarray.resize(refcheck=False)`` frees the memory).
    """
    cdef int i, nd
    cdef int64_t count
    cdef int64_t dims[MAX_NDIM]
    cdef int64_t st[MAX_NDIM]
    if not st_any_array(x) or type(sizes) is not tuple or type(strides) is not tuple:
        return -1
    nd = st_ndim(x)
    if (nd != len(sizes) or nd != len(strides) or nd > MAX_NDIM
            or not _elements(x, nd, dims, st, &count)):
        return -1
    for i in range(nd):
        if dims[i] != sizes[i] or st[i] != strides[i]:
            return -1
    return <size_t>st_data(x)


def alike_addresses(arrays, like):
    """The address of the first element of every array of the tuple ``arrays``, read from
    numpy's array structs (no Python code runs, not even a subclass's), when each is a plain
    ndarray with the dtype object, shape and byte strides of the plain ndarray ``like``; None
    when one is not (the caller then describes each array on its own).

    A batch of images decoded alike (:func:`strided.stack`) is described once, through
    ``like``, and its other images are only located: 64 images cost one record, not 64.

    Examples
    --------
    >>> import numpy as np
    >>> a, b = np.zeros((2, 3)), np.ones((2, 3))
    >>> alike_addresses((a, b), a) == [a.ctypes.data, b.ctypes.data]
    True
    >>> alike_addresses((a, b.T.copy().T), a) is None      # other strides
    True
    """
    cdef Py_ssize_t k, n
    if type(arrays) is not tuple or not st_exact_array(like):
        return None
    n = len(arrays)
    addresses = [None] * n
    for k in range(n):
        x = (<tuple>arrays)[k]
        if not st_alike(like, x):
            return None
        addresses[k] = <size_t>st_data(x)
    return addresses


# ---- any two buffer-protocol objects -------------------------------------------------------

cdef const char* _FORMAT_B = b"B"   # PEP 3118: a NULL format means unsigned bytes


cdef int _buffer_layout(Py_buffer* view, int64_t count, int64_t* sizes,
                        int64_t* strides) noexcept:
    """Element sizes and strides of a buffer of `count` elements; 1 when a stride is not
    whole elements (then the slow path explains it)."""
    cdef int i
    cdef int order[MAX_NDIM]
    for i in range(view.ndim):
        sizes[i] = view.shape[i]
        order[i] = i
    if view.strides == NULL:
        c_packed_strides(view.ndim, sizes, order, NULL, strides)
        return 0
    for i in range(view.ndim):
        strides[i] = view.strides[i]
    return c_element_strides(view.ndim, sizes, strides, view.itemsize, count) != 0


def copyto_buffers(dst, src, num_threads=None):
    """Copy between two buffer-protocol objects (numpy arrays, memoryviews, bytearrays).

    The fast path of :func:`strided.copyto`. Returns True when it did the whole copy, and
    False, having written nothing, whenever it cannot decide alone: an object without a buffer,
    different formats, itemsizes or shapes, a read-only or self-overlapping destination, object
    references (format ``O``), strides in fractions of an item. The caller then takes the slow
    path, which explains the refusal. Only a bad ``num_threads`` raises here.
    """
    cdef Py_buffer dv, sv
    cdef bint have_d = False, have_s = False
    cdef int64_t sz[MAX_NDIM]
    cdef int64_t dstr[MAX_NDIM]
    cdef int64_t sstr[MAX_NDIM]
    cdef int64_t count = 1
    cdef const char* fd
    cdef const char* fs
    cdef int i, nd, nthreads = copy_threads(num_threads)
    try:
        try:
            PyObject_GetBuffer(dst, &dv, PyBUF_RECORDS_RO)
            have_d = True
            PyObject_GetBuffer(src, &sv, PyBUF_RECORDS_RO)
            have_s = True
        except Exception:
            return False
        nd = dv.ndim
        if dv.readonly or nd != sv.ndim or dv.itemsize != sv.itemsize or dv.itemsize < 1:
            return False
        fd = _FORMAT_B
        if dv.format != NULL:
            fd = dv.format
        fs = _FORMAT_B
        if sv.format != NULL:
            fs = sv.format
        # numpy writes unaligned arrays' formats with "=" (standard sizes, native order):
        # for the single-character codes it uses, that is the same element as "@"/nothing
        if fd[0] == c'=' or fd[0] == c'@':
            fd += 1
        if fs[0] == c'=' or fs[0] == c'@':
            fs += 1
        if strcmp(fd, fs) != 0 or strchr(fd, c'O') != NULL:
            return False
        for i in range(nd):
            if dv.shape[i] != sv.shape[i]:
                return False
            count *= dv.shape[i]
        if _buffer_layout(&dv, count, sz, dstr) or _buffer_layout(&sv, count, sz, sstr):
            return False
        return copy_elements(<char*>dv.buf, <const char*>sv.buf, nd, sz, dstr, sstr,
                             dv.itemsize, count, nthreads) == 0
    finally:
        if have_s:
            PyBuffer_Release(&sv)
        if have_d:
            PyBuffer_Release(&dv)
