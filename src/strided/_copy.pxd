# The C-level API of strided's copy engine, for compiled adapters and other Cython code:
#
#     from strided._copy cimport copy_elements, copy_threads
#
# Unlike the c_* routines of _core.pxd these need the GIL and may raise.
# copy_threads: the engine's thread argument of a num_threads argument: the count asked for, or
# 0 for None (the default, sized when the copy runs by team_enter); 1 in a process forked after
# strided was imported; raises TypeError / ValueError naming num_threads.
# copy_elements: copy `count` elements between two memory blocks the caller owns (element
# strides; any overlap between them is handled); return 0 when done, 1 (nothing written) when
# dst overlaps itself or a byte offset leaves int64.
from libc.stdint cimport int64_t

cdef int copy_threads(object num_threads) except -1
cdef int copy_elements(char* dst, const char* src, int nd, const int64_t* sizes,
                       const int64_t* dst_strides, const int64_t* src_strides, int64_t itemsize,
                       int64_t count, int nthreads) except -1
# transpose_block: dst[r * dp + c] = src[r + c * sq] (r < R, c < C; items of 1/2/4/8/16 bytes),
# by the engine's transpose kernels; simd_level: the level _simd set (0 SSE2, 1 SSSE3, 2 AVX2).
cdef void transpose_block(int itemsize, char* dst, int64_t dp, const char* src, int64_t sq,
                          int64_t R, int64_t C) noexcept nogil
cdef int simd_level() noexcept nogil
# streams: whether a copy writing this many bytes writes whole lines with streaming stores
# (the threshold _tune(nt_bytes=) sets, for both engines).
cdef bint streams(int64_t written) noexcept nogil
# block_problem: the planners' common step on d dims (sizes n, positive destination strides ds,
# source strides ss, parameter strides ps or NULL): sort and merge them in place, set *p to the
# rows dim and *transposing; returns the dims left (the columns are the last). See _copy.pyx.
cdef int block_problem(int d, int64_t* n, int64_t* ds, int64_t* ss, int64_t* ps, int* p,
                       bint* transposing) noexcept nogil
# Team, team_enter, team_yields, team_leave: the threads of a call, counted against the cores
# with every other call's (see _copy.pyx, "how many threads"): team_enter sizes a team for the
# engine's thread argument `nthreads` and work for `most` threads (`counts`: the call runs
# without the GIL); a worker asks team_keeps before claiming more work from its team's counter
# (team_yields: whether it gives its core back; team_keeps also waits for a core to come free
# while work is left) and stops when it says so; team_leave hands the count back once the team
# is done.
ctypedef struct Team:
    int size
    int budgeted
    int64_t counted
cdef int team_enter(Team* T, int nthreads, int64_t most, bint counts) noexcept nogil
cdef bint team_yields(Team* T) noexcept nogil
cdef bint team_keeps(Team* T, int64_t* next, int64_t items) noexcept nogil
cdef void team_leave(Team* T) noexcept nogil
# default_threads: the default team (OpenMP's default, at most the cores of this process).
cdef int default_threads() noexcept nogil
# Reader, copy_overlapping: the engine's one overlap policy (exact decision, then a shift through
# a small buffer, an in-place transpose two tiles at a time, or the whole source staged; see
# _copy.pyx), for both engines. A Reader says how a route reads a block of the source into its
# packed buffer of destination items (dsz bytes each, from source items of ssz bytes): read
# NULL copies (dsz == ssz); else read(ctx, tmp, tmp_strides, src, nd, sizes, src_strides, poff,
# pstr, nthreads) converts, its parameters at element offset poff with strides pstr (NULL: none).
# copy_overlapping returns 0 when it has done the call, 1 (nothing done) when the two layouts
# share no byte (the caller runs its own plan). The routes' buffers are had before any write.
ctypedef void (*read_fn)(const void* ctx, char* tmp, const int64_t* tstr, const char* src,
                         int nd, const int64_t* sizes, const int64_t* sstr, int64_t poff,
                         const int64_t* pstr, int nthreads) noexcept nogil
ctypedef struct Reader:
    read_fn read
    const void* ctx
    int64_t dsz
    int64_t ssz
cdef int copy_overlapping(char* dst, const char* src, int nd, const int64_t* sizes,
                          const int64_t* dstr, const int64_t* sstr, const int64_t* pstr,
                          const Reader* R, int nthreads) except -1
# blocks_fn, run_team: the engines' one runner. A plan of either engine is `items` blocks
# numbered 0..items-1; run(plan, dst, src, lo, hi, scratch) runs blocks lo..hi-1 staging in
# `scratch` (this thread's; NULL when the plan stages nothing). run_team sizes a team for the
# thread argument `nthreads` and work for `most` threads (team_enter; `counts`: the call runs
# without the GIL), gives thread t `scratch + t * scratch_bytes`, and its threads claim runs of
# blocks, about `chunks_per_thread` a thread (0: one fixed share each).
ctypedef void (*blocks_fn)(const void* plan, char* dst, const char* src, int64_t lo,
                           int64_t hi, char* scratch) noexcept nogil
cdef void run_team(const void* plan, blocks_fn run, char* dst, const char* src, int64_t items,
                   int64_t most, int64_t chunks_per_thread, int nthreads, bint counts,
                   char* scratch, int64_t scratch_bytes) noexcept nogil
