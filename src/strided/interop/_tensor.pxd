# The torch fast path, for the compiled entry of copyto (_ndarray.copyto_arrays): copy between
# two plain CPU tensors; 1 when done, 0 (nothing written) when the checked path must decide.
cdef bint copy_tensors(object dst, object src, int nthreads) except -1
# The torch fast path of view (see view_tensor): the view, or None for the checked path.
cdef object tensor_view(object base, object layout)
