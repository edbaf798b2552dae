"""The conversion engine of strided: a strided copy that changes the element type on the way.

A conversion is planned like a copy (``strided._copy``): drop size-1 dims, walk the
destination forwards, sort the dims by the destination's strides, merge the dims contiguous in
both layouts *and* in the per-channel parameters. What is left is an outer loop nest around a
2-D block problem whose columns are the destination's innermost dim. Element strides do not
depend on the itemsize, so this is the copy planner's problem with two byte widths.

- When the destination's innermost dim is unit-stride and another dim is unit-stride in the
  source, the block is a transpose: a tile is converted into a staging buffer in the source's
  order (contiguous reads, the fused row kernels of ``_kernels/convert.h``), then written with
  the copy engine's own transpose kernels at the destination's itemsize
  (``_copy.transpose_block``). The tile stays in L1, so memory sees one read and one write.
- float32 -> float16 / bfloat16 transposes (NCHW -> NHWC in mixed precision) take one pass
  instead (``_kernels/convert_tiles.h``): 8 x 8 micro-tiles converted in AVX2 registers into
  the copy engine's kind of staging tile (``_kernels/tile.h``, the loop both engines share),
  whose runs leave whole, streamed when the destination is far larger than the cache.
- Otherwise each row is converted in place (``st_cvt_row``: fused for unit strides, a chunked
  wide-buffer path for any other).

Per-channel ``scale``/``shift`` are a third operand: vectors of the compute type, addressed
with their own element strides (1 along the channel axis, 0 elsewhere; a blocked format's
channel split in two dims has strides ``(x, 1)``). The innermost loops never see an axis.

What this module adds to the copy engine: the plan of a conversion and its blocks (run by the
engines' one runner, ``_copy.run_team``), the Reader that lets the copy engine's overlap
routes convert (``_copy.copy_overlapping``), and ``convert_memory``, the raw entry that
:mod:`strided.copy` calls once everything is checked. Type names and casting rules come
from :mod:`strided._dtypes`.
"""
from cpython.mem cimport PyMem_RawFree, PyMem_RawMalloc
from libc.stdint cimport int64_t, intptr_t
from libc.string cimport memcpy

from strided._copy cimport (
    Plan, Reader, Tuning, copy_elements, copy_elements_many, copy_overlapping, copy_threads,
    default_threads, execute, execute_many, fused_fn, pixels_fn, planes_fn, plan_problem,
    plan_run, run_team, simd_level, streams, tiled_fn, transpose_block, tuning_now,
)
from strided._core cimport (
    MAX_NDIM, c_physical_order, OVERLAP_UNDECIDED, as_int64, byte_span_leaves_int64, c_overlaps,
    c_packed_strides, c_size, c_span, check_byte_span, default_max_work, load_pair,
    load_strides, raise_too_hard, tuple_of,
)

from strided._core import load_parameter

cdef extern from "_kernels/convert.h":
    enum:
        ST_BOOL
        ST_I8
        ST_I16
        ST_I32
        ST_I64
        ST_U8
        ST_U16
        ST_U32
        ST_U64
        ST_F16
        ST_BF16
        ST_F32
        ST_F64
        ST_C64
        ST_C128
        ST_NTYPES
        ST_CVT_PLAIN
        ST_CVT_AFF32
        ST_CVT_AFF64
        ST_CVT_DIV32
        ST_BLOCK_COPY
        ST_BLOCK_TRANSPOSE
    ctypedef struct st_cvt_op:
        int stype
        int dtype
        int mode
        fused_fn fused
    planes_fn st_cvt_planes(int stype, int dtype, int mode, int R, int simd,
                            int stream) noexcept nogil
    pixels_fn st_cvt_pixels(int stype, int dtype, int mode, int R, int simd) noexcept nogil
    pixels_fn st_cvt_pixels_nib(int stype, int mode, int sign, int simd) noexcept nogil
    const int* st_type_size
    int st_cvt_init() noexcept nogil
    fused_fn st_cvt_fused(int stype, int dtype, int mode, int simd) noexcept nogil
    void st_cvt_row(const st_cvt_op* op, char* dst, Py_ssize_t ds, const char* src,
                    Py_ssize_t ss, Py_ssize_t n, const char* scale, const char* shift,
                    Py_ssize_t ps) noexcept nogil

cdef extern from "_kernels/convert_tiles.h":
    enum:
        ST_NT
        ST_SETS8
        ST_AHEAD_SHIFT
        ST_ROWS_JOIN
    tiled_fn st_cvt_tiled(int stype, int dtype, int mode, int simd) noexcept nogil
    void st_cvt_stream_run(const st_cvt_op* op, char* d, const char* s, Py_ssize_t n,
                           const char* scale, const char* shift) noexcept nogil
    void st_cvt_stream_rows(const st_cvt_op* op, char* d, const char* s, Py_ssize_t sp,
                            Py_ssize_t R, Py_ssize_t n, const char* scale, const char* shift,
                            Py_ssize_t pp) noexcept nogil
    void st_store_fence() noexcept nogil


st_cvt_init()   # once, at import

# The element types, their codes and numpy's casting rules: one table, strided._dtypes (pure
# Python; the adapters read it without importing this engine). This module re-exports the names
# its stub has always listed.
from strided._dtypes import CASTINGS, TYPE_NAMES, can_cast, check_pair, compute_type  # no-cython-lint
from strided._dtypes import CODES as _CODES
from strided._dtypes import SUB_BYTE as _SUB_BYTE


def _carrier(name):
    """(bits, the engine's type name) of a type name: a 4-bit type moves as its carrier."""
    if type(name) is str and name in _SUB_BYTE:
        return 4, _SUB_BYTE[name].carrier
    return 0, name


# The affine step runs in numpy's result_type(src, float32) (strided._dtypes.compute_type)
_WIDE_CODES = frozenset(_CODES[n] for n in TYPE_NAMES if compute_type(n) == "float64")


def _type_sizes():
    """The kernels' item size of every engine code (``_kernels/types.h``), for the test that
    the compiled table agrees with strided._dtypes."""
    return tuple(st_type_size[code] for code in range(ST_NTYPES))


# --------------------------------------------------------------------------------------------
# The plan
# --------------------------------------------------------------------------------------------

# A conversion's plan is the engine's one Plan (_copy.pxd): plan_problem's problem, with the
# conversion's blocks (below) and its parameters; the knobs are the engine's one Tuning.


cdef inline int64_t _ceil_div(int64_t a, int64_t b) noexcept nogil:
    return (a + b - 1) // b


cdef void _plan(Plan* P, int nd, const int64_t* sizes, const int64_t* dstr,
                const int64_t* sstr, const int64_t* pstr, const Tuning* T) noexcept nogil:
    """Fill P for a non-empty conversion (spans already checked; the pair, P.dsz, P.ssz, P.ct
    and P.nbytes set): the engine's problem, then the conversion's blocks."""
    cdef int64_t side, room
    plan_problem(P, nd, sizes, dstr, sstr, pstr, 1)
    # A transpose moves the narrower items: a narrowing one (float32 -> float16, int8)
    # converts its tile in the source's order, then transposes the converted items out with
    # the copy engine's kernels; a widening one (uint8 -> float32, int8 -> float32) transposes
    # the source's items into the tile and converts on the way out, writing whole destination
    # rows. Paired on AMD EPYC, 1 and 2 threads, the other order took: HWC uint8 image ->
    # CHW float32 1.4-1.5x, int8 NCHW4/NCHW32 -> float32 NCHW 1.25-1.6x, float32 -> int8
    # NCHW32 1.6-1.9x, float32 NCHW -> float16 NHWC 1.2x the time of the order chosen here.
    P.convert_last = P.kind == ST_BLOCK_TRANSPOSE and (
        P.dsz > P.ssz if T.convert_last < 0 else T.convert_last == 1)
    P.tsz = P.ssz if P.convert_last else P.dsz
    # float32 -> float16 / bfloat16 (mixed precision's NCHW -> NHWC): one pass, converting
    # 8 x 8 micro-tiles in registers into a staging tile of destination items, whose runs
    # leave whole and, for destinations far larger than the cache, streamed. Paired at 64 MiB
    # (AMD EPYC, 1 / 2 threads), float32 NCHW -> NHWC took 0.82 / 0.60x the time of the
    # two-pass route (staged on 1 thread) for float16, 0.86 / 0.52x for bfloat16. A 256 KiB
    # tile (convert_tiled_bytes) rather than 128 KiB: 0.9x the time, the longer runs per
    # source row suiting DRAM; 512 KiB gained 3-5% more, but is half of a 1 MiB L2 that two
    # hyperthreads may share, so it was left. The widening direction (float16 NHWC -> float32
    # NCHW) is not tiled: its destination rows are long planes, staged 2 KiB apart in the tile,
    # and the kernel was 2x slower than converting the transposed tile's rows (in cache,
    # measured).
    P.tiled = NULL
    P.stream = 0
    if P.kind == ST_BLOCK_TRANSPOSE and T.convert_tiled:
        P.tiled = st_cvt_tiled(P.stype, P.dtype, P.mode, simd_level())
    if P.tiled != NULL:   # its tile holds destination items (and blocks too narrow for it
        P.tsz = max(P.tsz, P.dsz)   # take the route above, with the tile it sized)
        # by its footprint, read + written (P.nbytes), as a copy streams: a float32 NCHW ->
        # float16 / bfloat16 NHWC conversion reading 24.5 or 32 MiB and writing half that
        # (under the 32 MiB L3), streamed against not, paired (AMD EPYC Zen 3): 1.07-1.20x
        # faster on 1 thread, 1.05-1.11x on 2. On an Intel Xeon (nt_bytes 4 MiB: 2 L2s),
        # cold (rotating over 1.5 GiB), streamed against not: 9-12 MiB 1.17-1.30x, 37 MiB
        # 1.22-1.28x (1 and 2 threads). (Warm loops on the same arrays unmeasured: the A/B
        # that alternated the two call by call on one pair of arrays is not a measure.)
        # Streamed, the tile reads its source as the copy engine's streamed tiles do (one
        # kernel, tile.h): up to 8 crowded rows directly on a 12-way L1 (crowd_rows) and
        # sweep_ahead lines ahead fetched. AMD EPYC Zen 5, float32 (16, 64, 128, 128) NCHW
        # -> float16 NHWC (planes 64 KiB apart), cold: with both 7.5 -> 4.8 ms on 1 thread,
        # 4.3 -> 3.2 ms on 2 (crowd_rows 8 alone 1.14-1.22x, the fetch 1.11-1.28x on top).
        if streams(T, P.nbytes):
            P.stream = (ST_NT | (ST_SETS8 if T.crowd_rows >= 8 else 0)
                        | T.sweep_ahead << ST_AHEAD_SHIFT)
    # Dense pixels of 3 or 4 uint8/int8 channels to float32 planes (an image loader's HWC ->
    # CHW, int8 NCHW4 -> NCHW) go in one pass, without a tile (2x faster at 1080x1920); 32
    # channels (int8 NCHW32 -> NCHW) through the tile, transposed 4 channels at a time in
    # registers, then out plane by plane (0.64 -> 0.9-1.0x a contiguous cast's speed), its
    # stores streamed by the footprint, as a copy's (Zen 5, cold: 1.36x on 1 thread, 1.29x on
    # 2; the planes' lines were read for ownership before being written).
    P.planes = NULL
    if (P.kind == ST_BLOCK_TRANSPOSE and P.convert_last and P.sq == P.R and P.pq == 0
            and P.pp in (0, 1) and T.convert_planes):
        P.planes = st_cvt_planes(P.stype, P.dtype, P.mode, <int>P.R, simd_level(),
                                 streams(T, P.nbytes))
    # ... and the mirror: float32 planes to dense 3-, 4- or 32-channel 8-bit pixels, quantized
    # (float32 NCHW -> int8 NCHW4 / NCHW32, CHW float32 -> HWC uint8; NCHW32 at (8, 128, 64,
    # 64), paired with a contiguous cast: 0.57 -> 0.93-1.0x its speed on 1 and 2 threads).
    P.pixels = NULL
    if (P.kind == ST_BLOCK_TRANSPOSE and not P.convert_last and P.dp == P.C and P.pp == 0
            and P.pq in (0, 1) and T.convert_planes):
        P.pixels = st_cvt_pixels(P.stype, P.dtype, P.mode, <int>P.C, simd_level())
    if P.kind == ST_BLOCK_TRANSPOSE:
        # Tiles in L2: whole source runs when they are short (an image's 3 channels), else
        # convert_tile_columns destination columns by source runs as long as the tile allows.
        # Long runs matter: each column of a tile reads its own page of the source (NCHW -> NHWC:
        # one plane per channel), and 256-byte runs from 64 pages at once left a float16
        # relayout at 0.2x memcpy, stalled on the TLB and the prefetchers.
        side = T.convert_tile_columns
        room = T.convert_tiled_bytes if P.tiled != NULL else T.convert_tile_bytes
        if P.R * P.tsz * 16 <= room and P.R <= side:
            P.BR = P.R
            P.BC = min(P.C, max(<int64_t>16, room // (P.R * P.tsz)))
        else:
            P.BC = min(P.C, side)
            P.BR = min(P.R, max(<int64_t>16, room // (P.BC * P.tsz)))
    else:
        P.BC = min(P.C, max(<int64_t>1, T.block_bytes // max(P.dsz, P.ssz)))
        P.BR = min(P.R, max(<int64_t>1, T.block_bytes // (P.BC * max(P.dsz, P.ssz))))
    # Blocks of equal size (whole vectors of 16): the last one is not a sliver while a thread
    # is given a block much larger than its neighbour's (224x224x3 pixels to planes on 2
    # threads took 43690 and 6486 pixels: the team ran as slowly as one thread).
    P.nbc = _ceil_div(P.C, P.BC)
    P.BC = min(P.BC, _ceil_div(_ceil_div(P.C, P.nbc), 16) * 16)
    P.nbr = _ceil_div(P.R, P.BR)
    P.nbc = _ceil_div(P.C, P.BC)
    P.items = P.nbr * P.nbc
    for i in range(P.nouter):
        P.items *= P.n[i]
    # Dense rows with one set of parameters each (a contiguous cast, rows of a padded
    # tensor) stream their destination by the footprint, as a copy does (st_cvt_stream_run:
    # converted into an L1 buffer, then streamed whole lines). AMD EPYC Zen 5, 16 Mi items,
    # cold, against ordinary stores (convert_stream_rows 0), 1 thread: uint8 / int8 / float16
    # -> float32 1.21-1.30x, float32 -> float16 / bfloat16 / uint8 0.99-1.11x, float64 ->
    # float32 level; 2 threads: widening 1.27-1.28x, float32 -> float16 1.09x, bfloat16
    # level. Intel unmeasured (its nt_bytes, 4 MiB, is the copy's measured threshold).
    # Rows that follow each other in the destination but are not whole lines stream as one
    # run (stitch_rows, as the copy's do: st_cvt_stream_rows).
    if (P.kind == ST_BLOCK_COPY and _dense_rows(P) and T.convert_stream_rows
            and streams(T, P.nbytes)):
        P.stream = ST_NT | (ST_ROWS_JOIN if T.stitch_rows else 0)
    plan_run(P, T)
    P.run = _convert_blocks
    P.scratch_bytes = _tile_bytes(P)
    P.period_scale = NULL
    P.period_shift = NULL
    P.period = 0


cdef inline void _take_pair(Plan* Q, const Plan* P) noexcept nogil:
    """Q converts as P does (the pair, the mode, the row kernel, the item sizes): a plan of a
    part of P's conversion (a chunk, an overlap route's block)."""
    Q.stype, Q.dtype, Q.mode, Q.fused = P.stype, P.dtype, P.mode, P.fused
    Q.dsz, Q.ssz, Q.ct = P.dsz, P.ssz, P.ct


cdef bint _whole_runs(const Plan* P) noexcept nogil:
    """Whether a block is one contiguous run of short rows back to back, converted in one call
    rather than one per row: a transpose's source tile (rows of R), or a block of rows of C
    contiguous in both layouts that did not merge only because the parameters move along
    them (an HWC image's channels). The parameters may move along the short rows only."""
    if P.kind == ST_BLOCK_TRANSPOSE and not P.convert_last:
        return P.BR == P.R and P.sq == P.R and P.pq == 0
    if P.kind == ST_BLOCK_TRANSPOSE:    # the tile, in the destination's order, out to its rows
        return P.BC == P.C and P.dp == P.C and P.pp == 0
    return (P.BC == P.C and P.dq == 1 and P.sq == 1 and P.dp == P.C and P.sp == P.C
            and P.pp == 0)


cdef inline bint _dense_rows(const Plan* P) noexcept nogil:
    """Whether a copy-kind block's rows (or its whole runs) are dense on both sides with one
    set of parameters a row: what st_cvt_stream_run converts and streams."""
    if _whole_runs(P):
        return _run_ps(P) == 0
    return P.dq == 1 and P.sq == 1 and P.pq == 0


cdef inline bint _source_order(const Plan* P) noexcept nogil:
    """Whether whole runs follow the source's short rows (a transpose converting first)."""
    return P.kind == ST_BLOCK_TRANSPOSE and not P.convert_last


cdef inline int64_t _run_row(const Plan* P) noexcept nogil:
    """The short rows of a whole run: R of a transpose converting first, else C."""
    return P.R if _source_order(P) else P.C


cdef inline int64_t _run_ps(const Plan* P) noexcept nogil:
    """The parameter stride along a whole run's short rows."""
    return P.pp if _source_order(P) else P.pq


cdef int64_t _period_items(const Plan* P, const Tuning* T) noexcept nogil:
    """Items of the unrolled parameter period a plan wants (0: none): when whole runs need
    per-row parameters (an image's channels are the source's innermost dim), the parameters
    of one column repeated to about convert_period_items items, so the run converts with unit
    parameter strides."""
    cdef int64_t row = _run_row(P)
    if not (_whole_runs(P) and _run_ps(P) != 0 and not P.outer_params
            and P.mode != ST_CVT_PLAIN):
        return 0
    return max(<int64_t>1, T.convert_period_items // row) * row


cdef void _fill_period(Plan* P, char* buffer, int64_t period) noexcept nogil:
    """Lay out a period of ``period`` items (_period_items) in ``buffer`` (2 * period
    compute-type items: the scales, then the shifts) and point the plan at it."""
    cdef int64_t k, i, row = _run_row(P), ps = _run_ps(P)
    P.period = period
    P.period_scale = buffer
    P.period_shift = buffer + period * P.ct
    for k in range(period // row):
        for i in range(row):
            _put_ct(P, P.period_scale, k * row + i, P.scale + P.par_shift + i * ps * P.ct)
            _put_ct(P, P.period_shift, k * row + i, P.shift + P.par_shift + i * ps * P.ct)


cdef int _unroll_period(Plan* P, const Tuning* T) except -1:
    """Give the plan the period it wants (_period_items), in memory of its own (the caller
    frees P.period_scale), or none."""
    cdef int64_t period = _period_items(P, T)
    cdef char* buffer
    P.period_scale = NULL
    P.period_shift = NULL
    P.period = 0
    if period == 0:
        return 0
    buffer = <char*>PyMem_RawMalloc(<size_t>(2 * period * P.ct))
    if buffer == NULL:
        raise MemoryError()
    _fill_period(P, buffer, period)
    return 0


cdef inline void _put_ct(const Plan* P, char* out, int64_t i,
                         const char* value) noexcept nogil:
    if P.ct == 8:
        (<double*>out)[i] = (<const double*>value)[0]
    else:
        (<float*>out)[i] = (<const float*>value)[0]


# --------------------------------------------------------------------------------------------
# Running a plan
# --------------------------------------------------------------------------------------------

cdef void _convert_run(const Plan* P, const st_cvt_op* op, char* out, const char* src,
                       int64_t total, const char* scale, const char* shift) noexcept nogil:
    """A whole run (_whole_runs) of ``total`` items from ``src`` into contiguous ``out``."""
    cdef int64_t k = 0, run, row = _run_row(P), ps = _run_ps(P)
    if ps == 0 and P.stream:
        st_cvt_stream_run(op, out, src, total, scale, shift)
    elif ps == 0:
        st_cvt_row(op, out, 1, src, 1, total, scale, shift, 0)
    elif P.period_scale != NULL:
        while k < total:
            run = min(P.period, total - k)
            st_cvt_row(op, out + k * P.dsz, 1, src + k * P.ssz, 1, run, P.period_scale,
                       P.period_shift, 1)
            k += run
    else:
        while k < total:
            st_cvt_row(op, out + k * P.dsz, 1, src + k * P.ssz, 1, row, scale, shift, ps)
            k += row


cdef void _run_block(const Plan* P, const st_cvt_op* op, char* dst, const char* src,
                     const char* scale, const char* shift, int64_t h, int64_t w,
                     char* tile) noexcept nogil:
    """One block of h x w: ``dst``, ``src``, ``scale``, ``shift`` point at its first element."""
    cdef int64_t r, c
    if P.kind == ST_BLOCK_COPY:
        if _whole_runs(P):
            _convert_run(P, op, dst, src, h * w, scale, shift)
            return
        if (P.stream & ST_ROWS_JOIN) and P.dp == w and h > 1:
            st_cvt_stream_rows(op, dst, src, P.sp * P.ssz, h, w, scale, shift, P.pp * P.ct)
            return
        for r in range(h):
            if P.stream:
                st_cvt_stream_run(op, dst + r * P.dp * P.dsz, src + r * P.sp * P.ssz, w,
                                  scale + r * P.pp * P.ct, shift + r * P.pp * P.ct)
            else:
                st_cvt_row(op, dst + r * P.dp * P.dsz, P.dq, src + r * P.sp * P.ssz, P.sq,
                           w, scale + r * P.pp * P.ct, shift + r * P.pp * P.ct, P.pq)
        return
    if P.planes != NULL and h == P.R:
        P.planes(dst, P.dp * P.dsz, src, w, scale, shift, P.pp, tile, _tile_bytes(P))
        return
    if P.tiled != NULL and h >= 8 and w >= 8:   # (narrower blocks: the interleave loops below)
        P.tiled(dst, P.dp, src, P.sq, h, w, P.stream if P.dp == w else 0, tile)
        return
    if P.convert_last:
        # transpose the source's items into `tile` (rows of w, the destination's order), then
        # convert its rows out
        transpose_block(<int>P.ssz, tile, w, src, P.sq, h, w)
        if _whole_runs(P):
            _convert_run(P, op, dst, tile, h * w, scale, shift)
            return
        for r in range(h):
            st_cvt_row(op, dst + r * P.dp * P.dsz, 1, tile + r * w * P.ssz, 1, w,
                       scale + r * P.pp * P.ct, shift + r * P.pp * P.ct, P.pq)
        return
    if P.pixels != NULL and w == P.C:
        P.pixels(dst, src, h, P.sq * P.ssz, scale, shift, P.pq, tile, _tile_bytes(P))
        return
    # convert the tile into `tile` in the source's order, then transpose it out
    if _whole_runs(P):
        _convert_run(P, op, tile, src, h * w, scale, shift)
    else:
        for c in range(w):
            st_cvt_row(op, tile + c * h * P.dsz, 1, src + c * P.sq * P.ssz, 1, h,
                       scale + c * P.pq * P.ct, shift + c * P.pq * P.ct, P.pp)
    transpose_block(<int>P.dsz, dst, P.dp, tile, h, h, w)


cdef inline int64_t _tile_bytes(const Plan* P) noexcept nogil:
    """Bytes of a thread's staging tile (0 when the plan stages nothing)."""
    return P.BR * P.BC * P.tsz if P.kind == ST_BLOCK_TRANSPOSE else 0


cdef void _run_range(const Plan* P, const st_cvt_op* op, char* dst, const char* src,
                     int64_t lo, int64_t hi, char* tile) noexcept nogil:
    """Blocks lo..hi-1 (numbered outer index, block row, block column); ``tile``: this
    thread's staging tile."""
    cdef int64_t item, rest, br, bc, doff, soff, poff, idx, r0, c0
    cdef int i
    for item in range(lo, hi):
        bc = item % P.nbc
        rest = item // P.nbc
        br = rest % P.nbr
        rest = rest // P.nbr
        doff = soff = poff = 0
        for i in range(P.nouter - 1, -1, -1):
            idx = rest % P.n[i]
            rest = rest // P.n[i]
            doff += idx * P.ds[i]
            soff += idx * P.ss[i]
            poff += idx * P.ps[i]
        r0 = br * P.BR
        c0 = bc * P.BC
        poff = P.par_shift + (poff + r0 * P.pp + c0 * P.pq) * P.ct
        _run_block(P, op, dst + (doff + r0 * P.dp + c0 * P.dq) * P.dsz,
                   src + (soff + r0 * P.sp + c0 * P.sq) * P.ssz, P.scale + poff, P.shift + poff,
                   min(P.BR, P.R - r0), min(P.BC, P.C - c0), tile)


cdef int _most_threads(const Plan* P, int nthreads) noexcept nogil:
    """The largest team a plan may run on for the engine's thread argument ``nthreads`` (0:
    the default; the budget of team_enter may give it fewer when it runs): its staging tiles
    are had for that many threads before it runs."""
    if P.keeps_gil:
        return 1
    return <int>min(<int64_t>(nthreads if nthreads > 0 else default_threads()), P.most)


cdef void _convert_blocks(const void* plan, char* dst, const char* src, int64_t lo, int64_t hi,
                          char* tile) noexcept nogil:
    """A conversion's blocks_fn (_copy.run_team): blocks lo..hi-1, staged in ``tile``; a run
    of streamed stores ends with a fence."""
    cdef const Plan* P = <const Plan*>plan
    cdef st_cvt_op op   # the kernels' description of the row conversion, from the plan's
    op.stype, op.dtype, op.mode, op.fused = P.stype, P.dtype, P.mode, P.fused
    _run_range(P, &op, dst, src, lo, hi, tile)
    if P.stream:
        st_store_fence()


# --------------------------------------------------------------------------------------------
# The raw entry
# --------------------------------------------------------------------------------------------

cdef int _load_params(object value, str name, int64_t length, int64_t ct, char* out,
                      bint missing_is_one) except -1:
    """Fill `length` compute-type items from None (1 or -0.0: not applied, bit for bit), a
    float (every item) or a tuple of exactly `length` floats: the values
    ``strided._core.load_parameter`` read from the caller's argument. Only those: reading them
    runs no Python code, so no caller code runs once the addresses are taken."""
    cdef int64_t i
    cdef double v
    cdef tuple items
    if value is None:
        v = 1.0 if missing_is_one else -0.0
        for i in range(length):
            _store_ct(out, i, v, ct)
        return 0
    if type(value) is float:
        v = value
        for i in range(length):
            _store_ct(out, i, v, ct)
        return 0
    if type(value) is not tuple:
        raise TypeError(f"{name} must be loaded by strided._core.load_parameter first (None, "
                        f"a float or a tuple of floats), got {type(value).__name__}")
    items = <tuple>value
    if len(items) != length:
        raise ValueError(f"{name} has {len(items)} values but the channel axis has {length}")
    for i in range(length):
        if type(items[i]) is not float:
            raise TypeError(f"{name}[{i}] must be a float, got {type(items[i]).__name__}")
        _store_ct(out, i, <double>items[i], ct)
    return 0


cdef inline void _store_ct(char* out, int64_t i, double v, int64_t ct) noexcept:
    if ct == 8:
        (<double*>out)[i] = v
    else:
        (<float*>out)[i] = <float>v   # one rounding, as numpy's asarray(v, float32)


cdef int load_params(Params* out, object scale, object shift, int64_t length,
                     int src_code) except -1:
    """Read a conversion's parameters (see _convert.pxd) for a source of type ``src_code``:
    the affine step runs in float64 for the wide sources (strided._dtypes.compute_type),
    else in float32."""
    cdef bint affine = scale is not None or shift is not None
    out.values = NULL
    out.length = length
    out.mode = ST_CVT_PLAIN
    if affine:
        out.mode = ST_CVT_AFF64 if src_code in _WIDE_CODES else ST_CVT_AFF32
    out.ct = 8 if out.mode == ST_CVT_AFF64 else 4
    # (length 0: the vectors of an empty channel axis; PyMem_RawMalloc(0) is not NULL)
    values = <char*>PyMem_RawMalloc(<size_t>(2 * length * out.ct))
    if values == NULL:
        raise MemoryError()
    try:
        _load_params(scale, "scale", length, out.ct, values, True)
        _load_params(shift, "shift", length, out.ct, values + length * out.ct, False)
    except BaseException:
        PyMem_RawFree(values)
        raise
    out.values = values
    return 0


cdef void free_params(Params* params) noexcept:
    PyMem_RawFree(params.values)
    params.values = NULL


cdef int _load_problem(object sizes, object dst_strides, object src_strides,
                       object param_strides, object param_length, int64_t* sz, int64_t* dst,
                       int64_t* src, int64_t* par, int64_t* length) except -1:
    """The raw entries' problem, read into the engine's arrays: sizes and both strides, the
    parameter strides (all 0 when None) and length (>= 1); returns the rank."""
    cdef int nd = load_pair(sizes, dst_strides, sz, dst, "dst_strides")
    cdef int i
    load_strides(src_strides, "src_strides", src, nd)
    if param_strides is None:
        for i in range(nd):
            par[i] = 0
    else:
        load_strides(param_strides, "param_strides", par, nd)
    length[0] = as_int64(param_length, "param_length")
    if length[0] < 1:
        raise ValueError(f"param_length must be >= 1, got {length[0]}")
    return nd


def convert_memory(dst_address, src_address, sizes, dst_strides, src_strides, dst_type,
                   src_type, scale=None, shift=None, param_strides=None, param_length=1,
                   num_threads=None, dst_first=0, src_first=0, divide=False):
    """Convert a strided tensor between raw addresses (element strides; no bounds checks).

    Element ``index`` is read as ``src_type`` at ``src_address + dot(index, src_strides) *
    itemsize(src_type)`` and written, converted (the documentation's "Conversion" rules), as
    ``dst_type`` at ``dst_address + dot(index, dst_strides) * itemsize(dst_type)``. Like
    ``memmove``, this trusts the caller that both lie in memory it owns (:func:`strided.copyto`
    checks that first); when the two share memory, the copy engine's overlap routes convert
    through a small buffer where an order allows (a shift, an in-place transpose; else the whole
    source is staged), so the destination gets the converted values of the source as it was.

    Parameters
    ----------
    dst_type, src_type : str
        Names in :data:`TYPE_NAMES`, or ``"int4"`` / ``"uint4"`` (4-bit elements, two a byte,
        element 2k in the low nibble of byte k: the address is the byte holding nibble 0,
        the strides count nibbles, and element ``index`` is nibble ``first +
        dot(index, strides)``).
    dst_first, src_first : int
        The nibble of element 0 of a 4-bit side (any int: ``first // 2`` bytes from the
        address, low nibble when even); 0 for a byte-sized side.
    scale, shift : None, real number or 1-D vector of them
        The affine step ``t = x * scale + shift`` in the compute type (:func:`compute_type`);
        both None: a plain cast. A vector has ``param_length`` values, element ``index``
        uses the one at ``dot(index, param_strides)``. Read by
        :func:`strided._core.load_parameter` (its rules and errors) before anything else.
    param_strides : sequence of int, optional
        Strides into the parameter vectors, one per dim (default: all 0).
    param_length : int
        Length of the parameter vectors.
    divide : bool
        ``t = x / scale + shift`` instead (float32 compute types only, byte-sized sides):
        the division of torchvision's ``Normalize``, which strided's torchvision-exact
        image form reproduces.

    Raises
    ------
    TypeError
        An unknown type name, a pair the engine does not convert, a parameter that is not
        real, ``divide`` with a float64 compute type or a 4-bit side.
    ValueError
        Mismatched ranks, a NULL address for a non-empty conversion, a destination whose
        elements overlap each other, parameters whose strides reach outside their length.
    OverflowError
        A byte offset of either layout leaves int64.
    """
    cdef int64_t sz[MAX_NDIM]
    cdef int64_t dst[MAX_NDIM]
    cdef int64_t src[MAX_NDIM]
    cdef int64_t par[MAX_NDIM]
    cdef int64_t count, length, dst_base, src_base
    cdef int nd, nthreads, dst_bits, src_bits
    cdef char* dptr
    cdef const char* sptr
    cdef bint affine
    cdef Params params
    # the parameters first, into plain values (see strided._core.load_parameter)
    scale = load_parameter(scale, "scale")
    shift = load_parameter(shift, "shift")
    affine = scale is not None or shift is not None
    nd = _load_problem(sizes, dst_strides, src_strides, param_strides, param_length, sz, dst,
                       src, par, &length)
    dst_bits, dst_carrier = _carrier(dst_type)
    src_bits, src_carrier = _carrier(src_type)
    check_pair(dst_carrier, src_carrier, affine)
    dst_base = as_int64(dst_first, "dst_first")
    src_base = as_int64(src_first, "src_first")
    for bits, base, name in ((dst_bits, dst_base, "dst_first"), (src_bits, src_base, "src_first")):
        if bits != 4 and base != 0:
            raise ValueError(f"{name} is {base}: only a 4-bit side starts inside a byte")
    nthreads = copy_threads(num_threads)
    dptr = <char*><intptr_t>as_int64(dst_address, "dst_address")
    sptr = <const char*><intptr_t>as_int64(src_address, "src_address")
    if c_size(nd, sz, &count):
        raise OverflowError(f"the number of elements of sizes {tuple_of(nd, sz)!r} leaves int64")
    # (a 4-bit side's nibble offsets are checked as offsets of 1-byte items: bytes are fewer)
    check_byte_span(nd, sz, dst, 1 if dst_bits == 4 else st_type_size[_CODES[dst_type]],
                    "dst_strides")
    check_byte_span(nd, sz, src, 1 if src_bits == 4 else st_type_size[_CODES[src_type]],
                    "src_strides")
    if count and (dptr == NULL or sptr == NULL):
        raise ValueError(f"{'dst_address' if dptr == NULL else 'src_address'} is NULL (0) "
                         f"but the conversion has {count} elements")
    if count:
        _refuse_self_overlap(nd, sz, dst)
    if divide and (dst_bits == 4 or src_bits == 4):
        raise TypeError("divide converts byte-sized elements only, not int4/uint4")
    load_params(&params, scale, shift, length, _CODES[src_carrier])
    try:
        _set_divide(&params, divide, src_carrier)
        if dst_bits == 4 or src_bits == 4:
            convert_nibbles(dptr, dst_base, _CODES[dst_carrier], dst_bits, sptr, src_base,
                            _CODES[src_carrier], src_bits, nd, sz, dst, src, &params, par,
                            count, nthreads)
        else:
            convert_elements(dptr, sptr, nd, sz, dst, src, _CODES[dst_type], _CODES[src_type],
                             &params, par, count, nthreads)
    finally:
        free_params(&params)


cdef int _set_divide(Params* params, object divide, str src_type) except -1:
    """Make an affine conversion divide by its scale (ST_CVT_DIV32) when ``divide`` is true:
    float32 compute types only (the torchvision-exact mode's division is in float32)."""
    if type(divide) is not bool:
        raise TypeError(f"divide must be True or False, got {type(divide).__name__}")
    if not divide:
        return 0
    if params.mode == ST_CVT_PLAIN:
        raise ValueError("divide=True divides by the scale: give a scale")
    if params.mode != ST_CVT_AFF32:
        raise TypeError(f"divide computes in float32, but a {src_type} source converts in "
                        f"{compute_type(src_type)}")
    params.mode = ST_CVT_DIV32
    return 0


cdef bint _in_place(const Plan* P, const char* dptr, const char* sptr, int nd,
                    const int64_t* dst, const int64_t* src) noexcept nogil:
    """A conversion of items of one size onto themselves (same address, same strides) by rows
    that load a chunk before they store it (the generic rows, the division's fused row: the
    torchvision form's division of a batch in place): exact without the overlap routes'
    buffer."""
    cdef int i
    if dptr != sptr or P.dsz != P.ssz or (P.fused != NULL and P.mode != ST_CVT_DIV32):
        return False
    for i in range(nd):
        if dst[i] != src[i]:
            return False
    return True


cdef int convert_elements(char* dptr, const char* sptr, int nd, const int64_t* sizes,
                          const int64_t* dst_strides, const int64_t* src_strides, int dst_code,
                          int src_code, const Params* params, const int64_t* par,
                          int64_t count, int nthreads) except -1:
    """Convert between two validated memory blocks (element strides; ``count`` elements):
    the shared end of :func:`convert_memory` and of the compiled numpy fast path, which read
    the parameters (load_params).

    The caller has checked the pair (:func:`check_pair`), the byte spans and that the
    destination does not overlap itself. Raises for parameter strides reaching outside the
    parameters (before writing); returns 0 when done.
    """
    cdef int64_t sz[MAX_NDIM]
    cdef int64_t dst[MAX_NDIM]
    cdef int64_t src[MAX_NDIM]
    cdef int64_t dlo, dhi, slo, shi
    cdef int i, most
    cdef Plan P
    cdef Tuning T = tuning_now()   # the knobs for this call (its routes run without the GIL)
    for i in range(nd):
        sz[i], dst[i], src[i] = sizes[i], dst_strides[i], src_strides[i]
    _take_params(&P, dst_code, src_code, params, nd, sz, par, count)
    if count == 0:
        return 0
    # The identity rows of the engine's table: a plain cast to the same type, or between
    # integer types of one width, is a copy (the bytes as they are, as numpy's astype gives
    # them: NaN payloads and all, and two's complement wrapping). The copy refuses only what
    # the caller has ruled out (a self-overlapping destination, spans leaving int64); then it
    # would convert below.
    if _bit_copy(&P) and copy_elements(
            dptr, sptr, nd, sz, dst, src, P.dsz, count, nthreads) == 0:
        return 0
    byte_span_leaves_int64(nd, sz, dst, P.dsz, &dlo, &dhi)
    byte_span_leaves_int64(nd, sz, src, P.ssz, &slo, &shi)
    if _in_place(&P, dptr, sptr, nd, dst, src):
        pass   # each element read, then written where it was read: no route needed
    elif not (dptr + (dhi + 1) * P.dsz <= sptr + slo * P.ssz
              or sptr + (shi + 1) * P.ssz <= dptr + dlo * P.dsz):
        # the byte ranges meet: the engine's overlap policy, converting as it reads
        if _convert_overlapping(&P, dptr, sptr, nd, sz, dst, src, par, nthreads, &T) == 0:
            return 0
    P.nbytes = count * (P.dsz + P.ssz)
    _plan(&P, nd, sz, dst, src, par, &T)
    if P.keeps_gil:
        nthreads = 1
    most = _most_threads(&P, nthreads)
    if _stages(&P, count, most, &T):
        return _convert_staged(&P, dptr, sptr, nd, sz, dst, src, par, count, nthreads, &T)
    return _run_planned(&P, &dptr, &sptr, 1, nthreads, most, &T)


cdef int _take_params(Plan* P, int dst_code, int src_code, const Params* params, int nd,
                      const int64_t* sizes, const int64_t* par, int64_t count) except -1:
    """A conversion's pair, mode, item sizes, row kernel and parameters into P; ValueError,
    before anything is written, when the parameter strides reach outside the parameters."""
    cdef int64_t plo, phi
    cdef int64_t length = params.length
    if c_span(nd, sizes, par, 0, &plo, &phi) or (count and (plo < 0 or phi >= length)):
        raise ValueError(f"param_strides {tuple_of(nd, par)!r} reach parameters outside the "
                         f"{length} given")
    P.stype = src_code
    P.dtype = dst_code
    P.mode = params.mode
    P.dsz = st_type_size[P.dtype]
    P.ssz = st_type_size[P.stype]
    P.ct = params.ct
    P.scale = params.values
    P.shift = params.values + length * P.ct
    P.fused = st_cvt_fused(P.stype, P.dtype, P.mode, simd_level())
    return 0


cdef int _run_planned(Plan* P, char** dsts, const char** srcs, int64_t copies, int nthreads,
                      int most, const Tuning* T) except -1:
    """Run a planned conversion on ``copies`` address pairs (execute_many): every thread's
    staging tile and the parameter period had before any byte is written, then the team (or
    the calling thread, with the GIL, for small work)."""
    cdef char* tiles = <char*>PyMem_RawMalloc(<size_t>max(<int64_t>1, most * P.scratch_bytes))
    if tiles == NULL:
        raise MemoryError(f"no memory for {most} staging tiles; nothing was written")
    try:
        _unroll_period(P, T)
        if P.keeps_gil:
            execute_many(P, dsts, srcs, copies, 1, 1, tiles)
        else:
            with nogil:
                execute_many(P, dsts, srcs, copies, nthreads, most, tiles)
    finally:
        PyMem_RawFree(P.period_scale)
        PyMem_RawFree(tiles)
    return 0


# ---- many copies of one problem: a batch ----------------------------------------------------

def convert_many(dst_addresses, src_addresses, sizes, dst_strides, src_strides, dst_type,
                 src_type, scale=None, shift=None, param_strides=None, param_length=1,
                 num_threads=None, divide=False):
    """:func:`convert_memory` for many address pairs of one layout pair, as one job.

    Pair ``k`` converts ``src_addresses[k]`` into ``dst_addresses[k]`` exactly as
    :func:`convert_memory` would (a plain copy when the types are the same and no parameter
    is given); the plan is made once and the threads of one team claim blocks across all the
    pairs, so a batch of small images keeps every thread busy (:func:`strided.stack`).

    Unlike :func:`convert_memory`, the pairs must not share memory: no source may share a
    byte with any destination, and no two destinations a byte (ValueError naming the pair,
    before anything is written). Byte-sized types only (no int4/uint4).

    Parameters
    ----------
    dst_addresses, src_addresses : sequence of int
        As many of each; read once, into the engine's own memory, before anything else is
        done with them.
    sizes, dst_strides, src_strides, dst_type, src_type, scale, shift, param_strides, \
param_length, num_threads, divide :
        As for :func:`convert_memory`, shared by every pair.

    Raises
    ------
    TypeError, ValueError, OverflowError
        As :func:`convert_memory`, and ValueError for sequences of different lengths or
        pairs that share memory.
    """
    cdef int64_t sz[MAX_NDIM]
    cdef int64_t dst[MAX_NDIM]
    cdef int64_t src[MAX_NDIM]
    cdef int64_t par[MAX_NDIM]
    cdef int64_t count, length, copies, k, dlo, dhi, slo, shi
    cdef int nd, nthreads, dsz, ssz
    cdef char** dsts = NULL
    cdef const char** srcs = NULL
    cdef Params params
    scale = load_parameter(scale, "scale")
    shift = load_parameter(shift, "shift")
    affine = scale is not None or shift is not None
    nd = _load_problem(sizes, dst_strides, src_strides, param_strides, param_length, sz, dst,
                       src, par, &length)
    for name in (dst_type, src_type):
        if _carrier(name)[0] == 4:
            raise TypeError(f"convert_many converts byte-sized types, not {name}")
    check_pair(dst_type, src_type, affine)
    nthreads = copy_threads(num_threads)
    # the addresses: read once (a sequence that changes while it is read is read as it was)
    dst_list = tuple(dst_addresses)
    src_list = tuple(src_addresses)
    if len(dst_list) != len(src_list):
        raise ValueError(f"{len(dst_list)} dst_addresses but {len(src_list)} src_addresses: "
                         f"give one of each per pair")
    copies = len(dst_list)
    dsz = st_type_size[_CODES[dst_type]]
    ssz = st_type_size[_CODES[src_type]]
    if c_size(nd, sz, &count):
        raise OverflowError(f"the number of elements of sizes {tuple_of(nd, sz)!r} leaves int64")
    check_byte_span(nd, sz, dst, dsz, "dst_strides")
    check_byte_span(nd, sz, src, ssz, "src_strides")
    byte_span_leaves_int64(nd, sz, dst, dsz, &dlo, &dhi)
    byte_span_leaves_int64(nd, sz, src, ssz, &slo, &shi)
    if count:
        _refuse_self_overlap(nd, sz, dst)
    dsts = <char**>PyMem_RawMalloc(<size_t>max(<int64_t>1, copies) * sizeof(char*))
    srcs = <const char**>PyMem_RawMalloc(<size_t>max(<int64_t>1, copies) * sizeof(char*))
    if dsts == NULL or srcs == NULL:
        PyMem_RawFree(dsts)
        PyMem_RawFree(<void*>srcs)
        raise MemoryError()
    try:
        for k in range(copies):
            dsts[k] = <char*><intptr_t>as_int64(dst_list[k], f"dst_addresses[{k}]")
            srcs[k] = <const char*><intptr_t>as_int64(src_list[k], f"src_addresses[{k}]")
            if count and (dsts[k] == NULL or srcs[k] == NULL):
                raise ValueError(f"{'dst' if dsts[k] == NULL else 'src'}_addresses[{k}] is "
                                 f"NULL (0) but the conversion has {count} elements")
        if count == 0 or copies == 0:
            return
        _refuse_shared_pairs(dsts, srcs, copies, dlo * dsz, (dhi + 1) * dsz, slo * ssz,
                             (shi + 1) * ssz)
        load_params(&params, scale, shift, length, _CODES[src_type])
        try:
            _set_divide(&params, divide, src_type)
            _convert_many(dsts, srcs, copies, nd, sz, dst, src, _CODES[dst_type],
                          _CODES[src_type], &params, par, count, nthreads)
        finally:
            free_params(&params)
    finally:
        PyMem_RawFree(dsts)
        PyMem_RawFree(<void*>srcs)


cdef int _refuse_shared_pairs(char** dsts, const char** srcs, int64_t copies, int64_t dlo,
                              int64_t dhi, int64_t slo, int64_t shi) except -1:
    """ValueError when a source's byte range meets a destination's, or two destinations'
    ranges meet (``[lo, hi)`` bytes from each address): convert_many runs the pairs at once,
    so no pair may read or write what another writes. Ranges, not bytes: interleaved
    layouts that share no byte are refused too (strided.stack stages those)."""
    cdef int64_t j, k
    cdef intptr_t a, b
    for j in range(copies):
        a = <intptr_t>dsts[j]
        for k in range(copies):
            b = <intptr_t>srcs[k]
            if a + dhi > b + slo and b + shi > a + dlo:
                raise ValueError(f"src_addresses[{k}] shares memory with dst_addresses[{j}]: "
                                 f"the pairs of a batch must not share memory")
            b = <intptr_t>dsts[k]
            if k != j and a + dhi > b + dlo and b + dhi > a + dlo:
                raise ValueError(f"dst_addresses[{j}] and dst_addresses[{k}] share memory: "
                                 f"the destinations of a batch must not overlap")
    return 0


cdef inline bint _bit_copy(const Plan* P) noexcept nogil:
    """Whether a plan's conversion leaves every element's bytes as they are: a plain cast to
    the same type, or between integer types (not bool) of the same width, which wraps
    modulo 2^bits, that is keeps the bits."""
    if P.mode != ST_CVT_PLAIN:
        return False
    return P.stype == P.dtype or (ST_I8 <= P.stype <= ST_U64 and ST_I8 <= P.dtype <= ST_U64
                                  and P.ssz == P.dsz)


cdef int _convert_many(char** dsts, const char** srcs, int64_t copies, int nd,
                       const int64_t* sizes, const int64_t* dst_strides,
                       const int64_t* src_strides, int dst_code, int src_code,
                       const Params* params, const int64_t* par, int64_t count,
                       int nthreads) except -1:
    """convert_elements for ``copies`` pairs that share no memory, as one job: one plan
    sized for the work of them all (team, streaming), run by execute_many."""
    cdef Plan P
    cdef Tuning T = tuning_now()
    _take_params(&P, dst_code, src_code, params, nd, sizes, par, count)
    if _bit_copy(&P):                                     # an identity row: a copy
        return copy_elements_many(dsts, srcs, copies, nd, sizes, dst_strides, src_strides,
                                  P.dsz, nthreads)
    P.nbytes = copies * count * (P.dsz + P.ssz)
    _plan(&P, nd, sizes, dst_strides, src_strides, par, &T)
    if P.keeps_gil:
        nthreads = 1
    return _run_planned(&P, dsts, srcs, copies, nthreads, _most_threads(&P, nthreads), &T)


# ---- a source that shares memory with the destination ----------------------------------------
# The copy engine's overlap policy (_copy.copy_overlapping: the exact decision, a shift through
# a small buffer, an in-place transpose two tiles at a time, the whole source staged only for
# the rest), with a Reader that converts each block of the source into the route's buffer of
# destination items. Its tiles and parameter period are had before any byte is written.

ctypedef struct _ReadCtx:
    const Plan* P          # the conversion: its pair and parameters
    char* tiles
    int64_t tile_bytes     # each thread's tile
    int most               # threads the tiles are had for
    char* period           # an unrolled parameter period (_fill_period) ...
    int64_t period_items   # ... of at most this many items
    const Tuning* tuning   # the conversion's snapshot of the knobs


cdef void _read_converted(const void* ctx, char* tmp, const int64_t* tstr, const char* src,
                          int nd, const int64_t* sizes, const int64_t* sstr, int64_t poff,
                          const int64_t* pstr, int nthreads) noexcept nogil:
    """A Reader's read: convert a block of the source into ``tmp`` (strides ``tstr``)."""
    cdef const _ReadCtx* C = <const _ReadCtx*>ctx
    cdef Plan Q
    cdef int64_t zeros[MAX_NDIM]
    cdef int64_t count = 1, tile, period
    cdef int i, most
    for i in range(nd):
        count *= sizes[i]
        zeros[i] = 0
    _take_pair(&Q, C.P)
    Q.nbytes = count * (Q.dsz + Q.ssz)
    _plan(&Q, nd, sizes, tstr, sstr, pstr if pstr != NULL else zeros, C.tuning)
    Q.scale = C.P.scale + poff * Q.ct
    Q.shift = C.P.shift + poff * Q.ct
    most = min(_most_threads(&Q, nthreads), C.most)
    tile = Q.scratch_bytes   # planned with the knobs the tiles were had with: it fits
    if tile > C.tile_bytes:  # (a bug if so; kept safe all the same) convert row by row
        Q.kind = ST_BLOCK_COPY
        Q.stream = 0         # (a transpose's flags: its rows are not the dense rows that stream)
        Q.scratch_bytes = tile = 0
    if tile > 0:
        most = <int>min(<int64_t>most, C.tile_bytes // tile)
    period = _period_items(&Q, C.tuning)
    if 0 < period <= C.period_items:
        _fill_period(&Q, C.period, period)
    execute(&Q, tmp, src, nthreads, most, C.tiles)


cdef int _convert_overlapping(const Plan* P, char* dptr, const char* sptr, int nd,
                              const int64_t* sz, const int64_t* dst, const int64_t* src,
                              const int64_t* par, int nthreads, const Tuning* T) except -1:
    """Convert through the overlap policy; 1 (nothing done) when the two share no byte."""
    cdef _ReadCtx C
    cdef Reader R
    C.P = P
    C.most = nthreads if nthreads > 0 else default_threads()
    # the largest tile _plan sizes (see there): the room, or 16 rows of the tile's columns
    C.tile_bytes = max(T.convert_tile_bytes, T.convert_tiled_bytes,
                       16 * T.convert_tile_columns * max(P.dsz, P.ssz))
    C.period_items = T.convert_period_items
    C.tuning = T
    C.tiles = <char*>PyMem_RawMalloc(<size_t>(C.most * C.tile_bytes))
    C.period = <char*>PyMem_RawMalloc(<size_t>(2 * C.period_items * P.ct))
    R.read = _read_converted
    R.ctx = &C
    R.dsz, R.ssz = P.dsz, P.ssz
    R.tuning = T
    try:
        if C.tiles == NULL or C.period == NULL:
            raise MemoryError("no memory for the conversion's tiles; nothing was written")
        return copy_overlapping(dptr, sptr, nd, sz, dst, src, par, &R, nthreads)
    finally:
        PyMem_RawFree(C.tiles)
        PyMem_RawFree(C.period)


# ---- narrowing transposes through a chunk in the source's order ------------------------------
# A large narrowing transpose (float32 NCHW -> float16 NHWC, -> int8 NCHW32) converts a chunk of
# the source, in the source's own order, into a temporary of the destination's type (a
# contiguous conversion), then hands the relayout of that chunk to the copy engine, whose
# transposes are tuned to the memory system. Paired at 64 MiB (AMD EPYC), float32 NCHW ->
# float16 NHWC took 11.3 ms through the conversion's own tiles on 1 thread, against 3.4 ms for
# a contiguous cast plus 5.2 ms for the engine's float16 relayout of the same data; staged in
# chunks that stay in cache between the two passes it took 7.1 ms.

cdef bint _stages(const Plan* P, int64_t count, int team, const Tuning* T) noexcept nogil:
    """Whether a plan takes the staged route: by default, large narrowing transposes on one
    thread. Paired (AMD EPYC, 1 thread): float32 -> float16 / bfloat16 NHWC at 64 MiB 0.6-0.7x
    the time of the tiles, -> int8 NCHW4/NCHW32 and CHW float32 -> HWC uint8 0.9-0.97x. On a
    team of 2 the chunks run one after another, each a parallel region of its own, and the
    tiles (each thread its share of them) were as fast or faster (0.93-1.42x), so a team keeps
    the tiles."""
    cdef int chunked = T.convert_chunked
    if P.kind != ST_BLOCK_TRANSPOSE or chunked == 0 or (
            (P.pixels != NULL or P.tiled != NULL) and chunked < 0):
        return False
    return chunked == 1 or (P.dsz < P.ssz and count * P.dsz >= T.convert_chunked_from
                            and team == 1)


cdef int _convert_staged(Plan* P, char* dptr, const char* sptr, int nd,
                         const int64_t* sz, const int64_t* dst, const int64_t* src,
                         const int64_t* par, int64_t count, int nthreads,
                         const Tuning* T) except -1:
    """The staged route (see above): the dims innermost in the source make a chunk, as far
    as the destination's innermost dim (the chunk must hold a transpose) and then while it
    stays within convert_chunk_bytes of the destination's items; the others are looped over."""
    cdef int order[MAX_NDIM]
    cdef int inner[MAX_NDIM]
    cdef int outer[MAX_NDIM]
    cdef int64_t isz[MAX_NDIM]
    cdef int64_t idst[MAX_NDIM]
    cdef int64_t isrc[MAX_NDIM]
    cdef int64_t ipar[MAX_NDIM]
    cdef int64_t itmp[MAX_NDIM]
    cdef int64_t idx[MAX_NDIM]
    cdef int64_t chunk = 1, doff = 0, soff = 0, poff = 0
    cdef int i, k, n_in = 0, n_out = 0, nt, unit = -1
    cdef bint have_unit = False
    cdef Plan Q
    cdef char* temp = NULL
    cdef char* tiles = NULL
    cdef const char* scale0 = P.scale
    cdef const char* shift0 = P.shift
    for i in range(nd):    # the destination's innermost dim
        if sz[i] > 1 and (dst[i] == 1 or dst[i] == -1):
            unit = i
    c_physical_order(nd, sz, src, order)
    for k in range(nd - 1, -1, -1):    # innermost in the source first
        i = order[k]
        if n_out == 0 and (not have_unit or chunk * sz[i] * P.dsz <= T.convert_chunk_bytes):
            inner[n_in] = i
            chunk *= sz[i]
            n_in += 1
            have_unit = have_unit or i == unit
        else:
            outer[n_out] = i
            n_out += 1
    # the chunk's dims in the source's order, outermost first, and a packed temporary so
    for k in range(n_in):
        i = inner[n_in - 1 - k]
        isz[k], idst[k], isrc[k], ipar[k] = sz[i], dst[i], src[i], par[i]
        order[k] = k
    c_packed_strides(n_in, isz, order, NULL, itmp)
    _take_pair(&Q, P)
    Q.nbytes = chunk * (P.dsz + P.ssz)
    _plan(&Q, n_in, isz, itmp, isrc, ipar, T)
    for k in range(n_out):    # parameters moving from chunk to chunk: no fixed period
        Q.outer_params = Q.outer_params or par[outer[k]] != 0
    nt = _most_threads(&Q, nthreads)
    temp = <char*>PyMem_RawMalloc(<size_t>(chunk * P.dsz))
    tiles = <char*>PyMem_RawMalloc(<size_t>max(<int64_t>1, nt * Q.scratch_bytes))
    try:
        if temp == NULL or tiles == NULL:
            raise MemoryError("no memory for the conversion's staging chunk; nothing was written")
        Q.scale, Q.shift = scale0, shift0
        _unroll_period(&Q, T)   # (only when no outer dim moves the parameters: then fixed)
        for k in range(n_out):
            idx[k] = 0
        while True:
            Q.scale = scale0 + poff * P.ct
            Q.shift = shift0 + poff * P.ct
            with nogil:
                execute(&Q, temp, sptr + soff * P.ssz, nthreads, nt, tiles)
            copy_elements(dptr + doff * P.dsz, temp, n_in, isz, idst, itmp, P.dsz, chunk,
                          nthreads)
            k = n_out - 1      # odometer over the outer dims
            while k >= 0:
                i = outer[k]
                idx[k] += 1
                doff += dst[i]
                soff += src[i]
                poff += par[i]
                if idx[k] < sz[i]:
                    break
                doff -= idx[k] * dst[i]
                soff -= idx[k] * src[i]
                poff -= idx[k] * par[i]
                idx[k] = 0
                k -= 1
            if k < 0:
                break
    finally:
        PyMem_RawFree(Q.period_scale)
        PyMem_RawFree(temp)
        PyMem_RawFree(tiles)
    return 0


cdef int _refuse_self_overlap(int nd, const int64_t* sz, const int64_t* dst) except -1:
    cdef int answer = c_overlaps(nd, sz, dst, default_max_work())
    if answer == OVERLAP_UNDECIDED:
        raise_too_hard(f"deciding whether the destination (dst_strides {tuple_of(nd, dst)!r}, "
                       f"sizes {tuple_of(nd, sz)!r}) overlaps itself", default_max_work())
    if answer:
        raise ValueError(
            f"the destination overlaps itself: two of its elements share memory (dst_strides "
            f"{tuple_of(nd, dst)!r}, sizes {tuple_of(nd, sz)!r}), so a conversion into it is "
            f"ambiguous")
    return 0


# --------------------------------------------------------------------------------------------
# 4-bit elements
# --------------------------------------------------------------------------------------------
# int4 / uint4 elements (strided._dtypes.SUB_BYTE) move through bytes of their carrier (int8
# sign-extended, uint8): the problem is cut into boxes of about nibble_box_bytes carrier items,
# each a sub-box of the index space (whole inner dims, a range of one dim) in the 4-bit side's
# order. A box of a 4-bit source is unpacked into a packed box of carrier bytes; the box is
# converted by this engine's own plan (carrier <-> any type, any strides, the parameters at the
# box's place: a float32 NCHW plane block to int8 pixels is the NCHW32 quantize's transpose);
# a box of a 4-bit destination is packed from its carrier bytes. The boxes stay in L1/L2, so
# memory sees one read of the source and one write of the destination. Boxes run on the
# engine's team (run_team), each thread with its own carrier boxes and tile; a 4-bit
# destination takes more than one thread only when it is byte-addressable (offset even,
# strides >= 0, all but one unit stride even) and its boxes start on even elements: then no
# two threads write the same byte.

cdef extern from "_kernels/nibbles.h":
    enum:
        ST_NIB_WRAP
        ST_NIB_SAT_I4
        ST_NIB_SAT_U4
    void st_pack4(unsigned char* d, int first, const char* s, Py_ssize_t n,
                  int how) noexcept nogil
    void st_unpack4(char* d, const unsigned char* s, int first, Py_ssize_t n,
                    int sign) noexcept nogil
    char st_nib_get(const unsigned char* base, int64_t at, int sign) noexcept nogil
    void st_nib_put(unsigned char* base, int64_t at, const char* value, int how) noexcept nogil
    void st_pack4_rows(unsigned char* d, const char* even, const char* odd, Py_ssize_t n,
                       int how) noexcept nogil
    void st_unpack4_rows(char* even, char* odd, const unsigned char* s, Py_ssize_t n,
                         int sign) noexcept nogil
    ctypedef void (*st_unpack4_f32_fn)(char* even, char* odd, const unsigned char* s,
                                       Py_ssize_t n, const float* te, const float* to,
                                       int stream) noexcept nogil
    st_unpack4_f32_fn st_unpack4_f32(int simd) noexcept nogil
    ctypedef void (*st_pack4_f32_fn)(unsigned char* d, const char* even, const char* odd,
                                     Py_ssize_t n, float ae, float ce, float ao, float co,
                                     int sign) noexcept nogil
    st_pack4_f32_fn st_pack4_f32(int simd) noexcept nogil
    const char* st_nib_carriers[2]


ctypedef struct _Nibbles:
    Plan P                  # the carriers' pair, mode, item sizes and parameters; the run
    const Tuning* T
    int nd                  # dims (size-1 dims dropped), in the 4-bit side's order
    int split               # dims after it are whole in a box; it is cut in ranges of `rows`
    int64_t rows, ranges
    int64_t box             # carrier items of a whole box
    int64_t tile_bytes      # each thread's tile for the box's plan ...
    int64_t period_items    # ... and its parameter period
    int dst_how             # a 4-bit destination: how a carrier byte becomes a nibble; else -1
    int src_sign            # a 4-bit source: 1 int4, 0 uint4; else -1
    bint dst_dense          # the 4-bit side's box is one run of nibbles, in the box's order
    bint src_dense
    bint planes             # the box is planes <-> dense pixel blocks (_planes_route)
    st_unpack4_f32_fn tables  # ... whose 4-bit pairs go to float32 planes by lookup, or NULL
    st_pack4_f32_fn packs   # ... whose float32 planes go to 4-bit pairs in one pass, or NULL
    pixels_fn pixels64      # ... or, 64 of them, straight to 4-bit pixels (NCHW64), or NULL
    int stream              # ... those planes streamed (destinations far larger than caches)
    int64_t dbase, sbase    # nibble offset of element 0 from the address (4-bit sides)
    int64_t sizes[MAX_NDIM]
    int64_t dstr[MAX_NDIM]
    int64_t sstr[MAX_NDIM]
    int64_t pstr[MAX_NDIM]
    int64_t bstr[MAX_NDIM]  # a packed box's strides (dims split..nd-1)


cdef inline int64_t _align64(int64_t n) noexcept nogil:
    return (n + 63) // 64 * 64


cdef bint _box_dense(const _Nibbles* N, const int64_t* strides) noexcept nogil:
    """Whether every box of a side is one run of nibbles in the box's own order."""
    cdef int i
    for i in range(N.split, N.nd):
        if strides[i] != N.bstr[i]:
            return False
    return True


cdef inline int64_t _step(int64_t* idx, const int64_t* bsz, const int64_t* strides, int nb,
                          int64_t at) noexcept nogil:
    """The odometer of a box (dims of sizes ``bsz``, innermost last): the next index after
    ``idx``, and the offset ``at`` moved with it along ``strides``."""
    cdef int i = nb - 1
    while i >= 0:
        idx[i] += 1
        at += strides[i]
        if idx[i] < bsz[i]:
            return at
        at -= idx[i] * strides[i]
        idx[i] = 0
        i -= 1
    return at


cdef void _gather4(const _Nibbles* N, char* out, const unsigned char* base, int64_t at,
                   const int64_t* bsz, int sign) noexcept nogil:
    """A box of a 4-bit source that is not one run: element by element into packed
    carriers."""
    cdef int64_t idx[MAX_NDIM]
    cdef int64_t k, total = 1
    cdef int i, nb = N.nd - N.split
    for i in range(nb):
        idx[i] = 0
        total *= bsz[i]
    for k in range(total):
        out[k] = st_nib_get(base, at, sign)
        at = _step(idx, bsz, N.sstr + N.split, nb, at)


cdef void _scatter4(const _Nibbles* N, unsigned char* base, int64_t at, const char* values,
                    const int64_t* bsz, int how) noexcept nogil:
    """The inverse, into a 4-bit destination's box."""
    cdef int64_t idx[MAX_NDIM]
    cdef int64_t k, total = 1
    cdef int i, nb = N.nd - N.split
    for i in range(nb):
        idx[i] = 0
        total *= bsz[i]
    for k in range(total):
        st_nib_put(base, at, values + k, how)
        at = _step(idx, bsz, N.dstr + N.split, nb, at)


cdef void _convert_box(const _Nibbles* N, char* dst, const int64_t* dstr, const char* src,
                       const int64_t* sstr, const int64_t* bsz, int64_t count, int64_t poff,
                       char* tile, char* period) noexcept nogil:
    """Convert one box with the engine's own plan, on this thread."""
    cdef Plan Q
    cdef int64_t items
    _take_pair(&Q, &N.P)
    Q.nbytes = count * (Q.dsz + Q.ssz)
    _plan(&Q, N.nd - N.split, bsz, dstr, sstr, N.pstr + N.split, N.T)
    Q.scale = N.P.scale + poff * Q.ct
    Q.shift = N.P.shift + poff * Q.ct
    Q.stream = 0                    # (the box is in cache)
    if Q.scratch_bytes > N.tile_bytes:   # (not planned so; kept safe all the same)
        Q.kind = ST_BLOCK_COPY
        Q.tiled = NULL
        Q.pixels = NULL
        Q.planes = NULL
    items = _period_items(&Q, N.T)
    if 0 < items <= N.period_items:
        _fill_period(&Q, period, items)
    Q.run(&Q, dst, src, 0, Q.items, tile)


cdef int64_t _box_at(const _Nibbles* N, int64_t item, int64_t* bsz, int64_t* doff,
                     int64_t* soff, int64_t* poff) noexcept nogil:
    """Box ``item``: its sizes (dims split..nd-1), the element offsets of its first element
    in each operand and the parameters; returns its number of elements."""
    cdef int64_t rest = item // N.ranges, r0 = (item % N.ranges) * N.rows, idx, count = 1
    cdef int i
    doff[0] = r0 * N.dstr[N.split]
    soff[0] = r0 * N.sstr[N.split]
    poff[0] = r0 * N.pstr[N.split]
    for i in range(N.split - 1, -1, -1):
        idx = rest % N.sizes[i]
        rest = rest // N.sizes[i]
        doff[0] += idx * N.dstr[i]
        soff[0] += idx * N.sstr[i]
        poff[0] += idx * N.pstr[i]
    for i in range(N.nd - N.split):
        bsz[i] = N.sizes[N.split + i]
        count *= bsz[i]
    count = count // bsz[0] * min(N.rows, bsz[0] - r0)
    bsz[0] = min(N.rows, bsz[0] - r0)
    return count


cdef bint _planes_route(const _Nibbles* N) noexcept nogil:
    """Whether every box is planes of the byte-sized side <-> dense pixel blocks of the 4-bit
    side: the 4-bit side one run of whole bytes in the box's order, its unit dim (the last,
    whole in a box, of even size: the channels of NCHW64) a plane stride apart on the other
    side, whose other box dims make one contiguous run (a plane's pixels), with no parameters
    along them. Then a box converts plane rows with the fused row kernels, packs (or unpacks)
    pairs of planes into bytes and transposes the bytes with the copy engine's kernels."""
    cdef int u = N.nd - 1, k
    cdef const int64_t* four
    cdef const int64_t* other
    cdef int64_t base
    if N.split >= u or N.sizes[u] % 2:
        return False
    if N.dst_how >= 0 and N.src_sign < 0 and N.dst_dense:
        four, other, base = N.dstr, N.sstr, N.dbase
    elif N.src_sign >= 0 and N.dst_how < 0 and N.src_dense:
        four, other, base = N.sstr, N.dstr, N.sbase
    else:
        return False
    if base & 1 or other[u - 1] != 1:
        return False
    for k in range(u):
        if four[k] & 1 or N.pstr[k] != 0 or four[k] < 0:
            return False
        if N.split <= k < u - 1 and other[k] != other[k + 1] * N.sizes[k + 1]:
            return False
    return True


cdef void _planes_box(const _Nibbles* N, char* dptr, const char* sptr, int64_t doff,
                      int64_t soff, int64_t poff, int64_t count, char* pairs,
                      char* planes) noexcept nogil:
    """One box of the planes route (_planes_route): U planes of P pixels, ``planes`` their
    carriers, ``pairs`` the U/2 rows of packed bytes."""
    cdef st_cvt_op op
    cdef int u = N.nd - 1
    cdef int64_t U = N.sizes[u], P = count // N.sizes[u], c, k
    cdef const char* scale
    cdef const char* shift
    op.stype, op.dtype, op.mode, op.fused = N.P.stype, N.P.dtype, N.P.mode, N.P.fused
    if N.pixels64 != NULL:      # (U == 64)
        N.pixels64(dptr + ((N.dbase + doff) >> 1), sptr + soff * N.P.ssz, P,
                   N.sstr[u] * N.P.ssz, N.P.scale + poff * N.P.ct, N.P.shift + poff * N.P.ct,
                   N.pstr[u], pairs, P * U // 2)
        return
    if N.packs != NULL:
        _pack_planes(N, sptr, soff, poff, P, pairs)
        transpose_block(1, dptr + ((N.dbase + doff) >> 1), U // 2, pairs, P, P, U // 2)
        return
    if N.dst_how >= 0:
        for c in range(U):
            scale = N.P.scale + (poff + c * N.pstr[u]) * N.P.ct
            shift = N.P.shift + (poff + c * N.pstr[u]) * N.P.ct
            st_cvt_row(&op, planes + c * P, 1, sptr + (soff + c * N.sstr[u]) * N.P.ssz, 1, P,
                       scale, shift, 0)
        for k in range(U // 2):
            st_pack4_rows(<unsigned char*>pairs + k * P, planes + 2 * k * P,
                          planes + (2 * k + 1) * P, P, N.dst_how)
        transpose_block(1, dptr + ((N.dbase + doff) >> 1), U // 2, pairs, P, P, U // 2)
        return
    transpose_block(1, pairs, P, sptr + ((N.sbase + soff) >> 1), U // 2, U // 2, P)
    if N.tables != NULL:
        _unpack_by_tables(N, &op, dptr, doff, poff, P, pairs)
        return
    for k in range(U // 2):
        st_unpack4_rows(planes + 2 * k * P, planes + (2 * k + 1) * P,
                        <const unsigned char*>pairs + k * P, P, N.src_sign)
    for c in range(U):
        scale = N.P.scale + (poff + c * N.pstr[u]) * N.P.ct
        shift = N.P.shift + (poff + c * N.pstr[u]) * N.P.ct
        st_cvt_row(&op, dptr + (doff + c * N.dstr[u]) * N.P.dsz, 1, planes + c * P, 1, P,
                   scale, shift, 0)


cdef void _pack_planes(const _Nibbles* N, const char* sptr, int64_t soff, int64_t poff,
                       int64_t P, char* pairs) noexcept nogil:
    """The quantize end of a planes box (N.packs): each pair of float32 planes into its row of
    packed bytes, converted on the way."""
    cdef int u = N.nd - 1
    cdef int64_t k, e, o
    cdef const float* a = <const float*>N.P.scale
    cdef const float* c = <const float*>N.P.shift
    for k in range(N.sizes[u] // 2):
        e = poff + 2 * k * N.pstr[u]
        o = poff + (2 * k + 1) * N.pstr[u]
        N.packs(<unsigned char*>pairs + k * P, sptr + (soff + 2 * k * N.sstr[u]) * N.P.ssz,
                sptr + (soff + (2 * k + 1) * N.sstr[u]) * N.P.ssz, P, a[e], c[e], a[o], c[o],
                N.dst_how == ST_NIB_SAT_I4)


cdef void _unpack_by_tables(const _Nibbles* N, const st_cvt_op* op, char* dptr, int64_t doff,
                            int64_t poff, int64_t P, const char* pairs) noexcept nogil:
    """The dequantize end of a planes box (N.tables): per plane, the converted values of the
    16 nibbles (the row kernel's own results), then each row of packed pairs looked up into
    its two float32 planes."""
    cdef float tables[64 * 16]      # U <= 64 (_plan_nibbles)
    cdef int u = N.nd - 1
    cdef int64_t U = N.sizes[u], c, k
    cdef const char* values = st_nib_carriers[0 if N.src_sign else 1]
    for c in range(U):
        st_cvt_row(op, <char*>(tables + 16 * c), 1, values, 1, 16,
                   N.P.scale + (poff + c * N.pstr[u]) * N.P.ct,
                   N.P.shift + (poff + c * N.pstr[u]) * N.P.ct, 0)
    for k in range(U // 2):
        N.tables(dptr + (doff + 2 * k * N.dstr[u]) * N.P.dsz,
                 dptr + (doff + (2 * k + 1) * N.dstr[u]) * N.P.dsz,
                 <const unsigned char*>pairs + k * P, P, tables + 32 * k, tables + 32 * k + 16,
                 N.stream)


cdef void _nibble_blocks(const void* plan, char* dptr, const char* sptr, int64_t lo, int64_t hi,
                         char* scratch) noexcept nogil:
    """The 4-bit route's blocks_fn: boxes lo..hi-1."""
    cdef const _Nibbles* N = <const _Nibbles*>plan
    cdef int64_t bsz[MAX_NDIM]
    cdef int64_t item, doff, soff, poff, count, at
    cdef char* sbox = scratch
    cdef char* dbox = scratch + _align64(N.box)
    cdef char* tile = dbox + _align64(N.box)
    cdef char* period = tile + N.tile_bytes
    cdef const char* s
    cdef char* d
    cdef const int64_t* ds
    cdef const int64_t* ss
    for item in range(lo, hi):
        count = _box_at(N, item, bsz, &doff, &soff, &poff)
        if N.planes:
            _planes_box(N, dptr, sptr, doff, soff, poff, count, sbox, dbox)
            continue
        # the source: unpacked into the carrier box, or read where it is
        if N.src_sign >= 0:
            at = N.sbase + soff
            if N.src_dense:
                st_unpack4(sbox, <const unsigned char*>sptr + (at >> 1), <int>(at & 1), count,
                           N.src_sign)
            else:
                _gather4(N, sbox, <const unsigned char*>sptr, at, bsz, N.src_sign)
            s, ss = sbox, N.bstr + N.split
        else:
            s, ss = sptr + soff * N.P.ssz, N.sstr + N.split
        if N.dst_how >= 0:
            d, ds = dbox, N.bstr + N.split
        else:
            d, ds = dptr + doff * N.P.dsz, N.dstr + N.split
        _convert_box(N, d, ds, s, ss, bsz, count, poff, tile, period)
        if N.dst_how >= 0:
            at = N.dbase + doff
            if N.dst_dense:
                st_pack4(<unsigned char*>dptr + (at >> 1), <int>(at & 1), dbox, count, N.dst_how)
            else:
                _scatter4(N, <unsigned char*>dptr, at, dbox, bsz, N.dst_how)
    if N.stream:
        st_store_fence()


cdef bint _byte_addressable(int nd, const int64_t* sizes, const int64_t* strides,
                            int64_t base) noexcept nogil:
    """Byte-addressable: offset even, strides >= 0, every stride but one unit stride even
    (size-1 dims dropped already)."""
    cdef int i, units = 0
    if base & 1:
        return False
    for i in range(nd):
        if strides[i] < 0:
            return False
        if strides[i] & 1:
            if strides[i] != 1:
                return False
            units += 1
    return units <= 1


cdef void _plan_nibbles(_Nibbles* N, int nd, const int64_t* sz, const int64_t* dstr,
                        const int64_t* sstr, const int64_t* par) noexcept nogil:
    """The dims in the 4-bit side's order, the boxes."""
    cdef int order[MAX_NDIM]
    cdef int64_t keep_sz[MAX_NDIM]
    cdef int64_t keep_key[MAX_NDIM]
    cdef int keep[MAX_NDIM]
    cdef int i, k, n = 0
    cdef int64_t inner, target
    cdef const int64_t* key = dstr if N.dst_how >= 0 else sstr
    for i in range(nd):
        if sz[i] != 1:
            keep[n] = i
            keep_sz[n] = sz[i]
            keep_key[n] = key[i] if key[i] >= 0 else -key[i]
            n += 1
    c_physical_order(n, keep_sz, keep_key, order)
    N.nd = n
    for k in range(n):
        i = keep[order[k]]
        N.sizes[k], N.dstr[k], N.sstr[k], N.pstr[k] = sz[i], dstr[i], sstr[i], par[i]
    if n == 0:    # one element: a box of one dim of size 1
        N.nd = 1
        N.sizes[0] = 1
        N.dstr[0] = N.sstr[0] = N.pstr[0] = 0
    # the box: whole dims from the innermost while they fit, then rows of the next one
    target = max(<int64_t>2, N.T.nibble_box_bytes)
    inner = 1
    N.split = N.nd - 1
    while N.split > 0 and inner * N.sizes[N.split] <= target:
        inner *= N.sizes[N.split]
        N.split -= 1
    N.rows = max(<int64_t>1, min(N.sizes[N.split], target // inner))
    if N.dst_how >= 0 and N.rows < N.sizes[N.split] and (N.dstr[N.split] & 1):
        N.rows = max(<int64_t>2, N.rows // 2 * 2)   # boxes start on even nibbles
    N.ranges = (N.sizes[N.split] + N.rows - 1) // N.rows
    N.box = N.rows * inner
    N.bstr[N.nd - 1] = 1
    for k in range(N.nd - 2, N.split - 1, -1):
        N.bstr[k] = N.bstr[k + 1] * N.sizes[k + 1]
    N.dst_dense = N.dst_how >= 0 and N.dbase >= 0 and _box_dense(N, N.dstr)
    N.src_dense = N.src_sign >= 0 and _box_dense(N, N.sstr)
    N.planes = _planes_route(N) and N.T.convert_planes
    _fuse_planes(N)
    N.P.items = N.ranges
    for k in range(N.split):
        N.P.items *= N.sizes[k]


cdef void _fuse_planes(_Nibbles* N) noexcept nogil:
    """The one-pass ends of the planes route, where the pair has them: float32 planes quantized
    straight into packed pairs (the affine step in float32, saturating), packed pairs looked up
    into float32 planes (at most 64 planes a box: the tables live on the stack)."""
    N.tables = NULL
    N.packs = NULL
    N.pixels64 = NULL
    N.stream = 0
    if not (N.planes and N.T.nibble_fused):
        return
    if (N.dst_how in (ST_NIB_SAT_I4, ST_NIB_SAT_U4) and N.P.stype == ST_F32
            and N.P.mode == ST_CVT_AFF32):
        N.packs = st_pack4_f32(simd_level())
        # 64 planes (int4 NCHW64): straight to the pixels, through the box's pair rows as a
        # tile (cvt_planes.h); (8, 128, 64, 64), against int8 NCHW32's kernel (the bench's
        # floor): 0.6 -> 0.91-1.01x its speed on 1 thread, 0.72-0.87x on 2 (the pairs, then
        # the copy engine's byte transpose, before)
        if N.sizes[N.nd - 1] == 64:
            N.pixels64 = st_cvt_pixels_nib(N.P.stype, N.P.mode,
                                           N.dst_how == ST_NIB_SAT_I4, simd_level())
    if N.src_sign >= 0 and N.P.dtype == ST_F32 and N.sizes[N.nd - 1] <= 64:
        N.tables = st_unpack4_f32(simd_level())


cdef void _setup_nibbles(_Nibbles* N, const Tuning* T, int dst_code, int dst_bits,
                         int64_t dbase, int src_code, int src_bits, int64_t sbase,
                         const Params* params) noexcept nogil:
    """The pair of carriers, its parameters, how each 4-bit side is packed or unpacked."""
    N.T = T
    N.P.stype, N.P.dtype, N.P.mode, N.P.ct = src_code, dst_code, params.mode, params.ct
    N.P.dsz = st_type_size[dst_code]
    N.P.ssz = st_type_size[src_code]
    N.P.fused = st_cvt_fused(src_code, dst_code, params.mode, simd_level())
    N.P.scale = params.values
    N.P.shift = params.values + params.length * params.ct
    N.dst_how = -1
    if dst_bits == 4:
        N.dst_how = ST_NIB_WRAP if params.mode == ST_CVT_PLAIN else (
            ST_NIB_SAT_I4 if dst_code == ST_I8 else ST_NIB_SAT_U4)
    N.src_sign = (1 if src_code == ST_I8 else 0) if src_bits == 4 else -1
    N.dbase, N.sbase = dbase, sbase


cdef int64_t _nibble_run(_Nibbles* N, int64_t count) noexcept nogil:
    """What the run needs (the plan's boxes made): the team's share of the work; returns each
    thread's scratch: two carrier boxes, the box plan's tile and parameter period."""
    N.tile_bytes = _align64(max(N.T.convert_tile_bytes, N.T.convert_tiled_bytes,
                                16 * N.T.convert_tile_columns * max(N.P.dsz, N.P.ssz)))
    N.period_items = N.T.convert_period_items
    N.P.nbytes = count * (N.P.dsz + N.P.ssz)
    N.stream = N.tables != NULL and streams(N.T, count * N.P.dsz)
    plan_run(&N.P, N.T)
    return _align64(2 * _align64(N.box) + N.tile_bytes + 2 * N.period_items * N.P.ct)


cdef int64_t _nibble_threads(const _Nibbles* N, int nthreads) noexcept nogil:
    """The most threads the boxes run on: one when the work is small, or when boxes of a 4-bit
    destination that is not byte-addressable may share a byte (then they run in order)."""
    if N.P.keeps_gil or (N.dst_how >= 0
                         and not _byte_addressable(N.nd, N.sizes, N.dstr, N.dbase)):
        return 1
    return min(<int64_t>(nthreads if nthreads > 0 else default_threads()), N.P.most)


def _nibble_boxes(sizes, dst_strides, src_strides, dst_first=0, src_first=0,
                  dst_type="int4", src_type="float32", num_threads=None):
    """For tests: how the 4-bit route cuts a conversion (no memory is touched): ``(threads,
    boxes)``, each box the sorted element offsets of the destination it writes (nibbles for
    a 4-bit destination)."""
    cdef _Nibbles N
    cdef Tuning T = tuning_now()
    cdef Params params
    cdef int64_t sz[MAX_NDIM]
    cdef int64_t dst[MAX_NDIM]
    cdef int64_t src[MAX_NDIM]
    cdef int64_t par[MAX_NDIM]
    cdef int64_t bsz[MAX_NDIM]
    cdef int64_t count, item, doff, soff, poff
    cdef int nd, i
    dst_bits, dst_carrier = _carrier(dst_type)
    src_bits, src_carrier = _carrier(src_type)
    nd = load_pair(sizes, dst_strides, sz, dst, "dst_strides")
    load_strides(src_strides, "src_strides", src, nd)
    for i in range(nd):
        par[i] = 0
    if c_size(nd, sz, &count) or count == 0:
        return 0, []
    params.mode, params.ct, params.length, params.values = ST_CVT_PLAIN, 4, 1, NULL
    _setup_nibbles(&N, &T, _CODES[dst_carrier], dst_bits, dst_first, _CODES[src_carrier],
                   src_bits, src_first, &params)
    _plan_nibbles(&N, nd, sz, dst, src, par)
    _nibble_run(&N, count)
    boxes = []
    for item in range(N.P.items):
        _box_at(&N, item, bsz, &doff, &soff, &poff)
        offsets = [dst_first + doff]
        for i in range(N.nd - N.split - 1, -1, -1):
            step = N.dstr[N.split + i]
            offsets = [o + k * step for k in range(bsz[i]) for o in offsets]
        boxes.append(sorted(offsets))
    return int(_nibble_threads(&N, copy_threads(num_threads))), boxes


def _tiled_streams(sizes, dst_strides, src_strides, dst_type, src_type):
    """For tests: whether a plain conversion between these element strides goes through a
    tiled kernel (a transposing conversion in registers) and streams its destination: None
    when no tiled kernel takes it, else True or False. No memory is touched."""
    cdef Plan P
    _test_plan(&P, sizes, dst_strides, src_strides, dst_type, src_type, "_tiled_streams()")
    if P.tiled == NULL:
        return None
    return P.stream != 0


def _plan_streams(sizes, dst_strides, src_strides, dst_type, src_type):
    """For tests: whether a plain conversion between these element strides streams its
    destination (a tiled kernel's, or dense rows': st_cvt_stream_run). No memory is
    touched."""
    cdef Plan P
    _test_plan(&P, sizes, dst_strides, src_strides, dst_type, src_type, "_plan_streams()")
    return P.stream != 0


cdef int _test_plan(Plan* P, sizes, dst_strides, src_strides, dst_type, src_type,
                    str what) except -1:
    """Plan a plain conversion for the test hooks (``what`` names the hook in errors)."""
    cdef Tuning T = tuning_now()
    cdef Params params
    cdef int64_t sz[MAX_NDIM]
    cdef int64_t dst[MAX_NDIM]
    cdef int64_t src[MAX_NDIM]
    cdef int64_t par[MAX_NDIM]
    cdef int64_t count
    cdef int nd, i
    check_pair(dst_type, src_type, False)
    nd = load_pair(sizes, dst_strides, sz, dst, "dst_strides")
    load_strides(src_strides, "src_strides", src, nd)
    for i in range(nd):
        par[i] = 0
    if c_size(nd, sz, &count) or count == 0:
        raise ValueError(f"{what} plans non-empty conversions, got sizes "
                         f"{tuple_of(nd, sz)!r}")
    params.mode, params.ct, params.length, params.values = ST_CVT_PLAIN, 4, 1, NULL
    _take_params(P, _CODES[dst_type], _CODES[src_type], &params, nd, sz, par, count)
    P.nbytes = count * (P.dsz + P.ssz)
    _plan(P, nd, sz, dst, src, par, &T)
    return 0


cdef int convert_nibbles(char* dptr, int64_t dbase, int dst_code, int dst_bits,
                         const char* sptr, int64_t sbase, int src_code, int src_bits, int nd,
                         const int64_t* sizes, const int64_t* dst_strides,
                         const int64_t* src_strides, const Params* params, const int64_t* par,
                         int64_t count, int nthreads) except -1:
    """Convert when either side holds 4-bit elements (``*_bits == 4``): its ``*_code`` is the
    carrier's (int8 for int4, uint8 for uint4), its address the byte holding nibble 0 and
    ``*base`` the nibble of element 0. Checked by the caller as for convert_elements: the pair
    of carriers, the spans (in nibbles from the address), a destination not overlapping itself.
    A source sharing bytes with the destination is read from a copy of its bytes."""
    cdef _Nibbles N
    cdef Tuning T = tuning_now()
    cdef int64_t plo, phi, lo, hi, slo, shi, dlo, dhi, most, scratch_bytes
    cdef char* scratch = NULL
    cdef char* staged = NULL
    if c_span(nd, sizes, par, 0, &plo, &phi) or (count and (plo < 0 or phi >= params.length)):
        raise ValueError(f"param_strides {tuple_of(nd, par)!r} reach parameters outside the "
                         f"{params.length} given")
    if count == 0:
        return 0
    _setup_nibbles(&N, &T, dst_code, dst_bits, dbase, src_code, src_bits, sbase, params)
    # the byte ranges of both sides: a source sharing one with the destination is staged
    c_span(nd, sizes, src_strides, 0, &slo, &shi)
    c_span(nd, sizes, dst_strides, 0, &dlo, &dhi)
    if src_bits == 4:
        lo, hi = (sbase + slo) >> 1, (sbase + shi) >> 1
    else:
        lo, hi = slo * N.P.ssz, (shi + 1) * N.P.ssz - 1
    if dst_bits == 4:
        dlo, dhi = (dbase + dlo) >> 1, (dbase + dhi) >> 1
    else:
        dlo, dhi = dlo * N.P.dsz, (dhi + 1) * N.P.dsz - 1
    if sptr + lo <= dptr + dhi and dptr + dlo <= sptr + hi:
        staged = <char*>PyMem_RawMalloc(<size_t>(hi - lo + 1))
        if staged == NULL:
            raise MemoryError("no memory for a copy of the source; nothing was written")
        memcpy(staged, sptr + lo, <size_t>(hi - lo + 1))
        sptr = staged - lo
    try:
        _plan_nibbles(&N, nd, sizes, dst_strides, src_strides, par)
        scratch_bytes = _nibble_run(&N, count)
        most = _nibble_threads(&N, nthreads)
        scratch = <char*>PyMem_RawMalloc(<size_t>(most * scratch_bytes))
        if scratch == NULL:
            raise MemoryError("no memory for the 4-bit conversion's boxes; nothing was written")
        if most == 1:
            with nogil:
                _nibble_blocks(&N, dptr, sptr, 0, N.P.items, scratch)
        else:
            with nogil:
                run_team(&N, _nibble_blocks, dptr, sptr, N.P.items, most,
                         N.P.chunks_per_thread, nthreads, True, scratch, scratch_bytes)
    finally:
        PyMem_RawFree(scratch)
        PyMem_RawFree(staged)
    return 0
