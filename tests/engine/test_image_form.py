"""The image form of every converting call (mean, std, max_value, rounding="torchvision") and
``out=`` on relayout, to_blocked and from_blocked, against numpy and torch's op sequence."""

from __future__ import annotations

import numpy as np
import pytest

import strided as st
from strided._normalize import ImageForm

torch = pytest.importorskip("torch")

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def fused_chw(x, mean=MEAN, std=STD, max_value=255.0):
    m, s = np.asarray(mean, np.float64), np.asarray(std, np.float64)
    t = x.astype(np.float32) * np.float32(1 / (max_value * s))[:, None, None]
    return t + np.float32(-m / s)[:, None, None]


def torch_ops(x_chw, mean=MEAN, std=STD, integer=True):
    t = torch.as_tensor(np.ascontiguousarray(x_chw)).to(torch.float32)
    if integer:
        t = t.mul_(1.0 / 255)
    m = torch.as_tensor(mean, dtype=torch.float32).view(-1, 1, 1)
    s = torch.as_tensor(std, dtype=torch.float32).view(-1, 1, 1)
    return t.sub_(m).div_(s)


def test_copyto_image_form():
    img = np.random.default_rng(0).integers(0, 256, (5, 6, 3), dtype=np.uint8)
    chw = np.empty((3, 5, 6), np.float32)
    st.copyto(chw.transpose(1, 2, 0), img, mean=MEAN, std=STD, axis=2, casting="unsafe")
    assert np.array_equal(chw, fused_chw(img.transpose(2, 0, 1)))
    st.copyto(chw.transpose(1, 2, 0), img, mean=MEAN, std=STD, axis=2, casting="unsafe",
              rounding="torchvision")
    assert torch.equal(torch.from_numpy(chw), torch_ops(img.transpose(2, 0, 1)))


@pytest.mark.parametrize("src_dtype", [np.uint8, np.int8, np.uint16, np.float32, np.float16])
def test_torchvision_form_for_every_source_it_takes(src_dtype):
    rng = np.random.default_rng(1)
    info = np.iinfo(src_dtype) if np.dtype(src_dtype).kind in "iu" else None
    if info is not None:
        x = rng.integers(info.min, info.max, (3, 7, 9), endpoint=True).astype(src_dtype)
    else:
        x = rng.standard_normal((3, 7, 9)).astype(src_dtype)
    got = st.relayout(x, "C", mean=MEAN, std=STD, axis=0, rounding="torchvision")
    t = torch.as_tensor(x.astype(np.int32) if src_dtype is np.uint16 else x).to(torch.float32)
    if info is not None:
        t = t.mul_(1.0 / float(info.max))
    want = t.sub_(torch.tensor(MEAN).view(-1, 1, 1)).div_(torch.tensor(STD).view(-1, 1, 1))
    assert torch.equal(torch.from_numpy(got), want)


def test_torchvision_scalar_parameters_and_no_mean():
    x = np.arange(60, dtype=np.uint8).reshape(3, 4, 5)
    got = st.relayout(x, "C", std=0.3, rounding="torchvision")
    want = torch.from_numpy(x).to(torch.float32).mul_(1.0 / 255).div_(torch.tensor(0.3))
    assert torch.equal(torch.from_numpy(got), want)
    got = st.relayout(x, "C", std=STD, axis=0, rounding="torchvision")   # vector std only
    want = torch.from_numpy(x).to(torch.float32).mul_(1.0 / 255).div_(
        torch.tensor(STD).view(-1, 1, 1))
    assert torch.equal(torch.from_numpy(got), want)


def test_max_value_defaults_and_explicit():
    x = np.arange(24, dtype=np.uint16).reshape(3, 2, 4) * 1000
    got = st.relayout(x, "C", mean=MEAN, std=STD, axis=0)
    assert np.array_equal(got, fused_chw(x, max_value=65535.0))
    got = st.relayout(x, "C", mean=MEAN, std=STD, axis=0, max_value=4095)   # 12-bit data
    assert np.array_equal(got, fused_chw(x, max_value=4095.0))


def test_image_form_constants():
    """The translation itself, in float64: scale = 1/(max*std), shift = -mean/std."""
    form = ImageForm.of(MEAN, STD, None, "fused")
    scale, shift, divisor = form.affine("uint8", "float32")
    assert scale == tuple(1 / (255 * s) for s in STD)
    assert shift == tuple(-m / s for m, s in zip(MEAN, STD))
    assert divisor is None
    assert ImageForm.of(None, None, None, "fused") is None
    assert ImageForm.of(0.5, None, 1.0, "fused").affine("float32", "float32") == (None, -0.5,
                                                                                  None)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(mean=(0.1, 0.2), std=(1.0, 2.0, 3.0)), ValueError, "mean has 2 values but std has 3"),
    (dict(std=float("nan")), ValueError, "std is nan"),
    (dict(max_value=0), ValueError, "max_value is 0"),
    (dict(max_value=(1, 2)), TypeError, "max_value must be one number"),
    (dict(mean="0.5"), TypeError, "mean"),
    (dict(rounding=None), ValueError, "rounding must be one of"),
])
def test_image_form_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        st.relayout(np.zeros((3, 2, 2), np.uint8), "C", axis=0, **kwargs)


def test_to_blocked_image_form_pads_with_the_quantized_zero():
    """An int8 blocked result of the image form: the padding holds what 0 quantizes to."""
    x = np.random.default_rng(2).integers(0, 256, (1, 3, 2, 2), dtype=np.uint8)
    q = st.to_blocked(x, "NCHW4", dtype=np.int8, mean=0.5, std=0.01)
    t = x.astype(np.float32) * np.float32(1 / (255 * 0.01)) + np.float32(-0.5 / 0.01)
    want = np.clip(np.rint(t), -128, 127).astype(np.int8)
    assert np.array_equal(q[:, 0, :, :, :3].transpose(0, 3, 1, 2), want)
    assert (q[..., 3] == -50).all()          # saturate(rint(-0.5 / 0.01))


# ---- out= ------------------------------------------------------------------------------------


@pytest.mark.parametrize("library", ["numpy", "torch"])
def test_relayout_out(library):
    x = np.random.default_rng(3).integers(0, 256, (2, 3, 4, 5), dtype=np.uint8)
    want = st.relayout(x, "NHWC", dtype=np.float32, scale=0.5)
    if library == "numpy":
        out = np.full((2, 4, 5, 3), np.nan, np.float32).transpose(0, 3, 1, 2)
    else:
        out = torch.full((2, 3, 4, 5), float("nan")).to(memory_format=torch.channels_last)
        x = torch.from_numpy(x)
    assert st.relayout(x, "NHWC", scale=0.5, out=out) is out
    assert np.array_equal(np.asarray(out), want)


def test_relayout_out_refusals():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(ValueError, match=r"out has shape \(3, 2\) but x has shape \(2, 3\)"):
        st.relayout(x, "C", out=np.zeros((3, 2), np.float32))
    with pytest.raises(ValueError, match="out has element strides"):
        st.relayout(x, "F", out=np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match="dtype is float64 but out has dtype float32"):
        st.relayout(x, "C", dtype=np.float64, out=np.zeros((2, 3), np.float32))
    ro = np.zeros((2, 3), np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        st.relayout(x, "C", out=ro)


def test_relayout_out_sharing_memory_with_x():
    """In place through a view: the result is x's values as they were."""
    buf = np.arange(12, dtype=np.float32)
    x = buf.reshape(3, 4)
    out = buf.reshape(4, 3).T           # the same memory, column-major
    want = x.copy()
    st.relayout(x, "F", out=out)
    assert np.array_equal(out, want)


@pytest.mark.parametrize("c", [3, 8, 6])
def test_to_blocked_out_writes_padding(c):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, c, 3, 2)).astype(np.float32)
    want = st.to_blocked(x, "NCHW4", dtype=np.int8, scale=10.0, shift=2.0)
    out = np.full(want.shape, 99, np.int8)     # garbage in the padding lanes too
    assert st.to_blocked(x, "NCHW4", dtype=np.int8, scale=10.0, shift=2.0, out=out) is out
    assert np.array_equal(out, want)
    tout = torch.full(want.shape, 99, dtype=torch.int8)
    st.to_blocked(torch.from_numpy(x), "NCHW4", dtype=torch.int8, scale=10.0, shift=2.0,
                  out=tout)
    assert np.array_equal(tout.numpy(), want)


def test_to_blocked_out_any_strides_and_4bit():
    x = np.random.default_rng(5).standard_normal((1, 6, 2, 3)).astype(np.float32)
    want = st.to_blocked(x, "NCHW8")
    out = np.full((1, 1, 2, 3, 16), np.nan, np.float32)[..., ::2]     # strided lanes
    st.to_blocked(x, "NCHW8", out=out)
    assert np.array_equal(out, want)
    q = st.to_blocked(x, "NCHW64", dtype="uint4", scale=2.0, shift=8.0)
    out4 = np.full(q.shape, 0xAB, np.uint8)
    assert st.to_blocked(x, "NCHW64", dtype="uint4", scale=2.0, shift=8.0, out=out4) is out4
    assert np.array_equal(out4, q)


def test_to_blocked_out_refusals():
    x = np.zeros((1, 3, 2, 2), np.float32)
    with pytest.raises(ValueError, match=r"out has shape \(1, 1, 2, 2, 3\) but the result"):
        st.to_blocked(x, "NCHW4", out=np.zeros((1, 1, 2, 2, 3), np.float32))
    with pytest.raises(ValueError, match="dtype is int8 but out has dtype float32"):
        st.to_blocked(x, "NCHW4", dtype=np.int8, out=np.zeros((1, 1, 2, 2, 4), np.float32))
    with pytest.raises(ValueError, match="elements that overlap"):
        st.to_blocked(x, "NCHW4", out=np.lib.stride_tricks.as_strided(
            np.zeros(4, np.float32), (1, 1, 2, 2, 4), (0, 0, 0, 0, 4)))


def test_from_blocked_out():
    rng = np.random.default_rng(6)
    y = rng.integers(-128, 128, (2, 2, 3, 4, 4)).astype(np.int8)
    want = st.from_blocked(y, "NCHW4", channels=7, dtype=np.float32, scale=0.1)
    out = np.empty((2, 3, 4, 7), np.float32).transpose(0, 3, 1, 2)     # NHWC memory
    assert st.from_blocked(y, "NCHW4", channels=7, dtype=np.float32, scale=0.1,
                           out=out) is out
    assert np.array_equal(out, want)
    out2 = np.empty((2, 7, 3, 4), np.float32)
    st.from_blocked(y, "NCHW4", channels=7, scale=0.1, out=out2)      # dtype from out
    assert np.array_equal(out2, want)


def test_from_blocked_out_sharing_memory_with_y():
    """out over y's own memory: y is staged, the result is exact."""
    buf = np.arange(2 * 4 * 2, dtype=np.float32)
    y = buf.reshape(1, 1, 2, 2, 4)
    want = st.from_blocked(y, "NCHW4", channels=4)
    out = buf.reshape(1, 4, 2, 2)
    st.from_blocked(y, "NCHW4", channels=4, out=out)
    assert np.array_equal(out, want)
