# The C-level API of strided's conversion engine, for compiled adapters:
#
#     from strided._convert cimport convert_elements
#
# convert_elements: convert `count` elements between two memory blocks the caller owns
# (element strides; type codes are indices into strided._convert.TYPE_NAMES), the pair checked
# (check_pair), the byte spans checked and the destination known not to overlap itself.
# scale/shift: None, a real number or a sequence of `length` of them, addressed with the element
# strides `par`. Any overlap between source and destination is handled. Raises (before writing)
# for bad parameters; returns 0.
from libc.stdint cimport int64_t

cdef int convert_elements(char* dptr, const char* sptr, int nd, const int64_t* sizes,
                          const int64_t* dst_strides, const int64_t* src_strides, int dst_code,
                          int src_code, object scale, object shift, const int64_t* par,
                          int64_t length, int64_t count, int nthreads) except -1
