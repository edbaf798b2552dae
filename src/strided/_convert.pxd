# The C-level API of strided's conversion engine, for compiled adapters:
#
#     from strided._convert cimport Params, convert_elements, free_params, load_params
#
# Params, load_params, free_params: a conversion's parameters, read from the caller's Python
# values (holding the GIL, before any address is taken) into memory of the engine's own:
# `length` items of the compute type for the scale, then as many for the shift; `mode` says how
# rows convert (a plain cast when both are None). scale/shift: None, or the plain values
# strided._core.load_parameter returns (a float, or a tuple of exactly `length` floats);
# load_params raises TypeError / ValueError naming the argument, or MemoryError, and then holds
# nothing. free_params releases what load_params had (and nothing when it raised).
# convert_elements: convert `count` elements between two memory blocks the caller owns
# (element strides; type codes are indices into strided._dtypes.TYPE_NAMES), the pair checked
# (check_pair), the byte spans checked and the destination known not to overlap itself; the
# parameters of element `index` at dot(index, par), which must stay within `params.length`
# (ValueError, before writing). Any overlap between source and destination is handled.
# Returns 0.
from libc.stdint cimport int64_t

ctypedef struct Params:
    char* values
    int64_t length
    int64_t ct
    int mode
cdef int load_params(Params* out, object scale, object shift, int64_t length,
                     int src_code) except -1
cdef void free_params(Params* params) noexcept
cdef int convert_elements(char* dptr, const char* sptr, int nd, const int64_t* sizes,
                          const int64_t* dst_strides, const int64_t* src_strides, int dst_code,
                          int src_code, const Params* params, const int64_t* par,
                          int64_t count, int nthreads) except -1
