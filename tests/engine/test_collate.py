"""``strided.Collate``, the ``collate_fn`` for torch's ``DataLoader`` (``batch.py``), and the data
loader recipe (``docs/recipes/dataloader.rst``).

Oracles: torch's own ``default_collate`` for every field that is not the image; for the images,
the two-rounding formula in numpy or torch (``x * float32(1 / (255 * std)) + float32(-mean /
std)``, float32 throughout, no fused multiply-add: exactly what ``rounding="fused"`` computes), and
torchvision's ``ToDtype(float32, scale=True)`` + ``Normalize`` written out as the torch ops they
are (``img.to(float32).mul_(1.0 / 255)``, ``sub_(mean).div_(std)``) for ``rounding="torchvision"``;
every comparison is exact (``torch.equal``). DataLoaders with forked and spawned workers run in a
fresh interpreter under a timeout (``isolated.run_isolated``), so that a hang or a crash fails a
test instead of taking pytest down.
"""

from __future__ import annotations

import collections
import doctest
import pickle
import re
import textwrap
from pathlib import Path

import numpy as np
import pytest
from isolated import run_isolated

import strided as st

torch = pytest.importorskip("torch")
from torch.utils.data import default_collate  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "docs" / "recipes" / "dataloader.rst"

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
BGR = (2, 1, 0)

Sample = collections.namedtuple("Sample", "image label name")


# ---- references ------------------------------------------------------------------------------


def numpy_reference(images, mean=MEAN, std=STD, channels=None, max_value=255.0):
    """The fused form in numpy: (N, H, W, C) images -> (N, C, H, W) float32, two roundings."""
    x = np.stack([np.asarray(im) for im in images])
    if channels is not None:
        x = x[..., list(channels)]
    x = x.transpose(0, 3, 1, 2).astype(np.float32)
    m, s = np.asarray(mean, np.float64), np.asarray(std, np.float64)
    scale = (1.0 / (max_value * s)).astype(np.float32).reshape(-1, 1, 1)
    shift = (-m / s).astype(np.float32).reshape(-1, 1, 1)
    product = x * scale             # rounded to float32
    return product + shift          # rounded again


def torch_reference(image, mean=MEAN, std=STD, channels=None):
    """The fused form with torch ops, one (H, W, C) uint8 image -> (C, H, W) float32."""
    x = np.ascontiguousarray(image if channels is None else image[..., list(channels)])
    t = torch.from_numpy(x).permute(2, 0, 1).to(torch.float32)
    m, s = np.asarray(mean, np.float64), np.asarray(std, np.float64)
    scale = torch.tensor(1.0 / (255.0 * s), dtype=torch.float32).view(-1, 1, 1)
    shift = torch.tensor(-m / s, dtype=torch.float32).view(-1, 1, 1)
    return t.mul(scale).add(shift)


def torchvision_reference(image, mean=MEAN, std=STD, channels=None):
    """torchvision's ToDtype(float32, scale=True) then Normalize(mean, std), as torch ops."""
    x = np.ascontiguousarray(image if channels is None else image[..., list(channels)])
    t = torch.from_numpy(x).permute(2, 0, 1)
    t = t.to(torch.float32).mul_(1.0 / 255)
    m = torch.as_tensor(mean, dtype=torch.float32).view(-1, 1, 1)
    s = torch.as_tensor(std, dtype=torch.float32).view(-1, 1, 1)
    return t.sub_(m).div_(s)


def images(n=4, h=6, w=7, c=3, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, (h, w, c), dtype=np.uint8) for _ in range(n)]


def assert_same(actual, expected, *, loose=False):
    """Equal structure, types and values (tensors exactly, dtypes included). ``loose``: a list
    and a tuple of the same items are the same (see test_sequence_types_of_default_collate)."""
    if loose and isinstance(expected, (tuple, list)) and not hasattr(expected, "_fields"):
        assert isinstance(actual, (tuple, list)), type(actual)
    else:
        assert type(actual) is type(expected), (type(actual), type(expected))
    if isinstance(expected, torch.Tensor):
        assert actual.dtype == expected.dtype and actual.shape == expected.shape
        assert torch.equal(actual, expected)
    elif isinstance(expected, dict):
        assert list(actual) == list(expected)
        for k in expected:
            assert_same(actual[k], expected[k], loose=loose)
    elif isinstance(expected, (tuple, list)):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_same(a, e, loose=loose)
    else:
        assert actual == expected


def assert_fields(batch, samples, image_at, images):
    """Each field of ``batch`` is default_collate of the samples' values of that field (the
    image: the numpy formula of ``images``), and the whole is default_collate's batch up to
    lists for tuples."""
    fields = range(len(samples[0])) if not isinstance(samples[0], dict) else list(samples[0])
    for i in fields:
        if i == image_at:
            assert_same(batch[i], torch.from_numpy(images))
        else:
            # (a field of strings is the tuple default_collate makes of the whole batch,
            # a list when it collates the field alone: compared loosely here, exactly below)
            assert_same(batch[i], default_collate([s[i] for s in samples]), loose=True)
    expected = default_collate(samples)
    if hasattr(expected, "_fields"):
        expected = expected._replace(**{expected._fields[image_at]: torch.from_numpy(images)})
    else:
        expected[image_at] = torch.from_numpy(images)
    assert_same(batch, expected)


# The data set of the loader tests: importable by spawned workers (``from test_collate import
# ...``), torch-free so that it is a plain map-style data set.
class SyntheticBGR:
    """24 BGR uint8 HWC images of different sizes (fixed seed), brought to SIZE in
    ``__getitem__`` by slicing only: every other one halved (``[::2, ::2]``), then the centre
    cropped, every third one flipped left-right (``[:, ::-1]``): views, never copies."""

    SIZE = (20, 24)

    def __init__(self, n=24, seed=1234):
        rng = np.random.default_rng(seed)
        h, w = self.SIZE
        self.images = []
        for k in range(n):
            factor = 2 if k % 2 else 1
            size = (factor * (h + int(rng.integers(0, 9))), factor * (w + int(rng.integers(0, 9))))
            self.images.append(rng.integers(0, 256, (*size, 3), dtype=np.uint8))
        self.labels = [int(v) for v in rng.integers(0, 10, n)]

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        img = self.images[i]
        if i % 2:
            img = img[::2, ::2]                         # "resize": nearest, by a stride
        h, w = self.SIZE
        top, left = (img.shape[0] - h) // 2, (img.shape[1] - w) // 2
        img = img[top:top + h, left:left + w]
        if i % 3 == 0:
            img = img[:, ::-1]
        return img, self.labels[i]


# ---- structures --------------------------------------------------------------------------------


def test_plain_images_numpy_and_torch():
    ims = images()
    expected = torch.from_numpy(numpy_reference(ims))
    collate = st.Collate(mean=MEAN, std=STD)
    assert_same(collate(ims), expected)
    assert_same(collate([torch.from_numpy(im) for im in ims]), expected)
    assert_same(collate(tuple(ims)), expected)


def test_mixed_numpy_and_torch_images():
    ims = images(seed=1)
    expected = torch.from_numpy(numpy_reference(ims))
    collate = st.Collate(mean=MEAN, std=STD)
    for first_torch in (False, True):
        mixed = [torch.from_numpy(im) if (k % 2 == 0) == first_torch else im
                 for k, im in enumerate(ims)]
        assert_same(collate(mixed), expected)


def test_tuples_with_int_labels():
    ims = images(seed=2)
    samples = [(im, k) for k, im in enumerate(ims)]
    batch = st.Collate(mean=MEAN, std=STD)(samples)
    assert isinstance(batch, (tuple, list)) and batch[1].dtype == torch.int64
    assert_fields(batch, samples, 0, numpy_reference(ims))
    _, labels = batch                  # as a training loop unpacks it
    assert labels.tolist() == list(range(len(ims)))


def test_lists_with_tensor_and_string_labels():
    ims = images(seed=3)
    samples = [[im, torch.tensor([k, -k], dtype=torch.int32), f"{k}.png", 0.5 * k]
               for k, im in enumerate(ims)]
    batch = st.Collate(mean=MEAN, std=STD, channels=BGR)(samples)
    assert type(batch) is list         # as default_collate gives for lists
    assert_fields(batch, samples, 0, numpy_reference(ims, channels=BGR))
    assert list(batch[2]) == [f"{k}.png" for k in range(len(ims))]
    assert batch[1].dtype == torch.int32 and batch[3].dtype == torch.float64


@pytest.mark.parametrize("key", [1, -1])
def test_tuples_with_the_image_elsewhere(key):
    ims = images(seed=4)
    samples = [(k, im) for k, im in enumerate(ims)]
    batch = st.Collate(key=key, mean=MEAN, std=STD)(samples)
    assert_fields(batch, samples, 1, numpy_reference(ims))


def test_dicts():
    ims = images(seed=5)
    samples = [{"label": k, "image": im, "name": str(k), "box": np.array([k, 2.0 * k])}
               for k, im in enumerate(ims)]
    batch = st.Collate(mean=MEAN, std=STD)(samples)
    assert type(batch) is dict
    assert list(batch) == ["label", "image", "name", "box"]      # the samples' order of keys
    assert_fields(batch, samples, "image", numpy_reference(ims))

    renamed = [{"pixels": s["image"], "label": s["label"]} for s in samples]
    batch = st.Collate(key="pixels", mean=MEAN, std=STD)(renamed)
    assert_fields(batch, renamed, "pixels", numpy_reference(ims))


def test_namedtuples():
    ims = images(seed=6)
    samples = [Sample(im, k, f"n{k}") for k, im in enumerate(ims)]
    batch = st.Collate(mean=MEAN, std=STD)(samples)
    assert type(batch) is Sample
    assert_same(batch.image, torch.from_numpy(numpy_reference(ims)))
    assert_same(batch.label, default_collate([s.label for s in samples]))
    assert list(batch.name) == [s.name for s in samples]
    assert st.Collate(key=2)([("a", 0, im) for im in ims])[2].dtype == torch.uint8


def test_sequence_types_of_default_collate():
    ims = images(seed=15)
    samples = [(im, k, f"{k}.png") for k, im in enumerate(ims)]
    batch = st.Collate()(samples)
    expected = default_collate(samples)
    expected[0] = torch.from_numpy(np.stack(ims).transpose(0, 3, 1, 2).copy())
    assert_same(batch, expected)


def test_strided_images_crops_flips_and_views():
    base = images(n=3, h=12, w=14, seed=7)
    views = [base[0][2:8, 3:10], base[1][::2, ::2][:6, :7], base[2][:6, :7][:, ::-1]]
    t_views = [torch.from_numpy(np.ascontiguousarray(base[0]))[2:8, 3:10], *views[1:]]
    expected = torch.from_numpy(numpy_reference(views, channels=BGR))
    collate = st.Collate(mean=MEAN, std=STD, channels=BGR)
    assert_same(collate(views), expected)
    assert_same(collate(t_views), expected)
    chw = [np.ascontiguousarray(v.transpose(2, 0, 1)) for v in views]
    assert_same(st.Collate(image_layout="CHW", mean=MEAN, std=STD, channels=BGR)(chw), expected)


def test_no_normalisation_keeps_uint8():
    ims = images(seed=8)
    batch = st.Collate()(ims)
    assert_same(batch, torch.from_numpy(np.stack(ims).transpose(0, 3, 1, 2).copy()))
    batch = st.Collate(channels=BGR)([(im, 0) for im in ims])[0]
    assert_same(batch, torch.from_numpy(np.stack(ims)[..., ::-1].transpose(0, 3, 1, 2).copy()))


def test_channels_last():
    ims = images(seed=9)
    batch = st.Collate("NHWC", mean=MEAN, std=STD, channels=BGR)(ims)
    assert batch.is_contiguous(memory_format=torch.channels_last)
    assert_same(batch, torch.from_numpy(numpy_reference(ims, channels=BGR)))


def test_the_batch_owns_its_memory():
    ims = images(seed=10)
    batch = st.Collate(mean=MEAN, std=STD)(ims)
    ims[0][...] = 0
    assert torch.equal(batch[0], torch_reference(images(seed=10)[0]))


# ---- rounding and dtypes -----------------------------------------------------------------------


@pytest.mark.parametrize("channels", [None, BGR])
def test_torchvision_rounding_is_bit_for_bit(channels):
    rng = np.random.default_rng(11)
    ims = [rng.integers(0, 256, (9, 13, 3), dtype=np.uint8) for _ in range(5)]
    ims[1] = ims[1][:, ::-1]
    expected = torch.stack([torchvision_reference(im, channels=channels) for im in ims])
    collate = st.Collate(mean=MEAN, std=STD, channels=channels, rounding="torchvision")
    assert_same(collate(ims), expected)
    assert_same(collate([torch.from_numpy(np.ascontiguousarray(im)) for im in ims]), expected)
    labelled = collate([(im, k) for k, im in enumerate(ims)])
    assert_same(labelled[0], expected)
    nhwc = st.Collate("NHWC", mean=MEAN, std=STD, channels=channels, rounding="torchvision")(ims)
    assert nhwc.is_contiguous(memory_format=torch.channels_last)
    assert_same(nhwc, expected)


def test_torchvision_rounding_every_value():
    """All 256 uint8 values in every channel, a scalar and a per-channel mean/std."""
    ramp = np.arange(256, dtype=np.uint8).reshape(16, 16, 1).repeat(3, axis=2)
    for mean, std in ((MEAN, STD), (0.5, 0.25), ((0.1, 0.9, 0.5), 0.3)):
        expected = torchvision_reference(ramp, mean, std)[None]
        got = st.Collate(mean=mean, std=std, rounding="torchvision")([ramp])
        assert_same(got, expected)


def test_fused_rounding_every_value():
    ramp = np.arange(256, dtype=np.uint8).reshape(16, 16, 1).repeat(3, axis=2)
    got = st.Collate(mean=MEAN, std=STD)([ramp, ramp[::-1]])
    assert_same(got, torch.stack([torch_reference(ramp), torch_reference(ramp[::-1])]))
    assert_same(got, torch.from_numpy(numpy_reference([ramp, ramp[::-1]])))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_dtypes(dtype):
    ims = images(n=5, seed=12)
    ims[2] = ims[2][::-1]
    expected = torch.from_numpy(numpy_reference(ims, channels=BGR)).to(dtype)
    collate = st.Collate(dtype=dtype, mean=MEAN, std=STD, channels=BGR)
    assert_same(collate(ims), expected)
    assert_same(collate([torch.from_numpy(np.ascontiguousarray(im)) for im in ims]), expected)
    by_name = st.Collate(dtype=str(dtype).removeprefix("torch."), mean=MEAN, std=STD,
                         channels=BGR)
    assert_same(by_name([(im, 0) for im in ims])[0], expected)


def test_torchvision_rounding_refuses_half_dtypes():
    collate = st.Collate(dtype=torch.float16, mean=MEAN, std=STD, rounding="torchvision")
    with pytest.raises(TypeError, match="float32"):
        collate(images())


# ---- repr, pickling, errors --------------------------------------------------------------------


def test_repr():
    assert repr(st.Collate()) == "Collate('NCHW')"
    collate = st.Collate("NHWC", key=1, mean=MEAN, std=STD, channels=BGR)
    text = "Collate('NHWC', key=1, mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225), " \
           "channels=(2, 1, 0))"
    assert repr(collate) == text
    assert repr(eval(text, {"Collate": st.Collate})) == text


def test_pickles():
    collate = st.Collate("NHWC", key="img", mean=MEAN, std=STD, channels=BGR,
                         rounding="torchvision")
    copy = pickle.loads(pickle.dumps(collate))
    assert repr(copy) == repr(collate)
    samples = [{"img": im, "y": 1} for im in images(seed=13)]
    assert_same(copy(samples), collate(samples))


def test_unknown_option_at_construction():
    with pytest.raises(TypeError, match="mena"):
        st.Collate(mena=MEAN)
    with pytest.raises(TypeError):
        st.Collate(images=[])
    with pytest.raises(TypeError):
        st.Collate(out=np.empty((1, 3, 2, 2), np.float32))


@pytest.mark.parametrize("options", [
    {"mean": (0.5, 0.5), "std": (0.1, 0.2, 0.3)},        # lengths differ
    {"mean": 0.5, "std": 0.0},                            # zero std
    {"mean": 0.5, "std": (0.2, float("nan"), 0.2)},
    {"mean": 0.5, "max_value": -1},
    {"rounding": "nearest"},
])
def test_bad_parameters_at_construction(options):
    with pytest.raises(ValueError):
        st.Collate(**options)


def test_parameters_of_the_wrong_kind_at_construction():
    with pytest.raises((TypeError, ValueError)):
        st.Collate(mean="0.5")
    with pytest.raises(TypeError):
        st.Collate(max_value=(255, 255))
    with pytest.raises((TypeError, ValueError)):
        st.Collate(mean=0.5, scale=2.0)                  # the image form or the affine step


def test_bad_layout_at_construction():
    with pytest.raises((TypeError, ValueError)):
        st.Collate("NCHWX")
    with pytest.raises((TypeError, ValueError)):
        st.Collate((0, 1, 2))


def test_empty_samples():
    with pytest.raises(ValueError, match="no samples"):
        st.Collate()([])


def test_key_of_tuples_must_be_an_int():
    samples = [(im, 0) for im in images()]
    with pytest.raises(TypeError, match="key"):
        st.Collate(key="image")(samples)


def test_errors_of_the_images_reach_the_caller():
    ims = images()
    with pytest.raises(ValueError, match=r"images\[2\]"):
        st.Collate()([ims[0], ims[1], ims[2][:5]])
    with pytest.raises(ValueError, match="channels"):
        st.Collate(channels=(3, 1, 0))(ims)
    with pytest.raises(ValueError, match="4 values"):
        st.Collate(mean=(0.5,) * 4, std=(0.5,) * 4)(ims)       # 4 values, 3 channels
    with pytest.raises(KeyError):
        st.Collate()([{"img": im} for im in ims])


# ---- data loaders with workers -----------------------------------------------------------------

# Checks that fail raise, so that the script exits non-zero and run_isolated shows its stderr,
# where a worker that died printed its traceback.
LOADER_PRELUDE = """
import numpy as np
import torch
from torch.utils.data import DataLoader

import strided as st
from test_collate import BGR, MEAN, STD, SyntheticBGR, torch_reference, torchvision_reference

DATA = SyntheticBGR()
BATCH = 5

def serial(reference):
    '''The batches of a loop over the data set, one image at a time, with torch ops.'''
    batches = []
    for first in range(0, len(DATA), BATCH):
        samples = [DATA[i] for i in range(first, min(first + BATCH, len(DATA)))]
        images = torch.stack([reference(im, channels=BGR) for im, _ in samples])
        batches.append((images, torch.tensor([label for _, label in samples])))
    return batches

def check(name, loader, expected):
    got = list(loader)
    assert len(got) == len(expected), f"{name}: {len(got)} batches, expected {len(expected)}"
    for k, ((images, labels), (ref, ref_labels)) in enumerate(zip(got, expected)):
        assert images.dtype == torch.float32 and images.shape == ref.shape, (
            f"{name}, batch {k}: {images.dtype} {tuple(images.shape)}")
        assert torch.equal(images, ref), (
            f"{name}, batch {k}: images differ by {(images - ref).abs().max().item()}")
        assert torch.equal(labels, ref_labels), (
            f"{name}, batch {k}: labels {labels.tolist()} != {ref_labels.tolist()}")
    print(name, "ok", len(got))

def parent_runs_a_team():
    '''A threaded stack in the parent first: the forked workers inherit a used team.'''
    big = [np.zeros((512, 512, 3), np.uint8)] * 8
    st.stack(big, mean=MEAN, std=STD, num_threads=4)
"""


def test_forked_dataloader_equals_a_serial_loop():
    out = run_isolated(LOADER_PRELUDE + """
parent_runs_a_team()
for name, reference in (("fused", torch_reference), ("torchvision", torchvision_reference)):
    collate = st.Collate(mean=MEAN, std=STD, channels=BGR, rounding=name)
    loader = DataLoader(DATA, batch_size=BATCH, num_workers=2, collate_fn=collate,
                        multiprocessing_context="fork")
    check(name, loader, serial(reference))
collate = st.Collate(mean=MEAN, std=STD, channels=BGR)
check("main process", DataLoader(DATA, batch_size=BATCH, collate_fn=collate),
      serial(torch_reference))
""", timeout=300)
    assert out.splitlines() == ["fused ok 5", "torchvision ok 5", "main process ok 5"]


def test_spawned_dataloader_equals_a_serial_loop():
    """Spawned workers unpickle the collate function (and import this module for the data
    set)."""
    out = run_isolated(LOADER_PRELUDE + """
collate = st.Collate(mean=MEAN, std=STD, channels=BGR)
loader = DataLoader(DATA, batch_size=BATCH, num_workers=2, collate_fn=collate,
                    multiprocessing_context="spawn")
check("spawned", loader, serial(torch_reference))
""", timeout=600)
    assert out.splitlines() == ["spawned ok 5"]


def test_the_data_set_is_made_of_views():
    """The loader tests read crops, strided "resizes" and flips, as a real data set gives."""
    data = SyntheticBGR()
    strides = {data[i][0].strides for i in range(len(data))}
    assert len(strides) > 3 and any(s[1] < 0 for s in strides)
    assert all(data[i][0].shape == (*SyntheticBGR.SIZE, 3) for i in range(len(data)))
    assert all(data[i][0].base is not None for i in range(len(data)))


# ---- the recipes -------------------------------------------------------------------------------


def _python_blocks(text):
    """The ``.. code-block:: python`` blocks of a page, dedented."""
    return [textwrap.dedent(block) for block in
            re.findall(r"^\.\. code-block:: python\n\n((?:(?:   .*)?\n)+)", text, re.M)]


needs_recipe = pytest.mark.skipif(not RECIPE.is_file(), reason="needs the source tree (docs/)")


@needs_recipe
def test_recipe_examples():
    """The recipe page's ``>>>`` examples, with doctest's flags of the other pages."""
    pytest.importorskip("PIL")
    test = doctest.DocTestParser().get_doctest(
        RECIPE.read_text(encoding="utf-8"), {"__name__": "__main__"}, RECIPE.name,
        str(RECIPE), 0)
    assert len(test.examples) > 20
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE | doctest.IGNORE_EXCEPTION_DETAIL
    runner = doctest.DocTestRunner(optionflags=flags, verbose=False)
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0


@needs_recipe
def test_recipe_script_runs_with_workers(tmp_path):
    """The recipe's whole pipeline, as a script (its workers forked or spawned as the platform
    does), in a fresh interpreter under a timeout."""
    pytest.importorskip("cv2")
    blocks = _python_blocks(RECIPE.read_text(encoding="utf-8"))
    assert len(blocks) == 1
    script = tmp_path / "recipe.py"
    script.write_text(blocks[0], encoding="utf-8")
    out = run_isolated(f"""
import runpy
runpy.run_path({str(script)!r}, run_name="__main__")
""", timeout=600)
    lines = out.splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("torch.Size([4, 3, 224, 224]) torch.float32 [")
    assert lines[2].startswith("torch.Size([2, 3, 224, 224]) torch.float32 [")
    labels = sorted(int(v) for line in lines for v in re.findall(r"\d+", line.split("[", 2)[2]))
    assert labels == list(range(10))


def test_opencv_recipe_matches_blob_from_image():
    """docs/copy.rst's OpenCV recipe: stack's image form with channels=(2, 1, 0) gives
    ``cv2.dnn.blobFromImages(..., swapRB=True)`` (its mean in RGB order) to float32 rounding."""
    cv2 = pytest.importorskip("cv2")
    ims = images(n=3, h=8, w=10, seed=14)
    mean = (123.0, 117.0, 104.0)
    blob = cv2.dnn.blobFromImages(ims, 1 / 255, (10, 8), mean, swapRB=True)
    batch = st.stack(ims, mean=mean, std=255.0, max_value=1, channels=BGR)
    assert batch.shape == blob.shape and batch.dtype == blob.dtype
    assert np.abs(batch - blob).max() <= 2 * np.spacing(np.float32(1.0))
    out = torch.empty(blob.shape)
    assert st.stack(ims, mean=mean, std=255.0, max_value=1, channels=BGR, out=out) is out
    assert np.array_equal(out.numpy(), batch)
