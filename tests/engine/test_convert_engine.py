"""The conversion engine's plans, each forced: staged tiles converting first or last, tiles
smaller than the block, whole runs with unrolled per-channel periods, rows, flipped dims, and
threads. Values stay in every type's range, so numpy's astype (and its two-step affine formula)
is the exact oracle."""

import numpy as np
import pytest

import strided as st
from strided import _copy


@pytest.fixture(params=[(131072, 64, -1, -1, True, True), (4096, 16, 0, 0, True, True),
                        (4096, 16, 1, 0, False, True), (131072, 64, 0, 0, True, True),
                        (131072, 64, 1, 0, False, True), (131072, 64, -1, 1, True, True),
                        (131072, 64, -1, -1, True, False)],
                ids=["default", "small-tiles-convert-first", "small-tiles-convert-last",
                     "convert-first", "convert-last", "staged", "two-pass-half"])
def plan(request):
    old = _copy._tune(convert_tile_bytes=request.param[0],
                      convert_tile_columns=request.param[1], convert_last=request.param[2],
                      convert_chunked=request.param[3], convert_chunk_bytes=1024,
                      convert_planes=request.param[4], convert_tiled=request.param[5],
                      convert_tiled_bytes=request.param[0])
    yield request.param
    _copy._tune(**old)


def _expected(src, dtype, scale=None, shift=None, axis=None):
    if scale is None and shift is None:
        return src.astype(dtype)
    ct = np.result_type(src.dtype, np.float32)
    t = src.astype(ct)
    shape = [1] * src.ndim
    if axis is not None:
        shape[axis] = -1
    if scale is not None:
        t = t * np.asarray(scale, ct).reshape(shape if np.ndim(scale) else ())
    if shift is not None:
        t = t + np.asarray(shift, ct).reshape(shape if np.ndim(shift) else ())
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        t = np.clip(np.rint(np.nan_to_num(t, nan=0.0)), info.min, info.max)
    return t.astype(dtype)


CASES = [  # (src dtype, dst dtype, affine)
    ("uint8", "float32", True), ("float32", "int8", True), ("float32", "float16", False),
    ("float64", "float32", False), ("int16", "float64", True), ("float32", "uint8", False),
    ("int8", "float32", True), ("float16", "float32", False), ("int32", "int64", False),
]


@pytest.mark.parametrize(("src_dtype", "dst_dtype", "affine"), CASES)
@pytest.mark.parametrize("direction", ["NHWC->NCHW", "NCHW->NHWC", "NCHW->NHWC C19",
                                       "HWC->CHW", "HWC4->CHW", "reversed", "rows"])
@pytest.mark.parametrize("threads", [1, 2])
def test_every_plan_gives_numpy_values(plan, src_dtype, dst_dtype, affine, direction,
                                       threads):
    rng = np.random.default_rng(7)
    if direction in ("HWC->CHW", "HWC4->CHW"):
        c = 3 if direction == "HWC->CHW" else 4
        logical = (37, 29, c)
        src = rng.integers(0, 100, logical).astype(src_dtype)
        dst_full = np.zeros((c, 37, 29), dst_dtype)
        dst = dst_full.transpose(1, 2, 0)
        axis = 2
    else:
        # C = 19: blocks wide enough for the one-pass kernels (convert_tiles.h) and edges
        shape = (2, 19, 9, 11) if direction.endswith("C19") else (3, 5, 17, 19)
        low = 0 if "uint" in src_dtype + dst_dtype else -60    # in every type's range
        base = rng.integers(low, 100, shape).astype(src_dtype)
        dst_full = np.zeros(shape, dst_dtype)
        if direction == "NHWC->NCHW":
            src = np.ascontiguousarray(base.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
            dst = dst_full
        elif direction.startswith("NCHW->NHWC"):
            src = base
            dst_full = np.zeros((shape[0], shape[2], shape[3], shape[1]), dst_dtype)
            dst = dst_full.transpose(0, 3, 1, 2)
        elif direction == "reversed":
            src = base[:, ::-1, :, ::-1]
            dst = dst_full[::-1, :, ::-1]
        else:
            src = base
            dst = dst_full
        axis = 1
    scale = shift = None
    if affine:
        scale = np.linspace(0.25, 1.5, dst.shape[axis])
        shift = 0.5
    kwargs = {"scale": scale, "shift": shift, "axis": axis} if affine else {}
    st.copyto(dst, src, casting="unsafe", num_threads=threads, **kwargs)
    want = _expected(src, dst_dtype, scale, shift, axis if affine else None)
    assert np.array_equal(dst, want)
    assert dst.dtype == want.dtype


@pytest.mark.parametrize("claims", [8, 1, 0], ids=["claims-8", "claims-1", "fixed-shares"])
@pytest.mark.parametrize("dtype", ["int8", "float16"])
def test_thread_count_does_not_change_a_bit(claims, dtype):
    """1, 2 or 3 threads, claiming blocks in runs of any length or in fixed shares: the same
    bytes (an affine int8 quantize through the tiles, a float16 cast through the one-pass
    kernels)."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 64, 33, 35)).astype(np.float32) * 50
    kwargs = ({"scale": np.arange(64) / 7, "shift": -3.0, "axis": 1} if dtype == "int8"
              else {})
    outs = []
    old = _copy._tune(chunks_per_thread=claims)
    try:
        for threads in (1, 2, 3):
            y = np.zeros((4, 33, 35, 64), dtype)
            st.copyto(y.transpose(0, 3, 1, 2), x, casting="unsafe", num_threads=threads,
                      **kwargs)
            outs.append(y)
    finally:
        _copy._tune(**old)
    assert all(np.array_equal(outs[0].view(np.uint8), o.view(np.uint8)) for o in outs[1:])
    assert np.array_equal(outs[0], _expected(x, dtype, kwargs.get("scale"), kwargs.get("shift"),
                                             kwargs.get("axis")).transpose(0, 2, 3, 1))


@pytest.mark.parametrize("case", ["plain", "vector", "scalar", "reversed", "numpy params"])
def test_numpy_fast_path_and_checked_path_agree(monkeypatch, case):
    """copyto's compiled numpy conversion path gives the checked path's bits."""
    from strided import copy as strided_copy

    rng = np.random.default_rng(11)
    src = rng.integers(0, 256, (13, 17, 3)).astype(np.uint8)
    kwargs = {
        "plain": {},
        "vector": {"scale": [0.1, 0.2, 0.3], "shift": (1.0, -2.0, 0.5), "axis": -1},
        "scalar": {"scale": 1 / 255, "shift": -0.5},
        "reversed": {"scale": [0.1, 0.2, 0.3], "axis": 2},
        "numpy params": {"scale": np.array([0.5, 1.5, 2.5]), "shift": np.float32(3), "axis": 2},
    }[case]
    if case == "reversed":
        src = src[::-1, :, ::-1]
    results = []
    for fast in (True, False):
        if not fast:
            monkeypatch.setattr(strided_copy, "_fast_convert", lambda *args: False)
        out = np.zeros((3, 13, 17), np.float32)
        st.copyto(out.transpose(1, 2, 0), src, **kwargs)
        results.append(out)
    assert np.array_equal(results[0].view(np.uint32), results[1].view(np.uint32))


PARAM_VECTORS = {   # parameters as users pass them: each read as the list of its values
    "float32 array": np.array([0.1, 0.2, 0.3], np.float32),
    "float64 array": np.array([0.1, 0.2, 0.3]),
    "strided float64 array": np.array([0.1, 9.0, 0.2, 9.0, 0.3, 9.0])[::2],
    "reversed float32 array": np.array([0.3, 0.2, 0.1], np.float32)[::-1],
    "big-endian float64": np.array([0.1, 0.2, 0.3], ">f8"),
    "float16 array": np.array([0.1, 0.2, 0.3], np.float16),
    "int64 array": np.array([1, 2, 3]),
    "memoryview of float32": memoryview(np.array([0.1, 0.2, 0.3], np.float32)),
    "memoryview of doubles": memoryview(np.array([0.1, 0.2, 0.3])),
}


@pytest.mark.parametrize("name", list(PARAM_VECTORS))
@pytest.mark.parametrize("fast", [True, False])
def test_parameter_vectors_give_the_values_of_their_lists(monkeypatch, name, fast):
    """A buffer of floats is read in C (float32, float64: native order, any stride); every
    other vector element by element: either way the values of ``list(vector)`` (as Python
    floats, rounded once to the compute type)."""
    from strided import copy as strided_copy

    if not fast:
        monkeypatch.setattr(strided_copy, "_fast_convert", lambda *args: False)
    vec = PARAM_VECTORS[name]
    as_list = [float(v) for v in np.asarray(vec).tolist()]
    src = np.arange(5 * 3, dtype=np.uint8).reshape(5, 3)
    got = np.zeros((3, 5), np.float32)
    want = np.zeros((3, 5), np.float32)
    st.copyto(got.T, src, scale=vec, shift=vec, axis=1)
    st.copyto(want.T, src, scale=as_list, shift=as_list, axis=1)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    assert np.array_equal(got, _expected(src, np.float32, as_list, as_list, axis=1).T)


@pytest.mark.parametrize("fast", [True, False])
def test_parameter_buffers_are_checked_like_lists(monkeypatch, fast):
    from strided import copy as strided_copy

    if not fast:
        monkeypatch.setattr(strided_copy, "_fast_convert", lambda *args: False)
    src = np.zeros((4, 3), np.uint8)
    dst = np.zeros((4, 3), np.float32)
    with pytest.raises(ValueError, match="scale has 2 values but axis 1 has 3"):
        st.copyto(dst, src, scale=np.array([1.0, 2.0], np.float32), axis=1)
    with pytest.raises(TypeError, match="complex"):
        st.copyto(dst, src, shift=np.array([1, 2, 3], np.complex64), axis=1)
    with pytest.raises(TypeError, match=r"scale.*(bool|real number)"):
        st.copyto(dst, src, scale=np.array([True, False, True]), axis=1)
    assert not dst.any()


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("pixels", [224 * 224, 43691, 50177])
def test_planes_split_evenly_between_threads_write_every_pixel(threads, pixels):
    """Blocks of equal size (multiples of 16 pixels) cover the image exactly: the block
    boundaries fall mid-vector for the kernels, which take them as tails."""
    rng = np.random.default_rng(pixels)
    img = rng.integers(0, 256, (pixels, 3), dtype=np.uint8)
    out = np.full((3, pixels + 8), -1.0, np.float32)
    st.copyto(out[:, :pixels].T, img, scale=[0.5, 0.25, 2.0], shift=-1.0, axis=1,
              num_threads=threads)
    assert np.array_equal(out[:, :pixels].T,
                          _expected(img, np.float32, [0.5, 0.25, 2.0], -1.0, axis=1))
    assert (out[:, pixels:] == -1.0).all()


def test_numpy_fast_path_declines_what_it_cannot_decide():
    """Refusals still come from the checked path, with its messages; nothing is written."""
    from strided.interop._ndarray import convert_arrays

    f = np.ones((2, 3), np.float32)
    assert not convert_arrays(np.zeros((2, 3), np.int8), f, "same_kind", None, None, None)
    assert not convert_arrays(np.zeros((2, 3), np.float64), f.astype(np.complex64),
                              "unsafe", None, None, None)
    assert not convert_arrays(np.zeros((2, 3)), f, "same_kind", [1.0, 2.0], None, 1)
    assert not convert_arrays(np.zeros((2, 3)), f, "same_kind", [1.0, 2.0, 3.0], None, None)
    assert not convert_arrays(np.zeros((2, 3)), f, "same_kind", None, None, 0)
    overlapping = np.lib.stride_tricks.as_strided(np.zeros(4), (2, 3), (8, 8), writeable=True)
    assert not convert_arrays(overlapping, f, "same_kind", None, None, None)
    with pytest.raises(ValueError, match="overlap"):
        st.copyto(overlapping, f)
    readonly = np.zeros((2, 3))
    readonly.flags.writeable = False
    assert not convert_arrays(readonly, f, "same_kind", None, None, None)
    assert convert_arrays(np.zeros((2, 3)), f, "same_kind", None, None, None)


def test_numpy_fast_path_converts_ml_dtypes_bfloat16():
    """ml_dtypes' bfloat16 (a numpy user type) takes the compiled path both ways, with the
    checked path's bits (every NaN -> 0x7fc0, ties to even, tails of every vector length);
    ml_dtypes' other 2-byte-or-less types are declined, so the checked path refuses them."""
    ml = pytest.importorskip("ml_dtypes")
    from strided.interop._ndarray import convert_arrays

    bf16 = np.dtype(ml.bfloat16)
    rng = np.random.default_rng(3)
    for n in (0, 1, 15, 16, 17, 33, 1000):
        bits = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
        bits[: n // 3] = (bits[: n // 3] & 0xFFFF0000) | 0x8000       # ties
        bits[n // 3: n // 2] |= 0x7F800000                            # infinities and NaNs
        x = bits.view(np.float32)
        out = np.full(n, 0xFFFF, np.uint16).view(bf16)
        assert convert_arrays(out, x, "same_kind", None, None, None)
        hi = bits >> 16
        nan = (bits & 0x7FFFFFFF) > 0x7F800000
        rounded = ((bits.astype(np.uint64) + 0x7FFF + (hi & 1)) >> 16).astype(np.uint16)
        expected = np.where(nan, np.uint16(0x7FC0), rounded)
        assert np.array_equal(out.view(np.uint16), expected)
        back = np.full(n, np.nan, np.float32)
        assert convert_arrays(back, out, "same_kind", None, None, None)
        assert np.array_equal(back.view(np.uint32), expected.astype(np.uint32) << 16)
    view = np.zeros((4, 8), np.float32)[:, ::2].T
    out = np.zeros((4, 4), bf16)
    assert convert_arrays(out, view, "same_kind", None, None, None)
    assert np.array_equal(out, view.astype(bf16))
    f8 = np.dtype(ml.float8_e4m3fn)
    assert not convert_arrays(np.zeros(4, f8), np.ones(4, np.float32), "unsafe", None, None,
                              None)
    with pytest.raises(TypeError):
        st.copyto(np.zeros(4, f8), np.ones(4, np.float32), casting="unsafe")


def test_dlpack_libraries_get_converted_results_of_their_own():
    xp = pytest.importorskip("array_api_strict")
    a = xp.asarray(np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5)
    b = st.relayout(a, "F", dtype=xp.int16, scale=2.0)
    assert type(b) is type(a) and b.dtype == xp.int16
    assert np.array_equal(np.from_dlpack(b), np.array([[-5, -3, -1], [1, 3, 5]], np.int16))
    with pytest.raises(TypeError, match="bfloat16"):
        st.relayout(a, "C", dtype="bfloat16")
    dst = xp.zeros((2, 3), dtype=xp.float64)
    st.copyto(dst, a)
    assert np.array_equal(np.from_dlpack(dst), np.from_dlpack(a).astype(np.float64))


@pytest.mark.parametrize("fmt", ["NCHW4", "NCHW32", "CHWN4"])
@pytest.mark.parametrize("channels", [8, 37, 64])
def test_every_plan_quantizes_blocked_per_channel(plan, fmt, channels):
    """Per-channel parameters across the blocked pieces (the channel axis split in two dims)
    under every plan, the staged chunks included."""
    rng = np.random.default_rng(channels)
    x = (rng.standard_normal((3, channels, 9, 11)) * 30).astype(np.float32)
    scale = np.linspace(0.5, 2.0, channels)
    shift = np.linspace(-3.0, 3.0, channels)
    q = st.to_blocked(x, fmt, dtype=np.int8, scale=scale, shift=shift)
    want = _expected(x, np.int8, scale, shift, axis=1)
    assert np.array_equal(st.from_blocked(q, fmt, channels=channels), want)
    back = st.from_blocked(q, fmt, channels=channels, dtype=np.float32, scale=1 / scale)
    assert np.array_equal(back, _expected(want, np.float32, 1 / scale, None, axis=1))


@pytest.mark.parametrize("level", [0, 1, 2])
@pytest.mark.parametrize("channels", [3, 4, 32])
@pytest.mark.parametrize("width", [1, 7, 8, 9, 10, 11, 15, 16, 17, 18, 33, 224, 257])
@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_image_planes_at_every_simd_level(level, channels, width, dtype):
    """HWC 8-bit -> CHW float32 straight to planes: odd widths (vector tails: the last rounds
    of 8 pixels, overlapping the ones before, for 8 to 17 pixels), a padded destination row
    (rows that do not merge: each is its own kernel call, tail included), 3, 4 and 32
    channels (int8 NCHW32's pixels: the tile-staged kernel, AVX2 only), every SIMD level;
    per-channel and scalar."""
    from strided import _copy

    rng = np.random.default_rng(width)
    img = rng.integers(-128 if dtype == "int8" else 0, 128 if dtype == "int8" else 256,
                       (5, width, channels)).astype(dtype)
    scale = np.linspace(0.01, 0.02, channels)
    for kwargs in ({"scale": scale, "shift": -scale * 100, "axis": 2}, {"scale": 0.5}, {}):
        old = _copy._simd(level)
        try:
            out = np.full((channels, 5, width + 3), -7.0, np.float32)
            st.copyto(out[:, :, :width].transpose(1, 2, 0), img, **kwargs)
        finally:
            _copy._simd(-1)
        want = _expected(img, np.float32, kwargs.get("scale"), kwargs.get("shift"),
                         kwargs.get("axis"))
        assert np.array_equal(out[:, :, :width].transpose(1, 2, 0), want), (old, kwargs)
        assert (out[:, :, width:] == -7.0).all()


@pytest.mark.parametrize("level", [0, 1, 2])
@pytest.mark.parametrize("channels", [3, 4, 32])
@pytest.mark.parametrize("width", [1, 2, 7, 8, 9, 10, 11, 17, 33, 257])
@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_image_pixels_at_every_simd_level(level, channels, width, dtype):
    """CHW float32 -> HWC 8-bit, quantized, straight to pixels: vector tails (3 channels keep
    room after each round; 32 channels, float32 NCHW -> int8 NCHW32's pixels, go through the
    tile), NaN, infinities, ties and out-of-range values, per-channel and scalar parameters,
    guard bytes after the image, every SIMD level."""
    from strided import _copy

    rng = np.random.default_rng(width)
    planes = (rng.standard_normal((channels, 3, width)) * 200).astype(np.float32)
    specials = np.array([np.nan, np.inf, -np.inf, 0.5, 1.5, 2.5, -0.5, -1.5, 127.5, 128.5,
                         254.5, 255.5, -128.5, 1e30], np.float32)
    flat = planes.reshape(-1)
    flat[:min(flat.size, specials.size)] = specials[:flat.size]
    for kwargs in ({"scale": np.linspace(0.5, 2.0, channels), "shift": 0.25, "axis": 2},
                   {"scale": 1.0}):
        old = _copy._simd(level)
        try:
            buf = np.full(3 * width * channels + 16, 77, np.uint8).view(dtype)
            out = buf[:3 * width * channels].reshape(3, width, channels)
            st.copyto(out, planes.transpose(1, 2, 0), casting="unsafe", **kwargs)
        finally:
            _copy._simd(-1)
        want = _expected(planes.transpose(1, 2, 0), dtype, kwargs.get("scale"),
                         kwargs.get("shift"), kwargs.get("axis"))
        assert np.array_equal(out, want), (old, kwargs)
        assert (buf[3 * width * channels:].view(np.uint8) == 77).all()


@pytest.mark.parametrize("type_name", ["float16", "float32", "float64", "bool", "uint8"])
def test_a_plain_cast_to_the_same_type_is_the_identity_row(type_name):
    """A same-type conversion without parameters is the engine's identity row, a copy: every
    byte as it was (NaN payloads, bool bytes other than 0 and 1, as numpy's astype to the same
    dtype), through a transpose too."""
    from strided import _convert
    itemsize = np.dtype(type_name).itemsize
    rng = np.random.default_rng(11)
    raw = rng.integers(0, 256, 37 * 29 * itemsize, dtype=np.uint8)
    src = raw.view(type_name).reshape(37, 29)
    dst = np.zeros((29, 37), type_name)
    _convert.convert_memory(dst.ctypes.data, src.ctypes.data, (37, 29), (1, 37), (29, 1),
                            type_name, type_name)
    assert dst.T.tobytes() == src.tobytes()
    assert dst.T.tobytes() == src.astype(type_name).tobytes()


STREAM_PAIRS = [("float32", "float16", False), ("uint8", "float32", True),
                ("float64", "float32", False), ("float32", "int8", True),
                ("int8", "float32", True), ("float16", "float32", False),
                ("complex64", "complex128", False)]


@pytest.mark.thread_unsafe(reason="sets the engine's process-wide knobs")
@pytest.mark.parametrize(("src_dtype", "dst_dtype", "affine"), STREAM_PAIRS)
@pytest.mark.parametrize("threads", [1, 2])
def test_streamed_dense_rows_write_exactly_their_items(src_dtype, dst_dtype, affine,
                                                        threads):
    """Past nt_bytes, dense rows convert through a buffer in the L1 whose whole lines leave
    with streaming stores (st_cvt_stream_run): the first and last partial lines with
    ordinary stores, the buffer's pieces stitched where they end inside a line, 2-byte items at
    an odd address too. Runs around the buffer's 4096 bytes and the lines,
    destinations 0-63 bytes into a line, one row and padded rows with a scale a row: numpy's
    values, bit for bit, and not a byte written outside the items."""
    from strided import _convert
    rng = np.random.default_rng(3)
    dsz = np.dtype(dst_dtype).itemsize
    per = 4096 // dsz
    lengths = sorted({1, 63 // dsz + 1, 64 // dsz, per - 1, per, per + 1, 3 * per + 17, 9001})
    offsets = sorted({0, 2, 16, 40, 62, 1 if dsz <= 2 else 0})
    old = _copy._tune(nt_bytes=0)
    try:
        for n in lengths:
            for rows, pad in ((1, 0), (3, 5)):
                src = (rng.standard_normal((rows, n)) * 50).astype(src_dtype) \
                    if np.dtype(src_dtype).kind in "fc" else \
                    rng.integers(-100, 100, (rows, n)).astype(src_dtype)
                scale = np.linspace(0.5, 2.0, rows) if affine else None
                shift = -3.0 if affine else None
                want = _expected(src, dst_dtype, scale=scale, shift=shift,
                                 axis=0 if affine else None)
                for off in offsets:
                    width = n + pad
                    raw = np.full(rows * width * dsz + 192, 0x5A, np.uint8)
                    base = (-raw.ctypes.data) % 64 + 64 + off
                    dst = raw[base:base + rows * width * dsz].view(dst_dtype)
                    dst = dst.reshape(rows, width)[:, :n]
                    if rows == 1 and off % dsz == 0:
                        assert _convert._plan_streams(dst.shape, (width, 1), (n, 1),
                                                      dst_dtype, src_dtype)
                    kwargs = dict(scale=scale, shift=shift, axis=0) if affine else {}
                    st.copyto(dst, src, casting="unsafe", num_threads=threads, **kwargs)
                    what = f"{src_dtype}->{dst_dtype} n={n} rows={rows} off={off}"
                    assert np.array_equal(dst.view(np.uint8), want.view(np.uint8)), what
                    assert (raw[:base] == 0x5A).all(), what
                    assert (raw[base + ((rows - 1) * width + n) * dsz:] == 0x5A).all(), what
                    if pad:   # the rows' padding is untouched too
                        padded = raw[base:base + rows * width * dsz].reshape(rows, width * dsz)
                        assert (padded[:, n * dsz:] == 0x5A).all(), what
    finally:
        _copy._tune(**old)


@pytest.mark.thread_unsafe(reason="sets the engine's process-wide knobs")
@pytest.mark.parametrize(("src_dtype", "dst_dtype", "affine"), STREAM_PAIRS[:5])
@pytest.mark.parametrize("stitch_rows", [1, 0], ids=["joined", "row-by-row"])
def test_streamed_rows_of_a_padded_source_join_in_a_dense_destination(src_dtype, dst_dtype,
                                                                       affine, stitch_rows):
    """Padded source rows into a dense destination (a crop into a packed batch), streamed:
    the rows follow each other in the destination, so they stream as one run, each line two
    rows share completed from a carry (st_cvt_stream_rows; stitch_rows 0: row by row, the
    rows' ends ordinary stores). Row lengths shorter than a line to longer than the buffer,
    destinations 0-63 bytes into a line, a scale a row, blocks of a few rows split between 1-3
    threads: numpy's values, bit for bit, and not a byte written outside the destination."""
    rng = np.random.default_rng(5)
    dsz = np.dtype(dst_dtype).itemsize
    lengths = sorted({1, 3, 64 // dsz - 1, 64 // dsz + 1, 100, 4096 // dsz + 7})
    offsets = sorted({0, 16, 62 // dsz * dsz, 1 if dsz <= 2 else 0})
    old = _copy._tune(nt_bytes=0, stitch_rows=stitch_rows, block_bytes=512, thread_bytes=1)
    try:
        for n in lengths:
            for rows in (2, 7, 33):
                full = (rng.standard_normal((rows, n + 3)) * 50).astype(src_dtype) \
                    if np.dtype(src_dtype).kind in "fc" else \
                    rng.integers(-100, 100, (rows, n + 3)).astype(src_dtype)
                src = full[:, 1:n + 1]
                scale = np.linspace(0.5, 2.0, rows) if affine else None
                shift = -3.0 if affine else None
                want = _expected(src, dst_dtype, scale=scale, shift=shift,
                                 axis=0 if affine else None)
                for off in offsets:
                    raw = np.full(rows * n * dsz + 192, 0x5A, np.uint8)
                    base = (-raw.ctypes.data) % 64 + 64 + off
                    dst = raw[base:base + rows * n * dsz].view(dst_dtype).reshape(rows, n)
                    kwargs = dict(scale=scale, shift=shift, axis=0) if affine else {}
                    for threads in (1, 2, 3):
                        dst[...] = 0
                        st.copyto(dst, src, casting="unsafe", num_threads=threads, **kwargs)
                        what = f"{src_dtype}->{dst_dtype} n={n} rows={rows} off={off} {threads}"
                        assert np.array_equal(dst.view(np.uint8), want.view(np.uint8)), what
                        assert (raw[:base] == 0x5A).all(), what
                        assert (raw[base + rows * n * dsz:] == 0x5A).all(), what
    finally:
        _copy._tune(**old)
