# The DLPack C ABI (dlpack.h v1.x), for strided's compiled modules:
#
#     from strided.interop._capsule cimport DLTensor, DLPackExchangeAPI
#
# The struct names are prefixed in C (strided_DLTensor, ...) so that they never clash with a
# dlpack.h that another header of the same module includes.
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t

cdef extern from *:
    """
    typedef struct { uint32_t major; uint32_t minor; } strided_DLPackVersion;
    typedef struct { int32_t device_type; int32_t device_id; } strided_DLDevice;
    typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } strided_DLDataType;
    typedef struct {
        void *data;
        strided_DLDevice device;
        int32_t ndim;
        strided_DLDataType dtype;
        int64_t *shape;
        int64_t *strides;
        uint64_t byte_offset;
    } strided_DLTensor;
    typedef struct strided_DLManagedTensor {
        strided_DLTensor dl_tensor;
        void *manager_ctx;
        void (*deleter)(struct strided_DLManagedTensor *self);
    } strided_DLManagedTensor;
    typedef struct strided_DLManagedTensorVersioned {
        strided_DLPackVersion version;
        void *manager_ctx;
        void (*deleter)(struct strided_DLManagedTensorVersioned *self);
        uint64_t flags;
        strided_DLTensor dl_tensor;
    } strided_DLManagedTensorVersioned;
    /* DLPack 1.3's C exchange API: a table of C functions a library publishes on its array
     * type as the capsule `__dlpack_c_exchange_api__` ("dlpack_exchange_api"), so that a
     * consumer reads an array without a Python call. Only the members strided calls are
     * typed; the table's layout is fixed by the header and the version. */
    typedef struct strided_DLPackExchangeAPIHeader {
        strided_DLPackVersion version;
        struct strided_DLPackExchangeAPIHeader *prev_api;
    } strided_DLPackExchangeAPIHeader;
    typedef struct {
        strided_DLPackExchangeAPIHeader header;
        void *managed_tensor_allocator;
        void *managed_tensor_from_py_object_no_sync;
        void *managed_tensor_to_py_object_no_sync;
        /* fills a DLTensor the caller owns, valid until control returns to the producer;
         * 0, or -1 with a Python exception set */
        int (*dltensor_from_py_object_no_sync)(void *py_object, strided_DLTensor *out);
        void *current_work_stream;
    } strided_DLPackExchangeAPI;
    """
    ctypedef struct DLPackVersion "strided_DLPackVersion":
        uint32_t major
        uint32_t minor
    ctypedef struct DLDevice "strided_DLDevice":
        int32_t device_type
        int32_t device_id
    ctypedef struct DLDataType "strided_DLDataType":
        uint8_t code
        uint8_t bits
        uint16_t lanes
    ctypedef struct DLTensor "strided_DLTensor":
        void* data
        DLDevice device
        int32_t ndim
        DLDataType dtype
        int64_t* shape
        int64_t* strides
        uint64_t byte_offset
    ctypedef struct DLManagedTensor "strided_DLManagedTensor":
        DLTensor dl_tensor
        void* manager_ctx
        void (*deleter)(DLManagedTensor*) noexcept nogil
    ctypedef struct DLManagedTensorVersioned "strided_DLManagedTensorVersioned":
        DLPackVersion version
        void* manager_ctx
        void (*deleter)(DLManagedTensorVersioned*) noexcept nogil
        uint64_t flags
        DLTensor dl_tensor
    ctypedef struct DLPackExchangeAPIHeader "strided_DLPackExchangeAPIHeader":
        DLPackVersion version
    ctypedef struct DLPackExchangeAPI "strided_DLPackExchangeAPI":
        DLPackExchangeAPIHeader header
        int (*dltensor_from_py_object_no_sync)(void* py_object, DLTensor* out) noexcept


cdef enum:
    DLPACK_FLAG_READ_ONLY = 1
    DLPACK_FLAG_IS_SUBBYTE_TYPE_PADDED = 4   # DLPack 1.1: one sub-byte element per byte
    DLPACK_MAJOR = 1
    DLPACK_MINOR = 1
