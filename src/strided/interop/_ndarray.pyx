"""The numpy fast path of :func:`strided.copyto`: two ndarrays, read from numpy's C struct.

A buffer-protocol export of a numpy array builds a format string and allocates on every call
(about 80 ns each, measured with ``perf``), which is most of the cost of a 16-element copy. Plain
ndarrays of one numeric dtype are read here straight from the array struct through numpy's C
API, and handed to the core's copy engine. Everything else goes on to the buffer path.

This module only translates: the element strides are ``_core``'s, the copy ``_copy``'s.
"""
from cpython.buffer cimport PyBUF_RECORDS_RO, PyBuffer_Release, PyObject_GetBuffer
from libc.stdint cimport int64_t

from strided._core cimport MAX_NDIM, c_element_strides, normalized
from strided._copy cimport copy_elements, copy_threads
from strided.interop._tensor cimport copy_tensors

from strided._copy import copyto_buffers
from strided.interop._tensor import layout_of_tensor
from strided.layout import Layout

cdef extern from *:
    """
    #define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
    /* the oldest numpy that strided supports at run time (pyproject.toml) */
    #define NPY_TARGET_VERSION NPY_2_2_API_VERSION
    #include <numpy/arrayobject.h>

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
    int st_ndim(object a)
    char* st_data(object a)
    npy_intp* st_dims(object a)
    npy_intp* st_strides(object a)
    npy_intp st_itemsize(object a)

st_numpy_import()


def copyto_arrays(dst, src, num_threads=None):
    """Copy ``src`` into ``dst`` when both are plain numpy arrays, plain CPU torch tensors
    (``_tensor``) or buffer-protocol objects.

    The fast path of :func:`strided.copyto`. Returns True when it did the whole copy, and
    False, having written nothing, whenever it cannot decide alone (see
    ``_copy.copyto_buffers``): the caller then takes the slow path, which explains the refusal.
    Only a bad ``num_threads`` raises here.

    The arrays stay referenced by the caller during the copy, so numpy refuses to resize them
    (``ndarray.resize`` checks references) while the core runs without the GIL.
    """
    cdef int nthreads = copy_threads(num_threads)
    cdef int i, nd
    cdef int64_t count = 1, itemsize
    cdef int64_t sizes[MAX_NDIM]
    cdef int64_t dst_strides[MAX_NDIM]
    cdef int64_t src_strides[MAX_NDIM]
    cdef npy_intp* dims
    cdef npy_intp* src_dims
    cdef npy_intp* dstr
    cdef npy_intp* sstr
    if not st_plain_pair(dst, src) or st_ndim(dst) > MAX_NDIM:
        if copy_tensors(dst, src, nthreads):
            return True
        return copyto_buffers(dst, src, nthreads)
    nd = st_ndim(dst)
    itemsize = st_itemsize(dst)
    dims = st_dims(dst)
    src_dims = st_dims(src)
    dstr = st_strides(dst)
    sstr = st_strides(src)
    for i in range(nd):
        if dims[i] != src_dims[i]:
            return False    # no broadcasting; the slow path names the two shapes
        # numpy keeps an array's element count inside npy_intp: no overflow here
        sizes[i] = dims[i]
        count *= dims[i]
        dst_strides[i] = dstr[i]
        src_strides[i] = sstr[i]
    if (c_element_strides(nd, sizes, dst_strides, itemsize, count)
            or c_element_strides(nd, sizes, src_strides, itemsize, count)):
        return False
    return copy_elements(st_data(dst), st_data(src), nd, sizes, dst_strides, src_strides,
                         itemsize, count, nthreads) == 0


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
    cdef int i, nd
    cdef int64_t count = 1, itemsize
    cdef int64_t sizes[MAX_NDIM]
    cdef int64_t strides[MAX_NDIM]
    cdef npy_intp* dims
    cdef npy_intp* byte_strides
    if not st_exact_array(x):
        return layout_of_tensor(x)
    nd = st_ndim(x)
    itemsize = st_itemsize(x)
    if nd > MAX_NDIM or itemsize < 1:
        return None
    dims = st_dims(x)
    byte_strides = st_strides(x)
    for i in range(nd):
        sizes[i] = dims[i]
        count *= dims[i]
        strides[i] = byte_strides[i]
    if c_element_strides(nd, sizes, strides, itemsize, count):
        return None
    return Layout._from_normalized(normalized(nd, sizes, strides, 0, itemsize))
