"""The batch benchmark: a data loader's batch, N decoded images (separate HWC uint8 arrays, as
image decoders give them) made into one normalised float32 NCHW batch, by :func:`strided.stack`
and by what data loaders run today (torch ops per image and ``torch.stack``, numpy,
albumentations, OpenCV's ``blobFromImages``), next to the floors (a contiguous uint8 -> float32
cast of as many elements, a memcpy of the same bytes).

``python benchmarks/bench_batch.py`` calls :func:`main`.
The **config** is 64 images of 224x224x3 (``--quick``: 4 of 32x32x3), filled with a
fixed-seed pseudo-random pattern, normalised with ImageNet's mean and std
(``(x/255 - mean)/std`` per channel) into a ``(64, 3, 224, 224)`` float32 batch. The
contenders (:data:`COLUMNS`):

- ``strided``: ``strided.stack(images, "NCHW", dtype=np.float32, mean=MEAN, std=STD,
  max_value=255, num_threads=T)`` (allocates, as the peers do);
- ``st out=``: the same into a preallocated batch (``out=``, the data loader that reuses its
  batch); ``st crops``: the same with ``out=`` on the same images cut as 224x224 windows at
  varying offsets out of larger 256x320x3 images (non-contiguous views);
- ``torch ops``: per image ``torch.from_numpy(img).permute(2, 0, 1).float().div(255)
  .sub(mean).div(std)``, then ``torch.stack``;
- ``numpy``: ``np.stack(images)``, ``(b.astype(np.float32) / 255 - mean) / std`` in float32,
  ``transpose(0, 3, 1, 2)`` made contiguous;
- ``albumentations``: ``A.Compose([A.Normalize(mean, std, max_pixel_value=255),
  ToTensorV2()])`` per image, then ``torch.utils.data.default_collate``;
- ``cv2``: ``cv2.dnn.blobFromImagesWithParams(images, params)``, per-channel ``scalefactor`` =
  1/(255 std), ``mean`` = 255 mean, ``swapRB=False``, ``CV_32F``, NCHW: ``(x - 255 mean) /
  (255 std)``;
- the floors: ``cast st``, ``strided.copyto(f32, u8)`` of as many elements, both contiguous (no
  relayout, no affine map), and ``memcpy``, one memmove of (bytes read + written) / 2 split
  over T threads.

Every contender's result is checked once per thread count, before it is timed, against a numpy
float64 reference (within 1e-5); a peer that is not installed is skipped and the report says so,
and without ``strided.stack`` the strided columns show ``-`` while the peers still run. The
samples run every contender once, in balanced orders, at 1 and 2
threads (``num_threads``, ``torch.set_num_threads`` and ``cv2.setNumThreads`` matched; numpy
runs on one thread). The table gives the median ms per call and the medians of the paired
ratios: strided against the best peer, the floor against strided (allocating and ``out=``),
the crops against the contiguous images, and the targets, each met or MISSED.

Examples
--------
>>> [spec.label for spec in configs(quick=True)], [spec.label for spec in configs()]
(['4x32x32'], ['64x224x224'])
>>> spec = configs()[0]
>>> spec.n, spec.shape, spec.crop_from
(64, (224, 224, 3), (256, 320, 3))
>>> [target.text() for target in spec.targets]
['>=4x peer', '>=0.8x floor', '<=1.2x crops/contig']
"""

from __future__ import annotations

import ctypes
import gc
import os
import shlex
import statistics
import sys
import time
import timeit
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import plot
from .bench_convert import (
    MEAN,
    NOISY_SHARE,
    STD,
    Contender,
    _fill_sentinel,
    _fmt_ms,
    _fmt_ratio,
    _threads,
)
from .bench_copy import _cpu_seconds, _others_share, _parallel_memmove
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
)

__all__ = [
    "COLUMNS",
    "TOLERANCE",
    "Config",
    "Libraries",
    "Result",
    "Spec",
    "Target",
    "build",
    "check_contenders",
    "configs",
    "contenders",
    "format_table",
    "libraries",
    "main",
    "report",
    "run",
    "run_config",
    "target_summary",
    "to_record",
]

THREADS = (1, 2)
#: Every result is within this of the float64 reference (absolute, ``np.allclose(rtol=0)``).
TOLERANCE = 1e-5
#: The columns of the table, (contender, role), in table order. Roles as in
#: :mod:`harness.bench_convert`: ``strided`` (the figure compared with the peers), ``info``
#: (other strided calls), ``peer``, ``floor`` (a contiguous cast), ``memcpy``.
COLUMNS = (("strided", "strided"), ("st out=", "info"), ("st crops", "info"),
           ("torch ops", "peer"), ("numpy", "peer"), ("albumentations", "peer"),
           ("cv2", "peer"), ("cast st", "floor"), ("memcpy", "memcpy"))
TITLE = ("N HWC uint8 images -> one float32 NCHW batch, (x/255 - mean)/std per channel "
         "(ImageNet mean/std)")


# --------------------------------------------------------------------------------------------
# Libraries
# --------------------------------------------------------------------------------------------


@dataclass
class Libraries:
    """What the contenders may use; None where it is not installed, or left out (``skipped``
    says why, by column)."""

    strided: Any  # the strided module when it has strided.stack, else None
    copyto: Any  # strided.copyto (the floor's cast, whatever the build)
    torch: Any = None
    cv2: Any = None
    albumentations: Any = None  # the albumentations module (needs torch: ToTensorV2, collate)
    skipped: dict[str, str] = field(default_factory=dict)

    def set_threads(self, threads: int) -> None:
        """torch.set_num_threads and cv2.setNumThreads, where present."""
        if self.torch is not None:
            self.torch.set_num_threads(threads)
        if self.cv2 is not None:
            self.cv2.setNumThreads(threads)

    def versions(self) -> dict[str, str | None]:
        return {label: None if mod is None else str(mod.__version__)
                for label, mod in (("torch", self.torch), ("cv2", self.cv2),
                                   ("albumentations", self.albumentations))}


def libraries(*, with_torch: bool = True, with_cv2: bool = True,
              with_albumentations: bool = True) -> Libraries:
    """The installed libraries (each imported only here, when asked for)."""
    import strided

    skipped: dict[str, str] = {}
    has_stack = hasattr(strided, "stack")
    if not has_stack:
        skipped["strided"] = ("strided.stack is missing in this build: the strided columns "
                              "show -, the peers and the floors still run")
    torch = optional_module("torch") if with_torch else None
    if torch is None:
        skipped["torch ops"] = ("torch: left out (--no-torch)" if not with_torch
                                else "torch: not installed (pip install torch)")
    cv2 = optional_module("cv2") if with_cv2 else None
    if not with_cv2:
        skipped["cv2"] = "cv2 (OpenCV): left out (--no-cv2)"
    elif cv2 is None:
        skipped["cv2"] = ("cv2 (OpenCV): not installed (pip install strided[bench] installs "
                          "opencv-python-headless)")
    elif not hasattr(getattr(cv2, "dnn", None), "Image2BlobParams"):
        skipped["cv2"] = (f"cv2 (OpenCV) {cv2.__version__}: no cv2.dnn.Image2BlobParams "
                          f"(OpenCV >= 4.8 has it)")
        cv2 = None
    albumentations = None
    if not with_albumentations:
        skipped["albumentations"] = "albumentations: left out (--no-albumentations)"
    elif torch is None:
        skipped["albumentations"] = ("albumentations: skipped, its ToTensorV2 and the collate "
                                     "need torch")
    else:
        # albumentations asks the network for a newer version when imported, unless told not to
        os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")
        albumentations = optional_module("albumentations")
        if albumentations is None:
            skipped["albumentations"] = ("albumentations: not installed (pip install "
                                         "albumentations)")
    return Libraries(strided if has_stack else None, strided.copyto, torch, cv2,
                     albumentations, skipped)


# --------------------------------------------------------------------------------------------
# The config, its targets and its contenders
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """A ratio of the row against ``want``: ``peer`` is time(best peer) / time(strided),
    ``floor`` time(cast st) / time(st out=) (both write into memory they already have), both
    at least ``want``; ``crops`` is time(st crops) / time(st out=), at most ``want``."""

    metric: str  # "peer", "floor" or "crops"
    want: float
    threads: tuple[int, ...] = THREADS

    @property
    def at_most(self) -> bool:
        return self.metric == "crops"

    def text(self) -> str:
        what = "crops/contig" if self.metric == "crops" else self.metric
        return f"{'<=' if self.at_most else '>='}{self.want:g}x {what}"

    def met(self, value: float) -> bool:
        return value <= self.want if self.at_most else value >= self.want


TARGETS = (Target("peer", 4.0), Target("floor", 0.8), Target("crops", 1.2))


@dataclass(frozen=True)
class Spec:
    """A config's sizes: ``n`` images of ``shape`` (H, W, 3); the crops are cut out of images of
    ``crop_from``."""

    label: str
    n: int
    shape: tuple[int, int, int]
    crop_from: tuple[int, int, int]
    targets: tuple[Target, ...] = TARGETS


def configs(quick: bool = False) -> list[Spec]:
    """The configs: the data loader's batch, or a tiny one with ``quick``."""
    if quick:
        return [Spec("4x32x32", 4, (32, 32, 3), (40, 48, 3))]
    return [Spec("64x224x224", 64, (224, 224, 3), (256, 320, 3))]


@dataclass
class Config:
    """The arrays of one config: the images, the same images as crops, the reference."""

    spec: Spec
    images: list[np.ndarray] = field(repr=False)  # n separate C-contiguous HWC uint8 arrays
    crops: list[np.ndarray] = field(repr=False)  # the same pixels, windows of larger images
    reference: np.ndarray = field(repr=False)  # float64 (n, 3, H, W)

    @property
    def label(self) -> str:
        return self.spec.label

    @property
    def out_shape(self) -> tuple[int, int, int, int]:
        h, w, c = self.spec.shape
        return (self.spec.n, c, h, w)

    @property
    def nbytes(self) -> int:
        """Bytes read + written: the images (uint8) and the batch (float32)."""
        return 5 * self.spec.n * int(np.prod(self.spec.shape))


def build(spec: Spec) -> Config:
    """The images (fixed seed, each its own allocation, as a decoder returns them), the crops
    (each image written into a larger one at an offset that varies from image to image, and
    cut out of it again: a view with the larger image's row stride) and the reference."""
    rng = np.random.default_rng(25)
    h, w, _ = spec.shape
    big_h, big_w, _ = spec.crop_from
    images, crops = [], []
    for i in range(spec.n):
        img = rng.integers(0, 256, spec.shape, dtype=np.uint8)
        big = rng.integers(0, 256, spec.crop_from, dtype=np.uint8)
        dy, dx = (7 * i) % (big_h - h + 1), (13 * i + 5) % (big_w - w + 1)
        crop = big[dy:dy + h, dx:dx + w]
        crop[...] = img
        images.append(img)
        crops.append(crop)
    mean, std = np.asarray(MEAN), np.asarray(STD)
    batch = np.stack(images).astype(np.float64)
    reference = ((batch / 255.0 - mean) / std).transpose(0, 3, 1, 2).copy()
    return Config(spec, images, crops, reference)


def contenders(config: Config, libs: Libraries, threads: int) -> dict[str, Contender]:
    """Every contender of ``config`` at ``threads``, by column (``result`` maps a call's return
    value to an array comparable with the reference; ``out`` is filled with a sentinel before
    the check)."""
    c: dict[str, Contender] = {}
    images, crops = config.images, config.crops
    mean32, std32 = np.asarray(MEAN, np.float32), np.asarray(STD, np.float32)
    st = libs.strided
    if st is not None:
        c["strided"] = Contender(
            lambda: st.stack(images, "NCHW", dtype=np.float32, mean=MEAN, std=STD,
                             max_value=255, num_threads=threads), "strided", np.asarray)
        out_st = np.empty(config.out_shape, np.float32)
        c["st out="] = Contender(
            lambda: st.stack(images, "NCHW", dtype=np.float32, mean=MEAN, std=STD,
                             max_value=255, out=out_st, num_threads=threads),
            "info", lambda _: out_st, out_st)
        out_crops = np.empty(config.out_shape, np.float32)
        c["st crops"] = Contender(
            lambda: st.stack(crops, "NCHW", dtype=np.float32, mean=MEAN, std=STD,
                             max_value=255, out=out_crops, num_threads=threads),
            "info", lambda _: out_crops, out_crops)
    torch = libs.torch
    if torch is not None:
        mean_t = torch.tensor(MEAN, dtype=torch.float32).view(3, 1, 1)
        std_t = torch.tensor(STD, dtype=torch.float32).view(3, 1, 1)

        def torch_ops() -> Any:
            return torch.stack([torch.from_numpy(img).permute(2, 0, 1).float().div(255)
                                .sub(mean_t).div(std_t) for img in images])

        c["torch ops"] = Contender(torch_ops, "peer", lambda r: r.numpy())

    def numpy_chain() -> np.ndarray:
        b = np.stack(images)
        return np.ascontiguousarray(((b.astype(np.float32) / 255 - mean32) / std32)
                                    .transpose(0, 3, 1, 2))

    c["numpy"] = Contender(numpy_chain, "peer", np.asarray)
    alb = libs.albumentations
    if alb is not None:
        from albumentations.pytorch import ToTensorV2
        from torch.utils.data import default_collate

        transform = alb.Compose([alb.Normalize(mean=MEAN, std=STD, max_pixel_value=255.0),
                                 ToTensorV2()])

        def albumentations_chain() -> Any:
            return default_collate([transform(image=img)["image"] for img in images])

        c["albumentations"] = Contender(albumentations_chain, "peer", lambda r: r.numpy())
    cv2 = libs.cv2
    if cv2 is not None:
        h, w, _ = config.spec.shape
        params = cv2.dnn.Image2BlobParams()
        params.scalefactor = (*(1.0 / (255.0 * s) for s in STD), 0.0)
        params.mean = (*(255.0 * m for m in MEAN), 0.0)
        params.size = (w, h)  # the images' own size: no resize
        params.swapRB = False
        params.ddepth = cv2.CV_32F
        params.datalayout = cv2.DNN_LAYOUT_NCHW
        c["cv2"] = Contender(lambda: cv2.dnn.blobFromImagesWithParams(images, params), "peer",
                             np.asarray, note="(x - 255 mean) * (1/(255 std)), allocates")
    # the floors: a contiguous cast of as many elements, a memcpy of the same bytes
    elements = config.spec.n * int(np.prod(config.spec.shape))
    u8 = np.concatenate([img.reshape(-1) for img in images])
    f32 = np.empty(elements, np.float32)
    copyto = libs.copyto
    c["cast st"] = Contender(lambda: copyto(f32, u8, num_threads=threads), "floor")
    c["cast st"].out = (u8, f32)  # keeps the buffers alive as long as the contender
    move = config.nbytes // 2
    # written, not np.empty: pages never written are all Linux's one zero page, which a memmove
    # reads from the cache (a 64 MiB memcpy from them ran 1.5x a real one)
    scratch = np.full((2, move), 0x5A, np.uint8)
    dst_addr, src_addr = scratch[0].ctypes.data, scratch[1].ctypes.data
    if threads > 1:
        pool = ThreadPoolExecutor(max_workers=threads - 1)
        parallel = _parallel_memmove(pool, threads)
        c["memcpy"] = Contender(lambda: parallel(dst_addr, src_addr, move), "memcpy",
                                close=pool.shutdown)
    else:
        memmove = ctypes.memmove
        c["memcpy"] = Contender(lambda: memmove(dst_addr, src_addr, move), "memcpy")
    c["memcpy"].out = scratch
    return c


# --------------------------------------------------------------------------------------------
# Check and timing
# --------------------------------------------------------------------------------------------


def _reproducer(config: Config) -> str:
    n, (h, w, c) = config.spec.n, config.spec.shape
    return (f"images = [np.random.default_rng(25).integers(0, 256, ({h}, {w}, {c}), "
            f"dtype=np.uint8) for _ in range({n})]; strided.stack(images, 'NCHW', "
            f"dtype=np.float32, mean={MEAN}, std={STD}, max_value=255)")


def check_contenders(config: Config, cons: dict[str, Contender], threads: int
                     ) -> dict[str, float]:
    """Run every contender once (its warm-up); compare the result of each that has one with
    the reference; return the largest absolute difference of each.

    Raises
    ------
    AssertionError
        When a result is not a C-contiguous float32 batch of the reference's shape, or differs
        from the reference by more than :data:`TOLERANCE` somewhere.
    """
    largest: dict[str, float] = {}
    ref = config.reference
    for name, con in cons.items():
        if con.result is None:
            con.call()
            continue
        if isinstance(con.out, np.ndarray):
            _fill_sentinel(con.out)
        got = np.asarray(con.result(con.call()))
        where = f"{config.label}, {threads} threads: {name}"
        if got.shape != ref.shape or got.dtype != np.float32 or not got.flags.c_contiguous:
            raise AssertionError(f"{where} gives a {got.dtype} array of shape {got.shape} "
                                 f"(C-contiguous: {got.flags.c_contiguous}), expected a "
                                 f"C-contiguous float32 batch of shape {ref.shape}")
        diff = np.abs(got - ref)
        diff[np.isnan(diff)] = np.inf
        worst = float(diff.max())
        if not worst <= TOLERANCE:
            at = tuple(int(i) for i in np.unravel_index(int(np.argmax(diff)), diff.shape))
            raise AssertionError(
                f"{where} differs from the reference by {worst:.3g} at {at} ({got[at]!r}, "
                f"expected {ref[at]!r}; {int(np.count_nonzero(diff > TOLERANCE)):,} elements "
                f"beyond {TOLERANCE:g})"
                + (f"; reproduce: {_reproducer(config)}" if con.role in ("strided", "info")
                   else ""))
        largest[name] = worst
    return largest


@dataclass
class Result:
    """The samples of the config at one thread count: seconds per call, by contender."""

    label: str
    threads: int
    nbytes: int
    roles: dict[str, str]
    times: dict[str, list[float]]
    checks: dict[str, float]  # the largest |difference| from the reference, by contender
    notes: dict[str, str]
    targets: tuple[Target, ...] = ()
    others: float | None = None

    def median(self, name: str) -> float | None:
        samples = self.times.get(name)
        return statistics.median(samples) if samples else None

    def gbps(self, name: str) -> float | None:
        """GB/s: the bytes read + written over the median time per call."""
        t = self.median(name)
        return None if t is None else self.nbytes / t / 1e9

    def best(self, role: str) -> str | None:
        """The fastest contender (by median) of a role."""
        names = [n for n, r in self.roles.items() if r == role and self.times.get(n)]
        return min(names, key=lambda n: self.median(n) or float("inf")) if names else None

    def paired(self, numerator: str | None, denominator: str) -> float | None:
        """The median of the paired ratios time(numerator) / time(denominator); None without
        both."""
        if numerator is None or not self.times.get(numerator) or \
                not self.times.get(denominator):
            return None
        return paired_ratio(self.times[numerator], self.times[denominator])

    def ratio(self, kind: str) -> float | None:
        """``peer``: time(best peer) / time(strided); ``floor`` and ``memcpy``: time(that) /
        time(strided); ``floor out=``: time(cast st) / time(st out=); ``crops``: time(st crops)
        / time(st out=). Above 1 strided is faster, except for ``crops`` (the crops' cost)."""
        if kind == "peer":
            return self.paired(self.best("peer"), "strided")
        if kind in ("floor", "memcpy"):
            return self.paired(self.best(kind), "strided")
        if kind == "floor out=":
            return self.paired(self.best("floor"), "st out=")
        if kind == "crops":
            return self.paired("st crops", "st out=")
        raise ValueError(f"no ratio {kind!r}")

    def verdicts(self) -> list[tuple[Target, float | None]]:
        """The targets that apply to this row, with the ratio (None: not measured)."""
        metric = {"peer": "peer", "floor": "floor out=", "crops": "crops"}
        return [(t, self.ratio(metric[t.metric])) for t in self.targets
                if self.threads in t.threads]


def run_config(config: Config, *, threads: int, repeat: int, sample_ms: float,
               libs: Libraries) -> Result:
    """Check every contender of the config at ``threads``, then time them, paired and
    alternating."""
    libs.set_threads(threads)
    cons = contenders(config, libs, threads)
    try:
        checks = check_contenders(config, cons, threads)
        timers = {name: timeit.Timer(con.call) for name, con in cons.items()}
        before = _cpu_seconds()
        times = sample_alternating(timers, repeat=repeat, sample_s=sample_ms / 1000.0)
        others = _others_share(before, _cpu_seconds())
    finally:
        for con in cons.values():
            if con.close is not None:
                con.close()
    return Result(config.label, threads, config.nbytes, {n: c.role for n, c in cons.items()},
                  times, checks, {n: c.note for n, c in cons.items() if c.note},
                  config.spec.targets, others)


def run(specs: Sequence[Spec], *, libs: Libraries, threads: Sequence[int] = THREADS,
        repeat: int = 15, sample_ms: float = 5.0,
        progress: Callable[[str], None] | None = None) -> list[Result]:
    """Every config at every thread count; torch's and cv2's thread counts are restored
    afterwards."""
    if repeat < 1:
        raise ValueError(f"repeat must be >= 1, got {repeat}")
    saved_torch = libs.torch.get_num_threads() if libs.torch is not None else None
    saved_cv2 = libs.cv2.getNumThreads() if libs.cv2 is not None else None
    results = []
    start = time.perf_counter()
    try:
        for spec in specs:
            config = build(spec)
            for t in threads:
                if progress is not None:
                    progress(f"  {spec.label}, {t} threads (t = "
                             f"{time.perf_counter() - start:.0f} s)")
                results.append(run_config(config, threads=t, repeat=repeat,
                                          sample_ms=sample_ms, libs=libs))
            del config
            gc.collect()
    finally:
        if saved_torch is not None:
            libs.torch.set_num_threads(saved_torch)
        if saved_cv2 is not None:
            libs.cv2.setNumThreads(saved_cv2)
    return results


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------


def _target_cell(r: Result) -> str:
    cells = [f"{t.text()} " + ("n/a" if v is None else "met" if t.met(v) else "MISSED")
             for t, v in r.verdicts()]
    return ", ".join(cells) or "-"


#: The ratio columns: header, Result.ratio kind.
RATIO_COLUMNS = (("st/peer", "peer"), ("st/floor", "floor"), ("out=/floor", "floor out="),
                 ("crops/contig", "crops"), ("st/memcpy", "memcpy"))


def format_table(results: Sequence[Result], *, markdown: bool = False) -> str:
    """One row per (config, threads): ms per call of every contender, strided's GB/s, the
    ratios and the targets."""
    present = {n for r in results for n in r.times}
    columns = [n for n, _ in COLUMNS if n in present]
    header = ["config", "thr", *(f"{n} ms" for n in columns), "st GB/s", "best peer",
              *(h for h, _ in RATIO_COLUMNS), "target", "others"]
    rows = []
    for r in results:
        g = r.gbps("strided")
        rows.append([r.label, str(r.threads), *(_fmt_ms(r.median(n)) for n in columns),
                     "-" if g is None else f"{g:.1f}", r.best("peer") or "-",
                     *(_fmt_ratio(r.ratio(kind)) for _, kind in RATIO_COLUMNS),
                     _target_cell(r), "-" if r.others is None else f"{100 * r.others:.0f}%"])
    left = {0, header.index("best peer"), header.index("target")}
    return render_table(header, rows, set(range(len(header))) - left, markdown)


def _check_lines(results: Sequence[Result]) -> list[str]:
    """One line per contender compared: its largest difference from the reference."""
    largest: dict[str, float] = {}
    notes: dict[str, str] = {}
    for r in results:
        for name, worst in r.checks.items():
            largest[name] = max(worst, largest.get(name, 0.0))
        notes.update(r.notes)
    return [f"  {name}: within {TOLERANCE:g} (largest |difference| {worst:.2g})"
            + (f" [{notes[name]}]" if name in notes else "") for name, worst in largest.items()]


def target_summary(results: Sequence[Result], *, quick: bool = False) -> str:
    """Every target of the run, met or MISSED (n/a without a strided figure)."""
    rows = [(r, t, v) for r in results for t, v in r.verdicts()]
    if not rows:
        return "targets: none in this run"
    met = [x for x in rows if x[2] is not None and x[1].met(x[2])]
    missed = [x for x in rows if x[2] is not None and not x[1].met(x[2])]
    na = [x for x in rows if x[2] is None]
    head = f"targets: {len(met)} of {len(rows)} met"
    if quick:
        head += " (tiny --quick sizes: indicative only)"
    lines = [head]
    for label, group in (("MISSED", missed), ("met", met)):
        for r, t, v in group:
            lines.append(f"  {label}: {r.label} {r.threads} thr: {t.text()} -> {v:.2f}x")
    if na:
        lines.append(f"  n/a: {len(na)} (no strided figure: strided.stack is missing)")
    return "\n".join(lines)


def report(results: Sequence[Result], libs: Libraries, *, repeat: int, sample_ms: float,
           quick: bool = False, markdown: bool = False) -> str:
    """The full report: machine facts, method, the table, the checks and the targets."""
    facts = [*machine_facts(), f"numpy {np.__version__}"]
    for label, version in libs.versions().items():
        if version is not None:
            facts.append(f"{label} {version}")
    facts += [f"{why}" for why in libs.skipped.values()]
    facts.append(
        f"{repeat} samples per contender; a sample runs every contender once (a loop of calls "
        f"lasting ~{sample_ms:g} ms, or one call when a call is longer), in balanced orders "
        f"(each follows each other equally often); ms = median per call;"
        f" st GB/s = bytes read + written (uint8 "
        f"images, float32 batch) / strided's median; ratios = medians of the paired ratios: "
        f"st/peer = time(best peer) / time(strided), st/floor = time(cast st) / time(strided), "
        f"out=/floor = time(cast st) / time(st out=), st/memcpy = time(memcpy) / "
        f"time(strided): above 1 strided is faster; crops/contig = time(st crops) / "
        f"time(st out=): the cost of non-contiguous images, 1 = none; thr = strided's "
        f"num_threads = torch.set_num_threads = cv2.setNumThreads (numpy: 1 thread); the "
        f"peers allocate their batch as strided does (st out= and st crops write into a "
        f"preallocated one); floor = cast st: strided.copyto of as many uint8 elements into "
        f"float32, both contiguous; memcpy = memmove of (bytes read + written) / 2 on thr "
        f"threads")
    head = ("strided batch benchmark: strided.stack (N images -> one batch) vs torch, numpy, "
            "albumentations, OpenCV and the floors")
    parts = ["\n".join(f"- {f}" for f in facts) if markdown
             else "\n".join([head, *(f"  {f}" for f in facts)])]
    parts.append("\n".join([TITLE, "", format_table(results, markdown=markdown), "",
                            "checked against a float64 reference before timing, at every "
                            "thread count:", *_check_lines(results)]))
    shares = [r.others for r in results if r.others is not None]
    if shares and statistics.fmean(shares) > NOISY_SHARE:
        parts.append(f"WARNING: other processes used {100 * statistics.fmean(shares):.0f}% of "
                     f"the CPU on average while the batch was timed: the 2-thread figures are "
                     f"unreliable; run again on an idle machine")
    parts.append(target_summary(results, quick=quick))
    return "\n\n".join(parts)


def to_record(results: Sequence[Result], libs: Libraries, *, settings: dict[str, Any],
              command: str, note: str | None = None, quick: bool = False) -> dict[str, Any]:
    """The run as a record (:func:`harness.report.new_record`): what ``--json`` writes and
    ``--plot`` draws; GB/s counts the images' and the batch's bytes, for every contender."""
    rows = [record_row("batch", r.label, r.threads, r.nbytes, r.times,
                       ratios={kind: r.ratio(kind) for _, kind in RATIO_COLUMNS},
                       best_peer=r.best("peer"), others=r.others)
            for r in results]
    contenders_ = {name: role for name, role in COLUMNS if any(r.times.get(name) for r in results)}
    return new_record(
        "batch", "strided.stack against torch, numpy, albumentations, OpenCV and the floors: "
                 "a data loader's batch", contenders=contenders_, rows=rows, settings=settings,
        versions=libs.versions(), command=command, note=note,
        summary=target_summary(results, quick=quick).splitlines())


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None, *, prog: str = "python benchmarks/bench_batch.py") -> int:
    """Run the batch benchmark and print the report; return the exit status (0).

    Bad arguments exit with status 2 and one line on stderr, and so do ``--plot`` without
    matplotlib and ``--json``/``--plot`` files in a missing directory, before anything is
    timed.
    """
    parser = OneLineParser(
        prog=prog,
        description="Batch benchmark: 64 HWC uint8 images 224x224x3 -> one normalised float32 "
                    "NCHW batch, strided.stack against torch ops + torch.stack, numpy, "
                    "albumentations and OpenCV's blobFromImages, a contiguous cast and a "
                    "memcpy, paired and alternating in one process, at 1 and 2 threads; every "
                    "result is checked against a float64 reference before timing.",
        epilog="Default: 15 samples at 1 and 2 threads (~1 minute on 2 cores); --quick: 4 "
               "images of 32x32, 3 samples of ~1 ms (seconds).",
    )
    parser.add_argument("--threads", type=_threads, metavar="N,...",
                        help="thread counts (default 1,2)")
    parser.add_argument("--repeat", type=int, metavar="N", help="samples per contender")
    parser.add_argument("--sample-ms", type=float, metavar="MS",
                        help="duration of one sample of a fast contender (default 5, --quick 1)")
    parser.add_argument("--quick", action="store_true",
                        help="4 images of 32x32, 3 samples of ~1 ms (a smoke run for tests)")
    parser.add_argument("--no-torch", action="store_true",
                        help="leave torch out (and albumentations, which needs it)")
    parser.add_argument("--no-cv2", action="store_true", help="leave OpenCV out")
    parser.add_argument("--no-albumentations", action="store_true",
                        help="leave albumentations out")
    parser.add_argument("--markdown", action="store_true", help="print a markdown pipe table")
    plot.add_options(parser)
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    plot.check_outputs(parser, plot=args.plot, json=args.json)
    threads = args.threads or list(THREADS)
    repeat = args.repeat if args.repeat is not None else (3 if args.quick else 15)
    sample_ms = args.sample_ms if args.sample_ms is not None else (1.0 if args.quick else 5.0)
    check_sampling(parser, repeat, sample_ms)

    libs = libraries(with_torch=not args.no_torch, with_cv2=not args.no_cv2,
                     with_albumentations=not args.no_albumentations)
    specs = configs(args.quick)
    gc.collect()
    print(f"timing the batch at {','.join(map(str, threads))} threads, {repeat} samples ...",
          file=sys.stderr, flush=True)
    results = run(specs, libs=libs, threads=threads, repeat=repeat, sample_ms=sample_ms,
                  progress=lambda m: print(m, file=sys.stderr, flush=True))
    print(report(results, libs, repeat=repeat, sample_ms=sample_ms, quick=args.quick,
                 markdown=args.markdown))
    if args.json is not None or args.plot is not None:
        settings = {"configs": [s.label for s in specs], "threads": threads, "repeat": repeat,
                    "sample_ms": sample_ms, "quick": args.quick}
        record = to_record(results, libs, settings=settings, quick=args.quick,
                           command=f"{prog} {shlex.join(argv)}".strip(), note=args.note)
        plot.save(parser, record, plot=args.plot, json=args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
