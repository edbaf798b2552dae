"""The inverse direction of the channel relayouts: dense pixels into planes (deinterleaves).

HWC -> CHW images and NHWC -> NCHW with few channels reduce to the block problem
``dst[k * dp + c] = src[c * S + k]`` with few planes R <= S (the source's unit dim): the
deinterleave kernels of ``_kernels/interleave.h`` (SSE2 packs, SSSE3 and AVX2 shuffles) and,
for more channels, the staged transposes. Every copy runs between byte buffers with guard bytes
(the helpers of ``test_copy_engine``) at every SIMD level the CPU has, against ``np.copyto``
between views of the same layouts; pointers are offset by odd byte counts, so no path may
assume aligned memory. Nothing here asserts a time.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
from isolated import run_isolated
from test_copy_engine import (
    SIMD_LEVELS,
    address,
    assert_each_thread_count_copies,
    numpy_copy_bytes,
    placed,
    random_bytes,
    sentinel,
    simd,
    tuned,
)

from strided import _copy

#: Pixels per copy: below, at and around one vector group of every item width (16 / itemsize
#: pixels, twice that for AVX2), and long rows whose last group is moved back to end at C.
PIXELS = (1, 2, 7, 8, 15, 16, 17, 31, 32, 33, 63, 100, 1001)
#: (source, destination) byte offsets of element 0 past the buffers' own alignment.
OFFSETS = ((0, 0), (1, 5), (3, 2))
#: (R, S): R planes out of pixels of S items: R = S = 2..5, and planes out of wider pixels
#: (RGB of RGBA, two of three, the widest pixels the shuffle kernels take, and beyond).
PLANES = [(r, r) for r in range(2, 6)] + [(3, 4), (2, 3), (4, 5), (5, 8), (2, 7), (3, 9),
                                          (5, 6), (4, 8), (2, 16)]


def copy_planes(R, S, C, k, *, src_off, dst_off, dst_pad=0, threads=(1,)):
    """Copy R planes of C pixels of S items (item k bytes) into planes of C + dst_pad items,
    at the given byte offsets, and compare every byte of the destination's buffer."""
    sizes = (R, C)
    src_strides, dst_strides = (1, S), (C + dst_pad, 1)
    src, sf = placed(sizes, src_strides, k, fill=lambda n: random_bytes(n, n + k), extra=4)
    dst0, df = placed(sizes, dst_strides, k, fill=sentinel, extra=8)
    sf, df = sf + src_off, df + dst_off
    expected = numpy_copy_bytes(dst0, df, dst_strides, src, sf, src_strides, sizes, k)
    assert_each_thread_count_copies(dst0, df, src, sf, sizes, dst_strides, src_strides, k,
                                    expected, threads=threads,
                                    what=f"R={R} S={S} C={C} k={k} offsets={src_off, dst_off}")


@pytest.mark.parametrize("level", SIMD_LEVELS)
@pytest.mark.parametrize("k", [1, 2, 4, 8])
@pytest.mark.parametrize(("R", "S"), PLANES, ids=lambda v: str(v))
def test_planes_out_of_pixels_at_every_simd_level(level, k, R, S):
    """Every kernel family on every pixel count, item width and plane count, unaligned."""
    with simd(level):
        for C in PIXELS:
            for src_off, dst_off in OFFSETS:
                copy_planes(R, S, C, k, src_off=src_off, dst_off=dst_off)


@pytest.mark.parametrize("level", SIMD_LEVELS)
@pytest.mark.parametrize("k", [1, 2, 4])
def test_planes_with_padded_rows_and_tiny_blocks(level, k):
    """Destination planes pitched past their width, and blocks of 16 bytes: many blocks per
    plane, each shorter than a vector group or ending inside one."""
    with simd(level):
        for R, S in ((3, 3), (2, 4), (4, 4), (3, 5)):
            for C in (33, 100, 257):
                copy_planes(R, S, C, k, src_off=1, dst_off=3, dst_pad=5, threads=(1, 2))
                with tuned(block_bytes=16, thread_bytes=1):
                    copy_planes(R, S, C, k, src_off=0, dst_off=0, threads=(1, 2, 3))


@pytest.mark.parametrize("level", SIMD_LEVELS)
@pytest.mark.parametrize(("dtype", "shape"), [
    ("u1", (3, 224, 224)), ("u1", (3, 37, 1001)), ("u1", (4, 61, 67)), ("u2", (3, 50, 70)),
    ("f4", (3, 99, 101)), ("f4", (2, 33, 65)), ("f8", (3, 40, 41)), ("u1", (5, 30, 31)),
])
def test_hwc_images_to_chw_like_numpy(level, dtype, shape):
    """Whole images through copyto: several blocks a plane, 1 and 2 threads."""
    c, h, w = shape
    rng = np.random.default_rng(c * h + w)
    hwc = rng.integers(0, 255, size=(h, w, c)).astype(dtype)
    for threads in (1, 2):
        with simd(level):
            dst = np.full(shape, 7, dtype)
            _copy.copy_memory(address(dst), address(hwc), shape, (h * w, w, 1),
                              (1, w * c, c), np.dtype(dtype).itemsize, threads)
        assert np.array_equal(dst, hwc.transpose(2, 0, 1)), (shape, threads)


@pytest.mark.parametrize("level", SIMD_LEVELS)
@pytest.mark.parametrize(("channels", "side", "k"), [
    (3, 45, 4), (3, 91, 1), (4, 64, 1), (16, 23, 4), (64, 13, 4), (64, 12, 4), (64, 9, 8),
    (33, 17, 2),
])
def test_nhwc_to_nchw_streamed_and_not(level, channels, side, k):
    """NHWC -> NCHW with N = 3: few channels (the deinterleaves) and many (the staged
    transposes, with planes on and off line boundaries, whose next blocks are fetched ahead),
    at the planner's choices and with streaming stores forced on."""
    sizes = (3, channels, side, side)
    src_strides = (side * side * channels, 1, side * channels, channels)
    dst_strides = (channels * side * side, side * side, side, 1)
    src, sf = placed(sizes, src_strides, k, fill=lambda n: random_bytes(n, n), extra=2)
    dst0, df = placed(sizes, dst_strides, k, fill=sentinel, extra=2)
    sf, df = sf + 1, df + 2
    expected = numpy_copy_bytes(dst0, df, dst_strides, src, sf, src_strides, sizes, k)
    with simd(level):
        for tuning in ({}, {"nt_bytes": 0}):
            with tuned(**tuning):
                assert_each_thread_count_copies(dst0, df, src, sf, sizes, dst_strides,
                                                src_strides, k, expected, threads=(1, 2),
                                                what=f"{sizes} k={k} {tuning}")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mmap + mprotect via libc")
def test_planes_read_no_byte_past_the_source():
    """The last vector group moves back to end at the last pixel: with the source's last byte
    right before a page that may not be read (mprotect PROT_NONE), a read past it faults. In a
    subprocess, at every SIMD level, so that a fault fails the test instead of pytest."""
    out = run_isolated("""
        import ctypes, mmap
        import numpy as np
        from strided import _copy
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        page = mmap.PAGESIZE
        area = mmap.mmap(-1, 4 * page)
        base = ctypes.addressof(ctypes.c_char.from_buffer(area))
        assert libc.mprotect(base + 3 * page, page, 0) == 0, ctypes.get_errno()
        raw = np.frombuffer(area, np.uint8, 3 * page)
        bad = 0
        for level in range(_copy._simd() + 1):
            _copy._simd(level)
            for k in (1, 2, 4):
                for R, S in ((3, 3), (2, 2), (4, 4), (3, 5), (2, 8)):
                    for C in (16, 33, 100):
                        n = C * S * k
                        src = raw[3 * page - n:]
                        src[:] = np.arange(n) * 7 % 251
                        want = src.view(f"u{k}").reshape(C, S)[:, :R].T.copy()
                        dst = np.zeros(R * C * k + 3, np.uint8)
                        _copy.copy_memory(dst.ctypes.data + 3, src.ctypes.data, (R, C),
                                          (C, 1), (1, S), k, 1)
                        bad += dst[:3].any() or dst[3:].tobytes() != want.tobytes()
        _copy._simd(-1)
        print("bad", bad)
    """)
    assert out.split() == ["bad", "0"]
