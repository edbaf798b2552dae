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

from strided._core cimport MAX_NDIM

cdef int copy_threads(object num_threads) except -1
cdef int copy_elements(char* dst, const char* src, int nd, const int64_t* sizes,
                       const int64_t* dst_strides, const int64_t* src_strides, int64_t itemsize,
                       int64_t count, int nthreads) except -1
# transpose_block: dst[r * dp + c] = src[r + c * sq] (r < R, c < C; items of 1/2/4/8/16 bytes),
# by the engine's transpose kernels; simd_level: the level _simd set (0 SSE2, 1 SSSE3, 2 AVX2).
cdef void transpose_block(int itemsize, char* dst, int64_t dp, const char* src, int64_t sq,
                          int64_t R, int64_t C) noexcept nogil
cdef int simd_level() noexcept nogil

# The conversion kernels a plan holds (the C types are in _kernels/types.h; declared here as
# Cython's own, with the same signatures, so that a module cimporting this file needs no header
# of strided's: the kernels are declared where they are called, in _convert.pyx).
ctypedef void (*fused_fn)(char* d, const char* s, Py_ssize_t n, const void* scale,
                          const void* shift, Py_ssize_t ps) noexcept nogil
ctypedef void (*planes_fn)(char* d, Py_ssize_t dp, const char* s, Py_ssize_t n,
                           const void* scale, const void* shift, Py_ssize_t pp, char* tile,
                           Py_ssize_t tile_bytes) noexcept nogil
ctypedef void (*pixels_fn)(char* d, const char* s, Py_ssize_t n, Py_ssize_t sp,
                           const void* scale, const void* shift, Py_ssize_t pq, char* tile,
                           Py_ssize_t tile_bytes) noexcept nogil
ctypedef void (*tiled_fn)(char* dst, Py_ssize_t dp, const char* src, Py_ssize_t sq,
                          Py_ssize_t R, Py_ssize_t C, int nt, char* scratch) noexcept nogil

# Tuning: the engine's one set of knobs, for copies and conversions (_copy._tune sets them, for
# benchmarks and tests; the defaults and what each means are in _copy.pyx). Code that runs
# without the GIL never reads the knobs themselves: an entry holding the GIL takes a snapshot
# (tuning_now) and passes it down, and a plan keeps what its run needs.
ctypedef struct Tuning:
    int64_t block_bytes
    int64_t thread_bytes
    int64_t nogil_bytes
    int64_t chunks_per_thread
    int64_t nt_bytes
    int64_t llc_bytes
    int64_t tile_row_bytes
    int64_t tile_area_bytes
    int staged
    int64_t stage_bytes
    int64_t stage_big_from
    int64_t nt_run_bytes
    int64_t nt_short_runs_from
    int64_t nt_stitch_bytes
    int64_t stitch_tile_rows
    int64_t shift_buffer_bytes
    int64_t convert_tile_bytes
    int64_t convert_tiled_bytes
    int64_t convert_tile_columns
    int64_t convert_period_items
    int convert_planes
    int convert_tiled
    int convert_last
    int convert_chunked
    int64_t convert_chunked_from
    int64_t convert_chunk_bytes
    int64_t nibble_box_bytes
    int nibble_fused
    int fetch_next
    int vector_rows_in_place
    int crowd_runs
    int crowd_staged
    int nt_pages
    int crowd_rows
    int64_t down_from
    int64_t rows_tile_bytes
    int64_t rows_big_bytes
    int deint_narrow
    int deint_alias_nt
    int pix32_plain
    int sweep_ahead
    int64_t pixels_nt_bytes
    int convert_stream_rows
    int64_t fill_nt_bytes
    int stitch_rows
cdef Tuning tuning_now() noexcept
# streams: whether a call moving this many bytes (read + written) writes whole lines with
# streaming stores.
cdef bint streams(const Tuning* T, int64_t nbytes) noexcept nogil

# blocks_fn, run_team: the engine's one runner. A plan is `items` blocks numbered 0..items-1;
# run(plan, dst, src, lo, hi, scratch) runs blocks lo..hi-1 staging in `scratch` (this
# thread's; NULL when the plan stages nothing). run_team sizes a team for the thread argument
# `nthreads` and work for `most` threads (team_enter; `counts`: the call runs without the
# GIL), gives thread t `scratch + t * scratch_bytes`, and its threads claim runs of blocks,
# about `chunks_per_thread` a thread (0: one fixed share each).
ctypedef void (*blocks_fn)(const void* plan, char* dst, const char* src, int64_t lo,
                           int64_t hi, char* scratch) noexcept nogil
cdef void run_team(const void* plan, blocks_fn run, char* dst, const char* src, int64_t items,
                   int64_t most, int64_t chunks_per_thread, int nthreads, bint counts,
                   char* scratch, int64_t scratch_bytes) noexcept nogil

# Plan: the engine's one plan, a copy's or a conversion's. plan_problem fills the problem (the
# loop nest around a 2-D block problem dst[r*dp + c*dq] = src[r*sp + c*sq], parameters at
# r*pp + c*pq); the family's planner sizes the blocks and picks `run`, its row of the kernel
# table (_copy: the copy blocks; _convert: the conversion blocks); plan_run sets what the run
# needs from the tuning; execute runs it. Strides are in units of dsz / ssz / ct bytes.
ctypedef struct Plan:
    int kind                  # the kernels' ST_BLOCK_COPY (rows), _TRANSPOSE or _TBUF (a copy's)
    int nouter                # outer dims, outermost first: n, ds, ss, ps
    int64_t dsz, ssz, ct      # bytes of a unit of each stride: destination, source, parameter
    int64_t R, C, dp, dq, sp, sq, pp, pq    # the block problem
    int64_t dst_shift, src_shift, par_shift   # bytes added to the addresses by flipped dims
    bint outer_params         # some outer dim moves the parameters
    int64_t BR, BC, nbr, nbc  # block extents and block counts per outer index
    int64_t items             # blocks in all
    int64_t nbytes            # the work: a copy's bytes written, a conversion's read + written
    int64_t most              # the most threads the work is worth (tuning's thread_bytes)
    int64_t chunks_per_thread   # runs of blocks a thread of a team claims
    bint keeps_gil            # small work: runs with the GIL, on the calling thread
    blocks_fn run             # the family's blocks
    int64_t scratch_bytes     # each thread's staging buffer (0: none, or the copy's own)
    # the copy's blocks
    int unit                  # bytes moved per element of the plan: 1, 2, 4, 8 or 16
    int nt                    # 1: write whole lines with non-temporal stores
    int align                 # 1: block columns start on the destination's 64-byte lines
    int align_rows            # 1: block rows start on the source's 64-byte lines
    int stitch                # 1: lines straddling two blocks of a strip are finished whole
    int fetch                 # 1: a staged block fetches the next block's source (ST_FETCH*)
    int runs                  # ST_RUNS: staged in cache, crowded rows read in runs of lines
    int down                  # 1: blocks run down each column of blocks, then right
    # the conversion's blocks (a copy's cached plans leave them out: keep them after the
    # copy's)
    int stype, dtype, mode    # the pair and how it converts (the kernels' st_cvt_op) ...
    fused_fn fused            # ... with its unit-stride row, or NULL
    bint convert_last         # a transpose's tile is transposed in the source's type first
    planes_fn planes          # dense pixels straight to planes (no tile), or NULL
    pixels_fn pixels          # planes straight to dense quantized pixels (no tile), or NULL
    tiled_fn tiled            # a transpose converting in registers, or NULL
    int stream                # ST_NT when the tiled kernel streams whole destination runs
    int64_t tsz               # bytes of a staged tile's items
    const char* scale
    const char* shift
    char* period_scale        # the parameters of one tile column, repeated (or NULL)
    char* period_shift
    int64_t period
    # last, so that a copy of a plan copies only the nouter entries used
    int64_t n[MAX_NDIM]
    int64_t ds[MAX_NDIM]
    int64_t ss[MAX_NDIM]
    int64_t ps[MAX_NDIM]
cdef void plan_problem(Plan* P, int nd, const int64_t* sizes, const int64_t* dstr,
                       const int64_t* sstr, const int64_t* pstr, int64_t k) noexcept nogil
cdef void plan_run(Plan* P, const Tuning* T) noexcept nogil
cdef void execute(const Plan* P, char* dst, const char* src, int nthreads, int64_t most,
                  char* scratch) noexcept nogil
# execute_many: one plan on `copies` address pairs as one job (the threads of one team claim
# blocks across all of them); the addresses are adjusted in place by the plan's shifts.
cdef void execute_many(const Plan* P, char** dsts, const char** srcs, int64_t copies,
                       int nthreads, int64_t most, char* scratch) noexcept nogil
# copy_elements_many: copy_elements for `copies` address pairs of one validated layout pair
# that share no byte (the caller checks); returns 0.
cdef int copy_elements_many(char** dsts, const char** srcs, int64_t copies, int nd,
                            const int64_t* sizes, const int64_t* dst_strides,
                            const int64_t* src_strides, int64_t itemsize,
                            int nthreads) except -1
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
# `tuning`: the caller's snapshot (tuning_now), which the routes and the read plan with
# (they run without the GIL). copy_overlapping returns 0 when it has done the call, 1 (nothing
# done) when the two layouts share no byte (the caller runs its own plan). The routes' buffers
# are had before any write.
ctypedef void (*read_fn)(const void* ctx, char* tmp, const int64_t* tstr, const char* src,
                         int nd, const int64_t* sizes, const int64_t* sstr, int64_t poff,
                         const int64_t* pstr, int nthreads) noexcept nogil
ctypedef struct Reader:
    read_fn read
    const void* ctx
    int64_t dsz
    int64_t ssz
    const Tuning* tuning
cdef int copy_overlapping(char* dst, const char* src, int nd, const int64_t* sizes,
                          const int64_t* dstr, const int64_t* sstr, const int64_t* pstr,
                          const Reader* R, int nthreads) except -1
