"""The copy engine of strided: plans a strided copy once, then runs its blocks on threads.

Everything here moves memory between two layouts given as addresses, sizes and *element*
strides; the layout arithmetic it needs (spans, sizes, packed strides, overlap decisions) is
``strided._core``'s, cimported, never written again. The innermost loops are C, in
``_kernels/``. What this module adds: the planner and its cache, the runner of blocks on an
OpenMP team, the thread count (serial in forked children), and the routes for a destination
that shares memory with its source (in bounded memory). It takes addresses, sizes and strides;
the Python objects behind them (buffers, arrays, tensors) are read by the adapters in
``strided.interop``.
"""
from cpython.mem cimport PyMem_RawFree, PyMem_RawMalloc
from libc.math cimport sqrt
from libc.stdint cimport int64_t, intptr_t, uint64_t, uintptr_t
from libc.string cimport memcpy
from cython.parallel cimport parallel

from strided._core cimport (
    FLAG_BROADCAST, FLAG_EMPTY, FLAG_PACKED, MAX_NDIM, OVERLAP_UNDECIDED, as_int64,
    byte_span_leaves_int64, c_flags, c_overlaps, c_packed_strides,
    c_physical_order, c_shares, c_size, check_byte_span, default_max_work, load_pair,
    load_strides, raise_too_hard, sort_by, tuple_of,
)
from strided._openmp cimport (
    STRIDED_OPENMP_ENABLED, strided_omp_max_threads, strided_omp_thread_num,
)

import os

from strided import _caches, _core


def openmp_enabled():
    """Return True when this build of the copy engine was compiled with OpenMP."""
    return bool(STRIDED_OPENMP_ENABLED)


def max_threads():
    """Return the number of threads OpenMP would use by default (1 in a serial build)."""
    return strided_omp_max_threads()


# --------------------------------------------------------------------------------------------
# The copy engine: plan a strided copy once, then run its blocks on an OpenMP team
# --------------------------------------------------------------------------------------------
#
# A copy of `sizes` elements from one strided layout to another is planned as oneDNN's reorder
# and HPTT do (DESIGN §5): drop size-1 dims; flip every dim the destination walks backwards, in
# both layouts at once; sort the dims by the destination's strides; merge neighbours that are
# contiguous in *both* layouts. What is left is an outer loop nest around a 2-D block problem
#     dst[r * dp + c * dq] = src[r * sp + c * sq]
# whose columns are the destination's innermost dim. When that dim is unit-stride in the
# destination and another dim is unit-stride in the source, the block is a transpose (rows =
# the source's unit dim) and is tiled for the cache; otherwise it is a copy of rows (memcpy,
# fill, gather or scatter). Blocks are numbered (outer index, block row, block column); the
# threads of a team claim runs of them, each walking its run with an odometer (run_team).
# A conversion is the same problem with two item sizes and a third operand, its per-channel
# parameters: plan_problem serves both, and each family sizes its blocks and brings its blocks
# function (this module's _copy_blocks; _convert's conversion blocks) to one Plan, run by one
# runner (execute, run_team).

cdef extern from "_kernels/copy_kernels.h":
    enum:
        ST_BLOCK_COPY
        ST_BLOCK_TRANSPOSE
        ST_BLOCK_TBUF
        ST_TILE_BUF
        ST_NT
        ST_STITCH
        ST_FRESH
        ST_LAST
        ST_FETCH
        ST_FETCH_DOWN
        ST_RUNS
        ST_PAGES
        ST_SETS8
        ST_DEINT16
        ST_DEINT_ALIAS
        ST_PIX32_PLAIN
        ST_ROWS_JOIN
        ST_AHEAD_SHIFT
        ST_AHEAD_MAX
        ST_STITCH_ROWS
    void st_copy_block(int kind, int itemsize, char* dst, Py_ssize_t dp, Py_ssize_t dq,
                       const char* src, Py_ssize_t sp, Py_ssize_t sq,
                       Py_ssize_t R, Py_ssize_t C, int nt, char* scratch) noexcept nogil
    void st_store_fence() noexcept nogil
    int64_t st_claim(int64_t* next, int64_t n) noexcept nogil
    int64_t st_claimed(int64_t* next) noexcept nogil
    char* st_scratch() noexcept nogil
    int st_cpu_init() noexcept nogil
    int st_set_simd(int level) noexcept nogil
    int st_get_simd() noexcept nogil


st_cpu_init()   # once, at import, before any thread copies

# Plan (declared in _copy.pxd): the engine's one plan, for a copy (this module's blocks) and a
# conversion (_convert's).

# Team (declared in _copy.pxd): size, the threads a team was started with; budgeted, 1 for a
# default-sized team, whose workers give their core back (team_yields); counted, its threads
# counted in the process-wide count now (workers that give their core back subtract theirs).


# ---- tuning: one set of knobs for the whole engine -------------------------------------------
# The defaults were measured on this project's 2-core x86-64 machines (AMD EPYC and Intel, see
# benchmarks/): bytes unless said otherwise. _tune sets them for benchmarks and tests. The work
# a call is measured by (Plan.nbytes) is a copy's bytes written and a conversion's bytes read
# and written: thread_bytes and nogil_bytes were measured that way for each, and equal.

cdef Tuning _TUNING
_TUNING.block_bytes = 64 * 1024      # a block of rows (a copy's, or a conversion's row by row)
_TUNING.thread_bytes = 256 * 1024    # each extra thread needs this much work
_TUNING.nogil_bytes = 16 * 1024      # less work keeps the GIL (and one thread)
_TUNING.chunks_per_thread = 8        # a team claims its blocks in this many runs a thread
_TUNING.nt_bytes = 32 * 1024 * 1024  # calls moving this much stream (the L3: see below)
_TUNING.llc_bytes = 32 * 1024 * 1024  # the last-level cache a copy counts as in cache (_staged)
_TUNING.tile_row_bytes = 256         # a copy's in-place transpose tile's row, at least ...
_TUNING.tile_area_bytes = 65536      # ... and up to this much of each operand (L2 / 8)
_TUNING.staged = -1                  # copy transposes via the staging tile: -1 by _staged()
_TUNING.stage_bytes = 131072         # the copy's staging tile (L2 / 4, <= ST_TILE_BUF) ...
_TUNING.stage_big_from = 8 * 1024 * 1024   # ... for copies this large; 16 KiB below
_TUNING.nt_run_bytes = 256           # a streamed transpose's destination run per tile row ...
_TUNING.nt_short_runs_from = -1     # ... halved in copies this large (-1: never; _nt_tile_run)
_TUNING.nt_stitch_bytes = 512        # ... when rows do not share a line alignment
_TUNING.stitch_tile_rows = ST_STITCH_ROWS   # ... and the most rows of such a stitched tile
_TUNING.shift_buffer_bytes = 256 * 1024    # the overlap routes' buffer: L2 / 2
_TUNING.convert_tile_bytes = 131072  # a conversion's staged tile: L2 / 4
_TUNING.convert_tiled_bytes = 262144   # ... for the one-pass kernels: L2 / 2
_TUNING.convert_tile_columns = 64    # a staged tile's columns (destination rows' run)
_TUNING.convert_period_items = 512   # an unrolled period of per-channel parameters
_TUNING.convert_planes = 1           # dense 8-bit pixels go straight to float32 planes
_TUNING.convert_tiled = 1            # float32 -> float16/bfloat16 transposes in one pass
_TUNING.convert_stream_rows = 1      # dense rows of a conversion stream past nt_bytes
_TUNING.convert_last = -1            # -1: widening transposes convert last; 0 never, 1 always
_TUNING.convert_chunked = -1         # -1: large narrowing transposes go through chunks
_TUNING.convert_chunked_from = 4 * 1024 * 1024   # destination bytes from which to chunk
_TUNING.convert_chunk_bytes = 512 * 1024         # destination bytes of a chunk
_TUNING.nibble_box_bytes = 128 * 1024  # carrier bytes of a 4-bit conversion's box (L2 / 4):
# NCHW -> int4 NCHW64, 8x256x56x56, 1 thread (AMD EPYC, 512 KiB L2): 8 KiB 10.6 ms, 32 KiB
# 7.3, 128 KiB 5.8, 256 KiB 9.7 (the box and the tile of its plan no longer both in L2)
_TUNING.nibble_fused = 1             # float32 planes <-> 4-bit pairs in one pass (no carriers)
_TUNING.fetch_next = 16              # streamed transposes of items of at most this many bytes
# prefetch the next block's source (0: none, 16: every size)
# (1 thread, 64 MiB float32, AMD EPYC Zen 3, interleaved A/B against a memcpy: NCHW -> NHWC
# C = 256 0.55-0.61x -> 0.60-0.73x, (rows, 768) column-major 0.63-0.75x -> 0.66-0.87x, the
# others within the noise, in four runs; prefetching into L2 only (locality 1) measured the
# same. On an Intel Xeon (2 MiB L2, 480 MiB L3) it lost on every item size but bytes, without
# the fetch against with it, 64 MiB: float32 2-D 0.93 vs 0.76, column-major 1.00 vs 0.80,
# C = 256 0.89 vs 0.77 (1 thread), 1.66 vs 1.34, 1.78 vs 1.41, 1.77 vs 1.44 (2 threads);
# float64 2-D 1.07 vs 0.84, column-major 1.10 vs 0.85; uint16 2-D 1.01 vs 0.80 (column-major
# 0.62 vs 0.68); uint8 column-major gained (0.38 vs 0.47, 0.71 vs 0.85 on 2 threads), the
# rest level; cold (rotating over 1 GiB) float32 2-D, column-major and C = 256 1.2x faster
# without, bytes level: there strided._caches sets it to 1, bytes only)
_TUNING.crowd_runs = 1              # staged copies in cache read crowded rows 4 lines a row
_TUNING.crowd_staged = 1            # transposes in cache whose source rows share one L1 set
# (4 KiB multiples apart) go through the staging tile (0: tiled in place; _staged). On the
# AMD EPYC Zen 3 (8-way 32 KiB L1d) staging them was 1.04-1.85x faster, warm. On an AMD EPYC
# Zen 5 (12-way 48 KiB L1d), 4 MiB, in place against staged, cold (rotating over 128 MiB):
# float32 2-D 1024^2, NCHW -> NHWC of 32 x 32 planes with 128 and 512 channels, NHWC -> NCHW
# with 1024, float64 2-D 512^2 and NCHW -> NHWC 32 x 32: 1.5-2.3x on 1 thread, 1.5-2.1x on 2;
# warm float32 0.87-1.3x, float64 2-D 1.09-1.12x, float64 NCHW -> NHWC 32 x 32 0.73-0.86x
# (the one loss, warm only). strided._caches: 0 on AMD with a 48 KiB L1d (Intel, whose
# streaming threshold leaves this rule only copies inside its L2s, unmeasured cold: 1).
_TUNING.crowd_rows = 4              # streamed tiles read source rows through the line
# buffer once more than this many of a micro-tile's rows share an L1 set (4: the 8-way L1 of
# the AMD EPYC Zen 3, with every stride a multiple of 2 KiB; 8 or more: past 8, a 12-way L1,
# 48 KiB, measured on an Intel Xeon and an AMD Zen 5: strided._caches; tile.h)
_TUNING.nt_pages = 0                # streamed runs and rows read four pages at once
# (rows.h, st_stream_lines4: long runs 4 KiB pieces, rows of 4 KiB and more four rows). Cold
# (each call on fresh operands), 64 MiB, on against off (Intel Xeon, 2 MiB L2, 480 MiB L3):
# packed copies 1.18-1.24x, padded -> packed (16 KiB rows) 1.29-1.36x, rows of 4 KiB
# 1.15-1.21x, 8 KiB 1.23-1.30x, 64 KiB 1.17-1.20x, 1 and 2 threads; every transpose level
# (0.97-1.05x: their streamed runs come from the staging tile, in cache). On an AMD EPYC
# Zen 5 (1 MiB L2, 32 MiB L3) it lost: packed copies 0.68-0.73x, padded -> packed 0.71-0.83x
# (1 thread); strided._caches turns it on for Intel only.
_TUNING.down_from = 8               # streamed staged transposes whose strips hold at least
# this many blocks run down each column of blocks first (0: never; _run_blocks): the source's
# rows then continue from one block to the next instead of restarting a strip later. Cold
# (rotating over 1 GiB), 64 MiB, down against strips (Intel Xeon, four tune_copy.py runs and
# a plain loop): 1 thread 2-D float32 (64 blocks a strip) 1.04-1.23x, uint8 (32)
# 1.06-1.19x, column-major float32 (12) 0.97-1.11x; 2 threads 1.09x, 1.20x, 1.09x; 4 MiB
# 1.0-1.08x; 512 MiB 2 threads level, column-major float32 1.10x. The machine's run-to-run
# spread is most of those ranges; no run lost more than 3%. Strips of 3-4 blocks run down lost
# (column-major uint8 0.97x, NCHW -> NHWC with 256 floats 0.86x: a destination row then
# takes four passes far apart), hence from 8. On an AMD EPYC Zen 5 (64 MiB cold, both
# orders): 2-D uint8 1.05-1.1x (1 thread), 1.1-1.33x (2), column-major float32 1.03-1.16x,
# 2-D float32 0.94-1.06x, float64 and uint8 column-major 0.96-1.04x.
_TUNING.rows_tile_bytes = 0         # streamed tiles of whole destination rows longer than
# a line (pixels of 128-256 bytes: NCDHW -> NDHWC, NCHW32 of floats and doubles) stage at
# most this many bytes when each source row still gives a block a run of 1 KiB or more (0:
# the staging tile, stage_bytes; _whole_rows_room). Cold (rotating over 1 GiB), 64 MiB,
# 32 KiB against the 128 KiB tile (Intel Xeon, 48 KiB L1d: the tile then stays in the L1),
# two-configuration tune_copy runs in both orders: float32 NCHW -> NCHW32 1.07-1.14x on 1
# thread, 1.08-1.13x on 2; NCDHW -> NDHWC 1.08-1.17x, 1.12-1.13x; float64 NCHW32 and NCDHW
# 1.13-1.22x, float64 with 16 channels 1.03-1.08x; 4 MiB 1.04-1.19x; 512 MiB (2 threads)
# 1.05-1.08x. Runs of 512 bytes lost (64 float channels through a 32 KiB tile
# 0.84-0.88x), so those keep the staging tile. On an AMD EPYC Zen 5 (48 KiB L1d, crowd_rows
# 8): float32 NCHW32 and NCDHW 1.01-1.06x, float64 1.05-1.11x, 1 and 2 threads, both orders.
# strided._caches sets it where the L1d holds 48 KiB or more; 0 here (the Zen 3's 32 KiB).
_TUNING.rows_big_bytes = 0          # streamed tiles of whole destination rows from 64 or
# more source rows (NCHW -> NHWC with 64-256 channels of up to 512 bytes a pixel) stage this
# many bytes where it is more than the staging tile (0: never; _whole_rows_room): each of the
# many planes then gives a block a longer run. Cold (rotating over 1 GiB), 64 MiB, 512 KiB
# (a quarter of the Xeon's 2 MiB L2) against the 128 KiB tile, tune_copy runs in both
# orders, 1 / 2 threads: uint8 with 256 channels 1.36x / 1.33-1.40x, uint16 with 256
# 1.27-1.39x / 1.38-1.40x, uint16 with 64 1.17-1.20x / 1.17-1.25x, uint8 with 64
# 1.10-1.14x / 1.09-1.18x, float64 with 64 1.12-1.14x / 1.06-1.16x, float32 with 64
# 1.03x / 0.98-1.00x; 512 MiB, 2 threads: 1.00-1.34x (uint8 with 256 channels 1.27-1.34x);
# 4 MiB 0.94-1.32x, with a bias to the second column of up to 1.17x on rows off the path
# (the order with the new tile first: 0.94-1.12x, level). The same 512 KiB for every streamed
# transpose (stage_bytes) lost up to 0.9x (float32 NCHW -> NHWC with 256 channels, rows of
# 1 KiB: not whole rows) and was level on 2-D transposes. On an AMD EPYC Zen 5 (1 MiB L2),
# 512 KiB against the 128 KiB tile: uint8 and uint16 with 256 channels 1.17-1.31x, float64
# with 64 1.16-1.35x, uint16 with 64 1.05-1.13x, 1 and 2 threads, both orders; 512 KiB led
# 256 KiB by 1.03-1.2x. strided._caches: L2 / 2 within 128-512 KiB on an L2 of 1 MiB or more
# (smaller L2s unmeasured: 0, as here for the Zen 3's 512 KiB).
_TUNING.deint_narrow = 0            # 1: pixels of 2 items, or of 4 two-byte items,
# deinterleave (HWC -> CHW, NHWC -> NCHW) with the 16-byte kernels where the AVX2 ones would
# not stream (interleave.h st_deint_16_first: Intel 1.11-1.63x; on an AMD EPYC Zen 5 pairs
# 0.93-1.01x, uint16 quads 0.85-0.93x); strided._caches: Intel only
_TUNING.deint_alias_nt = 0          # 1: streamed deinterleaves (HWC -> CHW) stream planes
# a multiple of 2 KiB apart too (interleave.h st_deint_lines, whose comment has the AMD EPYC
# Zen 3's loss: 1.1-1.35x the time). On an AMD EPYC Zen 5, 1080 x 1920 x 3 float32 (planes 8
# MiB apart), 1 thread, cold: 26.7-28.0 -> 39.7-41.1 GB/s against cv2.split's 42.7-46.8
# (which streams them too); tune harness, both orders, planes of 2048^2 and 1080 x 1920:
# float32 with 2 and 3 channels, uint16 with 2-4, uint8 with 4 1.23-1.47x on 1 thread,
# 1.18-1.47x on 2, the rest level (0.95-1.04x); AMD EPYC Zen 4 (32 KiB L1d), cold, 2048^2
# and 1080 x 1920 planes, 1.29-1.58x on 1 and 2 threads. strided._caches: recent AMD (a 1 MiB
# L2 or a 48 KiB L1d; Intel unmeasured: 0)
_TUNING.pix32_plain = 0             # 1: streamed 8-bit NCHW -> NCHW32 whose planes spread
# over the L1 sets write their pixels with ordinary stores from the in-register kernel rather
# than streaming them through the tile (copy_kernels.h, ST_PIX32_PLAIN). AMD EPYC Zen 5, 64
# MiB, streamed tile -> ordinary stores: planes of 724^2 0.17-0.23 -> 0.44-0.58 memcpy (1
# thread), 0.27-0.37 -> 0.57-0.83 (2); 362^2 1.1-1.4x, 720^2 1.0-1.65x; 512 MiB bench_copy
# 9.8 GB/s (0.32x memcpy) before, 25.6 after. Planes that crowd a set (256^2, 512^2) keep
# the streamed tile (ordinary stores 0.67-1.03x there, 1 thread 0.40 vs 0.60).
# On the Zen 4 (8-way 32 KiB L1d), 362^2-724^2, level (0.96-1.06x). strided._caches: AMD with
# a 48 KiB L1d (Intel and the Zen 3 unmeasured: 0)
_TUNING.sweep_ahead = 0             # lines ahead of its micro-tiles that a streamed tile's
# sweep down its source rows fetches each row (0: none; tile.h, ST_AHEAD_SHIFT; also the
# conversions' one-pass tiles, _convert.pyx). A block reads M rows at a time in runs of 1-8 KiB
# each; one core's hardware prefetchers do not keep such short runs in flight: (C harness, AMD
# EPYC Zen 5, 1 thread) reading 64 MiB of float32 NCHW (128^2 planes) 8 planes at a time in runs
# of 8 KiB took 1.6-2.2x the time of one sequential read (1.5-1.7x with a prefetch 8 or 16 lines
# ahead; padding the planes off 64 KiB changed nothing). Blocks fetch at most a quarter of their
# rows ahead (tile.h). Zen 5, cold, 64 MiB, 8 lines against none (rows shorter than 2 KiB then
# took none), two tune_copy runs in both orders: NCHW -> NHWC float32 with 64 channels 1.03-1.13x
# on 1 thread, 1.03-1.14x on 2; uint8 with 64 1.10-1.15x, 1.03-1.13x; uint8 with 256 1.18-1.2x,
# 1.12-1.13x; float32 with 256 1.0-1.03x; 512 MiB on 2 threads 0.98-1.11x; the rest level (no row
# long enough). float32 -> float16 NCHW -> NHWC (16, 64, 128, 128): 1.22-1.28x on 1 thread,
# 1.11-1.16x on 2. 16 lines against 8: uint8 with 256 channels 0.75-0.87x, the rest level; 4
# lines: uint8 with 256 1.1-1.14x, float32 -> float16 0.96x. Shorter rows fetching a quarter of
# theirs ahead, against none: float32 NCHW32 and NCDHW 1.05-1.13x, uint8 2-D and column-major
# 1.04-1.08x on 2 threads, float32 NHWC -> NCHW with 64 channels 0.95-1.0x, 2-D float32
# 0.96-1.02x, the rest level. On an AMD EPYC Zen 4 (8-way 32 KiB L1d) mixed, 0.92-1.08x.
# strided._caches: 8 on AMD with a 48 KiB L1d (Intel and the Zen 3 unmeasured: 0).
_TUNING.pixels_nt_bytes = -1        # copies between a few planes and dense pixels (HWC
# <-> CHW: the interleave and deinterleave kernels, pixels of fewer items than a micro-tile's
# side; of those, the kernels that stream take 3-4 channels to pixels) stream from this footprint
# (bytes read + written) when it is below nt_bytes (-1: as every copy, from nt_bytes;
# _pixels_stream). OpenCV's split and merge stream every aligned destination. AMD EPYC Zen
# 5, 1 thread, uint8 and float32 images of 112^2-1080 x 1920 x 3, split and merge, streamed
# against ordinary stores (cv2 streamed alike): source and destination cold 1.13-1.56x faster,
# the source warm and the destination cold (a decoded image into a batch) 1.3-1.63x; both warm
# (one small pair of buffers in a loop) 0.49-0.82x, 1080 x 1920 uint8 level. 2 threads: cold
# and warm source 1.2-1.4x, both warm 0.45-0.67x. strided._caches: 256 KiB on recent AMD (a
# 1 MiB L2 or a 48 KiB L1d: a quarter of its L2, so smaller images stay in cache; on the Zen 4
# the 224^2 and 1080 x 1920 images of bench_copy 1.2-1.65x, cold; Intel, which streams from 4
# MiB, and the Zen 3 unmeasured: -1).
_TUNING.fill_nt_bytes = -1          # fills (copies reading at most an eighth of what they
# write: broadcast sources) stream from this footprint when it is above nt_bytes (-1: as every
# copy; _copy_streams). AMD EPYC Zen 5, broadcast -> packed of 4 and 8 MiB, float32 and uint8,
# streamed (from nt_bytes, 4 MiB) against ordinary stores (from the L3): cold 0.95-1.35x, 1.05-
# 1.12x on 2 threads; warm (one destination in a loop, which the L3 keeps) 0.22-0.39x.
# torch and numpy fill with ordinary stores; glibc's memset streams from its L3-sized
# threshold. strided._caches: the L3 on recent AMD; -1 elsewhere (Intel streams
# fills from its nt_bytes, cold level with ordinary stores there; the Zen 3's nt_bytes is its
# L3 already).
_TUNING.stitch_rows = 1             # streamed copies of rows that follow each other in the
# destination but are not whole lines stream them as one run, each line two rows share
# completed from a carry (blocks.h st_copy_rows, ST_ROWS_JOIN); 0: row by row, the rows' ends
# ordinary stores. AMD EPYC Zen 4, 8 MiB cold, against the unstreamed copy: rows of 400-418
# bytes 0.62-0.67x row by row, 1.13-1.26x joined. Vendor-neutral (fewer reads for ownership).
# Also the conversions' streamed dense rows (convert_tiles.h st_cvt_stream_rows).
_TUNING.vector_rows_in_place = 31    # streamed NHWC -> NCHW with one-vector pixels tile in
# place for the item sizes in this mask of byte counts (1 | 2 | 4 | 8 | 16; 0: never, 31:
# every size; see _plan_blocks and strided._caches: 8 on recent AMD, where the others streamed
# 1.22-1.32x faster on the Zen 4, 64 MiB cold)


# The knobs that follow the caches and the vendor: the values above are what strided._caches's
# rules give on the caches they were measured with (AMD EPYC Zen 3: 512 KiB L2 a core, 32 MiB
# L3); this machine's reported caches replace them (any size not reported keeps them).
CACHES = _caches.detect()
_derived = _caches.derived_tuning(CACHES)
_TUNING.nt_bytes = _derived["nt_bytes"]
_TUNING.stage_big_from = _derived["stage_big_from"]
_TUNING.llc_bytes = _derived["llc_bytes"]
_TUNING.fetch_next = _derived["fetch_next"]
_TUNING.vector_rows_in_place = _derived["vector_rows_in_place"]
_TUNING.nt_pages = _derived["nt_pages"]
_TUNING.crowd_rows = _derived["crowd_rows"]
_TUNING.crowd_staged = _derived["crowd_staged"]
_TUNING.down_from = _derived["down_from"]
_TUNING.rows_tile_bytes = _derived["rows_tile_bytes"]
_TUNING.rows_big_bytes = min(_derived["rows_big_bytes"], <int64_t>ST_TILE_BUF)
_TUNING.deint_narrow = _derived["deint_narrow"]
_TUNING.deint_alias_nt = _derived["deint_alias_nt"]
_TUNING.pix32_plain = _derived["pix32_plain"]
_TUNING.sweep_ahead = _derived["sweep_ahead"]
_TUNING.pixels_nt_bytes = _derived["pixels_nt_bytes"]
_TUNING.stitch_tile_rows = min(_derived["stitch_tile_rows"], <int64_t>ST_STITCH_ROWS)
_TUNING.nt_short_runs_from = _derived["nt_short_runs_from"]
_TUNING.nt_stitch_bytes = _derived["nt_stitch_bytes"]
_TUNING.chunks_per_thread = _derived["chunks_per_thread"]
_TUNING.fill_nt_bytes = _derived["fill_nt_bytes"]
_TUNING.stage_bytes = min(_derived["stage_bytes"], <int64_t>ST_TILE_BUF)
_TUNING.tile_area_bytes = _derived["tile_area_bytes"]
_TUNING.convert_tile_bytes = _derived["convert_tile_bytes"]
_TUNING.nibble_box_bytes = _derived["nibble_box_bytes"]
_TUNING.convert_tiled_bytes = _derived["convert_tiled_bytes"]
_TUNING.shift_buffer_bytes = _derived["shift_buffer_bytes"]
del _derived


cdef Tuning tuning_now() noexcept:
    """The knobs as they are (call it holding the GIL, as _tune sets them holding it)."""
    return _TUNING


def _knob(name, value):
    """A knob's new value, clamped to what the engine can run."""
    if name in ("staged", "convert_last", "convert_chunked"):
        return max(-1, min(1, int(value)))
    if name in ("convert_planes", "convert_tiled", "nibble_fused", "crowd_runs", "nt_pages",
                "deint_narrow", "crowd_staged", "deint_alias_nt", "pix32_plain",
                "convert_stream_rows", "stitch_rows"):
        return int(bool(value))
    if name == "crowd_rows":
        return max(4, min(16, int(value)))
    if name == "fetch_next":
        return max(0, min(16, int(value)))
    if name == "sweep_ahead":
        return max(0, min(<int>ST_AHEAD_MAX, int(value)))
    if name == "vector_rows_in_place":   # a mask of item sizes, 1 | 2 | 4 | 8 | 16
        return max(0, min(31, int(value)))
    if name == "down_from":
        return max(0, min(1 << 30, int(value)))
    if name == "chunks_per_thread":
        return max(0, int(value))
    if name == "nt_bytes":
        return int(value)
    if name in ("pixels_nt_bytes", "fill_nt_bytes", "nt_short_runs_from"):   # (-1: none)
        return max(-1, int(value))
    if name == "tile_area_bytes":   # (its square root sizes the tile: any value plans)
        return min(max(16, int(value)), 1 << 40)
    # runs are clamped so that a tile of a micro-tile's rows (at most 16) of them, or of whole
    # rows of two runs, still fits the staging buffer
    if name == "nt_run_bytes":
        return min(max(64, int(value) // 64 * 64), <int64_t>ST_TILE_BUF // 32)
    if name == "nt_stitch_bytes":
        return min(max(64, int(value) // 64 * 64), <int64_t>ST_TILE_BUF // 16)
    if name == "stage_bytes":
        return min(max(256, int(value)), <int64_t>ST_TILE_BUF)
    if name == "stitch_tile_rows":   # (at least a micro-tile's rows)
        return min(max(16, int(value)), <int64_t>ST_STITCH_ROWS)
    if name in ("rows_tile_bytes", "rows_big_bytes"):
        return min(max(0, int(value)), <int64_t>ST_TILE_BUF)
    if name in ("convert_tile_bytes", "convert_tiled_bytes"):
        return min(max(4096, int(value)), 1 << 22)
    if name == "tile_row_bytes":    # (squared by the planner: at most 1 MiB)
        return min(max(16, int(value)), 1 << 20)
    if name in ("block_bytes", "convert_tile_columns"):
        return max(16, int(value))
    if name == "convert_chunk_bytes":
        return max(64, int(value))
    if name == "nibble_box_bytes":   # (a box holds at least one element pair)
        return max(2, int(value))
    return max(1, int(value))


def _tune(**knobs):
    """Set knobs of the engine's tuning (the names of the ``Tuning`` struct, and ``max_work``,
    the overlap decisions' work budget in ``strided._core``); return every knob's previous
    value, a dict that ``_tune(**old)`` restores. For benchmarks and tests, which force every
    route on small arrays; calls running at the same time plan with the knobs they started
    with (each takes a snapshot), so a change is seen by the calls that start after it.

    Raises
    ------
    TypeError
        A name that is not a knob.
    """
    global _TUNING
    cdef dict state = _TUNING
    old = dict(state)
    old["max_work"] = _core._max_work_tuning()
    for name, value in knobs.items():
        if name == "max_work":
            _core._max_work_tuning(value)
        elif name not in state:
            raise TypeError(f"_tune() got an unknown knob {name!r}; the knobs are "
                            f"{sorted(old)}")
        elif value is not None:
            state[name] = _knob(name, value)
    _TUNING = state
    _plan_cache_clear()   # cached plans were sized with the old knobs
    return old


def _simd(level=None):
    """The SIMD level the copy kernels use (0: SSE2, 1: + SSSE3, 2: + AVX2); ``level`` lowers it.

    A level above what the CPU has (or a negative one) means all it has. For tests and
    benchmarks, which run every kernel family on one machine; not thread-safe against copies
    running at the same time.
    """
    if level is None:
        return st_get_simd()
    level = st_set_simd(int(level))
    _plan_cache_clear()   # the planner's choices depend on the level
    return level


cdef inline int64_t _ceil_div_pos(int64_t a, int64_t b) noexcept nogil:
    return (a + b - 1) // b


cdef int _unit_of(int64_t itemsize) noexcept nogil:
    """Bytes per typed move: the itemsize itself when typed, else its largest power-of-2 part."""
    if itemsize == 1 or itemsize == 2 or itemsize == 4 or itemsize == 8 or itemsize == 16:
        return <int>itemsize
    if itemsize % 8 == 0:
        return 8
    if itemsize % 4 == 0:
        return 4
    if itemsize % 2 == 0:
        return 2
    return 1


cdef int block_problem(int d, int64_t* n, int64_t* ds, int64_t* ss, int64_t* ps, int* p,
                       bint* transposing) noexcept nogil:
    """The planners' common step (the copy's and the conversion's, with its parameter strides
    ``ps``; NULL for a copy), on ``d`` dims of more than one element whose destination strides
    are positive: sort them by destination stride, outermost (largest) first, a tie keeping
    the smaller |source stride| inside; merge neighbours contiguous in every operand (outer
    stride == inner stride * inner size); then name the block problem. The columns are the
    last dim; ``*p`` is the rows dim (-1: none), the source's unit-stride dim when the block
    is a transpose (``*transposing``: the columns are unit-stride in the destination and not
    in the source, and another dim is unit-stride in the source), else the next-to-last dim.
    Returns the number of dims left, at least 1 (no dims: a single element)."""
    cdef int64_t tn, td, ts, tp = 0
    cdef int i, j, m = 0, q
    for i in range(1, d):   # insertion sort: d is small
        tn, td, ts = n[i], ds[i], ss[i]
        if ps != NULL:
            tp = ps[i]
        j = i - 1
        while j >= 0 and (ds[j] < td or (ds[j] == td and _abs64(ss[j]) < _abs64(ts))):
            n[j + 1], ds[j + 1], ss[j + 1] = n[j], ds[j], ss[j]
            if ps != NULL:
                ps[j + 1] = ps[j]
            j -= 1
        n[j + 1], ds[j + 1], ss[j + 1] = tn, td, ts
        if ps != NULL:
            ps[j + 1] = tp
    for i in range(d):
        if (m > 0 and ds[m - 1] == ds[i] * n[i] and ss[m - 1] == ss[i] * n[i]
                and (ps == NULL or ps[m - 1] == ps[i] * n[i])):
            n[m - 1] *= n[i]
            ds[m - 1], ss[m - 1] = ds[i], ss[i]
            if ps != NULL:
                ps[m - 1] = ps[i]
        else:
            n[m], ds[m], ss[m] = n[i], ds[i], ss[i]
            if ps != NULL:
                ps[m] = ps[i]
            m += 1
    if m == 0:   # a single element
        n[0], ds[0], ss[0] = 1, 1, 1
        if ps != NULL:
            ps[0] = 0
        m = 1
    q = m - 1
    p[0] = -1
    transposing[0] = False
    if ds[q] == 1 and ss[q] != 1 and ss[q] != 0:
        for i in range(q):
            if ss[i] == 1:
                p[0] = i
                transposing[0] = True
                break
    if not transposing[0] and m >= 2:
        p[0] = m - 2
    return m


cdef void plan_problem(Plan* P, int nd, const int64_t* sizes, const int64_t* dstr,
                       const int64_t* sstr, const int64_t* pstr, int64_t k) noexcept nogil:
    """Fill P's problem (kind, the block problem, the outer dims, the shifts) for a non-empty
    call of either family, P.dsz, P.ssz and P.ct set (bytes of a unit of each stride).
    Precondition: byte spans fit int64 (checked by the caller). ``pstr``: the parameter
    strides, or NULL (none: a copy). ``k``: units per element (a copy of items without a typed
    path, 3, 6, 12, ... bytes, moves ``k`` units each: an extra innermost dim of k units,
    unit-stride in both layouts, which then merges with any dim contiguous in both)."""
    cdef int64_t n[MAX_NDIM + 1]
    cdef int64_t ds[MAX_NDIM + 1]
    cdef int64_t ss[MAX_NDIM + 1]
    cdef int64_t ps[MAX_NDIM + 1]
    cdef int i, d = 0, p = -1, q
    cdef bint transposing
    P.dst_shift = 0
    P.src_shift = 0
    P.par_shift = 0
    for i in range(nd):
        if sizes[i] == 1:
            continue
        n[d], ds[d], ss[d] = sizes[i], dstr[i] * k, sstr[i] * k
        ps[d] = pstr[i] if pstr != NULL else 0
        if ds[d] < 0:   # walk the destination forwards: flip the dim in every operand
            P.dst_shift += (n[d] - 1) * ds[d] * P.dsz
            P.src_shift += (n[d] - 1) * ss[d] * P.ssz
            P.par_shift += (n[d] - 1) * ps[d] * P.ct
            ds[d], ss[d], ps[d] = -ds[d], -ss[d], -ps[d]
        d += 1
    if k > 1:
        n[d], ds[d], ss[d], ps[d] = k, 1, 1, 0
        d += 1
    # (no parameters: ps is all zeros, which block_problem then need not move or merge)
    d = block_problem(d, n, ds, ss, ps if pstr != NULL else NULL, &p, &transposing)
    q = d - 1
    P.kind = ST_BLOCK_TRANSPOSE if transposing else ST_BLOCK_COPY
    P.C, P.dq, P.sq, P.pq = n[q], ds[q], ss[q], ps[q]
    if p >= 0:
        P.R, P.dp, P.sp, P.pp = n[p], ds[p], ss[p], ps[p]
    else:
        P.R, P.dp, P.sp, P.pp = 1, 0, 0, 0
    P.nouter = 0
    P.outer_params = False
    for i in range(d):
        if i != p and i != q:
            P.n[P.nouter], P.ds[P.nouter] = n[i], ds[i]
            P.ss[P.nouter], P.ps[P.nouter] = ss[i], ps[i]
            P.outer_params = P.outer_params or ps[i] != 0
            P.nouter += 1


cdef void plan_run(Plan* P, const Tuning* T) noexcept nogil:
    """What running P needs of the tuning (items and nbytes set): the most threads its work is
    worth (one per thread_bytes, one per block), whether it keeps the GIL, the claim size."""
    P.most = 1
    if STRIDED_OPENMP_ENABLED:
        P.most = max(<int64_t>1, min(P.nbytes // T.thread_bytes, P.items))
    P.keeps_gil = P.nbytes < T.nogil_bytes
    P.chunks_per_thread = T.chunks_per_thread


cdef void _plan_copy(Plan* P, int nd, const int64_t* sizes, const int64_t* dstr,
                     const int64_t* sstr, int64_t itemsize, const Tuning* T) noexcept nogil:
    """Fill P for a non-empty copy: the problem in units of the item's largest typed part,
    the copy's blocks (_plan_blocks)."""
    _plan_copies(P, nd, sizes, dstr, sstr, itemsize, 1, T)


cdef void _plan_copies(Plan* P, int nd, const int64_t* sizes, const int64_t* dstr,
                       const int64_t* sstr, int64_t itemsize, int64_t copies,
                       const Tuning* T) noexcept nogil:
    """_plan_copy for ``copies`` copies of one problem run as one job (execute_many): the
    blocks, streaming and team are sized for the bytes of them all."""
    cdef int unit = _unit_of(itemsize)
    cdef int i
    P.unit = unit
    P.dsz = P.ssz = unit
    P.ct = 0
    P.nbytes = itemsize * copies
    for i in range(nd):
        P.nbytes *= sizes[i]
    plan_problem(P, nd, sizes, dstr, sstr, NULL, itemsize // unit)
    _plan_blocks(P, T)
    plan_run(P, T)
    P.run = _copy_blocks
    P.scratch_bytes = 0   # (the copy's staging tile is thread-local: st_scratch)


cdef inline int64_t _abs64(int64_t v) noexcept nogil:
    return -v if v < 0 else v


cdef inline int64_t _nt_run(const Tuning* T) noexcept nogil:
    """A streamed transpose's destination run per tile row, in bytes: 256 B (tiles of 512 x 64
    floats), for every item size. Paired at 64 MiB (AMD EPYC Zen 3, configurations taking
    turns in one process, memcpy time / strided time), 256 B against the 128 B used before for
    items of 2 bytes or more: 1 thread float32 NCHW -> NHWC C = 256 0.64-0.65 -> 0.79-0.82,
    C = 128 0.53 -> 0.77, (rows, 768) column-major 0.75-0.77 -> 0.84-0.86, 4096^2 transpose
    0.67-0.69 -> 0.75-0.76, uint16 C = 256 0.43-0.52 -> 0.58-0.66; 2 threads float32 C = 256
    0.85-1.20 -> 1.02-1.42, float64 C = 64 0.90 -> 1.37; float64 and complex128 level or
    ahead everywhere (NHWC -> NCHW C = 16 float64 1.08 -> 1.57); 512 B was between the two. Bytes
    kept 256 B (512 B: 2-D transposes 0.56 -> 0.43, (rows, 768) 0.57 -> 0.45); the rest
    level. On an Intel Xeon (64 MiB, 1 thread, warm) neither 128 B (with 256 B stitched
    runs) nor 512 B (1024 B) was better across the cases: each won some rows by 10-40% and
    lost others as much (512 B: float32 NCHW -> NHWC C = 256 0.67 -> 0.94, NHWC -> NCHW
    C = 256 0.86 -> 0.64), so 256 B stays."""
    return T.nt_run_bytes


cdef inline int64_t _nt_tile_run(const Plan* P, const Tuning* T) noexcept nogil:
    """A streamed transpose's destination run per tile row where every row starts on a line
    (P.align): _nt_run's, or half of it (whole lines, at least one) in copies of
    nt_short_runs_from bytes and more, whose blocks then read source runs twice as long
    (twice the rows). Intel Xeon, cold, paired, 128-byte runs against 256 (strided._caches):
    64 MiB 2-D and column-major transposes 1.05-1.14x on 1 thread and 1.05-1.16x on 2,
    NHWC -> NCHW float64 with 256 channels 1.15-1.24x, the rest level (0.96-1.04x; a second
    run, 1 thread); 256 MiB 0.97-1.08x; 32 MiB 0.97-1.32x but for uint8 NHWC -> NCHW with
    16 channels (0.93-0.95x); 4-16 MiB mixed (float64 2-D 0.77x at 8 MiB, float32 2-D
    0.88-0.9x at 4 MiB), so only large copies. The rows counted whole (_nt_whole_rows) keep
    _nt_run's measure."""
    if T.nt_short_runs_from >= 0 and P.nbytes >= T.nt_short_runs_from:
        return max(<int64_t>64, _nt_run(T) // 128 * 64)   # (whole lines)
    return _nt_run(T)


cdef inline int64_t _nt_stitch_run(const Tuning* T, int unit) noexcept nogil:
    """A stitched transpose's destination run per tile row, in bytes: longer than _nt_run, as
    every run costs a carried line (measured at 63 MiB, 4063^2 floats: 0.7x memcpy with runs
    of 128 B, 0.9x with 512 B), except for bytes, whose tiles then grow too short (0.7x with
    256 B, 0.6x with 512 B): half of it for them, never shorter than _nt_run's. On the Intel
    Xeon (cold, paired) 256 B (strided._caches) against 512: float32 NHWC -> NCHW with 64
    channels 1.15x at 4 MiB on 2 threads, 1.07x on 1, 1.17-1.18x at 64 MiB; 256 channels
    0.99-1.06x; float64 and the rest level; bytes at 128 B lost (uint8 with 16 and 64
    channels 0.89-0.91x), hence their floor."""
    if unit == 1:
        return max(T.nt_stitch_bytes // 2, _nt_run(T))
    return T.nt_stitch_bytes


cdef inline bint _nt_whole_rows(const Plan* P, const Tuning* T) noexcept nogil:
    """Whether a streamed transpose stages whole destination rows (the block is then one run):
    for rows back to back of up to 2 runs, 1 for bytes (measured: NCHW -> NHWC with 64 floats,
    NCHW32 with doubles, 1.1-1.2x faster than half rows; 512-byte rows at 64 MiB, 1 thread,
    whole against runs of 128 B: floats (C = 128) 1.40-1.45x faster, doubles (C = 64)
    1.55-1.7x; bytes (C = 512) whole against runs of 256 B 0.92-0.95x, so bytes stop at one
    run)."""
    return P.dp == P.C and P.C * P.unit <= (1 if P.unit == 1 else 2) * _nt_run(T)


cdef bint _lines_agree(const Plan* P, int64_t step, const int64_t* outer) noexcept nogil:
    """Whether every run of one operand, ``step`` items apart and in every outer index (its
    outer strides ``outer``: P.ds or P.ss), starts at the same offset within a 64-byte line,
    so that blocks aligned on the first run's lines are aligned on all: the destination's
    rows (step P.dp, block columns) or a transpose's source runs (step P.sq, block rows)."""
    cdef int i
    if (step * P.unit) % 64:
        return False
    for i in range(P.nouter):
        if (outer[i] * P.unit) % 64:
            return False
    return True


# bytes of one way of an L1 data cache: 64 sets of 64-byte lines on every x86 core (Intel's 32
# and 48 KiB, AMD's 32 KiB), so addresses a multiple of this apart share a set
cdef enum:
    _L1_WAY = 4096
    # Copies from this size on stage long rows both ways (see _staged: AMD and Intel measured
    # at 16 MiB, less a row; at 12 MiB AMD was mixed, uint8 column-major 0.83x staged)
    _LONG_ROWS_STAGED_FROM = 15 * 1024 * 1024
    _LONG_SOURCE_ROW = 4096     # and source rows this long (bytes)


cdef int _crowd_l1_sets(int64_t stride_bytes, int rows) noexcept nogil:
    """The most of ``rows`` lines ``stride_bytes`` apart that share one L1 set: 1 when they
    spread, ``rows`` when the stride is a multiple of _L1_WAY."""
    cdef int count[64]
    cdef int r, most = 0, at
    for r in range(64):
        count[r] = 0
    for r in range(rows):
        at = <int>(((r * stride_bytes) % _L1_WAY + _L1_WAY) % _L1_WAY // 64)
        count[at] += 1
        most = max(most, count[at])
    return most


cdef bint _staged(const Plan* P, const Tuning* T) noexcept nogil:
    """Whether a transpose below the streaming threshold goes through the staging tile, by the
    destination's row bytes.

    Staging wins where the tile holds many whole short rows: rows of one vector (written in
    place, in order), 65-256 B for 4- and 8-byte items (NCHW -> NHWC with C = 64 floats,
    NCHW32) and up to 128 B for 1- and 2-byte items (measured at 64 MiB on the SSE2 tiles).
    Tiling in place wins on long rows (2-D transposes, C = 256) and, measured again at 4 and
    16 MiB in both benchmark harnesses, on rows of 17-64 B for 4-byte items (NHWC with
    C = 16 floats: 1.1-1.3x against 0.7-0.8x memcpy) and of 0.5-2 KiB for bytes (2-D
    transposes: 0.6-0.7x against 0.4-0.5x). Large copies stream through the tile whatever
    this says.

    Source rows a multiple of 4 KiB apart (power-of-two planes and matrices: 1024^2 floats,
    NCHW with 32 x 32 or 64 x 64 planes) all fall in one L1 set (64 sets of 64-byte lines on
    every x86 core, Intel's and AMD's), which evicts the lines a tile in place comes back
    for; the staging tile reads them through its one-line-per-row buffer instead. Paired in
    one process, staged time against in place (AMD EPYC Zen 3, 4 MiB, five processes: the
    in-place times hold, the staged ones move with the tile's physical pages): float32
    (1024^2, NCHW -> NHWC of 32 x 32 planes with 128 or 512 channels, NHWC -> NCHW with 1024)
    1 thread 1.04-1.85x faster, mostly 1.5-1.8x, 2 threads 1.41-1.55x; at 16 MiB 1.01-1.43x
    (1 thread), 0.93-1.20x (2 threads); float64 0.95-1.6x (mostly 1.02-1.14x); bytes 4 KiB
    apart 0.87-1.54x. Not for 2-byte items, whose AVX2 tiles in place were ahead there
    (1.1-1.75x), nor 16-byte ones (unmeasured); not for rows 2 KiB apart (float64 NCHW -> NHWC
    with 16 x 16 planes and 256 channels: 0.55-0.6x). On an Intel Xeon (Emerald Rapids, 48
    KiB 12-way L1d) the rule was ahead for 2-D transposes (4 MiB float32 0.43 vs 0.35) and
    behind for NCHW -> NCHW32 floats (in place 1.1-1.5x at 4-64 MiB): kept, a vendor split.
    On an AMD EPYC Zen 5 (12-way 48 KiB L1d) the same copies from memory (cold) ran 1.5-2.3x
    faster in place, warm level to 0.73x: there ``crowd_staged`` is 0 (see its comment).

    The row lengths above were measured at 64 MiB with the SSE2 tiles. A copy of at most an
    eighth of the last-level cache (llc_bytes: 4 MiB on a 32 MiB L3, both operands
    a quarter of it) is tiled in place whatever its rows, bar rows of one vector: there the
    AVX2 tiles in place were ahead. NCHW -> NHWC, 4 MiB, planes not a multiple of 4 KiB,
    paired in one process, in place against staged (AMD EPYC Zen 3): float32 with 24-64
    channels 1.13-1.40x (1 thread), 1.14-1.38x (2 threads), 96-128 channels 1.0-1.06x; float64
    12-32 channels 1.05-1.32x; uint16 24-64 channels 1.06-1.20x; uint8 24 and 128 channels
    1.26-1.46x, 32-96 channels 0.89-1.07x. At 8 MiB (half the L3 held by the operands) in
    place still led on rows up to 128 B but fell behind on 192-256 B rows (float32 C = 48 and
    64: 0.85-0.92x, 1 thread), so the rule stops at an eighth. On the Xeon (300 MiB L3: copies
    under 37 MiB count as in cache) 4 MiB copies went as on AMD; at 16 MiB the two ways were
    level or split between runs, bar the long rows below.

    The same crowding on the destination side: 16 byte planes out of 16-byte pixels (NHWC ->
    NCHW with 16 channels) are written 16 bytes of each plane at a time, which is fast (0.2-
    0.3 ms for 3-4 MiB) unless more than 4 of the 16 planes share an L1 set: planes of 64^2,
    128^2, 256^2, 512^2 bytes and 181^2 (7 short of 32 KiB) took 0.65-0.82 ms in place and
    0.48-0.51 through the tile (1 thread, 1.3-1.7x faster; 2 threads 1.1-1.5x); where the
    planes spread (32^2, 45^2, 90^2, 100^2, 160^2, 180^2, 362^2) the tile was slower (medians
    0.37-0.59x, single pairs 0.24-0.91x). Byte rows of any count a multiple of 4 KiB apart
    likewise (NHWC -> NCHW uint8 with 32-256 channels on 64^2 or 128^2 planes, (1024, 4096)
    matrices; 4 MiB, paired, two processes: 1.19-1.38x on 1 and 2 threads); for 2-byte items
    the same rows were 0.92-1.01x, for floats 1.04-1.11x, so they stay in place.

    Copies of 15 MiB and more whose source rows are 4 KiB or longer and destination rows
    longer than 256 B (column-major to row-major, NCHW -> NHWC with 256 channels) are staged,
    whatever the cache: the one rule here checked on both vendors (tune_copy.py, staged
    against in place, memcpy time / strided time). AMD EPYC Zen 3 (32 MiB L3), 16 MiB:
    float32 column-major 0.48 vs 0.34 and 0.62 vs 0.51 (two processes), 0.96 vs 0.80 on 2
    threads; uint8 0.31 vs 0.27, 0.31 vs 0.26, 0.68 vs 0.62; NCHW -> NHWC C = 256 float32
    0.59 vs 0.37, 0.66 vs 0.54, 1.07 vs 0.86, uint8 0.48 vs 0.33, 0.46 vs 0.31, 0.88 vs 0.78;
    at 12 MiB mixed (uint8 column-major 0.40 vs 0.33), at 8 MiB in place led on all of them
    (C = 256 float32 0.68-0.72 vs 0.53-0.58). Intel Xeon
    (Emerald Rapids: 48 KiB L1d, 2 MiB L2, 300 MiB L3, so that copies under 37 MiB count as
    in cache), 64 MiB, three runs: float32 column-major 0.41-0.43 vs 0.26-0.29 and uint8
    0.26-0.28 vs 0.13-0.18 (1 thread), 0.73-0.82 vs 0.47-0.55 and 0.50-0.53 vs 0.26-0.29 (2
    threads); C = 256 level (0.45-0.52 vs 0.44-0.48); at 16 MiB split between two runs
    (float32 column-major 0.45 vs 0.37, then 0.46 vs 0.57; uint8 0.29 vs 0.14, then 0.29 vs
    0.28); at 4 MiB in place led (0.59 vs 0.51, 0.51 vs 0.37), as on AMD. Short source rows
    into long destination rows (NHWC -> NCHW) stay out of it: there in place led on AMD
    (C = 256 float32 0.55 vs 0.41 at 16 MiB).
    """
    cdef int64_t row = P.C * P.unit
    if T.staged >= 0:
        return T.staged
    if T.crowd_staged and P.unit != 2 and P.unit != 16 and (P.sq * P.unit) % _L1_WAY == 0:
        return True   # source rows in one L1 set: the tile reads them through its buffer
    if P.unit == 1 and (P.R == 16 and _crowd_l1_sets(P.dp, 16) > 4 or P.dp % _L1_WAY == 0):
        return True   # destination rows in a few L1 sets: the tile writes them whole
    if row <= 16:
        return True   # rows of one vector, written whole and in order
    if P.nbytes >= _LONG_ROWS_STAGED_FROM and P.R * P.unit >= _LONG_SOURCE_ROW and row > 256:
        return True   # long rows both ways in a large copy (measured on AMD and Intel)
    if P.nbytes * 8 <= T.llc_bytes:
        return False  # both operands well inside the last-level cache: in place
    if P.unit >= 4:
        return 64 < row <= 256
    return row <= 128


cdef int64_t _tile_side(const Plan* P, const Tuning* T, int64_t micro) noexcept nogil:
    """Items a side of a square tile transposed in place: rows of tile_row_bytes, or, when a
    copy is large enough to leave 64 such tiles (two threads balance on that many), a tile
    of up to tile_area_bytes (L2 / 8) of each operand, whichever is larger; a multiple of the
    micro-tile.

    The 256-byte row alone gave a 64 KiB tile to bytes but 16 KiB to floats and 8 KiB to
    doubles. Paired (tune_copy.py, memcpy time / strided time, AMD EPYC Zen 3, 512 KiB L2,
    1 and 2 threads), 64 KiB tiles for every item size against the row alone: float64 NHWC
    -> NCHW 0.57-0.74 -> 0.64-0.86 (4 MiB, 1 thread), 1.00-1.32 -> 1.30-1.46 (16 MiB, 2
    threads), column-major 0.44-0.49 -> 0.52-0.59; float32 column-major 0.43-0.44 -> 0.47-
    0.51 (4 MiB), NHWC -> NCHW with 256 channels 0.51-0.58 -> 0.62-0.66 (8 and 16 MiB, 1
    thread); the rest within the noise (+-10%: two identical uint8 configurations differ
    that much). 128 and 256 KiB tiles gave no more, and lost on bytes (2-D uint8, 4 MiB, 1
    thread: 0.62 at 64 KiB, 0.53 at both). Without the 64-tile floor, 1 MiB copies on 2
    threads lost (float32 2-D 0.57 -> 0.42, float64 0.73 -> 0.52): too few tiles for two
    threads. On an Intel Xeon (2 MiB L2: L2 / 8 is 256 KiB) 64, 128 and 256 KiB were level
    (1 MiB copies, every tune_copy.py case, 1 and 2 threads).
    """
    cdef int64_t tile = max(micro, T.tile_row_bytes // P.unit)
    cdef int64_t area = min(T.tile_area_bytes, P.nbytes // 64)
    if area <= tile * tile * P.unit:
        return tile
    tile = <int64_t>sqrt(<double>(area // P.unit))
    return max(micro, tile - tile % micro)


cdef int64_t _read_bytes(const Plan* P) noexcept nogil:
    """The source bytes a copy reads: its bytes written, less the dims it broadcasts (a fill
    reads one row of values, or one value).

    Copies stream once their footprint, read + written, is the last-level cache's (streams):
    before, once they wrote that much. Paired (memcpy time / strided time, AMD EPYC Zen 3,
    32 MiB L3), streamed against not at 16 and 24 MiB written, 1 and 2 threads: packed float32
    1.08-1.78 -> 1.33-2.05, padded -> packed 0.98-1.31 -> 1.28-1.86, packed -> padded
    1.02-1.38 -> 1.23-1.77; transposes (tune_copy.py) mostly level or ahead: 2-D float32 0.53
    -> 0.61, uint8 0.25-0.31 -> 0.41-0.55, NCHW -> NCHW32 uint8 0.38-0.48 -> 0.85-0.89,
    NCHW -> NHWC with 64 or 256 channels 0.61-0.70 -> 0.71-0.87; behind only where rows of
    one vector stream (NHWC -> NCHW uint8 with 16 channels, 0.89 -> 0.51), which no longer
    do (_plan_blocks). 3-channel images of 1080p float32 (24 MiB each way) against
    cv2.merge: 0.99x -> 1.44x (1 thread), 1.16x -> 1.74x (2 threads). On an Intel Xeon the
    footprint is counted the same way against its own threshold (strided._caches)."""
    cdef int64_t read = P.nbytes
    cdef int i
    if P.sp == 0 and P.R > 1:
        read //= P.R
    if P.sq == 0 and P.C > 1:
        read //= P.C
    for i in range(P.nouter):
        if P.ss[i] == 0 and P.n[i] > 1:
            read //= P.n[i]
    return read


cdef enum:
    _MANY_SOURCE_ROWS = 64   # whole rows from this many source rows take rows_big_bytes


cdef int64_t _whole_rows_room(const Plan* P, const Tuning* T, int64_t room) noexcept nogil:
    """The items a streamed tile of whole destination rows stages: ``rows_big_bytes`` (up to
    the whole staging buffer) for rows from _MANY_SOURCE_ROWS source rows or more when it is
    more than ``room``; ``rows_tile_bytes`` (an L1-sized tile) for rows longer than a line
    when every source row still gives the block a run of at least 1 KiB; else ``room`` (the
    staging tile). Rows of at most a line mostly skip the tile (tile.h: ST_STREAMS_DIRECT),
    and their blocks' size was measured as is.
    Measured on 128- and 256-byte pixels of floats and doubles; the rule also gives 16-byte
    items' 512-byte pixels the small tile (1 KiB runs: 64 of them), which was not timed."""
    cdef int64_t small = T.rows_tile_bytes // P.unit
    cdef int64_t big = T.rows_big_bytes // P.unit
    if big > room and P.C >= _MANY_SOURCE_ROWS:
        return big
    if (0 < small < room and P.C * P.unit > 64
            and small // P.C * P.unit >= 1024):
        return small
    return room


cdef void _plan_blocks(Plan* P, const Tuning* T) noexcept nogil:
    """Block extents: cache tiles for transposes, about block_bytes of rows for copies."""
    cdef int64_t tile, micro = 16 // P.unit if P.unit < 16 else 1
    cdef int64_t per = max(<int64_t>1, T.block_bytes // P.unit)
    # A copy that fits the caches stages through an L1-sized tile; a large one through an
    # L2-sized one (128 KiB), whose longer runs per row suit DRAM better (both measured: 128 KiB
    # was 0-15% faster than 64 KiB at 16 and 64 MiB).
    cdef int64_t room = (T.stage_bytes if P.nbytes >= T.stage_big_from else
                         min(T.stage_bytes, <int64_t>16384)) // P.unit
    cdef int i
    cdef bint stream = _copy_streams(T, P)
    # the kernels between a few planes and dense pixels (images) have their own threshold
    cdef bint stream_pixels = _pixels_stream(T, P.nbytes + _read_bytes(P))
    P.align = 0
    P.align_rows = 0
    P.down = 0
    P.stitch = 0
    P.fetch = 0
    P.runs = 0
    # Streaming stores skip the read-for-ownership of every destination line: a third of a
    # large copy's memory traffic. They pay off on whole lines written back to back (copies,
    # fills, and transposes staged in a tile whose rows are whole lines), and cost 1.5-3x when
    # lines are left partly written (a tile row starting mid-line): measured.
    P.nt = P.kind == ST_BLOCK_COPY and stream
    if P.kind == ST_BLOCK_TRANSPOSE and P.C >= micro and P.R >= micro and stream and not (
            P.R * P.unit == 16 and (P.unit & T.vector_rows_in_place) and not _staged(P, T)):
        # Tiles of whole short rows (the block is one run of the destination), or of short
        # runs of long rows. When every row starts at the same offset in its line, the block
        # columns are shifted onto the lines (_copy_blocks finds the shift from the address, and
        # the plan keeps a spare column); otherwise a strip of blocks writes the same rows left
        # to right and the lines straddling two blocks are finished from a carry
        # (st_stitch_row). Either way every line is streamed whole. (Stitching serves both,
        # but costs 2x on aligned rows: numpy's large arrays start 16 bytes into a line, and
        # every run then needs a carry.)
        # Not when the source's rows are one vector (NHWC -> NCHW with 16 byte, 8 uint16 or 4
        # float channels: R x 16 B) and the copy would otherwise be tiled in place: that
        # tile, with the short-side rule's long rows, reads the source in one run and writes
        # R long rows, and beat the streamed tile's short runs. Paired (memcpy time / strided
        # time, AMD EPYC Zen 3), streamed -> in place: 64 MiB 1 thread uint8 0.58 -> 0.91,
        # uint16 0.70 -> 0.96, float32 0.79 -> 1.06; 2 threads 1.36 -> 1.50, 1.17 -> 1.71,
        # 1.53 -> 1.82; 256 MiB 1 thread 0.49 -> 0.63, 0.48 -> 0.72, 0.45 -> 0.78; 512 MiB
        # 1 thread uint16 0.59 -> 0.65, float32 0.50 -> 0.70, 2 threads float32 level, uint16
        # 0.98-1.05 -> 0.85-0.87 (the one loss: two threads saturate the memory, where the
        # streamed tile's saved read-for-ownership counts). Byte planes that crowd an L1 set
        # (2048^2, 4 KiB multiples) would be staged in cache instead, which lost to the
        # streamed tile (512 MiB 1 thread 0.63 -> 0.33), so they stream. Rows of two vectors
        # were split (float32 with 8 channels ahead in place, uint16 with 16 and float64 with
        # 4 behind on 2 threads), so they stream. On an Intel Xeon (cold, 64 MiB, rotating
        # over 1 GiB) in place was level for bytes and uint16 (0.99-1.07x) and behind for
        # floats and doubles (0.82-0.88x, 1 and 2 threads): there vector_rows_in_place = 0
        # (strided._caches), and they stream. On an AMD EPYC Zen 5 (64 MiB cold, both orders)
        # streaming was ahead for bytes, uint16 (1.16-1.29x) and float32 (2 threads
        # 1.18-1.25x, 1 thread level) and behind for float64 (0.66-0.93x): there the mask is 8
        # (strided._caches), and they stream.
        P.kind = ST_BLOCK_TBUF
        P.nt = ST_NT
        P.runs = ST_SETS8 if T.crowd_rows >= 8 else 0
        if T.pix32_plain and P.unit == 1 and P.C == 32 and P.dp == 32:
            P.runs |= ST_PIX32_PLAIN   # 8-bit NCHW32 over spread planes: ordinary stores
        P.runs |= T.sweep_ahead << ST_AHEAD_SHIFT
        P.fetch = P.unit <= T.fetch_next
        if _nt_whole_rows(P, T):
            P.BC = P.C
            P.BR = min(P.R, max(micro, _whole_rows_room(P, T, room) // P.BC))
        elif _lines_agree(P, P.dp, P.ds):
            P.BC = _nt_tile_run(P, T) // P.unit
            P.BR = min(P.R, max(micro, room // P.BC))
            P.align = 1
        else:
            P.BC = _nt_stitch_run(T, P.unit) // P.unit
            P.BR = min(P.R, max(micro, min(room // P.BC, T.stitch_tile_rows)))
            P.stitch = 1
    elif P.kind == ST_BLOCK_TRANSPOSE and P.C >= micro and P.R >= micro and not _staged(P, T):
        tile = _tile_side(P, T, micro)
        P.BR = min(P.R, tile)
        P.BC = min(P.C, tile)
        # A side of at most a quarter tile (NCHW <-> NHWC with 16 float channels, 4 or 8
        # doubles, 16-64 bytes) leaves the square tile's items to the other side: a 64 x 16
        # float tile crossed the long side 64 items at a time. Paired against the square tile
        # (AMD EPYC Zen 3, 4 and 16 MiB, 1 and 2 threads): float32 with 8 or 16 channels
        # 1.04-1.32x, float64 with 4 or 8 1.20-1.65x, uint16 with 8-32 1.01-1.19x, uint8 with
        # 16-64 0.99-1.17x; 24-48 float channels (a third to three quarters of a tile) were
        # level (0.96-1.05x), so they kept the square. (Measured on 64-float tiles; since
        # tiles grow with the copy (_tile_side), a 4 MiB copy's 128-float tile gives the long
        # side to 24 and 32 channels too, and longer 48-channel squares: paired against the
        # 64-float tiles, 4 MiB, 1 and 2 threads, NCHW -> NHWC float32 with 24 channels
        # 1.07-1.08x, 48 channels 1.09-1.13x, float64 with 12 1.11-1.21x, NHWC -> NCHW
        # float32 with 32 channels 0.90-1.01x.) Intel unmeasured.
        if 4 * P.BC <= tile:
            P.BR = min(P.R, max(tile, tile * tile // P.BC // micro * micro))
        elif 4 * P.BR <= tile:
            P.BC = min(P.C, max(tile, tile * tile // P.BR // micro * micro))
        # Blocks start on the lines of both sides' runs (the first block row and column are
        # the items before them): the micro-tiles' loads and stores then never straddle two
        # lines. numpy's large arrays start 16 bytes into a line; in the L2 (Intel Xeon, 1
        # thread, both arrays 16 bytes into a line against 64-byte aligned): float32 and
        # float64 2-D transposes ran at 0.56-0.70x, uint8 0.59-0.79x, NHWC -> NCHW with 64
        # float channels 0.48x; with the blocks on the lines 0.82-1.0x (misaligned against
        # before: 1.11-1.76x). The first block's extra pass is why not 1.0x everywhere;
        # heads tiled again in every block by the kernel cost more (0.93-1.3x against
        # before). AMD unmeasured.
        P.align = _lines_agree(P, P.dp, P.ds)
        P.align_rows = _lines_agree(P, P.sq, P.ss)
    elif P.kind == ST_BLOCK_TRANSPOSE and P.C >= micro and P.R >= micro:
        # a staging tile of at most ST_TILE_BUF bytes, square unless one side is short
        P.kind = ST_BLOCK_TBUF
        P.runs = ST_RUNS if T.crowd_runs else 0
        tile = max(micro, <int64_t>sqrt(<double>room))
        tile -= tile % micro
        P.BC = min(P.C, tile)
        if P.R < tile and P.nbytes < T.stage_big_from:
            # Fewer destination rows than a square tile's (NHWC -> NCHW with 16-64 byte
            # channels, planes crowding an L1 set): the L1-sized room goes to longer rows, not
            # to 16 rows of 128 bytes. Paired, 1 thread (AMD EPYC Zen 3), uint8 with 16
            # channels on 64^2-256^2 planes: 1 MiB 1.44-1.80x, 4 MiB 1.32-1.64x (2 threads
            # 1.10-1.43x); 32 channels 1.03-1.40x, 64 channels 1.04-1.08x. Not the large
            # copies' 128 KiB room: there rows of 8 KiB were slower than the square tile's 352
            # bytes (16 MiB, 0.59-0.89x). Intel unmeasured.
            P.BC = min(P.C, max(tile, room // P.R // micro * micro))
        P.BR = min(P.R, room // P.BC)
    elif P.kind == ST_BLOCK_TRANSPOSE and P.C < micro:
        # interleaving a few source planes into short destination rows; dense pixels of 3 or
        # 4 items of 1 or 2 bytes and of 3 4-byte items stream their whole lines (the vector
        # kernels)
        P.BC = P.C
        P.BR = min(P.R, max(<int64_t>1, per // P.C))
        P.nt = ST_NT if stream_pixels and P.dp == P.C and (
            P.unit <= 2 and 3 <= P.C <= 4 or P.unit == 4 and P.C == 3) else 0
    elif P.kind == ST_BLOCK_TRANSPOSE and P.R < micro:
        # a few destination planes out of dense source pixels (HWC -> CHW): every plane in each
        # block (the deinterleave kernels gather all planes of a pixel group at once), and
        # whole groups of pixels (64 covers a group at every width)
        P.BR = P.R
        P.BC = min(P.C, max(<int64_t>64, per // P.R // 64 * 64))
        # whole lines of the planes stream (the AVX2 kernels, every plane of the pixels): a
        # third of the traffic saved. Streamed, the blocks start on the planes' lines (when
        # the planes share a line offset): a block boundary inside a line left each plane a
        # line written in two parts with ordinary stores, each read for ownership from
        # memory. AMD EPYC Zen 5, 1080 x 1920 x 3 uint8, cold, streamed, 1 thread, against
        # cv2.split alongside: 1.12x its time before, 0.94-1.01x after; with blocks of 16 KiB
        # 1.59x before, 1.02-1.09x after.
        P.nt = ST_NT if stream_pixels and P.R == P.sq else 0
        P.align = P.nt != 0 and _lines_agree(P, P.dp, P.ds)
        P.runs = ((ST_DEINT16 if T.deint_narrow else 0)
                  | (ST_DEINT_ALIAS if T.deint_alias_nt else 0))
    else:
        P.BC = min(P.C, per)
        P.BR = min(P.R, max(<int64_t>1, per // P.BC))
    if P.nt and T.nt_pages:
        P.nt |= ST_PAGES
    if P.nt and T.stitch_rows and P.kind == ST_BLOCK_COPY:
        P.nt |= ST_ROWS_JOIN
    P.nbr = _ceil_div_pos(P.R, P.BR) + P.align_rows
    P.nbc = _ceil_div_pos(P.C, P.BC) + P.align
    P.down = (P.kind == ST_BLOCK_TBUF and (P.nt & ST_NT) != 0 and not P.stitch
              and T.down_from > 0 and P.nbc >= T.down_from)
    P.items = P.nbr * P.nbc
    for i in range(P.nouter):
        P.items *= P.n[i]


cdef inline int _next_block(const Plan* P, int64_t br, int64_t bc) noexcept nogil:
    """Where block (br, bc)'s successor in its strip's order lies, for the kernel to fetch its
    source: the columns to the right (ST_FETCH), the rows below when the strip is one block
    wide or the blocks run down (ST_FETCH_DOWN), or nowhere it can name (0: the last block)."""
    if P.down:
        return ST_FETCH_DOWN if br + 1 < P.nbr else 0
    if bc + 1 < P.nbc:
        return ST_FETCH
    if P.nbc == 1 and br + 1 < P.nbr:
        return ST_FETCH_DOWN
    return 0


cdef inline int64_t _block_span(int64_t b, int64_t B, int64_t total, bint aligned,
                                int64_t lead, int64_t* start) noexcept nogil:
    """Where block b of blocks of B items along an extent of ``total`` starts (``start``) and
    how many items it holds (0 or less: none). With ``aligned``, block 0 is the ``lead``
    items before the first line boundary and block k > 0 starts at lead + (k - 1) * B."""
    if not aligned:
        start[0] = b * B
        return min(B, total - start[0])
    if b == 0:
        start[0] = 0
        return min(lead, total)
    start[0] = lead + (b - 1) * B
    return min(B, total - start[0])


cdef void _run_blocks(const Plan* P, char* dst, const char* src, int64_t lo,
                      int64_t hi, int64_t lead, int64_t rlead) noexcept nogil:
    """Run blocks lo..hi-1 of the plan (dst and src already shifted for flipped dims): a
    strip (one block row) left to right, then the next; with P.down one block column top to
    bottom, then the next.

    With P.align, block column 0 is the ``lead`` columns before the destination's first line
    boundary, and column k > 0 starts at lead + (k - 1) * BC; with P.align_rows, block row 0
    is the ``rlead`` rows before the source's first line boundary, and so on; empty blocks
    are skipped. Block columns are the innermost index (block rows with P.down), so the
    blocks of one strip (the same rows) run one after another; with P.stitch the first
    block of a strip or of this share is marked ST_FRESH and the last ST_LAST (see
    st_stitch_row).
    """
    cdef int64_t idx[MAX_NDIM]
    cdef int64_t item = lo, rest, br, bc, doff = 0, soff = 0, r0, c0, width, height
    cdef int flags
    cdef int64_t u = P.unit
    cdef int i
    cdef char* scratch = NULL
    # the block index that moves first (bc along a strip, br down a column) and the other
    cdef int64_t* inner = &br if P.down else &bc
    cdef int64_t* outer = &bc if P.down else &br
    cdef int64_t n_inner = P.nbr if P.down else P.nbc
    cdef int64_t n_outer = P.nbc if P.down else P.nbr
    if lo >= hi:
        return
    if P.kind == ST_BLOCK_TBUF:
        scratch = st_scratch()   # this thread's staging tile (thread-local, not on the stack)
    inner[0] = lo % n_inner
    rest = lo // n_inner
    outer[0] = rest % n_outer
    rest = rest // n_outer
    for i in range(P.nouter - 1, -1, -1):
        idx[i] = rest % P.n[i]
        rest = rest // P.n[i]
        doff += idx[i] * P.ds[i]
        soff += idx[i] * P.ss[i]
    while True:
        height = _block_span(br, P.BR, P.R, P.align_rows, rlead, &r0)
        width = _block_span(bc, P.BC, P.C, P.align, lead, &c0)
        flags = P.nt | P.runs
        if P.fetch:
            flags |= _next_block(P, br, bc)
        if P.stitch:
            flags |= ST_STITCH
            if bc == 0 or item == lo:
                flags |= ST_FRESH
            if bc == P.nbc - 1 or item + 1 == hi:
                flags |= ST_LAST
        if width > 0 and height > 0:
            st_copy_block(P.kind, P.unit,
                          dst + (doff + r0 * P.dp + c0 * P.dq) * u, P.dp, P.dq,
                          src + (soff + r0 * P.sp + c0 * P.sq) * u, P.sp, P.sq,
                          height, width, flags, scratch)
        item += 1
        if item >= hi:
            if P.nt:
                st_store_fence()
            return
        inner[0] += 1
        if inner[0] < n_inner:
            continue
        inner[0] = 0
        outer[0] += 1
        if outer[0] < n_outer:
            continue
        outer[0] = 0
        i = P.nouter - 1   # odometer step over the outer dims
        while i >= 0:
            idx[i] += 1
            doff += P.ds[i]
            soff += P.ss[i]
            if idx[i] < P.n[i]:
                break
            doff -= idx[i] * P.ds[i]
            soff -= idx[i] * P.ss[i]
            idx[i] = 0
            i -= 1


cdef void _copy_blocks(const void* plan, char* dst, const char* src, int64_t lo, int64_t hi,
                       char* scratch) noexcept nogil:
    """A copy's blocks_fn (run_team): blocks lo..hi-1 (its staging tile is thread-local)."""
    cdef const Plan* P = <const Plan*>plan
    _run_blocks(P, dst, src, lo, hi, 0 if not P.align else _lead(P, dst),
                0 if not P.align_rows else _lead(P, src))


# ---- the engines' one runner: a team claiming runs of blocks ---------------------------------

cdef void run_team(const void* plan, blocks_fn run, char* dst, const char* src, int64_t items,
                   int64_t most, int64_t chunks_per_thread, int nthreads, bint counts,
                   char* scratch, int64_t scratch_bytes) noexcept nogil:
    """Run blocks 0..items-1 of a plan of either engine on a team sized by team_enter for the
    thread argument ``nthreads`` and work for ``most`` threads; thread t stages in ``scratch +
    t * scratch_bytes``. The threads claim runs of blocks from one counter, about
    ``chunks_per_thread`` runs a thread (0: one fixed share each, for paired measurements).

    Not a fixed share per thread: on a machine where another process, or another library's
    OpenMP threads still spinning after their own work, holds a core, the thread that runs
    late claims fewer runs instead of holding the whole call back; a worker of a default team
    gives its core to another call meanwhile and takes it back when it is free (team_keeps).
    Paired against fixed shares (AMD EPYC, 2 threads): a 1080x1920 normalise 0.83x the time.
    """
    cdef Team T
    cdef int64_t next = 0, chunk
    cdef int nt = team_enter(&T, nthreads, most, counts)
    if nt <= 1:
        run(plan, dst, src, 0, items, scratch)
        team_leave(&T)
        return
    if chunks_per_thread == 0:
        chunk = (items + nt - 1) // nt
    else:
        chunk = max(<int64_t>1, items // (nt * chunks_per_thread))
    with parallel(num_threads=nt):
        _claim_runs(plan, run, dst, src, items, &next, chunk, scratch, scratch_bytes, &T)
    team_leave(&T)


cdef void _claim_runs(const void* plan, blocks_fn run, char* dst, const char* src,
                      int64_t items, int64_t* next, int64_t chunk, char* scratch,
                      int64_t scratch_bytes, Team* T) noexcept nogil:
    """Inside the team: claim runs of ``chunk`` blocks until none is left."""
    cdef int64_t lo
    cdef int t = strided_omp_thread_num()
    cdef char* mine = scratch + t * scratch_bytes if scratch != NULL else NULL
    while True:
        if t != 0 and not team_keeps(T, next, items):
            return
        lo = st_claim(next, chunk)
        if lo >= items:
            return
        run(plan, dst, src, lo, min(lo + chunk, items), mine)


cdef inline int64_t _lead(const Plan* P, const char* p) noexcept nogil:
    """Items before the first line boundary of the run at p: the block columns before the
    destination's (P.align plans: its rows share it, _lines_agree) or the block rows before
    the source's (P.align_rows: its runs share it)."""
    if <uintptr_t>p % P.unit:
        return 0
    return ((64 - <int64_t>(<uintptr_t>p % 64)) % 64) // P.unit


cdef void execute(const Plan* P, char* dst, const char* src, int nthreads, int64_t most,
                  char* scratch) noexcept nogil:
    """Run a plan of either family: on the calling thread when it keeps the GIL and one thread
    is asked for, else on a team for the thread argument ``nthreads`` (see copy_threads;
    team_enter sizes it) of at most ``most`` threads, thread t staging in ``scratch + t *
    P.scratch_bytes``."""
    dst += P.dst_shift
    src += P.src_shift
    if nthreads == 1 and P.keeps_gil:   # small work with the GIL: no team
        P.run(P, dst, src, 0, P.items, scratch)
        return
    run_team(P, P.run, dst, src, P.items, most, P.chunks_per_thread, nthreads, not P.keeps_gil,
             scratch, P.scratch_bytes)


ctypedef struct _Many:
    const Plan* P
    char** dsts            # the copies' addresses, flipped dims' shifts added
    const char** srcs


cdef void _many_blocks(const void* many, char* dst, const char* src, int64_t lo, int64_t hi,
                       char* scratch) noexcept nogil:
    """execute_many's blocks_fn: blocks lo..hi-1 of the copies' blocks numbered copy-major
    (copy k holds blocks k * items .. (k + 1) * items - 1 of the job)."""
    cdef const _Many* M = <const _Many*>many
    cdef const Plan* P = M.P
    cdef int64_t k, first, last
    while lo < hi:
        k = lo // P.items
        first = lo - k * P.items
        last = min(P.items, first + (hi - lo))
        P.run(P, M.dsts[k], M.srcs[k], first, last, scratch)
        lo += last - first


cdef void execute_many(const Plan* P, char** dsts, const char** srcs, int64_t copies,
                       int nthreads, int64_t most, char* scratch) noexcept nogil:
    """Run one plan of either family on ``copies`` address pairs as one job (a batch of
    images of one layout into one tensor): the threads of one team claim runs of blocks
    across all of them, so a team is as busy on 64 small images as on one large one. The
    addresses are adjusted in place by the plan's shifts (the caller's arrays, used once)."""
    cdef _Many M
    cdef int64_t k
    for k in range(copies):
        dsts[k] += P.dst_shift
        srcs[k] += P.src_shift
    M.P, M.dsts, M.srcs = P, dsts, srcs
    if nthreads == 1 and P.keeps_gil:
        _many_blocks(&M, NULL, NULL, 0, copies * P.items, scratch)
        return
    run_team(&M, _many_blocks, NULL, NULL, copies * P.items, most, P.chunks_per_thread,
             nthreads, not P.keeps_gil, scratch, P.scratch_bytes)


# ---- how many threads: one budget of cores for every call running at once --------------------
# Several Python threads may copy at once (a data loader's threads, a server's requests). Each
# call asking for the default team would otherwise start OpenMP's default number of threads,
# and N callers would run N times the cores. So the threads of the calls running now are
# counted, process-wide (both engines share this count): each call that runs without the GIL
# counts its own thread, and a team its workers too. A call with the default thread count
# starts a team of at most the cores the others leave free (at least its own thread), and
# when a later call needs a core that an earlier default team holds, a worker of that team
# gives it back before claiming its next chunk (team_yields): the count comes back within the
# cores after at most a chunk of work, whoever came first. The worker that gave its core back
# naps while its team has work left, and takes a core again as soon as one is free
# (team_rejoins): when the later call ends first, the earlier one gets its cores back for the
# rest of its copy instead of finishing on fewer threads than the machine has (two callers on 2
# cores: the one that ends last would otherwise run its tail on one thread, beside an idle
# core). An explicit num_threads is honoured
# exactly (a benchmark asks for what it measures), and counted, so that default teams make
# room for it.

cdef extern from *:
    """
    static int64_t st_busy_threads = 0;   /* threads of strided's calls running now */
    #if defined(__GNUC__) || defined(__clang__)
    static inline int64_t st_busy_add(int64_t n)
    {
        return __atomic_add_fetch(&st_busy_threads, n, __ATOMIC_RELAXED);
    }
    static inline int64_t st_busy_now(void)
    {
        return __atomic_load_n(&st_busy_threads, __ATOMIC_RELAXED);
    }
    static inline int64_t st_team_sub(int64_t *counted)
    {
        return __atomic_sub_fetch(counted, 1, __ATOMIC_RELAXED);
    }
    static inline int64_t st_team_add(int64_t *counted)
    {
        return __atomic_add_fetch(counted, 1, __ATOMIC_RELAXED);
    }
    /* Count one more thread if the count is below `cores` (exactly: no moment above it). */
    static inline int st_busy_take(int64_t cores)
    {
        int64_t now = __atomic_load_n(&st_busy_threads, __ATOMIC_RELAXED);
        while (now < cores) {
            if (__atomic_compare_exchange_n(&st_busy_threads, &now, now + 1, 1,
                                            __ATOMIC_RELAXED, __ATOMIC_RELAXED))
                return 1;
        }
        return 0;
    }
    #else
    static inline int64_t st_busy_add(int64_t n)
    {
        int64_t now;
    #pragma omp atomic capture
        { st_busy_threads += n; now = st_busy_threads; }
        return now;
    }
    static inline int64_t st_busy_now(void)
    {
        int64_t now;
    #pragma omp atomic read
        now = st_busy_threads;
        return now;
    }
    static inline int64_t st_team_sub(int64_t *counted)
    {
        int64_t now;
    #pragma omp atomic capture
        { *counted -= 1; now = *counted; }
        return now;
    }
    static inline int64_t st_team_add(int64_t *counted)
    {
        int64_t now;
    #pragma omp atomic capture
        { *counted += 1; now = *counted; }
        return now;
    }
    /* Count one more thread if the count is below `cores` (the count may pass it for an
     * instant, between the add and the undo). */
    static inline int st_busy_take(int64_t cores)
    {
        if (st_busy_add(1) <= cores)
            return 1;
        st_busy_add(-1);
        return 0;
    }
    #endif
    /* Sleep a moment: a worker waiting for a core. 50 us; on Windows, whose sleeps last a
     * timer tick (~16 ms), the rest of the time slice is given to a thread ready to run. */
    #ifdef _WIN32
    #ifndef WIN32_LEAN_AND_MEAN
    #define WIN32_LEAN_AND_MEAN
    #endif
    #ifndef NOMINMAX
    #define NOMINMAX
    #endif
    #include <windows.h>
    static inline void st_nap(void) { Sleep(0); }
    #else
    #include <time.h>
    static inline void st_nap(void)
    {
        struct timespec t = {0, 50000};
        nanosleep(&t, NULL);
    }
    #endif
    """
    int64_t st_busy_add(int64_t n) noexcept nogil
    int64_t st_busy_now() noexcept nogil
    int64_t st_team_sub(int64_t* counted) noexcept nogil
    int64_t st_team_add(int64_t* counted) noexcept nogil
    bint st_busy_take(int64_t cores) noexcept nogil
    void st_nap() noexcept nogil


cdef int team_enter(Team* T, int nthreads, int64_t most, bint counts) noexcept nogil:
    """Size a team (returned, and in T.size) for ``nthreads`` (the engine's thread argument: 0
    means the default, see copy_threads) and work enough for ``most`` threads: 1 for serial
    work; ``nthreads`` when given; else the default, bounded by the cores that the calls
    running now leave free (at least 1). ``counts``: the call runs without the GIL, long
    enough to count its threads against the cores (a team always counts). Hand T to
    team_leave when the team is done."""
    cdef int want = nthreads if nthreads > 0 else default_threads()
    cdef int64_t busy
    T.counted = 0
    T.budgeted = 0
    if most < want:
        want = <int>max(<int64_t>1, most)
    if not STRIDED_OPENMP_ENABLED or st_forked_child:
        want = 1
    T.size = want
    if want <= 1 and not counts:
        return 1
    busy = st_busy_add(want) - want   # the other calls' threads
    T.counted = want
    if nthreads == 0 and want > 1 and busy + want > _CORES:
        T.size = <int>max(<int64_t>1, min(<int64_t>want, _CORES - busy))
        st_busy_add(T.size - want)
        T.counted = T.size
    T.budgeted = nthreads == 0 and T.size > 1
    return T.size


cdef bint team_yields(Team* T) noexcept nogil:
    """For a worker (not the calling thread) of a team, before it claims more work: whether it
    gives its core back now (it then stops claiming; the others finish the copy), because the
    threads counted exceed the cores and its team took the default size."""
    if not T.budgeted or st_busy_now() <= _CORES:
        return False
    st_team_sub(&T.counted)
    st_busy_add(-1)
    return True


cdef bint team_rejoins(Team* T) noexcept nogil:
    """For a worker that gave its core back (team_yields): take a core again if the threads
    counted are below the cores now; counted by its team again when it does."""
    if not st_busy_take(_CORES):
        return False
    st_team_add(&T.counted)
    return True


cdef bint team_keeps(Team* T, int64_t* next, int64_t items) noexcept nogil:
    """For a worker (not the calling thread) of a team whose blocks are claimed from the
    counter ``next`` (``items`` in all), before it claims more: whether it goes on. A worker
    of a default-sized team gives its core back while the threads counted exceed the cores
    (team_yields), then naps while blocks are left unclaimed, and goes on as soon as a core is
    free again (team_rejoins); it stops when none is left."""
    if not team_yields(T):
        return True
    while st_claimed(next) < items:
        st_nap()
        if team_rejoins(T):
            return True
    return False


cdef void team_leave(Team* T) noexcept nogil:
    """Hand back the threads team_enter counted (less those that gave their core back)."""
    if T.counted:
        st_busy_add(-T.counted)
        T.counted = 0


def _busy_threads():
    """Threads of strided's teams running now, in this process (for tests)."""
    return st_busy_add(0)


def _team(num_threads=None, most=1 << 30):
    """``(team size, counted)``: what a copy without the GIL, with ``num_threads`` and work
    for ``most`` threads, would run on now; its threads stay counted until
    ``_team_leave(counted)``. For tests."""
    cdef Team T
    team_enter(&T, copy_threads(num_threads), as_int64(most, "most"), True)
    return T.size, T.counted


def _team_leave(counted):
    """Hand back what ``_team`` counted. For tests."""
    cdef Team T
    T.counted = as_int64(counted, "counted")
    team_leave(&T)


def _team_yields(num_threads=None, later=1):
    """Whether a worker of the team that ``_team(num_threads)`` would start now gives its core
    back once a later call counts ``later`` threads (all counts are handed back). For tests."""
    cdef Team T
    cdef bint gives
    cdef int64_t n = as_int64(later, "later")
    team_enter(&T, copy_threads(num_threads), 1 << 30, True)
    st_busy_add(n)
    gives = team_yields(&T)
    st_busy_add(-n)
    team_leave(&T)
    return bool(gives)


def _team_rejoins(later=1):
    """A worker of the default team that ``_team()`` would start now, while a later call
    counts ``later`` threads and after it ends: ``(gives its core back, takes one again while
    the later call runs, takes one again after it, counted as it was, goes on claiming, stops
    once every block is claimed while the cores are busy again)``. All counts are handed back.
    For tests."""
    cdef Team T
    cdef int64_t n = as_int64(later, "later"), counted, claimed = 1
    cdef bint gives, early, late, keeps, stops
    team_enter(&T, 0, 1 << 30, True)
    counted = T.counted
    st_busy_add(n)
    gives = team_yields(&T)
    early = team_rejoins(&T)
    st_busy_add(-n)
    late = team_rejoins(&T)
    counted = T.counted == counted
    keeps = team_keeps(&T, &claimed, 2)
    st_busy_add(n)
    stops = not team_keeps(&T, &claimed, 1)
    st_busy_add(-n)
    team_leave(&T)
    return bool(gives), bool(early), bool(late), bool(counted), bool(keeps), bool(stops)


def _cores():
    """The cores this process may run on (the budget of the default teams)."""
    return _CORES


# ---- plan cache ------------------------------------------------------------------------------
# Repeated copies between the same pair of layouts (a data loader's batches) skip the planner
# and the destination's exact overlap test: a direct-mapped table keyed by (sizes, dst strides,
# src strides, itemsize). A plan is always copied out of its slot into the caller's own before
# anything else happens, and no pointer into the table leaves _get_plan: another thread may
# replace the slot as soon as the GIL is free (an overlap test releases it), and under
# free-threaded Python at any moment, so the table is read and written under a lock there
# (PyMutex). With the GIL the lock is nothing: the GIL is held from lookup to copy.

cdef extern from *:
    """
    #ifdef Py_GIL_DISABLED
    static PyMutex st_plan_lock = {0};
    #define ST_PLAN_LOCK() PyMutex_Lock(&st_plan_lock)
    #define ST_PLAN_UNLOCK() PyMutex_Unlock(&st_plan_lock)
    #else
    #define ST_PLAN_LOCK() ((void)0)
    #define ST_PLAN_UNLOCK() ((void)0)
    #endif
    """
    void ST_PLAN_LOCK() noexcept nogil
    void ST_PLAN_UNLOCK() noexcept nogil

cdef enum:
    _CACHE_SLOTS = 64
    _CACHE_MAX_ND = 8

ctypedef struct _CacheEntry:
    int nd                      # -1: empty slot
    int dst_overlaps
    int64_t itemsize
    int64_t key[3 * _CACHE_MAX_ND]
    Plan plan

cdef _CacheEntry _cache[_CACHE_SLOTS]


cdef void _plan_cache_clear() noexcept:
    cdef int i
    ST_PLAN_LOCK()
    for i in range(_CACHE_SLOTS):
        _cache[i].nd = -1
    ST_PLAN_UNLOCK()


_plan_cache_clear()


cdef inline uint64_t _mix(uint64_t h, int64_t v) noexcept nogil:
    h ^= <uint64_t>v
    return h * <uint64_t>0x100000001b3ULL


cdef int _dst_overlaps(int nd, const int64_t* sizes, const int64_t* strides) except -1:
    """0 when no two elements of the destination share memory; 1 when two do, or when that
    cannot be decided within the default work budget (spans fit int64)."""
    cdef int flags = c_flags(nd, sizes, strides), result
    cdef int64_t budget = default_max_work()   # read with the GIL: _tune may set it
    if flags & (FLAG_PACKED | FLAG_EMPTY):
        return 0
    if flags & FLAG_BROADCAST:
        return 1
    with nogil:
        result = c_overlaps(nd, sizes, strides, budget)
    return result != 0


cdef inline void _plan_copy_out(Plan* to, const Plan* plan) noexcept nogil:
    """``*to = *plan`` for a copy's plan, but only what a copy reads: a plan is copied on
    every cached copy, and MAX_NDIM entries of four arrays are 2 KiB. Left out: the
    conversion's fields (from ``stype`` on) and parameter strides, and the outer dims unused."""
    cdef size_t n = <size_t>plan.nouter * sizeof(int64_t)
    memcpy(to, plan, <size_t>(<const char*>&plan.stype - <const char*>plan))
    memcpy(&to.n[0], &plan.n[0], n)
    memcpy(&to.ds[0], &plan.ds[0], n)
    memcpy(&to.ss[0], &plan.ss[0], n)


cdef inline bint _cache_hit(const _CacheEntry* e, int nd, const int64_t* sizes,
                            const int64_t* dstr, const int64_t* sstr,
                            int64_t itemsize) noexcept nogil:
    cdef int i
    if e.nd != nd or e.itemsize != itemsize:
        return False
    for i in range(nd):
        if (e.key[3 * i] != sizes[i] or e.key[3 * i + 1] != dstr[i]
                or e.key[3 * i + 2] != sstr[i]):
            return False
    return True


cdef int _get_plan(int nd, const int64_t* sizes, const int64_t* dstr, const int64_t* sstr,
                   int64_t itemsize, Plan* plan) except -1:
    """Plan a non-empty copy into ``*plan`` (the caller's own); return 1, planning nothing,
    when the destination overlaps itself, else 0. Ranks up to _CACHE_MAX_ND go through the
    plan cache."""
    cdef uint64_t h = <uint64_t>0xcbf29ce484222325ULL
    cdef _CacheEntry* e
    cdef int i, overlapping
    if nd > _CACHE_MAX_ND:
        if _dst_overlaps(nd, sizes, dstr):
            return 1
        _plan_copy(plan, nd, sizes, dstr, sstr, itemsize, &_TUNING)
        return 0
    h = _mix(h, nd)
    h = _mix(h, itemsize)
    for i in range(nd):
        h = _mix(_mix(_mix(h, sizes[i]), dstr[i]), sstr[i])
    e = &_cache[(h >> 32) % _CACHE_SLOTS]
    ST_PLAN_LOCK()
    if _cache_hit(e, nd, sizes, dstr, sstr, itemsize):
        overlapping = e.dst_overlaps
        if not overlapping:
            _plan_copy_out(plan, &e.plan)
        ST_PLAN_UNLOCK()
        return overlapping
    ST_PLAN_UNLOCK()
    # A miss: decide and plan outside the lock (the overlap test may take a while, without
    # the GIL), then fill the slot.
    overlapping = _dst_overlaps(nd, sizes, dstr)
    if not overlapping:   # (the GIL is held: the knobs are read as they are)
        _plan_copy(plan, nd, sizes, dstr, sstr, itemsize, &_TUNING)
    ST_PLAN_LOCK()
    e.nd = nd
    e.itemsize = itemsize
    e.dst_overlaps = overlapping
    if not overlapping:
        _plan_copy_out(&e.plan, plan)
    for i in range(nd):
        e.key[3 * i] = sizes[i]
        e.key[3 * i + 1] = dstr[i]
        e.key[3 * i + 2] = sstr[i]
    ST_PLAN_UNLOCK()
    return overlapping


# ---- running a copy --------------------------------------------------------------------------

cdef int _copy_planned(char* dst, const char* src, int nd, const int64_t* sizes,
                       const int64_t* dstr, const int64_t* sstr, int64_t itemsize,
                       int nthreads, const Plan* plan, int64_t dlo, int64_t dhi,
                       int64_t slo, int64_t shi) except -1:
    """Run a planned, validated, non-empty copy; exact even when the two share memory.
    ``plan`` is the caller's own (never a cache slot: the GIL may be released here).

    ``dlo..dhi`` and ``slo..shi`` are the element spans of the two layouts (c_span, element 0
    at 0). Precondition: both byte spans fit int64 and the destination does not overlap itself.
    Memory the two share goes through the engine's overlap routes (copy_overlapping).
    """
    cdef Reader R
    cdef Tuning T
    if not (dst + (dhi + 1) * itemsize <= src + slo * itemsize
            or src + (shi + 1) * itemsize <= dst + dlo * itemsize):
        T = tuning_now()
        R.read = NULL
        R.ctx = NULL
        R.dsz = R.ssz = itemsize
        R.tuning = &T
        if copy_overlapping(dst, src, nd, sizes, dstr, sstr, NULL, &R, nthreads) == 0:
            return 0
    if plan.keeps_gil:   # a few microseconds: not worth a GIL round trip
        execute(plan, dst, src, 1, 1, NULL)
        return 0
    with nogil:
        execute(plan, dst, src, nthreads, plan.most, NULL)
    return 0


# ---- source and destination sharing memory: the engine's one overlap policy ------------------
# Both engines come here once the byte ranges of a call's two layouts meet (a copy: items of one
# size; a conversion: a Reader that converts while it reads). The decision is exact: layouts
# whose ranges meet but share no byte run directly. Otherwise, in bounded memory where the
# geometry allows:
# - a shift (the same element strides at another address; a conversion in place, items of the
#   same or another size) goes through a small buffer in the order that reads every source
#   slab before a write reaches it;
# - an in-place transpose (two equal dims whose strides are swapped, items of one size) goes
#   through two tiles at a time;
# - anything else stages the whole source, the temporary had before any byte is written.
# Every route reads a block of the source into a packed buffer of destination items, then
# writes the buffer out with the copy engine: only the read differs between a copy and a
# conversion (Reader.read).

cdef int copy_overlapping(char* dst, const char* src, int nd, const int64_t* sizes,
                          const int64_t* dstr, const int64_t* sstr, const int64_t* pstr,
                          const Reader* R, int nthreads) except -1:
    """The overlap policy (above) for a validated, non-empty call whose byte ranges meet:
    return 0 when it has done the call, 1 (nothing done) when the two share no byte after all
    and the caller runs its own plan. ``pstr``: a conversion's parameter strides, or NULL."""
    cdef int shared, a, b
    cdef int64_t delta = <int64_t>(<intptr_t>src - <intptr_t>dst)
    cdef int64_t budget = default_max_work()   # read with the GIL: _tune may set it
    with nogil:
        shared = c_shares(nd, sizes, dstr, R.dsz, nd, sizes, sstr, R.ssz, delta, budget)
    if not shared:   # undecided counts as shared: the buffered routes are right either way
        return 1
    if _same_strides(nd, sizes, dstr, sstr):
        if dst != src or R.read != NULL:   # else the copy is the identity
            _copy_shifted(dst, src, nd, sizes, dstr, pstr, R, nthreads)
        return 0
    if (dst == src and R.dsz == R.ssz
            and _swapped_pair(nd, sizes, dstr, sstr, &a, &b)):
        return _copy_swapped(dst, nd, sizes, dstr, sstr, pstr, R, nthreads, a, b)
    return _copy_staged(dst, src, nd, sizes, dstr, sstr, pstr, R, nthreads)


cdef bint _same_strides(int nd, const int64_t* sizes, const int64_t* a,
                        const int64_t* b) noexcept nogil:
    cdef int i
    for i in range(nd):
        if sizes[i] > 1 and a[i] != b[i]:
            return False
    return True


cdef enum:
    _STAGE_READ = 1    # src -> tmp
    _STAGE_WRITE = 2   # tmp -> dst


cdef inline int64_t _par_at(const int64_t* pstr, int i, int64_t index) noexcept nogil:
    """The parameter offset of ``index`` along dim i (no parameters: 0)."""
    return 0 if pstr == NULL else index * pstr[i]


cdef void _stage(int parts, char* tmp, char* dst, const char* src, int nd, const int64_t* sizes,
                 const int64_t* dstr, const int64_t* sstr, const Reader* R, int64_t poff,
                 const int64_t* pstr, int nthreads) noexcept nogil:
    """Go through ``tmp``, destination items packed in the destination's order: read the
    source into it (_STAGE_READ: a copy, or R's conversion with its parameters from element
    offset ``poff``, strides ``pstr``), write it to the destination (_STAGE_WRITE), or both in
    turn. Every route of the overlap policy goes through here."""
    cdef int64_t tstr[MAX_NDIM]
    cdef int order[MAX_NDIM]
    cdef Plan plan
    c_physical_order(nd, sizes, dstr, order)
    c_packed_strides(nd, sizes, order, NULL, tstr)
    if parts & _STAGE_READ:
        if R.read == NULL:
            _plan_copy(&plan, nd, sizes, tstr, sstr, R.dsz, R.tuning)
            execute(&plan, tmp, src, nthreads, plan.most, NULL)
        else:
            R.read(R.ctx, tmp, tstr, src, nd, sizes, sstr, poff, pstr, nthreads)
    if parts & _STAGE_WRITE:
        _plan_copy(&plan, nd, sizes, dstr, tstr, R.dsz, R.tuning)
        execute(&plan, dst, tmp, nthreads, plan.most, NULL)


cdef int _copy_staged(char* dst, const char* src, int nd, const int64_t* sizes,
                      const int64_t* dstr, const int64_t* sstr, const int64_t* pstr,
                      const Reader* R, int nthreads) except -1:
    """Stage the whole source in a packed temporary, then write: the result is the source as
    it was. The temporary is had before any byte is written."""
    cdef int64_t count = 0
    cdef char* tmp
    c_size(nd, sizes, &count)
    tmp = <char*>PyMem_RawMalloc(<size_t>(count * R.dsz))
    if tmp == NULL:
        raise MemoryError(f"no memory for a {count * R.dsz}-byte temporary (the source and "
                          f"destination share memory in an order that no small buffer can "
                          f"copy); nothing was written")
    try:
        with nogil:
            _stage(_STAGE_READ | _STAGE_WRITE, tmp, dst, src, nd, sizes, dstr, sstr, R, 0,
                   pstr, nthreads)
    finally:
        PyMem_RawFree(tmp)
    return 0


# ---- in-place transposes: two equal dims whose strides are swapped, over the same memory ------
# Destination tile (I, J) of the two dims occupies exactly the memory that holds the source of
# tile (J, I), and no other tile's: the destination's elements are distinct, and the source
# reads element (i, j) where the destination keeps (j, i). So each pair of tiles goes through a
# small buffer (read both, then write both), and the whole transpose needs two tiles of memory.
# Items of one size only: a conversion that changes the item size in place moves the tiles.

cdef bint _swapped_pair(int nd, const int64_t* sizes, const int64_t* dstr, const int64_t* sstr,
                        int* a, int* b) noexcept nogil:
    """Find dims a != b of equal size with dstr[a] == sstr[b] and dstr[b] == sstr[a], the
    strides of every other dim equal; False when there is no such pair."""
    cdef int i
    a[0] = -1
    b[0] = -1
    for i in range(nd):
        if sizes[i] > 1 and dstr[i] != sstr[i]:
            if a[0] < 0:
                a[0] = i
            elif b[0] < 0:
                b[0] = i
            else:
                return False
    return (b[0] >= 0 and sizes[a[0]] == sizes[b[0]] and dstr[a[0]] == sstr[b[0]]
            and dstr[b[0]] == sstr[a[0]])


cdef int _copy_swapped(char* base, int nd, const int64_t* sizes, const int64_t* dstr,
                       const int64_t* sstr, const int64_t* pstr, const Reader* R,
                       int nthreads, int a, int b) except -1:
    """An in-place transpose of dims a and b (see above), through two tiles of memory."""
    cdef int64_t rest = 1, n = sizes[a], tile, ti, tj, half, itemsize = R.dsz
    cdef int64_t blk[MAX_NDIM]
    cdef char* tmp
    cdef int i
    for i in range(nd):
        if i != a and i != b:
            rest *= sizes[i]
    half = R.tuning.shift_buffer_bytes // 2
    if rest * itemsize > half:   # one element pair of tiles would not fit: stage it all
        return _copy_staged(base, base, nd, sizes, dstr, sstr, pstr, R, nthreads)
    tile = <int64_t>sqrt(<double>(half // (rest * itemsize)))
    tile = max(<int64_t>1, min(tile, n))
    tmp = <char*>PyMem_RawMalloc(<size_t>(2 * tile * tile * rest * itemsize))
    if tmp == NULL:
        raise MemoryError("no memory for the two tiles of an in-place transpose; nothing was "
                          "written")
    for i in range(nd):
        blk[i] = sizes[i]
    try:
        with nogil:
            ti = 0
            while ti < n:
                tj = ti
                while tj < n:
                    _swap_tiles(tmp, base, nd, blk, dstr, sstr, pstr, R, a, b, ti, tj,
                                min(tile, n - ti), min(tile, n - tj), tile * tile * rest)
                    tj += tile
                ti += tile
    finally:
        PyMem_RawFree(tmp)
    return 0


cdef void _swap_tiles(char* tmp, char* base, int nd, int64_t* blk, const int64_t* dstr,
                      const int64_t* sstr, const int64_t* pstr, const Reader* R, int a, int b,
                      int64_t ti, int64_t tj, int64_t ni, int64_t nj,
                      int64_t tile_items) noexcept nogil:
    """Destination tiles (ti, tj) and (tj, ti): stage both sources, then write both."""
    cdef int64_t itemsize = R.dsz
    cdef char* d_ij = base + (ti * dstr[a] + tj * dstr[b]) * itemsize
    cdef char* d_ji = base + (tj * dstr[a] + ti * dstr[b]) * itemsize
    cdef const char* s_ij = base + (ti * sstr[a] + tj * sstr[b]) * itemsize
    cdef const char* s_ji = base + (tj * sstr[a] + ti * sstr[b]) * itemsize
    cdef int64_t p_ij = _par_at(pstr, a, ti) + _par_at(pstr, b, tj)
    cdef int64_t p_ji = _par_at(pstr, a, tj) + _par_at(pstr, b, ti)
    cdef char* second = tmp + tile_items * itemsize
    blk[a] = ni
    blk[b] = nj
    _stage(_STAGE_READ, tmp, d_ij, s_ij, nd, blk, dstr, sstr, R, p_ij, pstr, 1)
    if ti != tj:   # (tj, ti) is staged and written while (ti, tj) waits in tmp
        blk[a] = nj
        blk[b] = ni
        _stage(_STAGE_READ | _STAGE_WRITE, second, d_ji, s_ji, nd, blk, dstr, sstr, R, p_ji,
               pstr, 1)
        blk[a] = ni
        blk[b] = nj
    _stage(_STAGE_WRITE, tmp, d_ij, s_ij, nd, blk, dstr, sstr, R, p_ij, pstr, 1)


# ---- shifts: the same element strides at another address, in memmove's order ----------------
# With every stride made positive (flipping a dim flips both layouts, and the parameters,
# alike) and the dims sorted outermost first, split the call into slabs along the outermost
# dim. When its stride exceeds the extent of the dims below, the slabs are disjoint and ordered
# in memory: every element offset of slab x is below every one of slab x + 1. Element offset e
# lies at d0 + e * dsz in the destination and s0 + e * ssz in the source (dsz, ssz: the item
# sizes, equal for a copy), so with g(e) = (d0 - s0) + (dsz - ssz) * e:
# - walking forwards, the writes of a group of slabs ending below offset x reach no source slab
#   from x on when g(x) <= 0 for every such x in 1..E (E: the largest offset);
# - walking backwards, the writes of a group starting at offset x reach no source slab below it
#   when g(x) >= 0 for those x.
# g is linear, so its signs at 1 and E decide (a copy: the sign of d0 - s0, memmove's rule). So
# groups of slabs go through a small buffer (read the group, then write it), in that direction;
# a slab larger than the buffer is split the same way, one level down. Memory:
# the tuning's shift_buffer_bytes, however large the call.

ctypedef struct _Shift:
    int d                       # dims of size > 1, outermost first
    int64_t n[MAX_NDIM]
    int64_t s[MAX_NDIM]         # element strides, > 0
    int64_t p[MAX_NDIM]         # parameter strides (flipped with their dims)
    int64_t below[MAX_NDIM]     # elements in a slab of dim i (product of the n below it)
    int64_t poff                # parameter offset of the flipped origin
    int64_t buffer_items        # elements the buffer holds
    bint backward               # walk each dim from its end
    bint has_params
    const Reader* R
    char* tmp
    int nthreads


cdef bint _plan_shift(_Shift* S, int nd, const int64_t* sizes, const int64_t* strides,
                      const int64_t* pstr, const Reader* R, char** dst,
                      const char** src) noexcept nogil:
    """Fill S (and move dst/src to the flipped origin); False when some dim the call must be
    split along is interleaved with the dims below it, or no direction is safe (then only a
    full temporary is)."""
    cdef int i, d = 0
    cdef int64_t extent, g1, gE
    cdef bint disjoint[MAX_NDIM]
    S.poff = 0
    S.R = R
    S.has_params = pstr != NULL
    for i in range(nd):
        if sizes[i] > 1:
            S.n[d] = sizes[i]
            S.s[d] = strides[i]
            S.p[d] = _par_at(pstr, i, 1)
            if strides[i] < 0:
                dst[0] += strides[i] * (sizes[i] - 1) * R.dsz
                src[0] += strides[i] * (sizes[i] - 1) * R.ssz
                S.poff += S.p[d] * (sizes[i] - 1)
                S.s[d] = -strides[i]
                S.p[d] = -S.p[d]
            d += 1
    for i in range(d):   # largest stride first: sort the negated strides ascending
        S.s[i] = -S.s[i]
    sort_by(d, S.s, S.n, S.p)
    for i in range(d):
        S.s[i] = -S.s[i]
    S.d = d
    S.buffer_items = max(<int64_t>1, R.tuning.shift_buffer_bytes // max(R.dsz, R.ssz))
    extent = 0   # sum of s * (n - 1) of the dims below i
    for i in range(d - 1, -1, -1):
        S.below[i] = 1 if i == d - 1 else S.below[i + 1] * S.n[i + 1]
        disjoint[i] = S.s[i] > extent
        extent += S.s[i] * (S.n[i] - 1)
    # the direction: g at 1 and at the largest offset (see above)
    g1 = (<int64_t>(<intptr_t>dst[0] - <intptr_t>src[0])) + (R.dsz - R.ssz)
    gE = (<int64_t>(<intptr_t>dst[0] - <intptr_t>src[0])) + (R.dsz - R.ssz) * extent
    S.backward = g1 > 0 or gE > 0
    if d == 0 or S.below[0] * S.n[0] <= S.buffer_items:
        return True   # one group: read it all, then write it, in no order at all
    if (g1 > 0 and gE < 0) or (g1 < 0 and gE > 0):
        return False
    # The levels _shift_level walks: it splits dim i while one of its slabs exceeds the buffer,
    # and groups the slabs of the first dim whose slab fits; both need that dim's slabs apart.
    for i in range(d):
        if not disjoint[i]:
            return False
        if S.below[i] <= S.buffer_items:
            return True
    return True


cdef void _shift_level(const _Shift* S, int level, char* dst, const char* src,
                       int64_t poff) noexcept nogil:
    """Go through the slabs of dim `level` (and everything below it) in the safe order."""
    cdef int64_t n = S.n[level], group, x0, count, i
    cdef int64_t dstep = S.s[level] * S.R.dsz, sstep = S.s[level] * S.R.ssz
    cdef int64_t sizes[MAX_NDIM]
    cdef int nd = S.d - level
    if S.below[level] > S.buffer_items:   # one slab is too big: split it, slab by slab
        for i in range(n):
            x0 = n - 1 - i if S.backward else i
            _shift_level(S, level + 1, dst + x0 * dstep, src + x0 * sstep,
                         poff + x0 * S.p[level])
        return
    group = max(<int64_t>1, S.buffer_items // S.below[level])
    for i in range(nd):
        sizes[i] = S.n[level + i]
    i = 0
    while i < n:
        count = min(group, n - i)
        x0 = n - i - count if S.backward else i
        sizes[0] = count
        _stage(_STAGE_READ | _STAGE_WRITE, S.tmp, dst + x0 * dstep, src + x0 * sstep, nd,
               sizes, &S.s[level], &S.s[level], S.R, poff + x0 * S.p[level],
               &S.p[level] if S.has_params else NULL, S.nthreads)
        i += count


cdef int _copy_shifted(char* dst, const char* src, int nd, const int64_t* sizes,
                       const int64_t* strides, const int64_t* pstr, const Reader* R,
                       int nthreads) except -1:
    """Go between two layouts of the same element strides whose memory meets (a shift)."""
    cdef _Shift S
    cdef char* d0 = dst
    cdef const char* s0 = src
    if not _plan_shift(&S, nd, sizes, strides, pstr, R, &d0, &s0):
        return _copy_staged(dst, src, nd, sizes, strides, strides, pstr, R, nthreads)
    S.nthreads = nthreads
    S.tmp = <char*>PyMem_RawMalloc(<size_t>(S.buffer_items * R.dsz))
    if S.tmp == NULL:
        raise MemoryError(f"no memory for a {S.buffer_items * R.dsz}-byte copy buffer; "
                          f"nothing was written")
    try:
        with nogil:
            if S.d == 0:   # one element
                _stage(_STAGE_READ | _STAGE_WRITE, S.tmp, dst, src, nd, sizes, strides,
                       strides, R, 0, pstr, 1)
            else:
                _shift_level(&S, 0, d0, s0, S.poff)
    finally:
        PyMem_RawFree(S.tmp)
    return 0


# ---- threads, and processes forked after a team ran ------------------------------------------
# libgomp's thread pool does not survive fork(): in the child, the first parallel region waits
# forever for threads that only the parent has (torch's own ops hang the same way). Data loaders
# fork their workers (multiprocessing's default on Linux, torch DataLoader), so a child of a fork
# runs every copy on one thread. pthread_atfork catches every fork (os.fork, multiprocessing, a
# fork from C), not only those made through Python; the flag is inherited by grandchildren.

cdef extern from *:
    """
    #if defined(__unix__) || defined(__APPLE__)
    #include <pthread.h>
    static volatile int st_forked_child = 0;
    static void st_mark_forked_child(void) { st_forked_child = 1; }
    static int st_watch_forks(void) {
        return pthread_atfork(NULL, NULL, st_mark_forked_child);
    }
    #else
    static volatile int st_forked_child = 0;   /* no fork() here */
    static int st_watch_forks(void) { return 0; }
    #endif
    """
    int st_forked_child
    int st_watch_forks() noexcept nogil


if st_watch_forks() != 0:
    raise ImportError("strided: pthread_atfork failed; copies in forked children could hang")


def in_forked_child():
    """True in a process made by ``fork()`` after strided was imported: its copies run serially.

    OpenMP's thread team cannot be used after a fork (libgomp waits for the parent's threads),
    so every copy of such a process runs on one thread, whatever ``num_threads`` says.
    """
    return bool(st_forked_child)


cdef int _CORES = 1
try:
    _CORES = max(1, len(os.sched_getaffinity(0)))
except (AttributeError, OSError):
    _CORES = max(1, os.cpu_count() or 1)

cdef enum:
    _MAX_THREADS = 256


cdef int copy_threads(object num_threads) except -1:
    """The engine's thread argument of a ``num_threads`` argument: 0 for None (the default,
    sized when the copy runs: see team_enter), else the count asked for (at most 256); 1 in a
    forked child. Raises TypeError / ValueError naming num_threads."""
    cdef int64_t v = 0
    if num_threads is not None:
        v = as_int64(num_threads, "num_threads")
        if v < 1:
            raise ValueError(f"num_threads must be >= 1, or None for the default, got {v}")
    if st_forked_child:
        # what a forked child gets (and reports); team_enter enforces it for every caller too,
        # and no OpenMP function is called at all here
        return 1
    if num_threads is None:
        return 0
    return <int>min(v, <int64_t>_MAX_THREADS)


cdef int default_threads() noexcept nogil:
    """The default team: OpenMP's (OMP_NUM_THREADS when set), at most the cores this process
    may run on."""
    return max(1, min(strided_omp_max_threads(), _CORES))


def resolve_threads(num_threads=None):
    """The number of threads a copy may use.

    ``None`` means the default: OpenMP's (``OMP_NUM_THREADS`` when set), but never more than
    the cores this process may run on, and, while other calls run teams at the same time, no
    more than the cores they leave free (at least 1). An explicit count must be an integer
    >= 1 (counts above 256 are treated as 256). A serial build still accepts any count and
    uses one thread.

    Raises
    ------
    TypeError
        ``num_threads`` is not an integer (a bool included).
    ValueError
        ``num_threads`` < 1.
    """
    cdef int n = copy_threads(num_threads)
    return n if n > 0 else default_threads()


def threads_argument(num_threads):
    """``num_threads`` checked and read into a plain value: None (the default) or an int.

    The copy functions read it once, before any array, so that an ``__index__`` of the
    caller's runs before any address is taken (see :func:`resolve_threads` for the rules).
    """
    cdef int n = copy_threads(num_threads)
    return None if num_threads is None else n


def copyto_entry(fast_copy, rest):
    """A decorator making ``strided.copy.copyto``'s calls go through a compiled function of the
    same signature, which serves the plain copies itself: ``fast_copy(dst, src, num_threads,
    casting, scale, shift, axis)`` (the adapters' compiled fast path), then, when it declines,
    ``rest(dst, src, casting, scale, shift, axis, num_threads, None)`` (copyto's checked
    path). Any call with a dtype, image or rounding argument runs the decorated function,
    which stays the documented one (``__wrapped__``, its signature and docstring).

    Why: a Python function fills the defaults of keyword-only parameters from a dict, one
    lookup each; copyto has eleven, about 175 ns a call of a 400 ns 16-element copy (measured,
    CPython 3.11). Here they are C constants.
    """
    def decorate(func):
        def copyto(dst, src, *, casting="same_kind", scale=None, shift=None, axis=None,
                   num_threads=None, dst_dtype=None, src_dtype=None, mean=None, std=None,
                   max_value=None, rounding="fused"):
            if (dst_dtype is None and src_dtype is None and mean is None and std is None
                    and max_value is None and rounding is _FUSED):
                if fast_copy(dst, src, num_threads, casting, scale, shift, axis):
                    return None
                return rest(dst, src, casting, scale, shift, axis, num_threads, None)
            return func(dst, src, casting=casting, scale=scale, shift=shift, axis=axis,
                        num_threads=num_threads, dst_dtype=dst_dtype, src_dtype=src_dtype,
                        mean=mean, std=std, max_value=max_value, rounding=rounding)
        for name in ("__module__", "__name__", "__qualname__", "__doc__"):
            setattr(copyto, name, getattr(func, name))
        copyto.__wrapped__ = func
        return copyto
    return decorate


# copyto's default rounding (the same interned str as a caller's "fused": `is` tells it; any
# other str equal to it takes the decorated function, which compares by value)
cdef str _FUSED = "fused"


cdef size_t _address(object value, str name) except? 0:
    """An address: an integer (the rules of _as_int64) that is not negative."""
    cdef int64_t v = as_int64(value, name)
    if v < 0:
        raise ValueError(f"{name} = {v} is not an address")
    return <size_t>v


cdef int _load_copy(object sizes, object dst_strides, object src_strides, object itemsize,
                    int64_t* sz, int64_t* dst, int64_t* src, int64_t* isz,
                    int64_t* count) except -1:
    """A raw copy's problem, read and checked (copy_memory, _block_kind): the sizes and both
    element strides into sz / dst / src, the item bytes, the element count; the byte spans of
    both layouts fit int64. Returns the rank."""
    cdef int nd = load_pair(sizes, dst_strides, sz, dst, "dst_strides")
    load_strides(src_strides, "src_strides", src, nd)
    isz[0] = as_int64(itemsize, "itemsize")
    if isz[0] < 1:
        raise ValueError(f"itemsize must be >= 1 byte, got {isz[0]}")
    if c_size(nd, sz, count):
        raise OverflowError(f"the number of elements of sizes {tuple_of(nd, sz)!r} leaves int64")
    check_byte_span(nd, sz, dst, isz[0], "dst_strides")
    check_byte_span(nd, sz, src, isz[0], "src_strides")
    return nd


def _block_kind(sizes, dst_strides, src_strides, itemsize):
    """How the engine would run a copy of these element strides, for tests of the planner's
    rules: "copy", "transpose" (tiled in place), "staged" (through the staging tile) or
    "overlapping" (a destination that overlaps itself). Plans with the knobs as they are and
    leaves the plan cache alone."""
    return _block_plan(sizes, dst_strides, src_strides, itemsize)[0]


cdef bint _test_plan(Plan* plan, sizes, dst_strides, src_strides, itemsize,
                     str what) except -1:
    """Plan a copy for the planner's test hooks (``what`` names the hook in errors): False
    for a destination that overlaps itself (no plan), else True with ``plan`` filled."""
    cdef int64_t sz[MAX_NDIM]
    cdef int64_t dst[MAX_NDIM]
    cdef int64_t src[MAX_NDIM]
    cdef int64_t count, isz
    cdef int nd = _load_copy(sizes, dst_strides, src_strides, itemsize, sz, dst, src, &isz,
                             &count)
    if count == 0:
        raise ValueError(f"{what}: only non-empty copies are planned, got sizes "
                         f"{tuple_of(nd, sz)!r}")
    if _dst_overlaps(nd, sz, dst):
        return False
    _plan_copy(plan, nd, sz, dst, src, isz, &_TUNING)
    return True


def _block_plan(sizes, dst_strides, src_strides, itemsize):
    """``(kind, rows, columns)``: :func:`_block_kind` and the extents of the plan's blocks
    (destination rows a block spans, items of each), for tests of the planner's tiles;
    ``("overlapping", 0, 0)`` for a destination that overlaps itself."""
    cdef Plan plan
    if not _test_plan(&plan, sizes, dst_strides, src_strides, itemsize,
                      "_block_kind() and _block_plan()"):
        return "overlapping", 0, 0
    kind = {ST_BLOCK_COPY: "copy", ST_BLOCK_TRANSPOSE: "transpose",
            ST_BLOCK_TBUF: "staged"}[plan.kind]
    return kind, plan.BR, plan.BC


def _block_streams(sizes, dst_strides, src_strides, itemsize):
    """Whether the engine would write this copy's destination with streaming stores (whole
    lines, past the caches), for tests of the planner's rules; False for a destination that
    overlaps itself (the copy goes through a temporary)."""
    cdef Plan plan
    if not _test_plan(&plan, sizes, dst_strides, src_strides, itemsize, "_block_streams()"):
        return False
    return plan.nt != 0


def _block_fetches(sizes, dst_strides, src_strides, itemsize):
    """Whether the plan's blocks prefetch their successor's source (streamed transposes of
    items up to fetch_next bytes), for tests of the planner's rules; False for a destination
    that overlaps itself."""
    cdef Plan plan
    if not _test_plan(&plan, sizes, dst_strides, src_strides, itemsize, "_block_fetches()"):
        return False
    return plan.fetch != 0


def copy_memory(dst_address, src_address, sizes, dst_strides, src_strides, itemsize,
                num_threads=None):
    """Copy a strided tensor between raw addresses (element strides; no bounds checks).

    Element ``index`` is read at ``src_address + dot(index, src_strides) * itemsize`` and
    written at ``dst_address + dot(index, dst_strides) * itemsize``. Like ``memmove``, this
    trusts the caller that both layouts lie inside memory it owns; the public
    :func:`strided.copyto` checks that first. When the two byte ranges intersect, the source is
    staged in a temporary, so the destination always ends up holding the source's values as
    they were before the call.

    Raises
    ------
    TypeError
        A non-integer argument.
    ValueError
        Negative sizes, mismatched ranks, itemsize < 1, a NULL address for a non-empty copy,
        num_threads < 1, or a destination whose elements overlap each other (checked before
        anything is written).
    OverflowError
        A byte offset of either layout leaves int64.
    """
    cdef int64_t sz[MAX_NDIM]
    cdef int64_t dst[MAX_NDIM]
    cdef int64_t src[MAX_NDIM]
    cdef int64_t isz, count
    cdef int nd, nthreads
    cdef size_t dptr, sptr
    nd = _load_copy(sizes, dst_strides, src_strides, itemsize, sz, dst, src, &isz, &count)
    nthreads = copy_threads(num_threads)
    dptr = _address(dst_address, "dst_address")
    sptr = _address(src_address, "src_address")
    if count == 0:
        return
    if dptr == 0 or sptr == 0:
        raise ValueError(f"{'dst_address' if dptr == 0 else 'src_address'} is NULL (0) but "
                         f"the copy has {count} elements")
    # the spans are checked above, so a refusal here is about the destination overlapping itself
    if copy_elements(<char*>dptr, <const char*>sptr, nd, sz, dst, src, isz, count, nthreads):
        if c_overlaps(nd, sz, dst, default_max_work()) == OVERLAP_UNDECIDED:
            raise_too_hard(f"deciding whether the destination (dst_strides {tuple_of(nd, dst)!r}, "
                           f"sizes {tuple_of(nd, sz)!r}) overlaps itself", default_max_work())
        raise ValueError(
            f"the destination overlaps itself: two of its elements share memory (dst_strides "
            f"{tuple_of(nd, dst)!r}, sizes {tuple_of(nd, sz)!r}), so a copy into it is ambiguous"
        )


cdef int copy_elements(char* dst, const char* src, int nd, const int64_t* sizes,
                       const int64_t* dst_strides, const int64_t* src_strides, int64_t itemsize,
                       int64_t count, int nthreads) except -1:
    """Copy between two validated memory blocks (element strides; ``count`` elements).

    The one entry of compiled adapters (buffers here, numpy arrays in
    ``strided.interop._ndarray``): they read an array's address, sizes and strides, and this
    does the rest. Return 0 when the copy is done, or 1, having written nothing, when it cannot
    be done as asked: the destination overlaps itself, or a byte offset leaves int64 (strides
    made up with numpy's ``as_strided``). The caller's slow path then explains the refusal.
    """
    cdef Plan plan
    cdef int64_t dlo, dhi, slo, shi
    if count == 0:
        return 0
    if (byte_span_leaves_int64(nd, sizes, dst_strides, itemsize, &dlo, &dhi)
            or byte_span_leaves_int64(nd, sizes, src_strides, itemsize, &slo, &shi)):
        return 1
    if _get_plan(nd, sizes, dst_strides, src_strides, itemsize, &plan):
        return 1
    _copy_planned(dst, src, nd, sizes, dst_strides, src_strides, itemsize, nthreads, &plan,
                  dlo, dhi, slo, shi)
    return 0


cdef int copy_elements_many(char** dsts, const char** srcs, int64_t copies, int nd,
                            const int64_t* sizes, const int64_t* dst_strides,
                            const int64_t* src_strides, int64_t itemsize,
                            int nthreads) except -1:
    """Copy ``copies`` pairs of validated memory blocks of one layout pair as one job
    (execute_many): the batch entry of strided._convert.convert_many. The caller has checked
    every byte span, that the destination layout does not overlap itself and that no source
    shares a byte with any destination; ``dsts``/``srcs`` are adjusted in place. Returns 0."""
    cdef Plan plan
    cdef int64_t count = 1
    cdef int i
    cdef Tuning T = tuning_now()
    for i in range(nd):
        count *= sizes[i]
    if count == 0 or copies == 0:
        return 0
    _plan_copies(&plan, nd, sizes, dst_strides, src_strides, itemsize, copies, &T)
    if plan.keeps_gil:
        execute_many(&plan, dsts, srcs, copies, 1, 1, NULL)
        return 0
    with nogil:
        execute_many(&plan, dsts, srcs, copies, nthreads, plan.most, NULL)
    return 0


# ---- for the conversion engine (strided._convert) --------------------------------------------

cdef void transpose_block(int itemsize, char* dst, int64_t dp, const char* src, int64_t sq,
                          int64_t R, int64_t C) noexcept nogil:
    """dst[r * dp + c] = src[r + c * sq] for r < R, c < C (element strides, items of 1, 2, 4,
    8 or 16 bytes): the engine's transpose kernels, at the SIMD level in use, for a tile that a
    conversion staged in cache."""
    st_copy_block(ST_BLOCK_TRANSPOSE, itemsize, dst, dp, 1, src, 1, sq, R, C, 0, NULL)


cdef bint streams(const Tuning* T, int64_t nbytes) noexcept nogil:
    """Whether a call moving ``nbytes`` streams its whole destination lines: from nt_bytes
    (the last-level cache on AMD, twice the L2 on Intel: strided._caches), where skipping the
    read-for-ownership saves a third of the traffic. A call counts its footprint, the bytes
    it reads and writes (a copy's read bytes: _read_bytes): the destination cannot stay in
    the cache beside the source anyway. (The 4-bit conversions' float32 planes still count
    the bytes they write: their footprint is unmeasured.)"""
    return T.nt_bytes >= 0 and nbytes >= T.nt_bytes


cdef inline bint _copy_streams(const Tuning* T, const Plan* P) noexcept nogil:
    """Whether a copy streams: by its footprint (streams); a fill (a copy that reads at most
    an eighth of the bytes it writes: a broadcast source) from fill_nt_bytes where that is set
    (0 or more) and above nt_bytes. A fill's destination has the cache to itself: a streamed
    fill gains little from memory (no source to share it with) and loses most in it."""
    cdef int64_t read = _read_bytes(P)
    if T.fill_nt_bytes < 0 or T.nt_bytes < 0 or read > P.nbytes // 8:
        return streams(T, P.nbytes + read)
    return P.nbytes + read >= max(T.nt_bytes, T.fill_nt_bytes)


cdef inline bint _pixels_stream(const Tuning* T, int64_t nbytes) noexcept nogil:
    """Whether a copy between a few planes and dense pixels (HWC <-> CHW: the interleave and
    deinterleave kernels) moving ``nbytes`` (its footprint) streams: from pixels_nt_bytes
    where that is set (0 or more) and below nt_bytes, else as every copy does (streams)."""
    if T.pixels_nt_bytes < 0 or T.nt_bytes < 0:
        return streams(T, nbytes)
    return nbytes >= min(T.nt_bytes, T.pixels_nt_bytes)


cdef int simd_level() noexcept nogil:
    """The SIMD level the kernels use now (0: SSE2, 1: + SSSE3, 2: + AVX2; see _simd)."""
    return st_get_simd()
