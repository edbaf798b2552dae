"""The conversion benchmark: :func:`strided.copyto` with a dtype change against the chains people
write today (numpy ufuncs, torch ops, OpenCV) and against the floors (a contiguous cast of the
same elements, a memcpy of the same bytes).

``python benchmarks/bench_convert.py`` calls :func:`main`.
Every **case** is a conversion a model's pre- or post-processing makes, run on a few **configs**
(sizes, formats, dtypes):

1. ``normalize``: HWC uint8 -> CHW float32, ``(x/255 - mean)/std`` per channel (224x224,
   1080x1920, and a batch of 64 224x224 images NHWC -> NCHW). strided:
   ``copyto(out.transpose(1, 2, 0), img, scale=1/(255 std), shift=-mean/std, axis=2)``.
2. ``to-uint8``: CHW float32 -> HWC uint8, ``x*255`` rounded and saturated:
   ``copyto(u8_hwc, f32_chw.transpose(1, 2, 0), casting="unsafe", scale=255.0)``.
3. ``quantize``: NCHW float32 (8, 128, 64, 64) -> int8 NCHW4 / NCHW32, ``rint(x/s + z)``
   saturated, and back to float32 (``y*s - z*s``), a preallocated ``copyto`` between the
   (N, C/x, x, H, W) views (``to_blocked`` / ``from_blocked`` timed alongside).
4. ``half``: NCHW float32 (64 MiB) -> NHWC float16 and bfloat16.
5. ``quantize4``: NCHW float32 (8, 128, 64, 64) -> int4 NCHW64 (``to_blocked(x, "NCHW64",
   dtype="int4")``, packed two a byte, low nibble first) and back (``from_blocked(...,
   src_dtype="int4")``); the floor is strided's own int8 NCHW32 of the same tensor.
6. ``affine16``: float16 and bfloat16 -> float32 with a scale and shift, contiguous (half-float
   weights or activations dequantized): ``copyto(out, x, scale=s, shift=c)``.

Every contender writes the same logical result. Before anything is timed, at every thread
count, each contender runs once (the warm-up) and its result is compared with the **reference**,
a numpy computation of the contract's arithmetic (``t = x.astype(CT) * scale + shift``, two
roundings): strided and the contenders marked ``equal`` must match it bit for bit (an
``AssertionError`` otherwise, with a reproducer); the contenders that round differently (torch's
``div``/``sub`` chain, OpenCV) must stay within a stated tolerance and the report gives their
largest difference. Then the samples run every contender once, in balanced orders
(:func:`harness.report.sample_alternating`), at 1 and 2 threads
(``num_threads``, ``torch.set_num_threads`` and ``cv2.setNumThreads`` matched; numpy runs on one
thread). The tables give the median ms per call, strided's GB/s (bytes read + written), the
medians of the paired ratios ``strided / best peer``, ``strided / floor`` (``/ memcpy``) and the
conversion targets (the speed strided aims at, such as 8x the best peer for ``quantize``), each
met or MISSED.

Examples
--------
>>> [case.name for case in select_cases(["quant", "half"])]
['quantize', 'half', 'quantize4']
>>> [c.label for c in CASES_BY_NAME["normalize"].configs(quick=True)]
['32x32', '48x64', '4x32x32']
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import math
import shlex
import statistics
import sys
import time
import timeit
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import plot
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
    select_by_name,
)

__all__ = [
    "CASES",
    "CASES_BY_NAME",
    "Case",
    "Config",
    "Contender",
    "Libraries",
    "Result",
    "Target",
    "format_table",
    "libraries",
    "main",
    "report",
    "run",
    "run_config",
    "select_cases",
    "target_summary",
    "to_record",
]

MiB = 1 << 20
THREADS = (1, 2)
#: ImageNet's statistics, the usual normalization of case 1.
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
#: The quantization of case 3: int8 = rint(x / S + Z), x = S * (int8 - Z).
QUANT_SCALE = 3.0 / 127.0
QUANT_ZERO = 3
_SENTINEL = 0xA5
#: Above this mean share of the CPU used by other processes, the report warns.
NOISY_SHARE = 0.10


# --------------------------------------------------------------------------------------------
# Libraries
# --------------------------------------------------------------------------------------------


@dataclass
class Libraries:
    """What the contenders may use; None where it is not installed (or left out)."""

    strided: Any  # the strided module when it has the conversion engine, else None
    torch: Any = None
    cv2: Any = None
    ml_dtypes: Any = None

    def set_threads(self, threads: int) -> None:
        """torch.set_num_threads and cv2.setNumThreads, where present."""
        if self.torch is not None:
            self.torch.set_num_threads(threads)
        if self.cv2 is not None:
            self.cv2.setNumThreads(threads)


def strided_converts() -> bool:
    """Whether the installed strided has the conversion engine (``strided._convert``)."""
    from importlib.util import find_spec

    return find_spec("strided._convert") is not None


def libraries(*, with_torch: bool = True, with_cv2: bool = True) -> Libraries:
    """The installed libraries (each imported only here, when asked for)."""
    import strided

    cv2 = optional_module("cv2") if with_cv2 else None
    if cv2 is not None and not hasattr(cv2, "dnn"):
        cv2 = None
    return Libraries(
        strided=strided if strided_converts() else None,
        torch=optional_module("torch") if with_torch else None,
        cv2=cv2,
        ml_dtypes=optional_module("ml_dtypes"),
    )


# --------------------------------------------------------------------------------------------
# Contenders, configs, cases
# --------------------------------------------------------------------------------------------

#: Roles: ``strided`` (the figure the targets are about), ``peer`` (the chains it is compared
#: with), ``info`` (other strided calls, timed for information), ``floor`` (a contiguous cast
#: of the same elements), ``memcpy`` (the same bytes read + written, on T threads).
ROLES = ("strided", "info", "peer", "floor", "memcpy")


@dataclass
class Contender:
    """One timed call; ``result`` maps its return value to the canonical output (None: the call
    is a floor, not compared); ``out``: its preallocated output (filled before the check)."""

    call: Callable[[], Any]
    role: str
    result: Callable[[Any], np.ndarray] | None = None
    out: Any = None
    tol: float = 0.0  # 0: equal to the reference bit for bit; else the largest |difference|
    note: str = ""  # how it differs (for the report's check lines)
    close: Callable[[], Any] | None = None  # run once the config's timing ends


@dataclass(frozen=True)
class Target:
    """A conversion target: strided / ``metric`` >= ``want`` on the given thread counts."""

    metric: str  # "peer", "floor" or "memcpy"
    want: float
    threads: tuple[int, ...] = THREADS

    def text(self) -> str:
        return f">={self.want:g}x {self.metric}"


@dataclass
class Config:
    """The arrays of one row of a case's table and a factory of its contenders."""

    label: str  # the size / format column
    nbytes: int  # bytes read + written by the conversion (the logical tensors)
    reference: np.ndarray  # the expected output, canonical layout
    contenders: Callable[[int], dict[str, Contender]] = field(repr=False)
    source: np.ndarray | None = field(default=None, repr=False)  # for the reproducer
    targets: tuple[Target, ...] = ()
    call: str = ""  # strided's call, for the reproducer


@dataclass(frozen=True)
class Case:
    """A conversion: its name, its title, its columns and how to build its configs."""

    name: str
    title: str
    columns: tuple[tuple[str, str], ...]  # (contender name, role), table order
    sizes: Callable[[bool], list[Any]] = field(repr=False)
    make: Callable[[Any, Libraries], Config | None] = field(repr=False)

    def configs(self, quick: bool = False) -> list[_Lazy]:
        """The configs (built lazily: :meth:`_Lazy.build`), tiny ones with ``quick``."""
        return [_Lazy(self, spec) for spec in self.sizes(quick)]


@dataclass(frozen=True)
class _Lazy:
    case: Case
    spec: Any

    @property
    def label(self) -> str:
        return str(self.spec[0])

    def build(self, libs: Libraries) -> Config | None:
        return self.case.make(self.spec, libs)


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _f32(values: Sequence[float]) -> np.ndarray:
    return np.asarray(values, np.float64).astype(np.float32)


def _as_numpy(torch: Any, t: Any) -> np.ndarray:
    """A CPU tensor's values as numpy (bfloat16: its bits as uint16)."""
    if t.dtype == torch.bfloat16:
        return t.contiguous().view(torch.int16).numpy().view(np.uint16)
    return t.numpy()


def _bits(a: np.ndarray) -> np.ndarray:
    """Two-byte floats (float16, bfloat16) as their bits; others unchanged."""
    if a.dtype.itemsize == 2 and a.dtype.kind not in "iu":
        return a.view(np.uint16)
    return a


def _floor_cast(libs: Libraries, src_flat: np.ndarray, dst_flat: np.ndarray,
                threads: int) -> dict[str, Contender]:
    """The floors: the same elements cast contiguously by numpy and by strided (no affine)."""
    out = {"cast np": Contender(lambda: np.copyto(dst_flat, src_flat, casting="unsafe"),
                                "floor")}
    st = libs.strided
    if st is not None:
        out["cast st"] = Contender(
            lambda: st.copyto(dst_flat, src_flat, casting="unsafe", num_threads=threads),
            "floor")
    return out


# ---- case 1: HWC u8 -> CHW f32, normalized --------------------------------------------------


def _normalize_sizes(quick: bool) -> list[tuple[str, int, int, int, tuple[Target, ...]]]:
    """(label, N (0: a single HWC image), H, W, targets)."""
    floor = Target("floor", 0.7)
    if quick:
        return [("32x32", 0, 32, 32, (Target("peer", 3.0, (1,)), floor)),
                ("48x64", 0, 48, 64, (Target("peer", 4.0), floor)),
                ("4x32x32", 4, 32, 32, (floor,))]
    return [("224x224", 0, 224, 224, (Target("peer", 3.0, (1,)), floor)),
            ("1080x1920", 0, 1080, 1920, (Target("peer", 4.0), floor)),
            ("64x224x224", 64, 224, 224, (floor,))]


def _make_normalize(spec: tuple[str, int, int, int, tuple[Target, ...]],
                    libs: Libraries) -> Config:
    label, n, h, w, targets = spec
    shape = (h, w, 3) if n == 0 else (n, h, w, 3)
    img = _rng(1).integers(0, 256, shape, dtype=np.uint8)
    batch = img.ndim == 4
    to_c = (0, 3, 1, 2) if batch else (2, 0, 1)  # NHWC -> NCHW
    to_last = (0, 2, 3, 1) if batch else (1, 2, 0)
    axis = img.ndim - 1
    mean64, std64 = np.asarray(MEAN), np.asarray(STD)
    scale = (1.0 / (255.0 * std64)).astype(np.float32)  # the contract rounds scale/shift to f32
    shift = (-mean64 / std64).astype(np.float32)
    bshape = (3, 1, 1)
    reference = img.transpose(to_c).astype(np.float32)
    reference *= scale.reshape(bshape)
    reference += shift.reshape(bshape)
    out_shape = reference.shape
    flat_src = img.reshape(-1)
    floor_dst = np.empty(img.size, np.float32)

    def contenders(threads: int) -> dict[str, Contender]:
        c: dict[str, Contender] = {}
        st = libs.strided
        if st is not None:
            out_st = np.empty(out_shape, np.float32)
            dst_view = out_st.transpose(to_last)
            c["strided"] = Contender(
                lambda: st.copyto(dst_view, img, scale=scale, shift=shift, axis=axis,
                                  num_threads=threads),
                "strided", lambda _: out_st, out_st)
            c["st relayout"] = Contender(
                lambda: st.relayout(img.transpose(to_c), "C", dtype=np.float32, scale=scale,
                                    shift=shift, axis=axis - 2, num_threads=threads),
                "info", np.asarray)
        out_np = np.empty(out_shape, np.float32)
        s_b, h_b = scale.reshape(bshape), shift.reshape(bshape)

        def numpy_chain() -> None:
            np.copyto(out_np, img.transpose(to_c))
            np.multiply(out_np, s_b, out=out_np)
            np.add(out_np, h_b, out=out_np)

        c["numpy"] = Contender(numpy_chain, "peer", lambda _: out_np, out_np)
        torch = libs.torch
        if torch is not None:
            timg = torch.from_numpy(img)
            out_t = np.empty(out_shape, np.float32)
            tout = torch.from_numpy(out_t)
            ts, th = torch.from_numpy(s_b), torch.from_numpy(h_b)
            tmean = torch.tensor(MEAN, dtype=torch.float32).view(bshape)
            tstd = torch.tensor(STD, dtype=torch.float32).view(bshape)
            tperm = timg.permute(to_c)

            def torch_ops() -> None:
                tout.copy_(tperm)
                tout.mul_(ts)
                tout.add_(th)

            c["torch ops"] = Contender(torch_ops, "peer", lambda _: out_t, out_t)
            c["torch chain"] = Contender(
                lambda: tperm.float().div(255).sub(tmean).div(tstd), "peer",
                lambda r: _as_numpy(torch, r), tol=2e-6,
                note="(x/255 - mean)/std: three roundings")
        cv2 = libs.cv2
        if cv2 is not None and hasattr(cv2.dnn, "Image2BlobParams"):
            params = cv2.dnn.Image2BlobParams()
            params.scalefactor = (*(float(v) for v in scale), 0.0)
            params.mean = (*(float(v) * 255.0 for v in MEAN), 0.0)
            params.size = (w, h)
            params.swapRB = False
            params.ddepth = cv2.CV_32F
            params.datalayout = cv2.DNN_LAYOUT_NCHW
            if batch:
                images = list(img)
                call = lambda: cv2.dnn.blobFromImagesWithParams(images, params)  # noqa: E731
            else:
                call = lambda: cv2.dnn.blobFromImageWithParams(img, params)  # noqa: E731
            c["cv2"] = Contender(call, "peer", lambda r: np.asarray(r).reshape(out_shape),
                                 tol=2e-6, note="blobFromImage(WithParams): (x - 255 mean) * "
                                                "(1/(255 std)), allocates")
        c.update(_floor_cast(libs, flat_src, floor_dst, threads))
        return c

    return Config(label, img.nbytes + 4 * img.size, reference, contenders, img, targets,
                  f"strided.copyto(out.transpose{to_last}, img, scale={scale.tolist()}, "
                  f"shift={shift.tolist()}, axis={axis})")


# ---- case 2: CHW f32 -> HWC u8 ---------------------------------------------------------------


def _to_uint8_sizes(quick: bool) -> list[tuple[str, int, int]]:
    if quick:
        return [("32x32", 32, 32), ("48x64", 48, 64)]
    return [("224x224", 224, 224), ("1080x1920", 1080, 1920)]


def _make_to_uint8(spec: tuple[str, int, int], libs: Libraries) -> Config:
    label, h, w = spec
    # a network's output: mostly in [0, 1], a little above (saturates at 255); OpenCV's
    # convertScaleAbs takes |x|, so no negative values (it would differ there)
    x = _rng(2).uniform(0.0, 1.05, (3, h, w)).astype(np.float32)
    reference = np.clip(np.rint(x * np.float32(255)), 0, 255).astype(np.uint8).transpose(1, 2, 0)
    reference = np.ascontiguousarray(reference)
    floor_dst = np.empty(x.size, np.uint8)

    def contenders(threads: int) -> dict[str, Contender]:
        c: dict[str, Contender] = {}
        st = libs.strided
        src_view = x.transpose(1, 2, 0)
        if st is not None:
            out_st = np.empty((h, w, 3), np.uint8)
            c["strided"] = Contender(
                lambda: st.copyto(out_st, src_view, casting="unsafe", scale=255.0,
                                  num_threads=threads),
                "strided", lambda _: out_st, out_st)
            c["st relayout"] = Contender(
                lambda: st.relayout(src_view, "C", dtype=np.uint8, scale=255.0,
                                    num_threads=threads),
                "info", np.asarray)
        out_np = np.empty((h, w, 3), np.uint8)
        tmp = np.empty_like(x)
        u8_chw = np.empty(x.shape, np.uint8)

        def numpy_chain() -> None:
            np.multiply(x, np.float32(255), out=tmp)
            np.rint(tmp, out=tmp)
            np.clip(tmp, 0, 255, out=tmp)
            np.copyto(u8_chw, tmp, casting="unsafe")
            np.copyto(out_np, u8_chw.transpose(1, 2, 0))

        c["numpy"] = Contender(numpy_chain, "peer", lambda _: out_np, out_np)
        torch = libs.torch
        if torch is not None:
            tx = torch.from_numpy(x)
            out_t = np.empty((h, w, 3), np.uint8)
            tout = torch.from_numpy(out_t)
            ttmp = torch.empty(x.shape, dtype=torch.float32)

            def torch_ops() -> None:
                torch.mul(tx, 255.0, out=ttmp)
                ttmp.round_().clamp_(0, 255)
                tout.copy_(ttmp.permute(1, 2, 0))

            c["torch ops"] = Contender(torch_ops, "peer", lambda _: out_t, out_t)
            c["torch chain"] = Contender(
                lambda: tx.mul(255).round().clamp(0, 255).to(torch.uint8)
                .permute(1, 2, 0).contiguous(),
                "peer", lambda r: r.numpy())
        cv2 = libs.cv2
        if cv2 is not None:
            out_cv = np.empty((h, w, 3), np.uint8)
            planes = list(x)

            def cv2_chain() -> None:
                cv2.merge([cv2.convertScaleAbs(p, alpha=255.0) for p in planes], dst=out_cv)

            c["cv2"] = Contender(cv2_chain, "peer", lambda _: out_cv, out_cv,
                                 note="convertScaleAbs per plane + merge (|x|: equal on the "
                                      "non-negative inputs used)")
        c.update(_floor_cast(libs, x.reshape(-1), floor_dst, threads))
        return c

    return Config(label, x.nbytes + x.size, reference, contenders, x, (),
                  "strided.copyto(u8_hwc, x.transpose(1, 2, 0), casting='unsafe', scale=255.0)")


# ---- case 3: NCHW f32 <-> int8 NCHWx ---------------------------------------------------------


def _quantize_sizes(quick: bool) -> list[tuple[str, tuple[int, int, int, int], int, bool]]:
    """(label, NCHW shape, block, to the blocked format (else back from it))."""
    shape = (2, 64, 8, 8) if quick else (8, 128, 64, 64)
    return [(f"{'->' if to else '<-'}NCHW{b}", shape, b, to)
            for to in (True, False) for b in (4, 32)]


def _make_quantize(spec: tuple[str, tuple[int, int, int, int], int, bool],
                   libs: Libraries) -> Config:
    label, (n, ch, h, w), b, to = spec
    split = (n, ch // b, b, h, w)
    blocked = (n, ch // b, h, w, b)
    s = np.float32(QUANT_SCALE)
    inv_s = np.float32(1.0 / QUANT_SCALE)
    z = np.float32(QUANT_ZERO)
    fmt = f"NCHW{b}"
    # dequantizing (from the blocked int8) is held to its floor too: the reorder should cost
    # little next to the contiguous cast of the same elements
    targets = (Target("peer", 8.0),) if to else (Target("peer", 8.0), Target("floor", 0.7))
    reference: np.ndarray
    src: np.ndarray
    if to:
        x = _rng(3).standard_normal((n, ch, h, w), dtype=np.float32)  # |x| > 3: saturates
        t = x * inv_s
        t += z
        reference = np.clip(np.rint(t), -128, 127).astype(np.int8)
        reference = np.ascontiguousarray(reference.reshape(split).transpose(0, 1, 3, 4, 2))
        src, floor_dst = x, np.empty(x.size, np.int8)
        nbytes = x.nbytes + x.size
        call = (f"strided.copyto(y.transpose(0, 1, 4, 2, 3), x.reshape{split}, "
                f"casting='unsafe', scale={float(inv_s)!r}, shift={float(z)!r})")
    else:
        y = _rng(4).integers(-128, 128, blocked, dtype=np.int8)
        reference = y.transpose(0, 1, 4, 2, 3).astype(np.float32).reshape(n, ch, h, w)
        reference *= s
        reference += np.float32(-z * s)
        src, floor_dst = y, np.empty(y.size, np.float32)
        nbytes = y.nbytes + 4 * y.size
        call = (f"strided.copyto(x.reshape{split}, y.transpose(0, 1, 4, 2, 3), "
                f"scale={float(s)!r}, shift={float(-z * s)!r})")
    shift_back = np.float32(-z * s)

    def contenders(threads: int) -> dict[str, Contender]:
        c: dict[str, Contender] = {}
        st = libs.strided
        torch = libs.torch
        out_st: np.ndarray
        out_np: np.ndarray
        dst_v: np.ndarray
        src_v: np.ndarray
        if to:
            if st is not None:
                out_st = np.empty(blocked, np.int8)
                dst_v, src_v = out_st.transpose(0, 1, 4, 2, 3), x.reshape(split)
                c["strided"] = Contender(
                    lambda: st.copyto(dst_v, src_v, casting="unsafe", scale=inv_s, shift=z,
                                      num_threads=threads),
                    "strided", lambda _: out_st, out_st)
                c["st to_blocked"] = Contender(
                    lambda: st.to_blocked(x, fmt, dtype=np.int8, scale=inv_s, shift=z,
                                          num_threads=threads),
                    "info", lambda r: np.asarray(r).reshape(blocked))
            out_np = np.empty(blocked, np.int8)
            tmp = np.empty_like(x)
            out_np_v = out_np.transpose(0, 1, 4, 2, 3)

            def numpy_chain() -> None:
                np.multiply(x, inv_s, out=tmp)
                np.add(tmp, z, out=tmp)
                np.rint(tmp, out=tmp)
                np.clip(tmp, -128, 127, out=tmp)
                np.copyto(out_np_v, tmp.reshape(split), casting="unsafe")

            c["numpy"] = Contender(numpy_chain, "peer", lambda _: out_np, out_np)
            if torch is not None:
                tx = torch.from_numpy(x)
                out_t = np.empty(blocked, np.int8)
                tout = torch.from_numpy(out_t).permute(0, 1, 4, 2, 3)
                ttmp = torch.empty(x.shape, dtype=torch.float32)
                tinv, tz = float(inv_s), float(z)

                def torch_ops() -> None:
                    torch.mul(tx, tinv, out=ttmp)
                    ttmp.add_(tz).round_().clamp_(-128, 127)
                    tout.copy_(ttmp.view(split))

                c["torch ops"] = Contender(torch_ops, "peer", lambda _: out_t, out_t)
                out_q = np.empty(blocked, np.int8)
                tq = torch.from_numpy(out_q).permute(0, 1, 4, 2, 3)

                def torch_quantize() -> None:
                    q = torch.quantize_per_tensor(tx, float(s), int(z), torch.qint8)
                    tq.copy_(q.int_repr().view(split))

                # torch deprecates its quantized tensors with a warning given once a process:
                # take it here, not in the middle of the table (it is still a peer users run)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UserWarning)
                    torch_quantize()

                c["torch quant"] = Contender(
                    torch_quantize, "peer", lambda _: out_q, out_q, tol=1,
                    note="quantize_per_tensor + int_repr + a relayout copy_: its own rounding "
                         "of 1/s")
        else:
            if st is not None:
                out_st = np.empty((n, ch, h, w), np.float32)
                dst_v, src_v = out_st.reshape(split), y.transpose(0, 1, 4, 2, 3)
                c["strided"] = Contender(
                    lambda: st.copyto(dst_v, src_v, scale=s, shift=shift_back,
                                      num_threads=threads),
                    "strided", lambda _: out_st, out_st)
                c["st from_blocked"] = Contender(
                    lambda: st.from_blocked(y, fmt, channels=ch, dtype=np.float32, scale=s,
                                            shift=shift_back, num_threads=threads),
                    "info", np.asarray)
            out_np = np.empty((n, ch, h, w), np.float32)
            out_np_v = out_np.reshape(split)
            y_v = y.transpose(0, 1, 4, 2, 3)

            def numpy_chain() -> None:
                np.multiply(y_v, s, out=out_np_v)  # int8 * float32 -> float32
                np.add(out_np, shift_back, out=out_np)

            c["numpy"] = Contender(numpy_chain, "peer", lambda _: out_np, out_np)
            if torch is not None:
                ty = torch.from_numpy(y).permute(0, 1, 4, 2, 3)
                out_t = np.empty((n, ch, h, w), np.float32)
                tout = torch.from_numpy(out_t)
                tout_v = tout.view(split)
                ts, tsh = torch.tensor(float(s)), torch.tensor(float(shift_back))

                def torch_ops() -> None:
                    tout_v.copy_(ty)
                    tout.mul_(ts).add_(tsh)

                c["torch ops"] = Contender(torch_ops, "peer", lambda _: out_t, out_t)
        c.update(_floor_cast(libs, src.reshape(-1), floor_dst, threads))
        return c

    return Config(label, nbytes, reference, contenders, src, targets, call)


# ---- case 5: NCHW f32 <-> int4 NCHW64 --------------------------------------------------------


def _quantize4_sizes(quick: bool) -> list[tuple[str, tuple[int, int, int, int], bool]]:
    """(label, NCHW shape, to the blocked format (else back from it))."""
    shape = (2, 128, 8, 8) if quick else (8, 128, 64, 64)
    return [("->NCHW64", shape, True), ("<-NCHW64", shape, False)]


def _pack_pairs(q: np.ndarray, out: np.ndarray) -> None:
    """numpy's packing of int8 values in [-8, 7] along the last axis, low nibble first."""
    np.bitwise_and(q[..., 0::2], 15, out=out.view(np.int8))
    out |= (q[..., 1::2].view(np.uint8) << 4)


def _make_quantize4(spec: tuple[str, tuple[int, int, int, int], bool],
                    libs: Libraries) -> Config:
    """float32 NCHW -> int4 NCHW64 (``to_blocked(x, "NCHW64", dtype="int4", ...)``) and back
    (``from_blocked(..., src_dtype="int4")``); the floor is strided's own int8 NCHW32 of the
    same tensor, the same element count: strided / floor is the ratio of element rates."""
    label, (n, ch, h, w), to = spec
    b = 64
    split = (n, ch // b, b, h, w)
    s = np.float32(QUANT_SCALE / 16)       # 4 bits: a finer grid around 0, saturating at 8
    inv_s = np.float32(1.0 / s)
    z = np.float32(0)
    rng = _rng(6)
    x = (rng.standard_normal((n, ch, h, w), dtype=np.float32) * np.float32(0.05))
    t = x * inv_s
    t += z
    q = np.clip(np.rint(t), -8, 7).astype(np.int8)
    q_blocked = np.ascontiguousarray(q.reshape(split).transpose(0, 1, 3, 4, 2))
    packed = np.empty((*q_blocked.shape[:-1], b // 2), np.uint8)
    _pack_pairs(q_blocked, packed)
    shift_back = np.float32(-z * s)
    if to:
        reference, src = packed, x
        nbytes = x.nbytes + packed.nbytes
        call = (f"strided.to_blocked(x, 'NCHW64', dtype='int4', scale={float(inv_s)!r}, "
                f"shift={float(z)!r}, out=out)")
        targets = (Target("peer", 10.0), Target("floor", 0.9))
    else:
        reference = q.astype(np.float32) * s
        reference += shift_back
        src = packed
        nbytes = packed.nbytes + x.nbytes
        call = (f"strided.from_blocked(y, 'NCHW64', channels={ch}, src_dtype='int4', "
                f"scale={float(s)!r}, shift={float(shift_back)!r}, out=out)  # float32")
        targets = (Target("peer", 5.0),)
    q8 = np.ascontiguousarray(np.clip(np.rint(t), -128, 127).astype(np.int8)
                              .reshape(n, ch // 32, 32, h, w).transpose(0, 1, 3, 4, 2))

    def contenders(threads: int) -> dict[str, Contender]:
        c: dict[str, Contender] = {}
        st, torch = libs.strided, libs.torch
        # Every contender writes into an output made once, as the numpy and torch chains
        # (whose intermediates are made once too) do: strided's calls take out=.
        if to:
            if st is not None:
                out_st = np.empty(packed.shape, np.uint8)
                out_q8 = np.empty(q8.shape, np.int8)
                c["strided"] = Contender(
                    lambda: st.to_blocked(x, "NCHW64", dtype="int4", scale=inv_s, shift=z,
                                          num_threads=threads, out=out_st),
                    "strided", lambda _: out_st, out_st)
                c["st int8 NCHW32"] = Contender(
                    lambda: st.to_blocked(x, "NCHW32", dtype=np.int8, scale=inv_s, shift=z,
                                          num_threads=threads, out=out_q8), "floor")
            tmp = np.empty_like(x)
            q_np = np.empty(q_blocked.shape, np.int8)
            q_np_v = q_np.transpose(0, 1, 4, 2, 3)
            out_np = np.empty(packed.shape, np.uint8)

            def numpy_chain() -> None:
                np.multiply(x, inv_s, out=tmp)
                np.add(tmp, z, out=tmp)
                np.rint(tmp, out=tmp)
                np.clip(tmp, -8, 7, out=tmp)
                np.copyto(q_np_v, tmp.reshape(split), casting="unsafe")
                _pack_pairs(q_np, out_np)

            c["numpy"] = Contender(numpy_chain, "peer", lambda _: out_np, out_np)
            if torch is not None:
                tx = torch.from_numpy(x)
                ttmp = torch.empty(x.shape, dtype=torch.float32)
                tq = torch.empty(q_blocked.shape, dtype=torch.int8)
                tq_v = tq.permute(0, 1, 4, 2, 3)
                out_t = np.empty(packed.shape, np.uint8)
                tout = torch.from_numpy(out_t.view(np.int8))
                tinv, tz = float(inv_s), float(z)

                def torch_ops() -> None:
                    torch.mul(tx, tinv, out=ttmp)
                    ttmp.add_(tz).round_().clamp_(-8, 7)
                    tq_v.copy_(ttmp.view(split))
                    torch.bitwise_and(tq[..., 0::2], 15, out=tout)
                    tout.bitwise_or_(tq[..., 1::2] << 4)

                c["torch ops"] = Contender(torch_ops, "peer", lambda _: out_t, out_t)
        else:
            if st is not None:
                out_st = np.empty((n, ch, h, w), np.float32)
                out_f = np.empty((n, ch, h, w), np.float32)
                c["strided"] = Contender(
                    lambda: st.from_blocked(packed, "NCHW64", channels=ch, src_dtype="int4",
                                            scale=s, shift=shift_back, num_threads=threads,
                                            out=out_st), "strided", lambda _: out_st, out_st)
                c["st int8 NCHW32"] = Contender(
                    lambda: st.from_blocked(q8, "NCHW32", channels=ch, scale=s,
                                            shift=shift_back, num_threads=threads, out=out_f),
                    "floor")
            vals = np.empty(q_blocked.shape, np.int8)
            out_np = np.empty((n, ch, h, w), np.float32)
            out_v = out_np.reshape(split)
            pk = packed.view(np.int8)

            def numpy_chain() -> None:
                np.left_shift(pk, 4, out=vals[..., 0::2])    # low nibble, sign-extended
                np.right_shift(vals[..., 0::2], 4, out=vals[..., 0::2])
                np.right_shift(pk, 4, out=vals[..., 1::2])   # high nibble (arithmetic)
                np.multiply(vals.transpose(0, 1, 4, 2, 3), s, out=out_v)
                np.add(out_np, shift_back, out=out_np)

            c["numpy"] = Contender(numpy_chain, "peer", lambda _: out_np, out_np)
            if torch is not None:
                tp = torch.from_numpy(pk)
                tvals = torch.empty(q_blocked.shape, dtype=torch.int8)
                out_t = np.empty((n, ch, h, w), np.float32)
                tout = torch.from_numpy(out_t)
                tout_v = tout.view(split)
                ts, tsh = float(s), float(shift_back)

                def torch_ops() -> None:
                    tvals[..., 0::2] = (tp << 4) >> 4
                    tvals[..., 1::2] = tp >> 4
                    tout_v.copy_(tvals.permute(0, 1, 4, 2, 3))
                    tout.mul_(ts).add_(tsh)

                c["torch ops"] = Contender(torch_ops, "peer", lambda _: out_t, out_t)
        return c

    return Config(label, nbytes, reference, contenders, src, targets, call)


# ---- case 4: NCHW f32 -> NHWC f16 / bf16 -----------------------------------------------------


def _half_sizes(quick: bool) -> list[tuple[str, tuple[int, int, int, int]]]:
    shape = (2, 16, 16, 16) if quick else (16, 64, 128, 128)  # 64 MiB of float32
    return [("float16", shape), ("bfloat16", shape)]


def _make_half(spec: tuple[str, tuple[int, int, int, int]], libs: Libraries) -> Config | None:
    label, shape = spec
    n, ch, h, w = shape
    nhwc = (n, h, w, ch)
    torch, ml = libs.torch, libs.ml_dtypes
    x = _rng(5).standard_normal(shape, dtype=np.float32)
    if label == "float16":
        np_dtype: Any = np.dtype(np.float16)
    elif ml is not None:
        np_dtype = np.dtype(ml.bfloat16)
    else:
        np_dtype = None  # bfloat16 without ml_dtypes: torch's tensors hold it
        if torch is None:
            return None
    if np_dtype is not None:
        reference = _bits(np.ascontiguousarray(x.transpose(0, 2, 3, 1)).astype(np_dtype))
    else:
        reference = _as_numpy(torch, torch.from_numpy(x).permute(0, 2, 3, 1).contiguous()
                              .to(torch.bfloat16))
    tdtype = None if torch is None else getattr(torch, label)
    half_bytes = 2 * x.size
    # the bytes read + written, copied by memmove(n / 2): n / 2 read and n / 2 written
    move = (x.nbytes + half_bytes) // 2
    # Written, not np.empty: pages never written are all Linux's one zero page, which a memmove
    # reads from the cache (a 64 MiB memcpy from them ran 1.5x a real one). The contenders hold
    # it: memmove takes addresses.
    scratch = np.full((2, move), 0x5A, np.uint8)

    def make_out() -> tuple[Any, Any, Callable[[Any], np.ndarray]]:
        """A packed NHWC output, its NCHW view, and how to read it back."""
        if np_dtype is not None:
            out = np.empty(nhwc, np_dtype)
            return out, out.transpose(0, 3, 1, 2), lambda _: _bits(out)
        t = torch.empty(nhwc, dtype=tdtype)
        return t, t.permute(0, 3, 1, 2), lambda _: _as_numpy(torch, t)

    def contenders(threads: int) -> dict[str, Contender]:
        c: dict[str, Contender] = {}
        st = libs.strided
        if st is not None:
            out_st, view_st, read_st = make_out()
            c["strided"] = Contender(lambda: st.copyto(view_st, x, num_threads=threads),
                                     "strided", read_st, out_st)
            target_dtype = np_dtype if np_dtype is not None else tdtype
            c["st relayout"] = Contender(
                lambda: st.relayout(x, "NHWC", dtype=target_dtype, num_threads=threads),
                "info", lambda r: _bits(np.ascontiguousarray(
                    np.asarray(r).transpose(0, 2, 3, 1))))
        if np_dtype is not None:
            out_np = np.empty(nhwc, np_dtype)
            view_np = out_np.transpose(0, 3, 1, 2)
            c["numpy"] = Contender(lambda: np.copyto(view_np, x, casting="unsafe"), "peer",
                                   lambda _: _bits(out_np), out_np)
        if torch is not None:
            tx = torch.from_numpy(x)
            cl = torch.channels_last
            c["torch .to"] = Contender(lambda: tx.to(memory_format=cl, dtype=tdtype), "peer",
                                       lambda r: _as_numpy(torch, r.permute(0, 2, 3, 1)))
            tout = torch.empty(nhwc, dtype=tdtype)
            tview = tout.permute(0, 3, 1, 2)
            c["torch copy_"] = Contender(lambda: tview.copy_(tx), "peer",
                                         lambda _: _as_numpy(torch, tout), tout)
        if np_dtype is not None:
            c.update(_floor_cast(libs, x.reshape(-1), np.empty(x.size, np_dtype), threads))
        dst_addr, src_addr = scratch[0].ctypes.data, scratch[1].ctypes.data
        if threads > 1:
            pool = ThreadPoolExecutor(max_workers=threads - 1)
            parallel = _parallel_memmove(pool, threads)
            c["memcpy"] = Contender(lambda: parallel(dst_addr, src_addr, move), "memcpy",
                                    close=pool.shutdown)
        else:
            memmove = ctypes.memmove
            c["memcpy"] = Contender(lambda: memmove(dst_addr, src_addr, move), "memcpy")
        c["memcpy"].out = scratch  # keeps the buffers alive as long as the contender
        return c

    return Config(label, x.nbytes + half_bytes, reference, contenders, x,
                  (Target("memcpy", 0.8),),
                  f"strided.copyto(out_nhwc.transpose(0, 3, 1, 2), x)  # out: {label}")


# ---- case 6: f16 / bf16 -> f32, affine, contiguous ------------------------------------------

AFFINE16_SCALE = np.float32(1 / 64)
AFFINE16_SHIFT = np.float32(-0.75)


def _affine16_sizes(quick: bool) -> list[tuple[str, int]]:
    n = 4096 if quick else 8 << 20  # 16 MiB of halves, 32 MiB of float32
    return [("float16", n), ("bfloat16", n)]


def _make_affine16(spec: tuple[str, int], libs: Libraries) -> Config | None:
    label, n = spec
    torch, ml = libs.torch, libs.ml_dtypes
    if label == "bfloat16" and ml is None:
        return None  # the source is a numpy array: bfloat16 needs ml_dtypes
    np_dtype = np.dtype(np.float16) if label == "float16" else np.dtype(ml.bfloat16)
    x = _rng(6).standard_normal(n, dtype=np.float32).astype(np_dtype)
    s, c = AFFINE16_SCALE, AFFINE16_SHIFT
    reference = x.astype(np.float32)  # the contract: float32, two roundings
    reference *= s
    reference += c

    def contenders(threads: int) -> dict[str, Contender]:
        out: dict[str, Contender] = {}
        st = libs.strided
        if st is not None:
            out_st = np.empty(n, np.float32)
            out["strided"] = Contender(
                lambda: st.copyto(out_st, x, scale=s, shift=c, num_threads=threads),
                "strided", lambda _: out_st, out_st)
        out_np = np.empty(n, np.float32)

        def numpy_chain() -> None:  # (ml_dtypes casts bfloat16 to float32 for the ufunc)
            np.multiply(x, s, out=out_np, dtype=np.float32)
            np.add(out_np, c, out=out_np)

        out["numpy"] = Contender(numpy_chain, "peer", lambda _: out_np, out_np)
        if torch is not None:
            tx = torch.from_numpy(x) if label == "float16" else \
                torch.from_numpy(x.view(np.int16)).view(torch.bfloat16)
            out_t = torch.empty(n, dtype=torch.float32)
            out["torch ops"] = Contender(
                lambda: out_t.copy_(tx).mul_(float(s)).add_(float(c)), "peer",
                lambda _: out_t.numpy(), out_t, note="copy_, then mul_ and add_ in place")
        out.update(_floor_cast(libs, x, np.empty(n, np.float32), threads))
        return out

    return Config(label, x.nbytes + 4 * n, reference, contenders, x,
                  (Target("peer", 2.0), Target("floor", 0.9)),
                  f"strided.copyto(out_f32, x_{label}, scale={float(s)!r}, "
                  f"shift={float(c)!r})")


_NORMALIZE_COLUMNS = (("strided", "strided"), ("st relayout", "info"), ("numpy", "peer"),
                      ("torch ops", "peer"), ("torch chain", "peer"), ("cv2", "peer"),
                      ("cast np", "floor"), ("cast st", "floor"))

#: Every case, in table order.
CASES: tuple[Case, ...] = (
    Case("normalize", "1. HWC uint8 -> CHW float32, (x/255 - mean)/std per channel (ImageNet "
                      "mean/std)", _NORMALIZE_COLUMNS, _normalize_sizes, _make_normalize),
    Case("to-uint8", "2. CHW float32 -> HWC uint8, rint(x*255) saturated",
         _NORMALIZE_COLUMNS, _to_uint8_sizes, _make_to_uint8),
    Case("quantize", f"3. NCHW float32 -> int8 NCHWx, rint(x/s + z) saturated (s = 3/127, z = "
                     f"{QUANT_ZERO}), and back (y*s - z*s)",
         (("strided", "strided"), ("st to_blocked", "info"), ("st from_blocked", "info"),
          ("numpy", "peer"), ("torch ops", "peer"), ("torch quant", "peer"),
          ("cast np", "floor"), ("cast st", "floor")),
         _quantize_sizes, _make_quantize),
    Case("half", "4. NCHW float32 -> NHWC float16 / bfloat16 (round to nearest even)",
         (("strided", "strided"), ("st relayout", "info"), ("numpy", "peer"),
          ("torch .to", "peer"), ("torch copy_", "peer"), ("cast np", "floor"),
          ("cast st", "floor"), ("memcpy", "memcpy")),
         _half_sizes, _make_half),
    Case("quantize4", "5. NCHW float32 -> int4 NCHW64, rint(x/s) saturated to [-8, 7], packed "
                      "low nibble first, and back (y*s); floor: strided's int8 NCHW32",
         (("strided", "strided"), ("numpy", "peer"), ("torch ops", "peer"),
          ("st int8 NCHW32", "floor")),
         _quantize4_sizes, _make_quantize4),
    Case("affine16", "6. float16 / bfloat16 -> float32, x*s + c (s = 1/64, c = -0.75), "
                     "contiguous: half-float weights or activations dequantized",
         (("strided", "strided"), ("numpy", "peer"), ("torch ops", "peer"),
          ("cast np", "floor"), ("cast st", "floor")),
         _affine16_sizes, _make_affine16),
)
CASES_BY_NAME = {case.name: case for case in CASES}


def select_cases(patterns: Sequence[str] | None) -> list[Case]:
    """The cases named by ``patterns`` (exact names or case-insensitive substrings), in order
    (:func:`harness.report.select_by_name`); ``None`` selects every case."""
    return select_by_name(CASES, patterns)


# --------------------------------------------------------------------------------------------
# Check and timing
# --------------------------------------------------------------------------------------------


def _fill_sentinel(out: Any) -> None:
    if isinstance(out, np.ndarray):
        out.reshape(-1).view(np.uint8).fill(_SENTINEL)
    elif hasattr(out, "view") and hasattr(out, "fill_"):  # a torch tensor
        import torch

        out.view(torch.uint8).fill_(_SENTINEL)


def _difference(got: np.ndarray, want: np.ndarray) -> tuple[int, float, tuple[int, ...] | None]:
    """(how many elements differ, the largest |difference|, the first differing index)."""
    if got.shape != want.shape:
        raise AssertionError(f"shape {got.shape}, expected {want.shape}")
    if got.dtype.itemsize == 2 and got.dtype.kind not in "iu":
        got = got.view(np.uint16)
    if want.dtype.itemsize == 2 and want.dtype.kind not in "iu":
        want = want.view(np.uint16)
    if got.dtype != want.dtype:
        raise AssertionError(f"dtype {got.dtype}, expected {want.dtype}")
    unequal = got != want
    count = int(np.count_nonzero(unequal))
    if count == 0:
        return 0, 0.0, None
    first = tuple(int(i) for i in np.argwhere(unequal)[0])
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    return count, float(diff.max()), first


@dataclass
class Check:
    """How a contender's result compared with the reference."""

    differ: int  # elements that differ
    largest: float  # the largest |difference| (0: equal)

    def text(self) -> str:
        if self.differ == 0:
            return "equal"
        return f"close ({self.differ:,} elements differ, by at most {self.largest:.3g})"


def check_contenders(config: Config, contenders: dict[str, Contender], case: Case,
                     threads: int) -> dict[str, Check]:
    """Run every contender once, compare its result with the reference; return the checks.

    Raises
    ------
    AssertionError
        When strided, or a contender stated equal, differs from the reference, or a contender
        differs by more than its tolerance.
    """
    checks = {}
    for name, con in contenders.items():
        if con.result is None:
            con.call()  # the warm-up of a floor
            continue
        if con.out is not None:
            _fill_sentinel(con.out)
        got = np.asarray(con.result(con.call()))
        count, largest, first = _difference(got, config.reference)
        if largest > con.tol or (count and con.tol == 0):
            where = f"at {first}" if first is not None else ""
            got_v = got[first] if first is not None else None
            want_v = config.reference[first] if first is not None else None
            raise AssertionError(
                f"{case.name} {config.label}, {threads} threads: {name} differs from the "
                f"reference in {count:,} elements ({where}: {got_v!r}, expected {want_v!r}; "
                f"largest |difference| {largest:.3g}, tolerance {con.tol:g})"
                + (f"; reproduce: {config.call}" if con.role in ("strided", "info") else ""))
        checks[name] = Check(count, largest)
    return checks


@dataclass
class Result:
    """The samples of one config at one thread count: seconds per call, by contender."""

    case: Case
    label: str
    threads: int
    nbytes: int
    roles: dict[str, str]
    times: dict[str, list[float]]
    checks: dict[str, Check]
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
        return min(names, key=lambda n: self.median(n) or math.inf) if names else None

    def ratio(self, role: str) -> float | None:
        """strided against the best of ``role``: the median of the paired ratios
        ``time(best) / time(strided)`` (above 1: strided is faster); None without both."""
        best = self.best(role)
        if best is None or not self.times.get("strided"):
            return None
        return paired_ratio(self.times[best], self.times["strided"])

    def verdicts(self) -> list[tuple[Target, float | None]]:
        """The targets that apply to this row, with strided's ratio (None: not measured)."""
        return [(t, self.ratio(t.metric)) for t in self.targets if self.threads in t.threads]


def run_config(case: Case, config: Config, *, threads: int, repeat: int, sample_ms: float,
               libs: Libraries) -> Result:
    """Check every contender of a config at ``threads``, then time them, paired and alternating.
    """
    libs.set_threads(threads)
    contenders = config.contenders(threads)
    try:
        checks = check_contenders(config, contenders, case, threads)
        timers = {name: timeit.Timer(con.call) for name, con in contenders.items()}
        before = _cpu_seconds()
        times = sample_alternating(timers, repeat=repeat, sample_s=sample_ms / 1000.0)
        others = _others_share(before, _cpu_seconds())
    finally:
        for con in contenders.values():
            if con.close is not None:
                con.close()
    return Result(case, config.label, threads, config.nbytes,
                  {n: c.role for n, c in contenders.items()}, times, checks,
                  {n: c.note for n, c in contenders.items() if c.note}, config.targets, others)


def run(cases: Sequence[Case], *, libs: Libraries, threads: Sequence[int] = THREADS,
        repeat: int = 15, sample_ms: float = 5.0, quick: bool = False,
        progress: Callable[[str], None] | None = None) -> list[Result]:
    """Every config of every case, at every thread count; torch's and cv2's thread counts are
    restored afterwards."""
    if repeat < 1:
        raise ValueError(f"repeat must be >= 1, got {repeat}")
    saved_torch = libs.torch.get_num_threads() if libs.torch is not None else None
    saved_cv2 = libs.cv2.getNumThreads() if libs.cv2 is not None else None
    jobs = [(case, lazy) for case in cases for lazy in case.configs(quick)]
    results = []
    start = time.perf_counter()
    try:
        for i, (case, lazy) in enumerate(jobs, 1):
            if progress is not None:
                progress(f"  [{i}/{len(jobs)}] {case.name} {lazy.label} "
                         f"(t = {time.perf_counter() - start:.0f} s)")
            config = lazy.build(libs)
            if config is None:
                continue
            for t in threads:
                results.append(run_config(case, config, threads=t, repeat=repeat,
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


def _fmt_ms(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    ms = seconds * 1e3
    return f"{ms:.3f}" if ms < 10 else f"{ms:.1f}" if ms < 1000 else f"{ms:.0f}"


def _fmt_ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _target_cell(r: Result) -> str:
    verdicts = r.verdicts()
    if not verdicts:
        return "-"
    return ", ".join(f"{t.text()} " + ("n/a" if v is None else "met" if v >= t.want else "MISSED")
                     for t, v in verdicts)


def format_table(case: Case, results: Sequence[Result], *, markdown: bool = False) -> str:
    """One row per (config, threads): ms per call of every contender, strided's GB/s, the
    ratios and the targets."""
    present = {n for r in results for n in r.times}
    columns = [n for n, _ in case.columns if n in present]
    has_memcpy = any(role == "memcpy" for n, role in case.columns if n in present)
    header = ["config", "thr", *(f"{n} ms" for n in columns), "st GB/s", "st/peer",
              "best peer", "st/floor"]
    if has_memcpy:
        header.append("st/memcpy")
    header += ["target", "others"]
    rows = []
    for r in results:
        row = [r.label, str(r.threads), *(_fmt_ms(r.median(n)) for n in columns)]
        g = r.gbps("strided")
        row += ["-" if g is None else f"{g:.1f}", _fmt_ratio(r.ratio("peer")),
                r.best("peer") or "-", _fmt_ratio(r.ratio("floor"))]
        if has_memcpy:
            row.append(_fmt_ratio(r.ratio("memcpy")))
        row += [_target_cell(r), "-" if r.others is None else f"{100 * r.others:.0f}%"]
        rows.append(row)
    best_peer_col = header.index("best peer")
    right = set(range(1, len(header) - 2)) - {best_peer_col}
    right.add(len(header) - 1)
    return render_table(header, rows, right, markdown)


def _check_lines(results: Sequence[Result]) -> list[str]:
    """One line per contender compared: equal everywhere, or the largest difference."""
    merged: dict[str, list[Check]] = {}
    notes: dict[str, str] = {}
    for r in results:
        for name, check in r.checks.items():
            merged.setdefault(name, []).append(check)
        notes.update(r.notes)
    lines = []
    for name, checks in merged.items():
        differ = sum(c.differ for c in checks)
        largest = max(c.largest for c in checks)
        verdict = "equal" if differ == 0 else Check(differ, largest).text().replace(
            "close (", "close: ").rstrip(")")
        note = f" [{notes[name]}]" if name in notes else ""
        lines.append(f"  {name}: {verdict}{note}")
    return lines


def target_summary(results: Sequence[Result], *, quick: bool = False) -> str:
    """Every conversion target in the run, met or MISSED (n/a without a strided figure)."""
    rows = [(r, t, v) for r in results for t, v in r.verdicts()]
    if not rows:
        return "conversion targets: none in this run"
    met = [x for x in rows if x[2] is not None and x[2] >= x[1].want]
    missed = [x for x in rows if x[2] is not None and x[2] < x[1].want]
    na = [x for x in rows if x[2] is None]
    head = f"conversion targets: {len(met)} of {len(rows)} met"
    if quick:
        head += " (tiny --quick sizes: indicative only)"
    lines = [head]
    for label, group in (("MISSED", missed), ("met", met)):
        for r, t, v in group:
            lines.append(f"  {label}: {r.case.name} {r.label} {r.threads} thr: strided "
                         f"{t.text()} -> {v:.2f}x")
    if na:
        lines.append(f"  n/a: {len(na)} (no strided figure: strided has no conversion engine)")
    return "\n".join(lines)


def report(results: Sequence[Result], libs: Libraries, *, repeat: int, sample_ms: float,
           quick: bool = False, markdown: bool = False) -> str:
    """The full report: machine facts, method, one table per case, checks and targets."""
    facts = [*machine_facts(), f"numpy {np.__version__}"]
    for label, mod in (("torch", libs.torch), ("cv2 (OpenCV)", libs.cv2),
                       ("ml_dtypes", libs.ml_dtypes)):
        facts.append(f"{label} {mod.__version__}" if mod is not None
                     else f"{label}: left out or not installed (its columns show -)")
    if libs.strided is None:
        facts.append("strided: no conversion engine in this build (strided._convert is "
                     "missing): the strided columns show -")
    facts.append(
        f"{repeat} samples per contender; a sample runs every contender once (a loop of calls "
        f"lasting ~{sample_ms:g} ms, or one call when a call is longer), in balanced orders "
        f"(each follows each other equally often); ms = median per call;"
        f" st GB/s = bytes read + written / "
        f"strided's median; st/X = median of the paired ratios time(best X) / time(strided), "
        f"above 1 strided is faster; thr = strided's num_threads = torch.set_num_threads = "
        f"cv2.setNumThreads (numpy: 1 thread); peers write into preallocated outputs where "
        f"their API allows (torch chain, torch .to, cv2 dnn allocate); floor = a contiguous "
        f"cast of the same elements (cast np: np.copyto, cast st: strided.copyto, no affine); "
        f"memcpy = memmove of (bytes read + written) / 2 on thr threads")
    head = ("strided conversion benchmark: strided.copyto with a dtype change vs numpy, torch, "
            "OpenCV and the floors")
    parts = ["\n".join(f"- {f}" for f in facts) if markdown
             else "\n".join([head, *(f"  {f}" for f in facts)])]
    for case in dict.fromkeys(r.case for r in results):
        rows = [r for r in results if r.case is case]
        parts.append("\n".join([case.title, "", format_table(case, rows, markdown=markdown), "",
                                "checked against the reference before timing, every row:",
                                *_check_lines(rows)]))
    shares = [r.others for r in results if r.others is not None]
    if shares and statistics.fmean(shares) > NOISY_SHARE:
        parts.append(f"WARNING: other processes used {100 * statistics.fmean(shares):.0f}% of "
                     f"the CPU on average while the cases were timed: the 2-thread figures are "
                     f"unreliable; run again on an idle machine")
    parts.append(target_summary(results, quick=quick))
    return "\n\n".join(parts)


def to_record(results: Sequence[Result], libs: Libraries, *, settings: dict[str, Any],
              command: str, note: str | None = None, quick: bool = False) -> dict[str, Any]:
    """The run as a record (:func:`harness.report.new_record`): what ``--json`` writes
    and ``--plot`` draws. GB/s counts the bytes read + written by the conversion (source and
    destination tensors), as the tables do, for every contender."""
    rows = [record_row(r.case.name, r.label, r.threads, r.nbytes, r.times,
                       ratios={kind: r.ratio(kind) for kind in ("peer", "floor", "memcpy")},
                       best_peer=r.best("peer"), others=r.others)
            for r in results]
    contenders = {name: role for case in dict.fromkeys(r.case for r in results)
                  for name, role in case.columns if any(r.times.get(name) for r in results)}
    versions = {label: None if mod is None else str(mod.__version__)
                for label, mod in (("torch", libs.torch), ("cv2", libs.cv2),
                                   ("ml_dtypes", libs.ml_dtypes))}
    return new_record(
        "convert", "strided.copyto converting against numpy, torch, OpenCV and the floors: "
                   "dtype conversions", contenders=contenders, rows=rows, settings=settings,
        versions=versions, command=command, note=note,
        summary=target_summary(results, quick=quick).splitlines())


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def _list(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def _threads(text: str) -> list[int]:
    try:
        values = [int(item) for item in _list(text)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected thread counts such as 1,2") from None
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"{text!r}: thread counts must be >= 1")
    return values


def main(argv: list[str] | None = None, *, prog: str = "python benchmarks/bench_convert.py") -> int:
    """Run the conversion benchmark and print the report; return the exit status (0).

    Bad arguments exit with status 2 and one line on stderr, and so do ``--plot`` without
    matplotlib and ``--json``/``--plot`` files in a missing directory, before anything is
    timed. ``--json FILE`` writes the results as a record (:func:`to_record`), ``--plot FILE``
    draws them (:func:`harness.plot.draw`), after the report.
    """
    parser = OneLineParser(
        prog=prog,
        description="Conversion benchmark: strided.copyto with a dtype change "
                    "(and scale/shift) against numpy, torch and OpenCV chains, a contiguous "
                    "cast and a memcpy, paired and alternating in one process, at 1 and 2 "
                    "threads; every result is checked against a reference before timing.",
        epilog="cases: " + ", ".join(f"{c.name} ({c.title.split('. ', 1)[1].split(',')[0]})"
                                     for c in CASES)
               + ". Default: every case at full size, 15 samples (~1 minute on 2 cores); "
                 "--quick: tiny sizes, 3 samples of ~1 ms (seconds).",
    )
    parser.add_argument("--cases", type=_list, metavar="NAME,...",
                        help="case names or case-insensitive substrings (e.g. quant,half)")
    parser.add_argument("--threads", type=_threads, metavar="N,...",
                        help="thread counts (default 1,2)")
    parser.add_argument("--repeat", type=int, metavar="N", help="samples per contender")
    parser.add_argument("--sample-ms", type=float, metavar="MS",
                        help="duration of one sample of a fast contender (default 5, --quick 1)")
    parser.add_argument("--quick", action="store_true",
                        help="tiny sizes, 3 samples of ~1 ms (a smoke run for tests and CI)")
    parser.add_argument("--no-torch", action="store_true", help="leave torch out")
    parser.add_argument("--no-cv2", action="store_true", help="leave OpenCV out")
    parser.add_argument("--markdown", action="store_true", help="print markdown pipe tables")
    plot.add_options(parser)
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    plot.check_outputs(parser, plot=args.plot, json=args.json)
    try:
        cases = select_cases(args.cases)
    except ValueError as exc:
        parser.error(str(exc))
    threads = args.threads or list(THREADS)
    repeat = args.repeat if args.repeat is not None else (3 if args.quick else 15)
    sample_ms = args.sample_ms if args.sample_ms is not None else (1.0 if args.quick else 5.0)
    check_sampling(parser, repeat, sample_ms)

    libs = libraries(with_torch=not args.no_torch, with_cv2=not args.no_cv2)
    gc.collect()
    print(f"timing {len(cases)} cases at {','.join(map(str, threads))} threads, {repeat} samples "
          "...", file=sys.stderr, flush=True)
    results = run(cases, libs=libs, threads=threads, repeat=repeat, sample_ms=sample_ms,
                  quick=args.quick, progress=lambda m: print(m, file=sys.stderr, flush=True))
    print(report(results, libs, repeat=repeat, sample_ms=sample_ms, quick=args.quick,
                 markdown=args.markdown))
    if args.json is not None or args.plot is not None:
        settings = {"cases": [c.name for c in cases], "threads": threads, "repeat": repeat,
                    "sample_ms": sample_ms, "quick": args.quick}
        record = to_record(results, libs, settings=settings, quick=args.quick,
                           command=f"{prog} {shlex.join(argv)}".strip(), note=args.note)
        plot.save(parser, record, plot=args.plot, json=args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
