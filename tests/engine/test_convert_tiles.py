"""The one-pass converting transposes (``_kernels/convert_tiles.h``): float32 -> float16 and
bfloat16 between channel-first and channel-last layouts, micro-tiles converted in registers and
staged through the tile. Checked bit for bit against :mod:`convert_oracle` (numpy's astype for
float16, torch's rounding computed from the bits for bfloat16; any NaN for a NaN) and against
the engine's two-pass route, at every SIMD level, on 1 and 2 threads, with ragged edges,
source strides that alias in L1, padded destination rows, flipped dims, streaming stores and
guard bytes around the destination."""

import sys

import numpy as np
import pytest
from convert_oracle import assert_converted_equal, cast, np_dtype, special_values
from isolated import run_isolated

import strided as st
from strided import _copy

GUARD = 0x5A


def _source(shape, seed):
    """float32 NCHW values: random bit patterns (every class: NaN payloads, subnormals,
    infinities, huge, tiny) with the special values of float32 (ties, limits) spread over
    them."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    x = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    # plus values where float16 rounds: ties, overflow to inf at 65520, subnormal halves
    near = (rng.standard_normal(n) * 300).astype(np.float32)
    x = np.where(rng.random(n) < 0.5, x, near)
    sv = special_values("float32")
    x[rng.choice(n, min(n, sv.size), replace=False)] = sv[:min(n, sv.size)]
    ties = np.array([65520.0, 65519.996, 2049.0, 2051.0, 1 + 2**-11, 2**-25, 3 * 2**-26,
                     1 + 2**-8, 1 + 3 * 2**-9], np.float32)
    x[rng.choice(n, min(n, ties.size), replace=False)] = ties[:min(n, ties.size)]
    return x.reshape(shape)


def _guarded_nhwc(shape, dtype, pad=0):
    """An NHWC destination of logical NCHW ``shape`` whose rows hold ``pad`` spare channels,
    inside a buffer with guard bytes before and after; returns (buffer, NCHW view, NHWC
    channel slice)."""
    n, c, h, w = shape
    item = np.dtype(dtype).itemsize
    total = n * h * w * (c + pad)
    buf = np.full((total + 64) * item, GUARD, np.uint8)
    full = buf[32 * item:(32 + total) * item].view(dtype).reshape(n, h, w, c + pad)
    return buf, full[..., :c].transpose(0, 3, 1, 2), full


def _check_guards(buf, item, shape, pad):
    n, c, h, w = shape
    total = n * h * w * (c + pad)
    assert (buf[:32 * item] == GUARD).all()
    assert (buf[(32 + total) * item:] == GUARD).all()


SHAPES = [
    (2, 64, 33, 37),    # whole rows of 128 B (a block is one run), ragged pixel count
    (1, 16, 32, 32),    # source rows 4 KiB apart: the L1-aliasing path
    (3, 13, 9, 11),     # channels not a multiple of 8: edges in both directions
    (1, 100, 8, 9),     # more channels than a tile's columns: runs of partial rows
    (2, 8, 8, 8),       # rows of one vector: written in place
]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("level", [0, 1, 2])
@pytest.mark.parametrize("threads", [1, 2])
def test_half_relayouts_are_bit_exact(dtype, shape, level, threads):
    x = _source(shape, seed=sum(shape))
    want = cast(x, dtype)
    for pad in (0, 3):
        buf, dst, _ = _guarded_nhwc(shape, np_dtype(dtype), pad)
        old = _copy._simd(level)
        try:
            st.copyto(dst, x, casting="unsafe", num_threads=threads)
        finally:
            _copy._simd(old)
        assert_converted_equal(dst, want, x, f"{dtype} {shape} pad {pad} level {level}")
        _check_guards(buf, np_dtype(dtype).itemsize, shape, pad)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_one_pass_and_two_pass_routes_write_the_same_bits(dtype):
    """The tiled kernels against the engine's general route (convert the tile, then transpose
    it), NaN payloads included: both must give the portable conversion's bits."""
    shape = (2, 24, 17, 23)
    x = _source(shape, seed=5)
    outs = []
    for tiled in (True, False):
        old = _copy._tune(convert_tiled=tiled)
        try:
            _, dst, _ = _guarded_nhwc(shape, np_dtype(dtype))
            st.copyto(dst, x, casting="unsafe")
        finally:
            _copy._tune(**old)
        outs.append(dst.view(np.uint16).copy())
    assert np.array_equal(outs[0], outs[1])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("pad", [0, 5])
@pytest.mark.parametrize("shape, crowd, ahead", [
    ((2, 32, 21, 19), 4, 0), ((2, 32, 21, 19), 8, 1), ((1, 16, 32, 32), 4, 2),
    ((1, 16, 32, 32), 8, 1), ((2, 24, 64, 48), 8, 8)], ids=str)
def test_streaming_stores_write_exactly_the_destination(dtype, threads, pad, shape, crowd,
                                                          ahead):
    """With the streaming threshold at 0, the whole-row blocks leave through non-temporal
    stores (a destination starting mid-line: numpy's buffer + 32 items); partial rows (pad)
    through ordinary ones. Nothing outside the destination changes. Streamed tiles read their
    source as the copy's do: crowded rows (planes 4 KiB apart) through the line buffer
    (``crowd_rows`` 4) or directly (8), each row fetched ``sweep_ahead`` lines ahead where
    a block's rows are long enough (at most a quarter of them: 3072 pixels take 8 lines
    ahead, 399 pixels the 1 line asked)."""
    x = _source(shape, seed=11)
    old = _copy._tune(nt_bytes=0, crowd_rows=crowd, sweep_ahead=ahead)
    try:
        buf, dst, full = _guarded_nhwc(shape, np_dtype(dtype), pad)
        full[..., shape[1]:] = 0
        st.copyto(dst, x, casting="unsafe", num_threads=threads)
    finally:
        _copy._tune(**old)
    assert_converted_equal(dst, cast(x, dtype), x, f"streamed {dtype}")
    assert (full[..., shape[1]:].view(np.uint16) == 0).all()
    _check_guards(buf, np_dtype(dtype).itemsize, shape, pad)


@pytest.mark.thread_unsafe(reason="sets the engine's process-wide knobs")
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("hw", [(8, 8), (5, 7), (16, 33)], ids=str)
@pytest.mark.parametrize("lead", [0, 4, 16])
@pytest.mark.parametrize("stype", ["int8", "uint8"])
@pytest.mark.parametrize("per_channel", [False, True])
def test_dequantized_nchw32_planes_stream_exactly_the_destination(threads, hw, lead, stype,
                                                                   per_channel):
    """int8 / uint8 NCHW32 -> float32 NCHW through the 32-plane kernel with the streaming
    threshold at 0: 16-byte streamed stores where the planes start on 16 bytes and a block's
    pixels come in 8s (lead 0 and 16 on a 64-byte aligned buffer, 8 x 8 pixels), ordinary
    ones otherwise (lead 4; 5 x 7 pixels, whose last round is redone). numpy's values bit for
    bit; nothing around the destination changes."""
    rng = np.random.default_rng(sum(hw) + lead)
    n, c, (h, w) = 2, 64, hw
    lo, hi = (-128, 128) if stype == "int8" else (0, 256)
    y = rng.integers(lo, hi, (n, c // 32, h, w, 32)).astype(stype)
    nbytes = n * c * h * w * 4
    raw = np.full(nbytes + 256, GUARD, np.uint8)
    start = (-raw.ctypes.data) % 64 + 64 + lead      # 64-aligned, then `lead` bytes on
    out = raw[start:start + nbytes].view(np.float32).reshape(n, c, h, w)
    if per_channel:
        scale = np.linspace(0.5, 2.0, 32).astype(np.float32)
        kw = dict(scale=scale, shift=np.float32(-1.5), axis=2)
        expected = (y.transpose(0, 1, 4, 2, 3).astype(np.float32)
                    * scale[None, None, :, None, None]) + np.float32(-1.5)
    else:
        kw = dict(scale=np.float32(0.02), shift=np.float32(-1.5))
        expected = (y.transpose(0, 1, 4, 2, 3).astype(np.float32) * np.float32(0.02)
                    + np.float32(-1.5))
    old = _copy._tune(nt_bytes=0)
    try:
        st.copyto(out.reshape(n, c // 32, 32, h, w), y.transpose(0, 1, 4, 2, 3),
                  num_threads=threads, **kw)
    finally:
        _copy._tune(**old)
    assert np.array_equal(out.reshape(expected.shape).view(np.uint32),
                          expected.view(np.uint32))
    assert (raw[:start] == GUARD).all() and (raw[start + nbytes:] == GUARD).all()


@pytest.mark.thread_unsafe(reason="sets the engine's process-wide knobs")
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_tiled_conversions_stream_once_they_read_and_write_the_threshold(dtype):
    """A float32 NCHW -> float16 / bfloat16 NHWC conversion streams once the bytes it reads
    and writes together (6 an element) reach nt_bytes, as a copy does, not once it writes
    that much (2 an element); a conversion no tiled kernel takes (packed to packed) has no
    such stream. The streamed result is the cast's, bit for bit, inside its guards."""
    from strided import _convert
    shape = (2, 32, 21, 19)
    n, c, h, w = shape
    moved = n * c * h * w * 6
    sizes = shape
    nhwc = (h * w * c, 1, w * c, c)
    nchw = (c * h * w, h * w, w, 1)
    x = _source(shape, seed=5)
    old = _copy._tune()
    try:
        _copy._tune(nt_bytes=moved)
        assert _convert._tiled_streams(sizes, nhwc, nchw, dtype, "float32") is True
        assert _convert._tiled_streams(sizes, nchw, nchw, dtype, "float32") is None
        buf, dst, _ = _guarded_nhwc(shape, np_dtype(dtype))
        st.copyto(dst, x, casting="unsafe", num_threads=2)
        _copy._tune(nt_bytes=moved + 1)
        assert _convert._tiled_streams(sizes, nhwc, nchw, dtype, "float32") is False
    finally:
        _copy._tune(**old)
    assert_converted_equal(dst, cast(x, dtype), x, f"streamed by its footprint, {dtype}")
    _check_guards(buf, np_dtype(dtype).itemsize, shape, 0)
    with pytest.raises(ValueError, match="non-empty"):
        _convert._tiled_streams((0, 3), (3, 1), (1, 3), dtype, "float32")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_flipped_and_sliced_layouts(dtype):
    """Negative strides on both sides and a sliced source (rows not dense): the plan walks
    the destination forwards and hands the kernel the flipped source."""
    base = _source((2, 40, 12, 20), seed=3)
    x = base[:, ::-1, 1:11, ::-2]
    _, dst, _ = _guarded_nhwc(x.shape, np_dtype(dtype))
    st.copyto(dst[:, :, ::-1], x, casting="unsafe")
    assert_converted_equal(dst[:, :, ::-1], cast(x, dtype), x, f"flipped {dtype}")


def test_relayout_to_channels_last_half():
    """The public route: relayout(x, "NHWC", dtype=float16) gives the numpy-exact values in a
    channels-last array."""
    x = _source((2, 32, 16, 16), seed=9)
    y = st.relayout(x, "NHWC", dtype=np.float16)
    assert y.dtype == np.float16
    assert y.strides == (16 * 16 * 32 * 2, 2, 16 * 32 * 2, 32 * 2)
    assert_converted_equal(y, cast(x, "float16"), x, "relayout NHWC float16")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mmap + mprotect via libc")
def test_conversion_kernels_touch_no_byte_outside_their_operands():
    """The vector kernels of the conversion engine (pixels -> planes, planes -> pixels, the
    one-pass half-precision tiles) with the source's last byte and, separately, the
    destination's last byte right before a page that may be neither read nor written
    (mprotect PROT_NONE): a read or write past the end faults. In a subprocess, at every SIMD
    level and on 1 and 2 threads, so that a fault fails this test instead of pytest."""
    out = run_isolated("""
        import ctypes, mmap
        import numpy as np
        from strided import _convert, _copy
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        page = mmap.PAGESIZE
        pages = 64
        area = mmap.mmap(-1, (pages + 1) * page)
        base = ctypes.addressof(ctypes.c_char.from_buffer(area))
        assert libc.mprotect(base + pages * page, page, 0) == 0, ctypes.get_errno()
        end = base + pages * page     # the first byte that faults

        def convert(dst, dst_type, dst_strides, src, src_type, src_strides, sizes, threads,
                    **kw):
            _convert.convert_memory(dst, src, sizes, dst_strides, src_strides, dst_type,
                                    src_type, num_threads=threads, **kw)

        cases = []   # (sizes, dst strides, dst type, src strides, src type, affine)
        for ch in (3, 4):
            for n in (1, 9, 31, 100, 257):
                # pixels -> planes: src (n, ch) dense, dst (ch, n) planes
                cases.append(((n, ch), (1, n), "float32", (ch, 1), "uint8", True))
                cases.append(((n, ch), (1, n), "float32", (ch, 1), "int8", True))
                # planes -> pixels, quantizing
                cases.append(((n, ch), (ch, 1), "uint8", (1, n), "float32", True))
                cases.append(((n, ch), (ch, 1), "int8", (1, n), "float32", True))
        for c in (8, 13, 64):
            for n in (8, 37, 130):
                # NCHW -> NHWC float16 / bfloat16: src (c, n) planes, dst (n, c) pixels
                cases.append(((c, n), (1, c), "float16", (n, 1), "float32", False))
                cases.append(((c, n), (1, c), "bfloat16", (n, 1), "float32", False))
        size = {"uint8": 1, "int8": 1, "float16": 2, "bfloat16": 2, "float32": 4}
        bad = 0
        for level in range(_copy._simd() + 1):
            _copy._simd(level)
            for sizes, ds, dt, ss, stp, affine in cases:
                count = sizes[0] * sizes[1]
                kw = {"scale": 0.5, "shift": 1.0} if affine else {}
                for threads in (1, 2):
                    # the source ends at the guard page; the destination elsewhere
                    src = end - count * size[stp]
                    dst = base
                    ctypes.memset(src, 7, count * size[stp])
                    convert(dst, dt, ds, src, stp, ss, sizes, threads, **kw)
                    first = ctypes.string_at(dst, count * size[dt])
                    # the destination ends at the guard page; the source elsewhere
                    dst = end - count * size[dt]
                    src = base
                    ctypes.memset(src, 7, count * size[stp])
                    convert(dst, dt, ds, src, stp, ss, sizes, threads, **kw)
                    bad += ctypes.string_at(dst, count * size[dt]) != first
        _copy._simd(-1)
        print("bad", bad, "cases", len(cases))
    """)
    assert out.split()[:2] == ["bad", "0"]
