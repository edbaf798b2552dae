# OpenMP shim (after scikit-learn's _openmp_helpers): the same Cython code compiles with or
# without OpenMP, because every OpenMP call goes through these macros.
cdef extern from *:
    """
    #ifdef _OPENMP
    #include <omp.h>
    #define STRIDED_OPENMP_ENABLED 1
    static int strided_omp_max_threads(void) { return omp_get_max_threads(); }
    static int strided_omp_thread_num(void) { return omp_get_thread_num(); }
    static int strided_omp_num_threads(void) { return omp_get_num_threads(); }
    #else
    #define STRIDED_OPENMP_ENABLED 0
    static int strided_omp_max_threads(void) { return 1; }
    static int strided_omp_thread_num(void) { return 0; }
    static int strided_omp_num_threads(void) { return 1; }
    #endif
    """
    bint STRIDED_OPENMP_ENABLED
    int strided_omp_max_threads() noexcept nogil
    int strided_omp_thread_num() noexcept nogil     # inside a parallel region: this thread
    int strided_omp_num_threads() noexcept nogil    # inside a parallel region: the team size
