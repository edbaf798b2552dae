"""The relayout benchmark: :func:`strided.copyto` against ``np.copyto``, torch and a memcpy.

``python benchmarks/bench_copy.py`` calls :func:`main`. Every **case** is a copy users make when
a view is impossible (a 2-D transpose, column-major to row-major, NCHW to NHWC, NCDHW to NDHWC,
NCHW to the blocked NCHW4 / NCHW32, padded rows to packed ones, a broadcast to a packed tensor),
built for a dtype and a size (the bytes of the logical tensor: 4, 64, 512 MiB), and the inverse
of each layout change users make both ways (NHWC to NCHW; images HWC to CHW and back, at their
own fixed shapes: 224x224x3 and 1080x1920x3, timed once per dtype). The **contenders** copy the
same source view into the same destination view:

- ``strided``: ``strided.copyto(dst, src, num_threads=T)``;
- ``numpy``: ``np.copyto(dst, src)`` (numpy copies on one thread);
- ``torch``: ``dst.copy_(src)`` on tensors sharing the arrays' memory, after
  ``torch.set_num_threads(T)`` (``-`` when torch is not installed);
- ``cv2`` (image cases, where OpenCV is installed: the ``bench`` extra): ``cv2.split`` of the
  HWC image into the planes of the destination, ``cv2.merge`` of the planes into the HWC
  destination, after ``cv2.setNumThreads(T)``;
- ``hptt`` (where the peer is built: ``../shared/peers/hptt``, see :func:`load_hptt`): HPTT's
  planned transpose ``B = A.transpose(perm)`` of the packed (or padded) array under the source
  into the packed destination, on T threads, for float32 and float64 cases it can express (not
  the broadcast, not 1-byte elements);
- ``memcpy``: one ``ctypes.memmove`` of the same number of bytes between two contiguous
  buffers, the bandwidth a copy that needs no relayout gets; ``memcpy xT``: the same bytes split
  over T threads (a reference for a parallel copy, not a target).

Before anything is timed, every contender runs once on the case (the warm-up) and strided's
and torch's destination bytes are compared with numpy's: a difference is an ``AssertionError``.
Then each **sample** runs every contender once, in orders that change from sample to sample, each
contender following each other one equally often (a contender's sample is a loop of calls
lasting about ``sample_ms``, or a single call when one
call is longer), so that slow phases of a shared, noisy machine hit every contender alike. The
table reports, per case, the GB/s of the median time per call, counting the bytes read and the
bytes written (``2 x`` the logical tensor's bytes, whatever the source's own footprint), and
the medians of the paired ratios ``strided / best peer`` (the fastest of numpy, torch, cv2
and hptt)
and ``strided / memcpy`` (above 1: strided is faster). A summary checks the targets of the copy
engine (at 64 MiB on 2 threads; the image cases at their own shapes), among them the inverse
direction's against the forward one, and a last line times a 16-element copy, in ns per call.
A second summary checks the machine-limit targets on every row of the run (1.1x the best
peer; transposes at 4 MiB against a memcpy, on one thread at 64 and 512 MiB against a memcpy,
at 512 MiB against strided's own streamed copy of the same bytes).

Examples
--------
>>> [case.name for case in select_cases(["nchw->nhwc"])]
['NCHW->NHWC/C3', 'NCHW->NHWC/C16', 'NCHW->NHWC/C64', 'NCHW->NHWC/C256']
>>> CASES_BY_NAME["NHWC->NCHW/C3"].inverse_of
'NCHW->NHWC/C3'
>>> built = CASES_BY_NAME["NCHW->NCHW4"].build(0.25, np.dtype(np.uint8))
>>> built.shape, built.src.shape, built.dst_base.shape
((8, 128, 16, 16), (8, 32, 4, 16, 16), (8, 32, 16, 16, 4))
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import itertools
import math
import os
import random
import shlex
import statistics
import sys
import time
import timeit
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import util as import_util
from pathlib import Path
from typing import Any

import numpy as np

from . import plot
from .report import (
    OneLineParser,
    check_sampling,
    machine_facts,
    new_record,
    optional_module,
    paired_ratio,
    record_row,
    render_table,
    sample_alternating,
    select_by_name,
)

__all__ = [
    "CASES",
    "CASES_BY_NAME",
    "Built",
    "Case",
    "Result",
    "SmallCopy",
    "format_table",
    "limit_summary",
    "main",
    "report",
    "run",
    "run_case",
    "select_cases",
    "small_copy",
    "target_summary",
    "to_record",
]

MiB = 1 << 20
#: Sizes (MiB of the logical tensor) of the full run.
FULL_SIZES = (4.0, 64.0, 512.0)
#: ``--small``: one small size ...
SMALL_SIZES = (4.0,)
#: ... and these cases (every kind of kernel once), so that it ends in seconds.
SMALL_CASES = ("transpose2d", "NCHW->NHWC/C3", "NCHW->NHWC/C64", "NHWC->NCHW/C3",
               "NHWC->NCHW/C64", "CHW->HWC/224x224x3", "HWC->CHW/224x224x3", "NCHW->NCHW32",
               "padded->packed", "broadcast->packed")
DTYPES = ("float32", "uint8")
#: The targets are set at this size, on this many threads.
TARGET_MIB = 64.0
TARGET_THREADS = 2
#: strided / best peer, every case.
TARGET_VS_PEER = 1.0
#: strided / best peer, geometric mean over the transposing cases.
TARGET_TRANSPOSE_GEOMEAN = 2.0
#: strided / best peer, every inverse case (NHWC -> NCHW, HWC -> CHW).
TARGET_INVERSE_VS_PEER = 2.0
#: strided's inverse direction / its forward direction (speed), the same dtype and size.
TARGET_INVERSE_VS_FORWARD = 0.8
#: strided / memcpy, transposing cases (1-byte items: the next figure).
TARGET_TRANSPOSE_VS_MEMCPY = 0.8
TARGET_TRANSPOSE_VS_MEMCPY_1BYTE = 0.5
#: The machine-limit targets, checked on every size and thread count of a run: strided /
#: best peer on every case, ...
LIMIT_VS_PEER = 1.1
#: ... strided / memcpy for the transposing cases at the cache-resident size ...
LIMIT_CACHED_MIB = 4.0
LIMIT_CACHED_VS_MEMCPY = 0.7
#: ... and on one thread at the streamed sizes ...
LIMIT_STREAMED_MIB = (64.0, 512.0)
LIMIT_ONE_THREAD_VS_MEMCPY = 0.8
#: ... and strided's speed at the largest size against S, its own streamed copy of the same
#: bytes (the padded->packed row of the same dtype, size and threads).
LIMIT_LARGE_MIB = 512.0
LIMIT_LARGE_VS_S = 0.8
#: Above this mean share of the CPU used by other processes, the report warns.
NOISY_SHARE = 0.10
#: Elements of the small copy.
SMALL_COPY_ELEMENTS = 16

_PEERS = ("numpy", "torch", "cv2", "hptt")
_SENTINEL = 0xA5
_PATTERN_LENGTH = 1_000_003  # prime: the source pattern never lines up with a dimension


# --------------------------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------------------------


@dataclass
class Built:
    """The arrays of one case: copy ``src`` (a view of ``src_base``) into ``dst``.

    ``dst`` is a view covering all of ``dst_base``, a packed array; ``shape`` is the logical
    shape of the tensor in its canonical order (NCHW, ...), ``src``/``dst`` may have another
    (the 5-D view of a blocked format).
    """

    src: np.ndarray
    src_base: np.ndarray
    dst: np.ndarray
    dst_base: np.ndarray
    shape: tuple[int, ...]

    @property
    def nbytes(self) -> int:
        """Bytes of the logical tensor (= of the packed destination)."""
        return int(self.dst_base.nbytes)


@dataclass(frozen=True)
class Case:
    """A relayout: its name, whether it moves the innermost dimension, how to build it.

    ``inverse_of`` names the case this one undoes (NHWC -> NCHW undoes NCHW -> NHWC);
    ``fixed`` cases have a shape of their own (an image) whatever the size asked for, and run
    once per dtype, at the first size; ``cv2`` builds OpenCV's call for the case (the same
    copy), where OpenCV has one.
    """

    name: str
    transposing: bool
    description: str
    make: Callable[[int, np.dtype], Built] = field(repr=False)
    inverse_of: str | None = None
    fixed: bool = False
    cv2: Callable[[Any, Built], Callable[[], object]] | None = field(default=None, repr=False)

    def build(self, mib: float, dtype: np.dtype) -> Built:
        """The arrays for a logical tensor of about ``mib`` MiB (of the case's own shape when
        it is fixed); the source is filled."""
        elements = max(1, round(mib * MiB / dtype.itemsize))
        built = self.make(elements, dtype)
        if built.dst.size != built.dst_base.size or built.src.shape != built.dst.shape:
            raise AssertionError(f"{self.name}: the case's views do not match")
        return built


def _side(area: float) -> int:
    return max(1, round(math.sqrt(area)))


def _filled(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """A packed array holding a pseudo-random pattern (distinct neighbours, no short period)."""
    out = np.empty(shape, dtype)
    flat = out.reshape(-1)
    count = min(flat.size, _PATTERN_LENGTH)
    values = np.arange(count, dtype=np.int64) * 40503 % _PATTERN_LENGTH
    pattern = values.astype(dtype, casting="unsafe")  # integers wrap: the low bytes
    for start in range(0, flat.size, count):
        stop = min(start + count, flat.size)
        flat[start:stop] = pattern[: stop - start]
    return out


def _packed_to(shape: tuple[int, ...], order: tuple[int, ...], dtype: np.dtype
               ) -> tuple[np.ndarray, np.ndarray]:
    """A packed array whose memory holds ``shape``'s axes in ``order``, and its logical view."""
    base = np.empty(tuple(shape[ax] for ax in order), dtype)
    return base, base.transpose(tuple(np.argsort(order)))


def _transpose2d(e: int, dtype: np.dtype) -> Built:
    if e & (e - 1) == 0:  # a power of two: 2^k x 2^(k or k+1)
        rows = 1 << ((e.bit_length() - 1) // 2)
    else:
        rows = max(1, math.isqrt(e))
    shape = (rows, e // rows)
    src_base = _filled(shape[::-1], dtype)
    dst = np.empty(shape, dtype)
    return Built(src_base.T, src_base, dst, dst, shape)


def _col_to_row(e: int, dtype: np.dtype) -> Built:
    shape = (max(1, e // 768), 768)  # a data matrix, 768 features (an embedding width)
    src_base = _filled(shape[::-1], dtype)  # Fortran order
    dst = np.empty(shape, dtype)
    return Built(src_base.T, src_base, dst, dst, shape)


def _nchw_to_nhwc(channels: int) -> Callable[[int, np.dtype], Built]:
    def make(e: int, dtype: np.dtype) -> Built:
        side = _side(e / (8 * channels))
        shape = (8, channels, side, side)
        src = _filled(shape, dtype)
        dst_base, dst = _packed_to(shape, (0, 2, 3, 1), dtype)
        return Built(src, src, dst, dst_base, shape)

    return make


def _nhwc_to_nchw(channels: int) -> Callable[[int, np.dtype], Built]:
    def make(e: int, dtype: np.dtype) -> Built:
        side = _side(e / (8 * channels))
        shape = (8, channels, side, side)
        src_base, src = _packed_to(shape, (0, 2, 3, 1), dtype)
        src_base[...] = _filled(src_base.shape, dtype)
        dst = np.empty(shape, dtype)
        return Built(src, src_base, dst, dst, shape)

    return make


def _image(height: int, width: int, channels: int, *, to_planes: bool
           ) -> Callable[[int, np.dtype], Built]:
    """An image of a fixed shape, (C, H, W) in canonical order: packed HWC -> packed CHW
    (``to_planes``, a data loader's direction) or back."""
    shape = (channels, height, width)

    def make(e: int, dtype: np.dtype) -> Built:
        del e  # the shape is the case's own
        if to_planes:
            src_base, src = _packed_to(shape, (1, 2, 0), dtype)
            src_base[...] = _filled(src_base.shape, dtype)
            dst = np.empty(shape, dtype)
            return Built(src, src_base, dst, dst, shape)
        src = _filled(shape, dtype)
        dst_base, dst = _packed_to(shape, (1, 2, 0), dtype)
        return Built(src, src, dst, dst_base, shape)

    return make


def _cv2_split(cv2: Any, built: Built) -> Callable[[], object]:
    """cv2.split of the HWC source into the CHW destination's planes."""
    planes = list(built.dst_base)
    return lambda: cv2.split(built.src_base, planes)


def _cv2_merge(cv2: Any, built: Built) -> Callable[[], object]:
    """cv2.merge of the CHW source's planes into the HWC destination."""
    planes = list(built.src_base)
    return lambda: cv2.merge(planes, built.dst_base)


def _ncdhw_to_ndhwc(e: int, dtype: np.dtype) -> Built:
    side = _side(e / (2 * 32 * 16))
    shape = (2, 32, 16, side, side)
    src = _filled(shape, dtype)
    dst_base, dst = _packed_to(shape, (0, 2, 3, 4, 1), dtype)
    return Built(src, src, dst, dst_base, shape)


def _nchw_to_blocked(block: int) -> Callable[[int, np.dtype], Built]:
    def make(e: int, dtype: np.dtype) -> Built:
        channels = 128
        side = _side(e / (8 * channels))
        shape = (8, channels, side, side)
        split = (8, channels // block, block, side, side)
        src_base = _filled(shape, dtype)
        dst_base, dst = _packed_to(split, (0, 1, 3, 4, 2), dtype)  # (N, C/x, H, W, x)
        return Built(src_base.reshape(split), src_base, dst, dst_base, shape)

    return make


def _padded_to_packed(e: int, dtype: np.dtype) -> Built:
    side = _side(e / (8 * 3))
    pitch = (side * dtype.itemsize // 64 + 1) * 64 // dtype.itemsize  # rows aligned to 64 bytes
    shape = (8, 3, side, side)
    src_base = _filled((8, 3, side, pitch), dtype)
    dst = np.empty(shape, dtype)
    return Built(src_base[..., :side], src_base, dst, dst, shape)


def _broadcast_to_packed(e: int, dtype: np.dtype) -> Built:
    side = _side(e / (8 * 64))
    shape = (8, 64, side, side)
    bias = _filled((1, 64, 1, 1), dtype)
    dst = np.empty(shape, dtype)
    return Built(np.broadcast_to(bias, shape), bias, dst, dst, shape)


#: Every case, in table order.
CASES: tuple[Case, ...] = (
    Case("transpose2d", True, "square-ish matrix: src = a.T of a packed a, dst packed",
         _transpose2d),
    Case("colmajor->rowmajor", True, "(rows, 768) matrix in Fortran order to C order",
         _col_to_row),
    *(Case(f"NCHW->NHWC/C{c}", True, f"N=8, C={c}, H=W: NCHW packed to NHWC packed",
           _nchw_to_nhwc(c)) for c in (3, 16, 64, 256)),
    *(Case(f"NHWC->NCHW/C{c}", True, f"N=8, C={c}, H=W: NHWC packed to NCHW packed",
           _nhwc_to_nchw(c), inverse_of=f"NCHW->NHWC/C{c}") for c in (3, 16, 64, 256)),
    *(case
      for h, w in ((224, 224), (1080, 1920))
      for case in (
          Case(f"CHW->HWC/{h}x{w}x3", True, f"a {h}x{w} 3-channel image, CHW packed to HWC "
               f"packed (cv2.merge)", _image(h, w, 3, to_planes=False), fixed=True,
               cv2=_cv2_merge),
          Case(f"HWC->CHW/{h}x{w}x3", True, f"a {h}x{w} 3-channel image, HWC packed to CHW "
               f"packed (cv2.split)", _image(h, w, 3, to_planes=True),
               inverse_of=f"CHW->HWC/{h}x{w}x3", fixed=True, cv2=_cv2_split))),
    Case("NCDHW->NDHWC", True, "N=2, C=32, D=16, H=W: NCDHW packed to NDHWC packed",
         _ncdhw_to_ndhwc),
    *(Case(f"NCHW->NCHW{x}", True,
           f"N=8, C=128, H=W: (N, C/{x}, {x}, H, W) views of packed NCHW and NCHW{x}",
           _nchw_to_blocked(x)) for x in (4, 32)),
    Case("padded->packed", False, "N=8, C=3, H=W, rows pitched to a multiple of 64 bytes",
         _padded_to_packed),
    Case("broadcast->packed", False, "a (1, 64, 1, 1) bias broadcast to N=8, C=64, H=W",
         _broadcast_to_packed),
)
CASES_BY_NAME = {case.name: case for case in CASES}


def select_cases(patterns: Sequence[str] | None) -> list[Case]:
    """The cases named by ``patterns`` (exact names or case-insensitive substrings), in order
    (:func:`harness.report.select_by_name`); ``None`` selects every case."""
    return select_by_name(CASES, patterns)


# --------------------------------------------------------------------------------------------
# Contenders, check and timing
# --------------------------------------------------------------------------------------------


def _torch() -> Any:
    """torch, or None when it is not installed (imported only here, when asked for)."""
    return optional_module("torch")


def _cv2() -> Any:
    """OpenCV, or None when it is not installed (imported only here, when asked for)."""
    return optional_module("cv2")


#: Where HPTT's loader (hptt.py) and build script are, unless $STRIDED_HPTT_DIR says: the
#: shared peers folder beside the repository. The library itself is found by hptt.py
#: ($HPTT_SHIM, else ${TMPDIR:-/tmp}/hptt/libhptt_shim.so, which build.sh makes).
HPTT_DIR = Path(__file__).resolve().parents[3] / "shared" / "peers" / "hptt"


def load_hptt() -> Any:
    """HPTT's ctypes peer (an object with ``supports``, ``plan``, ``close``), or None when its
    loader or its built library is absent (build it once per machine with ``build.sh``)."""
    folder = Path(os.environ.get("STRIDED_HPTT_DIR") or HPTT_DIR)
    loader = folder / "hptt.py"
    if not loader.is_file():
        return None
    spec = import_util.spec_from_file_location("strided_bench_hptt", loader)
    if spec is None or spec.loader is None:
        return None
    module = import_util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.load()


def _outer_sizes(a: np.ndarray) -> tuple[int, ...] | None:
    """The sizes of the packed array of which ``a`` (strides decreasing) is a sub-block, None
    when ``a`` is itself packed; ValueError when no packed array holds it so."""
    strides = [s // a.itemsize for s in a.strides]
    if a.ndim == 0 or strides[-1] != 1 or any(s % a.itemsize for s in a.strides):
        raise ValueError("not a sub-block of a packed array")
    outer = [a.shape[0]]
    for k in range(1, a.ndim):
        pitch, rest = divmod(strides[k - 1], strides[k]) if strides[k] else (0, 1)
        if rest or pitch < a.shape[k]:
            raise ValueError("not a sub-block of a packed array")
        outer.append(pitch)
    return None if tuple(outer) == a.shape else tuple(outer)


def hptt_arguments(built: Built) -> tuple[np.ndarray, np.ndarray, tuple[int, ...],
                                          tuple[int, ...] | None] | None:
    """HPTT's view of a case, ``(A, B, perm, outer)`` with ``B = A.transpose(perm)`` the
    copy, A the source's axes in memory order (a packed array, or a sub-block of the packed
    array of sizes ``outer``), B the packed destination's; None when HPTT cannot express it
    (a broadcast source, a destination that is not packed)."""
    src, dst = built.src, built.dst
    if src.size == 0 or 0 in src.strides:
        return None
    by_stride = sorted(range(src.ndim), key=lambda k: (-src.strides[k], k))
    into = sorted(range(dst.ndim), key=lambda k: (-dst.strides[k], k))
    a, b = src.transpose(by_stride), dst.transpose(into)
    if not b.flags.c_contiguous:
        return None
    try:
        outer = _outer_sizes(a)
    except ValueError:
        return None
    perm = tuple(by_stride.index(axis) for axis in into)
    return a, b, perm, outer


def _hptt_call(hptt: Any, built: Built, threads: int) -> Callable[[], object] | None:
    """HPTT's planned transpose of the case on ``threads`` threads, or None."""
    args = hptt_arguments(built) if hptt.supports(built.src.dtype) else None
    if args is None:
        return None
    a, b, perm, outer = args
    return hptt.plan(a, b, perm, threads, outer)


def _torch_view(torch: Any, view: np.ndarray, base: np.ndarray) -> Any:
    """A torch tensor with ``view``'s sizes and strides on ``base``'s memory."""
    itemsize = base.itemsize
    offset = (view.__array_interface__["data"][0] - base.ctypes.data) // itemsize
    return torch.as_strided(torch.from_numpy(base.reshape(-1)), view.shape,
                            tuple(s // itemsize for s in view.strides), offset)


def _parallel_memmove(pool: ThreadPoolExecutor, threads: int) -> Callable[[int, int, int], None]:
    """memmove(dst, src, n) split in ``threads`` page-aligned chunks, one per thread."""
    memmove = ctypes.memmove  # a foreign call: it releases the GIL

    def copy(dst: int, src: int, n: int) -> None:
        chunk = -(-n // threads)
        chunk += -chunk % 4096
        futures = [pool.submit(memmove, dst + i, src + i, min(chunk, n - i))
                   for i in range(chunk, n, chunk)]
        memmove(dst, src, min(chunk, n))
        for future in futures:
            future.result()

    return copy


def _cpu_seconds() -> tuple[float, float, float] | None:
    """(machine CPU seconds elapsed, machine CPU seconds busy, this process's CPU seconds).

    From ``/proc/stat`` (Linux); None elsewhere.
    """
    try:
        with open("/proc/stat") as f:
            ticks = [int(x) for x in f.readline().split()[1:9]]
        hz = os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, AttributeError):
        return None
    own = os.times()
    return sum(ticks) / hz, (sum(ticks) - ticks[3] - ticks[4]) / hz, own.user + own.system


def _others_share(before: tuple[float, float, float] | None,
                  after: tuple[float, float, float] | None) -> float | None:
    """Share of the machine's CPU time other processes used between two snapshots."""
    if before is None or after is None or after[0] <= before[0]:
        return None
    busy = (after[1] - before[1]) - (after[2] - before[2])
    return min(1.0, max(0.0, busy / (after[0] - before[0])))


def _same_bytes(a: np.ndarray, b: np.ndarray) -> bool:
    step = 16 * MiB
    return a.size == b.size and all(
        np.array_equal(a[i:i + step], b[i:i + step]) for i in range(0, a.size, step))


@dataclass
class Result:
    """The samples of one case at one dtype and size: seconds per call, by contender."""

    case: Case
    dtype: str
    size: float  # the size asked for, MiB (the logical tensor's is close: see mib)
    nbytes: int
    shape: tuple[int, ...]
    threads: int
    times: dict[str, list[float]]
    others: float | None = None  # share of the CPU other processes used while timing
    rounds: int = 1  # copies of the case the calls rotated over (cold mode; 1: warm)

    @property
    def mib(self) -> float:
        """Size of the logical tensor in MiB."""
        return self.nbytes / MiB

    def median(self, name: str) -> float | None:
        """Median seconds per call of a contender (None when it did not run)."""
        samples = self.times.get(name)
        return statistics.median(samples) if samples else None

    def gbps(self, name: str) -> float | None:
        """GB/s of a contender: 2 x nbytes (read + written) / median time per call."""
        t = self.median(name)
        return None if t is None else 2 * self.nbytes / t / 1e9

    def ratio(self, name: str) -> float | None:
        """Median over the samples of ``time(name) / time(strided)``: above 1, strided wins."""
        other = self.times.get(name)
        if not other:
            return None
        return paired_ratio(other, self.times["strided"])

    @property
    def best_peer(self) -> str:
        """The fastest of numpy, torch, cv2 and hptt (by median time)."""
        peers = [p for p in _PEERS if self.times.get(p)]
        return min(peers, key=lambda p: self.median(p) or math.inf)

    @property
    def vs_peer(self) -> float:
        """strided / best peer (median of the paired ratios)."""
        return self.ratio(self.best_peer) or math.nan

    @property
    def vs_memcpy(self) -> float:
        """strided / memcpy (median of the paired ratios)."""
        return self.ratio("memcpy") or math.nan


def run_case(
    case: Case,
    dtype: str,
    mib: float,
    *,
    threads: int,
    repeat: int,
    sample_ms: float,
    torch: Any = None,
    pool: ThreadPoolExecutor | None = None,
    cv2: Any = None,
    hptt: Any = None,
    cold: bool = False,
) -> Result:
    """Build one case, check every contender's bytes, then time them; free the arrays.

    Parameters
    ----------
    case, dtype, mib
        What to copy: the case, a numpy dtype name, the logical tensor's size in MiB.
    threads : int
        ``num_threads`` of strided, ``torch.set_num_threads`` (set by the caller) and the
        threads of the parallel memcpy (``pool``, which must have ``threads - 1`` workers).
    repeat, sample_ms
        Samples per contender and the target duration of one sample.
    torch : module, optional
        torch, or None to leave it out.
    cv2 : module, optional
        OpenCV (``cv2.setNumThreads`` set by the caller), or None; used by the cases that
        have an OpenCV call.
    hptt : object, optional
        HPTT's peer (:func:`load_hptt`), or None; planned here for the cases it can express
        and freed before returning.
    cold : bool
        Time with cold caches: each call of a contender runs on the next of
        :func:`cold_rounds` copies of the case (default: every call on the same arrays, which
        stay in the caches when they fit).

    Raises
    ------
    AssertionError
        When strided's or torch's destination bytes differ from numpy's.
    """
    np_dtype = np.dtype(dtype)
    built = case.build(mib, np_dtype)
    nbytes = built.nbytes
    dst_bytes = built.dst_base.reshape(-1).view(np.uint8)
    scratch = np.empty(nbytes, np.uint8)
    # cold: every contender's call takes the next of `rounds` copies of the case, so that
    # what one call leaves in the caches is not what the next one reads
    rounds = cold_rounds(built) if cold else 1
    builts = [built, *(case.build(mib, np_dtype) for _ in range(rounds - 1))]
    scratches = [scratch, *(np.empty(nbytes, np.uint8) for _ in range(rounds - 1))]
    each = [_contenders(case, b, sc, threads=threads, torch=torch, pool=pool, cv2=cv2,
                        hptt=hptt) for b, sc in zip(builts, scratches)]
    contenders = _rotating(each)

    # The check, which is also every contender's warm-up run: numpy's bytes are the reference.
    first = each[0]   # (the calls on the first copy, whose destination is dst_bytes)
    dst_bytes.fill(_SENTINEL)
    first["numpy"]()
    scratch[...] = dst_bytes
    for name in ("strided", "torch", "cv2", "hptt"):
        if name in first:
            dst_bytes.fill(_SENTINEL)
            first[name]()
            if not _same_bytes(dst_bytes, scratch):
                raise AssertionError(
                    f"{case.name} {dtype} {mib:g} MiB: {name} wrote other bytes than np.copyto")
    for name in ("memcpy", "memcpy_par"):
        if name in first:
            first[name]()

    for more in each[1:]:           # the other copies' warm-up (their pages, their plans)
        for call in more.values():
            call()
    timers = {name: timeit.Timer(call) for name, call in contenders.items()}
    before = _cpu_seconds()
    times = sample_alternating(timers, repeat=repeat, sample_s=sample_ms / 1000.0)
    others = _others_share(before, _cpu_seconds())
    if hptt is not None:
        hptt.close()
    # returning frees the arrays
    return Result(case, dtype, mib, nbytes, built.shape, threads, times, others, rounds)


def _contenders(case: Case, built: Built, scratch: np.ndarray, *, threads: int, torch: Any,
                pool: ThreadPoolExecutor | None, cv2: Any, hptt: Any
                ) -> dict[str, Callable[[], object]]:
    """Every contender's call on one copy of a case (``scratch``: memcpy's destination)."""
    import strided

    copyto = strided.copyto
    src, dst = built.src, built.dst
    nbytes = built.nbytes
    dst_address, scratch_address = built.dst_base.ctypes.data, scratch.ctypes.data
    memmove = ctypes.memmove
    contenders: dict[str, Callable[[], object]] = {
        "strided": lambda: copyto(dst, src, num_threads=threads),
        "numpy": lambda: np.copyto(dst, src),
    }
    if torch is not None:
        tsrc = _torch_view(torch, src, built.src_base)
        tdst = _torch_view(torch, dst, built.dst_base)
        contenders["torch"] = lambda: tdst.copy_(tsrc)
    if cv2 is not None and case.cv2 is not None:
        contenders["cv2"] = case.cv2(cv2, built)
    hptt_call = None if hptt is None else _hptt_call(hptt, built, threads)
    if hptt_call is not None:
        contenders["hptt"] = hptt_call
    contenders["memcpy"] = lambda: memmove(scratch_address, dst_address, nbytes)
    if pool is not None and threads > 1:
        parallel = _parallel_memmove(pool, threads)
        contenders["memcpy_par"] = lambda: parallel(scratch_address, dst_address, nbytes)
    return contenders


def _rotating(each: Sequence[Mapping[str, Callable[[], object]]]
              ) -> dict[str, Callable[[], object]]:
    """Every contender's call, from its calls on each copy of a case (``each``): with one
    copy, those calls; with several (cold mode), calls that share one turn through the copies
    in a fixed shuffled order, so that whichever contender calls next takes a copy no
    contender has touched for a whole turn, and one that does not lie next to the copy the
    call before it touched.

    Why both. With a turn of its own for each contender, contenders of equal speed could run
    on copies another had just read, from the cache. With one turn in allocation order, a call
    ran on the neighbour in memory of the copy the call before it had touched, and the
    hardware's prefetching of one call ran on into the next one's arrays: 224x224x3 float32
    images in copies allocated back to back (one heap), cv2.merge alternating call by call
    with strided.copyto on the next copy took 68-70 us, alone 104 us (strided 106-115 and
    102-103 us), and bench_copy's cold figure for cv2 moved between 75 and 147 us with the
    process's allocation history."""
    if len(each) == 1:
        return dict(each[0])
    order = list(range(len(each)))
    random.Random(len(each)).shuffle(order)
    turn = itertools.cycle(order)
    return {name: (lambda name=name: each[next(turn)][name]()) for name in each[0]}


def last_level_cache_bytes() -> int:
    """The size of the largest CPU cache Linux reports (sysfs), else 32 MiB."""
    sizes = []
    for path in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        text = path.read_text().strip().upper()
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        digits = text.rstrip("KMG")
        if digits.isdigit():
            sizes.append(int(digits) * scale)
    return max(sizes, default=32 * MiB)


def cold_rounds(built: Built, cache_bytes: int | None = None) -> int:
    """Copies of a case the cold mode rotates over: enough that the bytes touched between two
    calls on the same copy (source, destination and memcpy's scratch, every other copy) are
    at least three times the last-level cache; 1 when one copy is that large already."""
    cache = last_level_cache_bytes() if cache_bytes is None else cache_bytes
    footprint = built.src_base.nbytes + built.dst_base.nbytes + built.nbytes
    return max(1, math.ceil(3 * cache / footprint))


def run(
    cases: Sequence[Case],
    *,
    sizes: Sequence[float] = FULL_SIZES,
    dtypes: Sequence[str] = DTYPES,
    threads: int = TARGET_THREADS,
    repeat: int = 7,
    sample_ms: float = 5.0,
    with_torch: bool = True,
    with_cv2: bool = True,
    with_hptt: bool = True,
    cold: bool = False,
    progress: Callable[[str], None] | None = None,
) -> list[Result]:
    """Every case at every size and dtype (sizes outermost), torch and OpenCV on ``threads``
    threads; the fixed-shape cases at the first size only.

    Returns one :class:`Result` per (size, case, dtype), in that order. torch's and OpenCV's
    thread counts are restored afterwards.
    """
    if repeat < 1:
        raise ValueError(f"repeat must be >= 1, got {repeat}")
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    torch = _torch() if with_torch else None
    cv2 = _cv2() if with_cv2 and any(case.cv2 is not None for case in cases) else None
    hptt = load_hptt() if with_hptt else None
    saved = saved_cv2 = None
    if torch is not None:
        saved = torch.get_num_threads()
        torch.set_num_threads(threads)
    if cv2 is not None:
        saved_cv2 = cv2.getNumThreads()
        cv2.setNumThreads(threads)
    jobs = [(mib, case, dtype) for i, mib in enumerate(sizes) for case in cases
            for dtype in dtypes if i == 0 or not case.fixed]
    results = []
    start = time.perf_counter()
    try:
        with ThreadPoolExecutor(max_workers=max(1, threads - 1)) as pool:
            for i, (mib, case, dtype) in enumerate(jobs, 1):
                if progress is not None:
                    progress(f"  [{i}/{len(jobs)}] {case.name} {dtype} {mib:g} MiB "
                             f"(t = {time.perf_counter() - start:.0f} s)")
                results.append(run_case(case, dtype, mib, threads=threads, repeat=repeat,
                                        sample_ms=sample_ms, torch=torch, pool=pool, cv2=cv2,
                                        hptt=hptt, cold=cold))
                gc.collect()
    finally:
        if torch is not None:
            torch.set_num_threads(saved)
        if cv2 is not None:
            cv2.setNumThreads(saved_cv2)
    return results


@dataclass
class SmallCopy:
    """ns per call of a 16-element float32 copy, by contender (medians of paired samples)."""

    ns: dict[str, float]
    ratio: float  # median of the paired ratios numpy / strided: >= 1 meets the target

    @property
    def met(self) -> bool:
        """strided costs no more than np.copyto."""
        return self.ratio >= 1.0


def small_copy(*, repeat: int = 15, sample_ms: float = 20.0, with_torch: bool = True
               ) -> SmallCopy:
    """Time ``copyto(dst, src)`` (default threads) on 16 float32 against ``np.copyto``.

    timeit loops calibrated to ``sample_ms``, the callable and its arguments bound to locals;
    the contenders alternate (balanced orders), as in :func:`run`. torch's ``copy_`` is timed
    too when installed (for information).
    """
    import strided

    src = np.arange(SMALL_COPY_ELEMENTS, dtype=np.float32)
    dst = np.zeros_like(src)
    calls: dict[str, tuple[Any, Any, Any]] = {
        "strided": (strided.copyto, dst, src),
        "numpy": (np.copyto, dst, src),
    }
    torch = _torch() if with_torch else None
    if torch is not None:
        tdst = torch.zeros(SMALL_COPY_ELEMENTS)
        calls["torch"] = (tdst.copy_, torch.from_numpy(src), None)
    timers = {}
    for name, (f, a, b) in calls.items():
        stmt = "f(a)" if b is None else "f(a, b)"
        timers[name] = timeit.Timer(stmt, setup="f = _f; a = _a; b = _b",
                                    globals={"_f": f, "_a": a, "_b": b})
        timers[name].timeit(10)  # warm-up
    times = sample_alternating(timers, repeat=repeat, sample_s=sample_ms / 1000.0)
    if not np.array_equal(dst, src):
        raise AssertionError("the 16-element copy is wrong")
    ns = {name: statistics.median(t) * 1e9 for name, t in times.items()}
    return SmallCopy(ns, paired_ratio(times["numpy"], times["strided"]))


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------


def _fmt_gbps(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _fmt_mib(mib: float) -> str:
    return f"{mib:.0f}" if mib >= 9.5 else f"{mib:.2g}" if mib < 1 else f"{mib:.1f}"


def format_table(results: Sequence[Result], *, markdown: bool = False) -> str:
    """One row per result: GB/s of every contender and strided's two ratios."""
    threads = results[0].threads if results else TARGET_THREADS
    parallel = threads > 1 and any("memcpy_par" in r.times for r in results)
    peers = ["numpy", "torch"] + [p for p in ("cv2", "hptt")
                                  if any(p in r.times for r in results)]
    header = ["case", "dtype", "MiB", "shape", "strided", *peers, "memcpy"]
    if parallel:
        header.append(f"memcpy x{threads}")
    header += ["st/peer", "best peer", "st/memcpy", "others"]
    rows = []
    for r in results:
        row = [r.case.name, r.dtype, _fmt_mib(r.mib), "x".join(map(str, r.shape))]
        row += [_fmt_gbps(r.gbps(name)) for name in ("strided", *peers, "memcpy")]
        if parallel:
            row.append(_fmt_gbps(r.gbps("memcpy_par")))
        row += [f"{r.vs_peer:.2f}x", r.best_peer, f"{r.vs_memcpy:.2f}x",
                "-" if r.others is None else f"{100 * r.others:.0f}%"]
        rows.append(row)
    right = {2, *range(4, len(header))} - {len(header) - 3}
    return render_table(header, rows, right, markdown)


def cache_fact(results: Sequence[Result]) -> str:
    """How warm the caches were: the same arrays every call, or rotating copies (cold)."""
    rounds = sorted({r.rounds for r in results})
    if rounds in ([], [1]):
        return ("caches: warm (every call of a contender on the same arrays: a case that fits "
                "the last-level cache runs from it)")
    return (f"caches: cold (each call on the next of {'/'.join(map(str, rounds))} copies of the "
            f"case, together >= 3x the last-level cache of "
            f"{last_level_cache_bytes() / MiB:g} MiB; 1 copy where one is that large)")


def _geomean(values: Sequence[float]) -> float:
    return math.exp(statistics.fmean(math.log(v) for v in values))


def _verdict(rows: Sequence[Result], want: float, value: Callable[[Result], float]) -> str:
    """How many of ``rows`` have ``value(row) >= want`` (NaN misses), and the misses, worst
    first."""
    misses = [r for r in rows if not value(r) >= want]
    head = f"{len(rows) - len(misses)} of {len(rows)}"
    if not misses:
        return head + " - met"
    worst = ", ".join(f"{r.case.name} {r.dtype} ({value(r):.2f}x)"
                      for r in sorted(misses, key=value))
    return head + f" - MISSED by {worst}"


def target_summary(results: Sequence[Result], small: SmallCopy | None = None) -> str:
    """The copy targets (the speed the copy engine aims at), each marked met or MISSED.

    They are set at 64 MiB on 2 threads: rows of other sizes are left out when the run has
    64 MiB rows, else the largest size stands in (and the summary says it is indicative); the
    fixed-shape cases (images) count at their own shapes. The inverse cases (NHWC -> NCHW,
    HWC -> CHW) are held to 2x their best peer, and to 0.8x the speed of their forward case
    (the same dtype and size), where the run has it.
    """
    lines = []
    if results:
        sizes = sorted({r.size for r in results})
        at = TARGET_MIB if TARGET_MIB in sizes else sizes[-1]
        rows = [r for r in results if r.size == at or r.case.fixed]
        threads = rows[0].threads
        peers = sorted({p for r in rows for p in _PEERS if r.times.get(p)})
        notes = []
        if at != TARGET_MIB:
            notes.append(f"no {TARGET_MIB:g} MiB rows in this run: indicative only")
        if threads != TARGET_THREADS:
            notes.append(f"the targets are set for {TARGET_THREADS} threads")
        if "torch" not in peers:
            notes.append("torch absent")
        extra = f"; {'; '.join(notes)}" if notes else ""
        lines.append(f"copy targets at {at:g} MiB, {threads} threads, peers "
                     f"{' and '.join(peers)}{extra}:")
        lines.append(f"  every case >= {TARGET_VS_PEER:.1f}x best peer: "
                     + _verdict(rows, TARGET_VS_PEER, lambda r: r.vs_peer))
        transposing = [r for r in rows if r.case.transposing]
        if transposing:
            g = _geomean([r.vs_peer for r in transposing])
            ok = "met" if g >= TARGET_TRANSPOSE_GEOMEAN else "MISSED"
            lines.append(f"  transposing cases >= {TARGET_TRANSPOSE_GEOMEAN:.0f}x best peer "
                         f"(geometric mean of {len(transposing)}): {g:.2f}x - {ok}")
            for label, want, group in (
                ("multi-byte", TARGET_TRANSPOSE_VS_MEMCPY,
                 [r for r in transposing if np.dtype(r.dtype).itemsize > 1]),
                ("uint8", TARGET_TRANSPOSE_VS_MEMCPY_1BYTE,
                 [r for r in transposing if np.dtype(r.dtype).itemsize == 1]),
            ):
                if group:
                    lines.append(f"  {label} transposing cases >= {want:.1f}x memcpy: "
                                 + _verdict(group, want, lambda r: r.vs_memcpy))
        else:
            lines.append("  transposing cases: none in this run")
        inverse = [r for r in rows if r.case.inverse_of]
        if inverse:
            lines.append(f"  inverse cases >= {TARGET_INVERSE_VS_PEER:.0f}x best peer: "
                         + _verdict(inverse, TARGET_INVERSE_VS_PEER, lambda r: r.vs_peer))
            forward: dict[tuple[str | None, str, float], Result] = {
                (r.case.name, r.dtype, r.size): r for r in results}
            speed: dict[int, float] = {}
            for r in inverse:
                f = forward.get((r.case.inverse_of, r.dtype, r.size))
                if f is not None:
                    speed[id(r)] = (f.median("strided") or math.nan) / (
                        r.median("strided") or math.nan)
            paired = [r for r in inverse if id(r) in speed]
            if paired:
                lines.append(f"  inverse cases >= {TARGET_INVERSE_VS_FORWARD:.1f}x the forward "
                             f"case's speed: "
                             + _verdict(paired, TARGET_INVERSE_VS_FORWARD,
                                        lambda r: speed[id(r)]))
    if small is not None:
        lines.append(f"  {SMALL_COPY_ELEMENTS}-element float32 copy <= np.copyto: "
                     f"{small.ns['strided']:,.0f} ns vs {small.ns['numpy']:,.0f} ns "
                     f"({small.ratio:.2f}x) - {'met' if small.met else 'MISSED'}")
    return "\n".join(lines)


def _speed_vs_s(results: Sequence[Result]) -> dict[int, float]:
    """strided's speed on each transposing row at LIMIT_LARGE_MIB (not the images, which keep
    their own sizes) against S, strided's own padded->packed copy of the same dtype and size in
    the run (rows without one are left out)."""
    copies = {(r.dtype, r.size): r for r in results if r.case.name == "padded->packed"}
    speed = {}
    for r in results:
        s = copies.get((r.dtype, r.size))
        if (r.size == LIMIT_LARGE_MIB and r.case.transposing and not r.case.fixed
                and s is not None):
            ours, theirs = r.gbps("strided"), s.gbps("strided")
            if ours is not None and theirs:
                speed[id(r)] = ours / theirs
    return speed


def limit_summary(results: Sequence[Result]) -> str:
    """The machine-limit targets, each marked met or MISSED, over every row of the run (each
    run has one thread count; run 1 and 2 threads for the whole set): every case >= 1.1x its
    best peer; transposing cases at 4 MiB >= 0.7x a memcpy of the same bytes; on one thread,
    transposing cases at 64 and 512 MiB >= 0.8x memcpy; at 512 MiB >= 0.8x S, the speed of
    strided's own streamed copy of the same bytes (padded->packed). A target without rows in
    the run is left out.
    """
    if not results:
        return "limit targets: none in this run"
    threads = results[0].threads
    sizes = "/".join(f"{v:g}" for v in sorted({r.size for r in results}))
    lines = [f"limit targets, {threads} threads, {sizes} MiB (every size of the run):"]
    lines.append(f"  every case >= {LIMIT_VS_PEER:.1f}x best peer: "
                 + _verdict(results, LIMIT_VS_PEER, lambda r: r.vs_peer))
    transposing = [r for r in results if r.case.transposing]
    groups = [(f"transposing cases at {LIMIT_CACHED_MIB:g} MiB", LIMIT_CACHED_VS_MEMCPY,
               [r for r in transposing if r.size == LIMIT_CACHED_MIB and not r.case.fixed])]
    if threads == 1:
        groups.append((f"transposing cases at {'/'.join(f'{v:g}' for v in LIMIT_STREAMED_MIB)} "
                       f"MiB, 1 thread", LIMIT_ONE_THREAD_VS_MEMCPY,
                       [r for r in transposing
                        if r.size in LIMIT_STREAMED_MIB and not r.case.fixed]))
    for label, want, group in groups:
        if group:
            lines.append(f"  {label} >= {want:.1f}x memcpy: "
                         + _verdict(group, want, lambda r: r.vs_memcpy))
    speed = _speed_vs_s(results)
    large = [r for r in transposing if id(r) in speed]
    if large:
        lines.append(f"  transposing cases at {LIMIT_LARGE_MIB:g} MiB >= {LIMIT_LARGE_VS_S:.1f}x "
                     f"S (strided's padded->packed): "
                     + _verdict(large, LIMIT_LARGE_VS_S, lambda r: speed[id(r)]))
    return "\n".join(lines)


def _small_line(small: SmallCopy) -> str:
    parts = [f"strided.copyto {small.ns['strided']:,.0f} ns",
             f"np.copyto {small.ns['numpy']:,.0f} ns"]
    if "torch" in small.ns:
        parts.append(f"torch copy_ {small.ns['torch']:,.0f} ns")
    return (f"small copy ({SMALL_COPY_ELEMENTS} x float32, packed, default num_threads), median "
            f"per call: {', '.join(parts)}; numpy/strided = {small.ratio:.2f}x")


def report(results: Sequence[Result], small: SmallCopy | None, *, repeat: int,
           sample_ms: float, torch_version: str | None, markdown: bool = False) -> str:
    """The full report: machine facts, method, table, check line, small copy and targets."""
    threads = results[0].threads if results else TARGET_THREADS
    torch_fact = (f"torch {torch_version}, torch.set_num_threads({threads})"
                  if torch_version else "torch: not installed (its column shows -)")
    method = (f"{repeat} samples per contender; a sample runs every contender once (a loop of "
              f"calls lasting ~{sample_ms:g} ms, or one call when a call is longer), in balanced "
              f"orders (each follows each other equally often); GB/s = 2 x the logical "
              f"tensor's bytes (read + written) / median time per call; st/peer and st/memcpy = "
              f"medians of the paired "
              f"ratios time(other) / time(strided), above 1 strided is faster; best peer = the "
              f"fastest of numpy, torch, cv2 and hptt (cv2.split / cv2.merge, image cases, "
              f"cv2.setNumThreads({threads})); strided num_threads={threads}; numpy copies on one "
              f"thread; memcpy = one ctypes.memmove of the same bytes between contiguous "
              f"buffers" + (f", memcpy x{threads} = the same split over {threads} threads"
                            if threads > 1 else "")
              + "; hptt = HPTT's transpose (planned with ESTIMATE outside the timing, "
                f"{threads} threads; float32/float64, the cases it can express)")
    facts = [*machine_facts(), torch_fact, method, cache_fact(results),
             "others = the share of the machine's CPU time that other processes used while a "
             "case was timed (from /proc/stat): on a 2-core machine, a busy neighbour stalls "
             "every 2-thread copy (strided, torch) far more than numpy's 1-thread one"]
    with_cv2 = any("cv2" in r.times for r in results)
    with_hptt = any("hptt" in r.times for r in results)
    checked = ("identical bytes: strided" + (", torch" if torch_version else "")
               + (", cv2" if with_cv2 else "") + (", hptt" if with_hptt else "")
               + " and np.copyto wrote the same destination bytes on every case (checked "
               "before timing)")
    parts = [format_table(results, markdown=markdown), checked]
    shares = [r.others for r in results if r.others is not None]
    if shares and statistics.fmean(shares) > NOISY_SHARE:
        parts.append(f"WARNING: other processes used {100 * statistics.fmean(shares):.0f}% of the "
                     f"CPU on average while the cases were timed: the multi-threaded figures are "
                     f"unreliable; run again on an idle machine")
    if small is not None:
        parts.append(_small_line(small))
    parts.append(target_summary(results, small))
    parts.append(limit_summary(results))
    if markdown:
        head = "\n".join(f"- {f}" for f in facts)
    else:
        head = "\n".join(["strided relayout benchmark: strided.copyto vs np.copyto, torch "
                          "copy_ and memcpy", *(f"  {f}" for f in facts)])
    return "\n\n".join([head, *parts])


#: Every contender's role in a record; memcpy_par is named "memcpy xT" there, as in the table.
_ROLES = {"strided": "strided", "numpy": "peer", "torch": "peer", "cv2": "peer", "hptt": "peer",
          "memcpy": "memcpy", "memcpy_par": "memcpy"}


def to_record(results: Sequence[Result], small: SmallCopy | None, *, settings: dict[str, Any],
              versions: dict[str, str | None], command: str, note: str | None = None
              ) -> dict[str, Any]:
    """The run as a record (:func:`harness.report.new_record`): what ``--json`` writes
    and ``--plot`` draws. GB/s counts 2 x the logical tensor's bytes, as the table does."""
    threads = results[0].threads if results else TARGET_THREADS
    display = {"memcpy_par": f"memcpy x{threads}"}
    several_sizes = len({r.size for r in results}) > 1
    rows = []
    for r in results:
        config = r.dtype + (f" {_fmt_mib(r.mib)} MiB" if several_sizes else "")
        times = {display.get(name, name): samples for name, samples in r.times.items()}
        rows.append(record_row(
            r.case.name, config, r.threads, 2 * r.nbytes, times,
            ratios={"peer": r.ratio(r.best_peer), "memcpy": r.ratio("memcpy")},
            best_peer=r.best_peer, others=r.others,
            extra={"dtype": r.dtype, "mib": round(r.mib, 3), "shape": list(r.shape)}))
    contenders = {display.get(name, name): role for name, role in _ROLES.items()
                  if any(r.times.get(name) for r in results)}
    return new_record(
        "copy", "strided.copyto against np.copyto, torch copy_, OpenCV and memcpy: relayouts",
        contenders=contenders, rows=rows, settings=settings, versions=versions,
        command=command, note=note,
        summary=[*target_summary(results, small).splitlines(),
                 *limit_summary(results).splitlines()])


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def _list(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def _sizes(text: str) -> list[float]:
    try:
        sizes = [float(item) for item in _list(text)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected MiB such as 4,64,512") from None
    if not sizes or any(not (s > 0 and math.isfinite(s)) for s in sizes):
        raise argparse.ArgumentTypeError(f"{text!r}: sizes must be positive MiB")
    return sizes


def _dtypes(text: str) -> list[str]:
    out = []
    for name in _list(text):
        try:
            dtype = np.dtype(name)
        except TypeError:
            raise argparse.ArgumentTypeError(f"{name!r} is not a numpy dtype") from None
        if dtype.kind not in "iuf":
            raise argparse.ArgumentTypeError(f"{name!r}: only integer and float dtypes")
        out.append(dtype.name)
    if not out:
        raise argparse.ArgumentTypeError("no dtype given")
    return out


def _default_threads() -> int:
    return 2 if (os.cpu_count() or 1) >= 2 else 1


def main(argv: list[str] | None = None, *, prog: str = "python benchmarks/bench_copy.py"
         ) -> int:
    """Run the relayout benchmark and print the report; return the exit status (0).

    Parameters
    ----------
    argv : list of str, optional
        Command-line arguments (default ``sys.argv[1:]``); ``--help`` lists them.
    prog : str
        The program name in the usage line and the errors.

    Options not given take the full run's defaults (every case at 4, 64 and 512 MiB, 7
    samples); with ``--small``, those of a run of seconds (4 MiB, a subset of the cases, 5
    samples).

    Bad arguments exit with status 2 and one line on stderr, and so do ``--plot`` without
    matplotlib and ``--json``/``--plot`` files in a missing directory, before anything is
    timed. ``--json FILE`` writes the results as a record (:func:`to_record`), ``--plot FILE``
    draws them (:func:`harness.plot.draw`), after the report.
    """
    parser = OneLineParser(
        prog=prog,
        description="Relayout benchmark: strided.copyto against np.copyto, torch's copy_ (same "
                    "thread count) and a contiguous memcpy of the same bytes, paired and "
                    "alternating in one process; prints GB/s (bytes read + written), the ratios "
                    "and the targets of the copy engine (64 MiB, 2 threads).",
        epilog="cases: " + ", ".join(CASES_BY_NAME) + ". Default: every case at "
               + ",".join(f"{s:g}" for s in FULL_SIZES) + " MiB, 7 samples; --small: "
               + ",".join(f"{s:g}" for s in SMALL_SIZES) + " MiB, cases "
               + ", ".join(SMALL_CASES) + ", 5 samples.",
    )
    parser.add_argument("--sizes", type=_sizes, metavar="MIB,...",
                        help="sizes of the logical tensor in MiB (e.g. 4,64,512; 0.25 works)")
    parser.add_argument("--dtypes", type=_dtypes, metavar="DTYPE,...",
                        help="numpy dtype names (default float32,uint8)")
    parser.add_argument("--cases", type=_list, metavar="NAME,...",
                        help="case names or case-insensitive substrings (e.g. nhwc,transpose)")
    parser.add_argument("--threads", type=int, metavar="N",
                        help="num_threads of strided and torch (default 2 when the machine has "
                             "2 or more cores, else 1)")
    parser.add_argument("--repeat", type=int, metavar="N", help="samples per contender")
    parser.add_argument("--sample-ms", type=float, metavar="MS",
                        help="duration of one sample of a fast contender (default 5, --quick 1)")
    parser.add_argument("--quick", action="store_true",
                        help="3 samples of ~1 ms (a smoke run for tests and CI)")
    parser.add_argument("--small", action="store_true",
                        help="a run of seconds: " + ",".join(f"{s:g}" for s in SMALL_SIZES)
                             + f" MiB, {len(SMALL_CASES)} cases (every kind of kernel once)")
    parser.add_argument("--no-torch", action="store_true", help="leave torch out")
    parser.add_argument("--no-cv2", action="store_true", help="leave OpenCV out")
    parser.add_argument("--cold", action="store_true",
                        help="cold caches: each call on the next of several copies of the case "
                             "(together 3x the last-level cache); default: warm, every call on "
                             "the same arrays")
    parser.add_argument("--no-hptt", action="store_true",
                        help="leave HPTT out (it runs where ../shared/peers/hptt is built)")
    parser.add_argument("--no-small", action="store_true", help="skip the 16-element copy")
    parser.add_argument("--markdown", action="store_true", help="print a markdown pipe table")
    plot.add_options(parser)
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    plot.check_outputs(parser, plot=args.plot, json=args.json)

    small = args.small
    sizes = args.sizes or list(SMALL_SIZES if small else FULL_SIZES)
    try:
        cases = select_cases(args.cases or (list(SMALL_CASES) if small else None))
    except ValueError as exc:
        parser.error(str(exc))
    dtypes = args.dtypes or list(DTYPES)
    threads = args.threads if args.threads is not None else _default_threads()
    repeat = args.repeat if args.repeat is not None else (3 if args.quick else 5 if small else 7)
    sample_ms = args.sample_ms if args.sample_ms is not None else (1.0 if args.quick else 5.0)
    if threads < 1:
        parser.error(f"--threads must be >= 1, got {threads}")
    check_sampling(parser, repeat, sample_ms)

    torch = None if args.no_torch else _torch()
    gc.collect()
    print(f"timing {len(cases)} cases x {len(dtypes)} dtypes x {len(sizes)} sizes, {repeat} "
          f"samples, {threads} threads ...", file=sys.stderr, flush=True)
    results = run(cases, sizes=sizes, dtypes=dtypes, threads=threads, repeat=repeat,
                  sample_ms=sample_ms, with_torch=torch is not None, with_cv2=not args.no_cv2,
                  with_hptt=not args.no_hptt, cold=args.cold,
                  progress=lambda msg: print(msg, file=sys.stderr, flush=True))
    small_result = None
    if not args.no_small:
        small_result = small_copy(repeat=max(repeat, 5), sample_ms=4 * sample_ms,
                                  with_torch=torch is not None)
    torch_version = None if torch is None else str(torch.__version__)
    print(report(results, small_result, repeat=repeat, sample_ms=sample_ms,
                 torch_version=torch_version, markdown=args.markdown))
    if args.json is not None or args.plot is not None:
        cv2 = _cv2() if any("cv2" in r.times for r in results) else None
        settings = {"sizes_mib": sizes, "dtypes": dtypes, "cases": [c.name for c in cases],
                    "threads": [threads], "repeat": repeat, "sample_ms": sample_ms,
                    "cache": "cold" if args.cold else "warm"}
        record = to_record(results, small_result, settings=settings,
                           versions={"torch": torch_version,
                                     "cv2": None if cv2 is None else str(cv2.__version__)},
                           command=f"{prog} {shlex.join(argv)}".strip(), note=args.note)
        plot.save(parser, record, plot=args.plot, json=args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
