"""Guard-page harness: every kernel of the copy and conversion engines against memory that
faults one byte outside its operands.

Each operand lives in its own anonymous mapping with a ``PROT_NONE`` page right before and right
after its data pages (``mmap`` + ``mprotect`` through ctypes). A case runs four times:

========  =================================================  ===============================
run       source                                             destination
========  =================================================  ===============================
``lo``    lowest byte right after the guard page             lowest byte right after it
``hi``    highest byte right before the guard page           highest byte right before it
``lo+``   lowest byte 1 byte after the guard (odd address)   highest byte 3 bytes before it
``hi+``   highest byte 5 bytes before the guard              lowest byte 1 byte after it
========  =================================================  ===============================

so a load or store a byte below the lowest or above the highest byte of an operand faults, and
the last two runs put both operands at addresses that are not multiples of their itemsize.
Before each run the destination's pages are filled with a position-dependent sentinel; after
it, every byte that is not a byte of a destination element must still hold the sentinel (gaps
of padded layouts included), every element must equal a numpy oracle (for copies the same
strided copy by numpy, for conversions :mod:`convert_oracle`), and the source must be
unchanged.

Cases are made by :func:`cases` (``"default"``: a representative sample, ``"slow"``: the
exhaustive sweep), each at every SIMD level of the machine (``strided._copy._simd``), with the
engines' tuning hooks forcing their other routes (streaming stores, staged tiles, stitching,
tiny blocks, the conversion's tiled / planes / staged routes, both transpose orders). Each case
is labelled with the kernel family its plan reaches (:func:`family`, a mirror of the planners'
choice of block kernel).

:func:`sweep` runs the cases in worker interpreters (``python guarded.py``, the cases pickled on
its stdin) that print each case's index before running it: when a worker dies of a signal or
hangs, the last index it printed names the faulting case, which is counted, and a new worker
takes up the cases after it.

Guard pages see the operands' ends only. The same sweep under AddressSanitizer and
UndefinedBehaviorSanitizer also checks the engines' own buffers (tiles, staged chunks,
parameter periods) and every misaligned typed access; build and run it as::

    pip install --no-build-isolation -e . -Cbuild-dir=build-san \\
        -Csetup-args=-Db_sanitize=address,undefined -Csetup-args=-Db_lundef=false \\
        "-Csetup-args=-Dc_args=-fno-sanitize-recover=undefined"
    LD_PRELOAD=$(gcc -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0 \\
        python -c "import guarded; print(guarded.sweep('slow').table())"

(a sanitizer's report ends the worker, which the sweep counts as a faulting case).
"""

from __future__ import annotations

import ctypes
import itertools
import math
import mmap
import os
import pickle
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from convert_oracle import convert as oracle_convert
from convert_oracle import mismatches, np_dtype, special_values
from numpy.lib.stride_tricks import as_strided

TESTS_DIR = Path(__file__).resolve().parent
PAGE = mmap.PAGESIZE

# ---- guarded memory ------------------------------------------------------------------------

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                       ctypes.c_int, ctypes.c_long]
_libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_PROT_NONE, _PROT_RW = 0, mmap.PROT_READ | mmap.PROT_WRITE
_MAP_FAILED = ctypes.c_void_p(-1).value


class Arena:
    """``pages`` readable and writable pages between two ``PROT_NONE`` pages (never unmapped:
    arenas are reused by size for the life of the process)."""

    def __init__(self, pages):
        total = (pages + 2) * PAGE
        addr = _libc.mmap(None, total, _PROT_RW, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
        if addr in (None, _MAP_FAILED):
            raise OSError(ctypes.get_errno(), "mmap failed")
        for guard in (addr, addr + (pages + 1) * PAGE):
            if _libc.mprotect(guard, PAGE, _PROT_NONE) != 0:
                raise OSError(ctypes.get_errno(), "mprotect failed")
        self.start = addr + PAGE
        self.size = pages * PAGE
        self._cbuf = (ctypes.c_uint8 * self.size).from_address(self.start)
        self.bytes = np.frombuffer(self._cbuf, np.uint8)

    def view(self, first, sizes, strides, dtype):
        """A numpy view of a layout whose element 0 is ``first`` bytes into the data pages."""
        dtype = np.dtype(dtype)
        one = np.frombuffer(self._cbuf, dtype=dtype, count=1, offset=first)
        return as_strided(one, shape=sizes, strides=[s * dtype.itemsize for s in strides])


def placements(src_area, dst_area, src_used, dst_used, rng, lead=(0, 0)):
    """The two placements of a copy's operands in their arenas, each on fresh random bytes:
    the source's first byte right after its leading guard page and the destination's last
    right before its trailing one, then the source's last and the destination's first (each
    ``lead`` bytes further in: source, destination, so that a layout starts anywhere in a
    line). Yields
    ``(at_end, src_first, dst_first, src_bytes, dst_bytes)``: whether the source ends at its
    page, the byte offsets of the two operands, and copies of both arenas' bytes before the
    copy (the source's to find stray writes, the destination's to build the expected page)."""
    for at_end in (False, True):
        src_first = src_area.size - src_used - lead[0] if at_end else lead[0]
        dst_first = lead[1] if at_end else dst_area.size - dst_used - lead[1]
        src_area.bytes[:] = rng.integers(0, 256, src_area.size, dtype=np.uint8)
        dst_area.bytes[:] = rng.integers(0, 256, dst_area.size, dtype=np.uint8)
        yield at_end, src_first, dst_first, src_area.bytes.copy(), dst_area.bytes.copy()


def transpose_stays_inside(src_area, dst_area, R, C, sp, dp, dtype, rng, threads,
                           lead=(0, 0)):
    """The 2-D transpose ``dst[r, c] = src[r, c]`` (the destination's rows ``dp`` items apart,
    the source's columns ``sp`` apart) in both :func:`placements` (with their ``lead``), by
    ``strided.copyto`` on ``threads`` threads: ``(copies, wrong)``, the copies made and the
    ``at_end`` of each whose destination pages differ from np.copyto's result or whose source
    pages changed; ``(0, [])`` when the operands do not fit the arenas."""
    k = np.dtype(dtype).itemsize
    sused, dused = ((C - 1) * sp + R) * k, ((R - 1) * dp + C) * k
    if sused + lead[0] > src_area.size or dused + lead[1] > dst_area.size:
        return 0, []
    copies, wrong = 0, []
    for at_end, sbase, dbase, before, expected in placements(src_area, dst_area, sused, dused,
                                                            rng, lead):
        src = src_area.view(sbase, (R, C), (1, sp), dtype)
        dst = dst_area.view(dbase, (R, C), (dp, 1), dtype)
        want = expected[dbase:dbase + dused].view(dtype)
        for r in range(R):
            want[r * dp:r * dp + C] = src[r]
        copies += 1
        if not _copies_exactly(src_area, dst_area, src, dst, threads, before, expected):
            wrong.append(at_end)
    return copies, wrong


def rows_stay_inside(src_area, dst_area, rows, n, spad, dpad, rng, threads):
    """``rows`` contiguous rows of ``n`` bytes, the source's ``n + spad`` apart and the
    destination's ``n + dpad``, copied by ``strided.copyto`` on ``threads`` threads in both
    :func:`placements`: ``(copies, wrong)`` as in :func:`transpose_stays_inside`; ``(0, [])``
    when the operands do not fit the arenas."""
    sused, dused = rows * (n + spad) - spad, rows * (n + dpad) - dpad
    if sused > src_area.size or dused > dst_area.size:
        return 0, []
    copies, wrong = 0, []
    for at_end, sbase, dbase, before, expected in placements(src_area, dst_area, sused, dused,
                                                            rng):
        src = src_area.view(sbase, (rows, n), (n + spad, 1), np.uint8)
        dst = dst_area.view(dbase, (rows, n), (n + dpad, 1), np.uint8)
        for r in range(rows):
            at = dbase + r * (n + dpad)
            expected[at:at + n] = src[r]
        copies += 1
        if not _copies_exactly(src_area, dst_area, src, dst, threads, before, expected):
            wrong.append(at_end)
    return copies, wrong


def _copies_exactly(src_area, dst_area, src, dst, threads, before, expected):
    """``strided.copyto(dst, src)`` on ``threads`` threads leaves the destination's arena
    holding exactly ``expected`` and the source's exactly ``before``."""
    import strided

    strided.copyto(dst, src, num_threads=threads)
    return (np.array_equal(dst_area.bytes, expected)
            and np.array_equal(src_area.bytes, before))


class Tally:
    """Counts a guard-page script's copies and wrong ones, printing each wrong one with its
    label; :meth:`report` prints the two counts, last, for the test to read."""

    def __init__(self):
        self.copies = self.problems = 0

    def add(self, result, *label):
        """One ``(copies, wrong)`` result of :func:`transpose_stays_inside` or
        :func:`rows_stay_inside`."""
        done, wrong = result
        self.copies += done
        for at_end in wrong:
            self.problems += 1
            print("wrong", *label, at_end)

    def report(self):
        print("copies", self.copies)
        print("problems", self.problems)


_ARENAS: dict[tuple[str, int], Arena] = {}


def arena(role, nbytes):
    """The arena of ``role`` ("src" or "dst") with room for ``nbytes`` and a few more."""
    pages = max(1, -(-(nbytes + 16) // PAGE))
    key = (role, pages)
    if key not in _ARENAS:
        _ARENAS[key] = Arena(pages)
    return _ARENAS[key]


def span(sizes, strides):
    """(lowest, highest) element offset of a non-empty layout."""
    lo = sum(s * (n - 1) for n, s in zip(sizes, strides) if s < 0)
    hi = sum(s * (n - 1) for n, s in zip(sizes, strides) if s > 0)
    return lo, hi


def element_bytes(first, sizes, strides, itemsize):
    """Byte positions of every byte of every element (element 0 at byte ``first``)."""
    offs = np.zeros(1, np.int64)
    for n, s in zip(sizes, strides):
        offs = (offs[:, None] + np.arange(n, dtype=np.int64) * s).ravel()
    return ((first + offs * itemsize)[:, None] + np.arange(itemsize)).ravel()


def _sentinel(nbytes):
    period = ((np.arange(256) * 151 + 89) % 256).astype(np.uint8)
    return np.tile(period, nbytes // 256 + 1)[:nbytes]


#: (source side, slack bytes, destination side, slack bytes) of the four runs of a case
PLACEMENTS = (("lo", 0, "lo", 0), ("hi", 0, "hi", 0), ("lo", 1, "hi", 3), ("hi", 5, "lo", 1))


def _first(side, slack, lo, hi, itemsize, size):
    """Byte position of element 0 so that the lowest byte sits ``slack`` bytes after the start
    ("lo") or the highest byte ``slack`` bytes before the end ("hi") of the data pages."""
    if side == "lo":
        return slack - lo * itemsize
    return size - slack - (hi + 1) * itemsize


# ---- cases ---------------------------------------------------------------------------------

TYPE_SIZE = {"bool": 1, "int8": 1, "int16": 2, "int32": 4, "int64": 8, "uint8": 1, "uint16": 2,
             "uint32": 4, "uint64": 8, "float16": 2, "bfloat16": 2, "float32": 4,
             "float64": 8, "complex64": 8, "complex128": 16}


@dataclass(frozen=True)
class Case:
    """One call of ``copy_memory`` (``dst_type`` empty) or ``convert_memory``."""

    sizes: tuple
    dst_strides: tuple
    src_strides: tuple
    itemsize: int = 0              # copies
    dst_type: str = ""             # conversions
    src_type: str = ""
    scale: object = None           # None, a float, or a tuple of param_length floats
    shift: object = None
    param_strides: tuple | None = None
    param_length: int = 1
    level: int = 0                 # SIMD level (_copy._simd)
    threads: int = 1
    copy_tune: tuple = ()          # ((name, value), ...): the copy's knobs of _copy._tune
    convert_tune: tuple = ()       # ... and the conversion's
    label: str = field(default="", compare=False)

    @property
    def converts(self):
        return bool(self.dst_type)

    @property
    def sizes_of_items(self):
        if self.converts:
            return TYPE_SIZE[self.src_type], TYPE_SIZE[self.dst_type]
        return self.itemsize, self.itemsize

    @property
    def family(self):
        return family(self)

    def describe(self):
        what = (f"{self.src_type}->{self.dst_type}" if self.converts
                else f"itemsize {self.itemsize}")
        if self.scale is not None or self.shift is not None:
            what += f" scale={self.scale} shift={self.shift} ps={self.param_strides}"
        tune = dict(self.copy_tune) | dict(self.convert_tune)
        return (f"[{self.family}] {what} sizes={self.sizes} dst={self.dst_strides} "
                f"src={self.src_strides} level={self.level} threads={self.threads}"
                + (f" tune={tune}" if tune else "") + (f" ({self.label})" if self.label else ""))


# ---- which kernel family a plan reaches (mirrors _copy._plan_copy / _convert._plan) ---------

def _unit(itemsize):
    if itemsize in (1, 2, 4, 8, 16):
        return itemsize
    return 8 if itemsize % 8 == 0 else 4 if itemsize % 4 == 0 else 2 if itemsize % 2 == 0 else 1


def _block_problem(dims):
    """_copy.block_problem on [n, ds, ss, ps] lists (positive ds): (dims, p, transposing)."""
    dims = sorted(dims, key=lambda t: (-t[1], -abs(t[2])))
    out = []
    for n, d, s, p in dims:
        if out and out[-1][1] == d * n and out[-1][2] == s * n and out[-1][3] == p * n:
            out[-1] = [out[-1][0] * n, d, s, p]
        else:
            out.append([n, d, s, p])
    if not out:
        out = [[1, 1, 1, 0]]
    q = len(out) - 1
    if out[q][1] == 1 and out[q][2] not in (0, 1):
        for i in range(q):
            if out[i][2] == 1:
                return out, i, True
    return out, (q - 1 if q >= 1 else -1), False


def _dims(case, k=1):
    dims = []
    ps = case.param_strides or (0,) * len(case.sizes)
    for n, d, s, p in zip(case.sizes, case.dst_strides, case.src_strides, ps):
        if n == 1:
            continue
        d, s = d * k, s * k
        if d < 0:
            d, s, p = -d, -s, -p
        dims.append([n, d, s, p])
    return dims


FUSED = {  # (src, dst): the fused rows of convert.h, plain and affine
    "plain": {("uint8", "float32"), ("int8", "float32"), ("uint16", "float32"),
              ("int16", "float32"), ("int32", "float32"), ("float64", "float32"),
              ("uint8", "float64"), ("float32", "float64"), ("float32", "uint8"),
              ("float32", "int8"), ("float32", "uint16"), ("float32", "int16"),
              ("float32", "bfloat16"), ("bfloat16", "float32"), ("float32", "float16"),
              ("float16", "float32")},
    "aff32": {("uint8", "float32"), ("int8", "float32"), ("float32", "uint8"),
              ("float32", "int8"), ("float32", "float32"), ("float16", "float32"),
              ("bfloat16", "float32"), ("float32", "float16"), ("float32", "bfloat16")},
}
_WIDE = {"int32", "int64", "uint32", "uint64", "float64"}


def _crowd_l1_sets(stride_bytes, rows):
    """The most of ``rows`` lines ``stride_bytes`` apart sharing one of 64 L1 sets."""
    sets = [r * stride_bytes % 4096 // 64 for r in range(rows)]
    return max(sets.count(x) for x in sets)


def _engine_llc_bytes():
    """The last-level cache the engine's planner counts with, as this machine's caches set it
    (not as a test may have tuned it)."""
    from strided import _caches, _copy
    return _caches.derived_tuning(_copy.CACHES)["llc_bytes"]


def family(case):
    """The kernel family that runs the case's blocks (the planner's choice, mirrored)."""
    tune = dict(case.copy_tune)
    if not case.converts:
        unit = _unit(case.itemsize)
        k = case.itemsize // unit
        dims = _dims(case, k)
        if k > 1:
            dims.append([k, 1, 1, 0])
        dims, p, transposing = _block_problem(dims)
        n, d, s, _ = dims[-1]
        if transposing:
            micro = 16 // unit if unit < 16 else 1
            R = dims[p][0]
            if n < micro:
                return "copy/interleave"
            if R < micro:
                return "copy/deinterleave" if 2 <= R and R * unit < 16 and s <= 8 \
                    else "copy/transpose-narrow"
            if tune.get("nt_bytes") == 0:
                return "copy/transpose-streamed"
            staged = tune.get("staged", -1)
            if staged == -1:
                row = n * unit
                copy_bytes = case.itemsize * math.prod(case.sizes)
                in_cache = copy_bytes * 8 <= tune.get("llc_bytes", _engine_llc_bytes())
                long_rows = copy_bytes >= 15 << 20 and R * unit >= 4096 and row > 256
                staged = row <= 16 or long_rows or (not in_cache and (
                    64 < row <= 256 if unit >= 4 else row <= 128))
                staged = staged or (unit not in (2, 16) and s * unit % 4096 == 0) or (
                    unit == 1 and ((R == 16 and _crowd_l1_sets(dims[p][1], 16) > 4)
                                   or dims[p][1] % 4096 == 0))
            return "copy/transpose-staged" if staged else "copy/transpose"
        if s == 0:
            return "copy/fill-streamed" if tune.get("nt_bytes") == 0 else "copy/fill"
        if d == 1 and s == 1:
            return "copy/rows-streamed" if tune.get("nt_bytes") == 0 else "copy/rows"
        if unit == 1 and d == 2 and s == 2:
            return "copy/stride2-bytes"
        return "copy/gather-scatter"
    ctune = dict(case.convert_tune)
    affine = case.scale is not None or case.shift is not None
    mode = "plain" if not affine else "aff64" if case.src_type in _WIDE else "aff32"
    dsz, ssz = TYPE_SIZE[case.dst_type], TYPE_SIZE[case.src_type]
    dims, p, transposing = _block_problem(_dims(case))
    C, dq, sq, pq = dims[-1]
    pair = (case.src_type, case.dst_type)
    if not transposing:
        return "convert/fused-rows" if dq == 1 and sq == 1 and pq in (0, 1) and \
            pair in FUSED.get(mode, ()) else "convert/strided-rows"
    R, dp, _, pp = dims[p]
    last = ctune.get("convert_last", -1)
    convert_last = dsz > ssz if last < 0 else last == 1
    planes_on = ctune.get("convert_planes", True)
    stage = ctune.get("convert_chunked", -1)
    if (mode == "plain" and case.level >= 2 and ctune.get("convert_tiled", True)
            and pair in {("float32", "float16"), ("float32", "bfloat16")}):
        tiled = True
    else:
        tiled = False
    pixels = (not convert_last and dp == C and pp == 0 and pq in (0, 1) and planes_on
              and case.src_type == "float32" and mode == "aff32" and C in (3, 4, 32)
              and case.level >= 2 and case.dst_type in ("uint8", "int8"))
    if stage == 1:
        return "convert/staged"
    if tiled:
        return "convert/tiled"
    if (convert_last and sq == R and pq == 0 and pp in (0, 1) and planes_on
            and case.src_type in ("uint8", "int8") and case.dst_type == "float32"
            and mode != "aff64" and (R in (3, 4) or (R == 32 and case.level >= 2))):
        return "convert/planes"
    if pixels:
        return "convert/pixels"
    return "convert/transpose-last" if convert_last else "convert/transpose-first"


# ---- layouts -------------------------------------------------------------------------------

def packed(sizes, order):
    """Packed strides of ``sizes`` laid out in physical ``order`` (outermost first)."""
    strides = [0] * len(sizes)
    acc = 1
    for d in reversed(order):
        strides[d] = acc
        acc *= sizes[d]
    return tuple(strides)


def padded(sizes, order, pads):
    """Strides of ``order`` whose dims hold ``pads[d]`` spare items each (gaps)."""
    strides = [0] * len(sizes)
    acc = 1
    for d in reversed(order):
        strides[d] = acc
        acc *= sizes[d] + pads[d]
    return tuple(strides)


def layout(kind, sizes, rng):
    """Strides of a named kind of layout: C, F, T (dim 1, or 0 for rank < 4, innermost: NHWC),
    P (a random permutation), ``pad`` variants (gaps), R (C with dims flipped: negative
    strides), S (C with inner step 2: gaps between items), B (C with a dim broadcast)."""
    nd = len(sizes)
    c_order = tuple(range(nd))
    moved = 1 if nd >= 4 else 0
    orders = {"C": c_order, "F": c_order[::-1],
              "T": (*(d for d in c_order if d != moved), moved),
              "P": tuple(int(d) for d in rng.permutation(nd))}
    base = kind[:-3] if kind.endswith("pad") else kind
    if base in orders:
        if kind.endswith("pad"):
            pads = [int(v) for v in rng.integers(0, 3, nd)]
            pads[orders[base][-1]] = int(rng.integers(1, 4))
            return padded(sizes, orders[base], pads)
        return packed(sizes, orders[base])
    strides = list(packed(sizes, c_order))
    if kind == "R":
        for d in range(0, nd, 2):
            strides[d] = -strides[d]
        if nd > 1:
            strides[-1] = -strides[-1]
    elif kind == "S":
        strides = [2 * s for s in strides]
    elif kind == "B":
        strides[int(rng.integers(nd))] = 0
    return tuple(strides)


SIZES = (1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 40)
WIDE_SIZES = (63, 64, 65, 100)
ITEMSIZES = (1, 2, 3, 4, 8, 12, 16)
DST_KINDS = ("C", "F", "T", "P", "Cpad", "Fpad", "Tpad", "R", "S")
SRC_KINDS = (*DST_KINDS, "B")

COPY_TUNES = {
    "default": (),
    "tiny": (("tile_row_bytes", 16), ("tile_area_bytes", 16), ("block_bytes", 64),
             ("stage_bytes", 256)),
    "staged": (("staged", 1),),
    "in-place": (("staged", 0),),
    "streamed": (("nt_bytes", 0), ("fill_nt_bytes", -1)),
    "streamed-tiny": (("nt_bytes", 0), ("fill_nt_bytes", -1), ("nt_run_bytes", 64),
                      ("nt_stitch_bytes", 64),
                      ("stage_bytes", 256)),
}
#: added to a case run on 2 threads: a team for a copy of 16 KiB, many small blocks to claim
TEAM_TUNE = (("thread_bytes", 1024), ("block_bytes", 1024), ("chunks_per_thread", 4))
CONVERT_TUNES = {
    "default": (),
    "first": (("convert_last", 0),),
    "last": (("convert_last", 1),),
    "no-planes": (("convert_planes", False),),
    "no-tiled": (("convert_tiled", False),),
    "staged": (("convert_chunked", 1), ("convert_chunk_bytes", 64)),
    "small-tiles": (("convert_tile_bytes", 4096), ("convert_tile_columns", 16),
                    ("convert_tiled_bytes", 4096), ("convert_period_items", 5)),
    # every destination streamed: dense rows through st_cvt_stream_run, tiles and planes
    "streamed": (("nt_bytes", 0), ("sweep_ahead", 1)),
}


def _shape(rng, nd, cap):
    """Random sizes of rank ``nd`` from SIZES (WIDE_SIZES too for ranks 1-2), at most ``cap``
    elements."""
    pool = SIZES + WIDE_SIZES if nd <= 2 else SIZES
    while True:
        sizes = tuple(int(rng.choice(pool)) for _ in range(nd))
        if int(np.prod(sizes)) <= cap:
            return sizes


def _copy_random(rng, count, cap=4096):
    """Copies of random ranks, shapes, itemsizes and pairs of layout kinds."""
    out = []
    for _ in range(count):
        nd = int(rng.integers(1, 5))
        sizes = _shape(rng, nd, cap)
        dk, sk = str(rng.choice(DST_KINDS)), str(rng.choice(SRC_KINDS))
        k = int(rng.choice(ITEMSIZES))
        tune = str(rng.choice(list(COPY_TUNES)))
        out.append(Case(sizes, layout(dk, sizes, rng), layout(sk, sizes, rng), itemsize=k,
                        copy_tune=COPY_TUNES[tune], label=f"{dk}<-{sk}"))
    return out


def _transposes(rng, stride_pads=(0, 1, 3)):
    """2-D transposes dst[r, c] = src[r, c], dst row-major and src column-major, of every
    itemsize, extents around the micro-tiles (16 / itemsize; AVX2: 8 for 4-byte items, 16 for
    2-byte ones), padded rows."""
    out = []
    ext = (1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 65)
    for k in (1, 2, 4, 8, 16, 3, 12):
        for R, C in itertools.product(ext, ext):
            if rng.random() > 0.35:
                continue
            dpad, spad = (int(v) for v in rng.choice(stride_pads, 2))
            tune = str(rng.choice(list(COPY_TUNES)))
            out.append(Case((R, C), (C + dpad, 1), (1, R + spad), itemsize=k,
                            copy_tune=COPY_TUNES[tune], label="transpose"))
    return out


def _interleaves(rng):
    """Planes into dense pixels (CHW -> HWC): sizes (pixels, channels) of 2-4 channels."""
    out = []
    for k in (1, 2, 4):
        for C in (2, 3, 4, 5):
            for n in (1, 2, 7, 15, 16, 17, 31, 32, 33, 48, 64, 65, 100, 257):
                pad = int(rng.integers(0, 3))
                dpad = int(rng.integers(0, 2))
                out.append(Case((n, C), (C + dpad, 1), (1, n + pad), itemsize=k,
                                label="planes->pixels"))
    return out


def _deinterleaves(rng):
    """Dense pixels of S items into R <= S planes (HWC -> CHW, RGBA -> RGB planes): rank 2
    (planes, pixels) and rank 3 (planes, H, W); first, the copy that showed the over-read: a
    column-major (2, 2, 4) float32 array into a row-major one (2 planes of pixels of 4)."""
    out = [Case((2, 2, 4), (8, 4, 1), (1, 2, 4), itemsize=4, label="F -> C (2, 2, 4)")]
    for k in (1, 2, 4, 8):
        for S in range(2, 10):
            for R in sorted({2, S // 2 + 1, S - 1, S} - {0, 1}):
                if R > S:
                    continue
                for n in (1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 40, 63, 64, 65, 100, 200):
                    dpad = int(rng.choice((0, 0, 1, 5)))
                    out.append(Case((R, n), (n + dpad, 1), (1, S), itemsize=k,
                                    label=f"{R} of {S}"))
                H, W = (int(v) for v in rng.choice(SIZES, 2))
                out.append(Case((R, H, W), (H * W, W, 1), (1, W * S, S), itemsize=k,
                                label=f"{R} of {S} HW"))
    # streaming stores forced on: planes a multiple of 64 bytes apart, so that the AVX2
    # kernels stream the whole lines between an ordinary head and tail
    for k in (1, 2, 4):
        for S in (2, 3, 4):
            for n in (32, 33, 63, 64, 65, 100, 129, 200, 1000):
                pitch = -(-n * k // 64) * 64 // k + int(rng.choice((0, 64 // k)))
                out.append(Case((S, n), (pitch, 1), (1, S), itemsize=k,
                                copy_tune=COPY_TUNES["streamed"], label=f"{S} of {S} streamed"))
    return out


def _fills(rng):
    """Rows of one repeated element (a broadcast source): short rows element by element, rows
    of a vector or more through the broadcast fill (one register stored over the row: rows
    around one and four vectors of 16 and 32 bytes, around 256 bytes where streaming starts),
    with ordinary stores and with streaming stores forced on."""
    out = []
    for k in (1, 2, 3, 4, 8, 12, 16):
        for n in (1, 3, 15, 16, 17, 31, 32, 33, 63, 64, 65, 129, 255, 256, 257, 300, 1000):
            R = int(rng.choice((1, 2, 5)))
            dpad = int(rng.choice((0, 1, 7)))
            for tune in ("default", "streamed"):
                out.append(Case((R, n), (n + dpad, 1), (int(rng.choice((1, 2))), 0),
                                itemsize=k, copy_tune=COPY_TUNES[tune], label="fill"))
    return out


def _stride2_bytes(rng):
    """1-byte items two apart on both sides (interleaved slices, a[0::2] <- b[1::2]), rows of
    every length around the vectors of 16 and 32 bytes, and rank 2 (padded rows)."""
    out = []
    for n in (*range(1, 40), 47, 48, 49, 63, 64, 65, 100, 257, 1000):
        R = int(rng.choice((1, 1, 3)))
        pad = int(rng.choice((0, 1, 5)))
        out.append(Case((R, n), (2 * n + pad, 2), (2 * n + int(rng.choice((0, 3))), 2),
                        itemsize=1, label="stride 2"))
    return out


def _copy_threads(rng, count):
    """Copies of 16-200 KiB on a team of 2 threads claiming small blocks."""
    out = []
    shapes = ((40, 40, 16), (33, 31, 17), (64, 65, 4), (17, 9, 8, 33), (100, 100, 3),
              (3, 100, 100), (65, 64, 8))
    for _ in range(count):
        sizes = shapes[int(rng.integers(len(shapes)))]
        dk, sk = str(rng.choice(DST_KINDS)), str(rng.choice(SRC_KINDS))
        k = int(rng.choice((1, 2, 4, 8, 3)))
        tune = str(rng.choice(list(COPY_TUNES)))
        out.append(Case(sizes, layout(dk, sizes, rng), layout(sk, sizes, rng), itemsize=k,
                        threads=2, copy_tune=COPY_TUNES[tune] + TEAM_TUNE,
                        label=f"{dk}<-{sk}"))
    return out


PAIRS = [*sorted(FUSED["plain"]), ("bool", "float32"), ("float32", "bool"),
         ("int64", "float16"), ("uint64", "bfloat16"), ("complex64", "complex128"),
         ("int8", "int16"), ("float32", "complex64"), ("float64", "float16"),
         ("uint16", "int8"), ("float16", "bfloat16")]
AFFINE_PAIRS = [*sorted(FUSED["aff32"]), ("float16", "int8"), ("uint32", "float64"),
                ("float64", "uint8"), ("int16", "bfloat16"), ("float16", "float64"),
                ("uint8", "int8")]


def _params(rng, sizes, axis, affine):
    """(scale, shift, param_strides, param_length) for no affine step, a scalar one, or one
    per channel along ``axis``."""
    if not affine:
        return None, None, None, 1
    if axis is None or rng.random() < 0.4:
        which = rng.integers(3)
        scale = None if which == 1 else round(float(rng.uniform(0.01, 3)), 4)
        shift = None if which == 2 else round(float(rng.uniform(-50, 50)), 3)
        return scale, shift, None, 1
    n = sizes[axis]
    ps = tuple(1 if d == axis else 0 for d in range(len(sizes)))
    scale = tuple(round(float(v), 4) for v in rng.uniform(0.01, 3, n))
    shift = tuple(round(float(v), 3) for v in rng.uniform(-50, 50, n))
    return scale, shift, ps, n


def _convert_random(rng, count, cap=4096):
    """Conversions of random pairs (plain and affine), ranks, shapes and layout kinds."""
    out = []
    for _ in range(count):
        nd = int(rng.integers(1, 5))
        sizes = _shape(rng, nd, cap)
        dk, sk = str(rng.choice(DST_KINDS)), str(rng.choice(SRC_KINDS))
        affine = rng.random() < 0.5
        st_, dt = (AFFINE_PAIRS if affine else PAIRS)[
            int(rng.integers(len(AFFINE_PAIRS if affine else PAIRS)))]
        scale, shift, ps, n = _params(rng, sizes, int(rng.integers(nd)), affine)
        tune = str(rng.choice(list(CONVERT_TUNES)))
        out.append(Case(sizes, layout(dk, sizes, rng), layout(sk, sizes, rng), dst_type=dt,
                        src_type=st_, scale=scale, shift=shift, param_strides=ps,
                        param_length=n, convert_tune=CONVERT_TUNES[tune],
                        label=f"{dk}<-{sk}"))
    return out


def _images(rng, reps):
    """The image pipelines' relayouts: HWC uint8/int8 pixels of 3-4 channels (or RGBA read as
    3 planes, or the 32 channels of int8 NCHW32, dequantized) -> CHW float32 planes, and
    float32 planes -> HWC uint8/int8 pixels, quantized; padded planes and padded pixels;
    float32 NCHW -> float16/bfloat16 NHWC and back."""
    out = []
    hw = (1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 31, 33, 40)
    for R, S in ((3, 3), (4, 4), (3, 4), (2, 3), (5, 5), (32, 32)):
        for stype in ("uint8", "int8"):
            for _ in range(reps):
                H, W = (int(v) for v in rng.choice(hw, 2))
                pad = int(rng.choice((0, 0, 3)))
                affine = rng.random() < 0.8
                scale, shift, ps, n = _params(rng, (R, H, W), 0, affine)
                tune = str(rng.choice(["default", "default", "no-planes", "first",
                                       "small-tiles", "streamed"]))
                out.append(Case((R, H, W), (H * (W + pad), W + pad, 1), (1, W * S, S),
                                dst_type="float32", src_type=stype, scale=scale,
                                shift=shift, param_strides=ps, param_length=n,
                                convert_tune=CONVERT_TUNES[tune], label=f"HWC{S} -> CHW"))
                # float32 planes -> dense pixels, quantized (the mirror)
                scale, shift, ps, n = _params(rng, (H, W, R), 2, True)
                tune = str(rng.choice(["default", "default", "no-planes", "last",
                                       "small-tiles", "staged"]))
                out.append(Case((H, W, R), (W * S, S, 1), (W + pad, 1, H * (W + pad)),
                                dst_type=stype, src_type="float32", scale=scale,
                                shift=shift, param_strides=ps, param_length=n,
                                convert_tune=CONVERT_TUNES[tune], label=f"CHW -> HWC{S}"))
    for dt in ("float16", "bfloat16"):
        for _ in range(4 * reps):
            N, C, H, W = (int(rng.choice(v)) for v in ((1, 2), (1, 3, 7, 8, 9, 13, 16, 33),
                                                       (1, 3, 8, 9), (1, 5, 8, 17)))
            cpad = int(rng.choice((0, 0, 3)))
            tune = str(rng.choice(["default", "default", "no-tiled", "small-tiles",
                                   "staged"]))
            out.append(Case((N, C, H, W), padded((N, C, H, W), (0, 2, 3, 1), (0, cpad, 0, 0)),
                            packed((N, C, H, W), (0, 1, 2, 3)), dst_type=dt,
                            src_type="float32", convert_tune=CONVERT_TUNES[tune],
                            label="NCHW -> NHWC"))
            out.append(Case((N, C, H, W), packed((N, C, H, W), (0, 1, 2, 3)),
                            padded((N, C, H, W), (0, 2, 3, 1), (0, cpad, 0, 0)),
                            dst_type="float32", src_type=dt,
                            convert_tune=CONVERT_TUNES[tune], label="NHWC -> NCHW"))
    return out


def _convert_threads(rng):
    """Conversions of 0.5-1 MiB, large enough for a team of 2 threads."""
    return [
        Case((3, 224, 224), (224 * 224, 224, 1), (1, 224 * 3, 3), dst_type="float32",
             src_type="uint8", scale=(0.1, 0.2, 0.3), shift=(-1.0, 0.0, 1.0),
             param_strides=(1, 0, 0), param_length=3, threads=2, label="HWC -> CHW"),
        Case((224, 224, 4), (224 * 4, 4, 1), (224, 1, 224 * 224), dst_type="int8",
             src_type="float32", scale=20.0, shift=1.0, threads=2, label="CHW -> HWC4"),
        Case((2, 64, 33, 37), padded((2, 64, 33, 37), (0, 2, 3, 1), (0, 1, 0, 0)),
             packed((2, 64, 33, 37), (0, 1, 2, 3)), dst_type="float16", src_type="float32",
             threads=2, label="NCHW -> NHWC"),
        Case((2, 64, 33, 37), packed((2, 64, 33, 37), (0, 1, 2, 3)),
             packed((2, 64, 33, 37), (0, 2, 3, 1)), dst_type="float32", src_type="bfloat16",
             threads=2, label="NHWC -> NCHW"),
        Case((333, 401), (401, 1), (401, 1), dst_type="uint8", src_type="float32",
             scale=0.5, shift=3.0, threads=2, label="rows"),
        Case((333, 401), (1, 333), (401, 1), dst_type="float32", src_type="float64",
             threads=2, convert_tune=CONVERT_TUNES["small-tiles"], label="transpose"),
    ]


def _with_levels(base, levels):
    return [Case(**{**c.__dict__, "level": lv}) for c in base for lv in levels]


#: base cases (before SIMD levels) of each family in the default selection
DEFAULT_PER_FAMILY = 14


def cases(selection="default", levels=None):
    """The cases of a sweep, in a fixed order: ``"slow"``, every generator at full size, or
    ``"default"``, a seeded sample of DEFAULT_PER_FAMILY cases of each family (plus the
    column-major example and the threaded cases); each at every SIMD level in ``levels``
    (default: 0 to what the CPU has)."""
    if levels is None:
        from strided import _copy
        levels = range(_copy._simd() + 1)
    levels = list(levels)
    slow = selection == "slow"
    rng = np.random.default_rng(2024)
    base = (_copy_random(rng, 6000 if slow else 600)
            + _transposes(rng)
            + _interleaves(rng)
            + _deinterleaves(rng)
            + _fills(rng)
            + _stride2_bytes(rng)
            + _copy_threads(rng, 60 if slow else 4)
            + _convert_random(rng, 6000 if slow else 600)
            + _images(rng, 30 if slow else 6)
            + _convert_threads(rng))
    if not slow:
        pick = np.random.default_rng(7)
        by_family: dict[str, list[int]] = {}
        for i, c in enumerate(base):
            by_family.setdefault(family(Case(**{**c.__dict__, "level": levels[-1]})),
                                 []).append(i)
        keep = {i for c_ in by_family.values()
                for i in pick.permutation(c_)[:DEFAULT_PER_FAMILY]}
        base = [c for i, c in enumerate(base) if i in keep or c.threads == 2
                or c.label.startswith("F -> C")]
    return _with_levels(base, levels)


# ---- running one case ----------------------------------------------------------------------

def _values(type_name, n, rng):
    """``n`` source values of a type: integers any bit pattern; floats a mix of moderate
    values (normal * 200), special values (ties, limits, NaN, infinities) and raw bits."""
    dt = np_dtype(type_name)
    if type_name == "bool":
        return rng.random(n) < 0.5
    if dt.kind in "iu":
        return np.frombuffer(rng.bytes(n * dt.itemsize), dt).copy()
    if dt.kind == "c":
        return (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dt)
    vals = (rng.standard_normal(n) * 200).astype(dt)
    sv = special_values(type_name)
    pick = rng.random(n)
    vals[pick < 0.15] = sv[rng.integers(sv.size, size=int((pick < 0.15).sum()))]
    bits = pick > 0.9
    raw = np.frombuffer(rng.bytes(int(bits.sum()) * dt.itemsize),
                        np.dtype(f"u{dt.itemsize}")).view(dt)
    vals[bits] = raw
    return vals


def _oracle(case, src_vals):
    if not case.converts:
        return src_vals.copy()
    scale, shift = case.scale, case.shift
    if case.param_strides is not None:
        pidx = np.zeros(case.sizes, np.int64)
        for d, p in enumerate(case.param_strides):
            shape = [1] * len(case.sizes)
            shape[d] = case.sizes[d]
            pidx = pidx + np.arange(case.sizes[d]).reshape(shape) * p
        scale = None if scale is None else np.asarray(scale)[pidx].ravel()
        shift = None if shift is None else np.asarray(shift)[pidx].ravel()
    flat = src_vals.ravel()
    return oracle_convert(flat, case.dst_type, scale, shift,
                          axis=0 if case.param_strides is not None else None
                          ).reshape(case.sizes)


#: The label of the harness's own test case: its source is read one byte past its highest
#: byte before the engine runs, which must fault.
OVERREAD = "self-test: one byte past the source"


def _call(case, dst_addr, src_addr):
    if case.label == OVERREAD:
        ctypes.string_at(src_addr + (span(case.sizes, case.src_strides)[1] + 1)
                         * case.sizes_of_items[0], 1)
    if case.converts:
        from strided import _convert
        _convert.convert_memory(dst_addr, src_addr, case.sizes, case.dst_strides,
                                case.src_strides, case.dst_type, case.src_type,
                                scale=list(case.scale) if isinstance(case.scale, tuple)
                                else case.scale,
                                shift=list(case.shift) if isinstance(case.shift, tuple)
                                else case.shift,
                                param_strides=case.param_strides,
                                param_length=case.param_length, num_threads=case.threads)
    else:
        from strided import _copy
        _copy.copy_memory(dst_addr, src_addr, case.sizes, case.dst_strides, case.src_strides,
                          case.itemsize, case.threads)


def run_placed(case, placement, seed):
    """Run a case once at a placement (see PLACEMENTS); return what went wrong, or ''."""
    src_side, src_slack, dst_side, dst_slack = placement
    rng = np.random.default_rng(seed)
    sk, dk = case.sizes_of_items
    slo, shi = span(case.sizes, case.src_strides)
    dlo, dhi = span(case.sizes, case.dst_strides)
    src = arena("src", (shi - slo + 1) * sk + src_slack)
    dst = arena("dst", (dhi - dlo + 1) * dk + dst_slack)
    sf = _first(src_side, src_slack, slo, shi, sk, src.size)
    df = _first(dst_side, dst_slack, dlo, dhi, dk, dst.size)
    src.bytes[:] = np.frombuffer(rng.bytes(src.size), np.uint8)
    sdt = np_dtype(case.src_type) if case.converts else np.dtype(f"V{sk}")
    ddt = np_dtype(case.dst_type) if case.converts else np.dtype(f"V{dk}")
    sview = src.view(sf, case.sizes, case.src_strides, sdt)
    if case.converts:
        sview[...] = _values(case.src_type, int(np.prod(case.sizes)), rng).reshape(case.sizes)
    src_vals = np.array(sview)
    expected = _oracle(case, src_vals)
    src_before = src.bytes.copy()
    sentinel = _sentinel(dst.size)
    dst.bytes[:] = sentinel
    _call(case, dst.start + df, src.start + sf)
    where = f"{placement[0]}{'+' if placement[1] else ''}"
    if not np.array_equal(src.bytes, src_before):
        return f"{where}: the source changed"
    mask = np.zeros(dst.size, bool)
    mask[element_bytes(df, case.sizes, case.dst_strides, dk)] = True
    stray = np.flatnonzero((dst.bytes != sentinel) & ~mask)
    if stray.size:
        return (f"{where}: {stray.size} bytes outside the destination's elements written, "
                f"first {stray[0] - df:+d} from element 0")
    actual = np.array(dst.view(df, case.sizes, case.dst_strides, ddt))
    if case.converts:
        bad = mismatches(actual, expected)
    else:
        bad = np.flatnonzero((actual.reshape(-1, 1).view(np.uint8)
                              != expected.reshape(-1, 1).view(np.uint8)).any(axis=1))
    if bad.size:
        i = int(bad[0])
        index = tuple(int(v) for v in np.unravel_index(i, case.sizes))
        return (f"{where}: {bad.size} of {actual.size} elements wrong, first {index}: got "
                f"{actual.ravel()[i]!r}, expected {expected.ravel()[i]!r}")
    return ""


def run_case(case, seed=0):
    """All placements of a case at its SIMD level and tuning (restored afterwards)."""
    from strided import _copy
    _copy._simd(case.level)
    old = _copy._tune(**dict(case.copy_tune), **dict(case.convert_tune))
    try:
        for i, placement in enumerate(PLACEMENTS):
            problem = run_placed(case, placement, seed * len(PLACEMENTS) + i)
            if problem:
                return problem
        return ""
    finally:
        _copy._tune(**old)
        _copy._simd(-1)


# ---- workers and the sweep -----------------------------------------------------------------

def worker(stream):
    """Run the pickled ``[(index, case), ...]`` read from ``stream`` in order, printing
    ``> index`` before each case and ``= index`` with its outcome (``ok`` or what went wrong)
    after it."""
    out = sys.stdout
    for i, case in pickle.load(stream):
        out.write(f"> {i}\n")
        out.flush()
        try:
            problem = run_case(case, seed=i)
        except Exception as exc:   # an engine refusing a valid case is a wrong case too
            problem = f"{type(exc).__name__}: {exc}"
        out.write("= " + f"{i} {problem or 'ok'}".replace("\n", " ") + "\n")
        out.flush()


@dataclass
class Summary:
    """Per family: cases run, faulting (a signal or a hang) and wrong (a value, a stray
    write, a changed source, an exception); and every failure, ``(kind, case, detail)``."""

    cases: Counter = field(default_factory=Counter)
    faults: Counter = field(default_factory=Counter)
    wrong: Counter = field(default_factory=Counter)
    failures: list = field(default_factory=list)

    def table(self):
        rows = [f"{'family':32} {'cases':>7} {'faulting':>9} {'wrong':>7}"]
        for fam in sorted(self.cases):
            rows.append(f"{fam:32} {self.cases[fam]:7d} {self.faults[fam]:9d} "
                        f"{self.wrong[fam]:7d}")
        rows.append(f"{'total':32} {sum(self.cases.values()):7d} "
                    f"{sum(self.faults.values()):9d} {sum(self.wrong.values()):7d}")
        return "\n".join(rows)


def sweep(selection="default", *, timeout=1800, families=None):
    """Run a selection (:func:`cases`) in worker interpreters, a new one after each fault;
    return a :class:`Summary`. ``families``: only the cases whose family starts with one of
    these."""
    all_cases = cases(selection)
    todo = [(i, c) for i, c in enumerate(all_cases)
            if families is None or c.family.startswith(tuple(families))]
    summary = Summary()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(TESTS_DIR), env.get("PYTHONPATH"))
                                        if p)
    while todo:
        args = [sys.executable, str(Path(__file__))]
        stderr = ""
        try:
            proc = subprocess.run(args, input=pickle.dumps(todo), capture_output=True,
                                  timeout=timeout, env=env, cwd=TESTS_DIR, check=False)
            out, stderr, code, hung = proc.stdout, proc.stderr, proc.returncode, False
        except subprocess.TimeoutExpired as exc:
            out, code, hung = exc.stdout or b"", None, True
        started, done = None, set()
        for line in out.decode().splitlines():
            if line.startswith("> "):
                started = int(line[2:])
            elif line.startswith("= "):
                i, _, problem = line[2:].partition(" ")
                i = int(i)
                done.add(i)
                case = all_cases[i]
                summary.cases[case.family] += 1
                if problem != "ok":
                    summary.wrong[case.family] += 1
                    summary.failures.append(("wrong", case.describe(), problem))
        if code == 0 and not hung:
            break
        if started is None or started in done:
            raise RuntimeError(f"a worker died outside a case (status {code}):\n"
                               f"{stderr.decode() if stderr else ''}")
        case = all_cases[started]
        summary.cases[case.family] += 1
        summary.faults[case.family] += 1
        summary.failures.append(("hang" if hung else f"fault (signal {-code})"
                                 if code is not None and code < 0 else f"exit {code}",
                                 case.describe(), ""))
        todo = todo[[i for i, _ in todo].index(started) + 1:]
    return summary


if __name__ == "__main__":
    worker(sys.stdin.buffer)
