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

# Byte spans (element 0 at byte 0): byte_span_leaves_int64 sets lo..hi to the element span and
# returns 1 when some byte offset, or the end of the last element, leaves int64;
# check_byte_span raises OverflowError naming `name` instead.
cdef int byte_span_leaves_int64(int nd, const int64_t* sizes, const int64_t* strides,
                                int64_t itemsize, int64_t* lo, int64_t* hi) noexcept nogil
cdef int check_byte_span(int nd, const int64_t* sizes, const int64_t* strides, int64_t itemsize,
                         str name) except -1

# The budget of overlap decisions that name none (DEFAULT_MAX_WORK unless a test lowered it).
cdef int64_t default_max_work() noexcept nogil

# Insertion sort of d entries by key (ascending), carrying a and b (either may be NULL) along.
cdef void sort_by(int d, int64_t* key, int64_t* a, int64_t* b) noexcept nogil

# Argument loading for Python-facing code, with the GIL: each raises TypeError / ValueError /
# OverflowError naming the argument. as_int64: one integer (bools and floats refused).
# load_ints: a sequence of integers (or one integer) into out; returns its length.
cdef int64_t as_int64(object value, str what) except? -1
# normalize() of a layout read into C arrays by a compiled adapter: Layout._from_normalized's
# argument. Raises as normalize does.
cdef tuple normalized(int nd, const int64_t* sz, const int64_t* st, int64_t off, int64_t isz,
                      object sizes=*, object strides=*)
cdef int load_ints(object obj, str name, int64_t* out, bint nonnegative,
                   bint* exact_tuple=*) except -1
# load_pair: sizes (>= 0) and strides of one length into sz, st; returns the rank.
cdef int load_pair(object sizes, object strides, int64_t* sz, int64_t* st,
                   str strides_name=*, bint* exact=*) except -1
# load_strides: strides (any sign) of a layout of rank nd into out (one entry per axis).
cdef int load_strides(object strides, str name, int64_t* out, int nd,
                      bint* exact_tuple=*) except -1
# For messages: "1 entry" / "3 entries", and a C array as a tuple of Python ints.
cdef str entries(Py_ssize_t n)
cdef tuple tuple_of(int n, const int64_t* values)
# Raise TooHardError: `what` needed more than max_work steps of the exact search.
cdef raise_too_hard(str what, int64_t max_work)
