# The C-level API of strided's core, for other Cython code:
#
#     from strided._core cimport c_span, c_overlaps, MAX_NDIM
#
# Every routine works on C arrays of int64 element counts (sizes, strides, offsets in *elements*).
# Routines that cannot fail are `noexcept nogil`. Routines returning `int` status return 0 on
# success and a positive STATUS_* code on failure; they never raise, so the caller (holding the
# GIL again) turns the code into an exception with the context it knows. c_overlaps and c_shares
# are the routines that may raise (KeyboardInterrupt during a long exact search): `except -1
# nogil`; they answer 0 (no), 1 (yes) or OVERLAP_UNDECIDED (the work budget ran out first).
from libc.stdint cimport int64_t

cdef enum:
    MAX_NDIM = 64

cdef enum:
    STATUS_OK = 0
    STATUS_OVERFLOW = 1
    STATUS_NO_VIEW = 2

cdef enum:
    FLAG_PACKED = 1
    FLAG_CONTIGUOUS = 2
    FLAG_BROADCAST = 8
    FLAG_PADDED = 16
    FLAG_EMPTY = 32

cdef enum:
    OVERLAP_UNDECIDED = 2

# Checked int64 arithmetic: return 1 (and leave *out unspecified) when the result leaves int64.
cdef int checked_add(int64_t a, int64_t b, int64_t* out) noexcept nogil
cdef int checked_mul(int64_t a, int64_t b, int64_t* out) noexcept nogil

cdef int c_size(int nd, const int64_t* sizes, int64_t* out) noexcept nogil
cdef int c_offset_of(int nd, const int64_t* index, const int64_t* strides, int64_t offset,
                     int64_t* out) noexcept nogil
cdef int c_span(int nd, const int64_t* sizes, const int64_t* strides, int64_t offset,
                int64_t* lo, int64_t* hi) noexcept nogil
cdef int c_packed_strides(int nd, const int64_t* sizes, const int* order,
                          const unsigned char* broadcast, int64_t* out) noexcept nogil
cdef int c_flags(int nd, const int64_t* sizes, const int64_t* strides) noexcept nogil
# max_work: nodes of the exact search (negative: no budget); see the notes in _core.pyx.
cdef int c_overlaps(int nd, const int64_t* sizes, const int64_t* strides,
                    int64_t max_work) except -1 nogil
cdef int c_shares(int na, const int64_t* asz, const int64_t* ast, int64_t ka,
                  int nb, const int64_t* bsz, const int64_t* bst, int64_t kb,
                  int64_t delta, int64_t max_work) except -1 nogil
cdef void c_physical_order(int nd, const int64_t* sizes, const int64_t* strides,
                           int* order) noexcept nogil
cdef int c_coalesce(int nd, const int64_t* sizes, const int64_t* strides,
                    int64_t* sizes_out, int64_t* strides_out) noexcept nogil
cdef int c_reshape_strides(int nd, const int64_t* sizes, const int64_t* strides,
                           int new_nd, const int64_t* new_sizes, int64_t* new_strides,
                           int* blocked_old_axis, int* blocked_new_axis) noexcept nogil

# Stride arithmetic of buffers: divide byte strides by the itemsize in place; a stride that
# cannot matter (its dim has <= 1 element, or count == 0) becomes 0. Return 0, or 1 + the first
# axis whose stride is not whole elements.
cdef int c_element_strides(int nd, const int64_t* sizes, int64_t* strides, int64_t itemsize,
                           int64_t count) noexcept nogil

# The copy engine, for compiled adapters. Unlike the c_* routines these need the GIL and may
# raise. copy_threads: the thread count of a num_threads argument (None: the default); raises
# TypeError / ValueError naming num_threads. copy_elements: copy `count` elements between two
# memory blocks the caller owns (element strides; any overlap between them is handled); return
# 0 when done, 1 (nothing written) when dst overlaps itself or a byte offset leaves int64.
cdef int copy_threads(object num_threads) except -1
cdef int copy_elements(char* dst, const char* src, int nd, const int64_t* sizes,
                       const int64_t* dst_strides, const int64_t* src_strides, int64_t itemsize,
                       int64_t count, int nthreads) except -1
