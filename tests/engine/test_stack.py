"""strided.stack: N images into one (N, C, H, W) batch in one pass, bit for bit the per-image
results and the numpy formula, for numpy and torch images of mixed strides, channel
reordering, every output dtype, out= reuse; and every refusal."""

from __future__ import annotations

import threading

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st_

import strided as st

torch = pytest.importorskip("torch")

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def fused(images_chw, mean=MEAN, std=STD, max_value=255.0):
    """The documented fused form, from numpy: scale = float32(1 / (max * std)), shift =
    float32(-mean / std), then x * scale + shift with two float32 roundings."""
    m, s = np.asarray(mean, np.float64), np.asarray(std, np.float64)
    scale = np.float32(1 / (max_value * s))[:, None, None]
    shift = np.float32(-m / s)[:, None, None]
    out = []
    for x in images_chw:
        t = np.asarray(x).astype(np.float32) * scale
        out.append(t + shift)
    return np.stack(out)


def torchvision(images_chw, mean=MEAN, std=STD):
    """torchvision's ToDtype(float32, scale=True) + Normalize, written out as its ops."""
    m = torch.as_tensor(mean, dtype=torch.float32).view(-1, 1, 1)
    s = torch.as_tensor(std, dtype=torch.float32).view(-1, 1, 1)
    return torch.stack([torch.as_tensor(np.ascontiguousarray(x)).to(torch.float32)
                        .mul_(1.0 / 255).sub_(m).div_(s) for x in images_chw])


def mixed_images(rng, n=6, h=9, w=11):
    """HWC uint8 images of every kind of layout a loader meets, numpy and torch."""
    big = rng.integers(0, 256, (h + 7, w + 9, 4), dtype=np.uint8)
    images = [
        rng.integers(0, 256, (h, w, 3), dtype=np.uint8),                    # contiguous
        big[3:3 + h, 5:5 + w, :3],                                          # a crop
        rng.integers(0, 256, (h, w, 3), dtype=np.uint8)[::-1, ::-1],        # flipped
        np.asfortranarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)),  # column-major
        rng.integers(0, 256, (3, h, w), dtype=np.uint8).transpose(1, 2, 0),  # planar memory
        torch.from_numpy(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)),
    ]
    return images[:n]


def chw(x):
    return np.asarray(x).transpose(2, 0, 1)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_batch_equals_formula_and_per_image_results(layout):
    images = mixed_images(np.random.default_rng(0))
    batch = st.stack(images, layout, mean=MEAN, std=STD)
    assert isinstance(batch, np.ndarray) and batch.dtype == np.float32
    assert st.layout_of(batch).label == layout
    assert batch.tobytes(order="A") == np.asarray(batch).tobytes(order="A")
    want = fused([chw(x) for x in images])
    assert np.array_equal(batch, want)
    for k, x in enumerate(images):     # the same values as one relayout per image
        one = st.relayout(np.asarray(x).transpose(2, 0, 1), "C", mean=MEAN, std=STD, axis=0)
        assert np.array_equal(batch[k], one)


def test_torch_images_give_a_torch_batch():
    images = [torch.from_numpy(np.asarray(x).copy()) for x in
              mixed_images(np.random.default_rng(1))]
    images[2] = images[2].permute(2, 0, 1).contiguous().permute(1, 2, 0)    # channels first
    batch = st.stack(images, "NHWC", mean=MEAN, std=STD)
    assert isinstance(batch, torch.Tensor)
    assert batch.is_contiguous(memory_format=torch.channels_last)
    assert np.array_equal(batch.numpy(), fused([chw(x) for x in images]))


@pytest.mark.parametrize("dtype", [np.uint8, np.float16, ml_dtypes.bfloat16, np.float32])
def test_output_dtypes(dtype):
    images = mixed_images(np.random.default_rng(2))
    if dtype is np.uint8:        # no conversion: the uint8 CHW batch of GPU pipelines
        batch = st.stack(images)
        assert batch.dtype == np.uint8
        assert np.array_equal(batch, np.stack([chw(x) for x in images]))
        return
    batch = st.stack(images, dtype=dtype, mean=MEAN, std=STD)
    assert batch.dtype == np.dtype(dtype)
    want = fused([chw(x) for x in images])
    if dtype is ml_dtypes.bfloat16:       # torch's rounding from float32
        ref = torch.from_numpy(want).to(torch.bfloat16).view(torch.uint16).numpy()
        assert np.array_equal(batch.view(np.uint16), ref)
    else:
        assert np.array_equal(batch, want.astype(dtype))


def test_bgr_images_with_rgb_parameters():
    """OpenCV gives BGR: channels=(2, 1, 0) makes an RGB batch, and the parameters are given
    in RGB order, the batch's, for numpy and torch sources alike."""
    rng = np.random.default_rng(3)
    rgb = [rng.integers(0, 256, (8, 10, 3), dtype=np.uint8) for _ in range(4)]
    bgr = [np.ascontiguousarray(x[:, :, ::-1]) for x in rgb]
    want = fused([chw(x) for x in rgb])
    assert np.array_equal(st.stack(bgr, mean=MEAN, std=STD, channels=(2, 1, 0)), want)
    tb = st.stack([torch.from_numpy(x) for x in bgr], mean=MEAN, std=STD, channels=(2, 1, 0))
    assert np.array_equal(tb.numpy(), want)
    # without the reordering the values differ: the test would catch a lost channels=
    assert not np.array_equal(st.stack(bgr, mean=MEAN, std=STD), want)


@pytest.mark.parametrize("picks", [(0,), (1, 1, 1), (3, 1), (0, 2, 1), (2, 0, 1, 3), (3, 2, 1, 0)])
def test_channel_picks(picks):
    """Any selection of the images' channels (uneven steps go one channel a piece)."""
    rng = np.random.default_rng(4)
    rgba = [rng.integers(0, 256, (5, 7, 4), dtype=np.uint8) for _ in range(3)]
    c = len(picks)
    mean = tuple(float(v) for v in rng.uniform(0, 1, c))
    std = tuple(float(v) for v in rng.uniform(0.1, 1, c))
    batch = st.stack(rgba, mean=mean, std=std, channels=picks)
    assert np.array_equal(batch, fused([chw(x)[list(picks)] for x in rgba], mean, std))


def test_image_layouts():
    rng = np.random.default_rng(5)
    planar = [rng.integers(0, 256, (3, 6, 4), dtype=np.uint8) for _ in range(3)]
    assert np.array_equal(st.stack(planar, image_layout="CHW", mean=MEAN, std=STD),
                          fused(planar))
    gray = [rng.integers(0, 256, (6, 4), dtype=np.uint8) for _ in range(3)]
    batch = st.stack(gray, image_layout="HW", mean=0.5, std=0.25)
    assert batch.shape == (3, 1, 6, 4)
    assert np.array_equal(batch, fused([g[None] for g in gray], (0.5,), (0.25,)))


def test_scale_shift_and_float_images():
    rng = np.random.default_rng(6)
    images = [rng.standard_normal((4, 5, 3)).astype(np.float32) for _ in range(3)]
    batch = st.stack(images, scale=(1.0, 2.0, 3.0), shift=-0.5)
    want = np.stack([chw(x) * np.float32([1, 2, 3])[:, None, None] + np.float32(-0.5)
                     for x in images])
    assert np.array_equal(batch, want)
    # mean/std on float images: max_value 1
    assert np.array_equal(st.stack(images, mean=MEAN, std=STD),
                          fused([chw(x) for x in images], max_value=1.0))


def test_torchvision_rounding_is_bit_exact():
    rng = np.random.default_rng(7)
    images = [rng.integers(0, 256, (16, 24, 3), dtype=np.uint8) for _ in range(5)]
    want = torchvision([chw(x) for x in images])
    got = st.stack(images, mean=MEAN, std=STD, rounding="torchvision")
    assert torch.equal(torch.from_numpy(got), want)
    got = st.stack([torch.from_numpy(x) for x in images], "NHWC", mean=MEAN, std=STD,
                   rounding="torchvision")
    assert torch.equal(got, want)
    # and the fused form is not bit-exact to it on these images (else the test proves nothing)
    assert not torch.equal(torch.from_numpy(st.stack(images, mean=MEAN, std=STD)), want)


@pytest.mark.parametrize("library", ["numpy", "torch"])
def test_out_reused(library):
    rng = np.random.default_rng(8)
    images = mixed_images(rng, n=4)
    if library == "numpy":
        out = np.full((4, 5, 9, 11), np.nan, np.float32)[:, 1:4]      # a slice of a buffer
    else:
        out = torch.full((4, 9, 11, 3), float("nan")).permute(0, 3, 1, 2)  # channels-last
    for _ in range(2):
        assert st.stack(images, mean=MEAN, std=STD, out=out) is out
        assert np.array_equal(np.asarray(out), fused([chw(x) for x in images]))


def test_out_sharing_memory_with_an_image():
    """An image that lies in out's memory is read as it was (staged first)."""
    buf = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    images = [buf[0].transpose(1, 2, 0).copy(), buf[1].transpose(1, 2, 0)]   # the 2nd in out
    want = fused([chw(x) for x in images], max_value=1.0)
    st.stack(images, mean=MEAN, std=STD, out=buf)
    assert np.array_equal(buf, want)


def test_alike_images_in_out_memory_are_staged():
    """Images alike (one description, located by address) that lie in out's memory are
    described one by one and staged, as any other image in out."""
    buf = np.arange(3 * 3 * 4 * 5, dtype=np.float32).reshape(3, 3, 4, 5)
    images = [buf[k].transpose(1, 2, 0) for k in range(3)]
    want = fused([chw(x) for x in images], max_value=1.0)
    st.stack(images, mean=MEAN, std=STD, out=buf)
    assert np.array_equal(buf, want)


def test_alike_images_are_located_and_others_described():
    """A batch of plain arrays alike is located by address (the compiled reader answers for
    all of it); a subclass or other strides make it describe each image;
    both give the formula."""
    from strided.interop import _ndarray

    class Sub(np.ndarray):
        pass

    rng = np.random.default_rng(11)
    images = [rng.integers(0, 256, (5, 7, 3), dtype=np.uint8) for _ in range(4)]
    assert _ndarray.alike_addresses(tuple(images), images[0]) == [
        x.ctypes.data for x in images]
    others = [[*images[:3], images[3].view(Sub)], [*images[:3], images[3].copy(order="F")]]
    for batch in [images, *others]:
        if batch is not images:
            assert _ndarray.alike_addresses(tuple(batch), batch[0]) is None
        got = st.stack(batch, mean=MEAN, std=STD, num_threads=2)
        assert np.array_equal(got, fused([chw(x) for x in batch]))
    assert _ndarray.alike_addresses(images, images[0]) is None          # a list: not read
    assert _ndarray.alike_addresses((images[0],), "not an array") is None


def test_an_image_resized_while_out_is_read_is_refused():
    """out's own code resizes an image after the batch was located: nothing is written, and
    the error names the image."""
    images = [np.full((4, 5, 3), k, np.uint8) for k in range(3)]
    target = np.full((3, 3, 4, 5), -1.0, np.float32)

    class Out:
        @property
        def __array_interface__(self):
            images[1].resize((2, 5, 3), refcheck=False)
            return target.__array_interface__

    with pytest.raises(ValueError, match=r"images\[1\] changed while strided"):
        st.stack(images, mean=MEAN, std=STD, out=Out())
    assert (target == -1).all()


def test_out_with_the_batch_dimension_inside():
    """out whose images interleave in memory (N not outermost) is written an image at a time."""
    rng = np.random.default_rng(9)
    images = [rng.integers(0, 256, (4, 6, 3), dtype=np.uint8) for _ in range(3)]
    out = np.empty((3, 4, 6, 3), np.float32).transpose(3, 0, 1, 2)    # C, H, W, N in memory
    assert out.shape == (3, 3, 4, 6)
    st.stack(images, mean=MEAN, std=STD, out=out)
    assert np.array_equal(out, fused([chw(x) for x in images]))


def test_empty_batch_and_empty_images():
    out = np.empty((0, 3, 4, 5), np.float32)
    assert st.stack([], out=out) is out
    empty = [np.zeros((0, 5, 3), np.uint8)] * 2
    assert st.stack(empty, mean=MEAN, std=STD).shape == (2, 3, 0, 5)


@pytest.mark.parametrize("images, kwargs, error, match", [
    ([], {}, ValueError, "images is empty"),
    ("abc", {}, TypeError, "images must be a sequence"),
    (iter([np.zeros((2, 2, 3), np.uint8)]), {}, TypeError, "images must be a sequence"),
    ([np.zeros((2, 2, 3), np.uint8), np.zeros((2, 3, 3), np.uint8)], {}, ValueError,
     r"images\[1\] has \(C, H, W\) sizes \(3, 2, 3\)"),
    ([np.zeros((2, 2, 3), np.uint8), np.zeros((2, 2, 3), np.int16)], {}, ValueError,
     r"images\[1\] has dtype int16"),
    ([np.zeros((2, 2), np.uint8)], {}, ValueError, "rank 3"),
    ([np.zeros((2, 2, 3), np.uint8)], {"channels": (0, 3)}, ValueError,
     r"channels\[1\] is 3 but the images have 3 channels"),
    ([np.zeros((2, 2, 3), np.uint8)], {"channels": ()}, ValueError, "channels is empty"),
    ([np.zeros((2, 2, 3), np.uint8)], {"channels": "rgb"}, TypeError, "channels must be"),
    ([np.zeros((2, 2, 3), np.uint8)], {"image_layout": "WHC"}, ValueError, "image_layout"),
    ([np.zeros((2, 2, 3), np.uint8)], {"out": np.zeros((1, 3, 2, 3), np.float32)},
     ValueError, r"out has shape \(1, 3, 2, 3\) but the batch"),
    ([np.zeros((2, 2, 3), np.uint8)], {"out": np.zeros((1, 3, 2, 2), np.float32),
                                       "dtype": np.float16}, ValueError, "dtype is float16"),
    ([np.zeros((2, 2, 3), np.uint8)], {"mean": 0.5, "scale": 2.0}, ValueError,
     "either scale/shift or the image form"),
    ([np.zeros((2, 2, 3), np.uint8)], {"std": (1.0, 0.0, 1.0)}, ValueError, r"std\[1\] is 0"),
    ([np.zeros((2, 2, 3), np.uint8)], {"max_value": -1}, ValueError, "max_value is -1"),
    ([np.zeros((2, 2, 3), np.uint8)], {"mean": (0.5,) * 4}, ValueError,
     "mean has 4 values but axis 1 has 3"),
    ([np.zeros((2, 2, 3), np.uint8)], {"std": (0.5,) * 4, "rounding": "torchvision"},
     ValueError, "std has 4 values but axis 1 has 3"),
    ([np.zeros((2, 2, 3), np.uint8)], {"rounding": "exact"}, ValueError, "rounding must be"),
    ([np.zeros((2, 2, 3), np.uint8)], {"rounding": "torchvision", "dtype": np.float16},
     TypeError, "result is float32, not float16"),
    ([np.zeros((2, 2, 3), np.float64)], {"rounding": "torchvision"}, TypeError,
     "a float64 source would be rounded first"),
])
def test_refusals(images, kwargs, error, match):
    with pytest.raises(error, match=match):
        st.stack(images, **kwargs)


def test_read_only_out_is_refused():
    out = np.zeros((1, 3, 2, 2), np.float32)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="out is read-only"):
        st.stack([np.zeros((2, 2, 3), np.uint8)], mean=0.5, out=out)


def test_several_threads_at_once():
    rng = np.random.default_rng(10)
    images = mixed_images(rng, n=5, h=40, w=30)
    want = fused([chw(x) for x in images])
    errors = []

    def work():
        for _ in range(8):
            if not np.array_equal(st.stack(images, mean=MEAN, std=STD, num_threads=2), want):
                errors.append("wrong")

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


@settings(max_examples=30, deadline=None)
@given(seed=st_.integers(0, 2**31), n=st_.integers(1, 5), h=st_.integers(1, 9),
       w=st_.integers(1, 9), c=st_.sampled_from([1, 3, 4]), flips=st_.lists(st_.booleans(),
       min_size=3, max_size=3), order=st_.permutations((0, 1, 2)),
       layout=st_.sampled_from(["NCHW", "NHWC", (1, 0, 2, 3)]))
def test_property_any_layouts(seed, n, h, w, c, flips, order, layout):
    """Random images (any memory order, flips) into any batch layout: the formula exactly."""
    rng = np.random.default_rng(seed)
    images = []
    for _ in range(n):
        phys = tuple((h, w, c)[o] for o in order)
        x = rng.integers(0, 256, phys, dtype=np.uint8).transpose(np.argsort(order))
        for axis, flip in enumerate(flips):
            if flip:
                x = np.flip(x, axis)
        images.append(x)
    mean = tuple(float(v) for v in rng.uniform(0, 1, c))
    std = tuple(float(v) for v in rng.uniform(0.1, 1, c))
    batch = st.stack(images, layout, mean=mean, std=std, num_threads=2)
    assert np.array_equal(batch, fused([chw(x) for x in images], mean, std))
